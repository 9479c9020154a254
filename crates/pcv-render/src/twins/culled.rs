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
//! The `_filtered` passes (the kernels' `_filtered` entry points) apply a [`Filtering`] too
//! ([`super::filter`]): a batch no point of which can pass is skipped in both phases (counted as
//! filtered, not visible next frame), a batch that passes whole is drawn as without it, the others
//! point by point.
//!
//! High quality's pass in these modes ([`blend_cull`], [`blend_list`]: the kernels' `pcv_blend_cull` and
//! `pcv_blend_list`) lists every batch in the view (past the filter's summaries, and not wholly beyond
//! the blend window of a pyramid of the final buffer: [`final_pyramid`]) and gives their
//! points, read as [`raster_list`] reads them, the blend step of [`super::blend`] instead of the atomic
//! min ([`Step`]).
//!
//! The CPU backend draws the same frames faster (`crate::cpu::culled`: groups of points culled inside
//! a drawn batch, per-thread buffers), tested against these passes.
use super::batch::{batch_culled, batch_occluded, batch_quantized_ok, dequantize_pos};
use super::blend::{batch_beyond_window, blend_at, BlendTarget};
use super::filter::{filter_batch, filter_point, Columns};
use super::project::project;
use super::vis::vis_point;
use crate::gpu_data::{filter_says, Batch, FilterUniforms, FrameUniforms, HzbParams, PostUniforms, BATCH_POINTS};
use crate::simd::with_fma;
use crate::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

/// Batches a task of [`phase1`] or [`phase2`] tests (each task one call of an FMA-compiled loop).
const TEST_STEP_BATCHES: usize = 256;

/// The filter of the `_filtered` passes: its uniforms and the columns of the tests it makes.
#[derive(Clone, Copy)]
pub struct Filtering<'a> {
    pub uniforms: &'a FilterUniforms,
    pub columns: Columns<'a>,
}

impl Filtering<'_> {
    /// What batch `b`'s summaries say ([`filter_says`]).
    fn says(&self, b: usize, batch: &Batch) -> u32 {
        filter_batch(self.uniforms, &self.columns, b, batch)
    }
}

/// What a drawn point does: the raster's atomic min into the visibility buffer, or high quality's blend
/// step (the kernels' `BLEND` template parameter).
#[derive(Clone, Copy)]
pub enum Step<'a> {
    Vis(&'a [AtomicU64]),
    Blend(&'a BlendTarget<'a>),
}

impl Step<'_> {
    #[inline(always)]
    fn point(&self, f: &FrameUniforms, pos: [f32; 3], index: u64) {
        match self {
            Step::Vis(vis) => vis_point(f, pos, index, vis),
            Step::Blend(t) => {
                if let Some(p) = project(f, pos) {
                    blend_at(t, p.index(f.width), p.depth_bits, index);
                }
            }
        }
    }
}

with_fma! {
    /// Appends to `out` the index of each batch of `batches` (the first being batch `first`) that was
    /// visible last frame, lies in the view and (with `filter`) may hold a point that passes.
    fn phase1_chunk(f: &FrameUniforms, filter: Option<&Filtering>, batches: &[Batch], visible: &[u8], first: usize, out: &mut Vec<u32>) {
        for (j, (b, &v)) in batches.iter().zip(visible).enumerate() {
            if v == 0 || batch_culled(f, b) {
                continue;
            }
            if filter.is_some_and(|fl| fl.says(first + j, b) == filter_says::NONE) {
                continue;
            }
            out.push((first + j) as u32);
        }
    }
}

/// The batches visible last frame (`visible[b] != 0`) that lie in the view, in batch order.
pub fn phase1(f: &FrameUniforms, batches: &[Batch], visible: &[u8]) -> Vec<u32> {
    phase1_filtered(f, None, batches, visible)
}

/// [`phase1`] with a filter (`pcv_cull_phase1_filtered`): batches no point of which passes are left out.
pub fn phase1_filtered(f: &FrameUniforms, filter: Option<&Filtering>, batches: &[Batch], visible: &[u8]) -> Vec<u32> {
    assert_eq!(visible.len(), batches.len(), "one visibility byte per batch");
    let lists: Vec<Vec<u32>> = batches
        .par_chunks(TEST_STEP_BATCHES)
        .zip(visible.par_chunks(TEST_STEP_BATCHES))
        .enumerate()
        .map(|(c, (bs, vs))| {
            let mut out = Vec::new();
            phase1_chunk(f, filter, bs, vs, c * TEST_STEP_BATCHES, &mut out);
            out
        })
        .collect();
    lists.concat()
}

