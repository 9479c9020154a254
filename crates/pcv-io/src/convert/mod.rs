//! `pcv convert`: read point files (any format pcv reads, several merged) and write one file as PLY,
//! LAS, LAZ, XYZ/TXT/CSV or raw records, losing nothing the target can hold.
//!
//! How it works: LAS/LAZ inputs written as LAS/LAZ go through [`las_copy`]: their records pass
//! through byte for byte, with the point format, scale, offset, every field, the VLRs and EVLRs (CRS
//! included). Every other pair decodes the inputs' exact values — f64 coordinates in the file's own
//! coordinates as the decoder computed them (LAS: integer × scale + offset), 16-bit colors, intensity
//! and classification — never pcv's 16-byte view points (f32, 8-bit colors), and [`writers`] writes
//! them: text at each file's own precision, PLY as float when every coordinate is exactly an f32 and
//! as double otherwise, LAS/LAZ from other formats at the finest power-of-ten scale that fits the
//! extent. Raw records (`.bin`, `.pcv`) hold the viewer's local f32 positions, so they go through the
//! loader (the origin is lost). A point with a NaN or infinite coordinate is an error naming the file
//! and the point; nothing is written for it.
//!
//! The output is written to a temporary file next to it (`.NAME.pcv-partial-PID`) that is renamed
//! over `OUT` only when everything was written, so a failed convert leaves a previous `OUT` as it
//! was; `-o` naming one of the inputs is refused before anything is read.
pub mod copc;
pub mod las_copy;
pub mod temp;
pub mod writers;

use crate::filter::PointFilter;
use crate::formats::{FormatError, Progress};
use crate::load::{self, FileBytes, LoadError, LoadOptions};
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
    /// COPC 1.0 (`.copc.laz`): LAZ whose chunks are the nodes of an octree ([`copc`]).
    Copc,
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{path}: {source}")]
    Input { path: PathBuf, source: FormatError },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("writing: {0}")]
    Write(String),
    #[error("{path}: cannot write format '{ext}' (pcv writes .ply .las .laz .copc.laz .xyz .txt .asc .csv .bin .pcv)")]
    UnsupportedOutput { path: PathBuf, ext: String },
    #[error("LAZ compression: {0}")]
    Laz(String),
    #[error("{path}: the output is one of the inputs; pcv convert does not overwrite its input (choose another -o)")]
    OutputIsInput { path: PathBuf },
    #[error("{path}: cannot be merged with {first} without losing data: {what}")]
    Merge { path: PathBuf, first: PathBuf, what: String },
    #[error("{path}: point {point} has a NaN or infinite coordinate; pcv convert writes no such point (the viewer leaves them out)")]
    NonFinite { path: PathBuf, point: u64 },
    #[error("{path}: point {point}: {what}")]
    Point { path: PathBuf, point: u64, what: String },
}

/// The output format for `path`'s extension.
pub fn out_format(path: &Path) -> Result<OutFormat, ConvertError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let name = path.file_name().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    if name.ends_with(".copc.laz") {
        return Ok(OutFormat::Copc);
    }
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
    /// Points written.
    pub points: u64,
    /// Points read (more than written when a filter leaves some out).
    pub points_read: u64,
    pub bytes: u64,
    pub format: OutFormat,
    /// How: "records copied byte for byte", "exact values", "on a grid of ...", ...
    pub how: String,
}

/// Whether `a` and `b` are the same file (same device and inode on Unix; same canonical path elsewhere).
fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
    }
}

/// A temporary file next to `output`, renamed over it by [`Partial::commit`] and removed if dropped
/// before that.
struct Partial {
    tmp: PathBuf,
    output: PathBuf,
    done: bool,
}

impl Partial {
    fn new(output: &Path) -> Partial {
        let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
        let tmp = output.with_file_name(format!(".{name}.pcv-partial-{}", std::process::id()));
        temp::register(&tmp);
        Partial { tmp, output: output.into(), done: false }
    }

    fn commit(mut self) -> Result<(), ConvertError> {
        std::fs::rename(&self.tmp, &self.output)
            .map_err(|source| ConvertError::Io { path: self.output.clone(), source })?;
        temp::unregister(&self.tmp);
        self.done = true;
        Ok(())
    }
}

impl Drop for Partial {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.tmp);
            temp::unregister(&self.tmp);
        }
    }
}

/// Reads `inputs` and writes them to `output`.
pub fn convert(inputs: &[PathBuf], output: &Path, opts: &LoadOptions) -> Result<ConvertSummary, ConvertError> {
    convert_filtered(inputs, output, opts, &PointFilter::default())
}

