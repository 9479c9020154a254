// Visibility-buffer mode: one 64-bit atomic min per point of (depth bits << 32 | point index) into a
// visibility buffer, reading only the point's position (12-byte records, kernels/preprocess.cu's
// `positions`); then a resolve that reads the color of the one visible point of each pixel. The
// nearest point wins as in the reference; at an exact depth tie the smaller index wins. A plain load
// first skips the atomic when the point cannot win (the early depth test). Needs fewer than 2^32 - 1
// points (index 0xffffffff marks an empty pixel). CPU twin: src/render/cpu/vis.rs.
#include "project.cuh"
#include "post.cuh"

#define PCV_EMPTY_INDEX 0xffffffffu

extern "C" __global__ void pcv_vis_clear(FrameUniforms f, unsigned long long* __restrict__ vis) {
    uint32_t n = f.width * f.height;
    unsigned long long v = (0x3f800000ull << 32) | PCV_EMPTY_INDEX;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) vis[i] = v;
}

extern "C" __global__ void pcv_vis(FrameUniforms f, const float* __restrict__ positions, uint64_t num_points,
                                   unsigned long long* __restrict__ vis) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float x = __ldg(positions + 3 * i), y = __ldg(positions + 3 * i + 1), z = __ldg(positions + 3 * i + 2);
        uint32_t px, py, d;
        if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
        unsigned long long v = ((unsigned long long)d << 32) | (uint32_t)i;
        unsigned long long* cell = vis + (size_t)py * f.width + px;
        if (v < *cell) atomicMin(cell, v);
    }
}

extern "C" __global__ void pcv_vis_resolve(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                           const uint32_t* __restrict__ colors, uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint32_t idx = (uint32_t)vis[i];
        color[i] = idx == PCV_EMPTY_INDEX ? pcv_background(f, i / f.width) : __ldg(colors + idx);
    }
}
