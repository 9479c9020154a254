//! A bounded fuzz run for CI: every parser gets thousands of random and mutated inputs (fixed seed,
//! about two seconds per format), must never panic, and must never make an allocation out of proportion
//! with its input (a lying header must not reserve gigabytes: at most 64 bytes per input byte, or
//! 16 MiB). Every file in `fuzz/regressions/` (inputs that once crashed a cargo-fuzz target, and the
//! damaged files of `samples::damaged`, named `*.error`, which must be refused) is replayed first.
//! Every E57 error must name a byte of the file.
//!
//! `PCV_FUZZ_SECS=N` changes the time per format; `PCV_WRITE_FUZZ_CORPUS=1` also writes the seed
//! files to `fuzz/corpus/<target>/` for cargo-fuzz; `PCV_WRITE_REGRESSIONS=1` writes the damaged
//! files to `fuzz/regressions/<target>/<name>.error`.
mod samples;

use pcv_io::formats::{Format, FormatError, Progress, ReadOptions};
use pcv_io::load::decode_bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use samples::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts the largest single allocation made while an input is decoded, and the peak of the bytes
/// allocated at once.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The counters are the whole process's: the tests take turns, so that one test's allocations (its
/// seeds, say) are never charged to the other's input.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The EPSG registry a coordinate system is looked up in is built once, on first use (about 19 MB):
    // built here, so that the first input naming an EPSG code is not charged for it.
    pcv_io::crs::parse("EPSG:4326+5703", "warm-up").expect("the EPSG registry");
    turn
}

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; only sizes are recorded.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        grew(l.size());
        if l.size() > 100 << 20 && std::env::var_os("PCV_ABORT_ON_BIG_ALLOC").is_some() {
            std::process::abort();
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Ordering::Relaxed);
        grew(l.size());
        if l.size() > 100 << 20 && std::env::var_os("PCV_ABORT_ON_BIG_ALLOC").is_some() {
            std::process::abort();
        }
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LARGEST.fetch_max(new, Ordering::Relaxed);
        grew(new);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        if new > 100 << 20 && std::env::var_os("PCV_ABORT_ON_BIG_ALLOC").is_some() {
            std::process::abort();
        }
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Largest = Largest;

/// The cargo-fuzz targets and the formats they feed.
const TARGETS: [(&str, Format, bool); 6] = [
    ("ply", Format::Ply, false),
    ("las", Format::Las, false),
    ("pcd", Format::Pcd, false),
    ("e57", Format::E57, false),
    ("text", Format::Text, true),
    ("raw", Format::Raw, false),
];

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let pts = points(40, [0.0; 3]);
    let utm = points(40, [500_000.0, 4_000_000.0, 100.0]);
    let rows = |p: &[Pt]| -> Vec<Vec<f64>> {
        p.iter()
            .map(|q| {
                vec![
                    q.xyz[0],
                    q.xyz[1],
                    q.xyz[2],
                    q.rgb[0] as f64,
                    q.rgb[1] as f64,
                    q.rgb[2] as f64,
                    q.intensity as f64,
                ]
            })
            .collect()
    };
    let props = [
        ("x", "float"),
        ("y", "float"),
        ("z", "float"),
        ("red", "uchar"),
        ("green", "uchar"),
        ("blue", "uchar"),
        ("intensity", "ushort"),
    ];
    let dprops = [
        ("x", "double"),
        ("y", "double"),
        ("z", "double"),
        ("r", "uchar"),
        ("g", "uchar"),
        ("b", "uchar"),
        ("scalar_x", "float"),
    ];
    match target {
        "ply" => vec![
            ply(PlyEnc::Ascii, &props, &rows(&pts), false, 3),
            ply(PlyEnc::Le, &props, &rows(&pts), true, 3),
            ply(PlyEnc::Be, &dprops, &rows(&utm), false, 0),
        ],
        "las" => vec![
            las(&pts, 2, 3, false, [0.0; 3], |c| c as u16 * 257),
            las(&utm, 4, 7, false, [500_000.0, 4_000_000.0, 0.0], |c| c as u16),
            las(&pts, 2, 3, true, [0.0; 3], |c| c as u16 * 257),
            las(&utm, 4, 7, true, [500_000.0, 4_000_000.0, 0.0], |c| c as u16 * 257),
            las(&pts, 3, 5, true, [0.0; 3], |c| c as u16 * 257),
        ],
        "pcd" => vec![
            pcd(&pts, PcdData::Ascii, true, 1),
            pcd(&pts, PcdData::Binary, false, 1),
            pcd(&pts, PcdData::Compressed, true, 1),
        ],
        "e57" => vec![e57(&pts[..10], [1.0, 2.0, 3.0]).0],
        "text" => vec![
            text(&pts, " ", &["x", "y", "z", "r", "g", "b", "i"], None),
            text(&utm, ",", &["x", "y", "z", "i", "c"], Some("x,y,z,intensity,classification")),
            [b"40\n".to_vec(), text(&pts, " ", &["x", "y", "z", "i", "r", "g", "b"], None)].concat(),
        ],
        "raw" => {
            let cloud = pcv_io::scene::generate(64, 1, false);
            vec![bytemuck::cast_slice(&cloud.points[..]).to_vec()]
        }
        _ => unreachable!(),
    }
}

