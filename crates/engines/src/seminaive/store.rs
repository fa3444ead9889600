//! Flat tuple storage for the semi-naive evaluator.
//!
//! * [`Rows`]: the tuples of one relation in one `Vec<u32>`, row after row (stride =
//!   arity). A row is named by its id, its position in insertion order. Nullary
//!   relations keep an explicit row count since they have no data.
//! * [`FlatSet`]: [`Rows`] plus a hash set of row ids (a [`HashTable<u32>`] whose hash is
//!   recomputed from the row's values), so that a tuple is stored once. It holds the
//!   base facts; [`FlatSet::remove`] moves the last row into the hole.
//! * [`Growing`]: the deduplication set of a relation during an evaluation, over rows
//!   split in two: the rows readable by the rules of the current round ("committed")
//!   and those derived in this round ("fresh", appended to the committed ones at the end
//!   of the round). Deriving a tuple is a single probe-or-insert in that set.
//! * [`Index`]: for one set of columns of a relation, a map from the values of those
//!   columns (the key) to the ascending ids of the rows having them. The key is not
//!   stored: it is read from the bucket's first row. An index covers rows
//!   `0..upto` and is brought up to date with [`Index::catch_up`] before it is read.
//!
//! Every hash is [`hash_values`] of the values concerned, in column order, so a key made
//! of variable bindings hashes like the projection of a matching row.

use hashbrown::HashTable;
use rustc_hash::FxHasher;
use std::hash::Hasher;

/// The hash of a sequence of values (a row, or a projection of a row onto key columns).
#[inline]
pub fn hash_values(values: impl IntoIterator<Item = u32>) -> u64 {
    let mut h = FxHasher::default();
    for v in values {
        h.write_u32(v);
    }
    h.finish()
}

