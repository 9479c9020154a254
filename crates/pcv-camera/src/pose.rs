//! The camera pose, the up axis, and poses as text (`--camera`).
//!
//! How it works: a [`Pose`] is an eye position and a yaw and pitch measured in the *up frame*: a
//! right-handed frame whose z is the scene's up axis. With z up (the prototype's convention) the up
//! frame is the world: yaw 0 looks along +x, yaw 90° along +y, pitch 90° straight up. Another
//! [`UpAxis`] is one rotation, [`UpAxis::world_from_frame`], applied to the frame's forward, up and
//! right vectors, so every controller, view and framing rule is written once for "z up" and works for
//! any up axis. The rotation maps frame z to the up axis and keeps the frame right-handed (for y up:
//! frame x → x, frame y → −z, frame z → y, so a y-up model's front, which faces +z, is what the front
//! view sees).
//!
//! Poses as text: `x,y,z,yaw_deg,pitch_deg`, the eye in the file's own coordinates (f64, so UTM
//! coordinates keep their millimetres) or in the cloud's local ones ([`CameraFrame`]). [`PoseArg`]
//! holds the parsed numbers; [`PoseArg::to_pose`] and [`PoseArg::from_pose`] convert with the cloud's
//! origin. Printing uses, per number, the fewest digits that read back to the very same f32, so a pose
//! that was printed and given back to `--camera` renders the same image (in file coordinates, whenever
//! the origin plus the eye is exact in f64: always but for eyes within a millimetre of the origin of a
//! georeferenced cloud, which then read back within 10⁻¹⁰ m).
use glam::{DVec3, Mat3, Mat4, Vec3};
use std::f32::consts::{FRAC_PI_2, PI, TAU};

/// Which world axis points up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UpAxis {
    /// +z: lidar (LAS/LAZ/E57), GIS, the built-in scene.
    #[default]
    #[serde(rename = "z")]
    PosZ,
    /// +y: meshes and scans from mesh tools and many scanners (the Stanford bunny).
    #[serde(rename = "y")]
    PosY,
    #[serde(rename = "x")]
    PosX,
    #[serde(rename = "-z")]
    NegZ,
    #[serde(rename = "-y")]
    NegY,
    #[serde(rename = "-x")]
    NegX,
}

impl UpAxis {
    /// Every axis, in the order the up key cycles through them.
    pub const ALL: [UpAxis; 6] = [UpAxis::PosZ, UpAxis::PosY, UpAxis::PosX, UpAxis::NegZ, UpAxis::NegY, UpAxis::NegX];

    pub fn name(self) -> &'static str {
        match self {
            UpAxis::PosZ => "z",
            UpAxis::PosY => "y",
            UpAxis::PosX => "x",
            UpAxis::NegZ => "-z",
            UpAxis::NegY => "-y",
            UpAxis::NegX => "-x",
        }
    }

    /// The up vector in world coordinates.
    pub fn vector(self) -> Vec3 {
        self.world_from_frame().z_axis
    }

    /// The rotation from the up frame (z up) to the world: its columns are the frame's x, y and z axes
    /// in world coordinates. Right-handed for every axis (determinant +1).
    pub fn world_from_frame(self) -> Mat3 {
        let (x, y, z) = match self {
            UpAxis::PosZ => (Vec3::X, Vec3::Y, Vec3::Z),
            UpAxis::PosY => (Vec3::X, Vec3::NEG_Z, Vec3::Y),
            UpAxis::PosX => (Vec3::Y, Vec3::Z, Vec3::X),
            UpAxis::NegZ => (Vec3::X, Vec3::NEG_Y, Vec3::NEG_Z),
            UpAxis::NegY => (Vec3::X, Vec3::Z, Vec3::NEG_Y),
            UpAxis::NegX => (Vec3::Y, Vec3::NEG_Z, Vec3::NEG_X),
        };
        Mat3::from_cols(x, y, z)
    }

    /// The rotation from the world to the up frame.
    pub fn frame_from_world(self) -> Mat3 {
        self.world_from_frame().transpose()
    }

    /// The next axis in [`UpAxis::ALL`] (the up key).
    pub fn next(self) -> UpAxis {
        let i = Self::ALL.iter().position(|&a| a == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// Index of the world axis (0 x, 1 y, 2 z).
    pub fn axis_index(self) -> usize {
        match self {
            UpAxis::PosX | UpAxis::NegX => 0,
            UpAxis::PosY | UpAxis::NegY => 1,
            UpAxis::PosZ | UpAxis::NegZ => 2,
        }
    }
}

impl std::fmt::Display for UpAxis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for UpAxis {
    type Err = String;
    fn from_str(s: &str) -> Result<UpAxis, String> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix('+').unwrap_or(&t);
        UpAxis::ALL
            .into_iter()
            .find(|a| a.name() == t)
            .ok_or_else(|| format!("'{s}' is not an up axis (z, y, x, -z, -y, -x)"))
    }
}

