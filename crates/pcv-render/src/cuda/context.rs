//! The driver, the device and the context: everything that can fail before a kernel exists.
//!
//! How it works: [`open`] asks, in order, whether the driver's library (libcuda.so.1, nvcuda.dll on
//! Windows: [`platform::CUDA_DRIVER_LIBRARY`]) can be loaded at all
//! (`cudarc::driver::sys::is_culib_present`, which must come first: every other cudarc call panics
//! without the library), whether `cuInit` succeeds, whether a device exists, and then retains device
//! 0's primary context through cudarc's [`CudaContext`]. Each failure becomes the [`RenderError`] that
//! says what is missing ([`RenderError::NoDriver`], [`RenderError::NoDevice`]). The whole sequence runs
//! under `catch_unwind`, so a driver that lacks a symbol cudarc expects is reported, not fatal.
//!
//! [`cuda_error`] turns a driver error into [`RenderError::Cuda`] with the driver's name for it
//! (`CUDA_ERROR_OUT_OF_MEMORY`) and its description.
use crate::platform;
use crate::RenderError;
use cudarc::driver::result::DriverError;
use cudarc::driver::{sys, CudaContext};
use std::sync::Arc;

/// What the rasterizer needs to know about its device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0) for an H200.
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub total_mem_bytes: u64,
    /// The driver's CUDA version as cuDriverGetVersion reports it: 1000 × major + 10 × minor.
    pub driver_version: i32,
}

impl DeviceInfo {
    /// "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), driver CUDA 13.0".
    pub fn describe(&self) -> String {
        format!(
            "{} (sm_{}{}, {} SMs, {:.1} GiB), driver CUDA {}",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.sm_count,
            self.total_mem_bytes as f64 / (1u64 << 30) as f64,
            version_string(self.driver_version)
        )
    }
}

/// `13000` → `"13.0"`.
pub fn version_string(cuda_version: i32) -> String {
    format!("{}.{}", cuda_version / 1000, (cuda_version % 1000) / 10)
}

/// A driver error as `CUDA_ERROR_NAME (description)`.
pub fn describe_driver_error(e: DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}

/// Maps a driver error to [`RenderError::Cuda`] naming what was being done.
pub fn cuda_error(context: impl Into<String>) -> impl FnOnce(DriverError) -> RenderError {
    let context = context.into();
    move |e| RenderError::Cuda { context, message: describe_driver_error(e) }
}

/// The driver's CUDA version (cuDriverGetVersion), e.g. 13000. Needs only the library, not cuInit.
pub fn driver_version() -> Result<i32, RenderError> {
    let mut v: std::ffi::c_int = 0;
    // SAFETY: `v` is a valid, writable c_int for the duration of the call; callers reach this only after
    // `is_culib_present` said libcuda loads, so cudarc's lazy symbol lookup succeeds.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result().map_err(cuda_error("cuDriverGetVersion"))?;
    Ok(v)
}

/// Whether the driver's library (libcuda / nvcuda.dll) can be loaded, as cudarc would load it.
pub fn driver_present() -> bool {
    // SAFETY: is_culib_present only tries to load cudarc's candidate names (dlopen, or LoadLibraryExW on
    // Windows) and drops what it opened.
    unsafe { sys::is_culib_present() }
}

/// Opens device 0: checks driver, device count and context, in that order.
pub fn open() -> Result<(Arc<CudaContext>, DeviceInfo), RenderError> {
    open_device(0)
}

/// How many CUDA devices the driver sees (0 without a driver or a device; never panics).
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    std::panic::catch_unwind(|| {
        driver_version().ok()?;
        cudarc::driver::result::init().ok()?;
        CudaContext::device_count().ok()
    })
    .ok()
    .flatten()
    .map_or(0, |n| n.max(0) as usize)
}

/// Opens device `ordinal` as [`open`] opens device 0.
pub fn open_device(ordinal: usize) -> Result<(Arc<CudaContext>, DeviceInfo), RenderError> {
    if !driver_present() {
        return Err(RenderError::NoDriver(format!(
            "{} (the NVIDIA driver's CUDA library) could not be loaded; {}",
            platform::CUDA_DRIVER_LIBRARY,
            platform::CUDA_DRIVER_REMEDY
        )));
    }
    match std::panic::catch_unwind(|| open_unchecked(ordinal)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(RenderError::NoDriver(format!("{} loaded, but using it failed: {what}", platform::CUDA_DRIVER_LIBRARY)))
        }
    }
}

fn open_unchecked(ordinal: usize) -> Result<(Arc<CudaContext>, DeviceInfo), RenderError> {
    let driver_version = driver_version()?;
    if let Err(e) = cudarc::driver::result::init() {
        let msg = describe_driver_error(e);
        return Err(match e.0 {
            sys::CUresult::CUDA_ERROR_NO_DEVICE => RenderError::NoDevice(format!("cuInit: {msg}")),
            _ => RenderError::NoDriver(format!(
                "cuInit failed with driver CUDA {}: {msg}",
                version_string(driver_version)
            )),
        });
    }
    let count = CudaContext::device_count().map_err(|e| RenderError::NoDevice(describe_driver_error(e)))?;
    if count < 1 {
        return Err(RenderError::NoDevice(format!(
            "the driver (CUDA {}) sees no CUDA device",
            version_string(driver_version)
        )));
    }
    if ordinal >= count as usize {
        return Err(RenderError::NoDevice(format!(
            "device {ordinal} asked for; the driver sees {count} CUDA device(s)"
        )));
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| {
        RenderError::NoDevice(format!("could not create a context on device {ordinal}: {}", describe_driver_error(e)))
    })?;
    let name = ctx.name().map_err(cuda_error("cuDeviceGetName"))?;
    let compute_capability = ctx.compute_capability().map_err(cuda_error("cuDeviceGetAttribute"))?;
    let sm_count = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(cuda_error("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)"))?;
    let total_mem_bytes = ctx.total_mem().map_err(cuda_error("cuDeviceTotalMem"))? as u64;
    let info =
        DeviceInfo { name, compute_capability, sm_count: sm_count.max(1) as u32, total_mem_bytes, driver_version };
    Ok((ctx, info))
}

/// Free and total device memory in bytes (cuMemGetInfo) for `ctx`.
pub fn mem_info(ctx: &CudaContext) -> Result<(u64, u64), RenderError> {
    let (free, total) = ctx.mem_get_info().map_err(cuda_error("cuMemGetInfo"))?;
    Ok((free as u64, total as u64))
}
