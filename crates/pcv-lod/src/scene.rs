//! A level-of-detail scene: one or many octrees (tiles) drawn as one cloud, streamed under a point
//! budget.
//!
//! How it works: [`LodScene::open`] takes the tiles' [`NodeSource`]s and puts them in one scene whose
//! common origin (f64) is the centre of all their points' bounds, so every tile's points are f32
//! offsets from one place, as loaded files are. Each frame, [`LodScene::update`]:
//! 1. selects the nodes of every tile at once ([`select`]) under the point budget and the pool's
//!    slots;
//! 2. tells the loader which selected nodes are missing, best first ([`Loader::want`]);
//! 3. takes the nodes the loader finished and writes them into free slots of the rasterizer's pool
//!    (evicting least recently used nodes that are not selected, with their descendants), for at most
//!    `upload_ms_per_frame` of the frame's host time, so a frame never waits for the disk or the
//!    network. On CUDA a write only stages the points in pinned memory and enqueues their copy on a
//!    copy stream (`pcv_render::cuda::slot_upload`): the slice is the staging's memcpy, and the copy runs
//!    beside the frames. Each write has a fence; a node is drawn only once the rasterizer says its
//!    fence is complete ([`Rasterizer::slot_writes_done`], polled), and the batch table tells the
//!    rasterizer the last fence it draws so the frame orders itself after those copies on the device;
//! 4. draws the selected nodes that are resident, copied, and whose parent is drawn: while refining, the coarse
//!    nodes already there cover the view and children appear over them (COPC nodes add detail to their
//!    parents, so nothing is taken away and no hole opens); the batch table goes to the rasterizer only
//!    when it changed. A node that failed to read or decode is never asked for again and counts as
//!    drawn for its children, so a damaged node leaves out its own points only ([`LodScene::errors`]).
//!
//! Point size per node: adaptive point sizes use a spacing per pool slot ([`Rasterizer::set_slot_spacing`],
//! set with the batch table), so each point is sized by where it lies ([`effective_depth`]): a batch
//! of a node whose box lies wholly in drawn children takes the spacing of the deepest level drawn there
//! (its points interleave with theirs), any other the node's own, so coarse areas get large points and
//! look closed while refined ones stay sharp. [`LodStatus::spacing_m`] (the drawn leaves' spacing
//! weighted by their points) remains the frame's one spacing, for rasterizers without per-slot spacing.
use super::loader::{Loaded, Loader, Request};
use super::pool::NodePool;
use super::select::{select, slots_for, Hierarchy, NodeId, SelectOptions, SelectView, Selection};
use glam::{DVec3, Vec3};
use pcv_camera::lens::FOV_Y_RAD;
use pcv_io::attributes::{ColorMode, ColorSpec, Column, Field, FieldLook, FieldSet};
use pcv_io::filter::PointFilter;
use pcv_io::octree::NodeSource;
use pcv_io::{Bounds, PointCloud};
use pcv_render::gpu_data::BATCH_POINTS;
use pcv_render::{FrameParams, Rasterizer, RenderError, RenderMode, SlotWrite};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

/// A drawn point found again in its node ([`LodScene::point_at`]), with what its file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct NodePoint {
    /// The tile's source (a COPC file's path or URL).
    pub source: String,
    pub key: pcv_io::octree::NodeKey,
    /// Its place in the node's points.
    pub index: usize,
    /// Its local position as read.
    pub local: Vec3,
    pub intensity: Option<f32>,
    pub classification: Option<u8>,
    /// The other fields its file holds (GPS time, returns, ...), by name.
    pub fields: Vec<(Field, f64)>,
    /// The file's colour, where the source has colours.
    pub rgb: Option<[u8; 3]>,
}

/// The default budget on the CUDA backend: half the free device memory at 20 bytes a point (the pool's
/// positions, colours and quantized words), at most this many points.
pub const MAX_DEFAULT_BUDGET_CUDA: u64 = 200_000_000;
/// The default budget on the CPU backend (it draws about this many points at interactive rates on a
/// few cores).
pub const DEFAULT_BUDGET_CPU: u64 = 4_000_000;
/// Pool slots per slot the budget's points fill (the rest caches nodes).
pub const SLOTS_PER_BUDGET_SLOT: f64 = 1.25;

/// How the scene streams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LodOptions {
    /// Points drawn at most.
    pub point_budget: u64,
    /// Refine a node while its points are more than this many pixels apart on screen.
    pub target_spacing_px: f32,
    /// Host time a frame may spend writing loaded nodes into the pool, at most (one node at least).
    pub upload_ms_per_frame: f64,
    /// Loader threads (reading, decoding and cutting nodes into batches).
    pub threads: usize,
}

impl LodOptions {
    /// The defaults with `point_budget`: refine to 1 px, 4 ms of uploads a frame (host time: on CUDA the
    /// staging of the copies), a loader thread a core but one (the render thread's; at least one).
    /// `PCV_LOD_UPLOAD_MS`, `PCV_LOD_THREADS` and `PCV_LOD_SPACING_PX` change them (for measurements).
    pub fn with_budget(point_budget: u64) -> LodOptions {
        let env =
            |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0);
        let threads = default_loader_threads(std::thread::available_parallelism().map_or(2, |n| n.get()));
        LodOptions {
            point_budget,
            target_spacing_px: env("PCV_LOD_SPACING_PX").unwrap_or(1.0) as f32,
            upload_ms_per_frame: env("PCV_LOD_UPLOAD_MS").unwrap_or(4.0),
            threads: env("PCV_LOD_THREADS").map_or(threads, |t| (t as usize).max(1)),
        }
    }
}

/// Loader threads on a machine of `cores` cores: all but the render thread's, at least one. Decoding
/// (one LAZ chunk a node, one thread a node) is what the view waits for after a stop on the H200
/// machine; more threads than cores would only slow the render thread.
pub fn default_loader_threads(cores: usize) -> usize {
    cores.saturating_sub(1).max(1)
}

