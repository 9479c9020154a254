//! COPC: `pcv convert` to COPC and pcv's COPC reader, against files the tests write.
//!
//! - round trip: LAS → COPC → every node read back: every source point exactly once, with its exact
//!   coordinates, intensity, classification and 16-bit color; the octree is closed under "parent of",
//!   node counts add up, deeper nodes have finer spacing;
//! - a node's points (`NodeSource::read_node`) are exactly what loading the file as plain LAZ gives;
//! - an independent reader (laspy's `CopcReader`, `pip install laspy[lazrs]`) reads the hierarchy and a
//!   box query returns exactly the source points inside the box (skipped, saying why, without laspy);
//! - damaged hierarchy pages and node chunks are errors naming the file, the page and the entry.
mod common;
mod samples;

use pcv_io::formats::copc::{self, CopcFile};
use pcv_io::octree::{NodeKey, NodeSource};
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
        p.xyz[1] = BASE[1] + ((f * 3.1337) % 1000.0 * 1000.0).round() / 1000.0;
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
            (
                [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()],
                p.intensity,
                u8::from(p.classification),
                [c.red, c.green, c.blue],
            )
        })
        .collect()
}

fn convert(inputs: &[PathBuf], out: &Path) {
    let opts = pcv_io::load::LoadOptions::quiet();
    let s = pcv_io::convert::convert(inputs, out, &opts).unwrap();
    assert_eq!(s.format, pcv_io::convert::OutFormat::Copc);
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
        assert!(n.point_count <= pcv_io::convert::copc::NODE_MAX_POINTS as u64 || n.key.depth >= 24);
    }
    assert!(o.spacing_at_m(1) < o.spacing_at_m(0));
    // Every node's exact values, as a multiset, equal the source's.
    let mut got = Vec::new();
    for n in o.nodes.iter().filter(|n| n.point_count > 0) {
        let e = f.read_node_exact(n).unwrap();
        assert_eq!(e.xyz.len() as u64, n.point_count);
        let cube = n.key.cube_in(&o.cube);
        let rgb = e.rgb16.as_ref().unwrap();
        for (i, &v) in e.xyz.iter().enumerate() {
            for k in 0..3 {
                assert!(
                    v[k] >= cube.min[k] - 1e-6 && v[k] <= cube.max()[k] + 1e-6,
                    "{v:?} outside node {:?}'s cube",
                    n.key
                );
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
    let cloud = pcv_io::load::load_files_with(std::slice::from_ref(&out), &pcv_io::load::LoadOptions::quiet()).unwrap();
    let a = cloud.attributes.as_ref().unwrap();
    let mut want: Vec<_> = (0..cloud.points.len())
        .map(|i| {
            let p = cloud.points[i];
            (
                p.pos.map(f32::to_bits),
                p.rgba,
                a.intensity.as_ref().unwrap()[i].to_bits(),
                a.classification.as_ref().unwrap()[i],
            )
        })
        .collect();
    let src = copc::open(out.to_str().unwrap()).unwrap();
    let mut got = Vec::new();
    for n in &src.octree().nodes {
        let np = src.read_node(n, cloud.origin, Default::default()).unwrap();
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
    let Some(python) = laspy_python() else { return };
    // A box over part of the tile, in file coordinates.
    let (lo, hi) =
        ([BASE[0] + 300.0, BASE[1] + 200.0, BASE[2] - 100.0], [BASE[0] + 900.0, BASE[1] + 650.0, BASE[2] + 100.0]);
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
    let mut got: Vec<[i64; 3]> = lines
        .map(|l| {
            let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
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

/// The damaged-file tests' start: a 250,000-point COPC file written by convert, its bytes, and it
/// opened from them (as "t.copc.laz"); the folder holds the source LAS as "source.las".
fn damage_fixture() -> (tempfile::TempDir, Vec<u8>, CopcFile) {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source_las(dir.path(), 250_000);
    let out = dir.path().join("out.copc.laz");
    convert(&[src], &out);
    let good = std::fs::read(&out).unwrap();
    let f = CopcFile::from_bytes("t.copc.laz", good.clone()).unwrap();
    (dir, good, f)
}

#[test]
fn damaged_hierarchy_and_nodes_fail_cleanly() {
    let (dir, good, f) = damage_fixture();
    let (page, size) = (f.info().root_hier_offset as usize, f.info().root_hier_size as usize);
    // An entry's depth out of range.
    let mut bad = good.clone();
    bad[page + 32..page + 36].copy_from_slice(&99i32.to_le_bytes());
    let e = CopcFile::from_bytes("t.copc.laz", bad).err().unwrap().to_string();
    assert!(
        e.starts_with("t.copc.laz: ")
            && e.contains(&format!("hierarchy page at byte {page}, entry 1 (byte {})", page + 32)),
        "{e}"
    );
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
    match g.read_node(&n, glam::DVec3::ZERO, Default::default()) {
        Err(e) => assert!(e.to_string().starts_with(&format!("t.copc.laz: node {} (", n.key)), "{e}"),
        Ok(p) => assert_eq!(p.points.len() as u64, n.point_count, "a damaged node read with another count"),
    }
    // Not COPC at all.
    let e = copc::open(dir.path().join("source.las").to_str().unwrap()).err().unwrap().to_string();
    assert!(e.contains("source.las: not a COPC file"), "{e}");
}

#[test]
fn a_node_that_fails_to_decode_is_named_and_drawn_without_quickly_and_the_exit_says_so() {
    let (dir, good, f) = damage_fixture();
    // The root (a node with children): its layer sizes overwritten, so that its chunk cannot be decoded.
    let nodes = &f.octree().nodes;
    let parent = *nodes.iter().find(|n| n.key.depth == 0).unwrap();
    assert!(nodes.iter().any(|c| c.key.depth == 1 && c.point_count > 0), "the root has children");
    let mut bad = good.clone();
    let at = parent.byte_offset as usize + 36;
    for b in &mut bad[at..at + 24] {
        *b ^= 0xFF;
    }
    let bad_path = dir.path().join("bad.copc.laz");
    std::fs::write(&bad_path, &bad).unwrap();
    let png = dir.path().join("bad.png");
    let run = |extra: &[&str]| {
        let started = std::time::Instant::now();
        let mut args = vec![
            "render",
            bad_path.to_str().unwrap(),
            "--backend",
            "cpu",
            "--point-budget",
            "10M",
            "--size",
            "320x180",
            "-o",
            png.to_str().unwrap(),
        ];
        args.extend(extra);
        let o =
            std::process::Command::new(env!("CARGO_BIN_EXE_pcv")).args(&args).env_remove("DISPLAY").output().unwrap();
        (o, started.elapsed().as_secs_f64())
    };
    let (o, secs) = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(secs < 5.0, "the render took {secs:.1} s:\n{err}");
    assert_eq!(o.status.code(), Some(1), "a partial image is an error without --allow-partial:\n{err}");
    let key = format!("node {} ({} bytes at byte {})", parent.key, parent.byte_size, parent.byte_offset);
    assert!(err.contains("bad.copc.laz") && err.contains(&key), "the node is named with its file and byte:\n{err}");
    assert_eq!(err.matches(&key).count(), 1, "named once:\n{err}");
    assert!(png.exists(), "the image is still written:\n{err}");
    // Drawn without it: every other point, its children's included.
    let total: u64 = nodes.iter().map(|n| n.point_count).sum();
    let want = format!("rendered {} points", total - parent.point_count);
    assert!(err.contains(&want), "{want}:\n{err}");
    let (o, _) = run(&["--allow-partial"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("drawn without 1 node"), "{err}");
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

#[test]
fn text_input_and_a_single_point_make_valid_copc() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("a.xyz");
    std::fs::write(&src, "512001.25 5400002.5 301.125 10 20 30\n").unwrap();
    let out = dir.path().join("a.copc.laz");
    convert(&[src], &out);
    let f = copc::open_copc(out.to_str().unwrap()).unwrap();
    assert_eq!(f.octree().total_points(), 1);
    let n = f.octree().nodes.iter().find(|n| n.point_count == 1).unwrap();
    let e = f.read_node_exact(n).unwrap();
    assert_eq!(e.xyz, vec![[512001.25, 5400002.5, 301.125]]);
    assert_eq!(e.rgb16.unwrap(), vec![[10 * 257, 20 * 257, 30 * 257]]);
}

/// A point with every LAS field set from `i` (the legacy formats' limits kept for `legacy`).
fn rich_point(i: usize, base: [f64; 3], legacy: bool) -> las::Point {
    use las::point::{Classification, ScanDirection};
    let f = i as f64;
    let ret = 1 + (i % 5) as u8;
    let class = [1u8, 2, 3, 5, 6, 9, 17, 40][i % 8];
    las::Point {
        // Distinct positions on the 1 mm grid (the tests match points by position).
        x: base[0] + (f * 0.517).floor() * 0.001 + (i % 517) as f64 * 1.3,
        y: base[1] + (i % 977) as f64 * 0.75 + (i / 977) as f64 * 0.001,
        z: base[2] + (i % 53) as f64 * 0.25,
        intensity: (i * 7919 % 65536) as u16,
        return_number: ret,
        number_of_returns: ret + (i % 3) as u8,
        scan_direction: if i.is_multiple_of(2) { ScanDirection::LeftToRight } else { ScanDirection::RightToLeft },
        is_edge_of_flight_line: i.is_multiple_of(7),
        classification: Classification::new(if legacy { class.min(31) } else { class }).unwrap(),
        is_synthetic: i.is_multiple_of(3),
        is_key_point: i.is_multiple_of(5),
        is_withheld: i.is_multiple_of(11),
        is_overlap: !legacy && i.is_multiple_of(13),
        scanner_channel: if legacy { 0 } else { (i % 4) as u8 },
        scan_angle: if legacy { (i % 181) as f32 - 90.0 } else { ((i % 30001) as f32 - 15000.0) * 0.006 },
        user_data: (i % 256) as u8,
        point_source_id: (i * 31 % 65536) as u16,
        gps_time: Some(400_000.0 + f * 0.000_25),
        color: Some(las::Color {
            red: (i * 3 % 65536) as u16,
            green: (i * 5 % 65536) as u16,
            blue: (i * 7 % 65536) as u16,
        }),
        nir: Some(1 + (i * 11 % 65535) as u16),
        ..Default::default()
    }
}

/// A LAS/LAZ file of `n` [`rich_point`]s in point `format` (version 1.`minor`), 1 mm grid at `base`.
fn rich_las(path: &Path, n: usize, minor: u8, format: u8, laz: bool, base: [f64; 3]) -> Vec<las::Point> {
    let mut b = las::Builder::from((1, minor));
    let mut pf = las::point::Format::new(format).unwrap();
    pf.is_compressed = laz;
    b.point_format = pf;
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(base[0]), y: t(base[1]), z: t(base[2]) };
    let mut w = las::Writer::from_path(path, b.into_header().unwrap()).unwrap();
    let pts: Vec<las::Point> = (0..n)
        .map(|i| {
            let mut p = rich_point(i, base, format < 6);
            if !pf.has_gps_time {
                p.gps_time = None;
            }
            if !pf.has_color {
                p.color = None;
            }
            if !pf.has_nir {
                p.nir = None;
            }
            p
        })
        .collect();
    for p in &pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
    pts
}

/// Every point of a LAS/LAZ/COPC file as the `las` crate reads it, by position (mm grid integers).
fn by_position(path: &Path) -> std::collections::BTreeMap<[i64; 3], las::Point> {
    use las::Reader;
    let mut r = Reader::from_path(path).unwrap();
    let mut m = std::collections::BTreeMap::new();
    let data = r.read_all().unwrap();
    for p in data.points() {
        let p = p.unwrap();
        let key = [p.x, p.y, p.z].map(|v| (v * 1000.0).round() as i64);
        assert!(m.insert(key, p).is_none(), "two points at {key:?} in {}", path.display());
    }
    m
}

#[test]
fn every_las_field_survives_field_by_field_from_several_inputs() {
    // A LAS 1.4 format-8 LAZ (every field, NIR), a LAS 1.2 format-1 file (legacy flags, scan angle
    // rank, GPS time, no color) and a text file, merged into one COPC of point format 8.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (dir.path().join("a.laz"), dir.path().join("b.las"), dir.path().join("c.xyz"));
    let pa = rich_las(&a, 70_000, 4, 8, true, BASE);
    let base_b = [BASE[0] + 900.0, BASE[1] + 50.0, BASE[2]];
    let pb = rich_las(&b, 50_000, 2, 1, false, base_b);
    std::fs::write(&c, "512010.5 5400020.25 301.125 10 20 30\n512011.5 5400021.25 302.125 40 50 60\n").unwrap();
    let out = dir.path().join("out.copc.laz");
    let opts = pcv_io::load::LoadOptions::quiet();
    pcv_io::convert::copc::write_with(&[a.clone(), b.clone(), c], &out, &opts, 5_000).unwrap();
    let f = copc::open_copc(out.to_str().unwrap()).unwrap();
    assert_eq!(f.header().format, 8);
    assert!(f.octree().max_depth() >= 2);
    let got = by_position(&out);
    assert_eq!(got.len(), pa.len() + pb.len() + 2);
    // The source points as the las crate reads them back (its own rounding of what it wrote).
    let (ra, rb) = (by_position(&a), by_position(&b));
    assert_eq!((ra.len(), rb.len()), (pa.len(), pb.len()));
    for (key, s) in &ra {
        // Format 8 → format 8: every field exactly; the coordinates on the merge's finer grid (a text
        // input has no grid of its own), to within a micrometre.
        let mut o = got[key].clone();
        for (v, w) in [(&mut o.x, s.x), (&mut o.y, s.y), (&mut o.z, s.z)] {
            assert!((*v - w).abs() < 1e-6, "point at {key:?} of a.laz: {v} vs {w}");
            *v = w;
        }
        assert_eq!(&o, s, "point at {key:?} of a.laz");
    }
    for (key, s) in &rb {
        let o = &got[key];
        let at = format!("point at {key:?} of b.las");
        assert!((o.x - s.x).abs() < 1e-6 && (o.y - s.y).abs() < 1e-6 && (o.z - s.z).abs() < 1e-6, "{at}");
        assert_eq!(o.intensity, s.intensity, "{at}");
        assert_eq!((o.return_number, o.number_of_returns), (s.return_number, s.number_of_returns), "{at}");
        assert_eq!((o.scan_direction, o.is_edge_of_flight_line), (s.scan_direction, s.is_edge_of_flight_line), "{at}");
        assert_eq!(o.classification, s.classification, "{at}");
        assert_eq!(
            (o.is_synthetic, o.is_key_point, o.is_withheld, o.is_overlap),
            (s.is_synthetic, s.is_key_point, s.is_withheld, false),
            "{at}"
        );
        assert_eq!(
            (o.user_data, o.point_source_id, o.gps_time, o.scanner_channel),
            (s.user_data, s.point_source_id, s.gps_time, 0),
            "{at}"
        );
        // The rank in degrees becomes 0.006° steps: within half a step.
        assert!((o.scan_angle - s.scan_angle).abs() <= 0.0031, "{at}: scan angle {} vs {}", o.scan_angle, s.scan_angle);
        // No color or NIR in the source: zero (the las crate reads a zero NIR as none).
        assert_eq!((o.color, o.nir), (Some(las::Color::default()), None), "{at}");
    }
    let t = &got[&[512_010_500, 5_400_020_250, 301_125]];
    assert_eq!(
        (t.return_number, t.number_of_returns, t.gps_time, t.color),
        (1, 1, Some(0.0), Some(las::Color { red: 10 * 257, green: 20 * 257, blue: 30 * 257 }))
    );
    // The header counts points by return; the COPC info holds the GPS time range.
    let data = std::fs::read(&out).unwrap();
    let by_return: Vec<u64> =
        (0..15).map(|r| u64::from_le_bytes(data[255 + 8 * r..263 + 8 * r].try_into().unwrap())).collect();
    let mut want = [0u64; 15];
    for p in ra.values().chain(rb.values()) {
        want[p.return_number as usize - 1] += 1;
    }
    want[0] += 2;
    assert_eq!(by_return, want);
    let gps: Vec<f64> = ra.values().chain(rb.values()).map(|p| p.gps_time.unwrap()).chain([0.0]).collect();
    let (lo, hi) = gps.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &g| (l.min(g), h.max(g)));
    assert_eq!((f.info().gpstime_min, f.info().gpstime_max), (lo, hi));
}

/// A node's key, count, and its points' exact coordinates (as bits) and intensities, in order.
type NodeRecords = (NodeKey, u64, Vec<[u64; 3]>, Vec<u16>);

/// Every node of a COPC file.
fn nodes_of(path: &Path) -> Vec<NodeRecords> {
    let f = copc::open_copc(path.to_str().unwrap()).unwrap();
    let mut v: Vec<_> = f
        .octree()
        .nodes
        .iter()
        .map(|n| {
            let e = if n.point_count > 0 { Some(f.read_node_exact(n).unwrap()) } else { None };
            let xyz = e.as_ref().map(|e| e.xyz.iter().map(|p| p.map(f64::to_bits)).collect()).unwrap_or_default();
            let i = e.map(|e| e.intensity).unwrap_or_default();
            (n.key, n.point_count, xyz, i)
        })
        .collect();
    v.sort_by_key(|n| n.0);
    v
}

#[test]
fn the_octree_is_the_same_whatever_the_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source_las(dir.path(), 120_000);
    let laz = dir.path().join("b.laz");
    rich_las(&laz, 40_000, 4, 7, true, [BASE[0] + 100.0, BASE[1] + 100.0, BASE[2]]);
    let inputs = [src, laz];
    let opts = pcv_io::load::LoadOptions::quiet();
    let mut runs = Vec::new();
    for threads in [1, 3] {
        let out = dir.path().join(format!("t{threads}.copc.laz"));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| pcv_io::convert::copc::write_with(&inputs, &out, &opts, 3_000)).unwrap();
        runs.push(nodes_of(&out));
    }
    assert!(runs[0].len() > 20, "a deep enough octree: {} nodes", runs[0].len());
    assert!(runs[0] == runs[1], "the nodes differ between 1 and 3 threads");
}

#[test]
fn a_header_that_understates_the_bounds_still_gives_a_valid_octree() {
    let dir = tempfile::tempdir().unwrap();
    let (src, pts) = source_las(dir.path(), 200_000);
    // Shrink the header's bounds (max x, min x, max y, min y, max z, min z at bytes 179..227) to a
    // tenth of the tile around its corner.
    let mut d = std::fs::read(&src).unwrap();
    let (lo, hi) = bounds(&pts);
    for k in 0..3 {
        let small_max = lo[k] + (hi[k] - lo[k]) * 0.1;
        d[179 + 16 * k..187 + 16 * k].copy_from_slice(&small_max.to_le_bytes());
    }
    let bad = dir.path().join("bad.las");
    std::fs::write(&bad, &d).unwrap();
    let out = dir.path().join("out.copc.laz");
    convert(std::slice::from_ref(&bad), &out);
    let f = copc::open_copc(out.to_str().unwrap()).unwrap();
    let o = f.octree();
    assert_eq!(o.total_points(), pts.len() as u64);
    let mut got = Vec::new();
    for n in o.nodes.iter().filter(|n| n.point_count > 0) {
        let cube = n.key.cube_in(&o.cube);
        for v in f.read_node_exact(n).unwrap().xyz {
            for k in 0..3 {
                assert!(
                    v[k] >= cube.min[k] - 1e-6 && v[k] <= cube.max()[k] + 1e-6,
                    "{v:?} outside node {:?}'s cube",
                    n.key
                );
            }
            got.push(v.map(f64::to_bits));
        }
    }
    let mut want: Vec<[u64; 3]> = read_with_las_crate(&src).into_iter().map(|p| p.0).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert!(got == want, "the points differ from the source's");
}

#[test]
fn a_las_point_with_an_infinite_coordinate_is_an_error_naming_the_file_and_the_point() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source_las(dir.path(), 1000);
    let mut d = std::fs::read(&src).unwrap();
    d[131..139].copy_from_slice(&1e303f64.to_le_bytes()); // x scale
    let bad = dir.path().join("huge.las");
    std::fs::write(&bad, &d).unwrap();
    let out = dir.path().join("out.copc.laz");
    let opts = pcv_io::load::LoadOptions::quiet();
    let e = pcv_io::convert::convert(std::slice::from_ref(&bad), &out, &opts).unwrap_err().to_string();
    assert!(e.contains("huge.las") && e.contains("point ") && e.contains("infinite"), "{e}");
    assert!(!out.exists());
}

/// An extra-bytes VLR (LASF_Spec 4) describing a u16 "height_cm" and a u8 "flag" (3 bytes a point).
fn extra_bytes_vlr() -> las::Vlr {
    let mut data = Vec::new();
    for (ty, name) in [(3u8, "height_cm"), (1, "flag")] {
        let mut d = [0u8; 192];
        d[2] = ty;
        d[4..4 + name.len()].copy_from_slice(name.as_bytes());
        d[160..160 + 11].copy_from_slice(b"test values");
        data.extend_from_slice(&d);
    }
    las::Vlr { user_id: "LASF_Spec".into(), record_id: 4, description: "extra bytes".into(), data }
}

const WKT: &str = "PROJCS[\"WGS 84 / UTM zone 32N\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",SPHEROID[\"WGS 84\",6378137,298.257223563]],\
PRIMEM[\"Greenwich\",0],UNIT[\"degree\",0.0174532925199433]],PROJECTION[\"Transverse_Mercator\"],PARAMETER[\"central_meridian\",9],\
PARAMETER[\"scale_factor\",0.9996],PARAMETER[\"false_easting\",500000],UNIT[\"metre\",1],AUTHORITY[\"EPSG\",\"32632\"]]";

/// A LAS 1.4 point-format-7 file (LAZ for `laz`) of `n` [`rich_point`]s with 3 extra bytes a point,
/// described by [`extra_bytes_vlr`], and the CRS as a WKT VLR (or, `geotiff`, GeoTIFF keys only).
fn extra_las(path: &Path, n: usize, laz: bool, geotiff: bool, base: [f64; 3]) -> Vec<las::Point> {
    let mut b = las::Builder::from((1, 4));
    let mut pf = las::point::Format::new(7).unwrap();
    pf.is_compressed = laz;
    pf.extra_bytes = 3;
    b.point_format = pf;
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(base[0]), y: t(base[1]), z: t(base[2]) };
    b.vlrs.push(extra_bytes_vlr());
    if geotiff {
        // A GeoTIFF key directory: version 1.1.0, one key (ProjectedCSTypeGeoKey 3072 = EPSG 32632).
        let keys: Vec<u8> = [1u16, 1, 0, 1, 3072, 0, 1, 32632].iter().flat_map(|v| v.to_le_bytes()).collect();
        b.vlrs.push(las::Vlr {
            user_id: "LASF_Projection".into(),
            record_id: 34735,
            description: "GeoTIFF keys".into(),
            data: keys,
        });
    } else {
        b.vlrs.push(las::Vlr {
            user_id: "LASF_Projection".into(),
            record_id: 2112,
            description: "OGC WKT".into(),
            data: WKT.as_bytes().to_vec(),
        });
    }
    let mut w = las::Writer::from_path(path, b.into_header().unwrap()).unwrap();
    let pts: Vec<las::Point> = (0..n)
        .map(|i| {
            let mut p = rich_point(i, base, false);
            p.nir = None;
            let h = ((p.z - base[2]) * 100.0).round() as u16;
            p.extra_bytes = vec![h as u8, (h >> 8) as u8, (i % 251) as u8];
            p
        })
        .collect();
    for p in &pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
    pts
}

/// The VLRs of a LAS/LAZ/COPC file as the `las` crate reads them: (user ID, record ID, data).
fn vlrs_of(path: &Path) -> Vec<(String, u16, Vec<u8>)> {
    let r = las::Reader::from_path(path).unwrap();
    r.header().vlrs().iter().map(|v| (v.user_id.clone(), v.record_id, v.data.clone())).collect()
}

#[test]
fn extra_bytes_and_the_crs_survive_field_by_field() {
    // A LAS 1.4 format-7 LAZ with 3 described extra bytes and a WKT CRS, then a LAS 1.2 format-1 file
    // (no extra bytes: its points get zeros there) and a LAS 1.4 format-7 LAS with the same extra
    // bytes (its own carried).
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (dir.path().join("a.laz"), dir.path().join("b.las"), dir.path().join("c.las"));
    let pa = extra_las(&a, 60_000, true, false, BASE);
    let pb = rich_las(&b, 20_000, 2, 1, false, [BASE[0] + 900.0, BASE[1] + 50.0, BASE[2]]);
    let pc = extra_las(&c, 20_000, false, false, [BASE[0], BASE[1] + 900.0, BASE[2]]);
    let out = dir.path().join("out.copc.laz");
    let opts = pcv_io::load::LoadOptions::quiet();
    pcv_io::convert::copc::write_with(&[a.clone(), b.clone(), c.clone()], &out, &opts, 5_000).unwrap();
    let f = copc::open_copc(out.to_str().unwrap()).unwrap();
    assert_eq!((f.header().format, f.header().record_len), (7, 36 + 3));
    assert!(f.octree().max_depth() >= 2);
    // The VLRs: COPC info, LASzip, then the first input's (extra bytes, WKT) as they were.
    let v = vlrs_of(&out);
    let names: Vec<(&str, u16)> = v.iter().map(|v| (v.0.as_str(), v.1)).collect();
    assert_eq!(names, [("copc", 1), ("laszip encoded", 22204), ("LASF_Spec", 4), ("LASF_Projection", 2112)]);
    assert_eq!(v[2].2, extra_bytes_vlr().data);
    assert_eq!(v[3].2, WKT.as_bytes());
    // Every point, every field, as the las crate (the laz crate's decompressor) reads them back.
    let got = by_position(&out);
    assert_eq!(got.len(), pa.len() + pb.len() + pc.len());
    for src in [&a, &c] {
        let s = by_position(src);
        assert_eq!(s.len(), if src == &a { pa.len() } else { pc.len() });
        for (key, s) in &s {
            assert_eq!(s.extra_bytes.len(), 3);
            assert_eq!(&got[key], s, "point at {key:?} of {}", src.display());
        }
    }
    for (key, s) in &by_position(&b) {
        let o = &got[key];
        assert_eq!(
            (o.intensity, o.gps_time, o.point_source_id),
            (s.intensity, s.gps_time, s.point_source_id),
            "point at {key:?} of b.las"
        );
        assert_eq!(o.extra_bytes, [0, 0, 0], "point at {key:?} of b.las");
    }
    // pcv's own COPC reader reads the 39-byte records of every node.
    let total: u64 = f
        .octree()
        .nodes
        .iter()
        .filter(|n| n.point_count > 0)
        .map(|n| f.read_node_exact(n).unwrap().xyz.len() as u64)
        .sum();
    assert_eq!(total, got.len() as u64);

    // An independent COPC reader: laspy's CopcReader names the extra dimensions from the VLR and reads
    // each point's values.
    let Some(python) = laspy_python() else { return };
    let script = r#"
import sys, laspy
from laspy import CopcReader
import numpy as np
with CopcReader.open(sys.argv[1]) as r:
    w = [v for v in r.header.vlrs if v.record_id == 2112]
    print("wkt", len(w), getattr(w[0], "string", "").startswith("PROJCS[\"WGS 84 / UTM zone 32N\"") if w else False)
    q = r.query()
    for x, y, z, h, f in zip(np.asarray(q.X), np.asarray(q.Y), np.asarray(q.Z), np.asarray(q["height_cm"]), np.asarray(q["flag"])):
        print(x, y, z, h, f)
"#;
    let o = std::process::Command::new(&python).args(["-c", script]).arg(&out).output().unwrap();
    assert!(o.status.success(), "laspy failed: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    assert_eq!(first, "wkt 1 True", "laspy's view of the WKT VLR");
    let mut rows = 0;
    for l in lines {
        let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
        // X, Y, Z on the output's grid, which is a.laz's (offset BASE, 1 mm).
        let key = [v[0] + 512_000_000, v[1] + 5_400_000_000, v[2] + 300_000];
        let p = &got[&key];
        let want = if p.extra_bytes.is_empty() {
            [0, 0]
        } else {
            [u16::from_le_bytes([p.extra_bytes[0], p.extra_bytes[1]]) as i64, p.extra_bytes[2] as i64]
        };
        assert_eq!([v[3], v[4]], want, "laspy's extra dimensions of the point at {key:?}");
        rows += 1;
    }
    assert_eq!(rows, got.len());
    eprintln!("laspy read {rows} points with their extra dimensions ({first})");
}

/// A Python with laspy and lazrs (the repo's .tools/venv, `PCV_PYTHON`, else python3), or `None`,
/// saying why, when there is none.
fn laspy_python() -> Option<PathBuf> {
    common::python_with("laspy, lazrs", "laspy[lazrs]")
}

/// COPC requires the CRS as WKT: GeoTIFF keys only become a WKT VLR (read back by the las crate, an
/// independent reader, and parsed to the keys' EPSG code), the WKT bit set; the header's file source ID
/// and GUID are the source's (they were reset to 0).
#[test]
fn a_geotiff_only_crs_becomes_the_wkt_copc_requires_and_the_header_ids_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.las");
    extra_las(&a, 2_000, false, true, BASE);
    // A file source ID and a GUID to keep.
    let mut bytes = std::fs::read(&a).unwrap();
    bytes[4..6].copy_from_slice(&4242u16.to_le_bytes());
    (8..24).for_each(|i| bytes[i] = i as u8);
    std::fs::write(&a, &bytes).unwrap();
    let out = dir.path().join("out.copc.laz");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pcv"))
        .arg("convert")
        .arg(&a)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("GeoTIFF keys only; written as the OGC WKT COPC requires"), "{err}");
    let vlrs = vlrs_of(&out);
    let names: Vec<(String, u16)> = vlrs.iter().map(|v| (v.0.clone(), v.1)).collect();
    assert!(!names.contains(&("LASF_Projection".into(), 34735)), "{names:?}");
    let wkt = vlrs.iter().find(|v| v.0 == "LASF_Projection" && v.1 == 2112).expect("a WKT VLR");
    let crs = pcv_io::crs::parse(&String::from_utf8_lossy(&wkt.2), "the output's WKT VLR").unwrap();
    assert_eq!(crs.epsg, Some(32632), "{crs:?}");
    let head = std::fs::read(&out).unwrap();
    assert_eq!(u16::from_le_bytes([head[4], head[5]]), 4242, "file source ID");
    assert_eq!(&head[8..24], &bytes[8..24], "GUID");
    assert_ne!(u16::from_le_bytes([head[6], head[7]]) & 16, 0, "the WKT bit");
    assert_eq!(by_position(&out), by_position(&a));
    // Back to LAS: the COPC hierarchy EVLR (its offsets point into the COPC file) is not carried.
    let back = dir.path().join("back.las");
    let o =
        std::process::Command::new(env!("CARGO_BIN_EXE_pcv")).arg("convert").arg(&out).arg("-o").arg(&back).output();
    assert!(o.unwrap().status.success());
    let back_bytes = std::fs::read(&back).unwrap();
    let r = las::Reader::from_path(&back).unwrap();
    assert!(r.header().evlrs().iter().all(|v| v.user_id != "copc"), "{:?}", r.header().evlrs());
    assert_eq!(u32::from_le_bytes(back_bytes[243..247].try_into().unwrap()), r.header().evlrs().len() as u32);
    assert_eq!(by_position(&back), by_position(&a));
}

#[test]
fn a_wkt_crs_in_an_evlr_becomes_a_vlr() {
    // LAS 1.4 may hold the CRS as an EVLR; COPC readers look for it among the VLRs.
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.las");
    let mut b = las::Builder::from((1, 4));
    b.point_format = las::point::Format::new(6).unwrap();
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(BASE[0]), y: t(BASE[1]), z: t(BASE[2]) };
    b.evlrs.push(las::Vlr {
        user_id: "LASF_Projection".into(),
        record_id: 2112,
        description: "OGC WKT".into(),
        data: WKT.as_bytes().to_vec(),
    });
    b.evlrs.push(las::Vlr {
        user_id: "someone".into(),
        record_id: 7,
        description: "not a CRS".into(),
        data: vec![1, 2, 3],
    });
    let mut w = las::Writer::from_path(&a, b.into_header().unwrap()).unwrap();
    for i in 0..3_000 {
        let mut p = rich_point(i, BASE, false);
        (p.color, p.nir) = (None, None);
        w.write_point(p).unwrap();
    }
    w.close().unwrap();
    let out = dir.path().join("out.copc.laz");
    convert(std::slice::from_ref(&a), &out);
    let v = vlrs_of(&out);
    let names: Vec<(&str, u16)> = v.iter().map(|v| (v.0.as_str(), v.1)).collect();
    assert_eq!(names, [("copc", 1), ("laszip encoded", 22204), ("LASF_Projection", 2112)]);
    assert_eq!(v[2].2, WKT.as_bytes());
    assert_eq!(by_position(&out), by_position(&a));
}
