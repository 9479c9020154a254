// The culled modes: the visibility buffer of vis.cu drawn only from the batches that can show, with
// two-phase occlusion culling (as GPU mesh renderers do it), reading 4-byte coordinates first where they
// are precise enough (the quant mode draws them; the culled mode tests with them and reads full
// precision only for points that may win). Every culling decision is conservative, so the final
// visibility buffer is exactly the one drawing every batch would give (the quant mode's: of the
// points as decoded).
//
// Each frame:
// 1. pcv_cull_phase1 lists the batches that were visible last frame (`visible`, one byte a batch) and
//    lie in the view; pcv_raster_list draws them.
// 2. hzb.cu builds a depth pyramid from that buffer.
// 3. pcv_cull_phase2 tests every batch in the view against the pyramid (batch.cuh): a batch entirely
//    behind what phase 1 drew is skipped; the others not drawn yet are listed, and pcv_raster_list
//    draws them. The test's answer is next frame's `visible`.
// A batch outside the view is never drawn; a batch hidden this frame is drawn next time it passes the
// test. The lists' order (atomic appends) does not matter: the buffer is an atomic min over the points,
// ties going to the smaller point index. A camera that stays or moves little redraws what it saw and
// skips what that hides. counters: PCV_COUNT_* in shared.h. CPU twin: src/render/cpu/culled.rs.
#include "project.cuh"
#include "batch.cuh"

extern "C" __global__ void pcv_cull_phase1(FrameUniforms f, const Batch* __restrict__ batches, uint32_t num_batches,
                                           const uint8_t* __restrict__ visible, uint32_t* __restrict__ list,
                                           uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < num_batches; b += gridDim.x * blockDim.x) {
        if (visible[b] && !pcv_batch_culled(f, batches[b])) list[atomicAdd(counters + PCV_COUNT_LIST1, 1u)] = b;
    }
}

extern "C" __global__ void pcv_cull_phase2(FrameUniforms f, HzbParams h, const Batch* __restrict__ batches,
                                           uint32_t num_batches, uint8_t* __restrict__ visible,
                                           const uint32_t* __restrict__ hzb, uint32_t* __restrict__ list,
                                           uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < num_batches; b += gridDim.x * blockDim.x) {
        Batch bb = batches[b];
        bool was_visible = visible[b] != 0;
        if (pcv_batch_culled(f, bb)) {
            visible[b] = 0;
            atomicAdd(counters + PCV_COUNT_CULLED, 1u);
            continue;
        }
        bool occluded = pcv_batch_occluded(f, h, bb, hzb);
        visible[b] = occluded ? 0 : 1;
        if (was_visible) continue;  // drawn in phase 1
        if (occluded) {
            atomicAdd(counters + PCV_COUNT_OCCLUDED, 1u);
        } else {
            list[atomicAdd(counters + PCV_COUNT_LIST2, 1u)] = b;
        }
    }
}

// Pixels of the shared-memory tile a block keeps for one batch (12 KB of visibility words).
#define PCV_LOCAL_PX 1536

