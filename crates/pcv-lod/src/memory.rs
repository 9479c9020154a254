//! An octree built in memory from a cloud: a [`NodeSource`] for tests, for `pcv --lod` on the built-in
//! scene or on files that are not COPC, and for measuring level of detail without a COPC file.
//!
//! How it works (random sampling, as Entwine and Potree's "random" sampler do): with `n` points and a
//! root meant to hold about `root_points`, the leaf depth is `D = ceil(log4(n / root_points))`. Each
//! point draws a level from a hash of its index: level ℓ < D with probability `3 · 4^(ℓ−D)` (level 0:
//! `4^−D`), the rest level D, so the points of levels 0..=ℓ are a uniform sample of `4^(ℓ−D)` of all —
//! on a scanned surface, twice as dense in each direction per level. A point goes to the node of its
//! level whose cube holds it. The root's spacing is the cloud's spacing ([`pcv_io::spacing`])
//! times `2^D`. Building runs on all cores in two passes (keys and counts, then a scatter into one
//! array grouped by node); it holds the points twice at its peak (16 bytes each).
use glam::DVec3;
use pcv_io::octree::{Cube, NodeError, NodeKey, NodePoints, NodeSource, Octree, OctreeNode};
use pcv_io::{Point, PointCloud};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Points the root is meant to hold.
pub const DEFAULT_ROOT_POINTS: u64 = 50_000;
/// The deepest level the builder makes.
pub const MAX_DEPTH: u32 = 20;

/// An octree whose nodes' points are in memory.
pub struct MemorySource {
    name: String,
    octree: Octree,
    /// Every point, grouped by node (`ranges[i]` for `octree.nodes[i]`), relative to `origin`.
    points: Vec<Point>,
    ranges: Vec<Range<usize>>,
    index: HashMap<NodeKey, usize>,
    origin: DVec3,
    /// The cloud's coordinate system.
    crs: Option<pcv_io::crs_model::Crs>,
}

/// A 64-bit mix (splitmix64's finalizer).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The level of point `i` among levels 0..=depth (see the module doc).
fn level_of(i: u64, depth: u32) -> u32 {
    // u uniform in [0, 2^(2 depth)): level ℓ when u < 4^ℓ (ℓ the smallest such).
    if depth == 0 {
        return 0;
    }
    let u = mix(i) >> (64 - 2 * depth);
    if u == 0 {
        0
    } else {
        (64 - u.leading_zeros()).div_ceil(2).min(depth)
    }
}

fn pack(k: &NodeKey) -> u64 {
    (k.depth as u64) << 60 | (k.x as u64) << 40 | (k.y as u64) << 20 | k.z as u64
}

impl MemorySource {
    /// Builds the octree of `cloud`'s host points (a lazy built-in scene is made on the CPU first).
    pub fn build(cloud: &PointCloud, root_points: u64) -> MemorySource {
        let points = cloud.host_points(true);
        let mut s = Self::build_points(&points, cloud.origin, &cloud.label, root_points);
        s.crs = cloud.crs().cloned();
        s
    }

