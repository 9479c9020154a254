//! Per-batch decisions, the CPU twin of `kernels/batch.cuh`: the frustum test of a batch's box and
//! whether its 10-bit quantized coordinates are precise enough this frame.
//!
//! All are conservative, and use the rows of the screen matrix ([`super::project`]).
//! [`batch_occluded`] tests a box against the depth pyramid of occlusion culling ([`super::hzb`]). [`batch_culled`]:
//! every corner of the box lies outside one of the view's six planes (x < 0, x > width · w, y < 0,
//! y > height · w, z < 0, z > w) by a margin (1e-5 of the corner's row magnitudes) that covers float
//! rounding, so no point inside passes [`super::project::project`]. [`batch_quantized_ok`]: a point p
//! of the box moves by d (|d_k| ≤ 0.5001 · scale_k, plus two ulps of the coordinate for the decode);
//! its pixel x moves by (r0·d − x · r3·d) / w(p + d), at most Σ_k (|r0_k| + width |r3_k|) |d_k| / w_min
//! for a point in the view, where w_min is the smallest w over the box (likewise y). The batch is
//! decoded from 10 bits only when that is at most half a pixel (with 1% margin on w_min), and never when
//! the box reaches w ≤ 0. Same float operations in the same order as the kernel.
use crate::gpu_data::{Batch, FrameUniforms, HzbParams, HZB_TILE_LOG2};

/// Row `r` of `m` at corner `corner` of the box (bit 0: max x, bit 1: max y, bit 2: max z).
#[inline(always)]
pub(crate) fn corner_row(m: &[f32; 16], r: usize, b: &Batch, corner: u32) -> f32 {
    let x = if corner & 1 != 0 { b.max[0] } else { b.min[0] };
    let y = if corner & 2 != 0 { b.max[1] } else { b.min[1] };
    let z = if corner & 4 != 0 { b.max[2] } else { b.min[2] };
    super::project::row(m, r, x, y, z)
}

/// True when no point of the box can pass the projection's test (NaN never culls).
#[inline(always)]
pub fn batch_culled(f: &FrameUniforms, b: &Batch) -> bool {
    let m = &f.screen_from_world;
    let (wd, ht) = (f.width as f32, f.height as f32);
    let mut out_all = 0x3fu32;
    for c in 0..8 {
        let sx = corner_row(m, 0, b, c);
        let sy = corner_row(m, 1, b, c);
        let sz = corner_row(m, 2, b, c);
        let sw = corner_row(m, 3, b, c);
        out_all &= corner_outside(sx, sy, sz, sw, wd, ht);
    }
    out_all != 0
}

/// The planes of the view (bits 0–5: left, right, bottom, top, near, far) that a corner with rows
/// `sx, sy, sz, sw` lies outside of, with a margin of 10^-5 of its magnitude, for a `wd` × `ht` frame:
/// a box is culled when all its corners are outside one plane ([`batch_culled`], and the CPU's fused
/// group test `culled::group_hidden`).
#[inline(always)]
pub fn corner_outside(sx: f32, sy: f32, sz: f32, sw: f32, wd: f32, ht: f32) -> u32 {
    let mag = (sx.abs() + sy.abs()) + (sz.abs() + sw.abs() * ((wd + ht) + 1.0));
    let mx = mag * 1e-5;
    let mut out = 0u32;
    out |= (-sx > mx) as u32;
    out |= ((-wd).mul_add(sw, sx) > mx) as u32 * 2;
    out |= (-sy > mx) as u32 * 4;
    out |= ((-ht).mul_add(sw, sy) > mx) as u32 * 8;
    out |= (-sz > mx) as u32 * 16;
    out |= ((sz + -sw) > mx) as u32 * 32;
    out
}

