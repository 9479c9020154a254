//! The layered Point14 item, version 3 (LASzip's compression of the 30 bytes of a LAS 1.4 point format
//! 6–10 record in nine layers), decoded exactly as the `laz` crate's `las::point6::v3` does.
//!
//! How it works: each layer is its own arithmetic-coded stream ([`Decoder`]): XY (with the change mask,
//! scanner channel and returns), Z, classification, flags, intensity, scan angle, user data, point
//! source and GPS time. A point is decoded field by field across the layers, so the symbol chains of
//! different layers are independent and the out-of-order core overlaps them (a point-wise chunk has one
//! chain for everything). The scanner channel (0–3) selects one of four contexts, each with its own
//! models, integer decoders, last point and GPS time sequences; a context is made when its channel first
//! appears, from the last point of the channel before it. A layer that is empty (its values never
//! changed) or not requested is not decoded: its fields keep their last values, as in `laz`. The
//! version 3 quirk is kept: the context handed to the items after Point14 is the new channel at a
//! change of channel, else 0. This mirrors the in-tree encoder (`encoder/point14.rs`).
use super::arith::{Decoder, IntDecoder, Model};
use super::point10::Median5;

/// LASzip's GPS time multiplier coding (version 3: no "unchanged" code).
const GPS_MULTI: i32 = 500;
const GPS_MULTI_MINUS: i32 = -10;
const GPS_MULTI_CODE_FULL: i32 = GPS_MULTI - GPS_MULTI_MINUS + 1;
const GPS_MULTI_TOTAL: i32 = GPS_MULTI - GPS_MULTI_MINUS + 5;

/// The nine layers of Point14, in their order in the chunk.
pub(crate) const LAYERS: usize = 9;
const XY: usize = 0;
const Z: usize = 1;
const CLASSIFICATION: usize = 2;
const FLAGS: usize = 3;
const INTENSITY: usize = 4;
const SCAN_ANGLE: usize = 5;
const USER_DATA: usize = 6;
const POINT_SOURCE: usize = 7;
const GPS_TIME: usize = 8;

/// A Point14 record's fields as the coding sees them (LAS 1.4 layout).
#[derive(Clone, Copy, Default)]
struct P14 {
    x: i32,
    y: i32,
    z: i32,
    intensity: u16,
    /// Return number (bits 0–3) and number of returns (bits 4–7).
    returns: u8,
    /// Classification flags (0–3), scanner channel (4–5), scan direction (6), edge of flight line (7).
    flags: u8,
    classification: u8,
    user_data: u8,
    scan_angle: i16,
    source_id: u16,
    gps_bits: i64,
    /// Whether the GPS time changed at this point (against the last point of its channel).
    gps_time_change: bool,
}

impl P14 {
    fn parse(r: &[u8; 30]) -> P14 {
        let i32_at = |o: usize| i32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]]);
        let u16_at = |o: usize| u16::from_le_bytes([r[o], r[o + 1]]);
        P14 {
            x: i32_at(0),
            y: i32_at(4),
            z: i32_at(8),
            intensity: u16_at(12),
            returns: r[14],
            flags: r[15],
            classification: r[16],
            user_data: r[17],
            scan_angle: u16_at(18) as i16,
            source_id: u16_at(20),
            gps_bits: i64::from_le_bytes([r[22], r[23], r[24], r[25], r[26], r[27], r[28], r[29]]),
            gps_time_change: false,
        }
    }

    #[inline(always)]
    fn write(&self, out: &mut [u8; 30]) {
        out[0..4].copy_from_slice(&self.x.to_le_bytes());
        out[4..8].copy_from_slice(&self.y.to_le_bytes());
        out[8..12].copy_from_slice(&self.z.to_le_bytes());
        out[12..14].copy_from_slice(&self.intensity.to_le_bytes());
        out[14] = self.returns;
        out[15] = self.flags;
        out[16] = self.classification;
        out[17] = self.user_data;
        out[18..20].copy_from_slice(&self.scan_angle.to_le_bytes());
        out[20..22].copy_from_slice(&self.source_id.to_le_bytes());
        out[22..30].copy_from_slice(&self.gps_bits.to_le_bytes());
    }

    #[inline(always)]
    fn return_number(&self) -> u8 {
        self.returns & 15
    }

    #[inline(always)]
    fn number_of_returns(&self) -> u8 {
        self.returns >> 4
    }

    /// Classification flags, scan direction (bit 4) and edge of flight line (bit 5).
    #[inline(always)]
    fn coded_flags(&self) -> u8 {
        (self.flags & 0x0F) | ((self.flags >> 2) & 0x30)
    }

    /// Single (3) / first (1) / last (2) / intermediate (0) return, + 4 if the GPS time changed.
    #[inline(always)]
    fn last_point_return(&self) -> usize {
        let r = self.return_number();
        (r == 1) as usize + 2 * (r >= self.number_of_returns()) as usize + 4 * self.gps_time_change as usize
    }
}

