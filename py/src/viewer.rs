//! `pcv.Viewer`: the library's window, flown with the usual controls while Python keeps running.
//!
//! How it works — threads and contexts:
//! - `show()` starts a thread of the window's own. It makes a rasterizer there (CUDA when there is one:
//!   device 0's primary context, shared with CuPy/PyTorch/Numba and with `pcv.render`, but a stream and
//!   kernel table of its own), tells the caller its stream, takes the first points, and runs
//!   `pcv::viewer::run` — GLFW, the GL context (current on that thread only, for its whole life), the
//!   panel and CUDA-GL interop all live on that thread; Python's thread never touches GL.
//! - Python's thread reads each array (`__dlpack__(stream=the window's stream)`, or an event wait on the
//!   `__cuda_array_interface__` stream, enqueued on the window's stream right away), checks it, and
//!   sends it through a [`PointFeed`]: a one-slot mailbox the loop empties each turn. Device arrays
//!   are drawn where they are — the window holds a reference to the Python objects (or DLPack
//!   capsules) until the next `update`, and allocates nothing new for them; host arrays are uploaded
//!   like a loaded file. `update(..., wait=True)` returns once a frame with the new points is drawn.
//! - The GIL is released whenever Python's thread waits for the window; the window's thread never
//!   takes it (references it drops are released by PyO3 the next time Python runs).
//! - Closing the window (its close button: the window manager's WM_DELETE_WINDOW) ends the loop and the
//!   thread: `update` then returns `False` and does nothing, `is_open` is `False`, and `show` opens a new
//!   window. `close()` closes it from Python; at interpreter exit open windows are closed.
use crate::arrays::Place;
use crate::backend::Choice;
use crate::camera::{Camera, Kind as CameraKind};
use crate::{check_size, host_cloud, options, read_points, render_error, Error, Options};
use cudarc::driver::{CudaContext, CudaStream};
use pcv::session::{Session, Source};
use pcv::viewer::feed::{Phase, PointFeed, PointSet};
use pcv::viewer::ViewerOptions;
use pcv_camera::Camera as LibCamera;
use pcv_render::cuda::external::{check_points, order_after, stream_from_number};
use pcv_render::look::{Background, Edl, Look, PointSize, SplatMethod};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long `show` waits for the window to open, and `update(wait=True)` for its frame.
const OPEN_TIMEOUT: Duration = Duration::from_secs(60);
const FRAME_TIMEOUT: Duration = Duration::from_secs(60);

/// Every window opened, for closing them at exit.
static OPEN: Mutex<Vec<Weak<PointFeed>>> = Mutex::new(Vec::new());

#[derive(Clone)]
struct Config {
    size_px: (u32, u32),
    backend: Choice,
    camera: Option<Camera>,
    opts_mode: pcv_render::RenderMode,
    look: Look,
    spacing_m: Option<f32>,
    vsync: bool,
    panel: bool,
}

/// What the window's thread tells `show` once its rasterizer exists.
enum Ready {
    Cuda { stream: Arc<CudaStream>, ctx: Arc<CudaContext> },
    Cpu,
    Failed(String),
}

struct Running {
    feed: Arc<PointFeed>,
    thread: Option<JoinHandle<()>>,
    /// The window's CUDA stream and context (CUDA backend).
    /// Holding the stream keeps it alive (cudarc destroys it with its last reference) even if the window's
    /// thread ends while Python enqueues a wait on it.
    cuda: Option<(Arc<CudaStream>, Arc<CudaContext>)>,
}

