//! The partition pass of `pcv convert IN... -o OUT.copc.laz`: every input point as an output point
//! record (LAS 1.4 point format 6, 7 or 8, and the extra bytes the output carries: [`super::vlrs`]), sorted
//! into the octree's cells at the partition depth, in blocks on disk.
//!
//! How it works: LAS and LAZ inputs (COPC included) are read where they are — memory-mapped, LAZ chunks
//! decompressed with every field — and the other formats from the spill file ([`super::spill`]). Each
//! input is a [`ChunkSource`] whose jobs (64 Ki records of a LAS file or of the spill, one LAZ chunk)
//! run on all cores ([`stream`]): a job turns its records into output records ([`RecordMap`]: the
//! coordinates re-expressed on the output's grid, every LAS field moved to its place in the 1.4 layout),
//! finds each one's cell, and sorts them by cell (a counting sort, stable: a cell's records keep their
//! input order). The calling thread takes the jobs in input order and has each cell's run appended to
//! that cell's buffer by shards on rayon's pool (cell mod shards: a cell's runs are appended by one
//! thread, one job after the other); a full buffer (64 KiB of whole records) is handed to a few writer
//! threads that write it as one block at its own 64 KiB-aligned place in the cells file (the padding
//! left as a hole), so that the build pass can punch the blocks it has read out of the file (the
//! temporary disk then shrinks as the output grows). The order of the records in a cell is the inputs'
//! order, whatever the number of threads: the octree built from it is the same on every run.
//!
//! Memory: the stream's staging slots (2 per core + 1, each one job's input and output records, a few
//! MiB), one 64 KiB buffer per non-empty cell (at most 4096 cells of a surface) and at most 64 full
//! buffers queued for the writers.
//!
//! The job also gathers what the header and the layout need: the exact bounds of the input
//! coordinates, the points by return number and the GPS time range. A point whose coordinates do not
//! fit the output's 32-bit grid is an error naming the file and the point — except in a *tolerant*
//! pass, whose layout came from the inputs' headers: there it is counted, and the caller partitions
//! again with the bounds the pass measured (a header whose bounds are wrong costs a second pass, never
//! a wrong file).
use super::cells::CellsFile;
use super::{Layout, Temp};
use crate::cloud::formats::las::{always_finite, FORMAT_SIZES};
use crate::cloud::formats::{record_jobs, record_range, Columns, DBounds, FileInfo, FormatError, Progress};
use crate::cloud::load::FileBytes;
use crate::cloud::stream::{stream, ChunkSource, Staging, StreamError};
use crate::convert::{las_copy, ConvertError};
use std::cell::RefCell;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::path::PathBuf;

/// Bytes of a cell block in the cells file (whole records, padded to this).
pub(super) const BLOCK_BYTES: usize = 64 << 10;
/// Bytes of a spilled record: f64 × 3, rgb u16 × 3, intensity u16, class u8.
pub(super) const SPILL_LEN: usize = 33;

/// Where one input's points come from in the partition pass.
#[derive(Clone, Debug)]
pub(super) enum Planned {
    /// A LAS or LAZ file, read directly; `extra`: its extra bytes (after its point format's fields) are
    /// the output's (the same count and description), else the output's extra bytes are zero.
    Las { path: PathBuf, extra: bool },
    /// Records `start..start + count` of the spill file (the input's points, decoded by its format).
    Spill { path: PathBuf, start: u64, count: u64 },
}

/// How one axis of an input's integer coordinates becomes the output's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Same,
    /// Same scale, offsets a whole number of steps apart.
    Shift(i64),
    /// Another grid: through the f64 coordinate, rounded to the output's grid.
    Rescale { scale: f64, offset: f64, out_scale: f64, out_offset: f64 },
}

