//! This crate's LAZ decoders against the `laz` crate: chunks the tests compress themselves (point formats 0–3
//! point-wise and 6–8 layered, with and without extra bytes, whole and with the loader's selection of
//! fields, layers left empty), with varied data that reaches every branch of the items' coders, the
//! real files in /tmp/real when present, and damaged chunks. The chunks are the `laz` crate's
//! (`LasZipCompressor`), and its decoding ([`decode_chunk_with_laz`]) is what the records are compared
//! with, byte for byte.
use super::{covers, decode_chunk, decode_chunk_with_laz, decode_pointwise, layer_count, layout_of, Items};
use std::io::Cursor;

/// Points a chunk is decoded in at a time (as pcv's LAS reader does).
const PIECE_POINTS: usize = 2048;

/// One chunk of a LAZ file's point data: where its bytes are and how many points it holds.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    byte: usize,
    bytes: usize,
    points: usize,
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// `n` records of point format `format` with `extra` extra bytes: random walks with jumps (up to the
/// full i32 range), fields that mostly repeat and sometimes change, GPS times that repeat, step,
/// step by multiples, jump, go back and interleave several sequences, 8-bit, 16-bit and gray colors.
fn records(format: u8, extra: usize, n: usize, seed: u64) -> Vec<u8> {
    let base = FORMAT_LEN(format);
    let stride = base + extra;
    let mut r = Rng(seed);
    let mut out = vec![0u8; n * stride];
    let (mut x, mut y, mut z) = (r.next() as i32, r.next() as i32, (r.next() as i32) >> 8);
    let mut fields = [0u8; 8];
    let mut times = [r.next() as f64 * 1e-10, 1000.0, -5.0e8, 3.0];
    let mut step = 1e-5;
    let mut rgb = [100u16, 200, 300];
    let mut extras = vec![0u8; extra];
    let mut seq = 0;
    for rec in out.chunks_exact_mut(stride) {
        let big = r.chance(5);
        let spread = if big { u32::MAX as u64 } else { [16u64, 300, 70_000][r.below(3) as usize] };
        x = x.wrapping_add((r.below(spread) as i64 - spread as i64 / 2) as i32);
        y = y.wrapping_add((r.below(spread) as i64 - spread as i64 / 2) as i32);
        z = if r.chance(50) { r.next() as i32 } else { z.wrapping_add(r.below(200) as i32 - 100) };
        rec[0..4].copy_from_slice(&x.to_le_bytes());
        rec[4..8].copy_from_slice(&y.to_le_bytes());
        rec[8..12].copy_from_slice(&z.to_le_bytes());
        for (k, f) in fields.iter_mut().enumerate() {
            if r.chance(if k == 0 { 300 } else { 60 }) {
                *f = r.next() as u8;
            }
        }
        let intensity = if r.chance(200) { r.next() as u16 } else { fields[1] as u16 * 3 };
        rec[12..14].copy_from_slice(&intensity.to_le_bytes());
        let gps_at = if format >= 6 {
            // Point14: returns, flags, classification, user data, scan angle (i16), point source.
            rec[14] = fields[0];
            rec[15] = fields[2];
            rec[16] = fields[3];
            rec[17] = fields[4];
            rec[18..20].copy_from_slice(&(fields[5] as i16 - 128).to_le_bytes());
            rec[20..22].copy_from_slice(&(fields[6] as u16 * 7).to_le_bytes());
            22
        } else {
            rec[14] = fields[0];
            rec[15] = fields[2];
            rec[16] = fields[3];
            rec[17] = fields[4];
            rec[18..20].copy_from_slice(&(fields[6] as u16 * 7).to_le_bytes());
            20
        };
        let has_gps = format == 1 || format >= 3;
        if has_gps {
            match r.below(10) {
                0 => seq = r.below(4) as usize,
                1 => times[seq] += r.next() as f64 * 1e-8,
                2 => times[seq] -= step * 3.0,
                3 => step *= [0.5, 2.0, 37.0, 1e-3, 600.0][r.below(5) as usize],
                4 => {}
                5 => times[seq] = f64::from_bits(r.next()),
                _ => times[seq] += step * (1 + r.below(3)) as f64,
            }
            rec[gps_at..gps_at + 8].copy_from_slice(&times[seq].to_le_bytes());
        }
        let rgb_at = match format {
            2 => Some(20),
            3 | 5 => Some(28),
            7 | 8 => Some(30),
            _ => None,
        };
        if let Some(at) = rgb_at {
            match r.below(8) {
                0 => rgb = [r.next() as u16, r.next() as u16, r.next() as u16],
                1 => rgb = [r.next() as u8 as u16; 3],
                2 => rgb = [rgb[0].wrapping_add(3), rgb[1], rgb[2] ^ 0x100],
                3 => rgb = [r.next() as u8 as u16, r.next() as u8 as u16, r.next() as u8 as u16],
                _ => {}
            }
            for (k, c) in rgb.iter().enumerate() {
                rec[at + 2 * k..at + 2 * k + 2].copy_from_slice(&c.to_le_bytes());
            }
            if format == 8 {
                rec[36..38].copy_from_slice(&(rgb[1] ^ 0x0F0F).to_le_bytes());
            }
        }
        for (k, e) in extras.iter_mut().enumerate() {
            if r.chance(100 + 200 * k as u64) {
                *e = r.next() as u8;
            }
        }
        rec[base..].copy_from_slice(&extras);
    }
    out
}

