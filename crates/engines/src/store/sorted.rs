//! [`SortedSet`]: a set of rows loaded in bulk and changed a little at a time, kept
//! mostly as one sorted array: the `diff` engine's base facts.
//!
//! The `diff` handle keeps the base facts only to give set semantics to the changes
//! (inserting a present fact, or deleting an absent one, changes nothing) and to feed
//! them again when the dataflow is rebuilt; the dataflow holds its own copy. A
//! [`FlatSet`] pays a hash-table slot per row beside the row (4 bytes and a control
//! byte, at a load factor between 7/16 and 7/8) and up to a quarter of unused row
//! space: 16 bytes per fact of OWL 2 RL's LUBM(50) input, where the rows are 7. Here
//! the rows that have been there since the last [`SortedSet::settle`] lie sorted in one
//! exactly sized array, found by binary search, with one bit each for those removed
//! since; the rows inserted since are in a small [`FlatSet`] beside them. `settle`
//! merges the two once the recent rows (or the removed ones) are an eighth of the
//! sorted ones, so a load of a million facts is sorted once, and an update costs a
//! binary search and, every eighth of the set's size in changes, a merge of it.

use super::FlatSet;
use dynalog_analysis::sort_rows;

#[derive(Clone, Debug)]
pub struct SortedSet {
    arity: usize,
    /// Rows in ascending order, without duplicates, `arity` values each.
    sorted: Vec<u32>,
    /// One bit per row of `sorted`: removed since it was sorted.
    gone: Vec<u64>,
    /// The number of bits set in `gone`.
    gone_len: usize,
    /// Rows inserted since the last merge, none of them in `sorted`.
    recent: FlatSet,
}

impl SortedSet {
    pub fn new(arity: usize) -> SortedSet {
        SortedSet {
            arity,
            sorted: Vec::new(),
            gone: Vec::new(),
            gone_len: 0,
            recent: FlatSet::new(arity),
        }
    }

    pub fn arity(&self) -> usize {
        self.arity
    }

    fn sorted_len(&self) -> usize {
        self.sorted.len().checked_div(self.arity).unwrap_or(0)
    }

    fn sorted_row(&self, r: usize) -> &[u32] {
        &self.sorted[r * self.arity..(r + 1) * self.arity]
    }

    fn is_gone(&self, r: usize) -> bool {
        self.gone
            .get(r / 64)
            .is_some_and(|w| w & (1u64 << (r % 64)) != 0)
    }

    fn set_gone(&mut self, r: usize, gone: bool) {
        if self.gone.is_empty() {
            self.gone = vec![0; self.sorted_len().div_ceil(64)];
        }
        let bit = 1u64 << (r % 64);
        if gone {
            self.gone[r / 64] |= bit;
            self.gone_len += 1;
        } else {
            self.gone[r / 64] &= !bit;
            self.gone_len -= 1;
        }
    }

