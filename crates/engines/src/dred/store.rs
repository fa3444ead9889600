//! A set of tuples that supports deletion, with optional hash indexes.
//!
//! Tuples live in a slab (`Vec<u32>`, stride = arity); a deleted row's id is reused by
//! the next insertion. A hash set of row ids (hashed by the row's values) answers
//! membership; each [`Index`] maps the values of some columns (the key) to the ids of
//! the rows having them, in no particular order. Indexes are maintained on every
//! insertion and deletion, so a store can be read at any time.

use crate::seminaive::store::{hash_values, same};
use hashbrown::HashTable;

/// A set of tuples of one arity, with hash indexes on the given column sets.
#[derive(Clone, Debug, Default)]
pub struct Store {
    arity: usize,
    data: Vec<u32>,
    /// Slab rows allocated (live or free); needed for arity 0, which has no data.
    rows: u32,
    free: Vec<u32>,
    set: HashTable<u32>,
    indexes: Vec<Index>,
}

#[derive(Clone, Debug)]
struct Index {
    cols: Box<[usize]>,
    /// Buckets of row ids, never empty; a bucket's key is the projection of its first row.
    table: HashTable<Vec<u32>>,
}

#[inline]
fn slab_row(data: &[u32], arity: usize, id: u32) -> &[u32] {
    let start = id as usize * arity;
    &data[start..start + arity]
}

impl Store {
    /// An empty store without indexes.
    pub fn new(arity: usize) -> Store {
        Store {
            arity,
            ..Store::default()
        }
    }

    /// An empty store with one index per column set of `specs` (index `i` is `specs[i]`).
    pub fn with_indexes(arity: usize, specs: &[Box<[usize]>]) -> Store {
        Store {
            arity,
            indexes: specs
                .iter()
                .map(|cols| Index {
                    cols: cols.clone(),
                    table: HashTable::new(),
                })
                .collect(),
            ..Store::default()
        }
    }

    pub fn arity(&self) -> usize {
        self.arity
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    #[inline]
    pub fn row(&self, id: u32) -> &[u32] {
        slab_row(&self.data, self.arity, id)
    }

    /// Every tuple, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> {
        self.set.iter().map(|&id| self.row(id))
    }

    pub fn contains(&self, tuple: &[u32]) -> bool {
        tuple.len() == self.arity
            && self
                .set
                .find(hash_values(tuple.iter().copied()), |&id| {
                    same(self.row(id), tuple)
                })
                .is_some()
    }

    /// Add `tuple` (of the store's arity) unless present; whether it was added.
    pub fn insert(&mut self, tuple: &[u32]) -> bool {
        if tuple.len() != self.arity || self.contains(tuple) {
            return false;
        }
        let arity = self.arity;
        let id = match self.free.pop() {
            Some(id) => {
                let start = id as usize * arity;
                self.data[start..start + arity].copy_from_slice(tuple);
                id
            }
            None => {
                self.data.extend_from_slice(tuple);
                self.rows += 1;
                self.rows - 1
            }
        };
        let data = &self.data;
        self.set
            .insert_unique(hash_values(tuple.iter().copied()), id, |&i| {
                hash_values(slab_row(data, arity, i).iter().copied())
            });
        for ix in &mut self.indexes {
            ix.add(data, arity, id);
        }
        true
    }

    /// Remove `tuple` if present; whether it was present.
    pub fn remove(&mut self, tuple: &[u32]) -> bool {
        if tuple.len() != self.arity {
            return false;
        }
        let (data, arity) = (&self.data, self.arity);
        let hash = hash_values(tuple.iter().copied());
        let Ok(entry) = self
            .set
            .find_entry(hash, |&id| same(slab_row(data, arity, id), tuple))
        else {
            return false;
        };
        let (id, _) = entry.remove();
        for ix in &mut self.indexes {
            ix.remove(data, arity, id);
        }
        self.free.push(id);
        true
    }

