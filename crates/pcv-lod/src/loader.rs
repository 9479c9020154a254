//! Background loading: nodes are read, decoded and cut into batches on worker threads, so a frame
//! never waits on I/O.
//!
//! How it works: the frame's selection hands the loader the nodes it wants that are not resident, in
//! priority order ([`Loader::want`]); that list replaces the previous one, so nodes the camera has left
//! behind are never read. Each of the worker threads takes the first wanted node no other worker is
//! reading, reads it through its [`NodeSource`] (a COPC file's LAZ chunk, an HTTP range, memory),
//! sorts its points spatially inside the node (the preprocessing's Morton buckets over the node's own
//! bounds, so its batches get tight boxes) and makes positions, colours, batch boxes and quantized
//! words ([`pcv_render::twins::preprocess`], the twin of the GPU's preprocessing: the same boxes and
//! words). The result goes to the render thread over a bounded channel ([`CHANNEL_NODES`]): workers wait
//! when the render thread is behind, which bounds the host memory held by loaded nodes. A node read and
//! not yet taken is "ready": the next wanted lists leave it out, so it is never read twice. The render
//! thread takes what has arrived ([`Loader::try_take`]) without waiting. A request carries the
//! scene's colour and filter: the worker reads the node with the fields they need, colours its points
//! from their own attributes ([`color_node`]) and keeps only the points the filter shows ([`keep`]:
//! classes, returns, value ranges, clip volumes). The preprocessing's parallel
//! loops run on the loader's own rayon pool, so they never queue ahead of a frame's work on the global
//! pool (the CPU backend renders there).
use super::select::NodeId;
use glam::DVec3;
use pcv_io::attributes::{ColorSpec, Field, FieldSet};
use pcv_io::filter::{PointFilter, PointValues};
use pcv_io::octree::{NodeError, NodeKey, NodeSource, OctreeNode};
use pcv_render::twins::preprocess::{grid_params, prepare, sort_by_cells, Table};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Loaded nodes waiting for the render thread, at most.
pub const CHANNEL_NODES: usize = 16;

/// One node to load.
#[derive(Clone)]
pub struct Request {
    pub id: NodeId,
    pub node: OctreeNode,
    pub source: Arc<dyn NodeSource>,
    /// The scene's common origin, in the tile's coordinates.
    pub origin: DVec3,
    /// Which of its points are kept (classes and clip volumes; see [`keep`]), and the scene's filter
    /// generation it was asked under (a node read under an older filter is not written).
    pub filter: Arc<PointFilter>,
    /// How its points are coloured ([`color_node`]).
    pub color: ColorSpec,
    pub generation: u64,
}

/// A node read and cut into batches.
pub struct Loaded {
    pub id: NodeId,
    pub key: NodeKey,
    /// The filter generation of its request.
    pub generation: u64,
    pub result: Result<Table, NodeError>,
    /// Time spent reading and decoding, and preparing the batches.
    pub read_ms: f64,
    pub prepare_ms: f64,
}

#[derive(Default)]
struct Queue {
    wanted: Vec<Request>,
    in_flight: HashSet<NodeId>,
    /// Loaded and handed over, not yet taken by the render thread: not wanted again (a node waiting in
    /// the channel while the render thread's slice runs out was read a second time before).
    ready: HashSet<NodeId>,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    stop: AtomicBool,
    /// Nodes and points read so far.
    nodes_read: AtomicU64,
    points_read: AtomicU64,
    /// Worker time (all workers, ns) spent reading and preparing nodes, and blocked handing them over
    /// (the channel full: the render thread is behind).
    busy_ns: AtomicU64,
    blocked_ns: AtomicU64,
}

/// What the workers did since the loader started (see [`Loader::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LoaderCounters {
    pub nodes_read: u64,
    pub points_read: u64,
    /// Seconds of worker time reading and preparing, and blocked on a full channel (summed over workers).
    pub busy_s: f64,
    pub blocked_s: f64,
}

