//! The kernel table: the embedded kernel images, loaded once per rasterizer.
//!
//! How it works: build.rs compiles every `kernels/*.cu` into a fatbin (machine code for sm_80, sm_86,
//! sm_89 and sm_90, plus `compute_80` PTX that the driver compiles for anything newer) and a PTX text,
//! and lists them in `OUT_DIR/kernels.rs` as [`KERNELS`]. [`KernelTable::load`] loads the fatbin of each
//! module that [`super::kernels::LAUNCHED_KERNELS`] names (`cuModuleLoadData`), looks its entry up
//! (`cuModuleGetFunction`) and asks the occupancy calculator how many blocks of [`BLOCK_SIZE`] threads
//! fit on the device at once, which sizes the grid-stride launches (`kernels.rs`). A module the driver
//! refuses becomes [`RenderError::PtxRejected`], whose message names the PTX's `.version` and the
//! driver's CUDA version: the usual cause is PTX from a newer nvcc than the driver.
use super::context::{describe_driver_error, version_string, DeviceInfo};
use super::kernels::{Kernel, KernelEntry};
use crate::RenderError;
use cudarc::driver::result::DriverError;
use cudarc::driver::{result, sys, CudaContext};
use std::ffi::CString;
use std::sync::Arc;

/// One kernel module as build.rs embedded it.
pub struct KernelImage {
    /// The file stem: `kernels/<name>.cu`.
    pub name: &'static str,
    /// PTX text for `compute_80`.
    pub ptx: &'static str,
    /// Fatbin: sm_80/86/89/90 machine code plus the PTX.
    pub fatbin: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// Threads per block of every launch.
pub const BLOCK_SIZE: u32 = 256;

/// The embedded image of module `name`.
pub fn image(name: &str) -> Option<&'static KernelImage> {
    KERNELS.iter().find(|k| k.name == name)
}

/// The `.version` directive of a PTX text, as (major, minor).
pub fn ptx_version(ptx: &str) -> Option<(u32, u32)> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".version"))
        .and_then(|v| v.trim().split_once('.'))
        .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
}

fn ptx_version_string(ptx: &str) -> String {
    ptx_version(ptx).map_or_else(|| "unknown (no .version line)".into(), |(a, b)| format!("{a}.{b}"))
}

/// A loaded module; unloaded on drop.
pub struct Module {
    raw: sys::CUmodule,
    ctx: Arc<CudaContext>,
}

impl Module {
    /// Loads `image` (a fatbin, cubin or NUL-terminated PTX) into `ctx`.
    fn load_raw(ctx: &Arc<CudaContext>, image: *const std::ffi::c_void) -> Result<Self, DriverError> {
        ctx.bind_to_thread()?;
        // SAFETY: callers pass a pointer to a complete, live image (an 8-byte-aligned fatbin copy or a
        // NUL-terminated PTX string) that outlives this call; the driver copies what it keeps.
        let raw = unsafe { result::module::load_data(image) }?;
        Ok(Self { raw, ctx: ctx.clone() })
    }

    /// Loads an embedded module from its fatbin; a refusal becomes [`RenderError::PtxRejected`].
    pub fn load_image(ctx: &Arc<CudaContext>, info: &DeviceInfo, k: &KernelImage) -> Result<Self, RenderError> {
        // The fatbin header is read as 64-bit words: give it an 8-byte-aligned copy
        // (include_bytes! only promises byte alignment).
        let mut aligned = vec![0u64; k.fatbin.len().div_ceil(8)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..k.fatbin.len()].copy_from_slice(k.fatbin);
        Self::load_raw(ctx, aligned.as_ptr().cast())
            .map_err(|e| rejected(k.name, "its fatbin (sm_80/86/89/90 machine code + compute_80 PTX)", k.ptx, e, info))
    }

    /// JIT-loads PTX text (`name` for messages); a refusal becomes [`RenderError::PtxRejected`].
    pub fn load_ptx(ctx: &Arc<CudaContext>, info: &DeviceInfo, name: &str, ptx: &str) -> Result<Self, RenderError> {
        let text = CString::new(ptx).map_err(|_| RenderError::PtxRejected {
            kernel: name.into(),
            message: "the PTX text contains a NUL byte".into(),
        })?;
        Self::load_raw(ctx, text.as_ptr().cast()).map_err(|e| rejected(name, "its PTX", ptx, e, info))
    }

