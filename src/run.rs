//! `dynalog run PROGRAM.dl [-F FACT_DIR] [-D OUT_DIR|-] [-I DIR] [-M MACROS] [-w N] [--engine NAME] [--stats] [--show WHAT]`
//!
//! Preprocess (as Soufflé runs `cpp`: `#include`, `#define`, `#if`; see
//! [`dynalog_syntax::preprocess`]), parse, check, load the `.input` facts, evaluate, write the `.output` relations and
//! print the `.printsize` counts, following Soufflé's command line and file layout.
//! With `--show WHAT`, print a view of the program instead (as Soufflé's `--show`) and
//! evaluate nothing.

use crate::progress::Spinner;
use clap::Args;
use dynalog_io::OutputTarget;
use dynalog_syntax::SourceFile;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct RunArgs {
    /// The Datalog program (Soufflé syntax, or the study's `head <- [body]` syntax).
    pub program: PathBuf,
    /// Folder of input facts: `.input r` reads `FACT_DIR/r.facts`.
    #[arg(short = 'F', long = "fact-dir", default_value = ".")]
    pub fact_dir: PathBuf,
    /// Folder for output relations (`r.csv`), or `-` for standard output.
    #[arg(short = 'D', long = "output-dir", default_value = ".")]
    pub output_dir: String,
    /// Worker threads (used by engines that run in parallel).
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
    /// Evaluation engine; the default is the fastest and smallest for one evaluation
    /// (`session` and `serve`, where changes follow, default to `diff`).
    #[arg(long, default_value = "seminaive", value_parser = clap::builder::PossibleValuesParser::new(dynalog_engines::ENGINE_NAMES))]
    pub engine: String,
    /// Print load time, evaluation time per stratum, fact counts and peak memory to stderr.
    #[arg(long)]
    pub stats: bool,
    /// Print a view of the program to standard output and exit without reading facts or
    /// evaluating.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub show: Option<Show>,
    #[command(flatten)]
    pub preprocess: PreprocessArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Print help.
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

/// Soufflé's preprocessor flags, for the program file.
#[derive(Args, Debug, Clone, Default)]
pub struct PreprocessArgs {
    /// Directory where `#include` looks for files (repeatable), after the including
    /// file's own directory for `#include "FILE"`.
    #[arg(short = 'I', long = "include-dir", value_name = "DIR")]
    pub include_dirs: Vec<PathBuf>,
    /// Macros for the preprocessor, as Soufflé's `-M`: definitions separated by spaces,
    /// each `NAME=VALUE`, `NAME` (which is 1) or `NAME(x,y)=BODY` (repeatable).
    #[arg(short = 'M', long = "macro", value_name = "MACROS")]
    pub macros: Vec<String>,
}

impl PreprocessArgs {
    /// Read and preprocess the program file `path`. Errors are messages to print.
    pub fn read(&self, path: &Path) -> Result<SourceFile, String> {
        let options = dynalog_syntax::preprocess::Options {
            include_dirs: self.include_dirs.clone(),
            macros: self
                .macros
                .iter()
                .flat_map(|m| m.split_whitespace())
                .map(str::to_string)
                .collect(),
        };
        dynalog_syntax::preprocess::preprocess_file(path, &options)
    }
}

/// What `--show` prints.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// The checked program: relations with their types and strata, the facts written in
    /// the program, then the rules of each stratum with bodies in evaluation order.
    Ir,
    /// The rules as the engine (`--engine`) compiled them: per rule, one line per
    /// operation in evaluation order (scans, index lookups with their keys, filters,
    /// the head inserted), as Soufflé prints its RAM.
    Plan,
}

/// timely dataflow's cluster flags: the same command runs in every process.
#[derive(Args, Debug, Clone)]
pub struct ClusterArgs {
    /// Number of processes of the cluster (differential engine only).
    #[arg(short = 'n', long = "processes", default_value_t = 1)]
    pub processes: usize,
    /// Index of this process, 0..processes; process 0 alone writes outputs.
    #[arg(short = 'p', long = "process", default_value_t = 0)]
    pub process: usize,
    /// File of `host:port` lines, one per process in order (default: localhost:2101, 2102, ...).
    #[arg(short = 'H', long = "hostfile")]
    pub hostfile: Option<PathBuf>,
    /// Seconds to wait for every process to connect.
    #[arg(long = "connect-timeout", default_value_t = 60.0)]
    pub connect_timeout: f64,
    /// Sessions and servers: seconds without a heartbeat from a process after which the
    /// cluster fails (a stopped or cut-off peer); 0 turns the heartbeat off.
    #[arg(long = "peer-timeout", value_name = "SECONDS", default_value_t = 10.0)]
    pub peer_timeout: f64,
}

