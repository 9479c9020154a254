//! The CPU twin of `kernels/rng.cuh`: the built-in scene's counter-based random numbers,
//! [`crate::cloud::scene::rng`].
pub use crate::cloud::scene::rng::{mix64, sincos_2pi, uniform};
