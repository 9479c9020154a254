// Points that live in someone else's arrays (Python's CuPy, PyTorch, Numba, JAX arrays; see
// src/external.rs): the `vis` mode reading them where they are, whatever their strides and
// colour format, with no copy. CPU twin: src/twins/external.rs.
//
// Every array is a base pointer (its element [0, 0]) and two signed strides in bytes, row (point to
// point) and column (coordinate or channel); the host checked alignment and extents. Positions are
// float32 x, y, z (a fourth column is ignored). Packed C-contiguous (N, 3) positions go through
// kernels/vis.cu's pcv_vis itself; `pcv_vis_strided` is the same pass for any other layout, reading the
// three coordinates at their strides. Colours are read by the resolve only for the visible point of
// each pixel (a few million reads a frame, not one per point), so every colour format is read in place
// too: `pcv_ext_resolve` converts uint8 (N, 3)/(N, 4), packed RGBA8 words (N,) and float (N, 3)/(N, 4)
// in 0..1 to the frame's RGBA8 as it reads them. `pcv_pack_positions` makes packed (N, 3) positions
// from any layout, for the point-size-by-scatter pass (vis.cu's pcv_vis_disk reads packed ones only).
// `pcv_ext_bounds` finds the box of the finite points (for the camera's planes and framing), and
// `pcv_depth_out` copies a frame's depth out of the visibility buffer into a caller's array.
#include "project.cuh"
#include "post.cuh"

// Colour formats of pcv_ext_resolve (ColorKind in src/external.rs).
#define PCV_COLOR_CONSTANT 0u  // no array: every point has `constant`
#define PCV_COLOR_RGBA32 1u    // one RGBA8 word a point, r in the low byte
#define PCV_COLOR_U8X3 2u      // r, g, b bytes; alpha 255
#define PCV_COLOR_U8X4 3u      // r, g, b, a bytes
#define PCV_COLOR_F32X3 4u     // r, g, b floats in 0..1; alpha 255
#define PCV_COLOR_F32X4 5u     // r, g, b, a floats in 0..1

__device__ __forceinline__ float pcv_ext_f32(const char* p) { return __ldg((const float*)p); }

// A 0..1 float as 0..255: v * 255 rounded half away from zero, clamped; NaN is 0. In double, as the
// file loaders do (src/cloud/formats/mod.rs `color_from_unit`).
__device__ __forceinline__ uint32_t pcv_unit_to_u8(float v) {
    double d = round(__dmul_rn((double)v, 255.0));
    if (!(d > 0.0)) return 0u;
    return d >= 255.0 ? 255u : (uint32_t)d;
}

// The RGBA8 colour of point `i`.
__device__ __forceinline__ uint32_t pcv_ext_color(const char* colors, int64_t row, int64_t col, uint32_t kind,
                                                  uint32_t constant, uint64_t i) {
    const char* p = colors + (int64_t)i * row;
    switch (kind) {
        case PCV_COLOR_RGBA32: return __ldg((const uint32_t*)p);
        case PCV_COLOR_U8X3:
            return (uint32_t)(uint8_t)__ldg(p) | (uint32_t)(uint8_t)__ldg(p + col) << 8 |
                   (uint32_t)(uint8_t)__ldg(p + 2 * col) << 16 | 0xff000000u;
        case PCV_COLOR_U8X4:
            return (uint32_t)(uint8_t)__ldg(p) | (uint32_t)(uint8_t)__ldg(p + col) << 8 |
                   (uint32_t)(uint8_t)__ldg(p + 2 * col) << 16 | (uint32_t)(uint8_t)__ldg(p + 3 * col) << 24;
        case PCV_COLOR_F32X3:
            return pcv_unit_to_u8(pcv_ext_f32(p)) | pcv_unit_to_u8(pcv_ext_f32(p + col)) << 8 |
                   pcv_unit_to_u8(pcv_ext_f32(p + 2 * col)) << 16 | 0xff000000u;
        case PCV_COLOR_F32X4:
            return pcv_unit_to_u8(pcv_ext_f32(p)) | pcv_unit_to_u8(pcv_ext_f32(p + col)) << 8 |
                   pcv_unit_to_u8(pcv_ext_f32(p + 2 * col)) << 16 | pcv_unit_to_u8(pcv_ext_f32(p + 3 * col)) << 24;
        default: return constant;
    }
}

