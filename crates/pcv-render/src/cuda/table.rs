//! The batch table the CUDA passes draw: the one place every way points reach the device ends.
//!
//! How it works: a [`DeviceTable`] holds the points in spatial order as batches of
//! [`crate::gpu_data::BATCH_POINTS`] — positions, RGBA8 colours, quantized words, a box per
//! batch, the map back to the uploaded order ([`DevicePrepared`]) — and beside them the same points as
//! 16-byte records, which the reference and packed modes read. Each route onto the device makes one:
//! - [`DeviceTable::from_points`]: 16-byte points already on the device — host points copied up
//!   (`upload.rs`), the built-in scene made by its kernel, files streamed through pinned slots
//!   (`stream_upload.rs`), a share of them on one of several GPUs — sorted and cut into batches by the
//!   preprocessing (`preprocess.rs`);
//! - [`DeviceTable::from_chunks`]: a built-in scene too large for both, made and batched a chunk at a time
//!   (no 16-byte records: only the batched modes draw it);
//! - [`DeviceTable::pool`]: level of detail's node pool, empty batch slots that the loader fills
//!   (`slot_upload.rs`) and whose batch table it sets.
//!
//! Arrays someone else owns (Python's) are drawn where they are (`external.rs`), with no table.
use super::filter::DeviceColumns;
use super::memory::DeviceBuffer;
use super::modules::KernelTable;
use super::preprocess::{self, DevicePrepared};
use crate::gpu_data::{Batch, Point, BATCH_POINTS, EMPTY_BATCH};
use crate::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

/// What the passes draw (see the module doc).
pub struct DeviceTable {
    /// The points as 16-byte records in table order (the reference and packed modes); `None` for a
    /// table made a chunk at a time and for a node pool.
    pub points: Option<DeviceBuffer<Point>>,
    /// The batched modes' columns, or why there are none.
    pub prepared: Result<DevicePrepared, String>,
    /// Points the table holds: the records', a chunked scene's, or a pool's room.
    pub num_points: u64,
    /// How long the preprocessing (sort, batches, quantization) took, in ms.
    pub preprocess_ms: Option<f64>,
    /// For a level-of-detail pool: the points its batch table draws now.
    pub pool_points: Option<u64>,
    /// The pool's point spacing per slot (adaptive point sizes per node), once set.
    pub slot_spacing: Option<DeviceBuffer<f32>>,
    /// The columns the culled modes' filter reads, made as filters first test them (`filter.rs`).
    pub columns: DeviceColumns,
}

impl DeviceTable {
    /// No points (`why`: what the batched modes say when asked to draw).
    pub fn empty(why: &str) -> DeviceTable {
        DeviceTable {
            points: None,
            prepared: Err(why.into()),
            num_points: 0,
            preprocess_ms: None,
            pool_points: None,
            slot_spacing: None,
            columns: DeviceColumns::default(),
        }
    }

    /// The table of `points` on the grid of `bounds`: sorted and batched when `preprocess` (the
    /// default; `PCV_PREPROCESS=0` keeps the upload's order and leaves the batched modes out).
    pub fn from_points(
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        kernels: &KernelTable,
        points: DeviceBuffer<Point>,
        bounds: &pcv_io::Bounds,
        preprocess: bool,
    ) -> Result<DeviceTable, RenderError> {
        let num_points = points.len() as u64;
        if !preprocess {
            let mut t = DeviceTable::empty("the upload skipped the preprocessing (PCV_PREPROCESS=0)");
            (t.points, t.num_points) = (Some(points), num_points);
            return Ok(t);
        }
        let done = preprocess::preprocess(ctx, stream, kernels, points, bounds)?;
        Ok(DeviceTable {
            points: Some(done.points),
            preprocess_ms: done.prepared.is_ok().then_some(done.elapsed_ms),
            prepared: done.prepared,
            num_points,
            pool_points: None,
            slot_spacing: None,
            columns: DeviceColumns::default(),
        })
    }

