//! Picking on the CPU backend (the CUDA backend's twin runs in tests/cuda_vs_cpu.rs on the GPU machine):
//! the point under a pixel of the last frame, its index in the uploaded cloud and its exact position.
use glam::{DVec3, Vec3};
use pcv_camera::{FlyCamera, Pose};
use pcv_io::{Point, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::look::{Look, PointSize};
use pcv_render::twins::project::project;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};

/// A sparse grid of points on the plane x = 2 (in front of the prototype's camera, about 8 pixels
/// apart at 320 × 240), shuffled so that the upload order differs from any spatial order.
fn grid_cloud() -> PointCloud {
    let mut pts: Vec<Point> = (0..20 * 15)
        .map(|i| Point::new([2.0, (i % 20) as f32 * 0.2 - 2.0, (i / 20) as f32 * 0.2 - 1.5], [i as u8, 7, 9, 255]))
        .collect();
    let mut s = 12345u64;
    for i in (1..pts.len()).rev() {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
        pts.swap(i, (s >> 33) as usize % (i + 1));
    }
    PointCloud::from_points(pts, DVec3::new(500_000.0, 4_000_000.0, 100.0), "grid")
}

fn frame(mode: RenderMode, look: Look) -> FrameParams {
    let cam = FlyCamera::for_cloud(pcv_io::Bounds::EMPTY, true);
    FrameParams::new(cam.clip_from_world(320, 240), 320, 240).with_mode(mode).with_look(look)
}

fn render(r: &mut CpuRasterizer, f: &FrameParams) {
    let mut px = vec![0u32; f.num_pixels()];
    r.render(f, Target::Host(&mut px)).unwrap();
}

#[test]
fn batched_modes_pick_the_exact_point_and_its_upload_index() {
    let cloud = grid_cloud();
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    for mode in [RenderMode::Vis, RenderMode::Culled, RenderMode::Quant] {
        let f = frame(mode, Look::PLAIN);
        render(&mut r, &f);
        // Quantized coordinates may move a point by up to half a pixel: onto a neighbouring pixel.
        let radius = if mode == RenderMode::Quant { 1 } else { 0 };
        for i in [0usize, 17, 151, 299] {
            let p = cloud.points[i].pos;
            let pr = project(&f.uniforms(), p).expect("the grid is in view");
            let hit = r.pick(pr.x_px, pr.y_px, radius).unwrap().expect("a point under its own pixel");
            assert_eq!(hit.point_index, Some(i as u64), "{}: point {i}", mode.name());
            if mode != RenderMode::Quant {
                assert_eq!(hit.pixel, (pr.x_px, pr.y_px));
                assert_eq!(hit.position, Vec3::from(p), "{}: exact position", mode.name());
            }
            // The file coordinates come back through the cloud's f64 origin.
            let src = cloud.to_source(hit.position);
            assert!((src - (cloud.origin + Vec3::from(p).as_dvec3())).length() < 1e-3);
        }
    }
}

#[test]
fn a_radius_finds_the_nearest_point_on_screen_and_empty_space_finds_none() {
    let cloud = grid_cloud();
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let f = frame(RenderMode::Vis, Look::PLAIN);
    render(&mut r, &f);
    let i = 160;
    let pr = project(&f.uniforms(), cloud.points[i].pos).unwrap();
    // Two pixels off: nothing at radius 0 (the grid's points are ~8 px apart), the point at radius 2.
    assert_eq!(r.pick(pr.x_px + 2, pr.y_px, 0).unwrap(), None);
    let hit = r.pick(pr.x_px + 2, pr.y_px, 2).unwrap().unwrap();
    assert_eq!(hit.point_index, Some(i as u64));
    // Far outside the grid and outside the frame.
    assert_eq!(r.pick(2, 2, 3).unwrap(), None);
    assert_eq!(r.pick(10_000, 5, 3).unwrap(), None);
}

#[test]
fn splatted_points_are_picked_across_their_disk() {
    let cloud = grid_cloud();
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let f = frame(RenderMode::Vis, Look { point_size: PointSize::Fixed(5), ..Look::PLAIN });
    render(&mut r, &f);
    let i = 222;
    let pr = project(&f.uniforms(), cloud.points[i].pos).unwrap();
    let hit = r.pick(pr.x_px + 1, pr.y_px + 1, 0).unwrap().expect("inside the point's 5-pixel disk");
    assert_eq!(hit.point_index, Some(i as u64));
}

#[test]
fn reference_mode_picks_a_position_without_an_index() {
    let cloud = grid_cloud();
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let cam = FlyCamera::for_cloud(pcv_io::Bounds::EMPTY, true);
    for mode in [RenderMode::Reference, RenderMode::Packed] {
        let f = frame(mode, Look::PLAIN);
        render(&mut r, &f);
        let p = cloud.points[5].pos;
        let pr = project(&f.uniforms(), p).unwrap();
        let hit = r.pick(pr.x_px, pr.y_px, 0).unwrap().unwrap();
        assert_eq!(hit.point_index, None);
        // Within the pixel's footprint at 5 m (a 320-pixel-wide 60° view: ~1.7 cm a pixel).
        assert!((hit.position - Vec3::from(p)).length() < 0.03, "{}: {} vs {:?}", mode.name(), hit.position, p);
    }
    assert_eq!(cam.pose, Pose::PROTOTYPE);
}

#[test]
fn nothing_is_picked_before_a_frame() {
    let mut r = CpuRasterizer::new();
    r.upload(&grid_cloud()).unwrap();
    assert_eq!(r.pick(10, 10, 4).unwrap(), None);
}
