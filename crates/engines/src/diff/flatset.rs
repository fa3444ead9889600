//! A compact set of fixed-arity rows: the values in one flat `Vec<u32>` (stride =
//! arity), a hash table of row numbers on the side. Removal moves the last row into the
//! hole, so the rows stay dense. About `4 * arity + 4` bytes per row plus the table's
//! slack; no allocation per row.

use hashbrown::HashTable;
use std::hash::{BuildHasher, Hasher};

#[derive(Clone, Debug, Default)]
pub(crate) struct FlatSet {
    arity: usize,
    rows: Vec<u32>,
    /// Number of rows (needed for arity 0, where `rows` stays empty).
    len: usize,
    table: HashTable<u32>,
}

fn hash_row(row: &[u32]) -> u64 {
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    for &v in row {
        h.write_u32(v);
    }
    h.finish()
}

impl FlatSet {
    pub(crate) fn new(arity: usize) -> FlatSet {
        FlatSet {
            arity,
            ..FlatSet::default()
        }
    }

    pub(crate) fn arity(&self) -> usize {
        self.arity
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn row(&self, i: usize) -> &[u32] {
        &self.rows[i * self.arity..(i + 1) * self.arity]
    }

    pub(crate) fn contains(&self, row: &[u32]) -> bool {
        let h = hash_row(row);
        self.table
            .find(h, |&i| self.row(i as usize) == row)
            .is_some()
    }

    /// Insert; `false` if already present.
    pub(crate) fn insert(&mut self, row: &[u32]) -> bool {
        debug_assert_eq!(row.len(), self.arity);
        let h = hash_row(row);
        let (rows, arity) = (&self.rows, self.arity);
        let eq = |&i: &u32| &rows[i as usize * arity..(i as usize + 1) * arity] == row;
        if self.table.find(h, eq).is_some() {
            return false;
        }
        let idx = self.len as u32;
        let (rows, arity) = (&self.rows, self.arity);
        self.table.insert_unique(h, idx, |&i| {
            hash_row(&rows[i as usize * arity..(i as usize + 1) * arity])
        });
        self.rows.extend_from_slice(row);
        self.len += 1;
        true
    }

    /// Remove; `false` if absent.
    pub(crate) fn remove(&mut self, row: &[u32]) -> bool {
        let h = hash_row(row);
        let (rows, arity) = (&self.rows, self.arity);
        let Ok(entry) = self.table.find_entry(h, |&i| {
            &rows[i as usize * arity..(i as usize + 1) * arity] == row
        }) else {
            return false;
        };
        let (idx, _) = entry.remove();
        let idx = idx as usize;
        let last = self.len - 1;
        if idx != last {
            // Move the last row into the hole and repoint its table entry.
            let lh = hash_row(self.row(last));
            let (rows, arity) = (&self.rows, self.arity);
            let last_row = &rows[last * arity..(last + 1) * arity];
            if let Some(slot) = self.table.find_mut(lh, |&i| {
                i as usize == last
                    && &rows[i as usize * arity..(i as usize + 1) * arity] == last_row
            }) {
                *slot = idx as u32;
            }
            self.rows
                .copy_within(last * arity..(last + 1) * arity, idx * arity);
        }
        self.rows.truncate(last * self.arity);
        self.len = last;
        true
    }

    /// All rows, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.len).map(move |i| self.row(i))
    }
}

#[cfg(test)]
mod tests {
    use super::FlatSet;

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
        let mut z = FlatSet::new(0);
        assert!(z.insert(&[]));
        assert!(!z.insert(&[]));
        assert_eq!(z.len(), 1);
        assert!(z.remove(&[]));
        assert_eq!(z.len(), 0);
    }
}
