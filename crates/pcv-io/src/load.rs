//! Loading point files: format detection, the shared origin, and merging several files into one cloud.
//!
//! How it works: each file is memory-mapped and its format chosen — by its magic bytes (`ply`, `LASF`,
//! `ASTM-E57`, a PCD header) whatever its extension says, else by its extension (text and raw records
//! have no magic), else, for a file without an extension, by whether it reads as columns of numbers.
//! Before decoding, every file's bounds are estimated cheaply (LAS headers, a sample of fixed-size
//! records, the first text lines) and the origin is set to the center of their union, so that the f32
//! positions are small: lidar in UTM (10^6 m) keeps its millimetres. The origin snaps to 0 when the
//! clouds surround it (their center is within their radius of 0), so clouds already near 0 keep
//! their own coordinates. Each file is then decoded (in parallel inside the file) relative to that
//! origin, with exact f64 bounds. If the exact center of all points is further than the clouds' radius
//! from the estimated one (a header with wrong bounds, outliers no sample saw, no estimate at all), the
//! f32 positions have lost bits and the files are decoded again around the exact center; if it is
//! between 5% and 100% of the radius away, the points are just moved (losing at most one bit). Files are concatenated; their intensity and
//! classification columns are joined (0 where a file had none), and points of files without colors get
//! the elevation ramp. A decoder that panics (a bug, never the input's fault) becomes an error naming
//! the file. Errors name the file and the byte or line.
use super::attributes::{color_by_elevation, Attributes, ColorMode, SourceSpan};
use super::formats::{self, DBounds, Decoded, Field, FieldRequest, Format, FormatError, Progress, ReadOptions};
use super::progress::LoadProgress;
use super::stream::ChunkSource;
use super::subsample::Even;
use super::PointCloud;
use crate::point::Point;
use glam::DVec3;
use pcv_model::fields::Column;
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use formats::raw::RECORD_BYTES;

/// Errors from loading a point file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: unsupported format '{ext}': neither a known extension nor PLY, LAS/LAZ, PCD or E57 content (pcv reads {list})", list = EXTENSIONS_TEXT)]
    UnsupportedFormat { path: PathBuf, ext: String },
    #[error("{path}: size {size_bytes} bytes is not a multiple of the 16-byte record; the partial record starts at byte {offset}")]
    TruncatedRecord { path: PathBuf, size_bytes: u64, offset: u64 },
    #[error("{path}: {format}: {source}")]
    Format { path: PathBuf, format: Format, source: FormatError },
    #[error("{path}: {format}: the file holds no points{detail}")]
    Empty { path: PathBuf, format: Format, detail: String },
    #[error("{path}: {format}: the decoder failed on this file ({message}); it is probably corrupt (if not, please report it with the file)")]
    Panicked { path: PathBuf, format: Format, message: String },
    #[error("{path}: {format}: {count} points have NaN or infinite coordinates")]
    NonFinite { path: PathBuf, format: Format, count: u64 },
    #[error("no files given")]
    NoFiles,
    #[error("{dir}: no point files in this folder{hint} (pcv reads {list})", list = EXTENSIONS_TEXT)]
    NoPointFiles { dir: PathBuf, hint: &'static str },
    #[error(transparent)]
    Collection(#[from] crate::collection::CollectionError),
    #[error("{files}: {points} points need {needed_bytes} bytes of memory on {device}, which has {free_bytes} free: {fit_points} points fit; --max-points {fit_points} loads a uniform subsample of that many (spread over the whole cloud)")]
    DoesNotFit { files: String, points: u64, needed_bytes: u64, free_bytes: u64, device: String, fit_points: u64 },
}

impl LoadError {
    /// The file (or folder) the error is about, where it names one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            LoadError::Io { path, .. }
            | LoadError::UnsupportedFormat { path, .. }
            | LoadError::TruncatedRecord { path, .. }
            | LoadError::Format { path, .. }
            | LoadError::Empty { path, .. }
            | LoadError::NonFinite { path, .. }
            | LoadError::Panicked { path, .. } => Some(path),
            LoadError::NoPointFiles { dir, .. } => Some(dir),
            LoadError::NoFiles | LoadError::DoesNotFit { .. } | LoadError::Collection(_) => None,
        }
    }
}

const EXTENSIONS_TEXT: &str = ".ply .las .laz .pcd .e57 .xyz .txt .csv .asc .pts .bin .pcv";

