// The kept lists of a filter (filter.cuh), made once when the filter is set so that the culled passes
// draw the passing points of the batches its summaries cannot decide without testing each point every
// frame: for hidden classes interleaved with shown ones (vegetation over ground) nearly every batch
// straddles, and the per-frame test made a filtered frame slower than the unfiltered one.
//
// pcv_kept_lists runs twice: with `kept` null it counts each batch's passing points into `counts`
// (0 for a batch the summaries decide: none pass, or all); the host turns the counts into offsets
// (`first`, one more than the batches); then it writes each straddling batch's passing points' indices
// inside the batch, ascending, at kept[first[b]..]. One block a batch; a step tests a point a thread,
// and the passing ones find their place by a ballot in the warp and the warps' counts before them in
// shared memory, so the list's order is the points' order whatever the schedule. Needs a multiple of
// 32 threads a block, at most 1024. CPU twin: src/twins/kept.rs.
#include "filter.cuh"

extern "C" __global__ void pcv_kept_lists(const __grid_constant__ FilterUniforms fu, const __grid_constant__ FilterColumns fc,
                                          const Batch* __restrict__ batches, uint32_t num_batches,
                                          const float* __restrict__ positions, uint32_t* __restrict__ counts,
                                          const uint32_t* __restrict__ first, uint16_t* __restrict__ kept) {
    __shared__ uint32_t warp_counts[32];
    __shared__ uint32_t done;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        const Batch bb = batches[b];
        if (pcv_filter_batch(fu, fc, b, bb) != PCV_FILTER_SOME) {  // uniform across the block
            if (kept == nullptr && threadIdx.x == 0) counts[b] = 0;
            continue;
        }
        if (threadIdx.x == 0) done = 0;
        __syncthreads();
        const uint64_t start = (uint64_t)b * PCV_BATCH_POINTS;
        for (uint32_t step = 0; step < bb.num_points; step += blockDim.x) {
            const uint32_t j = step + threadIdx.x;
            bool pass = false;
            if (j < bb.num_points) {
                const uint64_t i = start + j;
                pass = pcv_filter_point(fu, fc, i, __ldg(positions + 3 * i), __ldg(positions + 3 * i + 1), __ldg(positions + 3 * i + 2));
            }
            const uint32_t ballot = __ballot_sync(0xffffffffu, pass);
            if (lane == 0) warp_counts[warp] = __popc(ballot);
            __syncthreads();
            uint32_t before = done;
            for (uint32_t w = 0; w < warp; ++w) before += warp_counts[w];
            if (pass && kept != nullptr) kept[first[b] + before + __popc(ballot & ((1u << lane) - 1u))] = (uint16_t)j;
            __syncthreads();
            if (threadIdx.x == 0) {
                for (uint32_t w = 0; w < warps; ++w) done += warp_counts[w];
            }
            __syncthreads();
        }
        if (kept == nullptr && threadIdx.x == 0) counts[b] = done;
        __syncthreads();
    }
}