/// `--up`: an axis, or `auto` (chosen from the files, see [`super::framing::auto_up`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpChoice {
    #[default]
    Auto,
    Axis(UpAxis),
}

impl std::str::FromStr for UpChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<UpChoice, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            Ok(UpChoice::Auto)
        } else {
            s.parse().map(UpChoice::Axis).map_err(|e: String| e.replace("(z,", "(auto, z,"))
        }
    }
}

/// A pose: where the camera is and where it looks, yaw and pitch measured in the up frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub eye: Vec3,
    pub yaw_rad: f32,
    pub pitch_rad: f32,
}

impl Pose {
    /// The prototype's start pose.
    pub const PROTOTYPE: Pose = Pose { eye: Vec3::new(-3.0, 0.0, 0.0), yaw_rad: 0.0, pitch_rad: 0.0 };

    /// Parses `x,y,z,yaw_deg,pitch_deg` as local coordinates (see [`PoseArg`] for file coordinates).
    pub fn parse(s: &str) -> Result<Pose, String> {
        PoseArg::parse(s).map(|a| a.to_pose(DVec3::ZERO))
    }

    /// Forward in the up frame (z up): `(cos p · cos y, cos p · sin y, sin p)`.
    pub fn forward(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = self.pitch_rad.sin_cos();
        Vec3::new(cp * cy, cp * sy, sp)
    }

    /// The camera's up in the up frame: forward at pitch + 90°.
    pub fn up(&self) -> Vec3 {
        let (sy, cy) = self.yaw_rad.sin_cos();
        let (sp, cp) = (self.pitch_rad + FRAC_PI_2).sin_cos();
        Vec3::new(cp * cy, cp * sy, sp)
    }

    /// The camera's right in the up frame: forward × up (with z up and yaw 0, −y, as in the prototype).
    pub fn right(&self) -> Vec3 {
        self.forward().cross(self.up())
    }

    /// Forward, up and right in world coordinates for `up`.
    pub fn basis(&self, up: UpAxis) -> Basis {
        let m = up.world_from_frame();
        Basis { forward: m * self.forward(), up: m * self.up(), right: m * self.right() }
    }

    /// The view matrix with z up (the prototype's).
    pub fn view_from_world(&self) -> Mat4 {
        self.view_from_world_up(UpAxis::PosZ)
    }

    /// The right-handed look-to view matrix for `up`.
    pub fn view_from_world_up(&self, up: UpAxis) -> Mat4 {
        let b = self.basis(up);
        Mat4::look_to_rh(self.eye, b.forward, b.up)
    }

    /// The pose at `eye` looking along the world direction `forward_world` (any length but zero).
    pub fn looking(eye: Vec3, forward_world: Vec3, up: UpAxis) -> Pose {
        let f = up.frame_from_world() * forward_world.normalize_or(Vec3::X);
        let pitch_rad = f.z.clamp(-1.0, 1.0).asin();
        let yaw_rad = if f.x.abs() + f.y.abs() > 1e-12 { f.y.atan2(f.x) } else { 0.0 };
        Pose { eye, yaw_rad, pitch_rad }
    }

    /// The same pose with yaw wrapped into (−180°, 180°] and pitch clamped to ±90°.
    pub fn normalized(self) -> Pose {
        let mut yaw = self.yaw_rad % TAU;
        if yaw > PI {
            yaw -= TAU;
        } else if yaw <= -PI {
            yaw += TAU;
        }
        Pose { yaw_rad: yaw, pitch_rad: self.pitch_rad.clamp(-FRAC_PI_2, FRAC_PI_2), ..self }
    }
}

/// A pose's axes in world coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Basis {
    pub forward: Vec3,
    pub up: Vec3,
    pub right: Vec3,
}

/// Which coordinates `--camera` gives the eye in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CameraFrame {
    /// The files' own coordinates (as `pcv info` prints them, e.g. UTM).
    #[default]
    File,
    /// The cloud's local coordinates (the files' minus the origin pcv recentred them on).
    Local,
}

impl CameraFrame {
    /// The origin to add to local coordinates for this frame.
    pub fn origin(self, cloud_origin: DVec3) -> DVec3 {
        match self {
            CameraFrame::File => cloud_origin,
            CameraFrame::Local => DVec3::ZERO,
        }
    }
}

