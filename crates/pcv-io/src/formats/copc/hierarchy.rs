//! COPC's info VLR and hierarchy pages: the octree of a COPC file.
//!
//! How it works: the info VLR (user "copc", record 1, 160 bytes) gives the root cube (center and half
//! size), the root's point spacing and where the root hierarchy page is. A page is a list of 32-byte
//! entries: a key (depth, x, y, z as i32), an offset (u64), a byte size (i32) and a point count (i32).
//! A count of -1 means the entry points to another page (offset and size are the page's); 0 is a node
//! without points (COPC lists them for their children); more is a node whose points are one LAZ chunk at
//! that offset. Pages are read breadth first through a callback (a file, memory or HTTP ranges).
//!
//! Everything is checked before it is believed, so a damaged file gives an error naming the file, the
//! page's byte offset and the entry, never a panic or an allocation larger than the file: a page lies
//! inside the file and is a whole number of entries, pages are read once each and together hold at
//! most the file's size, keys are inside the octree (x, y, z < 2^depth, depth ≤ 30) and unique, a node's
//! chunk lies inside the file and declares no more points than its bytes can hold, and every node but
//! the root has its parent in the hierarchy (the level-of-detail selection walks down from the root).
use crate::octree::{NodeKey, OctreeNode};
use std::collections::{HashMap, VecDeque};

/// The COPC info VLR.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct CopcInfo {
    pub center: [f64; 3],
    pub halfsize: f64,
    /// The root node's point spacing.
    pub spacing: f64,
    pub root_hier_offset: u64,
    pub root_hier_size: u64,
    pub gpstime_min: f64,
    pub gpstime_max: f64,
}

/// The info VLR's size.
pub const INFO_LEN: usize = 160;
/// A hierarchy entry's size.
pub const ENTRY_LEN: usize = 32;
/// The deepest level accepted (cells still fit a u32 and the cube's size divides exactly).
pub const MAX_DEPTH: i32 = 30;
/// A LAZ point takes at least this fraction of a byte: a node may declare at most this many records'
/// bytes per byte of its chunk (as the LAZ reader's check).
const MAX_LAZ_RATIO: u64 = 2048;

fn f64at(d: &[u8], o: usize) -> f64 {
    f64::from_le_bytes(std::array::from_fn(|k| d[o + k]))
}
fn u64at(d: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(std::array::from_fn(|k| d[o + k]))
}
fn i32at(d: &[u8], o: usize) -> i32 {
    i32::from_le_bytes(std::array::from_fn(|k| d[o + k]))
}

impl CopcInfo {
    /// Parses the VLR's data (`at`: its byte offset in the file, for messages).
    pub fn parse(d: &[u8], at: u64) -> Result<CopcInfo, String> {
        if d.len() < INFO_LEN {
            return Err(format!("byte {at}: the COPC info VLR holds {} bytes, not {INFO_LEN}", d.len()));
        }
        let info = CopcInfo {
            center: [f64at(d, 0), f64at(d, 8), f64at(d, 16)],
            halfsize: f64at(d, 24),
            spacing: f64at(d, 32),
            root_hier_offset: u64at(d, 40),
            root_hier_size: u64at(d, 48),
            gpstime_min: f64at(d, 56),
            gpstime_max: f64at(d, 64),
        };
        if !info.center.iter().all(|v| v.is_finite()) {
            return Err(format!("byte {at}: the COPC center {:?} is not finite", info.center));
        }
        if !(info.halfsize.is_finite() && info.halfsize > 0.0) {
            return Err(format!("byte {}: the COPC half size {} is not a positive number", at + 24, info.halfsize));
        }
        if !(info.spacing.is_finite() && info.spacing >= 0.0) {
            return Err(format!("byte {}: the COPC spacing {} is not a number ≥ 0", at + 32, info.spacing));
        }
        Ok(info)
    }

    /// The VLR's 160 bytes.
    pub fn to_bytes(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        let vals = [self.center[0], self.center[1], self.center[2], self.halfsize, self.spacing];
        for (k, v) in vals.iter().enumerate() {
            b[8 * k..8 * k + 8].copy_from_slice(&v.to_le_bytes());
        }
        b[40..48].copy_from_slice(&self.root_hier_offset.to_le_bytes());
        b[48..56].copy_from_slice(&self.root_hier_size.to_le_bytes());
        b[56..64].copy_from_slice(&self.gpstime_min.to_le_bytes());
        b[64..72].copy_from_slice(&self.gpstime_max.to_le_bytes());
        b
    }
}

