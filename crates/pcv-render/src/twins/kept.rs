//! The kept lists of a filter, the CPU twin of `kernels/kept.cu`: for each batch its summaries cannot
//! decide ([`super::filter::filter_batch`] says some), the indices inside the batch of the points that
//! pass ([`super::filter::filter_point`]), ascending; [`kept_lists`] returns the offsets (one more than
//! the batches: batch b's list is `kept[first[b]..first[b + 1]]`, empty for batches decided whole) and
//! the lists, as the kernel's two runs and the host's sum between them make them.
use super::filter::{filter_batch, filter_point, Columns};
use crate::gpu_data::{filter_says, Batch, FilterUniforms, BATCH_POINTS};

/// Each batch's passing points (see the module doc): `(first, kept)`.
pub fn kept_lists(fu: &FilterUniforms, c: &Columns, batches: &[Batch], positions: &[[f32; 3]]) -> (Vec<u32>, Vec<u16>) {
    let mut first = Vec::with_capacity(batches.len() + 1);
    let mut kept = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        first.push(kept.len() as u32);
        if filter_batch(fu, c, b, batch) != filter_says::SOME {
            continue;
        }
        let start = b * BATCH_POINTS as usize;
        for j in 0..batch.num_points as usize {
            if filter_point(fu, c, start + j, positions[start + j]) {
                kept.push(j as u16);
            }
        }
    }
    first.push(kept.len() as u32);
    (first, kept)
}
