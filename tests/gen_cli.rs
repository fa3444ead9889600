//! `dynalog gen`: the generators through the CLI, their output read back by `dynalog run`,
//! and bad arguments (a clear `error:`, a non-zero exit, no panic, no file left behind).

mod common;
use common::*;
use std::collections::HashSet;
use std::io::Read;

fn ok(args: &[&str]) -> String {
    dynalog_ok(args)
}

fn fails(args: &[&str]) -> String {
    let o = dynalog(args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "dynalog {args:?} should fail");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    assert!(stderr.starts_with("error: "), "unclear error: {stderr}");
    stderr
}

#[test]
fn tc_runs_on_generated_rmat_and_rand_graphs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let facts = dir.path().join("edge.facts");
    let facts = facts.to_str().expect("utf-8 path");
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8 path");
    let program = root().join("programs/tc.dl");
    let program = program.to_str().expect("utf-8 path");

    // RMAT n = 1000, m = 10,000: the closure is complete over the 512 nodes that occur,
    // as for the study's RMAT-1k.
    ok(&[
        "gen", "rmat", "--nodes", "1000", "--edges", "10000", "--seed", "0", "-o", facts,
    ]);
    assert_eq!(
        std::fs::read_to_string(facts)
            .expect("edge.facts")
            .lines()
            .count(),
        10_000
    );
    ok(&[
        "run",
        program,
        "-F",
        dir.path().to_str().expect("utf-8"),
        "-D",
        out,
    ]);
    let tc = sorted_lines(&dir.path().join("out/tc.csv"));
    assert_eq!(tc.len(), 512 * 512);

    // A sparse G(n, p): the closure contains every edge and is computed from the file.
    ok(&[
        "gen", "rand", "--nodes", "300", "--p", "0.004", "--seed", "2", "-o", facts,
    ]);
    let edges: HashSet<String> = std::fs::read_to_string(facts)
        .expect("edge.facts")
        .lines()
        .map(str::to_string)
        .collect();
    assert!(!edges.is_empty());
    let stdout = ok(&[
        "run",
        program,
        "-F",
        dir.path().to_str().expect("utf-8"),
        "-D",
        "-",
    ]);
    assert!(stdout.contains("tc"), "{stdout}");
    ok(&[
        "run",
        program,
        "-F",
        dir.path().to_str().expect("utf-8"),
        "-D",
        out,
    ]);
    let tc: HashSet<String> = sorted_lines(&dir.path().join("out/tc.csv"))
        .into_iter()
        .collect();
    assert!(edges.is_subset(&tc));
    assert!(tc.len() > edges.len());
}

#[test]
fn stdout_and_gzip_outputs_agree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let gz = dir.path().join("g.txt.gz");
    let stdout = ok(&["gen", "rmat", "-n", "64", "-m", "500", "-s", "9"]);
    assert_eq!(stdout.lines().count(), 500);
    ok(&[
        "gen",
        "rmat",
        "-n",
        "64",
        "-m",
        "500",
        "-s",
        "9",
        "-o",
        gz.to_str().expect("utf-8"),
    ]);
    let mut unzipped = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).expect("the .gz file"))
        .read_to_string(&mut unzipped)
        .expect("valid gzip");
    assert_eq!(unzipped, stdout);
}

#[test]
fn lubm_starts_with_the_tbox_and_the_header() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("lubm.nt");
    ok(&[
        "gen",
        "lubm",
        "--universities",
        "1",
        "--seed",
        "0",
        "-o",
        file.to_str().expect("utf-8"),
    ]);
    let text = std::fs::read_to_string(&file).expect("lubm.nt");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 315 + 2 + 103_074);
    assert!(lines[315].starts_with("<> "));
    assert_eq!(
        lines[317],
        "<http://www.University0.edu> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> \
         <http://www.lehigh.edu/~zhp2/2004/0401/univ-bench.owl#University> ."
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let target = dir.path().join("never.txt");
    let target = target.to_str().expect("utf-8");
    let e = fails(&["gen", "rand", "--nodes", "10", "--p", "1.5", "-o", target]);
    assert!(e.contains("[0, 1]"), "{e}");
    assert!(
        !std::path::Path::new(target).exists(),
        "a failed run leaves no file"
    );
    // An existing file is not truncated by a run whose arguments are wrong.
    std::fs::write(target, "keep me\n").expect("write");
    fails(&["gen", "rmat", "--nodes", "1", "--edges", "5", "-o", target]);
    fails(&["gen", "lubm", "--universities", "0", "-o", target]);
    assert_eq!(
        std::fs::read_to_string(target).expect("still there"),
        "keep me\n"
    );
    fails(&["gen", "rand", "--nodes", "10", "--p", "-0.1"]);
    fails(&["gen", "rand", "--nodes", "10", "--p", "NaN"]);
    fails(&["gen", "rand", "--nodes", "0", "--p", "0.5"]);
    fails(&["gen", "rand", "--nodes", "ten", "--p", "0.5"]);
    fails(&["gen", "rand", "--nodes", "3000000000", "--p", "0.5"]);
    fails(&["gen", "rmat", "--nodes", "1", "--edges", "5"]);
    fails(&["gen", "rmat", "--nodes", "10", "--edges", "-5"]);
    fails(&["gen", "rmat", "--nodes", "10", "--edges", "100000000000000"]);
    fails(&["gen", "lubm", "--universities", "0"]);
    fails(&["gen", "lubm"]);
    let e = fails(&["gen", "lubm", "-u", "1", "-o", "/nonexistent-dir/x.nt"]);
    assert!(e.contains("cannot create"), "{e}");
}
