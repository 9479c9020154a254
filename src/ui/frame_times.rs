//! Frame times for the panel: the time a frame took to render and show, smoothed, and a history
//! for the graph.
//!
//! How it works: the viewer pushes the work time (events, render, blit, panel, swap; not the time
//! spent waiting for input) of each frame that rendered the points. The smoothed value is an
//! exponential average from the second frame on (the first pays for warm-up); frames per second come from the interval between consecutive frames, and read
//! zero once the viewer has waited for input (there is no rate to show).

/// Frames in the frame-time graph.
pub const HISTORY_LEN: usize = 200;
/// Weight of the newest frame in the smoothed frame time.
pub const SMOOTHING: f64 = 0.05;
/// A gap between frames longer than this is not a frame rate (the caller also says when it waited).
pub const IDLE_GAP_MS: f64 = 10_000.0;
/// Frame times: exponentially smoothed, and a ring of the last [`HISTORY_LEN`].
#[derive(Clone, Debug)]
pub struct FrameTimes {
    history_ms: Vec<f32>,
    /// Index of the oldest entry once the ring is full.
    next: usize,
    smoothed_ms: f64,
    count: u64,
    /// Smoothed interval between consecutive frames (0: none yet, or idle since).
    interval_ms: f64,
    last_ms: f64,
}

impl Default for FrameTimes {
    fn default() -> Self {
        FrameTimes {
            history_ms: Vec::with_capacity(HISTORY_LEN),
            next: 0,
            smoothed_ms: 0.0,
            count: 0,
            interval_ms: 0.0,
            last_ms: 0.0,
        }
    }
}

impl FrameTimes {
    /// Adds one frame's time.
    pub fn push(&mut self, frame_ms: f64) {
        let frame_ms = if frame_ms.is_finite() { frame_ms.max(0.0) } else { 0.0 };
        // The first frame pays for warm-up: the smoothing starts again from the second.
        self.smoothed_ms =
            if self.count <= 1 { frame_ms } else { self.smoothed_ms + SMOOTHING * (frame_ms - self.smoothed_ms) };
        self.last_ms = frame_ms;
        self.count += 1;
        if self.history_ms.len() < HISTORY_LEN {
            self.history_ms.push(frame_ms as f32);
        } else {
            self.history_ms[self.next] = frame_ms as f32;
            self.next = (self.next + 1) % HISTORY_LEN;
        }
    }

    /// The last frame's time (0 before the first frame).
    pub fn last_ms(&self) -> f64 {
        self.last_ms
    }

    /// The smoothed frame time (0 before the first frame).
    pub fn smoothed_ms(&self) -> f64 {
        self.smoothed_ms
    }

    /// The interval since the previous frame; `None` when the viewer waited for input in between (or
    /// an interval longer than [`IDLE_GAP_MS`]), which restarts the rate.
    pub fn push_interval(&mut self, interval_ms: Option<f64>) {
        match interval_ms.filter(|ms| ms.is_finite() && *ms > 0.0 && *ms <= IDLE_GAP_MS) {
            Some(ms) if self.interval_ms > 0.0 => self.interval_ms += SMOOTHING * 4.0 * (ms - self.interval_ms),
            Some(ms) => self.interval_ms = ms,
            None => self.interval_ms = 0.0,
        }
    }

    /// Frames per second over consecutive frames (0 when there are none: before the first, or idle).
    pub fn fps(&self) -> f64 {
        if self.interval_ms > 0.0 {
            1000.0 / self.interval_ms
        } else {
            0.0
        }
    }

    /// The ring and the index of its oldest entry (imgui's `values_offset`).
    pub fn history(&self) -> (&[f32], usize) {
        (&self.history_ms, self.next)
    }

    /// The largest frame time in the history.
    pub fn max_ms(&self) -> f32 {
        self.history_ms.iter().copied().fold(0.0, f32::max)
    }
}

/// 1234567 → "1,234,567".
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// 1.234e9 → "1.23 G".
pub fn si(value: f64) -> String {
    let (scaled, prefix) = match value.abs() {
        v if v >= 1e12 => (value / 1e12, "T"),
        v if v >= 1e9 => (value / 1e9, "G"),
        v if v >= 1e6 => (value / 1e6, "M"),
        v if v >= 1e3 => (value / 1e3, "k"),
        _ => (value, ""),
    };
    format!("{scaled:.2} {prefix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_times_smooth_and_wrap() {
        let mut t = FrameTimes::default();
        assert_eq!(t.fps(), 0.0);
        t.push(10.0);
        assert_eq!(t.smoothed_ms(), 10.0);
        t.push_interval(Some(10.0));
        assert!((t.fps() - 100.0).abs() < 1e-9);
        t.push_interval(None);
        assert_eq!(t.fps(), 0.0, "a wait for input is not a rate");
        t.push_interval(Some(500.0));
        assert!((t.fps() - 2.0).abs() < 1e-9, "slow frames are still a rate");
        t.push(20.0);
        assert_eq!(t.smoothed_ms(), 20.0, "the first frame's warm-up is not smoothed in");
        t.push(30.0);
        assert!((t.smoothed_ms() - (20.0 + SMOOTHING * 10.0)).abs() < 1e-9);
        assert_eq!(t.last_ms(), 30.0);
        for i in 0..HISTORY_LEN {
            t.push(i as f64);
        }
        let (h, oldest) = t.history();
        assert_eq!(h.len(), HISTORY_LEN);
        // The oldest entry is the first of the loop (the first two were overwritten).
        assert_eq!(h[oldest], 0.0);
        assert_eq!(t.max_ms(), (HISTORY_LEN - 1) as f32);
        t.push(f64::NAN);
    }

    #[test]
    fn number_formats() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1000), "1,000");
        assert_eq!(group_thousands(10_000_000), "10,000,000");
        assert_eq!(si(1.234e9), "1.23 G");
        assert_eq!(si(12.0), "12.00 ");
    }
}
