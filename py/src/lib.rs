//! `pcv` for Python: render and view point clouds held in CuPy, PyTorch, Numba, JAX or numpy arrays,
//! without copying them.
//!
//! How it works: a thin binding over the `pcv` library. [`arrays`] reads the caller's arrays through
//! their protocols (`__dlpack__`, `__cuda_array_interface__`, `__array_interface__`) into descriptions
//! that `pcv_render::external` checks and lays out; device arrays are drawn where they are by the CUDA
//! backend (`CudaRasterizer::render_external`, the `vis` mode) into a buffer that a [`frame::Frame`]
//! owns and exports the same ways; host arrays become the library's points and render on the CPU
//! backend (or the CUDA one) into host memory that numpy takes without a copy. [`camera`] maps
//! `pcv.Camera` to the library's camera, [`viewer`] runs the library's window on a thread of its own
//! fed with new arrays ([`pcv::viewer::feed`]). Errors name the argument and what was expected.
mod arrays;
mod backend;
mod camera;
mod dlpack;
mod frame;
mod viewer;

use arrays::{Input, Place};
use backend::Choice;
use camera::Camera;
use frame::{Frame, Kind};
use pcv_io::{Bounds, PointCloud};
use pcv_render::cuda::memory::DeviceBuffer;
use pcv_render::external::{ExternalError, ExternalPoints};
use pcv_render::look::{Background, Edl, Look, PointShape, PointSize};
use pcv_render::{Rasterizer, RenderError, RenderMode, Target};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;

create_exception!(
    pcv,
    Error,
    PyRuntimeError,
    "A failure of the renderer or the driver (CUDA errors, no kernels, out of memory)."
);

/// A library error as a Python exception: arguments the renderer cannot read are `ValueError`s.
pub(crate) fn render_error(e: RenderError) -> PyErr {
    match e {
        RenderError::Argument { .. } | RenderError::ModeUnavailable { .. } | RenderError::TargetSize { .. } => {
            PyValueError::new_err(e.to_string())
        }
        e => Error::new_err(e.to_string()),
    }
}

pub(crate) fn external_error(e: ExternalError) -> PyErr {
    match e {
        ExternalError::Dtype { .. } => PyTypeError::new_err(e.to_string()),
        e => PyValueError::new_err(e.to_string()),
    }
}

/// How the frame looks and which mode draws it, from `render`'s and `Viewer`'s keywords.
pub(crate) struct Options {
    pub mode: RenderMode,
    pub look: Look,
    pub spacing_m: Option<f32>,
}

pub(crate) fn options(
    mode: &str,
    point_size: Option<&Bound<'_, PyAny>>,
    point_shape: Option<&str>,
    edl: Option<&Bound<'_, PyAny>>,
    background: &str,
    spacing: Option<f32>,
    default: Look,
) -> PyResult<Options> {
    let mode = RenderMode::ALL.into_iter().find(|m| m.name() == mode).ok_or_else(|| {
        let names: Vec<&str> = RenderMode::ALL.iter().map(|m| m.name()).collect();
        PyValueError::new_err(format!("mode: expected one of {names:?}, got '{mode}'"))
    })?;
    let mut look = default;
    if let Some(p) = point_size.filter(|p| !p.is_none()) {
        let text = match p.extract::<i64>() {
            Ok(n) => n.to_string(),
            Err(_) => p
                .extract::<String>()
                .map_err(|_| PyTypeError::new_err("point_size: expected 1..16 or 'adaptive[:MAX]'"))?,
        };
        look.point_size = PointSize::parse(&text).map_err(|e| PyValueError::new_err(format!("point_size: {e}")))?;
    }
    if let Some(shape) = point_shape {
        look.shape = match shape {
            "round" => PointShape::Round,
            "square" => PointShape::Square,
            other => {
                return Err(PyValueError::new_err(format!("point_shape: expected 'round' or 'square', got '{other}'")))
            }
        };
    }
    if let Some(e) = edl.filter(|e| !e.is_none()) {
        look.edl = match e.extract::<bool>() {
            Ok(on) => on.then_some(Edl::DEFAULT),
            Err(_) => {
                let strength: f32 =
                    e.extract().map_err(|_| PyTypeError::new_err("edl: expected True, False or a strength (float)"))?;
                if !(strength.is_finite() && strength >= 0.0) {
                    return Err(PyValueError::new_err(format!("edl: the strength must be >= 0, got {strength}")));
                }
                Some(Edl { strength, ..Edl::DEFAULT })
            }
        };
    }
    look.background = Background::parse(background).map_err(|e| PyValueError::new_err(format!("background: {e}")))?;
    if let Some(s) = spacing {
        if !(s.is_finite() && s > 0.0) {
            return Err(PyValueError::new_err(format!("spacing: expected a positive distance, got {s}")));
        }
    }
    Ok(Options { mode, look, spacing_m: spacing })
}

