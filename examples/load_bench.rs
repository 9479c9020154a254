//! Load-rate bench: writes its own files — binary PLY (float xyz + uchar rgb), LAS (point format 2:
//! xyz, intensity, classification, rgb) and LAZ (the same, compressed) — of synthetic lidar-like points
//! in UTM-sized coordinates, then times `pcv`'s loader on each (the files are freshly written, so they
//! are read from the page cache) and prints points/s.
//!
//! Usage: cargo run --release --example load_bench -- [--ply 100M] [--las 100M] [--laz 20M]
//!        [--runs 3] [--dir DIR] [--keep]
//!        or: load_bench [--runs N] --file FILE   (times loading an existing file)
//! A count of 0 skips that format. Files go to DIR (default: the system temp dir) and are deleted
//! after their runs unless --keep.
use glam::DVec3;
use pcv::cloud::attributes::{Attributes, SourceSpan};
use pcv::cloud::load::{load_files_with, LoadOptions};
use pcv::cloud::PointCloud;
use pcv::render::gpu_data::Point;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// An airborne-lidar-like strip around `origin`: scan lines of 2000 points 0.5 m apart across a 1 km
/// swath, lines 0.5 m apart, over smooth terrain with some buildings, with smooth colors and
/// intensities plus a little noise — ordered and correlated like real scans, so LAZ compresses it
/// about as well as real data (random points would compress badly and decode slowly).
fn synthetic(n: u64, origin: DVec3, attributes: bool) -> PointCloud {
    let terrain = |x: f32, y: f32| 20.0 * (x * 0.01).sin() * (y * 0.013).cos();
    let building = |x: f32, y: f32| ((x + 1000.0) % 80.0 < 30.0 && (y + 1000.0) % 60.0 < 25.0) as u8 as f32 * 9.0;
    let points: Vec<Point> = (0..n)
        .into_par_iter()
        .map(|i| {
            let h = pcv::render::cpu::rng::mix64(i ^ 0x1234_5678);
            let noise = |shift: u32| ((h >> shift) & 0xff) as f32 / 255.0 - 0.5;
            let (line, k) = (i / 2000, i % 2000);
            let x = k as f32 * 0.5 - 500.0 + noise(0) * 0.1;
            let y = line as f32 * 0.5 - 500.0 + noise(8) * 0.1;
            let z = terrain(x, y) + building(x, y) + noise(16) * 0.05;
            let c = |f: f32| (128.0 + 100.0 * f + noise(24) * 8.0).clamp(0.0, 255.0) as u8;
            Point::new([x, y, z], [c((x * 0.02).sin()), c((y * 0.03).cos()), c((z * 0.1).sin()), 255])
        })
        .collect();
    let mut cloud = PointCloud::from_points(points, origin, "synthetic");
    if attributes {
        let intensity: Vec<f32> =
            cloud.points.par_iter().enumerate().map(|(i, p)| (300.0 + p.pos[2] * 10.0 + (pcv::render::cpu::rng::mix64(i as u64) & 0x1f) as f32).round()).collect();
        let classification: Vec<u8> = cloud.points.par_iter().map(|p| if building(p.pos[0], p.pos[1]) > 0.0 { 6 } else { 2 }).collect();
        cloud.attributes = Some(Arc::new(Attributes {
            intensity: Some(intensity),
            classification: Some(classification),
            has_rgb: true,
            sources: vec![SourceSpan { label: "synthetic".into(), points: 0..n, has_rgb: true, has_intensity: true, has_classification: true }],
            ..Default::default()
        }));
    }
    cloud
}

fn bench(name: &str, path: &Path, n: u64, runs: u32) {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut rates = Vec::new();
    for r in 0..runs {
        let t = Instant::now();
        let cloud = load_files_with(&[path.to_path_buf()], &LoadOptions { progress: false, warnings: false }).expect("load");
        let s = t.elapsed().as_secs_f64();
        assert!(n == 0 || cloud.points.len() as u64 == n);
        let n = cloud.points.len() as u64;
        let rate = n as f64 / s;
        println!("  {name} run {}: {:.3} s, {:.1} M points/s ({:.2} GB/s of file)", r + 1, s, rate / 1e6, size as f64 / s / 1e9);
        rates.push(rate);
        drop(cloud);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "{name}: {:.2} GB file: best {:.1} M points/s, median {:.1} M points/s",
        size as f64 / 1e9,
        rates[rates.len() - 1] / 1e6,
        rates[rates.len() / 2] / 1e6
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut ply, mut las, mut laz, mut runs, mut keep) = (100_000_000u64, 100_000_000u64, 20_000_000u64, 3u32, false);
    let mut dir = std::env::temp_dir();
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--ply" => ply = count(&val()),
            "--las" => las = count(&val()),
            "--laz" => laz = count(&val()),
            "--runs" => runs = val().parse().expect("runs"),
            "--dir" => dir = PathBuf::from(val()),
            "--keep" => keep = true,
            "--file" => {
                let p = PathBuf::from(val());
                return bench(&p.display().to_string(), &p, 0, runs);
            }
            other => panic!("unknown argument {other}"),
        }
    }
    println!("pcv load bench: {} threads, files in {}", rayon::current_num_threads(), dir.display());
    let utm = DVec3::new(512_000.0, 5_400_000.0, 300.0);
    for (name, n, ext, origin, attributes) in [("binary PLY", ply, "ply", DVec3::ZERO, false), ("LAS", las, "las", utm, true), ("LAZ", laz, "laz", utm, true)] {
        if n == 0 {
            continue;
        }
        let path = dir.join(format!("pcv-load-bench-{n}.{ext}"));
        let t = Instant::now();
        {
            let cloud = synthetic(n, origin, attributes);
            let a = cloud.attributes.as_deref();
            let o = cloud.origin;
            let cols = pcv::convert::writers::FileColumns {
                path: path.clone(),
                xyz: cloud.points.par_iter().map(|p| [o.x + p.pos[0] as f64, o.y + p.pos[1] as f64, o.z + p.pos[2] as f64]).collect(),
                rgb16: Some(cloud.points.par_iter().map(|p| [p.rgba[0] as u16 * 257, p.rgba[1] as u16 * 257, p.rgba[2] as u16 * 257]).collect()),
                intensity: a.and_then(|a| a.intensity.clone()),
                classification: a.and_then(|a| a.classification.clone()),
                precision: None,
            };
            let mut w = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
            let format = pcv::convert::out_format(&path).expect("format");
            pcv::convert::writers::write(&[cols], format, &mut w).expect("write");
            std::io::Write::flush(&mut w).expect("flush");
        }
        // Written back to disk first, so the timed loads read a clean page cache.
        std::fs::File::open(&path).and_then(|f| f.sync_all()).expect("sync");
        println!("wrote {} ({:.1} s)", path.display(), t.elapsed().as_secs_f64());
        bench(name, &path, n, runs);
        if !keep {
            let _ = std::fs::remove_file(&path);
        }
    }
}
