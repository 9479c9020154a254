// Per-batch decisions, in one place: the frustum test of a batch's box, the occlusion test against the
// depth pyramid, and whether its 10-bit quantized coordinates are precise enough this frame. CPU twin:
// src/twins/batch.rs.
//
// All are conservative: a culled or occluded batch has no point that could win a pixel, and a batch
// decoded from 10 bits moves none of its points by more than half a pixel on screen. Float operations are
// round-to-nearest intrinsics in the twin's order, so both backends decide the same.
#pragma once
#include "project.cuh"

// Screen-space row r (project.cuh's rows) at the box corner picked by `corner` (bit k: max on axis k).
__device__ __forceinline__ float pcv_corner_row(const float* m, int r, const Batch& b, int corner) {
    float x = (corner & 1) ? b.max[0] : b.min[0];
    float y = (corner & 2) ? b.max[1] : b.min[1];
    float z = (corner & 4) ? b.max[2] : b.min[2];
    return pcv_row(m, r, x, y, z);
}

// True when every corner of the box lies outside one of the view's six planes (x < 0, x > width * w,
// y < 0, y > height * w, z < 0, z > w in the rows of project.cuh) by a margin that covers float rounding
// (1e-5 of the corner's row magnitudes): no point of the box can then pass pcv_project's test. NaN
// never culls.
__device__ __forceinline__ bool pcv_batch_culled(const FrameUniforms& f, const Batch& b) {
    const float* m = f.screen_from_world;
    const float wd = (float)f.width, ht = (float)f.height;
    uint32_t out_all = 0x3f;  // bit per plane: x < 0, x > W w, y < 0, y > H w, z < 0, z > w
    for (int c = 0; c < 8; ++c) {
        float sx = pcv_corner_row(m, 0, b, c);
        float sy = pcv_corner_row(m, 1, b, c);
        float sz = pcv_corner_row(m, 2, b, c);
        float sw = pcv_corner_row(m, 3, b, c);
        float mag = __fadd_rn(__fadd_rn(fabsf(sx), fabsf(sy)), __fadd_rn(fabsf(sz), __fmul_rn(fabsf(sw), __fadd_rn(__fadd_rn(wd, ht), 1.0f))));
        float mx = __fmul_rn(mag, 1e-5f);
        uint32_t out = 0;
        out |= (-sx > mx) ? 1u : 0u;
        out |= (__fmaf_rn(-wd, sw, sx) > mx) ? 2u : 0u;
        out |= (-sy > mx) ? 4u : 0u;
        out |= (__fmaf_rn(-ht, sw, sy) > mx) ? 8u : 0u;
        out |= (-sz > mx) ? 16u : 0u;
        out |= (__fadd_rn(sz, -sw) > mx) ? 32u : 0u;
        out_all &= out;
    }
    return out_all != 0;
}

// Whether decoding this batch from 10 bits moves no point by more than half a pixel this frame.
//
// A point p of the box moves by d (|d_k| <= 0.5001 * scale_k plus the decode's rounding). Its pixel x
// (row 0 over row 3 of project.cuh) moves by (r0.d - x * r3.d) / w(p + d), at most
// (sum_k (|r0_k| + width |r3_k|) |d_k|) / w_min for a point in the view (0 <= x < width), where w_min
// is the smallest w over the box (a corner's); likewise for y. Batches that reach w <= 0 keep full
// precision.
__device__ __forceinline__ bool pcv_batch_quantized_ok(const FrameUniforms& f, const Batch& b) {
    const float* m = f.screen_from_world;
    const float wd = (float)f.width, ht = (float)f.height;
    float w_min = m[15];
    float ex = 0.0f, ey = 0.0f;
    for (int k = 0; k < 3; ++k) {
        float r3 = m[4 * k + 3];
        w_min = __fadd_rn(w_min, fminf(__fmul_rn(r3, b.min[k]), __fmul_rn(r3, b.max[k])));
        // |d_k|: half a step (and the quantizer's rounding), plus two ulps of the coordinate for the decode.
        float mag = fmaxf(fabsf(b.min[k]), fabsf(b.max[k]));
        float d = __fadd_rn(__fmul_rn(b.scale[k], 0.5001f), __fmul_rn(mag, 2.384185791015625e-7f));  // 2^-22
        ex = __fadd_rn(ex, __fmul_rn(__fadd_rn(fabsf(m[4 * k + 0]), __fmul_rn(wd, fabsf(r3))), d));
        ey = __fadd_rn(ey, __fmul_rn(__fadd_rn(fabsf(m[4 * k + 1]), __fmul_rn(ht, fabsf(r3))), d));
    }
    // A 1% margin on w_min for its own rounding.
    float half_w = __fmul_rn(__fmul_rn(w_min, 0.99f), 0.5f);
    return w_min > 0.0f && ex <= half_w && ey <= half_w;
}