/// One hierarchy entry, serialized.
pub fn entry_bytes(key: NodeKey, offset: u64, byte_size: i32, point_count: i32) -> [u8; ENTRY_LEN] {
    let mut b = [0u8; ENTRY_LEN];
    for (k, v) in [key.depth, key.x, key.y, key.z].iter().enumerate() {
        b[4 * k..4 * k + 4].copy_from_slice(&(*v as i32).to_le_bytes());
    }
    b[16..24].copy_from_slice(&offset.to_le_bytes());
    b[24..28].copy_from_slice(&byte_size.to_le_bytes());
    b[28..32].copy_from_slice(&point_count.to_le_bytes());
    b
}

/// Reads every page from the root one (`root`: offset and size) of a `file_len`-byte file whose point
/// records are `record_len` bytes; `fetch(offset, len)` returns a page's bytes. Returns every node
/// (points or not), in page order.
pub fn read(
    root: (u64, u64),
    file_len: u64,
    record_len: u16,
    fetch: &mut dyn FnMut(u64, usize) -> Result<Vec<u8>, String>,
) -> Result<Vec<OctreeNode>, String> {
    let mut queue = VecDeque::from([(root.0, root.1, None::<(u64, usize)>)]);
    let mut pages_read: HashMap<u64, ()> = HashMap::new();
    let mut bytes_read = 0u64;
    let mut nodes: Vec<OctreeNode> = Vec::new();
    let mut seen: HashMap<NodeKey, (u64, usize)> = HashMap::new();
    while let Some((offset, size, from)) = queue.pop_front() {
        let whose = match from {
            None => "the root hierarchy page (from the COPC info VLR)".to_string(),
            Some((page, k)) => format!("the hierarchy page named by entry {k} of the page at byte {page}"),
        };
        if size == 0 || size % ENTRY_LEN as u64 != 0 {
            return Err(format!(
                "{whose}: byte {offset}: its size {size} is not a positive multiple of {ENTRY_LEN} bytes"
            ));
        }
        if offset.checked_add(size).is_none_or(|end| end > file_len) {
            return Err(format!(
                "{whose}: bytes {offset}..{} are past the end of the {file_len}-byte file",
                offset as u128 + size as u128
            ));
        }
        if pages_read.insert(offset, ()).is_some() {
            return Err(format!("{whose}: byte {offset}: this page was already read (the hierarchy loops)"));
        }
        bytes_read += size;
        if bytes_read > file_len {
            return Err(format!(
                "{whose}: byte {offset}: the hierarchy pages add up to more bytes than the {file_len}-byte file holds"
            ));
        }
        let page = fetch(offset, size as usize).map_err(|e| format!("{whose}: {e}"))?;
        if page.len() as u64 != size {
            return Err(format!("{whose}: byte {offset}: {} bytes read of {size}", page.len()));
        }
        for (k, e) in page.chunks_exact(ENTRY_LEN).enumerate() {
            let at = offset + (k * ENTRY_LEN) as u64;
            let bad = |m: String| format!("hierarchy page at byte {offset}, entry {k} (byte {at}): {m}");
            let (d, x, y, z) = (i32at(e, 0), i32at(e, 4), i32at(e, 8), i32at(e, 12));
            if !(0..=MAX_DEPTH).contains(&d) {
                return Err(bad(format!("depth {d} is not 0..={MAX_DEPTH}")));
            }
            let cells = 1i64 << d;
            if [x, y, z].iter().any(|&c| c < 0 || c as i64 >= cells) {
                return Err(bad(format!(
                    "key ({d}, {x}, {y}, {z}) is outside the octree (cells 0..{cells} at depth {d})"
                )));
            }
            let key = NodeKey::new(d as u32, x as u32, y as u32, z as u32);
            let (off, bytes, count) = (u64at(e, 16), i32at(e, 24), i32at(e, 28));
            if count == -1 {
                if bytes <= 0 {
                    return Err(bad(format!("a child page of {bytes} bytes")));
                }
                queue.push_back((off, bytes as u64, Some((offset, k))));
                continue;
            }
            if count < -1 {
                return Err(bad(format!("point count {count} (only -1, for a child page, may be negative)")));
            }
            if let Some((p, j)) = seen.insert(key, (offset, k)) {
                return Err(bad(format!(
                    "node ({d}, {x}, {y}, {z}) is listed twice (also entry {j} of the page at byte {p})"
                )));
            }
            if count == 0 {
                nodes.push(OctreeNode { key, point_count: 0, byte_offset: 0, byte_size: 0 });
                continue;
            }
            if bytes <= 0 {
                return Err(bad(format!("{count} points in {bytes} bytes")));
            }
            if off.checked_add(bytes as u64).is_none_or(|end| end > file_len) {
                return Err(bad(format!(
                    "its points at bytes {off}..{} are past the end of the {file_len}-byte file",
                    off as u128 + bytes as u128
                )));
            }
            if count as u64 * record_len as u64 > bytes as u64 * MAX_LAZ_RATIO {
                return Err(bad(format!("{count} points of {record_len} bytes cannot be in {bytes} compressed bytes")));
            }
            nodes.push(OctreeNode { key, point_count: count as u64, byte_offset: off, byte_size: bytes as u64 });
        }
    }
    for n in &nodes {
        if let Some(p) = n.key.parent() {
            if !seen.contains_key(&p) {
                let (page, k) = seen[&n.key];
                return Err(format!(
                    "hierarchy page at byte {page}, entry {k}: node ({}, {}, {}, {}) has no parent ({}, {}, {}, {}) in the hierarchy",
                    n.key.depth, n.key.x, n.key.y, n.key.z, p.depth, p.x, p.y, p.z
                ));
            }
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(entries: &[[u8; ENTRY_LEN]]) -> Vec<u8> {
        entries.concat()
    }

    fn read_mem(file: &[u8], root: (u64, u64)) -> Result<Vec<OctreeNode>, String> {
        read(root, file.len() as u64, 30, &mut |o, l| Ok(file[o as usize..o as usize + l].to_vec()))
    }

    #[test]
    fn pages_and_child_pages() {
        // Bytes 0..1000: point data; root page at 1000 (root, one empty child, a child page), child page after.
        let mut file = vec![0u8; 1000];
        let child = [entry_bytes(NodeKey::new(2, 3, 3, 3), 500, 100, 50)];
        let child_at = 1000 + 3 * ENTRY_LEN as u64;
        let root = [
            entry_bytes(NodeKey::ROOT, 0, 400, 100),
            entry_bytes(NodeKey::new(1, 1, 1, 1), 0, 0, 0),
            entry_bytes(NodeKey::new(2, 3, 3, 3), child_at, ENTRY_LEN as i32, -1),
        ];
        file.extend(page(&root));
        file.extend(page(&child));
        let nodes = read_mem(&file, (1000, 3 * ENTRY_LEN as u64)).unwrap();
        assert_eq!(nodes.len(), 3);
        assert_eq!(
            nodes[2],
            OctreeNode { key: NodeKey::new(2, 3, 3, 3), point_count: 50, byte_offset: 500, byte_size: 100 }
        );
        assert_eq!(nodes[1].point_count, 0);
    }

    #[test]
    fn damaged_pages_name_the_page_and_entry() {
        let mut file = vec![0u8; 1000];
        let root = [entry_bytes(NodeKey::ROOT, 0, 400, 100), entry_bytes(NodeKey::new(1, 2, 0, 0), 0, 400, 10)];
        file.extend(page(&root));
        let e = read_mem(&file, (1000, 64)).unwrap_err();
        assert!(e.contains("page at byte 1000, entry 1 (byte 1032)") && e.contains("outside the octree"), "{e}");
        // A page past the end, a page of a partial entry, a loop, a missing parent, a chunk past the end.
        assert!(read_mem(&file, (1000, 640)).unwrap_err().contains("past the end"));
        assert!(read_mem(&file, (1000, 40)).unwrap_err().contains("multiple of 32"));
        let mut file = vec![0u8; 1000];
        file.extend(page(&[entry_bytes(NodeKey::ROOT, 1000, 32, -1)]));
        assert!(read_mem(&file, (1000, 32)).unwrap_err().contains("already read"));
        let mut file = vec![0u8; 1000];
        file.extend(page(&[
            entry_bytes(NodeKey::ROOT, 0, 400, 100),
            entry_bytes(NodeKey::new(2, 0, 0, 0), 0, 400, 10),
        ]));
        assert!(read_mem(&file, (1000, 64)).unwrap_err().contains("has no parent"));
        let mut file = vec![0u8; 1000];
        file.extend(page(&[entry_bytes(NodeKey::ROOT, 900, 400, 100)]));
        assert!(read_mem(&file, (1000, 32))
            .unwrap_err()
            .contains("entry 0 (byte 1000): its points at bytes 900..1300"));
        let mut file = vec![0u8; 1000];
        file.extend(page(&[entry_bytes(NodeKey::ROOT, 0, 1, 1_000_000)]));
        assert!(read_mem(&file, (1000, 32)).unwrap_err().contains("cannot be in 1 compressed bytes"));
    }

    #[test]
    fn info_round_trips() {
        let i = CopcInfo {
            center: [1.0, 2.0, 3.0],
            halfsize: 4.0,
            spacing: 0.5,
            root_hier_offset: 9,
            root_hier_size: 64,
            gpstime_min: 1.0,
            gpstime_max: 2.0,
        };
        assert_eq!(CopcInfo::parse(&i.to_bytes(), 0).unwrap(), i);
        let mut b = i.to_bytes();
        b[24..32].copy_from_slice(&(-1.0f64).to_le_bytes());
        assert!(CopcInfo::parse(&b, 400).unwrap_err().contains("byte 424"));
    }
}
