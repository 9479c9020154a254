//! Load-rate bench: writes its own files — binary PLY (float xyz + uchar rgb), LAS and LAZ (point
//! format 3 by default: xyz, intensity, returns, classification, scan angle, GPS time, 16-bit rgb) —
//! of synthetic lidar-like points in UTM coordinates, then times pcv's loaders on each from the page
//! cache (the files are freshly written) and prints a table:
//! - `decode`: the chunked decoders on all cores into a sink that only counts (what a backend's upload
//!   receives, before it copies anything: the rate of [`pcv_io::stream`] itself);
//! - `device stream`: what a device-only load runs ([`pcv_io::device::stream_files`]: decode,
//!   color, hand over in order, release the mapped file's finished pages) into a counting sink — the
//!   CUDA upload's host side without the copies;
//! - `load`: `load_files_with`, a whole host cloud (16-byte points + intensity + classification);
//! - CPU seconds per run (user + system, all threads but the bench's memory sampler: a rate per
//!   CPU-second is what a machine shared with other work can still compare) and the peak anonymous
//!   memory of the run above what the process held before (RssAnon sampled every 5 ms: heap, not the
//!   mapped files' pages).
//!
//! Usage: cargo run --release --example load_bench -- [--ply 100M] [--las 100M] [--laz 20M]
//!        [--laz-format 3] [--rgb8] [--runs 3] [--dir DIR] [--keep] [--threads N]
//!        or: load_bench [--runs N] --file FILE...   (times existing files)
//!        or: load_bench --write-las N FILE.las [--laz-format 0-3]   (only writes a synthetic LAS, in
//!            parallel: files of billions of points)
//!        or: load_bench [--runs N] --tile FILE.las --copies N [--dir DIR]   (a real LAS file's records
//!            repeated N times side by side — x shifted by the file's width, GPS time by its span —
//!            as LAS and LAZ: real data's statistics at a size worth timing)
//!        --rgb8: 8-bit colors stored × 257 (as most LAS files hold 8-bit camera colour) instead of 16-bit
//!            ones whose low byte is noise to LAZ (the LAZ file is ~26 % smaller and decodes 6–9 % faster on
//!            2 cores: results/2026-12-02-s15-laz-2core/2026-12-02-s15-laz-2core.md);
//!        --laz-decoder pcv|laz: LAZ formats 0–3 and 6–8 by pcv's decoders (the default) or the `laz` crate's.
//! `PCV_BENCH_ONLY=decode|device|load` times only that column; `PCV_BENCH_RUNS=1` also prints every
//! run's rate and CPU seconds; `PCV_BENCH_MAX_POINTS=N` makes the device stream a subsample of N (as
//! `pcv --max-points N`; its rate is still of the points read).
//! A count of 0 skips that format. Files go to DIR (default: the system temp dir) and are deleted
//! after their runs unless --keep.
use pcv_io::convert::writers::FileColumns;
use pcv_io::cpu_time;
use pcv_io::formats::{FormatError, Progress};
use pcv_io::load::{self, load_files_with, FileBytes, LoadOptions};
use pcv_io::stream::{stream, Staging, StreamError};
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn count(s: &str) -> u64 {
    let (d, m) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1e3),
        Some('m' | 'M') => (&s[..s.len() - 1], 1e6),
        Some('b' | 'B') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    match d.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => (v * m) as u64,
        _ => usage_error(&format!("'{s}' is not a count (e.g. 20M, 1.5B, 300)")),
    }
}

/// How to call this bench (the module doc's usage lines).
const USAGE: &str = "usage: load_bench [--ply N] [--las N] [--laz N] [--laz-format N] [--rgb8] [--runs N] [--dir DIR] [--keep] [--threads N]
       load_bench [--runs N] --file FILE...            (times existing files)
       load_bench --write-las N FILE.las [--laz-format 0-3] [--rgb8]
       load_bench [--runs N] --tile FILE.las --copies N [--dir DIR] [--keep]
       --laz-decoder pcv|laz; counts take k, M, B; PCV_BENCH_ONLY=decode|device|load; PCV_BENCH_RUNS=1;
       PCV_BENCH_MAX_POINTS=N (the device stream as --max-points N)";

