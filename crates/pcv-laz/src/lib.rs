//! A LAZ (LASzip) chunk decoder and encoder: the `laz` crate's records and bytes, for less CPU.
//!
//! The point-wise compression of point formats 0–3 (LAS 1.0–1.3 items Point10, GpsTime, RGB12 and
//! Byte, all version 2: what LASzip and `laz` write for them) is decoded by this crate's own decoder:
//! the same bytes as the `laz` crate for ~35 % less CPU (results/2026-11-30-2core/2026-11-30-laz-decoder-2core.md,
//! results/2026-12-01-s4-copc-1b/2026-12-01-laz-decoder-2core.md in pcv's repository, measured when the decoder was part of
//! pcv). The layered compression of formats 6–8 (Point14, RGB14, RGBNIR14, Byte14, version 3) has its
//! own decoder in `layered` (each layer its own stream; results/2026-12-01-s5-copc-convert-laz/2026-12-01-laz-decoder-2core-s5.md),
//! and its own encoder in [`encoder`]. Other item sets (version 1 items, wave packets, version 4
//! layered items) are decoded by the `laz` crate ([`covers`] says which are not).
//!
//! The API: [`decode_chunk`] decodes one chunk of any item set (this crate's decoders where they
//! cover it, else `laz`), [`decode_chunk_with_laz`] always with `laz` (to compare),
//! [`encoder::encode_chunk`] encodes a layered chunk, [`covers`] and [`encoder::Layout::of`] say which
//! item sets the fast paths take, [`layer_count`] how a layered chunk starts. A chunk is what a LAZ
//! file's chunk table points at (a COPC file's octree node is one): reading the LAS header, the
//! LASzip VLR ([`laz::LazVlr`]) and the chunk table is the caller's (or `laz`'s) business.
//!
//! How it works: a point-wise chunk starts with its first point stored raw, then one arithmetic-coded
//! stream for all the other points. `decode_pointwise` keeps each item's decoder state in a plain
//! struct, decodes point after point with the item set fixed at compile time (no per-item dynamic
//! calls, no `io::Read` per byte, no `Result` per symbol: a damaged stream sets a flag checked once per
//! point), and hands the records over a piece at a time. The arithmetic decoder and its models
//! (`arith`) use finer decoder tables than LASzip, which changes how a symbol is found, never which.
//! The `laz` path (`by_laz`) runs `laz`'s record decompressors over the chunk's bytes, checks a
//! layered chunk's layer sizes against its bytes first, and turns a `laz` panic on corrupt data into
//! an error.
//!
//! `set_enabled(false)` routes every chunk, point-wise or layered, to `laz` (benchmarks and tests
//! compare the two).
mod arith;
mod by_laz;
mod bytes14;
pub mod encoder;
mod gps;
mod layered;
mod point10;
mod point14;
mod rgb;
mod rgb14;
#[cfg(test)]
mod tests;

/// The README's example, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

/// The `laz` crate this one is built with (its types are in this crate's API).
pub use laz;

pub use by_laz::{decode_chunk_with_laz, layer_count};

use layered::{decode_layered_chunk, layout_of};
use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns this crate's decoders on (the default) or off (every chunk decoded by the `laz` crate), for
/// the whole process.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether this crate's decoders are on ([`set_enabled`]).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether this crate's own decoders cover the item set `items` (a LASzip VLR's, [`laz::LazVlr::items`]):
/// the point-wise items of formats 0–3 (version 2) and the layered ones of formats 6–8 (version 3), with
/// or without extra bytes. [`decode_chunk`] takes them there while [`enabled`], and the others to `laz`.
pub fn covers(items: &[laz::LazItem]) -> bool {
    Items::of_any(items).is_some() || encoder::Layout::of(items).is_some()
}

/// Decodes the `points` points of one LAZ chunk (`bytes`, of the item set `items`) into `scratch`, a
/// piece of at most `piece_points` points at a time, and hands each piece's records to `piece`: records
/// of the item set's size (the sum of its items' sizes), laid out as in a LAS file's point data. The
/// layered item sets (formats 6–10) decode only the fields `selection` names (the others keep the
/// chunk's first point's values, as in `laz`); the point-wise ones decode everything.
///
/// The item sets [`covers`] names are decoded by this crate's decoders (while [`enabled`]), the others
/// by `laz` ([`decode_chunk_with_laz`]): the same records either way, and the same error where a chunk's
/// data ends or is corrupt, after as many points. A chunk that holds more points than `points` is not
/// an error (the rest is not read).
pub fn decode_chunk(
    items: &[laz::LazItem],
    bytes: &[u8],
    points: usize,
    selection: laz::DecompressionSelection,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), DecodeError> {
    let stopped = |e: ChunkError| DecodeError::Stopped {
        after: e.after,
        points,
        why: if e.ended { Stop::Ended } else { Stop::Corrupt },
    };
    if let Some(layout) = layout_of(items) {
        let layers = layer_count(items).expect("a layered item set");
        by_laz::check_layers(bytes, layout.record_len(), layers).map_err(DecodeError::Layers)?;
        return decode_layered_chunk(bytes, layout, points, selection, piece_points, scratch, piece).map_err(stopped);
    }
    if let Some(items) = Items::of(items) {
        return decode_pointwise(bytes, items, points, piece_points, scratch, piece).map_err(stopped);
    }
    decode_chunk_with_laz(items, bytes, points, selection, piece_points, scratch, piece)
}

