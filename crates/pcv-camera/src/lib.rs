//! The camera: one pose, an up axis and a lens, moved by controllers.
//!
//! How it works: [`Camera`] is what every command renders from: a [`Pose`] (eye, yaw, pitch in the
//! up frame), the [`UpAxis`] that frame stands on, the near and far planes (fixed for the built-in
//! scene, following the eye for loaded clouds: [`lens`]) and the speed that WASD moves at.
//! `clip_from_world = clip_from_view · view_from_world`, the matrix the rasterizers take; `clip_from_view`
//! is a perspective or an orthographic projection ([`Projection`]). An orthographic camera keeps its
//! eye (the pose moves as in perspective) and adds the half height of what it shows: the wheel and
//! W/S change that (zoom) instead of only moving the eye, and switching between the two keeps the
//! size of what lies at the framed box's depth ([`Camera::set_projection`]).
//! [`Camera::start`] makes the camera a cloud starts with: the prototype's pose, planes and speed for
//! the built-in scene, exactly; for files, the up axis from `--up` or the [`framing::auto_up`] rule and
//! the oblique view that fits the cloud's percentile box ([`framing`]); or the `--camera` pose, in file
//! or local coordinates ([`pose::PoseArg`]).
//!
//! Input moves the camera through controllers ([`controller`]): [`fly::Fly`] (the prototype's
//! controls, plus drag to turn) and [`orbit::Orbit`] (turn around the point under the cursor, pan,
//! zoom to the cursor), both over this one camera, so switching keeps the view. [`Navigator`] holds the
//! camera and both controllers and routes input to the active one. [`path`] interpolates keyframed
//! poses for `--path` and `pcv record`.
pub mod controller;
pub mod fly;
pub mod framing;
pub mod lens;
pub mod orbit;
pub mod path;
pub mod pose;
pub mod scenarios;

pub use controller::{CameraController, ControllerKind, DepthProbe, DragButton, MoveInput, Nav, NavCtx, NoProbe};
pub use framing::View;
pub use lens::{DepthRange, Projection, FOV_Y_RAD};
pub use pose::{Basis, CameraFrame, Pose, PoseArg, UpAxis, UpChoice};

use controller::LOOK_RAD_PER_HEIGHT;
use glam::{Mat4, Vec3};
use pcv_io::{Bounds, PointCloud};
use std::f32::consts::{FRAC_PI_2, TAU};

/// Former name of [`Camera`], kept for callers written before the controllers existed.
pub type FlyCamera = Camera;

/// The built-in scene's fly speed (the prototype's 3 m/s).
pub const PROTOTYPE_SPEED_M_PER_S: f32 = 3.0;
/// Loaded clouds: metres a second of fly speed per metre of depth ahead (a second to reach what is in
/// front, whatever its distance).
pub const SPEED_PER_DEPTH_PER_S: f32 = 1.0;
/// How quickly the adaptive speed follows the depth ahead (time constant).
const SPEED_SMOOTHING_S: f32 = 0.2;

/// How the near and far planes are chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DepthPolicy {
    /// The same planes every frame (the built-in scene: the prototype's).
    Fixed(DepthRange),
    /// Planes that follow the eye ([`DepthRange::around`] the bounds).
    Adaptive,
}

/// The camera every command renders from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub pose: Pose,
    pub up: UpAxis,
    /// Where R returns to.
    pub start: Pose,
    pub start_up: UpAxis,
    pub depth: DepthPolicy,
    /// The cloud's bounds (the planes keep all of it).
    pub bounds: Bounds,
    /// What framing fits: the percentile box ([`framing::percentile_box`]).
    pub frame_box: Bounds,
    /// The speed WASD moves at before the wheel's factor (adapted to the depth ahead when
    /// `adaptive_speed`).
    pub speed_m_per_s: f32,
    pub default_speed_m_per_s: f32,
    pub adaptive_speed: bool,
    /// The wheel's factor on the speed (fly controller), 1 at the start.
    pub speed_scale: f32,
    /// Perspective or orthographic.
    pub projection: Projection,
    /// Where R returns to.
    pub start_projection: Projection,
}

