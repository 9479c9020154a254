//! Keeping `keep` of `of` points evenly spaced through their order (`--max-points`, and what the
//! device shows of a cloud that does not fit it).
//!
//! How it works: point `i` stays when `floor((i + 1)·keep/of) > floor(i·keep/of)`, which keeps exactly
//! `keep` of the `of` and, for scans and tiles (points in scan or tile order), spreads them over the
//! whole cloud. [`Even::thin`] visits only the points that stay, without a division a point: the
//! `j`-th to stay is point `((j + 1)·of - 1) / keep`, carried from one to the next as a quotient and a
//! remainder, so a run of points that starts anywhere in the order is thinned by the worker that decoded
//! it, in time proportional to what it keeps. Products are taken in 128 bits: `i·keep` passes 2^64
//! for clouds of a few billion points.

/// The rule for keeping `keep` of `of` points (`keep` ≥ `of` keeps all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Even {
    pub keep: u64,
    pub of: u64,
}

impl Even {
    pub fn new(keep: u64, of: u64) -> Self {
        Even { keep, of }
    }

    /// Whether every point stays.
    pub fn keeps_all(self) -> bool {
        self.keep >= self.of
    }

    /// Points kept among the first `i`: `floor(i·keep/of)` (`i` itself when all stay).
    pub fn kept_before(self, i: u64) -> u64 {
        if self.keeps_all() {
            return i;
        }
        (i as u128 * self.keep as u128 / self.of as u128) as u64
    }

    /// Keeps, in place and in order, the elements of `v` that stay when `v[0]` is point `first` of
    /// the order.
    pub fn thin<T: Copy>(self, v: &mut Vec<T>, first: u64) {
        if self.keeps_all() || v.is_empty() {
            return;
        }
        let (keep, of) = (self.keep, self.of);
        if keep == 0 {
            v.clear();
            return;
        }
        // Only the points that stay are visited: the `j`-th to stay (from 0) is the first `i` with
        // `(i + 1)·keep ≥ (j + 1)·of`, i.e. `i = ((j + 1)·of - 1) / keep`, carried from one to the next
        // as a quotient and a remainder (`of / keep` apart, one more where the remainders carry).
        let j = self.kept_before(first);
        let num = (j as u128 + 1) * of as u128 - 1;
        let (mut at, mut rest) = ((num / keep as u128) as u64, (num % keep as u128) as u64);
        let (step, step_rest) = (of / keep, of % keep);
        let end = first + v.len() as u64;
        let mut w = 0;
        while at < end {
            v[w] = v[(at - first) as usize];
            w += 1;
            at += step;
            rest += step_rest;
            if rest >= keep {
                rest -= keep;
                at += 1;
            }
        }
        v.truncate(w);
    }
}

/// Keeps the items of `v` whose entry in `mask` is true, in order (a filter's thinning of one column;
/// a column of another length, an absent one, is left as it is).
pub fn keep_masked<T>(v: &mut Vec<T>, mask: &[bool]) {
    if v.len() == mask.len() {
        let mut k = mask.iter();
        v.retain(|_| *k.next().unwrap_or(&false));
    }
}

#[cfg(test)]
mod tests {
    use super::Even;

    /// The rule by its definition, one point at a time.
    fn stays(i: u64, e: Even) -> bool {
        ((i + 1) as u128 * e.keep as u128 / e.of as u128) > (i as u128 * e.keep as u128 / e.of as u128)
    }

    #[test]
    fn thinning_runs_anywhere_in_the_order_keeps_what_the_rule_keeps() {
        for (keep, of) in [(0, 7), (1, 7), (3, 7), (6, 7), (10_000, 220_000), (999, 1000), (1, 1), (5, 3)] {
            let e = Even::new(keep, of);
            // The order cut into runs of uneven lengths, each thinned on its own.
            let mut got = Vec::new();
            let mut first = 0u64;
            for len in [0u64, 1, 2, 5, 17, 1000].iter().cycle() {
                if first >= of {
                    break;
                }
                let len = (*len).min(of - first);
                let mut run: Vec<u64> = (first..first + len).collect();
                e.thin(&mut run, first);
                got.extend(run);
                first += len;
            }
            let want: Vec<u64> = (0..of).filter(|&i| stays(i, e)).collect();
            assert_eq!(got, want, "keep {keep} of {of}");
            assert_eq!(got.len() as u64, keep.min(of));
            assert_eq!(e.kept_before(of), keep.min(of));
            let mut before = 0;
            for i in 0..of {
                assert_eq!(e.kept_before(i), before, "kept before {i}, keep {keep} of {of}");
                before += stays(i, e) as u64;
            }
        }
    }

    #[test]
    fn billions_of_points_do_not_overflow() {
        // 6 billion points, 3 billion kept: i·keep is about 1.8e19, past u64's 1.8447e19 near the end.
        let e = Even::new(3_000_000_000, 6_000_000_000);
        let first = 5_999_999_000;
        let mut run: Vec<u64> = (first..6_000_000_000).collect();
        e.thin(&mut run, first);
        assert_eq!(run.len(), 500);
        assert!(run.iter().all(|&i| stays(i, e)));
        assert_eq!(e.kept_before(6_000_000_000), 3_000_000_000);
    }
}
