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
//!
//! What limits the time to a complete view after the stop ([`StopReport`]): what was missing at the
//! stop (nodes, points), and over the wait the loader's threads' time reading and decoding (busy) and
//! blocked handing nodes over (the render thread behind), the frames whose upload slice ran out with
//! nodes still waiting, the host time of the writes, and the decode rate a thread reached. Busy threads
//! mean decoding limits; blocked threads or slices that run out mean the render thread's uploads do;
//! neither means the reads' latency (or too little left to do) does.
use super::scene::LodScene;
use glam::DVec3;
use pcv_camera::path::CameraPath;
use pcv_camera::Camera;
use pcv_render::image_io::Frame;
use pcv_render::look::Look;
use pcv_render::{Rasterizer, RenderError, RenderMode, Target};
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
    /// Nodes that could not be read (more than `node_errors` lists when a server stopped answering).
    pub failed_nodes: usize,
    /// Streamed: loader threads, and what limited the complete view after the stop.
    pub loader_threads: usize,
    pub after_stop: Option<StopReport>,
}

/// What happened between the stop and the complete view (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct StopReport {
    /// Selected nodes not drawn at the stop, and their points.
    pub missing_nodes: usize,
    pub missing_points: u64,
    pub frames: usize,
    /// Frames whose upload slice ran out with loaded nodes still waiting.
    pub frames_slice_ran_out: usize,
    /// Frames with nodes written whose copies were still running (CUDA).
    pub frames_copies_running: usize,
    pub nodes_read: u64,
    pub points_read: u64,
    pub points_uploaded: u64,
    /// Nodes read and thrown away (no longer wanted, or read twice).
    pub nodes_discarded: u64,
    /// Host time writing nodes into the pool (ms), and the longest one frame spent.
    pub upload_ms: f64,
    pub upload_ms_max: f64,
    /// The loader's threads' time busy reading and decoding, and blocked on the render thread, as
    /// fractions of (threads × the wait).
    pub loader_busy: f64,
    pub loader_blocked: f64,
    /// Points a loader thread read and prepared per second of its busy time.
    pub points_per_s_per_thread: f64,
    /// Which of the above limited the wait, in words.
    pub limit: String,
}

impl StopReport {
    /// The limit in words from the fractions (see the module doc).
    pub fn judge(&self) -> String {
        let ran_out = self.frames_slice_ran_out as f64 / self.frames.max(1) as f64;
        if self.missing_nodes == 0 {
            "nothing: the view was complete at the stop".into()
        } else if self.loader_blocked > 0.2 || ran_out > 0.5 {
            format!(
                "the render thread's uploads (loaders blocked {:.0}%, slice ran out in {:.0}% of frames)",
                100.0 * self.loader_blocked,
                100.0 * ran_out
            )
        } else if self.loader_busy > 0.7 {
            format!(
                "decoding (loader threads busy {:.0}%, {:.2}M points/s a thread)",
                100.0 * self.loader_busy,
                self.points_per_s_per_thread / 1e6
            )
        } else {
            format!("reads' latency or little left to read (loader threads busy only {:.0}%)", 100.0 * self.loader_busy)
        }
    }
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
    /// The level-of-detail update's status (streamed).
    status: Option<super::scene::LodStatus>,
}

