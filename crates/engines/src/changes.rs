//! The changes a commit made, packed: [`ChangeList`].
//!
//! A commit that loads a large input changes as many facts as the materialization
//! holds (24.7M on tc over rand5k). Kept as one `(relation, Vec<Value>, sign)` per
//! fact, that was a heap allocation per fact and 56 bytes or more besides the values
//! (the vector's header, the relation and sign, the allocator's own words): a session
//! that loaded rand5k held 6.4 GB where `run` needed 1.3 GB. Here the values of every
//! change are in one vector and each change is 16 bytes beside them.

use crate::Change;
use dynalog_analysis::{RelId, Value};
use std::fmt;

/// One change's place in the list: its relation, its sign and where its values start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    rel: RelId,
    diff: i32,
    start: usize,
}

/// The changes of a commit, one entry per fact: `(relation, values, +1 or -1)`, in the
/// order they were pushed. Iterating gives `(RelId, &[Value], isize)`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ChangeList {
    heads: Vec<Head>,
    values: Vec<Value>,
}

impl ChangeList {
    pub fn new() -> ChangeList {
        ChangeList::default()
    }

    /// Add a change: `diff` is `+1` (the fact appeared) or `-1` (it disappeared).
    pub fn push(&mut self, rel: RelId, tuple: &[Value], diff: isize) {
        debug_assert!(diff == 1 || diff == -1, "a change is +1 or -1, not {diff}");
        self.heads.push(Head {
            rel,
            diff: diff.signum() as i32,
            start: self.values.len(),
        });
        self.values.extend_from_slice(tuple);
    }

    pub fn len(&self) -> usize {
        self.heads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// Forget every change (the memory is kept for the next commit's).
    pub fn clear(&mut self) {
        self.heads.clear();
        self.values.clear();
    }

    /// The `i`th change. Panics if `i >= len()`.
    pub fn get(&self, i: usize) -> (RelId, &[Value], isize) {
        let h = self.heads[i];
        let end = self.heads.get(i + 1).map_or(self.values.len(), |n| n.start);
        (h.rel, &self.values[h.start..end], h.diff as isize)
    }

    /// Every change, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (RelId, &[Value], isize)> + '_ {
        (0..self.heads.len()).map(|i| self.get(i))
    }

    /// The number of insertions and of deletions among the changes of the relations
    /// `keep` accepts.
    pub fn counts(&self, mut keep: impl FnMut(RelId) -> bool) -> (usize, usize) {
        let (mut ins, mut del) = (0, 0);
        for h in &self.heads {
            if keep(h.rel) {
                if h.diff > 0 {
                    ins += 1;
                } else {
                    del += 1;
                }
            }
        }
        (ins, del)
    }

    /// The changes as a vector of their own per fact (for tests and small lists).
    pub fn to_vec(&self) -> Vec<Change> {
        self.iter().map(|(r, t, d)| (r, t.to_vec(), d)).collect()
    }

    /// Give back the memory the list does not use (for a list kept long).
    pub fn shrink_to_fit(&mut self) {
        self.heads.shrink_to_fit();
        self.values.shrink_to_fit();
    }

    /// The heap bytes a list of `changes` changes of `values` values in all takes at
    /// least (what [`ChangeList::bytes`] gives once shrunk): what a caller can know
    /// before building one.
    pub fn packed_bytes(changes: usize, values: usize) -> usize {
        changes
            .saturating_mul(std::mem::size_of::<Head>())
            .saturating_add(values.saturating_mul(std::mem::size_of::<Value>()))
    }

    /// Heap bytes held (capacity, not length).
    pub fn bytes(&self) -> usize {
        self.heads.capacity() * std::mem::size_of::<Head>()
            + self.values.capacity() * std::mem::size_of::<Value>()
    }
}

impl fmt::Debug for ChangeList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> FromIterator<(RelId, &'a [Value], isize)> for ChangeList {
    fn from_iter<I: IntoIterator<Item = (RelId, &'a [Value], isize)>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut list = ChangeList {
            heads: Vec::with_capacity(iter.size_hint().0),
            values: Vec::new(),
        };
        for (r, t, d) in iter {
            list.push(r, t, d);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_of_different_widths_come_back_as_pushed() {
        let mut list = ChangeList::new();
        assert!(list.is_empty());
        list.push(3, &[1, 2], 1);
        list.push(0, &[], -1);
        list.push(7, &[9, 8, 7], -1);
        list.push(3, &[4], 1);
        assert_eq!(list.len(), 4);
        assert_eq!(list.get(1), (0, &[][..], -1));
        assert_eq!(
            list.to_vec(),
            vec![
                (3, vec![1, 2], 1),
                (0, vec![], -1),
                (7, vec![9, 8, 7], -1),
                (3, vec![4], 1)
            ]
        );
        assert_eq!(list.counts(|_| true), (2, 2));
        assert_eq!(list.counts(|r| r == 3), (2, 0));
        let copy: ChangeList = list.iter().filter(|c| c.0 != 0).collect();
        assert_eq!(copy.to_vec().len(), 3);
        assert_eq!(
            format!("{copy:?}"),
            "[(3, [1, 2], 1), (7, [9, 8, 7], -1), (3, [4], 1)]"
        );
        // Shrunk, a list takes what its size says beforehand.
        let mut shrunk = copy.clone();
        shrunk.shrink_to_fit();
        assert_eq!(shrunk.bytes(), ChangeList::packed_bytes(3, 6));
        list.clear();
        assert!(list.is_empty());
        assert_eq!(list.iter().count(), 0);
    }
}
