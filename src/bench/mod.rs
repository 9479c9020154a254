//! `pcv bench`: timed scenarios, a table, JSON, and the prototype's kernels as a peer.
//!
//! How it works: for each point count, the cloud (the built-in scene, made by the backend itself, or the
//! given files) is uploaded once; then each scenario — a named pose: `start` (the viewer's start pose),
//! `close-up` (inside the cloud), `far` (the cloud small in the middle of the screen) — renders warm-up
//! frames, then timed frames. Pass times come from the backend's [`FrameStats`] (CUDA events on the GPU,
//! the wall clock on the CPU); the frame time is clear + depth + color. We report the median and min per
//! pass and per frame, points per second, and achieved bandwidth: the bytes of point data the mode
//! reads ([`point_bytes_read`]: 32 a point for the reference's two passes, 16 packed, 12 vis, 12 for each
//! point of an unculled batch in culled/dedup, 4 or 12 for each point of an unculled batch in quant)
//! over the median frame time, also as a fraction of the device's copy bandwidth, which the bench
//! measures first (a device-to-device copy, read + write counted). The upload's preprocessing (spatial
//! sort, batches, quantization) is timed apart. With CUDA, each mode's depth buffer is compared with the
//! reference mode's at the same pose (the reference runs first): equal depth buffers mean the images
//! differ only at exact depth ties. Each mode is timed with every look asked for (`--point-size`,
//! `--edl`: the post passes' times appear as their own passes) and compared with the reference mode
//! of the same look. With `--peer`, the points and each pose's `clip_from_world` go to the prototype's numba kernels
//! (`seed_numba_bench.py`) so that both render the very same frame, and the report shows the ratio.
pub mod plot;
pub mod window;

use pcv_camera::scenarios::scenarios;
use pcv_camera::FlyCamera;
use pcv_io::filter::PointFilter;
use pcv_io::PointCloud;
use pcv_render::gpu_data::BATCH_POINTS;
use pcv_render::look::{Background, Edl, Look, PointShape, PointSize, Quality, SplatMethod};
use pcv_render::{BatchCounts, FrameParams, FrameStats, Rasterizer, RenderError, RenderMode, Target};
use std::path::PathBuf;
use std::time::Instant;

/// Median and minimum of a series, in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub median_ms: f64,
    pub min_ms: f64,
}

impl Summary {
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let median = if v.len() % 2 == 1 { v[v.len() / 2] } else { (v[v.len() / 2 - 1] + v[v.len() / 2]) * 0.5 };
        Summary { median_ms: median, min_ms: v[0] }
    }
}

/// The prototype's time for the same frame.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeerResult {
    pub frame_ms_median: f64,
    pub frame_ms_min: f64,
    pub covered_pixels: u64,
    /// Peer median / our median frame time.
    pub speedup: f64,
}

/// One scenario's measurements.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioResult {
    pub points: u64,
    pub mode: RenderMode,
    /// Point size and EDL, e.g. `1px`, `3px+edl`, `adaptive:8+edl` (reports older than the looks: `1px`).
    #[serde(default = "plain_look")]
    pub look: String,
    pub pose: String,
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub passes: Vec<(String, Summary)>,
    pub frame: Summary,
    pub gpoints_per_s: f64,
    /// Bytes of point data read per frame over the median frame time.
    pub effective_gb_per_s: f64,
    /// `effective_gb_per_s` over the measured copy bandwidth.
    pub fraction_of_copy_bw: Option<f64>,
    /// Bytes of point data read per frame (see [`point_bytes_read`]).
    pub point_bytes_per_frame: f64,
    /// The batched modes' per-batch decisions in the last timed frame.
    pub batches: Option<BatchCounts>,
    /// This mode's image against the reference mode's at the same pose (CUDA backend).
    pub vs_reference: Option<ImageCheck>,
    pub clip_from_world: [f32; 16],
    pub peer: Option<PeerResult>,
}

