//! Pass times from CUDA events.
//!
//! How it works: [`PassTimer`] owns one event more than there are passes. [`PassTimer::mark`] records
//! the next event on the stream (before the first pass, then after each), so event k..k+1 brackets pass
//! k on the GPU's own clock. [`PassTimer::finish`] waits for the last event and reads the intervals with
//! `cuEventElapsedTime`; the frame's total is first to last event, so it includes the gaps between
//! launches but not the host's work before the first one.
use super::context::cuda_error;
use crate::render::{PassTime, RenderError};
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// Events around a fixed list of passes, reused every frame.
pub struct PassTimer {
    names: &'static [&'static str],
    events: Vec<CudaEvent>,
    recorded: usize,
}

impl PassTimer {
    pub fn new(ctx: &Arc<CudaContext>, names: &'static [&'static str]) -> Result<Self, RenderError> {
        let events = (0..=names.len())
            .map(|_| ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(cuda_error("cuEventCreate"))?;
        Ok(Self { names, events, recorded: 0 })
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

    /// Waits for the last event and returns each pass's time and the total, in milliseconds.
    pub fn finish(&mut self) -> Result<(Vec<PassTime>, f64), RenderError> {
        if self.recorded != self.events.len() {
            return Err(RenderError::Cuda {
                context: "pass timer".into(),
                message: format!("{} of {} events recorded", self.recorded, self.events.len()),
            });
        }
        let last = &self.events[self.events.len() - 1];
        last.synchronize().map_err(cuda_error("cuEventSynchronize (end of frame)"))?;
        let mut passes = Vec::with_capacity(self.names.len());
        for (i, name) in self.names.iter().enumerate() {
            let ms = self.events[i].elapsed_ms(&self.events[i + 1]).map_err(cuda_error("cuEventElapsedTime"))?;
            passes.push(PassTime { name, ms: ms as f64 });
        }
        let total = self.events[0].elapsed_ms(last).map_err(cuda_error("cuEventElapsedTime"))? as f64;
        Ok((passes, total))
    }
}
