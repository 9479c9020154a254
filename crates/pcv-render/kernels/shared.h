// Structs passed between the host and the kernels, in fixed-width C types.
// Keep in sync with src/gpu_data.rs (size asserts there and below).
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
    float screen_from_world[16];  // viewport · clip_from_world, column-major (see project.cuh)
    uint32_t width;             // viewport size in pixels
    uint32_t height;
    uint32_t clear_color;       // background at row 0 (the top row): RGBA8, r in the low byte
    uint32_t clear_color_last_row; // background at the last row, the bottom (equal: a solid background)
};

// The built-in scene generator's parameters.
struct SceneParams {
    uint64_t seed;
    uint64_t num_points;
    uint32_t num_cylinders;
    uint32_t _pad;
};

// Points per batch: the preprocessing (kernels/preprocess.cu) cuts the spatially sorted points into
// consecutive batches of this many (the last one shorter), each with a bounding box.
#define PCV_BATCH_POINTS 4096u

// One batch of PCV_BATCH_POINTS consecutive (sorted) points: its bounding box and the step of its
// 10-bit quantization (scale[k] = (max[k] - min[k]) / 1023; a coordinate decodes as min + q * scale).
struct Batch {
    float min[3];
    float max[3];
    float scale[3];
    uint32_t num_points;  // points in this batch (PCV_BATCH_POINTS except for the last)
};

// The spatial grid of the preprocessing's bucket sort: cell = floor((p - origin) * inv_cell) per axis,
// clamped to [0, 2^bits - 1], then Morton-interleaved into a 3 * bits key. Non-finite points get the
// last bucket.
struct GridParams {
    float origin[3];
    float inv_cell;      // cells per world unit
    uint32_t bits;       // bits per axis (the key has 3 * bits bits)
    uint32_t _pad;
    uint64_t num_points;
};

// The 64-bit words of the visibility buffers: depth bits << PCV_DEPTH_SHIFT | payload (a point index or
// a colour). A depth in [0, 1] is a float below 2.0, whose bits fit in 30, so 34 bits are left for the
// payload: point indices up to 2^34 - 2 (17 billion points; 2^34 - 1 marks an empty pixel). The words
// order like (depth, payload), so an atomic min keeps the nearest point, ties to the smaller payload.
#define PCV_DEPTH_SHIFT 34
#define PCV_PAYLOAD_MASK ((1ull << PCV_DEPTH_SHIFT) - 1ull)
#define PCV_EMPTY_PAYLOAD PCV_PAYLOAD_MASK
#define PCV_WORD(depth_bits, payload) (((unsigned long long)(depth_bits) << PCV_DEPTH_SHIFT) | (unsigned long long)(payload))
#define PCV_WORD_DEPTH(w) ((uint32_t)((w) >> PCV_DEPTH_SHIFT))
#define PCV_WORD_PAYLOAD(w) ((w) & PCV_PAYLOAD_MASK)

// The post passes' parameters (kernels/splat.cu, kernels/edl.cu; helpers in post.cuh).
#define PCV_SPLAT_MAX_RADIUS 8u
struct PostUniforms {
    uint32_t width;              // viewport size in pixels
    uint32_t height;
    uint32_t splat_radius_px;    // window radius R: the splat reads (2R + 1)^2 pixels around each pixel
    uint32_t splat_diameter_px;  // fixed point size N (a disk of diameter N), or 0 for adaptive sizes
    float adaptive_px_at_1m;     // adaptive: a point's diameter in pixels at a view distance of 1
    float near_m;                // the projection's planes, to turn depth into view distance
    float far_m;
    float near_far_m2;           // near * far
    float far_minus_near_m;      // far - near
    float edl_k;                 // EDL: shade = 2^(-response * edl_k); 300 * strength * log2(e)
    int32_t edl_offsets[8][2];   // the 8 neighbours EDL compares with, in pixels
    uint32_t splat_square;       // 1: points are squares (|dx|, |dy| <= N / 2), 0: disks (|d| <= N / 2)
    uint32_t ortho;              // 1: orthographic (depth linear in distance, sizes independent of it)
    float blend_window;          // high quality (kernels/blend.cu): a point blends where its view distance
                                 // is at most this times its pixel's nearest (1 + the depth fraction)
};

// The depth pyramid of the occlusion culling (kernels/hzb.cu): level 0 holds the largest depth of each
// PCV_HZB_TILE x PCV_HZB_TILE pixel tile, each level above the largest of 2 x 2 cells below, up to one
// cell; level l is width[l] x height[l] words from hzb[offset[l]].
#define PCV_HZB_TILE_LOG2 2u
#define PCV_HZB_TILE (1u << PCV_HZB_TILE_LOG2)
#define PCV_HZB_MAX_LEVELS 12
struct HzbParams {
    uint32_t levels;
    uint32_t width[PCV_HZB_MAX_LEVELS];
    uint32_t height[PCV_HZB_MAX_LEVELS];
    uint32_t offset[PCV_HZB_MAX_LEVELS];
    uint32_t total;  // words in all levels
    uint32_t _pad[2];
};

// The culled modes' counters (kernels/culled.cu): batches outside the view, batches hidden behind the
// depth pyramid, batches drawn from 10-bit and from full-precision coordinates, then the lengths of
// the two phases' lists of batches to draw, the batches dropped by the filter, and the length of the
// high-quality blend's list (kernels/blend.cu).
#define PCV_COUNT_CULLED 0
#define PCV_COUNT_OCCLUDED 1
#define PCV_COUNT_QUANTIZED 2
#define PCV_COUNT_FULL 3
#define PCV_COUNT_LIST1 4
#define PCV_COUNT_LIST2 5
#define PCV_COUNT_FILTERED 6
#define PCV_COUNT_LIST_BLEND 7
#define PCV_NUM_COUNTERS 8

