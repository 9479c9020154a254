//! DLPack: the C structs, reading a producer's capsule, and exporting pcv's frames.
//!
//! How it works: a DLPack capsule is a `PyCapsule` named `dltensor` (or `dltensor_versioned`, DLPack
//! 1.x) holding a pointer to a `DLManagedTensor` (`DLManagedTensorVersioned`): the tensor's data
//! pointer, device, shape, strides in elements, dtype, and a deleter that frees it. Reading
//! ([`read_capsule`]) takes the description and keeps the capsule itself alive, unconsumed: when the
//! capsule is released, its producer's destructor calls the deleter (the protocol's rule for a capsule
//! that still has its original name), so nothing here ever frees another library's memory. Exporting
//! ([`export`]) boxes a managed tensor whose context holds an `Arc` of the frame's device buffer, so the
//! buffer lives until the consumer (PyTorch, CuPy) calls the deleter; the capsule's destructor calls it
//! only if no consumer took the capsule (renamed it `used_dltensor`).
use pcv_render::external::{ArrayDesc, Dtype};
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

/// `kDLCPU`, `kDLCUDA`, `kDLCUDAHost`, `kDLCUDAManaged`.
pub const DL_CPU: i32 = 1;
pub const DL_CUDA: i32 = 2;
pub const DL_CUDA_HOST: i32 = 3;
pub const DL_CUDA_MANAGED: i32 = 13;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    pub strides: *mut i64,
    pub byte_offset: u64,
}

#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";

/// What a capsule describes.
pub struct Described {
    pub desc: ArrayDesc,
}

fn dtype(t: DLDataType, arg: &str) -> PyResult<Dtype> {
    if t.lanes != 1 {
        return Err(PyTypeError::new_err(format!("{arg}: vector dtypes ({} lanes) are not read", t.lanes)));
    }
    let kind = match t.code {
        0 => 'i',
        1 => 'u',
        2 => 'f',
        4 => 'V', // bfloat
        5 => 'c',
        6 => 'b',
        c => return Err(PyTypeError::new_err(format!("{arg}: DLPack dtype code {c} is not read"))),
    };
    Ok(Dtype { kind, bytes: (t.bits / 8).max(1) })
}

/// The description in `capsule` (a producer's `__dlpack__()` result). The capsule must stay alive (and
/// unconsumed) while the memory is used.
pub fn read_capsule(capsule: &Bound<'_, PyAny>, arg: &str) -> PyResult<Described> {
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object (borrowed from `capsule`); the capsule calls accept any object and
    // fail (returning 0 / null with an exception set, cleared by PyErr::take below) for non-capsules.
    let tensor: *const DLTensor = unsafe {
        if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *const DLManagedTensor;
            if m.is_null() {
                std::ptr::null()
            } else {
                &(*m).dl_tensor
            }
        } else if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()) as *const DLManagedTensorVersioned;
            if m.is_null() {
                std::ptr::null()
            } else {
                &(*m).dl_tensor
            }
        } else {
            std::ptr::null()
        }
    };
    if tensor.is_null() {
        let _ = PyErr::take(capsule.py());
        return Err(PyTypeError::new_err(format!("{arg}: __dlpack__() did not return an unused DLPack capsule")));
    }
    // SAFETY: the producer's managed tensor lives as long as its capsule, which the caller holds; its
    // shape and strides arrays hold `ndim` entries each (strides may be null: C-contiguous).
    let t = unsafe { &*tensor };
    let ndim = t.ndim.max(0) as usize;
    let shape: Vec<i64> =
        if ndim == 0 { Vec::new() } else { unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec() };
    let dt = dtype(t.dtype, arg)?;
    let strides = if t.strides.is_null() || ndim == 0 {
        None
    } else {
        // SAFETY: as above.
        let s = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        Some(s.iter().map(|&e| e.saturating_mul(dt.bytes as i64)).collect())
    };
    if shape.iter().any(|&d| d < 0) {
        return Err(PyTypeError::new_err(format!("{arg}: negative DLPack shape {shape:?}")));
    }
    let desc = ArrayDesc {
        ptr: (t.data as u64).wrapping_add(t.byte_offset),
        shape: shape.into_iter().map(|d| d as u64).collect(),
        strides_bytes: strides,
        dtype: dt,
    };
    Ok(Described { desc })
}

/// What an exported tensor keeps: its shape and strides (the tensor points at them) and the owner.
struct ExportCtx<T> {
    shape: Vec<i64>,
    _owner: T,
}

/// The deleter of exported legacy tensors: frees the box (shape, owner) and the managed tensor.
unsafe extern "C" fn delete_legacy<T>(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` came from Box::into_raw in `export` with a context of ExportCtx<T>; the protocol calls
    // the deleter exactly once.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut ExportCtx<T>));
        drop(Box::from_raw(m));
    }
}

unsafe extern "C" fn delete_versioned<T>(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as `delete_legacy`.
    unsafe {
        drop(Box::from_raw((*m).manager_ctx as *mut ExportCtx<T>));
        drop(Box::from_raw(m));
    }
}

/// The capsule destructors: call the deleter when no consumer took the capsule.
unsafe extern "C" fn capsule_legacy(cap: *mut ffi::PyObject) {
    // SAFETY: called by Python with the dying capsule; a consumed capsule was renamed and is skipped.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

unsafe extern "C" fn capsule_versioned(cap: *mut ffi::PyObject) {
    // SAFETY: as `capsule_legacy`.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
    }
}

/// A DLPack capsule of `ptr` (C-contiguous, `shape`, `dtype`) on `device`, keeping `owner` alive until
/// the consumer is done. `versioned`: DLPack 1.0's struct (when the consumer's `max_version` allows).
pub fn export<T: Send + 'static>(
    py: Python<'_>,
    ptr: u64,
    shape: &[i64],
    dtype: DLDataType,
    device: DLDevice,
    owner: T,
    versioned: bool,
) -> PyResult<Py<PyAny>> {
    let mut ctx = Box::new(ExportCtx { shape: shape.to_vec(), _owner: owner });
    let tensor = DLTensor {
        data: ptr as usize as *mut c_void,
        device,
        ndim: shape.len() as i32,
        dtype,
        shape: ctx.shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let ctx = Box::into_raw(ctx) as *mut c_void;
    let (pointer, name, destructor): (*mut c_void, &CStr, unsafe extern "C" fn(*mut ffi::PyObject)) = if versioned {
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ctx,
            deleter: Some(delete_versioned::<T>),
            flags: 0,
            dl_tensor: tensor,
        });
        (Box::into_raw(m).cast(), VERSIONED, capsule_versioned)
    } else {
        let m = Box::new(DLManagedTensor { dl_tensor: tensor, manager_ctx: ctx, deleter: Some(delete_legacy::<T>) });
        (Box::into_raw(m).cast(), LEGACY, capsule_legacy)
    };
    // SAFETY: `pointer` is a live managed tensor owned by the capsule from here on; `name` is static.
    let cap = unsafe { ffi::PyCapsule_New(pointer, name.as_ptr(), Some(destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so nobody else frees the tensor: free it here.
        unsafe {
            if versioned {
                delete_versioned::<T>(pointer.cast());
            } else {
                delete_legacy::<T>(pointer.cast());
            }
        }
        return Err(PyErr::take(py).unwrap_or_else(|| PyBufferError::new_err("PyCapsule_New failed")));
    }
    // SAFETY: `cap` is a new reference we own.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}
