// The depth pyramid for occlusion culling (kernels/culled.cu): level 0 holds the largest depth bits of
// each 4 x 4 pixel tile of a depth buffer (pixels outside the frame count as 0: no point lands there),
// each level above the largest of the 2 x 2 cells below it, up to a single cell (HzbParams in shared.h).
// Depths are positive floats, so their bits order like the floats. Reads a visibility buffer's words
// (shared.h). pcv_hzb_tiles runs 256-thread
// blocks over 16 x 16 pixel regions, 16 lanes a tile reducing by shuffles; pcv_hzb_up, one block for all
// the upper levels. CPU twin: src/render/cpu/hzb.rs.
#include "shared.h"

extern "C" __global__ void pcv_hzb_tiles(HzbParams h, uint32_t width, uint32_t height,
                                         const unsigned long long* __restrict__ words, uint32_t* __restrict__ hzb) {
    const uint32_t per = 16 / PCV_HZB_TILE;  // tiles a side of a block's 16 x 16 region
    const uint32_t regions_x = (h.width[0] + per - 1) / per;
    const uint32_t regions = regions_x * ((h.height[0] + per - 1) / per);
    const uint32_t tile = threadIdx.x / (PCV_HZB_TILE * PCV_HZB_TILE), pix = threadIdx.x % (PCV_HZB_TILE * PCV_HZB_TILE);
    for (uint32_t r = blockIdx.x; r < regions; r += gridDim.x) {
        uint32_t tx = (r % regions_x) * per + tile % per, ty = (r / regions_x) * per + tile / per;
        uint32_t x = tx * PCV_HZB_TILE + pix % PCV_HZB_TILE, y = ty * PCV_HZB_TILE + pix / PCV_HZB_TILE;
        uint32_t v = (x < width && y < height) ? PCV_WORD_DEPTH(words[(size_t)y * width + x]) : 0u;
        for (int o = PCV_HZB_TILE * PCV_HZB_TILE / 2; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
        if (pix == 0 && tx < h.width[0] && ty < h.height[0]) hzb[h.offset[0] + ty * h.width[0] + tx] = v;
    }
}

extern "C" __global__ void pcv_hzb_up(HzbParams h, uint32_t* __restrict__ hzb) {
    for (uint32_t l = 1; l < h.levels; ++l) {
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