/// A mode's frame against the reference mode's frame of the same pose.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ImageCheck {
    /// Pixels whose depth differs from the reference's (0: the images differ only at exact depth ties;
    /// `None` for modes that keep no separate depth, such as packed).
    pub depth_differing_px: Option<u64>,
    /// Pixels whose color differs from the reference's.
    pub color_differing_px: u64,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BenchReport {
    pub date_utc: String,
    pub commit: String,
    pub backend: String,
    pub device: String,
    pub upload_ms: Vec<(u64, f64)>,
    /// The upload's preprocessing (sort, batches, quantization), per point count, in ms.
    pub preprocess_ms: Vec<(u64, f64)>,
    /// The device's copy bandwidth (device-to-device, read + write), GB/s.
    pub copy_gb_per_s: Option<f64>,
    /// `perspective` or `orthographic` (`--projection`; older reports have none).
    #[serde(default = "perspective")]
    pub projection: String,
    pub results: Vec<ScenarioResult>,
}

fn perspective() -> String {
    "perspective".into()
}

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub point_counts: Vec<u64>,
    pub seed: u64,
    pub files: Vec<PathBuf>,
    pub width_px: u32,
    pub height_px: u32,
    pub warmup_frames: u32,
    pub timed_frames: u32,
    /// Modes to time, each on every scenario.
    pub modes: Vec<RenderMode>,
    /// Looks to time each mode with (point size, EDL, background).
    pub looks: Vec<Look>,
    /// Path to `seed_numba_bench.py`, to time the prototype's kernels on the same points and cameras.
    pub peer_script: Option<PathBuf>,
    /// Where point files for the peer go (a RAM disk such as /dev/shm is best).
    pub dump_dir: PathBuf,
    /// Keep the dumped points file(s) instead of deleting them.
    pub keep_dump: bool,
    pub print_mvp: bool,
    /// Which points of the files are drawn (`--classes`, `--returns`, `--filter`, `--clip-box`):
    /// applied by the culled passes where the backend can ([`crate::session::filter_in_raster`]; the
    /// other modes then say they are unavailable), else the kept points are uploaded.
    pub filter: PointFilter,
    /// Orthographic poses ([`pcv_camera::Camera::set_projection`] of each).
    pub ortho: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Load(#[from] pcv_io::load::LoadError),
    #[error("peer {script}: {message}")]
    Peer { script: String, message: String },
    #[error("the windowed bench: {0}")]
    Window(String),
    #[error("{path}: {message}")]
    Report { path: String, message: String },
}

/// Where the report of one GPU count goes: `p`, or `p` with `-gpusN` before its extension when several
/// counts are timed.
pub fn report_path(p: &std::path::Path, several: bool, gpus: usize) -> PathBuf {
    match (several, p.file_stem(), p.extension()) {
        (true, Some(stem), Some(ext)) => {
            p.with_file_name(format!("{}-gpus{gpus}.{}", stem.to_string_lossy(), ext.to_string_lossy()))
        }
        _ => p.to_path_buf(),
    }
}

/// Writes `report` as JSON to `path`, with the date, the commit and `device` added to its fields.
pub fn write_json(path: &std::path::Path, report: &impl serde::Serialize, device: &str) -> Result<(), BenchError> {
    let report_error = |message: String| BenchError::Report { path: path.display().to_string(), message };
    let mut v = serde_json::to_value(report).map_err(|e| report_error(e.to_string()))?;
    v["date_utc"] = serde_json::json!(utc_now());
    v["commit"] = serde_json::json!(GIT_COMMIT);
    v["device"] = serde_json::json!(device);
    let text = serde_json::to_string_pretty(&v).map_err(|e| report_error(e.to_string()))?;
    std::fs::write(path, text).map_err(|e| report_error(e.to_string()))
}

/// The commit the binary was built from (`build.rs`), for reports.
pub const GIT_COMMIT: &str = pcv_render::GIT_COMMIT;

