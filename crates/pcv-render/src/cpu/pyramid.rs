//! The CPU backend's depth pyramid: the twin's ([`crate::twins::hzb`]) built a row at a time, skipping
//! what the frame's coverage mask says holds no point.
//!
//! How it works: [`build_by_rows`] may take the frame's [`Cover`] and the depth of the pixels in cells it
//! does not mark (the far plane's, for the culled modes' private buffers): a cover cell is a whole number
//! of level-0 tiles, one tile row high, so a tile in an unmarked cell holds that depth (the largest any
//! pixel has) without reading a pixel, and a tile row whose cells are all unmarked reads no row at all.
//! Levels 1 and up are the twin's ([`build_upper`]).
use super::cover::{Cover, CELL_H_PX, CELL_W_PX};
use super::scatter::Switch;
use crate::gpu_data::{HzbParams, HZB_TILE};
use crate::twins::hzb::build_upper;
use rayon::prelude::*;

// A cover cell is one tile row high and a whole number of tiles wide.
const _: () = assert!(CELL_H_PX == HZB_TILE as usize && CELL_W_PX.is_multiple_of(HZB_TILE as usize));

/// [`crate::twins::hzb::build`] with the depth read a row at a time: `row_max(y, acc)` sets `acc[x]` to the larger of
/// itself and the depth bits of pixel `x` of row `y` (for a depth that is cheaper to compute a row
/// at once); the rows of a tile are folded first, then each tile's columns. With `cover = Some((c,
/// far))` (`c` of this frame's size; every pixel's depth at most `far`, and `far` in the cells `c`
/// does not mark), the tiles of unmarked cells are set to `far` without reading their pixels (see the
/// module doc; unless [`FAST_COVER`] is off); `row_max` may then leave `acc` as it is there.
pub fn build_by_rows(
    h: &HzbParams,
    width: u32,
    height: u32,
    cover: Option<(&Cover, u32)>,
    row_max: impl Fn(usize, &mut [u32]) + Sync,
    hzb: &mut [u32],
) {
    assert_eq!(hzb.len(), h.total as usize, "pyramid size");
    let (tw, t) = (h.width[0] as usize, HZB_TILE as usize);
    let cover = cover.filter(|_| FAST_COVER.on());
    if let Some((c, _)) = cover {
        assert_eq!(c.size(), (width as usize, height as usize), "cover of the frame's size");
    }
    let (level0, _) = hzb.split_at_mut(h.width[0] as usize * h.height[0] as usize);
    level0.par_chunks_mut(tw.max(1)).enumerate().for_each(|(ty, tiles)| {
        // The row's cells and the unmarked cells' depth, where some cell of the row is not marked.
        let cells = cover.and_then(|(c, far)| c.row_cells(ty * t).map(|cells| (cells, far)));
        if let Some((cells, far)) = cells {
            if cells.iter().all(|&c| c == 0) {
                tiles.fill(far);
                return;
            }
        }
        let mut acc = vec![0u32; width as usize];
        for y in ty * t..((ty + 1) * t).min(height as usize) {
            row_max(y, &mut acc);
        }
        match cells {
            None => {
                for (tile, d) in tiles.iter_mut().zip(acc.chunks(t)) {
                    *tile = d.iter().fold(0, |m, &v| m.max(v));
                }
            }
            Some((cells, far)) => {
                let per_cell = CELL_W_PX / t;
                for ((tiles, acc), &cell) in tiles.chunks_mut(per_cell).zip(acc.chunks(CELL_W_PX)).zip(cells) {
                    if cell == 0 {
                        tiles.fill(far);
                    } else {
                        for (tile, d) in tiles.iter_mut().zip(acc.chunks(t)) {
                            *tile = d.iter().fold(0, |m, &v| m.max(v));
                        }
                    }
                }
            }
        }
    });
    build_upper(h, hzb);
}

/// Whether [`build_by_rows`] sets the tiles of unmarked cover cells at once (off with `PCV_CPU_FAST_HZB=0`).
pub static FAST_COVER: Switch = Switch::new("PCV_CPU_FAST_HZB");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::twins::hzb::build;

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
                    assert_eq!(
                        hzb[h.offset[l] as usize + cy * h.width[l] as usize + cx],
                        want,
                        "level {l} cell {cx},{cy}"
                    );
                }
            }
        }
        let mut by_rows = vec![7u32; h.total as usize];
        let row_max = |y: usize, acc: &mut [u32]| {
            for (a, &d) in acc.iter_mut().zip(&depth[y * w as usize..(y + 1) * w as usize]) {
                *a = (*a).max(d);
            }
        };
        build_by_rows(&h, w, ht, None, row_max, &mut by_rows);
        assert_eq!(by_rows, hzb, "a row at a time");
    }

    /// With a cover, [`build_by_rows`] gives the pixel-by-pixel pyramid of the frame whose unmarked cells
    /// hold the far depth, though its rows hold other (smaller) depths there, which it must not read: at
    /// covers empty, full and partial (cells marked at random, whole cell rows unmarked, the last partial
    /// column and row), at odd sizes.
    #[test]
    fn cover_tiles_are_the_pixel_pyramids() {
        FAST_COVER.set(true);
        let far = 0x3f80_0000u32;
        for (w, ht) in [(50u32, 37u32), (200, 9), (64, 4), (129, 13), (1, 1), (333, 61)] {
            let h = HzbParams::for_frame(w, ht);
            let n = (w * ht) as usize;
            let depth: Vec<u32> = (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 8) % far).collect();
            for pattern in 0..4u32 {
                let mut cover = Cover::new(w, ht);
                for (k, c) in cover.cells.iter_mut().enumerate() {
                    let r = (k as u32).wrapping_mul(2_246_822_519).rotate_left(7) ^ pattern;
                    *c = match pattern {
                        0 => 0,
                        1 => 1,
                        2 => r.is_multiple_of(3) as u8,
                        _ => ((k / (w as usize).div_ceil(CELL_W_PX)).is_multiple_of(2) && r.is_multiple_of(2)) as u8,
                    };
                }
                let lit = |x: usize, y: usize| cover.row(y)[x / CELL_W_PX] != 0;
                let mut want = vec![0u32; h.total as usize];
                build(&h, w, ht, |i| if lit(i % w as usize, i / w as usize) { depth[i] } else { far }, &mut want);
                let row_max = |y: usize, acc: &mut [u32]| {
                    for (x, a) in acc.iter_mut().enumerate() {
                        *a = (*a).max(depth[y * w as usize + x]);
                    }
                };
                let mut got = vec![7u32; h.total as usize];
                build_by_rows(&h, w, ht, Some((&cover, far)), row_max, &mut got);
                assert_eq!(got, want, "{w} x {ht}, cover pattern {pattern}");
                let mut plain = vec![7u32; h.total as usize];
                build_by_rows(&h, w, ht, None, row_max, &mut plain);
                if pattern != 1 && cover.cells.contains(&0) {
                    assert_ne!(
                        plain, want,
                        "{w} x {ht}, pattern {pattern}: the unmarked cells' rows are not the far depth"
                    );
                }
            }
        }
    }
}
