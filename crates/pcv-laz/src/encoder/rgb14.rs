//! The layered RGB14 and NIR14 items (LASzip version 3) of a chunk, ported from the `laz` crate's
//! `las::rgb::v3_v4` and `las::nir::v3_v4` compressors to give the same bytes.
//!
//! How it works: both items keep four contexts (the scanner channel that Point14 hands over) of models
//! and a last value per context. RGB codes which colour bytes changed (a 7-bit mask), then the changed
//! bytes: red as a byte difference, green and blue predicted from red's difference; NIR codes which of
//! its two bytes changed, then their differences. Each item is one layer, left out when it never
//! changed. The version 3 quirk is kept: on a switch to a context already in use the prediction still
//! comes from (and is stored into) the last value of the context before.
use super::arith::{model_at, Enc, Model};

/// The RGB models of one context.
struct RgbModels {
    byte_used: Model<128>,
    bytes: [Option<Box<Model>>; 6],
}

impl RgbModels {
    fn new() -> RgbModels {
        RgbModels { byte_used: Model::new(128), bytes: Default::default() }
    }
}

#[inline(always)]
fn rgb_of(r: &[u8]) -> [u16; 3] {
    [u16::from_le_bytes([r[0], r[1]]), u16::from_le_bytes([r[2], r[3]]), u16::from_le_bytes([r[4], r[5]])]
}

#[inline(always)]
fn clamp_u8(n: i32) -> i32 {
    n.clamp(0, 255)
}

/// The RGB14 coder of one chunk.
pub(super) struct Rgb14 {
    enc: Enc,
    changed: bool,
    contexts: [Option<Box<RgbModels>>; 4],
    last: [Option<[u16; 3]>; 4],
    last_context_used: usize,
}

impl Rgb14 {
    pub fn new(first: &[u8], context: usize, points: usize) -> Rgb14 {
        let mut me = Rgb14 {
            enc: Enc::new(points * 2),
            changed: false,
            contexts: [None, None, None, None],
            last: [None; 4],
            last_context_used: context,
        };
        me.contexts[context] = Some(Box::new(RgbModels::new()));
        me.last[context] = Some(rgb_of(first));
        me
    }

    #[inline]
    pub fn encode(&mut self, rec: &[u8], context: usize) {
        let cur = rgb_of(rec);
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            if self.contexts[context].is_none() {
                self.contexts[context] = Some(Box::new(RgbModels::new()));
                self.last[context] = self.last[last_idx];
                last_idx = context;
            }
            self.last_context_used = context;
        }
        let last = self.last[last_idx].unwrap_or_default();
        self.changed |= last != cur;
        let models = self.contexts[context].as_deref_mut().expect("the context was made above");
        encode_rgb(&mut self.enc, models, cur, last);
        self.last[last_idx] = Some(cur);
    }

    /// Appends the layer's size to `sizes` and the layer to `layers`.
    pub fn finish(mut self, sizes: &mut Vec<u8>, layers: &mut Vec<u8>) {
        finish_layer(&mut self.enc, self.changed, sizes, layers);
    }
}

