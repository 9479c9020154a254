//! The RGB12 item, version 2, and the Byte (extra bytes) item, version 2: LASzip's point-wise color
//! and extra-byte compression, decoded exactly as the `laz` crate's `las::rgb::v2` and
//! `las::extra_bytes::v1` (which its version 2 uses) do.
//!
//! How it works (RGB): a 7-bit symbol says which of the six color bytes changed and whether green and
//! blue differ from red; each changed byte is a correction of a prediction (red: its last value; green
//! and blue: their last value moved by red's change, clamped to a byte). Extra bytes: each byte is its
//! last value plus a symbol of that byte's model.
//! The predictions are clamped to a byte by a table of 768 entries (one load) instead of compares.
use super::arith::{Decoder, Model};

/// The models of LASzip's RGB coding (version 2, and version 3 per scanner channel context).
pub(crate) struct RgbModels {
    byte_used: Model,
    /// Low and high byte models of red, green and blue.
    bytes: [Model; 6],
}

impl RgbModels {
    pub fn new() -> Self {
        RgbModels { byte_used: Model::new(128), bytes: std::array::from_fn(|_| Model::new(256)) }
    }
}

/// The decoder state of one chunk's RGB12 item.
pub(crate) struct Rgb {
    last: [u16; 3],
    models: RgbModels,
}

/// `CLAMP_U8[v + 256]` is `v` clamped to a byte, for `v` in -256..512.
static CLAMP_U8: [u8; 768] = {
    let mut t = [0u8; 768];
    let mut i = 0;
    while i < 768 {
        t[i] = if i < 256 {
            0
        } else if i < 512 {
            (i - 256) as u8
        } else {
            255
        };
        i += 1;
    }
    t
};

/// A prediction clamped to a byte: `v` is a byte plus a difference of two bytes (or half the sum of
/// two such differences), so in -255..=510, and one table load replaces the two compares and moves.
#[inline(always)]
fn clamp_u8(v: i32) -> u8 {
    debug_assert!((-256..512).contains(&v));
    // SAFETY: every caller's `v` is a byte plus a value in -255..=255 (above): `v + 256` is in 1..=766.
    unsafe { *CLAMP_U8.get_unchecked((v + 256) as usize) }
}

/// Decodes a color against the last one, `last` (LASzip's version 2 coding, also version 3's).
#[inline(always)]
pub(crate) fn decode_rgb(d: &mut Decoder, m: &mut RgbModels, last: [u16; 3]) -> [u16; 3] {
    let sym = d.symbol(&mut m.byte_used);
    let [lr, lg, lb] = last;
    let lo = |v: u16| (v & 0xFF) as u8;
    let hi = |v: u16| (v >> 8) as u8;
    let mut r = if sym & 1 != 0 { (d.symbol(&mut m.bytes[0]) as u8).wrapping_add(lo(lr)) as u16 } else { lr & 0xFF };
    if sym & 2 != 0 {
        r |= ((d.symbol(&mut m.bytes[1]) as u8).wrapping_add(hi(lr)) as u16) << 8;
    } else {
        r |= lr & 0xFF00;
    }
    if sym & (1 << 6) == 0 {
        return [r, r, r];
    }
    let mut diff = lo(r) as i32 - lo(lr) as i32;
    let mut g = if sym & (1 << 2) != 0 {
        (d.symbol(&mut m.bytes[2]) as u8).wrapping_add(clamp_u8(diff + lo(lg) as i32)) as u16
    } else {
        lg & 0xFF
    };
    let mut b = if sym & (1 << 4) != 0 {
        let c = d.symbol(&mut m.bytes[4]) as u8;
        diff = (diff + lo(g) as i32 - lo(lg) as i32) / 2;
        c.wrapping_add(clamp_u8(diff + lo(lb) as i32)) as u16
    } else {
        lb & 0xFF
    };
    let mut diff = hi(r) as i32 - hi(lr) as i32;
    if sym & (1 << 3) != 0 {
        g |= ((d.symbol(&mut m.bytes[3]) as u8).wrapping_add(clamp_u8(diff + hi(lg) as i32)) as u16) << 8;
    } else {
        g |= lg & 0xFF00;
    }
    if sym & (1 << 5) != 0 {
        let c = d.symbol(&mut m.bytes[5]) as u8;
        diff = (diff + hi(g) as i32 - hi(lg) as i32) / 2;
        b |= (c.wrapping_add(clamp_u8(diff + hi(lb) as i32)) as u16) << 8;
    } else {
        b |= lb & 0xFF00;
    }
    [r, g, b]
}

impl Rgb {
    /// The state after a chunk's first point, whose color is stored raw as `first`.
    pub fn new(first: &[u8; 6]) -> Self {
        let c = |k: usize| u16::from_le_bytes([first[2 * k], first[2 * k + 1]]);
        Rgb { last: [c(0), c(1), c(2)], models: RgbModels::new() }
    }

    /// Decodes the next point's color into `out`.
    #[inline(always)]
    pub fn next(&mut self, d: &mut Decoder, out: &mut [u8; 6]) {
        let [r, g, b] = decode_rgb(d, &mut self.models, self.last);
        self.last = [r, g, b];
        out[0..2].copy_from_slice(&r.to_le_bytes());
        out[2..4].copy_from_slice(&g.to_le_bytes());
        out[4..6].copy_from_slice(&b.to_le_bytes());
    }
}

/// The decoder state of one chunk's Byte item (extra bytes).
pub(crate) struct ExtraBytes {
    last: Vec<u8>,
    models: Vec<Model>,
}

impl ExtraBytes {
    /// The state after a chunk's first point, whose extra bytes are stored raw as `first`.
    pub fn new(first: &[u8]) -> Self {
        ExtraBytes { last: first.to_vec(), models: vec![Model::new(256); first.len()] }
    }

    /// Decodes the next point's extra bytes into `out` (as long as the first point's).
    #[inline(always)]
    pub fn next(&mut self, d: &mut Decoder, out: &mut [u8]) {
        for ((last, m), o) in self.last.iter_mut().zip(self.models.iter_mut()).zip(out.iter_mut()) {
            *last = last.wrapping_add(d.symbol(m) as u8);
            *o = *last;
        }
    }
}

#[cfg(test)]
mod tests {
    /// The clamp table gives `clamp(0, 255)` over its whole range (the predictions' -255..=510 and the ends).
    #[test]
    fn clamp_table_matches_clamp() {
        for v in -256..512 {
            assert_eq!(super::clamp_u8(v), v.clamp(0, 255) as u8, "v = {v}");
        }
    }
}
