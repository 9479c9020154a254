//! Python arrays in: `__dlpack__`, `__cuda_array_interface__`, numpy's `__array_interface__`.
//!
//! How it works: [`read`] turns one argument into an [`ArrayDesc`] (address, shape, strides, dtype),
//! where it lives ([`Place`]) and what keeps its memory alive. The protocols are tried in this order:
//! 1. `__dlpack_device__` says CUDA (or CUDA managed memory): `__dlpack__(stream=S)` with pcv's stream,
//!    so the producer itself orders its pending work before pcv's (PyTorch records an event on its
//!    current stream and makes S wait; CuPy likewise). The capsule is kept, unconsumed, as the owner.
//! 2. `__cuda_array_interface__` (CuPy, Numba, PyTorch, ...): version 3's `stream` is waited on (an
//!    event there, a wait on pcv's stream: the host does not block); `None` means the data is ready. A
//!    dict without `stream` (PyTorch's is version 2) says nothing, so pcv waits on the legacy default
//!    stream, where such producers work. `mask` is refused. The object itself is the owner.
//! 3. numpy's `__array_interface__` (host memory), then a host `__dlpack__` (a PyTorch CPU tensor),
//!    then `numpy.asarray(obj)` for anything else (lists, ...).
//!
//! Nothing is copied here; the descriptions go to `pcv_render::external::ExternalPoints::new`, which
//! checks dtypes and shapes and says what was expected.
use crate::dlpack;
use pcv_render::external::{ArrayDesc, Dtype};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Where an array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Host,
    /// CUDA device memory (the device is checked against pcv's by the driver, `check_points`).
    Device,
}

/// One array argument, read.
pub struct Input {
    pub desc: ArrayDesc,
    pub place: Place,
    /// What keeps the memory alive (the object, or the DLPack capsule).
    pub owner: Py<PyAny>,
    /// A producer stream to wait for before reading (`__cuda_array_interface__`).
    pub wait_stream: Option<u64>,
}

fn ints(v: &Bound<'_, PyAny>, what: &str, arg: &str) -> PyResult<Vec<i64>> {
    let t = v.cast::<PyTuple>().map_err(|_| PyTypeError::new_err(format!("{arg}: {what} must be a tuple")))?;
    t.iter().map(|x| x.extract::<i64>()).collect::<PyResult<Vec<i64>>>()
}

/// A dict of numpy's or CUDA's array interface (`device`: which), read.
fn interface(d: &Bound<'_, PyDict>, arg: &str, device: bool) -> PyResult<(ArrayDesc, Option<u64>)> {
    let proto = if device { "__cuda_array_interface__" } else { "__array_interface__" };
    let get = |k: &str| d.get_item(k);
    let missing = |k: &str| PyTypeError::new_err(format!("{arg}: {proto} has no '{k}'"));
    if let Some(m) = get("mask")? {
        if !m.is_none() {
            return Err(PyValueError::new_err(format!("{arg}: masked arrays ({proto} 'mask') are not supported")));
        }
    }
    let shape = ints(&get("shape")?.ok_or_else(|| missing("shape"))?, "'shape'", arg)?;
    if shape.iter().any(|&s| s < 0) {
        return Err(PyValueError::new_err(format!("{arg}: negative shape {shape:?}")));
    }
    let typestr: String = get("typestr")?.ok_or_else(|| missing("typestr"))?.extract()?;
    let dtype = Dtype::from_typestr(&typestr).ok_or_else(|| {
        PyTypeError::new_err(format!("{arg}: dtype '{typestr}' is not read (little-endian float32, uint8 or uint32)"))
    })?;
    let data = get("data")?.ok_or_else(|| missing("data"))?;
    let ptr: u64 = match data.cast::<PyTuple>() {
        Ok(t) if t.len() == 2 => t.get_item(0)?.extract::<Option<u64>>()?.unwrap_or(0),
        _ => return Err(PyTypeError::new_err(format!("{arg}: {proto} 'data' must be (pointer, read_only)"))),
    };
    let strides = match get("strides")? {
        Some(s) if !s.is_none() => Some(ints(&s, "'strides'", arg)?),
        _ => None,
    };
    let offset: i64 = match get("offset")? {
        Some(o) if !o.is_none() => o.extract()?,
        _ => 0,
    };
    let version: i64 = match get("version")? {
        Some(v) => v.extract().unwrap_or(0),
        None => 0,
    };
    let stream = if !device {
        None
    } else {
        match get("stream")? {
            // Version 3: the producer's stream, or None for data that is ready.
            Some(s) if s.is_none() => None,
            Some(s) => {
                let n: u64 = s
                    .extract()
                    .map_err(|_| PyTypeError::new_err(format!("{arg}: {proto} 'stream' must be an int or None")))?;
                if n == 0 {
                    return Err(PyValueError::new_err(format!(
                        "{arg}: {proto} 'stream' 0 is ambiguous (version 3 says 1 for the legacy default stream, 2 for per-thread)"
                    )));
                }
                Some(n)
            }
            // No stream key (versions before 3, PyTorch's 2): the legacy default stream, to be safe.
            None if version < 3 => Some(1),
            None => None,
        }
    };
    let desc = ArrayDesc {
        ptr: ptr.wrapping_add(offset as u64),
        shape: shape.into_iter().map(|s| s as u64).collect(),
        strides_bytes: strides,
        dtype,
    };
    Ok((desc, stream))
}

