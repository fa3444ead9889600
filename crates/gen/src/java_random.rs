//! A port of `java.util.Random`, bit for bit.
//!
//! Java's generator is a 48-bit linear congruential generator:
//! `seed = (seed * 0x5DEECE66D + 0xB) mod 2^48`, and `next(bits)` returns the top `bits`
//! of the new 48-bit state as a signed 32-bit integer. A seed given by the user is
//! scrambled once, by XOR with the multiplier.
//!
//! `next_int(n)` follows the algorithm the Java documentation specifies:
//! * when `n` is a power of two, the top bits of one 31-bit draw are used
//!   (`(n * next(31)) >> 31`), which avoids the poor low bits of an LCG;
//! * otherwise a 31-bit draw `bits` gives `val = bits % n`, and the draw is rejected
//!   and repeated while `bits - val + (n - 1)` overflows a signed 32-bit integer, so
//!   that every value in `0..n` is equally likely.
//!
//! Reproducing that stream exactly is what makes the LUBM generator ([`crate::lubm`])
//! produce the same data as the original Java program.

const MULTIPLIER: i64 = 0x5_DEEC_E66D;
const ADDEND: i64 = 0xB;
const MASK: i64 = (1 << 48) - 1;

/// `java.util.Random`, with the same outputs as the JDK for the same seed.
#[derive(Clone, Debug)]
pub struct JavaRandom {
    state: i64,
}

impl JavaRandom {
    /// `new Random(seed)`.
    pub fn new(seed: i64) -> JavaRandom {
        let mut r = JavaRandom { state: 0 };
        r.set_seed(seed);
        r
    }

    /// `setSeed(seed)`: the seed is scrambled by XOR with the multiplier.
    pub fn set_seed(&mut self, seed: i64) {
        self.state = (seed ^ MULTIPLIER) & MASK;
    }

    /// `next(bits)`: advance the LCG and return its top `bits` bits (1 ≤ bits ≤ 31 here).
    fn next(&mut self, bits: u32) -> i32 {
        debug_assert!((1..=31).contains(&bits));
        self.state = (self.state.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND)) & MASK;
        // Java: (int) (seed >>> (48 - bits)); the state is non-negative, so >> is >>>.
        (self.state >> (48 - bits)) as i32
    }

    /// `nextInt(bound)`: uniform in `0..bound`. Java throws for `bound <= 0`; here that
    /// is `None`, so callers decide what a bad bound means.
    pub fn next_int(&mut self, bound: i32) -> Option<i32> {
        if bound <= 0 {
            return None;
        }
        if bound & bound.wrapping_neg() == bound {
            // A power of two: the high bits of one draw.
            return Some(((i64::from(bound) * i64::from(self.next(31))) >> 31) as i32);
        }
        loop {
            let bits = self.next(31);
            let val = bits % bound;
            // Reject the incomplete last interval (detected by 32-bit overflow).
            if bits.wrapping_sub(val).wrapping_add(bound - 1) >= 0 {
                return Some(val);
            }
        }
    }

    /// `nextDouble()`: uniform in `[0, 1)` from 53 random bits (26 + 27).
    pub fn next_double(&mut self) -> f64 {
        let hi = i64::from(self.next(26));
        let lo = i64::from(self.next(27));
        ((hi << 27) + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values were printed by OpenJDK 17's java.util.Random (a throw-away Java
    // program, not part of the repository).

    fn ints(seed: i64, bound: i32, k: usize) -> Vec<i32> {
        let mut r = JavaRandom::new(seed);
        (0..k).map(|_| r.next_int(bound).unwrap()).collect()
    }

    #[test]
    fn next_int_matches_java_seed_0() {
        assert_eq!(ints(0, 100, 10), [60, 48, 29, 47, 15, 53, 91, 61, 19, 54]);
    }

    #[test]
    fn next_int_matches_java_seed_42() {
        assert_eq!(
            ints(42, 1000, 10),
            [130, 763, 248, 884, 970, 525, 505, 918, 519, 93]
        );
    }

    #[test]
    fn next_int_power_of_two_matches_java() {
        assert_eq!(ints(7, 16, 10), [11, 10, 11, 0, 5, 7, 14, 11, 11, 9]);
    }

    #[test]
    fn next_int_rejection_loop_matches_java() {
        // For bound 2^30 + 1 about half of all draws are rejected.
        assert_eq!(
            ints(1, 1_073_741_825, 10),
            [
                215_764_588,
                880_641_847,
                874_970_313,
                446_064_254,
                77_814_904,
                714_504_434,
                13_136_569,
                327_998_473,
                342_691_263,
                1_046_012_189
            ]
        );
    }

    #[test]
    fn negative_seed_matches_java() {
        assert_eq!(ints(-5, 7, 10), [5, 6, 2, 6, 1, 5, 5, 5, 0, 0]);
    }

    #[test]
    fn next_double_matches_java() {
        let mut r = JavaRandom::new(123);
        let bits: Vec<u64> = (0..4).map(|_| r.next_double().to_bits()).collect();
        assert_eq!(
            bits,
            [
                4_604_688_993_687_560_228,
                4_607_100_443_349_852_037,
                4_598_234_542_861_427_298,
                4_603_658_805_787_635_833
            ]
        );
    }

    #[test]
    fn next_int_rejects_non_positive_bounds() {
        let mut r = JavaRandom::new(0);
        assert_eq!(r.next_int(0), None);
        assert_eq!(r.next_int(-3), None);
    }
}
