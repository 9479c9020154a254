//! The CUDA backend: the kernels in `kernels/*.cu`, driven through the CUDA driver API (cudarc).
//!
//! How it works:
//! - [`CudaRasterizer::new`] opens the driver and device 0 (`context.rs`: libcuda is looked for first,
//!   so a machine without a driver gets [`RenderError::NoDriver`] and the CPU backend, never a panic),
//!   loads the embedded fatbins once (`modules.rs`), and makes one non-blocking stream on which every
//!   copy and launch is ordered.
//! - [`Rasterizer::upload`] puts the points on the device and keeps them there (`upload.rs`): the
//!   built-in scene is made on the device by `pcv_scene`, other clouds are copied in chunks. Then
//!   `preprocess.rs` sorts them spatially on the device and makes the batched modes' buffers
//!   (positions, colors, batches, quantized words); `PCV_PREPROCESS=0` skips that (unsorted points, no
//!   batched modes), to measure what the order alone is worth.
//! - [`Rasterizer::render`] runs `pcv_clear`, `pcv_depth` and `pcv_color` (`launch.rs`) with a CUDA event
//!   before and after each (`timing.rs`); in [`RenderMode::Packed`] it runs `pcv_packed_clear`,
//!   `pcv_packed` and `pcv_packed_resolve` instead; the batched modes run `pcv_vis_clear`, their pass
//!   (`pcv_vis`, `pcv_culled`, `pcv_culled_dedup` or `pcv_quant`) and `pcv_vis_resolve`. The depth (or 64-bit visibility) buffer is internal
//!   and follows the frame size. The last pass writes into a [`Target::Device`] pointer directly (a GL
//!   pixel buffer mapped by [`crate::display::interop`]); for [`Target::Host`] it writes an internal
//!   color buffer that is then copied into the host slice.
//!
//! Every kernel has a CPU twin of the same name in `render/cpu/`; `tests/cuda_vs_cpu.rs` checks the
//! two agree (scene bit for bit, images except at exact depth ties).
pub mod context;
pub mod launch;
pub mod memory;
pub mod modules;
pub mod preprocess;
pub mod timing;
pub mod upload;

pub use context::DeviceInfo;
pub use modules::{KernelEntry, KernelImage, KERNELS, LAUNCHED_KERNELS, NVCC_RELEASE};

use super::{BatchCounts, FrameParams, FrameStats, PassTime, Rasterizer, RenderError, RenderMode, Target};
use crate::cloud::PointCloud;
use crate::render::gpu_data::{Batch, Point};
use preprocess::DevicePrepared;
use context::cuda_error;
use cudarc::driver::{sys, CudaContext, CudaStream};
use memory::DeviceBuffer;
use modules::{Kernel, KernelTable, Module};
use std::sync::Arc;
use timing::PassTimer;

/// The passes of a [`RenderMode::Reference`] frame, in order, as [`FrameStats::passes`] names them.
pub const PASSES: &[&str] = &["clear", "depth", "color"];
/// The passes of a [`RenderMode::Packed`] frame (the CPU backend's names).
pub const PACKED_PASSES: &[&str] = &["clear", "packed", "resolve"];

/// Renders with the CUDA kernels on device 0.
pub struct CudaRasterizer {
    // Fields drop in declaration order: device memory and modules before the stream and the context.
    points: Option<DeviceBuffer<Point>>,
    /// The batched modes' buffers, or why there are none.
    prepared: Result<DevicePrepared, String>,
    preprocess_ms: Option<f64>,
    /// Whether uploads run the preprocessing (on unless `PCV_PREPROCESS=0`; see [`Self::set_preprocess`]).
    preprocess_on: bool,
    depth: Option<DeviceBuffer<u32>>,
    vis: Option<DeviceBuffer<u64>>,
    color: Option<DeviceBuffer<u32>>,
    /// The batched passes' counters: culled, quantized, full-precision batches.
    counters: DeviceBuffer<u32>,
    /// One timer per mode, in [`RenderMode::ALL`]'s order.
    timers: Vec<PassTimer>,
    /// Whether the last frame was a batched mode (its depth lives in `vis`).
    last_batched: bool,
    kernels: KernelTable,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
}

