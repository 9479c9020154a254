//! `pcv convert IN... -o OUT.copc.laz`: a COPC 1.0 file from any input, in bounded memory.
//!
//! How it works, in three passes over data on disk:
//! 1. **Spill.** Every input is decoded with its exact values (as the LAS writer's: f64 coordinates,
//!    16-bit colors, intensity, classification) on all cores and appended to a temporary file of 33-byte
//!    records, while the bounds, the count and the inputs' grids are gathered. Memory: the decoder's
//!    staging slots.
//! 2. **Partition.** The scale and offset are chosen as the LAS writer chooses them (the inputs' own
//!    scale and the first input's offset when every input is LAS/LAZ on one scale, else the finest
//!    power-of-ten scale that fits), the cube is the bounds' bounding cube, and the records are
//!    quantized into LAS 1.4 point records (format 6, or 7 with colors) and sorted into the cells of the
//!    octree at a partition depth P (each cell about 2 M points for a surface: 4^P cells), as blocks of
//!    64 KiB appended to a second temporary file. Memory: one block per cell.
//! 3. **Build.** Cells are processed in parallel (rayon), each in memory: from its cell at depth P down,
//!    a node of more than [`NODE_MAX_POINTS`] keeps the first point of each cell of a 128³ grid over its
//!    cube (the node's spacing: the cube's edge / 128) and hands the rest to its eight children; smaller
//!    nodes keep all. Every node below depth P is compressed (one LAZ chunk each, layered LAS 1.4
//!    compression, nodes in parallel) and appended to the output as soon as its cell is done. The cells'
//!    own nodes then feed the levels above P bottom-up: a parent takes, from its children's points, the
//!    first of each cell of its own grid (so each level is again a spacing-subsample, and every point
//!    stays in exactly one node); those nodes are compressed last.
//!
//! The output has the COPC info VLR first (center, half size, the root's spacing, the hierarchy's
//! offset), the LASzip VLR (variable-size chunks), the nodes' chunks after the chunk-table offset, the
//! LAZ chunk table (so plain LAZ readers read it too), and one hierarchy page as an EVLR (user "copc",
//! record 1000) listing every node, with empty ancestors (count 0) so that every node's parent is
//! listed. The temporary files are next to the output (inputs larger than RAM are larger than /tmp too)
//! and removed when done or on error.
use super::ConvertError;
use crate::cloud::formats::copc::hierarchy::{entry_bytes, CopcInfo, ENTRY_LEN};
use crate::cloud::formats::{las as lasfmt, Progress};
use crate::cloud::load::{self, FileBytes, LoadOptions};
use crate::cloud::octree::NodeKey;
use crate::cloud::stream::{stream_with, Staging, StreamError, Verdict};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A node with more points than this is split: it keeps a grid sample and hands the rest down.
pub const NODE_MAX_POINTS: usize = 100_000;
/// Cells per axis of a node's sampling grid (its spacing is its cube's edge / this).
pub const GRID: u32 = 128;
/// A partition cell holds about this many points (of a surface) on average.
const CELL_TARGET_POINTS: u64 = 2_000_000;
/// The deepest partition: 4^6 = 4096 cells of a surface.
const MAX_PARTITION_DEPTH: u32 = 6;
/// Nodes are not split below this depth (a pile of identical points stays in one node).
const MAX_NODE_DEPTH: u32 = 24;
/// Bytes of a spilled record: f64 × 3, rgb u16 × 3, intensity u16, class u8.
const SPILL_LEN: usize = 33;
/// Bytes buffered per partition cell before they go to disk.
const BLOCK_BYTES: usize = 64 << 10;

/// What [`write`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct CopcSummary {
    pub points: u64,
    pub nodes: u64,
    pub max_depth: u32,
    pub seconds: f64,
}

/// A temporary file removed when dropped.
struct Temp {
    path: PathBuf,
    file: std::fs::File,
}

impl Temp {
    fn new(next_to: &Path, what: &str) -> Result<Temp, ConvertError> {
        let name = next_to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
        let path = next_to.with_file_name(format!(".{name}.pcv-{what}-{}", std::process::id()));
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).map_err(|source| ConvertError::Io { path: path.clone(), source })?;
        Ok(Temp { path, file })
    }

    fn io(&self) -> impl Fn(std::io::Error) -> ConvertError + '_ {
        |source| ConvertError::Io { path: self.path.clone(), source }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Pass 1's result.
