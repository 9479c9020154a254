//! The overlay: a small imgui window with frame times, pass times, throughput, backend and camera.
//!
//! How it works: [`Overlay`] owns an imgui context, the GLFW platform glue (`GlfwPlatform`, in
//! `platform.rs`) and an `imgui_glow_renderer::Renderer`. The renderer is the borrowing flavour (not
//! `AutoRenderer`, which would take the `glow::Context` by value): it draws with the window's shared
//! `Rc<glow::Context>` and its own `SimpleTextureMap` (the font atlas), and the overlay's `Drop`
//! destroys its GL objects while the context is still current. It outputs sRGB-encoded colors, right
//! for the default (non-sRGB) framebuffer, and saves and restores the GL state it touches, so the blit
//! path is unaffected.
//!
//! Each frame the viewer forwards window events ([`Overlay::handle_event`]), asks whether imgui wants
//! the mouse or keyboard ([`Overlay::wants_mouse`], [`Overlay::wants_keyboard`]: the mouse is over the
//! overlay, or a widget is active), and, after blitting the points, calls [`Overlay::draw`] with an
//! [`OverlayStats`]. imgui 0.12 aborts in debug builds when asked to render a frame without draw lists,
//! so rendering happens only when there is something to draw. [`FrameTimes`] keeps the exponentially
//! smoothed frame time and the last [`HISTORY_LEN`] frame times for the graph.
use super::platform::GlfwPlatform;
use super::window::Window;
use crate::render::PassTime;
use glam::DVec3;
use imgui::Condition;
use imgui_glow_renderer::{Renderer, SimpleTextureMap};
use std::rc::Rc;

/// Frames in the frame-time graph.
pub const HISTORY_LEN: usize = 200;
/// Weight of the newest frame in the smoothed frame time.
pub const SMOOTHING: f64 = 0.05;
/// Where the text wraps, in pixels from the window's left edge: the right edge of the content.
const WRAP_X_PX: f32 = 400.0;
/// The one line of controls.
pub const CONTROLS: &str =
    "Esc mouse-look | WASD move | Q/E down/up | Shift x4 | wheel speed | F frame all | R reset | M mode | C color | F1 overlay";

/// Errors from the overlay.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("another imgui context is active in this process; only one viewer can run at a time")]
    ContextInUse,
    #[error("the overlay renderer could not start: {0}")]
    Init(String),
    #[error("the overlay renderer failed: {0}")]
    Render(String),
}

/// Frame times: exponentially smoothed, and a ring of the last [`HISTORY_LEN`].
#[derive(Clone, Debug)]
pub struct FrameTimes {
    history_ms: Vec<f32>,
    /// Index of the oldest entry once the ring is full.
    next: usize,
    smoothed_ms: f64,
    count: u64,
}

impl Default for FrameTimes {
    fn default() -> Self {
        FrameTimes { history_ms: Vec::with_capacity(HISTORY_LEN), next: 0, smoothed_ms: 0.0, count: 0 }
    }
}

impl FrameTimes {
    /// Adds one frame's time.
    pub fn push(&mut self, frame_ms: f64) {
        let frame_ms = if frame_ms.is_finite() { frame_ms.max(0.0) } else { 0.0 };
        self.smoothed_ms =
            if self.count == 0 { frame_ms } else { self.smoothed_ms + SMOOTHING * (frame_ms - self.smoothed_ms) };
        self.count += 1;
        if self.history_ms.len() < HISTORY_LEN {
            self.history_ms.push(frame_ms as f32);
        } else {
            self.history_ms[self.next] = frame_ms as f32;
            self.next = (self.next + 1) % HISTORY_LEN;
        }
    }

    /// The smoothed frame time (0 before the first frame).
    pub fn smoothed_ms(&self) -> f64 {
        self.smoothed_ms
    }