/// Every combination of the bench's point sizes, shapes, splat methods and EDL settings (shapes and
/// scatter only where a point is larger than a pixel, where they differ), on `background`. No sizes or
/// no EDL settings: the built-in scene's look (1 px, no EDL), or for `files` their default look and the
/// 1-pixel frame it is compared with (1 px and adaptive, each without and with EDL).
pub fn looks(
    point_sizes: &[PointSize],
    shapes: &[PointShape],
    splats: &[SplatMethod],
    edl: &[bool],
    background: Background,
    files: bool,
) -> Vec<Look> {
    const ADAPTIVE: PointSize = PointSize::Adaptive { max_px: pcv_render::look::DEFAULT_ADAPTIVE_MAX_PX };
    let point_sizes = match (point_sizes.is_empty(), files) {
        (false, _) => point_sizes,
        (true, false) => &[PointSize::Fixed(1)][..],
        (true, true) => &[PointSize::Fixed(1), ADAPTIVE][..],
    };
    let edl = match (edl.is_empty(), files) {
        (false, _) => edl,
        (true, false) => &[false][..],
        (true, true) => &[false, true][..],
    };
    let shapes = if shapes.is_empty() { &[PointShape::Round][..] } else { shapes };
    let mut looks = Vec::new();
    for &point_size in point_sizes {
        for (k, &shape) in shapes.iter().enumerate() {
            for &splat in splats {
                for &on in edl {
                    let look = Look {
                        point_size,
                        shape,
                        edl: on.then_some(Edl::DEFAULT),
                        background,
                        splat,
                        quality: Quality::Standard,
                    };
                    let splats = look.splats();
                    if splats || (splat == SplatMethod::Gather && k == 0) {
                        looks.push(look);
                    }
                }
            }
        }
    }
    looks
}

/// Each of `looks` in each of `qualities` (in that order: every look in the first quality, then the
/// next); none: as they are.
pub fn with_qualities(looks: Vec<Look>, qualities: &[Quality]) -> Vec<Look> {
    if qualities.is_empty() {
        return looks;
    }
    qualities.iter().flat_map(|&quality| looks.iter().map(move |l| Look { quality, ..*l })).collect()
}

/// Uploads `cloud` with `filter` applied: by the culled passes where the backend can (every point
/// uploaded), else the kept points; says which.
pub(crate) fn upload_filtered(
    r: &mut dyn Rasterizer,
    cloud: &PointCloud,
    filter: &PointFilter,
) -> Result<(), BenchError> {
    if filter.is_empty() {
        return Ok(r.upload(cloud)?);
    }
    let t = Instant::now();
    if r.raster_filters() && crate::session::raster_filter_fits(cloud, filter) {
        r.upload(cloud)?;
        if crate::session::filter_in_raster(r, cloud, filter, &crate::session::filter_columns(cloud))? {
            println!(
                "pcv bench: {}: applied by the culled passes to all {} points (upload and filter columns {:.1} ms; the other modes are unavailable)",
                filter.describe(),
                cloud.len(),
                t.elapsed().as_secs_f64() * 1e3
            );
            return Ok(());
        }
    }
    let (shown, k) = pcv_io::filter::shown(cloud, filter);
    println!(
        "pcv bench: {}: {} of {} points kept on the host in {:.1} ms ({} of {} groups of {} skipped, {} kept whole)",
        filter.describe(),
        k.points,
        cloud.len(),
        t.elapsed().as_secs_f64() * 1e3,
        k.groups_skipped,
        k.groups_skipped + k.groups_whole + k.groups_tested,
        pcv_io::filter::GROUP_POINTS,
        k.groups_whole
    );
    Ok(r.upload(&shown)?)
}

