//! Fuzzes the E57 decoder with arbitrary bytes: it must return points or an error, never panic, and
//! never allocate out of proportion with its input (libFuzzer's -rss_limit_mb / -malloc_limit_mb).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pcv_io::formats::{Format, Progress, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let progress = Progress::hidden();
    let opts = ReadOptions { origin: Default::default(), progress: &progress };
    let _ = pcv_io::load::decode_bytes(data, Format::E57, false, &opts);
    // The same bytes with the page checksums made right, to reach the XML and point parsers.
    let fixed = pcv_io::formats::e57::with_valid_checksums(data);
    let _ = pcv_io::load::decode_bytes(&fixed, Format::E57, false, &opts);
});
