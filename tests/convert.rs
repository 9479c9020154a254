//! `pcv convert` loses nothing: one test per guarantee, on files the tests write with the `las` crate
//! (an independent LAS/LAZ writer and reader) or byte by byte, checked field by field against the
//! source — every point format 0–10 in LAS and LAZ both ways, UTM offsets at 0.01, 0.001 and 1.16e-6
//! scales, CRS VLRs and EVLRs, extra bytes, 16-bit colors, the WKT bit, merges, text and PLY at the
//! source's precision, refusing to overwrite an input, leaving a previous output alone on failure, and
//! non-finite coordinates.
mod samples;

use las::point::{Classification, Format, ScanDirection};
use las::{Builder, Color, Point, Reader, Transform, Vector, Vlr, Writer};
use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::Command;

const UTM: [f64; 3] = [512_345.0, 5_401_234.0, 250.0];

/// The LAS version each point format needs.
fn version_for(format: u8) -> (u8, u8) {
    match format {
        0..=3 => (1, 2),
        4 | 5 => (1, 3),
        _ => (1, 4),
    }
}

/// `n` points of `format` with every field varying: returns, flags, scan angle, user data, point
/// source, GPS time, 16-bit colors that are not 8-bit ones, NIR, wave packets and `extra` extra bytes.
fn full_points(n: usize, f: &Format, scale: f64) -> Vec<Point> {
    (0..n)
        .map(|i| {
            let extended = f.is_extended;
            let nr = 1 + (i % if extended { 15 } else { 5 }) as u8;
            let class = if extended { (i * 7 % 256) as u8 } else { (i * 7 % 32) as u8 };
            let class = if class == 12 { 13 } else { class };
            let mut p = Point {
                x: UTM[0] + (i as f64 * 37.0 % 9001.0) * scale * 113.0,
                y: UTM[1] - (i as f64 * 53.0 % 7001.0) * scale * 97.0,
                z: UTM[2] + (i as f64 * 11.0 % 3001.0) * scale * 7.0,
                intensity: (i * 7919 % 65536) as u16,
                return_number: 1 + (i as u8 % nr),
                number_of_returns: nr,
                scan_direction: if i % 2 == 0 { ScanDirection::LeftToRight } else { ScanDirection::RightToLeft },
                is_edge_of_flight_line: i % 3 == 0,
                classification: Classification::new(class).unwrap(),
                is_synthetic: i % 5 == 0,
                is_key_point: i % 7 == 0,
                is_withheld: i % 11 == 0,
                is_overlap: extended && i % 13 == 0,
                scanner_channel: if extended { (i % 4) as u8 } else { 0 },
                scan_angle: if extended { ((i % 3001) as f32 - 1500.0) * 0.006 } else { (i % 181) as f32 - 90.0 },
                user_data: (i * 13) as u8,
                point_source_id: (i * 31 % 65536) as u16,
                ..Default::default()
            };
            if f.has_gps_time {
                p.gps_time = Some(1.0e8 + i as f64 * 0.001_25);
            }
            if f.has_color {
                p.color = Some(Color {
                    red: (i * 101 % 65536) as u16,
                    green: (i * 257 + 3) as u16,
                    blue: (65535 - i * 7) as u16,
                });
            }
            if f.has_nir {
                p.nir = Some((i * 13 + 1) as u16);
            }
            if f.has_waveform {
                p.waveform = Some(las::raw::point::Waveform {
                    wave_packet_descriptor_index: 1 + (i % 3) as u8,
                    byte_offset_to_waveform_data: i as u64 * 100,
                    waveform_packet_size_in_bytes: 64,
                    return_point_waveform_location: 0.5 + i as f32,
                    x_t: 0.25,
                    y_t: -0.125,
                    z_t: 1.5 + i as f32,
                });
            }
            p.extra_bytes = (0..f.extra_bytes).map(|k| (i as u8).wrapping_mul(3).wrapping_add(k as u8)).collect();
            p
        })
        .collect()
}

/// A CRS VLR: WKT for LAS 1.4, GeoTIFF keys before.
fn crs_vlr(wkt: bool) -> Vlr {
    if wkt {
        Vlr {
            user_id: "LASF_Projection".into(),
            record_id: 2112,
            description: "OGC WKT".into(),
            data: b"PROJCS[\"WGS 84 / UTM zone 32N\",GEOGCS[\"WGS 84\"],UNIT[\"metre\",1]]\0".to_vec(),
        }
    } else {
        // GeoKeyDirectoryTag: version 1.1.0, 1 key: ProjectedCSTypeGeoKey (3072) = 32632.
        let keys: [u16; 8] = [1, 1, 0, 1, 3072, 0, 1, 32632];
        Vlr {
            user_id: "LASF_Projection".into(),
            record_id: 34735,
            description: "GeoKeyDirectoryTag".into(),
            data: keys.iter().flat_map(|k| k.to_le_bytes()).collect(),
        }
    }
}

