//! The raster twins' inner loops compiled for AVX2 and FMA where the CPU has them.
//!
//! How it works: the projection's rows are fused multiply-adds (`f32::mul_add`, exact by IEEE 754, so
//! the CPU computes the GPU's bits). Built for baseline x86-64, `mul_add` is a call to libm's `fmaf`:
//! right but slow. [`with_fma!`] defines a function whose body is compiled twice — as is, and inside a
//! `#[target_feature(enable = "avx2,fma")]` wrapper, where `mul_add` is one instruction and the loops
//! vectorize 8 wide — and calls the second when the CPU has both features ([`has_avx2_fma`], asked
//! once). Both compute the same bits; only the speed differs. Loops run per chunk of points (tens of
//! thousands), so the dispatch costs nothing.

/// Whether this CPU has AVX2 and FMA (asked once).
pub fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `fn name(args) -> ret { body }` (or `fn name<T: Bound>(...)`) so that the body runs compiled with AVX2 and FMA on CPUs
/// that have them ([`has_avx2_fma`]), and as plain x86-64 (or any other target's) code elsewhere.
macro_rules! with_fma {
    ($(#[$meta:meta])* $vis:vis fn $name:ident $(<$($gen:ident: $bound:path),*>)? ($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name $(<$($gen: $bound),*>)? ($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body $(<$($gen: $bound),*>)? ($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn fast $(<$($gen: $bound),*>)? ($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::simd::has_avx2_fma() {
                // SAFETY: this CPU has AVX2 and FMA (asked at run time just above), the only
                // requirement of calling a `target_feature` function.
                return unsafe { fast($($arg),*) };
            }
            body($($arg),*)
        }
    };
}
pub(crate) use with_fma;

/// [`with_fma!`] for AVX-512: the body runs compiled with AVX-512 F, BW, DQ and VL (and AVX2, FMA) on
/// CPUs that have them ([`super::scatter::has_avx512`]), else with AVX2 and FMA where the CPU has
/// those, else as plain code. For loops over 64-bit words (`vpminuq` has no narrower twin).
macro_rules! with_avx512 {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
            unsafe fn wide($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn fast($($arg: $ty),*) $(-> $ret)? {
                body($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::cpu::scatter::has_avx512() {
                // SAFETY: this CPU has every feature `wide` is compiled with (asked at run time).
                return unsafe { wide($($arg),*) };
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::simd::has_avx2_fma() {
                // SAFETY: this CPU has AVX2 and FMA (asked at run time).
                return unsafe { fast($($arg),*) };
            }
            body($($arg),*)
        }
    };
}
pub(crate) use with_avx512;

#[cfg(test)]
mod tests {
    with_fma! {
        fn fma_sum(a: &[f32], b: &[f32]) -> f32 {
            a.iter().zip(b).fold(0.0f32, |s, (&x, &y)| x.mul_add(y, s))
        }
    }

    #[test]
    fn both_versions_compute_the_same_bits() {
        let a: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin() * 1e3).collect();
        let b: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
        let plain = a.iter().zip(&b).fold(0.0f32, |s, (&x, &y)| x.mul_add(y, s));
        assert_eq!(fma_sum(&a, &b).to_bits(), plain.to_bits());
    }
}
