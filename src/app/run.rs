//! The loop: input → actions → state → frame, and nothing when nothing changes.
//!
//! How it works: each turn of [`run`]
//! 1. waits for input when nothing is due (no change to draw, no key held, no flight playing, no load
//!    running, no script, not `--continuous` or `--frames`): `glfwWaitEventsTimeout`, so an idle window
//!    takes no CPU and no GPU; otherwise it only polls;
//! 2. gives every window event to the panel first, then to the keymap, which turns it into actions
//!    (an input script's events for this frame join here, the same way);
//! 3. carries the actions out ([`update::apply`]), then moves what moves by itself for the time since
//!    the last turn ([`update::tick`]: held keys, the flight, the load), and does the effects that need
//!    the window, the disk or the GPU: mouse-look, loading, printing the pose, uploading again;
//! 4. if anything must be seen, draws: renders the points when the camera or the points changed (or
//!    the size), else keeps the last frame in the pixel buffer; blits it; takes a screenshot of the
//!    points alone if one was asked for without the panel; draws the panel (whose widgets return
//!    actions for the next turn), the marks and the help; takes the screenshot with the panel, or the
//!    `--screenshot` of the last frame; writes the `--trace` line; swaps.
//!
//! While minimized (0×0 framebuffer) it only waits for events. When the window is closed with a
//! `--screenshot` pending, one more frame is rendered for it (and not shown). The summary's mean frame
//! time is wall-clock time per frame over every frame but the first, which pays for warm-up.
use super::capture::{pose_args, unique_path};
use super::frame::{pixel_path, Surface};
use super::layers::Layers;
use super::pick::{distance, RasterPicker};
use super::state::AppState;
use super::update::{self, Effects, UpdateCtx};
use crate::camera::{ControllerKind, Navigator};
use crate::cloud::PointCloud;
use crate::display::blit::read_default_framebuffer;
use crate::display::gl_timer::GlStageTimer;
use crate::display::window::{Window, WindowOptions};
use crate::input::{InputEvent, Keymap, KeymapCtx};
use crate::lod::LodScene;
use crate::render::{FrameStats, PassTime, Rasterizer, RenderError, RenderMode};
use crate::ui::{FrameInfo, FrameTimes, Overlay};
use crate::viewer::{ViewerError, ViewerOptions, ViewerSummary};
use glam::Vec2;
use glfw::WindowEvent;
use std::io::Write;
use std::time::{Instant, SystemTime};

/// Longest step the camera takes in one frame, so that a stall does not fling it away.
const MAX_DT_S: f32 = 0.1;
/// Longest wait for input (the loop also wakes for fading messages and loads).
const IDLE_WAIT_S: f64 = 0.5;
/// How often a running load is looked at.
const LOADING_WAIT_S: f64 = 0.05;
/// How long a minimized window sleeps between checks.
const MINIMIZED_WAIT_S: f64 = 0.1;
/// How long the loop waits for input while a level-of-detail scene loads nodes and nothing else moves.
const LOD_WAIT_S: f64 = 0.005;

/// Runs the viewer (see [`crate::viewer::run`]).
pub fn run(
    cloud: &PointCloud,
    rasterizer: &mut dyn Rasterizer,
    opts: ViewerOptions,
    backend_note: Option<String>,
) -> Result<ViewerSummary, ViewerError> {
    run_scene(cloud, rasterizer, opts, backend_note, None)
}