/// A LAS or LAZ file of `points` in `format` with `extra` extra bytes (described by an Extra Bytes
/// VLR), a CRS VLR, a user VLR and, in LAS 1.4, an EVLR.
fn source(format: u8, extra: u16, scale: f64, laz: bool, points: Option<Vec<Point>>) -> (Vec<u8>, Vec<Point>) {
    let mut f = Format::new(format).unwrap();
    f.extra_bytes = extra;
    f.is_compressed = laz;
    let mut b = Builder::from(version_for(format));
    b.point_format = f;
    let t = |o: f64| Transform { scale, offset: o };
    b.transforms = Vector { x: t(UTM[0] - 1000.0), y: t(UTM[1] - 1000.0), z: t(0.0) };
    b.system_identifier = "pcv tests".into();
    b.generating_software = "las crate".into();
    b.file_source_id = 4242;
    b.vlrs.push(crs_vlr(f.is_extended));
    b.vlrs.push(Vlr {
        user_id: "pcv-test".into(),
        record_id: 7,
        description: "a user VLR".into(),
        data: vec![1, 2, 3, 4, 5, 6, 7],
    });
    if extra > 0 {
        // One extra-byte descriptor (LAS 1.4 R15, table 24): an unsigned char array of `extra`... as
        // "undocumented extra bytes" (data type 0, options 0), `extra` bytes long.
        let mut d = vec![0u8; 192];
        d[2] = 0; // data type 0: undocumented, its size in `options`
        d[3] = extra as u8;
        d[4..9].copy_from_slice(b"extra");
        b.vlrs.push(Vlr {
            user_id: "LASF_Spec".into(),
            record_id: 4,
            description: "Extra Bytes Record".into(),
            data: d,
        });
    }
    if version_for(format).1 >= 4 {
        b.evlrs.push(Vlr {
            user_id: "pcv-test".into(),
            record_id: 99,
            description: "an EVLR".into(),
            data: (0..300u32).map(|k| k as u8).collect(),
        });
    }
    let header = b.into_header().unwrap();
    let pts = points.unwrap_or_else(|| full_points(700, header.point_format(), scale));
    let mut w = Writer::new(Cursor::new(Vec::new()), header).unwrap();
    for p in &pts {
        w.write_point(p.clone()).unwrap();
    }
    w.close().unwrap();
    let bytes = w.into_inner().unwrap().into_inner();
    // What the file holds, as the las crate reads it back (coordinates on the grid).
    let read = read_las(&bytes).1;
    (bytes, read)
}

fn read_las(bytes: &[u8]) -> (las::Header, Vec<Point>) {
    let mut r = Reader::new(Cursor::new(bytes.to_vec())).unwrap();
    let pts: Vec<Point> = r.read_all().unwrap().points().map(|p| p.unwrap()).collect();
    (r.header().clone(), pts)
}

fn pcv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_pcv")).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

