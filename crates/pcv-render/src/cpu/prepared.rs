//! The CPU backend's batch table: the kernels' [`Table`] (positions, colours, batches, quantized words,
//! made by the preprocessing's twin) and the CPU's own finer boxes inside each batch.
//!
//! How it works: the culled modes of the CPU backend also cull inside a drawn batch, by groups of
//! [`group_points`] points with a box each ([`Prepared::groups`], made by the same [`bounds_per`] the
//! batches' boxes come from; a batch's groups never straddle another batch, since [`BATCH_POINTS`] is a
//! multiple of [`group_points`]). No kernel reads them; `crate::twins::culled` draws with them. A prepared
//! table reads as its [`Table`] (`Deref`).
use crate::gpu_data::{Batch, Point, BATCH_POINTS};
use crate::huge;
use crate::twins::preprocess::{bounds_per, split, Table};
use rayon::prelude::*;

/// The table the CPU backend draws: the kernels' table and the groups' boxes.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    pub table: Table,
    /// The CPU's finer boxes: group `g` holds points `g * group_points() ..` of batch
    /// `g / (BATCH_POINTS / group_points())` (empty: none, whole batches are drawn, as for a
    /// level-of-detail pool).
    pub groups: Vec<Batch>,
}

impl std::ops::Deref for Prepared {
    type Target = Table;
    fn deref(&self) -> &Table {
        &self.table
    }
}

impl std::ops::DerefMut for Prepared {
    fn deref_mut(&mut self) -> &mut Table {
        &mut self.table
    }
}

/// Points per group, the CPU's culling unit inside a batch (the default of [`group_points`]).
pub const GROUP_POINTS: usize = 256;
/// Groups per batch (of [`GROUP_POINTS`]).
pub const GROUPS_PER_BATCH: usize = BATCH_POINTS as usize / GROUP_POINTS;

/// Points per group in this process: [`GROUP_POINTS`], or `PCV_CPU_GROUP_POINTS` where that is a
/// power of two from 16 to [`BATCH_POINTS`] (asked once; for comparisons).
pub fn group_points() -> usize {
    static POINTS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *POINTS.get_or_init(|| {
        let asked = std::env::var("PCV_CPU_GROUP_POINTS").ok().and_then(|v| v.parse::<usize>().ok());
        asked.filter(|&n| n.is_power_of_two() && (16..=BATCH_POINTS as usize).contains(&n)).unwrap_or(GROUP_POINTS)
    })
}

/// log2 of [`group_points`]: the group of point `i` is `i >> group_shift()`.
pub fn group_shift() -> u32 {
    group_points().trailing_zeros()
}

/// One box per [`group_points`] positions, as the batches' boxes are made.
pub fn group_bounds(positions: &[[f32; 3]]) -> Vec<Batch> {
    bounds_per(positions, group_points())
}

/// The table of `points[order[i]]` (or `points` as they are, without `order`), read straight from
/// `points`: no sorted copy of the 16-byte points is made; the quantized words are left out
/// ([`Table::ensure_quant`] makes them).
pub fn prepare_permuted(points: &[Point], order: Option<&[u32]>) -> Prepared {
    let (positions, colors) = match order {
        Some(order) => (
            huge::collect(order.par_iter().map(|&i| points[i as usize].pos)),
            huge::collect(order.par_iter().map(|&i| points[i as usize].color_word())),
        ),
        None => split(points),
    };
    Prepared::from_ordered(positions, colors)
}

impl Prepared {
    /// Batches and groups for positions and colors already in their final order (no quantized words).
    pub fn from_ordered(positions: Vec<[f32; 3]>, colors: Vec<u32>) -> Prepared {
        let groups = group_bounds(&positions);
        Prepared { table: Table::from_ordered(positions, colors), groups }
    }
}
