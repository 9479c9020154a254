//! Points in someone else's arrays, the CPU twin of `kernels/external.cu`: the `vis` pass over strided
//! positions, the resolve that reads each visible point's colour in its own format, packing positions,
//! the bounds of the finite points, and a frame's depth copied out of a buffer.
//!
//! The arrays are byte slices with a base offset (element [0, 0]) and signed row and column strides in
//! bytes ([`Strided`]), as [`crate::external::ExternalPoints::host_views`] makes them from host
//! memory (numpy). [`host_points`] turns them into the cloud's 16-byte records, which is how the CPU
//! backend (and the CUDA backend's upload) takes host arrays.
use super::depth::CHUNK_POINTS;
use super::vis::vis_point;
use crate::external::ColorKind;
use crate::gpu_data::{word_depth, word_payload, FrameUniforms};
use crate::simd::with_fma;
use glam::Vec3;
use pcv_io::{Bounds, Point};
use rayon::prelude::*;
use std::sync::atomic::AtomicU64;

/// An array of rows in host memory: element (i, k) starts at byte `base + i * row + k * col` of `bytes`.
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a> {
    pub bytes: &'a [u8],
    pub base: usize,
    pub row: i64,
    pub col: i64,
}

impl Strided<'_> {
    #[inline(always)]
    fn at<const N: usize>(&self, i: u64, k: i64) -> [u8; N] {
        let o = (self.base as i64 + i as i64 * self.row + k * self.col) as usize;
        let mut b = [0u8; N];
        b.copy_from_slice(&self.bytes[o..o + N]);
        b
    }

    #[inline(always)]
    pub fn f32(&self, i: u64, k: i64) -> f32 {
        f32::from_le_bytes(self.at(i, k))
    }

    #[inline(always)]
    pub fn u8(&self, i: u64, k: i64) -> u8 {
        self.at::<1>(i, k)[0]
    }

    #[inline(always)]
    pub fn u32(&self, i: u64, k: i64) -> u32 {
        u32::from_le_bytes(self.at(i, k))
    }

    /// Point `i`'s x, y, z.
    #[inline(always)]
    pub fn position(&self, i: u64) -> [f32; 3] {
        [self.f32(i, 0), self.f32(i, 1), self.f32(i, 2)]
    }
}

/// Colours in host memory: an array of `kind`, or `constant` for every point.
#[derive(Clone, Copy, Debug)]
pub struct HostColors<'a> {
    pub kind: ColorKind,
    pub array: Option<Strided<'a>>,
    pub constant: u32,
}

/// A 0..1 float as 0..255: `v * 255` rounded half away from zero, clamped; NaN is 0 (in f64, as the
/// file loaders' `color_from_unit`).
#[inline(always)]
pub fn unit_to_u8(v: f32) -> u32 {
    let d = (v as f64 * 255.0).round();
    if d.is_nan() || d <= 0.0 {
        0
    } else if d >= 255.0 {
        255
    } else {
        d as u32
    }
}

/// The RGBA8 colour of point `i` (the kernel's `pcv_ext_color`).
#[inline(always)]
pub fn ext_color(c: &HostColors, i: u64) -> u32 {
    let Some(a) = c.array else { return c.constant };
    match c.kind {
        ColorKind::Constant => c.constant,
        ColorKind::Rgba32 => a.u32(i, 0),
        ColorKind::U8x3 => a.u8(i, 0) as u32 | (a.u8(i, 1) as u32) << 8 | (a.u8(i, 2) as u32) << 16 | 0xff00_0000,
        ColorKind::U8x4 => {
            a.u8(i, 0) as u32 | (a.u8(i, 1) as u32) << 8 | (a.u8(i, 2) as u32) << 16 | (a.u8(i, 3) as u32) << 24
        }
        ColorKind::F32x3 => {
            unit_to_u8(a.f32(i, 0)) | unit_to_u8(a.f32(i, 1)) << 8 | unit_to_u8(a.f32(i, 2)) << 16 | 0xff00_0000
        }
        ColorKind::F32x4 => {
            unit_to_u8(a.f32(i, 0))
                | unit_to_u8(a.f32(i, 1)) << 8
                | unit_to_u8(a.f32(i, 2)) << 16
                | unit_to_u8(a.f32(i, 3)) << 24
        }
    }
}

/// The `vis` pass over strided positions (`pcv_vis_strided`).
pub fn vis_strided(f: &FrameUniforms, positions: &Strided, num_points: u64, vis: &[AtomicU64]) {
    assert_eq!(vis.len(), f.width as usize * f.height as usize, "visibility buffer size");
    assert!(num_points < super::vis::EMPTY_INDEX, "point indices must fit below 2^34 - 1");
    let chunks = num_points.div_ceil(CHUNK_POINTS as u64);
    (0..chunks).into_par_iter().for_each(|c| {
        let start = c * CHUNK_POINTS as u64;
        vis_strided_chunk(f, positions, start, (start + CHUNK_POINTS as u64).min(num_points), vis);
    });
}

with_fma! {
    fn vis_strided_chunk(f: &FrameUniforms, positions: &Strided, start: u64, end: u64, vis: &[AtomicU64]) {
        for i in start..end {
            vis_point(f, positions.position(i), i, vis);
        }
    }
}

