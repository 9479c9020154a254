//! LASzip's adaptive arithmetic decoder, its symbol and bit models and its integer decompressor,
//! written for speed and giving exactly the `laz` crate's symbols.
//!
//! How it works: the decoder holds LASzip's 32-bit `value` and `length` and reads the chunk's bytes
//! from a slice. Decoding a symbol divides `value` by `length >> 15`, looks the quotient up in the
//! model's decoder table, and searches the few symbols the table entry leaves open. The symbol found is
//! the one LASzip's encoder wrote whatever table is used (the table only narrows the search: the symbol
//! is the last one whose cumulative frequency is ≤ the quotient), so the tables here are finer than
//! LASzip's (4 table entries per symbol up to 2^11 entries, 8 for models of up to 64 symbols, and for
//! small models too, where LASzip bisects with multiplications): most symbols need no search at all. A model whose most probable
//! symbol holds ≥ 3/8 of the probability checks that symbol first with a multiplication, beside the
//! division. Renormalization reads the next 4 bytes at once and shifts in as many as `length` needs. Model updates (counts halved
//! past 2^15, distribution rescaled, table rebuilt) follow LASzip's schedule exactly, in one pass over
//! the symbols (distribution, table ranges written 8 entries at a time, most probable symbol).
//!
//! The models' bytes are laid out for the L1 cache (a point touches ~20 models, more than the 32 KB
//! L1 holds, and the table and distribution loads are on the symbol chain): table entries are bytes
//! for models of up to 256 symbols (all but the GPS time multiplier models), and each symbol's
//! cumulative frequency sits beside its count, 16 bits each, so that a symbol's decoding mostly touches
//! one line of each (results/2026-12-01-s7-word-draw-laz-models/2026-12-01-laz-decoder-2core-s7.md: ~40 % fewer L1 misses; 16-bit halves:
//! results/2026-12-02-s14-new-host-checks/2026-12-02-laz14-s14.md).
//!
//! Damaged data never panics: a read past the chunk's end feeds zero bytes and sets `bad`, and a quotient
//! outside the table (which makes the `laz` crate panic, i.e. fail) sets `bad` too; callers check `bad`
//! once per point and report the point where the data ended, as `laz` does. Models are created empty
//! and built on first use, so that the 256-model arrays of a Point10 item cost nothing until a context
//! is seen.

/// The decoder keeps `length` at least this large (LASzip's `AC_MIN_LENGTH`).
const MIN_LENGTH: u32 = 1 << 24;
/// Symbol models' probability precision (LASzip's `DM_LENGTH_SHIFT`).
const DM_LENGTH_SHIFT: u32 = 15;
const DM_MAX_COUNT: u32 = 1 << DM_LENGTH_SHIFT;
/// Bit models' probability precision (LASzip's `BM_LENGTH_SHIFT`).
const BM_LENGTH_SHIFT: u32 = 13;
const BM_MAX_COUNT: u32 = 1 << BM_LENGTH_SHIFT;

