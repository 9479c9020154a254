//! The node pool: fixed batch slots on the device (or the host, for the CPU backend), which nodes hold
//! which, and which go when room is needed.
//!
//! How it works: the rasterizer holds `capacity` slots of [`BATCH_POINTS`] points each (positions,
//! colours, quantized words) and one [`Batch`] per slot (`Rasterizer::reserve_slots`). A node's points,
//! cut into batches, take as many slots as it has batches; [`SlotRuns`] hands them out as runs of
//! consecutive slots (first fit, else gathered from several free runs), so a node's upload is one copy
//! per run. A resident node remembers the last frame it was selected in. When a node needs slots that
//! are not free, [`NodePool::make_room`] evicts the least recently used resident node that is not
//! selected this frame, together with its resident descendants (a child is useless without its
//! parent, and selection never wants one without the other), until the room is there or nothing
//! evictable is left. A node whose slots were written remembers the write's fence: a rasterizer that
//! copies in the background (CUDA's copy stream) may not have the points there yet, and the scene
//! draws the node only once that fence is complete. The batch table the rasterizer draws from is the
//! host's mirror ([`NodePool::table`]): slots of nodes not drawn this frame have zero points, so the culled modes'
//! frustum and occlusion passes skip nothing they should draw and draw nothing they should not.
//!
//! Stale nodes: when the points a node should hold change (a new colour or filter), [`NodePool::retire`]
//! marks every resident node stale instead of dropping it. A stale node keeps its slots and may still be
//! drawn, so the view stays whole while the nodes are read again; the scene releases it
//! ([`NodePool::release_stale`]) once the node's fresh copy is drawn, and [`NodePool::make_room`] takes
//! stale nodes first.
use super::select::NodeId;
use pcv_io::octree::NodeKey;
use pcv_render::gpu_data::{Batch, BATCH_POINTS, EMPTY_BATCH};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Free slots as runs of consecutive slots.
#[derive(Clone, Debug)]
pub struct SlotRuns {
    /// Free runs, sorted by start, never adjacent (merged).
    free: Vec<Range<u32>>,
    capacity: u32,
}

