//! The staging of a transaction, shared by the engines ([`crate::seminaive`],
//! [`crate::dred`], [`crate::diff`]): the base-fact changes staged since the last
//! commit, in order, a program change ([`crate::Engine::set_program`]: checked, its
//! inline facts staged, the previous program kept to go back to), and the base-fact
//! changes a commit applied, to undo them if a limit refuses it. Each engine keeps its
//! base facts in its own store ([`FactSet`]) and does what is its own (compiling the
//! rules, feeding a dataflow); [`Staging`] does the rest, the same way for all, so that
//! [`crate::Engine::abort`] and a commit refused by a limit go back to the same state.

use crate::EngineError;
use dynalog_analysis::{Program, RelId, Value};

/// The base facts of one relation, as an engine stores them: a set of tuples.
pub(crate) trait FactSet {
    fn empty(arity: usize) -> Self;
    fn arity(&self) -> usize;
    /// Add `tuple` unless present; whether it was added.
    fn insert(&mut self, tuple: &[Value]) -> bool;
    /// Remove `tuple` if present; whether it was.
    fn remove(&mut self, tuple: &[Value]) -> bool;
    fn for_each(&self, f: &mut dyn FnMut(&[Value]));
}

/// One set of base facts per relation of `program`, holding its inline facts (those
/// of an unknown relation or of the wrong arity are left out).
pub(crate) fn initial_base<S: FactSet>(program: &Program) -> Vec<S> {
    let mut base: Vec<S> = program
        .relations
        .iter()
        .map(|r| S::empty(r.arity()))
        .collect();
    for (rel, tuple) in &program.facts {
        if let Some(set) = base.get_mut(*rel as usize)
            && set.arity() == tuple.len()
        {
            set.insert(tuple);
        }
    }
    base
}

/// Per relation, the base facts of `program` (empty sets for relations `base` lacks;
/// those of relations `program` dropped go).
pub(crate) fn resize_base<S: FactSet>(base: &mut Vec<S>, program: &Program) {
    base.truncate(program.relations.len());
    while base.len() < program.relations.len() {
        base.push(S::empty(program.relations[base.len()].arity()));
    }
}

/// What is staged since the last commit. See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Staging {
    /// Fact changes, in order.
    staged: FactLog,
    /// A rejected [`crate::Engine::set_program`], reported by the next commit.
    rejected: Option<EngineError>,
    /// The program before the first [`crate::Engine::set_program`] since the last
    /// commit, to go back to.
    saved: Option<Program>,
    /// Base-fact changes of the transaction that are already applied: the facts of the
    /// relations a program change dropped, and, while limits are set, the changes a
    /// commit applied.
    undo: FactLog,
}

impl Staging {
    /// Stage a change of relation `relation`, whose arity is `arity` (`None`: unknown
    /// relation); ignored if the tuple is not of that arity.
    pub(crate) fn stage(
        &mut self,
        insert: bool,
        relation: RelId,
        tuple: &[Value],
        arity: Option<usize>,
    ) {
        if arity == Some(tuple.len()) {
            self.staged.record(insert, relation, tuple);
        }
    }

    /// Whether anything is staged: fact changes or a program change.
    pub(crate) fn has_staged(&self) -> bool {
        !self.staged.ops.is_empty() || self.rejected.is_some() || self.saved.is_some()
    }

    /// The number of staged fact changes, if every one is an insertion (a load).
    pub(crate) fn only_inserts(&self) -> Option<usize> {
        self.staged
            .ops
            .iter()
            .all(|&(insert, _, _)| insert)
            .then_some(self.staged.ops.len())
    }

    /// Drop the staged fact changes: the caller applied them itself.
    pub(crate) fn applied(&mut self) {
        self.staged.clear();
    }

    /// The staged fact changes, in order.
    pub(crate) fn for_each(&self, f: &mut dyn FnMut(bool, RelId, &[Value])) {
        for (insert, rel, tuple) in self.staged.iter() {
            f(insert, rel, tuple);
        }
    }