/// Runs the viewer, on a level-of-detail scene when `lod` is given (attached to `rasterizer`; `cloud`
/// is then its [`LodScene::placeholder_cloud`]): each turn updates its selection and uploads before
/// drawing, draws again when its batch table changed, and keeps turning while it refines.
pub fn run_scene(
    cloud: &PointCloud,
    rasterizer: &mut dyn Rasterizer,
    opts: ViewerOptions,
    backend_note: Option<String>,
    mut lod: Option<&mut LodScene>,
) -> Result<ViewerSummary, ViewerError> {
    if opts.frames == Some(0) {
        return match opts.screenshot {
            Some(_) => Err(ViewerError::NoScreenshot { reason: "zero frames were asked for" }),
            None => Ok(ViewerSummary {
                frames: 0,
                mean_frame_ms: 0.0,
                interop_fallback: None,
                gpu_stages_ms: Vec::new(),
            }),
        };
    }
    // Declaration order is drop order reversed: the surface (CUDA registration, GL objects) and the
    // overlay go before the window and its GL context.
    let mut window = Window::open(&WindowOptions {
        size_px: opts.size_px,
        title: format!("pcv - {}", cloud.label),
        vsync: opts.vsync,
    })?;
    let mut overlay = if opts.overlay { Some(Overlay::new(&window)?) } else { None };
    let mut surface: Option<Surface> = None;
    // Points sent from another thread (the Python module): this loop wakes for them (src/app/feed.rs).
    let feed = opts.feed.clone();
    if let Some(f) = &feed {
        f.attach(window.thread_safe_glfw());
    }

    let controller = opts.controller.unwrap_or(if cloud.scene.is_some() {
        ControllerKind::Fly
    } else {
        ControllerKind::Orbit
    });
    let mut layers = Layers::new(cloud.clone());
    // The caller uploaded `cloud`: this only sets the index map.
    let _ = layers.uploaded();
    let mut state = AppState::new(
        Navigator::new(opts.camera, controller),
        layers,
        opts.mode,
        opts.look,
        opts.spacing_m,
        opts.up_reason.clone(),
        window.framebuffer_size_px(),
    );
    if let Some(path) = opts.path.clone() {
        if let Some(up) = path.up {
            state.nav.camera.up = up;
        }
        state.path = Some(update::playback(path, &state.layers));
    }
    let mut script = opts.script.clone();
    let mut trace = match &opts.trace {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|source| ViewerError::Trace { path: p.clone(), source })?,
        )),
        None => None,
    };

    let backend_description = rasterizer.description();
    let mut interop_fallback: Option<String> = None;
    let mut pixels_how = String::new();
    let mut keymap = Keymap::default();
    let mut frame_times = FrameTimes::default();
    let mut stats = FrameStats::default();
    // GPU times of the whole frame: CUDA events around map and unmap (the surface), the passes' own
    // events, GL timestamps around upload, texture copy, blit and panel.
    let mut gl_timer = GlStageTimer::new(window.gl().clone());
    let mut gpu_stages: Vec<PassTime> = Vec::new();
    let mut stage_samples = StageSamples::default();
    let mut frames_shown: u64 = 0;
    let mut first_frame_ms = 0.0;
    let mut sum_frame_ms_after_first = 0.0;
    let mut last_tick = Instant::now();
    let mut last_shown: Option<Instant> = None;
    let mut last_rendered: Option<Instant> = None;
    // What the next draw must do; the first frame renders.
    let mut need = Effects { redraw_scene: true, ..Default::default() };
    // Actions the panel's widgets asked for, carried out next turn.
    let mut ui_actions = Vec::new();
    // Whether the pixel buffer holds a frame of the current size (picking reads it).
    let mut rendered = false;
    // Panel frames still to draw after input: imgui takes a press and its release in separate frames
    // (its input queue trickles), so a click needs a frame after the one that saw it.
    let mut ui_settle: u8 = 0;
    // Whether the loop waited for input since the last frame shown (then there is no frame rate).
    let mut waited = false;

    loop {
        // 1. Wait or poll.
        let scripted = opts.frames.is_some() || script.as_ref().is_some_and(|s| s.pending());
        let continuous = opts.continuous || scripted;
        let held = keymap.held();
        let refining = lod.as_deref().is_some_and(|l| !l.status().complete || l.status().loading > 0);
        let busy = continuous
            || need.redraw()
            || !ui_actions.is_empty()
            || ui_settle > 0
            || state.animating()
            || held.is_moving()
            || feed.as_ref().is_some_and(|f| f.pending())
            || refining;
        if !busy {
            let wait = match state.messages.next_expiry() {
                Some(t) => t.saturating_duration_since(Instant::now()).as_secs_f64().min(IDLE_WAIT_S),
                None => IDLE_WAIT_S,
            };
            window.wait_events_timeout(wait.max(0.001));
            // Time spent waiting is not movement.
            last_tick = Instant::now();
            waited = true;
        } else if state.loader.is_some() && !need.redraw() && !continuous && !held.is_moving() {
            window.wait_events_timeout(LOADING_WAIT_S);
        } else if refining && !need.redraw() && !continuous && !held.is_moving() && !state.animating() {
            window.wait_events_timeout(LOD_WAIT_S);
        }
        let turn_start = Instant::now();
        let events = window.poll_events();

        // 2. Events → actions.
        let (fb_w, fb_h) = window.framebuffer_size_px();
        let (win_w, win_h) = window.window_size();
        let px_per_coord = Vec2::new(fb_w as f32 / win_w.max(1) as f32, fb_h as f32 / win_h.max(1) as f32);
        let px_per_coord =
            if px_per_coord.is_finite() && px_per_coord.x > 0.0 { px_per_coord } else { Vec2::ONE };
        let mut actions = std::mem::take(&mut ui_actions);
        let mut scripted_events = script.as_mut().map(|s| s.due(frames_shown)).unwrap_or_default();
        if ui_settle > 0 {
            ui_settle -= 1;
            need.redraw_ui = true;
        }
        for event in &events {
            if let Some(ov) = overlay.as_mut() {
                ov.handle_event(event);
                need.redraw_ui = true;
                ui_settle = 2;
            }
            match event {
                WindowEvent::FramebufferSize(..) => need.redraw_scene = true,
                WindowEvent::Refresh | WindowEvent::Focus(_) | WindowEvent::Iconify(_) => {
                    need.redraw_ui = true
                }
                _ => {}
            }
        }
        let glfw_events = events.iter().filter_map(InputEvent::from_glfw);
        for ev in glfw_events.collect::<Vec<_>>().into_iter().chain(scripted_events.drain(..)) {
            let kctx = KeymapCtx {
                mouselook: state.mouselook,
                ui_mouse: overlay.as_ref().is_some_and(Overlay::wants_mouse),
                ui_keyboard: overlay.as_ref().is_some_and(Overlay::wants_keyboard),
                px_per_coord,
                time_s: window.time_s(),
            };
            actions.extend(keymap.handle(&ev, &kctx));
        }

        // 3. Actions and time → state; effects.
        state.size_px = (fb_w, fb_h);
        let picker_valid = rendered && surface.as_ref().map(|s| s.pixels.size_px()) == Some((fb_w, fb_h));
        let now = Instant::now();
        let dt_s = (now.duration_since(last_tick).as_secs_f32()).min(MAX_DT_S);
        last_tick = now;
        let ui_keyboard = overlay.as_ref().is_some_and(Overlay::wants_keyboard);
        let held = if ui_keyboard { Default::default() } else { keymap.held() };
        let pick_error = {
            let mut picker = RasterPicker {
                rasterizer: &mut *rasterizer,
                size_px: (fb_w, fb_h),
                valid: picker_valid,
                error: None,
            };
            let mut ctx = UpdateCtx { picker: &mut picker };
            for a in actions {
                need.merge(update::apply(&mut state, a, &mut ctx));
            }
            need.merge(update::tick(&mut state, &held, dt_s, &mut ctx));
            picker.error
        };
        if let Some(f) = &feed {
            need.merge(super::feed::poll(f, &mut state, rasterizer));
        }
        if let Some(e) = pick_error {
            state.messages.error(format!("picking failed: {e}"));
        }
        if let Some(on) = need.mouselook.take() {
            window.set_mouselook(on);
            if let Some(ov) = overlay.as_mut() {
                ov.set_mouse_captured(on);
            }
        }
        if let Some((paths, replace)) = need.open.take() {
            update::start_loading(&mut state, paths, replace);
        }
        if std::mem::take(&mut need.print_pose) {
            let args = pose_args(&state.nav.camera, state.layers.cloud.origin);
            println!("pcv: camera {args}");
            window.set_clipboard(&args);
            state.messages.info("pose printed and copied to the clipboard");
        }
        if std::mem::take(&mut need.save_bookmarks) {
            save_bookmarks(&mut state);
        }
        let reupload = std::mem::take(&mut need.reupload);
        if reupload && lod.is_some() {
            state.messages.info("level of detail: the streamed nodes keep their colours");
        } else if reupload {
            match rasterizer.upload(&state.layers.uploaded()) {
                Ok(()) => window.set_title(&format!("pcv - {}", state.layers.cloud.label)),
                Err(e) => state.messages.error(format!("uploading the points failed: {e}")),
            }
            need.redraw_scene = true;
        }
        if std::mem::take(&mut need.quit) {
            window.set_should_close(true);
        }

        // Level of detail: this frame's selection, loads and uploads; a new batch table is drawn.
        if let Some(l) = lod.as_deref_mut().filter(|_| fb_w > 0 && fb_h > 0) {
            let frame = crate::render::FrameParams::of_camera(&state.nav.camera, fb_w, fb_h)
                .with_mode(LodScene::mode_for(state.mode));
            match l.update(rasterizer, &frame, state.nav.camera.pose.eye) {
                Ok(st) => {
                    if st.changed {
                        need.redraw_scene = true;
                    }
                    if st.spacing_m > 0.0 {
                        state.spacing_m = st.spacing_m;
                    }
                }
                Err(e) => state.messages.error(format!("level of detail: {e}")),
            }
            if let Some(e) = l.errors().last().filter(|_| l.status().changed) {
                state.messages.error(format!("level of detail: {e}"));
            }
        }
        let closing = window.should_close();
        if closing && opts.screenshot.is_none() {
            break;
        }
        let last = closing || opts.frames.is_some_and(|n| frames_shown + 1 >= n);

        // 4. Draw, if anything must be seen.
        if fb_w == 0 || fb_h == 0 {
            if closing {
                return Err(ViewerError::NoScreenshot { reason: "the window was closed while minimized" });
            }
            window.wait_events_timeout(MINIMIZED_WAIT_S);
            last_tick = Instant::now();
            continue;
        }
        if !(need.redraw() || continuous || last || need.screenshot.is_some()) {
            continue;
        }
        if surface.as_ref().map(|s| s.pixels.size_px()) != Some((fb_w, fb_h)) {
            // The old registration and GL objects go before the new ones are made.
            drop(surface.take());
            let allow_interop = interop_fallback.is_none();
            let (made, interop_error) = Surface::new(window.gl(), fb_w, fb_h, rasterizer, allow_interop)?;
            if let Some(e) = interop_error {
                interop_fallback = Some(format!("CUDA could not register the window's pixel buffer ({e})"));
            }
            pixels_how = pixel_path(&made, interop_fallback.as_deref());
            surface = Some(made);
            need.redraw_scene = true;
        }
        let Some(current) = surface.as_mut() else { continue };
        let clip_from_world = state.nav.camera.clip_from_world(fb_w, fb_h);
        let render_points = need.redraw_scene || continuous || last || !rendered;
        // The GL stages' first timestamp: on the host path before the frame is uploaded into the pixel
        // buffer; with interop after CUDA's unmap, so that the wait GL makes for CUDA's work (the unmap's
        // synchronization) falls before it, not into the texture copy.
        if !current.uses_interop() {
            gl_timer.begin_frame();
        }
        if render_points {
            let mode = if lod.is_some() { LodScene::mode_for(state.mode) } else { state.mode };
            let frame = crate::render::FrameParams::of_camera(&state.nav.camera, fb_w, fb_h)
                .with_mode(mode)
                .with_look(state.look)
                .with_spacing(state.spacing_m);
            stats = match current.render(rasterizer, &frame) {
                // A mode this backend cannot draw (the reference on several GPUs, or on a scene prepared a
                // chunk at a time): say why and go back to the default mode instead of closing the window.
                Err(ViewerError::Render(e @ RenderError::ModeUnavailable { .. }))
                    if state.mode != RenderMode::Culled =>
                {
                    state.messages.error(format!("{e}; showing culled"));
                    state.mode = RenderMode::Culled;
                    need.redraw_scene = true;
                    continue;
                }
                r => r?,
            };
            rendered = true;
            if let Some(f) = &feed {
                f.rendered();
            }
            if !current.uses_interop() {
                gl_timer.mark("upload");
            }
        }
        if current.uses_interop() {
            gl_timer.begin_frame();
        }
        current.pixels.copy_to_texture()?;
        gl_timer.mark("texture");
        current.pixels.blit()?;
        gl_timer.mark("blit");
        let screenshot = need.screenshot.take();
        if screenshot == Some(false) || (screenshot.is_some() && overlay.is_none()) {
            save_screenshot(&mut state, &window, fb_w, fb_h)?;
        }
        if let Some(ov) = overlay.as_mut() {
            let info = FrameInfo {
                frame_times: &frame_times,
                stats: &stats,
                points: rasterizer.num_points(),
                size_px: (fb_w, fb_h),
                backend_name: rasterizer.name(),
                backend_description: &backend_description,
                backend_note: backend_note.as_deref(),
                pixel_path: &pixels_how,
                gl_renderer: window.gl_renderer(),
                clip_from_world,
                gpu_stages: &gpu_stages,
            };
            let dt = last_shown.map_or(1.0 / 60.0, |t| t.elapsed().as_secs_f32().min(MAX_DT_S));
            ui_actions = ov.draw(&window, dt, &state, &info)?;
            gl_timer.mark("panel");
        }
        gl_timer.end_frame();
        if render_points {
            // This frame's CUDA stages and passes with the newest GL stages that have arrived (a frame
            // or two old: the panel shows them next frame).
            gpu_stages = whole_frame_stages(&current.cuda_stages, &stats, gl_timer.latest());
            if frames_shown > 0 {
                stage_samples.push(&gpu_stages);
            }
        }
        if screenshot == Some(true) && overlay.is_some() {
            save_screenshot(&mut state, &window, fb_w, fb_h)?;
        }
        if last {
            if let Some(path) = &opts.screenshot {
                read_default_framebuffer(window.gl(), fb_w, fb_h)?.write_png(path)?;
            }
        }
        if let Some(t) = trace.as_mut() {
            let mut line = trace_line(&state, frames_shown, render_points, rasterizer.num_points());
            if let Some(l) = lod.as_deref() {
                let st = l.status();
                line["lod"] = serde_json::json!({
                    "complete": st.complete, "selected_nodes": st.selected_nodes, "drawn_nodes": st.drawn_nodes,
                    "drawn_points": st.drawn_points, "resident_points": st.resident_points, "loading": st.loading,
                    "budget_hit": st.budget_hit, "spacing_m": st.spacing_m, "evictions": st.evictions,
                });
            }
            writeln!(t, "{line}").and_then(|_| t.flush()).map_err(|source| ViewerError::Trace {
                path: opts.trace.clone().unwrap_or_default(),
                source,
            })?;
        }
        need = Effects::default();
        if closing {
            break;
        }
        window.swap_buffers();

        let now = Instant::now();
        let frame_ms = now.duration_since(turn_start).as_secs_f64() * 1e3;
        // The panel's figures are those of frames that rendered the points (a redraw of the panel
        // alone is not a frame rate).
        if render_points {
            frame_times.push(frame_ms);
            let interval_ms = last_rendered.map(|t| now.duration_since(t).as_secs_f64() * 1e3);
            frame_times.push_interval(if std::mem::take(&mut waited) { None } else { interval_ms });
            last_rendered = Some(now);
        }
        last_shown = Some(now);
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
    Ok(ViewerSummary {
        frames: frames_shown,
        mean_frame_ms,
        interop_fallback,
        gpu_stages_ms: stage_samples.medians(),
    })
}

