//! Camera paths: keyframed poses for `--path` (a flight in the window) and `pcv record` (a video).
//!
//! How it works: a path file is JSON:
//!
//! ```json
//! { "frame": "file", "up": "z",
//!   "keyframes": [ { "t": 0, "camera": "500100,4000200,150,45,-35" },
//!                  { "t": 4, "camera": "500300,4000200,80,90,-20" } ] }
//! ```
//!
//! Each `camera` is the text `--camera` takes (and the pose key prints); `t` is in seconds, optional
//! (two seconds after the previous keyframe, the first at 0) and increasing. `frame` (`file`, the
//! default, or `local`) says which coordinates the eyes are in, as `--camera-frame` does; `up`, when
//! given, sets the up axis for the flight. [`CameraPath::sample`] interpolates with cubic Hermite
//! splines through the keyframes (Catmull-Rom tangents from the neighbours, scaled by the time steps,
//! one-sided at the ends): eyes in f64, yaw unwrapped so each step turns the short way, pitch as is. So
//! the camera passes through every keyframe at its time, with no kinks between. The viewer's bookmarks
//! save in this format ([`CameraPath::to_json`]).
use super::pose::{CameraFrame, PoseArg, UpAxis};
use glam::DVec3;
use std::path::{Path, PathBuf};

/// Seconds between keyframes that give no `t`.
pub const DEFAULT_STEP_S: f64 = 2.0;

/// Errors reading a path file; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a camera path: {message} (expected {{\"keyframes\": [{{\"t\": 0, \"camera\": \"x,y,z,yaw,pitch\"}}, ...]}})")]
    Json { path: PathBuf, message: String },
    #[error("{path}: keyframe {index}: camera '{camera}': {message}")]
    Camera { path: PathBuf, index: usize, camera: String, message: String },
    #[error("{path}: keyframe {index}: t = {t} s is not after the previous keyframe's {previous} s")]
    Time { path: PathBuf, index: usize, t: f64, previous: f64 },
    #[error("{path}: the path has no keyframes")]
    Empty { path: PathBuf },
}

#[derive(serde::Deserialize, serde::Serialize)]
struct PathFile {
    #[serde(default)]
    frame: CameraFrame,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    up: Option<UpAxis>,
    keyframes: Vec<KeyframeFile>,
}

#[derive(serde::Deserialize, serde::Serialize)]
struct KeyframeFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<f64>,
    camera: String,
}

/// One keyframe: a time and a pose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Keyframe {
    pub t_s: f64,
    pub pose: PoseArg,
}

/// A path: keyframes in increasing time.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraPath {
    pub keyframes: Vec<Keyframe>,
    pub frame: CameraFrame,
    pub up: Option<UpAxis>,
}

impl CameraPath {
    /// Reads a path file.
    pub fn load(path: &Path) -> Result<CameraPath, PathError> {
        let text = std::fs::read_to_string(path).map_err(|source| PathError::Io { path: path.into(), source })?;
        CameraPath::parse(&text, path)
    }

    /// Parses a path file's text (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<CameraPath, PathError> {
        let file: PathFile =
            serde_json::from_str(text).map_err(|e| PathError::Json { path: path.into(), message: e.to_string() })?;
        if file.keyframes.is_empty() {
            return Err(PathError::Empty { path: path.into() });
        }
        let mut keyframes = Vec::with_capacity(file.keyframes.len());
        let mut previous: Option<f64> = None;
        for (index, k) in file.keyframes.iter().enumerate() {
            let pose = PoseArg::parse(&k.camera).map_err(|message| PathError::Camera {
                path: path.into(),
                index,
                camera: k.camera.clone(),
                message,
            })?;
            let t = match (k.t, previous) {
                (Some(t), _) => t,
                (None, Some(p)) => p + DEFAULT_STEP_S,
                (None, None) => 0.0,
            };
            if !t.is_finite() || previous.is_some_and(|p| t <= p) {
                return Err(PathError::Time { path: path.into(), index, t, previous: previous.unwrap_or(f64::NAN) });
            }
            previous = Some(t);
            keyframes.push(Keyframe { t_s: t, pose });
        }
        Ok(CameraPath { keyframes, frame: file.frame, up: file.up })
    }

    /// The path's text, as [`CameraPath::load`] reads it.
    pub fn to_json(&self) -> String {
        let file = PathFile {
            frame: self.frame,
            up: self.up,
            keyframes: self
                .keyframes
                .iter()
                .map(|k| KeyframeFile {
                    t: Some(k.t_s),
                    camera: format!(
                        "{},{},{},{},{}",
                        k.pose.eye.x, k.pose.eye.y, k.pose.eye.z, k.pose.yaw_deg, k.pose.pitch_deg
                    ),
                })
                .collect(),
        };
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    pub fn start_s(&self) -> f64 {
        self.keyframes.first().map_or(0.0, |k| k.t_s)
    }

    pub fn end_s(&self) -> f64 {
        self.keyframes.last().map_or(0.0, |k| k.t_s)
    }

    /// Seconds from the first keyframe to the last.
    pub fn duration_s(&self) -> f64 {
        self.end_s() - self.start_s()
    }

    /// The pose at `t_s` (clamped to the path's time span), interpolated as the module doc says.
    pub fn sample(&self, t_s: f64) -> PoseArg {
        let k = &self.keyframes;
        if k.len() == 1 || t_s <= k[0].t_s {
            return k[0].pose;
        }
        if t_s >= self.end_s() {
            return k[k.len() - 1].pose;
        }
        // Values per keyframe: eye x, y, z, unwrapped yaw, pitch.
        let mut yaw = Vec::with_capacity(k.len());
        for (i, kf) in k.iter().enumerate() {
            let y = if i == 0 {
                kf.pose.yaw_deg
            } else {
                let prev: f64 = yaw[i - 1];
                prev + wrap_deg(kf.pose.yaw_deg - prev)
            };
            yaw.push(y);
        }
        let values: Vec<[f64; 5]> = k
            .iter()
            .zip(&yaw)
            .map(|(kf, &y)| [kf.pose.eye.x, kf.pose.eye.y, kf.pose.eye.z, y, kf.pose.pitch_deg])
            .collect();
        let i = k.partition_point(|kf| kf.t_s <= t_s) - 1;
        let (t0, t1) = (k[i].t_s, k[i + 1].t_s);
        let h = t1 - t0;
        let s = (t_s - t0) / h;
        let tangent = |j: usize, c: usize| -> f64 {
            let (a, b) = (j.saturating_sub(1), (j + 1).min(k.len() - 1));
            (values[b][c] - values[a][c]) / (k[b].t_s - k[a].t_s)
        };
        let (h00, h10, h01, h11) = (
            2.0 * s * s * s - 3.0 * s * s + 1.0,
            s * s * s - 2.0 * s * s + s,
            -2.0 * s * s * s + 3.0 * s * s,
            s * s * s - s * s,
        );
        let v: [f64; 5] = std::array::from_fn(|c| {
            h00 * values[i][c] + h10 * h * tangent(i, c) + h01 * values[i + 1][c] + h11 * h * tangent(i + 1, c)
        });
        PoseArg { eye: DVec3::new(v[0], v[1], v[2]), yaw_deg: v[3], pitch_deg: v[4].clamp(-90.0, 90.0) }
    }
}

