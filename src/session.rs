//! `dynalog session PROGRAM.dl [-F FACT_DIR] [-w N] [--engine NAME] [--quiet] [--changes FILE]`
//!
//! Loads the program and its `.input` facts, commits them as transaction 0, then reads
//! commands from standard input, one per line, and runs them with
//! [`dynalog::live::protocol`] (see its `HELP`). Facts and rules are
//! staged and applied together by `commit`, which prints every change of the
//! `.output` relations (of every relation when the program declares none) as
//! `+ fact.` / `- fact.`, sorted, then `commit N: +A -B in T ms`.
//!
//! A malformed line prints `error: line N: reason` and leaves the staged transaction
//! as it was; a commit whose rule changes do not check is refused with the reason, and
//! its whole transaction is discarded. The session goes on in both cases; the exit
//! status is non-zero if any error happened, so scripts notice.
//!
//! With `--data-dir DIR` every commit is logged to `DIR` and `fsync`ed before its
//! summary is printed; a restart with the same `DIR` recovers the last acknowledged
//! commit (its summary line then shows that commit's number and the whole recovered
//! state as insertions) and numbers the next commits after it (see `dynalog::durable`).
//!
//! With `-n N -p I -H HOSTFILE` (differential engine) the session runs on N processes:
//! process 0 is the session, the others follow it (see `docs/cluster.md`). The hostfile
//! is `-H` (timely's `-h`), so that `-h` is help, as everywhere.

use clap::Args;
use dynalog::live::protocol::{self, Flow, summary};
use dynalog::live::{LoadPolicy, Materialization};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// What `session` and `serve` share: the program, its facts and the engine.
#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// The Datalog program (Soufflé syntax, or the study's `head <- [body]` syntax).
    pub program: PathBuf,
    /// Folder of input facts (`.input r` reads `FACT_DIR/r.facts`) and of the files
    /// named by `load`/`unload`.
    #[arg(short = 'F', long = "fact-dir", default_value = ".")]
    pub fact_dir: PathBuf,
    /// The preprocessor's `-I` and `-M`, for the program file (rules added later are
    /// not preprocessed).
    #[command(flatten)]
    pub preprocess: crate::run::PreprocessArgs,
    /// Worker threads of the engine.
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// Evaluation engine.
    #[arg(long, default_value = "diff", value_parser = clap::builder::PossibleValuesParser::new(dynalog_engines::ENGINE_NAMES))]
    pub engine: String,
    /// Directory that `load`/`unload` may read files from (repeatable); by default the
    /// fact directory. Only regular files under it are read: absolute paths, `..`,
    /// symbolic links leading out of it, devices and FIFOs are refused.
    #[arg(long = "allow-load", value_name = "DIR", conflicts_with = "no_load")]
    pub allow_load: Vec<PathBuf>,
    /// Refuse every `load`/`unload` command.
    #[arg(long = "no-load")]
    pub no_load: bool,
    /// Several processes (`-n/-p/-H`): process 0 reads the commands and runs the
    /// transactions; the others hold their share of the dataflow.
    #[command(flatten)]
    pub cluster: crate::run::ClusterArgs,
    /// Keep every committed transaction in this folder (a write-ahead log, fsynced
    /// before a commit is acknowledged, and snapshots); a restart with the same folder
    /// and program recovers the last acknowledged commit instead of reading the inputs.
    #[arg(long = "data-dir", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// With --data-dir: fold the log into a snapshot every N commits (0: only when the
    /// log passes 64 MiB and at a clean exit).
    #[arg(
        long = "snapshot-every",
        value_name = "N",
        default_value_t = 10_000,
        requires = "data_dir"
    )]
    pub snapshot_every: u64,
    /// Refuse (and roll back) a transaction that changes more than N facts (inserted
    /// plus deleted, derived ones included); 0 for no limit. The first transaction,
    /// which loads the inputs, is not limited.
    #[arg(long = "max-changes", value_name = "N")]
    pub max_changes: Option<u64>,
    /// Refuse (and roll back) a transaction whose commit takes more than SECONDS; 0 for
    /// no limit. The first transaction is not limited.
    #[arg(long = "max-commit-time", value_name = "SECONDS")]
    pub max_commit_time: Option<f64>,
}

/// What [`LiveArgs::open`] starts.
pub enum Live {
    /// The materialization this process drives (alone, or as process 0 of a cluster).
    Lead(Box<Materialization>),
    /// Another process of a cluster: it follows process 0 until process 0 stops.
    Follow(dynalog_engines::diff::Follower),
}

