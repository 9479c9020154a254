//! GeoTIFF files of a [`Raster`]: a surface model (32-bit float heights) or an orthophoto (RGB).
//!
//! How it works: the `tiff` crate writes the image (strips of 64 rows, uncompressed, BigTIFF past
//! 3.5 GiB) and the GeoTIFF tags that place it: ModelPixelScale (the cell size), ModelTiepoint (the
//! north-west corner of the first pixel, raster type PixelIsArea) and the GeoKeyDirectory naming the
//! coordinate system by its EPSG code — projected (ProjectedCSTypeGeoKey), geographic
//! (GeographicTypeGeoKey) and, for a compound CRS, the vertical one (VerticalCSTypeGeoKey) — with
//! the CRS name as the citation. A system without an EPSG code is named by its citation only (readers
//! then know the name, not the definition). Empty cells are no-data: NaN heights with the
//! `GDAL_NODATA` tag "nan"; black in the orthophoto, with "0".
use crate::crs_model::{Crs, CrsKind};
use crate::raster::{Raster, RasterKind};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use tiff::encoder::{colortype, TiffEncoder, TiffKind};
use tiff::tags::Tag;

/// Rows a strip.
const STRIP_ROWS: u32 = 64;

/// Why a GeoTIFF could not be written.
#[derive(Debug, thiserror::Error)]
pub enum GeoTiffError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Tiff { path: PathBuf, source: tiff::TiffError },
}

/// GeoKey ids and values (GeoTIFF 1.1).
mod key {
    pub const MODEL_TYPE: u16 = 1024;
    pub const RASTER_TYPE: u16 = 1025;
    pub const CITATION: u16 = 1026;
    pub const GEOGRAPHIC_TYPE: u16 = 2048;
    pub const PROJECTED_TYPE: u16 = 3072;
    pub const VERTICAL_TYPE: u16 = 4096;
    pub const MODEL_PROJECTED: u16 = 1;
    pub const MODEL_GEOGRAPHIC: u16 = 2;
    pub const MODEL_GEOCENTRIC: u16 = 3;
    pub const PIXEL_IS_AREA: u16 = 1;
    /// GeoTIFF's tag for ASCII key values.
    pub const ASCII_PARAMS_TAG: u16 = 34737;
}

/// The GeoKeyDirectory's shorts and the ASCII parameters (the citation) for `crs`.
pub fn geo_keys(crs: Option<&Crs>) -> (Vec<u16>, String) {
    let mut keys: Vec<[u16; 4]> = vec![[key::RASTER_TYPE, 0, 1, key::PIXEL_IS_AREA]];
    let mut ascii = String::new();
    if let Some(c) = crs {
        let model = match c.kind {
            CrsKind::Geographic => key::MODEL_GEOGRAPHIC,
            CrsKind::Geocentric => key::MODEL_GEOCENTRIC,
            _ => key::MODEL_PROJECTED,
        };
        keys.push([key::MODEL_TYPE, 0, 1, model]);
        // The citation: "name|" in the ASCII parameters (GeoTIFF ends each value with a '|').
        let name: String = c.name.chars().filter(|ch| ch.is_ascii() && *ch != '|').collect();
        keys.push([key::CITATION, key::ASCII_PARAMS_TAG, name.len() as u16 + 1, 0]);
        ascii = format!("{name}|");
        if let Some(code) = c.epsg.filter(|&e| e <= u16::MAX as u32) {
            let k = if model == key::MODEL_GEOGRAPHIC { key::GEOGRAPHIC_TYPE } else { key::PROJECTED_TYPE };
            keys.push([k, 0, 1, code as u16]);
        }
        if let Some(v) = c.vertical_epsg.filter(|&e| e <= u16::MAX as u32) {
            keys.push([key::VERTICAL_TYPE, 0, 1, v as u16]);
        }
    }
    keys.sort_by_key(|k| k[0]);
    let mut dir = vec![1, 1, 0, keys.len() as u16];
    dir.extend(keys.iter().flatten());
    (dir, ascii)
}

