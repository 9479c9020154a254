//! Octrees of point nodes: what a COPC file's hierarchy describes, and how a node's points are read.
//!
//! How it works: an [`Octree`] is a cube (f64, in the source's own coordinates) and a flat list of
//! [`OctreeNode`]s, each named by its [`NodeKey`] as in COPC: the root is (0, 0, 0, 0) and the children
//! of (d, x, y, z) are (d+1, 2x+i, 2y+j, 2z+k), i, j, k in {0, 1}. A node's cube is the octree's cube cut
//! in 2^d along each axis. A node holds a sample of the points inside its cube with a spacing of about
//! `root_spacing_m / 2^d`; a node together with all its ancestors shows its cube at that detail, so a
//! level-of-detail selection draws a set of nodes closed under "parent of" (every drawn node's parent
//! is drawn). Nodes with no points may exist (COPC lists them for their children).
//!
//! [`NodeSource`] is what the level-of-detail streamer reads through: its octree, and one node's points
//! decoded into 16-byte [`Point`]s relative to an origin the caller chooses (a scene of many tiles uses
//! one common origin). A COPC file on disk or over HTTP implements it; tests implement it in memory.
use super::Point;
use glam::DVec3;

/// A node's name in its octree: depth and integer cell coordinates at that depth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct NodeKey {
    pub depth: u32,
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

/// As COPC writes keys: `depth-x-y-z`.
impl std::fmt::Display for NodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}-{}-{}", self.depth, self.x, self.y, self.z)
    }
}

impl NodeKey {
    pub const ROOT: NodeKey = NodeKey { depth: 0, x: 0, y: 0, z: 0 };

    pub fn new(depth: u32, x: u32, y: u32, z: u32) -> NodeKey {
        NodeKey { depth, x, y, z }
    }

    /// The parent's key (`None` for the root).
    pub fn parent(&self) -> Option<NodeKey> {
        (self.depth > 0).then(|| NodeKey::new(self.depth - 1, self.x / 2, self.y / 2, self.z / 2))
    }

    /// The eight children's keys, in (i, j, k) order with i the fastest.
    pub fn children(&self) -> [NodeKey; 8] {
        std::array::from_fn(|c| {
            let (i, j, k) = ((c & 1) as u32, ((c >> 1) & 1) as u32, ((c >> 2) & 1) as u32);
            NodeKey::new(self.depth + 1, 2 * self.x + i, 2 * self.y + j, 2 * self.z + k)
        })
    }

    /// This node's cube inside the octree's `cube`.
    pub fn cube_in(&self, cube: &Cube) -> Cube {
        let size = cube.size / f64::from(1u32 << self.depth.min(31));
        Cube { min: cube.min + DVec3::new(self.x as f64, self.y as f64, self.z as f64) * size, size }
    }
}

/// An axis-aligned cube in f64 (the source's coordinates).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Cube {
    pub min: DVec3,
    /// Edge length (metres for projected lidar).
    pub size: f64,
}

impl Cube {
    pub fn max(&self) -> DVec3 {
        self.min + DVec3::splat(self.size)
    }

    pub fn center(&self) -> DVec3 {
        self.min + DVec3::splat(self.size * 0.5)
    }
}

/// One node of an octree: its key, how many points it holds and where they are in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OctreeNode {
    pub key: NodeKey,
    pub point_count: u64,
    /// Where the node's (compressed) points start in the source, in bytes (a COPC node's LAZ chunk).
    pub byte_offset: u64,
    /// How many bytes they take.
    pub byte_size: u64,
}

/// An octree of nodes.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Octree {
    /// The root's cube.
    pub cube: Cube,
    /// The root's point spacing; a node at depth d has about `root_spacing_m / 2^d`.
    pub root_spacing_m: f64,
    /// Bounds of the points themselves (min, max), in the source's coordinates.
    pub points_min: DVec3,
    pub points_max: DVec3,
    /// Every node listed by the source, in any order.
    pub nodes: Vec<OctreeNode>,
}

impl Octree {
    /// The point spacing of nodes at `depth`.
    pub fn spacing_at_m(&self, depth: u32) -> f64 {
        self.root_spacing_m / f64::from(1u32 << depth.min(31))
    }

    /// The points in every node.
    pub fn total_points(&self) -> u64 {
        self.nodes.iter().map(|n| n.point_count).sum()
    }

    /// The deepest node's depth (0 for an empty or single-node octree).
    pub fn max_depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.key.depth).max().unwrap_or(0)
    }
}

/// One node's points, decoded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePoints {
    /// Positions relative to the origin passed to [`NodeSource::read_node`], colors as the loaders make
    /// them (file RGB, else the elevation ramp of the whole octree's z range, as `crate::attributes`).
    pub points: Vec<Point>,
    /// Intensity as read, when the source has it (one per point).
    pub intensity: Option<Vec<f32>>,
    /// ASPRS classification, when the source has it (one per point).
    pub classification: Option<Vec<u8>>,
    /// The fields asked of [`NodeSource::read_node`] that the source has, one value a point.
    pub fields: Vec<(crate::formats::Field, Vec<f64>)>,
}

/// Why a node could not be read. Messages name the source and the node.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{source_name}: node {key} ({byte_size} bytes at byte {byte_offset}): {what}")]
    Read { source_name: String, key: NodeKey, byte_offset: u64, byte_size: u64, what: String },
    #[error("{source_name}: node {key} is not in its octree")]
    Unknown { source_name: String, key: NodeKey },
}

/// Something an octree's nodes are read from: a COPC file (on disk or over HTTP) or, in tests, memory.
/// Reads run on background threads, several at once.
pub trait NodeSource: Send + Sync {
    /// What it is, for messages and the panel (a path or a URL).
    fn name(&self) -> String;
    /// Its octree (read once when the source is opened).
    fn octree(&self) -> &Octree;
    /// The points of `node`, relative to `origin` (f64, in the source's coordinates), with the
    /// `fields` it has of those asked (a colour or a pick asks; the plain read asks for none).
    fn read_node(
        &self,
        node: &OctreeNode,
        origin: DVec3,
        fields: crate::formats::FieldSet,
    ) -> Result<NodePoints, NodeError>;
    /// What its points carry besides positions and colours (intensity, classification, fields).
    fn columns(&self) -> crate::formats::Columns {
        Default::default()
    }
    /// Its coordinate system, when it names one (an unreadable one is the error's text).
    fn crs(&self) -> Option<Result<pcv_model::crs::Crs, String>> {
        None
    }
    /// Whether its points carry colors of their own (else they are coloured by elevation).
    fn has_rgb(&self) -> bool {
        true
    }
    /// Why none of its nodes will be read any more (a server that stopped answering), once that is so:
    /// the nodes that fail after it are counted under one message instead of one each.
    fn stopped(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parent_children_and_cubes() {
        let k = NodeKey::new(2, 3, 1, 2);
        for c in k.children() {
            assert_eq!(c.parent(), Some(k));
        }
        assert_eq!(NodeKey::ROOT.parent(), None);
        assert_eq!(k.children()[0], NodeKey::new(3, 6, 2, 4));
        assert_eq!(k.children()[7], NodeKey::new(3, 7, 3, 5));
        let cube = Cube { min: DVec3::new(100.0, 200.0, 0.0), size: 8.0 };
        let c = k.cube_in(&cube);
        assert_eq!(c, Cube { min: DVec3::new(106.0, 202.0, 4.0), size: 2.0 });
        assert_eq!(NodeKey::ROOT.cube_in(&cube), cube);
    }
}
