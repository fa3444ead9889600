//! The benchmark harness behind `dynalog bench`: the study's protocol (E, E+, E−, round
//! trip), single-fact updates, a rule change and the peak memory of a full
//! materialization, for every engine on generated workloads, each measurement in a
//! fresh process. See `docs/benchmarks.md`.
//!
//! The parent generates and splits the data (cached under `--data-dir`, [`workload`]),
//! then runs its own executable as `dynalog bench --worker MODE:WORKLOAD:ENGINE:KEEP`
//! ([`worker_command`]) once per measurement ([`worker`]), under a time and a memory
//! limit ([`child`]), and collects the JSON line each worker prints into
//! [`report::Results`]: markdown tables, JSON, SVG plots ([`plot`]); Soufflé, when
//! installed, is measured as a rematerializing system ([`souffle`]).
//!
//! The command line lives in the `dynalog` binary (`src/bench.rs`): it turns its flags
//! into [`Options`] and calls [`run`], for the parent and for the measurement processes
//! alike. Errors are [`Error`]s, displayed as the command prints them.

pub mod child;
pub mod error;
pub mod plot;
pub mod report;
pub mod souffle;
pub mod worker;
pub mod workload;

pub use error::Error;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use report::{Measurement, Results, Status};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use worker::{Mode, Report, Task};
use workload::Workload;

/// The options of a run (the flags of `dynalog bench`, whose defaults are those of
/// [`Options::default`]). Empty lists and `None` stand for the defaults of a full run
/// or, with `quick`, of a smoke run.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Workload names, or `all`.
    pub workloads: Vec<String>,
    /// Engine names (and `souffle`).
    pub engines: Vec<String>,
    /// Update sizes in percent.
    pub updates: Vec<u32>,
    /// Measurements: `update`, `full`, `single`, `rules`.
    pub modes: Vec<String>,
    /// Repetitions of every measurement.
    pub repeat: Option<usize>,
    /// Single-fact insertions and deletions per run.
    pub singles: Option<usize>,
    /// Time limit per measurement process in seconds.
    pub timeout: Option<f64>,
    /// Resident memory limit per measurement process in MB.
    pub memory_limit: u64,
    /// Worker threads of the engines (and Soufflé's -j).
    pub workers: usize,
    /// The smoke run: two workloads, two engines, one repetition.
    pub quick: bool,
    /// Folder for results.md, results.json and the SVG plots.
    pub out: PathBuf,
    /// Cache of generated data and splits.
    pub data_dir: PathBuf,
    /// Measure nothing: write the tables and plots of this results.json into `out`.
    pub report: Option<PathBuf>,
    /// Run one measurement (`MODE:WORKLOAD:ENGINE:KEEP`) and print its JSON line: what a
    /// measurement process does (see [`worker_command`]).
    pub worker: Option<String>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            workloads: Vec::new(),
            engines: Vec::new(),
            updates: Vec::new(),
            modes: Vec::new(),
            repeat: None,
            singles: None,
            timeout: None,
            memory_limit: DEFAULT_MEMORY_LIMIT_MB,
            workers: 1,
            quick: false,
            out: PathBuf::from(DEFAULT_OUT),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            report: None,
            worker: None,
        }
    }
}

/// The default of [`Options::memory_limit`], in MB.
pub const DEFAULT_MEMORY_LIMIT_MB: u64 = 16384;
/// The default of [`Options::out`].
pub const DEFAULT_OUT: &str = "target/bench-results";
/// The default of [`Options::data_dir`].
pub const DEFAULT_DATA_DIR: &str = "target/bench-data";

/// The command line of one measurement process: `exe bench --worker TASK --data-dir DIR
/// -w N --singles N`. The executable must route these arguments, as `dynalog bench`
/// does, to [`run`] with [`Options::worker`] set.
pub fn worker_command(
    exe: &Path,
    task: &Task,
    data_dir: &Path,
    workers: usize,
    singles: usize,
) -> Command {
    let mut cmd = Command::new(exe);
    cmd.arg("bench")
        .arg("--worker")
        .arg(task.spec())
        .arg("--data-dir")
        .arg(data_dir)
        .arg("-w")
        .arg(workers.to_string())
        .arg("--singles")
        .arg(singles.to_string());
    cmd
}

