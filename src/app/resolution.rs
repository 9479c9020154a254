//! Adaptive resolution: while the camera moves, frames render at a lower resolution when full
//! resolution would miss the frame-time target, and the first frame after the camera has been still
//! for [`SETTLE_S`] renders at full resolution again (progressive refinement, as Potree does).
//!
//! How it works: a frame's time is modelled as a part that does not depend on the render resolution
//! (events, panel, swap) plus a part that grows with its pixels (the passes, the upload to the window):
//! `fixed_ms + full_ms · scale²`. Each rendered frame updates both estimates (moving averages), and
//! while the camera moves the next frame takes the largest of [`SCALES`] that keeps the model within the
//! target. The scale steps down by up to two steps a frame when frames are too slow and up one step a
//! frame, so it neither flickers between sizes nor drops to the floor for one hitch. Pure: the viewer's loop feeds it times and asks it for scales.

/// The render scales a moving camera may take, largest first (linear, per side).
pub const SCALES: [f32; 8] = [1.0, 0.85, 0.7, 0.6, 0.5, 0.4, 0.33, 0.25];

/// How long the camera must be still before a frame refines to full resolution.
pub const SETTLE_S: f64 = 0.2;

/// The default frame-time target, in milliseconds (about 33 frames a second).
pub const DEFAULT_TARGET_MS: f64 = 30.0;

/// The weight of the newest frame in the moving averages.
const SMOOTHING: f64 = 0.3;

/// Adaptive resolution's state from frame to frame.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The frame-time target (`None`: always full resolution).
    target_ms: Option<f64>,
    /// The index into [`SCALES`] of the last moving frame.
    step: usize,
    /// Estimates: the frame time that does not scale, and that of the render at full resolution.
    fixed_ms: Option<f64>,
    full_ms: Option<f64>,
}

impl Resolution {
    /// Holds `target_ms` (`None` or not positive: off).
    pub fn new(target_ms: Option<f64>) -> Resolution {
        Resolution {
            target_ms: target_ms.filter(|t| t.is_finite() && *t > 0.0),
            step: 0,
            fixed_ms: None,
            full_ms: None,
        }
    }

    /// The target, if any.
    pub fn target_ms(&self) -> Option<f64> {
        self.target_ms
    }

    /// A frame rendered at `scale` took `frame_ms` in all, `render_ms` of it rendering and uploading.
    pub fn record(&mut self, scale: f32, frame_ms: f64, render_ms: f64) {
        if !(frame_ms.is_finite() && render_ms.is_finite() && scale > 0.0) {
            return;
        }
        let render_ms = render_ms.clamp(0.0, frame_ms.max(0.0));
        let mix = |old: Option<f64>, new: f64| Some(old.map_or(new, |o| o + SMOOTHING * (new - o)));
        self.full_ms = mix(self.full_ms, render_ms / (scale as f64 * scale as f64));
        self.fixed_ms = mix(self.fixed_ms, (frame_ms - render_ms).max(0.0));
    }

    /// The scale of the next frame: full when the camera is still (or no target), else the largest that
    /// the model says keeps the target — at most one step above the last moving frame's.
    pub fn scale_for(&mut self, moving: bool) -> f32 {
        let (Some(target), true) = (self.target_ms, moving) else {
            self.step = 0;
            return 1.0;
        };
        let (Some(full), fixed) = (self.full_ms, self.fixed_ms.unwrap_or(0.0)) else {
            return SCALES[self.step];
        };
        let fits = |s: f32| fixed + full * (s as f64 * s as f64) <= target;
        let wanted = SCALES.iter().position(|&s| fits(s)).unwrap_or(SCALES.len() - 1);
        // Up one step a frame; down at most two (one slow frame — a hitch — does not drop to the floor).
        self.step = if wanted < self.step { self.step - 1 } else { wanted.min(self.step + 2) };
        SCALES[self.step]
    }
}

/// The render size of a `size_px` framebuffer at `scale` (each side at least 1 pixel).
pub fn scaled_size(size_px: (u32, u32), scale: f32) -> (u32, u32) {
    if scale >= 1.0 {
        return size_px;
    }
    let side = |n: u32| ((n as f32 * scale).round() as u32).clamp(1, n.max(1));
    (side(size_px.0), side(size_px.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_still_camera_and_no_target_render_at_full_resolution() {
        let mut r = Resolution::new(Some(30.0));
        r.record(1.0, 200.0, 190.0);
        assert_eq!(r.scale_for(false), 1.0, "still");
        let mut off = Resolution::new(None);
        off.record(1.0, 200.0, 190.0);
        assert_eq!(off.scale_for(true), 1.0, "no target");
        assert_eq!(Resolution::new(Some(0.0)).target_ms(), None);
    }

    #[test]
    fn fast_frames_stay_at_full_resolution() {
        // A GPU's frame: 3 ms, of which 1 renders.
        let mut r = Resolution::new(Some(30.0));
        for _ in 0..20 {
            let s = r.scale_for(true);
            assert_eq!(s, 1.0);
            r.record(s, 3.0, 1.0);
        }
    }

    #[test]
    fn slow_frames_drop_to_a_scale_that_holds_the_target_and_climb_back_a_step_a_frame() {
        // A CPU frame costing 5 ms fixed + 100 ms of rendering at full resolution.
        let mut r = Resolution::new(Some(30.0));
        let cost = |s: f32| 5.0 + 100.0 * (s * s) as f64;
        let mut s = r.scale_for(true);
        for _ in 0..10 {
            r.record(s, cost(s), cost(s) - 5.0);
            s = r.scale_for(true);
        }
        assert!(cost(s) <= 30.0, "scale {s} takes {} ms", cost(s));
        assert!(s >= 0.4, "not lower than needed: {s}");
        // The scene gets cheap (a smaller view): back to full, one step up a frame at most.
        let i = |v: f32| SCALES.iter().position(|&x| x == v).unwrap();
        let mut climbed = Vec::new();
        for _ in 0..20 {
            r.record(s, 6.0, 1.0);
            let next = r.scale_for(true);
            assert!(i(next) + 1 >= i(s), "one step up at most: {s} → {next}");
            climbed.push(next);
            s = next;
        }
        assert_eq!(s, 1.0, "full resolution again: {climbed:?}");
        // Still again: full at once.
        assert_eq!(r.scale_for(false), 1.0);
    }

    #[test]
    fn frames_too_slow_even_at_the_smallest_scale_take_it_two_steps_a_frame() {
        let mut r = Resolution::new(Some(10.0));
        let mut seen = Vec::new();
        for _ in 0..6 {
            r.record(1.0, 500.0, 480.0);
            seen.push(r.scale_for(true));
        }
        assert_eq!(&seen[..4], &[SCALES[2], SCALES[4], SCALES[6], SCALES[7]]);
        assert_eq!(*seen.last().unwrap(), *SCALES.last().unwrap());
    }

    #[test]
    fn sizes() {
        assert_eq!(scaled_size((1280, 720), 1.0), (1280, 720));
        assert_eq!(scaled_size((1280, 720), 0.5), (640, 360));
        assert_eq!(scaled_size((3, 1), 0.25), (1, 1));
        assert_eq!(scaled_size((0, 0), 0.5), (1, 1), "never a 0-pixel frame");
    }
}