impl ClusterArgs {
    /// The cluster to join, `None` for a single process. Errors are user errors.
    pub fn cluster(&self, engine: &str) -> Result<Option<dynalog_engines::diff::Cluster>, String> {
        if self.processes == 0 {
            return Err("error: --processes must be at least 1".into());
        }
        if self.process >= self.processes {
            return Err(format!(
                "error: --process {} is not below --processes {}",
                self.process, self.processes
            ));
        }
        if self.processes == 1 {
            return Ok(None);
        }
        if engine != "diff" {
            return Err(format!(
                "error: several processes need the differential engine (--engine diff), not `{engine}`"
            ));
        }
        if !(self.connect_timeout > 0.0 && self.connect_timeout.is_finite()) {
            return Err("error: --connect-timeout must be a positive number of seconds".into());
        }
        if !(self.peer_timeout >= 0.0 && self.peer_timeout.is_finite()) {
            return Err("error: --peer-timeout must be a number of seconds, 0 or more".into());
        }
        let hosts: Vec<String> = match &self.hostfile {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("error: cannot read the hostfile `{}`: {e}", path.display()))?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            None => (0..self.processes)
                .map(|i| format!("localhost:{}", 2101 + i))
                .collect(),
        };
        if hosts.len() < self.processes {
            return Err(format!(
                "error: the hostfile names {} process(es), --processes is {}",
                hosts.len(),
                self.processes
            ));
        }
        for (i, h) in hosts.iter().enumerate() {
            if h.rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
                .is_none()
            {
                return Err(format!(
                    "error: hostfile line {}: `{h}` is not host:port",
                    i + 1
                ));
            }
        }
        Ok(Some(dynalog_engines::diff::Cluster {
            processes: self.processes,
            process: self.process,
            hosts: hosts[..self.processes].to_vec(),
            connect_timeout: std::time::Duration::from_secs_f64(self.connect_timeout),
            peer_timeout: (self.peer_timeout > 0.0)
                .then(|| std::time::Duration::from_secs_f64(self.peer_timeout)),
            connecting: Some(crate::process::quiet_connect()),
        }))
    }
}

