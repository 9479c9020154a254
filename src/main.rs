//! The `pcv` command line: a thin layer over the library (see `pcv --help`).
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use pcv::camera::{CameraFrame, ControllerKind, PoseArg, StartOptions, UpChoice};
use pcv::cloud::attributes::{auto_color, recolor, ColorMode};
use pcv::cloud::{load, scene, PointCloud};
use pcv::render::look::{Background, Look, LookOverrides, PointSize, SplatMethod};
use pcv::render::multi::{Gpus, MultiRasterizer};
use pcv::render::{make_rasterizer, BackendChoice, Rasterizer, RenderMode};
use std::path::PathBuf;

/// pcv: a real-time point-cloud viewer. Points are rasterized by CUDA kernels (clear, atomic-min depth,
/// color) straight into the window's pixel buffer, or by their CPU twin where no GPU is present.
///
/// With no FILES it shows the built-in scene: ten random cylinders of --points points.
#[derive(Parser, Debug)]
#[command(name = "pcv", version, after_help = pcv::input::keymap::help_text(), args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    view: ViewArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Render one frame with no window and no GL, and write it as a PNG.
    Render(RenderArgs),
    /// Time the rasterizer on six fixed poses (start, close-up, far, top, grazing, inside) and print a table.
    Bench(BenchArgs),
    /// Compare two PNGs of the same size: count the pixels whose RGB differ (exit 1 if any do).
    Diff(DiffArgs),
    /// Describe point files: format and variant, point count, bounds in the file's coordinates, attributes.
    Info(InfoArgs),
    /// Convert point files (several are merged) to PLY, LAS, LAZ, XYZ/TXT/CSV or raw records (.bin).
    Convert(ConvertArgs),
    /// Fly a camera path with no window and write the frames as PNGs (and a video when ffmpeg is on PATH).
    Record(RecordArgs),
}

#[derive(Args, Debug)]
struct DiffArgs {
    a: PathBuf,
    b: PathBuf,
    /// Only compare this region: x,y,width,height in pixels from the top-left corner.
    #[arg(long, value_delimiter = ',')]
    region: Option<Vec<u32>>,
    /// Write an image of the differences (white where RGB differ).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct InfoArgs {
    /// Point files (PLY, LAS/LAZ, PCD, E57, XYZ/TXT/CSV/PTS, raw .bin), or COPC URLs (http:// or https://).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print JSON (an array, one object per file) instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// Input point files, merged into one cloud.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output file; its extension picks the format: .ply .las .laz .copc.laz .xyz .txt .csv .bin
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Args, Debug, Clone)]
struct SourceArgs {
    /// Point files to show together: PLY, LAS/LAZ, PCD, E57, XYZ/TXT/CSV/PTS, raw .bin/.pcv.
    files: Vec<PathBuf>,
    /// How loaded files' points are colored (default: the files' colors; intensity or elevation
    /// when every point of the files has one color, as files written without colors do).
    #[arg(long, value_enum)]
    color: Option<ColorMode>,
    /// Points in the built-in scene (suffixes k, M, B: 10M = 10,000,000).
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    points: u64,
    /// Seed of the built-in scene: the same seed gives the same points on every backend.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, help = pcv::render::platform::BACKEND_HELP)]
    backend: BackendChoice,
    /// Load at most this many of the files' points, a uniform subsample spread over the whole cloud
    /// (suffixes k, M, B); for clouds larger than the GPU holds (pcv says how many fit).
    #[arg(long, value_parser = parse_positive_count)]
    max_points: Option<u64>,
    /// Level of detail: draw the cloud from an octree, a node at a time, under a point budget (the
    /// built-in scene and files get an octree built in memory).
    #[arg(long)]
    lod: bool,
    /// Points drawn at most with level of detail (implies --lod; suffixes k, M, B). Default: half the
    /// free GPU memory at 20 bytes a point, at most 200M; 4M on the CPU backend.
    #[arg(long, value_parser = parse_count)]
    point_budget: Option<u64>,
    /// GPUs to split the cloud across (N or all): each renders its share, NCCL composites them.
    #[arg(long, value_parser = Gpus::parse, default_value = "1")]
    gpus: Gpus,
    /// Shares of the cloud per GPU, composited like GPUs (to try the composite on one GPU).
    #[arg(long, default_value_t = 1)]
    gpu_shares: usize,
}

/// How points and the background look (defaults: the prototype's look for the built-in scene; adaptive
/// point sizes, eye-dome lighting and a soft gradient for files).
#[derive(Args, Debug, Clone, Default)]
struct LookArgs {
    /// Point size in pixels, 1..16, or `adaptive` (by the cloud's point spacing at each point's distance,
    /// up to 8 px; `adaptive:MAX` for another limit). Default: 1 for the built-in scene, adaptive for files.
    #[arg(long, value_parser = PointSize::parse)]
    point_size: Option<PointSize>,
    /// Eye-dome lighting: shade by depth differences to neighbouring pixels (default on for files).
    #[arg(long, overrides_with = "no_edl")]
    edl: bool,
    /// No eye-dome lighting.
    #[arg(long)]
    no_edl: bool,
    /// EDL strength (1 = Potree's default; turns EDL on).
    #[arg(long)]
    edl_strength: Option<f32>,
    /// EDL neighbour distance in pixels (1.4 = Potree's default; turns EDL on).
    #[arg(long)]
    edl_radius: Option<f32>,
    /// Background: black, gray, white, R,G,B, gradient, or gradient:R,G,B:R,G,B (top, then bottom).
    /// Default: black for the built-in scene, a soft dark gradient for files.
    #[arg(long, value_parser = Background::parse)]
    background: Option<Background>,
    /// How points larger than a pixel are drawn: gather (a post pass over the visible points) or
    /// scatter (each point writes its disk in the raster pass; vis mode only, for comparison).
    #[arg(long, value_enum)]
    splat: Option<SplatMethod>,
}