/// How one LAS input's records become output records.
#[derive(Clone, Copy, Debug)]
pub(super) struct RecordMap {
    /// Point formats 0–5 (flags, classification and scan angle in the legacy layout).
    legacy: bool,
    gps_at: Option<usize>,
    rgb_at: Option<usize>,
    nir_at: Option<usize>,
    out_len: usize,
    /// The output format's own bytes (before its extra bytes), and whether it has RGB and NIR.
    out_std_len: usize,
    out_rgb: bool,
    out_nir: bool,
    /// Where the input's extra bytes start, when they are carried into the output's.
    extra_at: Option<usize>,
    axes: [Axis; 3],
    scale: [f64; 3],
    offset: [f64; 3],
    check_finite: bool,
}

/// Whether a LAS point format has GPS time, RGB and NIR.
pub(super) fn format_fields(format: u8) -> (bool, bool, bool) {
    (!matches!(format, 0 | 2), matches!(format, 2 | 3 | 5 | 7 | 8 | 10), matches!(format, 8 | 10))
}

impl RecordMap {
    pub(super) fn new(h: &crate::cloud::formats::las::Header, lay: &Layout, carry_extra: bool) -> RecordMap {
        let f = h.format;
        let legacy = f < 6;
        let (gps, _, _) = format_fields(f);
        let gps_at = gps.then_some(if legacy { 20 } else { 22 });
        let rgb_at = match f {
            2 => Some(20),
            3 | 5 => Some(28),
            7 | 8 | 10 => Some(30),
            _ => None,
        };
        let nir_at = matches!(f, 8 | 10).then_some(36);
        let axes = std::array::from_fn(|k| {
            let (s, o, os, oo) = (h.scale[k], h.offset[k], lay.scale[k], lay.offset[k]);
            if s == os && o == oo {
                Axis::Same
            } else {
                let d = (o - oo) / os;
                if s == os && d.fract() == 0.0 && d.abs() < 1e15 {
                    Axis::Shift(d as i64)
                } else {
                    Axis::Rescale { scale: s, offset: o, out_scale: os, out_offset: oo }
                }
            }
        });
        let (_, out_rgb, out_nir) = format_fields(lay.format);
        let std_len = FORMAT_SIZES[f as usize] as usize;
        let extra_at = (carry_extra && lay.extra > 0 && h.record_len as usize == std_len + lay.extra).then_some(std_len);
        RecordMap {
            legacy,
            gps_at,
            rgb_at,
            nir_at,
            out_len: lay.record_len,
            out_std_len: record_len(lay.format),
            out_rgb,
            out_nir,
            extra_at,
            axes,
            scale: h.scale,
            offset: h.offset,
            check_finite: !always_finite(h),
        }
    }

    /// Writes `rec`'s output record into `dst` (`out_len` bytes) with coordinates `q`.
    #[inline]
    fn fields(&self, rec: &[u8], q: [i32; 3], dst: &mut [u8]) {
        let dst = &mut dst[..self.out_len];
        for k in 0..3 {
            dst[4 * k..4 * k + 4].copy_from_slice(&q[k].to_le_bytes());
        }
        if self.legacy {
            dst[12..14].copy_from_slice(&rec[12..14]);
            let (b14, b15) = (rec[14], rec[15]);
            // Return number (3 bits) and number of returns (3 bits) into 4 bits each.
            dst[14] = (b14 & 0x07) | ((b14 >> 3) & 0x07) << 4;
            // Synthetic, key-point, withheld (bits 5-7 → 0-2); scan direction and edge of flight line.
            dst[15] = (b15 >> 5) | (b14 & 0xc0);
            dst[16] = b15 & 0x1f;
            dst[17] = rec[17];
            // The scan angle rank in whole degrees → 0.006° steps (±90° → ±15000).
            let angle = ((rec[16] as i8) as f64 / 0.006).round() as i16;
            dst[18..20].copy_from_slice(&angle.to_le_bytes());
            dst[20..22].copy_from_slice(&rec[18..20]);
            match self.gps_at {
                Some(o) => dst[22..30].copy_from_slice(&rec[o..o + 8]),
                None => dst[22..30].fill(0),
            }
        } else {
            dst[12..30].copy_from_slice(&rec[12..30]);
        }
        if self.out_rgb {
            match self.rgb_at {
                Some(o) => dst[30..36].copy_from_slice(&rec[o..o + 6]),
                None => dst[30..36].fill(0),
            }
        }
        if self.out_nir {
            match self.nir_at {
                Some(o) => dst[36..38].copy_from_slice(&rec[o..o + 2]),
                None => dst[36..38].fill(0),
            }
        }
        let extra = &mut dst[self.out_std_len..];
        match self.extra_at {
            Some(o) => extra.copy_from_slice(&rec[o..o + extra.len()]),
            None => extra.fill(0),
        }
    }

