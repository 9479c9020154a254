//! Per-point attributes read from files, and the color modes that turn them into the points' colors.
//!
//! How it works: a loaded cloud's [`Point`]s carry the color that is drawn (`rgba`). What the files
//! held beyond position and color lives in [`Attributes`], index-aligned with the points: intensity (as
//! f32, so 8- and 16-bit integer and float intensities are all exact) and the ASPRS classification code.
//! Elevation needs no storage: it is the points' z. Right after loading, every point shows its file's
//! RGB, or an elevation ramp for files without color ([`ColorMode::Rgb`]). [`recolor`] rewrites the
//! `rgba` of every point for another mode (in `pcv_io`, on a cloud); the first time it replaces the loaded colors it saves them in
//! `Attributes`, so switching back to `rgb` restores them exactly. Ramps: elevation runs through a
//! blue-green-yellow-red "terrain" ramp over the cloud's z range; intensity is a gray ramp over the
//! 1st..99th percentile of the intensities (lidar intensities have long tails); classification uses the
//! usual ASPRS palette (ground brown, vegetation greens, buildings orange-red, water blue, ...) and a
//! hashed color for codes without a standard meaning. [`ColorSpec::color`] is the one rule that turns a
//! point's attributes into its colour, for every path that colours points.
use crate::fields::{Column, Field, FieldSet};
use crate::ramp::Ramp;
use crate::{Bounds, Point};
use rayon::prelude::*;
use std::ops::Range;

/// How points are colored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum ColorMode {
    /// The files' own colors; an elevation ramp for points of files without color.
    #[default]
    Rgb,
    /// A gray ramp over the intensity (1st..99th percentile).
    Intensity,
    /// A terrain ramp over z.
    Elevation,
    /// The ASPRS classification palette.
    Classification,
    /// Return number (1 = first), categorical.
    #[value(name = "return_number")]
    ReturnNumber,
    /// Number of returns of the pulse, categorical.
    #[value(name = "number_of_returns")]
    NumberOfReturns,
    /// Scan angle in degrees, diverging ramp.
    #[value(name = "scan_angle")]
    ScanAngle,
    /// User data byte.
    #[value(name = "user_data")]
    UserData,
    /// Point source ID (flight line), categorical.
    #[value(name = "point_source_id")]
    PointSourceId,
    /// GPS time.
    #[value(name = "gps_time")]
    GpsTime,
    /// Near infrared, gray ramp.
    Nir,
    /// A file's own field (LAS extra bytes, a PLY/PCD property), by its name ([`ColorMode::parse`]).
    #[value(skip)]
    Extra(Field),
}

impl serde::Serialize for ColorMode {
    /// As its name (`"gps_time"`, a file's own name for an extra).
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl ColorMode {
    /// The modes of points whose files hold `intensity`, `classification` and `fields` (known from
    /// the files, not from loaded columns: a streamed cloud's, a level-of-detail scene's): their colours
    /// and elevation always, each attribute they hold, then the files' own fields by name.
    pub fn offered(intensity: bool, classification: bool, fields: FieldSet) -> Vec<ColorMode> {
        let standard = ColorMode::ALL.into_iter().filter(|m| match m {
            ColorMode::Intensity => intensity,
            ColorMode::Classification => classification,
            m => m.field().is_none_or(|f| fields.contains(f)),
        });
        let extras = fields.iter().filter(|f| matches!(f, Field::Extra(_))).map(ColorMode::Extra);
        standard.chain(extras).collect()
    }

    pub const ALL: [ColorMode; 11] = [
        ColorMode::Rgb,
        ColorMode::Intensity,
        ColorMode::Elevation,
        ColorMode::Classification,
        ColorMode::ReturnNumber,
        ColorMode::NumberOfReturns,
        ColorMode::ScanAngle,
        ColorMode::UserData,
        ColorMode::PointSourceId,
        ColorMode::GpsTime,
        ColorMode::Nir,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ColorMode::Rgb => "rgb",
            ColorMode::Intensity => "intensity",
            ColorMode::Elevation => "elevation",
            ColorMode::Classification => "classification",
            m => m.field().map_or("rgb", Field::name),
        }
    }

    /// The mode called `name` on the command line: a standard one (any case), else a file's own field
    /// by that name ([`Field::parse`]; whether a file has it is known once it is read).
    pub fn parse(name: &str) -> Result<ColorMode, String> {
        use clap::ValueEnum;
        ColorMode::from_str(name, true).or_else(|_| match Field::parse(name) {
            Some(f) => Ok(ColorMode::of_field(f)),
            None => Err(format!("'{name}' is not a colour mode or a field name")),
        })
    }

