//! A load's E measured many times in one process, alternating two variants: the
//! method behind the in-process figures of docs/benchmarks.md (issue #17).
//!
//! On a shared machine, two builds measured process after process drift apart with
//! the machine's load (±20% between runs of the same build). Here one process loads
//! the workload's first part into a fresh engine and commits, `2 × PAIRS` times, and
//! sets the environment variable `DYNALOG_VARIANT` to `1` before every second load
//! (and removes it before the others), so that both variants sample the same minutes.
//! An experiment reads that variable where it builds its engine or dataflow (each
//! load creates a new engine); without one, the two halves measure the same code (an
//! A/A run, which shows the noise). Prints the minimum, first quartile and median of
//! each half, in milliseconds.
//!
//! ```text
//! cargo run --release -p dynalog-bench --example alternate -- WORKLOAD ENGINE WORKERS PAIRS [KEEP]
//! ```
//!
//! `KEEP` is the percentage of the input loaded (default 99, as the harness's update
//! mode; 100 for the full materialization). The workload's data is generated into,
//! or read from, `target/bench-data` (or `DYNALOG_BENCH_DATA`), the harness's cache.

use dynalog_bench::workload;
use dynalog_engines::Config;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: alternate WORKLOAD ENGINE WORKERS PAIRS [KEEP]";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("alternate: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn number(args: &[String], i: usize, what: &str, default: Option<u32>) -> Result<u32, String> {
    match (args.get(i), default) {
        (Some(text), _) => text
            .parse()
            .map_err(|_| format!("{what} must be a whole number, not `{text}`")),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(format!("{what} is missing")),
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().ok_or("WORKLOAD is missing")?;
    let engine = args.get(1).ok_or("ENGINE is missing")?;
    let workers = number(&args, 2, "WORKERS", None)?.max(1) as usize;
    let pairs = number(&args, 3, "PAIRS", None)?.max(1) as usize;
    let keep = number(&args, 4, "KEEP", Some(99))?;
    if !(1..=100).contains(&keep) {
        return Err(format!("KEEP must be 1 to 100, not {keep}"));
    }
    let cache = std::env::var_os("DYNALOG_BENCH_DATA")
        .map_or_else(|| PathBuf::from("target/bench-data"), PathBuf::from);
    let w = workload::find(name).map_err(|e| e.to_string())?;
    workload::ensure_split(&cache, w.data, keep).map_err(|e| e.to_string())?;
    let loaded = workload::load(&cache, w, keep).map_err(|e| e.to_string())?;
    let config = Config::new(engine, workers);
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for i in 0..2 * pairs {
        let variant = i % 2;
        // SAFETY: this program has no other thread at this point (the previous
        // engine, whose workers read the environment, is dropped).
        unsafe {
            if variant == 1 {
                std::env::set_var("DYNALOG_VARIANT", "1");
            } else {
                std::env::remove_var("DYNALOG_VARIANT");
            }
        }
        let mut e =
            dynalog_engines::create(&config, loaded.program.clone()).map_err(|e| e.to_string())?;
        for (rel, tuple) in loaded.head.iter() {
            e.insert(rel, tuple);
        }
        let start = Instant::now();
        e.commit().map_err(|e| e.to_string())?;
        times[variant].push(start.elapsed().as_secs_f64() * 1000.0);
    }
    for (variant, t) in times.iter_mut().enumerate() {
        t.sort_by(f64::total_cmp);
        println!(
            "variant {variant}: min {:.2} p25 {:.2} median {:.2} ms ({} loads)",
            t[0],
            t[t.len() / 4],
            t[t.len() / 2],
            t.len()
        );
    }
    Ok(())
}
