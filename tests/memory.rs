//! Memory you can see: `--stats` and a session's `size` report what the differential
//! engine holds, part by part, and the parts add up to what the process really grew by.

mod common;
use common::*;
use std::path::Path;

/// The `(name, records, MB)` rows of the table `--stats` prints, and its total.
fn parts(stderr: &str) -> (Vec<(String, u64, f64)>, f64) {
    let mut rows = Vec::new();
    let mut total = None;
    let mut lines = stderr
        .lines()
        .skip_while(|l| *l != "memory held by the engine:");
    lines.next();
    for line in lines {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("total") {
            let mb = rest.split_whitespace().next().expect("total MB");
            total = Some(mb.parse::<f64>().expect("MB"));
            break;
        }
        let (name, rest) = line.split_once("  ").expect("name, then figures");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        assert_eq!(fields.len(), 4, "{line}");
        rows.push((
            name.to_string(),
            fields[0].parse().expect("records"),
            fields[2].parse().expect("MB"),
        ));
    }
    (rows, total.expect("a total line"))
}

/// A random graph of about 1,000 nodes whose closure has about a million facts.
fn graph(dir: &Path) {
    let edges = dir.join("edge.facts");
    dynalog_ok(&[
        "gen",
        "rand",
        "-n",
        "1000",
        "-p",
        "0.004",
        "-s",
        "1",
        "-o",
        edges.to_str().expect("utf-8 path"),
    ]);
}

#[test]
fn the_parts_add_up_to_the_resident_memory_the_run_grew_by() {
    let dir = tempfile::tempdir().expect("tempdir");
    graph(dir.path());
    let program = root().join("programs/tc.dl");
    let out = dynalog(&[
        "run",
        program.to_str().expect("utf-8"),
        "-F",
        dir.path().to_str().expect("utf-8"),
        "-D",
        dir.path().join("out").to_str().expect("utf-8"),
        "--engine",
        "diff",
        "--stats",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let (rows, total) = parts(&stderr);
    let sum: f64 = rows.iter().map(|r| r.2).sum();
    assert!((sum - total).abs() < 0.1 * rows.len() as f64, "{stderr}");
    // The parts the issue names are there, holding what they should.
    let part = |name: &str| {
        rows.iter()
            .find(|r| r.0.starts_with(name))
            .unwrap_or_else(|| panic!("no part `{name}` in\n{stderr}"))
    };
    let tc = std::fs::read_to_string(dir.path().join("out/tc.csv"))
        .expect("tc.csv")
        .lines()
        .count() as u64;
    assert!(tc > 500_000, "a mid-size load: {tc} facts");
    let edges = std::fs::read_to_string(dir.path().join("edge.facts"))
        .expect("edges")
        .lines()
        .count() as u64;
    // Every fact has its history in the `distinct`, whose table is also what the
    // handle reads: the handle keeps no copy.
    assert_eq!(part("distinct").1, tc + edges, "{stderr}");
    assert!(
        !rows.iter().any(|r| r.0.starts_with("materialization")),
        "{stderr}"
    );
    // The edges are the entries of the rule's last atom (`edge(y, z)` with `y`
    // bound), which the last atoms' join keeps (the shared index has none); every
    // `tc` fact waits there as a substitution.
    assert_eq!(part("index entries of last atoms").1, edges, "{stderr}");
    assert_eq!(part("index (pattern entries)").1, 0, "{stderr}");
    assert_eq!(part("substitutions at the last atom").1, tc, "{stderr}");
    assert!(part("distinct").2 > 0.0 && part("index entries of last atoms").2 > 0.0);
    // ... and what they add up to is what the process grew by, within 20%.
    let line = stderr
        .lines()
        .find(|l| l.starts_with("resident memory:"))
        .unwrap_or_else(|| panic!("no resident memory line in\n{stderr}"));
    let percent: f64 = line
        .rsplit("accounts for ")
        .next()
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((80.0..=120.0).contains(&percent), "{line}\n{stderr}");
}

#[test]
fn a_session_reports_the_engines_memory_with_size() {
    let script = "+ edge(1, 2).\n+ edge(2, 3).\ncommit\nsize\nsize tc\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let program = dir.path().join("tc.dl");
    std::fs::write(
        &program,
        ".decl edge(x: number, y: number)\n.decl tc(x: number, y: number)\n\
         tc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).\n",
    )
    .expect("program");
    let (ok, stdout, stderr) = run_session(
        &[
            program.to_str().expect("utf-8"),
            "--engine",
            "diff",
            "--quiet",
        ],
        script,
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("\n5 facts\n"), "{stdout}");
    assert!(
        stdout.contains("distinct (facts, round histories"),
        "{stdout}"
    );
    assert!(stdout.contains("bytes per fact"), "{stdout}");
    assert!(stdout.ends_with("\n3\n"), "{stdout}");
    // An engine that does not account for its memory says so.
    let (ok, stdout, _) = run_session(
        &[
            program.to_str().expect("utf-8"),
            "--engine",
            "seminaive",
            "--quiet",
        ],
        script,
    );
    assert!(ok);
    assert!(
        stdout.contains("does not account for its memory"),
        "{stdout}"
    );
}
