//! The first view of a cloud, the standard views, `F`, and the automatic up axis.
//!
//! How it works:
//! - **What is framed** is a *percentile box* ([`percentile_box`]): per axis, the 0.2nd and 99.8th
//!   percentiles of a sample of at most a million points, widened by 1% of their span and kept inside
//!   the true bounds, so that a few stray points (birds over a lidar tile, a mis-registered return)
//!   do not frame empty space. The near and far planes still use the true bounds.
//! - **Direction**: the start view ([`View::Oblique`]) looks down 35° from the side that shows the
//!   box's longest horizontal extent across the screen: for a footprint `long × short` it looks along
//!   the short axis, turned `45° · short / long` towards the long one — a three-quarter view of a
//!   square, a view square-on to a long strip. Top, front and side views look along the up frame's
//!   axes (top: north up, as a map).
//! - **Distance** ([`fit`]): for a fixed direction, the closest eye from which every box corner
//!   projects inside the frame with [`MARGIN`] on every side, and the box's projection is centred.
//!   With each corner's coordinates `(u, v, w)` along the camera's right, up and forward, a corner is
//!   in view iff `|u − a| ≤ tx·(w − e)` and `|v − b| ≤ ty·(w − e)` for an eye at `(a, b, e)`, where
//!   `tx`, `ty` are the tangents of the half fields of view less the margin. For the horizontal part
//!   that is `e ≤ A + a/tx` and `e ≤ B − a/tx` with `A = min(w − u/tx)`, `B = min(w + u/tx)`: the
//!   closest eye is at `e = (A + B)/2`, the same vertically, and the smaller `e` binds. That fit puts
//!   the box inside but not centred (far corners project smaller than near ones), so from there the
//!   eye comes closer by bisection on `e`, each step centring the projection on both axes (again by
//!   bisection: the projected extent's top plus bottom falls monotonically as the eye moves up), until
//!   the centred extent touches the margin. The box fills the frame's width or its height.
//! - **Up axis** ([`auto_up`]): z for LAS/LAZ/COPC/E57 (ASPRS and E57 define z as up), for pcv's raw
//!   records and for the built-in scene. For PLY, PCD and text files, in order: coordinates that are
//!   georeferenced (the cloud's origin more than 10 km from 0: UTM, state plane, national grids are
//!   z-up) → z; a clearly thin axis (under a quarter of the next-smallest extent of the percentile box:
//!   terrain, a floor, a facade scan lying flat) → that axis; otherwise +y, the convention of mesh
//!   tools and of most object scanners (the Stanford models, Blender's and Meshlab's exports, glTF).
use super::lens::FOV_Y_RAD;
use super::pose::{Pose, UpAxis};
use glam::Vec3;
use pcv_io::formats::Format;
use pcv_io::{Bounds, Point, PointCloud};

/// Free space left on each side of a framed box, as a fraction of the half frame.
pub const MARGIN: f32 = 0.04;
/// How far the start view looks down.
pub const OBLIQUE_PITCH_DEG: f32 = -35.0;
/// The quantiles of the percentile box.
pub const BOX_QUANTILES: (f64, f64) = (0.002, 0.998);
/// Points sampled for the percentile box, at most.
const BOX_SAMPLE: usize = 1 << 20;
/// The aspect a view is framed for when no window size is known (that of 1920 × 1080).
pub const DEFAULT_ASPECT: f32 = 16.0 / 9.0;

/// A standard view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    /// Looking down 35° at the longest side (the start view).
    Oblique,
    /// Straight down, north (+y of the up frame) up.
    Top,
    /// Straight up.
    Bottom,
    /// Along the up frame's +y (from its −y side).
    Front,
    /// Along −y.
    Back,
    /// Along −x (from the +x side).
    Right,
    /// Along +x.
    Left,
}

impl View {
    /// The views the view key cycles through.
    pub const CYCLE: [View; 4] = [View::Top, View::Front, View::Right, View::Oblique];

