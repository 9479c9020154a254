//! The Point10 item, version 2 (LASzip's point-wise compression of a LAS 1.0–1.3 point's first 20
//! bytes), decoded exactly as the `laz` crate's `las::point0::v2` does.
//!
//! How it works: a 6-bit symbol says which of the bit fields, intensity, classification, scan angle,
//! user data and point source changed; each changed one is coded against the last point (the byte
//! fields with a model per previous value); then x and y as differences predicted by the median of the
//! last 5 differences of the same return kind, and z against the last z of the same return level, each
//! in contexts that depend on the previous field's corrector size. The medians are kept without
//! branches (min/max insertion): the differences are noise, and LASzip's compare-and-branch version
//! mispredicted several times a point.
use super::arith::{Decoder, IntDecoder, Model};

/// LASzip's `NUMBER_RETURN_MAP`: (number of returns, return number) → one of 16 return kinds.
const NUMBER_RETURN_MAP: [[u8; 8]; 8] = [
    [15, 14, 13, 12, 11, 10, 9, 8],
    [14, 0, 1, 3, 6, 10, 10, 9],
    [13, 1, 2, 4, 7, 11, 11, 10],
    [12, 3, 4, 5, 8, 12, 12, 11],
    [11, 6, 7, 8, 9, 13, 13, 12],
    [10, 10, 11, 12, 13, 14, 14, 13],
    [9, 10, 11, 12, 13, 14, 15, 14],
    [8, 9, 10, 11, 12, 13, 14, 15],
];

/// LASzip's `NUMBER_RETURN_LEVEL`: (number of returns, return number) → one of 8 levels.
const NUMBER_RETURN_LEVEL: [[u8; 8]; 8] = [
    [0, 1, 2, 3, 4, 5, 6, 7],
    [1, 0, 1, 2, 3, 4, 5, 6],
    [2, 1, 0, 1, 2, 3, 4, 5],
    [3, 2, 1, 0, 1, 2, 3, 4],
    [4, 3, 2, 1, 0, 1, 2, 3],
    [5, 4, 3, 2, 1, 0, 1, 2],
    [6, 5, 4, 3, 2, 1, 0, 1],
    [7, 6, 5, 4, 3, 2, 1, 0],
];

/// For each bit-fields byte (return number in bits 0–2, number of returns in bits 3–5): its return kind
/// (`NUMBER_RETURN_MAP`, bits 0–3), level (`NUMBER_RETURN_LEVEL`, bits 4–6) and whether the number of
/// returns is 1 (bit 7), so that a point looks them up with one load (two 2-D lookups and the field
/// extractions before).
const RETURN_KIND: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let (r, n) = (b & 7, (b >> 3) & 7);
        t[b] = NUMBER_RETURN_MAP[n][r] | (NUMBER_RETURN_LEVEL[n][r] << 4) | (((n == 1) as u8) << 7);
        b += 1;
    }
    t
};

/// The return kind (< 16), level (< 8) and "one return" (0 or 1) of a bit-fields byte, masked so that
/// the arrays they index need no bounds check.
#[inline(always)]
fn return_kind_level(bit_fields: u8) -> (usize, usize, usize) {
    let k = RETURN_KIND[bit_fields as usize];
    ((k & 15) as usize, ((k >> 4) & 7) as usize, (k >> 7) as usize)
}

/// LASzip's streaming median of the last 5 values (`StreamingMedian<i32>`); the layered encoder's
/// Point14 predicts with it too.
#[derive(Clone, Copy)]
pub(super) struct Median5 {
    values: [i32; 5],
    high: bool,
}

impl Median5 {
    pub(super) const NEW: Median5 = Median5 { values: [0; 5], high: true };

    #[inline(always)]
    pub(super) fn get(&self) -> i32 {
        self.values[2]
    }

    /// Adds `v`, giving the values LASzip's branching version gives, without branches (the differences
    /// are noise: each comparison would be a coin toss for the branch predictor). The 5 values stay
    /// sorted; while `high`, `v` replaces the largest, else the smallest (LASzip's alternation), i.e. `v` is
    /// inserted in order into the 4 values kept.
    #[inline(always)]
    pub(super) fn add(&mut self, v: i32) {
        let s = self.values;
        let high = self.high;
        // The 4 kept values by an offset (LLVM made `if high { s[i] } else { s[i + 1] }` a branch, which
        // mispredicted about once in two additions), read as one 4-lane load; the rest as 4-lane
        // maxima and minima (the baseline build; the decode loops' AVX2 build runs `add_sse41`, the same
        // steps as intrinsics: LLVM left this form scalar there, ~37 instructions an addition).
        let o = (!high) as usize;
        let a: [i32; 4] = self.values[o..o + 4].try_into().expect("4 values");
        let mx: [i32; 4] = std::array::from_fn(|i| a[i].max(v));
        let up = [v, mx[0], mx[1], mx[2]];
        let lo: [i32; 4] = std::array::from_fn(|i| a[i].min(up[i]));
        self.values = [lo[0], lo[1], lo[2], lo[3], mx[3]];
        self.high = (v < s[2]) | (!high & (v == s[2]));
    }

