//! The encoder against the `laz` crate: the same bytes for random and structured record sets of every
//! item set it covers, and `laz` decodes them back to the records.
use super::{encode_chunk, Layout};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The chunk `laz`'s `LayeredPointRecordCompressor` writes.
fn laz_chunk(items: &[laz::LazItem], recs: &[u8]) -> Vec<u8> {
    use laz::record::{LayeredPointRecordCompressor, RecordCompressor};
    let mut c = LayeredPointRecordCompressor::new(std::io::Cursor::new(Vec::new()));
    c.set_fields_from(&items.to_vec()).expect("laz takes the items");
    c.compress_many(recs).expect("laz compresses");
    c.done().expect("laz finishes");
    c.into_inner().into_inner()
}

/// `laz`'s decoding of a chunk of `n` records.
fn laz_decode(items: &[laz::LazItem], chunk: &[u8], record_len: usize, n: usize) -> Vec<u8> {
    use laz::record::{LayeredPointRecordDecompressor, RecordDecompressor};
    let mut d = LayeredPointRecordDecompressor::new(std::io::Cursor::new(chunk));
    d.set_fields_from(&items.to_vec()).expect("laz takes the items");
    let mut out = vec![0u8; record_len * n];
    d.decompress_many(&mut out).expect("laz decodes");
    out
}

fn items(format: u8, extra: u16) -> Vec<laz::LazItem> {
    laz::LazItemRecordBuilder::default_for_point_format_id(format, extra).expect("a LAS 1.4 format")
}

/// How the records of a case are made.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Every byte random.
    Noise,
    /// Terrain-like: a scan line walk, slowly changing Z, pulses of 1–15 returns with one GPS time each,
    /// few classes, a few scanner channels, smooth colours.
    Terrain { channels: u8 },
    /// Terrain with GPS times that jump between sequences, repeat and go back, and extreme values.
    Wild,
}

fn records(kind: Kind, format: u8, extra: usize, n: usize, seed: u64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(seed);
    let len = 30 + if format >= 7 { 6 } else { 0 } + if format == 8 { 2 } else { 0 } + extra;
    let mut out = vec![0u8; len * n];
    let (mut x, mut y, mut z) =
        (rng.random_range(-1_000_000..1_000_000i32), rng.random_range(0..1_000_000i32), 5000i32);
    let mut gps = 300_000_000.0f64 + rng.random_range(0.0..1.0);
    let (mut r, mut nr) = (1u8, 1u8);
    let mut channel = 0u8;
    let mut rgb = [30000u16, 28000, 26000];
    let mut nir = 1000u16;
    let sequences = [gps, gps + 1.0e6, gps - 5.0e5, 1.0e9];
    for (i, rec) in out.chunks_exact_mut(len).enumerate() {
        if let Kind::Noise = kind {
            rng.fill(rec);
            continue;
        }
        // Pulses: a new pulse after its last return.
        if r >= nr {
            nr = if rng.random_bool(0.6) { 1 } else { rng.random_range(1..=15) };
            r = 1;
            gps += match kind {
                Kind::Wild if rng.random_bool(0.1) => {
                    sequences[rng.random_range(0..4)] - gps + rng.random_range(0.0..10.0)
                }
                Kind::Wild if rng.random_bool(0.05) => -rng.random_range(0.0..1.0),
                Kind::Wild if rng.random_bool(0.05) => rng.random_range(0.0..1000.0),
                Kind::Wild if rng.random_bool(0.02) => 0.0,
                _ => 0.00001 * rng.random_range(1..4) as f64,
            };
            if let Kind::Terrain { channels } = kind {
                if channels > 1 && rng.random_bool(0.02) {
                    channel = rng.random_range(0..channels);
                }
            } else if rng.random_bool(0.05) {
                channel = rng.random_range(0..4);
            }
            x += rng.random_range(-3..40);
            if i % 500 == 0 {
                y += rng.random_range(-100..200);
                x -= rng.random_range(0..15000);
            }
        } else {
            r += 1;
        }
        if matches!(kind, Kind::Wild) && rng.random_bool(0.01) {
            r = rng.random_range(0..16);
            nr = rng.random_range(0..16);
        }
        z += rng.random_range(-20..=20);
        let zr = z - 150 * (r as i32 - 1);
        rec[0..4].copy_from_slice(&(x + rng.random_range(-2..3)).to_le_bytes());
        rec[4..8].copy_from_slice(&(y + rng.random_range(-2..3)).to_le_bytes());
        rec[8..12].copy_from_slice(&zr.to_le_bytes());
        rec[12..14].copy_from_slice(&(rng.random_range(0..300u16) + 100 * r as u16).to_le_bytes());
        rec[14] = r | nr << 4;
        let class_flags = if rng.random_bool(0.05) { rng.random_range(0..16u8) } else { 0 };
        let dir = rng.random_bool(0.5) as u8;
        let edge = rng.random_bool(0.01) as u8;
        rec[15] = class_flags | channel << 4 | dir << 6 | edge << 7;
        rec[16] = [2u8, 2, 2, 3, 5, 6, 9][rng.random_range(0..7)] | if rng.random_bool(0.01) { 0x40 } else { 0 };
        rec[17] = if rng.random_bool(0.9) { 0 } else { rng.random() };
        rec[18..20]
            .copy_from_slice(&(rng.random_range(-30..30i16) * if rng.random_bool(0.3) { 0 } else { 1 }).to_le_bytes());
        rec[20..22].copy_from_slice(
            &(7 + (i / 20_000) as u16 + if matches!(kind, Kind::Wild) && rng.random_bool(0.05) { 1 } else { 0 })
                .to_le_bytes(),
        );
        let g = if matches!(kind, Kind::Wild) && rng.random_bool(0.002) { f64::from_bits(rng.random()) } else { gps };
        rec[22..30].copy_from_slice(&g.to_le_bytes());
        let mut at = 30;
        if format >= 7 {
            for c in rgb.iter_mut() {
                if rng.random_bool(0.3) {
                    *c = c.wrapping_add(rng.random_range(0..600)).wrapping_sub(300);
                }
            }
            if rng.random_bool(0.1) {
                rgb = [rgb[0]; 3];
            }
            for (k, c) in rgb.iter().enumerate() {
                rec[at + 2 * k..at + 2 * k + 2].copy_from_slice(&c.to_le_bytes());
            }
            at += 6;
        }
        if format == 8 {
            if rng.random_bool(0.5) {
                nir = nir.wrapping_add(rng.random_range(0..40)).wrapping_sub(20);
            }
            rec[at..at + 2].copy_from_slice(&nir.to_le_bytes());
            at += 2;
        }
        for (k, b) in rec[at..].iter_mut().enumerate() {
            // Byte 0 constant, byte 1 slow, the others random-ish.
            *b = match k {
                0 => 42,
                1 => (i / 1000) as u8,
                _ => {
                    if rng.random_bool(0.5) {
                        rng.random()
                    } else {
                        7
                    }
                }
            };
        }
    }
    out
}