/// The arithmetic decoder over one chunk's bytes.
pub(crate) struct Decoder<'a> {
    bytes: &'a [u8],
    /// The next byte to read, as a pointer into `bytes` (at most its end): the renormalization's 4-byte
    /// read then needs no base address (one load a symbol fewer than an index).
    next: *const u8,
    /// `bytes`' start + `bytes.len() - 3` (+ 0 for fewer than 3 bytes): 4 bytes can be read at `next`
    /// while `next` is below it.
    read4_below: *const u8,
    value: u32,
    length: u32,
    /// The data ended (zero bytes were fed) or broke (a quotient outside the model's range).
    pub bad: bool,
    ended: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder whose 4 start bytes are `bytes[at..at + 4]` (`bad` if they are not there).
    pub fn new(bytes: &'a [u8], at: usize) -> Self {
        let mut d = Decoder::at(bytes, at);
        for _ in 0..4 {
            d.value = (d.value << 8) | d.byte() as u32;
        }
        d
    }

    /// A decoder over `bytes` that has not read its 4 start bytes (`laz`'s state for an empty layer:
    /// value 0, full length; its first read fails where `bytes` is empty).
    pub fn idle(bytes: &'a [u8]) -> Self {
        Decoder::at(bytes, bytes.len())
    }

    /// A decoder over `bytes` whose next byte is `bytes[at]` (none past the end: `at` is clamped to it,
    /// which reads the same, nothing), value 0, full length.
    fn at(bytes: &'a [u8], at: usize) -> Self {
        let start = bytes.as_ptr();
        // SAFETY: both offsets are at most `bytes.len()`: pointers into `bytes` or just past its end.
        let (next, read4_below) = unsafe { (start.add(at.min(bytes.len())), start.add(bytes.len().saturating_sub(3))) };
        Decoder { bytes, next, read4_below, value: 0, length: u32::MAX, bad: false, ended: false }
    }

    /// The index of the next byte to read.
    fn index(&self) -> usize {
        self.next as usize - self.bytes.as_ptr() as usize
    }

    /// Whether a read went past the chunk's bytes.
    pub fn ended(&self) -> bool {
        self.ended
    }

    #[inline(always)]
    fn byte(&mut self) -> u8 {
        match self.bytes.get(self.index()) {
            Some(&b) => {
                // SAFETY: `next` is below `bytes`' end (it indexed a byte just above): one past it at most.
                self.next = unsafe { self.next.add(1) };
                b
            }
            None => {
                self.bad = true;
                self.ended = true;
                0
            }
        }
    }

    /// Sets the decoder's `value` and `length` to a symbol's `value` and `length`, bringing `length` back
    /// to ≥ 2^24, shifting in the bytes needed (0–3) without a branch on how many: the next 4 bytes are
    /// read at once and the count comes from `length`'s leading zeros. The new state is written to the
    /// decoder's fields once, after the shift (the fields live in the decode loop's stack frame: writing
    /// them before the shift as well cost 2 stores a symbol).
    #[inline(always)]
    fn renorm(&mut self, value: u32, length: u32) {
        // One compare instead of `get(at..at + 4)`'s two (the start past the end, and the end past the length).
        if self.next < self.read4_below {
            // SAFETY: `next` + 4 ≤ `bytes`' end (`next` < the end - 3 just above).
            let next = unsafe { self.next.cast::<[u8; 4]>().read_unaligned() };
            let next = u32::from_be_bytes(next) as u64;
            // `length` ≥ 2^5 here (2^9 after a symbol, 2^11 after a bit): 0–3 bytes. The mask is
            // `(leading zeros >> 3) * 8` in one instruction.
            let shift = length.leading_zeros() & 0x38;
            // `value` and the next 4 bytes as one 64-bit window, shifted: its top half is the new `value`
            // (fewer instructions than shifting both halves apart and joining them, and no longer a chain).
            let window = ((value as u64) << 32) | next;
            self.value = ((window << shift) >> 32) as u32;
            self.length = ((length as u64) << shift) as u32;
            // SAFETY: `shift >> 3` ≤ 4 and `next` + 4 ≤ `bytes`' end (above): at most the end.
            self.next = unsafe { self.next.add((shift >> 3) as usize) };
        } else {
            self.value = value;
            self.length = length;
            self.renorm_at_end();
        }
    }

    /// [`Self::renorm`] in the chunk's last 3 bytes, a byte at a time.
    #[cold]
    fn renorm_at_end(&mut self) {
        while self.length < MIN_LENGTH {
            self.value = (self.value << 8) | self.byte() as u32;
            self.length <<= 8;
        }
    }

    /// Decodes one symbol of `m` (built on first use).
    #[inline(always)]
    pub fn symbol<T: Entry>(&mut self, m: &mut Model<T>) -> u32 {
        if m.dc.is_empty() {
            m.build();
        }
        let l = self.length >> DM_LENGTH_SHIFT;
        // The most probable symbol of a skewed model, checked with a multiplication while the division
        // below would still be under way (the branch is well predicted where the symbol dominates).
        let x = m.mps_low.wrapping_mul(l);
        let v = self.value.wrapping_sub(x);
        if v < m.mps_width.wrapping_mul(l) {
            let sym = m.mps;
            let y = if sym != m.last_symbol { x.wrapping_add(m.mps_width.wrapping_mul(l)) } else { self.length };
            self.renorm(v, y.wrapping_sub(x));
            debug_assert!((sym as usize) < m.dc.len());
            // SAFETY: `mps` is a symbol (`update` sets it to one, below `symbols`; `dc` has `symbols` + 1
            // entries): no bounds check on the most probable symbol's path.
            unsafe { m.dc.get_unchecked_mut(sym as usize).count += 1 };
            m.until_update -= 1;
            if m.until_update == 0 {
                m.update();
            }
            return sym;
        }
        // `length` ≥ 2^24 after every renormalization, so `l` ≥ 2^9.
        let dv = self.value / l;
        let t = if dv < DM_MAX_COUNT { (dv >> m.table_shift) as usize } else { self.outside(m, dv) };
        let (table, dist) = (&m.table[..], &m.dc[..]);
        debug_assert!(t + 1 < table.len());
        // SAFETY: `t` ≤ the table's size (a quotient below 2^15 shifted by `table_shift`, or
        // `outside`'s last entry) and the table has 2 more entries than its size.
        let (mut sym, hi) = unsafe { (table.get_unchecked(t).symbol(), table.get_unchecked(t + 1).symbol()) };
        let (low, high);
        if hi == sym + 1 {
            // Two symbols open (the entry straddles one bound: most searches): both ranges' bounds read
            // at once, the middle one compared and the symbol and its bounds picked without a branch
            // (the comparison is a coin toss).
            debug_assert!(hi < m.symbols);
            // SAFETY: `hi` is a table entry, a symbol (< `symbols`; `dist` has `symbols` + 1 entries):
            // `update` writes only symbols into the entries in use.
            let [d0, d1, d2] = unsafe { [0, 1, 2].map(|i| dist.get_unchecked(sym as usize + i).dist as u32) };
            let up = d1 <= dv;
            sym = std::hint::select_unpredictable(up, hi, sym);
            (low, high) = (std::hint::select_unpredictable(up, d1, d0), std::hint::select_unpredictable(up, d2, d1));
        } else {
            // One symbol open (no step), or three or more (bisection).
            let mut n = hi + 1;
            while n > sym + 1 {
                let k = (sym + n) >> 1;
                debug_assert!(k < m.symbols);
                // SAFETY: sym < k < n ≤ table[t + 1] + 1, and every table entry is a symbol (< `symbols`,
                // the length of `dist`): `update` writes only symbols into the entries in use.
                if unsafe { dist.get_unchecked(k as usize).dist } as u32 > dv {
                    n = k;
                } else {
                    sym = k;
                }
            }
            debug_assert!(sym < m.symbols && (sym as usize) < dist.len() - 1);
            // SAFETY: `sym` is a table entry or between two (above): a symbol, so below `symbols`, and
            // `dist` has `symbols` + 1 entries.
            (low, high) = unsafe {
                (dist.get_unchecked(sym as usize).dist as u32, dist.get_unchecked(sym as usize + 1).dist as u32)
            };
        }
        // The last symbol's range ends at `length`; `dist` has a spare entry past the last symbol, so
        // the next symbol's bound is read either way and picked without a branch.
        let (x, y) = (low.wrapping_mul(l), high.wrapping_mul(l));
        let y = std::hint::select_unpredictable(sym != m.last_symbol, y, self.length);
        self.renorm(self.value.wrapping_sub(x), y.wrapping_sub(x));
        // SAFETY: `sym` < `symbols` = `count.len()` (above).
        unsafe { m.dc.get_unchecked_mut(sym as usize).count += 1 };
        m.until_update -= 1;
        if m.until_update == 0 {
            m.update();
        }
        sym
    }

    /// The table entry for a quotient of 2^15 or more (only damaged data gives one): the last, and
    /// `bad` where the `laz` crate's coarser table would be indexed past its end.
    #[cold]
    fn outside<T: Entry>(&mut self, m: &Model<T>, dv: u32) -> usize {
        if m.symbols > 16 {
            let laz_bits = laz_table_bits(m.symbols);
            if dv >> (DM_LENGTH_SHIFT - laz_bits) > 1 << laz_bits {
                self.bad = true;
            }
        }
        m.table_size()
    }

    /// Decodes one bit of `m`.
    #[inline(always)]
    pub fn bit(&mut self, m: &mut BitModel) -> u32 {
        let x = m.bit_0_prob.wrapping_mul(self.length >> BM_LENGTH_SHIFT);
        let sym = self.value >= x;
        if !sym {
            m.bit_0_count += 1;
            self.renorm(self.value, x);
        } else {
            self.renorm(self.value.wrapping_sub(x), self.length.wrapping_sub(x));
        }
        m.bits_until_update -= 1;
        if m.bits_until_update == 0 {
            m.update();
        }
        sym as u32
    }

    /// Reads `bits` (1–32) raw bits (inlined: the integer decoder reads a corrector's low bits so about
    /// once a point).
    #[inline(always)]
    pub fn bits(&mut self, bits: u32) -> u32 {
        if bits > 19 {
            return self.bits_wide(bits);
        }
        let length = self.length >> bits;
        let sym = self.value / length;
        self.renorm(self.value.wrapping_sub(length.wrapping_mul(sym)), length);
        sym
    }

    /// [`Self::bits`] for 20–32 bits (rare): a short, then the rest.
    #[cold]
    fn bits_wide(&mut self, bits: u32) -> u32 {
        let low = self.short() as u32;
        let high = self.bits(bits - 16) << 16;
        high | low
    }

    fn short(&mut self) -> u16 {
        let length = self.length >> 16;
        let sym = self.value / length;
        self.renorm(self.value.wrapping_sub(length.wrapping_mul(sym)), length);
        sym as u16
    }

    /// Reads a raw 32-bit integer (two shorts, low first).
    pub fn int(&mut self) -> u32 {
        let low = self.short() as u32;
        let high = self.short() as u32;
        (high << 16) | low
    }
}

