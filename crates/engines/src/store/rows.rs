//! [`Rows`]: the tuples of one relation in one `Vec<u32>`, row after row.

/// The tuples of one relation, stored flat: row `r` is `data[r * arity..(r + 1) *
/// arity]`. A row is named by its id, its position. Nullary relations keep an explicit
/// row count since they have no data.
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

    pub fn arity(&self) -> usize {
        self.arity
    }

    /// The allocated bytes of the rows.
    pub fn heap_bytes(&self) -> u64 {
        (self.data.capacity() * std::mem::size_of::<u32>()) as u64
    }

    /// Number of rows.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The values of row `r` (`r < len`).
    #[inline]
    pub fn row(&self, r: u32) -> &[u32] {
        let start = r as usize * self.arity;
        &self.data[start..start + self.arity]
    }

    /// The values of every row, one row after the other.
    pub fn into_values(self) -> Vec<u32> {
        self.data
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u32]> {
        (0..self.len).map(|r| self.row(r))
    }

    /// Make room for `additional` more rows at once (exactly: a set filled with a
    /// known number of rows does not grow by steps past it).
    pub fn reserve(&mut self, additional: usize) {
        self.data
            .reserve_exact(additional.saturating_mul(self.arity));
    }

    /// Append `tuple` (of the arity); its id.
    pub(crate) fn push(&mut self, tuple: &[u32]) -> u32 {
        debug_assert_eq!(tuple.len(), self.arity);
        let id = self.len;
        // By a quarter once large: a relation's rows are one of the largest parts of
        // every engine, and live as long as its facts.
        super::reserve_quarter(&mut self.data, tuple.len());
        self.data.extend_from_slice(tuple);
        self.len += 1;
        id
    }

    /// Overwrite row `r` (`r < len`) with `tuple`.
    pub(crate) fn set(&mut self, r: u32, tuple: &[u32]) {
        let start = r as usize * self.arity;
        self.data[start..start + self.arity].copy_from_slice(tuple);
    }

    /// Remove row `r` by moving the last row into its place; the id of the moved row
    /// (`len - 1` after the call), or `None` if `r` was the last one.
    pub(crate) fn swap_remove(&mut self, r: u32) -> Option<u32> {
        let last = self.len - 1;
        let moved = (r != last).then(|| {
            let a = self.arity;
            let start = last as usize * a;
            self.data.copy_within(start..start + a, r as usize * a);
            last
        });
        self.data.truncate(last as usize * self.arity);
        self.len = last;
        moved
    }

    /// Move the rows of `other` to the end of `self`.
    pub fn append(&mut self, other: &mut Rows) {
        self.data.append(&mut other.data);
        self.len += other.len;
        other.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_double_while_small_and_grow_by_a_quarter_once_large() {
        let mut rows = Rows::new(2);
        rows.push(&[1, 2]);
        assert_eq!(rows.data.capacity(), 1024, "a first block of 4 KiB");
        // 256 KiB of rows (65,536 words): doubled up to there.
        while rows.data.len() < 65536 {
            rows.push(&[3, 4]);
        }
        let cap = rows.data.capacity();
        assert_eq!(cap, 65536);
        rows.push(&[5, 6]);
        assert_eq!(rows.data.capacity(), 65536 + 16384, "a quarter more");
        assert_eq!(rows.len(), 32769);
        assert_eq!(rows.row(32768), &[5, 6]);
    }
}
