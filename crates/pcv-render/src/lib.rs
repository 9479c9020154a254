//! Rendering: one [`Rasterizer`] trait, a CPU backend (rayon) and a CUDA backend.
//!
//! How it works: a frame is three passes over a buffer of `width × height` pixels, row 0 at the top
//! (as image libraries count; the window flips in its blit): *clear* sets every depth to 1.0 and every color to the clear color; *depth*
//! projects every point ([`twins::project`]) and takes an atomic min of its depth bits on its pixel;
//! *color* projects every point again and writes its RGBA8 color where its depth equals the stored one.
//! The CUDA kernels (`kernels/*.cu`) and their CPU twins (`twins/*.rs`, same names) do the same float
//! operations in the same order, so both backends produce the same image, except where two points share
//! one depth exactly and either may win.
//!
//! The other [`RenderMode`]s arrange the passes differently for speed: a 64-bit visibility buffer
//! (depth bits and a colour or point index, `gpu_data::word`) filled in one pass and resolved in another, over points that
//! the upload sorted spatially and cut into batches with a bounding box each (`kernels/preprocess.cu`),
//! with per-batch frustum culling, warp-level merging of points that hit one pixel, and 10-bit
//! quantized coordinates where they are precise enough. Each gives the reference's image except at
//! exact depth ties, but for `quant`, whose points may move by up to half a pixel.
//!
//! After the raster passes come the post passes a [`look::Look`] asks for — point size (a splat over
//! the visibility buffer), the resolve to colours, eye-dome lighting — in the order [`plan::passes`]
//! gives, the same on both backends; the background (solid or a gradient) is written by the clear and
//! resolve passes.
//!
//! A backend renders into a [`Target`]: host memory (CPU backend, headless rendering, tests) or a
//! device buffer (the CUDA backend writing into a mapped GL pixel buffer).
//!
//! The modules: [`twins`] (one CPU twin per kernel file, the tests' reference), [`cpu`] (the CPU
//! backend and its fast paths), [`cuda`] (the CUDA backend: context, the kernels' table, uploads into
//! its one batch table, interop), [`multi`] (several GPUs composited through NCCL), [`gpu_data`] (the
//! mirrors of `kernels/shared.h`), [`plan`] and [`look`] (a frame's passes), [`pick`] (one pick for
//! every backend), [`external`] (arrays drawn in place), [`image_io`] (frames as PNG), [`platform`].
pub mod cpu;
pub mod cuda;
pub mod external;
pub mod filter;
pub mod gpu_data;
pub mod huge;
pub mod image_io;
pub mod look;
pub mod multi;
pub mod pick;
pub mod plan;
pub mod platform;
pub mod simd;
pub mod twins;

use glam::Mat4;
use gpu_data::Point;
use gpu_data::{FrameUniforms, PostUniforms};
use look::Look;
use pcv_io::PointCloud;

/// The commit the build was made from (`build.rs`: `git rev-parse --short=12 HEAD`), for reports.
pub const GIT_COMMIT: &str = env!("PCV_GIT_COMMIT");

/// The prototype's background: opaque black (RGBA8, r in the low byte).
pub const CLEAR_COLOR: u32 = 0xff00_0000;