impl CudaRasterizer {
    /// Opens device 0 and loads the kernels. Errors: [`RenderError::NoDriver`], [`RenderError::NoDevice`],
    /// [`RenderError::NoKernels`], [`RenderError::PtxRejected`], [`RenderError::Cuda`].
    pub fn new() -> Result<Self, RenderError> {
        let (ctx, info) = context::open()?;
        let kernels = KernelTable::load(&ctx, &info)?;
        let stream = ctx.new_stream().map_err(cuda_error("cuStreamCreate"))?;
        let timers = RenderMode::ALL.iter().map(|m| PassTimer::new(&ctx, m.passes())).collect::<Result<Vec<_>, _>>()?;
        let counters = DeviceBuffer::alloc(&ctx, 3, "the batch counters")?;
        Ok(Self {
            points: None,
            prepared: Err("no points uploaded".into()),
            preprocess_ms: None,
            preprocess_on: !std::env::var("PCV_PREPROCESS").is_ok_and(|v| v == "0"),
            depth: None,
            vis: None,
            color: None,
            counters,
            timers,
            last_batched: false,
            kernels,
            stream,
            ctx,
            info,
        })
    }

    /// The device's name, e.g. "NVIDIA H200".
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

    /// The uploaded points, copied back to the host.
    pub fn download_points(&self) -> Result<Vec<Point>, RenderError> {
        self.points.as_ref().ok_or(RenderError::NotUploaded)?.to_vec(&self.stream)
    }

