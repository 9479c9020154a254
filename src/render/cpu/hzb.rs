//! The depth pyramid for occlusion culling, the CPU twin of `kernels/hzb.cu`: level 0 holds the largest
//! depth bits of each 4 × 4 pixel tile (pixels outside the frame count as 0), each level above the
//! largest of the 2 × 2 cells below, up to one cell ([`HzbParams`]).
use crate::render::gpu_data::{HzbParams, HZB_TILE};
use rayon::prelude::*;

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

/// [`build`] with the depth read a row at a time: `row_max(y, acc)` sets `acc[x]` to the larger of
/// itself and the depth bits of pixel `x` of row `y` (for a depth that is cheaper to compute a row
/// at once); the rows of a tile are folded first, then each tile's columns.
pub fn build_by_rows(h: &HzbParams, width: u32, height: u32, row_max: impl Fn(usize, &mut [u32]) + Sync, hzb: &mut [u32]) {
    assert_eq!(hzb.len(), h.total as usize, "pyramid size");
    let (tw, t) = (h.width[0] as usize, HZB_TILE as usize);
    let (level0, _) = hzb.split_at_mut(h.width[0] as usize * h.height[0] as usize);
    level0.par_chunks_mut(tw.max(1)).enumerate().for_each(|(ty, tiles)| {
        let mut acc = vec![0u32; width as usize];
        for y in ty * t..((ty + 1) * t).min(height as usize) {
            row_max(y, &mut acc);
        }
        for (tile, d) in tiles.iter_mut().zip(acc.chunks(t)) {
            *tile = d.iter().fold(0, |m, &v| m.max(v));
        }
    });
    build_upper(h, hzb);
}

/// Levels 1 and up of the pyramid from level 0.
fn build_upper(h: &HzbParams, hzb: &mut [u32]) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_holds_the_largest_depth_below() {
        let (w, ht) = (50u32, 37u32);
        let h = HzbParams::for_frame(w, ht);
        let depth: Vec<u32> = (0..w * ht).map(|i| i.wrapping_mul(2_654_435_761) >> 8).collect();
        let mut hzb = vec![0u32; h.total as usize];
        build(&h, w, ht, |i| depth[i], &mut hzb);
        for l in 0..h.levels as usize {
            let s = (HZB_TILE << l) as usize;
            for cy in 0..h.height[l] as usize {
                for cx in 0..h.width[l] as usize {
                    let mut want = 0;
                    for y in cy * s..((cy + 1) * s).min(ht as usize) {
                        for x in cx * s..((cx + 1) * s).min(w as usize) {
                            want = want.max(depth[y * w as usize + x]);
                        }
                    }
                    assert_eq!(hzb[h.offset[l] as usize + cy * h.width[l] as usize + cx], want, "level {l} cell {cx},{cy}");
                }
            }
        }
        let mut by_rows = vec![7u32; h.total as usize];
        let row_max = |y: usize, acc: &mut [u32]| {
            for (a, &d) in acc.iter_mut().zip(&depth[y * w as usize..(y + 1) * w as usize]) {
                *a = (*a).max(d);
            }
        };
        build_by_rows(&h, w, ht, row_max, &mut by_rows);
        assert_eq!(by_rows, hzb, "a row at a time");
    }
}
