//! The table in which the `distinct` adds up one time's head facts: `(fact, count
//! change)`, one entry per fact.
//!
//! A recursive rule derives most of its facts many times in a round (tc over
//! G(5000, 0.001): about five derivations per fact), and a large round's table is far
//! larger than the caches, so each derivation's lookup is a cache miss. A general hash
//! map takes them one after another. This table takes a batch of updates at once and
//! asks the processor for the slot of the update `AHEAD` places further on before it
//! adds the current one, so the misses overlap instead of queueing (the addresses are
//! known as soon as the facts are hashed).
//!
//! Open addressing with linear probing over `(fact, change)` pairs: a slot is empty
//! when the first word of its fact (the relation) is `EMPTY`. A fact whose first word
//! is `EMPTY` itself waits in a side list. The slot of a fact is its hash's low bits,
//! with the hash of the `distinct`'s table of facts ([`super::steps::Facts`]): a drain
//! yields the facts in the order of that table's slots, so processing a round sweeps
//! it front to back rather than at random.

use super::types::{AHEAD, Mult, Row, prefetch};
use std::hash::BuildHasher;

/// The first word of an empty slot.
const EMPTY: u32 = u32::MAX;

/// One time's count changes, added up per fact.
pub(crate) struct RoundTable<R> {
    slots: Vec<(R, Mult)>,
    /// Occupied slots.
    len: usize,
    /// Facts whose first word is `EMPTY`: not in `slots`.
    odd: Vec<(R, Mult)>,
    hasher: rustc_hash::FxBuildHasher,
}

impl<R> Default for RoundTable<R> {
    fn default() -> Self {
        RoundTable {
            slots: Vec::new(),
            len: 0,
            odd: Vec::new(),
            hasher: rustc_hash::FxBuildHasher,
        }
    }
}

/// An empty slot.
#[inline]
fn empty<R: Row>() -> (R, Mult) {
    let mut r = R::default();
    r.as_mut()[0] = EMPTY;
    (r, 0)
}

impl<R: Row> RoundTable<R> {
    /// Facts held.
    pub(crate) fn len(&self) -> usize {
        self.len + self.odd.len()
    }

    /// Slots allocated.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The allocated bytes.
    pub(crate) fn bytes(&self) -> u64 {
        ((self.slots.capacity() + self.odd.capacity()) * std::mem::size_of::<(R, Mult)>()) as u64
    }

    #[inline]
    fn home(&self, f: &R) -> usize {
        self.hasher.hash_one(f) as usize & (self.slots.len() - 1)
    }

    /// Make room for `more` facts beyond those held, at most three quarters full.
    fn reserve(&mut self, more: usize) {
        let need = self.len + more;
        if need * 4 <= self.slots.len() * 3 {
            return;
        }
        let mut cap = self.slots.len().max(64);
        while need * 4 > cap * 3 {
            cap *= 2;
        }
        self.rehash(cap);
    }

    /// Move every fact into a table of `cap` slots (a power of two, room for them all).
    fn rehash(&mut self, cap: usize) {
        let old = std::mem::replace(&mut self.slots, vec![empty::<R>(); cap]);
        self.len = 0;
        for (f, d) in old {
            if f.as_ref()[0] != EMPTY {
                self.add_one(f, d);
            }
        }
    }

