//! Level of detail's uploads off the frame's critical path: a node's points go to the pool's slots on a
//! copy stream of their own, through pinned staging, and a frame never waits for them.
//!
//! How it works: [`SlotUploader::write`] copies a node's positions, colours and quantized words into
//! one of [`STAGES`] page-locked host buffers of [`STAGE_BYTES`] (the pinned buffers of
//! `stream_upload.rs`; a piece at a time when a node is larger) and enqueues `cuMemcpyHtoDAsync` from
//! there to the slots on the copy stream; the host returns as soon as the bytes are staged. Each stage
//! has an event recorded after the last copy reading it: a stage is refilled only once that event has
//! completed (the one place the host may wait, counted in [`SlotUploader::stall_ms`]; four stages of
//! 32 MiB hold ~6.7M points, more than a frame stages). Ordering with the frames:
//! - before a write's copies, the copy stream waits for an event recorded on the render stream, so a
//!   slot freed by an eviction is not overwritten while a frame already enqueued still draws it;
//! - each write gets a fence (1, 2, ...) and an event after its copies; [`SlotUploader::done`] polls
//!   the events (`cuEventQuery`, no wait) and says which fence is the last one complete — the level of
//!   detail draws a node only after that (`LodScene::update`);
//! - [`SlotUploader::order_after`] makes the render stream wait (on the device, not the host) for the
//!   event of the write a batch table needs, before the table is written: a slot's batch is never drawn
//!   before its copy is done, even for a caller that does not wait for [`SlotUploader::done`].
//!
//! [`SlotUploader::finish`] synchronizes the copy stream; the pool's buffers are freed only after it.
use super::context::cuda_error;
use super::preprocess::DevicePrepared;
use super::stream_upload::Pinned;
use crate::{RenderError, SlotWrite};
use cudarc::driver::{result, CudaContext, CudaEvent, CudaStream};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Pinned staging buffers.
pub const STAGES: usize = 4;
/// Bytes a staging buffer holds (32 MiB: 1.6M points of 20 bytes).
pub const STAGE_BYTES: usize = 32 << 20;

/// One staging buffer, the bytes used in it, and the event after the last copy reading it.
struct Stage {
    host: Pinned<u8>,
    used: usize,
    sent: CudaEvent,
    in_flight: bool,
}

/// The copy stream, the staging buffers and the writes not yet known to be complete.
pub struct SlotUploader {
    ctx: Arc<CudaContext>,
    /// Made on the first write (a rasterizer without a pool never pins memory).
    copy: Option<Arc<CudaStream>>,
    stages: Vec<Stage>,
    current: usize,
    /// Recorded on the render stream before each write; the copy stream waits for it.
    render_mark: Option<CudaEvent>,
    /// Writes whose copies may still run: fence and the event after them, oldest first.
    pending: VecDeque<(u64, CudaEvent)>,
    /// Events of completed writes, to record again.
    spare: Vec<CudaEvent>,
    last_fence: u64,
    done_fence: u64,
    /// Host time spent waiting for a stage to drain, and bytes staged, since the uploader was made.
    pub stall_ms: f64,
    pub staged_bytes: u64,
}

impl SlotUploader {
    pub fn new(ctx: &Arc<CudaContext>) -> SlotUploader {
        SlotUploader {
            ctx: ctx.clone(),
            copy: None,
            stages: Vec::new(),
            current: 0,
            render_mark: None,
            pending: VecDeque::new(),
            spare: Vec::new(),
            last_fence: 0,
            done_fence: 0,
            stall_ms: 0.0,
            staged_bytes: 0,
        }
    }

    fn event(&mut self) -> Result<CudaEvent, RenderError> {
        match self.spare.pop() {
            Some(e) => Ok(e),
            None => self.ctx.new_event(None).map_err(cuda_error("cuEventCreate for a slot upload")),
        }
    }

    /// The copy stream, the stages and the render mark, made once.
    fn ready(&mut self) -> Result<(), RenderError> {
        if self.copy.is_none() {
            self.copy = Some(self.ctx.new_stream().map_err(cuda_error("cuStreamCreate for the node pool's copies"))?);
        }
        while self.stages.len() < STAGES {
            let sent = self.ctx.new_event(None).map_err(cuda_error("cuEventCreate for a staging buffer"))?;
            self.stages.push(Stage { host: Pinned::new(&self.ctx, STAGE_BYTES)?, used: 0, sent, in_flight: false });
        }
        if self.render_mark.is_none() {
            self.render_mark = Some(self.ctx.new_event(None).map_err(cuda_error("cuEventCreate for the render mark"))?);
        }
        Ok(())
    }

