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
//! marks the groups that own a pixel. With two buffers (two threads) all of that and the resolve is
//! one pass a row ([`merge_row2`]), by blocks of [`MERGE_BLOCK`] pixels: a block's words are made on
//! the stack from both buffers (which are reset as they are read), stored, their colors prefetched,
//! and the block before resolved and marked from the stack copy, so each buffer line is read once
//! and the colors' cache misses overlap the next block's work. Between the culled modes' two draws, the depth pyramid reads
//! [`PrivateBuffers::depth`] (the smallest word's depth, at most the far plane's, as the cleared
//! buffer would give) without merging. In the culled modes both read only the cells of the frame's
//! [`Cover`] (where a drawn batch may have put a point): elsewhere every buffer holds `u64::MAX`, so the
//! pyramid takes the far plane's depth and the merge the clear word without reading them. Memory: one buffer of 8 bytes a pixel per thread (16.6 MB a
//! thread at 1920 × 1080).
use super::cover::{marked, Cover, CELL_W_PX};
use super::scatter::Switch;
use crate::cpu::prepared::group_shift;
use crate::gpu_data::{word_depth, word_payload, EMPTY_PAYLOAD};
use crate::simd::with_avx512;
use crate::twins::clear::FAR_DEPTH_BITS;
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
            self.bufs = (0..count).map(|_| crate::huge::filled(pixels, u64::MAX)).collect();
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
    pub fn run<R: Send + Default>(
        &mut self,
        len: usize,
        step: usize,
        work: impl Fn(std::ops::Range<usize>, &mut [u64]) -> R + Sync,
        add: impl Fn(R, R) -> R + Sync + Send,
    ) -> R {
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

    /// Sets `acc[j]` to the larger of itself and [`Self::depth`] of pixel `first + j`; with `cells`
    /// (the row's cells of the frame's [`Cover`]), pixels of cells not marked are not read: their
    /// buffers hold `u64::MAX` (nothing drawn there), whose depth is the far plane's.
    pub fn depth_row_max(&self, first: usize, acc: &mut [u32], cells: Option<&[u8]>) {
        let end = first + acc.len();
        match self.bufs.as_slice() {
            [a, b] => depth_row_max2(&a[first..end], &b[first..end], acc, cells),
            _ => {
                for (j, o) in acc.iter_mut().enumerate() {
                    *o = (*o).max(if marked(cells, j) { self.depth(first + j) } else { FAR_DEPTH_BITS });
                }
            }
        }
    }

    /// Writes `vis`: each pixel the smallest of `clear(row)` and the buffers' words; resets the
    /// buffers; with `marks`, sets the mark of the group of each pixel's point ([`crate::twins::culled`]:
    /// payloads are point indices, [`group_points`](crate::cpu::prepared::group_points) a group) after clearing every mark; with
    /// `resolve`, also writes the image as the resolve pass would ([`Resolve`]). With `cover`, the
    /// pixels of cells it does not mark are not read (no task drew there, so every buffer holds
    /// `u64::MAX`): they get the clear word. With `stale` (the last frame's cover, when `vis` is known
    /// to hold the clear word outside its cells), the clear word is not stored again where neither cover
    /// marks the cell.
    #[allow(
        clippy::too_many_arguments,
        reason = "the merge's buffers, covers and image, each a different borrow of the backend's state"
    )]
    pub fn merge(
        &mut self,
        vis: &mut [AtomicU64],
        width: usize,
        clear: impl Fn(u32) -> u64 + Sync,
        marks: Option<&[AtomicU8]>,
        resolve: Option<Resolve<'_>>,
        cover: Option<&Cover>,
        stale: Option<&Cover>,
    ) {
        assert!(self.bufs.iter().all(|b| b.len() == vis.len()), "private buffers of the frame's size");
        let width = width.max(1);
        if let Some(m) = marks {
            m.par_iter().for_each(|m| m.store(0, Ordering::Relaxed));
        }
        // Each row's piece of every buffer.
        let mut rows: Vec<Vec<&mut [u64]>> =
            (0..vis.len().div_ceil(width)).map(|_| Vec::with_capacity(self.bufs.len())).collect();
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
        vis.par_chunks_mut(width).zip(rows.into_par_iter()).zip(image_rows.into_par_iter()).enumerate().for_each(
            |(y, ((out, mut pieces), image))| {
                let c = clear(y as u32);
                let image = match (image, colors, &background) {
                    (Some(image), Some(colors), Some(bg)) => {
                        RowImage::Index { colors, background: bg(y as u32), image }
                    }
                    (Some(image), _, _) => RowImage::Packed { image },
                    (None, _, _) => RowImage::None,
                };
                let cells = cover.and_then(|cv| cv.row_cells(y));
                let stale = stale.and_then(|cv| cv.row_cells(y)).filter(|_| SKIP_CLEAN.on());
                match pieces.as_mut_slice() {
                    [a, b] => merge_row2(out, a, b, c, marks, image, prefetch_colors_wanted(), cells, stale),
                    pieces => merge_row_any(out, pieces, c, marks, image, cells),
                }
            },
        );
        self.dirty = false;
    }
}

