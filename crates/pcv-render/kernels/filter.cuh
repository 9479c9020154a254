// The filters the culled modes apply themselves: hidden classification codes, hidden return codes,
// value ranges of attributes, and clip volumes (boxes kept inside or outside, half-spaces), in the
// cloud's frame. CPU twin: src/twins/filter.rs.
//
// Per batch, pcv_filter_batch reads the batch's summary — its box, the sets of class and return codes
// its points hold (BatchClasses, made at upload by classes.cu) and each tested attribute's smallest and
// largest value (BatchRange, ranges.cu) — and says whether no point can pass (the batch is skipped like
// one outside the view), every point passes (drawn as without a filter), or some may (each point is
// tested by pcv_filter_point, which reads the point's codes and values from the columns of
// FilterColumns). Summary tests of clip volumes carry a margin of 1e-5 of the magnitudes involved, far
// above the rounding of the point test, so a batch said to pass or fail whole holds no point the point
// test would decide otherwise; codes and ranges are decided exactly. Float operations are
// round-to-nearest intrinsics in the twin's order (no contraction), so both backends decide every point
// and batch alike.
#pragma once
#include "shared.h"

// Coordinate k of `p - center` along the box's axis k.
__device__ __forceinline__ float pcv_box_axis(const FilterBox& bx, int k, float dx, float dy, float dz) {
    return __fadd_rn(__fadd_rn(__fmul_rn(bx.axes[3 * k], dx), __fmul_rn(bx.axes[3 * k + 1], dy)), __fmul_rn(bx.axes[3 * k + 2], dz));
}

__device__ __forceinline__ bool pcv_in_box(const FilterBox& bx, float x, float y, float z) {
    float dx = __fadd_rn(x, -bx.center[0]), dy = __fadd_rn(y, -bx.center[1]), dz = __fadd_rn(z, -bx.center[2]);
    for (int k = 0; k < 3; ++k) {
        if (!(fabsf(pcv_box_axis(bx, k, dx, dy, dz)) <= bx.half[k])) return false;
    }
    return true;
}

__device__ __forceinline__ float pcv_plane_value(const FilterPlane& pl, float x, float y, float z) {
    return __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(pl.normal[0], x), __fmul_rn(pl.normal[1], y)), __fmul_rn(pl.normal[2], z)), pl.offset);
}

__device__ __forceinline__ bool pcv_code_hidden(const uint32_t* hidden, uint32_t code) {
    return ((hidden[(code >> 5) & 7u] >> (code & 31u)) & 1u) != 0;
}

// Whether point `i` of the table, at (x, y, z), passes (its codes and values are read from `fc` only
// for the tests the filter makes).
__device__ __forceinline__ bool pcv_filter_point(const FilterUniforms& fu, const FilterColumns& fc, uint64_t i, float x, float y, float z) {
    if (fu.tests_classes && pcv_code_hidden(fu.hidden_classes, __ldg(fc.classes + i))) return false;
    if (fu.tests_returns && pcv_code_hidden(fu.hidden_returns, __ldg(fc.returns + i))) return false;
    for (uint32_t k = 0; k < fu.num_ranges; ++k) {
        float v = __ldg(fc.values[k] + i);
        if (!(v >= fu.ranges[k].lo && v <= fu.ranges[k].hi)) return false;
    }
    bool in_any = fu.num_inside == 0;
    for (uint32_t i = 0; i < fu.num_boxes; ++i) {
        bool in = pcv_in_box(fu.boxes[i], x, y, z);
        if (fu.boxes[i].outside) {
            if (in) return false;
        } else {
            in_any = in_any || in;
        }
    }
    if (!in_any) return false;
    for (uint32_t i = 0; i < fu.num_planes; ++i) {
        if (!(pcv_plane_value(fu.planes[i], x, y, z) >= 0.0f)) return false;
    }
    return true;
}

// What a batch's set of codes `bc` says under the codes `hidden`: false when every code it holds is
// hidden; `some` set when one is.
__device__ __forceinline__ bool pcv_codes_may_pass(const uint32_t* hidden, const BatchClasses& bc, bool* some) {
    uint32_t shown = 0, hid = 0;
    for (int w = 0; w < 8; ++w) {
        uint32_t bits = bc.bits[w];
        shown |= bits & ~hidden[w];
        hid |= bits & hidden[w];
    }
    *some = *some || hid != 0;
    return shown != 0;
}

