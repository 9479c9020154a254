//! The camera: one pose, an up axis and a lens, moved by controllers.
//!
//! How it works: [`Camera`] is what every command renders from: a [`Pose`] (eye, yaw, pitch in the
//! up frame), the [`UpAxis`] that frame stands on, the near and far planes (fixed for the built-in
//! scene, following the eye for loaded clouds: [`lens`]) and the speed that WASD moves at.
//! `clip_from_world = clip_from_view · view_from_world`, the matrix the rasterizers take.
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
pub use lens::{DepthRange, FOV_Y_RAD};
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
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions { pose: None, frame: CameraFrame::File, up: UpChoice::Auto, aspect: framing::DEFAULT_ASPECT }
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
        }
    }

    /// The pose's forward, up and right in world coordinates.
    pub fn basis(&self) -> Basis {
        self.pose.basis(self.up)
    }

    /// This frame's near and far planes.
    pub fn depth_range(&self) -> DepthRange {
        match self.depth {
            DepthPolicy::Fixed(d) => d,
            DepthPolicy::Adaptive => DepthRange::around(self.pose.eye, &self.bounds),
        }
    }

    pub fn view_from_world(&self) -> Mat4 {
        self.pose.view_from_world_up(self.up)
    }

    pub fn clip_from_view(&self, width_px: u32, height_px: u32) -> Mat4 {
        lens::clip_from_view(self.depth_range(), width_px, height_px)
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
    pub fn walk(&mut self, input: &MoveInput, dt_s: f32) {
        let speed = self.speed() * if input.fast { 4.0 } else { 1.0 };
        let b = self.basis();
        let dir = b.forward * input.forward + b.right * input.right + self.up.vector() * input.up;
        self.pose.eye += dir * speed * dt_s;
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

    /// F: keeps the direction and fits the framed box ([`framing::fit`]).
    pub fn frame_all(&mut self, aspect: f32) {
        self.pose = framing::fit(&self.frame_box, self.pose.yaw_rad, self.pose.pitch_rad, self.up, aspect);
    }

    /// A standard view of the framed box.
    pub fn set_view(&mut self, view: View, aspect: f32) {
        self.pose = framing::view_pose(view, &self.frame_box, self.up, aspect);
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
}