/// How a command starts its camera.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartOptions {
    /// `--camera`: the start pose, in `frame` coordinates.
    pub pose: Option<PoseArg>,
    pub frame: CameraFrame,
    pub up: UpChoice,
    /// Width over height of the frame the start view is fitted to.
    pub aspect: f32,
    /// `--projection ortho`: start orthographic (the start view's framing, or the `--camera` pose with
    /// the framed box's size at its depth).
    pub ortho: bool,
    /// `--ortho-height`: the height an orthographic frame shows (local units, as the file's).
    pub ortho_height: Option<f32>,
    /// `--view`: a standard view of the framed box instead of the oblique start view (ignored with a
    /// `--camera` pose).
    pub view: Option<View>,
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            pose: None,
            frame: CameraFrame::File,
            up: UpChoice::Auto,
            aspect: framing::DEFAULT_ASPECT,
            ortho: false,
            ortho_height: None,
            view: None,
        }
    }
}

/// Why the camera has the up axis it has (for the panel and the log).
#[derive(Clone, Debug, PartialEq)]
pub struct UpReason(pub String);

impl Camera {
    /// The camera a cloud starts with (see the module doc), and why its up axis is what it is.
    pub fn start(cloud: &PointCloud, opts: &StartOptions) -> (Camera, UpReason) {
        Camera::start_framing(cloud, framing::framing_box(cloud), opts)
    }

    /// [`Camera::start`] framing `frame_box` (local coordinates) rather than the cloud's own framing
    /// box: for a cloud whose points are elsewhere (a level-of-detail scene's sample of them).
    pub fn start_framing(cloud: &PointCloud, frame_box: Bounds, opts: &StartOptions) -> (Camera, UpReason) {
        let (up, reason) = match opts.up {
            UpChoice::Axis(a) => (a, UpReason(format!("{a} (--up)"))),
            UpChoice::Auto => {
                let a = framing::auto_up(cloud, &frame_box);
                (a.axis, UpReason(format!("{} (auto: {})", a.axis, a.reason)))
            }
        };
        let mut cam = if cloud.scene().is_some() {
            Camera::builtin(cloud.bounds)
        } else {
            Camera::framed(cloud.bounds, frame_box, up, opts.aspect)
        };
        if cam.up != up {
            cam.up = up;
            cam.start_up = up;
        }
        if let Some(arg) = &opts.pose {
            cam.pose = arg.to_pose(opts.frame.origin(cloud.origin));
            cam.start = cam.pose;
        }
        if opts.ortho || (opts.view.is_some() && opts.pose.is_none()) {
            if opts.pose.is_some() {
                cam.set_projection(true);
            } else {
                if opts.ortho {
                    cam.projection = Projection::Orthographic { half_height_m: 1.0 };
                }
                cam.set_view(opts.view.unwrap_or(View::Oblique), opts.aspect);
            }
            if let Some(h) = opts.ortho_height.filter(|h| opts.ortho && h.is_finite() && *h > 0.0) {
                cam.projection = Projection::Orthographic { half_height_m: h * 0.5 };
            }
            cam.start = cam.pose;
            cam.start_projection = cam.projection;
        }
        (cam, reason)
    }

    /// The camera for a cloud with these bounds: the prototype's pose and planes for the built-in
    /// scene, the oblique view of the bounds (z up) for anything else.
    pub fn for_cloud(bounds: Bounds, builtin_scene: bool) -> Camera {
        if builtin_scene {
            Camera::builtin(bounds)
        } else {
            Camera::framed(bounds, bounds, UpAxis::PosZ, framing::DEFAULT_ASPECT)
        }
    }

    /// [`Camera::start`] with the automatic up axis and `pose` (local coordinates) as the start pose
    /// when one is given: what `pcv render` and the bench start with.
    pub fn start_for(cloud: &PointCloud, pose: Option<Pose>) -> Camera {
        let (mut cam, _) = Camera::start(cloud, &StartOptions::default());
        if let Some(p) = pose {
            cam.pose = p;
            cam.start = p;
        }
        cam
    }

    fn builtin(bounds: Bounds) -> Camera {
        Camera {
            pose: Pose::PROTOTYPE,
            up: UpAxis::PosZ,
            start: Pose::PROTOTYPE,
            start_up: UpAxis::PosZ,
            depth: DepthPolicy::Fixed(DepthRange::PROTOTYPE),
            bounds,
            frame_box: bounds,
            speed_m_per_s: PROTOTYPE_SPEED_M_PER_S,
            default_speed_m_per_s: PROTOTYPE_SPEED_M_PER_S,
            adaptive_speed: false,
            speed_scale: 1.0,
            projection: Projection::Perspective,
            start_projection: Projection::Perspective,
        }
    }

