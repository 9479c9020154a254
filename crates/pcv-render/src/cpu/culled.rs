//! The CPU backend's culled modes: the twin's passes ([`crate::twins::culled`]) drawn faster, the same
//! buffer bit for bit.
//!
//! How it works: the CPU also culls inside a drawn batch, by groups of [`group_points`] points with a box
//! each ([`Prepared::groups`](super::prepared::Prepared); no kernel does this: `set_group_culling(false)`
//! draws whole batches, the kernels' exact twin, counts included). After a frame, [`mark_groups`] marks
//! the groups that own a pixel of the final buffer. Phase 1 draws only the marked groups of its
//! batches ([`Select::Marked`]); after the pyramid, phase 2 draws the groups of its batches, and
//! the unmarked groups of phase 1's batches that the twin's `phase2` still finds visible
//! ([`still_visible`]), each unless [`group_hidden`] says it lies outside the view or strictly
//! behind the pyramid ([`Select::Tested`]; in the quant mode tested with a box widened to hold its
//! decoded points). The marks only choose what phase 1 draws: every group phase 1 skips is tested
//! in phase 2 with the same conservative tests as a batch, so the buffer is still the one drawing
//! every batch gives, bit for bit (the tests compare it with the `vis` twin's). The batch counts
//! can differ from the kernels' for a frame: where the marks are stale (the camera moved, the frame
//! size or the mode changed), phase 1 draws fewer points than the kernel's phase 1, so the pyramid
//! is farther and `phase2` keeps a batch visible that the kernel finds hidden, one frame longer.
//! On the built-in scene this draws 25–40% fewer points where cylinders hide their own backs
//! (start, top). Points are projected 16 at a time ([`super::scatter`]) and, with few threads, drawn
//! into per-thread buffers ([`super::private`]); phase 2's private draws go through [`PrivateRare`]
//! (a store only where a word wins) in the batches [`dense_batch`] finds dense on the screen, where
//! few words win and consecutive points share pixels. A group's test ([`group_hidden`]) computes each
//! corner's rows once for both of its tests, the eight corners side by side: the same decisions, cheaper.
use super::prepared::{group_points, group_shift};
use super::private::Dest;
use super::scatter::words::draw_words;
use super::scatter::{draw_points, Payload, Private, PrivateRare, Shared, Sink, RARE};
use crate::gpu_data::{word_payload, Batch, FrameUniforms, HzbParams, BATCH_POINTS, EMPTY_PAYLOAD};
use crate::simd::with_fma;
use crate::twins::batch::{batch_quantized_ok, behind_pyramid, corner_outside, corner_rect, corner_row};
use crate::BatchCounts;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

/// One batch's points into the visibility buffer: from `words` (quantized, decoded as they are drawn)
/// or `positions`.
#[inline(always)]
fn raster_points<S: Sink>(
    f: &FrameUniforms,
    batch: &Batch,
    first: usize,
    positions: &[[f32; 3]],
    words: Option<&[u32]>,
    sink: &mut S,
) {
    match words {
        Some(words) => draw_words(f, batch, words, first as u64, sink),
        None => draw_points(f, positions, Payload::Index(first as u64), sink),
    }
}

