//! Per-pass minima and medians of the CPU backend's frames, for A/Bs on a shared machine: for each
//! pose and mode, `--frames` frames; per frame the wall ms of each pass and the CPU ms of the whole
//! process ([`cpu_time::process_ns`]); prints min and median of each ([`Summary`]). `--toggle S`
//! alternates one of the draw loops' switches off and on frame by frame and reports the two sides apart:
//! `unchecked`, the bounds-check-free writes ([`pcv_render::cpu::scatter::UNCHECKED`]); `prefetch`,
//! the pixel prefetches ([`pcv_render::cpu::scatter::PREFETCH`]); `fasthzb`, the depth pyramid's
//! unmarked cover cells set at once ([`pcv_render::twins::hzb::FAST_COVER`]); `rare`, the culled
//! modes' second draws storing a word only where it wins, in dense batches
//! ([`pcv_render::cpu::scatter::RARE`]); `fusedfinish`, the merge's marks and colors in one
//! pass ([`pcv_render::cpu::private::FUSED_FINISH`]).
//!
//! Usage: cpu_pass_min [--points 10M] [--modes culled,quant] [--poses start,far] [--frames 40] [--toggle unchecked|prefetch|fastclear|skipclean|fasthzb|rare|fusedfinish]
use pcv::bench::Summary;
use pcv_camera::scenarios::scenarios;
use pcv_camera::FlyCamera;
use pcv_io::cpu_time;
use pcv_render::cpu::CpuRasterizer;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let n: u64 = arg("--points").map_or(10_000_000, |v| v.trim_end_matches('M').parse::<u64>().unwrap() * 1_000_000);
    let modes: Vec<RenderMode> = arg("--modes")
        .unwrap_or_else(|| "culled".into())
        .split(',')
        .map(|s| RenderMode::ALL.into_iter().find(|m| m.name() == s).unwrap_or_else(|| panic!("unknown mode '{s}'")))
        .collect();
    let poses: Vec<String> = arg("--poses").unwrap_or_else(|| "start".into()).split(',').map(String::from).collect();
    let frames: usize = arg("--frames").map_or(40, |v| v.parse().unwrap());
    // `--toggle S`: frames alternate the switch off and on (reported apart).
    use pcv_render::cpu::{private, pyramid, scatter};
    let toggle = arg("--toggle");
    let switch: &scatter::Switch = match toggle.as_deref() {
        None | Some("unchecked") => &scatter::UNCHECKED,
        Some("prefetch") => &scatter::PREFETCH,
        Some("fastclear") => &private::FAST_CLEAR,
        Some("skipclean") => &private::SKIP_CLEAN,
        Some("fasthzb") => &pyramid::FAST_COVER,
        Some("rare") => &scatter::RARE,
        Some("fusedfinish") => &private::FUSED_FINISH,
        Some(t) => {
            panic!("unknown switch '{t}' (--toggle unchecked|prefetch|fastclear|skipclean|fasthzb|rare|fusedfinish)")
        }
    };
    let (w, h) = (1920u32, 1080u32);
    let cloud = pcv_io::scene::generate(n, 1, false);
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).expect("upload");
    for sc in scenarios(&cloud) {
        if !poses.iter().any(|p| p == sc.name) {
            continue;
        }
        let cam = FlyCamera::start_for(&cloud, Some(sc.pose));
        let base = FrameParams::new(cam.clip_from_world(w, h), w, h)
            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
        for &m in &modes {
            let frame = base.with_mode(m);
            let mut px = vec![0u32; frame.num_pixels()];
            for _ in 0..3 {
                r.render(&frame, Target::Host(&mut px)).unwrap();
            }
            let sides: &[bool] = if toggle.is_some() { &[false, true] } else { &[true] };
            let mut all: Vec<(Vec<f64>, Vec<f64>, Vec<pcv_render::FrameStats>)> =
                sides.iter().map(|_| (Vec::new(), Vec::new(), Vec::new())).collect();
            for k in 0..frames * sides.len() {
                let side = k % sides.len();
                if toggle.is_some() {
                    switch.set(sides[side]);
                }
                let (t, c) = (Instant::now(), cpu_time::process_ns());
                let s = r.render(&frame, Target::Host(&mut px)).unwrap();
                all[side].1.push((cpu_time::process_ns() - c) as f64 * 1e-6);
                all[side].0.push(t.elapsed().as_secs_f64() * 1e3);
                all[side].2.push(s);
            }
            for (side, (walls, cpus, stats)) in all.into_iter().enumerate() {
                let label = toggle.as_ref().map_or(String::new(), |t| format!("{t}={}", sides[side]));
                let names: Vec<&str> =
                    stats[0].passes.iter().map(|p| p.name).filter(|n| *n != "clear" && *n != "resolve").collect();
                let mut out = Vec::new();
                for name in names {
                    let s = Summary::of(&stats.iter().filter_map(|s| s.pass_ms(name)).collect::<Vec<_>>());
                    out.push(format!("{name} {:.2}/{:.2}", s.min_ms, s.median_ms));
                }
                let (wall, cpu) = (Summary::of(&walls), Summary::of(&cpus));
                let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
                let load: Vec<&str> = load.split_whitespace().take(1).collect();
                println!(
                    "{label} {:>8} {:>7} frame {:6.2}/{:6.2} cpu {:6.2}/{:6.2} | {} | pts {:.2}M load {}",
                    sc.name,
                    m.name(),
                    wall.min_ms,
                    wall.median_ms,
                    cpu.min_ms,
                    cpu.median_ms,
                    out.join(" "),
                    r.points_drawn().unwrap_or(0) as f64 * 1e-6,
                    load.join(" ")
                );
            }
        }
    }
}
