//! Lossless LAS/LAZ → LAS/LAZ: the point records pass through byte for byte, never through pcv's
//! 16-byte view points (f32 positions, 8-bit colors).
//!
//! How it works: one input written in its own compression (LAS → LAS, LAZ → LAZ) is the input's bytes
//! with its header's global-encoding WKT bit set where LAS 1.4 requires it (point formats 6–10): the
//! VLRs, the records (or the LAZ chunks and their chunk table) and the EVLRs are copied unchanged.
//! Otherwise the output is rebuilt: the first input's public header (point format, scale, offset,
//! system and software, GUID, dates, ...), its VLRs in order (CRS included; the LASzip VLR is dropped
//! for LAS output and written for LAZ output, and a COPC info VLR is dropped since the file is no
//! longer COPC), the bytes between its VLRs and its points, then every record of every input in order
//! — LAZ inputs decompressed with every field selected, on all cores — written raw or compressed by
//! the `laz` crate in parallel, then the first input's EVLRs (its internal waveform data with them),
//! with the header's offsets and counts updated.
//!
//! With a filter (`pcv convert --classes … --clip-box …`) each record is tested on its own bytes
//! (class, intensity, position in the output's grid, returns and the other fields) and only those that
//! pass are written, still byte for byte; counts and bounds are recounted.
//!
//! Merging keeps everything only when the inputs share the LAS version, point format, record length,
//! VLRs and have no EVLRs; a scale or offset that differs from the first input's is allowed when every
//! point lands exactly on the first input's grid (the integer coordinates are re-expressed in it), and
//! is an error naming the point otherwise. Bounds and point counts by return are recounted from the
//! records of a merge. A point whose coordinate (integer × scale + offset) is not finite is an error
//! naming the file and the point: nothing is written for it.
use super::ConvertError;
use crate::filter::{PointFilter, PointValues};
use crate::formats::las::{self as lasfmt, always_finite, laz_chunk_pieces, Chunk, Header, Vlr, FORMAT_SIZES};
use crate::formats::{Columns, DBounds, FileInfo, FormatError, Progress};
use crate::stream::{stream, ChunkSource, Staging, StreamError};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The LAS 1.4 global-encoding bit that says the CRS is WKT (required for point formats 6–10).
const WKT_BIT: u16 = 1 << 4;
/// The global-encoding bit that says waveform data packets are inside the file (an EVLR).
const INTERNAL_WAVEFORM_BIT: u16 = 1 << 1;

fn u16at(d: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([d[o], d[o + 1]])
}
fn u32at(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}
fn u64at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|k| d[o + k]))
}

/// The LAZ side of an input.
struct LazPart {
    vlr: laz::LazVlr,
    chunks: Vec<Chunk>,
    /// Index of the LASzip VLR among the input's VLRs.
    vlr_index: usize,
}

/// One opened LAS or LAZ input.
pub struct Input<'a> {
    path: PathBuf,
    data: &'a [u8],
    h: Header,
    vlrs: Vec<Vlr>,
    /// Where the EVLRs (and internal waveform data) start: copied after the points.
    tail: Option<usize>,
    laz: Option<LazPart>,
}

/// The user ID of the VLR or EVLR record starting at `record` (bytes 2..18, up to the first NUL).
pub(crate) fn record_user(record: &[u8]) -> &[u8] {
    let id = record.get(2..18).unwrap_or_default();
    id.split(|&b| b == 0).next().unwrap_or_default()
}

/// Whether `data` is a LAS or LAZ file (what [`copy`] takes).
pub fn is_las(data: &[u8]) -> bool {
    lasfmt::sniff(data)
}