    /// The ids of the rows whose columns of index number `index` equal `key`.
    #[inline]
    pub fn lookup(&self, index: usize, key: &[u32]) -> &[u32] {
        let Some(ix) = self.indexes.get(index) else {
            return &[];
        };
        let hash = hash_values(key.iter().copied());
        let found = ix.table.find(hash, |bucket| {
            let row = self.row(bucket[0]);
            ix.cols.iter().zip(key).all(|(&c, &k)| row[c] == k)
        });
        match found {
            Some(bucket) => bucket,
            None => &[],
        }
    }
}

impl Index {
    fn key_hash(&self, row: &[u32]) -> u64 {
        hash_values(self.cols.iter().map(|&c| row[c]))
    }

    fn add(&mut self, data: &[u32], arity: usize, id: u32) {
        let row = slab_row(data, arity, id);
        let hash = self.key_hash(row);
        let cols = &self.cols;
        let same_key = |b: &Vec<u32>| {
            cols.iter()
                .all(|&c| slab_row(data, arity, b[0])[c] == row[c])
        };
        match self.table.find_mut(hash, same_key) {
            Some(bucket) => bucket.push(id),
            None => {
                let cols = &self.cols;
                self.table.insert_unique(hash, vec![id], |b| {
                    let first = slab_row(data, arity, b[0]);
                    hash_values(cols.iter().map(|&c| first[c]))
                });
            }
        }
    }

    fn remove(&mut self, data: &[u32], arity: usize, id: u32) {
        let row = slab_row(data, arity, id);
        let hash = self.key_hash(row);
        let found = self.table.find_entry(hash, |b| {
            self.cols
                .iter()
                .all(|&c| slab_row(data, arity, b[0])[c] == row[c])
        });
        if let Ok(mut entry) = found {
            let bucket = entry.get_mut();
            if let Some(pos) = bucket.iter().position(|&x| x == id) {
                bucket.swap_remove(pos);
            }
            if bucket.is_empty() {
                entry.remove();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(s: &Store) -> Vec<Vec<u32>> {
        let mut v: Vec<Vec<u32>> = s.iter().map(<[u32]>::to_vec).collect();
        v.sort();
        v
    }

    #[test]
    fn insert_remove_and_indexes() {
        let mut s = Store::with_indexes(2, &[vec![0].into(), vec![1].into()]);
        for (a, b) in [(1, 1), (1, 2), (2, 2), (3, 1)] {
            assert!(s.insert(&[a, b]));
        }
        assert!(!s.insert(&[1, 2]));
        assert!(!s.insert(&[1]), "wrong arity");
        let ids = |s: &Store, ix: usize, k: u32| {
            let mut v: Vec<Vec<u32>> = s
                .lookup(ix, &[k])
                .iter()
                .map(|&id| s.row(id).to_vec())
                .collect();
            v.sort();
            v
        };
        assert_eq!(ids(&s, 0, 1), vec![vec![1, 1], vec![1, 2]]);
        assert_eq!(ids(&s, 1, 2), vec![vec![1, 2], vec![2, 2]]);
        assert!(s.remove(&[1, 2]));
        assert!(!s.remove(&[1, 2]));
        assert_eq!(ids(&s, 0, 1), vec![vec![1, 1]]);
        assert_eq!(ids(&s, 1, 2), vec![vec![2, 2]]);
        assert!(s.remove(&[1, 1]));
        assert_eq!(ids(&s, 0, 1), Vec::<Vec<u32>>::new());
        // The freed slot is reused, and indexed again.
        assert!(s.insert(&[1, 7]));
        assert_eq!(ids(&s, 0, 1), vec![vec![1, 7]]);
        assert_eq!(sorted(&s), vec![vec![1, 7], vec![2, 2], vec![3, 1]]);
        assert_eq!(s.len(), 3);
        assert!(s.contains(&[3, 1]) && !s.contains(&[1, 1]));
    }

    #[test]
    fn nullary_store() {
        let mut s = Store::new(0);
        assert!(s.insert(&[]));
        assert!(!s.insert(&[]));
        assert_eq!(s.len(), 1);
        assert!(s.remove(&[]));
        assert!(s.is_empty());
        assert!(s.insert(&[]));
        assert_eq!(sorted(&s), vec![Vec::<u32>::new()]);
    }
}
