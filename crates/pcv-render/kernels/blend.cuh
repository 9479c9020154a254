// High quality's per-point step, in one place (kernels/blend.cu draws every point with it, culled.cu's
// pcv_blend_list the batches in view). CPU twin: src/twins/blend.rs (`blend_at`).
//
// A point at pixel (px, py) with depth bits d blends when its view distance is at most
// u.blend_window times the view distance of the pixel's final nearest depth (the visibility buffer
// after the raster stage and the splat): it adds its red and green to the pixel's first 64-bit sum
// (red in the low 32 bits, green in the high) and its blue and a count of 1 to the second. Integer
// sums do not depend on the order the atomics land in, so the twin's sums are the same to the bit
// (a channel's sum overflows 32 bits only past 16 million points on one pixel).
#pragma once
#include "shared.h"
#include "post.cuh"
#include "batch.cuh"

// The culled modes' blend skips a batch whose every point lies past the blend window of the pixels it can
// reach: its nearest view distance beyond u.blend_window times the farthest final depth's under its
// rectangle, in a depth pyramid built from the final buffer (hzb.cu). A margin of 1e-4 covers the
// rounding of the distances, so no point that the per-point test would blend is skipped.
__device__ __forceinline__ bool pcv_batch_beyond_window(const FrameUniforms& f, const PostUniforms& u, const HzbParams& h,
                                                        const Batch& b, const uint32_t* __restrict__ hzb) {
    float d_low;
    uint32_t hmax;
    if (!pcv_batch_under_pyramid(f, h, b, hzb, &d_low, &hmax)) return false;
    float window = __fmul_rn(u.blend_window, 1.0001f);
    return pcv_view_distance(u, __float_as_uint(d_low)) > __fmul_rn(pcv_view_distance(u, hmax), window);
}

__device__ __forceinline__ void pcv_blend_at(const FrameUniforms& f, const PostUniforms& u, uint32_t px, uint32_t py,
                                             uint32_t d, uint32_t color, const unsigned long long* __restrict__ vis,
                                             unsigned long long* __restrict__ accum) {
    const size_t pixel = (size_t)py * f.width + px;
    const uint32_t nearest = PCV_WORD_DEPTH(vis[pixel]);
    if (d > nearest) {
        float w = pcv_view_distance(u, d);
        float w_near = pcv_view_distance(u, nearest);
        if (!(w <= __fmul_rn(w_near, u.blend_window))) return;
    }
    unsigned long long rg = (unsigned long long)(color & 0xffu) | ((unsigned long long)((color >> 8) & 0xffu) << 32);
    unsigned long long bn = (unsigned long long)((color >> 16) & 0xffu) | (1ull << 32);
    atomicAdd(accum + 2 * pixel, rg);
    atomicAdd(accum + 2 * pixel + 1, bn);
}