/// The settings of a run, defaults and `--quick` applied and checked.
#[derive(Debug)]
struct Plan {
    workloads: Vec<Workload>,
    engines: Vec<String>,
    updates: Vec<u32>,
    modes: Vec<Mode>,
    repeat: usize,
    singles: usize,
    timeout: f64,
}

fn plan(args: &Options) -> Result<Plan, Error> {
    let names: Vec<String> = if args.workloads.is_empty() {
        let d = if args.quick {
            workload::QUICK_WORKLOADS
        } else {
            workload::DEFAULT_WORKLOADS
        };
        d.iter().map(|s| s.to_string()).collect()
    } else if args.workloads.iter().any(|w| w == "all") {
        workload::WORKLOADS
            .iter()
            .map(|w| w.name.to_string())
            .collect()
    } else {
        args.workloads.clone()
    };
    let workloads = names
        .iter()
        .map(|n| workload::find(n.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let engines: Vec<String> = if args.engines.is_empty() {
        if args.quick {
            vec!["seminaive".into(), "diff".into()]
        } else {
            let mut e: Vec<String> = dynalog_engines::ENGINE_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect();
            e.push("souffle".into());
            e
        }
    } else {
        args.engines.iter().map(|e| e.trim().to_string()).collect()
    };
    for e in &engines {
        if e != "souffle" && !dynalog_engines::ENGINE_NAMES.contains(&e.as_str()) {
            return Err(Error::Usage(format!(
                "unknown engine `{e}` (available: {}, souffle)",
                dynalog_engines::ENGINE_NAMES.join(", ")
            )));
        }
    }
    let updates = if !args.updates.is_empty() {
        args.updates.clone()
    } else if args.quick {
        vec![10, 1]
    } else {
        vec![50, 25, 10, 1]
    };
    if let Some(u) = updates.iter().find(|u| !(1..=99).contains(*u)) {
        return Err(Error::Usage(format!(
            "an update size must be 1..=99 (percent), got {u}"
        )));
    }
    let modes = if args.modes.is_empty() {
        Mode::ALL.to_vec()
    } else {
        args.modes
            .iter()
            .map(|m| {
                Mode::parse(m.trim()).ok_or_else(|| {
                    let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
                    Error::Usage(format!(
                        "unknown measurement `{}` (available: {})",
                        m.trim(),
                        names.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
    let singles = args.singles.unwrap_or(if args.quick { 20 } else { 100 });
    let timeout = args
        .timeout
        .unwrap_or(if args.quick { 120.0 } else { 600.0 });
    if repeat == 0 {
        return Err(Error::Usage("--repeat must be at least 1".into()));
    }
    if singles == 0 {
        return Err(Error::Usage("--singles must be at least 1".into()));
    }
    if !(timeout.is_finite() && timeout > 0.0) {
        return Err(Error::Usage(format!(
            "--timeout must be a positive number of seconds, got {timeout}"
        )));
    }
    if args.workers == 0 {
        return Err(Error::Usage("--workers must be at least 1".into()));
    }
    if args.memory_limit == 0 {
        return Err(Error::Usage(
            "--memory-limit must be at least 1 (MB)".into(),
        ));
    }
    // A name listed twice is measured once (twice would only add repetitions, and
    // the tables would show the same row twice).
    Ok(Plan {
        workloads: first_of_each(workloads),
        engines: first_of_each(engines),
        updates: first_of_each(updates),
        modes: first_of_each(modes),
        repeat,
        singles,
        timeout,
    })
}

/// The items in their order, each kept where it first appears.
fn first_of_each<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut kept: Vec<T> = Vec::with_capacity(items.len());
    for item in items {
        if !kept.contains(&item) {
            kept.push(item);
        }
    }
    kept
}

/// Every measurement of a run: (workload, engine, mode, percent loaded first), in order.
fn tasks(plan: &Plan) -> Vec<(Workload, String, Mode, u32)> {
    let mut tasks: Vec<(Workload, String, Mode, u32)> = Vec::new();
    for w in &plan.workloads {
        for e in &plan.engines {
            let wanted = |m: Mode| plan.modes.contains(&m);
            if wanted(Mode::Update) {
                for &u in &plan.updates {
                    tasks.push((*w, e.clone(), Mode::Update, 100 - u));
                }
            }
            if wanted(Mode::Full) {
                tasks.push((*w, e.clone(), Mode::Full, 100));
            }
            // Soufflé re-runs: it has no single-fact or rule-change measurement.
            if e != "souffle" {
                if wanted(Mode::Single) {
                    tasks.push((*w, e.clone(), Mode::Single, 99));
                }
                if wanted(Mode::Rules) {
                    tasks.push((*w, e.clone(), Mode::Rules, 100));
                }
            }
        }
    }
    tasks
}

/// The order of a run's measurements: `(task index, repetition)`. A workload's tasks
/// go in turns: the first repetition of each (every engine and mode), then the second,
/// and so on, so that the engines compared on a workload share the same minutes of the
/// machine. (All repetitions of one engine, then all of the next, let the load of a
/// shared machine move between them: the ratio of two engines' medians moved by ±0.2
/// from run to run at the study's sizes.)
fn schedule<T>(tasks: &[(Workload, T, Mode, u32)], repeat: usize) -> Vec<(usize, usize)> {
    let mut order = Vec::with_capacity(tasks.len() * repeat);
    let mut start = 0;
    while start < tasks.len() {
        let name = tasks[start].0.name;
        let end = start
            + tasks[start..]
                .iter()
                .take_while(|t| t.0.name == name)
                .count();
        for rep in 0..repeat {
            order.extend((start..end).map(|i| (i, rep)));
        }
        start = end;
    }
    order
}

/// Run the benchmarks `args` asks for (or one measurement, or a report of earlier
/// results). Every measurement runs in a fresh process: this program's executable
/// started with [`worker_command`].
pub fn run(args: &Options) -> Result<(), Error> {
    if let Some(spec) = &args.worker {
        let task = Task::parse(spec)?;
        let singles = args.singles.unwrap_or(100).max(1);
        let report = worker::run(&task, &args.data_dir, args.workers.max(1), singles)?;
        let line = serde_json::to_string(&report).map_err(Error::Json)?;
        println!("{line}");
        return Ok(());
    }
    if let Some(path) = &args.report {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("cannot read `{}`", path.display()), e))?;
        let results: Results = serde_json::from_str(&text).map_err(|source| Error::Results {
            path: path.clone(),
            source,
        })?;
        return write_outputs(&results, &args.out);
    }
    let plan = plan(args)?;
    let souffle = plan
        .engines
        .iter()
        .any(|e| e == "souffle")
        .then(souffle::find)
        .flatten();
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("cannot find this program's executable", e))?;
    let limits = child::Limits {
        timeout: Duration::from_secs_f64(plan.timeout),
        memory: args.memory_limit.saturating_mul(1 << 20),
    };

    let tasks = tasks(&plan);
    let bar = ProgressBar::with_draw_target(
        Some((tasks.len() * plan.repeat) as u64),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );

    // The results as they stand: written after every measurement (without plots), so
    // that a long run that is interrupted keeps what it measured.
    let mut results = Results {
        date: now_utc(),
        command: command_line(),
        machine: machine(),
        workers: args.workers,
        repeat: plan.repeat,
        singles: plan.singles,
        timeout_s: plan.timeout,
        memory_limit_mb: args.memory_limit,
        workloads: plan.workloads.iter().map(|w| w.name.to_string()).collect(),
        engines: plan.engines.clone(),
        updates: plan.updates.clone(),
        souffle: souffle.as_ref().map(|p| p.display().to_string()),
        planned: tasks.len() * plan.repeat,
        measurements: Vec::new(),
    };
    let mut prepared: Vec<(&str, u32)> = Vec::new();
    for (i, rep) in schedule(&tasks, plan.repeat) {
        let (w, engine, mode, keep) = &tasks[i];
        if !prepared.contains(&(w.name, *keep)) {
            bar.set_message(format!("preparing {} ({keep}%)", w.name));
            workload::ensure_split(&args.data_dir, w.data, *keep)?;
            prepared.push((w.name, *keep));
        }
        bar.set_message(format!(
            "{} {engine} {} {}%",
            w.name,
            mode.name(),
            100 - keep
        ));
        let m = if engine == "souffle" {
            match &souffle {
                None => not_installed(w, *mode, *keep, rep),
                Some(bin) => run_souffle(
                    bin,
                    &args.data_dir,
                    *w,
                    *mode,
                    *keep,
                    rep,
                    args.workers,
                    limits,
                )?,
            }
        } else {
            let task = Task {
                mode: *mode,
                workload: *w,
                engine: engine.clone(),
                keep: *keep,
            };
            let cmd = worker_command(&exe, &task, &args.data_dir, args.workers, plan.singles);
            let finished = child::run(cmd, limits)?;
            measurement(&task, rep, finished)
        };
        let failed = matches!(m.status, Status::Mismatch | Status::Fail);
        let line = format!(
            "{} {} {}{}: {}{}",
            m.workload,
            m.engine,
            m.mode.name(),
            if m.mode == Mode::Update {
                format!(" {}%", m.update_percent)
            } else {
                String::new()
            },
            m.status.label(),
            match (&m.error, failed) {
                (Some(e), true) => format!(" {e}"),
                _ => format!(" ({:.2} s, {:.0} MB)", m.wall_s, m.peak_rss_mb),
            }
        );
        if bar.is_hidden() {
            // No terminal to draw the bar on (a log file): one line per measurement.
            eprintln!(
                "[{}/{}] {line}",
                results.measurements.len() + 1,
                results.planned
            );
        } else if failed {
            bar.println(line);
        }
        results.measurements.push(m);
        write_partial(&results, &args.out)?;
        bar.inc(1);
    }
    bar.finish_and_clear();

    write_outputs(&results, &args.out)?;
    let failures = results.failures();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Failures {
            count: failures.len(),
            results_md: args.out.join("results.md"),
        })
    }
}

/// Write `markdown` as `results.md` and the results as `results.json` into `out`.
fn write_files(results: &Results, out: &Path, markdown: &str) -> Result<(), Error> {
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("cannot create `{}`", out.display()), e))?;
    let write = |name: &str, text: &str| {
        let p = out.join(name);
        std::fs::write(&p, text)
            .map_err(|e| Error::io(format!("cannot write `{}`", p.display()), e))
    };
    write("results.md", markdown)?;
    let json = serde_json::to_string_pretty(results).map_err(Error::Json)?;
    write("results.json", &json)
}

/// Write `results.json` and `results.md` (no plots, nothing on standard output) while
/// the run goes on.
fn write_partial(results: &Results, out: &Path) -> Result<(), Error> {
    write_files(results, out, &results.markdown())
}

/// The final outputs: the tables on standard output, and the files with the plots.
fn write_outputs(results: &Results, out: &Path) -> Result<(), Error> {
    let mut md = results.markdown();
    println!("{md}");
    std::fs::create_dir_all(out)
        .map_err(|e| Error::io(format!("cannot create `{}`", out.display()), e))?;
    match plot::all(results, out) {
        Ok(files) if files.is_empty() => {}
        Ok(files) => {
            md.push_str("\n## Plots\n\n");
            for f in files {
                if let Some(name) = f.file_name().and_then(|n| n.to_str()) {
                    md.push_str(&format!("![{name}]({name})\n"));
                }
            }
        }
        Err(e) => eprintln!("warning: no plots: {e}"),
    }
    write_files(results, out, &md)?;
    eprintln!("results in {}", out.display());
    Ok(())
}

fn base_measurement(w: &Workload, engine: &str, mode: Mode, keep: u32, rep: usize) -> Measurement {
    Measurement {
        workload: w.name.to_string(),
        engine: engine.to_string(),
        mode,
        update_percent: 100 - keep,
        repetition: rep,
        status: Status::Ok,
        error: None,
        wall_s: 0.0,
        peak_rss_mb: 0.0,
        report: None,
    }
}

fn not_installed(w: &Workload, mode: Mode, keep: u32, rep: usize) -> Measurement {
    Measurement {
        status: Status::NotInstalled,
        ..base_measurement(w, "souffle", mode, keep, rep)
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// The measurement of one worker process.
fn measurement(task: &Task, rep: usize, f: child::Finished) -> Measurement {
    let mut m = base_measurement(&task.workload, &task.engine, task.mode, task.keep, rep);
    m.wall_s = f.wall.as_secs_f64();
    m.peak_rss_mb = mb(f.peak_rss);
    match f.outcome {
        child::Outcome::Done { stdout } => {
            let line = stdout
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            match serde_json::from_str::<Report>(line) {
                Ok(r) => {
                    if r.round_trip_ok == Some(false) {
                        m.status = Status::Mismatch;
                        m.error = r.mismatch.clone();
                    }
                    m.report = Some(r);
                }
                Err(e) => {
                    m.status = Status::Fail;
                    m.error = Some(format!("unreadable worker output ({e}): {line}"));
                }
            }
        }
        child::Outcome::Oot => m.status = Status::Oot,
        child::Outcome::Oom => m.status = Status::Oom,
        child::Outcome::Failed(e) => {
            m.status = Status::Fail;
            m.error = Some(e);
        }
    }
    m
}

/// Soufflé as a rematerializing system: E, then E ∪ E+ (E+), then E again (E−), each
/// a full evaluation in its own process; a full materialization for [`Mode::Full`].
#[allow(clippy::too_many_arguments)]
fn run_souffle(
    bin: &Path,
    cache: &Path,
    w: Workload,
    mode: Mode,
    keep: u32,
    rep: usize,
    workers: usize,
    limits: child::Limits,
) -> Result<Measurement, Error> {
    let mut m = base_measurement(&w, "souffle", mode, keep, rep);
    let inputs = souffle::prepare(cache, w, keep)?;
    let dirs: Vec<&Path> = match mode {
        Mode::Update => vec![&inputs.head, &inputs.all, &inputs.head],
        _ => vec![&inputs.head],
    };
    let mut report = Report::default();
    for (i, dir) in dirs.into_iter().enumerate() {
        let mut cmd = Command::new(bin);
        cmd.arg(format!("-j{workers}"))
            .arg("-F")
            .arg(dir)
            .arg("-D")
            .arg("-")
            .arg(&inputs.program);
        let f = child::run(cmd, limits)?;
        m.wall_s += f.wall.as_secs_f64();
        m.peak_rss_mb = m.peak_rss_mb.max(mb(f.peak_rss));
        let secs = f.wall.as_secs_f64();
        let facts = match f.outcome {
            child::Outcome::Done { stdout } => souffle::printed_facts(&stdout),
            child::Outcome::Oot => {
                m.status = Status::Oot;
                return Ok(m);
            }
            child::Outcome::Oom => {
                m.status = Status::Oom;
                return Ok(m);
            }
            child::Outcome::Failed(e) => {
                m.status = Status::Fail;
                m.error = Some(format!("souffle: {e}"));
                return Ok(m);
            }
        };
        match i {
            0 => (report.e_s, report.facts_e) = (secs, facts),
            1 => (report.eplus_s, report.facts_eplus) = (Some(secs), Some(facts)),
            _ => (report.eminus_s, report.facts_eminus) = (Some(secs), Some(facts)),
        }
    }
    if mode == Mode::Update {
        let ok = report.facts_eminus == Some(report.facts_e);
        report.round_trip_ok = Some(ok);
        if !ok {
            m.status = Status::Mismatch;
            m.error = Some("Soufflé's E− size differs from its E size".into());
        }
    }
    m.report = Some(report);
    Ok(m)
}

fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("dynalog {}", args.join(" "))
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let l = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kb: f64 = l.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.0} GiB", kb / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "? GiB".into());
    format!("{cores} cores ({cpu}), {mem}")
}

/// The current time in UTC, `YYYY-MM-DD HH:MM UTC`.
fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Days since 1970-01-01 to a (year, month, day) date (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repetitions_of_a_workload_take_turns_between_its_engines() {
        let o = parse(&[
            "--workloads",
            "tc-tiny,rhodf-lubm1",
            "--engines",
            "seminaive,diff",
            "--modes",
            "full,rules",
        ]);
        let plan = plan(&o).expect("a plan");
        let tasks = tasks(&plan);
        let order: Vec<(&str, &str, &str, usize)> = schedule(&tasks, 2)
            .into_iter()
            .map(|(i, rep)| {
                let (w, e, m, _) = &tasks[i];
                (w.name, e.as_str(), m.name(), rep)
            })
            .collect();
        let turn = |w, rep| {
            [
                (w, "seminaive", "full", rep),
                (w, "seminaive", "rules", rep),
                (w, "diff", "full", rep),
                (w, "diff", "rules", rep),
            ]
        };
        let expected: Vec<_> = [
            turn("tc-tiny", 0),
            turn("tc-tiny", 1),
            turn("rhodf-lubm1", 0),
            turn("rhodf-lubm1", 1),
        ]
        .concat();
        assert_eq!(order, expected);
        // Every measurement once.
        assert_eq!(schedule(&tasks, 3).len(), tasks.len() * 3);
    }

    /// Options from flags as `dynalog bench` spells them (lists comma-separated); the
    /// flag parsing itself is tested with the binary (`src/bench.rs`).
    fn parse(args: &[&str]) -> Options {
        let mut o = Options::default();
        let mut args = args.iter();
        let list = |v: Option<&&str>| -> Vec<String> {
            v.unwrap().split(',').map(str::to_string).collect()
        };
        while let Some(flag) = args.next() {
            match *flag {
                "--quick" => o.quick = true,
                "--workloads" => o.workloads = list(args.next()),
                "--engines" => o.engines = list(args.next()),
                "--modes" => o.modes = list(args.next()),
                "--updates" => {
                    o.updates = list(args.next())
                        .iter()
                        .map(|u| u.parse().unwrap())
                        .collect()
                }
                "--repeat" => o.repeat = Some(args.next().unwrap().parse().unwrap()),
                "--timeout" => o.timeout = Some(args.next().unwrap().parse().unwrap()),
                "-w" => o.workers = args.next().unwrap().parse().unwrap(),
                other => panic!("flag {other} not known to this test"),
            }
        }
        o
    }

    #[test]
    fn names_listed_twice_are_measured_once() {
        let p = plan(&parse(&[
            "--workloads",
            "tc-tiny,tc-rand1k,tc-tiny",
            "--engines",
            "diff,seminaive,diff",
            "--updates",
            "1,10,1",
            "--modes",
            "full,update,full",
        ]))
        .unwrap();
        let names: Vec<&str> = p.workloads.iter().map(|w| w.name).collect();
        assert_eq!(names, vec!["tc-tiny", "tc-rand1k"]);
        assert_eq!(p.engines, vec!["diff", "seminaive"]);
        assert_eq!(p.updates, vec![1, 10]);
        assert_eq!(p.modes, vec![Mode::Full, Mode::Update]);
        // 2 workloads × 2 engines × (2 update sizes + 1 full materialization).
        assert_eq!(tasks(&p).len(), 12);
    }

    #[test]
    fn quick_and_default_plans() {
        let p = plan(&parse(&["--quick"])).unwrap();
        assert_eq!(p.updates, vec![10, 1]);
        assert_eq!(p.engines, vec!["seminaive", "diff"]);
        assert_eq!(p.repeat, 1);
        let p = plan(&parse(&[])).unwrap();
        assert_eq!(p.updates, vec![50, 25, 10, 1]);
        assert_eq!(p.repeat, 3);
        assert_eq!(p.engines.len(), dynalog_engines::ENGINE_NAMES.len() + 1);
        let p = plan(&parse(&["--workloads", "all"])).unwrap();
        assert_eq!(p.workloads.len(), workload::WORKLOADS.len());
    }

    #[test]
    fn modes_choose_the_measurements() {
        let p = plan(&parse(&[
            "--workloads",
            "tc-tiny",
            "--engines",
            "diff,souffle",
        ]))
        .unwrap();
        let modes = |p: &Plan| tasks(p).iter().map(|t| t.2.name()).collect::<Vec<_>>();
        // Every mode by default, 4 update sizes; Soufflé has no single or rules.
        assert_eq!(modes(&p).len(), 7 + 5);
        let p = plan(&parse(&[
            "--workloads",
            "tc-tiny",
            "--engines",
            "diff,souffle",
            "--modes",
            "full, rules",
        ]))
        .unwrap();
        assert_eq!(modes(&p), ["full", "rules", "full"]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        for bad in [
            &["--engines", "nope"][..],
            &["--workloads", "tc-huge"],
            &["--updates", "0"],
            &["--updates", "100"],
            &["--repeat", "0"],
            &["--timeout", "0"],
            &["-w", "0"],
            &["--modes", "full,nope"],
        ] {
            let e = plan(&parse(bad)).unwrap_err();
            let e = e.to_string();
            assert!(e.starts_with("error: "), "{bad:?}: {e}");
        }
    }

    fn finished(outcome: child::Outcome) -> child::Finished {
        child::Finished {
            outcome,
            wall: Duration::from_secs(1),
            peak_rss: 3 << 20,
        }
    }

    #[test]
    fn worker_outcomes_become_statuses() {
        let task = Task::parse("update:tc-tiny:diff:90").unwrap();
        let report = Report {
            round_trip_ok: Some(false),
            mismatch: Some("1 fact(s) missing".into()),
            ..Report::default()
        };
        let line = serde_json::to_string(&report).unwrap();
        let done = |stdout: String| finished(child::Outcome::Done { stdout });
        let m = measurement(&task, 0, done(format!("noise\n{line}\n")));
        assert_eq!(m.status, Status::Mismatch);
        assert_eq!(m.error.as_deref(), Some("1 fact(s) missing"));
        assert_eq!(m.peak_rss_mb, 3.0);
        let ok = Report {
            round_trip_ok: Some(true),
            ..Report::default()
        };
        let m = measurement(&task, 0, done(serde_json::to_string(&ok).unwrap()));
        assert_eq!(m.status, Status::Ok);
        assert_eq!(
            measurement(&task, 0, done("garbage".into())).status,
            Status::Fail
        );
        assert_eq!(
            measurement(&task, 0, finished(child::Outcome::Oot)).status,
            Status::Oot
        );
        assert_eq!(
            measurement(&task, 0, finished(child::Outcome::Oom)).status,
            Status::Oom
        );
        let m = measurement(
            &task,
            0,
            finished(child::Outcome::Failed("exit status 1".into())),
        );
        assert_eq!(
            (m.status, m.error.as_deref()),
            (Status::Fail, Some("exit status 1"))
        );
    }

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_789), (2026, 12, 2));
    }
}