/// The resolve pass done by [`PrivateBuffers::merge`] (the next pass after the draw, when no splat
/// comes between): the same image as [`crate::twins::vis::vis_resolve`] or [`crate::twins::packed::packed_resolve`].
pub enum Resolve<'a> {
    /// Payloads are point indices: the point's color, or the row's background where none.
    Index { colors: &'a [u32], background: &'a (dyn Fn(u32) -> u32 + Sync), image: &'a mut [u32] },
    /// Payloads are colors.
    Packed { image: &'a mut [u32] },
}

/// What [`PrivateBuffers::merge`] writes of a row's image ([`Resolve`]).
enum RowImage<'a> {
    None,
    /// The color of each pixel's point, or `background` where none.
    Index {
        colors: &'a [u32],
        background: u32,
        image: &'a mut [u32],
    },
    /// The payloads.
    Packed {
        image: &'a mut [u32],
    },
}

/// Whether the merge prefetches a block's colors before it resolves them: unless
/// `PCV_CPU_MERGE_PREFETCH=0` (asked once).
fn prefetch_colors_wanted() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("PCV_CPU_MERGE_PREFETCH").is_none_or(|v| v != "0"))
}

/// Pixels [`merge_row2`] takes at a step: their colors are prefetched a step before they are read.
const MERGE_BLOCK: usize = 32;
const _: () = assert!(CELL_W_PX.is_multiple_of(MERGE_BLOCK), "a merge block lies in one cell of the cover");

/// The marks and the image of `words`, pixels `from..` of a row ([`merge_row2`]). With marks and an
/// image of colors (the culled modes' frames) in one pass over the words, a group's mark read only
/// where a pixel's group differs from the pixel before's (neighbours mostly show points of one group).
#[inline(always)]
fn finish_block(words: &[u64], from: usize, marks: Option<&[AtomicU8]>, image: &mut RowImage<'_>) {
    if let (Some(marks), RowImage::Index { colors, background, image }, true) = (marks, &mut *image, FUSED_FINISH.on())
    {
        let shift = group_shift();
        let mut last = u64::MAX; // no group
        for (px, &w) in image[from..from + words.len()].iter_mut().zip(words) {
            let i = word_payload(w);
            if i == EMPTY_PAYLOAD {
                *px = *background;
                continue;
            }
            let g = i >> shift;
            if g != last {
                last = g;
                set_mark(marks, g);
            }
            *px = colors[i as usize];
        }
        return;
    }
    if let Some(marks) = marks {
        let shift = group_shift();
        for &w in words {
            let i = word_payload(w);
            if i != EMPTY_PAYLOAD {
                set_mark(marks, i >> shift);
            }
        }
    }
    match image {
        RowImage::None => {}
        RowImage::Index { colors, background, image } => {
            for (px, &w) in image[from..from + words.len()].iter_mut().zip(words) {
                let i = word_payload(w);
                *px = if i == EMPTY_PAYLOAD { *background } else { colors[i as usize] };
            }
        }
        RowImage::Packed { image } => {
            for (px, &w) in image[from..from + words.len()].iter_mut().zip(words) {
                *px = word_payload(w) as u32;
            }
        }
    }
}

/// Sets the mark of group `g` (if there is one), reading it first: a mark already set is not written
/// again (no line bouncing between threads).
#[inline(always)]
fn set_mark(marks: &[AtomicU8], g: u64) {
    if let Some(m) = marks.get(g as usize).filter(|m| m.load(Ordering::Relaxed) == 0) {
        m.store(1, Ordering::Relaxed);
    }
}

