//! `pcv info`: what is in point files, per file — format and variant, point count, bounds in the
//! file's own coordinates, attributes — the way `pdal info` or `lasinfo` tell it.
//!
//! How it works: each file is opened and decoded exactly as the viewer loads it (same detection, same
//! decoders), relative to an origin near its center, and the report is built from the decoder's
//! [`FileInfo`] (what the header declares and what was read or skipped) and from the points themselves:
//! exact f64 bounds, points dropped for NaN or infinite coordinates, the intensity range and the count
//! of every classification code. [`FileReport`] serializes to JSON for scripts (`--json`);
//! [`FileReport::to_text`] is the human form.
use crate::formats::{DBounds, FieldRequest, FileInfo, Format, Progress};
use crate::load::{self, FileBytes, LoadError};
use rayon::prelude::*;
use std::path::Path;

/// What `pcv info` says about one file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FileReport {
    pub path: String,
    pub format: Format,
    pub file_bytes: u64,
    /// Points read (after dropping invalid ones).
    pub points: u64,
    /// Points dropped for NaN, infinite or invalid coordinates.
    pub dropped: u64,
    /// Exact bounds of the points read, in the file's coordinates (none for an empty file).
    pub bounds: Option<DBounds>,
    /// Intensity range, when the file has intensity.
    pub intensity_range: Option<[f32; 2]>,
    /// Classification codes and their counts, when the file has classification.
    pub classes: Vec<(u8, u64)>,
    /// The other fields (GPS time, returns, ...) and each one's range of values, as `--color-by`
    /// and `--filter` name them (files of up to 30M points; the attributes line names them for all).
    pub fields: Vec<FieldRange>,
    #[serde(flatten)]
    pub info: FileInfo,
    /// For COPC files: the octree, level by level (the points are then counted from the hierarchy and
    /// the bounds are the header's: nothing is decoded, so this is quick for files of any size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub octree: Option<Vec<crate::formats::copc::Level>>,
    /// Its coordinate reference system ([`crate::crs::of_file`]), when it names one.
    pub crs: Option<pcv_model::crs::Crs>,
    /// Why the coordinate system it has could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crs_error: Option<String>,
}

/// One field's range of values in a file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FieldRange {
    pub name: &'static str,
    pub min: f64,
    pub max: f64,
}

/// Reads `path` and reports on it.
pub fn file_report(path: &Path) -> Result<FileReport, LoadError> {
    if let Some(url) = path.to_str().filter(|s| crate::formats::copc::http::is_url(s)) {
        return url_report(url);
    }
    let bytes = FileBytes::open(path)?;
    let data = bytes.bytes();
    let format = load::detect(path, data)?;
    let pts = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pts"));
    // COPC: the octree from the hierarchy; a file whose COPC parts are damaged is read as plain LAZ,
    // with a note saying why.
    let mut copc_note = None;
    if crate::formats::copc::sniff(data) {
        match copc_report(path, data) {
            Ok(r) => return Ok(r),
            Err(e) => copc_note = Some(format!("not readable as COPC, read as plain LAZ: {e}")),
        }
    }
    let origin = load::estimate(data, format, pts).map(|b| load::choose_origin(&b)).unwrap_or_default();
    // Field ranges for files the loader keeps every field of (up to 30M points): a column costs 8
    // bytes a point while decoding, which a billion-point file cannot spend on a report.
    let d = load::decode_file(path, data, format, origin, &Progress::hidden(), FieldRequest::default())?;
    let fields = d
        .fields
        .iter()
        .map(|(f, v)| {
            let (min, max) = v
                .par_iter()
                .filter(|x| x.is_finite())
                .fold(|| (f64::INFINITY, f64::NEG_INFINITY), |a, &x| (a.0.min(x), a.1.max(x)))
                .reduce(|| (f64::INFINITY, f64::NEG_INFINITY), |a, b| (a.0.min(b.0), a.1.max(b.1)));
            FieldRange { name: f.name(), min, max }
        })
        .filter(|r| r.min <= r.max)
        .collect();
    let intensity_range = d.intensity.as_ref().map(|v| {
        v.par_iter()
            .fold(|| [f32::INFINITY, f32::NEG_INFINITY], |a, &x| [a[0].min(x), a[1].max(x)])
            .reduce(|| [f32::INFINITY, f32::NEG_INFINITY], |a, b| [a[0].min(b[0]), a[1].max(b[1])])
    });
    let classes = d
        .classification
        .as_ref()
        .map(|v| {
            let hist = v
                .par_chunks(1 << 16)
                .map(|c| {
                    let mut h = [0u64; 256];
                    c.iter().for_each(|&k| h[k as usize] += 1);
                    h
                })
                .reduce(|| [0u64; 256], |a, b| std::array::from_fn(|i| a[i] + b[i]));
            (0..256).filter(|&k| hist[k] > 0).map(|k| (k as u8, hist[k])).collect()
        })
        .unwrap_or_default();
    Ok(FileReport {
        path: path.display().to_string(),
        format,
        file_bytes: data.len() as u64,
        points: d.points.len() as u64,
        dropped: d.nonfinite,
        bounds: (!d.bounds.is_empty()).then_some(d.bounds),
        intensity_range: intensity_range.filter(|r| r[0] <= r[1]),
        classes,
        fields,
        info: FileInfo { notes: d.info.notes.iter().cloned().chain(copc_note).collect(), ..d.info },
        octree: None,
        crs: None,
        crs_error: None,
    }
    .with_crs(crate::crs::of_file(path, data, format)))
}