    /// The field a mode shows (the modes past the first four).
    pub fn field(self) -> Option<Field> {
        Some(match self {
            ColorMode::Extra(f) => f,
            ColorMode::ReturnNumber => Field::ReturnNumber,
            ColorMode::NumberOfReturns => Field::NumberOfReturns,
            ColorMode::ScanAngle => Field::ScanAngle,
            ColorMode::UserData => Field::UserData,
            ColorMode::PointSourceId => Field::PointSourceId,
            ColorMode::GpsTime => Field::GpsTime,
            ColorMode::Nir => Field::Nir,
            _ => return None,
        })
    }

    /// The mode that shows `f`.
    pub fn of_field(f: Field) -> ColorMode {
        match f {
            Field::Extra(_) => ColorMode::Extra(f),
            f => ColorMode::ALL.into_iter().find(|m| m.field() == Some(f)).unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for ColorMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which attributes one source file had, and which points came from it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SourceSpan {
    /// The file, as given.
    pub label: String,
    /// Its format (the viewer's up-axis rule and picking read it).
    pub format: crate::Format,
    /// Its points' indices in the cloud.
    pub points: Range<u64>,
    pub has_rgb: bool,
    pub has_intensity: bool,
    pub has_classification: bool,
    /// For a file with colors: the one color all its points have, when they all have the same.
    pub uniform_rgb: Option<[u8; 3]>,
    /// Its coordinate reference system, when it names one (or `--crs` did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs: Option<crate::crs::Crs>,
}

/// What the files held besides positions and colors, one entry per point (index-aligned with
/// `PointCloud::points`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes {
    /// Intensity as read (integers exactly; 0 for points of files without intensity).
    pub intensity: Option<Vec<f32>>,
    /// ASPRS classification code (0 "never classified" for points of files without one).
    pub classification: Option<Vec<u8>>,
    /// The other fields loaded ([`Field`]: GPS time, returns, ..., a file's own fields), one column
    /// each, in [`Field::known`]'s order.
    pub columns: Vec<Column>,
    /// The ramp and range a field's colours show now (set with a field mode).
    pub field_spec: Option<ColorSpec>,
    /// Whether any file had RGB colors.
    pub has_rgb: bool,
    /// The source files, in order.
    pub sources: Vec<SourceSpan>,
    /// The mode the points' `rgba` show now.
    pub mode: ColorMode,
    /// The colors the points were loaded with (file RGB, elevation ramp where a file had none), kept
    /// once another mode replaced them.
    pub loaded_rgba: Option<Vec<[u8; 4]>>,
    /// Why the colors shown are not the files' own (set by [`auto_color`]); for the window and stderr.
    pub color_note: Option<String>,
}

impl Attributes {
    /// The modes this cloud can show: `rgb` and `elevation` always, the others when some file had them.
    pub fn available_modes(&self) -> Vec<ColorMode> {
        ColorMode::ALL
            .into_iter()
            .filter(|m| match m {
                ColorMode::Intensity => self.intensity.is_some(),
                ColorMode::Classification => self.classification.is_some(),
                m => m.field().is_none_or(|f| self.column(f).is_some_and(Column::any)),
            })
            .chain(
                self.columns
                    .iter()
                    .filter(|c| matches!(c.field, Field::Extra(_)) && c.any())
                    .map(|c| ColorMode::Extra(c.field)),
            )
            .collect()
    }

    /// The column of field `f`, when it was loaded.
    pub fn column(&self, f: Field) -> Option<&Column> {
        self.columns.iter().find(|c| c.field == f)
    }
}

/// Why a color mode cannot be shown.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ColorError {
    #[error("color mode '{mode}': {label} has no {mode} (available: {available})")]
    Missing { mode: ColorMode, label: String, available: String },
}

/// How points are coloured, with the ranges its ramps run over: the one rule every path that colours
/// points follows ([`ColorSpec::color`]) — host clouds ([`recolor`]), files streamed to a device
/// (`device`), level-of-detail nodes and files without colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColorSpec {
    /// The files' colours; points of files without colours get the elevation ramp over `z` (min, max).
    Rgb { z: (f32, f32) },
    /// A gray ramp over `lo..=hi`.
    Intensity { lo: f32, hi: f32 },
    /// The terrain ramp over heights `z` (min, max).
    Elevation { z: (f32, f32) },
    /// The ASPRS classification palette.
    Classification,
    /// Field `field`'s values through `ramp` over `lo..=hi` (categorical ramps ignore the range), with
    /// `tone` on the ramp's position and `blend_rgb` of the file's own colour mixed in (0: none).
    Field { field: Field, ramp: Ramp, lo: f64, hi: f64, tone: crate::ramp::Tone, blend_rgb: f32 },
}