/// Runs every scenario at every point count; `make_cloud` makes the cloud for a count.
pub fn run(
    rasterizer: &mut dyn Rasterizer,
    opts: &BenchOptions,
    make_cloud: &mut dyn FnMut(u64) -> Result<PointCloud, BenchError>,
    mut on_result: impl FnMut(&ScenarioResult),
) -> Result<BenchReport, BenchError> {
    let mut report = BenchReport {
        date_utc: utc_now(),
        commit: GIT_COMMIT.to_string(),
        backend: rasterizer.name().to_string(),
        device: rasterizer.description(),
        upload_ms: Vec::new(),
        preprocess_ms: Vec::new(),
        copy_gb_per_s: None,
        projection: if opts.ortho { "orthographic" } else { "perspective" }.into(),
        results: Vec::new(),
    };
    if let Some(gb_s) = rasterizer.measure_copy_gb_per_s(COPY_BENCH_BYTES, 5) {
        let gb_s = gb_s?;
        println!("device-to-device copy of {} MiB: {gb_s:.0} GB/s (read + write)", COPY_BENCH_BYTES >> 20);
        report.copy_gb_per_s = Some(gb_s);
    }
    // The reference runs first at each pose, so that the other modes can be checked against it.
    let mut modes = opts.modes.clone();
    modes.sort_by_key(|&m| m != RenderMode::Reference);
    for &count in &opts.point_counts {
        let cloud = make_cloud(count)?;
        let t = Instant::now();
        upload_filtered(rasterizer, &cloud, &opts.filter)?;
        let n = rasterizer.num_points();
        report.upload_ms.push((n, t.elapsed().as_secs_f64() * 1e3));
        if let Some(ms) = rasterizer.preprocess_ms() {
            println!(
                "upload of {n} points: {:.1} ms, of which preprocessing {ms:.1} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            report.preprocess_ms.push((n, ms));
        }
        let dump = match &opts.peer_script {
            Some(_) => Some(dump_points(rasterizer, &cloud, opts, n)?),
            None => None,
        };
        let spacing_m = if opts.looks.iter().any(|l| matches!(l.point_size, PointSize::Adaptive { .. })) {
            pcv_io::spacing::estimate(&cloud)
        } else {
            0.0
        };
        let looks = if opts.looks.is_empty() { vec![Look::PLAIN] } else { opts.looks.clone() };
        for sc in scenarios(&cloud) {
            let mut cam = FlyCamera::start_for(&cloud, Some(sc.pose));
            cam.set_projection(opts.ortho);
            let clip_from_world = cam.clip_from_world(opts.width_px, opts.height_px);
            if opts.print_mvp {
                println!("mvp {} {}: {}", n, sc.name, mvp_arg(&clip_from_world.to_cols_array()));
            }
            let mut peer: Option<PeerResult> = None;
            // The reference mode's depth and colours at this pose, for each look.
            let mut references: Vec<Option<(Vec<u32>, Vec<u32>)>> = vec![None; looks.len()];
            for &mode in &modes {
                for (li, look) in looks.iter().enumerate() {
                    if look.splat == pcv_render::look::SplatMethod::Scatter && mode != RenderMode::Vis && look.splats()
                    {
                        continue; // only the vis mode scatters; the others would repeat the gather's run
                    }
                    if look.quality == Quality::High && !pcv_render::look::quality_modes(mode) {
                        continue; // reference and packed draw standard quality: the standard run says it
                    }
                    let frame = FrameParams::new(clip_from_world, opts.width_px, opts.height_px)
                        .with_mode(mode)
                        .with_look(*look)
                        .with_depth_range(cam.depth_range().near, cam.depth_range().far)
                        .with_spacing(spacing_m);
                    let reference = &mut references[li];
                    let mut pixels = vec![0u32; frame.num_pixels()];
                    let mut stats: Vec<FrameStats> = Vec::new();
                    let mut unavailable = None;
                    for i in 0..opts.warmup_frames + opts.timed_frames {
                        match rasterizer.render(&frame, Target::Host(&mut pixels)) {
                            Ok(s) if i >= opts.warmup_frames => stats.push(s),
                            Ok(_) => {}
                            // A mode this upload cannot draw (a scene prepared a chunk at a time keeps no
                            // 16-byte points for reference and packed): say so and go on.
                            Err(RenderError::ModeUnavailable { mode, reason }) => {
                                unavailable = Some(format!(
                                    "{n} points, {} {}: {mode} unavailable: {reason}",
                                    sc.name,
                                    look_label(look)
                                ));
                                break;
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    if let Some(why) = unavailable {
                        println!("skipped: {why}");
                        continue;
                    }
                    let mut r = summarize(n, mode, sc.name, opts, &stats, clip_from_world.to_cols_array());
                    r.look = look_label(look);
                    r.fraction_of_copy_bw = report.copy_gb_per_s.map(|c| r.effective_gb_per_s / c);
                    if let Some(depth) = rasterizer.device_depth_bits() {
                        let depth = depth?;
                        match &*reference {
                            None if mode == RenderMode::Reference => *reference = Some((depth, pixels.clone())),
                            Some((ref_depth, ref_pixels)) => {
                                let depth_differing_px = (mode != RenderMode::Packed)
                                    .then(|| ref_depth.iter().zip(&depth).filter(|(a, b)| a != b).count() as u64);
                                let color_differing_px =
                                    ref_pixels.iter().zip(&pixels).filter(|(a, b)| a != b).count() as u64;
                                r.vs_reference = Some(ImageCheck { depth_differing_px, color_differing_px });
                            }
                            None => {}
                        }
                    }
                    if let (Some(script), Some(file)) = (&opts.peer_script, &dump) {
                        // The prototype runs once per pose; every mode is compared with that run.
                        if peer.is_none() {
                            peer = Some(run_peer(script, file, &r, opts)?);
                        }
                        r.peer = peer.clone().map(|p| PeerResult {
                            speedup: if r.frame.median_ms > 0.0 { p.frame_ms_median / r.frame.median_ms } else { 0.0 },
                            ..p
                        });
                    }
                    on_result(&r);
                    report.results.push(r);
                }
            }
        }
        if let Some(file) = dump {
            if !opts.keep_dump {
                let _ = std::fs::remove_file(file);
            }
        }
    }
    Ok(report)
}

fn summarize(
    n: u64,
    mode: RenderMode,
    pose: &str,
    opts: &BenchOptions,
    stats: &[FrameStats],
    m: [f32; 16],
) -> ScenarioResult {
    let names: Vec<&'static str> = stats.first().map(|s| s.passes.iter().map(|p| p.name).collect()).unwrap_or_default();
    let passes = names
        .iter()
        .map(|name| {
            let v: Vec<f64> = stats.iter().filter_map(|s| s.pass_ms(name)).collect();
            (name.to_string(), Summary::of(&v))
        })
        .collect();
    let frame = Summary::of(&stats.iter().map(|s| s.total_ms).collect::<Vec<_>>());
    let secs = frame.median_ms / 1e3;
    let batches = stats.last().and_then(|s| s.batches);
    let bytes = point_bytes_read(mode, n, batches);
    ScenarioResult {
        points: n,
        mode,
        look: look_label(&Look::PLAIN),
        pose: pose.to_string(),
        width: opts.width_px,
        height: opts.height_px,
        frames: stats.len() as u32,
        passes,
        frame,
        gpoints_per_s: if secs > 0.0 { n as f64 / secs / 1e9 } else { 0.0 },
        effective_gb_per_s: if secs > 0.0 { bytes / secs / 1e9 } else { 0.0 },
        fraction_of_copy_bw: None,
        point_bytes_per_frame: bytes,
        batches,
        vs_reference: None,
        clip_from_world: m,
        peer: None,
    }
}

fn plain_look() -> String {
    "1px".into()
}

/// A look as the table names it: point size, then `+edl` when EDL is on.
pub fn look_label(look: &Look) -> String {
    let size = match look.point_size {
        PointSize::Fixed(n) => format!("{n}px"),
        p => p.to_string(),
    };
    let size = match look.splat {
        pcv_render::look::SplatMethod::Scatter if look.splats() => format!("{size}(scatter)"),
        _ => size,
    };
    let size = match look.shape {
        PointShape::Square if look.splats() => format!("{size}(square)"),
        _ => size,
    };
    let size = if look.edl.is_some() { format!("{size}+edl") } else { size };
    match look.quality {
        Quality::High => format!("{size}+hq"),
        Quality::Standard => size,
    }
}

/// Bytes the copy-bandwidth measurement copies.
pub const COPY_BENCH_BYTES: usize = 2 << 30;

/// Bytes of point data a frame of `mode` reads for `n` points: 16 per pass over the 16-byte points
/// (reference, packed), 12 per position (vis), and in the culled modes only the drawn batches' points,
/// 4 bytes each where the batch is read quantized (`batches` from the frame's counters; every batch
/// counted as full, the last one too). The resolve's and the boxes' reads are left out (a few MB).
pub fn point_bytes_read(mode: RenderMode, n: u64, batches: Option<BatchCounts>) -> f64 {
    let n = n as f64;
    let per_batch = BATCH_POINTS as f64;
    match (mode, batches) {
        (RenderMode::Reference, _) => 32.0 * n,
        (RenderMode::Packed, _) => 16.0 * n,
        (RenderMode::Culled | RenderMode::Quant, Some(b)) => {
            (4.0 * b.quantized as f64 * per_batch + 12.0 * b.full as f64 * per_batch).min(12.0 * n)
        }
        _ => 12.0 * n,
    }
}

/// The matrix as the peer's `--mvp` argument: 16 floats, column-major.
pub fn mvp_arg(m: &[f32; 16]) -> String {
    m.iter().map(|v| format!("{v:e}")).collect::<Vec<_>>().join(",")
}

fn dump_points(
    rasterizer: &mut dyn Rasterizer,
    cloud: &PointCloud,
    opts: &BenchOptions,
    n: u64,
) -> Result<PathBuf, BenchError> {
    let path = opts.dump_dir.join(format!("pcv-bench-{n}.bin"));
    // The points the backend holds: read back from the device for a scene the GPU made.
    let points = match rasterizer.device_points() {
        Some(points) => std::sync::Arc::new(points?),
        None => cloud.host_points(true),
    };
    pcv_io::load::write_raw(&path, &points)?;
    Ok(path)
}

fn run_peer(
    script: &PathBuf,
    points: &PathBuf,
    r: &ScenarioResult,
    opts: &BenchOptions,
) -> Result<PeerResult, BenchError> {
    let err = |message: String| BenchError::Peer { script: script.display().to_string(), message };
    let python = crate::platform::python_command();
    let out = std::process::Command::new(&python)
        .arg(script)
        .arg("--points")
        .arg(points)
        .arg("--mvp")
        .arg(mvp_arg(&r.clip_from_world))
        .args(["--width", &r.width.to_string(), "--height", &r.height.to_string()])
        .args(["--frames", &opts.timed_frames.max(5).to_string()])
        .output()
        .map_err(|e| {
            err(format!("could not start {} (set PCV_PYTHON to another interpreter): {e}", python.to_string_lossy()))
        })?;
    if !out.status.success() {
        return Err(err(format!("exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr))));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or_else(|| err("printed no JSON line".into()))?;
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| err(format!("bad JSON: {e}")))?;
    let get = |k: &str| v.get(k).and_then(|x| x.as_f64()).ok_or_else(|| err(format!("no '{k}' in {line}")));
    let median = get("frame_ms_median")?;
    Ok(PeerResult {
        frame_ms_median: median,
        frame_ms_min: get("frame_ms_min")?,
        covered_pixels: get("covered_pixels")? as u64,
        speedup: if r.frame.median_ms > 0.0 { median / r.frame.median_ms } else { 0.0 },
    })
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:>13} {:>9} {:>14} {:>9} {:>10} {:>17} {:>9} {:>8} {:>6} {:>16} {:>14}  {}",
        "points",
        "mode",
        "look",
        "pose",
        "size",
        "frame ms med/min",
        "Gpts/s",
        "GB/s",
        "%copy",
        "prototype ms (x)",
        "vs ref dz/dc",
        "passes, median ms; batches culled/occluded/quantized/full"
    )
}

/// One table line.
pub fn table_row(r: &ScenarioResult) -> String {
    let passes = r.passes.iter().map(|(n, s)| format!("{n} {:.3}", s.median_ms)).collect::<Vec<_>>().join(", ");
    let peer = r.peer.as_ref().map_or("-".to_string(), |p| format!("{:.3} ({:.1}x)", p.frame_ms_median, p.speedup));
    let copy = r.fraction_of_copy_bw.map_or("-".to_string(), |f| format!("{:.0}%", f * 100.0));
    let check = r.vs_reference.as_ref().map_or("-".to_string(), |c| {
        format!("{}/{}", c.depth_differing_px.map_or("-".to_string(), |d| d.to_string()), c.color_differing_px)
    });
    let batches = r.batches.map_or(String::new(), |b| {
        let filtered = if b.filtered > 0 { format!(", {} filtered", b.filtered) } else { String::new() };
        format!("; {}/{}/{}/{}{filtered}", b.culled, b.occluded, b.quantized, b.full)
    });
    format!(
        "{:>13} {:>9} {:>14} {:>9} {:>10} {:>17} {:>9.2} {:>8.1} {:>6} {:>16} {:>14}  {}{}",
        r.points,
        r.mode.name(),
        r.look,
        r.pose,
        format!("{}x{}", r.width, r.height),
        format!("{:.3}/{:.3}", r.frame.median_ms, r.frame.min_ms),
        r.gpoints_per_s,
        r.effective_gb_per_s,
        copy,
        peer,
        check,
        passes,
        batches
    )
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_median_and_min() {
        let s = Summary::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median_ms, s.min_ms), (2.0, 1.0));
        let s = Summary::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!((s.median_ms, s.min_ms), (2.5, 1.0));
    }

    #[test]
    fn looks_combine_sizes_splats_and_edl_scatter_only_where_it_differs() {
        use pcv_render::look::{Background, PointSize, SplatMethod};
        let sizes = [PointSize::Fixed(1), PointSize::Fixed(3)];
        let splats = [SplatMethod::Gather, SplatMethod::Scatter];
        let black = Background::Solid(pcv_render::look::rgb(0, 0, 0));
        let l = looks(&sizes, &[], &splats, &[false, true], black, false);
        // 1 px: gather only (scatter draws the same); 3 px: both; each with EDL off and on.
        assert_eq!(l.len(), 2 + 4, "{l:?}");
        assert!(l.iter().all(|k| k.splat == SplatMethod::Gather || k.point_size == PointSize::Fixed(3)));
        assert_eq!(l.iter().filter(|k| k.edl.is_some()).count(), 3);
        // Square points only where a point is larger than a pixel.
        let l = looks(&sizes, &[PointShape::Round, PointShape::Square], &splats[..1], &[false], black, false);
        assert_eq!(l.iter().map(look_label).collect::<Vec<_>>(), ["1px", "3px", "3px(square)"]);
        // Each look in each quality.
        let l = with_qualities(
            looks(&sizes, &[], &splats[..1], &[false], black, false),
            &[Quality::Standard, Quality::High],
        );
        assert_eq!(l.iter().map(look_label).collect::<Vec<_>>(), ["1px", "3px", "1px+hq", "3px+hq"]);
    }

    #[test]
    fn files_are_timed_in_their_default_look_and_at_one_pixel_unless_told() {
        let black = Background::BLACK;
        let labels = |l: Vec<Look>| l.iter().map(look_label).collect::<Vec<_>>();
        assert_eq!(labels(looks(&[], &[], &[SplatMethod::Gather], &[], black, false)), ["1px"]);
        assert_eq!(
            labels(looks(&[], &[], &[SplatMethod::Gather], &[], black, true)),
            ["1px", "1px+edl", "adaptive:8", "adaptive:8+edl"]
        );
        let one = [PointSize::Fixed(1)];
        assert_eq!(labels(looks(&one, &[], &[SplatMethod::Gather], &[], black, true)), ["1px", "1px+edl"]);
    }

    #[test]
    fn reports_of_several_gpu_counts_get_their_count_in_the_name() {
        let p = std::path::Path::new("/tmp/bench.json");
        assert_eq!(report_path(p, false, 2), p);
        assert_eq!(report_path(p, true, 2), std::path::Path::new("/tmp/bench-gpus2.json"));
    }

    #[test]
    fn utc_now_is_well_formed() {
        let s = utc_now();
        assert_eq!(s.len(), 20, "{s}");
        assert!(s.starts_with("20") && s.ends_with('Z'));
    }
}
