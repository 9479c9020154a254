// Packed single pass (issue 5's first step): one 64-bit atomic min per point of PCV_WORD(depth bits, RGBA8)
// into a visibility buffer, then a resolve pass that keeps the low 32 bits. The nearest point wins as in
// the three-pass reference; at an exact depth tie the smaller color word wins, so the image is
// deterministic. A plain load first skips the atomic when the point cannot win (the early depth test).
// CPU twin: src/twins/packed.rs.
#include "project.cuh"
#include "post.cuh"

extern "C" __global__ void pcv_packed_clear(FrameUniforms f, unsigned long long* __restrict__ vis) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        vis[i] = PCV_WORD(PCV_FAR_DEPTH_BITS, pcv_background(f, i / f.width));
    }
}

extern "C" __global__ void pcv_packed(FrameUniforms f, const Point* __restrict__ points, uint64_t num_points,
                                      unsigned long long* __restrict__ vis) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(points) + i);
        uint32_t px, py, d;
        if (!pcv_project(f, p.x, p.y, p.z, &px, &py, &d)) continue;
        unsigned long long v = PCV_WORD(d, __float_as_uint(p.w));
        unsigned long long* cell = vis + (size_t)py * f.width + px;
        if (v < *cell) atomicMin(cell, v);
    }
}

extern "C" __global__ void pcv_packed_resolve(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                              uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) color[i] = (uint32_t)PCV_WORD_PAYLOAD(vis[i]);
}