    fn framed(bounds: Bounds, frame_box: Bounds, up: UpAxis, aspect: f32) -> Camera {
        let pose = framing::view_pose(View::Oblique, &frame_box, up, aspect);
        let speed = (pose.eye.distance(frame_box.center()) * SPEED_PER_DEPTH_PER_S).max(1e-6);
        Camera {
            pose,
            up,
            start: pose,
            start_up: up,
            depth: DepthPolicy::Adaptive,
            bounds,
            frame_box,
            speed_m_per_s: speed,
            default_speed_m_per_s: speed,
            adaptive_speed: true,
            speed_scale: 1.0,
            projection: Projection::Perspective,
            start_projection: Projection::Perspective,
        }
    }

    /// The pose's forward, up and right in world coordinates.
    pub fn basis(&self) -> Basis {
        self.pose.basis(self.up)
    }

    /// This frame's near and far planes (orthographic: around the bounds, [`DepthRange::along`]).
    pub fn depth_range(&self) -> DepthRange {
        match (self.projection, self.depth) {
            (Projection::Orthographic { .. }, _) if !self.bounds.is_empty() => {
                DepthRange::along(self.pose.eye, self.basis().forward, &self.bounds)
            }
            (_, DepthPolicy::Fixed(d)) => d,
            (_, DepthPolicy::Adaptive) => DepthRange::around(self.pose.eye, &self.bounds),
        }
    }

    pub fn is_ortho(&self) -> bool {
        self.projection.is_ortho()
    }

    /// World units a pixel spans at view depth `depth_m` (orthographic: at every depth).
    pub fn units_per_px(&self, depth_m: f32, height_px: u32) -> f32 {
        match self.projection {
            Projection::Perspective => lens::units_per_px(depth_m, height_px),
            Projection::Orthographic { half_height_m } => 2.0 * half_height_m / height_px.max(1) as f32,
        }
    }

    /// The view depth of the framed box's centre (a box-sized depth when it is behind the eye).
    fn focus_depth(&self) -> f32 {
        let d = (self.frame_box.center() - self.pose.eye).dot(self.basis().forward);
        if d > 0.0 {
            d
        } else {
            self.frame_box.radius().max(1e-3)
        }
    }

    /// Switches to orthographic (`true`) or perspective, keeping the size of what lies at the framed
    /// box's depth: to orthographic, the half height the perspective frame has there; back to
    /// perspective, the eye moves along the view to where the perspective frame has that height there.
    pub fn set_projection(&mut self, ortho: bool) {
        match (self.projection, ortho) {
            (Projection::Perspective, true) => {
                let d = self.focus_depth();
                self.projection = Projection::Orthographic { half_height_m: (d * (FOV_Y_RAD * 0.5).tan()).max(1e-6) };
            }
            (Projection::Orthographic { half_height_m }, false) => {
                let f = self.basis().forward;
                let focus = self.pose.eye + f * (self.frame_box.center() - self.pose.eye).dot(f);
                self.pose.eye = focus - f * lens::equivalent_depth(half_height_m);
                self.projection = Projection::Perspective;
            }
            _ => {}
        }
    }

    /// Orthographic zoom by `factor` (below 1: closer) about the view-plane point at `at_px`
    /// (framebuffer pixels from the top-left), which stays under the cursor. Perspective: nothing.
    pub fn zoom_ortho(&mut self, factor: f32, at_px: glam::Vec2, size_px: (u32, u32)) {
        let Projection::Orthographic { half_height_m } = self.projection else { return };
        let (w, h) = (size_px.0.max(1) as f32, size_px.1.max(1) as f32);
        let b = self.basis();
        let x = (at_px.x / w * 2.0 - 1.0) * half_height_m * w / h;
        let y = (1.0 - at_px.y / h * 2.0) * half_height_m;
        let target = b.right * x + b.up * y;
        let factor = factor.clamp(1e-3, 1e3);
        let hh = (half_height_m * factor).clamp(self.frame_box.radius().max(1e-3) * 1e-6, 1e12);
        let k = hh / half_height_m;
        self.pose.eye += target * (1.0 - k);
        self.projection = Projection::Orthographic { half_height_m: hh };
    }

    pub fn view_from_world(&self) -> Mat4 {
        self.pose.view_from_world_up(self.up)
    }

    pub fn clip_from_view(&self, width_px: u32, height_px: u32) -> Mat4 {
        lens::clip_from_view(self.projection, self.depth_range(), width_px, height_px)
    }

