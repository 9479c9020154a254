//! Chunked decoding: every file format is a [`ChunkSource`] whose jobs (record ranges, LAZ chunks,
//! line-aligned pieces of text) are decoded on all cores into small reusable [`Staging`] buffers and
//! handed, in file order, to a sink as each is ready.
//!
//! How it works: [`stream`] starts one decoding thread per core (`rayon::current_num_threads`, so
//! `RAYON_NUM_THREADS` applies) and runs the sink on the calling thread. A worker takes a free staging
//! slot from a fixed pool (2 per worker + 1), then claims the next job index, decodes the job into the
//! slot and sends it to the calling thread, which passes the slots to the sink strictly in job order and
//! returns each to the pool. The pool is the memory bound: at most `slots × job size` decoded points
//! exist at once, whatever the file's size, and a decoder that runs ahead of the sink waits for a slot.
//! Because every worker holds a slot before it claims a job, the lowest unfinished job always has one,
//! so the pipeline cannot stall. Small inputs (a single job, or one thread) are decoded on the calling
//! thread without starting any.
//!
//! A job's size is bounded by the source (64 Ki records, a LAZ chunk, about 4 MiB of text), so the
//! staging slots stay a few MiB each; a job whose count a file declares (a LAZ chunk) grows its slot as
//! its points are actually decoded, never by the declared count alone. [`Collect`] is the sink that
//! gathers everything into host vectors ([`crate::formats::Decoded`]), reserving only what the
//! source says its file can hold. Other sinks (a backend's upload) take the points chunk by chunk.
use crate::formats::{Columns, DBounds, Decoded, Field, FileInfo, FormatError, Progress, Rec};
use crate::point::Point;
use crate::subsample::Even;
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

/// One job's decoded points and columns.
#[derive(Debug, Default)]
pub struct Staging {
    /// The job's index (set by the driver).
    pub job: usize,
    /// Positions relative to the origin, and colors.
    pub points: Vec<Point>,
    /// Intensity per point (empty when the source has none).
    pub intensity: Vec<f32>,
    /// Classification per point (empty when the source has none).
    pub classification: Vec<u8>,
    /// The other fields `cols.fields` names, in its order: one value per point each.
    pub fields: Vec<Vec<f64>>,
    /// Exact f64 bounds of the kept points, in the file's coordinates.
    pub bounds: DBounds,
    /// Points dropped for a NaN or infinite coordinate.
    pub nonfinite: u64,
    /// The largest per-format auxiliary value seen (LAS: the largest color component).
    pub aux_max: u16,
    /// The points have no color of their own (an E57 scan without color in a file with colors).
    pub colorless: bool,
    /// Which columns to fill.
    pub cols: Columns,
    /// A decoder's own scratch buffer (LAZ: the decompressed records), kept with the slot.
    pub scratch: Vec<u8>,
    /// Also keep the exact f64 coordinates and 16-bit colors (`pcv convert`).
    pub keep_f64: bool,
    /// With `keep_f64`: each kept point's coordinates in the file's own coordinates, exactly as decoded.
    pub xyz64: Vec<[f64; 3]>,
    /// With `keep_f64`: each kept point's color at 16 bits (LAS's own values; 8-bit colors × 257).
    pub rgb16: Vec<[u16; 3]>,
    /// With `keep_f64`: the job's first dropped point, counted over its kept and dropped points.
    pub first_nonfinite: Option<u64>,
    /// For a source with colors: the color every point of the job has, when they all have the same.
    pub uniform_rgba: Option<[u8; 4]>,
    /// Points decoded but left out of a subsample by a post step ([`Staging::keep_evenly`]): counted as
    /// read (progress, [`StreamStats::kept`]), not handed on.
    pub left_out: u64,
}

impl Staging {
    /// Empties the slot for job `job`, keeping its allocations.
    pub fn reset(&mut self, job: usize, cols: Columns) {
        self.job = job;
        self.points.clear();
        self.intensity.clear();
        self.classification.clear();
        self.fields.resize_with(cols.fields.len(), Vec::new);
        self.fields.iter_mut().for_each(Vec::clear);
        self.xyz64.clear();
        self.rgb16.clear();
        self.first_nonfinite = None;
        self.uniform_rgba = None;
        self.bounds = DBounds::EMPTY;
        self.nonfinite = 0;
        self.left_out = 0;
        self.aux_max = 0;
        self.colorless = false;
        self.cols = cols;
    }

