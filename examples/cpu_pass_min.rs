//! Per-pass minima and medians of the CPU backend's frames, for A/Bs on a shared machine: for each
//! pose and mode, `--frames` frames; per frame the wall ms of each pass and the CPU ms of the whole
//! process (every thread's run time from `/proc/self/task/*/schedstat`); prints min and median of each.
//!
//! Usage: cpu_pass_min [--points 10M] [--modes culled,quant] [--poses start,far] [--frames 40]
use pcv::bench::scenarios;
use pcv::camera::FlyCamera;
use pcv::render::cpu::CpuRasterizer;
use pcv::render::{FrameParams, Rasterizer, RenderMode, Target};
use std::time::Instant;

fn cpu_ms() -> f64 {
    let mut ns = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            if let Ok(s) = std::fs::read_to_string(e.path().join("schedstat")) {
                ns += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            }
        }
    }
    ns as f64 * 1e-6
}

fn stat(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let n: u64 = arg("--points").map_or(10_000_000, |v| v.trim_end_matches('M').parse::<u64>().unwrap() * 1_000_000);
    let modes: Vec<RenderMode> = arg("--modes")
        .unwrap_or_else(|| "culled".into())
        .split(',')
        .map(|s| match s {
            "culled" => RenderMode::Culled,
            "quant" => RenderMode::Quant,
            "vis" => RenderMode::Vis,
            "packed" => RenderMode::Packed,
            _ => panic!("mode {s}"),
        })
        .collect();
    let poses: Vec<String> = arg("--poses").unwrap_or_else(|| "start".into()).split(',').map(String::from).collect();
    let frames: usize = arg("--frames").map_or(40, |v| v.parse().unwrap());
    // `--toggle runs`: frames alternate the switch off and on (reported apart).
    let toggle = arg("--toggle");
    let (w, h) = (1920u32, 1080u32);
    let cloud = pcv::cloud::scene::generate(n, 1, false);
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).expect("upload");
    for sc in scenarios(&cloud) {
        if !poses.iter().any(|p| p == sc.name) {
            continue;
        }
        let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
        let base = FrameParams::new(cam.clip_from_world(w, h), w, h).with_depth_range(cam.depth_range().near, cam.depth_range().far);
        for &m in &modes {
            let frame = base.with_mode(m);
            let mut px = vec![0u32; frame.num_pixels()];
            for _ in 0..3 {
                r.render(&frame, Target::Host(&mut px)).unwrap();
            }
            let sides: &[bool] = if toggle.is_some() { &[false, true] } else { &[true] };
            let mut all: Vec<(Vec<f64>, Vec<f64>, Vec<pcv::render::FrameStats>)> = sides.iter().map(|_| (Vec::new(), Vec::new(), Vec::new())).collect();
            for k in 0..frames * sides.len() {
                let side = k % sides.len();
                if let Some(t) = &toggle {
                    pcv::render::cpu::scatter::set_switch(t, sides[side]);
                }
                let (t, c) = (Instant::now(), cpu_ms());
                let s = r.render(&frame, Target::Host(&mut px)).unwrap();
                all[side].1.push(cpu_ms() - c);
                all[side].0.push(t.elapsed().as_secs_f64() * 1e3);
                all[side].2.push(s);
            }
            for (side, (walls, cpus, stats)) in all.into_iter().enumerate() {
            let label = toggle.as_ref().map_or(String::new(), |t| format!("{t}={}", sides[side]));
            let names: Vec<&str> = stats[0].passes.iter().map(|p| p.name).filter(|n| *n != "clear" && *n != "resolve").collect();
            let mut out = Vec::new();
            for name in names {
                let (mn, md) = stat(stats.iter().filter_map(|s| s.pass_ms(name)).collect());
                out.push(format!("{name} {mn:.2}/{md:.2}"));
            }
            let (wmin, wmed) = stat(walls);
            let (cmin, cmed) = stat(cpus);
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            let load: Vec<&str> = load.split_whitespace().take(1).collect();
            println!(
                "{label} {:>8} {:>7} frame {wmin:6.2}/{wmed:6.2} cpu {cmin:6.2}/{cmed:6.2} | {} | pts {:.2}M load {}",
                sc.name,
                m.name(),
                out.join(" "),
                r.points_drawn().unwrap_or(0) as f64 * 1e-6,
                load.join(" ")
            );
            }
        }
    }
}
