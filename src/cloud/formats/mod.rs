//! The point file formats, and what their decoders share.
//!
//! How it works: every decoder reads a whole file from one byte slice (the file memory-mapped, or a
//! buffer in tests and fuzzing) and returns a [`Decoded`]: 16-byte [`Point`]s whose f32 positions are
//! the file's f64 coordinates minus an origin chosen by the caller, the optional intensity and
//! classification columns, the exact f64 bounds of the points in the file's own coordinates, and a
//! [`FileInfo`] for `pcv info`. Points with a NaN or infinite coordinate are dropped and counted.
//!
//! Two helpers do the heavy lifting. [`decode_fixed`] handles formats whose points are fixed-size
//! records (binary PLY, LAS, binary PCD, raw): it splits the records into chunks of 64 Ki, decodes the
//! chunks on all cores (rayon) straight into the output vectors, and closes the gaps that dropped
//! points leave. [`text_chunks`] splits text into line-aligned chunks of about 4 MiB, counts their lines
//! in parallel (so every error can name its line), and hands each chunk to a parser on its own core.
//! Each decoder first checks the counts its header claims against the bytes that follow it, so a lying
//! header is an error, never a huge allocation.
pub mod e57;
pub mod las;
pub mod pcd;
pub mod ply;
pub mod raw;
pub mod text;

use crate::cloud::point::Point;
use glam::DVec3;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The formats pcv reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Format {
    Ply,
    Las,
    Laz,
    Pcd,
    E57,
    /// XYZ, TXT, CSV, PTS: numbers in columns.
    Text,
    /// pcv's raw 16-byte records (`.bin`, `.pcv`).
    Raw,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ply => "PLY",
            Format::Las => "LAS",
            Format::Laz => "LAZ",
            Format::Pcd => "PCD",
            Format::E57 => "E57",
            Format::Text => "text",
            Format::Raw => "raw",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong in a file, and where.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum FormatError {
    #[error("byte {offset}: {msg}")]
    AtByte { offset: u64, msg: String },
    #[error("line {line}: {msg}")]
    AtLine { line: u64, msg: String },
    #[error("{0}")]
    Invalid(String),
}

impl FormatError {
    pub fn at_byte(offset: usize, msg: impl Into<String>) -> Self {
        FormatError::AtByte { offset: offset as u64, msg: msg.into() }
    }
    pub fn at_line(line: u64, msg: impl Into<String>) -> Self {
        FormatError::AtLine { line, msg: msg.into() }
    }
}

/// An axis-aligned box in f64, in a file's own coordinates.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DBounds {
    pub min: [f64; 3],
    pub max: [f64; 3],
}

impl Default for DBounds {
    fn default() -> Self {
        DBounds::EMPTY
    }
}

impl DBounds {
    pub const EMPTY: DBounds = DBounds { min: [f64::INFINITY; 3], max: [f64::NEG_INFINITY; 3] };

    pub fn is_empty(&self) -> bool {
        !(0..3).all(|i| self.min[i] <= self.max[i])
    }

    /// Grows the box to hold `p` (which must be finite: plain compares, no NaN handling).
    #[inline(always)]
    pub fn include(&mut self, p: [f64; 3]) {
        for (i, &v) in p.iter().enumerate() {
            self.min[i] = if v < self.min[i] { v } else { self.min[i] };
            self.max[i] = if v > self.max[i] { v } else { self.max[i] };
        }
    }

    pub fn union(a: DBounds, b: DBounds) -> DBounds {
        let mut r = a;
        for i in 0..3 {
            r.min[i] = a.min[i].min(b.min[i]);
            r.max[i] = a.max[i].max(b.max[i]);
        }
        r
    }

    pub fn center(&self) -> DVec3 {
        if self.is_empty() {
            DVec3::ZERO
        } else {
            (DVec3::from_array(self.min) + DVec3::from_array(self.max)) * 0.5
        }
    }

    /// Half the diagonal (0 when empty).
    pub fn radius(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            (DVec3::from_array(self.max) - DVec3::from_array(self.min)).length() * 0.5
        }
    }

    /// These bounds moved by `-origin` and rounded to f32: exactly the bounds of the points' f32
    /// positions, since subtracting and rounding are monotonic.
    pub fn to_local(&self, origin: DVec3) -> crate::cloud::Bounds {
        if self.is_empty() {
            return crate::cloud::Bounds::EMPTY;
        }
        let o = origin.to_array();
        let f = |v: [f64; 3]| glam::Vec3::new((v[0] - o[0]) as f32, (v[1] - o[1]) as f32, (v[2] - o[2]) as f32);
        crate::cloud::Bounds { min: f(self.min), max: f(self.max) }
    }
}

