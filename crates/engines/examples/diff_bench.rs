//! Benchmark of the differential engine on the paper's inputs (the E, E+, E- protocol).
//!
//! ```text
//! cargo run --release -p dynalog-engines --example diff_bench -- \
//!     PROGRAM.dl FACTS_FILE RELATION WORKERS LOAD_PERCENT [--repeat N] [--rule 'RULE']
//!     [--idle-merge N|none] [--singles N]
//! ```
//!
//! Loads the first LOAD_PERCENT% of the lines of FACTS_FILE (tab-separated symbols) into
//! RELATION and materializes (E), inserts the remaining lines (E+), deletes them again
//! (E-) and checks that the materialization equals the one after E; `--repeat N` repeats
//! the E+/E- pair N times and reports the medians. With 100 it only
//! measures the full materialization. With `--rule`, it then adds the rule to the
//! program and removes it again, timing both. `--singles N` inserts and deletes one of
//! the facts after the load N times (default 1), each its own commit, and reports the
//! medians. Peak memory: run under `/usr/bin/time -v`.

use dynalog_analysis::{RelId, Value};
use dynalog_engines::Engine;
use dynalog_engines::diff::Diff;
use dynalog_syntax::SourceFile;
use std::collections::BTreeSet;
use std::time::Instant;

fn analyse(text: &str, symbols: dynalog_analysis::SymbolTable) -> dynalog_analysis::Program {
    let file = SourceFile::new("bench.dl", text.to_string());
    let ast = dynalog_syntax::parse(&file).unwrap_or_else(|d| panic!("{d:?}"));
    dynalog_analysis::analyse_with(&file, &ast, symbols, &Default::default())
        .unwrap_or_else(|d| panic!("{d:?}"))
}

fn total(engine: &Diff) -> usize {
    (0..engine.program().relations.len())
        .map(|r| engine.len(r as RelId))
        .sum()
}

fn snapshot(engine: &Diff) -> Vec<BTreeSet<Vec<Value>>> {
    (0..engine.program().relations.len())
        .map(|r| engine.facts(r as RelId).into_iter().collect())
        .collect()
}

/// Resident memory now and at its peak, from `/proc/self/status` (Linux).
fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or("?".to_string(), |kb| format!("{:.0} MB", kb / 1024.0))
    };
    format!("RSS {}, peak {}", field("VmRSS:"), field("VmHWM:"))
}

/// The number after `flag` in `args`, 1 without it.
fn count_flag(args: &[String], flag: &str) -> usize {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

/// Fix glibc's mmap threshold at 256 KiB, as the `dynalog` binary does first thing
/// (`tune_allocator` in the root package's `src/process.rs`, where the measurements
/// behind it are), so that the figures are those of the binary.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a parameter of the allocator (thread-safe in glibc).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 * 1024);
    }
}