    /// Points in the slot.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Records the slot's job read: points kept, dropped for a non-finite coordinate, or left out of a
    /// subsample (what progress counts).
    pub fn records_read(&self) -> u64 {
        self.points.len() as u64 + self.nonfinite + self.left_out
    }

    /// Keeps the slot's points that stay in the subsample `e` (every column), its first point being
    /// point `first` of the order `e` counts; the others are counted in `left_out`.
    pub fn keep_evenly(&mut self, e: Even, first: u64) {
        let before = self.points.len();
        e.thin(&mut self.points, first);
        e.thin(&mut self.intensity, first);
        e.thin(&mut self.classification, first);
        for v in &mut self.fields {
            e.thin(v, first);
        }
        e.thin(&mut self.xyz64, first);
        e.thin(&mut self.rgb16, first);
        self.left_out += (before - self.points.len()) as u64;
    }

    /// Keeps the slot's points for which `keep(k)` holds (every column); the others are counted in
    /// `left_out` (a filter's hidden points, like a subsample's).
    pub fn retain(&mut self, keep: impl Fn(usize) -> bool) {
        use crate::subsample::keep_masked as thin;
        let mask: Vec<bool> = (0..self.points.len()).map(keep).collect();
        let before = self.points.len();
        thin(&mut self.points, &mask);
        thin(&mut self.intensity, &mask);
        thin(&mut self.classification, &mask);
        for v in &mut self.fields {
            thin(v, &mask);
        }
        thin(&mut self.xyz64, &mask);
        thin(&mut self.rgb16, &mask);
        self.left_out += (before - self.points.len()) as u64;
    }

    /// Adds a point (dropping it, counted, when a coordinate is not finite).
    #[inline]
    pub fn push(&mut self, xyz: [f64; 3], rgba: [u8; 4], intensity: f32, class: u8, origin: &[f64; 3]) {
        self.push_rec(&Rec { xyz, rgba, intensity, class, ..Default::default() }, origin);
    }

    /// Adds a decoded record's point (dropping it, counted, when a coordinate is not finite); whether
    /// it was kept.
    #[inline]
    pub(crate) fn push_rec(&mut self, r: &Rec, origin: &[f64; 3]) -> bool {
        let xyz = r.xyz;
        if !(xyz[0].is_finite() && xyz[1].is_finite() && xyz[2].is_finite()) {
            if self.keep_f64 && self.first_nonfinite.is_none() {
                self.first_nonfinite = Some(self.points.len() as u64 + self.nonfinite);
            }
            self.nonfinite += 1;
            return false;
        }
        self.bounds.include(xyz);
        self.points.push(Point {
            pos: [(xyz[0] - origin[0]) as f32, (xyz[1] - origin[1]) as f32, (xyz[2] - origin[2]) as f32],
            rgba: r.rgba,
        });
        if self.cols.intensity {
            self.intensity.push(r.intensity);
        }
        if self.cols.classification {
            self.classification.push(r.class);
        }
        if self.keep_f64 {
            self.xyz64.push(xyz);
            self.rgb16.push(r.rgb16());
        }
        true
    }

    /// Adds a decoded record's point and, when it is kept, its fields `values` (one per column of
    /// `cols.fields`, in its order): for decoders that read a record's values one at a time.
    pub(crate) fn push_with_fields(&mut self, r: &Rec, values: &[f64], origin: &[f64; 3]) {
        if self.push_rec(r, origin) && !self.cols.fields.is_empty() {
            self.fields.resize_with(values.len(), Vec::new);
            for (column, &v) in self.fields.iter_mut().zip(values) {
                column.push(v);
            }
        }
    }

    /// [`Staging::push_records`] for a source asked for other fields: each kept record's fields
    /// `cols.fields` read by `field` from its bytes, a record at a time.
    pub(crate) fn push_records_with_fields<F: Fn(&[u8]) -> Rec, X: Fn(&[u8], Field) -> f64>(
        &mut self,
        src: &[u8],
        stride: usize,
        f: &F,
        field: &X,
        origin: &[f64; 3],
    ) {
        let wanted: Vec<Field> = self.cols.fields.iter().collect();
        self.fields.resize_with(wanted.len(), Vec::new);
        for rec in src.chunks_exact(stride) {
            let r = f(rec);
            self.aux_max = self.aux_max.max(r.aux);
            if self.push_rec(&r, origin) {
                for (column, &w) in self.fields.iter_mut().zip(&wanted) {
                    column.push(field(rec, w));
                }
            }
        }
    }