pub(crate) fn check_size((w, h): (u32, u32)) -> PyResult<(u32, u32)> {
    const MAX: u32 = 16384;
    if (1..=MAX).contains(&w) && (1..=MAX).contains(&h) {
        Ok((w, h))
    } else {
        Err(PyValueError::new_err(format!("size: expected (width, height), each 1..={MAX}, got ({w}, {h})")))
    }
}

/// Reads `points` and `colors` (same side: host or device) and lays them out.
pub(crate) fn read_points(
    points: &Bound<'_, PyAny>,
    colors: Option<&Bound<'_, PyAny>>,
    stream: Option<u64>,
    no_cuda: &dyn Fn() -> String,
) -> PyResult<(Input, Option<Input>, ExternalPoints)> {
    let p = arrays::read(points, "points", stream, no_cuda)?;
    let c = colors.filter(|c| !c.is_none()).map(|c| arrays::read(c, "colors", stream, no_cuda)).transpose()?;
    if let Some(c) = &c {
        if c.place != p.place {
            let side = |pl: Place| if pl == Place::Device { "on the GPU" } else { "in host memory" };
            return Err(PyValueError::new_err(format!(
                "colors: {} but points are {}: give both on the same side",
                side(c.place),
                side(p.place)
            )));
        }
    }
    let ext = ExternalPoints::new(&p.desc, c.as_ref().map(|c| &c.desc)).map_err(external_error)?;
    Ok((p, c, ext))
}

/// With `PCV_PY_TRACE=1`, prints how long a phase of a call took since `t` (stderr): where the time
/// between Python's call and the kernels goes.
pub(crate) fn trace_phase(what: &str, t: std::time::Instant) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("PCV_PY_TRACE").is_some_and(|v| v == "1")) {
        eprintln!("pcv trace: {what}: {:.3} ms", t.elapsed().as_secs_f64() * 1e3);
    }
}

/// Host arrays as the library's points (a copy into 16-byte records: the CPU backend's input).
pub(crate) fn host_cloud(ext: &ExternalPoints, label: &str) -> PointCloud {
    // SAFETY: the arrays are host memory (their producers said so: numpy's interface or a CPU DLPack
    // capsule), alive while the caller holds their owners, and not written while the GIL is held here.
    let (pos, colors) = unsafe { ext.host_views() };
    let points = pcv_render::twins::external::host_points(&pos, &colors, ext.num_points());
    PointCloud::from_points(points, glam::DVec3::ZERO, label)
}

/// Renders points in any array (see `help(pcv.render)` in Python for the arguments).
///
/// Device arrays (CuPy, PyTorch, Numba, JAX) are drawn where they are by the CUDA backend in the `vis`
/// mode and the frame is a `pcv.Frame` on the GPU (`__cuda_array_interface__`, `__dlpack__`); host
/// arrays (numpy) render on the CUDA backend if there is one (any mode), else the CPU, and the frame is
/// a numpy array. Frames are RGBA8 (height, width, 4), row 0 at the top; with `depth=True` a second
/// array holds the depth in [0, 1] (1: no point).
#[pyfunction]
#[pyo3(signature = (points, colors=None, *, camera=None, size=(1280, 720), mode="vis", point_size=None,
                    point_shape=None, edl=None, background="black", spacing=None, depth=false, backend="auto", out=None))]
