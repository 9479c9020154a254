//! The CPU twin of `kernels/scene.cu`: the built-in scene's own definition, [`pcv_io::scene::points`].
//!
//! The scene is a source like a file, so its points are defined with the clouds (where hosts generate
//! them without a renderer); the kernel makes the same points on the device, bit for bit
//! (`tests/cuda_vs_cpu.rs`).
pub use pcv_io::scene::points::{scene, scene_point};
