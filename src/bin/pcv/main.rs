//! The `pcv` command line: arguments ([`args`]) and, for each command, a call into the library's one
//! way in ([`pcv::session::open`]) and what the command prints (see `pcv --help`).
mod args;

use anyhow::{bail, Context, Result};
use args::{BenchArgs, Cli, Command, ConvertArgs, DiffArgs, InfoArgs, RecordArgs, RenderArgs, ViewArgs};
use clap::Parser;
use pcv::session::{self, Session};
use pcv_camera::{StartOptions, UpChoice};
use pcv_render::FrameParams;
use std::time::{Duration, Instant};

/// How long `pcv render` waits for a level-of-detail view to complete.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("pcv: error: {}", pcv::one_message(&e));
        pcv::platform::hold_console_after_error();
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    pcv_io::formats::copc::http::set_default_deadline(std::time::Duration::from_secs_f64(cli.http_timeout));
    match cli.command {
        None => view(cli.view),
        Some(Command::Render(a)) => render(a),
        Some(Command::Bench(a)) => bench(a),
        Some(Command::Diff(a)) => diff(a),
        Some(Command::Info(a)) => info(a),
        Some(Command::Convert(a)) => convert(a),
        Some(Command::Record(a)) => record(a),
        Some(Command::Raster(a)) => raster(a),
    }
}

fn raster(a: args::RasterArgs) -> Result<()> {
    let t = Instant::now();
    let paths = pcv_io::collection::expand(&a.files, a.recursive)?;
    let crs = match a.crs.as_deref() {
        Some(arg) => Some(pcv_io::crs::from_argument(arg)?),
        None => paths.iter().find_map(|p| pcv_io::load::crs_of_path(p)),
    };
    let classes = a.classes.as_ref().map(|c| c.0.as_slice());
    let r = pcv_io::raster::rasterize(&paths, a.cell, classes, true)?;
    pcv_io::geotiff::write(&a.output, &r, a.what, crs.as_ref())?;
    let unit = crs.as_ref().map_or(String::new(), |c| format!(" {}", c.units().horizontal_shown().symbol()));
    let place = match &crs {
        Some(c) => match c.epsg {
            Some(e) => format!("{} (EPSG:{e})", c.name),
            None => format!("{} (no EPSG code: named in the citation only)", c.name),
        },
        None => "no coordinate system (the files name none; --crs gives one)".to_string(),
    };
    println!(
        "pcv: wrote {} ({} x {} cells of {}{unit}, {} with points, from {} points) in {:.2} s; {}",
        a.output.display(),
        r.width,
        r.height,
        pcv_model::number::readable(a.cell),
        r.filled(),
        r.points,
        t.elapsed().as_secs_f64(),
        place
    );
    Ok(())
}

/// A project given as the one file (`pcv scene.pcv.json`): its sources replace the files, its camera
/// the start camera; the filter, colour and look come back for the caller to use.
fn open_project(
    s: &mut args::SourceArgs,
    cam: &mut args::CameraArgs,
) -> Result<Option<(std::path::PathBuf, pcv::app::project::Project)>> {
    let [file] = s.files.as_slice() else { return Ok(None) };
    if !pcv::app::project::is_project(file) {
        return Ok(None);
    }
    let path = file.clone();
    let (project, sources) = pcv::app::project::Project::load(&path)?;
    if sources.is_empty() {
        bail!("{}: the project lists no files", path.display());
    }
    let (pose, up, projection) = project.start(&path)?;
    s.files = sources;
    cam.camera = Some(pose);
    cam.camera_frame = pcv_camera::CameraFrame::File;
    cam.up = UpChoice::Axis(up);
    if let pcv_camera::Projection::Orthographic { half_height_m } = projection {
        cam.projection = args::ProjectionArg::Ortho;
        cam.ortho_height = Some(2.0 * half_height_m);
    }
    if let Ok(c) = pcv_io::attributes::ColorMode::parse(&project.color) {
        s.color = Some(c);
    }
    eprintln!("pcv: project {} ({} files)", path.display(), s.files.len());
    Ok(Some((path, project)))
}

