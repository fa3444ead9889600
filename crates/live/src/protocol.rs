//! The command protocol of `dynalog session`: one command per line (see [`HELP`]),
//! answered as text.
//!
//! [`command`] runs one line against a [`Materialization`] and writes its answer:
//! nothing for a staged change (or `already present: RULE` for each rule of a
//! `+ RULE.` line that the program already has: rules are a set, it is not added again), the
//! changes then [`summary`] for `commit`, `aborted`, the matching facts then
//! `N results` for `? PATTERN.`, a number for `size REL` (the facts and the engine's
//! memory, part by part, for `size`), facts for `dump`, rules for
//! `rules`. A refused line is a [`CommandError`], whose `Display` is the reason the
//! session prints after `error: line N:`. Reading the lines and numbering them is the
//! front end's (`dynalog session` reads standard input).

use crate::error::LiveError;
use crate::materialization::{Commit, Materialization, Staged};
use std::fmt;
use std::io::Write;
use std::path::Path;

/// The commands, as `help` prints them.
pub const HELP: &str = "\
+ FACT.              stage an insertion, e.g. `+ edge(1, 2).`
- FACT.              stage a deletion
+ RULE.              stage adding a rule, e.g. `+ path(x, z) :- path(x, y), edge(y, z).`
- RULE.              stage removing a rule (matched ignoring layout and variable names)
load REL FILE        stage inserting every fact of FILE (in REL's .input format)
unload REL FILE      stage deleting every fact of FILE
commit               apply what is staged; print the changes and a summary
abort                discard what is staged
? PATTERN.           facts matching a pattern, e.g. `? path(1, x).`
size REL             number of facts of REL
size                 number of facts, and the engine's memory by part
dump REL             every fact of REL
rules                the current rules
help                 this list
quit                 stop (so does the end of the input)";

/// What the session does after a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// How answers are written.
pub struct Options<'a> {
    /// The directory `load`/`unload` read from (see
    /// [`Materialization::set_load_policy`]).
    pub fact_dir: &'a Path,
    /// Print only the summary of a commit, not its changes.
    pub quiet: bool,
}