impl SlotRuns {
    pub fn new(capacity: u32) -> SlotRuns {
        SlotRuns { free: if capacity > 0 { std::iter::once(0..capacity).collect() } else { Vec::new() }, capacity }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn free_slots(&self) -> u32 {
        self.free.iter().map(|r| r.end - r.start).sum()
    }

    /// `n` slots: one run where one fits (first fit), else pieces of several; `None` when fewer are free.
    pub fn alloc(&mut self, n: u32) -> Option<Vec<Range<u32>>> {
        if n == 0 {
            return Some(Vec::new());
        }
        if self.free_slots() < n {
            return None;
        }
        if let Some(i) = self.free.iter().position(|r| r.end - r.start >= n) {
            let r = self.free[i].clone();
            if r.end - r.start == n {
                self.free.remove(i);
            } else {
                self.free[i].start += n;
            }
            return Some(std::iter::once(r.start..r.start + n).collect());
        }
        let mut out = Vec::new();
        let mut left = n;
        while left > 0 {
            let r = self.free.remove(0);
            let take = (r.end - r.start).min(left);
            out.push(r.start..r.start + take);
            if take < r.end - r.start {
                self.free.insert(0, r.start + take..r.end);
            }
            left -= take;
        }
        Some(out)
    }

    /// Gives `runs` back.
    pub fn release(&mut self, runs: &[Range<u32>]) {
        for r in runs.iter().filter(|r| r.start < r.end) {
            let at = self.free.partition_point(|f| f.start < r.start);
            self.free.insert(at, r.clone());
        }
        let mut merged: Vec<Range<u32>> = Vec::with_capacity(self.free.len());
        for r in self.free.drain(..) {
            match merged.last_mut() {
                Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        self.free = merged;
    }
}

/// A node on the device.
#[derive(Clone, Debug)]
pub struct Resident {
    pub key: NodeKey,
    pub runs: Vec<Range<u32>>,
    /// One batch per slot, in the order of the runs' slots.
    pub batches: Vec<Batch>,
    pub points: u64,
    pub last_used_frame: u64,
    /// The rasterizer's fence for the write that filled its slots (`Rasterizer::write_slots`): the
    /// node is drawn only once the rasterizer's completed writes reach it.
    pub fence: u64,
}

impl Resident {
    /// The node's slots, in order.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|r| r.clone())
    }
}

/// Which nodes the slots hold (see the module doc).
#[derive(Clone, Debug)]
pub struct NodePool {
    runs: SlotRuns,
    nodes: HashMap<NodeId, Resident>,
    /// Nodes read under an earlier colour or filter, drawn until their fresh copies are (see the
    /// module doc).
    stale: HashMap<NodeId, Resident>,
    /// The batch table: one batch per slot, zero points where nothing is drawn.
    table: Vec<Batch>,
    table_changed: bool,
    /// Nodes evicted since the pool was made.
    pub evictions: u64,
    /// Bumped by every insert and eviction (a drawn set over an unchanged pool gives the same table).
    pub version: u64,
}

impl NodePool {
    pub fn new(capacity: u32) -> NodePool {
        NodePool {
            runs: SlotRuns::new(capacity),
            nodes: HashMap::new(),
            stale: HashMap::new(),
            table: vec![EMPTY_BATCH; capacity as usize],
            table_changed: true,
            evictions: 0,
            version: 0,
        }
    }

    pub fn capacity(&self) -> u32 {
        self.runs.capacity()
    }

    pub fn free_slots(&self) -> u32 {
        self.runs.free_slots()
    }

    pub fn get(&self, id: &NodeId) -> Option<&Resident> {
        self.nodes.get(id)
    }

    /// `id`'s stale copy, read under an earlier colour or filter ([`Self::retire`]).
    pub fn get_stale(&self, id: &NodeId) -> Option<&Resident> {
        self.stale.get(id)
    }

    /// The copy of `id` that is drawn: the stale one when `stale`, else the fresh one.
    pub fn copy_of(&self, id: &NodeId, stale: bool) -> Option<&Resident> {
        if stale {
            self.stale.get(id)
        } else {
            self.nodes.get(id)
        }
    }

    /// Marks every resident node stale: its points were read under a colour or filter that no longer
    /// holds. Stale nodes keep their slots and can still be drawn until [`Self::release_stale`] or
    /// [`Self::make_room`] frees them. A node already stale from an earlier change gives way to the
    /// newer copy.
    pub fn retire(&mut self) {
        for (id, r) in std::mem::take(&mut self.nodes) {
            if let Some(old) = self.stale.insert(id, r) {
                self.free(&old);
            }
        }
        self.version += 1;
    }

    /// Frees `id`'s stale copy (its fresh copy is drawn now).
    pub fn release_stale(&mut self, id: &NodeId) {
        if let Some(r) = self.stale.remove(id) {
            self.free(&r);
        }
    }

    /// How many stale nodes hold slots.
    pub fn stale_len(&self) -> usize {
        self.stale.len()
    }

    /// Empties `r`'s slots in the table and gives them back.
    fn free(&mut self, r: &Resident) {
        for s in r.slots() {
            self.table[s as usize] = EMPTY_BATCH;
        }
        self.runs.release(&r.runs);
        self.version += 1;
        self.table_changed = true;
    }

    pub fn contains(&self, id: &NodeId) -> bool {
        self.nodes.contains_key(id)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Points of every resident node, stale ones included.
    pub fn resident_points(&self) -> u64 {
        self.nodes.values().chain(self.stale.values()).map(|r| r.points).sum()
    }

    /// Marks `id` as used in `frame`.
    pub fn touch(&mut self, id: &NodeId, frame: u64) {
        for r in [self.nodes.get_mut(id), self.stale.get_mut(id)].into_iter().flatten() {
            r.last_used_frame = r.last_used_frame.max(frame);
        }
    }

    /// Frees slots until `slots` are free: first stale nodes not in `keep` (least recently used
    /// first), then least recently used fresh nodes not in `keep` with their descendants, last the
    /// stale nodes in `keep`, deepest first (they only stand in until their fresh copies come).
    /// Returns whether there is room now.
    pub fn make_room(&mut self, slots: u32, keep: &HashSet<NodeId>) -> bool {
        let stale_order = |pool: &NodePool, kept: bool| {
            pool.stale
                .iter()
                .filter(|(id, _)| keep.contains(id) == kept)
                .min_by_key(|(id, r)| {
                    if kept {
                        (0, std::cmp::Reverse(r.key.depth), **id)
                    } else {
                        (r.last_used_frame, std::cmp::Reverse(r.key.depth), **id)
                    }
                })
                .map(|(id, _)| *id)
        };
        while self.runs.free_slots() < slots {
            if let Some(id) = stale_order(self, false) {
                self.release_stale(&id);
                continue;
            }
            let victim = self
                .nodes
                .iter()
                .filter(|(id, _)| !keep.contains(id))
                .min_by_key(|(id, r)| (r.last_used_frame, std::cmp::Reverse(r.key.depth), **id))
                .map(|(id, r)| (*id, r.key));
            let Some((id, key)) = victim else {
                match stale_order(self, true) {
                    Some(id) => {
                        self.release_stale(&id);
                        continue;
                    }
                    None => return false,
                }
            };
            let gone: Vec<NodeId> = self
                .nodes
                .iter()
                .filter(|(other, r)| {
                    other.tile == id.tile && is_descendant_or_self(&r.key, &key) && !keep.contains(other)
                })
                .map(|(other, _)| *other)
                .collect();
            for g in gone {
                self.evict(&g);
            }
        }
        true
    }

    /// Removes `id` and frees its slots.
    pub fn evict(&mut self, id: &NodeId) {
        if let Some(r) = self.nodes.remove(id) {
            self.free(&r);
            self.evictions += 1;
        }
    }

    /// Slots for a node of `batches` batches (room made first with [`Self::make_room`]); `None` if not free.
    pub fn insert(&mut self, id: NodeId, key: NodeKey, batches: Vec<Batch>, frame: u64) -> Option<&Resident> {
        let runs = self.runs.alloc(batches.len() as u32)?;
        let points = batches.iter().map(|b| b.num_points as u64).sum();
        self.version += 1;
        self.nodes.insert(id, Resident { key, runs, batches, points, last_used_frame: frame, fence: 0 });
        self.nodes.get(&id)
    }

    /// Records the fence of the write that filled `id`'s slots.
    pub fn set_fence(&mut self, id: &NodeId, fence: u64) {
        if let Some(r) = self.nodes.get_mut(id) {
            r.fence = fence;
        }
    }

    /// Sets the batch table to draw exactly `drawn` (resident nodes; others are ignored), the stale
    /// copies of the nodes in `stale` and the fresh ones of the others. [`Self::take_table`] then
    /// returns it if it differs from the last one returned.
    pub fn set_drawn(&mut self, drawn: &HashSet<NodeId>, stale: &HashSet<NodeId>) {
        let mut table = vec![EMPTY_BATCH; self.table.len()];
        for id in drawn {
            if let Some(r) = self.copy_of(id, stale.contains(id)) {
                for (s, b) in r.slots().zip(&r.batches) {
                    table[s as usize] = *b;
                }
            }
        }
        if table != self.table {
            self.table = table;
            self.table_changed = true;
        }
    }

    /// The batch table when it changed since the last call.
    pub fn take_table(&mut self) -> Option<&[Batch]> {
        std::mem::take(&mut self.table_changed).then_some(&self.table[..])
    }

    /// The batch table as it is.
    pub fn table(&self) -> &[Batch] {
        &self.table
    }
}

/// Whether `k` is `anc` or lies under it.
pub fn is_descendant_or_self(k: &NodeKey, anc: &NodeKey) -> bool {
    if k.depth < anc.depth {
        return false;
    }
    let s = k.depth - anc.depth;
    if s >= 32 {
        return anc.depth == 0 && anc.x == 0 && anc.y == 0 && anc.z == 0;
    }
    (k.x >> s, k.y >> s, k.z >> s) == (anc.x, anc.y, anc.z)
}

/// Points a pool of `slots` slots can hold at most.
pub fn slot_points(slots: u32) -> u64 {
    slots as u64 * BATCH_POINTS as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: u32) -> Batch {
        Batch { num_points: n, ..EMPTY_BATCH }
    }

    fn runs(r: &[(u32, u32)]) -> Vec<Range<u32>> {
        r.iter().map(|&(a, b)| a..b).collect()
    }

    fn id(node: u32) -> NodeId {
        NodeId { tile: 0, node }
    }

    #[test]
    fn runs_allocate_first_fit_then_gather() {
        let mut r = SlotRuns::new(10);
        let a = r.alloc(3).unwrap();
        let b = r.alloc(3).unwrap();
        let c = r.alloc(3).unwrap();
        assert_eq!((a, b.clone(), c), (runs(&[(0, 3)]), runs(&[(3, 6)]), runs(&[(6, 9)])));
        r.release(&b);
        assert_eq!(r.free_slots(), 4);
        // 4 slots: no run of 4, so the 3 of the hole and the last one.
        assert_eq!(r.alloc(4).unwrap(), runs(&[(3, 6), (9, 10)]));
        assert!(r.alloc(1).is_none());
        r.release(&[0..3, 3..6, 6..9, 9..10]);
        assert_eq!(r.free_slots(), 10);
        assert_eq!(r.alloc(10).unwrap(), runs(&[(0, 10)]), "released runs merge");
    }

    #[test]
    fn least_recently_used_goes_first_with_its_descendants() {
        let mut p = NodePool::new(6);
        let root = NodeKey::ROOT;
        let child = root.children()[3];
        let grandchild = child.children()[1];
        let other = root.children()[5];
        p.insert(id(0), root, vec![batch(10)], 1).unwrap();
        p.insert(id(1), child, vec![batch(10), batch(5)], 2).unwrap();
        p.insert(id(2), grandchild, vec![batch(7)], 3).unwrap();
        p.insert(id(3), other, vec![batch(1)], 4).unwrap();
        assert_eq!(p.free_slots(), 1);
        // Root and `other` are selected now: the oldest of the rest is the child, which takes its
        // grandchild with it even though the grandchild was used later.
        let keep: HashSet<NodeId> = [id(0), id(3)].into();
        assert!(p.make_room(3, &keep));
        assert!(!p.contains(&id(1)) && !p.contains(&id(2)));
        assert!(p.contains(&id(0)) && p.contains(&id(3)));
        assert_eq!((p.free_slots(), p.evictions), (4, 2));
        // Nothing evictable is left beyond the kept nodes.
        assert!(!p.make_room(6, &keep));
        assert!(p.make_room(5, &[id(0)].into()), "the unkept `other` goes");
        assert_eq!(p.resident_points(), 10);
    }

    #[test]
    fn the_table_draws_only_what_is_drawn() {
        let mut p = NodePool::new(4);
        p.insert(id(0), NodeKey::ROOT, vec![batch(4096), batch(3)], 1).unwrap();
        p.insert(id(1), NodeKey::ROOT.children()[0], vec![batch(9)], 1).unwrap();
        p.set_drawn(&[id(0)].into(), &HashSet::new());
        let t = p.take_table().unwrap().to_vec();
        assert_eq!(t.iter().map(|b| b.num_points).collect::<Vec<_>>(), vec![4096, 3, 0, 0]);
        p.set_drawn(&[id(0)].into(), &HashSet::new());
        assert!(p.take_table().is_none(), "unchanged");
        p.set_drawn(&[id(0), id(1)].into(), &HashSet::new());
        assert_eq!(p.take_table().unwrap().iter().map(|b| b.num_points).sum::<u32>(), 4108);
        p.evict(&id(0));
        assert_eq!(p.take_table().unwrap().iter().map(|b| b.num_points).collect::<Vec<_>>(), vec![0, 0, 9, 0]);
    }

    #[test]
    fn stale_nodes_stand_in_until_released_and_go_first() {
        let mut p = NodePool::new(6);
        let (root, child, other) = (NodeKey::ROOT, NodeKey::ROOT.children()[2], NodeKey::ROOT.children()[6]);
        p.insert(id(0), root, vec![batch(10), batch(10)], 1).unwrap();
        p.insert(id(1), child, vec![batch(5)], 2).unwrap();
        p.insert(id(2), other, vec![batch(3)], 3).unwrap();
        p.retire();
        assert!(!p.contains(&id(0)) && p.get_stale(&id(0)).is_some() && p.stale_len() == 3);
        assert_eq!((p.free_slots(), p.resident_points()), (2, 28), "stale nodes keep their slots");
        // Drawn from its stale copy: the table shows the stale batches.
        p.set_drawn(&[id(0)].into(), &[id(0)].into());
        assert_eq!(p.take_table().unwrap().iter().map(|b| b.num_points).sum::<u32>(), 20);
        // The fresh root comes (2 slots free), then replaces the stale one.
        p.insert(id(0), root, vec![batch(7)], 4).unwrap();
        p.release_stale(&id(0));
        p.set_drawn(&[id(0)].into(), &HashSet::new());
        assert_eq!(p.take_table().unwrap().iter().map(|b| b.num_points).sum::<u32>(), 7);
        assert_eq!(p.free_slots(), 3);
        // Room: the stale node not kept goes first (`other`), then a kept stale one; fresh nodes stay.
        let keep: HashSet<NodeId> = [id(0), id(1)].into();
        assert!(p.make_room(4, &keep));
        assert!(p.get_stale(&id(2)).is_none() && p.get_stale(&id(1)).is_some());
        assert!(p.make_room(5, &keep));
        assert_eq!((p.stale_len(), p.evictions), (0, 0), "stale copies are freed, not counted as evictions");
        assert!(p.contains(&id(0)));
        assert!(!p.make_room(6, &keep), "the kept fresh root stays");
        // A second change while stale copies remain: the newer copy stands in.
        p.retire();
        p.retire();
        assert_eq!(p.get_stale(&id(0)).map(|r| r.points), Some(7));
    }

    #[test]
    fn descendants() {
        let k = NodeKey::new(2, 3, 1, 2);
        assert!(is_descendant_or_self(&k, &k));
        assert!(is_descendant_or_self(&k.children()[5].children()[2], &k));
        assert!(is_descendant_or_self(&k, &NodeKey::ROOT));
        assert!(!is_descendant_or_self(&NodeKey::new(2, 2, 1, 2).children()[0], &k));
        assert!(!is_descendant_or_self(&NodeKey::ROOT, &k));
    }
}
