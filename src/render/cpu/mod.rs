//! The CPU backend: the kernels' twins run with rayon over the points, atomics on the depth buffer.
//!
//! Each file here is the twin of the kernel of the same name in `kernels/` and computes the same thing;
//! the tests use them as the reference for the CUDA backend.
//!
//! The batched modes (`vis`, `culled`, `dedup`, `quant`) read [`preprocess::Prepared`]: positions,
//! colors, batches and quantized words of the points in the order they were uploaded in (Morton order,
//! or the caller's with [`CpuRasterizer::upload_in_order`]), made on the first frame that needs them.
pub mod batch;
pub mod clear;
pub mod color;
pub mod culled;
pub mod depth;
pub mod packed;
pub mod preprocess;
pub mod project;
pub mod quant;
pub mod rng;
pub mod scene;
pub mod vis;

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
    prepared: Option<Arc<preprocess::Prepared>>,
    preprocess_ms: Option<f64>,
    depth: Vec<AtomicU32>,
    vis: Vec<AtomicU64>,
    /// Whether the last frame was a batched mode (its depth lives in `vis`).
    last_batched: bool,
}

impl CpuRasterizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The depth buffer of the last frame, as float bits (of the last reference frame after a packed
    /// one; of the visibility buffer after a batched mode's).
    pub fn depth_bits(&self) -> Vec<u32> {
        if self.last_batched {
            return vis::vis_depth_bits(&self.vis);
        }
        self.depth.iter().map(|d| d.load(std::sync::atomic::Ordering::Relaxed)).collect()
    }

    /// Takes `points` in the order given (no Morton sort): the batched modes index them in this order.
    /// The tests give the CUDA backend's sorted points, so that both backends index the same points.
    pub fn upload_in_order(&mut self, points: Vec<Point>) {
        self.points = Some(Arc::new(points));
        self.prepared = None;
        self.preprocess_ms = None;
    }

    /// The batched modes' data for the uploaded points (made on first use).
    pub fn prepared(&mut self) -> Result<Arc<preprocess::Prepared>, RenderError> {
        let points = self.points.as_ref().ok_or(RenderError::NotUploaded)?;
        if points.len() >= vis::EMPTY_INDEX as usize {
            return Err(RenderError::ModeUnavailable {
                mode: "batched",
                reason: format!("{} points: the visibility buffer indexes fewer than 2^32 - 1", points.len()),
            });
        }
        if self.prepared.is_none() {
            let t = Instant::now();
            self.prepared = Some(Arc::new(preprocess::prepare(points)));
            self.preprocess_ms = Some(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(self.prepared.clone().unwrap_or_default())
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
        self.prepared = None;
        self.preprocess_ms = None;
        Ok(())
    }

    fn num_points(&self) -> u64 {
        self.points.as_ref().map_or(0, |p| p.len() as u64)
    }

    fn preprocess_ms(&self) -> Option<f64> {
        self.preprocess_ms
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        let prepared = if frame.mode.uses_batches() { Some(self.prepared()?) } else { None };
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
        let mut batches = None;
        self.last_batched = frame.mode.uses_batches();
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
            RenderMode::Vis | RenderMode::Culled | RenderMode::Dedup | RenderMode::Quant => {
                let p = prepared.ok_or(RenderError::NotUploaded)?;
                if self.vis.len() != n {
                    self.vis = (0..n).map(|_| AtomicU64::new(0)).collect();
                }
                vis::vis_clear(&mut self.vis);
                let t1 = Instant::now();
                match frame.mode {
                    RenderMode::Vis => vis::vis(&f, &p.positions, &self.vis),
                    RenderMode::Culled => batches = Some(culled::culled(&f, &p.batches, &p.positions, &self.vis)),
                    RenderMode::Dedup => batches = Some(culled::culled_dedup(&f, &p.batches, &p.positions, &self.vis)),
                    _ => batches = Some(quant::quant(&f, &p.batches, &p.quant, &p.positions, &self.vis)),
                }
                let t2 = Instant::now();
                vis::vis_resolve(&f, &self.vis, &p.colors, color);
                let t3 = Instant::now();
                let names = frame.mode.passes();
                passes.push(PassTime { name: names[0], ms: ms(t0, t1) });
                passes.push(PassTime { name: names[1], ms: ms(t1, t2) });
                passes.push(PassTime { name: names[2], ms: ms(t2, t3) });
            }
        }
        Ok(FrameStats {
            passes,
            total_ms: ms(t0, Instant::now()),
            points: points.len() as u64,
            batches,
        })
    }
}
