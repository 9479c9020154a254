// Micro-benchmark: one arithmetic-decoding dependency chain vs two interleaved.
#[path = "/work/wt-laz/src/cloud/formats/laz/arith.rs"]
#[allow(dead_code)]
mod arith;
use arith::{decode_pair, Decoder, IntDecoder, Model};
use laz::compressors::IntegerCompressorBuilder;
use laz::encoders::ArithmeticEncoder;
use laz::models::ArithmeticModel;

fn cpu() -> f64 { let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 }; unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) }; t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9 }

thread_local! { static REAL: Vec<i32> = real(); }
/// x differences of consecutive points of PCV_MICRO_LAS (a LAS file), else none.
fn real() -> Vec<i32> {
    let Ok(p) = std::env::var("PCV_MICRO_LAS") else { return vec![] };
    let d = std::fs::read(p).unwrap();
    let off = u32::from_le_bytes(d[96..100].try_into().unwrap()) as usize;
    let stride = u16::from_le_bytes([d[105], d[106]]) as usize;
    let xs: Vec<i32> = d[off..].chunks_exact(stride).map(|r| i32::from_le_bytes(r[0..4].try_into().unwrap())).collect();
    xs.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect()
}
struct Rng(u64);
impl Rng { fn next(&mut self) -> u32 { self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (self.0 >> 32) as u32 } }

fn ints(seed: u64, n: usize) -> Vec<u8> {
    let mut r = Rng(seed);
    let real = REAL.with(|v| v.clone());
    let mut enc = ArithmeticEncoder::new(std::io::Cursor::new(Vec::new()));
    let mut ic = IntegerCompressorBuilder::new().bits(32).contexts(2).build_initialized();
    for _ in 0..n {
        let v = if real.is_empty() {
            let s = r.next() % 12;
            (r.next() & ((1u32 << s) - 1)) as i32 - (1i32 << s) / 2
        } else { real[(r.next() as usize) % real.len()] };
        ic.compress(&mut enc, 0, v, 0).unwrap();
    }
    enc.done().unwrap();
    enc.into_inner().into_inner()
}

fn syms(seed: u64, n: usize) -> Vec<u8> {
    let mut r = Rng(seed);
    let mut enc = ArithmeticEncoder::new(std::io::Cursor::new(Vec::new()));
    let mut m = ArithmeticModel::new(256, true, &[]);
    for _ in 0..n {
        // Geometric-ish: a handful of common symbols and a long tail.
        let s = (r.next() % 256).min(r.next() % 256).min(r.next() % 256) ;
        enc.encode_symbol(&mut m, s).unwrap();
    }
    enc.done().unwrap();
    enc.into_inner().into_inner()
}

fn main() {
    let n = 2_000_000usize;
    let (ia, ib) = (ints(1, n), ints(2, n));
    let (sa, sb) = (syms(3, n), syms(4, n));
    let rounds: usize = std::env::args().nth(1).map_or(5, |s| s.parse().unwrap());
    let mut res: Vec<(&str, Vec<f64>)> = vec![("int seq", vec![]), ("int inter", vec![]), ("int pair", vec![]), ("sym seq", vec![]), ("sym inter", vec![])];
    let mut sum = 0i64;
    for _ in 0..rounds {
        // ints, sequential
        let c = cpu();
        for s in [&ia, &ib] {
            let mut d = Decoder::new(s, 0);
            let mut ic = IntDecoder::new(32, 2);
            for _ in 0..n { sum += ic.decode(&mut d, 0, 0) as i64; }
            assert!(!d.bad);
        }
        res[0].1.push(cpu() - c);
        let c = cpu();
        {
            let (mut da, mut db) = (Decoder::new(&ia, 0), Decoder::new(&ib, 0));
            let (mut ca, mut cb) = (IntDecoder::new(32, 2), IntDecoder::new(32, 2));
            for _ in 0..n { sum += ca.decode(&mut da, 0, 0) as i64; sum += cb.decode(&mut db, 0, 0) as i64; }
            assert!(!da.bad && !db.bad);
        }
        res[1].1.push(cpu() - c);
        let c = cpu();
        {
            let (mut da, mut db) = (Decoder::new(&ia, 0), Decoder::new(&ib, 0));
            let (mut ca, mut cb) = (IntDecoder::new(32, 2), IntDecoder::new(32, 2));
            for _ in 0..n { let (a, b) = decode_pair((&mut ca, &mut da, 0, 0), (&mut cb, &mut db, 0, 0)); sum += a as i64 + b as i64; }
            assert!(!da.bad && !db.bad);
        }
        res[2].1.push(cpu() - c);
        let c = cpu();
        for s in [&sa, &sb] {
            let mut d = Decoder::new(s, 0);
            let mut m = Model::new(256);
            for _ in 0..n { sum += d.symbol(&mut m) as i64; }
            assert!(!d.bad);
        }
        res[3].1.push(cpu() - c);
        let c = cpu();
        {
            let (mut da, mut db) = (Decoder::new(&sa, 0), Decoder::new(&sb, 0));
            let (mut ma, mut mb) = (Model::new(256), Model::new(256));
            for _ in 0..n { sum += da.symbol(&mut ma) as i64; sum += db.symbol(&mut mb) as i64; }
            assert!(!da.bad && !db.bad);
        }
        res[4].1.push(cpu() - c);
    }
    for (name, v) in &mut res {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("{name:10} min {:.4} s  median {:.4} s  ({:.1} ns per value/symbol, min)", v[0], v[v.len() / 2], v[0] / (2 * n) as f64 * 1e9);
    }
    println!("int pair/seq {:.2}x", res[0].1[0] / res[2].1[0]);
    println!("int: inter/seq speedup min {:.2}x; sym: {:.2}x  (checksum {sum})", res[0].1[0] / res[1].1[0], res[3].1[0] / res[4].1[0]);
}