/// Errors from a rasterizer.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("no CUDA driver: {0}")]
    NoDriver(String),
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    #[error("the CUDA driver rejected the kernels ({kernel}): {message}")]
    PtxRejected { kernel: String, message: String },
    #[error("out of GPU memory: {needed_bytes} bytes needed for {points} points, {free_bytes} free; about {fit_points} points would fit")]
    OutOfMemory { points: u64, needed_bytes: u64, free_bytes: u64, fit_points: u64 },
    #[error("this build has no CUDA kernels (built without nvcc): {remedy}", remedy = crate::platform::NO_KERNELS_REMEDY)]
    NoKernels,
    #[error("CUDA error in {context}: {message}")]
    Cuda { context: String, message: String },
    #[error("target of {got} pixels does not match the frame's {width}x{height}")]
    TargetSize { got: usize, width: u32, height: u32 },
    #[error("the {backend} backend cannot render into a {target} target")]
    UnsupportedTarget { backend: &'static str, target: &'static str },
    #[error("no points uploaded")]
    NotUploaded,
    /// NCCL (more than one GPU) missing or failing.
    #[error("NCCL: {0}")]
    Nccl(String),
    #[error("render mode {mode} is unavailable: {reason}")]
    ModeUnavailable { mode: &'static str, reason: String },
    /// An array handed to the renderer (`render::external`) that it cannot read: names the argument.
    #[error("{arg}: {message}")]
    Argument { arg: &'static str, message: String },
    /// Files a backend streamed into its own memory that could not be read (the message names the file).
    #[error("{0}")]
    Load(String),
}

/// How the passes are arranged. Every mode gives the reference's image except where two points share
/// one depth exactly.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum RenderMode {
    /// The design's three passes: clear, depth (atomic min), color (depth equality).
    #[default]
    Reference,
    /// One pass of 64-bit atomic min on (depth, color) words, then a resolve; ties go to the smaller color.
    Packed,
    /// Visibility buffer: 64-bit atomic min on (depth, point index) words reading 12-byte positions of
    /// the sorted points, then a resolve that reads colors of visible points only; ties go to the
    /// smaller index.
    Vis,
    /// [`RenderMode::Vis`] over batches, drawing only those that can show: outside the view they are
    /// skipped, and behind what the batches visible last frame drew (two-phase occlusion culling with a
    /// depth pyramid) too. Exactly the `vis` buffer.
    Culled,
    /// [`RenderMode::Culled`] reading 4-byte quantized coordinates (3 × 10 bits in the batch's box) for
    /// every batch where they move no point by more than half a pixel. Not the reference's image.
    Quant,
}

impl RenderMode {
    /// Every mode.
    pub const ALL: [RenderMode; 5] =
        [RenderMode::Reference, RenderMode::Packed, RenderMode::Vis, RenderMode::Culled, RenderMode::Quant];
    /// The modes the window's M key cycles through (`packed` is never faster than `vis`: it stays for
    /// tests and benchmarks).
    pub const CYCLE: [RenderMode; 4] = [RenderMode::Culled, RenderMode::Quant, RenderMode::Vis, RenderMode::Reference];

    pub fn name(self) -> &'static str {
        match self {
            RenderMode::Reference => "reference",
            RenderMode::Packed => "packed",
            RenderMode::Vis => "vis",
            RenderMode::Culled => "culled",
            RenderMode::Quant => "quant",
        }
    }

    /// The passes of a frame in this mode with the plain look, in order, as [`FrameStats::passes`]
    /// names them ([`plan::passes`] gives them for any look).
    pub fn passes(self) -> &'static [&'static str] {
        match self {
            RenderMode::Reference => &["clear", "depth", "color"],
            RenderMode::Packed => &["clear", "packed", "resolve"],
            RenderMode::Vis => &["clear", "vis", "resolve"],
            RenderMode::Culled | RenderMode::Quant => &["clear", "draw1", "hzb", "draw2", "resolve"],
        }
    }

    /// Whether the mode reads the preprocessed (sorted, split, batched) points and a visibility buffer
    /// of (depth, point index) words.
    pub fn uses_batches(self) -> bool {
        matches!(self, RenderMode::Vis | RenderMode::Culled | RenderMode::Quant)
    }

    /// Whether the mode culls batches (and keeps their visibility from frame to frame).
    pub fn culls(self) -> bool {
        matches!(self, RenderMode::Culled | RenderMode::Quant)
    }

    /// The next mode after this one in [`RenderMode::CYCLE`] (for the window's mode key).
    pub fn next(self) -> RenderMode {
        let i = Self::CYCLE.iter().position(|&m| m == self).map_or(0, |i| i + 1);
        Self::CYCLE[i % Self::CYCLE.len()]
    }
}

/// How the batches of one frame went (the culled modes): outside the view, hidden (occlusion culling),
/// drawn from quantized words, drawn at full precision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchCounts {
    pub culled: u32,
    pub occluded: u32,
    pub quantized: u32,
    pub full: u32,
    /// Batches the culled modes' own filter dropped whole ([`Rasterizer::set_raster_filter`]).
    pub filtered: u32,
}