impl LiveArgs {
    /// Check the arguments, read and check the program, start the engine and stage the
    /// program's inputs (the first transaction, not yet committed). With several
    /// processes, process 0 gets the materialization and the others a follower (they
    /// read the program, but neither the facts nor any command).
    pub fn open(&self) -> Result<Live, String> {
        if self.workers == 0 {
            return Err("error: --workers must be at least 1".into());
        }
        let cluster = self.cluster.cluster(&self.engine)?;
        let source = self.preprocess.read(&self.program)?;
        let (name, text) = (source.name.clone(), source.text.to_string());
        let mut m = match cluster {
            None => Materialization::from_source(source, &self.engine, self.workers),
            Some(c) if c.process == 0 => Materialization::lead_source(source, self.workers, c),
            Some(c) => {
                let (p, n) = (c.process, c.processes);
                let f = dynalog::live::follow(&name, &text, self.workers, c)
                    .map_err(|e| e.to_string())?;
                eprintln!("process {p} of {n}: connected, following process 0");
                return Ok(Live::Follow(f));
            }
        }
        .map_err(|e| e.to_string())?;
        crate::run::print_warnings(m.program());
        m.set_load_policy(self.load_policy()?);
        m.set_limits(self.limits(dynalog_engines::Limits::NONE)?)
            .map_err(|e| e.to_string())?;
        let recovered = match &self.data_dir {
            Some(dir) => {
                let options = dynalog::durable::Options {
                    snapshot_every: self.snapshot_every,
                    ..Default::default()
                };
                let (d, state) = dynalog::durable::DataDir::open(dir, &text, options)
                    .map_err(|e| e.to_string())?;
                let last = state.as_ref().and_then(|s| s.last_commit);
                m.attach_data_dir(d, state)
                    .map_err(|e| format!("error: `{}`: {e}", dir.display()))?;
                if let Some(c) = last {
                    eprintln!(
                        "recovered commit {c} from `{}` (the inputs are not read again)",
                        dir.display()
                    );
                }
                last.is_some()
            }
            None => false,
        };
        if !recovered {
            m.stage_inputs(&self.fact_dir).map_err(|e| e.to_string())?;
        }
        Ok(Live::Lead(Box::new(m)))
    }

    /// Where `load`/`unload` may read: `--no-load`, the `--allow-load` directories
    /// (each must be a directory), or the fact directory.
    pub fn load_policy(&self) -> Result<LoadPolicy, String> {
        if self.no_load {
            return Ok(LoadPolicy::Deny);
        }
        if self.allow_load.is_empty() {
            return Ok(LoadPolicy::FactDir);
        }
        for d in &self.allow_load {
            if !d.is_dir() {
                return Err(format!(
                    "error: --allow-load `{}` is not a directory",
                    d.display()
                ));
            }
        }
        Ok(LoadPolicy::Dirs(self.allow_load.clone()))
    }

    /// The limits per commit of `--max-changes` and `--max-commit-time`, each taken
    /// from `default` when the flag is not given (0 is no limit).
    pub fn limits(
        &self,
        default: dynalog_engines::Limits,
    ) -> Result<dynalog_engines::Limits, String> {
        let max_time = match self.max_commit_time {
            None => default.max_time,
            Some(0.0) => None,
            Some(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
            Some(s) => {
                return Err(format!(
                    "error: --max-commit-time must be a number of seconds, 0 or more (got {s})"
                ));
            }
        };
        let max_changes = match self.max_changes {
            None => default.max_changes,
            Some(0) => None,
            Some(n) => Some(n),
        };
        Ok(dynalog_engines::Limits {
            max_changes,
            max_time,
        })
    }

    /// [`LiveArgs::open`] for a front end that only drives a materialization: a
    /// follower runs here until process 0 stops (`Ok(None)`).
    pub fn open_or_follow(&self) -> Result<Option<Materialization>, String> {
        match self.open()? {
            Live::Lead(m) => Ok(Some(*m)),
            Live::Follow(f) => {
                f.wait().map_err(|e| format!("error: {e}"))?;
                Ok(None)
            }
        }
    }
}

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct SessionArgs {
    #[command(flatten)]
    pub live: LiveArgs,
    /// Print help.
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Print only the summary line of each commit, not its changes.
    #[arg(long)]
    pub quiet: bool,
    /// Write the changes of each commit to this file instead of standard output.
    #[arg(long)]
    pub changes: Option<PathBuf>,
}

pub fn session(args: SessionArgs) -> Result<(), String> {
    let Some(mut m) = args.live.open_or_follow()? else {
        return Ok(());
    };
    let mut changes_out: Box<dyn Write> = match &args.changes {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .map_err(|e| format!("error: cannot write `{}`: {e}", path.display()))?,
        )),
        None => Box::new(std::io::stdout()),
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let io_err = |e: std::io::Error| format!("error: cannot write the output: {e}");

