//! The vocabulary of the circuit, shared by its operators: the row type, the
//! multiplicity, the timestamps, substitutions, the bucket hash and the capability
//! bookkeeping of the hand-written operators.
//!
//! A leaf module: it imports nothing from its siblings (like differential-dataflow's
//! `difference` and `lattice` under its operators).

use std::fmt::Debug;
use std::hash::Hash;
use timely::dataflow::operators::{CapabilitySet, InputCapability};
use timely::order::Product;
use timely::progress::frontier::Antichain;

/// A flat fixed-width row: a fact `[relation, values.., 0..]`, a join key
/// `[pattern, key values.., 0..]`, an index value (the free values) or a
/// substitution's variable slots.
pub(crate) trait Row:
    differential_dataflow::ExchangeData
    + Hash
    + Copy
    + Default
    + Debug
    + AsRef<[u32]>
    + AsMut<[u32]>
    + Sync
{
}

impl Row for [u32; 3] {}
impl Row for [u32; 4] {}
impl Row for [u32; 8] {}
impl Row for [u32; 16] {}

/// The row widths a dataflow can be built for.
pub(crate) const WIDTHS: [usize; 4] = [3, 4, 8, 16];

/// A substitution: (rule id, with the bit `LAST` of module `compile` set at the last
/// atom, or `HEAD`; variable slots).
pub(crate) type Sub<R> = (u32, R);

/// The multiplicity of every collection of the circuit: derivation counts stay far
/// below `i32::MAX`, and a 4-byte diff makes every update in the batchers and traces
/// 4 bytes narrower than an `isize` would.
pub(crate) type Mult = i32;

/// The inner timestamp: (commit, level << LEVEL_SHIFT | round).
pub(crate) type Inner = Product<u32, u32>;

/// A deterministic bucket of a row, the same on every worker.
#[inline]
pub(crate) fn bucket(values: &[u32], buckets: u32) -> u32 {
    if buckets <= 1 {
        return 0;
    }
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for &v in values {
        h = (h ^ v as u64).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 29;
    }
    ((h >> 32) % buckets as u64) as u32
}

/// Hold, for each output `port` of an operator, capabilities at the times of an input
/// message's capability `cap` in `held[port]`.
pub(crate) fn hold_for_outputs(held: &mut [CapabilitySet<Inner>], cap: &InputCapability<Inner>) {
    for (port, held) in held.iter_mut().enumerate() {
        for c in cap.retain_stamp(port).iter() {
            held.insert(c.clone());
        }
    }
}

/// Keep, of the capabilities `held`, only what the `pending` times need: one capability
/// per least time. A message's capability can be earlier than its records' times, and
/// holding it would keep the loop from ever reaching them.
pub(crate) fn hold_only(held: &mut CapabilitySet<Inner>, pending: impl Iterator<Item = Inner>) {
    let mut lower = Antichain::new();
    for t in pending {
        lower.insert(t);
    }
    let mut kept = CapabilitySet::new();
    for t in lower.elements() {
        kept.insert(held.delayed(t));
    }
    *held = kept;
}

pub(crate) use crate::store::reserve_quarter;

/// How far ahead of the update being worked on a lookup's place is fetched (see
/// [`prefetch`]): enough misses in flight to hide the memory's latency, few enough
/// that the fetched lines are still cached when their updates come.
pub(crate) const AHEAD: usize = 16;

/// Ask the processor for the cache line of `place` ahead of its use: a lookup that
/// knows where its next few lookups go can overlap their cache misses (module
/// `round`). Only a hint: nothing on other processors.
#[inline]
pub(crate) fn prefetch<T>(place: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of every x86_64 processor, and a prefetch never faults
        // and reads nothing into the program; `place` is a live reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((place as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = place;
}

/// Whether `n` entries fit in an open-addressing table of `cap` places: at most
/// three quarters full (the `distinct`'s round tables and its facts' index).
#[inline]
pub(crate) fn fits(n: usize, cap: usize) -> bool {
    n * 4 <= cap * 3
}

/// The least number of places (a power of two, at least 64) that `n` entries fit in.
pub(crate) fn slots_for(n: usize) -> usize {
    let mut cap = 64;
    while !fits(n, cap) {
        cap *= 2;
    }
    cap
}

/// How many words of `row` are in use: up to its last non-zero one (the rest of a row
/// of the circuit's width is zero padding).
#[inline]
pub(crate) fn used_words(row: &[u32]) -> usize {
    row.iter().rposition(|&v| v != 0).map_or(0, |i| i + 1)
}

/// `n` flat records of `stride` words each, widened by `extra` zero words inserted
/// after the first `at` words of each record.
pub(crate) fn widen_records(
    data: &[u32],
    n: usize,
    stride: usize,
    at: usize,
    extra: usize,
) -> Vec<u32> {
    let mut out = Vec::with_capacity(n * (stride + extra));
    if stride == 0 {
        out.resize(n * extra, 0);
        return out;
    }
    for r in data.chunks_exact(stride) {
        out.extend_from_slice(&r[..at]);
        out.extend(std::iter::repeat_n(0, extra));
        out.extend_from_slice(&r[at..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_use_words_up_to_the_last_non_zero_one() {
        assert_eq!(used_words(&[3, 0, 7, 0, 0]), 3);
        assert_eq!(used_words(&[0, 0]), 0);
        assert_eq!(used_words(&[]), 0);
    }

    #[test]
    fn records_widen_with_zeros_where_asked() {
        // Two records of [a, b, round]: two zeros after the values.
        let data = [1, 2, 9, 3, 4, 8];
        assert_eq!(
            widen_records(&data, 2, 3, 2, 2),
            vec![1, 2, 0, 0, 9, 3, 4, 0, 0, 8]
        );
        // At the end; and records of no words at all.
        assert_eq!(widen_records(&[5, 6], 2, 1, 1, 1), vec![5, 0, 6, 0]);
        assert_eq!(widen_records(&[], 3, 0, 0, 2), vec![0; 6]);
    }

    #[test]
    fn vectors_grow_by_a_quarter() {
        let mut v: Vec<u32> = Vec::new();
        reserve_quarter(&mut v, 1);
        assert_eq!(v.capacity(), 1024);
        v.resize(1024, 0);
        reserve_quarter(&mut v, 1);
        assert_eq!(v.capacity(), 2048, "at least 1,024 more");
        v.resize(100_000, 0);
        v.shrink_to_fit();
        reserve_quarter(&mut v, 1);
        assert_eq!(v.capacity(), 125_000);
        // Room enough: no growth.
        reserve_quarter(&mut v, 25_000);
        assert_eq!(v.capacity(), 125_000);
        reserve_quarter(&mut v, 50_000);
        assert_eq!(v.capacity(), 150_000, "at least what is asked");
    }
}
