//! The depth pyramid for occlusion culling, the CPU twin of `kernels/hzb.cu`: level 0 holds the largest
//! depth bits of each 4 × 4 pixel tile (pixels outside the frame count as 0), each level above the
//! largest of the 2 × 2 cells below, up to one cell ([`HzbParams`]). The CPU backend's row-wise build
//! over its coverage mask is `crate::cpu::pyramid`'s, tested against [`build`].
use crate::gpu_data::{word_depth, HzbParams, HZB_TILE};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// [`build`] over a visibility buffer's words (their depth bits), as `pcv_hzb_tiles` reads them.
pub fn build_from_words(h: &HzbParams, width: u32, height: u32, words: &[AtomicU64], hzb: &mut [u32]) {
    build(h, width, height, |i| word_depth(words[i].load(Ordering::Relaxed)), hzb);
}

/// Builds the pyramid of a `width × height` depth buffer read through `depth(i)` into `hzb`
/// (`h.total` words).
pub fn build(h: &HzbParams, width: u32, height: u32, depth: impl Fn(usize) -> u32 + Sync, hzb: &mut [u32]) {
    assert_eq!(hzb.len(), h.total as usize, "pyramid size");
    let (tw, t) = (h.width[0] as usize, HZB_TILE as usize);
    let (level0, _) = hzb.split_at_mut(h.width[0] as usize * h.height[0] as usize);
    level0.par_iter_mut().enumerate().for_each(|(tile, out)| {
        let (x0, y0) = ((tile % tw) * t, (tile / tw) * t);
        let mut m = 0u32;
        for y in y0..(y0 + t).min(height as usize) {
            for x in x0..(x0 + t).min(width as usize) {
                m = m.max(depth(y * width as usize + x));
            }
        }
        *out = m;
    });
    build_upper(h, hzb);
}

/// Levels 1 and up of the pyramid from level 0.
pub fn build_upper(h: &HzbParams, hzb: &mut [u32]) {
    for l in 1..h.levels as usize {
        let (w, cw, ch) = (h.width[l] as usize, h.width[l - 1] as usize, h.height[l - 1] as usize);
        let (below_all, above) = hzb.split_at_mut(h.offset[l] as usize);
        let below = &below_all[h.offset[l - 1] as usize..];
        for (c, out) in above[..w * h.height[l] as usize].iter_mut().enumerate() {
            let (x, y) = (2 * (c % w), 2 * (c / w));
            let mut m = 0;
            for dy in 0..2 {
                for dx in 0..2 {
                    if x + dx < cw && y + dy < ch {
                        m = m.max(below[(y + dy) * cw + x + dx]);
                    }
                }
            }
            *out = m;
        }
    }
}
