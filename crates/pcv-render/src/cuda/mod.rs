//! The CUDA backend: the kernels in `kernels/*.cu`, driven through the CUDA driver API (cudarc).
//!
//! How it works:
//! - [`CudaRasterizer::new`] opens the driver and device 0 (`context.rs`: libcuda is looked for first,
//!   so a machine without a driver gets [`RenderError::NoDriver`] and the CPU backend, never a panic),
//!   loads the embedded fatbins once (`modules.rs`), and makes one non-blocking stream on which every
//!   copy and launch is ordered.
//! - [`Rasterizer::upload`] puts the points on the device and keeps them there (`upload.rs`): the
//!   built-in scene is made on the device by `pcv_scene`, other clouds are copied in chunks, files are
//!   streamed. Then `preprocess.rs` sorts them spatially on the device and makes the batched modes'
//!   buffers (positions, colors, batches, quantized words); `PCV_PREPROCESS=0` skips that (unsorted
//!   points, no batched modes), to measure what the order alone is worth. Every way points reach the
//!   device — these, a scene made a chunk at a time, a share of several GPUs, level of detail's node
//!   pool — ends in one [`table::DeviceTable`], which is what the passes draw.
//! - [`Rasterizer::render`] runs the passes of [`crate::plan::passes`] (the launchers are
//!   generated from one table in `kernels.rs`), e.g. `pcv_clear`, `pcv_depth` and `pcv_color`, with a CUDA event
//!   before and after each (`timing.rs`); in [`RenderMode::Packed`] it runs `pcv_packed_clear`,
//!   `pcv_packed` and `pcv_packed_resolve` instead; the batched modes run `pcv_vis_clear`, their pass
//!   (`pcv_vis`, `pcv_culled`, `pcv_culled_dedup` or `pcv_quant`) and `pcv_vis_resolve`. The depth (or 64-bit visibility) buffer is internal
//!   and follows the frame size. The last pass writes into a [`Target::Device`] pointer directly (a GL
//!   pixel buffer mapped by [`interop`]); for [`Target::Host`] it writes an internal
//!   color buffer that is then copied into the host slice.
//!
//! Every kernel has a CPU twin of the same name in `crate::twins`; `tests/cuda_vs_cpu.rs` checks the
//! two agree (scene bit for bit, images except at exact depth ties).
pub mod context;
pub mod external;
pub mod filter;
pub mod interop;
pub mod kernels;
pub mod memory;
pub mod modules;
pub mod nccl;
pub mod preprocess;
pub mod slot_upload;
pub mod stream_upload;
pub mod table;
pub mod timing;
pub mod upload;

pub use context::DeviceInfo;
pub use kernels::{KernelEntry, LAUNCHED_KERNELS};
pub use modules::{KernelImage, KERNELS, NVCC_RELEASE};

use super::pick::{Final, LastFrame, PickWords};
use super::plan::Pass;
use super::{BatchCounts, FrameParams, FrameStats, PassTime, PickHit, Rasterizer, RenderError, RenderMode, Target};
use crate::gpu_data::{counter, word, word_depth, Batch, FilterUniforms, HzbParams, Point};
use context::{cuda_error, mem_info};
use cudarc::driver::{sys, CudaContext, CudaStream};
use memory::DeviceBuffer;
use modules::{KernelTable, Module};
use pcv_io::PointCloud;
use preprocess::DevicePrepared;
use std::sync::Arc;
use table::DeviceTable;
use timing::PassTimer;

/// The most passes a frame has (clear, two raster passes, splat, resolve, EDL).
const MAX_PASSES: usize = 8;

/// A backend's CUDA context and the stream its copies and launches are ordered on
/// ([`Rasterizer::cuda_handle`]).
#[derive(Clone)]
pub struct CudaHandle {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
}

/// Renders with the CUDA kernels on device 0.
pub struct CudaRasterizer {
    // Fields drop in declaration order: device memory and modules before the stream and the context.
    /// What the passes draw, whichever way the points came ([`table`]).
    table: DeviceTable,
    /// Whether uploads run the preprocessing (on unless `PCV_PREPROCESS=0`; see [`Self::set_preprocess`]).
    preprocess_on: bool,
    depth: Option<DeviceBuffer<u32>>,
    vis: Option<DeviceBuffer<u64>>,
    /// The splat's output, swapped with `vis` after each splat.
    vis_out: Option<DeviceBuffer<u64>>,
    /// High quality's sums, two words a pixel (`kernels/blend.cu`).
    blend: Option<DeviceBuffer<u64>>,
    /// The culled modes' depth pyramid.
    hzb: Option<DeviceBuffer<u32>>,
    color: Option<DeviceBuffer<u32>>,
    /// The batched passes' counters: culled, quantized, full-precision batches.
    counters: DeviceBuffer<u32>,
    /// Events around the passes of a frame.
    timer: PassTimer,
    last: Option<LastFrame>,
    /// The filter the culled modes apply ([`Rasterizer::set_raster_filter`]); its class column lives in
    /// the table.
    filter: Option<FilterUniforms>,
    /// Borrowed arrays shown instead of uploaded points, and their buffers (`external.rs`).
    external: external::ExternalState,
    /// The node pool's copies: a copy stream and pinned staging (`slot_upload.rs`).
    slot_upload: slot_upload::SlotUploader,
    kernels: KernelTable,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
}

