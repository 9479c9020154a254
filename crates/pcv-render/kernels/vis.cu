// Visibility-buffer mode: one 64-bit atomic min per point of PCV_WORD(depth bits, point index) into a
// visibility buffer, reading only the point's position (12-byte records, kernels/preprocess.cu's
// `positions`); then a resolve that reads the color of the one visible point of each pixel. The
// nearest point wins as in the reference; at an exact depth tie the smaller index wins. A plain load
// first skips the atomic when the point cannot win (the early depth test). Point indices take 34 bits
// (PCV_EMPTY_PAYLOAD marks an empty pixel; shared.h). CPU twin: src/twins/vis.rs.
#include "project.cuh"
#include "post.cuh"

extern "C" __global__ void pcv_vis_clear(FrameUniforms f, unsigned long long* __restrict__ vis) {
    uint32_t n = f.width * f.height;
    unsigned long long v = PCV_WORD(PCV_FAR_DEPTH_BITS, PCV_EMPTY_PAYLOAD);
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) vis[i] = v;
}

extern "C" __global__ void pcv_vis(FrameUniforms f, const float* __restrict__ positions, uint64_t num_points,
                                   unsigned long long* __restrict__ vis) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float x = __ldg(positions + 3 * i), y = __ldg(positions + 3 * i + 1), z = __ldg(positions + 3 * i + 2);
        uint32_t px, py, d;
        if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
        unsigned long long v = PCV_WORD(d, i);
        unsigned long long* cell = vis + (size_t)py * f.width + px;
        if (v < *cell) atomicMin(cell, v);
    }
}

extern "C" __global__ void pcv_vis_resolve(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                           const uint32_t* __restrict__ colors, uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        unsigned long long idx = PCV_WORD_PAYLOAD(vis[i]);
        color[i] = idx == PCV_EMPTY_PAYLOAD ? pcv_background(f, i / f.width) : __ldg(colors + idx);
    }
}

// Point size the other way, for comparison with the splat post pass (kernels/splat.cu): each point
// takes the atomic min over every pixel of its own disk (fixed diameter N, or adaptive: the cloud's
// point spacing at the point's view distance), up to (2R + 1)^2 atomics a point instead of one. Hidden
// points grow too (unlike the post pass, which grows only the points left visible), so the image
// differs from the splat's where a hidden point's disk reaches past its occluder. CPU twin:
// src/twins/vis.rs (`vis_disk`).
extern "C" __global__ void pcv_vis_disk(FrameUniforms f, PostUniforms u, const float* __restrict__ positions,
                                        uint64_t num_points, unsigned long long* __restrict__ vis) {
    const int r = (int)min(u.splat_radius_px, PCV_SPLAT_MAX_RADIUS);
    const int n2 = (int)(u.splat_diameter_px * u.splat_diameter_px);
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float x = __ldg(positions + 3 * i), y = __ldg(positions + 3 * i + 1), z = __ldg(positions + 3 * i + 2);
        uint32_t px, py, d;
        if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
        unsigned long long v = PCV_WORD(d, i);
        float dm2 = 0.0f;
        if (u.splat_diameter_px == 0 && d < PCV_FAR_DEPTH_BITS) {
            float dm = pcv_adaptive_px(u, u.adaptive_px_at_1m, d);
            dm2 = pcv_adaptive_diam2(dm, r);
        }
        for (int dy = -r; dy <= r; ++dy) {
            int cy = (int)py + dy;
            if (cy < 0 || cy >= (int)f.height) continue;
            for (int dx = -r; dx <= r; ++dx) {
                int cx = (int)px + dx;
                if (cx < 0 || cx >= (int)f.width) continue;
                int q = pcv_splat_q(u, dx, dy);
                bool covers = u.splat_diameter_px != 0 ? q <= n2 : (q == 0 || (float)q <= dm2);
                if (!covers) continue;
                unsigned long long* cell = vis + (size_t)cy * f.width + cx;
                if (v < *cell) atomicMin(cell, v);
            }
        }
    }
}