/// Which groups ([`GROUP_POINTS`](super::prepared::GROUP_POINTS) points, [`Prepared::groups`](super::prepared::Prepared)) of a
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
pub(super) fn test_box(g: &Batch, batch: &Batch, quantized: bool) -> Batch {
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
///
/// The same decision as `batch_culled(f, g) || batch_occluded(f, h, g, hzb)`, from the same float
/// operations in the same order, but each corner's four rows are computed once for both tests, the
/// eight corners side by side (one AVX2 register each, in the FMA-compiled draw;
/// `tests::group_hidden_is_the_two_batch_tests` compares them).
#[inline(always)]
pub fn group_hidden(f: &FrameUniforms, h: &HzbParams, hzb: &[u32], g: &Batch) -> bool {
    let m = &f.screen_from_world;
    let (wd, ht) = (f.width as f32, f.height as f32);
    let mut rows = [[0f32; 8]; 4];
    for (r, row) in rows.iter_mut().enumerate() {
        for (c, v) in row.iter_mut().enumerate() {
            *v = corner_row(m, r, g, c as u32);
        }
    }
    let [sx, sy, sz, sw] = rows;
    // batch_culled: every corner outside one plane.
    let mut outs = [0u32; 8];
    for (c, out) in outs.iter_mut().enumerate() {
        *out = corner_outside(sx[c], sy[c], sz[c], sw[c], wd, ht);
    }
    if outs.iter().fold(0x3f, |a, &o| a & o) != 0 {
        return true;
    }
    // batch_occluded: only boxes wholly in front of the camera.
    if sw.iter().any(|&w| w.is_nan() || w <= 0.0) {
        return false;
    }
    let (mut px, mut py, mut pd) = ([0f32; 8], [0f32; 8], [0f32; 8]);
    for c in 0..8 {
        let inv_w = 1.0 / sw[c];
        px[c] = sx[c] * inv_w;
        py[c] = sy[c] * inv_w;
        pd[c] = sz[c] * inv_w;
    }
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, f32::NEG_INFINITY);
    let (mut dmin, mut wmin) = (f32::INFINITY, f32::INFINITY);
    for c in 0..8 {
        xmin = xmin.min(px[c]);
        xmax = xmax.max(px[c]);
        ymin = ymin.min(py[c]);
        ymax = ymax.max(py[c]);
        dmin = dmin.min(pd[c]);
        wmin = wmin.min(sw[c]);
    }
    behind_pyramid(f, h, hzb, g, [xmin, xmax, ymin, ymax], dmin, wmin)
}

/// Points `from..to` of `batch` (a plain function, not a closure: inlined into the caller's AVX2 and
/// FMA code, which a closure is not always).
#[inline(always)]
#[allow(clippy::too_many_arguments, reason = "a plain function, not a struct, so the FMA-compiled caller inlines it")]
fn draw_run<S: Sink>(
    f: &FrameUniforms,
    batch: &Batch,
    from: usize,
    to: usize,
    positions: &[[f32; 3]],
    quant: &[u32],
    quantized: bool,
    sink: &mut S,
) {
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
        let (group_points, shift) = (group_points(), group_shift());
        let mut run: Option<usize> = None;
        let mut from = first;
        let mut drawn = 0;
        while from < end {
            let to = (from + group_points).min(end);
            let g = from >> shift;
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

/// Draws the batches of `list` as [`raster_list`](crate::twins::culled::raster_list) does, but of each only the groups `select` picks
/// (every point when `groups` is empty: no groups, whole batches), into `dest`. The counts are
/// [`raster_list`](crate::twins::culled::raster_list)'s: one per listed batch; then the number of points drawn.
#[allow(
    clippy::too_many_arguments,
    reason = "the twin's raster_list's arguments and the fast path's groups, destination and selection"
)]
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
    assert!(
        groups.is_empty() || groups.len() == positions.len().div_ceil(group_points()),
        "one group per group_points() points"
    );
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
                .map(|&b| {
                    one(b, &mut |b, batch, data, quantized| {
                        raster_selected(f, b, batch, data, quantized, &select, &mut Shared(vis))
                    })
                })
                .reduce(|| (BatchCounts::default(), 0), add)
        }
        Dest::Private(p) => p.run(
            list.len(),
            PRIVATE_STEP_BATCHES,
            |items, buf| {
                assert_eq!(buf.len(), f.width as usize * f.height as usize, "visibility buffer size");
                // Phase 2 (after the pyramid): in batches dense on the screen, few of its words win
                // and consecutive points often share a pixel ([`PrivateRare`], [`dense_batch`]).
                let rare = matches!(select, Select::Tested { .. }) && RARE.on();
                list[items]
                    .iter()
                    .map(|&b| {
                        if rare && dense_batch(f, &batches[b as usize]) {
                            let mut sink = PrivateRare(&mut *buf);
                            one(b, &mut |b, batch, data, quantized| {
                                raster_selected(f, b, batch, data, quantized, &select, &mut sink)
                            })
                        } else {
                            let mut sink = Private(&mut *buf);
                            one(b, &mut |b, batch, data, quantized| {
                                raster_selected(f, b, batch, data, quantized, &select, &mut sink)
                            })
                        }
                    })
                    .fold((BatchCounts::default(), 0), add)
            },
            add,
        ),
    }
}

