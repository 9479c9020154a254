//! The command line's arguments (clap): what each command takes, its defaults and help, and the value
//! parsers for counts, sizes and switches.
use clap::{Args, Parser, Subcommand};
use pcv_camera::{CameraFrame, ControllerKind, PoseArg, StartOptions, UpChoice, View};
use pcv_io::attributes::{ColorMode, Ramp};
use pcv_io::filter::{ClipBox, PointFilter, Returns, ValueRange};
use pcv_render::look::{Background, LookOverrides, PointShape, PointSize, Quality, SplatMethod};
use pcv_render::multi::Gpus;
use pcv_render::{BackendChoice, RenderMode};
use std::path::PathBuf;

/// pcv: a real-time point-cloud viewer. Points are rasterized by CUDA kernels (clear, atomic-min depth,
/// color) straight into the window's pixel buffer, or by their CPU twin where no GPU is present.
///
/// With no FILES it shows the built-in scene: ten random cylinders of --points points.
#[derive(Parser, Debug)]
#[command(name = "pcv", version, after_help = pcv::input::keymap::help_text(), args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// COPC over HTTP(S): the most one read may take, retries included (opening the URL is one), in
    /// seconds. A server that stays silent fails within it; connecting may take 5 s and a silence
    /// within a request 10 s at most (half of this when that is less).
    #[arg(long, global = true, value_name = "SECONDS", default_value_t = 20.0, value_parser = parse_seconds)]
    pub http_timeout: f64,
    #[command(flatten)]
    pub view: ViewArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
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
    /// Rasterize point files seen from above as a georeferenced GeoTIFF: a surface model (the highest
    /// point of each cell) or an orthophoto (its colour).
    Raster(RasterArgs),
}

#[derive(Args, Debug)]
pub struct RasterArgs {
    /// Point files (LAS/LAZ, PLY, PCD, E57, text, .bin), folders of them or collections (a glob in
    /// quotes, a list file .lst/.list/@FILE, a .vpc), z up.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Cell size, in the files' horizontal unit (metres, feet, ...: `pcv info` names it).
    #[arg(long)]
    pub cell: f64,
    /// What each cell holds: dsm (the highest point's height, 32-bit float, empty cells no-data) or rgb
    /// (the highest point's colour).
    #[arg(long, value_parser = pcv_io::raster::RasterKind::parse, default_value = "dsm")]
    pub what: pcv_io::raster::RasterKind,
    /// Only these classification codes (2: a terrain model from the ground points).
    #[arg(long, value_parser = parse_classes)]
    pub classes: Option<ClassList>,
    /// The files' coordinate system when they name none (EPSG:N, WKT, a .prj file): the GeoTIFF's.
    #[arg(long)]
    pub crs: Option<String>,
    /// Folders: the point files in their subfolders too.
    #[arg(long, short)]
    pub recursive: bool,
    /// The GeoTIFF to write.
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Only compare this region: x,y,width,height in pixels from the top-left corner.
    #[arg(long, value_delimiter = ',')]
    pub region: Option<Vec<u32>>,
    /// Write an image of the differences (white where RGB differ).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Point files (PLY, LAS/LAZ, PCD, E57, XYZ/TXT/CSV/PTS, raw .bin), folders of them, COPC URLs
    /// (http:// or https://), or collections: a glob in quotes ('tiles/*.laz'), a list file
    /// (.lst, .list, or @FILE: a path or URL a line) or a virtual point cloud (.vpc, local or a URL).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON (an array, one object per file) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Only the tiles' headers, read on all cores: a line a tile and the collection's sum (points,
    /// bounds, coordinate systems, tiles that failed), without reading any point.
    #[arg(long)]
    pub tiles: bool,
    /// Folders: the point files in their subfolders too.
    #[arg(long, short)]
    pub recursive: bool,
    /// The files' coordinate system, for files that name none (PLY, PCD, text) or to override theirs:
    /// EPSG:N, EPSG:H+V, WKT, PROJJSON, or a .prj/.wkt file holding one.
    #[arg(long)]
    pub crs: Option<String>,
}

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// Input point files (or folders of them, globs, list files, .vpc collections), merged into one cloud.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Folders: the point files in their subfolders too.
    #[arg(long, short)]
    pub recursive: bool,
    /// Output file; its extension picks the format: .ply .las .laz .copc.laz .xyz .txt .csv .bin
    #[arg(short, long)]
    pub output: PathBuf,
    /// Which points are written (as the viewer shows them with the same options).
    #[command(flatten)]
    pub filter: FilterArgs,
}

