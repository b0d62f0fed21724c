//! A small seeded random number generator for simulations and synthetic
//! workloads.
//!
//! SplitMix64 (Steele, Lea and Flood, 2014) rather than a crate: the figures
//! in `docs/CLOCK.md` must come out the same from the same seed forever, and
//! a generator written here cannot change under us with a dependency update.

/// SplitMix64: 64 bits of state, passes BigCrush, one multiply-xorshift per draw.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high]` (inclusive); `low ≤ high`.
    pub(crate) fn range(&mut self, low: u64, high: u64) -> u64 {
        let span = high - low;
        if span == u64::MAX {
            return self.next_u64();
        }
        // Multiply-shift mapping: bias below 2⁻⁶⁴ × span, irrelevant here.
        low + ((self.next_u64() as u128 * (span as u128 + 1)) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Exponentially distributed with the given mean.
    pub(crate) fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }

    /// True with probability `p`.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A fresh generator for a sub-task, so adding draws to one part of a
    /// simulation does not shift the random numbers of another.
    pub(crate) fn fork(&mut self) -> Rng {
        Rng(self.next_u64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_and_ranges_hold() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..1000 {
            let x = a.range(10, 20);
            assert_eq!(x, b.range(10, 20));
            assert!((10..=20).contains(&x));
        }
        // The reference output of SplitMix64 for seed 0.
        assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
    }
}