    /// Stages `src` and copies it to device address `dst` on the copy stream, a stage's room at a time.
    fn send(&mut self, copy: &CudaStream, mut dst: u64, mut src: &[u8]) -> Result<(), RenderError> {
        while !src.is_empty() {
            if self.stages[self.current].used == STAGE_BYTES {
                // The next stage is refilled from its start only once every copy reading it is done
                // (rarely waits: see the module doc). Appending to the current stage never waits: its
                // copies in flight read other bytes.
                self.current = (self.current + 1) % self.stages.len();
                let stage = &mut self.stages[self.current];
                if stage.in_flight {
                    let t = Instant::now();
                    stage.sent.synchronize().map_err(cuda_error("cuEventSynchronize on a staging buffer"))?;
                    self.stall_ms += t.elapsed().as_secs_f64() * 1e3;
                    stage.in_flight = false;
                }
                stage.used = 0;
            }
            let stage = &mut self.stages[self.current];
            let n = src.len().min(stage.host.capacity() - stage.used);
            stage.host.write(stage.used, &src[..n]);
            // SAFETY: bytes `used..used + n` of the stage were written just above; `dst..dst + n` lies in
            // one of the pool's live device buffers (the caller checked the write against the pool's
            // slots); the staged bytes stay untouched until `sent`, recorded right after on the same
            // stream, has completed (checked before the stage is written again); the copy stream belongs
            // to the buffers' context.
            unsafe { result::memcpy_htod_async(dst, stage.host.filled_at(stage.used, n), copy.cu_stream()) }
                .map_err(cuda_error("cuMemcpyHtoDAsync from a staging buffer to the node pool"))?;
            stage.sent.record(copy).map_err(cuda_error("cuEventRecord after a staging copy"))?;
            stage.in_flight = true;
            stage.used += n;
            self.staged_bytes += n as u64;
            dst += n as u64;
            src = &src[n..];
        }
        Ok(())
    }

    /// Enqueues `writes` into the pool `p` (checked against its slots) after the work already on
    /// `render`; returns the write's fence (see the module doc).
    pub fn write(
        &mut self,
        render: &CudaStream,
        p: &DevicePrepared,
        writes: &[SlotWrite<'_>],
    ) -> Result<u64, RenderError> {
        for w in writes {
            crate::check_slot_write(w, p.num_batches())?;
        }
        // The copies below are raw driver calls: this rasterizer's context must be current (several
        // GPUs' rasterizers share one thread).
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        self.ready()?;
        let copy = self.copy.clone().ok_or_else(|| RenderError::Cuda {
            context: "node pool upload".into(),
            message: "no copy stream".into(),
        })?;
        if let Some(mark) = &self.render_mark {
            mark.record(render).map_err(cuda_error("cuEventRecord on the render stream"))?;
            copy.wait(mark).map_err(cuda_error("cuStreamWaitEvent of the copy stream"))?;
        }
        let per = crate::gpu_data::BATCH_POINTS as u64;
        for w in writes {
            let at = w.first_slot as u64 * per;
            self.send(&copy, p.positions.ptr() + 12 * at, bytemuck::cast_slice(w.positions))?;
            self.send(&copy, p.colors.ptr() + 4 * at, bytemuck::cast_slice(w.colors))?;
            self.send(&copy, p.quant.ptr() + 4 * at, bytemuck::cast_slice(w.quant))?;
        }
        let done = self.event()?;
        done.record(&copy).map_err(cuda_error("cuEventRecord after a node's copies"))?;
        self.last_fence += 1;
        self.pending.push_back((self.last_fence, done));
        Ok(self.last_fence)
    }

    /// The last fence whose copies are complete (polls, never waits).
    pub fn done(&mut self) -> Result<u64, RenderError> {
        while let Some((fence, e)) = self.pending.front() {
            if !e.try_is_complete().map_err(cuda_error("cuEventQuery on a node's copies"))? {
                break;
            }
            self.done_fence = *fence;
            if let Some((_, e)) = self.pending.pop_front() {
                self.spare.push(e);
            }
        }
        Ok(self.done_fence)
    }

    /// Makes `render` wait (on the device) for the copies of write `fence` and those before it.
    pub fn order_after(&mut self, render: &CudaStream, fence: u64) -> Result<(), RenderError> {
        if fence <= self.done()? {
            return Ok(());
        }
        // Copies complete in fence order (one stream): the event of the first pending write at or
        // after `fence` covers it.
        if let Some((_, e)) = self.pending.iter().find(|(f, _)| *f >= fence) {
            render.wait(e).map_err(cuda_error("cuStreamWaitEvent of the render stream on a node's copies"))?;
        }
        Ok(())
    }

    /// Waits for every copy (before the pool's buffers are freed); every write is complete after it.
    /// Errors go to the context's error state (this runs where none can be returned: drops, resets).
    pub fn finish(&mut self) {
        if let Some(c) = &self.copy {
            self.ctx.record_err(c.synchronize());
        }
        while let Some((fence, e)) = self.pending.pop_front() {
            self.done_fence = fence;
            self.spare.push(e);
        }
        for s in &mut self.stages {
            s.in_flight = false;
            s.used = 0;
        }
    }
}

impl Drop for SlotUploader {
    fn drop(&mut self) {
        // The stages are freed after this: no copy may still read them.
        self.finish();
    }
}
