//! Colour by any field and filters, end to end: LAS files the tests write with GPS time, returns, scan
//! angles and point sources, read back; golden images of the ramps and of a filtered cloud on the CPU
//! backend (`PCV_UPDATE_GOLDEN=1 cargo test --test fields` rewrites them); and the command line
//! (`--color-by`, `--classes`, `--returns`, `--filter`, `--clip-box`, `pcv info`).
mod common;

use glam::DVec3;
use pcv_camera::Camera;
use pcv_io::attributes::{recolor_with, Attributes, ColorMode, Column, Field, FieldLook, Ramp, SourceSpan};
use pcv_io::filter::{self, ClipBox, PointFilter, Returns};
use pcv_io::{Point, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::image_io::Frame;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// A 60 × 40 m patch of 1 point per 0.25 m² in UTM-like coordinates: ground (class 2) everywhere and a
/// 10 m block of vegetation (class 5) 5 m up in the middle; two flight lines (point source 7 for
/// y < 20, 8 above) flown along x at 50 m/s, an hour apart; returns 1 of 1 on the ground, 1 or 2 of 2
/// in the vegetation; scan angles across each line.
fn patch() -> PointCloud {
    let origin = DVec3::new(500_000.0, 4_000_000.0, 100.0);
    let (mut points, mut class, mut time, mut src, mut ret, mut nret, mut angle) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut add = |x: f64, y: f64, z: f64, c: u8, r: f64, n: f64| {
        points.push(Point::new([x as f32, y as f32, z as f32], [200, 200, 200, 255]));
        class.push(c);
        let line = if y < 20.0 { 0.0 } else { 1.0 };
        time.push(400_000_000.0 + 3600.0 * line + x / 50.0);
        src.push(7.0 + line);
        ret.push(r);
        nret.push(n);
        angle.push(y - 10.0 - 20.0 * line);
    };
    for i in 0..120 {
        for j in 0..80 {
            let (x, y) = (i as f64 * 0.5, j as f64 * 0.5);
            let in_block = (25.0..35.0).contains(&x) && (15.0..25.0).contains(&y);
            if in_block {
                add(x, y, 5.0 + ((i + j) % 3) as f64 * 0.3, 5, (1 + (i + j) % 2) as f64, 2.0);
            } else {
                add(x, y, 0.01 * x, 2, 1.0, 1.0);
            }
        }
    }
    let n = points.len() as u64;
    let mut c = PointCloud::from_points(points, origin, "patch.las");
    c.attributes = Some(Arc::new(Attributes {
        intensity: None,
        classification: Some(class),
        columns: vec![
            Column::from_f64(Field::ReturnNumber, &ret),
            Column::from_f64(Field::NumberOfReturns, &nret),
            Column::from_f64(Field::ScanAngle, &angle),
            Column::from_f64(Field::PointSourceId, &src),
            Column::from_f64(Field::GpsTime, &time),
        ],
        field_spec: None,
        has_rgb: true,
        sources: vec![SourceSpan {
            label: "patch.las".into(),
            format: pcv_io::formats::Format::Las,
            points: 0..n,
            has_rgb: true,
            has_intensity: false,
            has_classification: true,
            uniform_rgb: Some([200, 200, 200]),
            crs: None,
        }],
        mode: ColorMode::Rgb,
        loaded_rgba: None,
        color_note: None,
    }));
    c
}

/// The patch written as LAS and read back (fields kept).
fn patch_file(dir: &Path) -> PathBuf {
    let path = dir.join("patch.las");
    pcv_io::convert::write_cloud(&patch(), &path).unwrap();
    path
}

fn load(path: &Path) -> PointCloud {
    pcv_io::load::load_files_with(&[path.to_path_buf()], &pcv_io::load::LoadOptions::quiet()).unwrap()
}

/// The cloud from above at 160 × 90 in the vis mode (deterministic: depth ties break by index).
fn render(cloud: &PointCloud) -> Frame {
    let (w, h) = (160, 90);
    let cam = Camera::for_cloud(cloud.bounds, false);
    let frame = FrameParams::of_camera(&cam, w, h).with_mode(RenderMode::Vis);
    let mut r = CpuRasterizer::new();
    r.upload(cloud).unwrap();
    let mut px = vec![0u32; frame.num_pixels()];
    r.render(&frame, Target::Host(&mut px)).unwrap();
    Frame::new(w, h, px)
}

/// Compares with tests/golden/NAME.png (rewritten with PCV_UPDATE_GOLDEN=1); every pixel must match.
fn golden(name: &str, actual: &Frame) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.png"));
    if std::env::var("PCV_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        actual.write_png(&path).unwrap();
        return;
    }
    let g = Frame::read_png(&path)
        .unwrap_or_else(|e| panic!("{e}: run `PCV_UPDATE_GOLDEN=1 cargo test --test fields` to create it"));
    let differing = g.pixels.iter().zip(&actual.pixels).filter(|(a, b)| a != b).count();
    if differing > 0 {
        let out = common::output_dir().join(format!("{name}.actual.png"));
        actual.write_png(&out).unwrap();
        panic!("{differing} pixels differ from {} (actual: {})", path.display(), out.display());
    }
}

