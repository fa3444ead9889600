//! Stage 3 of the dynalog pipeline: evaluation engines behind one trait.
//!
//! Every engine takes a checked [`Program`] (integers only) and maintains its
//! materialization under insertions and deletions of base facts. A change is staged with
//! [`Engine::insert`] / [`Engine::remove`] and applied by [`Engine::commit`].
//!
//! * [`diff`]: the differential engine: one differential-dataflow circuit whose inputs
//!   are the rules and the facts, so fact and rule changes are processed as differences.
//! * [`seminaive`]: the reference evaluator. Semi-naive evaluation stratum by stratum
//!   with hash indexes on the bound columns of each body atom; a commit re-evaluates
//!   from the current base facts. Simple and obviously right: the oracle of every test.
//!
//! The study's comparison engines:
//!
//! * [`relational`]: semi-naive evaluation over hash-indexed relations, maintained
//!   incrementally by delete-rederive (module [`dred`]), rules evaluated in parallel.
//! * [`chibi`]: the same delete-rederive maintenance over a deliberately unoptimised
//!   substitution-based evaluation (apply / unify with every fact / extend, no index).
//! * [`remat`]: no incremental maintenance: every commit re-evaluates from scratch.

use dynalog_analysis::{Program, RelId, Value};
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

pub mod chibi;
pub mod diff;
pub mod dred;
pub mod explain;
pub mod relational;
pub mod remat;
pub mod rules;
pub mod seminaive;
pub mod store;

pub use seminaive::Seminaive;

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

/// An error raised while evaluating (not a user-input error: those are caught earlier),
/// or a transaction refused by a limit ([`EngineError::limit`] says which).
#[derive(Clone, Debug)]
pub struct EngineError {
    pub message: String,
    /// The limit the refused transaction exceeded, if that is why it failed; the
    /// engine's state is then the state before the transaction.
    pub limit: Option<LimitExceeded>,
}

impl EngineError {
    pub fn new(message: impl Into<String>) -> EngineError {
        EngineError {
            message: message.into(),
            limit: None,
        }
    }

    /// The error of a transaction refused (and rolled back) for exceeding `limit`.
    pub fn limit_exceeded(limit: LimitExceeded) -> EngineError {
        EngineError {
            message: limit.to_string(),
            limit: Some(limit),
        }
    }
}

impl From<String> for EngineError {
    fn from(message: String) -> EngineError {
        EngineError::new(message)
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Per-transaction limits ([`Engine::set_limits`]). A commit that exceeds one stops
/// (promptly: engines check while they evaluate, not after the fixpoint), returns an
/// [`EngineError`] whose [`EngineError::limit`] names the limit, and leaves the engine
/// exactly as it was before the transaction: the same facts, the same program; what
/// was staged is discarded and the next commits work normally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// The most facts one commit may change: facts added to the materialization plus
    /// facts removed from it, over all relations, base facts included (the net change,
    /// the size of [`Engine::last_changes`]). Engines count a lower bound of it while
    /// they evaluate and stop as soon as it exceeds the limit; the semi-naive, remat,
    /// relational and chibi engines refuse exactly the commits whose net change exceeds
    /// it. The differential engine counts the changes of presence leaving its fixpoint
    /// loop, round by round, which is the net change when a commit only adds or only
    /// removes, but counts a fact whose derivation moves to a later round (after a
    /// deletion) once more per move: it may refuse a commit that deletes with a net
    /// change under the limit, never accept one over it.
    ///
    /// How early the count stops a commit depends on the engine: the relational and
    /// chibi engines maintaining facts count the facts they add and remove as they go,
    /// and the differential engine the changes leaving its loop; but an evaluation
    /// from scratch (seminaive and remat at every commit, relational and chibi after a
    /// rule change) only knows that its result so far exceeds the previous
    /// materialization by N, so a commit whose new facts come slowly (a join deriving
    /// mostly duplicates) may run long before it is stopped: set [`Limits::max_time`]
    /// too.
    pub max_changes: Option<u64>,
    /// The most wall-clock time one commit may take. Checked while evaluating (at least
    /// every few thousand derivations); restoring the previous state after the limit
    /// is hit takes extra time (the differential engine rebuilds its dataflow from the
    /// previous program and base facts: about the time of loading them).
    pub max_time: Option<Duration>,
}

impl Limits {
    /// No limit.
    pub const NONE: Limits = Limits {
        max_changes: None,
        max_time: None,
    };