/// Writes `raster` as `kind` to `path`, placed in `crs`.
pub fn write(path: &Path, raster: &Raster, kind: RasterKind, crs: Option<&Crs>) -> Result<(), GeoTiffError> {
    let file = std::fs::File::create(path).map_err(|source| GeoTiffError::Io { path: path.into(), source })?;
    let mut out = std::io::BufWriter::new(file);
    let bytes_per_cell = match kind {
        RasterKind::Dsm => 4,
        RasterKind::Rgb => 3,
    };
    let big = raster.width as u64 * raster.height as u64 * bytes_per_cell > 3_500_000_000;
    let tiff_err = |source| GeoTiffError::Tiff { path: path.into(), source };
    if big {
        let enc = TiffEncoder::new_big(&mut out).map_err(tiff_err)?;
        write_image(enc, raster, kind, crs).map_err(tiff_err)?;
    } else {
        let enc = TiffEncoder::new(&mut out).map_err(tiff_err)?;
        write_image(enc, raster, kind, crs).map_err(tiff_err)?;
    }
    out.flush().map_err(|source| GeoTiffError::Io { path: path.into(), source })
}

fn write_image<W: Write + Seek, K: TiffKind>(
    mut enc: TiffEncoder<W, K>,
    r: &Raster,
    kind: RasterKind,
    crs: Option<&Crs>,
) -> tiff::TiffResult<()> {
    let (keys, ascii) = geo_keys(crs);
    let scale = [r.cell, r.cell, 0.0];
    let tiepoint = [0.0, 0.0, 0.0, r.west, r.north, 0.0];
    let w = r.width as usize;
    macro_rules! image {
        ($color:ty, $rows:expr, $nodata:expr) => {{
            let mut img = enc.new_image::<$color>(r.width, r.height)?;
            img.rows_per_strip(STRIP_ROWS)?;
            let e = img.encoder();
            e.write_tag(Tag::ModelPixelScaleTag, &scale[..])?;
            e.write_tag(Tag::ModelTiepointTag, &tiepoint[..])?;
            e.write_tag(Tag::GeoKeyDirectoryTag, &keys[..])?;
            if !ascii.is_empty() {
                e.write_tag(Tag::Unknown(key::ASCII_PARAMS_TAG), ascii.as_str())?;
            }
            e.write_tag(Tag::GdalNodata, $nodata)?;
            let mut row0 = 0usize;
            while img.next_strip_sample_count() > 0 {
                let rows = (STRIP_ROWS as usize).min(r.height as usize - row0);
                let strip = $rows(row0 * w..(row0 + rows) * w);
                img.write_strip(&strip)?;
                row0 += rows;
            }
            img.finish()
        }};
    }
    match kind {
        RasterKind::Dsm => image!(colortype::Gray32Float, |cells: std::ops::Range<usize>| r.z[cells].to_vec(), "nan"),
        RasterKind::Rgb => image!(
            colortype::RGB8,
            |cells: std::ops::Range<usize>| r.rgb[cells].iter().flatten().copied().collect::<Vec<u8>>(),
            "0"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crs_model::LengthUnit;

    #[test]
    fn geo_keys_name_the_system() {
        let crs = Crs {
            name: "NAD83 / New Mexico Central (ftUS)".into(),
            epsg: Some(2258),
            kind: CrsKind::Projected,
            horizontal_unit: LengthUnit::US_SURVEY_FOOT,
            vertical_name: Some("NAVD88 height (ftUS)".into()),
            vertical_epsg: Some(6360),
            vertical_unit: LengthUnit::US_SURVEY_FOOT,
            read_from: "test".into(),
            definition: "EPSG:2258+6360".into(),
        };
        let (dir, ascii) = geo_keys(Some(&crs));
        assert_eq!(&dir[..4], &[1, 1, 0, 5]);
        let keys: Vec<&[u16]> = dir[4..].chunks(4).collect();
        assert_eq!(keys[0], &[1024, 0, 1, 1]);
        assert_eq!(keys[1], &[1025, 0, 1, 1]);
        assert_eq!(keys[2], &[1026, 34737, 34, 0]);
        assert_eq!(keys[3], &[3072, 0, 1, 2258]);
        assert_eq!(keys[4], &[4096, 0, 1, 6360]);
        assert_eq!(ascii, "NAD83 / New Mexico Central (ftUS)|");
        // No system: only the raster type.
        assert_eq!(geo_keys(None).0, vec![1, 1, 0, 1, 1025, 0, 1, 1]);
    }
}
