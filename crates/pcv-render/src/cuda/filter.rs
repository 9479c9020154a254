//! The culled modes' own filter on CUDA ([`crate::filter`], `kernels/filter.cuh`): the class column
//! it reads, made on demand.
//!
//! How it works: nothing extra is on the device until a filter hides a class. Then [`class_column`]
//! copies the uploaded points' class codes up (one byte a point, in upload order; a streamed cloud's
//! codes come with its stream instead, [`class_column_of`]), puts them in the
//! table's order through the preprocessing's map (`pcv_gather_classes`), frees the upload-order copy,
//! and gathers each batch's set of codes (`pcv_batch_classes`, 32 bytes a batch): 1 + 32/4096 bytes a
//! point in all, kept with the table until the next upload. Clip volumes read only positions. The
//! filter's uniforms ride with every culled frame as a kernel parameter (688 bytes); with no filter
//! the culled modes launch their unfiltered entry points, the same code without the tests.
use super::kernels;
use super::memory::DeviceBuffer;
use super::modules::KernelTable;
use super::preprocess::DevicePrepared;
use crate::gpu_data::BatchClasses;
use crate::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// Class codes on the device, in table order, and each batch's set of them.
pub struct ClassColumn {
    pub codes: DeviceBuffer<u8>,
    pub sets: DeviceBuffer<BatchClasses>,
}

impl ClassColumn {
    /// Bytes on the device.
    pub fn num_bytes(&self) -> u64 {
        self.codes.num_bytes() + self.sets.num_bytes()
    }
}

/// The class column of the table `prepared` (of `codes.len()` points, sorted with the map `order`)
/// from the uploaded points' codes in upload order; `None` for a table with no map (prepared a chunk at
/// a time, or a node pool).
pub fn class_column(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    codes: &[u8],
) -> Result<Option<ClassColumn>, RenderError> {
    if prepared.order.as_ref().is_none_or(|o| o.len() != codes.len()) {
        return Ok(None);
    }
    let mut uploaded = DeviceBuffer::<u8>::alloc(ctx, codes.len().max(1), "the uploaded class codes")?;
    uploaded.write_at(stream, 0, codes)?;
    class_column_of(ctx, stream, kernels, prepared, uploaded)
}

/// [`class_column`] from codes already on the device in upload order (a streamed upload's,
/// `stream_upload.rs`); `uploaded` is freed once gathered.
pub fn class_column_of(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    uploaded: DeviceBuffer<u8>,
) -> Result<Option<ClassColumn>, RenderError> {
    let Some(order) = prepared.order.as_ref().filter(|o| o.len() == uploaded.len()) else { return Ok(None) };
    let n = uploaded.len();
    let sorted = DeviceBuffer::<u8>::alloc(ctx, n.max(1), "the class codes")?;
    let nb = prepared.num_batches();
    let sets = DeviceBuffer::<BatchClasses>::alloc(ctx, (nb as usize).max(1), "the batches' class sets")?;
    if n > 0 {
        // SAFETY: `order` holds `n` words, each an index below `n` (the preprocessing's map of these
        // very points), `uploaded` and `sorted` hold `n` bytes each.
        unsafe { kernels::gather_classes(kernels, stream, n as u64, order.ptr(), uploaded.ptr(), sorted.ptr()) }?;
        // SAFETY: `sorted` holds `n` bytes and `sets` `nb` sets, `nb == ceil(n / BATCH_POINTS)` (the
        // table's batches cover exactly its points).
        unsafe { kernels::batch_class_sets(kernels, stream, n as u64, nb, sorted.ptr(), sets.ptr()) }?;
    }
    // The upload-order copy goes once the gather has read it.
    stream.synchronize().map_err(super::context::cuda_error("cuStreamSynchronize"))?;
    drop(uploaded);
    Ok(Some(ClassColumn { codes: sorted, sets }))
}
