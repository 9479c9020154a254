//! Clouds whose points live only on a device: the files are decoded in chunks on all cores and each
//! chunk goes straight to the backend's upload, so host memory stays bounded whatever the file size.
//!
//! How it works: [`plan`] opens the files (memory-mapped), chooses the origin from their headers or a
//! sample (as [`super::load`] does), sums the points they declare and — given what the device can hold
//! ([`Capacity`]) — refuses a cloud that does not fit before anything is decoded, saying how many
//! points would (and that `--max-points` loads a uniform subsample of that many). The result is a
//! [`DeviceFiles`] that a [`PointCloud`] carries in place of host points (`points` empty,
//! [`PointCloud::is_device_only`]). A streaming backend's `upload` calls [`stream_files`]: every file's
//! jobs are decoded by [`super::stream`] into its bounded pool of staging slots and handed, in file
//! order, to the backend's sink as 16-byte points — colored for the cloud's [`ColorSpec`] (the files'
//! RGB, with an elevation ramp over the planned z range for files without colors; or intensity,
//! elevation or classification, computed from each slot's columns) and thinned to the subsample, both
//! by the worker that decoded the slot ([`super::subsample`]: point `i` of `n` is kept when
//! `floor((i + 1)·k/n) > floor(i·k/n)`, exactly `k` of the `n` declared, evenly spaced through the files'
//! order, which for scans and tiles is spread over space). The first
//! stream records what it saw ([`Streamed`]: exact bounds, counts, which files had which attributes,
//! an intensity sample for the intensity ramp) and [`finish`] moves it into the cloud. Uploading the
//! same cloud again (a new color mode) streams the files again.
pub use super::attributes::ColorSpec;
use super::attributes::{percentile_range, Attributes, ColorMode, SourceSpan};
use super::filter::{PointFilter, PointValues};
use super::formats::{DBounds, Format, FormatError, Progress};
use super::load::{self, FileBytes, LoadError, LoadOptions};
use super::point::Point;
use super::progress::LoadProgress;
use super::stream::{stream_post, Colors, Staging, StreamError};
use super::subsample::Even;
use super::{Bounds, PointCloud};
use glam::DVec3;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Host bytes a point of a host cloud takes (16-byte point, f32 intensity, u8 class): what a device
/// load saves.
pub const HOST_BYTES_PER_POINT: u64 = 21;

/// What a device can take.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// Points that fit the device's free memory with every render mode's buffers.
    pub points: u64,
    /// Device memory a point needs at the upload's peak (points, sorted copy, batched modes' data).
    pub bytes_per_point: u64,
    pub free_bytes: u64,
    pub device: String,
}

/// What the first stream of a cloud saw.
#[derive(Clone, Debug, Default)]
pub struct Streamed {
    pub bounds: DBounds,
    /// Points sent to the device.
    pub points: u64,
    pub nonfinite: u64,
    pub sources: Vec<SourceSpan>,
    pub any_intensity: bool,
    pub any_classification: bool,
    /// The fields the files hold (a colour by any of them reads a sample of it: [`sample_field`]).
    pub fields: crate::formats::FieldSet,
    pub has_rgb: bool,
    /// Every k-th intensity (at most about a million), for the intensity ramp's range.
    pub intensity_sample: Vec<f32>,
    /// Points of each classification code in the files (before any filter), for the legend.
    pub class_counts: Vec<u64>,
    /// Points the filter left out.
    pub filtered_out: u64,
    /// About [`SAMPLE_POINTS`] points evenly spaced through the files (for estimates that need a
    /// few points, such as the point spacing).
    pub sample: Vec<Point>,
}

/// Points kept in [`Streamed::sample`].
pub const SAMPLE_POINTS: u64 = 100_000;

