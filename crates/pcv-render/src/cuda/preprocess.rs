//! Preprocessing at upload, on the GPU (`kernels/preprocess.cu`; CPU twin `twins/preprocess.rs`).
//!
//! How it works: a bucket sort of the points by a coarse 3D grid cell in Morton order over the cloud's
//! bounds (2^12 to 2^24 buckets, [`twins::preprocess::grid_bits`]): `pcv_cell_hist` counts the points of
//! each bucket with atomics, the host scans the counts (a few million at most), and `pcv_cell_scatter`
//! moves each point to the next free slot of its bucket (order inside a bucket: whatever the atomics
//! give). The sorted points replace the uploaded ones, so every mode reads them in spatial order. Then
//! `pcv_split` writes positions (12-byte records) and colors, `pcv_batch_bounds` one box per
//! [`BATCH_POINTS`] points, and `pcv_quantize` the 4-byte quantized coordinates. The scatter also records
//! each sorted point's upload index (`order`, for picking). Peak memory is 40 bytes a point beside the
//! uploaded ones (sorted copy and order during the scatter, then positions, colors, words); when
//! the device has less free, the upload keeps the points unsorted and the batched modes are unavailable.
use super::context::{cuda_error, mem_info};
use super::kernels;
use super::memory::DeviceBuffer;
use super::modules::KernelTable;
use super::upload::RESERVE_BYTES;
use crate::gpu_data::{Batch, GridParams, Point, BATCH_POINTS};
use crate::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
use pcv_io::Bounds;
use std::sync::Arc;
use std::time::Instant;

/// What the batched modes read, for the sorted points.
pub struct DevicePrepared {
    /// x, y, z of every point (12-byte records).
    pub positions: DeviceBuffer<f32>,
    /// RGBA8 of every point.
    pub colors: DeviceBuffer<u32>,
    pub batches: DeviceBuffer<Batch>,
    /// 3 × 10-bit coordinates of every point in its batch's box.
    pub quant: DeviceBuffer<u32>,
    /// `order[i]`: the index, in the uploaded cloud, of sorted point i (for picking); `None` when the
    /// points were prepared a chunk at a time ([`preprocess_scene_chunked`]).
    pub order: Option<DeviceBuffer<u32>>,
    /// The culled modes: one byte a batch, whether it was visible last frame (0 at upload).
    pub visible: DeviceBuffer<u8>,
    /// The culled modes: room for a list of every batch.
    pub list: DeviceBuffer<u32>,
}

impl DevicePrepared {
    pub fn num_batches(&self) -> u32 {
        self.batches.len() as u32
    }
}

/// The result of [`preprocess`]: the points (sorted when preprocessing ran) and what it made.
pub struct Preprocessed {
    pub points: DeviceBuffer<Point>,
    pub prepared: Result<DevicePrepared, String>,
    pub elapsed_ms: f64,
}

