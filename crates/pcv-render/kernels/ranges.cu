// The attribute values the culled modes' filter tests against value ranges (filter.cuh), made when a
// filter first tests that attribute: the values uploaded in the cloud's order (f32, relative to their
// column's base; NaN where a point's file has no such field) are put in the batch table's order
// (pcv_gather_values, through the preprocessing's map `order`: table slot -> uploaded index), and each
// batch's smallest and largest number and count of NaNs are gathered (pcv_batch_ranges: one block a
// batch, reduced in registers, across the warp by shuffles, then across warps in shared memory).
// min and max are exact in any order, so the twin's plain loop gives the same summary.
// CPU twin: src/twins/ranges.rs.
#include "shared.h"

extern "C" __global__ void pcv_gather_values(uint64_t num_points, const uint32_t* __restrict__ order,
                                             const float* __restrict__ src, float* __restrict__ dst) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        dst[i] = src[order[i]];
    }
}

// Launched with a multiple of 32 threads a block, at most 1024.
extern "C" __global__ void pcv_batch_ranges(uint64_t num_points, uint32_t num_batches, const float* __restrict__ values,
                                            BatchRange* __restrict__ out) {
    __shared__ float warp_min[32], warp_max[32];
    __shared__ uint32_t warp_nans[32];
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        float lo = INFINITY, hi = -INFINITY;
        uint32_t nans = 0;
        uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        uint64_t end = min(first + PCV_BATCH_POINTS, num_points);
        for (uint64_t i = first + threadIdx.x; i < end; i += blockDim.x) {
            float v = __ldg(values + i);
            if (v != v) {
                ++nans;
            } else {
                lo = fminf(lo, v);
                hi = fmaxf(hi, v);
            }
        }
        for (int o = 16; o > 0; o >>= 1) {
            lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, o));
            hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, o));
            nans += __shfl_xor_sync(0xffffffffu, nans, o);
        }
        if (lane == 0) {
            warp_min[warp] = lo;
            warp_max[warp] = hi;
            warp_nans[warp] = nans;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            BatchRange r;
            r.min = INFINITY;
            r.max = -INFINITY;
            r.nans = 0;
            r._pad = 0;
            for (uint32_t w = 0; w < warps; ++w) {
                r.min = fminf(r.min, warp_min[w]);
                r.max = fmaxf(r.max, warp_max[w]);
                r.nans += warp_nans[w];
            }
            out[b] = r;
        }
        __syncthreads();
    }
}