/// A model made on first use (most of the 64-entry model arrays never are).
#[inline(always)]
fn model_at(slot: &mut Option<Box<Model>>, symbols: u32) -> &mut Model {
    slot.get_or_insert_with(|| Box::new(Model::new(symbols)))
}

/// One scanner channel's models, integer decoders and history; `last` is the channel's current point.
struct Context {
    last: P14,
    changed_values: [Model; 8],
    scanner_channel: Model,
    number_of_returns: [Option<Box<Model>>; 16],
    return_number: [Option<Box<Model>>; 16],
    return_number_gps_same: Model,
    classification: Vec<Option<Box<Model>>>,
    flags: Vec<Option<Box<Model>>>,
    user_data: Vec<Option<Box<Model>>>,
    gps_time_multi: Model<u16>,
    gps_time_no_diff: Model,
    dx: IntDecoder<32, 2>,
    dy: IntDecoder<32, 22>,
    z: IntDecoder<32, 20>,
    intensity: IntDecoder<16, 4>,
    scan_angle: IntDecoder<16, 2>,
    source_id: IntDecoder<16, 1>,
    gps_time: IntDecoder<32, 9>,
    last_intensities: [u16; 8],
    last_x_diff_median5: [Median5; 12],
    last_y_diff_median5: [Median5; 12],
    last_z: [i32; 8],
    gps_last: usize,
    gps_next: usize,
    last_gps_times: [i64; 4],
    last_gps_diffs: [i32; 4],
    multi_extreme_counter: [i32; 4],
}

impl Context {
    /// A fresh context whose history starts at `last` (its GPS time change flag cleared, as in `laz`).
    fn new(last: &P14) -> Box<Context> {
        Box::new(Context {
            last: P14 { gps_time_change: false, ..*last },
            changed_values: std::array::from_fn(|_| Model::new(128)),
            scanner_channel: Model::new(3),
            number_of_returns: Default::default(),
            return_number: Default::default(),
            return_number_gps_same: Model::new(13),
            classification: (0..64).map(|_| None).collect(),
            flags: (0..64).map(|_| None).collect(),
            user_data: (0..64).map(|_| None).collect(),
            gps_time_multi: Model::new(GPS_MULTI_TOTAL as u32),
            gps_time_no_diff: Model::new(5),
            dx: IntDecoder::new(),
            dy: IntDecoder::new(),
            z: IntDecoder::new(),
            intensity: IntDecoder::new(),
            scan_angle: IntDecoder::new(),
            source_id: IntDecoder::new(),
            gps_time: IntDecoder::new(),
            last_intensities: [last.intensity; 8],
            last_x_diff_median5: [Median5::NEW; 12],
            last_y_diff_median5: [Median5::NEW; 12],
            last_z: [last.z; 8],
            gps_last: 0,
            gps_next: 0,
            last_gps_times: [last.gps_bits, 0, 0, 0],
            last_gps_diffs: [0; 4],
            multi_extreme_counter: [0; 4],
        })
    }

