//! High quality, the CPU twin of `kernels/blend.cu` and `kernels/blend.cuh`: two 64-bit sums a pixel
//! (red and green, blue and a count), every point within the blend window of its pixel's final depth
//! added ([`blend_at`]), then each pixel's mean rounded to nearest ([`blend_resolve`]), or where no point
//! blended what [`super::vis::vis_resolve`] writes. The sums are integers, so the order points land in
//! does not matter: the CUDA sums equal these to the bit. [`blend`] is the vis mode's pass over every
//! point; the culled modes' pass over the batches in view is [`super::culled::blend_list`], which skips
//! the batches wholly past the window ([`batch_beyond_window`], `kernels/blend.cuh`). The CPU backend
//! runs these twins as they are.
use super::batch::under_pyramid;
use super::depth::CHUNK_POINTS;
use super::post::{background, view_distance};
use super::project::project;
use super::vis::EMPTY_INDEX;
use crate::gpu_data::{word_depth, word_payload, Batch, FrameUniforms, HzbParams, PostUniforms};
use crate::simd::with_fma;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// The blend's sums: two words a pixel (`pcv_blend_clear`).
pub fn blend_clear(accum: &mut [AtomicU64]) {
    accum.par_iter_mut().for_each(|a| *a.get_mut() = 0);
}

/// A fresh zeroed pair of sums for a `width × height` frame.
pub fn blend_sums(width_px: u32, height_px: u32) -> Vec<AtomicU64> {
    (0..2 * width_px as usize * height_px as usize).map(|_| AtomicU64::new(0)).collect()
}

/// What the blend step reads and writes: the frame's final visibility buffer, the points' colours and
/// the sums.
#[derive(Clone, Copy)]
pub struct BlendTarget<'a> {
    pub u: &'a PostUniforms,
    pub vis: &'a [AtomicU64],
    pub colors: &'a [u32],
    pub accum: &'a [AtomicU64],
}

/// The kernel's `pcv_blend_at`: point `index`, projected to pixel `pixel` with depth bits `d`, adds its
/// colour to the pixel's sums when its view distance is at most `blend_window` times the nearest's.
#[inline(always)]
pub fn blend_at(t: &BlendTarget<'_>, pixel: usize, d: u32, index: u64) {
    let nearest = word_depth(t.vis[pixel].load(Ordering::Relaxed));
    if d > nearest {
        let w = view_distance(t.u, d);
        let w_near = view_distance(t.u, nearest);
        // Past the window, or NaN (as the kernel's `!(w <= ...)`).
        let within = w.partial_cmp(&(w_near * t.u.blend_window));
        if !matches!(within, Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)) {
            return;
        }
    }
    let c = t.colors[index as usize];
    let rg = (c & 0xff) as u64 | (((c >> 8) & 0xff) as u64) << 32;
    let bn = ((c >> 16) & 0xff) as u64 | 1 << 32;
    t.accum[2 * pixel].fetch_add(rg, Ordering::Relaxed);
    t.accum[2 * pixel + 1].fetch_add(bn, Ordering::Relaxed);
}

/// The vis mode's pass (`pcv_blend`): every point's blend step.
pub fn blend(f: &FrameUniforms, positions: &[[f32; 3]], t: &BlendTarget<'_>) {
    assert_eq!(t.vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert_eq!(t.accum.len(), 2 * t.vis.len(), "two sums a pixel");
    assert!(t.colors.len() >= positions.len(), "a colour a point");
    positions
        .par_chunks(CHUNK_POINTS)
        .enumerate()
        .for_each(|(c, chunk)| blend_chunk(f, chunk, (c * CHUNK_POINTS) as u64, t));
}

with_fma! {
    fn blend_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], base: u64, t: &BlendTarget<'_>) {
        for (j, &pos) in chunk.iter().enumerate() {
            if let Some(p) = project(f, pos) {
                blend_at(t, p.index(f.width), p.depth_bits, base + j as u64);
            }
        }
    }
}