#[expect(clippy::too_many_arguments, reason = "pcv.render's keyword arguments, one Rust parameter each (PyO3)")]
fn render<'py>(
    py: Python<'py>,
    points: &Bound<'py, PyAny>,
    colors: Option<&Bound<'py, PyAny>>,
    camera: Option<Bound<'py, Camera>>,
    size: (u32, u32),
    mode: &str,
    point_size: Option<&Bound<'py, PyAny>>,
    point_shape: Option<&str>,
    edl: Option<&Bound<'py, PyAny>>,
    background: &str,
    spacing: Option<f32>,
    depth: bool,
    backend: &str,
    out: Option<Bound<'py, Frame>>,
) -> PyResult<Py<PyAny>> {
    let t0 = std::time::Instant::now();
    let (w, h) = check_size(size)?;
    let choice = Choice::parse(backend).map_err(PyValueError::new_err)?;
    let opts = options(mode, point_size, point_shape, edl, background, spacing, Look::PLAIN)?;
    let cam = camera.map(|c| c.get().clone());
    let stream = match choice {
        Choice::Cpu => None,
        _ => backend::cuda_stream().ok(),
    };
    let no_cuda = || match choice {
        Choice::Cpu => "backend='cpu' was asked for".to_string(),
        _ => format!("pcv has no CUDA backend here: {}", backend::cuda_stream().err().unwrap_or_default()),
    };
    let (p, c, ext) = read_points(points, colors, stream, &no_cuda)?;
    trace_phase("arguments and arrays read", t0);
    let result = match p.place {
        Place::Device => render_device(py, &p, c.as_ref(), &ext, cam.as_ref(), (w, h), &opts, depth, out),
        Place::Host => {
            if out.is_some() {
                return Err(PyValueError::new_err(
                    "out: frames of host arrays are numpy arrays; out= takes device frames",
                ));
            }
            render_host(py, &ext, cam.as_ref(), (w, h), &opts, depth, choice)
        }
    };
    trace_phase("frame object made", t0);
    // The arrays' owners (`p`, `c`) lived until the frame was rendered.
    drop((p, c));
    trace_phase("whole call", t0);
    result
}