    /// After an extreme multiple, the 4th in a row becomes the sequence's new difference.
    #[inline(always)]
    fn extreme(&mut self, diff: i32) {
        let last = self.gps_last;
        self.multi_extreme_counter[last] += 1;
        if self.multi_extreme_counter[last] > 3 {
            self.last_gps_diffs[last] = diff;
            self.multi_extreme_counter[last] = 0;
        }
    }

    /// A new full time in the next sequence slot (rare: not inlined).
    #[inline(never)]
    fn full_gps_time(&mut self, d: &mut Decoder) {
        self.gps_next = (self.gps_next + 1) & 3;
        let high = self.gps_time.decode(d, (self.last_gps_times[self.gps_last] >> 32) as i32, 8);
        self.last_gps_times[self.gps_next] = ((high as i64) << 32) | d.int() as i64;
        self.gps_last = self.gps_next;
        self.last_gps_diffs[self.gps_last] = 0;
        self.multi_extreme_counter[self.gps_last] = 0;
    }

    /// Decodes a GPS time that changed (LASzip's `read_gps_time`; a switch of sequence loops instead of
    /// recursing, so that a damaged layer cannot run the stack out).
    #[inline(always)]
    fn gps_time(&mut self, d: &mut Decoder) {
        loop {
            let last = self.gps_last;
            if self.last_gps_diffs[last] == 0 {
                let multi = d.symbol(&mut self.gps_time_no_diff) as i32;
                if multi == 0 {
                    self.last_gps_diffs[last] = self.gps_time.decode(d, 0, 0);
                    self.last_gps_times[last] =
                        self.last_gps_times[last].wrapping_add(self.last_gps_diffs[last] as i64);
                    self.multi_extreme_counter[last] = 0;
                } else if multi == 1 {
                    self.full_gps_time(d);
                } else if !d.bad {
                    self.gps_last = (last + multi as usize - 1) & 3;
                    continue;
                }
            } else {
                let mut multi = d.symbol(&mut self.gps_time_multi) as i32;
                if multi == 1 {
                    let diff = self.gps_time.decode(d, self.last_gps_diffs[last], 1);
                    self.last_gps_times[last] = self.last_gps_times[last].wrapping_add(diff as i64);
                    self.multi_extreme_counter[last] = 0;
                } else if multi < GPS_MULTI_CODE_FULL {
                    let base = self.last_gps_diffs[last];
                    let (pred, context, extreme) = if multi == 0 {
                        (0, 7, true)
                    } else if multi < GPS_MULTI {
                        (multi.wrapping_mul(base), if multi < 10 { 2 } else { 3 }, false)
                    } else if multi == GPS_MULTI {
                        (GPS_MULTI.wrapping_mul(base), 4, true)
                    } else {
                        multi = GPS_MULTI - multi;
                        if multi > GPS_MULTI_MINUS {
                            (multi.wrapping_mul(base), 5, false)
                        } else {
                            (GPS_MULTI_MINUS.wrapping_mul(base), 6, true)
                        }
                    };
                    let diff = self.gps_time.decode(d, pred, context);
                    if extreme {
                        self.extreme(diff);
                    }
                    self.last_gps_times[last] = self.last_gps_times[last].wrapping_add(diff as i64);
                } else if multi == GPS_MULTI_CODE_FULL {
                    self.full_gps_time(d);
                } else if !d.bad {
                    self.gps_last = (last + (multi - GPS_MULTI_CODE_FULL) as usize) & 3;
                    continue;
                }
            }
            return;
        }
    }
}

/// The decoder state of one chunk's Point14 item: its layers' decoders and the channel contexts.
pub(crate) struct Point14<'a> {
    /// The layers' decoders (those not `on` are never used).
    pub d: [Decoder<'a>; LAYERS],
    /// Whether each layer is decoded (not empty, and requested); XY always is.
    on: [bool; LAYERS],
    current: usize,
    contexts: [Option<Box<Context>>; 4],
}