    pub fn name(self) -> &'static str {
        match self {
            View::Oblique => "oblique",
            View::Top => "top",
            View::Bottom => "bottom",
            View::Front => "front",
            View::Back => "back",
            View::Right => "right",
            View::Left => "left",
        }
    }

    /// Every view.
    pub const ALL: [View; 7] =
        [View::Oblique, View::Top, View::Bottom, View::Front, View::Back, View::Right, View::Left];

    /// A view by its [`View::name`] (`side` is `right`).
    pub fn parse(s: &str) -> Result<View, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "side" {
            return Ok(View::Right);
        }
        View::ALL.into_iter().find(|v| v.name() == s).ok_or_else(|| {
            let names: Vec<&str> = View::ALL.iter().map(|v| v.name()).collect();
            format!("unknown view '{s}' (one of {}, side)", names.join(", "))
        })
    }

    /// The next view in [`View::CYCLE`] (views outside it go to the first).
    pub fn next(self) -> View {
        match View::CYCLE.iter().position(|&v| v == self) {
            Some(i) => View::CYCLE[(i + 1) % View::CYCLE.len()],
            None => View::CYCLE[0],
        }
    }

    /// Yaw and pitch (up frame) of this view of `box_` for `up`.
    pub fn angles(self, box_: &Bounds, up: UpAxis) -> (f32, f32) {
        let deg = f32::to_radians;
        match self {
            View::Oblique => {
                let e = extents_in_frame(box_, up);
                let (long, short) = (e.x.max(e.y), e.x.min(e.y));
                let turn = if long > 0.0 { 45.0 * short / long } else { 45.0 };
                // Look along the short horizontal axis, turned towards the long one.
                let yaw = if e.x >= e.y { 90.0 - turn } else { turn };
                (deg(yaw), deg(OBLIQUE_PITCH_DEG))
            }
            View::Top => (deg(90.0), deg(-90.0)),
            View::Bottom => (deg(-90.0), deg(90.0)),
            View::Front => (deg(90.0), 0.0),
            View::Back => (deg(-90.0), 0.0),
            View::Right => (deg(180.0), 0.0),
            View::Left => (0.0, 0.0),
        }
    }
}

/// The box's extents along the up frame's axes.
pub fn extents_in_frame(box_: &Bounds, up: UpAxis) -> Vec3 {
    if box_.is_empty() {
        return Vec3::ZERO;
    }
    (up.frame_from_world() * (box_.max - box_.min)).abs()
}

/// The eight corners of a box.
pub fn corners(b: &Bounds) -> [Vec3; 8] {
    std::array::from_fn(|i| {
        Vec3::new(
            if i & 1 == 0 { b.min.x } else { b.max.x },
            if i & 2 == 0 { b.min.y } else { b.max.y },
            if i & 4 == 0 { b.min.z } else { b.max.z },
        )
    })
}

/// `b` with every side at least 1% of its largest (a unit box around a single point), so that a flat
/// or degenerate cloud still has a distance to be framed from.
fn padded(b: &Bounds) -> Bounds {
    if b.is_empty() {
        return Bounds { min: Vec3::splat(-1.0), max: Vec3::ONE };
    }
    let size = b.max - b.min;
    let min_side = if size.max_element() > 0.0 { size.max_element() * 0.01 } else { 1.0 };
    let grow = (Vec3::splat(min_side) - size).max(Vec3::ZERO) * 0.5;
    Bounds { min: b.min - grow, max: b.max + grow }
}

