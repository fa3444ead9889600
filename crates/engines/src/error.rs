//! The errors of the engines' public API: one enum, [`EngineError`], whose `Display` is
//! the message the front ends print.

use crate::limits::LimitExceeded;
use std::fmt;

/// Why an engine refused or failed. User-input errors are caught before the engines
/// (by the parser and the analysis); what is left is a program an engine cannot take,
/// a transaction refused by a limit, a setting an engine does not support, or a
/// failure of the engine itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EngineError {
    /// The engine failed while evaluating: a worker failed, a process of its cluster
    /// was lost, the workers could not be started or connected. A failed engine stays
    /// failed ([`crate::Engine::failed`]).
    Failed(String),
    /// A program [`crate::Engine::set_program`] does not take (it changes a relation
    /// it keeps; in a cluster, it needs a dataflow of another shape). The engine
    /// keeps its program.
    ProgramRejected(String),
    /// The transaction exceeded a limit ([`crate::Limits`]) and was rolled back: the
    /// engine is exactly as it was before it.
    LimitExceeded(LimitExceeded),
    /// A setting this engine or configuration does not support (limits on an engine
    /// without them, or over several processes; several processes with an engine
    /// other than the differential one).
    Unsupported(String),
    /// [`crate::create`] was given a name that is not in [`crate::ENGINE_NAMES`].
    UnknownEngine(String),
}

impl EngineError {
    /// The limit a refused transaction exceeded, if that is why it failed; the
    /// engine's state is then the state before the transaction.
    pub fn limit(&self) -> Option<LimitExceeded> {
        match self {
            EngineError::LimitExceeded(limit) => Some(*limit),
            _ => None,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Failed(m)
            | EngineError::ProgramRejected(m)
            | EngineError::Unsupported(m) => f.write_str(m),
            EngineError::LimitExceeded(limit) => limit.fmt(f),
            EngineError::UnknownEngine(name) => write!(
                f,
                "unknown engine `{name}` (available: {})",
                crate::ENGINE_NAMES.join(", ")
            ),
        }
    }
}

impl std::error::Error for EngineError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn messages_are_the_reasons_and_only_a_refusal_names_a_limit() {
        let refused = EngineError::LimitExceeded(LimitExceeded::Changes(5));
        assert_eq!(refused.limit(), Some(LimitExceeded::Changes(5)));
        assert_eq!(refused.to_string(), LimitExceeded::Changes(5).to_string());
        let late = EngineError::LimitExceeded(LimitExceeded::Time(Duration::from_millis(1500)));
        assert!(
            late.to_string()
                .starts_with("the transaction took more than 1.5 s"),
            "{late}"
        );
        for e in [
            EngineError::Failed("a worker failed".into()),
            EngineError::ProgramRejected("a worker failed".into()),
            EngineError::Unsupported("a worker failed".into()),
        ] {
            assert_eq!(e.to_string(), "a worker failed");
            assert_eq!(e.limit(), None);
        }
    }
}
