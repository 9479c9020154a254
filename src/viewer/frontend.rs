//! The window side of the loop: the GLFW window, the panel, the pixel surface and the keymap — waiting
//! for input, turning events into actions, and drawing a frame.
//!
//! How it works: [`Frontend::wait`] waits for input when the loop has nothing to do (an idle window
//! takes no CPU and no GPU) and polls otherwise; [`Frontend::input`] gives every event to the panel
//! first, then to the keymap, which turns it (and an input script's events for this frame) into
//! actions. [`Frontend::draw`] renders the points when they must be (the camera or the points
//! changed, the size, a counted or continuous run), else keeps the last frame in the pixel buffer;
//! blits it; takes a screenshot of the points alone if one was asked for without the panel; draws the
//! panel (whose widgets return actions for the next turn), the marks and the help; and takes the
//! screenshot with the panel. GPU stage times (CUDA events around map and unmap, the passes, GL
//! timestamps around upload, texture copy, blit and panel) are kept for the panel and the summary.
//! Fields drop in declaration order: the surface (CUDA registration, GL objects) and the panel go
//! before the window and its GL context.
use super::effects::save_screenshot;
use super::surface::{pixel_path, Surface};
use super::{ViewerError, ViewerOptions};
use crate::app::resolution::{scaled_size, Resolution, SETTLE_S};
use crate::app::state::AppState;
use crate::app::update::Effects;
use crate::display::blit::read_default_framebuffer;
use crate::display::gl_timer::GlStageTimer;
use crate::display::window::{Window, WindowOptions};
use crate::input::{Action, InputEvent, Keymap, KeymapCtx};
use crate::ui::{FrameInfo, FrameTimes, Overlay};
use glam::Vec2;
use glfw::WindowEvent;
use pcv_render::image_io::Frame;
use pcv_render::{FrameParams, FrameStats, PassTime, Rasterizer, RenderError, RenderMode};
use std::time::Instant;

/// Longest step the camera takes in one frame, so that a stall does not fling it away.
pub const MAX_DT_S: f32 = 0.1;

/// What one turn's input came to.
pub struct TurnInput {
    pub actions: Vec<Action>,
    /// Held movement keys (none while the panel has the keyboard).
    pub held: pcv_camera::MoveInput,
    /// The framebuffer's size now.
    pub size_px: (u32, u32),
}

/// How a draw went.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Drawn {
    /// A frame was drawn (`rendered`: the points were rendered, not only the panel over the last frame).
    Frame { rendered: bool },
    /// The mode cannot be drawn on this backend: the state went back to culled; draw again next turn.
    Retry,
}

/// The window, its panel and pixel surface, and what the panel shows of the frames.
pub struct Frontend {
    surface: Option<Surface>,
    overlay: Option<Overlay>,
    gl_timer: GlStageTimer,
    keymap: Keymap,
    /// Why frames go through host memory, once CUDA-GL interop failed.
    pub interop_fallback: Option<String>,
    pixels_how: String,
    backend_description: String,
    backend_note: Option<String>,
    pub frame_times: FrameTimes,
    /// The last rendered frame's stats.
    pub stats: FrameStats,
    /// The newest whole-frame GPU stages (a frame or two old: GL timestamps arrive late).
    pub gpu_stages: Vec<PassTime>,
    /// Actions the panel's widgets asked for, carried out next turn.
    pub ui_actions: Vec<Action>,
    /// Panel frames still to draw after input: imgui takes a press and its release in separate frames
    /// (its input queue trickles), so a click needs a frame after the one that saw it.
    ui_settle: u8,
    /// Whether the pixel buffer holds a frame of the current size (picking reads it).
    rendered: bool,
    last_shown: Option<Instant>,
    /// Adaptive resolution: the scale of the frame shown (1: the framebuffer's size), the wall time its
    /// render and upload took, the camera it was rendered with, and when the camera last moved.
    resolution: Resolution,
    pub render_scale: f32,
    render_ms: f64,
    last_clip: Option<glam::Mat4>,
    last_motion: Option<Instant>,
    /// The profile window's rasterizer and texture, while a profile is open in a window.
    pub profile_view: Option<super::profile_view::ProfileView>,
    pub window: Window,
}

