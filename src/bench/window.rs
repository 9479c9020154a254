//! `pcv bench --window`: the whole frame in a real window, timed on the GPU stage by stage.
//!
//! How it works: for each pose and mode the viewer ([`crate::viewer::run`]) opens a window of the bench's
//! size, vsync off and the panel on, renders `warm-up + timed` frames continuously from the pose, and
//! returns the median GPU time of each stage of a frame over the frames after the first
//! ([`crate::viewer::ViewerSummary::gpu_stages_ms`]): on the CUDA backend the map of the GL pixel buffer,
//! the render passes (CUDA events), the unmap, then the GL work (timestamp queries): the copy of the
//! pixel buffer into a texture, the blit to the window and the panel; on the CPU backend the upload of
//! the frame straight into the texture replaces map and unmap (and the copy is then empty). Their sum
//! is the frame's GPU time; the wall-clock time per frame (which includes the X server's presentation)
//! is reported beside it.
use super::{BenchError, BenchOptions};
use pcv_camera::scenarios::scenarios;
use pcv_camera::Camera;
use pcv_io::PointCloud;
use pcv_render::Rasterizer;

/// One pose and mode in a window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WindowResult {
    pub points: u64,
    pub mode: pcv_render::RenderMode,
    pub pose: String,
    pub width: u32,
    pub height: u32,
    pub frames: u64,
    /// Median GPU ms of each stage, in the frame's order.
    pub stages_ms: Vec<(String, f64)>,
    /// Their sum.
    pub gpu_total_ms: f64,
    /// Mean wall-clock ms per frame (after the first).
    pub wall_ms: f64,
    /// Why the frames went through host memory, where CUDA-GL interop failed.
    pub interop_fallback: Option<String>,
}

/// `pcv bench --window`: each of `opts`' point counts made by `source` and uploaded, then timed by
/// [`run`] with a table row a result, and the results written as JSON to `json`.
pub fn run_all(
    rasterizer: &mut dyn Rasterizer,
    opts: &BenchOptions,
    source: impl Fn(u64) -> PointCloud,
    json: Option<&std::path::Path>,
) -> Result<(), BenchError> {
    let mut all = Vec::new();
    println!("{}", table_header());
    for &n in &opts.point_counts {
        let cloud = source(n);
        super::upload_filtered(rasterizer, &cloud, &opts.filter)?;
        all.extend(run(rasterizer, &cloud, opts, |res| println!("{}", table_row(res)))?);
    }
    if let Some(p) = json {
        let v = serde_json::json!({ "backend": rasterizer.name(), "window": all });
        super::write_json(p, &v, &rasterizer.description())?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// Times `cloud` (uploaded to `rasterizer`) in a window at every pose, in every mode of `opts`.
pub fn run(
    rasterizer: &mut dyn Rasterizer,
    cloud: &PointCloud,
    opts: &BenchOptions,
    mut on_result: impl FnMut(&WindowResult),
) -> Result<Vec<WindowResult>, BenchError> {
    let mut out = Vec::new();
    let look = opts.looks.first().copied().unwrap_or_default();
    for sc in scenarios(cloud) {
        for &mode in &opts.modes {
            let mut vo = crate::viewer::ViewerOptions::for_cloud(cloud);
            vo.size_px = (opts.width_px, opts.height_px);
            vo.vsync = false;
            vo.continuous = true;
            vo.frames = Some((opts.warmup_frames + opts.timed_frames).max(2) as u64);
            vo.camera = Camera::start_for(cloud, Some(sc.pose));
            vo.mode = mode;
            vo.look = look;
            // Full-resolution frames only (the camera stands still anyway).
            vo.frame_target_ms = None;
            let s = crate::viewer::run(cloud, rasterizer, vo, None).map_err(|e| BenchError::Window(e.to_string()))?;
            let r = WindowResult {
                points: rasterizer.num_points(),
                mode,
                pose: sc.name.to_string(),
                width: opts.width_px,
                height: opts.height_px,
                frames: s.frames,
                gpu_total_ms: s.gpu_stages_ms.iter().map(|(_, ms)| ms).sum(),
                stages_ms: s.gpu_stages_ms,
                wall_ms: s.mean_frame_ms,
                interop_fallback: s.interop_fallback,
            };
            on_result(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:>13} {:>9} {:>9} {:>10} {:>12} {:>10}  {}",
        "points",
        "mode",
        "pose",
        "size",
        "GPU frame ms",
        "wall ms",
        "ms per stage, median (CUDA events, GL timestamps; the CPU backend's passes are CPU time)"
    )
}

/// One table line.
pub fn table_row(r: &WindowResult) -> String {
    let stages = r.stages_ms.iter().map(|(n, ms)| format!("{n} {ms:.3}")).collect::<Vec<_>>().join(", ");
    let note = r.interop_fallback.as_deref().map_or(String::new(), |w| format!("  [host path: {w}]"));
    format!(
        "{:>13} {:>9} {:>9} {:>10} {:>12.3} {:>10.3}  {stages}{note}",
        r.points,
        r.mode.name(),
        r.pose,
        format!("{}x{}", r.width, r.height),
        r.gpu_total_ms,
        r.wall_ms
    )
}
