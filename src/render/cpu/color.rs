//! Color pass, the CPU twin of `kernels/color.cu`: a point whose depth bits equal its pixel's stored
//! depth writes its color there. Where two points share one depth exactly, either may win.
use super::project::{project_batch, BATCH, DROPPED};
use super::simd::with_fma;
use crate::render::gpu_data::{FrameUniforms, Point};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

use super::depth::CHUNK_POINTS;

pub fn color(f: &FrameUniforms, points: &[Point], depth: &[AtomicU32], color: &mut [u32]) {
    let n = f.width as usize * f.height as usize;
    assert!(depth.len() == n && color.len() == n, "buffer sizes");
    // Writers race only where two points tie exactly on depth; an atomic store keeps that defined.
    // SAFETY: AtomicU32 has the same size and alignment as u32, and `color` is borrowed mutably for the
    // whole pass, so no other reference to it exists while the atomics alias it.
    let color_atomic: &[AtomicU32] = unsafe { &*(color as *mut [u32] as *const [AtomicU32]) };
    points.par_chunks(CHUNK_POINTS).for_each(|chunk| color_chunk(f, chunk, depth, color_atomic));
}

with_fma! {
    fn color_chunk(f: &FrameUniforms, chunk: &[Point], depth: &[AtomicU32], color: &[AtomicU32]) {
        let (mut index, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
        for batch in chunk.chunks(BATCH) {
            project_batch(f, batch, &mut index, &mut bits);
            for ((&i, &d), p) in index.iter().zip(&bits).zip(batch) {
                if i != DROPPED && depth[i as usize].load(Ordering::Relaxed) == d {
                    color[i as usize].store(p.color_word(), Ordering::Relaxed);
                }
            }
        }
    }
}
