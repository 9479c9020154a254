//! Several GPUs of one host (`--gpus N`): the cloud split across them, each GPU rendering its share,
//! the shares composited with NCCL (sort-last), the frame resolved on the GPU that owns the window.
//!
//! How it works:
//! - **Shares.** [`split`] cuts the points into contiguous, batch-aligned ranges, one a share. For the
//!   built-in scene the range is of the scene's own order, in which point i lies on cylinder
//!   `i * 10 / n`, so each share is a few whole cylinders, made on its GPU by the scene kernel
//!   ([`CudaRasterizer::upload_scene_share`]; past memory for 16-byte points, a chunk at a time). A
//!   host cloud is put in Morton order on the host first, so each range is a compact region of space.
//!   Each GPU sorts and batches its share as one GPU would its cloud, so frustum and occlusion culling
//!   work per share (the pyramid of phase 2 is built from the share's own phase 1: a GPU culls
//!   against its own points only).
//! - **Files streamed to the devices** (larger than the host budget, or a subsample): the files are
//!   decoded once and each share takes a contiguous range of the files' order straight to its device
//!   ([`super::cuda::stream_upload::upload_files_split`]); no host copy, so no host Morton sort: a
//!   share is as compact as the files' order (whole tiles of a tile set; flight lines of a scan), and
//!   each GPU's own sort makes its batches compact, so culling works per batch as on one GPU.
//! - **Level of detail.** The node pool's slots are spread over the shares (slot `g` is slot
//!   `g div N` of share `g mod N`): the selection's nodes, loaded into the lowest free slots nearest
//!   first, land on every GPU evenly; each share draws its slots with its own culling, and the
//!   composite is the same as a cloud's.
//! - **Frame.** Every share runs the raster passes of the frame ([`Stage::Raster`]) into its own
//!   64-bit visibility buffer (depth bits << 34 | payload). Then, on each GPU's stream:
//!   `packed` words carry the colour, so one `ncclReduce` with `ncclMin` on uint64 into the window
//!   GPU's buffer is the exact composite (nearest depth, ties to the smaller colour, as on one GPU).
//!   The index modes (`vis`, `culled`, `quant`) carry a point index: `pcv_words_offset` adds the share's
//!   first global index, so payload ranges are disjoint; `ncclAllReduce(min)` gives every GPU the
//!   composite; each GPU's `pcv_words_gather` turns the pixels whose winner is one of its own points
//!   into colour words (depth, colour) — the background word where empty, ~0 where another GPU won — and
//!   a second `ncclReduce(min)` brings the colours to the window's GPU. That GPU then runs the post
//!   passes ([`Stage::Post`]: splat, resolve, EDL) on the colour words, as the packed mode does.
//! - **Several shares on one GPU** (`--gpu-shares K`, for testing the composite on one device): NCCL
//!   refuses two ranks on one device, so the shares of a device are first combined with
//!   `pcv_words_min` on its lead share's stream, and the communicator has one rank per device (one rank
//!   in all on one GPU, where the reductions are copies) — the rest of the path is the same.
//! - **Threads.** One process; a scoped thread per GPU for the raster stage, because each rasterizer's
//!   frame ends in host waits (CUDA events for the pass times, the culled modes' counters) that would
//!   serialize the GPUs on one thread; the composite from the calling thread with NCCL group calls
//!   (`ncclCommInitAll`, then `ncclGroupStart`/`ncclGroupEnd` around one call per rank): the calls
//!   only enqueue work on each GPU's stream, so one thread drives all ranks without blocking, which is
//!   the pattern NCCL documents for one process with several GPUs, and no NCCL call is ever made from
//!   two threads at once.
//! - **Equality.** `packed` composites exactly to the one-GPU image. The index modes' depths are
//!   exact; a pixel's colour can differ only where two points share its depth exactly (a tie), since
//!   each GPU sorts its share on its own and the splat breaks ties by colour instead of by index.
//!   The CPU twin of the whole path is [`crate::twins::composite::composite_shares`].
//!
//! Timing: [`FrameStats::passes`] holds each raster pass's slowest share, then `composite` (the wall
//! clock from the first offset to every GPU's stream done: offsets, local mins, both reductions and
//! the gathers), then the window GPU's post passes; `total_ms` is the whole frame's wall clock.
use super::cuda::nccl::{Comms, RankBuffers};
use super::cuda::{context, kernels, CudaRasterizer, Stage};
use super::gpu_data::BATCH_POINTS;
use super::{FrameParams, FrameStats, PassTime, PickHit, Rasterizer, RenderError, RenderMode, Target};
use pcv_io::PointCloud;
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

