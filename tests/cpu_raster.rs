//! Properties of the CPU rasterizer (the kernels' twin), against a simple sequential reference.
mod common;

use common::Reference;
use glam::{Mat4, Vec3};
use pcv_camera::{FlyCamera, Pose};
use pcv_io::{scene, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::gpu_data::Point;
use pcv_render::image_io::Frame;
use pcv_render::twins::project::project;
use pcv_render::{FrameParams, Rasterizer, Target, CLEAR_COLOR};

fn cloud(points: Vec<Point>) -> PointCloud {
    PointCloud::from_points(points, glam::DVec3::ZERO, "test")
}

fn render(points: Vec<Point>, frame: &FrameParams) -> (Frame, Vec<u32>) {
    let mut r = CpuRasterizer::new();
    r.upload(&cloud(points)).unwrap();
    let mut px = vec![0u32; frame.num_pixels()];
    r.render(frame, Target::Host(&mut px)).unwrap();
    (Frame::new(frame.width_px, frame.height_px, px), r.depth_bits())
}

fn start_frame(w: u32, h: u32) -> FrameParams {
    let cam = FlyCamera::for_cloud(pcv_io::Bounds::EMPTY, true);
    FrameParams::new(cam.clip_from_world(w, h), w, h)
}

const RED: [u8; 4] = [255, 0, 0, 255];
const GREEN: [u8; 4] = [0, 255, 0, 255];

#[test]
fn nearest_point_wins_in_either_order() {
    let frame = start_frame(64, 48);
    // Both on the view axis (the camera is at (-3,0,0) looking along +x): the same pixel.
    let near = Point::new([-1.0, 0.0, 0.0], RED);
    let far = Point::new([1.0, 0.0, 0.0], GREEN);
    for pts in [vec![near, far], vec![far, near]] {
        let (img, depth) = render(pts, &frame);
        let pn = project(&frame.uniforms(), near.pos).unwrap();
        let pf = project(&frame.uniforms(), far.pos).unwrap();
        assert_eq!((pn.x_px, pn.y_px), (pf.x_px, pf.y_px), "both points should share a pixel");
        assert_eq!(img.get(pn.x_px, pn.y_px), near.color_word());
        assert_eq!(depth[pn.index(64)], pn.depth_bits);
        assert!(pn.depth_bits < pf.depth_bits);
        // Everything else is cleared.
        assert_eq!(img.pixels.iter().filter(|&&p| p != CLEAR_COLOR).count(), 1);
    }
}

#[test]
fn dropped_points_leave_a_cleared_image() {
    let frame = start_frame(64, 48);
    let dropped = vec![
        Point::new([-4.0, 0.0, 0.0], RED),   // behind the camera
        Point::new([-3.0, 0.0, 0.0], RED),   // at the eye (w = 0)
        Point::new([-2.995, 0.0, 0.0], RED), // in front of the near plane
        Point::new([200.0, 0.0, 0.0], RED),  // past the far plane
        Point::new([0.0, 10.0, 0.0], RED),   // outside the left edge
        Point::new([0.0, 0.0, -10.0], RED),  // below the bottom edge
        Point::new([f32::NAN, 0.0, 0.0], RED),
        Point::new([0.0, f32::NAN, 0.0], RED),
        Point::new([f32::INFINITY, 0.0, 0.0], RED),
        Point::new([0.0, f32::NEG_INFINITY, 0.0], RED),
        Point::new([f32::MAX, f32::MAX, f32::MAX], RED),
    ];
    for p in &dropped {
        assert!(project(&frame.uniforms(), p.pos).is_none(), "{p:?} should be dropped");
    }
    let (img, depth) = render(dropped, &frame);
    assert!(img.pixels.iter().all(|&p| p == CLEAR_COLOR));
    assert!(depth.iter().all(|&d| d == 1.0f32.to_bits()));
}

#[test]
fn empty_cloud_gives_a_cleared_image() {
    let frame = start_frame(33, 17);
    let (img, depth) = render(Vec::new(), &frame);
    assert!(img.pixels.iter().all(|&p| p == CLEAR_COLOR));
    assert!(depth.iter().all(|&d| d == 1.0f32.to_bits()));
}

#[test]
fn points_on_the_viewport_edges_stay_in_bounds() {
    // With clip_from_world = identity, clip = (x, y, z, 1): NDC is the position itself.
    for (w, h) in [(1u32, 1u32), (3, 2), (333, 97), (1920, 1080), (4097, 2161)] {
        let frame = FrameParams::new(Mat4::IDENTITY, w, h);
        let f = frame.uniforms();
        let mut edge = Vec::new();
        // The largest floats below 1 and the smallest above -1, where (ndc + 1) / 2 * size can round
        // to size itself.
        let mut v = 1.0f32;
        let mut u = -1.0f32;
        for _ in 0..64 {
            v = f32::from_bits(v.to_bits() - 1);
            u = f32::from_bits(u.to_bits() - 1); // toward zero for negatives
            edge.extend([[v, v, 0.0], [u, u, 0.0], [v, u, 0.999_999], [u, v, -0.999_999]]);
        }
        // Pixel coordinates are half-open, [0, width) × [0, height): a point whose coordinate rounds to
        // the width (or height) is outside, never clamped; whatever is kept indexes inside the frame.
        let mut kept = 0;
        for pos in &edge {
            if let Some(pr) = project(&f, *pos) {
                assert!(pr.x_px < w && pr.y_px < h, "{pos:?} -> {pr:?} at {w}x{h}");
                kept += 1;
            }
        }
        assert!(kept > edge.len() / 2, "{w}x{h}: only {kept} of {} edge points kept", edge.len());
        // NDC x = 1 is the right edge (coordinate = width): outside; NDC y = 1 is the top row's edge
        // (row coordinate 0): inside; NDC y = -1 is the bottom edge (coordinate = height): outside.
        assert!(project(&f, [1.0, 0.0, 0.0]).is_none());
        assert_eq!(project(&f, [0.0, 1.0, 0.0]).map(|p| p.y_px), Some(0));
        assert!(project(&f, [0.0, -1.0, 0.0]).is_none());
        let pts: Vec<Point> = edge.iter().map(|&p| Point::new(p, RED)).collect();
        let (img, _) = render(pts, &frame);
        assert_eq!(img.get(w - 1, h - 1), Point::new([0.0; 3], RED).color_word());
        assert_eq!(img.get(0, 0), Point::new([0.0; 3], RED).color_word());
    }
}

#[test]
fn pixel_rule_is_floor_of_ndc_with_row_zero_at_the_top() {
    let frame = FrameParams::new(Mat4::IDENTITY, 4, 2);
    let f = frame.uniforms();
    // NDC x = -0.5 → (0.5 * 0.5) * 4 = 1.0 → column 1; rows count from the top: y = -0.25 →
    // (1 + 0.25) / 2 * 2 = 1.25 → row 1 (the bottom one).
    let p = project(&f, [-0.5, -0.25, 0.0]).unwrap();
    assert_eq!((p.x_px, p.y_px), (1, 1));
    assert_eq!(p.depth_bits, 0.5f32.to_bits());
    // y = 0.1 → 0.9 / 2 * 2 = 0.9 → row 0 (the top one).
    let p = project(&f, [0.6, 0.1, 0.5]).unwrap();
    assert_eq!((p.x_px, p.y_px), (3, 0));
    assert_eq!(p.depth_bits, 0.75f32.to_bits());
}

/// Points with unique colors: color i+1 in 24 bits (0 would be the clear color's RGB).
fn uniquely_colored(points: &[Point]) -> Vec<Point> {
    points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let c = (i as u32 + 1).to_le_bytes();
            Point::new(p.pos, [c[0], c[1], c[2], 255])
        })
        .collect()
}

