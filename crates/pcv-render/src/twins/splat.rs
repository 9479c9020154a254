//! Point size as a post pass, the CPU twin of `kernels/splat.cu`: each pixel takes the nearest point
//! whose disk covers it among the visible points within the window radius, as an integer min of 64-bit
//! visibility words ([`word`]: depth bits, payload), or keeps its own word where no point covers it.
//!
//! A point at pixel q covers pixel p when 4 · |p − q|² ≤ N² for a fixed size N, or (adaptive) when
//! p = q or 4 · |p − q|² ≤ diameter², diameter = `adaptive_px_at_1m` / view distance, at most 2R
//! ([`adaptive_diam2`]: a near point stays a disk of the window's radius, not the window's square) —
//! the kernel's float operations, in its order, so both backends pick the same word. With a spacing per batch (a
//! level-of-detail pool), diameter = `adaptive_px_at_1m` · spacing[payload / BATCH_POINTS] / distance
//! (the payload is the point's index; one past the batches stays a pixel).
use super::post::{adaptive_diam2, adaptive_px, FAR_DEPTH_BITS};
use crate::gpu_data::{word_depth, word_payload, PostUniforms, BATCH_POINTS, SPLAT_MAX_RADIUS};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Splats the words `word(i)` of a `u.width × u.height` frame into `out`; `batch_spacing_m`: a spacing
/// per batch of points whose indices are the words' payloads, or `None`.
pub fn splat(
    u: &PostUniforms,
    word: impl Fn(usize) -> u64 + Sync,
    batch_spacing_m: Option<&[f32]>,
    out: &mut [AtomicU64],
) {
    let (w, h) = (u.width as usize, u.height as usize);
    assert_eq!(out.len(), w * h, "splat output size");
    let r = u.splat_radius_px.min(SPLAT_MAX_RADIUS) as i32;
    let n2 = (u.splat_diameter_px * u.splat_diameter_px) as i32;
    // Adaptive sizes: each pixel's squared diameter, once (the kernel computes it per tile element).
    let diam2: Vec<f32> = if u.splat_diameter_px == 0 {
        (0..w * h)
            .into_par_iter()
            .map(|i| {
                let w = word(i);
                let d = word_depth(w);
                let px = match batch_spacing_m {
                    Some(s) => {
                        s.get((word_payload(w) / BATCH_POINTS as u64) as usize).map_or(0.0, |s| u.adaptive_px_at_1m * s)
                    }
                    None => u.adaptive_px_at_1m,
                };
                let dm = if d < FAR_DEPTH_BITS { adaptive_px(u, px, d) } else { 0.0 };
                adaptive_diam2(dm, r)
            })
            .collect()
    } else {
        Vec::new()
    };
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let mut best = u64::MAX;
            for dy in -r..=r {
                let ny = y as i32 + dy;
                if ny < 0 || ny >= h as i32 {
                    continue;
                }
                for dx in -r..=r {
                    let nx = x as i32 + dx;
                    if nx < 0 || nx >= w as i32 {
                        continue;
                    }
                    let k = ny as usize * w + nx as usize;
                    let v = word(k);
                    if word_depth(v) >= FAR_DEPTH_BITS {
                        continue;
                    }
                    let q = super::post::splat_q(u, dx, dy);
                    let covers = if u.splat_diameter_px != 0 { q <= n2 } else { q == 0 || q as f32 <= diam2[k] };
                    if covers && v < best {
                        best = v;
                    }
                }
            }
            *o.get_mut() = if best != u64::MAX { best } else { word(y * w + x) };
        }
    });
}

