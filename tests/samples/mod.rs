//! Sample point files in every variant pcv reads, written here byte by byte (PLY, PCD, text) or with
//! independent writers (the `las` crate for LAS/LAZ, the `e57` crate for E57), for the loader tests and
//! the fuzz smoke test's seeds.
#![allow(dead_code)]

use std::io::Cursor;

/// One expected point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub xyz: [f64; 3],
    pub rgb: [u8; 3],
    pub intensity: u16,
    pub class: u8,
}

/// `n` points around `base`, with coordinates on a 1/8 grid (exact in f32 near 0, in f64 anywhere and
/// in LAS's 1 mm scale), distinct colors, intensities and classes.
pub fn points(n: usize, base: [f64; 3]) -> Vec<Pt> {
    let classes = [1u8, 2, 5, 6, 9];
    (0..n)
        .map(|i| {
            let f = i as f64;
            Pt {
                xyz: [
                    base[0] + (f * 1.125) % 37.0 - 5.0,
                    base[1] - (f * 2.375) % 23.0,
                    base[2] + (f * 0.625) % 7.0 - 1.5,
                ],
                rgb: [(i * 37 % 256) as u8, (i * 91 % 256) as u8, (255 - i * 13 % 256) as u8],
                intensity: (i * 997 % 65536) as u16,
                class: classes[i % classes.len()],
            }
        })
        .collect()
}

pub fn bounds(pts: &[Pt]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in pts {
        for k in 0..3 {
            lo[k] = lo[k].min(p.xyz[k]);
            hi[k] = hi[k].max(p.xyz[k]);
        }
    }
    (lo, hi)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlyEnc {
    Ascii,
    Le,
    Be,
}

/// A PLY value of type `ty` (`float`, `uchar`, ...), serialized.
fn ply_value(out: &mut Vec<u8>, enc: PlyEnc, ty: &str, v: f64) {
    macro_rules! put {
        ($t:ty) => {{
            let x = v as $t;
            match enc {
                PlyEnc::Le => out.extend_from_slice(&x.to_le_bytes()),
                PlyEnc::Be => out.extend_from_slice(&x.to_be_bytes()),
                PlyEnc::Ascii => out.extend_from_slice(format!("{x} ").as_bytes()),
            }
        }};
    }
    match ty {
        "char" | "int8" => put!(i8),
        "uchar" | "uint8" => put!(u8),
        "short" | "int16" => put!(i16),
        "ushort" | "uint16" => put!(u16),
        "int" | "int32" => put!(i32),
        "uint" | "uint32" => put!(u32),
        "float" | "float32" => put!(f32),
        "double" | "float64" => put!(f64),
        other => panic!("type {other}"),
    }
}

/// A PLY file: `props` (name, type) per vertex, `rows` the values; faces (a list property) before or
/// after the vertices when asked.
pub fn ply(enc: PlyEnc, props: &[(&str, &str)], rows: &[Vec<f64>], faces_first: bool, faces: usize) -> Vec<u8> {
    let e = match enc {
        PlyEnc::Ascii => "ascii",
        PlyEnc::Le => "binary_little_endian",
        PlyEnc::Be => "binary_big_endian",
    };
    let mut h = format!("ply\nformat {e} 1.0\ncomment made by the pcv tests\n");
    let face_header = format!("element face {faces}\nproperty list uchar int vertex_indices\n");
    if faces_first && faces > 0 {
        h.push_str(&face_header);
    }
    h.push_str(&format!("element vertex {}\n", rows.len()));
    for (n, t) in props {
        h.push_str(&format!("property {t} {n}\n"));
    }
    if !faces_first && faces > 0 {
        h.push_str(&face_header);
    }
    h.push_str("end_header\n");
    let mut out = h.into_bytes();
    let face_data = |out: &mut Vec<u8>| {
        for f in 0..faces {
            ply_value(out, enc, "uchar", 3.0);
            for k in 0..3 {
                ply_value(out, enc, "int", ((f + k) % rows.len().max(1)) as f64);
            }
            if enc == PlyEnc::Ascii {
                out.push(b'\n');
            }
        }
    };
    if faces_first {
        face_data(&mut out);
    }
    for r in rows {
        for ((_, t), v) in props.iter().zip(r) {
            ply_value(&mut out, enc, t, *v);
        }
        if enc == PlyEnc::Ascii {
            out.pop();
            out.push(b'\n');
        }
    }
    if !faces_first {
        face_data(&mut out);
    }
    out
}

/// Color channel `c` (0..=255) as stored in type `ty`.
pub fn color_as(ty: &str, c: u8) -> f64 {
    match ty {
        "uchar" => c as f64,
        "ushort" => c as f64 * 257.0,
        _ => c as f64 / 255.0,
    }
}

/// A LAS or LAZ file written by the `las` crate: version 1.`minor`, point `format`, colors `rgb16(c)`.
pub fn las(pts: &[Pt], minor: u8, format: u8, laz: bool, base: [f64; 3], rgb16: impl Fn(u8) -> u16) -> Vec<u8> {
    let mut b = las::Builder::from((1, minor));
    let mut f = las::point::Format::new(format).expect("format");
    f.is_compressed = laz;
    b.point_format = f;
    let t = |o: f64| las::Transform { scale: 0.001, offset: o };
    b.transforms = las::Vector { x: t(base[0]), y: t(base[1]), z: t(base[2]) };
    let header = b.into_header().expect("header");
    let mut w = las::Writer::new(Cursor::new(Vec::new()), header).expect("writer");
    for p in pts {
        let mut q = las::Point {
            x: p.xyz[0],
            y: p.xyz[1],
            z: p.xyz[2],
            intensity: p.intensity,
            return_number: 1,
            number_of_returns: 1,
            classification: las::point::Classification::new(p.class).expect("class"),
            ..Default::default()
        };
        if f.has_gps_time {
            q.gps_time = Some(1.5);
        }
        if f.has_color {
            q.color = Some(las::Color { red: rgb16(p.rgb[0]), green: rgb16(p.rgb[1]), blue: rgb16(p.rgb[2]) });
        }
        if f.has_nir {
            q.nir = Some(7);
        }
        if f.has_waveform {
            q.waveform = Some(Default::default());
        }
        w.write_point(q).expect("point");
    }
    w.close().expect("close");
    w.into_inner().expect("inner").into_inner()
}

/// The PCD data kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcdData {
    Ascii,
    Binary,
    Compressed,
}

