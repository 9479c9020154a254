//! Preprocessing at upload, the CPU twin of `kernels/preprocess.cu`.
//!
//! How it works: the points are bucket-sorted by a coarse 3D grid cell in Morton order
//! ([`cell_key`]: `floor((p − origin) · inv_cell)` per axis, clamped, interleaved; non-finite points in
//! the last bucket). The GPU counts the points per bucket with atomics, scans the counts on the host
//! and scatters each point to the next slot of its bucket, so the order inside a bucket is whatever
//! its atomics give; this twin's counting sort keeps the input order inside a bucket. The sorted points
//! are then split into positions (12-byte records) and RGBA8 colors ([`split`]), cut into batches of
//! [`BATCH_POINTS`] with a bounding box each ([`batch_bounds`]) and quantized to 3 × 10 bits in their
//! batch's box ([`quantize`]). Float operations run in the kernels' order, so with the same sorted
//! points both backends make the same boxes and the same quantized words ([`Table`]). The CPU
//! backend's own finer boxes inside a batch are `crate::cpu::prepared`'s; no kernel reads them.
use crate::gpu_data::{Batch, GridParams, Point, BATCH_POINTS};
use crate::huge;
use pcv_io::Bounds;
use rayon::prelude::*;

/// The batch table the batched modes read, for points in their sorted order: the kernels' layout.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub positions: Vec<[f32; 3]>,
    pub colors: Vec<u32>,
    pub batches: Vec<Batch>,
    pub quant: Vec<u32>,
}

/// Grid bits per axis for `n` points: about 64 points per occupied-or-not cell at the low end, from 4
/// to 8 bits (2^24 buckets, whose counts the host scans).
pub fn grid_bits(n: u64) -> u32 {
    let log2 = 64 - n.max(1).leading_zeros();
    (log2.div_ceil(3).saturating_sub(1)).clamp(4, 8)
}

/// The grid over `bounds` for `n` points (a unit grid at the origin when the bounds are empty or not finite).
pub fn grid_params(bounds: &Bounds, n: u64) -> GridParams {
    let bits = grid_bits(n);
    let extent = (bounds.max - bounds.min).max_element();
    let (origin, inv_cell) = if !bounds.is_empty() && extent.is_finite() && bounds.min.is_finite() && extent > 0.0 {
        (bounds.min.to_array(), (1u32 << bits) as f32 / extent)
    } else {
        ([0.0; 3], 1.0)
    };
    GridParams { origin, inv_cell, bits, _pad: 0, num_points: n }
}

/// Spreads the low 10 bits of `v` to every third bit.
#[inline(always)]
fn spread3(mut v: u32) -> u32 {
    v &= 0x3ff;
    v = (v | (v << 16)) & 0x0300_00ff;
    v = (v | (v << 8)) & 0x0300_f00f;
    v = (v | (v << 4)) & 0x030c_30c3;
    v = (v | (v << 2)) & 0x0924_9249;
    v
}

/// The bucket of a position (the kernel's `pcv_cell_key`).
#[inline(always)]
pub fn cell_key(g: &GridParams, pos: [f32; 3]) -> u32 {
    let last = (1u32 << (3 * g.bits)) - 1;
    if !pos.iter().all(|v| v.is_finite()) {
        return last;
    }
    let cmax = ((1u32 << g.bits) - 1) as f32;
    let mut key = 0;
    for (k, &p) in pos.iter().enumerate() {
        let c = ((p + -g.origin[k]) * g.inv_cell).floor().max(0.0).min(cmax);
        key |= spread3(c as u32) << k;
    }
    key
}

/// The points in bucket order (a stable counting sort: the GPU's order inside a bucket may differ).
pub fn sort_by_cells(g: &GridParams, points: &[Point]) -> Vec<Point> {
    let keys: Vec<u32> = points.par_iter().map(|p| cell_key(g, p.pos)).collect();
    let mut start = vec![0usize; 1 << (3 * g.bits)];
    for &k in &keys {
        start[k as usize] += 1;
    }
    let mut sum = 0;
    for s in start.iter_mut() {
        let c = *s;
        *s = sum;
        sum += c;
    }
    let mut out = vec![Point::default(); points.len()];
    for (p, &k) in points.iter().zip(&keys) {
        out[start[k as usize]] = *p;
        start[k as usize] += 1;
    }
    out
}

/// Positions (12-byte records) and RGBA8 colors (the kernel's `pcv_split`).
pub fn split(points: &[Point]) -> (Vec<[f32; 3]>, Vec<u32>) {
    (huge::collect(points.par_iter().map(|p| p.pos)), huge::collect(points.par_iter().map(|p| p.color_word())))
}

/// One box per [`BATCH_POINTS`] positions (the kernel's `pcv_batch_bounds`): min and max of the finite
/// coordinates (NaN skipped), a zero box when there is none, and the quantization step.
pub fn batch_bounds(positions: &[[f32; 3]]) -> Vec<Batch> {
    bounds_per(positions, BATCH_POINTS as usize)
}

