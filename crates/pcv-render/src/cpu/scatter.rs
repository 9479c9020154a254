//! The visibility passes' inner loop: project points and take the minimum of their 64-bit words
//! (depth bits, payload) on their pixels, into a buffer the calling thread owns or one all threads
//! share.
//!
//! How it works: [`draw_points`] projects the points 16 at a time with AVX-512 where the CPU has it
//! ([`has_avx512`]; `PCV_CPU_AVX512=0` turns it off): three unaligned loads of the 12-byte records
//! and six two-source permutes put x, y and z into lanes, then the same fused multiply-adds, the
//! correctly rounded reciprocal division and the multiplies as [`crate::twins::project::project`], in the
//! same order, so the same bits; the lanes' pixel indices and words are stored and taken one by one.
//! Elsewhere it runs [`crate::twins::project::project_batch_xyz`] (AVX2 and FMA where the CPU has them, the
//! same bits again). What takes a word is a [`Sink`]: [`Private`], a buffer only this thread writes, is
//! a plain load, minimum and store with no branch (a dropped point writes `u64::MAX` to pixel 0, which
//! changes nothing); [`PrivateRare`] is the same buffer with a store only where the word wins (for
//! draws where few do); [`Shared`] keeps the early depth test and the atomic minimum of the kernels.
use crate::gpu_data::{word, FrameUniforms};
use crate::twins::project::{project_batch_xyz, BATCH, DROPPED};
use std::sync::atomic::{AtomicU64, Ordering};

pub mod words;

/// Whether this CPU has the AVX-512 subsets [`draw_points`] uses (F, BW, DQ, VL, with AVX2 and FMA),
/// and `PCV_CPU_AVX512` is not `0` (asked once).
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| {
            std::env::var_os("PCV_CPU_AVX512").is_none_or(|v| v != "0")
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && crate::simd::has_avx2_fma()
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether [`draw_points`] runs the hand-written AVX2 loop ([`draw_avx2_vec`]) where the CPU has AVX2
/// and FMA but not AVX-512: unless `PCV_CPU_AVX2=0` (then the compiler's loop, [`draw_avx2`]).
pub fn has_avx2_loop() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| std::env::var_os("PCV_CPU_AVX2").is_none_or(|v| v != "0"))
}

/// Where [`draw_points`] takes the minimum of a point's word.
pub trait Sink {
    /// Whether a dropped point may be given as `put(0, u64::MAX)` (no branch in the loop).
    const BRANCHLESS: bool;
    /// The minimum of `v` and the word of pixel `i`.
    fn put(&mut self, i: usize, v: u64);
    /// A hint that pixel `i` (any index: out of range does nothing) will be written soon.
    #[inline(always)]
    fn prefetch(&self, _i: usize) {}
    /// The pixels of the buffer (the indices `put` takes are below this).
    fn pixels(&self) -> usize;
    /// [`Self::put`] without the bounds check (the hand-written AVX2 loops, whose kept lanes' pixels
    /// are below `width · height`, [`Ahead`]).
    ///
    /// # Safety
    /// `i < self.pixels()`.
    unsafe fn put_unchecked(&mut self, i: usize, v: u64);
}

/// Asks the cache for the line of `buf[i]` (a hint: any `i`, nothing is read).
#[inline(always)]
fn prefetch_word<T>(buf: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: a prefetch reads nothing and never faults; the address is only computed
        // (`wrapping_add`: no pointer arithmetic past the allocation is asserted).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(buf.as_ptr().wrapping_add(i).cast())
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (buf, i);
}

/// A buffer only the calling thread writes: plain load, minimum, store.
pub struct Private<'a>(pub &'a mut [u64]);

impl Sink for Private<'_> {
    const BRANCHLESS: bool = true;
    #[inline(always)]
    fn put(&mut self, i: usize, v: u64) {
        let c = &mut self.0[i];
        *c = (*c).min(v);
    }
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        prefetch_word(self.0, i);
    }
    #[inline(always)]
    fn pixels(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn put_unchecked(&mut self, i: usize, v: u64) {
        // SAFETY: the caller's: `i < self.0.len()`.
        let c = unsafe { self.0.get_unchecked_mut(i) };
        *c = (*c).min(v);
    }
}

/// A buffer only the calling thread writes, where few words win (the culled modes' second draw, whose
/// pixels mostly hold a nearer word already): load, compare, and a store only where the word is smaller
/// (a branch that is mostly not taken), so a losing word leaves its line clean and starts no chain of
/// stores and loads through the same pixel. The same minimum as [`Private`].
pub struct PrivateRare<'a>(pub &'a mut [u64]);

impl Sink for PrivateRare<'_> {
    const BRANCHLESS: bool = true;
    #[inline(always)]
    fn put(&mut self, i: usize, v: u64) {
        let c = &mut self.0[i];
        if v < *c {
            *c = v;
        }
    }
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        prefetch_word(self.0, i);
    }
    #[inline(always)]
    fn pixels(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn put_unchecked(&mut self, i: usize, v: u64) {
        // SAFETY: the caller's: `i < self.0.len()`.
        let c = unsafe { self.0.get_unchecked_mut(i) };
        if v < *c {
            *c = v;
        }
    }
}

/// Whether the culled modes' private draws store a word only where it wins ([`PrivateRare`]; off with
/// `PCV_CPU_RARE=0`).
pub static RARE: Switch = Switch::new("PCV_CPU_RARE");

/// A buffer all threads write: the early depth test, then the atomic minimum (the kernels' way).
pub struct Shared<'a>(pub &'a [AtomicU64]);

impl Sink for Shared<'_> {
    const BRANCHLESS: bool = false;
    #[inline(always)]
    fn put(&mut self, i: usize, v: u64) {
        min_early(&self.0[i], v);
    }
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        prefetch_word(self.0, i);
    }
    #[inline(always)]
    fn pixels(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    unsafe fn put_unchecked(&mut self, i: usize, v: u64) {
        // SAFETY: the caller's: `i < self.0.len()`.
        min_early(unsafe { self.0.get_unchecked(i) }, v);
    }
}

