//! Clear pass, the CPU twin of `kernels/clear.cu`: depth to 1.0 (the far plane), color to the clear color.
use rayon::prelude::*;
use std::sync::atomic::AtomicU32;

/// The depth every pixel starts with: 1.0f as bits.
pub const FAR_DEPTH_BITS: u32 = 0x3f80_0000;

pub fn clear(depth: &mut [AtomicU32], color: &mut [u32], clear_color: u32) {
    depth.par_iter_mut().for_each(|d| *d.get_mut() = FAR_DEPTH_BITS);
    color.par_iter_mut().for_each(|c| *c = clear_color);
}
