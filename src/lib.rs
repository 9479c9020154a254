//! pcv: a real-time point-cloud viewer whose points are rasterized by CUDA kernels (with a CPU twin) —
//! the app layer, on top of the crates below it (ARCHITECTURE.md):
//! `pcv_model` (points, bounds, attributes, the built-in scene) ← `pcv_io` (clouds, formats, COPC,
//! streaming, convert, info; the LAZ codec is `pcv_laz`) ← `pcv_camera` ← `pcv_render` (kernels, twins,
//! the CPU, CUDA and multi-GPU backends) ← `pcv_lod` ← this crate ← the `pcv` binary (`src/bin/pcv/`)
//! and the Python module (`py/`).
//!
//! Its one way in is [`session::open`]: a [`session::Source`] opened on a backend, resident, streamed or
//! with level of detail, with its start camera. Then:
//! - [`viewer`]: the window's loop (input → actions → state → effects → frame), its frontend, effects,
//!   trace and the Python feed;
//! - [`app`]: the viewer's pure model: state, update, layers, picked points, messages;
//! - [`input`]: window events → actions (keymap, input scripts);
//! - [`ui`]: the panel, the help window and the marks drawn over the points;
//! - [`display`]: the window, the frame → texture → blit path, GL timers, imgui's GLFW glue;
//! - [`headless`]: frames with no window (`pcv render`, `pcv record`);
//! - [`bench`]: timed scenarios (`pcv bench`);
//! - [`platform`]: what differs between Linux and Windows for the viewer (advice in messages, the
//!   peer's Python, a console that would close).
pub mod app;
pub mod bench;
pub mod display;
pub mod headless;
pub mod input;
pub mod platform;
pub mod session;
pub mod ui;
pub mod viewer;
