//! The culled modes' own filter on CUDA ([`crate::filter`], `kernels/filter.cuh`): the columns it
//! reads, made on demand.
//!
//! How it works: nothing extra is on the device until a filter tests something besides positions.
//! Then [`DeviceColumns::make`] asks for each column the filter reads and the table lacks
//! ([`FilterColumn`]: class codes, return codes, an attribute's values), copies it up in upload order,
//! puts it in the table's order through the preprocessing's map (`pcv_gather_classes` for a byte a
//! point, `pcv_gather_values` for an f32), frees the upload-order copy, and makes each batch's summary
//! (`pcv_batch_classes`: the set of codes, 32 bytes a batch; `pcv_batch_ranges`: smallest and largest
//! value and NaN count, 16 bytes a batch). A code column takes 1 + 32/4096 bytes a point, a value
//! column 4 + 16/4096; value columns the new filter does not read are freed, codes are kept until the
//! next upload (a streamed cloud's class codes come with its stream instead, [`code_column_of`]).
//! Clip volumes read only positions. Once the columns are there, [`DeviceColumns::make_kept`] lists
//! the passing points of each batch the summaries cannot decide (`kernels/kept.cu`: 2 bytes a listed
//! point, 4 a batch), so that frames draw those lists instead of testing every point again. The
//! filter's uniforms and the addresses ([`gpu_data::FilterColumns`]) ride with every culled frame as
//! kernel parameters (792 + 112 bytes);
//! with no filter the culled modes launch their unfiltered entry points, the same code without the
//! tests.
use super::kernels;
use super::memory::DeviceBuffer;
use super::modules::KernelTable;
use super::preprocess::DevicePrepared;
use crate::filter::{ColumnData, FilterColumn};
use crate::gpu_data::{self, BatchClasses, BatchRange, FilterUniforms};
use crate::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// Codes (class or return codes) on the device, in table order, and each batch's set of them.
pub struct CodeColumn {
    pub codes: DeviceBuffer<u8>,
    pub sets: DeviceBuffer<BatchClasses>,
}

/// An attribute's values on the device, in table order, and each batch's summary.
pub struct ValueColumn {
    /// The attribute ([`pcv_io::filter::RangeOf::column_id`]).
    pub field: u32,
    pub values: DeviceBuffer<f32>,
    pub ranges: DeviceBuffer<BatchRange>,
}

/// The filter's kept lists (`kernels/kept.cu`): batch b's passing points are
/// `kept[first[b]..first[b + 1]]`, where its summaries cannot decide.
pub struct KeptLists {
    pub first: DeviceBuffer<u32>,
    pub kept: DeviceBuffer<u16>,
}

/// The columns the table holds for the filter, and the kept lists of the filter set now.
#[derive(Default)]
pub struct DeviceColumns {
    pub classes: Option<CodeColumn>,
    pub returns: Option<CodeColumn>,
    pub values: Vec<ValueColumn>,
    pub kept: Option<KeptLists>,
}

impl DeviceColumns {
    /// Bytes on the device.
    pub fn num_bytes(&self) -> u64 {
        let codes = |c: &Option<CodeColumn>| c.as_ref().map_or(0, |c| c.codes.num_bytes() + c.sets.num_bytes());
        codes(&self.classes)
            + codes(&self.returns)
            + self.values.iter().map(|v| v.values.num_bytes() + v.ranges.num_bytes()).sum::<u64>()
            + self.kept.as_ref().map_or(0, |k| k.first.num_bytes() + k.kept.num_bytes())
    }