/// The default point budget for `r` and how it was chosen.
pub fn default_point_budget(r: &mut dyn Rasterizer) -> (u64, String) {
    if let Some(Ok(cap)) = r.device_capacity() {
        let half = cap.free_bytes / 2 / 20;
        let budget = half.min(MAX_DEFAULT_BUDGET_CUDA);
        return (
            budget,
            format!(
                "half of the {:.1} GB free on {} at 20 bytes a point, at most {}M",
                cap.free_bytes as f64 / 1e9,
                cap.device,
                MAX_DEFAULT_BUDGET_CUDA / 1_000_000
            ),
        );
    }
    (DEFAULT_BUDGET_CPU, format!("the {} backend's default, {}M", r.name(), DEFAULT_BUDGET_CPU / 1_000_000))
}

/// The node pool's slots for nodes of `node_points` points under a budget of `budget_points`.
///
/// Nodes' last batches are partly filled: the pool gets the slots the budget's points take at the
/// tiles' own fill, and a quarter more to cache nodes the camera may come back to — but never more
/// than every node at once takes (plus a few spare), so a small file reserves a small pool.
pub fn pool_slots(node_points: impl Iterator<Item = u64>, budget_points: u64) -> u32 {
    let (all_slots, all_points) = node_points.fold((0u64, 0u64), |(s, p), n| (s + slots_for(n), p + n));
    let fill = (all_slots as f64 * BATCH_POINTS as f64 / all_points.max(1) as f64).max(1.0);
    let for_budget = (slots_for(budget_points) as f64 * fill * SLOTS_PER_BUDGET_SLOT).ceil() as u64;
    (for_budget.min(all_slots) + 8).min(u32::MAX as u64 / 2) as u32
}

/// Errors opening a scene.
#[derive(Debug, thiserror::Error)]
pub enum LodError {
    #[error("no tiles to show")]
    NoTiles,
    #[error("{name}: its octree has no points")]
    EmptyTile { name: String },
    #[error("a point budget of {budget} points is too small: {name}'s root node alone holds {root}")]
    BudgetTooSmall { budget: u64, root: u64, name: String },
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// One tile of a scene ([`LodScene::tile_states`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TileState {
    /// The tile's source (a COPC file's path or URL).
    pub name: String,
    pub points: u64,
    /// Its points' bounds in file coordinates.
    pub min: DVec3,
    pub max: DVec3,
    /// Points of its nodes the last selection chose, and of those drawn fresh: the nodes' own counts,
    /// before the filter (equal when the tile is drawn as far as the view asks).
    pub selected_points: u64,
    pub drawn_points: u64,
    /// Its nodes that could not be read or decoded.
    pub failed_nodes: usize,
    /// Why its source is no longer asked (a server that stopped answering).
    pub stopped: Option<String>,
}

/// What one update did and where the scene stands.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LodStatus {
    /// The batch table changed: the frame must be rendered again.
    pub changed: bool,
    /// Every selected node is drawn: the view is as detailed as the budget allows.
    pub complete: bool,
    pub selected_nodes: usize,
    pub selected_points: u64,
    pub drawn_nodes: usize,
    pub drawn_points: u64,
    pub resident_points: u64,
    /// Nodes written into the pool this update, and their points.
    pub uploaded_nodes: usize,
    pub uploaded_points: u64,
    /// Nodes wanted or being read.
    pub loading: usize,
    /// Whether the budget stopped the selection.
    pub budget_hit: bool,
    /// The drawn leaves' point spacing (see the module doc).
    pub spacing_m: f32,
    pub evictions: u64,
    /// Selected nodes not drawn yet (missing, being read, or copying), and their points.
    pub missing_nodes: usize,
    pub missing_points: u64,
    /// Of the missing nodes, those drawn from their stale copies (read under an earlier colour or
    /// filter) while their fresh copies come.
    pub stale_nodes: usize,
    /// Nodes written into the pool whose copies are not complete yet (CUDA's copy stream).
    pub in_transit: usize,
    /// The upload slice ended this update's writes with loaded nodes still waiting.
    pub slice_ran_out: bool,
    /// Host time writing nodes into the pool, this update and since the scene opened (ms).
    pub upload_ms: f64,
    pub upload_ms_total: f64,
    /// Loaded nodes thrown away since the scene opened: already resident, or no room for a node the
    /// selection no longer wants (decoding spent for nothing).
    pub discarded_nodes: u64,
}

/// The depth whose spacing a batch of node `node` (box `lo`..`hi`, local coordinates) of tile `tile`
/// is drawn with, when `drawn` is drawn: the node's own depth unless every octant of the node the box
/// touches is a drawn child, else the smallest of those children's effective depths over the box's part
/// in them (the coarsest level drawn everywhere under the box). Touching is closed (a box on an octant's
/// face touches both sides), so a batch is never made finer than all its surroundings.
pub fn effective_depth(h: &Hierarchy, tile: u32, node: u32, lo: Vec3, hi: Vec3, drawn: &HashSet<NodeId>) -> u32 {
    let key = h.node(node).key;
    let (nlo, nhi) = h.local_box(node);
    let mid = (nlo + nhi) * 0.5;
    let halves = |axis: usize| [lo[axis] <= mid[axis], hi[axis] >= mid[axis]];
    let (hx, hy, hz) = (halves(0), halves(1), halves(2));
    let mut depth = u32::MAX;
    for (dx, dy, dz) in (0..8u32).map(|o| (o & 1, (o >> 1) & 1, o >> 2)) {
        if !(hx[dx as usize] && hy[dy as usize] && hz[dz as usize]) {
            continue;
        }
        let child = pcv_io::octree::NodeKey::new(key.depth + 1, 2 * key.x + dx, 2 * key.y + dy, 2 * key.z + dz);
        let Some(c) = h.find(child).filter(|&c| drawn.contains(&NodeId { tile, node: c })) else {
            return key.depth;
        };
        let (clo, chi) = h.local_box(c);
        let (blo, bhi) = (lo.max(clo), hi.min(chi));
        depth = depth.min(effective_depth(h, tile, c, blo, bhi.max(blo), drawn));
    }
    if depth == u32::MAX {
        key.depth
    } else {
        depth
    }
}

