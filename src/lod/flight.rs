//! Measuring a flight: time to the first frame, frame times while the camera moves, time until the view
//! is complete after it stops, device memory — streamed ([`LodScene`]) or with the whole cloud resident.
//!
//! How it works ([`fly`]): frames are rendered as fast as they come (no vsync), each one from the path's
//! pose at the wall-clock time since the flight began, as a user flying that path would see it; a
//! frame's time is its level-of-detail update (selection, the upload slice) plus its render, into host
//! memory. First the camera waits at the path's first pose until a frame shows points (time to first
//! frame, counted from `opened_at`: the start of opening the scene) and until that view is complete;
//! then it flies; then it stays at the last pose until every selected node is drawn (time to a complete
//! view after the stop). Device memory in use is read after every frame; its maximum is the high-water
//! mark. The first frame with points and the complete view at the stop can be written as PNGs.
use super::scene::LodScene;
use crate::camera::path::CameraPath;
use crate::camera::Camera;
use crate::image_io::Frame;
use crate::render::look::Look;
use crate::render::{Rasterizer, RenderError, RenderMode, Target};
use glam::DVec3;
use std::path::PathBuf;
use std::time::Instant;

/// How to fly.
#[derive(Clone, Debug)]
pub struct FlightOptions {
    pub size_px: (u32, u32),
    pub mode: RenderMode,
    pub look: Look,
    /// The cloud's spacing for adaptive point sizes (a streamed scene uses its drawn nodes' instead).
    pub spacing_m: f32,
    /// Longest wait for a complete view, at the start and after the stop.
    pub settle_timeout_s: f64,
    /// Where the first frame with points goes (PNG).
    pub refining_png: Option<PathBuf>,
    /// Where the complete view after the stop goes (PNG).
    pub complete_png: Option<PathBuf>,
}

/// Percentiles of frame times.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Percentiles {
    pub frames: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Percentiles {
    /// Nearest-rank percentiles of `ms`.
    pub fn of(ms: &[f64]) -> Percentiles {
        if ms.is_empty() {
            return Percentiles::default();
        }
        let mut v = ms.to_vec();
        v.sort_by(f64::total_cmp);
        let at = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Percentiles {
            frames: v.len(),
            p50_ms: at(50.0),
            p90_ms: at(90.0),
            p99_ms: at(99.0),
            max_ms: v[v.len() - 1],
            mean_ms: v.iter().sum::<f64>() / v.len() as f64,
        }
    }
}

/// What a flight measured.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FlightReport {
    pub streamed: bool,
    pub backend: String,
    pub size_px: (u32, u32),
    pub mode: String,
    /// Points in the scene, and the budget (0 when resident).
    pub scene_points: u64,
    pub point_budget: u64,
    /// From `opened_at` to the first frame that showed points.
    pub first_frame_ms: f64,
    /// From `opened_at` until the start view was complete.
    pub start_complete_ms: f64,
    /// Frame times while the camera moved.
    pub flight: Percentiles,
    /// Their level-of-detail updates alone (selection, loads, the upload slice).
    pub flight_update: Percentiles,
    pub flight_s: f64,
    /// From the stop until the view was complete (0 when it already was); `None` if it never was
    /// within the timeout.
    pub complete_after_stop_ms: Option<f64>,
    /// Device memory in use (whole device), at most, and before the flight; bytes.
    pub device_memory_peak_bytes: Option<u64>,
    pub device_memory_start_bytes: Option<u64>,
    /// Streamed: the pool's size in bytes, points drawn on average while moving, nodes evicted,
    /// points written into the pool.
    pub pool_bytes: u64,
    pub mean_drawn_points: f64,
    pub evictions: u64,
    pub uploaded_points: u64,
    pub node_errors: Vec<String>,
}

struct Flyer<'a> {
    r: &'a mut dyn Rasterizer,
    lod: Option<&'a mut LodScene>,
    opts: &'a FlightOptions,
    cam: Camera,
    mem_peak: Option<u64>,
    uploaded_points: u64,
}