fn convert(inputs: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["convert"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    pcv(&args)
}

fn convert_ok(inputs: &[&Path], out: &Path) {
    let o = convert(inputs, out);
    assert!(o.status.success(), "convert to {}: {}", out.display(), String::from_utf8_lossy(&o.stderr));
}

/// The point records of a LAS file (uncompressed), as bytes.
fn records(bytes: &[u8]) -> &[u8] {
    let off = u32::from_le_bytes(bytes[96..100].try_into().unwrap()) as usize;
    let len = u16::from_le_bytes(bytes[105..107].try_into().unwrap()) as usize;
    let legacy = u32::from_le_bytes(bytes[107..111].try_into().unwrap()) as u64;
    let n = if bytes[25] >= 4 && u64::from_le_bytes(bytes[247..255].try_into().unwrap()) > 0 {
        u64::from_le_bytes(bytes[247..255].try_into().unwrap())
    } else {
        legacy
    };
    &bytes[off..off + n as usize * len]
}

/// Checks that `out` holds `src`'s header fields, VLRs, EVLRs and points, field by field.
fn same_las(name: &str, src: &[u8], out: &[u8]) {
    let (hs, ps) = read_las(src);
    let (ho, po) = read_las(out);
    assert_eq!(ho.version(), hs.version(), "{name}: version");
    assert_eq!(ho.point_format().to_u8().unwrap(), hs.point_format().to_u8().unwrap(), "{name}: point format");
    assert_eq!(ho.point_format().extra_bytes, hs.point_format().extra_bytes, "{name}: extra bytes");
    assert_eq!(ho.transforms(), hs.transforms(), "{name}: scale and offset");
    assert_eq!(ho.number_of_points(), hs.number_of_points(), "{name}: count");
    assert_eq!(ho.bounds(), hs.bounds(), "{name}: bounds");
    assert_eq!(ho.file_source_id(), hs.file_source_id(), "{name}: file source id");
    assert_eq!(ho.system_identifier(), hs.system_identifier(), "{name}: system");
    assert_eq!(ho.guid(), hs.guid(), "{name}: guid");
    let strip = |v: &Vec<Vlr>| -> Vec<Vlr> { v.iter().filter(|v| v.user_id != "laszip encoded").cloned().collect() };
    assert_eq!(strip(ho.vlrs()), strip(hs.vlrs()), "{name}: VLRs");
    assert_eq!(ho.evlrs(), hs.evlrs(), "{name}: EVLRs");
    if hs.point_format().is_extended {
        assert!(ho.has_wkt_crs(), "{name}: LAS 1.4 point formats 6-10 need the WKT bit");
    }
    assert_eq!(po.len(), ps.len(), "{name}: points");
    for (i, (a, b)) in po.iter().zip(&ps).enumerate() {
        assert_eq!(a, b, "{name}: point {i}");
    }
}

#[test]
fn las_and_laz_round_trip_every_point_format_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    for format in 0..=10u8 {
        for (extra, scale) in [(0u16, 0.001), (5, 0.01)] {
            let (las_src, _) = source(format, extra, scale, false, None);
            let (laz_src, _) = source(format, extra, scale, true, None);
            for (sname, src) in [("las", &las_src), ("laz", &laz_src)] {
                let sp = dir.path().join(format!("src-{format}-{extra}.{sname}"));
                std::fs::write(&sp, src).unwrap();
                for oname in ["las", "laz"] {
                    let op = dir.path().join(format!("out-{format}-{extra}-{sname}.{oname}"));
                    convert_ok(&[&sp], &op);
                    let out = std::fs::read(&op).unwrap();
                    let name = format!("format {format}, {extra} extra bytes, {sname} -> {oname}");
                    same_las(&name, src, &out);
                    if sname == oname {
                        // One input in its own compression: the file's bytes, as they were.
                        assert_eq!(out, *src, "{name}: not byte for byte");
                    }
                    if oname == "las" {
                        // The records, byte for byte (a LAZ source's decompressed ones too).
                        let (_, expect) = read_las(src);
                        assert_eq!(read_las(&out).1, expect);
                        if sname == "las" {
                            assert_eq!(records(&out), records(src), "{name}: records");
                        }
                    }
                }
            }
            // LAS -> LAZ -> LAS gives the first file's records back byte for byte.
            let a = dir.path().join(format!("a-{format}-{extra}.las"));
            let b = dir.path().join(format!("b-{format}-{extra}.laz"));
            let c = dir.path().join(format!("c-{format}-{extra}.las"));
            std::fs::write(&a, &las_src).unwrap();
            convert_ok(&[&a], &b);
            convert_ok(&[&b], &c);
            let back = std::fs::read(&c).unwrap();
            assert_eq!(records(&back), records(&las_src), "format {format}: LAS -> LAZ -> LAS records");
        }
    }
}

#[test]
fn the_wkt_bit_is_set_where_las_1_4_requires_it() {
    let dir = tempfile::tempdir().unwrap();
    for format in [6u8, 7, 8, 9, 10] {
        let (mut src, _) = source(format, 0, 0.001, false, None);
        // A writer that forgot the bit (such files exist).
        src[6] &= !(1 << 4);
        let sp = dir.path().join(format!("nowkt-{format}.las"));
        std::fs::write(&sp, &src).unwrap();
        for oname in ["las", "laz"] {
            let op = dir.path().join(format!("wkt-{format}.{oname}"));
            convert_ok(&[&sp], &op);
            let out = std::fs::read(&op).unwrap();
            assert_eq!(out[6] & (1 << 4), 1 << 4, "format {format} -> {oname}: WKT bit");
            assert_eq!(read_las(&out).1, read_las(&src).1);
        }
    }
}