impl CudaRasterizer {
    /// Opens device 0 and loads the kernels. Errors: [`RenderError::NoDriver`], [`RenderError::NoDevice`],
    /// [`RenderError::NoKernels`], [`RenderError::PtxRejected`], [`RenderError::Cuda`].
    pub fn new() -> Result<Self, RenderError> {
        Self::new_on(0)
    }

    /// As [`CudaRasterizer::new`], on device `ordinal` (the multi-GPU backend makes one per device).
    pub fn new_on(ordinal: usize) -> Result<Self, RenderError> {
        let (ctx, info) = context::open_device(ordinal)?;
        let kernels = KernelTable::load(&ctx, &info)?;
        let stream = ctx.new_stream().map_err(cuda_error("cuStreamCreate"))?;
        let timer = PassTimer::new(&ctx, MAX_PASSES)?;
        let counters = DeviceBuffer::alloc(&ctx, counter::COUNT, "the batch counters")?;
        Ok(Self {
            table: DeviceTable::empty("no points uploaded"),
            preprocess_on: !std::env::var("PCV_PREPROCESS").is_ok_and(|v| v == "0"),
            depth: None,
            vis: None,
            vis_out: None,
            blend: None,
            hzb: None,
            color: None,
            counters,
            timer,
            last: None,
            filter: None,
            external: Default::default(),
            slot_upload: slot_upload::SlotUploader::new(&ctx),
            kernels,
            stream,
            ctx,
            info,
        })
    }

    /// The device's name, e.g. "NVIDIA H200".
    /// What this device can take for a streamed load: the points that fit its free memory with the
    /// upload's peak (the points, then preprocessing's sorted copy and the batched modes' buffers).
    /// `PCV_DEVICE_BUDGET_MB` caps the free memory it counts (to try the refusal of clouds that do not
    /// fit on a large device).
    pub fn point_capacity(&self) -> Result<pcv_io::device::Capacity, RenderError> {
        let (mut free_bytes, _) = mem_info(&self.ctx)?;
        if let Some(mb) = std::env::var("PCV_DEVICE_BUDGET_MB").ok().and_then(|v| v.parse::<u64>().ok()) {
            free_bytes = free_bytes.min(mb << 20);
        }
        let bytes_per_point = upload::PEAK_BYTES_PER_POINT;
        Ok(pcv_io::device::Capacity {
            points: free_bytes.saturating_sub(upload::RESERVE_BYTES) / bytes_per_point,
            bytes_per_point,
            free_bytes,
            device: self.info.name.clone(),
        })
    }

    pub fn device_name(&self) -> String {
        self.info.name.clone()
    }

    /// Device name, compute capability, SM count, memory and driver version.
    pub fn device_info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The driver's CUDA version as (major, minor), e.g. (13, 0).
    pub fn driver_version(&self) -> (u32, u32) {
        let v = self.info.driver_version.max(0) as u32;
        (v / 1000, (v % 1000) / 10)
    }

    /// The CUDA context everything here lives in (for the GL interop).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every copy and launch is ordered on (the GL interop maps and unmaps on it).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the built-in scene `cloud` on the device and prepares it `chunk_points` points at a time
    /// ([`preprocess::preprocess_scene_chunked`]): what `upload` does for scenes too large to keep as
    /// 16-byte points; public so that tests can run it on small scenes. Only the batched modes draw it.
    pub fn upload_scene_in_chunks(&mut self, cloud: &PointCloud, chunk_points: u64) -> Result<(), RenderError> {
        let spec = cloud.scene().filter(|_| cloud.is_lazy_scene()).ok_or_else(|| RenderError::Cuda {
            context: "scene upload".into(),
            message: "only a built-in scene is made a chunk at a time".into(),
        })?;
        // A bad request leaves what is uploaded as it was.
        preprocess::check_chunk(chunk_points)?;
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        self.forget_upload();
        let range = 0..spec.num_points;
        self.table =
            DeviceTable::from_chunks(&self.ctx, &self.stream, &self.kernels, spec, &cloud.bounds, range, chunk_points)?;
        Ok(())
    }

    /// Forgets whatever was uploaded (points, prepared buffers, shown Python arrays, a node pool, the
    /// last frame), freeing it first so that its memory counts as free for what comes next. Every upload
    /// path starts here, then sets what it made.
    fn forget_upload(&mut self) {
        // A node pool's copies may still write into its buffers: they finish before the buffers go.
        self.slot_upload.finish();
        self.table = DeviceTable::empty("no points uploaded");
        self.external.shown = None;
        self.last = None;
        self.filter = None;
    }

    /// The uploaded points, copied back to the host.
    pub fn download_points(&self) -> Result<Vec<Point>, RenderError> {
        self.table.points.as_ref().ok_or(RenderError::NotUploaded)?.to_vec(&self.stream)
    }

    /// The last frame's final depth as float bits: the reference's depth buffer, or the visibility
    /// buffer's high halves (after a splat, the splatted one) — the CPU backend's `depth_bits` twin.
    pub fn depth_bits(&self) -> Result<Vec<u32>, RenderError> {
        match (self.last.map(|l| l.holds), &self.vis, &self.depth) {
            (Some(Final::VisColor | Final::VisIndex), Some(v), _) => {
                Ok(v.to_vec(&self.stream)?.into_iter().map(word_depth).collect())
            }
            (Some(Final::Depth), _, Some(d)) => d.to_vec(&self.stream),
            _ => Ok(Vec::new()),
        }
    }

