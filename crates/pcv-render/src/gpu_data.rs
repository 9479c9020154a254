//! `#[repr(C)]` mirrors of the structs in `kernels/shared.h`.
//!
//! Keep in sync with kernels/shared.h: every struct here has a twin there, with the same fields in the
//! same order, and both sides assert the same sizes. The CPU twins of the kernels use these same types,
//! so a layout change shows up in both backends at once.

use bytemuck::{Pod, Zeroable};

/// The point record (16 bytes); it belongs to the cloud, and is mirrored here for the kernels.
pub use pcv_io::point::Point;
/// The built-in scene's cylinder and generator parameters; they belong to the scene's definition.
pub use pcv_io::scene::{Cylinder, SceneParams};

/// What every raster pass needs to know about the frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FrameUniforms {
    /// The viewport folded into `clip_from_world` (column-major, as `glam::Mat4::to_cols_array`): rows
    /// 0 and 1 give pixel coordinates times w, row 2 depth in [0, 1] times w, row 3 w. Made by
    /// [`crate::FrameParams::uniforms`]; kernels/project.cuh says how it is used.
    pub screen_from_world: [f32; 16],
    pub width: u32,
    pub height: u32,
    /// Background at row 0 (the top row): RGBA8, r in the low byte.
    pub clear_color: u32,
    /// Background at the last row (the bottom; equal to `clear_color`: a solid background).
    pub clear_color_last_row: u32,
}

/// Points per batch (`PCV_BATCH_POINTS` in kernels/shared.h): the preprocessing cuts the spatially
/// sorted points into consecutive batches of this many, each with a bounding box.
pub const BATCH_POINTS: u32 = 4096;

/// One batch of [`BATCH_POINTS`] consecutive sorted points: its box and its 10-bit quantization step
/// (`scale[k] = (max[k] - min[k]) / 1023`; a coordinate decodes as `min + q * scale`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Batch {
    pub min: [f32; 3],
    pub max: [f32; 3],
    pub scale: [f32; 3],
    /// Points in this batch ([`BATCH_POINTS`] except for the last).
    pub num_points: u32,
}

/// A batch of no points: an unused slot of a level-of-detail pool, drawn as nothing.
pub const EMPTY_BATCH: Batch = Batch { min: [0.0; 3], max: [0.0; 3], scale: [0.0; 3], num_points: 0 };

/// The bucket sort's grid: cell = floor((p - origin) * inv_cell) per axis, clamped to
/// `[0, 2^bits - 1]`, Morton-interleaved into a `3 * bits` key; non-finite points get the last bucket.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GridParams {
    pub origin: [f32; 3],
    /// Cells per world unit.
    pub inv_cell: f32,
    /// Bits per axis.
    pub bits: u32,
    pub _pad: u32,
    pub num_points: u64,
}

/// How far the depth bits sit up in a visibility word (`PCV_DEPTH_SHIFT`): a depth in [0, 1] is a
/// float below 2.0, whose bits fit in 30, which leaves 34 bits of payload — point indices up to
/// 2^34 − 2 (17 billion points) or a colour. The words order like (depth, payload).
pub const DEPTH_SHIFT: u32 = 34;
/// The payload bits of a visibility word (`PCV_PAYLOAD_MASK`).
pub const PAYLOAD_MASK: u64 = (1 << DEPTH_SHIFT) - 1;
/// The payload of a pixel no point reached (`PCV_EMPTY_PAYLOAD`).
pub const EMPTY_PAYLOAD: u64 = PAYLOAD_MASK;

/// A visibility word (`PCV_WORD`).
#[inline(always)]
pub const fn word(depth_bits: u32, payload: u64) -> u64 {
    (depth_bits as u64) << DEPTH_SHIFT | payload
}

/// A visibility word's depth bits (`PCV_WORD_DEPTH`).
#[inline(always)]
pub const fn word_depth(w: u64) -> u32 {
    (w >> DEPTH_SHIFT) as u32
}

/// A visibility word's payload (`PCV_WORD_PAYLOAD`).
#[inline(always)]
pub const fn word_payload(w: u64) -> u64 {
    w & PAYLOAD_MASK
}

/// The post passes' parameters (`kernels/splat.cu`, `kernels/edl.cu`), made by
/// [`crate::look::Look::post_uniforms`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PostUniforms {
    pub width: u32,
    pub height: u32,
    /// Window radius R: the splat reads (2R + 1)² pixels around each pixel (at most [`SPLAT_MAX_RADIUS`]).
    pub splat_radius_px: u32,
    /// Fixed point size N (a disk of diameter N pixels), or 0 for adaptive sizes.
    pub splat_diameter_px: u32,
    /// Adaptive sizes: a point's diameter in pixels at a view distance of 1.
    pub adaptive_px_at_1m: f32,
    pub near_m: f32,
    pub far_m: f32,
    /// near · far
    pub near_far_m2: f32,
    /// far − near
    pub far_minus_near_m: f32,
    /// EDL: shade = 2^(−response · edl_k), edl_k = 300 · strength · log2(e).
    pub edl_k: f32,
    /// The 8 neighbours EDL compares each pixel with, in pixels (x, y).
    pub edl_offsets: [[i32; 2]; 8],
    /// 1: points are squares (|dx|, |dy| ≤ N / 2); 0: disks (|d| ≤ N / 2).
    pub splat_square: u32,
    /// 1: orthographic (depth linear in distance from `near_m`, adaptive sizes independent of it).
    pub ortho: u32,
    /// High quality (`kernels/blend.cu`): a point blends into its pixel where its view distance is at
    /// most `blend_window` times the pixel's nearest (1 + [`crate::look::BLEND_DEPTH_FRACTION`]).
    pub blend_window: f32,
}

