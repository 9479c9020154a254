//! Typed launches of the four kernels, with their grid sizes.
//!
//! How it works: every kernel is a grid-stride loop (`for i = global id; i < n; i += grid size`), so any
//! grid covers all items. [`grid_blocks`] launches one block of [`BLOCK_SIZE`] threads per 256 items, capped
//! at [`GRID_WAVES`] times the blocks the device holds at once (SMs × occupancy, from `modules.rs`): small
//! passes get one thread per item, large ones a few full waves of threads that each loop over many
//! items. Each function here takes the kernel's exact parameter list (see `kernels/*.cu`), builds the
//! `void*` array that `cuLaunchKernel` reads, and enqueues on the given stream. They are `unsafe`:
//! the caller promises that the device pointers cover the sizes the kernel will touch, which the
//! callers in `mod.rs` check and state in a `SAFETY:` line at each call.
use super::context::cuda_error;
use super::modules::{Function, BLOCK_SIZE};
use crate::render::gpu_data::{FrameUniforms, SceneParams};
use crate::render::RenderError;
use cudarc::driver::{result, sys, CudaStream};
use std::ffi::c_void;

/// Full device waves a launch may use before threads start looping.
pub const GRID_WAVES: u32 = 2;

/// Blocks for a grid-stride pass over `items` items.
pub fn grid_blocks(f: Function, items: u64) -> u32 {
    let want = items.div_ceil(BLOCK_SIZE as u64);
    let cap = f.resident_blocks.saturating_mul(GRID_WAVES).max(1) as u64;
    want.clamp(1, cap) as u32
}

/// Enqueues `f` with `params` (pointers to each argument, in the kernel's order).
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and type, and every device pointer
/// among them must be valid for every access the kernel makes with the other arguments.
unsafe fn launch(
    f: Function,
    blocks: u32,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    entry: &str,
) -> Result<(), RenderError> {
    stream.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    // SAFETY: forwarded from this function's contract; the grid is at least 1 block of BLOCK_SIZE
    // threads (within every device's limits), no dynamic shared memory, and the stream is live.
    unsafe { result::launch_kernel(f.raw, (blocks, 1, 1), (BLOCK_SIZE, 1, 1), 0, stream.cu_stream(), params) }
        .map_err(cuda_error(format!("launching {entry} ({blocks} blocks of {BLOCK_SIZE})")))
}

fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// `pcv_clear(FrameUniforms f, uint32_t* depth, uint32_t* color)`.
///
/// # Safety
/// `depth` and `color` must each point to at least `f.width * f.height` u32 words of device memory.
pub unsafe fn clear(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    depth: sys::CUdeviceptr,
    color: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut depth, mut color) = (*f, depth, color);
    let blocks = grid_blocks(k, f.width as u64 * f.height as u64);
    // SAFETY: three arguments in the kernel's order and types (FrameUniforms by value, two pointers);
    // the pointers' extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut depth), arg(&mut color)], "pcv_clear") }
}

/// `pcv_depth(FrameUniforms f, const Point* points, uint64_t num_points, uint32_t* depth)`.
///
/// # Safety
/// `points` must hold `num_points` points (it may be 0 when `num_points` is 0) and `depth` at least
/// `f.width * f.height` words, with `f.width` and `f.height` non-zero.
pub unsafe fn depth(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    points: sys::CUdeviceptr,
    num_points: u64,
    depth: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut points, mut n, mut depth) = (*f, points, num_points, depth);
    let blocks = grid_blocks(k, num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe {
        launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut points), arg(&mut n), arg(&mut depth)], "pcv_depth")
    }
}

/// `pcv_color(FrameUniforms f, const Point* points, uint64_t num_points, const uint32_t* depth, uint32_t* color)`.
///
/// # Safety
/// As [`depth`], and `color` must hold at least `f.width * f.height` words.
pub unsafe fn color(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    points: sys::CUdeviceptr,
    num_points: u64,
    depth: sys::CUdeviceptr,
    color: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut points, mut n, mut depth, mut color) = (*f, points, num_points, depth, color);
    let blocks = grid_blocks(k, num_points);
    let params = &mut [arg(&mut f), arg(&mut points), arg(&mut n), arg(&mut depth), arg(&mut color)];
    // SAFETY: five arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, params, "pcv_color") }
}

/// `pcv_scene(SceneParams s, const Cylinder* cylinders, Point* points)`.
///
/// # Safety
/// `cylinders` must hold `s.num_cylinders` cylinders (at least one when `s.num_points > 0`) and `points`
/// room for `s.num_points` points.
pub unsafe fn scene(
    k: Function,
    stream: &CudaStream,
    s: &SceneParams,
    cylinders: sys::CUdeviceptr,
    points: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut s, mut cylinders, mut points) = (*s, cylinders, points);
    let blocks = grid_blocks(k, s.num_points);
    // SAFETY: three arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut s), arg(&mut cylinders), arg(&mut points)], "pcv_scene") }
}

/// `pcv_packed_clear(FrameUniforms f, unsigned long long* vis)`.
///
/// # Safety
/// `vis` must point to at least `f.width * f.height` u64 words of device memory.
pub unsafe fn packed_clear(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    vis: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut vis) = (*f, vis);
    let blocks = grid_blocks(k, f.width as u64 * f.height as u64);
    // SAFETY: two arguments in the kernel's order and types; the extent is this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut vis)], "pcv_packed_clear") }
}

/// `pcv_packed(FrameUniforms f, const Point* points, uint64_t num_points, unsigned long long* vis)`.
///
/// # Safety
/// `points` must hold `num_points` points and `vis` at least `f.width * f.height` u64 words, with
/// `f.width` and `f.height` non-zero.
pub unsafe fn packed(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    points: sys::CUdeviceptr,
    num_points: u64,
    vis: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut points, mut n, mut vis) = (*f, points, num_points, vis);
    let blocks = grid_blocks(k, num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut points), arg(&mut n), arg(&mut vis)], "pcv_packed") }
}

/// `pcv_packed_resolve(FrameUniforms f, const unsigned long long* vis, uint32_t* color)`.
///
/// # Safety
/// `vis` must hold at least `f.width * f.height` u64 words and `color` as many u32 words.
pub unsafe fn packed_resolve(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    vis: sys::CUdeviceptr,
    color: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut vis, mut color) = (*f, vis, color);
    let blocks = grid_blocks(k, f.width as u64 * f.height as u64);
    // SAFETY: three arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut vis), arg(&mut color)], "pcv_packed_resolve") }
}
