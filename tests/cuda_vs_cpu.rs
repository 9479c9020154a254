//! The CUDA backend against its CPU twins, on a machine with a GPU. The GPU tests are `#[ignore]`d, so a
//! machine without one reports them as ignored; the GPU machine runs them with `--include-ignored`
//! (`scripts/gpu.sh checks`, with `PCV_REQUIRE_CUDA=1`, which makes a missing GPU a failure rather than
//! a test that prints why it cannot run and returns). The error paths run everywhere.
//!
//! - the scene kernel makes the CPU twin's points bit for bit (several seeds and counts);
//! - images (Target::Host) at several poses and sizes: identical depth buffers, and colors that differ
//!   only where two or more points share the winning depth exactly (either may win; both colors are
//!   checked to belong to such points); in packed mode, which breaks ties by color, identical images;
//! - Target::Device into a device buffer equals Target::Host;
//! - host-point uploads (with NaN, infinities and duplicate points) round-trip and render the same;
//! - the post passes (point size fixed and adaptive, eye-dome lighting, gradient backgrounds) equal their
//!   CPU twins exactly in the modes that break ties deterministically, and the reference's depth; picking
//!   returns the same point, index and position on both backends;
//! - a level-of-detail pool filled on the copy stream (`slot_upload.rs`), drawn every frame while copies
//!   run: no frame draws a point the complete view does not (no slot drawn before its copy), and the
//!   complete view's depth equals the CPU backend's; adaptive point sizes with a spacing per pool slot
//!   (the splat reads it through each point's batch) equal the CPU twin's image bit for bit, drawn right
//!   after the write (the render stream waits for the copy on the device);
//! - the error paths: no driver, not uploaded, wrong target sizes, bad device pointers, a cloud too large
//!   for the device, PTX newer than the driver.
use glam::Vec3;
use pcv_camera::{FlyCamera, Pose};
use pcv_io::{scene, Bounds, PointCloud};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::cuda::memory::DeviceBuffer;
use pcv_render::cuda::{context, CudaRasterizer, KERNELS};
use pcv_render::gpu_data::{FrameUniforms, Point};
use pcv_render::look::Quality;
use pcv_render::twins::project::project;
use pcv_render::{FrameParams, Rasterizer, RenderError, RenderMode, Target};
use std::collections::HashMap;

/// The CUDA backend, or `None` (after printing why) where it cannot run.
fn cuda_or_skip(test: &str) -> Option<CudaRasterizer> {
    match CudaRasterizer::new() {
        Ok(c) => {
            println!("{test}: {}", c.description());
            Some(c)
        }
        Err(e) => {
            if std::env::var("PCV_REQUIRE_CUDA").is_ok_and(|v| v == "1") {
                panic!("{test}: PCV_REQUIRE_CUDA=1 but the CUDA backend is unavailable: {e}");
            }
            eprintln!("{test}: skipping, CUDA backend unavailable: {e}");
            None
        }
    }
}

fn first_mismatch<'a, T: PartialEq + std::fmt::Debug>(a: &'a [T], b: &'a [T]) -> Option<(usize, &'a T, &'a T)> {
    a.iter().zip(b).enumerate().find(|(_, (x, y))| x != y).map(|(i, (x, y))| (i, x, y))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn scene_kernel_matches_cpu_twin_bit_for_bit() {
    let Some(mut cuda) = cuda_or_skip("scene") else { return };
    // The points in the kernel's order: no spatial sort at upload.
    cuda.set_preprocess(false);
    for (n, seed) in
        [(2_000_000u64, 1u64), (2_000_000, 42), (2_000_000, 0xdead_beef_cafe_f00d), (2_000_003, u64::MAX), (7, 3)]
    {
        cuda.upload(&scene::lazy(n, seed)).expect("scene upload");
        assert_eq!(cuda.num_points(), n);
        let gpu = cuda.download_points().expect("download");
        let cpu = scene::generate(n, seed, false);
        assert_eq!(gpu.len(), cpu.points.len());
        let differing =
            gpu.iter().zip(cpu.points.iter()).filter(|(a, b)| bytemuck::bytes_of(*a) != bytemuck::bytes_of(*b)).count();
        println!("scene n={n} seed={seed:#x}: {differing} of {n} points differ");
        if let Some((i, g, c)) = first_mismatch(&gpu, &cpu.points) {
            panic!(
                "scene n={n} seed={seed:#x}: point {i} is {g:?} on the GPU and {c:?} on the CPU ({differing} differ)"
            );
        }
    }
}

/// What one pose/size comparison found.
struct Comparison {
    covered_px: usize,
    differing_px: usize,
    tie_px: usize,
}

/// For each pixel in `pixels`, the colors of the points that project there with depth `depth[pixel]`.
fn winners(f: &FrameUniforms, points: &[Point], depth: &[u32], pixels: &[usize]) -> HashMap<usize, Vec<u32>> {
    let mut out: HashMap<usize, Vec<u32>> = pixels.iter().map(|&p| (p, Vec::new())).collect();
    for p in points {
        if let Some(pr) = project(f, p.pos) {
            let i = pr.index(f.width);
            if let Some(v) = out.get_mut(&i) {
                if depth[i] == pr.depth_bits {
                    v.push(p.color_word());
                }
            }
        }
    }
    out
}

/// Asserts `a` and `b` (two images of one frame) differ only at exact depth ties, each showing the
/// color of a point at the winning depth; returns how many pixels differ.
fn assert_differ_only_at_ties(
    label: &str,
    f: &FrameUniforms,
    points: &[Point],
    depth: &[u32],
    a: &[u32],
    b: &[u32],
) -> (usize, usize) {
    let differing: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    if differing.is_empty() {
        return (0, 0);
    }
    let w = winners(f, points, depth, &differing);
    let mut ties = 0;
    for &i in &differing {
        let colors = &w[&i];
        assert!(
            colors.len() >= 2,
            "{label}: pixel {i} ({}, {}) differs ({:#010x} vs {:#010x}) but only {} point(s) have its depth {:#x}",
            i % f.width as usize,
            i / f.width as usize,
            a[i],
            b[i],
            colors.len(),
            depth[i]
        );
        assert!(
            colors.contains(&a[i]) && colors.contains(&b[i]),
            "{label}: pixel {i}: {:#010x} / {:#010x} are not both colors of the tied points {colors:x?}",
            a[i],
            b[i]
        );
        ties += 1;
    }
    (differing.len(), ties)
}

/// Renders one frame on both backends and compares depth and color.
fn compare(
    label: &str,
    cuda: &mut CudaRasterizer,
    cpu: &mut CpuRasterizer,
    points: &[Point],
    frame: &FrameParams,
) -> Comparison {
    let n = frame.num_pixels();
    let mut cpu_color = vec![0u32; n];
    cpu.render(frame, Target::Host(&mut cpu_color)).expect("cpu render");
    let cpu_depth = cpu.depth_bits();
    let mut gpu_color = vec![0u32; n];
    let stats = cuda.render(frame, Target::Host(&mut gpu_color)).expect("cuda render");
    let gpu_depth = cuda.depth_bits().expect("cuda depth");
    let depth_diff = cpu_depth.iter().zip(&gpu_depth).filter(|(a, b)| a != b).count();
    if let Some((i, c, g)) = first_mismatch(&cpu_depth, &gpu_depth) {
        panic!("{label}: {depth_diff} depth values differ; first at pixel {i}: cpu {c:#x}, cuda {g:#x}");
    }
    let f = frame.uniforms();
    let (differing_px, tie_px) = assert_differ_only_at_ties(label, &f, points, &cpu_depth, &cpu_color, &gpu_color);
    let covered_px = cpu_depth.iter().filter(|&&d| d != 0x3f80_0000).count();
    println!(
        "{label}: {covered_px} of {n} pixels covered, depth identical, {differing_px} colors differ (all {tie_px} at exact depth ties); \
         cuda {:.3} ms (clear {:.3}, depth {:.3}, color {:.3})",
        stats.total_ms,
        stats.pass_ms("clear").unwrap_or(f64::NAN),
        stats.pass_ms("depth").unwrap_or(f64::NAN),
        stats.pass_ms("color").unwrap_or(f64::NAN),
    );

    // Packed mode breaks ties by the smaller color word, so both backends give the same image exactly,
    // and it differs from the reference image only at ties.
    let packed = frame.with_mode(RenderMode::Packed);
    let mut cpu_packed = vec![0u32; n];
    cpu.render(&packed, Target::Host(&mut cpu_packed)).expect("cpu packed render");
    let mut gpu_packed = vec![0u32; n];
    let pstats = cuda.render(&packed, Target::Host(&mut gpu_packed)).expect("cuda packed render");
    let packed_diff = cpu_packed.iter().zip(&gpu_packed).filter(|(a, b)| a != b).count();
    if let Some((i, c, g)) = first_mismatch(&cpu_packed, &gpu_packed) {
        panic!("{label} packed: {packed_diff} pixels differ between the backends; first at {i}: cpu {c:#010x}, cuda {g:#010x}");
    }
    let (vs_ref, _) = assert_differ_only_at_ties(
        &format!("{label} packed vs reference"),
        &f,
        points,
        &cpu_depth,
        &gpu_packed,
        &gpu_color,
    );
    assert_eq!(
        pstats.passes.iter().map(|p| p.name).collect::<Vec<_>>(),
        ["clear", "packed", "resolve"],
        "packed pass names"
    );
    println!(
        "{label} packed: identical to the CPU's, {vs_ref} pixels differ from the reference image (ties); cuda {:.3} ms",
        pstats.total_ms
    );
    Comparison { covered_px, differing_px, tie_px }
}

