//! The clip-box gizmo: handles drawn on the selected clip box that move, turn and resize it with the
//! mouse, as pure geometry (no window, no GPU) on the box and the shown frame's camera.
//!
//! How it works: a [`GizmoView`] is the frame's `clip_from_world` (its world is the cloud's local frame,
//! `file = origin + local`), its size in framebuffer pixels and the cloud's origin. [`handles`] places
//! the handles of a [`ClipBox`] on screen: three arrows from the centre along the box's own axes, three
//! rings around them, and a square at the centre of each of the six faces. Arrows and rings are sized in
//! pixels ([`ARROW_PX`], [`RING_PX`]): their world length is that many pixels at the centre's depth
//! ([`GizmoView::world_per_px`]), so they keep their size on screen. A point behind the camera has no
//! place on screen; a ring seen edge-on, or an arrow (and its faces) pointing at the camera, is left
//! out, since the mouse could not drive it. [`Handles::hit`] is the handle within [`HIT_PX`] of the
//! cursor in screen space (faces first inside their square, then the nearest).
//!
//! A drag ([`Drag`]) keeps the box as it was at the press and maps the cursor's motion since then:
//! - moving and resizing ([`along_axis`]): the cursor's motion is taken along the axis as projected
//!   on screen, and the distance `t` along the axis in the world is the one whose projection moves
//!   that far along it, exactly under perspective (the projected point is a ratio of linear functions
//!   of `t`, solved in closed form); an arrow moves the centre by `t` ([`moved`]); a face moves that
//!   face by `t` along its outward normal while the opposite face stays, and a half extent never goes
//!   below zero ([`resized`]);
//! - turning ([`turned`]): the angle the cursor sweeps around the projected centre, summed step by
//!   step (so a drag may go round more than half a turn), counterclockwise on screen being a positive
//!   turn about an axis that points at the viewer.
//!
//! The update step ([`super::update`]) applies each step's box as a new point filter, so the view
//! refilters while the mouse moves.
use glam::{DQuat, DVec3, Mat4, Vec2, Vec4};
use pcv_io::filter::ClipBox;

/// Length of an axis arrow seen across the view, in pixels.
pub const ARROW_PX: f32 = 90.0;
/// Radius of a turn ring seen face-on, in pixels.
pub const RING_PX: f32 = 60.0;
/// Half the side of a face's square, in pixels.
pub const FACE_HALF_PX: f32 = 6.0;
/// How far from a handle the cursor may be and still take it, in pixels.
pub const HIT_PX: f32 = 7.0;
/// Segments of a ring's polyline.
pub const RING_SEGMENTS: usize = 48;
/// Shortest projected arrow (a fraction of [`ARROW_PX`]) whose axis the mouse can drive.
const MIN_ARROW_FRACTION: f32 = 0.15;
/// Narrowest ring (its projection's minor over major axis) whose turn the mouse can drive.
const MIN_RING_OPENING: f32 = 0.15;
/// Closest the cursor may come to the centre for a turn step to count, in pixels.
const MIN_TURN_RADIUS_PX: f32 = 3.0;

/// One of the box's own axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    X,
    Y,
    Z,
}

impl Axis {
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        ["x", "y", "z"][self.index()]
    }

    /// The unit vector of the axis in the box's own frame.
    fn unit(self) -> DVec3 {
        [DVec3::X, DVec3::Y, DVec3::Z][self.index()]
    }

    /// The next two axes, in right-handed order (`u × v` is this axis).
    fn others(self) -> (Axis, Axis) {
        match self {
            Axis::X => (Axis::Y, Axis::Z),
            Axis::Y => (Axis::Z, Axis::X),
            Axis::Z => (Axis::X, Axis::Y),
        }
    }
}

