//! Loading point files.
//!
//! How it works: the format is chosen by extension. This version reads pcv's raw format (`.bin`/`.pcv`:
//! little-endian 16-byte records, x, y, z as f32 then r, g, b, a as u8 — the layout the prototype and
//! `pcv bench --dump-points` use), memory-light (one read into the point vector) and checked: a size that
//! is not a multiple of 16 is an error naming the file and the byte offset of the partial record.
//! Several files are concatenated into one cloud.
use super::PointCloud;
use crate::render::gpu_data::Point;
use glam::DVec3;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Errors from loading a point file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: unsupported format '{ext}' (this version reads raw 16-byte records: .bin, .pcv)")]
    UnsupportedFormat { path: PathBuf, ext: String },
    #[error("{path}: size {size_bytes} bytes is not a multiple of the 16-byte record; the partial record starts at byte {offset}")]
    TruncatedRecord { path: PathBuf, size_bytes: u64, offset: u64 },
}

/// Formats this version reads, by extension.
pub const SUPPORTED_EXTENSIONS: &[&str] = &["bin", "pcv"];

/// Loads and concatenates `paths`.
pub fn load_files(paths: &[PathBuf]) -> Result<PointCloud, LoadError> {
    let mut points = Vec::new();
    for p in paths {
        read_raw(p, &mut points)?;
    }
    let label = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    Ok(PointCloud::from_points(points, DVec3::ZERO, label))
}

fn read_raw(path: &Path, out: &mut Vec<Point>) -> Result<(), LoadError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    if !SUPPORTED_EXTENSIONS.contains(&ext.as_str()) {
        return Err(LoadError::UnsupportedFormat { path: path.into(), ext });
    }
    let io = |source| LoadError::Io { path: path.into(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size_bytes = file.metadata().map_err(io)?.len();
    if size_bytes % 16 != 0 {
        return Err(LoadError::TruncatedRecord { path: path.into(), size_bytes, offset: size_bytes / 16 * 16 });
    }
    let n = (size_bytes / 16) as usize;
    let start = out.len();
    out.resize(start + n, Point::default());
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out[start..]);
    file.read_exact(bytes).map_err(io)?;
    Ok(())
}

/// Writes points as raw 16-byte records.
pub fn write_raw(path: &Path, points: &[Point]) -> Result<(), LoadError> {
    std::fs::write(path, bytemuck::cast_slice::<Point, u8>(points)).map_err(|source| LoadError::Io { path: path.into(), source })
}
