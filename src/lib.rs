//! dynalog as a library.
//!
//! The pipeline's stages are crates of their own (`dynalog-syntax`, `dynalog-analysis`,
//! `dynalog-engines`, `dynalog-io`, `dynalog-live`); this crate holds the front ends and
//! keeps the paths users and tests know:
//!
//! * [`live`] (the `dynalog-live` crate): a materialization that lives across
//!   transactions of facts and rules, addressed with text, and the command protocol of
//!   a session (the API behind `dynalog session` and `dynalog serve`).
//! * [`durable`]: the write-ahead log and snapshots of `--data-dir` (crash recovery).

pub use dynalog_live as live;
pub use dynalog_live::durable;

pub use live::{Commit, LiveError, Materialization};