struct Spilled {
    count: u64,
    min: [f64; 3],
    max: [f64; 3],
    rgb: bool,
    /// Every input is LAS/LAZ on one scale: (scale, the first input's offset).
    las_grid: Option<([f64; 3], [f64; 3])>,
}

fn spill(inputs: &[PathBuf], tmp: &mut Temp, opts: &LoadOptions) -> Result<Spilled, ConvertError> {
    let progress = Progress::new(0, opts.progress);
    let mut s = Spilled { count: 0, min: [f64::INFINITY; 3], max: [f64::NEG_INFINITY; 3], rgb: false, las_grid: None };
    let mut grids: Vec<Option<([f64; 3], [f64; 3])>> = Vec::new();
    let io_tmp = |source| ConvertError::Io { path: tmp.path.clone(), source };
    let mut w = BufWriter::with_capacity(4 << 20, tmp.file.try_clone().map_err(io_tmp)?);
    for path in inputs {
        let bytes = FileBytes::open(path)?;
        let data = bytes.bytes();
        let format = load::detect(path, data)?;
        let input = |source| ConvertError::Input { path: path.clone(), source };
        grids.push(if lasfmt::sniff(data) { lasfmt::parse_header(data).ok().map(|h| (h.scale, h.offset)) } else { None });
        if opts.progress && inputs.len() > 1 {
            progress.set_file(path.display().to_string());
        }
        let src = load::open_source(data, format, load::is_pts(path)).map_err(input)?;
        progress.add_total(src.reserve_points());
        s.rgb |= src.has_rgb();
        let start = w.stream_position().map_err(io_tmp)?;
        loop {
            let (mut count, mut lo, mut hi) = (0u64, s.min, s.max);
            let mut buf = Vec::new();
            let stats = stream_with(&*src, &[0.0; 3], &progress, true, &mut |st: &Staging| -> Result<(), ConvertError> {
                if st.first_nonfinite.is_some() {
                    return Ok(()); // reported below, with its index in the file
                }
                buf.clear();
                buf.reserve(st.len() * SPILL_LEN);
                for i in 0..st.len() {
                    let v = st.xyz64[i];
                    for k in 0..3 {
                        lo[k] = lo[k].min(v[k]);
                        hi[k] = hi[k].max(v[k]);
                        buf.extend_from_slice(&v[k].to_le_bytes());
                    }
                    let c = if st.colorless { [0; 3] } else { st.rgb16[i] };
                    c.iter().for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
                    let inten = st.intensity.get(i).map_or(0, |t| t.round().clamp(0.0, 65535.0) as u16);
                    buf.extend_from_slice(&inten.to_le_bytes());
                    buf.push(st.classification.get(i).copied().unwrap_or(0));
                }
                count += st.len() as u64;
                w.write_all(&buf).map_err(|source| ConvertError::Io { path: tmp.path.clone(), source })
            })
            .map_err(|e| match e {
                StreamError::Decode(source) => input(source),
                StreamError::Sink(e) => e,
            })?;
            if let Some(point) = stats.first_nonfinite {
                return Err(ConvertError::NonFinite { path: path.clone(), point });
            }
            if src.finish(&stats).map_err(input)? == Verdict::Done {
                s.count += count;
                s.min = lo;
                s.max = hi;
                break;
            }
            // The decoder decodes again (8-bit colors guessed wrong): overwrite this input's records.
            w.seek(SeekFrom::Start(start)).map_err(io_tmp)?;
        }
        let end = w.stream_position().map_err(io_tmp)?;
        w.flush().map_err(io_tmp)?;
        tmp.file.set_len(end).map_err(io_tmp)?;
    }
    w.flush().map_err(io_tmp)?;
    progress.finish();
    if grids.iter().all(|g| g.is_some_and(|g| Some(g.0) == grids[0].map(|f| f.0))) {
        s.las_grid = grids[0];
    }
    Ok(s)
}

/// The output's point layout and grid.
#[derive(Clone, Copy, Debug)]
struct Layout {
    format: u8,
    record_len: usize,
    scale: [f64; 3],
    offset: [f64; 3],
    /// Nodes with more points than this are split.
    node_max: usize,
    /// The cube (in integer coordinates of the output's grid, as f64): min corner and edge.
    cube_min: [f64; 3],
    cube_size: f64,
}

