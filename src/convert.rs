//! `pcv convert`: load point files (any format pcv reads, several merged) and write one file as PLY,
//! LAS, LAZ, XYZ/TXT/CSV or raw records.
//!
//! How it works: the inputs go through the normal loader, so the output holds the merged cloud with its
//! f64 origin. Positions are written in the source's own coordinates (origin + local position, in
//! f64): PLY as doubles when the origin is not 0 (else floats), LAS/LAZ as i32 with a scale of 1 mm (or
//! coarser when the extent needs it) and the bounds' minimum as offset, text with as many decimals as
//! the f32 positions resolve. Colors are written when some input had colors (the colors loaded, not a
//! color mode's); intensity and classification when some input had them. Records are serialized in
//! parallel, a few million at a time, and written in order; LAZ is compressed in parallel by the `laz`
//! crate. Raw records (`.bin`, `.pcv`) hold local f32 positions only: the origin is lost.
use crate::cloud::attributes::Attributes;
use crate::cloud::load::{self, LoadError, LoadOptions};
use crate::cloud::PointCloud;
use rayon::prelude::*;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutFormat {
    Ply,
    Las,
    Laz,
    /// Space-separated text (`.xyz`, `.txt`, `.asc`).
    Xyz,
    /// Comma-separated text with a header line.
    Csv,
    Raw,
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: cannot write format '{ext}' (pcv writes .ply .las .laz .xyz .txt .asc .csv .bin .pcv)")]
    UnsupportedOutput { path: PathBuf, ext: String },
    #[error("{path}: LAZ compression: {message}")]
    Laz { path: PathBuf, message: String },
    #[error("{path}: the cloud's extent ({extent} m) does not fit LAS's 32-bit coordinates")]
    TooLarge { path: PathBuf, extent: f64 },
}

/// The output format for `path`'s extension.
pub fn out_format(path: &Path) -> Result<OutFormat, ConvertError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    Ok(match ext.as_str() {
        "ply" => OutFormat::Ply,
        "las" => OutFormat::Las,
        "laz" => OutFormat::Laz,
        "xyz" | "txt" | "asc" => OutFormat::Xyz,
        "csv" => OutFormat::Csv,
        "bin" | "pcv" => OutFormat::Raw,
        _ => return Err(ConvertError::UnsupportedOutput { path: path.into(), ext }),
    })
}

/// What was written.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertSummary {
    pub points: u64,
    pub bytes: u64,
    pub format: OutFormat,
}

/// Loads `inputs` and writes them to `output`.
pub fn convert(inputs: &[PathBuf], output: &Path, opts: &LoadOptions) -> Result<ConvertSummary, ConvertError> {
    let format = out_format(output)?;
    let cloud = load::load_files_with(inputs, opts)?;
    write_cloud(&cloud, output)?;
    let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    Ok(ConvertSummary { points: cloud.points.len() as u64, bytes, format })
}

/// What the writers take from a cloud.
struct Columns<'a> {
    cloud: &'a PointCloud,
    rgb: Option<Vec<[u8; 4]>>,
    intensity: Option<&'a [f32]>,
    classification: Option<&'a [u8]>,
}

