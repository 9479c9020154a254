//! The point file formats, and what their decoders share.
//!
//! How it works: every format opens a whole file from one byte slice (the file memory-mapped, or a
//! buffer in tests and fuzzing) as a [`ChunkSource`](crate::stream::ChunkSource): its header is
//! parsed and every count and offset in it checked against the bytes that follow, before anything is
//! allocated, and its points are split into jobs that decode independently — 64 Ki fixed-size records
//! (binary PLY, LAS, binary PCD, raw), one LAZ chunk, or a line-aligned piece of about 4 MiB of text
//! ([`text_chunks`] numbers the pieces' first lines in parallel, so every error can name its line).
//! [`crate::stream`] runs the jobs on all cores. A decoded point is a 16-byte [`Point`] whose
//! f32 position is the file's f64 coordinates minus an origin chosen by the caller, with optional
//! intensity and classification columns and the exact f64 bounds of the points in the file's own
//! coordinates; [`FileInfo`] is what `pcv info` says. Points with a NaN or infinite coordinate are
//! dropped and counted. Each format's `read` decodes a whole file into one [`Decoded`].
pub mod copc;
pub mod e57;
pub mod las;
pub mod las_extra;
pub mod pcd;
pub mod ply;
pub mod raw;
pub mod text;

use crate::point::Point;
use glam::DVec3;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
pub use pcv_model::fields::{Field, FieldSet};
pub use pcv_model::{DBounds, Format};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

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
    /// The other fields kept ([`FieldRequest`]), in [`Field::known`]'s order: one value a point.
    pub fields: Vec<(Field, Vec<f64>)>,
    pub has_rgb: bool,
    /// Exact bounds of the kept points in the file's coordinates.
    pub bounds: DBounds,
    /// Points dropped for a NaN or infinite coordinate.
    pub nonfinite: u64,
    /// Points without a color of their own in a file that has colors (E57 scans without color);
    /// the loader paints them, and every point of files without `has_rgb`, with the elevation ramp.
    pub colorless: Vec<std::ops::Range<usize>>,
    /// For a file with colors: the one color all its points have, when they all have the same (a
    /// writer that had no colors filled the fields with zeros, or one value).
    pub uniform_rgb: Option<[u8; 3]>,
    pub info: FileInfo,
}

/// What the loader tells a decoder.
pub struct ReadOptions<'a> {
    /// Subtracted from every position (in f64) before it becomes f32.
    pub origin: DVec3,
    pub progress: &'a Progress,
    /// Which other fields to keep as columns (LAS/LAZ: GPS time, returns, ...).
    pub fields: FieldRequest,
}

/// Which of a record's other fields ([`Field`]) a decoder keeps as columns: `fields` always, and
/// every field the file has when it holds at most `all_up_to_points` points (a column costs 8 bytes a
/// point while decoding, 4 once loaded). Fields a format lacks are never kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldRequest {
    pub fields: FieldSet,
    pub all_up_to_points: u64,
}

impl FieldRequest {
    /// No fields.
    pub const NONE: FieldRequest = FieldRequest { fields: FieldSet::NONE, all_up_to_points: 0 };

    /// The fields to keep of a file of `points` points.
    pub fn for_points(self, points: u64) -> FieldSet {
        if points <= self.all_up_to_points {
            FieldSet::ALL
        } else {
            self.fields
        }
    }
}

impl Default for FieldRequest {
    /// Every field of files up to 30 million points (at most 840 MB of columns for the seven).
    fn default() -> Self {
        FieldRequest { fields: FieldSet::NONE, all_up_to_points: 30_000_000 }
    }
}

/// A progress bar for long loads: hidden at first, drawn on stderr (when it is a terminal) once a load
/// has taken more than a second, with points/s and an ETA. The same counts go to a shared
/// [`LoadProgress`](crate::progress::LoadProgress) that a window can show ([`Progress::shared`]).
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    enabled: bool,
    shared: std::sync::Arc<crate::progress::LoadProgress>,
}

impl Progress {
    /// A bar over `total` points; `enabled: false` never draws.
    pub fn new(total: u64, enabled: bool) -> Progress {
        Progress::with_shared(total, enabled, Default::default())
    }

    /// A bar that also counts into `shared` (a window's view of the load).
    pub fn with_shared(total: u64, enabled: bool, shared: std::sync::Arc<crate::progress::LoadProgress>) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(
            ProgressStyle::with_template("loading {prefix}{bar:40} {human_pos}/{human_len} points ({msg}, ETA {eta})")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        shared.add_total(total);
        Progress { bar, start: Instant::now(), shown: AtomicBool::new(false), enabled, shared }
    }