/// A bad command line: says what is wrong and how to call the bench, then exits with status 2.
fn usage_error(what: &str) -> ! {
    eprintln!("load_bench: {what}\n{USAGE}");
    std::process::exit(2)
}

/// `s` parsed as a `T`, or a usage error naming `what`.
fn number<T: std::str::FromStr>(s: &str, what: &str) -> T {
    s.parse().unwrap_or_else(|_| usage_error(&format!("'{s}' is not a valid {what}")))
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// One synthetic point.
#[derive(Clone, Copy)]
struct Synth {
    xyz: [f64; 3],
    rgb: [u16; 3],
    intensity: u16,
    class: u8,
    returns: (u8, u8),
    gps: f64,
    angle: i8,
}

/// An airborne-lidar-like strip around `origin`: scan lines of 2000 points 0.5 m apart across a 1 km
/// swath, lines 0.5 m apart, over smooth terrain with some buildings, on a 1 mm grid, smooth colors
/// and intensities plus a little noise — ordered and correlated like real scans (random points would
/// compress badly and decode slowly). It is still a harder LAZ case than real aerial data: 8.3 bytes a
/// point in point format 3 against 5.5 for PDAL's autzen tiled by `--tile`, from the 1 mm grid, return
/// counts drawn per point rather than per pulse, and the colors' low byte. Colors are 16-bit
/// (the low byte carries the fraction: noise to LAZ, like a 12- or 16-bit camera's), or with `rgb8`
/// 8-bit values × 257 (how 8-bit camera colour is stored in most LAS files, and what this bench wrote
/// when issue 14 was filed).
fn synth(i: u64, origin: [f64; 3], rgb8: bool) -> Synth {
    let h = mix(i ^ 0x1234_5678);
    let noise = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0 - 0.5;
    let (line, k) = (i / 2000, i % 2000);
    let x = k as f64 * 0.5 - 500.0 + noise(0) * 0.1;
    let y = line as f64 * 0.5 - 500.0 + noise(8) * 0.1;
    let building = ((x + 1000.0) % 80.0 < 30.0 && (y + 1000.0) % 60.0 < 25.0) as u8 as f64 * 9.0;
    let z = 20.0 * (x * 0.01).sin() * (y * 0.013).cos() + building + noise(16) * 0.05;
    let c = |f: f64| {
        let v = (128.0 + 100.0 * f + noise(24) * 8.0).clamp(0.0, 255.0);
        if rgb8 {
            v as u16 * 257
        } else {
            (v * 257.0) as u16
        }
    };
    let q = |v: f64| (v * 1000.0).round() / 1000.0;
    let n = 1 + (h >> 40) as u8 % 3;
    Synth {
        xyz: [q(origin[0] + x), q(origin[1] + y), q(origin[2] + z)],
        rgb: [c((x * 0.02).sin()), c((y * 0.03).cos()), c((z * 0.1).sin())],
        intensity: (300.0 + z * 10.0 + (h >> 48 & 0x1f) as f64).round() as u16,
        class: if building > 0.0 { 6 } else { 2 },
        returns: (1 + (h >> 44) as u8 % n, n),
        gps: 3.0e8 + i as f64 * 2.5e-6,
        angle: (k as i64 * 40 / 2000 - 20) as i8,
    }
}

/// Writes a binary PLY (float xyz near 0, uchar rgb) of `n` synthetic points.
fn write_ply(path: &Path, n: u64) {
    let cols = FileColumns {
        path: path.into(),
        xyz: (0..n).into_par_iter().map(|i| synth(i, [0.0; 3], false).xyz.map(|v| v as f32 as f64)).collect(),
        rgb16: Some((0..n).into_par_iter().map(|i| synth(i, [0.0; 3], true).rgb).collect()),
        precision: Some(pcv_io::stream::Precision::F32),
        ..Default::default()
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    pcv_io::convert::writers::write(&[cols], pcv_io::convert::OutFormat::Ply, &mut w).expect("write PLY");
    std::io::Write::flush(&mut w).expect("flush");
}

/// Writes a LAS of point `format` with the `las` crate, in UTM coordinates at 1 mm.
fn write_las(path: &Path, n: u64, format: u8, rgb8: bool) {
    let origin = [512_000.0, 5_400_000.0, 300.0];
    let mut b = las::Builder::from(if format >= 6 { (1, 4) } else { (1, 2) });
    b.point_format = las::point::Format::new(format).expect("format");
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(origin[0]), y: t(origin[1]), z: t(0.0) };
    let f = b.point_format;
    let mut w = las::Writer::from_path(path, b.into_header().expect("header")).expect("writer");
    let batch = 1 << 20;
    for start in (0..n).step_by(batch) {
        let pts: Vec<las::Point> = (start..(start + batch as u64).min(n))
            .into_par_iter()
            .map(|i| {
                let s = synth(i, origin, rgb8);
                las::Point {
                    x: s.xyz[0],
                    y: s.xyz[1],
                    z: s.xyz[2],
                    intensity: s.intensity,
                    return_number: s.returns.0,
                    number_of_returns: s.returns.1,
                    classification: las::point::Classification::new(s.class).expect("class"),
                    scan_angle: s.angle as f32,
                    point_source_id: 7,
                    gps_time: f.has_gps_time.then_some(s.gps),
                    color: f.has_color.then_some(las::Color { red: s.rgb[0], green: s.rgb[1], blue: s.rgb[2] }),
                    nir: f.has_nir.then_some(s.rgb[0] / 2),
                    ..Default::default()
                }
            })
            .collect();
        for p in pts {
            w.write_point(p).expect("point");
        }
    }
    w.close().expect("close");
}

/// A LAS file whose records are `las`'s repeated `copies` times, each copy moved along x by the
/// file's width and in GPS time by its span; counts and bounds updated. Returns its path.
fn tile(las_path: &Path, copies: u64, dir: &Path) -> PathBuf {
    let src = std::fs::read(las_path).expect("read the LAS to tile");
    let h = pcv_io::formats::las::parse_header(&src).expect("a LAS file");
    assert!(!h.compressed, "--tile takes an uncompressed LAS (pcv convert it first)");
    let (off, len, n) = (h.data_offset as usize, h.record_len as usize, h.count as usize);
    let records = &src[off..off + n * len];
    let width = ((h.max[0] - h.min[0]) / h.scale[0]).ceil() as i64 + 1;
    let gps_at = match h.format {
        1 | 3 | 4 | 5 => Some(20),
        6..=10 => Some(22),
        _ => None,
    };
    let span = gps_at.map_or(0.0, |g| {
        let t: Vec<f64> = records.chunks(len).map(|r| f64::from_le_bytes(r[g..g + 8].try_into().unwrap())).collect();
        t.iter().cloned().fold(f64::MIN, f64::max) - t.iter().cloned().fold(f64::MAX, f64::min) + 1.0
    });
    let mut out = src[..off].to_vec();
    let total = n as u64 * copies;
    for k in 0..copies {
        let mut part = records.to_vec();
        for r in part.chunks_mut(len) {
            let x = i32::from_le_bytes(r[0..4].try_into().unwrap()) as i64 + k as i64 * width;
            r[0..4].copy_from_slice(&(x as i32).to_le_bytes());
            if let Some(g) = gps_at {
                let t = f64::from_le_bytes(r[g..g + 8].try_into().unwrap()) + k as f64 * span;
                r[g..g + 8].copy_from_slice(&t.to_le_bytes());
            }
        }
        out.extend_from_slice(&part);
    }
    if h.format < 6 {
        out[107..111].copy_from_slice(&(total as u32).to_le_bytes());
        out[111..131].fill(0);
    }
    if h.version.1 >= 4 && h.header_size >= 375 {
        out[247..255].copy_from_slice(&total.to_le_bytes());
        out[255..375].fill(0);
        out[235..247].fill(0); // no EVLRs
    }
    let max_x = h.max[0] + (copies - 1) as f64 * width as f64 * h.scale[0];
    out[179..187].copy_from_slice(&max_x.to_le_bytes());
    let name = las_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let path = dir.join(format!("pcv-load-bench-{name}-x{copies}.las"));
    std::fs::write(&path, out).expect("write the tiled LAS");
    path
}

/// Writes a LAS 1.2 file of `n` synthetic points in point format 0, 1, 2 or 3 directly — header by
/// hand, records made and written in parallel batches — for files of billions of points (the `las`
/// crate writes a point at a time). UTM coordinates at 1 mm.
fn write_las_fast(path: &Path, n: u64, format: u8, rgb8: bool) {
    use std::io::Write;
    assert!(format <= 3, "--fast-las writes point formats 0-3");
    assert!(n <= u32::MAX as u64, "LAS 1.2 counts fit 32 bits");
    let origin = [512_000.0, 5_400_000.0, 300.0];
    let len = pcv_io::formats::las::FORMAT_SIZES[format as usize] as usize;
    let mut h = vec![0u8; 227];
    h[..4].copy_from_slice(b"LASF");
    h[24] = 1;
    h[25] = 2;
    h[26..36].copy_from_slice(b"load_bench");
    h[94..96].copy_from_slice(&227u16.to_le_bytes());
    h[96..100].copy_from_slice(&227u32.to_le_bytes());
    h[104] = format;
    h[105..107].copy_from_slice(&(len as u16).to_le_bytes());
    h[107..111].copy_from_slice(&(n as u32).to_le_bytes());
    for k in 0..3 {
        h[131 + 8 * k..139 + 8 * k].copy_from_slice(&0.001f64.to_le_bytes());
        h[155 + 8 * k..163 + 8 * k].copy_from_slice(&if k == 2 { 0.0f64 } else { origin[k] }.to_le_bytes());
    }
    // Bounds: the strip's extent (x within ±500 m, y from -500 m up by 0.5 m a line, z within ±40 m).
    let lines = n.div_ceil(2000) as f64;
    let b = [
        (origin[0] - 501.0, origin[0] + 501.0),
        (origin[1] - 501.0, origin[1] - 499.0 + lines * 0.5),
        (origin[2] - 40.0, origin[2] + 40.0),
    ];
    for k in 0..3 {
        h[179 + 16 * k..187 + 16 * k].copy_from_slice(&b[k].1.to_le_bytes());
        h[187 + 16 * k..195 + 16 * k].copy_from_slice(&b[k].0.to_le_bytes());
    }
    let mut w = std::io::BufWriter::with_capacity(1 << 24, std::fs::File::create(path).expect("create"));
    w.write_all(&h).expect("header");
    let batch = 1u64 << 22;
    for start in (0..n).step_by(batch as usize) {
        let end = (start + batch).min(n);
        let mut buf = vec![0u8; (end - start) as usize * len];
        buf.par_chunks_mut(len).enumerate().for_each(|(k, r)| {
            let s = synth(start + k as u64, origin, rgb8);
            let q = |v: f64, o: f64| (((v - o) / 0.001).round() as i32).to_le_bytes();
            r[0..4].copy_from_slice(&q(s.xyz[0], origin[0]));
            r[4..8].copy_from_slice(&q(s.xyz[1], origin[1]));
            r[8..12].copy_from_slice(&q(s.xyz[2], 0.0));
            r[12..14].copy_from_slice(&s.intensity.to_le_bytes());
            r[14] = s.returns.0 | s.returns.1 << 3;
            r[15] = s.class;
            r[16] = s.angle as u8;
            r[18..20].copy_from_slice(&7u16.to_le_bytes());
            let rgb_at = match format {
                1 => {
                    r[20..28].copy_from_slice(&s.gps.to_le_bytes());
                    None
                }
                2 => Some(20),
                3 => {
                    r[20..28].copy_from_slice(&s.gps.to_le_bytes());
                    Some(28)
                }
                _ => None,
            };
            if let Some(o) = rgb_at {
                for c in 0..3 {
                    r[o + 2 * c..o + 2 * c + 2].copy_from_slice(&s.rgb[c].to_le_bytes());
                }
            }
        });
        w.write_all(&buf).expect("records");
    }
    w.flush().expect("flush");
}

/// Anonymous resident memory now, in bytes (heap and other private memory; not the mapped files):
/// resident minus shared (file and shmem) pages of `/proc/self/statm`, which costs a fraction of
/// reading `/proc/self/status` (its ~40 fields every 5 ms were 2 % of a LAZ decode's CPU seconds).
fn rss_anon() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let f: Vec<u64> = s.split_whitespace().take(3).map(|v| v.parse().unwrap_or(0)).collect();
    f.get(1).zip(f.get(2)).map_or(0, |(r, sh)| r.saturating_sub(*sh)) * 4096 // (4 KiB pages)
}