/// Opens a LAS or LAZ input; its header, VLRs, LAZ chunk table and EVLR offsets checked against its size.
pub fn open<'a>(path: &Path, data: &'a [u8]) -> Result<Input<'a>, ConvertError> {
    let fe = |source: FormatError| ConvertError::Input { path: path.into(), source };
    let mut h = lasfmt::parse_header(data).map_err(fe)?;
    let vlrs = lasfmt::vlrs(data, &h).map_err(fe)?;
    // A filter on an extra-bytes field reads it where the descriptors put it.
    (h.extras, h.extra_notes) = crate::formats::las_extra::describe(data, &h, &vlrs);
    let global = u16at(data, 6);
    let mut tail = None;
    if h.version.1 >= 4 && h.header_size >= 375 && u32at(data, 243) > 0 {
        tail = Some(u64at(data, 235));
    } else if h.version.1 >= 3 && h.header_size >= 235 && global & INTERNAL_WAVEFORM_BIT != 0 && u64at(data, 227) > 0 {
        tail = Some(u64at(data, 227));
    }
    let points_end = if h.compressed {
        h.data_offset as usize + 8
    } else {
        let end = h.data_offset as u128 + h.count as u128 * h.record_len as u128;
        if end > data.len() as u128 {
            return Err(fe(FormatError::at_byte(
                h.data_offset as usize,
                format!(
                    "the header declares {} points of {} bytes, more than follow the point data offset",
                    h.count, h.record_len
                ),
            )));
        }
        end as usize
    };
    let tail = match tail {
        Some(t) if t < points_end as u64 || t > data.len() as u64 => {
            return Err(fe(FormatError::at_byte(
                235,
                format!("the EVLRs' offset {t} is not after the point data ({points_end}..{})", data.len()),
            )));
        }
        t => t.map(|t| t as usize),
    };
    let laz = if h.compressed {
        let vlr_index =
            vlrs.iter().position(|v| v.user_id == "laszip encoded" && v.record_id == 22204).ok_or_else(|| {
                fe(FormatError::Invalid("compressed point format but no LASzip VLR (laszip encoded/22204)".into()))
            })?;
        let v = &vlrs[vlr_index];
        let vlr = laz::LazVlr::from_buffer(&data[v.data.clone()])
            .map_err(|e| fe(FormatError::at_byte(v.data.start, format!("LASzip VLR: {e}"))))?;
        if vlr.items_size() != h.record_len as u64 || vlr.items().is_empty() {
            return Err(fe(FormatError::at_byte(
                v.data.start,
                format!("the LASzip VLR describes {}-byte points, the header {}", vlr.items_size(), h.record_len),
            )));
        }
        let chunks = lasfmt::chunk_table(data, &h, &vlr).map_err(fe)?;
        Some(LazPart { vlr, chunks, vlr_index })
    } else {
        None
    };
    Ok(Input { path: path.into(), data, h, vlrs, tail, laz })
}

impl<'a> Input<'a> {
    /// The input's public header.
    pub(crate) fn header(&self) -> &Header {
        &self.h
    }

    /// The VLRs a copy keeps (all but the LASzip and COPC ones): user ID, record ID and the whole
    /// record (54-byte header and data), in the file's order.
    pub(crate) fn kept_vlrs(&self) -> Vec<(&str, u16, &'a [u8])> {
        let data = self.data;
        self.vlrs
            .iter()
            .filter(|v| !(v.user_id == "laszip encoded" || v.user_id == "copc"))
            .map(|v| (v.user_id.as_str(), v.record_id, vlr_bytes(data, v)))
            .collect()
    }

    /// What a copy writes after the points: the input's tail (EVLRs, internal waveform data) as it is,
    /// except that a COPC input's EVLRs of user "copc" (its hierarchy, whose offsets point into the
    /// input) are left out; and the EVLR count to write (`None`: the header's stands).
    fn tail_bytes(&self) -> (std::borrow::Cow<'a, [u8]>, Option<u32>) {
        let (Some(t), d) = (self.tail, self.data) else { return (std::borrow::Cow::Borrowed(&[]), None) };
        let copc = self.vlrs.iter().any(|v| v.user_id == "copc");
        if !copc || self.h.header_size < 375 || d.len() < 247 {
            return (std::borrow::Cow::Borrowed(&d[t..]), None);
        }
        let (mut at, mut kept, mut out) = (t, 0u32, Vec::new());
        for _ in 0..u32at(d, 243) {
            let Some(end) = d.get(at..at + 60).and_then(|_| (at as u64 + 60).checked_add(u64at(d, at + 20))) else {
                break;
            };
            let end = end.min(d.len() as u64) as usize;
            if record_user(&d[at..]) != b"copc" {
                out.extend_from_slice(&d[at..end]);
                kept += 1;
            }
            at = end;
        }
        (std::borrow::Cow::Owned(out), Some(kept))
    }

