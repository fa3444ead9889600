//! Rules compiled to pipelines over a slot array, and the one runner that evaluates
//! them, shared by the `seminaive` (and `remat`) and `relational` engines.
//!
//! * `plan`: compilation of a rule into a [`RulePlan`], one operation per body literal
//!   with the bound/unbound state of every variable known statically, and its printed
//!   form ([`RulePlan::display`]).
//! * `run`: the runner, nested loops over the plan's operations. What an atom reads
//!   and where head tuples go is the engine's: a [`Source`] (semi-naive evaluation reads
//!   row-id ranges of append-only rows and batches heads into a growing set;
//!   delete-rederive reads maintained stores, deltas and the old state, and can stop at
//!   a delta fact's first derivation).
//! * `names`: how the printouts of compiled rules (here and in the `diff` engine) name
//!   relations, variables and typed constants.

pub(crate) mod names;
pub mod plan;
pub mod run;

pub use plan::{Access, IndexSpecs, Join, KeySrc, Op, RulePlan, compile_rule};
pub use run::{Matches, Source, run};
