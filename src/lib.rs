//! pcv: a real-time point-cloud viewer whose points are rasterized by CUDA kernels (with a CPU twin).
//!
//! The binary (`src/bin/pcv/`) is a thin CLI over this library, whose one way in is [`session::open`]:
//! - [`cloud`]: point clouds, the built-in scene, the file formats and color modes;
//! - [`info`], [`convert`]: `pcv info` and `pcv convert`;
//! - [`camera`]: the camera (pose, up axis, lens), framing, the fly and orbit controllers, paths;
//! - [`render`]: the [`render::Rasterizer`] trait, the CPU backend and the CUDA backend;
//! - [`lod`]: level of detail: octrees streamed under a point budget (node selection, loader, pool);
//! - [`display`]: the window, the PBO → texture → blit path, CUDA-GL interop, imgui's GLFW glue;
//! - [`input`]: window events → actions (keymap, input scripts);
//! - [`app`]: the interactive loop (actions → state → frame), layers, picking, captures;
//! - [`ui`]: the panel, the help window and the marks drawn over the points;
//! - [`session`]: the one way in: a source opened on a backend, with its start camera;
//! - [`viewer`]: the viewer's entry point and options;
//! - [`headless`]: frames with no window (`pcv render`, `pcv record`);
//! - [`bench`]: timed scenarios (`pcv bench`);
//! - [`platform`]: what differs between Linux and Windows (the CUDA driver's library, advice in messages).
pub mod app;
pub mod bench;
pub mod display;
pub mod headless;
pub mod input;
pub mod lod;
pub mod platform;
pub mod session;
pub mod ui;
pub mod viewer;
