//! Visibility-buffer mode with per-batch frustum culling, the CPU twin of `kernels/culled.cu`: a batch
//! whose box lies outside the view ([`super::batch::batch_culled`]) is skipped; the points of the others
//! go as in [`super::vis`]. The kernel's `pcv_culled_dedup` merges points of one warp that hit one pixel
//! before the atomic (the smallest depth, then the smallest index, wins the merge as it would win the
//! atomic), which leaves the same buffer: its twin is this same function.
use super::batch::batch_culled;
use super::vis::vis_point;
use crate::render::gpu_data::{Batch, FrameUniforms, BATCH_POINTS};
use crate::render::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

pub fn culled(f: &FrameUniforms, batches: &[Batch], positions: &[[f32; 3]], vis: &[AtomicU64]) -> BatchCounts {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    let culled = batches
        .par_iter()
        .zip(positions.par_chunks(BATCH_POINTS as usize))
        .enumerate()
        .map(|(b, (batch, chunk))| {
            if batch_culled(f, batch) {
                return 1u32;
            }
            let base = b * BATCH_POINTS as usize;
            for (j, &p) in chunk.iter().enumerate() {
                vis_point(f, p, (base + j) as u32, vis);
            }
            0
        })
        .sum();
    BatchCounts { culled, ..BatchCounts::default() }
}

/// The twin of `pcv_culled_dedup`: the same buffer as [`culled`].
pub fn culled_dedup(f: &FrameUniforms, batches: &[Batch], positions: &[[f32; 3]], vis: &[AtomicU64]) -> BatchCounts {
    culled(f, batches, positions, vis)
}
