//! Visibility-buffer mode, the CPU twin of `kernels/vis.cu`: one 64-bit atomic min per point of the word
//! (depth bits, point index) ([`word`]), reading positions only, then a resolve that reads the color of
//! each pixel's visible point. The nearest point wins; at an exact depth tie the smaller index wins,
//! so the result does not depend on the order the threads run in. [`vis_disk`] is the same pass with
//! point size: each point writes its whole disk (the other way to point size than the splat post pass).
//! The CPU backend's fast pass (projection 16 points at a time, per-thread buffers) is `crate::cpu::draw`,
//! tested against this one.
use super::clear::FAR_DEPTH_BITS;
use super::depth::CHUNK_POINTS;
use super::post::{adaptive_diam2, adaptive_px};
use super::project::project;
use crate::gpu_data::{word, word_depth, word_payload, FrameUniforms, PostUniforms, SPLAT_MAX_RADIUS};
use crate::simd::with_fma;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// The payload that marks a pixel no point reached.
pub use crate::gpu_data::EMPTY_PAYLOAD as EMPTY_INDEX;

pub fn vis_clear(vis: &mut [AtomicU64]) {
    let v = word(FAR_DEPTH_BITS, EMPTY_INDEX);
    vis.par_iter_mut().for_each(|c| *c.get_mut() = v);
}

/// The atomic min of one projected point (with the early depth test).
#[inline(always)]
pub fn vis_point(f: &FrameUniforms, pos: [f32; 3], index: u64, vis: &[AtomicU64]) {
    if let Some(p) = project(f, pos) {
        let v = word(p.depth_bits, index);
        min_early(&vis[p.index(f.width)], v);
    }
}

/// The pass over every point: point `i` takes the atomic min of the word of its depth and `i`.
pub fn vis(f: &FrameUniforms, positions: &[[f32; 3]], vis: &[AtomicU64]) {
    assert!((positions.len() as u64) < EMPTY_INDEX, "point indices must fit below 2^34 - 1");
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    positions
        .par_chunks(CHUNK_POINTS)
        .enumerate()
        .for_each(|(c, chunk)| vis_chunk(f, chunk, (c * CHUNK_POINTS) as u64, vis));
}

with_fma! {
    fn vis_chunk(f: &FrameUniforms, chunk: &[[f32; 3]], base: u64, vis: &[AtomicU64]) {
        for (j, &pos) in chunk.iter().enumerate() {
            vis_point(f, pos, base + j as u64, vis);
        }
    }
}

/// The kernels' atomic minimum with the early depth test: `fetch_min` (a locked read-modify-write) only
/// where `v` is below the word the cell holds when read.
#[inline(always)]
pub fn min_early(cell: &AtomicU64, v: u64) {
    if v < cell.load(Ordering::Relaxed) {
        cell.fetch_min(v, Ordering::Relaxed);
    }
}

pub fn vis_resolve(f: &FrameUniforms, vis: &[AtomicU64], colors: &[u32], color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    let w = f.width.max(1) as usize;
    color.par_chunks_mut(w).zip(vis.par_chunks(w)).enumerate().for_each(|(y, (crow, vrow))| {
        let bg = super::post::background(f, y as u32);
        for (c, v) in crow.iter_mut().zip(vrow) {
            let idx = word_payload(v.load(Ordering::Relaxed));
            *c = if idx == EMPTY_INDEX { bg } else { colors[idx as usize] };
        }
    });
}

/// Point size in the raster pass (the kernel's `pcv_vis_disk`): each point takes the atomic min over
/// every pixel of its disk — fixed diameter, or adaptive by its view distance — with the splat's
/// coverage rule ([`super::splat`]).
pub fn vis_disk(f: &FrameUniforms, u: &PostUniforms, positions: &[[f32; 3]], vis: &[AtomicU64]) {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert!((positions.len() as u64) < EMPTY_INDEX, "point indices must fit below 2^34 - 1");
    positions
        .par_chunks(CHUNK_POINTS)
        .enumerate()
        .for_each(|(c, chunk)| vis_disk_chunk(f, u, chunk, c * CHUNK_POINTS, vis));
}

with_fma! {
    fn vis_disk_chunk(f: &FrameUniforms, u: &PostUniforms, chunk: &[[f32; 3]], base: usize, vis: &[AtomicU64]) {
        let r = u.splat_radius_px.min(SPLAT_MAX_RADIUS) as i32;
        let n2 = (u.splat_diameter_px * u.splat_diameter_px) as i32;
        for (j, &pos) in chunk.iter().enumerate() {
            let Some(p) = project(f, pos) else { continue };
            let v = word(p.depth_bits, (base + j) as u64);
            let dm2 = if u.splat_diameter_px == 0 && p.depth_bits < FAR_DEPTH_BITS {
                adaptive_diam2(adaptive_px(u, u.adaptive_px_at_1m, p.depth_bits), r)
            } else {
                0.0
            };
            for dy in -r..=r {
                let cy = p.y_px as i32 + dy;
                if cy < 0 || cy >= f.height as i32 {
                    continue;
                }
                for dx in -r..=r {
                    let cx = p.x_px as i32 + dx;
                    if cx < 0 || cx >= f.width as i32 {
                        continue;
                    }
                    let q = super::post::splat_q(u, dx, dy);
                    let covers = if u.splat_diameter_px != 0 { q <= n2 } else { q == 0 || q as f32 <= dm2 };
                    if covers {
                        min_early(&vis[cy as usize * f.width as usize + cx as usize], v);
                    }
                }
            }
        }
    }
}

/// The depth bits of a visibility buffer (the high 32 bits of each word).
pub fn vis_depth_bits(vis: &[AtomicU64]) -> Vec<u32> {
    vis.iter().map(|v| word_depth(v.load(Ordering::Relaxed))).collect()
}
