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

/// The error and its causes as one line, each cause once: the library's errors name their cause in
/// their own text, so a cause the line already holds is not repeated.
pub fn one_message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for text in e.chain().map(|c| c.to_string()) {
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_message;

    #[test]
    fn an_error_names_each_cause_once() {
        // A load error whose text holds its cause, under a context of the command's.
        let path = std::env::temp_dir().join("pcv-not-a-las-file.las");
        std::fs::write(&path, b"this is not a LAS file").unwrap();
        let e = pcv_io::load::load_files(std::slice::from_ref(&path)).unwrap_err();
        let e = anyhow::Error::new(e).context("opening the files");
        let text = one_message(&e);
        let _ = std::fs::remove_file(&path);
        assert_eq!(text.matches("not a LAS file").count(), 1, "{text}");
        assert!(text.starts_with("opening the files: ") && text.contains("pcv-not-a-las-file.las"), "{text}");
        // Causes that add something are all kept, in order.
        let io = std::io::Error::other("disk on fire");
        let e = anyhow::Error::new(io).context("writing frame.png").context("pcv render");
        assert_eq!(one_message(&e), "pcv render: writing frame.png: disk on fire");
    }
}
