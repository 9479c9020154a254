//! The loaders: every format and variant written here (tests/samples), loaded back and checked exactly —
//! counts, positions, bounds, colors, intensity, classification — plus merging, precision, bad input,
//! `pcv info` and `pcv convert`.
mod samples;

use pcv_io::attributes::{class_color, ramp_color, recolor, unit, ColorMode};
use pcv_io::load::{load_files_with, LoadError, LoadOptions};
use pcv_io::PointCloud;
use samples::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const UTM: [f64; 3] = [512_345.0, 5_401_234.0, 250.0];

fn opts() -> LoadOptions {
    LoadOptions::quiet()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn load_one(name: &str, bytes: &[u8]) -> PointCloud {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    load_files_with(&[p], &opts()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn load_err(name: &str, bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    match load_files_with(&[p], &opts()) {
        Ok(c) => panic!("{name}: loaded {} points, expected an error", c.points.len()),
        Err(e) => e.to_string(),
    }
}

#[derive(Clone, Copy)]
struct Expect {
    rgb: bool,
    intensity: bool,
    class: bool,
    /// Largest allowed distance between a loaded position (origin + local) and the expected one.
    tol: f64,
}

const ALL: Expect = Expect { rgb: true, intensity: true, class: true, tol: 1e-5 };

fn check(name: &str, c: &PointCloud, pts: &[Pt], e: Expect) {
    assert_eq!(c.points.len(), pts.len(), "{name}: count");
    let a = c.attributes.as_ref().expect("attributes");
    for (i, (p, q)) in c.points.iter().zip(pts).enumerate() {
        let s = c.to_source(glam::Vec3::from_array(p.pos));
        for k in 0..3 {
            assert!((s[k] - q.xyz[k]).abs() <= e.tol, "{name}: point {i} axis {k}: {} vs {}", s[k], q.xyz[k]);
        }
        if e.rgb {
            assert_eq!(p.rgba, [q.rgb[0], q.rgb[1], q.rgb[2], 255], "{name}: color of point {i}");
        } else {
            assert_eq!(
                p.rgba,
                ramp_color(unit(p.pos[2], c.bounds.min.z, c.bounds.max.z)),
                "{name}: elevation color of point {i}"
            );
        }
    }
    assert_eq!(a.has_rgb, e.rgb, "{name}: has_rgb");
    if e.intensity {
        let v = a.intensity.as_ref().unwrap_or_else(|| panic!("{name}: no intensity"));
        assert_eq!(v, &pts.iter().map(|p| p.intensity as f32).collect::<Vec<_>>(), "{name}: intensity");
    } else {
        assert!(a.intensity.is_none(), "{name}: unexpected intensity");
    }
    if e.class {
        let v = a.classification.as_ref().unwrap_or_else(|| panic!("{name}: no classification"));
        assert_eq!(v, &pts.iter().map(|p| p.class).collect::<Vec<_>>(), "{name}: classes");
    }
    // Bounds: local bounds, moved back by the origin, hold the expected ones.
    let (lo, hi) = bounds(pts);
    let (blo, bhi) = (c.to_source(c.bounds.min), c.to_source(c.bounds.max));
    for k in 0..3 {
        assert!((blo[k] - lo[k]).abs() <= e.tol && (bhi[k] - hi[k]).abs() <= e.tol, "{name}: bounds axis {k}");
    }
}

/// `pcv info`'s exact f64 bounds of a file.
fn info_bounds(name: &str, bytes: &[u8]) -> ([f64; 3], [f64; 3]) {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), name, bytes);
    let r = pcv_io::info::file_report(&p).unwrap();
    let b = r.bounds.unwrap();
    (b.min, b.max)
}

#[test]
fn ply_every_encoding_type_and_spelling() {
    let pts = points(300, [0.0; 3]);
    for enc in [PlyEnc::Ascii, PlyEnc::Le, PlyEnc::Be] {
        for xyz_t in ["float", "double"] {
            for (color_t, names) in
                [("uchar", ["red", "green", "blue"]), ("ushort", ["r", "g", "b"]), ("float", ["red", "green", "blue"])]
            {
                for (inten_name, inten_t) in [("intensity", "ushort"), ("scalar_intensity", "float")] {
                    let props = [
                        ("x", xyz_t),
                        ("nx", "float"),
                        ("y", xyz_t),
                        ("z", xyz_t),
                        (names[0], color_t),
                        (names[1], color_t),
                        (names[2], color_t),
                        ("alpha", "uchar"),
                        (inten_name, inten_t),
                        ("classification", "uchar"),
                    ];
                    let rows: Vec<Vec<f64>> = pts
                        .iter()
                        .map(|p| {
                            vec![
                                p.xyz[0],
                                0.5,
                                p.xyz[1],
                                p.xyz[2],
                                color_as(color_t, p.rgb[0]),
                                color_as(color_t, p.rgb[1]),
                                color_as(color_t, p.rgb[2]),
                                255.0,
                                p.intensity as f64,
                                p.class as f64,
                            ]
                        })
                        .collect();
                    for faces_first in [false, true] {
                        let bytes = ply(enc, &props, &rows, faces_first, 4);
                        let name = format!("{enc:?}-{xyz_t}-{color_t}-{inten_name}-{faces_first}");
                        let c = load_one("a.ply", &bytes);
                        check(&name, &c, &pts, ALL);
                        assert_eq!(info_bounds("a.ply", &bytes), bounds(&pts), "{name}");
                    }
                }
            }
        }
    }
}

#[test]
fn ply_without_color_gets_the_elevation_ramp_and_utm_keeps_millimetres() {
    let pts = points(200, UTM);
    let rows: Vec<Vec<f64>> = pts.iter().map(|p| p.xyz.to_vec()).collect();
    let bytes = ply(PlyEnc::Le, &[("x", "double"), ("y", "double"), ("z", "double")], &rows, false, 0);
    let c = load_one("utm.ply", &bytes);
    check("utm", &c, &pts, Expect { rgb: false, intensity: false, class: false, tol: 1e-5 });
    // Recentred: the local positions are small, the origin is the center of the bounds.
    let (lo, hi) = bounds(&pts);
    let center = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, (lo[2] + hi[2]) / 2.0];
    assert!((c.origin - glam::DVec3::from_array(center)).length() < 0.05 * 30.0, "origin {} vs {center:?}", c.origin);
    assert!(c.points.iter().all(|p| p.pos.iter().all(|v| v.abs() < 40.0)));
}

