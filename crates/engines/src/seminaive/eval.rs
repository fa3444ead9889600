//! Semi-naive evaluation of one compiled rule over row ranges of the relations: the
//! [`Source`] of the shared rule runner ([`crate::rules::run`]) for this engine.
//!
//! Every positive atom reads only the rows of its relation whose ids lie in a given
//! range (this is how semi-naive evaluation restricts an atom to the "old", "delta" or
//! "full" facts: rows are append-only, so each is an id range). Derived tuples are
//! collected in a [`Batch`] and then added to their relation's fresh rows unless already
//! present (see [`Growing`]). Fresh rows are not read before the next round, so the rows
//! the rules read do not change while they run.

use crate::Budget;
use crate::rules::{Access, Join, KeySrc, Matches, RulePlan, Source};
use crate::store::{Batch, Growing, Index, Rows, hash_values, restrict};

/// The readable state of one relation during an evaluation: the rows up to the current
/// round, and the indexes over them.
#[derive(Clone, Debug)]
pub struct Committed {
    pub rows: Rows,
    pub indexes: Vec<Index>,
}

/// Reusable buffers of rule runs.
#[derive(Debug, Default)]
pub struct Scratch {
    slots: Vec<u32>,
    tuple: Vec<u32>,
    batch: Batch,
    /// Facts derived (added to fresh rows) so far in the commit.
    pub derived: u64,
    /// Base facts of the commit minus facts of the previous materialization: the net
    /// change is at least `derived + excess` (for [`Budget::check`]).
    pub excess: i64,
}

impl Scratch {
    /// A lower bound of the commit's net change so far.
    pub fn changes(&self) -> u64 {
        (self.derived as i64).saturating_add(self.excess).max(0) as u64
    }
}

/// Run `plan` once: the positive atom at op `i` of the body reads the committed rows
/// `ranges[i].0 .. ranges[i].1` of its relation (entries of other ops are ignored);
/// negations read whole relations. Head tuples not yet in their relation are added to
/// its fresh rows (`growing`, indexed by relation like `committed`). Stops early, and
/// returns `false`, when the budget's limits are hit (checked every few thousand rows
/// and derivations).
pub fn run_rule(
    plan: &RulePlan,
    committed: &[Committed],
    growing: &mut [Growing],
    ranges: &[(u32, u32)],
    scratch: &mut Scratch,
    budget: &Budget,
) -> bool {
    scratch.slots.clear();
    scratch.slots.resize(plan.slots, 0);
    let head = plan.head_rel as usize;
    let limit = growing[head].batch_limit();
    let mut source = Semi {
        committed,
        growing,
        ranges,
        head,
        batch: &mut scratch.batch,
        limit,
        budget,
        stop: false,
        ticks: 0,
        derived: scratch.derived,
        excess: scratch.excess,
    };
    crate::rules::run(plan, &mut scratch.slots, &mut scratch.tuple, &mut source);
    let stop = source.stop;
    scratch.derived = source.derived;
    if stop {
        scratch.batch.clear();
        return false;
    }
    let g = &mut growing[head];
    let before = g.fresh.len();
    g.insert_batch(&committed[head].rows, &mut scratch.batch);
    scratch.derived += (g.fresh.len() - before) as u64;
    !budget.check(scratch.changes())
}

/// What a rule run of semi-naive evaluation reads and writes.
struct Semi<'a, 'g> {
    committed: &'a [Committed],
    growing: &'g mut [Growing],
    ranges: &'a [(u32, u32)],
    head: usize,
    batch: &'g mut Batch,
    limit: usize,
    budget: &'a Budget,
    /// A limit was hit: unwind.
    stop: bool,
    /// Rows visited, to check the deadline every so often.
    ticks: u32,
    derived: u64,
    excess: i64,
}

/// The hash of a key (in key order, like the projection of a matching row).
#[inline]
fn key_hash(key: &[KeySrc], slots: &[u32]) -> u64 {
    hash_values(key.iter().map(|k| k.value(slots)))
}

/// The id of the row of a relation equal to the key (one source per column).
#[inline]
fn find_row(
    committed: &Committed,
    growing: &Growing,
    key: &[KeySrc],
    slots: &[u32],
) -> Option<u32> {
    growing.find_with(&committed.rows, key_hash(key, slots), |row| {
        row.iter().zip(key).all(|(&x, k)| x == k.value(slots))
    })
}

/// The ascending ids of the committed rows of a relation matching the key in the
/// columns of index number `index`.
#[inline]
fn index_rows<'c>(
    committed: &'c Committed,
    index: usize,
    cols: &[usize],
    key: &[KeySrc],
    slots: &[u32],
) -> &'c [u32] {
    committed.indexes[index].get(&committed.rows, key_hash(key, slots), |row| {
        cols.iter().zip(key).all(|(&c, k)| row[c] == k.value(slots))
    })
}

impl<'a> Source<'a> for Semi<'a, '_> {
    type Iter = std::iter::Empty<&'a [u32]>;

    #[inline]
    fn parts(&self, _pc: usize) -> usize {
        1
    }

    #[inline]
    fn rows(
        &mut self,
        pc: usize,
        _part: usize,
        join: &Join,
        slots: &[u32],
    ) -> Matches<'a, Self::Iter> {
        let all: &'a [Committed] = self.committed;
        let committed = &all[join.rel as usize];
        let (lo, hi) = self.ranges[pc];
        match &join.access {
            Access::Index { index, cols, key } => {
                let ids = index_rows(committed, *index, cols, key, slots);
                Matches::Ids(&committed.rows, restrict(ids, lo, hi))
            }
            // A member access does not come here (see `member`).
            Access::Scan | Access::Member { .. } => Matches::Range(&committed.rows, lo, hi),
        }
    }

    #[inline]
    fn member(&mut self, pc: usize, rel: usize, key: &[KeySrc], slots: &[u32]) -> u32 {
        let (lo, hi) = self.ranges[pc];
        let found = find_row(&self.committed[rel], &self.growing[rel], key, slots);
        found.is_some_and(|r| lo <= r && r < hi) as u32
    }

    #[inline]
    fn exists(&mut self, rel: usize, access: &Access, slots: &[u32]) -> bool {
        let committed = &self.committed[rel];
        match access {
            Access::Scan => !committed.rows.is_empty(),
            Access::Member { key } => find_row(committed, &self.growing[rel], key, slots).is_some(),
            Access::Index { index, cols, key } => {
                !index_rows(committed, *index, cols, key, slots).is_empty()
            }
        }
    }

    #[inline]
    fn tick(&mut self) -> bool {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks & 0xFFF == 0 && self.budget.check_time() {
            self.stop = true;
        }
        self.stop
    }

    #[inline]
    fn after_row(&mut self, _pc: usize) {}

    #[inline]
    fn done(&self) -> bool {
        self.stop
    }

    /// Queue the head tuple for insertion.
    #[inline]
    fn push(&mut self, tuple: &[u32]) {
        let hash = hash_values(tuple.iter().copied());
        self.batch.push(hash, tuple);
        if self.batch.len() >= self.limit {
            let g = &mut self.growing[self.head];
            let before = g.fresh.len();
            g.insert_batch(&self.committed[self.head].rows, self.batch);
            self.limit = g.batch_limit();
            self.derived += (g.fresh.len() - before) as u64;
            let changes = (self.derived as i64).saturating_add(self.excess).max(0) as u64;
            if self.budget.check(changes) {
                self.stop = true;
            }
        }
    }
}
