//! The loop: input → actions → state → effects → frame, and nothing when nothing changes.
//!
//! How it works: each turn of [`run_scene`]
//! 1. waits for input when nothing is due (no change to draw, no key held, no flight playing, no load
//!    running, no script, not `--continuous` or `--frames`): `glfwWaitEventsTimeout`, so an idle window
//!    takes no CPU and no GPU; otherwise it only polls ([`Turn::wait`]);
//! 2. turns the window's events (and an input script's for this frame) into actions
//!    ([`Frontend::input`]);
//! 3. reads of the last frame what the update will pick ([`effects::gather_reads`]), then carries the
//!    actions out and moves what moves by itself ([`update::apply`], [`update::tick`]: pure, on the
//!    state alone), then does the effects they ask for in one place ([`effects::run`], the Python
//!    feed, level of detail's turn);
//! 4. if anything must be seen, draws ([`Frontend::draw`]), writes the `--screenshot` of the last
//!    frame and the `--trace` line, and swaps.
//!
//! While minimized (0×0 framebuffer) it only waits for events. When the window is closed with a
//! `--screenshot` pending, one more frame is rendered for it (and not shown). The summary's mean frame
//! time is wall-clock time per frame over every frame but the first, which pays for warm-up.
use super::effects;
use super::frontend::{Drawn, Frontend, MAX_DT_S};
use super::trace::Trace;
use super::{ViewerError, ViewerOptions, ViewerSummary};
use crate::app::layers::Layers;
use crate::app::state::AppState;
use crate::app::update::{self, Effects, UpdateCtx};
use crate::input::script::InputScript;
use pcv_camera::{ControllerKind, Navigator};
use pcv_io::PointCloud;
use pcv_lod::LodScene;
use pcv_render::{PassTime, Rasterizer};
use std::time::Instant;

/// Longest wait for input (the loop also wakes for fading messages and loads).
const IDLE_WAIT_S: f64 = 0.5;
/// How often a running load is looked at.
const LOADING_WAIT_S: f64 = 0.05;
/// How long a minimized window sleeps between checks.
const MINIMIZED_WAIT_S: f64 = 0.1;
/// How long the loop waits for input while a level-of-detail scene loads nodes and nothing else moves.
const LOD_WAIT_S: f64 = 0.005;

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
        let none = ViewerSummary { frames: 0, mean_frame_ms: 0.0, interop_fallback: None, gpu_stages_ms: Vec::new() };
        return opts
            .screenshot
            .map_or(Ok(none), |_| Err(ViewerError::NoScreenshot { reason: "zero frames were asked for" }));
    }
    let mut front = Frontend::open(&opts, &cloud.label, rasterizer, backend_note)?;
    // Points sent from another thread (the Python module): this loop wakes for them (feed.rs).
    if let Some(f) = &opts.feed {
        f.attach(front.window.thread_safe_glfw());
    }
    let mut state = start_state(cloud, &opts, front.window.framebuffer_size_px());
    if let Some(l) = lod.as_deref() {
        // Profiles open in their own window, their strips read from the nodes.
        state.profile_window_ok = true;
        state.lod_modes = Some(l.available_modes());
        (state.color_mode, state.field_look) = l.color_asked();
    }
    let mut turn = Turn::new(&opts)?;
    // A project's hidden layers: the points go up again without them.
    if state.layers.layers.iter().any(|l| !l.visible) {
        turn.need.refilter = true;
    }
    loop {
        // 1. Wait or poll.
        let continuous = turn.continuous(&opts);
        let refining = lod.as_deref().is_some_and(|l| !l.status().complete || l.status().loading > 0);
        // A streamed cloud's profile strip read on a thread: frames poll it until it is in.
        let reading = front.profile_view.as_ref().is_some_and(|v| v.reading().is_some());
        if reading {
            turn.need.redraw_ui = true;
        }
        let refining = refining || reading;
        let feed_pending = opts.feed.as_ref().is_some_and(|f| f.pending());
        turn.wait(&mut front, &state, continuous, feed_pending, refining);
        let turn_start = Instant::now();
        // 2. Events → actions.
        let scripted = turn.script.as_mut().map(|s| s.due(turn.frames)).unwrap_or_default();
        let input = front.input(scripted, &state, &mut turn.need);
        // 3. Reads of the last frame, then actions and time → state (pure), then effects.
        state.size_px = input.size_px;
        let dt_s = turn.dt_s();
        let frame_px = front.pick_frame();
        let mut reads = effects::gather_reads(
            &mut state,
            rasterizer,
            &input.actions,
            &input.held,
            frame_px,
            front.profile_view.as_mut(),
        );
        let ctx = &mut UpdateCtx { reads: &mut reads };
        for a in input.actions {
            turn.need.merge(update::apply(&mut state, a, ctx));
        }
        turn.need.merge(update::tick(&mut state, &input.held, dt_s, ctx));
        if let Some(f) = &opts.feed {
            turn.need.merge(super::feed::poll(f, &mut state, rasterizer));
        }
        effects::run(&mut turn.need, &mut state, &mut front, rasterizer, lod.is_some());
        if let Some(l) = lod.as_deref_mut().filter(|_| input.size_px.0 > 0 && input.size_px.1 > 0) {
            effects::lod_turn(l, &mut turn.need, &mut state, rasterizer);
        }
        // 4. Draw, if anything must be seen.
        let closing = front.window.should_close();
        if closing && opts.screenshot.is_none() {
            break;
        }
        let last = closing || opts.frames.is_some_and(|n| turn.frames + 1 >= n);
        if input.size_px.0 == 0 || input.size_px.1 == 0 {
            if closing {
                return Err(ViewerError::NoScreenshot { reason: "the window was closed while minimized" });
            }
            front.wait(Some(MINIMIZED_WAIT_S));
            turn.last_tick = Instant::now();
            continue;
        }
        let refine = front.refine_due_in_s() == Some(0.0);
        if !(turn.need.redraw() || continuous || last || turn.need.screenshot.is_some() || refine) {
            continue;
        }
        let mode = if lod.is_some() { LodScene::mode_for(state.mode) } else { state.mode };
        let render_points = turn.need.redraw_scene || continuous || last;
        let drawn = front.draw(&mut state, rasterizer, lod.as_deref(), &mut turn.need, mode, render_points, last)?;
        let Drawn::Frame { rendered } = drawn else {
            continue;
        };
        if rendered {
            if let Some(f) = &opts.feed {
                f.rendered();
            }
            if turn.frames > 0 {
                turn.stage_samples.push(&front.gpu_stages);
            }
        }
        if let Some(path) = opts.screenshot.as_ref().filter(|_| last) {
            front.read_back_buffer()?.write_png(path)?;
        }
        if let Some(t) = turn.trace.as_mut() {
            t.write(&state, turn.frames, rendered, front.render_scale, rasterizer.num_points(), lod.as_deref())?;
        }
        turn.need = Effects::default();
        if closing {
            break;
        }
        let now = front.swap();
        turn.count_frame(&mut front, turn_start, now, rendered);
        if last {
            break;
        }
    }
    Ok(turn.summary(front.interop_fallback))
}