fn las_rgb16(c: u8) -> u16 {
    c as u16 * 257
}

#[test]
fn las_and_laz_every_version_and_point_format() {
    let pts = points(500, UTM);
    for minor in 0..=4u8 {
        for format in 0..=10u8 {
            let max_format = [1, 1, 3, 5, 10][minor as usize];
            if format > max_format {
                continue;
            }
            for laz in [false, true] {
                let bytes = las(&pts, minor, format, laz, UTM, las_rgb16);
                let name = format!("LAS 1.{minor} format {format} laz {laz}");
                let has_rgb = matches!(format, 2 | 3 | 5 | 7 | 8 | 10);
                let c = load_one(if laz { "a.laz" } else { "a.las" }, &bytes);
                check(&name, &c, &pts, Expect { rgb: has_rgb, intensity: true, class: true, tol: 1e-5 });
                let (lo, hi) = info_bounds("a.las", &bytes);
                let (elo, ehi) = bounds(&pts);
                for k in 0..3 {
                    assert!((lo[k] - elo[k]).abs() < 1e-9 && (hi[k] - ehi[k]).abs() < 1e-9, "{name}: info bounds");
                }
            }
        }
    }
}

#[test]
fn copc_like_laz_with_variable_chunks_reads_as_plain_laz() {
    let pts = points(700, UTM);
    let bytes = copc_like(&pts, UTM, &[100, 250, 1, 349]);
    let c = load_one("a.copc.laz", &bytes);
    check("copc", &c, &pts, ALL);
    let dir = tempfile::tempdir().unwrap();
    let r = pcv_io::info::file_report(&write(dir.path(), "a.copc.laz", &bytes)).unwrap();
    assert!(r.info.variant.contains("COPC"), "{}", r.info.variant);
    // Its COPC info VLR is zeros: not readable as COPC, so `pcv info` reads it as plain LAZ and says why.
    assert!(
        r.info.notes.iter().any(|n| n.contains("not readable as COPC") && n.contains("half size")),
        "{:?}",
        r.info.notes
    );
}

#[test]
fn las_extra_bytes_are_skipped() {
    let pts = points(300, UTM);
    for laz in [false, true] {
        let mut b = las::Builder::from((1, 4));
        let mut f = las::point::Format::new(3).unwrap();
        f.extra_bytes = 5;
        f.is_compressed = laz;
        b.point_format = f;
        let t = |o: f64| las::Transform { scale: 0.001, offset: o };
        b.transforms = las::Vector { x: t(UTM[0]), y: t(UTM[1]), z: t(UTM[2]) };
        let mut w = las::Writer::new(std::io::Cursor::new(Vec::new()), b.into_header().unwrap()).unwrap();
        for p in &pts {
            w.write_point(las::Point {
                x: p.xyz[0],
                y: p.xyz[1],
                z: p.xyz[2],
                intensity: p.intensity,
                classification: las::point::Classification::new(p.class).unwrap(),
                gps_time: Some(2.0),
                color: Some(las::Color {
                    red: las_rgb16(p.rgb[0]),
                    green: las_rgb16(p.rgb[1]),
                    blue: las_rgb16(p.rgb[2]),
                }),
                extra_bytes: vec![1, 2, 3, 4, 5],
                ..Default::default()
            })
            .unwrap();
        }
        w.close().unwrap();
        let bytes = w.into_inner().unwrap().into_inner();
        let c = load_one(if laz { "x.laz" } else { "x.las" }, &bytes);
        check("extra bytes", &c, &pts, ALL);
    }
}

/// Points whose coordinate overflows to infinity are dropped, in a LAZ of several chunks as in the LAS
/// it came from: each LAZ chunk is placed at its offset by the worker that decoded it, and the gaps the
/// dropped points leave in every chunk are closed, keeping the order.
#[test]
fn dropped_points_leave_no_gaps_in_multi_chunk_laz() {
    // 120 000 points: three chunks of the `las` crate's 50 000. Every 7th point's x is 2 000 km away
    // (X = 2·10^9 at the 1 mm scale); the others sit at x = the offset exactly (X = 0). The x scale is
    // then set to 1e300, so the far ones overflow to infinity and the rest stay at the offset.
    let mut pts = points(120_000, UTM);
    for (i, p) in pts.iter_mut().enumerate() {
        p.xyz[0] = if i % 7 == 3 { UTM[0] + 2.0e6 } else { UTM[0] };
    }
    let kept: Vec<Pt> = pts.iter().enumerate().filter(|(i, _)| i % 7 != 3).map(|(_, p)| *p).collect();
    for laz in [false, true] {
        let mut bytes = las(&pts, 2, 3, laz, UTM, las_rgb16);
        bytes[131..139].copy_from_slice(&1e300f64.to_le_bytes());
        let name = if laz { "inf.laz" } else { "inf.las" };
        let c = load_one(name, &bytes);
        check(name, &c, &kept, ALL);
    }
}

#[test]
fn las_with_8_bit_colors_in_16_bit_fields_is_detected() {
    let pts = points(1000, UTM);
    for laz in [false, true] {
        let bytes = las(&pts, 2, 3, laz, UTM, |c| c as u16);
        let c = load_one("eight.las", &bytes);
        check("8-bit", &c, &pts, ALL);
        let dir = tempfile::tempdir().unwrap();
        let r = pcv_io::info::file_report(&write(dir.path(), "e.las", &bytes)).unwrap();
        assert!(r.info.attributes.iter().any(|a| a.contains("8-bit")), "{:?}", r.info.attributes);
    }
}