    /// The EVLRs of user "LASF_Projection" (a LAS 1.4 file's WKT or GeoTIFF CRS may be one) that fit a VLR
    /// (at most 65535 bytes of data), each as a VLR record: record ID and the whole record.
    pub(crate) fn crs_evlrs_as_vlrs(&self) -> Vec<(u16, Vec<u8>)> {
        let (Some(mut at), d) = (self.tail, self.data) else { return Vec::new() };
        let count = if self.h.header_size >= 375 && d.len() >= 247 { u32at(d, 243) } else { 0 };
        let mut out = Vec::new();
        for _ in 0..count {
            if at + 60 > d.len() {
                break;
            }
            let len = u64at(d, at + 20);
            let Some(end) = (at as u64 + 60).checked_add(len).filter(|&e| e <= d.len() as u64) else { break };
            if record_user(&d[at..]) == b"LASF_Projection" && len <= u16::MAX as u64 {
                let record_id = u16at(d, at + 18);
                let mut v = Vec::with_capacity(54 + len as usize);
                v.extend_from_slice(&d[at..at + 20]);
                v.extend_from_slice(&(len as u16).to_le_bytes());
                v.extend_from_slice(&d[at + 28..at + 60]);
                v.extend_from_slice(&d[at + 60..end as usize]);
                out.push((record_id, v));
            }
            at = end as usize;
        }
        out
    }

    /// The input's jobs (64 Ki records of a LAS file, or one LAZ chunk) as the index of each job's
    /// first point.
    pub(crate) fn job_firsts(&self) -> Vec<u64> {
        match &self.laz {
            Some(l) => l
                .chunks
                .iter()
                .scan(0u64, |at, c| {
                    let here = *at;
                    *at += c.points as u64;
                    Some(here)
                })
                .collect(),
            None => {
                let n = self.h.count as usize;
                (0..crate::formats::record_jobs(n)).map(|j| crate::formats::record_range(j, n).start as u64).collect()
            }
        }
    }

    /// Points of job `job`, given [`Input::job_firsts`].
    pub(crate) fn job_points(&self, firsts: &[u64], job: usize) -> u64 {
        firsts.get(job + 1).copied().unwrap_or(self.h.count) - firsts[job]
    }

    /// The bytes of the file job `job` reads: its records (LAS) or its compressed chunk (LAZ).
    pub(crate) fn job_bytes(&self, job: usize) -> std::ops::Range<usize> {
        match &self.laz {
            Some(l) => l.chunks[job].byte..l.chunks[job].byte + l.chunks[job].bytes,
            None => {
                let r = crate::formats::record_range(job, self.h.count as usize);
                let (stride, at) = (self.h.record_len as usize, self.h.data_offset as usize);
                at + r.start * stride..at + r.end * stride
            }
        }
    }

    /// Hands job `job`'s raw records, every field, to `piece` in order: the file's bytes of a LAS job
    /// at once, a LAZ chunk a decompressed piece at a time (`scratch` holds the pieces).
    pub(crate) fn job_records(
        &self,
        job: usize,
        scratch: &mut Vec<u8>,
        piece: &mut dyn FnMut(&[u8]),
    ) -> Result<(), FormatError> {
        match &self.laz {
            None => {
                piece(&self.data[self.job_bytes(job)]);
                Ok(())
            }
            Some(l) => {
                laz_chunk_pieces(self.data, &l.vlr, &l.chunks, job, laz::DecompressionSelection::all(), scratch, piece)
            }
        }
    }
}

/// How one axis of an input's integer coordinates becomes the output's.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Axis {
    Same,
    /// Same scale, offsets a whole number of steps apart.
    Shift(i64),
    /// Another scale: through f64, which must land on the output's grid.
    Rescale {
        scale: f64,
        offset: f64,
        out_scale: f64,
        out_offset: f64,
    },
}

fn axes(input: &Header, out: &Header) -> [Axis; 3] {
    std::array::from_fn(|k| {
        let (s, o, os, oo) = (input.scale[k], input.offset[k], out.scale[k], out.offset[k]);
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
    })
}

