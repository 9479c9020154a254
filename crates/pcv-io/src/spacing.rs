//! How far apart a cloud's points are: the spacing adaptive point sizes grow to.
//!
//! How it works: scanned clouds are surfaces, so the spacing is about sqrt(area / points). The area is
//! measured on a sample of at most [`SAMPLE_POINTS`] points with a grid: at a cell size where the sample
//! puts about [`POINTS_PER_CELL`] points in each occupied cell, the occupied cells tile the surface,
//! and area ≈ occupied cells × cell size². The cell size is found by bisection (in log space) between
//! a thousandth of the sample's extent and the extent. A cloud with fewer than 16 points, or points
//! all in one place, has no spacing (0): adaptive sizes then stay at one pixel. The built-in scene
//! measures a small copy of itself made with the same seed (the surface is the same whatever the count)
//! and scales by the count.
use super::{Point, PointCloud};
use std::collections::HashSet;

/// Points the estimate looks at, at most.
pub const SAMPLE_POINTS: usize = 100_000;
/// Sample points per occupied cell at the chosen cell size.
pub const POINTS_PER_CELL: f64 = 8.0;

/// The spacing of `cloud`'s points in local units (0 when it cannot tell).
pub fn estimate(cloud: &PointCloud) -> f32 {
    match cloud.scene() {
        Some(s) if cloud.is_lazy_scene() => {
            let n = s.num_points.min(SAMPLE_POINTS as u64);
            let sample = super::scene::generate(n, s.seed, false);
            estimate_points(&sample.points, s.num_points)
        }
        _ if cloud.is_device_only() => {
            estimate_points(&cloud.files().map(|d| super::device::sample(d)).unwrap_or_default(), cloud.len())
        }
        _ => estimate_points(&cloud.points, cloud.points.len() as u64),
    }
}

/// The spacing of `total_points` points spread like `points` (a sample of them, or all).
pub fn estimate_points(points: &[Point], total_points: u64) -> f32 {
    let step = (points.len() / SAMPLE_POINTS).max(1);
    let sample: Vec<[f32; 3]> =
        points.iter().step_by(step).map(|p| p.pos).filter(|p| p.iter().all(|v| v.is_finite())).collect();
    if sample.len() < 16 || total_points == 0 {
        return 0.0;
    }
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for p in &sample {
        for k in 0..3 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    let extent = (0..3).map(|k| (hi[k] - lo[k]) as f64).fold(0.0, f64::max);
    if extent.is_nan() || extent <= 0.0 || extent.is_infinite() {
        return 0.0;
    }
    let occupied = |cell: f64| -> usize {
        let mut cells = HashSet::with_capacity(sample.len());
        for p in &sample {
            let c = |k: usize| (((p[k] - lo[k]) as f64 / cell) as u64).min(0x1f_ffff);
            cells.insert(c(0) | c(1) << 21 | c(2) << 42);
        }
        cells.len()
    };
    // Points per occupied cell grows with the cell size: bisect for POINTS_PER_CELL.
    let (mut a, mut b) = ((extent * 1e-3).ln(), extent.ln());
    for _ in 0..14 {
        let mid = 0.5 * (a + b);
        if sample.len() as f64 / occupied(mid.exp()) as f64 > POINTS_PER_CELL {
            b = mid;
        } else {
            a = mid;
        }
    }
    let cell = (0.5 * (a + b)).exp();
    let area = occupied(cell) as f64 * cell * cell;
    (area / total_points as f64).sqrt() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid_plane(n_side: usize, pitch: f32) -> Vec<Point> {
        (0..n_side * n_side)
            .map(|i| Point::new([(i % n_side) as f32 * pitch, (i / n_side) as f32 * pitch, 0.0], [255; 4]))
            .collect()
    }

    #[test]
    fn a_regular_grid_has_its_pitch() {
        for pitch in [0.001f32, 0.5, 20.0] {
            let s = estimate_points(&grid_plane(400, pitch), 160_000);
            assert!((s / pitch - 1.0).abs() < 0.25, "pitch {pitch}: estimated {s}");
        }
    }

    #[test]
    fn a_sample_scales_with_the_total() {
        let pts = grid_plane(300, 1.0);
        let all = estimate_points(&pts, 90_000);
        let four_times_denser = estimate_points(&pts, 360_000);
        assert!((all / four_times_denser - 2.0).abs() < 0.01, "{all} vs {four_times_denser}");
    }

    #[test]
    fn degenerate_clouds_have_no_spacing() {
        assert_eq!(estimate_points(&[], 0), 0.0);
        assert_eq!(estimate_points(&vec![Point::new([1.0, 2.0, 3.0], [0; 4]); 100], 100), 0.0);
        assert_eq!(estimate_points(&grid_plane(3, 1.0), 9), 0.0);
    }

    #[test]
    fn the_lazy_scene_matches_its_generated_self() {
        let lazy = crate::scene::lazy(400_000, 5);
        let made = crate::scene::generate(400_000, 5, false);
        let (a, b) = (estimate(&lazy), estimate(&made));
        assert!(a > 0.0 && (a / b - 1.0).abs() < 0.1, "lazy {a} vs generated {b}");
    }
}