    /// Frames per second from the smoothed frame time (0 before the first frame).
    pub fn fps(&self) -> f64 {
        if self.smoothed_ms > 0.0 {
            1000.0 / self.smoothed_ms
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

/// What the overlay shows this frame.
#[derive(Clone, Debug)]
pub struct OverlayStats<'a> {
    pub frame_times: &'a FrameTimes,
    /// The last frame's passes.
    pub passes: &'a [PassTime],
    pub points: u64,
    pub size_px: (u32, u32),
    /// `Rasterizer::name()`.
    pub backend_name: &'a str,
    /// `Rasterizer::description()`.
    pub backend_description: &'a str,
    /// Why auto-selection chose this backend, if it fell back.
    pub backend_note: Option<&'a str>,
    /// How frames reach the window (CUDA-GL interop or host memory), and why if interop failed.
    pub pixel_path: &'a str,
    /// The GL driver's renderer string.
    pub gl_renderer: &'a str,
    /// Camera position in the source's own coordinates.
    pub eye_source: DVec3,
    pub yaw_deg: f32,
    pub pitch_deg: f32,
    pub speed_m_per_s: f32,
    pub mouselook: bool,
    /// The render mode's name.
    pub mode: &'a str,
    /// The color mode's name (rgb, intensity, elevation, classification).
    pub color_mode: &'a str,
}

/// The imgui overlay of one window.
pub struct Overlay {
    gl: Rc<glow::Context>,
    renderer: Renderer,
    textures: SimpleTextureMap,
    platform: GlfwPlatform,
    imgui: imgui::Context,
    visible: bool,
}

impl Overlay {
    /// Creates the imgui context and its renderer on `window`'s GL context.
    pub fn new(window: &Window) -> Result<Overlay, OverlayError> {
        let mut imgui = imgui::SuspendedContext::create().activate().map_err(|_| OverlayError::ContextInUse)?;
        let platform = GlfwPlatform::init(&mut imgui);
        let gl = window.gl().clone();
        let mut textures = SimpleTextureMap::default();
        let renderer =
            Renderer::new(&gl, &mut imgui, &mut textures, true).map_err(|e| OverlayError::Init(e.to_string()))?;
        Ok(Overlay { gl, renderer, textures, platform, imgui, visible: true })
    }

    pub fn visible(&self) -> bool {
        self.visible
    }

    /// F1: hides or shows the overlay.
    pub fn toggle_visible(&mut self) {
        self.visible = !self.visible;
    }

    /// Mouse-look takes the mouse away from imgui (and gives it back).
    pub fn set_mouse_captured(&mut self, captured: bool) {
        self.platform.set_mouse_captured(self.imgui.io_mut(), captured);
    }

    /// Forwards a window event to imgui.
    pub fn handle_event(&mut self, event: &glfw::WindowEvent) {
        self.platform.handle_event(self.imgui.io_mut(), event);
    }

    /// Whether imgui wants the mouse (it is over the overlay or dragging a widget).
    pub fn wants_mouse(&self) -> bool {
        self.visible && self.imgui.io().want_capture_mouse
    }

    /// Whether imgui wants the keyboard (a widget is active).
    pub fn wants_keyboard(&self) -> bool {
        self.visible && self.imgui.io().want_capture_keyboard
    }

    /// Builds and draws the overlay into the current (default) framebuffer, if visible.
    pub fn draw(&mut self, window: &Window, dt_s: f32, stats: &OverlayStats<'_>) -> Result<(), OverlayError> {
        if !self.visible {
            return Ok(());
        }
        self.platform.prepare_frame(self.imgui.io_mut(), window.glfw_window(), dt_s);
        let ui = self.imgui.new_frame();
        build_window(ui, stats);
        let draw_data = self.imgui.render();
        if draw_data.draw_lists_count() > 0 {
            self.renderer.render(&self.gl, &self.textures, draw_data).map_err(OverlayError::Render)?;
        }
        Ok(())
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        // The renderer's buffers, program and font texture; the window (and its context) outlives the overlay.
        self.renderer.destroy(&self.gl);
    }
}

/// The overlay's one window.
fn build_window(ui: &imgui::Ui, s: &OverlayStats<'_>) {
    ui.window("pcv##overlay")
        // Pinned: imgui would otherwise push a movable window off to the side while the display is tiny
        // and leave it there.
        .position([8.0, 8.0], Condition::Always)
        .movable(false)
        .always_auto_resize(true)
        .bg_alpha(0.75)
        .focus_on_appearing(false)
        .save_settings(false)
        .build(|| {
            let frame_ms = s.frame_times.smoothed_ms();
            ui.text(format!("frame {frame_ms:6.2} ms   {:6.1} fps", s.frame_times.fps()));
            let (history, oldest) = s.frame_times.history();
            let max_ms = s.frame_times.max_ms().max(1.0);
            ui.plot_lines("##frame_ms", history)
                .values_offset(oldest)
                .scale_min(0.0)
                .scale_max(max_ms * 1.1)
                .graph_size([WRAP_X_PX - ui.cursor_pos()[0], 48.0])
                .overlay_text(format!("last {} frames, max {max_ms:.1} ms", history.len()))
                .build();
            if !s.passes.is_empty() {
                let passes: Vec<String> = s.passes.iter().map(|p| format!("{} {:.2}", p.name, p.ms)).collect();
                ui.text(format!("passes (ms): {}", passes.join(" | ")));
            }
            let points_per_s = if frame_ms > 0.0 { s.points as f64 / (frame_ms * 1e-3) } else { 0.0 };
            ui.text(format!("points {}   {} points/s", group_thousands(s.points), si(points_per_s)));
            ui.text(format!("resolution {} x {} px", s.size_px.0, s.size_px.1));
            ui.separator();
            let _wrap = ui.push_text_wrap_pos_with_pos(WRAP_X_PX);
            ui.text_wrapped(format!("backend {}: {}", s.backend_name, s.backend_description));
            ui.text(format!("mode {} (M cycles)   color {} (C cycles)", s.mode, s.color_mode));
            if let Some(note) = s.backend_note {
                ui.text_colored([1.0, 0.8, 0.3, 1.0], format!("note: {note}"));
            }
            ui.text_wrapped(format!("pixels: {}", s.pixel_path));
            ui.text_wrapped(format!("display: {}", s.gl_renderer));
            ui.separator();
            let e = s.eye_source;
            ui.text(format!("position {:.3}, {:.3}, {:.3}", e.x, e.y, e.z));
            ui.text(format!(
                "yaw {:.1} deg   pitch {:.1} deg   speed {:.3} m/s{}",
                s.yaw_deg,
                s.pitch_deg,
                s.speed_m_per_s,
                if s.mouselook { "   [mouse-look]" } else { "" }
            ));
            ui.text_disabled(CONTROLS);
        });
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
        assert!((t.fps() - 100.0).abs() < 1e-9);
        t.push(20.0);
        assert!((t.smoothed_ms() - (10.0 + SMOOTHING * 10.0)).abs() < 1e-9);
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