/// Files a backend streams to the device itself (see the module doc).
#[derive(Debug)]
pub struct DeviceFiles {
    pub paths: Vec<PathBuf>,
    pub formats: Vec<Format>,
    /// Subtracted from every position (f64) before it becomes f32.
    pub origin: DVec3,
    /// Points the files declare (after dropping none).
    pub declared: u64,
    /// Keep this many points of the declared ones, evenly spaced (`--max-points`).
    pub max_points: Option<u64>,
    /// The planned bounds (headers or samples), for the ramp of colorless files before the exact
    /// bounds are known.
    pub estimate: DBounds,
    pub color: Mutex<ColorSpec>,
    /// Which points are sent (classes, returns, ranges, clip volumes): applied by the decoding
    /// workers, so hidden points never reach the device; changing it streams the files again.
    pub filter: Mutex<PointFilter>,
    /// What the first stream saw.
    pub streamed: Mutex<Option<Streamed>>,
    pub progress: Arc<LoadProgress>,
    pub show_progress: bool,
    /// The streams also hand each point's classification code to the sink (set once a filter the
    /// rasterizer applies itself hides a class: the codes then live on the device, a byte a point).
    pub carry_classes: std::sync::atomic::AtomicBool,
    /// Values of each field a colour asked for ([`sample_field`]), for its ramp's default range.
    pub field_samples: Mutex<Vec<(crate::formats::Field, Vec<f64>)>>,
}

impl DeviceFiles {
    /// Points the device receives (the subsample's size, or all declared).
    pub fn planned_points(&self) -> u64 {
        self.max_points.map_or(self.declared, |k| k.min(self.declared))
    }

    pub fn color(&self) -> ColorSpec {
        self.color.lock().map(|c| *c).unwrap_or(ColorSpec::Rgb { z: (0.0, 0.0) })
    }

