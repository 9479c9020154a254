//! The multi-GPU composite (`render/multi.rs`) against one GPU, on a machine with CUDA and NCCL. The
//! tests are `#[ignore]`d (reported as ignored elsewhere) and run with `--include-ignored` on the GPU
//! machine, where `PCV_REQUIRE_CUDA=1` makes a missing GPU or NCCL a failure. `PCV_TEST_GPUS=N` (default 1) picks the GPUs: with 1, two shares of one GPU
//! composited through a one-rank NCCL communicator; with 2, a share on each GPU.
//!
//! What is checked, at the bench's poses (start, close-up, far, top, grazing) and two looks (1 px;
//! 3 px with eye-dome lighting and a gradient background):
//! - `packed`: the composite's image equals the single GPU's bit for bit (ties go to the smaller
//!   colour on both).
//! - `vis`, `culled`, `quant`: depths equal at every pixel; colours differ only at ties. A tie is
//!   counted where the colours differ and at least two points of the cloud land on that pixel at
//!   exactly the winning depth (checked on the host with the projection's CPU twin, 1 px look); with
//!   point size (where a tie moves to the neighbours the splat reaches) differing pixels must stay
//!   under 1% of the frame. The counts are printed.
//! - A built-in scene (each share made on its GPU) and a host cloud (split in Morton order).
use pcv_camera::scenarios::scenarios;
use pcv_camera::FlyCamera;
use pcv_io::{scene, PointCloud};
use pcv_render::cuda::CudaRasterizer;
use pcv_render::look::{Background, Edl, Look, PointSize};
use pcv_render::multi::MultiRasterizer;
use pcv_render::twins::project::project;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};
use std::collections::HashMap;

mod common;

const W: u32 = 640;
const H: u32 = 360;

fn require() -> bool {
    std::env::var("PCV_REQUIRE_CUDA").is_ok_and(|v| v == "1")
}

