//! The layered Byte14 item, version 3 (LASzip's layered compression of a record's extra bytes),
//! decoded exactly as the `laz` crate's `las::extra_bytes::v3` does.
//!
//! How it works: every extra byte is its own layer, coded as the byte difference to the last value of
//! that byte, with a model per byte and scanner-channel context. An empty (never changed) or unrequested
//! layer is not decoded: the byte stays the last one. The version 3 quirk is kept as in RGB14: on a
//! switch to a context already in use the prediction still comes from (and is stored into) the last
//! bytes of the context before. This mirrors the in-tree encoder (`encoder/bytes14.rs`).
use super::arith::{Decoder, Model};

/// The decoder state of one chunk's Byte14 item.
pub(crate) struct Bytes14<'a> {
    /// One decoder per byte, and whether it is decoded.
    pub d: Vec<(Decoder<'a>, bool)>,
    /// One model per byte, per context (made when the context is first used).
    contexts: [Option<Vec<Model>>; 4],
    last: [Vec<u8>; 4],
    last_context_used: usize,
}

impl<'a> Bytes14<'a> {
    /// The state after a chunk's first point, whose extra bytes are `first`, in context `context`.
    pub fn new(first: &[u8], context: usize, d: Vec<(Decoder<'a>, bool)>) -> Self {
        let n = first.len();
        let mut me = Bytes14 {
            d,
            contexts: [None, None, None, None],
            last: [vec![0; n], vec![0; n], vec![0; n], vec![0; n]],
            last_context_used: context,
        };
        me.contexts[context] = Some(vec![Model::new(256); n]);
        me.last[context].copy_from_slice(first);
        me
    }

    /// Decodes the next point's extra bytes (in the context Point14 gave) into `out` (as long as the
    /// first point's).
    #[inline(always)]
    pub fn next(&mut self, context: usize, out: &mut [u8]) {
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            self.last_context_used = context;
            if self.contexts[context].is_none() {
                self.contexts[context] = Some(vec![Model::new(256); out.len()]);
                self.last[context] = self.last[last_idx].clone();
                last_idx = context;
            }
        }
        let last = &mut self.last[last_idx];
        if let Some(models) = self.contexts[context].as_mut() {
            for ((b, m), (d, on)) in last.iter_mut().zip(models.iter_mut()).zip(self.d.iter_mut()) {
                if *on {
                    *b = b.wrapping_add(d.symbol(m) as u8);
                }
            }
        }
        out.copy_from_slice(last);
    }
}
