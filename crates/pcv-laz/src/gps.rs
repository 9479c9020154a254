//! The GpsTime item, version 2 (LASzip's point-wise GPS time compression), decoded exactly as the `laz`
//! crate's `las::gps::v2` does.
//!
//! How it works: up to 4 GPS time sequences are tracked (a flight line's points interleave a few);
//! each has its last time and last difference. A symbol says whether the time repeats, is the last
//! difference times a small multiple (coded as a correction), is a new full time (its high 32 bits
//! predicted, its low 32 bits raw), or switches to another sequence. The `laz` crate handles a switch
//! by recursing; here it is a loop (a damaged chunk cannot run the stack out).
use super::arith::{Decoder, IntDecoder, Model};

const MULTI: i32 = 500;
const MULTI_MINUS: i32 = -10;
const MULTI_UNCHANGED: i32 = MULTI - MULTI_MINUS + 1;
const MULTI_CODE_FULL: i32 = MULTI - MULTI_MINUS + 2;
const MULTI_TOTAL: i32 = MULTI - MULTI_MINUS + 6;

/// The decoder state of one chunk's GpsTime item.
pub(crate) struct GpsTime {
    multi: Model<u16>,
    zero_diff: Model,
    ic: IntDecoder<32, 9>,
    last: usize,
    next: usize,
    times: [i64; 4],
    diffs: [i32; 4],
    extremes: [i32; 4],
}

impl GpsTime {
    /// The state after a chunk's first point, whose time is stored raw as `first`.
    pub fn new(first: &[u8; 8]) -> Self {
        GpsTime {
            multi: Model::new(MULTI_TOTAL as u32),
            zero_diff: Model::new(6),
            ic: IntDecoder::new(),
            last: 0,
            next: 0,
            times: [i64::from_le_bytes(*first), 0, 0, 0],
            diffs: [0; 4],
            extremes: [0; 4],
        }
    }

    /// After an extreme multiple, the 4th in a row becomes the sequence's new difference.
    #[inline(always)]
    fn extreme(&mut self, diff: i32) {
        let last = self.last & 3;
        self.extremes[last] += 1;
        if self.extremes[last] > 3 {
            self.diffs[last] = diff;
            self.extremes[last] = 0;
        }
    }

    /// A new full time in the next sequence slot (rare: not inlined).
    #[inline(never)]
    fn full(&mut self, d: &mut Decoder) {
        self.next = (self.next + 1) & 3;
        let high = self.ic.decode(d, (self.times[self.last] >> 32) as i32, 8);
        self.times[self.next] = ((high as i64) << 32) | d.int() as i64;
        self.last = self.next;
        self.diffs[self.last] = 0;
        self.extremes[self.last] = 0;
    }

    /// Decodes the next point's time into `out`.
    #[inline(always)]
    pub fn next(&mut self, d: &mut Decoder, out: &mut [u8; 8]) {
        loop {
            // `last` < 4 always: the mask only spares the bounds checks.
            let last = self.last & 3;
            if self.diffs[last] == 0 {
                let multi = d.symbol(&mut self.zero_diff) as i32;
                if multi == 1 {
                    self.diffs[last] = self.ic.decode(d, 0, 0);
                    self.times[last] = self.times[last].wrapping_add(self.diffs[last] as i64);
                    self.extremes[last] = 0;
                } else if multi == 2 {
                    self.full(d);
                } else if multi > 2 && !d.bad {
                    self.last = (last + multi as usize - 2) & 3;
                    continue;
                }
            } else {
                let mut multi = d.symbol(&mut self.multi) as i32;
                if multi == 1 {
                    let diff = self.ic.decode(d, self.diffs[last], 1);
                    self.times[last] = self.times[last].wrapping_add(diff as i64);
                    self.extremes[last] = 0;
                } else if multi < MULTI_UNCHANGED {
                    // One decode for every multiple (one copy of the inlined decoder, not five).
                    let base = self.diffs[last];
                    let (pred, context, extreme) = if multi == 0 {
                        (0, 7, true)
                    } else if multi < MULTI {
                        (multi.wrapping_mul(base), if multi < 10 { 2 } else { 3 }, false)
                    } else if multi == MULTI {
                        (multi.wrapping_mul(base), 4, true)
                    } else {
                        multi = MULTI - multi;
                        if multi > MULTI_MINUS {
                            (multi.wrapping_mul(base), 5, false)
                        } else {
                            (MULTI_MINUS.wrapping_mul(base), 6, true)
                        }
                    };
                    let diff = self.ic.decode(d, pred, context);
                    if extreme {
                        self.extreme(diff);
                    }
                    self.times[last] = self.times[last].wrapping_add(diff as i64);
                } else if multi == MULTI_CODE_FULL {
                    self.full(d);
                } else if multi > MULTI_CODE_FULL && !d.bad {
                    self.last = (last + (multi - MULTI_CODE_FULL) as usize) & 3;
                    continue;
                }
            }
            break;
        }
        *out = self.times[self.last & 3].to_le_bytes();
    }
}
