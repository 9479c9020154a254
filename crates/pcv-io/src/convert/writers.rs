//! Writers of exact point values: PLY, XYZ/CSV text and LAS/LAZ from any input format.
//!
//! How it works: [`read_exact`] decodes a file with the exact columns kept ([`crate::stream`]'s
//! `keep_f64`): each point's f64 coordinates in the file's own coordinates as its decoder computed
//! them, its color at 16 bits, intensity and classification, and the file's [`Precision`]. A point
//! with a NaN or infinite coordinate is an error naming it. [`write`] serializes the files in order,
//! a few million points at a time in parallel:
//! - text: each coordinate at its file's precision — a LAS scale of 10^-d as d decimals (otherwise the
//!   fewest decimals under the scale, so the integer comes back), an f32 as the shortest text that
//!   reads back as the same f32, an f64 as the shortest that reads back as the same f64; colors as
//!   0–255 when every 16-bit value is an 8-bit one × 257, else as 0–65535;
//! - PLY (binary little endian): float coordinates when every coordinate is exactly an f32, double
//!   otherwise; uchar or ushort colors by the same rule as text; float intensity; uchar classification;
//! - LAS/LAZ from other formats: point format 0/2 (LAS 1.2) or 6/7 (LAS 1.4, with the WKT bit, when a
//!   class is above 31 or there are more than 2^32 - 1 points), 16-bit colors, each axis at the finest
//!   power-of-ten scale (at least 1 µm) for which the extent fits 31 bits, offset at the minimum
//!   (floored); a coordinate that would not fit is an error naming the point.
use super::ConvertError;
use crate::formats::{Format, Progress};
use crate::load;
use crate::stream::{stream_with, Precision, Staging, StreamError, Verdict};
use rayon::prelude::*;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

/// One file's exact values.
#[derive(Clone, Debug, Default)]
pub struct FileColumns {
    pub path: PathBuf,
    pub xyz: Vec<[f64; 3]>,
    pub rgb16: Option<Vec<[u16; 3]>>,
    pub intensity: Option<Vec<f32>>,
    pub classification: Option<Vec<u8>>,
    /// The other fields kept ([`crate::formats::Field`]: GPS time, returns, ...): one value a point.
    pub fields: Vec<(crate::formats::Field, Vec<f64>)>,
    pub precision: Option<Precision>,
}

impl FileColumns {
    /// Keeps the points `keep` says yes to (given each point's class, intensity and position), in order.
    pub fn retain(&mut self, keep: impl Fn(&pcv_model::filter::PointValues) -> bool) {
        let no_field = |_: crate::formats::Field| f64::NAN;
        let mask: Vec<bool> = (0..self.len())
            .map(|i| {
                keep(&pcv_model::filter::PointValues {
                    class: self.classification.as_ref().map_or(0, |c| c[i]),
                    intensity: self.intensity.as_ref().map_or(f64::NAN, |v| v[i] as f64),
                    field: &no_field,
                    pos: glam::DVec3::from_array(self.xyz[i]),
                })
            })
            .collect();
        use crate::subsample::keep_masked as thin;
        thin(&mut self.xyz, &mask);
        if let Some(v) = self.rgb16.as_mut() {
            thin(v, &mask);
        }
        if let Some(v) = self.intensity.as_mut() {
            thin(v, &mask);
        }
        if let Some(v) = self.classification.as_mut() {
            thin(v, &mask);
        }
        for (_, v) in &mut self.fields {
            thin(v, &mask);
        }
    }

    /// Field `f` of point `i` (NaN where the file has none).
    fn field(&self, f: crate::formats::Field, i: usize) -> f64 {
        self.fields.iter().find(|(g, _)| *g == f).map_or(f64::NAN, |(_, v)| v[i])
    }
}

impl FileColumns {
    fn len(&self) -> usize {
        self.xyz.len()
    }
}