/// A handle of the gizmo.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Handle {
    /// The arrow along an axis: moves the box along it.
    Move(Axis),
    /// The ring around an axis: turns the box about it.
    Turn(Axis),
    /// The square at the centre of a face (`positive`: on the axis's + side): moves that face.
    Face { axis: Axis, positive: bool },
}

impl Handle {
    /// Its name, as the trace and the help write it: `move x`, `turn z`, `face +y`.
    pub fn name(self) -> String {
        match self {
            Handle::Move(a) => format!("move {}", a.name()),
            Handle::Turn(a) => format!("turn {}", a.name()),
            Handle::Face { axis, positive } => format!("face {}{}", if positive { "+" } else { "-" }, axis.name()),
        }
    }

    pub fn axis(self) -> Axis {
        match self {
            Handle::Move(a) | Handle::Turn(a) | Handle::Face { axis: a, .. } => a,
        }
    }
}

/// The frame the gizmo is seen in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GizmoView {
    /// The shown frame's camera; its world is the cloud's local frame.
    pub clip_from_world: Mat4,
    /// The frame's size in framebuffer pixels (handle positions are in these, from the top-left).
    pub size_px: Vec2,
    /// The file's coordinates of the local frame's zero (`file = origin + local`).
    pub origin: DVec3,
}

impl GizmoView {
    /// The clip-space position of a point in the file's coordinates.
    fn clip(&self, file: DVec3) -> Vec4 {
        self.clip_from_world * (file - self.origin).as_vec3().extend(1.0)
    }

    /// Where a clip-space position shows (framebuffer pixels from the top-left), if in front of the camera.
    fn px_of_clip(&self, c: Vec4) -> Option<Vec2> {
        if c.w.is_nan() || c.w <= f32::EPSILON {
            return None;
        }
        let p = Vec2::new((c.x / c.w + 1.0) * 0.5 * self.size_px.x, (1.0 - c.y / c.w) * 0.5 * self.size_px.y);
        p.is_finite().then_some(p)
    }

    /// Where a point in the file's coordinates shows, if in front of the camera.
    pub fn to_px(&self, file: DVec3) -> Option<Vec2> {
        self.px_of_clip(self.clip(file))
    }

    /// World units a pixel spans at a point's depth (across the view), if the point is in front.
    pub fn world_per_px(&self, file: DVec3) -> Option<f64> {
        let w = self.clip(file).w;
        let m = &self.clip_from_world;
        // The clip y row is the lens's y scale times a unit row of the view's rotation.
        let y_scale = glam::Vec3::new(m.x_axis.y, m.y_axis.y, m.z_axis.y).length();
        let per_px = 2.0 * w / (y_scale * self.size_px.y);
        (w > f32::EPSILON && per_px.is_finite() && per_px > 0.0).then_some(per_px as f64)
    }
}

/// The gizmo of a box on screen (framebuffer pixels; `None`: not shown, so not hit).
#[derive(Clone, Debug, PartialEq)]
pub struct Handles {
    pub centre_px: Vec2,
    /// Each axis's arrow, centre to tip.
    pub arrows: [Option<(Vec2, Vec2)>; 3],
    /// Each axis's ring, a closed polyline of [`RING_SEGMENTS`] points.
    pub rings: [Option<Vec<Vec2>>; 3],
    /// Each axis's face squares' centres, the − face then the + face.
    pub faces: [[Option<Vec2>; 2]; 3],
}

/// The box's axis in the file's coordinates.
fn world_axis(b: &ClipBox, axis: Axis) -> DVec3 {
    b.rotation * axis.unit()
}

/// The centre of a face in the file's coordinates.
fn face_centre(b: &ClipBox, axis: Axis, positive: bool) -> DVec3 {
    let sign = if positive { 1.0 } else { -1.0 };
    b.center + world_axis(b, axis) * (sign * b.half_extent[axis.index()])
}