/// The state a window starts with: the cloud's layers, the start camera and controller (orbit for
/// files, fly for the built-in scene), the look, and the `--path` flight.
fn start_state(cloud: &PointCloud, opts: &ViewerOptions, size_px: (u32, u32)) -> AppState {
    let controller =
        opts.controller.unwrap_or(if cloud.scene().is_some() { ControllerKind::Fly } else { ControllerKind::Orbit });
    let mut layers = Layers::new(cloud.clone());
    layers.filter = opts.filter.clone();
    // The caller uploaded `cloud` (filtered as `opts.filter` says, or whole with the rasterizer
    // applying it): this only sets the index map.
    if opts.filter_in_raster {
        let _ = layers.uploaded_whole();
        layers.in_raster = true;
        let points = cloud.len();
        layers.filtered = Some(pcv_io::filter::Kept { points, by_rasterizer: true, ..Default::default() });
    } else {
        let _ = layers.uploaded();
    }
    let nav = Navigator::new(opts.camera, controller);
    let mut state = AppState::new(nav, layers, opts.mode, opts.look, opts.spacing_m, opts.up_reason.clone(), size_px);
    if let Some(path) = opts.path.clone() {
        if let Some(up) = path.up {
            state.nav.camera.up = up;
        }
        state.path = Some(update::playback(path, &state.layers));
    }
    state.sources = opts.sources.clone();
    // A profile takes its strip from the host's points, a streamed cloud's from its files again (on a
    // thread: `profile_view`), a level-of-detail scene's from its nodes (`run_scene`); not the built-in
    // scene's, which the backend makes.
    // (A streamed cloud counts as a lazy scene too: no host points; its files make it.)
    let streamed = cloud.is_device_only() && cloud.files().is_some();
    state.profile_window_ok = streamed || (!cloud.is_lazy_scene() && !cloud.points.is_empty());
    if let Some((path, project)) = &opts.project {
        project.apply(&mut state);
        state.project = Some(path.clone());
    }
    // Said on stderr when they happened: shown, not printed again.
    let quiet = std::mem::replace(&mut state.messages.quiet, true);
    for m in &opts.messages {
        state.messages.error(m.clone());
    }
    state.messages.quiet = quiet;
    state
}

