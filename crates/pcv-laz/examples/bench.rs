//! pcv-laz against the `laz` crate: decoding (and, for the layered formats, encoding) the same LAZ
//! chunks with both, on one thread, and the rates and their ratio.
//!
//! How it works: without a file, each point format 0–3 and 6–8 gets `--points` synthetic lidar-like
//! records (scan lines of pulses of 1–4 returns sharing a GPS time, smooth terrain, a few classes,
//! smooth 8-bit colours stored × 257), compressed by `laz` (`LasZipCompressor`, chunks of 50 000 points,
//! LASzip's default) in memory. With `--file F.laz` the file's first chunks (up to `--points`) are used
//! instead. Every chunk is then decoded by [`pcv_laz::decode_chunk`] and [`pcv_laz::decode_chunk_with_laz`]
//! `--runs` times, and the best run's thread CPU time gives points per CPU-second (CPU time, not wall
//! time: the figures mean something on a machine shared with other work). The records are checked to
//! be the same bytes. For formats 6–8 the decoded records are also encoded again chunk by chunk by
//! [`pcv_laz::encoder::encode_chunk`] and by `laz`'s `LayeredPointRecordCompressor`, checked to be the
//! same bytes, and timed the same way. Synthetic data is not real data: real files' figures differ
//! (pcv's results/ has measured ones).
//!
//! Usage: cargo run --release -p pcv-laz --example bench -- [--points 1M] [--runs 3] [--file F.laz]
mod common;

use anyhow::{bail, Context, Result};
use pcv_laz::laz;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io::Cursor;

/// One chunk: where its bytes are in the point data and how many points it holds.
#[derive(Clone, Copy)]
struct Chunk {
    byte: usize,
    bytes: usize,
    points: usize,
}

/// Compressed chunks and what they hold.
struct Set {
    name: String,
    vlr: laz::LazVlr,
    data: Vec<u8>,
    chunks: Vec<Chunk>,
}

/// `n` lidar-like records of point format `format`.
fn records(format: u8, n: usize, seed: u64) -> Vec<u8> {
    let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, 0).expect("a point format");
    let len: usize = items.iter().map(|i| i.size() as usize).sum();
    let mut r = StdRng::seed_from_u64(seed);
    let mut out = vec![0u8; n * len];
    let (mut x, mut y, mut line) = (0i32, 0i32, 0u16);
    let (mut ret, mut returns) = (1u8, 1u8);
    let mut gps = 3.0e8 + r.random_range(0.0..1.0f64);
    let mut rgb = [90.0f64, 120.0, 80.0];
    for (i, rec) in out.chunks_exact_mut(len).enumerate() {
        if ret >= returns {
            // A new pulse: along the scan line, a new line every 500 pulses.
            (ret, returns) = (1, if r.random_bool(0.7) { 1 } else { r.random_range(2..=4) });
            gps += 1.0e-5;
            x += 25 + r.random_range(-3..=3);
            if i % 500 == 0 {
                (x, y, line) = (r.random_range(-50..50), y + 30, line + 1);
            }
        } else {
            ret += 1;
        }
        let ground = ((x as f64 * 0.001).sin() * 800.0 + (y as f64 * 0.0007).cos() * 500.0) as i32;
        let z = ground + if ret < returns { r.random_range(200..2500) } else { r.random_range(-4..=4) };
        let class: u8 = if ret < returns { [1, 5, 5, 6][r.random_range(0..4)] } else { 2 };
        let intensity: u16 = if ret < returns { r.random_range(200..900) } else { r.random_range(900..1400) };
        for (c, v) in rgb.iter_mut().enumerate() {
            *v = (*v + r.random_range(-2.0..2.0) + if class == 2 { 0.3 } else { -0.3 } * c as f64).clamp(0.0, 255.0);
        }
        let rgb16 = rgb.map(|v| v as u16 * 257);
        rec[0..4].copy_from_slice(&x.to_le_bytes());
        rec[4..8].copy_from_slice(&(y + r.random_range(-2..=2)).to_le_bytes());
        rec[8..12].copy_from_slice(&z.to_le_bytes());
        rec[12..14].copy_from_slice(&intensity.to_le_bytes());
        let angle = ((x % 2000) / 200 - 5) as i8;
        let rgb_at = if format >= 6 {
            rec[14] = ret | returns << 4;
            rec[15] = (line as u8 & 1) << 6;
            rec[16] = class;
            rec[18..20].copy_from_slice(&(angle as i16 * 166).to_le_bytes());
            rec[20..22].copy_from_slice(&line.to_le_bytes());
            rec[22..30].copy_from_slice(&gps.to_le_bytes());
            30
        } else {
            rec[14] = ret | returns << 3 | (line as u8 & 1) << 6;
            rec[15] = class;
            rec[16] = angle as u8;
            rec[18..20].copy_from_slice(&line.to_le_bytes());
            if format == 1 || format == 3 {
                rec[20..28].copy_from_slice(&gps.to_le_bytes());
            }
            if format == 3 {
                28
            } else {
                20
            }
        };
        if matches!(format, 2 | 3 | 7 | 8) {
            for (k, c) in rgb16.iter().enumerate() {
                rec[rgb_at + 2 * k..rgb_at + 2 * k + 2].copy_from_slice(&c.to_le_bytes());
            }
        }
        if format == 8 {
            rec[36..38].copy_from_slice(&(rgb16[1] / 2 + intensity).to_le_bytes());
        }
    }
    out
}

