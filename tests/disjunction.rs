//! Disjunction in rule bodies (`;`, also parenthesized), several heads and
//! several names in one `.decl`: a written rule stands for one rule per head and per
//! disjunct, evaluated by every engine as Soufflé evaluates it; sessions add and
//! remove those rules one by one.

mod common;
use common::*;

const PROGRAM: &str = "\
.decl e, f(x: number, y: number)
.decl a(x: number)
.decl b, c(x: number)
.output a, b, c
e(1, 2). e(2, 3). e(3, 4). f(4, 5). f(1, 1).
a(x) :- e(x, _) ; f(_, x).
b(x), c(y) :- e(x, y), (x = 1 ; y = 4 ; !f(x, x), x > 2).
";

#[test]
fn every_engine_derives_what_souffle_derives() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("p.dl");
    std::fs::write(&program, PROGRAM).expect("write");
    // Soufflé 2.5's output of the same program.
    let expected = [
        ("a", ["1", "2", "3", "5"].as_slice()),
        ("b", &["1", "3"]),
        ("c", &["2", "4"]),
    ];
    for (engine, out) in run_with_every_engine(&program, dir.path(), dir.path(), "p") {
        for (relation, lines) in expected {
            assert_eq!(
                sorted_lines(&out.join(format!("{relation}.csv"))),
                lines,
                "{engine}: {relation}"
            );
        }
    }
    // The plan lists the six rules the written ones stand for, each with its own text.
    let plan = dynalog_ok(&["run", program.to_str().expect("utf-8"), "--show", "plan"]);
    for rule in [
        "rule 1: a(x) :- f(_, x).",
        "rule 4: b(x) :- e(x, y), !f(x, x), x > 2.",
        "rule 5: c(y) :- e(x, y), x = 1.",
    ] {
        assert!(plan.contains(rule), "{rule} in:\n{plan}");
    }
}

#[test]
fn sessions_add_and_remove_the_rules_of_a_disjunction_one_by_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("s.dl");
    std::fs::write(
        &program,
        ".decl e, g, h(x: number)\n.decl a(x: number)\n.output a\na(x) :- e(x) ; g(x).\n",
    )
    .expect("write");
    let input = "+ e(1).\n+ g(2).\n+ h(3).\ncommit\n\
                 + a(x) :- h(x) ; e(x).\ncommit\nrules\n\
                 - a(y) :- e(y).\ncommit\nrules\n\
                 - a(x) :- g(x) ; h(x).\ncommit\nrules\n";
    let (ok, stdout, stderr) = run_session(&[program.to_str().expect("utf-8")], input);
    assert!(ok, "{stderr}");
    let expected = "\
+ a(1).
+ a(2).
commit 1: +2 -0 in T ms
already present: a(x) :- e(x).
+ a(3).
commit 2: +1 -0 in T ms
a(x) :- e(x).
a(x) :- g(x).
a(x) :- h(x).
- a(1).
commit 3: +0 -1 in T ms
a(x) :- g(x).
a(x) :- h(x).
- a(2).
- a(3).
commit 4: +0 -2 in T ms
";
    let got = mask_times(&stdout);
    assert!(got.ends_with(expected), "got:\n{got}");
}
