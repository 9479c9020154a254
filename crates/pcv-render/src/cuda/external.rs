//! Rendering from borrowed device arrays, without uploading them: the CUDA side of
//! [`crate::external`] (kernels in `kernels/external.cu`).
//!
//! How it works: the caller holds the arrays (a CuPy array, a PyTorch tensor, ...) and describes them
//! as [`ExternalPoints`]. [`CudaRasterizer::check_external`] asks the driver where each array lives:
//! on this context's device (`cuPointerGetAttribute`), with every byte the layout reaches inside one
//! allocation (`cuMemGetAddressRange`, where the driver can tell). [`order_after`] makes the rasterizer's
//! stream wait for the stream that produced the arrays (an event recorded there, `cuStreamWaitEvent`
//! here), so a producer's kernel still running is finished before the points are read, without
//! blocking the host. [`CudaRasterizer::render_external`] then runs the `vis` mode's passes over them:
//! `pcv_vis` for C-contiguous (N, 3) positions, `pcv_vis_strided` for any other layout, the post passes
//! as usual, and `pcv_ext_resolve`, which reads the visible points' colours in their own format. Point
//! size by scatter (`pcv_vis_disk`) reads packed positions only: other layouts are packed first into a
//! buffer kept for the next frame (`pcv_pack_positions`, the only copy this path makes).
//!
//! For the window, [`CudaRasterizer::show_external`] keeps the arrays as the rasterizer's points until
//! the next upload or show, together with whatever keeps them alive (the Python objects), so that
//! [`crate::Rasterizer::render`] and picking read them like uploaded points; the window's loop does not know
//! the difference. [`CudaRasterizer::external_bounds`] measures the box of the finite points on the
//! device (`pcv_ext_bounds`: six numbers come back) for the camera's planes and framing, and
//! [`CudaRasterizer::depth_to_device`] copies the last frame's depth into a caller's buffer.
use super::context::cuda_error;
use super::memory::DeviceBuffer;
use super::table::DeviceTable;
use super::{kernels, CudaRasterizer};
use crate::external::{ExternalPoints, StridedLayout};
use crate::pick::{Final, LastFrame};
use crate::plan::Pass;
use crate::twins::external::bounds_from_keys;
use crate::{FrameParams, FrameStats, RenderError, RenderMode, Target};
use cudarc::driver::{sys, CudaContext};
use pcv_io::Bounds;
use std::any::Any;
use std::ffi::c_uint;

/// Arrays shown as the rasterizer's points, and what keeps them alive.
pub struct Shown {
    pub points: ExternalPoints,
    _keepalive: Box<dyn Any + Send>,
}

/// The rasterizer's state for borrowed arrays.
#[derive(Default)]
pub struct ExternalState {
    pub(super) shown: Option<Shown>,
    /// Packed positions for point size by scatter, when the arrays' layout is not packed.
    packed: Option<DeviceBuffer<f32>>,
    /// The bounds pass's six keys.
    keys: Option<DeviceBuffer<u32>>,
}

/// The CUDA stream a producer's stream number stands for: 1 the legacy default stream, 2 the
/// per-thread default stream (the numbers `__cuda_array_interface__` and `__dlpack__` use), else a
/// `CUstream` handle.
pub fn stream_from_number(number: u64) -> sys::CUstream {
    number as usize as sys::CUstream
}

/// Makes `consumer` wait, on the device, for the work enqueued on `producer` so far.
///
/// # Safety
/// Both streams are live streams of `ctx` (or the legacy / per-thread default stream handles 1 and 2).
pub unsafe fn order_after(
    ctx: &CudaContext,
    consumer: sys::CUstream,
    producer: sys::CUstream,
) -> Result<(), RenderError> {
    if consumer == producer {
        return Ok(());
    }
    ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    let mut ev: sys::CUevent = std::ptr::null_mut();
    let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as c_uint;
    // SAFETY: `ev` is a valid out-pointer; the context is current.
    unsafe { sys::cuEventCreate(&mut ev, flags) }.result().map_err(cuda_error("cuEventCreate"))?;
    // SAFETY: `ev` was just created in this context; the streams are the caller's live streams (or the
    // legacy / per-thread default streams, which always exist); destroying an event that a stream
    // waits on is allowed (the driver releases it once the wait is done).
    let r = unsafe { sys::cuEventRecord(ev, producer) }
        .result()
        .map_err(cuda_error("cuEventRecord on the producer's stream"))
        .and_then(|_| {
            unsafe { sys::cuStreamWaitEvent(consumer, ev, 0) }.result().map_err(cuda_error("cuStreamWaitEvent"))
        });
    // SAFETY: created above, destroyed once.
    ctx.record_err(unsafe { sys::cuEventDestroy_v2(ev) }.result());
    r
}

