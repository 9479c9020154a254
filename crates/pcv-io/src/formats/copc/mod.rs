//! COPC (Cloud Optimized Point Cloud, 1.0) read natively: the octree from its hierarchy, one node at a
//! time from byte ranges of a file, memory or an HTTP(S) server.
//!
//! How it works: a COPC file is a LAZ 1.4 file (point formats 6–8) whose LAZ chunks are the nodes of an
//! octree. [`CopcFile::open`] reads only the header and VLRs (the LAS reader's checks), the COPC info
//! VLR and the hierarchy pages ([`hierarchy`]) through a [`ByteSource`], into an
//! [`Octree`](crate::octree::Octree); [`CopcFile`] is a [`NodeSource`]: a node is read as its
//! byte range and decoded ([`read`]) by the same code the LAS loader uses, so positions, intensity,
//! classification and colors are exactly what loading the file as LAZ gives. Whether the 16-bit RGB
//! fields hold 8-bit values is decided once, from the root node (a sample of the whole file); points of
//! formats without RGB get the elevation ramp over the octree's z range (the header's bounds).
//!
//! [`open`] takes a path or an `http://` / `https://` URL ([`http`]: range requests, retries, a cache).
pub mod bytes;
pub mod hierarchy;
pub mod http;
pub mod read;

pub use bytes::{ByteSource, FileSource, MemSource};
pub use hierarchy::CopcInfo;

use crate::formats::las::{self as lasfmt, Header, Vlr};
use crate::octree::{Cube, NodeError, NodePoints, NodeSource, Octree, OctreeNode};
use glam::DVec3;
use std::sync::Arc;

/// Why a COPC file could not be opened. Messages name the file (or URL) and the byte.
#[derive(Debug, thiserror::Error)]
pub enum CopcError {
    #[error("{name}: {what}")]
    Open { name: String, what: String },
    #[error("{name}: not a COPC file: {what}")]
    NotCopc { name: String, what: String },
    #[error("{name}: {what}")]
    Invalid { name: String, what: String },
}

/// The most bytes of header and VLRs read before the point data (a WKT CRS takes a few KiB).
const MAX_PREFIX: u64 = 16 << 20;

/// An opened COPC file.
pub struct CopcFile {
    src: Arc<dyn ByteSource>,
    header: Header,
    vlrs: Vec<Vlr>,
    info: CopcInfo,
    laz: laz::LazVlr,
    octree: Octree,
    /// RGB fields hold 8-bit values (decided from the root node).
    eight_bit: bool,
    /// Its coordinate system, from the OGC WKT (or GeoTIFF) VLRs.
    crs: Option<Result<pcv_model::crs::Crs, String>>,
}

/// Opens a COPC file by path or `http(s)://` URL.
pub fn open(path_or_url: &str) -> Result<Arc<dyn NodeSource>, CopcError> {
    Ok(Arc::new(open_copc(path_or_url)?))
}

/// Opens a COPC file by path or `http(s)://` URL, as the concrete type.
pub fn open_copc(path_or_url: &str) -> Result<CopcFile, CopcError> {
    open_with(path_or_url, &http::HttpOptions::default())
}

/// [`open_copc`] with the HTTP options (retries, cache) for URLs.
pub fn open_with(path_or_url: &str, http_opts: &http::HttpOptions) -> Result<CopcFile, CopcError> {
    let src: Arc<dyn ByteSource> = if http::is_url(path_or_url) {
        Arc::new(
            http::HttpSource::open(path_or_url, http_opts)
                .map_err(|what| CopcError::Open { name: path_or_url.into(), what })?,
        )
    } else {
        Arc::new(
            FileSource::open(std::path::Path::new(path_or_url))
                .map_err(|e| CopcError::Open { name: path_or_url.into(), what: e.to_string() })?,
        )
    };
    CopcFile::open(src)
}

/// Whether a file starting with `data` (its first 375 bytes or more) is COPC: LAS whose first VLR, at
/// byte 375, is the COPC info VLR.
pub fn sniff(data: &[u8]) -> bool {
    data.len() >= 375 + 54
        && data.starts_with(b"LASF")
        && &data[375 + 2..375 + 6] == b"copc"
        && data[375 + 6] == 0
        && data[375 + 18] == 1
}