impl BatchCounts {
    pub fn add(&self, o: &BatchCounts) -> BatchCounts {
        BatchCounts {
            culled: self.culled + o.culled,
            occluded: self.occluded + o.occluded,
            quantized: self.quantized + o.quantized,
            full: self.full + o.full,
            filtered: self.filtered + o.filtered,
        }
    }

    /// Batches drawn.
    pub fn drawn(&self) -> u32 {
        self.quantized + self.full
    }
}

/// What one frame needs: the camera's matrix and planes, the viewport, the mode and the look.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameParams {
    pub clip_from_world: Mat4,
    pub width_px: u32,
    pub height_px: u32,
    pub mode: RenderMode,
    /// Point size, EDL and background.
    pub look: Look,
    /// The projection's near and far planes (EDL and adaptive sizes turn depth into view distance).
    pub near_m: f32,
    pub far_m: f32,
    /// The cloud's point spacing (adaptive point sizes; 0 when unknown).
    pub spacing_m: f32,
}

impl FrameParams {
    /// A frame in the reference mode with the prototype's look and planes (0.01, 100).
    pub fn new(clip_from_world: Mat4, width_px: u32, height_px: u32) -> Self {
        Self {
            clip_from_world,
            width_px,
            height_px,
            mode: RenderMode::Reference,
            look: Look::PLAIN,
            near_m: 0.01,
            far_m: 100.0,
            spacing_m: 0.0,
        }
    }

    /// The frame `camera` renders at this size: its `clip_from_world` and the planes it was made with
    /// (the post passes turn depth back into distance with them), in the reference mode with the
    /// plain look.
    pub fn of_camera(camera: &pcv_camera::Camera, width_px: u32, height_px: u32) -> Self {
        let d = camera.depth_range();
        Self::new(camera.clip_from_world(width_px, height_px), width_px, height_px).with_depth_range(d.near, d.far)
    }

    pub fn with_mode(self, mode: RenderMode) -> Self {
        Self { mode, ..self }
    }

    pub fn with_look(self, look: Look) -> Self {
        Self { look, ..self }
    }

    /// The projection's planes, as the camera made `clip_from_world`.
    pub fn with_depth_range(self, near_m: f32, far_m: f32) -> Self {
        Self { near_m, far_m, ..self }
    }

    /// The cloud's point spacing, for adaptive point sizes.
    pub fn with_spacing(self, spacing_m: f32) -> Self {
        Self { spacing_m, ..self }
    }

    /// The passes of this frame, in order.
    pub fn passes(&self) -> Vec<plan::Pass> {
        plan::passes(self.mode, &self.look)
    }

    /// The post passes' uniforms.
    pub fn post_uniforms(&self) -> PostUniforms {
        self.look.post_uniforms(
            &self.clip_from_world,
            self.width_px,
            self.height_px,
            self.near_m,
            self.far_m,
            self.spacing_m,
        )
    }

    pub fn num_pixels(&self) -> usize {
        self.width_px as usize * self.height_px as usize
    }

    /// The struct the kernels (and their CPU twins) read.
    pub fn uniforms(&self) -> FrameUniforms {
        let (bottom, top) = self.look.background.bottom_top();
        FrameUniforms {
            screen_from_world: screen_from_world(&self.clip_from_world, self.width_px, self.height_px),
            width: self.width_px,
            height: self.height_px,
            // Row 0 is the top row.
            clear_color: top,
            clear_color_last_row: bottom,
        }
    }
}

/// The viewport folded into `clip_from_world`: row 0 = (row 0 + row 3) · width / 2, row 1 =
/// (row 3 − row 1) · height / 2, row 2 = (row 2 + row 3) / 2, row 3 unchanged, computed in f64 and rounded once, so
/// that a point's pixel is row 0 / row 3 and its depth in [0, 1] row 2 / row 3 (column-major, as the
/// kernels read it). Row 1 is mirrored so that pixel rows count from the top (NDC y = 1 is row 0), as
/// every image library expects: frames are handed out with row 0 at the top and the window flips in
/// its blit.
pub fn screen_from_world(clip_from_world: &Mat4, width_px: u32, height_px: u32) -> [f32; 16] {
    let c = clip_from_world.to_cols_array().map(f64::from);
    let (hw, hh) = (width_px as f64 * 0.5, height_px as f64 * 0.5);
    let mut s = [0f32; 16];
    for col in 0..4 {
        let at = |r: usize| c[4 * col + r];
        s[4 * col] = ((at(0) + at(3)) * hw) as f32;
        s[4 * col + 1] = ((at(3) - at(1)) * hh) as f32;
        s[4 * col + 2] = ((at(2) + at(3)) * 0.5) as f32;
        s[4 * col + 3] = at(3) as f32;
    }
    s
}

