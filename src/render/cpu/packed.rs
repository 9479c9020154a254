//! Packed single pass, the CPU twin of `kernels/packed.cu`: one 64-bit atomic min per point of
//! the word (depth bits, RGBA8) into a visibility buffer, then a resolve that keeps the low 32 bits. The
//! nearest point wins as in the three-pass reference; at an exact depth tie the smaller color word wins.
use super::clear::FAR_DEPTH_BITS;
use super::depth::CHUNK_POINTS;
use super::project::{project_batch_xyz, BATCH, DROPPED};
use super::simd::with_fma;
use crate::render::gpu_data::{word, word_payload, FrameUniforms};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn packed_clear(f: &FrameUniforms, vis: &mut [AtomicU64]) {
    let w = f.width.max(1) as usize;
    vis.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let v = word(FAR_DEPTH_BITS, super::post::background(f, y as u32) as u64);
        row.iter_mut().for_each(|c| *c.get_mut() = v);
    });
}

/// The pass over the points' `positions` and RGBA8 `colors` (the CPU backend's split layout).
pub fn packed(f: &FrameUniforms, positions: &[[f32; 3]], colors: &[u32], vis: &[AtomicU64]) {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert_eq!(positions.len(), colors.len(), "one color per position");
    positions
        .par_chunks(CHUNK_POINTS)
        .zip(colors.par_chunks(CHUNK_POINTS))
        .for_each(|(chunk, cols)| packed_chunk(f, chunk, cols, vis));
}

with_fma! {
    fn packed_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], cols: &[u32], vis: &[AtomicU64]) {
        let (mut index, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
        for (batch, cb) in chunk.chunks(BATCH).zip(cols.chunks(BATCH)) {
            project_batch_xyz(f, batch, &mut index, &mut bits);
            for ((&i, &d), &c) in index.iter().zip(&bits).zip(cb) {
                if i != DROPPED {
                    let v = word(d, c as u64);
                    let cell = &vis[i as usize];
                    if v < cell.load(Ordering::Relaxed) {
                        cell.fetch_min(v, Ordering::Relaxed);
                    }
                }
            }
        }
    }
}

pub fn packed_resolve(vis: &[AtomicU64], color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    color.par_iter_mut().zip(vis.par_iter()).for_each(|(c, v)| *c = word_payload(v.load(Ordering::Relaxed)) as u32);
}