/// See the module doc.
pub struct LodScene {
    tiles: Vec<Arc<dyn NodeSource>>,
    hierarchies: Vec<Hierarchy>,
    origin: DVec3,
    bounds: Bounds,
    opts: LodOptions,
    pool: NodePool,
    loader: Loader,
    /// Loaded nodes not written yet (the last update's slice ran out).
    arrived: VecDeque<Loaded>,
    failed: HashSet<NodeId>,
    errors: Vec<String>,
    /// Tiles whose source stopped answering ([`NodeSource::stopped`]), said once each: their later
    /// failures count in `failed` without a message of their own.
    stopped_tiles: HashSet<u32>,
    /// The tiles' root nodes read so far, by the fields read with them: kept once every tile's root
    /// was read (the framing, each colour's range and the legend's sample read the same nodes).
    roots: std::sync::Mutex<Vec<(FieldSet, Arc<Vec<pcv_io::octree::NodePoints>>)>>,
    frame: u64,
    selection: Selection,
    status: LodStatus,
    attached: bool,
    label: String,
    /// The drawn set and pool version the batch table was last made for.
    last_drawn: (HashSet<NodeId>, u64),
    /// Which of the drawn nodes were drawn from their stale copies ([`NodePool::retire`]).
    last_stale: HashSet<NodeId>,
    upload_ms_total: f64,
    discarded: u64,
    /// Each slot's spacing for adaptive point sizes (see the module doc), sent with the table.
    slot_spacing: Vec<f32>,
    /// Which points of the nodes are drawn ([`Self::set_filter`]), how they are coloured
    /// ([`Self::set_color`]), and how many times either changed.
    filter: Arc<PointFilter>,
    color: ColorSpec,
    /// The mode and look [`Self::color`] was made for ([`Self::set_color_mode`]).
    color_asked: (ColorMode, FieldLook),
    generation: u64,
}

impl LodScene {
    /// A scene of `sources` (see the module doc). The rasterizer's pool is made by [`Self::attach`].
    pub fn open(sources: Vec<Arc<dyn NodeSource>>, opts: LodOptions) -> Result<LodScene, LodError> {
        if sources.is_empty() {
            return Err(LodError::NoTiles);
        }
        let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
        for s in &sources {
            let o = s.octree();
            if o.total_points() == 0 {
                return Err(LodError::EmptyTile { name: s.name() });
            }
            lo = lo.min(o.points_min);
            hi = hi.max(o.points_max);
        }
        let origin = (lo + hi) * 0.5;
        let hierarchies: Vec<Hierarchy> = sources.iter().map(|s| Hierarchy::new(s.octree().clone(), origin)).collect();
        for (h, s) in hierarchies.iter().zip(&sources) {
            let root = h.find(pcv_io::octree::NodeKey::ROOT).map_or(0, |i| h.node(i).point_count);
            if root > opts.point_budget {
                return Err(LodError::BudgetTooSmall { budget: opts.point_budget, root, name: s.name() });
            }
        }
        let tiles = sources;
        let bounds = Bounds { min: (lo - origin).as_vec3(), max: (hi - origin).as_vec3() };
        let slots =
            pool_slots(hierarchies.iter().flat_map(|h| &h.octree.nodes).map(|n| n.point_count), opts.point_budget);
        let label = match tiles.len() {
            1 => tiles[0].name(),
            n => format!("{n} tiles"),
        };
        Ok(LodScene {
            tiles,
            hierarchies,
            origin,
            bounds,
            opts,
            pool: NodePool::new(slots),
            loader: Loader::new(opts.threads),
            arrived: VecDeque::new(),
            failed: HashSet::new(),
            errors: Vec::new(),
            stopped_tiles: HashSet::new(),
            roots: Default::default(),
            frame: 0,
            selection: Selection::default(),
            status: LodStatus::default(),
            attached: false,
            label,
            last_drawn: (HashSet::new(), u64::MAX),
            last_stale: HashSet::new(),
            upload_ms_total: 0.0,
            discarded: 0,
            slot_spacing: Vec::new(),
            filter: Arc::new(PointFilter::default()),
            color: ColorSpec::Rgb { z: (bounds.min.z, bounds.max.z) },
            color_asked: (ColorMode::Rgb, FieldLook::default()),
            generation: 0,
        })
    }

    /// The filter the nodes are loaded with.
    pub fn filter(&self) -> &PointFilter {
        &self.filter
    }

    /// Draws only the points `filter` shows (classes, returns, value ranges, clip volumes), applied by
    /// the loading workers to each node's points (reading the fields it tests). Every resident node is
    /// forgotten and read again under it (nodes in flight under the old one are not written).
    pub fn set_filter(&mut self, filter: &PointFilter) -> Result<(), String> {
        let have = self.columns();
        if let Some(f) = filter.fields().into_iter().find(|f| !have.fields.contains(*f)) {
            return Err(format!("{}: {} has no {f}", filter.describe(), self.label));
        }
        if *filter == *self.filter {
            return Ok(());
        }
        self.filter = Arc::new(filter.clone());
        self.reload();
        Ok(())
    }

    /// How the nodes are coloured.
    pub fn color(&self) -> ColorSpec {
        self.color
    }