/// What `pcv info` says about a file, filled in by its decoder.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FileInfo {
    /// The format's variant: "binary_little_endian 1.0", "LAS 1.4, point format 7", ...
    pub variant: String,
    /// The point count the header declares, where it has one.
    pub declared_points: Option<u64>,
    /// The attributes read, with their storage: "rgb (uchar)", "intensity (float)", ...
    pub attributes: Vec<String>,
    /// Properties or fields present in the file but not read.
    pub skipped: Vec<String>,
    /// The bounds the header declares, where it has them (LAS, E57).
    pub header_bounds: Option<DBounds>,
    /// Anything else worth knowing (scales and offsets, the sensor, 8-bit colors in 16-bit fields, ...).
    pub notes: Vec<String>,
}

/// One decoded file.
#[derive(Debug, Default)]
pub struct Decoded {
    /// Positions relative to the origin the caller chose, and colors (the file's, or black where it
    /// has none: the loader paints those with the elevation ramp).
    pub points: Vec<Point>,
    pub intensity: Option<Vec<f32>>,
    pub classification: Option<Vec<u8>>,
    pub has_rgb: bool,
    /// Exact bounds of the kept points in the file's coordinates.
    pub bounds: DBounds,
    /// Points dropped for a NaN or infinite coordinate.
    pub nonfinite: u64,
    /// Points without a color of their own in a file that has colors (E57 scans without color);
    /// the loader paints them, and every point of files without `has_rgb`, with the elevation ramp.
    pub colorless: Vec<std::ops::Range<usize>>,
    pub info: FileInfo,
}

/// What the loader tells a decoder.
pub struct ReadOptions<'a> {
    /// Subtracted from every position (in f64) before it becomes f32.
    pub origin: DVec3,
    pub progress: &'a Progress,
}

/// A progress bar for long loads: hidden at first, drawn on stderr (when it is a terminal) once a load
/// has taken more than a second, with points/s and an ETA.
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    enabled: bool,
}

impl Progress {
    /// A bar over `total` points; `enabled: false` never draws.
    pub fn new(total: u64, enabled: bool) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("loading {prefix}{bar:40} {human_pos}/{human_len} points ({msg}, ETA {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress { bar, start: Instant::now(), shown: AtomicBool::new(false), enabled }
    }

    /// Never draws.
    pub fn hidden() -> Progress {
        Progress::new(0, false)
    }

    pub fn inc(&self, points: u64) {
        self.bar.inc(points);
        if !self.enabled {
            return;
        }
        let secs = self.start.elapsed().as_secs_f64();
        if self.shown.load(Ordering::Relaxed) {
            self.bar.set_message(format!("{:.1} M points/s", self.bar.position() as f64 / secs / 1e6));
        } else if secs > 1.0 && !self.shown.swap(true, Ordering::Relaxed) {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Grows the total (for files whose count is only known once opened).
    pub fn add_total(&self, points: u64) {
        self.bar.inc_length(points);
    }

    /// Names the file being loaded (shown before the bar).
    pub fn set_file(&self, name: String) {
        self.bar.set_prefix(format!("{name} "));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A vector of `n` zeroed points, allocated zeroed: the pages are mapped (and zeroed by the kernel) on
/// first write, by the threads that decode into them. (Huge pages were tried: `MADV_HUGEPAGE` made the
/// first load of a process 2–5× slower while the kernel compacted memory.)
pub fn zeroed_points(n: usize) -> Vec<Point> {
    if n == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<Point>(n) else {
        return vec![Point::default(); n]; // unreachable for any n a file can hold; this aborts cleanly
    };
    // SAFETY: `layout` has a non-zero size; a null return is handled; the memory is zeroed and all-zero
    // bytes are a valid `Point` (it is `Pod`); the Vec takes ownership with the same layout (align 4,
    // capacity n), so it is freed with the layout it was allocated with.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut Point;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Vec::from_raw_parts(ptr, n, n)
    }
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
static QUIET_HOOK: std::sync::Once = std::sync::Once::new();

/// The text of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_else(|| "panic".into())
}

/// Runs `f` and turns a panic inside it (on this thread) into `Err(message)`, without the panic hook
/// printing it. Corrupt files can make a dependency's decoder panic (the `laz` crate indexes its
/// tables with decoded values); for pcv that is an error naming the file, not a crash. The first call
/// wraps the process's panic hook once: panics outside these calls are reported as before.
pub fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_PANICS.with(|q| q.get()) == 0 {
                previous(info);
            }
        }));
    });
    QUIET_PANICS.with(|q| q.set(q.get() + 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(q.get() - 1));
    r.map_err(|p| panic_message(&*p))
}

