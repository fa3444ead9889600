//! `dynalog`: the command-line front ends.
//!
//! * `dynalog run`: batch evaluation with Soufflé's conventions ([`run`]).
//! * `dynalog rdf materialize`: RDF graphs under RhoDF, OWL 2 RL or your rules ([`rdf`]).

mod progress;
mod rdf;
mod run;

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
    /// RDF: materialize an N-Triples/Turtle graph (`dynalog rdf materialize --help`).
    Rdf(rdf::RdfArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Rdf(args) => rdf::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
