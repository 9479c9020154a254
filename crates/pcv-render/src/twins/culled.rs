//! The culled modes, the CPU twin of `kernels/culled.cu`: the visibility buffer drawn only from the
//! batches that can show, with two-phase occlusion culling, and in the quant mode 4-byte coordinates
//! where they are precise enough.
//!
//! [`phase1`] lists the batches that were visible last frame and lie in the view; [`raster_list`] draws
//! them; [`super::hzb::build`] makes the depth pyramid of that buffer; [`phase2`] tests every batch in
//! the view against it, records the answer as next frame's visibility, and lists those not drawn yet
//! that may show, which [`raster_list`] draws. Every test is conservative, so the buffer is the one
//! drawing every batch gives; the kernels' lists come in any order, these in batch order, which does
//! not change the buffer (an atomic min, ties to the smaller point index) nor the counts. The batch
//! tests run in FMA-compiled loops ([`with_fma!`]: `mul_add` one instruction, not libm's `fmaf`).
//!
//! The CPU backend draws the same frames faster (`crate::cpu::culled`: groups of points culled inside
//! a drawn batch, per-thread buffers), tested against these passes.
use super::batch::{batch_culled, batch_occluded, batch_quantized_ok, dequantize_pos};
use super::vis::vis_point;
use crate::gpu_data::{Batch, FrameUniforms, HzbParams, BATCH_POINTS};
use crate::simd::with_fma;
use crate::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

/// Batches a task of [`phase1`] or [`phase2`] tests (each task one call of an FMA-compiled loop).
const TEST_STEP_BATCHES: usize = 256;

with_fma! {
    /// Appends to `out` the index of each batch of `batches` (the first being batch `first`) that was
    /// visible last frame and lies in the view.
    fn phase1_chunk(f: &FrameUniforms, batches: &[Batch], visible: &[u8], first: usize, out: &mut Vec<u32>) {
        for (j, (b, &v)) in batches.iter().zip(visible).enumerate() {
            if v != 0 && !batch_culled(f, b) {
                out.push((first + j) as u32);
            }
        }
    }
}

/// The batches visible last frame (`visible[b] != 0`) that lie in the view, in batch order.
pub fn phase1(f: &FrameUniforms, batches: &[Batch], visible: &[u8]) -> Vec<u32> {
    assert_eq!(visible.len(), batches.len(), "one visibility byte per batch");
    let lists: Vec<Vec<u32>> = batches
        .par_chunks(TEST_STEP_BATCHES)
        .zip(visible.par_chunks(TEST_STEP_BATCHES))
        .enumerate()
        .map(|(c, (bs, vs))| {
            let mut out = Vec::new();
            phase1_chunk(f, bs, vs, c * TEST_STEP_BATCHES, &mut out);
            out
        })
        .collect();
    lists.concat()
}

with_fma! {
    /// [`phase2`]'s decision for each batch of `batches`: sets its `visible` byte and writes `decided`
    /// (0 drawn in phase 1, 1 outside the view, 2 hidden, 3 to draw now).
    fn phase2_chunk(f: &FrameUniforms, h: &HzbParams, batches: &[Batch], visible: &mut [u8], hzb: &[u32], decided: &mut [u8]) {
        for ((b, vis), d) in batches.iter().zip(visible.iter_mut()).zip(decided.iter_mut()) {
            let was_visible = *vis != 0;
            if batch_culled(f, b) {
                *vis = 0;
                *d = 1;
                continue;
            }
            let occluded = batch_occluded(f, h, b, hzb);
            *vis = !occluded as u8;
            *d = match (was_visible, occluded) {
                (true, _) => 0,
                (false, true) => 2,
                (false, false) => 3,
            };
        }
    }
}

/// Tests every batch against the view and the pyramid `hzb`, sets `visible` for the next frame, and
/// returns the batches still to draw (in the view, not hidden, not drawn in phase 1) with the counts of
/// batches outside the view and hidden.
pub fn phase2(
    f: &FrameUniforms,
    h: &HzbParams,
    batches: &[Batch],
    visible: &mut [u8],
    hzb: &[u32],
) -> (Vec<u32>, BatchCounts) {
    assert_eq!(visible.len(), batches.len(), "one visibility byte per batch");
    let mut decided = vec![0u8; batches.len()];
    batches
        .par_chunks(TEST_STEP_BATCHES)
        .zip(visible.par_chunks_mut(TEST_STEP_BATCHES))
        .zip(decided.par_chunks_mut(TEST_STEP_BATCHES))
        .for_each(|((bs, vs), ds)| phase2_chunk(f, h, bs, vs, hzb, ds));
    let mut counts = BatchCounts::default();
    let mut list = Vec::new();
    for (b, &d) in decided.iter().enumerate() {
        match d {
            1 => counts.culled += 1,   // outside the view
            2 => counts.occluded += 1, // hidden: skipped
            3 => list.push(b as u32),  // to draw now
            _ => {}                    // drawn in phase 1
        }
    }
    (list, counts)
}

/// Draws the batches of `list` (the kernel's `pcv_raster_list`, or with `draw_quantized`
/// `pcv_raster_list_quant`: each batch drawn from its 10-bit words where [`batch_quantized_ok`]
/// allows), whole: point `i` takes the atomic min of the word of its depth and `i`. Returns how many
/// batches that bound accepts (counted as quantized in both modes, as the kernels count them; only the
/// quant mode reads their words) and how many it does not.
pub fn raster_list(
    f: &FrameUniforms,
    batches: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    vis: &[AtomicU64],
) -> BatchCounts {
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    list.par_iter()
        .map(|&b| {
            let batch = &batches[b as usize];
            let coarse = batch_quantized_ok(f, batch);
            let first = b as usize * BATCH_POINTS as usize;
            let end = (first + batch.num_points as usize).min(positions.len());
            let words = (draw_quantized && coarse).then(|| &quant[first..end]);
            raster_batch(f, batch, first, &positions[first..end], words, vis);
            let coarse = coarse as u32;
            BatchCounts { quantized: coarse, full: 1 - coarse, ..BatchCounts::default() }
        })
        .reduce(BatchCounts::default, |a, b| a.add(&b))
}

with_fma! {
    /// One batch's points (`first` the first one's index), from their 10-bit `words` or positions.
    fn raster_batch(f: &FrameUniforms, batch: &Batch, first: usize, positions: &[[f32; 3]], words: Option<&[u32]>, vis: &[AtomicU64]) {
        for (j, &pos) in positions.iter().enumerate() {
            let pos = match words {
                Some(w) => dequantize_pos(batch, w[j]),
                None => pos,
            };
            vis_point(f, pos, (first + j) as u64, vis);
        }
    }
}