    /// Builds the octree of `points` (relative to `origin`), named `name`. Non-finite points are dropped.
    pub fn build_points(points: &[Point], origin: DVec3, name: &str, root_points: u64) -> MemorySource {
        let bounds = pcv_io::Bounds::of_points(points);
        let n = points.len() as u64;
        let depth = if bounds.is_empty() || n == 0 {
            0
        } else {
            let mut d = 0;
            while d < MAX_DEPTH && (root_points.max(1) << (2 * d)) < n {
                d += 1;
            }
            d
        };
        let (lo, hi) = if bounds.is_empty() { (glam::Vec3::ZERO, glam::Vec3::ZERO) } else { (bounds.min, bounds.max) };
        // The cube: the bounds' largest side, centred on the bounds, a hair larger so that the max lies inside.
        let size = ((hi - lo).max_element() as f64 * (1.0 + 1e-6)).max(1e-6);
        let center = (lo.as_dvec3() + hi.as_dvec3()) * 0.5;
        let cube = Cube { min: origin + center - DVec3::splat(size * 0.5), size };
        let cube_min_local = center - DVec3::splat(size * 0.5);
        let key_of = |i: usize, p: &Point| -> Option<NodeKey> {
            if !p.pos.iter().all(|v| v.is_finite()) {
                return None;
            }
            let d = level_of(i as u64, depth);
            let cells = (1u64 << d) as f64;
            let c = |k: usize| {
                (((p.pos[k] as f64 - cube_min_local[k]) / size * cells).floor().clamp(0.0, cells - 1.0)) as u32
            };
            Some(NodeKey::new(d, c(0), c(1), c(2)))
        };
        // Pass 1: every point's node key, and the nodes' counts.
        let keys: Vec<u64> =
            points.par_iter().enumerate().map(|(i, p)| key_of(i, p).map_or(u64::MAX, |k| pack(&k))).collect();
        let counts: HashMap<u64, u64> = keys
            .par_chunks(1 << 20)
            .map(|chunk| {
                let mut m = HashMap::new();
                for &k in chunk.iter().filter(|&&k| k != u64::MAX) {
                    *m.entry(k).or_insert(0u64) += 1;
                }
                m
            })
            .reduce(HashMap::new, |mut a, b| {
                for (k, v) in b {
                    *a.entry(k).or_insert(0) += v;
                }
                a
            });
        let mut packed: Vec<u64> = counts.keys().copied().collect();
        packed.sort_unstable();
        // Every ancestor of a node is listed (empty where it holds no points), as COPC lists them.
        let mut all: std::collections::BTreeSet<u64> = packed.iter().copied().collect();
        for &k in &packed {
            let mut key = unpack(k);
            while let Some(p) = key.parent() {
                all.insert(pack(&p));
                key = p;
            }
        }
        let order: Vec<u64> = all.into_iter().collect();
        let slot: HashMap<u64, usize> = order.iter().enumerate().map(|(i, k)| (*k, i)).collect();
        let mut ranges = Vec::with_capacity(order.len());
        let mut at = 0usize;
        for k in &order {
            let c = counts.get(k).copied().unwrap_or(0) as usize;
            ranges.push(at..at + c);
            at += c;
        }
        // Pass 2: scatter into one array grouped by node.
        let cursors: Vec<AtomicU64> = ranges.iter().map(|r| AtomicU64::new(r.start as u64)).collect();
        let mut grouped = vec![Point::default(); at];
        {
            let out = SharedOut(grouped.as_mut_ptr(), grouped.len());
            keys.par_iter().zip(points.par_iter()).for_each(|(&k, p)| {
                if k == u64::MAX {
                    return;
                }
                if let Some(&s) = slot.get(&k) {
                    let i = cursors[s].fetch_add(1, Ordering::Relaxed) as usize;
                    out.write(i, *p);
                }
            });
        }
        drop(keys);
        let nodes: Vec<OctreeNode> = order
            .iter()
            .zip(&ranges)
            .map(|(k, r)| OctreeNode {
                key: unpack(*k),
                point_count: (r.end - r.start) as u64,
                byte_offset: 16 * r.start as u64,
                byte_size: 16 * (r.end - r.start) as u64,
            })
            .collect();
        let spacing_all = pcv_io::spacing::estimate_points(points, n) as f64;
        let root_spacing_m = if spacing_all > 0.0 { spacing_all * f64::from(1u32 << depth) } else { size / 100.0 };
        let index = nodes.iter().enumerate().map(|(i, n)| (n.key, i)).collect();
        let octree = Octree {
            cube,
            root_spacing_m,
            points_min: origin + lo.as_dvec3(),
            points_max: origin + hi.as_dvec3(),
            nodes,
        };
        MemorySource {
            name: format!("{name} (octree in memory)"),
            octree,
            points: grouped,
            ranges,
            index,
            origin,
            crs: None,
        }
    }

    /// The position of the points' local (0, 0, 0) in the source's coordinates.
    pub fn origin(&self) -> DVec3 {
        self.origin
    }
}

fn unpack(k: u64) -> NodeKey {
    let m = (1u64 << 20) - 1;
    NodeKey::new((k >> 60) as u32, ((k >> 40) & m) as u32, ((k >> 20) & m) as u32, (k & m) as u32)
}

/// The scatter's output: disjoint indices written from many threads.
struct SharedOut(*mut Point, usize);
// SAFETY: every index is written by exactly one thread (each comes from a distinct atomic cursor
// increment within its node's range), and the buffer outlives the parallel loop that uses this.
unsafe impl Sync for SharedOut {}
unsafe impl Send for SharedOut {}

impl SharedOut {
    fn write(&self, i: usize, p: Point) {
        assert!(i < self.1, "scatter index {i} outside {} points", self.1);
        // SAFETY: `i` is in bounds (asserted) and no other thread writes index `i` (see the Sync impl).
        unsafe { self.0.add(i).write(p) };
    }
}

impl NodeSource for MemorySource {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn octree(&self) -> &Octree {
        &self.octree
    }

