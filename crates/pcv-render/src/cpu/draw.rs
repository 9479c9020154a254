//! The CPU backend's raster passes of the `vis` and `packed` modes: the twins' passes
//! ([`crate::twins::vis`], [`crate::twins::packed`]) drawn fast — points projected 16 at a time with
//! AVX-512 where the CPU has it ([`super::scatter`]) and, with few threads, plain minima in per-thread
//! buffers merged afterwards ([`super::private`]). The same buffers bit for bit (the tests compare them).
use super::private::Dest;
use super::scatter::{draw_points, Payload, Private, Shared};
use crate::gpu_data::FrameUniforms;
use crate::twins::depth::CHUNK_POINTS;
use crate::twins::vis::EMPTY_INDEX;
use rayon::prelude::*;

/// The pass over every point ([`draw_points`]: point `i` gives the word of its depth and `i`), into
/// the shared buffer or private ones ([`super::private`], merged by the caller).
pub fn vis(f: &FrameUniforms, positions: &[[f32; 3]], dest: Dest<'_>) {
    assert!((positions.len() as u64) < EMPTY_INDEX, "point indices must fit below 2^34 - 1");
    let pixels = f.width as usize * f.height as usize;
    let chunk = |c: usize| &positions[c * CHUNK_POINTS..((c + 1) * CHUNK_POINTS).min(positions.len())];
    match dest {
        Dest::Shared(vis) => {
            assert_eq!(vis.len(), pixels, "visibility buffer size");
            positions.par_chunks(CHUNK_POINTS).enumerate().for_each(|(c, points)| {
                draw_points(f, points, Payload::Index((c * CHUNK_POINTS) as u64), &mut Shared(vis))
            });
        }
        Dest::Private(p) => p.run(
            positions.len().div_ceil(CHUNK_POINTS),
            1,
            |cs, buf| {
                assert_eq!(buf.len(), pixels, "visibility buffer size");
                for c in cs {
                    draw_points(f, chunk(c), Payload::Index((c * CHUNK_POINTS) as u64), &mut Private(buf));
                }
            },
            |_, _| (),
        ),
    }
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
