//! Golden images of the built-in scene (160×90, 200k points, seed 1) on the CPU backend.
//!
//! `PCV_UPDATE_GOLDEN=1 cargo test --test golden` rewrites tests/golden/*.png. In the reference mode a
//! pixel may differ from the golden image only where the reference finds an exact depth tie and both
//! colors belong to tied points. The looks (point size, eye-dome lighting, backgrounds) are checked in
//! the `vis` and `packed` modes, which break depth ties by point index or colour, so their images are
//! deterministic and must match exactly. A failing test writes the actual image and a diff (differing
//! pixels in white) to tests/output/, naming them.
mod common;

use common::Reference;
use pcv_camera::{FlyCamera, Pose};
use pcv_io::scene;
use pcv_render::cpu::CpuRasterizer;
use pcv_render::image_io::Frame;
use pcv_render::look::{Background, Edl, Look, PointShape, PointSize, Quality, SplatMethod};
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target, CLEAR_COLOR};
use std::path::Path;

fn golden_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.png"))
}

/// Writes the actual image and the diff to tests/output/ and fails, naming them.
fn fail_with(name: &str, actual: &Frame, diff: Vec<u32>, differing: usize, why: &str) -> ! {
    let out = common::output_dir();
    let actual_path = out.join(format!("{name}.actual.png"));
    let diff_path = out.join(format!("{name}.diff.png"));
    actual.write_png(&actual_path).unwrap();
    Frame::new(actual.width, actual.height, diff).write_png(&diff_path).unwrap();
    panic!(
        "{differing} pixels differ from {} ({why}); actual image: {}, diff (white = differs): {}. \
         If the change is intended, rerun with PCV_UPDATE_GOLDEN=1.",
        golden_path(name).display(),
        actual_path.display(),
        diff_path.display()
    );
}

/// The golden image `name`, or `None` after rewriting it with `actual` (PCV_UPDATE_GOLDEN=1).
fn golden_or_update(name: &str, actual: &Frame) -> Option<Frame> {
    let path = golden_path(name);
    if std::env::var("PCV_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        actual.write_png(&path).unwrap();
        eprintln!("rewrote {}", path.display());
        return None;
    }
    let golden = Frame::read_png(&path)
        .unwrap_or_else(|e| panic!("{e}: run `PCV_UPDATE_GOLDEN=1 cargo test --test golden` to create it"));
    assert_eq!((golden.width, golden.height), (actual.width, actual.height), "{} has the wrong size", path.display());
    Some(golden)
}

/// A deterministic frame (vis or packed mode) with a look: must equal its golden image exactly.
fn check_look_golden(name: &str, mode: RenderMode, look: Look) {
    let (w, h) = (160, 90);
    let cloud = scene::generate(200_000, 1, false);
    let cam = FlyCamera::for_cloud(cloud.bounds, true);
    let frame = FrameParams::new(cam.clip_from_world(w, h), w, h)
        .with_mode(mode)
        .with_look(look)
        .with_depth_range(cam.depth_range().near, cam.depth_range().far)
        .with_spacing(pcv_io::spacing::estimate(&cloud));
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let mut px = vec![0u32; frame.num_pixels()];
    let stats = r.render(&frame, Target::Host(&mut px)).unwrap();
    // The plan's passes in order; with private buffers (2 threads) the CPU backend also times their
    // merge apart, as "merge" right after the pass that holds it.
    let names: Vec<&str> = stats.passes.iter().map(|p| p.name).filter(|&n| n != "merge").collect();
    assert_eq!(names, frame.passes().iter().map(|p| p.name()).collect::<Vec<_>>());
    let actual = Frame::new(w, h, px);
    let Some(golden) = golden_or_update(name, &actual) else { return };
    let diff: Vec<u32> =
        actual.pixels.iter().zip(&golden.pixels).map(|(a, g)| if a == g { 0xff00_0000 } else { 0xffff_ffff }).collect();
    let differing = diff.iter().filter(|&&d| d != 0xff00_0000).count();
    if differing > 0 {
        fail_with(name, &actual, diff, differing, "this mode's image is deterministic: none may differ");
    }
}

