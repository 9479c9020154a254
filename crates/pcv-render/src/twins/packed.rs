//! Packed single pass, the CPU twin of `kernels/packed.cu`: one 64-bit atomic min per point of
//! the word (depth bits, RGBA8) into a visibility buffer, then a resolve that keeps the low 32 bits. The
//! nearest point wins as in the three-pass reference; at an exact depth tie the smaller color word wins.
//! The CPU backend's fast pass is `crate::cpu::draw`'s, tested against this one.
use super::clear::FAR_DEPTH_BITS;
use super::depth::CHUNK_POINTS;
use super::project::project;
use super::vis::min_early;
use crate::gpu_data::{word, word_payload, FrameUniforms};
use crate::simd::with_fma;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

pub fn packed_clear(f: &FrameUniforms, vis: &mut [AtomicU64]) {
    let w = f.width.max(1) as usize;
    vis.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        let v = packed_clear_word(f, y as u32);
        row.iter_mut().for_each(|c| *c.get_mut() = v);
    });
}

/// The word of the pixels of row `y` no point reaches: the far depth and the row's background.
pub fn packed_clear_word(f: &FrameUniforms, y: u32) -> u64 {
    word(FAR_DEPTH_BITS, super::post::background(f, y) as u64)
}

/// The pass over the points' `positions` and RGBA8 `colors` (the CPU backend's split layout): each point
/// takes the atomic min of the word of its depth and its colour.
pub fn packed(f: &FrameUniforms, positions: &[[f32; 3]], colors: &[u32], vis: &[AtomicU64]) {
    assert_eq!(positions.len(), colors.len(), "one color per position");
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    positions
        .par_chunks(CHUNK_POINTS)
        .zip(colors.par_chunks(CHUNK_POINTS))
        .for_each(|(chunk, cols)| packed_chunk(f, chunk, cols, vis));
}

with_fma! {
    fn packed_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], colors: &[u32], vis: &[AtomicU64]) {
        for (&pos, &c) in chunk.iter().zip(colors) {
            if let Some(p) = project(f, pos) {
                min_early(&vis[p.index(f.width)], word(p.depth_bits, c as u64));
            }
        }
    }
}

pub fn packed_resolve(vis: &[AtomicU64], color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    color.par_iter_mut().zip(vis.par_iter()).for_each(|(c, v)| *c = word_payload(v.load(Ordering::Relaxed)) as u32);
}
