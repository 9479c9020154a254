//! The interactive viewer's entry point: what it takes, what it returns, how it fails.
//!
//! How it works: [`run`] hands the cloud, the rasterizer and the [`ViewerOptions`] to the loop
//! ([`mod@run`]: input → actions → state → effects → frame). The loop keeps the window side in
//! [`frontend`] (the window, the panel, the pixel [`surface`], the keymap), does what the pure update
//! ([`crate::app::update`]) asks of the world in [`effects`], writes `--trace` lines ([`trace`]) and
//! takes points sent from other threads ([`feed`]). The cloud, the rasterizer and the start camera come
//! from [`crate::session`] ([`crate::session::Session::view`] calls [`run`] or [`run_lod`]).
pub mod effects;
pub mod feed;
pub mod frontend;
pub mod profile_view;
pub mod run;
pub mod surface;
pub mod trace;

use crate::display::blit::BlitError;
use crate::display::window::WindowError;
use crate::input::script::InputScript;
use crate::ui::OverlayError;
use pcv_camera::path::CameraPath;
use pcv_camera::{Camera, ControllerKind, StartOptions};
use pcv_io::PointCloud;
use pcv_render::image_io::ImageError;
use pcv_render::{Rasterizer, RenderError, RenderMode};

/// How the viewer runs.
#[derive(Clone, Debug)]
pub struct ViewerOptions {
    /// Window size in screen coordinates (pixels on an unscaled display).
    pub size_px: (u32, u32),
    /// Wait for vertical blank on swap (on by default; `--no-vsync` to measure).
    pub vsync: bool,
    /// Stop after this many frames (`None`: run until the window closes; `Some(0)`: open the window
    /// and stop at once). Counted runs render every frame.
    pub frames: Option<u64>,
    /// Save the last frame, as shown, to this PNG.
    pub screenshot: Option<std::path::PathBuf>,
    /// Show the panel (Tab toggles it when on; `false` leaves the overlay out entirely).
    pub overlay: bool,
    /// The camera to start with ([`crate::session::prepare`]); R returns to its start pose.
    pub camera: Camera,
    /// Why the camera's up axis is what it is (shown in the panel).
    pub up_reason: String,
    /// The controller to start with (`None`: fly for the built-in scene, orbit for files).
    pub controller: Option<ControllerKind>,
    /// The render mode to start with (M cycles through them).
    pub mode: RenderMode,
    /// Point size, eye-dome lighting and background.
    pub look: pcv_render::look::Look,
    /// The cloud's point spacing ([`pcv_io::spacing::estimate`]), for adaptive point sizes.
    pub spacing_m: f32,
    /// Render every frame even when nothing changes (benchmarks, measurements).
    pub continuous: bool,
    /// Fly this path from the start (`--path`).
    pub path: Option<CameraPath>,
    /// Replay this input (`--input-script`).
    pub script: Option<InputScript>,
    /// Write one JSON line per frame drawn: pose, picked point, measurement (`--trace`).
    pub trace: Option<std::path::PathBuf>,
    /// Points sent from another thread while the window runs (the Python module's `Viewer.update`).
    pub feed: Option<std::sync::Arc<feed::PointFeed>>,
    /// Adaptive resolution's frame-time target while the camera moves (`None`: always full resolution).
    pub frame_target_ms: Option<f64>,
    /// Errors to show in the panel from the start (what went wrong while opening: [`crate::session::Session::warnings`]).
    pub messages: Vec<String>,
    /// Which points the layers show from the start (the session's filter, which it uploaded).
    pub filter: pcv_io::filter::PointFilter,
    /// The session uploaded every point and the rasterizer's culled passes apply `filter`
    /// ([`crate::session::filter_in_raster`]).
    pub filter_in_raster: bool,
    /// What was opened (paths or URLs as given), for Ctrl+S's project.
    pub sources: Vec<String>,
    /// The project it was opened from: Ctrl+S writes it back, and the window applies what the
    /// options do not carry ([`crate::app::project::Project::apply`]).
    pub project: Option<(std::path::PathBuf, crate::app::project::Project)>,
}

impl ViewerOptions {
    /// Options for `cloud` with its start camera and everything else at its default.
    pub fn for_cloud(cloud: &PointCloud) -> ViewerOptions {
        let (camera, reason) = Camera::start(cloud, &StartOptions::default());
        ViewerOptions {
            size_px: (1280, 720),
            vsync: true,
            frames: None,
            screenshot: None,
            overlay: true,
            camera,
            up_reason: reason.0,
            controller: None,
            mode: RenderMode::Culled,
            look: pcv_render::look::Look::for_cloud(cloud.scene().is_some(), &Default::default()),
            spacing_m: pcv_io::spacing::estimate(cloud),
            continuous: false,
            path: None,
            script: None,
            trace: None,
            feed: None,
            frame_target_ms: Some(crate::app::resolution::DEFAULT_TARGET_MS),
            messages: Vec::new(),
            filter: Default::default(),
            filter_in_raster: false,
            sources: Vec::new(),
            project: None,
        }
    }
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
    /// The median GPU time of each stage of a frame over the frames that rendered the points (all but
    /// the first; see [`crate::ui::FrameInfo::gpu_stages`]), in the frame's order; empty where the GPU
    /// times could not be taken.
    pub gpu_stages_ms: Vec<(String, f64)>,
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
    Color(#[from] pcv_io::attributes::ColorError),
    #[error("{path}: {source}")]
    Trace { path: std::path::PathBuf, source: std::io::Error },
}

/// Checks that a display is reachable without opening a window: call it before loading a large cloud
/// so that `pcv` without a display fails at once (with the same advice as [`run`]).
pub fn check_display() -> Result<(), ViewerError> {
    crate::display::window::check_display().map_err(ViewerError::from)
}

/// Runs the viewer on `cloud`, already uploaded to `rasterizer`, until the window closes or
/// `opts.frames` frames are shown. `backend_note` (e.g. why auto-selection fell back to the CPU) is
/// shown in the panel.
pub fn run(
    cloud: &PointCloud,
    rasterizer: &mut dyn Rasterizer,
    opts: ViewerOptions,
    backend_note: Option<String>,
) -> Result<ViewerSummary, ViewerError> {
    run::run_scene(cloud, rasterizer, opts, backend_note, None)
}

/// Runs the viewer on a level-of-detail scene attached to `rasterizer` (see [`pcv_lod`]); `cloud`
/// is its [`pcv_lod::LodScene::placeholder_cloud`], prepared like any other.
pub fn run_lod(
    cloud: &PointCloud,
    rasterizer: &mut dyn Rasterizer,
    opts: ViewerOptions,
    backend_note: Option<String>,
    lod: &mut pcv_lod::LodScene,
) -> Result<ViewerSummary, ViewerError> {
    run::run_scene(cloud, rasterizer, opts, backend_note, Some(lod))
}