    /// The opening of every [`crate::Engine::set_program`]: whether `new` may replace
    /// `current` (if not, the next commit fails with the reason, and the caller does
    /// nothing more). If so, the current program is kept to go back to, and the inline
    /// facts `new` adds and drops are staged; the caller then installs `new`.
    pub(crate) fn open_program(&mut self, current: &Program, new: &Program) -> bool {
        if let Err(e) = check_extends(current, new) {
            self.rejected = Some(e);
            return false;
        }
        if self.saved.is_none() {
            self.saved = Some(current.clone());
        }
        for (insert, rel, tuple) in inline_fact_changes(current, new) {
            let arity = new.relations.get(rel as usize).map(|r| r.arity());
            self.stage(insert, rel, &tuple, arity);
        }
        true
    }

    /// Record the facts of the relations from `keep` on, which the program being
    /// installed drops, as removed (see [`Staging::undo_into`]).
    pub(crate) fn drop_relations<S: FactSet>(&mut self, base: &[S], keep: usize) {
        for (rel, set) in base.iter().enumerate().skip(keep) {
            set.for_each(&mut |t| self.undo.record(false, rel as RelId, t));
        }
    }

    /// The error of a rejected program change, which the commit returns; the program
    /// changes accepted before it in the transaction are kept, what is staged stays.
    pub(crate) fn take_rejected(&mut self) -> Option<EngineError> {
        let rejected = self.rejected.take()?;
        self.finish();
        Some(rejected)
    }

    /// Apply the staged changes to `base`, in order (those of relations from `live` on,
    /// dropped by a program change since they were staged, are left out), and call
    /// `changed(insert?, relation, tuple)` on each that changed it; with `record`, each
    /// is also recorded to be undone if the commit is refused.
    pub(crate) fn apply<S: FactSet>(
        &mut self,
        base: &mut [S],
        live: usize,
        record: bool,
        mut changed: impl FnMut(bool, RelId, &[Value]),
    ) {
        for (insert, rel, tuple) in self.staged.iter() {
            let Some(set) = base.get_mut(rel as usize).filter(|_| (rel as usize) < live) else {
                continue;
            };
            if set.arity() != tuple.len() {
                continue;
            }
            let done = if insert {
                set.insert(tuple)
            } else {
                set.remove(tuple)
            };
            if done {
                if record {
                    self.undo.record(insert, rel, tuple);
                }
                changed(insert, rel, tuple);
            }
        }
        self.staged.clear();
    }

    /// After a commit: nothing to go back to.
    pub(crate) fn finish(&mut self) {
        self.saved = None;
        self.undo.clear();
    }

    /// Discard the transaction: what is staged, a rejected program; returns the
    /// program to reinstall if it changed. The caller reinstalls it, then puts the base
    /// facts back with [`Staging::undo_into`].
    pub(crate) fn discard(&mut self) -> Option<Program> {
        self.staged.clear();
        self.rejected = None;
        self.saved.take()
    }

    /// Undo the base-fact changes recorded in the transaction, last first.
    pub(crate) fn undo_into<S: FactSet>(&mut self, base: &mut [S]) {
        for (inserted, rel, tuple) in self.undo.iter().rev() {
            if let Some(set) = base.get_mut(rel as usize) {
                if inserted {
                    set.remove(tuple);
                } else {
                    set.insert(tuple);
                }
            }
        }
        self.undo.clear();
    }
}

/// Check that `new` may replace `old` under [`crate::Engine::set_program`]: every
/// relation both have keeps its name and column types.
pub fn check_extends(old: &Program, new: &Program) -> Result<(), EngineError> {
    for (i, (a, b)) in old.relations.iter().zip(&new.relations).enumerate() {
        if a.name != b.name || a.types != b.types {
            return Err(EngineError::ProgramRejected(format!(
                "the new program does not extend the current one: relation `{}` (#{i}) changed",
                a.name
            )));
        }
    }
    Ok(())
}