    /// The depth buffer of the last [`RenderMode::Reference`] frame as float bits, or of the last
    /// frame's visibility buffer when that was a batched mode (the CPU backend's `depth_bits` twin).
    pub fn depth_bits(&self) -> Result<Vec<u32>, RenderError> {
        if self.last_batched {
            return match &self.vis {
                Some(v) => Ok(v.to_vec(&self.stream)?.into_iter().map(|w| (w >> 32) as u32).collect()),
                None => Ok(Vec::new()),
            };
        }
        match &self.depth {
            Some(d) => d.to_vec(&self.stream),
            None => Ok(Vec::new()),
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
        self.prepared.as_ref().map_err(|why| RenderError::ModeUnavailable { mode: mode.name(), reason: why.clone() })
    }

    /// The device's copy bandwidth: a device-to-device copy of `bytes` bytes (read + write counted),
    /// the best of `repeats`, in GB/s.
    pub fn measure_copy_gb_per_s(&self, bytes: usize, repeats: u32) -> Result<f64, RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let words = bytes / 4;
        let mut a = DeviceBuffer::<u32>::alloc(&self.ctx, words, "the copy benchmark's source")?;
        let mut b = DeviceBuffer::<u32>::alloc(&self.ctx, words, "the copy benchmark's destination")?;
        a.zero(&self.stream)?;
        let mut timer = PassTimer::new(&self.ctx, &["copy"])?;
        let mut best_ms = f64::INFINITY;
        for _ in 0..repeats.max(1) + 1 {
            timer.begin(&self.stream)?;
            b.copy_from(&self.stream, &a)?;
            timer.mark(&self.stream)?;
            let (_, ms) = timer.finish()?;
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
        self.points = None;
        self.prepared = Err("no points uploaded".into());
        self.preprocess_ms = None;
        let points = if cloud.is_lazy_scene() {
            upload::generate_scene(&self.ctx, &self.stream, &self.kernels, cloud)?
        } else {
            upload::upload_host(&self.ctx, &self.stream, cloud)?
        };
        if !self.preprocess_on {
            self.points = Some(points);
            self.prepared = Err("the upload skipped the preprocessing (PCV_PREPROCESS=0)".into());
            return Ok(());
        }
        let done = preprocess::preprocess(&self.ctx, &self.stream, &self.kernels, points, &cloud.bounds)?;
        self.points = Some(done.points);
        self.preprocess_ms = done.prepared.is_ok().then_some(done.elapsed_ms);
        self.prepared = done.prepared;
        Ok(())
    }

    fn preprocess_ms(&self) -> Option<f64> {
        self.preprocess_ms
    }

    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        let points = self.points.as_ref().ok_or(RenderError::NotUploaded)?;
        let n = frame.num_pixels();
        if target.len_px() != n {
            return Err(RenderError::TargetSize {
                got: target.len_px(),
                width: frame.width_px,
                height: frame.height_px,
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
        let num_points = points.len() as u64;
        let points_ptr = points.ptr();
        let passes_of_mode = frame.mode.passes();
        if frame.mode.uses_batches() {
            self.prepared_or_err(frame.mode)?;
        }
        if n == 0 {
            // Nothing to draw into (a minimized window): no launch can touch a pixel.
            let passes = passes_of_mode.iter().map(|&name| PassTime { name, ms: 0.0 }).collect();
            return Ok(FrameStats { passes, total_ms: 0.0, points: num_points, batches: None });
        }
        if let Target::Device { ptr, len_px } = target {
            self.check_device_target(ptr, len_px)?;
        }
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let color_ptr = match &target {
            Target::Device { ptr, .. } => *ptr,
            Target::Host(_) => Self::frame_buffer(&mut self.color, &self.ctx, n, "the color buffer")?,
        };
        let f = frame.uniforms();
        let stream = &self.stream;
        let k = &self.kernels;
        let mode_index = RenderMode::ALL.iter().position(|&m| m == frame.mode).unwrap_or(0);
        let mut batches = None;
        self.last_batched = frame.mode.uses_batches();
        // SAFETY (for every launch below): `color_ptr` holds `n` u32 words: the internal color buffer was
        // sized for this frame by frame_buffer, and a Device target's `len_px == n` was checked above
        // (against its allocation, where the driver knows it). The depth and visibility buffers are sized
        // for `n` by frame_buffer. `n == width * height` is non-zero and below 2^32, so the kernels' u32
        // pixel counts do not wrap, and every pixel a point pass computes is clamped into the frame.
        // `points_ptr` holds `num_points` points (the uploaded buffer's own length; a null pointer with 0
        // points, which no thread reads).
        let (passes, total_ms) = match frame.mode {
            RenderMode::Reference => {
                let depth_ptr = Self::frame_buffer(&mut self.depth, &self.ctx, n, "the depth buffer")?;
                let t = &mut self.timers[mode_index];
                t.begin(stream)?;
                // SAFETY: see above: depth and color cover the frame.
                unsafe { launch::clear(k.get(Kernel::Clear), stream, &f, depth_ptr, color_ptr) }?;
                t.mark(stream)?;
                // SAFETY: see above: the points and the depth buffer.
                unsafe { launch::depth(k.get(Kernel::Depth), stream, &f, points_ptr, num_points, depth_ptr) }?;
                t.mark(stream)?;
                // SAFETY: see above: the points, depth and color.
                unsafe {
                    launch::color(k.get(Kernel::Color), stream, &f, points_ptr, num_points, depth_ptr, color_ptr)
                }?;
                t.mark(stream)?;
                t.finish()?
            }
            RenderMode::Packed => {
                let vis_ptr = Self::frame_buffer(&mut self.vis, &self.ctx, n, "the visibility buffer")?;
                let t = &mut self.timers[mode_index];
                t.begin(stream)?;
                // SAFETY: see above: the visibility buffer covers the frame.
                unsafe { launch::packed_clear(k.get(Kernel::PackedClear), stream, &f, vis_ptr) }?;
                t.mark(stream)?;
                // SAFETY: see above: the points and the visibility buffer.
                unsafe { launch::packed(k.get(Kernel::Packed), stream, &f, points_ptr, num_points, vis_ptr) }?;
                t.mark(stream)?;
                // SAFETY: see above: visibility and color cover the frame.
                unsafe { launch::packed_resolve(k.get(Kernel::PackedResolve), stream, &f, vis_ptr, color_ptr) }?;
                t.mark(stream)?;
                t.finish()?
            }
            RenderMode::Vis | RenderMode::Culled | RenderMode::Dedup | RenderMode::Quant => {
                let vis_ptr = Self::frame_buffer(&mut self.vis, &self.ctx, n, "the visibility buffer")?;
                let p = self.prepared.as_ref().map_err(|why| RenderError::ModeUnavailable {
                    mode: frame.mode.name(),
                    reason: why.clone(),
                })?;
                let counts_ptr = self.counters.ptr();
                let t = &mut self.timers[mode_index];
                t.begin(stream)?;
                // SAFETY: see above: the visibility buffer covers the frame.
                unsafe { launch::vis_clear(k.get(Kernel::VisClear), stream, &f, vis_ptr) }?;
                self.counters.zero(stream)?;
                t.mark(stream)?;
                // SAFETY (each arm): see above for the visibility buffer. The preprocessing made, for the
                // `num_points` (< 2^32 - 1) uploaded points, 3 floats of position and one quantized word
                // each and ceil(num_points / BATCH_POINTS) batches whose counts cover exactly them;
                // `counters` holds 3 words.
                match frame.mode {
                    RenderMode::Vis => unsafe {
                        launch::vis(k.get(Kernel::Vis), stream, &f, p.positions.ptr(), num_points, vis_ptr)
                    }?,
                    RenderMode::Culled | RenderMode::Dedup => {
                        let (kernel, entry) = if frame.mode == RenderMode::Culled {
                            (Kernel::Culled, "pcv_culled")
                        } else {
                            (Kernel::CulledDedup, "pcv_culled_dedup")
                        };
                        unsafe {
                            launch::culled(
                                k.get(kernel),
                                entry,
                                stream,
                                &f,
                                p.batches.ptr(),
                                p.num_batches(),
                                p.positions.ptr(),
                                vis_ptr,
                                counts_ptr,
                            )
                        }?
                    }
                    _ => unsafe {
                        launch::quant(
                            k.get(Kernel::Quant),
                            stream,
                            &f,
                            p.batches.ptr(),
                            p.num_batches(),
                            p.quant.ptr(),
                            p.positions.ptr(),
                            vis_ptr,
                            counts_ptr,
                        )
                    }?,
                }
                t.mark(stream)?;
                // SAFETY: see above: visibility and color cover the frame; every index in the buffer is
                // a point's (< num_points == colors' length) or the empty marker.
                unsafe { launch::vis_resolve(k.get(Kernel::VisResolve), stream, &f, vis_ptr, p.colors.ptr(), color_ptr) }?;
                t.mark(stream)?;
                let timed = t.finish()?;
                if frame.mode != RenderMode::Vis {
                    let mut c = [0u32; 3];
                    self.counters.read_at(stream, 0, &mut c)?;
                    batches = Some(BatchCounts { culled: c[0], quantized: c[1], full: c[2] });
                }
                timed
            }
        };
        if let Target::Host(buf) = target {
            let color = self.color.as_ref().ok_or_else(|| RenderError::Cuda {
                context: "render".into(),
                message: "internal color buffer missing".into(),
            })?;
            color.read_at(stream, 0, buf)?;
        }
        Ok(FrameStats { passes, total_ms, points: num_points, batches })
    }

    fn num_points(&self) -> u64 {
        self.points.as_ref().map_or(0, |p| p.len() as u64)
    }

    fn as_cuda(&mut self) -> Option<&mut CudaRasterizer> {
        Some(self)
    }
}

impl Drop for CudaRasterizer {
    fn drop(&mut self) {
        // Let in-flight work finish before the buffers it uses are freed.
        self.ctx.record_err(self.stream.synchronize());
    }
}
