//! This crate's LAZ chunk encoder for the layered compression of LAS 1.4 point formats 6, 7 and 8 (LASzip
//! items Point14, RGB14, RGBNIR14 and Byte14, all version 3: what `laz` writes for them), giving the
//! same bytes as the `laz` crate's `LayeredPointRecordCompressor` for less CPU. Other item sets (version
//! 4 items, wave packets, formats 0–5 and 9–10) are not covered: the caller encodes them with `laz`'s
//! compressors ([`Layout::of`] says which are covered).
//!
//! How it works: a layered chunk is the first record raw, the point count, the byte size of every layer,
//! then the layers (each an arithmetic-coded stream of its own). [`encode_chunk`] codes a chunk's
//! records in one pass with the item set fixed at compile time (no per-item dynamic calls, no
//! `io::Write` per byte, no `Result` per symbol), each layer into its own growing buffer, then writes
//! the sizes and the layers. The scanner channel of each point (Point14) selects the context of the
//! items after it, as in LASzip.
mod arith;
mod bytes14;
mod point14;
mod rgb14;
#[cfg(test)]
mod tests;

use bytes14::Bytes14;
use point14::Point14;
use rgb14::{Nir14, Rgb14};

/// A layered item set this encoder covers: Point14, then optionally RGB14 or RGBNIR14, then extra bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub(crate) rgb: bool,
    pub(crate) nir: bool,
    pub(crate) extra: usize,
}

impl Layout {
    /// The item set of a LASzip VLR's `items`, if this encoder covers it.
    pub fn of(items: &[laz::LazItem]) -> Option<Layout> {
        use laz::LazItemType as T;
        let mut it = items.iter().peekable();
        let first = it.next()?;
        if first.item_type() != T::Point14 || first.version() != 3 {
            return None;
        }
        let mut s = Layout { rgb: false, nir: false, extra: 0 };
        if let Some(i) = it.next_if(|i| matches!(i.item_type(), T::RGB14 | T::RGBNIR14)) {
            (i.version() == 3).then_some(())?;
            s.rgb = true;
            s.nir = i.item_type() == T::RGBNIR14;
        }
        if let Some(i) = it.next() {
            match i.item_type() {
                T::Byte14(n) if i.version() == 3 && n > 0 => s.extra = n as usize,
                _ => return None,
            }
        }
        it.next().is_none().then_some(s)
    }

    /// Bytes of a record.
    pub fn record_len(&self) -> usize {
        30 + if self.rgb { 6 } else { 0 } + if self.nir { 2 } else { 0 } + self.extra
    }
}

/// The LAZ chunk of `recs` (whole records of `layout`; a partial record at the end is ignored, as
/// `laz` does): empty for no records.
pub fn encode_chunk(layout: Layout, recs: &[u8]) -> Vec<u8> {
    match (layout.rgb, layout.nir) {
        (false, _) => encode::<false, false>(layout, recs),
        (true, false) => encode::<true, false>(layout, recs),
        (true, true) => encode::<true, true>(layout, recs),
    }
}

/// [`encode_chunk`] for one item set.
fn encode<const RGB: bool, const NIR: bool>(layout: Layout, recs: &[u8]) -> Vec<u8> {
    let len = layout.record_len();
    let mut records = recs.chunks_exact(len);
    let Some(first) = records.next() else {
        return Vec::new();
    };
    let points = recs.len() / len;
    let (rgb_at, nir_at, extra_at) = (30, 36, 30 + if RGB { 6 } else { 0 } + if NIR { 2 } else { 0 });
    let (mut p14, context) = Point14::new(first, points);
    let mut rgb = RGB.then(|| Rgb14::new(&first[rgb_at..rgb_at + 6], context, points));
    let mut nir = NIR.then(|| Nir14::new(&first[nir_at..nir_at + 2], context, points));
    let mut extra = (layout.extra > 0).then(|| Bytes14::new(&first[extra_at..], context, points));
    for rec in records {
        let context = p14.encode(rec);
        if let Some(rgb) = rgb.as_mut() {
            rgb.encode(&rec[rgb_at..rgb_at + 6], context);
        }
        if let Some(nir) = nir.as_mut() {
            nir.encode(&rec[nir_at..nir_at + 2], context);
        }
        if let Some(extra) = extra.as_mut() {
            extra.encode(&rec[extra_at..], context);
        }
    }
    let mut sizes = Vec::with_capacity(4 * (10 + 2 + layout.extra));
    sizes.extend_from_slice(&(points as u32).to_le_bytes());
    let mut layers = Vec::with_capacity(recs.len() / 4);
    p14.finish(&mut sizes, &mut layers);
    if let Some(rgb) = rgb {
        rgb.finish(&mut sizes, &mut layers);
    }
    if let Some(nir) = nir {
        nir.finish(&mut sizes, &mut layers);
    }
    if let Some(extra) = extra {
        extra.finish(&mut sizes, &mut layers);
    }
    let mut out = Vec::with_capacity(len + sizes.len() + layers.len());
    out.extend_from_slice(first);
    out.extend_from_slice(&sizes);
    out.extend_from_slice(&layers);
    out
}