/// Which points are shown (or written): classes, returns, ranges, clip boxes.
#[derive(Args, Debug, Clone, Default)]
pub struct FilterArgs {
    /// Only these classification codes: 2,6 or 2-5,9.
    #[arg(long, value_parser = parse_classes)]
    pub classes: Option<ClassList>,
    /// Only these returns of each pulse.
    #[arg(long, value_enum)]
    pub returns: Option<Returns>,
    /// Only points whose attribute lies in a range: NAME:MIN..MAX (intensity, gps_time,
    /// scan_angle, ...; an end may be left out). Repeatable: every range must hold.
    #[arg(long = "filter", value_parser = parse_value_range, allow_hyphen_values = true)]
    pub filters: Vec<ValueRange>,
    /// Keep the points inside a box in the file's coordinates: XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX (add
    /// :outside to keep those outside it). Repeatable: a point inside any keep-inside box stays.
    #[arg(long = "clip-box", value_parser = parse_clip_box, allow_hyphen_values = true)]
    pub clip_boxes: Vec<ClipBox>,
}

impl FilterArgs {
    /// The point filter the options describe.
    pub fn filter(&self) -> PointFilter {
        let mut f = PointFilter::default();
        if let Some(c) = &self.classes {
            f.show_only_classes(&c.0);
        }
        f.returns = self.returns.unwrap_or_default();
        f.ranges = self.filters.clone();
        f.boxes = self.clip_boxes.clone();
        f
    }
}

#[derive(Args, Debug, Clone)]
pub struct SourceArgs {
    /// Point files to show together: PLY, LAS/LAZ, PCD, E57, XYZ/TXT/CSV/PTS, raw .bin/.pcv; a folder
    /// stands for the point files in it; a glob in quotes ('tiles/*.laz'), a list file (.lst, .list,
    /// @FILE) or a virtual point cloud (.vpc, local or a URL) for the tiles they name.
    pub files: Vec<PathBuf>,
    /// Folders: the point files in their subfolders too.
    #[arg(long, short)]
    pub recursive: bool,
    /// The files' coordinate system, for files that name none (PLY, PCD, text; a .prj beside a file is
    /// read by itself) or to override theirs: EPSG:N, EPSG:H+V (horizontal + vertical), WKT, PROJJSON,
    /// or a .prj/.wkt file holding one. Lengths are shown in its units.
    #[arg(long)]
    pub crs: Option<String>,
    /// How loaded files' points are colored (default: the files' colors; intensity or elevation
    /// when every point of the files has one color, as files written without colors do): rgb,
    /// intensity, elevation, classification, or any field a file has, as laspy and PDAL name it
    /// (gps_time, return_number, number_of_returns, point_source_id, scan_angle, user_data, nir) or by
    /// its own name (LAS extra bytes, PLY and PCD properties: `pcv info FILE` lists them).
    #[arg(long, value_parser = ColorMode::parse, visible_alias = "color-by")]
    pub color: Option<ColorMode>,
    /// The ramp a field's colours take (default: categorical for returns and IDs, diverging for scan
    /// angles, gray for NIR, viridis for the rest).
    #[arg(long, value_enum)]
    pub ramp: Option<Ramp>,
    /// The values a field's ramp spans, MIN..MAX (default: the 2nd..98th percentile).
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    pub range: Option<(f64, f64)>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Points in the built-in scene (suffixes k, M, B: 10M = 10,000,000).
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    pub points: u64,
    /// Seed of the built-in scene: the same seed gives the same points on every backend.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, help = pcv_render::platform::BACKEND_HELP)]
    pub backend: BackendChoice,
    /// Load at most this many of the files' points, a uniform subsample spread over the whole cloud
    /// (suffixes k, M, B); for clouds larger than the GPU holds (pcv says how many fit).
    #[arg(long, value_parser = parse_positive_count)]
    pub max_points: Option<u64>,
    /// Level of detail: draw the cloud from an octree, a node at a time, under a point budget (the
    /// built-in scene and files get an octree built in memory).
    #[arg(long, conflicts_with = "no_lod")]
    pub lod: bool,
    /// Draw every point of large files in the window, without level of detail (which the CPU backend
    /// takes by itself for files of more than 5M points a core).
    #[arg(long)]
    pub no_lod: bool,
    /// Points drawn at most with level of detail (implies --lod; suffixes k, M, B). Default: half the
    /// free GPU memory at 20 bytes a point, at most 200M; 4M on the CPU backend.
    #[arg(long, value_parser = parse_count)]
    pub point_budget: Option<u64>,
    /// GPUs to split the cloud across (N or all): each renders its share, NCCL composites them.
    #[arg(long, value_parser = Gpus::parse, default_value = "1")]
    pub gpus: Gpus,
    /// Shares of the cloud per GPU, composited like GPUs (to try the composite on one GPU).
    #[arg(long, default_value_t = 1)]
    pub gpu_shares: usize,
}