/// Whether [`finish_block`] sets the marks and the colors in one pass (off with `PCV_CPU_FUSED_FINISH=0`).
pub static FUSED_FINISH: Switch = Switch::new("PCV_CPU_FUSED_FINISH");

/// Whether [`merge_row2`] writes the blocks of cells the cover does not mark without resolving each
/// pixel ([`clear_pixel`]; off with `PCV_CPU_FAST_CLEAR=0`).
pub static FAST_CLEAR: Switch = Switch::new("PCV_CPU_FAST_CLEAR");

/// Whether [`PrivateBuffers::merge`] skips storing the clear word where `vis` holds it already (off
/// with `PCV_CPU_SKIP_CLEAN=0`).
pub static SKIP_CLEAN: Switch = Switch::new("PCV_CPU_SKIP_CLEAN");

/// The image pixel of the clear word `c` as [`finish_block`] writes it, after setting the mark of its
/// point's group if it has one (as [`finish_block`] would for every pixel of a block of `c`).
#[inline]
fn clear_pixel(c: u64, marks: Option<&[AtomicU8]>, image: &RowImage<'_>) -> u32 {
    let mut one = [0u32; 1];
    let mut probe = match image {
        RowImage::None => RowImage::None,
        RowImage::Index { colors, background, .. } => {
            RowImage::Index { colors, background: *background, image: &mut one }
        }
        RowImage::Packed { .. } => RowImage::Packed { image: &mut one },
    };
    finish_block(&[c], 0, marks, &mut probe);
    one[0]
}

/// Writes `px` to pixels `from..from + len` of the row's image (if it has one).
#[inline(always)]
fn fill_image(image: &mut RowImage<'_>, from: usize, len: usize, px: u32) {
    match image {
        RowImage::None => {}
        RowImage::Index { image, .. } | RowImage::Packed { image } => image[from..from + len].fill(px),
    }
}

