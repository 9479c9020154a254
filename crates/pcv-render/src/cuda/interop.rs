//! CUDA-GL buffer interop with RAII guards: the CUDA backend writes its color pass straight into the GL
//! pixel buffer that the window then uploads to a texture, with no trip through host memory.
//!
//! How it works: [`GlBufferRegistration::register`] registers a GL buffer object with the CUDA context
//! (`cuGraphicsGLRegisterBuffer`, write-discard: CUDA overwrites the whole buffer every frame) and
//! unregisters it on drop. [`GlBufferRegistration::map`] maps it on the rasterizer's stream
//! (`cuGraphicsMapResources`) and returns a [`MappedGlBuffer`] holding its device pointer and size
//! (`cuGraphicsResourceGetMappedPointer`); dropping the guard unmaps it on the same stream, which
//! orders the unmap after the kernels that wrote the buffer and makes GL wait for them. The guard
//! borrows the registration mutably, so a buffer cannot be mapped twice or unregistered while mapped.
//!
//! cudarc has the map/unmap calls but not `cuGraphicsGLRegisterBuffer` (it lives in cudaGL.h): it is
//! looked up once by name in the libcuda that cudarc already loaded.
//!
//! Both calls need the GL context that owns the buffer current on the calling thread, and a buffer must
//! be unregistered before GL deletes it (drop the registration first).
use crate::cuda::context::{cuda_error, describe_driver_error};
use crate::cuda::CudaHandle;
use crate::RenderError;
use cudarc::driver::{sys, CudaContext, CudaStream};
use std::ffi::c_uint;
use std::sync::{Arc, OnceLock};

/// `CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource*, GLuint, unsigned int)`.
type RegisterBufferFn = unsafe extern "C" fn(*mut sys::CUgraphicsResource, c_uint, c_uint) -> sys::CUresult;

/// The driver's `cuGraphicsGLRegisterBuffer`, looked up once.
fn register_buffer_fn() -> Result<RegisterBufferFn, RenderError> {
    static F: OnceLock<Result<RegisterBufferFn, String>> = OnceLock::new();
    F.get_or_init(|| {
        // SAFETY: a CUDA context exists (the only caller is `register`, given its handle), so `is_culib_present` said
        // libcuda loads and `culib()` returns it without panicking. The symbol, if present, has the
        // signature of RegisterBufferFn (cudaGL.h), and the library stays loaded for the process's life
        // (cudarc keeps it in a static), so the copied function pointer never dangles.
        unsafe {
            sys::culib()
                .get::<RegisterBufferFn>(b"cuGraphicsGLRegisterBuffer\0")
                .map(|sym| *sym)
                .map_err(|e| e.to_string())
        }
    })
    .clone()
    .map_err(|e| RenderError::Cuda {
        context: format!("looking up cuGraphicsGLRegisterBuffer in {}", crate::platform::CUDA_DRIVER_LIBRARY),
        message: e,
    })
}

/// A GL buffer registered with CUDA (write-discard); unregistered on drop.
pub struct GlBufferRegistration {
    resource: sys::CUgraphicsResource,
    gl_buffer_name: u32,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

/// The registered buffer mapped for CUDA; unmapped on drop.
pub struct MappedGlBuffer<'a> {
    reg: &'a mut GlBufferRegistration,
    device_ptr: u64,
    size_bytes: usize,
}

impl GlBufferRegistration {
    /// Registers GL buffer object `gl_buffer_name` (a PBO) with `cuda`'s context, to be mapped on its
    /// stream. The GL context that owns the buffer must be current on this thread.
    pub fn register(cuda: &CudaHandle, gl_buffer_name: u32) -> Result<Self, RenderError> {
        let register = register_buffer_fn()?;
        let ctx = cuda.ctx.clone();
        ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let mut resource: sys::CUgraphicsResource = std::ptr::null_mut();
        let flags = sys::CUgraphicsRegisterFlags::CU_GRAPHICS_REGISTER_FLAGS_WRITE_DISCARD as c_uint;
        // SAFETY: `resource` is a valid out-pointer; the CUDA context is current (bound above); the GL
        // name is checked by the driver, which returns an error for a name that is not a buffer of the
        // current GL context.
        let r = unsafe { register(&mut resource, gl_buffer_name, flags) };
        r.result().map_err(|e| RenderError::Cuda {
            context: format!("cuGraphicsGLRegisterBuffer(GL buffer {gl_buffer_name})"),
            message: format!(
                "{} (is the buffer's GL context current, on an NVIDIA GL driver?)",
                describe_driver_error(e)
            ),
        })?;
        Ok(Self { resource, gl_buffer_name, stream: cuda.stream.clone(), ctx })
    }

    /// The GL buffer object's name.
    pub fn gl_buffer_name(&self) -> u32 {
        self.gl_buffer_name
    }

    /// Maps the buffer for CUDA until the guard drops.
    pub fn map(&mut self) -> Result<MappedGlBuffer<'_>, RenderError> {
        self.ctx.bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
        let ctx_msg = format!("mapping GL buffer {}", self.gl_buffer_name);
        // SAFETY: one registered, currently unmapped resource (the guard below borrows `self` mutably, so
        // no second mapping exists); the stream belongs to the same context.
        unsafe { sys::cuGraphicsMapResources(1, &mut self.resource, self.stream.cu_stream()) }
            .result()
            .map_err(cuda_error(format!("cuGraphicsMapResources ({ctx_msg})")))?;
        let (mut ptr, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: the resource is mapped (just above) and both out-pointers are valid locals.
        let r = unsafe { sys::cuGraphicsResourceGetMappedPointer_v2(&mut ptr, &mut size, self.resource) };
        // From here on the guard owns the mapping and unmaps it on every path, errors included.
        let mapped = MappedGlBuffer { reg: self, device_ptr: ptr, size_bytes: size };
        r.result().map_err(cuda_error(format!("cuGraphicsResourceGetMappedPointer ({ctx_msg})")))?;
        Ok(mapped)
    }
}

impl Drop for GlBufferRegistration {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: registered in `register`, unregistered exactly once, here; no mapping is live (a
        // MappedGlBuffer borrows the registration, so it has been dropped and has unmapped).
        self.ctx.record_err(unsafe { sys::cuGraphicsUnregisterResource(self.resource) }.result());
    }
}

impl MappedGlBuffer<'_> {
    /// The buffer's device address while mapped: pass it as `Target::Device { ptr, .. }`.
    pub fn device_ptr(&self) -> u64 {
        self.device_ptr
    }

    /// The buffer's size in bytes (`len_px` is this / 4).
    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }
}

impl Drop for MappedGlBuffer<'_> {
    fn drop(&mut self) {
        let reg = &mut *self.reg;
        reg.ctx.record_err(reg.ctx.bind_to_thread());
        // SAFETY: the resource was mapped by `map` on this stream and is unmapped exactly once, here;
        // the unmap is ordered after the kernels enqueued on the same stream.
        reg.ctx.record_err(
            unsafe { sys::cuGraphicsUnmapResources(1, &mut reg.resource, reg.stream.cu_stream()) }.result(),
        );
    }
}
