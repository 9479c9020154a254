//! Level of detail on the CPU backend: a streamed scene under a tiny budget draws, once the view is
//! complete, exactly what the whole cloud resident draws; refining never opens holes; tiles with one
//! common origin join one scene.
use glam::{DVec3, Vec3};
use pcv_camera::{Camera, Pose};
use pcv_io::octree::NodeSource;
use pcv_io::{scene, Point, PointCloud};
use pcv_lod::memory::MemorySource;
use pcv_lod::{LodOptions, LodScene};
use pcv_render::cpu::CpuRasterizer;
use pcv_render::{FrameParams, Rasterizer, RenderMode, Target};
use std::sync::Arc;

mod common;
use common::recentred;

const W: u32 = 320;
const H: u32 = 240;

fn opts(budget: u64) -> LodOptions {
    // Finest level everywhere in view (never stop refining), unlimited upload slices.
    LodOptions { point_budget: budget, target_spacing_px: 0.0, upload_ms_per_frame: 1e9, threads: 2 }
}

/// Updates until the view is complete (or a limit of updates), rendering each frame; returns the
/// frames' images.
fn refine(lod: &mut LodScene, r: &mut dyn Rasterizer, frame: &FrameParams, eye: Vec3) -> Vec<Vec<u32>> {
    let mut images = Vec::new();
    for _ in 0..2000 {
        let st = lod.update(r, frame, eye).unwrap().clone();
        assert!(st.drawn_points <= lod.options().point_budget, "{st:?}");
        let mut px = vec![0u32; frame.num_pixels()];
        r.render(frame, Target::Host(&mut px)).unwrap();
        images.push(px);
        if st.complete && st.loading == 0 {
            return images;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("the view never completed: {:?}", lod.status());
}

fn depth_and_colors(r: &mut CpuRasterizer, frame: &FrameParams) -> (Vec<u32>, Vec<u32>) {
    let mut px = vec![0u32; frame.num_pixels()];
    r.render(frame, Target::Host(&mut px)).unwrap();
    (r.depth_bits(), px)
}

#[test]
fn eviction_under_a_tiny_budget_draws_the_resident_image() {
    let cloud = scene::generate(300_000, 11, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000));
    let whole_slots: u64 = src.octree().nodes.iter().map(|n| pcv_lod::select::slots_for(n.point_count)).sum();
    let budget = 110_000;
    let mut lod = LodScene::open(vec![src.clone() as Arc<dyn NodeSource>], opts(budget)).unwrap();
    assert!(
        (lod.slots() as u64) < whole_slots * 2 / 3,
        "the pool ({} slots) cannot hold the cloud ({whole_slots})",
        lod.slots()
    );
    let resident_pts = recentred(&cloud.points, cloud.origin, lod.origin());
    let resident_cloud = PointCloud::from_points(resident_pts, lod.origin(), "resident");
    let mut resident = CpuRasterizer::new();
    resident.upload(&resident_cloud).unwrap();
    let mut r = CpuRasterizer::new();
    let mut cam = Camera::for_cloud(lod.bounds(), false);
    let mut compared = 0;
    for k in 0..8 {
        let yaw = k as f32 * 0.8;
        let dir = Vec3::new(yaw.cos(), yaw.sin(), -0.2);
        let eye = lod.bounds().center() - dir * lod.bounds().radius() * 0.1;
        cam.pose = Pose { eye, yaw_rad: yaw, pitch_rad: -0.2 };
        let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
        refine(&mut lod, &mut r, &frame, eye);
        println!("pose {k}: {:?}", lod.status());
        if lod.status().budget_hit {
            continue;
        }
        compared += 1;
        let (want_depth, want_px) = depth_and_colors(&mut resident, &frame.with_mode(RenderMode::Vis));
        let (got_depth, got_px) = depth_and_colors(&mut r, &frame);
        assert_eq!(got_depth, want_depth, "pose {k}: depth differs from the resident cloud's");
        // Colours may differ only where two points share the pixel's depth exactly (either may win):
        // the colour drawn must be that of a point at that pixel and depth.
        let f = frame.uniforms();
        let mut tied: std::collections::HashMap<usize, Vec<u32>> = Default::default();
        for p in resident_cloud.points.iter() {
            if let Some(q) = pcv_render::twins::project::project(&f, p.pos) {
                let i = q.index(W);
                if q.depth_bits == want_depth[i] {
                    tied.entry(i).or_default().push(p.color_word());
                }
            }
        }
        let differ: Vec<usize> = (0..got_px.len()).filter(|&i| got_px[i] != want_px[i]).collect();
        for &i in &differ {
            let at = tied.get(&i).cloned().unwrap_or_default();
            assert!(
                at.len() >= 2 && at.contains(&got_px[i]),
                "pose {k}: pixel {i} differs without a depth tie ({at:?})"
            );
        }
        assert!(want_px.iter().filter(|&&c| c != want_px[0]).count() > 500, "pose {k} shows points");
    }
    let st = lod.status().clone();
    println!("compared {compared} poses; {st:?}");
    assert!(compared >= 3, "only {compared} poses fit the budget");
    assert!(st.evictions > 0, "the tiny pool evicted nothing: {st:?}");
    assert!(lod.errors().is_empty());
}

#[test]
fn refining_opens_no_holes_and_starts_coarse() {
    let cloud = scene::generate(200_000, 3, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000));
    let mut lod =
        LodScene::open(vec![src as Arc<dyn NodeSource>], LodOptions { upload_ms_per_frame: 0.0, ..opts(150_000) })
            .unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    let images = refine(&mut lod, &mut r, &frame, cam.pose.eye);
    let background = images[0][0];
    let covered = |img: &Vec<u32>| img.iter().map(|&c| c != background).collect::<Vec<bool>>();
    let mut frames_with_points = 0;
    for pair in images.windows(2) {
        let (a, b) = (covered(&pair[0]), covered(&pair[1]));
        let lost = a.iter().zip(&b).filter(|(x, y)| **x && !**y).count();
        assert_eq!(lost, 0, "a pixel drawn in one frame is empty in the next");
        frames_with_points += a.iter().any(|&x| x) as usize;
    }
    assert!(images.len() >= 3, "one node a frame: several frames to refine ({})", images.len());
    let first = images.iter().position(|i| covered(i).iter().any(|&x| x)).unwrap();
    let n = |i: usize| covered(&images[i]).iter().filter(|&&x| x).count();
    assert!(n(first) < n(images.len() - 1), "the first frame with points is coarser than the complete one");
    assert!(frames_with_points >= 2);
}

