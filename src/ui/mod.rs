//! The user interface drawn over the points: the panel, the help window, and marks in the view.
//!
//! How it works: [`Overlay`] owns an imgui context, the GLFW platform glue
//! ([`crate::display::platform`]) and an `imgui_glow_renderer::Renderer`. The renderer is the borrowing
//! flavour (not `AutoRenderer`, which would take the `glow::Context` by value): it draws with the
//! window's shared `Rc<glow::Context>` and its own `SimpleTextureMap` (the font atlas), and the
//! overlay's `Drop` destroys its GL objects while the context is still current. It outputs
//! sRGB-encoded colours, right for the default (non-sRGB) framebuffer, and saves and restores the GL
//! state it touches, so the blit path is unaffected.
//!
//! Each frame the viewer forwards window events ([`Overlay::handle_event`]), asks whether imgui wants
//! the mouse or keyboard ([`Overlay::wants_mouse`], [`Overlay::wants_keyboard`]) so the camera leaves
//! that input alone, and, after blitting the points, calls [`Overlay::draw`] with the state and this
//! frame's figures ([`FrameInfo`]). `draw` builds the [`panel`], the [`help`] window and the [`marks`]
//! (picked point, measurement) and returns the [`Action`]s the widgets were used for, which the
//! viewer carries out like key presses. imgui 0.12 aborts in debug builds when asked to render a frame
//! without draw lists, so rendering happens only when there is something to draw.
pub mod frame_times;
pub mod help;
pub mod marks;
pub mod panel;
pub mod profile_window;
pub mod scale;

pub use frame_times::{group_thousands, si, FrameTimes};

use crate::app::state::AppState;
use crate::display::platform::GlfwPlatform;
use crate::display::window::Window;
use crate::input::Action;
use glam::Mat4;
use imgui_glow_renderer::{Renderer, SimpleTextureMap};
use pcv_render::FrameStats;
use std::rc::Rc;

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

/// This frame's figures, for the panel.
#[derive(Clone, Debug)]
pub struct FrameInfo<'a> {
    pub frame_times: &'a FrameTimes,
    /// The last rendered frame's passes and point count.
    pub stats: &'a FrameStats,
    /// Points uploaded.
    pub points: u64,
    pub size_px: (u32, u32),
    /// The points' render scale (1: the framebuffer's size; below while the camera moves), and the
    /// frame-time target adaptive resolution holds (`None`: off).
    pub render_scale: f32,
    pub frame_target_ms: Option<f64>,
    /// `Rasterizer::name()`, `description()`, and why auto-selection fell back, if it did.
    pub backend_name: &'a str,
    pub backend_description: &'a str,
    pub backend_note: Option<&'a str>,
    /// How frames reach the window (CUDA-GL interop or host memory), and why if interop failed.
    pub pixel_path: &'a str,
    /// The GL driver's renderer string.
    pub gl_renderer: &'a str,
    /// The camera of the frame shown (the marks are projected with it).
    pub clip_from_world: Mat4,
    /// GPU times of the whole frame's stages (CUDA events and GL timestamp queries): map, passes,
    /// unmap, upload, texture, blit, panel; empty where they cannot be taken.
    pub gpu_stages: &'a [pcv_render::PassTime],
    /// The profile window's image, when one is drawn.
    pub profile: Option<profile_window::ProfileImage>,
    /// While a streamed cloud's strip is read from its files: how far (0..=1).
    pub profile_reading: Option<f64>,
}

/// Which panel section is open (one at a time keeps the panel small).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Files,
    View,
    Camera,
    Performance,
    Measure,
}

/// The imgui overlay of one window.
pub struct Overlay {
    gl: Rc<glow::Context>,
    renderer: Renderer,
    textures: SimpleTextureMap,
    platform: GlfwPlatform,
    imgui: imgui::Context,
    /// The open panel section, if any.
    pub section: Option<Section>,
    legend: panel::LegendCache,
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
        Ok(Overlay { gl, renderer, textures, platform, imgui, section: None, legend: Default::default() })
    }

    /// Mouse-look takes the mouse away from imgui (and gives it back).
    pub fn set_mouse_captured(&mut self, captured: bool) {
        self.platform.set_mouse_captured(self.imgui.io_mut(), captured);
    }

    /// Forwards a window event to imgui.
    pub fn handle_event(&mut self, event: &glfw::WindowEvent) {
        self.platform.handle_event(self.imgui.io_mut(), event);
    }

    /// Whether imgui wants the mouse (it is over a window of the overlay, or dragging a widget).
    pub fn wants_mouse(&self) -> bool {
        self.imgui.io().want_capture_mouse
    }

    /// Whether imgui wants the keyboard (a text widget is active).
    pub fn wants_keyboard(&self) -> bool {
        self.imgui.io().want_capture_keyboard
    }

    /// Builds and draws the overlay into the current (default) framebuffer; returns what its widgets
    /// asked for.
    pub fn draw(
        &mut self,
        window: &Window,
        dt_s: f32,
        state: &AppState,
        info: &FrameInfo<'_>,
    ) -> Result<Vec<Action>, OverlayError> {
        self.platform.prepare_frame(self.imgui.io_mut(), window.glfw_window(), dt_s);
        let mut actions = Vec::new();
        let ui = self.imgui.new_frame();
        // A dock space over the whole window whose middle lets the view through: windows dragged to an
        // edge (the profile, the panel) dock there, the rest of the view stays the points'; the scale
        // bar and the axes keep to that rest.
        let free = free_area(ui);
        marks::draw(ui, state, info);
        if state.ui.panel {
            scale::draw(ui, state, info, free);
            panel::build(ui, state, info, &mut self.section, &mut self.legend, &mut actions);
        }
        profile_window::build(ui, state, info, &mut actions);
        if state.ui.help {
            help::build(ui, &mut actions);
        }
        let draw_data = self.imgui.render();
        if draw_data.draw_lists_count() > 0 {
            self.renderer.render(&self.gl, &self.textures, draw_data).map_err(OverlayError::Render)?;
        }
        Ok(actions)
    }
}

/// Makes the dock space over the main viewport (its central node passes the view through) and returns
/// the central node's rectangle (x0, y0, x1, y1): the part of the window no docked window covers (the
/// whole window while nothing is docked).
fn free_area(ui: &imgui::Ui) -> [f32; 4] {
    let [w, h] = ui.io().display_size;
    // SAFETY: `ui` is this context's frame (between new_frame and render), where imgui's dock-space
    // calls may be made; the main viewport is imgui's own; the central node pointer, when not null,
    // points at a node imgui owns for this frame and is only read here.
    unsafe {
        let sys = imgui::sys::igGetMainViewport();
        let flags = imgui::sys::ImGuiDockNodeFlags_PassthruCentralNode as i32;
        let id = imgui::sys::igDockSpaceOverViewport(sys, flags, std::ptr::null());
        let node = imgui::sys::igDockBuilderGetCentralNode(id);
        if node.is_null() {
            return [0.0, 0.0, w, h];
        }
        let (p, s) = ((*node).Pos, (*node).Size);
        if s.x > 1.0 && s.y > 1.0 {
            [p.x, p.y, p.x + s.x, p.y + s.y]
        } else {
            [0.0, 0.0, w, h]
        }
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        // The renderer's buffers, program and font texture; the window (and its context) outlives the overlay.
        self.renderer.destroy(&self.gl);
    }
}