/// One box per `per` positions, as [`batch_bounds`] makes them for [`BATCH_POINTS`].
pub fn bounds_per(positions: &[[f32; 3]], per: usize) -> Vec<Batch> {
    positions
        .par_chunks(per)
        .map(|chunk| {
            let mut b = Batch { num_points: chunk.len() as u32, ..Batch::default() };
            for k in 0..3 {
                let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
                for p in chunk {
                    lo = lo.min(p[k]);
                    hi = hi.max(p[k]);
                }
                if lo.is_nan() || hi.is_nan() || lo > hi {
                    (lo, hi) = (0.0, 0.0);
                }
                b.min[k] = lo;
                b.max[k] = hi;
                b.scale[k] = (hi + -lo) / 1023.0;
            }
            b
        })
        .collect()
}

/// One coordinate's 10-bit step (the kernel's `pcv_quantize_coord`).
#[inline(always)]
pub fn quantize_coord(v: f32, lo: f32, scale: f32) -> u32 {
    let mut t = (v + -lo) / scale;
    if t.is_nan() || t < 0.0 {
        t = 0.0;
    }
    ((t + 0.5).floor().min(1023.0) as u32).min(1023)
}

/// Every point's quantized word, x | y << 10 | z << 20 in its batch's box (the kernel's `pcv_quantize`).
pub fn quantize(positions: &[[f32; 3]], batches: &[Batch]) -> Vec<u32> {
    huge::collect(positions.par_iter().enumerate().map(|(i, p)| {
        let b = &batches[i / BATCH_POINTS as usize];
        (0..3).fold(0u32, |w, k| w | quantize_coord(p[k], b.min[k], b.scale[k]) << (10 * k))
    }))
}

/// Split, batches and quantized words for points already in their final order.
pub fn prepare(sorted: &[Point]) -> Table {
    let (positions, colors) = split(sorted);
    let mut t = Table::from_ordered(positions, colors);
    t.ensure_quant();
    t
}

impl Table {
    /// Batches for positions and colors already in their final order (no quantized words).
    pub fn from_ordered(positions: Vec<[f32; 3]>, colors: Vec<u32>) -> Table {
        let batches = batch_bounds(&positions);
        Table { positions, colors, batches, quant: Vec::new() }
    }

    /// Makes the quantized words if they are missing (the CPU backend makes them only when the quant
    /// mode first draws: 4 bytes a point that the other modes never read).
    pub fn ensure_quant(&mut self) {
        if self.quant.len() != self.positions.len() {
            self.quant = quantize(&self.positions, &self.batches);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_bits_grow_with_n() {
        assert_eq!(grid_bits(1000), 4);
        assert_eq!(grid_bits(10_000_000), 7);
        assert_eq!(grid_bits(100_000_000), 8);
        assert_eq!(grid_bits(1 << 30), 8);
    }

    #[test]
    fn sort_is_a_permutation_in_key_order() {
        let c = pcv_io::scene::generate(50_000, 3, false);
        let g = grid_params(&c.bounds, c.points.len() as u64);
        let s = sort_by_cells(&g, &c.points);
        assert!(s.windows(2).all(|w| cell_key(&g, w[0].pos) <= cell_key(&g, w[1].pos)));
        let mut a: Vec<[u32; 4]> = c.points.iter().map(|p| bytemuck::cast(*p)).collect();
        let mut b: Vec<[u32; 4]> = s.iter().map(|p| bytemuck::cast(*p)).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn quantized_points_stay_in_their_box_within_half_a_step() {
        let c = pcv_io::scene::generate(20_000, 5, false);
        let g = grid_params(&c.bounds, c.points.len() as u64);
        let p = prepare(&sort_by_cells(&g, &c.points));
        for (i, (&w, pos)) in p.quant.iter().zip(&p.positions).enumerate() {
            let b = &p.batches[i / BATCH_POINTS as usize];
            let d = crate::twins::batch::dequantize_pos(b, w);
            for k in 0..3 {
                assert!(pos[k] >= b.min[k] && pos[k] <= b.max[k]);
                assert!((d[k] - pos[k]).abs() <= b.scale[k] * 0.5001 + pos[k].abs() * 2.4e-7, "point {i} axis {k}");
            }
        }
    }

    #[test]
    fn non_finite_points_get_the_last_bucket_and_a_finite_box() {
        let g = grid_params(&Bounds { min: glam::Vec3::ZERO, max: glam::Vec3::ONE }, 10);
        assert_eq!(cell_key(&g, [f32::NAN, 0.0, 0.0]), (1 << (3 * g.bits)) - 1);
        let b = batch_bounds(&[[f32::NAN; 3], [1.0, 2.0, 3.0]]);
        assert_eq!(b[0].min, [1.0, 2.0, 3.0]);
        assert_eq!(b[0].max, [1.0, 2.0, 3.0]);
        assert_eq!(b[0].num_points, 2);
    }
}