/// Peak resident memory since the last reset, in bytes.
fn peak_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One measured way of reading a file.
struct Runs {
    /// Points the last run gave.
    points: u64,
    rates: Vec<f64>,
    cpu: Vec<f64>,
    /// Peak VmHWM growth (mapped file pages included).
    peak: u64,
    /// Peak anonymous memory above what the process held before (sampled every 5 ms).
    anon: u64,
}

impl Runs {
    fn best(&self) -> f64 {
        self.rates.iter().cloned().fold(0.0, f64::max)
    }
    fn median(&self) -> f64 {
        let mut r = self.rates.clone();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    }
    fn cpu_median(&self) -> f64 {
        let mut r = self.cpu.clone();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    }
}

fn measure(runs: u32, mut f: impl FnMut() -> u64) -> Runs {
    let mut out = Runs { points: 0, rates: Vec::new(), cpu: Vec::new(), peak: 0, anon: 0 };
    for _ in 0..runs {
        reset_peak();
        let base = peak_rss();
        let base_anon = rss_anon();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let anon = std::sync::atomic::AtomicU64::new(base_anon);
        let (n, s, c) = std::thread::scope(|scope| {
            // The sampler's own CPU time is taken off the run's (it is the bench's, not the loader's).
            let sampler = scope.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    anon.fetch_max(rss_anon(), std::sync::atomic::Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                cpu_time::thread_s()
            });
            let (t, c) = (Instant::now(), cpu_time::process_s());
            let n = f();
            let (s, c) = (t.elapsed().as_secs_f64(), cpu_time::process_s() - c);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            (n, s, c - sampler.join().unwrap_or(0.0))
        });
        out.points = n;
        out.cpu.push(c);
        out.rates.push(n as f64 / s);
        out.peak = out.peak.max(peak_rss().saturating_sub(base));
        out.anon = out.anon.max(anon.into_inner().saturating_sub(base_anon));
    }
    out
}