    pub fn clip_from_world(&self, width_px: u32, height_px: u32) -> Mat4 {
        self.clip_from_view(width_px, height_px) * self.view_from_world()
    }

    /// Mouse-look: `dx_px`, `dy_px` of motion in a window `height_px` tall (the prototype's rule: 3
    /// radians per window height, pitch clamped to ±90°).
    pub fn look(&mut self, dx_px: f32, dy_px: f32, height_px: f32) {
        let h = height_px.max(1.0);
        self.pose.pitch_rad = (self.pose.pitch_rad - dy_px / h * LOOK_RAD_PER_HEIGHT).clamp(-FRAC_PI_2, FRAC_PI_2);
        self.pose.yaw_rad = (self.pose.yaw_rad - dx_px / h * LOOK_RAD_PER_HEIGHT) % TAU;
    }

    /// The speed WASD moves at now.
    pub fn speed(&self) -> f32 {
        self.speed_m_per_s * self.speed_scale
    }

    /// Moves for `dt_s` seconds: forward/back and left/right in the view, Q/E along the up axis.
    /// Orthographic: forward and back also zoom, as walking towards what lies at the frame's
    /// equivalent depth would.
    pub fn walk(&mut self, input: &MoveInput, dt_s: f32) {
        let speed = self.speed() * if input.fast { 4.0 } else { 1.0 };
        let b = self.basis();
        let dir = b.forward * input.forward + b.right * input.right + self.up.vector() * input.up;
        self.pose.eye += dir * speed * dt_s;
        if let Projection::Orthographic { half_height_m } = self.projection {
            let depth = lens::equivalent_depth(half_height_m);
            let factor = (-input.forward * speed * dt_s / depth).exp();
            let hh = (half_height_m * factor).clamp(self.frame_box.radius().max(1e-3) * 1e-6, 1e12);
            self.projection = Projection::Orthographic { half_height_m: hh };
        }
    }

    /// Alias of [`Camera::walk`] (the prototype's name).
    pub fn fly(&mut self, input: MoveInput, dt_s: f32) {
        self.walk(&input, dt_s);
    }

    /// Mouse wheel (fly): each notch scales the speed by 1.25.
    pub fn scale_speed(&mut self, notches: f32) {
        self.speed_scale = (self.speed_scale * 1.25f32.powf(notches)).clamp(1e-6, 1e6);
    }

    /// Moves the speed towards [`SPEED_PER_DEPTH_PER_S`] × the depth of what is ahead (`None`:
    /// nothing is, and the speed stays), smoothly (in log space) over [`SPEED_SMOOTHING_S`], within a
    /// range set by the cloud's size.
    pub fn adapt_speed(&mut self, ahead_m: Option<f32>, dt_s: f32) {
        let Some(d) = ahead_m.filter(|d| d.is_finite() && *d > 0.0) else { return };
        let r = self.frame_box.radius().max(self.bounds.radius()).max(1e-3);
        let target = (d * SPEED_PER_DEPTH_PER_S).clamp(r * 1e-4, r * 4.0);
        // Smoothed in log space: from 1000 m/s to 0.5 m/s as evenly as from 1 to 2.
        let alpha = 1.0 - (-dt_s.max(0.0) / SPEED_SMOOTHING_S).exp();
        let current = self.speed_m_per_s.max(1e-9);
        self.speed_m_per_s = (current.ln() + (target.ln() - current.ln()) * alpha).exp();
    }

    /// F: keeps the direction and fits the framed box ([`framing::fit`]; orthographic:
    /// [`framing::fit_ortho`]).
    pub fn frame_all(&mut self, aspect: f32) {
        self.fit(self.pose.yaw_rad, self.pose.pitch_rad, aspect);
    }

    fn fit(&mut self, yaw_rad: f32, pitch_rad: f32, aspect: f32) {
        match self.projection {
            Projection::Perspective => self.pose = framing::fit(&self.frame_box, yaw_rad, pitch_rad, self.up, aspect),
            Projection::Orthographic { .. } => {
                let (pose, half_height_m) = framing::fit_ortho(&self.frame_box, yaw_rad, pitch_rad, self.up, aspect);
                self.pose = pose;
                self.projection = Projection::Orthographic { half_height_m };
            }
        }
    }

