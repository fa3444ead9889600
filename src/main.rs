//! `dynalog`: the command-line front ends.
//!
//! * `dynalog run`: batch evaluation with Soufflé's conventions ([`run`]).
//! * `dynalog session`: a live materialization driven by commands on stdin ([`session`]).
//! * `dynalog serve`: the same behind HTTP/JSON ([`serve`]).
//! * `dynalog gen`: benchmark data from the deterministic generators ([`r#gen`]).
//! * `dynalog rdf materialize`: RDF graphs under RhoDF, OWL 2 RL or your rules ([`rdf`]).
//! * `dynalog bench`: the benchmark suite, each measurement in a fresh process ([`bench`]).

mod bench;
mod r#gen;
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

fn main() -> ExitCode {
    let cli = Cli::parse();
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
