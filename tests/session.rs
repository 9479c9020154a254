//! The one way in (`pcv::session`): sources opened on the CPU backend as every command opens them.
//!
//! - the built-in scene: lazy (each backend makes its points), the prototype's start pose, its look;
//! - files: loaded, coloured, uploaded; `max_points` a uniform subsample; with `lod`, a folder is a
//!   level-of-detail scene of its files (each a tile), and `settle` loads the view until it is complete;
//! - a cloud made in code, shown as given; opening again replaces what was shown;
//! - what fails says why: a missing file names it, a colour mode the scene lacks is refused.
use glam::DVec3;
use pcv::session::{self, BackendOptions, OpenOptions, Session, Shown, Source};
use pcv_io::{Point, PointCloud};
use pcv_render::{BackendChoice, FrameParams, RenderMode};
use std::time::Duration;

fn cpu() -> BackendOptions {
    BackendOptions { choice: BackendChoice::Cpu, ..Default::default() }
}

/// A small PLY of a tilted grid, with colours.
fn write_ply(path: &std::path::Path, n: usize) {
    let points: Vec<Point> = (0..n)
        .map(|i| {
            let (x, y) = ((i % 100) as f32 * 0.1, (i / 100) as f32 * 0.1);
            Point::new([x, y, 0.05 * x], [(i % 256) as u8, 100, 200, 255])
        })
        .collect();
    let cloud = PointCloud::from_points(points, DVec3::new(500.0, 600.0, 10.0), "grid");
    pcv_io::convert::write_cloud(&cloud, path).expect("writes the PLY");
}

#[test]
fn the_built_in_scene_opens_lazily_at_the_prototypes_pose() {
    let s = session::open(Source::Scene { points: 50_000, seed: 3 }, &cpu(), &OpenOptions::default()).unwrap();
    assert!(matches!(s.shown, Shown::Cloud));
    assert!(s.cloud.is_lazy_scene(), "the backend makes the scene's points itself");
    assert_eq!(s.rasterizer.num_points(), 50_000);
    assert_eq!(s.camera.pose, pcv_camera::Pose::PROTOTYPE);
    assert_eq!(s.look(&Default::default()), pcv_render::look::Look::PLAIN);
    assert!(s.times.loaded_s >= s.times.backend_s);
    // The scene has only its own colours.
    let opts = OpenOptions { color: Some(pcv_io::attributes::ColorMode::Intensity), ..Default::default() };
    let e = session::open(Source::Scene { points: 1000, seed: 1 }, &cpu(), &opts).err().expect("refused");
    assert!(format!("{e:#}").contains("built-in scene has only its own colors"), "{e:#}");
}

#[test]
fn files_load_subsample_and_fail_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("grid.ply");
    write_ply(&ply, 20_000);
    let s = session::open(Source::Files(vec![ply.clone()]), &cpu(), &OpenOptions::default()).unwrap();
    assert_eq!(s.rasterizer.num_points(), 20_000);
    // Recentred on the file's centre: the grid spans 0..9.9 × 0..19.9 from (500, 600, 10), z rising with x.
    assert!((s.cloud.origin - DVec3::new(504.95, 609.95, 10.2475)).length() < 1e-3, "{}", s.cloud.origin);
    let opts = OpenOptions { max_points: Some(5_000), ..Default::default() };
    let s = session::open(Source::Files(vec![ply.clone()]), &cpu(), &opts).unwrap();
    assert_eq!(s.rasterizer.num_points(), 5_000);
    let missing = dir.path().join("nothing-here.las");
    let e = session::open(Source::Files(vec![missing]), &cpu(), &OpenOptions::default()).err().expect("fails");
    assert!(format!("{e:#}").contains("nothing-here.las"), "{e:#}");
}