#[test]
fn tiles_share_one_origin_and_one_selection() {
    let cloud = scene::generate(150_000, 5, false);
    let cx = cloud.bounds.center().x;
    let (a, b): (Vec<Point>, Vec<Point>) = cloud.points.iter().partition(|p| p.pos[0] < cx);
    // Tiles in far-away coordinates, as projected lidar tiles are.
    let far = DVec3::new(500_000.0, 4_000_000.0, 0.0);
    let (ta, tb) = (recentred(&a, far, far), recentred(&b, far, far));
    let sa = Arc::new(MemorySource::build_points(&ta, far, "west", 2_000)) as Arc<dyn NodeSource>;
    let sb = Arc::new(MemorySource::build_points(&tb, far, "east", 2_000)) as Arc<dyn NodeSource>;
    let mut lod = LodScene::open(vec![sa, sb], opts(1_000_000)).unwrap();
    assert_eq!(lod.tiles(), 2);
    // The window's tile list and boxes: names, points and bounds at once, nothing drawn yet.
    let before = lod.tile_states();
    assert_eq!(
        before.iter().map(|t| (t.name.as_str(), t.points)).collect::<Vec<_>>(),
        [("west (octree in memory)", a.len() as u64), ("east (octree in memory)", b.len() as u64)]
    );
    assert!(before.iter().all(|t| t.drawn_points == 0 && t.selected_points == 0 && t.failed_nodes == 0));
    for (t, pts) in before.iter().zip([&a, &b]) {
        let bounds = pcv_io::Bounds::of_points(pts);
        let (lo, hi) = (far + cloud.origin + bounds.min.as_dvec3(), far + cloud.origin + bounds.max.as_dvec3());
        assert!(
            (t.min - lo).abs().max_element() < 1e-3 && (t.max - hi).abs().max_element() < 1e-3,
            "{t:?} vs {lo} {hi}"
        );
    }
    assert!(before[0].max.x <= before[1].min.x + 1e-3, "west lies west of east");
    assert!((lod.origin() - far - cloud.bounds.center().as_dvec3()).abs().max_element() < 1.0, "{}", lod.origin());
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    refine(&mut lod, &mut r, &frame, cam.pose.eye);
    assert!(!lod.status().budget_hit);
    let tiles: std::collections::HashSet<u32> = lod.selection().nodes.iter().map(|s| s.id.tile).collect();
    assert_eq!(tiles.len(), 2, "both tiles are in the one selection");
    assert_eq!(lod.status().drawn_points, 150_000, "every point of both tiles is drawn");
    for t in lod.tile_states() {
        assert_eq!((t.selected_points, t.drawn_points), (t.points, t.points), "{t:?}: the tile is drawn whole");
    }
    let all: Vec<Point> = ta.iter().chain(&tb).copied().collect();
    let mut resident = CpuRasterizer::new();
    resident.upload(&PointCloud::from_points(recentred(&all, far, lod.origin()), lod.origin(), "both")).unwrap();
    let (want_depth, _) = depth_and_colors(&mut resident, &frame.with_mode(RenderMode::Vis));
    let (got_depth, _) = depth_and_colors(&mut r, &frame);
    assert_eq!(got_depth, want_depth);
    // Filtered (a box over the middle), the complete view still reads as whole for each tile: the
    // shares count the nodes' own points, not the points the filter keeps.
    let (c, half) =
        (lod.origin() + lod.bounds().center().as_dvec3(), (lod.bounds().max - lod.bounds().min).as_dvec3() * 0.2);
    let clip = pcv_io::filter::ClipBox::from_min_max(c - half, c + half, pcv_io::filter::Keep::Inside);
    lod.set_filter(&pcv_io::filter::PointFilter { boxes: vec![clip], ..Default::default() }).unwrap();
    refine(&mut lod, &mut r, &frame, cam.pose.eye);
    assert!(lod.status().drawn_points < 150_000, "{:?}", lod.status());
    for t in lod.tile_states() {
        assert_eq!(t.drawn_points, t.selected_points, "{t:?}: filtered, complete");
    }
}

#[test]
fn a_budget_below_the_root_is_refused_and_other_modes_draw_culled() {
    let cloud = scene::generate(50_000, 2, false);
    let src = Arc::new(MemorySource::build(&cloud, 10_000)) as Arc<dyn NodeSource>;
    let e = LodScene::open(vec![src.clone()], opts(10)).err().unwrap().to_string();
    assert!(e.contains("too small") && e.contains("octree in memory"), "{e}");
    assert_eq!(LodScene::mode_for(RenderMode::Vis), RenderMode::Culled);
    assert_eq!(LodScene::mode_for(RenderMode::Quant), RenderMode::Quant);
    let mut lod = LodScene::open(vec![src], opts(50_000)).unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Vis);
    lod.update(&mut r, &frame, cam.pose.eye).unwrap();
    let mut px = vec![0u32; frame.num_pixels()];
    let err = r.render(&frame, Target::Host(&mut px)).unwrap_err().to_string();
    assert!(err.contains("culled or quant"), "{err}");
}