/// Decodes `data` (`path`, of `format`) keeping its exact values.
pub fn read_exact(
    path: &Path,
    data: &[u8],
    format: Format,
    pts: bool,
    progress: &Progress,
) -> Result<FileColumns, ConvertError> {
    let input = |source| ConvertError::Input { path: path.into(), source };
    let r = crate::formats::catch_quietly(|| -> Result<FileColumns, ConvertError> {
        let src = load::open_source(data, format, pts).map_err(input)?;
        progress.add_total(src.reserve_points());
        loop {
            let cols = src.columns();
            let mut f = FileColumns {
                path: path.into(),
                rgb16: src.has_rgb().then(Vec::new),
                intensity: cols.intensity.then(Vec::new),
                classification: cols.classification.then(Vec::new),
                ..Default::default()
            };
            let stats =
                stream_with(&*src, &[0.0; 3], progress, true, &mut |st: &Staging| -> Result<(), ConvertError> {
                    if st.first_nonfinite.is_some() {
                        return Ok(()); // reported below, with its index in the file
                    }
                    f.xyz.extend_from_slice(&st.xyz64);
                    if let Some(c) = &mut f.rgb16 {
                        if st.colorless {
                            c.extend(std::iter::repeat_n([0u16; 3], st.len()));
                        } else {
                            c.extend_from_slice(&st.rgb16);
                        }
                    }
                    if let Some(v) = &mut f.intensity {
                        v.extend_from_slice(&st.intensity);
                    }
                    if let Some(v) = &mut f.classification {
                        v.extend_from_slice(&st.classification);
                    }
                    Ok(())
                })
                .map_err(|e| match e {
                    StreamError::Decode(source) => input(source),
                    StreamError::Sink(e) => e,
                })?;
            if let Some(point) = stats.first_nonfinite {
                return Err(ConvertError::NonFinite { path: path.into(), point });
            }
            if src.finish(&stats).map_err(input)? == Verdict::Done {
                // Known once every point was read (text's decimals).
                f.precision = Some(src.precision());
                return Ok(f);
            }
        }
    });
    r.unwrap_or_else(|m| {
        Err(input(crate::formats::FormatError::Invalid(format!("the decoder failed on this file ({m})"))))
    })
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

/// What every file has, and how the output stores it.
struct Plan {
    rgb: bool,
    /// Colors need 16 bits (some value is not an 8-bit one × 257).
    rgb_wide: bool,
    intensity: bool,
    classification: bool,
    /// Every coordinate is exactly an f32.
    f32_exact: bool,
}

fn plan(files: &[FileColumns]) -> Plan {
    let rgb = files.iter().any(|f| f.rgb16.is_some());
    let rgb_wide =
        files.iter().filter_map(|f| f.rgb16.as_ref()).any(|c| c.par_iter().any(|v| v.iter().any(|x| x % 257 != 0)));
    let f32_exact = files.iter().all(|f| {
        f.precision == Some(Precision::F32) || f.xyz.par_iter().all(|p| p.iter().all(|&v| v as f32 as f64 == v))
    });
    Plan {
        rgb,
        rgb_wide,
        intensity: files.iter().any(|f| f.intensity.is_some()),
        classification: files.iter().any(|f| f.classification.is_some()),
        f32_exact,
    }
}

/// Writes `files` in order as `format` (not raw records); returns the points written.
/// Returns the points written and, for LAS/LAZ, the grid (scale per axis) the coordinates were put on.
pub fn write<W: Write + Seek + Send + Sync>(
    files: &[FileColumns],
    format: super::OutFormat,
    w: &mut W,
) -> Result<(u64, Option<[f64; 3]>), ConvertError> {
    use super::OutFormat;
    let io = |e: std::io::Error| ConvertError::Write(e.to_string());
    let p = plan(files);
    let grid = match format {
        OutFormat::Ply => write_ply(w, files, &p).map(|_| None).map_err(io)?,
        OutFormat::Xyz => write_text(w, files, &p, false).map(|_| None).map_err(io)?,
        OutFormat::Csv => write_text(w, files, &p, true).map(|_| None).map_err(io)?,
        OutFormat::Las | OutFormat::Laz => Some(write_las(w, files, &p, format == OutFormat::Laz)?),
        OutFormat::Raw | OutFormat::Copc => {
            return Err(ConvertError::Write("raw records and COPC are not written from columns in memory".into()))
        }
    };
    Ok((files.iter().map(|f| f.len() as u64).sum(), grid))
}

fn write_ply<W: Write>(w: &mut W, files: &[FileColumns], p: &Plan) -> std::io::Result<()> {
    let n: usize = files.iter().map(FileColumns::len).sum();
    let t = if p.f32_exact { "float" } else { "double" };
    let mut h = format!("ply\nformat binary_little_endian 1.0\ncomment written by pcv\nelement vertex {n}\nproperty {t} x\nproperty {t} y\nproperty {t} z\n");
    if p.rgb {
        let c = if p.rgb_wide { "ushort" } else { "uchar" };
        h.push_str(&format!("property {c} red\nproperty {c} green\nproperty {c} blue\n"));
    }
    if p.intensity {
        h.push_str("property float intensity\n");
    }
    if p.classification {
        h.push_str("property uchar classification\n");
    }
    h.push_str("end_header\n");
    w.write_all(h.as_bytes())?;
    for f in files {
        write_items(w, f.len(), |i, out| {
            let v = f.xyz[i];
            if p.f32_exact {
                v.iter().for_each(|c| out.extend_from_slice(&(*c as f32).to_le_bytes()));
            } else {
                v.iter().for_each(|c| out.extend_from_slice(&c.to_le_bytes()));
            }
            if p.rgb {
                let c = f.rgb16.as_ref().map_or([0; 3], |c| c[i]);
                if p.rgb_wide {
                    c.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
                } else {
                    out.extend(c.iter().map(|x| (x / 257) as u8));
                }
            }
            if p.intensity {
                out.extend_from_slice(&f.intensity.as_ref().map_or(0.0, |v| v[i]).to_le_bytes());
            }
            if p.classification {
                out.push(f.classification.as_ref().map_or(0, |v| v[i]));
            }
        })?;
    }
    Ok(())
}

/// Decimals that write multiples of `scale` so that the multiple comes back: `d` for a scale of
/// 10^-d, else the fewest below the scale (rounding then moves a value by less than half a step).
pub fn decimals_for_scale(scale: f64) -> usize {
    let s = scale.abs();
    if !(s > 0.0 && s.is_finite()) {
        return 17;
    }
    (-(s.log10()) - 1e-9).ceil().clamp(0.0, 17.0) as usize
}

/// Appends `v` at precision `prec` (axis `k`).
fn push_coord(s: &mut String, v: f64, prec: Precision, k: usize) {
    use std::fmt::Write as _;
    let _ = match prec {
        Precision::Scaled(scale) => {
            let d = decimals_for_scale(scale[k]);
            write!(s, "{v:.d$}")
        }
        Precision::F32 => write!(s, "{}", v as f32),
        // Text's values as parsed: the shortest text of the same f64 is the number as it was written
        // (without trailing zeros).
        Precision::F64 | Precision::Decimals(_) => write!(s, "{v}"),
    };
}

fn write_text<W: Write>(w: &mut W, files: &[FileColumns], p: &Plan, csv: bool) -> std::io::Result<()> {
    let sep = if csv { ',' } else { ' ' };
    // A header line naming the columns (a `//` comment in XYZ files, as CloudCompare writes it).
    let mut names = vec!["x", "y", "z"];
    if p.rgb {
        names.extend(["red", "green", "blue"]);
    }
    if p.intensity {
        names.push("intensity");
    }
    if p.classification {
        names.push("classification");
    }
    let header = if csv { names.join(",") } else { format!("//{}", names.join(" ")) };
    w.write_all(format!("{header}\n").as_bytes())?;
    for f in files {
        let prec = f.precision.unwrap_or(Precision::F64);
        write_items(w, f.len(), |i, out| {
            use std::fmt::Write as _;
            let mut s = String::with_capacity(80);
            for k in 0..3 {
                if k > 0 {
                    s.push(sep);
                }
                push_coord(&mut s, f.xyz[i][k], prec, k);
            }
            if p.rgb {
                let c = f.rgb16.as_ref().map_or([0; 3], |c| c[i]);
                let c = if p.rgb_wide { c } else { c.map(|x| x / 257) };
                let _ = write!(s, "{sep}{}{sep}{}{sep}{}", c[0], c[1], c[2]);
            }
            if p.intensity {
                let _ = write!(s, "{sep}{}", f.intensity.as_ref().map_or(0.0, |v| v[i]));
            }
            if p.classification {
                let _ = write!(s, "{sep}{}", f.classification.as_ref().map_or(0, |v| v[i]));
            }
            s.push('\n');
            out.extend_from_slice(s.as_bytes());
        })?;
    }
    Ok(())
}

/// Power-of-ten scales, as literals: `10f64.powi(e)` is not correctly rounded everywhere (MinGW's
/// gives 1.0000000000000008e-8), and the scale is written into the file.
const SCALES: [f64; 25] = [
    1e-12, 1e-11, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7,
    1e8, 1e9, 1e10, 1e11, 1e12,
];

/// The finest grid step LAS output needs for coordinates of `precision` up to `max_abs` in magnitude:
/// 1 µm (finer than any scanner) for doubles, LAS sources (whose scales are coarser) and text of up
/// to 6 decimals; text's own decimals beyond that (8 decimals: 1e-8, at most 1e-12); for
/// 32-bit floats as fine as the extent allows, so every value whose float spacing is wider than the
/// step reads back as the same f32 (values nearer 0 than about 2²³ steps move by half a step at most).
pub fn finest_step(precision: Option<Precision>, k: usize) -> f64 {
    match precision {
        // As fine as the extent allows ([`axis_grid`] picks within 31 bits).
        Some(Precision::F32) => SCALES[0],
        Some(Precision::Scaled(s)) if s[k] > 0.0 => s[k].clamp(SCALES[0], 1e-6),
        // Text's own decimals: 8 of them need a 1e-8 grid (when the extent fits 31 bits of it).
        Some(Precision::Decimals(d)) => SCALES[12 - usize::from(d[k]).min(12)].min(1e-6),
        _ => 1e-6,
    }
}

/// Scale and offset of one axis spanning `min..=max`: the finest power-of-ten scale no finer than
/// `finest` ([`finest_step`]) whose steps from the floored minimum reach the maximum within 31 bits.
pub fn axis_grid(min: f64, max: f64, finest: f64) -> Option<(f64, f64)> {
    let offset = if min.is_finite() { min.floor() } else { 0.0 };
    let extent = (max - offset).max(0.0);
    SCALES.into_iter().filter(|&s| s >= finest * (1.0 - 1e-9)).find(|s| extent / s < 2.0e9).map(|s| (s, offset))
}

/// The date as LAS stores it: (day of the year, year).
pub(crate) fn today() -> (u16, u16) {
    let days =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 86_400).unwrap_or(0)
            as i64;
    // Civil-from-days (Howard Hinnant's algorithm), then the day of the year.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy_mar = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy_mar + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let before =
        [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334][(month - 1) as usize] + i64::from(leap && month > 2);
    let day = doy_mar - (153 * mp + 2) / 5 + 1;
    ((before + day) as u16, year as u16)
}

