//! Cross-sections: the points of a strip along a measured line, seen side on.
//!
//! How it works: a listed distance or polyline measurement gives the section, from its first vertex
//! `a` to its last `b` (file coordinates), and the panel a width. [`Profile::strip`] is the strip as an
//! oriented clip box of the filter engine (centred on the section, along it, across it by the width,
//! the cloud's whole height), added to the filter in force ([`Profile::strip_filter`]). The camera is
//! orthographic, level, looking across the section with `a` on the left and `b` on the right
//! ([`Profile::camera`]), framing the strip's length and the cloud's height; a grid of stations along
//! the section and heights is drawn over it ([`crate::ui::marks`]), in the file's units.
//!
//! Where it is drawn: for a cloud whose points the host holds, in a window of its own beside the
//! main view ([`Profile::window`]: the viewer's `profile_view` draws the strip's points with a second
//! rasterizer of the same backend, and clicks there pick and measure — height differences, slopes —
//! as in the main view); the main view keeps its camera and filter. For streamed and level-of-detail
//! clouds (no host points to take the strip from) the main view itself becomes the profile: the strip
//! is added to the rasterizer's filter, so it draws only the strip, culling whole batches outside it,
//! and closing gives back the camera and filter it found. [`Profile::rows`] lists the strip's points as
//! station, offset and height for the CSV export.
use glam::{DQuat, DVec3, Vec3};
use pcv_camera::{Camera, Pose, Projection};
use pcv_io::filter::{ClipBox, Keep, PointFilter};
use pcv_io::PointCloud;

/// An open cross-section and what it replaced.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub a: DVec3,
    pub b: DVec3,
    /// Across the section, in the files' horizontal unit.
    pub width: f64,
    /// The camera and filter before it opened.
    pub before: (Camera, PointFilter),
    /// Drawn in a window of its own, whose image has this size (pixels); `None`: in the main view.
    pub window: Option<(u32, u32)>,
}

/// One point of the strip: where along the section, how far off it (left negative), how high.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProfileRow {
    pub station: f64,
    pub offset: f64,
    pub height: f64,
    pub file: DVec3,
    /// Its index in the cloud.
    pub index: usize,
}

impl Profile {
    /// The section's unit direction across the ground (a → b) and its horizontal length.
    pub fn direction(&self) -> (DVec3, f64) {
        let d = DVec3::new(self.b.x - self.a.x, self.b.y - self.a.y, 0.0);
        let len = d.length();
        (if len > 0.0 { d / len } else { DVec3::X }, len)
    }

    /// How far `f` (file coordinates) lies off the section, across the ground (left negative).
    pub fn offset_of(&self, f: DVec3) -> f64 {
        offset(self.a, self.direction().0, f)
    }

    /// The strip as a clip box over the cloud's heights (`z_range`, file coordinates).
    pub fn strip(&self, z_range: (f64, f64)) -> ClipBox {
        let (dir, len) = self.direction();
        let mid = (self.a + self.b) * 0.5;
        let (z0, z1) = z_range;
        let margin = ((z1 - z0) * 0.05).max(1e-3);
        ClipBox {
            center: DVec3::new(mid.x, mid.y, (z0 + z1) * 0.5),
            half_extent: DVec3::new(len * 0.5, self.width * 0.5, (z1 - z0) * 0.5 + margin),
            rotation: DQuat::from_rotation_z(dir.y.atan2(dir.x)),
            keep: Keep::Inside,
        }
    }

    /// The side-on camera: orthographic, level, `a` on the left, framing the strip's length and
    /// `z_range` in a frame of `aspect`.
    pub fn camera(&self, base: &Camera, cloud: &PointCloud, z_range: (f64, f64), aspect: f32) -> Camera {
        let (dir, len) = self.direction();
        let mid = DVec3::new((self.a.x + self.b.x) * 0.5, (self.a.y + self.b.y) * 0.5, (z_range.0 + z_range.1) * 0.5);
        // Right = (sin yaw, −cos yaw, 0) for z up: right along a → b.
        let yaw = (dir.x as f32).atan2(-dir.y as f32);
        let forward = Vec3::new(yaw.cos(), yaw.sin(), 0.0);
        let centre = cloud.from_source(mid).unwrap_or(Vec3::ZERO);
        let half_height =
            ((((z_range.1 - z_range.0) * 0.5 * 1.15) as f32).max(len as f32 * 0.5 * 1.05 / aspect.max(1e-3))).max(1e-3);
        let mut cam = *base;
        cam.up = pcv_camera::UpAxis::PosZ;
        cam.projection = Projection::Orthographic { half_height_m: half_height };
        cam.pose = Pose {
            eye: centre - forward * (self.width as f32 + pcv_camera::lens::equivalent_depth(half_height)),
            yaw_rad: yaw,
            pitch_rad: 0.0,
        };
        cam
    }