// kernels/vis.cu's pcv_vis over strided positions: point i's coordinates are the floats at
// positions + i * row + k * col, k = 0, 1, 2.
extern "C" __global__ void pcv_vis_strided(FrameUniforms f, const char* __restrict__ positions, int64_t row, int64_t col,
                                           uint64_t num_points, unsigned long long* __restrict__ vis) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        const char* p = positions + (int64_t)i * row;
        float x = pcv_ext_f32(p), y = pcv_ext_f32(p + col), z = pcv_ext_f32(p + 2 * col);
        uint32_t px, py, d;
        if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
        unsigned long long v = PCV_WORD(d, i);
        unsigned long long* cell = vis + (size_t)py * f.width + px;
        if (v < *cell) atomicMin(cell, v);
    }
}

// kernels/vis.cu's pcv_vis_resolve reading the visible point's colour from the caller's array.
extern "C" __global__ void pcv_ext_resolve(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                           const char* __restrict__ colors, int64_t row, int64_t col, uint32_t kind,
                                           uint32_t constant, uint32_t* __restrict__ color) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        unsigned long long idx = PCV_WORD_PAYLOAD(vis[i]);
        color[i] = idx == PCV_EMPTY_PAYLOAD ? pcv_background(f, i / f.width)
                                          : pcv_ext_color(colors, row, col, kind, constant, idx);
    }
}

// Packed (N, 3) positions from any layout.
extern "C" __global__ void pcv_pack_positions(uint64_t num_points, const char* __restrict__ positions, int64_t row,
                                              int64_t col, float* __restrict__ packed) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        const char* p = positions + (int64_t)i * row;
        packed[3 * i] = pcv_ext_f32(p);
        packed[3 * i + 1] = pcv_ext_f32(p + col);
        packed[3 * i + 2] = pcv_ext_f32(p + 2 * col);
    }
}

// A float as a key that orders like the float (negative values reversed): min and max of keys are
// min and max of the floats, and integer atomics take them.
__device__ __forceinline__ uint32_t pcv_order_key(float v) {
    uint32_t b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The box of the points whose three coordinates are finite: keys[0..3] take the atomic min of the
// keys of x, y, z and keys[3..6] the atomic max (the host sets them to 0xffffffff and 0 first). Each
// thread folds its points, each block reduces its threads (exactly 256) in shared memory, and one
// thread of each block does the six atomics.
extern "C" __global__ void pcv_ext_bounds(uint64_t num_points, const char* __restrict__ positions, int64_t row,
                                          int64_t col, uint32_t* __restrict__ keys) {
    __shared__ uint32_t lo[3][256], hi[3][256];
    uint32_t l[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, h[3] = {0u, 0u, 0u};
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        const char* p = positions + (int64_t)i * row;
        float v[3] = {pcv_ext_f32(p), pcv_ext_f32(p + col), pcv_ext_f32(p + 2 * col)};
        if (!(isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]))) continue;
        for (int k = 0; k < 3; ++k) {
            uint32_t key = pcv_order_key(v[k]);
            l[k] = min(l[k], key);
            h[k] = max(h[k], key);
        }
    }
    for (int k = 0; k < 3; ++k) {
        lo[k][threadIdx.x] = l[k];
        hi[k][threadIdx.x] = h[k];
    }
    __syncthreads();
    for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            for (int k = 0; k < 3; ++k) {
                lo[k][threadIdx.x] = min(lo[k][threadIdx.x], lo[k][threadIdx.x + s]);
                hi[k][threadIdx.x] = max(hi[k][threadIdx.x], hi[k][threadIdx.x + s]);
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        for (int k = 0; k < 3; ++k) {
            if (lo[k][0] != 0xffffffffu) atomicMin(keys + k, lo[k][0]);
            if (hi[k][0] != 0u) atomicMax(keys + 3 + k, hi[k][0]);
        }
    }
}

// The depth of each pixel (float bits in [0, 1]; 1 where no point landed) into `out`: from a 32-bit
// depth buffer (`words` 0, the reference's) or from a visibility buffer's 64-bit words (`words` 1).
extern "C" __global__ void pcv_depth_out(uint64_t num_pixels, const void* __restrict__ depth, uint32_t words,
                                         uint32_t* __restrict__ out) {
    uint64_t grid = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_pixels; i += grid) {
        out[i] = words ? PCV_WORD_DEPTH(static_cast<const unsigned long long*>(depth)[i]) : static_cast<const uint32_t*>(depth)[i];
    }
}
