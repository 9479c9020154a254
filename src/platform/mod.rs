//! What differs between the systems pcv runs on, in one place: the CUDA driver's library and how to get
//! it, the advice when no window can open, the Python that runs the bench's peer, keeping an error on
//! screen when a double-clicked pcv.exe's console would close with it, and ([`fmaf`]) a correctly
//! rounded `fmaf` for MinGW-w64 builds, whose C library's is not; ([`cpu_time`]) the CPU time of the
//! process or a thread, for the benches and `convert`'s phase timings.
//!
//! How it works: each item is a constant (or a small function) chosen at compile time with `cfg`, so a
//! message names `libcuda.so.1` and `LD_LIBRARY_PATH` on Linux and `nvcuda.dll` and the NVIDIA display
//! driver on Windows; the CUDA backend, the overlay's note, the window's errors and `--help` all read
//! them from here. cudarc itself tries the same names (`libcuda.so`, `libcuda.so.1`, … on Linux,
//! `nvcuda.dll` on Windows), from the system's library search path (Windows: the exe's folder,
//! System32, `PATH`).

pub mod cpu_time;
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

/// The advice every "no window" error carries.
#[cfg(windows)]
pub const NO_DISPLAY_ADVICE: &str = "use `pcv render ... -o image.png` to render without a window (headless); \
the viewer needs OpenGL 3.3: install the GPU's own driver (a virtual machine or a remote session without one \
offers only OpenGL 1.1), or put Mesa's opengl32.dll (llvmpipe, e.g. from mesa-dist-win) beside pcv.exe";
/// The advice every "no window" error carries.
#[cfg(not(windows))]
pub const NO_DISPLAY_ADVICE: &str = "use `pcv render ... -o image.png` to render without a window (headless), \
or run the viewer on a virtual display: `xvfb-run -a pcv ...`";

/// How to get the kernels into a build that has none.
#[cfg(windows)]
pub const NO_KERNELS_REMEDY: &str = "rebuild with nvcc.exe (the CUDA toolkit's, found through CUDA_PATH, or \
PyPI's; see the README's Windows section), or use --backend cpu";
/// How to get the kernels into a build that has none.
#[cfg(not(windows))]
pub const NO_KERNELS_REMEDY: &str = "rebuild after scripts/setup.sh, or use --backend cpu";

/// The Python interpreter that runs `pcv bench --peer`: `PCV_PYTHON` when set, else `python` on
/// Windows (the python.org installer's name; `python3` is often only the Store's stub there) and
/// `python3` elsewhere.
pub fn python_command() -> std::ffi::OsString {
    match std::env::var_os("PCV_PYTHON") {
        Some(p) if !p.is_empty() => p,
        _ => (if cfg!(windows) { "python" } else { "python3" }).into(),
    }
}

/// After an error: on Windows, when pcv.exe has its console to itself (it was double-clicked, so the
/// console window closes with the process), waits for Enter so that the error stays readable. In a
/// console someone else opened (cmd, PowerShell, Windows Terminal), with input that is not a console,
/// and on other systems, it returns at once.
pub fn hold_console_after_error() {
    #[cfg(windows)]
    {
        use std::io::IsTerminal;
        if console_is_ours() && std::io::stdin().is_terminal() {
            eprint!("Press Enter to close this window.");
            let _ = std::io::stdin().read_line(&mut String::new());
        }
    }
}

/// Whether this process is the only one attached to its console.
#[cfg(windows)]
fn console_is_ours() -> bool {
    #[link(name = "kernel32")]
    extern "system" {
        fn GetConsoleProcessList(process_ids: *mut u32, count: u32) -> u32;
    }
    let mut ids = [0u32; 4];
    // SAFETY: the buffer holds `ids.len()` u32s and the call writes at most that many; it returns the
    // number of processes attached (0 without a console), which may exceed the buffer, never overrun it.
    let attached = unsafe { GetConsoleProcessList(ids.as_mut_ptr(), ids.len() as u32) };
    attached == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlay_texts_are_ascii() {
        // The overlay's font (imgui's default) draws '?' for anything else, such as a dash.
        for text in [CUDA_DRIVER_LIBRARY, CUDA_DRIVER_REMEDY, BACKEND_HELP, NO_DISPLAY_ADVICE, NO_KERNELS_REMEDY] {
            assert!(text.is_ascii(), "{text}");
        }
    }

    #[test]
    fn messages_name_this_systems_library() {
        assert!(BACKEND_HELP.contains(CUDA_DRIVER_LIBRARY));
        if cfg!(windows) {
            assert_eq!(CUDA_DRIVER_LIBRARY, "nvcuda.dll");
            for text in [CUDA_DRIVER_REMEDY, BACKEND_HELP, NO_DISPLAY_ADVICE, NO_KERNELS_REMEDY] {
                assert!(
                    !text.contains("libcuda") && !text.contains("LD_LIBRARY_PATH") && !text.contains("xvfb"),
                    "{text}"
                );
            }
        } else {
            assert!(CUDA_DRIVER_LIBRARY.starts_with("libcuda"));
            for text in [CUDA_DRIVER_REMEDY, BACKEND_HELP, NO_DISPLAY_ADVICE] {
                assert!(!text.contains(".dll"), "{text}");
            }
        }
    }
}