/// Whether decoding this batch from 10 bits moves no point by more than half a pixel this frame.
#[inline(always)]
pub fn batch_quantized_ok(f: &FrameUniforms, b: &Batch) -> bool {
    let m = &f.screen_from_world;
    let (wd, ht) = (f.width as f32, f.height as f32);
    let mut w_min = m[15];
    let (mut ex, mut ey) = (0.0f32, 0.0f32);
    for k in 0..3 {
        let r3 = m[4 * k + 3];
        w_min += (r3 * b.min[k]).min(r3 * b.max[k]);
        let mag = b.min[k].abs().max(b.max[k].abs());
        let d = b.scale[k] * 0.5001 + mag * 2.384_185_8e-7; // 2^-22
        ex += (m[4 * k].abs() + wd * r3.abs()) * d;
        ey += (m[4 * k + 1].abs() + ht * r3.abs()) * d;
    }
    let half_w = (w_min * 0.99) * 0.5;
    w_min > 0.0 && ex <= half_w && ey <= half_w
}

/// How far a computed depth of a point of the box can be from the exact one, twice (a point's and a
/// corner's; the kernel's `pcv_depth_rounding`): each row is three FMAs rounding by at most u = 2^-24 of
/// a partial sum, so row r is off by at most 3u S_r (S_r: its terms' magnitudes over the box), the
/// depth by 3u (S_2 + S_3) / w + 2u; twice that, as 8u (S_2 + S_3) / w_min + 8u.
#[inline(always)]
pub fn depth_rounding(f: &FrameUniforms, b: &Batch, w_min: f32) -> f32 {
    let m = &f.screen_from_world;
    let mut s = m[14].abs() + m[15].abs();
    for k in 0..3 {
        let a = b.min[k].abs().max(b.max[k].abs());
        s += (m[4 * k + 2].abs() + m[4 * k + 3].abs()) * a;
    }
    (s / w_min + 1.0) * 4.768_371_6e-7 // 8 * 2^-24
}

/// True when no point of the box can win a pixel against the depth pyramid `hzb` (the kernel's
/// `pcv_batch_occluded`): every point lies strictly behind the largest depth under the box's screen
/// rectangle (its corners' pixels widened by one, read at the finest pyramid level where it spans at
/// most 8 × 8 cells), its depth bounded below by the smallest corner depth
/// less the rounding bound [`depth_rounding`]; only for boxes
/// wholly in front of the camera.
#[inline(always)]
pub fn batch_occluded(f: &FrameUniforms, h: &HzbParams, b: &Batch, hzb: &[u32]) -> bool {
    match corner_rect(f, b) {
        Some((rect, dmin, wmin)) => behind_pyramid(f, h, hzb, b, rect, dmin, wmin),
        None => false,
    }
}

/// The box's 8 corners projected: x min, x max, y min, y max of their pixel coordinates, their smallest
/// depth and their smallest w; `None` where a corner lies at or behind the camera (or is NaN).
#[inline(always)]
pub fn corner_rect(f: &FrameUniforms, b: &Batch) -> Option<([f32; 4], f32, f32)> {
    let m = &f.screen_from_world;
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY, f32::NEG_INFINITY);
    let (mut dmin, mut wmin) = (f32::INFINITY, f32::INFINITY);
    for c in 0..8 {
        let sw = corner_row(m, 3, b, c);
        if sw.is_nan() || sw <= 0.0 {
            return None;
        }
        let inv_w = 1.0 / sw;
        let sx = corner_row(m, 0, b, c) * inv_w;
        let sy = corner_row(m, 1, b, c) * inv_w;
        let d = corner_row(m, 2, b, c) * inv_w;
        xmin = xmin.min(sx);
        xmax = xmax.max(sx);
        ymin = ymin.min(sy);
        ymax = ymax.max(sy);
        dmin = dmin.min(d);
        wmin = wmin.min(sw);
    }
    Some(([xmin, xmax, ymin, ymax], dmin, wmin))
}

/// The pyramid step of [`batch_occluded`] (and of the CPU's fused group test, `culled::group_hidden`),
/// given the box's projected corners: `rect` = x min, x max, y min, y max of their pixel coordinates,
/// `dmin` their smallest depth, `wmin` their smallest w (all corners in front of the camera).
#[inline(always)]
pub fn behind_pyramid(
    f: &FrameUniforms,
    h: &HzbParams,
    hzb: &[u32],
    b: &Batch,
    rect: [f32; 4],
    dmin: f32,
    wmin: f32,
) -> bool {
    let Some(PyramidWindow { d_low, level: l, cx0, cx1, cy0, cy1 }) = pyramid_window(f, h, b, rect, dmin, wmin) else {
        return false;
    };
    // The pyramid holds depths in [0, far] (positive floats, ordered as their bits, as `d_low`'s):
    // once a cell is at least `d_low`, the box is not behind it and the rest need not be read (an
    // early "no" is conservative whatever the cells hold).
    let d_bits = d_low.to_bits();
    let mut hmax = 0u32;
    for cy in cy0..=cy1 {
        let row = (h.offset[l] + cy * h.width[l]) as usize;
        for &v in &hzb[row + cx0 as usize..=row + cx1 as usize] {
            hmax = hmax.max(v);
        }
        if hmax >= d_bits {
            return false;
        }
    }
    d_low > f32::from_bits(hmax)
}