/// One mutation of `input` (or a fresh random input).
fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut d = seeds[rng.random_range(0..seeds.len())].clone();
    let rounds = rng.random_range(1..=4);
    for _ in 0..rounds {
        let len = d.len().max(1);
        match rng.random_range(0..10) {
            0 => {
                // Flip bits.
                for _ in 0..rng.random_range(1..8) {
                    let i = rng.random_range(0..len);
                    if let Some(b) = d.get_mut(i) {
                        *b ^= 1 << rng.random_range(0..8);
                    }
                }
            }
            1 => {
                let i = rng.random_range(0..len);
                if let Some(b) = d.get_mut(i) {
                    *b = [0u8, 0xff, 0x7f, 0x80, b'0', b'9', b'\n', b' ', b'-', b'.'][rng.random_range(0..10)];
                }
            }
            2 => d.truncate(rng.random_range(0..len)),
            3 => {
                let i = rng.random_range(0..=d.len());
                let extra: Vec<u8> = (0..rng.random_range(1..32)).map(|_| rng.random::<u8>()).collect();
                d.splice(i..i, extra);
            }
            4 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(0..256)).min(d.len());
                if a < b {
                    d.drain(a..b);
                }
            }
            5 => {
                // Overwrite an integer with an interesting value (counts, offsets, sizes).
                let v: u64 = [0, 1, 0xff, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, u64::MAX, 1 << 40, 12345678]
                    [rng.random_range(0..10)];
                let w = [1usize, 2, 4, 8][rng.random_range(0..4)];
                let i = rng.random_range(0..len);
                for k in 0..w {
                    if let Some(b) = d.get_mut(i + k) {
                        *b = (v >> (8 * k)) as u8;
                    }
                }
            }
            6 => {
                // Replace a decimal number in the text (header counts, sizes, values).
                let s = String::from_utf8_lossy(&d).into_owned();
                let starts: Vec<usize> = s.char_indices().filter(|(_, c)| c.is_ascii_digit()).map(|(i, _)| i).collect();
                if !starts.is_empty() {
                    let i = starts[rng.random_range(0..starts.len())];
                    let end = s[i..].find(|c: char| !c.is_ascii_digit()).map(|e| i + e).unwrap_or(s.len());
                    let with = ["0", "1", "999999999999", "18446744073709551615", "-1", "nan", "4294967295", "2"]
                        [rng.random_range(0..8)];
                    d = format!("{}{with}{}", &s[..i], &s[end..]).into_bytes();
                }
            }
            7 => {
                // Duplicate a range.
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(0..512)).min(d.len());
                let piece = d[a.min(d.len())..b].to_vec();
                let at = rng.random_range(0..=d.len());
                d.splice(at..at, piece);
            }
            8 => {
                // Random bytes after the first few (keeps the magic).
                let keep = rng.random_range(0..64).min(d.len());
                d.truncate(keep);
                d.extend((0..rng.random_range(0..2048)).map(|_| rng.random::<u8>()));
            }
            _ => {
                d = (0..rng.random_range(0..512)).map(|_| rng.random::<u8>()).collect();
            }
        }
    }
    d
}

/// Bytes a parser may allocate at once per byte of input (beyond 16 MiB).
const ALLOC_PER_INPUT_BYTE: usize = 64;

