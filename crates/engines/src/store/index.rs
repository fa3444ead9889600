//! [`Index`]: a hash index of a relation's rows on some of their columns.

use super::{Rows, hash_values};
use hashbrown::HashTable;

/// A hash index of a relation on some of its columns: a map from the values of those
/// columns (the key) to the ids of the rows having them. The key is not stored: it is
/// read from the bucket's first row.
///
/// Two ways to keep it up to date: [`Index::catch_up`] indexes the rows appended since
/// the last call (append-only rows, as in semi-naive evaluation: the buckets stay
/// ascending), or [`Index::add`] and [`Index::remove`] follow each change of the rows
/// (then a bucket's order is arbitrary).
#[derive(Clone, Debug)]
pub struct Index {
    cols: Box<[usize]>,
    /// Buckets of row ids, never empty; a bucket's key is the projection of its first
    /// row onto `cols`.
    table: HashTable<Vec<u32>>,
    /// Rows `0..upto` are indexed (for [`Index::catch_up`]).
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

    /// The indexed columns.
    pub fn cols(&self) -> &[usize] {
        &self.cols
    }

    /// Index the rows of `rows` added since the last call.
    pub fn catch_up(&mut self, rows: &Rows) {
        for r in self.upto..rows.len() {
            self.add(rows, r);
        }
        self.upto = rows.len();
    }

    /// Index row `r` of `rows` (not indexed yet).
    #[inline]
    pub fn add(&mut self, rows: &Rows, r: u32) {
        let cols = &self.cols;
        let project = |r: u32| {
            let row = rows.row(r);
            cols.iter().map(move |&c| row[c])
        };
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

    /// Forget row `r` of `rows` (indexed, and still holding its values).
    pub fn remove(&mut self, rows: &Rows, r: u32) {
        let cols = &self.cols;
        let row = rows.row(r);
        let hash = hash_values(cols.iter().map(|&c| row[c]));
        let found = self.table.find_entry(hash, |b| {
            let first = rows.row(b[0]);
            cols.iter().all(|&c| first[c] == row[c])
        });
        if let Ok(mut entry) = found {
            let bucket = entry.get_mut();
            if let Some(pos) = bucket.iter().position(|&x| x == r) {
                bucket.swap_remove(pos);
            }
            if bucket.is_empty() {
                entry.remove();
            }
        }
    }

    /// The ids of the rows whose key hashes to `hash` and satisfies `eq` (called with
    /// the row; it must compare the key columns only); ascending if the index is kept
    /// by [`Index::catch_up`].
    #[inline]
    pub fn get<'s>(&'s self, rows: &Rows, hash: u64, eq: impl Fn(&[u32]) -> bool) -> &'s [u32] {
        match self.table.find(hash, |bucket| eq(rows.row(bucket[0]))) {
            Some(bucket) => bucket,
            None => &[],
        }
    }

    /// The ids of the rows whose indexed columns equal `key` (one value per column).
    #[inline]
    pub fn lookup<'s>(&'s self, rows: &Rows, key: &[u32]) -> &'s [u32] {
        let cols = &self.cols;
        self.get(rows, hash_values(key.iter().copied()), |row| {
            cols.iter().zip(key).all(|(&c, &k)| row[c] == k)
        })
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
    use super::super::FlatSet;
    use super::*;

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