/// Extensions pcv knows, and their formats.
pub const SUPPORTED_EXTENSIONS: &[(&str, Format)] = &[
    ("ply", Format::Ply),
    ("las", Format::Las),
    ("laz", Format::Laz),
    ("copc", Format::Laz),
    ("pcd", Format::Pcd),
    ("e57", Format::E57),
    ("xyz", Format::Text),
    ("txt", Format::Text),
    ("csv", Format::Text),
    ("asc", Format::Text),
    ("pts", Format::Text),
    ("xyzrgb", Format::Text),
    ("bin", Format::Raw),
    ("pcv", Format::Raw),
];

fn extension(path: &Path) -> String {
    path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase()
}

/// The format a file's magic bytes show, if any.
pub fn sniff(data: &[u8]) -> Option<Format> {
    if formats::ply::sniff(data) {
        Some(Format::Ply)
    } else if formats::las::sniff(data) {
        // The compression bits of the point format byte tell LAZ from LAS.
        Some(if data.get(104).is_some_and(|b| b & 0xc0 != 0) { Format::Laz } else { Format::Las })
    } else if formats::e57::sniff(data) {
        Some(Format::E57)
    } else if formats::pcd::sniff(data) {
        Some(Format::Pcd)
    } else {
        None
    }
}

/// Chooses the format of `path` holding `data`: magic bytes first, then the extension, then (without
/// an extension) a look at whether it is numeric text.
pub fn detect(path: &Path, data: &[u8]) -> Result<Format, LoadError> {
    let ext = extension(path);
    if let Some(f) = sniff(data) {
        return Ok(f);
    }
    if let Some((_, f)) = SUPPORTED_EXTENSIONS.iter().find(|(e, _)| *e == ext) {
        return Ok(*f);
    }
    if ext.is_empty() && formats::text::sniff(data) {
        return Ok(Format::Text);
    }
    Err(LoadError::UnsupportedFormat { path: path.into(), ext })
}

/// Decodes `data` as `format` (`pts`: text in Leica PTS order). Panics propagate: the fuzz targets
/// call this.
pub fn decode_bytes(data: &[u8], format: Format, pts: bool, opts: &ReadOptions) -> Result<Decoded, FormatError> {
    match format {
        Format::Ply => formats::ply::read(data, opts),
        Format::Las | Format::Laz => formats::las::read(data, opts),
        Format::Pcd => formats::pcd::read(data, opts),
        Format::E57 => formats::e57::read(data, opts),
        Format::Text => formats::text::read(data, pts, opts),
        Format::Raw => formats::raw::read(data, opts),
    }
}

/// Opens `data` as `format` for chunked decoding (`pts`: text in Leica PTS order).
pub fn open_source(data: &[u8], format: Format, pts: bool) -> Result<Box<dyn ChunkSource + '_>, FormatError> {
    open_source_with(data, format, pts, formats::FieldSet::NONE)
}

/// [`open_source`], keeping `fields` as columns where the format has them (LAS/LAZ, PLY, PCD).
pub fn open_source_with(
    data: &[u8],
    format: Format,
    pts: bool,
    fields: formats::FieldSet,
) -> Result<Box<dyn ChunkSource + '_>, FormatError> {
    Ok(match format {
        Format::Ply => {
            let mut s = formats::ply::open(data)?;
            s.keep_fields(fields);
            Box::new(s)
        }
        Format::Las | Format::Laz => {
            let mut s = formats::las::open(data)?;
            s.keep_fields(fields);
            Box::new(s)
        }
        Format::Pcd => {
            let mut s = formats::pcd::open(data)?;
            s.keep_fields(fields);
            Box::new(s)
        }
        Format::E57 => Box::new(formats::e57::open(data)?),
        Format::Text => Box::new(formats::text::open(data, pts)?),
        Format::Raw => Box::new(formats::raw::open(data)?),
    })
}

/// A cheap estimate of a file's bounds, for choosing the origin before decoding.
pub fn estimate(data: &[u8], format: Format, pts: bool) -> Option<DBounds> {
    match format {
        Format::Ply => formats::ply::estimate(data),
        Format::Las | Format::Laz => formats::las::estimate(data),
        Format::Pcd => formats::pcd::estimate(data),
        Format::E57 => formats::e57::estimate(data),
        Format::Text => formats::text::estimate(data, pts),
        Format::Raw => formats::raw::estimate(data),
    }
}

/// A file's bytes: memory-mapped, or empty.
pub struct FileBytes {
    map: Option<memmap2::Mmap>,
}