/// The decoder table size LASzip (and the `laz` crate) use for a model of `symbols` > 16 symbols.
fn laz_table_bits(symbols: u32) -> u32 {
    let mut bits = 3;
    while symbols > 1 << (bits + 2) {
        bits += 1;
    }
    bits
}

/// A decoder table entry: a symbol, as `u8` (models of up to 256 symbols: half the cache lines of
/// `u16`, and the tables are most of the models' bytes) or `u16` (larger models).
pub(crate) trait Entry: Copy + Default {
    /// The most symbols a model with these entries may have.
    const SYMBOLS: u32;
    fn of(symbol: u32) -> Self;
    fn symbol(self) -> u32;
    /// Replaces each entry of `table` by the largest entry up to it (a running maximum).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn running_max_avx2(table: &mut [Self]);
}

impl Entry for u8 {
    const SYMBOLS: u32 = 256;
    #[inline(always)]
    fn of(symbol: u32) -> Self {
        symbol as u8
    }
    #[inline(always)]
    fn symbol(self) -> u32 {
        self as u32
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn running_max_avx2(table: &mut [Self]) {
        // SAFETY: the caller's CPU has AVX2.
        unsafe { running_max_u8_avx2(table) }
    }
}

impl Entry for u16 {
    const SYMBOLS: u32 = 1 << 16;
    #[inline(always)]
    fn of(symbol: u32) -> Self {
        symbol as u16
    }
    #[inline(always)]
    fn symbol(self) -> u32 {
        self as u32
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn running_max_avx2(table: &mut [Self]) {
        // SAFETY: the caller's CPU has AVX2.
        unsafe { running_max_u16_avx2(table) }
    }
}

/// Defines `fn $name(table: &mut [$t])`, [`Entry::running_max_avx2`] for entries of type `$t`, 16 bytes
/// at a time: the maximum of the block and the block shifted up by one entry, then two, four… (`$shift`
/// bytes; zeros shifted in: entries are ≥ 0), then with the last entry of the block before (`$last`: the
/// shuffle that spreads it to every entry); the tail entry by entry.
macro_rules! running_max_avx2 {
    ($name:ident, $t:ty, $max:ident, [$($shift:literal)*], $last:expr) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        fn $name(table: &mut [$t]) {
            use std::arch::x86_64::*;
            let mut carry = _mm_setzero_si128();
            let mut blocks = table.chunks_exact_mut(16 / std::mem::size_of::<$t>());
            for b in &mut blocks {
                // SAFETY: `b` is 16 bytes (unaligned load and store).
                let mut x = unsafe { _mm_loadu_si128(b.as_ptr().cast()) };
                $(x = $max(x, _mm_slli_si128::<$shift>(x));)*
                x = $max(x, carry);
                // SAFETY: as the load.
                unsafe { _mm_storeu_si128(b.as_mut_ptr().cast(), x) };
                carry = _mm_shuffle_epi8(x, $last);
            }
            let mut run = _mm_cvtsi128_si32(carry) as $t;
            for e in blocks.into_remainder() {
                run = run.max(*e);
                *e = run;
            }
        }
    };
}
running_max_avx2!(running_max_u8_avx2, u8, _mm_max_epu8, [1 2 4 8], _mm_set1_epi8(15));
running_max_avx2!(running_max_u16_avx2, u16, _mm_max_epu16, [2 4 8], _mm_set1_epi16(0x0F0E));

/// An adaptive model of `symbols` symbols (LASzip's `ArithmeticModel`), empty until first used; its
/// decoder table's entries are `T` (`u8`: up to 256 symbols).
#[derive(Clone)]
pub(crate) struct Model<T: Entry = u8> {
    symbols: u32,
    last_symbol: u32,
    table_shift: u32,
    until_update: u32,
    update_cycle: u32,
    total_count: u32,
    /// Each symbol's cumulative frequency (of 2^15) beside its count: a symbol's decoding reads both and
    /// the next symbol's frequency, mostly in one cache line; one spare entry past the last symbol.
    dc: Box<[Dc]>,
    /// `table[t]`: the last symbol whose cumulative frequency is below `t << table_shift`; 2 more
    /// entries than the table's size, and [`TABLE_PAD`] more for `update`'s wide stores.
    table: Box<[T]>,
    /// The most probable symbol where it holds at least [`MPS_SHARE`] of the probability: its
    /// cumulative frequency and its width (0: no such symbol).
    mps: u32,
    mps_low: u32,
    mps_width: u32,
}

/// A symbol's cumulative frequency and count, 16 bits each (`repr(C)`: [`spread_avx2`] reads them as
/// 32-bit lanes): 4 bytes a symbol, 16 symbols a cache line (the 256-symbol models' 1 KiB, not 2: with
/// their tables, the models a point touches are about the L1 cache's size). Both fit: a cumulative
/// frequency is at most 2^15 (`scale` × a sum of the counts ≤ 2^31, >> 16), and a count at most the total
/// before a halving, 2^15 plus an update cycle (≤ (2048 + 6) × 8), below 2^16.
#[derive(Clone, Copy)]
#[repr(C)]
struct Dc {
    dist: u16,
    count: u16,
}

/// Models of up to this many symbols get 8 decoder table entries per symbol, the others 4. The
/// integer decoders' bit-count models (17 and 33 symbols, 3–4 a point) and Point10's changed-fields
/// model (64) decode most of the symbols that take the division: with twice the entries, half as many
/// quotients land in an entry shared by two symbols, whose search branch mispredicts (the most
/// mispredicted branch with the most-probable-symbol check: ~1.6 a point in cachegrind's model).
/// In-process A/B against 4 per symbol: format 3 0.967–0.989, format 7 0.948–0.978 (+0.15 % instructions);
/// 16 per symbol or 8 up to 128 symbols measured no better, 8 for every model worse (+1.8 %
/// instructions, format 3 1.004–1.027: the 256-symbol models' 2 KiB tables) (results/2026-12-02-s13-laz-tables-cpu-stores/2026-12-02-laz13-s13.md).
const FINE_TABLE_SYMBOLS: usize = 64;

/// Spare table entries past the end: `update` writes 8 entries at a time.
const TABLE_PAD: usize = 8;

/// Models of at least this many symbols rebuild their tables with a running maximum (AVX2); smaller ones
/// a symbol at a time, where the `memset` call and the byte stores read back at once (a store-forwarding
/// stall per block) cost more than the few ranges' writes.
const WIDE_UPDATE_SYMBOLS: usize = 64;

/// A model's most probable symbol is tried first when its probability is at least this (of 2^15):
/// 3/8 (where two symbols hold that much, the last). The check's multiplication replaces the
/// division and the table loads on the symbol's chain where it hits, and costs a mispredicted branch
/// where it misses: 3/8 measured ~2 % less CPU than 5/8 for format 3 (no change for format 7), 2/8
/// and 6/8 more (results/2026-12-01-s9-cover-mask-laz/2026-12-01-laz-decoder-2core-s9.md).
const MPS_SHARE: u32 = 3 << 12;

impl<T: Entry> Model<T> {
    /// Entries of the decoder table (the quotient shifted right by `table_shift` is below this).
    fn table_size(&self) -> usize {
        1 << (DM_LENGTH_SHIFT - self.table_shift)
    }