/// The reference mode's separate buffers as visibility words (depth bits, colour).
pub fn reference_word(depth: &[std::sync::atomic::AtomicU32], color: &[u32], i: usize) -> u64 {
    crate::gpu_data::word(depth[i].load(Ordering::Relaxed), color[i] as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::look::{Look, PointSize};

    const EMPTY: u64 = crate::gpu_data::word(FAR_DEPTH_BITS, 0xffff_ffff);

    fn uniforms(size: PointSize, w: u32, h: u32, spacing_m: f32) -> PostUniforms {
        let look = Look { point_size: size, ..Look::PLAIN };
        let m = glam::Mat4::perspective_rh_gl(1.0, w as f32 / h as f32, 0.1, 100.0);
        look.post_uniforms(&m, w, h, 0.1, 100.0, spacing_m)
    }

    /// A depth value whose view distance is `w_m` (planes 0.1 and 100).
    fn depth_at(w_m: f32) -> u32 {
        let (n, f) = (0.1f32, 100.0f32);
        ((f - n * f / w_m) / (f - n)).to_bits()
    }

    /// Scatter: every visible word paints its disk, keeping the min — what the gather must equal.
    fn scatter(u: &PostUniforms, words: &[u64]) -> Vec<u64> {
        let (w, h) = (u.width as i32, u.height as i32);
        let mut best = vec![u64::MAX; words.len()];
        let r = u.splat_radius_px as i32;
        for (q, &v) in words.iter().enumerate() {
            if word_depth(v) >= FAR_DEPTH_BITS {
                continue;
            }
            let diam = if u.splat_diameter_px == 0 {
                super::super::post::adaptive_px(u, u.adaptive_px_at_1m, word_depth(v))
            } else {
                u.splat_diameter_px as f32
            };
            let (qx, qy) = (q as i32 % w, q as i32 / w);
            for dy in -r..=r {
                for dx in -r..=r {
                    let (x, y) = (qx + dx, qy + dy);
                    let d2 = super::super::post::splat_q(u, dx, dy);
                    let covers = if u.splat_diameter_px != 0 {
                        d2 <= (u.splat_diameter_px * u.splat_diameter_px) as i32
                    } else {
                        d2 == 0 || d2 as f32 <= diam * diam
                    };
                    if x >= 0 && y >= 0 && x < w && y < h && covers {
                        let i = (y * w + x) as usize;
                        best[i] = best[i].min(v);
                    }
                }
            }
        }
        best.iter().zip(words).map(|(&b, &own)| if b == u64::MAX { own } else { b }).collect()
    }

    fn random_words(w: u32, h: u32, density: f64, seed: u64) -> Vec<u64> {
        let mut s = seed;
        (0..w * h)
            .map(|i| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if (s >> 11) as f64 / (1u64 << 53) as f64 >= density {
                    return EMPTY;
                }
                let w_m = 0.5 + ((s >> 20) % 1000) as f32 * 0.05;
                crate::gpu_data::word(depth_at(w_m), i as u64)
            })
            .collect()
    }

    fn run(u: &PostUniforms, words: &[u64]) -> Vec<u64> {
        let mut out: Vec<AtomicU64> = (0..words.len()).map(|_| AtomicU64::new(0)).collect();
        splat(u, |i| words[i], None, &mut out);
        out.into_iter().map(AtomicU64::into_inner).collect()
    }

    #[test]
    fn gather_equals_scatter_for_every_size() {
        for (k, size) in [PointSize::Fixed(2), PointSize::Fixed(3), PointSize::Fixed(5), PointSize::Fixed(16)]
            .into_iter()
            .enumerate()
        {
            for density in [0.01, 0.2] {
                let u = uniforms(size, 61, 37, 0.0);
                let words = random_words(61, 37, density, 7 + k as u64);
                assert_eq!(run(&u, &words), scatter(&u, &words), "{size} at density {density}");
            }
        }
    }

    #[test]
    fn adaptive_points_grow_near_and_stay_small_far() {
        let u = uniforms(PointSize::Adaptive { max_px: 16 }, 64, 48, 0.05);
        let words = random_words(64, 48, 0.05, 3);
        assert_eq!(run(&u, &words), scatter(&u, &words));
        // One near point covers a wide disk; one far point stays a pixel.
        let mut one = vec![EMPTY; 64 * 48];
        one[24 * 64 + 20] = crate::gpu_data::word(depth_at(0.6), 1);
        one[24 * 64 + 50] = crate::gpu_data::word(depth_at(90.0), 2);
        let out = run(&u, &one);
        let covered = |id: u64| out.iter().filter(|&&v| v & 0xffff_ffff == id && v != EMPTY).count();
        assert!(covered(1) > 20, "near point covers {} px", covered(1));
        assert_eq!(covered(2), 1);
    }

    #[test]
    fn a_batch_of_coarser_spacing_gets_larger_points() {
        // Per metre of spacing; batch 0 (indices 0..4096) spaced 4 times as far apart as batch 1.
        let u = uniforms(PointSize::Adaptive { max_px: 16 }, 64, 48, 1.0);
        let spacing = [0.2f32, 0.05];
        let mut one = vec![EMPTY; 64 * 48];
        let bp = BATCH_POINTS as u64;
        one[24 * 64 + 16] = crate::gpu_data::word(depth_at(2.0), 7); // batch 0
        one[24 * 64 + 48] = crate::gpu_data::word(depth_at(2.0), bp + 7); // batch 1, same depth
        one[10 * 64 + 32] = crate::gpu_data::word(depth_at(2.0), 5 * bp); // past the batches
        let mut out: Vec<AtomicU64> = (0..one.len()).map(|_| AtomicU64::new(0)).collect();
        splat(&u, |i| one[i], Some(&spacing), &mut out);
        let out: Vec<u64> = out.into_iter().map(AtomicU64::into_inner).collect();
        let covered = |id: u64| out.iter().filter(|&&v| v & 0xffff_ffff == id && v != EMPTY).count();
        let (coarse, fine) = (covered(7), covered(bp + 7));
        assert!(coarse > 4 * fine && fine >= 1, "coarse batch covers {coarse} px, fine {fine} px");
        assert_eq!(covered(5 * bp), 1, "a payload past the batches stays a pixel");
        // The same as the frame's one spacing when every batch has it.
        let words = random_words(64, 48, 0.05, 3);
        let flat = uniforms(PointSize::Adaptive { max_px: 16 }, 64, 48, 0.05);
        let per_batch: Vec<f32> = vec![0.05; 4];
        let mut a: Vec<AtomicU64> = (0..words.len()).map(|_| AtomicU64::new(0)).collect();
        splat(&u, |i| words[i], Some(&per_batch), &mut a);
        let a: Vec<u64> = a.into_iter().map(AtomicU64::into_inner).collect();
        let b = run(&flat, &words);
        let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        // 0.05 · (px per metre) and the frame's px for 0.05 m round alike almost everywhere.
        assert!(differ <= words.len() / 100, "{differ} pixels differ from the frame-wide spacing");
    }

    #[test]
    fn nearest_wins_and_empty_pixels_keep_their_word() {
        let u = uniforms(PointSize::Fixed(3), 5, 5, 0.0);
        let mut words: Vec<u64> = (0..25).map(|i| crate::gpu_data::word(FAR_DEPTH_BITS, 1000 + i)).collect();
        words[6] = crate::gpu_data::word(depth_at(5.0), 7); // (1, 1), farther
        words[8] = crate::gpu_data::word(depth_at(2.0), 9); // (3, 1), nearer
        let out = run(&u, &words);
        assert_eq!(out[7], words[8], "between the two, the nearer point wins");
        assert_eq!(out[5], words[6]);
        assert_eq!(out[24], words[24], "a pixel no disk reaches keeps its own word (its background)");
    }
}
