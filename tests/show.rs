//! `dynalog run PROGRAM --show ir`: the checked program printed as Datalog (relations
//! with types and strata, facts, rules by stratum in evaluation order); `--show plan`:
//! the rules as the chosen engine compiled them. Nothing read or evaluated.

mod common;
use common::*;

#[test]
fn show_ir_prints_relations_strata_and_rules_in_body_order() {
    let out = dynalog_ok(&["run", "examples/negation.dl", "--show", "ir"]);
    let lines: Vec<&str> = out.lines().collect();
    // Relations with their column types, qualifiers and strata, in declaration order.
    assert_eq!(
        lines[..7],
        [
            "// 6 relations, 6 rules in 4 strata, 0 facts written in the program",
            ".decl node(n: symbol) // stratum 0",
            ".decl edge(a: symbol, b: symbol) input // no rules",
            ".decl sink(n: symbol) input // no rules",
            ".decl reach(a: symbol, b: symbol) // stratum 1",
            ".decl stuck(n: symbol) output // stratum 2",
            ".decl disconnected(a: symbol, b: symbol) output printsize // stratum 3",
        ],
        "{out}"
    );
    // Rules under their stratum; `!reach(n, s)` moved after `sink(s)`, which binds `s`
    // (the source has `!reach(n, s), sink(s)`).
    let stuck = lines
        .iter()
        .position(|l| *l == "// stratum 2: stuck")
        .unwrap_or_else(|| panic!("no stratum 2 header in:\n{out}"));
    assert_eq!(
        lines[stuck + 1],
        "stuck(n) :- node(n), !sink(n), sink(s), !reach(n, s)."
    );
    assert!(
        out.contains(
            "// stratum 1 (recursive): reach\nreach(a, b) :- edge(a, b).\nreach(a, c) :- reach(a, b), edge(b, c).\n"
        ),
        "{out}"
    );
}

#[test]
fn show_ir_prints_facts_assignments_and_constants_at_their_types() {
    let out = dynalog_ok(&["run", "examples/arith.dl", "--show", "ir"]);
    assert!(out.contains("\n// facts\nedge(1, 2).\n"), "{out}");
    // `n < 3` is placed before the join with `edge`, as soon as `n` is bound; `h = 0.5`
    // is an assignment, placed first.
    assert!(
        out.contains("hops(x, z, n + 1) :- hops(x, y, n), n < 3, edge(y, z).\n"),
        "{out}"
    );
    assert!(
        out.contains("square(n, n * n, h, \"odd\") :- h := -1.25, edge(n, _), n % 2 != 0.\n"),
        "{out}"
    );
}

#[test]
fn show_reads_no_facts_and_writes_no_outputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).expect("out dir");
    // tc.dl reads `edge` from the fact folder: a folder that does not exist is fine,
    // since nothing is read.
    let missing = dir.path().join("no-such-folder");
    let stdout = dynalog_ok(&[
        "run",
        "examples/tc.dl",
        "-F",
        missing.to_str().expect("utf-8"),
        "-D",
        out_dir.to_str().expect("utf-8"),
        "--show",
        "ir",
    ]);
    assert!(
        stdout.contains("path(x, z) :- path(x, y), edge(y, z).\n"),
        "{stdout}"
    );
    let written: Vec<_> = std::fs::read_dir(&out_dir).expect("read out dir").collect();
    assert!(written.is_empty(), "outputs written: {written:?}");
}

#[test]
fn show_refuses_an_unknown_view_and_reports_program_errors() {
    let o = dynalog(&["run", "examples/tc.dl", "--show", "nope"]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("possible values: ir, plan"), "{stderr}");
    // A program that does not check is an error, with nothing printed.
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("bad.dl");
    std::fs::write(&prog, ".decl f(x: float)\nf(1e40).\n").expect("write");
    let o = dynalog(&["run", prog.to_str().expect("utf-8"), "--show", "ir"]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("bad.dl:2:3: error: float literal `1e40` is out of range"),
        "{stderr}"
    );
}

#[test]
fn show_plan_prints_the_compiled_rules_of_the_chosen_engine() {
    // The reference engine (the default of `run`): scans and index lookups with keys.
    let out = dynalog_ok(&["run", "examples/tc.dl", "--show", "plan"]);
    assert!(
        out.contains(
            "rule 1: path(x, z) :- path(x, y), edge(y, z).\n  scan path(x, y)\n  lookup edge(y, z) in index 0 on (0) key (y)\n  insert path(x, z)\n"
        ),
        "{out}"
    );
    // The differential engine: joins with the index of a binding pattern.
    let out = dynalog_ok(&[
        "run",
        "examples/tc.dl",
        "--engine",
        "diff",
        "--show",
        "plan",
    ]);
    assert!(
        out.contains("  join index of pattern 2 edge(y, z) key (y)\n  insert path(x, z)\n"),
        "{out}"
    );
    // relational evaluates each rule in delta variants.
    let out = dynalog_ok(&[
        "run",
        "examples/tc.dl",
        "--engine",
        "relational",
        "--show",
        "plan",
    ]);
    assert!(out.contains("rule 1, variant 0: "), "{out}");
}

#[test]
fn show_plan_of_an_engine_without_plans_is_an_error() {
    let o = dynalog(&[
        "run",
        "examples/tc.dl",
        "--engine",
        "chibi",
        "--show",
        "plan",
    ]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("error: the chibi engine has no compiled plan"),
        "{stderr}"
    );
}
