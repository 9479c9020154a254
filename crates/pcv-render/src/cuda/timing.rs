//! Pass times from CUDA events.
//!
//! How it works: [`PassTimer`] owns one event more than the most passes a frame has. [`PassTimer::mark`]
//! records the next event on the stream (before the first pass, then after each), so event k..k+1
//! brackets pass k on the GPU's own clock. [`PassTimer::finish`] waits for the last event and reads the intervals with
//! `cuEventElapsedTime`; the frame's total is first to last event, so it includes the gaps between
//! launches but not the host's work before the first one.
use super::context::cuda_error;
use crate::{PassTime, RenderError};
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// Events around up to `max_passes` passes, reused every frame.
pub struct PassTimer {
    events: Vec<CudaEvent>,
    recorded: usize,
}

impl PassTimer {
    pub fn new(ctx: &Arc<CudaContext>, max_passes: usize) -> Result<Self, RenderError> {
        let events = (0..=max_passes)
            .map(|_| ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(cuda_error("cuEventCreate"))?;
        Ok(Self { events, recorded: 0 })
    }

    /// Starts a frame: the next [`PassTimer::mark`] is the first event.
    pub fn begin(&mut self, stream: &CudaStream) -> Result<(), RenderError> {
        self.recorded = 0;
        self.mark(stream)
    }

    /// Records the next event on `stream` (call after each pass).
    pub fn mark(&mut self, stream: &CudaStream) -> Result<(), RenderError> {
        let ev = self.events.get(self.recorded).ok_or_else(|| RenderError::Cuda {
            context: "pass timer".into(),
            message: format!("more than {} marks in one frame", self.events.len()),
        })?;
        ev.record(stream).map_err(cuda_error("cuEventRecord"))?;
        self.recorded += 1;
        Ok(())
    }

    /// Waits for the last event and returns the time of each pass of `names` (one mark after each) and
    /// the total, in milliseconds.
    pub fn finish(&mut self, names: &[&'static str]) -> Result<(Vec<PassTime>, f64), RenderError> {
        if self.recorded != names.len() + 1 {
            return Err(RenderError::Cuda {
                context: "pass timer".into(),
                message: format!("{} events recorded for {} passes", self.recorded, names.len()),
            });
        }
        let last = &self.events[names.len()];
        last.synchronize().map_err(cuda_error("cuEventSynchronize (end of frame)"))?;
        let mut passes = Vec::with_capacity(names.len());
        for (i, &name) in names.iter().enumerate() {
            let ms = self.events[i].elapsed_ms(&self.events[i + 1]).map_err(cuda_error("cuEventElapsedTime"))?;
            passes.push(PassTime { name, ms: ms as f64 });
        }
        let total = self.events[0].elapsed_ms(last).map_err(cuda_error("cuEventElapsedTime"))? as f64;
        Ok((passes, total))
    }
}