/// One decoded record of a fixed-size-record format.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rec {
    pub xyz: [f64; 3],
    pub rgba: [u8; 4],
    pub intensity: f32,
    pub class: u8,
    /// A per-format value whose maximum over the file is returned (LAS: the largest color component,
    /// to tell 8-bit colors stored in 16-bit fields).
    pub aux: u16,
}

/// Which columns a decoder fills.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Columns {
    pub intensity: bool,
    pub classification: bool,
}

/// Output of [`decode_fixed`].
pub(crate) struct FixedOut {
    pub points: Vec<Point>,
    pub intensity: Option<Vec<f32>>,
    pub classification: Option<Vec<u8>>,
    pub bounds: DBounds,
    pub nonfinite: u64,
    pub aux_max: u16,
}

/// Records per parallel chunk.
const CHUNK_RECORDS: usize = 1 << 16;

/// What one chunk of records gave.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkStats {
    /// Index of the chunk's first output slot.
    pub start: usize,
    /// Points kept (written to the first `kept` slots).
    pub kept: usize,
    pub bounds: DBounds,
    pub nonfinite: u64,
    pub aux: u16,
}

/// Decodes the records in `src` (`stride` bytes each) with `f` into the output slices, which hold one
/// slot per record (the intensity and classification slices may be empty: not wanted).
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fill_chunk<F>(src: &[u8], stride: usize, f: &F, origin: &[f64; 3], start: usize, pts: &mut [Point], inten: &mut [f32], cls: &mut [u8]) -> ChunkStats
where
    F: Fn(&[u8]) -> Rec,
{
    let mut b = DBounds::EMPTY;
    let mut kept = 0usize;
    let mut nonfinite = 0u64;
    let mut aux = 0u16;
    for rec in src.chunks_exact(stride).take(pts.len()) {
        let r = f(rec);
        aux = aux.max(r.aux);
        if !(r.xyz[0].is_finite() && r.xyz[1].is_finite() && r.xyz[2].is_finite()) {
            nonfinite += 1;
            continue;
        }
        b.include(r.xyz);
        pts[kept] = Point {
            pos: [(r.xyz[0] - origin[0]) as f32, (r.xyz[1] - origin[1]) as f32, (r.xyz[2] - origin[2]) as f32],
            rgba: r.rgba,
        };
        if let Some(v) = inten.get_mut(kept) {
            *v = r.intensity;
        }
        if let Some(v) = cls.get_mut(kept) {
            *v = r.class;
        }
        kept += 1;
    }
    ChunkStats { start, kept, bounds: b, nonfinite, aux }
}

/// One chunk's output: its first slot and its pieces of the point, intensity and classification columns.
pub(crate) type ChunkOut<'a> = (usize, &'a mut [Point], &'a mut [f32], &'a mut [u8]);

/// Splits the output columns into consecutive mutable pieces of `sizes` slots (empty columns give
/// empty pieces).
pub(crate) fn split_columns<'a>(
    points: &'a mut [Point],
    intensity: &'a mut [f32],
    classes: &'a mut [u8],
    sizes: impl Iterator<Item = usize>,
) -> Vec<ChunkOut<'a>> {
    let (mut p, mut i, mut c) = (points, intensity, classes);
    let mut start = 0;
    let mut out = Vec::new();
    for n in sizes {
        let (np, ni, nc) = (n.min(p.len()), n.min(i.len()), n.min(c.len()));
        let (ph, pt) = std::mem::take(&mut p).split_at_mut(np);
        let (ih, it) = std::mem::take(&mut i).split_at_mut(ni);
        let (ch, ct) = std::mem::take(&mut c).split_at_mut(nc);
        out.push((start, ph, ih, ch));
        (p, i, c) = (pt, it, ct);
        start += n;
    }
    out
}