/// LZF "compression" with literal runs only (valid LZF that any decoder reads), plus one real back
/// reference when the data starts with a repeat, to exercise both paths.
pub fn lzf_literals(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for run in data.chunks(32) {
        out.push((run.len() - 1) as u8);
        out.extend_from_slice(run);
    }
    out
}

/// A PCD file with fields x y z (F4), rgb packed (`rgb_float`: F4 bits, else U4), intensity (F4) and a
/// padding field `_` of 2 bytes, `nan_rows` extra NaN points at the end.
pub fn pcd(pts: &[Pt], data: PcdData, rgb_float: bool, nan_rows: usize) -> Vec<u8> {
    let n = pts.len() + nan_rows;
    let rgb_t = if rgb_float { "F" } else { "U" };
    let kind = match data {
        PcdData::Ascii => "ascii",
        PcdData::Binary => "binary",
        PcdData::Compressed => "binary_compressed",
    };
    let mut out = format!(
        "# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\nFIELDS x y z rgb intensity _\nSIZE 4 4 4 4 4 1\nTYPE F F F {rgb_t} F U\nCOUNT 1 1 1 1 1 2\nWIDTH {n}\nHEIGHT 1\nVIEWPOINT 0 0 0 1 0 0 0\nPOINTS {n}\nDATA {kind}\n"
    )
    .into_bytes();
    let word = |p: &Pt| (p.rgb[0] as u32) << 16 | (p.rgb[1] as u32) << 8 | p.rgb[2] as u32;
    let rows: Vec<([f32; 3], u32, f32)> = pts
        .iter()
        .map(|p| (p.xyz.map(|v| v as f32), word(p), p.intensity as f32))
        .chain((0..nan_rows).map(|_| ([f32::NAN; 3], 0, 0.0)))
        .collect();
    match data {
        PcdData::Ascii => {
            for (xyz, w, i) in &rows {
                let rgb = if rgb_float { format!("{:e}", f32::from_bits(*w)) } else { w.to_string() };
                out.extend_from_slice(format!("{} {} {} {rgb} {i} 0 0\n", xyz[0], xyz[1], xyz[2]).as_bytes());
            }
        }
        PcdData::Binary => {
            for (xyz, w, i) in &rows {
                xyz.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
                out.extend_from_slice(&w.to_le_bytes());
                out.extend_from_slice(&i.to_le_bytes());
                out.extend_from_slice(&[0, 0]);
            }
        }
        PcdData::Compressed => {
            let mut soa = Vec::new();
            for k in 0..3 {
                rows.iter().for_each(|r| soa.extend_from_slice(&r.0[k].to_le_bytes()));
            }
            rows.iter().for_each(|r| soa.extend_from_slice(&r.1.to_le_bytes()));
            rows.iter().for_each(|r| soa.extend_from_slice(&r.2.to_le_bytes()));
            rows.iter().for_each(|_| soa.extend_from_slice(&[0, 0]));
            let c = lzf_literals(&soa);
            out.extend_from_slice(&(c.len() as u32).to_le_bytes());
            out.extend_from_slice(&(soa.len() as u32).to_le_bytes());
            out.extend_from_slice(&c);
        }
    }
    out
}

