//! Sort-last compositing, the CPU twin of `kernels/composite.cu`: the payload offset that makes the
//! shares' point indices global, the min of two word buffers, and the gather that turns a composite of
//! index words into colour words (see the kernel file for how `src/multi.rs` uses them).
//! [`composite_shares`] runs them in the order the multi-GPU backend does, for the tests.
use crate::gpu_data::{word, word_depth, word_payload, FrameUniforms, EMPTY_PAYLOAD};
use rayon::prelude::*;

/// `pcv_words_offset`: `first` added to every non-empty payload.
pub fn words_offset(words: &mut [u64], first: u64) {
    words.par_iter_mut().for_each(|w| {
        if word_payload(*w) != EMPTY_PAYLOAD {
            *w += first;
        }
    });
}

/// `pcv_words_min`: `dst[i] = min(dst[i], src[i])`.
pub fn words_min(dst: &mut [u64], src: &[u64]) {
    assert_eq!(dst.len(), src.len(), "word buffer sizes");
    dst.par_iter_mut().zip(src).for_each(|(a, &b)| *a = (*a).min(b));
}

/// `pcv_words_gather`: the colour words of the pixels whose winning index lies in `first .. first +
/// colors.len()`, the background word of empty pixels, and `u64::MAX` elsewhere (with `init`; left
/// alone without).
pub fn words_gather(f: &FrameUniforms, vis: &[u64], colors: &[u32], first: u64, init: bool, out: &mut [u64]) {
    assert_eq!(vis.len(), out.len(), "word buffer sizes");
    let w = f.width.max(1) as usize;
    let count = colors.len() as u64;
    out.par_chunks_mut(w).zip(vis.par_chunks(w)).enumerate().for_each(|(y, (orow, vrow))| {
        let bg = super::post::background(f, y as u32) as u64;
        for (o, &v) in orow.iter_mut().zip(vrow) {
            let p = word_payload(v);
            if p == EMPTY_PAYLOAD {
                *o = word(word_depth(v), bg);
            } else if p.wrapping_sub(first) < count {
                *o = word(word_depth(v), colors[(p - first) as usize] as u64);
            } else if init {
                *o = u64::MAX;
            }
        }
    });
}

/// One share's rendered index words (local indices) and its points' colours.
pub struct ShareWords<'a> {
    /// The share's first point in the global order.
    pub first: u64,
    pub words: Vec<u64>,
    pub colors: &'a [u32],
}

/// The composite of `shares` as colour words, the way the multi-GPU backend makes it with one share a
/// rank: offsets, a min over the shares (the NCCL all-reduce), a gather on each share, and a min over
/// the gathered words (the NCCL reduce to the window's rank).
pub fn composite_shares(f: &FrameUniforms, mut shares: Vec<ShareWords<'_>>) -> Vec<u64> {
    for s in shares.iter_mut() {
        words_offset(&mut s.words, s.first);
    }
    let n = f.width as usize * f.height as usize;
    let mut all = vec![u64::MAX; n];
    for s in &shares {
        words_min(&mut all, &s.words);
    }
    let mut out = vec![u64::MAX; n];
    let mut gathered = vec![0u64; n];
    for s in &shares {
        words_gather(f, &all, s.colors, s.first, true, &mut gathered);
        words_min(&mut out, &gathered);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(w: u32, h: u32) -> FrameUniforms {
        FrameUniforms {
            screen_from_world: [0.0; 16],
            width: w,
            height: h,
            clear_color: 0xff102030,
            clear_color_last_row: 0xff405060,
        }
    }

    #[test]
    fn offset_skips_empty_pixels() {
        let mut w = vec![word(5, 3), word(0x3f80_0000, EMPTY_PAYLOAD), word(7, 0)];
        words_offset(&mut w, 100);
        assert_eq!(w, vec![word(5, 103), word(0x3f80_0000, EMPTY_PAYLOAD), word(7, 100)]);
    }

    #[test]
    fn gather_owns_only_its_range() {
        let f = frame(3, 1);
        let vis = [word(9, 10), word(9, 12), word(0x3f80_0000, EMPTY_PAYLOAD)];
        let colors = [0xaa, 0xbb];
        let mut out = vec![1u64; 3];
        words_gather(&f, &vis, &colors, 10, true, &mut out);
        assert_eq!(out, vec![word(9, 0xaa), u64::MAX, word(0x3f80_0000, 0xff102030)]);
        let mut kept = vec![1u64; 3];
        words_gather(&f, &vis, &colors, 11, false, &mut kept);
        assert_eq!(kept, vec![1, word(9, 0xbb), word(0x3f80_0000, 0xff102030)]);
        // An index below `first` must not wrap into the range.
        let mut low = vec![0u64; 3];
        words_gather(&f, &vis, &colors, 11, true, &mut low);
        assert_eq!(low[0], u64::MAX);
    }
}