/// Decodes `data`; fails the test on a panic, an allocation larger than the input allows, or an E57
/// error that names no byte. Returns the decoder's error, if any.
fn feed(target: &str, format: Format, pts: bool, data: &[u8], what: &str) -> Option<FormatError> {
    let progress = Progress::hidden();
    let opts = ReadOptions { origin: Default::default(), progress: &progress, fields: Default::default() };
    LARGEST.store(0, Ordering::Relaxed);
    let r = std::panic::catch_unwind(|| decode_bytes(data, format, pts, &opts).err());
    let largest = LARGEST.load(Ordering::Relaxed);
    let limit = (data.len() * ALLOC_PER_INPUT_BYTE).max(16 << 20);
    let unplaced = match &r {
        Ok(Some(e)) if format == Format::E57 && !matches!(e, FormatError::AtByte { .. }) => Some(e.to_string()),
        _ => None,
    };
    if r.is_err() || largest > limit || unplaced.is_some() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-smoke-failures");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{target}-{}", data.len()));
        let _ = std::fs::write(&file, data);
        let why = if r.is_err() {
            "the parser panicked".to_string()
        } else if let Some(e) = unplaced {
            format!("an E57 error that names no byte: {e}")
        } else {
            format!("an allocation of {largest} bytes for a {}-byte input", data.len())
        };
        panic!("{target}: {what}: {why} (input saved to {})", file.display());
    }
    r.ok().flatten()
}

/// The issue's LAZ files that lie about their count (a 120 MB file declaring 2^32 - 1 points aborted
/// allocating 64 GiB; a 0.6 MB one declaring 36 M peaked at 1.2 GB), at a smaller scale: a LAZ of
/// 140 000 points (3 chunks) declaring 2^32 - 1, 1 000 000 (past the chunk table) and 149 999 (within
/// the last chunk's room), refused with a peak of live memory below 64 bytes per file byte + 16 MiB.
fn lying_laz_counts_allocate_little() {
    let pts = points(140_000, [500_000.0, 4_000_000.0, 100.0]);
    let good = las(&pts, 2, 3, true, [500_000.0, 4_000_000.0, 0.0], |c| c as u16 * 257);
    for count in [u32::MAX, 1_000_000, 149_999] {
        let mut lie = good.clone();
        lie[107..111].copy_from_slice(&count.to_le_bytes());
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let err = feed("las", Format::Laz, false, &lie, &format!("a LAZ declaring {count} points"));
        let peak = PEAK.load(Ordering::Relaxed) - base;
        eprintln!(
            "fuzz smoke: {}-byte LAZ declaring {count} points: peak {peak} bytes, {:?}",
            lie.len(),
            err.as_ref().map(|e| e.to_string())
        );
        assert!(err.is_some(), "a LAZ declaring {count} points loaded");
        assert!(
            peak <= lie.len() * ALLOC_PER_INPUT_BYTE + (16 << 20),
            "a LAZ declaring {count} points: peak {peak} bytes"
        );
    }
}