    /// Room for `n` more points, as uninitialized slices of the point, intensity and classification
    /// columns (the last two empty when not wanted); [`Staging::commit`] then keeps the first `kept`.
    #[inline]
    pub(crate) fn spare(&mut self, n: usize) -> Spare<'_> {
        let (want_i, want_c) = (self.cols.intensity, self.cols.classification);
        self.points.reserve(n);
        self.intensity.reserve(if want_i { n } else { 0 });
        self.classification.reserve(if want_c { n } else { 0 });
        (
            &mut self.points.spare_capacity_mut()[..n],
            &mut self.intensity.spare_capacity_mut()[..if want_i { n } else { 0 }],
            &mut self.classification.spare_capacity_mut()[..if want_c { n } else { 0 }],
        )
    }

    /// Keeps the first `kept` points written into [`Staging::spare`]'s slices.
    ///
    /// # Safety
    /// The first `kept` elements of each slice `spare` returned (the intensity and classification
    /// ones only when wanted) must have been written, and `kept` must not exceed the `n` asked for.
    #[inline]
    pub(crate) unsafe fn commit(&mut self, kept: usize) {
        // SAFETY: the caller wrote the first `kept` spare elements of each wanted column, within the
        // capacity `spare` reserved.
        unsafe {
            self.points.set_len(self.points.len() + kept);
            if self.cols.intensity {
                self.intensity.set_len(self.intensity.len() + kept);
            }
            if self.cols.classification {
                self.classification.set_len(self.classification.len() + kept);
            }
        }
    }

    /// Decodes every `stride`-byte record of `src` with `f` and appends the points (the fixed-record
    /// formats' inner loop: no per-point capacity checks).
    #[inline]
    pub(crate) fn push_records<F: Fn(&[u8]) -> Rec>(&mut self, src: &[u8], stride: usize, f: &F, origin: &[f64; 3]) {
        if self.keep_f64 {
            // The exact path (`pcv convert`): one point at a time, keeping f64 and 16-bit colors.
            for rec in src.chunks_exact(stride) {
                self.push_rec(&f(rec), origin);
            }
            return;
        }
        let n = src.len() / stride;
        self.points.reserve(n);
        let (want_i, want_c) = (self.cols.intensity, self.cols.classification);
        if want_i {
            self.intensity.reserve(n);
        }
        if want_c {
            self.classification.reserve(n);
        }
        let (p0, i0, c0) = (self.points.len(), self.intensity.len(), self.classification.len());
        let pts = &mut self.points.spare_capacity_mut()[..n];
        let inten = &mut self.intensity.spare_capacity_mut()[..if want_i { n } else { 0 }];
        let cls = &mut self.classification.spare_capacity_mut()[..if want_c { n } else { 0 }];
        let mut b = self.bounds;
        let mut kept = 0usize;
        let mut nonfinite = 0u64;
        let mut aux = self.aux_max;
        for rec in src.chunks_exact(stride) {
            let r = f(rec);
            aux = aux.max(r.aux);
            if !(r.xyz[0].is_finite() && r.xyz[1].is_finite() && r.xyz[2].is_finite()) {
                nonfinite += 1;
                continue;
            }
            b.include(r.xyz);
            pts[kept].write(Point {
                pos: [(r.xyz[0] - origin[0]) as f32, (r.xyz[1] - origin[1]) as f32, (r.xyz[2] - origin[2]) as f32],
                rgba: r.rgba,
            });
            if let Some(v) = inten.get_mut(kept) {
                v.write(r.intensity);
            }
            if let Some(v) = cls.get_mut(kept) {
                v.write(r.class);
            }
            kept += 1;
        }
        // SAFETY: the first `kept` elements of each spare capacity were written above (the intensity and
        // classification ones only when wanted, and their lengths only grow when wanted); `kept <= n`
        // and the capacities were reserved for `n` more.
        unsafe {
            self.points.set_len(p0 + kept);
            if want_i {
                self.intensity.set_len(i0 + kept);
            }
            if want_c {
                self.classification.set_len(c0 + kept);
            }
        }
        self.bounds = b;
        self.nonfinite += nonfinite;
        self.aux_max = aux;
    }
}

impl Staging {
    /// Sets [`Staging::uniform_rgba`] (a pass over the slot's points, which are in cache).
    fn note_uniform_color(&mut self) {
        let first = self.points.first().map(|p| p.rgba);
        self.uniform_rgba = first.filter(|c| self.points.iter().all(|p| p.rgba == *c));
    }
}