fn producer_error(arg: &str, what: &str, e: PyErr, py: Python<'_>) -> PyErr {
    PyValueError::new_err(format!("{arg}: {what} failed: {}", e.value(py)))
}

/// Reads argument `arg` (see the module doc). `stream`: pcv's CUDA stream for `__dlpack__`, or `None`
/// when there is no CUDA backend (then a device array is an error saying why: `no_cuda`).
pub fn read(obj: &Bound<'_, PyAny>, arg: &str, stream: Option<u64>, no_cuda: &dyn Fn() -> String) -> PyResult<Input> {
    let py = obj.py();
    let device_error = || PyValueError::new_err(format!("{arg}: a CUDA array, but {}", no_cuda()));
    // 1. DLPack on a CUDA device.
    if let Some(dev) = obj.getattr_opt("__dlpack_device__")? {
        let (kind, _id): (i32, i32) =
            dev.call0().and_then(|d| d.extract()).map_err(|e| producer_error(arg, "__dlpack_device__()", e, py))?;
        if kind == dlpack::DL_CUDA || kind == dlpack::DL_CUDA_MANAGED {
            let s = stream.ok_or_else(device_error)?;
            let kw = PyDict::new(py);
            kw.set_item("stream", s)?;
            let cap = obj
                .call_method("__dlpack__", (), Some(&kw))
                .map_err(|e| producer_error(arg, "__dlpack__(stream=...)", e, py))?;
            let d = dlpack::read_capsule(&cap, arg)?;
            return Ok(Input { desc: d.desc, place: Place::Device, owner: cap.unbind(), wait_stream: None });
        }
    }
    // 2. The CUDA array interface.
    if let Some(cai) = obj.getattr_opt("__cuda_array_interface__")? {
        let d = cai
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err(format!("{arg}: __cuda_array_interface__ is not a dict")))?;
        // What is wrong with the array itself is said first, then that there is no CUDA to read it.
        let (desc, wait_stream) = interface(d, arg, true)?;
        stream.ok_or_else(device_error)?;
        return Ok(Input { desc, place: Place::Device, owner: obj.clone().unbind(), wait_stream });
    }
    // 3. Host memory.
    if let Some(ai) = obj.getattr_opt("__array_interface__")? {
        let d = ai
            .cast::<PyDict>()
            .map_err(|_| PyTypeError::new_err(format!("{arg}: __array_interface__ is not a dict")))?;
        let (desc, _) = interface(d, arg, false)?;
        return Ok(Input { desc, place: Place::Host, owner: obj.clone().unbind(), wait_stream: None });
    }
    if let Some(dev) = obj.getattr_opt("__dlpack_device__")? {
        let (kind, _): (i32, i32) = dev.call0()?.extract()?;
        if kind == dlpack::DL_CPU || kind == dlpack::DL_CUDA_HOST {
            let cap = obj.call_method0("__dlpack__").map_err(|e| producer_error(arg, "__dlpack__()", e, py))?;
            let d = dlpack::read_capsule(&cap, arg)?;
            return Ok(Input { desc: d.desc, place: Place::Host, owner: cap.unbind(), wait_stream: None });
        }
        return Err(PyValueError::new_err(format!(
            "{arg}: on DLPack device type {kind}; pcv reads CPU and CUDA arrays"
        )));
    }
    let np = py.import("numpy").map_err(|_| {
        PyTypeError::new_err(format!(
            "{arg}: expected an array (numpy, CuPy, PyTorch, Numba, JAX: __array_interface__, __cuda_array_interface__ or __dlpack__), got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let arr = np.call_method1("asarray", (obj,)).map_err(|e| producer_error(arg, "numpy.asarray", e, py))?;
    if arr.getattr_opt("__array_interface__")?.is_none() {
        return Err(PyTypeError::new_err(format!("{arg}: numpy.asarray gave no array interface")));
    }
    read(&arr, arg, stream, no_cuda)
}
