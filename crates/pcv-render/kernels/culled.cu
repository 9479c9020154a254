// The culled modes: the visibility buffer of vis.cu drawn only from the batches that can show, with
// two-phase occlusion culling (as GPU mesh renderers do it), and, in the quant mode, 4-byte coordinates
// where they are precise enough. Every culling decision is conservative, so the final
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
// skips what that hides. counters: PCV_COUNT_* in shared.h. CPU twin: src/twins/culled.rs.
//
// The `_filtered` entry points apply a filter (filter.cuh) too: a batch whose summary no point can pass
// is skipped in both phases (counted as filtered, and not visible for next frame's phase 1), a batch
// that passes whole is drawn as without a filter, and the others draw the points of their kept lists
// (kept.cu: made when the filter was set), or where there are none test each point (its codes and
// values read from the columns of `fc`, in table order). The unfiltered entry points are the same code
// without those tests.
#include "project.cuh"
#include "batch.cuh"
#include "filter.cuh"
#include "blend.cuh"

template <bool FILTER>
__device__ __forceinline__ void pcv_cull_phase1_impl(const FrameUniforms& f, const FilterUniforms* fu, const FilterColumns* fc,
                                                     const Batch* __restrict__ batches, uint32_t num_batches, const uint8_t* __restrict__ visible,
                                                     uint32_t* __restrict__ list, uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < num_batches; b += gridDim.x * blockDim.x) {
        if (!visible[b] || pcv_batch_culled(f, batches[b])) continue;
        if constexpr (FILTER) {
            if (pcv_filter_batch(*fu, *fc, b, batches[b]) == PCV_FILTER_NONE) continue;
        }
        list[atomicAdd(counters + PCV_COUNT_LIST1, 1u)] = b;
    }
}

extern "C" __global__ void pcv_cull_phase1(FrameUniforms f, const Batch* __restrict__ batches, uint32_t num_batches,
                                           const uint8_t* __restrict__ visible, uint32_t* __restrict__ list,
                                           uint32_t* __restrict__ counters) {
    pcv_cull_phase1_impl<false>(f, nullptr, nullptr, batches, num_batches, visible, list, counters);
}

extern "C" __global__ void pcv_cull_phase1_filtered(FrameUniforms f, const __grid_constant__ FilterUniforms fu,
                                                    const __grid_constant__ FilterColumns fc,
                                                    const Batch* __restrict__ batches, uint32_t num_batches,
                                                    const uint8_t* __restrict__ visible, uint32_t* __restrict__ list,
                                                    uint32_t* __restrict__ counters) {
    pcv_cull_phase1_impl<true>(f, &fu, &fc, batches, num_batches, visible, list, counters);
}