impl Frontend {
    /// Opens the window (and the panel, unless `opts.overlay` is off) for `rasterizer`.
    pub fn open(
        opts: &ViewerOptions,
        title: &str,
        rasterizer: &dyn Rasterizer,
        backend_note: Option<String>,
    ) -> Result<Frontend, ViewerError> {
        let window =
            Window::open(&WindowOptions { size_px: opts.size_px, title: format!("pcv - {title}"), vsync: opts.vsync })?;
        let overlay = if opts.overlay { Some(Overlay::new(&window)?) } else { None };
        Ok(Frontend {
            surface: None,
            overlay,
            gl_timer: GlStageTimer::new(window.gl().clone()),
            keymap: Keymap::default(),
            interop_fallback: None,
            pixels_how: String::new(),
            backend_description: rasterizer.description(),
            backend_note,
            frame_times: FrameTimes::default(),
            stats: FrameStats::default(),
            gpu_stages: Vec::new(),
            ui_actions: Vec::new(),
            ui_settle: 0,
            rendered: false,
            last_shown: None,
            resolution: Resolution::new(opts.frame_target_ms),
            render_scale: 1.0,
            render_ms: 0.0,
            last_clip: None,
            last_motion: None,
            profile_view: None,
            window,
        })
    }

    /// Whether the panel still has frames to draw for the input it saw.
    pub fn settling(&self) -> bool {
        !self.ui_actions.is_empty() || self.ui_settle > 0
    }

    /// Whether the held keys move the camera.
    pub fn moving(&self) -> bool {
        self.keymap.held().is_moving()
    }

    /// A frame shown below full resolution: the seconds until it refines (0: due now); `None` when the
    /// frame shown is at full resolution.
    pub fn refine_due_in_s(&self) -> Option<f64> {
        if self.render_scale >= 1.0 {
            return None;
        }
        let since = self.last_motion.map_or(SETTLE_S, |t| t.elapsed().as_secs_f64());
        Some((SETTLE_S - since).max(0.0))
    }

    /// A frame that rendered the points was shown after `frame_ms` in all (adaptive resolution's model).
    pub fn record_frame(&mut self, frame_ms: f64) {
        self.resolution.record(self.render_scale, frame_ms, self.render_ms);
    }

    /// The last frame's size, where picking can read it: a frame was rendered for the framebuffer's
    /// current size (at full resolution or below it).
    pub fn pick_frame(&self) -> Option<(u32, u32)> {
        let s = self
            .surface
            .as_ref()
            .filter(|s| self.rendered && s.pixels.size_px() == self.window.framebuffer_size_px())?;
        Some(s.pixels.frame_size_px())
    }

    /// Waits for events for at most `timeout_s` (`None`: polls only).
    pub fn wait(&mut self, timeout_s: Option<f64>) {
        if let Some(t) = timeout_s {
            self.window.wait_events_timeout(t);
        }
    }

    /// This turn's events as actions (the panel's from last turn first, then the window's and the input
    /// script's `scripted` through the keymap, which is told where the clip-box gizmo's handles of
    /// `state` are), the held keys, and whether the panel or the window asks for a redraw (merged into
    /// `need`).
    pub fn input(&mut self, scripted: Vec<InputEvent>, state: &AppState, need: &mut Effects) -> TurnInput {
        let events = self.window.poll_events();
        let (fb_w, fb_h) = self.window.framebuffer_size_px();
        let (win_w, win_h) = self.window.window_size();
        let px_per_coord = Vec2::new(fb_w as f32 / win_w.max(1) as f32, fb_h as f32 / win_h.max(1) as f32);
        let px_per_coord = if px_per_coord.is_finite() && px_per_coord.x > 0.0 { px_per_coord } else { Vec2::ONE };
        let mut actions = std::mem::take(&mut self.ui_actions);
        if self.ui_settle > 0 {
            self.ui_settle -= 1;
            need.redraw_ui = true;
        }
        for event in &events {
            if let Some(ov) = self.overlay.as_mut() {
                ov.handle_event(event);
                need.redraw_ui = true;
                self.ui_settle = 2;
            }
            match event {
                WindowEvent::FramebufferSize(..) => need.redraw_scene = true,
                WindowEvent::Refresh | WindowEvent::Focus(_) | WindowEvent::Iconify(_) => need.redraw_ui = true,
                _ => {}
            }
        }
        // Scripted events reach the panel as the window's do (a script can click a panel button).
        if let Some(ov) = self.overlay.as_mut() {
            for event in scripted.iter().filter_map(InputEvent::to_glfw) {
                ov.handle_event(&event);
                need.redraw_ui = true;
                self.ui_settle = 2;
            }
        }
        let glfw_events = events.iter().filter_map(InputEvent::from_glfw).collect::<Vec<_>>();
        let gizmo = state.gizmo_handles((fb_w, fb_h));
        for ev in glfw_events.into_iter().chain(scripted) {
            let kctx = KeymapCtx {
                mouselook: state.mouselook,
                ui_mouse: self.overlay.as_ref().is_some_and(Overlay::wants_mouse),
                ui_keyboard: self.overlay.as_ref().is_some_and(Overlay::wants_keyboard),
                px_per_coord,
                time_s: self.window.time_s(),
                gizmo: gizmo.as_ref(),
                editing: state.gizmo.selected.is_some(),
            };
            actions.extend(self.keymap.handle(&ev, &kctx));
        }
        let ui_keyboard = self.overlay.as_ref().is_some_and(Overlay::wants_keyboard);
        let held = if ui_keyboard { Default::default() } else { self.keymap.held() };
        TurnInput { actions, held, size_px: (fb_w, fb_h) }
    }