/// The LASzip VLR, the chunks and the point data (chunk table offset first) of `recs` compressed by
/// the `laz` crate in chunks of `chunk_points`.
fn compress(format: u8, extra: usize, recs: &[u8], chunk_points: u32) -> (laz::LazVlr, Vec<Chunk>, Vec<u8>) {
    let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, extra as u16).expect("items");
    let vlr = laz::LazVlrBuilder::new(items).with_fixed_chunk_size(chunk_points).build();
    let mut c = laz::LasZipCompressor::new(Cursor::new(Vec::new()), vlr.clone()).expect("compressor");
    c.compress_many(recs).expect("compress");
    c.done().expect("done");
    let data = c.into_inner().into_inner();
    let table = laz::laszip::ChunkTable::read_from(Cursor::new(&data[..]), &vlr).expect("chunk table");
    let stride = FORMAT_LEN(format) + extra;
    let total = recs.len() / stride;
    let (mut chunks, mut at, mut left) = (Vec::new(), 8usize, total);
    for e in table.as_ref() {
        let points = (e.point_count as usize).min(left);
        chunks.push(Chunk { byte: at, bytes: e.byte_count as usize, points });
        at += e.byte_count as usize;
        left -= points;
    }
    (vlr, chunks, data)
}

/// The record size of point format `format` (its items' sizes, without extra bytes).
#[allow(non_snake_case, reason = "named like the constant table it stands in for in pcv (FORMAT_SIZES)")]
fn FORMAT_LEN(format: u8) -> usize {
    let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, 0).expect("items");
    items.iter().map(|i| i.size() as usize).sum()
}

/// Every chunk's records by `laz` and by the dispatching decoder (this crate's where it covers the
/// items).
fn both(vlr: &laz::LazVlr, chunks: &[Chunk], data: &[u8]) -> (Vec<u8>, Vec<u8>) {
    both_selected(vlr, chunks, data, laz::DecompressionSelection::all())
}

