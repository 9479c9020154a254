//! Collections of tiles as sources (`pcv_io::collection`): LAS and LAZ tiles the test writes (one
//! corrupt), named by a folder, a glob, a list file and a `.vpc` — local, and served over HTTP by a
//! server the test starts on 127.0.0.1 — expanded to the same tiles, their headers summed, the corrupt
//! tile named and skipped while the rest render.
mod samples;

use pcv_io::collection::{self, Kind};
use samples::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn pcv(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pcv")).current_dir(dir).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

/// Four tiles of 300 points each side by side (two LAS, two LAZ) and a corrupt one, in `dir/tiles`.
fn tiles(dir: &Path) -> Vec<PathBuf> {
    let t = dir.join("tiles");
    std::fs::create_dir_all(&t).unwrap();
    let mut out = Vec::new();
    for k in 0..4 {
        let base = [500_000.0 + 50.0 * k as f64, 4_100_000.0, 100.0];
        let laz = k >= 2;
        let name = format!("t{k}.{}", if laz { "laz" } else { "las" });
        std::fs::write(t.join(&name), las(&points(300, base), 2, 3, laz, base, |c| c as u16 * 257)).unwrap();
        out.push(t.join(name));
    }
    std::fs::write(t.join("z-broken.las"), b"LASF but not really a LAS file").unwrap();
    out
}

fn vpc(hrefs: &[&str]) -> String {
    let items: Vec<String> = hrefs
        .iter()
        .enumerate()
        .map(|(i, h)| {
            format!(
                r#"{{"type":"Feature","stac_version":"1.0.0","id":"tile{i}","bbox":[0,0,0,1,1,1],"properties":{{"pc:count":300}},"assets":{{"data":{{"href":"{h}","roles":["data"]}}}}}}"#
            )
        })
        .collect();
    format!(r#"{{"type":"FeatureCollection","features":[{}]}}"#, items.join(","))
}

#[test]
fn folders_globs_lists_and_vpcs_name_the_same_tiles() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let want = tiles(d);
    let broken = d.join("tiles/z-broken.las");
    std::fs::write(d.join("c.vpc"), vpc(&["./tiles/t0.las", "tiles/t1.las", "tiles/t2.laz", "tiles/t3.laz"])).unwrap();
    std::fs::write(d.join("c.lst"), "# the tiles\ntiles/t0.las\ntiles/t1.las  # second\n\ntiles/t*.laz\n").unwrap();
    let glob = d.join("tiles/t?.la[sz]");
    assert_eq!(collection::kind(&glob.to_string_lossy()), Kind::Glob);
    assert_eq!(collection::expand(&[glob], false).unwrap(), want, "a glob");
    assert_eq!(collection::expand(&[d.join("c.vpc")], false).unwrap(), want, "a .vpc");
    assert_eq!(collection::expand(&[d.join("c.lst")], false).unwrap(), want, "a list");
    let at = PathBuf::from(format!("@{}", d.join("c.lst").display()));
    assert_eq!(collection::expand(&[at], false).unwrap(), want, "@list");
    let mut folder = want.clone();
    folder.push(broken.clone());
    assert_eq!(collection::expand(&[d.join("tiles")], false).unwrap(), folder, "a folder");

    // The headers, on all cores: 1,200 points in four tiles, the corrupt one named.
    let headers = collection::headers(&folder);
    let sum = collection::summarize(&folder, &headers);
    assert_eq!((sum.tiles, sum.points), (4, 1200));
    assert_eq!(sum.failed.len(), 1);
    assert!(sum.failed[0].0.ends_with("z-broken.las") && sum.failed[0].1.contains("z-broken.las"), "{:?}", sum.failed);
    let b = sum.bounds.unwrap();
    assert!(b.min[0] < 500_000.0 && b.max[0] > 500_150.0, "the four tiles side by side: {b:?}");

    // The command line: info --tiles sums them and fails naming the corrupt one; render skips it.
    let o = pcv(d, &["info", "--tiles", "tiles"]);
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("4 tiles read") && out.contains("1200 points"), "{out}");
    assert!(!o.status.success() && err.contains("z-broken.las") && err.contains("1 of 5 tiles"), "{err}");
    assert!(pcv(d, &["info", "--tiles", "c.vpc"]).status.success());
    let o = pcv(d, &["render", "tiles", "--backend", "cpu", "--size", "320x180", "-o", "t.png"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("skipped") && err.contains("z-broken.las") && err.contains("rendered 1200 points"), "{err}");
}

#[test]
fn bad_collections_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiles(d);
    let err = |p: PathBuf| collection::expand(&[p], false).unwrap_err().to_string();
    std::fs::write(d.join("notjson.vpc"), "{ not json").unwrap();
    assert!(err(d.join("notjson.vpc")).contains("not JSON"), "{}", err(d.join("notjson.vpc")));
    std::fs::write(d.join("empty.vpc"), r#"{"type":"FeatureCollection","features":[]}"#).unwrap();
    assert!(err(d.join("empty.vpc")).contains("no items"));
    std::fs::write(d.join("noasset.vpc"), r#"{"features":[{"id":"a1","assets":{}}]}"#).unwrap();
    let e = err(d.join("noasset.vpc"));
    assert!(e.contains("item 'a1'") && e.contains("no data asset"), "{e}");
    std::fs::write(d.join("self.lst"), "self.lst\n").unwrap();
    assert!(err(d.join("self.lst")).contains("names itself"));
    // A list naming a tile that is not there: expanded as named (as on the command line), then its
    // header read fails naming it.
    std::fs::write(d.join("missing.lst"), "tiles/t0.las\nnope/none.las\n").unwrap();
    let listed = collection::expand(&[d.join("missing.lst")], false).unwrap();
    assert_eq!(listed.len(), 2);
    let e = collection::headers(&listed)[1].as_ref().unwrap_err().to_string();
    assert!(e.contains("nope/none.las"), "{e}");
    std::fs::write(d.join("nested.lst"), "tiles/t0.las\nempty-folder\n").unwrap();
    std::fs::create_dir(d.join("empty-folder")).unwrap();
    let e = err(d.join("nested.lst"));
    assert!(e.contains("nested.lst line 2") && e.contains("no point files"), "{e}");
    assert!(err(d.join("tiles/*.xyz")).contains("matches no point files"));
}

/// Serves `files` (name → bytes) at http://127.0.0.1:PORT/NAME, with range requests; returns the base.
fn serve(files: Vec<(&'static str, Vec<u8>)>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", l.local_addr().unwrap());
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let files = files.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut w = s;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let name = line.split_whitespace().nth(1).unwrap_or("/").trim_start_matches('/').to_string();
                    let mut range = None;
                    loop {
                        let mut h = String::new();
                        if r.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            if k.trim().eq_ignore_ascii_case("range") {
                                range = Some(v.trim().to_string());
                            }
                        }
                    }
                    let (status, body, extra) = match (files.iter().find(|(n, _)| *n == name), range) {
                        (None, _) => ("404 Not Found", b"no".to_vec(), String::new()),
                        (Some((_, d)), None) => ("200 OK", d.clone(), String::new()),
                        (Some((_, d)), Some(r)) => {
                            let (a, b) = r.strip_prefix("bytes=").unwrap().split_once('-').unwrap();
                            let a: usize = a.parse().unwrap();
                            let b: usize = b.parse::<usize>().unwrap().min(d.len() - 1);
                            let cr = format!("Content-Range: bytes {a}-{b}/{}\r\n", d.len());
                            ("206 Partial Content", d[a..=b].to_vec(), cr)
                        }
                    };
                    let head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}\r\n", body.len());
                    if w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    base
}

#[test]
fn a_vpc_over_http_names_its_tiles_there() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A COPC tile (pcv's own writer) served beside the .vpc, named relative to it.
    let src = d.join("s.las");
    let base = [500_000.0, 4_000_000.0, 100.0];
    std::fs::write(&src, las(&points(2000, base), 2, 3, false, base, |c| c as u16 * 257)).unwrap();
    let copc = d.join("s.copc.laz");
    pcv_io::convert::copc::write_with(&[src], &copc, &pcv_io::load::LoadOptions::quiet(), 500).unwrap();
    let url = serve(vec![
        ("c.vpc", vpc(&["./tiles/s.copc.laz"]).into_bytes()),
        ("tiles/s.copc.laz", std::fs::read(&copc).unwrap()),
    ]);
    let tiles = collection::expand(&[PathBuf::from(format!("{url}c.vpc"))], false).unwrap();
    assert_eq!(tiles, vec![PathBuf::from(format!("{url}tiles/s.copc.laz"))]);
    let v = collection::read_vpc(&format!("{url}c.vpc")).unwrap();
    assert_eq!(v[0].points, Some(300), "the item's pc:count");
    // pcv reads the tile the collection names, over HTTP.
    let o = pcv(d, &["info", &format!("{url}c.vpc")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("2000"), "{out}");
    let missing = collection::expand(&[PathBuf::from(format!("{url}gone.vpc"))], false).unwrap_err().to_string();
    assert!(missing.contains("gone.vpc") && missing.contains("404"), "{missing}");
}

#[test]
fn a_session_opens_a_collection_with_a_broken_tile_as_the_window_does() {
    use pcv::session::{self, BackendOptions, OpenOptions, Source};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tiles(d);
    std::fs::write(d.join("c.vpc"), vpc(&["tiles/t0.las", "tiles/t1.las", "tiles/z-broken.las", "tiles/t3.laz"]))
        .unwrap();
    let cpu = BackendOptions { choice: pcv_render::BackendChoice::Cpu, ..Default::default() };
    // The window's options: level of detail chosen by itself for large clouds (its check read every
    // tile before the loader's, and failed on the broken one).
    for lod in [false, true] {
        let opts = OpenOptions { auto_lod: true, lod, ..Default::default() };
        let s = session::open(Source::Files(vec![d.join("c.vpc")]), &cpu, &opts).unwrap();
        assert!(s.warnings.iter().any(|w| w.contains("z-broken.las")), "lod {lod}: {:?}", s.warnings);
        assert_eq!(s.cloud.attributes.as_ref().map(|a| a.sources.len()), Some(3), "lod {lod}: three tiles");
    }
    // Every tile broken: the first one's error.
    std::fs::write(d.join("bad.lst"), "tiles/z-broken.las\ntiles/z-broken.las\n").unwrap();
    let e = session::open(Source::Files(vec![d.join("bad.lst")]), &cpu, &OpenOptions::default()).err().unwrap();
    assert!(format!("{e:#}").contains("z-broken.las"), "{e:#}");
}
