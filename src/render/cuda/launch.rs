//! Typed launches of the kernels, with their grid sizes.
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
use crate::render::gpu_data::{FrameUniforms, GridParams, SceneParams};
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

/// Blocks for a pass with one block per batch (grid-stride over batches).
pub fn batch_blocks(f: Function, num_batches: u32) -> u32 {
    num_batches.clamp(1, f.resident_blocks.saturating_mul(GRID_WAVES).max(1))
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

/// `pcv_cell_hist(GridParams g, const Point* points, uint32_t* hist)`.
///
/// # Safety
/// `points` must hold `g.num_points` points and `hist` `2^(3 * g.bits)` words (`g.bits` ≤ 10).
pub unsafe fn cell_hist(k: Function, stream: &CudaStream, g: &GridParams, points: sys::CUdeviceptr, hist: sys::CUdeviceptr) -> Result<(), RenderError> {
    let (mut g, mut points, mut hist) = (*g, points, hist);
    let blocks = grid_blocks(k, g.num_points);
    // SAFETY: three arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut g), arg(&mut points), arg(&mut hist)], "pcv_cell_hist") }
}

/// `pcv_cell_scatter(GridParams g, const Point* src, uint32_t* cursor, Point* dst)`.
///
/// # Safety
/// `src` and `dst` must hold `g.num_points` points each and `cursor` `2^(3 * g.bits)` words holding the
/// exclusive scan of `pcv_cell_hist`'s counts for these very points (so every slot is below `g.num_points`).
pub unsafe fn cell_scatter(
    k: Function,
    stream: &CudaStream,
    g: &GridParams,
    src: sys::CUdeviceptr,
    cursor: sys::CUdeviceptr,
    dst: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut g, mut src, mut cursor, mut dst) = (*g, src, cursor, dst);
    let blocks = grid_blocks(k, g.num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut g), arg(&mut src), arg(&mut cursor), arg(&mut dst)], "pcv_cell_scatter") }
}

/// `pcv_split(uint64_t num_points, const Point* points, float* positions, uint32_t* colors)`.
///
/// # Safety
/// `points` must hold `num_points` points, `positions` `3 * num_points` floats, `colors` `num_points` words.
pub unsafe fn split(
    k: Function,
    stream: &CudaStream,
    num_points: u64,
    points: sys::CUdeviceptr,
    positions: sys::CUdeviceptr,
    colors: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut n, mut points, mut positions, mut colors) = (num_points, points, positions, colors);
    let blocks = grid_blocks(k, num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut n), arg(&mut points), arg(&mut positions), arg(&mut colors)], "pcv_split") }
}

/// `pcv_batch_bounds(uint64_t num_points, const float* positions, Batch* batches, uint32_t num_batches)`.
/// The kernel's shared reduction assumes blocks of exactly 256 threads (BLOCK_SIZE).
///
/// # Safety
/// `positions` must hold `3 * num_points` floats and `batches` `num_batches` batches, with
/// `num_batches == ceil(num_points / BATCH_POINTS)`.
pub unsafe fn batch_bounds(
    k: Function,
    stream: &CudaStream,
    num_points: u64,
    positions: sys::CUdeviceptr,
    batches: sys::CUdeviceptr,
    num_batches: u32,
) -> Result<(), RenderError> {
    const _: () = assert!(BLOCK_SIZE == 256, "pcv_batch_bounds reduces over 256 threads");
    let (mut n, mut positions, mut batches, mut nb) = (num_points, positions, batches, num_batches);
    let blocks = batch_blocks(k, num_batches);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut n), arg(&mut positions), arg(&mut batches), arg(&mut nb)], "pcv_batch_bounds") }
}

/// `pcv_quantize(uint64_t num_points, const float* positions, const Batch* batches, uint32_t* quant)`.
///
/// # Safety
/// `positions` must hold `3 * num_points` floats, `batches` `ceil(num_points / BATCH_POINTS)` batches and
/// `quant` `num_points` words.
pub unsafe fn quantize(
    k: Function,
    stream: &CudaStream,
    num_points: u64,
    positions: sys::CUdeviceptr,
    batches: sys::CUdeviceptr,
    quant: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut n, mut positions, mut batches, mut quant) = (num_points, positions, batches, quant);
    let blocks = grid_blocks(k, num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut n), arg(&mut positions), arg(&mut batches), arg(&mut quant)], "pcv_quantize") }
}