/// `recs` of point format `format` compressed by `laz` in chunks of 50 000 points.
fn compress(format: u8, recs: &[u8]) -> Result<Set> {
    let items = laz::LazItemRecordBuilder::default_for_point_format_id(format, 0)?;
    let vlr = laz::LazVlrBuilder::new(items).with_fixed_chunk_size(50_000).build();
    let mut c = laz::LasZipCompressor::new(Cursor::new(Vec::new()), vlr.clone())?;
    c.compress_many(recs)?;
    c.done()?;
    let data = c.into_inner().into_inner();
    let table = laz::laszip::ChunkTable::read_from(Cursor::new(&data[..]), &vlr)?;
    let mut left = recs.len() / vlr.items_size() as usize;
    let (mut chunks, mut byte) = (Vec::new(), 8);
    for e in table.as_ref() {
        let points = (e.point_count as usize).min(left);
        chunks.push(Chunk { byte, bytes: e.byte_count as usize, points });
        byte += e.byte_count as usize;
        left -= points;
    }
    Ok(Set { name: format!("synthetic format {format}"), vlr, data, chunks })
}

/// A LAZ file's first chunks, up to `max` points: its LASzip VLR, point data and chunk table.
fn read_file(path: &str, max: usize) -> Result<Set> {
    let file = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    if file.len() < 227 || &file[..4] != b"LASF" {
        bail!("{path}: not a LAS file");
    }
    let u16_at = |o: usize| u16::from_le_bytes([file[o], file[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([file[o], file[o + 1], file[o + 2], file[o + 3]]);
    let (header_len, data_at, vlrs) = (u16_at(94) as usize, u32_at(96) as usize, u32_at(100));
    let count = if file[25] >= 4 && header_len >= 375 {
        u64::from_le_bytes(file[247..255].try_into()?)
    } else {
        u32_at(107) as u64
    };
    let (mut at, mut vlr) = (header_len, None);
    for _ in 0..vlrs {
        let len = u16_at(at + 20) as usize;
        if &file[at + 2..at + 16] == b"laszip encoded" {
            vlr = Some(laz::LazVlr::from_buffer(&file[at + 54..at + 54 + len])?);
        }
        at += 54 + len;
    }
    let Some(vlr) = vlr else { bail!("{path}: no LASzip VLR (not a LAZ file)") };
    let mut cursor = Cursor::new(&file[..]);
    cursor.set_position(data_at as u64);
    let table = laz::laszip::ChunkTable::read_from(&mut cursor, &vlr).context("the chunk table")?;
    let entries = table.as_ref();
    let (mut chunks, mut byte, mut left, mut total) = (Vec::new(), 8, count as usize, 0);
    for (k, e) in entries.iter().enumerate() {
        let points =
            if vlr.uses_variable_size_chunks() || k + 1 < entries.len() { e.point_count as usize } else { left };
        if total >= max || points > left {
            break;
        }
        chunks.push(Chunk { byte, bytes: e.byte_count as usize, points });
        (byte, left, total) = (byte + e.byte_count as usize, left - points, total + points);
    }
    let data = file[data_at..data_at + byte].to_vec();
    Ok(Set { name: path.to_string(), vlr, data, chunks })
}

/// The best of `runs` thread CPU times of `f`, and its last result.
fn best<T>(runs: usize, mut f: impl FnMut() -> Result<T>) -> Result<(f64, T)> {
    let mut out = None;
    let mut best = f64::MAX;
    for _ in 0..runs.max(1) {
        let t = common::thread_s();
        let r = f()?;
        best = best.min(common::thread_s() - t);
        out = Some(r);
    }
    Ok((best, out.expect("one run")))
}

/// Decodes every chunk of `set` with pcv-laz (`fast`) or `laz`, into one buffer.
fn decode(set: &Set, fast: bool, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let mut scratch = Vec::new();
    let sel = laz::DecompressionSelection::all();
    for c in &set.chunks {
        let bytes = &set.data[c.byte..c.byte + c.bytes];
        let mut piece = |p: &[u8]| out.extend_from_slice(p);
        let items = set.vlr.items();
        if fast {
            pcv_laz::decode_chunk(items, bytes, c.points, sel, 2048, &mut scratch, &mut piece)?;
        } else {
            pcv_laz::decode_chunk_with_laz(items, bytes, c.points, sel, 2048, &mut scratch, &mut piece)?;
        }
    }
    Ok(())
}

/// `laz`'s layered chunk of `recs`.
fn laz_encode(items: &[laz::LazItem], recs: &[u8]) -> Result<Vec<u8>> {
    use laz::record::{LayeredPointRecordCompressor, RecordCompressor};
    let mut c = LayeredPointRecordCompressor::new(Cursor::new(Vec::new()));
    c.set_fields_from(&items.to_vec())?;
    c.compress_many(recs)?;
    c.done()?;
    Ok(c.into_inner().into_inner())
}

fn rate(points: usize, s: f64) -> f64 {
    points as f64 / s * 1e-6
}

fn run(set: &Set, runs: usize) -> Result<()> {
    let len = set.vlr.items_size() as usize;
    let points: usize = set.chunks.iter().map(|c| c.points).sum();
    let covered = if pcv_laz::covers(set.vlr.items()) { "pcv-laz's decoder" } else { "not covered: laz" };
    println!(
        "{}: {points} points in {} chunks, {len}-byte records, {:.2} bytes a point compressed ({covered})",
        set.name,
        set.chunks.len(),
        set.chunks.iter().map(|c| c.bytes).sum::<usize>() as f64 / points as f64,
    );
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let (t_laz, _) = best(runs, || decode(set, false, &mut theirs))?;
    let (t_fast, _) = best(runs, || decode(set, true, &mut mine))?;
    let same = mine == theirs && mine.len() == points * len;
    println!(
        "  decode: pcv-laz {:6.2} M points/CPU-s, laz {:6.2}: {:.2}× ({})",
        rate(points, t_fast),
        rate(points, t_laz),
        t_laz / t_fast,
        if same { "the same records" } else { "RECORDS DIFFER" }
    );
    if !same {
        bail!("{}: pcv-laz and laz decoded different records", set.name);
    }
    if let Some(layout) = pcv_laz::encoder::Layout::of(set.vlr.items()) {
        let mut parts = Vec::with_capacity(set.chunks.len());
        let mut at = 0;
        for c in &set.chunks {
            parts.push(&mine[at..at + c.points * len]);
            at += c.points * len;
        }
        let (t_laz, laz_chunks) =
            best(runs, || parts.iter().map(|p| laz_encode(set.vlr.items(), p)).collect::<Result<Vec<_>>>())?;
        let (t_fast, chunks) =
            best(runs, || Ok(parts.iter().map(|p| pcv_laz::encoder::encode_chunk(layout, p)).collect::<Vec<_>>()))?;
        let same = chunks == laz_chunks;
        println!(
            "  encode: pcv-laz {:6.2} M points/CPU-s, laz {:6.2}: {:.2}× ({})",
            rate(points, t_fast),
            rate(points, t_laz),
            t_laz / t_fast,
            if same { "the same bytes" } else { "BYTES DIFFER" }
        );
        if !same {
            bail!("{}: pcv-laz's encoder and laz wrote different bytes", set.name);
        }
    }
    Ok(())
}

/// A count with an optional k or M suffix.
fn count(s: &str) -> Result<usize> {
    let (digits, unit) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000.0),
        Some('m' | 'M') => (&s[..s.len() - 1], 1_000_000.0),
        _ => (s, 1.0),
    };
    Ok((digits.parse::<f64>().with_context(|| format!("not a count: {s}"))? * unit) as usize)
}

fn main() -> Result<()> {
    let (mut points, mut runs, mut file) = (1_000_000usize, 3usize, None);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--points" => points = count(it.next().context("--points N")?)?,
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            "--file" => file = Some(it.next().context("--file F.laz")?.clone()),
            other => bail!("unknown argument {other} (usage: bench [--points 1M] [--runs 3] [--file F.laz])"),
        }
    }
    println!("one thread, best of {runs} runs, thread CPU time");
    if let Some(f) = file {
        return run(&read_file(&f, points)?, runs);
    }
    for format in [0u8, 1, 2, 3, 6, 7, 8] {
        run(&compress(format, &records(format, points, 7 + format as u64))?, runs)?;
    }
    Ok(())
}