fn gpus() -> usize {
    std::env::var("PCV_TEST_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(1)
}

/// One GPU and the multi-GPU backend, or `None` (after printing why) where they cannot run.
fn backends(test: &str) -> Option<(CudaRasterizer, MultiRasterizer)> {
    let single = match CudaRasterizer::new() {
        Ok(c) => c,
        Err(e) if !require() => {
            eprintln!("{test}: skipping, CUDA backend unavailable: {e}");
            return None;
        }
        Err(e) => panic!("{test}: PCV_REQUIRE_CUDA=1 but CUDA is unavailable: {e}"),
    };
    let (g, shares) = match gpus() {
        1 => (1, 2),
        n => (n, 1),
    };
    match MultiRasterizer::new(g, shares) {
        Ok(m) => {
            println!("{test}: {} vs {}", single.description(), m.description());
            Some((single, m))
        }
        Err(e) if !require() => {
            eprintln!("{test}: skipping, {g} GPU(s) x {shares} shares unavailable: {e}");
            None
        }
        Err(e) => panic!("{test}: PCV_REQUIRE_CUDA=1 but the multi-GPU backend is unavailable: {e}"),
    }
}

fn render(r: &mut dyn Rasterizer, frame: &FrameParams) -> (Vec<u32>, Vec<u32>) {
    let mut img = vec![0u32; frame.num_pixels()];
    r.render(frame, Target::Host(&mut img)).unwrap_or_else(|e| panic!("{} render: {e}", r.name()));
    let depth = r.device_depth_bits().expect("a CUDA backend").expect("depth bits");
    (img, depth)
}

/// Pixels (index → depth bits) where two or more of `points` land at exactly that depth.
fn ties(points: &[pcv_render::gpu_data::Point], frame: &FrameParams, at: &HashMap<usize, u32>) -> usize {
    let f = frame.uniforms();
    let mut hits: HashMap<usize, u32> = HashMap::new();
    for p in points {
        if let Some(q) = project(&f, p.pos) {
            let i = q.index(f.width);
            if at.get(&i) == Some(&q.depth_bits) {
                *hits.entry(i).or_default() += 1;
            }
        }
    }
    hits.values().filter(|&&c| c >= 2).count()
}

fn compare_cloud(test: &str, host: &PointCloud, upload: &PointCloud) {
    let Some((mut single, mut multi)) = backends(test) else { return };
    single.upload(upload).expect("single upload");
    multi.upload(upload).expect("multi upload");
    assert_eq!(multi.num_points(), single.num_points());
    println!("{test}: shares {:?}", multi.share_ranges());
    let looks = [
        Look::PLAIN,
        Look {
            point_size: PointSize::Fixed(3),
            edl: Some(Edl::DEFAULT),
            background: Background::parse("gradient").expect("background"),
            ..Look::PLAIN
        },
    ];
    let mut frames = 0;
    // Per pose and mode, the 1-px look's differing pixels (every one a checked tie): with 3-px points a
    // tied pixel can change the colour of the 3 × 3 pixels its point covers, and nothing else can
    // differ (the depths are identical, so EDL shades alike).
    let mut ties_1px: HashMap<(String, &str), usize> = HashMap::new();
    for sc in scenarios(host) {
        let cam = FlyCamera::start_for(host, Some(sc.pose));
        for (li, look) in looks.iter().enumerate() {
            for mode in [RenderMode::Packed, RenderMode::Vis, RenderMode::Culled, RenderMode::Quant] {
                let frame = FrameParams::new(cam.clip_from_world(W, H), W, H)
                    .with_mode(mode)
                    .with_look(*look)
                    .with_depth_range(cam.depth_range().near, cam.depth_range().far);
                // Culled modes remember last frame's visible batches: a second frame shows the steady state.
                let (a, da) = render(&mut single, &frame);
                let (b, db) = render(&mut multi, &frame);
                let (a2, da2) = if mode.culls() { render(&mut single, &frame) } else { (a, da) };
                let (b2, db2) = if mode.culls() { render(&mut multi, &frame) } else { (b, db) };
                let label = format!("{test} {} {} look {li}", sc.name, mode.name());
                let depth_diff = da2.iter().zip(&db2).filter(|(x, y)| x != y).count();
                let differing: HashMap<usize, u32> =
                    a2.iter().zip(&b2).enumerate().filter(|(_, (x, y))| x != y).map(|(i, _)| (i, da2[i])).collect();
                let covered = da2.iter().filter(|&&d| d < 0x3f80_0000).count();
                if mode == RenderMode::Packed {
                    assert_eq!(differing.len(), 0, "{label}: packed images differ at {} pixels", differing.len());
                }
                // Quant draws 10-bit coordinates in each batch's box, and a share's batches are not one
                // GPU's: its depths may differ (below).
                if mode != RenderMode::Quant {
                    assert_eq!(depth_diff, 0, "{label}: depths differ at {depth_diff} pixels");
                }
                let tie_px = if li == 0 && mode != RenderMode::Quant && !differing.is_empty() {
                    ties(&host.points, &frame, &differing)
                } else {
                    0
                };
                println!(
                    "{label}: {covered} px covered, {} colours differ, {tie_px} of them checked ties, {depth_diff} depths differ",
                    differing.len()
                );
                if mode == RenderMode::Quant {
                    // Each share's batches are its own, so their 10-bit grids differ from one GPU's:
                    // reported, held only to covering about as much of the frame.
                    let covered_single = da2.iter().filter(|&&d| d < 0x3f80_0000).count();
                    let covered_multi = db2.iter().filter(|&&d| d < 0x3f80_0000).count();
                    assert!(
                        covered_multi * 10 >= covered_single * 9,
                        "{label}: {covered_multi} px vs {covered_single}"
                    );
                } else if li == 0 {
                    assert_eq!(tie_px, differing.len(), "{label}: a colour differs where no two points tie");
                    ties_1px.insert((sc.name.to_string(), mode.name()), tie_px);
                } else {
                    let tied = ties_1px.get(&(sc.name.to_string(), mode.name())).copied().unwrap_or(0);
                    assert!(
                        differing.len() <= 9 * tied,
                        "{label}: {} pixels differ, more than the 3 x 3 footprints of the 1-px look's {tied} tied pixels",
                        differing.len()
                    );
                }
                frames += 1;
            }
        }
    }
    assert!(frames >= 24, "{test}: only {frames} frames compared");
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn built_in_scene_composite_equals_one_gpu() {
    let (n, seed) = (8_000_000, 7);
    let host = scene::generate(n, seed, false);
    compare_cloud("scene", &host, &scene::lazy(n, seed));
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn host_cloud_composite_equals_one_gpu() {
    // A host cloud: the multi backend sorts it in Morton order and uploads each range.
    let host = scene::generate(3_000_000, 11, false);
    let cloud = PointCloud::from_points(host.points.to_vec(), host.origin, "host");
    compare_cloud("host", &cloud, &cloud);
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn reference_mode_is_refused_not_a_panic() {
    let Some((_, mut multi)) = backends("reference") else { return };
    multi.upload(&scene::lazy(1_000_000, 1)).expect("upload");
    let frame = FrameParams::new(glam::Mat4::IDENTITY, 64, 64).with_mode(RenderMode::Reference);
    let mut img = vec![0u32; 64 * 64];
    let e = multi.render(&frame, Target::Host(&mut img)).expect_err("reference must be refused");
    assert!(e.to_string().contains("reference"), "{e}");
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn composite_kernels_match_their_cpu_twins() {
    use pcv_render::cuda::kernels;
    use pcv_render::cuda::memory::DeviceBuffer;
    use pcv_render::gpu_data::{word, EMPTY_PAYLOAD};
    use pcv_render::twins::composite::{words_gather, words_min, words_offset};
    let cuda = match CudaRasterizer::new() {
        Ok(c) => c,
        Err(e) if !require() => return eprintln!("kernels: skipping, CUDA backend unavailable: {e}"),
        Err(e) => panic!("kernels: PCV_REQUIRE_CUDA=1 but CUDA is unavailable: {e}"),
    };
    let (w, h) = (97u32, 61u32);
    let n = (w * h) as usize;
    let frame = FrameParams::new(glam::Mat4::IDENTITY, w, h)
        .with_look(Look { background: Background::parse("gradient").expect("background"), ..Look::PLAIN });
    let f = frame.uniforms();
    // Words of every kind: empty, indices in and out of a share's range, at several depths.
    let mut next = common::xorshift(0x9e37_79b9_7f4a_7c15);
    let a: Vec<u64> = (0..n)
        .map(|i| {
            if i % 7 == 0 {
                word(0x3f80_0000, EMPTY_PAYLOAD)
            } else {
                word((next() % 0x3f80_0000) as u32, next() % 5000)
            }
        })
        .collect();
    let b: Vec<u64> = (0..n).map(|_| word((next() % 0x3f80_0000) as u32, next() % 5000)).collect();
    let colors: Vec<u32> = (0..1000).map(|_| next() as u32).collect();
    let (ctx, stream, table) = (cuda.context(), cuda.stream(), cuda.kernel_table());
    let upload = |v: &[u64]| {
        let mut d = DeviceBuffer::<u64>::alloc(ctx, v.len(), "test words").expect("alloc");
        d.write_at(stream, 0, v).expect("write");
        d
    };
    let (da, db) = (upload(&a), upload(&b));
    let mut dc = DeviceBuffer::<u32>::alloc(ctx, colors.len(), "test colours").expect("alloc");
    dc.write_at(stream, 0, &colors).expect("write");
    let dout = upload(&vec![7u64; n]);
    // SAFETY: every buffer holds the `n` words (or 1000 colours) the launches read and write.
    unsafe {
        kernels::words_offset(table, stream, n as u64, da.ptr(), 123).expect("offset");
        kernels::words_min(table, stream, n as u64, da.ptr(), db.ptr()).expect("min");
        kernels::words_gather(table, stream, f, da.ptr(), dc.ptr(), 2000, 1000, 1, dout.ptr()).expect("gather");
    }
    let (mut ca, mut cout) = (a.clone(), vec![7u64; n]);
    words_offset(&mut ca, 123);
    words_min(&mut ca, &b);
    words_gather(&f, &ca, &colors, 2000, true, &mut cout);
    assert!(da.to_vec(stream).expect("read") == ca, "offset + min differ from the twins");
    let got = dout.to_vec(stream).expect("read");
    let owned = cout.iter().filter(|&&x| x != u64::MAX && word_depth_of(x) < 0x3f80_0000).count();
    assert!(owned > 100, "the test should own some pixels ({owned})");
    assert!(got == cout, "gather differs from its twin");
    // Without init the pixels another share won keep what was there.
    let dkeep = upload(&vec![7u64; n]);
    // SAFETY: as above.
    unsafe { kernels::words_gather(table, stream, f, da.ptr(), dc.ptr(), 2000, 1000, 0, dkeep.ptr()) }.expect("gather");
    let mut ckeep = vec![7u64; n];
    words_gather(&f, &ca, &colors, 2000, false, &mut ckeep);
    assert!(dkeep.to_vec(stream).expect("read") == ckeep, "gather without init differs from its twin");
}

fn word_depth_of(w: u64) -> u32 {
    pcv_render::gpu_data::word_depth(w)
}

/// A binary PLY of `points` (float x y z, uchar r g b), written the way scanners' tools write it.
fn write_ply(path: &std::path::Path, points: &[pcv_render::gpu_data::Point]) {
    let mut bytes = format!(
        "ply\nformat binary_little_endian 1.0\nelement vertex {}\nproperty float x\nproperty float y\nproperty float z\nproperty uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n",
        points.len()
    )
    .into_bytes();
    for p in points {
        for c in p.pos {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        bytes.extend_from_slice(&p.rgba[..3]);
    }
    std::fs::write(path, bytes).expect("write the PLY");
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn streamed_files_composite_equals_one_gpu() {
    // Files streamed to the devices without a host copy: each GPU takes a contiguous part of the stream.
    use pcv_io::{device, load};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("scene.ply");
    let host = scene::generate(3_000_000, 5, false);
    write_ply(&path, &host.points);
    let opts = load::LoadOptions::quiet();
    let Some((single, _)) = backends("streamed") else { return };
    let cap = single.point_capacity().expect("capacity");
    drop(single);
    let files = vec![path.clone()];
    let plan = device::plan(&files, &opts, &cap, None).expect("plan");
    let mut upload = device::cloud(plan);
    assert!(upload.is_device_only());
    // The host cloud of the same file (for the tie check) has the same origin and points.
    let loaded = load::load_files_with(&files, &opts).expect("load");
    compare_cloud("streamed", &loaded, &upload);
    device::finish(&mut upload, false);
}

#[test]
#[ignore = "needs NVIDIA GPUs (CUDA and NCCL; one GPU runs its shares)"]
fn level_of_detail_pool_spread_over_gpus_equals_one_gpu() {
    // The LOD node pool's slots spread over the shares; once the view is complete, the composite of the
    // shares' nodes draws what one GPU's pool draws.
    use glam::Vec3;
    use pcv_camera::{Camera, Pose};
    use pcv_io::octree::NodeSource;
    use pcv_lod::memory::MemorySource;
    use pcv_lod::{LodOptions, LodScene};
    let Some((mut single, mut multi)) = backends("lod") else { return };
    let cloud = scene::generate(2_000_000, 3, false);
    let src: std::sync::Arc<dyn NodeSource> = std::sync::Arc::new(MemorySource::build(&cloud, 20_000));
    let opts = LodOptions { point_budget: 1_500_000, target_spacing_px: 1.0, upload_ms_per_frame: 1e9, threads: 4 };
    let mut lod_a = LodScene::open(vec![src.clone()], opts).expect("scene");
    let mut lod_b = LodScene::open(vec![src], opts).expect("scene");
    let mut cam = Camera::for_cloud(lod_a.bounds(), false);
    // The cloud's points where the scene draws them.
    let resident = common::recentred(&cloud.points, cloud.origin, lod_a.origin());
    let mut compared = 0;
    for k in 0..5 {
        let yaw = k as f32 * 1.1;
        let dir = Vec3::new(yaw.cos(), yaw.sin(), -0.3);
        let eye = lod_a.bounds().center() - dir * lod_a.bounds().radius() * (0.3 + 0.4 * k as f32);
        cam.pose = Pose { eye, yaw_rad: yaw, pitch_rad: -0.3 };
        let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
        let finish = |lod: &mut LodScene, r: &mut dyn Rasterizer| {
            for _ in 0..4000 {
                let st = lod.update(r, &frame, eye).expect("update").clone();
                let mut px = vec![0u32; frame.num_pixels()];
                r.render(&frame, Target::Host(&mut px)).expect("render");
                if st.complete && st.loading == 0 {
                    return st;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            panic!("lod {k}: the view never completed: {:?}", lod.status());
        };
        let sa = finish(&mut lod_a, &mut single);
        let sb = finish(&mut lod_b, &mut multi);
        println!("lod pose {k}: one GPU {sa:?}\n  shares {sb:?}");
        assert_eq!(
            (sa.drawn_nodes, sa.drawn_points),
            (sb.drawn_nodes, sb.drawn_points),
            "pose {k}: different nodes drawn"
        );
        assert!(sb.drawn_points > 0);
        // Culled modes remember last frame's visible batches: a second frame shows the steady state.
        let _ = render(&mut single, &frame);
        let _ = render(&mut multi, &frame);
        let (a, da) = render(&mut single, &frame);
        let (b, db) = render(&mut multi, &frame);
        let depth_diff = da.iter().zip(&db).filter(|(x, y)| x != y).count();
        let colour_diff = a.iter().zip(&b).filter(|(x, y)| x != y).count();
        let covered = da.iter().filter(|&&d| d < 0x3f80_0000).count();
        println!("lod pose {k}: {covered} px covered, {depth_diff} depths and {colour_diff} colours differ");
        assert_eq!(depth_diff, 0, "pose {k}: depths differ");
        // A colour may differ only at a tie: two points of the cloud at that pixel and exactly its depth
        // (each share breaks ties by its own pool indices), and the colour drawn is one of theirs.
        let f = frame.uniforms();
        let mut tied: HashMap<usize, Vec<u32>> = HashMap::new();
        for p in &resident {
            if let Some(q) = project(&f, p.pos) {
                let i = q.index(W);
                if q.depth_bits == da[i] && a[i] != b[i] {
                    tied.entry(i).or_default().push(p.color_word());
                }
            }
        }
        let untied = (0..a.len())
            .filter(|&i| a[i] != b[i] && !tied.get(&i).is_some_and(|c| c.len() >= 2 && c.contains(&b[i])))
            .count();
        println!("lod pose {k}: {} of the differing colours are checked ties", colour_diff - untied);
        assert_eq!(untied, 0, "pose {k}: {untied} colours differ where no two points tie");
        assert_eq!(multi.num_points(), sb.drawn_points, "pose {k}: the shares draw the scene's points");
        compared += (covered > 1000) as usize;
    }
    assert!(compared >= 3, "only {compared} poses showed points");
}
