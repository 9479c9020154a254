// Structs passed between the host and the kernels, in fixed-width C types.
// Keep in sync with src/render/gpu_data.rs (size asserts there and below).
#pragma once
#include <stdint.h>

// One point: 16 bytes, the prototype's layout. rgba[3] is 255 for every point pcv makes.
struct Point {
    float x, y, z;
    uint8_t rgba[4];
};

// One cylinder of the built-in scene (the prototype's ten cylinders).
struct Cylinder {
    float center[3];
    float axis_x[3];
    float axis_y[3];
    float axis_z[3];
    float radius;
    float height;
    float color[3];
};

// What every raster pass needs to know about the frame.
struct FrameUniforms {
    float clip_from_world[16];  // column-major, as glam's Mat4::to_cols_array
    uint32_t width;             // viewport size in pixels
    uint32_t height;
    uint32_t clear_color;       // RGBA8, r in the low byte
    uint32_t _pad;
};

// The built-in scene generator's parameters.
struct SceneParams {
    uint64_t seed;
    uint64_t num_points;
    uint32_t num_cylinders;
    uint32_t _pad;
};

#ifdef __cplusplus
static_assert(sizeof(Point) == 16, "Point must be 16 bytes");
static_assert(sizeof(Cylinder) == 68, "Cylinder must be 68 bytes");
static_assert(sizeof(FrameUniforms) == 80, "FrameUniforms must be 80 bytes");
static_assert(sizeof(SceneParams) == 24, "SceneParams must be 24 bytes");
#endif