/// Sorts `points` spatially and makes the batched modes' buffers; see the module doc.
pub fn preprocess(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    table: &KernelTable,
    points: DeviceBuffer<Point>,
    bounds: &Bounds,
) -> Result<Preprocessed, RenderError> {
    let t = Instant::now();
    let n = points.len() as u64;
    if n == 0 || n >= u32::MAX as u64 {
        let why = format!("{n} points: the batched modes need between 1 and 2^32 - 2");
        return Ok(Preprocessed { points, prepared: Err(why), elapsed_ms: 0.0 });
    }
    let g = crate::twins::preprocess::grid_params(bounds, n);
    let buckets = 1usize << (3 * g.bits);
    let (free_bytes, _) = mem_info(ctx)?;
    // The sorted copy and the order beside the original, then positions, colors, words and the order.
    let need = (20 * n + 4 * buckets as u64).max(24 * n) + RESERVE_BYTES;
    if need > free_bytes {
        let why = format!("preprocessing {n} points needs {need} more bytes of device memory, {free_bytes} free");
        return Ok(Preprocessed { points, prepared: Err(why), elapsed_ms: 0.0 });
    }
    let mut hist = DeviceBuffer::<u32>::alloc(ctx, buckets, "the bucket counts")?;
    hist.zero(stream)?;
    // SAFETY: `points` holds `n == g.num_points` points; `hist` holds 2^(3 * g.bits) words.
    unsafe { kernels::cell_hist(table, stream, g, points.ptr(), hist.ptr()) }?;
    let mut counts = hist.to_vec(stream)?;
    let mut sum = 0u64;
    for c in counts.iter_mut() {
        let v = *c as u64;
        *c = sum as u32;
        sum += v;
    }
    if sum != n {
        return Err(RenderError::Cuda {
            context: "pcv_cell_hist".into(),
            message: format!("the bucket counts add up to {sum}, not {n} points"),
        });
    }
    hist.write_at(stream, 0, &counts)?;
    let sorted = DeviceBuffer::<Point>::alloc(ctx, n as usize, "the sorted points")?;
    let order = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the sorted points' upload indices")?;
    // SAFETY: `points` and `sorted` hold `n` points each and `order` `n` words; `hist` now holds the
    // exclusive scan of the counts of these points (which sum to `n`, checked above), so every slot
    // taken is below `n`.
    unsafe { kernels::cell_scatter(table, stream, g, points.ptr(), hist.ptr(), sorted.ptr(), order.ptr()) }?;
    stream.synchronize().map_err(cuda_error("pcv_cell_scatter"))?;
    drop(points);
    drop(hist);

    let positions = DeviceBuffer::<f32>::alloc(ctx, 3 * n as usize, "the positions")?;
    let colors = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the colors")?;
    let num_batches = n.div_ceil(BATCH_POINTS as u64) as u32;
    let batches = DeviceBuffer::<Batch>::alloc(ctx, num_batches as usize, "the batches")?;
    let quant = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the quantized coordinates")?;
    let mut visible = DeviceBuffer::<u8>::alloc(ctx, num_batches as usize, "the batches' visibility")?;
    visible.zero(stream)?;
    let list = DeviceBuffer::<u32>::alloc(ctx, num_batches as usize, "the list of batches to draw")?;
    // SAFETY: `sorted` holds `n` points, `positions` 3n floats, `colors` n words.
    unsafe { kernels::split(table, stream, n, sorted.ptr(), positions.ptr(), colors.ptr()) }?;
    // SAFETY: `positions` holds 3n floats and `batches` ceil(n / BATCH_POINTS) batches.
    unsafe { kernels::batch_bounds(table, stream, n, positions.ptr(), batches.ptr(), num_batches) }?;
    // SAFETY: `positions` 3n floats, `batches` ceil(n / BATCH_POINTS) batches, `quant` n words.
    unsafe { kernels::quantize(table, stream, n, positions.ptr(), batches.ptr(), quant.ptr()) }?;
    stream.synchronize().map_err(cuda_error("preprocessing (split, batch bounds, quantize)"))?;
    Ok(Preprocessed {
        points: sorted,
        prepared: Ok(DevicePrepared { positions, colors, batches, quant, order: Some(order), visible, list }),
        elapsed_ms: t.elapsed().as_secs_f64() * 1e3,
    })
}

/// Points a chunk of [`preprocess_scene_chunked`] (a multiple of the batch size).
pub const CHUNK_POINTS: u64 = 1 << 28;

/// Whether `chunk_points` can be a chunk: a positive multiple of the batch size.
pub fn check_chunk(chunk_points: u64) -> Result<(), RenderError> {
    if chunk_points == 0 || !chunk_points.is_multiple_of(BATCH_POINTS as u64) {
        return Err(RenderError::Cuda {
            context: "scene upload".into(),
            message: format!("chunks of {chunk_points} points: a chunk must be a positive multiple of {BATCH_POINTS}"),
        });
    }
    Ok(())
}

/// Device bytes the chunked preparation of `n` points needs: 20 a point kept (positions, colours,
/// quantized words), and for one chunk its 16-byte points twice (made and sorted) and their order.
pub fn chunked_bytes(n: u64) -> u64 {
    let c = n.min(CHUNK_POINTS);
    20 * n + 36 * c + (4 << 24) + RESERVE_BYTES
}