impl SourceArgs {
    /// What to show: the files, or the built-in scene without files.
    pub fn source(&self) -> pcv::session::Source {
        pcv::session::Source::from_args(&self.files, self.points, self.seed)
    }

    pub fn backend(&self) -> pcv::session::BackendOptions {
        pcv::session::BackendOptions { choice: self.backend, gpus: self.gpus, gpu_shares: self.gpu_shares }
    }

    /// How to open it, starting the camera with `start`.
    pub fn open_options(&self, start: StartOptions) -> pcv::session::OpenOptions {
        pcv::session::OpenOptions {
            color: self.color,
            max_points: self.max_points,
            lod: self.lod,
            point_budget: self.point_budget,
            start,
            recursive: self.recursive,
            auto_lod: false,
            crs: self.crs.clone(),
            field_look: pcv_io::attributes::FieldLook { ramp: self.ramp, range: self.range, ..Default::default() },
            filter: self.filter.filter(),
            raster_filter: false,
        }
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds between 0 and 86400")),
    }
}

fn parse_range(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("'{s}': expected MIN..MAX"))?;
    let num = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or(format!("'{t}' is not a number"));
    let (lo, hi) = (num(a)?, num(b)?);
    if lo >= hi {
        return Err(format!("'{s}': MIN must be below MAX"));
    }
    Ok((lo, hi))
}

/// Classification codes (`--classes`).
#[derive(Clone, Debug, PartialEq)]
pub struct ClassList(pub Vec<u8>);

fn parse_classes(s: &str) -> Result<ClassList, String> {
    pcv_io::filter::parse_classes(s).map(ClassList).map_err(|e| e.to_string())
}

fn parse_value_range(s: &str) -> Result<ValueRange, String> {
    ValueRange::parse(s).map_err(|e| e.to_string())
}

fn parse_clip_box(s: &str) -> Result<ClipBox, String> {
    ClipBox::parse(s).map_err(|e| e.to_string())
}

/// How points and the background look (defaults: the prototype's look for the built-in scene; adaptive
/// point sizes, eye-dome lighting and a soft gradient for files).
#[derive(Args, Debug, Clone, Default)]
pub struct LookArgs {
    /// Point size in pixels, 1..16, or `adaptive` (by the cloud's point spacing at each point's distance,
    /// up to 8 px; `adaptive:MAX` for another limit). Default: 1 for the built-in scene, adaptive for files.
    #[arg(long, value_parser = PointSize::parse)]
    pub point_size: Option<PointSize>,
    /// Shape of points larger than a pixel: round (disks, the default) or square.
    #[arg(long, value_enum)]
    pub point_shape: Option<PointShape>,
    /// Eye-dome lighting: shade by depth differences to neighbouring pixels (default on for files).
    #[arg(long, overrides_with = "no_edl")]
    pub edl: bool,
    /// No eye-dome lighting.
    #[arg(long)]
    pub no_edl: bool,
    /// EDL strength (1 = Potree's default; turns EDL on).
    #[arg(long)]
    pub edl_strength: Option<f32>,
    /// EDL neighbour distance in pixels (1.4 = Potree's default; turns EDL on).
    #[arg(long)]
    pub edl_radius: Option<f32>,
    /// Background: black, gray, white, R,G,B, gradient, or gradient:R,G,B:R,G,B (top, then bottom).
    /// Default: black for the built-in scene, a soft dark gradient for files.
    #[arg(long, value_parser = Background::parse)]
    pub background: Option<Background>,
    /// How points larger than a pixel are drawn: gather (a post pass over the visible points) or
    /// scatter (each point writes its disk in the raster pass; vis mode only, for comparison).
    #[arg(long, value_enum)]
    pub splat: Option<SplatMethod>,
    /// standard (each pixel's nearest point) or high (the points within 1 % of the nearest blended:
    /// smoother, steadier images for a second pass; vis, culled and quant modes). J in the window.
    #[arg(long, value_enum)]
    pub quality: Option<Quality>,
}

