//! Fuzzes the COPC reader (header, info VLR, hierarchy pages, every node's LAZ chunk) with arbitrary
//! bytes: it must open and read the file or return an error, never panic, never allocate out of
//! proportion with its input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pcv_io::formats::copc::read_all_nodes(data.to_vec());
});