/// Encodes with both and compares; also checks that `laz` decodes the chunk back.
fn check(format: u8, extra: u16, recs: &[u8], what: &str) {
    let items = items(format, extra);
    let layout = Layout::of(&items).expect("the encoder covers formats 6–8");
    assert_eq!(recs.len() % layout.record_len(), 0);
    let ours = encode_chunk(layout, recs);
    let theirs = laz_chunk(&items, recs);
    if ours != theirs {
        let at = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
        panic!("{what}: {} bytes against laz's {}, first difference at byte {at}", ours.len(), theirs.len());
    }
    let n = recs.len() / layout.record_len();
    if n > 0 {
        assert_eq!(laz_decode(&items, &ours, layout.record_len(), n), recs, "{what}: laz decodes it back");
    }
}

#[test]
fn same_bytes_as_laz_for_every_item_set_and_kind() {
    let kinds = [
        Kind::Noise,
        Kind::Terrain { channels: 1 },
        Kind::Terrain { channels: 2 },
        Kind::Terrain { channels: 4 },
        Kind::Wild,
    ];
    let mut seed = 1;
    for format in [6u8, 7, 8] {
        for extra in [0u16, 3, 4] {
            for kind in kinds {
                for n in [1usize, 2, 3, 17, 1000, 6000] {
                    seed += 1;
                    let recs = records(kind, format, extra as usize, n, seed);
                    check(format, extra, &recs, &format!("format {format} + {extra} bytes, {kind:?}, {n} points"));
                }
            }
        }
    }
}

#[test]
fn same_bytes_as_laz_for_large_chunks() {
    for (format, extra) in [(6u8, 0u16), (7, 0), (8, 4), (6, 3)] {
        for kind in [Kind::Terrain { channels: 1 }, Kind::Wild] {
            let recs = records(kind, format, extra as usize, 50_000, 99 + format as u64);
            check(format, extra, &recs, &format!("format {format} + {extra} bytes, {kind:?}, 50 000 points"));
        }
    }
}

#[test]
fn same_bytes_as_laz_for_constant_and_degenerate_records() {
    for format in [6u8, 7, 8] {
        for extra in [0u16, 4] {
            let len = 30 + if format >= 7 { 6 } else { 0 } + if format == 8 { 2 } else { 0 } + extra as usize;
            // All points equal (only the XY and Z layers are written), all zero, all 0xFF.
            let one = records(Kind::Terrain { channels: 1 }, format, extra as usize, 1, 5);
            check(format, extra, &one.repeat(3000), "3000 equal points");
            check(format, extra, &vec![0u8; len * 500], "500 zero points");
            check(format, extra, &vec![0xFFu8; len * 500], "500 0xFF points");
            // Each channel in turn, every field stepping by one.
            let mut recs = vec![0u8; len * 4000];
            for (i, rec) in recs.chunks_exact_mut(len).enumerate() {
                for (k, b) in rec.iter_mut().enumerate() {
                    *b = (i + k) as u8;
                }
                rec[15] = (rec[15] & 0xCF) | (((i / 3) % 4) as u8) << 4;
            }
            check(format, extra, &recs, "stepping fields, rotating channels");
        }
    }
}

#[test]
fn no_records_give_an_empty_chunk() {
    let items = items(7, 0);
    let layout = Layout::of(&items).expect("format 7");
    assert!(encode_chunk(layout, &[]).is_empty());
    assert_eq!(laz_chunk(&items, &[]), Vec::<u8>::new());
}

#[test]
fn layout_covers_only_version_3_layered_items() {
    assert_eq!(Layout::of(&items(6, 0)).map(|l| l.record_len()), Some(30));
    assert_eq!(Layout::of(&items(7, 2)).map(|l| l.record_len()), Some(38));
    assert_eq!(Layout::of(&items(8, 0)).map(|l| l.record_len()), Some(38));
    assert_eq!(Layout::of(&items(3, 0)), None, "point-wise formats go to laz");
    assert_eq!(Layout::of(&items(9, 0)), None, "wave packets go to laz");
    assert_eq!(Layout::of(&[]), None);
}
