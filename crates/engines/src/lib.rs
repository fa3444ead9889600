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

use dynalog_analysis::{Program, RelId, Value};
use std::fmt;
use std::time::Duration;

pub mod diff;
pub mod seminaive;

pub use seminaive::Seminaive;

/// What an engine reports about one commit.
#[derive(Clone, Debug, Default)]
pub struct CommitStats {
    /// One entry per stratum evaluated, in order.
    pub strata: Vec<StratumStats>,
    /// Wall time of the whole commit.
    pub elapsed: Duration,
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

/// An error raised while evaluating (not a user-input error: those are caught earlier).
#[derive(Clone, Debug)]
pub struct EngineError(pub String);

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EngineError {}

/// The interface every engine implements.
pub trait Engine {
    /// The name used by `--engine`.
    fn name(&self) -> &'static str;

    /// The program being evaluated.
    fn program(&self) -> &Program;

    /// Stage the insertion of a base fact. `tuple.len()` must be the relation's arity.
    fn insert(&mut self, relation: RelId, tuple: &[Value]);

    /// Stage the deletion of a base fact (no effect if it is not a base fact).
    fn remove(&mut self, relation: RelId, tuple: &[Value]);

    /// Apply everything staged since the last commit and bring the materialization up to date.
    fn commit(&mut self) -> Result<CommitStats, EngineError>;

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

/// Names accepted by `--engine`.
pub const ENGINE_NAMES: &[&str] = &["seminaive", "diff"];

/// Create an engine by name.
pub fn create(name: &str, program: Program, workers: usize) -> Result<Box<dyn Engine>, String> {
    match name {
        "seminaive" => Ok(Box::new(Seminaive::new(program))),
        "diff" => Ok(Box::new(
            diff::Diff::new(program, workers).map_err(|e| e.to_string())?,
        )),
        other => Err(format!(
            "unknown engine `{other}` (available: {})",
            ENGINE_NAMES.join(", ")
        )),
    }
}