    /// The output coordinates of input coordinates `v`, or `None` when they do not fit 32 bits.
    #[inline]
    fn coords(&self, v: [i32; 3]) -> Option<[i32; 3]> {
        let mut q = [0i32; 3];
        for k in 0..3 {
            q[k] = match self.axes[k] {
                Axis::Same => v[k],
                Axis::Shift(d) => i32::try_from(v[k] as i64 + d).ok()?,
                Axis::Rescale { scale, offset, out_scale, out_offset } => {
                    let r = ((v[k] as f64 * scale + offset - out_offset) / out_scale).round();
                    if r.abs() >= 2_147_483_647.0 || r.is_nan() {
                        return None;
                    }
                    r as i32
                }
            };
        }
        Some(q)
    }
}

/// What a job (and then the whole pass) gathers besides the records.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tally {
    pub points: u64,
    /// Points whose coordinates do not fit the output's grid (tolerant passes only).
    pub misfits: u64,
    pub by_return: [u64; 15],
    pub gps_min: f64,
    pub gps_max: f64,
}

const TALLY_LEN: usize = 8 + 8 + 15 * 8 + 8 + 8;

impl Default for Tally {
    fn default() -> Self {
        Tally { points: 0, misfits: 0, by_return: [0; 15], gps_min: f64::INFINITY, gps_max: f64::NEG_INFINITY }
    }
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.points += o.points;
        self.misfits += o.misfits;
        for r in 0..15 {
            self.by_return[r] += o.by_return[r];
        }
        self.gps_min = self.gps_min.min(o.gps_min);
        self.gps_max = self.gps_max.max(o.gps_max);
    }

    fn to_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.points.to_le_bytes());
        out.extend_from_slice(&self.misfits.to_le_bytes());
        self.by_return.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        out.extend_from_slice(&self.gps_min.to_le_bytes());
        out.extend_from_slice(&self.gps_max.to_le_bytes());
    }

    fn from_bytes(b: &[u8]) -> Tally {
        let u = |i: usize| u64::from_le_bytes(std::array::from_fn(|k| b[8 * i + k]));
        Tally {
            points: u(0),
            misfits: u(1),
            by_return: std::array::from_fn(|r| u(2 + r)),
            gps_min: f64::from_bits(u(17)),
            gps_max: f64::from_bits(u(18)),
        }
    }
}

thread_local! {
    /// A worker's unsorted output records, their cells, and the cells' counts (dense over the
    /// partition depth's cells), reused from job to job.
    static JOB_BUFFERS: RefCell<(Vec<u8>, Vec<u32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new(), Vec::new())) };
}

/// One job's output records as they are made, then sorted by cell into the staging slot's scratch:
/// `[records sorted by cell][(cell u32, records u32) per run][tally][runs u32][record bytes u64]`.
struct JobOut<'a> {
    lay: &'a Layout,
    depth: u32,
    tolerant: bool,
    recs: Vec<u8>,
    cells: Vec<u32>,
    tally: Tally,
    /// Exact bounds of the input coordinates (f64, in the input's own coordinates).
    bounds: DBounds,
}