impl Flyer<'_> {
    fn frame(&mut self) -> Result<FrameOut, RenderError> {
        let (w, h) = self.opts.size_px;
        let t = Instant::now();
        let mut frame = pcv_render::FrameParams::of_camera(&self.cam, w, h)
            .with_mode(self.opts.mode)
            .with_look(self.opts.look)
            .with_spacing(self.opts.spacing_m);
        let mut complete = true;
        let mut status = None;
        if let Some(lod) = self.lod.as_deref_mut() {
            frame = frame.with_mode(LodScene::mode_for(self.opts.mode));
            let st = lod.update(self.r, &frame, self.cam.pose.eye)?.clone();
            complete = st.complete && st.loading == 0;
            self.uploaded_points += st.uploaded_points;
            if st.spacing_m > 0.0 {
                frame = frame.with_spacing(st.spacing_m);
            }
            status = Some(st);
        }
        let mut pixels = vec![0u32; frame.num_pixels()];
        let update_ms = t.elapsed().as_secs_f64() * 1e3;
        let stats = self.r.render(&frame, Target::Host(&mut pixels))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(m) = self.r.device_memory_used_bytes() {
            self.mem_peak = Some(self.mem_peak.unwrap_or(0).max(m));
        }
        Ok(FrameOut { ms, update_ms, complete, drawn: stats.points, pixels, status })
    }

    /// Frames at the current pose until the view is complete or the timeout; the time it took (ms),
    /// `None` on timeout, the last frame, and (streamed) what limited the wait.
    fn settle(&mut self, timeout_s: f64) -> Result<(Option<f64>, FrameOut, Option<StopReport>), RenderError> {
        let t = Instant::now();
        let before = self.lod.as_deref().map(|l| l.loader_counters());
        let mut stop = StopReport::default();
        let finish = |f: &Flyer, stop: &mut StopReport, wait_s: f64| {
            let (Some(l), Some(b)) = (f.lod.as_deref(), before) else { return };
            let now = l.loader_counters();
            let threads = l.options().threads.max(1) as f64;
            stop.nodes_read = now.nodes_read - b.nodes_read;
            stop.points_read = now.points_read - b.points_read;
            let busy_s = now.busy_s - b.busy_s;
            stop.loader_busy = busy_s / (threads * wait_s.max(1e-9));
            stop.loader_blocked = (now.blocked_s - b.blocked_s) / (threads * wait_s.max(1e-9));
            stop.points_per_s_per_thread = if busy_s > 0.0 { stop.points_read as f64 / busy_s } else { 0.0 };
            stop.limit = stop.judge();
        };
        loop {
            let f = self.frame()?;
            if let Some(st) = &f.status {
                if stop.frames == 0 {
                    (stop.missing_nodes, stop.missing_points) = (st.missing_nodes, st.missing_points);
                    stop.nodes_discarded = st.discarded_nodes;
                }
                if f.complete || t.elapsed().as_secs_f64() > timeout_s {
                    stop.nodes_discarded = st.discarded_nodes - stop.nodes_discarded;
                }
                stop.frames += 1;
                stop.frames_slice_ran_out += st.slice_ran_out as usize;
                stop.frames_copies_running += (st.in_transit > 0) as usize;
                stop.points_uploaded += st.uploaded_points;
                stop.upload_ms += st.upload_ms;
                stop.upload_ms_max = stop.upload_ms_max.max(st.upload_ms);
            }
            let done = f.complete || t.elapsed().as_secs_f64() > timeout_s;
            if done {
                let wait_s = t.elapsed().as_secs_f64();
                finish(self, &mut stop, wait_s);
                let report = self.lod.is_some().then_some(stop);
                let ms = f.complete.then_some(wait_s * 1e3);
                return Ok((ms, f, report));
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
        Some(l) => (
            l.total_points(),
            l.options().point_budget,
            l.slots() as u64 * (20 * pcv_render::gpu_data::BATCH_POINTS as u64 + 45),
        ),
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
    let (complete_after_stop_ms, last, after_stop) = f.settle(opts.settle_timeout_s)?;
    write_png(&opts.complete_png, opts.size_px, &last.pixels)?;
    let (evictions, node_errors, failed_nodes, loader_threads) = match f.lod.as_deref() {
        Some(l) => (l.status().evictions, l.errors().to_vec(), l.failed_nodes(), l.options().threads),
        None => (0, Vec::new(), 0, 0),
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
        failed_nodes,
        loader_threads,
        after_stop,
    })
}

/// The report as a few lines of text.
pub fn summary(r: &FlightReport) -> String {
    let gb = |b: Option<u64>| b.map_or("-".to_string(), |b| format!("{:.2} GB", b as f64 / 1e9));
    let stop = match &r.after_stop {
        Some(s) => format!(
            "\n  after the stop: {} nodes ({:.1}M points) missing; {} frames ({} with the upload slice run out, {} with copies running); {} nodes ({:.1}M points) read ({} thrown away), {:.1}M uploaded in {:.0} ms of host time (at most {:.1} ms a frame); {} loader threads busy {:.0}%, blocked {:.0}%, {:.2}M points/s a thread\n  limited by: {}",
            s.missing_nodes,
            s.missing_points as f64 / 1e6,
            s.frames,
            s.frames_slice_ran_out,
            s.frames_copies_running,
            s.nodes_read,
            s.points_read as f64 / 1e6,
            s.nodes_discarded,
            s.points_uploaded as f64 / 1e6,
            s.upload_ms,
            s.upload_ms_max,
            r.loader_threads,
            100.0 * s.loader_busy,
            100.0 * s.loader_blocked,
            s.points_per_s_per_thread / 1e6,
            s.limit
        ),
        None => String::new(),
    };
    let text = format!(
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
    );
    text + &stop
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

    #[test]
    fn the_stop_names_what_limited_it() {
        let base = StopReport { missing_nodes: 40, frames: 100, ..Default::default() };
        let judge = |s: StopReport| s.judge();
        assert!(judge(StopReport { missing_nodes: 0, ..base.clone() }).starts_with("nothing"));
        assert!(judge(StopReport { loader_blocked: 0.5, loader_busy: 0.4, ..base.clone() })
            .starts_with("the render thread's uploads"));
        assert!(judge(StopReport { frames_slice_ran_out: 60, loader_busy: 0.9, ..base.clone() })
            .starts_with("the render thread's uploads"));
        let d = judge(StopReport { loader_busy: 0.95, points_per_s_per_thread: 2.5e6, ..base.clone() });
        assert!(d.starts_with("decoding") && d.contains("95%") && d.contains("2.50M"), "{d}");
        assert!(judge(StopReport { loader_busy: 0.2, ..base }).starts_with("reads' latency"));
    }
}
