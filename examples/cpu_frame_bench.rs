//! CPU backend frame bench for a shared machine: wall ms and CPU seconds (all threads) per frame, per
//! pose and mode, on the built-in scene, with the load average before and after each row.
//!
//! How it works: the scene is generated and uploaded once to a [`CpuRasterizer`]; then for each pose of
//! `pcv bench` ([`pcv_camera::scenarios::scenarios`]) and each mode, `--warmup` untimed frames and `--frames`
//! timed ones. CPU time is the process's, all threads ([`cpu_time::process_s`]), read before and after
//! the timed frames: on a machine other work shares, CPU-ms per frame is what the frame costs, and wall
//! ms what it took. The pass times are medians; the batch
//! counts (culled/occluded/drawn) are the last frame's. `--check` also renders each pose with `vis`
//! and compares the images and depth buffers of the batched modes with it.
//!
//! `--memory [FILES...]` measures host memory instead: the files are loaded (or the scene generated) as
//! the viewer loads them, uploaded to the backend, one culled frame drawn, then the cloud dropped (the
//! backend keeps its own copy); it prints the peak anonymous memory (RssAnon, sampled every 2 ms) and
//! VmHWM above the start, in MiB and bytes a point, with the backend's arrays alone after the drop.
//!
//! Usage: cargo run --release --example cpu_frame_bench -- [--points 10M] [--modes culled,vis,...]
//!        [--poses start,far,...] [--frames 20] [--warmup 3] [--size 1920x1080] [--check]
//!        or: cpu_frame_bench --memory [FILES...] [--points 10M]
use pcv_camera::scenarios::scenarios;
use pcv_camera::FlyCamera;
use pcv_io::cpu_time;
use pcv_render::cpu::CpuRasterizer;
use pcv_render::{FrameParams, FrameStats, Rasterizer, RenderMode, Target};
use std::time::Instant;