/// Saves what the back buffer holds now as `./pcv-<time>.png` and says where.
fn save_screenshot(state: &mut AppState, window: &Window, w: u32, h: u32) -> Result<(), ViewerError> {
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let path = unique_path(&dir, "pcv", "png", SystemTime::now());
    match read_default_framebuffer(window.gl(), w, h)?.write_png(&path) {
        Ok(()) => state.messages.info(format!("screenshot {}", path.display())),
        Err(e) => state.messages.error(format!("screenshot not saved: {e}")),
    }
    Ok(())
}

/// Writes the bookmarks as `./pcv-path-<time>.json` and says where.
fn save_bookmarks(state: &mut AppState) {
    let Some(path) = update::bookmarks_path(state) else {
        state.messages.info("no bookmarks to save: Ctrl+1..9 stores the view");
        return;
    };
    let dir = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let file = unique_path(&dir, "pcv-path", "json", SystemTime::now());
    match std::fs::write(&file, path.to_json()) {
        Ok(()) => state.messages.info(format!(
            "camera path {} ({} keyframes): pcv --path or pcv record --path",
            file.display(),
            path.keyframes.len()
        )),
        Err(e) => state.messages.error(format!("{}: {e}", file.display())),
    }
}

/// One `--trace` line: what a test needs to know about the frame just drawn.
fn trace_line(s: &AppState, frame: u64, rendered: bool, points: u64) -> serde_json::Value {
    let point = |p: &super::pick::PickedPoint| {
        serde_json::json!({
            "file": [p.file.x, p.file.y, p.file.z],
            "local": [p.local.x, p.local.y, p.local.z],
            "index": p.index,
            "source": p.source.as_ref().map(|s| s.0.clone()),
            "intensity": p.intensity,
            "classification": p.classification,
            "rgb": p.rgb,
            "snapped": p.snapped,
        })
    };
    let measure = match s.measure.points.as_slice() {
        [a, b] => {
            let d = distance(a, b, s.nav.camera.up.vector());
            serde_json::json!({"total_m": d.total_m, "horizontal_m": d.horizontal_m, "vertical_m": d.vertical_m})
        }
        _ => serde_json::Value::Null,
    };
    serde_json::json!({
        "frame": frame,
        "rendered": rendered,
        "camera": pose_args(&s.nav.camera, s.layers.cloud.origin),
        "eye_local": s.nav.camera.pose.eye.to_array(),
        "yaw_deg": s.nav.camera.pose.yaw_rad.to_degrees(),
        "pitch_deg": s.nav.camera.pose.pitch_rad.to_degrees(),
        "up": s.nav.camera.up.name(),
        "controller": s.nav.active.name(),
        "mouselook": s.mouselook,
        "pivot": s.nav.pivot().map(|p| p.to_array()),
        "picked": s.picked.as_ref().map(point),
        "measure": measure,
        "layers": s.layers.layers.iter().map(|l| serde_json::json!({"label": l.label, "points": l.points.end - l.points.start, "visible": l.visible})).collect::<Vec<_>>(),
        "points": points,
        "mode": s.mode.name(),
        "point_size": s.look.point_size.to_string(),
        "edl": s.look.edl.map(|e| [e.strength, e.radius_px]),
        "background": s.look.background.to_string(),
        "color": s.color_mode.name(),
        "loading": s.loader.is_some(),
        "help": s.ui.help,
        "panel": s.ui.panel,
        "messages": s.messages.list.iter().map(|m| m.text.clone()).collect::<Vec<_>>(),
    })
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

/// Each stage's times over a run, for the summary's medians.
#[derive(Default)]
struct StageSamples {
    stages: Vec<(&'static str, Vec<f64>)>,
}

impl StageSamples {
    fn push(&mut self, stages: &[PassTime]) {
        for p in stages {
            match self.stages.iter_mut().find(|(n, _)| *n == p.name) {
                Some((_, v)) => v.push(p.ms),
                None => self.stages.push((p.name, vec![p.ms])),
            }
        }
    }

    fn medians(&self) -> Vec<(String, f64)> {
        self.stages.iter().map(|(n, v)| (n.to_string(), crate::bench::Summary::of(v).median_ms)).collect()
    }
}
