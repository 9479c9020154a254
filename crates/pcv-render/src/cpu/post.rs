//! The post passes made for CPUs: point size by scattering the visible points' disks, and eye-dome
//! lighting over an image of log distances. They write the same buffers as the twins
//! ([`crate::twins::splat`], [`crate::twins::edl`]) bit for bit — tested against them below and in
//! `cpu::tests` — at a small part of the twins' cost.
//!
//! How it works.
//!
//! **Splat.** The twin gathers a (2R + 1)² window at every pixel (81 words at R = 4). Most pixels need
//! none of that: a point grows past its own pixel only when its disk reaches a neighbour (4 · |d|² ≤
//! diameter², the twins' rule, with |d| ≥ 1). So the frame is read once, in bands of [`BAND_ROWS`] rows
//! on all cores, to list those points ("sources"); then each band paints the disks of the sources
//! within R rows of it — a span per row, from a table of half widths by (largest covered 4 · |d|²,
//! row offset) — as an integer min of 64-bit words (depth bits, payload) in place. A pixel's own word
//! takes part in the min, and a background pixel's word (far depth) loses to every point's, so the
//! buffer ends as the twin's output: the nearest covering point, or its own word. The adaptive
//! diameter (the cloud's spacing seen from the point's distance) falls as the depth rises, through
//! float operations each monotone, so whether a point grows is a threshold on its depth bits: one
//! binary search a frame finds it, and the scan compares integers, dividing only for the sources
//! (with a spacing per batch, a level-of-detail pool, each visible point divides). The reference
//! mode's separate depth and colour buffers are painted as the same words (depth, colour)
//! lexicographically, so its image needs no visibility buffer and no resolve afterwards.
//!
//! Cost: one read of the frame plus the sources' disk areas, which for adaptive sizes is about five
//! times the pixels the points cover (their disks are 2.5 spacings across) and nothing for points
//! already closer than a pixel; fixed sizes paint every visible point's disk.
//!
//! **EDL.** The twin takes nine logarithms and nine divisions a pixel (its own distance and its eight
//! neighbours'). Here each pixel's log2 view distance is computed once into a padded image
//! ([`EDL_PAD`] pixels of "empty" around it, so no neighbour read needs a bounds test), then each row
//! sums its eight neighbour rows with the twins' float operations in the twins' order, and shades the
//! pixels whose sum is positive (a zero sum leaves a colour unchanged: 2^0 = 1). The loops are plain
//! slices of one row, which the compiler vectorizes (AVX2, or AVX-512 where the CPU has it).
use crate::gpu_data::{word_depth, word_payload, PostUniforms, BATCH_POINTS, SPLAT_MAX_RADIUS};
use crate::simd::with_avx512;
use crate::twins::post::{adaptive_diam2, adaptive_px, exp2_neg, log2, splat_q, view_distance, FAR_DEPTH_BITS};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Whether the backend runs these passes (else the twins; off with `PCV_CPU_POST=0`, to time them).
pub static FAST: super::scatter::Switch = super::scatter::Switch::new("PCV_CPU_POST");

/// Rows a band of the splat: its sources are listed and its pixels painted by one task. At least
/// [`SPLAT_MAX_RADIUS`], so a disk reaches only the bands next to its own.
pub const BAND_ROWS: usize = 32;
const _: () = assert!(BAND_ROWS >= SPLAT_MAX_RADIUS as usize);

/// Pixels of "empty" around the EDL's log-distance image: the largest neighbour offset.
pub const EDL_PAD: usize = 8;

thread_local! {
    /// The reference mode's band as words while it is painted, kept from frame to frame per thread.
    static BAND_WORDS: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A visible point whose disk reaches past its pixel.
#[derive(Clone, Copy, Debug)]
struct Source {
    x: u16,
    y: u16,
    /// The largest 4 · |d|² its disk covers (capped at the window's corner).
    qmax: u16,
    word: u64,
}

/// What the fast post passes keep between frames (their scratch memory).
#[derive(Default)]
pub struct PostScratch {
    sources: Vec<Vec<Source>>,
    log_dist: Vec<f32>,
}

impl PostScratch {
    /// Memory held, in bytes.
    pub fn bytes(&self) -> usize {
        self.sources.iter().map(|s| s.capacity() * std::mem::size_of::<Source>()).sum::<usize>()
            + self.log_dist.capacity() * 4
    }
}

/// The frame a splat reads and paints.
pub enum SplatFrame<'a> {
    /// A visibility buffer of words, painted in place.
    Words(&'a mut [AtomicU64]),
    /// The reference mode's depth buffer and colours (the target), painted in place as words
    /// (depth bits, colour).
    DepthColor(&'a mut [AtomicU32], &'a mut [u32]),
}

/// How a splat decides a visible word's disk: the twins' rule, once per frame.
struct Sizes<'a> {
    u: &'a PostUniforms,
    r: i32,
    /// 4 · 2R²: a disk covering this covers the whole window.
    qcap: u32,
    /// Fixed sizes: N².
    fixed_q: Option<u32>,
    adaptive_px: f32,
    batch_spacing_m: Option<&'a [f32]>,
    /// Adaptive sizes with one spacing: the largest depth bits whose disk reaches a neighbour (`None`:
    /// no point grows).
    grow_below: Option<u32>,
    /// `half[q * (R + 1) + |dy|]`: the half width of a disk covering 4 · |d|² ≤ q on the row `dy` away
    /// (−1: none).
    half: Vec<i8>,
}