/// The loop's own bookkeeping from turn to turn: what the next draw must do, the script and trace, the
/// clock, and the frame counts and times the summary reports.
struct Turn {
    need: Effects,
    script: Option<InputScript>,
    trace: Option<Trace>,
    frames: u64,
    first_frame_ms: f64,
    sum_frame_ms_after_first: f64,
    last_tick: Instant,
    last_rendered: Option<Instant>,
    /// Whether the loop waited for input since the last frame shown (then there is no frame rate).
    waited: bool,
    stage_samples: StageSamples,
}

impl Turn {
    fn new(opts: &ViewerOptions) -> Result<Turn, ViewerError> {
        Ok(Turn {
            // The first frame renders.
            need: Effects { redraw_scene: true, ..Default::default() },
            script: opts.script.clone(),
            trace: Trace::create(opts.trace.as_ref())?,
            frames: 0,
            first_frame_ms: 0.0,
            sum_frame_ms_after_first: 0.0,
            last_tick: Instant::now(),
            last_rendered: None,
            waited: false,
            stage_samples: StageSamples::default(),
        })
    }

    /// Counted, scripted and `--continuous` runs render every frame.
    fn continuous(&self, opts: &ViewerOptions) -> bool {
        opts.continuous || opts.frames.is_some() || self.script.as_ref().is_some_and(|s| s.pending())
    }

    /// Waits for input before this turn, or only polls: up to half a second (or the next message's
    /// expiry) when nothing is due, and then the time waited is not movement; briefly while a load runs
    /// or level of detail refines; not at all otherwise.
    fn wait(&mut self, front: &mut Frontend, state: &AppState, continuous: bool, feed: bool, refining: bool) {
        let busy = continuous
            || self.need.redraw()
            || front.settling()
            || state.animating()
            || front.moving()
            || feed
            || refining;
        // A frame shown below full resolution refines once the camera has been still a moment.
        let refine_s = front.refine_due_in_s();
        let busy = busy || refine_s == Some(0.0);
        if !busy {
            let wait = match state.messages.next_expiry() {
                Some(t) => t.saturating_duration_since(Instant::now()).as_secs_f64().min(IDLE_WAIT_S),
                None => IDLE_WAIT_S,
            };
            let wait = refine_s.map_or(wait, |r| wait.min(r));
            front.wait(Some(wait.max(0.001)));
            self.last_tick = Instant::now();
            self.waited = true;
            return;
        }
        let quiet = !self.need.redraw() && !continuous && !front.moving();
        if state.loader.is_some() && quiet {
            front.wait(Some(LOADING_WAIT_S));
        } else if refining && quiet && !state.animating() {
            front.wait(Some(LOD_WAIT_S));
        }
    }

    /// The time since the last turn, at most [`MAX_DT_S`].
    fn dt_s(&mut self) -> f32 {
        let now = Instant::now();
        let dt_s = now.duration_since(self.last_tick).as_secs_f32().min(MAX_DT_S);
        self.last_tick = now;
        dt_s
    }

    /// Counts a frame shown at `now` that took since `turn_start`; frames that rendered the points feed
    /// the panel's figures (a redraw of the panel alone is not a frame rate).
    fn count_frame(&mut self, front: &mut Frontend, turn_start: Instant, now: Instant, rendered: bool) {
        let frame_ms = now.duration_since(turn_start).as_secs_f64() * 1e3;
        if rendered {
            front.record_frame(frame_ms);
            front.frame_times.push(frame_ms);
            let interval_ms = self.last_rendered.map(|t| now.duration_since(t).as_secs_f64() * 1e3);
            front.frame_times.push_interval(if std::mem::take(&mut self.waited) { None } else { interval_ms });
            self.last_rendered = Some(now);
        }
        if self.frames == 0 {
            self.first_frame_ms = frame_ms;
        } else {
            self.sum_frame_ms_after_first += frame_ms;
        }
        self.frames += 1;
    }

    fn summary(&self, interop_fallback: Option<String>) -> ViewerSummary {
        let mean_frame_ms = match self.frames {
            0 => 0.0,
            1 => self.first_frame_ms,
            n => self.sum_frame_ms_after_first / (n - 1) as f64,
        };
        ViewerSummary {
            frames: self.frames,
            mean_frame_ms,
            interop_fallback,
            gpu_stages_ms: self.stage_samples.medians(),
        }
    }
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
