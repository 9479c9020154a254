//! A correctly rounded `fmaf` for Windows builds made with MinGW-w64, whose own is not.
//!
//! How it works: `f32::mul_add` (the CPU twins' projection, `render::cpu::project`) compiles to one FMA
//! instruction where the code is built for FMA, and to a call to the C library's `fmaf` elsewhere: in
//! unoptimized builds, on CPUs without FMA, wherever a call is not inlined into the twins' AVX2 + FMA
//! loops. glibc's `fmaf` rounds once, as IEEE 754 and CUDA's `__fmaf_rn` do; MinGW-w64's (libmingwex,
//! linked statically into pcv.exe) does not: under wine, 29% of 10 million random calls differed from
//! the hardware instruction, and images of the Windows build differed from Linux's in ~0.2% of their
//! pixels. On `windows-gnu` this module exports `fmaf` itself; the linker takes it from pcv's objects
//! before it scans libmingwex, so every `mul_add` that becomes a call lands here.
//!
//! [`fmaf`] computes x·y exactly in f64 (24 + 24 significant bits fit in 53), adds z in f64, recovers
//! the addition's exact error (Knuth's TwoSum) and, when the sum was inexact and its last bit even,
//! moves it one f64 ulp towards the exact value: "round to odd", which makes the final rounding to f32
//! correct (53 ≥ 24 + 2 bits; for subnormal results as well). It is compiled on every system so that
//! the tests compare it with the CPU's FMA instruction everywhere.

/// x·y + z with one rounding to f32 (round to nearest, ties to even), as IEEE 754's fusedMultiplyAdd.
pub fn fmaf(x: f32, y: f32, z: f32) -> f32 {
    let (xy, zd) = (x as f64 * y as f64, z as f64); // both exact
    let sum = xy + zd;
    if !sum.is_finite() || sum == 0.0 {
        // Inf, NaN and exact zeros (with IEEE's sign rules, the same in f64) need no correction.
        return sum as f32;
    }
    // TwoSum: xy + zd == sum + err exactly.
    let zd_virtual = sum - xy;
    let xy_virtual = sum - zd_virtual;
    let err = (xy - xy_virtual) + (zd - zd_virtual);
    let bits = sum.to_bits();
    let odd = if err != 0.0 && bits & 1 == 0 {
        // One ulp away from zero when the exact value lies beyond `sum`, else one towards zero.
        if (err > 0.0) == (sum > 0.0) {
            f64::from_bits(bits + 1)
        } else {
            f64::from_bits(bits - 1)
        }
    } else {
        sum
    };
    odd as f32
}

/// The C library's `fmaf`, replaced in MinGW-w64 builds (see the module docs).
#[cfg(all(windows, target_env = "gnu"))]
#[export_name = "fmaf"]
pub extern "C" fn fmaf_for_mingw(x: f32, y: f32, z: f32) -> f32 {
    fmaf(x, y, z)
}

#[cfg(test)]
mod tests {
    use super::fmaf;

    /// Random f32 bit patterns in every range (subnormal, normal, huge, both signs; NaN and Inf too).
    fn patterns(n: usize, mut seed: u64) -> impl Iterator<Item = f32> {
        (0..n).map(move |_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            f32::from_bits((seed >> 16) as u32)
        })
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Values whose products and sums land near each other, so that cancellation, ties and subnormal
    /// results happen often (random bit patterns alone rarely make them).
    fn close_triples(n: usize, seed: u64) -> Vec<(f32, f32, f32)> {
        let v: Vec<f32> = patterns(3 * n, seed).collect();
        v.chunks(3)
            .map(|c| {
                let (x, y) = (
                    f32::from_bits(c[0].to_bits() & 0x807f_ffff | 0x3f00_0000),
                    if c[1].is_finite() { c[1].abs().clamp(0.25, 4.0) } else { 1.0 },
                );
                let z = -(x * y) * f32::from_bits(0x3f80_0000 ^ (c[2].to_bits() & 0xff)); // -x·y·(1 ± few ulps)
                let scale = f32::from_bits(((c[2].to_bits() >> 8) % 250 + 1) << 23); // 2^-126 .. 2^123
                (x * scale.sqrt(), y * scale.sqrt(), z * scale)
            })
            .collect()
    }