impl CopcFile {
    /// Reads the header, VLRs and hierarchy of `src`.
    pub fn open(src: Arc<dyn ByteSource>) -> Result<CopcFile, CopcError> {
        let name = src.name();
        let invalid = |what: String| CopcError::Invalid { name: name.clone(), what };
        let len = src.len();
        let head =
            src.read_at(0, len.min(375) as usize).map_err(|what| CopcError::Open { name: name.clone(), what })?;
        if !lasfmt::sniff(&head) {
            return Err(CopcError::NotCopc { name, what: "it does not start with 'LASF'".into() });
        }
        if head.len() < 227 {
            return Err(invalid(format!("the file ends inside the LAS header ({} bytes)", head.len())));
        }
        let data_offset = u32::from_le_bytes([head[96], head[97], head[98], head[99]]) as u64;
        if data_offset > len || data_offset > MAX_PREFIX {
            return Err(invalid(format!("byte 96: offset to point data {data_offset} is outside the {len}-byte file (or past {MAX_PREFIX} bytes of VLRs)")));
        }
        let prefix = if data_offset as usize > head.len() {
            src.read_at(0, data_offset as usize).map_err(|what| CopcError::Open { name: name.clone(), what })?
        } else {
            head
        };
        let header = lasfmt::parse_header(&prefix).map_err(|e| invalid(e.to_string()))?;
        let vlrs = lasfmt::vlrs(&prefix, &header).map_err(|e| invalid(e.to_string()))?;
        let Some(cv) = vlrs.iter().find(|v| v.user_id == "copc" && v.record_id == 1) else {
            return Err(CopcError::NotCopc { name, what: "it has no COPC info VLR (user 'copc', record 1)".into() });
        };
        let info = CopcInfo::parse(&prefix[cv.data.clone()], cv.data.start as u64).map_err(invalid)?;
        if !header.compressed {
            return Err(invalid("byte 104: the point format is not compressed (COPC nodes are LAZ chunks)".into()));
        }
        let lz = vlrs
            .iter()
            .find(|v| v.user_id == "laszip encoded" && v.record_id == 22204)
            .ok_or_else(|| invalid("no LASzip VLR (laszip encoded/22204)".into()))?;
        let laz = laz::LazVlr::from_buffer(&prefix[lz.data.clone()])
            .map_err(|e| invalid(format!("byte {}: LASzip VLR: {e}", lz.data.start)))?;
        if laz.items().is_empty() || laz.items_size() != header.record_len as u64 {
            return Err(invalid(format!(
                "byte {}: the LASzip VLR describes {}-byte points, the header {}",
                lz.data.start,
                laz.items_size(),
                header.record_len
            )));
        }
        let nodes =
            hierarchy::read((info.root_hier_offset, info.root_hier_size), len, header.record_len, &mut |o, l| {
                src.read_at(o, l)
            })
            .map_err(invalid)?;
        let cube =
            Cube { min: DVec3::from_array(info.center) - DVec3::splat(info.halfsize), size: 2.0 * info.halfsize };
        let (points_min, points_max) = if header.min.iter().chain(&header.max).all(|v| v.is_finite())
            && (0..3).all(|k| header.min[k] <= header.max[k])
        {
            (DVec3::from_array(header.min), DVec3::from_array(header.max))
        } else {
            (cube.min, cube.max())
        };
        let octree = Octree { cube, root_spacing_m: info.spacing, points_min, points_max, nodes };
        let crs = crate::crs::from_las(&prefix, &header, &vlrs).map(|r| r.map_err(|e| e.to_string()));
        let mut f = CopcFile { src, header, vlrs, info, laz, octree, eight_bit: false, crs };
        if lasfmt::layout(f.header.format).rgb.is_some() {
            // 8- or 16-bit colours, judged from the shallowest node that decodes (the root, unless it is
            // damaged: a bad node is reported when the view reads it, not here, so the rest still shows).
            let mut nodes: Vec<OctreeNode> = f.octree.nodes.iter().filter(|n| n.point_count > 0).copied().collect();
            nodes.sort_by_key(|n| n.key.depth);
            if let Some(recs) = nodes.iter().take(4).find_map(|n| f.node_records(n).ok()) {
                f.eight_bit = read::looks_8bit(&f.header, &recs);
            }
        }
        Ok(f)
    }