#[test]
fn utm_offsets_at_three_scales_keep_their_grid_in_every_target() {
    let dir = tempfile::tempdir().unwrap();
    for scale in [0.01, 0.001, 1.16e-6] {
        let (src, pts) = source(3, 0, scale, false, None);
        let sp = dir.path().join("src-utm.las");
        std::fs::write(&sp, &src).unwrap();
        let (h, _) = read_las(&src);
        let t = *h.transforms();
        let grid = |v: f64, t: &Transform| ((v - t.offset) / t.scale).round() as i64;
        // LAS and LAZ: the same integers.
        for oname in ["las", "laz"] {
            let op = dir.path().join(format!("utm.{oname}"));
            convert_ok(&[&sp], &op);
            same_las(&format!("scale {scale} -> {oname}"), &src, &std::fs::read(&op).unwrap());
        }
        // Text: every coordinate comes back to the same integer on the source's grid.
        for (oname, sep) in [("xyz", ' '), ("csv", ',')] {
            let op = dir.path().join(format!("utm.{oname}"));
            convert_ok(&[&sp], &op);
            let text = std::fs::read_to_string(&op).unwrap();
            let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split(sep).collect()).collect();
            assert_eq!(rows.len(), pts.len());
            for (i, (r, p)) in rows.iter().zip(&pts).enumerate() {
                let v: Vec<f64> = r[..3].iter().map(|s| s.parse().unwrap()).collect();
                assert_eq!(grid(v[0], &t.x), grid(p.x, &t.x), "scale {scale} {oname}: point {i} x ({})", r[0]);
                assert_eq!(grid(v[1], &t.y), grid(p.y, &t.y), "scale {scale} {oname}: point {i} y");
                assert_eq!(grid(v[2], &t.z), grid(p.z, &t.z), "scale {scale} {oname}: point {i} z");
                // 16-bit colors as 0-65535 words.
                let c = p.color.unwrap();
                assert_eq!(
                    [r[3], r[4], r[5]].map(|s| s.parse::<u16>().unwrap()),
                    [c.red, c.green, c.blue],
                    "{oname}: color {i}"
                );
                assert_eq!(r[6].parse::<f32>().unwrap(), p.intensity as f32);
            }
        }
        // PLY: doubles (an f32 cannot hold UTM coordinates), bit for bit the source's values.
        let op = dir.path().join("utm.ply");
        convert_ok(&[&sp], &op);
        let ply = std::fs::read(&op).unwrap();
        let end = ply.windows(11).position(|w| w == b"end_header\n").unwrap() + 11;
        let head = String::from_utf8_lossy(&ply[..end]).into_owned();
        assert!(head.contains("property double x") && head.contains("property ushort red"), "{head}");
        let stride = 3 * 8 + 3 * 2 + 4 + 1;
        for (i, p) in pts.iter().enumerate() {
            let r = &ply[end + i * stride..end + (i + 1) * stride];
            let d = |k: usize| f64::from_le_bytes(r[8 * k..8 * k + 8].try_into().unwrap());
            assert_eq!([d(0), d(1), d(2)], [p.x, p.y, p.z], "scale {scale} PLY point {i}");
            let c = p.color.unwrap();
            let u = |k: usize| u16::from_le_bytes(r[24 + 2 * k..26 + 2 * k].try_into().unwrap());
            assert_eq!([u(0), u(1), u(2)], [c.red, c.green, c.blue], "PLY color {i}");
        }
    }
}

#[test]
fn float_sources_stay_float_and_text_keeps_its_digits() {
    use samples::*;
    let dir = tempfile::tempdir().unwrap();
    // A float PLY near 0: floats out, the same bits.
    let pts = points(200, [0.0; 3]);
    let rows: Vec<Vec<f64>> = pts.iter().map(|p| vec![p.xyz[0], p.xyz[1], p.xyz[2]]).collect();
    let sp = dir.path().join("f.ply");
    std::fs::write(&sp, ply(PlyEnc::Le, &[("x", "float"), ("y", "float"), ("z", "float")], &rows, false, 0)).unwrap();
    let op = dir.path().join("f-out.ply");
    convert_ok(&[&sp], &op);
    let out = std::fs::read(&op).unwrap();
    assert!(String::from_utf8_lossy(&out[..out.len().min(200)]).contains("property float x"));
    assert_eq!(out.len() - (out.windows(11).position(|w| w == b"end_header\n").unwrap() + 11), 200 * 12);
    // Text with 7 decimals in UTM: the same digits come back in text, and double in PLY.
    let text = "512345.1234567 5401234.7654321 250.0000001\n512345.5 5401234.25 251.125\n";
    let sp = dir.path().join("t.xyz");
    std::fs::write(&sp, text).unwrap();
    let op = dir.path().join("t-out.xyz");
    convert_ok(&[&sp], &op);
    let back = std::fs::read_to_string(&op).unwrap();
    let lines: Vec<&str> = back.lines().skip(1).collect();
    assert_eq!(lines, ["512345.1234567 5401234.7654321 250.0000001", "512345.5 5401234.25 251.125"]);
    let op = dir.path().join("t-out.ply");
    convert_ok(&[&sp], &op);
    let out = std::fs::read(&op).unwrap();
    assert!(String::from_utf8_lossy(&out[..out.len().min(200)]).contains("property double x"));
}