#[test]
fn pcd_every_data_kind_and_rgb_packing() {
    let pts = points(400, [0.0; 3]);
    for data in [PcdData::Ascii, PcdData::Binary, PcdData::Compressed] {
        for rgb_float in [true, false] {
            let bytes = pcd(&pts, data, rgb_float, 3);
            let name = format!("PCD {data:?} rgb_float {rgb_float}");
            let c = load_one("a.pcd", &bytes);
            check(&name, &c, &pts, Expect { class: false, ..ALL });
            let dir = tempfile::tempdir().unwrap();
            let r = pcv_io::info::file_report(&write(dir.path(), "a.pcd", &bytes)).unwrap();
            assert_eq!((r.points, r.dropped), (400, 3), "{name}");
            assert_eq!(r.bounds.unwrap().min, bounds(&pts).0, "{name}");
        }
    }
}

#[test]
fn e57_scans_spherical_and_posed() {
    let pts = points(120, [0.0; 3]);
    let t = [1000.0, 2000.0, 30.0];
    let (bytes, expected) = e57(&pts, t);
    // The fuzzers' checksum fix-up computes the same CRCs as the writer.
    assert_eq!(pcv_io::formats::e57::with_valid_checksums(&bytes), bytes);
    let c = load_one("a.e57", &bytes);
    assert_eq!(c.points.len(), expected.len());
    let a = c.attributes.as_ref().unwrap();
    assert!(a.has_rgb);
    let inten = a.intensity.as_ref().unwrap();
    let zb = (c.bounds.min.z, c.bounds.max.z);
    for (i, (p, (xyz, rgb, it))) in c.points.iter().zip(&expected).enumerate() {
        let s = c.to_source(glam::Vec3::from_array(p.pos));
        for k in 0..3 {
            assert!((s[k] - xyz[k]).abs() < 1e-4, "point {i} axis {k}: {} vs {}", s[k], xyz[k]);
        }
        match rgb {
            Some(rgb) => assert_eq!(&p.rgba[..3], rgb, "color {i}"),
            None => assert_eq!(p.rgba, ramp_color(unit(p.pos[2], zb.0, zb.1)), "scan without color {i}"),
        }
        assert_eq!(inten[i], *it as f32);
    }
    let dir = tempfile::tempdir().unwrap();
    let r = pcv_io::info::file_report(&write(dir.path(), "a.e57", &bytes)).unwrap();
    assert_eq!(r.info.variant, "E57 2 scans");
    assert_eq!(r.points, 120);
}

#[test]
fn text_formats_orders_headers_and_pts() {
    let pts = points(150, UTM);
    let xyz_only = Expect { rgb: false, intensity: false, class: false, tol: 1e-5 };
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        ("a.xyz", text(&pts, " ", &["x", "y", "z"], None), xyz_only),
        (
            "a.txt",
            text(&pts, "\t", &["x", "y", "z", "r", "g", "b"], Some("# a comment")),
            Expect { intensity: false, class: false, ..ALL },
        ),
        ("a.txt", text(&pts, " ", &["x", "y", "z", "i"], None), Expect { rgb: false, class: false, ..ALL }),
        ("a.xyz", text(&pts, " ", &["x", "y", "z", "r", "g", "b", "i"], None), Expect { class: false, ..ALL }),
        (
            "a.csv",
            text(
                &pts,
                ",",
                &["x", "y", "z", "i", "r", "g", "b", "c"],
                Some("X,Y,Z,Intensity,Red,Green,Blue,Classification"),
            ),
            ALL,
        ),
        (
            "a.csv",
            text(&pts, ";", &["z", "x", "y", "r", "g", "b"], Some("z;x;y;red;green;blue")),
            Expect { intensity: false, class: false, ..ALL },
        ),
        (
            "a.asc",
            text(&pts, " ", &["x", "y", "z", "r", "g", "b", "0.1", "0.2", "0.3"], Some("//X Y Z R G B Nx Ny Nz")),
            Expect { intensity: false, class: false, ..ALL },
        ),
    ];
    for (name, bytes, e) in cases {
        let c = load_one(name, &bytes);
        check(name, &c, &pts, e);
    }
    // PTS: a count line, then x y z intensity r g b; a second scan with its own count line.
    let mut bytes = format!("{}\n", 100).into_bytes();
    bytes.extend(text(&pts[..100], " ", &["x", "y", "z", "i", "r", "g", "b"], None));
    bytes.extend(format!("{}\n", 50).into_bytes());
    bytes.extend(text(&pts[100..], " ", &["x", "y", "z", "i", "r", "g", "b"], None));
    let c = load_one("scan.pts", &bytes);
    check("pts", &c, &pts, Expect { class: false, ..ALL });
}

#[test]
fn raw_records_round_trip_exactly() {
    let cloud = pcv_io::scene::generate(10_000, 3, false);
    let bytes: Vec<u8> = bytemuck::cast_slice(&cloud.points[..]).to_vec();
    let c = load_one("a.bin", &bytes);
    assert_eq!(c.origin, glam::DVec3::ZERO);
    assert_eq!(&c.points[..], &cloud.points[..]);
}

