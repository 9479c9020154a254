//! The interactive viewer: a window, a fly camera, a rasterizer and an overlay, frame after frame.
//!
//! How it works: [`run`] opens the window ([`display::window`](crate::display::window)), makes the
//! camera ([`FlyCamera::start_for`]: the cloud's start pose, or the given one) and, unless disabled, the overlay. Each
//! frame it
//! 1. polls window events: the overlay sees them first; Esc toggles mouse-look, mouse motion in
//!    mouse-look turns the camera, the wheel scales the speed, F frames the cloud, R resets, M cycles the render mode, C the color mode, F1 hides
//!    the overlay — the mouse and keyboard go to the camera only while imgui does not want them;
//! 2. flies the camera by the held keys (W/S/A/D, Q/E, Shift ×4) for the last frame's duration;
//! 3. takes the framebuffer size as the render size; while minimized (0×0) it only waits for events;
//!    on a size change it drops the old `Surface` (the CUDA registration first, then the GL objects)
//!    and makes a new one;
//! 4. renders: the CPU backend into a host buffer that is then copied into the pixel buffer; the CUDA
//!    backend straight into the pixel buffer, mapped for the duration of the render and unmapped before
//!    GL reads it. Where CUDA cannot register the GL buffer (the GL driver is not NVIDIA's: Mesa, a
//!    remote X server), the CUDA backend renders into host memory and takes the CPU backend's path; the
//!    overlay and [`ViewerSummary::interop_fallback`] say why;
//! 5. copies the pixel buffer to the window (PBO → texture → FBO blit), draws the overlay on top,
//!    takes the screenshot if this is the last frame, and swaps.
//!
//! Scripted runs stop after `frames` frames; the screenshot is the last frame as shown (overlay
//! included), read back before the swap. When the window is closed with a screenshot pending, one more
//! frame is rendered for it (and not shown). The summary's mean frame time is wall-clock time per frame
//! (event handling, render, blit, overlay and swap) over every frame but the first, which pays for
//! warm-up.
use crate::camera::{FlyCamera, MoveInput, Pose};
use crate::cloud::PointCloud;
use crate::display::blit::{read_default_framebuffer, BlitError, PixelSurface};
use crate::display::interop::GlBufferRegistration;
use crate::display::overlay::{FrameTimes, Overlay, OverlayError, OverlayStats};
use crate::display::window::{Window, WindowError, WindowOptions};
use crate::image_io::ImageError;
use crate::render::{FrameParams, FrameStats, Rasterizer, RenderError, RenderMode, Target, CLEAR_COLOR};
use glfw::{Action, Key, WindowEvent};
use std::rc::Rc;
use std::time::Instant;

/// How the viewer runs.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewerOptions {
    /// Window size in screen coordinates (pixels on an unscaled display).
    pub size_px: (u32, u32),
    /// Wait for vertical blank on swap.
    pub vsync: bool,
    /// Stop after this many frames (`None`: run until the window closes; `Some(0)`: open the window
    /// and stop at once).
    pub frames: Option<u64>,
    /// Save the last frame, as shown, to this PNG.
    pub screenshot: Option<std::path::PathBuf>,
    /// Show the imgui overlay (F1 toggles it when on; `false` leaves it out entirely).
    pub overlay: bool,
    /// Start here instead of the camera's default pose (R returns here).
    pub start_pose: Option<Pose>,
    /// The render mode to start with (M cycles through them).
    pub mode: RenderMode,
    /// Point size, eye-dome lighting and background.
    pub look: crate::render::look::Look,
    /// The cloud's point spacing ([`crate::cloud::spacing::estimate`]), for adaptive point sizes.
    pub spacing_m: f32,
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewerSummary {
    /// Frames shown.
    pub frames: u64,
    /// Mean wall-clock time per frame, without the first frame (with one frame: that frame's time; with
    /// none: 0).
    pub mean_frame_ms: f64,
    /// On the CUDA backend: why frames went through host memory instead of CUDA-GL interop (`None`:
    /// interop worked, or the backend is the CPU).
    pub interop_fallback: Option<String>,
}