    pub fn filter(&self) -> PointFilter {
        self.filter.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// A copy for another stream of the same files through `filter` (a profile's strip): the same
    /// origin, subsample, colour and field samples, what the first stream saw (so this one records
    /// nothing), a progress of its own, no class codes carried, quiet.
    pub fn with_filter(&self, filter: PointFilter) -> DeviceFiles {
        DeviceFiles {
            paths: self.paths.clone(),
            formats: self.formats.clone(),
            origin: self.origin,
            declared: self.declared,
            max_points: self.max_points,
            estimate: self.estimate,
            color: Mutex::new(self.color()),
            filter: Mutex::new(filter),
            streamed: Mutex::new(self.streamed.lock().ok().and_then(|s| s.clone())),
            progress: Arc::new(LoadProgress::new()),
            show_progress: false,
            carry_classes: Default::default(),
            field_samples: Mutex::new(self.field_samples.lock().map(|v| v.clone()).unwrap_or_default()),
        }
    }

    /// Sets the filter the next upload applies; whether it changed.
    pub fn set_filter(&self, f: &PointFilter) -> bool {
        match self.filter.lock() {
            Ok(mut g) if *g != *f => {
                *g = f.clone();
                true
            }
            _ => false,
        }
    }
}

/// The message for a cloud that does not fit.
fn too_big(paths: &[PathBuf], points: u64, cap: &Capacity) -> LoadError {
    LoadError::DoesNotFit {
        files: paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        points,
        needed_bytes: points.saturating_mul(cap.bytes_per_point),
        free_bytes: cap.free_bytes,
        device: cap.device.clone(),
        fit_points: cap.points,
    }
}

/// What `paths`' headers say, without decoding points: each file's format, the points they declare
/// together and their bounds (headers or samples).
fn survey(paths: &[PathBuf]) -> Result<(Vec<Format>, u64, DBounds), LoadError> {
    let mut formats = Vec::new();
    let mut declared = 0u64;
    let mut estimate = DBounds::EMPTY;
    for p in paths {
        let bytes = FileBytes::open(p)?;
        let f = load::detect(p, bytes.bytes())?;
        let src = load::open_source(bytes.bytes(), f, load::is_pts(p)).map_err(|source| LoadError::Format {
            path: p.clone(),
            format: f,
            source,
        })?;
        declared = declared.saturating_add((0..src.jobs()).map(|j| src.job_points(j)).sum::<u64>());
        if let Some(b) = src.estimate() {
            estimate = DBounds::union(estimate, b);
        }
        formats.push(f);
    }
    Ok((formats, declared, estimate))
}

/// The points `paths` declare together (headers; text files: an estimate), without decoding them.
pub fn declared_points(paths: &[PathBuf]) -> Result<u64, LoadError> {
    survey(paths).map(|(_, declared, _)| declared)
}

/// Opens `paths` for streaming to a device with `cap` (see the module doc); `max_points` asks for a
/// uniform subsample. Refuses, before decoding, a cloud of more points than fit.
pub fn plan(
    paths: &[PathBuf],
    opts: &LoadOptions,
    cap: &Capacity,
    max_points: Option<u64>,
) -> Result<DeviceFiles, LoadError> {
    if paths.is_empty() {
        return Err(LoadError::NoFiles);
    }
    let (formats, declared, estimate) = survey(paths)?;
    let want = max_points.map_or(declared, |k| k.min(declared));
    if want > cap.points {
        return Err(too_big(paths, declared.min(want), cap));
    }
    let origin = load::choose_origin(&estimate);
    let z = estimate.to_local(origin);
    let progress = Arc::new(LoadProgress::new());
    Ok(DeviceFiles {
        paths: paths.to_vec(),
        formats,
        origin,
        declared,
        max_points,
        estimate,
        color: Mutex::new(ColorSpec::Rgb { z: (z.min.z, z.max.z) }),
        filter: Mutex::new(PointFilter::default()),
        streamed: Mutex::new(None),
        progress,
        show_progress: opts.progress,
        carry_classes: Default::default(),
        field_samples: Mutex::new(Vec::new()),
    })
}

/// A cloud whose points are the device's (see the module doc): bounds and attributes are the plan's
/// until [`finish`] fills them in from the first stream.
pub fn cloud(files: DeviceFiles) -> PointCloud {
    let label = files.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let bounds = files.estimate.to_local(files.origin);
    PointCloud {
        points: Arc::new(Vec::new()),
        bounds,
        origin: files.origin,
        frame: None,
        label,
        source: crate::CloudSource::Files(Arc::new(files)),
        attributes: None,
    }
}

/// Moves what the first stream saw into `cloud`: exact bounds, the point count, the files'
/// attributes (no per-point columns: those stay in the files). Returns the note of [`auto_color`] when
/// the files' colors carry nothing and `auto` asks for the automatic choice — the caller then uploads
/// again, since the device's colors change.
pub fn finish(cloud: &mut PointCloud, auto: bool) -> Option<String> {
    let files = cloud.files().cloned()?;
    let s = files.streamed.lock().ok()?.clone()?;
    cloud.bounds = s.bounds.to_local(files.origin);
    let spec = files.color();
    cloud.attributes = Some(Arc::new(Attributes {
        intensity: None,
        classification: None,
        columns: Vec::new(),
        field_spec: spec.as_field(),
        has_rgb: s.has_rgb,
        sources: s.sources.clone(),
        mode: spec.mode(),
        loaded_rgba: None,
        color_note: None,
    }));
    if !auto {
        return None;
    }
    let colored: Vec<&SourceSpan> = s.sources.iter().filter(|x| x.has_rgb && x.points.start < x.points.end).collect();
    if colored.is_empty() || colored.iter().any(|x| x.uniform_rgb.is_none()) {
        return None;
    }
    let (lo, hi) = percentile_range(&s.intensity_sample, 0.01, 0.99);
    let z = (cloud.bounds.min.z, cloud.bounds.max.z);
    let spec = if s.any_intensity && hi > lo { ColorSpec::Intensity { lo, hi } } else { ColorSpec::Elevation { z } };
    if let Ok(mut c) = files.color.lock() {
        *c = spec;
    }
    let what = match colored.as_slice() {
        [one] => {
            let c = one.uniform_rgb.unwrap_or_default();
            format!("{}: every point's color is {},{},{}", one.label, c[0], c[1], c[2])
        }
        many => format!("{} files: each has one color for all its points", many.len()),
    };
    let note = format!(
        "{what}, which shows nothing; coloring by {} instead (--color rgb shows the file's colors)",
        spec.mode()
    );
    if let Some(a) = cloud.attributes.as_mut() {
        let a = Arc::make_mut(a);
        a.mode = spec.mode();
        a.color_note = Some(note.clone());
    }
    Some(note)
}

/// Sets the colors the next upload of a device-only `cloud` streams (`--color`): only modes computed
/// from what the files hold per point.
pub fn set_color(cloud: &mut PointCloud, mode: ColorMode, look: &super::attributes::FieldLook) -> Result<(), String> {
    let Some(files) = cloud.files().cloned() else { return Err("not a device-only cloud".into()) };
    let s = files.streamed.lock().map_err(|e| e.to_string())?.clone().unwrap_or_default();
    let z = if cloud.bounds.is_empty() { (0.0, 0.0) } else { (cloud.bounds.min.z, cloud.bounds.max.z) };
    let spec = match mode {
        ColorMode::Rgb => ColorSpec::Rgb { z },
        ColorMode::Elevation => ColorSpec::Elevation { z },
        ColorMode::Intensity if s.any_intensity => {
            let (lo, hi) = percentile_range(&s.intensity_sample, 0.01, 0.99);
            ColorSpec::Intensity { lo, hi }
        }
        ColorMode::Classification if s.any_classification => ColorSpec::Classification,
        // A field: its ramp over a sample of its values (read now, once per field).
        other => {
            let sample = match other.field() {
                Some(f) => sample_field(&files, f).map_err(|e| e.to_string())?.map(|v| (f, v)),
                None => None,
            };
            match sample {
                Some((f, v)) => look.spec(&pcv_model::fields::Column::from_f64(f, &v)),
                None => return Err(format!("color mode '{other}': {} has no {other}", cloud.label)),
            }
        }
    };
    *files.color.lock().map_err(|e| e.to_string())? = spec;
    if let Some(a) = cloud.attributes.as_mut() {
        let a = Arc::make_mut(a);
        a.mode = mode;
        // What the legend shows: the field's ramp and range (its histogram from the stream's sample).
        a.field_spec = spec.as_field();
    }
    Ok(())
}

/// Values of `field` a field colour's default range is taken from: those of every k-th job (chunk of
/// records) of every file, about [`FIELD_SAMPLE_POINTS`] in all, decoded now (a few milliseconds: no
/// whole stream) and kept in [`DeviceFiles::field_samples`] for the next time. `None` when no file
/// has the field.
pub fn sample_field(files: &DeviceFiles, field: crate::formats::Field) -> Result<Option<Vec<f64>>, LoadError> {
    use rayon::prelude::*;
    if let Some((_, v)) = files.field_samples.lock().ok().and_then(|s| s.iter().find(|(f, _)| *f == field).cloned()) {
        return Ok(Some(v).filter(|v| v.iter().any(|x| !x.is_nan())));
    }
    let wanted = super::formats::FieldSet::default().with(field);
    let origin = files.origin.to_array();
    let mut values = Vec::new();
    for (path, &format) in files.paths.iter().zip(&files.formats) {
        let bytes = FileBytes::open(path)?;
        let src = load::open_source_with(bytes.bytes(), format, load::is_pts(path), wanted)
            .map_err(|source| LoadError::Format { path: path.clone(), format, source })?;
        if !src.columns().fields.contains(field) || src.jobs() == 0 {
            continue;
        }
        // This file's share of the sample, from jobs spread evenly through it.
        let here: u64 = (0..src.jobs()).map(|j| src.job_points(j)).sum();
        let share = (FIELD_SAMPLE_POINTS as f64 * here as f64 / files.declared.max(1) as f64).ceil() as u64;
        let per_job = (0..src.jobs()).map(|j| src.job_points(j)).max().unwrap_or(1).max(1);
        let take = share.div_ceil(per_job).clamp(1, src.jobs() as u64) as usize;
        let jobs: Vec<usize> = (0..take).map(|i| i * src.jobs() / take).collect();
        let decoded: Vec<Vec<f64>> = jobs
            .par_iter()
            .map(|&j| {
                let mut st = Staging::default();
                st.reset(j, src.columns());
                // A decoder's panic on damaged data is that file's error, as in a stream.
                match crate::formats::catch_quietly(|| src.decode(j, &origin, &mut st)) {
                    Ok(Ok(())) => Ok(st.fields.into_iter().next().unwrap_or_default()),
                    Ok(Err(e)) => Err(e),
                    Err(panic) => Err(FormatError::Invalid(format!("the decoder failed on this data ({panic})"))),
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|source| LoadError::Format { path: path.clone(), format, source })?;
        decoded.into_iter().for_each(|v| values.extend(v));
    }
    if let Ok(mut s) = files.field_samples.lock() {
        s.push((field, values.clone()));
    }
    Ok(Some(values).filter(|v| v.iter().any(|x| !x.is_nan())))
}

/// Values [`sample_field`] reads of a field, about.
pub const FIELD_SAMPLE_POINTS: u64 = 1_000_000;

/// Why a stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum DeviceLoadError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error("{0}")]
    Sink(String),
}

/// What [`stream_files`] hands its points to: a slot's points and their class codes (empty unless
/// carried); an error stops the stream.
pub type Sink<'a> = dyn FnMut(&[Point], &[u8]) -> Result<(), String> + 'a;

/// Decodes every file of `files` in order and hands its points to `sink` a slot at a time, colored
/// and subsampled as planned (see the module doc), with their classification codes when
/// `files.carry_classes` is set and the file has them (else an empty slice: class 0). Records what
/// it saw in `files.streamed` the first time. Returns the points sent.
pub fn stream_files(files: &DeviceFiles, sink: &mut Sink<'_>) -> Result<u64, DeviceLoadError> {
    let first_time = files.streamed.lock().map(|s| s.is_none()).unwrap_or(true);
    let carry_classes = files.carry_classes.load(std::sync::atomic::Ordering::Relaxed);
    let spec = files.color();
    let filter = files.filter();
    let class_counts = Mutex::new(vec![0u64; 256]);
    let filtered_out = std::sync::atomic::AtomicU64::new(0);
    let progress = Progress::with_shared(0, files.show_progress, files.progress.clone());
    let origin = files.origin.to_array();
    let keep = files.planned_points();
    let every = (keep / 1_000_000).max(1); // the intensity sample's step over the points sent
    let sample_every = (keep / SAMPLE_POINTS).max(1) as usize;
    let mut seen = Streamed { bounds: DBounds::EMPTY, ..Default::default() };
    let even = Even::new(keep, files.declared);
    let mut file_first = 0u64; // the file's first point in the declared points of every file
    let mut sent = 0u64;
    for (path, &format) in files.paths.iter().zip(&files.formats) {
        let bytes = FileBytes::open(path)?;
        // Read before the stream releases the file's pages.
        let crs = if first_time { load::file_crs(path, bytes.bytes(), format, true) } else { None };
        let mut wanted = super::formats::FieldSet::of(&filter.fields());
        if let ColorSpec::Field { field, .. } = spec {
            wanted = wanted.with(field);
        }
        let field_slot = |f: super::formats::Field| wanted.iter().position(|x| x == f);
        let src = load::open_source_with(bytes.bytes(), format, load::is_pts(path), wanted)
            .map_err(|source| LoadError::Format { path: path.clone(), format, source })?;
        // The fields the file holds, whether decoded now or not (its header's: cheap to open again).
        let present = match first_time {
            true => load::open_source_with(bytes.bytes(), format, load::is_pts(path), super::formats::FieldSet::ALL)
                .map(|s| s.columns().fields)
                .unwrap_or_default(),
            false => Default::default(),
        };
        // Each job's first point in that order, for the subsample.
        let mut job_first = Vec::with_capacity(src.jobs());
        let mut declared = 0u64;
        for j in 0..src.jobs() {
            job_first.push(file_first + declared);
            declared += src.job_points(j);
        }
        file_first += declared;
        progress.add_total(declared);
        if files.paths.len() > 1 {
            progress.set_file(path.display().to_string());
        }
        let cols = src.columns();
        let has_rgb = src.has_rgb();
        let first = sent;
        let mut colors = Colors::None;
        let recolor = |st: &mut Staging| {
            let field = match spec {
                ColorSpec::Field { field, .. } => field_slot(field).and_then(|i| st.fields.get(i)),
                _ => None,
            };
            let own_rgb = has_rgb && !st.colorless;
            spec.color_points(&mut st.points, own_rgb, &st.intensity, &st.classification, field.map_or(&[], |v| v));
        };
        // The subsample's thinning and the recoloring run in the decoding workers (thinned first: only
        // the points that stay are recolored); the sink's thread only passes slots on.
        let post = |st: &mut Staging| {
            if let Some(&first) = job_first.get(st.job).filter(|_| !even.keeps_all()) {
                st.keep_evenly(even, first);
            }
            if first_time && cols.classification {
                let mut h = [0u64; 256];
                st.classification.iter().for_each(|&c| h[c as usize] += 1);
                if let Ok(mut all) = class_counts.lock() {
                    all.iter_mut().zip(h).for_each(|(a, b)| *a += b);
                }
            }
            if !filter.is_empty() {
                let before = st.points.len();
                let field_at = |k: usize, f: super::formats::Field| {
                    wanted.iter().position(|x| x == f).and_then(|i| st.fields.get(i)).map_or(f64::NAN, |v| v[k])
                };
                let keep: Vec<bool> = (0..st.points.len())
                    .map(|k| {
                        let p = st.points[k].pos;
                        let local = glam::Vec3::from_array(p).as_dvec3();
                        filter.passes(&PointValues {
                            class: st.classification.get(k).copied().unwrap_or(0),
                            intensity: st.intensity.get(k).map_or(f64::NAN, |&v| v as f64),
                            field: &|f| field_at(k, f),
                            pos: files.origin + local,
                        })
                    })
                    .collect();
                st.retain(|k| keep[k]);
                filtered_out.fetch_add((before - st.points.len()) as u64, std::sync::atomic::Ordering::Relaxed);
            }
            recolor(st);
        };
        let r = stream_post(&*src, &origin, &progress, &post, &mut |st: &Staging| -> Result<(), String> {
            if let Some(range) = src.job_bytes(st.job) {
                bytes.release(range);
            }
            let pts: &[Point] = &st.points;
            if first_time {
                if cols.intensity {
                    seen.intensity_sample.extend(st.intensity.iter().step_by(every as usize).copied());
                }
                let skip = (sample_every - (sent as usize % sample_every)) % sample_every;
                seen.sample.extend(pts.iter().skip(skip).step_by(sample_every).copied());
                if has_rgb && !st.colorless && !st.is_empty() {
                    colors = match (colors, st.uniform_rgba) {
                        (Colors::None, Some(c)) => Colors::Uniform(c),
                        (Colors::Uniform(a), Some(c)) if a == c => Colors::Uniform(a),
                        _ => Colors::Varied,
                    };
                }
            }
            sent += pts.len() as u64;
            if pts.is_empty() {
                return Ok(());
            }
            let codes: &[u8] = if carry_classes && cols.classification { &st.classification } else { &[] };
            sink(pts, codes)
        });
        let stats = match r {
            Ok(s) => s,
            Err(StreamError::Decode(source)) => {
                return Err(LoadError::Format { path: path.clone(), format, source }.into())
            }
            Err(StreamError::Sink(e)) => return Err(DeviceLoadError::Sink(e)),
        };
        // A stream asks to be run again only for LAS's 8-bit color guess: the colors already sent are
        // then off by a shift; streams decode the first chunk to guess, so this is rare.
        let _ = src.finish(&stats).map_err(|source: FormatError| LoadError::Format {
            path: path.clone(),
            format,
            source,
        })?;
        if first_time {
            seen.bounds = DBounds::union(seen.bounds, stats.bounds);
            seen.nonfinite += stats.nonfinite;
            seen.any_intensity |= cols.intensity;
            seen.any_classification |= cols.classification;
            seen.fields = seen.fields.union(present);
            seen.has_rgb |= has_rgb;
            seen.sources.push(SourceSpan {
                label: path.display().to_string(),
                format,
                points: first..sent,
                has_rgb,
                has_intensity: cols.intensity,
                has_classification: cols.classification,
                uniform_rgb: match colors {
                    Colors::Uniform(c) => Some([c[0], c[1], c[2]]),
                    _ => None,
                },
                crs,
            });
        }
    }
    progress.finish();
    if first_time {
        seen.points = sent;
        seen.class_counts = class_counts.into_inner().unwrap_or_default();
        seen.filtered_out = filtered_out.into_inner();
        if let Ok(mut s) = files.streamed.lock() {
            *s = Some(seen);
        }
    }
    Ok(sent)
}

/// The host points of a device-only cloud (for a backend without streaming, or a peer that needs
/// them): the same stream, collected.
pub fn host_points(files: &DeviceFiles) -> Result<Vec<Point>, DeviceLoadError> {
    let mut out = Vec::with_capacity(usize::try_from(files.planned_points()).unwrap_or(0));
    stream_files(files, &mut |p, _| {
        out.extend_from_slice(p);
        Ok(())
    })?;
    Ok(out)
}

/// The points of one stream of `files`, at most `max_points` of them (at least 1) evenly spread: every
/// point while they number at most that, then every other one of those kept and of the rest, every
/// fourth after the next halving, and so on, so the points kept cover the whole stream whatever its
/// length. Returns them and whether any were left out. Setting `stop` ends the stream early
/// ([`DeviceLoadError::Sink`] "stopped").
pub fn gather(
    files: &DeviceFiles,
    max_points: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(Vec<Point>, bool), DeviceLoadError> {
    let max = usize::try_from(max_points.max(1)).unwrap_or(usize::MAX);
    let (mut out, mut step, mut seen) = (Vec::new(), 1u64, 0u64);
    stream_files(files, &mut |p, _| {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err("stopped".into());
        }
        for pt in p {
            if seen.is_multiple_of(step) {
                out.push(*pt);
                if out.len() > max {
                    // Keep every other one (the kept are those at multiples of `step`): then of 2 step.
                    let mut k = 0;
                    out.retain(|_| {
                        k += 1;
                        k % 2 == 1
                    });
                    step *= 2;
                }
            }
            seen += 1;
        }
        Ok(())
    })?;
    Ok((out, step > 1))
}

/// The first stream's sample of a device-only cloud's points (empty before it).
pub fn sample(files: &DeviceFiles) -> Vec<Point> {
    files.streamed.lock().ok().and_then(|s| s.as_ref().map(|s| s.sample.clone())).unwrap_or_default()
}

/// The bounds of `cloud` in local coordinates (exact after [`finish`]).
pub fn local_bounds(files: &DeviceFiles) -> Option<Bounds> {
    files.streamed.lock().ok()?.as_ref().map(|s| s.bounds.to_local(files.origin))
}
