//! Large CPU-backend buffers backed by 2 MiB pages where the OS allows it.
//!
//! How it works: a frame's draw writes words at scattered pixels of 16.6 MB buffers (one per thread at
//! 1920 × 1080) and its resolve reads colors at scattered points of a 40 MB array; with 4 KiB pages the
//! second-level TLB covers only a few MB of that, so many of those accesses also walk page tables.
//! Linux backs an anonymous range with 2 MiB pages on first touch when it is marked `MADV_HUGEPAGE`
//! (transparent huge pages in `madvise` mode, the common default; in `always` mode it already does,
//! in `never` mode the advice changes nothing). So [`with_capacity`] reserves the vector, advises the
//! 2 MiB-aligned part of its memory before anything touches it, and the caller fills it
//! (`resize`, `extend`, `collect_into_vec`: [`filled`] and [`collect`] do). The advice is only a hint: if it fails nothing changes,
//! and the contents are the same either way. `PCV_CPU_HUGE=0` turns it off (for comparisons).

/// Buffers smaller than this are left alone (under two huge pages gain little).
const MIN_BYTES: usize = 4 << 20;
/// The huge page size advised for (x86-64 and aarch64 Linux with 4 KiB base pages).
#[cfg(target_os = "linux")]
const HUGE_BYTES: usize = 2 << 20;

/// Whether buffers are advised (unless `PCV_CPU_HUGE=0`; asked once).
pub fn wanted() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("PCV_CPU_HUGE").is_none_or(|v| v != "0"))
}

/// An empty vector with room for `len` elements, its memory advised for huge pages (see the module
/// doc); fill it before reading.
pub fn with_capacity<T>(len: usize) -> Vec<T> {
    let mut v = Vec::<T>::with_capacity(len);
    advise(v.as_mut_ptr().cast(), v.capacity() * std::mem::size_of::<T>());
    v
}

/// The items of `items`, in order, in memory advised for huge pages (rayon's `collect_into_vec` writes
/// them into the reserved room).
pub fn collect<T: Send>(items: impl rayon::iter::IndexedParallelIterator<Item = T>) -> Vec<T> {
    let mut v = with_capacity(items.len());
    items.collect_into_vec(&mut v);
    v
}

/// `len` copies of `value` in memory advised for huge pages.
pub fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(len);
    v.resize(len, value);
    v
}

/// Marks the whole 2 MiB pages inside `bytes` bytes from `start` `MADV_HUGEPAGE` (nothing touched yet).
fn advise(start: *mut u8, bytes: usize) {
    if bytes < MIN_BYTES || !wanted() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let from = (start as usize).next_multiple_of(HUGE_BYTES);
        let to = (start as usize + bytes) / HUGE_BYTES * HUGE_BYTES;
        if to > from {
            // SAFETY: [from, to) lies inside the vector's own allocation (its capacity); madvise with
            // MADV_HUGEPAGE changes how the kernel backs those pages, never their contents, and its
            // failure (an old kernel, THP compiled out) is harmless, so its result is ignored.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = start;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advised_vectors_hold_what_they_were_given() {
        let v = filled(3 << 20, 7u64);
        assert_eq!(v.len(), 3 << 20);
        assert!(v.iter().all(|&x| x == 7));
        let mut w: Vec<u32> = with_capacity(5 << 20);
        assert!(w.capacity() >= 5 << 20 && w.is_empty());
        w.extend((0..5u32 << 20).map(|i| i ^ 0x5a5a));
        assert!(w.iter().enumerate().all(|(i, &x)| x == i as u32 ^ 0x5a5a));
        use rayon::prelude::*;
        let c = collect((0..5u32 << 20).into_par_iter().map(|i| i.wrapping_mul(2_654_435_761)));
        assert!(c.len() == 5 << 20 && c.iter().enumerate().all(|(i, &x)| x == (i as u32).wrapping_mul(2_654_435_761)));
        let small = filled(10, 1u8);
        assert_eq!(small, vec![1u8; 10]);
    }

    /// Where the kernel honours the advice (THP in `madvise` or `always` mode), a large advised
    /// buffer ends up at least partly in huge pages once touched.
    #[cfg(target_os = "linux")]
    #[test]
    fn advised_buffers_get_huge_pages_where_the_kernel_gives_them() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        let defrag = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/defrag").unwrap_or_default();
        // Without direct compaction for advised ranges a fault takes a huge page only if one is free.
        let compacts =
            defrag.contains("[madvise]") || defrag.contains("[always]") || defrag.contains("[defer+madvise]");
        if !(mode.contains("[madvise]") || mode.contains("[always]")) || !compacts || !wanted() {
            println!("skipped: transparent huge pages '{}', defrag '{}' here", mode.trim(), defrag.trim());
            return;
        }
        let anon_huge = || -> u64 {
            let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
            s.lines()
                .find(|l| l.starts_with("AnonHugePages:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
                .unwrap_or(0)
        };
        let before = anon_huge();
        let v = filled(64 << 20, 1u8);
        let after = anon_huge();
        assert_eq!(v[12345], 1);
        println!("AnonHugePages {before} kB -> {after} kB after a 64 MiB advised buffer");
        // The kernel may lack free huge pages at the moment: require some, not all.
        assert!(after > before, "no huge page for a 64 MiB advised buffer ({before} -> {after} kB)");
    }
}