// PCV_FILTER_NONE, _ALL or _SOME for batch `bi` of the table, `b` (its summaries in `fc` are read only
// for the tests the filter makes).
__device__ __forceinline__ uint32_t pcv_filter_batch(const FilterUniforms& fu, const FilterColumns& fc, uint32_t bi, const Batch& b) {
    bool some = false;
    if (fu.tests_classes && !pcv_codes_may_pass(fu.hidden_classes, fc.batch_classes[bi], &some)) return PCV_FILTER_NONE;
    if (fu.tests_returns && !pcv_codes_may_pass(fu.hidden_returns, fc.batch_returns[bi], &some)) return PCV_FILTER_NONE;
    for (uint32_t k = 0; k < fu.num_ranges; ++k) {
        const BatchRange r = fc.batch_values[k][bi];
        const FilterRange q = fu.ranges[k];
        // No number in the batch, or every number outside: no point passes.
        if (r.min > r.max || r.max < q.lo || r.min > q.hi) return PCV_FILTER_NONE;
        some = some || r.nans != 0 || !(r.min >= q.lo && r.max <= q.hi);
    }
    if (fu.num_boxes == 0 && fu.num_planes == 0) return some ? PCV_FILTER_SOME : PCV_FILTER_ALL;
    float c[3], h[3], mag[3];
    for (int j = 0; j < 3; ++j) {
        c[j] = __fmul_rn(__fadd_rn(b.min[j], b.max[j]), 0.5f);
        h[j] = __fmul_rn(__fadd_rn(b.max[j], -b.min[j]), 0.5f);
        mag[j] = __fadd_rn(fabsf(c[j]), h[j]);
    }
    bool in_any_may = fu.num_inside == 0, in_one_whole = fu.num_inside == 0;
    for (uint32_t i = 0; i < fu.num_boxes; ++i) {
        const FilterBox& bx = fu.boxes[i];
        float dx = __fadd_rn(c[0], -bx.center[0]), dy = __fadd_rn(c[1], -bx.center[1]), dz = __fadd_rn(c[2], -bx.center[2]);
        bool whole_in = true, whole_out = false;
        for (int k = 0; k < 3; ++k) {
            float l = fabsf(pcv_box_axis(bx, k, dx, dy, dz));
            float r = 0.0f, s = 0.0f;
            for (int j = 0; j < 3; ++j) {
                float a = fabsf(bx.axes[3 * k + j]);
                r = __fadd_rn(r, __fmul_rn(a, h[j]));
                s = __fadd_rn(s, __fmul_rn(a, __fadd_rn(mag[j], fabsf(bx.center[j]))));
            }
            float eps = __fmul_rn(__fadd_rn(s, bx.half[k]), 1e-5f);
            whole_in = whole_in && __fadd_rn(__fadd_rn(l, r), eps) <= bx.half[k];
            whole_out = whole_out || __fadd_rn(__fadd_rn(l, -r), -eps) > bx.half[k];
        }
        if (bx.outside) {
            if (whole_in) return PCV_FILTER_NONE;
            some = some || !whole_out;
        } else {
            in_any_may = in_any_may || !whole_out;
            in_one_whole = in_one_whole || whole_in;
        }
    }
    if (!in_any_may) return PCV_FILTER_NONE;
    some = some || !in_one_whole;
    for (uint32_t i = 0; i < fu.num_planes; ++i) {
        const FilterPlane& pl = fu.planes[i];
        float v = pcv_plane_value(pl, c[0], c[1], c[2]);
        float r = 0.0f, s = fabsf(pl.offset);
        for (int j = 0; j < 3; ++j) {
            float a = fabsf(pl.normal[j]);
            r = __fadd_rn(r, __fmul_rn(a, h[j]));
            s = __fadd_rn(s, __fmul_rn(a, mag[j]));
        }
        float eps = __fmul_rn(s, 1e-5f);
        if (__fadd_rn(__fadd_rn(v, r), eps) < 0.0f) return PCV_FILTER_NONE;
        some = some || !(__fadd_rn(__fadd_rn(v, -r), -eps) >= 0.0f);
    }
    return some ? PCV_FILTER_SOME : PCV_FILTER_ALL;
}