/// Makes the built-in scene `spec` and its batched modes' buffers a chunk of [`CHUNK_POINTS`] at a time,
/// for scenes too large to hold as 16-byte points beside them (past about 3 billion points on a
/// 141 GB device; 17 billion is the visibility words' limit). Each chunk is made by the scene kernel,
/// bucket-sorted on the whole scene's grid like [`preprocess`], and split straight into its place in
/// the positions, colours, batches and quantized words; its 16-byte points are then dropped. Batches
/// never straddle chunks (a chunk is a whole number of batches). What is lost: the 16-byte points (the
/// reference and packed modes read them) and the sorted-to-uploaded `order` (picking still finds the
/// point and its position, not its index in the scene). `range` picks the points of the scene made
/// (the whole scene, or one GPU's share of it: `--gpus`); they are indexed from 0 here.
pub fn preprocess_scene_chunked(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    table: &KernelTable,
    spec: pcv_io::SceneSpec,
    bounds: &Bounds,
    range: std::ops::Range<u64>,
    chunk_points: u64,
) -> Result<(DevicePrepared, f64), RenderError> {
    const _: () = assert!(CHUNK_POINTS.is_multiple_of(BATCH_POINTS as u64), "chunks hold whole batches");
    check_chunk(chunk_points)?;
    let t = Instant::now();
    if range.end > spec.num_points || range.start > range.end {
        return Err(RenderError::Cuda {
            context: "scene upload".into(),
            message: format!("points {}..{} of a scene of {}", range.start, range.end, spec.num_points),
        });
    }
    let n = range.end - range.start;
    // Memory first: a scene past the index limit is also far past any device's memory, and that is what
    // the user can act on (a smaller --points).
    let (free_bytes, _) = mem_info(ctx)?;
    let need = chunked_bytes(n).max(20 * n + 36 * n.min(chunk_points) + RESERVE_BYTES);
    if need > free_bytes {
        let per = 20 + 36 * n.min(chunk_points) / n.max(1);
        return Err(RenderError::OutOfMemory {
            points: n,
            needed_bytes: need,
            free_bytes,
            fit_points: free_bytes / per,
        });
    }
    if n == 0 || n >= crate::gpu_data::EMPTY_PAYLOAD {
        return Err(RenderError::Cuda {
            context: "scene upload".into(),
            message: format!("{n} points: the visibility buffer indexes between 1 and 2^34 - 2"),
        });
    }
    let g = crate::twins::preprocess::grid_params(bounds, n);
    let buckets = 1usize << (3 * g.bits);
    let num_batches = n.div_ceil(BATCH_POINTS as u64);
    let positions = DeviceBuffer::<f32>::alloc(ctx, 3 * n as usize, "the positions")?;
    let colors = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the colors")?;
    let batches = DeviceBuffer::<Batch>::alloc(ctx, num_batches as usize, "the batches")?;
    let quant = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the quantized coordinates")?;
    let maker = super::upload::SceneMaker::new(ctx, stream, spec)?;
    let c = n.min(chunk_points);
    let made = DeviceBuffer::<Point>::alloc(ctx, c as usize, "a chunk of the scene")?;
    let sorted = DeviceBuffer::<Point>::alloc(ctx, c as usize, "a sorted chunk")?;
    let order = DeviceBuffer::<u32>::alloc(ctx, c as usize, "a sorted chunk's order")?;
    let mut hist = DeviceBuffer::<u32>::alloc(ctx, buckets, "the bucket counts")?;
    let mut first = 0u64;
    while first < n {
        let len = (n - first).min(chunk_points);
        let gc = GridParams { num_points: len, ..g };
        // SAFETY: `made` holds `c >= len` points.
        unsafe { maker.make(table, stream, range.start + first, len, made.ptr()) }?;
        hist.zero(stream)?;
        // SAFETY: `made` holds `len == gc.num_points` points; `hist` holds 2^(3 * gc.bits) words.
        unsafe { kernels::cell_hist(table, stream, gc, made.ptr(), hist.ptr()) }?;
        let mut counts = hist.to_vec(stream)?;
        let mut sum = 0u64;
        for v in counts.iter_mut() {
            let k = *v as u64;
            *v = sum as u32;
            sum += k;
        }
        if sum != len {
            return Err(RenderError::Cuda {
                context: "pcv_cell_hist".into(),
                message: format!("the bucket counts of a chunk add up to {sum}, not {len} points"),
            });
        }
        hist.write_at(stream, 0, &counts)?;
        // SAFETY: `made` and `sorted` hold `len` points each and `order` `len` words; `hist` holds the
        // exclusive scan of these points' counts (summing to `len`), so every slot is below `len`.
        unsafe { kernels::cell_scatter(table, stream, gc, made.ptr(), hist.ptr(), sorted.ptr(), order.ptr()) }?;
        let (pos, col) = (positions.ptr() + 12 * first, colors.ptr() + 4 * first);
        let (bat, q) = (
            batches.ptr() + std::mem::size_of::<Batch>() as u64 * (first / BATCH_POINTS as u64),
            quant.ptr() + 4 * first,
        );
        let nb = len.div_ceil(BATCH_POINTS as u64) as u32;
        // SAFETY: points first .. first + len of the scene: `sorted` holds `len` points; from the
        // offsets above `positions` holds 3 * len floats, `colors` and `quant` len words and `batches`
        // ceil(len / BATCH_POINTS) batches (first is a multiple of BATCH_POINTS, so the chunk's batches
        // are batches first / BATCH_POINTS onwards, all inside the allocations of n points).
        unsafe {
            kernels::split(table, stream, len, sorted.ptr(), pos, col)?;
            kernels::batch_bounds(table, stream, len, pos, bat, nb)?;
            kernels::quantize(table, stream, len, pos, bat, q)?;
        }
        first += len;
    }
    stream.synchronize().map_err(cuda_error("preprocessing the scene a chunk at a time"))?;
    drop((made, sorted, order, hist, maker));
    let mut visible = DeviceBuffer::<u8>::alloc(ctx, num_batches as usize, "the batches' visibility")?;
    visible.zero(stream)?;
    let list = DeviceBuffer::<u32>::alloc(ctx, num_batches as usize, "the list of batches to draw")?;
    let prepared = DevicePrepared { positions, colors, batches, quant, order: None, visible, list };
    Ok((prepared, t.elapsed().as_secs_f64() * 1e3))
}