/// Asks the cache for the colors of the points of `words` (a hint).
#[inline(always)]
fn prefetch_colors(words: &[u64], image: &RowImage<'_>) {
    #[cfg(target_arch = "x86_64")]
    if let RowImage::Index { colors, .. } = image {
        for &w in words {
            let i = word_payload(w) as usize;
            // SAFETY: a prefetch reads nothing and never faults; the address is only computed
            // (`wrapping_add`, any index, the empty payload included).
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    colors.as_ptr().wrapping_add(i).cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (words, image);
}

with_avx512! {
    /// One row of the merge of two buffers, in one pass: `out = min(c, a, b)` per pixel, `a` and `b`
    /// reset to `u64::MAX`, the marks set and the image written ([`PrivateBuffers::merge`]). By blocks
    /// of [`MERGE_BLOCK`] pixels: a block's words are made on the stack, stored to `out`, its colors
    /// prefetched (with `prefetch`), and the block before it resolved. A block in a cell that `cells`
    /// (the row's cells of the [`Cover`]) does not mark is the clear word, `a` and `b` not read; its
    /// pixels all get the clear word's pixel, found once a row ([`clear_pixel`], unless
    /// [`FAST_CLEAR`] is off: then each is resolved as a drawn block's), and it is not
    /// stored to `out` where `stale` (the row's cells of the last frame's cover, where `out` may hold
    /// other words) does not mark the cell either.
    #[allow(clippy::too_many_arguments, reason = "one row of the merge: a plain function the AVX-512 loop inlines")]
    fn merge_row2(out: &mut [AtomicU64], a: &mut [u64], b: &mut [u64], c: u64, marks: Option<&[AtomicU8]>, image: RowImage<'_>, prefetch: bool, cells: Option<&[u8]>, stale: Option<&[u8]>) {
        let mut image = image;
        let n = out.len();
        assert!(a.len() == n && b.len() == n, "row lengths");
        let mut blocks = [[0u64; MERGE_BLOCK]; 2];
        let mut last: Option<(usize, usize)> = None;
        // A block of clear words, resolved once for the row (with a cover and [`FAST_CLEAR`] on).
        let clear_px = (cells.is_some() && FAST_CLEAR.on()).then(|| clear_pixel(c, marks, &image));
        let mut from = 0;
        while from < n {
            let len = MERGE_BLOCK.min(n - from);
            let k = (from / MERGE_BLOCK) & 1;
            let words = &mut blocks[k][..len];
            if marked(cells, from) {
                for ((w, a), b) in words.iter_mut().zip(&mut a[from..from + len]).zip(&mut b[from..from + len]) {
                    *w = c.min(*a).min(*b);
                    (*a, *b) = (u64::MAX, u64::MAX);
                }
            } else if let Some(px) = clear_px {
                // Nothing drawn here: the clear word, its pixel, no mark to set (done once above). The
                // block in flight is finished first (the ring's slots stay those of consecutive blocks).
                if let Some((f, l)) = last.take() {
                    finish_block(&blocks[(f / MERGE_BLOCK) & 1][..l], f, marks, &mut image);
                }
                // `out` holds `c` already where the last frame's cover (`stale`) does not mark the cell.
                if marked(stale, from) {
                    for o in &mut out[from..from + len] {
                        *o.get_mut() = c;
                    }
                }
                fill_image(&mut image, from, len, px);
                from += len;
                continue;
            } else {
                words.fill(c);
            }
            for (o, &w) in out[from..from + len].iter_mut().zip(words.iter()) {
                *o.get_mut() = w;
            }
            if prefetch {
                prefetch_colors(words, &image);
            }
            if let Some((f, l)) = last {
                finish_block(&blocks[(f / MERGE_BLOCK) & 1][..l], f, marks, &mut image);
            }
            last = Some((from, len));
            from += len;
        }
        if let Some((f, l)) = last {
            finish_block(&blocks[(f / MERGE_BLOCK) & 1][..l], f, marks, &mut image);
        }
    }
}

/// [`merge_row2`] for any number of buffers, plain stores.
fn merge_row_any(
    out: &mut [AtomicU64],
    pieces: &mut [&mut [u64]],
    c: u64,
    marks: Option<&[AtomicU8]>,
    image: RowImage<'_>,
    cells: Option<&[u8]>,
) {
    let mut image = image;
    let mut block = [0u64; MERGE_BLOCK];
    for (k, chunk) in out.chunks_mut(MERGE_BLOCK).enumerate() {
        let from = k * MERGE_BLOCK;
        let drawn = marked(cells, from);
        for (j, (o, w)) in chunk.iter_mut().zip(block.iter_mut()).enumerate() {
            *w = if drawn {
                pieces.iter_mut().fold(c, |m, p| m.min(std::mem::replace(&mut p[from + j], u64::MAX)))
            } else {
                c
            };
            *o.get_mut() = *w;
        }
        finish_block(&block[..chunk.len()], from, marks, &mut image);
    }
}

with_avx512! {
    /// The larger of `acc` and the depth bits of `min(a, b)` (at most the far plane's) per pixel; in
    /// cells `cells` does not mark, the far plane's (`a` and `b` are `u64::MAX` there, not read).
    fn depth_row_max2(a: &[u64], b: &[u64], acc: &mut [u32], cells: Option<&[u8]>) {
        match cells {
            None => {
                for ((o, &a), &b) in acc.iter_mut().zip(a).zip(b) {
                    *o = (*o).max(word_depth(a.min(b)).min(FAR_DEPTH_BITS));
                }
            }
            Some(cells) => {
                for (((acc, a), b), &cell) in acc.chunks_mut(CELL_W_PX).zip(a.chunks(CELL_W_PX)).zip(b.chunks(CELL_W_PX)).zip(cells) {
                    if cell != 0 {
                        for ((o, &a), &b) in acc.iter_mut().zip(a).zip(b) {
                            *o = (*o).max(word_depth(a.min(b)).min(FAR_DEPTH_BITS));
                        }
                    } else {
                        for o in acc.iter_mut() {
                            *o = (*o).max(FAR_DEPTH_BITS);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::prepared::group_points;
    use crate::gpu_data::word;

    /// The merge is the per-pixel minimum of the clear word and every buffer, the buffers come back
    /// clear, and the marks are those of the merged buffer's points; `run` hands every item out once.
    /// Three frames on the same buffers, drawn everywhere or only in runs of pixels, each at other
    /// pixels: a word the merge failed to reset would show in the next frame.
    #[test]
    fn merge_takes_the_minimum_and_resets() {
        // 75 pixels a row: the fused two-buffer merge's blocks of 32, both halves of its ping-pong and a tail.
        for (count, (w, h)) in
            [1usize, 2, 3].into_iter().flat_map(|c| [(c, (7usize, 5usize)), (c, (75, 3)), (c, (64, 4))])
        {
            let mut p = PrivateBuffers::default();
            p.prepare(count, w * h);
            for frame in 0..3usize {
                // Frame 0 everywhere; frames 1 and 2 in runs of 40 pixels, every third run, shifted.
                let drawn_at = |px: usize| frame == 0 || (px / 40 + frame).is_multiple_of(3);
                let word_of = |i: usize| word(((i * 7919 + frame * 13) % 1000) as u32, ((i + frame) % 300) as u64);
                let drawn = p.run(w * h * 3, 4, |items, _| items.len(), |a, b| a + b);
                // Drawn here, each word into buffer `i % count` (`run` may hand every item of so
                // little work to one task): every buffer gets words to merge and reset.
                for i in 0..w * h * 3 {
                    let (px, buf) = (i % (w * h), &mut p.bufs[i % count]);
                    if drawn_at(px) {
                        buf[px] = buf[px].min(word_of(i));
                    }
                }
                assert_eq!(drawn, w * h * 3, "every item once");
                let raw = |px: usize| {
                    if drawn_at(px) {
                        (0..3).map(|k| k * w * h + px).map(word_of).min().unwrap()
                    } else {
                        u64::MAX
                    }
                };
                let want: Vec<u64> = (0..w * h).map(|px| raw(px).min(word(900, 5))).collect();
                assert!(
                    (0..w * h).all(|i| p.depth(i) == word_depth(raw(i)).min(FAR_DEPTH_BITS)),
                    "depth before the merge"
                );
                for y in 0..h {
                    let mut row = vec![0u32; w];
                    p.depth_row_max(y * w, &mut row, None);
                    assert!(
                        (0..w).all(|x| row[x] == word_depth(raw(y * w + x)).min(FAR_DEPTH_BITS)),
                        "a row's depth, frame {frame}"
                    );
                }
                let mut vis: Vec<AtomicU64> = (0..w * h).map(|_| AtomicU64::new(0)).collect();
                let marks: Vec<AtomicU8> = (0..2).map(|_| AtomicU8::new(1)).collect();
                let mut image = vec![0u32; w * h];
                let colors: Vec<u32> = (0..300).map(|i| i * 3 + 1).collect();
                let bg = |y: u32| 1000 + y;
                p.merge(
                    &mut vis,
                    w,
                    |_| word(900, 5),
                    Some(&marks),
                    Some(Resolve::Index { colors: &colors, background: &bg, image: &mut image }),
                    None,
                    None,
                );
                let want_image: Vec<u32> = want
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        if word_payload(v) == EMPTY_PAYLOAD {
                            1000 + (i / w) as u32
                        } else {
                            colors[word_payload(v) as usize]
                        }
                    })
                    .collect();
                assert_eq!(image, want_image, "resolved image");
                let got: Vec<u64> = vis.iter_mut().map(|v| *v.get_mut()).collect();
                assert_eq!(got, want, "{count} buffers, frame {frame}");
                assert!(p.bufs.iter().all(|b| b.iter().all(|&v| v == u64::MAX)), "buffers reset");
                let group = |g: u64| want.iter().any(|&v| word_payload(v) / group_points() as u64 == g);
                assert_eq!(
                    marks.iter().map(|m| m.load(Ordering::Relaxed) != 0).collect::<Vec<_>>(),
                    [group(0), group(1)]
                );
            }
        }
    }

    /// The two-buffer row merge gives the minimum's words, image and marks, with and without the
    /// colors' prefetch, with the marks and colors in one pass or two, for each kind of image, at row
    /// lengths around its block size.
    #[test]
    fn row_merge_gives_words_image_and_marks() {
        let colors: Vec<u32> = (0..2000).map(|i| i * 7 + 3).collect();
        for n in [1usize, 31, 32, 33, 64, 65, 100] {
            let a0: Vec<u64> = (0..n)
                .map(|j| if j % 5 == 0 { u64::MAX } else { word((j * 37 % 101) as u32, (j * 13 % 1900) as u64) })
                .collect();
            let b0: Vec<u64> = (0..n)
                .map(|j| if j % 3 == 0 { u64::MAX } else { word((j * 53 % 97) as u32, (j * 29 % 1900) as u64) })
                .collect();
            let c = word(99, EMPTY_PAYLOAD);
            let want: Vec<u64> = (0..n).map(|j| c.min(a0[j]).min(b0[j])).collect();
            for kind in 0..3 {
                let mut got = Vec::new();
                for (prefetch, fused) in [(false, false), (true, false), (false, true), (true, true)] {
                    // The marks and colors in one pass or two (the same either way).
                    FUSED_FINISH.set(fused);
                    let (mut a, mut b) = (a0.clone(), b0.clone());
                    let mut out: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(7)).collect();
                    let marks: Vec<AtomicU8> = (0..8).map(|_| AtomicU8::new(0)).collect();
                    let mut image = vec![0u32; n];
                    let row = row_image(kind, &colors, &mut image);
                    merge_row2(&mut out, &mut a, &mut b, c, Some(&marks), row, prefetch, None, None);
                    let words: Vec<u64> = out.iter_mut().map(|o| *o.get_mut()).collect();
                    assert_eq!(words, want, "{n} pixels, image {kind}, prefetch {prefetch}");
                    assert!(a.iter().chain(&b).all(|&v| v == u64::MAX), "reset");
                    let want_image: Vec<u32> = match kind {
                        0 => vec![0; n],
                        1 => {
                            want.iter()
                                .map(|&v| {
                                    if word_payload(v) == EMPTY_PAYLOAD {
                                        5
                                    } else {
                                        colors[word_payload(v) as usize]
                                    }
                                })
                                .collect()
                        }
                        _ => want.iter().map(|&v| word_payload(v) as u32).collect(),
                    };
                    assert_eq!(image, want_image, "{n} pixels, image {kind}, prefetch {prefetch}");
                    let want_marks: Vec<u8> = (0..8u64)
                        .map(|g| {
                            want.iter().any(|&v| {
                                word_payload(v) != EMPTY_PAYLOAD && word_payload(v) / group_points() as u64 == g
                            }) as u8
                        })
                        .collect();
                    let marks: Vec<u8> = marks.iter().map(|m| m.load(Ordering::Relaxed)).collect();
                    assert_eq!(marks, want_marks, "{n} pixels, image {kind}, prefetch {prefetch}");
                    got.push((words, image));
                }
                assert!(got.iter().all(|g| *g == got[0]), "{n} pixels, image {kind}");
            }
        }
        FUSED_FINISH.set(true);
    }

    /// The row image of the merge tests' `kind`: 0 none, 1 colors by index (background 5), 2 packed.
    fn row_image<'a>(kind: i32, colors: &'a [u32], image: &'a mut [u32]) -> RowImage<'a> {
        match kind {
            0 => RowImage::None,
            1 => RowImage::Index { colors, background: 5, image },
            _ => RowImage::Packed { image },
        }
    }

    /// With a row's cells (every other one marked, words only there), the blocks of unmarked cells
    /// written at once (the clear word's pixel and mark, [`clear_pixel`]) give the words, image and
    /// marks of resolving them pixel by pixel, for each kind of image, a clear word with and without a
    /// point (whose group's mark must then be set), at row lengths around the cells' width.
    #[test]
    fn fast_clear_blocks_are_the_resolved_ones() {
        let colors: Vec<u32> = (0..3000).map(|i| i * 5 + 1).collect();
        for n in [1usize, 63, 64, 65, 128, 200, 257] {
            let cells: Vec<u8> = (0..n.div_ceil(CELL_W_PX)).map(|k| (k % 2 == 0) as u8).collect();
            let drawn = |j: usize| cells[j / CELL_W_PX] != 0;
            let a0: Vec<u64> = (0..n)
                .map(|j| {
                    if !drawn(j) || j % 5 == 0 {
                        u64::MAX
                    } else {
                        word((j * 37 % 101) as u32, (j * 13 % 900) as u64)
                    }
                })
                .collect();
            let b0: Vec<u64> =
                (0..n)
                    .map(|j| {
                        if !drawn(j) || j % 3 == 0 {
                            u64::MAX
                        } else {
                            word((j * 53 % 97) as u32, (j * 29 % 900) as u64)
                        }
                    })
                    .collect();
            // The clear word: no point, or (as a packed clear word's color) a payload in group 9.
            for c in [word(99, EMPTY_PAYLOAD), word(99, 9 * group_points() as u64 + 3)] {
                for kind in 0..3 {
                    let mut got = Vec::new();
                    for fast in [false, true] {
                        FAST_CLEAR.set(fast);
                        let (mut a, mut b) = (a0.clone(), b0.clone());
                        let mut out: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(7)).collect();
                        let marks: Vec<AtomicU8> = (0..12).map(|_| AtomicU8::new(0)).collect();
                        let mut image = vec![0u32; n];
                        let row = row_image(kind, &colors, &mut image);
                        merge_row2(&mut out, &mut a, &mut b, c, Some(&marks), row, true, Some(&cells), None);
                        assert!(a.iter().chain(&b).all(|&v| v == u64::MAX), "reset");
                        let words: Vec<u64> = out.iter_mut().map(|o| *o.get_mut()).collect();
                        assert!(
                            words.iter().enumerate().all(|(j, &w)| w == c.min(a0[j]).min(b0[j])),
                            "{n} pixels, image {kind}, fast {fast}"
                        );
                        got.push((words, image, marks.iter().map(|m| m.load(Ordering::Relaxed)).collect::<Vec<u8>>()));
                    }
                    FAST_CLEAR.set(true);
                    assert!(
                        got[0] == got[1],
                        "{n} pixels, image {kind}, clear word {c:#x}: fast and resolved blocks differ"
                    );
                    assert!(word_payload(c) == EMPTY_PAYLOAD || got[1].2[9] == 1, "the clear word's group marked");
                }
            }
        }
    }

    /// With a cover, the merge and the pyramid's rows give what they give without it when words lie
    /// only in marked cells; a word in a cell the cover does not mark is not read (so the test can fail).
    #[test]
    fn cover_skips_only_unmarked_cells() {
        let (w, h) = (200usize, 9usize);
        let f = crate::FrameParams::new(glam::Mat4::IDENTITY, w as u32, h as u32).uniforms();
        for count in [2usize, 3] {
            // Cover: the batch-less mask, then cells marked by hand: (0, 0) and (2, 1) (columns of 64 px, rows of 4).
            let mut cover = Cover::new(w as u32, h as u32);
            cover.add_batches(&f, &[], &[], false);
            assert!(cover.row(0).iter().chain(cover.row(8)).all(|&c| c == 0));
            let marked_by_hand =
                |x: usize, y: usize| (x / CELL_W_PX, y / 4) == (0, 0) || (x / CELL_W_PX, y / 4) == (2, 1);
            let run = |cover: Option<&Cover>, stray: bool| {
                let mut p = PrivateBuffers::default();
                p.prepare(count, w * h);
                for i in 0..w * h {
                    let (x, y) = (i % w, i / w);
                    if marked_by_hand(x, y) || (stray && i == 3 * w + 70) {
                        p.bufs[i % count][i] = word((i % 700) as u32, i as u64);
                    }
                }
                let mut rows = vec![0u32; w * h];
                for (y, row) in rows.chunks_mut(w).enumerate() {
                    p.depth_row_max(y * w, row, cover.map(|c| c.row(y)));
                }
                let mut vis: Vec<AtomicU64> = (0..w * h).map(|_| AtomicU64::new(0)).collect();
                let mut image = vec![0u32; w * h];
                let colors: Vec<u32> = (0..(w * h) as u32).map(|i| i * 3 + 1).collect();
                p.merge(
                    &mut vis,
                    w,
                    |_| word(900, EMPTY_PAYLOAD),
                    None,
                    Some(Resolve::Index { colors: &colors, background: &|y| 1000 + y, image: &mut image }),
                    cover,
                    None,
                );
                (rows, vis.iter_mut().map(|v| *v.get_mut()).collect::<Vec<_>>(), image)
            };
            let want = run(None, false);
            for (k, c) in cover.cells.iter_mut().enumerate() {
                let (cx, cy) = (k % 4, k / 4);
                *c = ((cx, cy) == (0, 0) || (cx, cy) == (2, 1)) as u8;
            }
            assert!(run(Some(&cover), false) == want, "{count} buffers: words only in marked cells");
            let stray = run(None, true);
            assert!(
                stray.0 != want.0 && stray.1 != want.1 && stray.2 != want.2,
                "{count} buffers: the stray word shows without the cover"
            );
            assert!(run(Some(&cover), true) == want, "{count} buffers: the stray word's cell is not read");
        }
    }

    with_avx512! {
        /// The merge's row before the fused one (`out = min(c, a, b)`, reset), for [`merge_speed`].
        fn old_row2(out: &mut [AtomicU64], a: &mut [u64], b: &mut [u64], c: u64) {
            for ((o, a), b) in out.iter_mut().zip(a.iter_mut()).zip(b.iter_mut()) {
                *o.get_mut() = c.min(*a).min(*b);
                (*a, *b) = (u64::MAX, u64::MAX);
            }
        }
    }

    /// Not a check: times the two-buffer merge with marks and the resolve, 1920 × 1080, with words
    /// whose points lie near their pixel's neighbours' (as Morton-ordered points do), 10M colors:
    /// the merge before the fused row (three loops a row), and the fused row with and without the
    /// colors' prefetch, alternated. `cargo test --release --lib merge_speed -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check: cargo test --release -p pcv-render --lib merge_speed -- --ignored --nocapture"]
    fn merge_speed() {
        let (w, h, points) = (1920usize, 1080usize, 10_000_000usize);
        let colors: Vec<u32> = (0..points as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let marks: Vec<AtomicU8> = (0..points.div_ceil(group_points())).map(|_| AtomicU8::new(0)).collect();
        let spread = |v: u32| (0..16).fold(0u64, |m, k| m | (((v >> k) & 1) as u64) << (2 * k));
        let word_at = |x: usize, y: usize, k: u64| {
            let h = crate::twins::rng::mix64((x * 7 + y * 131 + k as usize) as u64);
            if h.is_multiple_of(4) {
                return u64::MAX; // no point of this buffer here
            }
            let index = ((spread(x as u32 / 2) | spread(y as u32 / 2) << 1) * 2 + (h >> 20) % 3) % points as u64;
            word((h >> 40) as u32 & 0x3f7f_ffff, index)
        };
        let a0: Vec<u64> = (0..w * h).map(|i| word_at(i % w, i / w, 0)).collect();
        let b0: Vec<u64> = (0..w * h).map(|i| word_at(i % w, i / w, 1)).collect();
        let (mut a, mut b) = (a0.clone(), b0.clone());
        let mut out: Vec<AtomicU64> = (0..w * h).map(|_| AtomicU64::new(0)).collect();
        let mut image = vec![0u32; w * h];
        let c = word(0x3f80_0000, EMPTY_PAYLOAD);
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); 3];
        for _round in 0..15 {
            for (v, t) in times.iter_mut().enumerate() {
                a.copy_from_slice(&a0);
                b.copy_from_slice(&b0);
                let start = std::time::Instant::now();
                marks.par_iter().for_each(|m| m.store(0, Ordering::Relaxed));
                out.par_chunks_mut(w)
                    .zip(a.par_chunks_mut(w))
                    .zip(b.par_chunks_mut(w))
                    .zip(image.par_chunks_mut(w))
                    .for_each(|(((o, a), b), im)| {
                        if v == 0 {
                            old_row2(o, a, b, c);
                            for x in o.iter_mut() {
                                let i = word_payload(*x.get_mut());
                                if i != EMPTY_PAYLOAD {
                                    if let Some(m) = marks.get((i >> group_shift()) as usize) {
                                        m.store(1, Ordering::Relaxed);
                                    }
                                }
                            }
                            for (px, x) in im.iter_mut().zip(o.iter_mut()) {
                                let i = word_payload(*x.get_mut());
                                *px = if i == EMPTY_PAYLOAD { 9 } else { colors[i as usize] };
                            }
                        } else {
                            merge_row2(
                                o,
                                a,
                                b,
                                c,
                                Some(&marks),
                                RowImage::Index { colors: &colors, background: 9, image: im },
                                v == 2,
                                None,
                                None,
                            );
                        }
                    });
                t.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (name, t) in ["old (3 loops)", "fused", "fused, prefetch"].iter().zip(&mut times) {
            t.sort_by(|x, y| x.total_cmp(y));
            println!("{name:>22}: min {:.2} ms, median {:.2} ms", t[0], t[t.len() / 2]);
        }
    }
}
