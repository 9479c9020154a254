//! Clear pass, the CPU twin of `kernels/clear.cu`: depth to 1.0 (the far plane), colour to the
//! background of each row (solid, or a vertical gradient: [`super::post::background`]).
use super::post::background;
use crate::gpu_data::FrameUniforms;
use rayon::prelude::*;
use std::sync::atomic::AtomicU32;

pub use super::post::FAR_DEPTH_BITS;

pub fn clear(f: &FrameUniforms, depth: &mut [AtomicU32], color: &mut [u32]) {
    depth.par_iter_mut().for_each(|d| *d.get_mut() = FAR_DEPTH_BITS);
    let w = f.width.max(1) as usize;
    color.par_chunks_mut(w).enumerate().for_each(|(y, row)| row.fill(background(f, y as u32)));
}