    /// A model of `symbols` (2–2048) symbols, built when first used.
    pub fn new(symbols: u32) -> Self {
        assert!((2..=2048.min(T::SYMBOLS)).contains(&symbols));
        Model {
            symbols,
            last_symbol: symbols - 1,
            table_shift: 0,
            until_update: 0,
            update_cycle: 0,
            total_count: 0,
            dc: Box::new([]),
            table: Box::new([]),
            mps: 0,
            mps_low: 0,
            mps_width: 0,
        }
    }

    #[cold]
    fn build(&mut self) {
        let n = self.symbols as usize;
        // 8 to 2^11 table entries in all: 4 per symbol, 8 for models of up to `FINE_TABLE_SYMBOLS`.
        let per_symbol = if n <= FINE_TABLE_SYMBOLS { 8 } else { 4 };
        let mut bits = 3;
        while bits < 11 && (1usize << bits) < per_symbol * n {
            bits += 1;
        }
        self.table_shift = DM_LENGTH_SHIFT - bits;
        // One spare entry past the last symbol (`symbol` reads its frequency, and ignores it).
        self.dc = vec![Dc { dist: 0, count: 1 }; n + 1].into_boxed_slice();
        self.table = vec![T::default(); (1 << bits) + 2 + TABLE_PAD].into_boxed_slice();
        self.update_cycle = self.symbols;
        self.update();
        self.update_cycle = (self.symbols + 6) >> 1;
        self.until_update = self.update_cycle;
    }

