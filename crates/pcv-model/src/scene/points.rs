//! The built-in scene's points: the definition `kernels/scene.cu` makes on the device (its CPU twin).
//!
//! Point i lies on cylinder `i * num_cylinders / num_points` (the prototype's split) at angle 2π·u and
//! height v·height along the axis, with each color channel jittered by ±0.1, all from the counter-based
//! hash `rng::uniform(seed, i, k)`. The float operations run in the kernel's order without FMA, so the
//! CUDA backend makes the same points bit for bit.
use super::rng::{sincos_2pi, uniform};
use super::{Cylinder, SceneParams};
use crate::Point;
use rayon::prelude::*;

#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "mirrors pcv_axis_point in kernels/scene.cu")]
fn axis_point(ctr: f32, r: f32, ax: f32, ay: f32, lx: f32, ly: f32, h: f32, az: f32, v: f32) -> f32 {
    (ctr + r * (ax * lx + ay * ly)) + h * (az * v)
}

#[inline(always)]
fn channel(base: f32, u: f32) -> u8 {
    let d = (2.0 * u + -1.0) * 0.1;
    #[expect(
        clippy::manual_clamp,
        reason = "fminf(fmaxf(x, 0), 1) in kernels/scene.cu: NaN gives 0, clamp would keep it"
    )]
    let c = (base + d).max(0.0).min(1.0);
    (255.0 * c).round() as u8
}

/// Point `i` of the scene.
#[inline(always)]
pub fn scene_point(s: &SceneParams, cylinders: &[Cylinder], i: u64) -> Point {
    let c = &cylinders[((i * s.num_cylinders as u64) / s.num_points) as usize];
    let u = uniform(s.seed, i, 0);
    let v = 2.0 * uniform(s.seed, i, 1) + -1.0;
    let (ly, lx) = sincos_2pi(u);
    let pos = [0, 1, 2]
        .map(|k| axis_point(c.center[k], c.radius, c.axis_x[k], c.axis_y[k], lx, ly, c.height, c.axis_z[k], v));
    let rgba = [
        channel(c.color[0], uniform(s.seed, i, 2)),
        channel(c.color[1], uniform(s.seed, i, 3)),
        channel(c.color[2], uniform(s.seed, i, 4)),
        255,
    ];
    Point { pos, rgba }
}

/// Fills `out` with points `first .. first + out.len()` of the scene, in parallel.
pub fn scene(s: &SceneParams, cylinders: &[Cylinder], first: u64, out: &mut [Point]) {
    assert_eq!(cylinders.len(), s.num_cylinders as usize, "cylinder count");
    assert!(first + out.len() as u64 <= s.num_points, "range past the scene's end");
    out.par_chunks_mut(1 << 16).enumerate().for_each(|(c, chunk)| {
        let base = first + (c as u64) * (1 << 16);
        for (j, p) in chunk.iter_mut().enumerate() {
            *p = scene_point(s, cylinders, base + j as u64);
        }
    });
}
