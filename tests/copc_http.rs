//! COPC over HTTP: pcv's range-request reader against HTTP servers the test starts on 127.0.0.1 (never
//! an outside host), serving a COPC file the test writes: a normal one, a slow one (to see requests in
//! parallel), a flaky one (503 twice per range, then the bytes: retries), a failing one (always 500) and
//! one without range support (200 with the whole file).
mod samples;

use pcv_io::formats::copc::{self, http::HttpOptions};
use pcv_io::octree::NodeSource;
use samples::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Normal,
    Slow,
    Flaky,
    Failing,
    NoRanges,
    /// Reads each request and never answers.
    Silent,
    /// Answers the first requests, then reads each request and never answers.
    StallAfter(usize),
}

/// What a server saw.
#[derive(Default)]
struct Counts {
    requests: AtomicUsize,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    per_range: Mutex<HashMap<String, usize>>,
}

/// Serves `data` at http://127.0.0.1:PORT/f.copc.laz; returns the URL and the counts.
fn serve(data: Arc<Vec<u8>>, mode: Mode) -> (String, Arc<Counts>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/f.copc.laz", l.local_addr().unwrap());
    let counts = Arc::new(Counts::default());
    let c = counts.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let (data, c) = (data.clone(), c.clone());
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let mut range = None;
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 {
                            return;
                        }
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.trim().eq_ignore_ascii_case("range") {
                                range = Some(v.trim().to_string());
                            }
                        }
                    }
                    let n = c.requests.fetch_add(1, Ordering::SeqCst) + 1;
                    if matches!(mode, Mode::Silent) || matches!(mode, Mode::StallAfter(k) if n > k) {
                        // The connection stays open and silent (the test process ends the thread).
                        std::thread::sleep(Duration::from_secs(600));
                        return;
                    }
                    let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    c.most_in_flight.fetch_max(now, Ordering::SeqCst);
                    let key = range.clone().unwrap_or_default();
                    let seen = {
                        let mut m = c.per_range.lock().unwrap();
                        let e = m.entry(key).or_default();
                        *e += 1;
                        *e
                    };
                    if mode == Mode::Slow {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    let (status, body, extra) = match (mode, range) {
                        (Mode::Failing, _) => ("500 Internal Server Error", b"no".to_vec(), String::new()),
                        (Mode::Flaky, _) if seen <= 2 => ("503 Service Unavailable", b"busy".to_vec(), String::new()),
                        (Mode::NoRanges, _) | (_, None) => ("200 OK", data.to_vec(), String::new()),
                        (_, Some(r)) => {
                            let (a, b) = r.strip_prefix("bytes=").unwrap().split_once('-').unwrap();
                            let a: usize = a.parse().unwrap();
                            let b: usize = b.parse::<usize>().unwrap().min(data.len() - 1);
                            (
                                "206 Partial Content",
                                data[a..=b].to_vec(),
                                format!("Content-Range: bytes {a}-{b}/{}\r\nETag: \"v1\"\r\n", data.len()),
                            )
                        }
                    };
                    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}\r\n", body.len());
                    let ok =
                        w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).and_then(|_| w.flush()).is_ok();
                    c.in_flight.fetch_sub(1, Ordering::SeqCst);
                    if !ok {
                        return;
                    }
                }
            });
        }
    });
    (url, counts)
}

/// A COPC file of `n` points (nodes of at most 2000 points: many nodes), and its path.
fn copc_file(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let mut pts = points(n, [500_000.0, 4_000_000.0, 100.0]);
    for (i, p) in pts.iter_mut().enumerate() {
        p.xyz[0] = 500_000.0 + (i as f64 * 7.125) % 400.0;
        p.xyz[1] = 4_000_000.0 + (i as f64 * 3.25) % 300.0;
    }
    let src = dir.join("s.las");
    std::fs::write(&src, las(&pts, 2, 3, false, [500_000.0, 4_000_000.0, 0.0], |c| c as u16 * 257)).unwrap();
    let out = dir.join("s.copc.laz");
    let opts = pcv_io::load::LoadOptions::quiet();
    pcv_io::convert::copc::write_with(&[src], &out, &opts, 2000).unwrap();
    out
}

fn opts(cache: Option<&std::path::Path>) -> HttpOptions {
    HttpOptions {
        retries: 3,
        backoff: Duration::from_millis(10),
        cache_dir: cache.map(Into::into),
        ..HttpOptions::default()
    }
}

/// A server that never answers fails `pcv info` within --http-timeout, saying each retry; one that
/// stops answering after the opening requests fails `pcv render` within a few deadlines (the nodes fail
/// at once once one read got no answer), naming the first node and then why no more are asked for (one
/// line, not one a node), with a non-zero exit counting every node left out.
#[test]
fn silent_and_stalling_servers_fail_within_the_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let data = Arc::new(std::fs::read(copc_file(dir.path(), 20_000)).unwrap());
    let pcv = |args: &[&str]| {
        let t = std::time::Instant::now();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_pcv"))
            .args(args)
            .env("PCV_CACHE_DIR", dir.path().join("cache"))
            .env_remove("DISPLAY")
            .output()
            .unwrap();
        (o, t.elapsed().as_secs_f64())
    };
    let (url, _) = serve(data.clone(), Mode::Silent);
    let (o, s) = pcv(&["info", &url, "--http-timeout", "2"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && s < 6.0, "{s:.1} s: {e}");
    assert!(e.contains(&url) && e.contains("no answer within 2 s") && e.contains("retrying in"), "{e}");
    // Opening reads the first bytes and the hierarchy; every node read after that gets no answer.
    let (url, counts) = serve(data, Mode::StallAfter(2));
    let png = dir.path().join("x.png");
    let (o, s) = pcv(&["render", &url, "--backend", "cpu", "--size", "64x36", "--http-timeout", "2", "-o"]
        .into_iter()
        .chain([png.to_str().unwrap()])
        .collect::<Vec<_>>());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && s < 15.0, "{s:.1} s: {e}");
    assert!(e.contains("could not be read") && e.contains("node 0-0-0-0"), "{e}");
    assert!(counts.requests.load(Ordering::SeqCst) >= 3);
    // Said once, not once a node: the first failure, then why the rest are not asked for (the window
    // filled its panel with a line per node).
    assert_eq!(e.matches("its other nodes are not asked for").count(), 1, "{e}");
    assert!(e.matches("not asked: the server stopped answering").count() <= 1, "{e}");
}

