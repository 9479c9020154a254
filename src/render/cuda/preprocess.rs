//! Preprocessing at upload, on the GPU (`kernels/preprocess.cu`; CPU twin `render/cpu/preprocess.rs`).
//!
//! How it works: a bucket sort of the points by a coarse 3D grid cell in Morton order over the cloud's
//! bounds (2^12 to 2^24 buckets, [`cpu::preprocess::grid_bits`]): `pcv_cell_hist` counts the points of
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
use crate::cloud::Bounds;
use crate::render::cpu;
use crate::render::gpu_data::{Batch, Point, BATCH_POINTS};
use crate::render::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
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
    /// `order[i]`: the index, in the uploaded cloud, of sorted point i (for picking).
    pub order: DeviceBuffer<u32>,
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
    let g = cpu::preprocess::grid_params(bounds, n);
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
    unsafe {
        kernels::batch_bounds(table, stream, n, positions.ptr(), batches.ptr(), num_batches)
    }?;
    // SAFETY: `positions` 3n floats, `batches` ceil(n / BATCH_POINTS) batches, `quant` n words.
    unsafe { kernels::quantize(table, stream, n, positions.ptr(), batches.ptr(), quant.ptr()) }?;
    stream.synchronize().map_err(cuda_error("preprocessing (split, batch bounds, quantize)"))?;
    Ok(Preprocessed {
        points: sorted,
        prepared: Ok(DevicePrepared { positions, colors, batches, quant, order, visible, list }),
        elapsed_ms: t.elapsed().as_secs_f64() * 1e3,
    })
}
