//! A frame's coverage mask: the coarse cells of the screen where a drawn batch may have put a point,
//! so that the depth pyramid and the private buffers' merge ([`super::private`]) skip the rest of the
//! private buffers, which hold `u64::MAX` there (most of a buffer's lines hold no word at the merge).
//!
//! How it works: the screen is cut into cells of [`CELL_W_PX`] × [`CELL_H_PX`] pixels. For each batch
//! a pass draws ([`Cover::add_batches`], the lists of the culled modes' two phases), the box's eight
//! corners are projected in f64; where every corner lies in front of the eye (w > 0 over the box, which
//! is convex and w linear), every point of the box projects inside the rectangle of the corners'
//! pixel coordinates, up to the f32 rounding of the draw's projection: the rectangle is widened by
//! one pixel plus a bound of that rounding (each row off by at most 4u of its terms' magnitudes S_r
//! over the box, u = 2^-24, so a pixel coordinate by (4u S_0 + 4u (width + height + 1) S_3) / w_min,
//! plus 4u (width + height); this is doubled). In the quant mode the box is first widened as the group
//! tests widen it (`culled::test_box`: by a step and 2^-20 of the coordinate), so it holds the decoded
//! points. A box that reaches w ≤ 0, or anything not finite, marks the whole screen. The cells the
//! rectangles touch are marked (a running sum per cell row: two updates per row a rectangle spans).
//! The mask is made per frame (phase 1's list, then phase 2's is added), so it never carries over.
use super::culled::test_box;
use crate::gpu_data::{Batch, FrameUniforms};

/// A cell's width in pixels (a multiple of the merge's block, `private::MERGE_BLOCK`).
pub const CELL_W_PX: usize = 64;
/// A cell's height in rows (the depth pyramid's tile height, so a tile row reads one cell row).
pub const CELL_H_PX: usize = 4;

/// Whether pixel column `x_px` of a row lies in a marked cell, given the row's cells as
/// [`Cover::row_cells`] gives them (`None`: every cell of the row is marked).
#[inline(always)]
pub fn marked(cells: Option<&[u8]>, x_px: usize) -> bool {
    cells.is_none_or(|cells| cells[x_px / CELL_W_PX] != 0)
}

/// Whether the culled modes use a coverage mask: unless `PCV_CPU_MASK=0` (asked once).
pub fn wanted() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("PCV_CPU_MASK").is_none_or(|v| v != "0"))
}

/// The cells of a `width × height` frame that a drawn batch may reach (see the module doc).
pub struct Cover {
    width: usize,
    height: usize,
    cols: usize,
    /// One byte a cell, rows of `cols` cells: nonzero where a batch may have drawn.
    pub(super) cells: Vec<u8>,
}

impl Cover {
    /// A mask with no cell marked.
    pub fn new(width: u32, height: u32) -> Self {
        let (width, height) = (width as usize, height as usize);
        let cols = width.div_ceil(CELL_W_PX);
        Cover { width, height, cols, cells: vec![0; cols * height.div_ceil(CELL_H_PX)] }
    }

    /// The cells of the row of pixel row `y` (cell `x / CELL_W_PX` holds pixel `x`).
    #[inline]
    pub fn row(&self, y: usize) -> &[u8] {
        let r = y / CELL_H_PX;
        &self.cells[r * self.cols..(r + 1) * self.cols]
    }

    /// [`Self::row`], or `None` where every cell of it is marked (the caller reads the whole row, in its
    /// plain loop).
    #[inline]
    pub fn row_cells(&self, y: usize) -> Option<&[u8]> {
        let cells = self.row(y);
        cells.contains(&0).then_some(cells)
    }

    /// The frame's size in pixels (width, height).
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Marks every cell.
    pub fn mark_all(&mut self) {
        self.cells.fill(1);
    }