#[test]
fn merges_keep_everything_or_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let (a, pa) = source(3, 0, 0.001, false, None);
    let more = |dx: f64| {
        let mut p = full_points(300, &Format::new(3).unwrap(), 0.001);
        p.iter_mut().for_each(|p| p.x += dx);
        p
    };
    // b: LAZ, same offset. c: LAS whose x offset is 10 m higher (its integers 10 000 lower): the same
    // real coordinates on a's grid.
    let (b, pb) = source(3, 0, 0.001, true, Some(more(250.0)));
    let (mut c, pc) = source(3, 0, 0.001, false, Some(more(500.0)));
    let xoff = f64::from_le_bytes(c[155..163].try_into().unwrap());
    c[155..163].copy_from_slice(&(xoff + 10.0).to_le_bytes());
    let off = u32::from_le_bytes(c[96..100].try_into().unwrap()) as usize;
    let len = u16::from_le_bytes(c[105..107].try_into().unwrap()) as usize;
    for r in c[off..off + 300 * len].chunks_mut(len) {
        let x = i32::from_le_bytes(r[0..4].try_into().unwrap()) - 10_000;
        r[0..4].copy_from_slice(&x.to_le_bytes());
    }
    assert_eq!(read_las(&c).1.iter().map(|p| p.x).collect::<Vec<_>>(), pc.iter().map(|p| p.x).collect::<Vec<_>>());
    let (ap, bp, cp) = (dir.path().join("a.las"), dir.path().join("b.laz"), dir.path().join("c.las"));
    std::fs::write(&ap, &a).unwrap();
    std::fs::write(&bp, &b).unwrap();
    std::fs::write(&cp, &c).unwrap();
    for oname in ["las", "laz"] {
        let op = dir.path().join(format!("abc.{oname}"));
        convert_ok(&[&ap, &bp, &cp], &op);
        let (h, got) = read_las(&std::fs::read(&op).unwrap());
        assert_eq!(got.len(), pa.len() + pb.len() + pc.len());
        assert_eq!(h.transforms(), read_las(&a).0.transforms());
        for (i, (g, e)) in got.iter().zip(pa.iter().chain(&pb).chain(&pc)).enumerate() {
            assert_eq!(g, e, "merged {oname}: point {i}");
        }
        let strip =
            |v: &Vec<Vlr>| -> Vec<Vlr> { v.iter().filter(|v| v.user_id != "laszip encoded").cloned().collect() };
        assert_eq!(strip(h.vlrs()), strip(read_las(&a).0.vlrs()));
        // Bounds and counts recounted over all files.
        let xmax = pa.iter().chain(&pb).chain(&pc).map(|p| p.x).fold(f64::MIN, f64::max);
        assert!((h.bounds().max.x - xmax).abs() < 1e-9);
        assert_eq!(h.number_of_points(), 1300);
        let firsts = pa.iter().chain(&pb).chain(&pc).filter(|p| p.return_number == 1).count() as u64;
        assert_eq!(h.number_of_points_by_return(1), Some(firsts));
    }
    // A file whose offset puts its points between a's grid steps: refused, naming the file and point.
    c[155..163].copy_from_slice(&(xoff + 10.0004).to_le_bytes());
    let bad = dir.path().join("off-grid.las");
    std::fs::write(&bad, &c).unwrap();
    let o = convert(&[&ap, &bad], &dir.path().join("bad.las"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("off-grid.las") && e.contains("point 0") && e.contains("grid"), "{e}");
    // Another point format, or other VLRs (another CRS): refused.
    let (d, _) = source(2, 0, 0.001, false, None);
    let dp = dir.path().join("d.las");
    std::fs::write(&dp, &d).unwrap();
    let o = convert(&[&ap, &dp], &dir.path().join("bad.las"));
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("point format"));
    // Another CRS: a's GeoTIFF key for another UTM zone.
    let mut e = a.clone();
    let key = 32632u16.to_le_bytes();
    let k = e.windows(2).position(|w| w == key).unwrap();
    e[k..k + 2].copy_from_slice(&32633u16.to_le_bytes());
    let ep = dir.path().join("e.las");
    std::fs::write(&ep, &e).unwrap();
    let o = convert(&[&ap, &ep], &dir.path().join("bad.las"));
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("VLRs"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Files with EVLRs (waveform data, ...) cannot be merged.
    let (f, _) = source(7, 0, 0.001, false, None);
    let fp = dir.path().join("f.las");
    std::fs::write(&fp, &f).unwrap();
    let o = convert(&[&fp, &fp], &dir.path().join("bad.las"));
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("EVLRs"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.path().join("bad.las").exists());
}

