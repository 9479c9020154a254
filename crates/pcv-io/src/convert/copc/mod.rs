//! `pcv convert IN... -o OUT.copc.laz`: a COPC 1.0 file from any input, in bounded memory.
//!
//! How it works, in passes over data on disk:
//! 1. **Plan.** LAS and LAZ inputs (COPC included) are opened for their headers only: the count (a LAZ
//!    count checked against its chunk table), the bounds, the grid and the point format. Other formats
//!    have no header to trust and are **spilled** ([`spill`]): decoded once into a temporary file of
//!    33-byte records while their exact bounds are gathered. The output's point format is 6, 7 (RGB) or
//!    8 (RGB and NIR), whichever keeps every input's fields; its grid is the inputs' own when every input
//!    is LAS/LAZ on one scale (the first input's offset), else the finest power-of-ten scale that fits
//!    the extent (as the LAS writer chooses); the cube is the bounds' bounding cube, two grid steps
//!    larger on each side.
//! 2. **Partition** ([`partition`]). Every input is read again where it is (LAS/LAZ directly, others from
//!    the spill) on all cores; each record becomes an output record — coordinates on the output grid,
//!    intensity, returns, flags, classification, scan angle, user data, point source ID, GPS time, RGB
//!    and NIR moved to their LAS 1.4 places (formats 0–5: the scan angle rank becomes 0.006° steps) —
//!    and goes to its cell of the octree at a partition depth P (each cell about 2 M points for a
//!    surface: 4^P cells), in 64 KiB blocks appended to a temporary cells file. The pass measures the
//!    exact bounds; when the headers' bounds were wrong (a point outside the cube, or off the 32-bit
//!    grid), the pass runs again with the measured ones.
//! 3. **Build.** Cells are processed in parallel (rayon), each in memory (its blocks are then punched out
//!    of the cells file, so the temporary disk shrinks as the output grows): from its cell at depth P
//!    down, a node of more than [`NODE_MAX_POINTS`] keeps the first point of each cell of a 128³ grid over
//!    its cube (the node's spacing: the cube's edge / 128) and hands the rest to its eight children;
//!    smaller nodes keep all. Every node below depth P is compressed (one LAZ chunk each, layered LAS 1.4
//!    compression, nodes in parallel) and appended to the output as soon as its cell is done. The cells'
//!    own nodes then feed the levels above P bottom-up, parents in parallel: a parent takes, from its
//!    children's points, the first of each cell of its own grid (so each level is again a
//!    spacing-subsample, and every point stays in exactly one node); those nodes are compressed last.
//!
//! Determinism: the records of a cell are in the inputs' order whatever the number of threads, so every
//! node holds the same points in the same order on every run; only the order of the nodes' chunks in
//! the file depends on which cell finished first.
//!
//! Temporary disk: the spill (33 B a point, non-LAS inputs only) and the cells file (the output's record
//! length, 30–38 B a point), both next to the output (inputs larger than RAM are larger than /tmp too),
//! removed when done or on error. Memory: the decoders' staging slots, a 64 KiB buffer per cell while
//! partitioning, then one cell's points per core while building (about 2 M points × the record length,
//! a few times over for a surface; more for cells of denser data), and the cells' top nodes.
//!
//! The output has the COPC info VLR first (center, half size, the root's spacing, the hierarchy's
//! offset, the GPS time range), the LASzip VLR (variable-size chunks), the first LAS input's own VLRs
//! (its CRS, extra-bytes description, ...: [`vlrs`]; its extra bytes per point follow the point format's
//! fields in every record), the nodes' chunks after the
//! chunk-table offset, the LAZ chunk table (so plain LAZ readers read it too), and one hierarchy page as
//! an EVLR (user "copc", record 1000) listing every node, with empty ancestors (count 0) so that every
//! node's parent is listed. The header counts points by return.
mod cells;
mod partition;
mod spill;
mod vlrs;

use super::{las_copy, ConvertError};
use crate::cpu_time;
use crate::formats::copc::hierarchy::{entry_bytes, CopcInfo, ENTRY_LEN};
use crate::formats::{DBounds, Progress};
use crate::load::{FileBytes, LoadOptions};
use crate::octree::NodeKey;
use partition::{format_fields, Planned, Tally};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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
/// The depth of the cells [`build`] computes once per point: that of the sampling grid of the deepest
/// node that is split (its depth + 7, GRID = 2^7).
const DEEP: u32 = MAX_NODE_DEPTH - 1 + 7;

