//! COPC: `pcv convert` to COPC and pcv's COPC reader, against files the tests write.
//!
//! - round trip: LAS → COPC → every node read back: every source point exactly once, with its exact
//!   coordinates, intensity, classification and 16-bit color; the octree is closed under "parent of",
//!   node counts add up, deeper nodes have finer spacing;
//! - a node's points (`NodeSource::read_node`) are exactly what loading the file as plain LAZ gives;
//! - an independent reader (laspy's `CopcReader`, `pip install laspy[lazrs]`) reads the hierarchy and a
//!   box query returns exactly the source points inside the box (skipped, saying why, without laspy);
//! - damaged hierarchy pages and node chunks are errors naming the file, the page and the entry.
mod samples;

use pcv::cloud::formats::copc::{self, CopcFile};
use pcv::cloud::octree::{NodeKey, NodeSource};
use samples::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

const BASE: [f64; 3] = [512_000.0, 5_400_000.0, 300.0];

/// A LAS 1.2 file (point format 3: RGB and GPS time) of `n` points spread over a 2 km × 1 km tile.
fn source_las(dir: &Path, n: usize) -> (PathBuf, Vec<Pt>) {
    let mut pts = points(n, BASE);
    for (i, p) in pts.iter_mut().enumerate() {
        // Spread over a tile (the sample points repeat every few dozen metres), on the 1 mm grid.
        let f = i as f64;
        p.xyz[0] = BASE[0] + ((f * 7.919) % 2000.0 * 1000.0).round() / 1000.0;
        p.xyz[1] = BASE[1] + ((f * 3.141) % 1000.0 * 1000.0).round() / 1000.0;
        p.xyz[2] = BASE[2] + ((p.xyz[0] - BASE[0]) / 50.0).sin() * 10.0 + (i % 7) as f64 * 0.125;
    }
    let path = dir.join("source.las");
    std::fs::write(&path, las(&pts, 2, 3, false, BASE, |c| c as u16 * 256 + 3)).unwrap();
    (path, pts)
}

/// The source's points as an independent reader (the `las` crate) reads them: exact f64 coordinates,
/// intensity, class, 16-bit color.
fn read_with_las_crate(path: &Path) -> Vec<([u64; 3], u16, u8, [u16; 3])> {
    use las::Reader;
    let mut r = Reader::from_path(path).unwrap();
    let data = r.read_all().unwrap();
    data.points()
        .map(|p| {
            let p = p.unwrap();
            let c = p.color.unwrap();
            ([p.x.to_bits(), p.y.to_bits(), p.z.to_bits()], p.intensity, u8::from(p.classification), [c.red, c.green, c.blue])
        })
        .collect()
}

fn convert(inputs: &[PathBuf], out: &Path) {
    let opts = pcv::cloud::load::LoadOptions { progress: false, warnings: false };
    let s = pcv::convert::convert(inputs, out, &opts).unwrap();
    assert_eq!(s.format, pcv::convert::OutFormat::Copc);
}

#[test]
fn convert_then_read_back_every_point_once() {
    let dir = tempfile::tempdir().unwrap();
    let (src, pts) = source_las(dir.path(), 450_000);
    let out = dir.path().join("out.copc.laz");
    convert(std::slice::from_ref(&src), &out);
    let f = copc::open_copc(out.to_str().unwrap()).unwrap();
    let o = f.octree();
    assert_eq!(o.total_points(), pts.len() as u64);
    assert!(o.max_depth() >= 1, "450k points must not fit one node");
    let keys: HashSet<NodeKey> = o.nodes.iter().map(|n| n.key).collect();
    assert_eq!(keys.len(), o.nodes.len(), "a key listed twice");
    for n in &o.nodes {
        if let Some(p) = n.key.parent() {
            assert!(keys.contains(&p), "{:?} without its parent", n.key);
        }
        assert!(n.point_count <= pcv::convert::copc::NODE_MAX_POINTS as u64 || n.key.depth >= 24);
    }
    assert!(o.spacing_at_m(1) < o.spacing_at_m(0));
    // Every node's exact values, as a multiset, equal the source's.
    let mut got = Vec::new();
    for n in o.nodes.iter().filter(|n| n.point_count > 0) {
        let e = f.read_node_exact(n).unwrap();
        assert_eq!(e.xyz.len() as u64, n.point_count);
        let cube = n.key.cube_in(&o.cube);
        let rgb = e.rgb16.as_ref().unwrap();
        for i in 0..e.xyz.len() {
            let v = e.xyz[i];
            for k in 0..3 {
                assert!(v[k] >= cube.min[k] - 1e-6 && v[k] <= cube.max()[k] + 1e-6, "{v:?} outside node {:?}'s cube", n.key);
            }
            got.push((v.map(f64::to_bits), e.intensity[i], e.classification[i], rgb[i]));
        }
    }
    let mut want = read_with_las_crate(&src);
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the COPC's points differ from the source's");
    // The header: LAS 1.4, format 7, the source's scale and offset, the COPC info VLR first.
    let h = f.header();
    assert_eq!((h.version, h.format, h.scale), ((1, 4), 7, [0.001; 3]));
    assert_eq!(f.vlrs()[0].user_id, "copc");
    assert!(copc::sniff(&std::fs::read(&out).unwrap()));
}

