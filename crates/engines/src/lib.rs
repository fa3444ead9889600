//! Stage 3 of the dynalog pipeline: evaluation engines behind one trait.
//!
//! Every engine takes a checked [`Program`](dynalog_analysis::Program) (integers only)
//! and maintains its materialization under insertions and deletions of base facts. A
//! change is staged with [`Engine::insert`] / [`Engine::remove`] (module `staging`,
//! shared by the engines), applied by [`Engine::commit`] or discarded by
//! [`Engine::abort`]. [`create`] builds an engine from a [`Config`].
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
//!
//! The rest: the trait and what a commit reports (module `engine`), the limits of a
//! transaction (`limits`), the errors (`error`), creating an engine by name (`config`),
//! the staged base facts of a transaction (`staging`); and what the engines share: the
//! flat row stores ([`store`]), the compiled-rule runner of `seminaive` and `relational`
//! ([`rules`]), and the printout of compiled rules ([`explain`]).

pub mod aggregate;
mod changes;
pub mod chibi;
mod config;
pub mod diff;
pub mod dred;
mod engine;
mod error;
pub mod explain;
mod limits;
pub mod relational;
pub mod remat;
pub mod rules;
pub mod seminaive;
mod staging;
pub mod store;

pub use changes::ChangeList;
pub use config::{ClusterRole, Config, ENGINE_NAMES, create};
pub(crate) use engine::difference_count;
pub use engine::{Change, CommitStats, Engine, MemoryPart, MemoryUsage, StratumStats, difference};
pub use error::EngineError;
pub(crate) use limits::Budget;
pub use limits::{LimitExceeded, Limits};
pub use seminaive::Seminaive;
pub use staging::{check_extends, inline_fact_changes};
