// The built-in scene: the prototype's ten cylinders, point i of which depends only on the seed and i
// (rng.cuh), so the GPU makes the same points, bit for bit, as the CPU twin src/twins/scene.rs.
// A launch makes points first .. first + count of the scene into points[0 .. count] (clouds too large
// to hold as 16-byte points are made a chunk at a time).
// Every float operation is a round-to-nearest intrinsic in the twin's order (no FMA contraction).
#include "shared.h"
#include "rng.cuh"

__device__ __forceinline__ float pcv_axis_point(float ctr, float r, float ax, float ay, float lx, float ly,
                                                float h, float az, float v) {
    // ctr + r * (ax * lx + ay * ly) + h * (az * v)
    return __fadd_rn(__fadd_rn(ctr, __fmul_rn(r, __fadd_rn(__fmul_rn(ax, lx), __fmul_rn(ay, ly)))),
                     __fmul_rn(h, __fmul_rn(az, v)));
}

__device__ __forceinline__ uint8_t pcv_channel(float base, float u) {
    // round(255 * clamp(base + (2u - 1) * 0.1, 0, 1))
    float d = __fmul_rn(__fadd_rn(__fmul_rn(2.0f, u), -1.0f), 0.1f);
    float c = fminf(fmaxf(__fadd_rn(base, d), 0.0f), 1.0f);
    return (uint8_t)roundf(__fmul_rn(255.0f, c));
}

extern "C" __global__ void pcv_scene(SceneParams s, const Cylinder* __restrict__ cylinders, Point* __restrict__ points,
                                     uint64_t first, uint64_t count) {
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < count; k += stride) {
        const uint64_t i = first + k;
        const Cylinder& c = cylinders[(i * s.num_cylinders) / s.num_points];
        float u = pcv_uniform(s.seed, i, 0);
        float v = __fadd_rn(__fmul_rn(2.0f, pcv_uniform(s.seed, i, 1)), -1.0f);
        float ly, lx;
        pcv_sincos_2pi(u, &ly, &lx);
        Point p;
        p.x = pcv_axis_point(c.center[0], c.radius, c.axis_x[0], c.axis_y[0], lx, ly, c.height, c.axis_z[0], v);
        p.y = pcv_axis_point(c.center[1], c.radius, c.axis_x[1], c.axis_y[1], lx, ly, c.height, c.axis_z[1], v);
        p.z = pcv_axis_point(c.center[2], c.radius, c.axis_x[2], c.axis_y[2], lx, ly, c.height, c.axis_z[2], v);
        p.rgba[0] = pcv_channel(c.color[0], pcv_uniform(s.seed, i, 2));
        p.rgba[1] = pcv_channel(c.color[1], pcv_uniform(s.seed, i, 3));
        p.rgba[2] = pcv_channel(c.color[2], pcv_uniform(s.seed, i, 4));
        p.rgba[3] = 255;
        points[k] = p;
    }
}