template <bool FILTER>
__device__ __forceinline__ void pcv_cull_phase2_impl(const FrameUniforms& f, const FilterUniforms* fu, const FilterColumns* fc,
                                                     const HzbParams& h, const Batch* __restrict__ batches, uint32_t num_batches,
                                                     uint8_t* __restrict__ visible, const uint32_t* __restrict__ hzb,
                                                     uint32_t* __restrict__ list, uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < num_batches; b += gridDim.x * blockDim.x) {
        Batch bb = batches[b];
        bool was_visible = visible[b] != 0;
        if (pcv_batch_culled(f, bb)) {
            visible[b] = 0;
            atomicAdd(counters + PCV_COUNT_CULLED, 1u);
            continue;
        }
        if constexpr (FILTER) {
            if (pcv_filter_batch(*fu, *fc, b, bb) == PCV_FILTER_NONE) {
                visible[b] = 0;
                atomicAdd(counters + PCV_COUNT_FILTERED, 1u);
                continue;
            }
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

extern "C" __global__ void pcv_cull_phase2(FrameUniforms f, HzbParams h, const Batch* __restrict__ batches,
                                           uint32_t num_batches, uint8_t* __restrict__ visible,
                                           const uint32_t* __restrict__ hzb, uint32_t* __restrict__ list,
                                           uint32_t* __restrict__ counters) {
    pcv_cull_phase2_impl<false>(f, nullptr, nullptr, h, batches, num_batches, visible, hzb, list, counters);
}

extern "C" __global__ void pcv_cull_phase2_filtered(FrameUniforms f, const __grid_constant__ FilterUniforms fu,
                                                    const __grid_constant__ FilterColumns fc, HzbParams h,
                                                    const Batch* __restrict__ batches, uint32_t num_batches,
                                                    uint8_t* __restrict__ visible, const uint32_t* __restrict__ hzb,
                                                    uint32_t* __restrict__ list, uint32_t* __restrict__ counters) {
    pcv_cull_phase2_impl<true>(f, &fu, &fc, h, batches, num_batches, visible, hzb, list, counters);
}

// Draws the `*count` batches of `list`, one block a batch, each point taking the atomic min of
// PCV_WORD(depth, point index) as vis.cu does; entries past `num_batches` are skipped. With QUANT,
// where pcv_batch_quantized_ok allows, points are read from their 4-byte words (the quant mode's
// image: points moved by less than half a pixel). A plain loop, a point a thread a step: a shared-memory
// tile of the batch's pixels and four points a thread a step were both measured slower on the H200
// (results/README.md).
//
// With BLEND (pcv_blend_list), the same points take high quality's blend step (blend.cuh) against the
// final buffer instead of the atomic min, and nothing is counted.
template <bool QUANT, bool FILTER, bool BLEND>
__device__ __forceinline__ void pcv_raster_list_impl(const FrameUniforms& f, const FilterUniforms* fu, const FilterColumns* fc,
                                                     const Batch* __restrict__ batches,
                                                     const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                                     const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                                     unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters,
                                                     uint32_t num_batches, const PostUniforms* u = nullptr,
                                                     const uint32_t* __restrict__ colors = nullptr,
                                                     unsigned long long* __restrict__ accum = nullptr) {
    const uint32_t n = min(*count, num_batches);
    for (uint32_t e = blockIdx.x; e < n; e += gridDim.x) {
        const uint32_t b = list[e];
        if (b >= num_batches) continue;  // uniform across the block
        const Batch bb = batches[b];
        const bool coarse = pcv_batch_quantized_ok(f, bb);
        bool test = false;  // uniform across the block: every thread computes the same summary test
        if constexpr (FILTER) test = pcv_filter_batch(*fu, *fc, b, bb) == PCV_FILTER_SOME;
        if (!BLEND && threadIdx.x == 0) atomicAdd(counters + (coarse ? PCV_COUNT_QUANTIZED : PCV_COUNT_FULL), 1u);
        const uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        // With kept lists, a straddling batch draws its list's points (decided when the filter was set,
        // from full-precision positions) and tests none.
        bool listed = false;
        uint32_t k0 = 0, k1 = bb.num_points;
        if constexpr (FILTER) {
            if (test && fc->kept_first != nullptr) {
                listed = true;
                test = false;
                k0 = __ldg(fc->kept_first + b);
                k1 = __ldg(fc->kept_first + b + 1);
            }
        }
        for (uint32_t e = k0 + threadIdx.x; e < k1; e += blockDim.x) {
            const uint32_t j = listed ? (uint32_t)__ldg(fc->kept + e) : e;
            const uint64_t i = first + j;
            float x, y, z;
            if (QUANT && coarse) {
                uint32_t w = __ldg(quant + i);
                x = pcv_dequantize(bb, w, 0);
                y = pcv_dequantize(bb, w, 1);
                z = pcv_dequantize(bb, w, 2);
            } else {
                x = __ldg(positions + 3 * i);
                y = __ldg(positions + 3 * i + 1);
                z = __ldg(positions + 3 * i + 2);
            }
            if constexpr (FILTER) {
                if (test && !pcv_filter_point(*fu, *fc, i, x, y, z)) continue;
            }
            uint32_t px, py, d;
            if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
            if constexpr (BLEND) {
                pcv_blend_at(f, *u, px, py, d, __ldg(colors + i), vis, accum);
            } else {
                unsigned long long v = PCV_WORD(d, i);
                unsigned long long* cell = vis + (size_t)py * f.width + px;
                if (v < *cell) atomicMin(cell, v);
            }
        }
    }
}

extern "C" __global__ void pcv_raster_list(FrameUniforms f, const Batch* __restrict__ batches, const uint32_t* __restrict__ list,
                                           const uint32_t* __restrict__ count, const float* __restrict__ positions,
                                           const uint32_t* __restrict__ quant, unsigned long long* __restrict__ vis,
                                           uint32_t* __restrict__ counters, uint32_t num_batches) {
    pcv_raster_list_impl<false, false, false>(f, nullptr, nullptr, batches, list, count, positions, quant, vis, counters, num_batches);
}

extern "C" __global__ void pcv_raster_list_quant(FrameUniforms f, const Batch* __restrict__ batches,
                                                 const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                                 const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                                 unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters,
                                                 uint32_t num_batches) {
    pcv_raster_list_impl<true, false, false>(f, nullptr, nullptr, batches, list, count, positions, quant, vis, counters, num_batches);
}

// As pcv_raster_list and pcv_raster_list_quant (`quant` 1), with the filter: `fc` holds the columns of
// the tests it makes (a code or value per point in table order, a summary per batch).
extern "C" __global__ void pcv_raster_list_filtered(FrameUniforms f, const __grid_constant__ FilterUniforms fu,
                                                    const __grid_constant__ FilterColumns fc,
                                                    const Batch* __restrict__ batches, const uint32_t* __restrict__ list,
                                                    const uint32_t* __restrict__ count, const float* __restrict__ positions,
                                                    const uint32_t* __restrict__ quant, unsigned long long* __restrict__ vis,
                                                    uint32_t* __restrict__ counters, uint32_t num_batches, uint32_t use_quant) {
    if (use_quant) {
        pcv_raster_list_impl<true, true, false>(f, &fu, &fc, batches, list, count, positions, quant, vis, counters, num_batches);
    } else {
        pcv_raster_list_impl<false, true, false>(f, &fu, &fc, batches, list, count, positions, quant, vis, counters, num_batches);
    }
}

// High quality in the culled modes (blend.cu): pcv_blend_cull lists every batch in the view (and, with
// the filter, that may hold a passing point) that is not wholly past the blend window of the final
// buffer (pcv_batch_beyond_window, against a pyramid of the final buffer: a point hidden by less than
// the window may lie in a batch the frame's occlusion test skipped, so the draw's lists will not do),
// after PCV_COUNT_LIST_BLEND. pcv_blend_list then takes the blend step
// for their points, read as pcv_raster_list reads them (quantized words where the quant mode drew them,
// kept lists, filter tests), so exactly the drawn points blend.
template <bool FILTER>
__device__ __forceinline__ void pcv_blend_cull_impl(const FrameUniforms& f, const PostUniforms& u, const FilterUniforms* fu,
                                                    const FilterColumns* fc, const HzbParams& h,
                                                    const Batch* __restrict__ batches, uint32_t num_batches,
                                                    const uint32_t* __restrict__ hzb, uint32_t* __restrict__ list,
                                                    uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < num_batches; b += gridDim.x * blockDim.x) {
        const Batch bb = batches[b];
        if (pcv_batch_culled(f, bb)) continue;
        if constexpr (FILTER) {
            if (pcv_filter_batch(*fu, *fc, b, bb) == PCV_FILTER_NONE) continue;
        }
        if (pcv_batch_beyond_window(f, u, h, bb, hzb)) continue;
        list[atomicAdd(counters + PCV_COUNT_LIST_BLEND, 1u)] = b;
    }
}

extern "C" __global__ void pcv_blend_cull(FrameUniforms f, PostUniforms u, HzbParams h, const Batch* __restrict__ batches,
                                          uint32_t num_batches, const uint32_t* __restrict__ hzb, uint32_t* __restrict__ list,
                                          uint32_t* __restrict__ counters) {
    pcv_blend_cull_impl<false>(f, u, nullptr, nullptr, h, batches, num_batches, hzb, list, counters);
}

extern "C" __global__ void pcv_blend_cull_filtered(FrameUniforms f, PostUniforms u, const __grid_constant__ FilterUniforms fu,
                                                   const __grid_constant__ FilterColumns fc, HzbParams h,
                                                   const Batch* __restrict__ batches, uint32_t num_batches,
                                                   const uint32_t* __restrict__ hzb, uint32_t* __restrict__ list,
                                                   uint32_t* __restrict__ counters) {
    pcv_blend_cull_impl<true>(f, u, &fu, &fc, h, batches, num_batches, hzb, list, counters);
}

extern "C" __global__ void pcv_blend_list(FrameUniforms f, PostUniforms u, const Batch* __restrict__ batches,
                                          const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                          const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                          const uint32_t* __restrict__ colors, unsigned long long* __restrict__ vis,
                                          unsigned long long* __restrict__ accum, uint32_t num_batches, uint32_t use_quant) {
    if (use_quant) {
        pcv_raster_list_impl<true, false, true>(f, nullptr, nullptr, batches, list, count, positions, quant, vis, nullptr,
                                                num_batches, &u, colors, accum);
    } else {
        pcv_raster_list_impl<false, false, true>(f, nullptr, nullptr, batches, list, count, positions, quant, vis, nullptr,
                                                 num_batches, &u, colors, accum);
    }
}

extern "C" __global__ void pcv_blend_list_filtered(FrameUniforms f, PostUniforms u, const __grid_constant__ FilterUniforms fu,
                                                   const __grid_constant__ FilterColumns fc, const Batch* __restrict__ batches,
                                                   const uint32_t* __restrict__ list, const uint32_t* __restrict__ count,
                                                   const float* __restrict__ positions, const uint32_t* __restrict__ quant,
                                                   const uint32_t* __restrict__ colors, unsigned long long* __restrict__ vis,
                                                   unsigned long long* __restrict__ accum, uint32_t num_batches,
                                                   uint32_t use_quant) {
    if (use_quant) {
        pcv_raster_list_impl<true, true, true>(f, &fu, &fc, batches, list, count, positions, quant, vis, nullptr,
                                               num_batches, &u, colors, accum);
    } else {
        pcv_raster_list_impl<false, true, true>(f, &fu, &fc, batches, list, count, positions, quant, vis, nullptr,
                                                num_batches, &u, colors, accum);
    }
}