/// The pose looking along (`yaw_rad`, `pitch_rad`) from which `box_` is centred and just fits a frame
/// of this aspect (width / height), with [`MARGIN`] (see the module doc).
pub fn fit(box_: &Bounds, yaw_rad: f32, pitch_rad: f32, up: UpAxis, aspect: f32) -> Pose {
    let b = padded(box_);
    let dir = Pose { eye: Vec3::ZERO, yaw_rad, pitch_rad }.basis(up);
    let ty = (FOV_Y_RAD as f64 * 0.5).tan() * (1.0 - MARGIN as f64);
    let tx = ty * aspect.max(1e-3) as f64;
    // Corner coordinates along right, up and forward, relative to the box's centre (small numbers
    // for clouds far from 0), in f64 so the bisections below converge to the last bit of an f32.
    let center = b.center();
    let uvw: Vec<[f64; 3]> = corners(&b)
        .iter()
        .map(|&c| {
            let r = c - center;
            [r.dot(dir.right) as f64, r.dot(dir.up) as f64, r.dot(dir.forward) as f64]
        })
        .collect();
    let min_of = |f: &dyn Fn(&[f64; 3]) -> f64| uvw.iter().map(f).fold(f64::INFINITY, f64::min);
    // The closed-form fit (box inside, not yet centred in projection): a lower bound on e.
    let (a_min, b_min) = (min_of(&|c| c[2] - c[0] / tx), min_of(&|c| c[2] + c[0] / tx));
    let (c_min, d_min) = (min_of(&|c| c[2] - c[1] / ty), min_of(&|c| c[2] + c[1] / ty));
    let e_fit = ((a_min + b_min) * 0.5).min((c_min + d_min) * 0.5);
    let e_near = min_of(&|c| c[2]);
    // Centred offsets at e, and the larger of the two extents over the allowed one (≤ 1: inside).
    let centred = |e: f64| -> (f64, f64, f64) {
        let (a, sx) = centre_axis(&uvw, 0, e);
        let (b, sy) = centre_axis(&uvw, 1, e);
        (a, b, (sx / tx).max(sy / ty))
    };
    // Centring only shrinks the extent, and the extent grows as the eye comes closer: bisect for the
    // closest eye whose centred extent still fits.
    let (mut lo, mut hi) = (e_fit, e_near);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if centred(mid).2 <= 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (a, bb, _) = centred(lo);
    let offset = dir.right * a as f32 + dir.up * bb as f32 + dir.forward * lo as f32;
    Pose { eye: center + offset, yaw_rad, pitch_rad }
}

/// For an eye at depth `e` (along forward), the offset along axis `k` (0 right, 1 up) that centres
/// the corners' projections (tangents `(c[k] − o) / (c[2] − e)`), and their largest magnitude there.
fn centre_axis(uvw: &[[f64; 3]], k: usize, e: f64) -> (f64, f64) {
    let spread = |o: f64| -> (f64, f64) {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for c in uvw {
            let t = (c[k] - o) / (c[2] - e).max(1e-30);
            lo = lo.min(t);
            hi = hi.max(t);
        }
        (lo, hi)
    };
    // hi + lo falls as o grows; it is zero where the projection is centred.
    let reach = uvw.iter().map(|c| c[k].abs()).fold(0.0, f64::max) + 1.0;
    let (mut a, mut b) = (-reach, reach);
    for _ in 0..80 {
        let mid = 0.5 * (a + b);
        let (lo, hi) = spread(mid);
        if lo + hi > 0.0 {
            a = mid;
        } else {
            b = mid;
        }
    }
    let o = 0.5 * (a + b);
    let (lo, hi) = spread(o);
    (o, hi.max(-lo))
}