#[test]
fn every_covered_pixel_holds_a_point_that_projects_there() {
    let base = scene::generate(300_000, 5, false);
    let pts = uniquely_colored(&base.points);
    let frame = start_frame(200, 120);
    let f = frame.uniforms();
    let (img, depth) = render(pts.clone(), &frame);
    let mut covered = 0;
    for (i, &px) in img.pixels.iter().enumerate() {
        if px == CLEAR_COLOR {
            assert_eq!(depth[i], 1.0f32.to_bits());
            continue;
        }
        covered += 1;
        let idx = (px & 0x00ff_ffff) as usize - 1;
        let pr = project(&f, pts[idx].pos).expect("the winning point is visible");
        assert_eq!(pr.index(f.width), i, "point {idx} is drawn at the wrong pixel");
        assert_eq!(pr.depth_bits, depth[i], "point {idx} is not the nearest at its pixel");
    }
    assert!(covered > 2_000, "only {covered} pixels covered");
}

#[test]
fn matches_the_sequential_reference_on_the_scene() {
    let c = scene::generate(400_000, 9, false);
    for pose in [Pose::PROTOTYPE, Pose { eye: Vec3::new(0.2, -0.1, 0.05), yaw_rad: 2.0, pitch_rad: -0.4 }] {
        let mut cam = FlyCamera::for_cloud(c.bounds, true);
        cam.pose = pose;
        for (w, h) in [(160u32, 90u32), (333, 97)] {
            let frame = FrameParams::new(cam.clip_from_world(w, h), w, h);
            let reference = Reference::render(&c.points, &frame);
            let (img, depth) = render(c.points.to_vec(), &frame);
            assert_eq!(depth, reference.depth_bits, "depth buffers differ at {w}x{h}");
            let bad = reference.violations(&img, CLEAR_COLOR);
            assert!(bad.is_empty(), "{} pixels hold a color no nearest point has, first {:?}", bad.len(), bad.first());
            eprintln!("{w}x{h} {pose:?}: {} exact depth ties", reference.tie_pixels());
        }
    }
}

