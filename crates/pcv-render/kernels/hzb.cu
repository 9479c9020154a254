// The depth pyramid for occlusion culling (kernels/culled.cu): level 0 holds the largest depth bits of
// each 4 x 4 pixel tile of a depth buffer (pixels outside the frame count as 0: no point lands there),
// each level above the largest of the 2 x 2 cells below it, up to a single cell (HzbParams in shared.h).
// Depths are positive floats, so their bits order like the floats. Reads a visibility buffer's words
// (shared.h). pcv_hzb_tiles runs 256-thread
// blocks over 16 x 16 pixel regions, 16 lanes a tile reducing by shuffles, and writes levels 0, 1 and 2
// (4, 8 and 16 pixels a cell); pcv_hzb_up, one block for the levels from 3 up (a few thousand cells at
// 1080p). CPU twin: src/twins/hzb.rs.
#include "shared.h"

extern "C" __global__ void pcv_hzb_tiles(HzbParams h, uint32_t width, uint32_t height,
                                         const unsigned long long* __restrict__ words, uint32_t* __restrict__ hzb) {
    static_assert(PCV_HZB_TILE == 4, "a block's 16 x 16 region is 4 x 4 level-0 tiles, 2 x 2 level-1 cells, one level-2 cell");
    __shared__ uint32_t tile_max[16];
    const uint32_t regions_x = (width + 15) / 16;
    const uint32_t regions = regions_x * ((height + 15) / 16);
    const uint32_t tile = threadIdx.x / 16, pix = threadIdx.x % 16;
    for (uint32_t r = blockIdx.x; r < regions; r += gridDim.x) {
        const uint32_t rx = r % regions_x, ry = r / regions_x;
        uint32_t tx = rx * 4 + tile % 4, ty = ry * 4 + tile / 4;
        uint32_t x = tx * 4 + pix % 4, y = ty * 4 + pix / 4;
        uint32_t v = (x < width && y < height) ? PCV_WORD_DEPTH(words[(size_t)y * width + x]) : 0u;
        for (int o = 8; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (pix == 0) {
            tile_max[tile] = v;
            if (tx < h.width[0] && ty < h.height[0]) hzb[h.offset[0] + ty * h.width[0] + tx] = v;
        }
        __syncthreads();
        if (threadIdx.x < 4 && h.levels > 1) {
            uint32_t cx = threadIdx.x % 2, cy = threadIdx.x / 2, t0 = cy * 8 + cx * 2;
            uint32_t m = max(max(tile_max[t0], tile_max[t0 + 1]), max(tile_max[t0 + 4], tile_max[t0 + 5]));
            uint32_t gx = rx * 2 + cx, gy = ry * 2 + cy;
            if (gx < h.width[1] && gy < h.height[1]) hzb[h.offset[1] + gy * h.width[1] + gx] = m;
        }
        if (threadIdx.x == 0 && h.levels > 2 && rx < h.width[2] && ry < h.height[2]) {
            uint32_t m = 0;
            for (int k = 0; k < 16; ++k) m = max(m, tile_max[k]);
            hzb[h.offset[2] + ry * h.width[2] + rx] = m;
        }
        __syncthreads();  // tile_max is reused by the next region
    }
}

extern "C" __global__ void pcv_hzb_up(HzbParams h, uint32_t* __restrict__ hzb) {
    for (uint32_t l = 3; l < h.levels; ++l) {
        const uint32_t w = h.width[l], cw = h.width[l - 1], ch = h.height[l - 1];
        const uint32_t* below = hzb + h.offset[l - 1];
        for (uint32_t c = threadIdx.x; c < w * h.height[l]; c += blockDim.x) {
            uint32_t x = 2 * (c % w), y = 2 * (c / w), m = 0;
            for (uint32_t dy = 0; dy < 2; ++dy)
                for (uint32_t dx = 0; dx < 2; ++dx)
                    if (x + dx < cw && y + dy < ch) m = max(m, below[(y + dy) * cw + x + dx]);
            hzb[h.offset[l] + c] = m;
        }
        __syncthreads();
    }
}