/// Whether two rows of the same arity are equal (a loop: rows are short).
#[inline]
pub fn same(a: &[u32], b: &[u32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// The tuples of one relation, stored flat.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    arity: usize,
    data: Vec<u32>,
    len: u32,
}

impl Rows {
    pub fn new(arity: usize) -> Rows {
        Rows {
            arity,
            data: Vec::new(),
            len: 0,
        }
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// The values of row `r` (`r < len`).
    #[inline]
    pub fn row(&self, r: u32) -> &[u32] {
        let start = r as usize * self.arity;
        &self.data[start..start + self.arity]
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u32]> {
        (0..self.len).map(|r| self.row(r))
    }

    fn push(&mut self, tuple: &[u32]) -> u32 {
        debug_assert_eq!(tuple.len(), self.arity);
        let id = self.len;
        self.data.extend_from_slice(tuple);
        self.len += 1;
        id
    }

    /// Move the rows of `other` to the end of `self`.
    pub fn append(&mut self, other: &mut Rows) {
        self.data.append(&mut other.data);
        self.len += other.len;
        other.len = 0;
    }
}

/// A set of tuples: flat rows plus a hash set of row ids.
#[derive(Clone, Debug, Default)]
pub struct FlatSet {
    rows: Rows,
    table: HashTable<u32>,
}

impl FlatSet {
    pub fn new(arity: usize) -> FlatSet {
        FlatSet {
            rows: Rows::new(arity),
            table: HashTable::new(),
        }
    }

    pub fn arity(&self) -> usize {
        self.rows.arity
    }

    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// Add `tuple` unless present; whether it was added.
    pub fn insert(&mut self, tuple: &[u32]) -> bool {
        let hash = hash_values(tuple.iter().copied());
        let rows = &mut self.rows;
        let entry = self.table.entry(
            hash,
            |&r| same(rows.row(r), tuple),
            |&r| hash_values(rows.row(r).iter().copied()),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(_) => false,
            hashbrown::hash_table::Entry::Vacant(v) => {
                v.insert(rows.push(tuple));
                true
            }
        }
    }

    /// Remove `tuple` if present (the last row takes its id); whether it was present.
    pub fn remove(&mut self, tuple: &[u32]) -> bool {
        let rows = &mut self.rows;
        let hash = hash_values(tuple.iter().copied());
        let Ok(entry) = self.table.find_entry(hash, |&r| same(rows.row(r), tuple)) else {
            return false;
        };
        let (r, _) = entry.remove();
        let last = rows.len - 1;
        if r != last {
            let last_hash = hash_values(rows.row(last).iter().copied());
            if let Some(slot) = self.table.find_mut(last_hash, |&x| x == last) {
                *slot = r;
            }
            let a = rows.arity;
            let start = last as usize * a;
            rows.data.copy_within(start..start + a, r as usize * a);
        }
        rows.data.truncate(last as usize * rows.arity);
        rows.len = last;
        true
    }
}

/// Row `r` of the concatenation of `committed` and `fresh`.
#[inline]
fn split_row<'a>(committed: &'a Rows, fresh: &'a Rows, r: u32) -> &'a [u32] {
    match r.checked_sub(committed.len) {
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
                v.insert(committed.len + fresh.push(tuple));
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
        let arity = self.fresh.arity;
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

/// A hash index of a relation on some of its columns.
#[derive(Clone, Debug)]
pub struct Index {
    cols: Box<[usize]>,
    /// Buckets of ascending row ids, never empty; a bucket's key is the projection of its
    /// first row onto `cols`.
    table: HashTable<Vec<u32>>,
    /// Rows `0..upto` are indexed.
    upto: u32,
}

impl Index {
    pub fn new(cols: Box<[usize]>) -> Index {
        Index {
            cols,
            table: HashTable::new(),
            upto: 0,
        }
    }

    /// Index the rows of `set` added since the last call.
    pub fn catch_up(&mut self, set: &Rows) {
        let cols = &self.cols;
        let project = |r: u32| {
            let row = set.row(r);
            cols.iter().map(move |&c| row[c])
        };
        for r in self.upto..set.len() {
            let hash = hash_values(project(r));
            let same_key = |bucket: &Vec<u32>| project(bucket[0]).eq(project(r));
            match self.table.find_mut(hash, same_key) {
                Some(bucket) => bucket.push(r),
                None => {
                    self.table
                        .insert_unique(hash, vec![r], |b| hash_values(project(b[0])));
                }
            }
        }
        self.upto = set.len();
    }

    /// The ascending ids of the rows whose key hashes to `hash` and satisfies `eq`
    /// (called with the row; it must compare the key columns only).
    #[inline]
    pub fn get<'s>(&'s self, set: &Rows, hash: u64, eq: impl Fn(&[u32]) -> bool) -> &'s [u32] {
        match self.table.find(hash, |bucket| eq(set.row(bucket[0]))) {
            Some(bucket) => bucket,
            None => &[],
        }
    }
}

/// The part of an ascending list of row ids that lies in `lo..hi`.
#[inline]
pub fn restrict(ids: &[u32], lo: u32, hi: u32) -> &[u32] {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return ids;
    };
    let start = if first >= lo {
        0
    } else {
        ids.partition_point(|&r| r < lo)
    };
    let end = if last < hi {
        ids.len()
    } else {
        ids.partition_point(|&r| r < hi)
    };
    if start >= end { &[] } else { &ids[start..end] }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(rows: &Rows) -> Vec<Vec<u32>> {
        let mut all: Vec<Vec<u32>> = rows.iter().map(<[u32]>::to_vec).collect();
        all.sort();
        all
    }

    #[test]
    fn insert_and_remove() {
        let mut s = FlatSet::new(2);
        assert!(s.insert(&[1, 2]));
        assert!(!s.insert(&[1, 2]));
        assert!(s.insert(&[3, 4]));
        assert!(s.insert(&[5, 6]));
        assert_eq!(s.rows().len(), 3);
        assert!(s.remove(&[1, 2]));
        assert!(!s.remove(&[1, 2]));
        assert_eq!(sorted(s.rows()), vec![vec![3, 4], vec![5, 6]]);
        // The last row moved into the hole and can still be found.
        assert!(!s.insert(&[5, 6]));
        assert!(s.insert(&[1, 2]));
        assert_eq!(sorted(s.rows()), vec![vec![1, 2], vec![3, 4], vec![5, 6]]);
        assert!(s.remove(&[1, 2]) && s.remove(&[3, 4]) && s.remove(&[5, 6]));
        assert_eq!(s.rows().len(), 0);
    }

    #[test]
    fn nullary_set() {
        let mut s = FlatSet::new(0);
        assert!(s.insert(&[]));
        assert!(!s.insert(&[]));
        assert_eq!(s.rows().len(), 1);
        assert_eq!(s.rows().row(0), &[] as &[u32]);
        assert!(s.remove(&[]));
        assert_eq!(s.rows().len(), 0);
    }

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

    #[test]
    fn index_and_restrict() {
        let mut s = FlatSet::new(2);
        for (a, b) in [(1, 1), (2, 1), (1, 2), (1, 3), (3, 3)] {
            s.insert(&[a, b]);
        }
        let mut idx = Index::new(vec![0].into());
        idx.catch_up(s.rows());
        let get = |idx: &Index, s: &FlatSet, k: u32| {
            idx.get(s.rows(), hash_values([k]), |row| row[0] == k)
                .to_vec()
        };
        assert_eq!(get(&idx, &s, 1), vec![0, 2, 3]);
        assert_eq!(get(&idx, &s, 4), Vec::<u32>::new());
        s.insert(&[1, 9]);
        idx.catch_up(s.rows());
        assert_eq!(get(&idx, &s, 1), vec![0, 2, 3, 5]);
        let ids = [0, 2, 3, 7, 9];
        assert_eq!(restrict(&ids, 0, 10), &ids);
        assert_eq!(restrict(&ids, 2, 8), &[2, 3, 7]);
        assert_eq!(restrict(&ids, 4, 7), &[] as &[u32]);
        assert_eq!(restrict(&ids, 8, 3), &[] as &[u32]);
    }
}