    /// Add `d` to the change of `f` (there is room for it).
    #[inline]
    fn add_one(&mut self, f: R, d: Mult) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(&f);
        loop {
            let slot = &mut self.slots[i];
            if slot.0 == f {
                slot.1 += d;
                return;
            }
            if slot.0.as_ref()[0] == EMPTY {
                *slot = (f, d);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Add every update's change to its fact's.
    pub(crate) fn add_all<T>(&mut self, updates: &[(R, T, Mult)]) {
        self.reserve(updates.len());
        for (i, (f, _, d)) in updates.iter().enumerate() {
            if let Some((next, _, _)) = updates.get(i + AHEAD)
                && next.as_ref()[0] != EMPTY
            {
                prefetch(&self.slots[self.home(next)]);
            }
            if f.as_ref()[0] == EMPTY {
                self.odd.push((*f, *d));
            } else {
                self.add_one(*f, *d);
            }
        }
    }

    /// Take every fact out with its change (zero changes included), in slot order,
    /// leaving the table empty with its slots allocated.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (R, Mult)> + '_ {
        self.len = 0;
        let odd = self.odd.drain(..);
        self.slots
            .iter_mut()
            .filter(|s| s.0.as_ref()[0] != EMPTY)
            .map(|s| std::mem::replace(s, empty::<R>()))
            .chain(odd)
    }

    /// Keep no more slots than `used` facts need (the table is empty).
    pub(crate) fn shrink_to(&mut self, used: usize) {
        debug_assert_eq!(self.len, 0);
        let mut cap = 64;
        while used * 4 > cap * 3 {
            cap *= 2;
        }
        if cap < self.slots.len() {
            self.slots = vec![empty::<R>(); cap];
        }
        self.odd.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn ups(list: &[([u32; 3], Mult)]) -> Vec<([u32; 3], (), Mult)> {
        list.iter().map(|&(f, d)| (f, (), d)).collect()
    }

    #[test]
    fn changes_add_up_per_fact_through_growth() {
        let mut t = RoundTable::<[u32; 3]>::default();
        let mut expected = BTreeMap::new();
        // Many batches, each with repeats, across several doublings.
        for b in 0..50u32 {
            let batch: Vec<_> = (0..300u32)
                .map(|i| {
                    (
                        [1, (b * 7 + i) % 1000, i % 3],
                        if i % 5 == 0 { -1 } else { 2 },
                    )
                })
                .collect();
            for &(f, d) in &batch {
                *expected.entry(f).or_insert(0) += d;
            }
            t.add_all(&ups(&batch));
        }
        assert_eq!(t.len(), expected.len());
        assert!(t.len() * 4 <= t.capacity() * 3);
        let got: BTreeMap<_, _> = t.drain().collect();
        assert_eq!(got, expected);
        assert_eq!(t.len(), 0);
        assert_eq!(t.drain().count(), 0, "drained means empty");
    }

    #[test]
    fn a_fact_with_the_empty_marker_is_kept_aside() {
        let mut t = RoundTable::<[u32; 3]>::default();
        t.add_all(&ups(&[
            ([EMPTY, 1, 2], 1),
            ([0, 0, 0], 3),
            ([EMPTY, 1, 2], 1),
        ]));
        let mut got: Vec<_> = t.drain().collect();
        got.sort();
        assert_eq!(
            got,
            vec![([0, 0, 0], 3), ([EMPTY, 1, 2], 1), ([EMPTY, 1, 2], 1)]
        );
    }

    #[test]
    fn drained_facts_come_in_the_order_of_their_hash_low_bits() {
        let mut t = RoundTable::<[u32; 3]>::default();
        let n = 1000;
        t.add_all(&ups(&(0..n)
            .map(|i| ([2, i, i * i], 1))
            .collect::<Vec<_>>()));
        let mask = t.capacity() as u64 - 1;
        let homes: Vec<u64> = t
            .drain()
            .map(|(f, _)| rustc_hash::FxBuildHasher.hash_one(f) & mask)
            .collect();
        // Linear probing moves a fact a little past its home: the order is by home
        // except within runs of collisions (insertion order would give about n / 2).
        let inversions = homes.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(inversions <= n as usize / 10, "{inversions} of {n}");
    }

    #[test]
    fn an_emptied_table_shrinks_to_what_was_used() {
        let mut t = RoundTable::<[u32; 3]>::default();
        t.add_all(&ups(&(0..10_000)
            .map(|i| ([1, i, 0], 1))
            .collect::<Vec<_>>()));
        let big = t.capacity();
        assert_eq!(t.drain().count(), 10_000);
        t.shrink_to(100);
        assert!(t.capacity() < big / 16);
        t.add_all(&ups(&[([1, 5, 5], 1), ([1, 5, 5], 1)]));
        assert_eq!(t.drain().collect::<Vec<_>>(), vec![([1, 5, 5], 2)]);
    }
}