/// The device-only stream ([`pcv_io::device::stream_files`], what the CUDA upload runs) into a sink
/// that only counts: its rate and host memory without a GPU. `PCV_BENCH_MAX_POINTS=N` streams a
/// subsample of N, as `--max-points N` (or a cloud that does not fit) does; the rate is then still of
/// the points read. Returns the points read.
fn device_stream(path: &Path) -> u64 {
    let cap = pcv_io::device::Capacity {
        points: u64::MAX / 64,
        bytes_per_point: 40,
        free_bytes: u64::MAX,
        device: "none".into(),
    };
    let max_points = std::env::var("PCV_BENCH_MAX_POINTS").ok().map(|s| count(&s));
    let plan = pcv_io::device::plan(&[path.to_path_buf()], &LoadOptions::quiet(), &cap, max_points).expect("plan");
    let (declared, planned) = (plan.declared, plan.planned_points());
    let mut n = 0u64;
    pcv_io::device::stream_files(&plan, &mut |p, _| {
        n += p.len() as u64;
        Ok(())
    })
    .expect("stream");
    assert!(n <= planned, "the stream sent {n} points of a subsample of {planned}");
    if planned < declared {
        declared
    } else {
        n
    }
}

/// Decodes `path` on all cores into a sink that only counts points.
fn decode_only(path: &Path) -> u64 {
    let bytes = FileBytes::open(path).expect("open");
    let format = load::detect(path, bytes.bytes()).expect("detect");
    let src = load::open_source(bytes.bytes(), format, load::is_pts(path)).expect("open source");
    let origin = src.estimate().map(|b| load::choose_origin(&b).to_array()).unwrap_or([0.0; 3]);
    let mut n = 0u64;
    stream(&*src, &origin, &Progress::hidden(), &mut |st: &Staging| -> Result<(), FormatError> {
        n += st.len() as u64;
        Ok(())
    })
    .map_err(|e| match e {
        StreamError::Decode(e) | StreamError::Sink(e) => e,
    })
    .expect("decode");
    n
}