/// Decodes `count` records of `stride` bytes from the start of `body` (which the caller has checked
/// holds them) with `f`, on all cores.
pub(crate) fn decode_fixed<F>(body: &[u8], stride: usize, count: usize, cols: Columns, opts: &ReadOptions, f: F) -> FixedOut
where
    F: Fn(&[u8]) -> Rec + Sync,
{
    let mut points = zeroed_points(count);
    let mut intensity = if cols.intensity { vec![0f32; count] } else { Vec::new() };
    let mut classes = if cols.classification { vec![0u8; count] } else { Vec::new() };
    let records = &body[..count * stride];
    let origin = opts.origin.to_array();
    let sizes = (0..count.div_ceil(CHUNK_RECORDS)).map(|k| CHUNK_RECORDS.min(count - k * CHUNK_RECORDS));
    let jobs = split_columns(&mut points, &mut intensity, &mut classes, sizes);
    let stats: Vec<ChunkStats> = jobs
        .into_par_iter()
        .map(|(start, pts, inten, cls)| {
            let src = &records[start * stride..(start + pts.len()) * stride];
            let s = fill_chunk(src, stride, &f, &origin, start, pts, inten, cls);
            opts.progress.inc(pts.len() as u64);
            s
        })
        .collect();
    finish_chunks(points, intensity, classes, cols, &stats)
}

/// Joins chunk statistics and closes the gaps that dropped points left.
pub(crate) fn finish_chunks(
    mut points: Vec<Point>,
    mut intensity: Vec<f32>,
    mut classes: Vec<u8>,
    cols: Columns,
    stats: &[ChunkStats],
) -> FixedOut {
    let bounds = stats.iter().fold(DBounds::EMPTY, |a, r| DBounds::union(a, r.bounds));
    let nonfinite: u64 = stats.iter().map(|r| r.nonfinite).sum();
    let aux_max = stats.iter().map(|r| r.aux).max().unwrap_or(0);
    let total: usize = stats.iter().map(|r| r.kept).sum();
    if total < points.len() {
        compact(&mut points, stats);
        compact(&mut intensity, stats);
        compact(&mut classes, stats);
        points.truncate(total);
        intensity.truncate(if cols.intensity { total } else { 0 });
        classes.truncate(if cols.classification { total } else { 0 });
    }
    FixedOut {
        points,
        intensity: cols.intensity.then_some(intensity),
        classification: cols.classification.then_some(classes),
        bounds,
        nonfinite,
        aux_max,
    }
}

/// Moves each chunk's kept entries down to follow the previous chunk's.
fn compact<T: Copy>(v: &mut [T], stats: &[ChunkStats]) {
    if v.is_empty() {
        return;
    }
    let mut dst = 0;
    for s in stats {
        if s.start != dst {
            v.copy_within(s.start..s.start + s.kept, dst);
        }
        dst += s.kept;
    }
}

/// A line-aligned piece of a text file.
pub(crate) struct TextChunk<'a> {
    pub text: &'a [u8],
    /// Line number (1-based) of its first line.
    pub first_line: u64,
}

/// Splits `data` (starting at line `first_line`) into chunks of about `target` bytes that end at line
/// ends, and numbers their first lines (counted in parallel).
pub(crate) fn text_chunks(data: &[u8], first_line: u64, target: usize) -> Vec<TextChunk<'_>> {
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let mut end = (start + target).min(data.len());
        if end < data.len() {
            end = match memchr::memchr(b'\n', &data[end..]) {
                Some(i) => end + i + 1,
                None => data.len(),
            };
        }
        pieces.push(&data[start..end]);
        start = end;
    }
    let counts: Vec<u64> = pieces.par_iter().map(|p| memchr::memchr_iter(b'\n', p).count() as u64).collect();
    let mut line = first_line;
    pieces
        .into_iter()
        .zip(counts)
        .map(|(text, n)| {
            let c = TextChunk { text, first_line: line };
            line += n;
            c
        })
        .collect()
}

/// Per-point output of the text parsers, concatenated from their chunks.
#[derive(Default)]
pub(crate) struct Gathered {
    pub points: Vec<Point>,
    pub intensity: Vec<f32>,
    pub classification: Vec<u8>,
    pub bounds: DBounds,
    pub nonfinite: u64,
}

impl Gathered {
    pub fn new() -> Self {
        Gathered { bounds: DBounds::EMPTY, ..Default::default() }
    }