    /// The table of points `range` of the built-in scene `spec`, made and batched `chunk_points` at a
    /// time ([`preprocess::preprocess_scene_chunked`]).
    pub fn from_chunks(
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        kernels: &KernelTable,
        spec: pcv_io::SceneSpec,
        bounds: &pcv_io::Bounds,
        range: std::ops::Range<u64>,
        chunk_points: u64,
    ) -> Result<DeviceTable, RenderError> {
        let num_points = range.end - range.start;
        let (prepared, ms) =
            preprocess::preprocess_scene_chunked(ctx, stream, kernels, spec, bounds, range, chunk_points)?;
        Ok(DeviceTable {
            points: None,
            prepared: Ok(prepared),
            num_points,
            preprocess_ms: Some(ms),
            pool_points: None,
            slot_spacing: None,
            columns: DeviceColumns::default(),
        })
    }

    /// A node pool of `slots` empty batch slots (20 bytes a point), drawn by the culled modes from the
    /// batch table [`DeviceTable::set_pool_batches`] sets.
    pub fn pool(ctx: &Arc<CudaContext>, stream: &CudaStream, slots: u32) -> Result<DeviceTable, RenderError> {
        let n = slots as u64 * BATCH_POINTS as u64;
        let positions = DeviceBuffer::<f32>::alloc(ctx, 3 * n as usize, "the node pool's positions")?;
        let colors = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the node pool's colours")?;
        let mut batches = DeviceBuffer::<Batch>::alloc(ctx, slots as usize, "the node pool's batches")?;
        batches.write_at(stream, 0, &vec![EMPTY_BATCH; slots as usize])?;
        let quant = DeviceBuffer::<u32>::alloc(ctx, n as usize, "the node pool's quantized words")?;
        let mut visible = DeviceBuffer::<u8>::alloc(ctx, slots as usize, "the node pool's visibility")?;
        visible.zero(stream)?;
        let list = DeviceBuffer::<u32>::alloc(ctx, slots as usize, "the node pool's list of batches")?;
        Ok(DeviceTable {
            points: None,
            prepared: Ok(DevicePrepared { positions, colors, batches, quant, order: None, visible, list }),
            num_points: n,
            preprocess_ms: None,
            pool_points: Some(0),
            slot_spacing: None,
            columns: DeviceColumns::default(),
        })
    }

    /// The pool's batches and columns, or the error of a table that is not a pool.
    pub fn pool_prepared(&mut self) -> Result<&mut DevicePrepared, RenderError> {
        let no_pool =
            || RenderError::ModeUnavailable { mode: "level of detail", reason: "no node pool reserved".into() };
        match (&mut self.prepared, self.pool_points) {
            (Ok(p), Some(_)) => Ok(p),
            _ => Err(no_pool()),
        }
    }

    /// Sets the pool's batch table (one batch per slot, [`crate::check_pool_table`]) on `stream`.
    pub fn set_pool_batches(&mut self, stream: &CudaStream, batches: &[Batch]) -> Result<(), RenderError> {
        let p = self.pool_prepared()?;
        crate::check_pool_table(batches.len(), p.batches.len())?;
        p.batches.write_at(stream, 0, batches)?;
        self.pool_points = Some(batches.iter().map(|b| b.num_points as u64).sum());
        Ok(())
    }

    /// Sets the pool's point spacing per slot on `stream`.
    pub fn set_pool_spacing(
        &mut self,
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        spacing_m: &[f32],
    ) -> Result<(), RenderError> {
        let slots = self.pool_prepared()?.batches.len();
        if spacing_m.len() != slots {
            return Err(RenderError::ModeUnavailable {
                mode: "level of detail",
                reason: format!("{} spacings for a pool of {slots} slots", spacing_m.len()),
            });
        }
        if self.slot_spacing.is_none() {
            self.slot_spacing = Some(DeviceBuffer::alloc(ctx, slots, "the node pool's spacings")?);
        }
        if let Some(b) = &mut self.slot_spacing {
            b.write_at(stream, 0, spacing_m)?;
        }
        Ok(())
    }
}