impl FileBytes {
    pub fn open(path: &Path) -> Result<FileBytes, LoadError> {
        let io = |source| LoadError::Io { path: path.into(), source };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is a directory")));
        }
        if meta.len() == 0 {
            return Ok(FileBytes { map: None });
        }
        // SAFETY: the map is read-only and private to this process. If another process truncates the
        // file while it is mapped, reads past the new end fault (SIGBUS): the usual caveat of mapping
        // files, accepted for the speed (no copy of multi-GB files).
        let map = unsafe { memmap2::MmapOptions::new().map(&file) }.map_err(io)?;
        #[cfg(unix)]
        {
            let _ = map.advise(memmap2::Advice::WillNeed);
        }
        Ok(FileBytes { map: Some(map) })
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Lets the mapping drop the pages wholly inside `range` (they stay in the page cache; a later read
    /// maps them again): a streaming load's resident memory then stays bounded by the part of the
    /// file in flight, not the whole file.
    pub fn release(&self, range: std::ops::Range<usize>) {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            const PAGE: usize = 4096;
            let start = range.start.div_ceil(PAGE) * PAGE;
            let end = range.end.min(map.len()) / PAGE * PAGE;
            if end > start {
                // SAFETY: the mapping is private, read-only and never written, so it holds no private
                // changes: dropping its pages only makes later reads fetch the same file bytes again
                // (the usual caveat of mapping files — another process truncating the file — applies
                // as it does to every read of the map).
                let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }
}

/// How to load.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Draw a progress bar on stderr (when it is a terminal) for loads longer than a second.
    pub progress: bool,
    /// Print warnings (dropped points) on stderr.
    pub warnings: bool,
    /// Which other fields to keep as columns (GPS time, returns, ...).
    pub fields: FieldRequest,
    /// A NaN or infinite coordinate fails the load ([`LoadError::NonFinite`]) instead of being
    /// dropped with a warning: what `pcv convert` needs of every output.
    pub nonfinite_fails: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            progress: std::io::stderr().is_terminal(),
            warnings: true,
            fields: FieldRequest::default(),
            nonfinite_fails: false,
        }
    }
}

impl LoadOptions {
    /// No progress bar and no warnings (tests, benchmarks, background loads); fields as by default.
    pub fn quiet() -> Self {
        LoadOptions { progress: false, warnings: false, ..Default::default() }
    }
}

/// One decoded file with its name and format.
pub struct LoadedFile {
    pub path: PathBuf,
    pub format: Format,
    pub decoded: Decoded,
    /// Its coordinate reference system ([`crate::crs::of_file`]; one that cannot be read is a warning).
    pub crs: Option<pcv_model::crs::Crs>,
}

/// `paths` with each folder replaced by the point files in it (by extension, sorted by name; with
/// `recursive`, those of its subfolders too, depth first, not following links to folders). Files, URLs and paths that do not exist
/// pass through as they are (loading them names what is wrong). A folder with no point files is an
/// error that says so.
pub fn point_files(paths: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, LoadError> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            folder_files(p, recursive, &mut out)?;
            if out.len() == before {
                let hint = if recursive { "" } else { " (--recursive also reads its subfolders)" };
                return Err(LoadError::NoPointFiles { dir: p.clone(), hint });
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn folder_files(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let io = |source| LoadError::Io { path: dir.into(), source };
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
    entries.sort();
    for p in entries {
        // Subfolders reached through a symbolic link are not followed (a link to a parent would loop).
        let linked = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        if p.is_dir() {
            if recursive && !linked {
                folder_files(&p, true, out)?;
            }
        } else if p.is_file() && SUPPORTED_EXTENSIONS.iter().any(|(e, _)| *e == extension(&p)) {
            out.push(p);
        }
    }
    Ok(())
}

/// Loads and merges `paths` into one cloud, with a progress bar when stderr is a terminal.
pub fn load_files(paths: &[PathBuf]) -> Result<PointCloud, LoadError> {
    load_files_with(paths, &LoadOptions::default())
}

/// The origin for clouds with these bounds: their center, or 0 when they surround 0.
pub fn choose_origin(b: &DBounds) -> DVec3 {
    let c = b.center();
    if b.is_empty() || c.length() <= b.radius() {
        DVec3::ZERO
    } else {
        c
    }
}

/// Whether `path` names a Leica PTS file (text in `x y z intensity r g b` order).
pub fn is_pts(path: &Path) -> bool {
    extension(path) == "pts"
}

/// Decodes one opened file relative to `origin`, turning panics (a dependency's decoder on a corrupt
/// file, or a bug) into errors.
pub fn decode_file(
    path: &Path,
    data: &[u8],
    format: Format,
    origin: DVec3,
    progress: &Progress,
    fields: FieldRequest,
) -> Result<Decoded, LoadError> {
    let opts = ReadOptions { origin, progress, fields };
    let pts = is_pts(path);
    match formats::catch_quietly(|| decode_bytes(data, format, pts, &opts)) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(FormatError::AtByte { offset, msg })) if format == Format::Raw && msg.contains("16-byte record") => {
            Err(LoadError::TruncatedRecord { path: path.into(), size_bytes: data.len() as u64, offset })
        }
        Ok(Err(source)) => Err(LoadError::Format { path: path.into(), format, source }),
        Err(message) => Err(LoadError::Panicked { path: path.into(), format, message }),
    }
}

