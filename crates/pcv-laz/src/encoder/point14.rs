//! The layered Point14 item (LASzip version 3) of a chunk: the 30 bytes of a LAS 1.4 point format 6–10
//! record in nine layers, ported from the `laz` crate's `las::point6` compressor to give the same bytes.
//!
//! How it works: the scanner channel (0–3) selects one of four contexts, each with its own models,
//! integer coders, last values and GPS time sequences; a context is made when its channel first appears,
//! from the last point of the channel before it. Each point starts with a 7-bit mask of what changed
//! against the last point of its channel (channel, point source, GPS time, scan angle, number of
//! returns, return number), coded in the context of the last point's return kind; then X and Y as
//! differences predicted by a running median of 5, Z predicted by the last Z of the same return level,
//! then classification, flags, intensity, scan angle, user data, point source and GPS time each into
//! its own layer. A layer whose values never changed is left out (size 0). The version 3 quirk is kept:
//! the context handed to the following items is the new channel at a change of channel, else 0.
use super::arith::{model_at, Enc, IntCoder, Model};
use crate::point10::Median5;
use crate::point14::{NUMBER_RETURN_LEVEL_8CT, NUMBER_RETURN_MAP_6CTX};

/// LASzip's GPS time multiplier coding.
const GPS_MULTI: i32 = 500;
const GPS_MULTI_MINUS: i32 = -10;
const GPS_MULTI_CODE_FULL: i32 = GPS_MULTI - GPS_MULTI_MINUS + 1;
const GPS_MULTI_TOTAL: i32 = GPS_MULTI - GPS_MULTI_MINUS + 5;

