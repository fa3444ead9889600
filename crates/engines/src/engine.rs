//! The [`Engine`] trait every engine implements, what a commit reports
//! ([`CommitStats`], [`Change`]), and the comparison of two materializations the
//! engines that re-evaluate use to report their changes ([`difference`]).

use crate::{ChangeList, EngineError, Limits};
use dynalog_analysis::{Program, RelId, Value};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// What an engine reports about one commit.
#[derive(Clone, Debug, Default)]
pub struct CommitStats {
    /// One entry per stratum evaluated, in order.
    pub strata: Vec<StratumStats>,
    /// Wall time of the whole commit.
    pub elapsed: Duration,
    /// Delete-rederive engines: facts overdeleted by the commit (removed because a
    /// derivation of theirs used a deleted fact).
    pub overdeleted: usize,
    /// Delete-rederive engines: overdeleted facts that are back in the materialization
    /// after the commit (rederived).
    pub rederived: usize,
}

#[derive(Clone, Debug, Default)]
pub struct StratumStats {
    /// Names of the relations of the stratum.
    pub relations: Vec<String>,
    /// Fixpoint rounds (1 for a non-recursive stratum).
    pub iterations: usize,
    /// Facts of the stratum's relations after evaluation.
    pub facts: usize,
    pub elapsed: Duration,
}

/// What an engine holds in memory, by part (see [`Engine::memory`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    pub parts: Vec<MemoryPart>,
}

/// One part of an engine's memory: what it is, the records it holds (updates of an
/// arrangement, facts of a table) and their bytes (allocated capacity, not only what
/// is used).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPart {
    pub name: String,
    pub records: u64,
    pub bytes: u64,
}

impl MemoryUsage {
    /// Add `records` and `bytes` to the part `name`, created if missing (parts keep
    /// the order in which they are first named).
    pub fn add(&mut self, name: &str, records: u64, bytes: u64) {
        match self.parts.iter_mut().find(|p| p.name == name) {
            Some(p) => {
                p.records += records;
                p.bytes += bytes;
            }
            None => self.parts.push(MemoryPart {
                name: name.to_string(),
                records,
                bytes,
            }),
        }
    }

    /// The bytes of every part.
    pub fn total_bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }

    /// A table, one part per line, then the total and, when `facts` > 0, the bytes
    /// per fact (of the materialization).
    pub fn table(&self, facts: u64) -> String {
        let mut text = String::new();
        let width = self.parts.iter().map(|p| p.name.len()).max().unwrap_or(0);
        for p in &self.parts {
            text.push_str(&format!(
                "  {:width$}  {:>12} records  {:>10.1} MB\n",
                p.name,
                p.records,
                p.bytes as f64 / 1e6
            ));
        }
        let total = self.total_bytes();
        text.push_str(&format!(
            "  {:width$}  {:>12}          {:>10.1} MB",
            "total",
            "",
            total as f64 / 1e6
        ));
        if facts > 0 {
            text.push_str(&format!(
                ", {:.1} bytes per fact",
                total as f64 / facts as f64
            ));
        }
        text.push('\n');
        text
    }
}

/// One change of the materialization: a fact of a relation appeared (`+1`) or
/// disappeared (`-1`).
pub type Change = (RelId, Vec<Value>, isize);

/// The interface every engine implements.
///
/// Facts and rules both change through it: [`Engine::insert`] / [`Engine::remove`]
/// stage fact changes, [`Engine::set_program`] stages a new rule set, and
/// [`Engine::commit`] applies everything staged as one transaction, or
/// [`Engine::abort`] discards it.
pub trait Engine {
    /// The name used by `--engine`.
    fn name(&self) -> &'static str;

    /// The program being evaluated.
    fn program(&self) -> &Program;

    /// Stage the insertion of a base fact. `tuple.len()` must be the relation's arity.
    fn insert(&mut self, relation: RelId, tuple: &[Value]);

    /// Stage the deletion of a base fact (no effect if it is not a base fact).
    fn remove(&mut self, relation: RelId, tuple: &[Value]);

    /// Stage a change of the rules. `program` is the re-analysed program: the same
    /// relations at the same ids (more may be appended, or trailing ones dropped: their
    /// facts are then retracted), a symbol table that extends the current one, any
    /// rules and strata. Inline facts the new program has and the old one had not are
    /// staged for insertion, those it dropped for removal. A program that changes a
    /// relation it keeps is rejected: the next commit fails and nothing changes.
    fn set_program(&mut self, program: Program);

    /// Whether [`Engine::set_program`] would accept `program`:
    /// [`EngineError::ProgramRejected`] with the reason if not. The default is
    /// [`crate::check_extends`]; an engine with limits of its own (the differential
    /// engine in a cluster cannot rebuild its dataflow) adds them.
    fn check_program(&self, program: &Program) -> Result<(), EngineError> {
        crate::check_extends(self.program(), program)
    }

    /// Apply everything staged since the last commit and bring the materialization up to date.
    fn commit(&mut self) -> Result<CommitStats, EngineError>;

    /// Discard everything staged since the last commit: fact changes and program
    /// changes alike (the program is again the one of the last commit; before the
    /// first commit, the one the engine was created with, whose inline facts stay the
    /// first base facts). The materialization is untouched.
    fn abort(&mut self);