/// Loads and merges `paths` into one cloud.
pub fn load_files_with(paths: &[PathBuf], opts: &LoadOptions) -> Result<PointCloud, LoadError> {
    load_files_reporting(paths, opts, Default::default())
}

/// [`load_files_with`], counting the points decoded into `shared` as they are (for a window's
/// progress bar: read it from another thread with [`LoadProgress::snapshot`]). The count restarts if
/// the files must be decoded a second time around a better origin.
pub fn load_files_reporting(
    paths: &[PathBuf],
    opts: &LoadOptions,
    shared: Arc<LoadProgress>,
) -> Result<PointCloud, LoadError> {
    let r = load_files_counted(paths, opts, shared.clone(), None);
    shared.finish();
    r
}

/// Loads and merges the files of `paths` that load, and the errors of those that do not (each names
/// its file): one unreadable file among several is skipped rather than failing them all. Every file
/// failing is the first file's error. A single path is [`load_files_with`].
pub fn load_readable_files(paths: &[PathBuf], opts: &LoadOptions) -> Result<(PointCloud, Vec<LoadError>), LoadError> {
    let mut skipped = Vec::new();
    let cloud = if paths.len() > 1 {
        load_files_counted(paths, opts, Default::default(), Some(&mut skipped))?
    } else {
        load_files_with(paths, opts)?
    };
    Ok((cloud, in_order(skipped, paths)))
}

/// `errors` in the order of the files they name in `paths` (files fail to open before others fail to
/// decode).
fn in_order(mut errors: Vec<LoadError>, paths: &[PathBuf]) -> Vec<LoadError> {
    errors.sort_by_key(|e| e.path().and_then(|p| paths.iter().position(|q| q == p)).unwrap_or(usize::MAX));
    errors
}

/// Loads `paths`; with `skipped`, files that fail go there instead of failing the load (unless all do).
fn load_files_counted(
    paths: &[PathBuf],
    opts: &LoadOptions,
    shared: Arc<LoadProgress>,
    mut skipped: Option<&mut Vec<LoadError>>,
) -> Result<PointCloud, LoadError> {
    if paths.is_empty() {
        return Err(LoadError::NoFiles);
    }
    let mut opened = Vec::with_capacity(paths.len());
    for p in paths {
        let one = FileBytes::open(p).and_then(|bytes| Ok((detect(p, bytes.bytes())?, bytes)));
        match (one, skipped.as_deref_mut()) {
            (Ok((format, bytes)), _) => opened.push((p.clone(), bytes, format)),
            (Err(e), Some(list)) => list.push(e),
            (Err(e), None) => return Err(e),
        }
    }
    let estimate_all =
        opened.iter().filter_map(|(p, b, f)| estimate(b.bytes(), *f, is_pts(p))).fold(DBounds::EMPTY, DBounds::union);
    let mut origin = choose_origin(&estimate_all);
    let progress = Progress::with_shared(0, opts.progress, shared);
    let mut files = decode_all(&opened, origin, &progress, opts, skipped.as_deref_mut())?;
    if files.is_empty() {
        // Every file failed (only when skipping): the first file's error.
        let first = skipped.map(|l| in_order(std::mem::take(l), paths).into_iter().next());
        return Err(first.flatten().unwrap_or(LoadError::NoFiles));
    }
    // Only the files that decoded are decoded again.
    opened.retain(|(p, _, _)| files.iter().any(|f| &f.path == p));
    let bounds = files.iter().fold(DBounds::EMPTY, |b, f| DBounds::union(b, f.decoded.bounds));
    let exact = choose_origin(&bounds);
    if (exact - origin).length() > bounds.radius() {
        // The estimate was far off (a header with wrong bounds, outliers no sample saw): positions
        // that far from the origin lost bits when they became f32, so decode again around the
        // exact center rather than move them.
        drop(files);
        origin = exact;
        files = decode_all(&opened, origin, &progress, &LoadOptions { warnings: false, ..opts.clone() }, None)?;
    }
    drop(opened);
    let cloud = merge(files, origin);
    progress.finish();
    Ok(cloud)
}

