// Color pass: a point whose depth bits equal its pixel's stored depth writes its color there. Where two
// points share one depth exactly, either may win (the order is the hardware's). CPU twin:
// src/twins/color.rs.
#include "project.cuh"

extern "C" __global__ void pcv_color(FrameUniforms f, const Point* __restrict__ points, uint64_t num_points,
                                     const uint32_t* __restrict__ depth, uint32_t* __restrict__ color) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(points) + i);
        uint32_t px, py, d;
        if (!pcv_project(f, p.x, p.y, p.z, &px, &py, &d)) continue;
        size_t cell = (size_t)py * f.width + px;
        if (depth[cell] == d) color[cell] = __float_as_uint(p.w);
    }
}
