//! `pcv.Camera`: the library's camera (an eye, yaw and pitch about an up axis, 60° vertical field of
//! view) or a caller's own 4x4 `clip_from_world`.
//!
//! How it works: a pose camera becomes a `pcv_camera::Camera` over the points' bounds, so its planes
//! are the library's: fixed when `near` and `far` are given, else following the eye around the bounds
//! (every point in view lies between them, as in `pcv render`). That needs the bounds, which cost a
//! pass over device arrays (`pcv_ext_bounds`): give `near` and `far` to skip it. A matrix camera is
//! used as given (OpenGL clip space: NDC y = 1 is the frame's row 0, its top), with `near`/`far` only for
//! eye-dome lighting and adaptive point sizes. No camera: the library's start view of the bounds (an
//! oblique view from above that fits them), z up.
use glam::{DVec3, Mat4, Vec3};
use pcv_camera::{lens::DepthRange, Camera as LibCamera, DepthPolicy, Pose, PoseArg, UpAxis};
use pcv_io::Bounds;
use pcv_render::FrameParams;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Pose { pose: Pose, up: UpAxis, planes: Option<DepthRange> },
    Matrix { clip_from_world: Mat4, planes: DepthRange },
}

/// A camera for `pcv.render` and `pcv.Viewer`.
#[pyclass(module = "pcv", frozen)]
#[derive(Clone)]
pub struct Camera {
    pub kind: Kind,
}

fn planes(near: Option<f32>, far: Option<f32>) -> PyResult<Option<DepthRange>> {
    match (near, far) {
        (None, None) => Ok(None),
        (Some(n), Some(f)) if n > 0.0 && f > n && f.is_finite() => Ok(Some(DepthRange { near: n, far: f })),
        (Some(n), Some(f)) => Err(PyValueError::new_err(format!("camera: need 0 < near < far, got near={n}, far={f}"))),
        _ => Err(PyValueError::new_err("camera: give both near and far, or neither (planes that follow the eye)")),
    }
}

fn up_axis(up: &str) -> PyResult<UpAxis> {
    up.parse::<UpAxis>().map_err(|e| PyValueError::new_err(format!("camera: {e}")))
}

fn vec3(v: [f32; 3], what: &str) -> PyResult<Vec3> {
    let v = Vec3::from_array(v);
    if v.is_finite() {
        Ok(v)
    } else {
        Err(PyValueError::new_err(format!("camera: {what} must be finite, got {v}")))
    }
}

impl Camera {
    /// Whether the frame needs the points' bounds (planes that follow the eye, or no camera).
    pub fn needs_bounds(cam: Option<&Camera>) -> bool {
        matches!(cam.map(|c| c.kind), None | Some(Kind::Pose { planes: None, .. }))
    }

    /// The library camera of a pose camera (or of none: the start view) for points within `bounds`.
    pub fn library(cam: Option<&Camera>, bounds: Bounds) -> Option<LibCamera> {
        match cam.map(|c| c.kind) {
            None => Some(LibCamera::for_cloud(bounds, false)),
            Some(Kind::Pose { pose, up, planes }) => {
                // Fixed planes: the pose alone makes the matrix, so skip framing the bounds (the oblique
                // fit cost 0.37 ms a call on the GPU machine, a third of a 100M-point frame); planes that
                // follow the eye need the framed camera's bounds.
                let mut c = LibCamera::for_cloud(bounds, planes.is_some());
                c.pose = pose;
                c.start = pose;
                c.up = up;
                c.start_up = up;
                if let Some(p) = planes {
                    c.depth = DepthPolicy::Fixed(p);
                }
                Some(c)
            }
            Some(Kind::Matrix { .. }) => None,
        }
    }

    /// The frame of a `width × height` image of points within `bounds`.
    pub fn frame(cam: Option<&Camera>, bounds: Bounds, width_px: u32, height_px: u32) -> FrameParams {
        match cam.map(|c| c.kind) {
            Some(Kind::Matrix { clip_from_world, planes }) => {
                FrameParams::new(clip_from_world, width_px, height_px).with_depth_range(planes.near, planes.far)
            }
            _ => match Camera::library(cam, bounds) {
                Some(c) => pcv_render::FrameParams::of_camera(&c, width_px, height_px),
                None => FrameParams::new(Mat4::IDENTITY, width_px, height_px),
            },
        }
    }
}

