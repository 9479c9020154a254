//! The kernels' CPU twins: one module per file of `kernels/`, the same name (`twins::vis` ↔
//! `kernels/vis.cu`, `twins::project` ↔ `kernels/project.cuh`), each the kernel's arithmetic in the
//! kernel's order — the tests' reference.
//!
//! How it works: each twin is written to be read: plain loops over points or pixels, shared atomic
//! buffers as the kernels use them (`fetch_min` with the early depth test), rayon for the tests' sake,
//! and FMA-compiled loops ([`crate::simd::with_fma`]: the same code, `mul_add` one instruction as the
//! kernels' `__fmaf_rn`) — so the CUDA backend's buffers equal them bit for bit, but for the winner of
//! an exact depth tie (`tests/cuda_vs_cpu.rs`). The CPU backend's fast paths ([`crate::cpu`]: points
//! projected 16 at a time, per-thread buffers, groups culled inside a batch, coverage masks) are tested
//! against them. `scene` and `rng` are the built-in scene's own definition (`pcv_model::scene`), which
//! the scene kernel makes on the device.
pub mod batch;
pub mod blend;
pub mod classes;
pub mod clear;
pub mod color;
pub mod composite;
pub mod culled;
pub mod depth;
pub mod edl;
pub mod external;
pub mod filter;
pub mod hzb;
pub mod kept;
pub mod packed;
pub mod post;
pub mod preprocess;
pub mod project;
pub mod ranges;
pub mod rng;
pub mod scene;
pub mod splat;
pub mod vis;