/// The largest splat window radius (`PCV_SPLAT_MAX_RADIUS` in kernels/shared.h): points up to 17 px.
pub const SPLAT_MAX_RADIUS: u32 = 8;

/// log2 of the pixels a side of the depth pyramid's level-0 tiles (`PCV_HZB_TILE_LOG2`).
pub const HZB_TILE_LOG2: u32 = 2;
/// Pixels a side of the depth pyramid's level-0 tiles (`PCV_HZB_TILE`).
pub const HZB_TILE: u32 = 1 << HZB_TILE_LOG2;
/// The most levels the depth pyramid has (`PCV_HZB_MAX_LEVELS`): enough for 2^15-pixel frames.
pub const HZB_MAX_LEVELS: usize = 12;

/// The depth pyramid's layout (`kernels/hzb.cu`): level 0 holds the largest depth of each
/// [`HZB_TILE`]² tile, each level above the largest of 2 × 2 cells below, up to one cell; level `l` is
/// `width[l] × height[l]` words from `offset[l]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct HzbParams {
    pub levels: u32,
    pub width: [u32; HZB_MAX_LEVELS],
    pub height: [u32; HZB_MAX_LEVELS],
    pub offset: [u32; HZB_MAX_LEVELS],
    /// Words in all levels.
    pub total: u32,
    pub _pad: [u32; 2],
}

impl HzbParams {
    /// The pyramid of a `width_px × height_px` frame.
    pub fn for_frame(width_px: u32, height_px: u32) -> HzbParams {
        let mut h = HzbParams::default();
        let (mut w, mut ht) = (width_px.div_ceil(HZB_TILE).max(1), height_px.div_ceil(HZB_TILE).max(1));
        loop {
            let l = h.levels as usize;
            h.width[l] = w;
            h.height[l] = ht;
            h.offset[l] = h.total;
            h.total += w * ht;
            h.levels += 1;
            if (w == 1 && ht == 1) || h.levels as usize == HZB_MAX_LEVELS {
                break;
            }
            (w, ht) = (w.div_ceil(2), ht.div_ceil(2));
        }
        h
    }
}

/// Indices of the culled modes' counters (`PCV_COUNT_*` in kernels/shared.h).
pub mod counter {
    pub const CULLED: usize = 0;
    pub const OCCLUDED: usize = 1;
    pub const QUANTIZED: usize = 2;
    pub const FULL: usize = 3;
    pub const LIST1: usize = 4;
    pub const LIST2: usize = 5;
    /// Batches the filter drops whole (`PCV_COUNT_FILTERED`).
    pub const FILTERED: usize = 6;
    /// The high-quality blend's list of batches (`PCV_COUNT_LIST_BLEND`).
    pub const LIST_BLEND: usize = 7;
    /// How many there are.
    pub const COUNT: usize = 8;
}

/// Most clip boxes the culled modes apply themselves (`PCV_FILTER_MAX_BOXES`).
pub const FILTER_MAX_BOXES: usize = 8;
/// Most clip planes the culled modes apply themselves (`PCV_FILTER_MAX_PLANES`).
pub const FILTER_MAX_PLANES: usize = 8;
/// Value ranges the kernels test (`PCV_FILTER_MAX_RANGES`).
pub const FILTER_MAX_RANGES: usize = 4;

/// A clip box in the cloud's frame (`FilterBox`): keeps (with `outside`, drops) the points p with
/// `|axes[k] · (p − center)| ≤ half[k]` for every k.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FilterBox {
    pub center: [f32; 3],
    pub half: [f32; 3],
    /// Row k: the box's axis k in the cloud's frame.
    pub axes: [f32; 9],
    /// 1: keep what is outside.
    pub outside: u32,
}

/// A clip plane in the cloud's frame (`FilterPlane`): keeps `normal · p + offset ≥ 0`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FilterPlane {
    pub normal: [f32; 3],
    pub offset: f32,
}