    /// A standard view of the framed box, in the current projection.
    pub fn set_view(&mut self, view: View, aspect: f32) {
        let (yaw, pitch) = view.angles(&self.frame_box, self.up);
        self.fit(yaw, pitch, aspect);
    }

    /// A new up axis: the start view of the framed box for it.
    pub fn set_up(&mut self, up: UpAxis, aspect: f32) {
        self.up = up;
        self.set_view(View::Oblique, aspect);
    }

    /// New bounds (files added or removed); the pose stays.
    pub fn set_bounds(&mut self, bounds: Bounds, frame_box: Bounds) {
        self.bounds = bounds;
        self.frame_box = frame_box;
    }

    /// R: back to the start pose, up axis and speed.
    pub fn reset(&mut self) {
        self.pose = self.start;
        self.projection = self.start_projection;
        self.up = self.start_up;
        self.speed_m_per_s = self.default_speed_m_per_s;
        self.speed_scale = 1.0;
    }
}

/// A pose framing `bounds` along (yaw, pitch) with z up, at the default aspect (the bench's far pose).
pub fn frame_pose(bounds: Bounds, yaw_rad: f32, pitch_rad: f32) -> Pose {
    framing::fit(&bounds, yaw_rad, pitch_rad, UpAxis::PosZ, framing::DEFAULT_ASPECT)
}

/// The camera and its two controllers, one of them active.
#[derive(Clone, Debug)]
pub struct Navigator {
    pub camera: Camera,
    pub active: ControllerKind,
    fly: fly::Fly,
    orbit: orbit::Orbit,
}

impl Navigator {
    pub fn new(camera: Camera, active: ControllerKind) -> Navigator {
        Navigator { camera, active, fly: fly::Fly::default(), orbit: orbit::Orbit::default() }
    }

    /// The active controller and the camera, borrowed apart.
    fn parts(&mut self) -> (&mut dyn CameraController, &mut Camera) {
        match self.active {
            ControllerKind::Fly => (&mut self.fly, &mut self.camera),
            ControllerKind::Orbit => (&mut self.orbit, &mut self.camera),
        }
    }

    /// Mouse input to the active controller; whether the camera moved.
    pub fn handle(&mut self, nav: &Nav, ctx: &mut NavCtx<'_>) -> bool {
        let (c, cam) = self.parts();
        c.handle(cam, nav, ctx)
    }

    /// Held keys; whether the camera moved.
    pub fn tick(&mut self, held: &MoveInput, dt_s: f32, ctx: &mut NavCtx<'_>) -> bool {
        let (c, cam) = self.parts();
        c.tick(cam, held, dt_s, ctx)
    }

    /// Switches controllers; the pose stays. A drag in progress ends.
    pub fn set_active(&mut self, kind: ControllerKind) {
        let (c, cam) = self.parts();
        c.handle(cam, &Nav::DragEnd, &mut NavCtx { size_px: (1, 1), probe: &mut NoProbe });
        self.active = kind;
    }