impl CudaRasterizer {
    /// The stream every copy and launch is ordered on, as a number (what `__dlpack__(stream=...)` takes).
    pub fn stream_number(&self) -> u64 {
        self.stream.cu_stream() as usize as u64
    }

    /// Makes this rasterizer's stream wait for the work enqueued on the producer's stream `number`.
    ///
    /// # Safety
    /// `number` is 1, 2 or a live `CUstream` of this rasterizer's context (what `__cuda_array_interface__`
    /// promises of its `stream`).
    pub unsafe fn wait_for_stream(&self, number: u64) -> Result<(), RenderError> {
        // SAFETY: this rasterizer's stream is live; the producer's is the caller's promise.
        unsafe { order_after(&self.ctx, self.stream.cu_stream(), stream_from_number(number)) }
    }

    /// Checks that both arrays are device memory of this context's device, inside their allocations.
    pub fn check_external(&self, p: &ExternalPoints) -> Result<(), RenderError> {
        check_points(&self.ctx, p)
    }

    /// The box of the finite points (`pcv_ext_bounds`).
    ///
    /// # Safety
    /// The arrays are device memory of this context holding what their layouts describe, alive and not
    /// freed until this call returns (it waits for the pass).
    pub unsafe fn external_bounds(&mut self, p: &ExternalPoints) -> Result<Bounds, RenderError> {
        let n = p.num_points();
        if n == 0 {
            return Ok(Bounds::EMPTY);
        }
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        if self.external.keys.is_none() {
            self.external.keys = Some(DeviceBuffer::alloc(&self.ctx, 6, "the bounds keys")?);
        }
        let keys = self.external.keys.as_ref().map_or(0, |k| k.ptr());
        let s = self.stream.cu_stream();
        // SAFETY: `keys` holds 6 words: 3 set to the largest key, 3 to 0, ordered on the stream.
        unsafe { sys::cuMemsetD32Async(keys, u32::MAX, 3, s) }.result().map_err(cuda_error("cuMemsetD32Async"))?;
        unsafe { sys::cuMemsetD32Async(keys + 12, 0, 3, s) }.result().map_err(cuda_error("cuMemsetD32Async"))?;
        let l = &p.positions;
        // SAFETY: the caller's contract covers the positions; `keys` holds 6 words.
        unsafe { kernels::ext_bounds(&self.kernels, &self.stream, n, l.ptr, l.row_bytes, l.col_bytes, keys) }?;
        let mut k = [0u32; 6];
        self.external.keys.as_ref().ok_or(RenderError::NotUploaded)?.read_at(&self.stream, 0, &mut k)?;
        Ok(bounds_from_keys(&k))
    }