impl<'a> Columns<'a> {
    fn of(cloud: &'a PointCloud) -> Columns<'a> {
        let attrs: Option<&Attributes> = cloud.attributes.as_deref();
        let has_rgb = attrs.is_none_or(|a| a.has_rgb);
        let rgb = has_rgb.then(|| match attrs.and_then(|a| a.loaded_rgba.as_ref()) {
            Some(saved) => saved.clone(),
            None => cloud.points.par_iter().map(|p| p.rgba).collect(),
        });
        Columns {
            cloud,
            rgb,
            intensity: attrs.and_then(|a| a.intensity.as_deref()),
            classification: attrs.and_then(|a| a.classification.as_deref()),
        }
    }

    fn source(&self, i: usize) -> [f64; 3] {
        let p = self.cloud.points[i].pos;
        let o = self.cloud.origin;
        [o.x + p[0] as f64, o.y + p[1] as f64, o.z + p[2] as f64]
    }
}

/// Points serialized per parallel batch.
const BATCH: usize = 1 << 22;

/// Writes `n` items: `ser(i, out)` appends item `i`'s bytes; batches are serialized in parallel.
fn write_items<W: Write>(w: &mut W, n: usize, ser: impl Fn(usize, &mut Vec<u8>) + Sync) -> std::io::Result<()> {
    for start in (0..n).step_by(BATCH) {
        let end = (start + BATCH).min(n);
        let parts: Vec<Vec<u8>> = (start..end)
            .into_par_iter()
            .chunks(1 << 15)
            .map(|idx| {
                let mut buf = Vec::with_capacity(idx.len() * 32);
                for i in idx {
                    ser(i, &mut buf);
                }
                buf
            })
            .collect();
        for p in parts {
            w.write_all(&p)?;
        }
    }
    Ok(())
}

/// Writes `cloud` to `path` in the format its extension names.
pub fn write_cloud(cloud: &PointCloud, path: &Path) -> Result<(), ConvertError> {
    let format = out_format(path)?;
    let io = |source| ConvertError::Io { path: path.into(), source };
    if format == OutFormat::Raw {
        return Ok(load::write_raw(path, &cloud.points)?);
    }
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let c = Columns::of(cloud);
    match format {
        OutFormat::Ply => write_ply(&mut w, &c).map_err(io)?,
        OutFormat::Xyz => write_text(&mut w, &c, false).map_err(io)?,
        OutFormat::Csv => write_text(&mut w, &c, true).map_err(io)?,
        OutFormat::Las | OutFormat::Laz => write_las(&mut w, &c, format == OutFormat::Laz, path)?,
        OutFormat::Raw => {}
    }
    w.flush().map_err(io)?;
    Ok(())
}

fn write_ply<W: Write>(w: &mut W, c: &Columns) -> std::io::Result<()> {
    let n = c.cloud.points.len();
    let double = c.cloud.origin != glam::DVec3::ZERO;
    let t = if double { "double" } else { "float" };
    let mut h = format!("ply\nformat binary_little_endian 1.0\ncomment written by pcv\nelement vertex {n}\nproperty {t} x\nproperty {t} y\nproperty {t} z\n");
    if c.rgb.is_some() {
        h.push_str("property uchar red\nproperty uchar green\nproperty uchar blue\n");
    }
    if c.intensity.is_some() {
        h.push_str("property float intensity\n");
    }
    if c.classification.is_some() {
        h.push_str("property uchar classification\n");
    }
    h.push_str("end_header\n");
    w.write_all(h.as_bytes())?;
    write_items(w, n, |i, out| {
        let p = c.source(i);
        if double {
            p.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        } else {
            p.iter().for_each(|v| out.extend_from_slice(&(*v as f32).to_le_bytes()));
        }
        if let Some(rgb) = &c.rgb {
            out.extend_from_slice(&rgb[i][..3]);
        }
        if let Some(v) = c.intensity {
            out.extend_from_slice(&v[i].to_le_bytes());
        }
        if let Some(v) = c.classification {
            out.push(v[i]);
        }
    })
}

/// Decimals that resolve the f32 positions of a cloud this large (at least 1 mm's worth... and at
/// most 9).
fn decimals(cloud: &PointCloud) -> usize {
    let b = cloud.bounds;
    let m = b.min.abs().max(b.max.abs()).max_element().max(1e-6) as f64;
    let ulp = m * f32::EPSILON as f64;
    (-ulp.log10()).ceil().clamp(0.0, 9.0) as usize
}

fn write_text<W: Write>(w: &mut W, c: &Columns, csv: bool) -> std::io::Result<()> {
    let sep = if csv { ',' } else { ' ' };
    let d = decimals(c.cloud);
    // A header line naming the columns (a `//` comment in XYZ files, as CloudCompare writes it).
    let mut names = vec!["x", "y", "z"];
    if c.rgb.is_some() {
        names.extend(["red", "green", "blue"]);
    }
    if c.intensity.is_some() {
        names.push("intensity");
    }
    if c.classification.is_some() {
        names.push("classification");
    }
    let header = if csv { names.join(",") } else { format!("//{}", names.join(" ")) };
    w.write_all(format!("{header}\n").as_bytes())?;
    write_items(w, c.cloud.points.len(), |i, out| {
        use std::fmt::Write as _;
        let p = c.source(i);
        let mut s = String::with_capacity(64);
        let _ = write!(s, "{:.d$}{sep}{:.d$}{sep}{:.d$}", p[0], p[1], p[2]);
        if let Some(rgb) = &c.rgb {
            let _ = write!(s, "{sep}{}{sep}{}{sep}{}", rgb[i][0], rgb[i][1], rgb[i][2]);
        }
        if let Some(v) = c.intensity {
            let _ = write!(s, "{sep}{}", v[i]);
        }
        if let Some(v) = c.classification {
            let _ = write!(s, "{sep}{}", v[i]);
        }
        s.push('\n');
        out.extend_from_slice(s.as_bytes());
    })
}

/// The LAS header fields pcv writes.
struct LasPlan {
    minor: u8,
    format: u8,
    record_len: u16,
    scale: f64,
    offset: [f64; 3],
}

fn las_plan(c: &Columns, path: &Path) -> Result<LasPlan, ConvertError> {
    let n = c.cloud.points.len();
    let b = c.cloud.bounds;
    let o = c.cloud.origin;
    let (min, max) = if b.is_empty() {
        ([0.0; 3], [0.0; 3])
    } else {
        ([o.x + b.min.x as f64, o.y + b.min.y as f64, o.z + b.min.z as f64], [o.x + b.max.x as f64, o.y + b.max.y as f64, o.z + b.max.z as f64])
    };
    let offset = min.map(|v| v.floor());
    let extent = (0..3).map(|k| max[k] - offset[k]).fold(0f64, f64::max);
    let mut scale = 0.001;
    while extent / scale > 2.0e9 {
        scale *= 10.0;
        if scale > 1e6 {
            return Err(ConvertError::TooLarge { path: path.into(), extent });
        }
    }
    let big_class = c.classification.is_some_and(|v| v.par_iter().any(|&k| k > 31));
    let modern = big_class || n > u32::MAX as usize;
    let rgb = c.rgb.is_some();
    let (minor, format, record_len) = match (modern, rgb) {
        (false, false) => (2, 0, 20),
        (false, true) => (2, 2, 26),
        (true, false) => (4, 6, 30),
        (true, true) => (4, 7, 36),
    };
    Ok(LasPlan { minor, format, record_len, scale, offset })
}

fn write_las(w: &mut BufWriter<std::fs::File>, c: &Columns, laz: bool, path: &Path) -> Result<(), ConvertError> {
    let io = |source| ConvertError::Io { path: path.into(), source };
    let plan = las_plan(c, path)?;
    let n = c.cloud.points.len();
    let q = |i: usize| -> [i32; 3] {
        let p = c.source(i);
        std::array::from_fn(|k| ((p[k] - plan.offset[k]) / plan.scale).round() as i32)
    };
    // Bounds of the stored (quantized) coordinates.
    let (qmin, qmax) = (0..n)
        .into_par_iter()
        .fold(
            || ([i32::MAX; 3], [i32::MIN; 3]),
            |(mut lo, mut hi), i| {
                let v = q(i);
                for k in 0..3 {
                    lo[k] = lo[k].min(v[k]);
                    hi[k] = hi[k].max(v[k]);
                }
                (lo, hi)
            },
        )
        .reduce(|| ([i32::MAX; 3], [i32::MIN; 3]), |a, b| (std::array::from_fn(|k| a.0[k].min(b.0[k])), std::array::from_fn(|k| a.1[k].max(b.1[k]))));
    let real = |v: [i32; 3]| -> [f64; 3] { std::array::from_fn(|k| if n == 0 { 0.0 } else { v[k] as f64 * plan.scale + plan.offset[k] }) };
    let (bmin, bmax) = (real(qmin), real(qmax));
    let header_size: u16 = if plan.minor >= 4 { 375 } else { 227 };
    let vlr_bytes = if laz {
        let items = laz::LazItemRecordBuilder::default_for_point_format_id(plan.format, 0)
            .map_err(|e| ConvertError::Laz { path: path.into(), message: e.to_string() })?;
        let vlr = laz::LazVlr::from_laz_items(items);
        let mut data = Vec::new();
        vlr.write_to(&mut data).map_err(io)?;
        let mut v = Vec::with_capacity(54 + data.len());
        v.extend_from_slice(&0u16.to_le_bytes());
        let mut user = [0u8; 16];
        user[..14].copy_from_slice(b"laszip encoded");
        v.extend_from_slice(&user);
        v.extend_from_slice(&22204u16.to_le_bytes());
        v.extend_from_slice(&(data.len() as u16).to_le_bytes());
        let mut desc = [0u8; 32];
        desc[..21].copy_from_slice(b"laz variant by pcv   ");
        v.extend_from_slice(&desc);
        v.extend_from_slice(&data);
        Some((vlr, v))
    } else {
        None
    };
    let data_offset = header_size as u32 + vlr_bytes.as_ref().map(|v| v.1.len() as u32).unwrap_or(0);
    let mut h = Vec::with_capacity(header_size as usize);
    h.extend_from_slice(b"LASF");
    h.extend_from_slice(&0u16.to_le_bytes()); // file source id
    h.extend_from_slice(&0u16.to_le_bytes()); // global encoding
    h.extend_from_slice(&[0u8; 16]); // GUID
    h.extend_from_slice(&[1, plan.minor]);
    let mut name = [0u8; 32];
    name[..3].copy_from_slice(b"pcv");
    h.extend_from_slice(&name);
    let mut sw = [0u8; 32];
    let sw_text = format!("pcv {}", env!("CARGO_PKG_VERSION"));
    sw[..sw_text.len().min(32)].copy_from_slice(&sw_text.as_bytes()[..sw_text.len().min(32)]);
    h.extend_from_slice(&sw);
    h.extend_from_slice(&1u16.to_le_bytes()); // creation day
    h.extend_from_slice(&2026u16.to_le_bytes());
    h.extend_from_slice(&header_size.to_le_bytes());
    h.extend_from_slice(&data_offset.to_le_bytes());
    h.extend_from_slice(&(vlr_bytes.is_some() as u32).to_le_bytes());
    h.push(plan.format | if laz { 0x80 } else { 0 });
    h.extend_from_slice(&plan.record_len.to_le_bytes());
    let legacy = if plan.format >= 6 { 0 } else { n as u32 };
    h.extend_from_slice(&legacy.to_le_bytes());
    h.extend_from_slice(&legacy.to_le_bytes()); // first returns
    h.extend_from_slice(&[0u8; 16]);
    for _ in 0..3 {
        h.extend_from_slice(&plan.scale.to_le_bytes());
    }
    for v in plan.offset {
        h.extend_from_slice(&v.to_le_bytes());
    }
    for k in 0..3 {
        h.extend_from_slice(&bmax[k].to_le_bytes());
        h.extend_from_slice(&bmin[k].to_le_bytes());
    }
    if plan.minor >= 4 {
        h.extend_from_slice(&0u64.to_le_bytes()); // waveform
        h.extend_from_slice(&0u64.to_le_bytes()); // first EVLR
        h.extend_from_slice(&0u32.to_le_bytes()); // EVLR count
        h.extend_from_slice(&(n as u64).to_le_bytes());
        h.extend_from_slice(&(n as u64).to_le_bytes()); // first returns
        h.extend_from_slice(&[0u8; 14 * 8]);
    }
    debug_assert_eq!(h.len(), header_size as usize);
    w.write_all(&h).map_err(io)?;
    if let Some((_, v)) = &vlr_bytes {
        w.write_all(v).map_err(io)?;
    }
    let ser = |i: usize, out: &mut Vec<u8>| {
        let v = q(i);
        v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        let inten = c.intensity.map(|t| t[i].round().clamp(0.0, 65535.0) as u16).unwrap_or(0);
        out.extend_from_slice(&inten.to_le_bytes());
        let class = c.classification.map(|t| t[i]).unwrap_or(0);
        if plan.format < 6 {
            out.push(0b0000_1001); // return 1 of 1
            out.push(class & 0x1f);
            out.extend_from_slice(&[0, 0, 0, 0]); // scan angle, user data, point source id
        } else {
            out.push(0x11); // return 1 of 1
            out.push(0); // flags
            out.push(class);
            out.push(0); // user data
            out.extend_from_slice(&[0; 12]); // scan angle, point source id, gps time
        }
        if let Some(rgb) = &c.rgb {
            for &v in &rgb[i][..3] {
                out.extend_from_slice(&(v as u16 * 257).to_le_bytes());
            }
        }
    };
    match vlr_bytes {
        None => write_items(w, n, ser).map_err(io)?,
        Some((vlr, _)) => {
            // Compress a few chunks' worth of records at a time.
            let mut raw = Vec::new();
            let per = vlr.chunk_size() as usize * 64;
            let mut comp = laz::ParLasZipCompressor::new(&mut *w, vlr).map_err(|e| ConvertError::Laz { path: path.into(), message: e.to_string() })?;
            for start in (0..n).step_by(per.max(1)) {
                let end = (start + per).min(n);
                raw.clear();
                let parts: Vec<Vec<u8>> = (start..end)
                    .into_par_iter()
                    .chunks(1 << 15)
                    .map(|idx| {
                        let mut b = Vec::with_capacity(idx.len() * plan.record_len as usize);
                        idx.into_iter().for_each(|i| ser(i, &mut b));
                        b
                    })
                    .collect();
                parts.iter().for_each(|p| raw.extend_from_slice(p));
                comp.compress_many(&raw).map_err(io)?;
            }
            comp.done().map_err(|e| ConvertError::Laz { path: path.into(), message: e.to_string() })?;
        }
    }
    Ok(())
}