#[pymethods]
impl Camera {
    /// A camera at `eye` looking `yaw` degrees about the up axis (0 along +x, 90 along +y for z up) and
    /// `pitch` degrees above the horizon, as `pcv --camera x,y,z,yaw,pitch` and the viewer's K key
    /// print it. `near`, `far`: fixed planes (else they follow the eye around the points).
    #[new]
    #[pyo3(signature = (eye, yaw=0.0, pitch=0.0, *, up="z", near=None, far=None))]
    fn new(eye: [f64; 3], yaw: f64, pitch: f64, up: &str, near: Option<f32>, far: Option<f32>) -> PyResult<Camera> {
        if !(eye.iter().all(|v| v.is_finite()) && yaw.is_finite() && pitch.is_finite()) {
            return Err(PyValueError::new_err("camera: eye, yaw and pitch must be finite"));
        }
        // The library's reading of `--camera x,y,z,yaw,pitch` (in local coordinates): the same pose bits.
        let pose = PoseArg { eye: DVec3::from_array(eye), yaw_deg: yaw, pitch_deg: pitch }.to_pose(DVec3::ZERO);
        Ok(Camera { kind: Kind::Pose { pose, up: up_axis(up)?, planes: planes(near, far)? } })
    }

    /// A camera at `eye` looking at `target`.
    #[classmethod]
    #[pyo3(signature = (eye, target, *, up="z", near=None, far=None))]
    fn look_at(
        _cls: &Bound<'_, PyType>,
        eye: [f32; 3],
        target: [f32; 3],
        up: &str,
        near: Option<f32>,
        far: Option<f32>,
    ) -> PyResult<Camera> {
        let (e, t) = (vec3(eye, "eye")?, vec3(target, "target")?);
        if e == t {
            return Err(PyValueError::new_err("camera: eye and target are the same point"));
        }
        let up = up_axis(up)?;
        let pose = Pose::looking(e, t - e, up);
        Ok(Camera { kind: Kind::Pose { pose, up, planes: planes(near, far)? } })
    }

    /// A camera of your own: `clip_from_world` is a 4x4 matrix (rows as you would write it: clip =
    /// M @ [x, y, z, 1]) in OpenGL's clip space; `near`/`far` are its planes (for eye-dome lighting and
    /// adaptive point sizes).
    #[classmethod]
    #[pyo3(signature = (clip_from_world, *, near=0.01, far=100.0))]
    fn from_matrix(_cls: &Bound<'_, PyType>, clip_from_world: [[f32; 4]; 4], near: f32, far: f32) -> PyResult<Camera> {
        let m = Mat4::from_cols_array_2d(&clip_from_world).transpose();
        if !m.is_finite() {
            return Err(PyValueError::new_err("camera: clip_from_world must be finite"));
        }
        let planes = planes(Some(near), Some(far))?.unwrap_or(DepthRange::PROTOTYPE);
        Ok(Camera { kind: Kind::Matrix { clip_from_world: m, planes } })
    }

    /// The 4x4 `clip_from_world` (rows) of a `width × height` frame. Needs fixed planes (or a matrix).
    fn clip_from_world(&self, width: u32, height: u32) -> PyResult<[[f32; 4]; 4]> {
        if Camera::needs_bounds(Some(self)) {
            return Err(PyValueError::new_err(
                "camera: planes that follow the eye depend on the points; give near and far",
            ));
        }
        let f = Camera::frame(Some(self), Bounds::EMPTY, width, height);
        Ok(f.clip_from_world.transpose().to_cols_array_2d())
    }

    /// Eye position (pose cameras).
    #[getter]
    fn eye(&self) -> Option<[f32; 3]> {
        match self.kind {
            Kind::Pose { pose, .. } => Some(pose.eye.to_array()),
            Kind::Matrix { .. } => None,
        }
    }

    fn __repr__(&self) -> String {
        match self.kind {
            Kind::Pose { pose, up, planes } => {
                let p = planes
                    .map_or("planes following the eye".to_string(), |p| format!("near={}, far={}", p.near, p.far));
                format!(
                    "pcv.Camera(eye={:?}, yaw={:.3}, pitch={:.3}, up={:?}, {p})",
                    pose.eye.to_array(),
                    pose.yaw_rad.to_degrees(),
                    pose.pitch_rad.to_degrees(),
                    up.name()
                )
            }
            Kind::Matrix { planes, .. } => {
                format!("pcv.Camera.from_matrix(..., near={}, far={})", planes.near, planes.far)
            }
        }
    }
}
