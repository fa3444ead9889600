//! dynalog as a library.
//!
//! The pipeline's stages are crates of their own (`dynalog-syntax`, `dynalog-analysis`,
//! `dynalog-engines`, `dynalog-io`); this crate holds what the front ends share:
//!
//! * [`live`]: a materialization that lives across transactions of facts and rules,
//!   addressed with text (the API behind `dynalog session` and `dynalog serve`).
//! * [`durable`]: the write-ahead log and snapshots of `--data-dir` (crash recovery).

pub mod durable;
pub mod live;

pub use live::{Commit, Error, Materialization};
