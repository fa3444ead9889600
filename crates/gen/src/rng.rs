//! The seeded generator behind the graph generators: xoshiro256** seeded by SplitMix64.
//!
//! Both are small, public-domain algorithms by Blackman and Vigna, written out here so
//! that the stream for a seed is fixed by this file alone: it does not depend on a
//! crate's version, the platform or the word size. `next_f64` takes the top 53 bits of
//! a draw, so it is uniform on the multiples of 2^-53 in `[0, 1)`.
//!
//! [`ln`] and [`ln_1m`] are logarithms made only of IEEE additions, multiplications and
//! divisions (no FMA, no platform `libm`), so the graph generators compute the same bits
//! everywhere: `f64::ln` calls the system's math library, which may differ in the last
//! bit between platforms.

/// SplitMix64: used to expand a 64-bit seed into xoshiro's 256-bit state.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// xoshiro256**: the generator the graph generators draw from.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut sm = SplitMix64::new(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        // SplitMix64 never yields four zero words in a row, so the state is valid.
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The natural logarithm of a positive, finite, normal `x`, to about 1e-15 relative
/// error, from arithmetic alone: `x = m * 2^e` with `m` in `[sqrt(1/2), sqrt(2))`, then
/// `ln(m) = 2 atanh(s)`, `s = (m - 1) / (m + 1)`, `|s| < 0.172`, by its odd power series.
pub fn ln(x: f64) -> f64 {
    debug_assert!(x.is_normal() && x > 0.0, "ln of {x}");
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52)); // [1, 2)
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0; // exact
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s; // < 0.0295: 13 terms leave less than 1e-20
    let mut series = 0.0;
    for k in (0..13).rev() {
        series = series * s2 + 1.0 / (2 * k + 1) as f64;
    }
    e as f64 * std::f64::consts::LN_2 + 2.0 * s * series
}

/// `ln(1 - p)` for `p` in `[0, 1)`, accurate also for small `p` (where `1 - p` would lose
/// the digits of `p`): for `p <= 1/2`, `ln(1 - p) = -2 atanh(s)` with `s = p / (2 - p)`
/// (`s <= 1/3`) by its series; above, `1 - p` is exact and [`ln`] is used.
pub fn ln_1m(p: f64) -> f64 {
    debug_assert!((0.0..1.0).contains(&p), "ln(1 - {p})");
    if p <= 0.5 {
        let s = p / (2.0 - p);
        let s2 = s * s; // <= 1/9: 20 terms leave less than 1e-20
        let mut series = 0.0;
        for k in (0..20).rev() {
            series = series * s2 + 1.0 / (2 * k + 1) as f64;
        }
        -2.0 * s * series
    } else {
        ln(1.0 - p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_agrees_with_the_platform_logarithm() {
        let mut r = Rng::new(11);
        let mut xs: Vec<f64> = (0..20_000).map(|_| 1.0 - r.next_f64()).collect(); // (0, 1]
        xs.extend([
            1.0,
            0.5,
            2.0,
            1e-300,
            1e300,
            f64::EPSILON,
            1.0 - f64::EPSILON / 2.0,
        ]);
        xs.extend((1..200).map(|i| i as f64 * 0.37));
        for x in xs {
            let (ours, std) = (ln(x), x.ln());
            let tolerance = 4.0 * f64::EPSILON * std.abs().max(f64::MIN_POSITIVE);
            assert!((ours - std).abs() <= tolerance, "ln({x}): {ours} vs {std}");
        }
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn ln_1m_agrees_with_ln_1p() {
        let mut r = Rng::new(12);
        let mut ps = vec![
            0.0, 1e-300, 1e-12, 1e-6, 0.001, 0.0157, 0.1, 0.3, 0.5, 0.50001, 0.75,
        ];
        ps.extend((0..20_000).map(|_| r.next_f64().powi(3))); // many small p too
        for p in ps {
            let (ours, std) = (ln_1m(p), (-p).ln_1p());
            let tolerance = 4.0 * f64::EPSILON * std.abs();
            assert!(
                (ours - std).abs() <= tolerance,
                "ln(1 - {p}): {ours} vs {std}"
            );
        }
    }

    #[test]
    fn splitmix64_matches_the_reference_outputs() {
        // The published first outputs of SplitMix64 from state 0.
        let mut sm = SplitMix64::new(0);
        assert_eq!(sm.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(sm.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(sm.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn xoshiro_from_a_known_state() {
        // xoshiro256** from the state [1, 2, 3, 4]: the first output is
        // rotl(2 * 5, 7) * 9 = 11520, the second follows from the state update.
        let mut r = Rng { s: [1, 2, 3, 4] };
        assert_eq!(r.next_u64(), 11_520);
        assert_eq!(r.next_u64(), 0);
        assert_eq!(r.next_u64(), 1_509_978_240);
    }

    #[test]
    fn next_f64_is_in_the_unit_interval_and_seeded() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let xs: Vec<f64> = (0..1000).map(|_| a.next_f64()).collect();
        let ys: Vec<f64> = (0..1000).map(|_| b.next_f64()).collect();
        let zs: Vec<f64> = (0..1000).map(|_| c.next_f64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.05, "mean {mean}");
    }
}