/// The records of one input, as decoded jobs whose `scratch` holds the output's raw records: 64 Ki
/// records of a LAS file, or one LAZ chunk decompressed with every field.
struct Records<'a, 'b> {
    input: &'b Input<'a>,
    axes: [Axis; 3],
    /// The index of each job's first point in the input.
    first: Vec<u64>,
}

impl<'a, 'b> Records<'a, 'b> {
    fn new(input: &'b Input<'a>, out: &Header) -> Self {
        Records { input, axes: axes(&input.h, out), first: input.job_firsts() }
    }

    /// Checks and re-expresses the records in `buf` (the job's, starting at point `first`).
    fn fix(&self, buf: &mut [u8], first: u64) -> Result<(), FormatError> {
        let h = &self.input.h;
        let stride = h.record_len as usize;
        let check_finite = !always_finite(h);
        if !check_finite && self.axes == [Axis::Same; 3] {
            return Ok(());
        }
        for (i, rec) in buf.chunks_exact_mut(stride).enumerate() {
            for k in 0..3 {
                let o = 4 * k;
                let v = i32::from_le_bytes([rec[o], rec[o + 1], rec[o + 2], rec[o + 3]]);
                let point = first + i as u64;
                let real = v as f64 * h.scale[k] + h.offset[k];
                if !real.is_finite() {
                    return Err(FormatError::Invalid(format!(
                        "point {point} has {} = {v} × {} + {} = {real}, not a finite number; nothing was written for it",
                        ["x", "y", "z"][k],
                        pcv_model::number::readable(h.scale[k]),
                        pcv_model::number::readable(h.offset[k])
                    )));
                }
                let new = match self.axes[k] {
                    Axis::Same => continue,
                    Axis::Shift(d) => Some(v as i64 + d).filter(|n| i32::try_from(*n).is_ok()),
                    Axis::Rescale { out_scale, out_offset, .. } => {
                        let n = (real - out_offset) / out_scale;
                        let r = n.round();
                        ((n - r).abs() <= 1e-4 && r.abs() < 2_147_483_648.0).then_some(r as i64)
                    }
                };
                let Some(new) = new.and_then(|n| i32::try_from(n).ok()) else {
                    return Err(FormatError::Invalid(format!(
                        "point {point}: {} = {real} does not lie on the first file's grid (scale {:?}, offset {:?}) within 32 bits; convert the files separately",
                        ["x", "y", "z"][k],
                        match self.axes[k] {
                            Axis::Rescale { out_scale, .. } => out_scale,
                            _ => h.scale[k],
                        },
                        match self.axes[k] {
                            Axis::Rescale { out_offset, .. } => out_offset,
                            _ => h.offset[k],
                        }
                    )));
                };
                rec[o..o + 4].copy_from_slice(&new.to_le_bytes());
            }
        }
        Ok(())
    }
}

impl ChunkSource for Records<'_, '_> {
    fn jobs(&self) -> usize {
        self.first.len()
    }
    fn job_points(&self, job: usize) -> u64 {
        self.input.job_points(&self.first, job)
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
    fn decode(&self, job: usize, _origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let mut buf = std::mem::take(&mut out.scratch);
        buf.clear();
        let mut piece = Vec::new();
        let r = self.input.job_records(job, &mut piece, &mut |p| buf.extend_from_slice(p));
        let r = r.and_then(|()| self.fix(&mut buf, self.first[job]));
        out.scratch = buf;
        r
    }
    fn info(&self) -> FileInfo {
        FileInfo::default()
    }
    fn estimate(&self) -> Option<DBounds> {
        None
    }
}

/// Recounted header statistics of a merge.
struct Recount {
    points: u64,
    min: [i32; 3],
    max: [i32; 3],
    by_return: [u64; 15],
}

impl Recount {
    fn new() -> Self {
        Recount { points: 0, min: [i32::MAX; 3], max: [i32::MIN; 3], by_return: [0; 15] }
    }

