//! One way in: [`open`] turns what a user asked to see into a backend with the points on it and the
//! camera to start from, for every command (`pcv`, `render`, `record`, `bench`) and for Python.
//!
//! How it works, in order:
//! 1. **The backend** ([`BackendOptions`]): CUDA, the CPU or `auto` (CUDA where a driver and a device
//!    exist, else the CPU, saying why), or the multi-GPU backend for `--gpus N` / `--gpu-shares N`.
//! 2. **The source** ([`Source`]): the built-in scene, point files (a folder: every point file in it;
//!    COPC files and `http(s)://` URLs), or a cloud made in code.
//! 3. **How it is held**, chosen from the source and the options: level of detail ([`Shown::Lod`]: an
//!    octree streamed a node at a time under a point budget) for COPC files, URLs and folders, or when
//!    `--lod` / `--point-budget` asks; otherwise resident points ([`Shown::Cloud`]). Files that do not fit
//!    the host budget are streamed to the device without a host copy; a cloud that does not fit the
//!    device at all shows a uniform subsample of what fits and says how to see every point.
//! 4. **The start camera** ([`pcv_camera::Camera::start`]), and the elevation colours turned to its
//!    up axis, before the points are uploaded — so a window's first frame and `pcv render`'s frame of the
//!    same pose are the same image.
//!
//! Messages a user should see while this happens (a backend fallback, a subsample, an automatic colour
//! mode, level of detail's pool) go to standard error with the `pcv:` prefix, as the command line
//! always did.
use anyhow::{bail, Context, Result};
use pcv_camera::{Camera, StartOptions, UpAxis};
use pcv_io::attributes::{apply_up, auto_color, recolor_with, ColorMode, FieldLook, FieldSet};
use pcv_io::filter::{self, Kept, PointFilter};
use pcv_io::{device, load, octree::NodeSource, scene, PointCloud};
use pcv_lod::{memory::MemorySource, LodOptions, LodScene};
use pcv_render::filter::{ColumnData, FilterColumn};
use pcv_render::look::{Look, LookOverrides};
use pcv_render::multi::{Gpus, MultiRasterizer};
use pcv_render::{make_rasterizer, BackendChoice, FrameParams, Rasterizer, RenderMode};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What to show.
#[derive(Clone, Debug)]
pub enum Source {
    /// The built-in scene: ten random cylinders of `points` points; the same seed gives the same points
    /// on every backend.
    Scene { points: u64, seed: u64 },
    /// Point files shown together; a folder stands for every point file in it; COPC files and
    /// `http(s)://` URLs stream with level of detail.
    Files(Vec<PathBuf>),
    /// A cloud made in code (Python's host arrays, tests).
    Cloud(PointCloud),
}

impl Source {
    /// The files of `--points`/`--seed` and positional arguments: the built-in scene without files.
    pub fn from_args(files: &[PathBuf], points: u64, seed: u64) -> Source {
        match files.is_empty() {
            true => Source::Scene { points, seed },
            false => Source::Files(files.to_vec()),
        }
    }
}

/// Which backend draws, on how many GPUs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackendOptions {
    pub choice: BackendChoice,
    /// GPUs to split the cloud across (each renders its share; NCCL composites them).
    pub gpus: Gpus,
    /// Shares of the cloud per GPU, composited like GPUs.
    pub gpu_shares: usize,
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions { choice: BackendChoice::Auto, gpus: Gpus::Count(1), gpu_shares: 1 }
    }
}

/// How a source is opened.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// How loaded files' points are coloured (`None`: the files' colours, or intensity or elevation for
    /// files written without colours).
    pub color: Option<ColorMode>,
    /// Load at most this many of the files' points, a uniform subsample over the whole cloud.
    pub max_points: Option<u64>,
    /// Draw from an octree under a point budget, whatever the source.
    pub lod: bool,
    /// The level-of-detail point budget (implies `lod`; `None`: the backend's default).
    pub point_budget: Option<u64>,
    /// The start camera: `--camera`, its frame, the up axis, the aspect ratio.
    pub start: StartOptions,
    /// Folders stand for the point files in their subfolders too.
    pub recursive: bool,
    /// On a backend without a device (the CPU), files of more points than it draws in a window's frame
    /// ([`cpu_lod_above_points`]) open with level of detail, saying so (the window sets it; `--no-lod`
    /// and headless commands do not).
    pub auto_lod: bool,
    /// `--crs`: every file's coordinate system (a definition or a file holding one).
    pub crs: Option<String>,
    /// A field colour mode's ramp and range (`--ramp`, `--range`; default: the field's own ramp over
    /// the 2nd..98th percentile).
    pub field_look: FieldLook,
    /// Which points are shown (`--classes`, `--returns`, `--filter`, `--clip-box`): applied to the
    /// points a resident cloud uploads, and by the window's layers.
    pub filter: PointFilter,
    /// The frames drawn will cull (culled, quant): where the backend can, its culled passes apply the
    /// filter's classes and clip volumes to the cloud uploaded whole ([`filter_in_raster`]) instead of
    /// a filtered copy being uploaded. `PCV_FILTER_ON=host` turns it off (to compare).
    pub raster_filter: bool,
}

