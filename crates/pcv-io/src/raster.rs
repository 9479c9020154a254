//! Rasters of a cloud seen from above: a surface model (DSM: the highest point of each cell) and an
//! orthophoto (the colour of that highest point), at a chosen cell size in the files' units.
//!
//! How it works: the files are decoded on all cores by the same streaming reader the loaders use
//! ([`crate::stream::stream_with`], exact f64 coordinates kept), one file after another, and each
//! point goes to the cell under it: column `(x − west) / cell`, row `(north − y) / cell` (row 0 is the
//! north edge, as images and GeoTIFF have it). A cell keeps the highest point's height and colour, so
//! the two rasters agree. The extent is the files' bounds (the LAS header's; other formats are read
//! once more for exact bounds first), snapped outward to whole cells. Heights are along the files' z
//! (lidar's up); `classes` keeps only those classification codes (`2`: a terrain model from ground
//! points). Memory is 7 bytes a cell whatever the number of points; a raster above
//! [`MAX_CELLS`] is refused with the size it would have. [`crate::geotiff`] writes the result.
use crate::formats::DBounds;
use crate::load::{self, FileBytes};
use crate::stream::{self, Staging};
use std::path::{Path, PathBuf};

/// The most cells a raster may have (2 GiB of heights).
pub const MAX_CELLS: u64 = 1 << 29;

/// What a raster holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RasterKind {
    /// The highest point's colour (RGB, 8 bits).
    Rgb,
    /// The highest point's height (32-bit float; empty cells no-data).
    Dsm,
}

impl RasterKind {
    pub fn parse(s: &str) -> Result<RasterKind, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "rgb" | "ortho" | "orthophoto" => Ok(RasterKind::Rgb),
            "dsm" | "height" | "heights" => Ok(RasterKind::Dsm),
            other => Err(format!("unknown raster '{other}' (rgb or dsm)")),
        }
    }
}

/// The heights and colours of the cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Raster {
    pub width: u32,
    pub height: u32,
    /// The west edge and the north edge, in the files' coordinates.
    pub west: f64,
    pub north: f64,
    /// Cell size, in the files' horizontal unit.
    pub cell: f64,
    /// Highest z of each cell, row-major from the north-west corner; NaN where no point fell.
    pub z: Vec<f32>,
    /// The highest point's colour in each cell (black where none).
    pub rgb: Vec<[u8; 3]>,
    /// Points that went into a cell (after the class filter).
    pub points: u64,
}

impl Raster {
    /// An empty raster covering `west..east` × `south..north` (file coordinates) at `cell`, snapped
    /// outward to whole cells.
    pub fn covering(west: f64, south: f64, east: f64, north: f64, cell: f64) -> Result<Raster, RasterError> {
        if !(cell.is_finite() && cell > 0.0) {
            return Err(RasterError::Cell(cell));
        }
        if !(west.is_finite() && south.is_finite() && east >= west && north >= south) {
            return Err(RasterError::Empty);
        }
        let w0 = (west / cell).floor() * cell;
        let n0 = (north / cell).floor() * cell + cell;
        let width = (((east - w0) / cell).floor() as u64 + 1).max(1);
        let height = (((n0 - south) / cell).floor() as u64 + 1).max(1);
        let cells = width.saturating_mul(height);
        if cells > MAX_CELLS {
            return Err(RasterError::TooLarge { width, height, cells, max: MAX_CELLS });
        }
        Ok(Raster {
            width: width as u32,
            height: height as u32,
            west: w0,
            north: n0,
            cell,
            z: vec![f32::NAN; cells as usize],
            rgb: vec![[0; 3]; cells as usize],
            points: 0,
        })
    }

    /// Adds a point (file coordinates): its cell keeps it if it is the highest so far. Whether it fell
    /// inside.
    pub fn add(&mut self, x: f64, y: f64, z: f64, rgb: [u8; 3]) -> bool {
        let Some((c, row)) = self.cell_at(x, y) else { return false };
        let k = row as usize * self.width as usize + c as usize;
        let z = z as f32;
        if self.z[k].is_nan() || z > self.z[k] {
            self.z[k] = z;
            self.rgb[k] = rgb;
        }
        self.points += 1;
        true
    }

    /// Cells with at least one point.
    pub fn filled(&self) -> u64 {
        self.z.iter().filter(|z| !z.is_nan()).count() as u64
    }

    /// The cell holding file position (x, y), if inside.
    pub fn cell_at(&self, x: f64, y: f64) -> Option<(u32, u32)> {
        let c = ((x - self.west) / self.cell).floor();
        let r = ((self.north - y) / self.cell).floor();
        (c >= 0.0 && r >= 0.0 && c < self.width as f64 && r < self.height as f64).then_some((c as u32, r as u32))
    }
}