impl LookArgs {
    fn overrides(&self) -> LookOverrides {
        LookOverrides {
            point_size: self.point_size,
            edl: if self.no_edl {
                Some(false)
            } else if self.edl {
                Some(true)
            } else {
                None
            },
            edl_strength: self.edl_strength,
            edl_radius_px: self.edl_radius,
            background: self.background,
            splat: self.splat,
        }
    }

    fn look_for(&self, cloud: &PointCloud) -> Look {
        Look::for_cloud(cloud.scene.is_some(), &self.overrides())
    }
}

#[derive(Args, Debug)]
struct ViewArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    look: LookArgs,
    /// Window size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1280x720")]
    size: (u32, u32),
    #[command(flatten)]
    camera: CameraArgs,
    /// The camera controller to start with (default: orbit for files, fly for the built-in scene; O switches).
    #[arg(long, value_enum)]
    controller: Option<ControllerKind>,
    /// Fly this camera path from the start (JSON keyframes; see `pcv record`). Space pauses it.
    #[arg(long)]
    path: Option<PathBuf>,
    /// Exit after this many frames (for scripted runs).
    #[arg(long)]
    frames: Option<u64>,
    /// Save the last frame as a PNG.
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// Leave the overlay out (of the window and of --screenshot).
    #[arg(long)]
    no_overlay: bool,
    /// Render mode to start with (M cycles): culled (the default) = the visibility buffer drawn from the
    /// batches that can show (frustum and occlusion culling), the fastest mode whose image equals the
    /// reference's except at exact depth ties; quant = culled reading 4-byte coordinates where they
    /// move no point by more than half a pixel; vis = every point, no culling; reference = the design's
    /// three passes.
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    mode: RenderMode,
    /// Do not wait for the display's refresh (vsync is on for interactive use, off for --frames runs).
    #[arg(long)]
    no_vsync: bool,
    /// Render every frame, even when nothing changes (by default an idle window waits for input).
    #[arg(long)]
    continuous: bool,
    /// Replay input from a JSON script (for tests and demos): [{"frame": 5, "type": "key", "key": "W", "down": true}, ...].
    #[arg(long, value_name = "FILE")]
    input_script: Option<PathBuf>,
    /// Write one JSON line per frame drawn: camera, picked point, measurement (for tests).
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
struct CameraArgs {
    /// Start pose: x,y,z,yaw_deg,pitch_deg, the eye in file coordinates (see --camera-frame); yaw and
    /// pitch turn about the up axis (with z up yaw 0 looks along +x, 90 along +y); K prints it.
    #[arg(long, value_parser = PoseArg::parse, allow_hyphen_values = true)]
    camera: Option<PoseArg>,
    /// Which coordinates --camera is in: the files' own (as `pcv info` prints them) or pcv's local ones.
    #[arg(long, value_enum, default_value_t = CameraFrame::File)]
    camera_frame: CameraFrame,
    /// The up axis: z, y, x, -z, -y, -x, or auto (z for LAS/LAZ/E57 and georeferenced files, else a
    /// clearly thin axis, else y, as mesh tools write; U cycles it in the window).
    #[arg(long, value_parser = parse_up, allow_hyphen_values = true, default_value = "auto")]
    up: UpChoice,
}

impl CameraArgs {
    fn start(&self, size: (u32, u32)) -> StartOptions {
        StartOptions {
            pose: self.camera,
            frame: self.camera_frame,
            up: self.up,
            aspect: size.0 as f32 / size.1.max(1) as f32,
        }
    }
}

fn parse_up(s: &str) -> Result<UpChoice, String> {
    s.parse()
}