    /// Mouse-look on or off: the cursor is captured (and the panel told) while on.
    pub fn set_mouselook(&mut self, on: bool) {
        self.window.set_mouselook(on);
        if let Some(ov) = self.overlay.as_mut() {
            ov.set_mouse_captured(on);
        }
    }

    /// Draws a frame of `state` (the points rendered when `render_points`, else the last frame kept),
    /// with the panel, and takes the screenshots `need` asks for; `mode` is what the points are drawn in.
    /// While the camera moves the points may render below full resolution (adaptive resolution, unless
    /// `full`); a frame shown below it re-renders at full once the camera is still. `lod`: the
    /// level-of-detail scene shown, whose nodes a profile window's strip is read from.
    #[expect(clippy::too_many_arguments, reason = "the frame's state, its sources and its three switches, each named")]
    pub fn draw(
        &mut self,
        state: &mut AppState,
        rasterizer: &mut dyn Rasterizer,
        lod: Option<&pcv_lod::LodScene>,
        need: &mut Effects,
        mode: RenderMode,
        render_points: bool,
        full: bool,
    ) -> Result<Drawn, ViewerError> {
        let (fb_w, fb_h) = self.window.framebuffer_size_px();
        let clip_from_world = state.nav.camera.clip_from_world(fb_w, fb_h);
        let now = Instant::now();
        if self.last_clip.is_some_and(|c| c != clip_from_world) {
            self.last_motion = Some(now);
        }
        let moving = self.last_motion.is_some_and(|t| now.duration_since(t).as_secs_f64() < SETTLE_S);
        let full = full || need.screenshot.is_some();
        let mut render_points = render_points || !self.rendered || (self.render_scale < 1.0 && (!moving || full));
        let scale = match (render_points, full) {
            (false, _) => self.render_scale,
            (true, true) => 1.0,
            (true, false) => self.resolution.scale_for(moving),
        };
        let (rw, rh) = scaled_size((fb_w, fb_h), scale);
        if self.surface.as_ref().map(|s| s.pixels.size_px()) != Some((fb_w, fb_h)) {
            // The old registration and GL objects go before the new ones are made.
            drop(self.surface.take());
            let allow_interop = self.interop_fallback.is_none();
            let (made, interop_error) = Surface::new(self.window.gl(), fb_w, fb_h, rasterizer, allow_interop)?;
            if let Some(e) = interop_error {
                self.interop_fallback = Some(format!("CUDA could not register the window's pixel buffer ({e})"));
            }
            self.pixels_how = pixel_path(&made, self.interop_fallback.as_deref());
            self.surface = Some(made);
            render_points = true;
        }
        let Some(current) = self.surface.as_mut() else { return Ok(Drawn::Retry) };
        // The GL stages' first timestamp: on the host path before the frame is uploaded into the pixel
        // buffer; with interop after CUDA's unmap, so that the wait GL makes for CUDA's work (the unmap's
        // synchronization) falls before it, not into the texture copy.
        if !current.uses_interop() {
            self.gl_timer.begin_frame();
        }
        if render_points {
            let frame = FrameParams::of_camera(&state.nav.camera, rw, rh)
                .with_mode(mode)
                .with_look(state.look.at_scale(scale))
                .with_spacing(state.spacing_m);
            let t = Instant::now();
            self.stats = match current.render(rasterizer, &frame) {
                // A mode this backend cannot draw (the reference on several GPUs, or on a scene prepared a
                // chunk at a time): say why and go back to the default mode instead of closing the window.
                Err(ViewerError::Render(e @ RenderError::ModeUnavailable { .. }))
                    if state.mode != RenderMode::Culled =>
                {
                    state.messages.error(format!("{e}; showing culled"));
                    state.mode = RenderMode::Culled;
                    need.redraw_scene = true;
                    return Ok(Drawn::Retry);
                }
                r => r?,
            };
            self.rendered = true;
            self.render_ms = t.elapsed().as_secs_f64() * 1e3;
            self.render_scale = scale;
            self.last_clip = Some(clip_from_world);
            if !current.uses_interop() {
                self.gl_timer.mark("upload");
            }
        }
        if current.uses_interop() {
            self.gl_timer.begin_frame();
        }
        current.pixels.copy_to_texture()?;
        self.gl_timer.mark("texture");
        current.pixels.blit_to(fb_w, fb_h)?;
        self.gl_timer.mark("blit");
        let screenshot = need.screenshot.take();
        if screenshot == Some(false) || (screenshot.is_some() && self.overlay.is_none()) {
            save_screenshot(state, self)?;
        }
        let profile = self.sync_profile(state, rasterizer.name(), lod);
        if let Some(ov) = self.overlay.as_mut() {
            let info = FrameInfo {
                frame_times: &self.frame_times,
                stats: &self.stats,
                points: rasterizer.num_points(),
                size_px: (fb_w, fb_h),
                render_scale: self.render_scale,
                frame_target_ms: self.resolution.target_ms(),
                backend_name: rasterizer.name(),
                backend_description: &self.backend_description,
                backend_note: self.backend_note.as_deref(),
                pixel_path: &self.pixels_how,
                gl_renderer: self.window.gl_renderer(),
                clip_from_world,
                gpu_stages: &self.gpu_stages,
                profile,
                profile_reading: self.profile_view.as_ref().and_then(|v| v.reading()),
            };
            let dt = self.last_shown.map_or(1.0 / 60.0, |t| t.elapsed().as_secs_f32().min(MAX_DT_S));
            self.ui_actions = ov.draw(&self.window, dt, state, &info)?;
            self.gl_timer.mark("panel");
        }
        self.gl_timer.end_frame();
        if render_points {
            // This frame's CUDA stages and passes with the newest GL stages that have arrived (a frame
            // or two old: the panel shows them next frame).
            let cuda = self.surface.as_ref().map(|s| s.cuda_stages.as_slice()).unwrap_or_default();
            self.gpu_stages = whole_frame_stages(cuda, &self.stats, self.gl_timer.latest());
        }
        if screenshot == Some(true) && self.overlay.is_some() {
            save_screenshot(state, self)?;
        }
        Ok(Drawn::Frame { rendered: render_points })
    }