/// Where the handles of `b` show in `view` (`None`: its centre is behind the camera).
pub fn handles(view: &GizmoView, b: &ClipBox) -> Option<Handles> {
    let centre_px = view.to_px(b.center)?;
    let per_px = view.world_per_px(b.center)?;
    let (arrow_m, ring_m) = (ARROW_PX as f64 * per_px, RING_PX as f64 * per_px);
    let mut out = Handles { centre_px, arrows: [None; 3], rings: [None, None, None], faces: [[None; 2]; 3] };
    for axis in Axis::ALL {
        let i = axis.index();
        let dir = world_axis(b, axis);
        // An arrow pointing at the camera (too short on screen) cannot be dragged along, nor its faces.
        let tip =
            view.to_px(b.center + dir * arrow_m).filter(|t| t.distance(centre_px) >= ARROW_PX * MIN_ARROW_FRACTION);
        if let Some(tip) = tip {
            out.arrows[i] = Some((centre_px, tip));
            out.faces[i] = [view.to_px(face_centre(b, axis, false)), view.to_px(face_centre(b, axis, true))];
        }
        let (u, v) = axis.others();
        let (u, v) = (world_axis(b, u) * ring_m, world_axis(b, v) * ring_m);
        let (Some(pu), Some(pv)) = (view.to_px(b.center + u), view.to_px(b.center + v)) else { continue };
        let (du, dv) = (pu - centre_px, pv - centre_px);
        // Seen edge-on, a ring cannot be turned by sweeping around the centre.
        if du.perp_dot(dv).abs() < MIN_RING_OPENING * du.length().max(dv.length()).powi(2) {
            continue;
        }
        let ring: Option<Vec<Vec2>> = (0..RING_SEGMENTS)
            .map(|k| {
                let a = k as f64 / RING_SEGMENTS as f64 * std::f64::consts::TAU;
                view.to_px(b.center + u * a.cos() + v * a.sin())
            })
            .collect();
        out.rings[i] = ring;
    }
    Some(out)
}

/// The distance from `p` to the segment `a`–`b`.
fn segment_distance(p: Vec2, a: Vec2, b: Vec2) -> f32 {
    let ab = b - a;
    let t = if ab.length_squared() > 0.0 { ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0) } else { 0.0 };
    p.distance(a + ab * t)
}

impl Handles {
    /// The handle under the cursor at `at_px`: within [`HIT_PX`] of its shape (inside a face's square
    /// counts as on it), faces before arrows before rings where the distance ties; `None` when no
    /// handle is that close.
    pub fn hit(&self, at_px: Vec2) -> Option<Handle> {
        let mut best: Option<(f32, u8, Handle)> = None;
        let mut consider = |d: f32, rank: u8, h: Handle| {
            if d <= HIT_PX && best.is_none_or(|(bd, br, _)| (d, rank) < (bd, br)) {
                best = Some((d, rank, h));
            }
        };
        for axis in Axis::ALL {
            let i = axis.index();
            for (k, positive) in [(0, false), (1, true)] {
                if let Some(f) = self.faces[i][k] {
                    let d = (at_px - f).abs().max_element() - FACE_HALF_PX;
                    consider(d.max(0.0), 0, Handle::Face { axis, positive });
                }
            }
            if let Some((a, b)) = self.arrows[i] {
                consider(segment_distance(at_px, a, b), 1, Handle::Move(axis));
            }
            if let Some(ring) = &self.rings[i] {
                let d = (0..ring.len())
                    .map(|k| segment_distance(at_px, ring[k], ring[(k + 1) % ring.len()]))
                    .fold(f32::INFINITY, f32::min);
                consider(d, 2, Handle::Turn(axis));
            }
        }
        best.map(|(_, _, h)| h)
    }
}

