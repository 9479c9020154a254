//! The temporary files of a convert: the output's `.NAME.pcv-partial-PID` (renamed over the output
//! when complete) and COPC's cell files beside it (`….pcv-cells0-PID`).
//!
//! How it works: each is registered here while it exists ([`register`], [`unregister`]), so the
//! binary's Ctrl+C / SIGTERM / console-close handler can remove them all before it exits
//! ([`remove_all`]). A process killed without a chance to (SIGKILL, a power cut) leaves them; the next
//! convert into the same folder finds those whose process is gone and removes them, saying so
//! ([`sweep`]). Whether a process is gone is read from `/proc` (Linux); elsewhere leftovers are only
//! named.
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `path` is a temporary file of this process until [`unregister`]ed.
pub fn register(path: &Path) {
    if let Ok(mut l) = LIVE.lock() {
        l.push(path.to_path_buf());
    }
}

/// `path` was renamed or removed.
pub fn unregister(path: &Path) {
    if let Ok(mut l) = LIVE.lock() {
        l.retain(|p| p != path);
    }
}

/// Removes every temporary file registered now (an interrupt); how many were removed.
pub fn remove_all() -> usize {
    let paths = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(_) => return 0,
    };
    paths.iter().filter(|p| std::fs::remove_file(p).is_ok()).count()
}

/// The process id a temporary file's name ends with: `.NAME.pcv-partial-PID`, `….pcv-cells0-PID`.
fn owner(name: &str) -> Option<u32> {
    if !name.starts_with('.') || !(name.contains(".pcv-partial-") || name.contains(".pcv-cells")) {
        return None;
    }
    name.rsplit_once('-')?.1.parse().ok()
}

/// Whether process `pid` runs (`None`: cannot tell here).
fn running(pid: u32) -> Option<bool> {
    if cfg!(target_os = "linux") {
        Some(Path::new("/proc").join(pid.to_string()).exists())
    } else {
        None
    }
}

/// Temporary files of earlier converts in `output`'s folder whose process is gone: removed (Linux),
/// or only listed where that cannot be told. Returns (removed, left).
pub fn sweep(output: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (mut removed, mut left) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(&dir) else { return (removed, left) };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner(&name).filter(|&p| p != std::process::id()) else { continue };
        match running(pid) {
            Some(true) => {}
            Some(false) if std::fs::remove_file(e.path()).is_ok() => removed.push(e.path()),
            _ => left.push(e.path()),
        }
    }
    (removed, left)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_the_names_a_convert_gives() {
        assert_eq!(owner(".out.laz.pcv-partial-4242"), Some(4242));
        assert_eq!(owner("..out.copc.laz.pcv-partial-17.pcv-cells1-17"), Some(17));
        assert_eq!(owner("out.laz"), None);
        assert_eq!(owner(".hidden-12"), None);
        assert_eq!(owner(".out.laz.pcv-partial-x"), None);
    }
}