/// `deg` wrapped into (−180, 180].
fn wrap_deg(deg: f64) -> f64 {
    let w = deg.rem_euclid(360.0);
    if w > 180.0 {
        w - 360.0
    } else {
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CameraPath, PathError> {
        CameraPath::parse(text, Path::new("poses.json"))
    }

    #[test]
    fn keyframes_are_passed_through_at_their_times() {
        let p = parse(r#"{"keyframes": [{"camera": "0,0,0,0,0"}, {"camera": "10,0,0,90,-30"}, {"t": 5, "camera": "10,10,5,170,0"}]}"#).unwrap();
        assert_eq!(p.keyframes.iter().map(|k| k.t_s).collect::<Vec<_>>(), vec![0.0, 2.0, 5.0]);
        assert_eq!(p.frame, CameraFrame::File);
        for k in &p.keyframes {
            let s = p.sample(k.t_s);
            assert!(
                (s.eye - k.pose.eye).length() < 1e-9 && (s.yaw_deg - k.pose.yaw_deg).abs() < 1e-9,
                "{s:?} at {}",
                k.t_s
            );
        }
        assert_eq!(p.sample(-1.0), p.keyframes[0].pose);
        assert_eq!(p.sample(99.0), p.keyframes[2].pose);
        // Between keyframes: smooth and between the neighbours.
        let mid = p.sample(1.0);
        assert!(mid.eye.x > 2.0 && mid.eye.x < 8.0, "{mid:?}");
        assert!(mid.pitch_deg < 0.0 && mid.pitch_deg > -30.0);
        assert!((p.duration_s() - 5.0).abs() < 1e-12);
    }

    #[test]
    fn yaw_turns_the_short_way() {
        let p = parse(r#"{"frame": "local", "up": "y", "keyframes": [{"t": 0, "camera": "0,0,0,170,0"}, {"t": 1, "camera": "0,0,0,-170,0"}]}"#).unwrap();
        assert_eq!((p.frame, p.up), (CameraFrame::Local, Some(UpAxis::PosY)));
        let mid = p.sample(0.5).yaw_deg;
        assert!((wrap_deg(mid) - 180.0).abs() < 1e-9, "{mid}");
    }

    #[test]
    fn straight_lines_stay_straight_and_even() {
        // Equally spaced keyframes on a line: the spline is the line, at constant speed.
        let p = parse(r#"{"keyframes": [{"camera": "0,0,0,0,0"}, {"camera": "2,0,0,0,0"}, {"camera": "4,0,0,0,0"}]}"#)
            .unwrap();
        for i in 0..=40 {
            let t = i as f64 * 0.1;
            let s = p.sample(t);
            assert!((s.eye.x - t).abs() < 1e-9 && s.eye.y == 0.0, "{t}: {s:?}");
        }
    }

    #[test]
    fn bad_files_say_what_and_where() {
        let e = |t: &str| parse(t).unwrap_err().to_string();
        assert!(e("[").contains("poses.json: not a camera path"), "{}", e("["));
        assert!(e(r#"{"keyframes": []}"#).contains("no keyframes"));
        assert!(e(r#"{"keyframes": [{"camera": "1,2"}]}"#).contains("keyframe 0: camera '1,2': expected 5 numbers"));
        assert!(e(r#"{"keyframes": [{"t": 1, "camera": "0,0,0,0,0"}, {"t": 1, "camera": "0,0,0,0,0"}]}"#)
            .contains("keyframe 1: t = 1 s is not after"));
        let missing = CameraPath::load(Path::new("/nonexistent/poses.json")).unwrap_err().to_string();
        assert!(missing.contains("/nonexistent/poses.json"), "{missing}");
    }

    #[test]
    fn json_round_trips() {
        let p = parse(r#"{"up": "-x", "keyframes": [{"camera": "500000.125,4000000.5,12,33.5,-20"}, {"t": 3.5, "camera": "1,2,3,4,5"}]}"#).unwrap();
        assert_eq!(parse(&p.to_json()).unwrap(), p);
    }
}