#[test]
fn over_http_reads_what_the_file_holds_and_caches_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = copc_file(dir.path(), 40_000);
    let data = Arc::new(std::fs::read(&path).unwrap());
    let (url, counts) = serve(data, Mode::Normal);
    let local = copc::open_copc(path.to_str().unwrap()).unwrap();
    let cache = dir.path().join("cache");
    let remote = copc::open_with(&url, &opts(Some(&cache))).unwrap();
    assert_eq!(remote.octree(), local.octree());
    assert!(local.octree().nodes.len() > 8);
    let origin = glam::DVec3::new(500_100.0, 4_000_100.0, 100.0);
    for n in &local.octree().nodes {
        assert_eq!(
            remote.read_node(n, origin, pcv_io::formats::FieldSet::ALL).unwrap(),
            local.read_node(n, origin, pcv_io::formats::FieldSet::ALL).unwrap()
        );
    }
    let first = counts.requests.load(Ordering::SeqCst);
    // Again with the same cache: only the opening request goes to the server.
    let again = copc::open_with(&url, &opts(Some(&cache))).unwrap();
    for n in &local.octree().nodes {
        assert_eq!(
            again.read_node(n, origin, pcv_io::formats::FieldSet::ALL).unwrap(),
            local.read_node(n, origin, pcv_io::formats::FieldSet::ALL).unwrap()
        );
    }
    let second = counts.requests.load(Ordering::SeqCst) - first;
    eprintln!("http: {} nodes; {first} requests the first time, {second} with the cache", local.octree().nodes.len());
    assert_eq!(second, 1, "a cached file must need only the opening request");
    // `pcv info URL`: the octree from the hierarchy.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pcv"))
        .args(["info", "--json", &url])
        .env("PCV_CACHE_DIR", &cache)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["points"].as_u64(), Some(40_000));
    assert_eq!(v[0]["path"].as_str(), Some(url.as_str()));
    assert!(v[0]["octree"].as_array().unwrap().len() >= 2);
}

#[test]
fn a_slow_server_gets_requests_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let path = copc_file(dir.path(), 120_000);
    let (url, counts) = serve(Arc::new(std::fs::read(&path).unwrap()), Mode::Slow);
    let remote: Arc<dyn NodeSource> = Arc::new(copc::open_with(&url, &opts(None)).unwrap());
    let nodes = remote.octree().nodes.clone();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (r, nodes) = (remote.clone(), nodes.clone());
            std::thread::spawn(move || {
                nodes
                    .iter()
                    .skip(t)
                    .step_by(4)
                    .map(|n| r.read_node(n, glam::DVec3::ZERO, Default::default()).unwrap().points.len() as u64)
                    .sum::<u64>()
            })
        })
        .collect();
    let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(total, 120_000);
    let most = counts.most_in_flight.load(Ordering::SeqCst);
    eprintln!(
        "http: slow server: {} nodes, {} requests, at most {most} at once",
        nodes.len(),
        counts.requests.load(Ordering::SeqCst)
    );
    assert!(most >= 2, "the reads from four threads never overlapped");
}

#[test]
fn flaky_servers_are_retried_and_failing_ones_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = copc_file(dir.path(), 5_000);
    let data = Arc::new(std::fs::read(&path).unwrap());
    let (url, counts) = serve(data.clone(), Mode::Flaky);
    let remote = copc::open_with(&url, &opts(None)).unwrap();
    let n: u64 = remote
        .octree()
        .nodes
        .iter()
        .map(|n| remote.read_node(n, glam::DVec3::ZERO, Default::default()).unwrap().points.len() as u64)
        .sum();
    assert_eq!(n, 5_000);
    assert!(counts.per_range.lock().unwrap().values().all(|&k| k == 3), "every range: two 503s, then the bytes");

    let (url, counts) = serve(data.clone(), Mode::Failing);
    let e = copc::open_with(&url, &opts(None)).err().unwrap().to_string();
    assert!(e.starts_with(&url) && e.contains("answered 500") && e.contains("after 4 attempts"), "{e}");
    assert_eq!(counts.requests.load(Ordering::SeqCst), 4);

    let (url, _) = serve(data, Mode::NoRanges);
    let e = copc::open_with(&url, &opts(None)).err().unwrap().to_string();
    assert!(e.contains("does not support range requests") && e.contains("200"), "{e}");

    // Nothing listening: an error naming the URL, after the retries.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let gone = format!("http://{}/x.copc.laz", l.local_addr().unwrap());
    drop(l);
    let e = copc::open_with(&gone, &opts(None)).err().unwrap().to_string();
    assert!(e.starts_with(&gone) && e.contains("request failed"), "{e}");
}