    /// Renders `p` in the `vis` mode (the only one for arrays read where they are) with the frame's look
    /// into `target`. Waits for the frame, like [`crate::Rasterizer::render`].
    ///
    /// # Safety
    /// The arrays are device memory of this context holding what their layouts describe
    /// ([`CudaRasterizer::check_external`] checks what the driver can tell), alive and unfreed until this
    /// call returns, and every stream that writes them is ordered before this rasterizer's stream
    /// ([`CudaRasterizer::wait_for_stream`]).
    pub unsafe fn render_external(
        &mut self,
        p: &ExternalPoints,
        frame: &FrameParams,
        target: Target<'_>,
    ) -> Result<FrameStats, RenderError> {
        if frame.mode != RenderMode::Vis {
            return Err(RenderError::ModeUnavailable {
                mode: frame.mode.name(),
                reason: "arrays are read where they are, unsorted: they render in vis (culled and quant need the \
                         upload's spatial sort, reference and packed its 16-byte records)"
                    .into(),
            });
        }
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
                    "a {}x{} frame has more pixels than the kernels index",
                    frame.width_px, frame.height_px
                ),
            });
        }
        let num_points = p.num_points();
        let plan = frame.passes();
        if n == 0 {
            self.last = None;
            let passes = plan.iter().map(|q| crate::PassTime { name: q.name(), ms: 0.0 }).collect();
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
        let splats = plan.contains(&Pass::Splat);
        let mut vis_ptr = Self::frame_buffer(&mut self.vis, &self.ctx, n, "the visibility buffer")?;
        let mut vis_out_ptr = match splats {
            true => Self::frame_buffer(&mut self.vis_out, &self.ctx, n, "the point-size buffer")?,
            false => 0,
        };
        // Point size by scatter reads packed positions.
        let pos = p.positions;
        let packed_ptr = if plan.contains(&Pass::VisDisk) && !p.positions_packed() {
            let words = 3 * num_points as usize;
            if self.external.packed.as_ref().is_none_or(|b| b.len() != words) {
                self.external.packed = None;
                self.external.packed = Some(DeviceBuffer::alloc(&self.ctx, words, "the packed positions")?);
            }
            let dst = self.external.packed.as_ref().map_or(0, |b| b.ptr());
            // SAFETY: the caller's contract covers the positions; `dst` holds 3 floats a point.
            unsafe {
                kernels::pack_positions(
                    &self.kernels,
                    &self.stream,
                    num_points,
                    pos.ptr,
                    pos.row_bytes,
                    pos.col_bytes,
                    dst,
                )
            }?;
            dst
        } else {
            pos.ptr
        };
        let (f, u) = (frame.uniforms(), frame.post_uniforms());
        let (stream, k) = (&self.stream, &self.kernels);
        let c = p.colors;
        let timer = &mut self.timer;
        timer.begin(stream)?;
        // SAFETY (every launch below): `color_ptr` holds `n` words (the internal buffer sized by
        // frame_buffer, or a Device target checked above); `vis` and `vis_out` hold `n` u64 words; the
        // positions and colours are covered by this function's contract (`packed_ptr` is either the
        // caller's positions or the packed buffer of 3 floats a point made above), `num_points` is below
        // 2^34 - 1 (ExternalPoints::new checks it), so every index in `vis` is a point of the arrays.
        for &pass in &plan {
            match pass {
                Pass::Clear => unsafe { kernels::vis_clear(k, stream, f, vis_ptr) }?,
                Pass::Vis if p.positions_packed() => {
                    unsafe { kernels::vis(k, stream, f, pos.ptr, num_points, vis_ptr) }?
                }
                Pass::Vis => unsafe {
                    kernels::vis_strided(k, stream, f, pos.ptr, pos.row_bytes, pos.col_bytes, num_points, vis_ptr)
                }?,
                Pass::VisDisk => unsafe { kernels::vis_disk(k, stream, f, u, packed_ptr, num_points, vis_ptr) }?,
                Pass::Splat => {
                    unsafe { kernels::splat(k, stream, u, vis_ptr, vis_out_ptr, 0, 0) }?;
                    std::mem::swap(&mut self.vis, &mut self.vis_out);
                    std::mem::swap(&mut vis_ptr, &mut vis_out_ptr);
                }
                Pass::Resolve => unsafe {
                    let a = &c.array;
                    kernels::ext_resolve(
                        k,
                        stream,
                        f,
                        vis_ptr,
                        a.ptr,
                        a.row_bytes,
                        a.col_bytes,
                        c.kind as u32,
                        c.constant,
                        color_ptr,
                    )
                }?,
                Pass::Edl => unsafe { kernels::edl_words(k, stream, u, vis_ptr, color_ptr) }?,
                other => {
                    return Err(RenderError::ModeUnavailable {
                        mode: "vis",
                        reason: format!("pass {} on arrays", other.name()),
                    })
                }
            }
            timer.mark(stream)?;
        }
        let names: Vec<&'static str> = plan.iter().map(|q| q.name()).collect();
        let (passes, total_ms) = timer.finish(&names)?;
        self.last = Some(LastFrame {
            clip_from_world: frame.clip_from_world,
            width_px: frame.width_px,
            height_px: frame.height_px,
            holds: Final::VisIndex,
        });
        if let Target::Host(buf) = target {
            let color = self.color.as_ref().ok_or(RenderError::NotUploaded)?;
            color.read_at(stream, 0, buf)?;
        }
        Ok(FrameStats { passes, total_ms, points: num_points, batches: None })
    }

    /// Makes the arrays of `p` this rasterizer's points until the next [`crate::Rasterizer::upload`] or show
    /// (what [`crate::Rasterizer::render`] draws, in `vis`), keeping `keepalive` (whatever owns them) until
    /// then. Returns the box of their finite points.
    ///
    /// # Safety
    /// As [`CudaRasterizer::render_external`], for as long as `keepalive` lives: it must keep the arrays
    /// allocated, and their producers must order writes that race with rendering themselves (a frame may
    /// show a mix of old and new values, never freed memory).
    pub unsafe fn show_external(
        &mut self,
        p: ExternalPoints,
        keepalive: Box<dyn Any + Send>,
    ) -> Result<Bounds, RenderError> {
        self.check_external(&p)?;
        // SAFETY: forwarded from this function's contract.
        let bounds = unsafe { self.external_bounds(&p) }?;
        // The uploaded points (and what was made of them) go: picking and the panel count these.
        // A level-of-detail pool goes too.
        self.table = DeviceTable::empty("the points are borrowed arrays (shown from Python), not an upload");
        self.last = None;
        self.external.shown = Some(Shown { points: p, _keepalive: keepalive });
        Ok(bounds)
    }

    /// The arrays shown, if any.
    pub fn shown_external(&self) -> Option<&ExternalPoints> {
        self.external.shown.as_ref().map(|s| &s.points)
    }

    /// [`crate::Rasterizer::render`] while arrays are shown.
    pub(super) fn render_shown(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError> {
        let p = self.external.shown.as_ref().map(|s| s.points).ok_or(RenderError::NotUploaded)?;
        // The window asks for its render mode (M cycles): arrays draw in vis whatever it is.
        let frame = frame.with_mode(RenderMode::Vis);
        // SAFETY: show_external's contract holds while the arrays are shown (their keepalive is ours).
        unsafe { self.render_external(&p, &frame, target) }
    }

    /// Copies the last frame's depth (float bits in [0, 1], 1 where no point landed) into `len_px` words
    /// of device memory at `out`, and waits for the copy.
    pub fn depth_to_device(&mut self, out: u64, len_px: usize) -> Result<(), RenderError> {
        let last = self.last.ok_or(RenderError::NotUploaded)?;
        let n = last.width_px as usize * last.height_px as usize;
        if len_px != n {
            return Err(RenderError::TargetSize { got: len_px, width: last.width_px, height: last.height_px });
        }
        self.check_device_target(out, len_px)?;
        let (src, words) = match (last.holds, &self.vis, &self.depth) {
            (Final::Depth, _, Some(d)) => (d.ptr(), 0),
            (Final::VisColor | Final::VisIndex, Some(v), _) => (v.ptr(), 1),
            _ => return Err(RenderError::NotUploaded),
        };
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        // SAFETY: the last frame's buffer holds `n` u32 words (depth, `words` 0) or `n` u64 words
        // (visibility, `words` 1); `out` holds `len_px == n` words (checked against its allocation above).
        unsafe { kernels::depth_out(&self.kernels, &self.stream, n as u64, src, words, out) }?;
        self.stream.synchronize().map_err(cuda_error("pcv_depth_out"))
    }
}

