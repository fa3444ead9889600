//! The rule runner: one compiled rule ([`RulePlan`]) evaluated as nested loops, one
//! level per body literal, over a slot array holding the variables' values. Arithmetic
//! and comparisons are those of the IR (`dynalog_analysis::ir`).
//!
//! The runner owns the control flow (joins, repeated-variable checks, bindings,
//! negations, filters, assignments, the head tuple); a [`Source`] says which rows a
//! positive atom reads, whether a tuple or a negated atom is present, and takes the
//! head tuples. The source is monomorphized into the runner: no dynamic dispatch in
//! the loops.

use super::plan::{Access, Join, KeySrc, Op, RulePlan};
use crate::store::Rows;
use dynalog_analysis::ir::eval_cmp;

/// The rows a positive atom reads, as a [`Source`] gives them.
pub enum Matches<'a, I> {
    /// Rows `lo..hi` of the rows.
    Range(&'a Rows, u32, u32),
    /// The rows with these ids.
    Ids(&'a Rows, &'a [u32]),
    /// Any other sequence of rows.
    Iter(I),
}

/// What a rule run reads, and where its head tuples go. `'a`: the lifetime of the
/// rows read (independent of the borrow of the source, so that the runner can push
/// head tuples while it reads them).
pub trait Source<'a> {
    /// The type of [`Matches::Iter`].
    type Iter: Iterator<Item = &'a [u32]>;

    /// In how many parts the positive atom at op `pc` is read (each a call of
    /// [`Source::rows`]).
    fn parts(&self, pc: usize) -> usize;

    /// Part `part` of the rows the positive atom `join` at op `pc` reads (its access is
    /// a scan or an index lookup), given the slots bound so far. Rows not matching the
    /// key may be included only for a scan; the runner checks repeated variables.
    fn rows(
        &mut self,
        pc: usize,
        part: usize,
        join: &Join,
        slots: &[u32],
    ) -> Matches<'a, Self::Iter>;

    /// How many times the positive atom at op `pc` over `rel`, every column bound
    /// (`key`, one source per column), matches: 0 or 1 per part.
    fn member(&mut self, pc: usize, rel: usize, key: &[KeySrc], slots: &[u32]) -> u32;

    /// Whether a tuple of `rel` matching `access` exists (for a negated atom;
    /// [`Access::Scan`]: whether the relation has a tuple).
    fn exists(&mut self, rel: usize, access: &Access, slots: &[u32]) -> bool;

    /// A row is about to be joined; `true` stops the run (a limit was hit).
    fn tick(&mut self) -> bool;

    /// A row of the atom at op `pc` has been joined (with everything after it).
    fn after_row(&mut self, pc: usize);

    /// Whether to stop reading the rows of the current atoms (and unwind).
    fn done(&self) -> bool;

    /// The body matched: a head tuple.
    fn push(&mut self, tuple: &[u32]);
}

/// Run `plan` once over `source`: `slots` must hold at least `plan.slots` values,
/// `tuple` is a buffer for the head tuple.
pub fn run<'a, S: Source<'a>>(
    plan: &RulePlan,
    slots: &mut [u32],
    tuple: &mut Vec<u32>,
    source: &mut S,
) {
    let mut runner = Runner {
        plan,
        slots,
        tuple,
        source,
    };
    runner.step(0);
}

struct Runner<'p, 's, S> {
    plan: &'p RulePlan,
    slots: &'s mut [u32],
    tuple: &'s mut Vec<u32>,
    source: &'s mut S,
}

impl<'a, S: Source<'a>> Runner<'_, '_, S> {
    /// Evaluate the body from op `pc` on, with the slots bound by the ops before it.
    fn step(&mut self, pc: usize) {
        let plan = self.plan;
        let Some(op) = plan.ops.get(pc) else {
            self.emit();
            return;
        };
        match op {
            Op::Join(join) => {
                if let Access::Member { key } = &join.access {
                    let n = self.source.member(pc, join.rel as usize, key, self.slots);
                    for _ in 0..n {
                        self.step(pc + 1);
                        self.source.after_row(pc);
                        if self.source.done() {
                            return;
                        }
                    }
                    return;
                }
                for part in 0..self.source.parts(pc) {
                    match self.source.rows(pc, part, join, self.slots) {
                        Matches::Range(rows, lo, hi) => {
                            for r in lo..hi {
                                self.join_row(join, rows.row(r), pc);
                                if self.source.done() {
                                    return;
                                }
                            }
                        }
                        Matches::Ids(rows, ids) => {
                            for &r in ids {
                                self.join_row(join, rows.row(r), pc);
                                if self.source.done() {
                                    return;
                                }
                            }
                        }
                        Matches::Iter(iter) => {
                            for row in iter {
                                self.join_row(join, row, pc);
                                if self.source.done() {
                                    return;
                                }
                            }
                        }
                    }
                }
            }
            Op::Not { rel, access } => {
                if !self.source.exists(*rel as usize, access, self.slots) {
                    self.step(pc + 1);
                }
            }
            Op::Filter { cmp, ty, lhs, rhs } => {
                let symbols = &plan.symbols;
                if let (Some(a), Some(b)) =
                    (lhs.eval(self.slots, symbols), rhs.eval(self.slots, symbols))
                    && eval_cmp(*cmp, *ty, a, b)
                {
                    self.step(pc + 1);
                }
            }
            Op::Assign { var, expr } => {
                if let Some(v) = expr.eval(self.slots, &plan.symbols) {
                    self.slots[*var as usize] = v;
                    self.step(pc + 1);
                }
            }
        }
    }

    /// Continue with `row` as the match of the atom at `pc` if its repeated variables
    /// agree.
    #[inline]
    fn join_row(&mut self, join: &Join, row: &[u32], pc: usize) {
        if self.source.tick() {
            return;
        }
        if join.checks.iter().all(|&(a, b)| row[a] == row[b]) {
            for &(col, var) in join.binds.iter() {
                self.slots[var as usize] = row[col];
            }
            self.step(pc + 1);
        }
        self.source.after_row(pc);
    }

    /// The body matched: compute the head tuple and hand it to the source.
    fn emit(&mut self) {
        self.tuple.clear();
        for e in &self.plan.head {
            match e.eval(self.slots, &self.plan.symbols) {
                Some(v) => self.tuple.push(v),
                None => return,
            }
        }
        self.source.push(self.tuple);
    }
}