#[test]
fn several_files_merge_around_their_common_center() {
    let a = points(300, UTM);
    let b = points(200, [UTM[0] + 500.0, UTM[1] - 300.0, UTM[2]]);
    let dir = tempfile::tempdir().unwrap();
    let pa = write(dir.path(), "a.laz", &las(&a, 4, 7, true, UTM, las_rgb16));
    let rows: Vec<Vec<f64>> = b.iter().map(|p| p.xyz.to_vec()).collect();
    let pb = write(
        dir.path(),
        "b.ply",
        &ply(PlyEnc::Le, &[("x", "double"), ("y", "double"), ("z", "double")], &rows, false, 0),
    );
    let c = load_files_with(&[pa.clone(), pb.clone()], &opts()).unwrap();
    assert_eq!(c.points.len(), 500);
    let all: Vec<Pt> = a.iter().chain(&b).copied().collect();
    let (lo, hi) = bounds(&all);
    let center = glam::DVec3::new((lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, (lo[2] + hi[2]) / 2.0);
    assert!(
        (c.origin - center).length()
            <= 0.05 * (glam::DVec3::from_array(hi) - glam::DVec3::from_array(lo)).length() / 2.0
    );
    for (i, (p, q)) in c.points.iter().zip(&all).enumerate() {
        let s = c.to_source(glam::Vec3::from_array(p.pos));
        assert!((s - glam::DVec3::from_array(q.xyz)).length() < 1e-4, "point {i}");
    }
    let attrs = c.attributes.as_ref().unwrap();
    assert_eq!(attrs.sources.len(), 2);
    assert_eq!(attrs.sources[1].points, 300..500);
    assert!(attrs.sources[0].has_rgb && !attrs.sources[1].has_rgb);
    // The LAZ points keep their colors, the PLY ones get the elevation ramp; intensity is 0 there.
    assert_eq!(&c.points[0].rgba[..3], &a[0].rgb);
    assert_eq!(c.points[300].rgba, ramp_color(unit(c.points[300].pos[2], c.bounds.min.z, c.bounds.max.z)));
    assert_eq!(attrs.intensity.as_ref().unwrap()[300], 0.0);
    // Points 1 mm apart in UTM stay 1 mm apart.
    let close =
        [Pt { xyz: [UTM[0] + 0.001, UTM[1], UTM[2]], ..a[0] }, Pt { xyz: [UTM[0] + 0.002, UTM[1], UTM[2]], ..a[0] }];
    let pc = write(dir.path(), "c.las", &las(&close, 2, 0, false, UTM, las_rgb16));
    let c = load_files_with(&[pa, pb, pc], &opts()).unwrap();
    let d = c.points[501].pos[0] - c.points[500].pos[0];
    assert!((d - 0.001).abs() < 1e-4, "1 mm became {d}");
}

#[test]
fn wrong_header_bounds_do_not_cost_precision() {
    // Points 1 mm apart in UTM, in a LAS file whose header claims bounds of 0: the origin estimated
    // from the header is 5 million metres off, so the file is decoded again around the real center.
    let mut pts = points(100, UTM);
    pts[1].xyz = [pts[0].xyz[0] + 0.001, pts[0].xyz[1], pts[0].xyz[2]];
    let mut bytes = las(&pts, 2, 3, false, UTM, las_rgb16);
    bytes[179..227].fill(0);
    let c = load_one("liar.las", &bytes);
    check("wrong header bounds", &c, &pts, Expect { tol: 1e-5, ..ALL });
    let d = c.points[1].pos[0] - c.points[0].pos[0];
    assert!((d - 0.001).abs() < 1e-5, "1 mm became {d}");
}

#[test]
fn color_modes_recolor_loaded_points() {
    let pts = points(100, UTM);
    let mut c = load_one("a.las", &las(&pts, 2, 3, false, UTM, las_rgb16));
    recolor(&mut c, ColorMode::Classification).unwrap();
    for (p, q) in c.points.iter().zip(&pts) {
        assert_eq!(p.rgba, class_color(q.class));
    }
    recolor(&mut c, ColorMode::Intensity).unwrap();
    assert!(c.points.iter().all(|p| p.rgba[0] == p.rgba[1] && p.rgba[1] == p.rgba[2]));
    recolor(&mut c, ColorMode::Rgb).unwrap();
    check("back to rgb", &c, &pts, ALL);
    let mut c = load_one("a.xyz", &text(&pts, " ", &["x", "y", "z"], None));
    assert!(recolor(&mut c, ColorMode::Intensity).unwrap_err().to_string().contains("no intensity"));
}

#[test]
fn bad_input_is_a_clear_error_naming_the_file_and_place() {
    let pts = points(50, [0.0; 3]);
    let rows: Vec<Vec<f64>> = pts.iter().map(|p| p.xyz.to_vec()).collect();
    let good = ply(PlyEnc::Le, &[("x", "float"), ("y", "float"), ("z", "float")], &rows, false, 0);
    // Truncated binary PLY.
    let e = load_err("cut.ply", &good[..good.len() - 7]);
    assert!(e.contains("cut.ply") && e.contains("byte ") && e.contains("50 vertices"), "{e}");
    // A header that lies about the count: an error, not a 10^15-point allocation.
    let liar = [&b"ply\nformat binary_little_endian 1.0\nelement vertex 999999999999999\nproperty float x\nproperty float y\nproperty float z\nend_header\n"[..], &[0u8; 600]].concat();
    let e = load_err("liar.ply", &liar);
    assert!(e.contains("liar.ply") && e.contains("999999999999999"), "{e}");
    // Missing property.
    let e = load_err(
        "noz.ply",
        b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nend_header\n1 2\n",
    );
    assert!(e.contains("noz.ply") && e.contains("no 'z'"), "{e}");
    // Bad ascii value: the line is named.
    let e = load_err("bad.ply", b"ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n1 two 3\n");
    assert!(e.contains("bad.ply") && e.contains("line 9") && e.contains("'two'"), "{e}");
    // NaN and infinite coordinates are dropped and counted.
    let c = load_one("nan.xyz", b"1 2 3\nnan 2 3\n4 5 6\n1 inf 2\n");
    assert_eq!(c.points.len(), 2);
    let e = load_err("allnan.xyz", b"nan 2 3\n");
    assert!(e.contains("allnan.xyz") && e.contains("no points") && e.contains("NaN"), "{e}");
    // Empty files and empty clouds.
    let e = load_err("empty.ply", b"");
    assert!(e.contains("empty.ply"), "{e}");
    let e = load_err("zero.ply", b"ply\nformat binary_little_endian 1.0\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n");
    assert!(e.contains("zero.ply") && e.contains("no points"), "{e}");
    // Wrong extension: the content decides.
    let las_bytes = las(&pts, 2, 2, false, [0.0; 3], las_rgb16);
    let c = load_one("actually_las.ply", &las_bytes);
    check("las named .ply", &c, &pts, ALL);
    // Random bytes.
    let noise: Vec<u8> = (0..4099u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    for name in ["r.ply", "r.las", "r.laz", "r.pcd", "r.e57", "r.xyz", "r.bin", "r"] {
        let e = load_err(name, &noise);
        assert!(e.contains(name), "{e}");
    }
    // Truncated LAS, LAZ, PCD, E57.
    let laz_bytes = las(&pts, 4, 7, true, [0.0; 3], las_rgb16);
    for (name, b) in [("t.las", &las_bytes), ("t.laz", &laz_bytes)] {
        for cut in [10, 100, 240, b.len() / 2, b.len() - 3] {
            let e = load_err(name, &b[..cut]);
            assert!(e.contains(name), "{e}");
        }
    }
    let pcd_bytes = pcd(&pts, PcdData::Compressed, true, 0);
    let e = load_err("t.pcd", &pcd_bytes[..pcd_bytes.len() - 5]);
    assert!(e.contains("t.pcd") && e.contains("byte"), "{e}");
    let (e57_bytes, _) = e57(&pts, [0.0; 3]);
    let e = load_err("t.e57", &e57_bytes[..e57_bytes.len() / 2]);
    assert!(e.contains("t.e57"), "{e}");
    // A missing file.
    let e = load_files_with(&[PathBuf::from("/nonexistent/x.ply")], &opts()).unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }) && e.to_string().contains("x.ply"));
}

