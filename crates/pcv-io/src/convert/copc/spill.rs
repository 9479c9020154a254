//! The spill pass of `pcv convert IN... -o OUT.copc.laz`, for the inputs that are not LAS or LAZ.
//!
//! How it works: such an input (PLY, PCD, E57, text, ...) has no header that gives its bounds and count
//! reliably, and some (text) are slow to decode, so it is decoded once — with its exact values, as the
//! LAS writer's: f64 coordinates, 16-bit colors, intensity, classification — on all cores and appended
//! to a temporary file of 33-byte records while its exact bounds and count are gathered. The partition
//! pass then reads these records back ([`super::partition`]). LAS and LAZ inputs are never spilled.
//! Memory: the decoder's staging slots.
use super::partition::SPILL_LEN;
use super::Temp;
use crate::convert::ConvertError;
use crate::formats::{DBounds, Progress};
use crate::load::{self, FileBytes, LoadOptions};
use crate::stream::{stream_with, Staging, StreamError, Verdict};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::PathBuf;

/// What was spilled.
pub(super) struct Spilled {
    /// Per input: its first record in the spill file and its records.
    pub ranges: Vec<(u64, u64)>,
    pub bounds: DBounds,
    pub rgb: bool,
}

/// Decodes `inputs` into `tmp`, one after the other.
pub(super) fn spill(
    inputs: &[PathBuf],
    tmp: &mut Temp,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<Spilled, ConvertError> {
    let mut s = Spilled { ranges: Vec::new(), bounds: DBounds::EMPTY, rgb: false };
    let io_tmp = |source| ConvertError::Io { path: tmp.path.clone(), source };
    let mut w = BufWriter::with_capacity(4 << 20, tmp.file.try_clone().map_err(io_tmp)?);
    let mut records = 0u64;
    for path in inputs {
        let bytes = FileBytes::open(path)?;
        let data = bytes.bytes();
        let format = load::detect(path, data)?;
        let input = |source| ConvertError::Input { path: path.clone(), source };
        if opts.progress {
            progress.set_file(format!("{} (reading)", path.display()));
        }
        let src = load::open_source(data, format, load::is_pts(path)).map_err(input)?;
        progress.add_total(src.reserve_points());
        s.rgb |= src.has_rgb();
        let start = w.stream_position().map_err(io_tmp)?;
        loop {
            let (mut count, mut b) = (0u64, s.bounds);
            let mut buf = Vec::new();
            let stats =
                stream_with(&*src, &[0.0; 3], progress, true, &mut |st: &Staging| -> Result<(), ConvertError> {
                    if st.first_nonfinite.is_some() {
                        return Ok(()); // reported below, with its index in the file
                    }
                    buf.clear();
                    buf.reserve(st.len() * SPILL_LEN);
                    for i in 0..st.len() {
                        let v = st.xyz64[i];
                        b.include(v);
                        for x in v {
                            buf.extend_from_slice(&x.to_le_bytes());
                        }
                        let c = if st.colorless { [0; 3] } else { st.rgb16[i] };
                        c.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
                        let inten = st.intensity.get(i).map_or(0, |t| t.round().clamp(0.0, 65535.0) as u16);
                        buf.extend_from_slice(&inten.to_le_bytes());
                        buf.push(st.classification.get(i).copied().unwrap_or(0));
                    }
                    count += st.len() as u64;
                    w.write_all(&buf).map_err(|source| ConvertError::Io { path: tmp.path.clone(), source })
                })
                .map_err(|e| match e {
                    StreamError::Decode(source) => input(source),
                    StreamError::Sink(e) => e,
                })?;
            if let Some(point) = stats.first_nonfinite {
                return Err(ConvertError::NonFinite { path: path.clone(), point });
            }
            if src.finish(&stats).map_err(input)? == Verdict::Done {
                s.ranges.push((records, count));
                records += count;
                s.bounds = b;
                break;
            }
            // The decoder decodes again (8-bit colors guessed wrong): overwrite this input's records.
            w.seek(SeekFrom::Start(start)).map_err(io_tmp)?;
        }
        let end = w.stream_position().map_err(io_tmp)?;
        w.flush().map_err(io_tmp)?;
        tmp.file.set_len(end).map_err(io_tmp)?;
    }
    w.flush().map_err(io_tmp)?;
    Ok(s)
}