    /// Colours the nodes as `spec` says (made by [`Self::color_spec`]); the loading workers colour each
    /// node's points from its own attributes, so every resident node is read again. Whether it changed.
    pub fn set_color(&mut self, spec: ColorSpec) -> bool {
        if spec == self.color {
            return false;
        }
        self.color = spec;
        self.reload();
        true
    }

    /// Colours the nodes by `mode` with a field's `look` ([`Self::color_spec`], then
    /// [`Self::set_color`]) unless they show that already; whether it changed.
    pub fn set_color_mode(&mut self, mode: ColorMode, look: &FieldLook) -> Result<bool, String> {
        if self.color_asked == (mode, *look) {
            return Ok(false);
        }
        let spec = self.color_spec(mode, look)?;
        self.color_asked = (mode, *look);
        Ok(self.set_color(spec))
    }

    /// The mode and look the nodes were last coloured for ([`Self::set_color_mode`]).
    pub fn color_asked(&self) -> (ColorMode, FieldLook) {
        self.color_asked
    }

    /// Makes every resident node stale: the next updates read the view's nodes again under the current
    /// filter and colour, and each stale node is drawn until its fresh copy is, so the view never
    /// empties while they come (a COPC file over HTTP takes seconds).
    fn reload(&mut self) {
        self.generation += 1;
        self.pool.retire();
        self.arrived.clear();
        self.failed.clear();
    }

    /// What the tiles' points carry, together (a column any tile has).
    pub fn columns(&self) -> pcv_io::formats::Columns {
        self.tiles.iter().map(|t| t.columns()).fold(Default::default(), |a, c| pcv_io::formats::Columns {
            intensity: a.intensity || c.intensity,
            classification: a.classification || c.classification,
            fields: a.fields.union(c.fields),
        })
    }

    /// The colour modes the tiles offer: their colours, elevation, and each attribute one of them has.
    pub fn available_modes(&self) -> Vec<ColorMode> {
        let c = self.columns();
        ColorMode::offered(c.intensity, c.classification, c.fields)
    }

    /// The colour of `mode` with a field's `look`: ranges (intensity's 1st..99th percentile, a field's
    /// default 2nd..98th) from the tiles' root nodes (a uniform sample of each tile), read here.
    pub fn color_spec(&self, mode: ColorMode, look: &FieldLook) -> Result<ColorSpec, String> {
        let z = (self.bounds.min.z, self.bounds.max.z);
        if !self.available_modes().contains(&mode) {
            return Err(format!("color mode '{mode}': {} has no {mode}", self.label));
        }
        let roots = |fields| self.root_points(fields);
        Ok(match mode {
            ColorMode::Rgb => ColorSpec::Rgb { z },
            ColorMode::Elevation => ColorSpec::Elevation { z },
            ColorMode::Classification => ColorSpec::Classification,
            ColorMode::Intensity => {
                let v: Vec<f32> =
                    roots(FieldSet::NONE).iter().flat_map(|p| p.intensity.iter().flatten().copied()).collect();
                let (lo, hi) = pcv_io::attributes::percentile_range(&v, 0.01, 0.99);
                ColorSpec::Intensity { lo, hi }
            }
            m => {
                let f = m.field().ok_or_else(|| format!("color mode '{m}' is not a field"))?;
                let v: Vec<f64> = roots(FieldSet::NONE.with(f))
                    .iter()
                    .flat_map(|p| p.fields.iter().filter(|(g, _)| *g == f).flat_map(|(_, v)| v.iter().copied()))
                    .collect();
                look.spec(&Column::from_f64(f, &v))
            }
        })
    }

    /// Makes the rasterizer's node pool (replacing its points).
    pub fn attach(&mut self, r: &mut dyn Rasterizer) -> Result<(), RenderError> {
        r.reserve_slots(self.pool.capacity())?;
        self.pool = NodePool::new(self.pool.capacity());
        self.arrived.clear();
        self.last_drawn = (HashSet::new(), u64::MAX);
        self.attached = true;
        Ok(())
    }

    /// The common origin (f64, the tiles' coordinates).
    pub fn origin(&self) -> DVec3 {
        self.origin
    }

    /// The bounds of every tile's points, in local coordinates.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// The box the start camera frames: the percentile box ([`pcv_camera::framing::percentile_box`])
    /// of the tiles' root nodes' points (a uniform sample of each tile, read here once), so that a few
    /// far outliers (birds, noise) do not shrink the view as the bounds would; the bounds when no
    /// root can be read.
    pub fn framing_box(&self) -> Bounds {
        let sample: Vec<pcv_io::Point> =
            self.root_points(FieldSet::NONE).iter().flat_map(|p| p.points.iter().copied()).collect();
        match sample.is_empty() {
            true => self.bounds,
            false => pcv_camera::framing::percentile_box(&sample, &self.bounds),
        }
    }

    pub fn options(&self) -> &LodOptions {
        &self.opts
    }

    pub fn slots(&self) -> u32 {
        self.pool.capacity()
    }

    /// Points in every tile.
    pub fn total_points(&self) -> u64 {
        self.hierarchies.iter().map(|h| h.octree.total_points()).sum()
    }

    pub fn tiles(&self) -> usize {
        self.tiles.len()
    }