#[test]
fn fast_paths_over_many_jobs_drop_nan_points_and_close_the_gaps() {
    // 200 000 points (4 jobs of 64 Ki records), every 997th one NaN or infinite, in the fast PLY
    // layouts (x, y, z then r, g, b; and another order), raw records and LAS; each checked exactly.
    let n = 200_000usize;
    let bad = |i: usize| i % 997 == 5;
    let xyz =
        |i: usize| -> [f64; 3] { [(i % 1000) as f64 * 0.25 - 100.0, (i / 1000) as f64 * 0.5, (i % 7) as f64 * 0.125] };
    let rgb = |i: usize| -> [u8; 3] { [(i * 7) as u8, (i * 13) as u8, (i * 29) as u8] };
    let expect: Vec<([f64; 3], [u8; 3])> = (0..n).filter(|&i| !bad(i)).map(|i| (xyz(i), rgb(i))).collect();
    let value = |i: usize, k: usize| {
        if bad(i) {
            if k == 1 {
                f64::NAN
            } else {
                f64::INFINITY
            }
        } else {
            xyz(i)[k]
        }
    };
    for order in [["x", "y", "z", "red", "green", "blue"], ["red", "x", "green", "y", "blue", "z"]] {
        let props: Vec<(&str, &str)> =
            order.iter().map(|&p| (p, if p.len() == 1 { "float" } else { "uchar" })).collect();
        let rows: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                order
                    .iter()
                    .map(|&p| match p {
                        "x" => value(i, 0),
                        "y" => value(i, 1),
                        "z" => value(i, 2),
                        "red" => rgb(i)[0] as f64,
                        "green" => rgb(i)[1] as f64,
                        _ => rgb(i)[2] as f64,
                    })
                    .collect()
            })
            .collect();
        let c = load_one("fast.ply", &ply(PlyEnc::Le, &props, &rows, false, 0));
        assert_eq!(c.points.len(), expect.len(), "{order:?}");
        for (i, (p, (x, col))) in c.points.iter().zip(&expect).enumerate() {
            let s = c.to_source(glam::Vec3::from_array(p.pos));
            assert!((0..3).all(|k| (s[k] - x[k]).abs() < 1e-5), "{order:?}: point {i}: {s} vs {x:?}");
            assert_eq!(&p.rgba[..3], col, "{order:?}: color {i}");
        }
    }
    let raw: Vec<u8> = (0..n)
        .flat_map(|i| {
            let mut r = Vec::with_capacity(16);
            (0..3).for_each(|k| r.extend_from_slice(&(value(i, k) as f32).to_le_bytes()));
            r.extend_from_slice(&[rgb(i)[0], rgb(i)[1], rgb(i)[2], 255]);
            r
        })
        .collect();
    let c = load_one("fast.bin", &raw);
    assert_eq!(c.points.len(), expect.len());
    assert!(c.points.iter().zip(&expect).all(|(p, (x, col))| p.pos == x.map(|v| v as f32) && p.rgba[..3] == col[..]));
    // LAS over several jobs (positions, intensity, classes in order).
    let pts = points(150_000, UTM);
    check("LAS, 3 jobs", &load_one("many.las", &las(&pts, 2, 3, false, UTM, las_rgb16)), &pts, ALL);
}