/// The test poses for the built-in scene of `seed`: (name, pose).
fn poses(seed: u64) -> Vec<(&'static str, Pose)> {
    let c0 = Vec3::from_array(scene::cylinders(seed)[0].center);
    vec![
        ("start", Pose::PROTOTYPE),
        ("close-up", Pose { eye: c0 + Vec3::new(-0.05, 0.02, 0.01), yaw_rad: 0.5, pitch_rad: 0.2 }),
        ("far", Pose { eye: Vec3::new(-60.0, 20.0, 15.0), yaw_rad: (-20f32).atan2(60.0), pitch_rad: -0.23 }),
        ("down", Pose { eye: Vec3::new(0.1, 0.2, 4.0), yaw_rad: 0.3, pitch_rad: -std::f32::consts::FRAC_PI_2 }),
        ("away", Pose { eye: Vec3::new(-3.0, 0.0, 0.0), yaw_rad: std::f32::consts::PI, pitch_rad: 0.0 }),
    ]
}

const SIZES: &[(u32, u32)] = &[(320, 180), (1920, 1080), (333, 97)];

/// Each of `poses` in perspective, then orthographic (which shows the scene's whole depth, in front of
/// the eye and behind it): (name, pose, orthographic).
fn both_projections(poses: &[(&'static str, Pose)]) -> Vec<(&'static str, Pose, bool)> {
    poses.iter().flat_map(|&(name, pose)| [(name, pose, false), (name, pose, true)]).collect()
}

/// Puts `camera` at `pose`, orthographic or in perspective.
fn set_view(camera: &mut FlyCamera, pose: Pose, ortho: bool) {
    camera.projection = pcv_camera::Projection::Perspective;
    camera.pose = pose;
    camera.set_projection(ortho);
}

/// The 2M-point scene of `seed` made on CUDA, and the same points in the GPU's sorted order on the CPU
/// backend (both then hold the same points in the same order): the backends, the lazy cloud and the
/// sorted points; `None` (skipped, saying why) without CUDA.
fn scene_on_both(test: &str, seed: u64) -> Option<(CudaRasterizer, CpuRasterizer, PointCloud, Vec<Point>)> {
    let mut cuda = cuda_or_skip(test)?;
    let lazy = scene::lazy(2_000_000, seed);
    cuda.upload(&lazy).expect("cuda upload");
    let sorted = cuda.download_points().expect("download");
    let mut cpu = CpuRasterizer::new();
    cpu.upload_in_order(sorted.clone());
    Some((cuda, cpu, lazy, sorted))
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn images_match_cpu_at_several_poses_and_sizes() {
    let Some(mut cuda) = cuda_or_skip("images") else { return };
    let (n, seed) = (2_000_000, 7);
    let host = scene::generate(n, seed, false);
    let mut cpu = CpuRasterizer::new();
    cpu.upload(&host).expect("cpu upload");
    // The CUDA backend makes the same scene on the device (checked bit for bit above).
    let lazy = scene::lazy(n, seed);
    cuda.upload(&lazy).expect("cuda upload");
    let mut camera = FlyCamera::for_cloud(lazy.bounds, true);
    let (mut total_diff, mut total_ties) = (0, 0);
    for (name, pose, ortho) in both_projections(&poses(seed)) {
        set_view(&mut camera, pose, ortho);
        for &(w, h) in SIZES {
            let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
            let c = compare(&format!("{name} ortho {ortho} {w}x{h}"), &mut cuda, &mut cpu, &host.points, &frame);
            if name == "away" && !ortho {
                assert_eq!(c.covered_px, 0, "nothing should be in view looking away");
            } else {
                assert!(c.covered_px > 0, "{name} {w}x{h}: no point in view");
            }
            total_diff += c.differing_px;
            total_ties += c.tie_px;
        }
    }
    println!("images: {total_diff} differing pixels in all, {total_ties} of them exact depth ties");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_target_equals_host_target() {
    let Some(mut cuda) = cuda_or_skip("device target") else { return };
    let (n, seed) = (2_000_000, 11);
    let lazy = scene::lazy(n, seed);
    cuda.upload(&lazy).expect("upload");
    let points = cuda.download_points().expect("download");
    let mut camera = FlyCamera::for_cloud(lazy.bounds, true);
    for (name, pose) in poses(seed).into_iter().take(3) {
        camera.pose = pose;
        for &(w, h) in SIZES {
            let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
            let px = frame.num_pixels();
            let mut host = vec![0u32; px];
            cuda.render(&frame, Target::Host(&mut host)).expect("host render");
            let host_depth = cuda.depth_bits().expect("depth");
            let buf = DeviceBuffer::<u32>::alloc(cuda.context(), px, "test target").expect("alloc");
            let stats = cuda.render(&frame, Target::Device { ptr: buf.ptr(), len_px: px }).expect("device render");
            assert_eq!(cuda.depth_bits().expect("depth"), host_depth, "{name} {w}x{h}: depth differs between targets");
            let device = buf.to_vec(cuda.stream()).expect("read back");
            let label = format!("device target {name} {w}x{h}");
            let (d, t) = assert_differ_only_at_ties(&label, &frame.uniforms(), &points, &host_depth, &host, &device);
            println!("{label}: {d} pixels differ from the host target ({t} at exact ties), {:.3} ms", stats.total_ms);
            // Packed mode is deterministic: the two targets agree exactly.
            let packed = frame.with_mode(RenderMode::Packed);
            cuda.render(&packed, Target::Host(&mut host)).expect("packed host render");
            cuda.render(&packed, Target::Device { ptr: buf.ptr(), len_px: px }).expect("packed device render");
            assert!(
                buf.to_vec(cuda.stream()).expect("read back") == host,
                "{label}: packed images differ between targets"
            );
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn host_points_upload_round_trip_and_render_like_cpu() {
    let Some(mut cuda) = cuda_or_skip("host upload") else { return };
    cuda.set_preprocess(false);
    // A cloud the scene kernel cannot make: a grid with duplicates (certain ties, different colors),
    // points at and behind the eye, NaN and infinities.
    let mut pts = Vec::new();
    for i in 0..200_000u32 {
        let x = (i % 100) as f32 * 0.02 - 1.0;
        let y = ((i / 100) % 100) as f32 * 0.02 - 1.0;
        let z = (i / 10_000) as f32 * 0.1 - 1.0;
        let c = i.wrapping_mul(2_654_435_761);
        pts.push(Point::new([x, y, z], [c as u8, (c >> 8) as u8, (c >> 16) as u8, 255]));
        if i % 7 == 0 {
            pts.push(Point::new([x, y, z], [(c >> 24) as u8, 1, 2, 255]));
        }
    }
    pts.push(Point::new([-3.0, 0.0, 0.0], [1, 1, 1, 255]));
    pts.push(Point::new([-5.0, 0.0, 0.0], [2, 2, 2, 255]));
    pts.push(Point::new([f32::NAN, 0.0, 0.0], [3, 3, 3, 255]));
    pts.push(Point::new([f32::INFINITY, 0.0, 0.0], [4, 4, 4, 255]));
    pts.push(Point::new([0.0, f32::NEG_INFINITY, 0.0], [5, 5, 5, 255]));
    let cloud = PointCloud::from_points(pts.clone(), glam::DVec3::ZERO, "test grid");
    cuda.upload(&cloud).expect("upload");
    let back = cuda.download_points().expect("download");
    assert!(
        back.iter().zip(&pts).all(|(a, b)| bytemuck::bytes_of(a) == bytemuck::bytes_of(b)),
        "round trip changed points"
    );
    assert_eq!(back.len(), pts.len());
    let mut cpu = CpuRasterizer::new();
    cpu.upload(&cloud).expect("cpu upload");
    let camera = FlyCamera::for_cloud(Bounds::EMPTY, true);
    let mut ties = 0;
    for &(w, h) in SIZES {
        let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
        ties += compare(&format!("grid {w}x{h}"), &mut cuda, &mut cpu, &pts, &frame).tie_px;
    }
    println!("grid: {ties} differing pixels at exact ties over all sizes");
}

/// The GPU's preprocessing against its CPU twin, then every batched mode against its CPU twin on the
/// GPU's sorted points (identical images, depth and batch counts: ties go to the smaller index on both),
/// and against the CUDA reference mode (identical depth, so colors differ only at exact ties). The twin
/// whose counts are compared draws whole batches, as the kernels do (`set_group_culling(false)`); the
/// CPU backend's default path, which also culls groups inside batches, must give the same images and
/// depth, but its counts may lag a frame behind where last frame's group marks are stale (here: the
/// previous frame size's), since its first draw then leaves a farther depth pyramid.
fn check_batched_modes(label: &str, cuda: &mut CudaRasterizer, cloud: &PointCloud, poses: &[(&str, Pose)]) {
    use pcv_render::twins::preprocess;
    cuda.upload(cloud).expect("cuda upload");
    let sorted = cuda.download_points().expect("download");
    // The sort: a permutation of the input, in bucket order.
    let mut a: Vec<[u32; 4]> = cloud.host_points(false).iter().map(|p| bytemuck::cast(*p)).collect();
    let mut b: Vec<[u32; 4]> = sorted.iter().map(|p| bytemuck::cast(*p)).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert!(a == b, "{label}: the sorted points are not a permutation of the uploaded ones");
    let g = preprocess::grid_params(&cloud.bounds, sorted.len() as u64);
    let keys: Vec<u32> = sorted.iter().map(|p| preprocess::cell_key(&g, p.pos)).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{label}: the GPU's order is not bucket order");
    // Batches and quantized words: bit for bit the CPU twin's on the same sorted points.
    let twin = preprocess::prepare(&sorted);
    let (batches, quant) = cuda.download_batches().expect("download batches");
    assert_eq!(batches.len(), twin.batches.len());
    if let Some((i, g, c)) = first_mismatch(&batches, &twin.batches) {
        panic!("{label}: batch {i} is {g:?} on the GPU and {c:?} on the CPU");
    }
    if let Some((i, g, c)) = first_mismatch(&quant, &twin.quant) {
        panic!("{label}: quantized word {i} is {g:#x} on the GPU and {c:#x} on the CPU");
    }
    // The kernels' exact twin (whole batches: its counts are compared too), then the CPU backend's
    // default path (group culling: images and depth only).
    let mut cpus = [(false, "the CPU twin's"), (true, "the CPU backend's (group culling)")].map(|(groups, who)| {
        let mut r = CpuRasterizer::new();
        r.set_group_culling(groups);
        r.upload_in_order(sorted.clone());
        (groups, who, r)
    });
    let mut camera = FlyCamera::for_cloud(cloud.bounds, cloud.scene().is_some());
    for (name, pose) in poses {
        camera.pose = *pose;
        for &(w, h) in SIZES {
            let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
            let n = frame.num_pixels();
            let mut ref_color = vec![0u32; n];
            cuda.render(&frame, Target::Host(&mut ref_color)).expect("cuda reference");
            let ref_depth = cuda.depth_bits().expect("depth");
            // Each culled mode twice: the second frame starts from the first's visibility (occlusion culling).
            for mode in [RenderMode::Vis, RenderMode::Culled, RenderMode::Culled, RenderMode::Quant, RenderMode::Quant]
            {
                let fm = frame.with_mode(mode);
                let l = format!("{label} {name} {w}x{h} {}", mode.name());
                let mut gpu = vec![0u32; n];
                let gs = cuda.render(&fm, Target::Host(&mut gpu)).expect("cuda batched render");
                let gpu_depth = cuda.depth_bits().expect("depth");
                assert_eq!(gs.passes.iter().map(|p| p.name).collect::<Vec<_>>(), mode.passes(), "{l}: pass names");
                for (groups, who, cpu) in cpus.iter_mut() {
                    let mut cpu_px = vec![0u32; n];
                    let cs = cpu.render(&fm, Target::Host(&mut cpu_px)).expect("cpu batched render");
                    if !*groups {
                        assert_eq!(gs.batches, cs.batches, "{l}: batch counts differ");
                    }
                    if let Some((i, g, c)) = first_mismatch(&gpu_depth, &cpu.depth_bits()) {
                        panic!("{l}: depth differs from {who} at pixel {i}: cuda {g:#x}, cpu {c:#x}");
                    }
                    if let Some((i, g, c)) = first_mismatch(&gpu, &cpu_px) {
                        panic!("{l}: image differs from {who} at pixel {i}: cuda {g:#010x}, cpu {c:#010x}");
                    }
                }
                if mode != RenderMode::Quant {
                    let dz = ref_depth.iter().zip(&gpu_depth).filter(|(a, b)| a != b).count();
                    assert_eq!(dz, 0, "{l}: {dz} depth values differ from the reference mode's");
                    let (d, _) = assert_differ_only_at_ties(&l, &fm.uniforms(), &sorted, &ref_depth, &ref_color, &gpu);
                    println!("{l}: equals the CPU twin; vs reference: depth identical, {d} colors differ (ties); batches {:?}; {:.3} ms", gs.batches, gs.total_ms);
                } else {
                    let d = ref_color.iter().zip(&gpu).filter(|(a, b)| a != b).count();
                    println!("{l}: equals the CPU twin; {d} pixels differ from the reference (quantized); batches {:?}; {:.3} ms", gs.batches, gs.total_ms);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn post_passes_and_picking_match_cpu_twin() {
    use pcv_render::look::{Background, Edl, Look, PointShape, PointSize, SplatMethod};
    let seed = 3;
    let Some((mut cuda, mut cpu, lazy, sorted)) = scene_on_both("post passes", seed) else { return };
    let spacing_m = pcv_io::spacing::estimate(&lazy);
    // The scene as generated: the GPU's pick reports indices in this order (the CPU twin's, in `sorted`'s).
    let generated = scene::generate(2_000_000, seed, false);
    let look = |point_size, shape, edl, background, splat| Look {
        point_size,
        shape,
        edl,
        background,
        splat,
        quality: Quality::Standard,
    };
    let (round, square) = (PointShape::Round, PointShape::Square);
    let (gather, scatter) = (SplatMethod::Gather, SplatMethod::Scatter);
    let adaptive = PointSize::Adaptive { max_px: 8 };
    let looks = [
        look(PointSize::Fixed(3), round, None, Background::BLACK, gather),
        look(PointSize::Fixed(16), round, Some(Edl::DEFAULT), Background::GRADIENT, gather),
        look(adaptive, round, Some(Edl::DEFAULT), Background::WHITE, gather),
        look(adaptive, square, Some(Edl::DEFAULT), Background::GRADIENT, gather),
        look(PointSize::Fixed(5), square, None, Background::BLACK, scatter),
        look(adaptive, round, None, Background::BLACK, scatter),
        look(PointSize::Fixed(1), round, Some(Edl { strength: 2.5, radius_px: 3.0 }), Background::GRADIENT, gather),
    ];
    let mut camera = FlyCamera::for_cloud(lazy.bounds, true);
    let mut picks = 0;
    for (name, pose, ortho) in both_projections(&poses(seed)[..4]) {
        set_view(&mut camera, pose, ortho);
        let name = if ortho { format!("{name} (ortho)") } else { name.to_string() };
        for &(w, h) in &[(1920u32, 1080u32), (333, 97)] {
            for look in &looks {
                let base = FrameParams::new(camera.clip_from_world(w, h), w, h)
                    .with_look(*look)
                    .with_depth_range(camera.depth_range().near, camera.depth_range().far)
                    .with_spacing(spacing_m);
                let n = base.num_pixels();
                let mut ref_depth = Vec::new();
                for mode in [RenderMode::Reference, RenderMode::Packed, RenderMode::Vis, RenderMode::Culled] {
                    let f = base.with_mode(mode);
                    let l = format!("{name} {w}x{h} {} {:?}", mode.name(), look);
                    let (mut gpu, mut cpu_px) = (vec![0u32; n], vec![0u32; n]);
                    let gs = cuda.render(&f, Target::Host(&mut gpu)).expect("cuda render");
                    cpu.render(&f, Target::Host(&mut cpu_px)).expect("cpu render");
                    let names: Vec<&str> = gs.passes.iter().map(|p| p.name).collect();
                    assert_eq!(names, f.passes().iter().map(|p| p.name()).collect::<Vec<_>>(), "{l}: passes");
                    let (gd, cd) = (cuda.depth_bits().expect("depth"), cpu.depth_bits());
                    if let Some((i, g, c)) = first_mismatch(&gd, &cd) {
                        panic!("{l}: final depth differs at pixel {i}: cuda {g:#x}, cpu {c:#x}");
                    }
                    if mode == RenderMode::Reference {
                        // The colour pass lets either of two tied points win, and the splat carries that on.
                        let d = gpu.iter().zip(&cpu_px).filter(|(a, b)| a != b).count();
                        println!(
                            "{l}: depth identical to the CPU twin's, {d} colours differ (ties of the colour pass)"
                        );
                        ref_depth = gd;
                        continue;
                    }
                    if let Some((i, g, c)) = first_mismatch(&gpu, &cpu_px) {
                        panic!("{l}: image differs from the CPU twin's at pixel {i}: cuda {g:#010x}, cpu {c:#010x}");
                    }
                    let dz = ref_depth.iter().zip(&gd).filter(|(a, b)| a != b).count();
                    assert_eq!(dz, 0, "{l}: final depth differs from the reference mode's at {dz} pixels");
                    let post: Vec<String> = gs
                        .passes
                        .iter()
                        .filter(|p| matches!(p.name, "splat" | "edl"))
                        .map(|p| format!("{} {:.3} ms", p.name, p.ms))
                        .collect();
                    println!("{l}: identical to the CPU twin; {}", post.join(", "));
                    if mode == RenderMode::Vis {
                        for k in 0..16u32 {
                            let (x, y) = ((k * 7919 + 13) % w, (k * 104_729 + 7) % h);
                            let (g, c) = (cuda.pick(x, y, 4).expect("cuda pick"), cpu.pick(x, y, 4).expect("cpu pick"));
                            let same =
                                |h: &Option<pcv_render::PickHit>| h.map(|h| (h.pixel, h.position, h.depth.to_bits()));
                            assert_eq!(same(&g), same(&c), "{l}: pick at ({x}, {y})");
                            if let (Some(g), Some(c)) = (g, c) {
                                let (gi, ci) = (
                                    g.point_index.expect("gpu index") as usize,
                                    c.point_index.expect("cpu index") as usize,
                                );
                                assert_eq!(
                                    generated.points[gi].pos, sorted[ci].pos,
                                    "{l}: the picked indices name the same point"
                                );
                                assert_eq!(Vec3::from(sorted[ci].pos), g.position);
                                picks += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(picks > 20, "only {picks} picks hit a point");
    println!("post passes: every deterministic image equal to the CPU twin's; {picks} picks equal on both backends");
}

/// High quality (the blend pass and its resolve) on CUDA equals the CPU backend's, which runs the twins:
/// the sums are integers, so every image must match to the bit, in the vis mode (every point blended)
/// and the culled modes (the batches in view), with point sizes and EDL, perspective and orthographic.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn high_quality_matches_the_cpu_twin() {
    use pcv_render::look::{Background, Edl, Look, PointSize};
    let seed = 5;
    let Some((mut cuda, mut cpu, lazy, _)) = scene_on_both("high quality", seed) else { return };
    let spacing_m = pcv_io::spacing::estimate(&lazy);
    let high = Look { quality: Quality::High, ..Look::PLAIN };
    let looks = [
        high,
        Look { point_size: PointSize::Fixed(3), ..high },
        Look {
            point_size: PointSize::Adaptive { max_px: 8 },
            edl: Some(Edl::DEFAULT),
            background: Background::GRADIENT,
            ..high
        },
    ];
    let mut camera = FlyCamera::for_cloud(lazy.bounds, true);
    let mut frames = 0;
    for (name, pose, ortho) in both_projections(&poses(seed)[..4]) {
        set_view(&mut camera, pose, ortho);
        for &(w, h) in &[(1920u32, 1080u32), (333, 97)] {
            for look in &looks {
                let base = FrameParams::new(camera.clip_from_world(w, h), w, h)
                    .with_look(*look)
                    .with_depth_range(camera.depth_range().near, camera.depth_range().far)
                    .with_spacing(spacing_m);
                for mode in [RenderMode::Vis, RenderMode::Culled, RenderMode::Culled, RenderMode::Quant] {
                    let f = base.with_mode(mode);
                    let l = format!("{name}{} {w}x{h} {} {:?}", if ortho { " (ortho)" } else { "" }, mode.name(), look);
                    let n = f.num_pixels();
                    let (mut gpu, mut cpu_px) = (vec![0u32; n], vec![0u32; n]);
                    let gs = cuda.render(&f, Target::Host(&mut gpu)).expect("cuda render");
                    cpu.render(&f, Target::Host(&mut cpu_px)).expect("cpu render");
                    let names: Vec<&str> = gs.passes.iter().map(|p| p.name).collect();
                    assert!(names.contains(&"blend"), "{l}: no blend pass in {names:?}");
                    if let Some((i, g, c)) = first_mismatch(&gpu, &cpu_px) {
                        panic!("{l}: image differs from the CPU twin's at pixel {i}: cuda {g:#010x}, cpu {c:#010x}");
                    }
                    let blend_ms = gs.pass_ms("blend").unwrap_or(0.0);
                    println!("{l}: identical to the CPU twin; blend {blend_ms:.3} ms of {:.3} ms", gs.total_ms);
                    frames += 1;
                }
            }
        }
    }
    println!("high quality: {frames} frames equal to the CPU twin's");
}

/// A scene prepared a chunk at a time (as scenes past ~3 billion points are) draws the same depth as
/// the whole scene prepared at once, in every batched mode, and refuses the modes that need the 16-byte
/// points it did not keep.
#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_streamed_pool_copied_in_the_background_draws_the_cpu_backends_depth() {
    use pcv_io::octree::NodeSource;
    use pcv_lod::memory::MemorySource;
    use pcv_lod::{LodOptions, LodScene};
    use std::sync::Arc;
    let Some(mut cuda) = cuda_or_skip("pool") else { return };
    let cloud = scene::generate(400_000, 9, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000)) as Arc<dyn NodeSource>;
    // The finest level everywhere, the whole cloud fits the budget: the complete view draws every point
    // in view, so any frame before it may only lack points, never add one nearer.
    let opts = LodOptions { point_budget: 400_000, target_spacing_px: 0.0, upload_ms_per_frame: 1e9, threads: 4 };
    let (w, h) = (480, 320);
    let mut cpu = CpuRasterizer::new();
    let all = poses(9);
    for (name, pose) in [all[0], all[2]] {
        let (mut lod, mut frames_in_transit) = (LodScene::open(vec![src.clone()], opts).unwrap(), 0);
        // The poses are in the cloud's coordinates; the scene's origin is the centre of its points.
        let shift = (cloud.origin - lod.origin()).as_vec3();
        let mut camera = FlyCamera::for_cloud(lod.bounds(), true);
        camera.pose = Pose { eye: pose.eye + shift, ..pose };
        let frame = FrameParams::new(camera.clip_from_world(w, h), w, h).with_mode(RenderMode::Culled);
        let eye = camera.pose.eye;
        let mut depths = Vec::new();
        for k in 0.. {
            assert!(k < 20_000, "{name}: the view never completed: {:?}", lod.status());
            let st = lod.update(&mut cuda, &frame, eye).expect("update").clone();
            let mut px = vec![0u32; frame.num_pixels()];
            cuda.render(&frame, Target::Host(&mut px)).expect("render");
            depths.push(cuda.depth_bits().expect("depth"));
            frames_in_transit += (st.in_transit > 0) as usize;
            if st.complete && st.loading == 0 {
                break;
            }
        }
        let mut lod_cpu = LodScene::open(vec![src.clone()], opts).unwrap();
        loop {
            let st = lod_cpu.update(&mut cpu, &frame, eye).expect("cpu update").clone();
            if st.complete && st.loading == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut px = vec![0u32; frame.num_pixels()];
        cpu.render(&frame, Target::Host(&mut px)).expect("cpu render");
        let want = cpu.depth_bits();
        let complete = depths.last().expect("a frame").clone();
        assert!(complete.iter().filter(|&&d| d != want[0]).count() > 100, "{name} shows points");
        if let Some((i, x, y)) = first_mismatch(&complete, &want) {
            panic!("{name}: the complete view's depth differs at pixel {i}: cuda {x:#x}, cpu {y:#x}");
        }
        for (k, d) in depths.iter().enumerate() {
            let nearer = d.iter().zip(&complete).filter(|(a, b)| a < b).count();
            assert_eq!(
                nearer, 0,
                "{name}: frame {k} drew {nearer} pixels nearer than the complete view (a slot drawn before its copy?)"
            );
        }
        println!(
            "{name}: {} frames to complete, {frames_in_transit} with copies running; depth equals the CPU's",
            depths.len()
        );
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_pool_with_a_spacing_per_slot_splats_like_the_cpu_twin() {
    use pcv_render::look::{Look, PointSize};
    use pcv_render::twins::preprocess::{grid_params, prepare, sort_by_cells};
    use pcv_render::SlotWrite;
    let Some(mut cuda) = cuda_or_skip("slot spacing") else { return };
    let cloud = scene::generate(300_000, 4, false);
    let pts = cloud.points.to_vec();
    let p = prepare(&sort_by_cells(&grid_params(&Bounds::of_points(&pts), pts.len() as u64), &pts));
    let slots = p.batches.len() as u32;
    // Four spacings, batch by batch: neighbouring batches are drawn at different sizes.
    let spacing: Vec<f32> = (0..slots).map(|b| 0.004 * (1 + b % 4) as f32).collect();
    let mut cpu = CpuRasterizer::new();
    for r in [&mut cuda as &mut dyn Rasterizer, &mut cpu] {
        r.reserve_slots(slots).expect("pool");
        let w = SlotWrite { first_slot: 0, positions: &p.positions, colors: &p.colors, quant: &p.quant };
        let fence = r.write_slots(&[w]).expect("write");
        // Drawn at once: the table orders the frame after the copy (CUDA), no host wait.
        r.set_slot_batches(&p.batches, fence).expect("table");
        r.set_slot_spacing(&spacing).expect("spacing");
    }
    let look = Look { point_size: PointSize::Adaptive { max_px: 16 }, ..Look::PLAIN };
    let mut camera = FlyCamera::for_cloud(cloud.bounds, true);
    for (name, pose) in &poses(4)[..3] {
        camera.pose = *pose;
        for mode in [RenderMode::Culled, RenderMode::Quant] {
            let frame = FrameParams::new(camera.clip_from_world(640, 360), 640, 360)
                .with_mode(mode)
                .with_look(look)
                .with_spacing(0.5);
            let n = frame.num_pixels();
            let (mut a, mut b) = (vec![0u32; n], vec![0u32; n]);
            cuda.render(&frame, Target::Host(&mut a)).expect("cuda render");
            cpu.render(&frame, Target::Host(&mut b)).expect("cpu render");
            if let Some((i, x, y)) = first_mismatch(&cuda.depth_bits().expect("depth"), &cpu.depth_bits()) {
                panic!("{name} {}: depth differs at pixel {i}: cuda {x:#x}, cpu {y:#x}", mode.name());
            }
            if let Some((i, x, y)) = first_mismatch(&a, &b) {
                panic!("{name} {}: colour differs at pixel {i}: cuda {x:#x}, cpu {y:#x}", mode.name());
            }
            let drawn = b.iter().filter(|&&c| c != b[0]).count();
            println!("{name} {}: identical, {drawn} pixels differ from the corner's", mode.name());
        }
    }
    assert!(cuda.slot_writes_done().expect("done") >= 1);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn a_scene_prepared_in_chunks_draws_the_same_depth() {
    let Some(mut whole) = cuda_or_skip("chunks") else { return };
    let Some(mut chunked) = cuda_or_skip("chunks") else { return };
    let lazy = scene::lazy(3_000_001, 5);
    whole.upload(&lazy).expect("whole upload");
    chunked.upload_scene_in_chunks(&lazy, 1 << 20).expect("chunked upload");
    assert_eq!(chunked.num_points(), 3_000_001);
    assert!(chunked.upload_scene_in_chunks(&lazy, 1000).is_err(), "a chunk must be whole batches");
    let mut camera = FlyCamera::for_cloud(lazy.bounds, true);
    for (name, pose) in &poses(5)[..3] {
        camera.pose = *pose;
        let frame = FrameParams::new(camera.clip_from_world(640, 360), 640, 360);
        let n = frame.num_pixels();
        for mode in [RenderMode::Vis, RenderMode::Culled, RenderMode::Culled] {
            let (mut a, mut b) = (vec![0u32; n], vec![0u32; n]);
            whole.render(&frame.with_mode(mode), Target::Host(&mut a)).expect("whole render");
            chunked.render(&frame.with_mode(mode), Target::Host(&mut b)).expect("chunked render");
            let (da, db) = (whole.depth_bits().expect("depth"), chunked.depth_bits().expect("depth"));
            if let Some((i, x, y)) = first_mismatch(&da, &db) {
                panic!("{name} {}: depth differs at pixel {i}: whole {x:#x}, chunked {y:#x}", mode.name());
            }
            let differ = a.iter().zip(&b).filter(|(x, y)| x != y).count();
            println!("{name} {}: depth identical, {differ} colours differ (ties broken by other indices)", mode.name());
        }
        let mut px = vec![0u32; n];
        let e = chunked.render(&frame.with_mode(RenderMode::Reference), Target::Host(&mut px)).unwrap_err();
        assert!(matches!(e, RenderError::ModeUnavailable { .. }), "{e}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn batched_modes_match_cpu_twin_and_reference() {
    let Some(mut cuda) = cuda_or_skip("batched") else { return };
    let seed = 7;
    check_batched_modes("scene", &mut cuda, &scene::lazy(2_000_000, seed), &poses(seed));
    // Host points with duplicates, NaN and infinities, a count that is no multiple of the batch size.
    let mut pts = Vec::new();
    for i in 0..150_001u32 {
        let x = (i % 100) as f32 * 0.02 - 1.0;
        let y = ((i / 100) % 100) as f32 * 0.02 - 1.0;
        let z = (i / 10_000) as f32 * 0.1 - 1.0;
        let c = i.wrapping_mul(2_654_435_761);
        pts.push(Point::new([x, y, z], [c as u8, (c >> 8) as u8, (c >> 16) as u8, 255]));
        if i % 7 == 0 {
            pts.push(Point::new([x, y, z], [(c >> 24) as u8, 1, 2, 255]));
        }
    }
    pts.push(Point::new([f32::NAN, 0.0, 0.0], [3, 3, 3, 255]));
    pts.push(Point::new([f32::INFINITY, 0.0, 0.0], [4, 4, 4, 255]));
    let cloud = PointCloud::from_points(pts, glam::DVec3::ZERO, "test grid");
    check_batched_modes("grid", &mut cuda, &cloud, &poses(seed)[..3]);
    assert!(cuda.preprocess_ms().is_some(), "the preprocessing should have run");
}

/// A terrain of ground (class 2), trees (class 5) and a house (class 6): class code in the red byte.
fn classed_terrain(n_side: u32) -> PointCloud {
    let mut pts = Vec::new();
    for i in 0..n_side {
        for j in 0..n_side {
            let (x, y) = (i as f32 * 100.0 / n_side as f32, j as f32 * 100.0 / n_side as f32);
            let z = (x * 0.05).sin() * 2.0 + (y * 0.03).cos();
            let class: u8 = if (x - 30.0).abs() < 6.0 && (y - 60.0).abs() < 8.0 {
                6
            } else if (i.wrapping_mul(7) + j.wrapping_mul(13)) % 97 < 30 {
                5
            } else {
                2
            };
            let lift = [0.0, 3.0 + ((i + j) % 5) as f32, 6.0][[2, 5, 6].iter().position(|&c| c == class).unwrap()];
            pts.push(Point::new([x, y, z + lift], [class, i as u8, j as u8, 255]));
        }
    }
    PointCloud::from_points(pts, glam::DVec3::ZERO, "classed terrain")
}

/// Renders `fm` on CUDA with its filter set and checks it against the twins' frame with the filter
/// `fl` (`visible` the twins' last-frame batches, kept across calls as the backend keeps its own): the
/// depth buffer and the image equal, the batch counts too. Returns CUDA's stats and image and the
/// twins' visibility buffer.
fn filtered_frame_equals_the_twins(
    cuda: &mut CudaRasterizer,
    fm: &FrameParams,
    table: &pcv_render::twins::preprocess::Table,
    fl: &pcv_render::twins::culled::Filtering,
    visible: &mut [u8],
    l: &str,
) -> (pcv_render::FrameStats, Vec<u32>, Vec<std::sync::atomic::AtomicU64>) {
    let mut gpu = vec![0u32; fm.num_pixels()];
    let gs = cuda.render(fm, Target::Host(&mut gpu)).expect("render");
    let (vis, counts) =
        pcv_render::twins::culled::frame(&fm.uniforms(), table, Some(fl), visible, fm.mode == RenderMode::Quant);
    let twin_depth: Vec<u32> =
        vis.iter().map(|v| pcv_render::gpu_data::word_depth(v.load(std::sync::atomic::Ordering::Relaxed))).collect();
    if let Some((i, g, c)) = first_mismatch(&cuda.depth_bits().expect("depth"), &twin_depth) {
        panic!("{l}: depth differs from the twin at pixel {i}: cuda {g:#x}, twin {c:#x}");
    }
    let mut twin_px = vec![0u32; fm.num_pixels()];
    if fm.look.blends(fm.mode) {
        // High quality: the twins' blend over the batches in view that the filter lets through.
        use pcv_render::twins::{blend, culled};
        let (f, u) = (fm.uniforms(), fm.post_uniforms());
        let accum = blend::blend_sums(fm.width_px, fm.height_px);
        let t = blend::BlendTarget { u: &u, vis: &vis, colors: &table.colors, accum: &accum };
        let (hp, hzb) = culled::final_pyramid(&f, &vis);
        let list = culled::blend_cull(&f, &u, Some(fl), &hp, &table.batches, &hzb);
        let quant = fm.mode == RenderMode::Quant;
        culled::blend_list(&f, Some(fl), &table.batches, &list, &table.positions, &table.quant, quant, &t);
        blend::blend_resolve(&f, &vis, &table.colors, &accum, &mut twin_px);
    } else {
        pcv_render::twins::vis::vis_resolve(&fm.uniforms(), &vis, &table.colors, &mut twin_px);
    }
    if let Some((i, g, c)) = first_mismatch(&gpu, &twin_px) {
        panic!("{l}: image differs from the twin at pixel {i}: cuda {g:#010x}, twin {c:#010x}");
    }
    assert_eq!(gs.batches, Some(counts), "{l}: batch counts");
    (gs, gpu, vis)
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn filtered_culled_modes_match_the_twins() {
    use glam::DVec3;
    use pcv_io::filter::{ClipBox, ClipPlane, Keep, PointFilter};
    use pcv_render::filter::{ColumnData, FilterColumn};
    use pcv_render::twins::{classes, culled, filter::Columns, kept, preprocess};
    let Some(mut cuda) = cuda_or_skip("filtered") else { return };
    let cloud = classed_terrain(1500); // 2.25M points
    cuda.upload(&cloud).expect("upload");
    let uploaded_codes: Vec<u8> = cloud.host_points(false).iter().map(|p| p.rgba[0]).collect();
    let sorted = cuda.download_points().expect("download");
    let codes: Vec<u8> = sorted.iter().map(|p| p.rgba[0]).collect();
    let table = preprocess::prepare(&sorted);
    let sets = classes::batch_classes(&codes);
    let mut vegetation = PointFilter::default();
    vegetation.set_class_shown(5, false);
    let mut clipped = vegetation.clone();
    clipped.boxes.push(ClipBox::from_min_max(
        DVec3::new(10.0, 10.0, -10.0),
        DVec3::new(90.0, 80.0, 50.0),
        Keep::Inside,
    ));
    let mut hole = ClipBox::from_min_max(DVec3::new(40.0, 20.0, -10.0), DVec3::new(55.0, 30.0, 50.0), Keep::Outside);
    hole.rotation = glam::DQuat::from_rotation_z(0.4);
    clipped.boxes.push(hole);
    clipped.planes.push(ClipPlane { point: DVec3::new(0.0, 0.0, 0.5), normal: DVec3::Z });
    let mut only_box = PointFilter::default();
    only_box.boxes.push(ClipBox::from_min_max(
        DVec3::new(20.0, 0.0, -10.0),
        DVec3::new(70.0, 100.0, 50.0),
        Keep::Inside,
    ));
    let mut camera = FlyCamera::for_cloud(cloud.bounds, false);
    // Last frame's visible batches, kept across filters as the backend keeps them (a new filter does not
    // forget them: phase 1 of its first frame draws what the last frame showed).
    let mut visible = vec![0u8; table.batches.len()];
    let poses = [
        ("oblique", Pose { eye: Vec3::new(50.0, -40.0, 60.0), yaw_rad: std::f32::consts::FRAC_PI_2, pitch_rad: -0.6 }),
        ("low", Pose { eye: Vec3::new(5.0, 5.0, 8.0), yaw_rad: 0.8, pitch_rad: -0.1 }),
        ("top", Pose { eye: Vec3::new(50.0, 50.0, 150.0), yaw_rad: 0.0, pitch_rad: -1.55 }),
    ];
    for (label, filter) in [("vegetation hidden", &vegetation), ("clipped", &clipped), ("a box", &only_box)] {
        let fu = pcv_render::filter::uniforms(filter, cloud.origin, false).expect("uniforms");
        // The class codes go up with the first filter that hides a class (upload order).
        let columns = |ask| (ask == FilterColumn::Classes).then(|| ColumnData::Codes(uploaded_codes.clone()));
        assert!(cuda.set_raster_filter(Some(&fu), &columns).expect("set filter"), "{label}");
        // The backend lists each straddling batch's passing points when the filter is set: so does the twin.
        let columns = Columns::of_classes(&codes, &sets);
        let (first, lists) = kept::kept_lists(&fu, &columns, &table.batches, &table.positions);
        let fl = culled::Filtering { uniforms: &fu, columns: Columns { kept_first: &first, kept: &lists, ..columns } };
        for (name, pose) in &poses {
            camera.pose = *pose;
            let (w, h) = (640, 360);
            let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
            let high = pcv_render::look::Look { quality: Quality::High, ..pcv_render::look::Look::PLAIN };
            let (culled, quant) = (RenderMode::Culled, RenderMode::Quant);
            for (mode, hq) in
                [(culled, false), (culled, false), (quant, false), (quant, false), (culled, true), (quant, true)]
            {
                let fm = if hq { frame.with_mode(mode).with_look(high) } else { frame.with_mode(mode) };
                let l = format!("{label} {name} {}{}", mode.name(), if hq { " high quality" } else { "" });
                let (gs, gpu, _) = filtered_frame_equals_the_twins(&mut cuda, &fm, &table, &fl, &mut visible, &l);
                let hidden = gpu.iter().filter(|&&c| c & 0xff == 5 && (c >> 24) == 255).count();
                println!(
                    "{l}: equals the twin; batches {:?}; {:.3} ms; {hidden} pixels of class-5 colour",
                    gs.batches, gs.total_ms
                );
            }
        }
    }
    // Off again: the plain entry points, and the other modes draw once more.
    assert!(cuda.set_raster_filter(None, &|_| None).expect("clear filter"));
    camera.pose = poses[0].1;
    let frame = FrameParams::new(camera.clip_from_world(320, 180), 320, 180).with_mode(RenderMode::Vis);
    cuda.render(&frame, Target::Host(&mut vec![0u32; frame.num_pixels()])).expect("vis after the filter");
    // A filter set refuses the modes that would not show it.
    let fu = pcv_render::filter::uniforms(&only_box, cloud.origin, false).expect("uniforms");
    assert!(cuda.set_raster_filter(Some(&fu), &|_| None).expect("set"));
    let err = cuda.render(&frame, Target::Host(&mut vec![0u32; frame.num_pixels()])).unwrap_err();
    assert!(err.to_string().contains("culled"), "{err}");
}

/// The classed terrain with the attributes a lidar tile has: classes, intensity, returns (1..4 of a
/// pulse's 1..4) and a GPS time along the flight (x), stored as a file's columns; each point's colour
/// is its index (red, green, blue bytes), so the order the GPU sorted them in can be read back.
fn attributed_terrain(n_side: u32) -> PointCloud {
    use pcv_io::attributes::{Attributes, Field};
    let mut cloud = classed_terrain(n_side);
    let n = cloud.points.len();
    let classes: Vec<u8> = cloud.points.iter().map(|p| p.rgba[0]).collect();
    let mut rn = Vec::with_capacity(n);
    let mut nr = Vec::with_capacity(n);
    let mut gps = Vec::with_capacity(n);
    let mut intensity = Vec::with_capacity(n);
    for (i, p) in std::sync::Arc::make_mut(&mut cloud.points).iter_mut().enumerate() {
        let h = (i as u32).wrapping_mul(2_654_435_761);
        let count = if classes[i] == 5 { 1 + (h >> 28) % 4 } else { 1 };
        nr.push(count as f64);
        rn.push((1 + (h >> 20) % count) as f64);
        gps.push(315_000_000.0 + p.pos[0] as f64 * 2.0 + (h % 1000) as f64 * 1e-4);
        intensity.push(((h >> 8) % 4096) as f32);
        p.rgba = [i as u8, (i >> 8) as u8, (i >> 16) as u8, 255];
    }
    cloud.attributes = Some(std::sync::Arc::new(Attributes {
        classification: Some(classes),
        intensity: Some(intensity),
        columns: vec![
            pcv_io::attributes::Column::from_f64(Field::ReturnNumber, &rn),
            pcv_io::attributes::Column::from_f64(Field::NumberOfReturns, &nr),
            pcv_io::attributes::Column::from_f64(Field::GpsTime, &gps),
        ],
        ..Default::default()
    }));
    cloud
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn returns_and_ranges_match_the_twins() {
    use pcv_io::filter::{PointFilter, Returns, ValueRange};
    use pcv_render::filter::{column, ColumnData, FilterColumn};
    use pcv_render::twins::{classes, culled, filter::Columns, kept, preprocess, ranges};
    let Some(mut cuda) = cuda_or_skip("returns and ranges") else { return };
    let cloud = attributed_terrain(1500); // 2.25M points
    cuda.upload(&cloud).expect("upload");
    // The GPU's table order, read back from the colours (each point's index).
    let sorted = cuda.download_points().expect("download");
    let order: Vec<u32> =
        sorted.iter().map(|p| p.rgba[0] as u32 | (p.rgba[1] as u32) << 8 | (p.rgba[2] as u32) << 16).collect();
    let table = preprocess::prepare(&sorted);
    let whole = 0..cloud.points.len();
    let all = std::slice::from_ref(&whole);
    let codes = |ask| match column(&cloud, ask, all) {
        Some(ColumnData::Codes(c)) => classes::gather_classes(&order, &c),
        other => panic!("{ask:?}: {other:?}"),
    };
    let (cl, re) = (codes(FilterColumn::Classes), codes(FilterColumn::Returns));
    let (bcl, bre) = (classes::batch_classes(&cl), classes::batch_classes(&re));
    let range = |s: &str| ValueRange::parse(s).unwrap();
    let mut filters = Vec::new();
    for returns in [Returns::First, Returns::Last, Returns::Multiple] {
        filters.push((format!("{returns} returns"), PointFilter { returns, ..Default::default() }));
    }
    // A strip of the flight by time (x 20..60), and the same with bright points only and no ground.
    let strip = PointFilter { ranges: vec![range("gps_time:315000040..315000120")], ..Default::default() };
    let mut bright = strip.clone();
    bright.ranges.push(range("intensity:2000.."));
    bright.set_class_shown(2, false);
    bright.returns = Returns::Only;
    filters.push(("a time strip".into(), strip));
    filters.push(("bright single returns in the strip, no ground".into(), bright));
    let mut camera = FlyCamera::for_cloud(cloud.bounds, false);
    let mut visible = vec![0u8; table.batches.len()];
    let poses = [
        ("oblique", Pose { eye: Vec3::new(50.0, -40.0, 60.0), yaw_rad: std::f32::consts::FRAC_PI_2, pitch_rad: -0.6 }),
        ("top", Pose { eye: Vec3::new(50.0, 50.0, 150.0), yaw_rad: 0.0, pitch_rad: -1.55 }),
    ];
    for (label, filter) in &filters {
        let fu = pcv_render::filter::for_cloud(filter, &cloud).expect("uniforms");
        let columns = |ask| column(&cloud, ask, all);
        assert!(cuda.set_raster_filter(Some(&fu), &columns).expect("set filter"), "{label}");
        let values: Vec<Vec<f32>> = fu.ranges[..fu.num_ranges as usize]
            .iter()
            .map(|r| match column(&cloud, FilterColumn::Values(r.field), all) {
                Some(ColumnData::Values(v)) => ranges::gather_values(&order, &v),
                other => panic!("{other:?}"),
            })
            .collect();
        let sums: Vec<_> = values.iter().map(|v| ranges::batch_ranges(v)).collect();
        let mut c =
            Columns { classes: &cl, batch_classes: &bcl, returns: &re, batch_returns: &bre, ..Default::default() };
        for k in 0..values.len() {
            (c.values[k], c.batch_values[k]) = (&values[k], &sums[k]);
        }
        let (first, lists) = kept::kept_lists(&fu, &c, &table.batches, &table.positions);
        let fl = culled::Filtering { uniforms: &fu, columns: Columns { kept_first: &first, kept: &lists, ..c } };
        let host = pcv_io::filter::kept(&cloud, filter, 0..cloud.points.len());
        let mut kept = vec![false; cloud.points.len()];
        host.runs.iter().flat_map(|r| r.clone()).for_each(|i| kept[i] = true);
        for (name, pose) in &poses {
            camera.pose = *pose;
            let (w, h) = (640, 360);
            let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
            for mode in [RenderMode::Culled, RenderMode::Culled, RenderMode::Quant] {
                let fm = frame.with_mode(mode);
                let l = format!("{label} {name} {}", mode.name());
                let (gs, _, vis) = filtered_frame_equals_the_twins(&mut cuda, &fm, &table, &fl, &mut visible, &l);
                // Every point drawn passes the host's own rule.
                let drawn: Vec<u64> = vis
                    .iter()
                    .map(|v| pcv_render::gpu_data::word_payload(v.load(std::sync::atomic::Ordering::Relaxed)))
                    .filter(|&i| i != pcv_render::gpu_data::EMPTY_PAYLOAD)
                    .collect();
                assert!(drawn.len() > 1000, "{l}: {} pixels drawn", drawn.len());
                assert!(
                    drawn.iter().all(|&t| kept[order[t as usize] as usize]),
                    "{l}: a point the host drops was drawn"
                );
                println!(
                    "{l}: equals the twin; batches {:?}; {:.3} ms; {} pixels drawn, {} of {} points kept on the host",
                    gs.batches,
                    gs.total_ms,
                    drawn.len(),
                    host.points,
                    cloud.len()
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn streamed_class_codes_filter_like_the_host() {
    use pcv_io::filter::PointFilter;
    let Some(mut cuda) = cuda_or_skip("streamed classes") else { return };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("classed.las");
    let mut cloud = classed_terrain(800);
    let codes: Vec<u8> = cloud.points.iter().map(|p| p.rgba[0]).collect();
    cloud.attributes =
        Some(std::sync::Arc::new(pcv_io::attributes::Attributes { classification: Some(codes), ..Default::default() }));
    pcv_io::convert::write_cloud(&cloud, &path).expect("write the LAS");
    let mut vegetation = PointFilter::default();
    vegetation.set_class_shown(5, false);
    // The host's filter: the kept points uploaded, drawn unfiltered.
    let host =
        pcv::session::load_cloud_skipping(std::slice::from_ref(&path), 0, 0, &Default::default(), &mut Vec::new())
            .unwrap();
    let (kept, k) = pcv_io::filter::shown(&host, &vegetation);
    cuda.upload(&kept).expect("upload kept");
    let camera = FlyCamera::for_cloud(host.bounds, false);
    let (w, h) = (800, 450);
    let frame = FrameParams::new(camera.clip_from_world(w, h), w, h).with_mode(RenderMode::Culled);
    let mut img = vec![0u32; frame.num_pixels()];
    cuda.render(&frame, Target::Host(&mut img)).expect("render kept");
    let host_depth = cuda.depth_bits().expect("depth");
    // The stream with its class codes, every point uploaded, the GPU filtering.
    let cap = cuda.point_capacity().expect("capacity");
    let files = pcv_io::device::plan(&[path], &Default::default(), &cap, None).expect("plan");
    files.carry_classes.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut streamed = pcv_io::device::cloud(files);
    cuda.upload(&streamed).expect("stream");
    pcv_io::device::finish(&mut streamed, false);
    assert_eq!(streamed.origin, host.origin, "both loads recentre on the same origin");
    assert_eq!(cuda.num_points(), host.len());
    let fu = pcv_render::filter::uniforms(&vegetation, streamed.origin, false).unwrap();
    assert!(cuda.set_raster_filter(Some(&fu), &|_| None).expect("filter"), "the stream brought the class codes");
    for round in 0..2 {
        let stats = cuda.render(&frame, Target::Host(&mut img)).expect("render streamed");
        let d = cuda.depth_bits().expect("depth");
        let differ = d.iter().zip(&host_depth).filter(|(a, b)| a != b).count();
        println!("streamed classes round {round}: {differ} of {} depths differ; {} of {} points kept on the host; batches {:?}", d.len(), k.points, host.len(), stats.batches);
        assert_eq!(differ, 0, "the GPU's filter of the streamed codes draws the host's kept points");
    }
    // Without carried codes the GPU refuses a class filter (the caller filters on the host).
    let files = pcv_io::device::plan(&[dir.path().join("classed.las")], &Default::default(), &cap, None).expect("plan");
    cuda.upload(&pcv_io::device::cloud(files)).expect("stream");
    assert!(!cuda.set_raster_filter(Some(&fu), &|_| None).expect("filter"));
}

#[test]
fn errors_are_reported_not_panicked() {
    if !context::driver_present() {
        match CudaRasterizer::new() {
            Err(RenderError::NoDriver(msg)) => {
                assert!(
                    msg.contains(pcv_render::platform::CUDA_DRIVER_LIBRARY),
                    "NoDriver should name the driver library: {msg}"
                );
                println!("no driver here, as expected: {msg}");
            }
            Err(e) if KERNELS.is_empty() => println!("no driver and no kernels: {e}"),
            Err(e) => panic!("expected NoDriver without libcuda, got {e}"),
            Ok(_) => panic!("CudaRasterizer::new succeeded without libcuda"),
        }
        return;
    }
    let Some(mut cuda) = cuda_or_skip("errors") else { return };
    let frame = FrameParams::new(FlyCamera::for_cloud(Bounds::EMPTY, true).clip_from_world(64, 32), 64, 32);
    let mut buf = vec![0u32; 64 * 32];

    let e = cuda.render(&frame, Target::Host(&mut buf)).unwrap_err();
    assert!(matches!(e, RenderError::NotUploaded), "{e}");
    println!("render before upload: {e}");

    // Too large for the device: refused before allocating, saying how much would fit.
    let huge = scene::lazy(100_000_000_000, 1);
    let e = cuda.upload(&huge).unwrap_err();
    match &e {
        RenderError::OutOfMemory { points, fit_points, free_bytes, .. } => {
            assert_eq!(*points, 100_000_000_000);
            // Prepared a chunk at a time, a point takes 20 bytes and more.
            assert!(*fit_points > 0 && *fit_points < *points && fit_points * 20 <= *free_bytes, "{e}");
        }
        _ => panic!("expected OutOfMemory, got {e}"),
    }
    println!("huge cloud: {e}");

    // The rasterizer still works afterwards.
    cuda.upload(&scene::lazy(10_000, 1)).expect("upload after OOM");
    let stats = cuda.render(&frame, Target::Host(&mut buf)).expect("render after OOM");
    assert_eq!(stats.passes.iter().map(|p| p.name).collect::<Vec<_>>(), ["clear", "depth", "color"]);
    assert!(stats.total_ms >= 0.0 && stats.passes.iter().all(|p| p.ms >= 0.0));

    let mut short = vec![0u32; 10];
    let e = cuda.render(&frame, Target::Host(&mut short)).unwrap_err();
    assert!(matches!(e, RenderError::TargetSize { got: 10, width: 64, height: 32 }), "{e}");
    println!("short host target: {e}");

    let e = cuda.render(&frame, Target::Device { ptr: 0, len_px: 64 * 32 }).unwrap_err();
    assert!(matches!(e, RenderError::Cuda { .. }), "{e}");
    println!("null device target: {e}");

    let e = cuda.render(&frame, Target::Device { ptr: 0x1000, len_px: 5 }).unwrap_err();
    assert!(matches!(e, RenderError::TargetSize { got: 5, .. }), "{e}");

    // A device buffer of half the frame, claimed to hold all of it: caught by the allocation's range.
    let small = DeviceBuffer::<u32>::alloc(cuda.context(), 64 * 16, "small").expect("alloc");
    let e = cuda.render(&frame, Target::Device { ptr: small.ptr(), len_px: 64 * 32 }).unwrap_err();
    assert!(matches!(e, RenderError::Cuda { .. }) && e.to_string().contains("past the end"), "{e}");
    println!("device target too small: {e}");

    // An empty frame draws nothing and launches nothing.
    let empty = FrameParams::new(frame.clip_from_world, 0, 0);
    let stats = cuda.render(&empty, Target::Host(&mut [])).expect("empty frame");
    assert_eq!(stats.total_ms, 0.0);

    // PTX newer than the driver: the message names both versions.
    let img = &KERNELS[0];
    let ptx = img.ptx.replacen(".version 9.0", ".version 99.9", 1);
    assert_ne!(ptx, img.ptx, "the embedded PTX should say .version 9.0");
    let e = cuda.try_load_ptx(img.name, &ptx).unwrap_err();
    let (maj, min) = cuda.driver_version();
    match &e {
        RenderError::PtxRejected { message, .. } => {
            assert!(message.contains("99.9"), "{e}");
            assert!(message.contains(&format!("CUDA {maj}.{min}")), "{e}");
        }
        _ => panic!("expected PtxRejected, got {e}"),
    }
    println!("PTX .version 99.9: {e}");
    // The embedded PTX itself JIT-compiles on this driver.
    for k in KERNELS {
        cuda.try_load_ptx(k.name, k.ptx).unwrap_or_else(|e| panic!("embedded PTX of {} refused: {e}", k.name));
    }
    println!("embedded PTX of {} modules JIT-loads on driver CUDA {maj}.{min}", KERNELS.len());
}

/// A headless OpenGL context through EGL (libEGL opened at run time, no new dependency), enough to
/// make a buffer object and read it back: what the CUDA-GL interop test needs without a window.
mod egl {
    use std::ffi::{c_char, c_int, c_void, CStr};

    #[cfg(unix)]
    extern "C" {
        // glibc (2.34 on) has these in libc proper, which every Rust program links.
        fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    // Elsewhere (Windows) there is no libEGL.so.1: the helper reports that, and the tests skip.
    #[cfg(not(unix))]
    unsafe fn dlopen(_filename: *const c_char, _flag: c_int) -> *mut c_void {
        std::ptr::null_mut()
    }
    #[cfg(not(unix))]
    unsafe fn dlsym(_handle: *mut c_void, _symbol: *const c_char) -> *mut c_void {
        std::ptr::null_mut()
    }
    const RTLD_NOW: c_int = 2;

    type Ptr = *mut c_void;
    const EGL_NONE: i32 = 0x3038;
    const EGL_SURFACE_TYPE: i32 = 0x3033;
    const EGL_PBUFFER_BIT: i32 = 0x0001;
    const EGL_RENDERABLE_TYPE: i32 = 0x3040;
    const EGL_OPENGL_BIT: i32 = 0x0008;
    const EGL_OPENGL_API: u32 = 0x30A2;
    const EGL_PLATFORM_DEVICE_EXT: u32 = 0x313F;
    const EGL_CONTEXT_MAJOR_VERSION: i32 = 0x3098;
    const EGL_CONTEXT_MINOR_VERSION: i32 = 0x30FB;
    const EGL_CONTEXT_OPENGL_PROFILE_MASK: i32 = 0x30FD;
    pub const GL_PIXEL_UNPACK_BUFFER: u32 = 0x88EC;
    pub const GL_STREAM_DRAW: u32 = 0x88E0;
    const GL_RENDERER: u32 = 0x1F01;

    /// The GL calls the test makes.
    pub struct Gl {
        pub gen_buffers: unsafe extern "C" fn(i32, *mut u32),
        pub bind_buffer: unsafe extern "C" fn(u32, u32),
        pub buffer_data: unsafe extern "C" fn(u32, isize, *const c_void, u32),
        pub get_buffer_sub_data: unsafe extern "C" fn(u32, isize, isize, *mut c_void),
        pub delete_buffers: unsafe extern "C" fn(i32, *const u32),
        pub finish: unsafe extern "C" fn(),
        pub get_error: unsafe extern "C" fn() -> u32,
        get_string: unsafe extern "C" fn(u32) -> *const c_char,
    }

    /// A current, surfaceless GL context; released on drop.
    pub struct Context {
        display: Ptr,
        context: Ptr,
        make_current: unsafe extern "C" fn(Ptr, Ptr, Ptr, Ptr) -> u32,
        destroy_context: unsafe extern "C" fn(Ptr, Ptr) -> u32,
        terminate: unsafe extern "C" fn(Ptr) -> u32,
        pub gl: Gl,
    }

    unsafe fn sym<F: Copy>(lib: Ptr, name: &CStr) -> Result<F, String> {
        // SAFETY (caller): F is the symbol's function-pointer type.
        let p = unsafe { dlsym(lib, name.as_ptr()) };
        if p.is_null() {
            return Err(format!("{name:?} not found"));
        }
        Ok(unsafe { std::mem::transmute_copy::<Ptr, F>(&p) })
    }

    impl Context {
        pub fn new() -> Result<Self, String> {
            // SAFETY: every symbol is transmuted to the signature the EGL 1.5 / GL specs give it; every
            // out-pointer handed to EGL or GL is a live local of the right type and length.
            unsafe {
                let lib = dlopen(c"libEGL.so.1".as_ptr(), RTLD_NOW);
                if lib.is_null() {
                    return Err("libEGL.so.1 could not be loaded".into());
                }
                let get_proc: unsafe extern "C" fn(*const c_char) -> Ptr = sym(lib, c"eglGetProcAddress")?;
                let get_display: unsafe extern "C" fn(Ptr) -> Ptr = sym(lib, c"eglGetDisplay")?;
                let initialize: unsafe extern "C" fn(Ptr, *mut i32, *mut i32) -> u32 = sym(lib, c"eglInitialize")?;
                let bind_api: unsafe extern "C" fn(u32) -> u32 = sym(lib, c"eglBindAPI")?;
                let choose_config: unsafe extern "C" fn(Ptr, *const i32, *mut Ptr, i32, *mut i32) -> u32 =
                    sym(lib, c"eglChooseConfig")?;
                let create_context: unsafe extern "C" fn(Ptr, Ptr, Ptr, *const i32) -> Ptr =
                    sym(lib, c"eglCreateContext")?;
                let make_current: unsafe extern "C" fn(Ptr, Ptr, Ptr, Ptr) -> u32 = sym(lib, c"eglMakeCurrent")?;
                let destroy_context: unsafe extern "C" fn(Ptr, Ptr) -> u32 = sym(lib, c"eglDestroyContext")?;
                let terminate: unsafe extern "C" fn(Ptr) -> u32 = sym(lib, c"eglTerminate")?;
                let get_error: unsafe extern "C" fn() -> i32 = sym(lib, c"eglGetError")?;

                // The device platform first (headless on NVIDIA), then the default display.
                let mut display: Ptr = std::ptr::null_mut();
                let query_devices = get_proc(c"eglQueryDevicesEXT".as_ptr());
                let platform_display = get_proc(c"eglGetPlatformDisplayEXT".as_ptr());
                if !query_devices.is_null() && !platform_display.is_null() {
                    let query_devices: unsafe extern "C" fn(i32, *mut Ptr, *mut i32) -> u32 =
                        std::mem::transmute_copy(&query_devices);
                    let platform_display: unsafe extern "C" fn(u32, Ptr, *const i32) -> Ptr =
                        std::mem::transmute_copy(&platform_display);
                    let mut devices = [std::ptr::null_mut(); 8];
                    let mut n = 0;
                    if query_devices(8, devices.as_mut_ptr(), &mut n) != 0 && n > 0 {
                        display = platform_display(EGL_PLATFORM_DEVICE_EXT, devices[0], std::ptr::null());
                    }
                }
                if display.is_null() {
                    display = get_display(std::ptr::null_mut());
                }
                if display.is_null() {
                    return Err(format!("no EGL display (error {:#x})", get_error()));
                }
                let (mut major, mut minor) = (0, 0);
                if initialize(display, &mut major, &mut minor) == 0 {
                    return Err(format!("eglInitialize failed (error {:#x})", get_error()));
                }
                if bind_api(EGL_OPENGL_API) == 0 {
                    return Err(format!("eglBindAPI(OpenGL) failed (error {:#x})", get_error()));
                }
                let mut config: Ptr = std::ptr::null_mut();
                let mut found = 0;
                for attribs in [
                    [EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE],
                    [EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE, EGL_NONE, EGL_NONE],
                ] {
                    if choose_config(display, attribs.as_ptr(), &mut config, 1, &mut found) != 0 && found > 0 {
                        break;
                    }
                }
                if found < 1 {
                    return Err(format!("no OpenGL EGL config (error {:#x})", get_error()));
                }
                let ctx_attribs = [
                    EGL_CONTEXT_MAJOR_VERSION,
                    3,
                    EGL_CONTEXT_MINOR_VERSION,
                    3,
                    EGL_CONTEXT_OPENGL_PROFILE_MASK,
                    1,
                    EGL_NONE,
                ];
                let context = create_context(display, config, std::ptr::null_mut(), ctx_attribs.as_ptr());
                if context.is_null() {
                    return Err(format!("eglCreateContext failed (error {:#x})", get_error()));
                }
                if make_current(display, std::ptr::null_mut(), std::ptr::null_mut(), context) == 0 {
                    return Err(format!("surfaceless eglMakeCurrent failed (error {:#x})", get_error()));
                }
                let gl_lib = dlopen(c"libOpenGL.so.0".as_ptr(), RTLD_NOW);
                let gl_fn = |name: &CStr| -> Result<Ptr, String> {
                    let mut p = get_proc(name.as_ptr());
                    if p.is_null() && !gl_lib.is_null() {
                        p = dlsym(gl_lib, name.as_ptr());
                    }
                    if p.is_null() {
                        Err(format!("GL function {name:?} not found"))
                    } else {
                        Ok(p)
                    }
                };
                macro_rules! load {
                    ($name:literal) => {
                        std::mem::transmute_copy(&gl_fn($name)?)
                    };
                }
                let gl = Gl {
                    gen_buffers: load!(c"glGenBuffers"),
                    bind_buffer: load!(c"glBindBuffer"),
                    buffer_data: load!(c"glBufferData"),
                    get_buffer_sub_data: load!(c"glGetBufferSubData"),
                    delete_buffers: load!(c"glDeleteBuffers"),
                    finish: load!(c"glFinish"),
                    get_error: load!(c"glGetError"),
                    get_string: load!(c"glGetString"),
                };
                Ok(Context { display, context, make_current, destroy_context, terminate, gl })
            }
        }

        pub fn renderer(&self) -> String {
            // SAFETY: the context is current; glGetString returns a static NUL-terminated string or null.
            let s = unsafe { (self.gl.get_string)(GL_RENDERER) };
            if s.is_null() {
                return "?".into();
            }
            // SAFETY: non-null, NUL-terminated, owned by the GL implementation.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    }

    impl Drop for Context {
        fn drop(&mut self) {
            // SAFETY: display and context were created in `new` and are released once, here.
            unsafe {
                (self.make_current)(self.display, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
                (self.destroy_context)(self.display, self.context);
                (self.terminate)(self.display);
            }
        }
    }
}

/// A GL buffer of `bytes` bytes in the current context.
fn gl_buffer(gl: &egl::Gl, bytes: usize) -> u32 {
    let mut name = 0u32;
    // SAFETY: the context is current; `name` is one writable u32; the data pointer is null (allocate only).
    unsafe {
        (gl.gen_buffers)(1, &mut name);
        (gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, name);
        (gl.buffer_data)(egl::GL_PIXEL_UNPACK_BUFFER, bytes as isize, std::ptr::null(), egl::GL_STREAM_DRAW);
        (gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, 0);
    }
    name
}

/// Buffer `name`'s contents as u32 words.
fn gl_read(gl: &egl::Gl, name: u32, words: usize) -> Vec<u32> {
    let mut out = vec![0u32; words];
    // SAFETY: the context is current; `out` holds exactly `words * 4` writable bytes.
    unsafe {
        (gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, name);
        (gl.get_buffer_sub_data)(egl::GL_PIXEL_UNPACK_BUFFER, 0, (words * 4) as isize, out.as_mut_ptr().cast());
        (gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, 0);
    }
    out
}

fn egl_or_skip(test: &str) -> Option<egl::Context> {
    match egl::Context::new() {
        Ok(c) => {
            println!("{test}: EGL context on {}", c.renderer());
            Some(c)
        }
        Err(e) => {
            if std::env::var("PCV_REQUIRE_GL").is_ok_and(|v| v == "1") {
                panic!("{test}: PCV_REQUIRE_GL=1 but no headless GL context: {e}");
            }
            eprintln!("{test}: skipping, no headless GL context: {e}");
            None
        }
    }
}

/// The EGL helper alone (no CUDA): a buffer written with glBufferData reads back. Run with --ignored
/// where Mesa or another EGL is present.
#[test]
#[ignore = "needs an EGL implementation; the interop test below uses the same helper on the GPU"]
fn egl_helper_makes_a_readable_buffer() {
    let Some(ctx) = egl_or_skip("egl helper") else { return };
    let data: Vec<u32> = (0..1000).collect();
    let mut name = 0u32;
    // SAFETY: the context is current; `data` outlives the copying glBufferData call.
    unsafe {
        (ctx.gl.gen_buffers)(1, &mut name);
        (ctx.gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, name);
        (ctx.gl.buffer_data)(egl::GL_PIXEL_UNPACK_BUFFER, 4000, data.as_ptr().cast(), egl::GL_STREAM_DRAW);
        (ctx.gl.bind_buffer)(egl::GL_PIXEL_UNPACK_BUFFER, 0);
    }
    assert_eq!(gl_read(&ctx.gl, name, 1000), data);
    // SAFETY: `name` is a buffer of this context.
    unsafe { (ctx.gl.delete_buffers)(1, &name) };
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn gl_interop_writes_the_frame_into_a_pixel_buffer() {
    use pcv_render::cuda::interop::GlBufferRegistration;
    let Some(mut cuda) = cuda_or_skip("gl interop") else { return };
    let Some(ctx) = egl_or_skip("gl interop") else { return };
    let gl = &ctx.gl;
    let (n, seed) = (1_000_000, 5);
    let lazy = scene::lazy(n, seed);
    cuda.upload(&lazy).expect("upload");
    let points = cuda.download_points().expect("download");
    let camera = FlyCamera::for_cloud(lazy.bounds, true);
    for &(w, h) in &[(640u32, 360u32), (333, 97)] {
        let frame = FrameParams::new(camera.clip_from_world(w, h), w, h);
        let px = frame.num_pixels();
        let mut host = vec![0u32; px];
        cuda.render(&frame, Target::Host(&mut host)).expect("host render");
        let depth = cuda.depth_bits().expect("depth");
        let pbo = gl_buffer(gl, px * 4);
        let mut reg =
            GlBufferRegistration::register(&cuda.cuda_handle().expect("a CUDA handle"), pbo).expect("register");
        for round in 0..2 {
            {
                let mapped = reg.map().expect("map");
                assert_eq!(mapped.size_bytes(), px * 4, "mapped size");
                assert_ne!(mapped.device_ptr(), 0);
                cuda.render(&frame, Target::Device { ptr: mapped.device_ptr(), len_px: mapped.size_bytes() / 4 })
                    .expect("render into the mapped PBO");
            } // unmapped here
              // SAFETY: the GL context is current.
            unsafe { (gl.finish)() };
            let seen = gl_read(gl, pbo, px);
            // SAFETY: the GL context is current.
            assert_eq!(unsafe { (gl.get_error)() }, 0, "GL error");
            let label = format!("gl interop {w}x{h} round {round}");
            let (d, t) = assert_differ_only_at_ties(&label, &frame.uniforms(), &points, &depth, &host, &seen);
            let covered = seen.iter().filter(|&&c| c != frame.uniforms().clear_color).count();
            assert!(covered > 0, "{label}: GL sees only the clear color");
            println!("{label}: GL read back the CUDA frame ({covered} colored pixels, {d} differ from Target::Host, {t} at ties)");
        }
        drop(reg); // unregister before GL deletes the buffer
                   // SAFETY: `pbo` is a buffer of this context, no longer registered with CUDA.
        unsafe { (gl.delete_buffers)(1, &pbo) };
    }
}
