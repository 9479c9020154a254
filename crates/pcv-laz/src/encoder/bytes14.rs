//! The layered Byte14 item (LASzip version 3: a record's extra bytes) of a chunk, ported from the `laz`
//! crate's `las::extra_bytes::v3_v4` compressor to give the same bytes.
//!
//! How it works: every extra byte is its own layer, coded as the byte difference to the last value of
//! that byte with one model per byte and scanner-channel context; a layer whose byte never changed is
//! left out (size 0). The version 3 quirk is kept as in RGB14: on a switch to a context already in use
//! the prediction still comes from (and is stored into) the last bytes of the context before.
use super::arith::{Enc, Model};
use super::rgb14::finish_layer;

/// The Byte14 coder of one chunk.
pub(super) struct Bytes14 {
    enc: Vec<Enc>,
    changed: Vec<bool>,
    /// One model per byte, per context (made when the context is first used).
    contexts: [Option<Vec<Model>>; 4],
    last: [Vec<u8>; 4],
    last_context_used: usize,
}

impl Bytes14 {
    pub fn new(first: &[u8], context: usize, points: usize) -> Bytes14 {
        let n = first.len();
        let mut me = Bytes14 {
            enc: (0..n).map(|_| Enc::new(points / 2)).collect(),
            changed: vec![false; n],
            contexts: [None, None, None, None],
            last: [vec![0; n], vec![0; n], vec![0; n], vec![0; n]],
            last_context_used: context,
        };
        me.contexts[context] = Some((0..n).map(|_| Model::new(256)).collect());
        me.last[context].copy_from_slice(first);
        me
    }

    #[inline]
    pub fn encode(&mut self, rec: &[u8], context: usize) {
        let mut last_idx = self.last_context_used;
        if self.last_context_used != context {
            self.last_context_used = context;
            if self.contexts[context].is_none() {
                self.contexts[context] = Some((0..rec.len()).map(|_| Model::new(256)).collect());
                let from = self.last[last_idx].clone();
                self.last[context].copy_from_slice(&from);
                last_idx = context;
            }
        }
        let models = self.contexts[context].as_mut().expect("the context was made above");
        let last = &mut self.last[last_idx];
        for (i, (&b, m)) in rec.iter().zip(models.iter_mut()).enumerate() {
            let diff = b.wrapping_sub(last[i]);
            self.enc[i].encode_symbol(m, u32::from(diff));
            if diff != 0 {
                self.changed[i] = true;
                last[i] = b;
            }
        }
    }

    /// Appends the layers' sizes to `sizes` and the layers to `layers`.
    pub fn finish(mut self, sizes: &mut Vec<u8>, layers: &mut Vec<u8>) {
        for (e, &changed) in self.enc.iter_mut().zip(&self.changed) {
            finish_layer(e, changed, sizes, layers);
        }
    }
}