impl ColorSpec {
    pub fn mode(&self) -> ColorMode {
        match self {
            ColorSpec::Rgb { .. } => ColorMode::Rgb,
            ColorSpec::Intensity { .. } => ColorMode::Intensity,
            ColorSpec::Elevation { .. } => ColorMode::Elevation,
            ColorSpec::Classification => ColorMode::Classification,
            ColorSpec::Field { field, .. } => ColorMode::of_field(*field),
        }
    }

    /// The colour of a field's value `v` (the field modes' rule; gray for the other modes).
    #[inline]
    pub fn value_color(&self, v: f64) -> [u8; 4] {
        match *self {
            ColorSpec::Field { ramp, lo, hi, tone, .. } => ramp.toned_color(v, lo, hi, &tone),
            _ => [128, 128, 128, 255],
        }
    }

    /// This spec when it is a field's (what `Attributes::field_spec` and the legend keep), else `None`.
    pub fn as_field(self) -> Option<ColorSpec> {
        matches!(self, ColorSpec::Field { .. }).then_some(self)
    }

    /// `ramp` (a field's colour) with `blend` (0..=1) of `file` (the point's own colour) mixed in.
    #[inline]
    pub fn blended(ramp: [u8; 4], file: [u8; 4], blend: f32) -> [u8; 4] {
        let mix = |a: u8, b: u8| (a as f32 * (1.0 - blend) + b as f32 * blend).round() as u8;
        [mix(ramp[0], file[0]), mix(ramp[1], file[1]), mix(ramp[2], file[2]), 255]
    }

    /// Colours `points` from their own attributes, one value a point where the source has them (an
    /// empty slice where it has none): what the decoding workers of streamed clouds and of
    /// level-of-detail nodes do. `own_rgb`: the points hold their file's colours, which `Rgb` keeps and
    /// a field's `blend_rgb` mixes in; without them `Rgb` gives the elevation ramp over z. A missing
    /// value reads as intensity 0, class 0, or a field's NaN (its ramp's no-data colour).
    pub fn color_points(&self, points: &mut [Point], own_rgb: bool, intensity: &[f32], classes: &[u8], field: &[f64]) {
        match *self {
            ColorSpec::Rgb { .. } if own_rgb => {}
            ColorSpec::Field { blend_rgb, .. } => {
                let blend = if own_rgb { blend_rgb } else { 0.0 };
                for (k, p) in points.iter_mut().enumerate() {
                    let c = self.value_color(field.get(k).copied().unwrap_or(f64::NAN));
                    p.rgba = ColorSpec::blended(c, p.rgba, blend);
                }
            }
            _ => {
                for (k, p) in points.iter_mut().enumerate() {
                    let i = intensity.get(k).copied().unwrap_or(0.0);
                    p.rgba = self.color(None, p.pos[2], i, classes.get(k).copied().unwrap_or(0));
                }
            }
        }
    }

    /// The colour of one point: `rgb` is its file's colour (`None` where the file had none), `height`
    /// its height along the up axis (z, or the viewer's up), `intensity` and `class` its attributes.
    #[inline]
    pub fn color(&self, rgb: Option<[u8; 4]>, height: f32, intensity: f32, class: u8) -> [u8; 4] {
        match *self {
            ColorSpec::Rgb { z } => rgb.unwrap_or_else(|| elevation_color(height, z)),
            ColorSpec::Elevation { z } => elevation_color(height, z),
            ColorSpec::Intensity { lo, hi } => {
                let g = (unit(intensity, lo, hi) * 255.0).round() as u8;
                [g, g, g, 255]
            }
            ColorSpec::Classification => class_color(class),
            // Field colours need the field's value: `value_color`.
            ColorSpec::Field { .. } => [128, 128, 128, 255],
        }
    }
}

/// The elevation ramp's colour of `height` over `range` (min, max).
#[inline]
pub fn elevation_color(height: f32, range: (f32, f32)) -> [u8; 4] {
    ramp_color(unit(height, range.0, range.1))
}

/// `v` mapped to 0..=1 over `lo..=hi` (0.5 for an empty range, 0 for NaN).
pub fn unit(v: f32, lo: f32, hi: f32) -> f32 {
    if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else if v.is_nan() {
        0.0
    } else {
        0.5
    }
}

/// The `lo`..`hi` quantiles of `values` (finite ones), from a deterministic sample of at most 1M values.
pub fn percentile_range(values: &[f32], lo: f64, hi: f64) -> (f32, f32) {
    let step = (values.len() / 1_000_000).max(1);
    let mut sample: Vec<f32> = values.iter().step_by(step).copied().filter(|v| v.is_finite()).collect();
    if sample.is_empty() {
        return (0.0, 0.0);
    }
    sample.par_sort_unstable_by(|a, b| a.total_cmp(b));
    let at = |q: f64| sample[((sample.len() - 1) as f64 * q).round() as usize];
    let (a, b) = (at(lo), at(hi));
    if a < b {
        (a, b)
    } else {
        // A narrow distribution: use the full range so distinct values still differ.
        (sample[0], sample[sample.len() - 1])
    }
}

