//! Which nodes to draw this frame: frustum, projected size, point budget.
//!
//! How it works (Potree's `updateVisibility`, for many octrees at once): every tile's root goes into one
//! priority queue; the node of highest priority comes out first. A node whose cube lies outside the
//! view ([`pcv_render::twins::batch::batch_culled`], the same conservative test the culled modes apply
//! to batches) is dropped with its subtree. Otherwise, if its points still fit the point budget (and its
//! batch slots the pool), it is selected, and its children go into the queue when its points are still
//! too far apart on screen: the node's spacing seen from the nearest point of its cube, in pixels, is
//! above `target_spacing_px`. The first node that no longer fits ends the selection (the rest have
//! lower priority). The priority is the cube's projected radius in pixels (radius over distance, times
//! the pixels a radian spans at the screen's centre), infinite for a camera inside the cube: nearest
//! and largest first. In an orthographic frame sizes on screen do not depend on the distance: the
//! priority is the radius and the spacing is the node's, each in pixels at the frame's scale. Because a child enters the queue only after its parent was selected, the result
//! lists parents before children and is closed under "parent of"; empty nodes (COPC lists them for
//! their children) cost nothing and pass through.
use glam::{DVec3, Vec3};
use pcv_io::octree::{Cube, NodeKey, Octree, OctreeNode};
use pcv_render::gpu_data::{Batch, FrameUniforms, BATCH_POINTS};
use pcv_render::twins::batch::batch_culled;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// A node's name in a scene of many tiles: the tile and the node's index in its octree's `nodes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    pub tile: u32,
    pub node: u32,
}

/// One tile's octree with what selection needs: children by index, cubes in the scene's local
/// coordinates (f32, relative to the scene's common origin).
#[derive(Clone, Debug)]
pub struct Hierarchy {
    pub octree: Octree,
    /// The position of the scene's local (0, 0, 0) in this tile's coordinates.
    pub origin: DVec3,
    index: HashMap<NodeKey, u32>,
    children: Vec<Vec<u32>>,
    root: Option<u32>,
    /// Each node's cube in local coordinates (min, max), computed once.
    boxes: Vec<(Vec3, Vec3)>,
}

impl Hierarchy {
    pub fn new(octree: Octree, origin: DVec3) -> Hierarchy {
        let index: HashMap<NodeKey, u32> = octree.nodes.iter().enumerate().map(|(i, n)| (n.key, i as u32)).collect();
        let mut children = vec![Vec::new(); octree.nodes.len()];
        for (i, n) in octree.nodes.iter().enumerate() {
            if let Some(p) = n.key.parent().and_then(|p| index.get(&p)) {
                children[*p as usize].push(i as u32);
            }
        }
        let root = index.get(&NodeKey::ROOT).copied();
        let boxes = octree
            .nodes
            .iter()
            .map(|n| {
                let c: Cube = n.key.cube_in(&octree.cube);
                ((c.min - origin).as_vec3(), (c.max() - origin).as_vec3())
            })
            .collect();
        Hierarchy { octree, origin, index, children, root, boxes }
    }

    pub fn node(&self, i: u32) -> &OctreeNode {
        &self.octree.nodes[i as usize]
    }

    /// The index of `key` in the octree's nodes.
    pub fn find(&self, key: NodeKey) -> Option<u32> {
        self.index.get(&key).copied()
    }

    /// The indices of node `i`'s children that the octree lists.
    pub fn children(&self, i: u32) -> &[u32] {
        &self.children[i as usize]
    }

    /// Node `i`'s parent's index (`None` for the root, or a parent the octree does not list).
    pub fn parent(&self, i: u32) -> Option<u32> {
        self.node(i).key.parent().and_then(|p| self.find(p))
    }

    /// Node `i`'s cube in the scene's local coordinates: (min, max).
    pub fn local_box(&self, i: u32) -> (Vec3, Vec3) {
        self.boxes[i as usize]
    }

    /// Node `i`'s point spacing (the octree's units, metres for projected lidar).
    pub fn spacing_m(&self, i: u32) -> f64 {
        self.octree.spacing_at_m(self.node(i).key.depth)
    }
}

/// Batch slots a node of `points` points takes.
pub fn slots_for(points: u64) -> u64 {
    points.div_ceil(BATCH_POINTS as u64)
}

/// The camera as selection sees it.
#[derive(Clone, Copy, Debug)]
pub struct SelectView {
    /// The frame's uniforms (the frustum test reads its screen matrix and size).
    pub uniforms: FrameUniforms,
    /// The eye in local coordinates.
    pub eye: Vec3,
    /// Pixels a radian spans at the screen's centre: height / (2 tan(fov_y / 2)).
    pub px_per_rad: f32,
    /// Orthographic frames: pixels a metre spans, at every depth.
    pub ortho_px_per_m: Option<f32>,
}

