//! Flat row storage, shared by every engine: the tuples of a relation as fixed-arity
//! rows of `u32` (interned [`dynalog_analysis::Value`]s) in one `Vec<u32>`, with hash
//! sets and indexes of row ids on the side.
//!
//! * [`Rows`]: the rows of one relation, flat (stride = arity). A row is named by its
//!   id, its position.
//! * [`FlatSet`]: [`Rows`] plus a hash set of row ids (a `HashTable<u32>` whose hash is
//!   recomputed from the row's values), so that a tuple is stored once;
//!   [`FlatSet::remove`] moves the last row into the hole. The base facts of the
//!   `seminaive` engine, and the `diff` engine's copy of the materialization in a
//!   cluster.
//! * [`SortedSet`]: rows loaded in bulk and changed a little at a time, as one sorted
//!   array searched by bisection, with a bit per removed row and the rows inserted
//!   since in a [`FlatSet`], merged in once they are an eighth of it: the `diff`
//!   engine's base facts, at the size of their rows.
//! * [`Growing`]: the deduplication set of a relation during a semi-naive evaluation,
//!   over rows split in two: the rows readable by the rules of the current round
//!   ("committed") and those derived in this round ("fresh", appended to the committed
//!   ones at the end of the round). Deriving a tuple is a single probe-or-insert in that
//!   set; derived tuples wait in a [`Batch`].
//! * [`Index`]: for one set of columns of a relation, a map from the values of those
//!   columns (the key) to the ids of the rows having them. Kept up to date by
//!   [`Index::catch_up`] over append-only rows (the buckets are then ascending and
//!   [`restrict`] cuts a row-id range out of them), or change by change.
//! * [`IndexedSet`]: a set that supports deletion with its indexes maintained on every
//!   change ([`Rows`] as a slab with a free list): the materialization of the
//!   delete-rederive engines (`relational`, `chibi`); [`IndexedIter`] iterates it.
//!
//! Every hash is [`hash_values`] of the values concerned, in column order, so a key made
//! of variable bindings hashes like the projection of a matching row.

/// Make room in `v` for `additional` more elements: doubling it while it is small (up to
/// 256 KiB), growing it by a quarter beyond. For the vectors that grow to hold every
/// fact (a relation's rows, the `distinct`'s tables, a commit's output), doubling
/// leaves up to half of the largest allocation unused, a quarter at most this way.
/// Growing a vector that large costs no copy: it is a block of its own, mapped, and the
/// allocator remaps its pages (the `dynalog` binary fixes glibc's threshold for that at
/// 256 KiB, see its `process::tune_allocator`).
#[inline]
pub(crate) fn reserve_quarter<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional {
        let len = v.len();
        let grow = if len * std::mem::size_of::<T>() < 256 << 10 {
            len.max(1024)
        } else {
            len / 4
        };
        v.reserve_exact(additional.max(grow));
    }
}

mod growing;
mod index;
mod indexed;
mod rows;
mod set;
mod sorted;

pub use growing::{Batch, Growing};
pub use index::{Index, restrict};
pub use indexed::{IndexedSet, Iter as IndexedIter};
pub use rows::Rows;
pub use set::FlatSet;
pub use sorted::SortedSet;

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

/// The allocated bytes of a hashbrown table (a `HashMap`, `HashSet` or `HashTable`)
/// whose `capacity()` is `capacity`, with entries of `entry` bytes: a power-of-two
/// number of buckets, at most 7/8 of them usable, and a control byte each.
pub fn hash_table_bytes(capacity: usize, entry: usize) -> u64 {
    let buckets = match capacity {
        0 => return 0,
        c if c < 8 => (c + 1).next_power_of_two(),
        c => (c * 8 / 7).next_power_of_two(),
    };
    (buckets * (entry + 1)) as u64
}

/// Whether two rows of the same arity are equal (a loop: rows are short).
#[inline]
pub fn same(a: &[u32], b: &[u32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}