#[test]
fn las_files_keep_every_field_through_write_and_read() {
    let d = tempfile::tempdir().unwrap();
    let c = load(&patch_file(d.path()));
    let a = c.attributes.as_deref().unwrap();
    let orig = patch();
    let o = orig.attributes.as_deref().unwrap();
    for f in [Field::ReturnNumber, Field::NumberOfReturns, Field::PointSourceId, Field::GpsTime, Field::ScanAngle] {
        let (got, want) = (a.column(f).expect("field read back"), o.column(f).unwrap());
        // Scan angles are stored in 0.006-degree steps; GPS time as f64 (the column keeps it to < 1 ms).
        let tol = if f == Field::ScanAngle { 0.003 } else { 1e-3 };
        for i in (0..c.len() as usize).step_by(97) {
            assert!((got.get(i) - want.get(i)).abs() <= tol, "{f} of point {i}: {} vs {}", got.get(i), want.get(i));
        }
    }
    assert!(ColorMode::ALL
        .iter()
        .all(|m| a.available_modes().contains(m)
            || matches!(m, ColorMode::Intensity | ColorMode::UserData | ColorMode::Nir)));
}

#[test]
fn gps_time_in_viridis_and_returns_in_categories_match_their_golden_images() {
    let mut c = patch();
    recolor_with(&mut c, ColorMode::GpsTime, &FieldLook::default()).unwrap();
    // Two flight lines an hour apart: the default 2nd..98th percentile range spans both.
    let a = c.attributes.as_deref().unwrap();
    match a.field_spec {
        Some(pcv_io::attributes::ColorSpec::Field { ramp, lo, hi, .. }) => {
            assert_eq!(ramp, Ramp::Viridis);
            assert!(lo > 400_000_000.0 && lo < 400_000_001.0 && hi > 400_003_600.0, "{lo}..{hi}");
        }
        other => panic!("{other:?}"),
    }
    golden("fields_gps_time_viridis_160x90", &render(&c));
    let mut r = patch();
    recolor_with(&mut r, ColorMode::ReturnNumber, &FieldLook::default()).unwrap();
    golden("fields_return_number_categorical_160x90", &render(&r));
    // A ramp and range of one's own: the block's second returns and the ground's first differ.
    let mut s = patch();
    let look = FieldLook { ramp: Some(Ramp::Diverging), range: Some((-10.0, 10.0)), ..Default::default() };
    recolor_with(&mut s, ColorMode::ScanAngle, &look).unwrap();
    golden("fields_scan_angle_diverging_160x90", &render(&s));
}

#[test]
fn hiding_vegetation_leaves_the_ground_and_matches_its_golden_image() {
    let c = patch();
    let mut f = PointFilter::default();
    f.set_class_shown(5, false);
    let (shown, kept) = filter::shown(&c, &f);
    assert_eq!(kept.points, 120 * 80 - 20 * 20);
    let img = render(&shown);
    golden("filter_no_vegetation_160x90", &img);
    // The vegetation's pixels are gone: the full image differs there.
    assert_ne!(img.pixels, render(&c).pixels);
}