    /// Never draws.
    pub fn hidden() -> Progress {
        Progress::new(0, false)
    }

    /// The counters this bar writes to, for a window.
    pub fn shared(&self) -> std::sync::Arc<crate::progress::LoadProgress> {
        self.shared.clone()
    }

    pub fn inc(&self, points: u64) {
        self.bar.inc(points);
        self.shared.add_done(points);
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
        self.shared.add_total(points);
    }

    /// Names the file being loaded (shown before the bar).
    pub fn set_file(&self, name: String) {
        self.shared.set_file(&name);
        self.bar.set_prefix(format!("{name} "));
    }

    pub fn finish(&self) {
        self.shared.finish();
        self.bar.finish_and_clear();
    }
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
static QUIET_HOOK: std::sync::Once = std::sync::Once::new();

/// The text of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
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

/// One decoded record of a fixed-size-record format (what a format's record function returns).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rec {
    pub xyz: [f64; 3],
    pub rgba: [u8; 4],
    pub intensity: f32,
    pub class: u8,
    /// A per-format value whose maximum over the file is returned (LAS: the largest color component,
    /// to tell 8-bit colors stored in 16-bit fields).
    pub aux: u16,
    /// The color at 16 bits where the file stores more than 8 (LAS, 16-bit PLY, ...); else `rgba` × 257.
    pub rgb16: Option<[u16; 3]>,
}

impl Rec {
    /// The color at 16 bits.
    #[inline]
    pub fn rgb16(&self) -> [u16; 3] {
        self.rgb16.unwrap_or([self.rgba[0] as u16 * 257, self.rgba[1] as u16 * 257, self.rgba[2] as u16 * 257])
    }
}

/// Which columns a decoder fills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub intensity: bool,
    pub classification: bool,
    /// The other fields (LAS/LAZ only), each into [`Staging::fields`](crate::stream::Staging::fields).
    pub fields: FieldSet,
}

/// Records per fixed-record job.
pub(crate) const JOB_RECORDS: usize = 1 << 16;

/// The jobs of `count` fixed-size records: `JOB_RECORDS` each, the last one shorter.
pub(crate) fn record_jobs(count: usize) -> usize {
    count.div_ceil(JOB_RECORDS)
}

/// The record range of fixed-record job `job` of `count` records.
pub(crate) fn record_range(job: usize, count: usize) -> std::ops::Range<usize> {
    let start = (job * JOB_RECORDS).min(count);
    start..(start + JOB_RECORDS).min(count)
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

/// Little-endian and big-endian field readers over a record (offsets are checked by the caller's
/// layout, so the slices are in range).
#[inline(always)]
pub(crate) fn bytes<const N: usize>(b: &[u8], off: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[off..off + N]);
    a
}

/// A record whose fields are read at offsets its length was checked against once (the hot loops of
/// the fixed-record formats read whole words, not byte by byte with a bounds check each).
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    rec: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Wraps `rec`, which must hold at least `needed` bytes: every read below stays under `needed`.
    #[inline(always)]
    pub fn new(rec: &'a [u8], needed: usize) -> Fields<'a> {
        assert!(rec.len() >= needed, "record of {} bytes, fields up to byte {needed}", rec.len());
        Fields { rec }
    }

    /// `N` bytes at `at`.
    ///
    /// # Safety
    /// `at + N` must not exceed the `needed` length [`Fields::new`] checked.
    #[inline(always)]
    pub unsafe fn get<const N: usize>(self, at: usize) -> [u8; N] {
        debug_assert!(at + N <= self.rec.len());
        // SAFETY: the caller keeps `at + N` within the length checked in `new`; `[u8; N]` has
        // alignment 1, so an unaligned read is fine.
        unsafe { (self.rec.as_ptr().add(at) as *const [u8; N]).read_unaligned() }
    }
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

impl Scalar {
    /// Reads a color channel as 0..=65535: 8-bit integers × 257, 16-bit as they are, wider ones shifted,
    /// floats taken as 0..1.
    #[inline(always)]
    pub fn read_color16(self, b: &[u8], off: usize, le: bool) -> u16 {
        match self {
            Scalar::U8 | Scalar::I8 => b[off] as u16 * 257,
            Scalar::U16 | Scalar::I16 => self.read(b, off, le) as u16,
            Scalar::U32 | Scalar::I32 => (self.read(b, off, le) as u64 >> 16) as u16,
            Scalar::U64 | Scalar::I64 => (self.read(b, off, le) as u64 >> 48) as u16,
            Scalar::F32 | Scalar::F64 => (self.read(b, off, le) * 65535.0).round().clamp(0.0, 65535.0) as u16,
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