impl SelectView {
    pub fn new(frame: &pcv_render::FrameParams, eye: Vec3, fov_y_rad: f32) -> SelectView {
        SelectView {
            uniforms: frame.uniforms(),
            eye,
            px_per_rad: frame.height_px as f32 / (2.0 * (fov_y_rad * 0.5).tan()),
            ortho_px_per_m: ortho_px_per_m(&frame.clip_from_world, frame.height_px),
        }
    }
}

/// Pixels a metre spans in an orthographic frame (row 3 of the matrix is (0, 0, 0, 1); row 1's length is
/// 1 / the half height), `None` in perspective.
fn ortho_px_per_m(clip_from_world: &glam::Mat4, height_px: u32) -> Option<f32> {
    let y_scale = pcv_render::look::y_scale(clip_from_world);
    (pcv_render::look::is_orthographic(clip_from_world) && y_scale.is_finite() && y_scale > 0.0)
        .then_some(y_scale * height_px as f32 * 0.5)
}

/// The limits of a selection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelectOptions {
    /// Points selected at most.
    pub point_budget: u64,
    /// Batch slots selected at most (the pool's size).
    pub slot_budget: u64,
    /// Refine a node while its spacing on screen is above this many pixels.
    pub target_spacing_px: f32,
}

/// One selected node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Selected {
    pub id: NodeId,
    /// Its projected radius in pixels (`f32::MAX` for a camera inside its cube).
    pub priority: f32,
}

/// A frame's selection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// In the order they were chosen: by priority, parents before children.
    pub nodes: Vec<Selected>,
    pub points: u64,
    pub slots: u64,
    /// Whether the budget (points or slots) stopped the selection before the view was refined fully.
    pub budget_hit: bool,
}

#[derive(Clone, Copy, PartialEq)]
struct Queued {
    priority: f32,
    /// Ties: the tile and node order, so the selection does not depend on the heap's internals.
    id: NodeId,
}

impl Eq for Queued {}

impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Queued {
    fn cmp(&self, o: &Self) -> Ordering {
        self.priority.total_cmp(&o.priority).then_with(|| o.id.cmp(&self.id))
    }
}

/// The cube's projected radius in pixels and its spacing in pixels at its nearest point.
fn measure(h: &Hierarchy, i: u32, view: &SelectView) -> (f32, f32) {
    let (lo, hi) = h.local_box(i);
    let center = (lo + hi) * 0.5;
    let radius = (hi - lo).length() * 0.5;
    if let Some(px_per_m) = view.ortho_px_per_m {
        return (radius * px_per_m, h.spacing_m(i) as f32 * px_per_m);
    }
    let distance = center.distance(view.eye);
    let nearest = view.eye.clamp(lo, hi).distance(view.eye);
    let priority =
        if distance <= radius || !distance.is_finite() { f32::MAX } else { radius / distance * view.px_per_rad };
    let spacing_px = if nearest <= 0.0 { f32::MAX } else { h.spacing_m(i) as f32 / nearest * view.px_per_rad };
    (priority, spacing_px)
}

fn in_view(h: &Hierarchy, i: u32, view: &SelectView) -> bool {
    let (lo, hi) = h.local_box(i);
    let b = Batch { min: lo.to_array(), max: hi.to_array(), scale: [0.0; 3], num_points: 0 };
    !batch_culled(&view.uniforms, &b)
}

