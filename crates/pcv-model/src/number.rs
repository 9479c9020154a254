//! Numbers as messages and `pcv info` print them: as Rust's `Display` does (the shortest text that
//! reads back to the same f64), except that very large and very small magnitudes take the exponent
//! form (a LAS scale of 1e303 would print as 304 digits).

/// The largest of 1, 2, 5 × 10^k not above `v` (> 0; else 0): a scale bar's or a grid's step.
pub fn round_length(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 0.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * p).find(|&l| l <= v * (1.0 + 1e-12)).unwrap_or(p)
}

/// `v` for a person to read: `0.001`, `500000`, `1e303`, `2.5e-9`.
pub fn readable(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-6..1e15).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Three values with spaces between ([`readable`] each).
pub fn readable3(v: [f64; 3]) -> String {
    format!("{} {} {}", readable(v[0]), readable(v[1]), readable(v[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_and_small_take_the_exponent_others_do_not() {
        assert_eq!(readable(1e303), "1e303");
        assert_eq!(readable(-2.5e-9), "-2.5e-9");
        assert_eq!(readable(0.001), "0.001");
        assert_eq!(readable(500000.0), "500000");
        assert_eq!(readable(4_100_000.25), "4100000.25");
        assert_eq!(readable(0.0), "0");
        assert_eq!(readable(f64::INFINITY), "inf");
        assert_eq!(readable3([1e303, 0.01, 0.01]), "1e303 0.01 0.01");
    }
}