impl<'a> Sizes<'a> {
    fn new(u: &'a PostUniforms, batch_spacing_m: Option<&'a [f32]>) -> Sizes<'a> {
        let r = u.splat_radius_px.min(SPLAT_MAX_RADIUS) as i32;
        let qcap = (8 * r * r) as u32;
        let fixed_q = (u.splat_diameter_px != 0).then_some(u.splat_diameter_px * u.splat_diameter_px);
        let mut half = vec![-1i8; (qcap as usize + 1) * (r as usize + 1)];
        for q in 0..=qcap as i32 {
            for dy in 0..=r {
                let widest = (0..=r).rev().find(|&dx| splat_q(u, dx, dy) <= q);
                half[q as usize * (r as usize + 1) + dy as usize] = widest.map_or(-1, |w| w as i8);
            }
        }
        let mut s =
            Sizes { u, r, qcap, fixed_q, adaptive_px: u.adaptive_px_at_1m, batch_spacing_m, grow_below: None, half };
        if fixed_q.is_none() && batch_spacing_m.is_none() {
            // qmax falls as the depth bits rise (module doc): the last bits below the far plane with qmax ≥ 4.
            let grows = |bits: u32| s.adaptive_q(bits, s.adaptive_px) >= 4;
            if grows(0) {
                let (mut lo, mut hi) = (0u32, FAR_DEPTH_BITS); // grows(lo), and nothing at or past hi does
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if grows(mid) {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                s.grow_below = Some(lo);
            }
        }
        s
    }

    /// The twins' adaptive rule as the largest covered 4 · |d|²: q ≤ diameter² for whole q is q ≤
    /// floor(diameter²) (NaN and negatives cover nothing past the pixel).
    #[inline(always)]
    fn adaptive_q(&self, depth_bits: u32, px: f32) -> u32 {
        let d2 = adaptive_diam2(adaptive_px(self.u, px, depth_bits), self.r);
        if d2 >= self.qcap as f32 {
            self.qcap
        } else if d2 >= 0.0 {
            d2 as u32
        } else {
            0
        }
    }

    /// The largest 4 · |d|² the disk of visible word `w` covers.
    #[inline(always)]
    fn qmax(&self, w: u64) -> u32 {
        let d = word_depth(w);
        if let Some(q) = self.fixed_q {
            return q.min(self.qcap);
        }
        match self.batch_spacing_m {
            Some(s) => {
                let px = s.get((word_payload(w) / BATCH_POINTS as u64) as usize).map_or(0.0, |s| self.adaptive_px * s);
                self.adaptive_q(d, px)
            }
            None if self.grow_below.is_some_and(|g| d <= g) => self.adaptive_q(d, self.adaptive_px),
            None => 0,
        }
    }
}

