//! Bad input through the CLI: every error class exits non-zero with
//! `file:line:col: error: reason` and the offending text, and never panics.

mod common;
use common::*;
use std::path::Path;

/// Write `program` (and fact files) into a temp dir, run it, and return stderr.
fn fails(program: &str, facts: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    std::fs::write(&prog, program).expect("write program");
    for (name, text) in facts {
        std::fs::write(dir.path().join(name), text).expect("write facts");
    }
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
    assert!(!ok, "expected failure, got success: {stdout}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    // Nothing half-written: a failing run writes no outputs.
    assert!(
        !out.exists()
            || std::fs::read_dir(&out)
                .map(|mut d| d.next().is_none())
                .unwrap_or(true)
    );
    // Errors name the file by the path it was given.
    let shown = stderr.replace(&dir.path().display().to_string(), "DIR");
    let _ = Path::new(&shown);
    shown
}

fn assert_error(stderr: &str, location: &str, reason: &str) {
    assert!(
        stderr.contains(&format!("{location}: error: ")),
        "expected an error at {location}, got:\n{stderr}"
    );
    assert!(stderr.contains(reason), "expected `{reason}` in:\n{stderr}");
}

#[test]
fn syntax_error() {
    let e = fails(".decl e(x: number)\ne(1) :- e(2)\n", &[]);
    assert_error(&e, "DIR/prog.dl:2:13", "missing `.` at the end of the rule");
    assert!(
        e.contains("e(1) :- e(2)"),
        "the offending line is shown: {e}"
    );
}

#[test]
fn undeclared_relation() {
    let e = fails(
        ".decl edge(x: number, y: number)\n.decl p(x: number)\np(x) :- edg(x, _).\n",
        &[],
    );
    assert_error(&e, "DIR/prog.dl:3:9", "relation `edg` is not declared");
    assert!(e.contains("did you mean `edge`"), "{e}");
}

#[test]
fn arity_mismatch() {
    let e = fails(
        ".decl e(x: number, y: number)\n.decl p(x: number)\np(x) :- e(x).\n",
        &[],
    );
    assert_error(
        &e,
        "DIR/prog.dl:3:9",
        "relation `e` has 2 columns but is used here with 1 argument",
    );
}

#[test]
fn type_mismatch() {
    let e = fails(
        ".decl e(x: number, y: symbol)\n.decl p(x: number)\np(y) :- e(_, y).\n",
        &[],
    );
    assert_error(&e, "DIR/prog.dl:3:3", "type mismatch");
    let e = fails(".decl e(x: number)\ne(\"a\").\n", &[]);
    assert_error(&e, "DIR/prog.dl:2:3", "type mismatch");
    let e = fails(
        ".decl e(x: number, y: symbol)\n.decl p(x: number)\np(x) :- e(x, y), e(y, _).\n",
        &[],
    );
    assert_error(&e, "DIR/prog.dl:3:20", "type mismatch: variable `y`");
}

#[test]
fn ungrounded_variables() {
    let e = fails(
        ".decl e(x: number)\n.decl p(x: number, y: number)\np(x, y) :- e(x).\n",
        &[],
    );
    assert_error(
        &e,
        "DIR/prog.dl:3:6",
        "variable `y` in the head is not grounded",
    );
    let e = fails(
        ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x), !e(y).\n",
        &[],
    );
    assert_error(
        &e,
        "DIR/prog.dl:3:18",
        "variable `y` in a negated atom is not grounded",
    );
    let e = fails(
        ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x), y < x.\n",
        &[],
    );
    assert_error(
        &e,
        "DIR/prog.dl:3:15",
        "variable `y` in a comparison is not grounded",
    );
}

#[test]
fn negation_through_recursion() {
    let e = fails(
        ".decl e(x: number)\n.decl p(x: number)\n.decl q(x: number)\np(x) :- e(x), !q(x).\nq(x) :- p(x).\n",
        &[],
    );
    assert_error(&e, "DIR/prog.dl:4:15", "negation through recursion");
    assert!(e.contains("p -> q -> p"), "the cycle is named: {e}");
}

#[test]
fn bad_fact_lines() {
    let prog = ".decl e(x: number, y: number)\n.input e\n.decl p(x: number)\n.output p\np(x) :- e(x, _).\n";
    let e = fails(prog, &[("e.facts", "1\t2\n3\t4\t5\n")]);
    assert_error(&e, "DIR/e.facts:2:5", "expected 2 columns for `e`, found 3");
    let e = fails(prog, &[("e.facts", "1\t2\n3\tfour\n")]);
    assert_error(&e, "DIR/e.facts:2:3", "`four` is not a number");
}

