#[allow(dead_code, unused_imports)]
mod cloud { pub mod formats {
#[path = "/work/wt-laz10/src/cloud/formats/laz/mod.rs"]
pub mod laz;
} }
#[allow(dead_code, unused_imports)]
mod cloud_old { pub mod formats {
#[path = "/tmp/laz10h/old/laz/mod.rs"]
pub mod laz;
} }
use cloud::formats::laz as lazd;
use cloud_old::formats::laz as lazo;
fn u32le(d: &[u8], at: usize) -> u32 { u32::from_le_bytes(d[at..at + 4].try_into().unwrap()) }
fn cpu() -> f64 { let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 }; unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) }; t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9 }
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = &args[1];
    let max_chunks: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(usize::MAX);
    let mode = args.get(3).cloned().unwrap_or("pcv".into());
    let rounds: usize = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(1);
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
    let skip: usize = std::env::var("SKIP").ok().map_or(0, |s| s.parse().unwrap());
    chunks.drain(..skip.min(chunks.len()));
    chunks.truncate(max_chunks);
    let items = lazd::Items::of(vlr.items());
    let layout = lazd::layout_of(vlr.items());
    let layered = vlr.items()[0].version() >= 3;
    use laz::DecompressionSelection as S;
    let sel = if mode.contains("all") { S::all() } else { S(S::XY_RETURNS_CHANNEL | S::Z | S::CLASSIFICATION | S::INTENSITY | S::RGB) };
    let mut scratch = Vec::new();
    let decode = |bytes: &[u8], p: usize, piece_points: usize, scratch: &mut Vec<u8>, f: &mut dyn FnMut(&[u8])| {
        if layered { lazd::decode_layered_chunk(bytes, layout.unwrap(), p, sel, piece_points, scratch, f).unwrap() }
        else { lazd::decode_chunk(bytes, items.unwrap(), p, piece_points, scratch, f).unwrap() }
    };
    let laz_decode = |bytes: &[u8], p: usize| -> Vec<u8> {
        use laz::record::{LayeredPointRecordDecompressor, RecordDecompressor, SequentialPointRecordDecompressor};
        let mut out = vec![0u8; p * stride];
        if layered {
            let mut dec = LayeredPointRecordDecompressor::new(std::io::Cursor::new(bytes));
            dec.set_fields_from(vlr.items()).unwrap();
            dec.set_selection(sel);
            dec.decompress_many(&mut out).unwrap();
        } else {
            let mut dec = SequentialPointRecordDecompressor::new(std::io::Cursor::new(bytes));
            dec.set_fields_from(vlr.items()).unwrap();
            dec.decompress_many(&mut out).unwrap();
        }
        out
    };
    if mode.starts_with("verify") {
        let mut bad = 0;
        for &(b, n, p) in &chunks {
            let bytes = &data[b..b + n];
            let out = laz_decode(bytes, p);
            let mut mine = Vec::new();
            decode(bytes, p, 1 << 14, &mut scratch, &mut |piece| mine.extend_from_slice(piece));
            if mine != out { bad += 1; }
        }
        println!("verify: {} of {} chunks differ", bad, chunks.len());
        return;
    }
    if mode.starts_with("pipe") {
        // New decoder only, per chunk piece PA vs PB back to back (order alternating), each piece converted
        // into a reused staging (as LasFast does); per-chunk minima and means.
        let pa: usize = std::env::var("PA").ok().map_or(1 << 14, |s| s.parse().unwrap());
        let pb: usize = std::env::var("PB").ok().map_or(1024, |s| s.parse().unwrap());
        let total: usize = chunks.iter().map(|c| c.2).sum();
        let mut best = vec![[f64::MAX; 2]; chunks.len()];
        let mut tot = [0f64; 2];
        let mut st = Stage::default();
        for r in 0..rounds {
            for (ci, &(b, n, p)) in chunks.iter().enumerate() {
                for j in 0..2 {
                    let v = (j + r + ci) % 2;
                    st.clear();
                    let c0 = cpu();
                    decode(&data[b..b + n], p, if v == 0 { pa } else { pb }, &mut scratch, &mut |piece: &[u8]| convert(&mut st, piece, stride));
                    let t = cpu() - c0;
                    best[ci][v] = best[ci][v].min(t);
                    tot[v] += t;
                }
            }
        }
        let s0: f64 = best.iter().map(|b| b[0]).sum();
        let s1: f64 = best.iter().map(|b| b[1]).sum();
        println!("pipe minima, {rounds} rounds, {total} points: piece {pa} {s0:.4} s ({:.3} M/cpu-s)  piece {pb} {s1:.4} s ({:.3})  b/a {:.4}; means a {:.4} b {:.4} b/a {:.4}  [{}]",
            total as f64 / s0 / 1e6, total as f64 / s1 / 1e6, s1 / s0, tot[0] / rounds as f64, tot[1] / rounds as f64, tot[1] / tot[0], st.pts.len());
        return;
    }
    if mode.starts_with("whole") {
        // All chunks, new decoder only, THREADS threads taking chunks in order; total CPU of the threads.
        let threads: usize = std::env::var("THREADS").ok().map_or(1, |s| s.parse().unwrap());
        let piece: usize = std::env::var("PIECE").ok().map_or(1 << 14, |s| s.parse().unwrap());
        let total: usize = chunks.iter().map(|c| c.2).sum();
        for _ in 0..rounds {
            let next = std::sync::atomic::AtomicUsize::new(0);
            let t0 = std::time::Instant::now();
            let cpus: Vec<(f64, u64)> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads).map(|_| s.spawn(|| {
                    let mut scratch = Vec::new();
                    let mut sum = 0u64;
                    let c0 = cpu();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= chunks.len() { break; }
                        let (b, n, p) = chunks[i];
                        let f = &mut |piece: &[u8]| { for c in piece.chunks_exact(stride) { sum = sum.wrapping_add(c[0] as u64 + c[8] as u64); } };
                        decode(&data[b..b + n], p, piece, &mut scratch, f);
                    }
                    (cpu() - c0, sum)
                })).collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let c: f64 = cpus.iter().map(|x| x.0).sum();
            println!("whole: {total} points, {threads} threads, piece {piece}: {:.3} CPU-s ({:.3} M/cpu-s), wall {:.3} s", c, total as f64 / c / 1e6, t0.elapsed().as_secs_f64());
        }
        return;
    }
    // Per chunk, old and new back to back (order alternating), each chunk's minimum over the rounds per
    // variant; the sums of the minima compared (preemptions by other processes drop out).
    let mut best = vec![[f64::MAX; 2]; chunks.len()];
    let mut tot = [0f64; 2];
    let mut sum = 0u64;
    let total: usize = chunks.iter().map(|c| c.2).sum();
    for r in 0..rounds {
        for (ci, &(b, n, p)) in chunks.iter().enumerate() {
            let bytes = &data[b..b + n];
            for j in 0..2 {
                let v = (j + r + ci) % 2;
                let f = &mut |piece: &[u8]| { for c in piece.chunks_exact(stride) { sum = sum.wrapping_add(c[0] as u64 + c[8] as u64); } };
                let c0 = cpu();
                if v == 0 {
                    if layered { lazo::decode_layered_chunk(bytes, lazo::layout_of(vlr.items()).unwrap(), p, sel, 1 << 14, &mut scratch, f).unwrap() }
                    else { lazo::decode_chunk(bytes, lazo::Items::of(vlr.items()).unwrap(), p, 1 << 14, &mut scratch, f).unwrap() }
                } else {
                    decode(bytes, p, 1 << 14, &mut scratch, f);
                }
                let t = cpu() - c0;
                best[ci][v] = best[ci][v].min(t);
                tot[v] += t;
            }
        }
    }
    let s0: f64 = best.iter().map(|b| b[0]).sum();
    let s1: f64 = best.iter().map(|b| b[1]).sum();
    println!("per-chunk minima over {rounds} rounds, {total} points: old {s0:.4} s ({:.3} M/cpu-s)  new {s1:.4} s ({:.3} M/cpu-s)  new/old {:.4}", total as f64 / s0 / 1e6, total as f64 / s1 / 1e6, s1 / s0);
    println!("means: old {:.4} s new {:.4} s ({:.3} M/cpu-s)", tot[0] / rounds as f64, tot[1] / rounds as f64, total as f64 * rounds as f64 / tot[1] / 1e6);
    println!("checksum {sum}");
}