/// The terrain ramp: blue, cyan, green, yellow, red, white at 0, 0.2, ..., 1.
const TERRAIN: [[f32; 3]; 6] = [
    [0.16, 0.25, 0.80],
    [0.10, 0.70, 0.85],
    [0.20, 0.75, 0.25],
    [0.95, 0.85, 0.20],
    [0.85, 0.25, 0.15],
    [0.97, 0.97, 0.97],
];

/// The elevation ramp's color at `t` in 0..=1.
pub fn ramp_color(t: f32) -> [u8; 4] {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (TERRAIN.len() - 1) as f32;
    let i = (x as usize).min(TERRAIN.len() - 2);
    let f = x - i as f32;
    let c = |k: usize| ((TERRAIN[i][k] * (1.0 - f) + TERRAIN[i + 1][k] * f) * 255.0).round() as u8;
    [c(0), c(1), c(2), 255]
}

/// Colors `points[range]` by their z over the z range of `bounds`.
pub fn color_by_elevation(
    points: &mut [Point],
    bounds: &Bounds,
    range: impl std::slice::SliceIndex<[Point], Output = [Point]>,
) {
    color_by_height(points, bounds, range, glam::Vec3::Z);
}

/// Colors `points[range]` by their height along `up` (a unit axis, e.g. −y) over the range of `bounds`
/// along it: the elevation ramp of a cloud whose up axis is not z.
pub fn color_by_height(
    points: &mut [Point],
    bounds: &Bounds,
    range: impl std::slice::SliceIndex<[Point], Output = [Point]>,
    up: glam::Vec3,
) {
    let spec = ColorSpec::Elevation { z: height_range(bounds, up) };
    points[range]
        .par_iter_mut()
        .with_min_len(1 << 14)
        .for_each(|p| p.rgba = spec.color(None, glam::Vec3::from(p.pos).dot(up), 0.0, 0));
}

/// The lowest and highest height along `up` within `bounds`.
pub fn height_range(bounds: &Bounds, up: glam::Vec3) -> (f32, f32) {
    let (a, b) = (bounds.min.dot(up), bounds.max.dot(up));
    (a.min(b), a.max(b))
}

/// The ASPRS standard classes' colors (LAS 1.4 R15, table 17), and a hashed color for other codes.
pub fn class_color(code: u8) -> [u8; 4] {
    let rgb: [u8; 3] = match code {
        0 => [160, 160, 160],  // never classified
        1 => [200, 200, 200],  // unassigned
        2 => [150, 105, 60],   // ground
        3 => [160, 210, 110],  // low vegetation
        4 => [70, 170, 60],    // medium vegetation
        5 => [20, 110, 35],    // high vegetation
        6 => [225, 85, 45],    // building
        7 => [255, 0, 255],    // low point (noise)
        8 => [255, 160, 200],  // reserved / model key point
        9 => [40, 110, 230],   // water
        10 => [120, 70, 140],  // rail
        11 => [80, 80, 90],    // road surface
        12 => [230, 230, 120], // reserved / overlap
        13 => [250, 210, 0],   // wire guard
        14 => [255, 240, 90],  // wire conductor
        15 => [200, 60, 200],  // transmission tower
        16 => [240, 180, 40],  // wire-structure connector
        17 => [190, 190, 220], // bridge deck
        18 => [255, 40, 120],  // high noise
        _ => {
            let h = (code as u32).wrapping_mul(0x9e37_79b9) >> 8;
            [(h & 0xff) as u8 | 0x40, ((h >> 8) & 0xff) as u8 | 0x40, ((h >> 16) & 0xff) as u8 | 0x40]
        }
    };
    [rgb[0], rgb[1], rgb[2], 255]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_are_clamped_and_total() {
        assert_eq!(ramp_color(-1.0), ramp_color(0.0));
        assert_eq!(ramp_color(f32::NAN), ramp_color(0.0));
        assert_eq!(ramp_color(2.0), [247, 247, 247, 255]);
        assert_eq!(unit(5.0, 5.0, 5.0), 0.5);
        assert_eq!(percentile_range(&[], 0.01, 0.99), (0.0, 0.0));
        assert_eq!(percentile_range(&[3.0, 3.0], 0.01, 0.99), (3.0, 3.0));
        let v: Vec<f32> = (0..=1000).map(|i| i as f32).collect();
        assert_eq!(percentile_range(&v, 0.01, 0.99), (10.0, 990.0));
    }
}