    fn add(&mut self, records: &[u8], stride: usize, format: u8) {
        for rec in records.chunks_exact(stride) {
            for k in 0..3 {
                let v = i32::from_le_bytes([rec[4 * k], rec[4 * k + 1], rec[4 * k + 2], rec[4 * k + 3]]);
                self.min[k] = self.min[k].min(v);
                self.max[k] = self.max[k].max(v);
            }
            let r = if format >= 6 { rec[14] & 0x0f } else { rec[14] & 0x07 } as usize;
            if (1..=15).contains(&r) {
                self.by_return[r - 1] += 1;
            }
        }
        self.points += (records.len() / stride) as u64;
    }
}

/// What [`copy`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct CopySummary {
    pub points: u64,
    /// The records passed through as they were (one input in its own compression): the file is the input's bytes.
    pub verbatim: bool,
}

/// The raw bytes of a VLR (its 54-byte header and data).
fn vlr_bytes<'d>(data: &'d [u8], v: &Vlr) -> &'d [u8] {
    &data[v.data.start - 54..v.data.end]
}

/// The LASzip VLR for `vlr`, as a whole record.
fn laszip_vlr_record(vlr: &laz::LazVlr) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    vlr.write_to(&mut data)?;
    let mut v = Vec::with_capacity(54 + data.len());
    v.extend_from_slice(&0u16.to_le_bytes());
    let mut user = [0u8; 16];
    user[..14].copy_from_slice(b"laszip encoded");
    v.extend_from_slice(&user);
    v.extend_from_slice(&22204u16.to_le_bytes());
    v.extend_from_slice(&(data.len() as u16).to_le_bytes());
    let mut desc = [0u8; 32];
    desc[..17].copy_from_slice(b"by laz (pcv copy)");
    v.extend_from_slice(&desc);
    v.extend_from_slice(&data);
    Ok(v)
}

/// Checks that `inputs` can be merged without losing anything.
fn check_merge(inputs: &[Input]) -> Result<(), ConvertError> {
    let first = &inputs[0];
    let kept = |i: &Input| -> Vec<Vec<u8>> { i.kept_vlrs().into_iter().map(|v| v.2.to_vec()).collect() };
    let first_vlrs = kept(first);
    for i in inputs {
        let differs = |what: String| Err(ConvertError::Merge { path: i.path.clone(), first: first.path.clone(), what });
        if inputs.len() > 1 && i.tail.is_some() {
            return differs("it has EVLRs (waveform data or others), which a merge cannot keep".into());
        }
        if i.h.version != first.h.version {
            return differs(format!(
                "LAS {}.{} vs {}.{}",
                i.h.version.0, i.h.version.1, first.h.version.0, first.h.version.1
            ));
        }
        if (i.h.format, i.h.record_len) != (first.h.format, first.h.record_len) {
            return differs(format!(
                "point format {} ({}-byte records) vs {} ({})",
                i.h.format, i.h.record_len, first.h.format, first.h.record_len
            ));
        }
        if kept(i) != first_vlrs {
            return differs("its VLRs (the CRS, extra-byte descriptions, ...) differ".into());
        }
    }
    Ok(())
}

