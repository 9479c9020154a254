//! The lens: field of view and the near and far planes.
//!
//! How it works: a GL perspective with the prototype's 60° vertical field of view. The built-in scene
//! keeps the prototype's fixed planes (0.01 and 100). Loaded clouds get planes that follow the camera
//! every frame ([`DepthRange::around`]): far just beyond the farthest corner of the cloud's bounds
//! (nothing behind can be clipped), near 0.4 times the distance to the bounds (a point in view lies at
//! least its distance times the cosine of its angle off the view axis ahead, and that cosine is above
//! 0.4 inside a 60° frustum of any aspect up to 3.8:1), but never below far / 10⁴, the prototype's own
//! ratio: depth is NDC z in [0, 1] as a float, ≈ 1 − near/z, whose steps near 1 (6·10⁻⁸) are
//! 6·10⁻⁸·z²/near apart in z — 4 mm at 100 m for a camera inside a 1.5 km tile (near 15 cm), and
//! proportionally finer from outside the bounds, where near grows with the distance.
//!
//! The orthographic projection ([`Projection::Orthographic`]) shows a box `2 · half_height_m` tall
//! whatever the depth. Its planes come from the bounds alone ([`DepthRange::along`]): they hold the
//! bounds' whole extent along the view direction, in front of the eye or behind it, so a top view
//! shows the highest points wherever the eye is, and depth is linear between them.
use crate::framing::corners;
use glam::{Mat4, Vec3};
use pcv_io::Bounds;

/// Vertical field of view, the prototype's 60°.
pub const FOV_Y_RAD: f32 = std::f32::consts::FRAC_PI_3;

/// The smallest near / far ratio the adaptive planes use.
pub const MIN_NEAR_OVER_FAR: f32 = 1e-4;

/// Near over the distance to the bounds, for a camera outside them.
pub const NEAR_OVER_DISTANCE: f32 = 0.4;

/// How view space becomes clip space.
#[derive(Clone, Copy, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Projection {
    /// The GL perspective with [`FOV_Y_RAD`].
    #[default]
    Perspective,
    /// Parallel rays: the frame shows `2 · half_height_m` of the view plane vertically (and the aspect
    /// times that horizontally), at every depth.
    Orthographic { half_height_m: f32 },
}

impl Projection {
    pub fn is_ortho(self) -> bool {
        matches!(self, Projection::Orthographic { .. })
    }

    pub fn name(self) -> &'static str {
        match self {
            Projection::Perspective => "perspective",
            Projection::Orthographic { .. } => "orthographic",
        }
    }
}

/// The depth at which a perspective view shows what an orthographic one of `half_height_m` shows (the
/// frame's height is the same there).
pub fn equivalent_depth(half_height_m: f32) -> f32 {
    half_height_m / (FOV_Y_RAD * 0.5).tan()
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

    /// Fixed planes for a cloud of this radius: the prototype's for clouds of its size, scaled for
    /// larger ones. (Loaded clouds use [`DepthRange::around`] instead.)
    pub fn for_radius(radius: f32) -> DepthRange {
        let far = (radius * 30.0).max(100.0);
        DepthRange { near: far * 1e-4, far }
    }

    /// Planes for an eye at `eye` looking at a cloud within `bounds`: every point of the bounds that is
    /// in the field of view lies between them (see the module doc).
    pub fn around(eye: Vec3, bounds: &Bounds) -> DepthRange {
        if bounds.is_empty() || !eye.is_finite() {
            return DepthRange::PROTOTYPE;
        }
        let mut farthest = 0.0f32;
        for c in corners(bounds) {
            farthest = farthest.max(c.distance(eye));
        }
        let to_box = distance_to_box(eye, bounds);
        // A margin for f32 rounding of the corners and of the projection.
        let far = (farthest * 1.02).max(to_box * 1.02 + 1e-6).max(1e-6);
        let near = (to_box * NEAR_OVER_DISTANCE).max(far * MIN_NEAR_OVER_FAR);
        DepthRange { near, far }
    }
}

impl DepthRange {
    /// Orthographic planes for an eye at `eye` looking along `forward` (a unit vector): the bounds'
    /// extent along `forward`, relative to the eye (near is negative where the bounds reach behind it),
    /// with a margin of 1% of that extent for rounding.
    pub fn along(eye: Vec3, forward: Vec3, bounds: &Bounds) -> DepthRange {
        if bounds.is_empty() || !eye.is_finite() || !forward.is_finite() {
            return DepthRange::PROTOTYPE;
        }
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for c in corners(bounds) {
            let t = (c - eye).dot(forward);
            lo = lo.min(t);
            hi = hi.max(t);
        }
        let margin = ((hi - lo) * 0.01).max(bounds.radius() * 1e-4).max(1e-6);
        DepthRange { near: lo - margin, far: hi + margin }
    }
}

