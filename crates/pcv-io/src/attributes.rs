//! Recolouring a cloud: its points' colours for a colour mode, from its attributes, by the one rule
//! [`ColorSpec::color`] (the attributes, modes and ramps themselves are [`pcv_model::attributes`]).
//!
//! How it works: [`recolor`] rewrites the `rgba` of every point for another mode; the first time it
//! replaces the loaded colors it saves them in [`Attributes::loaded_rgba`], so switching back to `rgb`
//! restores them exactly. [`auto_color`] picks intensity or elevation for files whose colours show
//! nothing, and [`apply_up`] turns the elevation colours to the viewer's up axis.
pub use pcv_model::attributes::*;
pub use pcv_model::fields::{Column, Field, FieldSet};
pub use pcv_model::ramp::{Ramp, Tone};

use super::PointCloud;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;

/// A copy of `cloud` colored for `mode` (for callers that hold the cloud shared, like the viewer: the
/// points are copied once, then recolored).
pub fn recolored(cloud: &PointCloud, mode: ColorMode) -> Result<PointCloud, ColorError> {
    let mut c = cloud.clone();
    recolor(&mut c, mode)?;
    Ok(c)
}

/// The modes `cloud` can show (for the overlay's switch).
pub fn available_modes(cloud: &PointCloud) -> Vec<ColorMode> {
    // A streamed (device-only) cloud: what its first stream saw the files hold.
    if let Some(s) = cloud.files().and_then(|f| f.streamed.lock().ok()?.clone()) {
        return ColorMode::offered(s.any_intensity, s.any_classification, s.fields);
    }
    match &cloud.attributes {
        Some(a) => a.available_modes(),
        None => vec![ColorMode::Rgb, ColorMode::Elevation],
    }
}

/// The mode `cloud`'s points show now.
pub fn current_mode(cloud: &PointCloud) -> ColorMode {
    cloud.attributes.as_ref().map(|a| a.mode).unwrap_or_default()
}

/// How a field mode's ramp runs: the ramp (else the field's own, [`Field::default_ramp`]), the range
/// (else the 2nd..98th percentile of its values, [`Column::default_range`]), gamma, brightness and
/// contrast ([`Tone`]), and how much of the file's own colour is mixed in (`blend_rgb`, 0..=1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FieldLook {
    pub ramp: Option<Ramp>,
    pub range: Option<(f64, f64)>,
    pub tone: Tone,
    pub blend_rgb: f32,
}

impl FieldLook {
    /// The spec `column` is shown with.
    pub fn spec(&self, column: &Column) -> ColorSpec {
        let (lo, hi) = self.range.unwrap_or_else(|| column.default_range());
        ColorSpec::Field {
            field: column.field,
            ramp: self.ramp.unwrap_or(column.field.default_ramp()),
            lo,
            hi,
            tone: self.tone,
            blend_rgb: self.blend_rgb.clamp(0.0, 1.0),
        }
    }
}

/// Recolors every point of `cloud` for `mode`. A cloud without attributes (the built-in scene, raw
/// records) keeps its colors as its `rgb`. Leaves the cloud unchanged and says why when the mode needs
/// an attribute that no file had. The points are copied first if their `Arc` is shared.
pub fn recolor(cloud: &mut PointCloud, mode: ColorMode) -> Result<(), ColorError> {
    recolor_with(cloud, mode, &FieldLook::default())
}

