//! Putting points on the device: the built-in scene made there, or host points copied in chunks.
//!
//! How it works: the points' size is checked against `cuMemGetInfo` first (leaving [`RESERVE_BYTES`]
//! for the frame buffers and the driver), so a cloud that cannot fit is refused with
//! [`RenderError::OutOfMemory`] saying how many points would, before anything is allocated. A lazy
//! built-in scene ([`PointCloud::is_lazy_scene`]) never exists on the host: its ten cylinders are
//! uploaded and the `pcv_scene` kernel writes every point in place. Host points go up in
//! [`CHUNK_BYTES`] pieces, with a progress bar from [`PROGRESS_MIN_POINTS`] points on.
use super::context::{cuda_error, mem_info};
use super::memory::DeviceBuffer;
use super::modules::KernelTable;
use crate::gpu_data::{Cylinder, Point};
use crate::RenderError;
use cudarc::driver::{CudaContext, CudaStream};
use indicatif::{ProgressBar, ProgressStyle};
use pcv_io::{scene, PointCloud};
use std::sync::Arc;

/// Device memory kept free after the points: frame buffers (a 4K frame's depth and color take 66 MB)
/// and the driver's own needs.
pub const RESERVE_BYTES: u64 = 256 << 20;
/// Device bytes a point needs at the upload's peak: its 16 bytes, then preprocessing's sorted copy
/// and index beside them (20) or the batched modes' positions, colors, words and index (24).
pub const PEAK_BYTES_PER_POINT: u64 = 16 + 24;
/// Bytes per host-to-device copy.
pub const CHUNK_BYTES: usize = 64 << 20;
/// Clouds from this many points get a progress bar.
pub const PROGRESS_MIN_POINTS: u64 = 50_000_000;

const POINT_BYTES: u64 = std::mem::size_of::<Point>() as u64;

/// Allocates room for `num_points` points after checking that they fit.
pub fn alloc_points(ctx: &Arc<CudaContext>, num_points: u64) -> Result<DeviceBuffer<Point>, RenderError> {
    let (free_bytes, _total) = mem_info(ctx)?;
    let points_bytes = num_points.saturating_mul(POINT_BYTES);
    let needed_bytes = points_bytes.saturating_add(RESERVE_BYTES);
    let oom = |free_bytes: u64| RenderError::OutOfMemory {
        points: num_points,
        needed_bytes,
        free_bytes,
        fit_points: free_bytes.saturating_sub(RESERVE_BYTES) / POINT_BYTES,
    };
    if needed_bytes > free_bytes {
        return Err(oom(free_bytes));
    }
    let len = usize::try_from(num_points).map_err(|_| oom(free_bytes))?;
    DeviceBuffer::alloc(ctx, len, "the points").map_err(|e| match e {
        // Another process may have taken memory since cuMemGetInfo: report it the same way.
        RenderError::Cuda { ref message, .. } if message.contains("CUDA_ERROR_OUT_OF_MEMORY") => {
            oom(mem_info(ctx).map(|m| m.0).unwrap_or(free_bytes))
        }
        other => other,
    })
}

/// Makes the built-in scene `cloud.scene()` on the device.
pub fn generate_scene(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    cloud: &PointCloud,
) -> Result<DeviceBuffer<Point>, RenderError> {
    let spec = cloud.scene().ok_or_else(|| RenderError::Cuda {
        context: "scene upload".into(),
        message: "the cloud is not a built-in scene".into(),
    })?;
    let points = alloc_points(ctx, spec.num_points)?;
    if spec.num_points == 0 {
        return Ok(points);
    }
    let maker = SceneMaker::new(ctx, stream, spec)?;
    // SAFETY: `points` was allocated for all `spec.num_points` points of the scene.
    unsafe { maker.make(kernels, stream, 0, spec.num_points, points.ptr()) }?;
    stream.synchronize().map_err(cuda_error("pcv_scene"))?;
    Ok(points)
}

/// Makes points `first .. first + count` of the built-in scene `spec` on the device (one GPU's share).
pub fn generate_scene_range(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    kernels: &KernelTable,
    spec: pcv_io::SceneSpec,
    first: u64,
    count: u64,
) -> Result<DeviceBuffer<Point>, RenderError> {
    let points = alloc_points(ctx, count)?;
    if count == 0 {
        return Ok(points);
    }
    let maker = SceneMaker::new(ctx, stream, spec)?;
    // SAFETY: `points` was allocated for `count` points (`make` checks the range against the scene).
    unsafe { maker.make(kernels, stream, first, count, points.ptr()) }?;
    stream.synchronize().map_err(cuda_error("pcv_scene"))?;
    Ok(points)
}

/// The built-in scene's cylinders on the device, to make its points from, whole or a chunk at a time.
pub struct SceneMaker {
    cylinders: DeviceBuffer<Cylinder>,
    params: crate::gpu_data::SceneParams,
}

impl SceneMaker {
    pub fn new(
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        spec: pcv_io::SceneSpec,
    ) -> Result<SceneMaker, RenderError> {
        let cyl = scene::cylinders(spec.seed);
        let params = scene::params(spec.num_points, spec.seed);
        let mut cylinders = DeviceBuffer::<Cylinder>::alloc(ctx, cyl.len(), "the scene's cylinders")?;
        cylinders.write_at(stream, 0, &cyl)?;
        if params.num_cylinders as usize != cylinders.len() || cylinders.is_empty() {
            return Err(RenderError::Cuda {
                context: "scene upload".into(),
                message: format!("{} cylinders for a scene that expects {}", cylinders.len(), params.num_cylinders),
            });
        }
        Ok(SceneMaker { cylinders, params })
    }

    /// Enqueues the making of points `first .. first + count` of the scene into `dst`.
    ///
    /// # Safety
    /// `dst` must hold room for `count` points.
    pub unsafe fn make(
        &self,
        kernels: &KernelTable,
        stream: &CudaStream,
        first: u64,
        count: u64,
        dst: u64,
    ) -> Result<(), RenderError> {
        if first.checked_add(count).is_none_or(|end| end > self.params.num_points) {
            return Err(RenderError::Cuda {
                context: "scene upload".into(),
                message: format!("points {first}..+{count} of a scene of {}", self.params.num_points),
            });
        }
        // SAFETY: `cylinders` holds exactly `params.num_cylinders` (> 0) cylinders (checked in `new`),
        // `first + count` is within the scene (checked above) and `dst` holds `count` points (this
        // function's contract).
        unsafe { super::kernels::scene(kernels, stream, self.params, self.cylinders.ptr(), dst, first, count) }
    }
}

/// Copies the host points of `cloud` to the device.
pub fn upload_host(
    ctx: &Arc<CudaContext>,
    stream: &CudaStream,
    cloud: &PointCloud,
) -> Result<DeviceBuffer<Point>, RenderError> {
    let host = &cloud.points;
    let mut points = alloc_points(ctx, host.len() as u64)?;
    let chunk = CHUNK_BYTES / POINT_BYTES as usize;
    let bar = (host.len() as u64 >= PROGRESS_MIN_POINTS).then(|| {
        let b = ProgressBar::new(host.len() as u64);
        b.set_style(
            ProgressStyle::with_template("uploading {bar:40} {human_pos}/{human_len} points ({per_sec}, {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    for (c, part) in host.chunks(chunk).enumerate() {
        points.write_at(stream, c * chunk, part)?;
        if let Some(b) = &bar {
            b.inc(part.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(points)
}