/// An E57 file with two scans: the first cartesian with colors and intensity (posed: rotated 90°
/// about z and translated by `t`), the second spherical without color (identity pose).
/// Returns the file's bytes and the expected points in the file's frame (colors of scan 2: none).
/// Expected E57 points: position, color (none for the scan without), intensity.
pub type E57Points = Vec<([f64; 3], Option<[u8; 3]>, u16)>;

pub fn e57(pts: &[Pt], t: [f64; 3]) -> (Vec<u8>, E57Points) {
    use e57::{Quaternion, Record, RecordDataType, RecordName, RecordValue, Transform, Translation};
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("s.e57");
    let mut expected = Vec::new();
    {
        let mut w = e57::E57Writer::from_file(&path, "file-guid").expect("writer");
        let proto = vec![
            Record::CARTESIAN_X_F64,
            Record::CARTESIAN_Y_F64,
            Record::CARTESIAN_Z_F64,
            Record::COLOR_RED_U8,
            Record::COLOR_GREEN_U8,
            Record::COLOR_BLUE_U8,
            Record { name: RecordName::Intensity, data_type: RecordDataType::U16 },
        ];
        let half = pts.len() / 2;
        let mut pc = w.add_pointcloud("scan-1", proto).expect("pc");
        let s = std::f64::consts::FRAC_1_SQRT_2;
        pc.set_transform(Some(Transform {
            rotation: Quaternion { w: s, x: 0.0, y: 0.0, z: s },
            translation: Translation { x: t[0], y: t[1], z: t[2] },
        }));
        for p in &pts[..half] {
            pc.add_point(vec![
                RecordValue::Double(p.xyz[0]),
                RecordValue::Double(p.xyz[1]),
                RecordValue::Double(p.xyz[2]),
                RecordValue::Integer(p.rgb[0] as i64),
                RecordValue::Integer(p.rgb[1] as i64),
                RecordValue::Integer(p.rgb[2] as i64),
                RecordValue::Integer(p.intensity as i64),
            ])
            .expect("add");
            // Rotation by 90° about z: (x, y) -> (-y, x).
            expected.push(([-p.xyz[1] + t[0], p.xyz[0] + t[1], p.xyz[2] + t[2]], Some(p.rgb), p.intensity));
        }
        pc.finalize().expect("finalize");
        let proto = vec![
            Record::SPHERICAL_RANGE_F64,
            Record::SPHERICAL_AZIMUTH_F64,
            Record::SPHERICAL_ELEVATION_F64,
            Record { name: RecordName::Intensity, data_type: RecordDataType::U16 },
        ];
        let mut pc = w.add_pointcloud("scan-2", proto).expect("pc");
        for (k, p) in pts[half..].iter().enumerate() {
            let (r, az, el) = (2.0 + k as f64, 0.25 * k as f64, 0.125 * k as f64 - 0.5);
            pc.add_point(vec![
                RecordValue::Double(r),
                RecordValue::Double(az),
                RecordValue::Double(el),
                RecordValue::Integer(p.intensity as i64),
            ])
            .expect("add");
            expected.push(([r * el.cos() * az.cos(), r * el.cos() * az.sin(), r * el.sin()], None, p.intensity));
        }
        pc.finalize().expect("finalize");
        w.finalize().expect("finalize");
    }
    (std::fs::read(&path).expect("read"), expected)
}

