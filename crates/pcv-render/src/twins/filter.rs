//! The culled modes' filter, the CPU twin of `kernels/filter.cuh`: hidden classification codes, hidden
//! return codes, value ranges of attributes and clip volumes in the cloud's frame, decided per batch
//! from its summaries ([`filter_batch`]: none, all or some of its points pass) and per point where the
//! summaries cannot tell ([`filter_point`]), reading the [`Columns`] of the tests the filter makes.
//!
//! The arithmetic is the kernel's, operation for operation (plain f32 adds and multiplies: Rust does
//! not contract them, and the kernel spells each as a round-to-nearest intrinsic), so both backends
//! decide every point and batch alike. Summary tests of clip volumes carry a margin of 1e-5 of the
//! magnitudes involved, far above the point test's rounding: a batch said to pass or fail whole holds
//! no point that [`filter_point`] decides otherwise (tested below on points at the faces); codes and
//! ranges are decided exactly.
use crate::gpu_data::{
    filter_says, Batch, BatchClasses, BatchRange, FilterBox, FilterPlane, FilterUniforms, FILTER_MAX_RANGES,
};

/// The filter's columns in table order (`FilterColumns`): a code or value per point and a summary per
/// batch, for the tests the filter makes (the others may be empty).
#[derive(Clone, Copy, Debug, Default)]
pub struct Columns<'a> {
    pub classes: &'a [u8],
    pub batch_classes: &'a [BatchClasses],
    pub returns: &'a [u8],
    pub batch_returns: &'a [BatchClasses],
    /// Range k's values (relative to the column's base) and batch summaries.
    pub values: [&'a [f32]; FILTER_MAX_RANGES],
    pub batch_values: [&'a [BatchRange]; FILTER_MAX_RANGES],
    /// The kept lists ([`super::kept`]); empty: each point is tested as it is drawn.
    pub kept_first: &'a [u32],
    pub kept: &'a [u16],
}

impl<'a> Columns<'a> {
    /// Only class codes.
    pub fn of_classes(classes: &'a [u8], batch_classes: &'a [BatchClasses]) -> Columns<'a> {
        Columns { classes, batch_classes, ..Default::default() }
    }
}

/// Coordinate k of `d = p − center` along the box's axis k.
#[inline(always)]
fn box_axis(b: &FilterBox, k: usize, d: [f32; 3]) -> f32 {
    b.axes[3 * k] * d[0] + b.axes[3 * k + 1] * d[1] + b.axes[3 * k + 2] * d[2]
}

#[inline(always)]
fn in_box(b: &FilterBox, p: [f32; 3]) -> bool {
    let d = [p[0] + -b.center[0], p[1] + -b.center[1], p[2] + -b.center[2]];
    (0..3).all(|k| box_axis(b, k, d).abs() <= b.half[k])
}

#[inline(always)]
fn plane_value(pl: &FilterPlane, p: [f32; 3]) -> f32 {
    pl.normal[0] * p[0] + pl.normal[1] * p[1] + pl.normal[2] * p[2] + pl.offset
}

/// Whether code `c` is hidden under the words `hidden` (`pcv_code_hidden`).
#[inline(always)]
pub fn code_hidden(hidden: &[u32; 8], c: u8) -> bool {
    (hidden[(c >> 5) as usize] >> (c & 31)) & 1 != 0
}

/// Whether point `i` of the table, at `p`, passes (`pcv_filter_point`; its codes and values are read
/// from `c` only for the tests the filter makes).
#[inline(always)]
pub fn filter_point(fu: &FilterUniforms, c: &Columns, i: usize, p: [f32; 3]) -> bool {
    if fu.tests_classes != 0 && code_hidden(&fu.hidden_classes, c.classes[i]) {
        return false;
    }
    if fu.tests_returns != 0 && code_hidden(&fu.hidden_returns, c.returns[i]) {
        return false;
    }
    for k in 0..fu.num_ranges as usize {
        let v = c.values[k][i];
        if !(v >= fu.ranges[k].lo && v <= fu.ranges[k].hi) {
            return false;
        }
    }
    let mut in_any = fu.num_inside == 0;
    for b in &fu.boxes[..fu.num_boxes as usize] {
        let inside = in_box(b, p);
        if b.outside != 0 {
            if inside {
                return false;
            }
        } else {
            in_any = in_any || inside;
        }
    }
    in_any && fu.planes[..fu.num_planes as usize].iter().all(|pl| plane_value(pl, p) >= 0.0)
}