/// The kernels' atomic minimum with the early depth test: `fetch_min` (a locked read-modify-write) only
/// where `v` is below the word the cell holds when read.
#[inline(always)]
pub fn min_early(cell: &AtomicU64, v: u64) {
    if v < cell.load(Ordering::Relaxed) {
        cell.fetch_min(v, Ordering::Relaxed);
    }
}

/// The low bits of the points' words.
#[derive(Clone, Copy)]
pub enum Payload<'a> {
    /// Point `j` of the slice has index `first + j` (the visibility modes).
    Index(u64),
    /// Point `j` of the slice has the color `colors[j]` (the packed mode; as long as the positions).
    Color(&'a [u32]),
}

impl<'a> Payload<'a> {
    /// The payload of the points from point `n` on.
    #[inline(always)]
    fn skip(self, n: usize) -> Payload<'a> {
        match self {
            Payload::Index(first) => Payload::Index(first + n as u64),
            Payload::Color(c) => Payload::Color(&c[n..]),
        }
    }

    #[inline(always)]
    fn get(&self, j: usize) -> u64 {
        match *self {
            Payload::Index(first) => first + j as u64,
            Payload::Color(c) => c[j] as u64,
        }
    }
}

/// Every point of `positions` that [`crate::twins::project::project`] keeps gives its word (its depth bits
/// and `payload`) to `sink` at its pixel.
#[inline]
pub fn draw_points<S: Sink>(f: &FrameUniforms, positions: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
    if let Payload::Color(c) = payload {
        assert_eq!(c.len(), positions.len(), "one color per position");
    }
    if f.width == 0 || f.height == 0 {
        return; // no pixel (and no pixel 0 for a dropped lane)
    }
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: this CPU has every feature `draw_avx512` is compiled with (asked at run time).
            unsafe { draw_avx512(f, positions, payload, sink) };
            return;
        }
        if crate::simd::has_avx2_fma() {
            if has_avx2_loop() {
                // SAFETY: this CPU has AVX2 and FMA (asked at run time).
                unsafe { draw_avx2_vec(f, positions, payload, sink) };
            } else {
                // SAFETY: this CPU has AVX2 and FMA (asked at run time).
                unsafe { draw_avx2(f, positions, payload, sink) };
            }
            return;
        }
    }
    draw_lanes(f, positions, payload, sink)
}

/// [`draw_lanes`] compiled with AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn draw_avx2<S: Sink>(f: &FrameUniforms, positions: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
    draw_lanes(f, positions, payload, sink)
}

/// 8 lanes of pixel indices and words, for the scalar loop of [`draw_avx2_vec`].
#[cfg(target_arch = "x86_64")]
#[repr(C, align(32))]
#[derive(Clone, Copy)]
struct Lanes8 {
    index: [u32; 8],
    words: [u64; 8],
    /// The kept lanes (bit j: lane j), for a sink with a branch.
    live: u32,
}

#[cfg(target_arch = "x86_64")]
impl Lanes8 {
    /// Gives the block's words to `sink` (lane `j`'s word is `words[WORD_SLOT[j]]`, the order
    /// [`BlockPayload::words`]'s unpacks leave them in); with `UNCHECKED`, without bounds checks.
    ///
    /// # Safety
    /// With `UNCHECKED`, every index of the block is below `sink.pixels()`.
    #[inline(always)]
    unsafe fn put<S: Sink, const UNCHECKED: bool>(&self, sink: &mut S) {
        if S::BRANCHLESS {
            for (&i, &slot) in self.index.iter().zip(&WORD_SLOT) {
                let (i, v) = (i as usize, self.words[slot]);
                if UNCHECKED {
                    // SAFETY: the caller's.
                    unsafe { sink.put_unchecked(i, v) };
                } else {
                    sink.put(i, v);
                }
            }
        } else {
            let mut live = self.live;
            while live != 0 {
                let j = live.trailing_zeros() as usize;
                live &= live - 1;
                let (i, v) = (self.index[j] as usize, self.words[WORD_SLOT[j]]);
                if UNCHECKED {
                    // SAFETY: the caller's.
                    unsafe { sink.put_unchecked(i, v) };
                } else {
                    sink.put(i, v);
                }
            }
        }
    }
}

/// Where [`BlockPayload::words`] leaves lane `j`'s word in [`Lanes8::words`]: `unpacklo_epi32`
/// gives lanes 0, 1, 4, 5 and `unpackhi_epi32` lanes 2, 3, 6, 7 (a permutation that is its own inverse).
#[cfg(target_arch = "x86_64")]
const WORD_SLOT: [usize; 8] = [0, 1, 4, 5, 2, 3, 6, 7];

/// Blocks of 8 points [`draw_avx2_vec`] projects ahead of the ones it gives to the sink, their pixels
/// prefetched meanwhile (`PCV_CPU_PREFETCH=0`: none, each block given as it is projected).
pub const PREFETCH_BLOCKS: usize = 4;

/// Whether the hand-written AVX2 loops give their words without bounds checks where the buffer holds
/// the frame ([`Ahead::run`]; off with `PCV_CPU_UNCHECKED=0`).
pub static UNCHECKED: Switch = Switch::new("PCV_CPU_UNCHECKED");

/// Whether [`draw_avx2_vec`] and [`words::draw_words`] prefetch ([`PREFETCH_BLOCKS`]; off with
/// `PCV_CPU_PREFETCH=0`).
pub static PREFETCH: Switch = Switch::new("PCV_CPU_PREFETCH");

/// A choice that changes only the speed (the buffers and images are the same either way), for
/// comparisons: on unless its environment variable is `0` (asked once), or as [`Switch::set`] last set
/// it for the whole process (benches that alternate it frame by frame, tests that run both sides).
pub struct Switch {
    /// 0 not asked yet, 1 off, 2 on.
    state: std::sync::atomic::AtomicU8,
    name: &'static str,
}

impl Switch {
    /// A switch read from the environment variable `name`.
    pub const fn new(name: &'static str) -> Switch {
        Switch { state: std::sync::atomic::AtomicU8::new(0), name }
    }

