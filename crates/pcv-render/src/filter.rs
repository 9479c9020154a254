//! The part of a [`PointFilter`] the culled modes apply themselves ([`gpu_data::FilterUniforms`],
//! `kernels/filter.cuh`): hidden classes and clip volumes, moved into the cloud's frame.
//!
//! How it works: [`uniforms`] turns the filter's hidden classes into the kernels' eight words and each
//! clip box and plane (file coordinates, f64) into the uploaded points' frame (`p_file = origin +
//! p_local`): a box's centre less the origin, its axes the columns of its rotation, its half extents
//! widened by 2⁻²⁰ of the coordinates' magnitude so that points written on a face stay inside after
//! their rounding to f32 (the host filter's f64 test keeps them too); a plane's offset `n · (origin −
//! q)`. What the kernels do not apply — returns, value ranges, more than
//! [`gpu_data::FILTER_MAX_BOXES`] boxes or [`gpu_data::FILTER_MAX_PLANES`] planes, a cloud drawn in a
//! local frame (geographic or geocentric files, where a file-coordinate box is not a box) — is refused
//! with the reason, and the caller filters on the host (`pcv_io::filter::kept`) instead.
use crate::gpu_data::{self, FilterBox, FilterPlane, FilterUniforms};
use glam::{DMat3, DVec3};
use pcv_io::filter::{Keep, PointFilter, Returns};

/// The kernels' filter for `filter` on points whose file coordinates are `origin + p` (`framed`: the
/// cloud is drawn in a local frame), or why the kernels cannot apply it.
pub fn uniforms(filter: &PointFilter, origin: DVec3, framed: bool) -> Result<FilterUniforms, String> {
    if filter.returns != Returns::All || !filter.ranges.is_empty() {
        return Err("returns and value ranges are filtered as the points are uploaded".into());
    }
    if filter.boxes.len() > gpu_data::FILTER_MAX_BOXES || filter.planes.len() > gpu_data::FILTER_MAX_PLANES {
        return Err(format!(
            "the GPU applies at most {} clip boxes and {} planes",
            gpu_data::FILTER_MAX_BOXES,
            gpu_data::FILTER_MAX_PLANES
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::{filter_says, Batch, BatchClasses};
    use crate::twins::filter::{filter_batch, filter_point};
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
            let (a, b) = (filter_point(&u, p, class), host_passes(&f, origin, p, class));
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
                assert!(filter_point(&u, p, 0), "{x} {y}");
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
            let says = filter_batch(&u, &b, &bc);
            seen[says as usize] += 1;
            let passing = pts.iter().filter(|(p, c)| filter_point(&u, *p, *c)).count();
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
        assert!(uniforms(&f, DVec3::ZERO, false).is_err());
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
}
