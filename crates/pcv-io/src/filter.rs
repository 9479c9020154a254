//! Applying a [`PointFilter`] to a host cloud: which of its points are shown.
//!
//! How it works: the cloud is cut into groups of [`GROUP_POINTS`] consecutive points (files are read in
//! order, so a group is a patch of a scan line or a tile's chunk). Each group gets a summary — the
//! classes it holds and its box in the file's coordinates — and [`PointFilter::box_may_pass`] decides
//! from the summary alone whether no point of it can pass (skipped whole, no point read) or, for clip
//! volumes, whether every point must (kept whole). Only groups that straddle the filter test each
//! point with [`PointFilter::passes`], the one rule. Groups run in parallel; the result is the runs of
//! consecutive kept points ([`Kept::runs`]), in order, which the viewer uploads and maps picks back
//! through, and the counts of groups skipped, kept whole ([`PointFilter::box_all_pass`]) and tested
//! ([`Kept::groups_skipped`] …), which the panel and stderr show. Positions go back to the file's coordinates through
//! [`PointCloud::to_source`] (the local frame of geographic clouds too), so clip boxes are in the
//! numbers `pcv info` prints.
use crate::PointCloud;
use glam::{DVec3, Vec3};
use pcv_model::fields::Field;
pub use pcv_model::filter::*;
use rayon::prelude::*;
use std::ops::Range;

/// Points a group holds.
pub const GROUP_POINTS: usize = 4096;

/// The points of a cloud that pass a filter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kept {
    /// Runs of consecutive kept points, in order.
    pub runs: Vec<Range<usize>>,
    /// Points kept.
    pub points: u64,
    /// Groups no point of which could pass (skipped from their summary alone).
    pub groups_skipped: u64,
    /// Groups every point of which passes (kept from their summary alone).
    pub groups_whole: u64,
    /// Groups whose points were tested one by one.
    pub groups_tested: u64,
    /// The rasterizer's culled passes apply the filter to every point uploaded (no runs or group
    /// counts here: the frames count the batches they skip).
    pub by_rasterizer: bool,
}

/// The points of `cloud` in `range` that `filter` shows (see the module doc).
pub fn kept(cloud: &PointCloud, filter: &PointFilter, range: Range<usize>) -> Kept {
    let range = range.start.min(cloud.points.len())..range.end.min(cloud.points.len());
    if filter.is_empty() {
        let n = range.len() as u64;
        let runs = if range.is_empty() { vec![] } else { vec![range] };
        return Kept { runs, points: n, ..Default::default() };
    }
    let attrs = cloud.attributes.as_deref();
    let classes = attrs.and_then(|a| a.classification.as_deref());
    let intensity = attrs.and_then(|a| a.intensity.as_deref());
    let columns: Vec<(Field, &pcv_model::fields::Column)> =
        filter.fields().into_iter().filter_map(|f| attrs.and_then(|a| a.column(f)).map(|c| (f, c))).collect();
    let file_pos = |i: usize| cloud.to_source(Vec3::from_array(cloud.points[i].pos));
    let groups: Vec<Range<usize>> =
        (range.start..range.end).step_by(GROUP_POINTS).map(|s| s..(s + GROUP_POINTS).min(range.end)).collect();
    let parts: Vec<(Vec<Range<usize>>, u8)> = groups
        .into_par_iter()
        .map(|g| {
            // The group's summary: its classes and its box in file coordinates.
            let mut mask = [0u64; 4];
            match classes {
                Some(c) => c[g.clone()].iter().for_each(|&k| mask[(k / 64) as usize] |= 1 << (k % 64)),
                None => mask[0] = 1,
            }
            let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
            if filter.clips() {
                for i in g.clone() {
                    let p = file_pos(i);
                    if p.is_finite() {
                        lo = lo.min(p);
                        hi = hi.max(p);
                    }
                }
            }
            if !filter.box_may_pass(lo.min(hi), hi.max(lo), &mask) {
                return (vec![], 0);
            }
            if filter.box_all_pass(lo, hi, &mask) {
                return (vec![g], 1);
            }
            let mut runs: Vec<Range<usize>> = Vec::new();
            for i in g {
                let field = |f: Field| columns.iter().find(|(x, _)| *x == f).map_or(f64::NAN, |(_, c)| c.get(i));
                let v = PointValues {
                    class: classes.map_or(0, |c| c[i]),
                    intensity: intensity.map_or(f64::NAN, |v| v[i] as f64),
                    field: &field,
                    pos: if filter.clips() { file_pos(i) } else { DVec3::ZERO },
                };
                if filter.passes(&v) {
                    match runs.last_mut() {
                        Some(r) if r.end == i => r.end = i + 1,
                        _ => runs.push(i..i + 1),
                    }
                }
            }
            (runs, 2)
        })
        .collect();
    let mut out = Kept::default();
    for (runs, how) in parts {
        match how {
            0 => out.groups_skipped += 1,
            1 => out.groups_whole += 1,
            _ => out.groups_tested += 1,
        }
        for r in runs {
            out.points += r.len() as u64;
            match out.runs.last_mut() {
                Some(last) if last.end == r.start => last.end = r.end,
                _ => out.runs.push(r),
            }
        }
    }
    out
}