type Opened = (PathBuf, FileBytes, Format);

fn decode_all(
    opened: &[Opened],
    origin: DVec3,
    progress: &Progress,
    opts: &LoadOptions,
    mut skipped: Option<&mut Vec<LoadError>>,
) -> Result<Vec<LoadedFile>, LoadError> {
    let mut files = Vec::with_capacity(opened.len());
    for (path, bytes, format) in opened {
        if opened.len() > 1 {
            progress.set_file(path.display().to_string());
        }
        let decoded = decode_file(path, bytes.bytes(), *format, origin, progress, opts.fields).and_then(|decoded| {
            if decoded.nonfinite > 0 && opts.nonfinite_fails {
                return Err(LoadError::NonFinite { path: path.clone(), format: *format, count: decoded.nonfinite });
            }
            if decoded.points.is_empty() {
                let detail = if decoded.nonfinite > 0 {
                    format!(": all {} points have NaN or infinite coordinates", decoded.nonfinite)
                } else {
                    String::new()
                };
                return Err(LoadError::Empty { path: path.clone(), format: *format, detail });
            }
            Ok(decoded)
        });
        let decoded = match (decoded, skipped.as_deref_mut()) {
            (Ok(d), _) => d,
            (Err(e), Some(list)) => {
                list.push(e);
                continue;
            }
            (Err(e), None) => return Err(e),
        };
        if decoded.nonfinite > 0 && opts.warnings {
            eprintln!(
                "pcv: warning: {}: dropped {} points with NaN, infinite or invalid coordinates",
                path.display(),
                decoded.nonfinite
            );
        }
        let crs = file_crs(path, bytes.bytes(), *format, opts.warnings);
        files.push(LoadedFile { path: path.clone(), format: *format, decoded, crs });
    }
    Ok(files)
}

/// The CRS of a file ([`crate::crs::of_file`]); one that cannot be read is said (with `warnings`) and
/// left out: the file still loads, its lengths unnamed.
/// The coordinate system `path` names (its header, or a `.prj` beside it), read without decoding
/// points; `None` for an unreadable file or one that names none.
pub fn crs_of_path(path: &Path) -> Option<pcv_model::crs::Crs> {
    let bytes = FileBytes::open(path).ok()?;
    let format = detect(path, bytes.bytes()).ok()?;
    file_crs(path, bytes.bytes(), format, false)
}

pub fn file_crs(path: &Path, data: &[u8], format: Format, warnings: bool) -> Option<pcv_model::crs::Crs> {
    match crate::crs::of_file(path, data, format)? {
        Ok(c) => Some(c),
        Err(e) => {
            if warnings {
                eprintln!(
                    "pcv: warning: {}: its coordinate system is not readable ({e}); lengths are shown without a unit",
                    path.display()
                );
            }
            None
        }
    }
}

