// The projection and pixel rule, in one place. CPU twin: src/render/cpu/project.rs.
//
// Every float operation is spelled with a round-to-nearest intrinsic (__fmul_rn, __fadd_rn), which the
// compiler never contracts into an FMA, and in the same order as the CPU twin, so both backends put
// every point on the same pixel with the same depth bits.
#pragma once
#include "shared.h"

// clip = clip_from_world * (x, y, z, 1), row r of a column-major matrix: m[r], m[4 + r], m[8 + r], m[12 + r].
__device__ __forceinline__ float pcv_clip_row(const float* m, int r, float x, float y, float z) {
    return __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(m[r], x), __fmul_rn(m[4 + r], y)), __fmul_rn(m[8 + r], z)), m[12 + r]);
}

// Projects a point. Returns false for points whose clip coordinates fall outside the clip volume
// (|x|, |y| or |z| >= w; NaN and infinities fail these tests too). Otherwise writes the pixel
// (floor of NDC mapped to the viewport, row 0 at the bottom, clamped into the viewport) and the depth
// in [0, 1] as its float bits, which order like the floats because they are non-negative.
__device__ __forceinline__ bool pcv_project(const FrameUniforms& f, float x, float y, float z,
                                            uint32_t* px, uint32_t* py, uint32_t* depth_bits) {
    const float* m = f.clip_from_world;
    float cx = pcv_clip_row(m, 0, x, y, z);
    float cy = pcv_clip_row(m, 1, x, y, z);
    float cz = pcv_clip_row(m, 2, x, y, z);
    float cw = pcv_clip_row(m, 3, x, y, z);
    if (!(fabsf(cx) < cw && fabsf(cy) < cw && fabsf(cz) < cw)) return false;
    float inv_w = __frcp_rn(cw);
    float sx = __fmul_rn(__fmul_rn(__fadd_rn(__fmul_rn(cx, inv_w), 1.0f), 0.5f), (float)f.width);
    float sy = __fmul_rn(__fmul_rn(__fadd_rn(__fmul_rn(cy, inv_w), 1.0f), 0.5f), (float)f.height);
    float depth = __fmul_rn(__fadd_rn(__fmul_rn(cz, inv_w), 1.0f), 0.5f);
    *px = min((uint32_t)floorf(sx), f.width - 1);
    *py = min((uint32_t)floorf(sy), f.height - 1);
    *depth_bits = __float_as_uint(depth);
    return true;
}