/// The kernels' `pcv_batch_under_pyramid`: a box's nearest depth lowered by the draw's rounding and the
/// largest pyramid depth under its rectangle, or `None` where the box cannot be compared (a corner at
/// or behind the camera, its nearest depth at or before the near plane, its rectangle off the frame).
#[inline(always)]
pub fn under_pyramid(f: &FrameUniforms, h: &HzbParams, b: &Batch, hzb: &[u32]) -> Option<(f32, u32)> {
    let (rect, dmin, wmin) = corner_rect(f, b)?;
    let PyramidWindow { d_low, level: l, cx0, cx1, cy0, cy1 } = pyramid_window(f, h, b, rect, dmin, wmin)?;
    let mut hmax = 0u32;
    for cy in cy0..=cy1 {
        let row = (h.offset[l] + cy * h.width[l]) as usize;
        hmax = hzb[row + cx0 as usize..=row + cx1 as usize].iter().fold(hmax, |m, &v| m.max(v));
    }
    Some((d_low, hmax))
}

/// The cells of the pyramid that [`behind_pyramid`] compares a box with: the level whose cells under the
/// box's rectangle (widened by a pixel) are at most 8 × 8, and the box's nearest depth lowered by the
/// draw's rounding.
struct PyramidWindow {
    d_low: f32,
    level: usize,
    cx0: u32,
    cx1: u32,
    cy0: u32,
    cy1: u32,
}

/// The [`PyramidWindow`] of a box (as [`behind_pyramid`] takes it), or `None` where the box cannot be
/// behind the pyramid: its nearest depth at or before the near plane (or NaN), or its rectangle off the frame.
#[inline(always)]
fn pyramid_window(
    f: &FrameUniforms,
    h: &HzbParams,
    b: &Batch,
    rect: [f32; 4],
    dmin: f32,
    wmin: f32,
) -> Option<PyramidWindow> {
    let [xmin, xmax, ymin, ymax] = rect;
    let d_low = dmin + -depth_rounding(f, b, wmin);
    if d_low.is_nan() || d_low <= 0.0 {
        return None;
    }
    let x0 = (xmin.floor() + -1.0).max(0.0);
    let x1 = (xmax.floor() + 1.0).min((f.width - 1) as f32);
    let y0 = (ymin.floor() + -1.0).max(0.0);
    let y1 = (ymax.floor() + 1.0).min((f.height - 1) as f32);
    if !(x0 <= x1 && y0 <= y1) {
        return None;
    }
    let (ix0, ix1, iy0, iy1) = (x0 as u32, x1 as u32, y0 as u32, y1 as u32);
    let mut l = 0usize;
    let t = HZB_TILE_LOG2 as usize;
    while l + 1 < h.levels as usize
        && ((ix1 >> (t + l)) - (ix0 >> (t + l)) > 7 || (iy1 >> (t + l)) - (iy0 >> (t + l)) > 7)
    {
        l += 1;
    }
    let (cx0, cx1) = (ix0 >> (t + l), (ix1 >> (t + l)).min(h.width[l] - 1));
    let (cy0, cy1) = (iy0 >> (t + l), (iy1 >> (t + l)).min(h.height[l] - 1));
    Some(PyramidWindow { d_low, level: l, cx0, cx1, cy0, cy1 })
}

/// Coordinate `k` of a quantized word (x in bits 0–9, y in 10–19, z in 20–29).
#[inline(always)]
pub fn dequantize(b: &Batch, word: u32, k: usize) -> f32 {
    let q = (word >> (10 * k)) & 1023;
    (q as f32).mul_add(b.scale[k], b.min[k])
}