/// Uninitialized room in a slot's point, intensity and classification columns.
pub(crate) type Spare<'a> = (&'a mut [MaybeUninit<Point>], &'a mut [MaybeUninit<f32>], &'a mut [MaybeUninit<u8>]);

/// What a source says once every job was decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The points are right.
    Done,
    /// Decode every job again (the source changed its own settings): a guess made at opening (LAS's
    /// 8-bit colors) was contradicted by later points.
    Again,
}

/// Totals over a stream's jobs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamStats {
    /// Points decoded with finite coordinates (those a subsample left out included).
    pub kept: u64,
    pub nonfinite: u64,
    pub bounds: DBounds,
    pub aux_max: u16,
    /// For a source with colors: whether every point has the same color (its value), once a job had
    /// points; `Varied` once two differ.
    pub colors: Colors,
    /// With `keep_f64`: the first dropped point, counted over every point of the file (kept and dropped).
    pub first_nonfinite: Option<u64>,
}

/// Whether a source's colors carry anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Colors {
    /// No colored point seen (yet), or the source has no colors.
    #[default]
    None,
    /// Every point so far has this color.
    Uniform([u8; 4]),
    /// Points differ.
    Varied,
}

impl StreamStats {
    fn add(&mut self, s: &Staging) {
        if !s.points.is_empty() && !s.colorless {
            self.colors = match (self.colors, s.uniform_rgba) {
                (Colors::None, Some(c)) => Colors::Uniform(c),
                (Colors::Uniform(a), Some(c)) if a == c => Colors::Uniform(a),
                _ => Colors::Varied,
            };
        }
        if self.first_nonfinite.is_none() {
            self.first_nonfinite = s.first_nonfinite.map(|i| self.kept + self.nonfinite + i);
        }
        self.kept += s.points.len() as u64 + s.left_out;
        self.nonfinite += s.nonfinite;
        self.bounds = DBounds::union(self.bounds, s.bounds);
        self.aux_max = self.aux_max.max(s.aux_max);
    }
}

/// A file opened for decoding: its header parsed and checked, its jobs listed.
pub trait ChunkSource: Sync {
    /// Number of jobs.
    fn jobs(&self) -> usize;
    /// At most this many points come from job `job` (for progress; a declared count, not a promise).
    fn job_points(&self, job: usize) -> u64;
    /// Points it is safe to reserve room for before decoding: bounded by the file's size.
    fn reserve_points(&self) -> u64;
    /// Whether every job holds exactly [`ChunkSource::job_points`] records or fails to decode (fixed-size
    /// records whose count the header declared and opening checked; LAZ chunks, whose decoder stops at
    /// the declared count), with a total within [`ChunkSource::reserve_points`]: a sink may then place
    /// each job's points at a known offset (see [`Placement`]; points dropped as non-finite leave gaps
    /// that are closed afterwards).
    fn exact_jobs(&self) -> bool {
        false
    }
    /// The bytes of the file job `job` reads, where they are one range (so a streaming load can let
    /// the mapping drop them once the job is done).
    fn job_bytes(&self, _job: usize) -> Option<std::ops::Range<usize>> {
        None
    }
    /// Which columns the points carry besides position and color.
    fn columns(&self) -> Columns;
    /// Whether the file has colors of its own.
    fn has_rgb(&self) -> bool;
    /// Decodes job `job` into `out` (reset for it), positions relative to `origin`.
    fn decode(&self, job: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError>;
    /// Checks the totals once every job was decoded (counts a header declared, guesses made at opening).
    fn finish(&self, _stats: &StreamStats) -> Result<Verdict, FormatError> {
        Ok(Verdict::Done)
    }
    /// What `pcv info` says about the file (after [`ChunkSource::finish`]).
    fn info(&self) -> FileInfo;
    /// A cheap estimate of the bounds (header, or a sample), for choosing the origin before decoding.
    fn estimate(&self) -> Option<DBounds>;
    /// How precisely the file stores coordinates (what `pcv convert` must keep); asked after every
    /// job was decoded (text learns its decimals while decoding).
    fn precision(&self) -> Precision {
        Precision::F64
    }
}

/// How precisely a file stores its coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Precision {
    /// Integers times a scale plus an offset (LAS): the scale per axis.
    Scaled([f64; 3]),
    /// 32-bit floats: every coordinate is exactly an f32.
    F32,
    /// Decimal text with at most this many digits after the point on each axis (no exponents).
    Decimals([u8; 3]),
    /// 64-bit floats, or decimals in exponent notation.
    F64,
}

