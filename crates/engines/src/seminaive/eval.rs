//! Evaluation of one compiled rule over row ranges of the relations. Arithmetic and
//! comparisons are those of the IR (`dynalog_analysis::ir`).
//!
//! A rule runs as nested loops, one level per body literal, over a slot array holding
//! the variables' values. Every positive atom reads only the rows of its relation whose
//! ids lie in a given range (this is how semi-naive evaluation restricts an atom to the
//! "old", "delta" or "full" facts: rows are append-only, so each is an id range).
//! Derived tuples are collected in a [`Batch`] and then added to their relation's fresh
//! rows unless already present (see [`Growing`]). Fresh rows are not read before the
//! next round, so the rows the rules read do not change while they run.

use crate::Budget;
use crate::seminaive::plan::{Access, Join, KeySrc, Op, RulePlan};
use crate::store::{Batch, Growing, Index, Rows, hash_values, restrict};
use dynalog_analysis::ir::eval_cmp;

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
    let limit = growing[plan.head_rel as usize].batch_limit();
    let mut run = Run {
        plan,
        committed,
        growing,
        ranges,
        slots: &mut scratch.slots,
        tuple: &mut scratch.tuple,
        batch: &mut scratch.batch,
        limit,
        budget,
        stop: false,
        ticks: 0,
        derived: scratch.derived,
        excess: scratch.excess,
    };
    run.step(0);
    let stop = run.stop;
    scratch.derived = run.derived;
    let head = plan.head_rel as usize;
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

struct Run<'a> {
    plan: &'a RulePlan,
    committed: &'a [Committed],
    growing: &'a mut [Growing],
    ranges: &'a [(u32, u32)],
    slots: &'a mut [u32],
    tuple: &'a mut Vec<u32>,
    batch: &'a mut Batch,
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

impl Run<'_> {
    /// Evaluate the body from op `pc` on, with the slots bound by the ops before it.
    fn step(&mut self, pc: usize) {
        let plan = self.plan;
        let Some(op) = plan.ops.get(pc) else {
            self.emit();
            return;
        };
        match op {
            Op::Join(join) => {
                let rel = join.rel as usize;
                let committed = &self.committed[rel];
                let rows = &committed.rows;
                let (lo, hi) = self.ranges[pc];
                match &join.access {
                    Access::Scan => {
                        for r in lo..hi {
                            self.join_row(join, rows.row(r), pc);
                            if self.stop {
                                return;
                            }
                        }
                    }
                    Access::Member { key } => {
                        let found = find_row(committed, &self.growing[rel], key, self.slots);
                        if found.is_some_and(|r| lo <= r && r < hi) {
                            self.step(pc + 1);
                        }
                    }
                    Access::Index { index, cols, key } => {
                        let ids = index_rows(committed, *index, cols, key, self.slots);
                        for &r in restrict(ids, lo, hi) {
                            self.join_row(join, rows.row(r), pc);
                            if self.stop {
                                return;
                            }
                        }
                    }
                }
            }
            Op::Not { rel, access } => {
                let rel = *rel as usize;
                let committed = &self.committed[rel];
                let exists = match access {
                    Access::Scan => committed.rows.len() > 0,
                    Access::Member { key } => {
                        find_row(committed, &self.growing[rel], key, self.slots).is_some()
                    }
                    Access::Index { index, cols, key } => {
                        !index_rows(committed, *index, cols, key, self.slots).is_empty()
                    }
                };
                if !exists {
                    self.step(pc + 1);
                }
            }
            Op::Filter { cmp, ty, lhs, rhs } => {
                if let (Some(a), Some(b)) = (lhs.eval(self.slots), rhs.eval(self.slots))
                    && eval_cmp(*cmp, *ty, a, b)
                {
                    self.step(pc + 1);
                }
            }
            Op::Assign { var, expr } => {
                if let Some(v) = expr.eval(self.slots) {
                    self.slots[*var as usize] = v;
                    self.step(pc + 1);
                }
            }
        }
    }

    /// Continue with `row` as the match of the atom at `pc` if its repeated variables agree.
    #[inline]
    fn join_row(&mut self, join: &Join, row: &[u32], pc: usize) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks & 0xFFF == 0 && self.budget.check_time() {
            self.stop = true;
            return;
        }
        if join.checks.iter().all(|&(a, b)| row[a] == row[b]) {
            for &(col, var) in join.binds.iter() {
                self.slots[var as usize] = row[col];
            }
            self.step(pc + 1);
        }
    }

    /// The body matched: compute the head tuple and queue it for insertion.
    fn emit(&mut self) {
        self.tuple.clear();
        for e in &self.plan.head {
            match e.eval(self.slots) {
                Some(v) => self.tuple.push(v),
                None => return,
            }
        }
        let head = self.plan.head_rel as usize;
        let hash = hash_values(self.tuple.iter().copied());
        self.batch.push(hash, self.tuple);
        if self.batch.len() >= self.limit {
            let g = &mut self.growing[head];
            let before = g.fresh.len();
            g.insert_batch(&self.committed[head].rows, self.batch);
            self.limit = g.batch_limit();
            self.derived += (g.fresh.len() - before) as u64;
            let changes = (self.derived as i64).saturating_add(self.excess).max(0) as u64;
            if self.budget.check(changes) {
                self.stop = true;
            }
        }
    }
}