/// A LAZ file's LASzip VLR, chunks (from its chunk table, checked as far as a test needs), record
/// length and point count: the few LAS header and VLR fields the real-file test needs.
fn open_laz(data: &[u8]) -> (laz::LazVlr, Vec<Chunk>, usize, u64) {
    let u16_at = |o: usize| u16::from_le_bytes([data[o], data[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(data[o..o + 8].try_into().expect("8 bytes"));
    assert_eq!(&data[..4], b"LASF", "a LAS file");
    let (header_len, data_at, vlrs) = (u16_at(94) as usize, u32_at(96) as usize, u32_at(100));
    assert!(data[104] & 0x80 != 0, "a compressed point format");
    let record_len = u16_at(105) as usize;
    let count = if data[25] >= 4 && header_len >= 375 { u64_at(247) } else { u32_at(107) as u64 };
    let (mut at, mut vlr) = (header_len, None);
    for _ in 0..vlrs {
        let len = u16_at(at + 20) as usize;
        if &data[at + 2..at + 16] == b"laszip encoded" && u16_at(at + 18) == 22204 {
            vlr = Some(laz::LazVlr::from_buffer(&data[at + 54..at + 54 + len]).expect("the LASzip VLR"));
        }
        at += 54 + len;
    }
    let vlr = vlr.expect("a LASzip VLR");
    let mut cursor = Cursor::new(data);
    cursor.set_position(data_at as u64);
    let table = laz::laszip::ChunkTable::read_from(&mut cursor, &vlr).expect("the chunk table");
    let (mut chunks, mut byte, mut left) = (Vec::new(), data_at + 8, count);
    let entries = table.as_ref();
    for (k, e) in entries.iter().enumerate() {
        let last = k + 1 == entries.len();
        let points = if vlr.uses_variable_size_chunks() || !last { e.point_count } else { left };
        chunks.push(Chunk { byte, bytes: e.byte_count as usize, points: points as usize });
        byte += e.byte_count as usize;
        left -= points;
    }
    assert_eq!(left, 0, "the chunks hold the header's points");
    (vlr, chunks, record_len, count)
}

fn first_difference(a: &[u8], b: &[u8], stride: usize) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("first difference at point {} byte {}", i / stride, i % stride),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

#[test]
fn covers_the_pointwise_item_sets_only() {
    for format in 0..=10u8 {
        for extra in [0u16, 3] {
            let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, extra).expect("items");
            let covered = Items::of(&items);
            assert_eq!(covered.is_some(), format <= 3, "format {format} extra {extra}");
            if let Some(c) = covered {
                assert_eq!(c.record_len(), FORMAT_LEN(format) + extra as usize);
            }
        }
    }
    let v1 = laz::LazItemRecordBuilder::version_1_of::<laz::las::Point3>(0);
    assert_eq!(Items::of(&v1), None, "version 1 items go to laz");
    assert!(!covers(&v1));
}

#[test]
fn covers_formats_0_to_3_and_6_to_8() {
    for format in 0..=10u8 {
        for extra in [0u16, 3] {
            let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, extra).expect("items");
            let fast = format <= 3 || (6..=8).contains(&format);
            assert_eq!(covers(&items), fast, "format {format} extra {extra}");
            assert_eq!(layer_count(&items).is_some(), format >= 6, "format {format} extra {extra}");
        }
    }
}

#[test]
fn same_records_as_laz_for_formats_0_to_3_and_6_to_8() {
    for format in [0u8, 1, 2, 3, 6, 7, 8] {
        for extra in [0usize, 1, 5] {
            for (seed, n, chunk) in [(1u64, 1usize, 50u32), (2, 2, 50), (3, 12_345, 5000), (4, 3000, 1000)] {
                let stride = FORMAT_LEN(format) + extra;
                let recs = records(format, extra, n, seed * 100 + format as u64);
                let (vlr, chunks, data) = compress(format, extra, &recs, chunk);
                let (want, got) = both(&vlr, &chunks, &data);
                assert_eq!(want.len(), recs.len(), "format {format}: laz decodes every point");
                assert!(want == recs, "format {format}: laz round trip: {}", first_difference(&want, &recs, stride));
                assert!(
                    got == want,
                    "format {format} extra {extra} seed {seed}: {}",
                    first_difference(&got, &want, stride)
                );
            }
        }
    }
}

#[test]
fn same_records_as_laz_for_real_files() {
    let mut any = false;
    for name in ["autzen_trim.laz", "lone-star.laz"] {
        let path = std::path::Path::new("/tmp/real").join(name);
        let Ok(data) = std::fs::read(&path) else {
            println!("skipped {}: not present (PDAL's test/data/las/{name})", path.display());
            continue;
        };
        any = true;
        let (vlr, chunks, stride, total) = open_laz(&data);
        assert!(covers(vlr.items()), "{name}: covered by this crate's decoders");
        let (want, got) = both(&vlr, &chunks, &data);
        assert_eq!(want.len(), total as usize * stride);
        assert!(got == want, "{name}: {}", first_difference(&got, &want, stride));
        println!("{name}: {total} points equal");
    }
    if !any {
        println!("skipped: no real LAZ files in /tmp/real");
    }
}

#[test]
fn damaged_chunks_fail_cleanly_where_laz_does() {
    let (format, extra) = (3u8, 2usize);
    let stride = FORMAT_LEN(format) + extra;
    let recs = records(format, extra, 4000, 77);
    let (vlr, chunks, data) = compress(format, extra, &recs, 4000);
    let items = Items::of(vlr.items()).expect("covered");
    let c = chunks[0];
    let chunk = &data[c.byte..c.byte + c.bytes];
    let mut r = Rng(5);
    let mut scratch = Vec::new();
    for trial in 0..300 {
        let mut bad = chunk.to_vec();
        match trial % 3 {
            0 => bad.truncate(r.below(chunk.len() as u64) as usize),
            1 => {
                for _ in 0..1 + r.below(4) {
                    let i = r.below(bad.len() as u64) as usize;
                    bad[i] ^= 1 << r.below(8);
                }
            }
            _ => {
                let i = stride + r.below((bad.len() - stride) as u64) as usize;
                for b in &mut bad[i..] {
                    *b = r.next() as u8;
                }
            }
        }
        let mut got = Vec::new();
        let fast = decode_pointwise(&bad, items, c.points, 1000, &mut scratch, &mut |p| got.extend_from_slice(p));
        let mut want = Vec::new();
        let slow = decode_chunk_with_laz(
            vlr.items(),
            &bad,
            c.points,
            laz::DecompressionSelection::all(),
            PIECE_POINTS,
            &mut scratch,
            &mut |p| want.extend_from_slice(p),
        );
        // Whatever both decoded is the same; where `laz` ran out of data, so did this decoder, after as
        // many points. (`laz` may also fail by panicking, which this one does not; then it decodes on.)
        let n = got.len().min(want.len());
        assert!(got[..n] == want[..n], "trial {trial}: {}", first_difference(&got[..n], &want[..n], stride));
        if let (Err(e), Err(_)) = (&fast, &slow) {
            assert!(e.after <= c.points);
        }
        if slow.is_ok() {
            assert!(fast.is_ok(), "trial {trial}: laz decoded the damaged chunk, pcv-laz failed: {fast:?}");
            assert_eq!(got, want);
        }
        if fast.is_err() && trial % 3 == 0 {
            assert!(slow.is_err(), "trial {trial}: a truncated chunk that laz decodes");
        }
    }
}

/// The fields pcv's viewer asks for (as its `LasSource::decode_laz` does).
fn loader_selection() -> laz::DecompressionSelection {
    use laz::DecompressionSelection as S;
    S(S::XY_RETURNS_CHANNEL | S::Z | S::CLASSIFICATION | S::INTENSITY | S::RGB)
}

/// Every chunk's records by `laz` and by the dispatching decoder with `selection`.
fn both_selected(
    vlr: &laz::LazVlr,
    chunks: &[Chunk],
    data: &[u8],
    selection: laz::DecompressionSelection,
) -> (Vec<u8>, Vec<u8>) {
    let (mut want, mut got, mut scratch) = (Vec::new(), Vec::new(), Vec::new());
    for c in chunks {
        let bytes = &data[c.byte..c.byte + c.bytes];
        decode_chunk_with_laz(vlr.items(), bytes, c.points, selection, PIECE_POINTS, &mut scratch, &mut |p| {
            want.extend_from_slice(p)
        })
        .expect("laz decodes");
        decode_chunk(vlr.items(), bytes, c.points, selection, PIECE_POINTS, &mut scratch, &mut |p| {
            got.extend_from_slice(p)
        })
        .expect("pcv-laz decodes");
    }
    (want, got)
}

#[test]
fn layered_decoder_covers_formats_6_to_8() {
    for format in 0..=10u8 {
        for extra in [0u16, 3] {
            let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, extra).expect("items");
            let covered = layout_of(&items);
            assert_eq!(covered.is_some(), (6..=8).contains(&format), "format {format} extra {extra}");
            if let Some(c) = covered {
                assert_eq!(c.record_len(), FORMAT_LEN(format) + extra as usize);
            }
        }
    }
}