#[test]
fn every_parser_survives_random_and_mutated_input() {
    let _turn = one_at_a_time();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if std::env::var("PCV_WRITE_REGRESSIONS").is_ok_and(|v| v == "1") {
        for (target, name, bytes, _) in damaged() {
            let dir = root.join("fuzz/regressions").join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{name}.error")), bytes).unwrap();
        }
    }
    lying_laz_counts_allocate_little();
    let secs: f64 = std::env::var("PCV_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let mut total = 0usize;
    for (k, (target, format, pts)) in TARGETS.iter().enumerate() {
        // Regressions first.
        if let Ok(entries) = std::fs::read_dir(root.join("fuzz/regressions").join(target)) {
            for e in entries.flatten() {
                let data = std::fs::read(e.path()).unwrap();
                let err = feed(target, *format, *pts, &data, &format!("regression {}", e.path().display()));
                if e.path().extension().is_some_and(|x| x == "error") {
                    assert!(
                        err.is_some(),
                        "{}: a damaged file that must be refused decoded without an error",
                        e.path().display()
                    );
                }
                total += 1;
            }
        }
        let seeds = seeds(target);
        if std::env::var("PCV_WRITE_FUZZ_CORPUS").is_ok_and(|v| v == "1") {
            let dir = root.join("fuzz/corpus").join(target);
            std::fs::create_dir_all(&dir).unwrap();
            for (i, s) in seeds.iter().enumerate() {
                std::fs::write(dir.join(format!("seed-{i}")), s).unwrap();
            }
        }
        for s in &seeds {
            feed(target, *format, *pts, s, "seed");
        }
        let mut rng = StdRng::seed_from_u64(0x5eed_f022 + k as u64);
        let start = Instant::now();
        let mut n = 0;
        while n < 200_000 && (n < 1000 || start.elapsed() < Duration::from_secs_f64(secs)) {
            let input = mutate(&mut rng, &seeds);
            feed(target, *format, *pts, &input, &format!("mutation {n}"));
            if *format == Format::E57 {
                // Past the page checksums, into the XML and point parsers.
                let fixed = pcv_io::formats::e57::with_valid_checksums(&input);
                feed(target, *format, *pts, &fixed, &format!("mutation {n} with valid checksums"));
            }
            n += 1;
        }
        eprintln!("fuzz smoke: {target}: {n} inputs in {:.1} s", start.elapsed().as_secs_f64());
        total += n;
    }
    assert!(total >= 6000);
}

/// A small COPC file of several levels (2000 points, nodes of at most 100), written by `pcv convert`.
fn copc_seed() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.las");
    let mut pts = points(2000, [500_000.0, 4_000_000.0, 100.0]);
    for (i, p) in pts.iter_mut().enumerate() {
        p.xyz[0] = 500_000.0 + (i as f64 * 7.125) % 200.0;
        p.xyz[1] = 4_000_000.0 + (i as f64 * 3.25) % 100.0;
    }
    std::fs::write(&src, las(&pts, 2, 3, false, [500_000.0, 4_000_000.0, 0.0], |c| c as u16 * 257)).unwrap();
    let out = dir.path().join("s.copc.laz");
    let opts = pcv_io::load::LoadOptions::quiet();
    pcv_io::convert::copc::write_with(&[src], &out, &opts, 100).unwrap();
    std::fs::read(out).unwrap()
}

/// Damaged hierarchies that must be refused: (name, bytes).
fn copc_damaged(seed: &[u8]) -> Vec<(String, Vec<u8>)> {
    let f = pcv_io::formats::copc::CopcFile::from_bytes("seed", seed.to_vec()).unwrap();
    let (page, size) = (f.info().root_hier_offset as usize, f.info().root_hier_size as usize);
    let with = |at: usize, bytes: &[u8]| {
        let mut d = seed.to_vec();
        d[at..at + bytes.len()].copy_from_slice(bytes);
        d
    };
    vec![
        ("depth-out-of-range".into(), with(page + 32, &99i32.to_le_bytes())),
        ("key-outside-the-octree".into(), with(page + 36, &5i32.to_le_bytes())),
        ("chunk-past-the-end".into(), with(page + 16, &(seed.len() as u64).to_le_bytes())),
        (
            "page-loop".into(),
            with(
                page + 16,
                &[(page as u64).to_le_bytes().as_slice(), &(size as i32).to_le_bytes(), &(-1i32).to_le_bytes()]
                    .concat(),
            ),
        ),
        ("page-cut".into(), seed[..page + size / 2].to_vec()),
        ("count-lie".into(), with(page + 28, &i32::MAX.to_le_bytes())),
    ]
}

/// Feeds COPC bytes to the reader: no panic, no allocation out of proportion. Returns its error.
fn feed_copc(data: &[u8], what: &str) -> Option<String> {
    LARGEST.store(0, Ordering::Relaxed);
    let r = std::panic::catch_unwind(|| pcv_io::formats::copc::read_all_nodes(data.to_vec()).err());
    let largest = LARGEST.load(Ordering::Relaxed);
    let limit = (data.len() * ALLOC_PER_INPUT_BYTE).max(16 << 20);
    if r.is_err() || largest > limit {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-smoke-failures");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("copc-{}", data.len()));
        let _ = std::fs::write(&file, data);
        panic!(
            "copc: {what}: {} (input saved to {})",
            if r.is_err() { "the reader panicked".into() } else { format!("an allocation of {largest} bytes") },
            file.display()
        );
    }
    r.ok().flatten()
}

