//! The `pcv` command line: a thin layer over the library (see `pcv --help`).
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use pcv::camera::Pose;
use pcv::cloud::{load, scene, PointCloud};
use pcv::render::{make_rasterizer, BackendChoice, Rasterizer};
use std::path::PathBuf;

const CONTROLS: &str = "Controls: Esc toggles mouselook; W/S/A/D move, Q/E down/up, Shift x4; \
mouse wheel scales speed; F frames the cloud; R resets the camera; F1 hides the overlay.";

/// pcv: a real-time point-cloud viewer. Points are rasterized by CUDA kernels (clear, atomic-min depth,
/// color) straight into the window's pixel buffer, or by their CPU twin where no GPU is present.
///
/// With no FILES it shows the built-in scene: ten random cylinders of --points points.
#[derive(Parser, Debug)]
#[command(name = "pcv", version, after_help = CONTROLS, args_conflicts_with_subcommands = true)]
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
    /// Time the rasterizer on fixed poses (start, close-up, far) and print a table.
    Bench(BenchArgs),
}

#[derive(Args, Debug, Clone)]
struct SourceArgs {
    /// Point files to show together (this version reads raw 16-byte records: .bin, .pcv).
    files: Vec<PathBuf>,
    /// Points in the built-in scene (suffixes k, M, B: 10M = 10,000,000).
    #[arg(long, value_parser = parse_count, default_value = "10M")]
    points: u64,
    /// Seed of the built-in scene: the same seed gives the same points on every backend.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rasterizer: auto picks CUDA when a driver and a device exist, else the CPU.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
}

#[derive(Args, Debug)]
struct ViewArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Window size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1280x720")]
    size: (u32, u32),
    /// Start pose: x,y,z,yaw_deg,pitch_deg (yaw 0 looks along +x, z is up).
    #[arg(long, value_parser = Pose::parse, allow_hyphen_values = true)]
    camera: Option<Pose>,
    /// Exit after this many frames (for scripted runs).
    #[arg(long)]
    frames: Option<u64>,
    /// Save the last frame as a PNG.
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// Leave the overlay out (of the window and of --screenshot).
    #[arg(long)]
    no_overlay: bool,
    /// Wait for the display's refresh (off by default, to show the real frame time).
    #[arg(long)]
    vsync: bool,
}

