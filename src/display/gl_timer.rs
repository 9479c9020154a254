//! GPU times of the window's GL work, from GL timestamp queries, without stalling the pipeline.
//!
//! How it works: each frame records `glQueryCounter(GL_TIMESTAMP)` before its first GL stage and after
//! each ([`GlStageTimer::mark`]); the differences are the stages' GPU times. The results arrive a frame
//! or two later, so a ring of [`RING`] frames of queries is kept: [`GlStageTimer::begin_frame`] first
//! collects every earlier frame whose last query has its result, and [`GlStageTimer::latest`] gives
//! the newest collected. A driver without timestamps (or one that reports an error for them) turns the
//! timer off: it then records nothing and `latest` stays empty.
//!
//! Needs the window's GL context current on the calling thread, as everything in [`super`].
use glow::HasContext;
use pcv_render::PassTime;
use std::rc::Rc;

/// Frames of queries in flight.
pub const RING: usize = 4;
/// Timestamps a frame can record (stages + 1).
pub const MAX_MARKS: usize = 8;

struct Slot {
    queries: Vec<glow::Query>,
    names: Vec<&'static str>,
    pending: bool,
}

/// Timestamp queries around a frame's GL stages.
pub struct GlStageTimer {
    gl: Rc<glow::Context>,
    slots: Vec<Slot>,
    current: usize,
    recording: bool,
    latest: Vec<PassTime>,
    enabled: bool,
}

impl GlStageTimer {
    /// Makes the queries; a driver that cannot makes a timer that stays off.
    pub fn new(gl: Rc<glow::Context>) -> GlStageTimer {
        let mut slots = Vec::with_capacity(RING);
        let mut enabled = true;
        for _ in 0..RING {
            let mut queries = Vec::with_capacity(MAX_MARKS);
            for _ in 0..MAX_MARKS {
                // SAFETY: the context is current on this thread (the module's contract); a query name is
                // plain data until used.
                match unsafe { gl.create_query() } {
                    Ok(q) => queries.push(q),
                    Err(_) => enabled = false,
                }
            }
            slots.push(Slot { queries, names: Vec::new(), pending: false });
        }
        GlStageTimer { gl, slots, current: 0, recording: false, latest: Vec::new(), enabled }
    }

    /// Whether timestamps are being taken.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Collects finished frames, then starts a frame: records its first timestamp.
    pub fn begin_frame(&mut self) {
        if !self.enabled {
            return;
        }
        self.collect();
        // A slot still waiting for its results (the GPU is more than RING frames behind) is dropped.
        let slot = &mut self.slots[self.current];
        slot.pending = false;
        slot.names.clear();
        self.recording = true;
        self.record(0);
    }

    /// Ends the stage called `name` (and starts the next).
    pub fn mark(&mut self, name: &'static str) {
        if !self.enabled || !self.recording {
            return;
        }
        let k = self.slots[self.current].names.len() + 1;
        if k >= MAX_MARKS {
            return;
        }
        self.slots[self.current].names.push(name);
        self.record(k);
    }

    /// Ends the frame; its results arrive in a later [`GlStageTimer::begin_frame`].
    pub fn end_frame(&mut self) {
        if !self.enabled || !self.recording {
            return;
        }
        self.recording = false;
        self.slots[self.current].pending = true;
        self.current = (self.current + 1) % self.slots.len();
    }

    /// The stages' GPU times of the newest frame whose results have arrived (empty before the first).
    pub fn latest(&self) -> &[PassTime] {
        &self.latest
    }

    fn record(&mut self, k: usize) {
        let q = self.slots[self.current].queries[k];
        // SAFETY: the context is current; `q` is a live query name of it.
        let error = unsafe {
            self.gl.query_counter(q, glow::TIMESTAMP);
            self.gl.get_error()
        };
        if error != glow::NO_ERROR {
            // No timestamps on this driver: stop asking.
            self.enabled = false;
            self.recording = false;
        }
    }

    /// Reads every pending slot whose results are ready, oldest first, keeping the newest.
    fn collect(&mut self) {
        for step in 1..=self.slots.len() {
            let i = (self.current + step) % self.slots.len();
            let slot = &self.slots[i];
            if !slot.pending {
                continue;
            }
            let n = slot.names.len();
            let last = slot.queries[n];
            // SAFETY: the context is current and `last` is a query this timer recorded.
            let ready = unsafe { self.gl.get_query_parameter_u32(last, glow::QUERY_RESULT_AVAILABLE) } != 0;
            if !ready {
                continue;
            }
            let mut stamps = Vec::with_capacity(n + 1);
            for &q in &slot.queries[..=n] {
                let mut ns = 0u64;
                // SAFETY: the context is current and `q` was recorded; with no query buffer bound,
                // glGetQueryObjectui64v writes the result through the pointer glow takes as an "offset",
                // here a live local u64.
                unsafe {
                    self.gl.get_query_parameter_u64_with_offset(q, glow::QUERY_RESULT, &mut ns as *mut u64 as usize)
                };
                stamps.push(ns);
            }
            self.latest = slot
                .names
                .iter()
                .zip(stamps.windows(2))
                .map(|(&name, w)| PassTime { name, ms: w[1].saturating_sub(w[0]) as f64 / 1e6 })
                .collect();
            self.slots[i].pending = false;
        }
    }
}

impl Drop for GlStageTimer {
    fn drop(&mut self) {
        for slot in &self.slots {
            for &q in &slot.queries {
                // SAFETY: the context is still current (the window outlives the timer) and each name is
                // deleted once.
                unsafe { self.gl.delete_query(q) };
            }
        }
    }
}