/// One frame's result: its time, whether the view is complete, the points drawn, the image.
struct FrameOut {
    ms: f64,
    update_ms: f64,
    complete: bool,
    drawn: u64,
    pixels: Vec<u32>,
}

impl Flyer<'_> {
    fn frame(&mut self) -> Result<FrameOut, RenderError> {
        let (w, h) = self.opts.size_px;
        let t = Instant::now();
        let mut frame = self.cam.frame_params(w, h).with_mode(self.opts.mode).with_look(self.opts.look).with_spacing(self.opts.spacing_m);
        let mut complete = true;
        if let Some(lod) = self.lod.as_deref_mut() {
            frame = frame.with_mode(LodScene::mode_for(self.opts.mode));
            let st = lod.update(self.r, &frame, self.cam.pose.eye)?;
            complete = st.complete && st.loading == 0;
            self.uploaded_points += st.uploaded_points;
            if st.spacing_m > 0.0 {
                frame = frame.with_spacing(st.spacing_m);
            }
        }
        let mut pixels = vec![0u32; frame.num_pixels()];
        let update_ms = t.elapsed().as_secs_f64() * 1e3;
        let stats = self.r.render(&frame, Target::Host(&mut pixels))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(m) = self.r.device_memory_used_bytes() {
            self.mem_peak = Some(self.mem_peak.unwrap_or(0).max(m));
        }
        Ok(FrameOut { ms, update_ms, complete, drawn: stats.points, pixels })
    }

    /// Frames at the current pose until the view is complete or the timeout; the time it took (ms),
    /// `None` on timeout, and the last frame.
    fn settle(&mut self, timeout_s: f64) -> Result<(Option<f64>, FrameOut), RenderError> {
        let t = Instant::now();
        loop {
            let f = self.frame()?;
            if f.complete {
                return Ok((Some(t.elapsed().as_secs_f64() * 1e3), f));
            }
            if t.elapsed().as_secs_f64() > timeout_s {
                return Ok((None, f));
            }
        }
    }
}

fn write_png(path: &Option<PathBuf>, (w, h): (u32, u32), pixels: &[u32]) -> Result<(), RenderError> {
    if let Some(p) = path {
        Frame::new(w, h, pixels.to_vec())
            .write_png(p)
            .map_err(|e| RenderError::Cuda { context: "writing a flight's snapshot".into(), message: e.to_string() })?;
    }
    Ok(())
}