/// Joins decoded files (all decoded relative to `origin`) into one cloud: moves the points to the
/// exact center when `origin` is more than 5% of the radius away from it (at most one bit of the f32
/// positions is lost when it is within the radius, as the loader ensures), concatenates the columns,
/// paints the colorless points.
pub fn merge(mut files: Vec<LoadedFile>, origin: DVec3) -> PointCloud {
    let bounds64 = files.iter().fold(DBounds::EMPTY, |b, f| DBounds::union(b, f.decoded.bounds));
    let exact = choose_origin(&bounds64);
    let mut origin = origin;
    if (exact - origin).length() > 0.05 * bounds64.radius() || (exact == DVec3::ZERO) != (origin == DVec3::ZERO) {
        let d = (origin - exact).to_array();
        for f in &mut files {
            f.decoded.points.par_iter_mut().for_each(|p| {
                p.pos =
                    [(p.pos[0] as f64 + d[0]) as f32, (p.pos[1] as f64 + d[1]) as f32, (p.pos[2] as f64 + d[2]) as f32];
            });
        }
        origin = exact;
    }
    let total: usize = files.iter().map(|f| f.decoded.points.len()).sum();
    let any_intensity = files.iter().any(|f| f.decoded.intensity.is_some());
    let any_class = files.iter().any(|f| f.decoded.classification.is_some());
    let has_rgb = files.iter().any(|f| f.decoded.has_rgb);
    let mut sources = Vec::with_capacity(files.len());
    let mut colorless = Vec::new();
    let mut at = 0usize;
    for f in &files {
        let n = f.decoded.points.len();
        sources.push(SourceSpan {
            label: f.path.display().to_string(),
            format: f.format,
            points: at as u64..(at + n) as u64,
            has_rgb: f.decoded.has_rgb,
            has_intensity: f.decoded.intensity.is_some(),
            has_classification: f.decoded.classification.is_some(),
            uniform_rgb: f.decoded.uniform_rgb,
            crs: f.crs.clone(),
        });
        if f.decoded.has_rgb {
            colorless.extend(f.decoded.colorless.iter().map(|r| r.start + at..r.end + at));
        } else {
            colorless.push(at..at + n);
        }
        at += n;
    }
    let label = files.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>().join(", ");
    let columns = join_fields(&files, total);
    let (mut points, intensity, classification) = if files.len() == 1 {
        let d = std::mem::take(&mut files[0].decoded);
        (d.points, d.intensity, d.classification)
    } else {
        let mut points = Vec::with_capacity(total);
        for f in &files {
            points.extend_from_slice(&f.decoded.points);
        }
        let join = |get: &dyn Fn(&Decoded) -> Option<&[f32]>| -> Vec<f32> {
            let mut v = Vec::with_capacity(total);
            for f in &files {
                match get(&f.decoded) {
                    Some(s) => v.extend_from_slice(s),
                    None => v.resize(v.len() + f.decoded.points.len(), 0.0),
                }
            }
            v
        };
        let intensity = any_intensity.then(|| join(&|d: &Decoded| d.intensity.as_deref()));
        let classification = any_class.then(|| {
            let mut v = Vec::with_capacity(total);
            for f in &files {
                match &f.decoded.classification {
                    Some(s) => v.extend_from_slice(s),
                    None => v.resize(v.len() + f.decoded.points.len(), 0),
                }
            }
            v
        });
        (points, intensity, classification)
    };
    drop(files);
    let mut bounds = bounds64.to_local(origin);
    // Geographic and geocentric clouds are drawn in east-north-up metres at their centre.
    let frame =
        sources.iter().find_map(|s| s.crs.as_ref()).and_then(|crs| match in_local_frame(&mut points, origin, crs) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("pcv: warning: {e}; drawn in the file's coordinates");
                None
            }
        });
    if frame.is_some() {
        bounds = crate::Bounds::of_points(&points);
        origin = DVec3::ZERO;
    }
    for r in colorless {
        color_by_elevation(&mut points, &bounds, r);
    }
    PointCloud {
        points: Arc::new(points),
        bounds,
        origin,
        frame,
        label,
        source: crate::CloudSource::Host,
        attributes: Some(Arc::new(Attributes {
            intensity,
            classification,
            columns,
            field_spec: None,
            has_rgb,
            sources,
            mode: ColorMode::Rgb,
            loaded_rgba: None,
            color_note: None,
        })),
    }
}

/// The fields any of `files` kept, one column each over all `total` points (NaN for the points of
/// files without it), in [`Field::known`]'s order.
fn join_fields(files: &[LoadedFile], total: usize) -> Vec<Column> {
    let mut out = Vec::new();
    for field in Field::known() {
        if !files.iter().any(|f| f.decoded.fields.iter().any(|(g, _)| *g == field)) {
            continue;
        }
        let mut v = Vec::with_capacity(total);
        for f in files {
            match f.decoded.fields.iter().find(|(g, _)| *g == field) {
                Some((_, s)) => v.extend_from_slice(s),
                None => v.resize(v.len() + f.decoded.points.len(), f64::NAN),
            }
        }
        out.push(Column::from_f64(field, &v));
    }
    out
}