/// Why a command line was refused (nothing of it is applied).
#[derive(Debug)]
#[non_exhaustive]
pub enum CommandError {
    /// Staging the change was refused (positions are columns of the line).
    Stage(LiveError),
    /// The commit was refused; its whole transaction is discarded.
    Commit(LiveError),
    /// A query (`?`, `size`, `dump`) was refused (positions are columns of the line).
    Query(LiveError),
    /// The command's arguments are not what it takes.
    Usage(String),
    /// Not a command.
    Unknown(String),
    /// The answer could not be written.
    Output(std::io::Error),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Stage(e) | CommandError::Query(e) => e.fmt(f),
            CommandError::Commit(e) => write!(f, "commit refused: {}", e.message()),
            CommandError::Usage(m) => f.write_str(m),
            CommandError::Unknown(word) => write!(
                f,
                "unknown command `{word}` (commands: + - load unload commit abort ? size dump rules help quit)"
            ),
            CommandError::Output(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommandError::Stage(e) | CommandError::Commit(e) | CommandError::Query(e) => Some(e),
            CommandError::Output(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> CommandError {
        CommandError::Output(e)
    }
}

/// Run one command line: the changes of a commit go to `changes_out`, every other
/// answer to `out`. Blank lines and comments (`//`, `#`) do nothing.
pub fn command(
    m: &mut Materialization,
    line: &str,
    options: &Options<'_>,
    changes_out: &mut dyn Write,
    out: &mut dyn Write,
) -> Result<Flow, CommandError> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with("//") || trimmed.starts_with('#') {
        return Ok(Flow::Continue);
    }
    let (word, rest) = match trimmed.find(char::is_whitespace) {
        Some(i) => (&trimmed[..i], trimmed[i..].trim_start()),
        None => (trimmed, ""),
    };
    match m
        .stage(line, options.fact_dir)
        .map_err(CommandError::Stage)?
    {
        Some(Staged::Change) => return Ok(Flow::Continue),
        Some(Staged::RulesPresent(rules)) => {
            for r in rules {
                writeln!(out, "already present: {r}")?;
            }
            return Ok(Flow::Continue);
        }
        None => {}
    }
    match word {
        "commit" => {
            no_args(word, rest)?;
            let c = m.commit().map_err(CommandError::Commit)?;
            if !options.quiet {
                m.write_changes(&c.changes, changes_out)?;
                changes_out.flush()?;
            }
            writeln!(out, "{}", summary(&c))?;
        }
        "abort" => {
            no_args(word, rest)?;
            m.abort();
            writeln!(out, "aborted")?;
        }
        "?" => {
            if rest.is_empty() {
                return Err(CommandError::Usage(
                    "expected a pattern after `?`, such as `? path(1, x).`".into(),
                ));
            }
            let rows = m.query(rest).map_err(|mut e| {
                // Columns count from the start of the line.
                if let LiveError::Parse(d) = &mut e
                    && d.line == 1
                {
                    d.col += rest.as_ptr() as usize - line.as_ptr() as usize;
                }
                CommandError::Query(e)
            })?;
            for (r, t) in &rows {
                writeln!(out, "{}", m.render(*r, t))?;
            }
            writeln!(out, "{} result{}", rows.len(), plural(rows.len()))?;
        }
        "size" if rest.is_empty() => {
            let facts = m.total_facts();
            writeln!(out, "{facts} facts")?;
            match m.memory() {
                Some(memory) => write!(out, "{}", memory.table(facts))?,
                None => writeln!(out, "(this engine does not account for its memory)")?,
            }
        }
        "size" => {
            let rel = one_arg(word, rest)?;
            let n = m.len(rel).ok_or_else(|| {
                CommandError::Query(LiveError::Invalid(format!("unknown relation `{rel}`")))
            })?;
            writeln!(out, "{n}")?;
        }
        "dump" => {
            let rel = one_arg(word, rest)?;
            let rows = m.dump(rel).map_err(CommandError::Query)?;
            for (r, t) in &rows {
                writeln!(out, "{}", m.render(*r, t))?;
            }
        }
        "rules" => {
            no_args(word, rest)?;
            for r in m.rules() {
                writeln!(out, "{r}")?;
            }
        }
        "help" => writeln!(out, "{HELP}")?,
        "quit" | "exit" => {
            no_args(word, rest)?;
            return Ok(Flow::Quit);
        }
        other => return Err(CommandError::Unknown(other.to_string())),
    }
    Ok(Flow::Continue)
}

/// The summary line of a commit: `commit N: +A -B in T ms`, counting the shown changes.
/// A commit's summary line: the changes users follow, counted.
pub fn summary(c: &Commit) -> String {
    format!(
        "commit {}: +{} -{} in {:.1} ms",
        c.number,
        c.inserted,
        c.deleted,
        c.elapsed.as_secs_f64() * 1e3
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn no_args(word: &str, rest: &str) -> Result<(), CommandError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(CommandError::Usage(format!("`{word}` takes no argument")))
    }
}

fn one_arg<'a>(word: &str, rest: &'a str) -> Result<&'a str, CommandError> {
    let mut parts = rest.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(a), None) => Ok(a),
        _ => Err(CommandError::Usage(format!("usage: {word} RELATION"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(m: &mut Materialization, line: &str) -> Result<String, String> {
        let mut out = Vec::new();
        let options = Options {
            fact_dir: Path::new("."),
            quiet: false,
        };
        let mut changes = Vec::new();
        command(m, line, &options, &mut changes, &mut out).map_err(|e| e.to_string())?;
        changes.extend(out);
        Ok(String::from_utf8_lossy(&changes).into_owned())
    }

    #[test]
    fn a_rule_already_present_is_not_added_again_and_says_so() {
        let program = ".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n\
                       .output p\np(x, y) :- e(x, y).\n";
        let mut m = Materialization::new("p.dl", program, "seminaive", 1).expect("checks");
        m.commit().expect("commits");
        assert_eq!(
            run(&mut m, "+ p(a, b) :- e(a, b).").as_deref(),
            Ok("already present: p(a, b) :- e(a, b).\n")
        );
        assert!(!m.has_staged());
        assert_eq!(run(&mut m, "+ e(1, 2).").as_deref(), Ok(""));
        assert_eq!(
            run(&mut m, "? p(1, x)").as_deref(),
            Ok("0 results\n"),
            "staged, not committed"
        );
        assert_eq!(
            run(&mut m, "? p(1 x)"),
            Err("column 7: expected `)` after the arguments of `p`, found `x`".into())
        );
        assert_eq!(run(&mut m, "size q"), Err("unknown relation `q`".into()));
        assert_eq!(
            run(&mut m, "abort x"),
            Err("`abort` takes no argument".into())
        );
        assert_eq!(run(&mut m, "quit"), Ok(String::new()));
    }
}
