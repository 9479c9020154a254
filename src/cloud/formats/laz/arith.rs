//! LASzip's adaptive arithmetic decoder, its symbol and bit models and its integer decompressor,
//! written for speed and giving exactly the `laz` crate's symbols.
//!
//! How it works: the decoder holds LASzip's 32-bit `value` and `length` and reads the chunk's bytes
//! from a slice. Decoding a symbol divides `value` by `length >> 15`, looks the quotient up in the
//! model's decoder table, and searches the few symbols the table entry leaves open. The symbol found is
//! the one LASzip's encoder wrote whatever table is used (the table only narrows the search: the symbol
//! is the last one whose cumulative frequency is ≤ the quotient), so the tables here are finer than
//! LASzip's (4 table entries per symbol up to 2^11 entries, and for small models too, where LASzip
//! bisects with multiplications): most symbols need no search at all. A model whose most probable
//! symbol holds ≥ 3/8 of the probability checks that symbol first with a multiplication, beside the
//! division. Renormalization reads the next 4 bytes at once and shifts in as many as `length` needs. Model updates (counts halved
//! past 2^15, distribution rescaled, table rebuilt) follow LASzip's schedule exactly, in one pass over
//! the symbols (distribution, table ranges written 8 entries at a time, most probable symbol).
//!
//! The models' bytes are laid out for the L1 cache (a point touches ~20 models, more than the 32 KB
//! L1 holds, and the table and distribution loads are on the symbol chain): table entries are bytes
//! for models of up to 256 symbols (all but the GPS time multiplier models), and each symbol's
//! cumulative frequency sits beside its count, so that a symbol's decoding mostly touches one line of
//! each (results/2026-12-01-laz-decoder-2core-s7.md: ~40 % fewer L1 misses).
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
    at: usize,
    /// `bytes.len() - 3` (0 for fewer than 3 bytes): 4 bytes can be read at `at` while `at` is below it.
    read4_below: usize,
    value: u32,
    length: u32,
    /// The data ended (zero bytes were fed) or broke (a quotient outside the model's range).
    pub bad: bool,
    ended: bool,
}

impl<'a> Decoder<'a> {
    /// A decoder whose 4 start bytes are `bytes[at..at + 4]` (`bad` if they are not there).
    pub fn new(bytes: &'a [u8], at: usize) -> Self {
        let read4_below = bytes.len().saturating_sub(3);
        let mut d = Decoder { bytes, at, read4_below, value: 0, length: u32::MAX, bad: false, ended: false };
        for _ in 0..4 {
            d.value = (d.value << 8) | d.byte() as u32;
        }
        d
    }

    /// A decoder over `bytes` that has not read its 4 start bytes (`laz`'s state for an empty layer:
    /// value 0, full length; its first read fails where `bytes` is empty).
    pub fn idle(bytes: &'a [u8]) -> Self {
        Decoder { bytes, at: bytes.len(), read4_below: bytes.len().saturating_sub(3), value: 0, length: u32::MAX, bad: false, ended: false }
    }

    /// Whether a read went past the chunk's bytes.
    pub fn ended(&self) -> bool {
        self.ended
    }

    #[inline(always)]
    fn byte(&mut self) -> u8 {
        match self.bytes.get(self.at) {
            Some(&b) => {
                self.at += 1;
                b
            }
            None => {
                self.bad = true;
                self.ended = true;
                0
            }
        }
    }

