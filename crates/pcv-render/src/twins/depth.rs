//! Depth pass, the CPU twin of `kernels/depth.cu`: every point that projects into the viewport takes an
//! atomic min of its depth bits on its pixel. rayon splits the points; a plain load first skips the
//! atomic when the point cannot win (the early depth test), which gives the same result.
use super::project::{project_batch_xyz, BATCH, DROPPED};
use crate::gpu_data::FrameUniforms;
use crate::simd::with_fma;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Points per rayon task: large enough that scheduling costs nothing, small enough to balance.
pub const CHUNK_POINTS: usize = 1 << 16;

/// The pass over `positions` (the points' coordinates; the CPU backend keeps them apart from their
/// colors, [`super::preprocess::Prepared`]).
pub fn depth(f: &FrameUniforms, positions: &[[f32; 3]], depth: &[AtomicU32]) {
    assert_eq!(depth.len(), f.width as usize * f.height as usize, "depth buffer size");
    positions.par_chunks(CHUNK_POINTS).for_each(|chunk| depth_chunk(f, chunk, depth));
}

with_fma! {
    fn depth_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], depth: &[AtomicU32]) {
        let (mut index, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
        for batch in chunk.chunks(BATCH) {
            project_batch_xyz(f, batch, &mut index, &mut bits);
            for (&i, &d) in index.iter().zip(&bits).take(batch.len()) {
                if i != DROPPED {
                    let cell = &depth[i as usize];
                    if d < cell.load(Ordering::Relaxed) {
                        cell.fetch_min(d, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}