/// Errors from the viewer.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    #[error(transparent)]
    Window(#[from] WindowError),
    #[error("display: {0}")]
    Blit(#[from] BlitError),
    #[error("overlay: {0}")]
    Overlay(#[from] OverlayError),
    #[error("rendering failed: {0}")]
    Render(#[from] RenderError),
    #[error("sharing the window's pixel buffer with CUDA failed: {0}")]
    Interop(RenderError),
    #[error("CUDA mapped {got_bytes} bytes of the window's pixel buffer, {needed_bytes} needed")]
    MappedSize { got_bytes: usize, needed_bytes: usize },
    #[error("screenshot: {0}")]
    Screenshot(#[from] ImageError),
    #[error("no screenshot was taken: {reason}")]
    NoScreenshot { reason: &'static str },
    #[error(transparent)]
    Color(#[from] crate::cloud::attributes::ColorError),
}

/// Longest step the camera takes in one frame, so that a stall does not fling it away.
const MAX_DT_S: f32 = 0.1;
/// How long a minimized window sleeps between checks.
const MINIMIZED_WAIT_S: f64 = 0.1;

/// Checks that a display is reachable without opening a window: call it before loading a large cloud
/// so that `pcv` without a display fails at once (with the same advice as [`run`]).
pub fn check_display() -> Result<(), ViewerError> {
    crate::display::window::check_display().map_err(ViewerError::from)
}

/// Runs the viewer on `cloud`, already uploaded to `rasterizer`, until the window closes or
/// `opts.frames` frames are shown. `backend_note` (e.g. why auto-selection fell back to the CPU) is
/// shown in the overlay.
pub fn run(
    cloud: &PointCloud,
    rasterizer: &mut dyn Rasterizer,
    opts: &ViewerOptions,
    backend_note: Option<String>,
) -> Result<ViewerSummary, ViewerError> {
    // Declaration order is drop order reversed: the surface (CUDA registration, GL objects) and the
    // overlay go before the window and its GL context.
    let mut window = Window::open(&WindowOptions {
        size_px: opts.size_px,
        title: format!("pcv — {}", cloud.label),
        vsync: opts.vsync,
    })?;
    let mut overlay = if opts.overlay { Some(Overlay::new(&window)?) } else { None };
    let mut surface: Option<Surface> = None;

    let mut camera = FlyCamera::start_for(cloud, opts.start_pose);
    let backend_description = rasterizer.description();
    // Why CUDA-GL interop is not used; once it failed, later sizes do not try again.
    let mut interop_fallback: Option<String> = None;
    let mut pixel_path = String::new();
    let mut look_from: Option<(f64, f64)> = None;
    let mut mode = opts.mode;
    // C cycles the color mode: the cloud is recolored (a copy) and uploaded again. A lazy built-in
    // scene is made by the backend itself and keeps its colors.
    let color_modes = if cloud.is_lazy_scene() { Vec::new() } else { crate::cloud::attributes::available_modes(cloud) };
    let mut color_mode = crate::cloud::attributes::current_mode(cloud);
    let mut next_color = false;
    let mut frame_times = FrameTimes::default();
    let mut frames_shown: u64 = 0;
    let mut first_frame_ms = 0.0;
    let mut sum_frame_ms_after_first = 0.0;
    let mut frame_start = Instant::now();
    let mut dt_s = 0.0f32;

    if opts.frames == Some(0) {
        return match opts.screenshot {
            Some(_) => Err(ViewerError::NoScreenshot { reason: "zero frames were asked for" }),
            None => Ok(ViewerSummary { frames: 0, mean_frame_ms: 0.0, interop_fallback: None }),
        };
    }

    loop {
        for event in window.poll_events() {
            handle_event(&event, &mut window, &mut camera, overlay.as_mut(), &mut look_from, &mut mode, &mut next_color);
        }
        if std::mem::take(&mut next_color) && color_modes.len() > 1 {
            let i = color_modes.iter().position(|&m| m == color_mode).unwrap_or(0);
            color_mode = color_modes[(i + 1) % color_modes.len()];
            // The rasterizer keeps what it needs of the recolored copy; positions and bounds are unchanged.
            rasterizer.upload(&crate::cloud::attributes::recolored(cloud, color_mode)?)?;
        }
        let closing = window.should_close();
        if closing && opts.screenshot.is_none() {
            break;
        }
        let last = closing || opts.frames.is_some_and(|n| frames_shown + 1 >= n);

        if !overlay.as_ref().is_some_and(Overlay::wants_keyboard) {
            camera.fly(move_input(&window), dt_s);
        }

        let (width_px, height_px) = window.framebuffer_size_px();
        if width_px == 0 || height_px == 0 {
            if closing {
                return Err(ViewerError::NoScreenshot { reason: "the window was closed while minimized" });
            }
            window.wait_events_timeout(MINIMIZED_WAIT_S);
            frame_start = Instant::now();
            dt_s = 0.0;
            continue;
        }
        if surface.as_ref().map(|s| s.pixels.size_px()) != Some((width_px, height_px)) {
            // The old registration and GL objects go before the new ones are made.
            drop(surface.take());
            let allow_interop = interop_fallback.is_none();
            let (made, interop_error) = Surface::new(window.gl(), width_px, height_px, rasterizer, allow_interop)?;
            if let Some(e) = interop_error {
                interop_fallback = Some(format!("CUDA could not register the window's pixel buffer ({e})"));
            }
            pixel_path = match (&made.registration, &interop_fallback) {
                (Some(_), _) => "CUDA writes the GL pixel buffer (interop)".to_string(),
                (None, Some(why)) => format!("host memory -> GL pixel buffer: {why}"),
                (None, None) => "host memory -> GL pixel buffer".to_string(),
            };
            surface = Some(made);
        }
        let Some(current) = surface.as_mut() else { continue };

        let frame = FrameParams::new(camera.clip_from_world(width_px, height_px), width_px, height_px)
            .with_mode(mode)
            .with_look(opts.look)
            .with_depth_range(camera.depth.near, camera.depth.far)
            .with_spacing(opts.spacing_m);
        let stats = current.render(rasterizer, &frame)?;
        current.pixels.blit_to_default_framebuffer()?;

        if let Some(ov) = overlay.as_mut() {
            let stats = overlay_stats(
                &frame_times,
                &stats,
                rasterizer.num_points(),
                (width_px, height_px),
                rasterizer.name(),
                &backend_description,
                backend_note.as_deref(),
                &pixel_path,
                &window,
                cloud,
                &camera,
                mode,
                color_mode,
            );
            ov.draw(&window, dt_s, &stats)?;
        }

        if last {
            if let Some(path) = &opts.screenshot {
                read_default_framebuffer(window.gl(), width_px, height_px)?.write_png(path)?;
            }
        }
        if closing {
            break;
        }
        window.swap_buffers();

        let now = Instant::now();
        let frame_ms = now.duration_since(frame_start).as_secs_f64() * 1e3;
        frame_start = now;
        dt_s = ((frame_ms * 1e-3) as f32).min(MAX_DT_S);
        frame_times.push(frame_ms);
        if frames_shown == 0 {
            first_frame_ms = frame_ms;
        } else {
            sum_frame_ms_after_first += frame_ms;
        }
        frames_shown += 1;
        if last {
            break;
        }
    }

    let mean_frame_ms = match frames_shown {
        0 => 0.0,
        1 => first_frame_ms,
        n => sum_frame_ms_after_first / (n - 1) as f64,
    };
    Ok(ViewerSummary { frames: frames_shown, mean_frame_ms, interop_fallback })
}

/// The pixel surface of the current size and, on the CUDA backend, the registration of its pixel
/// buffer. Fields drop in declaration order: the registration is released before the buffer it names
/// is deleted.
struct Surface {
    registration: Option<GlBufferRegistration>,
    pixels: PixelSurface,
    /// The CPU backend's frame (empty on the CUDA backend).
    host_px: Vec<u32>,
}

impl Surface {
    /// Makes the GL objects and, on the CUDA backend when `allow_interop`, registers the pixel buffer.
    /// A registration that fails is returned as the second value: the surface then takes the host path.
    fn new(
        gl: &Rc<glow::Context>,
        width_px: u32,
        height_px: u32,
        rasterizer: &mut dyn Rasterizer,
        allow_interop: bool,
    ) -> Result<(Surface, Option<RenderError>), ViewerError> {
        let pixels = PixelSurface::new(gl.clone(), width_px, height_px)?;
        let (registration, interop_error) = match rasterizer.as_cuda() {
            Some(cuda) if allow_interop => match GlBufferRegistration::register(cuda, pixels.pbo_name()) {
                Ok(r) => (Some(r), None),
                Err(e) => (None, Some(e)),
            },
            _ => (None, None),
        };
        let host_px = if registration.is_some() { Vec::new() } else { vec![CLEAR_COLOR; pixels.num_pixels()] };
        Ok((Surface { registration, pixels, host_px }, interop_error))
    }

    /// Renders `frame` into the pixel buffer.
    fn render(&mut self, rasterizer: &mut dyn Rasterizer, frame: &FrameParams) -> Result<FrameStats, ViewerError> {
        match &mut self.registration {
            Some(registration) => {
                let mapped = registration.map().map_err(ViewerError::Interop)?;
                let needed_bytes = frame.num_pixels() * 4;
                if mapped.size_bytes() < needed_bytes {
                    return Err(ViewerError::MappedSize { got_bytes: mapped.size_bytes(), needed_bytes });
                }
                let target = Target::Device { ptr: mapped.device_ptr(), len_px: frame.num_pixels() };
                let stats = rasterizer.render(frame, target)?;
                // Unmap before GL reads the buffer.
                drop(mapped);
                Ok(stats)
            }
            None => {
                let stats = rasterizer.render(frame, Target::Host(&mut self.host_px))?;
                self.pixels.upload_host(&self.host_px)?;
                Ok(stats)
            }
        }
    }
}

/// One window event: the overlay sees it first, then the camera gets what imgui does not want.
fn handle_event(
    event: &WindowEvent,
    window: &mut Window,
    camera: &mut FlyCamera,
    mut overlay: Option<&mut Overlay>,
    look_from: &mut Option<(f64, f64)>,
    mode: &mut RenderMode,
    next_color: &mut bool,
) {
    if let Some(ov) = overlay.as_deref_mut() {
        if ov.visible() {
            ov.handle_event(event);
        }
    }
    let wants_mouse = overlay.as_deref().is_some_and(Overlay::wants_mouse);
    let wants_keyboard = overlay.as_deref().is_some_and(Overlay::wants_keyboard);
    match *event {
        WindowEvent::Key(Key::Escape, _, Action::Press, _) if window.mouselook() || !wants_keyboard => {
            let on = !window.mouselook();
            window.set_mouselook(on);
            if let Some(ov) = overlay.as_deref_mut() {
                ov.set_mouse_captured(on);
            }
            // GLFW warps the cursor to the window's center when it disables it, and the first position it
            // reports afterwards may be that warp: the first event in mouse-look only sets the reference.
            *look_from = None;
        }
        WindowEvent::Key(Key::F1, _, Action::Press, _) => {
            if let Some(ov) = overlay {
                ov.toggle_visible();
            }
        }
        WindowEvent::Key(Key::F, _, Action::Press, _) if !wants_keyboard => camera.frame_all(),
        WindowEvent::Key(Key::R, _, Action::Press, _) if !wants_keyboard => camera.reset(),
        WindowEvent::Key(Key::M, _, Action::Press, _) if !wants_keyboard => *mode = mode.next(),
        WindowEvent::Key(Key::C, _, Action::Press, _) if !wants_keyboard => *next_color = true,
        WindowEvent::CursorPos(x, y) if window.mouselook() => {
            if let Some((x0, y0)) = *look_from {
                let (_, height) = window.glfw_window().get_size();
                camera.look((x - x0) as f32, (y - y0) as f32, height.max(1) as f32);
            }
            *look_from = Some((x, y));
        }
        // Focus changes re-center the disabled cursor too.
        WindowEvent::Focus(_) => *look_from = None,
        WindowEvent::Scroll(_, dy) if window.mouselook() || !wants_mouse => camera.scale_speed(dy as f32),
        _ => {}
    }
}

/// The held movement keys.
fn move_input(window: &Window) -> MoveInput {
    let axis = |positive: Key, negative: Key| {
        window.key_down(positive) as i32 as f32 - window.key_down(negative) as i32 as f32
    };
    MoveInput {
        forward: axis(Key::W, Key::S),
        right: axis(Key::D, Key::A),
        up: axis(Key::E, Key::Q),
        fast: window.key_down(Key::LeftShift) || window.key_down(Key::RightShift),
    }
}

#[expect(clippy::too_many_arguments, reason = "gathers the overlay's inputs from the loop's locals in one place")]
fn overlay_stats<'a>(
    frame_times: &'a FrameTimes,
    stats: &'a FrameStats,
    points: u64,
    size_px: (u32, u32),
    backend_name: &'a str,
    backend_description: &'a str,
    backend_note: Option<&'a str>,
    pixel_path: &'a str,
    window: &'a Window,
    cloud: &PointCloud,
    camera: &FlyCamera,
    mode: RenderMode,
    color_mode: crate::cloud::attributes::ColorMode,
) -> OverlayStats<'a> {
    OverlayStats {
        frame_times,
        passes: &stats.passes,
        points,
        size_px,
        backend_name,
        backend_description,
        backend_note,
        pixel_path,
        gl_renderer: window.gl_renderer(),
        eye_source: cloud.to_source(camera.pose.eye),
        yaw_deg: camera.pose.yaw_rad.to_degrees(),
        pitch_deg: camera.pose.pitch_rad.to_degrees(),
        speed_m_per_s: camera.speed_m_per_s,
        mouselook: window.mouselook(),
        mode: mode.name(),
        color_mode: color_mode.name(),
    }
}
