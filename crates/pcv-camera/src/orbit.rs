//! The orbit controller (the default for loaded files): turn around what you clicked, pan, zoom to the
//! cursor.
//!
//! How it works:
//! - **Left-drag orbits** around a pivot: the point under the cursor at the press (the nearest drawn
//!   point within [`PICK_RADIUS_PX`], from the last frame), else the centre of the framed box. Each
//!   move turns yaw and pitch by 3 radians per window height (as mouse-look does), and puts the eye
//!   where the pivot keeps its position relative to the camera: the pivot stays under the cursor's
//!   start point, and everything turns around it.
//! - **Right- or middle-drag pans** in the view plane at the pivot's depth: what was under the cursor
//!   stays under it.
//! - **The wheel dollies** towards the point under the cursor (or, over empty space, towards the point
//!   on the cursor's ray at the framed box's depth) by [`DOLLY_PER_NOTCH`] of the distance a notch;
//!   the other way, by the inverse ratio, so a notch in and a notch out return to the same place.
//! - **Orthographic**: the wheel zooms about the point under the cursor instead (the frame's half
//!   height by the same ratio), and a pivot may lie behind the eye (the planes hold the whole cloud).
//! - **A double-click** makes the point under the cursor the pivot and slides the view so it is
//!   centred.
use super::controller::{
    shared, CameraController, ControllerKind, DragButton, Nav, NavCtx, LOOK_RAD_PER_HEIGHT, PICK_RADIUS_PX,
};
use super::Camera;
use glam::{Vec2, Vec3};
use std::f32::consts::FRAC_PI_2;

/// Fraction of the distance to the target one wheel notch moves towards it.
pub const DOLLY_PER_NOTCH: f32 = 0.2;

/// The orbit controller's state.
#[derive(Clone, Debug, Default)]
pub struct Orbit {
    /// The last pivot (orbit) or zoom target.
    pivot: Option<Vec3>,
    drag: Option<Drag>,
}

#[derive(Clone, Copy, Debug)]
struct Drag {
    button: DragButton,
    last_px: Vec2,
    pivot: Vec3,
    /// View depth of the pivot at the press (panning moves at it).
    depth: f32,
}

impl Orbit {
    /// The point under `at_px`, or the framed box's centre, and its view depth.
    fn pivot_at(cam: &Camera, at_px: Vec2, ctx: &mut NavCtx<'_>) -> (Vec3, f32) {
        let f = cam.basis().forward;
        if let Some(p) = ctx.probe.probe(at_px, PICK_RADIUS_PX) {
            let d = (p - cam.pose.eye).dot(f);
            if d > 0.0 || cam.is_ortho() {
                return (p, d);
            }
        }
        let c = cam.frame_box.center();
        let d = (c - cam.pose.eye).dot(f);
        if d > 0.0 {
            (c, d)
        } else {
            // Behind us: a point ahead at the box's size.
            let d = shared::fallback_depth(cam);
            (cam.pose.eye + f * d, d)
        }
    }

    /// Turns the camera around `pivot` by yaw and pitch deltas, keeping the pivot's view coordinates.
    pub fn orbit(cam: &mut Camera, pivot: Vec3, d_yaw_rad: f32, d_pitch_rad: f32) {
        let b = cam.basis();
        let rel = pivot - cam.pose.eye;
        let local = Vec3::new(rel.dot(b.right), rel.dot(b.up), rel.dot(b.forward));
        cam.pose.yaw_rad -= d_yaw_rad;
        cam.pose.pitch_rad = (cam.pose.pitch_rad - d_pitch_rad).clamp(-FRAC_PI_2, FRAC_PI_2);
        cam.pose = cam.pose.normalized();
        let b = cam.basis();
        cam.pose.eye = pivot - (b.right * local.x + b.up * local.y + b.forward * local.z);
    }

    /// Moves the eye towards `target` by the wheel's fraction for `notches`.
    pub fn dolly(cam: &mut Camera, target: Vec3, notches: f32) {
        let keep = (1.0 - DOLLY_PER_NOTCH).powf(notches);
        cam.pose.eye = target + (cam.pose.eye - target) * keep;
    }
}

impl CameraController for Orbit {
    fn kind(&self) -> ControllerKind {
        ControllerKind::Orbit
    }

    fn pivot(&self) -> Option<Vec3> {
        self.pivot
    }

