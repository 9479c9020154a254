//! Golden image of the built-in scene (160×90, 200k points, seed 1, the start pose) on the CPU backend.
//!
//! `PCV_UPDATE_GOLDEN=1 cargo test --test golden` rewrites tests/golden/*.png. A pixel may differ from the
//! golden image only where the reference finds an exact depth tie and both colors belong to tied
//! points; otherwise the test fails and writes the actual image and a diff (differing pixels in white)
//! to tests/output/, naming them.
mod common;

use common::Reference;
use pcv::camera::{FlyCamera, Pose};
use pcv::cloud::scene;
use pcv::image_io::Frame;
use pcv::render::cpu::CpuRasterizer;
use pcv::render::{FrameParams, Rasterizer, Target, CLEAR_COLOR};
use std::path::Path;

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

    let golden_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.png"));
    if std::env::var("PCV_UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        actual.write_png(&golden_path).unwrap();
        eprintln!("rewrote {}", golden_path.display());
        return;
    }
    let golden = Frame::read_png(&golden_path)
        .unwrap_or_else(|e| panic!("{e}: run `PCV_UPDATE_GOLDEN=1 cargo test --test golden` to create it"));
    assert_eq!((golden.width, golden.height), (w, h), "{} has the wrong size", golden_path.display());

    let reference = Reference::render(&cloud.points, &frame);
    let mut unexplained = 0;
    let mut diff = Vec::with_capacity(actual.pixels.len());
    for (i, (&a, &g)) in actual.pixels.iter().zip(&golden.pixels).enumerate() {
        let differs = (a ^ g) & 0x00ff_ffff != 0;
        let explained = !differs || (reference.is_allowed(i, CLEAR_COLOR, a) && reference.is_allowed(i, CLEAR_COLOR, g));
        if !explained {
            unexplained += 1;
        }
        diff.push(if !explained { 0xffff_ffff } else if differs { 0xff00_80ff } else { 0xff00_0000 });
    }
    if unexplained > 0 {
        let out = common::output_dir();
        let actual_path = out.join(format!("{name}.actual.png"));
        let diff_path = out.join(format!("{name}.diff.png"));
        actual.write_png(&actual_path).unwrap();
        Frame::new(w, h, diff).write_png(&diff_path).unwrap();
        panic!(
            "{unexplained} pixels differ from {} (not explained by depth ties); actual image: {}, diff (white = differs): {}. \
             If the change is intended, rerun with PCV_UPDATE_GOLDEN=1.",
            golden_path.display(),
            actual_path.display(),
            diff_path.display()
        );
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
