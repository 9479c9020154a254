//! What differs between the systems the viewer runs on: the advice when no window can open, the Python
//! that runs the bench's peer, and keeping an error on screen when a double-clicked pcv.exe's console
//! would close with it (the renderer's own, the CUDA driver's library among them, are in
//! [`pcv_render::platform`]).
//!
//! How it works: each item is a constant (or a small function) chosen at compile time with `cfg`.

/// The advice every "no window" error carries.
#[cfg(windows)]
pub const NO_DISPLAY_ADVICE: &str = "use `pcv render ... -o image.png` to render without a window (headless); \
the viewer needs OpenGL 3.3: install the GPU's own driver (a virtual machine or a remote session without one \
offers only OpenGL 1.1), or put Mesa's opengl32.dll (llvmpipe, e.g. from mesa-dist-win) beside pcv.exe";
/// The advice every "no window" error carries.
#[cfg(not(windows))]
pub const NO_DISPLAY_ADVICE: &str = "use `pcv render ... -o image.png` to render without a window (headless), \
or run the viewer on a virtual display: `xvfb-run -a pcv ...`";

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
        assert!(NO_DISPLAY_ADVICE.is_ascii(), "{NO_DISPLAY_ADVICE}");
    }

    #[test]
    fn messages_name_this_systems_tools() {
        if cfg!(windows) {
            assert!(!NO_DISPLAY_ADVICE.contains("xvfb"), "{NO_DISPLAY_ADVICE}");
        } else {
            assert!(!NO_DISPLAY_ADVICE.contains(".dll"), "{NO_DISPLAY_ADVICE}");
        }
    }
}