/// Moves `points` (relative to `origin`, file coordinates) into the local frame of `crs` when it has
/// one ([`crate::local_frame::LocalFrame`]: geographic and geocentric systems), centred at `origin`.
/// Points the transform refuses (latitudes beyond ±90°) become NaN, which the rasterizers skip.
fn in_local_frame(
    points: &mut [Point],
    origin: DVec3,
    crs: &pcv_model::crs::Crs,
) -> Result<Option<Arc<crate::local_frame::LocalFrame>>, crate::crs::CrsError> {
    let Some(frame) = crate::local_frame::LocalFrame::for_crs(crs, origin)? else { return Ok(None) };
    points.par_iter_mut().for_each(|p| {
        let file = origin + DVec3::new(p.pos[0] as f64, p.pos[1] as f64, p.pos[2] as f64);
        let local = frame.to_local(file).unwrap_or(DVec3::NAN);
        p.pos = local.as_vec3().to_array();
    });
    eprintln!("pcv: {}", frame.note());
    Ok(Some(Arc::new(frame)))
}

/// Keeps `k` of the cloud's points, evenly spaced through the files' order (point `i` of `n` stays
/// when `floor((i + 1)·k/n) > floor(i·k/n)`), with their intensity and classification; the files'
/// spans shrink with them. For scans and tiles, whose points come in scan or tile order, that is a
/// subsample spread over the whole cloud. Nothing happens when the cloud has `k` points or fewer.
pub fn keep_evenly(cloud: &mut PointCloud, k: u64) {
    let e = Even::new(k, cloud.points.len() as u64);
    if e.keeps_all() {
        return;
    }
    e.thin(Arc::make_mut(&mut cloud.points), 0);
    if let Some(a) = cloud.attributes.as_mut() {
        let a = Arc::make_mut(a);
        if let Some(v) = a.intensity.as_mut() {
            e.thin(v, 0);
        }
        if let Some(v) = a.classification.as_mut() {
            e.thin(v, 0);
        }
        if let Some(v) = a.loaded_rgba.as_mut() {
            e.thin(v, 0);
        }
        for c in &mut a.columns {
            e.thin(&mut c.values, 0);
        }
        // The points of file spans `a..b` that stay: those before `b` minus those before `a`.
        for s in &mut a.sources {
            s.points = e.kept_before(s.points.start)..e.kept_before(s.points.end);
        }
    }
}