    // Transaction 0: the inputs. Only its summary is printed, so its changes (one per
    // fact) are only counted.
    m.keep_first_changes(false);
    let first = m.commit().map_err(|e| format!("error: {e}"))?;
    writeln!(out, "{}", summary(&first)).map_err(io_err)?;

    // Standard input is read on a thread of its own, so that a failed engine (a
    // process of the cluster lost or stopped) ends the session while it waits for input.
    // The channel is bounded: the reader stays at most a few lines ahead.
    let (lines_tx, lines) =
        std::sync::mpsc::sync_channel::<std::io::Result<Result<String, String>>>(16);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut buf = Vec::new();
        loop {
            let line = match read_line(&mut input, &mut buf, MAX_LINE) {
                Ok(Line::End) => break,
                Ok(Line::Text(text)) => Ok(Ok(text.to_string())),
                Ok(Line::Bad(reason)) => Ok(Err(reason)),
                Err(e) => Err(e),
            };
            let failed = line.is_err();
            if lines_tx.send(line).is_err() || failed {
                break;
            }
        }
    });
    let mut errors = 0usize;
    let mut lineno = 0;
    loop {
        let line = match lines.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(why) = m.failed() {
                    return Err(format!("error: the session cannot go on: {why}"));
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        lineno += 1;
        let line = match line.map_err(|e| format!("error: cannot read standard input: {e}"))? {
            Ok(line) => line,
            Err(reason) => {
                errors += 1;
                writeln!(out, "error: line {lineno}: {reason}").map_err(io_err)?;
                out.flush().map_err(io_err)?;
                continue;
            }
        };
        let options = protocol::Options {
            fact_dir: &args.live.fact_dir,
            quiet: args.quiet,
        };
        match protocol::command(&mut m, &line, &options, &mut *changes_out, &mut out) {
            Ok(Flow::Continue) => {}
            Ok(Flow::Quit) => break,
            Err(reason) => {
                errors += 1;
                writeln!(out, "error: line {lineno}: {reason}").map_err(io_err)?;
                // A failed engine (a lost or stopped process of the cluster) takes
                // no more transactions: stop here.
                if let Some(why) = m.failed() {
                    out.flush().map_err(io_err)?;
                    return Err(format!("error: the session cannot go on: {why}"));
                }
            }
        }
        out.flush().map_err(io_err)?;
    }
    changes_out.flush().map_err(io_err)?;
    if m.has_staged() {
        eprintln!("warning: the input ended with an uncommitted transaction; it was discarded");
    }
    if errors > 0 {
        return Err(format!(
            "error: {errors} command{} failed",
            if errors == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

/// The longest command line read (a longer one is an error for that line only).
pub const MAX_LINE: usize = 64 << 20;

/// One line of input.
enum Line<'a> {
    Text(&'a str),
    /// A line that is refused before it is read as a command: not UTF-8, too long.
    Bad(String),
    End,
}

/// Read one line (without its `\n`, or `\r\n`) into `buf`. A line that is not UTF-8 or
/// is longer than `max` bytes is refused on its own (the rest of a long line is skipped
/// without being kept), so one bad line never ends the session.
fn read_line<'a>(
    input: &mut impl BufRead,
    buf: &'a mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line<'a>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > max + 1 {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(take);
        if done {
            break;
        }
    }
    if !any {
        return Ok(Line::End);
    }
    if too_long {
        return Ok(Line::Bad(format!("the line is longer than {max} bytes")));
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    match std::str::from_utf8(buf) {
        Ok(text) => Ok(Line::Text(text)),
        Err(e) => Ok(Line::Bad(format!(
            "column {}: the line is not valid UTF-8",
            String::from_utf8_lossy(&buf[..e.valid_up_to()])
                .chars()
                .count()
                + 1
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut input = input;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut input, &mut buf, max).expect("reads") {
                Line::End => return out,
                Line::Text(t) => out.push(format!("ok {t}")),
                Line::Bad(reason) => out.push(format!("bad {reason}")),
            }
        }
    }

    #[test]
    fn a_bad_line_is_refused_alone() {
        assert_eq!(
            lines(b"a\r\nb\xff\xfec\nd", 100),
            ["ok a", "bad column 2: the line is not valid UTF-8", "ok d"]
        );
        assert_eq!(
            lines(b"short\nmuch too long\nok\n", 6),
            ["ok short", "bad the line is longer than 6 bytes", "ok ok"]
        );
        assert_eq!(lines(b"", 6), Vec::<String>::new());
        assert_eq!(lines(b"\n\n", 6), ["ok ", "ok "]);
    }
}