/// [`convert`], writing only the points `filter` shows (`pcv convert --classes … --clip-box …`): LAS
/// records still pass through byte for byte, every field kept ([`las_copy::copy`] drops the others);
/// other inputs are filtered on their exact values. COPC output is refused with a filter (convert to
/// LAS/LAZ first).
pub fn convert_filtered(
    inputs: &[PathBuf],
    output: &Path,
    opts: &LoadOptions,
    filter: &PointFilter,
) -> Result<ConvertSummary, ConvertError> {
    let format = out_format(output)?;
    if inputs.is_empty() {
        return Err(LoadError::NoFiles.into());
    }
    if let Some(p) = inputs.iter().find(|p| same_file(p, output)) {
        return Err(ConvertError::OutputIsInput { path: p.clone() });
    }
    let (removed, left) = temp::sweep(output);
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        eprintln!("pcv: removed {} temporary file(s) an interrupted convert left: {}", removed.len(), names.join(", "));
    }
    for p in left {
        eprintln!(
            "pcv: {} looks like a temporary file of an interrupted convert; remove it if no convert is running",
            p.display()
        );
    }
    let partial = Partial::new(output);
    let io_out = |source| ConvertError::Io { path: output.into(), source };
    if format == OutFormat::Copc && !filter.is_empty() {
        return Err(ConvertError::Write(format!(
            "{}: a filter ({}) cannot be written straight to COPC; convert to .laz with it, then that file to .copc.laz",
            output.display(),
            filter.describe()
        )));
    }
    if format == OutFormat::Copc {
        let s = copc::write(inputs, &partial.tmp, opts)?;
        partial.commit()?;
        let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
        return Ok(ConvertSummary {
            points: s.points,
            points_read: s.points,
            bytes,
            format,
            how: "COPC: exact values in an octree of LAZ chunks".into(),
        });
    }
    let (points, points_read, how) = {
        let file = std::fs::File::create(&partial.tmp).map_err(io_out)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        // The writers' errors name the output (a full disk said "No space left on device" alone).
        let r = write_to(inputs, &mut w, format, opts, filter).map_err(|e| match e {
            ConvertError::Write(m) => ConvertError::Write(format!("{}: {m}", output.display())),
            e => e,
        })?;
        w.flush().map_err(io_out)?;
        w.get_ref().sync_all().map_err(io_out)?;
        r
    };
    partial.commit()?;
    let bytes = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    Ok(ConvertSummary { points, points_read, bytes, format, how })
}

/// Writes a cloud made in code (or loaded) to `path`, in the format its extension names: positions in
/// the source's coordinates (origin + local f32 position, in f64), the loaded colors (not a color
/// mode's), intensity, classification and the other fields (GPS time, returns, ...) when the cloud has
/// them. Through a temporary file, as
/// [`convert`].
pub fn write_cloud(cloud: &crate::PointCloud, path: &Path) -> Result<(), ConvertError> {
    use rayon::prelude::*;
    let format = out_format(path)?;
    let partial = Partial::new(path);
    let io = |source| ConvertError::Io { path: path.into(), source };
    {
        let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(&partial.tmp).map_err(io)?);
        if format == OutFormat::Raw {
            w.write_all(bytemuck::cast_slice(&cloud.points[..])).map_err(io)?;
        } else {
            let a = cloud.attributes.as_deref();
            let o = cloud.origin;
            let rgba: Vec<[u8; 4]> = match a.and_then(|a| a.loaded_rgba.as_ref()) {
                Some(saved) => saved.clone(),
                None => cloud.points.par_iter().map(|p| p.rgba).collect(),
            };
            let cols = writers::FileColumns {
                path: path.into(),
                xyz: cloud
                    .points
                    .par_iter()
                    .map(|p| [o.x + p.pos[0] as f64, o.y + p.pos[1] as f64, o.z + p.pos[2] as f64])
                    .collect(),
                rgb16: a
                    .is_none_or(|a| a.has_rgb)
                    .then(|| rgba.iter().map(|c| [c[0] as u16 * 257, c[1] as u16 * 257, c[2] as u16 * 257]).collect()),
                intensity: a.and_then(|a| a.intensity.clone()),
                classification: a.and_then(|a| a.classification.clone()),
                fields: a.map_or_else(Vec::new, |a| {
                    a.columns.iter().map(|c| (c.field, (0..c.values.len()).map(|i| c.get(i)).collect())).collect()
                }),
                precision: (o == glam::DVec3::ZERO).then_some(crate::stream::Precision::F32),
            };
            writers::write(&[cols], format, &mut w)?;
        }
        w.flush().map_err(io)?;
    }
    partial.commit()
}