#[derive(Args, Debug)]
struct RenderArgs {
    #[command(flatten)]
    source: SourceArgs,
    /// Image size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Camera pose: x,y,z,yaw_deg,pitch_deg (default: the viewer's start pose).
    #[arg(long, value_parser = Pose::parse, allow_hyphen_values = true)]
    camera: Option<Pose>,
    /// The PNG to write.
    #[arg(short, long)]
    output: PathBuf,
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Point files to time instead of the built-in scene.
    files: Vec<PathBuf>,
    /// Built-in scene sizes to time, comma separated (suffixes k, M, B).
    #[arg(long, value_delimiter = ',', value_parser = parse_count, default_value = "10M")]
    points: Vec<u64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Frame size in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1920x1080")]
    size: (u32, u32),
    /// Untimed frames before the timed ones.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Timed frames per scenario.
    #[arg(long, default_value_t = 20)]
    frames: u32,
    /// Write the report as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also time the prototype's numba kernels on the same points and cameras (path to seed_numba_bench.py).
    #[arg(long)]
    peer: Option<PathBuf>,
    /// Where the points for the peer are written (a RAM disk like /dev/shm is fastest).
    #[arg(long, default_value_os_t = std::env::temp_dir())]
    dump_dir: PathBuf,
    /// Keep the points written for the peer (raw 16-byte records, readable by pcv and the peer).
    #[arg(long)]
    keep_dump: bool,
    /// Print each pose's clip_from_world (16 floats, column-major: the peer's --mvp).
    #[arg(long)]
    print_mvp: bool,
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

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("'{s}' is not WIDTHxHEIGHT (example: 1920x1080)"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("bad width in '{s}'"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("bad height in '{s}'"))?;
    if w == 0 || h == 0 || w > 16384 || h > 16384 {
        return Err(format!("'{s}': width and height must be 1..=16384"));
    }
    Ok((w, h))
}

fn load_cloud(files: &[PathBuf], points: u64, seed: u64) -> Result<PointCloud> {
    if files.is_empty() {
        Ok(scene::lazy(points, seed))
    } else {
        Ok(load::load_files(files)?)
    }
}

fn backend(choice: BackendChoice) -> Result<(Box<dyn Rasterizer>, Option<String>)> {
    let (r, note) = make_rasterizer(choice).context("could not start the rasterizer")?;
    if let Some(n) = &note {
        eprintln!("pcv: using the CPU backend ({n})");
    }
    Ok((r, note))
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("pcv: error: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => view(cli.view),
        Some(Command::Render(a)) => render(a),
        Some(Command::Bench(a)) => bench(a),
    }
}

fn view(a: ViewArgs) -> Result<()> {
    let s = &a.source;
    let cloud = load_cloud(&s.files, s.points, s.seed)?;
    let (mut r, note) = backend(s.backend)?;
    r.upload(&cloud).context("uploading the points")?;
    let opts = pcv::viewer::ViewerOptions {
        size_px: a.size,
        vsync: a.vsync,
        frames: a.frames,
        screenshot: a.screenshot.clone(),
        overlay: !a.no_overlay,
        start_pose: a.camera,
    };
    let summary = pcv::viewer::run(&cloud, r.as_mut(), &opts, note)?;
    if let Some(p) = &a.screenshot {
        eprintln!("pcv: {} frames, mean {:.2} ms; screenshot {}", summary.frames, summary.mean_frame_ms, p.display());
    }
    Ok(())
}

fn render(a: RenderArgs) -> Result<()> {
    let s = &a.source;
    let cloud = load_cloud(&s.files, s.points, s.seed)?;
    let (mut r, _) = backend(s.backend)?;
    r.upload(&cloud).context("uploading the points")?;
    let cam = pcv::headless::start_camera(&cloud, a.camera);
    let (frame, stats) = pcv::headless::render_frame(r.as_mut(), &cam, a.size.0, a.size.1)?;
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
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    if a.frames == 0 {
        bail!("--frames must be at least 1");
    }
    let (mut r, _) = backend(a.backend)?;
    let opts = pcv::bench::BenchOptions {
        point_counts: if a.files.is_empty() { a.points.clone() } else { vec![0] },
        seed: a.seed,
        files: a.files.clone(),
        width_px: a.size.0,
        height_px: a.size.1,
        warmup_frames: a.warmup,
        timed_frames: a.frames,
        peer_script: a.peer.clone(),
        dump_dir: a.dump_dir.clone(),
        keep_dump: a.keep_dump,
        print_mvp: a.print_mvp,
    };
    println!("pcv bench: backend {} ({}), commit {}", r.name(), r.description(), env!("PCV_GIT_COMMIT"));
    println!("{}", pcv::bench::table_header());
    let files = a.files.clone();
    let seed = a.seed;
    let report = pcv::bench::run(
        r.as_mut(),
        &opts,
        &mut |n| {
            if files.is_empty() {
                Ok(scene::lazy(n, seed))
            } else {
                Ok(load::load_files(&files)?)
            }
        },
        |res| println!("{}", pcv::bench::table_row(res)),
    )?;
    for (n, ms) in &report.upload_ms {
        println!("upload/generate {n} points: {ms:.1} ms");
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {}", p.display());
    }
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
        assert!(parse_count("-5").is_err());
        assert_eq!(parse_size("1920x1080"), Ok((1920, 1080)));
        assert!(parse_size("0x10").is_err());
        assert!(parse_size("1920").is_err());
    }
}