#[test]
fn first_returns_and_a_clip_box_keep_what_they_say() {
    let c = patch();
    let first = PointFilter { returns: Returns::First, ..Default::default() };
    let k = filter::kept(&c, &first, 0..c.len() as usize);
    assert_eq!(k.points, 120 * 80 - 200, "half of the block's points are second returns");
    // The block in file coordinates: x 500025..500035, y 4000015..4000025.
    let b = PointFilter {
        boxes: vec![ClipBox::parse("500025,4000015,0,500034.9,4000024.9,1000").unwrap()],
        ..Default::default()
    };
    let k = filter::kept(&c, &b, 0..c.len() as usize);
    assert_eq!(k.points, 400);
    assert!(k.groups_skipped > 0, "groups far from the box are skipped: {k:?}");
}

fn pcv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pcv")).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

/// A LAS 1.4 file (format 6, or LAZ) of 2,000 points whose records carry two extra-bytes fields, written
/// by the las crate: `Amplitude` (f32 = i × 0.5) and `Deviation` (u16, scale 0.1, offset 2, no-data
/// 65535 on every 10th point), after 3 undocumented bytes (data type 0).
fn extra_bytes_file(dir: &Path, laz: bool) -> PathBuf {
    use pcv_io::formats::las_extra::descriptor;
    let mut f = las::point::Format::new(6).unwrap();
    f.extra_bytes = 3 + 4 + 2;
    f.is_compressed = laz;
    let mut b = las::Builder::from((1, 4));
    b.point_format = f;
    let t = |o: f64| las::Transform { scale: 0.01, offset: o };
    b.transforms = las::Vector { x: t(500_000.0), y: t(4_000_000.0), z: t(0.0) };
    let mut data = descriptor("", 0, None, None, None);
    data[3] = 3; // undocumented: 3 bytes
    data.extend(descriptor("Amplitude", 9, None, None, None));
    data.extend(descriptor("Deviation", 3, Some(0.1), Some(2.0), Some(65535.0)));
    b.vlrs.push(las::Vlr { user_id: "LASF_Spec".into(), record_id: 4, description: "Extra Bytes".into(), data });
    let path = dir.join(if laz { "extra.laz" } else { "extra.las" });
    let mut w = las::Writer::from_path(&path, b.into_header().unwrap()).unwrap();
    for i in 0..2000u32 {
        let mut extra = vec![7u8, 8, 9];
        extra.extend((i as f32 * 0.5).to_le_bytes());
        extra.extend((if i % 10 == 0 { 65535u16 } else { (i % 500) as u16 }).to_le_bytes());
        w.write_point(las::Point {
            x: 500_000.0 + (i % 50) as f64,
            y: 4_000_000.0 + (i / 50) as f64,
            z: 10.0,
            return_number: 1,
            number_of_returns: 1,
            gps_time: Some(1000.0 + i as f64),
            extra_bytes: extra,
            ..Default::default()
        })
        .unwrap();
    }
    w.close().unwrap();
    path
}

