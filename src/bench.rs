//! `dynalog bench`: the command line of the benchmark harness (crate `dynalog-bench`).
//! The flags become [`dynalog_bench::Options`]; the harness re-runs this executable as
//! `dynalog bench --worker …` for every measurement, so the hidden `--worker` flag is
//! parsed here too.

use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Workloads, comma-separated, or `all` [default: tc-rand1k,tc-rmat1k,rhodf-lubm1,owl2rl-lubm1].
    /// Available: tc-tiny, tc-rand1k, tc-rmat1k, tc-rmat10k, tc-gnp5000, rhodf-lubm1,
    /// owl2rl-lubm1, rhodf-lubm10, owl2rl-lubm10, stats-rand1k, stats-rmat1k
    /// (aggregates), strings-rand1k, strings-rmat1k (string functors), paths-rand1k,
    /// paths-rmat1k (shortest paths by subsumption), trees-rand1k, trees-rmat1k
    /// (spanning trees by a recursive choice), rhodf-lubm50, owl2rl-lubm50.
    #[arg(long, value_delimiter = ',')]
    pub workloads: Vec<String>,
    /// Engines, comma-separated [default: every engine, and souffle].
    #[arg(long, value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Update sizes x in percent [default: 50,25,10,1].
    #[arg(long, value_delimiter = ',')]
    pub updates: Vec<u32>,
    /// Measurements, comma-separated: `update` (E, E+, E− at each x), `full` (the peak
    /// memory of a full materialization), `single` (single-fact updates), `rules` (a rule
    /// added and removed) [default: all four].
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Repetitions of every measurement, each in a fresh process, a workload's engines taking turns [default: 3].
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Single-fact insertions and deletions per run [default: 100].
    #[arg(long)]
    pub singles: Option<usize>,
    /// Time limit per measurement process in seconds; past it: OOT [default: 600].
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Resident memory limit per measurement process in MB; above it: OOM.
    #[arg(long, default_value_t = dynalog_bench::DEFAULT_MEMORY_LIMIT_MB)]
    pub memory_limit: u64,
    /// Worker threads of the engines (and Soufflé's -j).
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// A smoke run of about a minute: tc-rand1k and rhodf-lubm1, seminaive and diff,
    /// x = 10 and 1, one repetition, 20 single-fact updates, 120 s limit.
    #[arg(long)]
    pub quick: bool,
    /// Folder for results.md, results.json and the SVG plots.
    #[arg(long, default_value = dynalog_bench::DEFAULT_OUT)]
    pub out: PathBuf,
    /// Cache of generated data and splits.
    #[arg(long, default_value = dynalog_bench::DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
    /// Measure nothing: read the results.json of an earlier (or interrupted) run and
    /// write its tables and plots into `--out`.
    #[arg(long, value_name = "RESULTS_JSON")]
    pub report: Option<PathBuf>,
    /// Internal: run one measurement (MODE:WORKLOAD:ENGINE:KEEP) and print its JSON line.
    #[arg(long, hide = true)]
    pub worker: Option<String>,
}

impl From<BenchArgs> for dynalog_bench::Options {
    fn from(a: BenchArgs) -> dynalog_bench::Options {
        dynalog_bench::Options {
            workloads: a.workloads,
            engines: a.engines,
            updates: a.updates,
            modes: a.modes,
            repeat: a.repeat,
            singles: a.singles,
            timeout: a.timeout,
            memory_limit: a.memory_limit,
            workers: a.workers,
            quick: a.quick,
            out: a.out,
            data_dir: a.data_dir,
            report: a.report,
            worker: a.worker,
        }
    }
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    dynalog_bench::run(&args.into()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn parse(args: &[&str]) -> dynalog_bench::Options {
        Cli::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .unwrap()
            .args
            .into()
    }

    #[test]
    fn no_flags_are_the_library_defaults() {
        assert_eq!(parse(&[]), dynalog_bench::Options::default());
    }

    #[test]
    fn flags_become_options() {
        let o = parse(&[
            "--workloads",
            "tc-tiny,rhodf-lubm1",
            "--engines",
            "diff",
            "--updates",
            "10,1",
            "--modes",
            "full,rules",
            "--repeat",
            "2",
            "--singles",
            "5",
            "--timeout",
            "30",
            "--memory-limit",
            "512",
            "-w",
            "2",
            "--quick",
            "--out",
            "o",
            "--data-dir",
            "d",
            "--report",
            "r.json",
            "--worker",
            "full:tc-tiny:diff:100",
        ]);
        let expected = dynalog_bench::Options {
            workloads: vec!["tc-tiny".into(), "rhodf-lubm1".into()],
            engines: vec!["diff".into()],
            updates: vec![10, 1],
            modes: vec!["full".into(), "rules".into()],
            repeat: Some(2),
            singles: Some(5),
            timeout: Some(30.0),
            memory_limit: 512,
            workers: 2,
            quick: true,
            out: "o".into(),
            data_dir: "d".into(),
            report: Some("r.json".into()),
            worker: Some("full:tc-tiny:diff:100".into()),
        };
        assert_eq!(o, expected);
    }
}
