//! The CPU backend: the kernels' twins ([`crate::twins`]) run with rayon over the points, and where it
//! pays, faster paths of the same passes that draw the same buffers bit for bit (tested against the
//! twins: `tests::fast_paths_draw_the_twins_buffers`).
//!
//! A frame runs the passes of
//! [`crate::plan::passes`] in order, timed with the wall clock. With few threads (at most
//! [`private::MAX_BUFFERS`]) the visibility modes (culled, quant, vis, packed) draw into a buffer per
//! thread with plain stores instead of atomics, merged at the end of the draw ([`private`]; no clear
//! pass, and the merge also resolves when no splat comes between), and the points are projected 16 at
//! a time with AVX-512 where the CPU has it ([`scatter`], [`draw`]); the culled modes also cull
//! groups of points inside a drawn batch ([`culled`]) and build the depth pyramid by rows over the
//! frame's coverage mask ([`pyramid`], [`cover`]): the same buffers, bit for bit. Point size and EDL
//! run as [`post`]'s passes made for CPUs — the visible points' disks scattered in place, EDL over a
//! log-distance image — instead of the twins' per-pixel gathers (`PCV_CPU_POST=0` runs the twins, to
//! time them): the same frames, bit for bit (`tests::fast_post_passes_draw_the_twins_frames`).
//!
//! Every mode reads [`prepared::Prepared`], the backend's only copy of the points, made at upload
//! straight from the caller's points (no sorted copy of them): positions (12 bytes), RGBA8 colors
//! (4), batches and group boxes of the points in Morton order (or the caller's with
//! [`CpuRasterizer::upload_in_order`]), and the quantized words (4) once the quant mode first draws;
//! the reference and packed modes read positions and colors as the batched ones do. `order` maps
//! that order back to the uploaded cloud's indices (4 bytes a point), for picking: 20 bytes a point,
//! 24 with the quant mode.
//!
//! Files go straight into those arrays ([`stream_upload`]): a cloud of files with no host points
//! ([`PointCloud::is_device_only`], which the command line makes of files larger than
//! [`Rasterizer::host_copy_budget_bytes`]; [`Rasterizer::stream_capacity`] is the host memory) is
//! decoded in chunks on all cores, each appended to the arrays as it is ready, and ordered in place:
//! at most 24 bytes a point at the peak.
pub mod cover;
pub mod culled;
pub mod draw;
pub mod post;
pub mod prepared;
pub mod private;
pub mod pyramid;
pub mod scatter;
pub mod stream_upload;

use crate::twins::{blend, clear, color, depth, edl, hzb, packed, splat, vis};

use super::pick::{Final, LastFrame, PickWords};
use super::plan::Pass;
use super::{BatchCounts, FrameParams, FrameStats, PassTime, PickHit, Rasterizer, RenderError, RenderMode, Target};
use crate::gpu_data::Point;
use crate::gpu_data::{word, word_depth, HzbParams};
use pcv_io::PointCloud;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Renders with rayon on the CPU.
#[derive(Default)]
pub struct CpuRasterizer {
    /// `order[i]`: the uploaded cloud's index of point `i` of `prepared` (`None`: the same order).
    order: Option<Arc<Vec<u32>>>,
    prepared: Option<Arc<prepared::Prepared>>,
    preprocess_ms: Option<f64>,
    depth: Vec<AtomicU32>,
    vis: Vec<AtomicU64>,
    /// The twin splat's output, swapped with `vis` after each splat.
    vis_out: Vec<AtomicU64>,
    /// The fast post passes' scratch memory.
    post: post::PostScratch,
    /// High quality's sums, two words a pixel (`twins::blend`).
    blend: Vec<AtomicU64>,
    /// The culled modes: one byte a batch, whether it was visible last frame.
    visible: Vec<u8>,
    /// The culled modes' depth pyramid.
    hzb: Vec<u32>,
    /// The culled modes: one mark per group of [`prepared::GROUP_POINTS`] points, whether one of its
    /// points owned a pixel last frame (phase 1 draws those groups of its batches; [`culled`]).
    group_marks: Vec<AtomicU8>,
    /// Points the last frame of a culled mode drew ([`Self::points_drawn`]).
    points_drawn: Option<u64>,
    /// [`Self::set_group_culling`]'s choice (`None`: the environment's).
    groups_off: Option<bool>,
    last: Option<LastFrame>,
    /// Whether `prepared` is a level-of-detail node pool ([`Rasterizer::reserve_slots`]): its slots are
    /// written in place and only the culled modes draw it.
    pool: bool,
    /// The pool's point spacing per slot (adaptive sizes per node; [`Rasterizer::set_slot_spacing`]).
    slot_spacing: Option<Vec<f32>>,
    /// The visibility passes' per-thread buffers, with few threads ([`private`]).
    private: private::PrivateBuffers,
    /// After a culled frame's merge with a cover (no splat after it): the cover, outside whose cells
    /// `vis` holds the clear word, so that the next merge need not store it there again. `None`: unknown.
    clean: Option<cover::Cover>,
}

/// Host bytes a streamed point takes at the upload's peak ([`stream_upload`]): positions, colors, the
/// Morton order and one scratch column.
pub const STREAM_BYTES_PER_POINT: u64 = 24;