/// What a batch's set of codes says under the codes `hidden` (`pcv_codes_may_pass`): false when every
/// code it holds is hidden; `some` set when one is.
fn codes_may_pass(hidden: &[u32; 8], set: &BatchClasses, some: &mut bool) -> bool {
    let (mut shown, mut hid) = (0u32, 0u32);
    for (bits, h) in set.bits.iter().zip(hidden) {
        shown |= bits & !h;
        hid |= bits & h;
    }
    *some = *some || hid != 0;
    shown != 0
}

/// What the summaries of batch `bi`, `b`, say (`pcv_filter_batch`): [`filter_says::NONE`], `ALL` or
/// `SOME` (the summaries in `c` are read only for the tests the filter makes).
pub fn filter_batch(fu: &FilterUniforms, c: &Columns, bi: usize, b: &Batch) -> u32 {
    let mut some = false;
    if fu.tests_classes != 0 && !codes_may_pass(&fu.hidden_classes, &c.batch_classes[bi], &mut some) {
        return filter_says::NONE;
    }
    if fu.tests_returns != 0 && !codes_may_pass(&fu.hidden_returns, &c.batch_returns[bi], &mut some) {
        return filter_says::NONE;
    }
    for k in 0..fu.num_ranges as usize {
        let (r, q) = (c.batch_values[k][bi], fu.ranges[k]);
        // No number in the batch, or every number outside: no point passes.
        if r.min > r.max || r.max < q.lo || r.min > q.hi {
            return filter_says::NONE;
        }
        some = some || r.nans != 0 || !(r.min >= q.lo && r.max <= q.hi);
    }
    if fu.num_boxes == 0 && fu.num_planes == 0 {
        return if some { filter_says::SOME } else { filter_says::ALL };
    }
    let c: [f32; 3] = std::array::from_fn(|j| (b.min[j] + b.max[j]) * 0.5);
    let h: [f32; 3] = std::array::from_fn(|j| (b.max[j] + -b.min[j]) * 0.5);
    let mag: [f32; 3] = std::array::from_fn(|j| c[j].abs() + h[j]);
    let (mut in_any_may, mut in_one_whole) = (fu.num_inside == 0, fu.num_inside == 0);
    for bx in &fu.boxes[..fu.num_boxes as usize] {
        let d = [c[0] + -bx.center[0], c[1] + -bx.center[1], c[2] + -bx.center[2]];
        let (mut whole_in, mut whole_out) = (true, false);
        for k in 0..3 {
            let l = box_axis(bx, k, d).abs();
            let (mut r, mut s) = (0.0f32, 0.0f32);
            for j in 0..3 {
                let a = bx.axes[3 * k + j].abs();
                r += a * h[j];
                s += a * (mag[j] + bx.center[j].abs());
            }
            let eps = (s + bx.half[k]) * 1e-5;
            whole_in = whole_in && l + r + eps <= bx.half[k];
            whole_out = whole_out || l + -r + -eps > bx.half[k];
        }
        if bx.outside != 0 {
            if whole_in {
                return filter_says::NONE;
            }
            some = some || !whole_out;
        } else {
            in_any_may = in_any_may || !whole_out;
            in_one_whole = in_one_whole || whole_in;
        }
    }
    if !in_any_may {
        return filter_says::NONE;
    }
    some = some || !in_one_whole;
    for pl in &fu.planes[..fu.num_planes as usize] {
        let v = plane_value(pl, c);
        let (mut r, mut s) = (0.0f32, pl.offset.abs());
        for j in 0..3 {
            let a = pl.normal[j].abs();
            r += a * h[j];
            s += a * mag[j];
        }
        let eps = s * 1e-5;
        if v + r + eps < 0.0 {
            return filter_says::NONE;
        }
        let low = v + -r + -eps;
        some = some || low.is_nan() || low < 0.0;
    }
    if some {
        filter_says::SOME
    } else {
        filter_says::ALL
    }
}