    /// Opens COPC bytes held in memory (tests, fuzzing).
    pub fn from_bytes(name: &str, data: Vec<u8>) -> Result<CopcFile, CopcError> {
        CopcFile::open(Arc::new(MemSource { name: name.into(), data }))
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn vlrs(&self) -> &[Vlr] {
        &self.vlrs
    }

    pub fn info(&self) -> &CopcInfo {
        &self.info
    }

    /// The size of the file in bytes.
    pub fn file_len(&self) -> u64 {
        self.src.len()
    }

    /// A node's raw point records (the point format's, `header().record_len` bytes each), decompressed.
    pub fn node_records(&self, node: &OctreeNode) -> Result<Vec<u8>, NodeError> {
        let bytes = self.node_bytes(node)?;
        read::decompress(&bytes, node, &self.header, &self.laz, laz::DecompressionSelection::all())
            .map_err(|what| self.node_error(node, what))
    }

    /// A node's compressed bytes.
    fn node_bytes(&self, node: &OctreeNode) -> Result<Vec<u8>, NodeError> {
        self.src.read_at(node.byte_offset, node.byte_size as usize).map_err(|what| self.node_error(node, what))
    }

    /// The error of a node that failed to read or decode: the file, the node and its bytes.
    fn node_error(&self, node: &OctreeNode, what: String) -> NodeError {
        NodeError::Read {
            source_name: self.src.name(),
            key: node.key,
            byte_offset: node.byte_offset,
            byte_size: node.byte_size,
            what,
        }
    }

    /// The exact values of a node's points (f64 coordinates, 16-bit colors, ...).
    pub fn read_node_exact(&self, node: &OctreeNode) -> Result<read::ExactPoints, NodeError> {
        Ok(read::exact(&self.node_records(node)?, &self.header))
    }

    /// Points per level, nodes per level: what `pcv info` prints.
    pub fn levels(&self) -> Vec<Level> {
        let depth = self.octree.max_depth();
        (0..=depth)
            .map(|d| {
                let at = self.octree.nodes.iter().filter(|n| n.key.depth == d);
                Level {
                    depth: d,
                    nodes: at.clone().count() as u64,
                    nodes_with_points: at.clone().filter(|n| n.point_count > 0).count() as u64,
                    points: at.clone().map(|n| n.point_count).sum(),
                    bytes: at.map(|n| n.byte_size).sum(),
                    spacing: self.octree.spacing_at_m(d),
                }
            })
            .collect()
    }
}

/// One level of a COPC octree, for `pcv info`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Level {
    pub depth: u32,
    pub nodes: u64,
    pub nodes_with_points: u64,
    pub points: u64,
    /// Compressed bytes of the level's nodes.
    pub bytes: u64,
    /// The level's point spacing (the root's / 2^depth).
    pub spacing: f64,
}

impl NodeSource for CopcFile {
    fn name(&self) -> String {
        self.src.name()
    }

    fn octree(&self) -> &Octree {
        &self.octree
    }

    fn crs(&self) -> Option<Result<pcv_model::crs::Crs, String>> {
        self.crs.clone()
    }

    fn has_rgb(&self) -> bool {
        lasfmt::layout(self.header.format).rgb.is_some()
    }

    fn stopped(&self) -> Option<String> {
        self.src.stopped()
    }

    fn columns(&self) -> crate::formats::Columns {
        crate::formats::Columns {
            intensity: true,
            classification: true,
            fields: lasfmt::fields_of_header(&self.header),
        }
    }

    fn read_node(
        &self,
        node: &OctreeNode,
        origin: DVec3,
        fields: crate::formats::FieldSet,
    ) -> Result<NodePoints, NodeError> {
        let fields = fields.intersect(lasfmt::fields_of_header(&self.header));
        if node.point_count == 0 {
            return Ok(NodePoints {
                points: Vec::new(),
                intensity: Some(Vec::new()),
                classification: Some(Vec::new()),
                fields: fields.iter().map(|f| (f, Vec::new())).collect(),
            });
        }
        let bytes = self.node_bytes(node)?;
        read::decode_node(&bytes, node, &self.header, &self.laz, self.eight_bit, &self.octree, origin, fields)
            .map_err(|what| self.node_error(node, what))
    }
}

/// Opens COPC bytes and reads every node (the fuzz target's and the fuzz smoke test's entry): the
/// points read, or the first error. Never panics, whatever the bytes.
pub fn read_all_nodes(data: Vec<u8>) -> Result<u64, String> {
    let f = CopcFile::from_bytes("fuzz.copc.laz", data).map_err(|e| e.to_string())?;
    let mut n = 0u64;
    for node in &f.octree.nodes {
        n += f.read_node(node, DVec3::ZERO, Default::default()).map_err(|e| e.to_string())?.points.len() as u64;
    }
    Ok(n)
}