fn pcv_cli(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pcv")).args(args).env_remove("DISPLAY").output().expect("run pcv")
}

/// Writes a tile of a wavy surface as x y z text, `n × n` points from (x0, y0), in far-away coordinates.
fn write_tile(path: &std::path::Path, x0: f64, y0: f64, n: usize) {
    let mut s = String::new();
    for i in 0..n {
        for j in 0..n {
            let (x, y) = (x0 + i as f64 * 0.25, y0 + j as f64 * 0.25);
            s.push_str(&format!("{x:.3} {y:.3} {:.3}\n", 120.0 + (x * 0.1).sin() * 3.0 + (y * 0.07).cos() * 2.0));
        }
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn a_directory_of_files_is_one_streamed_scene_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = dir.path().join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    write_tile(&tiles.join("a.xyz"), 500_000.0, 4_000_000.0, 300);
    write_tile(&tiles.join("b.xyz"), 500_075.0, 4_000_000.0, 300);
    std::fs::write(tiles.join("notes.md"), "not a point file").unwrap();
    let png = dir.path().join("lod.png");
    let out = pcv_cli(&[
        "render",
        "--backend",
        "cpu",
        "--point-budget",
        "100k",
        "--size",
        "200x150",
        "-o",
        png.to_str().unwrap(),
        tiles.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("180000 points in 2 tile(s), budget 100000 points (--point-budget)"), "{err}");
    assert!(err.contains("selected nodes drawn"), "{err}");
    let img = pcv_render::image_io::Frame::read_png(&png).unwrap();
    let bg = img.pixels[0];
    assert!(img.pixels.iter().filter(|&&c| c != bg).count() > 2000, "the tiles show");
    // An empty directory is an error naming it.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = pcv_cli(&["render", "--backend", "cpu", "--lod", "-o", png.to_str().unwrap(), empty.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no point files in this folder") && err.contains("empty"), "{err}");
}

#[test]
fn record_measure_reports_a_streamed_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("path.json");
    std::fs::write(
        &path,
        r#"{"frame": "file", "keyframes": [{"t": 0, "camera": "-3,0,0,0,0"}, {"t": 0.5, "camera": "-1,0,0.1,10,-5"}]}"#,
    )
    .unwrap();
    let json = dir.path().join("m.json");
    let out_dir = dir.path().join("frames");
    let out = pcv_cli(&[
        "record",
        "--backend",
        "cpu",
        "--lod",
        "--points",
        "300k",
        "--point-budget",
        "100k",
        "--size",
        "160x90",
        "--path",
        path.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "--measure",
        json.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["streamed"], true);
    assert_eq!(v["point_budget"], 100_000);
    assert_eq!(v["scene_points"], 300_000);
    assert!(v["flight"]["frames"].as_u64().unwrap() >= 1);
    assert!(v["first_frame_ms"].as_f64().unwrap() > 0.0);
    assert!(v["mean_drawn_points"].as_f64().unwrap() <= 100_000.0);
    assert!(v["complete_after_stop_ms"].is_number(), "{v}");
    assert!(out_dir.join("refining.png").exists() && out_dir.join("complete.png").exists());
    // Without --measure, a streamed scene cannot be recorded as PNG frames: a clear error.
    let out = pcv_cli(&[
        "record",
        "--backend",
        "cpu",
        "--lod",
        "--points",
        "10k",
        "--path",
        path.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--measure"));
}

#[test]
fn copc_tiles_stream_through_the_same_scene() {
    let dir = tempfile::tempdir().unwrap();
    let (xyz_a, xyz_b) = (dir.path().join("a.xyz"), dir.path().join("b.xyz"));
    write_tile(&xyz_a, 500_000.0, 4_000_000.0, 250);
    write_tile(&xyz_b, 500_062.5, 4_000_000.0, 250);
    let mut sources: Vec<Arc<dyn NodeSource>> = Vec::new();
    for (xyz, name) in [(&xyz_a, "a.copc.laz"), (&xyz_b, "b.copc.laz")] {
        let copc = dir.path().join(name);
        let out = pcv_cli(&["convert", xyz.to_str().unwrap(), "-o", copc.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        sources.push(pcv_io::formats::copc::open(copc.to_str().unwrap()).unwrap());
    }
    let mut lod = LodScene::open(sources, opts(1_000_000)).unwrap();
    assert_eq!(lod.total_points(), 125_000);
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    let images = refine(&mut lod, &mut r, &frame, cam.pose.eye);
    assert_eq!(lod.status().drawn_points, 125_000, "{:?}", lod.status());
    assert!(lod.errors().is_empty(), "{:?}", lod.errors());
    // The same files loaded whole, as plain LAZ, and drawn resident: the same pixels covered.
    let cloud = pcv_io::load::load_files(&[dir.path().join("a.copc.laz"), dir.path().join("b.copc.laz")]).unwrap();
    let pts = recentred(&cloud.points, cloud.origin, lod.origin());
    let mut resident = CpuRasterizer::new();
    resident.upload(&PointCloud::from_points(pts, lod.origin(), "resident")).unwrap();
    let (want_depth, _) = depth_and_colors(&mut resident, &frame.with_mode(RenderMode::Vis));
    let got = images.last().unwrap();
    let far = want_depth[0];
    let covered_want = want_depth.iter().filter(|&&d| d != far).count();
    let covered_got = r.depth_bits().iter().filter(|&&d| d != far).count();
    assert!(covered_want > 5000, "{covered_want}");
    assert!(covered_want < want_depth.len(), "the corner pixel is background");
    let diff = covered_want.abs_diff(covered_got);
    assert!(diff * 100 <= covered_want, "streamed covers {covered_got} pixels, resident {covered_want}");
    assert_eq!(got.len(), frame.num_pixels());
}

/// A run of a pool write kept until it lands: first slot, positions, colours, words.
type Run = (u32, Vec<[f32; 3]>, Vec<u32>, Vec<u32>);

/// A rasterizer whose pool writes land only when the test completes them, one at a time, as CUDA's
/// copy stream may finish them frames later; it records every batch table that would draw a slot
/// whose write is not complete (or that names a fence below a slot's write).
struct DeferredCopies {
    inner: CpuRasterizer,
    /// Writes made and not landed: fence, and its runs.
    pending: std::collections::VecDeque<(u64, Vec<Run>)>,
    next_fence: u64,
    done_fence: u64,
    /// The fence of the write that filled each slot (0: never written).
    slot_fence: Vec<u64>,
    violations: Vec<String>,
}

impl DeferredCopies {
    fn new() -> DeferredCopies {
        DeferredCopies {
            inner: CpuRasterizer::new(),
            pending: Default::default(),
            next_fence: 0,
            done_fence: 0,
            slot_fence: Vec::new(),
            violations: Vec::new(),
        }
    }

    /// Lands the oldest pending write.
    fn complete_one(&mut self) {
        if let Some((fence, runs)) = self.pending.pop_front() {
            for (first_slot, positions, colors, quant) in &runs {
                let w = pcv_render::SlotWrite { first_slot: *first_slot, positions, colors, quant };
                assert_eq!(self.inner.write_slots(&[w]).unwrap(), 0, "the CPU backend copies before returning");
            }
            self.done_fence = fence;
        }
    }
}

impl Rasterizer for DeferredCopies {
    fn name(&self) -> &'static str {
        "deferred"
    }
    fn description(&self) -> String {
        "the CPU backend with pool writes that land later".into()
    }
    fn upload(&mut self, cloud: &PointCloud) -> Result<(), pcv_render::RenderError> {
        self.inner.upload(cloud)
    }
    fn render(
        &mut self,
        frame: &FrameParams,
        target: Target<'_>,
    ) -> Result<pcv_render::FrameStats, pcv_render::RenderError> {
        self.inner.render(frame, target)
    }
    fn num_points(&self) -> u64 {
        self.inner.num_points()
    }
    fn reserve_slots(&mut self, slots: u32) -> Result<(), pcv_render::RenderError> {
        self.slot_fence = vec![0; slots as usize];
        self.pending.clear();
        self.inner.reserve_slots(slots)
    }
    fn write_slots(&mut self, writes: &[pcv_render::SlotWrite<'_>]) -> Result<u64, pcv_render::RenderError> {
        self.next_fence += 1;
        let mut runs = Vec::new();
        for w in writes {
            pcv_render::check_slot_write(w, self.slot_fence.len() as u32)?;
            for s in w.first_slot..w.first_slot + w.num_slots() {
                self.slot_fence[s as usize] = self.next_fence;
            }
            runs.push((w.first_slot, w.positions.to_vec(), w.colors.to_vec(), w.quant.to_vec()));
        }
        self.pending.push_back((self.next_fence, runs));
        Ok(self.next_fence)
    }
    fn slot_writes_done(&mut self) -> Result<u64, pcv_render::RenderError> {
        Ok(self.done_fence)
    }
    fn set_slot_batches(
        &mut self,
        batches: &[pcv_render::gpu_data::Batch],
        after_write: u64,
    ) -> Result<(), pcv_render::RenderError> {
        for (s, _) in batches.iter().enumerate().filter(|(_, b)| b.num_points > 0) {
            let f = self.slot_fence[s];
            if f == 0 || f > self.done_fence || f > after_write {
                self.violations.push(format!(
                    "slot {s} drawn: its write {f}, complete {}, table after {after_write}",
                    self.done_fence
                ));
            }
        }
        self.inner.set_slot_batches(batches, after_write)
    }
    fn set_slot_spacing(&mut self, spacing_m: &[f32]) -> Result<(), pcv_render::RenderError> {
        self.inner.set_slot_spacing(spacing_m)
    }
}

#[test]
fn a_slot_is_never_drawn_before_its_copy_is_done() {
    let cloud = scene::generate(150_000, 5, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000));
    let mut lod = LodScene::open(vec![src.clone() as Arc<dyn NodeSource>], opts(150_000)).unwrap();
    let mut r = DeferredCopies::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    let (mut frames_in_transit, mut finished) = (0, false);
    for _ in 0..4000 {
        let st = lod.update(&mut r, &frame, cam.pose.eye).unwrap().clone();
        let mut px = vec![0u32; frame.num_pixels()];
        r.render(&frame, Target::Host(&mut px)).unwrap();
        if st.in_transit > 0 {
            frames_in_transit += 1;
            assert!(!(st.complete && st.loading == 0), "a view with copies running is not complete: {st:?}");
        }
        if st.complete && st.loading == 0 {
            finished = true;
            break;
        }
        // One copy lands a frame, after the frame was drawn.
        r.complete_one();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(finished, "the view never completed: {:?}", lod.status());
    assert!(
        r.violations.is_empty(),
        "{} tables drew slots before their copies: {:?}",
        r.violations.len(),
        &r.violations[..r.violations.len().min(5)]
    );
    assert!(frames_in_transit > 0, "no frame saw a copy running: the test proves nothing");
    // The complete view equals the same scene streamed with copies that land at once.
    let mut direct = CpuRasterizer::new();
    let mut lod2 = LodScene::open(vec![src as Arc<dyn NodeSource>], opts(150_000)).unwrap();
    refine(&mut lod2, &mut direct, &frame, cam.pose.eye);
    assert_eq!(lod.status().drawn_points, lod2.status().drawn_points);
    let (want_depth, _) = depth_and_colors(&mut direct, &frame);
    let mut px = vec![0u32; frame.num_pixels()];
    r.inner.render(&frame, Target::Host(&mut px)).unwrap();
    assert_eq!(r.inner.depth_bits(), want_depth, "the deferred copies' complete view differs");
}

#[test]
fn coarse_nodes_get_the_larger_point_size() {
    // A camera close to one side: the near side refines, the far side stays coarse.
    let cloud = scene::generate(200_000, 4, false);
    let src = Arc::new(MemorySource::build(&cloud, 2_000));
    let mut lod = LodScene::open(
        vec![src.clone() as Arc<dyn NodeSource>],
        LodOptions { target_spacing_px: 2.0, ..opts(200_000) },
    )
    .unwrap();
    let mut r = CpuRasterizer::new();
    let mut cam = Camera::for_cloud(lod.bounds(), false);
    let b = lod.bounds();
    let eye = Vec3::new(b.min.x + 0.05 * (b.max.x - b.min.x), b.center().y, b.center().z);
    cam.pose = Pose { eye, yaw_rad: 0.0, pitch_rad: 0.0 };
    let look = pcv_render::look::Look {
        point_size: pcv_render::look::PointSize::Adaptive { max_px: 16 },
        ..pcv_render::look::Look::PLAIN
    };
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled).with_look(look);
    refine(&mut lod, &mut r, &frame, eye);
    let drawn: Vec<f32> = lod.slot_spacing().iter().copied().filter(|&s| s > 0.0).collect();
    let (lo, hi) = drawn.iter().fold((f32::MAX, 0f32), |(a, b), &s| (a.min(s), b.max(s)));
    let root = src.octree().spacing_at_m(0) as f32;
    println!("{} slots drawn, spacing {lo} .. {hi} m (root {root} m); {:?}", drawn.len(), lod.status());
    assert!(hi >= lo * 3.9, "coarse and fine slots differ by at least two levels: {lo} .. {hi}");
    assert!(hi <= root && lo > 0.0);
    // The finest drawn leaves' weighted spacing (the frame-wide one) lies between them.
    assert!(lod.status().spacing_m >= lo && lod.status().spacing_m <= hi);
    // Per-slot sizes close more of the frame than the frame-wide spacing applied to every point (the
    // coarse far side grows), and never less than 1-pixel points.
    let mut per_slot = vec![0u32; frame.num_pixels()];
    r.render(&frame, Target::Host(&mut per_slot)).unwrap();
    let bg = frame.uniforms().clear_color;
    assert_eq!(bg, frame.uniforms().clear_color_last_row, "a solid background");
    let covered = |px: &[u32]| px.iter().filter(|&&c| c != bg).count();
    let mut ones = vec![0u32; frame.num_pixels()];
    r.render(&frame.with_look(pcv_render::look::Look::PLAIN), Target::Host(&mut ones)).unwrap();
    println!("covered: {} px per slot, {} px at 1 px", covered(&per_slot), covered(&ones));
    assert!(covered(&per_slot) > covered(&ones));
}

/// `copc` with its one hierarchy page split as other writers page it: a root page holding the root's
/// entry and, for each node of depth 1, a pointer (count -1) to a child page with that node's subtree,
/// the child pages appended at the end of the file and the info VLR's root page size patched.
fn paged(copc: &[u8], page: usize, size: usize) -> Vec<u8> {
    use pcv_io::formats::copc::hierarchy::{entry_bytes, ENTRY_LEN};
    use pcv_io::octree::NodeKey;
    let i32at = |b: &[u8], o: usize| i32::from_le_bytes(std::array::from_fn(|k| b[o + k]));
    let entries: Vec<(NodeKey, u64, i32, i32)> = copc[page..page + size]
        .chunks_exact(ENTRY_LEN)
        .map(|e| {
            let key = NodeKey::new(i32at(e, 0) as u32, i32at(e, 4) as u32, i32at(e, 8) as u32, i32at(e, 12) as u32);
            (key, u64::from_le_bytes(std::array::from_fn(|k| e[16 + k])), i32at(e, 24), i32at(e, 28))
        })
        .collect();
    let under = |k: &NodeKey, a: &NodeKey| {
        k.depth >= a.depth
            && (k.x >> (k.depth - a.depth), k.y >> (k.depth - a.depth), k.z >> (k.depth - a.depth)) == (a.x, a.y, a.z)
    };
    let mut out = copc.to_vec();
    let mut root_page = Vec::new();
    for (key, off, bytes, count) in &entries {
        if key.depth == 0 {
            root_page.extend_from_slice(&entry_bytes(*key, *off, *bytes, *count));
        } else if key.depth == 1 {
            let child: Vec<u8> = entries
                .iter()
                .filter(|(k, ..)| under(k, key))
                .flat_map(|(k, o, b, c)| entry_bytes(*k, *o, *b, *c))
                .collect();
            root_page.extend_from_slice(&entry_bytes(*key, out.len() as u64, child.len() as i32, -1));
            out.extend_from_slice(&child);
        }
    }
    assert!(
        root_page.len() < size,
        "a smaller root page: {} of {size} bytes, depths {:?}",
        root_page.len(),
        entries.iter().map(|e| e.0.depth).collect::<Vec<_>>()
    );
    out[page..page + root_page.len()].copy_from_slice(&root_page);
    // The info VLR holds the root page's offset then its size (u64 each): patch the size.
    let mut pattern = (page as u64).to_le_bytes().to_vec();
    pattern.extend_from_slice(&(size as u64).to_le_bytes());
    let at = out.windows(16).position(|w| w == pattern).expect("the info VLR's root page fields") + 8;
    out[at..at + 8].copy_from_slice(&(root_page.len() as u64).to_le_bytes());
    out
}

#[test]
fn a_hierarchy_in_child_pages_streams_like_one_page() {
    use pcv_io::formats::copc::CopcFile;
    let dir = tempfile::tempdir().unwrap();
    let (xyz, copc) = (dir.path().join("t.xyz"), dir.path().join("t.copc.laz"));
    write_tile(&xyz, 500_000.0, 4_000_000.0, 1100);
    let out = pcv_cli(&["convert", xyz.to_str().unwrap(), "-o", copc.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let one = std::fs::read(&copc).unwrap();
    let single = CopcFile::from_bytes("one.copc.laz", one.clone()).unwrap();
    let (page, size) = (single.info().root_hier_offset as usize, single.info().root_hier_size as usize);
    let two = paged(&one, page, size);
    let multi = CopcFile::from_bytes("paged.copc.laz", two).unwrap();
    assert!((multi.info().root_hier_size as usize) < size, "the root page holds pointers now");
    let nodes = |f: &CopcFile| {
        let mut v: Vec<_> = f
            .octree()
            .nodes
            .iter()
            .map(|n| (n.key.depth, n.key.x, n.key.y, n.key.z, n.point_count, n.byte_offset, n.byte_size))
            .collect();
        v.sort_unstable();
        v
    };
    assert!(single.octree().nodes.iter().any(|n| n.key.depth >= 2), "a hierarchy deeper than the pages");
    assert_eq!(nodes(&multi), nodes(&single), "the paged hierarchy lists the same nodes");
    // Streamed, both draw the same complete view.
    let mut depths = Vec::new();
    for f in [single, multi] {
        let mut lod = LodScene::open(vec![Arc::new(f) as Arc<dyn NodeSource>], opts(2_000_000)).unwrap();
        let mut r = CpuRasterizer::new();
        let cam = Camera::for_cloud(lod.bounds(), false);
        let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
        refine(&mut lod, &mut r, &frame, cam.pose.eye);
        assert_eq!(lod.status().drawn_points, 1_210_000, "{:?}", lod.status());
        depths.push(r.depth_bits());
    }
    assert_eq!(depths[0], depths[1]);
}

/// A node source whose nodes at `bad_depth` fail to read, as a damaged COPC node does.
struct Failing {
    inner: Arc<MemorySource>,
    bad_depth: u32,
}

impl NodeSource for Failing {
    fn name(&self) -> String {
        "damaged.copc.laz".into()
    }
    fn octree(&self) -> &pcv_io::octree::Octree {
        self.inner.octree()
    }
    fn read_node(
        &self,
        node: &pcv_io::octree::OctreeNode,
        origin: DVec3,
        fields: pcv_io::formats::FieldSet,
    ) -> Result<pcv_io::octree::NodePoints, pcv_io::octree::NodeError> {
        if node.key.depth == self.bad_depth {
            return Err(pcv_io::octree::NodeError::Read {
                source_name: self.name(),
                key: node.key,
                byte_offset: node.byte_offset,
                byte_size: node.byte_size,
                what: "LAZ chunk: unexpected end of data".into(),
            });
        }
        self.inner.read_node(node, origin, fields)
    }
}

#[test]
fn a_view_with_nodes_that_fail_completes_without_them_and_says_which() {
    let cloud = scene::generate(200_000, 3, false);
    let inner = Arc::new(MemorySource::build(&cloud, 3_000));
    assert!(inner.octree().max_depth() >= 2, "the test needs nodes under the failing level");
    let src = Arc::new(Failing { inner, bad_depth: 1 });
    let mut lod = LodScene::open(vec![src as Arc<dyn NodeSource>], opts(150_000)).unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    // Completes (refine panics after 2000 updates otherwise): the failed nodes count as done and are
    // left out; the nodes under them are drawn (a damaged node hides its own points, not a whole branch).
    let images = refine(&mut lod, &mut r, &frame, cam.pose.eye);
    let st = lod.status().clone();
    assert!(st.missing_nodes >= 1 && st.missing_nodes <= 8, "the depth-1 nodes: {st:?}");
    assert_eq!(st.drawn_nodes + st.missing_nodes, st.selected_nodes, "{st:?}");
    assert!(st.drawn_nodes > 1 + st.missing_nodes, "the nodes under the failed ones are drawn: {st:?}");
    assert!(images.last().unwrap().iter().any(|&c| c != images.last().unwrap()[0]), "the root is drawn");
    let errors = lod.errors();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|e| e.contains("damaged.copc.laz") && e.contains("at byte")), "{errors:?}");
    // The window's tile list shows the tile's failed nodes (red there, and its box).
    let tiles = lod.tile_states();
    assert_eq!(tiles.len(), 1);
    assert_eq!(tiles[0].failed_nodes, lod.failed_nodes(), "{:?}", tiles[0]);
    assert!(tiles[0].failed_nodes >= 1 && tiles[0].drawn_points < tiles[0].selected_points, "{:?}", tiles[0]);
}

#[test]
fn a_picked_position_is_found_again_in_its_drawn_node() {
    let cloud = scene::generate(50_000, 5, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000));
    let mut lod = LodScene::open(vec![src as Arc<dyn NodeSource>], opts(150_000)).unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    refine(&mut lod, &mut r, &frame, cam.pose.eye);
    // A point the rasterizer drew, picked at the image's centre.
    let hit = r.pick(W / 2, H / 2, 8).unwrap().expect("a point at the centre");
    let found = lod.point_at(hit.position).expect("the picked point is in a drawn node");
    assert_eq!(found.local, hit.position, "{found:?}");
    assert!(found.source.contains("octree in memory"), "{found:?}");
    assert!(lod.bounds().min.cmple(found.local).all() && lod.bounds().max.cmpge(found.local).all());
    // Far outside every node: nothing.
    assert_eq!(lod.point_at(lod.bounds().max + Vec3::splat(1000.0)), None);
}

/// A clip box set on a streamed scene: the nodes load again, each keeping what the box keeps, and the
/// complete view draws the depth of the resident cloud filtered on the host; a filter the nodes cannot
/// apply (returns: the octree built in memory holds none) is refused.
#[test]
fn a_clip_box_on_a_streamed_scene_draws_what_the_host_filter_keeps() {
    use pcv_io::filter::{ClipBox, Keep, PointFilter, Returns};
    let cloud = scene::generate(200_000, 5, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000));
    let mut lod = LodScene::open(vec![src as Arc<dyn NodeSource>], opts(1_000_000)).unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = pcv_render::FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    refine(&mut lod, &mut r, &frame, cam.pose.eye);
    let whole = lod.status().drawn_points;
    // Keep the half of the cloud with x below its centre (file coordinates).
    let b = lod.bounds();
    let (lo, hi) = (lod.origin() + b.min.as_dvec3(), lod.origin() + b.max.as_dvec3());
    let mid = (lo.x + hi.x) * 0.5;
    let clip = ClipBox::from_min_max(lo - 1.0, DVec3::new(mid, hi.y + 1.0, hi.z + 1.0), Keep::Inside);
    let filter = PointFilter { boxes: vec![clip], ..Default::default() };
    lod.set_filter(&filter).unwrap();
    refine(&mut lod, &mut r, &frame, cam.pose.eye);
    let kept = lod.status().drawn_points;
    assert!(kept > whole / 5 && kept < whole * 4 / 5, "kept {kept} of {whole}");
    // The resident cloud, filtered on the host, drawn whole.
    let resident_pts = recentred(&cloud.points, cloud.origin, lod.origin());
    let resident_cloud = PointCloud::from_points(resident_pts, lod.origin(), "resident");
    let (shown, k) = pcv_io::filter::shown(&resident_cloud, &filter);
    assert_eq!(k.points, kept, "the nodes keep what the host filter keeps");
    let mut resident = CpuRasterizer::new();
    resident.upload(&shown).unwrap();
    let (want, _) = depth_and_colors(&mut resident, &frame.with_mode(RenderMode::Vis));
    let (got, _) = depth_and_colors(&mut r, &frame);
    assert_eq!(got, want, "the streamed scene's depth is the filtered cloud's");
    // The octree built in memory holds no returns: refused, the filter kept.
    let returns = PointFilter { returns: Returns::First, ..Default::default() };
    assert!(lod.set_filter(&returns).unwrap_err().contains("first"));
    assert_eq!(*lod.filter(), filter);
}

/// Updates and renders until the view is complete under the scene's colour and filter, checking each
/// frame with `each(depth, colours, status)`; returns how many frames it took.
fn refine_checking(
    lod: &mut LodScene,
    r: &mut CpuRasterizer,
    frame: &FrameParams,
    eye: Vec3,
    mut each: impl FnMut(&[u32], &[u32], &pcv_lod::LodStatus),
) -> usize {
    for n in 1..5000 {
        let st = lod.update(r, frame, eye).unwrap().clone();
        let (depth, px) = depth_and_colors(r, frame);
        each(&depth, &px, &st);
        if st.complete && st.loading == 0 && st.in_transit == 0 {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the view never completed: {:?}", lod.status());
}

/// A colour or filter change reads every node again; until a node's fresh copy is drawn its stale
/// copy stands in, so no frame of the change opens a hole: a new colour keeps the depth of every frame
/// exactly, and under a clip box no pixel of any frame is farther than in the final view. Once complete, the view is the one a
/// scene opened with that colour draws, and no stale node is left.
#[test]
fn a_colour_or_filter_change_never_empties_the_view() {
    use pcv_io::attributes::{ColorMode, FieldLook};
    use pcv_io::filter::{ClipBox, Keep, PointFilter};
    let cloud = scene::generate(200_000, 8, false);
    let src = Arc::new(MemorySource::build(&cloud, 3_000)) as Arc<dyn NodeSource>;
    // One node written per update: the change spans many frames.
    let slow = LodOptions { upload_ms_per_frame: 0.0, ..opts(1_000_000) };
    let mut lod = LodScene::open(vec![src.clone()], slow).unwrap();
    let mut r = CpuRasterizer::new();
    let cam = Camera::for_cloud(lod.bounds(), false);
    let frame = FrameParams::of_camera(&cam, W, H).with_mode(RenderMode::Culled);
    let eye = cam.pose.eye;
    refine_checking(&mut lod, &mut r, &frame, eye, |_, _, _| {});
    let (depth_before, px_before) = depth_and_colors(&mut r, &frame);
    let covered = |d: &[u32]| d.iter().filter(|&&v| v != u32::MAX).count();
    assert!(covered(&depth_before) > 5_000, "the view shows the cloud");
    let differ = |a: &[u32], b: &[u32]| a.iter().zip(b).filter(|(x, y)| x != y).count();

    // A new colour: the same points, so every frame has the same depth.
    assert!(lod.set_color_mode(ColorMode::Elevation, &FieldLook::default()).unwrap());
    let (mut stale_frames, mut mixed) = (0, false);
    let frames = refine_checking(&mut lod, &mut r, &frame, eye, |depth, px, st| {
        assert!(depth == &depth_before[..], "a frame of the colour change differs in depth: {st:?}");
        if st.stale_nodes > 0 {
            stale_frames += 1;
            assert!(!st.complete, "a view drawing stale nodes is not complete: {st:?}");
            mixed |= px.iter().zip(&px_before).any(|(a, b)| a != b);
        }
    });
    assert!(stale_frames >= 3, "the change took {frames} frames, {stale_frames} with stale nodes");
    assert!(mixed, "fresh nodes appeared among the stale ones");
    assert_eq!(lod.status().stale_nodes, 0);
    let (_, px_after) = depth_and_colors(&mut r, &frame);
    let mut fresh_scene = LodScene::open(vec![src], opts(1_000_000)).unwrap();
    fresh_scene.set_color_mode(ColorMode::Elevation, &FieldLook::default()).unwrap();
    let mut r2 = CpuRasterizer::new();
    refine_checking(&mut fresh_scene, &mut r2, &frame, eye, |_, _, _| {});
    let (depth_fresh, px_fresh) = depth_and_colors(&mut r2, &frame);
    assert!(depth_fresh == depth_before, "a scene opened in that colour draws the same depth");
    // Where two points share a pixel's depth exactly, the one in the lower slot wins, and the two scenes
    // placed their nodes in different slots: a few such pixels may differ, no more.
    let ties = differ(&px_after, &px_fresh);
    assert!(ties <= covered(&depth_before) / 1000, "{ties} pixels differ from a scene opened in that colour");
    assert!(differ(&px_after, &px_before) > 1_000, "the colours changed");

    // A clip box keeping the third below x = min + 1/3 of the extent.
    let b = lod.bounds();
    let (lo, hi) = (lod.origin() + b.min.as_dvec3(), lod.origin() + b.max.as_dvec3());
    let mid = lo.x + (hi.x - lo.x) / 3.0;
    let clip = ClipBox::from_min_max(lo - 1.0, DVec3::new(mid, hi.y + 1.0, hi.z + 1.0), Keep::Inside);
    lod.set_filter(&PointFilter { boxes: vec![clip], ..Default::default() }).unwrap();
    let mut seen: Vec<Vec<u32>> = Vec::new();
    refine_checking(&mut lod, &mut r, &frame, eye, |depth, _, _| seen.push(depth.to_vec()));
    let last = seen.last().unwrap().clone();
    assert!(differ(&last, &depth_before) > 5_000, "the box changes the view");
    // Each node is drawn with all its points (stale) or the box's (fresh): every pixel of every frame is
    // at least as near as in the final view, never farther (a hole would be).
    for (k, d) in seen.iter().enumerate() {
        let holes = last.iter().zip(d).filter(|(f, v)| v > f).count();
        assert_eq!(holes, 0, "frame {k} of {} of the filter change opens {holes} pixels", seen.len());
    }
    assert!(seen.len() >= 3, "the filter change took {} frames", seen.len());
}

/// A profile's strip taken from the nodes (the profile window of a level-of-detail scene): with room
/// for every level, exactly the points the host filter keeps of the whole cloud; with a small budget,
/// only the coarser levels (said), every point still inside the strip.
#[test]
fn a_strip_is_gathered_from_the_nodes_under_a_budget() {
    use pcv_io::filter::{ClipBox, Keep, PointFilter};
    let cloud = scene::generate(120_000, 6, false);
    let src = Arc::new(MemorySource::build(&cloud, 2_000)) as Arc<dyn NodeSource>;
    let lod = LodScene::open(vec![src], opts(1_000_000)).unwrap();
    let b = lod.bounds();
    let (lo, hi) = (lod.origin() + b.min.as_dvec3(), lod.origin() + b.max.as_dvec3());
    let c = (lo + hi) * 0.5;
    // A strip 1/10 of the width across y, turned 30° about z (an oriented box, as a profile's).
    let half = DVec3::new((hi.x - lo.x) * 0.05, (hi.y - lo.y) * 0.7, (hi.z - lo.z) + 1.0);
    let strip =
        ClipBox { center: c, half_extent: half, rotation: glam::DQuat::from_rotation_z(0.5), keep: Keep::Inside };
    let filter = PointFilter { boxes: vec![strip], ..Default::default() };
    let resident = PointCloud::from_points(recentred(&cloud.points, cloud.origin, lod.origin()), lod.origin(), "all");
    let (want, kept) = pcv_io::filter::shown(&resident, &filter);
    assert!(kept.points > 1_000 && kept.points < 60_000, "{}", kept.points);
    let (got, truncated) = lod.gather(&filter, u64::MAX);
    assert!(!truncated);
    let key = |p: &Point| p.pos.map(f32::to_bits);
    let mut a: Vec<_> = got.iter().map(key).collect();
    let mut w: Vec<_> = want.points.iter().map(key).collect();
    a.sort_unstable();
    w.sort_unstable();
    assert_eq!(a.len(), w.len(), "the strip's points");
    assert!(a == w, "the same points as the host filter keeps");
    // A budget of a few thousand points: coarser levels only, all inside the strip.
    let (coarse, truncated) = lod.gather(&filter, 5_000);
    assert!(truncated && !coarse.is_empty() && coarse.len() < got.len(), "{} of {}", coarse.len(), got.len());
    assert!(coarse.iter().all(|p| strip.contains(lod.origin() + Vec3::from_array(p.pos).as_dvec3())));
}