/// Flies `path` (see the module doc). `lod`: the streamed scene (attached to `r`), or `None` for
/// the points `r` holds. `origin` is the scene's, for paths in file coordinates.
pub fn fly(
    r: &mut dyn Rasterizer,
    lod: Option<&mut LodScene>,
    camera: &Camera,
    origin: DVec3,
    path: &CameraPath,
    opts: &FlightOptions,
    opened_at: Instant,
) -> Result<FlightReport, RenderError> {
    let mut cam = *camera;
    if let Some(up) = path.up {
        cam.up = up;
    }
    let frame_origin = path.frame.origin(origin);
    let streamed = lod.is_some();
    let (scene_points, point_budget, pool_bytes) = match &lod {
        Some(l) => (l.total_points(), l.options().point_budget, l.slots() as u64 * (20 * crate::render::gpu_data::BATCH_POINTS as u64 + 45)),
        None => (r.num_points(), 0, 0),
    };
    let backend = r.name().to_string();
    let mem_start = r.device_memory_used_bytes();
    cam.pose = path.sample(path.start_s()).to_pose(frame_origin);
    let mut f = Flyer { r, lod, opts, cam, mem_peak: None, uploaded_points: 0 };
    // The start: the first frame with points, then the complete view.
    let first_frame_ms = loop {
        let out = f.frame()?;
        if out.drawn > 0 || opened_at.elapsed().as_secs_f64() > opts.settle_timeout_s {
            write_png(&opts.refining_png, opts.size_px, &out.pixels)?;
            break opened_at.elapsed().as_secs_f64() * 1e3;
        }
    };
    f.settle(opts.settle_timeout_s)?;
    let start_complete_ms = opened_at.elapsed().as_secs_f64() * 1e3;
    // The flight, in real time.
    let mut ms = Vec::new();
    let mut update_ms = Vec::new();
    let mut drawn_sum = 0f64;
    let t0 = Instant::now();
    loop {
        let t = t0.elapsed().as_secs_f64();
        f.cam.pose = path.sample(path.start_s() + t).to_pose(frame_origin);
        let out = f.frame()?;
        ms.push(out.ms);
        update_ms.push(out.update_ms);
        drawn_sum += out.drawn as f64;
        if t >= path.duration_s() {
            break;
        }
    }
    let flight_s = t0.elapsed().as_secs_f64();
    // The stop.
    let (complete_after_stop_ms, last) = f.settle(opts.settle_timeout_s)?;
    write_png(&opts.complete_png, opts.size_px, &last.pixels)?;
    let (evictions, node_errors) = match f.lod.as_deref() {
        Some(l) => (l.status().evictions, l.errors().to_vec()),
        None => (0, Vec::new()),
    };
    Ok(FlightReport {
        streamed,
        backend,
        size_px: opts.size_px,
        mode: if streamed { LodScene::mode_for(opts.mode) } else { opts.mode }.name().to_string(),
        scene_points,
        point_budget,
        first_frame_ms,
        start_complete_ms,
        flight: Percentiles::of(&ms),
        flight_update: Percentiles::of(&update_ms),
        flight_s,
        complete_after_stop_ms,
        device_memory_peak_bytes: f.mem_peak,
        device_memory_start_bytes: mem_start,
        pool_bytes,
        mean_drawn_points: drawn_sum / ms.len().max(1) as f64,
        evictions,
        uploaded_points: f.uploaded_points,
        node_errors,
    })
}

/// The report as a few lines of text.
pub fn summary(r: &FlightReport) -> String {
    let gb = |b: Option<u64>| b.map_or("-".to_string(), |b| format!("{:.2} GB", b as f64 / 1e9));
    format!(
        "{} ({} backend, {}x{}, {}): {} points{}\n  first frame {:.0} ms, start view complete {:.0} ms\n  flight {:.1} s, {} frames: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms (of which the update p50 {:.2}, p99 {:.2}); {:.1}M points drawn on average\n  complete view {} after the stop\n  device memory: {} before the flight, {} at most{}",
        if r.streamed { "streamed" } else { "resident" },
        r.backend,
        r.size_px.0,
        r.size_px.1,
        r.mode,
        r.scene_points,
        if r.streamed { format!(", budget {}", r.point_budget) } else { String::new() },
        r.first_frame_ms,
        r.start_complete_ms,
        r.flight_s,
        r.flight.frames,
        r.flight.p50_ms,
        r.flight.p90_ms,
        r.flight.p99_ms,
        r.flight.max_ms,
        r.flight_update.p50_ms,
        r.flight_update.p99_ms,
        r.mean_drawn_points / 1e6,
        r.complete_after_stop_ms.map_or("not reached".to_string(), |ms| format!("{ms:.0} ms")),
        gb(r.device_memory_start_bytes),
        gb(r.device_memory_peak_bytes),
        if r.streamed { format!("; pool {:.2} GB, {} evictions, {}M points uploaded", r.pool_bytes as f64 / 1e9, r.evictions, r.uploaded_points / 1_000_000) } else { String::new() },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of(&v);
        assert_eq!((p.p50_ms, p.p90_ms, p.p99_ms, p.max_ms, p.frames), (50.0, 90.0, 99.0, 100.0, 100));
        assert_eq!(Percentiles::of(&[3.0]).p99_ms, 3.0);
        assert_eq!(Percentiles::of(&[]).frames, 0);
    }
}