#[test]
fn scene_points_lie_on_their_cylinders() {
    let n = 50_000u64;
    let c = scene::generate(n, 3, false);
    let cyl = scene::cylinders(3);
    assert_eq!(c.len(), n);
    for (i, p) in c.points.iter().enumerate() {
        let k = i * cyl.len() / n as usize;
        let cy = &cyl[k];
        let rel = Vec3::from_array(p.pos) - Vec3::from_array(cy.center);
        let along = rel.dot(Vec3::from_array(cy.axis_z));
        let radial = (rel - along * Vec3::from_array(cy.axis_z)).length();
        assert!((radial - cy.radius).abs() < 1e-4, "point {i}: radius {radial} vs {}", cy.radius);
        assert!(along.abs() <= cy.height + 1e-4, "point {i}: {along} past half-height {}", cy.height);
        for ch in 0..3 {
            let base = cy.color[ch] * 255.0;
            assert!((p.rgba[ch] as f32 - base).abs() <= 0.1 * 255.0 + 1.0, "point {i} channel {ch}");
        }
        assert_eq!(p.rgba[3], 255);
    }
    // The analytic bounds contain every point.
    let lazy = scene::lazy(n, 3);
    assert!(lazy.is_lazy_scene());
    assert!(lazy.bounds.min.cmple(c.bounds.min).all() && lazy.bounds.max.cmpge(c.bounds.max).all());
    // Point i depends only on (seed, i): a range made on its own equals the same range of the whole.
    let s = scene::params(n, 3);
    let mut part = vec![Point::default(); 1000];
    pcv_render::twins::scene::scene(&s, &cyl, 12_345, &mut part);
    assert_eq!(&part[..], &c.points[12_345..13_345]);
}

#[test]
fn batched_projection_equals_the_scalar_rule() {
    use pcv_render::twins::project::{project_batch, BATCH, DROPPED};
    let c = scene::generate(20_000, 4, false);
    let mut pts: Vec<Point> = c.points.to_vec();
    // Dropped and edge cases among them.
    for bad in [[f32::NAN, 0.0, 0.0], [f32::INFINITY, 1.0, 1.0], [-3.0, 0.0, 0.0], [-10.0, 0.0, 0.0], [0.0, 50.0, 0.0]]
    {
        pts.push(Point::new(bad, RED));
    }
    for pose in [Pose::PROTOTYPE, Pose { eye: Vec3::new(0.0, 0.0, 0.1), yaw_rad: 1.0, pitch_rad: 0.3 }] {
        let mut cam = FlyCamera::for_cloud(c.bounds, true);
        cam.pose = pose;
        for (w, h) in [(1920u32, 1080u32), (7, 5)] {
            let f = FrameParams::new(cam.clip_from_world(w, h), w, h).uniforms();
            let (mut idx, mut bits) = ([0u32; BATCH], [0u32; BATCH]);
            for batch in pts.chunks(BATCH) {
                project_batch(&f, batch, &mut idx, &mut bits);
                for (j, p) in batch.iter().enumerate() {
                    match project(&f, p.pos) {
                        None => assert_eq!(idx[j], DROPPED, "{p:?}"),
                        Some(pr) => {
                            assert_eq!(idx[j] as usize, pr.index(w), "{p:?}");
                            assert_eq!(bits[j], pr.depth_bits, "{p:?}");
                        }
                    }
                }
            }
        }
    }
}