    /// Makes the kept lists of `fu` (its columns made first, [`DeviceColumns::make`]): the kernel counts
    /// each straddling batch's passing points, the host sums the counts into offsets, the kernel writes
    /// the lists. Without room on the device for them (or past 2³² listed points) there are none, and
    /// the culled passes test each point as they draw it. Returns the points listed.
    pub fn make_kept(
        &mut self,
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        kernels: &KernelTable,
        prepared: &DevicePrepared,
        fu: &FilterUniforms,
    ) -> Result<Option<u64>, RenderError> {
        self.kept = None;
        let fc = self.addresses(fu);
        let nb = prepared.num_batches();
        let Ok(counts) = DeviceBuffer::<u32>::alloc(ctx, (nb as usize).max(1), "the kept lists' counts") else {
            return Ok(None);
        };
        let (b, pos) = (prepared.batches.ptr(), prepared.positions.ptr());
        // SAFETY: `b` holds `nb` batches over the table's points, 3 floats each in `pos`; `fc` has the
        // columns `fu` tests (made by `make`, covering those points and batches); `counts` holds `nb`
        // words; `kept` is 0, so `first` is not read.
        unsafe { kernels::kept_lists(kernels, stream, *fu, fc, b, nb, pos, counts.ptr(), 0, 0) }?;
        let mut host = vec![0u32; nb as usize];
        counts.read_at(stream, 0, &mut host)?;
        let mut first = Vec::with_capacity(host.len() + 1);
        let mut total = 0u64;
        for c in host {
            first.push(total as u32);
            total += c as u64;
            if total > u32::MAX as u64 {
                return Ok(None);
            }
        }
        first.push(total as u32);
        let (Ok(mut first_dev), Ok(kept)) = (
            DeviceBuffer::<u32>::alloc(ctx, first.len(), "the kept lists' offsets"),
            DeviceBuffer::<u16>::alloc(ctx, (total as usize).max(1), "the kept lists"),
        ) else {
            return Ok(None);
        };
        first_dev.write_at(stream, 0, &first)?;
        // SAFETY: as above, and `first` holds `nb + 1` offsets, the running sums of the counts this very
        // kernel made for the same filter and points, `kept` `first[nb]` slots (at least one).
        unsafe {
            kernels::kept_lists(kernels, stream, *fu, fc, b, nb, pos, counts.ptr(), first_dev.ptr(), kept.ptr())
        }?;
        stream.synchronize().map_err(super::context::cuda_error("cuStreamSynchronize"))?;
        self.kept = Some(KeptLists { first: first_dev, kept });
        Ok(Some(total))
    }

    /// Makes the columns `fu` reads that are missing (asking `columns`, upload order), frees the value
    /// columns it does not read; `true` when every column `fu` reads is then here, `false` when one
    /// cannot be had (the caller filters on the host).
    pub fn make(
        &mut self,
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        kernels: &KernelTable,
        prepared: &DevicePrepared,
        fu: &FilterUniforms,
        columns: &dyn Fn(FilterColumn) -> Option<ColumnData>,
    ) -> Result<bool, RenderError> {
        let Some(order) = prepared.order.as_ref() else { return Ok(false) };
        let n = order.len();
        let codes_of = |ask| match columns(ask) {
            Some(ColumnData::Codes(c)) if c.len() == n => Some(c),
            _ => None,
        };
        if fu.tests_classes != 0 && self.classes.is_none() {
            let Some(c) = codes_of(FilterColumn::Classes) else { return Ok(false) };
            let Some(c) = code_column(ctx, stream, kernels, prepared, &c)? else { return Ok(false) };
            self.classes = Some(c);
        }
        if fu.tests_returns != 0 && self.returns.is_none() {
            let Some(c) = codes_of(FilterColumn::Returns) else { return Ok(false) };
            let Some(c) = code_column(ctx, stream, kernels, prepared, &c)? else { return Ok(false) };
            self.returns = Some(c);
        }
        let wanted: Vec<u32> = fu.ranges[..fu.num_ranges as usize].iter().map(|r| r.field).collect();
        self.values.retain(|v| wanted.contains(&v.field));
        for &field in &wanted {
            if self.values.iter().any(|v| v.field == field) {
                continue;
            }
            let Some(ColumnData::Values(v)) = columns(FilterColumn::Values(field)).filter(|c| c.len() == n) else {
                return Ok(false);
            };
            let Some(c) = value_column(ctx, stream, kernels, prepared, field, &v)? else { return Ok(false) };
            self.values.push(c);
        }
        Ok(true)
    }

    /// The addresses the kernels read for `fu` (0 where it tests nothing): range k's column is its
    /// attribute's.
    pub fn addresses(&self, fu: &FilterUniforms) -> gpu_data::FilterColumns {
        let mut a = gpu_data::FilterColumns::default();
        if let Some(c) = &self.classes {
            (a.classes, a.batch_classes) = (c.codes.ptr(), c.sets.ptr());
        }
        if let Some(c) = &self.returns {
            (a.returns, a.batch_returns) = (c.codes.ptr(), c.sets.ptr());
        }
        for (k, r) in fu.ranges[..fu.num_ranges as usize].iter().enumerate() {
            if let Some(v) = self.values.iter().find(|v| v.field == r.field) {
                (a.values[k], a.batch_values[k]) = (v.values.ptr(), v.ranges.ptr());
            }
        }
        if let Some(k) = &self.kept {
            (a.kept_first, a.kept) = (k.first.ptr(), k.kept.ptr());
        }
        a
    }
}

/// The code column of the table `prepared` (of `codes.len()` points, sorted with the map `order`) from
/// the uploaded points' codes in upload order; `None` for a table with no map (prepared a chunk at a
/// time, or a node pool).
pub fn code_column(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    codes: &[u8],
) -> Result<Option<CodeColumn>, RenderError> {
    if prepared.order.as_ref().is_none_or(|o| o.len() != codes.len()) {
        return Ok(None);
    }
    let mut uploaded = DeviceBuffer::<u8>::alloc(ctx, codes.len().max(1), "the uploaded codes")?;
    uploaded.write_at(stream, 0, codes)?;
    code_column_of(ctx, stream, kernels, prepared, uploaded)
}