/// The worker threads and the channel their nodes come back on.
pub struct Loader {
    shared: Arc<Shared>,
    rx: Option<Receiver<Loaded>>,
    threads: Vec<JoinHandle<()>>,
}

impl Loader {
    /// Starts `threads` workers (at least one).
    pub fn new(threads: usize) -> Loader {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            nodes_read: AtomicU64::new(0),
            points_read: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            blocked_ns: AtomicU64::new(0),
        });
        let (tx, rx) = sync_channel(CHANNEL_NODES);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("pcv-lod-prep-{i}"))
            .build()
            .ok()
            .map(Arc::new);
        let threads = (0..threads.max(1))
            .filter_map(|i| {
                let (shared, tx, pool) = (shared.clone(), tx.clone(), pool.clone());
                std::thread::Builder::new()
                    .name(format!("pcv-lod-{i}"))
                    .spawn(move || worker(&shared, &tx, pool.as_deref()))
                    .ok()
            })
            .collect();
        Loader { shared, rx: Some(rx), threads }
    }

    /// Workers that started.
    pub fn threads(&self) -> usize {
        self.threads.len()
    }

    /// Replaces the wanted nodes (in priority order, highest first).
    pub fn want(&self, requests: Vec<Request>) {
        if let Ok(mut q) = self.shared.queue.lock() {
            q.wanted =
                requests.into_iter().filter(|r| !q.in_flight.contains(&r.id) && !q.ready.contains(&r.id)).collect();
        }
        self.shared.wake.notify_all();
    }

    /// Whether `id` is being read now.
    pub fn in_flight(&self, id: &NodeId) -> bool {
        self.shared.queue.lock().map(|q| q.in_flight.contains(id)).unwrap_or(false)
    }

    /// Nodes wanted, being read, or read and not taken yet.
    pub fn pending(&self) -> usize {
        self.shared.queue.lock().map(|q| q.wanted.len() + q.in_flight.len() + q.ready.len()).unwrap_or(0)
    }

    /// A node that has arrived, if any (never waits).
    pub fn try_take(&self) -> Option<Loaded> {
        let l = self.rx.as_ref()?.try_recv().ok()?;
        if let Ok(mut q) = self.shared.queue.lock() {
            q.ready.remove(&l.id);
        }
        Some(l)
    }

    /// Nodes and points read since the loader started.
    pub fn read_counts(&self) -> (u64, u64) {
        (self.shared.nodes_read.load(Ordering::Relaxed), self.shared.points_read.load(Ordering::Relaxed))
    }

    /// Nodes and points read, worker time busy and blocked, since the loader started.
    pub fn counters(&self) -> LoaderCounters {
        let s = &self.shared;
        LoaderCounters {
            nodes_read: s.nodes_read.load(Ordering::Relaxed),
            points_read: s.points_read.load(Ordering::Relaxed),
            busy_s: s.busy_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            blocked_s: s.blocked_ns.load(Ordering::Relaxed) as f64 * 1e-9,
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_all();
        // A worker blocked on a full channel wakes with an error once the receiver is gone.
        drop(self.rx.take());
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn worker(shared: &Shared, tx: &SyncSender<Loaded>, pool: Option<&rayon::ThreadPool>) {
    loop {
        let req = {
            let Ok(mut q) = shared.queue.lock() else { return };
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                if !q.wanted.is_empty() {
                    let r = q.wanted.remove(0);
                    q.in_flight.insert(r.id);
                    break r;
                }
                q = match shared.wake.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            }
        };
        let t = Instant::now();
        let loaded = match pool {
            Some(p) => p.install(|| load(&req)),
            None => load(&req),
        };
        shared.busy_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if let Ok(p) = &loaded.result {
            shared.nodes_read.fetch_add(1, Ordering::Relaxed);
            shared.points_read.fetch_add(p.positions.len() as u64, Ordering::Relaxed);
        }
        // Ready before it is sent: the render thread may take it (and clear the mark) at once.
        if let Ok(mut q) = shared.queue.lock() {
            q.in_flight.remove(&req.id);
            q.ready.insert(req.id);
        }
        let t = Instant::now();
        let sent = tx.send(loaded);
        shared.blocked_ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if sent.is_err() {
            return;
        }
    }
}

/// Reads one node and cuts it into batches (see the module doc).
pub fn load(req: &Request) -> Loaded {
    let t = Instant::now();
    let read = read_kept(req.source.as_ref(), &req.node, req.origin, &req.filter, &req.color);
    let read_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let result = read.map(|pts| {
        let g = grid_params(&pcv_io::Bounds::of_points(&pts), pts.len() as u64);
        prepare(&sort_by_cells(&g, &pts))
    });
    let (id, key, generation) = (req.id, req.node.key, req.generation);
    Loaded { id, key, generation, result, read_ms, prepare_ms: t.elapsed().as_secs_f64() * 1e3 }
}

/// Reads `node` of `source` with the fields `filter` and `color` need (none for the plain read),
/// colours its points as `color` says and keeps those `filter` keeps: a node's points as the scene draws
/// them, local to `origin`.
pub fn read_kept(
    source: &dyn NodeSource,
    node: &OctreeNode,
    origin: DVec3,
    filter: &PointFilter,
    color: &ColorSpec,
) -> Result<Vec<pcv_io::Point>, NodeError> {
    let mut fields = FieldSet::of(&filter.fields());
    if let ColorSpec::Field { field, .. } = color {
        fields = fields.with(*field);
    }
    let mut np = source.read_node(node, origin, fields)?;
    color_node(&mut np, color, source.has_rgb());
    Ok(keep(np, filter, origin))
}

/// Colours a node's points as `spec` says, from their own attributes ([`ColorSpec::color_points`]);
/// `Rgb` keeps the colours as decoded (the file's, or the elevation ramp of the octree's z range).
pub fn color_node(np: &mut pcv_io::octree::NodePoints, spec: &ColorSpec, own_rgb: bool) {
    if matches!(spec, ColorSpec::Rgb { .. }) {
        return;
    }
    let field = match spec {
        ColorSpec::Field { field, .. } => np.fields.iter().find(|(f, _)| f == field).map(|(_, v)| v.as_slice()),
        _ => None,
    };
    let (intensity, classes) = (np.intensity.as_deref().unwrap_or(&[]), np.classification.as_deref().unwrap_or(&[]));
    spec.color_points(&mut np.points, own_rgb, intensity, classes, field.unwrap_or(&[]));
}

/// A node's finite points that `filter` keeps ([`PointFilter::passes`]: classes, class 0 where the
/// source has none; returns and value ranges on the fields read with the node; clip volumes in file
/// coordinates `origin + p`).
pub fn keep(np: pcv_io::octree::NodePoints, filter: &PointFilter, origin: DVec3) -> Vec<pcv_io::Point> {
    let finite = |p: &pcv_io::Point| p.pos.iter().all(|v| v.is_finite());
    if filter.is_empty() {
        return np.points.into_iter().filter(finite).collect();
    }
    let class = |i: usize| np.classification.as_ref().and_then(|c| c.get(i).copied()).unwrap_or(0);
    let intensity = |i: usize| np.intensity.as_ref().and_then(|c| c.get(i)).map_or(f64::NAN, |&v| v as f64);
    let field = |i: usize, f: Field| {
        np.fields.iter().find(|(g, _)| *g == f).and_then(|(_, v)| v.get(i).copied()).unwrap_or(f64::NAN)
    };
    np.points
        .iter()
        .enumerate()
        .filter(|&(i, p)| {
            finite(p)
                && filter.passes(&PointValues {
                    class: class(i),
                    intensity: intensity(i),
                    field: &|f| field(i, f),
                    pos: origin + glam::Vec3::from_array(p.pos).as_dvec3(),
                })
        })
        .map(|(_, p)| *p)
        .collect()
}
