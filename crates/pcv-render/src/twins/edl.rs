//! Eye-dome lighting, the CPU twin of `kernels/edl.cu`: each pixel compares its log2 view distance with
//! its 8 neighbours' (`edl_offsets`) and darkens its colour by 2^(−response · edl_k), response = the
//! sum of how much nearer each neighbour is (log2 units) / 8; a background pixel next to points gets 100
//! per such neighbour (the outline), one with none keeps its colour. Same float operations in the same
//! order as the kernel.
use super::post::{exp2_neg, log2, view_distance, FAR_DEPTH_BITS};
use crate::gpu_data::PostUniforms;
use rayon::prelude::*;

/// Shades `color` in place from the depth bits `depth(i)` of the same `u.width × u.height` frame.
pub fn edl(u: &PostUniforms, depth: impl Fn(usize) -> u32 + Sync, color: &mut [u32]) {
    let (w, h) = (u.width as i32, u.height as i32);
    assert_eq!(color.len(), (w * h) as usize, "EDL colour buffer size");
    color.par_chunks_mut(w as usize).enumerate().for_each(|(y, row)| {
        for (x, c) in row.iter_mut().enumerate() {
            let i = y * w as usize + x;
            let dc = depth(i);
            let empty = dc >= FAR_DEPTH_BITS;
            let lc = if empty { 0.0 } else { log2(view_distance(u, dc)) };
            let mut sum = 0.0f32;
            for [ox, oy] in u.edl_offsets {
                let (nx, ny) = (x as i32 + ox, y as i32 + oy);
                if nx < 0 || ny < 0 || nx >= w || ny >= h {
                    continue;
                }
                let dn = depth(ny as usize * w as usize + nx as usize);
                if dn >= FAR_DEPTH_BITS {
                    continue;
                }
                sum += if empty { 100.0 } else { 0.0f32.max(lc + -log2(view_distance(u, dn))) };
            }
            if empty && sum == 0.0 {
                continue;
            }
            let shade = exp2_neg(-((sum * 0.125) * u.edl_k));
            let mut out = *c & 0xff00_0000;
            for s in (0..24).step_by(8) {
                let v = ((*c >> s) & 0xff) as f32 * shade + 0.5;
                out |= (v.floor() as u32).min(255) << s;
            }
            *c = out;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::look::{Edl, Look};

    /// A 32 × 24 frame of planes `near_m`..`far_m` with EDL at `strength`.
    fn uniforms(near_m: f32, far_m: f32) -> PostUniforms {
        let look = Look { edl: Some(Edl::DEFAULT), ..Look::PLAIN };
        // A perspective matrix (the identity, whose row 3 is (0, 0, 0, 1), reads as orthographic).
        let m = glam::Mat4::perspective_rh_gl(1.0, 32.0 / 24.0, near_m, far_m);
        look.post_uniforms(&m, 32, 24, near_m, far_m, 0.0)
    }

    fn depth_at(u: &PostUniforms, w_m: f32) -> u32 {
        ((u.far_m - u.near_far_m2 / w_m) / u.far_minus_near_m).to_bits()
    }

    const GRAY: u32 = 0xff80_8080;
    const BG: u32 = 0xff40_3020;

    fn shade(u: &PostUniforms, dist: impl Fn(usize, usize) -> Option<f32>) -> Vec<u32> {
        let depth: Vec<u32> =
            (0..32 * 24).map(|i| dist(i % 32, i / 32).map_or(FAR_DEPTH_BITS, |w| depth_at(u, w))).collect();
        let mut color: Vec<u32> = depth.iter().map(|&d| if d >= FAR_DEPTH_BITS { BG } else { GRAY }).collect();
        edl(u, |i| depth[i], &mut color);
        color
    }

    #[test]
    fn flat_surfaces_keep_their_colour_and_steps_darken_the_far_side() {
        let u = uniforms(0.1, 1000.0);
        let flat = shade(&u, |_, _| Some(10.0));
        assert!(flat.iter().all(|&c| c == GRAY), "a surface facing the camera is not shaded");
        // Left half at 10 m, right half at 11 m: the far side's pixels next to the step darken.
        let step = shade(&u, |x, _| Some(if x < 16 { 10.0 } else { 11.0 }));
        let (near_edge, far_edge, far_inside) = (step[12 * 32 + 15], step[12 * 32 + 16], step[12 * 32 + 25]);
        assert_eq!(near_edge, GRAY);
        assert!(far_edge & 0xff < 0x40, "the far side of the step is dark: {far_edge:#x}");
        assert_eq!(far_inside, GRAY);
        assert_eq!(far_edge >> 24, 0xff, "alpha is kept");
    }

    #[test]
    fn background_next_to_points_is_outlined_and_elsewhere_untouched() {
        let u = uniforms(0.1, 1000.0);
        let c = shade(&u, |x, y| ((8..24).contains(&x) && (6..18).contains(&y)).then_some(10.0));
        assert_eq!(c[12 * 32 + 7], 0xff00_0000, "background beside points turns black");
        assert_eq!(c[12 * 32 + 2], BG, "background away from points keeps its colour");
        assert_eq!(c[12 * 32 + 12], GRAY);
    }

    #[test]
    fn shading_depends_on_ratios_not_metres() {
        // A 15 cm object a metre away and a 1 km tile from 5 km: the same shape, scaled 5000 times.
        let small = uniforms(0.001, 100.0);
        let large = uniforms(5.0, 500_000.0);
        let shape = |s: f32| move |x: usize, y: usize| Some(s * (1.0 + 0.004 * ((x * 7 + y * 3) % 11) as f32));
        let a = shade(&small, shape(1.0));
        let b = shade(&large, shape(5000.0));
        let worst = a.iter().zip(&b).map(|(p, q)| ((p & 0xff) as i32 - (q & 0xff) as i32).abs()).max().unwrap();
        assert!(worst <= 2, "the same shape shades alike at both scales (worst channel difference {worst})");
        assert!(a.iter().any(|&c| c != GRAY), "the shape is shaded at all");
    }
}
