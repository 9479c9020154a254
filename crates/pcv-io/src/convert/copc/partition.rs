//! The partition pass of `pcv convert IN... -o OUT.copc.laz`: every input point as an output point
//! record (LAS 1.4 point format 6, 7 or 8, and the extra bytes the output carries: [`super::vlrs`]), sorted
//! into the octree's cells at the partition depth, in blocks on disk.
//!
//! How it works: LAS and LAZ inputs (COPC included) are read where they are — memory-mapped, LAZ chunks
//! decompressed with every field — and the other formats from the spill file ([`super::spill`]). Each
//! input is split into jobs (64 Ki records of a LAS file or of the spill, one LAZ chunk); the jobs of all
//! inputs, in input order, are cut into one contiguous range per core (equal points), and each range goes
//! to one worker thread. A worker turns its jobs' records into output records ([`RecordMap`]: the
//! coordinates re-expressed on the output's grid, every LAS field moved to its place in the 1.4 layout),
//! appending each straight to its own buffer for the record's cell, and writes a full buffer itself as one
//! block at its own 64 KiB-aligned place in the cells file (the padding left as a hole), so that the build
//! pass can punch the blocks it has read out of the file (the temporary disk then shrinks as the output
//! grows). Each worker writes its own file of the cells file (see cells.rs) and nothing passes between
//! the workers, so the pass scales with the cores. A cell's blocks are listed worker after worker, and a worker's ranges
//! are in input order, so the records of a cell are in the inputs' order whatever the number of threads:
//! the octree built from it is the same on every run.
//!
//! Memory: per worker, one buffer per non-empty cell (at most 4096 cells of a surface) of at most 64 KiB,
//! less when the workers' buffers would pass 2 GiB together ([`BUFFERS_BYTES`]: the blocks are then
//! written part-filled), and one job's scratch (a LAZ chunk's records).
//!
//! The job also gathers what the header and the layout need: the exact bounds of the input
//! coordinates, the points by return number and the GPS time range. A point whose coordinates do not
//! fit the output's 32-bit grid is an error naming the file and the point — except in a *tolerant*
//! pass, whose layout came from the inputs' headers: there it is counted, and the caller partitions
//! again with the bounds the pass measured (a header whose bounds are wrong costs a second pass, never
//! a wrong file).
use super::cells::CellsFile;
use super::{Layout, Temp};
use crate::convert::{las_copy, ConvertError};
use crate::formats::las::{always_finite, FORMAT_SIZES};
use crate::formats::{record_jobs, record_range, DBounds, FormatError, Progress};
use crate::load::FileBytes;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    Rescale {
        scale: f64,
        offset: f64,
        out_scale: f64,
        out_offset: f64,
    },
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
    /// Formats 0–5: the scan angle rank (an i8 of whole degrees, as its byte) → 0.006° steps.
    angle_steps: [i16; 256],
}

/// Whether a LAS point format has GPS time, RGB and NIR.
pub(super) fn format_fields(format: u8) -> (bool, bool, bool) {
    (!matches!(format, 0 | 2), matches!(format, 2 | 3 | 5 | 7 | 8 | 10), matches!(format, 8 | 10))
}

