//! Thread-private visibility buffers: the draw passes take their minima with plain loads and stores
//! into a buffer per task, merged into the frame's buffer once the points are drawn.
//!
//! How it works: with few threads (at most [`MAX_BUFFERS`]; `PCV_CPU_PRIVATE=0` turns this off), a
//! draw pass runs one task per buffer ([`PrivateBuffers::run`]); each task takes the next few items
//! of the pass's work from a shared counter and draws them into its own buffer through
//! [`super::scatter::Private`]: no `lock cmpxchg`, no early-test branch. A buffer holds `u64::MAX`
//! where its task drew nothing. [`PrivateBuffers::merge`] writes the frame's buffer: per pixel the
//! smallest of the clear word and every buffer's word, which is the minimum over the points drawn,
//! whichever task drew them, so the same buffer as the atomic minimum gives, bit for bit; it resets
//! the buffers to `u64::MAX` on the way (the next frame finds them clear) and, for the culled modes,
//! marks the groups that own a pixel. Between the culled modes' two draws, the depth pyramid reads
//! [`PrivateBuffers::depth`] (the smallest word's depth, at most the far plane's, as the cleared
//! buffer would give) without merging. Memory: one buffer of 8 bytes a pixel per thread (16.6 MB a
//! thread at 1920 × 1080).
use super::clear::FAR_DEPTH_BITS;
use super::preprocess::GROUP_POINTS;
use super::simd::with_avx512;
use crate::render::gpu_data::{word_depth, word_payload, EMPTY_PAYLOAD};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// The most threads that draw into private buffers; with more, the passes share one buffer through
/// atomics (the memory and the merge grow with the threads, the atomics' cost does not).
pub const MAX_BUFFERS: usize = 4;

/// Whether draws use private buffers with `threads` threads: at most [`MAX_BUFFERS`], unless
/// `PCV_CPU_PRIVATE=0`.
pub fn wanted(threads: usize) -> bool {
    threads <= MAX_BUFFERS && std::env::var_os("PCV_CPU_PRIVATE").is_none_or(|v| v != "0")
}

