//! Counter-based random numbers: the built-in scene's, the CPU twin of `kernels/rng.cuh`.
//!
//! Value `k` of point `i` depends only on `(seed, i, k)`: any thread, CPU or GPU, makes any point, and
//! both make the same bits. `sincos_2pi` avoids the platform's libm (whose last bits differ between
//! CPU and GPU) with plain multiplies and adds in the kernel's order.

/// SplitMix64's finalizer: a bijective 64-bit mix.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Uniform float in [0, 1) with 24 random bits.
#[inline(always)]
pub fn uniform(seed: u64, i: u64, k: u32) -> f32 {
    let h = mix64(mix64(seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(i.wrapping_mul(8)).wrapping_add(k as u64));
    ((h >> 40) as u32) as f32 * (1.0 / 16_777_216.0)
}

/// (sin, cos) of 2πu for u in [0, 1): quadrant from 4u, Taylor polynomials on [0, π/2).
#[inline(always)]
pub fn sincos_2pi(u: f32) -> (f32, f32) {
    let t = u * 4.0;
    let qf = t.floor();
    let q = qf as i32;
    let x = (t + -qf) * std::f32::consts::FRAC_PI_2;
    let x2 = x * x;
    let mut ps = 1.0 + -(x2 * (1.0 / 110.0));
    ps = 1.0 + -((x2 * (1.0 / 72.0)) * ps);
    ps = 1.0 + -((x2 * (1.0 / 42.0)) * ps);
    ps = 1.0 + -((x2 * (1.0 / 20.0)) * ps);
    ps = 1.0 + -((x2 * (1.0 / 6.0)) * ps);
    let sn = x * ps;
    let mut pc = 1.0 + -(x2 * (1.0 / 132.0));
    pc = 1.0 + -((x2 * (1.0 / 90.0)) * pc);
    pc = 1.0 + -((x2 * (1.0 / 56.0)) * pc);
    pc = 1.0 + -((x2 * (1.0 / 30.0)) * pc);
    pc = 1.0 + -((x2 * (1.0 / 12.0)) * pc);
    let cs = 1.0 + -((x2 * 0.5) * pc);
    match q & 3 {
        0 => (sn, cs),
        1 => (cs, -sn),
        2 => (-sn, -cs),
        _ => (-cs, sn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_in_range_and_spread() {
        let n = 100_000;
        let mut sum = 0.0f64;
        for i in 0..n {
            let u = uniform(7, i, 3);
            assert!((0.0..1.0).contains(&u));
            sum += u as f64;
        }
        let mean = sum / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        assert_ne!(uniform(7, 1, 0), uniform(7, 1, 1));
        assert_ne!(uniform(7, 1, 0), uniform(8, 1, 0));
    }

    #[test]
    fn sincos_matches_libm() {
        for i in 0..10_000 {
            let u = i as f32 / 10_000.0;
            let (s, c) = sincos_2pi(u);
            let a = u as f64 * std::f64::consts::TAU;
            assert!((s as f64 - a.sin()).abs() < 4e-7, "sin at {u}: {s} vs {}", a.sin());
            assert!((c as f64 - a.cos()).abs() < 4e-7, "cos at {u}: {c} vs {}", a.cos());
        }
    }
}