/// [`Rasterizer::name`] of the multi-GPU backend.
pub const NAME: &str = "cuda-multi";

/// How many GPUs `--gpus` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gpus {
    Count(usize),
    /// Every device the driver sees.
    All,
}

impl Gpus {
    /// `N` (1 to 64) or `all`.
    pub fn parse(s: &str) -> Result<Gpus, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(Gpus::All);
        }
        match t.parse::<usize>() {
            Ok(n) if (1..=64).contains(&n) => Ok(Gpus::Count(n)),
            _ => Err(format!("'{s}' is not a GPU count: give 1 to 64, or all")),
        }
    }

    /// The count, asking the driver for `all` (0 when it sees none).
    pub fn resolve(self) -> usize {
        match self {
            Gpus::Count(n) => n,
            Gpus::All => context::device_count(),
        }
    }
}

/// Contiguous ranges of `num_points` points for `parts` shares, each starting on a batch boundary
/// ([`BATCH_POINTS`]) and as equal as that allows; an error when a share would be empty or the
/// composite could not index the points.
pub fn split(num_points: u64, parts: usize) -> Result<Vec<Range<u64>>, RenderError> {
    indexable(num_points, "--gpus", format!("{num_points} points"))?;
    let batch = BATCH_POINTS as u64;
    let p = parts.max(1) as u64;
    let batches = num_points.div_ceil(batch);
    if batches < p {
        return Err(RenderError::ModeUnavailable {
            mode: "split",
            reason: format!("{num_points} points cannot be split into {parts} shares of whole {batch}-point batches"),
        });
    }
    Ok((0..p)
        .map(|k| {
            let (a, b) = (batches * k / p * batch, batches * (k + 1) / p * batch);
            a.min(num_points)..b.min(num_points)
        })
        .collect())
}

/// The composite's payloads index fewer than 2^34 - 1 points (the empty payload is the last): an error
/// for `points` (`what`, e.g. "12 points") past that.
fn indexable(points: u64, mode: &'static str, what: String) -> Result<(), RenderError> {
    if points >= crate::gpu_data::EMPTY_PAYLOAD {
        return Err(RenderError::ModeUnavailable {
            mode,
            reason: format!("{what}: the composite indexes fewer than 2^34 - 1"),
        });
    }
    Ok(())
}

struct Share {
    gpu: CudaRasterizer,
    /// Index into `devices`.
    device: usize,
    range: Range<u64>,
}

struct Device {
    ordinal: i32,
    /// Indices into `shares`; the first is the device's lead (its buffer and stream carry the composite).
    shares: Vec<usize>,
    /// The gather's colour words (index modes).
    gathered: Option<super::cuda::memory::DeviceBuffer<u64>>,
}

/// One rasterizer per share, shares spread over GPUs, composited through NCCL (see the module doc).
pub struct MultiRasterizer {
    // Streams are synchronized in Drop before anything here is freed; the communicators go first.
    comms: Comms,
    devices: Vec<Device>,
    shares: Vec<Share>,
    num_points: u64,
    /// Level of detail: the node pool's slots, spread over the shares (see [`MultiRasterizer::slot_home`]).
    pool_slots: Option<u32>,
    /// Pool writes whose copies may still run: this rasterizer's fence and each share's fence for it
    /// (0 where the write had nothing for the share), oldest first; and the last fence known complete.
    pool_fences: std::collections::VecDeque<(u64, Vec<u64>)>,
    pool_fence_last: u64,
    pool_fence_done: u64,
    description: String,
}

