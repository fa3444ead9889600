//! Why a call of the library was refused: [`LiveError`].

use crate::durable::DurableError;
use dynalog_engines::LimitExceeded;
use dynalog_syntax::Diagnostic;
use std::fmt;

/// Why a staged change, a query or a commit was refused. Nothing of a refused call is
/// applied (a refused commit leaves the materialization as it was).
///
/// `Display` gives the message users see (the one `dynalog session` prints after
/// `error: line N:` and `dynalog serve` answers); [`LiveError::message`],
/// [`LiveError::position`] and [`LiveError::limit`] take it apart.
#[derive(Debug)]
#[non_exhaustive]
pub enum LiveError {
    /// Text handed to the call (a fact, rules, a pattern, a command line) does not
    /// parse or does not check against the program: the diagnostic, positioned in that
    /// text (line 1 and the column, for one line). Shown as `column C: reason`.
    Parse(Diagnostic),
    /// A call or command that is not well formed otherwise: an unknown relation, a
    /// missing argument, no rule given, a data folder attached after the first commit.
    Invalid(String),
    /// The program given at creation does not parse or check (the whole diagnostic,
    /// with its file, line, column and source line).
    Program(Diagnostic),
    /// The program that a transaction's rule changes make does not check (or a rule to
    /// remove is not in the program): the commit is refused, nothing of it applied.
    Rules(String),
    /// The commit exceeded a limit of [`crate::Materialization::set_limits`]; it was
    /// rolled back, nothing changed.
    Limit(LimitExceeded),
    /// The engine could not be started or refused a setting (shown as `error: reason`).
    Engine(String),
    /// The engine cannot apply a setting for this commit (shown as the engine's reason).
    Unsupported(String),
    /// The engine failed while committing (a worker failed, a process of its cluster was
    /// lost): see [`crate::Materialization::failed`].
    EngineFailed(String),
    /// A file named by `load`/`unload` was refused: loads are disabled, the path is
    /// absolute, has `..`, leaves the allowed directories, or is not a regular file.
    LoadRefused(String),
    /// A fact file (the program's inputs, a loaded file) cannot be read or has a bad
    /// line: the file, line, column and reason (never the line's text for `load`).
    Input(String),
    /// The state of a data folder does not fit the program (its facts name relations
    /// the program does not declare, or have other types).
    Recovery(String),
    /// The transaction could not be written to the data folder's log; nothing of it was
    /// applied.
    Unlogged(DurableError),
    /// The data folder failed otherwise (a snapshot could not be written).
    Durable(DurableError),
}

impl LiveError {
    /// What is wrong, without the position of [`LiveError::Parse`].
    pub fn message(&self) -> String {
        match self {
            LiveError::Parse(d) => d.message.clone(),
            other => other.to_string(),
        }
    }

    /// Where, in the text handed to the call (1-based line and column), when known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            LiveError::Parse(d) => Some((d.line, d.col)),
            _ => None,
        }
    }

    /// The limit a refused commit exceeded; nothing of the transaction was applied.
    pub fn limit(&self) -> Option<LimitExceeded> {
        match self {
            LiveError::Limit(l) => Some(*l),
            _ => None,
        }
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::Parse(d) => write!(f, "column {}: {}", d.col, d.message),
            LiveError::Program(d) => d.fmt(f),
            LiveError::Invalid(m)
            | LiveError::Rules(m)
            | LiveError::Unsupported(m)
            | LiveError::LoadRefused(m)
            | LiveError::Input(m)
            | LiveError::Recovery(m) => f.write_str(m),
            LiveError::Engine(e) => write!(f, "error: {e}"),
            LiveError::EngineFailed(e) => write!(f, "the engine failed: {e}"),
            LiveError::Limit(LimitExceeded::Changes(n)) => write!(
                f,
                "the transaction changes more than {n} facts, the limit of \
                 changes per commit (--max-changes {n}; raise it, or 0 for no limit); it was \
                 rolled back, nothing changed"
            ),
            LiveError::Limit(LimitExceeded::Time(t)) => write!(
                f,
                "the transaction took more than {} s, the limit of time per \
                 commit (--max-commit-time {}; raise it, or 0 for no limit); it was rolled \
                 back, nothing changed",
                t.as_secs_f64(),
                t.as_secs_f64()
            ),
            LiveError::Unlogged(e) => write!(
                f,
                "the transaction could not be logged, nothing was applied: {e}"
            ),
            LiveError::Durable(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LiveError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LiveError::Unlogged(e) | LiveError::Durable(e) => Some(e),
            _ => None,
        }
    }
}