/// The distance along `dir` (a unit vector in the file's coordinates) from `from` whose projection
/// moves as far along the projected axis as `motion_px` does; `None` where the axis shows too short to
/// follow (it points at the camera), `from` is behind the camera, or the motion runs past where the
/// axis vanishes.
pub fn along_axis(view: &GizmoView, from: DVec3, dir: DVec3, motion_px: Vec2) -> Option<f64> {
    // Steps of `scale` (ARROW_PX pixels across at `from`) keep the arithmetic near 1.
    let scale = view.world_per_px(from)? * ARROW_PX as f64;
    let (c0, c1) = (view.clip(from), view.clip(from + dir * scale));
    let dc = c1 - c0;
    // Pixels in homogeneous form: px = n / w, with n and w linear in the clip position.
    let (w, h) = (view.size_px.x, view.size_px.y);
    let n = |c: Vec4| Vec2::new((c.x + c.w) * 0.5 * w, (c.w - c.y) * 0.5 * h);
    let (n0, n1, w0, w1) = (n(c0), n(dc), c0.w, dc.w);
    if w0 <= f32::EPSILON {
        return None;
    }
    // The projected axis at `from`: pixels per step.
    let a = (n1 * w0 - n0 * w1) / (w0 * w0);
    let a_len = a.length();
    if !a_len.is_finite() || a_len < ARROW_PX * MIN_ARROW_FRACTION {
        return None;
    }
    let s = motion_px.dot(a / a_len);
    // (px(t) − px(0))·â = a_len·w0·t / (w0 + w1·t) = s, solved for t (in steps).
    let denominator = a_len * w0 - s * w1;
    // Near the vanishing point the distance runs off to infinity: stop short of it.
    if denominator <= 0.05 * a_len * w0 {
        return None;
    }
    let t = (s * w0 / denominator) as f64 * scale;
    t.is_finite().then_some(t)
}

/// `b` moved by `t` along its axis.
pub fn moved(b: &ClipBox, axis: Axis, t: f64) -> ClipBox {
    ClipBox { center: b.center + world_axis(b, axis) * t, ..*b }
}

/// `b` with one face moved by `t` along its outward normal, the opposite face staying; the box stops
/// flat at the opposite face (a half extent is never negative).
pub fn resized(b: &ClipBox, axis: Axis, positive: bool, t: f64) -> ClipBox {
    let i = axis.index();
    let normal = world_axis(b, axis) * if positive { 1.0 } else { -1.0 };
    let half = b.half_extent[i];
    let new_half = (half + t * 0.5).max(0.0);
    let mut half_extent = b.half_extent;
    half_extent[i] = new_half;
    ClipBox { center: b.center + normal * (new_half - half), half_extent, ..*b }
}

/// `b` turned by `angle_rad` about its own axis (right-handed), around its centre.
pub fn turned(b: &ClipBox, axis: Axis, angle_rad: f64) -> ClipBox {
    let rotation = (b.rotation * DQuat::from_axis_angle(axis.unit(), angle_rad)).normalize();
    ClipBox { rotation, ..*b }
}

/// The signed angle from `from_px` to `to_px` around `centre_px`, counterclockwise as seen (screen y
/// points down) positive, in (−π, π].
pub fn swept_rad(centre_px: Vec2, from_px: Vec2, to_px: Vec2) -> f64 {
    // y flipped: counterclockwise on screen is counterclockwise with y up.
    let flip = Vec2::new(1.0, -1.0);
    let (a, b) = (((from_px - centre_px) * flip).as_dvec2(), ((to_px - centre_px) * flip).as_dvec2());
    a.perp_dot(b).atan2(a.dot(b))
}

/// +1 when the box's axis points toward the viewer (its ring's right-handed turn shows
/// counterclockwise), −1 when away.
fn facing(view: &GizmoView, b: &ClipBox, axis: Axis) -> Option<f64> {
    let (u, v) = axis.others();
    let per = view.world_per_px(b.center)? * RING_PX as f64;
    let c = view.to_px(b.center)?;
    let flip = Vec2::new(1.0, -1.0);
    let du = (view.to_px(b.center + world_axis(b, u) * per)? - c) * flip;
    let dv = (view.to_px(b.center + world_axis(b, v) * per)? - c) * flip;
    Some(if du.perp_dot(dv) >= 0.0 { 1.0 } else { -1.0 })
}