// How far a computed depth (project.cuh) of a point of the box can be from the exact row 2 / row 3, twice
// (for a point and a corner): each row is three FMAs, each rounding by at most u = 2^-24 of a partial
// sum, so row r is off by at most 3u S_r, S_r = the sum of its terms' magnitudes over the box; the depth
// z / w then by 3u (S_2 + S_3) / w + 2u (d < 1, the reciprocal and the product rounding once each).
// Twice that, with 8u for 6u and 4u to cover the rounding of this bound itself.
__device__ __forceinline__ float pcv_depth_rounding(const FrameUniforms& f, const Batch& b, float w_min) {
    const float* m = f.screen_from_world;
    float s = __fadd_rn(fabsf(m[14]), fabsf(m[15]));
    for (int k = 0; k < 3; ++k) {
        float a = fmaxf(fabsf(b.min[k]), fabsf(b.max[k]));
        s = __fadd_rn(s, __fmul_rn(__fadd_rn(fabsf(m[4 * k + 2]), fabsf(m[4 * k + 3])), a));
    }
    const float u8 = 4.76837158203125e-7f;  // 8 * 2^-24
    return __fmul_rn(__fadd_rn(__fdiv_rn(s, w_min), 1.0f), u8);
}

// True when no point of the box can win a pixel against the depth pyramid `hzb` (hzb.cu): every point
// of the box lies behind the largest depth stored under the box's screen rectangle. The box's depth can
// only be bounded from its corners when all lie in front of the camera; its points' depths are at
// least the smallest corner depth (depth = row 2 / row 3 is linear-fractional, so its minimum over a box
// is at a corner) less a margin for the rounding of both (pcv_depth_rounding). The rectangle is the corners' pixels widened by one pixel; the pyramid level is the
// finest at which it spans at most 8 x 8 cells (fewer, coarser cells reach past the batch's silhouette
// into empty pixels, whose depth 1.0 hides nothing). Strictly behind: a point at exactly the stored depth
// could still win a tie, so it is never culled.
//
// pcv_batch_under_pyramid is the comparison's first half: the box's lowered nearest depth in *d_low and
// the largest pyramid depth under its rectangle in *hmax, or false where the box cannot be compared.
__device__ __forceinline__ bool pcv_batch_under_pyramid(const FrameUniforms& f, const HzbParams& h, const Batch& b,
                                                        const uint32_t* __restrict__ hzb, float* d_low_out,
                                                        uint32_t* hmax_out) {
    const float* m = f.screen_from_world;
    float xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY, dmin = INFINITY, wmin = INFINITY;
    for (int c = 0; c < 8; ++c) {
        float sw = pcv_corner_row(m, 3, b, c);
        if (!(sw > 0.0f)) return false;
        float inv_w = __frcp_rn(sw);
        float sx = __fmul_rn(pcv_corner_row(m, 0, b, c), inv_w);
        float sy = __fmul_rn(pcv_corner_row(m, 1, b, c), inv_w);
        float d = __fmul_rn(pcv_corner_row(m, 2, b, c), inv_w);
        xmin = fminf(xmin, sx); xmax = fmaxf(xmax, sx);
        ymin = fminf(ymin, sy); ymax = fmaxf(ymax, sy);
        dmin = fminf(dmin, d);
        wmin = fminf(wmin, sw);
    }
    float d_low = __fadd_rn(dmin, -pcv_depth_rounding(f, b, wmin));
    if (!(d_low > 0.0f)) return false;
    float x0 = fmaxf(__fadd_rn(floorf(xmin), -1.0f), 0.0f), x1 = fminf(__fadd_rn(floorf(xmax), 1.0f), (float)(f.width - 1));
    float y0 = fmaxf(__fadd_rn(floorf(ymin), -1.0f), 0.0f), y1 = fminf(__fadd_rn(floorf(ymax), 1.0f), (float)(f.height - 1));
    if (!(x0 <= x1 && y0 <= y1)) return false;
    uint32_t ix0 = (uint32_t)x0, ix1 = (uint32_t)x1, iy0 = (uint32_t)y0, iy1 = (uint32_t)y1;
    uint32_t l = 0;
    const uint32_t t = PCV_HZB_TILE_LOG2;
    while (l + 1 < h.levels && (((ix1 >> (t + l)) - (ix0 >> (t + l))) > 7 || ((iy1 >> (t + l)) - (iy0 >> (t + l))) > 7)) ++l;
    uint32_t cx0 = ix0 >> (t + l), cx1 = min(ix1 >> (t + l), h.width[l] - 1);
    uint32_t cy0 = iy0 >> (t + l), cy1 = min(iy1 >> (t + l), h.height[l] - 1);
    uint32_t hmax = 0;
    for (uint32_t cy = cy0; cy <= cy1; ++cy)
        for (uint32_t cx = cx0; cx <= cx1; ++cx) hmax = max(hmax, hzb[h.offset[l] + cy * h.width[l] + cx]);
    *d_low_out = d_low;
    *hmax_out = hmax;
    return true;
}

__device__ __forceinline__ bool pcv_batch_occluded(const FrameUniforms& f, const HzbParams& h, const Batch& b,
                                                   const uint32_t* __restrict__ hzb) {
    float d_low;
    uint32_t hmax;
    return pcv_batch_under_pyramid(f, h, b, hzb, &d_low, &hmax) && d_low > __uint_as_float(hmax);
}

// Decodes coordinate k of a quantized word (x in bits 0-9, y in 10-19, z in 20-29).
__device__ __forceinline__ float pcv_dequantize(const Batch& b, uint32_t word, int k) {
    uint32_t q = (word >> (10 * k)) & 1023u;
    return __fmaf_rn((float)q, b.scale[k], b.min[k]);
}