impl MultiRasterizer {
    /// `gpus` devices (0 .. gpus), `shares_per_gpu` shares on each, an NCCL communicator over them.
    /// Errors: fewer devices than asked ([`RenderError::NoDevice`]), no NCCL ([`RenderError::Nccl`]),
    /// and whatever opening a device can give.
    pub fn new(gpus: usize, shares_per_gpu: usize) -> Result<Self, RenderError> {
        if gpus == 0 || shares_per_gpu == 0 {
            return Err(RenderError::NoDevice("--gpus and --gpu-shares must be at least 1".into()));
        }
        if !context::driver_present() {
            // The same message as one GPU gives, with the count asked for.
            context::open().map(drop)?;
        }
        let seen = context::device_count();
        if seen < gpus {
            return Err(RenderError::NoDevice(format!("{gpus} GPUs asked for (--gpus), the driver sees {seen}")));
        }
        let mut shares = Vec::new();
        let mut devices = Vec::new();
        for d in 0..gpus {
            let mut ids = Vec::new();
            for _ in 0..shares_per_gpu {
                ids.push(shares.len());
                shares.push(Share { gpu: CudaRasterizer::new_on(d)?, device: d, range: 0..0 });
            }
            devices.push(Device { ordinal: d as i32, shares: ids, gathered: None });
        }
        let ordinals: Vec<i32> = devices.iter().map(|d| d.ordinal).collect();
        let comms = Comms::init_all(&ordinals)?;
        let names: Vec<String> = devices.iter().map(|d| shares[d.shares[0]].gpu.device_name()).collect();
        let description = format!(
            "{} GPU(s) [{}], {} share(s) each, NCCL {} ({})",
            gpus,
            names.join(", "),
            shares_per_gpu,
            comms.nccl().version_string(),
            comms.nccl().path
        );
        Ok(Self {
            comms,
            devices,
            shares,
            num_points: 0,
            pool_slots: None,
            pool_fences: Default::default(),
            pool_fence_last: 0,
            pool_fence_done: 0,
            description,
        })
    }

    /// The shares' point ranges (global order), for reports and tests.
    pub fn share_ranges(&self) -> Vec<Range<u64>> {
        self.shares.iter().map(|s| s.range.clone()).collect()
    }

    fn lead(&self, device: usize) -> &Share {
        &self.shares[self.devices[device].shares[0]]
    }

    /// Splits `cloud` over the shares and uploads each on its device (a thread per device).
    fn upload_shares(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
        if let Some(files) = cloud.files().filter(|_| cloud.is_device_only()) {
            return self.stream_shares(files, cloud);
        }
        let ranges = split(cloud.len(), self.shares.len())?;
        let lazy = cloud.is_lazy_scene();
        // A host cloud in Morton order, so that each contiguous range is compact in space.
        let sorted: Option<Arc<Vec<crate::gpu_data::Point>>> = (!lazy).then(|| {
            // In parallel: a sequential gather of 2B points took most of a minute on the H200 machine.
            let points = cloud.host_points(true);
            Arc::new(pcv_io::order::morton_sorted(&points, &cloud.bounds))
        });
        for (s, r) in self.shares.iter_mut().zip(&ranges) {
            s.range = r.clone();
        }
        let inputs = vec![(); self.shares.len()];
        on_each_device(&mut self.shares, self.devices.len(), inputs, "uploading a share", |s, ()| {
            let (first, count) = (s.range.start, s.range.end - s.range.start);
            match &sorted {
                None => s.gpu.upload_scene_share(cloud, first, count),
                Some(all) => {
                    let part = all[first as usize..(first + count) as usize].to_vec();
                    let sub = PointCloud {
                        points: Arc::new(part),
                        bounds: cloud.bounds,
                        origin: cloud.origin,
                        frame: cloud.frame.clone(),
                        label: cloud.label.clone(),
                        source: pcv_io::CloudSource::Host,
                        attributes: None,
                    };
                    s.gpu.upload(&sub)
                }
            }
        })?;
        self.num_points = cloud.len();
        Ok(())
    }

    /// Files streamed to the devices without a host copy: the files are decoded once (on all cores)
    /// and each share takes a contiguous, batch-aligned range of the files' order, copied to its device
    /// as it is decoded (every device's copies run at once); then each device sorts and batches its
    /// share on the files' common grid (a thread per device), as one GPU would its cloud.
    fn stream_shares(&mut self, files: &pcv_io::device::DeviceFiles, cloud: &PointCloud) -> Result<(), RenderError> {
        let planned = files.planned_points();
        let ranges = split(planned, self.shares.len())?;
        let ctxs: Vec<_> = self.shares.iter().map(|s| s.gpu.context().clone()).collect();
        let buffers = super::cuda::stream_upload::upload_files_split(&ctxs, files, &ranges)?;
        let bounds = pcv_io::device::local_bounds(files).unwrap_or(cloud.bounds);
        // The ranges as they arrived (a file may drop non-finite points): the composite's offsets.
        let mut first = 0u64;
        for (s, b) in self.shares.iter_mut().zip(&buffers) {
            s.range = first..first + b.len() as u64;
            first = s.range.end;
        }
        on_each_device(&mut self.shares, self.devices.len(), buffers, "preparing a share", |s, points| {
            s.gpu.upload_device_points(points, &bounds)
        })?;
        self.num_points = first;
        Ok(())
    }