// The filters the culled modes apply themselves (kernels/filter.cuh): classification codes hidden,
// return codes hidden, value ranges of attributes, and clip volumes in the cloud's frame (the uploaded
// points' coordinates). A box keeps (or with `outside`
// drops) the points p with |axes[k] . (p - center)| <= half[k] for k = 0, 1, 2; a plane keeps the
// points with normal . p + offset >= 0. Several keep-inside boxes keep their union.
#define PCV_FILTER_MAX_BOXES 8
#define PCV_FILTER_MAX_PLANES 8
#define PCV_FILTER_MAX_RANGES 4
struct FilterBox {
    float center[3];
    float half[3];
    float axes[9];     // row k: the box's axis k in the cloud's frame (unit length)
    uint32_t outside;  // 1: keep what is outside
};
struct FilterPlane {
    float normal[3];
    float offset;
};
// A value range: a point passes when lo <= its value <= hi (its value relative to its column's base;
// the bounds rounded inwards to f32, so that the test is the host's f64 test of the same values).
// `field` names the attribute (the host's column id), for the backend that keeps the columns.
struct FilterRange {
    float lo;
    float hi;
    uint32_t field;
    uint32_t _pad;
};
struct FilterUniforms {
    uint32_t hidden_classes[8];  // bit c % 32 of word c / 32: class code c hidden
    uint32_t tests_classes;      // 1: read the class codes (some class hidden)
    uint32_t num_boxes;
    uint32_t num_planes;
    uint32_t num_inside;         // how many of the boxes keep what is inside
    FilterBox boxes[PCV_FILTER_MAX_BOXES];
    FilterPlane planes[PCV_FILTER_MAX_PLANES];
    uint32_t hidden_returns[8];  // bit c % 32 of word c / 32: return code c (PCV_RETURN_CODE) hidden
    uint32_t tests_returns;      // 1: read the return codes
    uint32_t num_ranges;         // value ranges: range k reads FilterColumns::values[k]
    FilterRange ranges[PCV_FILTER_MAX_RANGES];
};
// A point's return code: its return number r and number of returns n (0..15 each), r | n << 4.
#define PCV_RETURN_CODE(r, n) ((r) | ((n) << 4))
// A batch's codes (class codes, or return codes): bit c % 32 of word c / 32 when one of its points has
// code c.
struct BatchClasses {
    uint32_t bits[8];
};
// A batch's values of one attribute (ranges.cu): the smallest and largest of those that are numbers,
// and how many are not (NaN: the point's file has no such field). No number: min +inf, max -inf.
struct BatchRange {
    float min;
    float max;
    uint32_t nans;
    uint32_t _pad;
};
// Where the filter's per-point columns are (device addresses, table order; null where not tested):
// class codes and their batch sets, return codes and theirs, and for value range k its values
// (relative to the column's base) and each batch's BatchRange.
struct FilterColumns {
    const uint8_t* classes;
    const BatchClasses* batch_classes;
    const uint8_t* returns;
    const BatchClasses* batch_returns;
    const float* values[PCV_FILTER_MAX_RANGES];
    const BatchRange* batch_values[PCV_FILTER_MAX_RANGES];
    // The kept lists (kept.cu), made when the filter is set: the points of batch b that pass are
    // kept[kept_first[b] .. kept_first[b + 1]] (indices inside the batch, ascending) for the batches the
    // summaries cannot decide; null: each point is tested as it is drawn.
    const uint32_t* kept_first;
    const uint16_t* kept;
};
// What a batch's summary says of the filter (pcv_filter_batch).
#define PCV_FILTER_NONE 0  // no point passes: the batch is skipped
#define PCV_FILTER_ALL 1   // every point passes: drawn without a test
#define PCV_FILTER_SOME 2  // each point is tested

#ifdef __cplusplus
static_assert(sizeof(Batch) == 40, "Batch must be 40 bytes");
static_assert(sizeof(GridParams) == 32, "GridParams must be 32 bytes");
static_assert(sizeof(Point) == 16, "Point must be 16 bytes");
static_assert(sizeof(Cylinder) == 68, "Cylinder must be 68 bytes");
static_assert(sizeof(FrameUniforms) == 80, "FrameUniforms must be 80 bytes");
static_assert(sizeof(SceneParams) == 24, "SceneParams must be 24 bytes");
static_assert(sizeof(PostUniforms) == 116, "PostUniforms must be 116 bytes");
static_assert(sizeof(HzbParams) == 160, "HzbParams must be 160 bytes");
static_assert(sizeof(FilterBox) == 64, "FilterBox must be 64 bytes");
static_assert(sizeof(FilterPlane) == 16, "FilterPlane must be 16 bytes");
static_assert(sizeof(FilterRange) == 16, "FilterRange must be 16 bytes");
static_assert(sizeof(FilterUniforms) == 792, "FilterUniforms must be 792 bytes");
static_assert(sizeof(BatchRange) == 16, "BatchRange must be 16 bytes");
static_assert(sizeof(FilterColumns) == 112, "FilterColumns must be 112 bytes");
static_assert(sizeof(BatchClasses) == 32, "BatchClasses must be 32 bytes");
#endif