fn full_load(path: &Path) -> u64 {
    let c = load_files_with(&[path.to_path_buf()], &LoadOptions::quiet()).expect("load");
    c.points.len() as u64
}

/// `PCV_BENCH_ONLY=decode|device|load` runs only that one of the three (for profiling, or files too
/// large for a host cloud); the others' columns then say `-`.
fn only(what: &str) -> bool {
    std::env::var("PCV_BENCH_ONLY").map_or(true, |v| v == what)
}

fn row(name: &str, path: &Path, runs: u32) {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let d = only("decode").then(|| measure(runs, || decode_only(path)));
    let s = only("device").then(|| measure(runs, || device_stream(path)));
    let l = only("load").then(|| measure(runs, || full_load(path)));
    let n = [&d, &s, &l].into_iter().flatten().map(|r| r.points).next().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let f = |r: &Option<Runs>, v: &dyn Fn(&Runs) -> String| r.as_ref().map_or("-".to_string(), v);
    println!(
        "| {name} | {:.1}M | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        n as f64 / 1e6,
        size as f64 / 1e9,
        f(&d, &|r| format!("{:.1}", r.best() / 1e6)),
        f(&d, &|r| format!("{:.1}", r.median() / 1e6)),
        f(&d, &|r| format!("{:.2}", r.cpu_median())),
        f(&s, &|r| format!("{:.1}", r.best() / 1e6)),
        f(&s, &|r| format!("{:.0}", mib(r.anon))),
        f(&l, &|r| format!("{:.1}", r.best() / 1e6)),
        f(&l, &|r| format!("{:.1}", r.median() / 1e6)),
        f(&l, &|r| format!("{:.2}", r.cpu_median())),
        f(&l, &|r| format!("{:.0}", mib(r.anon))),
        f(&l, &|r| format!("{:.1}", r.anon as f64 / n.max(1) as f64)),
    );
    if std::env::var_os("PCV_BENCH_RUNS").is_some() {
        // Every run's rate and CPU seconds (for A/B comparisons over several invocations).
        for (what, r) in [("decode", &d), ("device", &s), ("load", &l)] {
            if let Some(r) = r {
                let each: Vec<String> =
                    r.rates.iter().zip(&r.cpu).map(|(m, c)| format!("{:.2} M/s {:.2} CPU-s", m / 1e6, c)).collect();
                println!("{what}: {}", each.join(", "));
            }
        }
    }
}

