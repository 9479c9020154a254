#[allow(dead_code, unused_imports)]
mod cloud { pub mod formats {
#[path = "/work/wt-laz/src/cloud/formats/laz/mod.rs"]
pub mod laz;
} }
use cloud::formats::laz as lazd;
use std::time::Instant;
fn u32le(d: &[u8], at: usize) -> u32 { u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) }
fn cpu() -> f64 { let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 }; unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) }; t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9 }
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let max_chunks: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(usize::MAX);
    let use_laz = args.get(3).map_or(false, |s| s == "laz");
    let use_pair = args.get(3).map_or(false, |s| s == "pair");
    let data = std::fs::read(path).unwrap();
    let header_size = u16::from_le_bytes([data[94], data[95]]) as usize;
    let data_offset = u32le(&data, 96) as usize;
    let n_vlrs = u32le(&data, 100) as usize;
    let stride = u16::from_le_bytes([data[105], data[106]]) as usize;
    let mut at = header_size;
    let mut vlr = None;
    for _ in 0..n_vlrs {
        let rid = u16::from_le_bytes([data[at + 18], data[at + 19]]);
        let len = u16::from_le_bytes([data[at + 20], data[at + 21]]) as usize;
        if rid == 22204 { vlr = Some(laz::LazVlr::from_buffer(&data[at + 54..at + 54 + len]).unwrap()); }
        at += 54 + len;
    }
    let vlr = vlr.unwrap();
    let mut cur = std::io::Cursor::new(&data[..]);
    cur.set_position(data_offset as u64);
    let table = laz::laszip::ChunkTable::read_from(&mut cur, &vlr).unwrap();
    let mut chunks = Vec::new();
    let mut byte = data_offset + 8;
    for e in table.as_ref().iter() {
        chunks.push((byte, e.byte_count as usize, e.point_count as usize));
        byte += e.byte_count as usize;
    }
    let legacy = u32le(&data, 107) as usize;
    let count = if legacy != 0 && data[25] < 4 { legacy } else { u64::from_le_bytes(data[247..255].try_into().unwrap()) as usize };
    let before: usize = chunks[..chunks.len() - 1].iter().map(|c| c.2).sum();
    chunks.last_mut().unwrap().2 = count - before;
    chunks.truncate(max_chunks);
    let items = lazd::Items::of(vlr.items());
    let mut scratch = Vec::new();
    let mut total = 0usize;
    let mut sum = 0u64;
    let t = Instant::now(); let c0 = cpu();
    if use_pair {
        let (mut s0, mut s1) = (Vec::new(), Vec::new());
        for pr in chunks.chunks(2) {
            let (a, b) = (pr[0], pr.get(1).copied().unwrap_or((0, 0, 0)));
            let r = lazd::decode_chunk_pair((&data[a.0..a.0 + a.1], a.2), (&data[b.0..b.0 + b.1], b.2), items.unwrap(), 4096, [&mut s0, &mut s1], &mut |_, piece| {
                for c in piece.chunks_exact(stride) { sum = sum.wrapping_add(c[0] as u64 + c[8] as u64); }
            });
            assert!(r[0].is_ok() && r[1].is_ok());
            total += a.2 + b.2;
        }
    }
    for &(b, n, p) in chunks.iter().filter(|_| !use_pair) {
        let bytes = &data[b..b + n];
        if use_laz || items.is_none() {
            use laz::record::{LayeredPointRecordDecompressor, RecordDecompressor, SequentialPointRecordDecompressor};
            let mut out = vec![0u8; p * stride];
            if vlr.items()[0].version() >= 3 {
                let mut dec = LayeredPointRecordDecompressor::new(std::io::Cursor::new(bytes));
                dec.set_fields_from(vlr.items()).unwrap();
                dec.decompress_many(&mut out).unwrap();
            } else {
                let mut dec = SequentialPointRecordDecompressor::new(std::io::Cursor::new(bytes));
                dec.set_fields_from(vlr.items()).unwrap();
                dec.decompress_many(&mut out).unwrap();
            }
            for c in out.chunks_exact(stride) { sum = sum.wrapping_add(c[0] as u64 + c[8] as u64); }
        } else {
            lazd::decode_chunk(bytes, items.unwrap(), p, 4096, &mut scratch, &mut |piece| {
                for c in piece.chunks_exact(stride) { sum = sum.wrapping_add(c[0] as u64 + c[8] as u64); }
            }).unwrap();
        }
        total += p;
    }
    if args.get(4).map_or(false, |s| s == "verify") {
        use laz::record::{LayeredPointRecordDecompressor, RecordDecompressor, SequentialPointRecordDecompressor};
        let mut bad = 0;
        for &(b, n, p) in &chunks {
            let bytes = &data[b..b + n];
            let mut out = vec![0u8; p * stride];
            let mut dec = SequentialPointRecordDecompressor::new(std::io::Cursor::new(bytes));
            dec.set_fields_from(vlr.items()).unwrap();
            dec.decompress_many(&mut out).unwrap();
            let mut mine = Vec::new();
            lazd::decode_chunk(bytes, items.unwrap(), p, 1 << 30, &mut scratch, &mut |piece| mine.extend_from_slice(piece)).unwrap();
            if mine != out { bad += 1; }
        }
        println!("verify: {} of {} chunks differ", bad, chunks.len());
        let (mut s0, mut s1) = (Vec::new(), Vec::new());
        let mut pbad = 0;
        for pr in chunks.chunks(2) {
            let (a, b) = (pr[0], pr.get(1).copied().unwrap_or((0, 0, 0)));
            let mut mine = [Vec::new(), Vec::new()];
            let r = lazd::decode_chunk_pair((&data[a.0..a.0 + a.1], a.2), (&data[b.0..b.0 + b.1], b.2), items.unwrap(), 1000, [&mut s0, &mut s1], &mut |k, piece| mine[k].extend_from_slice(piece));
            assert!(r[0].is_ok() && r[1].is_ok());
            for (k, c) in pr.iter().enumerate() {
                let mut out = vec![0u8; c.2 * stride];
                let mut dec = SequentialPointRecordDecompressor::new(std::io::Cursor::new(&data[c.0..c.0 + c.1]));
                dec.set_fields_from(vlr.items()).unwrap();
                dec.decompress_many(&mut out).unwrap();
                if mine[k] != out { pbad += 1; }
            }
        }
        println!("verify pair: {} of {} chunks differ", pbad, chunks.len());
        let _ = (LayeredPointRecordDecompressor::<std::io::Cursor<&[u8]>>::new, );
    }
    let s = t.elapsed().as_secs_f64();
    println!("{} points {} chunks {:.3} s {:.2} M/s checksum {}", total, chunks.len(), s, total as f64 / s / 1e6, sum); println!("  cpu {:.3} s  {:.2} M/cpu-s", cpu()-c0, total as f64/(cpu()-c0)/1e6);
}