#[test]
fn layered_records_as_laz_for_selections_and_empty_layers() {
    use laz::DecompressionSelection as S;
    let selections = [
        S::all(),
        loader_selection(),
        S(S::XY_RETURNS_CHANNEL),
        S(S::ALL & !(S::Z | S::GPS_TIME | S::NIR)),
        S(S::GPS_TIME | S::SCAN_ANGLE | S::POINT_SOURCE_ID | S::USER_DATA | S::FLAGS | S::ALL_EXTRA_BYTES | S::NIR),
    ];
    for format in [6u8, 7, 8] {
        for extra in [0usize, 2] {
            let stride = FORMAT_LEN(format) + extra;
            for constant in [false, true] {
                let mut recs = records(format, extra, 3000, 900 + format as u64);
                if constant {
                    // Fields that never change leave their layers empty (size 0): every field but
                    // x, y and the returns, and the first extra byte.
                    let first = recs[..stride].to_vec();
                    for rec in recs.chunks_exact_mut(stride) {
                        rec[8..14].copy_from_slice(&first[8..14]);
                        rec[15..stride.min(31)].copy_from_slice(&first[15..stride.min(31)]);
                        if stride > 31 {
                            rec[30..].copy_from_slice(&first[30..]);
                        }
                    }
                }
                let (vlr, chunks, data) = compress(format, extra, &recs, 700);
                for selection in selections {
                    let (want, got) = both_selected(&vlr, &chunks, &data, selection);
                    assert_eq!(want.len(), recs.len());
                    assert!(
                        got == want,
                        "format {format} extra {extra} constant {constant} selection {:#x}: {}",
                        selection.0,
                        first_difference(&got, &want, stride)
                    );
                }
            }
        }
    }
}

