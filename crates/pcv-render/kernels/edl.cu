// Eye-dome lighting (as Potree and CloudCompare do it), a post pass over the depth buffer: each pixel
// compares its log2 view distance with that of 8 neighbours `edl_offsets` away and darkens its colour by
// 2^(-response * edl_k), response = (sum of how much nearer each neighbour is, in log2 units) / 8. Log
// distances make the shading depend on ratios, not metres, so a 15 cm object and a 1 km tile shade
// alike. A background pixel next to points gets 100 per such neighbour: a dark outline around the
// cloud; a background pixel with none keeps its colour. pcv_edl reads the reference's depth buffer,
// pcv_edl_words a visibility buffer's words (shared.h); each rewrites only its own pixel's colour, so the
// pass has no races. CPU twin: src/twins/edl.rs.
#include "post.cuh"

template <bool WORDS>
__device__ __forceinline__ uint32_t pcv_edl_depth(const void* __restrict__ depth, size_t i) {
    return WORDS ? PCV_WORD_DEPTH(static_cast<const unsigned long long*>(depth)[i]) : static_cast<const uint32_t*>(depth)[i];
}

template <bool WORDS>
__device__ __forceinline__ void pcv_edl_impl(const PostUniforms& u, const void* __restrict__ depth, uint32_t* __restrict__ color) {
    uint32_t n = u.width * u.height;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        int x = (int)(i % u.width), y = (int)(i / u.width);
        uint32_t dc = pcv_edl_depth<WORDS>(depth, i);
        bool empty = dc >= PCV_FAR_DEPTH_BITS;
        float lc = empty ? 0.0f : pcv_log2(pcv_view_distance(u, dc));
        float sum = 0.0f;
        for (int k = 0; k < 8; ++k) {
            int nx = x + u.edl_offsets[k][0], ny = y + u.edl_offsets[k][1];
            if (nx < 0 || ny < 0 || nx >= (int)u.width || ny >= (int)u.height) continue;
            uint32_t dn = pcv_edl_depth<WORDS>(depth, (size_t)ny * u.width + nx);
            if (dn >= PCV_FAR_DEPTH_BITS) continue;
            sum = __fadd_rn(sum, empty ? 100.0f : fmaxf(0.0f, __fadd_rn(lc, -pcv_log2(pcv_view_distance(u, dn)))));
        }
        if (empty && sum == 0.0f) continue;
        float shade = pcv_exp2_neg(-__fmul_rn(__fmul_rn(sum, 0.125f), u.edl_k));
        uint32_t c = color[i], out = c & 0xff000000u;
        for (int s = 0; s < 24; s += 8) {
            float v = __fadd_rn(__fmul_rn((float)((c >> s) & 0xffu), shade), 0.5f);
            out |= min((uint32_t)floorf(v), 255u) << s;
        }
        color[i] = out;
    }
}

extern "C" __global__ void pcv_edl(PostUniforms u, const uint32_t* __restrict__ depth, uint32_t* __restrict__ color) {
    pcv_edl_impl<false>(u, depth, color);
}

extern "C" __global__ void pcv_edl_words(PostUniforms u, const unsigned long long* __restrict__ words,
                                         uint32_t* __restrict__ color) {
    pcv_edl_impl<true>(u, words, color);
}
