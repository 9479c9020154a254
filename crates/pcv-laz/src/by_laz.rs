//! The `laz` crate's decoding of a chunk, for the item sets this crate's decoders do not cover (and
//! for every chunk while they are off, [`super::set_enabled`]), with the same API and errors.
//!
//! How it works: `laz`'s point-wise (`SequentialPointRecordDecompressor`, item versions 1 and 2) or
//! layered (`LayeredPointRecordDecompressor`, versions 3 and 4) record decompressor reads the chunk's
//! bytes a record at a time into a piece of the caller's scratch buffer. A layered chunk's layer sizes
//! are first checked against its bytes ([`check_layers`]), so that `laz` allocates no layer buffer
//! larger than the chunk. `laz` indexes its tables with decoded values and can panic on corrupt data:
//! such a panic is caught and becomes [`DecodeError::Panicked`], without the panic hook printing it
//! (the first call wraps the process's panic hook once; panics elsewhere are reported as before).
use super::{DecodeError, Stop};

/// [`super::decode_chunk`] by the `laz` crate, whatever the item set (the same arguments, records and
/// errors).
pub fn decode_chunk_with_laz(
    items: &[laz::LazItem],
    bytes: &[u8],
    points: usize,
    selection: laz::DecompressionSelection,
    piece_points: usize,
    scratch: &mut Vec<u8>,
    piece: &mut dyn FnMut(&[u8]),
) -> Result<(), DecodeError> {
    use laz::record::{LayeredPointRecordDecompressor, RecordDecompressor, SequentialPointRecordDecompressor};
    let Some(first) = items.first() else { return Err(DecodeError::Items("no point items".into())) };
    let stride: usize = items.iter().map(|i| i.size() as usize).sum();
    if let Some(layers) = layer_count(items) {
        check_layers(bytes, stride, layers).map_err(DecodeError::Layers)?;
    }
    let r = catch_quietly(|| -> Result<(), DecodeError> {
        let cursor = std::io::Cursor::new(bytes);
        let mut dec: Box<dyn RecordDecompressor<std::io::Cursor<&[u8]>> + Send + Sync> = match first.version() {
            1 | 2 => Box::new(SequentialPointRecordDecompressor::new(cursor)),
            _ => Box::new(LayeredPointRecordDecompressor::new(cursor)),
        };
        dec.set_fields_from(&items.to_vec()).map_err(|e| DecodeError::Items(e.to_string()))?;
        dec.set_selection(selection);
        let mut done = 0usize;
        while done < points {
            let n = (points - done).min(piece_points.max(1));
            scratch.clear();
            scratch.resize(n * stride, 0);
            for (i, rec) in scratch.chunks_exact_mut(stride).enumerate() {
                dec.decompress_next(rec).map_err(|e| DecodeError::Stopped {
                    after: done + i,
                    points,
                    why: Stop::Laz(e.to_string()),
                })?;
            }
            piece(scratch);
            done += n;
        }
        Ok(())
    });
    r.map_err(DecodeError::Panicked)?
}

/// How many layer sizes a chunk of the layered compression (LAS 1.4, formats 6–10: items Point14,
/// RGB14, RGBNIR14, WavePacket14, Byte14) starts with, or `None` for the point-wise compression.
pub fn layer_count(items: &[laz::LazItem]) -> Option<usize> {
    use laz::LazItemType as T;
    let mut n = 0;
    for it in items {
        n += match it.item_type() {
            T::Point14 => 9,
            T::RGB14 | T::WavePacket14 => 1,
            T::RGBNIR14 => 2,
            T::Byte14(c) => c as usize,
            _ => return None,
        };
    }
    Some(n)
}

/// Checks a layered chunk's layer sizes (after its first point, stored raw, and its point count)
/// against the chunk's bytes, so that no layer buffer is larger than the chunk.
pub(crate) fn check_layers(chunk: &[u8], record_len: usize, layers: usize) -> Result<(), String> {
    let at = record_len + 4;
    let table_end = at + 4 * layers;
    if chunk.len() < table_end {
        return Err(format!("{} bytes, too short for its first point and {layers} layer sizes", chunk.len()));
    }
    let size = |k: usize| u32::from_le_bytes(chunk[at + 4 * k..at + 4 * k + 4].try_into().expect("4 bytes"));
    let sum: u64 = (0..layers).map(|k| size(k) as u64).sum();
    if sum > (chunk.len() - table_end) as u64 {
        return Err(format!(
            "its layers add up to {sum} bytes, more than the {} bytes that follow",
            chunk.len() - table_end
        ));
    }
    Ok(())
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
static QUIET_HOOK: std::sync::Once = std::sync::Once::new();

/// Runs `f` and turns a panic inside it (on this thread) into `Err(message)`, without the panic hook
/// printing it. The first call wraps the process's panic hook once: panics outside these calls are
/// reported as before (by the hook that was there then).
fn catch_quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET_PANICS.with(|q| q.get()) == 0 {
                previous(info);
            }
        }));
    });
    QUIET_PANICS.with(|q| q.set(q.get() + 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET_PANICS.with(|q| q.set(q.get() - 1));
    r.map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())
    })
}