pub fn run(args: RunArgs) -> Result<(), String> {
    if args.workers == 0 {
        return Err("error: --workers must be at least 1".into());
    }
    let cluster = args.cluster.cluster(&args.engine)?;
    let started = Instant::now();
    let source = args.preprocess.read(&args.program)?;
    let ast = dynalog_syntax::parse(&source).map_err(|d| d.to_string())?;
    let mut program = dynalog_analysis::analyse(&source, &ast).map_err(|d| d.to_string())?;
    print_warnings(&program);
    let analysed = started.elapsed();
    if let Some(what) = args.show {
        return show(what, &args.engine, &program);
    }

    let load_started = Instant::now();
    let loaded = {
        let _spinner = Spinner::start("loading facts");
        dynalog_io::read_inputs(&mut program, &source, &args.fact_dir).map_err(|d| d.to_string())?
    };
    let load_time = load_started.elapsed();
    let input_facts: usize = loaded.iter().map(|l| l.tuples.len()).sum();
    for note in loaded.iter().flat_map(|l| &l.notes) {
        eprintln!("{note}");
    }

    let writes_outputs = cluster.as_ref().is_none_or(|c| c.process == 0);
    let in_cluster = cluster.is_some();
    let config = dynalog_engines::Config::new(&args.engine, args.workers)
        .with_cluster(cluster, dynalog_engines::ClusterRole::Replicated);
    let rss_before = if args.stats { rss_bytes() } else { None };
    let mut engine = dynalog_engines::create(&config, program).map_err(|e| match in_cluster {
        true => format!("error: {e}"),
        false => e.to_string(),
    })?;
    for l in &loaded {
        for t in l.tuples.iter() {
            engine.insert(l.relation, t);
        }
    }
    drop(loaded);
    let stats = {
        let _spinner = Spinner::evaluating(engine.as_ref(), "evaluating");
        engine.commit().map_err(|e| format!("error: {e}"))?
    };
    // Measured now, before the outputs are written (which allocate buffers of their
    // own).
    let memory = if args.stats {
        memory_report(engine.as_mut(), rss_before)
    } else {
        None
    };

    let target = if args.output_dir == "-" {
        OutputTarget::Stdout
    } else {
        OutputTarget::Dir(PathBuf::from(&args.output_dir))
    };
    let write_started = Instant::now();
    if !writes_outputs {
        // Process 0 of the cluster gathers the materialization and writes it.
        if args.stats {
            eprintln!("evaluation: {:.3} s", stats.elapsed.as_secs_f64());
            drop(engine);
            print_network();
        }
        return Ok(());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    dynalog_io::write_outputs(
        engine.program(),
        &target,
        &|r, f| engine.for_each_fact(r, f),
        &|r| engine.len(r),
        &mut out,
    )
    .map_err(|e| format!("error: {e}"))?;
    use std::io::Write;
    out.flush().map_err(|e| format!("error: {e}"))?;
    let write_time = write_started.elapsed();

    if args.stats {
        let p = engine.program();
        eprintln!("engine: {} ({} worker(s))", engine.name(), args.workers);
        eprintln!("parse + analysis: {:.3} s", analysed.as_secs_f64());
        eprintln!(
            "load: {:.3} s, {input_facts} facts",
            load_time.as_secs_f64()
        );
        for (i, s) in stats.strata.iter().enumerate() {
            eprintln!(
                "stratum {i} [{}]: {:.3} s, {} iteration(s), {} facts",
                s.relations.join(", "),
                s.elapsed.as_secs_f64(),
                s.iterations,
                s.facts
            );
        }
        eprintln!("evaluation: {:.3} s", stats.elapsed.as_secs_f64());
        if stats.overdeleted > 0 || stats.rederived > 0 {
            eprintln!(
                "delete-rederive: {} overdeleted, {} rederived",
                stats.overdeleted, stats.rederived
            );
        }
        eprintln!("output: {:.3} s", write_time.as_secs_f64());
        let counts: Vec<String> = (0..p.relations.len())
            .map(|r| format!("{} {}", p.relations[r].name, engine.len(r as u32)))
            .collect();
        eprintln!("facts: {}", counts.join(", "));
        if let Some(memory) = &memory {
            eprint!("{memory}");
        }
        if let Some(peak) = peak_rss_bytes() {
            eprintln!("peak memory: {:.1} MB", peak as f64 / 1e6);
        }
        if in_cluster {
            drop(engine);
            print_network();
        }
    }
    Ok(())
}

/// The analysis' warnings (a `.pragma` it ignores), on stderr.
pub fn print_warnings(program: &dynalog_analysis::Program) {
    for w in &program.warnings {
        eprintln!("{}", w.as_warning());
    }
}

/// `--show`: print a view of the checked program to standard output.
fn show(what: Show, engine: &str, program: &dynalog_analysis::Program) -> Result<(), String> {
    use std::io::Write;
    let text = match what {
        Show::Ir => program.to_string(),
        Show::Plan => {
            dynalog_engines::explain::plan(engine, program).map_err(|e| format!("error: {e}"))?
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("error: {e}"))
}

/// With `--stats` in a cluster: what this process sent to the others (after the engine
/// is dropped, when the count is final).
fn print_network() {
    let bytes = dynalog_engines::diff::bytes_sent();
    eprintln!(
        "network: {bytes} bytes ({:.1} MB) sent to the other processes",
        bytes as f64 / 1e6
    );
}

/// Peak resident set size of this process, from the OS.
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resident set size of this process now, from the OS.
pub fn rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A field of `/proc/self/status` in kB, as bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// With `--stats`: what the engine holds, part by part, and how that compares with
/// the growth of the process's resident memory since `before` (taken before the engine
/// was created); `None` if the engine does not account for its memory. Taken straight
/// after the evaluation, before the outputs allocate buffers of their own.
pub fn memory_report(
    engine: &mut dyn dynalog_engines::Engine,
    before: Option<u64>,
) -> Option<String> {
    let memory = engine.memory()?;
    let facts = engine.total_len();
    let mut text = format!("memory held by the engine:\n{}", memory.table(facts));
    // Freed memory the allocator still holds (of the transient state of the
    // evaluation) goes back to the system first, so the resident memory is what is
    // in use.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of glibc's heaps to the system.
    unsafe {
        libc::malloc_trim(0);
    }
    if let (Some(before), Some(now)) = (before, rss_bytes()) {
        let growth = now.saturating_sub(before);
        text.push_str(&format!(
            "resident memory: {:.1} MB, {:.1} MB more than before the engine was created \
             (the engine accounts for {:.0}% of that)\n",
            now as f64 / 1e6,
            growth as f64 / 1e6,
            100.0 * memory.total_bytes() as f64 / (growth.max(1)) as f64
        ));
    }
    Some(text)
}
