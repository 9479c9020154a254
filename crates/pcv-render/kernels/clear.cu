// Clear pass: depth to 1.0 (the far plane), color to the background (solid, or a vertical gradient). CPU twin: src/twins/clear.rs.
#include "post.cuh"

extern "C" __global__ void pcv_clear(FrameUniforms f, uint32_t* __restrict__ depth, uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        depth[i] = 0x3f800000u;  // 1.0f
        color[i] = pcv_background(f, i / f.width);
    }
}