/// Text lines "x y z r g b intensity" (or another order) for `pts`.
pub fn text(pts: &[Pt], sep: &str, order: &[&str], header: Option<&str>) -> Vec<u8> {
    let mut s = String::new();
    if let Some(h) = header {
        s.push_str(h);
        s.push('\n');
    }
    for p in pts {
        let cols: Vec<String> = order
            .iter()
            .map(|c| match *c {
                "x" => p.xyz[0].to_string(),
                "y" => p.xyz[1].to_string(),
                "z" => p.xyz[2].to_string(),
                "r" => p.rgb[0].to_string(),
                "g" => p.rgb[1].to_string(),
                "b" => p.rgb[2].to_string(),
                "i" => p.intensity.to_string(),
                "c" => p.class.to_string(),
                other => other.to_string(),
            })
            .collect();
        s.push_str(&cols.join(sep));
        s.push('\n');
    }
    s.into_bytes()
}

/// A LAZ file shaped like COPC: LAS 1.4 point format 7, variable-size chunks (of `sizes` points, in
/// order) and a `copc` info VLR first. Built from a fixed-chunk file of the `las` crate: its records are
/// decompressed and compressed again chunk by chunk with the `laz` crate.
pub fn copc_like(pts: &[Pt], base: [f64; 3], sizes: &[usize]) -> Vec<u8> {
    assert_eq!(sizes.iter().sum::<usize>(), pts.len());
    let fixed = las(pts, 4, 7, true, base, |c| c as u16 * 257);
    let u16at = |o: usize| u16::from_le_bytes([fixed[o], fixed[o + 1]]) as usize;
    let u32at = |o: usize| u32::from_le_bytes(fixed[o..o + 4].try_into().unwrap()) as usize;
    let (header_size, data_offset, num_vlrs) = (u16at(94), u32at(96), u32at(100));
    // Find the LASzip VLR.
    let mut at = header_size;
    let mut items = None;
    for _ in 0..num_vlrs {
        let len = u16at(at + 20);
        if &fixed[at + 2..at + 16] == b"laszip encoded" {
            items = Some(laz::LazVlr::from_buffer(&fixed[at + 54..at + 54 + len]).unwrap().items().clone());
        }
        at += 54 + len;
    }
    let fixed_vlr = laz::LazVlr::from_laz_items(items.clone().unwrap());
    let record = fixed_vlr.items_size() as usize;
    let mut raw = vec![0u8; pts.len() * record];
    let mut src = std::io::Cursor::new(&fixed[..]);
    src.set_position(data_offset as u64);
    laz::ParLasZipDecompressor::new(src, fixed_vlr).unwrap().decompress_many(&mut raw).unwrap();
    let vlr = laz::LazVlrBuilder::new(items.unwrap()).with_variable_chunk_size().build();
    let mut vlr_data = Vec::new();
    vlr.write_to(&mut vlr_data).unwrap();
    let vlr_record = |user: &[u8], id: u16, data: &[u8]| {
        let mut v = vec![0u8; 2];
        let mut u = [0u8; 16];
        u[..user.len()].copy_from_slice(user);
        v.extend_from_slice(&u);
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&(data.len() as u16).to_le_bytes());
        v.extend_from_slice(&[0u8; 32]);
        v.extend_from_slice(data);
        v
    };
    let vlrs = [vlr_record(b"copc", 1, &[0u8; 160]), vlr_record(b"laszip encoded", 22204, &vlr_data)].concat();
    let mut head = fixed[..header_size].to_vec();
    head[96..100].copy_from_slice(&((header_size + vlrs.len()) as u32).to_le_bytes());
    head[100..104].copy_from_slice(&2u32.to_le_bytes());
    let mut out = std::io::Cursor::new([head, vlrs].concat());
    out.set_position(out.get_ref().len() as u64);
    {
        let mut comp = laz::ParLasZipCompressor::new(&mut out, vlr).unwrap();
        let mut chunks = Vec::new();
        let mut start = 0;
        for &n in sizes {
            chunks.push(raw[start * record..(start + n) * record].to_vec());
            start += n;
        }
        comp.compress_chunks(chunks).unwrap();
        comp.done().unwrap();
    }
    out.into_inner()
}

/// Replaces the first `element NAME N` line's count in a PLY header.
pub fn ply_with_count(bytes: &[u8], element: &str, count: u64) -> Vec<u8> {
    let end = bytes.windows(10).position(|w| w == b"end_header").expect("header") + 10;
    let head = String::from_utf8_lossy(&bytes[..end]).into_owned();
    let key = format!("element {element} ");
    let at = head.find(&key).expect("element") + key.len();
    let stop = at + head[at..].find('\n').expect("line end");
    let head = format!("{}{count}{}", &head[..at], &head[stop..]);
    [head.as_bytes(), &bytes[end..]].concat()
}

