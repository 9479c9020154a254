//! The CPU backend: the kernels' twins run with rayon over the points, atomics on the depth buffer.
//!
//! Each file here is the twin of the kernel of the same name in `kernels/` and computes the same thing;
//! the tests use them as the reference for the CUDA backend.
pub mod clear;
pub mod color;
pub mod depth;
pub mod packed;
pub mod project;
pub mod rng;
pub mod scene;

use super::{FrameParams, FrameStats, PassTime, Rasterizer, RenderError, RenderMode, Target};
use crate::cloud::PointCloud;
use crate::render::gpu_data::Point;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

/// Renders with rayon on the CPU.
#[derive(Default)]
pub struct CpuRasterizer {
    points: Option<Arc<Vec<Point>>>,
    depth: Vec<AtomicU32>,
    vis: Vec<AtomicU64>,
}

impl CpuRasterizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The depth buffer of the last frame, as float bits.
    pub fn depth_bits(&self) -> Vec<u32> {
        self.depth.iter().map(|d| d.load(std::sync::atomic::Ordering::Relaxed)).collect()
    }
}

impl Rasterizer for CpuRasterizer {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn description(&self) -> String {
        format!("CPU, {} threads (rayon)", rayon::current_num_threads())
    }

    fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
        // Morton order keeps the depth and color buffers in cache (same image; the winner of an exact depth
        // tie may change). Points past u32 indices are not sorted.
        let points = cloud.host_points(true);
        self.points = Some(if points.len() < u32::MAX as usize {
            Arc::new(crate::cloud::order::morton_sorted(&points, &cloud.bounds))
        } else {
            points
        });
        Ok(())
    }

    fn num_points(&self) -> u64 {
        self.points.as_ref().map_or(0, |p| p.len() as u64)
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        let points = self.points.as_ref().ok_or(RenderError::NotUploaded)?;
        let Target::Host(color) = target else {
            return Err(RenderError::UnsupportedTarget { backend: "cpu", target: "device" });
        };
        let n = frame.num_pixels();
        if color.len() != n {
            return Err(RenderError::TargetSize { got: color.len(), width: frame.width_px, height: frame.height_px });
        }
        let f = frame.uniforms();
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        let mut passes = Vec::with_capacity(3);
        let t0 = Instant::now();
        match frame.mode {
            RenderMode::Reference => {
                if self.depth.len() != n {
                    self.depth = (0..n).map(|_| AtomicU32::new(0)).collect();
                }
                clear::clear(&mut self.depth, color, f.clear_color);
                let t1 = Instant::now();
                depth::depth(&f, points, &self.depth);
                let t2 = Instant::now();
                color::color(&f, points, &self.depth, color);
                let t3 = Instant::now();
                passes.push(PassTime { name: "clear", ms: ms(t0, t1) });
                passes.push(PassTime { name: "depth", ms: ms(t1, t2) });
                passes.push(PassTime { name: "color", ms: ms(t2, t3) });
            }
            RenderMode::Packed => {
                if self.vis.len() != n {
                    self.vis = (0..n).map(|_| AtomicU64::new(0)).collect();
                }
                packed::packed_clear(&f, &mut self.vis);
                let t1 = Instant::now();
                packed::packed(&f, points, &self.vis);
                let t2 = Instant::now();
                packed::packed_resolve(&self.vis, color);
                let t3 = Instant::now();
                passes.push(PassTime { name: "clear", ms: ms(t0, t1) });
                passes.push(PassTime { name: "packed", ms: ms(t1, t2) });
                passes.push(PassTime { name: "resolve", ms: ms(t2, t3) });
            }
        }
        Ok(FrameStats {
            passes,
            total_ms: ms(t0, Instant::now()),
            points: points.len() as u64,
        })
    }
}