fn write_las<W: Write + Seek + Send + Sync>(
    w: &mut W,
    files: &[FileColumns],
    p: &Plan,
    laz: bool,
) -> Result<[f64; 3], ConvertError> {
    let io = |e: std::io::Error| ConvertError::Write(e.to_string());
    let n: usize = files.iter().map(FileColumns::len).sum();
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    for f in files {
        let (a, b) = f
            .xyz
            .par_iter()
            .fold(
                || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
                |(mut a, mut b), v| {
                    for k in 0..3 {
                        a[k] = a[k].min(v[k]);
                        b[k] = b[k].max(v[k]);
                    }
                    (a, b)
                },
            )
            .reduce(
                || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
                |x, y| (std::array::from_fn(|k| x.0[k].min(y.0[k])), std::array::from_fn(|k| x.1[k].max(y.1[k]))),
            );
        for k in 0..3 {
            lo[k] = lo[k].min(a[k]);
            hi[k] = hi[k].max(b[k]);
        }
    }
    let mut scale = [0.001; 3];
    let mut offset = [0.0; 3];
    for k in 0..3 {
        if n > 0 {
            let finest = files.iter().map(|f| finest_step(f.precision, k)).fold(1e-6, f64::min);
            let (s, o) = axis_grid(lo[k], hi[k], finest).ok_or_else(|| {
                ConvertError::Write(format!("the extent {}..{} does not fit LAS's 32-bit coordinates", lo[k], hi[k]))
            })?;
            scale[k] = s;
            offset[k] = o;
        }
    }
    let big_class = files.iter().filter_map(|f| f.classification.as_ref()).any(|v| v.par_iter().any(|&k| k > 31));
    // Other fields (GPS time, returns, ...) are written in the LAS 1.4 formats, which hold them all.
    let has_fields = files.iter().any(|f| !f.fields.is_empty());
    let modern = big_class || has_fields || n > u32::MAX as usize;
    let (minor, format, record_len): (u8, u8, u16) = match (modern, p.rgb) {
        (false, false) => (2, 0, 20),
        (false, true) => (2, 2, 26),
        (true, false) => (4, 6, 30),
        (true, true) => (4, 7, 36),
    };
    // Quantize, checking every point fits.
    let q = |v: [f64; 3]| -> Option<[i32; 3]> {
        let r: [f64; 3] = std::array::from_fn(|k| ((v[k] - offset[k]) / scale[k]).round());
        r.iter().all(|x| x.abs() < 2_147_483_647.0).then(|| r.map(|x| x as i32))
    };
    for f in files {
        if let Some(i) = f.xyz.par_iter().position_first(|v| q(*v).is_none()) {
            return Err(ConvertError::Point {
                path: f.path.clone(),
                point: i as u64,
                what: format!("{:?} does not fit LAS's 32-bit coordinates at scale {scale:?}", f.xyz[i]),
            });
        }
    }
    let header_size: u16 = if minor >= 4 { 375 } else { 227 };
    let laz_vlr = if laz {
        let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, 0)
            .map_err(|e| ConvertError::Laz(e.to_string()))?;
        Some(laz::LazVlr::from_laz_items(items))
    } else {
        None
    };
    let vlr_record = match &laz_vlr {
        Some(v) => {
            let mut data = Vec::new();
            v.write_to(&mut data).map_err(io)?;
            let mut r = Vec::with_capacity(54 + data.len());
            r.extend_from_slice(&0u16.to_le_bytes());
            let mut user = [0u8; 16];
            user[..14].copy_from_slice(b"laszip encoded");
            r.extend_from_slice(&user);
            r.extend_from_slice(&22204u16.to_le_bytes());
            r.extend_from_slice(&(data.len() as u16).to_le_bytes());
            let mut desc = [0u8; 32];
            desc[..10].copy_from_slice(b"pcv by laz");
            r.extend_from_slice(&desc);
            r.extend_from_slice(&data);
            r
        }
        None => Vec::new(),
    };
    let data_offset = header_size as u32 + vlr_record.len() as u32;
    let (day, year) = today();
    let mut h = Vec::with_capacity(header_size as usize);
    h.extend_from_slice(b"LASF");
    h.extend_from_slice(&0u16.to_le_bytes()); // file source id
    let global: u16 = if format >= 6 { 1 << 4 } else { 0 }; // LAS 1.4 formats 6-10 require the WKT bit
    h.extend_from_slice(&global.to_le_bytes());
    h.extend_from_slice(&[0u8; 16]); // GUID
    h.extend_from_slice(&[1, minor]);
    let mut name = [0u8; 32];
    name[..3].copy_from_slice(b"pcv");
    h.extend_from_slice(&name);
    let mut sw = [0u8; 32];
    let sw_text = format!("pcv {}", env!("CARGO_PKG_VERSION"));
    sw[..sw_text.len().min(32)].copy_from_slice(&sw_text.as_bytes()[..sw_text.len().min(32)]);
    h.extend_from_slice(&sw);
    h.extend_from_slice(&day.to_le_bytes());
    h.extend_from_slice(&year.to_le_bytes());
    h.extend_from_slice(&header_size.to_le_bytes());
    h.extend_from_slice(&data_offset.to_le_bytes());
    h.extend_from_slice(&u32::from(laz).to_le_bytes());
    h.push(format | if laz { 0x80 } else { 0 });
    h.extend_from_slice(&record_len.to_le_bytes());
    let legacy = if format >= 6 { 0 } else { n as u32 };
    h.extend_from_slice(&legacy.to_le_bytes());
    h.extend_from_slice(&legacy.to_le_bytes()); // all first returns
    h.extend_from_slice(&[0u8; 16]);
    for s in scale {
        h.extend_from_slice(&s.to_le_bytes());
    }
    for o in offset {
        h.extend_from_slice(&o.to_le_bytes());
    }
    // Rounding is monotonic: the stored bounds are the extremes' quantized values.
    let (qlo, qhi) = (q(lo).unwrap_or([0; 3]), q(hi).unwrap_or([0; 3]));
    for k in 0..3 {
        let real = |v: i32| if n == 0 { 0.0 } else { v as f64 * scale[k] + offset[k] };
        h.extend_from_slice(&real(qhi[k]).to_le_bytes());
        h.extend_from_slice(&real(qlo[k]).to_le_bytes());
    }
    if minor >= 4 {
        h.extend_from_slice(&0u64.to_le_bytes()); // waveform
        h.extend_from_slice(&0u64.to_le_bytes()); // first EVLR
        h.extend_from_slice(&0u32.to_le_bytes()); // EVLR count
        h.extend_from_slice(&(n as u64).to_le_bytes());
        h.extend_from_slice(&(n as u64).to_le_bytes()); // all first returns
        h.extend_from_slice(&[0u8; 14 * 8]);
    }
    debug_assert_eq!(h.len(), header_size as usize);
    w.write_all(&h).map_err(io)?;
    w.write_all(&vlr_record).map_err(io)?;
    let ser = |f: &FileColumns, i: usize, out: &mut Vec<u8>| {
        let v = q(f.xyz[i]).unwrap_or([0; 3]);
        v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        let inten = f.intensity.as_ref().map_or(0, |t| t[i].round().clamp(0.0, 65535.0) as u16);
        out.extend_from_slice(&inten.to_le_bytes());
        let class = f.classification.as_ref().map_or(0, |t| t[i]);
        if format < 6 {
            out.push(0b0000_1001); // return 1 of 1
            out.push(class & 0x1f);
            out.extend_from_slice(&[0, 0, 0, 0]); // scan angle, user data, point source id
        } else {
            use crate::formats::Field as F;
            let int = |x: F, lo: f64, hi: f64, default: f64| {
                let v = f.field(x, i);
                if v.is_finite() {
                    v.round().clamp(lo, hi)
                } else {
                    default
                }
            };
            let (r, nr) = (int(F::ReturnNumber, 0.0, 15.0, 1.0) as u8, int(F::NumberOfReturns, 0.0, 15.0, 1.0) as u8);
            out.push(r | (nr << 4));
            out.push(0); // flags
            out.push(class);
            out.push(int(F::UserData, 0.0, 255.0, 0.0) as u8);
            let angle = f.field(F::ScanAngle, i);
            let angle = if angle.is_finite() { (angle / 0.006).round().clamp(-30000.0, 30000.0) as i16 } else { 0 };
            out.extend_from_slice(&angle.to_le_bytes());
            out.extend_from_slice(&(int(F::PointSourceId, 0.0, 65535.0, 0.0) as u16).to_le_bytes());
            let t = f.field(F::GpsTime, i);
            out.extend_from_slice(&(if t.is_finite() { t } else { 0.0 }).to_le_bytes());
        }
        if p.rgb {
            let c = f.rgb16.as_ref().map_or([0; 3], |c| c[i]);
            c.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()));
        }
    };
    match laz_vlr {
        None => {
            for f in files {
                write_items(w, f.len(), |i, out| ser(f, i, out)).map_err(io)?;
            }
        }
        Some(vlr) => {
            let per = vlr.chunk_size() as usize * 2 * rayon::current_num_threads();
            let mut comp = laz::ParLasZipCompressor::new(&mut *w, vlr).map_err(|e| ConvertError::Laz(e.to_string()))?;
            let mut raw = Vec::new();
            for f in files {
                for start in (0..f.len()).step_by(per.max(1)) {
                    let end = (start + per).min(f.len());
                    let parts: Vec<Vec<u8>> = (start..end)
                        .into_par_iter()
                        .chunks(1 << 15)
                        .map(|idx| {
                            let mut b = Vec::with_capacity(idx.len() * record_len as usize);
                            idx.into_iter().for_each(|i| ser(f, i, &mut b));
                            b
                        })
                        .collect();
                    raw.clear();
                    parts.iter().for_each(|p| raw.extend_from_slice(p));
                    comp.compress_many(&raw).map_err(io)?;
                }
            }
            comp.done().map_err(|e| ConvertError::Laz(e.to_string()))?;
        }
    }
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_bring_the_integers_back() {
        assert_eq!(decimals_for_scale(0.01), 2);
        assert_eq!(decimals_for_scale(0.001), 3);
        assert_eq!(decimals_for_scale(1.16e-6), 6);
        assert_eq!(decimals_for_scale(1.0), 0);
        for scale in [0.01, 0.001, 1.16e-6, 0.25, 3e-7] {
            let d = decimals_for_scale(scale);
            for i in [-2_000_000_000i64, -7, 0, 1, 12_345_678, 2_147_483_647] {
                let v = i as f64 * scale + 512_345.0;
                let text = format!("{v:.d$}");
                let back = ((text.parse::<f64>().unwrap() - 512_345.0) / scale).round() as i64;
                assert_eq!(back, i, "scale {scale}: {i} written as {text}");
            }
        }
    }

    #[test]
    fn grids_fit_31_bits() {
        assert_eq!(axis_grid(512_000.25, 513_000.75, 1e-6), Some((1e-6, 512_000.0)));
        assert_eq!(axis_grid(0.0, 0.15, 1e-6), Some((1e-6, 0.0)));
        assert_eq!(axis_grid(500_000.0, 500_010.0, 1e-6), Some((1e-6, 500_000.0)));
        assert_eq!(axis_grid(-5.5, 4e9, 1e-6), Some((10.0, -6.0)));
        // 32-bit floats of a 0.2 m object: the finest grid its extent (from the floored minimum) allows.
        let f = finest_step(Some(Precision::F32), 0);
        assert_eq!(axis_grid(-0.1, 0.1, f), Some((1e-9, -1.0)));
        assert_eq!(axis_grid(0.0, 0.15, f), Some((1e-10, 0.0)));
        assert_eq!(finest_step(Some(Precision::Scaled([0.01, 0.01, 0.001])), 2), 1e-6);
        assert_eq!(finest_step(None, 0), 1e-6);
        let (lo, hi) = (today().0, today().1);
        assert!((1..=366).contains(&lo) && hi >= 2024);
    }
}