/// The fields of a Point14 record that the coding looks at.
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
    #[inline(always)]
    fn parse(r: &[u8]) -> P14 {
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
    fn gps(&self) -> f64 {
        f64::from_bits(self.gps_bits as u64)
    }

    #[inline(always)]
    fn channel(&self) -> usize {
        ((self.flags >> 4) & 3) as usize
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

/// One scanner channel's models, coders and history.
struct Context {
    changed_values: Vec<Model<128>>,
    scanner_channel: Model<3>,
    number_of_returns: [Option<Box<Model<16>>>; 16],
    return_number: [Option<Box<Model<16>>>; 16],
    return_number_gps_same: Model<13>,
    classification: Vec<Option<Box<Model>>>,
    flags: Vec<Option<Box<Model<64>>>>,
    user_data: Vec<Option<Box<Model>>>,
    gps_time_multi: Model<{ GPS_MULTI_TOTAL as usize }>,
    gps_time_no_diff: Model<5>,
    dx: IntCoder,
    dy: IntCoder,
    z: IntCoder,
    intensity: IntCoder,
    scan_angle: IntCoder,
    source_id: IntCoder,
    gps_time: IntCoder,
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
    /// A fresh context whose history starts at `last`.
    fn new(last: &P14) -> Context {
        Context {
            changed_values: (0..8).map(|_| Model::new(128)).collect(),
            scanner_channel: Model::new(3),
            number_of_returns: Default::default(),
            return_number: Default::default(),
            return_number_gps_same: Model::new(13),
            classification: (0..64).map(|_| None).collect(),
            flags: (0..64).map(|_| None).collect(),
            user_data: (0..64).map(|_| None).collect(),
            gps_time_multi: Model::new(GPS_MULTI_TOTAL as u32),
            gps_time_no_diff: Model::new(5),
            dx: IntCoder::new(32, 2),
            dy: IntCoder::new(32, 22),
            z: IntCoder::new(32, 20),
            intensity: IntCoder::new(16, 4),
            scan_angle: IntCoder::new(16, 2),
            source_id: IntCoder::new(16, 1),
            gps_time: IntCoder::new(32, 9),
            last_intensities: [last.intensity; 8],
            last_x_diff_median5: [Median5::NEW; 12],
            last_y_diff_median5: [Median5::NEW; 12],
            last_z: [last.z; 8],
            gps_last: 0,
            gps_next: 0,
            last_gps_times: [last.gps_bits, 0, 0, 0],
            last_gps_diffs: [0; 4],
            multi_extreme_counter: [0; 4],
        }
    }

    /// Codes a GPS time that differs from the last one (LASzip's `compress_gps_time`).
    fn compress_gps_time(&mut self, e: &mut Enc, gps: i64) {
        loop {
            let last = self.gps_last;
            let fits = |other: i64| {
                let d64 = gps.wrapping_sub(other);
                (d64 as i32) as i64 == d64
            };
            if self.last_gps_diffs[last] == 0 {
                let d64 = gps.wrapping_sub(self.last_gps_times[last]);
                let d = d64 as i32;
                if d as i64 == d64 {
                    e.encode_symbol(&mut self.gps_time_no_diff, 0);
                    self.gps_time.compress(e, 0, d, 0);
                    self.last_gps_diffs[last] = d;
                    self.multi_extreme_counter[last] = 0;
                } else {
                    if let Some(i) = (1..4).find(|&i| fits(self.last_gps_times[(last + i) & 3])) {
                        e.encode_symbol(&mut self.gps_time_no_diff, (i + 1) as u32);
                        self.gps_last = (last + i) & 3;
                        continue;
                    }
                    e.encode_symbol(&mut self.gps_time_no_diff, 1);
                    self.gps_time.compress(e, (self.last_gps_times[last] >> 32) as i32, (gps >> 32) as i32, 8);
                    e.write_int(gps as u32);
                    self.gps_next = (self.gps_next + 1) & 3;
                    self.gps_last = self.gps_next;
                    self.last_gps_diffs[self.gps_last] = 0;
                    self.multi_extreme_counter[self.gps_last] = 0;
                }
            } else {
                let d64 = gps.wrapping_sub(self.last_gps_times[last]);
                let d = d64 as i32;
                if d as i64 == d64 {
                    let last_diff = self.last_gps_diffs[last];
                    let multi = quantize(d as f32 / last_diff as f32);
                    let mut extreme = false;
                    if multi == 1 {
                        e.encode_symbol(&mut self.gps_time_multi, 1);
                        self.gps_time.compress(e, last_diff, d, 1);
                        self.multi_extreme_counter[last] = 0;
                    } else if multi > 0 {
                        if multi < GPS_MULTI {
                            e.encode_symbol(&mut self.gps_time_multi, multi as u32);
                            let c = if multi < 10 { 2 } else { 3 };
                            self.gps_time.compress(e, multi.wrapping_mul(last_diff), d, c);
                        } else {
                            e.encode_symbol(&mut self.gps_time_multi, GPS_MULTI as u32);
                            self.gps_time.compress(e, GPS_MULTI.wrapping_mul(last_diff), d, 4);
                            extreme = true;
                        }
                    } else if multi < 0 {
                        if multi > GPS_MULTI_MINUS {
                            e.encode_symbol(&mut self.gps_time_multi, (GPS_MULTI - multi) as u32);
                            self.gps_time.compress(e, multi.wrapping_mul(last_diff), d, 5);
                        } else {
                            e.encode_symbol(&mut self.gps_time_multi, (GPS_MULTI - GPS_MULTI_MINUS) as u32);
                            self.gps_time.compress(e, GPS_MULTI_MINUS.wrapping_mul(last_diff), d, 6);
                            extreme = true;
                        }
                    } else {
                        e.encode_symbol(&mut self.gps_time_multi, 0);
                        self.gps_time.compress(e, 0, d, 7);
                        extreme = true;
                    }
                    if extreme {
                        let counter = &mut self.multi_extreme_counter[last];
                        *counter += 1;
                        if *counter > 3 {
                            self.last_gps_diffs[last] = d;
                            *counter = 0;
                        }
                    }
                } else {
                    if let Some(i) = (1..4).find(|&i| fits(self.last_gps_times[(last + i) & 3])) {
                        e.encode_symbol(&mut self.gps_time_multi, (GPS_MULTI_CODE_FULL + i as i32) as u32);
                        self.gps_last = (last + i) & 3;
                        continue;
                    }
                    e.encode_symbol(&mut self.gps_time_multi, GPS_MULTI_CODE_FULL as u32);
                    self.gps_time.compress(e, (self.last_gps_times[last] >> 32) as i32, (gps >> 32) as i32, 8);
                    e.write_int(gps as u32);
                    self.gps_next = (self.gps_next + 1) & 3;
                    self.gps_last = self.gps_next;
                    self.last_gps_diffs[self.gps_last] = 0;
                    self.multi_extreme_counter[self.gps_last] = 0;
                }
            }
            self.last_gps_times[self.gps_last] = gps;
            return;
        }
    }
}

/// LASzip's `I32_QUANTIZE` of a float.
#[inline]
fn quantize(n: f32) -> i32 {
    if n >= 0.0 {
        (n + 0.5) as i32
    } else {
        (n - 0.5) as i32
    }
}

/// The nine layers of Point14, in their order in the chunk: XY (with the changes, channel and returns),
/// Z, then the seven below.
const LAYERS: usize = 9;
const CLASSIFICATION: usize = 2;
const FLAGS: usize = 3;
const INTENSITY: usize = 4;
const SCAN_ANGLE: usize = 5;
const USER_DATA: usize = 6;
const POINT_SOURCE: usize = 7;
const GPS_TIME: usize = 8;

/// The Point14 coder of one chunk.
pub(super) struct Point14 {
    enc: [Enc; LAYERS],
    /// Whether each layer's values changed at least once (XY and Z are always written).
    changed: [bool; LAYERS],
    current: usize,
    contexts: [Option<Box<Context>>; 4],
    last: [P14; 4],
}

impl Point14 {
    /// Starts a chunk at its first record; returns the first point's context (its scanner channel).
    pub fn new(first: &[u8], points: usize) -> (Point14, usize) {
        let p = P14::parse(first);
        let c = p.channel();
        let mut me = Point14 {
            enc: [
                Enc::new(points * 4),
                Enc::new(points * 2),
                Enc::new(points / 4),
                Enc::new(points / 8),
                Enc::new(points),
                Enc::new(points / 8),
                Enc::new(points / 8),
                Enc::new(points / 8),
                Enc::new(points),
            ],
            changed: [true, true, false, false, false, false, false, false, false],
            current: c,
            contexts: [None, None, None, None],
            last: [P14::default(); 4],
        };
        me.contexts[c] = Some(Box::new(Context::new(&p)));
        me.last[c] = p;
        (me, c)
    }

    /// Codes one record after the first; returns the context of the items that follow: the new scanner
    /// channel where it changed, else 0 (`laz`'s layered compressor starts every record's context at 0
    /// and version 3 Point14 sets it only on a change; LASzip does the same).
    #[inline]
    pub fn encode(&mut self, rec: &[u8]) -> usize {
        let cur = P14::parse(rec);
        let cc = self.current;
        let lpr = self.last[cc].last_point_return();
        let sc = cur.channel();
        let sc_changed = sc != cc;
        let mut li = cc;
        if sc_changed && self.contexts[sc].is_some() {
            li = sc;
        }
        let last = self.last[li];

        let point_source_changed = last.source_id != cur.source_id;
        let gps_time_changed = last.gps() != cur.gps();
        let scan_angle_changed = last.scan_angle != cur.scan_angle;
        let (last_n, last_r) = (last.number_of_returns(), last.return_number());
        let (n, r) = (cur.number_of_returns(), cur.return_number());
        let mut changed_values = (sc_changed as u32) << 6
            | (point_source_changed as u32) << 5
            | (gps_time_changed as u32) << 4
            | (scan_angle_changed as u32) << 3
            | ((n != last_n) as u32) << 2;
        if r != last_r {
            changed_values |= if r == (last_r + 1) % 16 {
                1
            } else if r == (last_r + 15) % 16 {
                2
            } else {
                3
            };
        }
        let [e_xy, e_z, e_class, e_flags, e_int, e_angle, e_user, e_source, e_gps] = &mut self.enc;
        {
            let ctx = self.contexts[cc].as_deref_mut().expect("the current context exists");
            e_xy.encode_symbol(&mut ctx.changed_values[lpr], changed_values);
            if sc_changed {
                let diff = sc as i32 - cc as i32;
                let symbol = if diff > 0 { diff - 1 } else { diff + 4 - 1 };
                e_xy.encode_symbol(&mut ctx.scanner_channel, symbol as u32);
            }
        }
        if sc_changed {
            if self.contexts[sc].is_none() {
                self.contexts[sc] = Some(Box::new(Context::new(&last)));
                self.last[sc] = last;
                li = sc;
            }
            self.current = sc;
        }
        let ctx = self.contexts[self.current].as_deref_mut().expect("the current context exists");

        if changed_values & (1 << 2) != 0 {
            e_xy.encode_symbol(model_at(&mut ctx.number_of_returns[last_n as usize], 16), u32::from(n));
        }
        if changed_values & 3 == 3 {
            if gps_time_changed {
                e_xy.encode_symbol(model_at(&mut ctx.return_number[last_r as usize], 16), u32::from(r));
            } else {
                let diff = i32::from(r) - i32::from(last_r);
                let sym = if diff > 1 { diff - 2 } else { diff + 16 - 2 };
                e_xy.encode_symbol(&mut ctx.return_number_gps_same, sym as u32);
            }
        }

        let m = NUMBER_RETURN_MAP_6CTX[n as usize][r as usize];
        let l = NUMBER_RETURN_LEVEL_8CT[n as usize][r as usize] as usize;
        let cpr = if r == 1 { 2u32 } else { 0 } + (r >= n) as u32;
        let single = (n == 1) as u32;

        let idx = ((m as usize) << 1) | gps_time_changed as usize;
        let diff = cur.x.wrapping_sub(last.x);
        let kx = ctx.dx.compress(e_xy, ctx.last_x_diff_median5[idx].get(), diff, single);
        ctx.last_x_diff_median5[idx].add(diff);

        let diff = cur.y.wrapping_sub(last.y);
        let c = single + if kx < 20 { kx & !1 } else { 20 };
        let ky = ctx.dy.compress(e_xy, ctx.last_y_diff_median5[idx].get(), diff, c);
        ctx.last_y_diff_median5[idx].add(diff);

        let kb = (kx + ky) / 2;
        let c = single + if kb < 18 { kb & !1 } else { 18 };
        ctx.z.compress(e_z, ctx.last_z[l], cur.z, c);
        ctx.last_z[l] = cur.z;

        self.changed[CLASSIFICATION] |= cur.classification != last.classification;
        let ccc = (((last.classification & 0x1F) << 1) as usize) + (cpr == 3) as usize;
        e_class.encode_symbol(model_at(&mut ctx.classification[ccc], 256), u32::from(cur.classification));

        let (last_flags, flags) = (last.coded_flags(), cur.coded_flags());
        self.changed[FLAGS] |= last_flags != flags;
        e_flags.encode_symbol(model_at(&mut ctx.flags[last_flags as usize], 64), u32::from(flags));

        self.changed[INTENSITY] |= last.intensity != cur.intensity;
        let ii = ((cpr << 1) | gps_time_changed as u32) as usize;
        ctx.intensity.compress(e_int, i32::from(ctx.last_intensities[ii]), i32::from(cur.intensity), cpr);
        ctx.last_intensities[ii] = cur.intensity;

        if scan_angle_changed {
            self.changed[SCAN_ANGLE] = true;
            ctx.scan_angle.compress(
                e_angle,
                i32::from(last.scan_angle),
                i32::from(cur.scan_angle),
                gps_time_changed as u32,
            );
        }

        self.changed[USER_DATA] |= last.user_data != cur.user_data;
        e_user
            .encode_symbol(model_at(&mut ctx.user_data[(last.user_data / 4) as usize], 256), u32::from(cur.user_data));

        if point_source_changed {
            self.changed[POINT_SOURCE] = true;
            ctx.source_id.compress(e_source, i32::from(last.source_id), i32::from(cur.source_id), 0);
        }

        self.last[li] = P14 { gps_time_change: gps_time_changed, ..cur };
        if gps_time_changed {
            self.changed[GPS_TIME] = true;
            ctx.compress_gps_time(e_gps, cur.gps_bits);
        }
        if sc_changed {
            sc
        } else {
            0
        }
    }

    /// Ends the layers: appends the nine layer sizes to `sizes` and the layers to `layers`.
    pub fn finish(self, sizes: &mut Vec<u8>, layers: &mut Vec<u8>) {
        for (mut e, changed) in self.enc.into_iter().zip(self.changed) {
            if changed {
                e.done();
                sizes.extend_from_slice(&(e.bytes().len() as u32).to_le_bytes());
                layers.extend_from_slice(e.bytes());
            } else {
                sizes.extend_from_slice(&0u32.to_le_bytes());
            }
        }
    }
}