impl LookArgs {
    pub fn overrides(&self) -> LookOverrides {
        LookOverrides {
            point_size: self.point_size,
            shape: self.point_shape,
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
            quality: self.quality,
        }
    }
}

#[derive(Args, Debug)]
pub struct ViewArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub look: LookArgs,
    /// Window size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1280x720")]
    pub size: (u32, u32),
    #[command(flatten)]
    pub camera: CameraArgs,
    /// The camera controller to start with (default: orbit for files, fly for the built-in scene; O switches).
    #[arg(long, value_enum)]
    pub controller: Option<ControllerKind>,
    /// Fly this camera path from the start (JSON keyframes; see `pcv record`). Space pauses it.
    #[arg(long)]
    pub path: Option<PathBuf>,
    /// Exit after this many frames (for scripted runs).
    #[arg(long)]
    pub frames: Option<u64>,
    /// Save the last frame as a PNG.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Leave the overlay out (of the window and of --screenshot).
    #[arg(long)]
    pub no_overlay: bool,
    /// Render mode to start with (M cycles): culled (the default) = the visibility buffer drawn from the
    /// batches that can show (frustum and occlusion culling), the fastest mode whose image equals the
    /// reference's except at exact depth ties; quant = culled reading 4-byte coordinates where they
    /// move no point by more than half a pixel; vis = every point, no culling; reference = the design's
    /// three passes.
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    pub mode: RenderMode,
    /// Do not wait for the display's refresh (vsync is on for interactive use, off for --frames runs).
    #[arg(long)]
    pub no_vsync: bool,
    /// Render every frame, even when nothing changes (by default an idle window waits for input).
    #[arg(long)]
    pub continuous: bool,
    /// Adaptive resolution: while the camera moves, render below the window's resolution when a frame
    /// would take longer than this, and at full resolution once it has been still for 0.2 s (0: always
    /// full resolution). Default 30; off for --frames runs (counted runs are tests: every frame full).
    #[arg(long, value_name = "MS")]
    pub frame_target_ms: Option<f64>,
    /// Replay input from a JSON script (for tests and demos): [{"frame": 5, "type": "key", "key": "W", "down": true}, ...].
    #[arg(long, value_name = "FILE")]
    pub input_script: Option<PathBuf>,
    /// Write one JSON line per frame drawn: camera, picked point, measurement (for tests).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct CameraArgs {
    /// Start pose: x,y,z,yaw_deg,pitch_deg, the eye in file coordinates (see --camera-frame); yaw and
    /// pitch turn about the up axis (with z up yaw 0 looks along +x, 90 along +y); K prints it.
    #[arg(long, value_parser = PoseArg::parse, allow_hyphen_values = true)]
    pub camera: Option<PoseArg>,
    /// Which coordinates --camera is in: the files' own (as `pcv info` prints them) or pcv's local ones.
    #[arg(long, value_enum, default_value_t = CameraFrame::File)]
    pub camera_frame: CameraFrame,
    /// The up axis: z, y, x, -z, -y, -x, or auto (z for LAS/LAZ/E57 and georeferenced files, else a
    /// clearly thin axis, else y, as mesh tools write; U cycles it in the window).
    #[arg(long, value_parser = parse_up, allow_hyphen_values = true, default_value = "auto")]
    pub up: UpChoice,
    /// Perspective, or orthographic (parallel rays: the start view framed without perspective, or the
    /// --camera pose showing the cloud's centre at the size perspective would; I or Numpad 5 switches).
    #[arg(long, value_enum, default_value_t = ProjectionArg::Perspective)]
    pub projection: ProjectionArg,
    /// With --projection ortho: the height the frame shows, in the file's units (K prints it with the
    /// pose); default: the view's framing.
    #[arg(long, value_name = "LENGTH", requires = "projection")]
    pub ortho_height: Option<f32>,
    /// Start from a standard view of the cloud instead of the oblique one: top, front, side (right),
    /// back, left, bottom or oblique, in the --projection given (Numpad 7/1/3 and V in the window).
    #[arg(long, value_parser = View::parse)]
    pub view: Option<View>,
}