    /// What the window and the camera need of the scene: a cloud with no points of its own, the
    /// scene's bounds, origin and name.
    pub fn placeholder_cloud(&self) -> PointCloud {
        PointCloud {
            points: Default::default(),
            bounds: self.bounds,
            origin: self.origin,
            frame: None,
            label: format!(
                "{} (level of detail, {} points, budget {})",
                self.label,
                self.total_points(),
                self.opts.point_budget
            ),
            source: pcv_io::CloudSource::Host,
            // One span per tile, holding no points of the placeholder: the tiles' names, colours and
            // coordinate systems for the panel and the units.
            attributes: Some(Arc::new(pcv_io::attributes::Attributes {
                sources: self
                    .tiles
                    .iter()
                    .map(|t| pcv_io::attributes::SourceSpan {
                        label: t.name(),
                        format: pcv_io::formats::Format::Laz,
                        points: 0..0,
                        has_rgb: t.has_rgb(),
                        has_intensity: false,
                        has_classification: false,
                        uniform_rgb: None,
                        crs: t.crs().and_then(Result::ok),
                    })
                    .collect(),
                // The colour the nodes show (the legend's ramp and range).
                mode: self.color_asked.0,
                field_spec: self.color.as_field(),
                ..Default::default()
            })),
        }
    }

    /// The point drawn at `local` (a pick's position, local coordinates) with what its file holds: the
    /// drawn nodes whose cubes hold the position are read again (a COPC node is decoded, a few ms) and
    /// the nearest of their points is the one (picks return drawn points' exact local positions, so it
    /// is within float rounding). `None` when no drawn node holds a point there.
    pub fn point_at(&self, local: Vec3) -> Option<NodePoint> {
        let mut best: Option<(f32, NodePoint)> = None;
        for id in &self.last_drawn.0 {
            let h = &self.hierarchies[id.tile as usize];
            let (lo, hi) = h.local_box(id.node);
            let slack = (hi - lo).max_element() * 1e-4;
            if local.cmplt(lo - slack).any() || local.cmpgt(hi + slack).any() {
                continue;
            }
            let node = h.node(id.node);
            let src = &self.tiles[id.tile as usize];
            let Ok(p) = src.read_node(node, self.origin, src.columns().fields) else { continue };
            let nearest = p
                .points
                .iter()
                .enumerate()
                .map(|(i, q)| (Vec3::from_array(q.pos).distance_squared(local), i))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let Some((d2, i)) = nearest else { continue };
            if best.as_ref().is_some_and(|(b, _)| *b <= d2) {
                continue;
            }
            let found = NodePoint {
                source: src.name(),
                key: node.key,
                index: i,
                local: Vec3::from_array(p.points[i].pos),
                intensity: p.intensity.as_ref().and_then(|v| v.get(i)).copied(),
                classification: p.classification.as_ref().and_then(|v| v.get(i)).copied(),
                fields: p.fields.iter().filter_map(|(f, v)| Some((*f, *v.get(i)?))).collect(),
                rgb: src.has_rgb().then(|| {
                    let c = p.points[i].rgba;
                    [c[0], c[1], c[2]]
                }),
            };
            best = Some((d2, found));
        }
        let tolerance = 1e-3 * self.bounds.radius().max(1e-6);
        best.filter(|(d2, _)| d2.sqrt() <= tolerance).map(|(_, p)| p)
    }

    /// A sample of the scene for its legend, from each tile's root node (a uniform sample of the
    /// tile), read now: `field`'s values, and the count of each class code (256 counts).
    pub fn root_sample(&self, field: Option<pcv_io::formats::Field>) -> (Vec<f64>, Vec<u64>) {
        let fields = field.map_or(FieldSet::NONE, |f| FieldSet::NONE.with(f));
        let (mut values, mut classes) = (Vec::new(), vec![0u64; 256]);
        for p in self.root_points(fields).iter() {
            for (g, v) in &p.fields {
                if Some(*g) == field {
                    values.extend_from_slice(v);
                }
            }
            for &c in p.classification.iter().flatten() {
                classes[c as usize] += 1;
            }
        }
        (values, classes)
    }

    /// Each tile's root node (a uniform sample of the tile) with `fields`: read once, then kept when
    /// every tile's root could be read; tiles whose root cannot be read are left out (and asked again
    /// next time).
    fn root_points(&self, fields: FieldSet) -> Arc<Vec<pcv_io::octree::NodePoints>> {
        let kept = |c: &Vec<(FieldSet, Arc<Vec<_>>)>| c.iter().find(|(f, _)| *f == fields).map(|(_, r)| r.clone());
        if let Some(r) = self.roots.lock().ok().as_deref().and_then(kept) {
            return r;
        }
        let read: Vec<pcv_io::octree::NodePoints> = self
            .hierarchies
            .iter()
            .zip(&self.tiles)
            // A source that stopped answering is not asked (its reads would fail, or wait).
            .filter(|(_, src)| src.stopped().is_none())
            .filter_map(|(h, src)| {
                let root = h.find(pcv_io::octree::NodeKey::ROOT)?;
                src.read_node(h.node(root), self.origin, fields).ok()
            })
            .collect();
        let whole = read.len() == self.tiles.len();
        let read = Arc::new(read);
        if whole {
            if let Ok(mut c) = self.roots.lock() {
                c.push((fields, read.clone()));
            }
        }
        read
    }

    /// The tiles' coordinate systems that could not be read, one message each.
    pub fn crs_errors(&self) -> Vec<String> {
        self.tiles
            .iter()
            .filter_map(|t| t.crs()?.err().map(|e| format!("{}: coordinate system: {e}", t.name())))
            .collect()
    }

    /// The mode a frame of this scene is drawn in: the culled modes draw the pool; others become `culled`.
    pub fn mode_for(mode: RenderMode) -> RenderMode {
        if mode.culls() {
            mode
        } else {
            RenderMode::Culled
        }
    }