/// [`code_column`] from codes already on the device in upload order (a streamed upload's class codes,
/// `stream_upload.rs`); `uploaded` is freed once gathered.
pub fn code_column_of(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    uploaded: DeviceBuffer<u8>,
) -> Result<Option<CodeColumn>, RenderError> {
    // SAFETY: pcv_gather_classes moves bytes and pcv_batch_classes reads bytes and writes one
    // BatchClasses a batch: the element types given.
    let made = unsafe {
        in_table_order::<u8, BatchClasses>(
            ctx,
            stream,
            kernels,
            prepared,
            uploaded,
            kernels::gather_classes,
            kernels::batch_class_sets,
            "codes",
        )
    }?;
    Ok(made.map(|(codes, sets)| CodeColumn { codes, sets }))
}

/// The value column of attribute `field` of the table `prepared` from the uploaded points' values in
/// upload order; `None` for a table with no map.
pub fn value_column(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    field: u32,
    values: &[f32],
) -> Result<Option<ValueColumn>, RenderError> {
    if prepared.order.as_ref().is_none_or(|o| o.len() != values.len()) {
        return Ok(None);
    }
    let mut uploaded = DeviceBuffer::<f32>::alloc(ctx, values.len().max(1), "the uploaded values")?;
    uploaded.write_at(stream, 0, values)?;
    // SAFETY: pcv_gather_values moves floats and pcv_batch_ranges reads floats and writes one BatchRange
    // a batch: the element types given.
    let made = unsafe {
        in_table_order::<f32, BatchRange>(
            ctx,
            stream,
            kernels,
            prepared,
            uploaded,
            kernels::gather_values,
            kernels::batch_ranges,
            "values",
        )
    }?;
    Ok(made.map(|(values, ranges)| ValueColumn { field, values, ranges }))
}

/// A column in table order and its batches' summaries.
type Gathered<T, S> = (DeviceBuffer<T>, DeviceBuffer<S>);

/// A launcher of a gather through the preprocessing's map: `(points, order, src, dst)`.
type Gather =
    unsafe fn(&KernelTable, &CudaStream, u64, kernels::Ptr, kernels::Ptr, kernels::Ptr) -> Result<(), RenderError>;
/// A launcher of per-batch summaries: `(points, batches, column, summaries)`.
type Summarize = unsafe fn(&KernelTable, &CudaStream, u64, u32, kernels::Ptr, kernels::Ptr) -> Result<(), RenderError>;

/// A column on the device in upload order (`uploaded`, freed once gathered) put in the table's order by
/// `gather` and summarized per batch by `summarize`: the column and its summaries, or `None` for a table
/// with no map of that length. One mechanism for every kind of column.
///
/// # Safety
/// `gather`'s kernel must move elements of `T`, and `summarize`'s read elements of `T` and write one `S`
/// a batch.
#[expect(clippy::too_many_arguments, reason = "the column's launchers and its buffers, each named")]
unsafe fn in_table_order<T: bytemuck::Pod, S: bytemuck::Pod>(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    prepared: &DevicePrepared,
    uploaded: DeviceBuffer<T>,
    gather: Gather,
    summarize: Summarize,
    what: &str,
) -> Result<Option<Gathered<T, S>>, RenderError> {
    let Some(order) = prepared.order.as_ref().filter(|o| o.len() == uploaded.len()) else { return Ok(None) };
    let n = uploaded.len();
    let sorted = DeviceBuffer::<T>::alloc(ctx, n.max(1), &format!("the filter's {what}"))?;
    let nb = prepared.num_batches();
    let sums = DeviceBuffer::<S>::alloc(ctx, (nb as usize).max(1), &format!("the batches' summaries of {what}"))?;
    if n > 0 {
        // SAFETY: `order` holds `n` words, each an index below `n` (the preprocessing's map of these
        // very points), `uploaded` and `sorted` hold `n` elements of `T` each, which the kernel moves
        // (this function's contract).
        unsafe { gather(kernels, stream, n as u64, order.ptr(), uploaded.ptr(), sorted.ptr()) }?;
        // SAFETY: `sorted` holds `n` elements of `T` and `sums` `nb` summaries of `S`, `nb ==
        // ceil(n / BATCH_POINTS)` (the table's batches cover exactly its points).
        unsafe { summarize(kernels, stream, n as u64, nb, sorted.ptr(), sums.ptr()) }?;
    }
    // The upload-order copy goes once the gather has read it.
    stream.synchronize().map_err(super::context::cuda_error("cuStreamSynchronize"))?;
    drop(uploaded);
    Ok(Some((sorted, sums)))
}