    /// [`Self::add`], with SSE4.1 where `SIMD` (only in the decode loops' `with_bmi!` build, which runs
    /// where the CPU has AVX2).
    #[inline(always)]
    pub(super) fn add_in<const SIMD: bool>(&mut self, v: i32) {
        #[cfg(target_arch = "x86_64")]
        if SIMD {
            // SAFETY: `SIMD` is true only in the `with_bmi!` build, which runs where the CPU has AVX2
            // (so SSE4.1).
            return unsafe { self.add_sse41(v) };
        }
        self.add(v)
    }

    /// [`Self::add`] with SSE4.1 intrinsics (LLVM left the 4-lane form scalar in Point10's loop: ~37
    /// instructions an addition): the 4 kept values in one register, their maxima with `v`, those
    /// shifted up a lane with `v` first (`palignr`), the minima; the largest maximum is the 5th value.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse4.1")]
    #[inline]
    unsafe fn add_sse41(&mut self, v: i32) {
        use std::arch::x86_64::*;
        let (high, s2) = (self.high, self.values[2]);
        let o = (!high) as usize;
        // SAFETY: o ≤ 1: values o..o + 4 of the 5 are read (unaligned).
        let a = unsafe { _mm_loadu_si128(self.values.as_ptr().add(o).cast()) };
        let vv = _mm_set1_epi32(v);
        let mx = _mm_max_epi32(a, vv);
        // [v, mx0, mx1, mx2]: bytes 12..28 of vv (low) and mx (high).
        let up = _mm_alignr_epi8::<12>(mx, vv);
        let lo = _mm_min_epi32(a, up);
        // SAFETY: the first 4 of the 5 values are written (unaligned).
        unsafe { _mm_storeu_si128(self.values.as_mut_ptr().cast(), lo) };
        self.values[4] = _mm_extract_epi32::<3>(mx);
        self.high = (v < s2) | (!high & (v == s2));
    }
}

/// The decoder state of one chunk's Point10 item.
pub(crate) struct Point10 {
    x: i32,
    y: i32,
    z: i32,
    intensity: u16,
    bit_fields: u8,
    classification: u8,
    scan_angle: u8,
    user_data: u8,
    point_source: u16,
    last_intensity: [u16; 16],
    x_diff_median: [Median5; 16],
    y_diff_median: [Median5; 16],
    last_height: [i32; 8],
    changed: Model,
    scan_angle_models: [Model; 2],
    /// Models per previous value (boxed arrays: a byte indexes them without a bounds check).
    bit_byte: Box<[Model; 256]>,
    classification_models: Box<[Model; 256]>,
    user_data_models: Box<[Model; 256]>,
    ic_intensity: IntDecoder<16, 4>,
    ic_point_source: IntDecoder<16, 1>,
    ic_dx: IntDecoder<32, 2>,
    ic_dy: IntDecoder<32, 22>,
    ic_z: IntDecoder<32, 20>,
}

/// 256 models of 256 symbols, on the heap.
fn models_256() -> Box<[Model; 256]> {
    vec![Model::new(256); 256].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("256 models"))
}

impl Point10 {
    /// The state after a chunk's first point, `first` (20 bytes, stored raw).
    pub fn new(first: &[u8; 20]) -> Self {
        let i32at = |k: usize| i32::from_le_bytes([first[k], first[k + 1], first[k + 2], first[k + 3]]);
        Point10 {
            x: i32at(0),
            y: i32at(4),
            z: i32at(8),
            // LASzip predicts the second point's intensity from 0, not from the first point's.
            intensity: 0,
            bit_fields: first[14],
            classification: first[15],
            scan_angle: first[16],
            user_data: first[17],
            point_source: u16::from_le_bytes([first[18], first[19]]),
            last_intensity: [0; 16],
            x_diff_median: [Median5::NEW; 16],
            y_diff_median: [Median5::NEW; 16],
            last_height: [0; 8],
            changed: Model::new(64),
            scan_angle_models: [Model::new(256), Model::new(256)],
            bit_byte: models_256(),
            classification_models: models_256(),
            user_data_models: models_256(),
            ic_intensity: IntDecoder::new(),
            ic_point_source: IntDecoder::new(),
            ic_dx: IntDecoder::new(),
            ic_dy: IntDecoder::new(),
            ic_z: IntDecoder::new(),
        }
    }

