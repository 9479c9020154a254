//! Clouds loaded apart, joined into one: points moved into the first cloud's frame, in its coordinate
//! system, attribute columns concatenated.
//!
//! How it works: [`append`] keeps `base` as it is and moves each point of `other` into it. Where both
//! are plain (no local frame) and in the same coordinate system (or either names none), a point moves
//! by the difference of the origins, in f64, and is rounded to f32 once. Where both name a coordinate
//! system and they differ ([`Crs::same_as`]), `other` is reprojected ([`Reprojection`]): each point
//! goes to its file coordinates (through its local frame if it has one), then through proj-core's
//! transform between the two systems' horizontal components (parsed by proj-wkt from the definitions
//! the files carry), heights scaled from the one's vertical unit to the other's (no vertical datum
//! shift: proj-core has no geoid grids here), then into `base`'s frame. Its sources then name `base`'s
//! system and say which one they were read in. A transform proj-core cannot build (an unknown datum
//! shift, a system without a horizontal part) leaves the points as they are and says why
//! ([`Joined::note`]); the caller warns. Attribute columns are concatenated: intensity and classification
//! (0 for points of a cloud without), the other fields (NaN), sources with their point ranges offset.
use crate::attributes::{Attributes, ColorMode, Column, Field};
use crate::{Bounds, CloudSource, Point, PointCloud};
use glam::{DVec3, Vec3};
use pcv_model::crs::Crs;
use proj_core::Transform;
use std::sync::Arc;

/// File coordinates of one system to another's (horizontal transform, heights by unit).
pub struct Reprojection {
    horizontal: Transform,
    /// Heights: metres of the source's vertical unit over the target's.
    z_scale: f64,
    pub from: String,
    pub to: String,
}

impl Reprojection {
    /// The transform from `from` to `to`.
    pub fn new(from: &Crs, to: &Crs) -> Result<Reprojection, String> {
        let parse = |c: &Crs| proj_wkt::parse_crs(&c.definition).map_err(|e| format!("{}: {e}", c.summary()));
        let (a, b) = (parse(from)?, parse(to)?);
        let horizontal = Transform::from_horizontal_components(&a, &b)
            .map_err(|e| format!("no transform from {} to {}: {e}", from.summary(), to.summary()))?;
        Ok(Reprojection {
            horizontal,
            z_scale: from.vertical_unit.metres / to.vertical_unit.metres,
            from: from.summary(),
            to: to.summary(),
        })
    }

    /// A point's file coordinates in the target system (NaN where the transform fails).
    pub fn apply(&self, p: DVec3) -> DVec3 {
        match self.horizontal.convert((p.x, p.y)) {
            Ok((x, y)) => DVec3::new(x, y, p.z * self.z_scale),
            Err(_) => DVec3::NAN,
        }
    }
}

/// A join's result, and what it had to say.
pub struct Joined {
    pub cloud: PointCloud,
    /// Why `other` could not be reprojected, or that it was.
    pub note: Option<String>,
}

/// `base` followed by `other`'s points, moved to `base`'s frame and coordinate system (see the module
/// doc; both in their loaded colours).
pub fn append(base: PointCloud, other: PointCloud) -> Joined {
    let mut note = None;
    let reprojection = match (base.crs(), other.crs()) {
        (Some(a), Some(b)) if !a.same_as(b) => match Reprojection::new(b, a) {
            Ok(r) => {
                note = Some(format!("{} reprojected from {} to {}", other.label, r.from, r.to));
                Some(r)
            }
            Err(e) => {
                note = Some(format!("{} drawn as if in {}: {e}", other.label, a.summary()));
                None
            }
        },
        _ => None,
    };
    let d = other.origin - base.origin;
    // Through the file's coordinates where either is in a local frame (geographic, geocentric) or the
    // systems differ.
    let through_files = base.frame.is_some() || other.frame.is_some() || reprojection.is_some();
    let shift = |p: [f32; 3]| match through_files {
        true => {
            let file = other.to_source(Vec3::from_array(p));
            let file = reprojection.as_ref().map_or(file, |r| r.apply(file));
            base.from_source(file).map_or([f32::NAN; 3], |v| v.to_array())
        }
        false => [(p[0] as f64 + d.x) as f32, (p[1] as f64 + d.y) as f32, (p[2] as f64 + d.z) as f32],
    };
    let n_base = base.points.len();
    let n_other = other.points.len();
    let mut points = Vec::with_capacity(n_base + n_other);
    points.extend_from_slice(&base.points);
    let moved_start = points.len();
    points.extend(other.points.iter().map(|p| Point { pos: shift(p.pos), ..*p }));
    let mut bounds = base.bounds;
    if !other.bounds.is_empty() {
        // Reprojected points bend: their own box, not the moved corners.
        let moved = match through_files {
            true => Bounds::of_points(&points[moved_start..]),
            false => Bounds {
                min: Vec3::from(shift(other.bounds.min.into())),
                max: Vec3::from(shift(other.bounds.max.into())),
            },
        };
        bounds = Bounds::union(bounds, moved);
    }
    let empty = Attributes::default();
    let (a, b) = (base.attributes.as_deref().unwrap_or(&empty), other.attributes.as_deref().unwrap_or(&empty));
    let join_f32 = |x: &Option<Vec<f32>>, y: &Option<Vec<f32>>| -> Option<Vec<f32>> {
        if x.is_none() && y.is_none() {
            return None;
        }
        let mut v = x.clone().unwrap_or_else(|| vec![0.0; n_base]);
        v.extend(y.clone().unwrap_or_else(|| vec![0.0; n_other]));
        Some(v)
    };
    let classification = if a.classification.is_none() && b.classification.is_none() {
        None
    } else {
        let mut v = a.classification.clone().unwrap_or_else(|| vec![0; n_base]);
        v.extend(b.classification.clone().unwrap_or_else(|| vec![0; n_other]));
        Some(v)
    };
    // Other fields: one column each over both (NaN for the points of a cloud without it).
    let columns = Field::known()
        .into_iter()
        .filter(|&f| a.column(f).is_some() || b.column(f).is_some())
        .map(|f| {
            let side = |c: Option<&Column>, n: usize| -> Vec<f64> {
                c.map_or_else(|| vec![f64::NAN; n], |c| (0..n).map(|i| c.get(i)).collect())
            };
            let mut v = side(a.column(f), n_base);
            v.extend(side(b.column(f), n_other));
            Column::from_f64(f, &v)
        })
        .collect();
    let mut sources = a.sources.clone();
    sources.extend(b.sources.iter().map(|s| {
        let mut s = s.clone();
        s.points = s.points.start + n_base as u64..s.points.end + n_base as u64;
        if let (Some(r), Some(target)) = (&reprojection, base.crs()) {
            let mut c = target.clone();
            c.read_from = format!("reprojected from {} ({})", r.from, s.crs.as_ref().map_or("", |c| &c.read_from));
            s.crs = Some(c);
        }
        s
    }));
    let cloud = PointCloud {
        points: Arc::new(points),
        bounds,
        origin: base.origin,
        frame: base.frame.clone(),
        label: format!("{}, {}", base.label, other.label),
        source: CloudSource::Host,
        attributes: Some(Arc::new(Attributes {
            intensity: join_f32(&a.intensity, &b.intensity),
            classification,
            columns,
            field_spec: None,
            has_rgb: a.has_rgb || b.has_rgb,
            sources,
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        })),
    };
    Joined { cloud, note }
}
