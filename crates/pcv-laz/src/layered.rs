//! This crate's LAZ chunk decoder for the layered compression of LAS 1.4 point formats 6, 7 and 8
//! (LASzip items Point14, RGB14, RGBNIR14 and Byte14, all version 3: what LASzip and `laz` write for
//! them), giving the `laz` crate's records. Other layered item sets (version 4 items, wave packets) are
//! left to `laz` ([`layout_of`] says which).
//!
//! How it works: a layered chunk is its first record raw, its point count, the byte size of every
//! layer, then the layers, each an arithmetic-coded stream of its own ([`super::arith::Decoder`] over
//! exactly its bytes, so that reading past a layer's end fails as in `laz`). [`decode_layered_chunk`]
//! decodes point after point, each item's fields from their layers (Point14 then RGB, NIR and extra
//! bytes in the context Point14 hands over), with the item set fixed at compile time. Layers the caller
//! did not select (`laz::DecompressionSelection`) and empty ones are not decoded, as in `laz`: their
//! fields keep their last values. A damaged layer sets a flag checked once per point; the error says
//! after how many points the data ended or broke, where `laz` stops.
use super::arith::Decoder;
use super::bytes14::Bytes14;
use super::encoder::Layout;
use super::point14::{Point14, LAYERS};
use super::rgb14::{Nir14, Rgb14};
use super::{enabled, ChunkError};
use laz::DecompressionSelection as S;

/// The layered item set of a LASzip VLR's `items`, if this decoder covers it (and is enabled).
pub(crate) fn layout_of(items: &[laz::LazItem]) -> Option<Layout> {
    if !enabled() {
        return None;
    }
    Layout::of(items)
}

/// The byte ranges of a chunk's `count` layers, in order (`None` where the sizes or the layers do not
/// fit in the chunk: `laz` fails at the first point then).
fn layers(bytes: &[u8], record_len: usize, count: usize) -> Option<Vec<&[u8]>> {
    let sizes_at = record_len + 4;
    let mut at = sizes_at + 4 * count;
    let mut out = Vec::with_capacity(count);
    for k in 0..count {
        let s = bytes.get(sizes_at + 4 * k..sizes_at + 4 * k + 4)?;
        let size = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize;
        out.push(bytes.get(at..at.checked_add(size)?)?);
        at += size;
    }
    Some(out)
}

/// A decoder of `layer` where it is decoded (`on`: selected and not empty), else an idle one.
fn layer_decoder<'a>(layer: &'a [u8], selected: bool) -> (Decoder<'a>, bool) {
    if selected && !layer.is_empty() {
        (Decoder::new(layer, 0), true)
    } else {
        (Decoder::idle(layer), false)
    }
}

/// Decodes the `points` points of a layered chunk (`bytes`, of item set `layout`), the fields that
/// `selection` names (the others keep the first point's values, as `laz` leaves them), into `scratch`
/// a piece of at most `piece_points` points at a time, and hands each piece's records to `piece`.
pub(crate) fn decode_layered_chunk(
    bytes: &[u8],
    layout: Layout,
    points: usize,
    selection: laz::DecompressionSelection,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), ChunkError> {
    match (layout.rgb, layout.nir) {
        (false, _) => run::<false, false>(bytes, layout, points, selection, piece_points, scratch, piece),
        (true, false) => run::<true, false>(bytes, layout, points, selection, piece_points, scratch, piece),
        (true, true) => run::<true, true>(bytes, layout, points, selection, piece_points, scratch, piece),
    }
}

super::with_bmi! {
    /// [`run_in`] for the layout's `RGB` and `NIR`.
    fn run = run_in::<const RGB, const NIR>(bytes: &[u8], layout: Layout, points: usize, selection: laz::DecompressionSelection, piece_points: usize, scratch: &mut Vec<u8>, piece: &mut dyn FnMut(&[u8])) -> Result<(), ChunkError>
}