#[test]
fn copc_reader_survives_damaged_hierarchies_and_nodes() {
    let _turn = one_at_a_time();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seed = copc_seed();
    assert!(feed_copc(&seed, "seed").is_none(), "the seed must read");
    let dir = root.join("fuzz/regressions/copc");
    if std::env::var("PCV_WRITE_REGRESSIONS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in copc_damaged(&seed) {
            std::fs::write(dir.join(format!("{name}.error")), bytes).unwrap();
        }
    }
    if std::env::var("PCV_WRITE_FUZZ_CORPUS").is_ok_and(|v| v == "1") {
        let c = root.join("fuzz/corpus/copc");
        std::fs::create_dir_all(&c).unwrap();
        std::fs::write(c.join("seed-0"), &seed).unwrap();
    }
    let mut replayed = 0;
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let data = std::fs::read(e.path()).unwrap();
        let err = feed_copc(&data, &format!("regression {}", e.path().display()));
        if e.path().extension().is_some_and(|x| x == "error") {
            let err = err.unwrap_or_else(|| {
                panic!("{}: a damaged file that must be refused read without an error", e.path().display())
            });
            assert!(err.starts_with("fuzz.copc.laz: "), "{err}");
        }
        replayed += 1;
    }
    for (name, bytes) in copc_damaged(&seed) {
        let err = feed_copc(&bytes, &name).unwrap_or_else(|| panic!("{name}: read without an error"));
        assert!(err.starts_with("fuzz.copc.laz: "), "{name}: {err}");
    }
    // Mutations, half of them aimed at the hierarchy page (the file's last bytes).
    let f = pcv_io::formats::copc::CopcFile::from_bytes("seed", seed.clone()).unwrap();
    let page = f.info().root_hier_offset as usize;
    let secs: f64 = std::env::var("PCV_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let mut rng = StdRng::seed_from_u64(0xc09c);
    let start = Instant::now();
    let mut n = 0;
    let seeds = [seed.clone()];
    while n < 200_000 && (n < 300 || start.elapsed() < Duration::from_secs_f64(secs)) {
        let input = if n % 2 == 0 {
            let mut d = seed.clone();
            for _ in 0..rng.random_range(1..6) {
                let i = rng.random_range(page..d.len());
                match rng.random_range(0..3) {
                    0 => d[i] ^= 1 << rng.random_range(0..8),
                    1 => d[i] = [0u8, 0xff, 0x7f, 0x80, 1][rng.random_range(0..5)],
                    _ => {
                        let v: i32 = [-1, 0, 1, 2, 31, 32, i32::MAX, i32::MIN][rng.random_range(0..8)];
                        let at = page + (i - page) / 4 * 4;
                        if at + 4 <= d.len() {
                            d[at..at + 4].copy_from_slice(&v.to_le_bytes());
                        }
                    }
                }
            }
            d
        } else {
            mutate(&mut rng, &seeds)
        };
        feed_copc(&input, &format!("mutation {n}"));
        n += 1;
    }
    eprintln!("fuzz smoke: copc: {replayed} regressions, {n} inputs in {:.1} s", start.elapsed().as_secs_f64());
}

