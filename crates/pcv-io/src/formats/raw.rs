//! pcv's raw format (`.bin`, `.pcv`): little-endian 16-byte records, x, y, z as f32 then r, g, b, a as
//! u8 — the prototype's layout, and what `pcv bench --dump-points` and `pcv convert -o x.bin` write.
//!
//! How it works: the file is a bare array of records, so its size must be a multiple of 16 (otherwise
//! the error names the byte where the partial record starts). The records are decoded in parallel like
//! every fixed-record format: positions go through f64 so the loader's origin applies to them too
//! (with origin 0, the usual case for these local-coordinate files, the positions are copied exactly);
//! NaN or infinite positions are dropped. The colors, alpha included, are kept as stored.
use super::{
    record_jobs, record_range, sample_bounds, sample_indices, Columns, DBounds, Decoded, FileInfo, FormatError,
    ReadOptions, Rec,
};
use crate::stream::{ChunkSource, Precision, Staging};

pub const RECORD_BYTES: usize = 16;

fn rec(r: &[u8]) -> Rec {
    let f = |o: usize| f32::from_le_bytes(super::bytes(r, o)) as f64;
    Rec { xyz: [f(0), f(4), f(8)], rgba: [r[12], r[13], r[14], r[15]], ..Default::default() }
}

/// The partial record's offset when `size_bytes` is not a whole number of records.
pub fn partial_record(size_bytes: u64) -> Option<u64> {
    (!size_bytes.is_multiple_of(RECORD_BYTES as u64)).then_some(size_bytes / RECORD_BYTES as u64 * RECORD_BYTES as u64)
}

/// A sample's bounds, for choosing the origin before decoding.
pub fn estimate(data: &[u8]) -> Option<DBounds> {
    let n = data.len() / RECORD_BYTES;
    sample_bounds(sample_indices(n, 1024).map(|k| rec(&data[k * RECORD_BYTES..(k + 1) * RECORD_BYTES]).xyz))
}

/// Opens a raw file: its size must be a whole number of records.
pub fn open(data: &[u8]) -> Result<RawSource<'_>, FormatError> {
    if let Some(offset) = partial_record(data.len() as u64) {
        return Err(FormatError::at_byte(
            offset as usize,
            format!(
                "size {} bytes is not a multiple of the 16-byte record; the partial record starts here",
                data.len()
            ),
        ));
    }
    Ok(RawSource { data, count: data.len() / RECORD_BYTES })
}

pub fn read(data: &[u8], opts: &ReadOptions) -> Result<Decoded, FormatError> {
    let src = open(data)?;
    opts.progress.add_total(src.count as u64);
    crate::stream::collect(&src, &opts.origin.to_array(), opts.progress)
}

/// An opened raw file: jobs of 64 Ki records.
pub struct RawSource<'a> {
    data: &'a [u8],
    count: usize,
}

impl ChunkSource for RawSource<'_> {
    fn jobs(&self) -> usize {
        record_jobs(self.count)
    }
    fn job_points(&self, job: usize) -> u64 {
        record_range(job, self.count).len() as u64
    }
    fn reserve_points(&self) -> u64 {
        self.count as u64
    }
    fn exact_jobs(&self) -> bool {
        true
    }
    fn job_bytes(&self, job: usize) -> Option<std::ops::Range<usize>> {
        let r = record_range(job, self.count);
        Some(r.start * RECORD_BYTES..r.end * RECORD_BYTES)
    }
    fn columns(&self) -> Columns {
        Columns::default()
    }
    fn has_rgb(&self) -> bool {
        true
    }
    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
        let r = record_range(job, self.count);
        out.push_records(&self.data[r.start * RECORD_BYTES..r.end * RECORD_BYTES], RECORD_BYTES, &rec, origin);
        Ok(())
    }
    fn info(&self) -> FileInfo {
        FileInfo {
            variant: "raw 16-byte records (x, y, z f32; r, g, b, a u8)".into(),
            declared_points: Some(self.count as u64),
            attributes: vec!["xyz (f32)".into(), "rgba (u8)".into()],
            ..Default::default()
        }
    }
    fn estimate(&self) -> Option<DBounds> {
        estimate(self.data)
    }
    fn precision(&self) -> Precision {
        Precision::F32
    }
}