/// Where a frame's colors go: RGBA8 words, row 0 at the top, `width × height` of them.
pub enum Target<'a> {
    /// Host memory.
    Host(&'a mut [u32]),
    /// Device memory (a CUDA device pointer, e.g. a mapped GL pixel buffer) of `len_px` words.
    Device { ptr: u64, len_px: usize },
}

impl Target<'_> {
    pub fn kind(&self) -> &'static str {
        match self {
            Target::Host(_) => "host",
            Target::Device { .. } => "device",
        }
    }

    pub fn len_px(&self) -> usize {
        match self {
            Target::Host(b) => b.len(),
            Target::Device { len_px, .. } => *len_px,
        }
    }
}

/// One pass's time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PassTime {
    pub name: &'static str,
    pub ms: f64,
}

/// What a frame cost. Pass times come from CUDA events on the CUDA backend and from the wall clock on
/// the CPU backend.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FrameStats {
    /// The frame plan's passes in order, each with its time; the CPU backend adds `merge` (its private
    /// buffers' merge, timed apart) right after the pass that holds it.
    pub passes: Vec<PassTime>,
    pub total_ms: f64,
    pub points: u64,
    /// Per-batch decisions of the culled modes (`culled`, `quant`).
    pub batches: Option<BatchCounts>,
}

impl FrameStats {
    pub fn pass_ms(&self, name: &str) -> Option<f64> {
        self.passes.iter().find(|p| p.name == name).map(|p| p.ms)
    }
}

/// What lies under a pixel of the last frame ([`Rasterizer::pick`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PickHit {
    /// The pixel the hit came from (row 0 at the top, as in the frame).
    pub pixel: (u32, u32),
    /// The point's position in the cloud's local coordinates.
    pub position: glam::Vec3,
    /// Its index in the uploaded cloud (`PointCloud::points` order), where the mode knows which point
    /// won the pixel (every mode but `reference` and `packed`, which keep only depth and color).
    pub point_index: Option<u64>,
    /// Its depth in [0, 1] (the depth buffer's value).
    pub depth: f32,
}

/// Level of detail's node pool (`pcv-lod`): points for a run of consecutive batch slots, from
/// `first_slot` on, slot `first_slot + k` holding points `k * BATCH_POINTS ..` of the slices (the last
/// slot may be partly filled). The batches' boxes come separately ([`Rasterizer::set_slot_batches`]).
#[derive(Clone, Copy, Debug)]
pub struct SlotWrite<'a> {
    pub first_slot: u32,
    pub positions: &'a [[f32; 3]],
    pub colors: &'a [u32],
    pub quant: &'a [u32],
}

impl SlotWrite<'_> {
    /// Slots the write covers.
    pub fn num_slots(&self) -> u32 {
        self.positions.len().div_ceil(gpu_data::BATCH_POINTS as usize) as u32
    }
}

fn no_pool(backend: &str) -> RenderError {
    RenderError::ModeUnavailable { mode: "level of detail", reason: format!("the {backend} backend has no node pool") }
}