    /// The orbit pivot (or zoom target) last used, for the panel.
    pub fn pivot(&self) -> Option<Vec3> {
        match self.active {
            ControllerKind::Orbit => self.orbit.pivot(),
            ControllerKind::Fly => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec4;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn clip_from_world_matches_hand_computed_values() {
        // Eye (-3,0,0) looking along +x, z up, 60° fov, aspect 2, near 0.01, far 100.
        let cam = Camera::for_cloud(Bounds::EMPTY, true);
        let m = cam.clip_from_world(200, 100);
        let f = 1.0 / (30f32.to_radians()).tan(); // 1.7320508
                                                  // The origin is 3 in front: view (0, 0, -3).
        let c = m * Vec4::new(0.0, 0.0, 0.0, 1.0);
        assert!(close(c.x, 0.0) && close(c.y, 0.0));
        assert!(close(c.w, 3.0));
        let (n, fa) = (0.01f32, 100.0f32);
        let expected_z = (fa + n) / (n - fa) * -3.0 + 2.0 * fa * n / (n - fa);
        assert!(close(c.z, expected_z), "{} vs {expected_z}", c.z);
        // A point 1 to the camera's left (+y) at distance 3: view x = -1.
        let c = m * Vec4::new(0.0, 1.0, 0.0, 1.0);
        assert!(close(c.x, -f / 2.0), "{}", c.x);
        // A point 1 up (+z): view y = +1.
        let c = m * Vec4::new(0.0, 0.0, 1.0, 1.0);
        assert!(close(c.y, f), "{}", c.y);
    }

    #[test]
    fn the_builtin_scene_keeps_the_prototype_start_exactly() {
        let scene = pcv_io::scene::lazy(10_000_000, 1);
        for aspect in [16.0 / 9.0, 1.0, 0.3] {
            let (cam, reason) = Camera::start(&scene, &StartOptions { aspect, ..Default::default() });
            assert_eq!(cam.pose, Pose::PROTOTYPE);
            assert_eq!(cam.up, UpAxis::PosZ);
            assert_eq!(cam.depth_range(), DepthRange::PROTOTYPE);
            assert_eq!(cam.speed(), 3.0);
            assert!(!cam.adaptive_speed);
            assert!(reason.0.contains("built-in"), "{reason:?}");
        }
        assert_eq!(
            Camera::start_for(&scene, None).clip_from_world(64, 32),
            Camera::for_cloud(scene.bounds, true).clip_from_world(64, 32)
        );
    }

    #[test]
    fn look_follows_the_prototype_rule_and_clamps_pitch() {
        let mut cam = Camera::for_cloud(Bounds::EMPTY, true);
        cam.look(100.0, 0.0, 1000.0);
        assert!(close(cam.pose.yaw_rad, -0.3));
        cam.look(0.0, -1e6, 1000.0);
        assert!(close(cam.pose.pitch_rad, FRAC_PI_2));
        cam.look(0.0, 1e6, 1000.0);
        assert!(close(cam.pose.pitch_rad, -FRAC_PI_2));
    }

    #[test]
    fn walking_scales_with_time_shift_and_the_wheel_and_reset_returns() {
        let mut cam = Camera::for_cloud(Bounds::EMPTY, true);
        cam.fly(MoveInput { forward: 1.0, ..Default::default() }, 0.5);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 0.0), 1e-5));
        cam.fly(MoveInput { up: 1.0, fast: true, ..Default::default() }, 0.25);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 3.0), 1e-5));
        cam.scale_speed(-1.0);
        assert!(close(cam.speed(), 2.4));
        cam.reset();
        assert_eq!(cam.pose, Pose::PROTOTYPE);
        assert_eq!(cam.speed(), 3.0);
    }

    #[test]
    fn a_loaded_cloud_is_framed_and_nothing_is_clipped() {
        let b = Bounds { min: Vec3::new(1000.0, 2000.0, -5.0), max: Vec3::new(1100.0, 2300.0, 40.0) };
        let cam = Camera::for_cloud(b, false);
        let m = cam.clip_from_world(1920, 1080);
        for c in framing::corners(&b) {
            let clip = m * c.extend(1.0);
            assert!(
                clip.x.abs() < clip.w && clip.y.abs() < clip.w && clip.z.abs() < clip.w,
                "corner {c} outside: {clip}"
            );
        }
        // The speed crosses the distance to the cloud in a second.
        assert!(close(cam.speed() / cam.pose.eye.distance(b.center()), 1.0));
    }

    #[test]
    fn start_takes_camera_poses_in_file_or_local_coordinates() {
        use glam::DVec3;
        let mut cloud = PointCloud::from_points(
            (0..10).map(|i| pcv_io::Point::new([i as f32, 0.0, 0.0], [255; 4])).collect(),
            DVec3::new(500_000.0, 4_000_000.0, 100.0),
            "t",
        );
        cloud.source = pcv_io::CloudSource::Host;
        let arg = PoseArg::parse("500001,4000002,103,10,-20").unwrap();
        let file =
            Camera::start(&cloud, &StartOptions { pose: Some(arg), frame: CameraFrame::File, ..Default::default() }).0;
        assert!(file.pose.eye.abs_diff_eq(Vec3::new(1.0, 2.0, 3.0), 1e-6), "{}", file.pose.eye);
        assert_eq!(file.start, file.pose);
        let local = Camera::start(
            &cloud,
            &StartOptions {
                pose: Some(PoseArg::parse("1,2,3,10,-20").unwrap()),
                frame: CameraFrame::Local,
                ..Default::default()
            },
        )
        .0;
        assert_eq!(local.pose, file.pose);
        // --up wins over auto; georeferenced points would be z-up.
        let (cam, reason) =
            Camera::start(&cloud, &StartOptions { up: UpChoice::Axis(UpAxis::NegY), ..Default::default() });
        assert_eq!(cam.up, UpAxis::NegY);
        assert!(reason.0.contains("--up"));
    }

    #[test]
    fn the_navigator_switches_controllers_and_keeps_the_pose() {
        let mut nav = Navigator::new(
            Camera::for_cloud(Bounds { min: Vec3::splat(-1.0), max: Vec3::ONE }, false),
            ControllerKind::Orbit,
        );
        let pose = nav.camera.pose;
        let ctx = &mut NavCtx { size_px: (100, 100), probe: &mut NoProbe };
        nav.handle(&Nav::DragStart { button: DragButton::Left, at_px: glam::Vec2::ZERO }, ctx);
        nav.set_active(ControllerKind::Fly);
        assert_eq!(nav.camera.pose, pose);
        // The drag ended with the switch: motion does nothing.
        assert!(!nav.handle(&Nav::DragTo { button: DragButton::Left, at_px: glam::Vec2::ONE }, ctx));
        assert!(nav.tick(&MoveInput { forward: 1.0, ..Default::default() }, 0.1, ctx));
        assert!(nav.pivot().is_none());
    }

    /// Where `p` lands, in framebuffer pixels from the top-left.
    fn on_screen(cam: &Camera, p: Vec3, size: (u32, u32)) -> glam::Vec2 {
        let c = cam.clip_from_world(size.0, size.1) * p.extend(1.0);
        glam::Vec2::new((c.x / c.w + 1.0) * 0.5 * size.0 as f32, (1.0 - c.y / c.w) * 0.5 * size.1 as f32)
    }

    fn terrain_box() -> Bounds {
        Bounds { min: Vec3::new(-400.0, -200.0, 0.0), max: Vec3::new(400.0, 200.0, 60.0) }
    }

    #[test]
    fn orthographic_views_fit_the_box_and_keep_every_point_in_depth() {
        let b = terrain_box();
        let size = (1600, 900);
        for view in [View::Top, View::Front, View::Right, View::Oblique] {
            let mut cam = Camera::for_cloud(b, false);
            cam.set_projection(true);
            cam.set_view(view, 16.0 / 9.0);
            let m = cam.clip_from_world(size.0, size.1);
            let (mut lo, mut hi) = (glam::Vec2::splat(f32::MAX), glam::Vec2::splat(f32::MIN));
            for c in framing::corners(&b) {
                let q = m * c.extend(1.0);
                assert_eq!(q.w, 1.0, "{view:?}");
                assert!(q.z > -1.0 && q.z < 1.0, "{view:?}: {c} at depth {}", q.z);
                lo = lo.min(q.truncate().truncate());
                hi = hi.max(q.truncate().truncate());
            }
            // Inside the frame, centred, and filling it along one axis (the margin aside).
            assert!(lo.cmpge(glam::Vec2::splat(-1.0)).all() && hi.cmple(glam::Vec2::ONE).all(), "{view:?} {lo} {hi}");
            assert!((lo + hi).abs().max_element() < 1e-3, "{view:?} {lo} {hi}");
            assert!(hi.max_element() > 0.9, "{view:?} {hi}");
        }
        // The top view is straight down: x across the screen, y up it.
        let mut cam = Camera::for_cloud(b, false);
        cam.set_projection(true);
        cam.set_view(View::Top, 16.0 / 9.0);
        let (a, c) = (on_screen(&cam, Vec3::ZERO, size), on_screen(&cam, Vec3::new(100.0, 0.0, 0.0), size));
        let d = on_screen(&cam, Vec3::new(0.0, 100.0, 0.0), size);
        assert!(c.x > a.x && (c.y - a.y).abs() < 1e-2 && d.y < a.y && (d.x - a.x).abs() < 1e-2, "{a} {c} {d}");
        // Points at any height over the same ground point meet on the same pixel (no perspective).
        let top = on_screen(&cam, Vec3::new(300.0, 150.0, 60.0), size);
        let ground = on_screen(&cam, Vec3::new(300.0, 150.0, 0.0), size);
        assert!(top.distance(ground) < 1e-2, "{top} {ground}");
    }

    #[test]
    fn switching_projection_keeps_the_size_at_the_box_centre_and_returns() {
        let b = terrain_box();
        let size = (800, 600);
        let mut cam = Camera::for_cloud(b, false);
        let start = cam.pose;
        let c = b.center();
        let edge = c + cam.basis().right * 50.0;
        let span = |cam: &Camera| on_screen(cam, edge, size).x - on_screen(cam, c, size).x;
        let before = span(&cam);
        cam.set_projection(true);
        assert!(cam.is_ortho() && (span(&cam) - before).abs() < 0.05, "{} {before}", span(&cam));
        assert_eq!(cam.pose, start, "the eye stays");
        cam.set_projection(false);
        assert!(!cam.is_ortho());
        assert!(cam.pose.eye.distance(start.eye) < 1e-2 * start.eye.distance(c), "{} {}", cam.pose.eye, start.eye);
        // R returns to the start projection.
        cam.set_projection(true);
        cam.reset();
        assert!(!cam.is_ortho());
    }

    #[test]
    fn orthographic_wheel_and_walking_zoom_about_the_cursor() {
        let b = terrain_box();
        let size = (1000, 500);
        let mut nav = Navigator::new(Camera::for_cloud(b, false), ControllerKind::Orbit);
        nav.camera.set_projection(true);
        nav.camera.set_view(View::Top, 2.0);
        let at = glam::Vec2::new(800.0, 100.0);
        let hh = |cam: &Camera| match cam.projection {
            Projection::Orthographic { half_height_m } => half_height_m,
            Projection::Perspective => unreachable!(),
        };
        for kind in [ControllerKind::Orbit, ControllerKind::Fly] {
            nav.set_active(kind);
            let (m0, h0) = (nav.camera.clip_from_world(size.0, size.1), hh(&nav.camera));
            // The ground point under the cursor.
            let ndc = glam::Vec4::new(at.x / 500.0 - 1.0, 1.0 - at.y / 250.0, 0.0, 1.0);
            let p = (m0.inverse() * ndc).truncate();
            let ctx = &mut NavCtx { size_px: size, probe: &mut NoProbe };
            assert!(nav.handle(&Nav::Wheel { notches: 2.0, at_px: at }, ctx), "{kind:?}");
            assert!((hh(&nav.camera) - h0 * 0.64).abs() < 1e-3 * h0, "{kind:?}");
            assert!(on_screen(&nav.camera, p, size).distance(at) < 0.05, "{kind:?}: stays under the cursor");
            nav.handle(&Nav::Wheel { notches: -2.0, at_px: at }, ctx);
            assert!((hh(&nav.camera) - h0).abs() < 1e-3 * h0);
        }
        // W zooms in, S out.
        let h0 = hh(&nav.camera);
        let ctx = &mut NavCtx { size_px: size, probe: &mut NoProbe };
        nav.tick(&MoveInput { forward: 1.0, ..Default::default() }, 0.1, ctx);
        assert!(hh(&nav.camera) < h0);
        // Panning moves what is under the cursor with it, at any depth.
        let p = Vec3::new(10.0, 20.0, 0.0);
        let before = on_screen(&nav.camera, p, size);
        controller::shared::pan(&mut nav.camera, glam::Vec2::new(30.0, -12.0), 1e6, size.1);
        assert!(on_screen(&nav.camera, p, size).distance(before + glam::Vec2::new(30.0, -12.0)) < 0.05);
    }

    #[test]
    fn projection_ortho_at_the_start() {
        let points =
            (0..1000).map(|i| pcv_io::Point::new([(i % 40) as f32, (i / 40) as f32, (i % 7) as f32], [255; 4]));
        let cloud = PointCloud::from_points(points.collect(), glam::DVec3::ZERO, "test");
        let (cam, _) = Camera::start(&cloud, &StartOptions { ortho: true, ..Default::default() });
        assert!(cam.is_ortho() && cam.start_projection == cam.projection);
        let (persp, _) = Camera::start(&cloud, &StartOptions::default());
        assert_eq!(cam.pose.yaw_rad, persp.pose.yaw_rad, "the same direction as the start view");
        // A printed pose and frame height come back as they were; --view top looks straight down.
        let pose = PoseArg::parse("3,4,50,90,-90").unwrap();
        let opts = StartOptions { pose: Some(pose), ortho: true, ortho_height: Some(12.5), ..Default::default() };
        let (cam, _) = Camera::start(&cloud, &opts);
        assert_eq!(cam.projection, Projection::Orthographic { half_height_m: 6.25 });
        assert_eq!(cam.pose.eye, Vec3::new(3.0, 4.0, 50.0));
        let (top, _) = Camera::start(&cloud, &StartOptions { view: Some(View::Top), ..Default::default() });
        assert!(!top.is_ortho() && top.basis().forward.abs_diff_eq(-Vec3::Z, 1e-6));
    }
}
