//! Loading dropped files in the background, so the window stays live.
//!
//! How it works: [`Loader::start`] spawns a thread that loads the files one at a time
//! ([`load_files_with`], each file on its own, so one unreadable file is reported and the others still
//! load) and sends what happens over a channel: a file started, loaded (its cloud), failed (the
//! loader's message, which names the file and the place), and the end. The viewer polls the channel
//! every frame it draws while a load runs ([`Loader::poll`]), shows progress and errors in the panel,
//! and adds the loaded clouds as layers once the batch ends, in one upload.
use pcv_io::load::{load_files_with, LoadOptions};
use pcv_io::PointCloud;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::Instant;

/// What the loading thread sends.
enum Msg {
    Started { path: PathBuf, index: usize, of: usize },
    Loaded { path: PathBuf, cloud: Box<PointCloud>, ms: f64 },
    Failed { path: PathBuf, message: String },
    Done,
}

/// What happened, for the panel.
#[derive(Clone, Debug, PartialEq)]
pub enum LoadEvent {
    Started {
        path: PathBuf,
        index: usize,
        of: usize,
    },
    Loaded {
        path: PathBuf,
        points: u64,
        ms: f64,
    },
    Failed {
        path: PathBuf,
        message: String,
    },
    /// Every file was tried.
    Done,
}

/// A batch of files loading.
pub struct Loader {
    rx: Receiver<Msg>,
    pub replace: bool,
    pub started: Instant,
    /// The file being read now, and its place in the batch.
    pub current: Option<(PathBuf, usize, usize)>,
    pub loaded: Vec<PointCloud>,
    pub failed: usize,
    finished: bool,
}

impl Loader {
    pub fn start(paths: Vec<PathBuf>, replace: bool) -> Loader {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            // A dropped folder stands for every point file in it and its subfolders, a dropped .vpc or
            // list for its tiles; one without any is reported as such, and the rest load.
            let mut files: Vec<PathBuf> = Vec::new();
            for p in paths {
                match pcv_io::collection::expand(std::slice::from_ref(&p), true) {
                    Ok(f) => files.extend(f),
                    Err(e) => {
                        if tx.send(Msg::Failed { path: p, message: e.to_string() }).is_err() {
                            return;
                        }
                    }
                }
            }
            let of = files.len();
            let opts = LoadOptions::quiet();
            for (index, path) in files.into_iter().enumerate() {
                if tx.send(Msg::Started { path: path.clone(), index, of }).is_err() {
                    return;
                }
                let t = Instant::now();
                let event = match load_files_with(std::slice::from_ref(&path), &opts) {
                    Ok(cloud) => Msg::Loaded { path, cloud: Box::new(cloud), ms: t.elapsed().as_secs_f64() * 1e3 },
                    Err(e) => Msg::Failed { path, message: e.to_string() },
                };
                if tx.send(event).is_err() {
                    return;
                }
            }
            let _ = tx.send(Msg::Done);
        });
        Loader { rx, replace, started: Instant::now(), current: None, loaded: Vec::new(), failed: 0, finished: false }
    }

    /// The events since the last poll. Loaded clouds are kept for [`Loader::take`]; a thread that
    /// died without saying so (a bug) ends the batch with an error.
    pub fn poll(&mut self) -> Vec<LoadEvent> {
        let mut out = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Started { path, index, of }) => {
                    self.current = Some((path.clone(), index, of));
                    out.push(LoadEvent::Started { path, index, of });
                }
                Ok(Msg::Loaded { path, cloud, ms }) => {
                    out.push(LoadEvent::Loaded { path, points: cloud.len(), ms });
                    self.loaded.push(*cloud);
                }
                Ok(Msg::Failed { path, message }) => {
                    self.failed += 1;
                    out.push(LoadEvent::Failed { path, message });
                }
                Ok(Msg::Done) => {
                    self.finished = true;
                    self.current = None;
                    out.push(LoadEvent::Done);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if !self.finished {
                        self.finished = true;
                        let path = self.current.take().map(|c| c.0).unwrap_or_default();
                        self.failed += 1;
                        out.push(LoadEvent::Failed { path, message: "the loader stopped unexpectedly".into() });
                        out.push(LoadEvent::Done);
                    }
                    break;
                }
            }
        }
        out
    }

    pub fn finished(&self) -> bool {
        self.finished
    }

    /// The clouds loaded so far.
    pub fn take(&mut self) -> Vec<PointCloud> {
        std::mem::take(&mut self.loaded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bad_file_is_reported_and_the_others_load() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.xyz");
        std::fs::write(&good, "0 0 0\n1 1 1\n2 0 1\n").unwrap();
        let bad = dir.path().join("bad.ply");
        std::fs::write(&bad, "ply\nformat ascii 1.0\nelement vertex 2\nproperty float x\nend_header\n1\n").unwrap();
        let missing = dir.path().join("missing.las");
        let mut l = Loader::start(vec![bad.clone(), good.clone(), missing.clone()], false);
        let mut events = Vec::new();
        while !l.finished() {
            events.extend(l.poll());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let failed: Vec<String> = events
            .iter()
            .filter_map(|e| if let LoadEvent::Failed { message, .. } = e { Some(message.clone()) } else { None })
            .collect();
        assert_eq!(failed.len(), 2, "{events:?}");
        assert!(failed[0].contains("bad.ply") && failed[1].contains("missing.las"), "{failed:?}");
        assert_eq!(l.failed, 2);
        let clouds = l.take();
        assert_eq!(clouds.len(), 1);
        assert_eq!(clouds[0].len(), 3);
        assert!(matches!(events.last(), Some(LoadEvent::Done)));
    }

    #[test]
    fn a_dropped_folder_without_point_files_says_so_and_the_rest_load() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        std::fs::write(empty.join("notes.md"), "not points").unwrap();
        let good = dir.path().join("good.xyz");
        std::fs::write(&good, "0 0 0\n1 1 1\n").unwrap();
        let mut l = Loader::start(vec![empty.clone(), good], false);
        let mut events = Vec::new();
        while !l.finished() {
            events.extend(l.poll());
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let failed: Vec<&LoadEvent> = events.iter().filter(|e| matches!(e, LoadEvent::Failed { .. })).collect();
        assert_eq!(failed.len(), 1, "{events:?}");
        let LoadEvent::Failed { path, message } = failed[0] else { unreachable!() };
        assert_eq!(path, &empty);
        assert!(message.contains("no point files in this folder") && !message.contains("is a directory"), "{message}");
        assert_eq!(l.take().iter().map(|c| c.len()).sum::<u64>(), 2);
    }
}
