//! The CPU twin of `kernels/rng.cuh`: the built-in scene's counter-based random numbers,
//! [`pcv_io::scene::rng`].
pub use pcv_io::scene::rng::{mix64, sincos_2pi, uniform};