fn view(mut a: ViewArgs) -> Result<()> {
    // Fail before loading anything when there is no display to open a window on.
    pcv::viewer::check_display()?;
    let project = open_project(&mut a.source, &mut a.camera)?;
    let path = a.path.as_deref().map(pcv_camera::path::CameraPath::load).transpose()?;
    let script = a.input_script.as_deref().map(pcv::input::script::InputScript::load).transpose()?;
    let mut start = a.camera.start(a.size);
    if let Some(up) = path.as_ref().and_then(|p| p.up) {
        start.up = UpChoice::Axis(up);
    }
    let s = &a.source;
    let mut open = session::OpenOptions { auto_lod: !s.no_lod, raster_filter: a.mode.culls(), ..s.open_options(start) };
    if let Some((path, p)) = &project {
        open.filter = p.filter(path)?;
    }
    let mut session = session::open(s.source(), &s.backend(), &open)?;
    let mut look = session.look(&a.look.overrides());
    if let Some((_, p)) = &project {
        look = p.look(look);
    }
    let opts = pcv::viewer::ViewerOptions {
        size_px: a.size,
        vsync: !a.no_vsync && a.frames.is_none(),
        frames: a.frames,
        screenshot: a.screenshot.clone(),
        overlay: !a.no_overlay,
        camera: session.camera,
        up_reason: session.up_reason.clone(),
        controller: a.controller,
        mode: a.mode,
        look,
        spacing_m: session.spacing_m(),
        continuous: a.continuous,
        path,
        script,
        trace: a.trace.clone(),
        feed: None,
        frame_target_ms: match (a.frame_target_ms, a.frames) {
            (Some(t), _) => Some(t).filter(|t| *t > 0.0),
            (None, None) => Some(pcv::app::resolution::DEFAULT_TARGET_MS),
            (None, Some(_)) => None,
        },
        messages: session.warnings.clone(),
        // The session's own filter, set by Session::view where it applied it.
        filter: Default::default(),
        filter_in_raster: false,
        sources: a.source.files.iter().map(|p| p.display().to_string()).collect(),
        project,
    };
    let summary = session.view(opts)?;
    if let Some(why) = &summary.interop_fallback {
        eprintln!("pcv: frames went through host memory: {why}");
    }
    if let Some(p) = &a.screenshot {
        let (frames, ms) = (summary.frames, summary.mean_frame_ms);
        eprintln!("pcv: {frames} frames, mean {ms:.2} ms; screenshot {}", p.display());
    }
    Ok(())
}

fn render(mut a: RenderArgs) -> Result<()> {
    let started = Instant::now();
    let project = open_project(&mut a.source, &mut a.camera)?;
    let s = &a.source;
    let mut open = session::OpenOptions { raster_filter: a.mode.culls(), ..s.open_options(a.camera.start(a.size)) };
    if let Some((path, p)) = &project {
        open.filter = p.filter(path)?;
    }
    let mut session = session::open(s.source(), &s.backend(), &open)?;
    let mut look = session.look(&a.look.overrides());
    if let Some((_, p)) = &project {
        look = p.look(look);
    }
    let mode = session.mode_for(a.mode);
    // Level of detail: the view as complete as the budget allows (a minute at most).
    let frame = FrameParams::of_camera(&session.camera, a.size.0, a.size.1).with_mode(mode);
    let spacing_m = match session.settle(&frame, SETTLE_TIMEOUT)? {
        Some(nodes_m) => nodes_m,
        None => session.spacing_m(),
    };
    let (w, h) = a.size;
    let r = session.rasterizer.as_mut();
    let (frame, stats) = pcv::headless::render_frame(r, &session.camera, w, h, mode, &look, spacing_m)?;
    let framed_s = started.elapsed().as_secs_f64();
    frame.write_png(&a.output)?;
    let (points, ms, out) = (stats.points, stats.total_ms, a.output.display());
    eprintln!("pcv: rendered {points} points at {w}x{h} with {} in {ms:.2} ms -> {out}", r.name());
    let failed = session.failed_nodes();
    // Where the time to the first image went (the "on screen in N s" figure of a large file).
    let (t, done_s) = (session.times, started.elapsed().as_secs_f64());
    eprintln!(
        "pcv: times: backend {:.0} ms, load and upload {:.0} ms, spacing and first frame {:.0} ms, PNG {:.0} ms; {:.2} s in all",
        t.backend_s * 1e3,
        (t.loaded_s - t.backend_s) * 1e3,
        (framed_s - t.loaded_s) * 1e3,
        (done_s - framed_s) * 1e3,
        done_s
    );
    partial(failed, a.allow_partial, "the image")
}

