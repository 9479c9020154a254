//! Device memory: a typed buffer that frees itself, and copies ordered on the rasterizer's stream.
//!
//! How it works: [`DeviceBuffer`] holds a `cuMemAlloc` allocation of `len` elements of a plain-data
//! type (`bytemuck::Pod`: any bit pattern is a valid value, so reading back whatever the device wrote
//! is sound) and the context it belongs to; dropping it binds that context and calls `cuMemFree`. Plain
//! allocations, not managed memory (the device README's advice). Copies are enqueued on the
//! rasterizer's stream, so they are ordered with the kernels; the host side of a copy is a borrowed
//! slice, and every function that enqueues one synchronizes the stream before returning, so the slice
//! outlives the transfer.
use super::context::cuda_error;
use crate::RenderError;
use cudarc::driver::{result, sys, CudaContext, CudaStream};
use std::marker::PhantomData;
use std::sync::Arc;

/// `len` elements of `T` in device memory; freed on drop.
pub struct DeviceBuffer<T: bytemuck::Pod> {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
    _t: PhantomData<T>,
}

impl<T: bytemuck::Pod> DeviceBuffer<T> {
    /// Allocates `len` elements (uninitialized). `len` may be 0: no allocation, a null pointer.
    pub fn alloc(ctx: &Arc<CudaContext>, len: usize, what: &str) -> Result<Self, RenderError> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| RenderError::Cuda {
            context: format!("allocating {what}"),
            message: format!("{len} elements overflow the address space"),
        })?;
        ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let ptr = if bytes == 0 {
            0
        } else {
            // SAFETY: the context is current on this thread (bound above) and `bytes` is non-zero; the
            // returned pointer is owned by this buffer alone and freed once, in Drop.
            unsafe { result::malloc_sync(bytes) }
                .map_err(cuda_error(format!("cuMemAlloc of {bytes} bytes for {what}")))?
        };
        Ok(Self { ptr, len, ctx: ctx.clone(), _t: PhantomData })
    }

    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keeps the first `len` elements (the allocation stays as it is until the buffer drops).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    pub fn num_bytes(&self) -> u64 {
        (self.len * std::mem::size_of::<T>()) as u64
    }

    /// Copies `src` to elements `first .. first + src.len()` and waits for the copy.
    pub fn write_at(&mut self, stream: &CudaStream, first: usize, src: &[T]) -> Result<(), RenderError> {
        if src.is_empty() {
            return Ok(());
        }
        self.check_range(first, src.len(), "write")?;
        let dst = self.ptr + (first * std::mem::size_of::<T>()) as u64;
        // SAFETY: `first + src.len() <= self.len` (checked above), so the destination range lies inside
        // this live allocation; the stream belongs to this buffer's context; `src` stays borrowed until
        // the stream synchronization below has completed the copy.
        unsafe { result::memcpy_htod_async(dst, src, stream.cu_stream()) }.map_err(cuda_error("cuMemcpyHtoDAsync"))?;
        stream.synchronize().map_err(cuda_error("cuStreamSynchronize after an upload"))
    }

    /// Copies elements `first .. first + dst.len()` into `dst` and waits for the copy.
    pub fn read_at(&self, stream: &CudaStream, first: usize, dst: &mut [T]) -> Result<(), RenderError> {
        if dst.is_empty() {
            return Ok(());
        }
        self.check_range(first, dst.len(), "read")?;
        let src = self.ptr + (first * std::mem::size_of::<T>()) as u64;
        // SAFETY: the source range lies inside this live allocation (checked above); `T: Pod`, so any
        // bytes the device wrote are a valid `T`; `dst` stays borrowed until the synchronization below.
        unsafe { result::memcpy_dtoh_async(dst, src, stream.cu_stream()) }.map_err(cuda_error("cuMemcpyDtoHAsync"))?;
        stream.synchronize().map_err(cuda_error("cuStreamSynchronize after a download"))
    }

    /// Sets every byte to zero, ordered on `stream` (no wait: later work on the stream sees zeros).
    pub fn zero(&mut self, stream: &CudaStream) -> Result<(), RenderError> {
        if self.ptr == 0 {
            return Ok(());
        }
        // SAFETY: the range is exactly this live allocation's `num_bytes`; the stream belongs to its context.
        unsafe { result::memset_d8_async(self.ptr, 0, self.num_bytes() as usize, stream.cu_stream()) }
            .map_err(cuda_error("cuMemsetD8Async"))
    }

    /// Copies all of `src` (same length) into this buffer on the device, ordered on `stream` (no wait).
    pub fn copy_from(&mut self, stream: &CudaStream, src: &DeviceBuffer<T>) -> Result<(), RenderError> {
        if src.len != self.len {
            return Err(RenderError::Cuda {
                context: "device-to-device copy".into(),
                message: format!("{} elements into a buffer of {}", src.len, self.len),
            });
        }
        if self.ptr == 0 {
            return Ok(());
        }
        // SAFETY: both ranges are whole live allocations of the same byte size (checked above), distinct
        // buffers (two owned allocations never overlap); the stream belongs to their context.
        unsafe { result::memcpy_dtod_async(self.ptr, src.ptr, self.num_bytes() as usize, stream.cu_stream()) }
            .map_err(cuda_error("cuMemcpyDtoDAsync"))
    }

    /// The whole buffer on the host.
    pub fn to_vec(&self, stream: &CudaStream) -> Result<Vec<T>, RenderError> {
        let mut v = vec![T::zeroed(); self.len];
        self.read_at(stream, 0, &mut v)?;
        Ok(v)
    }

    fn check_range(&self, first: usize, n: usize, what: &str) -> Result<(), RenderError> {
        match first.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(RenderError::Cuda {
                context: format!("device buffer {what}"),
                message: format!("elements {first}..{} outside a buffer of {}", first.saturating_add(n), self.len),
            }),
        }
    }
}

impl<T: bytemuck::Pod> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        // Errors cannot be returned from drop; cudarc keeps them in the context's error state.
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: `ptr` came from cuMemAlloc in this context and is freed exactly once, here; every
        // kernel or copy that used it was synchronized before the call that enqueued it returned.
        self.ctx.record_err(unsafe { result::free_sync(self.ptr) });
    }
}