/// Why a raster could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RasterError {
    #[error(transparent)]
    Load(#[from] load::LoadError),
    #[error("{}: {source}", path.display())]
    Decode { path: PathBuf, source: crate::formats::FormatError },
    #[error("--cell must be a positive length, got {0}")]
    Cell(f64),
    #[error("no points to rasterize (the files are empty, or the class filter kept none)")]
    Empty,
    #[error("the raster would be {width} × {height} cells ({cells} in all, more than {max}): choose a larger --cell")]
    TooLarge { width: u64, height: u64, cells: u64, max: u64 },
}

/// Rasterizes `paths` at `cell` (the files' horizontal unit), keeping only `classes` when given.
pub fn rasterize(paths: &[PathBuf], cell: f64, classes: Option<&[u8]>, progress: bool) -> Result<Raster, RasterError> {
    if !(cell.is_finite() && cell > 0.0) {
        return Err(RasterError::Cell(cell));
    }
    let files: Vec<(PathBuf, FileBytes, crate::formats::Format)> = paths
        .iter()
        .map(|p| {
            let bytes = FileBytes::open(p)?;
            let format = load::detect(p, bytes.bytes())?;
            Ok((p.clone(), bytes, format))
        })
        .collect::<Result<_, load::LoadError>>()?;
    // The extent: the headers' bounds where they are exact (LAS/LAZ), else a first pass.
    let mut b = DBounds::default();
    for &(ref path, ref bytes, format) in &files {
        let exact = matches!(format, crate::formats::Format::Las | crate::formats::Format::Laz);
        match load::estimate(bytes.bytes(), format, load::is_pts(path)).filter(|_| exact) {
            Some(h) => b = DBounds::union(b, h),
            None => {
                let mut sink = |_: &Staging| Ok::<(), ()>(());
                let stats = run(path, bytes, format, false, &mut sink)?;
                b = DBounds::union(b, stats.bounds);
            }
        }
    }
    if b.is_empty() {
        return Err(RasterError::Empty);
    }
    let mut r = Raster::covering(b.min[0], b.min[1], b.max[0], b.max[1], cell)?;
    for &(ref path, ref bytes, format) in &files {
        let mut sink = |st: &Staging| {
            for (i, p) in st.xyz64.iter().enumerate() {
                if let Some(keep) = classes {
                    if st.classification.get(i).is_none_or(|c| !keep.contains(c)) {
                        continue;
                    }
                }
                let rgba = st.points[i].rgba;
                r.add(p[0], p[1], p[2], [rgba[0], rgba[1], rgba[2]]);
            }
            Ok::<(), ()>(())
        };
        if progress {
            eprintln!("pcv: rasterizing {}", path.display());
        }
        run(path, bytes, format, true, &mut sink)?;
    }
    if r.points == 0 {
        return Err(RasterError::Empty);
    }
    Ok(r)
}

/// Streams one file's points into `sink` (exact coordinates when `f64`).
fn run(
    path: &Path,
    bytes: &FileBytes,
    format: crate::formats::Format,
    f64: bool,
    sink: &mut dyn FnMut(&Staging) -> Result<(), ()>,
) -> Result<stream::StreamStats, RasterError> {
    let decode = |source| RasterError::Decode { path: path.into(), source };
    let src = load::open_source(bytes.bytes(), format, load::is_pts(path)).map_err(decode)?;
    let progress = crate::formats::Progress::hidden();
    match stream::stream_with(src.as_ref(), &[0.0; 3], &progress, f64, sink) {
        Ok(stats) => Ok(stats),
        Err(stream::StreamError::Decode(e)) => Err(decode(e)),
        Err(stream::StreamError::Sink(())) => unreachable!("the raster's sink never fails"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_cells_are_found() {
        assert_eq!(RasterKind::parse("DSM"), Ok(RasterKind::Dsm));
        assert_eq!(RasterKind::parse("ortho"), Ok(RasterKind::Rgb));
        assert!(RasterKind::parse("dtm").is_err());
        let r = Raster {
            width: 4,
            height: 2,
            west: 100.0,
            north: 50.0,
            cell: 0.5,
            z: vec![f32::NAN; 8],
            rgb: vec![[0; 3]; 8],
            points: 0,
        };
        assert_eq!(r.cell_at(100.0, 50.0), Some((0, 0)), "the north edge is the first row's");
        assert_eq!(r.cell_at(100.0, 50.01), None);
        assert_eq!(r.cell_at(101.99, 49.2), Some((3, 1)));
        assert_eq!(r.cell_at(102.0, 49.2), None, "the east edge is outside");
        assert_eq!(r.cell_at(100.0, 49.0), None, "the south edge is outside");
        let mut c = Raster::covering(10.2, 20.1, 13.9, 21.0, 1.0).unwrap();
        assert_eq!((c.width, c.height, c.west, c.north), (4, 2, 10.0, 22.0));
        assert!(
            c.add(13.9, 20.1, 5.0, [1, 2, 3]) && c.add(13.9, 20.1, 7.0, [4, 5, 6]) && !c.add(9.0, 21.0, 1.0, [0; 3])
        );
        assert_eq!((c.z[7], c.rgb[7], c.points, c.filled()), (7.0, [4, 5, 6], 2, 1));
        assert_eq!(r.filled(), 0);
    }
}
