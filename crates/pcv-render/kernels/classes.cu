// The class codes the culled modes' filter reads (filter.cuh), made when a filter first hides a class:
// the codes uploaded in the cloud's order are put in the batch table's order (pcv_gather_classes, through
// the preprocessing's map `order`: table slot -> uploaded index), and each batch's set of codes is
// gathered (pcv_batch_classes: one block a batch, OR-ed in shared memory). CPU twin: src/twins/classes.rs.
#include "shared.h"

extern "C" __global__ void pcv_gather_classes(uint64_t num_points, const uint32_t* __restrict__ order,
                                              const uint8_t* __restrict__ src, uint8_t* __restrict__ dst) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < num_points; i += stride) {
        dst[i] = src[order[i]];
    }
}

extern "C" __global__ void pcv_batch_classes(uint64_t num_points, uint32_t num_batches, const uint8_t* __restrict__ classes,
                                             BatchClasses* __restrict__ out) {
    __shared__ uint32_t bits[8];
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        if (threadIdx.x < 8) bits[threadIdx.x] = 0;
        __syncthreads();
        uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        uint64_t end = min(first + PCV_BATCH_POINTS, num_points);
        for (uint64_t i = first + threadIdx.x; i < end; i += blockDim.x) {
            uint32_t c = classes[i];
            atomicOr(bits + (c >> 5), 1u << (c & 31u));
        }
        __syncthreads();
        if (threadIdx.x < 8) out[b].bits[threadIdx.x] = bits[threadIdx.x];
        __syncthreads();
    }
}