    /// Marks the cells where a point of a listed batch may land, its box widened for 10-bit decoding
    /// when `quant` (see the module doc).
    pub fn add_batches(&mut self, f: &FrameUniforms, batches: &[Batch], list: &[u32], quant: bool) {
        let rows = self.cells.len() / self.cols.max(1);
        if rows == 0 || self.cols == 0 {
            return;
        }
        // Per cell row, +1 where a rectangle starts and -1 after it ends.
        let mut diff = vec![0i32; rows * (self.cols + 1)];
        let mut any = false;
        for &b in list {
            let Some([x0, x1, y0, y1]) = self.rect(f, &test_box(&batches[b as usize], &batches[b as usize], quant))
            else {
                self.mark_all();
                return;
            };
            if x0 > x1 || y0 > y1 {
                continue;
            }
            let (c0, c1) = (x0 / CELL_W_PX, x1 / CELL_W_PX);
            for r in y0 / CELL_H_PX..=y1 / CELL_H_PX {
                diff[r * (self.cols + 1) + c0] += 1;
                diff[r * (self.cols + 1) + c1 + 1] -= 1;
            }
            any = true;
        }
        if !any {
            return;
        }
        for (cells, d) in self.cells.chunks_mut(self.cols).zip(diff.chunks(self.cols + 1)) {
            let mut sum = 0;
            for (c, &d) in cells.iter_mut().zip(d) {
                sum += d;
                *c |= (sum > 0) as u8;
            }
        }
    }