#[expect(clippy::too_many_arguments, reason = "pcv.render's parsed arguments, handed on from render()")]
fn render_device(
    py: Python<'_>,
    p: &Input,
    c: Option<&Input>,
    ext: &ExternalPoints,
    cam: Option<&Camera>,
    (w, h): (u32, u32),
    opts: &Options,
    depth: bool,
    out: Option<Bound<'_, Frame>>,
) -> PyResult<Py<PyAny>> {
    if matches!(opts.look.point_size, PointSize::Adaptive { .. }) && opts.spacing_m.is_none() {
        return Err(PyValueError::new_err(
            "point_size: adaptive sizes of device arrays need spacing= (the points' typical spacing, in their units)",
        ));
    }
    let n = w as usize * h as usize;
    let out_buffer = match &out {
        Some(f) => {
            let f = f.get();
            if (f.width, f.height, f.kind) != (w, h, Kind::Color) {
                return Err(PyValueError::new_err(format!(
                    "out: a {}x{} {} frame cannot take a {w}x{h} RGBA8 frame",
                    f.width,
                    f.height,
                    f.dtype_name()
                )));
            }
            Some(f.buffer.clone())
        }
        None => None,
    };
    let waits: Vec<u64> = [p.wait_stream, c.and_then(|c| c.wait_stream)].into_iter().flatten().collect();
    let (ext, cam, mode, look, spacing) = (*ext, cam.cloned(), opts.mode, opts.look, opts.spacing_m.unwrap_or(0.0));
    let t_call = std::time::Instant::now();
    let rendered = py.detach(move || {
        trace_phase("to the backend thread (GIL released)", t_call);
        backend::with_cuda(move |r| {
            trace_phase("backend locked", t_call);
            r.check_external(&ext)?;
            trace_phase("arrays checked", t_call);
            for s in waits {
                // SAFETY: `s` is a producer's `__cuda_array_interface__` stream (1, 2 or a live CUstream of
                // the primary context, which is pcv's), as version 3 of the protocol defines it.
                unsafe { r.wait_for_stream(s) }?;
            }
            let bounds = if Camera::needs_bounds(cam.as_ref()) {
                // SAFETY: the arrays are device memory of this context (checked just above), kept alive
                // by the caller's owners until `render` returns, and their producers' streams are
                // ordered before this one (the waits above, or `__dlpack__(stream=...)`).
                unsafe { r.external_bounds(&ext) }?
            } else {
                Bounds::EMPTY
            };
            let frame = Camera::frame(cam.as_ref(), bounds, w, h).with_mode(mode).with_look(look).with_spacing(spacing);
            let buffer = match out_buffer {
                Some(b) => b,
                None => Arc::new(DeviceBuffer::<u32>::alloc(r.context(), n, "a frame")?),
            };
            // SAFETY: as above; the target is the frame's own buffer of `n` words.
            let t = std::time::Instant::now();
            trace_phase("frame set up", t_call);
            let stats = unsafe { r.render_external(&ext, &frame, Target::Device { ptr: buffer.ptr(), len_px: n }) }?;
            trace_phase("render_external", t);
            let depth = match depth {
                true => {
                    let d = DeviceBuffer::<u32>::alloc(r.context(), n, "a depth frame")?;
                    r.depth_to_device(d.ptr(), n)?;
                    Some(Arc::new(d))
                }
                false => None,
            };
            Ok::<_, RenderError>((buffer, depth, stats, r.stream().clone(), r.context().ordinal() as i32))
        })
    });
    trace_phase("back with the GIL", t_call);
    let (buffer, depth_buffer, stats, stream, device) = rendered.map_err(Error::new_err)?.map_err(render_error)?;
    let color =
        Frame { buffer, width: w, height: h, kind: Kind::Color, device, stats: Some(stats), stream: stream.clone() };
    let color = match out {
        Some(f) if Arc::ptr_eq(&f.get().buffer, &color.buffer) => f.into_any().unbind(),
        _ => Py::new(py, color)?.into_any(),
    };
    match depth_buffer {
        Some(d) => {
            let d = Frame { buffer: d, width: w, height: h, kind: Kind::Depth, device, stats: None, stream };
            Ok((color, Py::new(py, d)?).into_pyobject(py)?.into_any().unbind())
        }
        None => Ok(color),
    }
}

fn render_host(
    py: Python<'_>,
    ext: &ExternalPoints,
    cam: Option<&Camera>,
    (w, h): (u32, u32),
    opts: &Options,
    depth: bool,
    choice: Choice,
) -> PyResult<Py<PyAny>> {
    let cloud = host_cloud(ext, "points from Python");
    let (cam, mode, look) = (cam.cloned(), opts.mode, opts.look);
    let spacing = match (opts.spacing_m, look.point_size) {
        (Some(s), _) => s,
        (None, PointSize::Adaptive { .. }) => pcv_io::spacing::estimate(&cloud),
        (None, _) => 0.0,
    };
    let empty = PointCloud::from_points(Vec::new(), glam::DVec3::ZERO, "");
    let draw = move |r: &mut dyn Rasterizer| -> Result<(Vec<u32>, pcv_render::FrameStats), RenderError> {
        r.upload(&cloud)?;
        let frame =
            Camera::frame(cam.as_ref(), cloud.bounds, w, h).with_mode(mode).with_look(look).with_spacing(spacing);
        let mut px = vec![0u32; frame.num_pixels()];
        let stats = r.render(&frame, Target::Host(&mut px))?;
        Ok((px, stats))
    };
    let use_cuda = choice == Choice::Cuda || (choice == Choice::Auto && backend::cuda_stream().is_ok());
    let rendered = py.detach(move || -> Result<_, RenderError> {
        let (px, stats, depth_bits) = if use_cuda {
            backend::with_cuda(|r| {
                let drawn = draw(r);
                let d = match (&drawn, depth) {
                    (Ok(_), true) => Some(r.depth_bits()),
                    _ => None,
                };
                // Give the device memory back (the points and what the upload made of them).
                let _ = r.upload(&empty);
                drawn.map(|(px, s)| (px, s, d))
            })
            .map_err(RenderError::NoDevice)??
        } else {
            backend::with_cpu(|r| {
                let drawn = draw(r);
                let d = (drawn.is_ok() && depth).then(|| Ok(r.depth_bits()));
                let _ = r.upload(&empty);
                drawn.map(|(px, s)| (px, s, d))
            })?
        };
        Ok((px, stats, depth_bits.transpose()?))
    });
    let (px, _stats, depth_bits) = rendered.map_err(render_error)?;
    let color = frame::host_array(py, px, w, h, Kind::Color)?;
    match depth_bits {
        Some(d) => {
            let d = frame::host_array(py, d, w, h, Kind::Depth)?;
            Ok((color, d).into_pyobject(py)?.into_any().unbind())
        }
        None => Ok(color.unbind()),
    }
}