/// A COPC file on an HTTP(S) server: header, VLRs and hierarchy, read with range requests.
fn url_report(url: &str) -> Result<FileReport, LoadError> {
    use crate::octree::NodeSource;
    let f = crate::formats::copc::open_copc(url).map_err(|e| LoadError::Format {
        path: url.into(),
        format: Format::Laz,
        source: crate::formats::FormatError::Invalid(e.to_string().trim_start_matches(&format!("{url}: ")).to_string()),
    })?;
    let h = f.header();
    let c = f.info();
    let info = FileInfo {
        variant: format!(
            "LAZ {}.{}, point format {} ({}-byte records), COPC 1.0, over HTTP",
            h.version.0, h.version.1, h.format, h.record_len
        ),
        declared_points: Some(h.count),
        attributes: Vec::new(),
        skipped: Vec::new(),
        header_bounds: None,
        notes: vec![
            format!("scale {}", pcv_model::number::readable3(h.scale)),
            format!("offset {}", pcv_model::number::readable3(h.offset)),
            format!(
                "COPC cube: center {} {} {}, half size {}, root spacing {}; hierarchy at byte {} ({} bytes)",
                num(c.center[0]),
                num(c.center[1]),
                num(c.center[2]),
                num(c.halfsize),
                num(c.spacing),
                c.root_hier_offset,
                c.root_hier_size
            ),
        ],
    };
    Ok(FileReport {
        path: url.to_string(),
        format: Format::Laz,
        file_bytes: f.file_len(),
        points: f.octree().total_points(),
        dropped: 0,
        bounds: Some(DBounds { min: h.min, max: h.max }).filter(|b| !b.is_empty()),
        intensity_range: None,
        fields: Vec::new(),
        classes: Vec::new(),
        info,
        octree: Some(f.levels()),
        crs: None,
        crs_error: None,
    }
    .with_crs(
        f.crs()
            .map(|r| r.map_err(|e| crate::crs::CrsError::Unreadable { read_from: "the COPC VLRs".into(), message: e })),
    ))
}

/// A COPC file's report: header, VLRs and hierarchy only.
fn copc_report(path: &Path, data: &[u8]) -> Result<FileReport, LoadError> {
    use crate::formats::copc::CopcFile;
    use crate::octree::NodeSource;
    let fail = |e: String| LoadError::Format {
        path: path.into(),
        format: Format::Laz,
        source: crate::formats::FormatError::Invalid(e),
    };
    let src = crate::formats::las::open(data).map_err(|source| LoadError::Format {
        path: path.into(),
        format: Format::Laz,
        source,
    })?;
    let f = CopcFile::open(std::sync::Arc::new(
        crate::formats::copc::FileSource::open(path).map_err(|e| fail(e.to_string()))?,
    ))
    .map_err(|e| {
        let m = e.to_string();
        let prefix = format!("{}: ", path.display());
        fail(m.strip_prefix(&prefix).unwrap_or(&m).to_string())
    })?;
    let h = f.header();
    let mut info = crate::stream::ChunkSource::info(&src);
    info.variant = info.variant.replace(", COPC (read as plain LAZ)", ", COPC 1.0");
    let c = f.info();
    info.notes.push(format!(
        "COPC cube: center {} {} {}, half size {}, root spacing {}; hierarchy at byte {} ({} bytes)",
        num(c.center[0]),
        num(c.center[1]),
        num(c.center[2]),
        num(c.halfsize),
        num(c.spacing),
        c.root_hier_offset,
        c.root_hier_size
    ));
    Ok(FileReport {
        path: path.display().to_string(),
        format: Format::Laz,
        file_bytes: data.len() as u64,
        points: f.octree().total_points(),
        dropped: 0,
        bounds: Some(DBounds { min: h.min, max: h.max }).filter(|b| !b.is_empty()),
        intensity_range: None,
        fields: Vec::new(),
        classes: Vec::new(),
        info,
        octree: Some(f.levels()),
        crs: None,
        crs_error: None,
    }
    .with_crs(crate::crs::of_file(path, data, Format::Laz)))
}