    /// Each tile as the scene stands after the last update: its name, points, bounds (file
    /// coordinates), the points of its nodes selected and drawn, and its nodes that failed (in the
    /// tiles' order). For the window's tile list and boxes.
    pub fn tile_states(&self) -> Vec<TileState> {
        let mut out: Vec<TileState> = self
            .tiles
            .iter()
            .zip(&self.hierarchies)
            .map(|(t, h)| TileState {
                name: t.name(),
                points: h.octree.total_points(),
                min: h.octree.points_min,
                max: h.octree.points_max,
                selected_points: 0,
                drawn_points: 0,
                failed_nodes: 0,
                stopped: t.stopped(),
            })
            .collect();
        for s in &self.selection.nodes {
            let h = &self.hierarchies[s.id.tile as usize];
            out[s.id.tile as usize].selected_points += h.node(s.id.node).point_count;
        }
        // Nodes' points as the files hold them (before the filter), so a filtered view that is complete
        // reads as whole; a stale copy does not count (its node is being read again).
        for id in self.last_drawn.0.difference(&self.last_stale) {
            out[id.tile as usize].drawn_points += self.hierarchies[id.tile as usize].node(id.node).point_count;
        }
        for id in &self.failed {
            out[id.tile as usize].failed_nodes += 1;
        }
        out
    }

    /// The points `filter` keeps (a profile's strip: its clip box and the view's filter), read from the
    /// tiles' nodes now, coloured as the scene colours them, as local points of the scene's origin.
    /// Nodes are taken level by level from the roots, those whose boxes the filter may keep, down to
    /// the deepest level whose nodes together hold at most `max_points` (COPC's levels add points, so
    /// the strip is the cloud at that level's detail; the root level always). Nodes are read on all
    /// cores. Returns the points and whether deeper levels were left out for the budget.
    pub fn gather(&self, filter: &PointFilter, max_points: u64) -> (Vec<pcv_io::Point>, bool) {
        use rayon::prelude::*;
        let all_classes = [u64::MAX; 4];
        let may_pass = |h: &super::select::Hierarchy, i: u32| {
            let (lo, hi) = h.local_box(i);
            filter.box_may_pass(self.origin + lo.as_dvec3(), self.origin + hi.as_dvec3(), &all_classes)
        };
        // The nodes taken (tile, node), a level at a time.
        let mut nodes: Vec<(u32, u32)> = Vec::new();
        let mut level: Vec<(u32, u32)> = self
            .hierarchies
            .iter()
            .enumerate()
            .filter(|(t, _)| self.tiles[*t].stopped().is_none())
            .filter_map(|(t, h)| h.find(pcv_io::octree::NodeKey::ROOT).map(|r| (t as u32, r)))
            .filter(|&(t, r)| may_pass(&self.hierarchies[t as usize], r))
            .collect();
        let mut total = 0u64;
        let mut truncated = false;
        while !level.is_empty() {
            let points: u64 = level.iter().map(|&(t, i)| self.hierarchies[t as usize].node(i).point_count).sum();
            if !nodes.is_empty() && total + points > max_points {
                truncated = true;
                break;
            }
            total += points;
            let next = level
                .iter()
                .flat_map(|&(t, i)| {
                    let h = &self.hierarchies[t as usize];
                    h.children(i).iter().filter(move |&&c| may_pass(h, c)).map(move |&c| (t, c))
                })
                .collect();
            nodes.append(&mut std::mem::replace(&mut level, next));
        }
        // What the readers need (the scene holds its loader's channel, which threads cannot share).
        let (tiles, hierarchies, origin, color) = (&self.tiles, &self.hierarchies, self.origin, self.color);
        let points = nodes
            .par_iter()
            .flat_map_iter(|&(t, i)| {
                let node = hierarchies[t as usize].node(i);
                super::loader::read_kept(tiles[t as usize].as_ref(), node, origin, filter, &color).unwrap_or_default()
            })
            .collect();
        (points, truncated)
    }

    /// What the loader's threads did so far.
    pub fn loader_counters(&self) -> super::loader::LoaderCounters {
        self.loader.counters()
    }

    /// Node read errors so far (each node once; a source that stopped answering once, with why).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// How many nodes failed to read or decode so far (those of a source that stopped answering
    /// included, which [`LodScene::errors`] does not list one by one).
    pub fn failed_nodes(&self) -> usize {
        self.failed.len()
    }

    pub fn status(&self) -> &LodStatus {
        &self.status
    }

    /// The last selection.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Each slot's spacing when `drawn` is drawn, the nodes in `stale` from their stale copies (0 for
    /// slots not drawn; see the module doc).
    fn spacing_per_slot(&self, drawn: &HashSet<NodeId>, stale: &HashSet<NodeId>) -> Vec<f32> {
        let mut out = vec![0f32; self.pool.capacity() as usize];
        for id in drawn {
            let (Some(res), h) = (self.pool.copy_of(id, stale.contains(id)), &self.hierarchies[id.tile as usize])
            else {
                continue;
            };
            for (slot, b) in res.slots().zip(&res.batches) {
                let depth = effective_depth(h, id.tile, id.node, Vec3::from(b.min), Vec3::from(b.max), drawn);
                out[slot as usize] = h.octree.spacing_at_m(depth) as f32;
            }
        }
        out
    }

    /// The spacing each slot is drawn with now (see the module doc).
    pub fn slot_spacing(&self) -> &[f32] {
        &self.slot_spacing
    }