impl Layout {
    /// The point's cell at `depth` (integer coordinates `q`).
    #[inline]
    fn cell(&self, q: [i32; 3], depth: u32) -> [u32; 3] {
        let n = (1u64 << depth) as f64;
        std::array::from_fn(|k| {
            let real = q[k] as f64 * self.scale[k] + self.offset[k];
            (((real - self.cube_min[k]) / self.cube_size * n).floor().max(0.0) as u64).min((1u64 << depth) - 1) as u32
        })
    }

    /// The cell of a node's `GRID³` sampling grid that `q` falls in.
    #[inline]
    fn grid_cell(&self, q: [i32; 3], key: NodeKey) -> u32 {
        let c = self.cell(q, key.depth + 7); // GRID = 2^7
        let (bx, by, bz) = (key.x << 7, key.y << 7, key.z << 7);
        let l = |v: u32, b: u32| v.saturating_sub(b).min(GRID - 1);
        (l(c[0], bx) * GRID + l(c[1], by)) * GRID + l(c[2], bz)
    }

    fn quantize(&self, v: [f64; 3]) -> Option<[i32; 3]> {
        let r: [f64; 3] = std::array::from_fn(|k| ((v[k] - self.offset[k]) / self.scale[k]).round());
        r.iter().all(|x| x.abs() < 2_147_483_647.0).then(|| r.map(|x| x as i32))
    }
}

fn qxyz(rec: &[u8]) -> [i32; 3] {
    std::array::from_fn(|k| i32::from_le_bytes(std::array::from_fn(|b| rec[4 * k + b])))
}

/// Writes `inputs` as a COPC file at `out` (a temporary path the caller renames).
pub fn write(inputs: &[PathBuf], out: &Path, opts: &LoadOptions) -> Result<CopcSummary, ConvertError> {
    write_with(inputs, out, opts, NODE_MAX_POINTS)
}