/// Writes `inputs` (LAS or LAZ, merged in order) to `out` as LAS or LAZ (`out_laz`), losing nothing.
pub fn copy<W: Write + Seek + Send + Sync>(
    inputs: &[Input],
    out: &mut W,
    out_laz: bool,
    progress: &Progress,
    filter: Option<&PointFilter>,
) -> Result<CopySummary, ConvertError> {
    let io = |e: std::io::Error| ConvertError::Write(e.to_string());
    let first = inputs.first().ok_or(ConvertError::Load(crate::load::LoadError::NoFiles))?;
    check_merge(inputs)?;
    let h = &first.h;
    let header_size = h.header_size as usize;
    let total: u64 = inputs.iter().map(|i| i.h.count).sum();
    progress.add_total(total);
    let mut header = first.data[..header_size].to_vec();
    if h.version.1 >= 4 && h.format >= 6 {
        let g = u16at(&header, 6) | WKT_BIT;
        header[6..8].copy_from_slice(&g.to_le_bytes());
    }
    // One input in its own compression whose coordinates are all finite: its bytes, as they are.
    if inputs.len() == 1 && first.laz.is_some() == out_laz && always_finite(h) && filter.is_none() {
        out.write_all(&header).map_err(io)?;
        out.write_all(&first.data[header_size..]).map_err(io)?;
        progress.inc(total);
        return Ok(CopySummary { points: total, verbatim: true });
    }
    // The VLRs: the first input's, without its LASzip VLR (and the COPC one: the output is not COPC).
    let mut vlr_region = Vec::new();
    let mut n_vlrs = 0u32;
    for (k, v) in first.vlrs.iter().enumerate() {
        if first.laz.as_ref().is_some_and(|l| l.vlr_index == k) || v.user_id == "copc" {
            continue;
        }
        vlr_region.extend_from_slice(vlr_bytes(first.data, v));
        n_vlrs += 1;
    }
    let laz_vlr = if out_laz {
        let extra = h.record_len - FORMAT_SIZES[h.format as usize];
        let vlr = match &first.laz {
            Some(l) => laz::LazVlrBuilder::new(l.vlr.items().clone())
                .with_fixed_chunk_size(if l.vlr.uses_variable_size_chunks() { 50_000 } else { l.vlr.chunk_size() })
                .build(),
            None => laz::LazVlr::from_laz_items(
                laz::LazItemRecordBuilder::default_for_point_format_id(h.format, extra)
                    .map_err(|e| ConvertError::Laz(e.to_string()))?,
            ),
        };
        vlr_region.extend_from_slice(&laszip_vlr_record(&vlr).map_err(io)?);
        n_vlrs += 1;
        Some(vlr)
    } else {
        None
    };
    // Whatever the first input holds between its VLRs and its points (LAS 1.0's signature, user data).
    let vlr_end = first.vlrs.last().map_or(header_size, |v| v.data.end);
    vlr_region.extend_from_slice(&first.data[vlr_end..first.h.data_offset as usize]);
    let data_offset = header_size + vlr_region.len();
    let data_offset = u32::try_from(data_offset)
        .map_err(|_| ConvertError::Write("the VLRs are larger than LAS's 4 GiB offset allows".into()))?;
    out.write_all(&header).map_err(io)?;
    out.write_all(&vlr_region).map_err(io)?;

    let stride = h.record_len as usize;
    let mut recount = Recount::new();
    let mut dest = match &laz_vlr {
        Some(vlr) => Dest::Laz {
            c: laz::ParLasZipCompressor::new(&mut *out, vlr.clone()).map_err(|e| ConvertError::Laz(e.to_string()))?,
            pending: Vec::new(),
            // Several chunks at a time, compressed in parallel.
            batch: vlr.chunk_size() as usize * stride * 2 * rayon::current_num_threads(),
        },
        None => Dest::Las(&mut *out),
    };
    for input in inputs {
        let src = Records::new(input, h);
        let mut kept = Vec::new();
        let r = stream(&src, &[0.0; 3], &Progress::hidden(), &mut |st: &Staging| -> Result<(), ConvertError> {
            progress.inc((st.scratch.len() / stride) as u64);
            let records: &[u8] = match filter {
                None => &st.scratch,
                Some(f) => {
                    kept.clear();
                    let decode = lasfmt::record_fn(h, false);
                    for rec in st.scratch.chunks_exact(stride).filter(|rec| record_passes(rec, h, decode, f)) {
                        kept.extend_from_slice(rec);
                    }
                    &kept
                }
            };
            recount.add(records, stride, h.format);
            match &mut dest {
                Dest::Las(w) => w.write_all(records).map_err(io),
                Dest::Laz { c, pending, batch } => {
                    pending.extend_from_slice(records);
                    if pending.len() >= *batch {
                        c.compress_many(pending).map_err(io)?;
                        pending.clear();
                    }
                    Ok(())
                }
            }
        });
        match r {
            Ok(_) => {}
            Err(StreamError::Decode(source)) => return Err(ConvertError::Input { path: input.path.clone(), source }),
            Err(StreamError::Sink(e)) => return Err(e),
        }
    }
    let out = match dest {
        Dest::Las(w) => w,
        Dest::Laz { mut c, pending, .. } => {
            c.compress_many(&pending).map_err(io)?;
            c.done().map_err(|e| ConvertError::Laz(e.to_string()))?;
            c.into_inner()
        }
    };
    // The EVLRs (and internal waveform data), then the header's offsets and counts.
    let tail_at = out.stream_position().map_err(io)?;
    let (tail, evlr_count) = first.tail_bytes();
    out.write_all(&tail).map_err(io)?;
    if let Some(n) = evlr_count {
        header[243..247].copy_from_slice(&n.to_le_bytes());
    }
    let end = out.stream_position().map_err(io)?;
    header[96..100].copy_from_slice(&data_offset.to_le_bytes());
    header[100..104].copy_from_slice(&n_vlrs.to_le_bytes());
    header[104] = h.format | if out_laz { 0x80 } else { 0 };
    let moved = |old: u64| match first.tail {
        Some(t) if old >= t as u64 => tail_at + (old - t as u64),
        _ => 0,
    };
    if h.version.1 >= 3 && header_size >= 235 {
        let old = u64at(&header, 227);
        let global = u16at(&header, 6);
        if global & INTERNAL_WAVEFORM_BIT != 0 || first.tail.is_some_and(|t| old >= t as u64) {
            header[227..235].copy_from_slice(&moved(old).to_le_bytes());
        }
    }
    if h.version.1 >= 4 && header_size >= 375 {
        let first_evlr = if u32at(&header, 243) == 0 { 0 } else { moved(u64at(&header, 235)) };
        header[235..243].copy_from_slice(&first_evlr.to_le_bytes());
    }
    if inputs.len() > 1 || filter.is_some() {
        recount.write(&mut header, h)?;
    }
    out.seek(SeekFrom::Start(0)).map_err(io)?;
    out.write_all(&header).map_err(io)?;
    out.seek(SeekFrom::Start(end)).map_err(io)?;
    Ok(CopySummary { points: recount.points, verbatim: false })
}