#[test]
fn damaged_layered_chunks_fail_cleanly_where_laz_does() {
    for (format, extra) in [(7u8, 2usize), (8, 0), (6, 0)] {
        let stride = FORMAT_LEN(format) + extra;
        let recs = records(format, extra, 3000, 78 + format as u64);
        let (vlr, chunks, data) = compress(format, extra, &recs, 3000);
        let layers = layer_count(vlr.items());
        let c = chunks[0];
        let chunk = &data[c.byte..c.byte + c.bytes];
        let mut r = Rng(6 + format as u64);
        let mut scratch = Vec::new();
        for trial in 0..300 {
            let mut bad = chunk.to_vec();
            match trial % 4 {
                0 => bad.truncate(r.below(chunk.len() as u64) as usize),
                1 => {
                    for _ in 0..1 + r.below(4) {
                        let i = r.below(bad.len() as u64) as usize;
                        bad[i] ^= 1 << r.below(8);
                    }
                }
                2 => {
                    // A layer size changed (the layers after it move).
                    let i = stride + 4 + 4 * r.below(layers.unwrap_or(9) as u64) as usize;
                    let v = u32::from_le_bytes(bad[i..i + 4].try_into().expect("4 bytes"));
                    let v = [0, 1, 3, v / 2, v.wrapping_add(1), v.wrapping_sub(5)][r.below(6) as usize];
                    bad[i..i + 4].copy_from_slice(&v.to_le_bytes());
                }
                _ => {
                    let i = stride + r.below((bad.len() - stride) as u64) as usize;
                    for b in &mut bad[i..] {
                        *b = r.next() as u8;
                    }
                }
            }
            for selection in [laz::DecompressionSelection::all(), loader_selection()] {
                let (mut got, mut want) = (Vec::new(), Vec::new());
                let items = vlr.items();
                let fast = decode_chunk(items, &bad, c.points, selection, PIECE_POINTS, &mut scratch, &mut |p| {
                    got.extend_from_slice(p)
                });
                let slow =
                    decode_chunk_with_laz(items, &bad, c.points, selection, PIECE_POINTS, &mut scratch, &mut |p| {
                        want.extend_from_slice(p)
                    });
                // Whatever both decoded is the same; where `laz` decodes it all, so does pcv-laz. (`laz`
                // may also fail by panicking, which pcv-laz does not; then it decodes on.)
                let n = got.len().min(want.len());
                assert!(
                    got[..n] == want[..n],
                    "format {format} trial {trial}: {}",
                    first_difference(&got[..n], &want[..n], stride)
                );
                if slow.is_ok() {
                    assert!(
                        fast.is_ok(),
                        "format {format} trial {trial}: laz decoded the damaged chunk, pcv-laz failed: {fast:?}"
                    );
                    assert_eq!(got, want);
                }
                if fast.is_err() && trial % 4 == 0 {
                    assert!(slow.is_err(), "format {format} trial {trial}: a truncated chunk that laz decodes");
                }
            }
        }
    }
}

