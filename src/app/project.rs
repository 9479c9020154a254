//! Project files (`*.pcv.json`): what was opened and how it was looked at, to reopen it all.
//!
//! How it works: a [`Project`] is a versioned JSON document ([`VERSION`]; a newer one is refused with
//! both versions named) of the sources (paths relative to the project's folder where they lie under
//! it, else absolute; URLs as given), the camera (pose in file coordinates as `--camera` takes it, up
//! axis, projection), the controller, the look (point size, shape, EDL, background, quality) and colour mode,
//! the filter and clip volumes (boxes with their rotation), the layers' visibility, the bookmarks, the
//! measurements and the notes. [`Project::from_state`] takes them from the window; the command line turns a
//! project into the options it opens with ([`Project::start`], [`Project::filter`], [`Project::look`])
//! and the window applies the rest ([`Project::apply`]). Ctrl+S writes the project the window was
//! opened from, or a new one in the current folder.
use super::state::{AppState, Bookmark};
use glam::{DQuat, DVec3};
use pcv_camera::{PoseArg, Projection, UpAxis};
use pcv_io::filter::{ClipBox, ClipPlane, Keep, PointFilter, RangeOf, Returns, ValueRange};
use pcv_model::measure::Measurement;
use pcv_render::look::{Background, Edl, Look, PointShape, PointSize, Quality};
use std::path::{Path, PathBuf};

/// The version this pcv writes and the newest it reads.
pub const VERSION: u32 = 1;
/// The suffix project files have.
pub const SUFFIX: &str = ".pcv.json";

/// Why a project could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: not a pcv project: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{}: made by a newer pcv (project version {found}; this pcv reads up to {VERSION})", path.display())]
    Newer { path: PathBuf, found: u32 },
    #[error("{}: {what}: {message}", path.display())]
    Field { path: PathBuf, what: &'static str, message: String },
}