impl OpenOptions {
    /// The fields the files must be read with: the colour mode's and the filter's. A returns filter
    /// reads both return fields whichever it tests: the GPU's filter tests a point's return code, made
    /// of both (`pcv_render::filter::column`); with one of them left unread it could not, and the
    /// points were filtered on the host instead (seen on the GPU machine: `--returns first`).
    pub fn wanted_fields(&self) -> FieldSet {
        let mut f = FieldSet::of(&self.filter.fields());
        if self.filter.returns != pcv_io::filter::Returns::All {
            f = f.with(pcv_io::attributes::Field::ReturnNumber).with(pcv_io::attributes::Field::NumberOfReturns);
        }
        if let Some(x) = self.color.and_then(ColorMode::field) {
            f = f.with(x);
        }
        f
    }
}

/// Points a CPU backend draws a frame of in about 15 ms, half the window's 30 ms frame target, on
/// `cores` cores: 5M a core. It projects about 0.33 G points a second a core at any resolution (a
/// 2-core VM: 29.4M points in 45 ms at 320x180 and 47 ms at 1280x720, session 22), so a larger cloud cannot
/// hold the target by lowering the resolution; level of detail draws a budget of the nearest nodes.
pub fn cpu_lod_above_points(cores: usize) -> u64 {
    5_000_000 * cores.max(1) as u64
}

/// What a session shows.
pub enum Shown {
    /// Points uploaded to the backend.
    Cloud,
    /// A level-of-detail scene attached to the backend (nodes stream in as the camera asks for them).
    Lod(Box<LodScene>),
}

/// How long a session took to start and open, in seconds from its start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpenTimes {
    /// The backend was ready.
    pub backend_s: f64,
    /// The last source was loaded and uploaded (or its level-of-detail scene attached), counting from
    /// the session's start as if it had opened right after the backend.
    pub loaded_s: f64,
}

/// A backend with a source on it and the camera to start from.
pub struct Session {
    pub rasterizer: Box<dyn Rasterizer>,
    /// Why `auto` fell back to the CPU, for the panel.
    pub backend_note: Option<String>,
    /// The uploaded cloud, or a level-of-detail scene's placeholder (its bounds, origin and label).
    pub cloud: PointCloud,
    pub shown: Shown,
    pub camera: Camera,
    /// Why the camera's up axis is what it is.
    pub up_reason: String,
    /// When the sources were open (a level-of-detail scene's first frame counts from here; a resident
    /// cloud's from the start of its load).
    pub opened_at: Instant,
    pub times: OpenTimes,
    /// What went wrong while opening, for the panel (each was printed on stderr too): files skipped
    /// because they could not be read (each error names its file), coordinate systems that disagree
    /// or could not be read.
    pub warnings: Vec<String>,
    /// Which points are shown (the open options' filter; the window's layers start with it).
    pub filter: PointFilter,
    /// What the filter kept of a resident cloud at the upload.
    pub filtered: Option<Kept>,
}

/// Opens `source` on a backend made for `backend`: see the module doc for what happens in which order.
pub fn open(source: Source, backend: &BackendOptions, opts: &OpenOptions) -> Result<Session> {
    let mut session = Session::start(backend)?;
    session.open(source, opts)?;
    Ok(session)
}

impl Session {
    /// A session on the backend `backend` asks for, showing nothing yet; says so when `auto` falls back
    /// to the CPU.
    pub fn start(backend: &BackendOptions) -> Result<Session> {
        let started = Instant::now();
        let (rasterizer, backend_note) = make_backend(backend)?;
        if let Some(n) = &backend_note {
            eprintln!("pcv: using the CPU backend ({n})");
        }
        let mut session = Session::with_backend(rasterizer, backend_note);
        session.times = OpenTimes { backend_s: started.elapsed().as_secs_f64(), loaded_s: 0.0 };
        session.times.loaded_s = session.times.backend_s;
        Ok(session)
    }

    /// A session on a backend made with [`make_backend`] (`backend_note`: why `auto` fell back to the
    /// CPU), showing nothing yet.
    pub fn with_backend(rasterizer: Box<dyn Rasterizer>, backend_note: Option<String>) -> Session {
        let cloud = PointCloud::from_points(Vec::new(), glam::DVec3::ZERO, "nothing");
        let camera = Camera::for_cloud(cloud.bounds, true);
        Session {
            rasterizer,
            backend_note,
            cloud,
            shown: Shown::Cloud,
            camera,
            up_reason: String::new(),
            opened_at: Instant::now(),
            times: OpenTimes::default(),
            warnings: Vec::new(),
            filter: PointFilter::default(),
            filtered: None,
        }
    }