/// The nodes of `tiles` to draw from `view` within `opts` (see the module doc).
pub fn select(tiles: &[Hierarchy], view: &SelectView, opts: &SelectOptions) -> Selection {
    let mut heap = BinaryHeap::new();
    for (t, h) in tiles.iter().enumerate() {
        if let Some(root) = h.root {
            let (priority, _) = measure(h, root, view);
            heap.push(Queued { priority, id: NodeId { tile: t as u32, node: root } });
        }
    }
    let mut out = Selection::default();
    while let Some(q) = heap.pop() {
        let h = &tiles[q.id.tile as usize];
        if !in_view(h, q.id.node, view) {
            continue;
        }
        let points = h.node(q.id.node).point_count;
        let slots = slots_for(points);
        if out.points + points > opts.point_budget || out.slots + slots > opts.slot_budget {
            out.budget_hit = true;
            break;
        }
        out.points += points;
        out.slots += slots;
        out.nodes.push(Selected { id: q.id, priority: q.priority });
        let (_, spacing_px) = measure(h, q.id.node, view);
        if spacing_px > opts.target_spacing_px {
            for &c in h.children(q.id.node) {
                let (priority, _) = measure(h, c, view);
                heap.push(Queued { priority, id: NodeId { tile: q.id.tile, node: c } });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Mat4;
    use pcv_camera::lens::FOV_Y_RAD;
    use pcv_render::FrameParams;
    use std::collections::HashSet;

    /// A full octree over the cube [0, 64)³ to `depth`, `points` points a node.
    fn full_octree(depth: u32, points: u64) -> Octree {
        let mut nodes = Vec::new();
        for d in 0..=depth {
            let n = 1u32 << d;
            for x in 0..n {
                for y in 0..n {
                    for z in 0..n {
                        nodes.push(OctreeNode {
                            key: NodeKey::new(d, x, y, z),
                            point_count: points,
                            byte_offset: 0,
                            byte_size: 0,
                        });
                    }
                }
            }
        }
        Octree {
            cube: Cube { min: DVec3::ZERO, size: 64.0 },
            root_spacing_m: 1.0,
            points_min: DVec3::ZERO,
            points_max: DVec3::splat(64.0),
            nodes,
        }
    }

    /// A camera at `eye` looking along `dir`, 640×480.
    fn view_at(eye: Vec3, dir: Vec3) -> SelectView {
        let (w, h) = (640, 480);
        let view_from_world = Mat4::look_to_rh(eye, dir, Vec3::Z);
        let clip_from_view = Mat4::perspective_rh_gl(FOV_Y_RAD, w as f32 / h as f32, 0.1, 1000.0);
        let frame = FrameParams::new(clip_from_view * view_from_world, w, h);
        SelectView::new(&frame, eye, FOV_Y_RAD)
    }

    fn opts(point_budget: u64) -> SelectOptions {
        SelectOptions { point_budget, slot_budget: u64::MAX, target_spacing_px: 1.0 }
    }

    fn check_closed(tiles: &[Hierarchy], s: &Selection) {
        let mut seen = HashSet::new();
        for n in &s.nodes {
            if let Some(p) = tiles[n.id.tile as usize].parent(n.id.node) {
                assert!(seen.contains(&NodeId { tile: n.id.tile, node: p }), "{:?} selected before its parent", n.id);
            }
            assert!(seen.insert(n.id), "{:?} selected twice", n.id);
        }
    }

    #[test]
    fn budget_is_respected_and_parents_come_first() {
        let tiles = vec![Hierarchy::new(full_octree(4, 1000), DVec3::ZERO)];
        let view = view_at(Vec3::new(-10.0, 32.0, 32.0), Vec3::X);
        for budget in [0, 999, 1000, 8_500, 20_000, 123_456] {
            let s = select(&tiles, &view, &opts(budget));
            assert!(s.points <= budget, "{} points over a budget of {budget}", s.points);
            assert_eq!(s.points, s.nodes.len() as u64 * 1000);
            assert_eq!(
                s.budget_hit,
                s.points + 1000 > budget || s.nodes.is_empty() && budget < 1000,
                "budget {budget}"
            );
            check_closed(&tiles, &s);
            assert_eq!(s.nodes.is_empty(), budget < 1000);
            if let Some(first) = s.nodes.first() {
                assert_eq!(tiles[0].node(first.id.node).key, NodeKey::ROOT);
            }
        }
        // A budget above the whole octree selects only what the view needs, never past the budget.
        let all = select(&tiles, &view, &opts(u64::MAX));
        assert!(!all.budget_hit);
        check_closed(&tiles, &all);
    }

    #[test]
    fn nodes_outside_the_frustum_are_not_selected() {
        let tiles = vec![Hierarchy::new(full_octree(3, 10), DVec3::ZERO)];
        // Inside the cube at its centre, looking along +x: nothing wholly behind the eye (x < 32) at
        // depth 3 (cells of 8) is drawn, and the front cells are.
        let view = view_at(Vec3::new(32.0, 32.0, 32.0), Vec3::X);
        let s = select(&tiles, &view, &opts(u64::MAX));
        check_closed(&tiles, &s);
        let keys: Vec<NodeKey> = s.nodes.iter().map(|n| tiles[0].node(n.id.node).key).collect();
        assert!(keys.iter().filter(|k| k.depth == 3).all(|k| k.x >= 3), "a node behind the eye was selected: {keys:?}");
        assert!(keys.contains(&NodeKey::new(3, 5, 4, 4)), "the node ahead is selected");
        assert!(!keys.contains(&NodeKey::new(3, 0, 4, 4)));
        // Looking away from the whole cube: nothing at all.
        let away = select(&tiles, &view_at(Vec3::new(-10.0, 32.0, 32.0), -Vec3::X), &opts(u64::MAX));
        assert!(away.nodes.is_empty(), "{:?}", away.nodes);
    }

    #[test]
    fn nearest_and_largest_first() {
        let tiles = vec![Hierarchy::new(full_octree(2, 100), DVec3::ZERO)];
        let view = view_at(Vec3::new(-5.0, 32.0, 32.0), Vec3::X);
        // Root plus four children: the four nearest depth-1 cubes are those with x = 0.
        let s = select(&tiles, &view, &opts(500));
        assert_eq!(s.nodes.len(), 5);
        for n in &s.nodes[1..] {
            let k = tiles[0].node(n.id.node).key;
            assert_eq!((k.depth, k.x), (1, 0), "{k:?}");
        }
        let pr: Vec<f32> = s.nodes.iter().map(|n| n.priority).collect();
        assert!(pr.windows(2).all(|w| w[0] >= w[1]), "priorities fall: {pr:?}");
    }

    #[test]
    fn orthographic_views_refine_by_their_scale_not_the_eye() {
        let tiles = vec![Hierarchy::new(full_octree(5, 100_000), DVec3::ZERO)];
        let (w, h) = (800u32, 600u32);
        let ortho = |half_height_m: f32, eye_back_m: f32| {
            let eye = Vec3::new(32.0, 32.0, 64.0) + Vec3::Z * eye_back_m;
            let view_from_world = Mat4::look_at_rh(eye, eye - Vec3::Z, Vec3::Y);
            let aspect = w as f32 / h as f32;
            let hh = half_height_m;
            let clip = Mat4::orthographic_rh_gl(-hh * aspect, hh * aspect, -hh, hh, 0.0, eye_back_m + 66.0);
            let frame = pcv_render::FrameParams::new(clip * view_from_world, w, h);
            SelectView::new(&frame, eye, FOV_Y_RAD)
        };
        let big = opts(u64::MAX);
        // The eye's distance changes nothing; zooming in (a smaller half height) refines deeper.
        let (near, far) = (select(&tiles, &ortho(40.0, 2.0), &big), select(&tiles, &ortho(40.0, 200.0), &big));
        assert_eq!(near.nodes.len(), far.nodes.len());
        assert!(ortho(40.0, 2.0).ortho_px_per_m.is_some() && view_at(Vec3::ONE, -Vec3::ONE).ortho_px_per_m.is_none());
        let zoomed = select(&tiles, &ortho(2.0, 2.0), &big);
        let depth = |s: &Selection| s.nodes.iter().map(|n| tiles[0].node(n.id.node).key.depth).max().unwrap();
        assert!(depth(&zoomed) > depth(&near), "{} vs {}", depth(&zoomed), depth(&near));
    }

    #[test]
    fn far_cameras_stop_refining() {
        let tiles = vec![Hierarchy::new(full_octree(4, 10), DVec3::ZERO)];
        // From 10 km the root's 1 m spacing is well under a pixel: the root alone.
        let far = select(&tiles, &view_at(Vec3::new(-10_000.0, 32.0, 32.0), Vec3::X), &opts(u64::MAX));
        assert_eq!(far.nodes.len(), 1);
        let near = select(&tiles, &view_at(Vec3::new(-10.0, 32.0, 32.0), Vec3::X), &opts(u64::MAX));
        assert!(near.nodes.iter().any(|n| tiles[0].node(n.id.node).key.depth == 4));
    }

    #[test]
    fn tiles_join_one_selection_and_slots_limit_it() {
        // Two tiles side by side, in one scene whose origin is the first tile's corner.
        let a = full_octree(2, 5000);
        let mut b = full_octree(2, 5000);
        b.cube.min = DVec3::new(64.0, 0.0, 0.0);
        let tiles = vec![Hierarchy::new(a, DVec3::ZERO), Hierarchy::new(b, DVec3::ZERO)];
        let view = view_at(Vec3::new(64.0, -40.0, 32.0), Vec3::Y);
        let s = select(&tiles, &view, &opts(u64::MAX));
        check_closed(&tiles, &s);
        assert!(s.nodes.iter().any(|n| n.id.tile == 0) && s.nodes.iter().any(|n| n.id.tile == 1));
        // 5000 points take 2 slots: 7 slots hold 3 nodes.
        let limited = select(&tiles, &view, &SelectOptions { slot_budget: 7, ..opts(u64::MAX) });
        assert_eq!((limited.nodes.len(), limited.slots), (3, 6));
        assert!(limited.budget_hit);
    }
}
