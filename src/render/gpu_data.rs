//! `#[repr(C)]` mirrors of the structs in `kernels/shared.h`.
//!
//! Keep in sync with kernels/shared.h: every struct here has a twin there, with the same fields in the
//! same order, and both sides assert the same sizes. The CPU twins of the kernels use these same types,
//! so a layout change shows up in both backends at once.

use bytemuck::{Pod, Zeroable};

/// The point record (16 bytes); it belongs to the cloud, and is mirrored here for the kernels.
pub use crate::cloud::point::Point;

/// One cylinder of the built-in scene.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Cylinder {
    pub center: [f32; 3],
    pub axis_x: [f32; 3],
    pub axis_y: [f32; 3],
    pub axis_z: [f32; 3],
    pub radius: f32,
    pub height: f32,
    pub color: [f32; 3],
}

/// What every raster pass needs to know about the frame.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FrameUniforms {
    /// Column-major, as `glam::Mat4::to_cols_array`.
    pub clip_from_world: [f32; 16],
    pub width: u32,
    pub height: u32,
    /// Background at the bottom row: RGBA8, r in the low byte.
    pub clear_color: u32,
    /// Background at the top row (equal to `clear_color`: a solid background).
    pub clear_color_top: u32,
}

/// The built-in scene generator's parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SceneParams {
    pub seed: u64,
    pub num_points: u64,
    pub num_cylinders: u32,
    pub _pad: u32,
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

/// The post passes' parameters (`kernels/splat.cu`, `kernels/edl.cu`), made by
/// [`crate::render::look::Look::post_uniforms`].
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
    pub _pad: [u32; 2],
}

/// The largest splat window radius (`PCV_SPLAT_MAX_RADIUS` in kernels/shared.h): points up to 17 px.
pub const SPLAT_MAX_RADIUS: u32 = 8;

const _: () = assert!(std::mem::size_of::<PostUniforms>() == 112);
const _: () = assert!(std::mem::size_of::<Batch>() == 40);
const _: () = assert!(std::mem::size_of::<GridParams>() == 32);
const _: () = assert!(std::mem::size_of::<Point>() == 16);
const _: () = assert!(std::mem::size_of::<Cylinder>() == 68);
const _: () = assert!(std::mem::size_of::<FrameUniforms>() == 80);
const _: () = assert!(std::mem::size_of::<SceneParams>() == 24);