/// Why a stream stopped: a job's decoder, or the sink.
#[derive(Debug)]
pub enum StreamError<E> {
    Decode(FormatError),
    Sink(E),
}

/// Decodes every job of `src` on all cores and hands the slots to `sink` in job order. Returns the
/// totals. A decoder's error stops the stream (the first in job order is returned), as does the sink's.
pub fn stream<E>(
    src: &dyn ChunkSource,
    origin: &[f64; 3],
    progress: &Progress,
    sink: &mut dyn FnMut(&Staging) -> Result<(), E>,
) -> Result<StreamStats, StreamError<E>> {
    stream_with(src, origin, progress, false, sink)
}

/// [`stream`], with `keep_f64`: the slots also hold the exact f64 coordinates and 16-bit colors.
pub fn stream_with<E>(
    src: &dyn ChunkSource,
    origin: &[f64; 3],
    progress: &Progress,
    keep_f64: bool,
    sink: &mut dyn FnMut(&Staging) -> Result<(), E>,
) -> Result<StreamStats, StreamError<E>> {
    stream_placed(src, origin, progress, keep_f64, None, None, sink)
}

/// A destination the decoding workers copy each job's points into themselves (in parallel, so the
/// copy and the page faults of fresh memory are spread over the cores), for sources with exact jobs:
/// job `j`'s points go to slots `first[j]..first[j + 1]` of the three columns.
pub struct Placement {
    points: *mut Point,
    intensity: *mut f32,
    classification: *mut u8,
    first: Vec<usize>,
}

// SAFETY: the pointers are only written through `place`, each job into its own disjoint range of
// slots, and the caller keeps the buffers alive and unmoved while the stream runs.
unsafe impl Sync for Placement {}

impl Placement {
    /// Copies job `st.job`'s points into its range.
    fn place(&self, st: &Staging) -> Result<(), FormatError> {
        let (start, cap) = (self.first[st.job], self.first[st.job + 1] - self.first[st.job]);
        let n = st.points.len();
        if n > cap
            || (!st.intensity.is_empty() && self.intensity.is_null())
            || (!st.classification.is_empty() && self.classification.is_null())
        {
            return Err(FormatError::Invalid(format!(
                "job {} decoded {n} points, more than its {cap} records",
                st.job
            )));
        }
        // SAFETY: `start + n <= first[job + 1]`, inside the buffers the owner allocated for
        // `first[jobs]` slots; no other job writes this range; the staging vectors do not overlap
        // the destination (they are separate allocations); the intensity and classification
        // columns are copied only when the destination has them (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(st.points.as_ptr(), self.points.add(start), n);
            if !st.intensity.is_empty() {
                std::ptr::copy_nonoverlapping(st.intensity.as_ptr(), self.intensity.add(start), n);
            }
            if !st.classification.is_empty() {
                std::ptr::copy_nonoverlapping(st.classification.as_ptr(), self.classification.add(start), n);
            }
        }
        Ok(())
    }
}

/// Work a decoding worker does on each slot after decoding it, before the sink sees it (recoloring:
/// spread over the cores instead of the sink's one thread).
pub type Post<'a> = &'a (dyn Fn(&mut Staging) + Sync);

/// [`stream`], with `post` run on every slot by the worker that decoded it.
pub fn stream_post<E>(
    src: &dyn ChunkSource,
    origin: &[f64; 3],
    progress: &Progress,
    post: Post,
    sink: &mut dyn FnMut(&Staging) -> Result<(), E>,
) -> Result<StreamStats, StreamError<E>> {
    stream_placed(src, origin, progress, false, None, Some(post), sink)
}