    fn crs(&self) -> Option<Result<pcv_io::crs_model::Crs, String>> {
        self.crs.clone().map(Ok)
    }

    fn read_node(
        &self,
        node: &OctreeNode,
        origin: DVec3,
        _fields: pcv_io::formats::FieldSet,
    ) -> Result<NodePoints, NodeError> {
        let i = *self
            .index
            .get(&node.key)
            .ok_or_else(|| NodeError::Unknown { source_name: self.name.clone(), key: node.key })?;
        let pts = &self.points[self.ranges[i].clone()];
        let shift = self.origin - origin;
        let points = if shift == DVec3::ZERO {
            pts.to_vec()
        } else {
            pts.iter()
                .map(|p| {
                    let q = DVec3::new(p.pos[0] as f64, p.pos[1] as f64, p.pos[2] as f64) + shift;
                    Point::new(q.as_vec3().to_array(), p.rgba)
                })
                .collect()
        };
        Ok(NodePoints { points, intensity: None, classification: None, fields: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::is_descendant_or_self;

    #[test]
    fn every_point_lands_once_in_the_node_whose_cube_holds_it() {
        let cloud = pcv_io::scene::generate(200_000, 7, false);
        let src = MemorySource::build(&cloud, 5_000);
        let o = src.octree();
        assert_eq!(o.total_points(), 200_000);
        assert!(o.max_depth() >= 2, "depth {}", o.max_depth());
        let mut seen: Vec<[u32; 4]> = Vec::new();
        for n in &o.nodes {
            let c = n.key.cube_in(&o.cube);
            let pts = src.read_node(n, DVec3::ZERO, Default::default()).unwrap().points;
            assert_eq!(pts.len() as u64, n.point_count);
            for p in &pts {
                for k in 0..3 {
                    let v = p.pos[k] as f64;
                    assert!(v >= c.min[k] - 1e-4 && v <= c.max()[k] + 1e-4, "{:?} outside {:?}", p.pos, n.key);
                }
            }
            if let Some(parent) = n.key.parent() {
                assert!(o.nodes.iter().any(|m| m.key == parent), "parent of {:?} listed", n.key);
                assert!(is_descendant_or_self(&n.key, &parent));
            }
            seen.extend(pts.iter().map(|p| bytemuck::cast::<Point, [u32; 4]>(*p)));
        }
        let mut all: Vec<[u32; 4]> = cloud.points.iter().map(|p| bytemuck::cast(*p)).collect();
        all.sort_unstable();
        seen.sort_unstable();
        assert_eq!(all, seen, "the nodes hold exactly the cloud's points");
        // Levels grow about 4x: the root holds about a 4^-D share.
        let root = o.nodes.iter().find(|n| n.key == NodeKey::ROOT).unwrap();
        let d = o.max_depth();
        let expect = 200_000.0 / 4f64.powi(d as i32);
        assert!(
            (root.point_count as f64 - expect).abs() < expect * 0.2 + 50.0,
            "root {} vs {expect}",
            root.point_count
        );
        assert!((o.spacing_at_m(d) - pcv_io::spacing::estimate(&cloud) as f64).abs() < 1e-3);
    }

    #[test]
    fn nodes_are_read_relative_to_any_origin() {
        let pts: Vec<Point> = (0..1000).map(|i| Point::new([i as f32 * 0.01, 0.5, 0.25], [1, 2, 3, 255])).collect();
        let src = MemorySource::build_points(&pts, DVec3::new(500_000.0, 4_000_000.0, 10.0), "t", 100);
        let n = src.octree().nodes.iter().find(|n| n.point_count > 0).copied().unwrap();
        let a = src.read_node(&n, src.origin(), Default::default()).unwrap().points;
        let b = src.read_node(&n, src.origin() + DVec3::new(1.0, -2.0, 0.5), Default::default()).unwrap().points;
        for (p, q) in a.iter().zip(&b) {
            let back = [q.pos[0] as f64 + 1.0, q.pos[1] as f64 - 2.0, q.pos[2] as f64 + 0.5];
            for k in 0..3 {
                assert!((back[k] - p.pos[k] as f64).abs() < 1e-6, "{back:?} vs {:?}", p.pos);
            }
            assert_eq!(p.rgba, q.rgba);
        }
        let missing = OctreeNode { key: NodeKey::new(9, 1, 1, 1), point_count: 1, byte_offset: 0, byte_size: 0 };
        let e = src.read_node(&missing, DVec3::ZERO, Default::default()).unwrap_err().to_string();
        assert!(e.contains("t (octree in memory)") && e.contains("not in its octree"), "{e}");
    }
}