    /// The filter with the strip added to what `before` showed.
    pub fn filter(&self, z_range: (f64, f64)) -> PointFilter {
        self.strip_filter(&self.before.1, z_range)
    }

    /// `shown` (a filter) with the strip added.
    pub fn strip_filter(&self, shown: &PointFilter, z_range: (f64, f64)) -> PointFilter {
        let mut f = shown.clone();
        f.boxes.push(self.strip(z_range));
        f
    }

    /// The filter that shows the strip's points, given the main view's `filter`: the main view's
    /// filter when the profile is drawn there (it holds the strip), else that filter with the strip.
    pub fn points_filter(&self, filter: &PointFilter, cloud: &PointCloud) -> PointFilter {
        match self.window {
            Some(_) => self.strip_filter(filter, z_range(cloud)),
            None => filter.clone(),
        }
    }

    /// The strip's points of `cloud` that `filter` (the profile's) shows, by station.
    pub fn rows(&self, cloud: &PointCloud, filter: &PointFilter) -> Vec<ProfileRow> {
        let (dir, _) = self.direction();
        let mut rows: Vec<ProfileRow> = pcv_io::filter::kept(cloud, filter, 0..cloud.points.len())
            .runs
            .into_iter()
            .flat_map(|r| r.map(|i| (i, cloud.to_source(Vec3::from_array(cloud.points[i].pos)))))
            .map(|(index, f)| {
                let d = f - self.a;
                ProfileRow { station: d.dot(dir), offset: offset(self.a, dir, f), height: f.z, file: f, index }
            })
            .collect();
        rows.sort_by(|p, q| p.station.total_cmp(&q.station));
        rows
    }
}

/// How far `f` lies off the section from `a` along `dir` (unit, level), across the ground, left negative.
fn offset(a: DVec3, dir: DVec3, f: DVec3) -> f64 {
    -(f - a).dot(DVec3::new(-dir.y, dir.x, 0.0))
}

/// Writes the strip's points from the files the window opened to `path` (LAS/LAZ by its extension),
/// every field kept: `pcv convert`'s filtered copy with the profile's filter. What was written, said.
pub fn write_strip(s: &super::state::AppState, path: &std::path::Path) -> Result<String, String> {
    if s.profile.is_none() {
        return Err("no profile is open".into());
    }
    let files: Vec<std::path::PathBuf> =
        s.sources.iter().filter(|x| !x.contains("://")).map(std::path::PathBuf::from).collect();
    if files.is_empty() {
        return Err("the strip is written from files, and these points came from none (or from URLs)".into());
    }
    let opts = pcv_io::load::LoadOptions { progress: false, warnings: false, ..Default::default() };
    let filter = s
        .profile
        .as_ref()
        .map_or_else(|| s.layers.filter.clone(), |p| p.points_filter(&s.layers.filter, &s.layers.cloud));
    let sum = pcv_io::convert::convert_filtered(&files, path, &opts, &filter).map_err(|e| e.to_string())?;
    Ok(format!("{} strip points written to {} ({})", sum.points, path.display(), sum.how))
}