#[test]
fn floats_beyond_32_bits_are_errors_not_infinities() {
    // In the program: at the literal, for a fact and in a rule.
    let e = fails(".decl f(x: float)\n.output f\nf(2.5).\nf(1e40).\n", &[]);
    assert_error(
        &e,
        "DIR/prog.dl:4:3",
        "float literal `1e40` is out of range of a 32-bit float",
    );
    let e = fails(
        ".decl f(x: float)\n.input f\n.decl g(x: float)\n.output g\ng(x) :- f(x), x < -1e39.\n",
        &[("f.facts", "1.5\n")],
    );
    assert_error(
        &e,
        "DIR/prog.dl:5:20",
        "float literal `1e39` is out of range of a 32-bit float",
    );
    // In a fact file: at the field, as an integer out of range is.
    let prog = ".decl e(x: number, y: float)\n.input e\n.output e\n";
    let e = fails(prog, &[("e.facts", "1\t2.5\n3\t1e40\n")]);
    assert_error(
        &e,
        "DIR/e.facts:2:3",
        "column 2 of `e`: `1e40` is out of range of a 32-bit float",
    );
    let e = fails(prog, &[("e.facts", "3000000000\t1\n")]);
    assert_error(
        &e,
        "DIR/e.facts:1:1",
        "column 1 of `e`: `3000000000` is not a number",
    );
}

#[test]
fn unsigned_constants_are_unsigned_only() {
    let e = fails(".decl n(x: number)\n.output n\nn(1u).\n", &[]);
    assert_error(
        &e,
        "DIR/prog.dl:3:3",
        "type mismatch: column 1 of `n` is a number, but `1u` is an unsigned constant",
    );
    let e = fails(
        ".decl n(x: number)\n.output n\nn(1).\nn(x) :- n(y), x = y + 1u.\n",
        &[],
    );
    assert_error(
        &e,
        "DIR/prog.dl:4:23",
        "type mismatch: this expression is a number, but `1u` is an unsigned constant",
    );
    let e = fails(".decl u(x: unsigned)\n.output u\nu(4294967296u).\n", &[]);
    assert_error(
        &e,
        "DIR/prog.dl:3:3",
        "4294967296u does not fit in a 32-bit unsigned",
    );
}

#[test]
fn missing_input_file() {
    let e = fails(".decl e(x: number)\n.input e\n.output e\n", &[]);
    assert_error(&e, "DIR/prog.dl:2:1", "cannot read the input of `e`");
    assert!(e.contains("e.facts"), "{e}");
}

#[test]
fn empty_input_file_is_fine() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    std::fs::write(&prog, ".decl e(x: number)\n.input e\n.printsize e\n").expect("write");
    std::fs::write(dir.path().join("e.facts"), "").expect("write");
    let (ok, stdout, stderr) = run_program(&prog, dir.path(), "-", &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "e\t0\n");
}

#[test]
fn unreadable_program_and_bad_flags() {
    let o = dynalog(&["run", "does/not/exist.dl"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot read `does/not/exist.dl`"));
    let o = dynalog(&["run", "examples/tc.dl", "--engine", "nope"]);
    assert!(!o.status.success());
}

#[test]
fn an_output_that_cannot_be_written_leaves_no_output_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    // `a` is written first; `b` goes under `blocked/`, which is a file, so it fails.
    std::fs::write(
        &prog,
        ".decl a(x: number)\n.output a\n.decl b(x: number)\n.output b(filename=\"blocked/b.csv\")\na(1).\nb(2).\n",
    )
    .expect("write program");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("blocked"), "a file, not a folder\n").expect("write");
    std::fs::write(out.join("a.csv"), "an earlier run's output\n").expect("write");
    let (ok, _, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
    assert!(!ok, "the run must fail");
    assert!(stderr.contains("blocked/b.csv"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let mut left: Vec<String> = std::fs::read_dir(&out)
        .expect("reads")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["a.csv", "blocked"], "no temporary file is left");
    assert_eq!(
        std::fs::read_to_string(out.join("a.csv")).expect("reads"),
        "an earlier run's output\n",
        "the earlier output is untouched"
    );
}

#[test]
fn component_errors_point_into_the_component() {
    // A component that instantiates itself: a located error, not a hang or overflow.
    let e = fails(".comp A {\n  .init x = A\n}\n.init a = A\n", &[]);
    assert_error(
        &e,
        "DIR/prog.dl:2:3",
        "the component `A` instantiates itself",
    );
    let e = fails(".comp A { }\n.init a = B\n", &[]);
    assert_error(&e, "DIR/prog.dl:2:11", "unknown component `B`");
    // A type error in an instance's rule is shown where the component writes it.
    let e = fails(
        ".comp A {\n  .decl r(x: number)\n  r(\"a\").\n}\n.init a = A\n",
        &[],
    );
    assert_error(&e, "DIR/prog.dl:3:5", "column 1 of `a.r` is a number");
}
