//! The named poses every benchmark and many tests render a cloud from: `pcv bench`'s six scenarios.
//!
//! How it works: each pose is made from the cloud's bounds and the start camera ([`Camera::start_for`]):
//! `start` is the viewer's first view; `close-up` stands inside the cloud looking the start direction;
//! `far` is four times the framing distance; `top` looks straight down from above; `grazing` runs low
//! along the cloud's longer side; `inside` is within the built-in scene's first cylinder, looking along
//! its axis (a file: its center).
use super::{frame_pose, Camera, Pose};
use pcv_io::PointCloud;

/// One named pose.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub pose: Pose,
}

/// The bench's poses for a cloud: start (the viewer's first view), close-up (inside the cloud), far
/// (the cloud small in the middle), top (straight down from above), grazing (low along the cloud's
/// length, just above its lowest points) and inside (the built-in scene: within the first cylinder,
/// looking along its axis; a file: at its center).
pub fn scenarios(cloud: &PointCloud) -> Vec<Scenario> {
    let start = Camera::start_for(cloud, None).start;
    let framed = frame_pose(cloud.bounds, start.yaw_rad, start.pitch_rad);
    let (b, r) = (cloud.bounds, cloud.bounds.radius().max(1e-3));
    let center = b.center();
    // Close-up: from the middle of the cloud, looking the start direction.
    let close = Pose { eye: center - start.forward() * r * 0.1, ..start };
    // Far: four times the framing distance.
    let far = Pose { eye: center + (framed.eye - center) * 4.0, ..start };
    let top = Pose { eye: center + glam::Vec3::Z * r * 2.2, yaw_rad: 0.0, pitch_rad: -std::f32::consts::FRAC_PI_2 };
    let size = b.max - b.min;
    let along_x = size.x >= size.y;
    let grazing = Pose {
        eye: if along_x {
            glam::Vec3::new(b.min.x - r * 0.6, center.y, b.min.z + size.z * 0.15)
        } else {
            glam::Vec3::new(center.x, b.min.y - r * 0.6, b.min.z + size.z * 0.15)
        },
        yaw_rad: if along_x { 0.0 } else { std::f32::consts::FRAC_PI_2 },
        pitch_rad: -0.05,
    };
    let inside = match cloud.scene() {
        Some(s) => {
            let c = pcv_io::scene::cylinders(s.seed)[0];
            let axis = glam::Vec3::from_array(c.axis_z).normalize_or_zero();
            let eye = glam::Vec3::from_array(c.center) - axis * c.height * 0.4;
            Pose { eye, yaw_rad: axis.y.atan2(axis.x), pitch_rad: axis.z.clamp(-1.0, 1.0).asin() }
        }
        None => Pose { eye: center, ..start },
    };
    vec![
        Scenario { name: "start", pose: start },
        Scenario { name: "close-up", pose: close },
        Scenario { name: "far", pose: far },
        Scenario { name: "top", pose: top },
        Scenario { name: "grazing", pose: grazing },
        Scenario { name: "inside", pose: inside },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_distinct() {
        let cloud = pcv_io::scene::lazy(1000, 1);
        let s = scenarios(&cloud);
        assert_eq!(s.len(), 6);
        assert_eq!(s[0].pose, Pose::PROTOTYPE);
        assert!(s[2].pose.eye.length() > s[0].pose.eye.length());
    }
}
