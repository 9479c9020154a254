//! Fuzzes the virtual point cloud reader (`.vpc`: a STAC ItemCollection naming tiles) with arbitrary
//! bytes: it must list the tiles or return an error naming the collection, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pcv_io::collection::parse_vpc(&String::from_utf8_lossy(data), "fuzz.vpc");
});