#[test]
fn output_naming_an_input_is_refused_and_failures_leave_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = source(3, 0, 0.001, false, None);
    let sp = dir.path().join("in.las");
    std::fs::write(&sp, &src).unwrap();
    for spelled in [sp.clone(), dir.path().join(".").join("in.las")] {
        let o = convert(&[&sp], &spelled);
        assert!(
            !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("one of the inputs"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    #[cfg(unix)]
    {
        let link = dir.path().join("link.las");
        std::fs::hard_link(&sp, &link).unwrap();
        assert!(!convert(&[&sp], &link).status.success());
    }
    assert_eq!(std::fs::read(&sp).unwrap(), src, "the input changed");
    // A previous output survives a failed convert (a corrupt input), and no partial file is left.
    let out = dir.path().join("out.ply");
    std::fs::write(&out, b"previous output").unwrap();
    let bad = dir.path().join("bad.las");
    std::fs::write(&bad, &src[..src.len() / 2]).unwrap();
    let o = convert(&[&bad], &out);
    assert!(!o.status.success());
    assert_eq!(std::fs::read(&out).unwrap(), b"previous output");
    let left: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("partial"))
        .collect();
    assert!(left.is_empty(), "partial files left: {left:?}");
}

#[test]
fn non_finite_coordinates_are_an_error_naming_the_point() {
    let dir = tempfile::tempdir().unwrap();
    // A LAS whose x scale of 1e303 makes the points with large integers infinite.
    let (mut src, _) = source(1, 0, 0.001, false, None);
    src[131..139].copy_from_slice(&1e303f64.to_le_bytes());
    let sp = dir.path().join("huge.las");
    std::fs::write(&sp, &src).unwrap();
    let first_inf = {
        let recs = records(&src);
        let len = u16::from_le_bytes(src[105..107].try_into().unwrap()) as usize;
        recs.chunks(len)
            .position(|r| ((i32::from_le_bytes(r[0..4].try_into().unwrap()) as f64) * 1e303).is_infinite())
            .unwrap()
    };
    for oname in ["ply", "xyz", "las", "laz", "bin"] {
        let out = dir.path().join(format!("huge-out.{oname}"));
        let o = convert(&[&sp], &out);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && e.contains("huge.las") && e.contains(&format!("point {first_inf}")),
            "{oname}: {e}"
        );
        // The scale as a person reads it (it was printed as 304 digits).
        assert!(!e.contains("000000000000000000000"), "{oname}: {e}");
        assert!(!out.exists(), "{oname}: written");
    }
    // Text: an infinite coordinate is named; 1e39 (too large for an f32) is written as a double.
    let sp = dir.path().join("big.xyz");
    std::fs::write(&sp, "1 2 3\n1e39 5 6\n").unwrap();
    let op = dir.path().join("big.ply");
    convert_ok(&[&sp], &op);
    let ply = std::fs::read(&op).unwrap();
    let end = ply.windows(11).position(|w| w == b"end_header\n").unwrap() + 11;
    assert_eq!(f64::from_le_bytes(ply[end + 24..end + 32].try_into().unwrap()), 1e39);
    std::fs::write(&sp, "1 2 3\n4 5 6\ninf 5 6\n").unwrap();
    let o = convert(&[&sp], &dir.path().join("inf.ply"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("big.xyz") && e.contains("point 2"), "{e}");
    let o = convert(&[&sp], &dir.path().join("big.las"));
    assert!(!o.status.success());
    // .bin: the same rule (it once dropped the point with a warning and exited 0), and a finite
    // coordinate too far from the rest for the layout's f32 positions is refused, naming it.
    let o = convert(&[&sp], &dir.path().join("inf.bin"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("big.xyz") && e.contains("point 2"), "{e}");
    assert!(!dir.path().join("inf.bin").exists());
    std::fs::write(&sp, "1 2 3\n4 5 6\n1e300 5 6\n").unwrap();
    let o = convert(&[&sp], &dir.path().join("far.bin"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("big.xyz") && e.contains("point 2") && e.contains("f32"), "{e}");
    assert!(!dir.path().join("far.bin").exists());
    std::fs::write(&sp, "1 2 3\n4 5 6\n").unwrap();
    convert_ok(&[&sp], &dir.path().join("ok.bin"));
    assert_eq!(std::fs::metadata(dir.path().join("ok.bin")).unwrap().len(), 32);
}

#[test]
fn internal_waveform_data_moves_with_the_evlrs() {
    // A LAS 1.4 format-9 file whose waveform data packets are inside the file: the global-encoding
    // bit 1 set and the "start of waveform data packet record" pointing at its EVLR.
    let (mut src, _) = source(9, 0, 0.001, false, None);
    let first_evlr = u64::from_le_bytes(src[235..243].try_into().unwrap());
    src[227..235].copy_from_slice(&first_evlr.to_le_bytes());
    src[6] |= 1 << 1;
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path().join("wave.las");
    std::fs::write(&sp, &src).unwrap();
    let op = dir.path().join("wave.laz");
    convert_ok(&[&sp], &op);
    let out = std::fs::read(&op).unwrap();
    let (wave, evlr) =
        (u64::from_le_bytes(out[227..235].try_into().unwrap()), u64::from_le_bytes(out[235..243].try_into().unwrap()));
    assert_eq!(wave, evlr, "the waveform record's offset follows the EVLRs");
    assert_eq!(&out[evlr as usize..], &src[first_evlr as usize..], "the EVLRs, byte for byte");
    same_las("waveform", &src, &out);
}

/// A convert interrupted by SIGINT or SIGTERM removes its temporary files and exits 130; files a
/// killed convert left (its process gone) are removed by the next convert into the folder, which says so.
#[cfg(target_os = "linux")]
#[test]
fn interrupted_converts_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let temps = || -> Vec<String> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".pcv-"))
            .collect()
    };
    // Leftovers of a process that is gone (pid 4194303 is past Linux's largest).
    for n in [".old.laz.pcv-partial-4194303", "..old.copc.laz.pcv-partial-4194303.pcv-cells0-4194303"] {
        std::fs::write(dir.path().join(n), b"partial").unwrap();
    }
    let cloud = pcv_io::scene::generate(3_000_000, 1, false);
    let src = dir.path().join("big.las");
    pcv_io::convert::write_cloud(&cloud, &src).unwrap();
    let small = dir.path().join("small.xyz");
    std::fs::write(&small, "1 2 3\n4 5 6\n").unwrap();
    let o = convert(&[&small], &dir.path().join("small.laz"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("removed 2 temporary file(s) an interrupted convert left"), "{e}");
    assert_eq!(temps(), Vec::<String>::new());
    for signal in ["INT", "TERM"] {
        let out = dir.path().join(format!("out-{signal}.copc.laz"));
        let child = Command::new(env!("CARGO_BIN_EXE_pcv"))
            .args(["convert", src.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Interrupted once its temporary files are there.
        let t = std::time::Instant::now();
        while temps().is_empty() && t.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!temps().is_empty(), "{signal}: no temporary file appeared");
        let k = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        assert!(k.success());
        let o = child.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        if o.status.success() {
            // Finished before the signal arrived: nothing to check but the output.
            assert!(out.exists(), "{e}");
            continue;
        }
        assert_eq!(o.status.code(), Some(130), "{signal}: {e}");
        assert!(e.contains("interrupted; removed the convert's"), "{signal}: {e}");
        assert_eq!(temps(), Vec::<String>::new(), "{signal}: left behind");
        assert!(!out.exists(), "{signal}: an output");
    }
}

/// 32-bit float sources (a PLY scan of a small object) to LAS: the grid is as fine as the extent allows,
/// so a coordinate reads back as the same f32 unless it lies within 2^24 steps of 0 (where floats are
/// finer than any 31-bit grid of the extent; it then moves by half a step at most) — a 1 µm grid moved
/// 35,804 of 35,947 points of a bunny — and the console says the grid instead of "exact values".
#[test]
fn float_sources_to_las_read_back_as_the_same_floats() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 0.2 - 0.1
    };
    let pts: Vec<[f32; 3]> = (0..n).map(|_| [next(), next(), next() + 0.05]).collect();
    let mut ply = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n"
    )
    .into_bytes();
    pts.iter().flatten().for_each(|v| ply.extend_from_slice(&v.to_le_bytes()));
    let src = dir.path().join("bunny.ply");
    std::fs::write(&src, ply).unwrap();
    let out = dir.path().join("bunny.las");
    let o = convert(&[&src], &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("on a grid of 1e-9") && !e.contains("exact values"), "{e}");
    let (h, _) = read_las(&std::fs::read(&out).unwrap());
    let step = h.transforms().x.scale;
    let (_, las_points) = read_las(&std::fs::read(&out).unwrap());
    let back: Vec<[f32; 3]> = las_points.iter().map(|p| [p.x as f32, p.y as f32, p.z as f32]).collect();
    for (a, b) in back.iter().zip(&pts) {
        for k in 0..3 {
            if a[k] != b[k] {
                // Floats nearer 0 than 2^24 steps are finer than the grid.
                let near = (b[k].abs() as f64) < step * (1u64 << 24) as f64;
                assert!(near && ((a[k] - b[k]) as f64).abs() <= step, "{} read back as {}", b[k], a[k]);
            }
        }
    }
    let moved = back.iter().zip(&pts).filter(|(a, b)| a != b).count();
    assert!(moved * 3 < n, "{moved} of {n} points moved");
}