    /// Brings `length` back to ≥ 2^24, shifting in the bytes needed (0–3) without a branch on how
    /// many: the next 4 bytes are read at once and the count comes from `length`'s leading zeros.
    #[inline(always)]
    fn renorm(&mut self) {
        // One compare instead of `get(at..at + 4)`'s two (`at` past its end, and the end past the length).
        if self.at < self.read4_below {
            // SAFETY: `at` + 4 ≤ `bytes.len()` (`at` < `bytes.len()` - 3 just above).
            let next = unsafe { self.bytes.as_ptr().add(self.at).cast::<[u8; 4]>().read_unaligned() };
            let next = u32::from_be_bytes(next) as u64;
            // `length` ≥ 2^5 here (2^9 after a symbol, 2^11 after a bit): 0–3 bytes.
            let shift = (self.length.leading_zeros() >> 3) * 8;
            self.value = (((self.value as u64) << shift) | (next >> (32 - shift))) as u32;
            self.length = ((self.length as u64) << shift) as u32;
            self.at += (shift >> 3) as usize;
        } else {
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
            self.value = v;
            self.length = y.wrapping_sub(x);
            self.renorm();
            m.dc[sym as usize].count += 1;
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
        let (mut sym, mut n) = unsafe { (table.get_unchecked(t).symbol(), table.get_unchecked(t + 1).symbol() + 1) };
        while n > sym + 1 {
            let k = (sym + n) >> 1;
            debug_assert!(k < m.symbols);
            // SAFETY: sym < k < n ≤ table[t + 1] + 1, and every table entry is a symbol (< `symbols`,
            // the length of `dist`): `update` writes only symbols into the entries in use.
            if unsafe { dist.get_unchecked(k as usize).dist } > dv {
                n = k;
            } else {
                sym = k;
            }
        }
        debug_assert!(sym < m.symbols && (sym as usize) < dist.len() - 1);
        // SAFETY: `sym` is a table entry or between two (above): a symbol, so below `symbols`, and
        // `dist` has `symbols` + 1 entries.
        let x = unsafe { dist.get_unchecked(sym as usize).dist }.wrapping_mul(l);
        // The last symbol's range ends at `length`; `dist` has a spare entry past the last symbol, so
        // the next symbol's bound is read either way and picked without a branch.
        let y = unsafe { dist.get_unchecked(sym as usize + 1).dist }.wrapping_mul(l);
        let y = std::hint::select_unpredictable(sym != m.last_symbol, y, self.length);
        self.value = self.value.wrapping_sub(x);
        self.length = y.wrapping_sub(x);
        self.renorm();
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
            self.length = x;
            m.bit_0_count += 1;
        } else {
            self.value = self.value.wrapping_sub(x);
            self.length = self.length.wrapping_sub(x);
        }
        self.renorm();
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
        self.length >>= bits;
        let sym = self.value / self.length;
        self.value = self.value.wrapping_sub(self.length.wrapping_mul(sym));
        self.renorm();
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
        self.length >>= 16;
        let sym = self.value / self.length;
        self.value = self.value.wrapping_sub(self.length.wrapping_mul(sym));
        self.renorm();
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
}

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

/// A symbol's cumulative frequency and count.
#[derive(Clone, Copy)]
struct Dc {
    dist: u32,
    count: u32,
}

/// Spare table entries past the end: `update` writes 8 entries at a time.
const TABLE_PAD: usize = 8;

/// A model's most probable symbol is tried first when its probability is at least this (of 2^15):
/// 3/8 (where two symbols hold that much, the last). The check's multiplication replaces the
/// division and the table loads on the symbol's chain where it hits, and costs a mispredicted branch
/// where it misses: 3/8 measured ~2 % less CPU than 5/8 for format 3 (no change for format 7), 2/8
/// and 6/8 more (results/2026-12-01-laz-decoder-2core-s9.md).
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
        // 4 table entries per symbol, 8 to 2^11 in all.
        let mut bits = 3;
        while bits < 11 && (1usize << bits) < 4 * n {
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

    #[cold]
    fn update(&mut self) {
        self.total_count = self.total_count.wrapping_add(self.update_cycle);
        if self.total_count > DM_MAX_COUNT {
            self.total_count = 0;
            for Dc { count: c, .. } in self.dc[..self.symbols as usize].iter_mut() {
                *c = (*c + 1) >> 1;
                self.total_count += *c;
            }
        }
        let scale = 0x8000_0000u32 / self.total_count;
        let size = self.table_size();
        let shift = self.table_shift;
        let n = self.symbols as usize;
        let (dc, table) = (&mut self.dc[..n], &mut self.table[..]);
        let mut sum = 0u32;
        let mut s = 0usize;
        let mut prev = 0u32;
        self.mps_width = 0;
        for (k, e) in dc.iter_mut().enumerate() {
            let d = scale.wrapping_mul(sum) >> (31 - DM_LENGTH_SHIFT);
            e.dist = d;
            sum = sum.wrapping_add(e.count);
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
        // The last symbol's range ends at `length`, beyond 2^15 × l: the check stays within 2^15.
        if DM_MAX_COUNT - prev >= MPS_SHARE {
            (self.mps, self.mps_low, self.mps_width) = (self.symbols - 1, prev, DM_MAX_COUNT - prev);
        }
        self.update_cycle = (5 * self.update_cycle) >> 2;
        self.update_cycle = self.update_cycle.min((self.symbols + 6) << 3);
        self.until_update = self.update_cycle;
    }
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
        BitModel { bit_0_count: 1, bit_count: 2, bit_0_prob: 1 << (BM_LENGTH_SHIFT - 1), bits_until_update: 4, update_cycle: 4 }
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
pub(crate) struct IntDecoder<const BITS: u32> {
    /// The bit count of the last corrector (contexts of other fields depend on it).
    pub k: u32,
    bits: Vec<Model>,
    corrector0: BitModel,
    /// The corrector models of `k` = 1..=32 (those past the value's bits are never used: a fixed array,
    /// so that `k` < 32 indexes it without a bounds check).
    corrector: [Model; 32],
}

impl<const BITS: u32> IntDecoder<BITS> {
    /// The values' range, 2^BITS (0 for 32 bits: those wrap by themselves), and the smallest corrector.
    /// Constants, so that each decoder's inlined copy has no branch on its kind.
    const RANGE: u32 = if BITS < 32 { 1 << BITS } else { 0 };
    const MIN: i32 = if BITS < 32 { -((1i32 << BITS) / 2) } else { i32::MIN };

    /// A decompressor of `BITS`-bit values (16 or 32) with `contexts` contexts.
    pub fn new(contexts: u32) -> Self {
        const { assert!(BITS == 16 || BITS == 32) };
        IntDecoder {
            k: 0,
            bits: vec![Model::new(BITS + 1); contexts as usize],
            corrector0: BitModel::default(),
            corrector: std::array::from_fn(|i| Model::new(1 << (i as u32 + 1).min(8))),
        }
    }

    /// Decodes the value predicted by `pred` in context `context` (< the contexts given to `new`).
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
            let want = (0..symbols).rev().find(|&s| m.dc[s as usize].dist <= dv).unwrap();
            assert!(lo <= want && want <= hi, "{symbols} symbols, dv {dv}: {want} outside {lo}..={hi}");
        }
    }

    #[test]
    fn table_gives_the_searched_symbol() {
        for symbols in [2u32, 3, 6, 17, 33, 64, 255, 256] {
            check_table::<u8>(symbols);
            check_table::<u16>(symbols);
        }
        for symbols in [257u32, 516, 2048] {
            check_table::<u16>(symbols);
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
            narrow.read4_below = 0;
            let (mut mw, mut mn) = (Model::<u8>::new(256), Model::<u8>::new(256));
            let (mut bw, mut bn) = (BitModel::default(), BitModel::default());
            for i in 0..60 {
                let (a, b) = if i % 3 == 0 { (wide.bit(&mut bw), narrow.bit(&mut bn)) } else { (wide.symbol(&mut mw), narrow.symbol(&mut mn)) };
                assert_eq!(a, b, "{len} bytes, symbol {i}");
                assert_eq!((wide.at, wide.value, wide.length, wide.bad, wide.ended), (narrow.at, narrow.value, narrow.length, narrow.bad, narrow.ended), "{len} bytes, symbol {i}");
                assert!(wide.at <= len);
            }
        }
    }

    #[test]
    #[should_panic]
    fn byte_tables_hold_at_most_256_symbols() {
        let _ = Model::<u8>::new(257);
    }
}