fn main() {
    tune_allocator();
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 6 {
        eprintln!(
            "usage: diff_bench PROGRAM FACTS RELATION WORKERS LOAD_PERCENT [--repeat N] \
             [--rule TEXT] [--idle-merge N|none] [--singles N]"
        );
        std::process::exit(2);
    }
    let text = std::fs::read_to_string(&args[1]).expect("program");
    let repeat = count_flag(&args, "--repeat");
    let idle_merge = match args.iter().position(|a| a == "--idle-merge") {
        Some(i) => match args.get(i + 1).map(String::as_str) {
            Some("none") => None,
            Some(v) => Some(v.parse().expect("--idle-merge N|none")),
            None => dynalog_engines::diff::IDLE_MERGE_EFFORT,
        },
        None => dynalog_engines::diff::IDLE_MERGE_EFFORT,
    };
    let extra_rule = args
        .iter()
        .position(|a| a == "--rule")
        .and_then(|i| args.get(i + 1).cloned());
    let program = analyse(&text, Default::default());
    let rel = program.relation_id(&args[3]).expect("relation");
    let workers: usize = args[4].parse().expect("workers");
    let percent: usize = args[5].parse().expect("percent");
    let symbols = program.symbols.clone();
    let lines: Vec<Vec<Value>> = std::fs::read_to_string(&args[2])
        .expect("facts")
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').map(|s| symbols.intern(s)).collect())
        .collect();
    let mut program = program;
    program.symbols = symbols;
    let cut = lines.len() * percent / 100;

    let t = Instant::now();
    let mut engine =
        Diff::with_idle_merge_effort(program.clone(), workers, idle_merge).expect("engine");
    let started = t.elapsed();
    let t = Instant::now();
    for l in &lines[..cut] {
        engine.insert(rel, l);
    }
    let stats = engine.commit().expect("commit");
    let e = t.elapsed();
    println!(
        "E   ({percent}%): {:8.3} ms  {} facts ({} workers, start {:.1} ms, rounds {:?})",
        e.as_secs_f64() * 1e3,
        total(&engine),
        workers,
        started.as_secs_f64() * 1e3,
        stats
            .strata
            .iter()
            .map(|s| s.iterations)
            .collect::<Vec<_>>()
    );
    println!("memory after E: {}", memory());
    if cut < lines.len() {
        let before = snapshot(&engine);
        let (mut ins, mut del) = (Vec::new(), Vec::new());
        let mut after_insert = 0;
        for _ in 0..repeat {
            let t = Instant::now();
            for l in &lines[cut..] {
                engine.insert(rel, l);
            }
            engine.commit().expect("commit");
            ins.push(t.elapsed().as_secs_f64() * 1e3);
            after_insert = total(&engine);
            let t = Instant::now();
            for l in &lines[cut..] {
                engine.remove(rel, l);
            }
            engine.commit().expect("commit");
            del.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "E+: {:8.3} ms  {} facts;  E-: {:8.3} ms  {} facts  (median of {repeat})",
            median(&mut ins),
            after_insert,
            median(&mut del),
            total(&engine)
        );
        let same = snapshot(&engine) == before;
        println!("round trip returns to E exactly: {same}");
        if !same {
            std::process::exit(1);
        }
    }
    let singles = count_flag(&args, "--singles");
    let rest = &lines[cut.min(lines.len())..];
    if !rest.is_empty() {
        // One new fact and its deletion (the fixed cost of a commit plus its effects),
        // `--singles N` times over the facts after the load.
        let (mut ins, mut del) = (Vec::new(), Vec::new());
        for i in 0..singles {
            let one = &rest[i % rest.len()];
            let t = Instant::now();
            engine.insert(rel, one);
            engine.commit().expect("commit");
            ins.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            engine.remove(rel, one);
            engine.commit().expect("commit");
            del.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        if singles > 1 {
            println!("one fact, insert (ms): {}", list(&ins));
            println!("one fact, delete (ms): {}", list(&del));
        }
        ins.sort_by(f64::total_cmp);
        del.sort_by(f64::total_cmp);
        println!(
            "one fact: insert {:8.3} ms, delete {:8.3} ms (median of {singles})",
            ins[ins.len() / 2],
            del[del.len() / 2]
        );
    }
    if let Some(rule) = extra_rule {
        let before = snapshot(&engine);
        let with = analyse(&format!("{text}\n{rule}"), engine.program().symbols.clone());
        let without = engine.program().clone();
        let t = Instant::now();
        engine.set_program(with);
        engine.commit().expect("commit");
        let add = t.elapsed();
        let n = total(&engine);
        let t = Instant::now();
        engine.set_program(without);
        engine.commit().expect("commit");
        let del = t.elapsed();
        println!(
            "add rule: {:8.3} ms  {} facts;  remove rule: {:8.3} ms  {} facts; back: {}",
            add.as_secs_f64() * 1e3,
            n,
            del.as_secs_f64() * 1e3,
            total(&engine),
            snapshot(&engine) == before
        );
    }
}