/// The file heights the cloud spans (its bounds).
pub fn z_range(cloud: &PointCloud) -> (f64, f64) {
    let lo = cloud.to_source(cloud.bounds.min).z;
    let hi = cloud.to_source(cloud.bounds.max).z;
    (lo.min(hi), lo.max(hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcv_io::Point;

    /// Flat ground at z 100 every 0.5 m over 40 × 40 m, with a 6 m-tall box building (x 10..20, y 10..20).
    fn site() -> PointCloud {
        let mut pts = Vec::new();
        for i in 0..80 {
            for j in 0..80 {
                let (x, y) = (i as f32 * 0.5 + 0.25, j as f32 * 0.5 + 0.25);
                let roof = (10.0..20.0).contains(&x) && (10.0..20.0).contains(&y);
                pts.push(Point::new([x, y, if roof { 6.0 } else { 0.0 }], [200; 4]));
            }
        }
        PointCloud::from_points(pts, DVec3::new(1000.0, 2000.0, 100.0), "site")
    }

    #[test]
    fn a_section_through_a_building_reads_its_roof_height_and_the_camera_sees_it_side_on() {
        let cloud = site();
        let cam = Camera::for_cloud(cloud.bounds, false);
        // A diagonal section from south-west to north-east through the building.
        let p = Profile {
            a: DVec3::new(1002.0, 2002.0, 100.0),
            b: DVec3::new(1030.0, 2030.0, 100.0),
            width: 1.0,
            before: (cam, PointFilter::default()),
            window: None,
        };
        let z = z_range(&cloud);
        assert_eq!(z, (100.0, 106.0));
        let rows = p.rows(&cloud, &p.filter(z));
        assert!(rows.len() > 100, "{} points in the strip", rows.len());
        assert!(rows.iter().all(|r| r.offset.abs() <= 0.5 + 1e-9), "inside the width");
        assert!(rows.windows(2).all(|w| w[0].station <= w[1].station));
        // Stations inside the building (x, y in 10..20: 8√2 .. 18√2 from a) are at the roof, 6 m up.
        let roof: Vec<&ProfileRow> = rows
            .iter()
            .filter(|r| r.station > 8.0 * 2f64.sqrt() + 0.5 && r.station < 18.0 * 2f64.sqrt() - 0.5)
            .collect();
        assert!(!roof.is_empty() && roof.iter().all(|r| r.height == 106.0), "roof heights");
        let ground = rows.iter().filter(|r| r.station < 8.0 * 2f64.sqrt() - 0.5).count();
        assert!(ground > 0 && rows.iter().filter(|r| r.station < 8.0 * 2f64.sqrt() - 0.5).all(|r| r.height == 100.0));
        // The camera: orthographic, level, a on the left of b, both in the frame.
        let pc = p.camera(&cam, &cloud, z, 16.0 / 9.0);
        assert!(pc.is_ortho() && pc.pose.pitch_rad == 0.0);
        let m = pc.clip_from_world(1600, 900);
        let ndc = |f: DVec3| {
            let c = m * cloud.from_source(f).unwrap().extend(1.0);
            (c.x / c.w, c.y / c.w)
        };
        let (la, lb) = (ndc(p.a), ndc(p.b));
        assert!(la.0 < -0.8 && lb.0 > 0.8 && la.0.abs() <= 1.0 && lb.0.abs() <= 1.0, "{la:?} {lb:?}");
        let roof_top = ndc(DVec3::new(1015.0, 2015.0, 106.0));
        assert!(roof_top.1 > la.1, "up is up");
    }

    #[test]
    fn the_strip_is_written_from_the_files_with_every_field() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("site.las");
        // A 20 × 20 grid a metre apart, GPS time = x + 100 y, in UTM-sized coordinates.
        let mut b = las::Builder::from((1, 2));
        b.point_format = las::point::Format::new(1).unwrap();
        b.transforms = las::Vector {
            x: las::Transform { scale: 0.001, offset: 500_000.0 },
            y: las::Transform { scale: 0.001, offset: 4_000_000.0 },
            z: las::Transform { scale: 0.001, offset: 0.0 },
        };
        let mut w = las::Writer::from_path(&src, b.into_header().unwrap()).unwrap();
        for i in 0..20 {
            for j in 0..20 {
                let (x, y) = (i as f64 + 0.5, j as f64 + 0.5);
                w.write_point(las::Point {
                    x: 500_000.0 + x,
                    y: 4_000_000.0 + y,
                    z: 50.0,
                    gps_time: Some(x + 100.0 * y),
                    ..Default::default()
                })
                .unwrap();
            }
        }
        w.close().unwrap();
        let cloud = pcv_io::load::load_files(std::slice::from_ref(&src)).unwrap();
        let mut st = crate::app::state::AppState::for_test(cloud, (800, 450));
        st.sources = vec![src.display().to_string()];
        // A section along y = 10 (x 2 → 18), 1 m wide: the points at y 9.5 and 10.5 are 0.5 m off it.
        let p = Profile {
            a: DVec3::new(500_002.0, 4_000_010.0, 50.0),
            b: DVec3::new(500_018.0, 4_000_010.0, 50.0),
            width: 1.2,
            before: (st.nav.camera, PointFilter::default()),
            window: None,
        };
        st.layers.filter = p.filter(z_range(&st.layers.cloud));
        st.profile = Some(p);
        let out = dir.path().join("strip.laz");
        let said = write_strip(&st, &out).unwrap();
        assert!(said.starts_with("32 strip points written"), "{said}");
        let mut r = las::Reader::from_path(&out).unwrap();
        let pts: Vec<las::Point> = r.read_all().unwrap().points().map(|p| p.unwrap()).collect();
        assert_eq!(pts.len(), 32, "x 2.5 .. 17.5 (16) × y 9.5, 10.5");
        for q in &pts {
            let (x, y) = (q.x - 500_000.0, q.y - 4_000_000.0);
            assert!((2.0..18.0).contains(&x) && (y - 10.0).abs() <= 0.5 + 1e-9, "{x} {y}");
            assert_eq!(q.gps_time, Some(x + 100.0 * y), "GPS time kept");
        }
    }
}
