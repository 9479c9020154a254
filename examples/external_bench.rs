//! The Rust side of the Python module's timings: `CudaRasterizer::render_external` (what `pcv.render`
//! calls for device arrays) on points already on the device, called from Rust with nothing in between,
//! and the CLI's own path for the same points (`upload`, which sorts them, then `render` in `vis` and
//! `culled`). `py/bench/bench_render.py` times the same calls from Python; the difference is the
//! module's overhead.
//!
//! The points: `--points` uniform in a 100 m cube around 0, float32 positions (packed (N, 3), and (N, 4)
//! with a 4th column, which the kernels read at their strides), uint8 (N, 3) colours, made on the host
//! (seeded) and copied to the device once. The camera: eye (-90, -70, 60), yaw 38°, pitch -28°, z up,
//! fixed planes 0.5..400 m (no bounds pass). Each timing is the median wall time of `--repeat` calls
//! after 3 warm-ups; `gpu` is the kernels' own time (CUDA events).
//!
//! Usage: cargo run --release --example external_bench -- [--points 100M] [--size 1920x1080] [--repeat 30]
//! Prints one line per case: `rust <case> points=N wall_ms=... gpu_ms=...`.
use glam::{DVec3, Vec3};
use pcv_camera::{lens::DepthRange, Camera, DepthPolicy, PoseArg};
use pcv_io::{Bounds, Point, PointCloud};
use pcv_render::cuda::memory::DeviceBuffer;
use pcv_render::cuda::CudaRasterizer;
use pcv_render::external::{ArrayDesc, Dtype, ExternalPoints};
use pcv_render::{FrameParams, FrameStats, Rasterizer, RenderMode, Target};
use rayon::prelude::*;
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

/// A small fast generator (splitmix64), seeded per point so the cloud does not depend on threads.
fn unit(seed: u64) -> f32 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(repeat: usize, mut f: impl FnMut() -> FrameStats) -> (f64, f64) {
    for _ in 0..3 {
        f();
    }
    let (mut wall, mut gpu) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        let t = Instant::now();
        let s = f();
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        gpu.push(s.total_ms);
    }
    (median(wall), median(gpu))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let n = count(&arg("--points").unwrap_or_else(|| "100M".into())) as usize;
    let (w, h) = arg("--size")
        .and_then(|s| s.split_once('x').and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?))))
        .unwrap_or((1920, 1080));
    let repeat: usize = arg("--repeat").and_then(|s| s.parse().ok()).unwrap_or(30);

    let mut r = match CudaRasterizer::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("external_bench: no CUDA backend: {e}");
            std::process::exit(2);
        }
    };
    eprintln!("external_bench: {} points, {w}x{h}, {repeat} calls a case on {}", n, r.description());
    let t = Instant::now();
    let pos: Vec<[f32; 4]> = (0..n)
        .into_par_iter()
        .map(|i| {
            let s = 4 * i as u64;
            [100.0 * unit(s) - 50.0, 100.0 * unit(s + 1) - 50.0, 100.0 * unit(s + 2) - 50.0, 1.0]
        })
        .collect();
    let col: Vec<[u8; 3]> = (0..n)
        .into_par_iter()
        .map(|i| (unit(4 * i as u64 + 3) * 16_777_216.0) as u32)
        .map(|c| [c as u8, (c >> 8) as u8, (c >> 16) as u8])
        .collect();
    let pos3: Vec<[f32; 3]> = pos.par_iter().map(|p| [p[0], p[1], p[2]]).collect();
    eprintln!("external_bench: points made in {:.1} s", t.elapsed().as_secs_f64());

    let ctx = r.context().clone();
    let stream = r.stream().clone();
    let upload = |bytes: &[u8], what: &str| {
        let mut b = DeviceBuffer::<u8>::alloc(&ctx, bytes.len(), what).expect("device memory");
        b.write_at(&stream, 0, bytes).expect("upload");
        b
    };
    let d_pos3 = upload(bytemuck::cast_slice(&pos3), "positions (N, 3)");
    let d_pos4 = upload(bytemuck::cast_slice(&pos), "positions (N, 4)");
    let d_col = upload(bytemuck::cast_slice(&col), "colours (N, 3)");
    let frame_buf = DeviceBuffer::<u32>::alloc(&ctx, w as usize * h as usize, "the frame").expect("device memory");

    let bounds = Bounds { min: Vec3::splat(-50.0), max: Vec3::splat(50.0) };
    let mut cam = Camera::for_cloud(bounds, false);
    cam.pose = PoseArg { eye: DVec3::new(-90.0, -70.0, 60.0), yaw_deg: 38.0, pitch_deg: -28.0 }.to_pose(DVec3::ZERO);
    cam.depth = DepthPolicy::Fixed(DepthRange { near: 0.5, far: 400.0 });
    let frame: FrameParams = pcv_render::FrameParams::of_camera(&cam, w, h).with_mode(RenderMode::Vis);

    let desc =
        |ptr: u64, cols: u64, dtype: Dtype| ArrayDesc { ptr, shape: vec![n as u64, cols], strides_bytes: None, dtype };
    let colours = desc(d_col.ptr(), 3, Dtype::U8);
    for (case, positions) in
        [("external (N,3)", desc(d_pos3.ptr(), 3, Dtype::F32)), ("external (N,4)", desc(d_pos4.ptr(), 4, Dtype::F32))]
    {
        let ext = ExternalPoints::new(&positions, Some(&colours)).expect("layout");
        r.check_external(&ext).expect("device arrays");
        let target = frame_buf.ptr();
        let (wall, gpu) = time(repeat, || {
            // SAFETY: the arrays are this context's device memory of the described layouts, alive to the
            // end of main; nothing else writes them.
            unsafe { r.render_external(&ext, &frame, Target::Device { ptr: target, len_px: w as usize * h as usize }) }
                .expect("render")
        });
        println!("rust {case} points={n} wall_ms={wall:.3} gpu_ms={gpu:.3}");
    }

    // The CLI's path: the same points uploaded (16-byte records, sorted by the preprocessing), then render.
    let points: Vec<Point> = pos3.par_iter().zip(&col).map(|(p, c)| Point::new(*p, [c[0], c[1], c[2], 255])).collect();
    drop((pos, pos3, col));
    let cloud = PointCloud::from_points(points, DVec3::ZERO, "external_bench");
    let t = Instant::now();
    r.upload(&cloud).expect("upload");
    println!("rust upload points={n} wall_ms={:.1}", t.elapsed().as_secs_f64() * 1e3);
    drop(cloud);
    for mode in [RenderMode::Vis, RenderMode::Culled] {
        let f = frame.with_mode(mode);
        let (wall, gpu) = time(repeat, || {
            r.render(&f, Target::Device { ptr: frame_buf.ptr(), len_px: w as usize * h as usize }).expect("render")
        });
        println!("rust cli-{} points={n} wall_ms={wall:.3} gpu_ms={gpu:.3}", mode.name());
    }
}
