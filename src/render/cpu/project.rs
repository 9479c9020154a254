//! The projection and pixel rule, the CPU twin of `kernels/project.cuh`.
//!
//! clip = clip_from_world · (x, y, z, 1). A point is dropped unless |x|, |y| and |z| are all below w in
//! clip space (so NaN and infinities are dropped too). Its pixel is the floor of NDC mapped to the
//! viewport, row 0 at the bottom as in a GL buffer, clamped into the viewport (NDC can round to exactly
//! 1.0). Its depth is NDC z mapped to [0, 1], kept as float bits: non-negative floats order like their
//! bits, so an integer min is a float min. The float operations run in the kernel's order, without FMA.
use crate::render::gpu_data::FrameUniforms;

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

#[inline(always)]
fn clip_row(m: &[f32; 16], r: usize, x: f32, y: f32, z: f32) -> f32 {
    m[r] * x + m[4 + r] * y + m[8 + r] * z + m[12 + r]
}

/// Projects one point; `None` when it falls outside the clip volume.
#[inline(always)]
pub fn project(f: &FrameUniforms, pos: [f32; 3]) -> Option<Projected> {
    let m = &f.clip_from_world;
    let [x, y, z] = pos;
    let cx = clip_row(m, 0, x, y, z);
    let cy = clip_row(m, 1, x, y, z);
    let cz = clip_row(m, 2, x, y, z);
    let cw = clip_row(m, 3, x, y, z);
    if !(cx.abs() < cw && cy.abs() < cw && cz.abs() < cw) {
        return None;
    }
    let inv_w = 1.0 / cw;
    let sx = ((cx * inv_w + 1.0) * 0.5) * f.width as f32;
    let sy = ((cy * inv_w + 1.0) * 0.5) * f.height as f32;
    let depth = (cz * inv_w + 1.0) * 0.5;
    // sx, sy >= 0 (NDC >= -1), so truncation is the floor, without a libm call on baseline x86-64.
    Some(Projected {
        x_px: (sx as u32).min(f.width - 1),
        y_px: (sy as u32).min(f.height - 1),
        depth_bits: depth.to_bits(),
    })
}

/// Points projected a batch at a time, in a branch-free loop the compiler vectorizes.
pub const BATCH: usize = 64;

/// Marks a point that [`project`] drops.
pub const DROPPED: u32 = u32::MAX;

/// [`project`] for up to [`BATCH`] points at once: `index[j]` is the pixel index of `points[j]`
/// (row-major, `width` a row) or [`DROPPED`], `depth_bits[j]` its depth bits. Same operations in the
/// same order as [`project`], so the same results; the tests check that.
#[inline(always)]
pub fn project_batch(f: &FrameUniforms, points: &[crate::render::gpu_data::Point], index: &mut [u32; BATCH], depth_bits: &mut [u32; BATCH]) {
    let m = &f.clip_from_world;
    let (w, h) = (f.width as f32, f.height as f32);
    let (wmax, hmax) = (f.width - 1, f.height - 1);
    for ((p, idx), dep) in points.iter().zip(index.iter_mut()).zip(depth_bits.iter_mut()) {
        let [x, y, z] = p.pos;
        let cx = clip_row(m, 0, x, y, z);
        let cy = clip_row(m, 1, x, y, z);
        let cz = clip_row(m, 2, x, y, z);
        let cw = clip_row(m, 3, x, y, z);
        let inside = cx.abs() < cw && cy.abs() < cw && cz.abs() < cw;
        let inv_w = 1.0 / cw;
        let sx = ((cx * inv_w + 1.0) * 0.5) * w;
        let sy = ((cy * inv_w + 1.0) * 0.5) * h;
        let depth = (cz * inv_w + 1.0) * 0.5;
        // For dropped points these may be NaN or huge; Rust's casts saturate, and the index is replaced.
        let px = (sx as u32).min(wmax);
        let py = (sy as u32).min(hmax);
        *idx = if inside { py * f.width + px } else { DROPPED };
        *dep = depth.to_bits();
    }
}