fn check_golden(name: &str, pose: Pose, w: u32, h: u32) {
    let cloud = scene::generate(200_000, 1, false);
    let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
    cam.pose = pose;
    let frame = FrameParams::new(cam.clip_from_world(w, h), w, h);
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let mut px = vec![0u32; frame.num_pixels()];
    r.render(&frame, Target::Host(&mut px)).unwrap();
    let actual = Frame::new(w, h, px);

    let Some(golden) = golden_or_update(name, &actual) else { return };

    let reference = Reference::render(&cloud.points, &frame);
    let mut unexplained = 0;
    let mut diff = Vec::with_capacity(actual.pixels.len());
    for (i, (&a, &g)) in actual.pixels.iter().zip(&golden.pixels).enumerate() {
        let differs = (a ^ g) & 0x00ff_ffff != 0;
        let explained =
            !differs || (reference.is_allowed(i, CLEAR_COLOR, a) && reference.is_allowed(i, CLEAR_COLOR, g));
        if !explained {
            unexplained += 1;
        }
        diff.push(if !explained {
            0xffff_ffff
        } else if differs {
            0xff00_80ff
        } else {
            0xff00_0000
        });
    }
    if unexplained > 0 {
        fail_with(name, &actual, diff, unexplained, "not explained by depth ties");
    }
}

#[test]
fn scene_start_pose_160x90() {
    check_golden("scene_start_160x90", Pose::PROTOTYPE, 160, 90);
}

#[test]
fn scene_inside_looking_back_160x90() {
    let pose = Pose { eye: glam::Vec3::new(0.5, 0.3, 0.2), yaw_rad: 3.0, pitch_rad: -0.3 };
    check_golden("scene_inside_160x90", pose, 160, 90);
}

#[test]
fn point_size_3_with_edl_on_a_gradient() {
    let look = Look {
        point_size: PointSize::Fixed(3),
        shape: PointShape::Round,
        edl: Some(Edl::DEFAULT),
        background: Background::GRADIENT,
        splat: SplatMethod::Gather,
        quality: Quality::Standard,
    };
    check_look_golden("look_vis_point3_edl_gradient_160x90", RenderMode::Vis, look);
}

#[test]
fn adaptive_points_with_edl_on_white() {
    let look = Look {
        point_size: PointSize::Adaptive { max_px: 8 },
        shape: PointShape::Round,
        edl: Some(Edl::DEFAULT),
        background: Background::WHITE,
        splat: SplatMethod::Gather,
        quality: Quality::Standard,
    };
    check_look_golden("look_vis_adaptive_edl_white_160x90", RenderMode::Vis, look);
}

#[test]
fn point_size_5_on_gray_in_packed_mode() {
    let look = Look {
        point_size: PointSize::Fixed(5),
        shape: PointShape::Round,
        edl: None,
        background: Background::GRAY,
        splat: SplatMethod::Gather,
        quality: Quality::Standard,
    };
    check_look_golden("look_packed_point5_gray_160x90", RenderMode::Packed, look);
}

#[test]
fn square_points_of_5_px_on_gray() {
    let look = Look {
        point_size: PointSize::Fixed(5),
        shape: PointShape::Square,
        edl: None,
        background: Background::GRAY,
        splat: SplatMethod::Gather,
        quality: Quality::Standard,
    };
    check_look_golden("look_vis_square5_gray_160x90", RenderMode::Vis, look);
}

#[test]
fn edl_alone_on_black() {
    let look = Look { edl: Some(Edl { strength: 2.0, radius_px: 2.0 }), ..Look::PLAIN };
    check_look_golden("look_vis_edl2_black_160x90", RenderMode::Vis, look);
}

#[test]
fn high_quality_points_in_the_culled_mode() {
    // The blend's sums are integers: the image is deterministic, whatever the thread order.
    let look = Look { quality: Quality::High, ..Look::PLAIN };
    check_look_golden("look_culled_high_quality_160x90", RenderMode::Culled, look);
}

#[test]
fn high_quality_adaptive_points_with_edl_in_the_vis_mode() {
    let look = Look {
        point_size: PointSize::Adaptive { max_px: 8 },
        edl: Some(Edl::DEFAULT),
        background: Background::GRADIENT,
        quality: Quality::High,
        ..Look::PLAIN
    };
    check_look_golden("look_vis_high_quality_adaptive_edl_160x90", RenderMode::Vis, look);
}
