// Per-batch decisions, in one place: the frustum test of a batch's box and whether its 10-bit
// quantized coordinates are precise enough this frame. CPU twin: src/render/cpu/batch.rs.
//
// Both are conservative: a culled batch has no point that pcv_project would keep, and a batch decoded
// from 10 bits moves none of its points by more than half a pixel on screen. Float operations are
// round-to-nearest intrinsics in the twin's order, so both backends decide the same.
#pragma once
#include "shared.h"

// Clip-space row r at the box corner picked by `corner` (bit k: max on axis k, else min).
__device__ __forceinline__ float pcv_corner_row(const float* m, int r, const Batch& b, int corner) {
    float x = (corner & 1) ? b.max[0] : b.min[0];
    float y = (corner & 2) ? b.max[1] : b.min[1];
    float z = (corner & 4) ? b.max[2] : b.min[2];
    return __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(m[r], x), __fmul_rn(m[4 + r], y)), __fmul_rn(m[8 + r], z)), m[12 + r]);
}

// True when every corner of the box lies outside one clip plane (x > w, -x > w, y > w, ...) by a margin
// that covers float rounding: no point of the box can then pass pcv_project's test. NaN never culls.
__device__ __forceinline__ bool pcv_batch_culled(const FrameUniforms& f, const Batch& b) {
    const float* m = f.clip_from_world;
    uint32_t out_all = 0x3f;  // bit per plane: +x, -x, +y, -y, +z, -z
    for (int c = 0; c < 8; ++c) {
        float cx = pcv_corner_row(m, 0, b, c);
        float cy = pcv_corner_row(m, 1, b, c);
        float cz = pcv_corner_row(m, 2, b, c);
        float cw = pcv_corner_row(m, 3, b, c);
        float mx = __fmul_rn(__fadd_rn(__fadd_rn(fabsf(cx), fabsf(cy)), __fadd_rn(fabsf(cz), fabsf(cw))), 1e-5f);
        uint32_t out = 0;
        out |= (__fadd_rn(cx, -cw) > mx) ? 1u : 0u;
        out |= (__fadd_rn(-cx, -cw) > mx) ? 2u : 0u;
        out |= (__fadd_rn(cy, -cw) > mx) ? 4u : 0u;
        out |= (__fadd_rn(-cy, -cw) > mx) ? 8u : 0u;
        out |= (__fadd_rn(cz, -cw) > mx) ? 16u : 0u;
        out |= (__fadd_rn(-cz, -cw) > mx) ? 32u : 0u;
        out_all &= out;
    }
    return out_all != 0;
}

// Whether decoding this batch from 10 bits moves no point by more than half a pixel this frame.
//
// A point p of the box moves by d (|d_k| <= 0.5001 * scale_k plus the decode's rounding). Its NDC x
// moves by (r0.d - ndc_x * r3.d) / w(p + d), at most (sum_k (|r0_k| + |r3_k|) |d_k|) / w_min for a
// visible point (|ndc_x| < 1), where w_min is the smallest clip w over the box (a corner's). In pixels
// that is times width / 2; likewise for y. Batches that reach w <= 0 keep full precision.
__device__ __forceinline__ bool pcv_batch_quantized_ok(const FrameUniforms& f, const Batch& b) {
    const float* m = f.clip_from_world;
    float w_min = m[15];
    float ax = 0.0f, ay = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float r3 = m[4 * k + 3];
        w_min = __fadd_rn(w_min, fminf(__fmul_rn(r3, b.min[k]), __fmul_rn(r3, b.max[k])));
        // |d_k|: half a step (and the quantizer's rounding), plus two ulps of the coordinate for the decode.
        float mag = fmaxf(fabsf(b.min[k]), fabsf(b.max[k]));
        float d = __fadd_rn(__fmul_rn(b.scale[k], 0.5001f), __fmul_rn(mag, 2.384185791015625e-7f));  // 2^-22
        ax = __fadd_rn(ax, __fmul_rn(__fadd_rn(fabsf(m[4 * k + 0]), fabsf(r3)), d));
        ay = __fadd_rn(ay, __fmul_rn(__fadd_rn(fabsf(m[4 * k + 1]), fabsf(r3)), d));
    }
    // A 1% margin on w_min for its own rounding.
    float w_safe = __fmul_rn(w_min, 0.99f);
    float ex_px = __fmul_rn(ax, __fmul_rn((float)f.width, 0.5f));
    float ey_px = __fmul_rn(ay, __fmul_rn((float)f.height, 0.5f));
    float half_w = __fmul_rn(w_safe, 0.5f);
    return w_min > 0.0f && ex_px <= half_w && ey_px <= half_w;
}

// Decodes coordinate k of a quantized word (x in bits 0-9, y in 10-19, z in 20-29).
__device__ __forceinline__ float pcv_dequantize(const Batch& b, uint32_t word, int k) {
    uint32_t q = (word >> (10 * k)) & 1023u;
    return __fadd_rn(b.min[k], __fmul_rn((float)q, b.scale[k]));
}

// The batches' counters that culled.cu and quant.cu keep per frame.
#define PCV_COUNT_CULLED 0
#define PCV_COUNT_QUANTIZED 1
#define PCV_COUNT_FULL 2