/// A drag of a handle in progress.
#[derive(Clone, Debug, PartialEq)]
pub struct Drag {
    pub handle: Handle,
    /// The box when the press came (each step maps the motion since then onto it).
    pub start: ClipBox,
    /// Where the press came, framebuffer pixels.
    pub from_px: Vec2,
    /// Turning: the cursor's last position counted and the angle swept so far.
    last_px: Vec2,
    swept_rad: f64,
}

impl Drag {
    pub fn new(handle: Handle, start: ClipBox, from_px: Vec2) -> Drag {
        Drag { handle, start, from_px, last_px: from_px, swept_rad: 0.0 }
    }

    /// The box with the cursor now at `at_px` (`None`: this position gives no box — see
    /// [`along_axis`] — and the last one stays).
    pub fn to(&mut self, view: &GizmoView, at_px: Vec2) -> Option<ClipBox> {
        let b = &self.start;
        let motion = at_px - self.from_px;
        match self.handle {
            Handle::Move(axis) => along_axis(view, b.center, world_axis(b, axis), motion).map(|t| moved(b, axis, t)),
            Handle::Face { axis, positive } => {
                let normal = world_axis(b, axis) * if positive { 1.0 } else { -1.0 };
                along_axis(view, face_centre(b, axis, positive), normal, motion).map(|t| resized(b, axis, positive, t))
            }
            Handle::Turn(axis) => {
                let centre = view.to_px(b.center)?;
                if at_px.distance(centre) >= MIN_TURN_RADIUS_PX && self.last_px.distance(centre) >= MIN_TURN_RADIUS_PX {
                    self.swept_rad += swept_rad(centre, self.last_px, at_px);
                    self.last_px = at_px;
                } else if self.last_px.distance(centre) < MIN_TURN_RADIUS_PX {
                    self.last_px = at_px;
                }
                Some(turned(b, axis, facing(view, b, axis)? * self.swept_rad))
            }
        }
    }
}