impl<'a> JobOut<'a> {
    fn new(lay: &'a Layout, depth: u32, tolerant: bool) -> JobOut<'a> {
        let (mut recs, mut cells, _) = JOB_BUFFERS.with(|b| std::mem::take(&mut *b.borrow_mut()));
        recs.clear();
        cells.clear();
        JobOut { lay, depth, tolerant, recs, cells, tally: Tally::default(), bounds: DBounds::EMPTY }
    }

    /// Appends one output record (written by `fill` into `record_len` bytes) with coordinates `q`.
    #[inline]
    fn push(&mut self, q: [i32; 3], fill: impl FnOnce(&mut [u8])) {
        let n = self.lay.record_len;
        let at = self.recs.len();
        self.recs.resize(at + n, 0);
        let rec = &mut self.recs[at..at + n];
        fill(rec);
        let r = (rec[14] & 0x0f) as usize;
        if (1..=15).contains(&r) {
            self.tally.by_return[r - 1] += 1;
        }
        let gps = f64::from_le_bytes(std::array::from_fn(|k| rec[22 + k]));
        self.tally.gps_min = self.tally.gps_min.min(gps);
        self.tally.gps_max = self.tally.gps_max.max(gps);
        let c = self.lay.cell(q, self.depth);
        let side = 1u32 << self.depth;
        self.cells.push((c[2] * side + c[1]) * side + c[0]);
        self.tally.points += 1;
    }

    /// A point that does not fit the output's grid: counted in a tolerant pass, else an error.
    fn misfit(&mut self, point: u64) -> Result<(), FormatError> {
        if self.tolerant {
            self.tally.misfits += 1;
            return Ok(());
        }
        Err(FormatError::Invalid(format!("point {point} does not fit LAS's 32-bit coordinates at scale {:?} (offset {:?})", self.lay.scale, self.lay.offset)))
    }

    /// Sorts the records by cell into `st.scratch` and sets `st.bounds`.
    fn finish(mut self, st: &mut Staging) {
        let n = self.lay.record_len;
        let count = self.cells.len();
        let side = 1usize << self.depth;
        let (mut counts, mut touched) = (JOB_BUFFERS.with(|b| std::mem::take(&mut b.borrow_mut().2)), Vec::new());
        counts.resize(side * side * side, 0);
        for &c in &self.cells {
            if counts[c as usize] == 0 {
                touched.push(c);
            }
            counts[c as usize] += 1;
        }
        touched.sort_unstable();
        // Each cell's first record index in the sorted order (counts become starts).
        let mut runs = Vec::with_capacity(touched.len());
        let mut at = 0u32;
        for &c in &touched {
            let k = counts[c as usize];
            runs.push((c, k));
            counts[c as usize] = at;
            at += k;
        }
        let out = &mut st.scratch;
        out.clear();
        out.resize(count * n, 0);
        for (i, &c) in self.cells.iter().enumerate() {
            let to = counts[c as usize] as usize;
            counts[c as usize] += 1;
            out[to * n..(to + 1) * n].copy_from_slice(&self.recs[i * n..(i + 1) * n]);
        }
        for &c in &touched {
            counts[c as usize] = 0;
        }
        for (c, k) in &runs {
            out.extend_from_slice(&c.to_le_bytes());
            out.extend_from_slice(&k.to_le_bytes());
        }
        self.tally.to_bytes(out);
        out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
        out.extend_from_slice(&((count * n) as u64).to_le_bytes());
        st.bounds = self.bounds;
        let (recs, cells) = (std::mem::take(&mut self.recs), std::mem::take(&mut self.cells));
        JOB_BUFFERS.with(|b| *b.borrow_mut() = (recs, cells, counts));
    }
}

/// A job's sorted records, runs and tally, as [`JobOut::finish`] wrote them.
fn parse_job(s: &[u8]) -> (&[u8], impl Iterator<Item = (u32, usize)> + '_, Tally) {
    let len = s.len();
    let rec_bytes = u64::from_le_bytes(std::array::from_fn(|k| s[len - 8 + k])) as usize;
    let runs = u32::from_le_bytes(std::array::from_fn(|k| s[len - 12 + k])) as usize;
    let tally = Tally::from_bytes(&s[len - 12 - TALLY_LEN..len - 12]);
    let run_bytes = &s[rec_bytes..rec_bytes + 8 * runs];
    let it = run_bytes.chunks_exact(8).map(|r| (u32::from_le_bytes([r[0], r[1], r[2], r[3]]), u32::from_le_bytes([r[4], r[5], r[6], r[7]]) as usize));
    (&s[..rec_bytes], it, tally)
}

/// A LAS or LAZ input as partition jobs.
struct LasJobs<'a> {
    input: las_copy::Input<'a>,
    map: RecordMap,
    lay: &'a Layout,
    depth: u32,
    tolerant: bool,
    /// Each job's first point in the input.
    first: Vec<u64>,
}

