//! Frames out: [`Frame`] owns a device buffer the kernels wrote and hands it to CuPy, PyTorch, Numba
//! and JAX without a copy (`__cuda_array_interface__`, `__dlpack__`); [`host_array`] gives host frames
//! to numpy without a copy (`__array_interface__` of a buffer numpy keeps alive).
//!
//! How it works: a frame's buffer is a `pcv` `DeviceBuffer` in an `Arc`: the `Frame` holds one
//! reference, each DLPack export another (released by the consumer's deleter), so the memory lives as
//! long as any view of it. The frame is complete when `pcv.render` returns (the library waits for its
//! last pass), so the protocols' `stream` asks for no synchronisation. Frames are RGBA8, shape
//! (height, width, 4), uint8; depth frames float32 (height, width), the depth buffer's value in [0, 1]
//! (1 where no point landed). Row 0 is the top of the image, as image libraries expect
//! (`PIL.Image.fromarray`, matplotlib's `imshow`, torchvision): the kernels write the rows in that order,
//! so no flip or copy is needed.
use crate::dlpack::{self, DLDataType, DLDevice};
use cudarc::driver::CudaStream;
use pcv_render::cuda::memory::DeviceBuffer;
use pcv_render::FrameStats;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::Arc;

/// What a frame holds: RGBA8 colours or depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Color,
    Depth,
}

impl Kind {
    fn typestr(self) -> &'static str {
        match self {
            Kind::Color => "|u1",
            Kind::Depth => "<f4",
        }
    }

    fn dl(self) -> DLDataType {
        match self {
            Kind::Color => DLDataType { code: 1, bits: 8, lanes: 1 },
            Kind::Depth => DLDataType { code: 2, bits: 32, lanes: 1 },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Color => "uint8",
            Kind::Depth => "float32",
        }
    }
}

/// A frame in device memory (see the module doc).
#[pyclass(module = "pcv", frozen)]
pub struct Frame {
    pub(crate) buffer: Arc<DeviceBuffer<u32>>,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) kind: Kind,
    pub(crate) device: i32,
    pub(crate) stats: Option<FrameStats>,
    /// The stream the frame was rendered on (copies to the host are ordered on it).
    pub(crate) stream: Arc<CudaStream>,
}

impl Frame {
    pub(crate) fn dtype_name(&self) -> &'static str {
        self.kind.name()
    }

    fn shape_vec(&self) -> Vec<i64> {
        match self.kind {
            Kind::Color => vec![self.height as i64, self.width as i64, 4],
            Kind::Depth => vec![self.height as i64, self.width as i64],
        }
    }
}

#[pymethods]
impl Frame {
    /// The CUDA array interface (version 3): the buffer the kernels wrote, ready (no stream to wait on).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, self.shape_vec())?)?;
        d.set_item("typestr", self.kind.typestr())?;
        d.set_item("data", (self.buffer.ptr(), false))?;
        d.set_item("version", 3)?;
        d.set_item("strides", py.None())?;
        d.set_item("stream", py.None())?;
        Ok(d)
    }

    /// A DLPack capsule of the buffer (no copy). `stream`: the consumer's; the frame is already complete.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        if let Some(s) = stream {
            if !s.is_none() && s.extract::<i64>().is_err() {
                return Err(PyValueError::new_err("stream must be an int (a CUDA stream) or None"));
            }
        }
        if let Some((t, id)) = dl_device {
            if (t, id) != (dlpack::DL_CUDA, self.device) {
                return Err(PyBufferError::new_err(format!(
                    "the frame is on CUDA device {}; no copy to ({t}, {id})",
                    self.device
                )));
            }
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err("pcv frames are exported without copies (copy=True)"));
        }
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let device = DLDevice { device_type: dlpack::DL_CUDA, device_id: self.device };
        dlpack::export(py, self.buffer.ptr(), &self.shape_vec(), self.kind.dl(), device, self.buffer.clone(), versioned)
    }

    fn __dlpack_device__(&self) -> (i32, i32) {
        (dlpack::DL_CUDA, self.device)
    }

    /// The device address of the buffer the kernels wrote.
    #[getter]
    fn ptr(&self) -> u64 {
        self.buffer.ptr()
    }

    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.shape_vec())
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.kind.name()
    }

    #[getter]
    fn width(&self) -> u32 {
        self.width
    }

    #[getter]
    fn height(&self) -> u32 {
        self.height
    }

    /// "cuda:N".
    #[getter]
    fn device(&self) -> String {
        format!("cuda:{}", self.device)
    }

    /// The render's pass times (CUDA events): {"total_ms": ..., "passes": {"clear": ms, ...}, "points": N}.
    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.stats.as_ref().map(|s| stats_dict(py, s)).transpose()
    }

    /// A copy in host memory, as a numpy array (the one copy pcv makes only when asked).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let (buffer, stream) = (self.buffer.clone(), self.stream.clone());
        let words = py.detach(move || buffer.to_vec(&stream)).map_err(crate::render_error)?;
        match self.kind {
            Kind::Color => host_array(py, words, self.width, self.height, Kind::Color),
            Kind::Depth => host_array(py, words, self.width, self.height, Kind::Depth),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "pcv.Frame({} {:?} on cuda:{}, ptr={:#x})",
            self.kind.name(),
            self.shape_vec(),
            self.device,
            self.buffer.ptr()
        )
    }
}

pub fn stats_dict<'py>(py: Python<'py>, s: &FrameStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total_ms", s.total_ms)?;
    d.set_item("points", s.points)?;
    let passes = PyDict::new(py);
    for p in &s.passes {
        passes.set_item(p.name, p.ms)?;
    }
    d.set_item("passes", passes)?;
    Ok(d)
}

/// Host memory numpy views through `__array_interface__`; freed when the last view goes.
#[pyclass(module = "pcv", frozen)]
pub struct HostBuffer {
    ptr: *mut u32,
    len: usize,
    shape: Vec<i64>,
    kind: Kind,
}

// SAFETY: the allocation is plain memory owned by this object alone; Rust never reads or writes it
// after handing it to numpy (only numpy does, under its own rules), and frees it once, in Drop.
unsafe impl Send for HostBuffer {}
// SAFETY: as above: `&HostBuffer` gives access to the address only, never to the contents.
unsafe impl Sync for HostBuffer {}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from Box::into_raw of a boxed slice in `host_array`; freed once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len)) });
    }
}

#[pymethods]
impl HostBuffer {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.kind.typestr())?;
        d.set_item("data", (self.ptr as usize, false))?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

/// A numpy array over `words` (no copy): (height, width, 4) uint8 for colours, (height, width) float32
/// (the words' bits) for depth.
pub fn host_array<'py>(
    py: Python<'py>,
    words: Vec<u32>,
    width: u32,
    height: u32,
    kind: Kind,
) -> PyResult<Bound<'py, PyAny>> {
    let len = words.len();
    let ptr = Box::into_raw(words.into_boxed_slice()) as *mut u32;
    let shape = match kind {
        Kind::Color => vec![height as i64, width as i64, 4],
        Kind::Depth => vec![height as i64, width as i64],
    };
    let owner = Bound::new(py, HostBuffer { ptr, len, shape, kind })?;
    py.import("numpy")?.call_method1("asarray", (owner,))
}