/// What [`write`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct CopcSummary {
    pub points: u64,
    pub nodes: u64,
    pub max_depth: u32,
    pub seconds: f64,
    /// The most bytes the temporary files held at once (their allocated size on disk).
    pub temp_bytes_peak: u64,
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
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|source| ConvertError::Io { path: path.clone(), source })?;
        super::temp::register(&path);
        Ok(Temp { path, file })
    }

    fn io(&self) -> impl Fn(std::io::Error) -> ConvertError + '_ {
        |source| ConvertError::Io { path: self.path.clone(), source }
    }

    /// The bytes the file takes on disk (its allocated blocks; punched holes take none).
    fn disk_bytes(&self) -> u64 {
        let Ok(m) = self.file.metadata() else { return 0 };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            m.blocks() * 512
        }
        #[cfg(not(unix))]
        {
            m.len()
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        super::temp::unregister(&self.path);
    }
}

/// The output's point layout and grid.
#[derive(Clone, Copy, Debug)]
struct Layout {
    format: u8,
    /// Extra bytes after the point format's fields (the first LAS input's, with its description).
    extra: usize,
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
    /// The point's cell at `depth` (integer coordinates `q`): the floor of its place in the cube scaled
    /// by 2^depth, clamped to the cube. The conversion to an integer truncates, which is the floor for
    /// the values that are not clamped to 0 (NaN too becomes 0); a call of libm's `floor` per axis
    /// (x86-64's baseline has no rounding instruction) took 4 % of a conversion.
    #[inline]
    fn cell(&self, q: [i32; 3], depth: u32) -> [u32; 3] {
        let n = (1u64 << depth) as f64;
        std::array::from_fn(|k| {
            let real = q[k] as f64 * self.scale[k] + self.offset[k];
            (((real - self.cube_min[k]) / self.cube_size * n).max(0.0) as u64).min((1u64 << depth) - 1) as u32
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

    /// [`Layout::grid_cell`] of a point whose cell at depth [`DEEP`] is `deep`, and the child of `key` it
    /// falls in (its cell at depth + 1 is its grid cell at depth + 7 over 64). The cell at a depth d is the
    /// cell at `DEEP` shifted right by `DEEP` - d, exactly: [`Layout::cell`] scales the same quotient by
    /// 2^d, which rounds nothing, then floors and clamps, and both commute with halving.
    #[inline]
    fn grid_cell_and_child(deep: [u32; 3], key: NodeKey) -> (u32, usize) {
        let shift = DEEP - (key.depth + 7); // GRID = 2^7
        let l = |v: u32, b: u32| (v >> shift).saturating_sub(b << 7).min(GRID - 1);
        let (x, y, z) = (l(deep[0], key.x), l(deep[1], key.y), l(deep[2], key.z));
        ((x * GRID + y) * GRID + z, ((x >> 6) + 2 * (y >> 6) + 4 * (z >> 6)) as usize)
    }

    fn quantize(&self, v: [f64; 3]) -> Option<[i32; 3]> {
        let r: [f64; 3] = std::array::from_fn(|k| ((v[k] - self.offset[k]) / self.scale[k]).round());
        r.iter().all(|x| x.abs() < 2_147_483_647.0).then(|| r.map(|x| x as i32))
    }

    /// Whether the points of `b` (input coordinates) lie in the cube with a grid step to spare, so that
    /// on the output grid (at most half a step away) they are inside it.
    fn holds(&self, b: &DBounds) -> bool {
        let step = self.scale[0].max(self.scale[1]).max(self.scale[2]);
        b.is_empty()
            || (0..3)
                .all(|k| b.min[k] >= self.cube_min[k] + step && b.max[k] <= self.cube_min[k] + self.cube_size - step)
    }

    /// The layout for `count` points in `bounds`: the grid (`las_grid`, the inputs' own, when the
    /// extent fits it; else the LAS writer's), the cube two grid steps larger than the bounds on
    /// each side.
    fn new(
        bounds: &DBounds,
        count: u64,
        las_grid: Option<([f64; 3], [f64; 3])>,
        format: u8,
        extra: usize,
        node_max: usize,
    ) -> Result<Layout, ConvertError> {
        let mut scale = [0.001; 3];
        let mut offset = [0.0; 3];
        let known = count > 0 && !bounds.is_empty();
        if known {
            for k in 0..3 {
                let (lo, hi) = (bounds.min[k], bounds.max[k]);
                let own = las_grid
                    .filter(|(sc, of)| ((lo - of[k]) / sc[k]).abs() < 2.0e9 && ((hi - of[k]) / sc[k]).abs() < 2.0e9);
                let (sc, of) = match own {
                    Some((sc, of)) => (sc[k], of[k]),
                    None => super::writers::axis_grid(lo, hi, 1e-6).ok_or_else(|| {
                        ConvertError::Write(format!("the extent {lo}..{hi} does not fit LAS's 32-bit coordinates"))
                    })?,
                };
                scale[k] = sc;
                offset[k] = of;
            }
        } else if let Some((sc, of)) = las_grid {
            (scale, offset) = (sc, of);
        }
        let step = scale[0].max(scale[1]).max(scale[2]);
        let extent = if known { (0..3).map(|k| bounds.max[k] - bounds.min[k]).fold(0.0f64, f64::max) } else { 1.0 };
        // A cube a hair larger than the points plus two grid steps on each side.
        let cube_size = extent * (1.0 + 1e-9) + 4.0 * step;
        let center: [f64; 3] =
            std::array::from_fn(|k| if known { (bounds.min[k] + bounds.max[k]) * 0.5 } else { offset[k] });
        let record_len = partition::record_len(format) + extra;
        Ok(Layout {
            format,
            extra,
            record_len,
            scale,
            offset,
            node_max: node_max.max(1),
            cube_min: std::array::from_fn(|k| center[k] - cube_size * 0.5),
            cube_size,
        })
    }

    fn center(&self) -> [f64; 3] {
        std::array::from_fn(|k| self.cube_min[k] + self.cube_size * 0.5)
    }
}

#[inline]
fn qxyz(rec: &[u8]) -> [i32; 3] {
    std::array::from_fn(|k| i32::from_le_bytes(std::array::from_fn(|b| rec[4 * k + b])))
}

/// Writes `inputs` as a COPC file at `out` (a temporary path the caller renames).
pub fn write(inputs: &[PathBuf], out: &Path, opts: &LoadOptions) -> Result<CopcSummary, ConvertError> {
    write_with(inputs, out, opts, NODE_MAX_POINTS)
}

/// [`write`], splitting nodes of more than `node_max_points` (small octrees for tests and fuzz seeds).
/// `PCV_COPC_PHASES=1` prints each pass's end time and the temporary files' peak on stderr;
/// `PCV_LAZ_ENCODER=laz` compresses the nodes with the `laz` crate instead of pcv's encoder.
pub fn write_with(
    inputs: &[PathBuf],
    out: &Path,
    opts: &LoadOptions,
    node_max_points: usize,
) -> Result<CopcSummary, ConvertError> {
    let t0 = std::time::Instant::now();
    let phases = std::env::var_os("PCV_COPC_PHASES").is_some();
    let phase = |what: &str| {
        if phases {
            eprintln!(
                "pcv convert: {what} at {:.2} s (CPU {:.2} s)",
                t0.elapsed().as_secs_f64(),
                cpu_time::process_s()
            );
        }
    };
    // Pass 1: the LAS/LAZ inputs' headers; the other inputs spilled.
    let mut plan = Vec::with_capacity(inputs.len());
    let mut to_spill = Vec::new();
    let (mut count, mut bounds, mut rgb, mut nir, mut tolerant) = (0u64, DBounds::EMPTY, false, false, false);
    let mut grids = Vec::with_capacity(inputs.len());
    let mut global_gps_bit = None;
    let mut ids = None;
    let mut carried = vlrs::Carried::default();
    for path in inputs {
        let bytes = FileBytes::open(path)?;
        if las_copy::is_las(bytes.bytes()) {
            let input = las_copy::open(path, bytes.bytes())?;
            let h = input.header();
            count += h.count;
            let b = DBounds { min: h.min, max: h.max };
            if h.count > 0 {
                tolerant = true;
                if !b.is_empty() && b.min.iter().chain(&b.max).all(|v| v.is_finite()) {
                    bounds = DBounds::union(bounds, b);
                }
            }
            let (_, r, n) = format_fields(h.format);
            (rgb, nir) = (rgb | r, nir | n);
            grids.push(Some((h.scale, h.offset)));
            // The first LAS input says what its GPS times are (week seconds or adjusted standard).
            global_gps_bit.get_or_insert(u16::from_le_bytes([bytes.bytes()[6], bytes.bytes()[7]]) & 1);
            let b = bytes.bytes();
            ids.get_or_insert(([b[4], b[5]], b[8..24].try_into().unwrap_or_default()));
            let extra = carried.add(path, &input);
            plan.push(Planned::Las { path: path.clone(), extra });
        } else {
            grids.push(None);
            to_spill.push(path.clone());
            plan.push(Planned::Spill { path: path.clone(), start: 0, count: 0 });
        }
    }
    to_spill.iter().for_each(|p| carried.add_other(p));
    if opts.warnings {
        carried.notes.iter().for_each(|n| eprintln!("pcv convert: {n}"));
    }
    let mut temp_peak = 0u64;
    let mut spill_tmp = None;
    if !to_spill.is_empty() {
        let mut t = Temp::new(out, "spill")?;
        let progress = Progress::new(0, opts.progress);
        let s = spill::spill(&to_spill, &mut t, opts, &progress)?;
        progress.finish();
        let mut ranges = s.ranges.into_iter();
        for p in &mut plan {
            if let Planned::Spill { start, count: c, .. } = p {
                (*start, *c) = ranges.next().unwrap_or((0, 0));
                count += *c;
            }
        }
        bounds = DBounds::union(bounds, s.bounds);
        rgb |= s.rgb;
        temp_peak = t.disk_bytes();
        spill_tmp = Some(t);
        phase("spilled the inputs that are not LAS/LAZ");
    }
    let format = if nir {
        8u8
    } else if rgb {
        7
    } else {
        6
    };
    let las_grid =
        if grids.iter().all(|g| g.is_some_and(|g| Some(g.0) == grids[0].map(|f| f.0))) { grids[0] } else { None };
    let mut lay = Layout::new(&bounds, count, las_grid, format, carried.extra, node_max_points)?;
    let mut depth_p = 0u32;
    while depth_p < MAX_PARTITION_DEPTH && count > CELL_TARGET_POINTS << (2 * depth_p) {
        depth_p += 1;
    }

    // Pass 2: every point, as an output record, into its cell.
    // Striped over as many files as the partition has writer threads (see cells.rs).
    let cells_tmp = cells::CellsFile::new(out, partition::cell_stripes())?;
    let partition = |lay: &Layout, tolerant: bool, what: &str| {
        let progress = Progress::new(count, opts.progress);
        progress.set_file(what.into());
        let r = partition::partition(&plan, spill_tmp.as_ref(), &cells_tmp, lay, depth_p, tolerant, &progress);
        progress.finish();
        r
    };
    let mut parted = partition(&lay, tolerant, "partitioning")?;
    phase("partitioned");
    if tolerant && (parted.tally.misfits > 0 || !lay.holds(&parted.bounds)) {
        // A header's bounds were wrong: again, with the bounds measured.
        if opts.warnings {
            eprintln!("pcv convert: the points lie outside their files' header bounds; partitioning again with the measured bounds");
        }
        lay = Layout::new(&parted.bounds, count, las_grid, format, carried.extra, node_max_points)?;
        parted = partition(&lay, false, "partitioning again (the headers' bounds were wrong)")?;
        phase("partitioned again");
    }
    temp_peak = temp_peak.max(cells_tmp.disk_bytes() + spill_tmp.as_ref().map_or(0, |t| t.disk_bytes()));
    drop(spill_tmp);
    let (n, tally) = (parted.tally.points, parted.tally);

    // Pass 3: the output's header and VLRs first (rewritten at the end), then the nodes.
    let laz_vlr = laz::LazVlrBuilder::default()
        .with_point_format(format, carried.extra as u16)
        .map_err(|e| ConvertError::Laz(e.to_string()))?
        .with_variable_chunk_size()
        .build();
    let io_out = |source| ConvertError::Io { path: out.into(), source };
    let file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(out).map_err(io_out)?;
    let mut laz_data = Vec::new();
    laz_vlr.write_to(&mut laz_data).map_err(io_out)?;
    let data_offset = 375 + 54 + 160 + 54 + laz_data.len() as u64 + carried.bytes() as u64;
    let mut w = BufWriter::with_capacity(4 << 20, file);
    w.write_all(&vec![0u8; data_offset as usize + 8]).map_err(io_out)?;
    let sink = Mutex::new(NodeSink { w, at: data_offset + 8, entries: Vec::new(), error: None });
    // CPU time the threads spent compressing and building, for PCV_COPC_PHASES.
    let (compress_ns, build_ns) = (AtomicU64::new(0), AtomicU64::new(0));
    // pcv's own encoder for the item sets it covers (the same bytes as `laz`, less CPU);
    // `PCV_LAZ_ENCODER=laz` keeps every node on the `laz` crate (benchmarks compare the two).
    let layout = match std::env::var("PCV_LAZ_ENCODER").as_deref() {
        Ok("laz") => None,
        _ => pcv_laz::encoder::Layout::of(laz_vlr.items()).filter(|l| l.record_len() == lay.record_len),
    };
    let compress = |key: NodeKey, recs: &[u8]| -> Result<Vec<u8>, ConvertError> {
        let t = cpu_time::thread_ns();
        let r = match layout {
            Some(layout) => Ok(pcv_laz::encoder::encode_chunk(layout, recs)),
            None => compress_node(&laz_vlr, key, recs),
        };
        compress_ns.fetch_add(cpu_time::thread_ns() - t, Ordering::Relaxed);
        r
    };
    let progress = Progress::new(n, opts.progress);
    progress.set_file("building the octree".into());
    let lay = &lay;
    let tops: Vec<(NodeKey, Vec<u8>)> = parted
        .blocks
        .into_par_iter()
        .map(|(cell, blocks)| -> Result<(NodeKey, Vec<u8>), ConvertError> {
            let mut data = vec![0u8; blocks.iter().map(|b| b.1 as usize).sum()];
            let mut at = 0;
            for &(from, len) in &blocks {
                cells_tmp.read(from, &mut data[at..at + len as usize])?;
                at += len as usize;
            }
            cells_tmp.release(&blocks);
            let key = cell_key(cell, depth_p);
            let mut nodes = Vec::new();
            let t = cpu_time::thread_ns();
            let top = build(lay, key, data, &mut nodes);
            build_ns.fetch_add(cpu_time::thread_ns() - t, Ordering::Relaxed);
            let done: Vec<(NodeKey, usize, Vec<u8>)> = nodes
                .into_par_iter()
                .map(|(k, recs)| compress(k, &recs).map(|c| (k, recs.len() / lay.record_len, c)))
                .collect::<Result<_, _>>()?;
            progress.inc(done.iter().map(|d| d.1 as u64).sum());
            sink.lock().map_err(|_| ConvertError::Write("a writer thread failed".into()))?.put(done);
            Ok((key, top))
        })
        .collect::<Result<_, _>>()?;
    drop(cells_tmp);
    phase("cells built and written");
    // Levels above the partition, bottom-up; the parents of a level in parallel.
    let mut level: BTreeMap<NodeKey, Vec<u8>> = tops.into_iter().collect();
    let mut upper: Vec<(NodeKey, Vec<u8>)> = Vec::new();
    for _ in 0..depth_p {
        let mut families: BTreeMap<NodeKey, Vec<(NodeKey, Vec<u8>)>> = BTreeMap::new();
        for (key, recs) in std::mem::take(&mut level) {
            if let Some(parent) = key.parent() {
                families.entry(parent).or_default().push((key, recs));
            }
        }
        let sampled: Vec<Family> = families
            .into_par_iter()
            .map(|(parent, children)| {
                let mut taken = GridSet::new();
                let mut pr = Vec::new();
                let kept = children
                    .into_iter()
                    .map(|(key, recs)| {
                        let mut keep = Vec::with_capacity(recs.len());
                        for rec in recs.chunks_exact(lay.record_len) {
                            if taken.insert(lay.grid_cell(qxyz(rec), parent)) {
                                pr.extend_from_slice(rec);
                            } else {
                                keep.extend_from_slice(rec);
                            }
                        }
                        (key, keep)
                    })
                    .collect();
                (parent, pr, kept)
            })
            .collect();
        for (parent, pr, kept) in sampled {
            upper.extend(kept);
            level.insert(parent, pr);
        }
    }
    upper.extend(level);
    let done: Vec<(NodeKey, usize, Vec<u8>)> = upper
        .into_par_iter()
        .map(|(k, recs)| {
            if recs.is_empty() {
                Ok((k, 0, Vec::new()))
            } else {
                compress(k, &recs).map(|c| (k, recs.len() / lay.record_len, c))
            }
        })
        .collect::<Result<_, _>>()?;
    progress.inc(done.iter().map(|d| d.1 as u64).sum());
    let mut sink = sink.into_inner().map_err(|_| ConvertError::Write("a writer thread failed".into()))?;
    sink.put(done);
    if let Some(e) = sink.error.take() {
        return Err(io_out(e));
    }
    progress.finish();
    phase("upper levels written");
    let stats = Stats {
        points: n,
        bounds: parted.bounds,
        tally,
        gps_bit: global_gps_bit.unwrap_or(0),
        ids: ids.unwrap_or_default(),
        wkt: carried.wkt_bit(),
    };
    let summary = finish(sink, lay, &stats, data_offset, &laz_vlr, laz_data, &carried.records, out)?;
    if phases {
        let s = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 * 1e-9;
        eprintln!(
            "pcv convert: thread CPU time: sampling the cells' subtrees {:.2} s, LAZ compression {:.2} s ({} encoder)",
            s(&build_ns),
            s(&compress_ns),
            if layout.is_some() { "pcv's" } else { "the laz crate's" }
        );
        eprintln!(
            "pcv convert: temporary files peaked at {:.2} GB ({:.1} B a point)",
            temp_peak as f64 / 1e9,
            temp_peak as f64 / n.max(1) as f64
        );
    }
    Ok(CopcSummary { seconds: t0.elapsed().as_secs_f64(), temp_bytes_peak: temp_peak, ..summary })
}

/// One node's records as one LAZ chunk (layered LAS 1.4 compression).
fn compress_node(laz_vlr: &laz::LazVlr, key: NodeKey, recs: &[u8]) -> Result<Vec<u8>, ConvertError> {
    use laz::record::{LayeredPointRecordCompressor, RecordCompressor};
    let mut c = LayeredPointRecordCompressor::new(std::io::Cursor::new(Vec::with_capacity(recs.len() / 4)));
    c.set_fields_from(laz_vlr.items()).map_err(|e| ConvertError::Laz(e.to_string()))?;
    c.compress_many(recs).and_then(|_| c.done()).map_err(|e| ConvertError::Laz(format!("node {key:?}: {e}")))?;
    Ok(c.into_inner().into_inner())
}

/// A parent's sample of its children's points, and what each child keeps.
type Family = (NodeKey, Vec<u8>, Vec<(NodeKey, Vec<u8>)>);

/// What the header says about the points.
struct Stats {
    points: u64,
    bounds: DBounds,
    tally: Tally,
    /// Global encoding bit 0 (adjusted standard GPS time).
    gps_bit: u16,
    /// The first LAS input's file source ID and GUID (header bytes 4..6 and 8..24), kept.
    ids: ([u8; 2], [u8; 16]),
    /// Whether the CRS VLRs carried are WKT (or there are none): the header's WKT bit.
    wkt: bool,
}

/// Which cells of a node's `GRID³` sampling grid are taken (a bit each: 256 KiB).
struct GridSet(Vec<u64>);

impl GridSet {
    fn new() -> GridSet {
        GridSet(vec![0u64; (GRID * GRID * GRID / 64) as usize])
    }

    /// Marks `cell`; whether it was free.
    #[inline]
    fn insert(&mut self, cell: u32) -> bool {
        let (w, b) = ((cell / 64) as usize, 1u64 << (cell % 64));
        let free = self.0[w] & b == 0;
        self.0[w] |= b;
        free
    }
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
/// Builds the subtree of `key` from `recs` (point records): pushes every node below `key` with its
/// records into `nodes` and returns `key`'s own records.
///
/// Each point's cell at depth [`DEEP`] is computed once (three divisions), and every level's grid cell
/// and child are shifts of it; the levels split lists of record numbers (4 bytes a point, in the
/// records' order), and each node's records are copied once, when it is done.
fn build(lay: &Layout, key: NodeKey, recs: Vec<u8>, nodes: &mut Vec<(NodeKey, Vec<u8>)>) -> Vec<u8> {
    let n = recs.len() / lay.record_len;
    if n <= lay.node_max || key.depth >= MAX_NODE_DEPTH {
        return recs;
    }
    let deep: Vec<[u32; 3]> = recs.chunks_exact(lay.record_len).map(|rec| lay.cell(qxyz(rec), DEEP)).collect();
    let own = split(lay, key, &recs, &deep, (0..n as u32).collect(), nodes);
    gather(lay, &recs, &own)
}

/// The records numbered `which`, in that order.
fn gather(lay: &Layout, recs: &[u8], which: &[u32]) -> Vec<u8> {
    let len = lay.record_len;
    let mut out = vec![0u8; which.len() * len];
    if (32..=64).contains(&len) {
        // Two fixed-size 32-byte moves that overlap (inlined; a `memcpy` call per record is slower).
        for (to, &i) in out.chunks_exact_mut(len).zip(which) {
            let from = &recs[i as usize * len..(i as usize + 1) * len];
            to[..32].copy_from_slice(&from[..32]);
            to[len - 32..].copy_from_slice(&from[len - 32..]);
        }
    } else {
        for (to, &i) in out.chunks_exact_mut(len).zip(which) {
            to.copy_from_slice(&recs[i as usize * len..(i as usize + 1) * len]);
        }
    }
    out
}

/// [`build`] over the records numbered `which`: returns the numbers of those `key` keeps.
fn split(
    lay: &Layout,
    key: NodeKey,
    recs: &[u8],
    deep: &[[u32; 3]],
    which: Vec<u32>,
    nodes: &mut Vec<(NodeKey, Vec<u8>)>,
) -> Vec<u32> {
    if which.len() <= lay.node_max || key.depth >= MAX_NODE_DEPTH {
        return which;
    }
    // Where each record goes (8: this node, else the child), then each group listed in a vector of its
    // exact size.
    let mut taken = GridSet::new();
    let mut tags = Vec::with_capacity(which.len());
    let mut counts = [0usize; 9];
    for &i in &which {
        let (cell, child) = Layout::grid_cell_and_child(deep[i as usize], key);
        let t = if taken.insert(cell) { 8 } else { child };
        counts[t] += 1;
        tags.push(t as u8);
    }
    let mut groups: [Vec<u32>; 9] = std::array::from_fn(|i| Vec::with_capacity(counts[i]));
    for (&i, &t) in which.iter().zip(&tags) {
        groups[t as usize].push(i);
    }
    drop(which);
    let own = std::mem::take(&mut groups[8]);
    for (i, k) in groups.into_iter().take(8).enumerate() {
        if !k.is_empty() {
            let child = key.children()[i];
            let mine = split(lay, child, recs, deep, k, nodes);
            nodes.push((child, gather(lay, recs, &mine)));
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
#[expect(
    clippy::too_many_arguments,
    reason = "the writer's last step takes what the earlier ones made (sink, layout, stats, offsets, VLRs); bundling them would only rename them"
)]
fn finish(
    mut sink: NodeSink,
    lay: &Layout,
    s: &Stats,
    data_offset: u64,
    laz_vlr: &laz::LazVlr,
    laz_data: Vec<u8>,
    carried: &[Vec<u8>],
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
    if listed.insert(NodeKey::ROOT) {
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
        center: lay.center(),
        halfsize: lay.cube_size * 0.5,
        spacing: lay.cube_size / GRID as f64,
        root_hier_offset: page_at,
        root_hier_size: page.len() as u64,
        gpstime_min: if s.tally.gps_min <= s.tally.gps_max { s.tally.gps_min } else { 0.0 },
        gpstime_max: if s.tally.gps_min <= s.tally.gps_max { s.tally.gps_max } else { 0.0 },
    };
    // Header.
    let n = s.points;
    let (qlo, qhi) = (lay.quantize(s.bounds.min).unwrap_or([0; 3]), lay.quantize(s.bounds.max).unwrap_or([0; 3]));
    let real = |k: usize, v: i32| if n == 0 { 0.0 } else { v as f64 * lay.scale[k] + lay.offset[k] };
    let mut h = Vec::with_capacity(375);
    h.extend_from_slice(b"LASF");
    h.extend_from_slice(&s.ids.0); // file source id
                                   // The WKT bit (required for formats 6-10), unless the CRS could only be kept as GeoTIFF keys.
    h.extend_from_slice(&((u16::from(s.wkt) << 4) | s.gps_bit).to_le_bytes());
    h.extend_from_slice(&s.ids.1); // GUID
    h.extend_from_slice(&[1, 4]);
    h.extend_from_slice(&padded::<32>("pcv"));
    h.extend_from_slice(&padded::<32>(&format!("pcv {}", env!("CARGO_PKG_VERSION"))));
    let (day, year) = super::writers::today();
    h.extend_from_slice(&day.to_le_bytes());
    h.extend_from_slice(&year.to_le_bytes());
    h.extend_from_slice(&375u16.to_le_bytes());
    h.extend_from_slice(&(data_offset as u32).to_le_bytes());
    h.extend_from_slice(&(2 + carried.len() as u32).to_le_bytes()); // VLRs
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
    s.tally.by_return.iter().for_each(|v| h.extend_from_slice(&v.to_le_bytes()));
    debug_assert_eq!(h.len(), 375);
    let mut vlrs = Vec::new();
    vlr_header(&mut vlrs, "copc", 1, 160, "COPC info");
    vlrs.extend_from_slice(&info.to_bytes());
    vlr_header(&mut vlrs, "laszip encoded", 22204, laz_data.len() as u16, "pcv by laz");
    vlrs.extend_from_slice(&laz_data);
    carried.iter().for_each(|r| vlrs.extend_from_slice(r));
    debug_assert_eq!(375 + vlrs.len() as u64, data_offset);
    let mut file = sink.w.into_inner().map_err(|e| io(e.into_error()))?;
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(&h).map_err(io)?;
    file.write_all(&vlrs).map_err(io)?;
    file.write_all(&(table_at as i64).to_le_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    let max_depth = sink.entries.iter().map(|e| e.0.depth).max().unwrap_or(0);
    Ok(CopcSummary { points: n, nodes: sink.entries.len() as u64, max_depth, seconds: 0.0, temp_bytes_peak: 0 })
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// What [`build`] relies on: a point's cell at depth [`DEEP`] shifted right is its cell at every
    /// shallower depth, and the grid cell and child derived from it are [`Layout::grid_cell`] and the
    /// child whose cube holds the point — for cubes of awkward sizes and grids, and points inside, on
    /// the faces of and outside them.
    #[test]
    fn deep_cell_shifted_is_the_cell_at_each_depth() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..100 {
            let lo: [f64; 3] = std::array::from_fn(|_| rng.random_range(-1.0e6..1.0e6));
            let extent = 10f64.powf(rng.random_range(-1.0..5.0));
            let bounds =
                DBounds { min: lo, max: std::array::from_fn(|k| lo[k] + extent * rng.random_range(0.01..1.0)) };
            let lay = Layout::new(&bounds, 1000, None, 6, 0, 100).expect("a layout for the bounds");
            for _ in 0..300 {
                let q: [i32; 3] = std::array::from_fn(|k| {
                    let v = lay.cube_min[k] + lay.cube_size * rng.random_range(-0.1..1.1);
                    ((v - lay.offset[k]) / lay.scale[k]).round() as i32
                });
                let deep = lay.cell(q, DEEP);
                for d in 0..=DEEP {
                    assert_eq!(lay.cell(q, d), deep.map(|v| v >> (DEEP - d)), "q {q:?} at depth {d}");
                }
                for d in 0..MAX_NODE_DEPTH {
                    let c = lay.cell(q, d);
                    let key = NodeKey::new(d, c[0], c[1], c[2]);
                    let (grid, child) = Layout::grid_cell_and_child(deep, key);
                    assert_eq!(grid, lay.grid_cell(q, key), "q {q:?} in {key:?}");
                    let below = lay.cell(q, d + 1);
                    assert_eq!(
                        key.children()[child],
                        NodeKey::new(d + 1, below[0], below[1], below[2]),
                        "q {q:?} in {key:?}"
                    );
                }
            }
        }
    }
}
