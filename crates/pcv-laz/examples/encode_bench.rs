//! LAZ chunk encoder bench: pcv-laz's layered point-14 encoder ([`pcv_laz::encoder`])
//! against the `laz` crate's `LayeredPointRecordCompressor` on the chunks of a real LAZ or COPC file
//! (LAS 1.4 point format 6, 7 or 8, as `pcv convert … -o x.copc.laz` writes them).
//!
//! How it works: the file's first chunks (up to `--points`) are decompressed with `laz` into memory,
//! keeping each chunk's point count (a COPC file's chunks are its octree nodes); then each encoder
//! compresses the same chunks `--runs` times on one thread, and the best run's thread CPU time is
//! printed as nanoseconds a point (CPU time, not wall time: the bench means something on a machine
//! shared with other work). Every chunk's bytes from pcv-laz's encoder are checked against `laz`'s.
//!
//! Usage: cargo run --release -p pcv-laz --example encode_bench -- FILE.copc.laz [--points 3M] [--runs 3]
//! (`bench` encodes synthetic chunks, without a file.)
mod common;

use anyhow::{bail, Context, Result};
use pcv_laz::encoder::{encode_chunk, Layout};
use std::io::{Read, Seek, SeekFrom};

/// The LASzip VLR, the chunks' point counts (up to `max` points) and their records.
fn read_chunks(path: &str, max: u64) -> Result<(laz::LazVlr, Vec<usize>, Vec<u8>)> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {path}"))?;
    let mut h = vec![0u8; 375];
    f.read_exact(&mut h).with_context(|| format!("{path}: reading the LAS header"))?;
    let u16_at = |o: usize| u16::from_le_bytes([h[o], h[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let (header_len, data_at, vlrs) = (u16_at(94) as u64, u32_at(96) as u64, u32_at(100));
    let record_len = u16_at(105) as usize;
    f.seek(SeekFrom::Start(header_len))?;
    let mut vlr = None;
    for _ in 0..vlrs {
        let mut vh = [0u8; 54];
        f.read_exact(&mut vh).with_context(|| format!("{path}: reading a VLR header"))?;
        let mut body = vec![0u8; u16::from_le_bytes([vh[20], vh[21]]) as usize];
        f.read_exact(&mut body).with_context(|| format!("{path}: reading a VLR"))?;
        if &vh[2..16] == b"laszip encoded" {
            vlr = Some(laz::LazVlr::read_from(&body[..]).with_context(|| format!("{path}: the LASzip VLR"))?);
        }
    }
    let Some(vlr) = vlr else { bail!("{path}: no LASzip VLR (not a LAZ file)") };
    f.seek(SeekFrom::Start(data_at))?;
    let table = laz::laszip::ChunkTable::read_from(&mut f, &vlr).with_context(|| format!("{path}: the chunk table"))?;
    let mut counts = Vec::new();
    let mut total = 0u64;
    for e in table.as_ref() {
        if total >= max {
            break;
        }
        counts.push(e.point_count as usize);
        total += e.point_count;
    }
    f.seek(SeekFrom::Start(data_at))?;
    let mut d = laz::LasZipDecompressor::new(std::io::BufReader::new(f), vlr.clone())
        .with_context(|| format!("{path}: LAZ"))?;
    let mut recs = vec![0u8; total as usize * record_len];
    d.decompress_many(&mut recs).with_context(|| format!("{path}: decompressing {total} points"))?;
    Ok((vlr, counts, recs))
}

/// A count with an optional k or M suffix.
fn count(s: &str) -> Result<u64> {
    let (digits, unit) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000.0),
        Some('m' | 'M') => (&s[..s.len() - 1], 1_000_000.0),
        _ => (s, 1.0),
    };
    Ok((digits.parse::<f64>().with_context(|| format!("not a count: {s}"))? * unit) as u64)
}

fn laz_chunk(items: &[laz::LazItem], recs: &[u8]) -> Result<Vec<u8>> {
    use laz::record::{LayeredPointRecordCompressor, RecordCompressor};
    let mut c = LayeredPointRecordCompressor::new(std::io::Cursor::new(Vec::new()));
    c.set_fields_from(&items.to_vec())?;
    c.compress_many(recs)?;
    c.done()?;
    Ok(c.into_inner().into_inner())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut file, mut points, mut runs) = (None, 3_000_000u64, 3usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--points" => points = count(it.next().context("--points N")?)?,
            "--runs" => runs = it.next().context("--runs N")?.parse()?,
            f if !f.starts_with('-') => file = Some(f.to_string()),
            other => bail!("unknown argument {other}"),
        }
    }
    let Some(file) = file else { bail!("usage: encode_bench FILE.copc.laz [--points 3M] [--runs 3]") };
    let (vlr, counts, recs) = read_chunks(&file, points)?;
    let Some(layout) = Layout::of(vlr.items()) else { bail!("{file}: an item set pcv-laz's encoder does not cover") };
    let len = layout.record_len();
    let n = recs.len() / len;
    println!("{file}: {n} points in {} chunks, {len}-byte records", counts.len());
    let mut chunks_v: Vec<&[u8]> = Vec::with_capacity(counts.len());
    let mut at = 0;
    for &c in &counts {
        chunks_v.push(&recs[at..at + c * len]);
        at += c * len;
    }
    let chunks = || chunks_v.iter().copied();
    let mut same = true;
    for c in chunks() {
        same &= encode_chunk(layout, c) == laz_chunk(vlr.items(), c)?;
    }
    println!("pcv-laz's bytes {} laz's", if same { "are" } else { "DIFFER from" });
    for name in ["pcv-laz", "laz"] {
        let mut best = f64::MAX;
        let mut bytes = 0;
        for _ in 0..runs {
            let t = common::thread_s();
            bytes = 0;
            for c in chunks() {
                bytes +=
                    if name == "pcv-laz" { encode_chunk(layout, c).len() } else { laz_chunk(vlr.items(), c)?.len() };
            }
            best = best.min(common::thread_s() - t);
        }
        println!(
            "{name}: {:.1} ns a point ({:.2} M points per CPU-s), {bytes} bytes",
            best * 1e9 / n as f64,
            n as f64 / best * 1e-6
        );
    }
    if !same {
        bail!("pcv-laz's encoder and laz wrote different bytes");
    }
    Ok(())
}