    /// x·y with 25 significant bits (often exactly halfway between two floats) plus a z far below it,
    /// which f64 loses: the cases where rounding twice goes wrong.
    fn tie_triples(n: usize, seed: u64) -> Vec<(f32, f32, f32)> {
        let v: Vec<f32> = patterns(3 * n, seed).collect();
        v.chunks(3)
            .map(|c| {
                let (a, b, r) = (c[0].to_bits(), c[1].to_bits(), c[2].to_bits());
                let x = f32::from_bits(0x3f80_0000 | (a & 0x007f_f800) | (a & 0x8000_0000)); // 13 bits
                let y = f32::from_bits(0x3f80_0000 | (b & 0x007f_f000)); // 12 bits
                let tiny = f32::from_bits(((r % 30 + 30) << 23) | (r >> 9 & 0x007f_ffff)); // 2^-97 .. 2^-68
                (x, y, if r & 1 == 0 { tiny } else { -tiny })
            })
            .collect()
    }

    #[test]
    fn exact_cases() {
        assert_eq!(fmaf(2.0, 3.0, 1.0), 7.0);
        assert_eq!(fmaf(0.1, 10.0, -1.0), (0.1f32 as f64 * 10.0 - 1.0) as f32);
        assert_eq!(fmaf(1.0, -1.0, 1.0).to_bits(), 0.0f32.to_bits()); // +0 in round to nearest
        assert_eq!(fmaf(-0.0, 1.0, -0.0).to_bits(), (-0.0f32).to_bits());
        assert!(fmaf(f32::INFINITY, 0.0, 1.0).is_nan());
        assert_eq!(fmaf(f32::MAX, 2.0, -f32::MAX), f32::MAX); // no overflow in the intermediate
        assert_eq!(fmaf(f32::MAX, 2.0, 0.0), f32::INFINITY);
        // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 lies halfway between two floats; a z of ±2^-80, lost when the
        // sum is rounded to f64, decides the side. Rounding twice (f64, then f32) would give 1 + 2^-11 both times.
        let x = 1.0 + 2f32.powi(-12);
        let (up, down) = (1.0 + 2f32.powi(-11) + 2f32.powi(-23), 1.0 + 2f32.powi(-11));
        assert_eq!(fmaf(x, x, 2f32.powi(-80)), up);
        assert_eq!(fmaf(x, x, -(2f32.powi(-80))), down);
        assert_eq!(((x as f64 * x as f64) + 2f64.powi(-80)) as f32, down, "the case needs the correction");
    }

    #[test]
    fn matches_the_cpus_fma_instruction() {
        #[cfg(target_arch = "x86_64")]
        {
            if !std::arch::is_x86_feature_detected!("fma") {
                eprintln!("SKIPPED: this CPU has no FMA instruction to compare with");
                return;
            }
            #[target_feature(enable = "fma")]
            unsafe fn hardware(x: f32, y: f32, z: f32) -> f32 {
                use std::arch::x86_64::*;
                _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(x), _mm_set_ss(y), _mm_set_ss(z)))
            }
            let random: Vec<f32> = patterns(3 * 400_000, 0x9e37_79b9_7f4a_7c15).collect();
            let triples = random
                .chunks(3)
                .map(|c| (c[0], c[1], c[2]))
                .chain(close_triples(400_000, 7))
                .chain(tie_triples(400_000, 3));
            let mut checked = 0;
            for (x, y, z) in triples {
                // SAFETY: the CPU has FMA (checked above), hardware's only requirement.
                let want = unsafe { hardware(x, y, z) };
                let got = fmaf(x, y, z);
                assert!(same(got, want), "fmaf({x:e}, {y:e}, {z:e}) = {got:e}, the FMA instruction gives {want:e}");
                // mul_add, here a call to the C library's fmaf (this function is not built for FMA): on
                // Linux glibc's, in MinGW builds the export above, not libmingwex's.
                let lib = x.mul_add(y, z);
                assert!(same(lib, want), "{x:e}.mul_add({y:e}, {z:e}) = {lib:e}, the FMA instruction gives {want:e}");
                checked += 1;
            }
            assert_eq!(checked, 1_200_000);
        }
    }

    #[test]
    fn matches_mul_add() {
        // On Linux f32::mul_add is the FMA instruction or glibc's exact fmaf: the same bits everywhere.
        for c in close_triples(200_000, 11).into_iter() {
            let (x, y, z) = c;
            assert!(same(fmaf(x, y, z), x.mul_add(y, z)), "fmaf({x:e}, {y:e}, {z:e})");
        }
    }
}