    pub fn is_none(&self) -> bool {
        *self == Limits::NONE
    }
}

/// Which limit a refused transaction exceeded, and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitExceeded {
    /// [`Limits::max_changes`].
    Changes(u64),
    /// [`Limits::max_time`].
    Time(Duration),
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitExceeded::Changes(n) => write!(
                f,
                "the transaction changes more than {n} facts, the limit of changes per commit; \
                 it was rolled back"
            ),
            LimitExceeded::Time(t) => write!(
                f,
                "the transaction took more than {} s, the limit of time per commit; it was \
                 rolled back",
                t.as_secs_f64()
            ),
        }
    }
}

/// The limits of one commit, shared by the threads evaluating it: the deadline, and
/// which limit stopped it once one did.
#[derive(Debug)]
pub(crate) struct Budget {
    limits: Limits,
    deadline: Option<Instant>,
    /// 0: running; 1: too many changes; 2: too late.
    stopped: AtomicU8,
}

impl Budget {
    pub(crate) fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            deadline: limits.max_time.map(|t| Instant::now() + t),
            stopped: AtomicU8::new(0),
        }
    }

    pub(crate) fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether a limit was hit.
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) != 0
    }

    /// Check the deadline; whether a limit was hit.
    #[inline]
    pub(crate) fn check_time(&self) -> bool {
        if let Some(d) = self.deadline
            && Instant::now() >= d
        {
            let _ = self
                .stopped
                .compare_exchange(0, 2, Ordering::Relaxed, Ordering::Relaxed);
        }
        self.stopped()
    }

    /// Check the deadline and a lower bound of the changes so far; whether a limit was
    /// hit.
    #[inline]
    pub(crate) fn check(&self, changes: u64) -> bool {
        if let Some(max) = self.limits.max_changes
            && changes > max
        {
            let _ = self
                .stopped
                .compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
        }
        self.check_time()
    }

    /// The error of the limit that was hit, if one was.
    pub(crate) fn error(&self) -> Option<EngineError> {
        let limit = match self.stopped.load(Ordering::Relaxed) {
            1 => LimitExceeded::Changes(self.limits.max_changes.unwrap_or(0)),
            2 => LimitExceeded::Time(self.limits.max_time.unwrap_or_default()),
            _ => return None,
        };
        Some(EngineError::limit_exceeded(limit))
    }
}

impl std::error::Error for EngineError {}

/// One change of the materialization: a fact of a relation appeared (`+1`) or
/// disappeared (`-1`).
pub type Change = (RelId, Vec<Value>, isize);

/// The interface every engine implements.
///
/// Facts and rules both change through it: [`Engine::insert`] / [`Engine::remove`]
/// stage fact changes, [`Engine::set_program`] stages a new rule set, and
/// [`Engine::commit`] applies everything staged as one transaction.
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

    /// Whether [`Engine::set_program`] would accept `program`: `Err` with the reason
    /// if not. The default is [`check_extends`]; an engine with limits of its own (the
    /// differential engine in a cluster cannot rebuild its dataflow) adds them.
    fn check_program(&self, program: &Program) -> Result<(), String> {
        check_extends(self.program(), program)
    }

    /// Apply everything staged since the last commit and bring the materialization up to date.
    fn commit(&mut self) -> Result<CommitStats, EngineError>;

    /// Set the limits of every following commit (see [`Limits`]); `Err` with the
    /// reason if this engine cannot enforce them (the limits are then unchanged).
    fn set_limits(&mut self, limits: Limits) -> Result<(), String> {
        if limits.is_none() {
            Ok(())
        } else {
            Err(format!(
                "the {} engine does not support limits",
                self.name()
            ))
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
    /// engine, a comparison of the materialization before and after or a vector per
    /// changed fact (as much memory as the materialization itself on a batch load that
    /// does not need the changes).
    fn track_changes(&mut self, on: bool) {
        let _ = on;
    }

    /// The changes of every relation made by the last commit, one entry per fact, in
    /// no particular order (empty unless the engine tracks changes).
    fn last_changes(&self) -> &[Change];

    /// Whether a fact is in the materialization (as of the last commit).
    fn contains(&self, relation: RelId, tuple: &[Value]) -> bool;

    /// Number of facts of a relation in the materialization (as of the last commit).
    fn len(&self, relation: RelId) -> usize;

    /// All facts of a relation (as of the last commit), in no particular order.
    fn facts(&self, relation: RelId) -> Vec<Vec<Value>>;

    /// Call `f` on every fact of a relation (as of the last commit), in no particular
    /// order, without materializing a vector per fact. Engines that store facts flat
    /// override it; the default goes through [`Engine::facts`].
    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        for t in self.facts(relation) {
            f(&t);
        }
    }
}

