//! What the post passes share, the CPU twin of `kernels/post.cuh`: the background colour of a row, a
//! depth buffer value turned into view distance, and a log2 and an exp2 made of adds and multiplies.
//!
//! Same float operations in the same order as the kernels (Rust never fuses a multiply and an add), so
//! both backends compute the same bits; the polynomials replace libm's log2/exp2, which differ from
//! CUDA's.
use crate::gpu_data::{FrameUniforms, PostUniforms};

/// The depth bits of a pixel no point reached (1.0f, the far plane).
pub const FAR_DEPTH_BITS: u32 = 0x3f80_0000;

/// The background of row `y` (0 at the top): `clear_color` there, `clear_color_last_row` at the last
/// row, each channel interpolated in integers and rounded to nearest.
#[inline(always)]
pub fn background(f: &FrameUniforms, y: u32) -> u32 {
    if f.clear_color == f.clear_color_last_row || f.height < 2 {
        return f.clear_color;
    }
    let h1 = f.height - 1;
    let mut out = 0;
    for c in (0..32).step_by(8) {
        let (a, z) = ((f.clear_color >> c) & 0xff, (f.clear_color_last_row >> c) & 0xff);
        out |= ((a * (h1 - y) + z * y + h1 / 2) / h1) << c;
    }
    out
}

/// View distance of a depth value: near · far / (far − d · (far − near)); orthographic: near + d ·
/// (far − near).
#[inline(always)]
pub fn view_distance(u: &PostUniforms, depth_bits: u32) -> f32 {
    let d = f32::from_bits(depth_bits);
    if u.ortho != 0 {
        return u.near_m + d * u.far_minus_near_m;
    }
    u.near_far_m2 / (u.far_m + -(d * u.far_minus_near_m))
}

/// An adaptive point's diameter in pixels at these depth bits, from `px`, its diameter at a view
/// distance of 1: `px / distance`; orthographic, `px` (the kernels' `pcv_adaptive_px`).
#[inline(always)]
pub fn adaptive_px(u: &PostUniforms, px: f32, depth_bits: u32) -> f32 {
    if u.ortho != 0 {
        px
    } else {
        px / view_distance(u, depth_bits)
    }
}

/// How far pixel offset (dx, dy) is from a point's pixel, as the splat's coverage rules compare it with
/// a diameter squared: 4 · |d|² for disks, 4 · max(dx², dy²) for squares (`pcv_splat_q`).
#[inline(always)]
pub fn splat_q(u: &PostUniforms, dx: i32, dy: i32) -> i32 {
    4 * if u.splat_square != 0 { (dx * dx).max(dy * dy) } else { dx * dx + dy * dy }
}

/// An adaptive point's diameter squared (`dm`: its spacing seen from its view distance, in pixels), at
/// most the window's, 4 · R² (a disk of radius R; uncapped, a nearer point would cover its whole square
/// window whatever the shape); NaN stays NaN. The kernel's `pcv_adaptive_diam2`.
#[inline(always)]
pub fn adaptive_diam2(dm: f32, r: i32) -> f32 {
    let d2 = dm * dm;
    let cap = (4 * r * r) as f32;
    if d2 > cap {
        cap
    } else {
        d2
    }
}

/// log2(x) for finite x > 0 (error below 2e-5): the kernel's `pcv_log2`.
#[inline(always)]
#[expect(clippy::excessive_precision, reason = "the literals are spelled as in kernels/post.cuh")]
pub fn log2(x: f32) -> f32 {
    let bits = x.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 127;
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let t = (m + -1.0) / (m + 1.0);
    let t2 = t * t;
    let mut p = t2 * 0.142_857_14 + 0.2;
    p = t2 * p + 0.333_333_34;
    p = t2 * p + 1.0;
    e as f32 + (t * p) * 2.885_390_1
}

/// 2^x for x ≤ 0, 0 below −126 (error below 2e-5): the kernel's `pcv_exp2_neg`.
#[inline(always)]
#[expect(
    clippy::excessive_precision,
    clippy::approx_constant,
    clippy::neg_cmp_op_on_partial_ord,
    reason = "the literals are spelled as in kernels/post.cuh, and NaN must take the kernel's 0 branch"
)]
pub fn exp2_neg(x: f32) -> f32 {
    if !(x > -126.0) {
        return 0.0;
    }
    let n = x.floor();
    let g = (x + -n) * 0.693_147_18;
    let mut p = g * 0.001_388_888_9 + 0.008_333_333_3;
    p = g * p + 0.041_666_668;
    p = g * p + 0.166_666_67;
    p = g * p + 0.5;
    p = g * p + 1.0;
    p = g * p + 1.0;
    p * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::excessive_precision, clippy::approx_constant, reason = "the kernels' literals, checked")]
    fn polynomial_constants_are_near_their_meaning() {
        // The literals are spelled exactly as in kernels/post.cuh; here they are checked against what
        // they stand for, so a typo in either file shows.
        assert!((2.885_390_1f32 - 2.0 / std::f32::consts::LN_2).abs() < 1e-6);
        assert!((0.693_147_18f32 - std::f32::consts::LN_2).abs() < 1e-7);
        assert!((0.001_388_888_9f32 - 1.0 / 720.0).abs() < 1e-9);
        assert!((0.008_333_333_3f32 - 1.0 / 120.0).abs() < 1e-9);
    }

    #[test]
    fn log2_and_exp2_are_close_to_libm() {
        let mut worst_log: f32 = 0.0;
        for i in 1..20_000 {
            let x = (i as f32 * 0.731).powf(1.7) * 1e-3;
            worst_log = worst_log.max((log2(x) - x.log2()).abs());
        }
        assert!(worst_log < 3e-5, "log2 error {worst_log}");
        let mut worst_exp: f32 = 0.0;
        for i in 0..20_000 {
            let x = -(i as f32) * 0.006;
            let (a, b) = (exp2_neg(x), x.exp2());
            worst_exp = worst_exp.max((a - b).abs() / b.max(1e-30));
        }
        assert!(worst_exp < 3e-5, "exp2 relative error {worst_exp}");
        assert_eq!(exp2_neg(-200.0), 0.0);
        assert_eq!(exp2_neg(f32::NAN), 0.0);
        assert_eq!(exp2_neg(0.0), 1.0);
    }

    #[test]
    fn gradient_rows() {
        let f = FrameUniforms {
            height: 3,
            width: 1,
            clear_color: 0xff00_0000,
            clear_color_last_row: 0xff00_00c8,
            ..Default::default()
        };
        assert_eq!(background(&f, 0), 0xff00_0000);
        assert_eq!(background(&f, 1), 0xff00_0064);
        assert_eq!(background(&f, 2), 0xff00_00c8);
    }

    #[test]
    fn view_distance_inverts_the_projection() {
        let (n, fa) = (0.1f32, 1000.0f32);
        let u =
            PostUniforms { near_m: n, far_m: fa, near_far_m2: n * fa, far_minus_near_m: fa - n, ..Default::default() };
        for w in [0.2f32, 1.0, 10.0, 500.0] {
            // The GL depth of view distance w, mapped to [0, 1].
            let ndc = (fa + n) / (fa - n) - 2.0 * fa * n / ((fa - n) * w);
            let d = (ndc + 1.0) * 0.5;
            assert!((view_distance(&u, d.to_bits()) - w).abs() / w < 1e-3, "{w}");
        }
    }
}
