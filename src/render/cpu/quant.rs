//! Quantized visibility-buffer mode, the CPU twin of `kernels/quant.cu`: per batch and frame, cull it,
//! or read its 10-bit coordinates when [`super::batch::batch_quantized_ok`] says they move no point by
//! more than half a pixel, or else its full-precision positions; then as [`super::vis`].
use super::batch::{batch_culled, batch_quantized_ok, dequantize_pos};
use super::vis::vis_point;
use crate::render::gpu_data::{Batch, FrameUniforms, BATCH_POINTS};
use crate::render::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

pub fn quant(
    f: &FrameUniforms,
    batches: &[Batch],
    quant: &[u32],
    positions: &[[f32; 3]],
    vis: &[AtomicU64],
) -> BatchCounts {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert_eq!(quant.len(), positions.len(), "one quantized word per point");
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    let chunk = BATCH_POINTS as usize;
    batches
        .par_iter()
        .zip(positions.par_chunks(chunk).zip(quant.par_chunks(chunk)))
        .enumerate()
        .map(|(b, (batch, (pos, words)))| {
            if batch_culled(f, batch) {
                return BatchCounts { culled: 1, ..BatchCounts::default() };
            }
            let base = b * chunk;
            if batch_quantized_ok(f, batch) {
                for (j, &w) in words.iter().enumerate() {
                    vis_point(f, dequantize_pos(batch, w), (base + j) as u32, vis);
                }
                BatchCounts { quantized: 1, ..BatchCounts::default() }
            } else {
                for (j, &p) in pos.iter().enumerate() {
                    vis_point(f, p, (base + j) as u32, vis);
                }
                BatchCounts { full: 1, ..BatchCounts::default() }
            }
        })
        .reduce(BatchCounts::default, |a, b| BatchCounts {
            culled: a.culled + b.culled,
            quantized: a.quantized + b.quantized,
            full: a.full + b.full,
        })
}