/// Checks that both arrays of `p` are device memory of `ctx`'s device, inside their allocations.
pub fn check_points(ctx: &CudaContext, p: &ExternalPoints) -> Result<(), RenderError> {
    ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    check_array(ctx.ordinal(), "points", &p.positions)?;
    if p.colors.kind != crate::external::ColorKind::Constant {
        check_array(ctx.ordinal(), "colors", &p.colors.array)?;
    }
    Ok(())
}

/// Checks one array's device and extent.
fn check_array(ordinal: usize, arg: &'static str, l: &StridedLayout) -> Result<(), RenderError> {
    let Some((first, len)) = l.span else { return Ok(()) };
    let start = (l.ptr as i64).wrapping_add(first) as u64;
    let mut device: std::ffi::c_int = -1;
    // SAFETY: `device` is a valid out-pointer of the attribute's type (an int); the call only reads the
    // driver's tables.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            (&mut device as *mut std::ffi::c_int).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            start,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(RenderError::Argument {
            arg,
            message: format!(
                "address {start:#x} is not device memory CUDA knows ({}); host arrays go in as numpy arrays",
                super::context::describe_driver_error(cudarc::driver::result::DriverError(r))
            ),
        });
    }
    if device != ordinal as std::ffi::c_int {
        return Err(RenderError::Argument {
            arg,
            message: format!("on CUDA device {device}; pcv renders on device {ordinal}"),
        });
    }
    let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
    // SAFETY: both out-pointers are valid locals.
    let r = unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, start) };
    // Memory the driver cannot place (some virtual-memory mappings) is taken on the producer's word.
    if r == sys::CUresult::CUDA_SUCCESS && start.saturating_add(len) > base.saturating_add(size as u64) {
        return Err(RenderError::Argument {
            arg,
            message: format!(
                "its {len} bytes from {start:#x} run past the end of their allocation ({size} bytes from {base:#x})"
            ),
        });
    }
    Ok(())
}