#[test]
fn nodes_decode_as_the_laz_loader_does() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source_las(dir.path(), 150_000);
    let out = dir.path().join("out.copc.laz");
    convert(&[src], &out);
    let cloud = pcv::cloud::load::load_files_with(&[out.clone()], &pcv::cloud::load::LoadOptions { progress: false, warnings: false }).unwrap();
    let a = cloud.attributes.as_ref().unwrap();
    let mut want: Vec<_> = (0..cloud.points.len())
        .map(|i| {
            let p = cloud.points[i];
            (p.pos.map(f32::to_bits), p.rgba, a.intensity.as_ref().unwrap()[i].to_bits(), a.classification.as_ref().unwrap()[i])
        })
        .collect();
    let src = copc::open(out.to_str().unwrap()).unwrap();
    let mut got = Vec::new();
    for n in &src.octree().nodes {
        let np = src.read_node(n, cloud.origin).unwrap();
        assert_eq!(np.points.len() as u64, n.point_count);
        let (i, c) = (np.intensity.unwrap(), np.classification.unwrap());
        for k in 0..np.points.len() {
            got.push((np.points[k].pos.map(f32::to_bits), np.points[k].rgba, i[k].to_bits(), c[k]));
        }
    }
    got.sort_unstable();
    want.sort_unstable();
    assert!(got == want, "read_node differs from the LAZ loader");
}