/// Point size in place: the buffer of `frame` ends as the twin [`crate::twins::splat::splat`] would
/// write it (for [`SplatFrame::DepthColor`], its output's depth and payload bits).
pub fn splat(u: &PostUniforms, frame: SplatFrame<'_>, batch_spacing_m: Option<&[f32]>, scratch: &mut PostScratch) {
    let (w, h) = (u.width as usize, u.height as usize);
    let sizes = Sizes::new(u, batch_spacing_m);
    let bands = h.div_ceil(BAND_ROWS);
    scratch.sources.resize_with(bands, Vec::new);
    let sources = &mut scratch.sources[..bands];
    // Fixed sizes and per-batch spacings: every visible word may grow; one spacing: those below the threshold.
    let limit = match (&sizes.fixed_q, batch_spacing_m, sizes.grow_below) {
        (None, None, g) => g,
        _ => Some(FAR_DEPTH_BITS - 1),
    };
    let Some(limit) = limit else {
        return; // no point grows past its pixel
    };
    // Plain memory from here on (the buffers are borrowed whole): loops over it vectorize, atomics' do not.
    let frame = match frame {
        SplatFrame::Words(v) => {
            assert_eq!(v.len(), w * h, "splat buffer size");
            Plain::Words(plain_u64(v))
        }
        SplatFrame::DepthColor(d, c) => {
            assert!(d.len() == w * h && c.len() == w * h, "splat buffer sizes");
            Plain::DepthColor(plain_u32(d), c)
        }
    };
    // Phase 1: every band lists its sources (reads only).
    match &frame {
        Plain::Words(v) => {
            let candidates = |y: usize, limit, mask: &mut [u64]| candidates_words(&v[y * w..(y + 1) * w], limit, mask);
            find_sources(&sizes, w, h, limit, sources, candidates, |i| v[i])
        }
        Plain::DepthColor(d, c) => {
            let candidates = |y: usize, limit, mask: &mut [u64]| candidates_depth(&d[y * w..(y + 1) * w], limit, mask);
            find_sources(&sizes, w, h, limit, sources, candidates, |i| crate::gpu_data::word(d[i], c[i] as u64))
        }
    }
    if sources.iter().all(Vec::is_empty) {
        return;
    }
    // Phase 2: every band paints the disks that reach it (writes only its own rows).
    let sources = &scratch.sources[..bands];
    match frame {
        Plain::Words(v) => v
            .par_chunks_mut(BAND_ROWS * w)
            .enumerate()
            .for_each(|(b, band)| paint_words(&sizes, sources, b, w, h, band)),
        Plain::DepthColor(d, c) => {
            d.par_chunks_mut(BAND_ROWS * w).zip(c.par_chunks_mut(BAND_ROWS * w)).enumerate().for_each(
                |(b, (dband, cband))| {
                    if sources[b.saturating_sub(1)..(b + 2).min(bands)].iter().all(Vec::is_empty) {
                        return;
                    }
                    // The band as words, painted, and split back: a word's min is one instruction.
                    BAND_WORDS.with_borrow_mut(|words| {
                        words.clear();
                        words.extend(dband.iter().zip(cband.iter()).map(|(&d, &c)| crate::gpu_data::word(d, c as u64)));
                        paint_words(&sizes, sources, b, w, h, words);
                        for ((d, c), &v) in dband.iter_mut().zip(cband.iter_mut()).zip(words.iter()) {
                            (*d, *c) = (word_depth(v), word_payload(v) as u32);
                        }
                    })
                },
            )
        }
    }
}

/// Lists each band's sources: the visible words at or below depth bits `limit` whose disk reaches a
/// neighbour. `candidates(y, limit, mask)` sets bit x % 64 of `mask[x / 64]` where row y's depth bits
/// are at most `limit` (a vectorized compare, so empty and far pixels cost a bit each).
fn find_sources(
    sizes: &Sizes<'_>,
    w: usize,
    h: usize,
    limit: u32,
    sources: &mut [Vec<Source>],
    candidates: impl Fn(usize, u32, &mut [u64]) + Sync,
    word_at: impl Fn(usize) -> u64 + Sync,
) {
    sources.par_iter_mut().enumerate().for_each(|(b, list)| {
        list.clear();
        let mut mask = vec![0u64; w.div_ceil(64)];
        for y in b * BAND_ROWS..((b + 1) * BAND_ROWS).min(h) {
            candidates(y, limit, &mut mask);
            for (k, &m) in mask.iter().enumerate() {
                let mut m = m;
                while m != 0 {
                    let x = k * 64 + m.trailing_zeros() as usize;
                    m &= m - 1;
                    let word = word_at(y * w + x);
                    let qmax = sizes.qmax(word);
                    if qmax >= 4 {
                        list.push(Source { x: x as u16, y: y as u16, qmax: qmax as u16, word });
                    }
                }
            }
        }
    });
}

with_avx512! {
    /// [`find_sources`]' candidates of one row of depth bits.
    fn candidates_depth(row: &[u32], limit: u32, mask: &mut [u64]) {
        for (m, chunk) in mask.iter_mut().zip(row.chunks(64)) {
            // A min over the chunk first (it vectorizes): most chunks are all empty or all far.
            let mut bits = 0u64;
            if chunk.iter().fold(u32::MAX, |a, &d| a.min(d)) <= limit {
                for (j, &d) in chunk.iter().enumerate() {
                    bits |= ((d <= limit) as u64) << j;
                }
            }
            *m = bits;
        }
    }
}

