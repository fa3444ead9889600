//! The study's workloads give the sizes in `../shared/paper-data/README.md`, with every
//! engine. Ignored by default: it needs the paper's inputs converted by
//! `python3 scripts/paper-tsv.py` (into `/tmp/paper`, or `$DYNALOG_PAPER_TSV`), and
//! skips a workload whose files are missing.
//!
//! `cargo test --release --test paper_sizes -- --ignored --nocapture`

mod common;
use common::*;
use std::path::PathBuf;

fn paper_dir() -> PathBuf {
    std::env::var_os("DYNALOG_PAPER_TSV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/paper"))
}

fn programs() -> PathBuf {
    root().join("../shared/paper-data")
}

/// Total facts over all relations, from `--stats`' `facts:` line.
fn total_facts(stderr: &str) -> usize {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("facts: "))
        .map(|counts| {
            counts
                .split(", ")
                .filter_map(|c| c.rsplit(' ').next()?.parse::<usize>().ok())
                .sum()
        })
        .unwrap_or(0)
}

fn relation_facts(stderr: &str, relation: &str) -> Option<usize> {
    let counts = stderr.lines().find_map(|l| l.strip_prefix("facts: "))?;
    counts
        .split(", ")
        .find_map(|c| c.strip_prefix(&format!("{relation} "))?.parse().ok())
}

#[test]
#[ignore]
fn paper_workloads_give_the_studys_sizes() {
    // (program, input folder, relation or "*" for all, expected, facts of relations
    //  the program never mentions: OWL2RL's `name`, `Class`, ... count in the study's total)
    let cases = [
        ("tc.dl", "rand1k", "tc", 11_550),
        ("tc.dl", "rmat", "tc", 262_144),
        ("rdfs.dl", "lubm", "T", 126_732),
        ("owl2rl_lubm.dl", "owl2rl", "*", 138_015),
    ];
    for engine in ["seminaive", "diff"] {
        for (program, input, relation, expected) in cases {
            let program = programs().join(program);
            let facts = paper_dir().join(input);
            if !program.exists() || !facts.is_dir() {
                eprintln!(
                    "skipped {input}: {} or {} missing",
                    program.display(),
                    facts.display()
                );
                continue;
            }
            let out = tempfile::tempdir().expect("temp dir");
            let (ok, _, stderr) = run_program(
                &program,
                &facts,
                out.path().to_str().expect("utf-8"),
                &["--engine", engine, "-w", "2", "--stats"],
            );
            assert!(ok, "{engine} on {input}: {stderr}");
            let got = if relation == "*" {
                // Relations with input files that no rule mentions are not loaded; the
                // study counts them, so add their lines.
                let mentioned = total_facts(&stderr);
                let unmentioned: usize = std::fs::read_dir(&facts)
                    .expect("facts dir")
                    .filter_map(|e| e.ok())
                    .filter(|e| {
                        let name = e
                            .file_name()
                            .to_string_lossy()
                            .trim_end_matches(".facts")
                            .to_string();
                        relation_facts(&stderr, &name).is_none()
                    })
                    .map(|e| {
                        std::fs::read_to_string(e.path())
                            .map(|t| t.lines().count())
                            .unwrap_or(0)
                    })
                    .sum();
                mentioned + unmentioned
            } else {
                relation_facts(&stderr, relation).unwrap_or(0)
            };
            assert_eq!(got, expected, "{engine} on {input}");
            eprintln!("{engine} on {input}: {got} facts, as in the study");
        }
    }
}
