// Depth pass: every point that projects into the viewport takes an atomic min of its depth bits on its
// pixel. A plain load first skips the atomic when the point cannot win (the early depth test); the
// result is the same. CPU twin: src/twins/depth.rs.
#include "project.cuh"

extern "C" __global__ void pcv_depth(FrameUniforms f, const Point* __restrict__ points, uint64_t num_points,
                                     uint32_t* __restrict__ depth) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(points) + i);
        uint32_t px, py, d;
        if (!pcv_project(f, p.x, p.y, p.z, &px, &py, &d)) continue;
        uint32_t* cell = depth + (size_t)py * f.width + px;
        if (d < *cell) atomicMin(cell, d);
    }
}