/// A level-of-detail view some of whose nodes could not be read (each named on stderr as it failed):
/// an error unless `allow` (`--allow-partial`) accepts `what` drawn without them.
fn partial(n: usize, allow: bool, what: &str) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let nodes = if n == 1 { "1 node".to_string() } else { format!("{n} nodes") };
    if allow {
        eprintln!("pcv: {what} is drawn without {nodes} that could not be read (--allow-partial)");
        return Ok(());
    }
    let them = if n == 1 { "it" } else { "them" };
    bail!("{nodes} could not be read (named above); {what} is drawn without {them}; --allow-partial accepts that")
}

fn record(a: RecordArgs) -> Result<()> {
    if !(a.fps.is_finite() && a.fps > 0.0 && a.fps <= 1000.0) {
        bail!("--fps must be between 0 and 1000, got {}", a.fps);
    }
    let mut path = pcv_camera::path::CameraPath::load(&a.path)?;
    if let Some(frame) = a.camera_frame {
        path.frame = frame;
    }
    let up = path.up.map(UpChoice::Axis).unwrap_or(a.up);
    let start = StartOptions {
        up,
        aspect: a.size.0 as f32 / a.size.1 as f32,
        ortho: a.projection == args::ProjectionArg::Ortho,
        ..Default::default()
    };
    let s = &a.source;
    let open = session::OpenOptions { raster_filter: a.mode.culls(), ..s.open_options(start) };
    let mut session = session::open(s.source(), &s.backend(), &open)?;
    let look = session.look(&a.look.overrides());
    let spacing_m = session.spacing_m();
    let (cam, origin) = (session.camera, session.cloud.origin);
    if let Some(json) = &a.measure {
        std::fs::create_dir_all(&a.output).with_context(|| format!("making {}", a.output.display()))?;
        let fo = pcv_lod::flight::FlightOptions {
            size_px: a.size,
            mode: a.mode,
            look,
            spacing_m,
            settle_timeout_s: SETTLE_TIMEOUT.as_secs_f64(),
            refining_png: Some(a.output.join("refining.png")),
            complete_png: Some(a.output.join("complete.png")),
        };
        let report = session.measure_flight(&path, &fo)?;
        println!("{}", pcv_lod::flight::summary(&report));
        pcv::bench::write_json(json, &report, &session.rasterizer.description())?;
        eprintln!("pcv: wrote {}", json.display());
        return partial(report.failed_nodes, a.allow_partial, "the flight");
    }
    if session.lod().is_some() {
        bail!("pcv record with level of detail measures flights (--measure FILE.json); for PNG frames of a streamed scene, use the window's --path");
    }
    let out_dir = a.output.clone();
    let opts = pcv::headless::RecordOptions {
        size_px: a.size,
        fps: a.fps,
        out_dir,
        mode: a.mode,
        look,
        spacing_m,
        video: !a.no_video,
    };
    let r = session.rasterizer.as_mut();
    let summary = pcv::headless::record(r, &cam, origin, &path, &opts, &mut |done, total| {
        if done == total || done % 30 == 0 {
            eprint!("\rpcv: recording frame {done}/{total}");
        }
    })?;
    eprintln!();
    let (frames, ms) = (summary.frames, summary.mean_render_ms);
    let (dur, out) = (path.duration_s(), a.output.display());
    eprintln!("pcv: {frames} frames of {dur:.2} s at {} fps ({ms:.1} ms a frame) -> {out}", a.fps);
    match (&summary.video, &summary.video_note) {
        (Some(v), _) => eprintln!("pcv: video {}", v.display()),
        (None, Some(why)) => eprintln!("pcv: no video: {why}"),
        (None, None) => {}
    }
    Ok(())
}

