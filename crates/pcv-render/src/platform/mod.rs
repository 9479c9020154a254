//! What differs between the systems the renderer runs on: the CUDA driver's library and how to get it,
//! `--backend`'s help, what to do about a build without kernels, and ([`fmaf`]) a correctly rounded
//! `fmaf` for MinGW-w64 builds, whose C library's is not.
//!
//! How it works: each item is a constant chosen at compile time with `cfg`, so a message names
//! `libcuda.so.1` and `LD_LIBRARY_PATH` on Linux and `nvcuda.dll` and the NVIDIA display driver on
//! Windows; the CUDA backend, the overlay's note and `--help` all read them from here. cudarc itself
//! tries the same names (`libcuda.so`, `libcuda.so.1`, … on Linux, `nvcuda.dll` on Windows), from the
//! system's library search path (Windows: the exe's folder, System32, `PATH`).

pub mod fmaf;

/// The NVIDIA driver's CUDA library, as the system's loader names it.
#[cfg(windows)]
pub const CUDA_DRIVER_LIBRARY: &str = "nvcuda.dll";
/// The NVIDIA driver's CUDA library, as the system's loader names it.
#[cfg(not(windows))]
pub const CUDA_DRIVER_LIBRARY: &str = "libcuda.so.1";

/// What to do when [`CUDA_DRIVER_LIBRARY`] cannot be loaded.
#[cfg(windows)]
pub const CUDA_DRIVER_REMEDY: &str = "install or update the NVIDIA display driver (580 or newer for CUDA 13; \
it puts nvcuda.dll in C:\\Windows\\System32); the CUDA toolkit is not needed to run pcv";
/// What to do when [`CUDA_DRIVER_LIBRARY`] cannot be loaded.
#[cfg(target_os = "linux")]
pub const CUDA_DRIVER_REMEDY: &str = "install the NVIDIA driver (580 or newer for CUDA 13), or put the directory \
holding libcuda.so.1 on LD_LIBRARY_PATH";
/// What to do when [`CUDA_DRIVER_LIBRARY`] cannot be loaded.
#[cfg(not(any(windows, target_os = "linux")))]
pub const CUDA_DRIVER_REMEDY: &str = "CUDA needs Linux or Windows with an NVIDIA driver";

/// `--backend`'s help: what auto picks and which library CUDA needs on this system.
#[cfg(windows)]
pub const BACKEND_HELP: &str = "Rasterizer: auto picks CUDA when the NVIDIA driver (nvcuda.dll) and a device \
exist, else the CPU (which needs no driver)";
/// `--backend`'s help: what auto picks and which library CUDA needs on this system.
#[cfg(not(windows))]
pub const BACKEND_HELP: &str = "Rasterizer: auto picks CUDA when the NVIDIA driver (libcuda.so.1) and a device \
exist, else the CPU (which needs no driver)";

/// How to get the kernels into a build that has none.
#[cfg(windows)]
pub const NO_KERNELS_REMEDY: &str = "rebuild with nvcc.exe (the CUDA toolkit's, found through CUDA_PATH, or \
PyPI's; see the README's Windows section), or use --backend cpu";
/// How to get the kernels into a build that has none.
#[cfg(not(windows))]
pub const NO_KERNELS_REMEDY: &str = "rebuild after scripts/setup.sh, or use --backend cpu";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_texts_are_ascii() {
        // The overlay's font (imgui's default) draws '?' for anything else, such as a dash.
        for text in [CUDA_DRIVER_LIBRARY, CUDA_DRIVER_REMEDY, BACKEND_HELP, NO_KERNELS_REMEDY] {
            assert!(text.is_ascii(), "{text}");
        }
    }

    #[test]
    fn messages_name_this_systems_library() {
        assert!(BACKEND_HELP.contains(CUDA_DRIVER_LIBRARY));
        if cfg!(windows) {
            assert_eq!(CUDA_DRIVER_LIBRARY, "nvcuda.dll");
            for text in [CUDA_DRIVER_REMEDY, BACKEND_HELP, NO_KERNELS_REMEDY] {
                assert!(
                    !text.contains("libcuda") && !text.contains("LD_LIBRARY_PATH") && !text.contains("xvfb"),
                    "{text}"
                );
            }
        } else {
            assert!(CUDA_DRIVER_LIBRARY.starts_with("libcuda"));
            for text in [CUDA_DRIVER_REMEDY, BACKEND_HELP] {
                assert!(!text.contains(".dll"), "{text}");
            }
        }
    }
}