/// A pose as given on the command line or in a path file: the eye in f64, angles in degrees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoseArg {
    pub eye: DVec3,
    pub yaw_deg: f64,
    pub pitch_deg: f64,
}

impl PoseArg {
    /// Parses `x,y,z,yaw_deg,pitch_deg`.
    pub fn parse(s: &str) -> Result<PoseArg, String> {
        let v: Vec<f64> = s
            .split(',')
            .map(|t| t.trim().parse::<f64>().map_err(|_| format!("'{}' is not a number", t.trim())))
            .collect::<Result<_, _>>()?;
        if v.len() != 5 {
            return Err(format!("expected 5 numbers x,y,z,yaw_deg,pitch_deg, got {}", v.len()));
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err("every number must be finite".into());
        }
        Ok(PoseArg { eye: DVec3::new(v[0], v[1], v[2]), yaw_deg: v[3], pitch_deg: v[4] })
    }

    /// The local pose, for an eye given relative to `origin` (the cloud's origin for file
    /// coordinates, zero for local ones). The subtraction is in f64, before the eye becomes f32.
    pub fn to_pose(&self, origin: DVec3) -> Pose {
        Pose {
            eye: (self.eye - origin).as_vec3(),
            yaw_rad: self.yaw_deg.to_radians() as f32,
            pitch_rad: (self.pitch_deg.to_radians() as f32).clamp(-FRAC_PI_2, FRAC_PI_2),
        }
    }

    /// The text of `pose` with its eye relative to `origin`: per number the fewest digits that read
    /// back (through [`PoseArg::parse`] and [`PoseArg::to_pose`]) to the same f32.
    pub fn format(pose: &Pose, origin: DVec3) -> String {
        let eye: Vec<String> = (0..3)
            .map(|k| {
                let local = pose.eye[k];
                shortest(origin[k] + local as f64, |v| ((v - origin[k]) as f32) == local)
            })
            .collect();
        let yaw = shortest((pose.yaw_rad as f64).to_degrees(), |v| v.to_radians() as f32 == pose.yaw_rad);
        let pitch = shortest((pose.pitch_rad as f64).to_degrees(), |v| {
            (v.to_radians() as f32).clamp(-FRAC_PI_2, FRAC_PI_2) == pose.pitch_rad
        });
        format!("{},{},{},{yaw},{pitch}", eye[0], eye[1], eye[2])
    }
}