    /// Whether the switch is on.
    #[inline]
    pub fn on(&self) -> bool {
        match self.state.load(Ordering::Relaxed) {
            0 => {
                let on = std::env::var_os(self.name).is_none_or(|v| v != "0");
                self.state.store(1 + on as u8, Ordering::Relaxed);
                on
            }
            v => v == 2,
        }
    }

    /// Turns the switch on or off for the whole process.
    pub fn set(&self, on: bool) {
        self.state.store(1 + on as u8, Ordering::Relaxed);
    }
}

/// [`draw_lanes`] 8 points at a time in AVX2 registers (the compiler's loop, [`draw_avx2`], converts
/// the pixel coordinates lane by lane with branches, for the saturating `as u32`; here the kept lanes'
/// coordinates lie in `[0, size)`, where `vcvttps2dq` is that cast). Three loads take 8 records (24
/// floats); coordinate `c` of record `j` is float `3j + c`, at lane `(3j + c) % 8` of load `(3j + c) / 8`,
/// and for each `c` these are 8 different lanes: two blends gather them into one register and one
/// permute puts them in record order. Then the same FMAs, division and multiplies in the same order as
/// [`crate::twins::project::project`], the dropped lanes found by [`drop_lanes`], the words built from 32-bit
/// halves ([`BlockPayload`]); dropped lanes get pixel 0 and `u64::MAX` (as [`draw_avx512`]), and the
/// blocks go through [`Ahead::run`]. The last `len % 8` points go through [`draw_lanes`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn draw_avx2_vec<S: Sink>(f: &FrameUniforms, positions: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
    // SAFETY (each): the caller's (AVX2 and FMA).
    if PREFETCH.on() {
        unsafe { draw_avx2_ahead::<S, PREFETCH_BLOCKS>(f, positions, payload, sink) }
    } else {
        unsafe { draw_avx2_ahead::<S, 1>(f, positions, payload, sink) }
    }
}

/// Blocks of 8 projected points in flight: the shared part of the hand-written AVX2 loops
/// ([`draw_avx2_ahead`] over 12-byte positions, [`words::draw_words`] over 10-bit words). Block `k` is
/// projected into slot `k % AHEAD` of a ring ([`Self::project`]) and its pixels prefetched; then the
/// block in the next slot, projected `AHEAD - 1` blocks before, is given to the sink (the minimum does
/// not depend on the order the words come in). [`Self::run`] unrolls its loop by `AHEAD`, so that every
/// slot is a constant, and decides once whether the words go in without bounds checks.
#[cfg(target_arch = "x86_64")]
struct Ahead<const AHEAD: usize> {
    ring: [Lanes8; AHEAD],
}

/// The payloads of consecutive blocks of 8 points, as the low bits of their words.
#[cfg(target_arch = "x86_64")]
trait BlockPayload {
    /// The words of the next block's lanes 0, 1, 4, 5 and 2, 3, 6, 7 ([`WORD_SLOT`]), given their high
    /// halves `high` (depth bits << 2) and the dropped lanes `drop` (all ones: those words become all
    /// ones); then moves on to the block after it.
    ///
    /// # Safety
    /// The CPU has AVX2; the payload has 8 more points.
    unsafe fn words(
        &mut self,
        drop: std::arch::x86_64::__m256i,
        high: std::arch::x86_64::__m256i,
    ) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i);
}

/// Point indices: lane `j` of block `k` has index `first + 8k + j`, kept as 64-bit sums in the words'
/// lane order (exact carries into the high half), 8 more each block.
#[cfg(target_arch = "x86_64")]
struct IndexWords {
    a: std::arch::x86_64::__m256i,
    b: std::arch::x86_64::__m256i,
}

