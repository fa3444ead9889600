//! Stage 2 of the dynalog pipeline: from the AST to a checked, integer-only program.
//!
//! * [`value`]: the value domain. Every value is a `u32` ([`Value`]); symbols are interned
//!   to dense ids in a [`SymbolTable`], numbers are stored as their 32-bit patterns (as in
//!   Soufflé's default build). Engines see only these integers.
//! * [`ir`]: the checked program engines evaluate: relations with typed columns, rules
//!   with variables numbered into fixed slots, bodies ordered for evaluation, strata. It
//!   prints as Datalog with its names (`Display` for [`Program`], what
//!   `dynalog run --show ir` prints).
//! * [`check`]: resolution (declared relations, arities), type inference and checking,
//!   safety (groundedness), stratification (no negation through recursion), one pass
//!   per submodule, each error a [`dynalog_syntax::Diagnostic`] pointing at the
//!   offending text.

pub mod check;
pub mod ir;
pub mod value;

pub use check::{
    MAX_BODY_LITERALS, Options, PatternArg, analyse, analyse_with, lower_fact, lower_pattern,
};
pub use dynalog_syntax::{ArithOp, CmpOp, UnaryOp};
pub use ir::*;
pub use value::{
    Branch, ParseValueError, ParseValueErrorKind, RecordType, SymbolTable, SymbolsRead, TableMark,
    Texts, Type, Value, sort_on_threads_by, sort_rows, sort_rows_on,
};