/// The orthographic pose and half height (see [`crate::Projection`]) looking along (`yaw_rad`,
/// `pitch_rad`) in which `box_` is centred and just fits a frame of this aspect, with [`MARGIN`]. The eye
/// stands where a perspective view of the same size at the box's nearest face would.
pub fn fit_ortho(box_: &Bounds, yaw_rad: f32, pitch_rad: f32, up: UpAxis, aspect: f32) -> (Pose, f32) {
    let b = padded(box_);
    let dir = Pose { eye: Vec3::ZERO, yaw_rad, pitch_rad }.basis(up);
    let center = b.center();
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for c in corners(&b) {
        let r = c - center;
        let v = Vec3::new(r.dot(dir.right), r.dot(dir.up), r.dot(dir.forward));
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let mid = (lo + hi) * 0.5;
    let half = (hi - lo) * 0.5;
    let half_height = (half.y.max(half.x / aspect.max(1e-3)) / (1.0 - MARGIN)).max(1e-6);
    let back = crate::lens::equivalent_depth(half_height) + half.z;
    let eye = center + dir.right * mid.x + dir.up * mid.y + dir.forward * (mid.z - back);
    (Pose { eye, yaw_rad, pitch_rad }, half_height)
}

/// The pose of `view` framing `box_`.
pub fn view_pose(view: View, box_: &Bounds, up: UpAxis, aspect: f32) -> Pose {
    let (yaw, pitch) = view.angles(box_, up);
    fit(box_, yaw, pitch, up, aspect)
}

/// The box holding the [`BOX_QUANTILES`] of `points` on every axis, widened by 1% of its span and
/// clipped to `bounds` (the true bounds); `bounds` itself for clouds of fewer than 100 points.
pub fn percentile_box(points: &[Point], bounds: &Bounds) -> Bounds {
    if points.len() < 100 || bounds.is_empty() {
        return *bounds;
    }
    let step = points.len().div_ceil(BOX_SAMPLE);
    let mut min = bounds.min;
    let mut max = bounds.max;
    for k in 0..3 {
        let mut v: Vec<f32> = points.iter().step_by(step).map(|p| p.pos[k]).filter(|x| x.is_finite()).collect();
        if v.len() < 100 {
            continue;
        }
        let last = v.len() - 1;
        let lo_i = (last as f64 * BOX_QUANTILES.0).round() as usize;
        let hi_i = (last as f64 * BOX_QUANTILES.1).round() as usize;
        let lo = *v.select_nth_unstable_by(lo_i, f32::total_cmp).1;
        let hi = *v.select_nth_unstable_by(hi_i, f32::total_cmp).1;
        let pad = (hi - lo) * 0.01;
        min[k] = (lo - pad).max(bounds.min[k]);
        max[k] = (hi + pad).min(bounds.max[k]);
    }
    Bounds { min, max }
}

/// The box [`percentile_box`] gives for a cloud (its bounds for a lazy built-in scene).
pub fn framing_box(cloud: &PointCloud) -> Bounds {
    if cloud.is_lazy_scene() {
        cloud.bounds
    } else {
        percentile_box(&cloud.points, &cloud.bounds)
    }
}

/// The up axis `auto` chose, and why (for the panel and the log).
#[derive(Clone, Debug, PartialEq)]
pub struct AutoUp {
    pub axis: UpAxis,
    pub reason: String,
}

/// Georeferenced coordinates: the cloud's origin further than this from 0 (metres).
pub const GEOREFERENCED_M: f64 = 10_000.0;
/// A thin axis: its extent under this fraction of the next-smallest one.
pub const THIN_RATIO: f32 = 0.25;

/// The up axis for `cloud` by the rule of the module doc, with `box_` its percentile box.
pub fn auto_up(cloud: &PointCloud, box_: &Bounds) -> AutoUp {
    let z = |reason: String| AutoUp { axis: UpAxis::PosZ, reason };
    let Some(attrs) = cloud.attributes.as_ref().filter(|a| !a.sources.is_empty()) else {
        return z(if cloud.scene().is_some() { "the built-in scene is z-up".into() } else { "no file: z".into() });
    };
    let formats: Vec<Format> = attrs.sources.iter().map(|s| s.format).collect();
    if let Some(f) = formats.iter().find(|f| matches!(f, Format::Las | Format::Laz | Format::E57)) {
        return z(format!("{f} files are z-up"));
    }
    if formats.iter().all(|&f| f == Format::Raw) {
        return z("raw records (the prototype's layout) are z-up".into());
    }
    let o = cloud.origin;
    if o.x.abs().max(o.y.abs()).max(o.z.abs()) > GEOREFERENCED_M {
        return z(format!("georeferenced coordinates (around {:.0}, {:.0}, {:.0}) are z-up", o.x, o.y, o.z));
    }
    let e = box_.max - box_.min;
    if !box_.is_empty() {
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| e[a].total_cmp(&e[b]));
        let (thin, next) = (order[0], order[1]);
        if e[next] > 0.0 && e[thin] < THIN_RATIO * e[next] {
            let axis = [UpAxis::PosX, UpAxis::PosY, UpAxis::PosZ][thin];
            return AutoUp {
                axis,
                reason: format!(
                    "the {} extent is thin ({:.3} of {:.3}): it is up",
                    ["x", "y", "z"][thin],
                    e[thin],
                    e[next]
                ),
            };
        }
    }
    AutoUp { axis: UpAxis::PosY, reason: "y, the mesh-tool convention (no thin axis, not georeferenced)".into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DVec3, Mat4};

    /// The projected box's extent in NDC (min x, max x, min y, max y), asserting every corner is in front.
    fn projected(pose: &Pose, up: UpAxis, box_: &Bounds, aspect: f32) -> (f32, f32, f32, f32) {
        let depth = super::super::lens::DepthRange::around(pose.eye, box_);
        let m = Mat4::perspective_rh_gl(FOV_Y_RAD, aspect, depth.near, depth.far) * pose.view_from_world_up(up);
        let (mut x0, mut x1, mut y0, mut y1) = (f32::MAX, f32::MIN, f32::MAX, f32::MIN);
        for c in corners(box_) {
            let p = m * c.extend(1.0);
            assert!(p.w > 0.0 && p.z.abs() < p.w, "corner {c} is clipped: {p}");
            let (x, y) = (p.x / p.w, p.y / p.w);
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        (x0, x1, y0, y1)
    }

    fn assert_framed(name: &str, box_: Bounds, up: UpAxis, aspect: f32) -> Pose {
        let pose = view_pose(View::Oblique, &box_, up, aspect);
        let (x0, x1, y0, y1) = projected(&pose, up, &box_, aspect);
        let inside = x0 >= -1.0 && x1 <= 1.0 && y0 >= -1.0 && y1 <= 1.0;
        let fill = ((x1 - x0) / 2.0).max((y1 - y0) / 2.0);
        assert!(inside, "{name}: projected box x {x0}..{x1}, y {y0}..{y1} leaves the frame");
        assert!(fill >= 0.8, "{name}: the box fills only {:.0}% of the frame", fill * 100.0);
        // Centred.
        assert!((x0 + x1).abs() < 0.02 && (y0 + y1).abs() < 0.02, "{name}: not centred: x {x0}..{x1}, y {y0}..{y1}");
        // Looking down.
        assert!(pose.basis(up).forward.dot(up.vector()) < -0.5, "{name}: not looking down");
        pose
    }

    fn b(min: [f32; 3], max: [f32; 3]) -> Bounds {
        Bounds { min: Vec3::from(min), max: Vec3::from(max) }
    }

    #[test]
    fn clouds_of_every_shape_fill_the_frame_and_stay_inside() {
        for aspect in [16.0 / 9.0, 4.0 / 3.0, 1.0, 0.5] {
            assert_framed("flat 1000x500x20", b([-500.0, -250.0, -10.0], [500.0, 250.0, 10.0]), UpAxis::PosZ, aspect);
            assert_framed("strip 500x5x5", b([0.0, 0.0, 0.0], [500.0, 5.0, 5.0]), UpAxis::PosZ, aspect);
            assert_framed("strip along y", b([0.0, 0.0, 0.0], [5.0, 500.0, 5.0]), UpAxis::PosZ, aspect);
            assert_framed("cube", b([-1.0; 3], [1.0; 3]), UpAxis::PosZ, aspect);
            assert_framed("15 cm object", b([-0.075, 0.0, -0.06], [0.075, 0.15, 0.06]), UpAxis::PosY, aspect);
            assert_framed("UTM offsets", b([1_000.0, 2_000.0, -5.0], [1_400.0, 2_300.0, 40.0]), UpAxis::PosZ, aspect);
            // A single point is framed as a unit box around it.
            let point = b([3.0; 3], [3.0; 3]);
            assert_eq!(
                view_pose(View::Oblique, &point, UpAxis::PosZ, aspect),
                view_pose(View::Oblique, &padded(&point), UpAxis::PosZ, aspect)
            );
            assert_framed("a unit box", padded(&point), UpAxis::PosZ, aspect);
            for up in UpAxis::ALL {
                assert_framed(&format!("tile, up {up}"), b([-500.0, -250.0, -10.0], [500.0, 250.0, 10.0]), up, aspect);
            }
        }
    }

    #[test]
    fn flat_clouds_fill_the_width_and_strips_lie_across() {
        let tile = b([-500.0, -250.0, -10.0], [500.0, 250.0, 10.0]);
        let pose = view_pose(View::Oblique, &tile, UpAxis::PosZ, 16.0 / 9.0);
        let (x0, x1, _, _) = projected(&pose, UpAxis::PosZ, &tile, 16.0 / 9.0);
        assert!(x1 - x0 > 1.8, "the tile spans {x0}..{x1}: it should fill the width");
        // The strip's length runs across the screen: its ends are far apart horizontally.
        let strip = b([0.0, 0.0, 0.0], [500.0, 5.0, 5.0]);
        let pose = view_pose(View::Oblique, &strip, UpAxis::PosZ, 16.0 / 9.0);
        let (x0, x1, y0, y1) = projected(&pose, UpAxis::PosZ, &strip, 16.0 / 9.0);
        assert!(x1 - x0 > 1.8 && y1 - y0 < 0.5, "strip: x {x0}..{x1}, y {y0}..{y1}");
        // Pitch 35° down, turned 45°·(5/500) off square-on.
        assert!((pose.pitch_rad.to_degrees() + 35.0).abs() < 1e-4);
        assert!((pose.yaw_rad.to_degrees() - (90.0 - 0.45)).abs() < 1e-3, "{}", pose.yaw_rad.to_degrees());
        // A square footprint gets a three-quarter view.
        let (yaw, _) = View::Oblique.angles(&b([0.0; 3], [10.0, 10.0, 3.0]), UpAxis::PosZ);
        assert!((yaw.to_degrees() - 45.0).abs() < 1e-4);
    }

    #[test]
    fn standard_views_look_along_the_up_frame_axes() {
        let cube = b([-1.0; 3], [1.0; 3]);
        for up in UpAxis::ALL {
            let f = |v: View| view_pose(v, &cube, up, 1.5).basis(up).forward;
            let m = up.world_from_frame();
            assert!(f(View::Top).abs_diff_eq(-up.vector(), 1e-5), "{up}");
            assert!(f(View::Bottom).abs_diff_eq(up.vector(), 1e-5), "{up}");
            assert!(f(View::Front).abs_diff_eq(m.y_axis, 1e-5), "{up}");
            assert!(f(View::Back).abs_diff_eq(-m.y_axis, 1e-5), "{up}");
            assert!(f(View::Right).abs_diff_eq(-m.x_axis, 1e-5), "{up}");
            assert!(f(View::Left).abs_diff_eq(m.x_axis, 1e-5), "{up}");
        }
        // The top view is a map: north (+y) is up on screen, east (+x) right.
        let top = view_pose(View::Top, &cube, UpAxis::PosZ, 1.5).basis(UpAxis::PosZ);
        assert!(top.up.abs_diff_eq(Vec3::Y, 1e-5) && top.right.abs_diff_eq(Vec3::X, 1e-5), "{top:?}");
        assert_eq!(View::Oblique.next(), View::Top);
        assert_eq!(View::Bottom.next(), View::Top);
    }

    fn pts(v: &[[f32; 3]]) -> Vec<Point> {
        v.iter().map(|p| Point::new(*p, [255; 4])).collect()
    }

    #[test]
    fn the_percentile_box_ignores_outliers() {
        let mut v: Vec<[f32; 3]> = (0..10_000).map(|i| [(i % 100) as f32, (i / 100) as f32, (i % 7) as f32]).collect();
        v.push([5000.0, 5000.0, 3000.0]);
        v.push([-4000.0, 0.0, 0.0]);
        let points = pts(&v);
        let bounds = Bounds::of_points(&points);
        let pb = percentile_box(&points, &bounds);
        assert!(pb.max.x < 101.0 && pb.min.x > -2.0 && pb.max.z < 7.0, "{pb:?}");
        assert!(pb.min.cmpge(bounds.min).all() && pb.max.cmple(bounds.max).all());
        // Few points: the bounds.
        let few = pts(&v[..50]);
        assert_eq!(percentile_box(&few, &Bounds::of_points(&few)), Bounds::of_points(&few));
    }

    fn file_cloud(points: &[[f32; 3]], format: Format, origin: DVec3) -> PointCloud {
        use pcv_io::attributes::{Attributes, SourceSpan};
        let mut c = PointCloud::from_points(pts(points), origin, "test");
        c.attributes = Some(std::sync::Arc::new(Attributes {
            sources: vec![SourceSpan {
                label: "f".into(),
                format,
                points: 0..points.len() as u64,
                has_rgb: false,
                has_intensity: false,
                has_classification: false,
                uniform_rgb: None,
                crs: None,
            }],
            ..Default::default()
        }));
        c
    }

    #[test]
    fn auto_up_follows_the_documented_rule() {
        let bunny = [[-0.09f32, 0.03, -0.06], [0.06, 0.18, 0.06]];
        let terrain_y_up = [[-100.0f32, 0.0, -80.0], [100.0, 3.0, 80.0]];
        let up = |p: &[[f32; 3]], f: Format, o: DVec3| {
            let c = file_cloud(p, f, o);
            auto_up(&c, &c.bounds).axis
        };
        assert_eq!(up(&bunny, Format::Ply, DVec3::ZERO), UpAxis::PosY);
        assert_eq!(up(&bunny, Format::Pcd, DVec3::ZERO), UpAxis::PosY);
        assert_eq!(up(&bunny, Format::Las, DVec3::ZERO), UpAxis::PosZ);
        assert_eq!(up(&bunny, Format::E57, DVec3::ZERO), UpAxis::PosZ);
        assert_eq!(up(&bunny, Format::Raw, DVec3::ZERO), UpAxis::PosZ);
        assert_eq!(up(&terrain_y_up, Format::Ply, DVec3::ZERO), UpAxis::PosY);
        assert_eq!(up(&[[-500.0, -250.0, -1.0], [500.0, 250.0, 19.0]], Format::Text, DVec3::ZERO), UpAxis::PosZ);
        assert_eq!(up(&bunny, Format::Text, DVec3::new(500_000.0, 4_000_000.0, 0.0)), UpAxis::PosZ);
        let scene = pcv_io::scene::lazy(1000, 1);
        assert_eq!(auto_up(&scene, &scene.bounds).axis, UpAxis::PosZ);
        let reason = auto_up(&file_cloud(&bunny, Format::Ply, DVec3::ZERO), &Bounds::EMPTY).reason;
        assert!(reason.contains("mesh-tool"), "{reason}");
    }
}
