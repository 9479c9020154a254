//! CPU time of this process or of the calling thread, for the benches' and `convert`'s timings: on a
//! machine shared with other work, wall time counts the other processes' time too.
//!
//! How it works: `clock_gettime` with `CLOCK_PROCESS_CPUTIME_ID` (user + system, all threads) or
//! `CLOCK_THREAD_CPUTIME_ID`, in nanoseconds, on Linux; elsewhere (and if the call fails) 0, so a
//! figure built from them reads 0 rather than a wrong number.

/// The process's CPU time so far (user + system, all threads), in nanoseconds (0 where unknown).
pub fn process_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The calling thread's CPU time so far, in nanoseconds (0 where unknown).
pub fn thread_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// [`process_ns`] in seconds.
pub fn process_s() -> f64 {
    process_ns() as f64 * 1e-9
}

/// [`thread_ns`] in seconds.
pub fn thread_s() -> f64 {
    thread_ns() as f64 * 1e-9
}

#[cfg(target_os = "linux")]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the struct we pass, which lives for the call.
    if unsafe { libc::clock_gettime(clock, &mut t) } == 0 {
        t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
    } else {
        0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// Work on this thread moves both clocks forward, by at least what the thread's own clock saw.
    #[test]
    fn the_clocks_count_this_threads_work() {
        let (p0, t0) = (super::process_ns(), super::thread_ns());
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        // The thread's clock read inside the process clock's window, which then spans it.
        let t1 = super::thread_ns();
        let p1 = super::process_ns();
        assert!(t1 > t0, "thread clock did not move ({t0} → {t1}, {x})");
        assert!(p1 - p0 >= t1 - t0, "process clock {} ns < thread clock {} ns", p1 - p0, t1 - t0);
    }
}