#[cfg(target_arch = "x86_64")]
impl IndexWords {
    /// From index `first` on.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[inline(always)]
    unsafe fn new(first: u64) -> Self {
        use std::arch::x86_64::*;
        // SAFETY: the caller's (AVX2).
        unsafe {
            let base = _mm256_set1_epi64x(first as i64);
            IndexWords {
                a: _mm256_add_epi64(base, _mm256_setr_epi64x(0, 1, 4, 5)),
                b: _mm256_add_epi64(base, _mm256_setr_epi64x(2, 3, 6, 7)),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl BlockPayload for IndexWords {
    #[inline(always)]
    unsafe fn words(
        &mut self,
        drop: std::arch::x86_64::__m256i,
        high: std::arch::x86_64::__m256i,
    ) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's (AVX2).
        unsafe {
            let w = (
                _mm256_or_si256(_mm256_unpacklo_epi32(drop, high), self.a),
                _mm256_or_si256(_mm256_unpackhi_epi32(drop, high), self.b),
            );
            let eight = _mm256_set1_epi64x(8);
            (self.a, self.b) = (_mm256_add_epi64(self.a, eight), _mm256_add_epi64(self.b, eight));
            w
        }
    }
}

/// Colors: the next block's 8 colors are read from the pointer (zero-extended: the words' low halves).
#[cfg(target_arch = "x86_64")]
struct ColorWords(*const u32);

#[cfg(target_arch = "x86_64")]
impl BlockPayload for ColorWords {
    #[inline(always)]
    unsafe fn words(
        &mut self,
        drop: std::arch::x86_64::__m256i,
        high: std::arch::x86_64::__m256i,
    ) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i) {
        use std::arch::x86_64::*;
        // SAFETY: the caller's: AVX2, and 8 colors from the pointer on.
        unsafe {
            let low = _mm256_or_si256(_mm256_loadu_si256(self.0.cast()), drop);
            self.0 = self.0.add(8);
            (_mm256_unpacklo_epi32(low, high), _mm256_unpackhi_epi32(low, high))
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl<const AHEAD: usize> Ahead<AHEAD> {
    /// Draws `blocks` blocks of 8 points into `sink`: `load(k)` gives the coordinates of block `k` in
    /// lanes of x, y and z, `payload` their payloads. The kept lanes' pixels are below `width · height`
    /// (their coordinates lie in `[0, width)` and `[0, height)`, exact as floats up to 2^24; a product
    /// past 2^32 wraps to a smaller one), the dropped lanes' pixel is 0, so a sink of at least that many
    /// pixels (and a frame of at least one) takes them without bounds checks ([`UNCHECKED`]).
    /// Inlined into the loops (compiled with AVX2 and FMA), where the constants are hoisted.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `payload` has `8 · blocks` points.
    #[inline(always)]
    unsafe fn run<S: Sink, P: BlockPayload>(
        f: &FrameUniforms,
        blocks: usize,
        payload: P,
        sink: &mut S,
        load: impl Fn(usize) -> (std::arch::x86_64::__m256, std::arch::x86_64::__m256, std::arch::x86_64::__m256),
    ) {
        let fits = (1..=1 << 24).contains(&f.width)
            && (1..=1 << 24).contains(&f.height)
            && sink.pixels() as u64 >= f.width as u64 * f.height as u64;
        // SAFETY (both): the caller's; unchecked only where every index is below `sink.pixels()`.
        if fits && UNCHECKED.on() {
            unsafe { Self::run_with::<S, P, true>(f, blocks, payload, sink, load) }
        } else {
            unsafe { Self::run_with::<S, P, false>(f, blocks, payload, sink, load) }
        }
    }

    /// [`Self::run`], with or without bounds checks.
    ///
    /// # Safety
    /// As [`Self::run`]; with `UNCHECKED`, every index the blocks make is below `sink.pixels()`.
    #[inline(always)]
    unsafe fn run_with<S: Sink, P: BlockPayload, const UNCHECKED: bool>(
        f: &FrameUniforms,
        blocks: usize,
        mut payload: P,
        sink: &mut S,
        load: impl Fn(usize) -> (std::arch::x86_64::__m256, std::arch::x86_64::__m256, std::arch::x86_64::__m256),
    ) {
        const { assert!(1 <= AHEAD && AHEAD <= 8, "the unrolled loop below has 8 steps") };
        let mut ahead = Ahead { ring: [Lanes8 { index: [0; 8], words: [0; 8], live: 0 }; AHEAD] };
        // SAFETY (the projections and puts): the caller's.
        // The first `AHEAD - 1` blocks: nothing to give yet.
        let first = blocks.min(AHEAD - 1);
        for k in 0..first {
            unsafe { ahead.project(k, f, load(k), &mut payload, sink) };
        }
        // Then rounds of `AHEAD` blocks, step `j` projecting into slot `(AHEAD - 1 + j) % AHEAD` and
        // giving slot `j` (the next one), unrolled by hand: `$j < AHEAD` is a constant.
        let mut k = first;
        'all: loop {
            macro_rules! steps {
                ($($j:literal)*) => {$(
                    if $j < AHEAD {
                        if k >= blocks {
                            break 'all;
                        }
                        unsafe { ahead.project(($j + AHEAD - 1) % AHEAD, f, load(k), &mut payload, sink) };
                        unsafe { ahead.ring[$j % AHEAD].put::<S, UNCHECKED>(sink) };
                        k += 1;
                    }
                )*};
            }
            steps!(0 1 2 3 4 5 6 7);
        }
        // The blocks still in flight: the last `AHEAD - 1`.
        for b in blocks.saturating_sub(AHEAD - 1)..blocks {
            unsafe { ahead.ring[b % AHEAD].put::<S, UNCHECKED>(sink) };
        }
    }

    /// Projects the 8 points whose coordinates are the lanes of `x`, `y` and `z` into ring slot `slot`:
    /// the same FMAs, division and multiplies in the same order as [`crate::twins::project::project`], the
    /// dropped lanes ([`drop_lanes`]) given pixel 0 and the largest word (a minimum that changes
    /// nothing); then prefetches their pixels.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `payload` has 8 more points.
    #[inline(always)]
    unsafe fn project<S: Sink, P: BlockPayload>(
        &mut self,
        slot: usize,
        f: &FrameUniforms,
        (x, y, z): (std::arch::x86_64::__m256, std::arch::x86_64::__m256, std::arch::x86_64::__m256),
        payload: &mut P,
        sink: &S,
    ) {
        use std::arch::x86_64::*;
        let lanes = &mut self.ring[slot];
        // SAFETY: the caller's: this CPU has AVX2 and FMA (every intrinsic below), and the payload exists.
        unsafe {
            let m = &f.screen_from_world;
            let row = |r: usize| {
                // m[8 + r] * z + (m[4 + r] * y + (m[r] * x + m[12 + r])), each an FMA, as `project::row`.
                let v = _mm256_fmadd_ps(_mm256_set1_ps(m[r]), x, _mm256_set1_ps(m[12 + r]));
                let v = _mm256_fmadd_ps(_mm256_set1_ps(m[4 + r]), y, v);
                _mm256_fmadd_ps(_mm256_set1_ps(m[8 + r]), z, v)
            };
            let (w_px, h_px) = (_mm256_set1_ps(f.width as f32), _mm256_set1_ps(f.height as f32));
            let w = row(3);
            let inv_w = _mm256_div_ps(_mm256_set1_ps(1.0), w);
            let sx = _mm256_mul_ps(row(0), inv_w);
            let sy = _mm256_mul_ps(row(1), inv_w);
            let d = _mm256_mul_ps(row(2), inv_w);
            let drop = drop_lanes(w, sx, sy, d, w_px, h_px);
            // sx, sy in [0, size) < 2^31 where kept: truncation is the floor, as `sx as u32`.
            let (px, py) = (_mm256_cvttps_epi32(sx), _mm256_cvttps_epi32(sy));
            let index = _mm256_andnot_si256(
                drop,
                _mm256_add_epi32(_mm256_mullo_epi32(py, _mm256_set1_epi32(f.width as i32)), px),
            );
            // word = depth bits << 34 | payload: its high 32 bits are `bits << 2 | payload >> 32`, its low
            // ones the payload's; the unpacks in `payload.words` interleave the halves.
            let shifted = _mm256_slli_epi32::<{ crate::gpu_data::DEPTH_SHIFT as i32 - 32 }>(_mm256_castps_si256(d));
            let (w_a, w_b) = payload.words(drop, _mm256_or_si256(shifted, drop));
            // `lanes` is 32-byte aligned (repr align 32): `index` at offset 0, `words` at 32 and 64.
            _mm256_store_si256(lanes.index.as_mut_ptr().cast(), index);
            _mm256_store_si256(lanes.words.as_mut_ptr().cast(), w_a);
            _mm256_store_si256(lanes.words.as_mut_ptr().add(4).cast(), w_b);
            if !S::BRANCHLESS {
                lanes.live = !_mm256_movemask_ps(_mm256_castsi256_ps(drop)) as u32 & 0xff;
            }
        }
        if AHEAD > 1 {
            for &i in &lanes.index {
                sink.prefetch(i as usize);
            }
        }
    }
}

/// The lanes [`crate::twins::project::project`] drops (all ones; kept lanes 0): not `w > 0`, not `sx` in
/// `[0, w_px)`, `sy` in `[0, h_px)` or `d` in `(0, 1)`, where `sx`, `sy` and `d` are rows times
/// `1 / w`. Unordered compares (true for NaN, the negations of Rust's ordered ones) for `sx` and `sy`.
/// `d` in the integers: its bits in `[1, 0x3f7f_ffff]` (the positive floats below 1; negative floats,
/// NaN and infinities fall outside), i.e. `bits - 1` below `0x3f7f_ffff` unsigned, and `bits +
/// 0x7fff_ffff` is `(bits - 1) ^ 0x8000_0000`, which makes that a signed compare. `w > 0`: a lane whose
/// `w` has its sign bit set (negative, -0, -NaN) takes bits -1 instead of `d`'s (dropped); of the
/// others, `w` not above 0 is +0 or +NaN, whose `1 / w` (+inf, NaN) makes `d` ±inf or NaN (dropped).
///
/// # Safety
/// The CPU has AVX2 (inlined into code compiled with it).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn drop_lanes(
    w: std::arch::x86_64::__m256,
    sx: std::arch::x86_64::__m256,
    sy: std::arch::x86_64::__m256,
    d: std::arch::x86_64::__m256,
    w_px: std::arch::x86_64::__m256,
    h_px: std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    // SAFETY: the caller's (AVX2).
    unsafe {
        let zero = _mm256_setzero_ps();
        let bits = _mm256_castps_si256(_mm256_blendv_ps(d, _mm256_castsi256_ps(_mm256_set1_epi32(-1)), w));
        let off_d = _mm256_cmpgt_epi32(
            _mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff_ffff)),
            _mm256_set1_epi32(0xbf7f_fffe_u32 as i32),
        );
        let mut drop = _mm256_cmp_ps::<_CMP_NGE_UQ>(sx, zero);
        drop = _mm256_or_ps(drop, _mm256_cmp_ps::<_CMP_NLT_UQ>(sx, w_px));
        drop = _mm256_or_ps(drop, _mm256_cmp_ps::<_CMP_NGE_UQ>(sy, zero));
        drop = _mm256_or_ps(drop, _mm256_cmp_ps::<_CMP_NLT_UQ>(sy, h_px));
        _mm256_or_si256(_mm256_castps_si256(drop), off_d)
    }
}

/// [`draw_avx2_vec`] with `AHEAD` blocks of 8 points in flight ([`Ahead`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn draw_avx2_ahead<S: Sink, const AHEAD: usize>(
    f: &FrameUniforms,
    positions: &[[f32; 3]],
    payload: Payload<'_>,
    sink: &mut S,
) {
    use std::arch::x86_64::*;
    // Record order of the blended lanes of x, y and z (see the doc of `draw_avx2_vec`).
    let (perm_x, perm_y, perm_z) = (
        _mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5),
        _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6),
        _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7),
    );
    let floats: *const f32 = positions.as_ptr().cast();
    let blocks = positions.len() / 8;
    let load = |k: usize| {
        // SAFETY: records `8k .. 8k + 8` (24 floats from float 24k) lie inside `positions` (k < blocks).
        let (a, b, c) = unsafe {
            let p = floats.add(24 * k);
            (_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8)), _mm256_loadu_ps(p.add(16)))
        };
        // x: loads 0, 1, 2 give lanes {0, 3, 6}, {1, 4, 7}, {2, 5}; y: {1, 4, 7}, {2, 5}, {0, 3, 6};
        // z: {2, 5}, {0, 3, 6}, {1, 4, 7}.
        let x = _mm256_permutevar8x32_ps(_mm256_blend_ps::<0x24>(_mm256_blend_ps::<0x92>(a, b), c), perm_x);
        let y = _mm256_permutevar8x32_ps(_mm256_blend_ps::<0x49>(_mm256_blend_ps::<0x24>(a, b), c), perm_y);
        let z = _mm256_permutevar8x32_ps(_mm256_blend_ps::<0x92>(_mm256_blend_ps::<0x49>(a, b), c), perm_z);
        (x, y, z)
    };
    // SAFETY (both): this function's features; `load` reads blocks below `blocks`; the colors are as
    // many as the positions (asserted by `draw_points`), so `8 · blocks` of them exist.
    match payload {
        Payload::Index(first) => unsafe { Ahead::<AHEAD>::run(f, blocks, IndexWords::new(first), sink, load) },
        Payload::Color(colors) => unsafe { Ahead::<AHEAD>::run(f, blocks, ColorWords(colors.as_ptr()), sink, load) },
    }
    draw_lanes(f, &positions[8 * blocks..], payload.skip(8 * blocks), sink);
}