/// Writes a frame as a PNG: a `pcv.Frame` or a numpy array (height, width, 4) uint8 with row 0 at the
/// top, as `pcv.render` returns them.
#[pyfunction]
fn write_png(py: Python<'_>, image: &Bound<'_, PyAny>, path: std::path::PathBuf) -> PyResult<()> {
    let host = match image.cast::<Frame>() {
        Ok(f) => f.call_method0("numpy")?,
        Err(_) => image.clone(),
    };
    let host = py.import("numpy")?.call_method1("ascontiguousarray", (host,))?;
    let input = arrays::read(&host, "image", None, &|| "write_png takes a pcv.Frame or a host array".into())?;
    let d = &input.desc;
    if input.place != Place::Host || d.dtype != pcv_render::external::Dtype::U8 || d.shape.len() != 3 || d.shape[2] != 4
    {
        return Err(PyValueError::new_err(format!(
            "image: expected uint8 (height, width, 4), got {} {:?}",
            d.dtype, d.shape
        )));
    }
    let (h, w) = (d.shape[0] as u32, d.shape[1] as u32);
    let len = h as usize * w as usize * 4;
    let bytes = if len == 0 {
        &[][..]
    } else {
        // SAFETY: numpy.ascontiguousarray gave a C-contiguous host array of (h, w, 4) bytes, alive while
        // `input.owner` is held (to the end of this function) and read under the GIL.
        unsafe { std::slice::from_raw_parts(d.ptr as usize as *const u8, len) }
    };
    let words: Vec<u32> = bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let frame = pcv_render::image_io::Frame::new(w, h, words);
    py.detach(|| frame.write_png(&path)).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// What this machine offers: {"cuda": "NVIDIA H200 (sm_90, ...)" or None, "cuda_error": why not, "cpu": "..."}.
#[pyfunction]
fn backends(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let d = pyo3::types::PyDict::new(py);
    match py.detach(|| backend::with_cuda(|r| r.description())) {
        Ok(desc) => {
            d.set_item("cuda", desc)?;
            d.set_item("cuda_error", py.None())?;
        }
        Err(why) => {
            d.set_item("cuda", py.None())?;
            d.set_item("cuda_error", why)?;
        }
    }
    d.set_item("cpu", backend::with_cpu(|r| r.description()))?;
    Ok(d.into_any().unbind())
}

#[pymodule]
#[pyo3(name = "pcv")]
fn pcv_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<Camera>()?;
    m.add_class::<Frame>()?;
    m.add_class::<viewer::Viewer>()?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(write_png, m)?)?;
    m.add_function(wrap_pyfunction!(backends, m)?)?;
    viewer::register_exit(m)?;
    Ok(())
}