/// [`write`], splitting nodes of more than `node_max_points` (small octrees for tests and fuzz seeds).
pub fn write_with(inputs: &[PathBuf], out: &Path, opts: &LoadOptions, node_max_points: usize) -> Result<CopcSummary, ConvertError> {
    let t0 = std::time::Instant::now();
    let mut spill_tmp = Temp::new(out, "spill")?;
    let s = spill(inputs, &mut spill_tmp, opts)?;
    let (format, record_len) = if s.rgb { (7u8, 36usize) } else { (6, 30) };
    // The grid: the inputs' own when they share one and the extent fits it, else the LAS writer's.
    let mut scale = [0.001; 3];
    let mut offset = [0.0; 3];
    for k in 0..3 {
        if s.count > 0 {
            let own = s.las_grid.filter(|(sc, of)| ((s.min[k] - of[k]) / sc[k]).abs() < 2.0e9 && ((s.max[k] - of[k]) / sc[k]).abs() < 2.0e9);
            let (sc, of) = match own {
                Some((sc, of)) => (sc[k], of[k]),
                None => super::writers::axis_grid(s.min[k], s.max[k])
                    .ok_or_else(|| ConvertError::Write(format!("the extent {}..{} does not fit LAS's 32-bit coordinates", s.min[k], s.max[k])))?,
            };
            scale[k] = sc;
            offset[k] = of;
        }
    }
    let extent = (0..3).map(|k| s.max[k] - s.min[k]).fold(0.0f64, f64::max);
    // A cube a hair larger than the points, so the largest coordinate is inside it.
    let cube_size = if s.count == 0 { 1.0 } else { (extent * (1.0 + 1e-9)).max(scale[0].max(scale[1]).max(scale[2])) };
    let center: [f64; 3] = std::array::from_fn(|k| if s.count == 0 { 0.0 } else { (s.min[k] + s.max[k]) * 0.5 });
    let lay = Layout { format, record_len, scale, offset, node_max: node_max_points.max(1), cube_min: std::array::from_fn(|k| center[k] - cube_size * 0.5), cube_size };
    let mut depth_p = 0u32;
    while depth_p < MAX_PARTITION_DEPTH && s.count > CELL_TARGET_POINTS << (2 * depth_p) {
        depth_p += 1;
    }

    // Pass 2: quantize and partition.
    let mut part_tmp = Temp::new(out, "cells")?;
    let blocks = partition(&mut spill_tmp, &mut part_tmp, &s, &lay, depth_p)?;
    drop(spill_tmp);

    // Pass 3: the output's header and VLRs first (rewritten at the end), then the nodes.
    let laz_vlr = laz::LazVlrBuilder::default()
        .with_point_format(format, 0)
        .map_err(|e| ConvertError::Laz(e.to_string()))?
        .with_variable_chunk_size()
        .build();
    let io_out = |source| ConvertError::Io { path: out.into(), source };
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(out).map_err(io_out)?;
    let mut laz_data = Vec::new();
    laz_vlr.write_to(&mut laz_data).map_err(io_out)?;
    let data_offset = 375 + 54 + 160 + 54 + laz_data.len() as u64;
    let mut w = BufWriter::with_capacity(4 << 20, file);
    w.write_all(&vec![0u8; data_offset as usize + 8]).map_err(io_out)?;
    let sink = Mutex::new(NodeSink { w, at: data_offset + 8, entries: Vec::new(), error: None });
    let compress = |key: NodeKey, recs: &[u8]| -> Result<Vec<u8>, ConvertError> {
        use laz::record::{LayeredPointRecordCompressor, RecordCompressor};
        let mut c = LayeredPointRecordCompressor::new(std::io::Cursor::new(Vec::with_capacity(recs.len() / 4)));
        c.set_fields_from(laz_vlr.items()).map_err(|e| ConvertError::Laz(e.to_string()))?;
        c.compress_many(recs).and_then(|_| c.done()).map_err(|e| ConvertError::Laz(format!("node {key:?}: {e}")))?;
        Ok(c.into_inner().into_inner())
    };
    let progress = Progress::new(s.count, opts.progress);
    progress.set_file("building the octree".into());
    let cells: Vec<(u32, Vec<(u64, u32)>)> = blocks.into_iter().collect();
    let tops: Vec<(NodeKey, Vec<u8>)> = cells
        .into_par_iter()
        .map(|(cell, blocks)| -> Result<(NodeKey, Vec<u8>), ConvertError> {
            let mut data = Vec::with_capacity(blocks.iter().map(|b| b.1 as usize).sum());
            for (at, len) in blocks {
                let mut b = vec![0u8; len as usize];
                read_exact_at(&part_tmp.file, &mut b, at).map_err(part_tmp.io())?;
                data.extend_from_slice(&b);
            }
            let key = cell_key(cell, depth_p);
            let mut nodes = Vec::new();
            let top = build(&lay, key, data, &mut nodes);
            let done: Vec<(NodeKey, usize, Vec<u8>)> = nodes
                .into_par_iter()
                .map(|(k, recs)| compress(k, &recs).map(|c| (k, recs.len() / lay.record_len, c)))
                .collect::<Result<_, _>>()?;
            progress.inc(done.iter().map(|d| d.1 as u64).sum());
            sink.lock().map_err(|_| ConvertError::Write("a writer thread failed".into()))?.put(done);
            Ok((key, top))
        })
        .collect::<Result<_, _>>()?;
    drop(part_tmp);
    // Levels above the partition, bottom-up.
    let mut level: BTreeMap<NodeKey, Vec<u8>> = tops.into_iter().collect();
    let mut upper: Vec<(NodeKey, Vec<u8>)> = Vec::new();
    for d in (0..depth_p).rev() {
        let mut parents: BTreeMap<NodeKey, Vec<u8>> = BTreeMap::new();
        let mut taken: HashMap<NodeKey, HashSet<u32>> = HashMap::new();
        for (key, recs) in std::mem::take(&mut level) {
            let Some(parent) = key.parent() else { continue };
            debug_assert_eq!(parent.depth, d);
            let cells = taken.entry(parent).or_default();
            let pr = parents.entry(parent).or_default();
            let mut keep = Vec::with_capacity(recs.len());
            for rec in recs.chunks_exact(lay.record_len) {
                if cells.insert(lay.grid_cell(qxyz(rec), parent)) {
                    pr.extend_from_slice(rec);
                } else {
                    keep.extend_from_slice(rec);
                }
            }
            upper.push((key, keep));
        }
        level = parents;
    }
    upper.extend(level);
    let done: Vec<(NodeKey, usize, Vec<u8>)> = upper
        .into_par_iter()
        .map(|(k, recs)| if recs.is_empty() { Ok((k, 0, Vec::new())) } else { compress(k, &recs).map(|c| (k, recs.len() / lay.record_len, c)) })
        .collect::<Result<_, _>>()?;
    progress.inc(done.iter().map(|d| d.1 as u64).sum());
    let mut sink = sink.into_inner().map_err(|_| ConvertError::Write("a writer thread failed".into()))?;
    sink.put(done);
    if let Some(e) = sink.error.take() {
        return Err(io_out(e));
    }
    progress.finish();
    let summary = finish(sink, &lay, &s, center, cube_size, data_offset, &laz_vlr, laz_data, out)?;
    Ok(CopcSummary { seconds: t0.elapsed().as_secs_f64(), ..summary })
}