/// Whether `path` names a project file.
pub fn is_project(path: &Path) -> bool {
    path.to_str().is_some_and(|s| s.to_ascii_lowercase().ends_with(SUFFIX))
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Project {
    /// The format's version ([`VERSION`]).
    pub pcv_project: u32,
    pub sources: Vec<String>,
    pub camera: CameraState,
    pub look: LookState,
    /// The colour mode as `--color-by` takes it.
    pub color: String,
    #[serde(default)]
    pub filter: FilterState,
    #[serde(default)]
    pub layers: Vec<LayerState>,
    #[serde(default)]
    pub bookmarks: Vec<Option<BookmarkState>>,
    #[serde(default)]
    pub measurements: Vec<Measurement>,
    #[serde(default)]
    pub notes: Vec<NoteState>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NoteState {
    pub text: String,
    /// Where it points, in file coordinates.
    pub point: [f64; 3],
    /// The camera it was made from, as `--camera` takes it.
    pub camera: String,
    pub up: String,
    pub projection: Projection,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CameraState {
    /// `x,y,z,yaw_deg,pitch_deg`, the eye in file coordinates (what `--camera` takes).
    pub camera: String,
    pub up: String,
    pub projection: Projection,
    #[serde(default = "orbit")]
    pub controller: String,
}

fn orbit() -> String {
    "orbit".into()
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LookState {
    pub point_size: String,
    pub shape: String,
    /// EDL strength and radius in pixels (`None`: off).
    pub edl: Option<[f32; 2]>,
    pub background: String,
    /// "standard" or "high" (absent in files written before it: standard).
    #[serde(default, skip_serializing_if = "is_standard")]
    pub quality: String,
}

fn is_standard(q: &str) -> bool {
    q.is_empty() || q == "standard"
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FilterState {
    pub hidden_classes: Vec<u8>,
    pub returns: String,
    /// `NAME:MIN..MAX`, as `--filter` takes them.
    pub ranges: Vec<String>,
    pub boxes: Vec<BoxState>,
    pub planes: Vec<PlaneState>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BoxState {
    pub center: [f64; 3],
    pub half_extent: [f64; 3],
    /// The rotation from the box's axes to the file's, as a quaternion (x, y, z, w).
    pub rotation: [f64; 4],
    pub keep: String,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlaneState {
    pub point: [f64; 3],
    pub normal: [f64; 3],
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerState {
    pub label: String,
    pub visible: bool,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BookmarkState {
    pub camera: String,
    pub up: String,
    pub projection: Projection,
    #[serde(default)]
    pub filter: FilterState,
}

impl FilterState {
    pub fn of(f: &PointFilter) -> FilterState {
        FilterState {
            hidden_classes: (0..=255u8).filter(|&c| f.hidden_classes[c as usize / 64] >> (c % 64) & 1 == 1).collect(),
            returns: format!("{:?}", f.returns).to_ascii_lowercase(),
            ranges: f.ranges.iter().map(|r| format!("{}:{}..{}", r.of.name(), r.min, r.max)).collect(),
            boxes: f
                .boxes
                .iter()
                .map(|b| BoxState {
                    center: b.center.to_array(),
                    half_extent: b.half_extent.to_array(),
                    rotation: b.rotation.to_array(),
                    keep: if b.keep == Keep::Outside { "outside" } else { "inside" }.into(),
                })
                .collect(),
            planes: f
                .planes
                .iter()
                .map(|p| PlaneState { point: p.point.to_array(), normal: p.normal.to_array() })
                .collect(),
        }
    }

    pub fn to_filter(&self) -> Result<PointFilter, String> {
        let mut f = PointFilter::default();
        for &c in &self.hidden_classes {
            f.hidden_classes[c as usize / 64] |= 1 << (c % 64);
        }
        f.returns = match self.returns.as_str() {
            "" | "all" => Returns::All,
            "first" => Returns::First,
            "last" => Returns::Last,
            "only" => Returns::Only,
            other => return Err(format!("unknown returns '{other}'")),
        };
        for r in &self.ranges {
            let (name, span) = r.split_once(':').ok_or_else(|| format!("range '{r}' is not NAME:MIN..MAX"))?;
            let (lo, hi) = span.split_once("..").ok_or_else(|| format!("range '{r}' is not NAME:MIN..MAX"))?;
            let of = RangeOf::parse(name).ok_or_else(|| format!("unknown attribute '{name}'"))?;
            let num = |t: &str| t.trim().parse::<f64>().map_err(|_| format!("'{t}' in '{r}' is not a number"));
            f.ranges.push(ValueRange { of, min: num(lo)?, max: num(hi)? });
        }
        for b in &self.boxes {
            let rotation = DQuat::from_array(b.rotation);
            if !rotation.is_finite() || (rotation.length() - 1.0).abs() > 1e-6 {
                return Err(format!("a clip box's rotation {:?} is not a unit quaternion", b.rotation));
            }
            f.boxes.push(ClipBox {
                center: DVec3::from_array(b.center),
                half_extent: DVec3::from_array(b.half_extent),
                rotation,
                keep: if b.keep == "outside" { Keep::Outside } else { Keep::Inside },
            });
        }
        f.planes = self
            .planes
            .iter()
            .map(|p| ClipPlane { point: DVec3::from_array(p.point), normal: DVec3::from_array(p.normal) })
            .collect();
        Ok(f)
    }
}

/// `source` as the project in `dir` stores it: relative where it lies under `dir`, URLs as given.
fn stored(source: &str, dir: &Path) -> String {
    if source.contains("://") {
        return source.to_string();
    }
    let p = std::path::absolute(source).unwrap_or_else(|_| PathBuf::from(source));
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    match p.strip_prefix(&dir) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => p.to_string_lossy().into_owned(),
    }
}

impl Project {
    /// The window's state as a project to be written into folder `dir`; `sources` are the paths or
    /// URLs it was opened with.
    pub fn from_state(s: &AppState, sources: &[String], dir: &Path) -> Project {
        let origin = s.layers.cloud.origin;
        let cam = &s.nav.camera;
        Project {
            pcv_project: VERSION,
            sources: sources.iter().map(|x| stored(x, dir)).collect(),
            camera: CameraState {
                camera: PoseArg::format(&cam.pose, origin),
                up: cam.up.name().into(),
                projection: cam.projection,
                controller: s.nav.active.name().into(),
            },
            look: LookState {
                point_size: s.look.point_size.to_string(),
                shape: s.look.shape.to_string(),
                edl: s.look.edl.map(|e| [e.strength, e.radius_px]),
                background: s.look.background.to_string(),
                quality: s.look.quality.to_string(),
            },
            color: s.color_mode.to_string(),
            filter: FilterState::of(&s.layers.filter),
            layers: s.layers.layers.iter().map(|l| LayerState { label: l.label.clone(), visible: l.visible }).collect(),
            bookmarks: s
                .bookmarks
                .iter()
                .map(|b| {
                    b.as_ref().map(|b| BookmarkState {
                        camera: PoseArg::format(&b.pose, origin),
                        up: b.up.name().into(),
                        projection: b.projection,
                        filter: FilterState::of(&b.filter),
                    })
                })
                .collect(),
            measurements: s.measure.all(),
            notes: s
                .notes
                .list
                .iter()
                .map(|n| NoteState {
                    text: n.text.clone(),
                    point: n.file.to_array(),
                    camera: PoseArg::format(&n.pose, origin),
                    up: n.up.name().into(),
                    projection: n.projection,
                })
                .collect(),
        }
    }

    /// Reads a project; its sources resolved against its folder.
    pub fn load(path: &Path) -> Result<(Project, Vec<PathBuf>), ProjectError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProjectError::Io { path: path.into(), source })?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| ProjectError::Parse { path: path.into(), message: e.to_string() })?;
        let version = value.get("pcv_project").and_then(|v| v.as_u64()).ok_or_else(|| ProjectError::Parse {
            path: path.into(),
            message: "no \"pcv_project\" version number".into(),
        })?;
        if version > VERSION as u64 {
            return Err(ProjectError::Newer { path: path.into(), found: version.min(u32::MAX as u64) as u32 });
        }
        let p: Project = serde_json::from_value(value)
            .map_err(|e| ProjectError::Parse { path: path.into(), message: e.to_string() })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let sources = p
            .sources
            .iter()
            .map(|s| if s.contains("://") || Path::new(s).is_absolute() { PathBuf::from(s) } else { dir.join(s) })
            .collect();
        Ok((p, sources))
    }

    /// Writes the project to `path`.
    pub fn save(&self, path: &Path) -> Result<(), ProjectError> {
        let text = serde_json::to_string_pretty(self).expect("a project serializes");
        std::fs::write(path, text + "\n").map_err(|source| ProjectError::Io { path: path.into(), source })
    }

    /// The camera as the command line's start options take it: the pose, up axis and projection.
    pub fn start(&self, path: &Path) -> Result<(PoseArg, UpAxis, Projection), ProjectError> {
        let field = |what, message| ProjectError::Field { path: path.into(), what, message };
        let pose = PoseArg::parse(&self.camera.camera).map_err(|m| field("camera", m))?;
        let up: UpAxis = self.camera.up.parse().map_err(|m| field("up", m))?;
        Ok((pose, up, self.camera.projection))
    }

    pub fn filter(&self, path: &Path) -> Result<PointFilter, ProjectError> {
        self.filter.to_filter().map_err(|message| ProjectError::Field { path: path.into(), what: "filter", message })
    }

    /// The look, over `base` (what a field that does not parse keeps).
    pub fn look(&self, base: Look) -> Look {
        let l = &self.look;
        Look {
            point_size: PointSize::parse(&l.point_size).unwrap_or(base.point_size),
            shape: if l.shape == "square" { PointShape::Square } else { PointShape::Round },
            edl: l.edl.map(|[strength, radius_px]| Edl { strength, radius_px }),
            background: Background::parse(&l.background).unwrap_or(base.background),
            quality: if l.quality == "high" { Quality::High } else { Quality::Standard },
            ..base
        }
    }

    /// What the window applies itself once open: layers' visibility, bookmarks, measurements, the
    /// controller and the projection (the pose, look, colour and filter came with the options).
    pub fn apply(&self, s: &mut AppState) {
        let origin = s.layers.cloud.origin;
        for l in &self.layers {
            if let Some(layer) = s.layers.layers.iter_mut().find(|x| x.label == l.label) {
                layer.visible = l.visible;
            }
        }
        for (slot, b) in s.bookmarks.iter_mut().zip(&self.bookmarks) {
            *slot = b.as_ref().and_then(|b| {
                Some(Bookmark {
                    pose: PoseArg::parse(&b.camera).ok()?.to_pose(origin),
                    up: b.up.parse().ok()?,
                    projection: b.projection,
                    filter: b.filter.to_filter().ok()?,
                })
            });
        }
        s.measure.done = self.measurements.clone();
        s.notes.list = self
            .notes
            .iter()
            .filter_map(|n| {
                Some(super::notes::Note {
                    text: n.text.clone(),
                    file: DVec3::from_array(n.point),
                    pose: PoseArg::parse(&n.camera).ok()?.to_pose(origin),
                    up: n.up.parse().ok()?,
                    projection: n.projection,
                })
            })
            .collect();
        s.notes.visible = vec![true; s.notes.list.len()];
        s.nav.camera.projection = self.camera.projection;
        s.nav.camera.start_projection = self.camera.projection;
        if self.camera.controller == "fly" {
            s.nav.set_active(pcv_camera::ControllerKind::Fly);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcv_model::measure::MeasureKind;

    #[test]
    fn filters_round_trip_with_rotated_boxes_ranges_and_classes() {
        let mut f = PointFilter::default();
        for c in [5u8, 7, 200] {
            f.hidden_classes[c as usize / 64] |= 1 << (c % 64);
        }
        f.returns = Returns::Last;
        f.ranges.push(ValueRange { of: RangeOf::parse("gps_time").unwrap(), min: 1.5, max: 2.25 });
        f.ranges.push(ValueRange { of: RangeOf::Intensity, min: 0.0, max: 300.0 });
        f.boxes.push(ClipBox {
            center: DVec3::new(512_000.5, 5_400_000.25, 10.0),
            half_extent: DVec3::new(5.0, 6.0, 7.0),
            rotation: DQuat::from_rotation_z(0.7),
            keep: Keep::Outside,
        });
        f.planes.push(ClipPlane { point: DVec3::new(1.0, 2.0, 3.0), normal: DVec3::Z });
        let state = FilterState::of(&f);
        assert_eq!(state.hidden_classes, vec![5, 7, 200]);
        let json = serde_json::to_string(&state).unwrap();
        let back: FilterState = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_filter().unwrap(), f);
        let mut bad = state.clone();
        bad.rotation_check();
    }

    impl FilterState {
        /// A box whose rotation is not a unit quaternion is refused.
        fn rotation_check(&mut self) {
            self.boxes[0].rotation = [0.0, 0.0, 0.0, 2.0];
            assert!(self.to_filter().unwrap_err().contains("not a unit quaternion"));
        }
    }

    #[test]
    fn newer_versions_and_broken_files_are_refused_and_sources_resolve_against_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project {
            pcv_project: VERSION,
            sources: vec!["tiles/a.las".into(), "/data/b.laz".into(), "https://example.org/c.copc.laz".into()],
            camera: CameraState {
                camera: "512000,5400000,300,45,-30".into(),
                up: "z".into(),
                projection: Projection::Orthographic { half_height_m: 40.0 },
                controller: "fly".into(),
            },
            look: LookState {
                point_size: "3".into(),
                shape: "square".into(),
                edl: Some([1.5, 2.0]),
                background: "black".into(),
                quality: "high".into(),
            },
            color: "classification".into(),
            filter: FilterState::default(),
            layers: vec![],
            bookmarks: vec![None],
            measurements: vec![Measurement { kind: MeasureKind::Point, points: vec![DVec3::new(1.0, 2.0, 3.0)] }],
            notes: vec![NoteState {
                text: "oak, 18 m".into(),
                point: [512010.5, 5400020.25, 318.0],
                camera: "512000,5400000,330,45,-20".into(),
                up: "z".into(),
                projection: Projection::Perspective,
            }],
        };
        let path = dir.path().join("site.pcv.json");
        project.save(&path).unwrap();
        let (back, sources) = Project::load(&path).unwrap();
        assert_eq!(back, project);
        assert_eq!(sources[0], dir.path().join("tiles/a.las"));
        assert_eq!(sources[1], PathBuf::from("/data/b.laz"));
        assert_eq!(sources[2], PathBuf::from("https://example.org/c.copc.laz"));
        let (pose, up, projection) = back.start(&path).unwrap();
        assert_eq!(
            (pose.eye, up, projection),
            (DVec3::new(512000.0, 5400000.0, 300.0), UpAxis::PosZ, project.camera.projection)
        );
        let look = back.look(Look::PLAIN);
        assert_eq!(
            (look.point_size, look.shape, look.background),
            (PointSize::Fixed(3), PointShape::Square, Background::BLACK)
        );
        assert_eq!(look.edl, Some(Edl { strength: 1.5, radius_px: 2.0 }));
        assert_eq!(look.quality, Quality::High);
        // A newer version, something else, a broken field.
        let newer = dir.path().join("newer.pcv.json");
        std::fs::write(&newer, r#"{"pcv_project": 7, "anything": true}"#).unwrap();
        let e = Project::load(&newer).unwrap_err().to_string();
        assert!(e.contains("made by a newer pcv (project version 7; this pcv reads up to 1)"), "{e}");
        std::fs::write(&newer, r#"{"type": "FeatureCollection"}"#).unwrap();
        assert!(Project::load(&newer).unwrap_err().to_string().contains("no \"pcv_project\" version"));
        let mut broken = project.clone();
        broken.camera.camera = "1,2,three,4,5".into();
        broken.save(&newer).unwrap();
        let (b, _) = Project::load(&newer).unwrap();
        assert!(b.start(&newer).unwrap_err().to_string().contains("camera: 'three' is not a number"));
        // Stored paths: relative under the project's folder, absolute elsewhere, URLs as given.
        assert_eq!(stored(&dir.path().join("x/y.las").display().to_string(), dir.path()), "x/y.las");
        assert_eq!(stored("/elsewhere/z.las", dir.path()), "/elsewhere/z.las");
        assert_eq!(stored("http://h/a.copc.laz", dir.path()), "http://h/a.copc.laz");
        assert!(is_project(&path) && !is_project(Path::new("a.json")));
    }
}
