//! The table in which the `distinct` adds up one time's head facts: `(fact, count
//! change)`, one entry per fact. A large time's changes move on to the table of facts
//! itself (see module `distinct`), so this table holds small times (updates) and the
//! first facts of large ones.
//!
//! A recursive rule derives most of its facts many times in a round (tc over
//! G(5000, 0.001): about five derivations per fact), and a large round's table is far
//! larger than the caches, so each derivation's lookup is a cache miss. A general hash
//! map takes them one after another. This table takes a batch of updates at once and
//! asks the processor for the slot of the update `AHEAD` places further on before it
//! adds the current one, so the misses overlap instead of queueing (the addresses are
//! known as soon as the facts are hashed).
//!
//! One table per relation (as the `distinct`'s table of facts), open addressing with
//! linear probing. A slot is one row: the fact's values after its first word, and in
//! the first word, which the relation makes redundant, the count change (`EMPTY` in an
//! empty slot). Slots are a quarter smaller than `(fact, change)` pairs on transitive
//! closure, which matters at the peak: the largest round's table held 537 MB per
//! worker on tc-rmat10k. The slot of a fact is its hash's low bits, with the hash of
//! the `distinct`'s table of facts ([`super::steps::Facts`]): a drain yields each
//! relation's facts in the order of that table's slots, so processing a round sweeps
//! it front to back rather than at random.
//!
//! Module `entries` borrows it to add up a new projecting pattern's entries per round
//! (rows packed like facts of relation 0: see `entries::Packing`).

use super::steps::hash_row;
use super::types::{AHEAD, Mult, Row, fits, prefetch, slots_for};

/// The first word of an empty slot: a count change no time reaches (the `distinct`
/// refuses counts beyond 2^29, and sums stop short of this one).
const EMPTY: u32 = i32::MIN as u32;

/// One time's count changes, added up per fact.
pub(crate) struct RoundTable<R> {
    /// Per relation id.
    parts: Vec<Part<R>>,
}

/// One relation's changes.
struct Part<R> {
    /// `[change, values..]`, or `[EMPTY, ..]`: a power of two of them, or none.
    slots: Vec<R>,
    /// Occupied slots.
    len: usize,
    /// Facts at the last drain: what the next time will likely need.
    used: usize,
}

impl<R> Default for RoundTable<R> {
    fn default() -> Self {
        RoundTable { parts: Vec::new() }
    }
}

/// An empty slot.
#[inline]
fn empty<R: Row>() -> R {
    let mut r = R::default();
    r.as_mut()[0] = EMPTY;
    r
}

/// Whether the slot `slot` holds the fact `f` (whose first word is its relation).
#[inline]
fn holds<R: Row>(slot: &R, f: &R) -> bool {
    slot.as_ref()[1..] == f.as_ref()[1..]
}

impl<R: Row> Part<R> {
    /// Move every fact into `cap` slots (a power of two, room for them all).
    fn rehash(&mut self, cap: usize, home: impl Fn(&R) -> u64) {
        let old = std::mem::replace(&mut self.slots, vec![empty::<R>(); cap]);
        let mask = cap - 1;
        for slot in old {
            if slot.as_ref()[0] != EMPTY {
                let mut i = home(&slot) as usize & mask;
                while self.slots[i].as_ref()[0] != EMPTY {
                    i = (i + 1) & mask;
                }
                self.slots[i] = slot;
            }
        }
    }
}