/// The distance from `p` to the box (0 inside it).
pub fn distance_to_box(p: Vec3, b: &Bounds) -> f32 {
    let d = (b.min - p).max(p - b.max).max(Vec3::ZERO);
    d.length()
}

/// The GL projection for `depth` at this aspect.
pub fn clip_from_view(projection: Projection, depth: DepthRange, width_px: u32, height_px: u32) -> Mat4 {
    let aspect = width_px.max(1) as f32 / height_px.max(1) as f32;
    match projection {
        Projection::Perspective => Mat4::perspective_rh_gl(FOV_Y_RAD, aspect, depth.near, depth.far),
        Projection::Orthographic { half_height_m: hh } => {
            Mat4::orthographic_rh_gl(-hh * aspect, hh * aspect, -hh, hh, depth.near, depth.far)
        }
    }
}

/// World units a pixel spans at view depth `depth` in a frame `height_px` tall (perspective).
pub fn units_per_px(depth: f32, height_px: u32) -> f32 {
    2.0 * depth * (FOV_Y_RAD * 0.5).tan() / height_px.max(1) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_planes_hold_the_whole_box() {
        let b = Bounds { min: Vec3::new(-500.0, -250.0, -10.0), max: Vec3::new(500.0, 250.0, 10.0) };
        // Outside: near is 0.4 times the distance to the box, far beyond its farthest corner.
        let eye = Vec3::new(0.0, -900.0, 400.0);
        let d = DepthRange::around(eye, &b);
        assert!((d.near - distance_to_box(eye, &b) * NEAR_OVER_DISTANCE).abs() < 1e-3, "{d:?}");
        assert!(d.far > Vec3::new(500.0, 250.0, -10.0).distance(eye));
        // Inside: near is far / 1e4.
        let d = DepthRange::around(Vec3::ZERO, &b);
        assert!((d.near - d.far * MIN_NEAR_OVER_FAR).abs() < 1e-6 && d.far > 559.0, "{d:?}");
        // A single point, an empty box, a non-finite eye.
        let p = Bounds { min: Vec3::ONE, max: Vec3::ONE };
        let d = DepthRange::around(Vec3::ZERO, &p);
        assert!(d.near > 0.0 && d.near < 3f32.sqrt() && d.far > 3f32.sqrt());
        assert_eq!(DepthRange::around(Vec3::ZERO, &Bounds::EMPTY), DepthRange::PROTOTYPE);
        assert_eq!(DepthRange::around(Vec3::NAN, &b), DepthRange::PROTOTYPE);
    }

    #[test]
    fn orthographic_planes_hold_the_box_in_front_and_behind() {
        let b = Bounds { min: Vec3::new(-10.0, -10.0, 0.0), max: Vec3::new(10.0, 10.0, 20.0) };
        // An eye inside the box looking down: near is behind it (negative), far below the ground.
        let d = DepthRange::along(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z, &b);
        assert!(d.near < -15.0 && d.near > -15.5 && d.far > 5.0 && d.far < 5.5, "{d:?}");
        let m = clip_from_view(Projection::Orthographic { half_height_m: 10.0 }, d, 200, 100);
        // The top and the ground at the box's corner land inside clip space, at w = 1.
        for p in [Vec3::new(-19.9, 9.9, 15.0), Vec3::new(19.9, -9.9, -4.9)] {
            let c = m * p.extend(1.0);
            assert_eq!(c.w, 1.0);
            assert!(c.x.abs() < 1.0 && c.y.abs() < 1.0 && c.z.abs() < 1.0, "{p} -> {c}");
        }
        assert_eq!(equivalent_depth(10.0), 10.0 / (FOV_Y_RAD * 0.5).tan());
        assert_eq!(DepthRange::along(Vec3::ZERO, Vec3::Z, &Bounds::EMPTY), DepthRange::PROTOTYPE);
    }

    #[test]
    fn distance_and_pixel_size() {
        let b = Bounds { min: Vec3::ZERO, max: Vec3::ONE };
        assert_eq!(distance_to_box(Vec3::splat(0.5), &b), 0.0);
        assert!((distance_to_box(Vec3::new(4.0, 0.5, 0.5), &b) - 3.0).abs() < 1e-6);
        // 60° field of view: at depth √3 the frame is 2 units tall.
        assert!((units_per_px(3f32.sqrt(), 100) - 0.02).abs() < 1e-6);
    }
}
