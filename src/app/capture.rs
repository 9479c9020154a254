//! Captures: screenshot file names, the pose as command-line text, bookmarks as a path file.
//!
//! How it works: names carry the UTC time to the second, `pcv-20261130-142501.png`, with `-2`, `-3`,
//! ... appended when that file exists (two screenshots in one second), so nothing is overwritten. The
//! pose is printed as the arguments that reproduce the view: `--camera x,y,z,yaw,pitch` in the file's
//! coordinates (the default `--camera-frame`) and `--up` (see [`pcv_camera::pose::PoseArg::format`]).
use glam::DVec3;
use pcv_camera::{Camera, PoseArg};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// `YYYYMMDD-HHMMSS` (UTC) of `t`.
pub fn timestamp(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The calendar date of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A new file `dir/prefix-<time>.ext` that does not exist yet.
pub fn unique_path(dir: &Path, prefix: &str, ext: &str, t: SystemTime) -> PathBuf {
    let stamp = timestamp(t);
    let mut p = dir.join(format!("{prefix}-{stamp}.{ext}"));
    let mut n = 2;
    while p.exists() {
        p = dir.join(format!("{prefix}-{stamp}-{n}.{ext}"));
        n += 1;
    }
    p
}

/// The arguments that reproduce `camera`'s view of a cloud with this origin.
pub fn pose_args(camera: &Camera, origin: DVec3) -> String {
    let projection = match camera.projection {
        pcv_camera::Projection::Orthographic { half_height_m } => {
            format!(" --projection ortho --ortho-height {}", 2.0 * half_height_m)
        }
        pcv_camera::Projection::Perspective => String::new(),
    };
    format!("--camera {} --up {}{projection}", PoseArg::format(&camera.pose, origin), camera.up)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_times() {
        assert_eq!(timestamp(SystemTime::UNIX_EPOCH), "19700101-000000");
        // 2026-11-30 14:25:01 UTC.
        assert_eq!(timestamp(SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_048_701)), "20261130-142501");
        // A leap day.
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn names_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(86_400);
        let a = unique_path(dir.path(), "pcv", "png", t);
        assert!(a.ends_with("pcv-19700102-000000.png"), "{}", a.display());
        std::fs::write(&a, b"x").unwrap();
        let b = unique_path(dir.path(), "pcv", "png", t);
        assert!(b.ends_with("pcv-19700102-000000-2.png"), "{}", b.display());
    }

    #[test]
    fn pose_arguments_read_back() {
        let cam = Camera::for_cloud(pcv_io::Bounds::EMPTY, true);
        assert_eq!(pose_args(&cam, DVec3::ZERO), "--camera -3,0,0,0,0 --up z");
    }
}