#[test]
fn laspy_copc_reader_box_query_returns_the_source_points() {
    let dir = tempfile::tempdir().unwrap();
    let (src, pts) = source_las(dir.path(), 300_000);
    let out = dir.path().join("out.copc.laz");
    convert(&[src], &out);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("PCV_PYTHON").map(PathBuf::from).unwrap_or_else(|_| {
        let venv = root.join(".tools/venv/bin/python");
        if venv.exists() { venv } else { PathBuf::from("python3") }
    });
    let probe = std::process::Command::new(&python).args(["-c", "import laspy, lazrs"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: laspy with lazrs is not importable by {} (scripts/setup.sh installs it into .tools/venv)", python.display());
        return;
    }
    // A box over part of the tile, in file coordinates.
    let (lo, hi) = ([BASE[0] + 300.0, BASE[1] + 200.0, BASE[2] - 100.0], [BASE[0] + 900.0, BASE[1] + 650.0, BASE[2] + 100.0]);
    let script = r#"
import sys, laspy
from laspy import CopcReader, Bounds
import numpy as np
lo = np.array([float(v) for v in sys.argv[2:5]]); hi = np.array([float(v) for v in sys.argv[5:8]])
with CopcReader.open(sys.argv[1]) as r:
    print("total", r.header.point_count)
    print("all", len(r.query()))
    q = r.query(Bounds(mins=lo, maxs=hi))
    for x, y, z in zip(np.asarray(q.X), np.asarray(q.Y), np.asarray(q.Z)):
        print(x, y, z)
"#;
    let mut args = vec!["-c".to_string(), script.to_string(), out.display().to_string()];
    args.extend(lo.iter().chain(&hi).map(|v| format!("{v}")));
    let o = std::process::Command::new(&python).args(&args).output().unwrap();
    assert!(o.status.success(), "laspy failed: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(format!("total {}", pts.len()).as_str()));
    assert_eq!(lines.next(), Some(format!("all {}", pts.len()).as_str()));
    let mut got: Vec<[i64; 3]> = lines.map(|l| {
        let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        [v[0], v[1], v[2]]
    }).collect();
    // The source points inside the box, as integers on the file's 1 mm grid (offset BASE).
    let mut want: Vec<[i64; 3]> = pts
        .iter()
        .filter(|p| (0..3).all(|k| p.xyz[k] >= lo[k] && p.xyz[k] <= hi[k]))
        .map(|p| std::array::from_fn(|k| ((p.xyz[k] - BASE[k]) / 0.001).round() as i64))
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    eprintln!("laspy box query: {} points, {} expected", got.len(), want.len());
    assert!(want.len() > 10_000 && want.len() < pts.len());
    assert!(got == want, "laspy's box query differs from the source points in the box");
}

#[test]
fn damaged_hierarchy_and_nodes_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source_las(dir.path(), 250_000);
    let out = dir.path().join("out.copc.laz");
    convert(&[src], &out);
    let good = std::fs::read(&out).unwrap();
    let f = CopcFile::from_bytes("t.copc.laz", good.clone()).unwrap();
    let (page, size) = (f.info().root_hier_offset as usize, f.info().root_hier_size as usize);
    // An entry's depth out of range.
    let mut bad = good.clone();
    bad[page + 32..page + 36].copy_from_slice(&99i32.to_le_bytes());
    let e = CopcFile::from_bytes("t.copc.laz", bad).err().unwrap().to_string();
    assert!(e.starts_with("t.copc.laz: ") && e.contains(&format!("hierarchy page at byte {page}, entry 1 (byte {})", page + 32)), "{e}");
    // A node's chunk past the end of the file.
    let mut bad = good.clone();
    bad[page + 16..page + 24].copy_from_slice(&(good.len() as u64).to_le_bytes());
    let e = CopcFile::from_bytes("t.copc.laz", bad).err().unwrap().to_string();
    assert!(e.contains("entry 0") && e.contains("past the end"), "{e}");
    // The file cut inside the hierarchy.
    let e = CopcFile::from_bytes("t.copc.laz", good[..page + size / 2].to_vec()).err().unwrap().to_string();
    assert!(e.contains("root hierarchy page") && e.contains("past the end"), "{e}");
    // A child-page entry pointing at its own page (a loop).
    let mut bad = good.clone();
    bad[page + 16..page + 24].copy_from_slice(&(page as u64).to_le_bytes());
    bad[page + 24..page + 28].copy_from_slice(&(size as i32).to_le_bytes());
    bad[page + 28..page + 32].copy_from_slice(&(-1i32).to_le_bytes());
    let e = CopcFile::from_bytes("t.copc.laz", bad).err().unwrap().to_string();
    assert!(e.contains("already read") || e.contains("listed twice"), "{e}");
    // Garbage in a node's chunk: that node's read fails with an error naming it; nothing panics.
    let n = *f.octree().nodes.iter().filter(|n| n.point_count > 1000).max_by_key(|n| n.key.depth).unwrap();
    let mut bad = good.clone();
    for b in &mut bad[n.byte_offset as usize + 40..(n.byte_offset + n.byte_size) as usize] {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    let g = CopcFile::from_bytes("t.copc.laz", bad).unwrap();
    match g.read_node(&n, glam::DVec3::ZERO) {
        Err(e) => assert!(e.to_string().starts_with(&format!("t.copc.laz: node {:?}", n.key)), "{e}"),
        Ok(p) => assert_eq!(p.points.len() as u64, n.point_count, "a damaged node read with another count"),
    }
    // Not COPC at all.
    let e = copc::open(dir.path().join("source.las").to_str().unwrap()).err().unwrap().to_string();
    assert!(e.contains("source.las: not a COPC file"), "{e}");
}

#[test]
fn pcv_info_shows_the_octree() {
    let dir = tempfile::tempdir().unwrap();
    let (src, pts) = source_las(dir.path(), 200_000);
    let out = dir.path().join("out.copc.laz");
    convert(&[src], &out);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pcv")).args(["info", "--json"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let levels = v[0]["octree"].as_array().unwrap();
    assert!(levels.len() >= 2);
    let total: u64 = levels.iter().map(|l| l["points"].as_u64().unwrap()).sum();
    assert_eq!(total, pts.len() as u64);
    assert_eq!(v[0]["points"].as_u64(), Some(pts.len() as u64));
    let s0 = levels[0]["spacing"].as_f64().unwrap();
    assert!((levels[1]["spacing"].as_f64().unwrap() / (s0 / 2.0) - 1.0).abs() < 1e-12);
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_pcv")).arg("info").arg(&out).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("COPC 1.0") && text.contains("octree      depth") && text.contains("level  1:"), "{text}");
}