/// The kernels' `pcv_batch_beyond_window`: whether every point of box `b` lies past the blend window of
/// the pixels it can reach — its nearest view distance beyond `blend_window` (times 1.0001, for the
/// distances' rounding) times the farthest under its rectangle in `hzb`, a pyramid of the final buffer.
#[inline(always)]
pub fn batch_beyond_window(f: &FrameUniforms, u: &PostUniforms, h: &HzbParams, b: &Batch, hzb: &[u32]) -> bool {
    match under_pyramid(f, h, b, hzb) {
        Some((d_low, hmax)) => view_distance(u, d_low.to_bits()) > view_distance(u, hmax) * (u.blend_window * 1.0001),
        None => false,
    }
}

/// The mean colour of one pixel's sums, rounded to nearest (opaque), or `None` where no point blended.
pub fn mean_color(rg: u64, bn: u64) -> Option<u32> {
    let count = (bn >> 32) as u32;
    if count == 0 {
        return None;
    }
    let (n, half) = (count as u64, (count / 2) as u64);
    let r = ((rg & 0xffff_ffff) + half) / n;
    let g = ((rg >> 32) + half) / n;
    let b = ((bn & 0xffff_ffff) + half) / n;
    Some(r as u32 | (g as u32) << 8 | (b as u32) << 16 | 0xff00_0000)
}

/// The resolve of a blended frame (`pcv_blend_resolve`): each pixel's mean, else its visible point's
/// colour, else the background.
pub fn blend_resolve(f: &FrameUniforms, vis: &[AtomicU64], colors: &[u32], accum: &[AtomicU64], color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    assert_eq!(accum.len(), 2 * vis.len(), "two sums a pixel");
    let w = f.width.max(1) as usize;
    color.par_chunks_mut(w).zip(vis.par_chunks(w)).zip(accum.par_chunks(2 * w)).enumerate().for_each(
        |(y, ((crow, vrow), arow))| {
            let bg = background(f, y as u32);
            for (x, (c, v)) in crow.iter_mut().zip(vrow).enumerate() {
                let (rg, bn) = (arow[2 * x].load(Ordering::Relaxed), arow[2 * x + 1].load(Ordering::Relaxed));
                *c = mean_color(rg, bn).unwrap_or_else(|| {
                    let idx = word_payload(v.load(Ordering::Relaxed));
                    if idx == EMPTY_INDEX {
                        bg
                    } else {
                        colors[idx as usize]
                    }
                });
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::word;

    #[test]
    fn the_mean_rounds_to_nearest_and_an_empty_pixel_has_none() {
        // Three points: red 10, 11, 11 -> 10.67 -> 11; green 0, 0, 1 -> 0.33 -> 0; blue 255 each.
        let rg = (10 + 11 + 11) as u64 | 1 << 32;
        let bn = (3 * 255) as u64 | 3 << 32;
        assert_eq!(mean_color(rg, bn), Some(11 | 255 << 16 | 0xff00_0000));
        assert_eq!(mean_color(0, 0), None);
    }

    #[test]
    fn a_point_blends_within_the_window_and_not_past_it() {
        let u = PostUniforms {
            near_m: 1.0,
            far_m: 101.0,
            near_far_m2: 101.0,
            far_minus_near_m: 100.0,
            ortho: 1, // linear depth: distance = 1 + 100 d
            blend_window: 1.01,
            ..Default::default()
        };
        let nearest_bits = 0.49f32.to_bits(); // 50 m
        let vis = [AtomicU64::new(word(nearest_bits, 0))];
        let accum = blend_sums(1, 1);
        let colors = [0xff00_00ffu32, 0xff00_ff00, 0xffff_0000];
        let t = BlendTarget { u: &u, vis: &vis, colors: &colors, accum: &accum };
        blend_at(&t, 0, nearest_bits, 0); // the nearest itself
        blend_at(&t, 0, 0.4935f32.to_bits(), 1); // 50.35 m: within 1 %
        blend_at(&t, 0, 0.497f32.to_bits(), 2); // 50.7 m: past it
        let (rg, bn) = (accum[0].load(Ordering::Relaxed), accum[1].load(Ordering::Relaxed));
        assert_eq!(bn >> 32, 2, "two points blend");
        assert_eq!(mean_color(rg, bn), Some(128 | 128 << 8 | 0xff00_0000));
    }
}
