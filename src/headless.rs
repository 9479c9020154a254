//! Frames with no window and no GL: one frame (`pcv render`) and a flight (`pcv record`).
//!
//! How it works: the rasterizer renders into host memory. [`record`] samples a camera path
//! ([`CameraPath::sample`]) at `fps` from its first keyframe to its last — `⌊duration · fps⌋ + 1`
//! frames, frame `k` at `k / fps` seconds — renders each, writes it as `frame-00000.png`, ... and its
//! pose as one line of `poses.txt` (the `--camera` and `--up` arguments that render that frame again),
//! and, when `ffmpeg` is on PATH, pipes the frames (raw RGBA, top row first) to it for `flight.mp4`
//! (H.264, yuv420p, sides rounded down to even). Without ffmpeg, or when it fails, the PNGs remain and
//! the summary says why there is no video.
use glam::DVec3;
use pcv_camera::path::CameraPath;
use pcv_camera::Camera;
use pcv_render::image_io::{Frame, ImageError};
use pcv_render::look::Look;
use pcv_render::{FrameStats, Rasterizer, RenderError, RenderMode, Target};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

/// Renders one `width × height` frame of the uploaded points from `camera` in `mode` with `look`
/// (`spacing_m`: the cloud's point spacing, for adaptive point sizes).
pub fn render_frame(
    rasterizer: &mut dyn Rasterizer,
    camera: &Camera,
    width_px: u32,
    height_px: u32,
    mode: RenderMode,
    look: &Look,
    spacing_m: f32,
) -> Result<(Frame, FrameStats), RenderError> {
    let frame = pcv_render::FrameParams::of_camera(camera, width_px, height_px)
        .with_mode(mode)
        .with_look(*look)
        .with_spacing(spacing_m);
    let mut pixels = vec![0u32; frame.num_pixels()];
    let stats = rasterizer.render(&frame, Target::Host(&mut pixels))?;
    Ok((Frame::new(width_px, height_px, pixels), stats))
}

/// How to record.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordOptions {
    pub size_px: (u32, u32),
    pub fps: f64,
    /// Where the frames go (made if missing).
    pub out_dir: PathBuf,
    pub mode: RenderMode,
    /// Point size, eye-dome lighting and background.
    pub look: Look,
    /// The cloud's point spacing, for adaptive point sizes.
    pub spacing_m: f32,
    /// Make a video with ffmpeg when it is on PATH.
    pub video: bool,
}

/// What a recording made.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordSummary {
    pub frames: u64,
    pub mean_render_ms: f64,
    pub video: Option<PathBuf>,
    /// Why there is no video, when there is none and one was asked for.
    pub video_note: Option<String>,
}

/// Errors from recording; they name the file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error("rendering failed: {0}")]
    Render(#[from] RenderError),
    #[error("--fps {0}: must be a positive number of frames a second")]
    Fps(f64),
}

/// The number of frames a path of `duration_s` gives at `fps`.
pub fn frame_count(duration_s: f64, fps: f64) -> u64 {
    // A hair of tolerance, so that 2 s at 30 fps is 61 frames despite rounding in the product.
    (duration_s * fps + 1e-9).floor() as u64 + 1
}

/// Renders `path` (see the module doc). `camera` gives the lens and the up axis (the path's `up`, when
/// it has one, wins); `origin` is the cloud's, for paths in file coordinates. `progress` is told after
/// each frame (done, total).
pub fn record(
    rasterizer: &mut dyn Rasterizer,
    camera: &Camera,
    origin: DVec3,
    path: &CameraPath,
    opts: &RecordOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RecordSummary, RecordError> {
    if !(opts.fps.is_finite() && opts.fps > 0.0) {
        return Err(RecordError::Fps(opts.fps));
    }
    let dir = &opts.out_dir;
    std::fs::create_dir_all(dir).map_err(|source| RecordError::Io { path: dir.clone(), source })?;
    let total = frame_count(path.duration_s(), opts.fps);
    let (w, h) = opts.size_px;
    let mut cam = *camera;
    if let Some(up) = path.up {
        cam.up = up;
    }
    let frame_origin = path.frame.origin(origin);
    let mut video_note = None;
    let mut ffmpeg = if opts.video {
        match start_ffmpeg(dir, opts) {
            Ok(child) => Some(child),
            Err(why) => {
                video_note = Some(why);
                None
            }
        }
    } else {
        None
    };
    let poses_path = dir.join("poses.txt");
    let mut poses = String::new();
    let mut render_ms = 0.0;
    for k in 0..total {
        let t = path.start_s() + k as f64 / opts.fps;
        cam.pose = path.sample(t).to_pose(frame_origin);
        let started = Instant::now();
        let (frame, _) = render_frame(rasterizer, &cam, w, h, opts.mode, &opts.look, opts.spacing_m)?;
        render_ms += started.elapsed().as_secs_f64() * 1e3;
        frame.write_png(&dir.join(format!("frame-{k:05}.png")))?;
        poses.push_str(&format!("{}\n", crate::app::capture::pose_args(&cam, origin)));
        if let Some(child) = ffmpeg.as_mut() {
            let fed = child.stdin.as_mut().map(|stdin| stdin.write_all(&frame.to_rgba_top_down()));
            if !matches!(fed, Some(Ok(()))) {
                video_note =
                    Some(finish_ffmpeg(ffmpeg.take()).err().unwrap_or_else(|| "ffmpeg stopped reading frames".into()));
            }
        }
        progress(k + 1, total);
    }
    std::fs::write(&poses_path, poses).map_err(|source| RecordError::Io { path: poses_path.clone(), source })?;
    let video = match ffmpeg {
        Some(child) => match finish_ffmpeg(Some(child)) {
            Ok(()) => Some(dir.join("flight.mp4")),
            Err(why) => {
                video_note = Some(why);
                None
            }
        },
        None => None,
    };
    Ok(RecordSummary { frames: total, mean_render_ms: render_ms / total.max(1) as f64, video, video_note })
}

/// Starts ffmpeg reading raw RGBA frames on stdin; why not, if it cannot.
fn start_ffmpeg(dir: &std::path::Path, opts: &RecordOptions) -> Result<Child, String> {
    let (w, h) = opts.size_px;
    Command::new("ffmpeg")
        .args([
            "-y",
            "-loglevel",
            "error",
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgba",
            "-s",
            &format!("{w}x{h}"),
            "-r",
            &opts.fps.to_string(),
            "-i",
            "-",
        ])
        .args(["-vf", "crop=trunc(iw/2)*2:trunc(ih/2)*2", "-c:v", "libx264", "-pix_fmt", "yuv420p"])
        .arg(dir.join("flight.mp4"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                "ffmpeg is not on PATH (PNG frames only)".to_string()
            } else {
                format!("ffmpeg: {e}")
            }
        })
}

/// Closes ffmpeg's input and waits for it; its error output if it failed.
fn finish_ffmpeg(child: Option<Child>) -> Result<(), String> {
    let Some(mut child) = child else { return Ok(()) };
    drop(child.stdin.take());
    let out = child.wait_with_output().map_err(|e| format!("ffmpeg: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ffmpeg failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_counts_include_both_ends() {
        assert_eq!(frame_count(2.0, 30.0), 61);
        assert_eq!(frame_count(0.0, 30.0), 1);
        assert_eq!(frame_count(1.0, 29.97), 30);
        assert_eq!(frame_count(0.1, 30.0), 4);
    }
}