impl<'a> LasJobs<'a> {
    fn new(input: las_copy::Input<'a>, lay: &'a Layout, depth: u32, tolerant: bool, carry_extra: bool) -> LasJobs<'a> {
        let map = RecordMap::new(input.header(), lay, carry_extra);
        let first = input.job_firsts();
        LasJobs { input, map, lay, depth, tolerant, first }
    }

    /// Adds the input records `recs` (the first is point `first`) to `out`.
    fn add(&self, recs: &[u8], first: u64, out: &mut JobOut) -> Result<(), FormatError> {
        let h = self.input.header();
        let stride = h.record_len as usize;
        let m = &self.map;
        let (mut lo, mut hi) = ([i32::MAX; 3], [i32::MIN; 3]);
        for (i, rec) in recs.chunks_exact(stride).enumerate() {
            let v: [i32; 3] = std::array::from_fn(|k| i32::from_le_bytes([rec[4 * k], rec[4 * k + 1], rec[4 * k + 2], rec[4 * k + 3]]));
            if m.check_finite {
                for k in 0..3 {
                    let real = v[k] as f64 * m.scale[k] + m.offset[k];
                    if !real.is_finite() {
                        return Err(FormatError::Invalid(format!(
                            "point {} has {} = {} × {} + {} = {real}, a NaN or infinite coordinate; pcv convert writes no such point",
                            first + i as u64,
                            ["x", "y", "z"][k],
                            v[k],
                            m.scale[k],
                            m.offset[k]
                        )));
                    }
                }
            }
            for k in 0..3 {
                lo[k] = lo[k].min(v[k]);
                hi[k] = hi[k].max(v[k]);
            }
            match m.coords(v) {
                Some(q) => out.push(q, |dst| m.fields(rec, q, dst)),
                None => out.misfit(first + i as u64)?,
            }
        }
        if lo[0] <= hi[0] {
            let mut b = DBounds::EMPTY;
            for k in 0..3 {
                let (x, y) = (lo[k] as f64 * m.scale[k] + m.offset[k], hi[k] as f64 * m.scale[k] + m.offset[k]);
                b.min[k] = x.min(y);
                b.max[k] = x.max(y);
            }
            out.bounds = DBounds::union(out.bounds, b);
        }
        Ok(())
    }
}

