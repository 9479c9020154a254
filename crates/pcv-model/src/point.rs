//! The point record: what every cloud is made of and what the kernels read.
//!
//! How it works: a [`Point`] is 16 bytes, x, y, z as f32 (local coordinates: the cloud's f64 origin is
//! added back for the source's coordinates) and r, g, b, a as u8 — the prototype's layout. It is
//! `#[repr(C)]` and `Pod`, so a `&[Point]` goes to the GPU or to a file as bytes without a copy.
//! Keep in sync with `struct Point` in kernels/shared.h (size asserted on both sides, and in
//! `render::gpu_data`).
use bytemuck::{Pod, Zeroable};

/// One point: x, y, z as f32, then r, g, b, a as u8 (16 bytes, the prototype's layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Point {
    pub pos: [f32; 3],
    pub rgba: [u8; 4],
}

impl Point {
    pub fn new(pos: [f32; 3], rgba: [u8; 4]) -> Self {
        Self { pos, rgba }
    }

    /// The color as one RGBA8 word, r in the low byte: the value the color pass writes.
    pub fn color_word(&self) -> u32 {
        u32::from_le_bytes(self.rgba)
    }
}

const _: () = assert!(std::mem::size_of::<Point>() == 16);