/// Text with 8 decimals (a scanned object in metres) to LAS: the grid keeps all 8 where the extent
/// fits 31 bits of 1e-8 (it was a 1 µm grid for any text, which lost two decimals).
#[test]
fn text_decimals_finer_than_a_micrometre_are_kept_in_las() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<[f64; 3]> = (0..500)
        .map(|i| [0.12345678 + i as f64 * 0.00731111, 1.87654321 - i as f64 * 0.00100007, 0.5 + i as f64 * 1e-8])
        .collect();
    let text: String = rows.iter().map(|r| format!("{:.8} {:.8} {:.8}\n", r[0], r[1], r[2])).collect();
    let src = dir.path().join("object.xyz");
    std::fs::write(&src, &text).unwrap();
    let out = dir.path().join("object.las");
    let o = convert(&[&src], &out);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("on a grid of 1e-8"), "{e}");
    let (h, back) = read_las(&std::fs::read(&out).unwrap());
    assert_eq!(h.transforms().x.scale, 1e-8);
    for (line, p) in text.lines().zip(&back) {
        assert_eq!(format!("{:.8} {:.8} {:.8}", p.x, p.y, p.z), line);
    }
    // A wide extent cannot take 1e-8 in 31 bits: the finest grid that fits, and the console says it.
    let src = dir.path().join("wide.xyz");
    std::fs::write(&src, "0.12345678 0 0\n500.5 0 0\n").unwrap();
    let o = convert(&[&src], &dir.path().join("wide.las"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("on a grid of 0.000001 0.000001 0.000001"), "{e}");
    // Exponents say nothing of decimals: 1 µm as before.
    let src = dir.path().join("exp.xyz");
    std::fs::write(&src, "1.5e-3 0 0\n2.25E-1 1 1\n").unwrap();
    let o = convert(&[&src], &dir.path().join("exp.las"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && e.contains("on a grid of 0.000001 0.000001 0.000001"), "{e}");
}

/// A full disk: the error names the output (it said only "No space left on device"). The temporary
/// file's name is known in-process (it carries this process's id), so it is made a link to /dev/full.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_an_error_naming_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.xyz");
    let text: String = (0..200_000).map(|i| format!("{i} {} 3\n", i % 97)).collect();
    std::fs::write(&src, text).unwrap();
    for ext in ["ply", "laz", "xyz"] {
        let out = dir.path().join(format!("out.{ext}"));
        let tmp = dir.path().join(format!(".out.{ext}.pcv-partial-{}", std::process::id()));
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let e = pcv_io::convert::convert_filtered(
            std::slice::from_ref(&src),
            &out,
            &pcv_io::load::LoadOptions::quiet(),
            &Default::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(&out.display().to_string()) && e.contains("No space left"), "{ext}: {e}");
        assert!(!out.exists() && std::fs::symlink_metadata(&tmp).is_err(), "{ext}: left behind");
    }
}
