//! The fly controller: the prototype's controls, plus dragging.
//!
//! How it works: Esc mouse-look and left-drag turn the camera in place ([`Camera::look`]: the
//! prototype's 3 radians per window height, pitch clamped at ±90°); right- or middle-drag pans in the
//! view plane at the depth of the point under the cursor at the press; the wheel scales the speed
//! (×1.25 a notch; orthographic: it zooms about the cursor, as in orbit); a double-click slides the view so the point under the cursor is centred. WASD,
//! Q/E and Shift move the camera ([`super::controller::shared::walk`]), at a speed that follows the
//! depth ahead for loaded clouds.
use super::controller::{shared, CameraController, ControllerKind, DragButton, Nav, NavCtx, PICK_RADIUS_PX};
use super::Camera;
use glam::Vec2;

/// The fly controller's state: the drag in progress.
#[derive(Clone, Debug, Default)]
pub struct Fly {
    drag: Option<Drag>,
}

#[derive(Clone, Copy, Debug)]
struct Drag {
    button: DragButton,
    last_px: Vec2,
    /// View depth that panning moves at.
    depth: f32,
}

impl CameraController for Fly {
    fn kind(&self) -> ControllerKind {
        ControllerKind::Fly
    }

    fn handle(&mut self, cam: &mut Camera, nav: &Nav, ctx: &mut NavCtx<'_>) -> bool {
        let height = ctx.size_px.1.max(1) as f32;
        match *nav {
            Nav::Look { dx_px, dy_px } => {
                cam.look(dx_px, dy_px, height);
                true
            }
            Nav::DragStart { button, at_px } => {
                let depth = match button {
                    DragButton::Left => 0.0,
                    _ => ctx
                        .probe
                        .probe(at_px, PICK_RADIUS_PX)
                        .map(|p| (p - cam.pose.eye).dot(cam.basis().forward))
                        .filter(|d| *d > 0.0)
                        .unwrap_or_else(|| shared::fallback_depth(cam)),
                };
                self.drag = Some(Drag { button, last_px: at_px, depth });
                false
            }
            Nav::DragTo { at_px, .. } => {
                let Some(drag) = self.drag.as_mut() else { return false };
                let delta = at_px - drag.last_px;
                drag.last_px = at_px;
                match drag.button {
                    DragButton::Left => {
                        cam.look(delta.x, delta.y, height);
                        delta != Vec2::ZERO
                    }
                    _ => shared::pan(cam, delta, drag.depth, ctx.size_px.1),
                }
            }
            Nav::DragEnd => {
                self.drag = None;
                false
            }
            Nav::Wheel { notches, at_px } => {
                if shared::zoom_ortho(cam, notches, at_px, ctx.size_px) {
                    return true;
                }
                cam.scale_speed(notches);
                // The speed shows in the panel, but the picture does not change.
                false
            }
            Nav::DoubleClick { at_px } => shared::center_on(cam, at_px, ctx).is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{DepthProbe, MoveInput, NoProbe};
    use crate::{Pose, UpAxis};
    use glam::Vec3;
    use pcv_io::Bounds;

    fn scene_camera() -> Camera {
        Camera::for_cloud(Bounds { min: Vec3::splat(-1.0), max: Vec3::ONE }, true)
    }

    #[test]
    fn the_prototype_keys_move_as_before() {
        let mut cam = scene_camera();
        let mut fly = Fly::default();
        let ctx = &mut NavCtx { size_px: (1000, 1000), probe: &mut NoProbe };
        // 3 m/s: W for half a second, then E with Shift for a quarter.
        assert!(fly.tick(&mut cam, &MoveInput { forward: 1.0, ..Default::default() }, 0.5, ctx));
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 0.0), 1e-5), "{}", cam.pose.eye);
        fly.tick(&mut cam, &MoveInput { up: 1.0, fast: true, ..Default::default() }, 0.25, ctx);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, 0.0, 3.0), 1e-5));
        // D moves right, which is -y at yaw 0.
        fly.tick(&mut cam, &MoveInput { right: 1.0, ..Default::default() }, 1.0, ctx);
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(-1.5, -3.0, 3.0), 1e-5));
        assert!(!fly.tick(&mut cam, &MoveInput::default(), 1.0, ctx));
        // Mouse-look: 100 px right in a 1000 px window turns 0.3 rad right.
        fly.handle(&mut cam, &Nav::Look { dx_px: 100.0, dy_px: 0.0 }, ctx);
        assert!((cam.pose.yaw_rad + 0.3).abs() < 1e-6);
        // The wheel scales the speed.
        fly.handle(&mut cam, &Nav::Wheel { notches: 2.0, at_px: Vec2::ZERO }, ctx);
        assert!((cam.speed() - 3.0 * 1.5625).abs() < 1e-5);
    }

    #[test]
    fn q_and_e_follow_the_up_axis() {
        let mut cam = scene_camera();
        cam.up = UpAxis::PosY;
        let ctx = &mut NavCtx { size_px: (100, 100), probe: &mut NoProbe };
        let before = cam.pose.eye;
        Fly::default().tick(&mut cam, &MoveInput { up: 1.0, ..Default::default() }, 1.0, ctx);
        assert!((cam.pose.eye - before).abs_diff_eq(Vec3::new(0.0, 3.0, 0.0), 1e-5), "{}", cam.pose.eye);
    }

    /// A probe that reports a wall `distance` ahead of wherever the camera is.
    struct Wall {
        at: Vec3,
    }
    impl DepthProbe for Wall {
        fn probe(&mut self, _: Vec2, _: u32) -> Option<Vec3> {
            Some(self.at)
        }
    }

    #[test]
    fn speed_follows_the_depth_ahead() {
        let tile = Bounds { min: Vec3::new(-500.0, -500.0, 0.0), max: Vec3::new(500.0, 500.0, 20.0) };
        let mut cam = Camera::for_cloud(tile, false);
        cam.pose = Pose { eye: Vec3::new(0.0, 0.0, 1.0), yaw_rad: 0.0, pitch_rad: 0.0 };
        let w = MoveInput { forward: 1.0, ..Default::default() };
        // A curb 0.5 m ahead: after a second of holding W the speed has settled near 0.5 m/s.
        let probe = &mut Wall { at: Vec3::new(0.5, 0.0, 1.0) };
        let mut fly = Fly::default();
        for _ in 0..60 {
            cam.pose.eye = Vec3::new(0.0, 0.0, 1.0);
            fly.tick(&mut cam, &w, 1.0 / 60.0, &mut NavCtx { size_px: (800, 450), probe });
        }
        assert!((cam.speed_m_per_s - 0.5).abs() < 0.05, "{} m/s at a curb", cam.speed_m_per_s);
        // 800 m of open tile ahead: hundreds of m/s.
        let probe = &mut Wall { at: Vec3::new(800.0, 0.0, 1.0) };
        for _ in 0..120 {
            cam.pose.eye = Vec3::new(0.0, 0.0, 1.0);
            fly.tick(&mut cam, &w, 1.0 / 60.0, &mut NavCtx { size_px: (800, 450), probe });
        }
        assert!(cam.speed_m_per_s > 500.0, "{} m/s over a tile", cam.speed_m_per_s);
    }

    #[test]
    fn left_drag_turns_and_right_drag_pans() {
        let mut cam = scene_camera();
        let mut fly = Fly::default();
        let ctx = &mut NavCtx { size_px: (1000, 500), probe: &mut NoProbe };
        fly.handle(&mut cam, &Nav::DragStart { button: DragButton::Left, at_px: Vec2::new(10.0, 10.0) }, ctx);
        fly.handle(&mut cam, &Nav::DragTo { button: DragButton::Left, at_px: Vec2::new(60.0, 10.0) }, ctx);
        assert!((cam.pose.yaw_rad + 0.3).abs() < 1e-6, "{}", cam.pose.yaw_rad);
        assert_eq!(cam.pose.eye, Pose::PROTOTYPE.eye);
        fly.handle(&mut cam, &Nav::DragEnd, ctx);
        let mut cam = scene_camera();
        fly.handle(&mut cam, &Nav::DragStart { button: DragButton::Right, at_px: Vec2::new(10.0, 10.0) }, ctx);
        fly.handle(&mut cam, &Nav::DragTo { button: DragButton::Right, at_px: Vec2::new(110.0, 10.0) }, ctx);
        // Dragging right moves the camera left (+y at yaw 0), eye height unchanged.
        assert!(cam.pose.eye.y > 0.0 && cam.pose.eye.z == 0.0 && cam.pose.eye.x == -3.0, "{}", cam.pose.eye);
    }
}