/// The portable loop: [`project_batch_xyz`] then the points one by one.
#[inline(always)]
fn draw_lanes<S: Sink>(f: &FrameUniforms, positions: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
    let (mut index, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
    for (k, group) in positions.chunks(BATCH).enumerate() {
        project_batch_xyz(f, group, &mut index, &mut bits);
        for (j, (&i, &d)) in index.iter().zip(&bits).take(group.len()).enumerate() {
            if i != DROPPED {
                sink.put(i as usize, word(d, payload.get(k * BATCH + j)));
            }
        }
    }
}

/// Lanes of each of x, y, z in the permutes of [`draw_avx512`]: the first picks from the first two
/// loads (elements 0–31 of 16 records' 48 floats), the second keeps those lanes (0–15) and takes the
/// rest from the third load (16 + element − 32).
#[cfg(target_arch = "x86_64")]
const DEINTERLEAVE: [[[i32; 16]; 2]; 3] = {
    let mut t = [[[0i32; 16]; 2]; 3];
    let mut k = 0;
    while k < 3 {
        let mut j = 0;
        while j < 16 {
            let e = 3 * j as i32 + k as i32;
            if e < 32 {
                t[k][0][j] = e;
                t[k][1][j] = j as i32;
            } else {
                t[k][1][j] = e - 16;
            }
            j += 1;
        }
        k += 1;
    }
    t
};

/// 16 lanes of pixel indices and words, for the scalar loop of [`draw_avx512`].
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Lanes {
    index: [u32; 16],
    words: [u64; 16],
}

/// [`draw_lanes`] 16 points at a time in AVX-512 registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
unsafe fn draw_avx512<S: Sink>(f: &FrameUniforms, positions: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
    use std::arch::x86_64::*;
    let m = &f.screen_from_world;
    let row = |r: usize, x: __m512, y: __m512, z: __m512| {
        // m[8 + r] * z + (m[4 + r] * y + (m[r] * x + m[12 + r])), each an FMA, as `project::row`.
        let v = _mm512_fmadd_ps(_mm512_set1_ps(m[r]), x, _mm512_set1_ps(m[12 + r]));
        let v = _mm512_fmadd_ps(_mm512_set1_ps(m[4 + r]), y, v);
        _mm512_fmadd_ps(_mm512_set1_ps(m[8 + r]), z, v)
    };
    let (w_px, h_px) = (_mm512_set1_ps(f.width as f32), _mm512_set1_ps(f.height as f32));
    let (zero, one) = (_mm512_setzero_ps(), _mm512_set1_ps(1.0));
    let width = _mm512_set1_epi32(f.width as i32);
    // SAFETY (loads of the tables): each is 16 i32 (64 bytes), read unaligned.
    let perm = |k: usize, p: usize| unsafe { _mm512_loadu_si512(DEINTERLEAVE[k][p].as_ptr().cast()) };
    let (px0, px1, py0, py1, pz0, pz1) = (perm(0, 0), perm(0, 1), perm(1, 0), perm(1, 1), perm(2, 0), perm(2, 1));
    let iota_lo = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    let iota_hi = _mm512_set_epi64(15, 14, 13, 12, 11, 10, 9, 8);
    let ones = _mm512_set1_epi64(-1);
    let mut lanes = Lanes { index: [0; 16], words: [0; 16] };
    let floats: *const f32 = positions.as_ptr().cast();
    let n = positions.len();
    let mut at = 0usize;
    while at < n {
        let count = (n - at).min(16);
        let nf = 3 * count; // floats of these records
        let mask = |from: usize| -> u16 {
            if nf <= from {
                0
            } else if nf >= from + 16 {
                u16::MAX
            } else {
                (1u16 << (nf - from)) - 1
            }
        };
        let p = floats.wrapping_add(3 * at);
        // SAFETY: the masks cover only floats of records `at .. at + count` (inside `positions`);
        // masked-off elements are neither read nor faulted on.
        let (a, b, c) = unsafe {
            let (p16, p32) = (p.wrapping_add(16), p.wrapping_add(32));
            (
                _mm512_maskz_loadu_ps(mask(0), p),
                _mm512_maskz_loadu_ps(mask(16), p16),
                _mm512_maskz_loadu_ps(mask(32), p32),
            )
        };
        let x = _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, px0, b), px1, c);
        let y = _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, py0, b), py1, c);
        let z = _mm512_permutex2var_ps(_mm512_permutex2var_ps(a, pz0, b), pz1, c);
        let w = row(3, x, y, z);
        let inv_w = _mm512_div_ps(one, w);
        let sx = _mm512_mul_ps(row(0, x, y, z), inv_w);
        let sy = _mm512_mul_ps(row(1, x, y, z), inv_w);
        let d = _mm512_mul_ps(row(2, x, y, z), inv_w);
        // Ordered compares: false for NaN, as Rust's.
        let valid: u16 = if count == 16 { u16::MAX } else { (1u16 << count) - 1 };
        let mut k = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(valid, w, zero);
        k = _mm512_mask_cmp_ps_mask::<_CMP_GE_OQ>(k, sx, zero);
        k = _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, sx, w_px);
        k = _mm512_mask_cmp_ps_mask::<_CMP_GE_OQ>(k, sy, zero);
        k = _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, sy, h_px);
        k = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(k, d, zero);
        k = _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(k, d, one);
        // sx, sy in [0, size) where kept: truncation is the floor, as `sx as u32`.
        let (px, py) = (_mm512_cvttps_epu32(sx), _mm512_cvttps_epu32(sy));
        let index = _mm512_maskz_mov_epi32(k, _mm512_add_epi32(_mm512_mullo_epi32(py, width), px));
        let bits = _mm512_castps_si512(d);
        let (d_lo, d_hi) = (
            _mm512_cvtepu32_epi64(_mm512_castsi512_si256(bits)),
            _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(bits)),
        );
        let (p_lo, p_hi) = match payload {
            Payload::Index(first) => {
                let base = _mm512_set1_epi64((first + at as u64) as i64);
                (_mm512_add_epi64(base, iota_lo), _mm512_add_epi64(base, iota_hi))
            }
            Payload::Color(colors) => {
                // SAFETY: `colors` is as long as `positions` (asserted by `draw_points`); the mask
                // covers colors `at .. at + count`.
                let cv = unsafe { _mm512_maskz_loadu_epi32(valid, colors.as_ptr().add(at).cast()) };
                (
                    _mm512_cvtepu32_epi64(_mm512_castsi512_si256(cv)),
                    _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64::<1>(cv)),
                )
            }
        };
        let w_lo = _mm512_or_si512(_mm512_slli_epi64::<{ crate::gpu_data::DEPTH_SHIFT }>(d_lo), p_lo);
        let w_hi = _mm512_or_si512(_mm512_slli_epi64::<{ crate::gpu_data::DEPTH_SHIFT }>(d_hi), p_hi);
        // Dropped lanes: pixel 0 and the largest word (a minimum that changes nothing).
        let w_lo = _mm512_mask_mov_epi64(ones, k as u8, w_lo);
        let w_hi = _mm512_mask_mov_epi64(ones, (k >> 8) as u8, w_hi);
        // SAFETY: `lanes` is 64-byte aligned (repr align 64): `index` at offset 0, `words` at 64 and 128.
        unsafe {
            _mm512_store_si512(lanes.index.as_mut_ptr().cast(), index);
            _mm512_store_si512(lanes.words.as_mut_ptr().cast(), w_lo);
            _mm512_store_si512(lanes.words.as_mut_ptr().add(8).cast(), w_hi);
        }
        if S::BRANCHLESS {
            for (&i, &v) in lanes.index.iter().zip(&lanes.words).take(count) {
                sink.put(i as usize, v);
            }
        } else {
            let mut live = k;
            while live != 0 {
                let j = live.trailing_zeros() as usize;
                live &= live - 1;
                sink.put(lanes.index[j] as usize, lanes.words[j]);
            }
        }
        at += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private buffer that checks the unchecked puts land inside the frame (`frame_px` pixels).
    struct InFrame<'a> {
        buf: &'a mut [u64],
        frame_px: usize,
        unchecked: usize,
    }

    impl Sink for InFrame<'_> {
        const BRANCHLESS: bool = true;
        fn put(&mut self, i: usize, v: u64) {
            Private(self.buf).put(i, v);
        }
        fn pixels(&self) -> usize {
            self.buf.len()
        }
        unsafe fn put_unchecked(&mut self, i: usize, v: u64) {
            assert!(i < self.frame_px, "pixel {i} outside the frame's {}", self.frame_px);
            self.unchecked += 1;
            self.put(i, v);
        }
    }

    /// The hand-written AVX2 loop with 1, 3 or [`PREFETCH_BLOCKS`] blocks in flight (this CPU has AVX2 and FMA).
    #[cfg(target_arch = "x86_64")]
    fn by_hand<S: Sink>(ahead: usize, f: &FrameUniforms, pos: &[[f32; 3]], payload: Payload<'_>, sink: &mut S) {
        assert!(crate::simd::has_avx2_fma());
        // SAFETY (each): this CPU has AVX2 and FMA (asserted).
        match ahead {
            1 => unsafe { draw_avx2_ahead::<S, 1>(f, pos, payload, sink) },
            3 => unsafe { draw_avx2_ahead::<S, 3>(f, pos, payload, sink) },
            PREFETCH_BLOCKS => unsafe { draw_avx2_ahead::<S, PREFETCH_BLOCKS>(f, pos, payload, sink) },
            _ => unreachable!(),
        }
    }

    /// [`drop_lanes`] against `project`'s rule, on every combination of edge values of w, sx, sy and
    /// row 2 (zeros of both signs, denormals, 1 ulp either side of the bounds, infinities, NaNs of both
    /// signs, values past 2^31), with d = row 2 · (1 / w) as the loops compute it, 8 combinations a call.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn drop_lanes_is_the_projection_rule() {
        use std::arch::x86_64::*;
        if !crate::simd::has_avx2_fma() {
            return;
        }
        let (w_px, h_px) = (1920f32, 1080f32);
        let around = |v: f32| [v, f32::from_bits(v.to_bits() - 1), f32::from_bits(v.to_bits() + 1)];
        let mut edges =
            vec![0.0f32, -0.0, f32::from_bits(1), -f32::from_bits(1), 1e-30, -1e-30, 0.5, -0.5, -1.0, -1.5, 3e9, -3e9];
        edges.extend([
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc0_0001),
            f32::from_bits(0xffc0_0001),
        ]);
        edges.extend(around(1.0).into_iter().chain(around(w_px)).chain(around(h_px)).chain(around(2f32.powi(31))));
        let rule = |w: f32, sx: f32, sy: f32, d: f32| {
            !(w > 0.0 && sx >= 0.0 && sx < w_px && sy >= 0.0 && sy < h_px && d > 0.0 && d < 1.0)
        };
        #[target_feature(enable = "avx2,fma")]
        unsafe fn lanes(w: &[f32; 8], sx: &[f32; 8], sy: &[f32; 8], d: &[f32; 8], w_px: f32, h_px: f32) -> [i32; 8] {
            let mut out = [0i32; 8];
            // SAFETY: this function's features; the loads and the store are of 8 lanes each.
            unsafe {
                let ld = |v: &[f32; 8]| _mm256_loadu_ps(v.as_ptr());
                let m = drop_lanes(ld(w), ld(sx), ld(sy), ld(d), _mm256_set1_ps(w_px), _mm256_set1_ps(h_px));
                _mm256_storeu_si256(out.as_mut_ptr().cast(), m);
            }
            out
        }
        let e = edges.len();
        let (mut checked, mut kept) = (0usize, 0usize);
        let (mut w, mut sx, mut sy, mut d) = ([0f32; 8], [0f32; 8], [0f32; 8], [0f32; 8]);
        for k in 0..e * e * e * e {
            let j = k % 8;
            (w[j], sx[j], sy[j]) = (edges[k % e], edges[k / e % e], edges[k / e / e % e]);
            d[j] = edges[k / e / e / e] * (1.0 / w[j]);
            if j == 7 || k + 1 == e * e * e * e {
                // SAFETY: this CPU has AVX2 and FMA (asked above).
                let got = unsafe { lanes(&w, &sx, &sy, &d, w_px, h_px) };
                for l in 0..=j {
                    let want = if rule(w[l], sx[l], sy[l], d[l]) { -1 } else { 0 };
                    assert_eq!(got[l], want, "w {:e} sx {:e} sy {:e} d {:e}", w[l], sx[l], sy[l], d[l]);
                    checked += 1;
                    kept += (want == 0) as usize;
                }
            }
        }
        assert!(checked == e * e * e * e && kept > 1000, "{checked} lanes, {kept} kept");
    }

    /// Points around and across the view's edges, behind the camera, at the near and far planes, NaN:
    /// the AVX-512 loop (where the CPU has it), the AVX2 loop and the portable one give the same
    /// buffers, private and shared, with index and color payloads, for every tail length.
    #[test]
    fn every_loop_gives_the_same_buffer() {
        let cam = pcv_camera::FlyCamera::for_cloud(
            pcv_io::Bounds { min: glam::Vec3::splat(-1.0), max: glam::Vec3::splat(1.0) },
            true,
        );
        let (w, h) = (97u32, 61u32);
        let f = crate::FrameParams::new(cam.clip_from_world(w, h), w, h).uniforms();
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut pos: Vec<[f32; 3]> =
            (0..5000).map(|_| [(rnd() - 0.5) * 8.0, (rnd() - 0.5) * 8.0, (rnd() - 0.5) * 8.0]).collect();
        pos[17] = [f32::NAN, 0.0, 0.0];
        pos[18] = [f32::INFINITY, 0.0, 0.0];
        pos.extend((0..200).map(|i| cam.pose.eye.to_array().map(|v| v + i as f32 * 1e-7)));
        // Points whose pixel coordinates lie just inside and outside the frame's edges.
        let inv = glam::Mat4::from_cols_array(&f.screen_from_world).inverse();
        for k in 0..400 {
            let t = k as f32 / 400.0;
            let e = [1e-4f32, -1e-4, 0.0, 0.5][k % 4];
            let (sx, sy) = match k % 4 {
                0 => (w as f32 - e, t * h as f32),
                1 => (t * w as f32, h as f32 - e),
                2 => (e, t * h as f32),
                _ => (t * w as f32, e),
            };
            let p = inv * glam::Vec4::new(sx, sy, 0.5, 1.0);
            pos.push((p.truncate() / p.w).to_array());
        }
        let colors: Vec<u32> = (0..pos.len() as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let n = (w * h) as usize;
        for len in [0usize, 1, 5, 15, 16, 17, 31, 33, 64, 65, 1000, pos.len()] {
            // Index payloads whose low 32 bits carry into the high ones inside a block of 8.
            let carries = [Payload::Index((1 << 32) - 13), Payload::Index((3 << 32) - 3)];
            for payload in [Payload::Index(1 << 20), Payload::Color(&colors[..len])].into_iter().chain(carries) {
                let mut want = vec![u64::MAX; n];
                draw_lanes(&f, &pos[..len], payload, &mut Private(&mut want));
                let mut shared: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
                draw_points(&f, &pos[..len], payload, &mut Shared(&shared));
                assert!(shared.iter_mut().map(|v| *v.get_mut()).eq(want.iter().copied()), "shared, {len} points");
                let mut got = vec![u64::MAX; n];
                draw_points(&f, &pos[..len], payload, &mut Private(&mut got));
                assert!(got == want, "private, {len} points");
                // Stored only where they win: into a clear buffer, then again over it (every word loses
                // or ties), as the culled modes' second draws.
                let mut got = vec![u64::MAX; n];
                draw_points(&f, &pos[..len], payload, &mut PrivateRare(&mut got));
                assert!(got == want, "private, rare wins, {len} points");
                draw_points(&f, &pos[..len], payload, &mut PrivateRare(&mut got));
                assert!(got == want, "private, rare wins, drawn twice, {len} points");
                #[cfg(target_arch = "x86_64")]
                if crate::simd::has_avx2_fma() {
                    // Both AVX2 loops, whichever `draw_points` picked.
                    let mut got = vec![u64::MAX; n];
                    // SAFETY: this CPU has AVX2 and FMA (asked just above).
                    unsafe { draw_avx2(&f, &pos[..len], payload, &mut Private(&mut got)) };
                    assert!(got == want, "avx2, {len} points");
                    for ahead in [1, 3, PREFETCH_BLOCKS] {
                        let mut got = vec![u64::MAX; n];
                        by_hand(ahead, &f, &pos[..len], payload, &mut Private(&mut got));
                        assert!(got == want, "avx2 by hand, {ahead} blocks ahead, {len} points");
                        let mut got = vec![u64::MAX; n];
                        by_hand(ahead, &f, &pos[..len], payload, &mut PrivateRare(&mut got));
                        by_hand(ahead, &f, &pos[..len], payload, &mut PrivateRare(&mut got));
                        assert!(got == want, "avx2 by hand, rare wins, {ahead} blocks ahead, {len} points");
                        let mut shared: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(u64::MAX)).collect();
                        by_hand(ahead, &f, &pos[..len], payload, &mut Shared(&shared));
                        let same = shared.iter_mut().map(|v| *v.get_mut()).eq(want.iter().copied());
                        assert!(same, "avx2 by hand, shared, {ahead} blocks ahead, {len} points");
                    }
                }
                #[cfg(target_arch = "x86_64")]
                if crate::simd::has_avx2_fma() {
                    // Unchecked puts land inside the frame's pixels, into a buffer of exactly the frame
                    // and one with room to spare (left untouched).
                    for (spare, ahead) in [(0usize, 1), (9, 1), (0, PREFETCH_BLOCKS), (9, PREFETCH_BLOCKS)] {
                        let mut got = vec![u64::MAX; n + spare];
                        let mut sink = InFrame { buf: &mut got, frame_px: n, unchecked: 0 };
                        by_hand(ahead, &f, &pos[..len], payload, &mut sink);
                        assert!(len < 8 || !UNCHECKED.on() || sink.unchecked > 0, "the unchecked puts are taken");
                        assert!(
                            got[..n] == want[..] && got[n..].iter().all(|&v| v == u64::MAX),
                            "avx2 unchecked, {len} points, {spare} spare"
                        );
                    }
                }
                if len == pos.len() {
                    assert!(want.iter().filter(|&&v| v != u64::MAX).count() > 100, "some points land");
                }
            }
        }
    }
}
