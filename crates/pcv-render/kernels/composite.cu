// Sort-last compositing of visibility words rendered on several GPUs (or several shares of one GPU):
// src/multi.rs drives these around its NCCL reductions. CPU twin: src/twins/composite.rs.
//
// A share renders its points with local indices 0 .. count; `pcv_words_offset` adds the share's first
// global index to every non-empty payload, so the shares' payloads are disjoint and a min over the
// words of every share is the exact composite (nearest depth, ties to the smaller global index, as one
// GPU holding every point in the same order would give). `pcv_words_min` is that min between two
// buffers of one device (shares that live on the same GPU are combined before NCCL combines GPUs).
// `pcv_words_gather` turns the composite of index words into colour words (packed mode's words): where
// the winning index is one of this share's, the share's colour with the composite's depth; an empty
// pixel becomes the background word the packed mode clears to; a pixel another share won becomes
// ~0 (with `init`) or is left alone (without: a second share of the same device fills its own pixels
// into the same buffer). A min over every device's gathered words then holds each pixel's winning
// colour, which the packed resolve reads.
#include "post.cuh"

extern "C" __global__ void pcv_words_offset(uint64_t n, unsigned long long* __restrict__ words, uint64_t first) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long w = words[i];
        if (PCV_WORD_PAYLOAD(w) != PCV_EMPTY_PAYLOAD) words[i] = w + first;
    }
}

extern "C" __global__ void pcv_words_min(uint64_t n, unsigned long long* __restrict__ dst,
                                         const unsigned long long* __restrict__ src) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long a = dst[i], b = src[i];
        dst[i] = b < a ? b : a;
    }
}

extern "C" __global__ void pcv_words_gather(FrameUniforms f, const unsigned long long* __restrict__ vis,
                                            const uint32_t* __restrict__ colors, uint64_t first, uint64_t count,
                                            uint32_t init, unsigned long long* __restrict__ out) {
    uint32_t n = f.width * f.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        unsigned long long w = vis[i];
        unsigned long long p = PCV_WORD_PAYLOAD(w);
        if (p == PCV_EMPTY_PAYLOAD) {
            out[i] = PCV_WORD(PCV_WORD_DEPTH(w), pcv_background(f, i / f.width));
        } else if (p - first < count) {  // p >= first wraps past count below first
            out[i] = PCV_WORD(PCV_WORD_DEPTH(w), __ldg(colors + (p - first)));
        } else if (init) {
            out[i] = ~0ull;
        }
    }
}
