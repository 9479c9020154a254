//! pcv: a real-time point-cloud viewer whose points are rasterized by CUDA kernels (with a CPU twin).
//!
//! The binary (`src/main.rs`) is a thin CLI over this library:
//! - [`cloud`]: point clouds, the built-in scene, the file formats and color modes;
//! - [`info`], [`convert`]: `pcv info` and `pcv convert`;
//! - [`camera`]: the fly camera and its matrices;
//! - [`render`]: the [`render::Rasterizer`] trait, the CPU backend and the CUDA backend;
//! - [`display`]: the window, the PBO → texture → blit path, CUDA-GL interop and the overlay;
//! - [`viewer`]: the interactive loop that ties them together;
//! - [`headless`]: one frame with no window (`pcv render`);
//! - [`bench`]: timed scenarios (`pcv bench`);
//! - [`image_io`]: PNG in and out;
//! - [`platform`]: what differs between Linux and Windows (the CUDA driver's library, advice in messages).
pub mod bench;
pub mod camera;
pub mod cloud;
pub mod convert;
pub mod display;
pub mod headless;
pub mod image_io;
pub mod info;
pub mod platform;
pub mod render;
pub mod viewer;