    /// Whether later uploads sort and batch the points (on by default). Off, the points stay in their
    /// upload order and the batched modes are unavailable.
    pub fn set_preprocess(&mut self, on: bool) {
        self.preprocess_on = on;
    }

    /// The batches and quantized words the preprocessing made (for tests against the CPU twin).
    pub fn download_batches(&self) -> Result<(Vec<Batch>, Vec<u32>), RenderError> {
        let p = self.prepared_or_err(RenderMode::Quant)?;
        Ok((p.batches.to_vec(&self.stream)?, p.quant.to_vec(&self.stream)?))
    }

    fn prepared_or_err(&self, mode: RenderMode) -> Result<&DevicePrepared, RenderError> {
        self.table
            .prepared
            .as_ref()
            .map_err(|why| RenderError::ModeUnavailable { mode: mode.name(), reason: why.clone() })
    }

    /// The device's copy bandwidth: a device-to-device copy of `bytes` bytes (read + write counted),
    /// the best of `repeats`, in GB/s.
    pub fn measure_copy_gb_per_s(&self, bytes: usize, repeats: u32) -> Result<f64, RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let words = bytes / 4;
        let mut a = DeviceBuffer::<u32>::alloc(&self.ctx, words, "the copy benchmark's source")?;
        let mut b = DeviceBuffer::<u32>::alloc(&self.ctx, words, "the copy benchmark's destination")?;
        a.zero(&self.stream)?;
        let mut timer = PassTimer::new(&self.ctx, 1)?;
        let mut best_ms = f64::INFINITY;
        for _ in 0..repeats.max(1) + 1 {
            timer.begin(&self.stream)?;
            b.copy_from(&self.stream, &a)?;
            timer.mark(&self.stream)?;
            let (_, ms) = timer.finish(&["copy"])?;
            best_ms = best_ms.min(ms);
        }
        drop(a.zero(&self.stream));
        Ok(2.0 * (words * 4) as f64 / (best_ms / 1e3) / 1e9)
    }

    /// JIT-loads a PTX text and unloads it again: [`RenderError::PtxRejected`] (naming its `.version`
    /// and the driver's CUDA version) when the driver refuses it. For diagnostics and tests.
    pub fn try_load_ptx(&self, name: &str, ptx: &str) -> Result<(), RenderError> {
        Module::load_ptx(&self.ctx, &self.info, name, ptx).map(drop)
    }

    /// The device address of `slot`'s buffer of `n` elements, (re)allocated when the size changes.
    fn frame_buffer<T: bytemuck::Pod>(
        slot: &mut Option<DeviceBuffer<T>>,
        ctx: &Arc<CudaContext>,
        n: usize,
        what: &str,
    ) -> Result<u64, RenderError> {
        if slot.as_ref().is_none_or(|b| b.len() != n) {
            *slot = None; // free the old one before allocating the new one
            *slot = Some(DeviceBuffer::alloc(ctx, n, what)?);
        }
        Ok(slot.as_ref().map_or(0, |b| b.ptr()))
    }

    /// Checks that a caller's device pointer holds `len_px` words, where the driver can tell.
    fn check_device_target(&self, ptr: u64, len_px: usize) -> Result<(), RenderError> {
        if ptr == 0 {
            return Err(RenderError::Cuda { context: "Target::Device".into(), message: "null device pointer".into() });
        }
        if !ptr.is_multiple_of(4) {
            return Err(RenderError::Cuda {
                context: "Target::Device".into(),
                message: format!("device pointer {ptr:#x} is not 4-byte aligned"),
            });
        }
        let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: both out-pointers are valid locals; the call only reads the driver's allocation table.
        let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr) };
        // Memory the driver cannot place (some mapped graphics resources) is taken on the caller's word,
        // which Target::Device's contract asks for; memory it can place must hold the whole frame.
        if r == sys::CUresult::CUDA_SUCCESS {
            let end = ptr.saturating_add(len_px as u64 * 4);
            if end > base.saturating_add(size as u64) {
                return Err(RenderError::Cuda {
                    context: "Target::Device".into(),
                    message: format!(
                        "{len_px} pixels from {ptr:#x} run past the end of its allocation ({size} bytes from {base:#x})"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The visibility buffer of the last frame (or stage): `width * height` u64 words, if allocated.
    pub fn words_ptr(&self) -> Option<u64> {
        self.vis.as_ref().map(|v| v.ptr())
    }

    /// The prepared points' colours (device address, count), for the composite's gather.
    pub fn colors(&self) -> Option<(u64, u64)> {
        self.table.prepared.as_ref().ok().map(|p| (p.colors.ptr(), p.colors.len() as u64))
    }

    /// The loaded kernels (the multi-GPU backend launches the composite's kernels with them).
    pub fn kernel_table(&self) -> &KernelTable {
        &self.kernels
    }

    /// Makes points `first .. first + count` of the built-in scene `cloud` on this device and prepares
    /// them (sorted within the share, on the whole scene's grid): whole, keeping the 16-byte points, when
    /// they fit beside the batched buffers, else a chunk at a time. One rank's share of `--gpus`.
    pub fn upload_scene_share(&mut self, cloud: &PointCloud, first: u64, count: u64) -> Result<(), RenderError> {
        let spec = cloud.scene().filter(|_| cloud.is_lazy_scene()).ok_or_else(|| RenderError::Cuda {
            context: "scene upload".into(),
            message: "only a built-in scene is made a share at a time".into(),
        })?;
        if first.checked_add(count).is_none_or(|end| end > spec.num_points) || count == 0 {
            return Err(RenderError::Cuda {
                context: "scene upload".into(),
                message: format!("share {first}..+{count} of a scene of {} points", spec.num_points),
            });
        }
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        self.forget_upload();
        let (free_bytes, _) = context::mem_info(&self.ctx)?;
        if count >= u32::MAX as u64 || 40 * count + upload::RESERVE_BYTES > free_bytes {
            let (range, chunk) = (first..first + count, preprocess::CHUNK_POINTS);
            self.table =
                DeviceTable::from_chunks(&self.ctx, &self.stream, &self.kernels, spec, &cloud.bounds, range, chunk)?;
            return Ok(());
        }
        let points = upload::generate_scene_range(&self.ctx, &self.stream, &self.kernels, spec, first, count)?;
        self.table = DeviceTable::from_points(&self.ctx, &self.stream, &self.kernels, points, &cloud.bounds, true)?;
        Ok(())
    }

    /// Takes points already on this device (a share of files streamed to several GPUs, see
    /// [`stream_upload::upload_files_split`]) and prepares them on the grid of `bounds`, as
    /// [`Rasterizer::upload`] does with the points it streams itself.
    pub fn upload_device_points(
        &mut self,
        points: DeviceBuffer<Point>,
        bounds: &pcv_io::Bounds,
    ) -> Result<(), RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        self.forget_upload();
        self.table = DeviceTable::from_points(&self.ctx, &self.stream, &self.kernels, points, bounds, true)?;
        Ok(())
    }

    /// Runs `stage` of a frame: the whole frame into `target`, or only its raster passes (the words
    /// stay in the visibility buffer, [`CudaRasterizer::words_ptr`]), or only its post passes (splat,
    /// resolve, EDL) on colour words someone else wrote into that buffer (the multi-GPU composite).
    pub fn render_stage(
        &mut self,
        frame: &FrameParams,
        target: Option<Target<'_>>,
        stage: Stage,
    ) -> Result<FrameStats, RenderError> {
        let (num_points, points_ptr) = match (&self.table.points, self.table.num_points) {
            (Some(p), _) => (p.len() as u64, p.ptr()),
            (None, n) if n > 0 => (n, 0),
            _ => return Err(RenderError::NotUploaded),
        };
        if points_ptr == 0 && !frame.mode.uses_batches() {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: format!("the {num_points} points were prepared a chunk at a time and kept only as positions and colours: use vis, culled or quant"),
            });
        }
        let n = frame.num_pixels();
        match &target {
            Some(t) if t.len_px() != n => {
                return Err(RenderError::TargetSize {
                    got: t.len_px(),
                    width: frame.width_px,
                    height: frame.height_px,
                });
            }
            None if stage != Stage::Raster => {
                return Err(RenderError::Cuda {
                    context: "render".into(),
                    message: "no target for the frame's colours".into(),
                });
            }
            _ => {}
        }
        if stage != Stage::Whole && frame.mode == RenderMode::Reference {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "frames split across GPUs are composited as 64-bit words, and the reference mode keeps a 32-bit depth buffer: use packed, vis, culled or quant".into(),
            });
        }
        if n > u32::MAX as usize {
            return Err(RenderError::Cuda {
                context: "render".into(),
                message: format!(
                    "a {}x{} frame has more pixels than the kernels index (2^32 - 1)",
                    frame.width_px, frame.height_px
                ),
            });
        }
        let plan = stage.select(&frame.passes());
        if frame.mode.uses_batches() && stage != Stage::Post {
            self.prepared_or_err(frame.mode)?;
        }
        if self.table.pool_points.is_some() && !frame.mode.culls() {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "a level-of-detail pool is drawn by culled or quant".into(),
            });
        }
        let stats_points = self.table.pool_points.unwrap_or(num_points);
        if n == 0 {
            // Nothing to draw into (a minimized window): no launch can touch a pixel.
            let passes = plan.iter().map(|p| PassTime { name: p.name(), ms: 0.0 }).collect();
            self.last = None;
            return Ok(FrameStats { passes, total_ms: 0.0, points: stats_points, batches: None });
        }
        if let Some(Target::Device { ptr, len_px }) = &target {
            self.check_device_target(*ptr, *len_px)?;
        }
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let color_ptr = match &target {
            Some(Target::Device { ptr, .. }) => *ptr,
            Some(Target::Host(_)) => Self::frame_buffer(&mut self.color, &self.ctx, n, "the color buffer")?,
            // The raster stage writes no colours (the reference mode, which would, was refused above).
            None => 0,
        };
        let splats = plan.contains(&Pass::Splat);
        let depth_ptr = match frame.mode {
            RenderMode::Reference => Self::frame_buffer(&mut self.depth, &self.ctx, n, "the depth buffer")?,
            _ => 0,
        };
        let mut vis_ptr = match frame.mode != RenderMode::Reference || splats {
            true => Self::frame_buffer(&mut self.vis, &self.ctx, n, "the visibility buffer")?,
            false => 0,
        };
        let mut vis_out_ptr = match splats {
            true => Self::frame_buffer(&mut self.vis_out, &self.ctx, n, "the point-size buffer")?,
            false => 0,
        };
        let blend_ptr = match plan.contains(&Pass::Blend) {
            true => Self::frame_buffer(&mut self.blend, &self.ctx, 2 * n, "the high-quality sums")?,
            false => 0,
        };
        let hzb_params = HzbParams::for_frame(frame.width_px, frame.height_px);
        let hzb_ptr = match frame.mode.culls() {
            true => Self::frame_buffer(&mut self.hzb, &self.ctx, hzb_params.total as usize, "the depth pyramid")?,
            false => 0,
        };
        let mut holds = match frame.mode {
            _ if stage == Stage::Post => Final::VisColor,
            RenderMode::Reference => Final::Depth,
            RenderMode::Packed => Final::VisColor,
            _ => Final::VisIndex,
        };
        // A pool with a spacing per slot sizes adaptive points by their node's spacing: the uniforms carry
        // pixels per metre of spacing, the splat multiplies by the point's batch's (kernels/splat.cu).
        let batch_spacing = match (&self.table.slot_spacing, holds) {
            (Some(b), Final::VisIndex) if self.table.pool_points.is_some() => Some((b.ptr(), b.len() as u32)),
            _ => None,
        };
        let f = frame.uniforms();
        let u = match batch_spacing {
            Some(_) => frame.with_spacing(1.0).post_uniforms(),
            None => frame.post_uniforms(),
        };
        let (spacing_ptr, spacing_batches) = batch_spacing.unwrap_or((0, 0));
        let (stream, k) = (&self.stream, &self.kernels);
        let prep = self.table.prepared.as_ref().ok();
        let no_prep = || RenderError::ModeUnavailable { mode: frame.mode.name(), reason: "no prepared points".into() };
        let counts_ptr = self.counters.ptr();
        // The culled modes' own filter, and the addresses of the columns it reads (0: not read).
        let filter = self.filter.filter(|_| frame.mode.culls());
        if self.filter.is_some() && !frame.mode.culls() && stage != Stage::Post {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "the points are filtered by the culled modes (culled, quant): the filter would not show".into(),
            });
        }
        let fc = filter.map(|fu| self.table.columns.addresses(&fu)).unwrap_or_default();
        let timer = &mut self.timer;
        timer.begin(stream)?;
        // SAFETY (every launch below): `color_ptr` holds `n` u32 words: the internal color buffer was
        // sized for this frame by frame_buffer, and a Device target's `len_px == n` was checked above
        // (against its allocation, where the driver knows it). The depth, visibility and point-size
        // buffers are sized for `n` by frame_buffer whenever the plan uses them (the reference's depth
        // buffer in Reference mode; `vis` in every other mode and after a splat; `vis_out` when the plan
        // splats). `n == width * height` is non-zero and below 2^32, so the kernels' u32 pixel counts do
        // not wrap, and every pixel a point pass computes is clamped into the frame. `points_ptr` holds
        // `num_points` points (the uploaded buffer's own length; the modes that read it were refused
        // above when a chunked upload kept none). The preprocessing made, for the `num_points`
        // (< 2^34 - 1) uploaded points, 3 floats of position, one colour, one quantized word
        // each and ceil(num_points / BATCH_POINTS) batches whose counts cover exactly them, so every
        // index a batched pass writes into `vis` is below the colours' length; `counters` holds
        // counter::COUNT words. `blend` holds 2n u64 words whenever the plan blends (frame_buffer above).
        for &pass in &plan {
            match pass {
                Pass::Clear => match frame.mode {
                    RenderMode::Reference => unsafe { kernels::clear(k, stream, f, depth_ptr, color_ptr) }?,
                    RenderMode::Packed => unsafe { kernels::packed_clear(k, stream, f, vis_ptr) }?,
                    _ => {
                        unsafe { kernels::vis_clear(k, stream, f, vis_ptr) }?;
                        self.counters.zero(stream)?;
                    }
                },
                Pass::Depth => unsafe { kernels::depth(k, stream, f, points_ptr, num_points, depth_ptr) }?,
                Pass::Color => unsafe { kernels::color(k, stream, f, points_ptr, num_points, depth_ptr, color_ptr) }?,
                Pass::Packed => unsafe { kernels::packed(k, stream, f, points_ptr, num_points, vis_ptr) }?,
                Pass::Vis => {
                    let p = prep.ok_or_else(no_prep)?;
                    unsafe { kernels::vis(k, stream, f, p.positions.ptr(), num_points, vis_ptr) }?
                }
                Pass::VisDisk => {
                    let p = prep.ok_or_else(no_prep)?;
                    unsafe { kernels::vis_disk(k, stream, f, u, p.positions.ptr(), num_points, vis_ptr) }?
                }
                // The culled modes: `visible` holds a byte and `list` a word per batch; `hzb` the pyramid
                // of this frame's size; the lists' counts live in `counters`. With a filter, its entry
                // points: `fu` tests a column only when the table holds it (set_raster_filter made it
                // first, `DeviceColumns::hold`), and `fc` has its address: a code or value for each of
                // the table's points and a summary for each of its batches.
                Pass::Draw1 | Pass::Draw2 => {
                    let p = prep.ok_or_else(no_prep)?;
                    let (b, nb, pos, visible, list) =
                        (p.batches.ptr(), p.num_batches(), p.positions.ptr(), p.visible.ptr(), p.list.ptr());
                    let count = if pass == Pass::Draw1 {
                        match &filter {
                            Some(fu) => unsafe {
                                kernels::cull_phase1_filtered(k, stream, f, *fu, fc, b, nb, visible, list, counts_ptr)
                            },
                            None => unsafe { kernels::cull_phase1(k, stream, f, b, nb, visible, list, counts_ptr) },
                        }?;
                        counts_ptr + 4 * counter::LIST1 as u64
                    } else {
                        match &filter {
                            Some(fu) => unsafe {
                                kernels::cull_phase2_filtered(
                                    k, stream, f, *fu, fc, hzb_params, b, nb, visible, hzb_ptr, list, counts_ptr,
                                )
                            },
                            None => unsafe {
                                kernels::cull_phase2(
                                    k, stream, f, hzb_params, b, nb, visible, hzb_ptr, list, counts_ptr,
                                )
                            },
                        }?;
                        counts_ptr + 4 * counter::LIST2 as u64
                    };
                    let quant = p.quant.ptr();
                    match (&filter, frame.mode) {
                        (Some(fu), mode) => unsafe {
                            let use_quant = (mode == RenderMode::Quant) as u32;
                            kernels::raster_list_filtered(
                                k, stream, f, *fu, fc, b, list, count, pos, quant, vis_ptr, counts_ptr, nb, use_quant,
                            )
                        },
                        (None, RenderMode::Quant) => unsafe {
                            kernels::raster_list_quant(
                                k, stream, f, b, list, count, pos, quant, vis_ptr, counts_ptr, nb,
                            )
                        },
                        (None, _) => unsafe {
                            kernels::raster_list(k, stream, f, b, list, count, pos, quant, vis_ptr, counts_ptr, nb)
                        },
                    }?
                }
                Pass::Hzb => {
                    let (w, h) = (frame.width_px, frame.height_px);
                    unsafe { kernels::hzb_tiles(k, stream, hzb_params, w, h, vis_ptr, hzb_ptr) }?;
                    unsafe { kernels::hzb_up(k, stream, hzb_params, hzb_ptr) }?;
                }
                Pass::Splat => {
                    if holds == Final::Depth {
                        unsafe { kernels::splat_ref(k, stream, u, depth_ptr, color_ptr, vis_out_ptr) }?;
                        holds = Final::VisColor;
                    } else {
                        // `spacing_ptr` is 0 or holds `spacing_batches` floats, one per pool slot, and in
                        // VisIndex the payloads are indices into the pool (checked against the count).
                        unsafe { kernels::splat(k, stream, u, vis_ptr, vis_out_ptr, spacing_ptr, spacing_batches) }?;
                    }
                    std::mem::swap(&mut self.vis, &mut self.vis_out);
                    std::mem::swap(&mut vis_ptr, &mut vis_out_ptr);
                }
                // High quality: the sums cleared, then every point near its pixel's final depth added
                // (the vis mode: all points; the culled modes: the batches in view, listed after the
                // draws are done, so `list` is free).
                Pass::Blend => {
                    let p = prep.ok_or_else(no_prep)?;
                    let (pos, colors) = (p.positions.ptr(), p.colors.ptr());
                    unsafe { kernels::blend_clear(k, stream, f, blend_ptr) }?;
                    if frame.mode.culls() {
                        let (b, nb, list, quant) = (p.batches.ptr(), p.num_batches(), p.list.ptr(), p.quant.ptr());
                        let count = counts_ptr + 4 * counter::LIST_BLEND as u64;
                        let use_quant = (frame.mode == RenderMode::Quant) as u32;
                        // The pyramid again, of the final buffer: the batches wholly past the blend
                        // window of what it holds are skipped.
                        let (w, h) = (frame.width_px, frame.height_px);
                        unsafe { kernels::hzb_tiles(k, stream, hzb_params, w, h, vis_ptr, hzb_ptr) }?;
                        unsafe { kernels::hzb_up(k, stream, hzb_params, hzb_ptr) }?;
                        let hp = hzb_params;
                        match &filter {
                            Some(fu) => unsafe {
                                kernels::blend_cull_filtered(
                                    k, stream, f, u, *fu, fc, hp, b, nb, hzb_ptr, list, counts_ptr,
                                )?;
                                kernels::blend_list_filtered(
                                    k, stream, f, u, *fu, fc, b, list, count, pos, quant, colors, vis_ptr, blend_ptr,
                                    nb, use_quant,
                                )
                            },
                            None => unsafe {
                                kernels::blend_cull(k, stream, f, u, hp, b, nb, hzb_ptr, list, counts_ptr)?;
                                kernels::blend_list(
                                    k, stream, f, u, b, list, count, pos, quant, colors, vis_ptr, blend_ptr, nb,
                                    use_quant,
                                )
                            },
                        }?
                    } else {
                        unsafe { kernels::blend(k, stream, f, u, pos, num_points, colors, vis_ptr, blend_ptr) }?
                    }
                }
                Pass::Resolve if blend_ptr != 0 => {
                    let colors = prep.ok_or_else(no_prep)?.colors.ptr();
                    unsafe { kernels::blend_resolve(k, stream, f, vis_ptr, colors, blend_ptr, color_ptr) }?
                }
                Pass::Resolve => match holds {
                    Final::VisIndex => {
                        let colors = prep.ok_or_else(no_prep)?.colors.ptr();
                        unsafe { kernels::vis_resolve(k, stream, f, vis_ptr, colors, color_ptr) }?
                    }
                    _ => unsafe { kernels::packed_resolve(k, stream, f, vis_ptr, color_ptr) }?,
                },
                Pass::Edl => match holds {
                    Final::Depth => unsafe { kernels::edl(k, stream, u, depth_ptr, color_ptr) }?,
                    _ => unsafe { kernels::edl_words(k, stream, u, vis_ptr, color_ptr) }?,
                },
            }
            timer.mark(stream)?;
        }
        let names: Vec<&'static str> = plan.iter().map(|p| p.name()).collect();
        let (passes, total_ms) = timer.finish(&names)?;
        let batches = if frame.mode.culls() && stage != Stage::Post {
            let mut c = [0u32; counter::COUNT];
            self.counters.read_at(stream, 0, &mut c)?;
            Some(BatchCounts {
                culled: c[counter::CULLED],
                occluded: c[counter::OCCLUDED],
                quantized: c[counter::QUANTIZED],
                full: c[counter::FULL],
                filtered: c[counter::FILTERED],
            })
        } else {
            None
        };
        self.last = Some(LastFrame {
            clip_from_world: frame.clip_from_world,
            width_px: frame.width_px,
            height_px: frame.height_px,
            holds,
        });
        if let Some(Target::Host(buf)) = target {
            let color = self.color.as_ref().ok_or_else(|| RenderError::Cuda {
                context: "render".into(),
                message: "internal color buffer missing".into(),
            })?;
            color.read_at(stream, 0, buf)?;
        }
        Ok(FrameStats { passes, total_ms, points: stats_points, batches })
    }
}