/// A window that shows points from Python and follows their updates (see the module doc).
#[pyclass(module = "pcv")]
pub struct Viewer {
    config: Config,
    running: Mutex<Option<Running>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What keeps device arrays alive while the window draws them: their Python objects or capsules.
struct Owners(#[expect(dead_code, reason = "held, never read: dropping it releases the arrays")] Vec<Py<PyAny>>);

impl Viewer {
    /// Reads `points`/`colors` for the running window: a set to send.
    fn point_set(
        &self,
        py: Python<'_>,
        r: &Running,
        points: &Bound<'_, PyAny>,
        colors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PointSet> {
        let stream = r.cuda.as_ref().map(|c| c.0.cu_stream() as usize as u64);
        let no_cuda = || "the window renders on the CPU backend (no CUDA here)".to_string();
        let (p, c, ext) = read_points(points, colors, stream, &no_cuda)?;
        match (p.place, &r.cuda) {
            (Place::Host, _) => Ok(PointSet::Host(host_cloud(&ext, "points from Python"))),
            (Place::Device, None) => Err(PyValueError::new_err(format!("points: a CUDA array, but {}", no_cuda()))),
            (Place::Device, Some((window_stream, ctx))) => {
                if matches!(self.config.look.point_size, PointSize::Adaptive { .. }) && self.config.spacing_m.is_none()
                {
                    return Err(PyValueError::new_err(
                        "point_size: adaptive sizes of device arrays need spacing= (pcv.Viewer(spacing=...))",
                    ));
                }
                let waits: Vec<u64> =
                    [p.wait_stream, c.as_ref().and_then(|c| c.wait_stream)].into_iter().flatten().collect();
                let (ctx, window_stream) = (ctx.clone(), window_stream.clone());
                py.detach(|| {
                    check_points(&ctx, &ext)?;
                    for w in waits {
                        // SAFETY: the window's stream is alive (`Running` holds a reference to it); `w` is a
                        // producer's `__cuda_array_interface__` stream (1, 2 or a live CUstream of the primary
                        // context, the window's), as the protocol defines it.
                        unsafe { order_after(&ctx, window_stream.cu_stream(), stream_from_number(w)) }?;
                    }
                    Ok::<_, pcv_render::RenderError>(())
                })
                .map_err(render_error)?;
                let owners = Owners([Some(p.owner), c.map(|c| c.owner)].into_iter().flatten().collect());
                // SAFETY: the arrays are device memory of the window's context (checked above), kept
                // allocated by their owners, which go with the set; their producers' pending work is
                // ordered before the window's stream (the waits above, or __dlpack__(stream=...)).
                Ok(unsafe { PointSet::device(ext, Box::new(owners)) })
            }
        }
    }

    fn start(&self, py: Python<'_>, points: &Bound<'_, PyAny>, colors: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let feed = PointFeed::new();
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        let (first_tx, first_rx) = mpsc::channel::<PointSet>();
        let (applied_tx, applied_rx) = mpsc::channel::<Result<(), String>>();
        let (config, thread_feed) = (self.config.clone(), feed.clone());
        let thread = std::thread::Builder::new()
            .name("pcv-viewer".into())
            .spawn(move || window_thread(config, thread_feed, ready_tx, first_rx, applied_tx))
            .map_err(|e| Error::new_err(format!("could not start the window's thread: {e}")))?;
        let ready = py.detach(move || ready_rx.recv()).unwrap_or(Ready::Failed("the window's thread ended".into()));
        let cuda = match ready {
            Ready::Cuda { stream, ctx } => Some((stream, ctx)),
            Ready::Cpu => None,
            Ready::Failed(why) => {
                let _ = py.detach(|| thread.join());
                return Err(Error::new_err(why));
            }
        };
        let mut running = Running { feed: feed.clone(), thread: Some(thread), cuda };
        let first = match self.point_set(py, &running, points, colors) {
            Ok(s) => s,
            Err(e) => {
                drop(first_tx);
                stop(py, &mut running);
                return Err(e);
            }
        };
        let sent = first_tx.send(first).map_err(|_| Error::new_err("the window's thread ended"));
        let applied = py.detach(move || applied_rx.recv()).unwrap_or(Err("the window's thread ended".into()));
        if let Err(e) = sent.and_then(|_| applied.map_err(PyValueError::new_err)) {
            stop(py, &mut running);
            return Err(e);
        }
        match py.detach(|| feed.wait_open(OPEN_TIMEOUT)) {
            Phase::Open => {}
            Phase::Closed(why) => {
                stop(py, &mut running);
                return Err(Error::new_err(why.unwrap_or_else(|| "the window closed at once".into())));
            }
            Phase::Starting => {
                stop(py, &mut running);
                return Err(Error::new_err(format!("the window did not open within {} s", OPEN_TIMEOUT.as_secs())));
            }
        }
        lock(&OPEN).push(Arc::downgrade(&feed));
        *lock(&self.running) = Some(running);
        Ok(())
    }
}

/// Closes the window (if open) and joins its thread, with the GIL released.
fn stop(py: Python<'_>, r: &mut Running) {
    r.feed.request_close();
    if let Some(t) = r.thread.take() {
        let _ = py.detach(|| t.join());
    }
}

#[pymethods]
impl Viewer {
    /// A window of `size` (width, height) pixels, opened by `show`. `camera`: a pose camera to start
    /// from (default: a view that fits the points); the look as for `pcv.render`, defaulting to 1-pixel
    /// points with eye-dome lighting on a dark gradient. `panel`: the overlay (Tab toggles it).
    #[new]
    #[pyo3(signature = (size=(1280, 720), *, camera=None, mode="vis", point_size=None, point_shape=None, edl=None,
                        background="gradient", spacing=None, backend="auto", vsync=true, panel=true))]
    #[expect(clippy::too_many_arguments, reason = "pcv.Viewer's keyword arguments, one Rust parameter each (PyO3)")]
    fn new(
        size: (u32, u32),
        camera: Option<Bound<'_, Camera>>,
        mode: &str,
        point_size: Option<&Bound<'_, PyAny>>,
        point_shape: Option<&str>,
        edl: Option<&Bound<'_, PyAny>>,
        background: &str,
        spacing: Option<f32>,
        backend: &str,
        vsync: bool,
        panel: bool,
    ) -> PyResult<Viewer> {
        let default = Look {
            point_size: PointSize::Fixed(1),
            shape: pcv_render::look::PointShape::Round,
            edl: Some(Edl::DEFAULT),
            background: Background::GRADIENT,
            splat: SplatMethod::Gather,
            quality: pcv_render::look::Quality::Standard,
        };
        let Options { mode, look, spacing_m } =
            options(mode, point_size, point_shape, edl, background, spacing, default)?;
        let camera = camera.map(|c| c.get().clone());
        if let Some(Camera { kind: CameraKind::Matrix { .. } }) = camera {
            return Err(PyValueError::new_err(
                "camera: the window flies a pose camera (pcv.Camera(eye, yaw, pitch) or look_at), not a matrix",
            ));
        }
        Ok(Viewer {
            config: Config {
                size_px: check_size(size)?,
                backend: Choice::parse(backend).map_err(PyValueError::new_err)?,
                camera,
                opts_mode: mode,
                look,
                spacing_m,
                vsync,
                panel,
            },
            running: Mutex::new(None),
        })
    }