    /// One frame's selection, loads and uploads (see the module doc); `frame` is the frame about to be
    /// drawn and `eye` the camera's position in local coordinates.
    pub fn update(
        &mut self,
        r: &mut dyn Rasterizer,
        frame: &FrameParams,
        eye: Vec3,
    ) -> Result<&LodStatus, RenderError> {
        if !self.attached {
            self.attach(r)?;
        }
        self.frame += 1;
        let view = SelectView::new(frame, eye, FOV_Y_RAD);
        let opts = SelectOptions {
            point_budget: self.opts.point_budget,
            slot_budget: self.pool.capacity() as u64,
            target_spacing_px: self.opts.target_spacing_px,
        };
        self.selection = select(&self.hierarchies, &view, &opts);
        let keep: HashSet<NodeId> = self.selection.nodes.iter().map(|s| s.id).collect();
        let mut wanted = Vec::new();
        for s in &self.selection.nodes {
            self.pool.touch(&s.id, self.frame);
            let h = &self.hierarchies[s.id.tile as usize];
            let node = *h.node(s.id.node);
            if self.pool.contains(&s.id) || self.failed.contains(&s.id) || self.arrived.iter().any(|l| l.id == s.id) {
                continue;
            }
            if node.point_count == 0 {
                self.pool.insert(s.id, node.key, Vec::new(), self.frame);
                continue;
            }
            wanted.push(Request {
                id: s.id,
                node,
                source: self.tiles[s.id.tile as usize].clone(),
                origin: self.origin,
                filter: self.filter.clone(),
                color: self.color,
                generation: self.generation,
            });
        }
        self.loader.want(wanted);
        // Write what has arrived, for a slice of the frame.
        let started = Instant::now();
        let (mut uploaded_nodes, mut uploaded_points) = (0usize, 0u64);
        while uploaded_nodes == 0 || started.elapsed().as_secs_f64() * 1e3 < self.opts.upload_ms_per_frame {
            let Some(l) = self.arrived.pop_front().or_else(|| self.loader.try_take()) else { break };
            if self.pool.contains(&l.id) || l.generation != self.generation {
                self.discarded += 1;
                continue;
            }
            let p = match l.result {
                Ok(p) => p,
                Err(e) => {
                    self.failed.insert(l.id);
                    let tile = &self.tiles[l.id.tile as usize];
                    match tile.stopped() {
                        // A server that went silent: its first failure and why no more are asked,
                        // then nothing per node (hundreds of lines said the same).
                        Some(why) if self.stopped_tiles.insert(l.id.tile) => {
                            self.errors.push(e.to_string());
                            self.errors.push(format!(
                                "{}: {why}: its other nodes are not asked for; the view goes on with what arrived",
                                tile.name()
                            ));
                        }
                        Some(_) => {}
                        None => self.errors.push(e.to_string()),
                    }
                    continue;
                }
            };
            let need = p.batches.len() as u32;
            if need > self.pool.capacity() {
                // It can never be drawn (a header that claims more points than the node holds would
                // be caught by the decoder; this is a node larger than the whole pool): said once.
                self.failed.insert(l.id);
                self.errors.push(format!(
                    "{}: node {}: {} points need {need} slots, more than the pool's {}; drawn without it",
                    self.tiles[l.id.tile as usize].name(),
                    l.key,
                    p.positions.len(),
                    self.pool.capacity()
                ));
                continue;
            }
            let room =
                if keep.contains(&l.id) { self.pool.make_room(need, &keep) } else { self.pool.free_slots() >= need };
            if !room {
                self.discarded += 1;
                continue;
            }
            let Some(res) = self.pool.insert(l.id, l.key, p.batches.clone(), self.frame) else { continue };
            let per = BATCH_POINTS as usize;
            let mut writes = Vec::with_capacity(res.runs.len());
            let mut at = 0usize;
            for run in &res.runs {
                let n = ((run.end - run.start) as usize * per).min(p.positions.len() - at);
                writes.push(SlotWrite {
                    first_slot: run.start,
                    positions: &p.positions[at..at + n],
                    colors: &p.colors[at..at + n],
                    quant: &p.quant[at..at + n],
                });
                at += n;
            }
            let fence = r.write_slots(&writes)?;
            self.pool.set_fence(&l.id, fence);
            uploaded_nodes += 1;
            uploaded_points += p.positions.len() as u64;
        }
        let upload_ms = started.elapsed().as_secs_f64() * 1e3;
        self.upload_ms_total += upload_ms;
        // Whether the slice, not the loader, ended the writes: a loaded node is still waiting (kept for
        // the next update).
        if self.arrived.is_empty() {
            if let Some(l) = self.loader.try_take() {
                self.arrived.push_back(l);
            }
        }
        let slice_ran_out = !self.arrived.is_empty();
        // Draw the selected nodes that are resident, copied, and whose parent is drawn (parents come
        // first). Nodes whose copies are still running wait: the frame never draws a slot before its
        // points are there, and never waits for them.
        let done = r.slot_writes_done()?;
        let mut drawn = HashSet::new();
        // Drawn from their stale copies: read under an earlier colour or filter, shown until the fresh
        // copy is there (its parent drawn either way), so a change never empties the view.
        let mut stale = HashSet::new();
        // Nodes that failed: final (never asked for again), so that a view with a bad node completes
        // without it. Their children are drawn as if the failed node were: COPC's levels add points,
        // so the view lacks only the bad node's own points.
        let mut dead = HashSet::new();
        let (mut in_transit, mut after_write) = (0usize, 0u64);
        let (mut missing_nodes, mut missing_points) = (0usize, 0u64);
        let (mut drawn_points, mut leaf_weight, mut leaf_spacing) = (0u64, 0f64, 0f64);
        for s in &self.selection.nodes {
            let h = &self.hierarchies[s.id.tile as usize];
            let parent = h.parent(s.id.node).map(|p| NodeId { tile: s.id.tile, node: p });
            if self.failed.contains(&s.id) {
                dead.insert(s.id);
            }
            let parent_ok = parent.is_none_or(|p| drawn.contains(&p) || dead.contains(&p));
            match self.pool.get(&s.id) {
                Some(res) if res.fence <= done && parent_ok => {
                    drawn.insert(s.id);
                    after_write = after_write.max(res.fence);
                    continue;
                }
                Some(res) if res.fence > done => in_transit += 1,
                _ => {}
            }
            if let Some(old) = self.pool.get_stale(&s.id).filter(|r| r.fence <= done && parent_ok) {
                drawn.insert(s.id);
                stale.insert(s.id);
                after_write = after_write.max(old.fence);
            }
            missing_nodes += 1;
            missing_points += h.node(s.id.node).point_count;
        }
        // A node drawn fresh needs its stale copy no more.
        for id in drawn.difference(&stale) {
            self.pool.release_stale(id);
        }
        for id in &drawn {
            let h = &self.hierarchies[id.tile as usize];
            let pts = self.pool.copy_of(id, stale.contains(id)).map_or(0, |r| r.points);
            drawn_points += pts;
            let leaf = !h.children(id.node).iter().any(|c| drawn.contains(&NodeId { tile: id.tile, node: *c }));
            if leaf && pts > 0 {
                leaf_weight += pts as f64;
                leaf_spacing += pts as f64 * h.spacing_m(id.node);
            }
        }
        if self.last_drawn.1 != self.pool.version || self.last_drawn.0 != drawn || self.last_stale != stale {
            self.pool.set_drawn(&drawn, &stale);
            self.slot_spacing = self.spacing_per_slot(&drawn, &stale);
            self.last_drawn = (drawn.clone(), self.pool.version);
            self.last_stale = stale.clone();
        }
        let changed = match self.pool.take_table() {
            Some(t) => {
                r.set_slot_batches(t, after_write)?;
                r.set_slot_spacing(&self.slot_spacing)?;
                true
            }
            None => false,
        };
        self.status = LodStatus {
            changed,
            complete: drawn.len() - stale.len() + dead.len() >= self.selection.nodes.len(),
            selected_nodes: self.selection.nodes.len(),
            selected_points: self.selection.points,
            drawn_nodes: drawn.len(),
            drawn_points,
            resident_points: self.pool.resident_points(),
            uploaded_nodes,
            uploaded_points,
            loading: self.loader.pending() + self.arrived.len() + in_transit,
            budget_hit: self.selection.budget_hit,
            spacing_m: if leaf_weight > 0.0 { (leaf_spacing / leaf_weight) as f32 } else { 0.0 },
            evictions: self.pool.evictions,
            missing_nodes,
            missing_points,
            stale_nodes: stale.len(),
            in_transit,
            slice_ran_out,
            upload_ms,
            upload_ms_total: self.upload_ms_total,
            discarded_nodes: self.discarded,
        };
        Ok(&self.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use pcv_io::octree::{Cube, NodeKey, Octree, OctreeNode};

    /// A full octree over [0, 64)³ to `depth`.
    fn full(depth: u32) -> Hierarchy {
        let mut nodes = Vec::new();
        for d in 0..=depth {
            let n = 1u32 << d;
            for (x, y, z) in (0..n * n * n).map(|i| (i % n, (i / n) % n, i / (n * n))) {
                nodes.push(OctreeNode { key: NodeKey::new(d, x, y, z), point_count: 10, byte_offset: 0, byte_size: 0 });
            }
        }
        let octree = Octree {
            cube: Cube { min: DVec3::ZERO, size: 64.0 },
            root_spacing_m: 1.0,
            points_min: DVec3::ZERO,
            points_max: DVec3::splat(64.0),
            nodes,
        };
        Hierarchy::new(octree, DVec3::ZERO)
    }

    #[test]
    fn a_batch_takes_the_coarsest_level_drawn_under_it() {
        let h = full(2);
        let id = |k: NodeKey| NodeId { tile: 0, node: h.find(k).unwrap() };
        let root = h.find(NodeKey::ROOT).unwrap();
        let c0 = NodeKey::new(1, 0, 0, 0);
        let mut drawn: HashSet<NodeId> = [id(NodeKey::ROOT), id(c0)].into();
        let v = |a: f32, b: f32| (Vec3::splat(a), Vec3::splat(b));
        let depth =
            |lo_hi: (Vec3, Vec3), drawn: &HashSet<NodeId>| effective_depth(&h, 0, root, lo_hi.0, lo_hi.1, drawn);
        // Inside the drawn child 0: its depth; reaching into the undrawn child 7: the root's.
        assert_eq!(depth(v(1.0, 10.0), &drawn), 1);
        assert_eq!(depth(v(1.0, 40.0), &drawn), 0);
        // Child 0 refined fully: a box inside it takes depth 2, also across its own octants' faces.
        drawn.extend(c0.children().map(id));
        assert_eq!(depth(v(1.0, 10.0), &drawn), 2);
        assert_eq!(depth(v(10.0, 20.0), &drawn), 2);
        // One grandchild missing under the box: the child's depth there.
        drawn.remove(&id(c0.children()[7]));
        assert_eq!(depth(v(10.0, 20.0), &drawn), 1);
        assert_eq!(depth(v(1.0, 10.0), &drawn), 2);
        assert!(h.octree.spacing_at_m(0) > h.octree.spacing_at_m(2), "coarser levels are spaced wider");
    }

    #[test]
    fn a_small_file_gets_a_small_pool() {
        // laspy's simple.copc.laz: 1,065 points in one node, under the CUDA default budget of 400M.
        assert_eq!(pool_slots([1065].into_iter(), 400_000_000), 1 + 8);
        // Many part-filled nodes: every node once, not the budget at their fill.
        let nodes = std::iter::repeat_n(100, 1000);
        assert_eq!(pool_slots(nodes, 400_000_000), 1000 + 8);
        // A cloud larger than the budget: the budget's slots at the cloud's fill, and a quarter more.
        let b = BATCH_POINTS as u64;
        let big = std::iter::repeat_n(b / 2, 100_000); // half-filled batches: fill 2
        assert_eq!(pool_slots(big, 1000 * b), (1000.0 * 2.0 * SLOTS_PER_BUDGET_SLOT) as u32 + 8);
    }

    #[test]
    fn loader_threads_leave_the_render_thread_a_core() {
        assert_eq!([1, 2, 3, 16, 32].map(default_loader_threads), [1, 1, 2, 15, 31]);
    }
}
