//! What the handle answers [`crate::Engine::len`], [`crate::Engine::facts`] and
//! [`crate::Engine::contains`] from: the materialization, in one part per worker of
//! this process.
//!
//! Every change of a fact reaches one worker (the one its `distinct` runs on, or worker
//! 0 when a cluster gathers the output), so a part ends the commit as the
//! materialization's share of its worker. A part is one of two things:
//!
//! * **the worker's table** ([`Table`], [`Part::share`]), in one process: the
//!   `distinct` keeps every fact of its worker with its steps, and a fact is in the
//!   materialization when its presence after its last step is 1. The handle reads the
//!   table between commits, and keeps no copy of its own: on transitive closure that
//!   was a flat hash set of rows, 19 bytes per fact, and a hash insert per change in
//!   the middle of the loop. What the table holds during a commit is that commit's
//!   state, so a commit that a limit refused leaves it stopped half-way: the handle
//!   rolls back by rebuilding the dataflow (`Diff::roll_back`), and reads nothing in
//!   between.
//! * **a copy** (per relation a flat hash set of rows), in a cluster, where the
//!   changes are gathered to worker 0 of process 0 and the other processes' tables are
//!   out of reach. Worker 0 applies its changes to it as they leave the loop. On the
//!   way, a fact's count may leave {0, 1}: the changes of a commit come in the order of
//!   their rounds, and the presence at round 0 of a commit is not the presence at the
//!   end of the one before (a base fact inserted that was derived at round 2: `+1` at
//!   round 0, `-1` at round 2, while the fact is in the set). A change that does not
//!   fit the set (a `+1` of a present fact, a `-1` of an absent one) is kept aside and
//!   settled when the commit ends ([`Part::settle`]); in a load, the first commit of a
//!   dataflow, there are none. A commit that a limit may refuse must leave the copy as
//!   it was: its changes are recorded instead, and the handle applies them once the
//!   commit is accepted ([`Mode`]).
//!
//! A rebuilt dataflow fills new parts, which replace the old ones when the commit
//! succeeds (the old ones stay readable until then, also when they are the stopped
//! workers' tables: the tables are shared, not owned by the threads).

use super::types::Mult;
use crate::store::FlatSet;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::Arc;

/// A worker's share of the materialization kept by the circuit itself (the
/// `distinct`'s table, [`super::distinct::Materialized`]), which the handle reads
/// between commits instead of a copy. Relations are ids; tuples are a relation's
/// values, `arity` of them.
pub(crate) trait Table: Send + Sync {
    /// The number of facts of a relation.
    fn len(&self, rel: usize) -> usize;
    fn contains(&self, rel: usize, tuple: &[u32]) -> bool;
    /// Call `f` on every fact of a relation of `arity` values.
    fn for_each(&self, rel: usize, arity: usize, f: &mut dyn FnMut(&[u32]));
}

impl std::fmt::Debug for dyn Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Table")
    }
}

/// What a worker does with the changes of a commit as they leave the loop (sent with
/// each commit, see [`super::runtime::Batch`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mode {
    /// Apply them to the worker's part.
    pub apply: bool,
    /// Keep them, consolidated, for the handle (to report them, or to apply them once
    /// the commit is accepted).
    pub record: bool,
}

/// One worker's share of the copy.
#[derive(Debug, Default)]
pub(crate) struct Part {
    /// Per relation.
    sets: Vec<FlatSet>,
    /// The mode of the commit in progress.
    pub mode: Mode,
    /// Changes of this commit that did not fit the set (`[rel, values..]`, diff): the
    /// count of a fact is its presence in the set plus its changes here.
    pending: Vec<(Vec<u32>, isize)>,
    /// The first change that could not be applied (an internal error, reported by
    /// the handle).
    error: Option<String>,
    /// The worker's table of facts, when the handle reads it instead of `sets` (in
    /// one process: see [`Part::share`]); `sets` then stay empty and only give the
    /// relations' arities.
    table: Option<Arc<dyn Table>>,
}

impl Part {
    /// From now on, answer from the worker's own table of facts, which holds every
    /// change of the materialization that reaches this worker: the changes need not
    /// be applied here.
    pub fn share(&mut self, table: Arc<dyn Table>) {
        self.table = Some(table);
    }

    /// Whether changes must be applied to this part (see [`Part::share`]).
    pub fn applies(&self) -> bool {
        self.mode.apply && self.table.is_none()
    }