/// Whether a record (in the output's grid `h`, decoded by `decode`, the reader's own
/// [`lasfmt::record_fn`]) passes `f`: its class, intensity and position, and its other fields at the
/// ASPRS offsets and its extra bytes ([`lasfmt::record_field`]).
fn record_passes(rec: &[u8], h: &Header, decode: impl Fn(&[u8]) -> crate::formats::Rec, f: &PointFilter) -> bool {
    let r = decode(rec);
    let field = |x: crate::formats::Field| lasfmt::record_field(rec, h, x);
    f.passes(&PointValues {
        class: r.class,
        intensity: r.intensity as f64,
        field: &field,
        pos: glam::DVec3::from_array(r.xyz),
    })
}

/// Where the records go.
enum Dest<'w, W: Write + Seek + Send + Sync> {
    Las(&'w mut W),
    Laz { c: laz::ParLasZipCompressor<&'w mut W>, pending: Vec<u8>, batch: usize },
}

impl Recount {
    /// Writes the counts and bounds of a merge into `header` (the first input's).
    fn write(&self, header: &mut [u8], h: &Header) -> Result<(), ConvertError> {
        let n = self.points;
        let modern = h.version.1 >= 4 && h.header_size >= 375;
        if n > u32::MAX as u64 && !modern {
            return Err(ConvertError::Write(format!(
                "{n} points do not fit LAS {}.{}'s 32-bit point count",
                h.version.0, h.version.1
            )));
        }
        let legacy = |v: u64| if h.format >= 6 || v > u32::MAX as u64 { 0 } else { v as u32 };
        header[107..111].copy_from_slice(&legacy(n).to_le_bytes());
        for r in 0..5 {
            header[111 + 4 * r..115 + 4 * r].copy_from_slice(&legacy(self.by_return[r]).to_le_bytes());
        }
        if n > 0 {
            for k in 0..3 {
                let real = |v: i32| v as f64 * h.scale[k] + h.offset[k];
                header[179 + 16 * k..187 + 16 * k].copy_from_slice(&real(self.max[k]).to_le_bytes());
                header[187 + 16 * k..195 + 16 * k].copy_from_slice(&real(self.min[k]).to_le_bytes());
            }
        }
        if modern {
            header[247..255].copy_from_slice(&n.to_le_bytes());
            for r in 0..15 {
                header[255 + 8 * r..263 + 8 * r].copy_from_slice(&self.by_return[r].to_le_bytes());
            }
        }
        Ok(())
    }
}
