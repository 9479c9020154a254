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
//!
//! The CPU also culls inside a drawn batch, by groups of [`GROUP_POINTS`] points with a box each
//! ([`super::preprocess::Prepared::groups`]; no kernel does this, and the batch decisions and counts
//! stay the kernels'). After a frame, [`mark_groups`] marks the groups that own a pixel of the final
//! buffer. Phase 1 draws only the marked groups of its batches ([`Select::Marked`]); after the
//! pyramid, phase 2 draws the groups of its batches, and the unmarked groups of phase 1's batches that
//! [`phase2`] still finds visible ([`still_visible`]), each unless [`group_hidden`] says it lies outside
//! the view or strictly behind the pyramid ([`Select::Tested`]; in the quant mode tested with a box
//! widened to hold its decoded points). The marks only choose what phase 1 draws: every group phase 1
//! skips is tested in phase 2 with the same conservative tests as a batch, so the buffer is still the
//! one drawing every batch gives, bit for bit (the tests compare it with the `vis` mode's). On the
//! built-in scene this draws 25–40% fewer points where cylinders hide their own backs (start, top).
use super::batch::{batch_culled, batch_occluded, batch_quantized_ok};
use super::private::Dest;
use super::scatter::words::draw_words;
use super::scatter::{draw_points, Payload, Private, Shared, Sink};
use super::simd::with_fma;
use super::preprocess::GROUP_POINTS;
use crate::render::gpu_data::{word_payload, Batch, FrameUniforms, HzbParams, BATCH_POINTS, EMPTY_PAYLOAD};
use crate::render::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

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

/// One batch's points into the visibility buffer: from `words` (quantized, decoded as they are drawn)
/// or `positions`.
#[inline(always)]
fn raster_points<S: Sink>(f: &FrameUniforms, batch: &Batch, first: usize, positions: &[[f32; 3]], words: Option<&[u32]>, sink: &mut S) {
    match words {
        Some(words) => draw_words(f, batch, words, first as u64, sink),
        None => draw_points(f, positions, Payload::Index(first as u64), sink),
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
    raster_groups(f, batches, &[], list, positions, quant, draw_quantized, Dest::Shared(vis), Select::Every).0
}

/// Which groups ([`GROUP_POINTS`] points, [`Prepared::groups`](super::preprocess::Prepared)) of a
/// listed batch [`raster_groups`] draws.
#[derive(Clone, Copy)]
pub enum Select<'a> {
    /// All of its points.
    Every,
    /// The groups whose mark is set (phase 1: those that owned a pixel last frame, [`mark_groups`]).
    Marked(&'a [AtomicU8]),
    /// The groups not [`group_hidden`] behind the pyramid; with marks, only the unmarked ones (the rest
    /// of a batch phase 1 drew).
    Tested { h: &'a HzbParams, hzb: &'a [u32], unmarked: Option<&'a [AtomicU8]> },
}

/// A group's box for the tests: in a batch drawn from 10-bit words, widened by the batch's step and
/// 2^-20 of the coordinate, so that it holds the decoded points (each within 0.5001 of a step and two
/// ulps of its own position, [`batch_quantized_ok`]).
#[inline(always)]
fn test_box(g: &Batch, batch: &Batch, quantized: bool) -> Batch {
    if !quantized {
        return *g;
    }
    let mut b = *g;
    for k in 0..3 {
        let d = batch.scale[k] + g.min[k].abs().max(g.max[k].abs()) * 9.536_743e-7; // 2^-20
        b.min[k] = g.min[k] - d;
        b.max[k] = g.max[k] + d;
    }
    b
}

/// Whether no point of the group (box `g`, possibly widened by [`test_box`]) can show: outside the
/// view ([`batch_culled`]) or strictly behind the pyramid ([`batch_occluded`]). Both tests hold for any
/// box that holds the points, so skipping such a group leaves the buffer as drawing it would.
#[inline(always)]
pub fn group_hidden(f: &FrameUniforms, h: &HzbParams, hzb: &[u32], g: &Batch) -> bool {
    batch_culled(f, g) || batch_occluded(f, h, g, hzb)
}

/// Points `from..to` of `batch` (a plain function, not a closure: inlined into the caller's AVX2 and
/// FMA code, which a closure is not always).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn draw_run<S: Sink>(f: &FrameUniforms, batch: &Batch, from: usize, to: usize, positions: &[[f32; 3]], quant: &[u32], quantized: bool, sink: &mut S) {
    let words = if quantized { Some(&quant[from..to]) } else { None };
    raster_points(f, batch, from, &positions[from..to], words, sink);
}

/// What [`raster_selected`] reads: group boxes, positions, quantized words.
#[derive(Clone, Copy)]
struct Arrays<'a> {
    groups: &'a [Batch],
    positions: &'a [[f32; 3]],
    quant: &'a [u32],
}

