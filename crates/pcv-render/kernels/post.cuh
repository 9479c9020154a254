// What the post passes share, in one place: the background colour of a row, a depth buffer value turned
// into view distance, and a log2 and an exp2 made of adds and multiplies only. CPU twin:
// src/twins/post.rs.
//
// Every float operation is a round-to-nearest intrinsic (never contracted into an FMA) in the twin's
// order, so both backends compute the same bits: the library log2f/exp2f differ between CUDA and Rust's
// libm, these polynomials do not.
#pragma once
#include "shared.h"

// The depth bits of a pixel no point reached (1.0f, the far plane).
#define PCV_FAR_DEPTH_BITS 0x3f800000u

// The background of row y (0 at the top): clear_color there, clear_color_last_row at the last row,
// each channel interpolated in integers and rounded to nearest.
__device__ __forceinline__ uint32_t pcv_background(const FrameUniforms& f, uint32_t y) {
    if (f.clear_color == f.clear_color_last_row || f.height < 2) return f.clear_color;
    uint32_t h1 = f.height - 1, out = 0;
    for (int c = 0; c < 32; c += 8) {
        uint32_t a = (f.clear_color >> c) & 0xffu, z = (f.clear_color_last_row >> c) & 0xffu;
        out |= ((a * (h1 - y) + z * y + h1 / 2) / h1) << c;
    }
    return out;
}

// View distance of a depth-buffer value d in [0, 1): the inverse of the GL projection's depth mapping,
// w = near * far / (far - d * (far - near)); orthographic, where depth is linear: near + d * (far - near)
// (near there is the distance the host gives the near plane, see Look::post_uniforms).
__device__ __forceinline__ float pcv_view_distance(const PostUniforms& u, uint32_t depth_bits) {
    float d = __uint_as_float(depth_bits);
    if (u.ortho) return __fadd_rn(u.near_m, __fmul_rn(d, u.far_minus_near_m));
    return __fdiv_rn(u.near_far_m2, __fadd_rn(u.far_m, -__fmul_rn(d, u.far_minus_near_m)));
}

// An adaptive point's diameter in pixels at depth bits d, from px, its diameter at a view distance of
// 1 (perspective: px / distance); orthographic, px itself (the host gives the diameter at any depth).
__device__ __forceinline__ float pcv_adaptive_px(const PostUniforms& u, float px, uint32_t depth_bits) {
    return u.ortho ? px : __fdiv_rn(px, pcv_view_distance(u, depth_bits));
}

// How far pixel offset (dx, dy) is from a point's pixel, as the splat's coverage rules compare it with a
// diameter squared: 4 |d|^2 for disks, 4 max(dx^2, dy^2) for squares (a point covers the offset when
// this is at most its diameter squared).
__device__ __forceinline__ int pcv_splat_q(const PostUniforms& u, int dx, int dy) {
    return 4 * (u.splat_square ? max(dx * dx, dy * dy) : dx * dx + dy * dy);
}

// An adaptive point's diameter squared (dm: its spacing seen from its view distance, in pixels), at
// most the window's: 4 R^2, a disk of radius R. Without the cap a point nearer than that would cover its
// whole (2R + 1)^2 window, a square whatever the shape. NaN stays NaN (it covers nothing past its pixel).
__device__ __forceinline__ float pcv_adaptive_diam2(float dm, int r) {
    float d2 = __fmul_rn(dm, dm);
    float cap = (float)(4 * r * r);
    return d2 > cap ? cap : d2;
}

// log2(x) for finite x > 0: the exponent from the bits, then log2(m) of the mantissa m in [1, 2) as
// 2 / ln 2 * atanh((m - 1) / (m + 1)) by its odd series to t^7 (error below 2e-5).
__device__ __forceinline__ float pcv_log2(float x) {
    uint32_t bits = __float_as_uint(x);
    int e = (int)((bits >> 23) & 0xffu) - 127;
    float m = __uint_as_float((bits & 0x007fffffu) | 0x3f800000u);
    float t = __fdiv_rn(__fadd_rn(m, -1.0f), __fadd_rn(m, 1.0f));
    float t2 = __fmul_rn(t, t);
    float p = __fadd_rn(__fmul_rn(t2, 0.14285714f), 0.2f);
    p = __fadd_rn(__fmul_rn(t2, p), 0.33333334f);
    p = __fadd_rn(__fmul_rn(t2, p), 1.0f);
    return __fadd_rn((float)e, __fmul_rn(__fmul_rn(t, p), 2.8853901f));
}

// 2^x for x <= 0 (0 below -126): 2^floor(x) from the bits times 2^f, f in [0, 1), by e^(f ln 2)'s
// series to the 6th power (error below 2e-5).
__device__ __forceinline__ float pcv_exp2_neg(float x) {
    if (!(x > -126.0f)) return 0.0f;
    float n = floorf(x);
    float g = __fmul_rn(__fadd_rn(x, -n), 0.69314718f);
    float p = __fadd_rn(__fmul_rn(g, 0.0013888889f), 0.0083333333f);
    p = __fadd_rn(__fmul_rn(g, p), 0.041666668f);
    p = __fadd_rn(__fmul_rn(g, p), 0.16666667f);
    p = __fadd_rn(__fmul_rn(g, p), 0.5f);
    p = __fadd_rn(__fmul_rn(g, p), 1.0f);
    p = __fadd_rn(__fmul_rn(g, p), 1.0f);
    return __fmul_rn(p, __uint_as_float((uint32_t)((int)n + 127) << 23));
}
