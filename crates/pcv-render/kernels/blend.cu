// High quality (Look's Quality::High): instead of the one nearest point, each pixel shows the mean colour
// of the points near its nearest depth, the published compute rasterizers' "high-quality" mode, for
// anti-aliased images that do not flicker as the camera moves. After the raster stage (and the splat),
// pcv_blend_clear zeroes two 64-bit sums a pixel, the blend pass adds every point within the blend
// window (blend.cuh) — pcv_blend over every point in the vis mode, culled.cu's pcv_blend_list over the
// batches in view in the culled modes —, and pcv_blend_resolve writes each pixel's mean, rounded to
// nearest, or, where no point blended (a pixel only a larger point's disk covers, or none), what
// pcv_vis_resolve writes. CPU twin: src/twins/blend.rs.
#include "project.cuh"
#include "blend.cuh"

extern "C" __global__ void pcv_blend_clear(FrameUniforms f, unsigned long long* __restrict__ accum) {
    uint32_t n = 2 * f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) accum[i] = 0ull;
}

extern "C" __global__ void pcv_blend(FrameUniforms f, PostUniforms u, const float* __restrict__ positions, uint64_t num_points,
                                     const uint32_t* __restrict__ colors, const unsigned long long* __restrict__ vis,
                                     unsigned long long* __restrict__ accum) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float x = __ldg(positions + 3 * i), y = __ldg(positions + 3 * i + 1), z = __ldg(positions + 3 * i + 2);
        uint32_t px, py, d;
        if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
        pcv_blend_at(f, u, px, py, d, __ldg(colors + i), vis, accum);
    }
}

extern "C" __global__ void pcv_blend_resolve(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                             const uint32_t* __restrict__ colors, const unsigned long long* __restrict__ accum,
                                             uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        unsigned long long rg = accum[2 * (size_t)i], bn = accum[2 * (size_t)i + 1];
        uint32_t count = (uint32_t)(bn >> 32);
        if (count != 0) {
            unsigned long long half = count / 2;
            uint32_t r = (uint32_t)(((rg & 0xffffffffull) + half) / count);
            uint32_t g = (uint32_t)(((rg >> 32) + half) / count);
            uint32_t b = (uint32_t)(((bn & 0xffffffffull) + half) / count);
            color[i] = r | (g << 8) | (b << 16) | 0xff000000u;
            continue;
        }
        unsigned long long idx = PCV_WORD_PAYLOAD(vis[i]);
        color[i] = idx == PCV_EMPTY_PAYLOAD ? pcv_background(f, i / f.width) : __ldg(colors + idx);
    }
}
