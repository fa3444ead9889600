//! [`IndexedSet`]: a set of tuples that supports deletion, with hash indexes maintained
//! on every change.

use super::{Index, Rows, hash_values, same};
use hashbrown::HashTable;

/// A set of tuples of one arity, with hash indexes on the given column sets.
///
/// The tuples live in [`Rows`] used as a slab: a deleted row's id is reused by the next
/// insertion, so row ids are stable and the indexes never move an id. A hash set of row
/// ids (hashed by the row's values) answers membership; each [`Index`] maps the values of
/// some columns to the ids of the rows having them, in no particular order. The indexes
/// are maintained on every insertion and deletion, so a set can be read at any time.
#[derive(Clone, Debug, Default)]
pub struct IndexedSet {
    /// Slab rows, live or free.
    rows: Rows,
    free: Vec<u32>,
    set: HashTable<u32>,
    indexes: Vec<Index>,
}

impl IndexedSet {
    /// An empty set without indexes.
    pub fn new(arity: usize) -> IndexedSet {
        IndexedSet::with_indexes(arity, &[])
    }

    /// An empty set with one index per column set of `specs` (index `i` is `specs[i]`).
    pub fn with_indexes(arity: usize, specs: &[Box<[usize]>]) -> IndexedSet {
        IndexedSet {
            rows: Rows::new(arity),
            indexes: specs.iter().map(|cols| Index::new(cols.clone())).collect(),
            ..IndexedSet::default()
        }
    }

    pub fn arity(&self) -> usize {
        self.rows.arity()
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The values of row `id` (an id from [`IndexedSet::lookup`]).
    #[inline]
    pub fn row(&self, id: u32) -> &[u32] {
        self.rows.row(id)
    }

    /// Every tuple, in no particular order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            rows: &self.rows,
            ids: self.set.iter(),
        }
    }

    /// The slab the ids of [`IndexedSet::lookup`] point into (free rows included).
    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    pub fn contains(&self, tuple: &[u32]) -> bool {
        tuple.len() == self.arity()
            && self
                .set
                .find(hash_values(tuple.iter().copied()), |&id| {
                    same(self.rows.row(id), tuple)
                })
                .is_some()
    }

    /// Add `tuple` (of the set's arity) unless present; whether it was added.
    pub fn insert(&mut self, tuple: &[u32]) -> bool {
        if tuple.len() != self.arity() || self.contains(tuple) {
            return false;
        }
        let id = match self.free.pop() {
            Some(id) => {
                self.rows.set(id, tuple);
                id
            }
            None => self.rows.push(tuple),
        };
        let rows = &self.rows;
        self.set
            .insert_unique(hash_values(tuple.iter().copied()), id, |&i| {
                hash_values(rows.row(i).iter().copied())
            });
        for ix in &mut self.indexes {
            ix.add(rows, id);
        }
        true
    }

    /// Remove `tuple` if present; whether it was present.
    pub fn remove(&mut self, tuple: &[u32]) -> bool {
        if tuple.len() != self.arity() {
            return false;
        }
        let rows = &self.rows;
        let hash = hash_values(tuple.iter().copied());
        let Ok(entry) = self.set.find_entry(hash, |&id| same(rows.row(id), tuple)) else {
            return false;
        };
        let (id, _) = entry.remove();
        for ix in &mut self.indexes {
            ix.remove(rows, id);
        }
        self.free.push(id);
        true
    }

    /// The ids of the rows whose columns of index number `index` equal `key`.
    #[inline]
    pub fn lookup(&self, index: usize, key: &[u32]) -> &[u32] {
        match self.indexes.get(index) {
            Some(ix) => ix.lookup(&self.rows, key),
            None => &[],
        }
    }
}

/// The tuples of an [`IndexedSet`], in no particular order.
pub struct Iter<'a> {
    rows: &'a Rows,
    ids: hashbrown::hash_table::Iter<'a, u32>,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u32];

    #[inline]
    fn next(&mut self) -> Option<&'a [u32]> {
        self.ids.next().map(|&id| self.rows.row(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(s: &IndexedSet) -> Vec<Vec<u32>> {
        let mut v: Vec<Vec<u32>> = s.iter().map(<[u32]>::to_vec).collect();
        v.sort();
        v
    }

    #[test]
    fn insert_remove_and_indexes() {
        let mut s = IndexedSet::with_indexes(2, &[vec![0].into(), vec![1].into()]);
        for (a, b) in [(1, 1), (1, 2), (2, 2), (3, 1)] {
            assert!(s.insert(&[a, b]));
        }
        assert!(!s.insert(&[1, 2]));
        assert!(!s.insert(&[1]), "wrong arity");
        let ids = |s: &IndexedSet, ix: usize, k: u32| {
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
    fn nullary_set() {
        let mut s = IndexedSet::new(0);
        assert!(s.insert(&[]));
        assert!(!s.insert(&[]));
        assert_eq!(s.len(), 1);
        assert!(s.remove(&[]));
        assert!(s.is_empty());
        assert!(s.insert(&[]));
        assert_eq!(sorted(&s), vec![Vec::<u32>::new()]);
    }
}
