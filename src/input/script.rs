//! Input scripts: recorded or hand-written input, replayed frame by frame (`--input-script`).
//!
//! How it works: a script is a JSON array of steps, each an input event ([`InputEvent`], the same
//! events the window delivers) with the frame it is delivered before:
//!
//! ```json
//! [ { "frame": 5, "type": "cursor_pos", "x": 400, "y": 225 },
//!   { "frame": 5, "type": "button", "button": "left", "down": true },
//!   { "frame": 6, "type": "cursor_pos", "x": 500, "y": 225 },
//!   { "frame": 7, "type": "button", "button": "left", "down": false },
//!   { "frame": 9, "type": "key", "key": "W", "down": true },
//!   { "frame": 20, "type": "drop", "paths": ["more.las"] } ]
//! ```
//!
//! Scripted events take the same way as the window's, through the panel (imgui) and the keymap, so a script exercises the
//! very code a person does (the interaction tests use them under Xvfb). A script keeps the viewer
//! rendering every frame until its last step has been delivered.
use super::event::InputEvent;
use std::path::{Path, PathBuf};

/// Errors reading a script; they name the file.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not an input script: {message} (expected [{{\"frame\": 5, \"type\": \"key\", \"key\": \"W\", \"down\": true}}, ...])")]
    Json { path: PathBuf, message: String },
}

/// One scripted event.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    pub frame: u64,
    #[serde(flatten)]
    pub event: InputEvent,
}

/// A script: steps in frame order (stable for steps of one frame).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputScript {
    steps: Vec<Step>,
    next: usize,
}

impl InputScript {
    pub fn load(path: &Path) -> Result<InputScript, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Io { path: path.into(), source })?;
        let mut steps: Vec<Step> =
            serde_json::from_str(&text).map_err(|e| ScriptError::Json { path: path.into(), message: e.to_string() })?;
        steps.sort_by_key(|s| s.frame);
        Ok(InputScript { steps, next: 0 })
    }

    pub fn from_steps(mut steps: Vec<Step>) -> InputScript {
        steps.sort_by_key(|s| s.frame);
        InputScript { steps, next: 0 }
    }

    /// The events due before `frame` (each is returned once).
    pub fn due(&mut self, frame: u64) -> Vec<InputEvent> {
        let mut out = Vec::new();
        while let Some(s) = self.steps.get(self.next).filter(|s| s.frame <= frame) {
            out.push(s.event.clone());
            self.next += 1;
        }
        out
    }

    /// Whether steps remain.
    pub fn pending(&self) -> bool {
        self.next < self.steps.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_come_in_frame_order_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, r#"[{"frame": 3, "type": "scroll", "dy": 1}, {"frame": 1, "type": "cursor_pos", "x": 1, "y": 2}, {"frame": 3, "type": "drop", "paths": ["a.las"]}]"#).unwrap();
        let mut s = InputScript::load(&p).unwrap();
        assert!(s.due(0).is_empty());
        assert_eq!(s.due(2), vec![InputEvent::CursorPos { x: 1.0, y: 2.0 }]);
        assert_eq!(s.due(5), vec![InputEvent::Scroll { dy: 1.0 }, InputEvent::Drop { paths: vec!["a.las".into()] }]);
        assert!(!s.pending() && s.due(9).is_empty());
        std::fs::write(&p, r#"[{"frame": 1, "type": "jump"}]"#).unwrap();
        let e = InputScript::load(&p).unwrap_err().to_string();
        assert!(e.contains("s.json: not an input script") && e.contains("jump"), "{e}");
    }
}