/// Points a pixel of its screen rectangle a batch needs for [`dense_batch`]: as [`set_rare_density`]
/// last set it, else `PCV_CPU_RARE_DENSITY` (asked once), else 64 (at 4, top's second draw got slower).
fn rare_density() -> f32 {
    match RARE_DENSITY.load(Ordering::Relaxed) {
        u32::MAX => {
            let d = std::env::var("PCV_CPU_RARE_DENSITY").ok().and_then(|v| v.parse::<f32>().ok()).unwrap_or(64.0);
            RARE_DENSITY.store(d.to_bits(), Ordering::Relaxed);
            d
        }
        bits => f32::from_bits(bits),
    }
}

/// [`rare_density`]'s bits (`u32::MAX`: not asked yet).
static RARE_DENSITY: AtomicU32 = AtomicU32::new(u32::MAX);

/// Sets [`rare_density`] for the whole process (0: every batch of phase 2; for tests and benches, the
/// same buffers whatever it is).
pub fn set_rare_density(points_per_px: f32) {
    RARE_DENSITY.store(points_per_px.to_bits(), Ordering::Relaxed);
}

/// Whether batch `b` has at least [`rare_density`] points a pixel of the rectangle its box's corners
/// project to ([`corner_rect`], clamped to the frame; none where a corner lies at or behind the camera): its points
/// then mostly land on pixels drawn already (a speed choice only: either sink gives the same buffer).
fn dense_batch(f: &FrameUniforms, b: &Batch) -> bool {
    let Some(([x0, x1, y0, y1], _, _)) = corner_rect(f, b) else {
        return false;
    };
    let (wd, ht) = (f.width as f32, f.height as f32);
    let area = (x1.min(wd) - x0.max(0.0)).max(1.0) * (y1.min(ht) - y0.max(0.0)).max(1.0);
    b.num_points as f32 >= rare_density() * area
}

/// Marks the group of every point that owns a pixel of the buffer `vis` (whose payloads are point
/// indices), after clearing every mark: next frame's phase 1 draws those groups.
pub fn mark_groups(vis: &[AtomicU64], marks: &[AtomicU8]) {
    marks.par_iter().for_each(|m| m.store(0, Ordering::Relaxed));
    let shift = group_shift();
    vis.par_chunks(1 << 16).for_each(|chunk| {
        for v in chunk {
            let i = word_payload(v.load(Ordering::Relaxed));
            if i != EMPTY_PAYLOAD {
                if let Some(m) = marks.get((i >> shift) as usize) {
                    m.store(1, Ordering::Relaxed);
                }
            }
        }
    });
}