// Draws the `*count` batches of `list`, one block a batch, each point taking the atomic min of
// (depth << 32 | point index) as vis.cu does; entries past `num_batches` are skipped. Three things make
// it cheaper than vis.cu without changing the result, which is a min over the points either way:
// - A batch whose screen rectangle (its box's corners' pixels, widened by one) has at most
//   PCV_LOCAL_PX pixels is drawn into a shared-memory copy of that rectangle — loaded from the buffer,
//   so the early depth test sees what other batches drew — with shared-memory atomics, then merged
//   back with one global atomic per pixel that improved. Points outside the rectangle (none, but for
//   rounding) go straight to the buffer.
// - QUANT: where pcv_batch_quantized_ok allows, points are read from their 4-byte words (the quant
//   mode's image: points moved by less than half a pixel).
// - Otherwise, where that bound holds, the exact mode still reads the 4-byte word first: the decoded
//   point lies within half a pixel of the exact one, so the exact pixel is one of at most 2 x 2 around
//   it, and its exact depth at least the decoded depth less pcv_batch_depth_slack. When that is still
//   behind every stored depth there, the point cannot win and its 12-byte position is never read;
//   else it is, and the point goes in exactly.
template <bool QUANT>
__device__ __forceinline__ void pcv_raster_list_impl(const FrameUniforms& f, const Batch* __restrict__ batches,
                                                     const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                                     const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                                     unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters,
                                                     uint32_t num_batches) {
    __shared__ unsigned long long tile[PCV_LOCAL_PX];
    __shared__ int rect[4];  // x0, y0, width, height of the tile; width 0: no tile for this batch
    const uint32_t n = min(*count, num_batches);
    for (uint32_t e = blockIdx.x; e < n; e += gridDim.x) {
        const uint32_t b = list[e];
        if (b >= num_batches) continue;  // uniform across the block
        const Batch bb = batches[b];
        const bool coarse = pcv_batch_quantized_ok(f, bb);
        if (threadIdx.x == 0) {
            atomicAdd(counters + (coarse ? PCV_COUNT_QUANTIZED : PCV_COUNT_FULL), 1u);
            int r[4] = {0, 0, 0, 0};
            pcv_batch_rect(f, bb, r);
            rect[0] = r[0]; rect[1] = r[1];
            rect[2] = r[2] * r[3] <= PCV_LOCAL_PX ? r[2] : 0;
            rect[3] = r[3];
        }
        __syncthreads();
        const int x0 = rect[0], y0 = rect[1], rw = rect[2], rh = rect[3];
        for (int k = threadIdx.x; k < rw * rh; k += blockDim.x) tile[k] = vis[(size_t)(y0 + k / rw) * f.width + x0 + k % rw];
        __syncthreads();
        const float slack = (!QUANT && coarse) ? pcv_batch_depth_slack(f, bb) : 0.0f;
        const uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        for (uint32_t j = threadIdx.x; j < bb.num_points; j += blockDim.x) {
            const uint64_t i = first + j;
            float x, y, z;
            if (coarse) {
                uint32_t w = __ldg(quant + i);
                x = pcv_dequantize(bb, w, 0);
                y = pcv_dequantize(bb, w, 1);
                z = pcv_dequantize(bb, w, 2);
                if (!QUANT) {
                    // The exact mode's test on the decoded point: skip it when it cannot win anywhere.
                    float sx, sy, d;
                    if (pcv_project_unclipped(f, x, y, z, &sx, &sy, &d)) {
                        float lo_x = fmaxf(floorf(__fadd_rn(sx, -0.5009765625f)), 0.0f);
                        float hi_x = fminf(floorf(__fadd_rn(sx, 0.5009765625f)), (float)(f.width - 1));
                        float lo_y = fmaxf(floorf(__fadd_rn(sy, -0.5009765625f)), 0.0f);
                        float hi_y = fminf(floorf(__fadd_rn(sy, 0.5009765625f)), (float)(f.height - 1));
                        float d_low = __fadd_rn(d, -slack);
                        if (!(lo_x <= hi_x && lo_y <= hi_y)) continue;  // the exact point is outside the view
                        if (d_low > 0.0f) {
                            uint32_t stored = 0;
                            for (int py = (int)lo_y; py <= (int)hi_y; ++py) {
                                for (int px = (int)lo_x; px <= (int)hi_x; ++px) {
                                    int lx = px - x0, ly = py - y0;
                                    unsigned long long v = (lx >= 0 && ly >= 0 && lx < rw && ly < rh)
                                                               ? tile[ly * rw + lx]
                                                               : vis[(size_t)py * f.width + px];
                                    stored = max(stored, (uint32_t)(v >> 32));
                                }
                            }
                            if (d_low > __uint_as_float(stored)) continue;
                        }
                    }
                    x = __ldg(positions + 3 * i);
                    y = __ldg(positions + 3 * i + 1);
                    z = __ldg(positions + 3 * i + 2);
                }
            } else {
                x = __ldg(positions + 3 * i);
                y = __ldg(positions + 3 * i + 1);
                z = __ldg(positions + 3 * i + 2);
            }
            uint32_t px, py, d;
            if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
            unsigned long long v = ((unsigned long long)d << 32) | (uint32_t)i;
            int lx = (int)px - x0, ly = (int)py - y0;
            if (lx >= 0 && ly >= 0 && lx < rw && ly < rh) {
                unsigned long long* cell = tile + ly * rw + lx;
                if (v < *cell) atomicMin(cell, v);
            } else {
                unsigned long long* cell = vis + (size_t)py * f.width + px;
                if (v < *cell) atomicMin(cell, v);
            }
        }
        __syncthreads();
        for (int k = threadIdx.x; k < rw * rh; k += blockDim.x) {
            unsigned long long v = tile[k];
            unsigned long long* cell = vis + (size_t)(y0 + k / rw) * f.width + x0 + k % rw;
            if (v < *cell) atomicMin(cell, v);
        }
        __syncthreads();  // the tile and rect are reused by the next batch
    }
}

extern "C" __global__ void pcv_raster_list(FrameUniforms f, const Batch* __restrict__ batches, const uint32_t* __restrict__ list,
                                           const uint32_t* __restrict__ count, const float* __restrict__ positions,
                                           const uint32_t* __restrict__ quant, unsigned long long* __restrict__ vis,
                                           uint32_t* __restrict__ counters, uint32_t num_batches) {
    pcv_raster_list_impl<false>(f, batches, list, count, positions, quant, vis, counters, num_batches);
}

extern "C" __global__ void pcv_raster_list_quant(FrameUniforms f, const Batch* __restrict__ batches,
                                                 const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                                 const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                                 unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters,
                                                 uint32_t num_batches) {
    pcv_raster_list_impl<true>(f, batches, list, count, positions, quant, vis, counters, num_batches);
}