impl RecordMap {
    pub(super) fn new(h: &crate::formats::las::Header, lay: &Layout, carry_extra: bool) -> RecordMap {
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
        let extra_at =
            (carry_extra && lay.extra > 0 && h.record_len as usize == std_len + lay.extra).then_some(std_len);
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
            // ±90° → ±15000.
            angle_steps: std::array::from_fn(|b| ((b as u8 as i8) as f64 / 0.006).round() as i16),
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
            // The scan angle rank in whole degrees → 0.006° steps.
            dst[18..20].copy_from_slice(&self.angle_steps[rec[16] as usize].to_le_bytes());
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
}

/// One partition worker's state: the output records it has made, in a buffer per cell, and the blocks
/// each cell's full buffers became in the cells file, in order. A worker takes a contiguous range of
/// the inputs' jobs, so a cell's blocks from worker 0, then worker 1, … hold its records in input order.
struct Worker<'a> {
    lay: &'a Layout,
    depth: u32,
    tolerant: bool,
    cells: &'a CellsFile,
    /// The file of the cells file this worker writes (its own when there are as many as workers), and
    /// each file's next free block (shared by the workers of a file).
    stripe: usize,
    next: &'a [AtomicU64],
    /// Records a buffer holds before it is written as a block.
    block_recs: usize,
    /// Per cell (x + n·(y + n·z) at the partition depth): its partly filled buffer (allocated when first
    /// touched, reused after each write) and its blocks so far.
    bufs: Vec<Vec<u8>>,
    blocks: Vec<Vec<(u64, u32)>>,
    tally: Tally,
    /// Exact bounds of the input coordinates (f64, in the inputs' own coordinates).
    bounds: DBounds,
    /// The first failed write of a block (checked after every job).
    write_error: Option<ConvertError>,
}

impl<'a> Worker<'a> {
    fn new(
        lay: &'a Layout,
        depth: u32,
        tolerant: bool,
        cells: &'a CellsFile,
        stripe: usize,
        next: &'a [AtomicU64],
        block_recs: usize,
    ) -> Worker<'a> {
        let side = 1usize << depth;
        let n = side * side * side;
        Worker {
            lay,
            depth,
            tolerant,
            cells,
            stripe,
            next,
            block_recs,
            bufs: (0..n).map(|_| Vec::new()).collect(),
            blocks: (0..n).map(|_| Vec::new()).collect(),
            tally: Tally::default(),
            bounds: DBounds::EMPTY,
            write_error: None,
        }
    }

    /// Appends one output record (written by `fill` into `record_len` bytes) with coordinates `q` to
    /// its cell's buffer, and writes the buffer as a block when it is full.
    #[inline]
    fn push(&mut self, q: [i32; 3], fill: impl FnOnce(&mut [u8])) {
        let n = self.lay.record_len;
        let c = self.lay.cell(q, self.depth);
        let side = 1u32 << self.depth;
        let cell = ((c[2] * side + c[1]) * side + c[0]) as usize;
        let buf = &mut self.bufs[cell];
        if buf.capacity() == 0 {
            buf.reserve_exact(self.block_recs * n);
        }
        let at = buf.len();
        buf.resize(at + n, 0);
        let rec = &mut buf[at..at + n];
        fill(rec);
        let r = (rec[14] & 0x0f) as usize;
        if (1..=15).contains(&r) {
            self.tally.by_return[r - 1] += 1;
        }
        let gps = f64::from_le_bytes(std::array::from_fn(|k| rec[22 + k]));
        // As f64::min/max (a NaN time is skipped; the tally starts at ±∞), without their NaN handling.
        if gps < self.tally.gps_min {
            self.tally.gps_min = gps;
        }
        if gps > self.tally.gps_max {
            self.tally.gps_max = gps;
        }
        self.tally.points += 1;
        if buf.len() == self.block_recs * n {
            self.write_block(cell);
        }
    }

    /// Writes cell `cell`'s buffer (not empty) as the next free block, and empties it.
    fn write_block(&mut self, cell: usize) {
        let buf = &mut self.bufs[cell];
        let j = self.next[self.stripe].fetch_add(1, Ordering::Relaxed);
        let block_at = self.cells.block_in_stripe(self.stripe, j);
        if let Err(e) = self.cells.write(block_at, buf) {
            self.write_error.get_or_insert(e);
        }
        self.blocks[cell].push((block_at, buf.len() as u32));
        buf.clear();
    }

    /// Writes every partly filled buffer, and frees them.
    fn flush(&mut self) {
        for cell in 0..self.bufs.len() {
            if !self.bufs[cell].is_empty() {
                self.write_block(cell);
            }
            self.bufs[cell] = Vec::new();
        }
    }

    /// A point that does not fit the output's grid: counted in a tolerant pass, else an error.
    fn misfit(&mut self, point: u64) -> Result<(), FormatError> {
        if self.tolerant {
            self.tally.misfits += 1;
            return Ok(());
        }
        Err(FormatError::Invalid(format!(
            "point {point} does not fit LAS's 32-bit coordinates at scale {:?} (offset {:?})",
            self.lay.scale, self.lay.offset
        )))
    }
}