fn count(s: &str) -> u64 {
    let (d, m) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        Some('b' | 'B') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    (d.parse::<f64>().unwrap_or_else(|_| panic!("bad count '{s}'")) * m) as u64
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn mode(s: &str) -> RenderMode {
    RenderMode::ALL.into_iter().find(|m| m.name() == s).unwrap_or_else(|| panic!("unknown mode '{s}'"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn status_kib(key: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn memory(args: &[String], n: u64) {
    let files: Vec<std::path::PathBuf> = args
        .iter()
        .skip_while(|a| *a != "--memory")
        .skip(1)
        .take_while(|a| !a.starts_with("--"))
        .map(Into::into)
        .collect();
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (base_anon, base_hwm) = (status_kib("RssAnon:"), status_kib("VmHWM:"));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let peak = std::sync::atomic::AtomicU64::new(base_anon);
    let sample = || {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            peak.fetch_max(status_kib("RssAnon:"), std::sync::atomic::Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    };
    let (points, after_drop) = std::thread::scope(|scope| {
        scope.spawn(sample);
        let cloud = if files.is_empty() {
            pcv_io::scene::generate(n, 1, false)
        } else {
            let opts = pcv_io::load::LoadOptions::quiet();
            pcv_io::load::load_files_with(&files, &opts).expect("load")
        };
        let num = cloud.points.len() as u64;
        let loaded = status_kib("RssAnon:");
        let mut r = CpuRasterizer::new();
        r.upload(&cloud).expect("upload");
        let cam = FlyCamera::start_for(&cloud, None);
        let (w, h) = (1920, 1080);
        let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
        let mut px = vec![0u32; frame.num_pixels()];
        r.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).expect("frame");
        drop(cloud);
        let after = status_kib("RssAnon:");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        println!(
            "cloud loaded: {:.0} MiB anonymous ({:.1} B/point)",
            (loaded - base_anon) as f64 / 1024.0,
            (loaded - base_anon) as f64 * 1024.0 / num as f64
        );
        drop(r);
        (num, after)
    });
    let mib = |kib: u64| kib as f64 / 1024.0;
    let per = |kib: u64| kib as f64 * 1024.0 / points.max(1) as f64;
    let (pk, hwm) = (peak.into_inner().max(after_drop) - base_anon, status_kib("VmHWM:") - base_hwm);
    println!("{points} points ({}): peak anonymous {:.0} MiB ({:.1} B/point), VmHWM +{:.0} MiB ({:.1} B/point); backend alone after the cloud is dropped (1080p buffers included): {:.0} MiB ({:.1} B/point)",
        if files.is_empty() { "built-in scene".to_string() } else { files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(" ") },
        mib(pk), per(pk), mib(hwm), per(hwm), mib(after_drop - base_anon), per(after_drop - base_anon));
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let n = count(&arg("--points").unwrap_or_else(|| "10M".into()));
    let modes: Vec<RenderMode> =
        arg("--modes").unwrap_or_else(|| "culled,quant,vis,packed,reference".into()).split(',').map(mode).collect();
    let poses: Option<Vec<String>> = arg("--poses").map(|p| p.split(',').map(String::from).collect());
    let frames: usize = arg("--frames").map_or(20, |v| v.parse().expect("--frames N"));
    let warmup: usize = arg("--warmup").map_or(3, |v| v.parse().expect("--warmup N"));
    let size = arg("--size").unwrap_or_else(|| "1920x1080".into());
    let (w, h) =
        size.split_once('x').map(|(a, b)| (a.parse().expect("width"), b.parse().expect("height"))).expect("--size WxH");
    let check = args.iter().any(|a| a == "--check");
    if args.iter().any(|a| a == "--memory") {
        memory(&args, n);
        return;
    }

    let t = Instant::now();
    let cloud = pcv_io::scene::generate(n, 1, false);
    let gen_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut r = CpuRasterizer::new();
    let (t, c) = (Instant::now(), cpu_time::process_s());
    r.upload(&cloud).expect("upload");
    println!(
        "{n} points, {} threads, generate {gen_ms:.0} ms, upload {:.0} ms ({:.2} CPU-s), load average {}",
        rayon::current_num_threads(),
        t.elapsed().as_secs_f64() * 1e3,
        cpu_time::process_s() - c,
        loadavg()
    );
    println!(
        "{:>9} {:>10} {:>8} {:>8} {:>9} {:>14}  passes (median ms); batches culled/occluded/drawn",
        "pose", "mode", "wall ms", "CPU ms", "CPU/wall", "load avg"
    );
    for sc in scenarios(&cloud) {
        if poses.as_ref().is_some_and(|p| !p.iter().any(|x| x == sc.name)) {
            continue;
        }
        let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
        let base = FrameParams::new(cam.clip_from_world(w, h), w, h)
            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
        let mut want: Option<(Vec<u32>, Vec<u32>)> = None;
        if check {
            let mut px = vec![0u32; base.num_pixels()];
            r.render(&base.with_mode(RenderMode::Vis), Target::Host(&mut px)).expect("vis frame");
            want = Some((px, r.depth_bits()));
        }
        for &m in &modes {
            let frame = base.with_mode(m);
            let mut px = vec![0u32; frame.num_pixels()];
            for _ in 0..warmup {
                r.render(&frame, Target::Host(&mut px)).expect("frame");
            }
            let load = loadavg();
            let mut stats: Vec<FrameStats> = Vec::new();
            let (t, c) = (Instant::now(), cpu_time::process_s());
            for _ in 0..frames {
                stats.push(r.render(&frame, Target::Host(&mut px)).expect("frame"));
            }
            let wall_ms = t.elapsed().as_secs_f64() * 1e3 / frames as f64;
            let cpu_ms = (cpu_time::process_s() - c) * 1e3 / frames as f64;
            let frame_med = median(stats.iter().map(|s| s.total_ms).collect());
            let names: Vec<&str> = stats[0].passes.iter().map(|p| p.name).collect();
            let passes: Vec<String> = names
                .iter()
                .map(|name| format!("{name} {:.1}", median(stats.iter().filter_map(|s| s.pass_ms(name)).collect())))
                .collect();
            let batches = stats
                .last()
                .and_then(|s| s.batches)
                .map_or(String::new(), |b| format!("; {}/{}/{}", b.culled, b.occluded, b.drawn()));
            let points = r.points_drawn().map_or(String::new(), |p| format!("; {:.2}M points drawn", p as f64 * 1e-6));
            let mut verdict = String::new();
            if let (Some((want_px, want_depth)), true) = (&want, matches!(m, RenderMode::Culled | RenderMode::Vis)) {
                let same = *want_px == px && *want_depth == r.depth_bits();
                verdict = if same { " [= vis]".into() } else { " [DIFFERS from vis]".into() };
            }
            println!(
                "{:>9} {:>10} {:>8.1} {:>8.1} {:>9.2} {:>14}  median {frame_med:.1}: {}{batches}{points}{verdict}",
                sc.name,
                m.name(),
                wall_ms,
                cpu_ms,
                cpu_ms / wall_ms,
                load,
                passes.join(", ")
            );
        }
    }
    println!("load average at the end: {}", loadavg());
}