impl<'a> Point14<'a> {
    /// The state after a chunk's first point `first` (stored raw), with the layers' decoders `d` and
    /// which of them to decode (`on`); also gives the context of the items after Point14 (the first
    /// point's scanner channel).
    pub fn new(first: &[u8; 30], d: [Decoder<'a>; LAYERS], mut on: [bool; LAYERS]) -> (Self, usize) {
        let p = P14::parse(first);
        let c = ((p.flags >> 4) & 3) as usize;
        on[XY] = true;
        let mut contexts = [None, None, None, None];
        contexts[c] = Some(Context::new(&p));
        (Point14 { d, on, current: c, contexts }, c)
    }

    /// Whether a layer's decoder broke (or ran out: `ended`).
    pub fn bad(&self) -> bool {
        self.d.iter().any(|d| d.bad)
    }

    /// Whether a layer's data ended.
    pub fn ended(&self) -> bool {
        self.d.iter().any(|d| d.ended())
    }

    /// Decodes the next point into `out`; gives the context of the items that follow (the new scanner
    /// channel where it changed, else 0).
    #[inline(always)]
    pub fn next<const SIMD: bool>(&mut self, out: &mut [u8; 30]) -> usize {
        let [xy, dz, dclass, dflags, dint, dangle, duser, dsource, dgps] = &mut self.d;
        let on = self.on;
        let mut item_context = 0;
        let changed_values = {
            let Some(ctx) = self.contexts[self.current].as_deref_mut() else { unreachable_context() };
            let lpr = ctx.last.last_point_return();
            xy.symbol(&mut ctx.changed_values[lpr])
        };
        if changed_values & (1 << 6) != 0 {
            let Some(ctx) = self.contexts[self.current].as_deref_mut() else { unreachable_context() };
            let diff = xy.symbol(&mut ctx.scanner_channel) as usize;
            let sc = (self.current + diff + 1) & 3;
            let last = ctx.last;
            if self.contexts[sc].is_none() {
                self.contexts[sc] = Some(Context::new(&last));
            }
            self.current = sc;
            item_context = sc;
            if let Some(ctx) = self.contexts[sc].as_deref_mut() {
                ctx.last.flags = (ctx.last.flags & !0x30) | ((sc as u8) << 4);
            }
        }
        let Some(ctx) = self.contexts[self.current].as_deref_mut() else { unreachable_context() };
        let point_source_changed = changed_values & (1 << 5) != 0;
        let gps_time_changed = changed_values & (1 << 4) != 0;
        let scan_angle_changed = changed_values & (1 << 3) != 0;

        let (last_n, last_r) = (ctx.last.number_of_returns(), ctx.last.return_number());
        let n = if changed_values & (1 << 2) != 0 {
            xy.symbol(model_at(&mut ctx.number_of_returns[last_n as usize], 16)) as u8
        } else {
            last_n
        };
        let r = match changed_values & 3 {
            0 => last_r,
            1 => (last_r + 1) & 15,
            2 => (last_r + 15) & 15,
            _ => {
                if gps_time_changed {
                    xy.symbol(model_at(&mut ctx.return_number[last_r as usize], 16)) as u8
                } else {
                    let sym = xy.symbol(&mut ctx.return_number_gps_same) as u8;
                    (last_r + sym + 2) & 15
                }
            }
        };
        // Models of 16 symbols: n and r are below 16.
        ctx.last.returns = (n << 4) | (r & 15);
        let (n, r) = ((n & 15) as usize, (r & 15) as usize);

        let m = NUMBER_RETURN_MAP_6CTX[n][r] as usize;
        let l = NUMBER_RETURN_LEVEL_8CT[n][r] as usize;
        let cpr = if r == 1 { 2u32 } else { 0 } + (r >= n) as u32;
        let single = (n == 1) as usize;

        let idx = (m << 1) | gps_time_changed as usize;
        let diff = ctx.dx.decode(xy, ctx.last_x_diff_median5[idx].get(), single);
        ctx.last.x = ctx.last.x.wrapping_add(diff);
        ctx.last_x_diff_median5[idx].add_in::<SIMD>(diff);

        let kx = ctx.dx.k;
        let c = single + if kx < 20 { (kx & !1) as usize } else { 20 };
        let diff = ctx.dy.decode(xy, ctx.last_y_diff_median5[idx].get(), c);
        ctx.last.y = ctx.last.y.wrapping_add(diff);
        ctx.last_y_diff_median5[idx].add_in::<SIMD>(diff);

        if on[Z] {
            let kb = (ctx.dx.k + ctx.dy.k) / 2;
            let c = single + if kb < 18 { (kb & !1) as usize } else { 18 };
            ctx.last.z = ctx.z.decode(dz, ctx.last_z[l], c);
            ctx.last_z[l] = ctx.last.z;
        }

        if on[CLASSIFICATION] {
            let ccc = (((ctx.last.classification & 0x1F) << 1) as usize) + (cpr == 3) as usize;
            ctx.last.classification = dclass.symbol(model_at(&mut ctx.classification[ccc], 256)) as u8;
        }

        if on[FLAGS] {
            let last_flags = ctx.last.coded_flags() as usize;
            let f = dflags.symbol(model_at(&mut ctx.flags[last_flags], 64)) as u8;
            ctx.last.flags = ((f >> 5) & 1) << 7 | ((f >> 4) & 1) << 6 | (ctx.last.flags & 0x30) | (f & 0x0F);
        }

        if on[INTENSITY] {
            let ii = ((cpr << 1) | gps_time_changed as u32) as usize;
            ctx.last.intensity = ctx.intensity.decode(dint, i32::from(ctx.last_intensities[ii]), cpr as usize) as u16;
            ctx.last_intensities[ii] = ctx.last.intensity;
        }

        if on[SCAN_ANGLE] && scan_angle_changed {
            ctx.last.scan_angle =
                ctx.scan_angle.decode(dangle, i32::from(ctx.last.scan_angle), gps_time_changed as usize) as i16;
        }

        if on[USER_DATA] {
            ctx.last.user_data =
                duser.symbol(model_at(&mut ctx.user_data[(ctx.last.user_data / 4) as usize], 256)) as u8;
        }

        if on[POINT_SOURCE] && point_source_changed {
            ctx.last.source_id = ctx.source_id.decode(dsource, i32::from(ctx.last.source_id), 0) as u16;
        }

        if on[GPS_TIME] && gps_time_changed {
            ctx.gps_time(dgps);
            ctx.last.gps_bits = ctx.last_gps_times[ctx.gps_last];
        }
        ctx.last.gps_time_change = gps_time_changed;
        ctx.last.write(out);
        item_context
    }
}

/// The current context always exists (made at the start and at every change of channel).
#[cold]
fn unreachable_context() -> ! {
    unreachable!("the current scanner channel's context exists")
}

/// Return map of (number of returns, return number) to 6 contexts (LASzip's `number_return_map_6ctx`).
pub(super) const NUMBER_RETURN_MAP_6CTX: [[u8; 16]; 16] = [
    [0, 1, 2, 3, 4, 5, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5],
    [1, 0, 1, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3],
    [2, 1, 2, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3],
    [3, 3, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
    [4, 3, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
    [5, 3, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4],
    [3, 3, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4, 4],
    [4, 3, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4, 4],
    [4, 3, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4, 4],
    [5, 3, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4, 4],
    [5, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 4, 4, 4, 4, 4],
    [5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 4, 4, 4],
    [5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4, 4],
    [5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 4],
    [5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5],
    [5, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5],
];

/// Return level of (number of returns, return number) in 8 contexts (LASzip's `number_return_level_8ctx`).
pub(super) const NUMBER_RETURN_LEVEL_8CT: [[u8; 16]; 16] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7],
    [1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7, 7, 7],
    [2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7, 7],
    [3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7],
    [4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7],
    [5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7],
    [6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7, 7],
    [7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 7],
    [7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7],
    [7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6],
    [7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5],
    [7, 7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4],
    [7, 7, 7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3],
    [7, 7, 7, 7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2],
    [7, 7, 7, 7, 7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0, 1],
    [7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 5, 4, 3, 2, 1, 0],
];
