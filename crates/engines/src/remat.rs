//! The rematerializing engine (`--engine remat`): no incremental maintenance. Every
//! commit evaluates the whole program again from the current base facts with the
//! semi-naive engine, as a user of a batch Datalog system such as Soufflé would; it is
//! the study's rematerializing baseline. The changes of a commit, when asked for
//! ([`Engine::track_changes`]), are the difference of the results before and after.

use crate::{ChangeList, CommitStats, Engine, EngineError, Limits, Seminaive};
use dynalog_analysis::{Program, RelId, Value};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// The rematerializing engine: a [`Seminaive`] evaluator under its own name.
pub struct Remat {
    inner: Seminaive,
}

impl Remat {
    pub fn new(program: Program) -> Remat {
        Remat {
            inner: Seminaive::new(program),
        }
    }
}

impl Engine for Remat {
    fn name(&self) -> &'static str {
        "remat"
    }

    fn program(&self) -> &Program {
        self.inner.program()
    }

    fn insert(&mut self, relation: RelId, tuple: &[Value]) {
        self.inner.insert(relation, tuple);
    }

    fn remove(&mut self, relation: RelId, tuple: &[Value]) {
        self.inner.remove(relation, tuple);
    }

    fn set_program(&mut self, program: Program) {
        self.inner.set_program(program);
    }

    /// Re-evaluate everything from the base facts.
    fn commit(&mut self) -> Result<CommitStats, EngineError> {
        self.inner.commit()
    }

    fn abort(&mut self) {
        self.inner.abort();
    }

    fn has_staged(&self) -> bool {
        self.inner.has_staged()
    }

    fn for_each_staged(&self, f: &mut dyn FnMut(bool, RelId, &[Value])) {
        self.inner.for_each_staged(f);
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), EngineError> {
        self.inner.set_limits(limits)
    }

    fn track_changes(&mut self, on: bool) {
        self.inner.track_changes(on);
    }

    fn progress(&self) -> Option<Arc<AtomicU64>> {
        self.inner.progress()
    }

    fn last_changes(&self) -> &ChangeList {
        self.inner.last_changes()
    }

    fn take_changes(&mut self) -> ChangeList {
        self.inner.take_changes()
    }

    fn contains(&self, relation: RelId, tuple: &[Value]) -> bool {
        self.inner.contains(relation, tuple)
    }

    fn is_base(&self, relation: RelId, tuple: &[Value]) -> bool {
        self.inner.is_base(relation, tuple)
    }

    fn len(&self, relation: RelId) -> usize {
        self.inner.len(relation)
    }

    fn facts(&self, relation: RelId) -> Vec<Vec<Value>> {
        self.inner.facts(relation)
    }

    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        self.inner.for_each_fact(relation, f);
    }
}
