//! Packed single pass, the CPU twin of `kernels/packed.cu`: one 64-bit atomic min per point of
//! the word (depth bits, RGBA8) into a visibility buffer, then a resolve that keeps the low 32 bits. The
//! nearest point wins as in the three-pass reference; at an exact depth tie the smaller color word wins.
use super::clear::FAR_DEPTH_BITS;
use super::depth::CHUNK_POINTS;
use super::private::Dest;
use super::scatter::{draw_points, Payload, Private, Shared};
use crate::gpu_data::{word, word_payload, FrameUniforms};
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

/// The pass over the points' `positions` and RGBA8 `colors` (the CPU backend's split layout), into the
/// shared buffer or private ones ([`super::private`], merged by the caller).
pub fn packed(f: &FrameUniforms, positions: &[[f32; 3]], colors: &[u32], dest: Dest<'_>) {
    assert_eq!(positions.len(), colors.len(), "one color per position");
    let pixels = f.width as usize * f.height as usize;
    let range = |c: usize| c * CHUNK_POINTS..((c + 1) * CHUNK_POINTS).min(positions.len());
    match dest {
        Dest::Shared(vis) => {
            assert_eq!(vis.len(), pixels, "visibility buffer size");
            positions
                .par_chunks(CHUNK_POINTS)
                .zip(colors.par_chunks(CHUNK_POINTS))
                .for_each(|(chunk, cols)| draw_points(f, chunk, Payload::Color(cols), &mut Shared(vis)));
        }
        Dest::Private(p) => p.run(
            positions.len().div_ceil(CHUNK_POINTS),
            1,
            |cs, buf| {
                assert_eq!(buf.len(), pixels, "visibility buffer size");
                for c in cs {
                    draw_points(f, &positions[range(c)], Payload::Color(&colors[range(c)]), &mut Private(buf));
                }
            },
            |_, _| (),
        ),
    }
}

pub fn packed_resolve(vis: &[AtomicU64], color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    color.par_iter_mut().zip(vis.par_iter()).for_each(|(c, v)| *c = word_payload(v.load(Ordering::Relaxed)) as u32);
}