    /// Opens the window on these points (or shows them in the open one) and returns once it is open.
    #[pyo3(signature = (points, colors=None))]
    fn show(&self, py: Python<'_>, points: &Bound<'_, PyAny>, colors: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        if self.is_open() {
            self.update(py, points, colors, true)?;
            return Ok(());
        }
        if let Some(mut old) = lock(&self.running).take() {
            stop(py, &mut old);
        }
        self.start(py, points, colors)
    }

    /// Swaps in new arrays (same rules as `pcv.render`; device arrays are drawn in place, nothing is
    /// allocated for them). Returns `False` (and does nothing) once the window is closed. `wait`: return
    /// after a frame with these points is drawn.
    #[pyo3(signature = (points, colors=None, wait=false))]
    fn update(
        &self,
        py: Python<'_>,
        points: &Bound<'_, PyAny>,
        colors: Option<&Bound<'_, PyAny>>,
        wait: bool,
    ) -> PyResult<bool> {
        let guard = lock(&self.running);
        let Some(r) = guard.as_ref().filter(|r| r.feed.phase() == Phase::Open) else { return Ok(false) };
        let set = self.point_set(py, r, points, colors)?;
        let feed = r.feed.clone();
        drop(guard);
        let (n, replaced) = match feed.send(set) {
            Ok(sent) => sent,
            Err(set) => {
                drop(set);
                return Ok(false);
            }
        };
        // A set the window had not taken yet: its owners are released here, with the GIL.
        drop(replaced);
        if wait {
            return match py.detach(|| feed.wait_rendered(n, FRAME_TIMEOUT)) {
                Ok(()) => Ok(true),
                Err(_) if matches!(feed.phase(), Phase::Closed(_)) => Ok(false),
                Err(why) => Err(PyValueError::new_err(why)),
            };
        }
        Ok(true)
    }

    /// Whether the window is open.
    #[getter]
    fn is_open(&self) -> bool {
        lock(&self.running).as_ref().is_some_and(|r| r.feed.phase() == Phase::Open)
    }

    /// Closes the window and waits for its thread.
    fn close(&self, py: Python<'_>) {
        if let Some(mut r) = lock(&self.running).take() {
            stop(py, &mut r);
        }
    }