    /// What the GPUs can take for a streamed load: each device takes an equal share, so the smallest
    /// device's capacity times the number of shares it would hold.
    pub fn point_capacity(&self) -> Result<pcv_io::device::Capacity, RenderError> {
        let mut caps = Vec::new();
        for d in &self.devices {
            caps.push(self.shares[d.shares[0]].gpu.point_capacity()?);
        }
        let per_share = caps.iter().map(|c| c.points / self.devices[0].shares.len() as u64).min().unwrap_or(0);
        let first = caps.first().cloned().ok_or_else(|| RenderError::NoDevice("no GPU".into()))?;
        Ok(pcv_io::device::Capacity {
            points: per_share * self.shares.len() as u64,
            bytes_per_point: first.bytes_per_point,
            free_bytes: caps.iter().map(|c| c.free_bytes).sum(),
            device: format!("{} GPUs ({})", self.devices.len(), first.device),
        })
    }

    /// Offsets, local mins, the NCCL reductions and the gathers; leaves the composite's colour words in
    /// the window GPU's lead visibility buffer.
    fn composite(&mut self, frame: &FrameParams) -> Result<(), RenderError> {
        let n = frame.num_pixels();
        let index_words = frame.mode != RenderMode::Packed;
        let f = frame.uniforms();
        let word_ptr = |s: &Share| {
            s.gpu.words_ptr().ok_or_else(|| RenderError::Cuda {
                context: "composite".into(),
                message: "a share has no visibility buffer".into(),
            })
        };
        // Per device, on the lead's stream: offsets, then the min of the device's shares into the lead.
        let mut bufs = Vec::with_capacity(self.devices.len());
        for d in 0..self.devices.len() {
            let lead = self.lead(d);
            let (table, stream) = (lead.gpu.kernel_table(), lead.gpu.stream());
            let lead_words = word_ptr(lead)?;
            for (k, &si) in self.devices[d].shares.iter().enumerate() {
                let s = &self.shares[si];
                let words = word_ptr(s)?;
                if index_words && s.range.start > 0 {
                    // SAFETY: `words` is this share's visibility buffer of this frame: `n` u64 words on
                    // the lead's device (shares of a device share its primary context).
                    unsafe { kernels::words_offset(table, stream, n as u64, words, s.range.start) }?;
                }
                if k > 0 {
                    // SAFETY: both buffers hold this frame's `n` words on this device.
                    unsafe { kernels::words_min(table, stream, n as u64, lead_words, words) }?;
                }
            }
            bufs.push(RankBuffers { send: lead_words, recv: lead_words, stream: stream.cu_stream() });
        }
        let root = 0;
        if !index_words {
            // SAFETY: each rank's buffers are its lead's `n` words on its device, with its live stream.
            return unsafe { self.comms.reduce_min_u64(&bufs, n, root) };
        }
        // SAFETY: as above (in place on every rank).
        unsafe { self.comms.all_reduce_min_u64(&bufs, n) }?;
        let root_words = bufs[root].recv;
        let mut gathers = Vec::with_capacity(self.devices.len());
        for (d, rank) in bufs.iter().enumerate() {
            let ctx = self.lead(d).gpu.context().clone();
            let dev = &mut self.devices[d];
            if dev.gathered.as_ref().is_none_or(|g| g.len() != n) {
                dev.gathered = None;
                dev.gathered =
                    Some(super::cuda::memory::DeviceBuffer::alloc(&ctx, n, "the composite's gathered colours")?);
            }
            let gathered = dev.gathered.as_ref().map_or(0, |g| g.ptr());
            let lead = &self.shares[dev.shares[0]];
            let (table, stream) = (lead.gpu.kernel_table(), lead.gpu.stream());
            for (k, &si) in dev.shares.iter().enumerate() {
                let s = &self.shares[si];
                let (colors, count) = s.gpu.colors().ok_or_else(|| RenderError::ModeUnavailable {
                    mode: frame.mode.name(),
                    reason: "a share has no prepared colours".into(),
                })?;
                // SAFETY: the lead's buffer and `gathered` hold `n` words, `colors` `count` words, all on
                // this device; the gather reads colours only for indices first .. first + count.
                unsafe {
                    kernels::words_gather(
                        table,
                        stream,
                        f,
                        rank.recv,
                        colors,
                        s.range.start,
                        count,
                        (k == 0) as u32,
                        gathered,
                    )
                }?;
            }
            gathers.push(RankBuffers {
                send: gathered,
                recv: if d == root { root_words } else { gathered },
                stream: stream.cu_stream(),
            });
        }
        // SAFETY: each rank sends its `n` gathered words; the root receives into its lead's buffer.
        unsafe { self.comms.reduce_min_u64(&gathers, n, root) }
    }