#[test]
fn las_and_laz_extra_bytes_are_fields_by_their_own_names() {
    let d = tempfile::tempdir().unwrap();
    for laz in [false, true] {
        let path = extra_bytes_file(d.path(), laz);
        let c = load(&path);
        let a = c.attributes.as_deref().unwrap();
        let amp = Field::named("Amplitude").expect("the name was interned when the file was read");
        let dev = Field::named("Deviation").unwrap();
        let (ca, cd) = (a.column(amp).expect("Amplitude read"), a.column(dev).expect("Deviation read"));
        for i in 0..2000usize {
            assert_eq!(ca.get(i), i as f64 * 0.5, "{}: Amplitude of point {i}", path.display());
            if i % 10 == 0 {
                assert!(cd.get(i).is_nan(), "the no-data value reads as no value");
            } else {
                let want = (i % 500) as f64 * 0.1 + 2.0;
                assert!((cd.get(i) - want).abs() < 1e-4, "Deviation of point {i}: {} vs {want}", cd.get(i));
            }
        }
        assert!(a.available_modes().contains(&ColorMode::Extra(amp)));
        assert_eq!(a.column(Field::GpsTime).map(|c| c.get(5)), Some(1005.0), "the standard fields still read");
    }
    // pcv info names them with their storage; the command line colours and filters by them.
    let las = extra_bytes_file(d.path(), false);
    let info = pcv(&["info", las.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("Amplitude (f32)") && text.contains("Deviation (u16 × 0.1 + 2)"), "{text}");
    assert!(!text.contains("extra bytes per point"), "described bytes are not 'skipped': {text}");
    let png = d.path().join("amp.png");
    let out = pcv(&[
        "render",
        las.to_str().unwrap(),
        "--backend",
        "cpu",
        "--size",
        "64x36",
        "--color-by",
        "Amplitude",
        "--filter",
        "Deviation:2..10",
        "-o",
        png.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Deviation in 2..10: raw 0..80 of each 500, less every 10th (no data): 72 + 72 + 72 + 72 points.
    assert!(err.contains("288 of 2000 points"), "the filter's count: {err}");
    let bad = pcv(&[
        "render",
        las.to_str().unwrap(),
        "--backend",
        "cpu",
        "--color-by",
        "Amplitud",
        "-o",
        png.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("Amplitud") && err.contains("Amplitude"),
        "a misspelt field lists the file's: {err}"
    );
}

/// PLY (binary and ascii) and PCD (ascii, binary) files of 300 points whose vertices carry their own
/// scalar properties: `quality` (double = i / 4) and `ring` (ushort = i % 16), beside a list (PLY) or a
/// 3-value histogram (PCD) that stay skipped.
fn property_files(dir: &Path) -> Vec<PathBuf> {
    let n = 300usize;
    let (q, ring) = (|i: usize| i as f64 / 4.0, |i: usize| (i % 16) as u16);
    let mut out = Vec::new();
    let head = |fmt: &str| {
        format!("ply\nformat {fmt} 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nproperty double quality\nproperty list uchar int tags\nproperty ushort ring\nend_header\n")
    };
    let mut bin = head("binary_little_endian").into_bytes();
    let mut txt = head("ascii");
    for i in 0..n {
        for v in [i as f32, (i % 7) as f32, 1.0] {
            bin.extend(v.to_le_bytes());
        }
        bin.extend(q(i).to_le_bytes());
        bin.push(1);
        bin.extend(5i32.to_le_bytes());
        bin.extend(ring(i).to_le_bytes());
        txt.push_str(&format!("{i} {} 1 {} 1 5 {}\n", i % 7, q(i), ring(i)));
    }
    for (name, bytes) in [("props-bin.ply", bin), ("props-ascii.ply", txt.into_bytes())] {
        std::fs::write(dir.join(name), bytes).unwrap();
        out.push(dir.join(name));
    }
    let pcd_head = |data: &str| {
        format!("VERSION 0.7\nFIELDS x y z quality hist ring\nSIZE 4 4 4 8 4 2\nTYPE F F F F F U\nCOUNT 1 1 1 1 3 1\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA {data}\n")
    };
    let mut bin = pcd_head("binary").into_bytes();
    let mut txt = pcd_head("ascii");
    for i in 0..n {
        for v in [i as f32, (i % 7) as f32, 1.0] {
            bin.extend(v.to_le_bytes());
        }
        bin.extend(q(i).to_le_bytes());
        for h in [0.1f32, 0.2, 0.3] {
            bin.extend(h.to_le_bytes());
        }
        bin.extend(ring(i).to_le_bytes());
        txt.push_str(&format!("{i} {} 1 {} 0.1 0.2 0.3 {}\n", i % 7, q(i), ring(i)));
    }
    for (name, bytes) in [("props-bin.pcd", bin), ("props-ascii.pcd", txt.into_bytes())] {
        std::fs::write(dir.join(name), bytes).unwrap();
        out.push(dir.join(name));
    }
    out
}

#[test]
fn ply_and_pcd_properties_are_fields_by_their_own_names() {
    let d = tempfile::tempdir().unwrap();
    for path in property_files(d.path()) {
        let c = load(&path);
        assert_eq!(c.len(), 300, "{}", path.display());
        let a = c.attributes.as_deref().unwrap_or_else(|| panic!("{}: no attributes", path.display()));
        let (q, ring) = (Field::named("quality").unwrap(), Field::named("ring").unwrap());
        let (cq, cr) = (a.column(q).expect("quality read"), a.column(ring).expect("ring read"));
        for i in 0..300 {
            assert_eq!(cq.get(i), i as f64 / 4.0, "{}: quality of point {i}", path.display());
            assert_eq!(cr.get(i), (i % 16) as f64, "{}: ring of point {i}", path.display());
        }
        assert!(Field::named("tags").is_none_or(|t| a.column(t).is_none()), "a list is not a field");
        assert!(Field::named("hist").is_none_or(|h| a.column(h).is_none()), "a histogram is not a field");
        let info = pcv(&["info", path.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&info.stdout);
        assert!(text.contains("quality (") && text.contains("ring ("), "{}: {text}", path.display());
        let png = d.path().join("ring.png");
        let p = path.to_str().unwrap();
        let out = pcv(&[
            "render",
            p,
            "--backend",
            "cpu",
            "--size",
            "64x36",
            "--color-by",
            "ring",
            "--filter",
            "quality:10..20",
            "-o",
            png.to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.contains("41 of 300 points"), "{}: {err}", path.display());
    }
}

#[test]
fn the_command_line_colours_by_fields_and_filters() {
    let d = tempfile::tempdir().unwrap();
    let file = patch_file(d.path());
    let f = file.to_str().unwrap();
    // pcv info names each field and its range.
    let out = pcv(&["info", f]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("gps_time") && text.contains("point_source_id") && text.contains("7 .. 8"), "{text}");
    let png = d.path().join("a.png");
    let png_s = png.to_str().unwrap();
    let base = ["render", f, "--backend", "cpu", "--size", "160x90", "-o", png_s];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        pcv(&a)
    };
    let out = run(&["--color-by", "gps_time", "--classes", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("showing classes 5: 400 of 9600 points"), "{err}");
    let out = run(&["--returns", "first", "--clip-box", "500025,4000015,0,500034.9,4000024.9,1000:outside"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("showing first returns, 1 clip box: 9200 of 9600"), "{err}");
    // Errors name what is wrong.
    let out = run(&["--filter", "height:1..2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("have no height") && err.contains("gps_time"), "{err}");
    let out = run(&["--clip-box", "1,2,3"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected six numbers"));
    // A file without returns: said, not ignored.
    let ply = d.path().join("plain.xyz");
    std::fs::write(&ply, "0 0 0\n1 1 1\n2 2 2\n").unwrap();
    let out = pcv(&[
        "render",
        ply.to_str().unwrap(),
        "--backend",
        "cpu",
        "--size",
        "32x18",
        "-o",
        png_s,
        "--returns",
        "last",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no return_number"), "{err}");
}

#[test]
fn convert_writes_exactly_what_the_filter_shows_with_every_field() {
    let d = tempfile::tempdir().unwrap();
    let file = patch_file(d.path());
    let out = d.path().join("block.laz");
    let r = pcv(&[
        "convert",
        file.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--classes",
        "5",
        "--returns",
        "first",
        "--clip-box",
        "500000,4000000,0,500029.9,4000040,1000",
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    // The block's first returns with x < 30: 10 of its 20 columns, half of those points.
    let c = load(&out);
    assert_eq!(c.len(), 100, "{err}");
    let a = c.attributes.as_deref().unwrap();
    assert!(a.classification.as_ref().unwrap().iter().all(|&k| k == 5));
    let rn = a.column(Field::ReturnNumber).unwrap();
    assert!((0..100).all(|i| rn.get(i) == 1.0));
    // Every field kept: GPS time of the first line (y < 20) or the second, scan angles, sources.
    let t = a.column(Field::GpsTime).unwrap();
    assert!((0..100).all(|i| (400_000_000.5..400_003_601.0).contains(&t.get(i))));
    assert!(a.column(Field::PointSourceId).is_some() && a.column(Field::ScanAngle).is_some());
    // Other inputs filter on what they hold; returns they do not have are refused.
    let xyz = d.path().join("p.xyz");
    std::fs::write(&xyz, "0 0 0\n5 5 5\n9 9 9\n").unwrap();
    let txt = d.path().join("q.xyz");
    let r = pcv(&["convert", xyz.to_str().unwrap(), "-o", txt.to_str().unwrap(), "--clip-box", "1,1,1,9,9,9"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let written = std::fs::read_to_string(&txt).unwrap();
    assert_eq!(written.lines().filter(|l| !l.starts_with("//")).collect::<Vec<_>>(), ["5 5 5", "9 9 9"], "{written}");
    let r = pcv(&["convert", xyz.to_str().unwrap(), "-o", txt.to_str().unwrap(), "--returns", "last"]);
    assert!(String::from_utf8_lossy(&r.stderr).contains("has no return_number"));
}

#[test]
fn streamed_clouds_are_filtered_by_the_decoding_workers_like_resident_ones() {
    let d = tempfile::tempdir().unwrap();
    let file = patch_file(d.path());
    let png = d.path().join("s.png");
    let args = [
        "render",
        file.to_str().unwrap(),
        "--backend",
        "cpu",
        "--size",
        "64x36",
        "-o",
        png.to_str().unwrap(),
        "--classes",
        "5",
        "--returns",
        "first",
    ];
    // A host budget of 0 MB: the cloud streams without a host copy.
    let out = Command::new(env!("CARGO_BIN_EXE_pcv"))
        .args(args)
        .env("PCV_HOST_BUDGET_MB", "0")
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("showing classes 5, first returns: 200 points streamed, 9400 left out"), "{err}");
    let resident = pcv(&args);
    let err = String::from_utf8_lossy(&resident.stderr);
    assert!(err.contains("showing classes 5, first returns: 200 of 9600 points"), "{err}");
    // A clipped streamed cloud starts framed on what it keeps (it once started on nothing: its
    // points are not in host memory to frame).
    let clipped = Command::new(env!("CARGO_BIN_EXE_pcv"))
        .args(&args[..8])
        .args(["--background", "black", "--clip-box", "500025,4000015,0,500034.9,4000024.9,1000"])
        .env("PCV_HOST_BUDGET_MB", "0")
        .env_remove("DISPLAY")
        .output()
        .unwrap();
    assert!(clipped.status.success(), "{}", String::from_utf8_lossy(&clipped.stderr));
    let img = Frame::read_png(&png).unwrap();
    let lit = img.pixels.iter().filter(|&&p| p & 0x00ff_ffff != 0).count();
    assert!(lit * 10 > img.pixels.len(), "the kept block fills the view: {lit} of {} pixels lit", img.pixels.len());
}

#[test]
fn streamed_clouds_are_coloured_by_a_field_like_resident_ones() {
    let d = tempfile::tempdir().unwrap();
    let file = patch_file(d.path());
    let render = |streamed: bool, extra: &[&str]| {
        let png = d.path().join(format!("{streamed}{}.png", extra.len()));
        let mut c = Command::new(env!("CARGO_BIN_EXE_pcv"));
        c.args(["render", file.to_str().unwrap(), "--backend", "cpu", "--size", "96x54", "-o"])
            .arg(&png)
            .args(["--color-by", "gps_time"])
            .args(extra)
            .env_remove("DISPLAY");
        if streamed {
            // A host budget of 0 MB: the cloud streams without a host copy.
            c.env("PCV_HOST_BUDGET_MB", "0");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "streamed {streamed}: {}", String::from_utf8_lossy(&out.stderr));
        Frame::read_png(&png).unwrap()
    };
    // One range for both: every pixel the same (it once failed: "has no gps_time").
    let range = ["--range", "400000000..400003700"];
    let (s, r) = (render(true, &range), render(false, &range));
    let differing = s.pixels.iter().zip(&r.pixels).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "streamed vs resident with one range");
    // The two flight lines an hour apart: two colours at least, not one ramp end.
    let distinct: std::collections::HashSet<u32> = s.pixels.iter().copied().collect();
    assert!(distinct.len() > 10, "{} colours", distinct.len());
    // The default range: the streamed one from a sample of the values, so close to the resident's.
    let (s, r) = (render(true, &[]), render(false, &[]));
    let far = s
        .pixels
        .iter()
        .zip(&r.pixels)
        .filter(|(a, b)| a.to_le_bytes().iter().zip(b.to_le_bytes()).any(|(x, y)| x.abs_diff(y) > 8))
        .count();
    assert!(far * 100 < s.pixels.len(), "{far} of {} pixels far from the resident colour", s.pixels.len());
}

/// A streamed (device-only) cloud offers every field its files hold, and a colour by any of them needs
/// no second stream: its range comes from a sample read when it is asked for ([`device::sample_field`]),
/// here every value (the file is small), so each point's colour is the resident cloud's.
#[test]
fn a_streamed_cloud_is_coloured_by_each_of_its_fields_like_a_resident_one() {
    use pcv_io::device;
    let d = tempfile::tempdir().unwrap();
    let files = vec![patch_file(d.path())];
    let cap = device::Capacity { points: 1 << 20, bytes_per_point: 40, free_bytes: 40 << 20, device: "a test".into() };
    let plan = device::plan(&files, &pcv_io::load::LoadOptions::quiet(), &cap, None).unwrap();
    let mut cloud = device::cloud(plan);
    let df = cloud.files().cloned().unwrap();
    let stream = || {
        let mut got = Vec::new();
        device::stream_files(&df, &mut |p, _| {
            got.extend_from_slice(p);
            Ok(())
        })
        .unwrap();
        got
    };
    let host = load(&files[0]);
    for (k, mode) in [ColorMode::GpsTime, ColorMode::ReturnNumber, ColorMode::ScanAngle].into_iter().enumerate() {
        // The first before any stream (the command line's --color-by), the others as the window asks.
        device::set_color(&mut cloud, mode, &FieldLook::default()).unwrap();
        let got = stream();
        if k == 0 {
            assert_eq!(device::finish(&mut cloud, false), None);
            let modes = pcv_io::attributes::available_modes(&cloud);
            for m in [ColorMode::ReturnNumber, ColorMode::NumberOfReturns, ColorMode::PointSourceId, ColorMode::Nir] {
                assert_eq!(modes.contains(&m), m != ColorMode::Nir, "{m} in {modes:?}");
            }
        }
        let mut resident = host.clone();
        recolor_with(&mut resident, mode, &FieldLook::default()).unwrap();
        assert_eq!(got.len(), resident.points.len());
        let differ = got.iter().zip(resident.points.iter()).filter(|(a, b)| a.rgba != b.rgba).count();
        assert_eq!(differ, 0, "{mode}: streamed colours vs resident");
        let spec = cloud.attributes.as_deref().and_then(|a| a.field_spec);
        assert!(
            matches!(spec, Some(pcv_io::attributes::ColorSpec::Field { field, .. }) if Some(field) == mode.field())
        );
    }
    // A field no file has: refused, naming it.
    let e = device::set_color(&mut cloud, ColorMode::Nir, &FieldLook::default()).unwrap_err();
    assert!(e.contains("has no nir"), "{e}");
}

/// Level of detail (COPC): the scene offers every field of its file, its loading workers colour each
/// node's points by any of them (each point as the resident cloud colours it, given one range) and
/// filter by returns and value ranges (a complete view draws exactly the host filter's points).
#[test]
fn copc_nodes_are_coloured_and_filtered_by_any_field_like_resident_clouds() {
    use pcv_io::attributes::FieldSet;
    use pcv_lod::{LodOptions, LodScene};
    let d = tempfile::tempdir().unwrap();
    let las = patch_file(d.path());
    let copc = d.path().join("patch.copc.laz");
    let none = PointFilter::default();
    pcv_io::convert::convert_filtered(std::slice::from_ref(&las), &copc, &pcv_io::load::LoadOptions::quiet(), &none)
        .unwrap();
    let src = pcv_io::formats::copc::open(copc.to_str().unwrap()).unwrap();
    let mut lod = LodScene::open(vec![src.clone()], LodOptions::with_budget(1_000_000)).unwrap();
    let modes = lod.available_modes();
    for m in [ColorMode::GpsTime, ColorMode::ReturnNumber, ColorMode::ScanAngle, ColorMode::Classification] {
        assert!(modes.contains(&m), "{m} in {modes:?}");
    }
    assert!(lod.set_color_mode(ColorMode::Nir, &FieldLook::default()).unwrap_err().contains("has no nir"));
    // Each point's colour, keyed by its place on the patch's 0.5 m grid (file coordinates).
    let key = |o: DVec3, p: &Point| {
        let f = o + glam::Vec3::from_array(p.pos).as_dvec3();
        ((f.x * 100.0).round() as i64, (f.y * 100.0).round() as i64)
    };
    let host = load(&las);
    for (mode, look) in [
        (ColorMode::GpsTime, FieldLook { range: Some((400_000_000.0, 400_003_700.0)), ..Default::default() }),
        (ColorMode::ReturnNumber, FieldLook::default()),
        (ColorMode::Classification, FieldLook::default()),
    ] {
        let mut resident = host.clone();
        recolor_with(&mut resident, mode, &look).unwrap();
        let want: std::collections::HashMap<(i64, i64), [u8; 4]> =
            resident.points.iter().map(|p| (key(resident.origin, p), p.rgba)).collect();
        assert!(lod.set_color_mode(mode, &look).unwrap(), "{mode}: a new colour");
        let spec = lod.color();
        let mut fields = FieldSet::NONE;
        if let Some(f) = mode.field() {
            fields = fields.with(f);
        }
        let mut seen = 0;
        for node in &src.octree().nodes {
            let mut np = src.read_node(node, lod.origin(), fields).unwrap();
            pcv_lod::loader::color_node(&mut np, &spec, src.has_rgb());
            for p in &np.points {
                assert_eq!(Some(&p.rgba), want.get(&key(lod.origin(), p)), "{mode}: a node's point");
                seen += 1;
            }
        }
        assert_eq!(seen, host.len(), "{mode}: every point in one node");
        // The placeholder the window shows carries the mode and (for a field) the ramp's range.
        let attrs = lod.placeholder_cloud().attributes.unwrap();
        assert_eq!(attrs.mode, mode);
        assert_eq!(attrs.field_spec.is_some(), mode.field().is_some());
    }
    // First returns and a GPS-time window: the complete view draws what the host filter keeps.
    let mut r = CpuRasterizer::new();
    lod.attach(&mut r).unwrap();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = FrameParams::of_camera(&cam, 160, 90).with_mode(RenderMode::Culled);
    let f: PointFilter = PointFilter {
        returns: Returns::First,
        ranges: vec![filter::ValueRange::parse("gps_time:400000000..400003000").unwrap()],
        ..Default::default()
    };
    lod.set_filter(&f).unwrap();
    let mut drawn = 0;
    for _ in 0..2000 {
        let st = lod.update(&mut r, &frame, cam.pose.eye).unwrap();
        if st.complete && st.loading == 0 && st.in_transit == 0 {
            drawn = st.drawn_points;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let (kept, _) = filter::shown(&host, &f);
    assert!(!kept.is_empty() && kept.len() < host.len());
    assert_eq!(drawn, kept.len(), "drawn vs the host filter's points");
}

/// A returns filter given on the command line: files are read with both return fields, whichever the
/// choice tests, so the GPU's filter can make each point's return code. Files above 30M points keep only
/// the fields asked for; with one return field unread the codes could not be made and `--returns first`
/// on a 100M-point LAS was filtered on the host (seen on the GPU machine). Read here as such a file is.
#[test]
fn a_returns_filter_reads_both_return_fields_for_the_gpus_return_codes() {
    use pcv_io::formats::FieldRequest;
    use pcv_render::filter::{column, ColumnData, FilterColumn};
    let d = tempfile::tempdir().unwrap();
    let las = patch_file(d.path());
    for returns in [Returns::First, Returns::Last, Returns::Only, Returns::Multiple] {
        let filter = PointFilter { returns, ..Default::default() };
        let open = pcv::session::OpenOptions { filter: filter.clone(), ..Default::default() };
        let mut opts = pcv_io::load::LoadOptions::quiet();
        // As a file above FieldRequest's threshold is read: only the fields asked for.
        opts.fields = FieldRequest { fields: open.wanted_fields(), all_up_to_points: 0 };
        let cloud = pcv_io::load::load_files_with(std::slice::from_ref(&las), &opts).unwrap();
        let whole = 0..cloud.points.len();
        let Some(ColumnData::Codes(codes)) = column(&cloud, FilterColumn::Returns, std::slice::from_ref(&whole)) else {
            panic!("{returns}: no return codes for the GPU");
        };
        // Each code passes the GPU's mask exactly when the host keeps the point.
        let u = pcv_render::filter::for_cloud(&filter, &cloud).unwrap();
        let (_, kept) = filter::shown(&cloud, &filter);
        let gpu_kept = codes.iter().filter(|&&c| u.hidden_returns[(c >> 5) as usize] & (1 << (c & 31)) == 0).count();
        assert_eq!(gpu_kept as u64, kept.points, "{returns}");
        assert!(kept.points > 0 && kept.points < cloud.len(), "{returns}: a real filter");
        assert!(pcv::session::raster_filter_fits(&cloud, &filter), "{returns}");
    }
}