/// Why a chunk could not be decoded. Its `Display` is a sentence about the chunk ("its data ends or
/// breaks after 12 of the 50000 points it should hold (...)"), for a caller to prefix with which chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The chunk's data ended or broke after `after` of the `points` points asked for (those `after`
    /// points were handed over, in pieces).
    Stopped { after: usize, points: usize, why: Stop },
    /// A layered chunk's table of layer sizes does not fit in the chunk's bytes (nothing was decoded).
    Layers(String),
    /// The `laz` crate refused the item set.
    Items(String),
    /// The `laz` crate panicked on the chunk's (corrupt) data: the panic's message.
    Panicked(String),
}

/// How a chunk's data stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Its bytes ran out.
    Ended,
    /// Its data is corrupt (a decoded value this crate's decoder cannot use).
    Corrupt,
    /// `laz` failed with this error.
    Laz(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Stopped { after, points, why } => {
                write!(f, "its data ends or breaks after {after} of the {points} points it should hold (")?;
                match why {
                    Stop::Ended => f.write_str("the compressed data ends")?,
                    Stop::Corrupt => f.write_str("the compressed data is corrupt")?,
                    Stop::Laz(m) => f.write_str(m)?,
                }
                f.write_str(")")
            }
            DecodeError::Layers(m) | DecodeError::Items(m) => f.write_str(m),
            DecodeError::Panicked(m) => write!(f, "corrupt (the decoder failed: {m})"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A point-wise item set this decoder covers: Point10, then optionally GpsTime, RGB12 and extra bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Items {
    gps: bool,
    rgb: bool,
    extra: usize,
}

impl Items {
    /// The item set of a LASzip VLR's `items`, if this decoder covers it and is enabled.
    fn of(items: &[laz::LazItem]) -> Option<Items> {
        if !enabled() {
            return None;
        }
        Items::of_any(items)
    }

    /// The item set of a LASzip VLR's `items`, if this decoder covers it (enabled or not).
    fn of_any(items: &[laz::LazItem]) -> Option<Items> {
        use laz::LazItemType as T;
        let mut it = items.iter().peekable();
        let first = it.next()?;
        if first.item_type() != T::Point10 || first.version() != 2 {
            return None;
        }
        let mut s = Items { gps: false, rgb: false, extra: 0 };
        if let Some(i) = it.next_if(|i| i.item_type() == T::GpsTime) {
            (i.version() == 2).then_some(())?;
            s.gps = true;
        }
        if let Some(i) = it.next_if(|i| i.item_type() == T::RGB12) {
            (i.version() == 2).then_some(())?;
            s.rgb = true;
        }
        if let Some(i) = it.next() {
            match i.item_type() {
                T::Byte(n) if i.version() == 2 && n > 0 => s.extra = n as usize,
                _ => return None,
            }
        }
        it.next().is_none().then_some(s)
    }

    /// Bytes of a record.
    fn record_len(&self) -> usize {
        20 + if self.gps { 8 } else { 0 } + if self.rgb { 6 } else { 0 } + self.extra
    }
}

/// Why one of this crate's decoders stopped a chunk: after how many of its points, and whether its
/// bytes ran out (else: its data is corrupt).
#[derive(Debug, PartialEq, Eq)]
struct ChunkError {
    after: usize,
    ended: bool,
}

/// Decodes the `points` points of a point-wise chunk (`bytes`, of item set `items`) into `scratch`, a
/// piece of at most `piece_points` points at a time, and hands each piece's records to `piece`.
fn decode_pointwise(
    bytes: &[u8],
    items: Items,
    points: usize,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), ChunkError> {
    match (items.gps, items.rgb) {
        (false, false) => run::<false, false>(bytes, items, points, piece_points, scratch, piece),
        (true, false) => run::<true, false>(bytes, items, points, piece_points, scratch, piece),
        (false, true) => run::<false, true>(bytes, items, points, piece_points, scratch, piece),
        (true, true) => run::<true, true>(bytes, items, points, piece_points, scratch, piece),
    }
}

/// Whether this CPU has LZCNT, BMI1, BMI2 and AVX2 (checked once): the decode loops are then compiled
/// for them (1-cycle `lzcnt` in every renormalization instead of `bsr`, shifts without the `cl` register:
/// shorter symbol chains, ~5–9 % less CPU; AVX2 for the medians' 4-lane minima and maxima), else for
/// baseline x86-64 as the rest of the release build.
#[cfg(target_arch = "x86_64")]
fn has_bmi() -> bool {
    static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HAS.get_or_init(|| {
        std::arch::is_x86_feature_detected!("lzcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
            && std::arch::is_x86_feature_detected!("bmi2")
            && std::arch::is_x86_feature_detected!("avx2")
    })
}

/// `fn name<const A: bool, ...>(args) -> ret` that calls `inner::<A, ...>(args)` (an `#[inline(always)]`
/// decode loop) compiled for LZCNT, BMI1, BMI2 and AVX2 where the CPU has them ([`has_bmi`]), else as
/// baseline code: the same source compiled twice, the same records either way. `inner` takes one more
/// const, `SIMD`: `true` in the LZCNT/BMI/AVX2 build (code there may use SSE4.1 and AVX2 intrinsics),
/// `false` in the baseline one. `inner` stays callable
/// on its own (with `SIMD` false): the tests compare both builds.
macro_rules! with_bmi {
    ($(#[$meta:meta])* fn $name:ident = $inner:ident::<$(const $g:ident),*>($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty) => {
        $(#[$meta])*
        fn $name<$(const $g: bool),*>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "lzcnt,bmi1,bmi2,avx2")]
            unsafe fn bmi<$(const $g: bool),*>($($arg: $ty),*) -> $ret {
                $inner::<$($g,)* true>($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::has_bmi() {
                // SAFETY: the CPU has LZCNT, BMI1, BMI2 and AVX2 (asked at run time just above), all
                // `bmi` is compiled for.
                return unsafe { bmi::<$($g),*>($($arg),*) };
            }
            $inner::<$($g,)* false>($($arg),*)
        }
    };
}
use with_bmi;

with_bmi! {
    /// [`run_in`] for the item set's `GPS` and `RGB`.
    fn run = run_in::<const GPS, const RGB>(bytes: &[u8], items: Items, points: usize, piece_points: usize, scratch: &mut Vec<u8>, piece: &mut dyn FnMut(&[u8])) -> Result<(), ChunkError>
}

#[inline(always)]
fn run_in<const GPS: bool, const RGB: bool, const SIMD: bool>(
    bytes: &[u8],
    items: Items,
    points: usize,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), ChunkError> {
    let stride = items.record_len();
    if points == 0 {
        return Ok(());
    }
    let Some(first) = bytes.get(..stride) else {
        return Err(ChunkError { after: 0, ended: true });
    };
    let (gps_at, rgb_at) = (20, if GPS { 28 } else { 20 });
    let extra_at = rgb_at + if RGB { 6 } else { 0 };
    let arr = |at: usize| -> [u8; 8] { std::array::from_fn(|k| first.get(at + k).copied().unwrap_or(0)) };
    let mut p = point10::Point10::new(&std::array::from_fn(|k| first[k]));
    let mut gps = gps::GpsTime::new(&arr(gps_at));
    let mut rgb = rgb::Rgb::new(&std::array::from_fn(|k| arr(rgb_at)[k]));
    let mut extra = rgb::ExtraBytes::new(&first[extra_at..]);
    let mut d = arith::Decoder::new(bytes, stride);
    if d.bad {
        return Err(ChunkError { after: 0, ended: true });
    }
    let mut done = 0;
    while done < points {
        let n = (points - done).min(piece_points.max(1));
        // Every byte of every record is written below: the scratch is zeroed only where it grows.
        scratch.resize(n * stride, 0);
        let mut records = scratch.chunks_exact_mut(stride);
        // The chunk's first point is stored raw: copied here, before the loop (not a check a point).
        let raw = (done == 0) as usize;
        if raw == 1 {
            records.next().expect("a piece has a record").copy_from_slice(first);
        }
        for (i, rec) in records.enumerate() {
            let (head, tail) = rec.split_at_mut(20);
            p.next::<SIMD>(&mut d, head.try_into().expect("20 bytes"));
            let tail = if GPS {
                let (g, t) = tail.split_at_mut(8);
                gps.next(&mut d, g.try_into().expect("8 bytes"));
                t
            } else {
                tail
            };
            let tail = if RGB {
                let (c, t) = tail.split_at_mut(6);
                rgb.next(&mut d, c.try_into().expect("6 bytes"));
                t
            } else {
                tail
            };
            if !tail.is_empty() {
                extra.next(&mut d, tail);
            }
            if d.bad {
                return Err(ChunkError { after: done + raw + i, ended: d.ended() });
            }
        }
        piece(scratch);
        done += n;
    }
    Ok(())
}