    /// Whether anything is staged since the last commit (fact changes, or a program).
    fn has_staged(&self) -> bool;

    /// Call `f(insert?, relation, tuple)` on every fact change staged since the last
    /// commit, in order (those [`Engine::set_program`] staged for inline facts too).
    fn for_each_staged(&self, f: &mut dyn FnMut(bool, RelId, &[Value]));

    /// Set the limits of every following commit (see [`Limits`]);
    /// [`EngineError::Unsupported`] if this engine cannot enforce them (the limits are
    /// then unchanged).
    fn set_limits(&mut self, limits: Limits) -> Result<(), EngineError> {
        if limits.is_none() {
            Ok(())
        } else {
            Err(EngineError::Unsupported(format!(
                "the {} engine does not support limits",
                self.name()
            )))
        }
    }

    /// Why the engine can no longer be used (a worker failed, a process of its cluster
    /// was lost), once that happened: every commit then returns this error. `None`
    /// while it works.
    fn failed(&self) -> Option<String> {
        None
    }

    /// Ask the engine to record the changes each commit makes (see
    /// [`Engine::last_changes`]). Off by default, since it costs, depending on the
    /// engine, a comparison of the materialization before and after or an entry per
    /// changed fact in a [`ChangeList`] (on a batch load, about as much memory as the
    /// materialization itself, for changes nobody needs).
    fn track_changes(&mut self, on: bool) {
        let _ = on;
    }

    /// The changes of every relation made by the last commit, one entry per fact, in
    /// no particular order (empty unless the engine tracks changes).
    fn last_changes(&self) -> &ChangeList;

    /// The last commit's changes, taken: the engine's list is empty afterwards, and the
    /// caller holds the only copy (a load's changes are as many as its facts).
    fn take_changes(&mut self) -> ChangeList;

    /// Whether a fact is in the materialization (as of the last commit).
    fn contains(&self, relation: RelId, tuple: &[Value]) -> bool;

    /// Whether a fact is a base fact of its relation (inserted, or an inline fact of the
    /// program, and not removed), as of the last commit. A base fact can be derived as
    /// well; what is derived only is not a base fact.
    fn is_base(&self, relation: RelId, tuple: &[Value]) -> bool;

    /// Number of facts of a relation in the materialization (as of the last commit).
    fn len(&self, relation: RelId) -> usize;

    /// Number of facts of every relation together (as of the last commit).
    fn total_len(&self) -> u64 {
        (0..self.program().relations.len())
            .map(|r| self.len(r as RelId) as u64)
            .sum()
    }

    /// All facts of a relation (as of the last commit), in no particular order.
    fn facts(&self, relation: RelId) -> Vec<Vec<Value>>;

    /// A count of the facts the running commit has changed so far (a lower bound,
    /// raised as the evaluation goes; 0 when a commit starts), to be read from another
    /// thread while [`Engine::commit`] runs: a progress display for a long evaluation.
    /// The same counter serves every commit of the engine. `None` if the engine keeps
    /// no such count.
    fn progress(&self) -> Option<Arc<AtomicU64>> {
        None
    }

    /// What the engine holds in memory, by part, as of now (`None` if it does not
    /// account for its memory). Cheap enough for a status query, not for every commit:
    /// it may walk the engine's tables.
    fn memory(&mut self) -> Option<MemoryUsage> {
        None
    }

    /// Call `f` on every fact of a relation (as of the last commit), in no particular
    /// order, without materializing a vector per fact. Engines that store facts flat
    /// override it; the default goes through [`Engine::facts`].
    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        for t in self.facts(relation) {
            f(&t);
        }
    }
}

/// The changes from one materialization to another, each given as a function that
/// calls its argument on every fact of a relation; `relations` bounds the ids.
pub fn difference(
    relations: usize,
    before: impl Fn(RelId, &mut dyn FnMut(&[Value])),
    after: impl Fn(RelId, &mut dyn FnMut(&[Value])),
) -> ChangeList {
    use std::collections::HashSet;
    let mut changes = ChangeList::new();
    for r in 0..relations as RelId {
        let mut old: HashSet<Vec<Value>> = HashSet::new();
        before(r, &mut |t| {
            old.insert(t.to_vec());
        });
        let mut new: HashSet<Vec<Value>> = HashSet::new();
        after(r, &mut |t| {
            new.insert(t.to_vec());
        });
        for t in old.difference(&new) {
            changes.push(r, t, -1);
        }
        for t in new.difference(&old) {
            changes.push(r, t, 1);
        }
    }
    changes
}

/// The number of facts that differ between two materializations (see [`difference`]).
pub(crate) fn difference_count(
    relations: usize,
    before: impl Fn(RelId, &mut dyn FnMut(&[Value])),
    after: impl Fn(RelId, &mut dyn FnMut(&[Value])),
) -> u64 {
    use std::collections::HashSet;
    let mut count = 0u64;
    for r in 0..relations as RelId {
        let mut old: HashSet<Vec<Value>> = HashSet::new();
        before(r, &mut |t| {
            old.insert(t.to_vec());
        });
        let mut seen = 0u64;
        after(r, &mut |t| {
            if old.contains(t) {
                seen += 1;
            } else {
                count += 1;
            }
        });
        count += old.len() as u64 - seen.min(old.len() as u64);
    }
    count
}
