//! The fly camera, with the prototype's conventions.
//!
//! How it works: z is up. The camera looks along `forward = (cos p · cos y, cos p · sin y, sin p)` for yaw
//! `y` and pitch `p` (pitch clamped to ±90°), with `up` the same formula at `p + 90°` and `right =
//! forward × up`. `view_from_world` is a right-handed look-to matrix, `clip_from_view` a GL perspective
//! (60° vertical field of view; near 0.01 and far 100 for the built-in scene, scaled with the cloud
//! otherwise), and `clip_from_world` their product, which the rasterizers take. The prototype's start
//! pose is eye (-3, 0, 0), yaw 0, pitch 0; a loaded cloud starts framed the same way (looking along +x).
use crate::cloud::Bounds;
use glam::{Mat4, Vec3};

/// Vertical field of view, the prototype's 60°.
pub const FOV_Y_RAD: f32 = std::f32::consts::FRAC_PI_3;
/// Mouse-look sensitivity: radians per window height of motion (the prototype's 3).
pub const LOOK_RAD_PER_HEIGHT: f32 = 3.0;

/// A pose: where the camera is and where it looks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub eye: Vec3,
    pub yaw_rad: f32,
    pub pitch_rad: f32,
}

impl Pose {
    /// The prototype's start pose.
    pub const PROTOTYPE: Pose = Pose { eye: Vec3::new(-3.0, 0.0, 0.0), yaw_rad: 0.0, pitch_rad: 0.0 };

    /// Parses `x,y,z,yaw_deg,pitch_deg`.
    pub fn parse(s: &str) -> Result<Pose, String> {
        let v: Vec<f32> = s
            .split(',')
            .map(|t| t.trim().parse::<f32>().map_err(|_| format!("'{t}' is not a number")))
            .collect::<Result<_, _>>()?;
        if v.len() != 5 {
            return Err(format!("expected 5 numbers x,y,z,yaw_deg,pitch_deg, got {}", v.len()));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err("every number must be finite".into());
        }
        Ok(Pose {
            eye: Vec3::new(v[0], v[1], v[2]),
            yaw_rad: v[3].to_radians(),
            pitch_rad: v[4].to_radians().clamp(-std::f32::consts::FRAC_PI_2, std::f32::consts::FRAC_PI_2),
        })
    }

    pub fn forward(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = self.pitch_rad.sin_cos();
        Vec3::new(cp * cy, cp * sy, sp)
    }

    pub fn up(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = (self.pitch_rad + std::f32::consts::FRAC_PI_2).sin_cos();
        Vec3::new(cp * cy, cp * sy, sp)
    }

    pub fn right(&self) -> Vec3 {
        self.forward().cross(self.up())
    }

    pub fn view_from_world(&self) -> Mat4 {
        Mat4::look_to_rh(self.eye, self.forward(), self.up())
    }
}

/// Near and far planes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthRange {
    pub near: f32,
    pub far: f32,
}

impl DepthRange {
    /// The prototype's 0.01 .. 100.
    pub const PROTOTYPE: DepthRange = DepthRange { near: 0.01, far: 100.0 };

    /// For a cloud of this radius: the prototype's planes for clouds of its size, scaled for larger ones.
    pub fn for_radius(radius: f32) -> DepthRange {
        let far = (radius * 30.0).max(100.0);
        DepthRange { near: far * 1e-4, far }
    }
}

/// The camera the viewer flies: a pose, its planes and its speed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlyCamera {
    pub pose: Pose,
    pub start: Pose,
    pub depth: DepthRange,
    pub speed_m_per_s: f32,
    pub default_speed_m_per_s: f32,
    /// What F frames.
    pub bounds: Bounds,
}

/// Which keys are held, as movement axes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MoveInput {
    /// +1 forward (W), -1 back (S).
    pub forward: f32,
    /// +1 right (D), -1 left (A).
    pub right: f32,
    /// +1 up (E), -1 down (Q), along world z.
    pub up: f32,
    /// Shift: four times faster.
    pub fast: bool,
}

impl FlyCamera {
    /// The camera for a cloud: the prototype's pose and planes for the built-in scene, a framing pose for
    /// anything else.
    pub fn for_cloud(bounds: Bounds, builtin_scene: bool) -> FlyCamera {
        let (pose, depth, speed) = if builtin_scene {
            (Pose::PROTOTYPE, DepthRange::PROTOTYPE, 3.0)
        } else {
            let r = bounds.radius().max(1e-3);
            (frame_pose(bounds, 0.0, 0.0), DepthRange::for_radius(r), r * 1.5)
        };
        FlyCamera { pose, start: pose, depth, speed_m_per_s: speed, default_speed_m_per_s: speed, bounds }
    }

    /// The camera every command starts `cloud` with: [`FlyCamera::for_cloud`], with `pose` as its
    /// start pose (R returns there) when one is given. The viewer, `pcv render` and the bench share it,
    /// so a window's frame and a headless frame of the same pose are the same frame.
    pub fn start_for(cloud: &crate::cloud::PointCloud, pose: Option<Pose>) -> FlyCamera {
        let mut cam = FlyCamera::for_cloud(cloud.bounds, cloud.scene.is_some());
        if let Some(p) = pose {
            cam.pose = p;
            cam.start = p;
        }
        cam
    }

    pub fn clip_from_view(&self, width_px: u32, height_px: u32) -> Mat4 {
        let aspect = width_px.max(1) as f32 / height_px.max(1) as f32;
        Mat4::perspective_rh_gl(FOV_Y_RAD, aspect, self.depth.near, self.depth.far)
    }