#[derive(Default)]
struct Stage { pts: Vec<([f32; 3], [u8; 4])>, inten: Vec<f32>, cls: Vec<u8>, lo: [i32; 3], hi: [i32; 3], aux: u16 }
impl Stage { fn clear(&mut self) { self.pts.clear(); self.inten.clear(); self.cls.clear(); } }
fn convert(st: &mut Stage, src: &[u8], stride: usize) {
    #[target_feature(enable = "avx2")]
    unsafe fn go(st: &mut Stage, src: &[u8], stride: usize) {
        let (s, o, org) = ([0.01f64; 3], [637000.0f64, 849000.0, 0.0], [637500.0f64, 849500.0, 100.0]);
        let mut lo = st.lo; let mut hi = st.hi; let mut aux = st.aux;
        for rec in src.chunks_exact(stride) {
            let i = |at: usize| i32::from_le_bytes(rec[at..at + 4].try_into().unwrap());
            let xyz = [i(0), i(4), i(8)];
            for a in 0..3 { lo[a] = lo[a].min(xyz[a]); hi[a] = hi[a].max(xyz[a]); }
            let pos = [((xyz[0] as f64 * s[0] + o[0]) - org[0]) as f32, ((xyz[1] as f64 * s[1] + o[1]) - org[1]) as f32, ((xyz[2] as f64 * s[2] + o[2]) - org[2]) as f32];
            let c = &rec[28..34];
            let v = [u16::from_le_bytes([c[0], c[1]]), u16::from_le_bytes([c[2], c[3]]), u16::from_le_bytes([c[4], c[5]])];
            aux = aux.max(v[0]).max(v[1]).max(v[2]);
            st.pts.push((pos, [c[1], c[3], c[5], 255]));
            st.inten.push(u16::from_le_bytes([rec[12], rec[13]]) as f32);
            st.cls.push(rec[15] & 31);
        }
        st.lo = lo; st.hi = hi; st.aux = aux;
    }
    unsafe { go(st, src, stride) }
}
