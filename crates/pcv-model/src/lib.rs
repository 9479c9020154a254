//! pcv's ground floor: the points, their boxes and attributes, the formats by name, and the built-in
//! scene's definition — plain data and the rules on it, with no files, no GPU and no window.
//!
//! How it works: a point is a 16-byte [`Point`] (x, y, z as f32 in local coordinates, RGBA8), the
//! record the kernels read; [`Bounds`] boxes local positions and [`DBounds`] a file's own f64
//! coordinates. [`attributes`] holds what files carry besides position and colour (intensity,
//! classification, which file a point came from; [`fields`]: the LAS record's other fields as columns), the colour modes and ramps ([`ramp`]) and the one rule that colours a
//! point ([`attributes::ColorSpec::color`]). [`scene`] defines the built-in scene (the prototype's ten
//! cylinders, point i from (seed, i) alone), which the CUDA kernel makes on the device bit for bit.
//! Everything above builds on these: `pcv-io` (files, clouds), `pcv-camera`, `pcv-render`, `pcv-lod`
//! and the app; nothing here imports them.
pub mod attributes;
pub mod bounds;
pub mod crs;
pub mod fields;
pub mod filter;
pub mod format;
pub mod measure;
pub mod number;
pub mod point;
pub mod ramp;
pub mod scene;

pub use bounds::{Bounds, DBounds};
pub use format::Format;
pub use point::Point;
pub use scene::SceneSpec;