    fn handle(&mut self, cam: &mut Camera, nav: &Nav, ctx: &mut NavCtx<'_>) -> bool {
        let height = ctx.size_px.1.max(1) as f32;
        match *nav {
            Nav::Look { dx_px, dy_px } => {
                cam.look(dx_px, dy_px, height);
                true
            }
            Nav::DragStart { button, at_px } => {
                let (pivot, depth) = Self::pivot_at(cam, at_px, ctx);
                self.pivot = Some(pivot);
                self.drag = Some(Drag { button, last_px: at_px, pivot, depth });
                false
            }
            Nav::DragTo { at_px, .. } => {
                let Some(drag) = self.drag.as_mut() else { return false };
                let delta = at_px - drag.last_px;
                drag.last_px = at_px;
                if delta == Vec2::ZERO {
                    return false;
                }
                match drag.button {
                    DragButton::Left => {
                        let k = LOOK_RAD_PER_HEIGHT / height;
                        Self::orbit(cam, drag.pivot, delta.x * k, delta.y * k);
                        true
                    }
                    _ => shared::pan(cam, delta, drag.depth, ctx.size_px.1),
                }
            }
            Nav::DragEnd => {
                self.drag = None;
                false
            }
            Nav::Wheel { notches, at_px } => {
                if notches == 0.0 {
                    return false;
                }
                if shared::zoom_ortho(cam, notches, at_px, ctx.size_px) {
                    return true;
                }
                let target = match ctx.probe.probe(at_px, PICK_RADIUS_PX) {
                    Some(p) if (p - cam.pose.eye).dot(cam.basis().forward) > 0.0 => p,
                    _ => {
                        let ray = shared::ray(cam, at_px, ctx.size_px);
                        let depth = shared::fallback_depth(cam);
                        cam.pose.eye + ray * depth / ray.dot(cam.basis().forward).max(0.05)
                    }
                };
                self.pivot = Some(target);
                Self::dolly(cam, target, notches);
                true
            }
            Nav::DoubleClick { at_px } => match shared::center_on(cam, at_px, ctx) {
                Some(hit) => {
                    self.pivot = Some(hit);
                    true
                }
                None => false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{DepthProbe, NoProbe};
    use crate::{Pose, UpAxis};
    use glam::Vec4Swizzles;
    use pcv_io::Bounds;

    /// A probe that finds one fixed point wherever one looks.
    struct At(Vec3);
    impl DepthProbe for At {
        fn probe(&mut self, _: Vec2, _: u32) -> Option<Vec3> {
            Some(self.0)
        }
    }

    fn camera() -> Camera {
        let mut cam = Camera::for_cloud(Bounds { min: Vec3::splat(-10.0), max: Vec3::splat(10.0) }, false);
        cam.pose = Pose { eye: Vec3::new(-50.0, 0.0, 0.0), yaw_rad: 0.0, pitch_rad: 0.0 };
        cam
    }

    /// Where `p` lands on screen, in framebuffer pixels from the top-left.
    fn screen(cam: &Camera, p: Vec3, size: (u32, u32)) -> Vec2 {
        let c = cam.clip_from_world(size.0, size.1) * p.extend(1.0);
        let ndc = c.xy() / c.w;
        Vec2::new((ndc.x + 1.0) * 0.5 * size.0 as f32, (1.0 - ndc.y) * 0.5 * size.1 as f32)
    }

    #[test]
    fn orbiting_keeps_the_pivot_in_place_and_its_distance() {
        let size = (800, 600);
        for up in UpAxis::ALL {
            let mut cam = camera();
            cam.up = up;
            let pivot = Vec3::new(3.0, 2.0, -1.0);
            let start = screen(&cam, pivot, size);
            let dist = cam.pose.eye.distance(pivot);
            let mut orbit = Orbit::default();
            let probe = &mut At(pivot);
            let ctx = &mut NavCtx { size_px: size, probe };
            orbit.handle(&mut cam, &Nav::DragStart { button: DragButton::Left, at_px: start }, ctx);
            let yaw0 = cam.pose.yaw_rad;
            for k in 1..=10 {
                let at = start + Vec2::new(20.0 * k as f32, 7.0 * k as f32);
                assert!(orbit.handle(&mut cam, &Nav::DragTo { button: DragButton::Left, at_px: at }, ctx));
            }
            orbit.handle(&mut cam, &Nav::DragEnd, ctx);
            assert!((cam.pose.eye.distance(pivot) - dist).abs() < 1e-3 * dist, "{up}: distance changed");
            assert!(screen(&cam, pivot, size).distance(start) < 0.5, "{up}: the pivot moved on screen");
            // 200 px right of 600 px turned the view 1 rad right; 70 px down pitched 0.35 rad down.
            assert!((cam.pose.yaw_rad - (yaw0 - 1.0)).abs() < 1e-4, "{up}: yaw {}", cam.pose.yaw_rad);
            assert!((cam.pose.pitch_rad + 0.35).abs() < 1e-4);
            assert_eq!(orbit.pivot(), Some(pivot));
        }
    }

    #[test]
    fn without_a_point_under_the_cursor_it_orbits_the_centre() {
        let mut cam = camera();
        let mut orbit = Orbit::default();
        let ctx = &mut NavCtx { size_px: (800, 600), probe: &mut NoProbe };
        orbit.handle(&mut cam, &Nav::DragStart { button: DragButton::Left, at_px: Vec2::new(5.0, 5.0) }, ctx);
        orbit.handle(
            &mut cam,
            &Nav::DragTo {
                button: DragButton::Left,
                at_px: Vec2::new(5.0 + 300.0 * std::f32::consts::PI / 3.0 * 2.0, 5.0),
            },
            ctx,
        );
        // Turned by pi around the centre: now on the other side, looking back.
        assert!(cam.pose.eye.abs_diff_eq(Vec3::new(50.0, 0.0, 0.0), 1e-3), "{}", cam.pose.eye);
        assert!(cam.basis().forward.abs_diff_eq(Vec3::NEG_X, 1e-5));
    }

    #[test]
    fn panning_keeps_the_grabbed_point_under_the_cursor() {
        let size = (800, 600);
        let mut cam = camera();
        let grabbed = Vec3::new(5.0, 4.0, 3.0);
        let at = screen(&cam, grabbed, size);
        let mut orbit = Orbit::default();
        let ctx = &mut NavCtx { size_px: size, probe: &mut At(grabbed) };
        for button in [DragButton::Right, DragButton::Middle] {
            orbit.handle(&mut cam, &Nav::DragStart { button, at_px: at }, ctx);
            let to = at + Vec2::new(-120.0, 45.0);
            orbit.handle(&mut cam, &Nav::DragTo { button, at_px: to }, ctx);
            assert!(
                screen(&cam, grabbed, size).distance(to) < 0.5,
                "{button:?}: {} vs {to}",
                screen(&cam, grabbed, size)
            );
            orbit.handle(&mut cam, &Nav::DragTo { button, at_px: at }, ctx);
            orbit.handle(&mut cam, &Nav::DragEnd, ctx);
        }
        assert_eq!(cam.pose.yaw_rad, 0.0);
    }

    #[test]
    fn the_wheel_zooms_to_the_cursor_and_back() {
        let size = (800, 600);
        let mut cam = camera();
        let target = Vec3::new(0.0, 6.0, 4.0);
        let at = screen(&cam, target, size);
        let before = cam.pose.eye;
        let mut orbit = Orbit::default();
        let ctx = &mut NavCtx { size_px: size, probe: &mut At(target) };
        orbit.handle(&mut cam, &Nav::Wheel { notches: 1.0, at_px: at }, ctx);
        let d0 = before.distance(target);
        assert!((cam.pose.eye.distance(target) - 0.8 * d0).abs() < 1e-3, "moved {}", cam.pose.eye.distance(target));
        // The target stays under the cursor.
        assert!(screen(&cam, target, size).distance(at) < 0.5);
        orbit.handle(&mut cam, &Nav::Wheel { notches: -1.0, at_px: at }, ctx);
        assert!(cam.pose.eye.abs_diff_eq(before, 1e-3), "{} vs {before}", cam.pose.eye);
        // Over empty space it zooms along the cursor's ray.
        let ctx = &mut NavCtx { size_px: size, probe: &mut NoProbe };
        let at = Vec2::new(600.0, 100.0);
        let on_ray = shared::ray(&cam, at, size);
        orbit.handle(&mut cam, &Nav::Wheel { notches: 3.0, at_px: at }, ctx);
        let moved = (cam.pose.eye - before).normalize();
        assert!(moved.abs_diff_eq(on_ray, 1e-4), "{moved} vs {on_ray}");
    }

    #[test]
    fn double_click_centres_the_point() {
        let size = (800, 600);
        let mut cam = camera();
        let p = Vec3::new(2.0, -7.0, 5.0);
        let mut orbit = Orbit::default();
        let ctx = &mut NavCtx { size_px: size, probe: &mut At(p) };
        let at = screen(&cam, p, size);
        assert!(orbit.handle(&mut cam, &Nav::DoubleClick { at_px: at }, ctx));
        assert!(screen(&cam, p, size).distance(Vec2::new(400.0, 300.0)) < 0.5);
        assert_eq!(orbit.pivot(), Some(p));
        // The depth is unchanged (a slide, not a zoom).
        let ctx = &mut NavCtx { size_px: size, probe: &mut NoProbe };
        assert!(!orbit.handle(&mut cam, &Nav::DoubleClick { at_px: at }, ctx));
    }
}