with_avx512! {
    /// [`find_sources`]' candidates of one row of words.
    fn candidates_words(row: &[u64], limit: u32, mask: &mut [u64]) {
        for (m, chunk) in mask.iter_mut().zip(row.chunks(64)) {
            // As `candidates_depth`: the word with the least depth bits is the least word.
            let mut bits = 0u64;
            if word_depth(chunk.iter().fold(u64::MAX, |a, &v| a.min(v))) <= limit {
                for (j, &v) in chunk.iter().enumerate() {
                    bits |= ((word_depth(v) <= limit) as u64) << j;
                }
            }
            *m = bits;
        }
    }
}

/// Paints the disks of the sources that reach band `b`: `min_at(row in the band, x0, x1, word)` takes
/// the min of `word` into the row's pixels `x0..=x1`.
fn paint_band(
    sizes: &Sizes<'_>,
    sources: &[Vec<Source>],
    b: usize,
    w: usize,
    h: usize,
    mut min_at: impl FnMut(usize, usize, usize, u64),
) {
    let (y0, y1) = (b * BAND_ROWS, ((b + 1) * BAND_ROWS).min(h));
    let r = sizes.r;
    let stride = r as usize + 1;
    for list in &sources[b.saturating_sub(1)..(b + 2).min(sources.len())] {
        for s in list {
            let (sx, sy) = (s.x as i32, s.y as i32);
            let lo = (sy - r).max(y0 as i32);
            let hi = (sy + r).min(y1 as i32 - 1);
            for y in lo..=hi {
                let hw = sizes.half[s.qmax as usize * stride + (y - sy).unsigned_abs() as usize] as i32;
                if hw < 0 {
                    continue;
                }
                let x0 = (sx - hw).max(0) as usize;
                let x1 = (sx + hw).min(w as i32 - 1) as usize;
                min_at((y - y0 as i32) as usize, x0, x1, s.word);
            }
        }
    }
}

/// Paints band `b`'s words (`band`: its rows) with the disks that reach it. (Masked AVX-512 spans
/// were tried: no faster, the loads wait on the stores of overlapping disks either way.)
fn paint_words(sizes: &Sizes<'_>, sources: &[Vec<Source>], b: usize, w: usize, h: usize, band: &mut [u64]) {
    paint_band(sizes, sources, b, w, h, |y, x0, x1, word| {
        for v in &mut band[y * w..][x0..=x1] {
            *v = (*v).min(word);
        }
    })
}