impl ChunkSource for LasJobs<'_> {
    fn jobs(&self) -> usize {
        self.first.len()
    }
    fn job_points(&self, job: usize) -> u64 {
        self.input.job_points(&self.first, job)
    }
    fn reserve_points(&self) -> u64 {
        0
    }
    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        Some(self.input.job_bytes(job))
    }
    fn columns(&self) -> Columns {
        Columns::default()
    }
    fn has_rgb(&self) -> bool {
        false
    }
    fn decode(&self, job: usize, _origin: &[f64; 3], st: &mut Staging) -> Result<(), FormatError> {
        let mut out = JobOut::new(self.lay, self.depth, self.tolerant);
        let first = self.first[job];
        let stride = self.input.header().record_len as usize;
        let mut piece = std::mem::take(&mut st.scratch);
        let (mut done, mut err) = (0u64, None);
        let r = self.input.job_records(job, &mut piece, &mut |p| {
            if err.is_none() {
                if let Err(e) = self.add(p, first + done, &mut out) {
                    err = Some(e);
                }
            }
            done += (p.len() / stride) as u64;
        });
        st.scratch = piece;
        let r = r.and_then(|()| err.map_or(Ok(()), Err));
        out.finish(st);
        r
    }
    fn info(&self) -> FileInfo {
        FileInfo::default()
    }
    fn estimate(&self) -> Option<DBounds> {
        None
    }
}

/// One spilled input's records as partition jobs.
struct SpillJobs<'a> {
    file: &'a std::fs::File,
    path: &'a std::path::Path,
    start: u64,
    count: u64,
    lay: &'a Layout,
    depth: u32,
    tolerant: bool,
}

impl ChunkSource for SpillJobs<'_> {
    fn jobs(&self) -> usize {
        record_jobs(self.count as usize)
    }
    fn job_points(&self, job: usize) -> u64 {
        record_range(job, self.count as usize).len() as u64
    }
    fn reserve_points(&self) -> u64 {
        0
    }
    fn columns(&self) -> Columns {
        Columns::default()
    }
    fn has_rgb(&self) -> bool {
        false
    }
    fn decode(&self, job: usize, _origin: &[f64; 3], st: &mut Staging) -> Result<(), FormatError> {
        let r = record_range(job, self.count as usize);
        let mut raw = std::mem::take(&mut st.scratch);
        raw.clear();
        raw.resize(r.len() * SPILL_LEN, 0);
        super::read_exact_at(self.file, &mut raw, (self.start + r.start as u64) * SPILL_LEN as u64)
            .map_err(|e| FormatError::Invalid(format!("reading the spill file {}: {e}", self.path.display())))?;
        let mut out = JobOut::new(self.lay, self.depth, self.tolerant);
        let mut res = Ok(());
        for (i, sp) in raw.chunks_exact(SPILL_LEN).enumerate() {
            let v: [f64; 3] = std::array::from_fn(|k| f64::from_le_bytes(std::array::from_fn(|b| sp[8 * k + b])));
            out.bounds.include(v);
            match self.lay.quantize(v) {
                Some(q) => out.push(q, |rec| {
                    for k in 0..3 {
                        rec[4 * k..4 * k + 4].copy_from_slice(&q[k].to_le_bytes());
                    }
                    rec[12..14].copy_from_slice(&sp[30..32]); // intensity
                    rec[14] = 0x11; // return 1 of 1
                    rec[15] = 0;
                    rec[16] = sp[32]; // classification
                    rec[17..30].fill(0); // user data, scan angle, point source ID, GPS time
                    if rec.len() >= 36 {
                        rec[30..36].copy_from_slice(&sp[24..30]); // rgb
                    }
                    if rec.len() >= 38 {
                        rec[36..38].fill(0);
                    }
                }),
                None => {
                    if let Err(e) = out.misfit(r.start as u64 + i as u64) {
                        res = Err(e);
                        break;
                    }
                }
            }
        }
        st.scratch = raw;
        out.finish(st);
        res
    }
    fn info(&self) -> FileInfo {
        FileInfo::default()
    }
    fn estimate(&self) -> Option<DBounds> {
        None
    }
}

/// What the partition pass wrote: each cell's blocks in the cells file, and what it measured.
pub(super) struct Parted {
    /// Cell (x + n·(y + n·z) at the partition depth) → its blocks (byte offset, bytes), in order.
    pub blocks: Vec<(u32, Vec<(u64, u32)>)>,
    /// Exact bounds of the input coordinates.
    pub bounds: DBounds,
    pub tally: Tally,
}