/// The size from which the C allocator serves a request with its own memory map, set
/// by [`tune_allocator`].
pub const MMAP_THRESHOLD: usize = 256 * 1024;

/// Make freed large buffers go back to the operating system; call it once, first thing
/// in `main`, in a program that runs the engines (the `dynalog` binary does).
///
/// glibc's allocator serves requests of 128 KiB and more with a memory map of their own,
/// returned to the system when freed, but raises that threshold to the size of every
/// such block freed, up to 32 MiB: after a few rounds of the differential engine (whose
/// batches, consolidation tables and buffers are of that size, allocated and freed by
/// several threads) most large buffers come from the heaps and stay there when freed.
/// Fixing the threshold at [`MMAP_THRESHOLD`] keeps it where it is: measured with
/// `diff_bench` (2 workers), the peak RSS of transitive closure on 1,000 × 4,000 random
/// edges went from 364–370 to 298–300 MB and on RMAT-1k from 141–145 to 133–134 MB, in
/// the same time. Does nothing on other platforms or allocators; returns whether the
/// allocator took the setting.
pub fn tune_allocator() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a parameter of the allocator (thread-safe in glibc).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Check that `new` may replace `old` under [`Engine::set_program`]: every relation
/// both have keeps its name and column types.
pub fn check_extends(old: &Program, new: &Program) -> Result<(), String> {
    for (i, (a, b)) in old.relations.iter().zip(&new.relations).enumerate() {
        if a.name != b.name || a.types != b.types {
            return Err(format!(
                "the new program does not extend the current one: relation `{}` (#{i}) changed",
                a.name
            ));
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

/// The changes from one materialization to another, each given as a function that
/// calls its argument on every fact of a relation; `relations` bounds the ids.
pub fn difference(
    relations: usize,
    before: impl Fn(RelId, &mut dyn FnMut(&[Value])),
    after: impl Fn(RelId, &mut dyn FnMut(&[Value])),
) -> Vec<Change> {
    use std::collections::HashSet;
    let mut changes = Vec::new();
    for r in 0..relations as RelId {
        let mut old: HashSet<Vec<Value>> = HashSet::new();
        before(r, &mut |t| {
            old.insert(t.to_vec());
        });
        let mut new: HashSet<Vec<Value>> = HashSet::new();
        after(r, &mut |t| {
            new.insert(t.to_vec());
        });
        changes.extend(old.difference(&new).map(|t| (r, t.clone(), -1)));
        changes.extend(new.difference(&old).map(|t| (r, t.clone(), 1)));
    }
    changes
}

/// The base-fact changes a transaction made, to undo them if it is refused by a limit:
/// `(inserted?, relation, start in values)`, in order.
#[derive(Debug, Default)]
pub(crate) struct UndoLog {
    ops: Vec<(bool, RelId, usize, usize)>,
    values: Vec<Value>,
}

impl UndoLog {
    /// Record that `tuple` was inserted into (`true`) or removed from the base facts.
    pub(crate) fn record(&mut self, inserted: bool, relation: RelId, tuple: &[Value]) {
        self.ops
            .push((inserted, relation, self.values.len(), tuple.len()));
        self.values.extend_from_slice(tuple);
    }

    pub(crate) fn clear(&mut self) {
        self.ops.clear();
        self.values.clear();
    }

    /// Undo every change, last first: `apply(insert?, relation, tuple)` is called with
    /// the inverse of each.
    pub(crate) fn undo(&mut self, mut apply: impl FnMut(bool, RelId, &[Value])) {
        for &(inserted, rel, start, len) in self.ops.iter().rev() {
            apply(!inserted, rel, &self.values[start..start + len]);
        }
        self.clear();
    }
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

/// Names accepted by `--engine`.
pub const ENGINE_NAMES: &[&str] = &["seminaive", "diff", "relational", "chibi", "remat"];

/// Create an engine by name.
pub fn create(name: &str, program: Program, workers: usize) -> Result<Box<dyn Engine>, String> {
    match name {
        "seminaive" => Ok(Box::new(Seminaive::new(program))),
        "diff" => Ok(Box::new(
            diff::Diff::new(program, workers).map_err(|e| e.to_string())?,
        )),
        "relational" => Ok(Box::new(relational::Relational::new(program, workers))),
        "chibi" => Ok(Box::new(chibi::Chibi::new(program, workers))),
        "remat" => Ok(Box::new(remat::Remat::new(program))),
        other => Err(format!(
            "unknown engine `{other}` (available: {})",
            ENGINE_NAMES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_allocator_takes_the_mmap_threshold() {
        assert!(super::tune_allocator());
    }
}
