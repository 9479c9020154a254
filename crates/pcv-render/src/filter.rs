//! The part of a [`PointFilter`] the culled modes apply themselves ([`gpu_data::FilterUniforms`],
//! `kernels/filter.cuh`): hidden classes, returns, value ranges and clip volumes, moved into the
//! cloud's frame, and the per-point columns they read ([`FilterColumn`], made by [`column`]).
//!
//! How it works: [`uniforms_with`] turns the filter's hidden classes into the kernels' eight words; the
//! returns choice into a set of hidden return codes (each code `r | n << 4` of return number r and
//! number of returns n decided by the host's own rule, [`Returns::passes`]); each value range into
//! bounds relative to its column's base (`pcv_model::fields::Column`: values are stored as f32 offsets
//! from their smallest), rounded inwards to f32 so that `lo ≤ v ≤ hi` on an f32 offset is the host's
//! f64 test `min ≤ base + v ≤ max`; each clip box and plane (file coordinates, f64) into the uploaded
//! points' frame (`p_file = origin + p_local`): a box's centre less the origin, its axes the columns of
//! its rotation, its half extents widened by 2⁻²⁰ of the coordinates' magnitude so that points written
//! on a face stay inside after their rounding to f32 (the host filter's f64 test keeps them too); a
//! plane's offset `n · (origin − q)`. What the kernels do not apply — more than
//! [`gpu_data::FILTER_MAX_BOXES`] boxes, [`gpu_data::FILTER_MAX_PLANES`] planes or
//! [`gpu_data::FILTER_MAX_RANGES`] ranges, a range of an attribute the cloud has no column of, a cloud
//! drawn in a local frame (geographic or geocentric files, where a file-coordinate box is not a box) —
//! is refused with the reason, and the caller filters on the host (`pcv_io::filter::kept`) instead.
//!
//! A backend asks for the columns it lacks ([`FilterColumn`]) when a filter first tests them, in the
//! uploaded points' order: class codes, return codes (a point without returns — NaN — gets the code
//! of return 2 of 0, which every returns choice but "all" drops, as the host's rule drops NaN), and an
//! attribute's f32 offsets (NaN where a point's file has none).
use crate::gpu_data::{self, return_code, FilterBox, FilterPlane, FilterRange, FilterUniforms};
use glam::{DMat3, DVec3};
use pcv_io::filter::{Keep, PointFilter, RangeOf, Returns};
use pcv_io::PointCloud;
use pcv_model::fields::Field;
use std::ops::Range;

/// A per-point column the culled passes' filter reads, asked of the caller in upload order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterColumn {
    /// Classification codes (a byte a point; 0 where a file has none).
    Classes,
    /// Return codes ([`gpu_data::return_code`]; a byte a point).
    Returns,
    /// An attribute's values ([`RangeOf::column_id`]) as f32 offsets from its column's base.
    Values(u32),
}

/// A column's data, in upload order.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnData {
    Codes(Vec<u8>),
    Values(Vec<f32>),
}