/// `pcv_vis_clear(FrameUniforms f, unsigned long long* vis)`.
///
/// # Safety
/// `vis` must point to at least `f.width * f.height` u64 words.
pub unsafe fn vis_clear(k: Function, stream: &CudaStream, f: &FrameUniforms, vis: sys::CUdeviceptr) -> Result<(), RenderError> {
    let (mut f, mut vis) = (*f, vis);
    let blocks = grid_blocks(k, f.width as u64 * f.height as u64);
    // SAFETY: two arguments in the kernel's order and types; the extent is this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut vis)], "pcv_vis_clear") }
}

/// `pcv_vis(FrameUniforms f, const float* positions, uint64_t num_points, unsigned long long* vis)`.
///
/// # Safety
/// `positions` must hold `3 * num_points` floats with `num_points < 2^32 - 1`, and `vis` at least
/// `f.width * f.height` u64 words, both non-zero.
pub unsafe fn vis(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    positions: sys::CUdeviceptr,
    num_points: u64,
    vis: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut positions, mut n, mut vis) = (*f, positions, num_points, vis);
    let blocks = grid_blocks(k, num_points);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut positions), arg(&mut n), arg(&mut vis)], "pcv_vis") }
}

/// `pcv_vis_resolve(FrameUniforms f, const unsigned long long* vis, const uint32_t* colors, uint32_t* color)`.
///
/// # Safety
/// `vis` and `color` must hold `f.width * f.height` words each, and every index in `vis` other than
/// 0xffffffff must be below the length of `colors` (true for a buffer the batched passes filled from
/// `colors`' points).
pub unsafe fn vis_resolve(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    vis: sys::CUdeviceptr,
    colors: sys::CUdeviceptr,
    color: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut vis, mut colors, mut color) = (*f, vis, colors, color);
    let blocks = grid_blocks(k, f.width as u64 * f.height as u64);
    // SAFETY: four arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, &mut [arg(&mut f), arg(&mut vis), arg(&mut colors), arg(&mut color)], "pcv_vis_resolve") }
}

/// `pcv_culled` / `pcv_culled_dedup(FrameUniforms f, const Batch* batches, uint32_t num_batches,
/// const float* positions, unsigned long long* vis, uint32_t* counters)`.
///
/// # Safety
/// `batches` must hold `num_batches` batches whose `num_points` sum to the points `positions` holds
/// (`3 *` that many floats, fewer than 2^32 - 1 points, batch b starting at point `b * BATCH_POINTS`),
/// `vis` `f.width * f.height` u64 words and `counters` 3 words.
#[allow(clippy::too_many_arguments)]
pub unsafe fn culled(
    k: Function,
    entry: &str,
    stream: &CudaStream,
    f: &FrameUniforms,
    batches: sys::CUdeviceptr,
    num_batches: u32,
    positions: sys::CUdeviceptr,
    vis: sys::CUdeviceptr,
    counters: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut batches, mut nb, mut positions, mut vis, mut counters) = (*f, batches, num_batches, positions, vis, counters);
    let blocks = batch_blocks(k, num_batches);
    let params = &mut [arg(&mut f), arg(&mut batches), arg(&mut nb), arg(&mut positions), arg(&mut vis), arg(&mut counters)];
    // SAFETY: six arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, params, entry) }
}

/// `pcv_quant(FrameUniforms f, const Batch* batches, uint32_t num_batches, const uint32_t* quant,
/// const float* positions, unsigned long long* vis, uint32_t* counters)`.
///
/// # Safety
/// As [`culled`], and `quant` must hold one word per point.
#[allow(clippy::too_many_arguments)]
pub unsafe fn quant(
    k: Function,
    stream: &CudaStream,
    f: &FrameUniforms,
    batches: sys::CUdeviceptr,
    num_batches: u32,
    quant: sys::CUdeviceptr,
    positions: sys::CUdeviceptr,
    vis: sys::CUdeviceptr,
    counters: sys::CUdeviceptr,
) -> Result<(), RenderError> {
    let (mut f, mut batches, mut nb, mut quant, mut positions, mut vis, mut counters) =
        (*f, batches, num_batches, quant, positions, vis, counters);
    let blocks = batch_blocks(k, num_batches);
    let params = &mut [
        arg(&mut f),
        arg(&mut batches),
        arg(&mut nb),
        arg(&mut quant),
        arg(&mut positions),
        arg(&mut vis),
        arg(&mut counters),
    ];
    // SAFETY: seven arguments in the kernel's order and types; extents are this function's contract.
    unsafe { launch(k, blocks, stream, params, "pcv_quant") }
}