fn diff(a: DiffArgs) -> Result<()> {
    use pcv_render::image_io::{diff_frames, Frame};
    let (fa, fb) = (Frame::read_png(&a.a)?, Frame::read_png(&a.b)?);
    let region = match a.region.as_deref() {
        Some(&[x, y, w, h]) => Some((x, y, w, h)),
        Some(other) => bail!("--region takes x,y,width,height; got {} numbers", other.len()),
        None => None,
    };
    if (fa.width, fa.height) != (fb.width, fb.height) {
        let (an, bn) = (a.a.display(), a.b.display());
        bail!("{an} is {}x{} but {bn} is {}x{}", fa.width, fa.height, fb.width, fb.height);
    }
    let d = diff_frames(&fa, &fb, region).map_err(anyhow::Error::msg)?;
    let pct = d.differing as f64 * 100.0 / d.compared.max(1) as f64;
    println!("{} of {} pixels differ ({pct:.3}%)", d.differing, d.compared);
    if let Some(p) = &a.out {
        d.mask.write_png(p)?;
    }
    if d.differing > 0 {
        std::process::exit(1);
    }
    Ok(())
}

fn bench(a: BenchArgs) -> Result<()> {
    if a.frames == 0 {
        bail!("--frames must be at least 1");
    }
    if !a.from.is_empty() {
        let plot = a.plot.as_ref().context("--from needs --plot")?;
        return pcv::bench::plot::plot_reports(&a.from, plot).map_err(Into::into);
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
        looks: pcv::bench::with_qualities(
            pcv::bench::looks(&a.point_size, &a.point_shape, &a.splat, &a.edl, a.background, !a.files.is_empty()),
            &a.quality,
        ),
        peer_script: a.peer.clone(),
        dump_dir: a.dump_dir.clone(),
        keep_dump: a.keep_dump,
        print_mvp: a.print_mvp,
        filter: a.filter.filter(),
        ortho: a.projection == args::ProjectionArg::Ortho,
    };
    // Files are loaded (and colored) once, before the rasterizer is timed.
    let filter = a.filter.filter();
    let files = match a.files.is_empty() {
        true if !filter.is_empty() => bail!("--classes, --returns, --filter and --clip-box need files"),
        true => None,
        false => {
            let paths = pcv_io::collection::expand(&a.files, false)?;
            let open = session::OpenOptions { color: a.color, filter: filter.clone(), ..Default::default() };
            Some(session::load_cloud_skipping(&paths, 0, a.seed, &open, &mut Vec::new())?)
        }
    };
    let source = |n: u64| match &files {
        None => pcv_io::scene::lazy(n, a.seed),
        Some(cloud) => cloud.clone(),
    };
    for (gi, &gpus) in a.gpus.iter().enumerate() {
        let backend = session::BackendOptions { choice: a.backend, gpus, gpu_shares: a.gpu_shares };
        let mut session = Session::start(&backend)?;
        let r = session.rasterizer.as_mut();
        println!("pcv bench: backend {} ({}), commit {}", r.name(), r.description(), pcv::bench::GIT_COMMIT);
        if a.window {
            pcv::viewer::check_display()?;
            return pcv::bench::window::run_all(r, &opts, source, a.json.as_deref()).map_err(Into::into);
        }
        println!("{}", pcv::bench::table_header());
        let report =
            pcv::bench::run(r, &opts, &mut |n| Ok(source(n)), |res| println!("{}", pcv::bench::table_row(res)))?;
        for (n, ms) in &report.upload_ms {
            println!("upload/generate {n} points: {ms:.1} ms");
        }
        // One report per GPU count: FILE.json, or FILE-gpusN.json when several counts are timed.
        if let Some(p) = a.json.as_ref().map(|p| pcv::bench::report_path(p, a.gpus.len() > 1, gpus.resolve())) {
            std::fs::write(&p, serde_json::to_string_pretty(&report)?)
                .with_context(|| format!("writing {}", p.display()))?;
            println!("wrote {}", p.display());
        }
        if let Some(p) = a.plot.as_ref().filter(|_| gi == 0) {
            let title = format!("pcv bench, {} ({}), commit {}", report.device, report.date_utc, report.commit);
            pcv::bench::plot::plot(&report.results, &title, p)?;
            println!("wrote {}", p.display());
        }
        // The devices go back before the next count opens them.
        drop(session);
    }
    Ok(())
}

