//! The culled modes' filter, the CPU twin of `kernels/filter.cuh`: hidden classification codes and
//! clip volumes in the cloud's frame, decided per batch from its summary ([`filter_batch`]: none, all
//! or some of its points pass) and per point where the summary cannot tell ([`filter_point`]).
//!
//! The arithmetic is the kernel's, operation for operation (plain f32 adds and multiplies: Rust does
//! not contract them, and the kernel spells each as a round-to-nearest intrinsic), so both backends
//! decide every point and batch alike. Summary tests carry a margin of 1e-5 of the magnitudes involved,
//! far above the point test's rounding: a batch said to pass or fail whole holds no point that
//! [`filter_point`] decides otherwise (tested below on points at the faces).
use crate::gpu_data::{filter_says, Batch, BatchClasses, FilterBox, FilterPlane, FilterUniforms};

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

/// Whether class code `c` is hidden.
#[inline(always)]
pub fn class_hidden(fu: &FilterUniforms, c: u8) -> bool {
    (fu.hidden_classes[(c >> 5) as usize] >> (c & 31)) & 1 != 0
}

/// Whether the point at `p` of class code `class` passes (`pcv_filter_point`; `class` is only read
/// when classes are tested).
#[inline(always)]
pub fn filter_point(fu: &FilterUniforms, p: [f32; 3], class: u8) -> bool {
    if fu.tests_classes != 0 && class_hidden(fu, class) {
        return false;
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

/// What batch `b`'s summary says (`pcv_filter_batch`): [`filter_says::NONE`], `ALL` or `SOME`
/// (`classes` is only read when classes are tested).
pub fn filter_batch(fu: &FilterUniforms, b: &Batch, classes: &BatchClasses) -> u32 {
    let mut some = false;
    if fu.tests_classes != 0 {
        let (mut shown, mut hidden) = (0u32, 0u32);
        for w in 0..8 {
            shown |= classes.bits[w] & !fu.hidden_classes[w];
            hidden |= classes.bits[w] & fu.hidden_classes[w];
        }
        if shown == 0 {
            return filter_says::NONE;
        }
        some = hidden != 0;
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