#[derive(Args, Debug)]
struct RecordArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    look: LookArgs,
    /// The camera path: {"keyframes": [{"t": 0, "camera": "x,y,z,yaw,pitch"}, ...]} (K in the window
    /// prints poses; bookmarks save as a path file).
    #[arg(long)]
    path: PathBuf,
    /// Frames per second of flight.
    #[arg(long, default_value_t = 30.0)]
    fps: f64,
    /// The directory for the frames (made if missing): frame-00000.png, ..., poses.txt, flight.mp4.
    #[arg(short, long)]
    output: PathBuf,
    /// Frame size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Which coordinates the path's cameras are in when the file does not say ("frame").
    #[arg(long, value_enum)]
    camera_frame: Option<CameraFrame>,
    /// The up axis when the path does not give one (see `pcv --help`).
    #[arg(long, value_parser = parse_up, allow_hyphen_values = true, default_value = "auto")]
    up: UpChoice,
    /// Render mode (see `pcv --help`).
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    mode: RenderMode,
    /// PNG frames only, even when ffmpeg is on PATH.
    #[arg(long)]
    no_video: bool,
    /// Measure instead of recording: fly the path in real time as fast as frames come, and write time
    /// to first frame, frame-time percentiles, time to a complete view after the stop and device memory
    /// as JSON to this file (the output directory gets refining.png and complete.png).
    #[arg(long)]
    measure: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct RenderArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    look: LookArgs,
    /// Image size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    #[command(flatten)]
    camera: CameraArgs,
    /// The PNG to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Render mode (see `pcv --help`).
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    mode: RenderMode,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Point files to time instead of the built-in scene.
    files: Vec<PathBuf>,
    /// How loaded files' points are colored (default as for the viewer).
    #[arg(long, value_enum)]
    color: Option<ColorMode>,
    /// Built-in scene sizes to time, comma separated (suffixes k, M, B).
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "10M")]
    points: Vec<u64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, help = pcv::render::platform::BACKEND_HELP)]
    backend: BackendChoice,
    /// GPU counts to time, comma separated (N or all): each count runs every scenario (e.g. 1,2).
    #[arg(long, value_delimiter = ',', value_parser = Gpus::parse, default_value = "1")]
    gpus: Vec<Gpus>,
    /// Shares of the cloud per GPU (see `pcv --help`).
    #[arg(long, default_value_t = 1)]
    gpu_shares: usize,
    /// Frame size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Untimed frames before the timed ones.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Timed frames per scenario.
    #[arg(long, default_value_t = 20)]
    frames: u32,
    /// Render modes to time, comma separated (reference = the design's three passes).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "reference")]
    mode: Vec<pcv::render::RenderMode>,
    /// Point sizes to time, comma separated (1..16 or adaptive[:MAX]).
    #[arg(long, value_delimiter = ',', value_parser = PointSize::parse, default_value = "1")]
    point_size: Vec<PointSize>,
    /// Eye-dome lighting settings to time, comma separated: off, on.
    #[arg(long, value_delimiter = ',', value_parser = parse_on_off, default_value = "off")]
    edl: Vec<bool>,
    /// Background of the timed frames (see `pcv --help`).
    #[arg(long, value_parser = Background::parse, default_value = "black")]
    background: Background,
    /// Point-size methods to time, comma separated: gather (post pass), scatter (disks in the raster
    /// pass; vis mode only).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "gather")]
    splat: Vec<SplatMethod>,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also time the prototype's numba kernels on the same points and cameras (path to seed_numba_bench.py).
    #[arg(long)]
    peer: Option<PathBuf>,
    /// Where the points for the peer are written (the temporary folder by default; a RAM disk like /dev/shm
    /// is fastest).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dump_dir: PathBuf,
    /// Keep the points written for the peer (raw 16-byte records, readable by pcv and the peer).
    #[arg(long)]
    keep_dump: bool,
    /// Print each pose's clip_from_world (16 floats, column-major: the peer's --mvp).
    #[arg(long)]
    print_mvp: bool,
    /// Draw the results as an SVG chart: frame ms against point count, a panel per pose, a line per mode
    /// (and the prototype's, with --peer).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// With --plot: chart these saved --json reports instead of running (several are merged).
    #[arg(long, num_args = 1.., requires = "plot")]
    from: Vec<PathBuf>,
    /// Time the whole frame in a real window instead (vsync off, panel on): GPU ms of each stage —
    /// map, render passes, unmap, texture copy, blit, panel — from CUDA events and GL timestamps.
    #[arg(long)]
    window: bool,
}

fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1_000u64),
        Some('m' | 'M') => (&t[..t.len() - 1], 1_000_000),
        Some('b' | 'B' | 'g' | 'G') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    };
    let v: f64 = digits.parse().map_err(|_| format!("'{s}' is not a count (examples: 200000, 10M, 1B)"))?;
    if !(v >= 0.0 && v.is_finite()) || v * mul as f64 > 1e12 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok((v * mul as f64).round() as u64)
}