    fn len(&self, rel: usize) -> usize {
        match (&self.table, self.sets.get(rel)) {
            (_, None) => 0,
            (Some(t), Some(_)) => t.len(rel),
            (None, Some(set)) => set.len(),
        }
    }

    fn contains(&self, rel: usize, tuple: &[u32]) -> bool {
        match (&self.table, self.sets.get(rel)) {
            (_, None) => false,
            (Some(t), Some(set)) => tuple.len() == set.arity() && t.contains(rel, tuple),
            (None, Some(set)) => set.contains(tuple),
        }
    }

    fn for_each(&self, rel: usize, f: &mut dyn FnMut(&[u32])) {
        match (&self.table, self.sets.get(rel)) {
            (_, None) => {}
            (Some(t), Some(set)) => t.for_each(rel, set.arity(), f),
            (None, Some(set)) => set.iter().for_each(f),
        }
    }

    /// Apply one change of a row `[rel, values.., 0..]` (the `distinct` emits ±1, but
    /// one change may step over another at an earlier round: `+1` at round 0 over a
    /// presence from round 2 makes 2 there, which its re-evaluation may take back by
    /// `-2`), and keep aside what takes the fact's count out of {0, 1} (see the module
    /// documentation).
    pub fn change(&mut self, row: &[u32], d: Mult) {
        let (set, tuple) = match fact(&mut self.sets, row) {
            Ok(found) => found,
            Err(e) => return self.fail(e),
        };
        let mut d = d as isize;
        if d > 0 && set.insert(tuple) {
            d -= 1;
        } else if d < 0 && set.remove(tuple) {
            d += 1;
        }
        if d != 0 {
            let width = 1 + tuple.len();
            self.pending.push((row[..width].to_vec(), d));
        }
    }

    /// End the commit: add up the changes kept aside; each fact's count must then be
    /// 0 or 1, its presence in the set.
    pub fn settle(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_unstable();
        let mut i = 0;
        while i < pending.len() {
            let row = &pending[i].0;
            let mut sum = 0;
            while i < pending.len() && pending[i].0 == *row {
                sum += pending[i].1;
                i += 1;
            }
            if sum == 0 {
                continue;
            }
            let row = row.clone();
            let outcome = fact(&mut self.sets, &row).and_then(|(set, tuple)| {
                match i64::from(set.contains(tuple)) + sum as i64 {
                    0 => {
                        set.remove(tuple);
                        Ok(())
                    }
                    1 => {
                        set.insert(tuple);
                        Ok(())
                    }
                    c => Err(format!(
                        "inconsistent output: count {c} of a fact of relation #{}",
                        row[0]
                    )),
                }
            });
            if let Err(e) = outcome {
                self.fail(e);
            }
        }
    }

    fn fail(&mut self, e: String) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }
}

/// The set of a row's relation and the row's values (its width cut to the arity).
fn fact<'a>(
    sets: &'a mut [FlatSet],
    row: &'a [u32],
) -> Result<(&'a mut FlatSet, &'a [u32]), String> {
    let rel = row.first().copied().unwrap_or(u32::MAX) as usize;
    let Some(set) = sets.get_mut(rel) else {
        return Err(format!("output of unknown relation {rel}"));
    };
    let Some(tuple) = row.get(1..1 + set.arity()) else {
        return Err(format!("output row too narrow for relation {rel}"));
    };
    Ok((set, tuple))
}

/// Apply one change that must fit the set (consolidated: one per fact).
fn change(sets: &mut [FlatSet], row: &[u32], d: isize) -> Result<(), String> {
    let (set, tuple) = fact(sets, row)?;
    let rel = row[0];
    let ok = match d {
        1 => set.insert(tuple),
        -1 => set.remove(tuple),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "inconsistent output: change {d} of a fact of relation #{rel}"
        ))
    }
}

/// A part, shared by its worker and the handle.
pub(crate) type SharedPart = Arc<RwLock<Part>>;

/// Lock a part to change it (a worker during a commit, the handle between commits).
/// A worker that panicked while holding it has failed the engine already (its reply
/// says so); the part is still readable.
pub(crate) fn lock(part: &RwLock<Part>) -> RwLockWriteGuard<'_, Part> {
    part.write()
}

/// Lock a part to read it. A read may be taken inside another: a caller may ask
/// whether a fact is in the materialization, or a base fact, while it goes through
/// the facts of a relation (`Engine::for_each_fact`), and a worker waiting to write
/// does not block it (`read_recursive`).
fn read(part: &RwLock<Part>) -> RwLockReadGuard<'_, Part> {
    part.read_recursive()
}

