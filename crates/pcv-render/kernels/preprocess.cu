// Preprocessing at upload, on the GPU: a bucket sort of the points by a coarse 3D grid cell in Morton
// order (histogram with atomics, an exclusive scan on the host, scatter), then the sorted points split
// into positions (12-byte records) and colors, cut into batches of PCV_BATCH_POINTS with a bounding
// box each, and quantized to 3 x 10 bits relative to their batch's box. Points keep no order inside a
// bucket (the scatter's atomics decide it). CPU twin: src/twins/preprocess.rs.
#include "shared.h"

__device__ __forceinline__ uint32_t pcv_spread3(uint32_t v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

__device__ __forceinline__ uint32_t pcv_cell_key(const GridParams& g, float x, float y, float z) {
    uint32_t last = (1u << (3 * g.bits)) - 1u;
    if (!(isfinite(x) && isfinite(y) && isfinite(z))) return last;
    float cmax = (float)((1u << g.bits) - 1u);
    float p[3] = {x, y, z};
    uint32_t key = 0;
    for (int k = 0; k < 3; ++k) {
        float c = floorf(__fmul_rn(__fadd_rn(p[k], -g.origin[k]), g.inv_cell));
        c = fminf(fmaxf(c, 0.0f), cmax);
        key |= pcv_spread3((uint32_t)c) << k;
    }
    return key;
}

extern "C" __global__ void pcv_cell_hist(GridParams g, const Point* __restrict__ points, uint32_t* __restrict__ hist) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(points) + i);
        atomicAdd(hist + pcv_cell_key(g, p.x, p.y, p.z), 1u);
    }
}

// `cursor` starts as the exclusive scan of the histogram; each point takes the next slot of its bucket,
// and `order` records which uploaded point went to each slot (for picking: slot -> the cloud's index).
extern "C" __global__ void pcv_cell_scatter(GridParams g, const Point* __restrict__ src, uint32_t* __restrict__ cursor,
                                            Point* __restrict__ dst, uint32_t* __restrict__ order) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(src) + i);
        uint32_t slot = atomicAdd(cursor + pcv_cell_key(g, p.x, p.y, p.z), 1u);
        reinterpret_cast<float4*>(dst)[slot] = p;
        order[slot] = (uint32_t)i;
    }
}

// positions[3i..3i+3] = point i's x, y, z; colors[i] = its RGBA8 word.
extern "C" __global__ void pcv_split(uint64_t num_points, const Point* __restrict__ points, float* __restrict__ positions,
                                     uint32_t* __restrict__ colors) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        float4 p = __ldg(reinterpret_cast<const float4*>(points) + i);
        positions[3 * i + 0] = p.x;
        positions[3 * i + 1] = p.y;
        positions[3 * i + 2] = p.z;
        colors[i] = __float_as_uint(p.w);
    }
}

// One block per batch (grid-stride over batches): min and max of the finite coordinates (fminf and
// fmaxf skip NaN; infinities stay and make the box infinite), then the quantization step.
extern "C" __global__ void pcv_batch_bounds(uint64_t num_points, const float* __restrict__ positions,
                                            Batch* __restrict__ batches, uint32_t num_batches) {
    __shared__ float red[6][256];
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        uint64_t end = min(first + PCV_BATCH_POINTS, num_points);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (uint64_t i = first + threadIdx.x; i < end; i += blockDim.x) {
            for (int k = 0; k < 3; ++k) {
                float v = __ldg(positions + 3 * i + k);
                lo[k] = fminf(lo[k], v);
                hi[k] = fmaxf(hi[k], v);
            }
        }
        for (int k = 0; k < 3; ++k) { red[k][threadIdx.x] = lo[k]; red[3 + k][threadIdx.x] = hi[k]; }
        __syncthreads();
        for (uint32_t s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) {
                for (int k = 0; k < 3; ++k) {
                    red[k][threadIdx.x] = fminf(red[k][threadIdx.x], red[k][threadIdx.x + s]);
                    red[3 + k][threadIdx.x] = fmaxf(red[3 + k][threadIdx.x], red[3 + k][threadIdx.x + s]);
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            Batch out;
            for (int k = 0; k < 3; ++k) {
                float l = red[k][0], h = red[3 + k][0];
                if (!(l <= h)) { l = 0.0f; h = 0.0f; }  // no finite coordinate at all
                out.min[k] = l;
                out.max[k] = h;
                out.scale[k] = __fdiv_rn(__fadd_rn(h, -l), 1023.0f);
            }
            out.num_points = (uint32_t)(end - first);
            batches[b] = out;
        }
        __syncthreads();
    }
}

// quant[i] = x | y << 10 | z << 20, each the nearest of 1024 steps over its batch's box.
__device__ __forceinline__ uint32_t pcv_quantize_coord(float v, float lo, float scale) {
    float t = __fdiv_rn(__fadd_rn(v, -lo), scale);
    if (!(t >= 0.0f)) t = 0.0f;  // NaN (0/0, a non-finite point) and rounding below 0
    return min((uint32_t)fminf(floorf(__fadd_rn(t, 0.5f)), 1023.0f), 1023u);
}

extern "C" __global__ void pcv_quantize(uint64_t num_points, const float* __restrict__ positions,
                                        const Batch* __restrict__ batches, uint32_t* __restrict__ quant) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        const Batch& b = batches[i / PCV_BATCH_POINTS];
        uint32_t w = 0;
        for (int k = 0; k < 3; ++k) w |= pcv_quantize_coord(__ldg(positions + 3 * i + k), b.min[k], b.scale[k]) << (10 * k);
        quant[i] = w;
    }
}