/// A quantized word decoded to a position.
#[inline(always)]
pub fn dequantize_pos(b: &Batch, word: u32) -> [f32; 3] {
    [dequantize(b, word, 0), dequantize(b, word, 1), dequantize(b, word, 2)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::BATCH_POINTS;
    use crate::twins::preprocess;
    use glam::Vec3;
    use pcv_camera::{FlyCamera, Pose};

    /// The pyramid step with its early exit decides as reading every cell under the rectangle does
    /// (the step before it), on random rectangles (inside, across and outside the frame, tiny to
    /// whole-frame) against random pyramids of depths in [0, 1] (some flat), for depths in front of,
    /// among and behind the cells'.
    #[test]
    fn behind_pyramid_reads_as_few_cells_and_decides_alike() {
        /// Every cell of the window read, then compared (the step before the early exit).
        fn full_scan(
            f: &FrameUniforms,
            h: &HzbParams,
            hzb: &[u32],
            b: &Batch,
            rect: [f32; 4],
            dmin: f32,
            wmin: f32,
        ) -> bool {
            let Some(PyramidWindow { d_low, level: l, cx0, cx1, cy0, cy1 }) = pyramid_window(f, h, b, rect, dmin, wmin)
            else {
                return false;
            };
            let mut hmax = 0u32;
            for cy in cy0..=cy1 {
                for cx in cx0..=cx1 {
                    hmax = hmax.max(hzb[(h.offset[l] + cy * h.width[l] + cx) as usize]);
                }
            }
            d_low > f32::from_bits(hmax)
        }
        let cam = FlyCamera::for_cloud(pcv_io::Bounds { min: Vec3::splat(-1.0), max: Vec3::splat(1.0) }, true);
        let mut counter = 0u64;
        let mut next = move || {
            counter += 1;
            crate::twins::rng::uniform(1234, counter, 0)
        };
        let (mut hidden, mut shown) = (0, 0);
        for (w, ht) in [(320u32, 180u32), (97, 61), (1, 1), (1920, 1080)] {
            let f = crate::FrameParams::new(cam.clip_from_world(w, ht), w, ht).uniforms();
            let hp = HzbParams::for_frame(w, ht);
            for _ in 0..3 {
                let flat = next() < 0.3;
                let level0: Vec<u32> =
                    (0..(hp.width[0] * hp.height[0])).map(|_| if flat { 0.5f32 } else { next() }.to_bits()).collect();
                let depth = |i: usize| level0[((i / w as usize) / 4) * hp.width[0] as usize + (i % w as usize) / 4];
                let mut hzb = vec![0u32; hp.total as usize];
                super::super::hzb::build(&hp, w, ht, depth, &mut hzb);
                for k in 0..4000 {
                    let size = [1.0, 8.0, 60.0, 400.0, 3000.0][k % 5] * next();
                    let (cx, cy) = ((next() * 1.4 - 0.2) * w as f32, (next() * 1.4 - 0.2) * ht as f32);
                    let rect = [cx - size * next(), cx + size * next(), cy - size * next(), cy + size * next()];
                    let dmin = next() * 1.2 - 0.1;
                    let b = Batch { min: [-0.1; 3], max: [0.1; 3], scale: [0.0; 3], num_points: 1 };
                    let want = full_scan(&f, &hp, &hzb, &b, rect, dmin, 2.0);
                    assert_eq!(
                        behind_pyramid(&f, &hp, &hzb, &b, rect, dmin, 2.0),
                        want,
                        "{w}x{ht}, rect {rect:?}, depth {dmin}"
                    );
                    hidden += want as u32;
                    shown += !want as u32;
                }
            }
        }
        assert!(hidden > 1000 && shown > 1000, "both answers common: {hidden} hidden, {shown} shown");
    }

    #[test]
    fn two_to_minus_22_and_minus_21() {
        assert_eq!(2.384_185_8e-7f32, (2.0f32).powi(-22));
        assert_eq!(4.768_371_6e-7f32, (2.0f32).powi(-21));
    }

    /// Screen position in pixels (f64, unrounded) of a point the projection keeps.
    fn screen(f: &FrameUniforms, p: [f32; 3]) -> Option<(f64, f64)> {
        super::super::project::project(f, p)?;
        let m = f.screen_from_world.map(|v| v as f64);
        let row = |r: usize| m[r] * p[0] as f64 + m[4 + r] * p[1] as f64 + m[8 + r] * p[2] as f64 + m[12 + r];
        let (sx, sy, sw) = (row(0), row(1), row(3));
        Some((sx / sw, sy / sw))
    }

    /// The quantization bound: wherever a batch is read from 10 bits, no visible point of it moves by
    /// more than half a pixel, at poses from far away down to inside the cloud, a few cm from points.
    #[test]
    fn quantized_batches_never_move_a_point_by_more_than_half_a_pixel() {
        let cloud = pcv_io::scene::generate(300_000, 9, false);
        let g = preprocess::grid_params(&cloud.bounds, cloud.points.len() as u64);
        let sorted = preprocess::sort_by_cells(&g, &cloud.points);
        let p = preprocess::prepare(&sorted);
        let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
        let center = cloud.bounds.center();
        let (mut quantized, mut full, mut worst_px) = (0u32, 0u32, 0.0f64);
        for k in 0..40u32 {
            // From 3 cloud radii away down to right next to a point of the cloud.
            let t = k as f32 / 39.0;
            let target = Vec3::from_array(sorted[(k as usize * 7919) % sorted.len()].pos);
            let eye = if k % 2 == 0 {
                center + (Vec3::new(-1.0, 0.3, 0.2) * cloud.bounds.radius() * 3.0 * (1.0 - t))
            } else {
                target + Vec3::new(-0.02, 0.01, 0.005) * (1.0 + 10.0 * t)
            };
            let to = target - eye;
            let pose = Pose { eye, yaw_rad: to.y.atan2(to.x), pitch_rad: (to.z / to.length()).asin() };
            cam.pose = pose;
            for (w, h) in [(1920u32, 1080u32), (3840, 2160)] {
                let f = crate::FrameParams::new(cam.clip_from_world(w, h), w, h).uniforms();
                for (b, batch) in p.batches.iter().enumerate() {
                    if batch_culled(&f, batch) {
                        continue;
                    }
                    if !batch_quantized_ok(&f, batch) {
                        full += 1;
                        continue;
                    }
                    quantized += 1;
                    let first = b * BATCH_POINTS as usize;
                    for j in first..first + batch.num_points as usize {
                        let Some((x0, y0)) = screen(&f, p.positions[j]) else { continue };
                        let Some((x1, y1)) = screen(&f, dequantize_pos(batch, p.quant[j])) else { continue };
                        let d = (x1 - x0).abs().max((y1 - y0).abs());
                        worst_px = worst_px.max(d);
                        assert!(d <= 0.5, "pose {k} {w}x{h}: point {j} of batch {b} moves {d} px when quantized");
                    }
                }
            }
        }
        println!("quantized {quantized} batch-frames, full precision {full}; worst move {worst_px:.4} px");
        assert!(quantized > 0 && full > 0, "the poses should need both precisions ({quantized} / {full})");
    }

    #[test]
    fn culled_batches_hold_no_visible_point() {
        let cloud = pcv_io::scene::generate(100_000, 4, false);
        let g = preprocess::grid_params(&cloud.bounds, cloud.points.len() as u64);
        let p = preprocess::prepare(&preprocess::sort_by_cells(&g, &cloud.points));
        let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
        let mut culled = 0;
        for k in 0..16 {
            cam.pose = Pose { yaw_rad: k as f32 * 0.4, pitch_rad: (k as f32 * 0.7).sin() * 0.6, ..cam.start };
            let f = crate::FrameParams::new(cam.clip_from_world(640, 360), 640, 360).uniforms();
            for (b, batch) in p.batches.iter().enumerate() {
                if batch_culled(&f, batch) {
                    culled += 1;
                    let first = b * BATCH_POINTS as usize;
                    for j in first..first + batch.num_points as usize {
                        assert!(
                            super::super::project::project(&f, p.positions[j]).is_none(),
                            "culled batch {b} holds visible point {j}"
                        );
                    }
                }
            }
        }
        assert!(culled > 0, "some batches should be culled");
    }
}
