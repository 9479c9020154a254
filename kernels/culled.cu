// Visibility-buffer mode with per-batch frustum culling: one block per batch of PCV_BATCH_POINTS sorted
// points (grid-stride over batches); a batch whose box lies outside the view (batch.cuh) is skipped
// without reading its points, the others go as in vis.cu (same visibility buffer, clear and resolve).
// `pcv_culled_dedup` also merges, inside each warp, points that hit the same pixel before the atomic
// (__match_any_sync, then the group's smallest depth; among equal depths the lowest lane, which is the
// smallest index): one atomic per pixel and warp instead of one per point. Both give the same buffer.
// counters[PCV_COUNT_CULLED] counts culled batches. CPU twin: src/render/cpu/culled.rs.
#include "project.cuh"
#include "batch.cuh"

template <bool DEDUP>
__device__ __forceinline__ void pcv_culled_impl(const FrameUniforms& f, const Batch* __restrict__ batches,
                                                uint32_t num_batches, const float* __restrict__ positions,
                                                unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        Batch bb = batches[b];
        if (pcv_batch_culled(f, bb)) {
            if (threadIdx.x == 0) atomicAdd(counters + PCV_COUNT_CULLED, 1u);
            continue;  // uniform across the block: every thread read the same box
        }
        uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        // Every lane runs the same number of rounds, so the warp is whole at __match_any_sync.
        for (uint32_t base = 0; base < bb.num_points; base += blockDim.x) {
            uint32_t j = base + threadIdx.x;
            uint64_t i = first + j;
            uint32_t px = 0, py = 0, d = 0;
            bool ok = false;
            if (j < bb.num_points) {
                float x = __ldg(positions + 3 * i), y = __ldg(positions + 3 * i + 1), z = __ldg(positions + 3 * i + 2);
                ok = pcv_project(f, x, y, z, &px, &py, &d);
            }
            uint32_t cell_i = ok ? py * f.width + px : 0xffffffffu;
            if (DEDUP) {
                uint32_t group = __match_any_sync(0xffffffffu, cell_i);
                if (!ok) continue;
                uint32_t dmin = __reduce_min_sync(group, d);
                uint32_t winners = __ballot_sync(group, d == dmin) & group;
                if ((threadIdx.x & 31) != (uint32_t)(__ffs(winners) - 1)) continue;
            } else if (!ok) {
                continue;
            }
            unsigned long long v = ((unsigned long long)d << 32) | (uint32_t)i;
            unsigned long long* cell = vis + cell_i;
            if (v < *cell) atomicMin(cell, v);
        }
    }
}

extern "C" __global__ void pcv_culled(FrameUniforms f, const Batch* __restrict__ batches, uint32_t num_batches,
                                      const float* __restrict__ positions, unsigned long long* __restrict__ vis,
                                      uint32_t* __restrict__ counters) {
    pcv_culled_impl<false>(f, batches, num_batches, positions, vis, counters);
}

extern "C" __global__ void pcv_culled_dedup(FrameUniforms f, const Batch* __restrict__ batches, uint32_t num_batches,
                                            const float* __restrict__ positions, unsigned long long* __restrict__ vis,
                                            uint32_t* __restrict__ counters) {
    pcv_culled_impl<true>(f, batches, num_batches, positions, vis, counters);
}