/// A point rasterizer: the CPU backend and the CUDA backend implement it.
pub trait Rasterizer {
    /// Short name for the overlay and reports: "cpu" or "cuda".
    fn name(&self) -> &'static str;
    /// A longer description (device name, thread count).
    fn description(&self) -> String;
    /// Makes `cloud` the points that [`Rasterizer::render`] draws (a GPU backend copies them to the device).
    fn upload(&mut self, cloud: &PointCloud) -> Result<(), RenderError>;
    /// Renders one frame into `target`, which holds `frame.width_px × frame.height_px` words.
    fn render(&mut self, frame: &FrameParams, target: Target<'_>) -> Result<FrameStats, RenderError>;
    /// Number of points uploaded.
    fn num_points(&self) -> u64;
    /// How long the last upload's preprocessing (spatial sort, split, batches, quantization) took, in ms.
    fn preprocess_ms(&self) -> Option<f64> {
        None
    }
    /// The nearest point of the last frame within `radius_px` pixels of pixel (`x_px`, `y_px`) (row 0 at
    /// the bottom), or `None` where no point was drawn there. Reads back a few words, not the frame.
    fn pick(&mut self, _x_px: u32, _y_px: u32, _radius_px: u32) -> Result<Option<PickHit>, RenderError> {
        Ok(None)
    }
    /// The CUDA context and stream this backend draws with (`None` off CUDA; on several GPUs, the
    /// window GPU's): what the window's pixel buffer is registered with for CUDA-GL interop
    /// ([`cuda::interop`]), and what callers order their own device work against (Python's arrays).
    fn cuda_handle(&self) -> Option<cuda::CudaHandle> {
        None
    }
    /// What the device (on several GPUs, the window GPU) can take now: its free memory and the points
    /// that fit it (`None` where there is no device). Level of detail's default budget reads it.
    fn device_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        None
    }
    /// The device's copy bandwidth, best of `repeats` device-to-device copies of `bytes` bytes (read +
    /// write counted), in GB/s; `None` where there is no device.
    fn measure_copy_gb_per_s(&self, _bytes: usize, _repeats: u32) -> Option<Result<f64, RenderError>> {
        None
    }
    /// The last frame's final depth read back from the device, as float bits (the reference's depth
    /// buffer, or the visibility buffer's high halves); `None` where there is no device.
    fn device_depth_bits(&self) -> Option<Result<Vec<u32>, RenderError>> {
        None
    }
    /// Whether the culled modes of this backend can apply a filter themselves
    /// ([`Rasterizer::set_raster_filter`]) to a cloud uploaded whole.
    fn raster_filters(&self) -> bool {
        false
    }

    /// Has the culled modes apply `filter` ([`filter::uniforms_with`]: hidden classes, returns, value
    /// ranges, clip volumes) to the points uploaded: batches no point of which passes are skipped like
    /// batches outside the view, the others tested point by point, with nothing uploaded again.
    /// `columns` makes a column of the uploaded points ([`filter::FilterColumn`], upload order), called
    /// only for the columns the filter tests and the backend does not hold yet (a streamed upload may
    /// have brought the class codes); `None`, or a column of another length than the points uploaded,
    /// is refused (`false`). `None` removes the filter. Returns whether the backend now draws with
    /// exactly this filter; `false` (the default for a filter, and for tables the backend cannot
    /// filter): the caller filters the points before uploading them. A filter set stays until the next
    /// upload; the other modes refuse to draw while it is set.
    fn set_raster_filter(
        &mut self,
        filter: Option<&gpu_data::FilterUniforms>,
        _columns: &dyn Fn(filter::FilterColumn) -> Option<filter::ColumnData>,
    ) -> Result<bool, RenderError> {
        Ok(filter.is_none())
    }