    /// Decodes the next point into `out`.
    #[inline(always)]
    pub fn next<const SIMD: bool>(&mut self, d: &mut Decoder, out: &mut [u8; 20]) {
        let changed = d.symbol(&mut self.changed);
        let (m, l, n1): (usize, usize, usize);
        if changed != 0 {
            if changed & (1 << 5) != 0 {
                self.bit_fields = d.symbol(&mut self.bit_byte[self.bit_fields as usize]) as u8;
            }
            (m, l, n1) = return_kind_level(self.bit_fields);
            if changed & (1 << 4) != 0 {
                self.intensity = self.ic_intensity.decode(d, self.last_intensity[m] as i32, m.min(3)) as u16;
                self.last_intensity[m] = self.intensity;
            } else {
                self.intensity = self.last_intensity[m];
            }
            if changed & (1 << 3) != 0 {
                self.classification = d.symbol(&mut self.classification_models[self.classification as usize]) as u8;
            }
            if changed & (1 << 2) != 0 {
                let direction = ((self.bit_fields >> 6) & 1) as usize;
                let v = d.symbol(&mut self.scan_angle_models[direction]) as u8;
                self.scan_angle = self.scan_angle.wrapping_add(v);
            }
            if changed & (1 << 1) != 0 {
                self.user_data = d.symbol(&mut self.user_data_models[self.user_data as usize]) as u8;
            }
            if changed & 1 != 0 {
                self.point_source = self.ic_point_source.decode(d, self.point_source as i32, 0) as u16;
            }
        } else {
            (m, l, n1) = return_kind_level(self.bit_fields);
        }

        let diff = self.ic_dx.decode(d, self.x_diff_median[m].get(), n1);
        self.x = self.x.wrapping_add(diff);
        self.x_diff_median[m].add_in::<SIMD>(diff);

        let k = self.ic_dx.k;
        let context = n1 + if k < 20 { (k & !1) as usize } else { 20 };
        let diff = self.ic_dy.decode(d, self.y_diff_median[m].get(), context);
        self.y = self.y.wrapping_add(diff);
        self.y_diff_median[m].add_in::<SIMD>(diff);

        let k = (self.ic_dx.k + self.ic_dy.k) / 2;
        let context = n1 + if k < 18 { (k & !1) as usize } else { 18 };
        self.z = self.ic_z.decode(d, self.last_height[l], context);
        self.last_height[l] = self.z;

        out[0..4].copy_from_slice(&self.x.to_le_bytes());
        out[4..8].copy_from_slice(&self.y.to_le_bytes());
        out[8..12].copy_from_slice(&self.z.to_le_bytes());
        out[12..14].copy_from_slice(&self.intensity.to_le_bytes());
        out[14] = self.bit_fields;
        out[15] = self.classification;
        out[16] = self.scan_angle;
        out[17] = self.user_data;
        out[18..20].copy_from_slice(&self.point_source.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::{return_kind_level, Median5, NUMBER_RETURN_LEVEL, NUMBER_RETURN_MAP};

    /// The packed table gives LASzip's return kind and level and the one-return flag of every byte.
    #[test]
    fn return_kind_table_matches_the_maps() {
        for b in 0..=255u8 {
            let (r, n) = ((b & 7) as usize, ((b >> 3) & 7) as usize);
            let want = (NUMBER_RETURN_MAP[n][r] as usize, NUMBER_RETURN_LEVEL[n][r] as usize, (n == 1) as usize);
            assert_eq!(return_kind_level(b), want, "bit fields {b:#04x}");
        }
    }

    /// LASzip's `StreamingMedian5::add` as LASzip (and the `laz` crate) write it, with its branches.
    fn laszip_add(m: &mut Median5, v: i32) {
        let s = &mut m.values;
        if m.high {
            if v < s[2] {
                s[4] = s[3];
                s[3] = s[2];
                if v < s[0] {
                    s[2] = s[1];
                    s[1] = s[0];
                    s[0] = v;
                } else if v < s[1] {
                    s[2] = s[1];
                    s[1] = v;
                } else {
                    s[2] = v;
                }
            } else {
                if v < s[3] {
                    s[4] = s[3];
                    s[3] = v;
                } else {
                    s[4] = v;
                }
                m.high = false;
            }
        } else if s[2] < v {
            s[0] = s[1];
            s[1] = s[2];
            if s[4] < v {
                s[2] = s[3];
                s[3] = s[4];
                s[4] = v;
            } else if s[3] < v {
                s[2] = s[3];
                s[3] = v;
            } else {
                s[2] = v;
            }
        } else {
            if s[1] < v {
                s[0] = s[1];
                s[1] = v;
            } else {
                s[0] = v;
            }
            m.high = true;
        }
    }

    #[test]
    fn branch_free_median_matches_laszip() {
        // Values from a few narrow ranges (many ties) and the full i32 range, 200 000 additions each.
        let mut seed = 0x1234_5678_9ABC_DEF0u64;
        for range in [3u64, 17, 1000, 1 << 32] {
            let (mut a, mut b, mut c) = (Median5::NEW, Median5::NEW, Median5::NEW);
            for i in 0..200_000 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let v = ((seed >> 32) % range) as i64 - (range / 2) as i64;
                let v = v as i32;
                a.add(v);
                laszip_add(&mut b, v);
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("sse4.1") {
                    // SAFETY: the CPU has SSE4.1 (checked just above).
                    unsafe { c.add_sse41(v) };
                    assert_eq!((c.values, c.high), (b.values, b.high), "SSE4.1: range {range}, addition {i} of {v}");
                }
                assert_eq!((a.values, a.high), (b.values, b.high), "range {range}, addition {i} of {v}");
                assert_eq!(a.get(), b.get());
            }
        }
    }
}