    pub fn clip_from_world(&self, width_px: u32, height_px: u32) -> Mat4 {
        self.clip_from_view(width_px, height_px) * self.pose.view_from_world()
    }

    /// Mouse-look: `dx_px`, `dy_px` of motion in a window `height_px` tall (the prototype's rule).
    pub fn look(&mut self, dx_px: f32, dy_px: f32, height_px: f32) {
        let h = height_px.max(1.0);
        self.pose.pitch_rad = (self.pose.pitch_rad - dy_px / h * LOOK_RAD_PER_HEIGHT)
            .clamp(-std::f32::consts::FRAC_PI_2, std::f32::consts::FRAC_PI_2);
        self.pose.yaw_rad = (self.pose.yaw_rad - dx_px / h * LOOK_RAD_PER_HEIGHT) % std::f32::consts::TAU;
    }

    /// Moves for `dt_s` seconds.
    pub fn fly(&mut self, input: MoveInput, dt_s: f32) {
        let speed = self.speed_m_per_s * if input.fast { 4.0 } else { 1.0 };
        let dir = self.pose.forward() * input.forward + self.pose.right() * input.right + Vec3::Z * input.up;
        self.pose.eye += dir * speed * dt_s;
    }

    /// Mouse wheel: each notch scales the speed by 1.25.
    pub fn scale_speed(&mut self, notches: f32) {
        self.speed_m_per_s = (self.speed_m_per_s * 1.25f32.powf(notches)).clamp(1e-6, 1e9);
    }

    /// F: keep the direction, move back until the whole cloud is in view.
    pub fn frame_all(&mut self) {
        self.pose = frame_pose(self.bounds, self.pose.yaw_rad, self.pose.pitch_rad);
    }

    /// R: back to the start pose and speed.
    pub fn reset(&mut self) {
        self.pose = self.start;
        self.speed_m_per_s = self.default_speed_m_per_s;
    }
}

/// A pose looking at the center of `bounds` along (yaw, pitch), far enough back that its bounding
/// sphere fits the vertical field of view.
pub fn frame_pose(bounds: Bounds, yaw_rad: f32, pitch_rad: f32) -> Pose {
    let r = bounds.radius().max(1e-3);
    let dist = r / (FOV_Y_RAD * 0.5).sin() * 1.05;
    let mut pose = Pose { eye: Vec3::ZERO, yaw_rad, pitch_rad };
    pose.eye = bounds.center() - pose.forward() * dist;
    pose
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec4;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn prototype_pose_looks_along_x_with_z_up() {
        let p = Pose::PROTOTYPE;
        assert!(p.forward().abs_diff_eq(Vec3::X, 1e-6));
        assert!(p.up().abs_diff_eq(Vec3::Z, 1e-6));
        // forward × up = x × z = -y: right is -y, as in the prototype (glm.cross(forward, up)).
        assert!(p.right().abs_diff_eq(-Vec3::Y, 1e-6));
    }

    #[test]
    fn clip_from_world_matches_hand_computed_values() {
        // Eye (-3,0,0) looking along +x, z up, 60° fov, aspect 2, near 0.01, far 100.
        let cam = FlyCamera::for_cloud(Bounds::EMPTY, true);
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
    fn look_follows_the_prototype_rule_and_clamps_pitch() {
        let mut cam = FlyCamera::for_cloud(Bounds::EMPTY, true);
        cam.look(100.0, 0.0, 1000.0);
        assert!(close(cam.pose.yaw_rad, -0.3));
        cam.look(0.0, -1e6, 1000.0);
        assert!(close(cam.pose.pitch_rad, std::f32::consts::FRAC_PI_2));
        cam.look(0.0, 1e6, 1000.0);
        assert!(close(cam.pose.pitch_rad, -std::f32::consts::FRAC_PI_2));
    }

    #[test]
    fn fly_scales_with_time_and_shift() {
        let mut cam = FlyCamera::for_cloud(Bounds::EMPTY, true);
        cam.fly(MoveInput { forward: 1.0, ..Default::default() }, 0.5);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 0.0), 1e-5));
        cam.fly(MoveInput { up: 1.0, fast: true, ..Default::default() }, 0.25);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 3.0), 1e-5));
        cam.reset();
        assert_eq!(cam.pose, Pose::PROTOTYPE);
    }

    #[test]
    fn framing_puts_the_whole_cloud_in_view() {
        let b = Bounds { min: Vec3::new(1000.0, 2000.0, -5.0), max: Vec3::new(1100.0, 2300.0, 40.0) };
        let cam = FlyCamera::for_cloud(b, false);
        let m = cam.clip_from_world(1920, 1080);
        for i in 0..8 {
            let c = Vec3::new(
                if i & 1 == 0 { b.min.x } else { b.max.x },
                if i & 2 == 0 { b.min.y } else { b.max.y },
                if i & 4 == 0 { b.min.z } else { b.max.z },
            );
            let clip = m * c.extend(1.0);
            assert!(clip.x.abs() < clip.w && clip.y.abs() < clip.w && clip.z.abs() < clip.w, "corner {c} outside: {clip}");
        }
    }

    #[test]
    fn parse_pose() {
        let p = Pose::parse("1,2,3,90,-30").unwrap();
        assert_eq!(p.eye, Vec3::new(1.0, 2.0, 3.0));
        assert!(close(p.yaw_rad, std::f32::consts::FRAC_PI_2));
        assert!(Pose::parse("1,2,3").is_err());
        assert!(Pose::parse("1,2,x,0,0").is_err());
        assert!(Pose::parse("1,2,nan,0,0").is_err());
    }
}