    fn function(&self, entry: &str) -> Result<sys::CUfunction, DriverError> {
        let name = CString::new(entry).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))?;
        self.ctx.bind_to_thread()?;
        // SAFETY: `self.raw` is a module loaded in this context and not yet unloaded (it is unloaded only
        // in Drop); `name` is NUL-terminated and outlives the call.
        unsafe { result::module::get_function(self.raw, name) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        self.ctx.record_err(self.ctx.bind_to_thread());
        // SAFETY: loaded in this context, unloaded exactly once, here; the functions taken from it live in
        // the KernelTable that owns this module and are dropped with it.
        self.ctx.record_err(unsafe { result::module::unload(self.raw) });
    }
}

fn rejected(name: &str, what: &str, ptx: &str, e: DriverError, info: &DeviceInfo) -> RenderError {
    RenderError::PtxRejected {
        kernel: format!("kernels/{name}.cu"),
        message: format!(
            "{} while loading {what}: the PTX is .version {}, the driver is CUDA {} on {} (sm_{}{}). \
             PTX newer than the driver's is refused: rebuild with an nvcc no newer than CUDA {} \
             (scripts/setup.sh pins nvidia-nvvm to the nvcc release) or update the driver",
            describe_driver_error(e),
            ptx_version_string(ptx),
            version_string(info.driver_version),
            info.name,
            info.compute_capability.0,
            info.compute_capability.1,
            version_string(info.driver_version),
        ),
    }
}

/// A kernel ready to launch.
#[derive(Clone, Copy, Debug)]
pub struct Function {
    pub raw: sys::CUfunction,
    /// Blocks of [`BLOCK_SIZE`] threads resident on the whole device at once (SMs × occupancy).
    pub resident_blocks: u32,
}

/// Every kernel of [`super::kernels::LAUNCHED_KERNELS`], loaded into one context.
pub struct KernelTable {
    functions: [Function; Kernel::ALL.len()],
    // Declared after `functions` so that the handles go before the modules they point into.
    _modules: Vec<Module>,
}

impl KernelTable {
    /// Loads the embedded modules; [`RenderError::NoKernels`] when this build has none.
    pub fn load(ctx: &Arc<CudaContext>, info: &DeviceInfo) -> Result<Self, RenderError> {
        if KERNELS.is_empty() {
            return Err(RenderError::NoKernels);
        }
        let mut modules: Vec<(&'static str, Module)> = Vec::new();
        let mut functions = Vec::with_capacity(Kernel::ALL.len());
        for &k in Kernel::ALL {
            let KernelEntry { module, entry, .. } = k.entry();
            let idx = match modules.iter().position(|(n, _)| *n == module) {
                Some(i) => i,
                None => {
                    let img = image(module).ok_or_else(|| RenderError::PtxRejected {
                        kernel: format!("kernels/{module}.cu"),
                        message: format!("this build embeds no module '{module}' (it has: {})", names()),
                    })?;
                    modules.push((module, Module::load_image(ctx, info, img)?));
                    modules.len() - 1
                }
            };
            let m = &modules[idx].1;
            let raw = m.function(entry).map_err(|e| RenderError::PtxRejected {
                kernel: format!("kernels/{module}.cu"),
                message: format!("no entry point {entry}: {}", describe_driver_error(e)),
            })?;
            // SAFETY: `raw` is a live function of a module loaded in the current context (bound by
            // `function` above); the block size is within the device limit of 1024 threads.
            let per_sm = unsafe { result::occupancy::max_active_block_per_multiprocessor(raw, BLOCK_SIZE as i32, 0) }
                .map_err(super::context::cuda_error(format!(
                "cuOccupancyMaxActiveBlocksPerMultiprocessor({entry})"
            )))?;
            let resident_blocks = info.sm_count.saturating_mul(per_sm.max(1) as u32).max(1);
            functions.push(Function { raw, resident_blocks });
        }
        let functions: [Function; Kernel::ALL.len()] = functions.try_into().map_err(|_| RenderError::NoKernels)?;
        Ok(Self { functions, _modules: modules.into_iter().map(|(_, m)| m).collect() })
    }

    pub fn get(&self, k: Kernel) -> Function {
        self.functions[k as usize]
    }
}

/// The embedded modules' names, comma-separated.
pub fn names() -> String {
    KERNELS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

// SAFETY: CUmodule and CUfunction are handles into the driver, which is thread-safe; every use binds the
// owning context to the calling thread first (`bind_to_thread`), so the handles may move between threads.
unsafe impl Send for Module {}
// SAFETY: as for Module: the table holds driver handles only and binds the context before each use.
unsafe impl Send for KernelTable {}