/// [`parse_count`], at least 1 (a subsample of no points shows nothing).
fn parse_positive_count(s: &str) -> Result<u64, String> {
    match parse_count(s)? {
        0 => Err(format!("'{s}' keeps no points: give at least 1")),
        n => Ok(n),
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) =
        s.split_once(['x', 'X']).ok_or_else(|| format!("'{s}' is not WIDTHxHEIGHT (example: 1920x1080)"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("bad width in '{s}'"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("bad height in '{s}'"))?;
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        return Err(format!("'{s}': width and height must be 1..=16384"));
    }
    Ok((w, h))
}

fn load_cloud(files: &[PathBuf], points: u64, seed: u64, color: Option<ColorMode>) -> Result<PointCloud> {
    if files.is_empty() {
        if let Some(c) = color.filter(|c| *c != ColorMode::Rgb) {
            bail!("--color {c}: the built-in scene has only its own colors");
        }
        Ok(scene::lazy(points, seed))
    } else {
        let mut cloud = load::load_files(files)?;
        match color {
            Some(c) => recolor(&mut cloud, c)?,
            None => {
                if let Some(note) = auto_color(&mut cloud) {
                    eprintln!("pcv: {note}");
                }
            }
        }
        Ok(cloud)
    }
}

/// Host memory a file cloud may take on a backend that streams (512 MiB, or the backend's own budget:
/// the CPU one's is smaller, since it keeps its own copy); larger clouds go to the device only
/// (`PCV_HOST_BUDGET_MB` changes it).
fn host_budget_bytes(r: &dyn Rasterizer) -> u64 {
    match std::env::var("PCV_HOST_BUDGET_MB").ok().and_then(|v| v.parse::<u64>().ok()) {
        Some(mb) => mb << 20,
        None => r.host_copy_budget_bytes().unwrap_or(512 << 20),
    }
}

/// Loads `s`'s files (or the built-in scene) for `r` and uploads them. On a streaming backend, a
/// cloud that does not fit is refused before loading, and one larger than the host budget is streamed
/// to the device without a host copy; elsewhere the host cloud is loaded (`--max-points`: a uniform
/// subsample). Returns the cloud, uploaded.
fn load_and_upload(
    s: &SourceArgs,
    r: &mut dyn Rasterizer,
    prepare: impl FnOnce(&mut PointCloud),
) -> Result<PointCloud> {
    use pcv::cloud::device;
    // Several GPUs: the capacity of them all (each takes a share of the stream).
    let capacity = match s.files.is_empty() {
        false => r.stream_capacity().transpose()?,
        true => None,
    };
    let mut subsample = s.max_points;
    if let Some(cap) = capacity {
        let opts = load::LoadOptions::default();
        let plan = match device::plan(&s.files, &opts, &cap, s.max_points) {
            // Too large for the GPU: show what fits, and say how to see it all.
            Err(load::LoadError::DoesNotFit { files, points, fit_points, device, .. })
                if s.max_points.is_none() && fit_points > 0 =>
            {
                eprintln!(
                    "pcv: {files}: {points} points do not fit {device}; showing a uniform subsample of {fit_points}. To see every point, convert to COPC and stream it with level of detail: pcv convert {} -o cloud.copc.laz, then pcv cloud.copc.laz",
                    s.files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
                );
                subsample = Some(fit_points);
                device::plan(&s.files, &opts, &cap, Some(fit_points))?
            }
            other => other?,
        };
        if subsample.is_some()
            || plan.planned_points().saturating_mul(device::HOST_BYTES_PER_POINT) > host_budget_bytes(r)
        {
            let mut cloud = device::cloud(plan);
            r.upload(&cloud).context("streaming the points to the device")?;
            let note = device::finish(&mut cloud, s.color.is_none());
            if let Some(c) = s.color.filter(|c| *c != ColorMode::Rgb) {
                device::set_color(&mut cloud, c).map_err(anyhow::Error::msg)?;
            }
            if let Some(n) = &note {
                eprintln!("pcv: {n}");
            }
            if note.is_some() || s.color.is_some_and(|c| c != ColorMode::Rgb) {
                r.upload(&cloud).context("streaming the points to the device again, colored")?;
            }
            prepare(&mut cloud);
            return Ok(cloud);
        }
    }
    let mut cloud = load_cloud(&s.files, s.points, s.seed, s.color)?;
    if let Some(k) = s.max_points.filter(|_| !s.files.is_empty()) {
        load::keep_evenly(&mut cloud, k);
    }
    prepare(&mut cloud);
    r.upload(&cloud).context("uploading the points")?;
    Ok(cloud)
}

/// Whether `p` is a COPC file (its COPC info VLR, or an `http(s)://` URL, which pcv reads as COPC).
fn is_copc(p: &std::path::Path) -> bool {
    let t = p.to_string_lossy();
    if t.starts_with("http://") || t.starts_with("https://") {
        return true;
    }
    let mut head = [0u8; 375 + 54];
    std::fs::File::open(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok()
        && pcv::cloud::formats::copc::sniff(&head)
}

/// The level-of-detail scene `s` asks for (COPC files or URLs, a directory, `--lod`, `--point-budget`),
/// attached to `r`; `None` when it asks for none.
fn open_lod(s: &SourceArgs, r: &mut dyn Rasterizer) -> Result<Option<pcv::lod::LodScene>> {
    Ok(open_lod_timed(s, r)?.map(|(l, _)| l))
}

/// [`open_lod`], with the time its sources were open (before the scene and its pool were made: what
/// a COPC file's first frame counts from; an octree built in memory is not counted).
fn open_lod_timed(
    s: &SourceArgs,
    r: &mut dyn Rasterizer,
) -> Result<Option<(pcv::lod::LodScene, std::time::Instant)>> {
    use pcv::lod::{memory::MemorySource, LodOptions, LodScene};
    let named_copc = s.files.iter().any(|f| f.is_dir() || is_copc(f));
    if !(s.lod || s.point_budget.is_some() || named_copc) {
        return Ok(None);
    }
    // Each file (a directory: each point file in it) is a tile of one scene.
    let mut files = Vec::new();
    for f in &s.files {
        if f.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(f)
                .with_context(|| format!("reading the directory {}", f.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
                    p.is_file() && load::SUPPORTED_EXTENSIONS.iter().any(|(e, _)| *e == ext)
                })
                .collect();
            inside.sort();
            if inside.is_empty() {
                bail!("{}: no point files in this directory", f.display());
            }
            files.extend(inside);
        } else {
            files.push(f.clone());
        }
    }
    if !(s.lod || s.point_budget.is_some() || files.iter().any(|f| is_copc(f))) {
        return Ok(None);
    }
    let mut sources: Vec<std::sync::Arc<dyn pcv::cloud::octree::NodeSource>> = Vec::new();
    // COPC files (and URLs) stream their own octrees; other files get one built in memory.
    let (copc, other): (Vec<PathBuf>, Vec<PathBuf>) = files.into_iter().partition(|f| is_copc(f));
    for f in &copc {
        let name = f.to_string_lossy();
        sources.push(pcv::cloud::formats::copc::open(&name)?);
    }
    let groups: Vec<Vec<PathBuf>> = if other.is_empty() && copc.is_empty() {
        vec![Vec::new()]
    } else {
        other.iter().map(|f| vec![f.clone()]).collect()
    };
    for g in &groups {
        let cloud = load_cloud(g, s.points, s.seed, s.color)?;
        eprintln!("pcv: building an octree of {} points of {} in memory", cloud.len(), cloud.label);
        sources.push(std::sync::Arc::new(MemorySource::build(&cloud, pcv::lod::memory::DEFAULT_ROOT_POINTS)));
    }
    let opened_at = std::time::Instant::now();
    let (budget, how) = match s.point_budget {
        Some(b) => (b, "--point-budget".to_string()),
        None => pcv::lod::default_point_budget(r),
    };
    let mut lod = LodScene::open(sources, LodOptions::with_budget(budget))?;
    lod.attach(r).context("making the GPU node pool")?;
    eprintln!(
        "pcv: level of detail: {} points in {} tile(s), budget {budget} points ({how}), pool of {} slots ({:.2} GB)",
        lod.total_points(),
        lod.tiles(),
        lod.slots(),
        lod.slots() as f64 * 4096.0 * 20.0 / 1e9
    );
    Ok(Some((lod, opened_at)))
}

fn backend(choice: BackendChoice) -> Result<(Box<dyn Rasterizer>, Option<String>)> {
    let (r, note) = make_rasterizer(choice).context("could not start the rasterizer")?;
    if let Some(n) = &note {
        eprintln!("pcv: using the CPU backend ({n})");
    }
    Ok((r, note))
}

/// The backend for `gpus` GPUs with `shares` shares each: the one-GPU backends for one share on one
/// GPU, else the multi-GPU one (CUDA and NCCL; never the CPU).
fn backend_gpus(
    choice: BackendChoice,
    gpus: Gpus,
    shares: usize,
) -> Result<(Box<dyn Rasterizer>, Option<String>)> {
    let n = gpus.resolve();
    if shares == 0 {
        bail!("--gpu-shares must be at least 1");
    }
    if (n == 1 || (n == 0 && gpus == Gpus::All && choice != BackendChoice::Cuda)) && shares == 1 {
        return backend(choice);
    }
    if choice == BackendChoice::Cpu {
        bail!(
            "--gpus {n} --gpu-shares {shares} splits the cloud across CUDA GPUs; --backend cpu draws on the CPU only"
        );
    }
    let r = MultiRasterizer::new(n.max(1), shares).with_context(|| {
        format!("could not start {} GPU(s) with {shares} share(s) each (--gpus)", n.max(1))
    })?;
    eprintln!("pcv: {}", r.description());
    Ok((Box::new(r), None))
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("pcv: error: {e:#}");
        pcv::platform::hold_console_after_error();
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => view(cli.view),
        Some(Command::Render(a)) => render(a),
        Some(Command::Bench(a)) => bench(a),
        Some(Command::Diff(a)) => diff(a),
        Some(Command::Info(a)) => info(a),
        Some(Command::Convert(a)) => convert(a),
        Some(Command::Record(a)) => record(a),
    }
}