with_fma! {
    /// One listed batch: its selected groups, consecutive ones drawn as one run.
    fn raster_selected<S: Sink>(
        f: &FrameUniforms,
        b: usize,
        batch: &Batch,
        data: &Arrays<'_>,
        quantized: bool,
        select: &Select<'_>,
        sink: &mut S,
    ) -> u64 {
        let Arrays { groups, positions, quant } = *data;
        let per = BATCH_POINTS as usize;
        let (first, end) = (b * per, (b * per + batch.num_points as usize).min(positions.len()));
        if groups.is_empty() {
            if matches!(select, Select::Tested { unmarked: Some(_), .. }) {
                return 0;
            }
            draw_run(f, batch, first, end, positions, quant, quantized, sink);
            return (end - first) as u64;
        }
        let mut run: Option<usize> = None;
        let mut from = first;
        let mut drawn = 0;
        while from < end {
            let to = (from + GROUP_POINTS).min(end);
            let g = from / GROUP_POINTS;
            let take = match *select {
                Select::Every => true,
                Select::Marked(marks) => marks[g].load(Ordering::Relaxed) != 0,
                Select::Tested { h, hzb, unmarked } => {
                    unmarked.is_none_or(|m| m[g].load(Ordering::Relaxed) == 0) && !group_hidden(f, h, hzb, &test_box(&groups[g], batch, quantized))
                }
            };
            match (take, run) {
                (true, None) => run = Some(from),
                (false, Some(start)) => {
                    draw_run(f, batch, start, from, positions, quant, quantized, sink);
                    drawn += from - start;
                    run = None;
                }
                _ => {}
            }
            from = to;
        }
        if let Some(start) = run {
            draw_run(f, batch, start, end, positions, quant, quantized, sink);
            drawn += end - start;
        }
        drawn as u64
    }
}

/// Listed batches a private draw task takes at a time ([`super::private::PrivateBuffers::run`]).
const PRIVATE_STEP_BATCHES: usize = 2;

/// Draws the batches of `list` as [`raster_list`] does, but of each only the groups `select` picks
/// (every point when `groups` is empty: no groups, whole batches), into `dest`. The counts are
/// [`raster_list`]'s: one per listed batch; then the number of points drawn.
#[allow(clippy::too_many_arguments)]
pub fn raster_groups(
    f: &FrameUniforms,
    batches: &[Batch],
    groups: &[Batch],
    list: &[u32],
    positions: &[[f32; 3]],
    quant: &[u32],
    draw_quantized: bool,
    dest: Dest<'_>,
    select: Select<'_>,
) -> (BatchCounts, u64) {
    assert_eq!(batches.len(), positions.len().div_ceil(BATCH_POINTS as usize), "one batch per BATCH_POINTS points");
    assert!(groups.is_empty() || groups.len() == positions.len().div_ceil(GROUP_POINTS), "one group per GROUP_POINTS points");
    let one = |b: u32, sink: &mut dyn FnMut(usize, &Batch, &Arrays<'_>, bool) -> u64| {
        let (b, batch) = (b as usize, &batches[b as usize]);
        let coarse = batch_quantized_ok(f, batch);
        let data = Arrays { groups, positions, quant };
        let points = sink(b, batch, &data, draw_quantized && coarse);
        let coarse = coarse as u32;
        (BatchCounts { quantized: coarse, full: 1 - coarse, ..BatchCounts::default() }, points)
    };
    let add = |a: (BatchCounts, u64), b: (BatchCounts, u64)| (a.0.add(&b.0), a.1 + b.1);
    match dest {
        Dest::Shared(vis) => {
            assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
            list.par_iter()
                .map(|&b| one(b, &mut |b, batch, data, quantized| raster_selected(f, b, batch, data, quantized, &select, &mut Shared(vis))))
                .reduce(|| (BatchCounts::default(), 0), add)
        }
        Dest::Private(p) => p.run(
            list.len(),
            PRIVATE_STEP_BATCHES,
            |items, buf| {
                assert_eq!(buf.len(), f.width as usize * f.height as usize, "visibility buffer size");
                let mut sink = Private(buf);
                list[items]
                    .iter()
                    .map(|&b| one(b, &mut |b, batch, data, quantized| raster_selected(f, b, batch, data, quantized, &select, &mut sink)))
                    .fold((BatchCounts::default(), 0), add)
            },
            add,
        ),
    }
}