    /// Rescales the distribution and rebuilds the decoder table (LASzip's `update`), with AVX2 and BMI
    /// where the CPU has them (`update` runs outside the decode loops' `with_bmi!` builds).
    #[cold]
    fn update(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
        {
            // SAFETY: the CPU has AVX2, BMI1 and BMI2 (checked just above), all `update_avx2` is compiled for.
            return unsafe { self.update_avx2() };
        }
        self.update_in::<false>();
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2")]
    unsafe fn update_avx2(&mut self) {
        self.update_in::<true>();
    }

    /// [`Self::update`]: counts halved past 2^15, then the distribution (`spread`, 4 symbols at a time
    /// with `AVX2`), then one pass over the symbols that fills the table and finds the most probable
    /// symbol.
    #[inline(always)]
    fn update_in<const AVX2: bool>(&mut self) {
        self.total_count = self.total_count.wrapping_add(self.update_cycle);
        if self.total_count > DM_MAX_COUNT {
            self.total_count = 0;
            for Dc { count: c, .. } in self.dc[..self.symbols as usize].iter_mut() {
                *c = (*c + 1) >> 1;
                self.total_count += *c as u32;
            }
        }
        let scale = 0x8000_0000u32 / self.total_count;
        let size = self.table_size();
        let shift = self.table_shift;
        let n = self.symbols as usize;
        let (dc, table) = (&mut self.dc[..n], &mut self.table[..]);
        #[cfg(target_arch = "x86_64")]
        if AVX2 {
            // SAFETY: `AVX2` is set only in `update_avx2`, which runs where the CPU has AVX2.
            unsafe { spread_avx2(dc, scale) };
        } else {
            spread(dc, scale, 0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        spread(dc, scale, 0);
        let mut prev = 0u32;
        self.mps_width = 0;
        #[cfg(target_arch = "x86_64")]
        if AVX2 && n >= WIDE_UPDATE_SYMBOLS {
            // Entry t is the last symbol k whose range starts below it, i.e. the number of symbols
            // k ≥ 1 with dist[k] >> shift < t: k is written at (dist[k] >> shift) + 1 (a later symbol
            // overwrites an earlier one there: the larger), every other entry is 0, and the running
            // maximum carries each symbol to the entries up to the next one's. No branch on the ranges'
            // widths, and the table is written 16 bytes at a time.
            table.fill(T::of(0));
            for (k, e) in dc.iter().enumerate().skip(1) {
                let d = e.dist as u32;
                if d - prev >= MPS_SHARE {
                    (self.mps, self.mps_low, self.mps_width) = (k as u32 - 1, prev, d - prev);
                }
                prev = d;
                // d < 2^15 (scale × the counts before the last symbol < 2^31): the index is ≤ size.
                table[(d >> shift) as usize + 1] = T::of(k as u32);
            }
            // SAFETY: `AVX2` is set only in `update_avx2`, which runs where the CPU has AVX2.
            unsafe { T::running_max_avx2(table) };
        } else {
            prev = self.fill_table(size);
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            prev = self.fill_table(size);
        }
        // The last symbol's range ends at `length`, beyond 2^15 × l: the check stays within 2^15.
        if DM_MAX_COUNT - prev >= MPS_SHARE {
            (self.mps, self.mps_low, self.mps_width) = (self.symbols - 1, prev, DM_MAX_COUNT - prev);
        }
        self.update_cycle = (5 * self.update_cycle) >> 2;
        self.update_cycle = self.update_cycle.min((self.symbols + 6) << 3);
        self.until_update = self.update_cycle;
    }

    /// The table and the most probable symbol from the distribution, a symbol at a time (the portable
    /// [`Self::update`]); gives the last symbol's cumulative frequency.
    #[inline(always)]
    fn fill_table(&mut self, size: usize) -> u32 {
        let shift = self.table_shift;
        let n = self.symbols as usize;
        let (dc, table) = (&self.dc[..n], &mut self.table[..]);
        let mut s = 0usize;
        let mut prev = 0u32;
        self.mps_width = 0;
        for (k, e) in dc.iter().enumerate() {
            let d = e.dist as u32;
            if d - prev >= MPS_SHARE {
                (self.mps, self.mps_low, self.mps_width) = (k as u32 - 1, prev, d - prev);
            }
            prev = d;
            // Entries s+1..=w: the last symbol below them is k - 1 (k ≥ 1 where w > s: dist[0] is 0).
            // Mostly a few entries: 8 written at once (the ones past w are written again later), and
            // 8 at a time where there are more (no `memset` call, whose size branches mispredicted).
            let w = ((d >> shift) as usize).min(size + 1);
            let fill = T::of((k as u32).wrapping_sub(1));
            table[s + 1..s + 9].copy_from_slice(&[fill; 8]);
            let mut i = s + 9;
            while i <= w {
                // i ≤ w ≤ size + 1 and the table has size + 2 + TABLE_PAD entries.
                table[i..i + 8].copy_from_slice(&[fill; 8]);
                i += 8;
            }
            s = w;
        }
        table[0] = T::of(0);
        table[s + 1..].fill(T::of(self.symbols - 1));
        prev
    }
}

/// Each symbol's cumulative frequency from the counts: `dist[k]` = `scale` × (`sum` + the counts of the
/// symbols before `k`) >> 16, wrapping as LASzip's 32-bit arithmetic does (at most 2^15: see [`Dc`]).
#[inline(always)]
fn spread(dc: &mut [Dc], scale: u32, mut sum: u32) {
    for e in dc.iter_mut() {
        e.dist = (scale.wrapping_mul(sum) >> (31 - DM_LENGTH_SHIFT)) as u16;
        sum = sum.wrapping_add(e.count as u32);
    }
}

/// [`spread`] 8 symbols at a time: a 256-bit load holds 8 `Dc`s (a `dist` in the low and a `count` in
/// the high half of each 32-bit lane), the counts' prefix sum is taken in the register (shifted adds in
/// each 128-bit half, the low half's total added to the high half, and the running total), `scale`
/// multiplies it (`vpmulld`: the wrapping 32-bit product), and the new `dist`s (`>> 16`, ≤ 2^15) are
/// blended back beside the counts. The last 1–7 symbols go through [`spread`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn spread_avx2(dc: &mut [Dc], scale: u32) {
    use std::arch::x86_64::*;
    let n = dc.len();
    let p = dc.as_mut_ptr();
    let sc = _mm256_set1_epi32(scale as i32);
    let (lane3, lane7) = (_mm256_set1_epi32(3), _mm256_set1_epi32(7));
    // The sum of the counts before the current 8, in every lane.
    let mut carry = _mm256_setzero_si256();
    let mut k = 0;
    while k + 8 <= n {
        // SAFETY: `Dc` is `repr(C)`, two `u16`s (4 bytes): entries k..k + 8 (k + 8 ≤ n) are the 32 bytes
        // read and written (unaligned loads and stores).
        let v = unsafe { _mm256_loadu_si256(p.add(k).cast()) };
        let c = _mm256_srli_epi32::<16>(v);
        // Inclusive prefix sums within each 128-bit half, then the low half's total added to the high half.
        let x = _mm256_add_epi32(c, _mm256_slli_si256::<4>(c));
        let x = _mm256_add_epi32(x, _mm256_slli_si256::<8>(x));
        let low_total =
            _mm256_blend_epi32::<0b1111_0000>(_mm256_setzero_si256(), _mm256_permutevar8x32_epi32(x, lane3));
        let inclusive = _mm256_add_epi32(_mm256_add_epi32(x, low_total), carry);
        let before = _mm256_sub_epi32(inclusive, c);
        // (scale × before) mod 2^32, >> 16.
        let d = _mm256_srli_epi32::<16>(_mm256_mullo_epi32(before, sc));
        // SAFETY: as the load above.
        unsafe { _mm256_storeu_si256(p.add(k).cast(), _mm256_blend_epi16::<0b1010_1010>(d, v)) };
        carry = _mm256_permutevar8x32_epi32(inclusive, lane7);
        k += 8;
    }
    spread(&mut dc[k..], scale, _mm256_cvtsi256_si32(carry) as u32);
}

/// An adaptive bit model (LASzip's `ArithmeticBitModel`).
#[derive(Clone, Copy)]
pub(crate) struct BitModel {
    bit_0_count: u32,
    bit_count: u32,
    bit_0_prob: u32,
    bits_until_update: u32,
    update_cycle: u32,
}

impl Default for BitModel {
    fn default() -> Self {
        BitModel {
            bit_0_count: 1,
            bit_count: 2,
            bit_0_prob: 1 << (BM_LENGTH_SHIFT - 1),
            bits_until_update: 4,
            update_cycle: 4,
        }
    }
}

impl BitModel {
    #[cold]
    fn update(&mut self) {
        self.bit_count = self.bit_count.wrapping_add(self.update_cycle);
        if self.bit_count > BM_MAX_COUNT {
            self.bit_count = (self.bit_count + 1) >> 1;
            self.bit_0_count = (self.bit_0_count + 1) >> 1;
            if self.bit_0_count == self.bit_count {
                self.bit_count += 1;
            }
        }
        let scale = 0x8000_0000u32 / self.bit_count;
        self.bit_0_prob = self.bit_0_count.wrapping_mul(scale) >> (31 - BM_LENGTH_SHIFT);
        self.update_cycle = ((5 * self.update_cycle) >> 2).min(64);
        self.bits_until_update = self.update_cycle;
    }
}

/// LASzip's integer decompressor (`IntegerDecompressor` with `bits_high` 8 and no range): a value is
/// a prediction plus a corrector whose bit count `k` is coded first (per context), then the corrector's
/// top 8 bits with a model per `k` and its remaining bits raw.
pub(crate) struct IntDecoder<const BITS: u32, const CONTEXTS: usize> {
    /// The bit count of the last corrector (contexts of other fields depend on it).
    pub k: u32,
    /// The `k` models per context: an array of fixed size (callers' contexts, built with masks and minima,
    /// are provably below `CONTEXTS`: no bounds check, no length to load).
    bits: Box<[Model; CONTEXTS]>,
    corrector0: BitModel,
    /// The corrector models of `k` = 1..=32 (those past the value's bits are never used: a fixed array,
    /// so that `k` < 32 indexes it without a bounds check).
    corrector: [Model; 32],
}

impl<const BITS: u32, const CONTEXTS: usize> IntDecoder<BITS, CONTEXTS> {
    /// The values' range, 2^BITS (0 for 32 bits: those wrap by themselves), and the smallest corrector.
    /// Constants, so that each decoder's inlined copy has no branch on its kind.
    const RANGE: u32 = if BITS < 32 { 1 << BITS } else { 0 };
    const MIN: i32 = if BITS < 32 { -((1i32 << BITS) / 2) } else { i32::MIN };

    /// A decompressor of `BITS`-bit values (16 or 32) with `CONTEXTS` contexts.
    pub fn new() -> Self {
        const { assert!(BITS == 16 || BITS == 32) };
        IntDecoder {
            k: 0,
            bits: Box::new(std::array::from_fn(|_| Model::new(BITS + 1))),
            corrector0: BitModel::default(),
            corrector: std::array::from_fn(|i| Model::new(1 << (i as u32 + 1).min(8))),
        }
    }

    /// Decodes the value predicted by `pred` in context `context` (< `CONTEXTS`).
    #[inline(always)]
    pub fn decode(&mut self, d: &mut Decoder, pred: i32, context: usize) -> i32 {
        let k = d.symbol(&mut self.bits[context]);
        self.k = k;
        let c = if k == 0 {
            d.bit(&mut self.corrector0) as i32
        } else if k < 32 {
            // `k` ≤ BITS: the model has BITS + 1 symbols.
            let mut c = d.symbol(&mut self.corrector[k as usize - 1]) as i32;
            if k > 8 {
                let k1 = k - 8;
                c = (c << k1) | d.bits(k1) as i32;
            }
            // c + 1 where c ≥ 2^(k-1), else c - (2^k - 1), i.e. c + 1 - 2^k: without a branch (the
            // corrector's sign is noise; a branch on it mispredicted about once a point). c < 2^k ≤ 2^31.
            let low = ((c as u32) < (1u32 << (k - 1))) as u32;
            c.wrapping_add(1).wrapping_sub((low << k) as i32)
        } else {
            Self::MIN
        };
        let real = pred.wrapping_add(c);
        let range = Self::RANGE as i32;
        if range == 0 {
            // 32-bit values wrap by themselves (no data-dependent branch on the sign).
            return real;
        }
        if real < 0 {
            real.wrapping_add(range)
        } else if real >= range {
            real.wrapping_sub(range)
        } else {
            real
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After updates with skewed counts, the table lookup + search finds, for every quotient, the
    /// last symbol whose cumulative frequency is ≤ it (tables of `T` entries).
    fn check_table<T: Entry>(symbols: u32) {
        let mut m = Model::<T>::new(symbols);
        m.build();
        // Symbols counted as the decoder counts them (the updates keep the total in step).
        for i in 0..5000u32 {
            let s = if i % 3 == 0 { (i * 7919) % symbols } else { (i % 7).min(symbols - 1) };
            m.dc[s as usize].count += 1;
            m.until_update -= 1;
            if m.until_update == 0 {
                m.update();
            }
        }
        for dv in 0..DM_MAX_COUNT {
            let t = (dv >> m.table_shift) as usize;
            let (lo, hi) = (m.table[t].symbol(), m.table[t + 1].symbol());
            let want = (0..symbols).rev().find(|&s| m.dc[s as usize].dist as u32 <= dv).unwrap();
            assert!(lo <= want && want <= hi, "{symbols} symbols, dv {dv}: {want} outside {lo}..={hi}");
        }
    }

    #[test]
    fn table_gives_the_searched_symbol() {
        for symbols in [2u32, 3, 6, 17, 33, 64, 65, 128, 255, 256] {
            check_table::<u8>(symbols);
            check_table::<u16>(symbols);
        }
        for symbols in [257u32, 516, 2048] {
            check_table::<u16>(symbols);
        }
    }

    /// Models of up to [`FINE_TABLE_SYMBOLS`] symbols get 8 table entries a symbol, larger ones 4, 8 to 2^11
    /// entries in all (a power of 2).
    #[test]
    fn table_sizes_follow_the_symbol_count() {
        let sizes = [
            (2u32, 16usize),
            (3, 32),
            (17, 256),
            (33, 512),
            (64, 512),
            (65, 512),
            (128, 512),
            (129, 1024),
            (256, 1024),
            (257, 2048),
            (516, 2048),
            (2048, 2048),
        ];
        for (symbols, entries) in sizes {
            let mut m = Model::<u16>::new(symbols);
            m.build();
            assert_eq!(m.table_size(), entries, "{symbols} symbols");
            assert_eq!(m.table.len(), entries + 2 + TABLE_PAD, "{symbols} symbols");
        }
    }

    /// The 4-byte renormalization (one bounds compare) and the byte-at-a-time one of the chunk's end give
    /// the same symbols, positions and end flags, for chunks of every length up to 40 bytes.
    #[test]
    fn wide_and_bytewise_renormalization_agree() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for len in 0..40usize {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (seed >> 56) as u8
                })
                .collect();
            let (mut wide, mut narrow) = (Decoder::new(&bytes, 0), Decoder::new(&bytes, 0));
            // Never 4 bytes at once: every renormalization takes `renorm_at_end`.
            narrow.read4_below = narrow.bytes.as_ptr();
            let (mut mw, mut mn) = (Model::<u8>::new(256), Model::<u8>::new(256));
            let (mut bw, mut bn) = (BitModel::default(), BitModel::default());
            for i in 0..60 {
                let (a, b) = if i % 3 == 0 {
                    (wide.bit(&mut bw), narrow.bit(&mut bn))
                } else {
                    (wide.symbol(&mut mw), narrow.symbol(&mut mn))
                };
                assert_eq!(a, b, "{len} bytes, symbol {i}");
                assert_eq!(
                    (wide.index(), wide.value, wide.length, wide.bad, wide.ended),
                    (narrow.index(), narrow.value, narrow.length, narrow.bad, narrow.ended),
                    "{len} bytes, symbol {i}"
                );
                assert!(wide.index() <= len);
            }
        }
    }

    /// The single-pass update this module had before `spread`: the reference for the models' fields.
    fn update_reference<T: Entry>(m: &mut Model<T>) {
        m.total_count = m.total_count.wrapping_add(m.update_cycle);
        if m.total_count > DM_MAX_COUNT {
            m.total_count = 0;
            for Dc { count: c, .. } in m.dc[..m.symbols as usize].iter_mut() {
                *c = (*c + 1) >> 1;
                m.total_count += *c as u32;
            }
        }
        let scale = 0x8000_0000u32 / m.total_count;
        let size = m.table_size();
        let shift = m.table_shift;
        let n = m.symbols as usize;
        let (mut sum, mut s, mut prev) = (0u32, 0usize, 0u32);
        m.mps_width = 0;
        for k in 0..n {
            let d = scale.wrapping_mul(sum) >> (31 - DM_LENGTH_SHIFT);
            m.dc[k].dist = d as u16;
            sum = sum.wrapping_add(m.dc[k].count as u32);
            if d - prev >= MPS_SHARE {
                (m.mps, m.mps_low, m.mps_width) = (k as u32 - 1, prev, d - prev);
            }
            prev = d;
            let w = ((d >> shift) as usize).min(size + 1);
            for e in &mut m.table[s + 1..=w.max(s)] {
                *e = T::of(k as u32 - 1);
            }
            s = w.max(s);
        }
        m.table[0] = T::of(0);
        m.table[s + 1..].fill(T::of(m.symbols - 1));
        if DM_MAX_COUNT - prev >= MPS_SHARE {
            (m.mps, m.mps_low, m.mps_width) = (m.symbols - 1, prev, DM_MAX_COUNT - prev);
        }
        m.update_cycle = ((5 * m.update_cycle) >> 2).min((m.symbols + 6) << 3);
        m.until_update = m.update_cycle;
    }

    fn same_model<T: Entry + PartialEq + std::fmt::Debug>(a: &Model<T>, b: &Model<T>, what: &str) {
        let (da, db): (Vec<_>, Vec<_>) =
            (a.dc.iter().map(|e| (e.dist, e.count)).collect(), b.dc.iter().map(|e| (e.dist, e.count)).collect());
        assert_eq!(da, db, "{what}: dist/count");
        assert_eq!(a.table, b.table, "{what}: table");
        assert_eq!(
            (a.mps, a.mps_low, a.mps_width, a.total_count, a.update_cycle, a.until_update),
            (b.mps, b.mps_low, b.mps_width, b.total_count, b.update_cycle, b.until_update),
            "{what}: fields"
        );
    }

    /// `update` (its AVX2 build where the CPU has AVX2, and the portable one) gives the reference's
    /// distribution, table and most probable symbol after every update, for model sizes around the
    /// 8-symbol steps of `spread_avx2` and the table sizes, with counts that are uniform, skewed to one
    /// symbol (the MPS at the first, a middle and the last symbol, several halvings past 2^15), and
    /// spread over two symbols.
    fn check_update<T: Entry + PartialEq + std::fmt::Debug>(symbols: u32) {
        let mut seed = 0x2545_F491_4F6C_DD1Du64 ^ symbols as u64;
        for pattern in 0..5u32 {
            let mut models = [Model::<T>::new(symbols), Model::<T>::new(symbols), Model::<T>::new(symbols)];
            for m in &mut models {
                m.build();
            }
            same_model(&models[0], &models[1], "built");
            for i in 0..20_000u32 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = (seed >> 33) as u32;
                let s = match pattern {
                    0 => r % symbols,
                    1 => {
                        if !r.is_multiple_of(16) {
                            0
                        } else {
                            r % symbols
                        }
                    }
                    2 => {
                        if !r.is_multiple_of(16) {
                            symbols / 2
                        } else {
                            r % symbols
                        }
                    }
                    3 => {
                        if !r.is_multiple_of(16) {
                            symbols - 1
                        } else {
                            r % symbols
                        }
                    }
                    _ => {
                        if r.is_multiple_of(8) {
                            r % symbols
                        } else {
                            [1, symbols - 1][(r % 2) as usize].min(symbols - 1)
                        }
                    }
                };
                for m in &mut models {
                    m.dc[s as usize].count += 1;
                    m.until_update -= 1;
                }
                if models[0].until_update == 0 {
                    update_reference(&mut models[0]);
                    models[1].update_in::<false>();
                    models[2].update();
                    let what = format!("{symbols} symbols, pattern {pattern}, symbol {i}");
                    same_model(&models[0], &models[1], &what);
                    same_model(&models[0], &models[2], &what);
                }
            }
        }
    }