fn view(a: ViewArgs) -> Result<()> {
    // Fail before loading anything when there is no display to open a window on.
    pcv::viewer::check_display()?;
    let s = &a.source;
    let path = match &a.path {
        Some(p) => Some(pcv::camera::path::CameraPath::load(p)?),
        None => None,
    };
    let script = match &a.input_script {
        Some(p) => Some(pcv::input::script::InputScript::load(p)?),
        None => None,
    };
    let mut start = a.camera.start(a.size);
    if let Some(up) = path.as_ref().and_then(|p| p.up) {
        start.up = UpChoice::Axis(up);
    }
    let (mut r, note) = backend_gpus(s.backend, s.gpus, s.gpu_shares)?;
    let mut prepared = None;
    let mut lod = open_lod(s, r.as_mut())?;
    let cloud = match &lod {
        Some(l) => {
            let mut c = l.placeholder_cloud();
            prepared = Some(pcv::viewer::prepare(&mut c, &start));
            c
        }
        None => load_and_upload(s, r.as_mut(), |c| prepared = Some(pcv::viewer::prepare(c, &start)))?,
    };
    let (camera, up_reason) = prepared.context("the start camera")?;
    let opts = pcv::viewer::ViewerOptions {
        size_px: a.size,
        vsync: !a.no_vsync && a.frames.is_none(),
        frames: a.frames,
        screenshot: a.screenshot.clone(),
        overlay: !a.no_overlay,
        camera,
        up_reason,
        controller: a.controller,
        mode: a.mode,
        look: a.look.look_for(&cloud),
        spacing_m: pcv::cloud::spacing::estimate(&cloud),
        continuous: a.continuous,
        path,
        script,
        trace: a.trace.clone(),
        feed: None,
    };
    let summary = match lod.as_mut() {
        Some(l) => pcv::viewer::run_lod(&cloud, r.as_mut(), opts, note, l)?,
        None => pcv::viewer::run(&cloud, r.as_mut(), opts, note)?,
    };
    if let Some(why) = &summary.interop_fallback {
        eprintln!("pcv: frames went through host memory: {why}");
    }
    if let Some(p) = &a.screenshot {
        eprintln!(
            "pcv: {} frames, mean {:.2} ms; screenshot {}",
            summary.frames,
            summary.mean_frame_ms,
            p.display()
        );
    }
    Ok(())
}