/// The copy: one part per worker of this process.
#[derive(Clone, Debug)]
pub(crate) struct Mirror {
    parts: Vec<SharedPart>,
}

impl Mirror {
    /// An empty copy of `parts` parts (at least one) with relations of `arities`.
    pub fn new(parts: usize, arities: impl Iterator<Item = usize> + Clone) -> Mirror {
        let parts = (0..parts.max(1))
            .map(|_| {
                Arc::new(RwLock::new(Part {
                    sets: arities.clone().map(FlatSet::new).collect(),
                    ..Part::default()
                }))
            })
            .collect();
        Mirror { parts }
    }

    /// The parts, for the workers (part `i` to local worker `i`).
    pub fn parts(&self) -> &[SharedPart] {
        &self.parts
    }

    /// Add a relation at the end.
    pub fn push_relation(&self, arity: usize) {
        for p in &self.parts {
            lock(p).sets.push(FlatSet::new(arity));
        }
    }

    /// Keep the first `n` relations.
    pub fn truncate(&self, n: usize) {
        for p in &self.parts {
            lock(p).sets.truncate(n);
        }
    }

    /// The arity of each relation.
    pub fn arities(&self) -> Vec<usize> {
        self.parts.first().map_or_else(Vec::new, |p| {
            read(p).sets.iter().map(FlatSet::arity).collect()
        })
    }

    pub fn len(&self, rel: usize) -> usize {
        self.parts.iter().map(|p| read(p).len(rel)).sum()
    }

    pub fn contains(&self, rel: usize, tuple: &[u32]) -> bool {
        self.parts.iter().any(|p| read(p).contains(rel, tuple))
    }

    /// Call `f` on every fact of a relation, part after part.
    pub fn for_each(&self, rel: usize, f: &mut dyn FnMut(&[u32])) {
        for p in &self.parts {
            read(p).for_each(rel, f);
        }
    }

    /// The size of every relation.
    pub fn sizes(&self) -> Vec<usize> {
        (0..self.relations()).map(|rel| self.len(rel)).collect()
    }

    /// Whether the parts are the workers' own tables (see [`Part::share`]): what the
    /// handle reads is then the circuit's state, also in the middle of a commit that
    /// failed or was refused.
    pub fn shares_tables(&self) -> bool {
        self.parts.iter().any(|p| read(p).table.is_some())
    }

    /// Apply a change to part `part` of a copy (a recorded change of its worker, once
    /// its commit is accepted; a part that is its worker's table has it already).
    pub fn change(&self, part: usize, row: &[u32], d: isize) -> Result<(), String> {
        let Some(p) = self.parts.get(part) else {
            return Err(format!("output of unknown worker {part}"));
        };
        change(&mut lock(p).sets, row, d)
    }

    /// The first change a worker could not apply since the last call.
    pub fn take_error(&self) -> Option<String> {
        self.parts.iter().find_map(|p| lock(p).error.take())
    }

    /// (facts, allocated bytes) of the whole copy.
    pub fn usage(&self) -> (u64, u64) {
        let (mut records, mut bytes) = (0, 0);
        for p in &self.parts {
            let (r, b) = sets_usage(&read(p).sets);
            records += r;
            bytes += b;
        }
        (records, bytes)
    }

    /// The number of relations.
    fn relations(&self) -> usize {
        self.parts.first().map_or(0, |p| read(p).sets.len())
    }

    /// The facts of `self` that `other` lacks: `f(relation, fact)` for each.
    pub fn missing_from(&self, other: &Mirror, f: &mut dyn FnMut(usize, &[u32])) {
        for rel in 0..self.relations() {
            self.for_each(rel, &mut |t| {
                if !other.contains(rel, t) {
                    f(rel, t)
                }
            });
        }
    }
}

/// (tuples, allocated bytes) of sets of tuples.
pub(crate) fn sets_usage(sets: &[FlatSet]) -> (u64, u64) {
    let records = sets.iter().map(|s| s.len() as u64).sum();
    let bytes =
        sets.iter().map(FlatSet::heap_bytes).sum::<u64>() + std::mem::size_of_val(sets) as u64;
    (records, bytes)
}

