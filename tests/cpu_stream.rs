//! Files streamed into the CPU backend (issue 14 item 1): `pcv render --backend cpu` of a file larger
//! than the backend's host-copy budget decodes it straight into the backend's arrays — the process's
//! peak resident memory stays within 24 bytes a point + 256 MiB — and draws the same image, bit for
//! bit, as a load through a host cloud.
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

fn pcv(args: &[&str], host_budget_mb: Option<u64>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pcv"));
    c.args(args).env_remove("DISPLAY").env_remove("PCV_HOST_BUDGET_MB");
    if let Some(mb) = host_budget_mb {
        c.env("PCV_HOST_BUDGET_MB", mb.to_string());
    }
    c.output().expect("run pcv")
}

/// Writes a binary PLY of `n` points of a rolling terrain (x, y in 0..~`n`/20 cm, z from a few
/// sines), with colors when `rgb`, in chunks (the test's own memory stays small).
fn write_ply(path: &Path, n: u64, rgb: bool) {
    let f = std::fs::File::create(path).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let color = if rgb { "property uchar red\nproperty uchar green\nproperty uchar blue\n" } else { "" };
    write!(w, "ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\n{color}end_header\n").unwrap();
    let side = (n as f64).sqrt().ceil() as u64;
    let mut rec = Vec::with_capacity(15 << 16);
    let mut i = 0u64;
    while i < n {
        rec.clear();
        for k in i..(i + (1 << 16)).min(n) {
            let (x, y) = ((k % side) as f32 * 0.05, (k / side) as f32 * 0.05);
            let z = (x * 0.3).sin() * 2.0 + (y * 0.17).cos() * 3.0 + ((k * 2654435761) % 1000) as f32 * 1e-4;
            for v in [x, y, z] {
                rec.extend_from_slice(&v.to_le_bytes());
            }
            if rgb {
                rec.extend_from_slice(&[(k % 251) as u8, (x * 10.0) as u8, (z * 40.0) as u8]);
            }
        }
        w.write_all(&rec).unwrap();
        i += 1 << 16;
    }
    w.flush().unwrap();
}

/// The peak resident memory of the children this process has waited for, in bytes (the largest one's).
#[cfg(target_os = "linux")]
fn children_max_rss_bytes() -> u64 {
    // SAFETY: getrusage only writes the struct it is given, which is zeroed and owned here.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer to a rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    assert_eq!(rc, 0, "getrusage");
    ru.ru_maxrss as u64 * 1024
}

/// A file of 20M points: the streamed CPU load's peak, /usr/bin/time's "Maximum resident set size"
/// of the whole `pcv render` process, is within 24 bytes a point + 256 MiB (a host cloud and the
/// backend's copy, as before, take ~40 bytes a point: 800 MB here, over the bound's 714 MiB).
#[cfg(target_os = "linux")]
#[test]
fn streamed_cpu_render_peaks_within_24_bytes_a_point() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000_000u64;
    let ply = dir.path().join("terrain.ply");
    write_ply(&ply, n, true);
    let png = dir.path().join("a.png");
    let o = pcv(
        &["render", "--backend", "cpu", ply.to_str().unwrap(), "-o", png.to_str().unwrap(), "--size", "640x360"],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let peak = children_max_rss_bytes();
    let bound = 24 * n + (256 << 20);
    eprintln!(
        "pcv render --backend cpu, {n} points: peak RSS {:.0} MiB ({:.1} B/point); bound {:.0} MiB",
        peak as f64 / 1048576.0,
        peak as f64 / n as f64,
        bound as f64 / 1048576.0
    );
    assert!(peak <= bound, "peak RSS {peak} bytes over 24 B/point + 256 MiB = {bound}");
    let img = std::fs::read(&png).unwrap();
    assert!(img.len() > 1000, "a PNG of the terrain");
}

/// The streamed load (host budget 0: every file streams) and the host cloud's load (a budget larger
/// than the file) give the same PNG from the same pose (the default poses differ: a host cloud is
/// framed by a percentile box of its points, a streamed one by its bounds), with colors and without
/// (the elevation ramp over the exact z range), in every render mode that reads the order.
#[test]
fn streamed_and_host_loads_draw_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    for rgb in [true, false] {
        let ply = dir.path().join(format!("t{rgb}.ply"));
        write_ply(&ply, 300_000, rgb);
        for mode in ["culled", "vis", "reference"] {
            let out = |name: &str, budget: u64| {
                let png = dir.path().join(format!("{name}-{rgb}-{mode}.png"));
                let args = [
                    "render",
                    "--backend",
                    "cpu",
                    ply.to_str().unwrap(),
                    "-o",
                    png.to_str().unwrap(),
                    "--size",
                    "320x180",
                    "--mode",
                    mode,
                    "--camera",
                    "-6,-4,14,35,-38",
                ];
                let o = pcv(&args, Some(budget));
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                std::fs::read(png).unwrap()
            };
            let (streamed, host) = (out("streamed", 0), out("host", 1 << 20));
            assert!(streamed == host, "streamed and host loads differ (colors: {rgb}, mode {mode})");
        }
    }
}
