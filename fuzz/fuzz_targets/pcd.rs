//! Fuzzes the Pcd decoder with arbitrary bytes: it must return points or an error, never panic, and
//! never allocate out of proportion with its input (libFuzzer's -rss_limit_mb / -malloc_limit_mb).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pcv_io::formats::{Format, Progress, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let progress = Progress::hidden();
    let opts = ReadOptions { origin: Default::default(), progress: &progress };
    let _ = pcv_io::load::decode_bytes(data, Format::Pcd, false, &opts);
});