with_fma! {
    /// [`phase2`]'s decision for each batch of `batches`: sets its `visible` byte and writes `decided`
    /// (0 drawn in phase 1, 1 outside the view, 2 hidden, 3 to draw now, 4 dropped by the filter; with
    /// `filter`, the first of `batches` is batch `first`).
    fn phase2_chunk(f: &FrameUniforms, filter: Option<(&Filtering, usize)>, h: &HzbParams, batches: &[Batch], visible: &mut [u8], hzb: &[u32], decided: &mut [u8]) {
        for (j, ((b, vis), d)) in batches.iter().zip(visible.iter_mut()).zip(decided.iter_mut()).enumerate() {
            let was_visible = *vis != 0;
            if batch_culled(f, b) {
                *vis = 0;
                *d = 1;
                continue;
            }
            if filter.is_some_and(|(fl, first)| fl.says(first + j, b) == filter_says::NONE) {
                *vis = 0;
                *d = 4;
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
    phase2_filtered(f, None, h, batches, visible, hzb)
}

/// [`phase2`] with a filter (`pcv_cull_phase2_filtered`): batches no point of which passes are not
/// drawn, not visible next frame, and counted as filtered.
pub fn phase2_filtered(
    f: &FrameUniforms,
    filter: Option<&Filtering>,
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
        .enumerate()
        .for_each(|(c, ((bs, vs), ds))| {
            phase2_chunk(f, filter.map(|fl| (fl, c * TEST_STEP_BATCHES)), h, bs, vs, hzb, ds)
        });
    let mut counts = BatchCounts::default();
    let mut list = Vec::new();
    for (b, &d) in decided.iter().enumerate() {
        match d {
            1 => counts.culled += 1,   // outside the view
            2 => counts.occluded += 1, // hidden: skipped
            3 => list.push(b as u32),  // to draw now
            4 => counts.filtered += 1, // no point passes the filter
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
    raster_list_filtered(f, None, batches, list, positions, quant, draw_quantized, vis)
}

/// [`raster_list`] with a filter (`pcv_raster_list_filtered`): batches whose summaries cannot tell draw
/// their kept lists' points (`twins::kept`), or without lists test each point (as drawn: decoded from
/// its word in the quant mode).
#[expect(clippy::too_many_arguments, reason = "the kernel's parameters, one for one")]
pub fn raster_list_filtered(
    f: &FrameUniforms,
    filter: Option<&Filtering>,
    batches: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    vis: &[AtomicU64],
) -> BatchCounts {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    draw_list(f, filter, batches, list, positions, quant, draw_quantized, Step::Vis(vis))
}

/// The batches of the blend pass in the culled modes (`pcv_blend_cull`, with a filter
/// `pcv_blend_cull_filtered`): every batch in the view whose summaries let a point pass and that is not
/// wholly past the blend window of `hzb`, the pyramid of the frame's final buffer
/// ([`super::blend::batch_beyond_window`]), in batch order.
pub fn blend_cull(
    f: &FrameUniforms,
    u: &PostUniforms,
    filter: Option<&Filtering>,
    h: &HzbParams,
    batches: &[Batch],
    hzb: &[u32],
) -> Vec<u32> {
    batches
        .par_iter()
        .enumerate()
        .filter(|&(b, batch)| {
            !batch_culled(f, batch)
                && filter.is_none_or(|fl| fl.says(b, batch) != filter_says::NONE)
                && !batch_beyond_window(f, u, h, batch, hzb)
        })
        .map(|(b, _)| b as u32)
        .collect()
}

/// The pyramid of a visibility buffer (`pcv_hzb_tiles` and `pcv_hzb_up` on it): phase 1's for phase 2,
/// the final buffer's for [`blend_cull`].
pub fn final_pyramid(f: &FrameUniforms, vis: &[AtomicU64]) -> (HzbParams, Vec<u32>) {
    let h = HzbParams::for_frame(f.width, f.height);
    let mut hzb = vec![0u32; h.total as usize];
    super::hzb::build_from_words(&h, f.width, f.height, vis, &mut hzb);
    (h, hzb)
}

/// High quality's pass over the batches of `list` (`pcv_blend_list`, with a filter
/// `pcv_blend_list_filtered`): their points, read as [`raster_list_filtered`] reads them, each take the
/// blend step against the final buffer of `t`.
#[expect(clippy::too_many_arguments, reason = "the kernel's parameters, one for one")]
pub fn blend_list(
    f: &FrameUniforms,
    filter: Option<&Filtering>,
    batches: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    t: &BlendTarget<'_>,
) {
    draw_list(f, filter, batches, list, positions, quant, draw_quantized, Step::Blend(t));
}

/// The points of the batches of `list` (as [`raster_list_filtered`] describes), each given `step`.
#[expect(clippy::too_many_arguments, reason = "the kernel's parameters, one for one")]
fn draw_list(
    f: &FrameUniforms,
    filter: Option<&Filtering>,
    batches: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    step: Step<'_>,
) -> BatchCounts {
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    list.par_iter()
        .map(|&b| {
            let batch = &batches[b as usize];
            let coarse = batch_quantized_ok(f, batch);
            let first = b as usize * BATCH_POINTS as usize;
            let end = (first + batch.num_points as usize).min(positions.len());
            let words = (draw_quantized && coarse).then(|| &quant[first..end]);
            let test = filter.filter(|fl| fl.says(b as usize, batch) == filter_says::SOME);
            match test.filter(|fl| !fl.columns.kept_first.is_empty()) {
                // A kept list: its points, untested.
                Some(fl) => {
                    let (k0, k1) = (fl.columns.kept_first[b as usize], fl.columns.kept_first[b as usize + 1]);
                    let listed = &fl.columns.kept[k0 as usize..k1 as usize];
                    raster_listed(f, batch, first, &positions[first..end], words, listed, step);
                }
                None => raster_batch(f, test, batch, first, &positions[first..end], words, step),
            }
            let coarse = coarse as u32;
            BatchCounts { quantized: coarse, full: 1 - coarse, ..BatchCounts::default() }
        })
        .reduce(BatchCounts::default, |a, b| a.add(&b))
}

with_fma! {
    /// One batch's points (`first` the first one's index), from their 10-bit `words` or positions;
    /// with `test`, only those that pass its filter.
    fn raster_batch(f: &FrameUniforms, test: Option<&Filtering>, batch: &Batch, first: usize, positions: &[[f32; 3]], words: Option<&[u32]>, step: Step<'_>) {
        for (j, &pos) in positions.iter().enumerate() {
            let pos = match words {
                Some(w) => dequantize_pos(batch, w[j]),
                None => pos,
            };
            if let Some(fl) = test {
                if !filter_point(fl.uniforms, &fl.columns, first + j, pos) {
                    continue;
                }
            }
            step.point(f, pos, (first + j) as u64);
        }
    }
}

with_fma! {
    /// The points `listed` (indices inside the batch) of one batch, from their words or positions.
    fn raster_listed(f: &FrameUniforms, batch: &Batch, first: usize, positions: &[[f32; 3]], words: Option<&[u32]>, listed: &[u16], step: Step<'_>) {
        for &j in listed {
            let j = j as usize;
            let pos = match words {
                Some(w) => dequantize_pos(batch, w[j]),
                None => positions[j],
            };
            step.point(f, pos, (first + j) as u64);
        }
    }
}

/// A whole frame of the culled modes on the twins, as the CUDA backend runs its passes: clear, phase 1
/// and its draw, the depth pyramid, phase 2 and its draw, with `filter` applied (the `_filtered` entry
/// points) or not. `visible` carries the batches' visibility from frame to frame (zeros at upload).
/// Returns the visibility buffer and the counts (phase 2's, and the batches drawn).
pub fn frame(
    f: &FrameUniforms,
    table: &super::preprocess::Table,
    filter: Option<&Filtering>,
    visible: &mut [u8],
    draw_quantized: bool,
) -> (Vec<AtomicU64>, BatchCounts) {
    let mut vis: Vec<AtomicU64> = (0..f.width as usize * f.height as usize).map(|_| AtomicU64::new(0)).collect();
    super::vis::vis_clear(&mut vis);
    let (pos, quant) = (&table.positions, &table.quant);
    let list1 = phase1_filtered(f, filter, &table.batches, visible);
    let drawn1 = raster_list_filtered(f, filter, &table.batches, &list1, pos, quant, draw_quantized, &vis);
    let (h, hzb) = final_pyramid(f, &vis);
    let (list2, counts) = phase2_filtered(f, filter, &h, &table.batches, visible, &hzb);
    let drawn2 = raster_list_filtered(f, filter, &table.batches, &list2, pos, quant, draw_quantized, &vis);
    (vis, counts.add(&drawn1).add(&drawn2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::{word_depth, word_payload, EMPTY_PAYLOAD};
    use crate::twins::{classes, preprocess};
    use glam::{DVec3, Mat4, Vec3};
    use pcv_io::filter::{ClipBox, ClipPlane, Keep, PointFilter};
    use pcv_io::Point;
    use std::sync::atomic::Ordering;

    /// A terrain of ground (class 2) with "trees" (class 5) and a "house" (class 6), sorted as the
    /// preprocessing sorts, with its class codes in that order.
    fn scene() -> (Vec<Point>, Vec<u8>) {
        let mut pts = Vec::new();
        for i in 0..400u32 {
            for j in 0..400u32 {
                let (x, y) = (i as f32 * 0.25, j as f32 * 0.25);
                let z = (x * 0.05).sin() * 2.0 + (y * 0.03).cos();
                let class = if (x - 30.0).abs() < 6.0 && (y - 60.0).abs() < 8.0 {
                    6
                } else if ((i * 7 + j * 13) % 97) < 30 {
                    5
                } else {
                    2
                };
                let lift = match class {
                    5 => 3.0 + ((i + j) % 5) as f32,
                    6 => 6.0,
                    _ => 0.0,
                };
                pts.push((Point::new([x, y, z + lift], [class, i as u8, j as u8, 255]), class));
            }
        }
        let cloud: Vec<Point> = pts.iter().map(|p| p.0).collect();
        let bounds = pcv_io::Bounds::of_points(&cloud);
        let g = preprocess::grid_params(&bounds, cloud.len() as u64);
        pts.sort_by_key(|(p, _)| preprocess::cell_key(&g, p.pos));
        (pts.iter().map(|p| p.0).collect(), pts.iter().map(|p| p.1).collect())
    }

    fn uniforms_at(eye: Vec3, target: Vec3, w: u32, h: u32) -> FrameUniforms {
        let view = Mat4::look_at_rh(eye, target, Vec3::Z);
        let proj = Mat4::perspective_rh_gl(1.0, w as f32 / h as f32, 0.5, 500.0);
        crate::FrameParams::new(proj * view, w, h).uniforms()
    }

    fn depths(vis: &[AtomicU64]) -> Vec<u32> {
        vis.iter().map(|v| word_depth(v.load(Ordering::Relaxed))).collect()
    }

    fn sums(a: &[AtomicU64]) -> Vec<u64> {
        a.iter().map(|v| v.load(Ordering::Relaxed)).collect()
    }

    /// High quality's pass over the batches in view and not past the window blends exactly what the pass
    /// over every point blends (the cull is conservative), and with a filter exactly what the kept points
    /// alone blend.
    #[test]
    fn the_blend_over_the_batches_in_view_is_the_blend_over_every_point() {
        use crate::twins::blend::{blend, blend_sums, BlendTarget};
        use crate::twins::kept::kept_lists;
        let (points, codes) = scene();
        let table = preprocess::prepare(&points);
        let sets = classes::batch_classes(&codes);
        let mut hide_trees = PointFilter::default();
        hide_trees.set_class_shown(5, false);
        let fu = crate::filter::uniforms(&hide_trees, DVec3::ZERO, false).unwrap();
        let fl = Filtering { uniforms: &fu, columns: Columns::of_classes(&codes, &sets) };
        let (first, lists) = kept_lists(&fu, &fl.columns, &table.batches, &table.positions);
        let fl = Filtering { columns: Columns { kept_first: &first, kept: &lists, ..fl.columns }, ..fl };
        let kept: Vec<Point> = points.iter().zip(&codes).filter(|(_, &c)| c != 5).map(|(p, _)| *p).collect();
        let kept_table = preprocess::prepare(&kept);
        let (w, h) = (320, 200);
        let mut blended_somewhere = false;
        for (eye, target) in [
            (Vec3::new(50.0, -40.0, 60.0), Vec3::new(50.0, 50.0, 0.0)),
            (Vec3::new(20.0, 20.0, 8.0), Vec3::new(60.0, 60.0, 0.0)),
        ] {
            let view = Mat4::look_at_rh(eye, target, Vec3::Z);
            let proj = Mat4::perspective_rh_gl(1.0, w as f32 / h as f32, 0.5, 500.0);
            let fp = crate::FrameParams::new(proj * view, w, h).with_depth_range(0.5, 500.0);
            let (f, u) = (fp.uniforms(), fp.post_uniforms());
            let (vis, _) = frame(&f, &table, None, &mut vec![0u8; table.batches.len()], false);
            let every = blend_sums(w, h);
            blend(&f, &table.positions, &BlendTarget { u: &u, vis: &vis, colors: &table.colors, accum: &every });
            let listed = blend_sums(w, h);
            let (hp, hzb) = final_pyramid(&f, &vis);
            let list = blend_cull(&f, &u, None, &hp, &table.batches, &hzb);
            let t = BlendTarget { u: &u, vis: &vis, colors: &table.colors, accum: &listed };
            blend_list(&f, None, &table.batches, &list, &table.positions, &table.quant, false, &t);
            assert_eq!(sums(&every), sums(&listed), "{eye}: the batches in view blend as every point does");
            let counts: Vec<u64> = sums(&every).chunks(2).map(|p| p[1] >> 32).collect();
            blended_somewhere |= counts.iter().any(|&c| c > 1);
            // Filtered: the kept points alone, drawn and blended without a filter, give the same sums.
            let (vis_f, _) = frame(&f, &table, Some(&fl), &mut vec![0u8; table.batches.len()], false);
            let filtered = blend_sums(w, h);
            let (hp, hzb) = final_pyramid(&f, &vis_f);
            let list = blend_cull(&f, &u, Some(&fl), &hp, &table.batches, &hzb);
            let t = BlendTarget { u: &u, vis: &vis_f, colors: &table.colors, accum: &filtered };
            blend_list(&f, Some(&fl), &table.batches, &list, &table.positions, &table.quant, false, &t);
            let (vis_k, _) = frame(&f, &kept_table, None, &mut vec![0u8; kept_table.batches.len()], false);
            let alone = blend_sums(w, h);
            let t = BlendTarget { u: &u, vis: &vis_k, colors: &kept_table.colors, accum: &alone };
            blend(&f, &kept_table.positions, &t);
            assert_eq!(sums(&filtered), sums(&alone), "{eye}: a filtered blend is the kept points' blend");
        }
        assert!(blended_somewhere, "no pixel blended two points: the test shows nothing");
    }

    /// A field of ground with a roof 10 m above a third of it, seen from 200 m up: the batches of ground
    /// under the roof lie 5 % behind it, past the window, and the blend skips them; what it blends is
    /// still exactly what every point gives.
    #[test]
    fn the_blend_skips_the_batches_past_the_window() {
        use crate::twins::blend::{blend, blend_sums, BlendTarget};
        let mut pts = Vec::new();
        for i in 0..800u32 {
            for j in 0..800u32 {
                let (x, y) = (i as f32 * 0.125, j as f32 * 0.125);
                pts.push(Point::new([x, y, 0.0], [(i % 256) as u8, (j % 256) as u8, 90, 255]));
                if x < 40.0 && j % 2 == 0 {
                    pts.push(Point::new([x, y, 10.0], [200, 40, 40, 255]));
                }
            }
        }
        let bounds = pcv_io::Bounds::of_points(&pts);
        let g = preprocess::grid_params(&bounds, pts.len() as u64);
        pts.sort_by_key(|p| preprocess::cell_key(&g, p.pos));
        let table = preprocess::prepare(&pts);
        let (w, h) = (256, 256);
        let view = Mat4::look_at_rh(Vec3::new(50.0, 50.0, 200.0), Vec3::new(50.0, 50.1, 0.0), Vec3::Z);
        let proj = Mat4::perspective_rh_gl(0.6, 1.0, 1.0, 1000.0);
        let fp = crate::FrameParams::new(proj * view, w, h).with_depth_range(1.0, 1000.0);
        let (f, u) = (fp.uniforms(), fp.post_uniforms());
        let (vis, _) = frame(&f, &table, None, &mut vec![0u8; table.batches.len()], false);
        let (hp, hzb) = final_pyramid(&f, &vis);
        let list = blend_cull(&f, &u, None, &hp, &table.batches, &hzb);
        let in_view = table.batches.iter().filter(|b| !batch_culled(&f, b)).count();
        assert!(list.len() * 10 < in_view * 9, "{} of {in_view} batches in view blended: few skipped", list.len());
        let (every, listed) = (blend_sums(w, h), blend_sums(w, h));
        blend(&f, &table.positions, &BlendTarget { u: &u, vis: &vis, colors: &table.colors, accum: &every });
        let t = BlendTarget { u: &u, vis: &vis, colors: &table.colors, accum: &listed };
        blend_list(&f, None, &table.batches, &list, &table.positions, &table.quant, false, &t);
        assert_eq!(sums(&every), sums(&listed), "the skipped batches held a point to blend");
    }

    #[test]
    fn a_filtered_frame_equals_the_frame_of_the_kept_points() {
        let (points, codes) = scene();
        let table = preprocess::prepare(&points);
        let sets = classes::batch_classes(&codes);
        let mut filter = PointFilter::default();
        filter.set_class_shown(5, false);
        filter.boxes.push(ClipBox::from_min_max(
            DVec3::new(10.0, 10.0, -10.0),
            DVec3::new(90.0, 80.0, 50.0),
            Keep::Inside,
        ));
        let mut hole =
            ClipBox::from_min_max(DVec3::new(40.0, 20.0, -10.0), DVec3::new(55.0, 30.0, 50.0), Keep::Outside);
        hole.rotation = glam::DQuat::from_rotation_z(0.4);
        filter.boxes.push(hole);
        filter.planes.push(ClipPlane { point: DVec3::new(0.0, 0.0, 0.5), normal: DVec3::Z });
        let fu = crate::filter::uniforms(&filter, DVec3::ZERO, false).unwrap();
        let fl = Filtering { uniforms: &fu, columns: Columns::of_classes(&codes, &sets) };
        // The kept points (in their order), drawn without a filter.
        let kept: Vec<Point> = points
            .iter()
            .enumerate()
            .filter(|&(i, p)| super::super::filter::filter_point(&fu, &fl.columns, i, p.pos))
            .map(|(_, p)| *p)
            .collect();
        assert!(kept.len() > 20_000 && kept.len() < points.len() / 2, "{}", kept.len());
        let kept_table = preprocess::prepare(&kept);
        // The same filter with its kept lists, as the CUDA backend sets it.
        let (first, lists) = super::super::kept::kept_lists(&fu, &fl.columns, &table.batches, &table.positions);
        let listed_points = lists.len();
        let fl_listed =
            Filtering { uniforms: &fu, columns: Columns { kept_first: &first, kept: &lists, ..fl.columns } };
        assert!(listed_points > 1000 && first.len() == table.batches.len() + 1, "{listed_points} listed");
        let (w, h) = (320, 200);
        for (eye, target) in [
            (Vec3::new(50.0, -40.0, 60.0), Vec3::new(50.0, 50.0, 0.0)),
            (Vec3::new(20.0, 20.0, 8.0), Vec3::new(60.0, 60.0, 0.0)),
            (Vec3::new(50.0, 50.0, 150.0), Vec3::new(50.0, 50.1, 0.0)),
        ] {
            let f = uniforms_at(eye, target, w, h);
            for (quant, fl) in [(false, &fl), (true, &fl), (false, &fl_listed), (true, &fl_listed)] {
                let mut visible = vec![0u8; table.batches.len()];
                let mut visible_kept = vec![0u8; kept_table.batches.len()];
                for round in 0..2 {
                    let (vis, counts) = frame(&f, &table, Some(fl), &mut visible, quant);
                    let (vis_kept, _) = frame(&f, &kept_table, None, &mut visible_kept, quant);
                    // Every pixel drawn is a kept point's, and (full precision) at the depth the kept
                    // points alone give.
                    for v in &vis {
                        let i = word_payload(v.load(Ordering::Relaxed));
                        if i != EMPTY_PAYLOAD {
                            assert!(codes[i as usize] != 5, "a hidden class was drawn");
                        }
                    }
                    if !quant {
                        assert_eq!(depths(&vis), depths(&vis_kept), "{eye} round {round}");
                    }
                    assert!(counts.filtered > 0, "{eye}: no batch was skipped by its summary");
                }
            }
        }
        // No filter: the filtered entry points draw what the plain ones draw.
        let f = uniforms_at(Vec3::new(50.0, -40.0, 60.0), Vec3::new(50.0, 50.0, 0.0), w, h);
        let none = crate::filter::uniforms(&PointFilter::default(), DVec3::ZERO, false).unwrap();
        let open = Filtering { uniforms: &none, columns: Columns::of_classes(&codes, &sets) };
        let (a, ca) = frame(&f, &table, Some(&open), &mut vec![0; table.batches.len()], false);
        let (b, cb) = frame(&f, &table, None, &mut vec![0; table.batches.len()], false);
        assert_eq!(depths(&a), depths(&b));
        assert_eq!((ca, cb.filtered), (cb, 0));
    }
}
