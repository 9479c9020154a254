//! Level of detail: clouds larger than GPU memory, drawn from octrees (COPC files, or octrees built
//! in memory) a node at a time under a point budget.
//!
//! How it works: [`scene::LodScene`] joins one or many tiles' octrees ([`pcv_io::octree`]) into
//! one scene with a common origin. Each frame [`select`] picks the nodes to draw (frustum, projected
//! size, budget; parents before children), [`loader`] reads the missing ones on background threads and
//! cuts them into batches, and [`pool`] keeps them in the rasterizer's fixed pool of batch slots with
//! least-recently-used eviction. The rasterizers draw the pool with the culled modes' batch machinery
//! (a box per batch, frustum and occlusion culling), the same on the CPU and CUDA backends.
//! [`memory`] builds octrees in memory (tests, `pcv --lod`), and [`flight`] measures a streamed flight.
pub mod flight;
pub mod loader;
pub mod memory;
pub mod pool;
pub mod scene;
pub mod select;

pub use scene::{default_point_budget, LodError, LodOptions, LodScene, LodStatus, NodePoint, TileState};