    /// The position of `tuple` among the sorted rows, removed or not.
    fn find(&self, tuple: &[u32]) -> Option<usize> {
        if self.sorted.is_empty() || tuple.len() != self.arity {
            return None;
        }
        let (mut lo, mut hi) = (0, self.sorted_len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.sorted_row(mid).cmp(tuple) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Add rows of `arity` values, stored flat, in bulk (a load): they are sorted
    /// together with the set's own, once, without a hash table. Nullary rows have no
    /// values to give: add them with [`SortedSet::insert`].
    pub fn load(&mut self, mut rows: Vec<u32>) {
        let arity = self.arity;
        if arity == 0 || rows.is_empty() {
            return;
        }
        rows.reserve_exact(self.len() * arity);
        for row in self.iter() {
            rows.extend_from_slice(row);
        }
        sort_rows(&mut rows, arity);
        // Drop the duplicates, keeping the first of each run.
        let mut kept = 0;
        for r in 0..rows.len() / arity {
            let at = r * arity;
            if kept == 0 || rows[at..at + arity] != rows[(kept - 1) * arity..kept * arity] {
                rows.copy_within(at..at + arity, kept * arity);
                kept += 1;
            }
        }
        rows.truncate(kept * arity);
        rows.shrink_to_fit();
        *self = SortedSet {
            sorted: rows,
            ..SortedSet::new(arity)
        };
    }

    /// Number of tuples.
    pub fn len(&self) -> usize {
        self.sorted_len() - self.gone_len + self.recent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, tuple: &[u32]) -> bool {
        match self.find(tuple) {
            Some(r) => !self.is_gone(r),
            None => self.recent.contains(tuple),
        }
    }

    /// Add `tuple` unless present; whether it was added.
    pub fn insert(&mut self, tuple: &[u32]) -> bool {
        match self.find(tuple) {
            Some(r) if self.is_gone(r) => {
                self.set_gone(r, false);
                true
            }
            Some(_) => false,
            None => self.recent.insert(tuple),
        }
    }

    /// Remove `tuple` if present; whether it was.
    pub fn remove(&mut self, tuple: &[u32]) -> bool {
        match self.find(tuple) {
            Some(r) if !self.is_gone(r) => {
                self.set_gone(r, true);
                true
            }
            Some(_) => false,
            None => self.recent.remove(tuple),
        }
    }

    /// The sorted rows not removed since, in order.
    fn live_sorted(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.sorted
            .chunks_exact(self.arity.max(1))
            .enumerate()
            .filter(|&(r, _)| !self.is_gone(r))
            .map(|(_, row)| row)
    }

    /// Every tuple: the sorted ones in order, then the recent ones.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.live_sorted().chain(self.recent.iter())
    }

    /// The allocated bytes.
    pub fn heap_bytes(&self) -> u64 {
        ((self.sorted.capacity() * std::mem::size_of::<u32>())
            + self.gone.capacity() * std::mem::size_of::<u64>()) as u64
            + self.recent.heap_bytes()
    }

    /// Merge the recent rows into the sorted ones, and drop the removed ones, if they
    /// are an eighth of the sorted rows (or more); nullary sets stay as they are.
    pub fn settle(&mut self) {
        let sorted = self.sorted_len();
        let changed = self.recent.len().max(self.gone_len);
        if self.arity == 0 || changed == 0 || changed < sorted / 8 {
            return;
        }
        let arity = self.arity;
        // The recent rows without their hash table, sorted in place.
        let recent = std::mem::replace(&mut self.recent, FlatSet::new(arity));
        let mut fresh = recent.into_rows().into_values();
        sort_rows(&mut fresh, arity);
        if sorted == 0 {
            fresh.shrink_to_fit();
            self.sorted = fresh;
        } else {
            let live = sorted - self.gone_len;
            let mut out = Vec::with_capacity((live + fresh.len() / arity) * arity);
            {
                let mut old = self.live_sorted().peekable();
                let mut new = fresh.chunks_exact(arity).peekable();
                loop {
                    let next = match (old.peek(), new.peek()) {
                        (Some(a), Some(b)) if a <= b => old.next(),
                        (Some(_), Some(_)) | (None, Some(_)) => new.next(),
                        (Some(_), None) => old.next(),
                        (None, None) => break,
                    };
                    if let Some(row) = next {
                        out.extend_from_slice(row);
                    }
                }
            }
            self.sorted = out;
        }
        self.gone = Vec::new();
        self.gone_len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn a_load_is_sorted_once_and_found_by_search() {
        let mut set = SortedSet::new(2);
        for t in [[3, 1], [1, 2], [2, 9], [1, 1]] {
            assert!(set.insert(&t));
        }
        assert!(!set.insert(&[1, 2]));
        set.settle();
        assert_eq!(set.recent.len(), 0, "merged");
        assert_eq!(set.sorted, vec![1, 1, 1, 2, 2, 9, 3, 1]);
        assert!(set.contains(&[2, 9]) && !set.contains(&[2, 8]));
        assert!(set.remove(&[2, 9]) && !set.remove(&[2, 9]));
        assert!(!set.contains(&[2, 9]));
        assert!(set.insert(&[2, 9]), "a removed sorted row comes back");
        assert_eq!(set.len(), 4);
    }

    #[test]
    fn rows_wider_than_six_values_sort_too() {
        let mut set = SortedSet::new(7);
        set.insert(&[2, 0, 0, 0, 0, 0, 0]);
        set.insert(&[1, 0, 0, 0, 0, 0, 5]);
        set.insert(&[1, 0, 0, 0, 0, 0, 3]);
        set.settle();
        let rows: Vec<Vec<u32>> = set.iter().map(<[u32]>::to_vec).collect();
        assert_eq!(
            rows,
            vec![
                vec![1, 0, 0, 0, 0, 0, 3],
                vec![1, 0, 0, 0, 0, 0, 5],
                vec![2, 0, 0, 0, 0, 0, 0]
            ]
        );
    }

    #[test]
    fn a_nullary_set_holds_its_one_tuple() {
        let mut set = SortedSet::new(0);
        assert!(set.insert(&[]) && !set.insert(&[]));
        set.settle();
        assert!(set.contains(&[]) && set.len() == 1);
        assert_eq!(set.iter().count(), 1);
        assert!(set.remove(&[]) && set.is_empty());
    }

    #[test]
    fn a_load_keeps_one_of_each_row_and_the_rows_already_there() {
        let mut set = SortedSet::new(2);
        set.insert(&[5, 5]);
        set.insert(&[0, 1]);
        set.settle();
        set.remove(&[0, 1]);
        set.insert(&[4, 4]);
        set.load(vec![3, 3, 5, 5, 3, 3, 1, 2]);
        let rows: Vec<Vec<u32>> = set.iter().map(<[u32]>::to_vec).collect();
        assert_eq!(rows, vec![vec![1, 2], vec![3, 3], vec![4, 4], vec![5, 5]]);
        assert_eq!(set.sorted.capacity(), 8, "exactly sized");
    }

    proptest! {
        /// Any sequence of inserts and removes, settled at any points, answers as a
        /// `BTreeSet` does.
        #[test]
        fn answers_as_a_set(
            arity in 1usize..4,
            load in prop::collection::vec(0u32..4, 0..40),
            ops in prop::collection::vec((any::<bool>(), 0u32..6, 0u32..6, 0u32..4), 0..300),
        ) {
            let mut set = SortedSet::new(arity);
            let mut model = BTreeSet::new();
            let rows: Vec<u32> = load.iter().copied().take(load.len() / arity * arity).collect();
            for row in rows.chunks_exact(arity) {
                model.insert(row.to_vec());
            }
            set.load(rows);
            for (insert, a, b, settle) in ops {
                let tuple: Vec<u32> = [a, b, a ^ b].into_iter().take(arity).collect();
                let (done, expected) = if insert {
                    (set.insert(&tuple), model.insert(tuple.clone()))
                } else {
                    (set.remove(&tuple), model.remove(&tuple))
                };
                prop_assert_eq!(done, expected);
                if settle == 0 {
                    set.settle();
                }
                prop_assert_eq!(set.len(), model.len());
                prop_assert_eq!(set.contains(&tuple), model.contains(&tuple));
            }
            let mut all: Vec<Vec<u32>> = set.iter().map(<[u32]>::to_vec).collect();
            all.sort();
            prop_assert_eq!(all, model.into_iter().collect::<Vec<_>>());
        }
    }
}