/// Runs `pcv render FILE` on the CPU backend (level of detail, as COPC files are drawn) with a watchdog:
/// its exit code and stderr, and how long it took; a run past `limit` is killed and reported.
fn render_copc(file: &Path, limit: Duration) -> (Option<i32>, String, f64) {
    use std::process::{Command, Stdio};
    let png = file.with_extension("png");
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pcv"))
        .args(["render", "--backend", "cpu", "--size", "160x90", "--point-budget", "1M", "-o"])
        .arg(&png)
        .arg(file)
        .env_remove("DISPLAY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running pcv");
    let mut stderr = child.stderr.take().expect("pcv's stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for pcv") {
            break s;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pcv render {} ran past {limit:?} (killed)", file.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    (status.code(), reader.join().unwrap_or_default(), started.elapsed().as_secs_f64())
}

#[test]
fn copc_renders_of_damaged_files_finish_within_seconds() {
    // The whole path a user meets (open, level of detail, loader threads, the frame) on damaged COPC
    // files: each must finish within 5 s with an image (exit 0) or a named error (exit 1), never a
    // hang, a panic (101) or a signal. The regressions first, then mutations of the seed's nodes and
    // hierarchy (fixed seed, PCV_FUZZ_RENDERS cases).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let limit = Duration::from_secs(5);
    let check = |file: &Path, what: &str| -> Option<i32> {
        let (code, err, secs) = render_copc(file, limit + Duration::from_secs(5));
        assert!(secs < limit.as_secs_f64(), "{what}: {secs:.1} s:\n{err}");
        assert!(matches!(code, Some(0 | 1)) && !err.contains("panicked"), "{what}: exit {code:?}:\n{err}");
        if code == Some(1) {
            assert!(err.contains("pcv: error: "), "{what}: an exit 1 without an error line:\n{err}");
        }
        code
    };
    let seed = copc_seed();
    if std::env::var("PCV_WRITE_REGRESSIONS").is_ok_and(|v| v == "1") {
        // The root node's layer sizes overwritten: that node cannot be decoded, the rest can.
        use pcv_io::octree::NodeSource;
        let f = pcv_io::formats::copc::CopcFile::from_bytes("seed", seed.clone()).unwrap();
        let at = f.octree().nodes.iter().find(|n| n.key.depth == 0).unwrap().byte_offset as usize + 36;
        let mut d = seed.clone();
        d[at..at + 24].iter_mut().for_each(|b| *b ^= 0xff);
        std::fs::write(root.join("fuzz/regressions/copc/root-node-layers.partial"), d).unwrap();
    }
    let mut replayed = 0;
    for e in std::fs::read_dir(root.join("fuzz/regressions/copc")).into_iter().flatten().flatten() {
        let f = dir.path().join("regression.copc.laz");
        std::fs::copy(e.path(), &f).unwrap();
        let code = check(&f, &format!("regression {}", e.path().display()));
        if e.path().extension().is_some_and(|x| x == "partial") {
            assert_eq!(code, Some(1), "{}: a damaged node must make the exit status say so", e.path().display());
        }
        replayed += 1;
    }
    let f = dir.path().join("seed.copc.laz");
    std::fs::write(&f, &seed).unwrap();
    assert_eq!(check(&f, "seed"), Some(0), "the seed renders");
    let cases: usize = std::env::var("PCV_FUZZ_RENDERS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    use pcv_io::octree::NodeSource;
    let info = pcv_io::formats::copc::CopcFile::from_bytes("seed", seed.clone()).unwrap();
    let first_node = info.octree().nodes.iter().map(|n| n.byte_offset as usize).min().unwrap_or(0);
    let mut rng = StdRng::seed_from_u64(0xc09c_4e4d);
    let mut codes = [0usize; 2];
    for n in 0..cases {
        let mut d = seed.clone();
        for _ in 0..rng.random_range(1..8) {
            let i = rng.random_range(first_node..d.len());
            d[i] = match rng.random_range(0..3) {
                0 => d[i] ^ (1 << rng.random_range(0..8)),
                1 => [0u8, 0xff, 0x7f, 0x80][rng.random_range(0..4)],
                _ => rng.random(),
            };
        }
        std::fs::write(&f, &d).unwrap();
        let code = check(&f, &format!("mutation {n}"));
        codes[code.unwrap_or(1) as usize] += 1;
    }
    eprintln!(
        "copc render fuzz: {replayed} regressions, {cases} mutations: {} drawn whole, {} errors",
        codes[0], codes[1]
    );
}

#[test]
fn the_vpc_reader_survives_mutated_collections() {
    let _one = one_at_a_time();
    let seed = br#"{"type":"FeatureCollection","features":[{"type":"Feature","stac_version":"1.0.0","id":"t0","bbox":[500000,4100000,0,500100,4100100,40],"properties":{"pc:count":300,"proj:bbox":[500000,4100000,0,500100,4100100,40]},"assets":{"data":{"href":"./tiles/t0.copc.laz","roles":["data"]}}},{"type":"Feature","id":"t1","properties":{},"assets":{"x":{"href":"https://example.org/a/t1.laz"}}}]}"#;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(root.join("fuzz/regressions/vpc"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .collect();
    let replayed = inputs.len();
    let mut rng = StdRng::seed_from_u64(29);
    let seeds = vec![seed.to_vec()];
    inputs.extend((0..3000).map(|_| mutate(&mut rng, &seeds)));
    let (mut ok, mut errors) = (0, 0);
    for data in &inputs {
        match pcv_io::collection::parse_vpc(&String::from_utf8_lossy(data), "fuzz.vpc") {
            Ok(tiles) => {
                ok += 1;
                assert!(!tiles.is_empty(), "an empty collection is an error");
            }
            Err(e) => {
                errors += 1;
                assert!(e.to_string().contains("fuzz.vpc"), "errors name the collection: {e}");
            }
        }
    }
    assert!(ok > 0 && errors > 0, "{ok} read, {errors} refused");
    eprintln!("fuzz smoke: vpc: {replayed} regressions, {} inputs: {ok} read, {errors} refused", inputs.len());
}
