//! Every kernel the host launches, in one table, and the typed launchers generated from it.
//!
//! How it works: each line of the [`kernels!`] table names a kernel (its [`Kernel`] variant, the
//! launcher's name, `kernels/<module>.cu` and the entry point), its exact parameter list, and its grid
//! rule. The macro generates the [`Kernel`] enum, [`LAUNCHED_KERNELS`] (module, entry and each
//! parameter's size, which `tests/ptx.rs` checks against the PTX's `.param` list) and one `unsafe fn`
//! per kernel that takes the [`KernelTable`], a stream and the arguments, builds the `void*` array
//! `cuLaunchKernel` reads, and enqueues it. Grid rules (every kernel is a grid-stride loop, so any grid
//! covers all items): [`per_item`] launches one 256-thread block per 256 items, [`per_batch`] one block
//! per batch, [`per_tile`] one block per 16 × 16 pixel tile, each capped at [`GRID_WAVES`] times the
//! blocks the device holds at once (SMs × occupancy, from `modules.rs`), so large passes get a few full
//! waves of threads that loop.
//!
//! The launchers are `unsafe`: the caller promises that every device pointer covers what the kernel
//! touches with the other arguments (each line's doc says what), and states it in a `// SAFETY:` line.
use super::context::cuda_error;
use super::modules::{Function, KernelTable, BLOCK_SIZE};
use crate::gpu_data::{FilterColumns, FilterUniforms, FrameUniforms, GridParams, HzbParams, PostUniforms, SceneParams};
use crate::RenderError;
use cudarc::driver::{result, sys, CudaStream};
use std::ffi::c_void;

/// A device address.
pub type Ptr = sys::CUdeviceptr;

/// Full device waves a launch may use before threads start looping.
pub const GRID_WAVES: u32 = 2;

/// A kernel the host launches: `kernels/<module>.cu`, entry point `entry`, and the size in bytes of each
/// of its parameters, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelEntry {
    pub module: &'static str,
    pub entry: &'static str,
    pub param_bytes: &'static [usize],
}

fn cap(f: Function) -> u64 {
    f.resident_blocks.saturating_mul(GRID_WAVES).max(1) as u64
}

/// Blocks for a grid-stride pass over `items` items.
pub fn per_item(f: Function, items: u64) -> u32 {
    items.div_ceil(BLOCK_SIZE as u64).clamp(1, cap(f)) as u32
}

/// Blocks for a pass with one block per batch (grid-stride over batches).
pub fn per_batch(f: Function, num_batches: u32) -> u32 {
    (num_batches as u64).clamp(1, cap(f)) as u32
}

/// One block (a kernel that loops over all its work in one block).
pub fn single(_f: Function, _: ()) -> u32 {
    1
}

/// Blocks for a pass with one block per 16 × 16 pixel tile of a `(width, height)` frame.
pub fn per_tile(f: Function, (width_px, height_px): (u32, u32)) -> u32 {
    const _: () = assert!(BLOCK_SIZE == 256, "the tiled kernels run 16 x 16 threads a block");
    let tiles = (width_px as u64).div_ceil(16) * (height_px as u64).div_ceil(16);
    tiles.clamp(1, cap(f)) as u32
}

fn arg<T>(v: &mut T) -> *mut c_void {
    (v as *mut T).cast()
}

/// Enqueues `f` with `params` (pointers to each argument, in the kernel's order).
///
/// # Safety
/// `params` must match the kernel's parameter list in number, order and type, and every device pointer
/// among them must be valid for every access the kernel makes with the other arguments.
unsafe fn launch(
    f: Function,
    blocks: u32,
    stream: &CudaStream,
    params: &mut [*mut c_void],
    entry: &str,
) -> Result<(), RenderError> {
    stream.context().bind_to_thread().map_err(cuda_error("cuCtxSetCurrent"))?;
    // SAFETY: forwarded from this function's contract; the grid is at least 1 block of BLOCK_SIZE
    // threads (within every device's limits), no dynamic shared memory, and the stream is live.
    unsafe { result::launch_kernel(f.raw, (blocks, 1, 1), (BLOCK_SIZE, 1, 1), 0, stream.cu_stream(), params) }
        .map_err(cuda_error(format!("launching {entry} ({blocks} blocks of {BLOCK_SIZE})")))
}