/// `--projection`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectionArg {
    Perspective,
    #[value(alias = "orthographic")]
    Ortho,
}

impl CameraArgs {
    pub fn start(&self, size: (u32, u32)) -> StartOptions {
        StartOptions {
            pose: self.camera,
            frame: self.camera_frame,
            up: self.up,
            aspect: size.0 as f32 / size.1.max(1) as f32,
            ortho: self.projection == ProjectionArg::Ortho,
            ortho_height: self.ortho_height.filter(|_| self.projection == ProjectionArg::Ortho),
            view: self.view,
        }
    }
}

pub fn parse_up(s: &str) -> Result<UpChoice, String> {
    s.parse()
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub look: LookArgs,
    /// The camera path: {"keyframes": [{"t": 0, "camera": "x,y,z,yaw,pitch"}, ...]} (K in the window
    /// prints poses; bookmarks save as a path file).
    #[arg(long)]
    pub path: PathBuf,
    /// Frames per second of flight.
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// The directory for the frames (made if missing): frame-00000.png, ..., poses.txt, flight.mp4.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Frame size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    pub size: (u32, u32),
    /// Which coordinates the path's cameras are in when the file does not say ("frame").
    #[arg(long, value_enum)]
    pub camera_frame: Option<CameraFrame>,
    /// The up axis when the path does not give one (see `pcv --help`).
    #[arg(long, value_parser = parse_up, allow_hyphen_values = true, default_value = "auto")]
    pub up: UpChoice,
    /// Render mode (see `pcv --help`).
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    pub mode: RenderMode,
    /// Perspective or orthographic (the path's poses, seen with parallel rays at the start view's
    /// orthographic size).
    #[arg(long, value_enum, default_value_t = ProjectionArg::Perspective)]
    pub projection: ProjectionArg,
    /// PNG frames only, even when ffmpeg is on PATH.
    #[arg(long)]
    pub no_video: bool,
    /// Measure instead of recording: fly the path in real time as fast as frames come, and write time
    /// to first frame, frame-time percentiles, time to a complete view after the stop and device memory
    /// as JSON to this file (the output directory gets refining.png and complete.png).
    #[arg(long)]
    pub measure: Option<PathBuf>,
    /// With --measure: accept a flight some of whose nodes could not be read (named either way; the
    /// exit status is 1 without this).
    #[arg(long)]
    pub allow_partial: bool,
}