    /// Draws the profile window's image when what it shows changed (a second rasterizer of
    /// `backend`, made when a profile first opens in a window, dropped when it closes).
    fn sync_profile(
        &mut self,
        state: &mut AppState,
        backend: &str,
        lod: Option<&pcv_lod::LodScene>,
    ) -> Option<crate::ui::profile_window::ProfileImage> {
        if state.profile.as_ref().is_none_or(|p| p.window.is_none()) {
            self.profile_view = None;
            return None;
        }
        if self.profile_view.is_none() {
            match super::profile_view::ProfileView::new(self.window.gl(), backend) {
                Ok(v) => self.profile_view = Some(v),
                Err(e) => {
                    // Drawn in the main view instead (as for streamed clouds).
                    state.messages.error(format!("{e}; profiles take over the main view"));
                    state.profile_window_ok = false;
                    state.profile = None;
                    return None;
                }
            }
        }
        let view = self.profile_view.as_mut()?;
        if let Err(e) = view.sync(state, lod) {
            state.messages.error(e);
        }
        let ((w, h), clip_from_world) = view.shown?;
        let texture = view.texture()?;
        Some(crate::ui::profile_window::ProfileImage {
            texture: imgui::TextureId::new(texture.0.get() as usize),
            size_px: (w, h),
            clip_from_world,
            points: view.points,
            coarse: view.truncated,
            render_ms: view.render_ms,
        })
    }

    /// What the back buffer holds now (the frame just drawn, before the swap).
    pub fn read_back_buffer(&self) -> Result<Frame, ViewerError> {
        let (w, h) = self.window.framebuffer_size_px();
        Ok(read_default_framebuffer(self.window.gl(), w, h)?)
    }

    /// Shows the frame drawn; returns when the swap returned (a frame's time runs to here).
    pub fn swap(&mut self) -> Instant {
        self.window.swap_buffers();
        let now = Instant::now();
        self.last_shown = Some(now);
        now
    }
}

/// A frame's GPU stages in order: the CUDA map, the render passes (their total), the CUDA unmap, then
/// the GL stages (upload, texture, blit, panel).
fn whole_frame_stages(cuda: &[PassTime], stats: &FrameStats, gl: &[PassTime]) -> Vec<PassTime> {
    let mut out: Vec<PassTime> = cuda.iter().filter(|p| p.name == "map").cloned().collect();
    out.push(PassTime { name: "passes", ms: stats.total_ms });
    out.extend(cuda.iter().filter(|p| p.name == "unmap").cloned());
    out.extend(gl.iter().cloned());
    out
}