/// `value` with the fewest decimals (up to 9) for which `reads_back` holds, else its shortest exact
/// representation. Trailing zeros are trimmed.
fn shortest(value: f64, reads_back: impl Fn(f64) -> bool) -> String {
    for decimals in 0..=9 {
        let text = format!("{value:.decimals$}");
        if let Ok(v) = text.parse::<f64>() {
            if reads_back(v) {
                return if text == "-0" { "0".into() } else { text };
            }
        }
    }
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prototype_pose_looks_along_x_with_z_up() {
        let p = Pose::PROTOTYPE;
        assert!(p.forward().abs_diff_eq(Vec3::X, 1e-6));
        assert!(p.up().abs_diff_eq(Vec3::Z, 1e-6));
        // forward × up = x × z = -y: right is -y, as in the prototype (glm.cross(forward, up)).
        assert!(p.right().abs_diff_eq(-Vec3::Y, 1e-6));
        assert_eq!(p.view_from_world(), p.view_from_world_up(UpAxis::PosZ));
    }

    #[test]
    fn every_up_frame_is_a_rotation_with_z_on_the_axis() {
        for up in UpAxis::ALL {
            let m = up.world_from_frame();
            assert!((m.determinant() - 1.0).abs() < 1e-6, "{up}: not a rotation");
            assert!((m * m.transpose()).abs_diff_eq(Mat3::IDENTITY, 1e-6));
            assert_eq!(m.z_axis, up.vector());
            assert_eq!(up.vector()[up.axis_index()].abs(), 1.0);
            // Pitching up looks along the up axis.
            let b = Pose { eye: Vec3::ZERO, yaw_rad: 0.3, pitch_rad: FRAC_PI_2 }.basis(up);
            assert!(b.forward.abs_diff_eq(up.vector(), 1e-6), "{up}: {}", b.forward);
            assert_eq!(up.name().parse::<UpAxis>(), Ok(up));
        }
        assert_eq!(UpAxis::NegX.next(), UpAxis::PosZ);
        assert!("w".parse::<UpAxis>().is_err());
        assert_eq!("auto".parse::<UpChoice>(), Ok(UpChoice::Auto));
        assert_eq!("+y".parse::<UpChoice>(), Ok(UpChoice::Axis(UpAxis::PosY)));
        assert!("up".parse::<UpChoice>().unwrap_err().contains("auto"));
    }

    #[test]
    fn y_up_front_view_looks_at_the_model_front() {
        // Yaw 90° at pitch 0 looks along frame +y, which for y up is world -z: a y-up model facing +z
        // is seen from the front, upright.
        let b = Pose { eye: Vec3::ZERO, yaw_rad: FRAC_PI_2, pitch_rad: 0.0 }.basis(UpAxis::PosY);
        assert!(b.forward.abs_diff_eq(Vec3::NEG_Z, 1e-6), "{}", b.forward);
        assert!(b.up.abs_diff_eq(Vec3::Y, 1e-6));
        assert!(b.right.abs_diff_eq(Vec3::X, 1e-6));
    }

    #[test]
    fn looking_inverts_forward() {
        for up in UpAxis::ALL {
            for (yaw, pitch) in [(0.0f32, 0.0f32), (1.0, -0.5), (-2.5, 0.7), (3.0, -1.2)] {
                let p = Pose { eye: Vec3::ONE, yaw_rad: yaw, pitch_rad: pitch };
                let q = Pose::looking(p.eye, p.basis(up).forward * 3.0, up);
                assert!((q.yaw_rad - yaw).abs() < 1e-5 && (q.pitch_rad - pitch).abs() < 1e-5, "{up}: {q:?}");
            }
        }
    }

    #[test]
    fn normalized_wraps_yaw_and_clamps_pitch() {
        let p = Pose { eye: Vec3::ZERO, yaw_rad: 3.0 * PI, pitch_rad: 2.0 }.normalized();
        assert!((p.yaw_rad - PI).abs() < 1e-5);
        assert_eq!(p.pitch_rad, FRAC_PI_2);
    }

    #[test]
    fn parse_pose() {
        let p = Pose::parse("1,2,3,90,-30").unwrap();
        assert_eq!(p.eye, Vec3::new(1.0, 2.0, 3.0));
        assert!((p.yaw_rad - FRAC_PI_2).abs() < 1e-6);
        assert!(Pose::parse("1,2,3").unwrap_err().contains("expected 5 numbers"));
        assert!(Pose::parse("1,2,x,0,0").unwrap_err().contains("'x'"));
        assert!(Pose::parse("1,2,nan,0,0").is_err());
        assert_eq!(Pose::parse("0,0,0,0,120").unwrap().pitch_rad, FRAC_PI_2);
    }

    #[test]
    fn file_coordinates_keep_millimetres_and_round_trip_exactly() {
        let origin = DVec3::new(500_000.25, 4_000_000.5, 12.0);
        let arg = PoseArg::parse("500123.456,4000050.125,42.5,33.3,-35").unwrap();
        let pose = arg.to_pose(origin);
        // f32 at 4e6 has a step of 0.25 m; relative to the origin the eye keeps its millimetres.
        assert!((pose.eye.x - 123.206).abs() < 1e-4 && (pose.eye.y - 49.625).abs() < 1e-4, "{}", pose.eye);
        let text = PoseArg::format(&pose, origin);
        assert_eq!(PoseArg::parse(&text).unwrap().to_pose(origin), pose, "{text}");
        // Simple values print simply.
        assert_eq!(PoseArg::format(&Pose::PROTOTYPE, DVec3::ZERO), "-3,0,0,0,0");
        // Odd values still round-trip bit for bit in local coordinates, and in file coordinates
        // whenever origin + eye is exact in f64 (the eye's last bit above 2^-34 for an origin of 5e5).
        for (eye, yaw, pitch) in
            [(Vec3::new(0.1, -7.3e-5, 1234.567), 1.234_567_8f32, -0.987_654_3f32), (Vec3::splat(1e-30), -3.1, 1.5)]
        {
            let p = Pose { eye, yaw_rad: yaw, pitch_rad: pitch };
            let t = PoseArg::format(&p, DVec3::ZERO);
            assert_eq!(PoseArg::parse(&t).unwrap().to_pose(DVec3::ZERO), p, "{t}");
            let t = PoseArg::format(&p, origin);
            let back = PoseArg::parse(&t).unwrap().to_pose(origin);
            assert!(
                back.eye.abs_diff_eq(p.eye, 1e-9) && back.yaw_rad == p.yaw_rad && back.pitch_rad == p.pitch_rad,
                "{t}"
            );
        }
        let p = Pose { eye: Vec3::new(-1234.5677, 0.015625, 98.76543), yaw_rad: 2.0, pitch_rad: -0.25 };
        let t = PoseArg::format(&p, origin);
        assert_eq!(PoseArg::parse(&t).unwrap().to_pose(origin), p, "{t}");
    }
}
