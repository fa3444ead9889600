//! [`FlatSet`]: a set of tuples, flat [`Rows`] plus a hash set of row ids.

use super::{Rows, hash_values, same};
use hashbrown::HashTable;

/// A set of tuples: flat rows plus a hash set of row ids (a [`HashTable<u32>`] whose
/// hash is recomputed from the row's values), so that a tuple is stored once. About
/// `4 * arity + 4` bytes per row plus the table's slack; no allocation per row.
/// [`FlatSet::remove`] moves the last row into the hole, so the rows stay dense.
#[derive(Clone, Debug, Default)]
pub struct FlatSet {
    rows: Rows,
    pub(super) table: HashTable<u32>,
}

impl FlatSet {
    pub fn new(arity: usize) -> FlatSet {
        FlatSet {
            rows: Rows::new(arity),
            table: HashTable::new(),
        }
    }

    pub fn arity(&self) -> usize {
        self.rows.arity()
    }

    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// The rows, without the hash table.
    pub fn into_rows(self) -> Rows {
        self.rows
    }

    /// The allocated bytes of the rows and of the table.
    pub fn heap_bytes(&self) -> u64 {
        self.rows.heap_bytes()
            + super::hash_table_bytes(self.table.capacity(), std::mem::size_of::<u32>())
    }

    /// Number of tuples.
    pub fn len(&self) -> usize {
        self.rows.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.rows.len() == 0
    }

    /// Every tuple, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.rows.iter()
    }

    pub fn contains(&self, tuple: &[u32]) -> bool {
        let hash = hash_values(tuple.iter().copied());
        self.table
            .find(hash, |&r| same(self.rows.row(r), tuple))
            .is_some()
    }

    /// Make room for `additional` more tuples at once: their rows and their places
    /// in the table (filling a set of known size, such as a copy of a relation).
    pub fn reserve(&mut self, additional: usize) {
        self.rows.reserve(additional);
        let rows = &self.rows;
        self.table
            .reserve(additional, |&r| hash_values(rows.row(r).iter().copied()));
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
        let last = rows.len() - 1;
        if r != last {
            // Repoint the last row's entry to the hole it moves into.
            let last_hash = hash_values(rows.row(last).iter().copied());
            if let Some(slot) = self.table.find_mut(last_hash, |&x| x == last) {
                *slot = r;
            }
        }
        rows.swap_remove(r);
        true
    }
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
    fn insert_remove_round_trip() {
        let mut s = FlatSet::new(2);
        for i in 0..100u32 {
            assert!(s.insert(&[i, i * 2]));
        }
        assert!(!s.insert(&[3, 6]));
        for i in (0..100u32).step_by(3) {
            assert!(s.remove(&[i, i * 2]));
        }
        assert!(!s.remove(&[0, 0]));
        for i in 0..100u32 {
            assert_eq!(s.contains(&[i, i * 2]), i % 3 != 0);
        }
        assert_eq!(s.len(), 66);
        assert_eq!(s.iter().count(), 66);
    }

    #[test]
    fn a_reserved_set_takes_its_tuples_without_growing() {
        let mut s = FlatSet::new(3);
        assert!(s.insert(&[7, 7, 7]));
        s.reserve(5000);
        let reserved = s.heap_bytes();
        for i in 0..5000u32 {
            assert!(s.insert(&[i, i + 1, i + 2]));
        }
        assert_eq!(s.heap_bytes(), reserved, "no allocation past the reserve");
        assert_eq!(s.len(), 5001);
        assert!(s.contains(&[7, 7, 7]) && s.contains(&[4999, 5000, 5001]));
    }

    #[test]
    fn nullary_set() {
        let mut s = FlatSet::new(0);
        assert!(s.insert(&[]));
        assert!(!s.insert(&[]));
        assert_eq!(s.len(), 1);
        assert_eq!(s.rows().row(0), &[] as &[u32]);
        assert!(s.contains(&[]));
        assert!(s.remove(&[]));
        assert_eq!(s.len(), 0);
        assert!(s.is_empty());
    }
}