/// LASzip's RGB version 2 coding of `cur` against `last`.
#[inline]
fn encode_rgb(e: &mut Enc, m: &mut RgbModels, cur: [u16; 3], last: [u16; 3]) {
    let lo = |v: u16| i32::from(v as u8);
    let hi = |v: u16| i32::from(v >> 8);
    let [r, g, b] = cur;
    let [lr, lg, lb] = last;
    let sym = ((lr ^ r) & 0x00FF != 0) as u32
        | (((lr ^ r) & 0xFF00 != 0) as u32) << 1
        | (((lg ^ g) & 0x00FF != 0) as u32) << 2
        | (((lg ^ g) & 0xFF00 != 0) as u32) << 3
        | (((lb ^ b) & 0x00FF != 0) as u32) << 4
        | (((lb ^ b) & 0xFF00 != 0) as u32) << 5
        | (((r ^ g) & 0x00FF != 0 || (r ^ b) & 0x00FF != 0 || (r ^ g) & 0xFF00 != 0 || (r ^ b) & 0xFF00 != 0) as u32)
            << 6;
    e.encode_symbol(&mut m.byte_used, sym);
    let mut diff_l = 0i32;
    let mut diff_h = 0i32;
    if sym & 1 != 0 {
        diff_l = lo(r) - lo(lr);
        e.encode_symbol(model_at(&mut m.bytes[0], 256), u32::from(diff_l as u8));
    }
    if sym & 2 != 0 {
        diff_h = hi(r) - hi(lr);
        e.encode_symbol(model_at(&mut m.bytes[1], 256), u32::from(diff_h as u8));
    }
    if sym & (1 << 6) != 0 {
        if sym & (1 << 2) != 0 {
            let corr = lo(g) - clamp_u8(diff_l + lo(lg));
            e.encode_symbol(model_at(&mut m.bytes[2], 256), u32::from(corr as u8));
        }
        if sym & (1 << 4) != 0 {
            diff_l = (diff_l + lo(g) - lo(lg)) / 2;
            let corr = lo(b) - clamp_u8(diff_l + lo(lb));
            e.encode_symbol(model_at(&mut m.bytes[4], 256), u32::from(corr as u8));
        }
        if sym & (1 << 3) != 0 {
            let corr = hi(g) - clamp_u8(diff_h + hi(lg));
            e.encode_symbol(model_at(&mut m.bytes[3], 256), u32::from(corr as u8));
        }
        if sym & (1 << 5) != 0 {
            diff_h = (diff_h + hi(g) - hi(lg)) / 2;
            let corr = hi(b) - clamp_u8(diff_h + hi(lb));
            e.encode_symbol(model_at(&mut m.bytes[5], 256), u32::from(corr as u8));
        }
    }
}

/// The NIR models of one context.
struct NirModels {
    bytes_used: Model<4>,
    lower: Model,
    upper: Model,
}

/// The NIR14 coder of one chunk.
pub(super) struct Nir14 {
    enc: Enc,
    changed: bool,
    contexts: [Option<Box<NirModels>>; 4],
    last: [u16; 4],
    last_context_used: usize,
}

impl Nir14 {
    pub fn new(first: &[u8], context: usize, points: usize) -> Nir14 {
        let mut me = Nir14 {
            enc: Enc::new(points),
            changed: false,
            contexts: [None, None, None, None],
            last: [0; 4],
            last_context_used: context,
        };
        me.contexts[context] = Some(Box::new(NirModels::new()));
        me.last[context] = u16::from_le_bytes([first[0], first[1]]);
        me
    }

    #[inline]
    pub fn encode(&mut self, rec: &[u8], context: usize) {
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            self.last_context_used = context;
            if self.contexts[context].is_none() {
                self.last[context] = self.last[last_idx];
                self.contexts[context] = Some(Box::new(NirModels::new()));
                last_idx = context;
            }
        }
        let m = self.contexts[context].as_deref_mut().expect("the context was made above");
        let last = self.last[last_idx];
        let cur = u16::from_le_bytes([rec[0], rec[1]]);
        self.changed |= cur != last;
        let sym = ((cur ^ last) & 0x00FF != 0) as u32 | (((cur ^ last) & 0xFF00 != 0) as u32) << 1;
        self.enc.encode_symbol(&mut m.bytes_used, sym);
        if sym & 1 != 0 {
            self.enc.encode_symbol(&mut m.lower, u32::from((cur as u8).wrapping_sub(last as u8)));
        }
        if sym & 2 != 0 {
            self.enc.encode_symbol(&mut m.upper, u32::from(((cur >> 8) as u8).wrapping_sub((last >> 8) as u8)));
        }
        self.last[last_idx] = cur;
    }

    /// Appends the layer's size to `sizes` and the layer to `layers`.
    pub fn finish(mut self, sizes: &mut Vec<u8>, layers: &mut Vec<u8>) {
        finish_layer(&mut self.enc, self.changed, sizes, layers);
    }
}

impl NirModels {
    fn new() -> NirModels {
        NirModels { bytes_used: Model::new(4), lower: Model::new(256), upper: Model::new(256) }
    }
}

/// Ends a layer that is written only if its values changed: its size (0 if not) and its bytes.
pub(super) fn finish_layer(e: &mut Enc, changed: bool, sizes: &mut Vec<u8>, layers: &mut Vec<u8>) {
    if changed {
        e.done();
        sizes.extend_from_slice(&(e.bytes().len() as u32).to_le_bytes());
        layers.extend_from_slice(e.bytes());
    } else {
        sizes.extend_from_slice(&0u32.to_le_bytes());
    }
}
