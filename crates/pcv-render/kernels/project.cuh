// The projection and pixel rule, in one place. CPU twin: src/twins/project.rs.
//
// The host folds the viewport into the matrix (FrameUniforms::screen_from_world = viewport ·
// clip_from_world), so a point's row 0 and 1 are its pixel coordinates times w, row 2 its depth in
// [0, 1] times w, row 3 its w. Each row is three fused multiply-adds (__fmaf_rn: one rounding each, as
// f32::mul_add on the CPU), then one correctly rounded reciprocal (__frcp_rn, as 1.0 / w) and three
// multiplies: 16 float operations a point, each defined by IEEE 754 to the bit, in the twin's order, so
// both backends put every point on the same pixel with the same depth bits.
#pragma once
#include "shared.h"

// Row r of a column-major 4x4 matrix at (x, y, z, 1): m[r] x + m[4 + r] y + m[8 + r] z + m[12 + r].
__device__ __forceinline__ float pcv_row(const float* m, int r, float x, float y, float z) {
    return __fmaf_rn(m[8 + r], z, __fmaf_rn(m[4 + r], y, __fmaf_rn(m[r], x, m[12 + r])));
}

// Projects a point. Keeps it when it lies in front of the camera (w > 0) and its pixel coordinates
// fall inside the viewport (0 <= x < width, 0 <= y < height) with a depth strictly between 0 and 1
// (the near and far planes); NaN and infinities fail these tests. Writes the pixel (the coordinates'
// integer parts, row 0 at the top) and the depth as its float bits, which order like the floats
// because they are positive.
__device__ __forceinline__ bool pcv_project(const FrameUniforms& f, float x, float y, float z,
                                            uint32_t* px, uint32_t* py, uint32_t* depth_bits) {
    const float* m = f.screen_from_world;
    float w = pcv_row(m, 3, x, y, z);
    if (!(w > 0.0f)) return false;
    float inv_w = __frcp_rn(w);
    float sx = __fmul_rn(pcv_row(m, 0, x, y, z), inv_w);
    float sy = __fmul_rn(pcv_row(m, 1, x, y, z), inv_w);
    float d = __fmul_rn(pcv_row(m, 2, x, y, z), inv_w);
    if (!(sx >= 0.0f && sx < (float)f.width && sy >= 0.0f && sy < (float)f.height && d > 0.0f && d < 1.0f)) return false;
    *px = (uint32_t)sx;
    *py = (uint32_t)sy;
    *depth_bits = __float_as_uint(d);
    return true;
}