/// The filters the culled modes apply themselves (`FilterUniforms`, `kernels/filter.cuh`), made by
/// [`crate::filter::uniforms`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct FilterUniforms {
    /// Bit `c % 32` of word `c / 32`: class code c hidden.
    pub hidden_classes: [u32; 8],
    /// 1: the class codes are read (some class is hidden).
    pub tests_classes: u32,
    pub num_boxes: u32,
    pub num_planes: u32,
    /// How many of the boxes keep what is inside.
    pub num_inside: u32,
    pub boxes: [FilterBox; FILTER_MAX_BOXES],
    pub planes: [FilterPlane; FILTER_MAX_PLANES],
    /// Bit `c % 32` of word `c / 32`: return code c ([`return_code`]) hidden.
    pub hidden_returns: [u32; 8],
    /// 1: the return codes are read (a returns filter).
    pub tests_returns: u32,
    /// Value ranges tested; range k reads [`FilterColumns::values`]`[k]`.
    pub num_ranges: u32,
    pub ranges: [FilterRange; FILTER_MAX_RANGES],
}

/// A value range (`FilterRange`): a point passes when `lo ≤ value ≤ hi`, its value relative to its
/// column's base (the bounds rounded inwards to f32: the same decisions as the host's f64 test).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FilterRange {
    pub lo: f32,
    pub hi: f32,
    /// The attribute (`pcv_io::filter::RangeOf::column_id`), for the backend that keeps the columns.
    pub field: u32,
    pub _pad: u32,
}

/// A point's return code (`PCV_RETURN_CODE`): return number `r` and number of returns `n`, 0..15 each.
pub const fn return_code(r: u8, n: u8) -> u8 {
    (r & 15) | (n << 4)
}

/// A batch's values of one attribute (`BatchRange`, `kernels/ranges.cu`): the smallest and largest
/// that are numbers (none: +∞, −∞) and how many are NaN.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BatchRange {
    pub min: f32,
    pub max: f32,
    pub nans: u32,
    pub _pad: u32,
}

impl Default for BatchRange {
    fn default() -> Self {
        BatchRange { min: f32::INFINITY, max: f32::NEG_INFINITY, nans: 0, _pad: 0 }
    }
}

/// Where the filter's per-point columns are (`FilterColumns`): device addresses in table order, 0
/// where not tested.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct FilterColumns {
    pub classes: u64,
    pub batch_classes: u64,
    pub returns: u64,
    pub batch_returns: u64,
    pub values: [u64; FILTER_MAX_RANGES],
    pub batch_values: [u64; FILTER_MAX_RANGES],
    /// The kept lists (`kernels/kept.cu`): batch b's passing points are `kept[kept_first[b]..kept_first[b
    /// + 1]]` (u16 indices inside the batch) where its summaries cannot decide; 0: tested as drawn.
    pub kept_first: u64,
    pub kept: u64,
}

impl Default for FilterUniforms {
    fn default() -> Self {
        Zeroable::zeroed()
    }
}

/// A batch's codes (`BatchClasses`: class codes, or return codes): bit `c % 32` of word `c / 32` when one
/// of its points has code c.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BatchClasses {
    pub bits: [u32; 8],
}

/// What a batch's summary says of the filter (`PCV_FILTER_*`).
pub mod filter_says {
    /// No point passes: the batch is skipped.
    pub const NONE: u32 = 0;
    /// Every point passes: drawn without a test.
    pub const ALL: u32 = 1;
    /// Each point is tested.
    pub const SOME: u32 = 2;
}

const _: () = assert!(std::mem::size_of::<HzbParams>() == 160);
const _: () = assert!(std::mem::size_of::<FilterBox>() == 64);
const _: () = assert!(std::mem::size_of::<FilterPlane>() == 16);
const _: () = assert!(std::mem::size_of::<FilterRange>() == 16);
const _: () = assert!(std::mem::size_of::<FilterUniforms>() == 792);
const _: () = assert!(std::mem::size_of::<BatchRange>() == 16);
const _: () = assert!(std::mem::size_of::<FilterColumns>() == 112);
const _: () = assert!(std::mem::size_of::<BatchClasses>() == 32);
const _: () = assert!(std::mem::size_of::<PostUniforms>() == 116);
const _: () = assert!(std::mem::size_of::<Batch>() == 40);
const _: () = assert!(std::mem::size_of::<GridParams>() == 32);
const _: () = assert!(std::mem::size_of::<Point>() == 16);
const _: () = assert!(std::mem::size_of::<Cylinder>() == 68);
const _: () = assert!(std::mem::size_of::<FrameUniforms>() == 80);
const _: () = assert!(std::mem::size_of::<SceneParams>() == 24);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pyramid_goes_up_to_one_cell() {
        let h = HzbParams::for_frame(1920, 1080);
        assert_eq!((h.width[0], h.height[0]), (480, 270));
        assert_eq!((h.width[1], h.height[1]), (240, 135));
        let top = h.levels as usize - 1;
        assert_eq!((h.width[top], h.height[top]), (1, 1));
        assert_eq!(h.levels, 10);
        assert_eq!(h.total, (0..h.levels as usize).map(|l| h.width[l] * h.height[l]).sum::<u32>());
        let one = HzbParams::for_frame(1, 1);
        assert_eq!((one.levels, one.total), (1, 1));
    }
}