/// [`recolor`], a field mode's ramp and range as `look` says (the other modes ignore it).
pub fn recolor_with(cloud: &mut PointCloud, mode: ColorMode, look: &FieldLook) -> Result<(), ColorError> {
    if !available_modes(cloud).contains(&mode) {
        return Err(ColorError::Missing {
            mode,
            label: cloud.label.clone(),
            available: available_modes(cloud).iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        });
    }
    let field_spec = match (mode.field(), cloud.attributes.as_deref()) {
        (Some(f), Some(a)) => a.column(f).map(|c| look.spec(c)),
        _ => None,
    };
    let same_field_look = cloud.attributes.as_deref().is_some_and(|a| a.field_spec == field_spec);
    if current_mode(cloud) == mode && same_field_look {
        return Ok(());
    }
    let bounds = cloud.bounds;
    let attrs = Arc::make_mut(cloud.attributes.get_or_insert_with(Default::default));
    let points = Arc::make_mut(&mut cloud.points);
    if attrs.mode == ColorMode::Rgb && attrs.loaded_rgba.is_none() {
        attrs.loaded_rgba = Some(points.par_iter().map(|p| p.rgba).collect());
    }
    match mode {
        ColorMode::Rgb => {
            if let Some(saved) = &attrs.loaded_rgba {
                points.par_iter_mut().zip(saved.par_iter()).for_each(|(p, c)| p.rgba = *c);
            }
        }
        ColorMode::Elevation => color_by_elevation(points, &bounds, ..),
        ColorMode::Intensity => {
            if let Some(values) = &attrs.intensity {
                let (lo, hi) = percentile_range(values, 0.01, 0.99);
                let spec = ColorSpec::Intensity { lo, hi };
                points.par_iter_mut().zip(values.par_iter()).for_each(|(p, &v)| p.rgba = spec.color(None, 0.0, v, 0));
            }
        }
        ColorMode::Classification => {
            if let Some(classes) = &attrs.classification {
                let spec = ColorSpec::Classification;
                points
                    .par_iter_mut()
                    .zip(classes.par_iter())
                    .for_each(|(p, &c)| p.rgba = spec.color(None, 0.0, 0.0, c));
            }
        }
        _ => {
            if let (Some(spec), Some(c)) = (field_spec, mode.field().and_then(|f| attrs.column(f))) {
                let base = c.base;
                points
                    .par_iter_mut()
                    .zip(c.values.par_iter())
                    .with_min_len(1 << 14)
                    .for_each(|(p, &v)| p.rgba = spec.value_color(base + v as f64));
                let blend = match spec {
                    ColorSpec::Field { blend_rgb, .. } if blend_rgb > 0.0 && attrs.has_rgb => blend_rgb,
                    _ => 0.0,
                };
                if let Some(saved) = attrs.loaded_rgba.as_ref().filter(|_| blend > 0.0) {
                    points
                        .par_iter_mut()
                        .zip(saved.par_iter())
                        .with_min_len(1 << 14)
                        .for_each(|(p, c)| p.rgba = ColorSpec::blended(p.rgba, *c, blend));
                }
            }
        }
    }
    attrs.field_spec = field_spec;
    attrs.mode = mode;
    Ok(())
}

/// Chooses the color mode for a loaded cloud when the user asked for none: the files' own colors,
/// unless every file with colors has one color for all its points (writers without colors fill the
/// RGB fields with zeros) — then intensity where it varies, else elevation — and says why in
/// [`Attributes::color_note`] (also returned, for stderr). `--color rgb` skips this and shows them.
pub fn auto_color(cloud: &mut PointCloud) -> Option<String> {
    let a = cloud.attributes.as_deref()?;
    let colored: Vec<&SourceSpan> = a.sources.iter().filter(|s| s.has_rgb && s.points.start < s.points.end).collect();
    if colored.is_empty() || colored.iter().any(|s| s.uniform_rgb.is_none()) {
        return None;
    }
    let intensity_varies =
        a.intensity.as_ref().is_some_and(|v| v.first().is_some_and(|f| v.par_iter().any(|x| x != f)));
    let mode = if intensity_varies { ColorMode::Intensity } else { ColorMode::Elevation };
    let what = match colored.as_slice() {
        [one] => {
            let c = one.uniform_rgb.unwrap_or_default();
            format!("{}: every point's color is {},{},{}", one.label, c[0], c[1], c[2])
        }
        many => format!("{} files: each has one color for all its points", many.len()),
    };
    let note = format!("{what}, which shows nothing; coloring by {mode} instead (--color rgb shows the file's colors)");
    recolor(cloud, mode).ok()?;
    if let Some(a) = cloud.attributes.as_mut() {
        Arc::make_mut(a).color_note = Some(note.clone());
    }
    Some(note)
}

