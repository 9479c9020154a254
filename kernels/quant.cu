// Quantized visibility-buffer mode: per batch and frame, cull the batch (batch.cuh) or decide whether
// its 10-bit coordinates (4 bytes a point, kernels/preprocess.cu's `quant`) keep every point within half
// a pixel; if so the pass reads those, else the full-precision positions (12 bytes). Then as vis.cu: a
// 64-bit atomic min of (depth << 32 | index), same clear and resolve. The image may differ from the
// reference's (points move by up to half a pixel), so this mode is never the default.
// counters: culled, quantized and full-precision batches. CPU twin: src/render/cpu/quant.rs.
#include "project.cuh"
#include "batch.cuh"

extern "C" __global__ void pcv_quant(FrameUniforms f, const Batch* __restrict__ batches, uint32_t num_batches,
                                     const uint32_t* __restrict__ quant, const float* __restrict__ positions,
                                     unsigned long long* __restrict__ vis, uint32_t* __restrict__ counters) {
    for (uint32_t b = blockIdx.x; b < num_batches; b += gridDim.x) {
        Batch bb = batches[b];
        if (pcv_batch_culled(f, bb)) {
            if (threadIdx.x == 0) atomicAdd(counters + PCV_COUNT_CULLED, 1u);
            continue;
        }
        bool coarse = pcv_batch_quantized_ok(f, bb);
        if (threadIdx.x == 0) atomicAdd(counters + (coarse ? PCV_COUNT_QUANTIZED : PCV_COUNT_FULL), 1u);
        uint64_t first = (uint64_t)b * PCV_BATCH_POINTS;
        for (uint32_t j = threadIdx.x; j < bb.num_points; j += blockDim.x) {
            uint64_t i = first + j;
            float x, y, z;
            if (coarse) {
                uint32_t w = __ldg(quant + i);
                x = pcv_dequantize(bb, w, 0);
                y = pcv_dequantize(bb, w, 1);
                z = pcv_dequantize(bb, w, 2);
            } else {
                x = __ldg(positions + 3 * i); y = __ldg(positions + 3 * i + 1); z = __ldg(positions + 3 * i + 2);
            }
            uint32_t px, py, d;
            if (!pcv_project(f, x, y, z, &px, &py, &d)) continue;
            unsigned long long v = ((unsigned long long)d << 32) | (uint32_t)i;
            unsigned long long* cell = vis + (size_t)py * f.width + px;
            if (v < *cell) atomicMin(cell, v);
        }
    }
}