/// The fields `filter` reads that `cloud` has no column of (so it cannot be applied to its points).
pub fn missing_fields(cloud: &PointCloud, filter: &PointFilter) -> Vec<Field> {
    let attrs = cloud.attributes.as_deref();
    filter.fields().into_iter().filter(|f| attrs.and_then(|a| a.column(*f)).is_none()).collect()
}

/// The points of `cloud` that `filter` shows, as a cloud to upload (bounds, origin and attributes
/// stay the whole cloud's: hiding points does not move the camera's planes), and what was kept.
pub fn shown(cloud: &PointCloud, filter: &PointFilter) -> (PointCloud, Kept) {
    let k = kept(cloud, filter, 0..cloud.points.len());
    (gather(cloud, &k), k)
}

/// The points of `cloud` in `kept`'s runs, as a cloud (bounds, origin and attributes the whole
/// cloud's): what [`shown`] uploads, without filtering again.
pub fn gather(cloud: &PointCloud, kept: &Kept) -> PointCloud {
    let mut points = Vec::with_capacity(kept.points as usize);
    for r in &kept.runs {
        points.extend_from_slice(&cloud.points[r.clone()]);
    }
    let mut c = cloud.clone();
    c.points = std::sync::Arc::new(points);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::{Attributes, ColorMode};
    use crate::Point;
    use pcv_model::fields::Column;
    use std::sync::Arc;

    /// 3 groups of points along x (1 m apart): the first all ground (2), the second all vegetation
    /// (5), the third alternating; return numbers 1, 2, 1, 2, … of 2.
    fn cloud() -> PointCloud {
        let n = GROUP_POINTS * 3;
        let points: Vec<Point> =
            (0..n).map(|i| Point { pos: [i as f32, 0.0, 0.0], rgba: [255, 255, 255, 255] }).collect();
        let class: Vec<u8> = (0..n)
            .map(|i| match i / GROUP_POINTS {
                0 => 2,
                1 => 5,
                _ => [2, 5][i % 2],
            })
            .collect();
        let rn: Vec<f64> = (0..n).map(|i| (1 + i % 2) as f64).collect();
        let nr = vec![2.0; n];
        let mut c = PointCloud::from_points(points, DVec3::new(1000.0, 0.0, 0.0), "test");
        c.attributes = Some(Arc::new(Attributes {
            intensity: None,
            classification: Some(class),
            columns: vec![Column::from_f64(Field::ReturnNumber, &rn), Column::from_f64(Field::NumberOfReturns, &nr)],
            field_spec: None,
            has_rgb: true,
            sources: vec![],
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        }));
        c
    }

    #[test]
    fn shown_clouds_hold_the_kept_points_in_order() {
        let c = cloud();
        let mut f = PointFilter::default();
        f.show_only_classes(&[5]);
        let (s, k) = shown(&c, &f);
        assert_eq!(s.len(), k.points);
        assert_eq!(s.points[0].pos[0], GROUP_POINTS as f32);
        assert_eq!(s.points[GROUP_POINTS].pos[0], (2 * GROUP_POINTS + 1) as f32);
        assert_eq!(s.bounds, c.bounds);
    }

    #[test]
    fn no_filter_keeps_one_run() {
        let c = cloud();
        let k = kept(&c, &PointFilter::default(), 0..c.len() as usize);
        assert_eq!(k.runs, vec![0..c.len() as usize]);
        assert_eq!(k.points, c.len());
    }

    #[test]
    fn hidden_classes_skip_whole_groups_and_test_only_mixed_ones() {
        let c = cloud();
        let mut f = PointFilter::default();
        f.show_only_classes(&[2]);
        let k = kept(&c, &f, 0..c.len() as usize);
        assert_eq!((k.groups_skipped, k.groups_whole, k.groups_tested), (1, 1, 1));
        assert_eq!(k.points, (GROUP_POINTS + GROUP_POINTS / 2) as u64);
        assert_eq!(k.runs[0], 0..GROUP_POINTS);
        assert!(k.runs[1..].iter().all(|r| r.len() == 1 && r.start % 2 == 0 && r.start >= 2 * GROUP_POINTS));
    }

    #[test]
    fn returns_and_boxes_test_points_and_boxes_in_file_coordinates() {
        let c = cloud();
        let first = PointFilter { returns: Returns::First, ..Default::default() };
        let k = kept(&c, &first, 0..c.len() as usize);
        assert_eq!(k.points, c.len() / 2);
        // x in the file is 1000 + i: the box keeps i in 10..=19, all in the first group.
        let b = PointFilter { boxes: vec![ClipBox::parse("1010,-1,-1,1019,1,1").unwrap()], ..Default::default() };
        let k = kept(&c, &b, 0..c.len() as usize);
        assert_eq!(k.runs, vec![10..20]);
        assert_eq!((k.groups_skipped, k.groups_tested), (2, 1));
        // Kept outside: everything but those ten, the far groups whole.
        let o =
            PointFilter { boxes: vec![ClipBox::parse("1010,-1,-1,1019,1,1:outside").unwrap()], ..Default::default() };
        let k = kept(&c, &o, 0..c.len() as usize);
        assert_eq!(k.runs, vec![0..10, 20..c.len() as usize]);
        assert_eq!(k.groups_whole, 2);
        // A sub-range (one layer) is filtered within itself.
        let k = kept(&c, &b, 15..100);
        assert_eq!(k.runs, vec![15..20]);
    }
}