fn render(a: RenderArgs) -> Result<()> {
    let s = &a.source;
    let started = std::time::Instant::now();
    let (mut r, _) = backend_gpus(s.backend, s.gpus, s.gpu_shares)?;
    let backend_s = started.elapsed().as_secs_f64();
    let mut prepared = None;
    let mut lod = open_lod(s, r.as_mut())?;
    let cloud = match &lod {
        Some(l) => {
            let mut c = l.placeholder_cloud();
            prepared = Some(pcv::viewer::prepare(&mut c, &a.camera.start(a.size)));
            c
        }
        None => load_and_upload(s, r.as_mut(), |c| {
            prepared = Some(pcv::viewer::prepare(c, &a.camera.start(a.size)))
        })?,
    };
    let (cam, _) = prepared.context("the start camera")?;
    let loaded_s = started.elapsed().as_secs_f64();
    let look = a.look.look_for(&cloud);
    let mut spacing_m = pcv::cloud::spacing::estimate(&cloud);
    let mut mode = a.mode;
    if let Some(l) = lod.as_mut() {
        // The view as complete as the budget allows (a minute at most).
        mode = pcv::lod::LodScene::mode_for(a.mode);
        let frame = pcv::render::FrameParams::of_camera(&cam, a.size.0, a.size.1).with_mode(mode);
        let t = std::time::Instant::now();
        loop {
            let st = l.update(r.as_mut(), &frame, cam.pose.eye)?;
            spacing_m = st.spacing_m;
            if (st.complete && st.loading == 0) || t.elapsed().as_secs() >= 60 {
                eprintln!(
                    "pcv: level of detail: {} of {} selected nodes drawn ({} points) after {:.2} s",
                    st.drawn_nodes,
                    st.selected_nodes,
                    st.drawn_points,
                    t.elapsed().as_secs_f64()
                );
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for e in l.errors() {
            eprintln!("pcv: level of detail: {e}");
        }
    }
    let (frame, stats) =
        pcv::headless::render_frame(r.as_mut(), &cam, a.size.0, a.size.1, mode, &look, spacing_m)?;
    let framed_s = started.elapsed().as_secs_f64();
    frame.write_png(&a.output)?;
    eprintln!(
        "pcv: rendered {} points at {}x{} with {} in {:.2} ms -> {}",
        stats.points,
        a.size.0,
        a.size.1,
        r.name(),
        stats.total_ms,
        a.output.display()
    );
    // Where the time to the first image went (the "on screen in N s" figure of a large file).
    let done_s = started.elapsed().as_secs_f64();
    eprintln!(
        "pcv: times: backend {:.0} ms, load and upload {:.0} ms, spacing and first frame {:.0} ms, PNG {:.0} ms; {:.2} s in all",
        backend_s * 1e3,
        (loaded_s - backend_s) * 1e3,
        (framed_s - loaded_s) * 1e3,
        (done_s - framed_s) * 1e3,
        done_s
    );
    Ok(())
}

fn record(a: RecordArgs) -> Result<()> {
    if !(a.fps.is_finite() && a.fps > 0.0 && a.fps <= 1000.0) {
        bail!("--fps must be between 0 and 1000, got {}", a.fps);
    }
    let mut path = pcv::camera::path::CameraPath::load(&a.path)?;
    if let Some(frame) = a.camera_frame {
        path.frame = frame;
    }
    let s = &a.source;
    let up = path.up.map(UpChoice::Axis).unwrap_or(a.up);
    let start = StartOptions { up, aspect: a.size.0 as f32 / a.size.1 as f32, ..Default::default() };
    let (mut r, _) = backend_gpus(s.backend, s.gpus, s.gpu_shares)?;
    let mut prepared = None;
    let mut opened_at = std::time::Instant::now();
    let mut lod = match open_lod_timed(s, r.as_mut())? {
        Some((l, t)) => {
            opened_at = t;
            Some(l)
        }
        None => None,
    };
    let cloud = match &lod {
        Some(l) => {
            let mut c = l.placeholder_cloud();
            prepared = Some(pcv::viewer::prepare(&mut c, &start));
            c
        }
        None => load_and_upload(s, r.as_mut(), |c| prepared = Some(pcv::viewer::prepare(c, &start)))?,
    };
    let (cam, _) = prepared.context("the start camera")?;
    if let Some(json) = &a.measure {
        std::fs::create_dir_all(&a.output).with_context(|| format!("making {}", a.output.display()))?;
        let fo = pcv::lod::flight::FlightOptions {
            size_px: a.size,
            mode: a.mode,
            look: a.look.look_for(&cloud),
            spacing_m: pcv::cloud::spacing::estimate(&cloud),
            settle_timeout_s: 60.0,
            refining_png: Some(a.output.join("refining.png")),
            complete_png: Some(a.output.join("complete.png")),
        };
        let report =
            pcv::lod::flight::fly(r.as_mut(), lod.as_mut(), &cam, cloud.origin, &path, &fo, opened_at)?;
        println!("{}", pcv::lod::flight::summary(&report));
        let mut v = serde_json::to_value(&report)?;
        v["date_utc"] = serde_json::json!(pcv::bench::utc_now());
        v["commit"] = serde_json::json!(env!("PCV_GIT_COMMIT"));
        v["device"] = serde_json::json!(r.description());
        std::fs::write(json, serde_json::to_string_pretty(&v)?)
            .with_context(|| format!("writing {}", json.display()))?;
        eprintln!("pcv: wrote {}", json.display());
        return Ok(());
    }
    if lod.is_some() {
        bail!("pcv record with level of detail measures flights (--measure FILE.json); for PNG frames of a streamed scene, use the window's --path");
    }
    let opts = pcv::headless::RecordOptions {
        size_px: a.size,
        fps: a.fps,
        out_dir: a.output.clone(),
        mode: a.mode,
        look: a.look.look_for(&cloud),
        spacing_m: pcv::cloud::spacing::estimate(&cloud),
        video: !a.no_video,
    };
    let summary = pcv::headless::record(r.as_mut(), &cam, cloud.origin, &path, &opts, &mut |done, total| {
        if done == total || done % 30 == 0 {
            eprint!("\rpcv: recording frame {done}/{total}");
        }
    })?;
    eprintln!();
    eprintln!(
        "pcv: {} frames of {:.2} s at {} fps ({:.1} ms a frame) -> {}",
        summary.frames,
        path.duration_s(),
        a.fps,
        summary.mean_render_ms,
        a.output.display()
    );
    match (&summary.video, &summary.video_note) {
        (Some(v), _) => eprintln!("pcv: video {}", v.display()),
        (None, Some(why)) => eprintln!("pcv: no video: {why}"),
        (None, None) => {}
    }
    Ok(())
}

fn diff(a: DiffArgs) -> Result<()> {
    use pcv::render::image_io::Frame;
    let fa = Frame::read_png(&a.a)?;
    let fb = Frame::read_png(&a.b)?;
    if (fa.width, fa.height) != (fb.width, fb.height) {
        bail!(
            "{} is {}x{} but {} is {}x{}",
            a.a.display(),
            fa.width,
            fa.height,
            a.b.display(),
            fb.width,
            fb.height
        );
    }
    let (w, h) = (fa.width, fa.height);
    let (x0, y0, rw, rh) = match a.region.as_deref() {
        Some([x, y, rw, rh]) => (*x, *y, *rw, *rh),
        Some(other) => bail!("--region takes x,y,width,height; got {} numbers", other.len()),
        None => (0, 0, w, h),
    };
    if x0.saturating_add(rw) > w || y0.saturating_add(rh) > h {
        bail!("region {x0},{y0},{rw},{rh} is outside the {w}x{h} images");
    }
    let mut differing = 0u64;
    let mut mask = vec![0xff00_0000u32; fa.pixels.len()];
    for y_top in y0..y0 + rh {
        let y = h - 1 - y_top; // frames are stored bottom-up
        for x in x0..x0 + rw {
            let i = (y * w + x) as usize;
            if (fa.pixels[i] ^ fb.pixels[i]) & 0x00ff_ffff != 0 {
                differing += 1;
                mask[i] = 0xffff_ffff;
            }
        }
    }
    let total = rw as u64 * rh as u64;
    println!("{differing} of {total} pixels differ ({:.3}%)", differing as f64 * 100.0 / total.max(1) as f64);
    if let Some(p) = &a.out {
        Frame::new(w, h, mask).write_png(p)?;
    }
    if differing > 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    if a.frames == 0 {
        bail!("--frames must be at least 1");
    }
    if !a.from.is_empty() {
        let mut results = Vec::new();
        let mut title = String::from("pcv bench");
        for f in &a.from {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            let report: pcv::bench::BenchReport = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a pcv bench --json report", f.display()))?;
            title = format!("pcv bench, {} ({}), commit {}", report.device, report.date_utc, report.commit);
            results.extend(report.results);
        }
        let plot = a.plot.as_ref().context("--from needs --plot")?;
        pcv::bench::plot::plot(&results, &title, plot)?;
        println!("wrote {}", plot.display());
        return Ok(());
    }
    let opts = pcv::bench::BenchOptions {
        point_counts: if a.files.is_empty() { a.points.clone() } else { vec![0] },
        seed: a.seed,
        files: a.files.clone(),
        width_px: a.size.0,
        height_px: a.size.1,
        warmup_frames: a.warmup,
        timed_frames: a.frames,
        modes: a.mode.clone(),
        looks: bench_looks(&a),
        peer_script: a.peer.clone(),
        dump_dir: a.dump_dir.clone(),
        keep_dump: a.keep_dump,
        print_mvp: a.print_mvp,
    };
    let seed = a.seed;
    // Files are loaded (and colored) once, before the rasterizer is timed.
    let files =
        if a.files.is_empty() || a.window { None } else { Some(load_cloud(&a.files, 0, seed, a.color)?) };
    for (gi, &gpus) in a.gpus.iter().enumerate() {
        let (mut r, _) = backend_gpus(a.backend, gpus, a.gpu_shares)?;
        println!("pcv bench: backend {} ({}), commit {}", r.name(), r.description(), env!("PCV_GIT_COMMIT"));
        if a.window {
            return bench_window(&a, r.as_mut(), &opts);
        }
        println!("{}", pcv::bench::table_header());
        let report = pcv::bench::run(
            r.as_mut(),
            &opts,
            &mut |n| match &files {
                None => Ok(scene::lazy(n, seed)),
                Some(cloud) => Ok(cloud.clone()),
            },
            |res| println!("{}", pcv::bench::table_row(res)),
        )?;
        for (n, ms) in &report.upload_ms {
            println!("upload/generate {n} points: {ms:.1} ms");
        }
        // One report per GPU count: FILE.json, or FILE-gpusN.json when several counts are timed.
        let suffixed = |p: &PathBuf| match (a.gpus.len() > 1, p.file_stem(), p.extension()) {
            (true, Some(stem), Some(ext)) => p.with_file_name(format!(
                "{}-gpus{}.{}",
                stem.to_string_lossy(),
                gpus.resolve(),
                ext.to_string_lossy()
            )),
            _ => p.clone(),
        };
        if let Some(p) = a.json.as_ref().map(suffixed) {
            let text = serde_json::to_string_pretty(&report)?;
            std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
            println!("wrote {}", p.display());
        }
        if let Some(p) = a.plot.as_ref().filter(|_| gi == 0) {
            let title =
                format!("pcv bench, {} ({}), commit {}", report.device, report.date_utc, report.commit);
            pcv::bench::plot::plot(&report.results, &title, p)?;
            println!("wrote {}", p.display());
        }
        // The devices go back before the next count opens them.
        drop(r);
    }
    Ok(())
}

/// `pcv bench --window`: each count uploaded, then every pose and mode timed in a window.
fn bench_window(a: &BenchArgs, r: &mut dyn Rasterizer, opts: &pcv::bench::BenchOptions) -> Result<()> {
    pcv::viewer::check_display()?;
    let mut all = Vec::new();
    let files = if a.files.is_empty() { None } else { Some(load_cloud(&a.files, 0, a.seed, a.color)?) };
    println!("{}", pcv::bench::window::table_header());
    for &n in &opts.point_counts {
        let cloud = match &files {
            None => scene::lazy(n, a.seed),
            Some(c) => c.clone(),
        };
        r.upload(&cloud).context("uploading the points")?;
        all.extend(pcv::bench::window::run(r, &cloud, opts, |res| {
            println!("{}", pcv::bench::window::table_row(res))
        })?);
    }
    if let Some(p) = &a.json {
        let v = serde_json::json!({
            "date_utc": pcv::bench::utc_now(),
            "commit": env!("PCV_GIT_COMMIT"),
            "backend": r.name(),
            "device": r.description(),
            "window": all,
        });
        std::fs::write(p, serde_json::to_string_pretty(&v)?)
            .with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// Every combination of the bench's point sizes, splat methods and EDL settings (scatter only where a
/// point is larger than a pixel, where it differs from gather).
fn bench_looks(a: &BenchArgs) -> Vec<Look> {
    let mut looks = Vec::new();
    for &point_size in &a.point_size {
        for &splat in &a.splat {
            for &on in &a.edl {
                let look = Look {
                    point_size,
                    edl: on.then_some(pcv::render::look::Edl::DEFAULT),
                    background: a.background,
                    splat,
                };
                if splat == SplatMethod::Gather || look.splats() {
                    looks.push(look);
                }
            }
        }
    }
    looks
}

fn info(a: InfoArgs) -> Result<()> {
    let mut failed = 0;
    let mut json = Vec::new();
    for f in &a.files {
        match pcv::info::file_report(f) {
            Ok(r) if a.json => json.push(serde_json::to_value(&r)?),
            Ok(r) => print!("{}", r.to_text()),
            Err(e) => {
                failed += 1;
                if a.json {
                    json.push(serde_json::json!({ "path": f.display().to_string(), "error": e.to_string() }));
                }
                eprintln!("pcv: error: {e}");
            }
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    if failed > 0 {
        bail!("{failed} of {} files could not be read", a.files.len());
    }
    Ok(())
}

fn convert(a: ConvertArgs) -> Result<()> {
    let t0 = std::time::Instant::now();
    let s = pcv::convert::convert(&a.inputs, &a.output, &load::LoadOptions::default())?;
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "pcv: wrote {} points to {} ({} bytes; {}) in {secs:.2} s ({:.2} M points/s)",
        s.points,
        a.output.display(),
        s.bytes,
        s.how,
        s.points as f64 / secs.max(1e-9) / 1e6
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_sizes_parse() {
        assert_eq!(parse_count("10M"), Ok(10_000_000));
        assert_eq!(parse_count("1B"), Ok(1_000_000_000));
        assert_eq!(parse_count("2.5k"), Ok(2500));
        assert_eq!(parse_count("123"), Ok(123));
        assert!(parse_count("ten").is_err());
        assert_eq!(parse_positive_count("3M"), Ok(3_000_000));
        assert!(parse_positive_count("0").unwrap_err().contains("at least 1"));
        assert!(parse_count("-5").is_err());
        assert_eq!(parse_size("1920x1080"), Ok((1920, 1080)));
        assert!(parse_size("0x10").is_err());
        assert!(parse_size("1920").is_err());
    }
}
