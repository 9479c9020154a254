//! The arithmetic encoder, its adaptive models and the integer corrector coder of LASzip, ported from the
//! `laz` crate (encoders.rs, models.rs, compressors.rs) to give the same bytes.
//!
//! How it works: [`Enc`] keeps the coding interval (`base`, `length`) and appends finished bytes to a
//! plain `Vec<u8>` (a carry walks back over trailing 0xFF bytes). Its two data-dependent branches are
//! made branch-free in the common case: renormalizing always stores the 4 bytes of `base` and keeps as
//! many as `length` has leading zero bytes, and a carry adds to the last byte, walking further back only
//! when that byte wraps (1 carry in 256); these branches were a third of the time a symbol took. `laz`
//! writes through a 2 × 4 KiB ring buffer flushed half by half into an `io::Write`; carries only ever
//! touch bytes not yet flushed, so the bytes are the same. [`Model`] is LASzip's adaptive multi-symbol
//! model (only the encoder's cumulative distribution: no decoder table; its tables inline and 16-bit,
//! sized at compile time), [`BitModel`] its adaptive bit model, and [`IntCoder`] the `IntegerCompressor`
//! (the corrector's bit count `k` coded with one model per context, then the corrector's bits with one
//! model per `k`, the low bits of large ones raw). Models a coder may never use are made on first use:
//! a fresh model's state does not depend on when it was made.

/// Length bits discarded before the multiply of a multi-symbol model.
const DM_LENGTH_SHIFT: u32 = 15;
const DM_MAX_COUNT: u32 = 1 << DM_LENGTH_SHIFT;
/// Length bits discarded before the multiply of a bit model.
const BM_LENGTH_SHIFT: u32 = 13;
const BM_MAX_COUNT: u32 = 1 << BM_LENGTH_SHIFT;
const AC_MIN_LENGTH: u32 = 0x0100_0000;
const AC_MAX_LENGTH: u32 = 0xFFFF_FFFF;

/// One layer's arithmetic encoder.
pub(super) struct Enc {
    base: u32,
    length: u32,
    /// The bytes written so far are `buf[1..n]`; `buf[0]` takes a carry out of the first byte (none in a
    /// valid stream) so that a carry never needs a check for an empty stream, and `buf` is kept at least
    /// 4 bytes longer than `n` so that renormalizing can always store 4 bytes and keep as many as it needs.
    buf: Vec<u8>,
    n: usize,
}

impl Enc {
    pub fn new(capacity: usize) -> Enc {
        let mut buf = Vec::with_capacity(capacity.max(60) + 4);
        buf.resize(64, 0);
        Enc { base: 0, length: AC_MAX_LENGTH, buf, n: 1 }
    }

    /// The finished stream (after [`Enc::done`]).
    pub fn bytes(&self) -> &[u8] {
        &self.buf[1..self.n]
    }