    /// Adds a point (dropping it, counted, when a coordinate is not finite).
    #[inline]
    pub fn push(&mut self, xyz: [f64; 3], rgba: [u8; 4], intensity: Option<f32>, class: Option<u8>, origin: &[f64; 3]) {
        if !(xyz[0].is_finite() && xyz[1].is_finite() && xyz[2].is_finite()) {
            self.nonfinite += 1;
            return;
        }
        self.bounds.include(xyz);
        self.points.push(Point {
            pos: [(xyz[0] - origin[0]) as f32, (xyz[1] - origin[1]) as f32, (xyz[2] - origin[2]) as f32],
            rgba,
        });
        if let Some(i) = intensity {
            self.intensity.push(i);
        }
        if let Some(c) = class {
            self.classification.push(c);
        }
    }

    /// Joins chunk outputs in order (one allocation per column).
    pub fn concat(parts: Vec<Gathered>) -> Gathered {
        if parts.len() == 1 {
            return parts.into_iter().next().unwrap_or_default();
        }
        let n: usize = parts.iter().map(|p| p.points.len()).sum();
        let ni: usize = parts.iter().map(|p| p.intensity.len()).sum();
        let nc: usize = parts.iter().map(|p| p.classification.len()).sum();
        let mut out = Gathered {
            points: Vec::with_capacity(n),
            intensity: Vec::with_capacity(ni),
            classification: Vec::with_capacity(nc),
            bounds: DBounds::EMPTY,
            nonfinite: 0,
        };
        for p in parts {
            out.points.extend_from_slice(&p.points);
            out.intensity.extend_from_slice(&p.intensity);
            out.classification.extend_from_slice(&p.classification);
            out.bounds = DBounds::union(out.bounds, p.bounds);
            out.nonfinite += p.nonfinite;
        }
        out
    }
}

/// Little-endian and big-endian field readers over a record (offsets are checked by the caller's
/// layout, so the slices are in range).
#[inline(always)]
pub(crate) fn bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// Scalar types of binary formats (PLY's and PCD's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Scalar {
    pub fn size(self) -> usize {
        match self {
            Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// Reads one value as f64 (little-endian when `le`).
    #[inline(always)]
    pub fn read(self, b: &[u8], off: usize, le: bool) -> f64 {
        macro_rules! rd {
            ($t:ty, $n:expr) => {{
                let a = bytes::<$n>(b, off);
                (if le { <$t>::from_le_bytes(a) } else { <$t>::from_be_bytes(a) }) as f64
            }};
        }
        match self {
            Scalar::I8 => b[off] as i8 as f64,
            Scalar::U8 => b[off] as f64,
            Scalar::I16 => rd!(i16, 2),
            Scalar::U16 => rd!(u16, 2),
            Scalar::I32 => rd!(i32, 4),
            Scalar::U32 => rd!(u32, 4),
            Scalar::I64 => rd!(i64, 8),
            Scalar::U64 => rd!(u64, 8),
            Scalar::F32 => rd!(f32, 4),
            Scalar::F64 => rd!(f64, 8),
        }
    }

    /// Reads a color channel as 0..=255: integers are shifted from their width (uchar as is, ushort
    /// >> 8), floats are taken as 0..1.
    #[inline(always)]
    pub fn read_color(self, b: &[u8], off: usize, le: bool) -> u8 {
        match self {
            Scalar::U8 | Scalar::I8 => b[off],
            Scalar::U16 | Scalar::I16 => (self.read(b, off, le) as u32 >> 8) as u8,
            Scalar::U32 | Scalar::I32 => (self.read(b, off, le) as u64 >> 24) as u8,
            Scalar::U64 | Scalar::I64 => (self.read(b, off, le) as u64 >> 56) as u8,
            Scalar::F32 | Scalar::F64 => color_from_unit(self.read(b, off, le)),
        }
    }
}

/// A 0..1 color value as 0..=255 (NaN as 0).
#[inline(always)]
pub(crate) fn color_from_unit(v: f64) -> u8 {
    (v * 255.0).round().clamp(0.0, 255.0) as u8
}

/// The first non-empty, non-comment lines of `data`, split into numbers, for estimating bounds.
pub(crate) fn sample_bounds(points: impl Iterator<Item = [f64; 3]>) -> Option<DBounds> {
    let mut b = DBounds::EMPTY;
    for p in points {
        if p.iter().all(|v| v.is_finite()) {
            b.include(p);
        }
    }
    (!b.is_empty()).then_some(b)
}

/// Evenly spaced record indices for sampling a fixed-record body (at most `max`).
pub(crate) fn sample_indices(count: usize, max: usize) -> impl Iterator<Item = usize> {
    let step = (count / max.max(1)).max(1);
    (0..count).step_by(step).chain(count.checked_sub(1))
}