    #[test]
    fn update_matches_the_reference() {
        for symbols in (2u32..=20).chain([31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256]) {
            check_update::<u8>(symbols);
        }
        for symbols in [2u32, 5, 33, 256, 257, 516, 1023, 2048] {
            check_update::<u16>(symbols);
        }
    }

    /// A symbol's count stays below 2^16 (it is a `u16`) where every symbol decoded is the same one, the
    /// largest a count gets, for the largest models of both entry types; its cumulative frequency ≤ 2^15.
    #[test]
    fn counts_fit_16_bits() {
        fn check<T: Entry>(symbols: u32) {
            for s in [0, symbols - 1] {
                let mut m = Model::<T>::new(symbols);
                m.build();
                let mut most = 0;
                for _ in 0..200_000 {
                    let c = &mut m.dc[s as usize].count;
                    *c = c.checked_add(1).expect("count below 2^16");
                    most = most.max(*c);
                    m.until_update -= 1;
                    if m.until_update == 0 {
                        m.update();
                        assert!(m.dc.iter().all(|e| e.dist <= 1 << 15));
                    }
                }
                assert!(most > 1 << 15, "{symbols} symbols: the count reached {most}");
            }
        }
        check::<u8>(256);
        check::<u16>(2048);
    }

    #[test]
    #[should_panic]
    fn byte_tables_hold_at_most_256_symbols() {
        let _ = Model::<u8>::new(257);
    }
}
