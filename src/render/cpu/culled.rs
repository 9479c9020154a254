//! The culled modes, the CPU twin of `kernels/culled.cu`: the visibility buffer drawn only from the
//! batches that can show, with two-phase occlusion culling, and in the quant mode 4-byte coordinates
//! where they are precise enough.
//!
//! [`phase1`] lists the batches that were visible last frame and lie in the view; [`raster_list`] draws
//! them; [`super::hzb::build`] makes the depth pyramid of that buffer; [`phase2`] tests every batch in
//! the view against it, records the answer as next frame's visibility, and lists those not drawn yet
//! that may show, which [`raster_list`] draws. Every test is conservative, so the buffer is the one
//! drawing every batch gives; the kernels' lists come in any order, these in batch order, which does
//! not change the buffer (an atomic min, ties to the smaller point index) nor the counts.
use super::batch::{batch_culled, batch_occluded, batch_quantized_ok, dequantize_pos};
use super::simd::with_fma;
use super::project::BATCH;
use super::vis::vis_points;
use crate::render::gpu_data::{Batch, FrameUniforms, HzbParams, BATCH_POINTS};
use crate::render::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

/// The batches visible last frame (`visible[b] != 0`) that lie in the view, in batch order.
pub fn phase1(f: &FrameUniforms, batches: &[Batch], visible: &[u8]) -> Vec<u32> {
    assert_eq!(visible.len(), batches.len(), "one visibility byte per batch");
    (0..batches.len() as u32)
        .into_par_iter()
        .filter(|&b| visible[b as usize] != 0 && !batch_culled(f, &batches[b as usize]))
        .collect()
}

/// Tests every batch against the view and the pyramid `hzb`, sets `visible` for the next frame, and
/// returns the batches still to draw (in the view, not hidden, not drawn in phase 1) with the counts of
/// batches outside the view and hidden.
pub fn phase2(f: &FrameUniforms, h: &HzbParams, batches: &[Batch], visible: &mut [u8], hzb: &[u32]) -> (Vec<u32>, BatchCounts) {
    assert_eq!(visible.len(), batches.len(), "one visibility byte per batch");
    let decided: Vec<(u8, u8)> = batches
        .par_iter()
        .zip(visible.par_iter_mut())
        .map(|(b, vis)| {
            let was_visible = *vis != 0;
            if batch_culled(f, b) {
                *vis = 0;
                return (1, 0); // outside the view
            }
            let occluded = batch_occluded(f, h, b, hzb);
            *vis = !occluded as u8;
            match (was_visible, occluded) {
                (true, _) => (0, 0),     // drawn in phase 1
                (false, true) => (2, 0), // hidden: skipped
                (false, false) => (0, 1), // to draw now
            }
        })
        .collect();
    let mut counts = BatchCounts::default();
    let mut list = Vec::new();
    for (b, &(skip, draw)) in decided.iter().enumerate() {
        match skip {
            1 => counts.culled += 1,
            2 => counts.occluded += 1,
            _ => {}
        }
        if draw == 1 {
            list.push(b as u32);
        }
    }
    (list, counts)
}

with_fma! {
    /// One batch's points into the visibility buffer: from `words` (quantized) or `positions`.
    fn raster_batch(f: &FrameUniforms, batch: &Batch, first: usize, positions: &[[f32; 3]], words: Option<&[u32]>, vis: &[AtomicU64]) {
        match words {
            Some(words) => {
                let mut pos = [[0f32; 3]; BATCH];
                for (k, group) in words.chunks(BATCH).enumerate() {
                    for (p, &w) in pos.iter_mut().zip(group) {
                        *p = dequantize_pos(batch, w);
                    }
                    vis_points(f, &pos[..group.len()], (first + k * BATCH) as u64, vis);
                }
            }
            None => vis_points(f, positions, first as u64, vis),
        }
    }
}

/// Draws the batches of `list` (the kernel's `pcv_raster_list`, or with `draw_quantized`
/// `pcv_raster_list_quant`: each batch drawn from its 10-bit words where [`batch_quantized_ok`]
/// allows). Returns how many batches that bound accepts (counted as quantized in both modes, as the
/// kernels count them; only the quant mode reads their words) and how many it does not.
pub fn raster_list(
    f: &FrameUniforms,
    batches: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    vis: &[AtomicU64],
) -> BatchCounts {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    let per = BATCH_POINTS as usize;
    list.par_iter()
        .map(|&b| {
            let (b, batch) = (b as usize, &batches[b as usize]);
            let (first, end) = (b * per, (b * per + batch.num_points as usize).min(positions.len()));
            let coarse = batch_quantized_ok(f, batch);
            let words = (draw_quantized && coarse).then(|| &quant[first..end]);
            raster_batch(f, batch, first, &positions[first..end], words, vis);
            let coarse = coarse as u32;
            BatchCounts { quantized: coarse, full: 1 - coarse, ..BatchCounts::default() }
        })
        .reduce(BatchCounts::default, |a, b| a.add(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::{FlyCamera, Pose};
    use crate::cloud::{Point, PointCloud};
    use crate::render::cpu::CpuRasterizer;
    use crate::render::{FrameParams, Rasterizer, RenderMode, Target};

    /// A wall in front of a smaller wall: once the first frame has drawn both, the hidden one's batches
    /// are skipped, and the image stays the one of drawing everything.
    #[test]
    fn a_wall_hides_what_is_behind_it() {
        let n_side: usize = 400;
        let wall = |x: f32, half: f32, c: u8| {
            (0..n_side * n_side).map(move |i| {
                let (u, v) = ((i % n_side) as f32 / n_side as f32, (i / n_side) as f32 / n_side as f32);
                Point::new([x, (u - 0.5) * 2.0 * half, (v - 0.5) * 2.0 * half], [c, c, c, 255])
            })
        };
        let pts: Vec<Point> = wall(0.0, 2.0, 200).chain(wall(1.0, 1.0, 90)).collect();
        let cloud = PointCloud::from_points(pts, glam::DVec3::ZERO, "walls");
        let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
        cam.pose = Pose { eye: glam::Vec3::new(-4.0, 0.0, 0.0), yaw_rad: 0.0, pitch_rad: 0.0 };
        let (w, h) = (320, 240);
        let frame = FrameParams::new(cam.clip_from_world(w, h), w, h);
        let mut r = CpuRasterizer::new();
        r.upload(&cloud).unwrap();
        let mut want = vec![0u32; frame.num_pixels()];
        r.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut want)).unwrap();
        let mut counts = Vec::new();
        for _ in 0..3 {
            let mut px = vec![0u32; frame.num_pixels()];
            let s = r.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
            assert_eq!(px, want, "the culled image equals the vis image");
            counts.push(s.batches.unwrap());
        }
        let back_batches = (n_side * n_side).div_ceil(BATCH_POINTS as usize) as u32;
        // Frame 1 draws everything (no history), frame 2 what frame 1 saw and marks the hidden, frame 3
        // skips them: most of the back wall (a few batches straddle both walls in Morton order).
        assert_eq!(counts[0].occluded + counts[1].occluded, 0, "{counts:?}");
        assert!(counts[2].occluded * 4 >= back_batches * 3, "the back wall's batches are skipped: {counts:?}");
        assert_eq!(counts[0].drawn() + counts[0].culled, (2 * n_side * n_side).div_ceil(BATCH_POINTS as usize) as u32, "{counts:?}");
    }
}
