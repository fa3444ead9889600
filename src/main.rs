//! `dynalog`: the command-line front ends.
//!
//! * `dynalog run`: batch evaluation with Soufflé's conventions ([`run`]).
//! * `dynalog session`: a live materialization driven by commands on stdin ([`session`]).
//! * `dynalog serve`: the same behind HTTP/JSON ([`serve`]).
//! * `dynalog gen`: benchmark data from the deterministic generators ([`r#gen`]).
//! * `dynalog rdf materialize`: RDF graphs under RhoDF, OWL 2 RL or your rules ([`rdf`]).
//! * `dynalog bench`: the benchmark suite, each measurement in a fresh process ([`bench`],
//!   the harness is the crate `dynalog-bench`).
//!
//! `-h` and `--help` print help on every command. A command whose standard output is
//! closed early (`dynalog run p.dl -D - | head`) ends quietly, as `cat` or `grep` do:
//! it dies of SIGPIPE (exit status 141 in a shell) without a message; `serve` instead
//! keeps the default of Rust programs (the write fails, the server goes on).

mod bench;
mod r#gen;
mod process;
mod progress;
mod rdf;
mod run;
mod serve;
mod session;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "dynalog",
    version,
    about = "A Datalog engine for highly dynamic settings",
    long_about = "A Datalog engine whose materialization stays correct, and cheap to keep correct, \
                  while facts and rules change. `dynalog run` evaluates a program once, like Soufflé."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a program on a folder of facts and write its outputs (Soufflé's layout).
    Run(run::RunArgs),
    /// Keep a program materialized and apply transactions of facts and rules read from stdin.
    Session(session::SessionArgs),
    /// Serve a live materialization over HTTP/JSON: transactions, queries, a change feed.
    Serve(serve::ServeArgs),
    /// Generate benchmark data: LUBM (N-Triples), Erdős–Rényi or R-MAT graphs (fact files).
    Gen(r#gen::GenArgs),
    /// RDF: materialize an N-Triples/Turtle graph (`dynalog rdf materialize --help`).
    Rdf(rdf::RdfArgs),
    /// Benchmark the engines: E/E+/E- with round-trip checks, single facts, a rule change, memory.
    Bench(bench::BenchArgs),
}

/// Panics are reported as one line, not a backtrace: a lost peer process (timely's
/// network threads are named `timely:recv-N` / `timely:send-N` after the peer) names the
/// peer; the failures it causes in the local workers are not repeated.
fn install_panic_hook() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PEER_LOST: AtomicBool = AtomicBool::new(false);
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".into());
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("");
        let peer = name
            .strip_prefix("timely:recv-")
            .or_else(|| name.strip_prefix("timely:send-"));
        if let Some(peer) = peer {
            if !PEER_LOST.swap(true, Ordering::SeqCst) {
                eprintln!("error: lost the connection to process {peer}: {message}");
            }
        } else if !PEER_LOST.load(Ordering::SeqCst) {
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            eprintln!("error: internal error in thread `{name}`{at}: {message}");
        }
    }));
}

/// Let a write to a closed pipe end the process quietly, as Unix tools do (Rust
/// ignores SIGPIPE by default, so such a write would fail with "Broken pipe").
fn die_quietly_on_closed_pipes() {
    // SAFETY: setting a signal's disposition to its default, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let _ = process::tune_allocator();
    install_panic_hook();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        die_quietly_on_closed_pipes();
    }
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Session(args) => session::session(args),
        Command::Serve(args) => serve::serve(args),
        Command::Gen(args) => r#gen::run(args),
        Command::Rdf(args) => rdf::run(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
