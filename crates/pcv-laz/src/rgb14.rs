//! The layered RGB14 and NIR14 items, version 3 (LASzip's layered color and near-infrared
//! compression), decoded exactly as the `laz` crate's `las::rgb::v3` and `las::nir::v3` do.
//!
//! How it works: each item is one layer (its own arithmetic stream) with four contexts of models (the
//! scanner channel context that Point14 hands over) and a last value per context. RGB is coded as in
//! version 2 ([`decode_rgb`]); NIR as a 2-bit mask of its changed bytes, then their differences. An
//! empty (never changed) or unrequested layer is not decoded: the value stays the last one. The version
//! 3 quirk is kept: on a switch to a context already in use, the prediction still comes from (and is
//! stored into) the last value of the context before. This mirrors the in-tree encoder
//! (`encoder/rgb14.rs`).
use super::arith::{Decoder, Model};
use super::rgb::{decode_rgb, RgbModels};

/// The decoder state of one chunk's RGB14 item.
pub(crate) struct Rgb14<'a> {
    pub d: Decoder<'a>,
    on: bool,
    contexts: [Option<Box<RgbModels>>; 4],
    last: [[u16; 3]; 4],
    last_context_used: usize,
}

impl<'a> Rgb14<'a> {
    /// The state after a chunk's first point, whose color is `first`, in context `context`; `d` decodes
    /// the layer where `on`.
    pub fn new(first: &[u8; 6], context: usize, d: Decoder<'a>, on: bool) -> Self {
        let c = |k: usize| u16::from_le_bytes([first[2 * k], first[2 * k + 1]]);
        let mut me = Rgb14 { d, on, contexts: [None, None, None, None], last: [[0; 3]; 4], last_context_used: context };
        me.contexts[context] = Some(Box::new(RgbModels::new()));
        me.last[context] = [c(0), c(1), c(2)];
        me
    }

    /// Decodes the next point's color (in the context Point14 gave) into `out`.
    #[inline(always)]
    pub fn next(&mut self, context: usize, out: &mut [u8; 6]) {
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            self.last_context_used = context;
            if self.contexts[context].is_none() {
                self.contexts[context] = Some(Box::new(RgbModels::new()));
                self.last[context] = self.last[last_idx];
                last_idx = context;
            }
        }
        if self.on {
            if let Some(m) = self.contexts[context].as_deref_mut() {
                self.last[last_idx] = decode_rgb(&mut self.d, m, self.last[last_idx]);
            }
        }
        let [r, g, b] = self.last[last_idx];
        out[0..2].copy_from_slice(&r.to_le_bytes());
        out[2..4].copy_from_slice(&g.to_le_bytes());
        out[4..6].copy_from_slice(&b.to_le_bytes());
    }
}

/// The NIR models of one context.
struct NirModels {
    bytes_used: Model,
    lower: Model,
    upper: Model,
}

/// The decoder state of one chunk's NIR14 item.
pub(crate) struct Nir14<'a> {
    pub d: Decoder<'a>,
    on: bool,
    contexts: [Option<Box<NirModels>>; 4],
    last: [u16; 4],
    last_context_used: usize,
}

impl<'a> Nir14<'a> {
    /// The state after a chunk's first point, whose NIR is `first`, in context `context`; `d` decodes
    /// the layer where `on`.
    pub fn new(first: &[u8; 2], context: usize, d: Decoder<'a>, on: bool) -> Self {
        let mut me = Nir14 { d, on, contexts: [None, None, None, None], last: [0; 4], last_context_used: context };
        me.contexts[context] = Some(Box::new(NirModels::new()));
        me.last[context] = u16::from_le_bytes(*first);
        me
    }

    /// Decodes the next point's NIR (in the context Point14 gave) into `out`.
    #[inline(always)]
    pub fn next(&mut self, context: usize, out: &mut [u8; 2]) {
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            self.last_context_used = context;
            if self.contexts[context].is_none() {
                self.last[context] = self.last[last_idx];
                self.contexts[context] = Some(Box::new(NirModels::new()));
                last_idx = context;
            }
        }
        if self.on {
            if let Some(m) = self.contexts[context].as_deref_mut() {
                let last = self.last[last_idx];
                let sym = self.d.symbol(&mut m.bytes_used);
                let mut v = if sym & 1 != 0 {
                    (self.d.symbol(&mut m.lower) as u8).wrapping_add(last as u8) as u16
                } else {
                    last & 0x00FF
                };
                if sym & 2 != 0 {
                    v |= ((self.d.symbol(&mut m.upper) as u8).wrapping_add((last >> 8) as u8) as u16) << 8;
                } else {
                    v |= last & 0xFF00;
                }
                self.last[last_idx] = v;
            }
        }
        *out = self.last[last_idx].to_le_bytes();
    }
}

impl NirModels {
    fn new() -> NirModels {
        NirModels { bytes_used: Model::new(4), lower: Model::new(256), upper: Model::new(256) }
    }
}