#[test]
fn folders_and_lod_open_a_level_of_detail_scene_that_settles() {
    let dir = tempfile::tempdir().unwrap();
    write_ply(&dir.path().join("a.ply"), 30_000);
    write_ply(&dir.path().join("b.ply"), 10_000);
    let lod = OpenOptions { lod: true, ..Default::default() };
    let mut s = session::open(Source::Files(vec![dir.path().to_path_buf()]), &cpu(), &lod).expect("a folder opens");
    let l = s.lod().expect("level of detail");
    assert_eq!((l.tiles(), l.total_points()), (2, 40_000));
    assert_eq!(s.mode_for(RenderMode::Vis), RenderMode::Culled);
    let frame = FrameParams::of_camera(&s.camera, 320, 180).with_mode(RenderMode::Culled);
    let spacing = s.settle(&frame, Duration::from_secs(30)).unwrap().expect("a streamed scene");
    assert!(spacing > 0.0);
    assert_eq!(s.lod().unwrap().status().drawn_points, 40_000, "the whole of a small scene fits the budget");
    let mut s = session::open(Source::Files(vec![dir.path().join("a.ply")]), &cpu(), &lod).unwrap();
    assert!(s.lod().is_some(), "--lod builds an octree of a file");
    // Resident clouds have nothing to settle.
    let mut r = session::open(Source::Scene { points: 1000, seed: 1 }, &cpu(), &OpenOptions::default()).unwrap();
    assert_eq!(r.settle(&frame, Duration::from_secs(1)).unwrap(), None);
}

#[test]
fn a_cloud_made_in_code_is_shown_and_opening_again_replaces_it() {
    let mut s = Session::start(&cpu()).unwrap();
    assert_eq!(s.rasterizer.num_points(), 0);
    let points: Vec<Point> = (0..777).map(|i| Point::new([i as f32, 0.0, 0.0], [255; 4])).collect();
    s.open(Source::Cloud(PointCloud::from_points(points, DVec3::ZERO, "code")), &OpenOptions::default()).unwrap();
    assert_eq!((s.rasterizer.num_points(), s.cloud.label.as_str()), (777, "code"));
    s.open(Source::Scene { points: 2000, seed: 2 }, &OpenOptions::default()).unwrap();
    assert_eq!(s.rasterizer.num_points(), 2000);
    assert!(s.cloud.scene().is_some());
}

/// Two XYZ files of one block, the second written in feet on the same projection (NAD83 / Oregon North:
/// EPSG:32126 in metres, EPSG:2269 in international feet, false easting 2,500,000 m either way), each
/// with a `.prj`: loaded together, the second is reprojected into the first's metres.
#[test]
fn files_in_different_systems_are_reprojected_into_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (x0, y0, z0) = (2_380_000.25, 210_000.5, 120.0);
    let grid: Vec<DVec3> = (0..900)
        .map(|i| DVec3::new(x0 + (i % 30) as f64 * 2.0, y0 + (i / 30) as f64 * 2.0, z0 + (i % 7) as f64))
        .collect();
    let write = |name: &str, scale: f64, shift_m: f64, crs: &str| {
        let path = dir.path().join(format!("{name}.xyz"));
        let text: String = grid
            .iter()
            .map(|p| format!("{:.4} {:.4} {:.4}\n", (p.x + shift_m) / scale, p.y / scale, p.z / scale))
            .collect();
        std::fs::write(&path, text).unwrap();
        std::fs::write(dir.path().join(format!("{name}.prj")), crs).unwrap();
        path
    };
    let metres = write("north_m", 1.0, 0.0, "EPSG:32126");
    // The same block 100 m further east, in feet.
    let feet = write("north_ft", 0.3048, 100.0, "EPSG:2269");
    let mut warnings = Vec::new();
    let cloud = session::load_cloud_skipping(&[metres, feet], 0, 0, &OpenOptions::default(), &mut warnings).unwrap();
    assert_eq!(cloud.len(), 1800);
    assert!(warnings.iter().any(|w| w.contains("reprojected from")), "{warnings:?}");
    assert_eq!(cloud.crs_warning(), None, "one system after the join");
    // Every point of the feet file lands 100 m east of its twin in the metres file, heights in metres.
    let file = |i: usize| cloud.to_source(glam::Vec3::from_array(cloud.points[i].pos));
    let mut worst = 0.0f64;
    for i in 0..900 {
        let (a, b) = (file(i), file(900 + i));
        worst = worst.max((b - a - DVec3::new(100.0, 0.0, 0.0)).abs().max_element());
    }
    // The XYZ text keeps 0.1 mm; f32 around the origin about 0.01 mm.
    assert!(worst < 2e-3, "largest miss {worst} m");
    // Without the feet file's .prj it would be drawn in feet: 3.28 times too far.
    assert!((file(900).x - x0 - 100.0).abs() < 1e-2, "{}", file(900).x);
}