#[test]
fn colors_that_carry_nothing_fall_back_to_intensity_or_elevation() {
    use pcv_io::attributes::{auto_color, current_mode};
    let pts = points(150_000, UTM);
    let zero = las(&pts, 2, 3, false, UTM, |_| 0);
    let mut c = load_one("zero.las", &zero);
    assert!(c.points.iter().all(|p| p.rgba == [0, 0, 0, 255]));
    let note = auto_color(&mut c).expect("a note");
    assert!(
        note.contains("zero.las")
            && note.contains("0,0,0")
            && note.contains("intensity")
            && note.contains("--color rgb"),
        "{note}"
    );
    assert_eq!(current_mode(&c), ColorMode::Intensity);
    assert_eq!(c.attributes.as_ref().unwrap().color_note.as_deref(), Some(note.as_str()));
    assert!(c.points.iter().any(|p| p.rgba != [0, 0, 0, 255]), "still black");
    // --color rgb: the file's own (zero) colors.
    recolor(&mut c, ColorMode::Rgb).unwrap();
    assert!(c.points.iter().all(|p| p.rgba == [0, 0, 0, 255]));
    // One gray for every point and an intensity that does not vary: elevation.
    let flat: Vec<Pt> = pts.iter().map(|p| Pt { intensity: 7, ..*p }).collect();
    let mut c = load_one("gray.las", &las(&flat, 2, 3, true, UTM, |_| 200 * 257));
    let note = auto_color(&mut c).expect("a note");
    assert!(note.contains("200,200,200") && note.contains("elevation"), "{note}");
    assert_eq!(current_mode(&c), ColorMode::Elevation);
    // Real colors, or one point of another color in the last job of a uniform file: nothing changes.
    let mut c = load_one("real.las", &las(&pts, 2, 3, false, UTM, las_rgb16));
    assert_eq!(auto_color(&mut c), None);
    assert_eq!(current_mode(&c), ColorMode::Rgb);
    let mut one = las(&pts, 2, 3, false, UTM, |_| 0);
    let (off, len) = (u32::from_le_bytes(one[96..100].try_into().unwrap()) as usize, 34);
    let last = off + (pts.len() - 1) * len;
    one[last + 28] = 0xff;
    one[last + 29] = 0xff;
    assert_eq!(auto_color(&mut load_one("one.las", &one)), None);
    // Two uniform files: both named by count; a uniform file with a colored one: kept.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, r) = (
        write(dir.path(), "a.las", &zero),
        write(dir.path(), "b.laz", &las(&pts, 2, 3, true, UTM, |_| 0)),
        write(dir.path(), "r.las", &las(&pts, 2, 3, false, UTM, las_rgb16)),
    );
    let mut c = load_files_with(&[a.clone(), b], &opts()).unwrap();
    assert!(auto_color(&mut c).unwrap().contains("2 files"));
    let mut c = load_files_with(&[a.clone(), r], &opts()).unwrap();
    assert_eq!(auto_color(&mut c), None);
    // The CLI says it on stderr, unless --color rgb asks for the file's colors.
    let png = dir.path().join("z.png");
    let o = pcv(&["render", a.to_str().unwrap(), "--size", "64x36", "--backend", "cpu", "-o", png.to_str().unwrap()]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stderr).contains("shows nothing"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = pcv(&[
        "render",
        a.to_str().unwrap(),
        "--color",
        "rgb",
        "--size",
        "64x36",
        "--backend",
        "cpu",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(o.status.success() && !String::from_utf8_lossy(&o.stderr).contains("shows nothing"));
}

#[test]
fn a_window_can_follow_a_load_through_shared_progress() {
    let dir = tempfile::tempdir().unwrap();
    let pts = points(150_000, UTM);
    let p = write(dir.path(), "a.laz", &las(&pts, 2, 3, true, UTM, las_rgb16));
    let shared = std::sync::Arc::new(pcv_io::progress::LoadProgress::new());
    let c = pcv_io::load::load_files_reporting(std::slice::from_ref(&p), &opts(), shared.clone()).unwrap();
    let s = shared.snapshot();
    assert_eq!((s.points_done, s.points_total, s.fraction, s.finished), (150_000, 150_000, 1.0, true));
    assert!(s.points_per_s > 0.0 && s.text().contains("100%"), "{}", s.text());
    assert_eq!(c.points.len(), 150_000);
}

fn capacity(points: u64) -> pcv_io::device::Capacity {
    pcv_io::device::Capacity { points, bytes_per_point: 40, free_bytes: points * 40, device: "a test device".into() }
}

/// A profile's strip of a streamed cloud: the files' stream again through a filter of its own, kept
/// under a budget by halving — every point while they fit, else an even subsample across the whole
/// stream (both files), never more than asked.
#[test]
fn a_strip_gathered_from_streamed_files_is_filtered_and_evenly_thinned() {
    use pcv_io::device;
    use pcv_io::filter::{ClipBox, Keep, PointFilter};
    let dir = tempfile::tempdir().unwrap();
    let a = points(150_000, UTM);
    let b = points(70_000, [UTM[0] + 300.0, UTM[1], UTM[2]]);
    let pa = write(dir.path(), "a.las", &las(&a, 2, 3, false, UTM, las_rgb16));
    let pb = write(dir.path(), "b.laz", &las(&b, 4, 6, true, UTM, las_rgb16));
    let files = vec![pa, pb];
    let plan = device::plan(&files, &opts(), &capacity(1_000_000), None).unwrap();
    let cloud = device::cloud(plan);
    let d = cloud.files().cloned().unwrap();
    let mut all = Vec::new();
    device::stream_files(&d, &mut |p, _| {
        all.extend_from_slice(p);
        Ok(())
    })
    .unwrap();
    // A box across both files (file coordinates), as a strip is.
    let (lo, hi) = (cloud.bounds.min, cloud.bounds.max);
    let mut strip = PointFilter::default();
    let y0 = cloud.origin.y + lo.y as f64 + 0.1 * (hi.y - lo.y) as f64;
    let y1 = cloud.origin.y + hi.y as f64 - 0.3 * (hi.y - lo.y) as f64;
    strip.boxes.push(ClipBox::from_min_max(
        glam::DVec3::new(-1e9, y0, -1e9),
        glam::DVec3::new(1e9, y1, 1e9),
        Keep::Inside,
    ));
    let passes = |p: &pcv_io::Point| {
        let pos = cloud.origin + glam::DVec3::from(p.pos.map(f64::from));
        strip.passes(&pcv_io::filter::PointValues { class: 0, intensity: f64::NAN, field: &|_| f64::NAN, pos })
    };
    let inside: Vec<_> = all.iter().filter(|p| passes(p)).copied().collect();
    assert!(inside.len() > 100_000 && inside.len() < all.len(), "{} of {}", inside.len(), all.len());
    let stop = std::sync::atomic::AtomicBool::new(false);
    let s = d.with_filter(strip.clone());
    // Room for all: every point inside, in order.
    let (got, thinned) = device::gather(&s, 1_000_000, &stop).unwrap();
    assert!(!thinned);
    assert_eq!(got, inside);
    // Room for a tenth: at most that many, every 16th point of those inside (halved 4 times), so both
    // ends of the strip are there.
    let (got, thinned) = device::gather(&s, inside.len() as u64 / 10, &stop).unwrap();
    assert!(thinned && got.len() <= inside.len() / 10 && got.len() * 2 > inside.len() / 10, "{}", got.len());
    let step = inside.len().div_ceil(got.len()).next_power_of_two();
    let want: Vec<_> = inside.iter().step_by(step).copied().collect();
    assert_eq!(got, want, "every {step}th point inside");
    // The main cloud's own filter is untouched by the strip's.
    assert!(d.filter().is_empty());
    // Stopped: the stream ends early with an error, not a strip.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(device::gather(&s, 1000, &stop).is_err());
}

#[test]
fn device_only_clouds_stream_the_same_points_colored_and_subsampled() {
    use pcv_io::device::{self, ColorSpec};
    let dir = tempfile::tempdir().unwrap();
    let a = points(150_000, UTM);
    let b = points(70_000, [UTM[0] + 300.0, UTM[1], UTM[2]]);
    let pa = write(dir.path(), "a.las", &las(&a, 2, 3, false, UTM, las_rgb16));
    let pb = write(dir.path(), "b.laz", &las(&b, 4, 6, true, UTM, las_rgb16));
    let files = vec![pa.clone(), pb.clone()];
    let host = load_files_with(&files, &opts()).unwrap();
    // Streamed: the same points as the host load, in the same order, relative to the same origin.
    let plan = device::plan(&files, &opts(), &capacity(1_000_000), None).unwrap();
    assert_eq!((plan.declared, plan.planned_points()), (220_000, 220_000));
    let mut cloud = device::cloud(plan);
    assert!(cloud.is_device_only() && cloud.is_lazy_scene() && cloud.points.is_empty());
    let d = cloud.files().cloned().unwrap();
    let mut got = Vec::new();
    let sent = device::stream_files(&d, &mut |p, codes| {
        assert!(codes.is_empty(), "class codes only when asked for");
        got.extend_from_slice(p);
        Ok(())
    })
    .unwrap();
    assert_eq!(sent, 220_000);
    // Asked for, each point's class code comes with it (the GPU's class filter reads them).
    d.carry_classes.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut codes = Vec::new();
    device::stream_files(&d, &mut |p, c| {
        assert_eq!(p.len(), c.len());
        codes.extend_from_slice(c);
        Ok(())
    })
    .unwrap();
    d.carry_classes.store(false, std::sync::atomic::Ordering::Relaxed);
    let host_codes = host.attributes.as_ref().and_then(|a| a.classification.clone()).unwrap();
    assert_eq!(codes, host_codes, "the stream's class codes are the host load's");
    assert!(a.iter().chain(&b).zip(&codes).all(|(q, &c)| q.class == c));
    assert_eq!(cloud.origin, host.origin);
    // b has no colors: the elevation ramp over the planned z range (the host load uses the exact one).
    for (i, (g, h)) in got.iter().zip(host.points.iter()).enumerate() {
        assert_eq!(g.pos, h.pos, "point {i}");
        if i < 150_000 {
            assert_eq!(g.rgba, h.rgba, "color {i}");
        }
    }
    assert_eq!(device::finish(&mut cloud, true), None);
    assert_eq!(cloud.len(), 220_000);
    assert_eq!(cloud.bounds, host.bounds, "exact bounds after the first stream");
    let sample = device::sample(&d);
    // Every second point here (220 000 / 100 000 rounds down to 2): 110 000, all of them streamed ones.
    assert_eq!(sample.len(), 110_000);
    let streamed: std::collections::HashSet<[u32; 3]> = got.iter().map(|g| g.pos.map(f32::to_bits)).collect();
    assert!(sample.iter().all(|p| streamed.contains(&p.pos.map(f32::to_bits))));
    let (ds, hs) = (pcv_io::spacing::estimate(&cloud), pcv_io::spacing::estimate(&host));
    assert!(ds > 0.0 && (ds / hs - 1.0).abs() < 0.2, "spacing from the sample {ds} vs the host points {hs}");
    let attrs = cloud.attributes.as_ref().unwrap();
    assert_eq!(attrs.sources.len(), 2);
    assert_eq!((attrs.sources[0].points.clone(), attrs.sources[1].points.clone()), (0..150_000, 150_000..220_000));
    assert!(attrs.sources[0].has_rgb && !attrs.sources[1].has_rgb);
    // Another color mode streams again, colored from each slot's columns.
    device::set_color(&mut cloud, ColorMode::Classification, &Default::default()).unwrap();
    let again = cloud.host_points(false);
    assert!(again.iter().zip(a.iter().chain(&b)).all(|(p, q)| p.rgba == class_color(q.class)));
    assert!(device::set_color(&mut cloud, ColorMode::Intensity, &Default::default()).is_ok());
    // A subsample of 10 000: exactly that many, spread over both files, in order.
    let plan = device::plan(&files, &opts(), &capacity(1_000_000), Some(10_000)).unwrap();
    let cloud = device::cloud(plan);
    let sub = cloud.host_points(false);
    assert_eq!(sub.len(), 10_000);
    // The points left out were read: the progress counts all of them, as the load's rate does.
    let p = cloud.files().unwrap().progress.snapshot();
    assert_eq!((p.points_done, p.points_total), (220_000, 220_000));
    let from_b =
        sub.iter().filter(|p| p.rgba[3] == 255 && host.points[150_000..].iter().any(|h| h.pos == p.pos)).count();
    assert!((3_000..=3_400).contains(&from_b), "{from_b} of the subsample from b (70 000 of 220 000 points)");
    let mut keep = host.clone();
    pcv_io::load::keep_evenly(&mut keep, 10_000);
    assert_eq!(
        keep.points.iter().map(|p| p.pos).collect::<Vec<_>>(),
        sub.iter().map(|p| p.pos).collect::<Vec<_>>(),
        "host and device subsamples agree"
    );
    let spans = &keep.attributes.as_ref().unwrap().sources;
    assert_eq!(spans[0].points.end, spans[1].points.start);
    assert_eq!(spans[1].points.end, 10_000);
    assert_eq!(keep.attributes.as_ref().unwrap().intensity.as_ref().unwrap().len(), 10_000);
    // More points than fit: refused before decoding, saying what fits and how to load it.
    let e = device::plan(&files, &opts(), &capacity(100_000), None).unwrap_err().to_string();
    assert!(
        e.contains("220000 points")
            && e.contains("100000 points fit")
            && e.contains("--max-points 100000")
            && e.contains("a test device"),
        "{e}"
    );
    assert!(device::plan(&files, &opts(), &capacity(100_000), Some(100_000)).is_ok());
    // Colors that carry nothing: the automatic choice, noted, for the next stream.
    let pz = write(dir.path(), "z.las", &las(&a, 2, 3, false, UTM, |_| 0));
    let mut cloud =
        device::cloud(device::plan(std::slice::from_ref(&pz), &opts(), &capacity(1_000_000), None).unwrap());
    let _ = cloud.host_points(false);
    let note = device::finish(&mut cloud, true).expect("a note");
    assert!(note.contains("z.las") && note.contains("intensity"), "{note}");
    assert!(matches!(cloud.files().unwrap().color(), ColorSpec::Intensity { .. }));
    assert!(cloud.host_points(false).iter().any(|p| p.rgba != [0, 0, 0, 255]));
}

#[test]
fn damaged_files_fail_cleanly_naming_the_place() {
    for (target, name, bytes, want) in damaged() {
        let file = match target {
            "las" => format!("{name}.laz"),
            "text" => format!("{name}.xyz"),
            other => format!("{name}.{other}"),
        };
        let e = load_err(&file, &bytes);
        assert!(e.contains(&file) && e.contains(want), "{file}: the error should name '{want}': {e}");
        assert!(e.contains("byte ") || e.contains("line "), "{file}: the error names no place: {e}");
    }
    // The good files they were made from load.
    let pts = points(100, [0.0; 3]);
    let rows: Vec<Vec<f64>> = pts.iter().map(|p| vec![p.xyz[0], p.xyz[1], p.xyz[2]]).collect();
    for enc in [PlyEnc::Le, PlyEnc::Ascii] {
        for faces_first in [false, true] {
            let c =
                load_one("ok.ply", &ply(enc, &[("x", "float"), ("y", "float"), ("z", "float")], &rows, faces_first, 4));
            assert_eq!(c.points.len(), 100);
        }
    }
    // A LAZ count beyond what the fixed-size chunks hold is refused from the chunk table, before any
    // decoding (60000 > 1 chunk of at most 50000 points).
    let laz = las(&pts, 2, 3, true, [0.0; 3], las_rgb16);
    let mut lie = laz.clone();
    lie[107..111].copy_from_slice(&60_000u32.to_le_bytes());
    let e = load_err("lie.laz", &lie);
    assert!(e.contains("byte 107") && e.contains("60000") && e.contains("1 chunks of at most 50000"), "{e}");
}

fn pcv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pcv")).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

#[test]
fn info_reports_format_count_bounds_and_attributes() {
    let pts = points(250, UTM);
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "a.las", &las(&pts, 4, 8, false, UTM, las_rgb16));
    let o = pcv(&["info", p.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in
        ["LAS 1.4, point format 8", "points      250", "intensity", "classification", "rgb (u16)", "nir", "classes"]
    {
        assert!(out.contains(want), "info lacks '{want}':\n{out}");
    }
    let o = pcv(&["info", "--json", p.to_str().unwrap()]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["format"], "LAS");
    assert_eq!(r["points"], 250);
    assert_eq!(r["declared_points"], 250);
    let (lo, hi) = bounds(&pts);
    for k in 0..3 {
        assert!((r["bounds"]["min"][k].as_f64().unwrap() - lo[k]).abs() < 1e-9);
        assert!((r["bounds"]["max"][k].as_f64().unwrap() - hi[k]).abs() < 1e-9);
    }
    let classes: u64 = r["classes"].as_array().unwrap().iter().map(|c| c[1].as_u64().unwrap()).sum();
    assert_eq!(classes, 250);
    // A bad file among good ones: reported, exit status 1.
    let bad = write(dir.path(), "bad.ply", b"ply\nnonsense\n");
    let o = pcv(&["info", p.to_str().unwrap(), bad.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.ply"));
}

#[test]
fn convert_round_trips_through_every_output_format() {
    let pts = points(400, UTM);
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "src.las", &las(&pts, 2, 3, false, UTM, las_rgb16));
    for out in ["o.ply", "o.las", "o.laz", "o.xyz", "o.csv"] {
        let dst = dir.path().join(out);
        let o = pcv(&["convert", src.to_str().unwrap(), "-o", dst.to_str().unwrap()]);
        assert!(o.status.success(), "{out}: {}", String::from_utf8_lossy(&o.stderr));
        let c = load_files_with(std::slice::from_ref(&dst), &opts()).unwrap();
        check(out, &c, &pts, Expect { tol: 2e-3, ..ALL });
    }
    // The LAZ that pcv writes reads back with the las crate too.
    let mut r = las::Reader::from_path(dir.path().join("o.laz")).unwrap();
    let data = r.read_all().unwrap();
    let read: Vec<las::Point> = data.points().map(|p| p.unwrap()).collect();
    assert_eq!(read.len(), 400);
    assert!((read[7].x - pts[7].xyz[0]).abs() < 1e-3 && read[7].intensity == pts[7].intensity);
    assert_eq!(read[7].color.unwrap().red >> 8, pts[7].rgb[0] as u16);
    // Raw output keeps local positions.
    let dst = dir.path().join("o.bin");
    assert!(pcv(&["convert", src.to_str().unwrap(), "-o", dst.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::metadata(&dst).unwrap().len(), 400 * 16);
    let o = pcv(&["convert", src.to_str().unwrap(), "-o", dir.path().join("o.doc").to_str().unwrap()]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("cannot write format 'doc'"));
}

#[test]
fn render_with_color_modes() {
    let pts = points(2000, UTM);
    let dir = tempfile::tempdir().unwrap();
    let src = write(dir.path(), "a.las", &las(&pts, 2, 3, false, UTM, las_rgb16));
    for mode in ["rgb", "intensity", "elevation", "classification"] {
        let png = dir.path().join(format!("{mode}.png"));
        let o = pcv(&[
            "render",
            src.to_str().unwrap(),
            "--color",
            mode,
            "--size",
            "64x36",
            "--backend",
            "cpu",
            "-o",
            png.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{mode}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let xyz = write(dir.path(), "a.xyz", &text(&pts, " ", &["x", "y", "z"], None));
    let o = pcv(&[
        "render",
        xyz.to_str().unwrap(),
        "--color",
        "intensity",
        "--backend",
        "cpu",
        "-o",
        dir.path().join("x.png").to_str().unwrap(),
    ]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("no intensity"));
}
