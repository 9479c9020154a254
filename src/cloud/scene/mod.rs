//! The built-in scene: the prototype's ten random cylinders.
//!
//! How it works: the ten cylinders are drawn on the host from the seed, as the prototype draws them
//! (center in [-1, 1]³, two orthonormal axes with the second one re-drawn while it is too close to the
//! first, radius in [0.1, 0.2], half-height in [0.5, 1], color in [0.3, 1]³). Point i is made from
//! (seed, i) alone ([`points`], with the counter-based hash of [`rng`]), by the scene kernel
//! (`kernels/scene.cu`) on the device or by [`points::scene`] here: this module is the scene's one
//! definition, and the kernel's CPU twin (`render::cpu::scene`) is [`points`] itself.
pub mod points;
pub mod rng;

use super::{Bounds, PointCloud, SceneSpec};
use crate::cloud::point::Point;
use bytemuck::{Pod, Zeroable};
use glam::{DVec3, Vec3};
use indicatif::{ProgressBar, ProgressStyle};
use rng::mix64;

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

/// Makes the scene on the CPU (all cores), with a progress bar when it takes a while.
pub fn generate(num_points: u64, seed: u64, show_progress: bool) -> PointCloud {
    let s = params(num_points, seed);
    let cyl = cylinders(seed);
    let mut points = vec![Point::default(); num_points as usize];
    let chunk = 8 << 20;
    let bar = if show_progress && num_points >= 50_000_000 {
        let b = ProgressBar::new(num_points);
        b.set_style(
            ProgressStyle::with_template("generating {bar:40} {human_pos}/{human_len} points ({per_sec}, {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    for (c, out) in points.chunks_mut(chunk).enumerate() {
        points::scene(&s, &cyl, (c * chunk) as u64, out);
        if let Some(b) = &bar {
            b.inc(out.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut cloud = PointCloud::from_points(points, DVec3::ZERO, label(num_points, seed));
    cloud.source = crate::cloud::CloudSource::Scene(SceneSpec { num_points, seed });
    cloud
}

fn label(num_points: u64, seed: u64) -> String {
    format!("built-in scene ({num_points} points, seed {seed})")
}

/// The scene with no points made yet: each backend makes them itself. Its bounds are the cylinders'
/// boxes (a little larger than the points' own bounds).
pub fn lazy(num_points: u64, seed: u64) -> PointCloud {
    let bounds = if num_points == 0 { Bounds::EMPTY } else { analytic_bounds(&cylinders(seed)) };
    PointCloud {
        points: Default::default(),
        bounds,
        origin: DVec3::ZERO,
        label: label(num_points, seed),
        source: crate::cloud::CloudSource::Scene(SceneSpec { num_points, seed }),
        attributes: None,
    }
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