/// The decode loops compiled for LZCNT/BMI1/BMI2 (what `decode_pointwise` and `decode_layered_chunk` run
/// on a CPU that has them, see `has_bmi`) and for baseline x86-64 (`run_in` called directly) give the
/// same records and fail after the same points, on whole and on truncated chunks of every covered
/// item set. (Where the CPU lacks the features both are the baseline loop.)
#[test]
fn bmi_and_baseline_loops_decode_alike() {
    use laz::DecompressionSelection as S;
    type Out = (Vec<u8>, Result<(), super::ChunkError>);
    for format in [0u8, 1, 2, 3, 6, 7, 8] {
        for extra in [0usize, 3] {
            let stride = FORMAT_LEN(format) + extra;
            let recs = records(format, extra, 2500, 4242 + format as u64);
            let (vlr, chunks, data) = compress(format, extra, &recs, 1000);
            for c in &chunks {
                let whole = &data[c.byte..c.byte + c.bytes];
                for cut in [whole.len(), whole.len() * 2 / 3, whole.len() / 3] {
                    let bytes = &whole[..cut];
                    let (mut s1, mut s2) = (Vec::new(), Vec::new());
                    let (a, b): (Out, Out) = if let Some(items) = Items::of(vlr.items()) {
                        let mut a = Vec::new();
                        let ra =
                            decode_pointwise(bytes, items, c.points, 700, &mut s1, &mut |p| a.extend_from_slice(p));
                        let mut b = Vec::new();
                        let rb = match (items.gps, items.rgb) {
                            (false, false) => {
                                super::run_in::<false, false, false>(bytes, items, c.points, 700, &mut s2, &mut |p| {
                                    b.extend_from_slice(p)
                                })
                            }
                            (true, false) => {
                                super::run_in::<true, false, false>(bytes, items, c.points, 700, &mut s2, &mut |p| {
                                    b.extend_from_slice(p)
                                })
                            }
                            (false, true) => {
                                super::run_in::<false, true, false>(bytes, items, c.points, 700, &mut s2, &mut |p| {
                                    b.extend_from_slice(p)
                                })
                            }
                            (true, true) => {
                                super::run_in::<true, true, false>(bytes, items, c.points, 700, &mut s2, &mut |p| {
                                    b.extend_from_slice(p)
                                })
                            }
                        };
                        ((a, ra), (b, rb))
                    } else {
                        let layout = layout_of(vlr.items()).expect("layered items covered");
                        let sel = if format == 7 { loader_selection() } else { S::all() };
                        let mut a = Vec::new();
                        let ra = super::decode_layered_chunk(bytes, layout, c.points, sel, 700, &mut s1, &mut |p| {
                            a.extend_from_slice(p)
                        });
                        let mut b = Vec::new();
                        let rb = match (layout.rgb, layout.nir) {
                            (false, _) => super::layered::run_in::<false, false, false>(
                                bytes,
                                layout,
                                c.points,
                                sel,
                                700,
                                &mut s2,
                                &mut |p| b.extend_from_slice(p),
                            ),
                            (true, false) => super::layered::run_in::<true, false, false>(
                                bytes,
                                layout,
                                c.points,
                                sel,
                                700,
                                &mut s2,
                                &mut |p| b.extend_from_slice(p),
                            ),
                            (true, true) => super::layered::run_in::<true, true, false>(
                                bytes,
                                layout,
                                c.points,
                                sel,
                                700,
                                &mut s2,
                                &mut |p| b.extend_from_slice(p),
                            ),
                        };
                        ((a, ra), (b, rb))
                    };
                    assert!(
                        a.0 == b.0,
                        "format {format} extra {extra} cut {cut}: {}",
                        first_difference(&a.0, &b.0, stride)
                    );
                    assert_eq!(a.1, b.1, "format {format} extra {extra} cut {cut}");
                    if cut == whole.len() {
                        assert!(
                            a.1.is_ok() && a.0.len() == c.points * stride,
                            "format {format} extra {extra}: the whole chunk decodes"
                        );
                    }
                }
            }
        }
    }
}
