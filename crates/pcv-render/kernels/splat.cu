// Point size as a post pass: each pixel takes the nearest point whose disk covers it, among the points
// the raster pass left visible within a window of radius R around it. The visibility buffer holds one
// 64-bit word a pixel, PCV_WORD(depth bits, payload: a colour or a point index), so "nearest" is an
// integer min, exact and independent of thread order; a pixel no covering point reaches keeps its own
// word (the background's). A point at pixel q covers pixel p when |p - q| <= diameter / 2, the diameter
// being either fixed (`splat_diameter_px`, a disk of N pixels) or adaptive: the cloud's point spacing
// seen from the point's view distance (`adaptive_px_at_1m / w`), so distant points stay small and close
// ones close the surface. With a spacing per batch (`batch_spacing_m`, a level-of-detail pool: a batch
// is part of one octree node), `adaptive_px_at_1m` is per metre of spacing and each point's diameter is
// `adaptive_px_at_1m * batch_spacing_m[payload / PCV_BATCH_POINTS] / w` (the payload is the point's
// index), so a coarse node's points are larger than a fine one's at the same distance; a payload past
// the batches stays 1 pixel. Points hidden behind another in the 1-pixel pass do not grow (the usual
// screen-space dilation trade). One block of 256 threads fills a 16 x 16 tile, reading the tile and its
// R-pixel border into shared memory once. `pcv_splat_ref` reads the reference mode's separate depth and
// colour buffers as the same words. CPU twin: src/twins/splat.rs.
#include "post.cuh"

#define PCV_TILE_PX 16
#define PCV_TILE_SIDE_MAX (PCV_TILE_PX + 2 * PCV_SPLAT_MAX_RADIUS)

template <bool REF>
__device__ __forceinline__ void pcv_splat_impl(const PostUniforms& u, const unsigned long long* __restrict__ vis,
                                               const uint32_t* __restrict__ depth, const uint32_t* __restrict__ color,
                                               unsigned long long* __restrict__ out,
                                               const float* __restrict__ batch_spacing_m, uint32_t num_batches) {
    __shared__ unsigned long long words[PCV_TILE_SIDE_MAX * PCV_TILE_SIDE_MAX];
    __shared__ float diam2[PCV_TILE_SIDE_MAX * PCV_TILE_SIDE_MAX];
    const int r = (int)min(u.splat_radius_px, PCV_SPLAT_MAX_RADIUS);
    const int side = PCV_TILE_PX + 2 * r;
    const uint32_t tiles_x = (u.width + PCV_TILE_PX - 1) / PCV_TILE_PX;
    const uint32_t tiles = tiles_x * ((u.height + PCV_TILE_PX - 1) / PCV_TILE_PX);
    const int n2 = (int)(u.splat_diameter_px * u.splat_diameter_px);
    for (uint32_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int x0 = (int)(t % tiles_x) * PCV_TILE_PX - r, y0 = (int)(t / tiles_x) * PCV_TILE_PX - r;
        __syncthreads();  // the previous tile's reads are done
        for (int k = threadIdx.x; k < side * side; k += blockDim.x) {
            int x = x0 + k % side, y = y0 + k / side;
            unsigned long long w = ~0ull;  // outside the frame: never covers anything
            if (x >= 0 && y >= 0 && x < (int)u.width && y < (int)u.height) {
                size_t i = (size_t)y * u.width + x;
                w = REF ? PCV_WORD(depth[i], color[i]) : vis[i];
            }
            words[k] = w;
            uint32_t d = PCV_WORD_DEPTH(w);
            float dm = 0.0f;
            if (u.splat_diameter_px == 0 && d < PCV_FAR_DEPTH_BITS) {
                float px = u.adaptive_px_at_1m;
                if (batch_spacing_m != nullptr) {
                    unsigned long long b = PCV_WORD_PAYLOAD(w) / PCV_BATCH_POINTS;
                    px = b < num_batches ? __fmul_rn(px, batch_spacing_m[b]) : 0.0f;
                }
                dm = pcv_adaptive_px(u, px, d);
            }
            diam2[k] = pcv_adaptive_diam2(dm, r);
        }
        __syncthreads();
        const int lx = threadIdx.x % PCV_TILE_PX, ly = threadIdx.x / PCV_TILE_PX;
        const int px = x0 + r + lx, py = y0 + r + ly;
        if (px >= (int)u.width || py >= (int)u.height) continue;
        unsigned long long best = ~0ull;
        for (int dy = -r; dy <= r; ++dy) {
            for (int dx = -r; dx <= r; ++dx) {
                int k = (ly + r + dy) * side + (lx + r + dx);
                unsigned long long w = words[k];
                if (PCV_WORD_DEPTH(w) >= PCV_FAR_DEPTH_BITS) continue;  // empty, or outside the frame
                int q = pcv_splat_q(u, dx, dy);
                bool covers = u.splat_diameter_px != 0 ? q <= n2 : (q == 0 || (float)q <= diam2[k]);
                if (covers && w < best) best = w;
            }
        }
        out[(size_t)py * u.width + px] = best != ~0ull ? best : words[(ly + r) * side + (lx + r)];
    }
}

// `batch_spacing_m`: null, or `num_batches` spacings (the visibility words' payloads are point indices).
extern "C" __global__ void pcv_splat(PostUniforms u, const unsigned long long* __restrict__ vis,
                                     unsigned long long* __restrict__ out, const float* __restrict__ batch_spacing_m,
                                     uint32_t num_batches) {
    pcv_splat_impl<false>(u, vis, nullptr, nullptr, out, batch_spacing_m, num_batches);
}

extern "C" __global__ void pcv_splat_ref(PostUniforms u, const uint32_t* __restrict__ depth,
                                         const uint32_t* __restrict__ color, unsigned long long* __restrict__ out) {
    pcv_splat_impl<true>(u, nullptr, depth, color, out, nullptr, 0);
}