/// Writes `inputs` as `format` into `w`; returns the points written, the points read and how.
fn write_to(
    inputs: &[PathBuf],
    w: &mut BufWriter<std::fs::File>,
    format: OutFormat,
    opts: &LoadOptions,
    filter: &PointFilter,
) -> Result<(u64, u64, String), ConvertError> {
    if format == OutFormat::Raw {
        // The rule of every output: a NaN or infinite coordinate is an error naming the point. The
        // load fails on one (one decode of each file); the exact read then finds which point.
        let mut load_opts = opts.clone();
        load_opts.fields.fields = crate::formats::FieldSet::of(&filter.fields());
        load_opts.nonfinite_fails = true;
        let cloud = match load::load_files_with(inputs, &load_opts) {
            Err(LoadError::NonFinite { path, format, count }) => {
                let bytes = FileBytes::open(&path)?;
                writers::read_exact(&path, bytes.bytes(), format, load::is_pts(&path), &Progress::hidden())?;
                return Err(LoadError::NonFinite { path, format, count }.into());
            }
            r => r?,
        };
        if let Some(i) = cloud.points.iter().position(|p| !p.pos.iter().all(|v| v.is_finite())) {
            // Finite in the file, but too far from the cloud's centre for an f32.
            let spans = cloud.attributes.as_deref().map(|a| a.sources.clone()).unwrap_or_default();
            let span = spans.iter().find(|s| s.points.contains(&(i as u64)));
            return Err(ConvertError::Point {
                path: span.map_or_else(|| inputs[0].clone(), |s| PathBuf::from(&s.label)),
                point: span.map_or(i as u64, |s| i as u64 - s.points.start),
                what: "too far from the other points for the .bin layout's f32 positions (relative to the cloud's centre); write .las or .ply".into(),
            });
        }
        let read = cloud.points.len() as u64;
        let (cloud, _) = crate::filter::shown(&cloud, filter);
        w.write_all(bytemuck::cast_slice(&cloud.points[..])).map_err(|e| ConvertError::Write(e.to_string()))?;
        return Ok((cloud.points.len() as u64, read, "the viewer's local f32 positions".into()));
    }
    let files: Vec<(PathBuf, FileBytes)> =
        inputs.iter().map(|p| Ok((p.clone(), FileBytes::open(p)?))).collect::<Result<_, LoadError>>()?;
    let progress = Progress::new(0, opts.progress);
    let all_las = files.iter().all(|(_, b)| las_copy::is_las(b.bytes()));
    if matches!(format, OutFormat::Las | OutFormat::Laz) && all_las {
        let opened = files.iter().map(|(p, b)| las_copy::open(p, b.bytes())).collect::<Result<Vec<_>, _>>()?;
        let f = (!filter.is_empty()).then_some(filter);
        let s = las_copy::copy(&opened, w, format == OutFormat::Laz, &progress, f)?;
        progress.finish();
        return Ok((
            s.points,
            progress.shared().snapshot().points_done,
            if s.verbatim {
                "the input's bytes (records, VLRs, EVLRs)".into()
            } else {
                "records passed through byte for byte".into()
            },
        ));
    }
    let mut exact = Vec::with_capacity(files.len());
    for (path, bytes) in &files {
        let f = load::detect(path, bytes.bytes())?;
        if opts.progress && files.len() > 1 {
            progress.set_file(path.display().to_string());
        }
        let mut cols = writers::read_exact(path, bytes.bytes(), f, load::is_pts(path), &progress)?;
        if !filter.is_empty() {
            if let Some(x) = filter.fields().first() {
                return Err(ConvertError::Write(format!(
                    "{}: has no {x} to filter by (only LAS and LAZ files carry returns and the other fields)",
                    path.display()
                )));
            }
            cols.retain(|c| filter.passes(c));
        }
        exact.push(cols);
    }
    progress.finish();
    let (n, grid) = writers::write(&exact, format, w)?;
    let how = match grid {
        // LAS stores integers: the coordinates were put on a grid (exact where they lay on it).
        Some(g) => format!(
            "coordinates on a grid of {} (x, y, z; each moves by half a step at most), 16-bit colors",
            pcv_model::number::readable3(g)
        ),
        None => "exact values (f64 coordinates, 16-bit colors)".into(),
    };
    Ok((n, progress.shared().snapshot().points_done, how))
}