    fn sync_all(&self) -> Result<(), RenderError> {
        for d in 0..self.devices.len() {
            self.lead(d).gpu.stream().synchronize().map_err(context::cuda_error("the composite"))?;
        }
        Ok(())
    }
}

/// Runs `f` on every share with its input (`inputs[k]` for share `k`), a scoped thread per device, a
/// device's shares in order on its thread (see the module doc's Threads); the results in device order,
/// or the first error.
fn on_each_device<I: Send, T: Send>(
    shares: &mut [Share],
    devices: usize,
    inputs: Vec<I>,
    what: &str,
    f: impl Fn(&mut Share, I) -> Result<T, RenderError> + Sync,
) -> Result<Vec<T>, RenderError> {
    let f = &f;
    let per_device: Vec<Result<Vec<T>, RenderError>> = std::thread::scope(|scope| {
        let mut by_device: Vec<Vec<(&mut Share, I)>> = (0..devices).map(|_| Vec::new()).collect();
        for (s, input) in shares.iter_mut().zip(inputs) {
            by_device[s.device].push((s, input));
        }
        let handles: Vec<_> = by_device
            .into_iter()
            .map(|work| {
                scope.spawn(move || {
                    work.into_iter().map(|(s, input)| f(s, input)).collect::<Result<Vec<T>, RenderError>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(panicked(what)))).collect()
    });
    let mut out = Vec::new();
    for r in per_device {
        out.extend(r?);
    }
    Ok(out)
}

fn panicked(what: &str) -> RenderError {
    RenderError::Cuda { context: what.into(), message: "a worker thread panicked".into() }
}

impl Rasterizer for MultiRasterizer {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
        self.num_points = 0;
        self.pool_slots = None;
        self.upload_shares(cloud)
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        if self.num_points == 0 {
            return Err(RenderError::NotUploaded);
        }
        if frame.mode == RenderMode::Reference {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "frames split across GPUs are composited as 64-bit words, and the reference mode keeps a 32-bit depth buffer: use packed, vis, culled or quant".into(),
            });
        }
        if frame.num_pixels() == 0 {
            return self.shares[0].gpu.render_stage(frame, Some(target), Stage::Post);
        }
        let t0 = Instant::now();
        let inputs = vec![(); self.shares.len()];
        let stats =
            on_each_device(&mut self.shares, self.devices.len(), inputs, "a share's raster passes", |s, ()| {
                s.gpu.render_stage(frame, None, Stage::Raster)
            })?;
        let tc = Instant::now();
        self.composite(frame)?;
        self.sync_all()?;
        let composite_ms = tc.elapsed().as_secs_f64() * 1e3;
        let root = self.devices[0].shares[0];
        let post = self.shares[root].gpu.render_stage(frame, Some(target), Stage::Post)?;
        let mut passes: Vec<PassTime> = Vec::new();
        for s in &stats {
            for p in &s.passes {
                match passes.iter_mut().find(|q| q.name == p.name) {
                    Some(q) => q.ms = q.ms.max(p.ms),
                    None => passes.push(p.clone()),
                }
            }
        }
        passes.push(PassTime { name: "composite", ms: composite_ms });
        passes.extend(post.passes);
        let batches = stats.iter().filter_map(|s| s.batches).reduce(|a, b| a.add(&b));
        Ok(FrameStats { passes, total_ms: t0.elapsed().as_secs_f64() * 1e3, points: self.num_points(), batches })
    }

    fn num_points(&self) -> u64 {
        match self.pool_slots {
            // The pool's points drawn now.
            Some(_) => self.shares.iter().map(|s| s.gpu.num_points()).sum(),
            None => self.num_points,
        }
    }

    /// Level of detail on several GPUs: slot `g` of the pool lives on share `g mod N` as its slot
    /// `g div N`, so the nodes the selection loads (in nearest-first order, into the lowest free slots)
    /// spread evenly over the GPUs, and each share draws its nodes with its own culling. Every share's
    /// pool indices are offset in the composite as a cloud's shares are.
    fn reserve_slots(&mut self, slots: u32) -> Result<(), RenderError> {
        self.num_points = 0;
        self.pool_slots = None;
        self.pool_fences.clear();
        self.pool_fence_done = self.pool_fence_last;
        let n = self.shares.len() as u32;
        let per = BATCH_POINTS as u64;
        let mut first = 0u64;
        for (k, s) in self.shares.iter_mut().enumerate() {
            let local = slots.saturating_sub(k as u32).div_ceil(n);
            s.gpu.reserve_slots(local.max(1))?;
            s.range = first..first + local.max(1) as u64 * per;
            first = s.range.end;
        }
        indexable(first, "level of detail", format!("a pool of {first} points"))?;
        self.num_points = first;
        self.pool_slots = Some(slots);
        Ok(())
    }

    fn write_slots(&mut self, writes: &[super::SlotWrite<'_>]) -> Result<u64, RenderError> {
        let slots = self.pool_slots.ok_or_else(|| RenderError::ModeUnavailable {
            mode: "level of detail",
            reason: "no node pool reserved".into(),
        })?;
        let n = self.shares.len();
        let per = BATCH_POINTS as usize;
        let mut by_share: Vec<Vec<super::SlotWrite<'_>>> = (0..n).map(|_| Vec::new()).collect();
        for w in writes {
            super::check_slot_write(w, slots)?;
            for j in 0..w.num_slots() as usize {
                let g = w.first_slot as usize + j;
                let r = j * per..((j + 1) * per).min(w.positions.len());
                by_share[g % n].push(super::SlotWrite {
                    first_slot: (g / n) as u32,
                    positions: &w.positions[r.clone()],
                    colors: &w.colors[r.clone()],
                    quant: &w.quant[r],
                });
            }
        }
        // Each share copies on its own copy stream: this write is complete once every share's part is.
        let mut fences = vec![0u64; n];
        for ((s, ws), f) in self.shares.iter_mut().zip(&by_share).zip(&mut fences) {
            if !ws.is_empty() {
                *f = s.gpu.write_slots(ws)?;
            }
        }
        self.pool_fence_last += 1;
        self.pool_fences.push_back((self.pool_fence_last, fences));
        Ok(self.pool_fence_last)
    }

    fn slot_writes_done(&mut self) -> Result<u64, RenderError> {
        let done: Vec<u64> = self.shares.iter_mut().map(|s| s.gpu.slot_writes_done()).collect::<Result<_, _>>()?;
        while let Some((fence, per)) = self.pool_fences.front() {
            if per.iter().zip(&done).any(|(f, d)| f > d) {
                break;
            }
            self.pool_fence_done = *fence;
            self.pool_fences.pop_front();
        }
        Ok(self.pool_fence_done)
    }

    fn set_slot_batches(&mut self, batches: &[crate::gpu_data::Batch], after_write: u64) -> Result<(), RenderError> {
        let slots = self.pool_slots.ok_or_else(|| RenderError::ModeUnavailable {
            mode: "level of detail",
            reason: "no node pool reserved".into(),
        })?;
        crate::check_pool_table(batches.len(), slots as usize)?;
        let n = self.shares.len();
        for (k, s) in self.shares.iter_mut().enumerate() {
            let mut local: Vec<_> = batches.iter().skip(k).step_by(n).copied().collect();
            // A share with no slot of its own (a pool smaller than the shares) keeps one empty slot.
            local.resize(((s.range.end - s.range.start) / BATCH_POINTS as u64) as usize, crate::gpu_data::EMPTY_BATCH);
            // The share's own fence for the writes up to `after_write` (0: all of them are complete).
            let share_fence =
                self.pool_fences.iter().filter(|(f, _)| *f <= after_write).map(|(_, per)| per[k]).max().unwrap_or(0);
            s.gpu.set_slot_batches(&local, share_fence)?;
        }
        Ok(())
    }

    fn set_slot_spacing(&mut self, _spacing_m: &[f32]) -> Result<(), RenderError> {
        // The composite's splat runs on colour words (no point index to find a batch by): adaptive sizes
        // use the frame's one spacing on several GPUs.
        match self.pool_slots {
            Some(_) => Ok(()),
            None => {
                Err(RenderError::ModeUnavailable { mode: "level of detail", reason: "no node pool reserved".into() })
            }
        }
    }

    fn device_memory_used_bytes(&self) -> Option<u64> {
        // The most any one GPU uses (the pool and the frame buffers are per GPU).
        self.shares.iter().filter_map(|s| s.gpu.device_memory_used_bytes()).max()
    }

    fn preprocess_ms(&self) -> Option<f64> {
        self.shares.iter().filter_map(|s| s.gpu.preprocess_ms()).reduce(f64::max)
    }

    fn pick(&mut self, x_px: u32, y_px: u32, radius_px: u32) -> Result<Option<PickHit>, RenderError> {
        // The window GPU's buffer holds the composite's colour words: depth and position, not the index.
        let root = self.devices[0].shares[0];
        self.shares[root].gpu.pick(x_px, y_px, radius_px)
    }

    fn stream_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        Some(self.point_capacity())
    }

    /// The window GPU's context and stream (they carry the GL interop and the post passes).
    fn cuda_handle(&self) -> Option<crate::cuda::CudaHandle> {
        self.root().cuda_handle()
    }

    /// The window GPU's capacity.
    fn device_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        self.root().device_capacity()
    }

    fn measure_copy_gb_per_s(&self, bytes: usize, repeats: u32) -> Option<Result<f64, RenderError>> {
        Rasterizer::measure_copy_gb_per_s(self.root(), bytes, repeats)
    }

    /// The window GPU's buffer: the composite's depth.
    fn device_depth_bits(&self) -> Option<Result<Vec<u32>, RenderError>> {
        self.root().device_depth_bits()
    }

    fn device_points(&self) -> Option<Result<Vec<crate::gpu_data::Point>, RenderError>> {
        self.root().device_points()
    }

    /// On the window GPU.
    unsafe fn show_external(
        &mut self,
        points: crate::external::ExternalPoints,
        keepalive: Box<dyn std::any::Any + Send>,
    ) -> Result<pcv_io::Bounds, RenderError> {
        let root = self.devices[0].shares[0];
        // SAFETY: the trait method's contract, forwarded.
        unsafe { self.shares[root].gpu.show_external(points, keepalive) }
    }
}

