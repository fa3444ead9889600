//! A live materialization: a program whose facts *and rules* change in transactions.
//!
//! The library behind `dynalog session` and `dynalog serve` (and `dynalog::live`, its
//! path in the root package). Its modules:
//!
//! * [`materialization`]: [`Materialization`], transactions of facts and rules, limits,
//!   queries and rendering; [`pattern`]: the query patterns;
//! * [`protocol`]: the command lines of a session (`+ fact.`, `commit`, `? pattern.`…)
//!   and the text of their answers, the stdin/stdout loop of `dynalog session` aside;
//! * [`durable`]: the write-ahead log and snapshots of `--data-dir` (crash recovery);
//! * [`error`]: [`LiveError`], why a call was refused.
//!
//! [`Materialization`] is the library face of dynalog for programs that stay loaded:
//! it owns the program text, the symbol table and an engine, and turns text into
//! integer changes at the edge. Changes are staged — facts with
//! [`Materialization::insert_fact`] / [`Materialization::remove_fact`] (or
//! [`Materialization::insert`] / [`Materialization::remove`] with interned values), rules
//! with [`Materialization::add_rules`] / [`Materialization::remove_rules`] — and applied
//! together by [`Materialization::commit`], which returns every change of the
//! materialization. A transaction is all or nothing: if the new rule set does not
//! check (an unsafe rule, negation through recursion, an unknown relation), the commit
//! is refused with the reason and nothing staged is applied; [`Materialization::abort`]
//! discards a transaction explicitly.
//!
//! ```
//! use dynalog_live::Materialization;
//!
//! let program = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
//!                .output path\npath(x, y) :- edge(x, y).\n";
//! let mut m = Materialization::new("tc.dl", program, "diff", 2).unwrap();
//! m.insert_fact("edge(1, 2).").unwrap();
//! m.insert_fact("edge(2, 3).").unwrap();
//! m.commit().unwrap();
//! assert_eq!(m.len("path"), Some(2));
//!
//! // A rule is data: add it, and the closure appears as a difference.
//! m.add_rules("path(x, z) :- path(x, y), edge(y, z).").unwrap();
//! let commit = m.commit().unwrap();
//! assert_eq!(m.render_changes(&m.shown_changes(&commit.changes)), vec!["+ path(1, 3)."]);
//!
//! // Queries answer from the current materialization.
//! let rows = m.query("path(1, x)").unwrap();
//! assert_eq!(rows.len(), 2);
//! assert!(m.contains_fact("path(1, 3).").unwrap());
//!
//! // Removing the rule again (matched whatever the variable names) retracts what only it derived.
//! m.remove_rules("path(a, c) :- path(a, b), edge(b, c).").unwrap();
//! let commit = m.commit().unwrap();
//! assert_eq!(m.render_changes(&m.shown_changes(&commit.changes)), vec!["- path(1, 3)."]);
//!
//! // An unsafe rule is refused at commit, and nothing of its transaction is applied.
//! m.insert_fact("edge(3, 4).").unwrap();
//! m.add_rules("path(x, y) :- edge(x, x).").unwrap();
//! assert!(m.commit().is_err());
//! assert!(!m.contains_fact("edge(3, 4).").unwrap());
//! ```
//!
//! # Limits
//!
//! [`Materialization::set_limits`] bounds every transaction after the first (which
//! loads the inputs and is never limited): the facts one commit may change and the
//! time it may take ([`Limits`]). A commit over a limit stops while it evaluates, is
//! refused with a [`LiveError::Limit`] that names the limit, and leaves the
//! materialization, the program and the facts exactly as they were.
//!
//! # Rules are a set
//!
//! Adding a rule the program already has (matched whatever its layout, syntax and
//! variable names, as removal matches) is a no-op that [`Materialization::add_new_rules`]
//! and [`Materialization::stage`] report; removing a rule once removes it.

pub mod durable;
pub mod error;
pub mod materialization;
pub mod pattern;
pub mod protocol;

pub use error::LiveError;
pub use materialization::{
    AddedRules, Commit, LoadPolicy, Materialization, Staged, follow, quote, render_fact,
    resolve_load,
};
pub use pattern::Pattern;