/// The batches of `list1` (drawn in phase 1) that [`phase2`](crate::twins::culled::phase2) found visible (`visible[b] != 0`): the
/// rest of their groups may still show. A batch it found hidden holds no point that can.
pub fn still_visible(list1: &[u32], visible: &[u8]) -> Vec<u32> {
    list1.iter().copied().filter(|&b| visible[b as usize] != 0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuRasterizer;
    use crate::twins::batch::{batch_culled, batch_occluded};
    use crate::{FrameParams, Rasterizer, RenderMode, Target};
    use pcv_camera::{FlyCamera, Pose};
    use pcv_io::{Point, PointCloud};

    /// The built-in scene from poses that move frame to frame (so the marks of last frame are stale):
    /// the culled mode with group culling gives the `vis` mode's buffer bit for bit, and the quant mode
    /// the buffer it gives without group culling; and group culling draws fewer points where the
    /// cylinders hide their backs.
    #[test]
    fn group_culling_keeps_every_buffer_bit_for_bit() {
        let cloud = pcv_io::scene::generate(400_000, 7, false);
        let (w, h) = (480, 270);
        let mut with = CpuRasterizer::new();
        with.set_group_culling(true);
        with.upload(&cloud).unwrap();
        let mut without = CpuRasterizer::new();
        without.set_group_culling(false);
        without.upload(&cloud).unwrap();
        let poses = pcv_camera::scenarios::scenarios(&cloud);
        let (mut checked, mut fewer) = (0, 0);
        for round in 0..2 {
            for sc in &poses {
                // Twice through the poses: the first frame at each comes after another pose's marks.
                let mut pose = sc.pose;
                pose.yaw_rad += round as f32 * 0.05;
                let cam = pcv_camera::Camera::start_for(&cloud, Some(pose));
                let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                    .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                let mut want = vec![0u32; frame.num_pixels()];
                without.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut want)).unwrap();
                let want_depth = without.depth_bits();
                let mut want_q = vec![0u32; frame.num_pixels()];
                without.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut want_q)).unwrap();
                let want_q_depth = without.depth_bits();
                for k in 0..2 {
                    // The second draws' words stored only where they win (in every batch), or always
                    // (the same buffers).
                    RARE.set(k == 0);
                    set_rare_density(0.0);
                    let mut px = vec![0u32; frame.num_pixels()];
                    with.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
                    assert!(
                        px == want && with.depth_bits() == want_depth,
                        "culled, pose {} round {round} frame {k}",
                        sc.name
                    );
                    with.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut px)).unwrap();
                    assert!(
                        px == want_q && with.depth_bits() == want_q_depth,
                        "quant, pose {} round {round} frame {k}",
                        sc.name
                    );
                    checked += 1;
                    let mut whole = vec![0u32; frame.num_pixels()];
                    without.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut whole)).unwrap();
                    with.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
                    let (a, b) = (with.points_drawn().unwrap(), without.points_drawn().unwrap());
                    assert!(
                        a <= b + cloud.points.len() as u64 / 10,
                        "pose {}: {a} points with groups, {b} without",
                        sc.name
                    );
                    fewer += (a * 10 < b * 9) as u32;
                }
            }
        }
        set_rare_density(64.0);
        assert_eq!(checked, 4 * poses.len());
        assert!(fewer > 0, "group culling should draw at least 10% fewer points at some pose");
    }

    /// The fused group test decides as the two batch tests do, on boxes of every kind (in view,
    /// outside, across the near plane, behind the camera, degenerate, huge, NaN) against random
    /// pyramids, at every bench pose and in both builds (plain and FMA-compiled).
    #[test]
    fn group_hidden_is_the_two_batch_tests() {
        with_fma! {
            fn fused(f: &FrameUniforms, h: &HzbParams, hzb: &[u32], g: &Batch) -> bool {
                group_hidden(f, h, hzb, g)
            }
        }
        with_fma! {
            fn pair(f: &FrameUniforms, h: &HzbParams, hzb: &[u32], g: &Batch) -> bool {
                batch_culled(f, g) || batch_occluded(f, h, g, hzb)
            }
        }
        let cloud = pcv_io::scene::generate(20_000, 3, false);
        let (w, ht) = (320u32, 180u32);
        let hp = HzbParams::for_frame(w, ht);
        let mut counter = 0u64;
        let mut next = move || {
            counter += 1;
            crate::twins::rng::uniform(99, counter, 0)
        };
        let (lo, hi) = (cloud.bounds.min, cloud.bounds.max);
        let (mut hidden, mut shown, mut total) = (0, 0, 0);
        for sc in pcv_camera::scenarios::scenarios(&cloud) {
            let cam = pcv_camera::Camera::start_for(&cloud, Some(sc.pose));
            let frame = FrameParams::new(cam.clip_from_world(w, ht), w, ht)
                .with_depth_range(cam.depth_range().near, cam.depth_range().far);
            let f = frame.uniforms();
            for _ in 0..4 {
                // A pyramid of random far-ish depths, each level the max below (as the real one).
                let mut level0: Vec<u32> =
                    (0..(hp.width[0] * hp.height[0])).map(|_| (0.2 + 0.8 * next()).to_bits()).collect();
                if next() < 0.3 {
                    level0.iter_mut().for_each(|d| *d = 1.0f32.to_bits());
                }
                let depth = |i: usize| level0[((i / w as usize) / 4) * hp.width[0] as usize + (i % w as usize) / 4];
                let mut hzb = vec![0u32; hp.total as usize];
                crate::twins::hzb::build(&hp, w, ht, depth, &mut hzb);
                for k in 0..3000 {
                    let t = |a: f32, b: f32, r: f32| a + (b - a) * r;
                    let c = [
                        t(lo.x, hi.x, next() * 1.4 - 0.2),
                        t(lo.y, hi.y, next() * 1.4 - 0.2),
                        t(lo.z, hi.z, next() * 1.4 - 0.2),
                    ];
                    let size = (hi - lo).max_element() * [0.0, 1e-4, 0.003, 0.03, 0.3, 3.0][k % 6] * next();
                    let mut g = Batch { min: c, max: c, scale: [0.0; 3], num_points: 256 };
                    for a in 0..3 {
                        g.min[a] -= size * next();
                        g.max[a] += size * next();
                    }
                    match k % 97 {
                        0 => g.min[k % 3] = f32::NAN,
                        1 => g.max[k % 3] = f32::INFINITY,
                        2 => g.min[k % 3] = f32::NEG_INFINITY,
                        _ => {}
                    }
                    let want = pair(&f, &hp, &hzb, &g);
                    assert_eq!(fused(&f, &hp, &hzb, &g), want, "pose {} box {g:?}", sc.name);
                    assert_eq!(
                        group_hidden(&f, &hp, &hzb, &g),
                        batch_culled(&f, &g) || batch_occluded(&f, &hp, &g, &hzb),
                        "plain build, pose {}",
                        sc.name
                    );
                    hidden += want as u32;
                    shown += !want as u32;
                    total += 1;
                }
            }
        }
        assert!(
            hidden > total / 20 && shown > total / 20,
            "both answers common: {hidden} hidden, {shown} shown of {total}"
        );
    }

    /// The marks: every group with a point that owns a pixel, and no other.
    #[test]
    fn mark_groups_marks_the_groups_that_own_pixels() {
        use crate::gpu_data::word;
        let g = group_points() as u64; // 256 unless PCV_CPU_GROUP_POINTS says otherwise
        let vis: Vec<AtomicU64> =
            [word(5, 3), word(7, 2 * g + g / 3), word(1, EMPTY_PAYLOAD), word(2, 2 * g + g / 3 + 1)]
                .into_iter()
                .map(AtomicU64::new)
                .collect();
        let marks: Vec<AtomicU8> = (0..4).map(|i| AtomicU8::new((i == 3) as u8)).collect();
        mark_groups(&vis, &marks);
        let got: Vec<u8> = marks.iter().map(|m| m.load(Ordering::Relaxed)).collect();
        assert_eq!(
            got,
            [1, 0, 1, 0],
            "groups 0 (point 3) and 2 (points 2g + g/3 and the next); group 3's old mark cleared"
        );
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
        assert_eq!(
            counts[0].drawn() + counts[0].culled,
            (2 * n_side * n_side).div_ceil(BATCH_POINTS as usize) as u32,
            "{counts:?}"
        );
    }
}
