//! The built-in scene: the prototype's ten random cylinders.
//!
//! How it works: the ten cylinders are drawn on the host from the seed, as the prototype draws them
//! (center in [-1, 1]³, two orthonormal axes with the second one re-drawn while it is too close to the
//! first, radius in [0.1, 0.2], half-height in [0.5, 1], color in [0.3, 1]³). Point i is made from
//! (seed, i) alone ([`points`], with the counter-based hash of [`rng`]), by the scene kernel
//! (`kernels/scene.cu`) on the device or by [`points::scene`] here: this module is the scene's one
//! definition, and the kernel's CPU twin (`pcv_render`'s `cpu::scene`) is [`points`] itself. The host
//! cloud of the scene (made here, or left to each backend) is `pcv_io::scene`'s.
pub mod points;
pub mod rng;

use crate::Bounds;
use bytemuck::{Pod, Zeroable};
use glam::Vec3;
use rng::mix64;

/// The built-in scene's size and seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SceneSpec {
    pub num_points: u64,
    pub seed: u64,
}

/// One cylinder of the built-in scene (`struct Cylinder` in kernels/shared.h; size asserted in
/// `render::gpu_data`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Cylinder {
    pub center: [f32; 3],
    pub axis_x: [f32; 3],
    pub axis_y: [f32; 3],
    pub axis_z: [f32; 3],
    pub radius: f32,
    pub height: f32,
    pub color: [f32; 3],
}

/// The built-in scene generator's parameters (`struct SceneParams` in kernels/shared.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SceneParams {
    pub seed: u64,
    pub num_points: u64,
    pub num_cylinders: u32,
    pub _pad: u32,
}

/// The prototype's cylinder count.
pub const NUM_CYLINDERS: u32 = 10;
/// The default point count (the prototype's).
pub const DEFAULT_POINTS: u64 = 10_000_000;

/// A small sequential generator for the cylinders (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 * (1.0 / 16_777_216.0);
        lo + (hi - lo) * u
    }

    fn vec3(&mut self, lo: f32, hi: f32) -> Vec3 {
        Vec3::new(self.uniform(lo, hi), self.uniform(lo, hi), self.uniform(lo, hi))
    }
}

/// The scene's cylinders for `seed`.
pub fn cylinders(seed: u64) -> Vec<Cylinder> {
    let mut rng = SplitMix(seed ^ 0x5eed_c711_0000_0000);
    (0..NUM_CYLINDERS)
        .map(|_| {
            let center = rng.vec3(-1.0, 1.0);
            let (axis_x, axis_y) = loop {
                let ax = rng.vec3(-1.0, 1.0);
                if ax.length() < 1e-3 {
                    continue;
                }
                let ax = ax.normalize();
                let ay = rng.vec3(-1.0, 1.0);
                let ay = ay - ax.dot(ay) * ax;
                if ay.length() < 0.3 {
                    continue;
                }
                break (ax, ay.normalize());
            };
            let radius = rng.uniform(0.1, 0.2);
            let height = rng.uniform(0.5, 1.0);
            let color = rng.vec3(0.3, 1.0);
            Cylinder {
                center: center.to_array(),
                axis_x: axis_x.to_array(),
                axis_y: axis_y.to_array(),
                axis_z: axis_x.cross(axis_y).to_array(),
                radius,
                height,
                color: color.to_array(),
            }
        })
        .collect()
}

/// The generator parameters for `num_points` points and `seed`.
pub fn params(num_points: u64, seed: u64) -> SceneParams {
    SceneParams { seed, num_points, num_cylinders: NUM_CYLINDERS, _pad: 0 }
}

/// A box around every point the cylinders can hold.
pub fn analytic_bounds(cylinders: &[Cylinder]) -> Bounds {
    let mut b = Bounds::EMPTY;
    for c in cylinders {
        let [ax, ay, az] = [c.axis_x, c.axis_y, c.axis_z].map(|a| Vec3::from_array(a).abs());
        let half = c.radius * (ax + ay) + c.height * az;
        let ctr = Vec3::from_array(c.center);
        b = Bounds::union(b, Bounds { min: ctr - half, max: ctr + half });
    }
    b
}