impl MultiRasterizer {
    /// The window GPU's rasterizer.
    fn root(&self) -> &CudaRasterizer {
        &self.shares[self.devices[0].shares[0]].gpu
    }
}

impl Drop for MultiRasterizer {
    fn drop(&mut self) {
        // NCCL work may still be in flight on the streams; let it finish before the communicators and
        // the buffers go.
        let _ = self.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_contiguous_batch_aligned_and_covers_everything() {
        for (n, parts) in [(4096 * 10 + 5, 3), (4096 * 2, 2), (1_000_000, 2), (12_000_000_000, 2)] {
            let r = split(n, parts).expect("split");
            assert_eq!(r.len(), parts);
            assert_eq!(r[0].start, 0);
            assert_eq!(r.last().map(|x| x.end), Some(n));
            for w in r.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            for x in &r {
                assert!(x.end > x.start, "{x:?}");
                assert_eq!(x.start % BATCH_POINTS as u64, 0);
            }
        }
        assert!(split(4096, 2).is_err(), "one batch cannot make two shares");
    }

    #[test]
    fn gpus_parse() {
        assert_eq!(Gpus::parse("2"), Ok(Gpus::Count(2)));
        assert_eq!(Gpus::parse("ALL"), Ok(Gpus::All));
        assert!(Gpus::parse("0").is_err());
        assert!(Gpus::parse("two").is_err());
    }
}