    /// The uploaded points copied back from the device (a scene the GPU made, for the bench's peer);
    /// `None` where there is no device.
    fn device_points(&self) -> Option<Result<Vec<Point>, RenderError>> {
        None
    }
    /// Shows Python's (or any producer's) device arrays in place of uploaded points until the next
    /// upload or show, keeping `keepalive` (what owns them) until then; returns their finite points'
    /// box. Backends without a device refuse ([`RenderError::UnsupportedTarget`]).
    ///
    /// # Safety
    /// As [`cuda::CudaRasterizer::show_external`]: `keepalive` must keep the arrays allocated, and their
    /// producers must order writes that race with rendering themselves.
    unsafe fn show_external(
        &mut self,
        _points: external::ExternalPoints,
        _keepalive: Box<dyn std::any::Any + Send>,
    ) -> Result<pcv_io::Bounds, RenderError> {
        Err(RenderError::UnsupportedTarget { backend: self.name(), target: "device array" })
    }
    /// Level of detail: replaces the uploaded points by a pool of `slots` empty batch slots of
    /// `BATCH_POINTS` points each (positions, colours, quantized words; 20 bytes a point), drawn by the
    /// culled modes from the batch table [`Rasterizer::set_slot_batches`] sets.
    fn reserve_slots(&mut self, _slots: u32) -> Result<(), RenderError> {
        Err(no_pool(self.name()))
    }
    /// Fills runs of the pool's slots (one node's). Returns the write's fence: a backend that copies in
    /// the background (CUDA: a copy stream) numbers its writes 1, 2, ... and the slots hold the points
    /// once [`Rasterizer::slot_writes_done`] has reached that number; one that copies before returning
    /// (the CPU) returns 0.
    fn write_slots(&mut self, _writes: &[SlotWrite<'_>]) -> Result<u64, RenderError> {
        Err(no_pool(self.name()))
    }
    /// The last fence of [`Rasterizer::write_slots`] whose copies are complete (never waits). Backends
    /// that copy before returning: every write is complete.
    fn slot_writes_done(&mut self) -> Result<u64, RenderError> {
        Ok(u64::MAX)
    }
    /// Sets the pool's batch table: one batch per slot, zero points for a slot not drawn. The table
    /// draws slots filled by writes up to fence `after_write`: frames drawn with it wait for those
    /// copies (on the device; callers that draw only completed writes never make them wait).
    fn set_slot_batches(&mut self, _batches: &[gpu_data::Batch], _after_write: u64) -> Result<(), RenderError> {
        Err(no_pool(self.name()))
    }
    /// Sets the pool's point spacing per slot (metres; its node's): adaptive point sizes then size each
    /// point by its own batch's spacing instead of the frame's one spacing.
    fn set_slot_spacing(&mut self, _spacing_m: &[f32]) -> Result<(), RenderError> {
        Err(no_pool(self.name()))
    }
    /// Device memory in use on the whole device now, in bytes (`None` where there is no device).
    fn device_memory_used_bytes(&self) -> Option<u64> {
        None
    }
    /// What a streamed load can put on the device(s) (`None`: the backend takes host clouds only).
    fn stream_capacity(&self) -> Option<Result<pcv_io::device::Capacity, RenderError>> {
        None
    }
    /// The largest host cloud (bytes) a caller should load before uploading to this backend; larger
    /// files go through [`Self::stream_capacity`]'s streaming (`None`: the caller's own budget).
    fn host_copy_budget_bytes(&self) -> Option<u64> {
        None
    }
}

/// Checks that a level-of-detail pool's batch table of `batches` batches fits its `slots` slots (one
/// batch per slot), for every backend's `set_slot_batches`.
pub fn check_pool_table(batches: usize, slots: usize) -> Result<(), RenderError> {
    if batches == slots {
        return Ok(());
    }
    Err(RenderError::ModeUnavailable {
        mode: "level of detail",
        reason: format!("a table of {batches} batches for a pool of {slots} slots"),
    })
}

/// Checks a pool write against a pool of `slots` slots.
pub fn check_slot_write(w: &SlotWrite<'_>, slots: u32) -> Result<(), RenderError> {
    let n = w.positions.len();
    let end = w.first_slot as u64 + w.num_slots() as u64;
    if w.colors.len() != n || w.quant.len() != n || end > slots as u64 {
        return Err(RenderError::ModeUnavailable {
            mode: "level of detail",
            reason: format!(
                "a write of {n} positions, {} colours and {} words into slots {}..{end} of a pool of {slots}",
                w.colors.len(),
                w.quant.len(),
                w.first_slot
            ),
        });
    }
    Ok(())
}

/// Which backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum BackendChoice {
    /// CUDA when a driver and a device exist, else the CPU.
    Auto,
    Cpu,
    Cuda,
}

/// Makes the backend asked for. `Auto` falls back to the CPU and returns why in the second value.
pub fn make_rasterizer(choice: BackendChoice) -> Result<(Box<dyn Rasterizer>, Option<String>), RenderError> {
    match choice {
        BackendChoice::Cpu => Ok((Box::new(cpu::CpuRasterizer::new()), None)),
        BackendChoice::Cuda => Ok((Box::new(cuda::CudaRasterizer::new()?), None)),
        BackendChoice::Auto => match cuda::CudaRasterizer::new() {
            Ok(r) => Ok((Box::new(r), None)),
            Err(e) => Ok((Box::new(cpu::CpuRasterizer::new()), Some(e.to_string()))),
        },
    }
}