/// Which passes of a frame [`CudaRasterizer::render_stage`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Every pass.
    Whole,
    /// The passes up to the visibility words (clear and raster; no splat, resolve or EDL).
    Raster,
    /// The post passes (splat, resolve, EDL) on colour words already in the visibility buffer.
    Post,
}

impl Stage {
    /// The passes of `plan` this stage runs.
    pub fn select(self, plan: &[Pass]) -> Vec<Pass> {
        let post = |p: &Pass| matches!(p, Pass::Splat | Pass::Resolve | Pass::Edl);
        match self {
            Stage::Whole => plan.to_vec(),
            Stage::Raster => plan.iter().copied().filter(|p| !post(p)).collect(),
            Stage::Post => plan.iter().copied().filter(post).collect(),
        }
    }
}

impl Rasterizer for CudaRasterizer {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn description(&self) -> String {
        self.info.describe()
    }

    fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        // Free the old points first, so that their memory counts as free for the new ones.
        self.forget_upload();
        // A built-in scene too large to keep as 16-byte points beside its batched buffers is made and
        // prepared a chunk at a time (only the batched modes then draw it).
        if let Some(spec) = cloud.scene().filter(|_| cloud.is_lazy_scene() && self.preprocess_on) {
            let (free_bytes, _) = context::mem_info(&self.ctx)?;
            let whole_bytes = 40 * spec.num_points + upload::RESERVE_BYTES;
            if spec.num_points >= u32::MAX as u64 || whole_bytes > free_bytes {
                return self.upload_scene_in_chunks(cloud, preprocess::CHUNK_POINTS);
            }
        }
        let mut bounds = cloud.bounds;
        let mut streamed_codes = None;
        let points = if let Some(files) = cloud.files().filter(|_| cloud.is_device_only()) {
            // Files streamed to the device: decoded on all cores, copied through pinned slots (with
            // their class codes when a filter asked for them).
            let (points, codes) = stream_upload::upload_files(&self.ctx, files)?;
            streamed_codes = codes;
            bounds = pcv_io::device::local_bounds(files).unwrap_or(bounds);
            points
        } else if cloud.is_lazy_scene() {
            upload::generate_scene(&self.ctx, &self.stream, &self.kernels, cloud)?
        } else {
            upload::upload_host(&self.ctx, &self.stream, cloud)?
        };
        let preprocess = self.preprocess_on;
        self.table = DeviceTable::from_points(&self.ctx, &self.stream, &self.kernels, points, &bounds, preprocess)?;
        if let (Some(codes), Ok(p)) = (streamed_codes, &self.table.prepared) {
            self.table.columns.classes = filter::code_column_of(&self.ctx, &self.stream, &self.kernels, p, codes)?;
        }
        Ok(())
    }

    fn preprocess_ms(&self) -> Option<f64> {
        self.table.preprocess_ms
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        if self.external.shown.is_some() {
            return self.render_shown(frame, target);
        }
        self.render_stage(frame, Some(target), Stage::Whole)
    }

    fn pick(&mut self, x_px: u32, y_px: u32, radius_px: u32) -> Result<Option<PickHit>, RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        super::pick::pick(self, x_px, y_px, radius_px)
    }

    fn num_points(&self) -> u64 {
        if let Some(n) = self.table.pool_points {
            return n;
        }
        match self.shown_external() {
            Some(e) => e.num_points(),
            None => self.table.points.as_ref().map_or(self.table.num_points, |p| p.len() as u64),
        }
    }

    fn reserve_slots(&mut self, slots: u32) -> Result<(), RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        self.forget_upload();
        let n = slots as u64 * crate::gpu_data::BATCH_POINTS as u64;
        let (free_bytes, _) = mem_info(&self.ctx)?;
        let needed_bytes = 20 * n + 45 * slots as u64 + upload::RESERVE_BYTES;
        if needed_bytes > free_bytes {
            return Err(RenderError::OutOfMemory {
                points: n,
                needed_bytes,
                free_bytes,
                fit_points: free_bytes.saturating_sub(upload::RESERVE_BYTES) / 20,
            });
        }
        self.table = DeviceTable::pool(&self.ctx, &self.stream, slots)?;
        Ok(())
    }

    fn write_slots(&mut self, writes: &[super::SlotWrite<'_>]) -> Result<u64, RenderError> {
        let p = self.table.pool_prepared()?;
        self.slot_upload.write(&self.stream, p, writes)
    }

    fn slot_writes_done(&mut self) -> Result<u64, RenderError> {
        self.slot_upload.done()
    }

    fn set_slot_batches(&mut self, batches: &[Batch], after_write: u64) -> Result<(), RenderError> {
        // A table that does not fit is refused before the render stream waits for anything.
        crate::check_pool_table(batches.len(), self.table.pool_prepared()?.batches.len())?;
        // The frames drawn with this table run after the copies of the slots it draws.
        self.slot_upload.order_after(&self.stream, after_write)?;
        self.table.set_pool_batches(&self.stream, batches)
    }

    fn set_slot_spacing(&mut self, spacing_m: &[f32]) -> Result<(), RenderError> {
        self.table.set_pool_spacing(&self.ctx, &self.stream, spacing_m)
    }

    fn stream_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        Some(self.point_capacity())
    }

    fn device_memory_used_bytes(&self) -> Option<u64> {
        mem_info(&self.ctx).ok().map(|(free, total)| total.saturating_sub(free))
    }

    fn cuda_handle(&self) -> Option<CudaHandle> {
        Some(CudaHandle { ctx: self.ctx.clone(), stream: self.stream.clone() })
    }

    fn device_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        Some(self.point_capacity())
    }

    fn measure_copy_gb_per_s(&self, bytes: usize, repeats: u32) -> Option<Result<f64, RenderError>> {
        Some(CudaRasterizer::measure_copy_gb_per_s(self, bytes, repeats))
    }

    fn device_depth_bits(&self) -> Option<Result<Vec<u32>, RenderError>> {
        Some(self.depth_bits())
    }

    fn device_points(&self) -> Option<Result<Vec<Point>, RenderError>> {
        Some(self.download_points())
    }

    fn raster_filters(&self) -> bool {
        true
    }

    fn set_raster_filter(
        &mut self,
        filter: Option<&FilterUniforms>,
        columns: &dyn Fn(crate::filter::FilterColumn) -> Option<crate::filter::ColumnData>,
    ) -> Result<bool, RenderError> {
        let Some(fu) = filter else {
            self.filter = None;
            self.table.columns.kept = None;
            return Ok(true);
        };
        // Until this filter is set whole, none is (a refusal leaves the caller to upload kept points).
        self.filter = None;
        self.table.columns.kept = None;
        // Only a table the preprocessing sorted with its map (host points, the scene kernel, streamed
        // files): not a node pool, a table made a chunk at a time, or Python's arrays.
        let filterable = self.external.shown.is_none()
            && self.table.pool_points.is_none()
            && self.table.prepared.as_ref().is_ok_and(|p| p.order.is_some());
        if !filterable {
            return Ok(false);
        }
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let Ok(p) = self.table.prepared.as_ref() else { return Ok(false) };
        if !self.table.columns.make(&self.ctx, &self.stream, &self.kernels, p, fu, columns)? {
            return Ok(false);
        }
        if std::env::var("PCV_KEPT_LISTS").is_ok_and(|v| v == "0") {
            self.table.columns.kept = None;
        } else {
            self.table.columns.make_kept(&self.ctx, &self.stream, &self.kernels, p, fu)?;
        }
        self.filter = Some(*fu);
        Ok(true)
    }

    unsafe fn show_external(
        &mut self,
        points: crate::external::ExternalPoints,
        keepalive: Box<dyn std::any::Any + Send>,
    ) -> Result<pcv_io::Bounds, RenderError> {
        // SAFETY: the trait method's contract is the inherent method's.
        unsafe { CudaRasterizer::show_external(self, points, keepalive) }
    }
}