/// An input's points as jobs (64 Ki records of a LAS file or of the spill file, one LAZ chunk), each
/// turned into output records by [`PartJobs::run`].
trait PartJobs {
    fn jobs(&self) -> usize;
    fn job_points(&self, job: usize) -> u64;
    /// Adds job `job`'s output records to `out`; `scratch` is the worker's reusable buffer.
    fn run(&self, job: usize, scratch: &mut Vec<u8>, out: &mut Worker) -> Result<(), FormatError>;
    /// The input bytes job `job` read (released from memory once done), when the input is mapped.
    fn job_bytes(&self, _job: usize) -> Option<std::ops::Range<usize>> {
        None
    }
}

/// A LAS or LAZ input as partition jobs.
struct LasJobs<'a> {
    input: las_copy::Input<'a>,
    map: RecordMap,
    /// Each job's first point in the input.
    first: Vec<u64>,
}

impl<'a> LasJobs<'a> {
    fn new(input: las_copy::Input<'a>, lay: &Layout, carry_extra: bool) -> LasJobs<'a> {
        let map = RecordMap::new(input.header(), lay, carry_extra);
        let first = input.job_firsts();
        LasJobs { input, map, first }
    }

    /// Adds the input records `recs` (the first is point `first`) to `out`.
    fn add(&self, recs: &[u8], first: u64, out: &mut Worker) -> Result<(), FormatError> {
        let h = self.input.header();
        let stride = h.record_len as usize;
        let m = &self.map;
        let (mut lo, mut hi) = ([i32::MAX; 3], [i32::MIN; 3]);
        for (i, rec) in recs.chunks_exact(stride).enumerate() {
            let v: [i32; 3] = std::array::from_fn(|k| {
                i32::from_le_bytes([rec[4 * k], rec[4 * k + 1], rec[4 * k + 2], rec[4 * k + 3]])
            });
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

impl PartJobs for LasJobs<'_> {
    fn jobs(&self) -> usize {
        self.first.len()
    }
    fn job_points(&self, job: usize) -> u64 {
        self.input.job_points(&self.first, job)
    }
    fn run(&self, job: usize, scratch: &mut Vec<u8>, out: &mut Worker) -> Result<(), FormatError> {
        let first = self.first[job];
        let stride = self.input.header().record_len as usize;
        let (mut done, mut err) = (0u64, None);
        self.input.job_records(job, scratch, &mut |p| {
            if err.is_none() {
                if let Err(e) = self.add(p, first + done, out) {
                    err = Some(e);
                }
            }
            done += (p.len() / stride) as u64;
        })?;
        err.map_or(Ok(()), Err)
    }
    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        Some(self.input.job_bytes(job))
    }
}

/// One spilled input's records as partition jobs.
struct SpillJobs<'a> {
    file: &'a std::fs::File,
    path: &'a std::path::Path,
    start: u64,
    count: u64,
}

impl PartJobs for SpillJobs<'_> {
    fn jobs(&self) -> usize {
        record_jobs(self.count as usize)
    }
    fn job_points(&self, job: usize) -> u64 {
        record_range(job, self.count as usize).len() as u64
    }
    fn run(&self, job: usize, raw: &mut Vec<u8>, out: &mut Worker) -> Result<(), FormatError> {
        let r = record_range(job, self.count as usize);
        raw.clear();
        raw.resize(r.len() * SPILL_LEN, 0);
        super::read_exact_at(self.file, raw, (self.start + r.start as u64) * SPILL_LEN as u64)
            .map_err(|e| FormatError::Invalid(format!("reading the spill file {}: {e}", self.path.display())))?;
        for (i, sp) in raw.chunks_exact(SPILL_LEN).enumerate() {
            let v: [f64; 3] = std::array::from_fn(|k| f64::from_le_bytes(std::array::from_fn(|b| sp[8 * k + b])));
            out.bounds.include(v);
            match out.lay.quantize(v) {
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
                None => out.misfit(r.start as u64 + i as u64)?,
            }
        }
        Ok(())
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

/// The most bytes the workers' cell buffers may hold together (each cell's buffer is written as a
/// block when it holds `min(BLOCK_BYTES, this / (workers × cells of a surface))` bytes, at least 8 KiB).
const BUFFERS_BYTES: usize = 2 << 30;

/// The output records of every input, sorted into the cells at `depth` in `cells` (emptied first).
///
/// The inputs' jobs, in input order, are split into one contiguous range per worker thread (equal
/// points); a worker opens the inputs of its range in turn, turns each job's records into output
/// records appended to its own buffer per cell, and writes each full buffer as a block of the cells file
/// itself (`pwrite` at the block's place: blocks are 64 KiB apart, the padding left as holes). Nothing is
/// handed between threads, so the pass scales with the cores; a cell's blocks are listed worker by worker,
/// which is input order.
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
    // Every input's jobs and their points, in input order (opening each input once to count them).
    let mut jobs: Vec<(usize, usize, u64)> = Vec::new();
    for (i, p) in plan.iter().enumerate() {
        with_jobs(p, spill, lay, &mut |src| {
            jobs.extend((0..src.jobs()).map(|j| (i, j, src.job_points(j))));
            Ok(())
        })?;
    }
    let total: u64 = jobs.iter().map(|j| j.2).sum();
    let workers = rayon::current_num_threads().clamp(1, jobs.len().max(1));
    let fill = (BUFFERS_BYTES / (workers * side * side)).clamp(8 << 10, BLOCK_BYTES);
    let block_recs = (fill / n).max(1);
    // Worker w takes the jobs whose first point is in [w, w + 1) × total / workers.
    let mut ranges = Vec::with_capacity(workers);
    let (mut from, mut seen) = (0usize, 0u64);
    for w in 0..workers {
        let end_pts = total * (w as u64 + 1) / workers as u64;
        let mut to = from;
        while to < jobs.len() && (seen < end_pts || w + 1 == workers) {
            seen += jobs[to].2;
            to += 1;
        }
        ranges.push(from..to);
        from = to;
    }
    let next: Vec<AtomicU64> = (0..cells.stripes()).map(|_| AtomicU64::new(0)).collect();
    let stop = AtomicBool::new(false);
    let results: Vec<Result<Worker, (usize, ConvertError)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .enumerate()
            .map(|(w, range)| {
                let (jobs, next, stop) = (&jobs[range.clone()], &next[..], &stop);
                let first_job = range.start;
                scope.spawn(move || -> Result<Worker, (usize, ConvertError)> {
                    let mut w = Worker::new(lay, depth, tolerant, cells, w % next.len(), next, block_recs);
                    let mut scratch = Vec::new();
                    let mut k = 0;
                    while k < jobs.len() {
                        let input = jobs[k].0;
                        let end = k + jobs[k..].iter().take_while(|j| j.0 == input).count();
                        let p = &plan[input];
                        let r = with_jobs(p, spill, lay, &mut |src| {
                            for &(_, job, points) in &jobs[k..end] {
                                if stop.load(Ordering::Relaxed) {
                                    return Ok(());
                                }
                                src.run(job, &mut scratch, &mut w)
                                    .map_err(|source| ConvertError::Input { path: p.path().clone(), source })?;
                                if let Some(e) = w.write_error.take() {
                                    return Err(e);
                                }
                                progress.inc(points);
                                src.release(job);
                            }
                            Ok(())
                        });
                        if let Err(e) = r {
                            stop.store(true, Ordering::Relaxed);
                            return Err((first_job + k, e));
                        }
                        k = end;
                    }
                    w.flush();
                    match w.write_error.take() {
                        Some(e) => Err((first_job + jobs.len(), e)),
                        None => Ok(w),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err((usize::MAX, ConvertError::Write("a partition thread panicked".into()))))
            })
            .collect()
    });
    // The error of the earliest job (the one a single thread would have met first).
    let mut done = Vec::with_capacity(results.len());
    let mut first_error: Option<(usize, ConvertError)> = None;
    for r in results {
        match r {
            Ok(w) => done.push(w),
            Err((at, e)) => {
                if first_error.as_ref().is_none_or(|f| at < f.0) {
                    first_error = Some((at, e));
                }
            }
        }
    }
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    let (mut bounds, mut tally) = (DBounds::EMPTY, Tally::default());
    let mut blocks: Vec<Vec<(u64, u32)>> = (0..side * side * side).map(|_| Vec::new()).collect();
    for w in done {
        bounds = DBounds::union(bounds, w.bounds);
        tally.add(&w.tally);
        for (c, b) in w.blocks.into_iter().enumerate() {
            blocks[c].extend(b);
        }
    }
    let blocks = blocks.into_iter().enumerate().filter(|(_, b)| !b.is_empty()).map(|(c, b)| (c as u32, b)).collect();
    Ok(Parted { blocks, bounds, tally })
}

impl Planned {
    fn path(&self) -> &PathBuf {
        match self {
            Planned::Las { path, .. } | Planned::Spill { path, .. } => path,
        }
    }
}

/// Opens input `p` as partition jobs and calls `f` with them (a LAS/LAZ input memory-mapped for the call;
/// its jobs' pages released as they are done, through [`Released`]).
fn with_jobs(
    p: &Planned,
    spill: Option<&Temp>,
    lay: &Layout,
    f: &mut dyn FnMut(&Released) -> Result<(), ConvertError>,
) -> Result<(), ConvertError> {
    match p {
        Planned::Las { path, extra } => {
            let bytes = FileBytes::open(path)?;
            let las = LasJobs::new(las_copy::open(path, bytes.bytes())?, lay, *extra);
            f(&Released { src: &las, bytes: Some(&bytes) })
        }
        Planned::Spill { start, count, .. } => {
            let s =
                spill.ok_or_else(|| ConvertError::Write("internal: a spilled input without the spill file".into()))?;
            let spilled = SpillJobs { file: &s.file, path: &s.path, start: *start, count: *count };
            f(&Released { src: &spilled, bytes: None })
        }
    }
}

/// An input's jobs with its mapped bytes, whose pages a finished job releases.
struct Released<'a> {
    src: &'a dyn PartJobs,
    bytes: Option<&'a FileBytes>,
}

impl Released<'_> {
    fn jobs(&self) -> usize {
        self.src.jobs()
    }
    fn job_points(&self, job: usize) -> u64 {
        self.src.job_points(job)
    }
    fn run(&self, job: usize, scratch: &mut Vec<u8>, out: &mut Worker) -> Result<(), FormatError> {
        self.src.run(job, scratch, out)
    }
    fn release(&self, job: usize) {
        if let (Some(b), Some(range)) = (self.bytes, self.src.job_bytes(job)) {
            b.release(range);
        }
    }
}

/// The cells file's stripes (see cells.rs): one per partition worker.
pub(super) fn cell_stripes() -> usize {
    rayon::current_num_threads().max(1)
}

/// The record length of output point format `format` (6, 7 or 8).
pub(super) fn record_len(format: u8) -> usize {
    FORMAT_SIZES[format as usize] as usize
}