/// [`stream_with`], with the workers placing each job's points into `place` before the sink sees it.
pub(crate) fn stream_placed<E>(
    src: &dyn ChunkSource,
    origin: &[f64; 3],
    progress: &Progress,
    keep_f64: bool,
    place: Option<&Placement>,
    post: Option<Post>,
    sink: &mut dyn FnMut(&Staging) -> Result<(), E>,
) -> Result<StreamStats, StreamError<E>> {
    let jobs = src.jobs();
    let cols = src.columns();
    let has_rgb = src.has_rgb();
    let workers = rayon::current_num_threads().min(jobs).max(1);
    let mut stats = StreamStats { bounds: DBounds::EMPTY, ..Default::default() };
    if workers == 1 {
        let mut st = Staging { keep_f64, ..Default::default() };
        for j in 0..jobs {
            st.reset(j, cols);
            src.decode(j, origin, &mut st).map_err(StreamError::Decode)?;
            if has_rgb {
                st.note_uniform_color();
            }
            if let Some(f) = post {
                f(&mut st);
            }
            if let Some(p) = place {
                p.place(&st).map_err(StreamError::Decode)?;
            }
            progress.inc(st.records_read());
            stats.add(&st);
            sink(&st).map_err(StreamError::Sink)?;
        }
        return Ok(stats);
    }
    let slots = 2 * workers + 1;
    let pool = Mutex::new((0..slots).map(|_| Staging { keep_f64, ..Default::default() }).collect::<Vec<_>>());
    let freed = Condvar::new();
    let next_job = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<(usize, Result<Staging, FormatError>)>();
    let take_slot = || -> Option<Staging> {
        let mut free = pool.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if stop.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(s) = free.pop() {
                return Some(s);
            }
            free = freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    };
    let give_back = |s: Staging| {
        pool.lock().unwrap_or_else(|p| p.into_inner()).push(s);
        freed.notify_one();
    };
    let halt = || {
        stop.store(true, Ordering::Relaxed);
        // Wake every waiting worker (taking the lock orders this after their check).
        drop(pool.lock());
        freed.notify_all();
    };
    let mut first_err: Option<(usize, StreamError<E>)> = None;
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (take_slot, give_back) = (&take_slot, &give_back);
            let (next_job, stop) = (&next_job, &stop);
            scope.spawn(move || loop {
                let Some(mut st) = take_slot() else { return };
                let j = next_job.fetch_add(1, Ordering::Relaxed);
                if j >= jobs || stop.load(Ordering::Relaxed) {
                    give_back(st);
                    return;
                }
                st.reset(j, cols);
                let r = match crate::formats::catch_quietly(|| src.decode(j, origin, &mut st)) {
                    Ok(r) => r,
                    Err(panic) => Err(FormatError::Invalid(format!("the decoder failed on this data ({panic})"))),
                };
                if has_rgb && r.is_ok() {
                    st.note_uniform_color();
                }
                if let (Some(f), true) = (post, r.is_ok()) {
                    f(&mut st);
                }
                let r = r.and_then(|()| place.map_or(Ok(()), |p| p.place(&st)));
                let failed = r.is_err();
                if !failed {
                    progress.inc(st.records_read());
                }
                let msg = match r {
                    Ok(()) => Ok(st),
                    Err(e) => {
                        give_back(st);
                        Err(e)
                    }
                };
                if tx.send((j, msg)).is_err() || failed {
                    return;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<usize, Staging> = BTreeMap::new();
        let mut next = 0usize;
        for (j, r) in rx {
            match r {
                Ok(st) => {
                    pending.insert(j, st);
                }
                Err(e) => {
                    if first_err.as_ref().is_none_or(|(k, _)| j < *k) {
                        first_err = Some((j, StreamError::Decode(e)));
                    }
                    halt();
                }
            }
            while let Some(st) = pending.remove(&next) {
                if first_err.is_none() {
                    stats.add(&st);
                    if let Err(e) = sink(&st) {
                        first_err = Some((next, StreamError::Sink(e)));
                        halt();
                    }
                }
                give_back(st);
                next += 1;
            }
        }
    });
    match first_err {
        Some((_, e)) => Err(e),
        None => Ok(stats),
    }
}

/// The sink that gathers every point into host vectors.
#[derive(Default)]
pub struct Collect {
    pub points: Vec<Point>,
    pub intensity: Vec<f32>,
    pub classification: Vec<u8>,
    /// The other fields, as [`Staging::fields`].
    pub fields: Vec<Vec<f64>>,
    /// Ranges of points without a color of their own.
    pub colorless: Vec<Range<usize>>,
    pub xyz64: Vec<[f64; 3]>,
    pub rgb16: Vec<[u16; 3]>,
}

impl Collect {
    /// Room for `src`'s points, as much as its file can hold.
    pub fn for_source(src: &dyn ChunkSource) -> Collect {
        let n = usize::try_from(src.reserve_points()).unwrap_or(0);
        let cols = src.columns();
        Collect {
            points: Vec::with_capacity(n),
            intensity: Vec::with_capacity(if cols.intensity { n } else { 0 }),
            classification: Vec::with_capacity(if cols.classification { n } else { 0 }),
            ..Default::default()
        }
    }

    /// Appends one slot.
    pub fn push(&mut self, st: &Staging) {
        let at = self.points.len();
        self.points.extend_from_slice(&st.points);
        self.intensity.extend_from_slice(&st.intensity);
        self.classification.extend_from_slice(&st.classification);
        self.fields.resize_with(st.fields.len(), Vec::new);
        for (to, from) in self.fields.iter_mut().zip(&st.fields) {
            to.extend_from_slice(from);
        }
        self.xyz64.extend_from_slice(&st.xyz64);
        self.rgb16.extend_from_slice(&st.rgb16);
        if st.colorless && !st.points.is_empty() {
            match self.colorless.last_mut() {
                Some(r) if r.end == at => r.end = at + st.points.len(),
                _ => self.colorless.push(at..at + st.points.len()),
            }
        }
    }
}

/// Decodes all of `src` into host vectors: the whole file as one [`Decoded`]. A source that asks for
/// it is decoded a second time (see [`Verdict::Again`]).
pub fn collect(src: &dyn ChunkSource, origin: &[f64; 3], progress: &Progress) -> Result<Decoded, FormatError> {
    Ok(collect_with(src, origin, progress, false)?.0)
}

/// [`collect`], with `keep_f64`: also every point's exact f64 coordinates and 16-bit color, and the
/// totals (the first dropped point among them). Sources with exact jobs are decoded straight into
/// place (see [`Placement`]); others through the sink, which appends.
pub fn collect_with(
    src: &dyn ChunkSource,
    origin: &[f64; 3],
    progress: &Progress,
    keep_f64: bool,
) -> Result<(Decoded, Exact), FormatError> {
    let unify = |e: StreamError<FormatError>| match e {
        StreamError::Decode(e) | StreamError::Sink(e) => e,
    };
    let cols = src.columns();
    loop {
        let mut out = Collect::default();
        let mut kept: Vec<usize> = Vec::new();
        // (Other fields are appended by the sink: the workers' placement copies the three columns.)
        let direct = src.exact_jobs() && !keep_f64 && cols.fields.is_empty();
        let stats = if direct {
            // Each job's points land at its first record's index; dropped points leave gaps, closed below.
            let mut first = Vec::with_capacity(src.jobs() + 1);
            let mut total = 0usize;
            for j in 0..src.jobs() {
                first.push(total);
                total += src.job_points(j) as usize;
            }
            first.push(total);
            out.points.reserve_exact(total);
            if cols.intensity {
                out.intensity.reserve_exact(total);
            }
            if cols.classification {
                out.classification.reserve_exact(total);
            }
            let place = Placement {
                points: out.points.as_mut_ptr(),
                intensity: if cols.intensity { out.intensity.as_mut_ptr() } else { std::ptr::null_mut() },
                classification: if cols.classification {
                    out.classification.as_mut_ptr()
                } else {
                    std::ptr::null_mut()
                },
                first: first.clone(),
            };
            let mut colorless = Vec::new();
            let stats = stream_placed(src, origin, progress, false, Some(&place), None, &mut |st: &Staging| -> Result<
                (),
                FormatError,
            > {
                kept.push(st.len());
                if st.colorless && !st.is_empty() {
                    colorless.push(first[st.job]..first[st.job] + st.len());
                }
                Ok(())
            })
            .map_err(unify)?;
            // SAFETY: the workers wrote `kept[j]` points (and intensities, classes where the columns
            // exist) at `first[j]..` for every job `j` (the stream succeeded, so every job was placed
            // and seen by the sink in order); `close_gaps` moves them down to be contiguous before the
            // lengths are set to the total kept.
            unsafe { out.close_gaps(&first, &kept, cols) };
            out.colorless = colorless; // (sources with exact jobs never drop whole colorless jobs)
            stats
        } else {
            out = Collect::for_source(src);
            stream_with(src, origin, progress, keep_f64, &mut |st: &Staging| -> Result<(), FormatError> {
                out.push(st);
                Ok(())
            })
            .map_err(unify)?
        };
        if src.finish(&stats)? == Verdict::Again {
            continue;
        }
        let exact = Exact { xyz: out.xyz64, rgb16: out.rgb16, stats };
        let d = Decoded {
            points: out.points,
            intensity: cols.intensity.then_some(out.intensity),
            classification: cols.classification.then_some(out.classification),
            fields: cols.fields.iter().zip(out.fields).collect(),
            has_rgb: src.has_rgb(),
            bounds: stats.bounds,
            nonfinite: stats.nonfinite,
            colorless: out.colorless,
            uniform_rgb: match stats.colors {
                Colors::Uniform(c) if src.has_rgb() => Some([c[0], c[1], c[2]]),
                _ => None,
            },
            info: src.info(),
        };
        return Ok((d, exact));
    }
}

impl Collect {
    /// Moves each job's `kept[j]` placed points from `first[j]` down to follow the previous job's,
    /// then sets the columns' lengths.
    ///
    /// # Safety
    /// Slots `first[j]..first[j] + kept[j]` of each column (intensity and classification when `cols`
    /// has them) must have been written, within the capacity reserved for `first[jobs]` slots.
    unsafe fn close_gaps(&mut self, first: &[usize], kept: &[usize], cols: Columns) {
        fn close<T: Copy>(v: &mut Vec<T>, first: &[usize], kept: &[usize]) {
            let p = v.as_mut_ptr();
            let mut dst = 0usize;
            for (j, &k) in kept.iter().enumerate() {
                if first[j] != dst {
                    // SAFETY: both ranges lie within the written, reserved slots (the caller's
                    // contract); `copy` handles the overlap of moving down.
                    unsafe { std::ptr::copy(p.add(first[j]), p.add(dst), k) };
                }
                dst += k;
            }
            // SAFETY: the first `dst` slots now hold the kept elements, in order.
            unsafe { v.set_len(dst) };
        }
        close(&mut self.points, first, kept);
        if cols.intensity {
            close(&mut self.intensity, first, kept);
        }
        if cols.classification {
            close(&mut self.classification, first, kept);
        }
    }
}

/// What [`collect_with`] keeps besides a [`Decoded`] when asked for exact values.
#[derive(Debug, Default)]
pub struct Exact {
    /// Every kept point's coordinates in the file's coordinates, as decoded (f64).
    pub xyz: Vec<[f64; 3]>,
    /// Every kept point's color at 16 bits.
    pub rgb16: Vec<[u16; 3]>,
    pub stats: StreamStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs of `sizes[j]` points at x = global index; job `bad` fails.
    struct Fake {
        sizes: Vec<usize>,
        bad: Option<usize>,
    }

    impl ChunkSource for Fake {
        fn jobs(&self) -> usize {
            self.sizes.len()
        }
        fn job_points(&self, j: usize) -> u64 {
            self.sizes[j] as u64
        }
        fn reserve_points(&self) -> u64 {
            0
        }
        fn columns(&self) -> Columns {
            Columns { intensity: true, classification: false, ..Default::default() }
        }
        fn has_rgb(&self) -> bool {
            false
        }
        fn decode(&self, j: usize, origin: &[f64; 3], out: &mut Staging) -> Result<(), FormatError> {
            if Some(j) == self.bad {
                return Err(FormatError::at_byte(j, "bad job"));
            }
            let first: usize = self.sizes[..j].iter().sum();
            // Uneven work, so that jobs finish out of order.
            std::thread::sleep(std::time::Duration::from_micros(((j * 7919) % 13) as u64 * 50));
            for i in first..first + self.sizes[j] {
                out.push([i as f64, 0.0, 0.0], [0; 4], i as f32, 0, origin);
            }
            Ok(())
        }
        fn info(&self) -> FileInfo {
            FileInfo::default()
        }
        fn estimate(&self) -> Option<DBounds> {
            None
        }
    }

    #[test]
    fn jobs_arrive_in_order_and_errors_name_the_first_bad_job() {
        let src = Fake { sizes: (0..200).map(|j| (j * 31) % 17).collect(), bad: None };
        let total: usize = src.sizes.iter().sum();
        let d = collect(&src, &[0.0; 3], &Progress::hidden()).unwrap();
        assert_eq!(d.points.len(), total);
        assert!(d.points.iter().enumerate().all(|(i, p)| p.pos[0] == i as f32));
        assert_eq!(d.intensity.unwrap().len(), total);
        assert!(d.classification.is_none());
        let bad = Fake { sizes: vec![5; 100], bad: Some(37) };
        assert_eq!(collect(&bad, &[0.0; 3], &Progress::hidden()).unwrap_err(), FormatError::at_byte(37, "bad job"));
    }

    #[test]
    fn a_failing_sink_stops_the_stream() {
        let src = Fake { sizes: vec![10; 50], bad: None };
        let mut seen = 0;
        let r = stream(&src, &[0.0; 3], &Progress::hidden(), &mut |st: &Staging| {
            seen += 1;
            if st.job == 3 {
                Err("full")
            } else {
                Ok(())
            }
        });
        assert!(matches!(r, Err(StreamError::Sink("full"))));
        assert_eq!(seen, 4);
    }
}
