//! High quality (`--quality high`, J): the CPU backend's blended frames against a brute-force reference
//! written here from the rule alone, and the point of the mode — images that stay still when the camera
//! moves by less than a pixel over a cloud denser than the pixels.
//!
//! The rule: a pixel's nearest point sets its depth; every point that lands on the pixel with a view
//! distance at most 1 % past the nearest's adds its colour; the pixel shows the mean, rounded to nearest
//! (the background where no point lands).
mod common;

use pcv_camera::{FlyCamera, Pose};
use pcv_io::{scene, Point, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::look::{Look, Quality, BLEND_DEPTH_FRACTION};
use pcv_render::twins::post::{background, view_distance};
use pcv_render::twins::project::project;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};

/// The blended image of `points`, pixel by pixel from the rule (two passes over the points, in f64
/// sums).
fn brute_force(fp: &FrameParams, points: &[Point]) -> Vec<u32> {
    let (f, u) = (fp.uniforms(), fp.post_uniforms());
    let n = fp.num_pixels();
    let mut nearest = vec![u32::MAX; n];
    let hits: Vec<_> = points.iter().filter_map(|p| project(&f, p.pos).map(|q| (q, p.rgba))).collect();
    for (q, _) in &hits {
        let i = q.index(f.width);
        nearest[i] = nearest[i].min(q.depth_bits);
    }
    let mut sums = vec![[0f64; 4]; n];
    for (q, rgba) in &hits {
        let i = q.index(f.width);
        let window = view_distance(&u, nearest[i]) * (1.0 + BLEND_DEPTH_FRACTION);
        if q.depth_bits == nearest[i] || view_distance(&u, q.depth_bits) <= window {
            for c in 0..3 {
                sums[i][c] += rgba[c] as f64;
            }
            sums[i][3] += 1.0;
        }
    }
    sums.iter()
        .enumerate()
        .map(|(i, s)| {
            if s[3] == 0.0 {
                return background(&f, (i / f.width as usize) as u32);
            }
            // Round half up, as the integer (sum + count / 2) / count does.
            let ch = |c: usize| ((s[c] + (s[3] / 2.0).floor()) / s[3]).floor() as u32;
            ch(0) | ch(1) << 8 | ch(2) << 16 | 0xff00_0000
        })
        .collect()
}

#[test]
fn blended_frames_follow_the_rule_in_every_mode_that_blends() {
    let cloud = scene::generate(300_000, 7, false);
    let (w, h) = (200, 120);
    let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let high = Look { quality: Quality::High, ..Look::PLAIN };
    let start = cam.pose;
    let inside = Pose { eye: glam::Vec3::new(0.5, 0.3, 0.2), yaw_rad: 3.0, pitch_rad: -0.3 };
    let mut blended_pixels = 0;
    for (name, pose) in [("start", start), ("inside", inside)] {
        cam.pose = pose;
        let base = FrameParams::new(cam.clip_from_world(w, h), w, h)
            .with_look(high)
            .with_depth_range(cam.depth_range().near, cam.depth_range().far);
        let want = brute_force(&base, &cloud.points);
        for mode in [RenderMode::Vis, RenderMode::Culled, RenderMode::Culled, RenderMode::Quant] {
            let fp = base.with_mode(mode);
            let mut px = vec![0u32; fp.num_pixels()];
            let stats = r.render(&fp, Target::Host(&mut px)).unwrap();
            assert!(stats.passes.iter().any(|p| p.name == "blend"), "{name} {}: no blend pass", mode.name());
            if mode == RenderMode::Quant {
                // Points moved by less than half a pixel: the same picture, not the same bits.
                let differ = px.iter().zip(&want).filter(|(a, b)| a != b).count();
                assert!(differ * 20 < px.len(), "{name} quant: {differ} pixels differ from the rule");
                continue;
            }
            let differ: Vec<usize> = (0..px.len()).filter(|&i| px[i] != want[i]).collect();
            assert!(
                differ.is_empty(),
                "{name} {}: {} pixels differ from the rule, first {} ({:#010x}, the rule {:#010x})",
                mode.name(),
                differ.len(),
                differ[0],
                px[differ[0]],
                want[differ[0]]
            );
        }
        // Standard quality differs from the blend wherever two points of different colours blend.
        let mut std_px = vec![0u32; base.num_pixels()];
        r.render(&base.with_look(Look::PLAIN).with_mode(RenderMode::Culled), Target::Host(&mut std_px)).unwrap();
        blended_pixels += std_px.iter().zip(&want).filter(|(a, b)| a != b).count();
    }
    assert!(blended_pixels > 500, "only {blended_pixels} pixels changed by blending: the scene tests little");
}

/// A flat field of 2 million points of random greys, seen from where ~40 fall on each pixel.
fn dense_field() -> PointCloud {
    let mut next = common::xorshift(0x9e37_79b9_7f4a_7c15);
    let points = (0..2_000_000)
        .map(|_| {
            let r = next();
            let (x, y) = ((r & 0xffff) as f32 / 65536.0 * 40.0, ((r >> 16) & 0xffff) as f32 / 65536.0 * 40.0);
            let g = (r >> 40) as u8;
            Point::new([x, y, 0.0], [g, g, g, 255])
        })
        .collect();
    PointCloud::from_points(points, glam::DVec3::ZERO, "dense field")
}

/// Mean absolute change of the grey channel between consecutive frames, over pixels covered in both.
fn flicker(frames: &[Vec<u32>]) -> f64 {
    let (mut sum, mut n) = (0f64, 0u64);
    for pair in frames.windows(2) {
        for (a, b) in pair[0].iter().zip(&pair[1]) {
            if a >> 24 == 0xff && b >> 24 == 0xff && (a & 0xff) + (b & 0xff) > 0 {
                sum += ((a & 0xff) as f64 - (b & 0xff) as f64).abs();
                n += 1;
            }
        }
    }
    sum / n.max(1) as f64
}

#[test]
fn high_quality_keeps_a_dense_cloud_still_while_the_camera_drifts() {
    let cloud = dense_field();
    let (w, h) = (160, 120);
    let mut r = CpuRasterizer::new();
    r.upload(&cloud).unwrap();
    let mut cam = FlyCamera::for_cloud(cloud.bounds, true);
    // Straight down from 60 m: the 40 m field spans ~70 px across, ~400 points a pixel... fewer where
    // it is seen at the frame's edge; every step moves the camera by a fifth of a pixel.
    let mut frames = |quality| {
        (0..6)
            .map(|k| {
                cam.pose =
                    Pose { eye: glam::Vec3::new(20.0 + 0.02 * k as f32, 20.0, 60.0), yaw_rad: 0.0, pitch_rad: -1.5 };
                let fp = FrameParams::new(cam.clip_from_world(w, h), w, h)
                    .with_mode(RenderMode::Culled)
                    .with_look(Look { quality, ..Look::PLAIN })
                    .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                let mut px = vec![0u32; fp.num_pixels()];
                r.render(&fp, Target::Host(&mut px)).unwrap();
                px
            })
            .collect::<Vec<_>>()
    };
    let standard = flicker(&frames(Quality::Standard));
    let high = flicker(&frames(Quality::High));
    println!("frame-to-frame change of a pixel's grey (0..255): standard {standard:.2}, high quality {high:.2}");
    assert!(standard > 20.0, "the standard frames barely change ({standard:.2}): the camera does not drift");
    assert!(high * 4.0 < standard, "high quality flickers {high:.2} against the standard {standard:.2}");
}