    /// Shows `source` in place of what was shown: loaded and uploaded, streamed, or attached as a
    /// level-of-detail scene, with its start camera.
    pub fn open(&mut self, source: Source, opts: &OpenOptions) -> Result<()> {
        let started = Instant::now();
        // What was shown goes first, so that its memory counts as free for what comes next.
        self.shown = Shown::Cloud;
        let mut warnings = Vec::new();
        let mut filtered = None;
        let (cloud, shown, camera, up_reason, opened_at) =
            open_on(self.rasterizer.as_mut(), source, opts, &mut warnings, &mut filtered)?;
        self.warnings = warnings;
        (self.filter, self.filtered) = (opts.filter.clone(), filtered);
        (self.cloud, self.shown, self.camera, self.up_reason, self.opened_at) =
            (cloud, shown, camera, up_reason, opened_at);
        self.times.loaded_s = self.times.backend_s + started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Shows arrays someone else owns (Python's device arrays) in place of what was shown, keeping
    /// `keepalive` (what owns them) until the next open or show; `label` names them.
    ///
    /// # Safety
    /// As [`Rasterizer::show_external`]: `keepalive` must keep the arrays allocated, and their producers
    /// must order writes that race with rendering themselves.
    pub unsafe fn show_arrays(
        &mut self,
        points: pcv_render::external::ExternalPoints,
        keepalive: Box<dyn std::any::Any + Send>,
        label: String,
    ) -> Result<(), pcv_render::RenderError> {
        self.shown = Shown::Cloud;
        // SAFETY: this function's contract is show_external's.
        let bounds = unsafe { self.rasterizer.show_external(points, keepalive) }?;
        let mut cloud = PointCloud::from_points(Vec::new(), glam::DVec3::ZERO, label);
        cloud.bounds = bounds;
        self.cloud = cloud;
        Ok(())
    }

    /// Runs the viewer on what is shown until the window closes or `opts.frames` frames are shown.
    pub fn view(
        &mut self,
        mut opts: crate::viewer::ViewerOptions,
    ) -> Result<crate::viewer::ViewerSummary, crate::viewer::ViewerError> {
        let note = self.backend_note.clone();
        if let Some(k) = &self.filtered {
            opts.filter = self.filter.clone();
            opts.filter_in_raster = k.by_rasterizer;
        }
        match &mut self.shown {
            Shown::Lod(l) => crate::viewer::run_lod(&self.cloud, self.rasterizer.as_mut(), opts, note, l),
            Shown::Cloud => crate::viewer::run(&self.cloud, self.rasterizer.as_mut(), opts, note),
        }
    }

    /// `pcv record --measure`: flies `path` from the start camera as fast as frames come (level of
    /// detail loading as it goes) and reports time to first frame, frame times and time to a complete
    /// view ([`pcv_lod::flight::fly`]).
    pub fn measure_flight(
        &mut self,
        path: &pcv_camera::path::CameraPath,
        opts: &pcv_lod::flight::FlightOptions,
    ) -> Result<pcv_lod::flight::FlightReport, pcv_render::RenderError> {
        let lod = match &mut self.shown {
            Shown::Lod(l) => Some(&mut **l),
            Shown::Cloud => None,
        };
        let (camera, origin) = (self.camera, self.cloud.origin);
        pcv_lod::flight::fly(self.rasterizer.as_mut(), lod, &camera, origin, path, opts, self.opened_at)
    }

    /// The look for the shown cloud with `overrides` (the prototype's for the built-in scene, adaptive
    /// points and eye-dome lighting for files).
    pub fn look(&self, overrides: &LookOverrides) -> Look {
        Look::for_cloud(self.cloud.scene().is_some(), overrides)
    }

    /// The shown cloud's point spacing, for adaptive point sizes (level of detail: the placeholder's;
    /// the nodes' own spacing comes as they load).
    pub fn spacing_m(&self) -> f32 {
        pcv_io::spacing::estimate(&self.cloud)
    }

    /// The level-of-detail scene, if that is what is shown.
    pub fn lod(&mut self) -> Option<&mut LodScene> {
        match &mut self.shown {
            Shown::Lod(l) => Some(l),
            Shown::Cloud => None,
        }
    }

    /// Level of detail: the nodes that could not be read or decoded so far, each named once (file, node
    /// key, byte); empty for a resident cloud.
    pub fn node_errors(&self) -> Vec<String> {
        match &self.shown {
            Shown::Lod(l) => l.errors().to_vec(),
            Shown::Cloud => Vec::new(),
        }
    }

    /// Level of detail: how many nodes could not be read or decoded so far (0 for a resident cloud).
    pub fn failed_nodes(&self) -> usize {
        match &self.shown {
            Shown::Lod(l) => l.failed_nodes(),
            Shown::Cloud => 0,
        }
    }

    /// The mode frames are drawn in: `mode`, or the culled mode a level-of-detail pool needs.
    pub fn mode_for(&self, mode: RenderMode) -> RenderMode {
        match self.shown {
            Shown::Lod(_) => LodScene::mode_for(mode),
            Shown::Cloud => mode,
        }
    }

    /// Level of detail: loads and uploads the nodes `frame` from the start camera selects until the view
    /// is as complete as the budget allows or `timeout` passes, and says so; returns the nodes' point
    /// spacing (`None`: nothing is streamed). Resident clouds return at once.
    pub fn settle(&mut self, frame: &FrameParams, timeout: Duration) -> Result<Option<f32>> {
        let eye = self.camera.pose.eye;
        let Shown::Lod(l) = &mut self.shown else {
            return Ok(None);
        };
        let t = Instant::now();
        let spacing_m = loop {
            let st = l.update(self.rasterizer.as_mut(), frame, eye)?;
            if (st.complete && st.loading == 0) || t.elapsed() >= timeout {
                eprintln!(
                    "pcv: level of detail: {} of {} selected nodes drawn ({} points) after {:.2} s",
                    st.drawn_nodes,
                    st.selected_nodes,
                    st.drawn_points,
                    t.elapsed().as_secs_f64()
                );
                break st.spacing_m;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        for e in l.errors() {
            eprintln!("pcv: level of detail: {e}");
        }
        Ok(Some(spacing_m))
    }
}

/// The backend `opts` asks for: the one-GPU backends for one share on one GPU, else the multi-GPU one
/// (CUDA and NCCL; never the CPU, and it says which GPUs it uses). Returns why `auto` fell back to the
/// CPU, if it did.
pub fn make_backend(opts: &BackendOptions) -> Result<(Box<dyn Rasterizer>, Option<String>)> {
    let (choice, gpus, shares) = (opts.choice, opts.gpus, opts.gpu_shares);
    let n = gpus.resolve();
    if shares == 0 {
        bail!("--gpu-shares must be at least 1");
    }
    if (n == 1 || (n == 0 && gpus == Gpus::All && choice != BackendChoice::Cuda)) && shares == 1 {
        return make_rasterizer(choice).context("could not start the rasterizer");
    }
    if choice == BackendChoice::Cpu {
        bail!(
            "--gpus {n} --gpu-shares {shares} splits the cloud across CUDA GPUs; --backend cpu draws on the CPU only"
        );
    }
    let r = MultiRasterizer::new(n.max(1), shares)
        .with_context(|| format!("could not start {} GPU(s) with {shares} share(s) each (--gpus)", n.max(1)))?;
    eprintln!("pcv: {}", r.description());
    Ok((Box::new(r), None))
}

/// Opens `source` on `r`: the cloud (or level-of-detail placeholder), what is shown, the start camera
/// and its up axis's reason, and when the sources were open.
fn open_on(
    r: &mut dyn Rasterizer,
    source: Source,
    opts: &OpenOptions,
    skipped: &mut Vec<String>,
    filtered: &mut Option<Kept>,
) -> Result<(PointCloud, Shown, Camera, String, Instant)> {
    let started = Instant::now();
    let source = match source {
        Source::Files(f) => Source::Files(readable_tiles(pcv_io::collection::expand(&f, opts.recursive)?, skipped)?),
        s => s,
    };
    let crs = opts.crs.as_deref().map(pcv_io::crs::from_argument).transpose()?;
    if let Some((mut lod, opened_at)) = open_lod(r, &source, opts, skipped)? {
        if !opts.filter.is_empty() {
            // Classes and clip volumes: the loading workers keep what the filter shows.
            lod.set_filter(&opts.filter).map_err(anyhow::Error::msg)?;
            eprintln!("pcv: showing {}: applied to each node as it loads", opts.filter.describe());
            *filtered = Some(Kept::default());
        }
        let mut cloud = lod.placeholder_cloud();
        for e in lod.crs_errors() {
            warn(skipped, e);
        }
        about_crs(&mut cloud, crs.as_ref(), skipped);
        let (camera, reason) = Camera::start_framing(&cloud, lod.framing_box(), &opts.start);
        let up_reason = reason.0;
        return Ok((cloud, Shown::Lod(Box::new(lod)), camera, up_reason, opened_at));
    }
    let mut prepared = None;
    let mut cloud = load_and_upload(r, source, opts, skipped, filtered, |c| prepared = Some(prepare(c, &opts.start)))?;
    about_crs(&mut cloud, crs.as_ref(), skipped);
    let (mut camera, up_reason) = prepared.context("the start camera")?;
    if let Some(k) = filtered.as_ref().filter(|k| opts.filter.clips() && k.points > 0) {
        // Clipped: the start camera frames what the clip volumes keep, not the whole cloud: the kept
        // points of a host cloud (as the upload gathered them); for a streamed cloud, the sample its
        // first stream took, of the points the workers kept.
        let start = StartOptions { up: pcv_camera::UpChoice::Axis(camera.up), ..opts.start };
        let sample = match (k.by_rasterizer, cloud.files()) {
            // The GPU filters every point uploaded: a sample of them, kept by the clip volumes here.
            (true, files) => {
                let mut sample = match files {
                    Some(files) => device::sample(files),
                    None => cloud.points.iter().step_by((cloud.points.len() / 100_000).max(1)).copied().collect(),
                };
                sample.retain(|p| opts.filter.keeps_position(cloud.to_source(glam::Vec3::from_array(p.pos))));
                Some(sample)
            }
            (false, Some(files)) => Some(device::sample(files)),
            (false, None) => None,
        };
        match sample {
            Some(sample) if !sample.is_empty() => {
                let b = pcv_camera::framing::percentile_box(&sample, &pcv_io::Bounds::of_points(&sample));
                let mut framed = cloud.clone();
                framed.bounds = b;
                camera = Camera::start_framing(&framed, b, &start).0;
            }
            Some(_) => {}
            None => {
                let mut kept = filter::gather(&cloud, k);
                kept.bounds = pcv_io::Bounds::of_points(&kept.points);
                camera = Camera::start(&kept, &start).0;
            }
        }
    }
    Ok((cloud, Shown::Cloud, camera, up_reason, started))
}

/// Says `text` on stderr and keeps it for the panel.
fn warn(warnings: &mut Vec<String>, text: String) {
    eprintln!("pcv: warning: {text}");
    warnings.push(text);
}

/// `--crs` given: every file's system; then what the files' systems together need said.
fn about_crs(cloud: &mut PointCloud, crs: Option<&pcv_io::crs_model::Crs>, warnings: &mut Vec<String>) {
    if let Some(c) = crs {
        cloud.set_crs(c);
    }
    if let Some(w) = cloud.crs_warning() {
        warn(warnings, w);
    }
    if let Some(c) = cloud.crs() {
        eprintln!("pcv: coordinate system {} (from {})", c.summary(), c.read_from);
    }
}

/// The camera `cloud` starts with for `start` (its up axis, framing or `--camera` pose), with the
/// cloud's elevation colours turned to that up axis. Called before the cloud is uploaded.
pub fn prepare(cloud: &mut PointCloud, start: &StartOptions) -> (Camera, String) {
    let (camera, reason) = Camera::start(cloud, start);
    if camera.up != UpAxis::PosZ && !cloud.is_lazy_scene() {
        apply_up(cloud, camera.up.vector());
    }
    (camera, reason.0)
}

/// The cloud `files` hold (the built-in scene without files), coloured as `color` asks (or as
/// [`auto_color`] finds best, saying so).
pub fn load_cloud(files: &[PathBuf], points: u64, seed: u64, color: Option<ColorMode>) -> Result<PointCloud> {
    let opts = OpenOptions { color, ..Default::default() };
    load_cloud_skipping(files, points, seed, &opts, &mut Vec::new())
}

/// [`load_cloud`]: files among several that cannot be read are skipped, said on stderr and added to
/// `skipped` (each error names its file); all of them failing is an error.
pub fn load_cloud_skipping(
    files: &[PathBuf],
    points: u64,
    seed: u64,
    opts: &OpenOptions,
    skipped: &mut Vec<String>,
) -> Result<PointCloud> {
    let color = opts.color;
    if files.is_empty() {
        if let Some(c) = color.filter(|c| *c != ColorMode::Rgb) {
            bail!("--color {c}: the built-in scene has only its own colors");
        }
        Ok(scene::lazy(points, seed))
    } else {
        let mut load_opts = load::LoadOptions::default();
        load_opts.fields.fields = opts.wanted_fields();
        let mut cloud = None;
        // Files in different coordinate systems: each system's files load apart and are reprojected
        // into the first's (pcv_io::join); files naming none go with the first system's.
        for group in crs_groups(files, opts.crs.is_some()) {
            let (part, failed) = load::load_readable_files(&group, &load_opts)?;
            for e in failed {
                warn(skipped, format!("skipped {e}"));
            }
            cloud = Some(match cloud {
                None => part,
                Some(base) => {
                    let joined = pcv_io::join::append(base, part);
                    if let Some(n) = joined.note {
                        warn(skipped, n);
                    }
                    joined.cloud
                }
            });
        }
        let mut cloud = cloud.context("no files")?;
        match color {
            Some(c) => recolor_with(&mut cloud, c, &opts.field_look)?,
            None => {
                if let Some(note) = auto_color(&mut cloud) {
                    eprintln!("pcv: {note}");
                }
            }
        }
        Ok(cloud)
    }
}

/// `files` in groups of one coordinate system each, in the order the systems first appear (files
/// naming none join the first group); one group when they agree, or when `--crs` sets one for all.
fn crs_groups(files: &[PathBuf], crs_given: bool) -> Vec<Vec<PathBuf>> {
    if files.len() < 2 || crs_given {
        return vec![files.to_vec()];
    }
    let mut groups: Vec<(Option<pcv_io::crs_model::Crs>, Vec<PathBuf>)> = Vec::new();
    for f in files {
        let c = load::crs_of_path(f);
        let at = match &c {
            Some(c) => groups.iter().position(|(g, _)| g.as_ref().is_some_and(|g| g.same_as(c))),
            None => (!groups.is_empty()).then_some(0),
        };
        match at {
            Some(i) => groups[i].1.push(f.clone()),
            None => groups.push((c, vec![f.clone()])),
        }
    }
    // A first group of files naming no system takes the first system found.
    if groups.len() > 1 && groups[0].0.is_none() {
        let (_, none) = groups.remove(0);
        groups[0].1.splice(0..0, none);
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// Host memory a file cloud may take on a backend that streams (512 MiB, or the backend's own budget:
/// the CPU one's is smaller, since it keeps its own copy); larger clouds go to the device only
/// (`PCV_HOST_BUDGET_MB` changes it).
fn host_budget_bytes(r: &dyn Rasterizer) -> u64 {
    match std::env::var("PCV_HOST_BUDGET_MB").ok().and_then(|v| v.parse::<u64>().ok()) {
        Some(mb) => mb << 20,
        None => r.host_copy_budget_bytes().unwrap_or(512 << 20),
    }
}

/// Loads `source` for `r` and uploads it, calling `prepare` on the cloud first. On a streaming
/// backend, a cloud that does not fit shows a uniform subsample of what fits (and says how to see it
/// all), and one larger than the host budget is streamed to the device without a host copy; elsewhere
/// the host cloud is loaded (`max_points`: a uniform subsample). Returns the cloud, uploaded.
fn load_and_upload(
    r: &mut dyn Rasterizer,
    source: Source,
    opts: &OpenOptions,
    skipped: &mut Vec<String>,
    filtered: &mut Option<Kept>,
    prepare: impl FnOnce(&mut PointCloud),
) -> Result<PointCloud> {
    let files = match source {
        Source::Files(files) => files,
        Source::Scene { points, seed } => {
            let mut cloud = load_cloud(&[], points, seed, opts.color)?;
            prepare(&mut cloud);
            r.upload(&cloud).context("uploading the points")?;
            return Ok(cloud);
        }
        Source::Cloud(mut cloud) => {
            prepare(&mut cloud);
            r.upload(&cloud).context("uploading the points")?;
            return Ok(cloud);
        }
    };
    // Several GPUs: the capacity of them all (each takes a share of the stream).
    if let Some(cap) = r.stream_capacity().transpose()? {
        let load_opts = load::LoadOptions::default();
        let mut subsample = opts.max_points;
        let plan = match device::plan(&files, &load_opts, &cap, opts.max_points) {
            // Too large for the GPU: show what fits, and say how to see it all.
            Err(load::LoadError::DoesNotFit { files: what, points, fit_points, device, .. })
                if opts.max_points.is_none() && fit_points > 0 =>
            {
                eprintln!(
                    "pcv: {what}: {points} points do not fit {device}; showing a uniform subsample of {fit_points}. To see every point, convert to COPC and stream it with level of detail: pcv convert {} -o cloud.copc.laz, then pcv cloud.copc.laz",
                    files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" ")
                );
                subsample = Some(fit_points);
                device::plan(&files, &load_opts, &cap, Some(fit_points))?
            }
            other => other?,
        };
        if subsample.is_some()
            || plan.planned_points().saturating_mul(device::HOST_BYTES_PER_POINT) > host_budget_bytes(r)
        {
            let mut cloud = device::cloud(plan);
            // Classes and clip volumes the culled passes apply themselves: every point streams (with
            // its class code when a class is hidden); the rest the decoding workers apply.
            let raster = opts.raster_filter
                && !opts.filter.is_empty()
                && r.raster_filters()
                && raster_filter_fits(&cloud, &opts.filter);
            if let Some(files) = cloud.files().filter(|_| !opts.filter.is_empty()) {
                let las = files
                    .formats
                    .iter()
                    .all(|f| matches!(f, pcv_io::formats::Format::Las | pcv_io::formats::Format::Laz));
                if let Some(f) = opts.filter.fields().first().filter(|_| !las) {
                    bail!("{}: only LAS and LAZ files carry {f}", opts.filter.describe());
                }
                match raster {
                    true => {
                        files.carry_classes.store(opts.filter.tests_classes(), std::sync::atomic::Ordering::Relaxed)
                    }
                    false => _ = files.set_filter(&opts.filter),
                }
            }
            // A field's colour needs a sample of its values (read now): the first stream colours by
            // it. Intensity's range and the class palette need what the first stream sees: a second.
            let by_field = opts.color.filter(|c| c.field().is_some());
            if let Some(c) = by_field {
                device::set_color(&mut cloud, c, &opts.field_look).map_err(anyhow::Error::msg)?;
            }
            r.upload(&cloud).context("streaming the points to the device")?;
            let note = device::finish(&mut cloud, opts.color.is_none());
            let again = opts.color.filter(|c| *c != ColorMode::Rgb && by_field.is_none());
            if let Some(c) = again {
                device::set_color(&mut cloud, c, &opts.field_look).map_err(anyhow::Error::msg)?;
            }
            if let Some(n) = &note {
                eprintln!("pcv: {n}");
            }
            if note.is_some() || again.is_some() {
                r.upload(&cloud).context("streaming the points to the device again, colored")?;
            }
            if raster && filter_in_raster(r, &cloud, &opts.filter, &|_| None).context("filtering on the GPU")? {
                eprintln!(
                    "pcv: showing {}: the GPU's culled passes skip the batches it hides and test the rest ({} points streamed{})",
                    opts.filter.describe(),
                    r.num_points(),
                    filter_columns_note(&opts.filter, r.num_points())
                );
                *filtered = Some(Kept { points: r.num_points(), by_rasterizer: true, ..Default::default() });
            } else if !opts.filter.is_empty() {
                if let Some(files) = cloud.files().filter(|f| raster && f.set_filter(&opts.filter)) {
                    // The GPU did not take the filter after all: the workers apply it to a new stream.
                    files.carry_classes.store(false, std::sync::atomic::Ordering::Relaxed);
                    r.upload(&cloud).context("streaming the points to the device again, filtered")?;
                }
                let out = cloud.files().and_then(|f| f.streamed.lock().ok()?.as_ref().map(|s| s.filtered_out));
                eprintln!(
                    "pcv: showing {}: {} points streamed, {} left out by the decoding workers",
                    opts.filter.describe(),
                    r.num_points(),
                    out.unwrap_or(0)
                );
                *filtered = Some(Kept { points: r.num_points(), ..Default::default() });
            }
            prepare(&mut cloud);
            return Ok(cloud);
        }
    }
    let mut cloud = load_cloud_skipping(&files, 0, 0, opts, skipped)?;
    if let Some(k) = opts.max_points {
        load::keep_evenly(&mut cloud, k);
    }
    prepare(&mut cloud);
    if opts.filter.is_empty() {
        r.upload(&cloud).context("uploading the points")?;
    } else {
        check_filter_fields(&cloud, &opts.filter)?;
        // Classes and clip volumes on the GPU's culled passes, the whole cloud uploaded; else the
        // kept points (filtered here).
        let on_gpu = opts.raster_filter && r.raster_filters() && raster_filter_fits(&cloud, &opts.filter) && {
            r.upload(&cloud).context("uploading the points")?;
            filter_in_raster(r, &cloud, &opts.filter, &filter_columns(&cloud)).context("filtering on the GPU")?
        };
        if on_gpu {
            eprintln!(
                "pcv: showing {}: the GPU's culled passes skip the batches it hides and test the rest ({} points uploaded{})",
                opts.filter.describe(),
                cloud.len(),
                filter_columns_note(&opts.filter, cloud.len())
            );
            *filtered = Some(Kept { points: cloud.len(), by_rasterizer: true, ..Default::default() });
        } else {
            let (shown, kept) = filter::shown(&cloud, &opts.filter);
            eprintln!(
                "pcv: showing {}: {} of {} points ({} groups skipped, {} kept whole, {} tested)",
                opts.filter.describe(),
                kept.points,
                cloud.len(),
                kept.groups_skipped,
                kept.groups_whole,
                kept.groups_tested
            );
            r.upload(&shown).context("uploading the points")?;
            *filtered = Some(kept);
        }
    }
    Ok(cloud)
}

/// The tiles of `files` whose headers can be read (read on all cores first, before any point: a folder
/// or collection of many tiles is checked in milliseconds); each one that cannot is said and added to
/// `skipped`, and the rest load. All of them failing is the first one's error. URLs are kept (their
/// headers are read when they are opened); one file is left to its loader's own error.
fn readable_tiles(files: Vec<PathBuf>, skipped: &mut Vec<String>) -> Result<Vec<PathBuf>> {
    if files.len() < 2 {
        return Ok(files);
    }
    let headers = pcv_io::collection::headers(&files);
    let mut kept = Vec::with_capacity(files.len());
    let mut first_error = None;
    for (f, h) in files.into_iter().zip(headers) {
        match h {
            Err(_) if pcv_io::formats::copc::http::is_url(&f.to_string_lossy()) => kept.push(f),
            Ok(_) => kept.push(f),
            Err(e) => {
                warn(skipped, format!("skipped {e}"));
                first_error.get_or_insert(e);
            }
        }
    }
    match (kept.is_empty(), first_error) {
        (true, Some(e)) => Err(anyhow::Error::new(e).context("no tile could be read")),
        _ => Ok(kept),
    }
}

/// Whether the culled passes can apply `filter` to `cloud` ([`pcv_render::filter::for_cloud`]; a
/// streamed cloud brings only its class codes, so its returns are filtered as it streams), unless
/// `PCV_FILTER_ON=host` asks for the host's filter.
pub fn raster_filter_fits(cloud: &PointCloud, filter: &PointFilter) -> bool {
    let host_asked = std::env::var("PCV_FILTER_ON").is_ok_and(|v| v == "host");
    let streamed_returns = cloud.is_device_only() && filter.returns != pcv_io::filter::Returns::All;
    !host_asked && !streamed_returns && pcv_render::filter::for_cloud(filter, cloud).is_ok()
}

/// Has `r`'s culled passes apply `filter` to `cloud`, which `r` holds uploaded whole (`columns`: the
/// uploaded points' columns the filter reads, made only when the device has none: [`filter_columns`]
/// for a cloud uploaded whole); `false` where the backend or its table cannot, and the caller filters
/// on the host instead.
pub fn filter_in_raster(
    r: &mut dyn Rasterizer,
    cloud: &PointCloud,
    filter: &PointFilter,
    columns: &dyn Fn(FilterColumn) -> Option<ColumnData>,
) -> Result<bool, pcv_render::RenderError> {
    let Ok(u) = pcv_render::filter::for_cloud(filter, cloud) else { return Ok(false) };
    r.set_raster_filter(Some(&u), columns)
}

/// The filter's columns of all of `cloud`'s points, in order.
pub fn filter_columns(cloud: &PointCloud) -> impl Fn(FilterColumn) -> Option<ColumnData> + '_ {
    let whole = 0..cloud.points.len();
    move |ask| pcv_render::filter::column(cloud, ask, std::slice::from_ref(&whole))
}

/// What the columns a filter puts on the GPU take: a byte a point and 32 bytes a batch for class codes
/// and for return codes, 4 bytes a point and 16 a batch for each attribute a range tests
/// (`cuda::filter::DeviceColumns`).
fn filter_columns_note(filter: &PointFilter, points: u64) -> String {
    let batches = points.div_ceil(pcv_render::gpu_data::BATCH_POINTS as u64);
    let mut parts = Vec::new();
    let mut bytes = 0u64;
    let codes = points + batches * std::mem::size_of::<pcv_render::gpu_data::BatchClasses>() as u64;
    if filter.tests_classes() {
        parts.push("class codes");
        bytes += codes;
    }
    if filter.returns != pcv_io::filter::Returns::All {
        parts.push("return codes");
        bytes += codes;
    }
    let mut fields: Vec<u32> = filter.ranges.iter().map(|r| r.of.column_id()).collect();
    fields.sort();
    fields.dedup();
    for _ in &fields {
        bytes += 4 * points + batches * std::mem::size_of::<pcv_render::gpu_data::BatchRange>() as u64;
    }
    let names: Vec<&str> =
        fields.iter().filter_map(|&id| pcv_io::filter::RangeOf::of_column_id(id)).map(|r| r.name()).collect();
    let values = format!("{} values", names.join(", "));
    if !fields.is_empty() {
        parts.push(&values);
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "; {} on the GPU: {:.1} MB, {:.3} bytes a point",
        parts.join(", "),
        bytes as f64 / 1e6,
        bytes as f64 / points.max(1) as f64
    )
}

/// The filter reads only fields the cloud has: otherwise says which are missing.
fn check_filter_fields(cloud: &PointCloud, f: &PointFilter) -> Result<()> {
    let missing: Vec<&str> = filter::missing_fields(cloud, f).into_iter().map(|x| x.name()).collect();
    if !missing.is_empty() {
        let a = cloud.attributes.as_deref();
        let has: Vec<&str> = a
            .map(|a| {
                let intensity = a.intensity.as_ref().map(|_| "intensity");
                intensity.into_iter().chain(a.columns.iter().filter(|c| c.any()).map(|c| c.field.name())).collect()
            })
            .unwrap_or_default();
        let has = if has.is_empty() { "none".to_string() } else { has.join(", ") };
        bail!("{}: the files have no {} (they have: {has})", f.describe(), missing.join(", "));
    }
    Ok(())
}

/// Whether `p` is a COPC file (its COPC info VLR, or an `http(s)://` URL, which pcv reads as COPC).
fn is_copc(p: &Path) -> bool {
    let t = p.to_string_lossy();
    if t.starts_with("http://") || t.starts_with("https://") {
        return true;
    }
    let mut head = [0u8; 375 + 54];
    std::fs::File::open(p).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok()
        && pcv_io::formats::copc::sniff(&head)
}

/// The level-of-detail scene `source` and `opts` ask for (COPC files or URLs, a directory, `lod`,
/// `point_budget`), attached to `r`, with the time its sources were open (before the scene and its
/// pool were made: what a COPC file's first frame counts from; an octree built in memory is not
/// counted); `None` when they ask for none.
fn open_lod(
    r: &mut dyn Rasterizer,
    source: &Source,
    opts: &OpenOptions,
    skipped: &mut Vec<String>,
) -> Result<Option<(LodScene, Instant)>> {
    let asked = opts.lod || opts.point_budget.is_some();
    let (files, scene) = match source {
        Source::Files(f) => (f.as_slice(), None),
        Source::Scene { points, seed } => (&[][..], Some((*points, *seed))),
        Source::Cloud(_) if asked => bail!("level of detail needs files or the built-in scene"),
        Source::Cloud(_) => return Ok(None),
    };
    // COPC files (and URLs) stream their own octrees; other files get one built in memory.
    let (copc, other): (Vec<PathBuf>, Vec<PathBuf>) = files.iter().cloned().partition(|f| is_copc(f));
    let named_copc = !copc.is_empty();
    let mut asked = asked;
    if !(asked || named_copc) && opts.auto_lod && !files.is_empty() && r.device_capacity().is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (declared, limit) = (pcv_io::device::declared_points(files)?, cpu_lod_above_points(cores));
        if declared > limit {
            eprintln!(
                "pcv: {declared} points on the {} backend ({cores} cores draw about {limit} a frame at full speed): drawing with level of detail (--no-lod draws every point)",
                r.name()
            );
            asked = true;
        }
    }
    // Each file (folders were replaced by their files in `open_on`) is a tile of one scene.
    if !(asked || named_copc) {
        return Ok(None);
    }
    let mut sources: Vec<Arc<dyn NodeSource>> = Vec::new();
    for f in &copc {
        sources.push(pcv_io::formats::copc::open(&f.to_string_lossy())?);
    }
    // No files: the built-in scene, as one tile.
    let groups: Vec<Vec<PathBuf>> = match other.is_empty() && copc.is_empty() {
        true => vec![Vec::new()],
        false => other.iter().map(|f| vec![f.clone()]).collect(),
    };
    let (points, seed) = scene.unwrap_or((0, 0));
    for g in &groups {
        // One tile that cannot be read is skipped while others remain.
        let cloud = match load_cloud(g, points, seed, opts.color) {
            Err(e) if groups.len() > 1 => {
                warn(skipped, format!("skipped {}", crate::one_message(&e)));
                continue;
            }
            c => c?,
        };
        eprintln!("pcv: building an octree of {} points of {} in memory", cloud.len(), cloud.label);
        sources.push(Arc::new(MemorySource::build(&cloud, pcv_lod::memory::DEFAULT_ROOT_POINTS)));
    }
    let opened_at = Instant::now();
    let (budget, how) = match opts.point_budget {
        Some(b) => (b, "--point-budget".to_string()),
        None => pcv_lod::default_point_budget(r),
    };
    let mut lod = LodScene::open(sources, LodOptions::with_budget(budget))?;
    lod.attach(r).context("making the GPU node pool")?;
    if let Some(c) = opts.color.filter(|c| *c != ColorMode::Rgb) {
        // COPC nodes are coloured as they load; octrees built here hold points coloured already.
        match lod.set_color_mode(c, &opts.field_look) {
            Err(_) if copc.is_empty() => {}
            r => _ = r.map_err(anyhow::Error::msg)?,
        }
    }
    eprintln!(
        "pcv: level of detail: {} points in {} tile(s), budget {budget} points ({how}), pool of {} slots ({:.2} GB)",
        lod.total_points(),
        lod.tiles(),
        lod.slots(),
        lod.slots() as f64 * 4096.0 * 20.0 / 1e9
    );
    Ok(Some((lod, opened_at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_columns_are_said_in_bytes_a_point() {
        let mut f = PointFilter::default();
        assert_eq!(filter_columns_note(&f, 1_000_000_000), "", "no class hidden: no column");
        f.set_class_shown(5, false);
        // 1e9 bytes of codes and 244,141 batches of 32 bytes.
        assert_eq!(filter_columns_note(&f, 1_000_000_000), "; class codes on the GPU: 1007.8 MB, 1.008 bytes a point");
        f.returns = pcv_io::filter::Returns::First;
        f.ranges.push(pcv_io::filter::ValueRange::parse("gps_time:10..20").unwrap());
        f.ranges.push(pcv_io::filter::ValueRange::parse("gps_time:..15").unwrap());
        // Two code columns, one value column of 4e9 bytes and 244,141 summaries of 16 bytes.
        assert_eq!(
            filter_columns_note(&f, 1_000_000_000),
            "; class codes, return codes, gps_time values on the GPU: 6019.5 MB, 6.020 bytes a point"
        );
    }
}
