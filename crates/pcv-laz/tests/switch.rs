//! `set_enabled`: while off, every chunk goes to the `laz` crate (seen in the errors: `laz`'s own), and
//! the records are the same either way. Its own test binary: the switch is process-wide.
use pcv_laz::{decode_chunk, enabled, laz, set_enabled, DecodeError, Stop};
use std::io::Cursor;

/// `n` records of point format `format`, compressed by `laz` as one chunk: the items and the chunk.
fn one_chunk(format: u8, n: usize) -> (Vec<laz::LazItem>, Vec<u8>, Vec<u8>) {
    let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, 0).expect("items");
    let len: usize = items.iter().map(|i| i.size() as usize).sum();
    let mut recs = vec![0u8; n * len];
    for (i, r) in recs.chunks_exact_mut(len).enumerate() {
        r[0..4].copy_from_slice(&(i as i32 * 7).to_le_bytes());
        r[4..8].copy_from_slice(&((i * i) as i32).to_le_bytes());
        r[8..12].copy_from_slice(&((i % 13) as i32).to_le_bytes());
        r[12] = i as u8;
        r[14] = 0x09;
    }
    let vlr = laz::LazVlrBuilder::new(items.clone()).with_fixed_chunk_size(n as u32).build();
    let mut c = laz::LasZipCompressor::new(Cursor::new(Vec::new()), vlr).expect("compressor");
    c.compress_many(&recs).expect("compress");
    c.done().expect("done");
    let data = c.into_inner().into_inner();
    let table_at = i64::from_le_bytes(data[..8].try_into().expect("8 bytes")) as usize;
    (items, data[8..table_at].to_vec(), recs)
}

fn decode(items: &[laz::LazItem], bytes: &[u8], points: usize) -> (Vec<u8>, Result<(), DecodeError>) {
    let (mut out, mut scratch) = (Vec::new(), Vec::new());
    let sel = laz::DecompressionSelection::all();
    let r = decode_chunk(items, bytes, points, sel, 100, &mut scratch, &mut |p| out.extend_from_slice(p));
    (out, r)
}

#[test]
fn off_sends_every_chunk_to_laz() {
    assert!(enabled(), "on by default");
    for format in [3u8, 7] {
        let (items, chunk, recs) = one_chunk(format, 1000);
        // Asked for more points than the chunk holds: its data ends (each decoder says so in its words).
        let (on_whole, on_cut) = (decode(&items, &chunk, 1000), decode(&items, &chunk, 1500));
        set_enabled(false);
        let (off_whole, off_cut) = (decode(&items, &chunk, 1000), decode(&items, &chunk, 1500));
        set_enabled(true);
        assert!(on_whole.1.is_ok() && off_whole.1.is_ok(), "format {format}");
        assert!(on_whole.0 == recs && off_whole.0 == recs, "format {format}: the records");
        let stop = |r: &Result<(), DecodeError>| match r {
            Err(DecodeError::Stopped { why, .. }) => why.clone(),
            other => panic!("format {format}: a chunk asked for too many points stops, not {other:?}"),
        };
        assert!(!matches!(stop(&on_cut.1), Stop::Laz(_)), "format {format}: on, pcv-laz's decoder");
        assert!(matches!(stop(&off_cut.1), Stop::Laz(_)), "format {format}: off, laz");
        let n = on_cut.0.len().min(off_cut.0.len());
        assert!(on_cut.0[..n] == off_cut.0[..n], "format {format}: what both decoded");
    }
}