/// The output records of every input, sorted into the cells at `depth` in `cells` (emptied first).
/// Each job's runs are appended to their cells' buffers by shards of rayon's pool (a cell belongs to one
/// shard); a full 64 KiB buffer goes to a few writer threads, which write it at the block's place
/// (`pwrite`: the file's blocks are 64 KiB apart, the padding left as holes).
pub(super) fn partition(
    plan: &[Planned],
    spill: Option<&Temp>,
    cells: &CellsFile,
    lay: &Layout,
    depth: u32,
    tolerant: bool,
    progress: &Progress,
) -> Result<Parted, ConvertError> {
    cells.clear()?;
    let side = 1usize << depth;
    let n = lay.record_len;
    let block_recs = BLOCK_BYTES / n;
    // Each cell's partly filled buffer and its blocks so far. A cell is only ever touched by one
    // thread at a time (the shard that owns it, within one job), so these locks are never contended.
    let cellbufs: Vec<Mutex<CellBuf>> = (0..side * side * side).map(|_| Mutex::new(CellBuf::default())).collect();
    let at = AtomicU64::new(0);
    let mut bounds = DBounds::EMPTY;
    let mut tally = Tally::default();
    // Full buffers on their way to the writers, and emptied ones on their way back.
    let (to_write, queue) = std::sync::mpsc::sync_channel::<(u64, Vec<u8>)>(64);
    let queue = Mutex::new(queue);
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let write_error: Mutex<Option<ConvertError>> = Mutex::new(None);
    let threads = rayon::current_num_threads();
    let writers = writer_threads();
    // The copies of a job's runs into the cells' buffers are spread over this many shards (cell mod
    // shards), run on rayon's pool while the decoding threads work ahead: with points in no spatial
    // order (every 64 Ki-record job touching every cell), one thread copying ~16-record runs into
    // thousands of buffers was the pass's limit on 16 cores.
    let shards = threads.clamp(1, 16);
    let result = std::thread::scope(|scope| -> Result<(), ConvertError> {
        // Owned here: however this closure returns, the queue's sender is dropped and the writers stop
        // before the scope waits for them.
        let to_write = to_write;
        for _ in 0..writers {
            let (queue, spare, write_error) = (&queue, &spare, &write_error);
            scope.spawn(move || loop {
                let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((block_at, mut b)) = job else { return };
                if let Err(e) = cells.write(block_at, &b) {
                    write_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                }
                b.clear();
                spare.lock().unwrap_or_else(|p| p.into_inner()).push(b);
            });
        }
        // Hands a cell's full (or last) buffer to the writers at the next free block.
        let send = |cb: &mut CellBuf, b: Vec<u8>| -> Result<(), ConvertError> {
            let block_at = at.fetch_add(BLOCK_BYTES as u64, Ordering::Relaxed);
            cb.blocks.push((block_at, b.len() as u32));
            to_write.send((block_at, b)).map_err(|_| ConvertError::Write("the cells file's writer threads stopped".into()))
        };
        // Appends `run` (whole records) to cell `cb`'s buffer, sending each buffer that fills.
        let append = |cb: &mut CellBuf, mut run: &[u8]| -> Result<(), ConvertError> {
            while !run.is_empty() {
                if cb.buf.capacity() == 0 {
                    cb.buf = spare.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default();
                    cb.buf.reserve_exact(block_recs * n);
                }
                let take = (block_recs - cb.buf.len() / n).min(run.len() / n);
                cb.buf.extend_from_slice(&run[..take * n]);
                run = &run[take * n..];
                if cb.buf.len() == block_recs * n {
                    let full = std::mem::take(&mut cb.buf);
                    send(cb, full)?;
                }
            }
            Ok(())
        };
        let mut job_runs: Vec<(u32, usize, usize)> = Vec::new();
        for p in plan {
            let (path, bytes) = match p {
                Planned::Las { path, .. } => (path, Some(FileBytes::open(path)?)),
                Planned::Spill { path, .. } => (path, None),
            };
            if plan.len() > 1 {
                progress.set_file(path.display().to_string());
            }
            let input = |source| ConvertError::Input { path: path.clone(), source };
            let las;
            let spilled;
            let src: &dyn ChunkSource = match p {
                Planned::Las { extra, .. } => {
                    let b = bytes.as_ref().ok_or_else(|| ConvertError::Write("internal: a LAS input not opened".into()))?;
                    las = LasJobs::new(las_copy::open(path, b.bytes())?, lay, depth, tolerant, *extra);
                    &las
                }
                Planned::Spill { start, count, .. } => {
                    let s = spill.ok_or_else(|| ConvertError::Write("internal: a spilled input without the spill file".into()))?;
                    spilled = SpillJobs { file: &s.file, path: &s.path, start: *start, count: *count, lay, depth, tolerant };
                    &spilled
                }
            };
            let r = stream(src, &[0.0; 3], &Progress::hidden(), &mut |st: &Staging| -> Result<(), ConvertError> {
                let (recs, runs, t) = parse_job(&st.scratch);
                job_runs.clear();
                let mut from = 0usize;
                for (cell, k) in runs {
                    job_runs.push((cell, from * n, k * n));
                    from += k;
                }
                // Each cell appears once in a job; the job's runs are all appended before the next job's,
                // so a cell's records stay in the inputs' order.
                if shards == 1 || job_runs.len() < 64 {
                    for &(c, from, len) in &job_runs {
                        append(&mut lock(&cellbufs[c as usize]), &recs[from..from + len])?;
                    }
                } else {
                    (0..shards).into_par_iter().try_for_each(|s| {
                        for &(c, from, len) in job_runs.iter().filter(|r| r.0 as usize % shards == s) {
                            append(&mut lock(&cellbufs[c as usize]), &recs[from..from + len])?;
                        }
                        Ok::<_, ConvertError>(())
                    })?;
                }
                bounds = DBounds::union(bounds, st.bounds);
                tally.add(&t);
                progress.inc(t.points + t.misfits);
                if let (Some(b), Some(range)) = (&bytes, src.job_bytes(st.job)) {
                    b.release(range);
                }
                if let Some(e) = write_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    return Err(e);
                }
                Ok(())
            });
            match r {
                Ok(_) => {}
                Err(StreamError::Decode(source)) => return Err(input(source)),
                Err(StreamError::Sink(e)) => return Err(e),
            }
        }
        for c in &cellbufs {
            let mut cb = lock(c);
            if !cb.buf.is_empty() {
                let last = std::mem::take(&mut cb.buf);
                send(&mut cb, last)?;
            }
        }
        Ok(())
    });
    result?;
    if let Some(e) = write_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let blocks = cellbufs
        .into_iter()
        .enumerate()
        .map(|(c, m)| (c as u32, m.into_inner().unwrap_or_else(|p| p.into_inner()).blocks))
        .filter(|(_, b)| !b.is_empty())
        .collect();
    Ok(Parted { blocks, bounds, tally })
}

/// One cell's partly filled 64 KiB buffer and the blocks it has written so far, in order.
#[derive(Default)]
struct CellBuf {
    buf: Vec<u8>,
    blocks: Vec<(u64, u32)>,
}

fn lock(c: &Mutex<CellBuf>) -> std::sync::MutexGuard<'_, CellBuf> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

/// The writer threads of the partition pass (and the cells file's stripes): half the cores, 1 to 8.
pub(super) fn writer_threads() -> usize {
    (rayon::current_num_threads() / 2).clamp(1, 8)
}

/// The record length of output point format `format` (6, 7 or 8).
pub(super) fn record_len(format: u8) -> usize {
    FORMAT_SIZES[format as usize] as usize
}
