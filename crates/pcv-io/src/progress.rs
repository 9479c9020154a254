//! How far a load is, for anyone who wants to show it: the terminal's progress bar and the window's
//! panel read the same counters.
//!
//! How it works: [`LoadProgress`] is a handful of atomics behind an `Arc` — points decoded so far, the
//! points expected (grown as files are opened), the file being read, and whether the load ended —
//! written by the decoding threads and read by any other thread without locks (the file name sits
//! behind a mutex, written once per file). [`LoadProgress::snapshot`] gives a consistent-enough view
//! for a frame: fraction done, points per second since the load started, and a line of text such as
//! `a.laz 41% (120.5 M of 293.1 M points, 38.2 M points/s)`.
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// A load's counters, shared between the loader and whoever shows them.
#[derive(Debug)]
pub struct LoadProgress {
    done: AtomicU64,
    total: AtomicU64,
    finished: AtomicBool,
    file: Mutex<String>,
    started: Instant,
}

impl Default for LoadProgress {
    fn default() -> Self {
        LoadProgress::new()
    }
}

/// One reading of a [`LoadProgress`].
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressSnapshot {
    pub points_done: u64,
    pub points_total: u64,
    /// 0..=1 (0 while the total is unknown).
    pub fraction: f64,
    pub points_per_s: f64,
    pub elapsed_s: f64,
    pub file: String,
    pub finished: bool,
}

impl ProgressSnapshot {
    /// `a.laz 41% (120.5 M of 293.1 M points, 38.2 M points/s)`.
    pub fn text(&self) -> String {
        let m = |v: f64| format!("{:.1} M", v / 1e6);
        format!(
            "{}{:.0}% ({} of {} points, {} points/s)",
            if self.file.is_empty() { String::new() } else { format!("{} ", self.file) },
            self.fraction * 100.0,
            m(self.points_done as f64),
            m(self.points_total as f64),
            m(self.points_per_s)
        )
    }
}

impl LoadProgress {
    pub fn new() -> LoadProgress {
        LoadProgress {
            done: AtomicU64::new(0),
            total: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            file: Mutex::new(String::new()),
            started: Instant::now(),
        }
    }

    /// `points` more were decoded.
    pub fn add_done(&self, points: u64) {
        self.done.fetch_add(points, Ordering::Relaxed);
    }

    /// `points` more are expected (a file opened).
    pub fn add_total(&self, points: u64) {
        self.total.fetch_add(points, Ordering::Relaxed);
    }

    /// The file being read now.
    pub fn set_file(&self, name: &str) {
        if let Ok(mut f) = self.file.lock() {
            name.clone_into(&mut f);
        }
    }

    /// The load ended (successfully or not).
    pub fn finish(&self) {
        self.finished.store(true, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> ProgressSnapshot {
        let (done, total) = (self.done.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed));
        let elapsed_s = self.started.elapsed().as_secs_f64();
        ProgressSnapshot {
            points_done: done,
            points_total: total.max(done),
            fraction: if total == 0 { 0.0 } else { (done as f64 / total as f64).min(1.0) },
            points_per_s: if elapsed_s > 0.0 { done as f64 / elapsed_s } else { 0.0 },
            elapsed_s,
            file: self.file.lock().map(|f| f.clone()).unwrap_or_default(),
            finished: self.finished.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_up_and_the_text_says_them() {
        let p = LoadProgress::new();
        assert_eq!(p.snapshot().fraction, 0.0);
        p.add_total(200_000_000);
        p.add_done(50_000_000);
        p.set_file("a.laz");
        let s = p.snapshot();
        assert_eq!((s.points_done, s.points_total, s.fraction), (50_000_000, 200_000_000, 0.25));
        assert!(s.text().starts_with("a.laz 25% (50.0 M of 200.0 M points, "), "{}", s.text());
        p.add_done(300_000_000);
        assert_eq!(p.snapshot().fraction, 1.0);
        assert!(!p.snapshot().finished);
        p.finish();
        assert!(p.snapshot().finished);
    }
}