/// Damaged files, each a case the loaders must refuse with an error naming the place: (fuzz target,
/// file name, bytes, what the error must contain). Written to `fuzz/regressions/<target>/` by
/// `PCV_WRITE_REGRESSIONS=1 cargo test --test fuzz_smoke`, and checked by the loader tests.
pub fn damaged() -> Vec<(&'static str, String, Vec<u8>, &'static str)> {
    let pts = points(100, [0.0; 3]);
    let rows: Vec<Vec<f64>> = pts.iter().map(|p| vec![p.xyz[0], p.xyz[1], p.xyz[2]]).collect();
    let xyz = [("x", "float"), ("y", "float"), ("z", "float")];
    let mut out = Vec::new();
    // LAZ: a header count far beyond what the chunk table holds (2^32 - 1; the issue's 120 MB file
    // tried to allocate 64 GiB), and one within 2048 bytes per file byte but beyond the chunk's data.
    let laz = las(&pts, 2, 3, true, [0.0; 3], |c| c as u16 * 257);
    let mut lie = laz.clone();
    lie[107..111].copy_from_slice(&u32::MAX.to_le_bytes());
    out.push(("las", "laz-count-lie-u32-max".to_string(), lie, "byte 107"));
    let mut lie = laz.clone();
    lie[107..111].copy_from_slice(&60_000u32.to_le_bytes());
    out.push(("las", "laz-count-lie-beyond-the-chunks".to_string(), lie, "chunk table"));
    let mut lie = laz.clone();
    lie[107..111].copy_from_slice(&40_000u32.to_le_bytes());
    out.push(("las", "laz-count-lie-within-a-chunk".to_string(), lie, "LAZ chunk 0"));
    // LAS 1.4: the 64-bit count lies.
    let mut lie = las(&pts, 4, 7, true, [0.0; 3], |c| c as u16 * 257);
    lie[247..255].copy_from_slice(&(1u64 << 40).to_le_bytes());
    out.push(("las", "laz-count-lie-64-bit".to_string(), lie, "byte 247"));
    for (enc, tag) in [(PlyEnc::Le, "binary"), (PlyEnc::Ascii, "ascii")] {
        let good = ply(enc, &xyz, &rows, false, 4);
        // `element vertex` one higher than the file holds: it would read face data as a vertex.
        out.push(("ply", format!("vertex-count-one-high-{tag}"), ply_with_count(&good, "vertex", 101), "face"));
        // Truncated inside the faces.
        let cut = if enc == PlyEnc::Ascii { good.len() - 6 } else { good.len() - 5 };
        out.push(("ply", format!("faces-truncated-{tag}"), good[..cut].to_vec(), "face"));
        // A face list longer than the file.
        out.push(("ply", format!("faces-one-too-many-{tag}"), ply_with_count(&good, "face", 5), "face"));
        // Faces before the vertices, one too many: the vertices would start inside the faces.
        let first = ply(enc, &xyz, &rows, true, 4);
        out.push(("ply", format!("faces-first-count-high-{tag}"), ply_with_count(&first, "face", 6), "face"));
    }
    // Text: two lines run together (6 numbers in a file of 3 columns).
    out.push(("text", "merged-lines".to_string(), b"1 2 3\n4 5 6\n7 8 9 10 11 12\n13 14 15\n".to_vec(), "line 3"));
    out.push(("text", "short-line".to_string(), b"1,2,3,4\n5,6,7,8\n9,10,11\n".to_vec(), "line 3"));
    // PCD ascii: a line with more values than the fields take.
    let pcd_text = b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 2\nHEIGHT 1\nPOINTS 2\nDATA ascii\n1 2 3\n4 5 6 7\n";
    out.push(("pcd", "ascii-line-too-long".to_string(), pcd_text.to_vec(), "line 11"));
    // E57: a page of the scan's data damaged (its checksum no longer matches), and the same with the
    // checksum made right (the damage reaches the point decoder), and a file cut short.
    let (good, _) = e57(&pts[..20], [0.0; 3]);
    let mut bad = good.clone();
    let at = 1024 + 100;
    bad[at] ^= 0x5a;
    out.push(("e57", "page-checksum".to_string(), bad, "byte 1024"));
    out.push(("e57", "cut-short".to_string(), good[..good.len() - 1024].to_vec(), "byte 16"));
    out
}