/// A number without float noise: at most 9 decimals, trailing zeros dropped.
fn num(v: f64) -> String {
    let s = format!("{v:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// Continuation lines line up under the value column.
const INDENT: &str = "\n              ";

fn fmt_bounds(b: &DBounds) -> String {
    let v = |a: [f64; 3]| a.map(num).join(" ");
    format!("min {}{INDENT}max {}{INDENT}size {}", v(b.min), v(b.max), v(std::array::from_fn(|k| b.max[k] - b.min[k])))
}

impl FileReport {
    fn with_crs(mut self, crs: Option<Result<pcv_model::crs::Crs, crate::crs::CrsError>>) -> FileReport {
        match crs {
            Some(Ok(c)) => self.crs = Some(c),
            Some(Err(e)) => self.crs_error = Some(e.to_string()),
            None => {}
        }
        self
    }

    /// The human-readable report.
    pub fn to_text(&self) -> String {
        let mut s = format!("{}\n", self.path);
        let mut line = |k: &str, v: String| s.push_str(&format!("  {k:<11} {v}\n"));
        line("format", format!("{} ({})", self.format, self.info.variant));
        line("size", format!("{} bytes", self.file_bytes));
        let declared = match self.info.declared_points {
            Some(d) if d != self.points + self.dropped => format!(" (header declares {d})"),
            _ => String::new(),
        };
        line("points", format!("{}{declared}", self.points));
        if self.dropped > 0 {
            line("dropped", format!("{} with NaN, infinite or invalid coordinates", self.dropped));
        }
        match (&self.crs, &self.crs_error) {
            (Some(c), _) => {
                line("crs", format!("{}{INDENT}read from {}", c.summary(), c.read_from));
                let u = c.units();
                line(
                    "units",
                    match c.kind {
                        pcv_model::crs::CrsKind::Geographic => format!(
                            "longitude and latitude in degrees, heights in {} (the viewer draws a local east-north-up frame in metres)",
                            u.vertical.symbol()
                        ),
                        pcv_model::crs::CrsKind::Geocentric => {
                            "Earth-centred X, Y, Z in m (the viewer draws a local east-north-up frame in metres)".into()
                        }
                        _ => format!(
                            "{} across ({}), {} up ({})",
                            u.horizontal.symbol(),
                            u.horizontal.name(),
                            u.vertical.symbol(),
                            u.vertical.name()
                        ),
                    },
                );
            }
            (None, Some(e)) => line("crs", format!("not readable: {e}")),
            (None, None) => {
                line("crs", "none named (lengths have no unit; --crs EPSG:N or a .prj beside the file names it)".into())
            }
        }
        if let Some(b) = &self.bounds {
            line("bounds", fmt_bounds(b));
        }
        if let Some(b) = &self.info.header_bounds {
            let v = |a: [f64; 3]| a.map(num).join(" ");
            line("declared", format!("min {}{INDENT}max {} (bounds in the header)", v(b.min), v(b.max)));
        }
        line("attributes", self.info.attributes.join(", "));
        if let Some(r) = self.intensity_range {
            line("intensity", format!("{} .. {}", r[0], r[1]));
        }
        if !self.classes.is_empty() {
            line("classes", self.classes.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(", "));
        }
        for f in &self.fields {
            line(f.name, format!("{} .. {}", num(f.min), num(f.max)));
        }
        if !self.info.skipped.is_empty() {
            line("skipped", self.info.skipped.join(", "));
        }
        for n in &self.info.notes {
            line("note", n.clone());
        }
        if let Some(levels) = &self.octree {
            let nodes: u64 = levels.iter().map(|l| l.nodes).sum();
            line(
                "octree",
                format!(
                    "depth {}, {nodes} nodes (points counted from the hierarchy; not decoded)",
                    levels.len().saturating_sub(1)
                ),
            );
            for l in levels {
                line(
                    "",
                    format!(
                        "level {:>2}: {:>7} nodes ({} with points), {:>12} points, {:>12} bytes, spacing {}",
                        l.depth,
                        l.nodes,
                        l.nodes_with_points,
                        l.points,
                        l.bytes,
                        num(l.spacing)
                    ),
                );
            }
        }
        s
    }
}