/// Writes points as raw 16-byte records.
pub fn write_raw(path: &Path, points: &[Point]) -> Result<(), LoadError> {
    std::fs::write(path, bytemuck::cast_slice::<Point, u8>(points))
        .map_err(|source| LoadError::Io { path: path.into(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_stand_for_their_point_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        for f in ["b.LAZ", "a.ply", "notes.md", "sub/c.xyz"] {
            std::fs::write(d.join(f), b"x").unwrap();
        }
        let other = d.join("elsewhere.las");
        let got = point_files(&[d.to_path_buf(), other.clone()], false).unwrap();
        assert_eq!(got, [d.join("a.ply"), d.join("b.LAZ"), other.clone()]);
        let got = point_files(&[d.to_path_buf()], true).unwrap();
        assert_eq!(got, [d.join("a.ply"), d.join("b.LAZ"), d.join("sub/c.xyz")]);
        // An empty folder says so, and how to read subfolders.
        let empty = tempfile::tempdir().unwrap();
        std::fs::create_dir(empty.path().join("deeper")).unwrap();
        let e = point_files(&[empty.path().to_path_buf()], false).unwrap_err().to_string();
        assert!(e.contains("no point files in this folder (--recursive"), "{e}");
        assert!(matches!(point_files(&[empty.path().to_path_buf()], true), Err(LoadError::NoPointFiles { .. })));
    }

    #[test]
    fn detection_prefers_magic_bytes() {
        assert_eq!(detect(Path::new("a.xyz"), b"ply\nformat ascii 1.0\n").unwrap(), Format::Ply);
        assert_eq!(detect(Path::new("a.ply"), b"1 2 3\n").unwrap(), Format::Ply);
        assert_eq!(detect(Path::new("noext"), b"1 2 3\n4 5 6\n").unwrap(), Format::Text);
        assert!(matches!(detect(Path::new("a.xyzw"), b"1 2 3"), Err(LoadError::UnsupportedFormat { .. })));
        assert!(matches!(detect(Path::new("noext"), &[0xff, 0x00, 0x13]), Err(LoadError::UnsupportedFormat { .. })));
        assert_eq!(detect(Path::new("a.bin"), b"# .PCD v0.7\nVERSION 0.7\n").unwrap(), Format::Pcd);
    }

    #[test]
    fn origin_snaps_to_zero_around_zero() {
        let b = DBounds { min: [-1.0, -1.0, -1.0], max: [2.0, 2.0, 2.0] };
        assert_eq!(choose_origin(&b), DVec3::ZERO);
        let b = DBounds { min: [500_000.0, 4_000_000.0, 10.0], max: [500_100.0, 4_000_100.0, 30.0] };
        assert_eq!(choose_origin(&b), DVec3::new(500_050.0, 4_000_050.0, 20.0));
    }

    #[test]
    fn unreadable_files_among_several_are_skipped_and_named() {
        let d = tempfile::tempdir().unwrap();
        let good = d.path().join("good.xyz");
        std::fs::write(&good, "0 0 0\n1 1 1\n2 2 2\n").unwrap();
        let bad = d.path().join("bad.las");
        std::fs::write(&bad, b"LASF but nothing else").unwrap();
        let empty = d.path().join("empty.xyz");
        std::fs::write(&empty, "# no points\n").unwrap();
        let missing = d.path().join("missing.ply");
        let paths = [bad.clone(), good.clone(), empty.clone(), missing.clone()];
        let (cloud, skipped) = load_readable_files(&paths, &LoadOptions::quiet()).unwrap();
        assert_eq!(cloud.len(), 3);
        let texts: Vec<String> = skipped.iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        for p in [&bad, &missing, &empty] {
            assert!(texts.iter().any(|t| t.contains(&p.display().to_string())), "{p:?} in {texts:?}");
        }
        // Every file failing is the first one's error; one file is load_files_with.
        let e = load_readable_files(&[bad.clone(), missing.clone()], &LoadOptions::default()).unwrap_err();
        assert!(e.to_string().contains("bad.las"), "{e}");
        assert!(load_readable_files(std::slice::from_ref(&bad), &LoadOptions::default()).is_err());
    }

    #[test]
    fn a_geographic_cloud_loads_in_metres_and_picks_back_to_degrees() {
        let d = tempfile::tempdir().unwrap();
        let xyz = d.path().join("wgs84.xyz");
        // A 0.001° × 0.001° patch near Paris, heights 30..40 m.
        let mut text = String::new();
        for i in 0..50 {
            for j in 0..50 {
                text += &format!(
                    "{} {} {}\n",
                    2.35 + i as f64 * 0.00002,
                    48.85 + j as f64 * 0.00002,
                    30.0 + (i % 10) as f64
                );
            }
        }
        std::fs::write(&xyz, text).unwrap();
        std::fs::write(d.path().join("wgs84.prj"), "EPSG:4326").unwrap();
        let c = load_files_with(std::slice::from_ref(&xyz), &LoadOptions::quiet()).unwrap();
        let crs = c.crs().expect("the .prj beside the file names it");
        assert_eq!(
            (crs.kind, crs.epsg, crs.read_from.as_str()),
            (pcv_model::crs::CrsKind::Geographic, Some(4326), "wgs84.prj")
        );
        assert!(c.frame.is_some());
        let size = c.bounds.max - c.bounds.min;
        // 0.00098° is 108.9 m north and 71.7 m east there; heights span 9 m.
        assert!((size.y - 108.9).abs() < 0.5 && (size.x - 71.7).abs() < 0.5 && (size.z - 9.0).abs() < 0.1, "{size:?}");
        let corner = c
            .points
            .iter()
            .map(|p| glam::Vec3::from_array(p.pos))
            .min_by(|a, b| (a.x + a.y).total_cmp(&(b.x + b.y)))
            .unwrap();
        let back = c.to_source(corner);
        assert!(
            (back.x - 2.35).abs() < 1e-8 && (back.y - 48.85).abs() < 1e-8 && (back.z - 30.0).abs() < 1e-3,
            "{back:?}"
        );
    }

    #[test]
    fn files_far_apart_are_said_to_be() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("here.xyz"), d.path().join("there.xyz"));
        std::fs::write(&a, "0 0 0\n10 10 1\n5 5 2\n").unwrap();
        std::fs::write(&b, "500000 4000000 0\n500010 4000010 1\n").unwrap();
        let opts = LoadOptions::quiet();
        let c = load_files_with(&[a.clone(), b], &opts).unwrap();
        let w = c.crs_warning().expect("a warning");
        assert!(w.contains("2 files lie") && w.contains("speck"), "{w}");
        // Two neighbouring tiles: nothing to say.
        let near = d.path().join("near.xyz");
        std::fs::write(&near, "20 0 0\n30 10 1\n").unwrap();
        assert_eq!(load_files_with(&[a, near], &opts).unwrap().crs_warning(), None);
    }
}