#[inline(always)]
pub(super) fn run_in<const RGB: bool, const NIR: bool, const SIMD: bool>(
    bytes: &[u8],
    layout: Layout,
    points: usize,
    selection: laz::DecompressionSelection,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), ChunkError> {
    let stride = layout.record_len();
    if points == 0 {
        return Ok(());
    }
    let broken = Err(ChunkError { after: 0, ended: true });
    let count = LAYERS + RGB as usize + NIR as usize + layout.extra;
    let Some(first) = bytes.get(..stride) else { return broken };
    let Some(all) = layers(bytes, stride, count) else { return broken };
    let sel = |bit: u32| selection.0 & bit != 0;
    let wanted = [
        true,
        sel(S::Z),
        sel(S::CLASSIFICATION),
        sel(S::FLAGS),
        sel(S::INTENSITY),
        sel(S::SCAN_ANGLE),
        sel(S::USER_DATA),
        sel(S::POINT_SOURCE_ID),
        sel(S::GPS_TIME),
    ];
    let mut read = wanted.to_vec();
    read.extend(RGB.then(|| sel(S::RGB)));
    read.extend(NIR.then(|| sel(S::NIR)));
    read.extend((0..layout.extra).map(|_| sel(S::ALL_EXTRA_BYTES)));
    // A layer that is read starts with the 4 bytes of its decoder's state (`laz` fails at the first
    // point without them; it skips the layers it does not read).
    if all.iter().zip(&read).any(|(l, &r)| r && (1..4).contains(&l.len())) {
        return broken;
    }
    let mut d: [(Decoder, bool); LAYERS] = std::array::from_fn(|k| layer_decoder(all[k], wanted[k]));
    // The XY layer is always decoded, even empty (its reads then fail where `laz`'s do).
    if all[0].len() >= 4 {
        d[0] = (Decoder::new(all[0], 0), true);
    } else {
        d[0] = (Decoder::idle(all[0]), true);
    }
    let on = d.each_ref().map(|x| x.1);
    let (mut p14, context) = Point14::new(first[..30].try_into().expect("30 bytes"), d.map(|x| x.0), on);
    let mut next_layer = LAYERS;
    let (rgb_at, nir_at, extra_at) = (30, 36, 30 + if RGB { 6 } else { 0 } + if NIR { 2 } else { 0 });
    let mut rgb = RGB.then(|| {
        let (dec, on) = layer_decoder(all[next_layer], sel(S::RGB));
        next_layer += 1;
        Rgb14::new(first[rgb_at..rgb_at + 6].try_into().expect("6 bytes"), context, dec, on)
    });
    let mut nir = NIR.then(|| {
        let (dec, on) = layer_decoder(all[next_layer], sel(S::NIR));
        next_layer += 1;
        Nir14::new(first[nir_at..nir_at + 2].try_into().expect("2 bytes"), context, dec, on)
    });
    let mut extra = (layout.extra > 0).then(|| {
        let ds = all[next_layer..].iter().map(|l| layer_decoder(l, sel(S::ALL_EXTRA_BYTES))).collect();
        Bytes14::new(&first[extra_at..], context, ds)
    });
    let mut done = 0;
    while done < points {
        let n = (points - done).min(piece_points.max(1));
        // Every byte of every record is written below: the scratch is zeroed only where it grows.
        scratch.resize(n * stride, 0);
        for (i, rec) in scratch.chunks_exact_mut(stride).enumerate() {
            if done + i == 0 {
                rec.copy_from_slice(first);
                continue;
            }
            let (head, tail) = rec.split_at_mut(30);
            let context = p14.next::<SIMD>(head.try_into().expect("30 bytes"));
            let tail = match rgb.as_mut() {
                Some(rgb) => {
                    let (c, t) = tail.split_at_mut(6);
                    rgb.next(context, c.try_into().expect("6 bytes"));
                    t
                }
                None => tail,
            };
            let tail = match nir.as_mut() {
                Some(nir) => {
                    let (c, t) = tail.split_at_mut(2);
                    nir.next(context, c.try_into().expect("2 bytes"));
                    t
                }
                None => tail,
            };
            if let Some(extra) = extra.as_mut() {
                extra.next(context, tail);
            }
            let bad = p14.bad()
                || rgb.as_ref().is_some_and(|c| c.d.bad)
                || nir.as_ref().is_some_and(|c| c.d.bad)
                || extra.as_ref().is_some_and(|e| e.d.iter().any(|(d, _)| d.bad));
            if bad {
                let ended = p14.ended()
                    || rgb.as_ref().is_some_and(|c| c.d.ended())
                    || nir.as_ref().is_some_and(|c| c.d.ended())
                    || extra.as_ref().is_some_and(|e| e.d.iter().any(|(d, _)| d.ended()));
                return Err(ChunkError { after: done + i, ended });
            }
        }
        piece(scratch);
        done += n;
    }
    Ok(())
}