fn header(runs: u32) {
    println!(
        "pcv load bench: {} threads, {runs} runs each, LAZ 0-3 and 6-8 decoder: {}, load average before: {} (1, 5, 15 min)",
        rayon::current_num_threads(),
        if pcv_laz::enabled() { "pcv" } else { "laz crate" },
        load_average()
    );
    println!("| file | points | GB | decode best M/s | decode median M/s | decode CPU s | device stream best M/s | device stream anon MiB | load best M/s | load median M/s | load CPU s | load anon MiB | load anon B/point |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut ply, mut las, mut laz, mut runs, mut keep, mut laz_format) =
        (100_000_000u64, 100_000_000u64, 20_000_000u64, 3u32, false, 3u8);
    let mut rgb8 = false;
    let mut dir = std::env::temp_dir();
    let mut files: Vec<PathBuf> = Vec::new();
    let (mut tile_from, mut copies): (Option<PathBuf>, u64) = (None, 100);
    let mut fast_las: Option<(u64, PathBuf)> = None;
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| usage_error(&format!("{a} needs a value")));
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            "--ply" => ply = count(&val()),
            "--las" => las = count(&val()),
            "--laz" => laz = count(&val()),
            "--laz-format" => laz_format = number(&val(), "point format"),
            "--runs" => runs = number(&val(), "number of runs"),
            "--dir" => dir = PathBuf::from(val()),
            "--keep" => keep = true,
            "--rgb8" => rgb8 = true,
            "--threads" => {
                let n: usize = number(&val(), "thread count");
                if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
                    usage_error(&format!("--threads {n}: {e}"));
                }
            }
            "--file" => files.push(PathBuf::from(val())),
            "--tile" => tile_from = Some(PathBuf::from(val())),
            "--write-las" => {
                let n = count(&val());
                fast_las = Some((
                    n,
                    PathBuf::from(args.next().unwrap_or_else(|| usage_error("--write-las needs a count and a file"))),
                ));
            }
            "--copies" => copies = count(&val()),
            "--laz-decoder" => match val().as_str() {
                "pcv" => pcv_laz::set_enabled(true),
                "laz" => pcv_laz::set_enabled(false),
                other => usage_error(&format!("--laz-decoder takes pcv or laz, not {other}")),
            },
            other => usage_error(&format!("unknown argument {other}")),
        }
    }
    if let Some((n, path)) = fast_las {
        let t = Instant::now();
        write_las_fast(&path, n, laz_format, rgb8);
        eprintln!(
            "wrote {} ({n} points, point format {laz_format}) in {:.1} s",
            path.display(),
            t.elapsed().as_secs_f64()
        );
        return;
    }
    if let Some(src) = tile_from {
        let las_path = tile(&src, copies, &dir);
        let laz_path = las_path.with_extension("laz");
        pcv_io::convert::convert(std::slice::from_ref(&las_path), &laz_path, &LoadOptions::quiet()).expect("LAZ");
        for p in [&las_path, &laz_path] {
            std::fs::File::open(p).and_then(|f| f.sync_all()).expect("sync");
        }
        if runs == 0 {
            eprintln!("wrote {} and {}", las_path.display(), laz_path.display());
            return; // only writing the files (with --keep)
        }
        header(runs);
        for p in [&las_path, &laz_path] {
            let n = full_load(p);
            let size = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
            let name = format!(
                "{} ({copies} copies, {:.2} B/point)",
                p.file_name().unwrap_or_default().to_string_lossy(),
                size as f64 / n as f64
            );
            row(&name, p, runs);
            if !keep {
                let _ = std::fs::remove_file(p);
            }
        }
        return;
    }
    if !files.is_empty() {
        header(runs);
        for f in &files {
            row(&f.display().to_string(), f, runs);
        }
        return;
    }
    let mut made = Vec::new();
    if ply > 0 {
        let p = dir.join(format!("pcv-load-bench-{ply}.ply"));
        let t = Instant::now();
        write_ply(&p, ply);
        eprintln!("wrote {} ({:.1} s)", p.display(), t.elapsed().as_secs_f64());
        made.push((format!("binary PLY (float xyz, uchar rgb, {} B/point)", 15), p));
    }
    let formats = [(las, "las"), (laz, "laz")];
    for (n, ext) in formats {
        if n == 0 {
            continue;
        }
        let t = Instant::now();
        let kind = format!("{n}-f{laz_format}{}", if rgb8 { "-rgb8" } else { "" });
        let las_path = dir.join(format!("pcv-load-bench-{kind}{}.las", if ext == "laz" { "-src" } else { "" }));
        write_las(&las_path, n, laz_format, rgb8);
        let p = if ext == "laz" {
            let laz_path = dir.join(format!("pcv-load-bench-{kind}.laz"));
            pcv_io::convert::convert(std::slice::from_ref(&las_path), &laz_path, &LoadOptions::quiet()).expect("LAZ");
            let _ = std::fs::remove_file(&las_path);
            laz_path
        } else {
            las_path
        };
        eprintln!("wrote {} ({:.1} s)", p.display(), t.elapsed().as_secs_f64());
        let rec = pcv_io::formats::las::FORMAT_SIZES[laz_format as usize];
        let colors = if rgb8 { ", 8-bit colors" } else { "" };
        made.push((format!("{} (point format {laz_format}, {rec} B/point{colors})", ext.to_uppercase()), p));
    }
    // Written back to disk first, so the timed loads read a clean page cache.
    for (_, p) in &made {
        std::fs::File::open(p).and_then(|f| f.sync_all()).expect("sync");
    }
    if runs == 0 {
        return; // only writing the files (with --keep)
    }
    header(runs);
    for (name, p) in &made {
        row(name, p, runs);
        if !keep {
            let _ = std::fs::remove_file(p);
        }
    }
}