impl<R: Row> RoundTable<R> {
    /// Facts held.
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(|p| p.len).sum()
    }

    /// Slots allocated.
    pub(crate) fn capacity(&self) -> usize {
        self.parts.iter().map(|p| p.slots.len()).sum()
    }

    /// The allocated bytes.
    pub(crate) fn bytes(&self) -> u64 {
        let slots: usize = self.parts.iter().map(|p| p.slots.capacity()).sum();
        (slots * std::mem::size_of::<R>() + self.parts.capacity() * std::mem::size_of::<Part<R>>())
            as u64
    }

    /// Add `d` to the change of `f`, whose hash is `hash`.
    #[inline]
    fn add_one(&mut self, f: &R, hash: u64, d: Mult) {
        let rel = f.as_ref()[0] as usize;
        if rel >= self.parts.len() {
            self.parts.resize_with(rel + 1, || Part {
                slots: Vec::new(),
                len: 0,
                used: 0,
            });
        }
        let part = &mut self.parts[rel];
        if !fits(part.len + 1, part.slots.len()) {
            let cap = slots_for(part.len + 1).max(2 * part.slots.len());
            // A slot's first word is its change: its fact is `rel` and the values.
            part.rehash(cap, |slot| {
                let mut f = *slot;
                f.as_mut()[0] = rel as u32;
                hash_row(&f)
            });
        }
        let mask = part.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let slot = &mut part.slots[i];
            let first = slot.as_ref()[0];
            if first == EMPTY {
                *slot = *f;
                slot.as_mut()[0] = d.max(i32::MIN + 1) as u32;
                part.len += 1;
                return;
            }
            if holds(slot, f) {
                // Never `EMPTY`: the sum stops one short of it.
                let sum = (first as i32).saturating_add(d).max(i32::MIN + 1);
                slot.as_mut()[0] = sum as u32;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Add `d` to the change of `f` (one update: a batch goes through
    /// [`RoundTable::add_all`], which fetches ahead).
    #[inline]
    pub(crate) fn add(&mut self, f: &R, d: Mult) {
        self.add_one(f, hash_row(f), d);
    }

    /// Add every update's change to its fact's.
    pub(crate) fn add_all<T>(&mut self, updates: &[(R, T, Mult)]) {
        // The hashes of the next `AHEAD` updates, each computed once: for the
        // prefetch, then for the update itself.
        let mut hashes = [0u64; AHEAD];
        for (h, (f, _, _)) in hashes.iter_mut().zip(updates) {
            *h = hash_row(f);
        }
        for (i, (f, _, d)) in updates.iter().enumerate() {
            let hash = hashes[i % AHEAD];
            if let Some((next, _, _)) = updates.get(i + AHEAD) {
                let h = hash_row(next);
                hashes[i % AHEAD] = h;
                if let Some(part) = self.parts.get(next.as_ref()[0] as usize)
                    && !part.slots.is_empty()
                {
                    prefetch(&part.slots[h as usize & (part.slots.len() - 1)]);
                }
            }
            self.add_one(f, hash, *d);
        }
    }

    /// Take every fact out with its change (zero changes included), relation by
    /// relation in slot order, leaving the table empty with its slots allocated.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (R, Mult)> + '_ {
        self.parts.iter_mut().enumerate().flat_map(|(rel, part)| {
            part.used = part.len;
            part.len = 0;
            part.slots
                .iter_mut()
                .filter(|s| s.as_ref()[0] != EMPTY)
                .map(move |s| {
                    let mut f = std::mem::replace(s, empty::<R>());
                    let d = f.as_ref()[0] as i32;
                    f.as_mut()[0] = rel as u32;
                    (f, d)
                })
        })
    }

    /// Keep, of each relation's slots (the table is drained), no more than about
    /// twice what its facts at the last drain needed: the rounds of a load shrink to a
    /// few facts at the end, and the table with them.
    pub(crate) fn shrink_to_use(&mut self) {
        for part in &mut self.parts {
            debug_assert_eq!(part.len, 0);
            if part.slots.len() > 4 * part.used + 1024 {
                part.slots = vec![empty::<R>(); slots_for(part.used)];
            }
        }
        while self.parts.last().is_some_and(|p| p.slots.is_empty()) {
            self.parts.pop();
        }
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
        // Many batches over three relations, each with repeats, across several
        // doublings; sums that cancel stay as zero changes.
        for b in 0..50u32 {
            let batch: Vec<_> = (0..300u32)
                .map(|i| {
                    let f = [i % 3, (b * 7 + i) % 1000, i % 5];
                    (f, if i % 5 == 0 { -1 } else { 2 })
                })
                .collect();
            for &(f, d) in &batch {
                *expected.entry(f).or_insert(0) += d;
            }
            t.add_all(&ups(&batch));
        }
        assert_eq!(t.len(), expected.len());
        assert!(t.parts.iter().all(|p| fits(p.len, p.slots.len())));
        let got: BTreeMap<_, _> = t.drain().collect();
        assert_eq!(got, expected);
        assert_eq!(t.len(), 0);
        assert_eq!(t.drain().count(), 0, "drained means empty");
    }

    #[test]
    fn any_fact_and_any_count_is_kept() {
        // The row of zeros, values equal to the empty marker, large negative counts.
        let mut t = RoundTable::<[u32; 3]>::default();
        t.add_all(&ups(&[
            ([0, 0, 0], 3),
            ([2, EMPTY, EMPTY], 1),
            ([2, EMPTY, EMPTY], -1),
            ([1, 1, 2], -(1 << 30)),
            ([1, 1, 2], -(1 << 30)),
            ([1, 1, 2], -5),
        ]));
        let mut got: Vec<_> = t.drain().collect();
        got.sort();
        assert_eq!(
            got,
            vec![
                ([0, 0, 0], 3),
                ([1, 1, 2], i32::MIN + 1),
                ([2, EMPTY, EMPTY], 0)
            ],
            "a sum stops one short of the marker"
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
        let homes: Vec<u64> = t.drain().map(|(f, _)| hash_row(&f) & mask).collect();
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
        t.shrink_to_use();
        assert_eq!(t.capacity(), big, "the next time likely needs as much");
        t.add_all(&ups(&[([1, 5, 5], 1), ([1, 5, 5], 1)]));
        assert_eq!(t.drain().collect::<Vec<_>>(), vec![([1, 5, 5], 2)]);
        t.shrink_to_use();
        assert_eq!(t.capacity(), 64);
    }
}
