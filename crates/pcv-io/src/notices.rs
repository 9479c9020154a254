//! Lines for a person that arise where no window is at hand (an HTTP retry on a loading thread):
//! [`say`] prints one on stderr at once and keeps it for a window, which shows what [`take`] hands it
//! each frame. At most [`KEPT`] wait (the oldest go first): a window that never asks loses nothing
//! stderr did not already say.
use std::collections::VecDeque;
use std::sync::Mutex;

/// Lines kept for a window, at most.
pub const KEPT: usize = 64;

static WAITING: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// Prints `line` on stderr (prefixed "pcv: ") and keeps it for a window.
pub fn say(line: impl Into<String>) {
    let line = line.into();
    eprintln!("pcv: {line}");
    if let Ok(mut w) = WAITING.lock() {
        if w.len() == KEPT {
            w.pop_front();
        }
        w.push_back(line);
    }
}

/// The lines said since the last call, oldest first.
pub fn take() -> Vec<String> {
    WAITING.lock().map(|mut w| w.drain(..).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wait_for_a_window_and_the_oldest_go_first() {
        take();
        for i in 0..KEPT + 3 {
            say(format!("line {i}"));
        }
        let got = take();
        assert_eq!(got.len(), KEPT);
        assert_eq!(got[0], "line 3");
        assert!(take().is_empty());
    }
}
