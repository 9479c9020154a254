//! The projection and pixel rule, the CPU twin of `kernels/project.cuh`.
//!
//! The frame's `screen_from_world` is `clip_from_world` with the viewport folded in
//! ([`crate::screen_from_world`]): rows 0 and 1 of a point give its pixel coordinates times w,
//! row 2 its depth in [0, 1] times w, row 3 its w. Each row is three fused multiply-adds
//! (`f32::mul_add`, one rounding each, as the kernel's `__fmaf_rn`), then one correctly rounded
//! reciprocal (1.0 / w, as `__frcp_rn`) and three multiplies. A point is kept when w > 0, its pixel
//! coordinates lie in [0, width) × [0, height) and its depth strictly between 0 and 1; its pixel is the
//! coordinates' integer parts (row 0 at the top, as image libraries count) and its depth is kept as float
//! bits: positive floats order like their bits, so an integer min is a float min.
//!
//! `mul_add` is one instruction where the CPU has FMA: the raster twins run their loops through
//! [`crate::simd`], which compiles them a second time with AVX2 and FMA and picks that version at run
//! time; elsewhere `mul_add` is libm's exact `fmaf`, slower but the same bits.
use crate::gpu_data::FrameUniforms;

/// A projected point: its pixel and its depth bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Projected {
    pub x_px: u32,
    pub y_px: u32,
    pub depth_bits: u32,
}

impl Projected {
    /// Index into a row-major buffer of `width` pixels a row.
    #[inline(always)]
    pub fn index(&self, width: u32) -> usize {
        self.y_px as usize * width as usize + self.x_px as usize
    }
}

/// Row `r` of the column-major matrix `m` at (x, y, z, 1), as the kernel's `pcv_row`.
#[inline(always)]
pub fn row(m: &[f32; 16], r: usize, x: f32, y: f32, z: f32) -> f32 {
    m[8 + r].mul_add(z, m[4 + r].mul_add(y, m[r].mul_add(x, m[12 + r])))
}

/// Projects one point; `None` when it falls outside the view.
#[inline(always)]
pub fn project(f: &FrameUniforms, pos: [f32; 3]) -> Option<Projected> {
    let m = &f.screen_from_world;
    let [x, y, z] = pos;
    let w = row(m, 3, x, y, z);
    if w.is_nan() || w <= 0.0 {
        return None;
    }
    let inv_w = 1.0 / w;
    let sx = row(m, 0, x, y, z) * inv_w;
    let sy = row(m, 1, x, y, z) * inv_w;
    let d = row(m, 2, x, y, z) * inv_w;
    if !(sx >= 0.0 && sx < f.width as f32 && sy >= 0.0 && sy < f.height as f32 && d > 0.0 && d < 1.0) {
        return None;
    }
    // sx, sy >= 0, so truncation is the floor.
    Some(Projected { x_px: sx as u32, y_px: sy as u32, depth_bits: d.to_bits() })
}

/// Points projected a batch at a time, in a branch-free loop the compiler vectorizes.
pub const BATCH: usize = 64;

/// Marks a point that [`project`] drops.
pub const DROPPED: u32 = u32::MAX;

/// [`project`] for up to [`BATCH`] points at once: `index[j]` is the pixel index of `points[j]`
/// (row-major, `width` a row) or [`DROPPED`], `depth_bits[j]` its depth bits. Same operations in the
/// same order as [`project`], so the same results; the tests check that.
#[inline(always)]
pub fn project_batch(
    f: &FrameUniforms,
    points: &[crate::gpu_data::Point],
    index: &mut [u32; BATCH],
    depth_bits: &mut [u32; BATCH],
) {
    project_lanes(f, points, |p| p.pos, index, depth_bits)
}

/// [`project_batch`] over bare positions (the visibility modes' 12-byte layout).
#[inline(always)]
pub fn project_batch_xyz(
    f: &FrameUniforms,
    positions: &[[f32; 3]],
    index: &mut [u32; BATCH],
    depth_bits: &mut [u32; BATCH],
) {
    project_lanes(f, positions, |p| *p, index, depth_bits)
}

/// The branch-free loop of [`project_batch`], over any record that holds a position.
#[inline(always)]
fn project_lanes<P>(
    f: &FrameUniforms,
    points: &[P],
    pos: impl Fn(&P) -> [f32; 3],
    index: &mut [u32; BATCH],
    depth_bits: &mut [u32; BATCH],
) {
    let m = &f.screen_from_world;
    let (w_px, h_px) = (f.width as f32, f.height as f32);
    for ((p, idx), dep) in points.iter().zip(index.iter_mut()).zip(depth_bits.iter_mut()) {
        let [x, y, z] = pos(p);
        let w = row(m, 3, x, y, z);
        let inv_w = 1.0 / w;
        let sx = row(m, 0, x, y, z) * inv_w;
        let sy = row(m, 1, x, y, z) * inv_w;
        let d = row(m, 2, x, y, z) * inv_w;
        let inside = w > 0.0 && sx >= 0.0 && sx < w_px && sy >= 0.0 && sy < h_px && d > 0.0 && d < 1.0;
        // For dropped points these may be NaN or huge; Rust's casts saturate, and the index is replaced.
        let (px, py) = (sx as u32, sy as u32);
        *idx = if inside { py.wrapping_mul(f.width).wrapping_add(px) } else { DROPPED };
        *dep = d.to_bits();
    }
}
