//! The handle's base facts, relation by relation: held ([`SortedSet`]), or left to
//! the materialization.
//!
//! The handle keeps the base facts to give set semantics to the changes (inserting a
//! present fact, or deleting an absent one, changes nothing) and to feed them again
//! when the dataflow is rebuilt. For a relation that no rule derives, the base facts
//! *are* the relation's materialization, which the workers' tables already hold and
//! the handle reads between commits ([`Mirror`], in one process): there the handle
//! keeps no copy (on OWL 2 RL over LUBM(50), 84% of the base facts: 48.7 → 6.6 MB). Such a relation
//! is *mirrored*. The copy comes back ([`realize`]) before any commit that needs it:
//!
//! * a rule now derives the relation, or a program change drops it;
//! * the dataflow is rebuilt (every base fact is fed to the new one);
//! * limits are set: a refused commit is rolled back from the base facts, and the
//!   workers' tables then hold the stopped commit's state;
//! * several processes: the tables of the other processes are out of reach.
//!
//! During a commit, the changes of a mirrored relation are checked against the
//! materialization of the last commit and those staged before them ([`BaseSet`]).

use super::mirror::Mirror;
use crate::staging::FactSet;
use crate::store::{FlatSet, SortedSet};
use dynalog_analysis::{Program, Value};

/// Per relation of `program`, whether its base facts may be left to the
/// materialization: no rule derives it (an `eqrel` is closed by rules) and it is
/// neither the source nor the result of an aggregate (the `distinct` folds the one
/// into the other), given that the caller runs in one process without limits.
pub(super) fn underived(program: &Program) -> Vec<bool> {
    let mut underived = vec![true; program.relations.len()];
    let heads = program.rules.iter().map(|r| r.head.relation);
    let aggregates = program.aggregates.iter().flat_map(|a| [a.source, a.head]);
    for rel in heads.chain(aggregates) {
        if let Some(u) = underived.get_mut(rel as usize) {
            *u = false;
        }
    }
    for (u, relation) in underived.iter_mut().zip(&program.relations) {
        *u &= !relation.eqrel;
    }
    underived
}

/// The base facts of mirrored relation `rel`, of `arity` values, read back from the
/// materialization (which, between commits, they equal).
pub(super) fn realize(mirror: &Mirror, rel: usize, arity: usize) -> SortedSet {
    let mut set = SortedSet::new(arity);
    if arity == 0 {
        if mirror.len(rel) > 0 {
            set.insert(&[]);
        }
        return set;
    }
    let mut rows = Vec::with_capacity(mirror.len(rel) * arity);
    mirror.for_each(rel, &mut |t| rows.extend_from_slice(t));
    set.load(rows);
    set
}

/// The base facts of one relation while a commit applies the staged changes.
pub(super) enum BaseSet<'a> {
    /// Held by the handle.
    Held(SortedSet),
    /// Mirrored: read from the materialization.
    Mirrored(Overlay<'a>),
}

/// A mirrored relation's base facts during a commit: the materialization of the last
/// commit, and the changes applied to it so far in this commit.
pub(super) struct Overlay<'a> {
    mirror: &'a Mirror,
    rel: usize,
    arity: usize,
    /// Facts inserted by this commit that the materialization lacks.
    added: FlatSet,
    /// Facts of the materialization removed by this commit.
    removed: FlatSet,
}

impl<'a> BaseSet<'a> {
    /// Mirrored relation `rel` of `arity` values.
    pub fn mirrored(mirror: &'a Mirror, rel: usize, arity: usize) -> BaseSet<'a> {
        BaseSet::Mirrored(Overlay {
            mirror,
            rel,
            arity,
            added: FlatSet::new(arity),
            removed: FlatSet::new(arity),
        })
    }

    /// The held set back, if it is one.
    pub fn into_held(self) -> Option<SortedSet> {
        match self {
            BaseSet::Held(set) => Some(set),
            BaseSet::Mirrored(_) => None,
        }
    }
}

impl Overlay<'_> {
    fn insert(&mut self, tuple: &[Value]) -> bool {
        if self.mirror.contains(self.rel, tuple) {
            // Present unless removed earlier in the commit.
            self.removed.remove(tuple)
        } else {
            self.added.insert(tuple)
        }
    }

    fn remove(&mut self, tuple: &[Value]) -> bool {
        if self.mirror.contains(self.rel, tuple) {
            self.removed.insert(tuple)
        } else {
            self.added.remove(tuple)
        }
    }

    fn for_each(&self, f: &mut dyn FnMut(&[Value])) {
        self.mirror.for_each(self.rel, &mut |t| {
            if !self.removed.contains(t) {
                f(t)
            }
        });
        self.added.iter().for_each(f);
    }
}

impl FactSet for BaseSet<'_> {
    fn empty(arity: usize) -> Self {
        BaseSet::Held(SortedSet::new(arity))
    }

    fn arity(&self) -> usize {
        match self {
            BaseSet::Held(set) => set.arity(),
            BaseSet::Mirrored(o) => o.arity,
        }
    }

    fn insert(&mut self, tuple: &[Value]) -> bool {
        match self {
            BaseSet::Held(set) => set.insert(tuple),
            BaseSet::Mirrored(o) => o.insert(tuple),
        }
    }

    fn remove(&mut self, tuple: &[Value]) -> bool {
        match self {
            BaseSet::Held(set) => set.remove(tuple),
            BaseSet::Mirrored(o) => o.remove(tuple),
        }
    }

    fn for_each(&self, f: &mut dyn FnMut(&[Value])) {
        match self {
            BaseSet::Held(set) => set.iter().for_each(f),
            BaseSet::Mirrored(o) => o.for_each(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// A mirrored relation's base facts answer as a set would, under any sequence
        /// of insertions and removals in a commit, from any materialization.
        #[test]
        fn a_mirrored_relation_has_set_semantics(
            before in proptest::collection::btree_set((0u32..6, 0u32..6), 0..20),
            ops in proptest::collection::vec((any::<bool>(), 0u32..6, 0u32..6), 0..60),
        ) {
            // Relation 1 of arity 2, in two parts, beside an empty relation 0.
            let mirror = Mirror::new(2, [1usize, 2].into_iter());
            for (i, &(a, b)) in before.iter().enumerate() {
                mirror.change(i % 2, &[1, a, b], 1).expect("a copy takes changes");
            }
            let mut model: BTreeSet<Vec<u32>> = before.iter().map(|&(a, b)| vec![a, b]).collect();
            let mut set = BaseSet::mirrored(&mirror, 1, 2);
            for (insert, a, b) in ops {
                let t = [a, b];
                let (got, want) = if insert {
                    (set.insert(&t), model.insert(t.to_vec()))
                } else {
                    (set.remove(&t), model.remove(&t[..]))
                };
                prop_assert_eq!(got, want, "{} {:?}", if insert { "insert" } else { "remove" }, t);
            }
            let mut all = BTreeSet::new();
            set.for_each(&mut |t| {
                all.insert(t.to_vec());
            });
            prop_assert_eq!(all, model);
            prop_assert!(set.into_held().is_none());
        }
    }
}