/// The number of facts in one of `old` and `new` but not the other.
pub(crate) fn net_change(old: &Mirror, new: &Mirror) -> u64 {
    let mut n = 0u64;
    old.missing_from(new, &mut |_, _| n += 1);
    new.missing_from(old, &mut |_, _| n += 1);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rel: u32, a: u32, b: u32) -> [u32; 4] {
        [rel, a, b, 0]
    }

    #[test]
    fn parts_answer_as_one_set() {
        let m = Mirror::new(2, [2usize, 1].into_iter());
        {
            let mut p0 = lock(&m.parts()[0]);
            p0.change(&row(0, 1, 2), 1);
            p0.change(&row(1, 7, 0), 1);
        }
        lock(&m.parts()[1]).change(&row(0, 3, 4), 1);
        assert_eq!(m.len(0), 2);
        assert_eq!(m.len(1), 1);
        assert!(m.contains(0, &[3, 4]) && m.contains(0, &[1, 2]));
        assert!(!m.contains(0, &[2, 1]));
        let mut all = Vec::new();
        m.for_each(0, &mut |t| all.push(t.to_vec()));
        all.sort();
        assert_eq!(all, vec![vec![1, 2], vec![3, 4]]);
        assert_eq!(m.take_error(), None);
        assert_eq!(m.arities(), vec![2, 1]);
        assert_eq!(m.usage().0, 3);
    }

    #[test]
    fn counts_that_leave_the_set_are_settled_at_the_end() {
        let m = Mirror::new(1, [2usize, 2].into_iter());
        let mut p = lock(&m.parts()[0]);
        // Present before the commit.
        p.change(&row(0, 5, 6), 1);
        p.change(&row(1, 1, 1), 1);
        // A commit: +1 at round 0 (count 2), -1 at round 2 (count 1): present.
        p.change(&row(0, 5, 6), 1);
        p.change(&row(0, 5, 6), -1);
        // -1, -1 (count -1), then +1: absent.
        p.change(&row(1, 1, 1), -1);
        p.change(&row(1, 1, 1), -1);
        p.change(&row(1, 1, 1), 1);
        // Absent, +1 -1 +1 in round order: present.
        for d in [1, -1, 1] {
            p.change(&row(1, 2, 2), d);
        }
        // Absent: +1 at round 0, +1 at round 1 (count 2), then -2 and +1 at round 2:
        // present.
        for d in [1, 1, -2, 1] {
            p.change(&row(1, 3, 3), d);
        }
        p.settle();
        assert!(p.error.is_none(), "{:?}", p.error);
        assert!(p.pending.is_empty());
        assert!(p.sets[0].contains(&[5, 6]));
        assert!(!p.sets[1].contains(&[1, 1]));
        assert!(p.sets[1].contains(&[2, 2]));
        assert!(p.sets[1].contains(&[3, 3]));
        assert_eq!(p.sets[1].len(), 2);
    }

    #[test]
    fn a_count_outside_the_set_is_an_error() {
        let m = Mirror::new(2, [2usize].into_iter());
        {
            let mut p = lock(&m.parts()[1]);
            p.change(&row(0, 1, 1), -1);
            p.change(&row(3, 1, 1), 1);
            p.change(&row(0, 1, 2), 2);
            p.settle();
        }
        let e = m.take_error().expect("an error");
        assert!(e.contains("unknown relation 3"), "{e}");
        // The count 2 of (1, 2) was the second error.
        assert!(m.contains(0, &[1, 2]));
        // Reported once.
        assert_eq!(m.take_error(), None);
        lock(&m.parts()[0]).settle();
        assert_eq!(m.take_error(), None);
        {
            let mut p = lock(&m.parts()[0]);
            p.change(&row(0, 1, 1), -1);
            p.settle();
        }
        let e = m.take_error().expect("an error");
        assert!(e.contains("count -1"), "{e}");
        // Recorded changes are consolidated: each must fit.
        assert!(m.change(0, &row(0, 1, 1), 2).is_err());
        assert!(m.change(5, &row(0, 1, 1), 1).is_err());
        assert!(m.change(0, &row(0, 1, 1), 1).is_ok());
        assert!(m.change(0, &row(0, 1, 1), 1).is_err());
    }

    #[test]
    fn net_change_counts_both_sides() {
        let old = Mirror::new(1, [2usize].into_iter());
        let new = Mirror::new(2, [2usize].into_iter());
        for (a, b) in [(1, 2), (3, 4)] {
            old.change(0, &row(0, a, b), 1).expect("fits");
        }
        new.change(1, &row(0, 3, 4), 1).expect("fits");
        new.change(0, &row(0, 5, 6), 1).expect("fits");
        assert_eq!(net_change(&old, &new), 2);
        old.truncate(0);
        assert_eq!(old.len(0), 0);
        old.push_relation(2);
        assert_eq!(net_change(&old, &new), 2);
    }
}