#[derive(Args, Debug)]
pub struct RenderArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub look: LookArgs,
    /// Image size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    pub size: (u32, u32),
    #[command(flatten)]
    pub camera: CameraArgs,
    /// The PNG to write.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Render mode (see `pcv --help`).
    #[arg(long, value_enum, default_value_t = RenderMode::Culled)]
    pub mode: RenderMode,
    /// Level of detail: a node that cannot be read or decoded is named and drawn without, and the
    /// exit status says so (1) unless this accepts the partial image.
    #[arg(long)]
    pub allow_partial: bool,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Point files to time instead of the built-in scene.
    pub files: Vec<PathBuf>,
    /// Perspective (the default) or orthographic: each pose seen with parallel rays, the cloud's
    /// centre at the size perspective shows it.
    #[arg(long, value_enum, default_value_t = ProjectionArg::Perspective)]
    pub projection: ProjectionArg,
    /// How loaded files' points are colored (default as for the viewer; the same names).
    #[arg(long, value_parser = ColorMode::parse, visible_alias = "color-by")]
    pub color: Option<ColorMode>,
    /// Which of the files' points are timed (as the viewer shows them with the same options).
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Built-in scene sizes to time, comma separated (suffixes k, M, B).
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "10M")]
    pub points: Vec<u64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto, help = pcv_render::platform::BACKEND_HELP)]
    pub backend: BackendChoice,
    /// GPU counts to time, comma separated (N or all): each count runs every scenario (e.g. 1,2).
    #[arg(long, value_delimiter = ',', value_parser = Gpus::parse, default_value = "1")]
    pub gpus: Vec<Gpus>,
    /// Shares of the cloud per GPU (see `pcv --help`).
    #[arg(long, default_value_t = 1)]
    pub gpu_shares: usize,
    /// Frame size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    pub size: (u32, u32),
    /// Untimed frames before the timed ones.
    #[arg(long, default_value_t = 5)]
    pub warmup: u32,
    /// Timed frames per scenario.
    #[arg(long, default_value_t = 20)]
    pub frames: u32,
    /// Render modes to time, comma separated (reference = the design's three passes).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "reference")]
    pub mode: Vec<pcv_render::RenderMode>,
    /// Point sizes to time, comma separated (1..16 or adaptive[:MAX]). Default: 1 for the built-in
    /// scene; 1,adaptive for files (their default look and the 1-pixel frame it is compared with).
    #[arg(long, value_delimiter = ',', value_parser = PointSize::parse)]
    pub point_size: Vec<PointSize>,
    /// Shapes of points larger than a pixel to time, comma separated: round, square.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "round")]
    pub point_shape: Vec<PointShape>,
    /// Eye-dome lighting settings to time, comma separated: off, on. Default: off for the built-in
    /// scene; off,on for files.
    #[arg(long, value_delimiter = ',', value_parser = parse_on_off)]
    pub edl: Vec<bool>,
    /// Background of the timed frames (see `pcv --help`).
    #[arg(long, value_parser = Background::parse, default_value = "black")]
    pub background: Background,
    /// Point-size methods to time, comma separated: gather (post pass), scatter (disks in the raster
    /// pass; vis mode only).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "gather")]
    pub splat: Vec<SplatMethod>,
    /// Qualities to time, comma separated: standard, high (near points blended; vis, culled and quant).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "standard")]
    pub quality: Vec<Quality>,
    /// Write the report as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Also time the prototype's numba kernels on the same points and cameras (path to seed_numba_bench.py).
    #[arg(long)]
    pub peer: Option<PathBuf>,
    /// Where the points for the peer are written (the temporary folder by default; a RAM disk like /dev/shm
    /// is fastest).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    pub dump_dir: PathBuf,
    /// Keep the points written for the peer (raw 16-byte records, readable by pcv and the peer).
    #[arg(long)]
    pub keep_dump: bool,
    /// Print each pose's clip_from_world (16 floats, column-major: the peer's --mvp).
    #[arg(long)]
    pub print_mvp: bool,
    /// Draw the results as an SVG chart: frame ms against point count, a panel per pose, a line per mode
    /// (and the prototype's, with --peer).
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// With --plot: chart these saved --json reports instead of running (several are merged).
    #[arg(long, num_args = 1.., requires = "plot")]
    pub from: Vec<PathBuf>,
    /// Time the whole frame in a real window instead (vsync off, panel on): GPU ms of each stage —
    /// map, render passes, unmap, texture copy, blit, panel — from CUDA events and GL timestamps.
    #[arg(long)]
    pub window: bool,
}

pub fn parse_count(s: &str) -> Result<u64, String> {
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
pub fn parse_positive_count(s: &str) -> Result<u64, String> {
    match parse_count(s)? {
        0 => Err(format!("'{s}' keeps no points: give at least 1")),
        n => Ok(n),
    }
}

pub fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.trim() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("'{s}' is not WIDTHxHEIGHT (example: 1920x1080)"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("bad width in '{s}'"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("bad height in '{s}'"))?;
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        return Err(format!("'{s}': width and height must be 1..=16384"));
    }
    Ok((w, h))
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