/// The resolve reading each visible point's colour from `colors` (`pcv_ext_resolve`).
pub fn ext_resolve(f: &FrameUniforms, vis: &[AtomicU64], colors: &HostColors, color: &mut [u32]) {
    assert_eq!(vis.len(), color.len(), "buffer sizes");
    let w = f.width.max(1) as usize;
    color.par_chunks_mut(w).zip(vis.par_chunks(w)).enumerate().for_each(|(y, (crow, vrow))| {
        let bg = super::post::background(f, y as u32);
        for (c, v) in crow.iter_mut().zip(vrow) {
            let idx = word_payload(v.load(std::sync::atomic::Ordering::Relaxed));
            *c = if idx == super::vis::EMPTY_INDEX { bg } else { ext_color(colors, idx) };
        }
    });
}

/// Packed (N, 3) positions (`pcv_pack_positions`).
pub fn pack_positions(positions: &Strided, num_points: u64) -> Vec<[f32; 3]> {
    (0..num_points).into_par_iter().map(|i| positions.position(i)).collect()
}

/// A float as a key that orders like the float (`pcv_order_key`).
#[inline(always)]
pub fn order_key(v: f32) -> u32 {
    let b = v.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The float of an [`order_key`].
#[inline(always)]
pub fn key_value(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 { k & 0x7fff_ffff } else { !k })
}

/// The six keys of `pcv_ext_bounds`: min of x, y, z, then max (0xffffffff and 0 where no point is finite).
pub fn ext_bounds_keys(positions: &Strided, num_points: u64) -> [u32; 6] {
    (0..num_points)
        .into_par_iter()
        .fold(
            || [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0],
            |mut k, i| {
                let p = positions.position(i);
                if p.iter().all(|v| v.is_finite()) {
                    for a in 0..3 {
                        let key = order_key(p[a]);
                        k[a] = k[a].min(key);
                        k[3 + a] = k[3 + a].max(key);
                    }
                }
                k
            },
        )
        .reduce(
            || [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0],
            |a, b| std::array::from_fn(|j| if j < 3 { a[j].min(b[j]) } else { a[j].max(b[j]) }),
        )
}

/// Bounds from the six keys ([`Bounds::EMPTY`] when no point was finite).
pub fn bounds_from_keys(k: &[u32; 6]) -> Bounds {
    if k[0] == u32::MAX {
        return Bounds::EMPTY;
    }
    Bounds {
        min: Vec3::new(key_value(k[0]), key_value(k[1]), key_value(k[2])),
        max: Vec3::new(key_value(k[3]), key_value(k[4]), key_value(k[5])),
    }
}

/// The depth bits of each visibility word into `out` (`pcv_depth_out` on a visibility buffer).
pub fn depth_out(vis: &[AtomicU64], out: &mut [u32]) {
    out.par_iter_mut().zip(vis).for_each(|(o, v)| *o = word_depth(v.load(std::sync::atomic::Ordering::Relaxed)));
}

/// The cloud's 16-byte records of host arrays: positions and each point's colour as the resolve reads it.
pub fn host_points(positions: &Strided, colors: &HostColors, num_points: u64) -> Vec<Point> {
    (0..num_points)
        .into_par_iter()
        .map(|i| Point::new(positions.position(i), ext_color(colors, i).to_le_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn keys_order_like_floats_and_round_trip() {
        let v = [-f32::MAX, -3.5, -0.0, 0.0, 1e-30, 2.0, f32::MAX];
        for w in v.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{w:?}");
        }
        for x in v {
            assert_eq!(key_value(order_key(x)).to_bits(), x.to_bits());
        }
    }

    #[test]
    fn strided_reads_and_bounds_skip_non_finite_points() {
        // (3, 4) float32 rows read backwards: rows 2, 1, 0.
        let bytes = floats(&[1.0, 2.0, 3.0, 9.0, -1.0, 5.0, f32::NAN, 9.0, 4.0, -6.0, 0.5, 9.0]);
        let s = Strided { bytes: &bytes, base: 32, row: -16, col: 4 };
        assert_eq!(s.position(0), [4.0, -6.0, 0.5]);
        let packed = pack_positions(&s, 3);
        assert_eq!((packed[0], packed[2]), ([4.0, -6.0, 0.5], [1.0, 2.0, 3.0]));
        assert!(packed[1][2].is_nan());
        let b = bounds_from_keys(&ext_bounds_keys(&s, 3));
        assert_eq!((b.min, b.max), (Vec3::new(1.0, -6.0, 0.5), Vec3::new(4.0, 2.0, 3.0)));
        assert!(bounds_from_keys(&ext_bounds_keys(&s, 0)).is_empty());
    }

    #[test]
    fn colours_convert_like_the_loaders() {
        assert_eq!(
            [
                unit_to_u8(0.0),
                unit_to_u8(1.0),
                unit_to_u8(0.5),
                unit_to_u8(2.0),
                unit_to_u8(-1.0),
                unit_to_u8(f32::NAN)
            ],
            [0, 255, 128, 255, 0, 0]
        );
        let u8s = [10u8, 20, 30, 40, 50, 60];
        let c = HostColors {
            kind: ColorKind::U8x3,
            array: Some(Strided { bytes: &u8s, base: 0, row: 3, col: 1 }),
            constant: 0,
        };
        assert_eq!(ext_color(&c, 1), 0xff3c_3228);
        let f = floats(&[1.0, 0.0, 0.5, 0.25]);
        let c = HostColors {
            kind: ColorKind::F32x4,
            array: Some(Strided { bytes: &f, base: 0, row: 16, col: 4 }),
            constant: 0,
        };
        assert_eq!(ext_color(&c, 0), 0x4080_00ff);
        let none = HostColors { kind: ColorKind::Constant, array: None, constant: 7 };
        assert_eq!(ext_color(&none, 5), 7);
    }
}