/// What the gizmo is doing: which box it edits, the handle under the cursor, a drag in progress.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gizmo {
    /// The clip box being edited (an index into the filter's boxes).
    pub selected: Option<usize>,
    /// The handle under the cursor (highlighted).
    pub hover: Option<Handle>,
    pub drag: Option<Drag>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use pcv_io::filter::Keep;

    const ORIGIN: DVec3 = DVec3::new(1000.0, 2000.0, 0.0);
    const FOV: f32 = std::f32::consts::FRAC_PI_3;

    /// A camera at `eye` (local) looking at `target`, 800 × 600 pixels.
    fn view(eye: Vec3, target: Vec3, up: Vec3) -> GizmoView {
        let clip_from_world =
            Mat4::perspective_rh_gl(FOV, 800.0 / 600.0, 0.1, 1000.0) * Mat4::look_at_rh(eye, target, up);
        GizmoView { clip_from_world, size_px: Vec2::new(800.0, 600.0), origin: ORIGIN }
    }

    /// Looking straight down from 10 m: screen right is +x, screen up is +y.
    fn top() -> GizmoView {
        view(Vec3::new(0.0, 0.0, 10.0), Vec3::ZERO, Vec3::Y)
    }

    /// Pixels per metre at 10 m in `top`.
    fn px_per_m() -> f64 {
        300.0 / (10.0 * (FOV as f64 * 0.5).tan())
    }

    /// A 4 × 3 × 2 m box around the local zero.
    fn boxed() -> ClipBox {
        ClipBox {
            center: ORIGIN,
            half_extent: DVec3::new(2.0, 1.5, 1.0),
            rotation: DQuat::IDENTITY,
            keep: Keep::Inside,
        }
    }

    fn close(a: DVec3, b: DVec3, tol: f64) -> bool {
        a.abs_diff_eq(b, tol)
    }

    #[test]
    fn an_arrow_dragged_n_pixels_moves_the_centre_that_far_along_its_axis() {
        let (v, b) = (top(), boxed());
        let h = handles(&v, &b).unwrap();
        assert!(h.centre_px.abs_diff_eq(Vec2::new(400.0, 300.0), 1e-3));
        let tip = h.arrows[0].unwrap().1;
        assert!(tip.abs_diff_eq(Vec2::new(400.0 + ARROW_PX, 300.0), 1e-2), "{tip}");
        // 80 px along +x: the arrow (the +x face is at 2 m = 104 px, the ring at 60 px).
        let press = Vec2::new(480.0, 300.0);
        assert_eq!(h.hit(press), Some(Handle::Move(Axis::X)));
        let mut d = Drag::new(Handle::Move(Axis::X), b, press);
        // 52 px to the right, 10 px down (across the axis: ignored).
        let after = d.to(&v, press + Vec2::new(52.0, 10.0)).unwrap();
        let expected = 52.0 / px_per_m();
        assert!(close(after.center, ORIGIN + DVec3::X * expected, 1e-4), "{}", after.center - ORIGIN);
        assert_eq!((after.half_extent, after.rotation), (b.half_extent, b.rotation));
        // The +y arrow points up on screen (its face square is at 78 px: this is just beyond it).
        let mut d = Drag::new(Handle::Move(Axis::Y), b, Vec2::new(400.0, 212.0));
        assert_eq!(h.hit(Vec2::new(400.0, 212.0)), Some(Handle::Move(Axis::Y)));
        let after = d.to(&v, Vec2::new(400.0, 212.0 - 26.0)).unwrap();
        assert!(close(after.center, ORIGIN + DVec3::Y * (26.0 / px_per_m()), 1e-4));
    }

    #[test]
    fn an_oblique_axis_moves_so_its_projection_follows_the_cursor() {
        let v = view(Vec3::new(-6.0, -9.0, 7.0), Vec3::new(0.5, 0.0, 0.0), Vec3::Z);
        let b = ClipBox { rotation: DQuat::from_rotation_z(0.4), ..boxed() };
        let h = handles(&v, &b).unwrap();
        for axis in Axis::ALL {
            let (c, tip) = h.arrows[axis.index()].unwrap();
            let along = (tip - c).normalize();
            let mut d = Drag::new(Handle::Move(axis), b, c + (tip - c) * 0.8);
            for motion in [35.0f32, -20.0, 60.0] {
                let after = d.to(&v, c + (tip - c) * 0.8 + along * motion + along.perp() * 7.0).unwrap();
                let moved_px = v.to_px(after.center).unwrap() - c;
                assert!((moved_px.dot(along) - motion).abs() < 0.05, "{axis:?} {motion}: {moved_px}");
                // Along the box's axis only.
                let off = (after.center - b.center).reject_from(world_axis(&b, axis));
                assert!(off.length() < 1e-9, "{off}");
            }
        }
    }

    #[test]
    fn a_face_drag_moves_that_face_only_and_never_turns_the_box_inside_out() {
        let (v, b) = (top(), boxed());
        let h = handles(&v, &b).unwrap();
        let face = h.faces[0][1].unwrap();
        assert!(face.abs_diff_eq(Vec2::new(400.0 + (2.0 * px_per_m()) as f32, 300.0), 1e-2), "{face}");
        // Inside its square the face wins over the ring and the arrow's line.
        assert_eq!(h.hit(face + Vec2::new(-4.0, 3.0)), Some(Handle::Face { axis: Axis::X, positive: true }));
        let mut d = Drag::new(Handle::Face { axis: Axis::X, positive: true }, b, face);
        let after = d.to(&v, face + Vec2::new(26.0, 0.0)).unwrap();
        let grown = 26.0 / px_per_m();
        assert!((after.half_extent.x - (2.0 + grown / 2.0)).abs() < 1e-4, "{}", after.half_extent);
        assert_eq!((after.half_extent.y, after.half_extent.z), (1.5, 1.0));
        // The −x face stays at −2, the +x face is at 2 + grown.
        assert!((after.center.x - after.half_extent.x - (ORIGIN.x - 2.0)).abs() < 1e-9);
        assert!((after.center.x + after.half_extent.x - (ORIGIN.x + 2.0 + grown)).abs() < 1e-4);
        assert_eq!((after.center.y, after.center.z), (ORIGIN.y, ORIGIN.z));
        // Dragged past the opposite face: flat there, not negative.
        let flat = d.to(&v, face - Vec2::new(400.0, 0.0)).unwrap();
        assert_eq!(flat.half_extent.x, 0.0);
        assert!((flat.center.x - (ORIGIN.x - 2.0)).abs() < 1e-9);
        // The −y face (at the bottom of the screen) moves down when dragged down, the +y face stays.
        let low = h.faces[1][0].unwrap();
        assert!(low.y > 300.0);
        let mut d = Drag::new(Handle::Face { axis: Axis::Y, positive: false }, b, low);
        let after = d.to(&v, low + Vec2::new(0.0, 52.0)).unwrap();
        assert!((after.center.y + after.half_extent.y - (ORIGIN.y + 1.5)).abs() < 1e-9);
        assert!((after.center.y - after.half_extent.y - (ORIGIN.y - 1.5 - 52.0 / px_per_m())).abs() < 1e-4);
    }

    #[test]
    fn a_quarter_turn_of_the_cursor_turns_the_box_a_quarter_turn() {
        let (v, b) = (top(), boxed());
        let h = handles(&v, &b).unwrap();
        // From above only the z ring shows round; the x and y rings are edge-on and left out.
        assert!(h.rings[2].is_some() && h.rings[0].is_none() && h.rings[1].is_none());
        // The z arrow points at the camera: neither it nor the ±z faces show.
        assert!(h.arrows[2].is_none() && h.faces[2] == [None, None]);
        let at = |deg: f32| {
            let r = deg.to_radians();
            h.centre_px + Vec2::new(r.cos(), -r.sin()) * RING_PX
        };
        assert_eq!(h.hit(at(45.0)), Some(Handle::Turn(Axis::Z)));
        let mut d = Drag::new(Handle::Turn(Axis::Z), b, at(45.0));
        // Counterclockwise on screen, seen from +z: +90° about z, x turns into y.
        let after = d.to(&v, at(135.0)).unwrap();
        assert!(close(after.rotation * DVec3::X, DVec3::Y, 1e-6), "{}", after.rotation * DVec3::X);
        assert_eq!((after.center, after.half_extent), (b.center, b.half_extent));
        // On round in steps, past half a turn: three quarters.
        d.to(&v, at(225.0));
        let after = d.to(&v, at(315.0)).unwrap();
        assert!(close(after.rotation * DVec3::X, -DVec3::Y, 1e-6), "{}", after.rotation * DVec3::X);
        // Seen from below, the same sweep on screen turns the other way.
        let below = view(Vec3::new(0.0, 0.0, -10.0), Vec3::ZERO, Vec3::Y);
        let hb = handles(&below, &b).unwrap();
        let at_b = |deg: f32| {
            let r = deg.to_radians();
            hb.centre_px + Vec2::new(r.cos(), -r.sin()) * RING_PX
        };
        let mut d = Drag::new(Handle::Turn(Axis::Z), b, at_b(45.0));
        let after = d.to(&below, at_b(135.0)).unwrap();
        assert!(close(after.rotation * DVec3::X, -DVec3::Y, 1e-6), "{}", after.rotation * DVec3::X);
    }

    #[test]
    fn a_turned_box_moves_along_its_own_axes() {
        let b = ClipBox { rotation: DQuat::from_rotation_z(std::f64::consts::FRAC_PI_2), ..boxed() };
        let moved = moved(&b, Axis::X, 3.0);
        assert!(close(moved.center, ORIGIN + DVec3::Y * 3.0, 1e-9));
        let r = resized(&b, Axis::X, true, 1.0);
        assert!(close(r.center, ORIGIN + DVec3::Y * 0.5, 1e-9) && r.half_extent.x == 2.5);
        let t = turned(&b, Axis::X, std::f64::consts::FRAC_PI_2);
        // Its own x (world +y) stays; its own y (world −x) turns into its own z (world +z).
        assert!(close(t.rotation * DVec3::X, DVec3::Y, 1e-9) && close(t.rotation * DVec3::Y, DVec3::Z, 1e-9));
    }

    #[test]
    fn nothing_is_hit_far_from_the_handles() {
        let (v, b) = (top(), boxed());
        let h = handles(&v, &b).unwrap();
        for p in [Vec2::new(10.0, 10.0), Vec2::new(700.0, 500.0), Vec2::new(400.0 + 150.0, 300.0 + 150.0)] {
            assert_eq!(h.hit(p), None, "{p}");
        }
        // Just outside the reach of the arrow's tip, and of a face's square.
        assert_eq!(h.hit(Vec2::new(400.0, 300.0 - ARROW_PX - HIT_PX - 1.0)), None);
        let face = h.faces[1][1].unwrap();
        assert_eq!(h.hit(face + Vec2::new(FACE_HALF_PX + HIT_PX + 1.0, 0.0)), None);
    }

    #[test]
    fn handles_behind_the_camera_are_not_hit() {
        // Looking along +x from the local zero; the box reaches behind the camera.
        let v = view(Vec3::ZERO, Vec3::X, Vec3::Z);
        let b = ClipBox {
            center: ORIGIN + DVec3::new(5.0, 1.0, 0.5),
            half_extent: DVec3::new(10.0, 1.0, 1.0),
            rotation: DQuat::IDENTITY,
            keep: Keep::Inside,
        };
        let h = handles(&v, &b).unwrap();
        // The −x face is at x = −5, behind the camera: not placed, and where it would mirror to, not hit.
        assert_eq!(h.faces[0][0], None);
        let c = v.clip_from_world * Vec3::new(-5.0, 1.0, 0.5).extend(1.0);
        assert!(c.w < 0.0);
        let mirrored = Vec2::new((c.x / c.w + 1.0) * 400.0, (1.0 - c.y / c.w) * 300.0);
        assert_ne!(h.hit(mirrored), Some(Handle::Face { axis: Axis::X, positive: false }));
        // A box wholly behind: no handles.
        let behind = ClipBox { center: ORIGIN - DVec3::X * 5.0, ..b };
        assert_eq!(handles(&v, &behind), None);
        // Its face could not be dragged either.
        assert_eq!(along_axis(&v, ORIGIN - DVec3::X * 5.0, DVec3::Y, Vec2::new(10.0, 0.0)), None);
    }

    #[test]
    fn an_axis_pointing_at_the_camera_does_not_follow_the_cursor() {
        let v = top();
        assert_eq!(along_axis(&v, ORIGIN, DVec3::Z, Vec2::new(30.0, 0.0)), None);
        // Past the vanishing point of a receding axis: no box, rather than one thrown to infinity.
        let oblique = view(Vec3::new(0.0, -10.0, 6.0), Vec3::ZERO, Vec3::Z);
        let far = along_axis(&oblique, ORIGIN, DVec3::Y, Vec2::new(0.0, -2000.0));
        assert_eq!(far, None);
        let near = along_axis(&oblique, ORIGIN, DVec3::Y, Vec2::new(0.0, -2.0)).unwrap();
        assert!(near > 0.0);
    }
}