impl ColumnData {
    pub fn len(&self) -> usize {
        match self {
            ColumnData::Codes(c) => c.len(),
            ColumnData::Values(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The kernels' filter for `filter` on points whose file coordinates are `origin + p` (`framed`: the
/// cloud is drawn in a local frame), with no attribute columns (a value range is refused), or why the
/// kernels cannot apply it.
pub fn uniforms(filter: &PointFilter, origin: DVec3, framed: bool) -> Result<FilterUniforms, String> {
    uniforms_with(filter, origin, framed, &|_| None)
}

/// The kernels' filter for `filter` on `cloud` (its origin, frame and columns' bases), or why the
/// kernels cannot apply it.
pub fn for_cloud(filter: &PointFilter, cloud: &PointCloud) -> Result<FilterUniforms, String> {
    let attrs = cloud.attributes.as_deref();
    let base_of = |of: RangeOf| match of {
        RangeOf::Intensity => attrs.and_then(|a| a.intensity.as_ref()).map(|_| 0.0),
        RangeOf::Field(f) => attrs.and_then(|a| a.column(f)).map(|c| c.base),
    };
    uniforms_with(filter, cloud.origin, cloud.frame.is_some(), &base_of)
}

/// The smallest f32 at or above `v`, and the largest at or below.
fn f32_at_or_above(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) < v {
        f.next_up()
    } else {
        f
    }
}

fn f32_at_or_below(v: f64) -> f32 {
    let f = v as f32;
    if (f as f64) > v {
        f.next_down()
    } else {
        f
    }
}

/// [`uniforms`] with `base_of` giving the base of the cloud's column of a range's attribute (`None`:
/// the cloud has no such column, and the range is refused).
pub fn uniforms_with(
    filter: &PointFilter,
    origin: DVec3,
    framed: bool,
    base_of: &dyn Fn(RangeOf) -> Option<f64>,
) -> Result<FilterUniforms, String> {
    if filter.boxes.len() > gpu_data::FILTER_MAX_BOXES
        || filter.planes.len() > gpu_data::FILTER_MAX_PLANES
        || filter.ranges.len() > gpu_data::FILTER_MAX_RANGES
    {
        return Err(format!(
            "the GPU applies at most {} clip boxes, {} planes and {} value ranges",
            gpu_data::FILTER_MAX_BOXES,
            gpu_data::FILTER_MAX_PLANES,
            gpu_data::FILTER_MAX_RANGES
        ));
    }
    if framed && filter.clips() {
        return Err("clip volumes of a cloud drawn in a local frame are applied as the points are uploaded".into());
    }
    let mut u = FilterUniforms::default();
    for w in 0..8 {
        u.hidden_classes[w] = (filter.hidden_classes[w / 2] >> (32 * (w % 2))) as u32;
    }
    u.tests_classes = filter.tests_classes() as u32;
    if filter.returns != Returns::All {
        for code in 0..=255u8 {
            let (r, n) = (code & 15, code >> 4);
            debug_assert_eq!(return_code(r, n), code);
            if !filter.returns.passes(r as f64, n as f64) {
                u.hidden_returns[(code >> 5) as usize] |= 1 << (code & 31);
            }
        }
        u.tests_returns = 1;
    }
    for (k, r) in filter.ranges.iter().enumerate() {
        let base = base_of(r.of).ok_or_else(|| format!("the GPU has no {} values to filter by", r.of.name()))?;
        u.ranges[k] = FilterRange {
            lo: f32_at_or_above(r.min - base),
            hi: f32_at_or_below(r.max - base),
            field: r.of.column_id(),
            _pad: 0,
        };
    }
    u.num_ranges = filter.ranges.len() as u32;
    for (i, b) in filter.boxes.iter().enumerate() {
        let m = DMat3::from_quat(b.rotation);
        let c = b.center - origin;
        let slack = (c.abs() + b.half_extent) * (1.0 / (1u64 << 20) as f64);
        let axes = [m.x_axis, m.y_axis, m.z_axis];
        u.boxes[i] = FilterBox {
            center: c.as_vec3().to_array(),
            half: (b.half_extent + slack).as_vec3().to_array(),
            axes: std::array::from_fn(|j| axes[j / 3][j % 3] as f32),
            outside: (b.keep == Keep::Outside) as u32,
        };
    }
    u.num_boxes = filter.boxes.len() as u32;
    u.num_inside = filter.boxes.iter().filter(|b| b.keep == Keep::Inside).count() as u32;
    for (i, p) in filter.planes.iter().enumerate() {
        let n: DVec3 = p.normal;
        u.planes[i] = FilterPlane { normal: n.as_vec3().to_array(), offset: n.dot(origin - p.point) as f32 };
    }
    u.num_planes = filter.planes.len() as u32;
    Ok(u)
}

/// The return code a point without returns gets (NaN): return 2 of 0, which every returns choice but
/// "all" drops, as the host's rule drops NaN.
const NO_RETURNS: u8 = return_code(2, 0);

/// Column `ask` of `cloud`'s points in `runs` (indices into the cloud, concatenated in order); `None`
/// where the kernels cannot read it: return numbers outside 0..15 or not whole, an attribute the cloud
/// has no column of.
pub fn column(cloud: &PointCloud, ask: FilterColumn, runs: &[Range<usize>]) -> Option<ColumnData> {
    let attrs = cloud.attributes.as_deref();
    let total: usize = runs.iter().map(|r| r.len()).sum();
    match ask {
        FilterColumn::Classes => {
            let c = attrs.and_then(|a| a.classification.as_deref()).unwrap_or(&[]);
            let mut out = Vec::with_capacity(total);
            for r in runs {
                out.extend((r.clone()).map(|i| c.get(i).copied().unwrap_or(0)));
            }
            Some(ColumnData::Codes(out))
        }
        FilterColumn::Returns => {
            let get = |f: Field| attrs.and_then(|a| a.column(f));
            let (rn, nr) = (get(Field::ReturnNumber), get(Field::NumberOfReturns));
            let small = |v: f64| (v.is_nan() || ((0.0..=15.0).contains(&v) && v.fract() == 0.0)).then_some(v);
            let mut out = Vec::with_capacity(total);
            for r in runs {
                for i in r.clone() {
                    let rv = small(rn.map_or(f64::NAN, |c| c.get(i)))?;
                    let nv = small(nr.map_or(f64::NAN, |c| c.get(i)))?;
                    out.push(match (rv.is_nan(), nv.is_nan()) {
                        (true, true) => NO_RETURNS,
                        (false, false) => return_code(rv as u8, nv as u8),
                        _ => return None, // one without the other: the host's rule reads them apart
                    });
                }
            }
            Some(ColumnData::Codes(out))
        }
        FilterColumn::Values(id) => {
            let values: &[f32] = match RangeOf::of_column_id(id)? {
                RangeOf::Intensity => attrs.and_then(|a| a.intensity.as_deref())?,
                RangeOf::Field(f) => &attrs.and_then(|a| a.column(f))?.values,
            };
            let mut out = Vec::with_capacity(total);
            for r in runs {
                out.extend((r.clone()).map(|i| values.get(i).copied().unwrap_or(f32::NAN)));
            }
            Some(ColumnData::Values(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::{filter_says, Batch, BatchClasses};
    use crate::twins::filter::{filter_batch, filter_point, Columns};
    use glam::DQuat;
    use pcv_io::filter::{ClipBox, ClipPlane, PointValues};
    use rand::{Rng, SeedableRng};

    /// The host rule for a point at local `p` of class `class`.
    fn host_passes(f: &PointFilter, origin: DVec3, p: [f32; 3], class: u8) -> bool {
        let field = |_| f64::NAN;
        let pos = origin + glam::Vec3::from_array(p).as_dvec3();
        f.passes(&PointValues { class, intensity: f64::NAN, field: &field, pos })
    }

    fn sample_filter() -> PointFilter {
        let mut f = PointFilter::default();
        f.set_class_shown(5, false);
        f.set_class_shown(200, false);
        f.boxes.push(ClipBox::from_min_max(
            DVec3::new(1000.0, 2000.0, 0.0),
            DVec3::new(1050.0, 2040.0, 30.0),
            Keep::Inside,
        ));
        let mut turned =
            ClipBox::from_min_max(DVec3::new(1010.0, 2010.0, 0.0), DVec3::new(1030.0, 2020.0, 30.0), Keep::Outside);
        turned.rotation = DQuat::from_rotation_z(0.5);
        f.boxes.push(turned);
        f.planes.push(ClipPlane { point: DVec3::new(0.0, 0.0, 2.0), normal: DVec3::new(0.0, 0.2, 1.0).normalize() });
        f
    }

    #[test]
    fn the_kernels_filter_keeps_what_the_host_rule_keeps() {
        let origin = DVec3::new(1000.0, 2000.0, 0.0);
        let f = sample_filter();
        let u = uniforms(&f, origin, false).unwrap();
        assert_eq!((u.num_boxes, u.num_inside, u.num_planes, u.tests_classes), (2, 1, 1, 1));
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut differ = 0;
        let mut kept = 0;
        for _ in 0..200_000 {
            let p =
                [rng.random_range(-10.0..60.0f32), rng.random_range(-10.0..50.0f32), rng.random_range(-5.0..40.0f32)];
            let class = [2u8, 5, 6, 200][rng.random_range(0..4)];
            let (a, b) =
                (filter_point(&u, &Columns::of_classes(&[class], &[]), 0, p), host_passes(&f, origin, p, class));
            kept += a as u32;
            differ += (a != b) as u32;
        }
        // Both are exact tests of the same volumes; f32 and f64 may only disagree within rounding of a face.
        assert!(kept > 20_000, "{kept}");
        assert!(differ <= 2, "{differ} of 200000 points decided differently");
    }

    #[test]
    fn points_on_a_face_stay_inside() {
        let origin = DVec3::new(512_000.0, 5_405_000.0, 100.0);
        let mut f = PointFilter::default();
        f.boxes.push(ClipBox::from_min_max(
            DVec3::new(512_100.25, 5_405_050.5, 110.0),
            DVec3::new(512_200.75, 5_405_150.0, 140.0),
            Keep::Inside,
        ));
        let u = uniforms(&f, origin, false).unwrap();
        for x in [512_100.25, 512_200.75] {
            for y in [5_405_050.5, 5_405_150.0] {
                let p = (DVec3::new(x, y, 110.0) - origin).as_vec3().to_array();
                assert!(filter_point(&u, &Columns::default(), 0, p), "{x} {y}");
            }
        }
    }

    #[test]
    fn batch_summaries_never_contradict_their_points() {
        let origin = DVec3::new(1000.0, 2000.0, 0.0);
        let f = sample_filter();
        let u = uniforms(&f, origin, false).unwrap();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut seen = [0u32; 3];
        for _ in 0..3000 {
            // A small box somewhere, often straddling a face.
            let lo =
                [rng.random_range(-10.0..60.0f32), rng.random_range(-10.0..50.0f32), rng.random_range(-5.0..40.0f32)];
            let size = rng.random_range(0.01..8.0f32);
            let classes: Vec<u8> = (0..rng.random_range(1..3)).map(|_| [2u8, 5, 6][rng.random_range(0..3)]).collect();
            let pts: Vec<([f32; 3], u8)> = (0..64)
                .map(|i| {
                    let corner = i < 8;
                    let p = std::array::from_fn(|k| match corner {
                        true => lo[k] + if (i >> k) & 1 == 1 { size } else { 0.0 },
                        false => lo[k] + rng.random_range(0.0..=size),
                    });
                    (p, classes[i % classes.len()])
                })
                .collect();
            let mut b = Batch { min: [f32::MAX; 3], max: [f32::MIN; 3], num_points: 64, ..Default::default() };
            let mut bc = BatchClasses::default();
            for (p, c) in &pts {
                b.min = std::array::from_fn(|k| b.min[k].min(p[k]));
                b.max = std::array::from_fn(|k| b.max[k].max(p[k]));
                bc.bits[(*c >> 5) as usize] |= 1 << (c & 31);
            }
            let says = filter_batch(&u, &Columns::of_classes(&[], &[bc]), 0, &b);
            seen[says as usize] += 1;
            let passing = pts.iter().filter(|(p, c)| filter_point(&u, &Columns::of_classes(&[*c], &[]), 0, *p)).count();
            match says {
                filter_says::NONE => assert_eq!(passing, 0, "{b:?}"),
                filter_says::ALL => assert_eq!(passing, pts.len(), "{b:?}"),
                _ => {}
            }
        }
        assert!(seen.iter().all(|&n| n > 100), "each answer is met: {seen:?}");
    }

    #[test]
    fn what_the_kernels_do_not_apply_is_refused() {
        let mut f = PointFilter { returns: Returns::First, ..Default::default() };
        assert!(uniforms(&f, DVec3::ZERO, false).is_ok_and(|u| u.tests_returns == 1));
        f.ranges.push(pcv_io::filter::ValueRange::parse("gps_time:1..2").unwrap());
        assert!(uniforms(&f, DVec3::ZERO, false).unwrap_err().contains("no gps_time values"), "no column, no range");
        f.ranges = vec![f.ranges[0]; 5];
        assert!(uniforms_with(&f, DVec3::ZERO, false, &|_| Some(0.0)).unwrap_err().contains("4 value ranges"));
        f.ranges.clear();
        f.returns = Returns::All;
        f.boxes = vec![ClipBox::from_min_max(DVec3::ZERO, DVec3::ONE, Keep::Inside); 9];
        assert!(uniforms(&f, DVec3::ZERO, false).unwrap_err().contains("at most 8"));
        f.boxes.truncate(1);
        assert!(uniforms(&f, DVec3::ZERO, true).is_err());
        f.boxes.clear();
        f.set_class_shown(2, false);
        let u = uniforms(&f, DVec3::ZERO, true).unwrap();
        assert_eq!(u.hidden_classes[0], 1 << 2);
        assert_eq!(u.tests_classes, 1);
        assert!(uniforms(&PointFilter::default(), DVec3::ZERO, false).is_ok_and(|u| u.tests_classes == 0));
    }

    /// `n` points with classes, intensity, returns and a GPS time far from zero (a base of 3.15e8 s,
    /// values a quarter second apart: f32 offsets hold them exactly); one point in 50 has no returns
    /// and no GPS time (NaN: a file without them among others).
    fn attributed(n: usize) -> PointCloud {
        use pcv_model::attributes::{Attributes, ColorMode};
        use pcv_model::fields::Column;
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let points: Vec<pcv_io::Point> =
            (0..n).map(|i| pcv_io::Point { pos: [(i % 300) as f32, (i / 300) as f32, 0.0], rgba: [255; 4] }).collect();
        let (mut rn, mut nr, mut gps) = (vec![], vec![], vec![]);
        for i in 0..n {
            let count = rng.random_range(1..=5u8);
            let none = i % 50 == 7;
            rn.push(if none { f64::NAN } else { rng.random_range(1..=count) as f64 });
            nr.push(if none { f64::NAN } else { count as f64 });
            gps.push(if none { f64::NAN } else { 315_000_000.0 + (i / 40) as f64 * 0.25 });
        }
        let intensity: Vec<f32> = (0..n).map(|_| rng.random_range(0..4096u32) as f32).collect();
        let class: Vec<u8> = (0..n).map(|_| [2u8, 5, 6][rng.random_range(0..3)]).collect();
        let mut c = PointCloud::from_points(points, DVec3::ZERO, "attributed");
        c.attributes = Some(std::sync::Arc::new(Attributes {
            intensity: Some(intensity),
            classification: Some(class),
            columns: vec![
                Column::from_f64(Field::ReturnNumber, &rn),
                Column::from_f64(Field::NumberOfReturns, &nr),
                Column::from_f64(Field::GpsTime, &gps),
            ],
            field_spec: None,
            has_rgb: false,
            sources: vec![],
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        }));
        c
    }

    /// The filters of the tests below: each returns choice with a GPS window whose ends are values
    /// points have (ends kept), an intensity band and hidden vegetation.
    fn attribute_filters() -> Vec<PointFilter> {
        let mut out = Vec::new();
        for returns in Returns::ALL {
            let mut f = PointFilter { returns, ..Default::default() };
            f.ranges.push(pcv_io::filter::ValueRange::parse("gps_time:315000010.25..315000040").unwrap());
            out.push(f.clone());
            f.ranges.push(pcv_io::filter::ValueRange::parse("intensity:1000..3000.5").unwrap());
            f.set_class_shown(5, false);
            out.push(f);
        }
        out.push(PointFilter {
            ranges: vec![pcv_io::filter::ValueRange::parse("gps_time:..315000001").unwrap()],
            ..Default::default()
        });
        out
    }

    #[test]
    fn returns_and_ranges_keep_exactly_what_the_host_rule_keeps() {
        let cloud = attributed(60_000);
        let whole = 0..cloud.points.len();
        let all = std::slice::from_ref(&whole);
        let classes = column(&cloud, FilterColumn::Classes, all);
        let returns = column(&cloud, FilterColumn::Returns, all);
        let Some(ColumnData::Codes(classes)) = classes else { panic!("class codes") };
        let Some(ColumnData::Codes(returns)) = returns else { panic!("return codes") };
        for f in attribute_filters() {
            let u = for_cloud(&f, &cloud).expect("the kernels apply it");
            let values: Vec<Vec<f32>> = u.ranges[..u.num_ranges as usize]
                .iter()
                .map(|r| match column(&cloud, FilterColumn::Values(r.field), all) {
                    Some(ColumnData::Values(v)) => v,
                    other => panic!("values of {}: {other:?}", r.field),
                })
                .collect();
            let mut c = Columns { classes: &classes, returns: &returns, ..Default::default() };
            for (k, v) in values.iter().enumerate() {
                c.values[k] = v;
            }
            let host = pcv_io::filter::kept(&cloud, &f, 0..cloud.points.len());
            let mut twin = vec![false; cloud.points.len()];
            for (i, t) in twin.iter_mut().enumerate() {
                *t = filter_point(&u, &c, i, cloud.points[i].pos);
            }
            let mut want = vec![false; cloud.points.len()];
            host.runs.iter().flat_map(|r| r.clone()).for_each(|i| want[i] = true);
            let kept = twin.iter().filter(|&&t| t).count();
            assert_eq!(twin, want, "{}: the kernels' rule and the host's differ", f.describe());
            assert!(kept > 100 && kept < cloud.points.len() / 2, "{}: {kept} kept", f.describe());
        }
    }

    #[test]
    fn return_and_range_summaries_never_contradict_their_points() {
        use crate::twins::{classes::batch_classes, ranges::batch_ranges};
        let cloud = attributed(60_000);
        let (mut seen, mut rng) = ([0u32; 3], rand::rngs::StdRng::seed_from_u64(5));
        for f in attribute_filters() {
            let u = for_cloud(&f, &cloud).unwrap();
            for _ in 0..300 {
                // A short run of points about the GPS windows (runs of equal GPS times, a window's ends inside).
                let start = rng.random_range(0..8_000);
                let span = start..start + rng.random_range(1..40);
                let run = std::slice::from_ref(&span);
                let Some(ColumnData::Codes(cl)) = column(&cloud, FilterColumn::Classes, run) else { panic!() };
                let Some(ColumnData::Codes(re)) = column(&cloud, FilterColumn::Returns, run) else { panic!() };
                let values: Vec<Vec<f32>> = u.ranges[..u.num_ranges as usize]
                    .iter()
                    .map(|r| match column(&cloud, FilterColumn::Values(r.field), run) {
                        Some(ColumnData::Values(v)) => v,
                        _ => panic!(),
                    })
                    .collect();
                let sums: Vec<Vec<crate::gpu_data::BatchRange>> = values.iter().map(|v| batch_ranges(v)).collect();
                let (bc, br) = (batch_classes(&cl), batch_classes(&re));
                let mut c = Columns {
                    classes: &cl,
                    batch_classes: &bc,
                    returns: &re,
                    batch_returns: &br,
                    ..Default::default()
                };
                for k in 0..values.len() {
                    (c.values[k], c.batch_values[k]) = (&values[k], &sums[k]);
                }
                let b = Batch { min: [-1.0; 3], max: [1000.0; 3], num_points: cl.len() as u32, ..Default::default() };
                let says = filter_batch(&u, &c, 0, &b);
                seen[says as usize] += 1;
                let passing = (0..cl.len()).filter(|&i| filter_point(&u, &c, i, [0.0; 3])).count();
                match says {
                    filter_says::NONE => assert_eq!(passing, 0, "{}", f.describe()),
                    filter_says::ALL => assert_eq!(passing, cl.len(), "{}", f.describe()),
                    _ => {}
                }
            }
        }
        assert!(seen.iter().all(|&n| n > 50), "each answer is met: {seen:?}");
    }

    #[test]
    fn range_bounds_round_inwards() {
        for v in [0.1, -0.1, 1e-9, 12345.678, -3.0, 0.0, f64::INFINITY, f64::NEG_INFINITY] {
            let (up, down) = (f32_at_or_above(v), f32_at_or_below(v));
            assert!(up as f64 >= v && (up == f32::NEG_INFINITY || (up.next_down() as f64) < v), "{v}: {up}");
            assert!(down as f64 <= v && (down == f32::INFINITY || (down.next_up() as f64) > v), "{v}: {down}");
        }
    }
}
