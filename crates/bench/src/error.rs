//! The errors of the harness. Each one displays as the command line prints it, one
//! line starting with `error: ` (or, for a program or data file that does not load, the
//! located diagnostic `file:line:col: error: reason`).

use dynalog_syntax::Diagnostic;
use std::fmt;
use std::path::PathBuf;

/// Why a run, a measurement or a report failed.
#[derive(Debug)]
pub enum Error {
    /// A bad option or `--worker` task; the message names it.
    Usage(String),
    /// A file, folder or process the harness could not read, write, create or start:
    /// `error: {context}: {source}`, with `context` such as "cannot write `PATH`".
    Io {
        context: String,
        source: std::io::Error,
    },
    /// A built-in program or a data file that does not parse or load.
    Load(Diagnostic),
    /// A generator failed while writing a workload's data (`data` is its cache key).
    Generate { data: String, message: String },
    /// The engine could not be created (its message, shown as it is).
    Engine(String),
    /// A commit of the engine failed.
    Commit(String),
    /// A symbol that Soufflé's fact files cannot hold (a tab or a line break).
    SouffleInput { relation: String, symbol: String },
    /// The file given to `--report` is not the results of a run.
    Results {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// Results or a worker's report could not be serialized.
    Json(serde_json::Error),
    /// A plot could not be drawn.
    Plot(String),
    /// The run ended, but measurements failed a correctness check or crashed.
    Failures { count: usize, results_md: PathBuf },
}

impl Error {
    /// An [`Error::Io`] with its context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(message) => write!(f, "error: {message}"),
            Error::Io { context, source } => write!(f, "error: {context}: {source}"),
            Error::Load(d) => write!(f, "{d}"),
            Error::Generate { data, message } => write!(f, "error: generating {data}: {message}"),
            Error::Engine(message) => f.write_str(message),
            Error::Commit(message) => write!(f, "error: commit failed: {message}"),
            Error::SouffleInput { relation, symbol } => write!(
                f,
                "error: cannot convert for Soufflé: a symbol of `{relation}` contains a tab or a line break: {symbol:?}"
            ),
            Error::Results { path, source } => write!(
                f,
                "error: `{}` is not the results.json of a bench run: {source}",
                path.display()
            ),
            Error::Json(e) => write!(f, "error: {e}"),
            Error::Plot(message) => write!(f, "error: plotting: {message}"),
            Error::Failures { count, results_md } => write!(
                f,
                "error: {count} measurement(s) failed a correctness check or crashed (see the Failures section of {})",
                results_md.display()
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Load(d) => Some(d),
            Error::Results { source, .. } | Error::Json(source) => Some(source),
            _ => None,
        }
    }
}

impl From<Diagnostic> for Error {
    fn from(d: Diagnostic) -> Error {
        Error::Load(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_command_lines() {
        let e = Error::io(
            "cannot write `/x/results.md`",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(
            e.to_string(),
            "error: cannot write `/x/results.md`: permission denied"
        );
        assert_eq!(
            Error::Usage("--repeat must be at least 1".into()).to_string(),
            "error: --repeat must be at least 1"
        );
        assert_eq!(
            Error::Failures {
                count: 2,
                results_md: "out/results.md".into()
            }
            .to_string(),
            "error: 2 measurement(s) failed a correctness check or crashed (see the Failures section of out/results.md)"
        );
        assert_eq!(
            Error::Commit("boom".into()).to_string(),
            "error: commit failed: boom"
        );
        let d = Diagnostic::line("a.dl", 3, 4, "bad");
        assert_eq!(Error::from(d.clone()).to_string(), d.to_string());
    }
}
