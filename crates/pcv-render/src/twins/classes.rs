//! The class codes the culled modes' filter reads, the CPU twin of `kernels/classes.cu`: the codes of
//! the uploaded points put in the batch table's order through the preprocessing's map ([`gather_classes`])
//! and each batch's set of codes ([`batch_classes`]).
use crate::gpu_data::{BatchClasses, BATCH_POINTS};

/// `dst[i] = src[order[i]]`: `order` maps table slots to uploaded indices.
pub fn gather_classes(order: &[u32], src: &[u8]) -> Vec<u8> {
    order.iter().map(|&o| src[o as usize]).collect()
}

/// Each batch's set of class codes (batch b holds points `b * BATCH_POINTS..`).
pub fn batch_classes(classes: &[u8]) -> Vec<BatchClasses> {
    classes
        .chunks(BATCH_POINTS as usize)
        .map(|chunk| {
            let mut b = BatchClasses::default();
            for &c in chunk {
                b.bits[(c >> 5) as usize] |= 1 << (c & 31);
            }
            b
        })
        .collect()
}