    /// Carries into the bytes before the last one (the last one was 0xFF and became 0).
    #[cold]
    #[inline(never)]
    fn carry_on(&mut self) {
        for b in self.buf[..self.n - 1].iter_mut().rev() {
            if *b == 0xFF {
                *b = 0;
            } else {
                *b += 1;
                return;
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = (self.buf.len() * 2).max(self.buf.capacity());
        self.buf.resize(len, 0);
    }

    /// Writes out the top bytes of `base` while `length` is below 2^24 (LASzip's renormalization) without
    /// a branch on how many: the 4 bytes of `base` are stored and as many kept as `length` lacks (0-3,
    /// its leading zero bytes). Whether a symbol ends with 0, 1 or 2 bytes out is a coin toss for a
    /// branch predictor.
    #[inline(always)]
    fn renorm(&mut self) {
        let (base, length) = (self.base, self.length);
        let bytes = length.leading_zeros() / 8;
        if self.n + 4 > self.buf.len() {
            self.grow();
        }
        self.buf[self.n..self.n + 4].copy_from_slice(&base.to_be_bytes());
        self.n += bytes as usize;
        self.base = base << (8 * bytes);
        self.length = length << (8 * bytes);
    }

    /// Adds `x` to `base`, carrying, and renormalizes.
    #[inline(always)]
    fn add_base(&mut self, x: u32) {
        let (b, over) = self.base.overflowing_add(x);
        self.base = b;
        let last = &mut self.buf[self.n - 1];
        let (v, wrapped) = last.overflowing_add(over as u8);
        *last = v;
        if wrapped {
            self.carry_on();
        }
        self.renorm();
    }

    /// Ends the stream: the final interval bytes and the 2 or 3 zero bytes LASzip appends.
    pub fn done(&mut self) {
        let init_base = self.base;
        let another_byte = self.length > 2 * AC_MIN_LENGTH;
        if another_byte {
            self.base = self.base.wrapping_add(AC_MIN_LENGTH);
            self.length = AC_MIN_LENGTH >> 1;
        } else {
            self.base = self.base.wrapping_add(AC_MIN_LENGTH >> 1);
            self.length = AC_MIN_LENGTH >> 9;
        }
        if init_base > self.base {
            let last = &mut self.buf[self.n - 1];
            let (v, wrapped) = last.overflowing_add(1);
            *last = v;
            if wrapped {
                self.carry_on();
            }
        }
        self.renorm();
        let zeros = if another_byte { 3 } else { 2 };
        self.buf.truncate(self.n);
        self.buf.resize(self.n + zeros, 0);
        self.n += zeros;
    }

    #[inline(always)]
    pub fn encode_bit(&mut self, m: &mut BitModel, sym: u32) {
        let x = m.bit_0_prob * (self.length >> BM_LENGTH_SHIFT);
        if sym == 0 {
            self.length = x;
            m.bit_0_count += 1;
            self.renorm();
        } else {
            self.length -= x;
            self.add_base(x);
        }
        m.bits_until_update -= 1;
        if m.bits_until_update == 0 {
            m.update();
        }
    }

    #[inline(always)]
    pub fn encode_symbol<const N: usize>(&mut self, m: &mut Model<N>, sym: u32) {
        let x;
        if sym == m.last_symbol {
            x = u32::from(m.distribution[sym as usize]) * (self.length >> DM_LENGTH_SHIFT);
            self.length -= x;
        } else {
            self.length >>= DM_LENGTH_SHIFT;
            x = u32::from(m.distribution[sym as usize]) * self.length;
            self.length = u32::from(m.distribution[sym as usize + 1]) * self.length - x;
        }
        self.add_base(x);
        m.symbol_count[sym as usize] += 1;
        m.symbols_until_update -= 1;
        if m.symbols_until_update == 0 {
            m.update();
        }
    }

    /// `bits` raw bits of `sym` (LASzip's `writeBits`).
    #[inline]
    pub fn write_bits(&mut self, mut bits: u32, mut sym: u32) {
        if bits > 19 {
            self.write_short(sym as u16);
            sym >>= 16;
            bits -= 16;
        }
        self.length >>= bits;
        let x = sym.wrapping_mul(self.length);
        self.add_base(x);
    }

    #[inline]
    pub fn write_short(&mut self, sym: u16) {
        self.length >>= 16;
        let x = u32::from(sym).wrapping_mul(self.length);
        self.add_base(x);
    }

    #[inline]
    pub fn write_int(&mut self, sym: u32) {
        self.write_short(sym as u16);
        self.write_short((sym >> 16) as u16);
    }
}

/// LASzip's adaptive multi-symbol model (encoder side) of up to `N` symbols, its tables inline (one
/// pointer less to follow per symbol than boxed slices). The tables fit 16 bits: the distribution is at
/// most 2^15 and a count at most 2^15 plus an update cycle (the counts are halved past 2^15 in all).
#[derive(Clone)]
pub(super) struct Model<const N: usize = 256> {
    distribution: [u16; N],
    symbol_count: [u16; N],
    total_count: u32,
    update_cycle: u32,
    symbols_until_update: u32,
    last_symbol: u32,
}

impl<const N: usize> Model<N> {
    pub fn new(symbols: u32) -> Model<N> {
        assert!(symbols as usize <= N, "a model of {symbols} symbols in a table of {N}");
        let mut m = Model {
            distribution: [0; N],
            symbol_count: [1; N],
            total_count: 0,
            update_cycle: symbols,
            symbols_until_update: 0,
            last_symbol: symbols - 1,
        };
        m.update();
        m.symbols_until_update = (symbols + 6) >> 1;
        m.update_cycle = (symbols + 6) >> 1;
        m
    }

    #[inline(never)]
    fn update(&mut self) {
        let symbols = self.last_symbol as usize + 1;
        self.total_count += self.update_cycle;
        if self.total_count > DM_MAX_COUNT {
            self.total_count = 0;
            for c in self.symbol_count[..symbols].iter_mut() {
                *c = (*c + 1) >> 1;
                self.total_count += u32::from(*c);
            }
        }
        let scale = 0x8000_0000u32 / self.total_count;
        let mut sum = 0u32;
        for (d, c) in self.distribution[..symbols].iter_mut().zip(self.symbol_count[..symbols].iter()) {
            *d = (scale.wrapping_mul(sum) >> (31 - DM_LENGTH_SHIFT)) as u16;
            sum += u32::from(*c);
        }
        self.update_cycle = (5 * self.update_cycle) >> 2;
        let max_cycle = (self.last_symbol + 1 + 6) << 3;
        if self.update_cycle > max_cycle {
            self.update_cycle = max_cycle;
        }
        self.symbols_until_update = self.update_cycle;
    }
}

/// A model made on first use (the lazily filled model tables of Point14, RGB and extra bytes).
#[inline]
pub(super) fn model_at<const N: usize>(slot: &mut Option<Box<Model<N>>>, symbols: u32) -> &mut Model<N> {
    slot.get_or_insert_with(|| Box::new(Model::new(symbols)))
}

/// LASzip's adaptive bit model.
#[derive(Clone, Copy)]
pub(super) struct BitModel {
    bit_0_count: u32,
    bit_count: u32,
    bit_0_prob: u32,
    bits_until_update: u32,
    update_cycle: u32,
}

impl BitModel {
    pub fn new() -> BitModel {
        BitModel {
            bit_0_count: 1,
            bit_count: 2,
            bit_0_prob: 1 << (BM_LENGTH_SHIFT - 1),
            bits_until_update: 4,
            update_cycle: 4,
        }
    }

    fn update(&mut self) {
        self.bit_count += self.update_cycle;
        if self.bit_count > BM_MAX_COUNT {
            self.bit_count = (self.bit_count + 1) >> 1;
            self.bit_0_count = (self.bit_0_count + 1) >> 1;
            if self.bit_0_count == self.bit_count {
                self.bit_count += 1;
            }
        }
        let scale = 0x8000_0000u32 / self.bit_count;
        self.bit_0_prob = (self.bit_0_count * scale) >> (31 - BM_LENGTH_SHIFT);
        self.update_cycle = (5 * self.update_cycle) >> 2;
        if self.update_cycle > 64 {
            self.update_cycle = 64;
        }
        self.bits_until_update = self.update_cycle;
    }
}

/// LASzip's `IntegerCompressor` with `bits_high` 8 and no range: codes `real - pred` in a context.
pub(super) struct IntCoder {
    corr_range: u32,
    corr_min: i32,
    corr_max: i32,
    m_bits: Vec<Model<33>>,
    m_corrector_0: BitModel,
    m_corrector: Vec<Option<Box<Model>>>,
}

const BITS_HIGH: u32 = 8;

impl IntCoder {
    /// A coder for `bits`-bit values (1..=32) with `contexts` contexts.
    pub fn new(bits: u32, contexts: u32) -> IntCoder {
        let (corr_bits, corr_range, corr_min, corr_max) = if (1..32).contains(&bits) {
            let range = 1u32 << bits;
            let min = -((range / 2) as i32);
            (bits, range, min, min + (range - 1) as i32)
        } else {
            (32, 0, i32::MIN, i32::MAX)
        };
        IntCoder {
            corr_range,
            corr_min,
            corr_max,
            m_bits: (0..contexts).map(|_| Model::new(corr_bits + 1)).collect(),
            m_corrector_0: BitModel::new(),
            m_corrector: (0..corr_bits).map(|_| None).collect(),
        }
    }

    /// Codes `real` predicted by `pred` in `context`; returns the corrector's bit count `k`.
    #[inline]
    pub fn compress(&mut self, enc: &mut Enc, pred: i32, real: i32, context: u32) -> u32 {
        let mut c = real.wrapping_sub(pred);
        if c < self.corr_min {
            c = c.wrapping_add(self.corr_range as i32);
        } else if c > self.corr_max {
            c = c.wrapping_sub(self.corr_range as i32);
        }
        let c1 = if c <= 0 { c.wrapping_neg() as u32 } else { (c - 1) as u32 };
        let k = 32 - c1.leading_zeros();
        enc.encode_symbol(&mut self.m_bits[context as usize], k);
        if k != 0 {
            if k < 32 {
                if c >= 0 {
                    c -= 1;
                } else {
                    c = c.wrapping_add(((1u32 << k) - 1) as i32);
                }
                let symbols = 1u32 << k.min(BITS_HIGH);
                let m = model_at(&mut self.m_corrector[(k - 1) as usize], symbols);
                if k <= BITS_HIGH {
                    enc.encode_symbol(m, c as u32);
                } else {
                    let k1 = k - BITS_HIGH;
                    let low = (c & ((1u32 << k1) - 1) as i32) as u32;
                    c >>= k1;
                    enc.encode_symbol(m, c as u32);
                    enc.write_bits(k1, low);
                }
            }
        } else {
            enc.encode_bit(&mut self.m_corrector_0, c as u32);
        }
        k
    }
}