macro_rules! kernels {
    ($(
        $(#[$doc:meta])*
        $variant:ident $fname:ident = $module:literal :: $entry:literal ( $($arg:ident : $ty:ty),* $(,)? )
            grid $rule:ident ( $n:expr );
    )*) => {
        /// The kernels the CUDA backend launches, in [`LAUNCHED_KERNELS`]' order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Kernel { $($variant),* }

        impl Kernel {
            pub const ALL: &'static [Kernel] = &[$(Kernel::$variant),*];

            pub fn entry(self) -> KernelEntry {
                LAUNCHED_KERNELS[self as usize]
            }
        }

        /// Every kernel the host launches; `tests/ptx.rs` checks each is an `.entry` of the embedded PTX
        /// with parameters of these sizes.
        pub const LAUNCHED_KERNELS: &[KernelEntry] = &[
            $(KernelEntry { module: $module, entry: $entry, param_bytes: &[$(std::mem::size_of::<$ty>()),*] }),*
        ];

        $(
            #[doc = concat!("`", $entry, "` of `kernels/", $module, ".cu`.")]
            ///
            /// # Safety
            $(#[$doc])*
            #[allow(clippy::too_many_arguments, reason = "one argument per kernel parameter, as the .cu file declares them")]
            pub unsafe fn $fname(table: &KernelTable, stream: &CudaStream, $($arg: $ty),*) -> Result<(), RenderError> {
                let func = table.get(Kernel::$variant);
                let blocks = $rule(func, $n);
                $(let mut $arg = $arg;)*
                // SAFETY: the arguments are the kernel's, in its order and types (the table line is
                // checked against the PTX by tests/ptx.rs); their extents are this function's contract.
                unsafe { launch(func, blocks, stream, &mut [$(arg(&mut $arg)),*], $entry) }
            }
        )*
    };
}

kernels! {
    /// `depth` and `color` hold `f.width * f.height` words each.
    Clear clear = "clear"::"pcv_clear"(f: FrameUniforms, depth: Ptr, color: Ptr) grid per_item(f.width as u64 * f.height as u64);
    /// `points` holds `num_points` points and `depth` `f.width * f.height` words, both sides non-zero.
    Depth depth = "depth"::"pcv_depth"(f: FrameUniforms, points: Ptr, num_points: u64, depth: Ptr) grid per_item(num_points);
    /// As `depth`, and `color` holds `f.width * f.height` words.
    Color color = "color"::"pcv_color"(f: FrameUniforms, points: Ptr, num_points: u64, depth: Ptr, color: Ptr)
        grid per_item(num_points);
    /// `cylinders` holds `s.num_cylinders` cylinders (at least one when `s.num_points > 0`), `points` room
    /// for `count` points, and `first + count <= s.num_points`.
    Scene scene = "scene"::"pcv_scene"(s: SceneParams, cylinders: Ptr, points: Ptr, first: u64, count: u64) grid per_item(count);
    /// `vis` holds `f.width * f.height` u64 words.
    PackedClear packed_clear = "packed"::"pcv_packed_clear"(f: FrameUniforms, vis: Ptr) grid per_item(f.width as u64 * f.height as u64);
    /// `points` holds `num_points` points and `vis` `f.width * f.height` u64 words, both sides non-zero.
    Packed packed = "packed"::"pcv_packed"(f: FrameUniforms, points: Ptr, num_points: u64, vis: Ptr) grid per_item(num_points);
    /// `vis` holds `f.width * f.height` u64 words and `color` as many u32 words.
    PackedResolve packed_resolve = "packed"::"pcv_packed_resolve"(f: FrameUniforms, vis: Ptr, color: Ptr)
        grid per_item(f.width as u64 * f.height as u64);
    /// `points` holds `g.num_points` points and `hist` `2^(3 * g.bits)` words (`g.bits` ≤ 10).
    CellHist cell_hist = "preprocess"::"pcv_cell_hist"(g: GridParams, points: Ptr, hist: Ptr) grid per_item(g.num_points);
    /// `src` and `dst` hold `g.num_points` points each, `order` as many words, and `cursor`
    /// `2^(3 * g.bits)` words holding the exclusive scan of `pcv_cell_hist`'s counts for these very
    /// points (so every slot is below `g.num_points`).
    CellScatter cell_scatter = "preprocess"::"pcv_cell_scatter"(g: GridParams, src: Ptr, cursor: Ptr, dst: Ptr, order: Ptr)
        grid per_item(g.num_points);
    /// `points` holds `num_points` points, `positions` `3 * num_points` floats, `colors` `num_points` words.
    Split split = "preprocess"::"pcv_split"(num_points: u64, points: Ptr, positions: Ptr, colors: Ptr) grid per_item(num_points);
    /// `positions` holds `3 * num_points` floats and `batches` `num_batches` batches, with
    /// `num_batches == ceil(num_points / BATCH_POINTS)`. The kernel reduces over exactly 256 threads.
    BatchBounds batch_bounds = "preprocess"::"pcv_batch_bounds"(num_points: u64, positions: Ptr, batches: Ptr, num_batches: u32)
        grid per_batch(num_batches);
    /// `positions` holds `3 * num_points` floats, `batches` `ceil(num_points / BATCH_POINTS)` batches and
    /// `quant` `num_points` words.
    Quantize quantize = "preprocess"::"pcv_quantize"(num_points: u64, positions: Ptr, batches: Ptr, quant: Ptr) grid per_item(num_points);
    /// `vis` holds `f.width * f.height` u64 words.
    VisClear vis_clear = "vis"::"pcv_vis_clear"(f: FrameUniforms, vis: Ptr) grid per_item(f.width as u64 * f.height as u64);
    /// `positions` holds `3 * num_points` floats with `num_points < 2^32 - 1`, and `vis`
    /// `f.width * f.height` u64 words, both non-zero.
    Vis vis = "vis"::"pcv_vis"(f: FrameUniforms, positions: Ptr, num_points: u64, vis: Ptr) grid per_item(num_points);
    /// As `vis`.
    VisDisk vis_disk = "vis"::"pcv_vis_disk"(f: FrameUniforms, u: PostUniforms, positions: Ptr, num_points: u64, vis: Ptr)
        grid per_item(num_points);
    /// `vis` and `color` hold `f.width * f.height` words each, and every index in `vis` other than
    /// 0xffffffff is below the length of `colors`.
    VisResolve vis_resolve = "vis"::"pcv_vis_resolve"(f: FrameUniforms, vis: Ptr, colors: Ptr, color: Ptr)
        grid per_item(f.width as u64 * f.height as u64);
    /// `batches` and `visible` hold `num_batches` batches and bytes, `list` room for `num_batches` words
    /// and `counters` `counter::COUNT` words.
    CullPhase1 cull_phase1 = "culled"::"pcv_cull_phase1"(f: FrameUniforms, batches: Ptr, num_batches: u32, visible: Ptr, list: Ptr, counters: Ptr)
        grid per_item(num_batches as u64);
    /// As `cull_phase1`, and `hzb` holds `h.total` words of `h`'s pyramid for this frame's size.
    CullPhase2 cull_phase2 = "culled"::"pcv_cull_phase2"(
        f: FrameUniforms, h: HzbParams, batches: Ptr, num_batches: u32, visible: Ptr, hzb: Ptr, list: Ptr, counters: Ptr
    ) grid per_item(num_batches as u64);
    /// `list` holds `*count` batch indices below the length of `batches` (`count` points into
    /// `counters`, which holds `counter::COUNT` words); those batches' points (batch b from point
    /// `b * BATCH_POINTS`, `num_points` of them) have 3 floats each in `positions` (fewer than 2^32 - 1
    /// points) and one word each in `quant`; `vis` holds `f.width * f.height` u64 words; `num_batches` is
    /// the length of `batches`.
    RasterList raster_list = "culled"::"pcv_raster_list"(
        f: FrameUniforms, batches: Ptr, list: Ptr, count: Ptr, positions: Ptr, quant: Ptr, vis: Ptr, counters: Ptr, num_batches: u32
    ) grid per_batch(num_batches);
    /// As `raster_list`.
    RasterListQuant raster_list_quant = "culled"::"pcv_raster_list_quant"(
        f: FrameUniforms, batches: Ptr, list: Ptr, count: Ptr, positions: Ptr, quant: Ptr, vis: Ptr, counters: Ptr, num_batches: u32
    ) grid per_batch(num_batches);
    /// As `cull_phase1`, and `fc` holds the addresses of the columns `fu` tests (`num_batches`
    /// summaries each; `DeviceColumns::addresses`), the others unread.
    CullPhase1Filtered cull_phase1_filtered = "culled"::"pcv_cull_phase1_filtered"(
        f: FrameUniforms, fu: FilterUniforms, fc: FilterColumns, batches: Ptr, num_batches: u32, visible: Ptr, list: Ptr, counters: Ptr
    ) grid per_item(num_batches as u64);
    /// As `cull_phase2`, and `fc` as in `cull_phase1_filtered`.
    CullPhase2Filtered cull_phase2_filtered = "culled"::"pcv_cull_phase2_filtered"(
        f: FrameUniforms, fu: FilterUniforms, fc: FilterColumns, h: HzbParams, batches: Ptr, num_batches: u32, visible: Ptr,
        hzb: Ptr, list: Ptr, counters: Ptr
    ) grid per_item(num_batches as u64);
    /// As `raster_list`, and `fc` as in `cull_phase1_filtered`, its per-point columns covering every
    /// point of those batches.
    RasterListFiltered raster_list_filtered = "culled"::"pcv_raster_list_filtered"(
        f: FrameUniforms, fu: FilterUniforms, fc: FilterColumns, batches: Ptr, list: Ptr, count: Ptr,
        positions: Ptr, quant: Ptr, vis: Ptr, counters: Ptr, num_batches: u32, use_quant: u32
    ) grid per_batch(num_batches);
    /// `order` holds `num_points` words, each below the length of `src` (bytes); `dst` holds `num_points` bytes.
    GatherClasses gather_classes = "classes"::"pcv_gather_classes"(num_points: u64, order: Ptr, src: Ptr, dst: Ptr)
        grid per_item(num_points);
    /// `classes` holds `num_points` bytes and `out` `num_batches` class sets, with
    /// `num_batches == ceil(num_points / BATCH_POINTS)`.
    BatchClassSets batch_class_sets = "classes"::"pcv_batch_classes"(num_points: u64, num_batches: u32, classes: Ptr, out: Ptr)
        grid per_batch(num_batches);
    /// `batches` holds `num_batches` batches whose points have 3 floats each in `positions`; `fc` as in
    /// `cull_phase1_filtered`; with `kept` 0, `counts` holds `num_batches` words; else `first` holds
    /// `num_batches + 1` offsets, the sums of those counts, and `kept` `first[num_batches]` u16 slots.
    KeptLists kept_lists = "kept"::"pcv_kept_lists"(
        fu: FilterUniforms, fc: FilterColumns, batches: Ptr, num_batches: u32, positions: Ptr, counts: Ptr, first: Ptr, kept: Ptr
    ) grid per_batch(num_batches);
    /// `order` holds `num_points` words, each below the length of `src` (floats); `dst` holds `num_points` floats.
    GatherValues gather_values = "ranges"::"pcv_gather_values"(num_points: u64, order: Ptr, src: Ptr, dst: Ptr)
        grid per_item(num_points);
    /// `values` holds `num_points` floats and `out` `num_batches` summaries, with
    /// `num_batches == ceil(num_points / BATCH_POINTS)`.
    BatchRanges batch_ranges = "ranges"::"pcv_batch_ranges"(num_points: u64, num_batches: u32, values: Ptr, out: Ptr)
        grid per_batch(num_batches);
    /// `words` holds `width * height` u64 words and `hzb` `h.total` words, `h` being the pyramid of a
    /// `width × height` frame.
    HzbTiles hzb_tiles = "hzb"::"pcv_hzb_tiles"(h: HzbParams, width: u32, height: u32, words: Ptr, hzb: Ptr)
        grid per_tile((width, height));
    /// `hzb` holds `h.total` words whose level 0 is built.
    HzbUp hzb_up = "hzb"::"pcv_hzb_up"(h: HzbParams, hzb: Ptr) grid single(());
    /// `vis` and `out` hold `u.width * u.height` u64 words each and do not overlap; `spacing` is 0, or
    /// holds `num_batches` floats and the words' payloads are point indices.
    Splat splat = "splat"::"pcv_splat"(u: PostUniforms, vis: Ptr, out: Ptr, spacing: Ptr, num_batches: u32) grid per_tile((u.width, u.height));
    /// `depth` and `color` hold `u.width * u.height` u32 words, `out` as many u64 words (not overlapping).
    SplatRef splat_ref = "splat"::"pcv_splat_ref"(u: PostUniforms, depth: Ptr, color: Ptr, out: Ptr) grid per_tile((u.width, u.height));
    /// `depth` and `color` hold `u.width * u.height` u32 words.
    Edl edl = "edl"::"pcv_edl"(u: PostUniforms, depth: Ptr, color: Ptr) grid per_item(u.width as u64 * u.height as u64);
    /// `words` holds `u.width * u.height` u64 words and `color` as many u32 words.
    EdlWords edl_words = "edl"::"pcv_edl_words"(u: PostUniforms, words: Ptr, color: Ptr)
        grid per_item(u.width as u64 * u.height as u64);
    /// Point `i < num_points`'s coordinates are the f32 at `positions + i * row + k * col`, k < 3, all inside
    /// readable device memory (4-byte aligned), with `num_points < 2^34 - 1`; `vis` holds `f.width * f.height`
    /// u64 words.
    VisStrided vis_strided = "external"::"pcv_vis_strided"(f: FrameUniforms, positions: Ptr, row: i64, col: i64, num_points: u64, vis: Ptr)
        grid per_item(num_points);
    /// `vis` and `color` hold `f.width * f.height` words each; for every index `i` in `vis` other than
    /// the empty payload, colour `i` of format `kind` (`PCV_COLOR_*`) at `colors + i * row (+ c * col)` is readable
    /// (nothing is read for `kind` 0, the constant).
    ExtResolve ext_resolve = "external"::"pcv_ext_resolve"(
        f: FrameUniforms, vis: Ptr, colors: Ptr, row: i64, col: i64, kind: u32, constant: u32, color: Ptr
    ) grid per_item(f.width as u64 * f.height as u64);
    /// As `vis_strided` for `positions`, and `packed` holds `3 * num_points` floats.
    PackPositions pack_positions = "external"::"pcv_pack_positions"(num_points: u64, positions: Ptr, row: i64, col: i64, packed: Ptr)
        grid per_item(num_points);
    /// As `vis_strided` for `positions`, and `keys` holds 6 words. The kernel reduces over exactly 256 threads.
    ExtBounds ext_bounds = "external"::"pcv_ext_bounds"(num_points: u64, positions: Ptr, row: i64, col: i64, keys: Ptr)
        grid per_item(num_points);
    /// `depth` holds `num_pixels` u32 words (`words` 0) or u64 words (`words` 1) and `out` `num_pixels` u32 words.
    DepthOut depth_out = "external"::"pcv_depth_out"(num_pixels: u64, depth: Ptr, words: u32, out: Ptr) grid per_item(num_pixels);
    /// `words` holds `n` u64 words.
    WordsOffset words_offset = "composite"::"pcv_words_offset"(n: u64, words: Ptr, first: u64) grid per_item(n);
    /// `dst` and `src` hold `n` u64 words each.
    WordsMin words_min = "composite"::"pcv_words_min"(n: u64, dst: Ptr, src: Ptr) grid per_item(n);
    /// `vis` and `out` hold `f.width * f.height` u64 words each and `colors` `count` words.
    WordsGather words_gather = "composite"::"pcv_words_gather"(
        f: FrameUniforms, vis: Ptr, colors: Ptr, first: u64, count: u64, init: u32, out: Ptr
    ) grid per_item(f.width as u64 * f.height as u64);
    /// `accum` holds `2 * f.width * f.height` u64 words.
    BlendClear blend_clear = "blend"::"pcv_blend_clear"(f: FrameUniforms, accum: Ptr) grid per_item(2 * f.width as u64 * f.height as u64);
    /// `positions` holds `3 * num_points` floats and `colors` `num_points` words (`num_points` non-zero,
    /// below 2^34 - 1); `vis` holds `f.width * f.height` u64 words and `accum` twice as many.
    Blend blend = "blend"::"pcv_blend"(f: FrameUniforms, u: PostUniforms, positions: Ptr, num_points: u64, colors: Ptr, vis: Ptr, accum: Ptr)
        grid per_item(num_points);
    /// `vis` and `color` hold `f.width * f.height` words each, `accum` twice as many u64 words, and every
    /// index in `vis` other than the empty payload is below the length of `colors`.
    BlendResolve blend_resolve = "blend"::"pcv_blend_resolve"(f: FrameUniforms, vis: Ptr, colors: Ptr, accum: Ptr, color: Ptr)
        grid per_item(f.width as u64 * f.height as u64);
    /// As `cull_phase2` (no `visible`; `hzb` the pyramid of the frame's final buffer).
    BlendCull blend_cull = "culled"::"pcv_blend_cull"(
        f: FrameUniforms, u: PostUniforms, h: HzbParams, batches: Ptr, num_batches: u32, hzb: Ptr, list: Ptr, counters: Ptr
    ) grid per_item(num_batches as u64);
    /// As `blend_cull`, and `fc` as in `cull_phase1_filtered`.
    BlendCullFiltered blend_cull_filtered = "culled"::"pcv_blend_cull_filtered"(
        f: FrameUniforms, u: PostUniforms, fu: FilterUniforms, fc: FilterColumns, h: HzbParams, batches: Ptr, num_batches: u32,
        hzb: Ptr, list: Ptr, counters: Ptr
    ) grid per_item(num_batches as u64);
    /// As `raster_list` (no `counters`), `colors` holding a word per point and `accum`
    /// `2 * f.width * f.height` u64 words.
    BlendList blend_list = "culled"::"pcv_blend_list"(
        f: FrameUniforms, u: PostUniforms, batches: Ptr, list: Ptr, count: Ptr, positions: Ptr, quant: Ptr, colors: Ptr,
        vis: Ptr, accum: Ptr, num_batches: u32, use_quant: u32
    ) grid per_batch(num_batches);
    /// As `blend_list`, and `fc` as in `raster_list_filtered`.
    BlendListFiltered blend_list_filtered = "culled"::"pcv_blend_list_filtered"(
        f: FrameUniforms, u: PostUniforms, fu: FilterUniforms, fc: FilterColumns, batches: Ptr, list: Ptr, count: Ptr,
        positions: Ptr, quant: Ptr, colors: Ptr, vis: Ptr, accum: Ptr, num_batches: u32, use_quant: u32
    ) grid per_batch(num_batches);
}
