//! What the examples share: the calling thread's CPU time.

/// The calling thread's CPU time so far, in seconds (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)` on Linux;
/// elsewhere, and if the call fails, 0, so that a figure built from it reads 0 rather than a wrong
/// number). CPU time, not wall time: a bench means something on a machine shared with other work.
pub fn thread_s() -> f64 {
    #[cfg(target_os = "linux")]
    {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime only writes into the struct we pass, which lives for the call.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0 {
            return t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9;
        }
        0.0
    }
    #[cfg(not(target_os = "linux"))]
    {
        0.0
    }
}