fn info(a: InfoArgs) -> Result<()> {
    let files = pcv_io::collection::expand(&a.files, a.recursive)?;
    if a.tiles {
        return info_tiles(&files, a.json);
    }
    let crs = a.crs.as_deref().map(pcv_io::crs::from_argument).transpose()?;
    let reports: Vec<_> = files
        .iter()
        .map(|f| {
            let mut r = pcv_io::info::file_report(f);
            if let (Ok(r), Some(c)) = (&mut r, &crs) {
                r.crs = Some(c.clone());
            }
            (f, r)
        })
        .collect();
    let failed = reports.iter().filter(|(_, r)| r.is_err()).count();
    let mut json = Vec::new();
    for (f, r) in reports {
        match r {
            Ok(r) if a.json => json.push(serde_json::to_value(&r)?),
            Ok(r) => print!("{}", r.to_text()),
            Err(e) => {
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
        bail!("{failed} of {} files could not be read", files.len());
    }
    Ok(())
}

/// `pcv info --tiles`: the tiles' headers, read on all cores, a line each, and their sum.
fn info_tiles(files: &[std::path::PathBuf], json: bool) -> Result<()> {
    use pcv_model::number::readable;
    let t = Instant::now();
    let headers = pcv_io::collection::headers(files);
    let sum = pcv_io::collection::summarize(files, &headers);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    if json {
        let tiles: Vec<serde_json::Value> = files
            .iter()
            .zip(&headers)
            .map(|(f, h)| match h {
                Ok(h) => serde_json::to_value(h).unwrap_or_default(),
                Err(e) => serde_json::json!({ "path": f.display().to_string(), "error": e.to_string() }),
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "tiles": tiles, "summary": sum, "read_ms": ms }))?
        );
    } else {
        for h in headers.iter().flatten() {
            let b = h.bounds.map_or("no bounds".to_string(), |b| {
                format!(
                    "x {} .. {}, y {} .. {}, z {} .. {}",
                    readable(b.min[0]),
                    readable(b.max[0]),
                    readable(b.min[1]),
                    readable(b.max[1]),
                    readable(b.min[2]),
                    readable(b.max[2])
                )
            });
            println!("{}  {}  {} points  {b}", h.path, h.format, h.points);
        }
        let crs: Vec<String> = sum.crs.iter().map(|(n, k)| format!("{n}: {k}")).collect();
        let within = sum.bounds.map_or(String::new(), |b| {
            format!(
                " within x {} .. {}, y {} .. {}",
                readable(b.min[0]),
                readable(b.max[0]),
                readable(b.min[1]),
                readable(b.max[1])
            )
        });
        println!(
            "{} tiles read in {ms:.1} ms: {} points{within}; coordinate systems: {}",
            sum.tiles,
            sum.points,
            crs.join(", ")
        );
    }
    for (p, e) in &sum.failed {
        match e.contains(p.as_str()) {
            true => eprintln!("pcv: error: {e}"),
            false => eprintln!("pcv: error: {p}: {e}"),
        }
    }
    if !sum.failed.is_empty() {
        bail!("{} of {} tiles could not be read (named above)", sum.failed.len(), files.len());
    }
    Ok(())
}

fn convert(a: ConvertArgs) -> Result<()> {
    let t0 = Instant::now();
    // Interrupted (Ctrl+C, SIGTERM, the console closed): the temporary files go, then the process.
    let handler = ctrlc::set_handler(|| {
        let n = pcv_io::convert::temp::remove_all();
        eprintln!("\npcv: interrupted; removed the convert's {n} temporary file(s)");
        std::process::exit(130);
    });
    if let Err(e) = handler {
        eprintln!("pcv: warning: an interrupt would leave temporary files (no handler: {e})");
    }
    let inputs = pcv_io::collection::expand(&a.inputs, a.recursive)?;
    let filter = a.filter.filter();
    let s = pcv_io::convert::convert_filtered(&inputs, &a.output, &pcv_io::load::LoadOptions::default(), &filter)?;
    if !filter.is_empty() {
        eprintln!("pcv: kept {} ({} points)", filter.describe(), s.points);
    }
    let secs = t0.elapsed().as_secs_f64();
    // The rate of the points read: a filter that keeps few of many still read them all.
    let rate = s.points_read.max(s.points) as f64 / secs.max(1e-9) / 1e6;
    let (points, out, bytes, how) = (s.points, a.output.display(), s.bytes, &s.how);
    eprintln!("pcv: wrote {points} points to {out} ({bytes} bytes; {how}) in {secs:.2} s ({rate:.2} M points/s read)");
    Ok(())
}
