//! [`Growing`]: the deduplication set of a relation under semi-naive evaluation, and
//! the [`Batch`] of derived tuples waiting to enter it.

use super::{FlatSet, Rows, hash_values, same};
use hashbrown::HashTable;

/// Row `r` of the concatenation of `committed` and `fresh`.
#[inline]
fn split_row<'a>(committed: &'a Rows, fresh: &'a Rows, r: u32) -> &'a [u32] {
    match r.checked_sub(committed.len()) {
        None => committed.row(r),
        Some(f) => fresh.row(f),
    }
}

/// The deduplication set of a relation under evaluation: ids of the rows of `committed`
/// (kept by the caller) followed by those of [`Growing::fresh`].
#[derive(Clone, Debug, Default)]
pub struct Growing {
    table: HashTable<u32>,
    /// The rows derived in the current round.
    pub fresh: Rows,
}

impl Growing {
    /// The set of the rows of `base`, to grow from there.
    pub fn from_base(base: &FlatSet) -> Growing {
        Growing {
            table: base.table.clone(),
            fresh: Rows::new(base.arity()),
        }
    }

    /// The id of a row (committed or fresh) of hash `hash` satisfying `eq`.
    #[inline]
    pub fn find_with(
        &self,
        committed: &Rows,
        hash: u64,
        eq: impl Fn(&[u32]) -> bool,
    ) -> Option<u32> {
        let fresh = &self.fresh;
        self.table
            .find(hash, |&r| eq(split_row(committed, fresh, r)))
            .copied()
    }

    /// Add `tuple` (of hash `hash`) to the fresh rows unless present.
    #[inline]
    pub fn insert_hashed(&mut self, committed: &Rows, hash: u64, tuple: &[u32]) -> bool {
        let fresh = &mut self.fresh;
        let entry = self.table.entry(
            hash,
            |&r| same(split_row(committed, fresh, r), tuple),
            |&r| hash_values(split_row(committed, fresh, r).iter().copied()),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(committed.len() + fresh.push(tuple));
                true
            }
        }
    }

    /// How many tuples to batch before inserting them into this set.
    pub fn batch_limit(&self) -> usize {
        (self.table.capacity() / 32).clamp(1 << 10, 1 << 19)
    }

    /// Insert the tuples of `batch` (emptying it) in the order of their positions in the
    /// hash table, so that the probes sweep the table instead of jumping around it: for
    /// a large table this turns most cache misses into sequential reads. (The position
    /// of a hash in a `hashbrown` table of `2^b` buckets is its low `b` bits; the order
    /// only matters for speed.)
    pub fn insert_batch(&mut self, committed: &Rows, batch: &mut Batch) {
        let arity = self.fresh.arity();
        if batch.len() < 1 << 12 {
            // Too few to be worth sorting.
            for (i, &hash) in batch.hashes.iter().enumerate() {
                let tuple = &batch.tuples[i * arity..(i + 1) * arity];
                self.insert_hashed(committed, hash, tuple);
            }
        } else {
            // Sort by the top (at most) 16 bits of the position.
            let buckets = (self.table.capacity() / 7 * 8 + 1).next_power_of_two() as u64;
            let shift = buckets.trailing_zeros().saturating_sub(16);
            batch.sort_by(|h| ((h & (buckets - 1)) >> shift) as u16);
            for &i in &batch.order {
                let i = i as usize;
                let tuple = &batch.tuples[i * arity..(i + 1) * arity];
                self.insert_hashed(committed, batch.hashes[i], tuple);
            }
        }
        batch.tuples.clear();
        batch.hashes.clear();
    }
}

/// Derived tuples waiting to be added to a [`Growing`] set, with their hashes.
#[derive(Debug, Default)]
pub struct Batch {
    tuples: Vec<u32>,
    hashes: Vec<u64>,
    /// Sorting buffers.
    order: Vec<u32>,
    spare: Vec<u32>,
}