/// Makes the elevation colors follow `up` (the viewer's up axis): in elevation mode every point, in
/// rgb mode the points of files without colors (which show the elevation ramp), and the saved loaded
/// colors of those files. Returns whether any color changed.
pub fn apply_up(cloud: &mut PointCloud, up: glam::Vec3) -> bool {
    let Some(attrs) = cloud.attributes.as_ref() else { return false };
    let colorless: Vec<Range<u64>> = attrs.sources.iter().filter(|s| !s.has_rgb).map(|s| s.points.clone()).collect();
    let mode = attrs.mode;
    if mode != ColorMode::Elevation && colorless.is_empty() {
        return false;
    }
    let bounds = cloud.bounds;
    let attrs = Arc::make_mut(cloud.attributes.get_or_insert_with(Default::default));
    let points = Arc::make_mut(&mut cloud.points);
    let n = points.len();
    let range = |r: &Range<u64>| (r.start as usize).min(n)..(r.end as usize).min(n);
    if mode == ColorMode::Elevation {
        color_by_height(points, &bounds, .., up);
    } else if mode == ColorMode::Rgb {
        for r in &colorless {
            color_by_height(points, &bounds, range(r), up);
        }
    }
    if let Some(saved) = attrs.loaded_rgba.as_mut() {
        let spec = ColorSpec::Elevation { z: height_range(&bounds, up) };
        for r in &colorless {
            let r = range(r);
            saved[r.clone()]
                .par_iter_mut()
                .zip(points[r].par_iter())
                .for_each(|(c, p)| *c = spec.color(None, glam::Vec3::from(p.pos).dot(up), 0.0, 0));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Point;
    use glam::DVec3;

    fn cloud_with(intensity: Option<Vec<f32>>, classes: Option<Vec<u8>>) -> PointCloud {
        let points: Vec<Point> = (0..5).map(|i| Point::new([0.0, 0.0, i as f32], [10 * i as u8, 1, 2, 255])).collect();
        let mut c = PointCloud::from_points(points, DVec3::ZERO, "test");
        c.attributes =
            Some(Arc::new(Attributes { intensity, classification: classes, has_rgb: true, ..Default::default() }));
        c
    }

    #[test]
    fn modes_round_trip_back_to_the_loaded_colors() {
        let mut c = cloud_with(Some(vec![0.0, 10.0, 20.0, 30.0, 40.0]), Some(vec![2, 5, 6, 9, 200]));
        let loaded: Vec<_> = c.points.iter().map(|p| p.rgba).collect();
        recolor(&mut c, ColorMode::Elevation).unwrap();
        assert_eq!(c.points[0].rgba, ramp_color(0.0));
        assert_eq!(c.points[4].rgba, ramp_color(1.0));
        recolor(&mut c, ColorMode::Classification).unwrap();
        assert_eq!(c.points[0].rgba, [150, 105, 60, 255]);
        assert_eq!(c.points[4].rgba, class_color(200));
        recolor(&mut c, ColorMode::Intensity).unwrap();
        assert_eq!(c.points[0].rgba, [0, 0, 0, 255]);
        assert_eq!(c.points[4].rgba, [255, 255, 255, 255]);
        recolor(&mut c, ColorMode::Rgb).unwrap();
        assert_eq!(c.points.iter().map(|p| p.rgba).collect::<Vec<_>>(), loaded);
        assert_eq!(current_mode(&c), ColorMode::Rgb);
    }

    #[test]
    fn missing_attributes_are_an_error_that_changes_nothing() {
        let mut c = cloud_with(None, None);
        let before = c.points.clone();
        let e = recolor(&mut c, ColorMode::Intensity).unwrap_err();
        assert!(e.to_string().contains("has no intensity") && e.to_string().contains("rgb, elevation"), "{e}");
        assert_eq!(c.points, before);
        assert_eq!(available_modes(&c), vec![ColorMode::Rgb, ColorMode::Elevation]);
    }

    #[test]
    fn elevation_follows_the_up_axis() {
        let mut c = cloud_with(None, None);
        // Points rise along z; with -z up the lowest point is the highest.
        Arc::make_mut(c.attributes.as_mut().unwrap()).sources = vec![SourceSpan {
            label: "f".into(),
            format: crate::formats::Format::Ply,
            points: 0..5,
            has_rgb: false,
            has_intensity: false,
            has_classification: false,
            uniform_rgb: None,
            crs: None,
        }];
        recolor(&mut c, ColorMode::Elevation).unwrap();
        assert_eq!(c.points[0].rgba, ramp_color(0.0));
        assert!(apply_up(&mut c, glam::Vec3::NEG_Z));
        assert_eq!(c.points[0].rgba, ramp_color(1.0));
        assert_eq!(c.points[4].rgba, ramp_color(0.0));
        // Back in rgb, the colorless file's saved colors follow the new up too.
        recolor(&mut c, ColorMode::Rgb).unwrap();
        assert_eq!(c.points[0].rgba, ramp_color(1.0));
        // Along y, which does not vary here: the middle of the ramp.
        assert!(apply_up(&mut c, glam::Vec3::Y));
        assert_eq!(c.points[3].rgba, ramp_color(0.5));
        assert!(!apply_up(&mut cloud_with(None, None), glam::Vec3::Y));
    }
}