/// Where an EDL reads the final depth (borrowed whole, to be read as plain memory).
pub enum EdlDepth<'a> {
    /// The reference mode's depth buffer.
    Depth(&'a mut [AtomicU32]),
    /// A visibility buffer's words.
    Words(&'a mut [AtomicU64]),
}

/// A [`SplatFrame`] as plain memory.
enum Plain<'a> {
    Words(&'a mut [u64]),
    DepthColor(&'a mut [u32], &'a mut [u32]),
}

/// The words of a buffer borrowed whole, as plain integers.
fn plain_u64(v: &mut [AtomicU64]) -> &mut [u64] {
    // SAFETY: `AtomicU64` has the same size and bit validity as `u64` and at least its alignment, and
    // the exclusive borrow means no other access (atomic or not) overlaps the returned slice's life.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u64>(), v.len()) }
}

/// [`plain_u64`] for depth buffers.
fn plain_u32(v: &mut [AtomicU32]) -> &mut [u32] {
    // SAFETY: as in `plain_u64`: same size, bit validity and (at least) alignment, borrowed exclusively.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u32>(), v.len()) }
}

/// A depth source as plain memory.
#[derive(Clone, Copy)]
enum PlainDepth<'a> {
    Depth(&'a [u32]),
    Words(&'a [u64]),
}

/// Eye-dome lighting in place: `color` ends as the twin [`crate::twins::edl::edl`] would shade it.
pub fn edl(u: &PostUniforms, depth: EdlDepth<'_>, color: &mut [u32], scratch: &mut PostScratch) {
    let (w, h) = (u.width as usize, u.height as usize);
    assert_eq!(color.len(), w * h, "EDL colour buffer size");
    let depth = match depth {
        EdlDepth::Depth(d) => PlainDepth::Depth(plain_u32(d)),
        EdlDepth::Words(v) => PlainDepth::Words(plain_u64(v)),
    };
    let pw = w + 2 * EDL_PAD;
    let ph = h + 2 * EDL_PAD;
    let ld = &mut scratch.log_dist;
    if ld.len() != pw * ph {
        ld.clear();
        ld.resize(pw * ph, f32::INFINITY);
    }
    // The padding stays "empty" (infinite) from frame to frame: only the inside is written.
    ld[EDL_PAD * pw..(EDL_PAD + h) * pw].par_chunks_mut(pw).enumerate().for_each(|(y, row)| {
        let out = &mut row[EDL_PAD..EDL_PAD + w];
        match depth {
            PlainDepth::Depth(d) => log_distances(u, &d[y * w..(y + 1) * w], out),
            PlainDepth::Words(v) => log_distances_words(u, &v[y * w..(y + 1) * w], out),
        }
    });
    let ld = &scratch.log_dist[..];
    let offsets = u
        .edl_offsets
        .map(|[ox, oy]| [ox.clamp(-(EDL_PAD as i32), EDL_PAD as i32), oy.clamp(-(EDL_PAD as i32), EDL_PAD as i32)]);
    if offsets != u.edl_offsets {
        // Neighbours past the padding (`Edl::offsets` never makes them): the twin's bounds tests.
        let d = |i: usize| match depth {
            PlainDepth::Depth(d) => d[i],
            PlainDepth::Words(v) => word_depth(v[i]),
        };
        return crate::twins::edl::edl(u, d, color);
    }
    color.par_chunks_mut(w).enumerate().for_each(|(y, crow)| {
        let at = |ox: i32, oy: i32| {
            let start = (y + EDL_PAD).wrapping_add_signed(oy as isize) * pw + EDL_PAD.wrapping_add_signed(ox as isize);
            &ld[start..start + w]
        };
        let n = offsets.map(|[ox, oy]| at(ox, oy));
        shade_row(u.edl_k, at(0, 0), n, crow);
    });
}

/// The twins' test "empty" (depth at or past the far plane) as an infinite log distance.
#[inline(always)]
fn log_distance(u: &PostUniforms, d: u32) -> f32 {
    if d >= FAR_DEPTH_BITS {
        f32::INFINITY
    } else {
        log2(view_distance(u, d))
    }
}

with_avx512! {
    fn log_distances(u: &PostUniforms, depth: &[u32], out: &mut [f32]) {
        for (o, &d) in out.iter_mut().zip(depth) {
            *o = log_distance(u, d);
        }
    }
}

with_avx512! {
    fn log_distances_words(u: &PostUniforms, words: &[u64], out: &mut [f32]) {
        for (o, &v) in out.iter_mut().zip(words) {
            *o = log_distance(u, word_depth(v));
        }
    }
}

/// One neighbour's share of the response, as the twin adds it: nothing from an empty neighbour, 100
/// for an empty pixel beside a point, else how much nearer the neighbour is (never negative).
#[inline(always)]
fn response(lc: f32, ln: f32) -> f32 {
    if ln == f32::INFINITY {
        0.0
    } else if lc == f32::INFINITY {
        100.0
    } else {
        0.0f32.max(lc + -ln)
    }
}

/// Pixels a step of [`shade_row`]'s second loop: a step whose responses are all zero is skipped.
const SHADE_STEP: usize = 32;

with_avx512! {
    fn shade_row(edl_k: f32, own: &[f32], n: [&[f32]; 8], color: &mut [u32]) {
        let w = color.len();
        let (own, [n0, n1, n2, n3, n4, n5, n6, n7]) = (&own[..w], n.map(|r| &r[..w]));
        let mut sums = [0.0f32; SHADE_STEP];
        for (x0, crow) in (0..w).step_by(SHADE_STEP).zip(color.chunks_mut(SHADE_STEP)) {
            let len = crow.len();
            // Every row's slice of this step, of one length: the loop below has no bounds tests.
            fn cut(r: &[f32], x0: usize, len: usize) -> &[f32] {
                &r[x0..x0 + len]
            }
            let cut = |r| cut(r, x0, len);
            let (o, a0, a1, a2, a3) = (cut(own), cut(n0), cut(n1), cut(n2), cut(n3));
            let (a4, a5, a6, a7, sums) = (cut(n4), cut(n5), cut(n6), cut(n7), &mut sums[..len]);
            let mut any = 0u32;
            for j in 0..len {
                let lc = o[j];
                // The twin's sum, in its order (+0 for what it skips leaves the sum's bits unchanged).
                let mut sum = 0.0f32;
                sum += response(lc, a0[j]);
                sum += response(lc, a1[j]);
                sum += response(lc, a2[j]);
                sum += response(lc, a3[j]);
                sum += response(lc, a4[j]);
                sum += response(lc, a5[j]);
                sum += response(lc, a6[j]);
                sum += response(lc, a7[j]);
                sums[j] = sum;
                any |= (sum > 0.0) as u32;
            }
            if any == 0 {
                continue; // a zero sum shades by 2^0 = 1: the colours as they are
            }
            for (c, &sum) in crow.iter_mut().zip(sums.iter()) {
                let shade = exp2_neg(-((sum * 0.125) * edl_k));
                let mut out = *c & 0xff00_0000;
                for s in [0, 8, 16] {
                    let v = ((*c >> s) & 0xff) as f32 * shade + 0.5;
                    // The twin's `(v.floor() as u32).min(255)` for v ≥ 0, in a form that vectorizes: a
                    // whole 0..=255 plus 2^23 is exact, and its low mantissa bits are the number.
                    out |= ((v.floor().min(255.0) + 8_388_608.0).to_bits() & 0xff) << s;
                }
                if sum > 0.0 {
                    *c = out;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_data::word;
    use crate::look::{Edl, Look, PointSize};
    use crate::twins;
    use std::sync::atomic::Ordering;

    const EMPTY_DEPTH: u32 = FAR_DEPTH_BITS;

    fn uniforms(size: PointSize, w: u32, h: u32, spacing_m: f32, edl: bool) -> PostUniforms {
        let look = Look { point_size: size, edl: edl.then_some(Edl::DEFAULT), ..Look::PLAIN };
        let m = glam::Mat4::perspective_rh_gl(1.0, w as f32 / h as f32, 0.1, 100.0);
        look.post_uniforms(&m, w, h, 0.1, 100.0, spacing_m)
    }

    fn depth_at(w_m: f32) -> u32 {
        let (n, f) = (0.1f32, 100.0f32);
        ((f - n * f / w_m) / (f - n)).to_bits()
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 11
        }
    }

    /// A frame of (depth, payload) with points at `density`, distances 0.3..50 m, and near ties.
    fn frame(w: u32, h: u32, density: f64, seed: u64) -> Vec<(u32, u32)> {
        let mut r = Rng(seed);
        (0..w * h)
            .map(|i| {
                if (r.next() as f64 / (1u64 << 53) as f64) >= density {
                    return (EMPTY_DEPTH, 0xff10_2030 + (i / w)); // a background that varies by row
                }
                let w_m = 0.3 + (r.next() % 500) as f32 * 0.1;
                (depth_at(w_m), (r.next() as u32 & 0x00ff_ffff) | 0xff00_0000)
            })
            .collect()
    }

    fn words_of(f: &[(u32, u32)]) -> Vec<u64> {
        f.iter().map(|&(d, p)| word(d, p as u64)).collect()
    }

    fn twin_splat(u: &PostUniforms, words: &[u64], spacing: Option<&[f32]>) -> Vec<u64> {
        let mut out: Vec<AtomicU64> = (0..words.len()).map(|_| AtomicU64::new(0)).collect();
        twins::splat::splat(u, |i| words[i], spacing, &mut out);
        out.into_iter().map(AtomicU64::into_inner).collect()
    }

    fn fast_splat(u: &PostUniforms, words: &[u64], spacing: Option<&[f32]>) -> Vec<u64> {
        let mut v: Vec<AtomicU64> = words.iter().map(|&w| AtomicU64::new(w)).collect();
        splat(u, SplatFrame::Words(&mut v), spacing, &mut PostScratch::default());
        v.into_iter().map(AtomicU64::into_inner).collect()
    }

    fn sizes() -> Vec<PointSize> {
        let mut s: Vec<PointSize> = (1..=16).map(PointSize::Fixed).collect();
        s.extend([2u8, 5, 8, 16].map(|m| PointSize::Adaptive { max_px: m }));
        s
    }

    #[test]
    fn splat_equals_the_twin_for_every_size_shape_and_density() {
        for (k, size) in sizes().into_iter().enumerate() {
            for (density, spacing) in [(0.02, 0.3), (0.3, 0.05), (0.9, 0.01)] {
                for square in [false, true] {
                    // 77 rows: bands of 32, 32 and 13 (disks cross band edges).
                    let mut u = uniforms(size, 83, 77, spacing, false);
                    u.splat_square = square as u32;
                    let words = words_of(&frame(83, 77, density, 11 + k as u64));
                    let l = format!("{size}, square {square}, density {density}");
                    assert_eq!(fast_splat(&u, &words, None), twin_splat(&u, &words, None), "{l}");
                }
            }
        }
    }

    #[test]
    fn points_are_disks_or_squares() {
        // One near point of 9 px alone: a disk of radius 4.5 (69 px, no corners) or a 9 x 9 square.
        for (square, covered) in [(false, 69), (true, 81)] {
            one_point_covers(PointSize::Fixed(9), 0.0, 2.0, square, covered);
        }
    }

    /// One point (payload 7) `distance_m` away at the centre of a 31 x 31 frame, `size` and `square`:
    /// the fast path equals the twin, covers `covered` pixels, and reaches the (-4, -4) corner only as a
    /// square.
    fn one_point_covers(size: PointSize, spacing_m: f32, distance_m: f32, square: bool, covered: usize) {
        let mut u = uniforms(size, 31, 31, spacing_m, false);
        u.splat_square = square as u32;
        let mut words = vec![word(EMPTY_DEPTH, 1); 31 * 31];
        words[15 * 31 + 15] = word(depth_at(distance_m), 7);
        let out = fast_splat(&u, &words, None);
        assert_eq!(out, twin_splat(&u, &words, None));
        let n = out.iter().filter(|&&v| word_payload(v) == 7).count();
        assert_eq!(n, covered, "{size}, square {square}");
        let corner = out[11 * 31 + 11];
        assert_eq!(word_payload(corner) == 7, square, "the corner belongs to squares only");
    }

    #[test]
    fn near_adaptive_points_stay_disks_of_the_largest_size() {
        // A point 0.3 m away with 1 m spacing would span hundreds of pixels: it is capped at 8 px
        // (radius 4: 49 px, 4·|d|² ≤ 64), a disk — not its 9 x 9 window — unless squares are asked for.
        for (square, covered) in [(false, 49), (true, 81)] {
            one_point_covers(PointSize::Adaptive { max_px: 8 }, 1.0, 0.3, square, covered);
        }
    }

    #[test]
    fn splat_with_a_spacing_per_batch_equals_the_twin() {
        let u = uniforms(PointSize::Adaptive { max_px: 12 }, 96, 70, 1.0, false);
        let mut r = Rng(5);
        // Payloads are point indices in 3 batches and one past them.
        let words: Vec<u64> = (0..96 * 70)
            .map(|_| {
                if !r.next().is_multiple_of(3) {
                    return word(EMPTY_DEPTH, crate::twins::vis::EMPTY_INDEX);
                }
                let idx = r.next() % (4 * BATCH_POINTS as u64);
                word(depth_at(0.3 + (r.next() % 200) as f32 * 0.05), idx)
            })
            .collect();
        let spacing = [0.2f32, 0.02, 0.07];
        assert_eq!(fast_splat(&u, &words, Some(&spacing)), twin_splat(&u, &words, Some(&spacing)));
    }

    #[test]
    fn splat_of_depth_and_colour_equals_the_twin() {
        for size in [PointSize::Fixed(3), PointSize::Fixed(9), PointSize::Adaptive { max_px: 8 }] {
            let u = uniforms(size, 70, 45, 0.1, false);
            let f = frame(70, 45, 0.2, 3);
            let mut depth: Vec<AtomicU32> = f.iter().map(|&(d, _)| AtomicU32::new(d)).collect();
            let mut color: Vec<u32> = f.iter().map(|&(_, c)| c).collect();
            splat(&u, SplatFrame::DepthColor(&mut depth, &mut color), None, &mut PostScratch::default());
            let got: Vec<u64> =
                depth.iter().zip(&color).map(|(d, &c)| word(d.load(Ordering::Relaxed), c as u64)).collect();
            assert_eq!(got, twin_splat(&u, &words_of(&f), None), "{size}");
        }
    }

    #[test]
    fn splat_with_nothing_to_grow_leaves_the_frame() {
        // Far points of a dense cloud: adaptive disks under two pixels.
        let u = uniforms(PointSize::Adaptive { max_px: 8 }, 40, 30, 0.0001, false);
        let words = words_of(&frame(40, 30, 0.5, 9));
        assert_eq!(fast_splat(&u, &words, None), words);
        assert_eq!(twin_splat(&u, &words, None), words);
    }

    /// An orthographic frame's uniforms (planes behind and in front of the eye, as a top view inside a
    /// cloud has them).
    fn ortho_uniforms(look: &Look, w: u32, h: u32, spacing_m: f32) -> PostUniforms {
        let m = glam::Mat4::orthographic_rh_gl(-30.0, 30.0, -20.0, 20.0, -5.0, 95.0);
        look.post_uniforms(&m, w, h, -5.0, 95.0, spacing_m)
    }

    #[test]
    fn orthographic_uniforms_measure_from_the_equivalent_perspective_depth() {
        let look = Look { point_size: PointSize::Adaptive { max_px: 8 }, ..Look::PLAIN };
        let u = ortho_uniforms(&look, 90, 60, 0.2);
        assert_eq!(u.ortho, 1);
        // Half height 20: a perspective view as tall at 20 / tan 30°.
        let eq = 20.0 / (pcv_camera::FOV_Y_RAD * 0.5).tan();
        assert!((u.near_m - eq).abs() < 1e-3 && (u.far_minus_near_m - 100.0).abs() < 1e-4, "{u:?}");
        assert_eq!(twins::post::view_distance(&u, 0.5f32.to_bits()), u.near_m + 0.5 * u.far_minus_near_m);
        // Adaptive sizes do not shrink with depth: the same diameter near and far.
        let near = twins::post::adaptive_px(&u, u.adaptive_px_at_1m, 0.01f32.to_bits());
        let far = twins::post::adaptive_px(&u, u.adaptive_px_at_1m, 0.99f32.to_bits());
        assert!(near == far && near > 0.0, "{near} {far}");
        // Perspective stays as it was.
        assert_eq!(uniforms(PointSize::Fixed(1), 90, 60, 0.2, false).ortho, 0);
    }

    #[test]
    fn orthographic_splat_and_edl_equal_the_twins() {
        for size in sizes() {
            let look = Look { point_size: size, ..Look::PLAIN };
            let u = ortho_uniforms(&look, 83, 77, 0.3);
            let words = words_of(&frame(83, 77, 0.3, 5));
            assert_eq!(fast_splat(&u, &words, None), twin_splat(&u, &words, None), "{size}");
        }
        let look = Look { edl: Some(Edl::DEFAULT), ..Look::PLAIN };
        let u = ortho_uniforms(&look, 91, 61, 0.0);
        let f = frame(91, 61, 0.8, 3);
        let mut depth: Vec<AtomicU32> = f.iter().map(|&(d, _)| AtomicU32::new(d)).collect();
        let color: Vec<u32> = f.iter().map(|&(_, c)| c).collect();
        let mut twin = color.clone();
        twins::edl::edl(&u, |i| depth[i].load(Ordering::Relaxed), &mut twin);
        assert_ne!(twin, color, "the frame is shaded at all");
        let mut fast = color.clone();
        edl(&u, EdlDepth::Depth(&mut depth), &mut fast, &mut PostScratch::default());
        assert_eq!(fast, twin);
    }

    #[test]
    fn edl_equals_the_twin() {
        for (radius, strength, density) in [(1.4, 1.0, 0.9), (1.0, 2.5, 0.4), (3.0, 0.7, 0.97), (8.0, 1.0, 0.6)] {
            let look = Look { edl: Some(Edl { strength, radius_px: radius }), ..Look::PLAIN };
            let m = glam::Mat4::perspective_rh_gl(1.0, 1.5, 0.1, 100.0);
            let u = look.post_uniforms(&m, 91, 61, 0.1, 100.0, 0.0);
            let f = frame(91, 61, density, (radius * 10.0) as u64);
            let mut depth: Vec<AtomicU32> = f.iter().map(|&(d, _)| AtomicU32::new(d)).collect();
            let mut words: Vec<AtomicU64> = f.iter().map(|&(d, c)| AtomicU64::new(word(d, c as u64))).collect();
            let color: Vec<u32> = f.iter().map(|&(_, c)| c).collect();
            let mut twin = color.clone();
            twins::edl::edl(&u, |i| depth[i].load(Ordering::Relaxed), &mut twin);
            assert_ne!(twin, color, "the frame is shaded at all");
            let mut scratch = PostScratch::default();
            let mut fast = color.clone();
            edl(&u, EdlDepth::Depth(&mut depth), &mut fast, &mut scratch);
            assert_eq!(fast, twin, "radius {radius}, strength {strength}");
            // Again with the scratch of the last frame, from the words.
            let mut fast = color.clone();
            edl(&u, EdlDepth::Words(&mut words), &mut fast, &mut scratch);
            assert_eq!(fast, twin, "radius {radius}, strength {strength}, words");
        }
    }
}