/// Where a draw pass takes its minima: the frame's buffer, through atomics, or private buffers.
pub enum Dest<'a> {
    Shared(&'a [AtomicU64]),
    Private(&'a mut PrivateBuffers),
}

/// One buffer per draw task (see the module doc).
#[derive(Default)]
pub struct PrivateBuffers {
    bufs: Vec<Vec<u64>>,
    /// Whether a buffer may hold words not merged yet (a frame stopped between draw and merge).
    dirty: bool,
}

impl PrivateBuffers {
    /// `count` buffers of `pixels` words, all `u64::MAX`.
    pub fn prepare(&mut self, count: usize, pixels: usize) {
        if self.bufs.len() != count || self.bufs.first().is_some_and(|b| b.len() != pixels) {
            self.bufs = (0..count).map(|_| vec![u64::MAX; pixels]).collect();
        } else if self.dirty {
            self.bufs.par_iter_mut().for_each(|b| b.fill(u64::MAX));
        }
        self.dirty = false;
    }

    /// Frees the buffers (a frame that shares one buffer).
    pub fn release(&mut self) {
        self.bufs = Vec::new();
        self.dirty = false;
    }

    /// Runs `work(items, buffer)` over `0..len` in pieces of `step` items, one task per buffer, each
    /// taking the next piece as it is done; returns the results folded with `add`.
    pub fn run<R: Send + Default>(&mut self, len: usize, step: usize, work: impl Fn(std::ops::Range<usize>, &mut [u64]) -> R + Sync, add: impl Fn(R, R) -> R + Sync + Send) -> R {
        self.dirty = true;
        let next = AtomicUsize::new(0);
        let step = step.max(1);
        self.bufs
            .par_iter_mut()
            .map(|buf| {
                let mut acc = R::default();
                loop {
                    let from = next.fetch_add(step, Ordering::Relaxed);
                    if from >= len {
                        break acc;
                    }
                    acc = add(acc, work(from..(from + step).min(len), buf));
                }
            })
            .reduce(R::default, &add)
    }

    /// The depth bits of pixel `i` as the merged buffer would hold them (the smallest word's, at most
    /// the far plane's).
    #[inline(always)]
    pub fn depth(&self, i: usize) -> u32 {
        let w = self.bufs.iter().fold(u64::MAX, |m, b| m.min(b[i]));
        word_depth(w).min(FAR_DEPTH_BITS)
    }

    /// Sets `acc[j]` to the larger of itself and [`Self::depth`] of pixel `first + j`.
    pub fn depth_row_max(&self, first: usize, acc: &mut [u32]) {
        let end = first + acc.len();
        match self.bufs.as_slice() {
            [a, b] => depth_row_max2(&a[first..end], &b[first..end], acc),
            _ => {
                for (j, o) in acc.iter_mut().enumerate() {
                    *o = (*o).max(self.depth(first + j));
                }
            }
        }
    }

    /// Writes `vis`: each pixel the smallest of `clear(row)` and the buffers' words; resets the
    /// buffers; with `marks`, sets the mark of the group of each pixel's point ([`super::culled`]:
    /// payloads are point indices, [`GROUP_POINTS`] a group) after clearing every mark; with
    /// `resolve`, also writes the image as the resolve pass would ([`Resolve`]).
    pub fn merge(&mut self, vis: &mut [AtomicU64], width: usize, clear: impl Fn(u32) -> u64 + Sync, marks: Option<&[AtomicU8]>, resolve: Option<Resolve<'_>>) {
        assert!(self.bufs.iter().all(|b| b.len() == vis.len()), "private buffers of the frame's size");
        let width = width.max(1);
        if let Some(m) = marks {
            m.par_iter().for_each(|m| m.store(0, Ordering::Relaxed));
        }
        // Each row's piece of every buffer.
        let mut rows: Vec<Vec<&mut [u64]>> = (0..vis.len().div_ceil(width)).map(|_| Vec::with_capacity(self.bufs.len())).collect();
        for b in self.bufs.iter_mut() {
            for (r, piece) in b.chunks_mut(width).enumerate() {
                rows[r].push(piece);
            }
        }
        let (colors, background, mut image) = match resolve {
            Some(Resolve::Index { colors, background, image }) => (Some(colors), Some(background), Some(image)),
            Some(Resolve::Packed { image }) => (None, None, Some(image)),
            None => (None, None, None),
        };
        if let Some(image) = &image {
            assert_eq!(image.len(), vis.len(), "image size");
        }
        let image_rows: Vec<Option<&mut [u32]>> = match image.as_mut() {
            Some(im) => im.chunks_mut(width).map(Some).collect(),
            None => (0..rows.len()).map(|_| None).collect(),
        };
        vis.par_chunks_mut(width).zip(rows.into_par_iter()).zip(image_rows.into_par_iter()).enumerate().for_each(|(y, ((out, mut pieces), image))| {
            let c = clear(y as u32);
            match pieces.as_mut_slice() {
                [a, b] => merge_row2(out, a, b, c),
                pieces => {
                    for (j, o) in out.iter_mut().enumerate() {
                        *o.get_mut() = pieces.iter_mut().fold(c, |m, p| m.min(std::mem::replace(&mut p[j], u64::MAX)));
                    }
                }
            }
            if let Some(marks) = marks {
                for o in out.iter_mut() {
                    let i = word_payload(*o.get_mut());
                    if i != EMPTY_PAYLOAD {
                        if let Some(m) = marks.get((i / GROUP_POINTS as u64) as usize) {
                            m.store(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            if let Some(image) = image {
                match (colors, &background) {
                    (Some(colors), Some(bg)) => {
                        let bg = bg(y as u32);
                        for (px, o) in image.iter_mut().zip(out.iter_mut()) {
                            let i = word_payload(*o.get_mut());
                            *px = if i == EMPTY_PAYLOAD { bg } else { colors[i as usize] };
                        }
                    }
                    _ => {
                        for (px, o) in image.iter_mut().zip(out.iter_mut()) {
                            *px = word_payload(*o.get_mut()) as u32;
                        }
                    }
                }
            }
        });
        self.dirty = false;
    }
}

/// The resolve pass done by [`PrivateBuffers::merge`] (the next pass after the draw, when no splat
/// comes between): the same image as [`super::vis::vis_resolve`] or [`super::packed::packed_resolve`].
pub enum Resolve<'a> {
    /// Payloads are point indices: the point's color, or the row's background where none.
    Index { colors: &'a [u32], background: &'a (dyn Fn(u32) -> u32 + Sync), image: &'a mut [u32] },
    /// Payloads are colors.
    Packed { image: &'a mut [u32] },
}

with_avx512! {
    /// `out = min(c, a, b)` per pixel, `a` and `b` reset to `u64::MAX`.
    fn merge_row2(out: &mut [AtomicU64], a: &mut [u64], b: &mut [u64], c: u64) {
        for ((o, a), b) in out.iter_mut().zip(a.iter_mut()).zip(b.iter_mut()) {
            *o.get_mut() = c.min(*a).min(*b);
            (*a, *b) = (u64::MAX, u64::MAX);
        }
    }
}

with_avx512! {
    /// The larger of `acc` and the depth bits of `min(a, b)` (at most the far plane's) per pixel.
    fn depth_row_max2(a: &[u64], b: &[u64], acc: &mut [u32]) {
        for ((o, &a), &b) in acc.iter_mut().zip(a).zip(b) {
            *o = (*o).max(word_depth(a.min(b)).min(FAR_DEPTH_BITS));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::gpu_data::word;

    /// The merge is the per-pixel minimum of the clear word and every buffer, the buffers come back
    /// clear, and the marks are those of the merged buffer's points; `run` hands every item out once.
    #[test]
    fn merge_takes_the_minimum_and_resets() {
        for count in [1usize, 2, 3] {
            let (w, h) = (7usize, 5usize);
            let mut p = PrivateBuffers::default();
            p.prepare(count, w * h);
            let drawn = p.run(w * h * 3, 4, |items, buf| {
                for i in items.clone() {
                    let px = i % (w * h);
                    buf[px] = buf[px].min(word(((i * 7919) % 1000) as u32, (i % 300) as u64));
                }
                items.len()
            }, |a, b| a + b);
            assert_eq!(drawn, w * h * 3, "every item once");
            let want: Vec<u64> = (0..w * h)
                .map(|px| (0..3).map(|k| k * w * h + px).map(|i| word(((i * 7919) % 1000) as u32, (i % 300) as u64)).min().unwrap())
                .map(|v| v.min(word(900, 5)))
                .collect();
            let raw = |px: usize| (0..3).map(|k| k * w * h + px).map(|i| word(((i * 7919) % 1000) as u32, (i % 300) as u64)).min().unwrap();
            assert!((0..w * h).all(|i| p.depth(i) == word_depth(raw(i))), "depth before the merge");
            let mut row = vec![0u32; w];
            p.depth_row_max(w, &mut row);
            assert!((0..w).all(|x| row[x] == word_depth(raw(w + x))), "a row's depth");
            let mut vis: Vec<AtomicU64> = (0..w * h).map(|_| AtomicU64::new(0)).collect();
            let marks: Vec<AtomicU8> = (0..2).map(|_| AtomicU8::new(1)).collect();
            let mut image = vec![0u32; w * h];
            let colors: Vec<u32> = (0..300).map(|i| i * 3 + 1).collect();
            let bg = |y: u32| 1000 + y;
            p.merge(&mut vis, w, |_| word(900, 5), Some(&marks), Some(Resolve::Index { colors: &colors, background: &bg, image: &mut image }));
            let want_image: Vec<u32> = want.iter().enumerate().map(|(i, &v)| if word_payload(v) == EMPTY_PAYLOAD { 1000 + (i / w) as u32 } else { colors[word_payload(v) as usize] }).collect();
            assert_eq!(image, want_image, "resolved image");
            let got: Vec<u64> = vis.iter_mut().map(|v| *v.get_mut()).collect();
            assert_eq!(got, want, "{count} buffers");
            assert!(p.bufs.iter().all(|b| b.iter().all(|&v| v == u64::MAX)), "buffers reset");
            let group = |g: u64| want.iter().any(|&v| word_payload(v) / GROUP_POINTS as u64 == g);
            assert_eq!(marks.iter().map(|m| m.load(Ordering::Relaxed) != 0).collect::<Vec<_>>(), [group(0), group(1)]);
        }
    }
}