/// The batched modes' CPU twins against the sequential reference at several poses: the same depth
/// everywhere and only allowed colors (vis; culled three times, each frame starting from the last
/// one's visibility, so occlusion culling may skip batches: `culled::tests` shows it does); quant against the reference of the points as that
/// frame decodes them (10 bits for the batches it reads quantized).
#[test]
fn batched_modes_match_the_sequential_reference() {
    use pcv_render::gpu_data::BATCH_POINTS;
    use pcv_render::twins::batch::{batch_culled, batch_quantized_ok, dequantize_pos};
    use pcv_render::twins::preprocess;
    use pcv_render::RenderMode;
    let c = scene::generate(200_000, 3, false);
    let g = preprocess::grid_params(&c.bounds, c.points.len() as u64);
    let sorted = preprocess::sort_by_cells(&g, &c.points);
    let prepared = preprocess::prepare(&sorted);
    let mut r = CpuRasterizer::new();
    r.upload_in_order(sorted.clone());
    let mut cam = FlyCamera::for_cloud(c.bounds, true);
    let c0 = Vec3::from_array(scene::cylinders(3)[0].center);
    let poses = [
        Pose::PROTOTYPE,
        Pose { eye: c0 + Vec3::new(-0.05, 0.02, 0.01), yaw_rad: 0.5, pitch_rad: 0.2 },
        Pose { eye: Vec3::new(-60.0, 20.0, 15.0), yaw_rad: (-20f32).atan2(60.0), pitch_rad: -0.23 },
    ];
    let (w, h) = (480, 270);
    let mut saw = [0u32; 3];
    let mut occluded_seen = 0;
    for pose in poses {
        cam.pose = pose;
        let frame = FrameParams::new(cam.clip_from_world(w, h), w, h);
        let reference = Reference::render(&sorted, &frame);
        for (k, mode) in
            [RenderMode::Vis, RenderMode::Culled, RenderMode::Culled, RenderMode::Culled].into_iter().enumerate()
        {
            let mut px = vec![0u32; frame.num_pixels()];
            let stats = r.render(&frame.with_mode(mode), Target::Host(&mut px)).unwrap();
            assert_eq!(r.depth_bits(), reference.depth_bits, "{} depth (frame {k})", mode.name());
            let v = reference.violations(&Frame::new(w, h, px), CLEAR_COLOR);
            assert!(v.is_empty(), "{}: {} pixels not allowed, first {:?}", mode.name(), v.len(), v[0]);
            if let Some(b) = stats.batches {
                assert_eq!(
                    b.culled + b.occluded + b.drawn(),
                    prepared.batches.len() as u32,
                    "every batch accounted for: {b:?}"
                );
                occluded_seen += b.occluded;
            }
        }
        // quant: the reference of the points as decoded this frame.
        let f = frame.uniforms();
        let mut decoded = sorted.clone();
        for (b, batch) in prepared.batches.iter().enumerate() {
            let culled = batch_culled(&f, batch);
            let coarse = !culled && batch_quantized_ok(&f, batch);
            saw[if culled {
                0
            } else if coarse {
                1
            } else {
                2
            }] += 1;
            if coarse {
                let first = b * BATCH_POINTS as usize;
                let end = first + batch.num_points as usize;
                for (d, &w) in decoded[first..end].iter_mut().zip(&prepared.quant[first..end]) {
                    d.pos = dequantize_pos(batch, w);
                }
            }
        }
        let quant_ref = Reference::render(&decoded, &frame);
        let mut px = vec![0u32; frame.num_pixels()];
        let stats = r.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut px)).unwrap();
        assert_eq!(r.depth_bits(), quant_ref.depth_bits, "quant depth");
        let v = quant_ref.violations(&Frame::new(w, h, px), CLEAR_COLOR);
        assert!(v.is_empty(), "quant: {} pixels not allowed", v.len());
        assert!(stats.batches.is_some());
        // Again, with this frame's visibility: occlusion culling skips batches, the buffer stays.
        let mut px = vec![0u32; frame.num_pixels()];
        let stats = r.render(&frame.with_mode(RenderMode::Quant), Target::Host(&mut px)).unwrap();
        assert_eq!(r.depth_bits(), quant_ref.depth_bits, "quant depth, second frame");
        let b = stats.batches.expect("quant counts");
        assert_eq!(
            b.culled + b.occluded + b.drawn(),
            prepared.batches.len() as u32,
            "every batch accounted for: {b:?}"
        );
    }
    assert!(saw.iter().all(|&s| s > 0), "the poses should cull, quantize and keep full precision: {saw:?}");
    println!("occlusion culling skipped {occluded_seen} batches in the second culled frames");
}