    /// The pixels (x0, x1, y0, y1, inclusive, clamped to the frame; empty when x0 > x1 or y0 > y1) where
    /// a point of box `b` can land, or `None` when that is not bounded (a corner at w ≤ 0, not finite).
    fn rect(&self, f: &FrameUniforms, b: &Batch) -> Option<[usize; 4]> {
        let m = f.screen_from_world.map(|v| v as f64);
        let (mut xmin, mut xmax, mut ymin, mut ymax, mut wmin) =
            (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY);
        for c in 0..8u32 {
            let p = [0, 1, 2].map(|k| if c & (1 << k) != 0 { b.max[k] as f64 } else { b.min[k] as f64 });
            let row = |r: usize| m[r] * p[0] + m[4 + r] * p[1] + m[8 + r] * p[2] + m[12 + r];
            let w = row(3);
            if w.is_nan() || w <= 0.0 {
                return None;
            }
            let (x, y) = (row(0) / w, row(1) / w);
            xmin = xmin.min(x);
            xmax = xmax.max(x);
            ymin = ymin.min(y);
            ymax = ymax.max(y);
            wmin = wmin.min(w);
        }
        // The f32 rounding of a point's pixel coordinates (see the module doc), doubled, plus a pixel.
        let u = (2.0f64).powi(-24);
        let mag = |r: usize| {
            m[12 + r].abs()
                + (0..3).map(|k| m[4 * k + r].abs() * (b.min[k].abs().max(b.max[k].abs()) as f64)).sum::<f64>()
        };
        let span = (self.width + self.height + 1) as f64;
        let s3 = mag(3) * span;
        let err = |r: usize| 2.0 * (4.0 * u * (mag(r) + s3) / wmin + 4.0 * u * span) + 1.0;
        let (ex, ey) = (err(0), err(1));
        let (x0, x1, y0, y1) = ((xmin - ex).floor(), (xmax + ex).floor(), (ymin - ey).floor(), (ymax + ey).floor());
        if ![x0, x1, y0, y1].iter().all(|v| v.is_finite()) {
            return None;
        }
        let clamp = |v: f64, n: usize| v.clamp(-1.0, n as f64) as i64;
        let (x0, x1, y0, y1) =
            (clamp(x0, self.width), clamp(x1, self.width), clamp(y0, self.height), clamp(y1, self.height));
        let (wd, ht) = (self.width as i64 - 1, self.height as i64 - 1);
        let (x0, x1, y0, y1) = (x0.max(0), x1.min(wd), y0.max(0), y1.min(ht));
        if x0 > x1 || y0 > y1 {
            return Some([1, 0, 1, 0]);
        }
        Some([x0 as usize, x1 as usize, y0 as usize, y1 as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuRasterizer;
    use crate::gpu_data::BATCH_POINTS;
    use crate::twins::batch::{batch_culled, batch_quantized_ok, dequantize_pos};
    use crate::twins::preprocess;
    use crate::twins::project::project;
    use crate::{FrameParams, Rasterizer, RenderMode, Target};
    use pcv_camera::Camera;

    /// The built-in scene's bench poses (the eye inside a cylinder among them, points behind it)
    /// and poses turned about them.
    fn poses(cloud: &pcv_io::PointCloud) -> Vec<pcv_camera::Pose> {
        pcv_camera::scenarios::scenarios(cloud)
            .iter()
            .flat_map(|sc| {
                (0..3).map(move |k| pcv_camera::Pose {
                    yaw_rad: sc.pose.yaw_rad + k as f32 * 1.3,
                    pitch_rad: sc.pose.pitch_rad + k as f32 * 0.2,
                    ..sc.pose
                })
            })
            .collect()
    }

    /// Every point of a batch in the view lands in a cell its mask marks, read at full precision or
    /// (quant) decoded from 10 bits where the batch is, at every pose; and the masks are not all full.
    #[test]
    fn every_drawn_point_lies_in_a_marked_cell() {
        let cloud = pcv_io::scene::generate(300_000, 9, false);
        let g = preprocess::grid_params(&cloud.bounds, cloud.points.len() as u64);
        let mut p = preprocess::prepare(&preprocess::sort_by_cells(&g, &cloud.points));
        p.ensure_quant();
        let (w, h) = (640u32, 360u32);
        let (mut points, mut partial) = (0u64, 0);
        for pose in poses(&cloud) {
            let cam = Camera::start_for(&cloud, Some(pose));
            let f = FrameParams::new(cam.clip_from_world(w, h), w, h).uniforms();
            let list: Vec<u32> =
                (0..p.batches.len() as u32).filter(|&b| !batch_culled(&f, &p.batches[b as usize])).collect();
            for quant in [false, true] {
                let mut c = Cover::new(w, h);
                c.add_batches(&f, &p.batches, &list, quant);
                partial += c.cells.contains(&0) as u32;
                for &b in &list {
                    let batch = &p.batches[b as usize];
                    let coarse = quant && batch_quantized_ok(&f, batch);
                    let first = b as usize * BATCH_POINTS as usize;
                    for j in first..first + batch.num_points as usize {
                        let pos = if coarse { dequantize_pos(batch, p.quant[j]) } else { p.positions[j] };
                        if let Some(q) = project(&f, pos) {
                            points += 1;
                            assert!(
                                marked(Some(c.row(q.y_px as usize)), q.x_px as usize),
                                "point {j} of batch {b} at {q:?} outside the mask (quant {quant})"
                            );
                        }
                    }
                }
            }
        }
        assert!(points > 0 && partial > 4, "{points} points checked, {partial} masks with empty cells");
    }

    /// With two threads (private buffers, so the mask is used), the culled mode gives the vis mode's
    /// image and buffer (no mask) at every pose, frame after frame.
    #[test]
    fn culled_frames_with_the_mask_are_the_vis_frames() {
        let cloud = pcv_io::scene::generate(300_000, 9, false);
        let (w, h) = (480u32, 270u32);
        rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap().install(|| {
            let mut r = CpuRasterizer::new();
            r.upload(&cloud).unwrap();
            for pose in poses(&cloud) {
                let cam = Camera::start_for(&cloud, Some(pose));
                let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
                    .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                let mut want = vec![0u32; frame.num_pixels()];
                r.render(&frame.with_mode(RenderMode::Vis), Target::Host(&mut want)).unwrap();
                let want_depth = r.depth_bits();
                for k in 0..2 {
                    let mut px = vec![0u32; frame.num_pixels()];
                    r.render(&frame.with_mode(RenderMode::Culled), Target::Host(&mut px)).unwrap();
                    assert!(px == want && r.depth_bits() == want_depth, "culled, pose {pose:?} frame {k}");
                }
            }
        });
    }
}