/// The partition cell `cell` (x, y, z interleaved as x + n·(y + n·z)) at `depth` as a key.
fn cell_key(cell: u32, depth: u32) -> NodeKey {
    let n = 1u32 << depth;
    NodeKey::new(depth, cell % n, (cell / n) % n, cell / (n * n))
}

/// Positioned read of exactly `buf.len()` bytes.
fn read_exact_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            match std::os::windows::fs::FileExt::seek_read(f, &mut buf[done..], at + done as u64)? {
                0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

/// Pass 2: spilled records → quantized point records, in blocks per partition cell. Returns each
/// cell's blocks (offset, bytes) in the cells file.
fn partition(spill: &mut Temp, cells: &mut Temp, s: &Spilled, lay: &Layout, depth: u32) -> Result<BTreeMap<u32, Vec<(u64, u32)>>, ConvertError> {
    spill.file.seek(SeekFrom::Start(0)).map_err(spill.io())?;
    let mut r = std::io::BufReader::with_capacity(4 << 20, &spill.file);
    let mut w = BufWriter::with_capacity(4 << 20, &cells.file);
    let mut at = 0u64;
    let mut bufs: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut blocks: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
    let n = 1u32 << depth;
    let batch = 1usize << 18;
    let mut raw = vec![0u8; batch * SPILL_LEN];
    let mut left = s.count;
    let mut index = 0u64;
    while left > 0 {
        let m = (left as usize).min(batch);
        r.read_exact(&mut raw[..m * SPILL_LEN]).map_err(spill.io())?;
        // Quantize in parallel, then sort into the cells' buffers.
        let recs: Vec<(u32, [u8; 36])> = raw[..m * SPILL_LEN]
            .par_chunks_exact(SPILL_LEN)
            .enumerate()
            .map(|(i, sp)| {
                let v: [f64; 3] = std::array::from_fn(|k| f64::from_le_bytes(std::array::from_fn(|b| sp[8 * k + b])));
                let q = lay.quantize(v).ok_or(i)?;
                let mut rec = [0u8; 36];
                for k in 0..3 {
                    rec[4 * k..4 * k + 4].copy_from_slice(&q[k].to_le_bytes());
                }
                rec[12..14].copy_from_slice(&sp[30..32]); // intensity
                rec[14] = 0x11; // return 1 of 1
                rec[16] = sp[32]; // classification
                rec[30..36].copy_from_slice(&sp[24..30]); // rgb (format 7)
                let c = lay.cell(q, depth);
                Ok(((c[2] * n + c[1]) * n + c[0], rec))
            })
            .collect::<Result<_, usize>>()
            .map_err(|i| ConvertError::Write(format!("point {} does not fit LAS's 32-bit coordinates at scale {:?}", index + i as u64, lay.scale)))?;
        for (cell, rec) in recs {
            let b = bufs.entry(cell).or_insert_with(|| Vec::with_capacity(BLOCK_BYTES));
            b.extend_from_slice(&rec[..lay.record_len]);
            if b.len() + lay.record_len > BLOCK_BYTES {
                w.write_all(b).map_err(cells.io())?;
                blocks.entry(cell).or_default().push((at, b.len() as u32));
                at += b.len() as u64;
                b.clear();
            }
        }
        left -= m as u64;
        index += m as u64;
    }
    for (cell, b) in bufs {
        if !b.is_empty() {
            w.write_all(&b).map_err(cells.io())?;
            blocks.entry(cell).or_default().push((at, b.len() as u32));
            at += b.len() as u64;
        }
    }
    w.flush().map_err(cells.io())?;
    Ok(blocks)
}

/// Builds the subtree of `key` from `recs` (point records): pushes every node below `key` with its
/// records into `nodes` and returns `key`'s own records.
fn build(lay: &Layout, key: NodeKey, recs: Vec<u8>, nodes: &mut Vec<(NodeKey, Vec<u8>)>) -> Vec<u8> {
    let n = recs.len() / lay.record_len;
    if n <= lay.node_max || key.depth >= MAX_NODE_DEPTH {
        return recs;
    }
    let mut taken = HashSet::with_capacity(n.min(1 << 20));
    let mut own = Vec::new();
    let mut kids: [Vec<u8>; 8] = Default::default();
    for rec in recs.chunks_exact(lay.record_len) {
        let q = qxyz(rec);
        if taken.insert(lay.grid_cell(q, key)) {
            own.extend_from_slice(rec);
        } else {
            let c = lay.cell(q, key.depth + 1);
            let i = c[0].saturating_sub(2 * key.x).min(1) + 2 * c[1].saturating_sub(2 * key.y).min(1) + 4 * c[2].saturating_sub(2 * key.z).min(1);
            kids[i.min(7) as usize].extend_from_slice(rec);
        }
    }
    drop(recs);
    for (i, k) in kids.into_iter().enumerate() {
        if !k.is_empty() {
            let child = key.children()[i];
            let mine = build(lay, child, k, nodes);
            nodes.push((child, mine));
        }
    }
    own
}

/// Where compressed nodes go: the output, in the order they come.
struct NodeSink {
    w: BufWriter<std::fs::File>,
    at: u64,
    /// Key, points, byte offset, bytes.
    entries: Vec<(NodeKey, u64, u64, u64)>,
    error: Option<std::io::Error>,
}

impl NodeSink {
    fn put(&mut self, nodes: Vec<(NodeKey, usize, Vec<u8>)>) {
        for (key, count, bytes) in nodes {
            if count == 0 {
                self.entries.push((key, 0, 0, 0));
                continue;
            }
            if self.error.is_none() {
                if let Err(e) = self.w.write_all(&bytes) {
                    self.error = Some(e);
                }
            }
            self.entries.push((key, count as u64, self.at, bytes.len() as u64));
            self.at += bytes.len() as u64;
        }
    }
}

/// Writes the chunk table, the hierarchy EVLR and the header with its VLRs.
#[allow(clippy::too_many_arguments)]
fn finish(
    mut sink: NodeSink,
    lay: &Layout,
    s: &Spilled,
    center: [f64; 3],
    cube_size: f64,
    data_offset: u64,
    laz_vlr: &laz::LazVlr,
    laz_data: Vec<u8>,
    out: &Path,
) -> Result<CopcSummary, ConvertError> {
    let io = |source| ConvertError::Io { path: out.into(), source };
    // Every ancestor of a node is listed (count 0 where it holds no points).
    let mut listed: HashSet<NodeKey> = sink.entries.iter().map(|e| e.0).collect();
    let mut missing = Vec::new();
    for e in &sink.entries {
        let mut k = e.0;
        while let Some(p) = k.parent() {
            if listed.insert(p) {
                missing.push((p, 0, 0, 0));
            }
            k = p;
        }
    }
    if s.count > 0 && listed.insert(NodeKey::ROOT) {
        missing.push((NodeKey::ROOT, 0, 0, 0));
    }
    sink.entries.extend(missing);
    sink.entries.sort_by_key(|e| e.0);
    let table_at = sink.at;
    let mut table = laz::laszip::ChunkTable::with_capacity(sink.entries.len());
    for e in sink.entries.iter().filter(|e| e.1 > 0).map(|e| (e.2, e)).collect::<BTreeMap<_, _>>().values() {
        table.push(laz::laszip::ChunkTableEntry { point_count: e.1, byte_count: e.3 });
    }
    let mut tbytes = Vec::new();
    table.write_to(&mut tbytes, laz_vlr).map_err(io)?;
    sink.w.write_all(&tbytes).map_err(io)?;
    let evlr_at = table_at + tbytes.len() as u64;
    let page: Vec<u8> = sink.entries.iter().flat_map(|e| entry_bytes(e.0, e.2, e.3 as i32, e.1 as i32)).collect();
    debug_assert_eq!(page.len(), sink.entries.len() * ENTRY_LEN);
    let mut evlr = Vec::with_capacity(60);
    evlr.extend_from_slice(&0u16.to_le_bytes());
    evlr.extend_from_slice(&user_id("copc"));
    evlr.extend_from_slice(&1000u16.to_le_bytes());
    evlr.extend_from_slice(&(page.len() as u64).to_le_bytes());
    evlr.extend_from_slice(&description("COPC hierarchy"));
    sink.w.write_all(&evlr).map_err(io)?;
    sink.w.write_all(&page).map_err(io)?;
    let page_at = evlr_at + 60;
    let info = CopcInfo {
        center,
        halfsize: cube_size * 0.5,
        spacing: cube_size / GRID as f64,
        root_hier_offset: page_at,
        root_hier_size: page.len() as u64,
        gpstime_min: 0.0,
        gpstime_max: 0.0,
    };
    // Header.
    let n = s.count;
    let (qlo, qhi) = (lay.quantize(s.min).unwrap_or([0; 3]), lay.quantize(s.max).unwrap_or([0; 3]));
    let real = |k: usize, v: i32| if n == 0 { 0.0 } else { v as f64 * lay.scale[k] + lay.offset[k] };
    let mut h = Vec::with_capacity(375);
    h.extend_from_slice(b"LASF");
    h.extend_from_slice(&0u16.to_le_bytes()); // file source id
    h.extend_from_slice(&(1u16 << 4).to_le_bytes()); // WKT bit, required for formats 6-10
    h.extend_from_slice(&[0u8; 16]); // GUID
    h.extend_from_slice(&[1, 4]);
    h.extend_from_slice(&padded::<32>("pcv"));
    h.extend_from_slice(&padded::<32>(&format!("pcv {}", env!("CARGO_PKG_VERSION"))));
    let (day, year) = super::writers::today();
    h.extend_from_slice(&day.to_le_bytes());
    h.extend_from_slice(&year.to_le_bytes());
    h.extend_from_slice(&375u16.to_le_bytes());
    h.extend_from_slice(&(data_offset as u32).to_le_bytes());
    h.extend_from_slice(&2u32.to_le_bytes()); // VLRs
    h.push(lay.format | 0x80);
    h.extend_from_slice(&(lay.record_len as u16).to_le_bytes());
    h.extend_from_slice(&0u32.to_le_bytes()); // legacy count (0 for formats 6-10)
    h.extend_from_slice(&[0u8; 20]); // legacy counts by return
    lay.scale.iter().for_each(|v| h.extend_from_slice(&v.to_le_bytes()));
    lay.offset.iter().for_each(|v| h.extend_from_slice(&v.to_le_bytes()));
    for k in 0..3 {
        h.extend_from_slice(&real(k, qhi[k]).to_le_bytes());
        h.extend_from_slice(&real(k, qlo[k]).to_le_bytes());
    }
    h.extend_from_slice(&0u64.to_le_bytes()); // waveform
    h.extend_from_slice(&evlr_at.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h.extend_from_slice(&n.to_le_bytes());
    h.extend_from_slice(&n.to_le_bytes()); // all first returns
    h.extend_from_slice(&[0u8; 14 * 8]);
    debug_assert_eq!(h.len(), 375);
    let mut vlrs = Vec::new();
    vlr_header(&mut vlrs, "copc", 1, 160, "COPC info");
    vlrs.extend_from_slice(&info.to_bytes());
    vlr_header(&mut vlrs, "laszip encoded", 22204, laz_data.len() as u16, "pcv by laz");
    vlrs.extend_from_slice(&laz_data);
    debug_assert_eq!(375 + vlrs.len() as u64, data_offset);
    let mut file = sink.w.into_inner().map_err(|e| io(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(&h).map_err(io)?;
    file.write_all(&vlrs).map_err(io)?;
    file.write_all(&(table_at as i64).to_le_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    let max_depth = sink.entries.iter().map(|e| e.0.depth).max().unwrap_or(0);
    Ok(CopcSummary { points: n, nodes: sink.entries.len() as u64, max_depth, seconds: 0.0 })
}

fn padded<const N: usize>(s: &str) -> [u8; N] {
    let mut b = [0u8; N];
    let n = s.len().min(N);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    b
}

fn user_id(s: &str) -> [u8; 16] {
    padded::<16>(s)
}

fn description(s: &str) -> [u8; 32] {
    padded::<32>(s)
}

fn vlr_header(out: &mut Vec<u8>, user: &str, record: u16, len: u16, desc: &str) {
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&user_id(user));
    out.extend_from_slice(&record.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&description(desc));
}