/// The largest host cloud (points and their intensity and class, 21 bytes a point) the command line
/// loads for this backend before uploading; larger files are streamed into its arrays. The host cloud
/// and the backend's 20 bytes a point then stay within 24 bytes a point + 256 MiB (issue 14): 41 bytes a
/// point at most up to 128 MiB of cloud (6.4M points), 17 × 6.4M = 104 MiB over 24 bytes a point.
pub const HOST_COPY_BUDGET_BYTES: u64 = 128 << 20;

/// Memory the system can give without swapping (Linux's MemAvailable), if known.
fn host_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = s.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// Runs `f`; how long it took, in ms (a pass's private-buffer merge, timed apart as `merge`).
fn ms_of(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

fn sized<T: Default>(buf: &mut Vec<T>, n: usize) {
    if n <= buf.capacity() {
        // A smaller frame (adaptive resolution) keeps the allocation; the passes overwrite what they read.
        buf.truncate(n);
        buf.extend((buf.len()..n).map(|_| T::default()));
    } else {
        let mut v = crate::huge::with_capacity(n);
        v.extend((0..n).map(|_| T::default()));
        *buf = v;
    }
}

impl CpuRasterizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// The depth buffer of the last frame's final image, as float bits: the reference's depth buffer,
    /// or the visibility buffer's high halves (after a splat, the splatted one).
    pub fn depth_bits(&self) -> Vec<u32> {
        match self.last.map(|l| l.holds) {
            Some(Final::VisColor | Final::VisIndex) => vis::vis_depth_bits(&self.vis),
            _ => self.depth.iter().map(|d| d.load(Ordering::Relaxed)).collect(),
        }
    }

    /// Takes `points` in the order given (no Morton sort): the batched modes index them in this order.
    /// The tests give the CUDA backend's sorted points, so that both backends index the same points.
    pub fn upload_in_order(&mut self, points: Vec<Point>) {
        self.take(&points, None);
    }

    /// Makes the backend's arrays from `points[order[i]]` (or `points` as given).
    fn take(&mut self, points: &[Point], order: Option<Vec<u32>>) {
        self.prepared = None;
        self.order = None;
        let t = Instant::now();
        let prepared = prepared::prepare_permuted(points, order.as_deref());
        self.install(prepared, order, t);
    }

    /// Keeps `prepared` (with `order`, see [`Self::order`]) as the uploaded points, prepared since `t`.
    fn install(&mut self, mut prepared: prepared::Prepared, order: Option<Vec<u32>>, t: Instant) {
        if !self.group_culling() {
            prepared.groups.clear();
        }
        self.visible = vec![0; prepared.batches.len()];
        self.group_marks = (0..prepared.groups.len()).map(|_| AtomicU8::new(0)).collect();
        self.prepared = Some(Arc::new(prepared));
        self.preprocess_ms = Some(t.elapsed().as_secs_f64() * 1e3);
        self.order = order.map(Arc::new);
        self.last = None;
        self.pool = false;
    }

    /// Turns the culled modes' group culling on (the default) or off (whole batches drawn, as the
    /// kernels do; the same image), for comparisons. Takes effect at the next preprocessing (upload).
    pub fn set_group_culling(&mut self, on: bool) {
        self.groups_off = Some(!on);
    }

    /// How many points the last frame drew in a culled mode (both phases; `None` after other modes).
    pub fn points_drawn(&self) -> Option<u64> {
        self.points_drawn
    }

    /// Whether the culled modes cull groups: [`Self::set_group_culling`], else on unless the
    /// environment sets `PCV_CPU_GROUPS=0`.
    fn group_culling(&self) -> bool {
        match self.groups_off {
            Some(off) => !off,
            None => std::env::var_os("PCV_CPU_GROUPS").is_none_or(|v| v != "0"),
        }
    }

    /// The pool's arrays, writable (copied only if a frame still holds them).
    fn pool_mut(&mut self) -> Result<&mut prepared::Prepared, RenderError> {
        match (&mut self.prepared, self.pool) {
            (Some(p), true) => Ok(Arc::make_mut(p)),
            _ => Err(RenderError::ModeUnavailable { mode: "level of detail", reason: "no node pool reserved".into() }),
        }
    }

    /// The uploaded points' arrays; for the batched modes (`batched`), only below 2^34 - 1 points.
    pub fn prepared(&self, batched: bool) -> Result<Arc<prepared::Prepared>, RenderError> {
        let p = self.prepared.as_ref().ok_or(RenderError::NotUploaded)?;
        if batched && !self.pool && p.positions.len() as u64 >= vis::EMPTY_INDEX {
            return Err(RenderError::ModeUnavailable {
                mode: "batched",
                reason: format!("{} points: the visibility buffer indexes fewer than 2^34 - 1", p.positions.len()),
            });
        }
        Ok(p.clone())
    }
}

impl Rasterizer for CpuRasterizer {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn description(&self) -> String {
        format!("CPU, {} threads (rayon)", rayon::current_num_threads())
    }

    fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
        if let Some(files) = cloud.files().filter(|_| cloud.is_device_only()) {
            // Drop the old arrays first: the stream's peak is then this cloud's alone.
            self.prepared = None;
            self.order = None;
            let (prepared, order, t) = stream_upload::stream_files(files)?;
            self.install(prepared, order, t);
            return Ok(());
        }
        // Morton order keeps the depth and color buffers in cache (same image; the winner of an exact depth
        // tie may change). Points past u32 indices are not sorted.
        let points = cloud.host_points(true);
        let order = (points.len() < u32::MAX as usize).then(|| pcv_io::order::morton_order(&points, &cloud.bounds));
        self.take(&points, order);
        Ok(())
    }

    fn stream_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        let free_bytes = host_available_bytes().unwrap_or(u64::MAX);
        Some(Ok(pcv_io::device::Capacity {
            points: (free_bytes / STREAM_BYTES_PER_POINT).min(u32::MAX as u64 - 1),
            bytes_per_point: STREAM_BYTES_PER_POINT,
            free_bytes,
            device: "host memory (CPU backend)".into(),
        }))
    }

    fn host_copy_budget_bytes(&self) -> Option<u64> {
        Some(HOST_COPY_BUDGET_BYTES)
    }

    fn num_points(&self) -> u64 {
        match (&self.prepared, self.pool) {
            (Some(p), true) => p.batches.iter().map(|b| b.num_points as u64).sum(),
            _ => self.prepared.as_ref().map_or(0, |p| p.positions.len() as u64),
        }
    }

    fn reserve_slots(&mut self, slots: u32) -> Result<(), RenderError> {
        let n = slots as usize * crate::gpu_data::BATCH_POINTS as usize;
        self.order = None;
        let table = crate::twins::preprocess::Table {
            positions: vec![[0.0; 3]; n],
            colors: vec![0; n],
            batches: vec![crate::gpu_data::EMPTY_BATCH; slots as usize],
            quant: vec![0; n],
        };
        self.prepared = Some(Arc::new(prepared::Prepared { table, groups: Vec::new() }));
        self.visible = vec![0; slots as usize];
        self.group_marks = Vec::new();
        self.preprocess_ms = None;
        self.last = None;
        self.pool = true;
        self.slot_spacing = None;
        Ok(())
    }

    fn write_slots(&mut self, writes: &[super::SlotWrite<'_>]) -> Result<u64, RenderError> {
        let p = self.pool_mut()?;
        let per = crate::gpu_data::BATCH_POINTS as usize;
        for w in writes {
            super::check_slot_write(w, p.batches.len() as u32)?;
            let at = w.first_slot as usize * per;
            let n = w.positions.len();
            p.positions[at..at + n].copy_from_slice(w.positions);
            p.colors[at..at + n].copy_from_slice(w.colors);
            p.quant[at..at + n].copy_from_slice(w.quant);
        }
        // Copied before returning: nothing to wait for.
        Ok(0)
    }

    fn set_slot_batches(&mut self, batches: &[crate::gpu_data::Batch], _after_write: u64) -> Result<(), RenderError> {
        let p = self.pool_mut()?;
        crate::check_pool_table(batches.len(), p.batches.len())?;
        p.batches.copy_from_slice(batches);
        Ok(())
    }

    fn set_slot_spacing(&mut self, spacing_m: &[f32]) -> Result<(), RenderError> {
        let slots = self.pool_mut()?.batches.len();
        if spacing_m.len() != slots {
            return Err(RenderError::ModeUnavailable {
                mode: "level of detail",
                reason: format!("{} spacings for a pool of {slots} slots", spacing_m.len()),
            });
        }
        self.slot_spacing = Some(spacing_m.to_vec());
        Ok(())
    }

    fn preprocess_ms(&self) -> Option<f64> {
        self.preprocess_ms
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        if self.pool && !frame.mode.culls() {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "a level-of-detail pool is drawn by culled or quant".into(),
            });
        }
        let drawn_points = self.num_points();
        if frame.mode == RenderMode::Quant {
            if let Some(p) = self.prepared.as_mut() {
                if p.quant.len() != p.positions.len() {
                    let t = Instant::now();
                    Arc::make_mut(p).ensure_quant();
                    self.preprocess_ms = Some(self.preprocess_ms.unwrap_or(0.0) + t.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let prepared = Some(self.prepared(frame.mode.uses_batches())?);
        let Target::Host(color) = target else {
            return Err(RenderError::UnsupportedTarget { backend: "cpu", target: "device" });
        };
        let n = frame.num_pixels();
        if color.len() != n {
            return Err(RenderError::TargetSize { got: color.len(), width: frame.width_px, height: frame.height_px });
        }
        let f = frame.uniforms();
        // A pool with a spacing per slot: uniforms per metre of spacing, each point's batch's spacing in
        // the splat (as the CUDA backend).
        let batch_spacing = self.slot_spacing.as_deref().filter(|_| self.pool && frame.mode.culls());
        let u = if batch_spacing.is_some() { frame.with_spacing(1.0).post_uniforms() } else { frame.post_uniforms() };
        let plan = frame.passes();
        if frame.mode == RenderMode::Reference {
            sized(&mut self.depth, n);
        }
        if frame.mode != RenderMode::Reference || (plan.contains(&Pass::Splat) && !post::FAST.on()) {
            sized(&mut self.vis, n);
        }
        if plan.contains(&Pass::Splat) && !post::FAST.on() {
            sized(&mut self.vis_out, n);
        } else {
            self.vis_out = Vec::new();
        }
        // The visibility passes draw into per-thread buffers with few threads, merged into `vis`
        // (which they then write whole: no clear needed).
        let threads = rayon::current_num_threads();
        let use_private =
            matches!(frame.mode, RenderMode::Culled | RenderMode::Quant | RenderMode::Vis | RenderMode::Packed)
                && !plan.contains(&Pass::VisDisk)
                && private::wanted(threads);
        if use_private {
            self.private.prepare(threads, n);
        } else {
            self.private.release();
        }
        let empty_word = word(clear::FAR_DEPTH_BITS, vis::EMPTY_INDEX);
        // Where `vis` holds the clear word already (the last culled frame's cover), if of this frame's
        // size; unknown from here on until this frame ends.
        let clean = self.clean.take().filter(|c| c.size() == (frame.width_px as usize, frame.height_px as usize));
        let splats = plan.contains(&Pass::Splat);
        // The merge also resolves when the resolve pass comes right after the draw (no splat between).
        let fuse_resolve = use_private
            && plan.windows(2).any(|p| matches!(p[0], Pass::Vis | Pass::Packed | Pass::Draw2) && p[1] == Pass::Resolve);
        let mut resolved = false;
        let background = |y: u32| crate::twins::post::background(&f, y);
        let mut holds = match frame.mode {
            RenderMode::Reference => Final::Depth,
            RenderMode::Packed => Final::VisColor,
            _ => Final::VisIndex,
        };
        let mut passes = Vec::with_capacity(plan.len());
        let mut batches: Option<BatchCounts> = None;
        let mut drawn1: Vec<u32> = Vec::new();
        // The cells the culled modes' drawn batches may reach this frame ([`cover`]); none: read all.
        let mut cover: Option<cover::Cover> = None;
        let mut points_drawn = 0u64;
        let hzb_params = HzbParams::for_frame(frame.width_px, frame.height_px);
        let t0 = Instant::now();
        let no_prep = || RenderError::NotUploaded;
        let blends = plan.contains(&Pass::Blend);
        for pass in plan {
            let t = Instant::now();
            // The private buffers' merge inside this pass, timed apart ("merge", after the pass).
            let mut merge_ms: Option<f64> = None;
            match pass {
                Pass::Clear if use_private => {}
                Pass::Clear => match frame.mode {
                    RenderMode::Reference => clear::clear(&f, &mut self.depth, color),
                    RenderMode::Packed => packed::packed_clear(&f, &mut self.vis),
                    _ => vis::vis_clear(&mut self.vis),
                },
                Pass::Depth => depth::depth(&f, &prepared.as_ref().ok_or_else(no_prep)?.positions, &self.depth),
                Pass::Color => {
                    let p = prepared.as_ref().ok_or_else(no_prep)?;
                    color::color(&f, &p.positions, &p.colors, &self.depth, color)
                }
                Pass::Packed => {
                    let p = prepared.as_ref().ok_or_else(no_prep)?;
                    if use_private {
                        draw::packed(&f, &p.positions, &p.colors, private::Dest::Private(&mut self.private));
                        let resolve = fuse_resolve.then_some(private::Resolve::Packed { image: &mut *color });
                        merge_ms = Some(ms_of(|| {
                            self.private.merge(
                                &mut self.vis,
                                frame.width_px as usize,
                                |y| packed::packed_clear_word(&f, y),
                                None,
                                resolve,
                                None,
                                None,
                            )
                        }));
                        resolved = fuse_resolve;
                    } else {
                        draw::packed(&f, &p.positions, &p.colors, private::Dest::Shared(&self.vis));
                    }
                }
                Pass::Vis => {
                    let positions = &prepared.as_ref().ok_or_else(no_prep)?.positions;
                    if use_private {
                        draw::vis(&f, positions, private::Dest::Private(&mut self.private));
                        let colors = &prepared.as_ref().ok_or_else(no_prep)?.colors;
                        let resolve = fuse_resolve.then_some(private::Resolve::Index {
                            colors,
                            background: &background,
                            image: &mut *color,
                        });
                        merge_ms = Some(ms_of(|| {
                            self.private.merge(
                                &mut self.vis,
                                frame.width_px as usize,
                                |_| empty_word,
                                None,
                                resolve,
                                None,
                                None,
                            )
                        }));
                        resolved = fuse_resolve;
                    } else {
                        draw::vis(&f, positions, private::Dest::Shared(&self.vis));
                    }
                }
                Pass::VisDisk => vis::vis_disk(&f, &u, &prepared.as_ref().ok_or_else(no_prep)?.positions, &self.vis),
                Pass::Draw1 => {
                    let p = prepared.as_ref().ok_or_else(no_prep)?;
                    let quant = frame.mode == RenderMode::Quant;
                    let list1 = crate::twins::culled::phase1(&f, &p.batches, &self.visible);
                    let select = culled::Select::Marked(&self.group_marks);
                    let dest = if use_private {
                        private::Dest::Private(&mut self.private)
                    } else {
                        private::Dest::Shared(&self.vis)
                    };
                    let (counts, points) = culled::raster_groups(
                        &f,
                        &p.batches,
                        &p.groups,
                        &list1,
                        &p.positions,
                        &p.quant,
                        quant,
                        dest,
                        select,
                    );
                    // This frame's coverage mask, from the batches drawn (private buffers only).
                    if use_private && cover::wanted() {
                        let mut c = cover::Cover::new(frame.width_px, frame.height_px);
                        c.add_batches(&f, &p.batches, &list1, quant);
                        cover = Some(c);
                    }
                    batches = Some(counts);
                    points_drawn = points;
                    drawn1 = list1;
                }
                Pass::Hzb => {
                    self.hzb.resize(hzb_params.total as usize, 0);
                    if use_private {
                        let (private, w) = (&self.private, frame.width_px as usize);
                        pyramid::build_by_rows(
                            &hzb_params,
                            frame.width_px,
                            frame.height_px,
                            cover.as_ref().map(|c| (c, clear::FAR_DEPTH_BITS)),
                            |y, acc| private.depth_row_max(y * w, acc, cover.as_ref().and_then(|c| c.row_cells(y))),
                            &mut self.hzb,
                        );
                    } else {
                        hzb::build_from_words(&hzb_params, frame.width_px, frame.height_px, &self.vis, &mut self.hzb);
                    }
                }
                Pass::Draw2 => {
                    let p = prepared.as_ref().ok_or_else(no_prep)?;
                    let quant = frame.mode == RenderMode::Quant;
                    let (list2, counts) =
                        crate::twins::culled::phase2(&f, &hzb_params, &p.batches, &mut self.visible, &self.hzb);
                    let (h, hzb) = (&hzb_params, &self.hzb[..]);
                    let select = culled::Select::Tested { h, hzb, unmarked: None };
                    let dest = if use_private {
                        private::Dest::Private(&mut self.private)
                    } else {
                        private::Dest::Shared(&self.vis)
                    };
                    let (drawn, points) = culled::raster_groups(
                        &f,
                        &p.batches,
                        &p.groups,
                        &list2,
                        &p.positions,
                        &p.quant,
                        quant,
                        dest,
                        select,
                    );
                    // Phase 2's batches join the mask (the rest of phase 1's are in it already).
                    if let Some(c) = cover.as_mut() {
                        c.add_batches(&f, &p.batches, &list2, quant);
                    }
                    batches = Some(batches.unwrap_or_default().add(&counts).add(&drawn));
                    points_drawn += points;
                    // The groups of phase 1's batches it did not draw (counted there already).
                    if !p.groups.is_empty() {
                        let rest = culled::still_visible(&drawn1, &self.visible);
                        let select = culled::Select::Tested { h, hzb, unmarked: Some(&self.group_marks) };
                        let dest = if use_private {
                            private::Dest::Private(&mut self.private)
                        } else {
                            private::Dest::Shared(&self.vis)
                        };
                        points_drawn += culled::raster_groups(
                            &f,
                            &p.batches,
                            &p.groups,
                            &rest,
                            &p.positions,
                            &p.quant,
                            quant,
                            dest,
                            select,
                        )
                        .1;
                    }
                    // The final buffer and, with groups, the marks of the groups that own its pixels.
                    let marks = (!p.groups.is_empty()).then_some(&self.group_marks[..]);
                    if use_private {
                        let resolve = fuse_resolve.then_some(private::Resolve::Index {
                            colors: &p.colors,
                            background: &background,
                            image: &mut *color,
                        });
                        merge_ms = Some(ms_of(|| {
                            self.private.merge(
                                &mut self.vis,
                                frame.width_px as usize,
                                |_| empty_word,
                                marks,
                                resolve,
                                cover.as_ref(),
                                clean.as_ref(),
                            )
                        }));
                        resolved = fuse_resolve;
                    } else if let Some(marks) = marks {
                        culled::mark_groups(&self.vis, marks);
                    }
                }
                Pass::Splat if post::FAST.on() => {
                    if holds == Final::Depth {
                        // Painted into the depth buffer and the target: nothing left to resolve.
                        let frame = post::SplatFrame::DepthColor(&mut self.depth, &mut *color);
                        post::splat(&u, frame, None, &mut self.post);
                        resolved = true;
                    } else {
                        post::splat(&u, post::SplatFrame::Words(&mut self.vis), batch_spacing, &mut self.post);
                    }
                }
                Pass::Splat => {
                    if holds == Final::Depth {
                        let (depth, c) = (&self.depth, &*color);
                        splat::splat(&u, |i| splat::reference_word(depth, c, i), None, &mut self.vis_out);
                        holds = Final::VisColor;
                    } else {
                        let vis = &self.vis;
                        splat::splat(&u, |i| vis[i].load(Ordering::Relaxed), batch_spacing, &mut self.vis_out);
                    }
                    std::mem::swap(&mut self.vis, &mut self.vis_out);
                }
                // High quality: the twins as they are (the vis mode over every point, the culled modes
                // over the batches in view).
                Pass::Blend => {
                    let p = prepared.as_ref().ok_or_else(no_prep)?;
                    sized(&mut self.blend, 2 * n);
                    blend::blend_clear(&mut self.blend);
                    let t = blend::BlendTarget { u: &u, vis: &self.vis, colors: &p.colors, accum: &self.blend };
                    if frame.mode.culls() {
                        // The pyramid of the final buffer: batches wholly past its blend window skipped.
                        self.hzb.resize(hzb_params.total as usize, 0);
                        hzb::build_from_words(&hzb_params, frame.width_px, frame.height_px, &self.vis, &mut self.hzb);
                        let (h, hzb) = (&hzb_params, &self.hzb[..]);
                        let list = crate::twins::culled::blend_cull(&f, &u, None, h, &p.batches, hzb);
                        let quant = frame.mode == RenderMode::Quant;
                        crate::twins::culled::blend_list(
                            &f,
                            None,
                            &p.batches,
                            &list,
                            &p.positions,
                            &p.quant,
                            quant,
                            &t,
                        );
                    } else {
                        blend::blend(&f, &p.positions, &t);
                    }
                }
                Pass::Resolve if blends => {
                    let colors = &prepared.as_ref().ok_or_else(no_prep)?.colors;
                    blend::blend_resolve(&f, &self.vis, colors, &self.blend, color)
                }
                // Done by the merge.
                Pass::Resolve if resolved => {}
                Pass::Resolve => match holds {
                    Final::VisIndex => {
                        vis::vis_resolve(&f, &self.vis, &prepared.as_ref().ok_or_else(no_prep)?.colors, color)
                    }
                    _ => packed::packed_resolve(&self.vis, color),
                },
                Pass::Edl if post::FAST.on() => {
                    let depth = match holds {
                        Final::Depth => post::EdlDepth::Depth(&mut self.depth),
                        _ => post::EdlDepth::Words(&mut self.vis),
                    };
                    post::edl(&u, depth, color, &mut self.post);
                }
                Pass::Edl => {
                    if holds == Final::Depth {
                        let depth = &self.depth;
                        edl::edl(&u, |i| depth[i].load(Ordering::Relaxed), color);
                    } else {
                        let vis = &self.vis;
                        edl::edl(&u, |i| word_depth(vis[i].load(Ordering::Relaxed)), color);
                    }
                }
            }
            let ms = t.elapsed().as_secs_f64() * 1e3;
            passes.push(PassTime { name: pass.name(), ms: ms - merge_ms.unwrap_or(0.0) });
            if let Some(ms) = merge_ms {
                passes.push(PassTime { name: "merge", ms });
            }
        }
        self.points_drawn = frame.mode.culls().then_some(points_drawn);
        // A culled frame merged with a cover and no splat after it (which would swap `vis`): `vis` holds
        // the clear word outside the cover's cells.
        if frame.mode.culls() && use_private && !splats {
            self.clean = cover;
        }
        self.last = Some(LastFrame {
            clip_from_world: frame.clip_from_world,
            width_px: frame.width_px,
            height_px: frame.height_px,
            holds,
        });
        Ok(FrameStats { passes, total_ms: t0.elapsed().as_secs_f64() * 1e3, points: drawn_points, batches })
    }

    fn pick(&mut self, x_px: u32, y_px: u32, radius_px: u32) -> Result<Option<PickHit>, RenderError> {
        super::pick::pick(self, x_px, y_px, radius_px)
    }
}

impl PickWords for CpuRasterizer {
    fn last_frame(&self) -> Option<LastFrame> {
        self.last
    }

    fn read_words(&mut self, last: &LastFrame, y: u32, x: u32, len: usize) -> Result<Vec<u64>, RenderError> {
        let at = y as usize * last.width_px as usize + x as usize;
        Ok(match last.holds {
            Final::Depth => self.depth[at..at + len].iter().map(|d| word(d.load(Ordering::Relaxed), 0)).collect(),
            _ => self.vis[at..at + len].iter().map(|v| v.load(Ordering::Relaxed)).collect(),
        })
    }

    fn point(&mut self, index: u64) -> Result<Option<(glam::Vec3, Option<u64>)>, RenderError> {
        let index = index as usize;
        let Some(pos) = self.prepared.as_ref().and_then(|p| p.positions.get(index).copied()) else {
            return Ok(None);
        };
        let original = self.order.as_ref().map_or(index as u64, |o| o[index] as u64);
        Ok(Some((glam::Vec3::from(pos), Some(original))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FrameParams;

    /// Culled and quant frames one after the other at poses whose covers grow and shrink (so the merge
    /// skips storing the clear word where the last frame's cover left it, [`CpuRasterizer::clean`]),
    /// with a vis frame and a frame of another size between: the buffer and image are the vis mode's
    /// every frame (1 to 3 threads: private buffers, two of them merged in one pass, or more).
    /// The backend's fast paths (points projected 16 at a time, per-thread buffers with 1 to 3 threads,
    /// group culling on and off) draw the twins' buffers bit for bit: the `vis`, `packed` and culled
    /// modes' images and depth equal what the plain twin passes give for the same points in the same
    /// order — the culled modes over two frames at each pose, the twin keeping its batches' visibility
    /// from frame to frame as the kernels do.
    #[test]
    fn fast_paths_draw_the_twins_buffers() {
        use crate::twins::{culled as tc, hzb as th, packed as tp, preprocess as tpre, vis as tv};
        let cloud = pcv_io::scene::generate(150_000, 21, false);
        let g = tpre::grid_params(&cloud.bounds, cloud.points.len() as u64);
        let sorted = tpre::sort_by_cells(&g, &cloud.points);
        let table = tpre::prepare(&sorted);
        let (w, h) = (320u32, 180u32);
        let poses = pcv_camera::scenarios::scenarios(&cloud);
        for threads in [1usize, 3] {
            for groups in [false, true] {
                rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                    let mut r = CpuRasterizer::new();
                    r.set_group_culling(groups);
                    r.upload_in_order(sorted.clone());
                    let mut visible = vec![0u8; table.batches.len()];
                    // Every pose in perspective and orthographic.
                    for (sc, ortho) in poses.iter().flat_map(|sc| [(sc, false), (sc, true)]) {
                        let mut cam = pcv_camera::Camera::start_for(&cloud, Some(sc.pose));
                        cam.set_projection(ortho);
                        let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                        let f = frame.uniforms();
                        let buf: Vec<AtomicU64> = (0..frame.num_pixels()).map(|_| AtomicU64::new(0)).collect();
                        let resolve = |buf: &mut Vec<AtomicU64>| {
                            let mut img = vec![0u32; frame.num_pixels()];
                            tv::vis_resolve(&f, buf, &table.colors, &mut img);
                            (img, tv::vis_depth_bits(buf))
                        };
                        let mut backend = |mode: RenderMode| {
                            let mut px = vec![0u32; frame.num_pixels()];
                            r.render(&frame.with_mode(mode), Target::Host(&mut px)).unwrap();
                            (px, r.depth_bits())
                        };
                        let what = format!("{threads} threads, groups {groups}, pose {}, ortho {ortho}", sc.name);
                        // vis
                        let mut b = buf;
                        tv::vis_clear(&mut b);
                        tv::vis(&f, &table.positions, &b);
                        assert!(backend(RenderMode::Vis) == resolve(&mut b), "vis, {what}");
                        // packed
                        tp::packed_clear(&f, &mut b);
                        tp::packed(&f, &table.positions, &table.colors, &b);
                        let mut img = vec![0u32; frame.num_pixels()];
                        tp::packed_resolve(&b, &mut img);
                        assert!(backend(RenderMode::Packed) == (img, tv::vis_depth_bits(&b)), "packed, {what}");
                        // culled: two frames, the batches' visibility carried over
                        let hp = HzbParams::for_frame(w, h);
                        for k in 0..2 {
                            tv::vis_clear(&mut b);
                            let list1 = tc::phase1(&f, &table.batches, &visible);
                            tc::raster_list(&f, &table.batches, &list1, &table.positions, &table.quant, false, &b);
                            let mut hzb = vec![0u32; hp.total as usize];
                            th::build(&hp, w, h, |i| word_depth(b[i].load(Ordering::Relaxed)), &mut hzb);
                            let (list2, _) = tc::phase2(&f, &hp, &table.batches, &mut visible, &hzb);
                            tc::raster_list(&f, &table.batches, &list2, &table.positions, &table.quant, false, &b);
                            assert!(backend(RenderMode::Culled) == resolve(&mut b), "culled frame {k}, {what}");
                        }
                    }
                });
            }
        }
    }

    #[test]
    fn consecutive_culled_frames_keep_the_vis_buffer() {
        let cloud = pcv_io::scene::generate(200_000, 13, false);
        let scenarios = pcv_camera::scenarios::scenarios(&cloud);
        for threads in [1usize, 2, 3] {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let (mut r, mut reference) = (CpuRasterizer::new(), CpuRasterizer::new());
                r.upload(&cloud).unwrap();
                reference.upload(&cloud).unwrap();
                let mut skipped = 0;
                for round in 0..2 {
                    for (k, sc) in scenarios.iter().enumerate().chain(scenarios.iter().enumerate().rev()) {
                        let (w, h) = if round == 1 && k == 2 { (200u32, 120u32) } else { (320, 180) };
                        let cam = pcv_camera::Camera::start_for(&cloud, Some(sc.pose));
                        let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                        let mut want = vec![0u32; frame.num_pixels()];
                        reference.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut want)).unwrap();
                        let want_depth = reference.depth_bits();
                        let mode = if k % 2 == 0 { RenderMode::Culled } else { RenderMode::Quant };
                        if mode == RenderMode::Culled {
                            skipped += r.clean.as_ref().is_some_and(|c| c.cells.contains(&0)) as u32;
                            let mut px = vec![0u32; frame.num_pixels()];
                            r.render(&frame.with_mode(mode), Target::Host(&mut px)).unwrap();
                            assert!(
                                px == want && r.depth_bits() == want_depth,
                                "{threads} threads, round {round}, pose {}",
                                sc.name
                            );
                        } else {
                            // The quant mode's own buffer differs from vis; check it keeps the clean state right by
                            // drawing it twice and comparing.
                            let (mut a, mut b) = (vec![0u32; frame.num_pixels()], vec![1u32; frame.num_pixels()]);
                            r.render(&frame.with_mode(mode), Target::Host(&mut a)).unwrap();
                            let d = r.depth_bits();
                            r.render(&frame.with_mode(mode), Target::Host(&mut b)).unwrap();
                            assert!(a == b && d == r.depth_bits(), "quant twice, {threads} threads, pose {}", sc.name);
                        }
                        if round == 1 && k == 3 {
                            let mut px = vec![0u32; frame.num_pixels()];
                            r.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut px)).unwrap();
                        }
                    }
                }
                assert!(
                    threads > 2 || skipped > 0,
                    "some merges had a last cover with cells to skip ({threads} threads)"
                );
            });
        }
    }

    /// The fast post passes ([`post`]) draw the twins' frames: every mode, point size and EDL, at
    /// every bench pose, the same image and final depth with `post::FAST` on and off.
    #[test]
    fn fast_post_passes_draw_the_twins_frames() {
        use crate::look::{Edl, Look, PointShape, PointSize};
        let cloud = pcv_io::scene::generate(60_000, 5, false);
        let (w, h) = (200, 130);
        let mut r = CpuRasterizer::new();
        r.upload(&cloud).unwrap();
        let looks = [
            Look { point_size: PointSize::Adaptive { max_px: 8 }, edl: Some(Edl::DEFAULT), ..Look::PLAIN },
            Look { point_size: PointSize::Fixed(5), edl: None, ..Look::PLAIN },
            Look { point_size: PointSize::Fixed(4), shape: PointShape::Square, ..Look::PLAIN },
            Look { point_size: PointSize::Fixed(1), edl: Some(Edl { strength: 2.0, radius_px: 3.0 }), ..Look::PLAIN },
        ];
        let mut shaded = 0;
        for sc in pcv_camera::scenarios::scenarios(&cloud) {
            let cam = pcv_camera::Camera::start_for(&cloud, Some(sc.pose));
            let base = FrameParams::of_camera(&cam, w, h).with_spacing(0.05);
            for mode in [RenderMode::Reference, RenderMode::Packed, RenderMode::Vis, RenderMode::Culled] {
                for look in looks {
                    let frame = base.with_mode(mode).with_look(look);
                    let mut draw = |fast: bool| {
                        post::FAST.set(fast);
                        let mut px = vec![0u32; frame.num_pixels()];
                        r.render(&frame, Target::Host(&mut px)).unwrap();
                        (px, r.depth_bits())
                    };
                    let (twin, fast) = (draw(false), draw(true));
                    let plain = {
                        let mut px = vec![0u32; frame.num_pixels()];
                        r.render(&frame.with_look(Look::PLAIN), Target::Host(&mut px)).unwrap();
                        px
                    };
                    shaded += (twin.0 != plain) as usize;
                    assert!(twin == fast, "{} {:?}, pose {}", mode.name(), look, sc.name);
                }
            }
        }
        post::FAST.set(true);
        assert!(shaded > 70, "the looks change the frames ({shaded} of 96)");
    }

    /// The split layout (positions and colors in Morton order, no 16-byte copy) draws what a plain
    /// loop over the uploaded cloud's own points gives: the reference's depth buffer and the packed
    /// mode's words (depth, color; ties to the smaller color) are per-pixel minima over the points,
    /// whatever their order, at every bench pose; and a pick maps back to the cloud's point index.
    #[test]
    fn split_layout_draws_what_the_cloud_points_give() {
        let cloud = pcv_io::scene::generate(200_000, 11, false);
        let (w, h) = (320, 180);
        let mut r = CpuRasterizer::new();
        r.upload(&cloud).unwrap();
        assert_eq!(r.num_points(), cloud.points.len() as u64);
        assert!(r.order.is_some(), "Morton order kept for picking");
        for sc in pcv_camera::scenarios::scenarios(&cloud) {
            let cam = pcv_camera::Camera::start_for(&cloud, Some(sc.pose));
            let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                .with_depth_range(cam.depth_range().near, cam.depth_range().far);
            let f = frame.uniforms();
            let mut want_depth = vec![clear::FAR_DEPTH_BITS; frame.num_pixels()];
            let mut want_word = vec![u64::MAX; frame.num_pixels()];
            for p in cloud.points.iter() {
                if let Some(q) = crate::twins::project::project(&f, p.pos) {
                    let i = q.index(w);
                    want_depth[i] = want_depth[i].min(q.depth_bits);
                    want_word[i] = want_word[i].min(word(q.depth_bits, p.color_word() as u64));
                }
            }
            let mut px = vec![0u32; frame.num_pixels()];
            r.render(&frame.with_mode(RenderMode::Reference), Target::Host(&mut px)).unwrap();
            assert!(r.depth_bits() == want_depth, "reference depth, pose {}", sc.name);
            r.render(&frame.with_mode(RenderMode::Packed), Target::Host(&mut px)).unwrap();
            let got: Vec<u64> = r.vis.iter().map(|v| v.load(Ordering::Relaxed)).collect();
            for (i, (&g, &want)) in got.iter().zip(&want_word).enumerate() {
                if want != u64::MAX {
                    assert_eq!(g, want, "packed word, pose {} pixel {i}", sc.name);
                }
            }
            r.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
            assert!(r.depth_bits() == want_depth, "culled depth, pose {}", sc.name);
            if let Some(i) = want_depth.iter().position(|&d| d != clear::FAR_DEPTH_BITS) {
                let hit = r.pick(i as u32 % w, i as u32 / w, 0).unwrap().expect("a point under a drawn pixel");
                let idx = hit.point_index.expect("the culled mode picks a point") as usize;
                assert_eq!(
                    glam::Vec3::from(cloud.points[idx].pos),
                    hit.position,
                    "pick maps to the cloud's index, pose {}",
                    sc.name
                );
            }
        }
    }
}