impl Batch {
    /// Drop the queued tuples.
    pub fn clear(&mut self) {
        self.tuples.clear();
        self.hashes.clear();
    }

    #[inline]
    pub fn push(&mut self, hash: u64, tuple: &[u32]) {
        self.tuples.extend_from_slice(tuple);
        self.hashes.push(hash);
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Set `order` to the indexes of the tuples sorted by `key(hash)` (a 16-bit key):
    /// a least-significant-digit radix sort, two passes of 8 bits.
    fn sort_by(&mut self, key: impl Fn(u64) -> u16) {
        let n = self.hashes.len();
        self.order.clear();
        self.order.extend(0..n as u32);
        self.spare.clear();
        self.spare.resize(n, 0);
        for shift in [0, 8] {
            let digit = |i: u32| (key(self.hashes[i as usize]) >> shift) as usize & 0xff;
            let mut start = [0usize; 256];
            for &i in &self.order {
                start[digit(i)] += 1;
            }
            let mut sum = 0;
            for s in start.iter_mut() {
                (*s, sum) = (sum, sum + *s);
            }
            for &i in &self.order {
                let d = digit(i);
                self.spare[start[d]] = i;
                start[d] += 1;
            }
            std::mem::swap(&mut self.order, &mut self.spare);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growing_over_committed_and_fresh_rows() {
        let mut base = FlatSet::new(2);
        base.insert(&[1, 2]);
        base.insert(&[2, 3]);
        let mut committed = base.rows().clone();
        let mut g = Growing::from_base(&base);
        let h = |t: &[u32]| hash_values(t.iter().copied());
        assert!(!g.insert_hashed(&committed, h(&[1, 2]), &[1, 2]));
        assert!(g.insert_hashed(&committed, h(&[3, 4]), &[3, 4]));
        assert!(!g.insert_hashed(&committed, h(&[3, 4]), &[3, 4]));
        // Enough fresh rows to make the table grow (rehashing committed and fresh rows).
        for i in 10..200 {
            assert!(g.insert_hashed(&committed, h(&[i, i]), &[i, i]));
        }
        let find = |g: &Growing, c: &Rows, t: &[u32]| g.find_with(c, h(t), |row| row == t);
        assert_eq!(find(&g, &committed, &[2, 3]), Some(1));
        assert_eq!(find(&g, &committed, &[3, 4]), Some(2));
        assert_eq!(find(&g, &committed, &[4, 4]), None);
        committed.append(&mut g.fresh);
        assert_eq!(committed.len(), 193);
        assert_eq!(g.fresh.len(), 0);
        assert_eq!(committed.row(2), &[3, 4]);
        assert_eq!(find(&g, &committed, &[199, 199]), Some(192));
        assert!(g.insert_hashed(&committed, h(&[7, 8]), &[7, 8]));
        assert_eq!(find(&g, &committed, &[7, 8]), Some(193));
    }

    #[test]
    fn batched_insertion_deduplicates() {
        let committed = Rows::new(2);
        let mut g = Growing::from_base(&FlatSet::new(2));
        let mut batch = Batch::default();
        // Sorted path: a batch larger than the sorting threshold, with duplicates
        // inside the batch and across batches.
        for round in 0..3u32 {
            for i in 0..20_000u32 {
                let t = [i % 7_000, round.min(1)];
                batch.push(hash_values(t), &t);
            }
            g.insert_batch(&committed, &mut batch);
            assert_eq!(batch.len(), 0);
        }
        assert_eq!(g.fresh.len(), 14_000);
        let mut all: Vec<Vec<u32>> = g.fresh.iter().map(<[u32]>::to_vec).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 14_000);
        // Unsorted path.
        batch.push(hash_values([1, 1]), &[1, 1]);
        batch.push(hash_values([9_999, 9]), &[9_999, 9]);
        g.insert_batch(&committed, &mut batch);
        assert_eq!(g.fresh.len(), 14_001);
    }
}
