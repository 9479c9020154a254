//! The attribute values the culled modes' filter tests against value ranges, the CPU twin of
//! `kernels/ranges.cu`: the uploaded points' values put in the batch table's order through the
//! preprocessing's map ([`gather_values`]) and each batch's smallest and largest number and count of
//! NaNs ([`batch_ranges`]). Minimum and maximum are exact in any order, so the kernel's reduction
//! (registers, warp shuffles, shared memory) and this plain loop agree.
use crate::gpu_data::{BatchRange, BATCH_POINTS};

/// `dst[i] = src[order[i]]`: `order` maps table slots to uploaded indices.
pub fn gather_values(order: &[u32], src: &[f32]) -> Vec<f32> {
    order.iter().map(|&o| src[o as usize]).collect()
}

/// Each batch's summary (batch b holds values `b * BATCH_POINTS..`).
pub fn batch_ranges(values: &[f32]) -> Vec<BatchRange> {
    values
        .chunks(BATCH_POINTS as usize)
        .map(|chunk| {
            let mut r = BatchRange::default();
            for &v in chunk {
                if v.is_nan() {
                    r.nans += 1;
                } else {
                    r.min = r.min.min(v);
                    r.max = r.max.max(v);
                }
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_hold_each_batchs_numbers_and_count_its_nans() {
        let n = BATCH_POINTS as usize;
        let mut v: Vec<f32> = (0..2 * n + 10).map(|i| (i % 1000) as f32 - 3.5).collect();
        v[n + 7] = f32::NAN;
        v[n + 9] = 1e6;
        for x in &mut v[2 * n..] {
            *x = f32::NAN;
        }
        let r = batch_ranges(&v);
        assert_eq!(r.len(), 3);
        assert_eq!((r[0].min, r[0].max, r[0].nans), (-3.5, 995.5, 0));
        assert_eq!((r[1].min, r[1].max, r[1].nans), (-3.5, 1e6, 1));
        assert_eq!((r[2].min, r[2].max, r[2].nans), (f32::INFINITY, f32::NEG_INFINITY, 10));
        assert_eq!(gather_values(&[2, 0], &[1.0, 2.0, 3.0]), vec![3.0, 1.0]);
    }
}
