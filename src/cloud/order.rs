//! Spatial ordering: points sorted along a Morton (Z-order) curve over their bounds.
//!
//! How it works: each finite point's position is quantized to 21 bits per axis inside the cloud's
//! bounds and the bits are interleaved into a 63-bit key; a parallel sort of (key, index) pairs gives the
//! new order. Points that are close in space end up close in memory, so a rasterizer that walks them in
//! order touches the same few pixels many times in a row: the depth and color buffers stay in cache.
//! The image does not depend on the order, except which of two points at exactly the same depth wins.
use super::Bounds;
use crate::cloud::point::Point;
use rayon::prelude::*;

/// Spreads the low 21 bits of `v` to every third bit.
fn spread3(v: u64) -> u64 {
    let mut x = v & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    x = (x | x << 2) & 0x1249_2492_4924_9249;
    x
}

/// The Morton key of `pos` inside `bounds` (non-finite positions sort last).
pub fn morton_key(pos: [f32; 3], bounds: &Bounds) -> u64 {
    if !pos.iter().all(|v| v.is_finite()) || bounds.is_empty() {
        return u64::MAX;
    }
    let extent = (bounds.max - bounds.min).max_element().max(f32::MIN_POSITIVE);
    let scale = ((1u32 << 21) - 1) as f32 / extent;
    let q = |v: f32, lo: f32| (((v - lo) * scale).clamp(0.0, ((1u32 << 21) - 1) as f32)) as u64;
    spread3(q(pos[0], bounds.min.x)) | spread3(q(pos[1], bounds.min.y)) << 1 | spread3(q(pos[2], bounds.min.z)) << 2
}

/// The points' indices in Morton order (`points.len()` must be below 2^32).
pub fn morton_order(points: &[Point], bounds: &Bounds) -> Vec<u32> {
    let mut keys: Vec<(u64, u32)> = points.par_iter().enumerate().map(|(i, p)| (morton_key(p.pos, bounds), i as u32)).collect();
    keys.par_sort_unstable();
    keys.into_par_iter().map(|(_, i)| i).collect()
}

/// The points in Morton order.
pub fn morton_sorted(points: &[Point], bounds: &Bounds) -> Vec<Point> {
    morton_order(points, bounds).par_iter().map(|&i| points[i as usize]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;

    #[test]
    fn spread_and_key_order() {
        assert_eq!(spread3(0b111), 0b1001001);
        let b = Bounds { min: Vec3::ZERO, max: Vec3::ONE };
        assert!(morton_key([0.0; 3], &b) < morton_key([0.9, 0.9, 0.9], &b));
        assert_eq!(morton_key([f32::NAN, 0.0, 0.0], &b), u64::MAX);
    }

    #[test]
    fn sorting_keeps_every_point() {
        let c = crate::cloud::scene::generate(10_000, 2, false);
        let s = morton_sorted(&c.points, &c.bounds);
        let mut a: Vec<[u32; 4]> = c.points.iter().map(|p| bytemuck::cast(*p)).collect();
        let mut b: Vec<[u32; 4]> = s.iter().map(|p| bytemuck::cast(*p)).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
    }
}