    /// Waits until the user closes the window (or `timeout` seconds pass: returns whether it closed).
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let Some(feed) = lock(&self.running).as_ref().map(|r| r.feed.clone()) else { return Ok(true) };
        let start = std::time::Instant::now();
        loop {
            if matches!(py.detach(|| feed.wait_closed(Duration::from_millis(100))), Phase::Closed(_)) {
                self.close(py);
                return Ok(true);
            }
            // Ctrl-C reaches Python here.
            py.check_signals()?;
            if timeout.is_some_and(|t| start.elapsed().as_secs_f64() >= t) {
                return Ok(false);
            }
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        if let Some(mut r) = lock(&self.running).take() {
            r.feed.request_close();
            if let Some(t) = r.thread.take() {
                // The window's thread never takes the GIL: joining while holding it cannot deadlock.
                let _ = t.join();
            }
        }
    }
}

/// The window's thread (see the module doc).
fn window_thread(
    config: Config,
    feed: Arc<PointFeed>,
    ready: mpsc::Sender<Ready>,
    first: mpsc::Receiver<PointSet>,
    applied: mpsc::Sender<Result<(), String>>,
) {
    let backend = pcv::session::BackendOptions { choice: config.backend.library(), ..Default::default() };
    let mut session = match pcv::session::make_backend(&backend) {
        Ok((r, note)) => Session::with_backend(r, note),
        Err(e) => {
            let _ = ready.send(Ready::Failed(e.root_cause().to_string()));
            feed.detach(Some(e.root_cause().to_string()));
            return;
        }
    };
    let _ = ready.send(match session.rasterizer.cuda_handle() {
        Some(c) => Ready::Cuda { stream: c.stream, ctx: c.ctx },
        None => Ready::Cpu,
    });
    let Ok(set) = first.recv() else {
        feed.detach(None);
        return;
    };
    let shown = match set {
        PointSet::Host(cloud) => {
            session.open(Source::Cloud(cloud), &Default::default()).map_err(|e| e.root_cause().to_string())
        }
        PointSet::Device { points, keepalive } => {
            let label = format!("{} points from Python (device arrays)", points.num_points());
            // SAFETY: PointSet::device's contract (promised by its maker) is show_external's.
            unsafe { session.show_arrays(points, keepalive, label) }.map_err(|e| e.to_string())
        }
    };
    if let Err(e) = shown {
        let _ = applied.send(Err(e.clone()));
        feed.detach(Some(e));
        return;
    }
    let cloud = &session.cloud;
    let _ = applied.send(Ok(()));
    let spacing_m = config.spacing_m.unwrap_or_else(|| match cloud.points.is_empty() {
        true => 0.0,
        false => pcv_io::spacing::estimate(cloud),
    });
    let camera = Camera::library(config.camera.as_ref(), cloud.bounds)
        .unwrap_or_else(|| LibCamera::for_cloud(cloud.bounds, false));
    let opts = ViewerOptions {
        size_px: config.size_px,
        vsync: config.vsync,
        frames: None,
        screenshot: None,
        overlay: config.panel,
        camera,
        up_reason: format!("{} (pcv.Viewer)", camera.up),
        controller: None,
        mode: config.opts_mode,
        look: config.look,
        spacing_m,
        continuous: false,
        path: None,
        script: None,
        trace: None,
        feed: Some(feed.clone()),
        frame_target_ms: Some(pcv::app::resolution::DEFAULT_TARGET_MS),
        messages: Vec::new(),
        filter: Default::default(),
        filter_in_raster: false,
        sources: Vec::new(),
        project: None,
    };
    let result = session.view(opts);
    // A set sent but never taken is dropped here; PyO3 releases its Python references later, with the GIL.
    drop(feed.detach(result.err().map(|e| e.to_string())));
    drop(session);
}

/// Closes every open window at interpreter exit (before Python's objects go).
#[pyfunction]
fn _close_all() {
    let feeds: Vec<Arc<PointFeed>> = lock(&OPEN).drain(..).filter_map(|w| w.upgrade()).collect();
    for f in &feeds {
        f.request_close();
    }
    for f in &feeds {
        f.wait_closed(Duration::from_secs(5));
    }
}

pub fn register_exit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let f = wrap_pyfunction!(_close_all, m)?;
    m.add_function(f.clone())?;
    m.py().import("atexit")?.call_method1("register", (f,))?;
    Ok(())
}
