//! Color pass, the CPU twin of `kernels/color.cu`: a point whose depth bits equal its pixel's stored
//! depth writes its color there. Where two points share one depth exactly, either may win.
use super::project::{project_batch_xyz, BATCH, DROPPED};
use crate::gpu_data::FrameUniforms;
use crate::simd::with_fma;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

use super::depth::CHUNK_POINTS;

/// The pass over the points' `positions` and RGBA8 `colors` (the CPU backend's split layout,
/// [`super::preprocess::Prepared`]; `colors[i]` is point i's [`crate::gpu_data::Point::color_word`]).
pub fn color(f: &FrameUniforms, positions: &[[f32; 3]], colors: &[u32], depth: &[AtomicU32], color: &mut [u32]) {
    let n = f.width as usize * f.height as usize;
    assert!(depth.len() == n && color.len() == n, "buffer sizes");
    assert_eq!(positions.len(), colors.len(), "one color per position");
    // Writers race only where two points tie exactly on depth; an atomic store keeps that defined.
    // SAFETY: AtomicU32 has the same size and alignment as u32, and `color` is borrowed mutably for the
    // whole pass, so no other reference to it exists while the atomics alias it.
    let color_atomic: &[AtomicU32] = unsafe { &*(color as *mut [u32] as *const [AtomicU32]) };
    positions
        .par_chunks(CHUNK_POINTS)
        .zip(colors.par_chunks(CHUNK_POINTS))
        .for_each(|(chunk, cols)| color_chunk(f, chunk, cols, depth, color_atomic));
}

with_fma! {
    fn color_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], cols: &[u32], depth: &[AtomicU32], color: &[AtomicU32]) {
        let (mut index, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
        for (batch, cb) in chunk.chunks(BATCH).zip(cols.chunks(BATCH)) {
            project_batch_xyz(f, batch, &mut index, &mut bits);
            for ((&i, &d), &c) in index.iter().zip(&bits).zip(cb) {
                if i != DROPPED && depth[i as usize].load(Ordering::Relaxed) == d {
                    color[i as usize].store(c, Ordering::Relaxed);
                }
            }
        }
    }
}