impl PickWords for CudaRasterizer {
    fn last_frame(&self) -> Option<LastFrame> {
        self.last
    }

    fn read_words(&mut self, last: &LastFrame, y: u32, x: u32, len: usize) -> Result<Vec<u64>, RenderError> {
        let at = y as usize * last.width_px as usize + x as usize;
        let missing =
            || RenderError::Cuda { context: "pick".into(), message: "the last frame's buffer is gone".into() };
        match last.holds {
            Final::Depth => {
                let mut row = vec![0u32; len];
                self.depth.as_ref().ok_or_else(missing)?.read_at(&self.stream, at, &mut row)?;
                Ok(row.into_iter().map(|d| word(d, 0)).collect())
            }
            _ => {
                let mut row = vec![0u64; len];
                self.vis.as_ref().ok_or_else(missing)?.read_at(&self.stream, at, &mut row)?;
                Ok(row)
            }
        }
    }

    fn point(&mut self, index: u64) -> Result<Option<(glam::Vec3, Option<u64>)>, RenderError> {
        let Ok(p) = &self.table.prepared else {
            return Ok(None);
        };
        let index = index as usize;
        if index >= p.colors.len() {
            return Ok(None);
        }
        let mut pos = [0f32; 3];
        p.positions.read_at(&self.stream, 3 * index, &mut pos)?;
        let original = match &p.order {
            Some(order) => {
                let mut original = [0u32; 1];
                order.read_at(&self.stream, index, &mut original)?;
                Some(original[0] as u64)
            }
            None => None,
        };
        Ok(Some((glam::Vec3::from(pos), original)))
    }
}

impl Drop for CudaRasterizer {
    fn drop(&mut self) {
        // Let in-flight work finish before the buffers it uses are freed (the node pool's copies too).
        self.ctx.record_err(self.stream.synchronize());
        self.slot_upload.finish();
    }
}