/// Marks the group of every point that owns a pixel of the buffer `vis` (whose payloads are point
/// indices), after clearing every mark: next frame's phase 1 draws those groups.
pub fn mark_groups(vis: &[AtomicU64], marks: &[AtomicU8]) {
    marks.par_iter().for_each(|m| m.store(0, Ordering::Relaxed));
    vis.par_chunks(1 << 16).for_each(|chunk| {
        for v in chunk {
            let i = word_payload(v.load(Ordering::Relaxed));
            if i != EMPTY_PAYLOAD {
                if let Some(m) = marks.get((i / GROUP_POINTS as u64) as usize) {
                    m.store(1, Ordering::Relaxed);
                }
            }
        }
    });
}

/// The batches of `list1` (drawn in phase 1) that [`phase2`] found visible (`visible[b] != 0`): the
/// rest of their groups may still show. A batch it found hidden holds no point that can.
pub fn still_visible(list1: &[u32], visible: &[u8]) -> Vec<u32> {
    list1.iter().copied().filter(|&b| visible[b as usize] != 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::{FlyCamera, Pose};
    use crate::cloud::{Point, PointCloud};
    use crate::render::cpu::CpuRasterizer;
    use crate::render::{FrameParams, Rasterizer, RenderMode, Target};

    /// The built-in scene from poses that move frame to frame (so the marks of last frame are stale):
    /// the culled mode with group culling gives the `vis` mode's buffer bit for bit, and the quant mode
    /// the buffer it gives without group culling; and group culling draws fewer points where the
    /// cylinders hide their backs.
    #[test]
    fn group_culling_keeps_every_buffer_bit_for_bit() {
        let cloud = crate::cloud::scene::generate(400_000, 7, false);
        let (w, h) = (480, 270);
        let mut with = CpuRasterizer::new();
        with.set_group_culling(true);
        with.upload(&cloud).unwrap();
        let mut without = CpuRasterizer::new();
        without.set_group_culling(false);
        without.upload(&cloud).unwrap();
        let poses = crate::bench::scenarios(&cloud);
        let (mut checked, mut fewer) = (0, 0);
        for round in 0..2 {
            for sc in &poses {
                // Twice through the poses: the first frame at each comes after another pose's marks.
                let mut pose = sc.pose;
                pose.yaw_rad += round as f32 * 0.05;
                let cam = crate::camera::Camera::start_for(&cloud, Some(pose));
                let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                    .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                let mut want = vec![0u32; frame.num_pixels()];
                without.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut want)).unwrap();
                let want_depth = without.depth_bits();
                let mut want_q = vec![0u32; frame.num_pixels()];
                without.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut want_q)).unwrap();
                let want_q_depth = without.depth_bits();
                for k in 0..2 {
                    let mut px = vec![0u32; frame.num_pixels()];
                    with.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
                    assert!(px == want && with.depth_bits() == want_depth, "culled, pose {} round {round} frame {k}", sc.name);
                    with.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut px)).unwrap();
                    assert!(px == want_q && with.depth_bits() == want_q_depth, "quant, pose {} round {round} frame {k}", sc.name);
                    checked += 1;
                    let mut whole = vec![0u32; frame.num_pixels()];
                    without.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut whole)).unwrap();
                    with.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
                    let (a, b) = (with.points_drawn().unwrap(), without.points_drawn().unwrap());
                    assert!(a <= b + cloud.points.len() as u64 / 10, "pose {}: {a} points with groups, {b} without", sc.name);
                    fewer += (a * 10 < b * 9) as u32;
                }
            }
        }
        assert_eq!(checked, 4 * poses.len());
        assert!(fewer > 0, "group culling should draw at least 10% fewer points at some pose");
    }

    /// The marks: every group with a point that owns a pixel, and no other.
    #[test]
    fn mark_groups_marks_the_groups_that_own_pixels() {
        use crate::render::gpu_data::word;
        let vis: Vec<AtomicU64> = [word(5, 3), word(7, 600), word(1, EMPTY_PAYLOAD), word(2, 601)].into_iter().map(AtomicU64::new).collect();
        let marks: Vec<AtomicU8> = (0..4).map(|i| AtomicU8::new((i == 3) as u8)).collect();
        mark_groups(&vis, &marks);
        let got: Vec<u8> = marks.iter().map(|m| m.load(Ordering::Relaxed)).collect();
        assert_eq!(got, [1, 0, 1, 0], "groups 0 (point 3) and 2 (points 600, 601); group 3's old mark cleared");
    }

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
