//! Annotations: a labelled marker at a 3D point, with the camera it was made from to fly back to.
//!
//! How it works: Ctrl+A (or the button under a picked point) pins a [`Note`] at the picked point (file
//! coordinates) with the camera of the moment; the *Measure* section lists the notes, edits their text,
//! flies to one ([`Notes::fly`]: its camera, projection and up axis) and deletes them. The view draws
//! each note on top of the points with a leader line ([`crate::ui::marks`]), but only where the
//! surface does not hide it: each turn reads the nearest point drawn at the note's pixel in the last
//! frame ([`Notes::reads`], gathered with the picks) and a note farther along the view than that
//! point — by more than 1% of its distance plus a hair — is hidden ([`Notes::update_visibility`]).
use super::pick::{PickedPoint, Picker};
use glam::{DVec3, Mat4, Vec2, Vec3};
use pcv_camera::{Camera, Pose, Projection, UpAxis};

/// Pixels around a note's point searched for what covers it.
pub const OCCLUSION_RADIUS_PX: u32 = 1;

/// One annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub text: String,
    /// Where it points, in file coordinates.
    pub file: DVec3,
    /// The camera it was made from (local pose, up axis, projection).
    pub pose: Pose,
    pub up: UpAxis,
    pub projection: Projection,
}

/// The notes and whether each shows in the last frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Notes {
    pub list: Vec<Note>,
    /// Per note: not hidden behind the surface (and in front of the camera).
    pub visible: Vec<bool>,
}

/// Where local point `p` is in a `size_px` frame (pixels from the top-left) and its depth along the
/// view, if in front of an orthographic camera's planes or a perspective camera's eye.
fn on_screen(clip_from_world: &Mat4, p: Vec3, size_px: (u32, u32)) -> Option<Vec2> {
    let c = *clip_from_world * p.extend(1.0);
    if c.w.is_nan() || c.w <= 0.0 {
        return None;
    }
    let (x, y) = (c.x / c.w, c.y / c.w);
    (x.abs() <= 1.0 && y.abs() <= 1.0)
        .then(|| Vec2::new((x + 1.0) * 0.5 * size_px.0 as f32, (1.0 - y) * 0.5 * size_px.1 as f32))
}

impl Notes {
    /// Pins a note at `p` with `camera`; its index.
    pub fn add(&mut self, p: &PickedPoint, camera: &Camera) -> usize {
        let text = format!("note {}", self.list.len() + 1);
        self.list.push(Note { text, file: p.file, pose: camera.pose, up: camera.up, projection: camera.projection });
        self.visible.push(true);
        self.list.len() - 1
    }

    pub fn delete(&mut self, i: usize) {
        if i < self.list.len() {
            self.list.remove(i);
            self.visible.remove(i);
        }
    }

    /// Moves `camera` to note `i`'s camera.
    pub fn fly(&self, i: usize, camera: &mut Camera) -> bool {
        let Some(n) = self.list.get(i) else { return false };
        camera.pose = n.pose;
        camera.up = n.up;
        camera.projection = n.projection;
        true
    }

    /// The pixels whose nearest point the next update needs: each note's (local positions from
    /// `to_local`).
    pub fn reads(
        &self,
        camera: &Camera,
        size_px: (u32, u32),
        to_local: impl Fn(DVec3) -> Option<Vec3>,
    ) -> Vec<(Vec2, u32)> {
        if self.list.is_empty() {
            return Vec::new();
        }
        let m = camera.clip_from_world(size_px.0, size_px.1);
        self.list
            .iter()
            .filter_map(|n| on_screen(&m, to_local(n.file)?, size_px))
            .map(|px| (px, OCCLUSION_RADIUS_PX))
            .collect()
    }

    /// Which notes show: in the frame, and not farther along the view than the point drawn at their
    /// pixel (see the module doc).
    pub fn update_visibility(
        &mut self,
        camera: &Camera,
        size_px: (u32, u32),
        to_local: impl Fn(DVec3) -> Option<Vec3>,
        reads: &mut dyn Picker,
    ) -> bool {
        let m = camera.clip_from_world(size_px.0, size_px.1);
        let f = camera.basis().forward;
        let eye = camera.pose.eye;
        let visible: Vec<bool> = self
            .list
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let Some(local) = to_local(n.file) else { return false };
                let Some(px) = on_screen(&m, local, size_px) else { return false };
                if !reads.gathered(px, OCCLUSION_RADIUS_PX) {
                    // The camera moved since the reads: as it was.
                    return self.visible.get(i).copied().unwrap_or(true);
                }
                match reads.pick(px, OCCLUSION_RADIUS_PX) {
                    None => true,
                    Some(hit) => {
                        let (mine, surface) = ((local - eye).dot(f), (hit.position - eye).dot(f));
                        mine <= surface + 0.01 * surface.abs() + 1e-4
                    }
                }
            })
            .collect();
        let changed = visible != self.visible;
        self.visible = visible;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcv_render::PickHit;

    /// A surface at local x = `x_surface` everywhere (the camera looks along +x).
    struct Wall(f32);
    impl Picker for Wall {
        fn pick(&mut self, at_px: Vec2, _: u32) -> Option<PickHit> {
            Some(PickHit {
                pixel: (at_px.x as u32, at_px.y as u32),
                position: Vec3::new(self.0, 0.0, 0.0),
                point_index: None,
                depth: 0.5,
            })
        }
    }

    #[test]
    fn notes_behind_the_surface_hide_and_fly_restores_their_camera() {
        let b = pcv_io::Bounds { min: Vec3::splat(-20.0), max: Vec3::splat(20.0) };
        let mut cam = Camera::for_cloud(b, false);
        cam.pose = Pose { eye: Vec3::new(-50.0, 0.0, 0.0), yaw_rad: 0.0, pitch_rad: 0.0 };
        let mut notes = Notes::default();
        let picked = |x: f64| PickedPoint::at(Vec3::ZERO, DVec3::new(x, 0.0, 0.0));
        notes.add(&picked(0.0), &cam); // on the wall
        notes.add(&picked(10.0), &cam); // behind it
        notes.add(&picked(-60.0), &cam); // behind the camera
        let local = |f: DVec3| Some(f.as_vec3());
        assert_eq!(notes.reads(&cam, (400, 300), local).len(), 2, "the one behind the camera needs no read");
        assert!(notes.update_visibility(&cam, (400, 300), local, &mut Wall(0.0)));
        assert_eq!(notes.visible, vec![true, false, false]);
        // Nothing drawn there: shown.
        struct Nothing;
        impl Picker for Nothing {
            fn pick(&mut self, _: Vec2, _: u32) -> Option<PickHit> {
                None
            }
        }
        notes.update_visibility(&cam, (400, 300), local, &mut Nothing);
        assert_eq!(notes.visible, vec![true, true, false]);
        // Fly back to the first note's camera from elsewhere.
        let saved = cam.pose;
        cam.pose.eye = Vec3::new(5.0, 5.0, 5.0);
        cam.set_projection(true);
        assert!(notes.fly(0, &mut cam));
        assert_eq!((cam.pose, cam.projection), (saved, Projection::Perspective));
        notes.delete(1);
        assert_eq!((notes.list.len(), notes.visible.len()), (2, 2));
        assert_eq!(notes.list[1].file.x, -60.0);
    }
}