/// The inline facts `new` adds to `old` (`true`) and drops from it (`false`).
pub fn inline_fact_changes(old: &Program, new: &Program) -> Vec<(bool, RelId, Vec<Value>)> {
    use std::collections::HashSet;
    let before: HashSet<(RelId, &[Value])> = old.facts.iter().map(|(r, t)| (*r, &t[..])).collect();
    let after: HashSet<(RelId, &[Value])> = new.facts.iter().map(|(r, t)| (*r, &t[..])).collect();
    let mut changes = Vec::new();
    for (r, t) in &old.facts {
        if !after.contains(&(*r, &t[..])) {
            changes.push((false, *r, t.clone()));
        }
    }
    for (r, t) in &new.facts {
        if !before.contains(&(*r, &t[..])) {
            changes.push((true, *r, t.clone()));
        }
    }
    changes
}

/// Fact changes in order: `(insert?, relation, start in values)`; a change's values
/// end where the next one's start (16 bytes per change besides its values).
#[derive(Debug, Default)]
struct FactLog {
    ops: Vec<(bool, RelId, usize)>,
    values: Vec<Value>,
}

impl FactLog {
    fn record(&mut self, insert: bool, relation: RelId, tuple: &[Value]) {
        self.ops.push((insert, relation, self.values.len()));
        self.values.extend_from_slice(tuple);
    }

    /// Empty the log and give its memory back: a load stages every input fact, and
    /// the log must not hold that much through the evaluation that follows.
    fn clear(&mut self) {
        *self = FactLog::default();
    }

    fn iter(&self) -> impl DoubleEndedIterator<Item = (bool, RelId, &[Value])> {
        (0..self.ops.len()).map(move |i| {
            let (insert, rel, start) = self.ops[i];
            let end = self.ops.get(i + 1).map_or(self.values.len(), |next| next.2);
            (insert, rel, &self.values[start..end])
        })
    }
}

// The engines' stores of base facts: `FlatSet` (seminaive, diff) and `IndexedSet` (dred).

/// `impl FactSet` for a store with `new`, `arity`, `insert` and `remove` of those
/// names, and `$rows`, its rows as an iterator.
macro_rules! fact_set {
    ($store:ty, |$s:ident| $rows:expr) => {
        impl FactSet for $store {
            fn empty(arity: usize) -> Self {
                Self::new(arity)
            }
            fn arity(&self) -> usize {
                self.arity()
            }
            fn insert(&mut self, tuple: &[Value]) -> bool {
                self.insert(tuple)
            }
            fn remove(&mut self, tuple: &[Value]) -> bool {
                self.remove(tuple)
            }
            fn for_each(&self, f: &mut dyn FnMut(&[Value])) {
                let $s = self;
                $rows.for_each(f)
            }
        }
    };
}

fact_set!(crate::store::FlatSet, |s| s.iter());
fact_set!(crate::store::IndexedSet, |s| s.iter());
fact_set!(crate::store::SortedSet, |s| s.iter());

#[cfg(test)]
mod tests {
    use super::FactLog;

    #[test]
    fn the_log_keeps_changes_in_order_both_ways_with_any_arity() {
        let mut log = FactLog::default();
        log.record(true, 0, &[1, 2]);
        log.record(false, 1, &[]);
        log.record(true, 2, &[3]);
        log.record(false, 1, &[]);
        let forward: Vec<_> = log.iter().map(|(i, r, t)| (i, r, t.to_vec())).collect();
        assert_eq!(
            forward,
            [
                (true, 0, vec![1, 2]),
                (false, 1, vec![]),
                (true, 2, vec![3]),
                (false, 1, vec![]),
            ]
        );
        let backward: Vec<_> = log
            .iter()
            .rev()
            .map(|(i, r, t)| (i, r, t.to_vec()))
            .collect();
        assert_eq!(backward, forward.into_iter().rev().collect::<Vec<_>>());
    }

    #[test]
    fn clearing_the_log_gives_its_memory_back() {
        let mut log = FactLog::default();
        for i in 0..10_000 {
            log.record(true, 0, &[i, i]);
        }
        log.clear();
        assert_eq!(log.iter().count(), 0);
        assert_eq!((log.ops.capacity(), log.values.capacity()), (0, 0));
    }
}
