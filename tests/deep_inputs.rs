//! Regression tests for issue #18's crash: a 32 KB line `+ p(1+1+...+1).` of 16,000
//! terms overflowed the stack in every front end. Now it is an error located at the
//! operator past the bound (`expression nested too deeply (more than 128 levels)`),
//! and whatever comes after it works: through the library (`Materialization`), through
//! `dynalog run` (a program file with such a rule), and through `dynalog session`.
//! Deep parentheses and long bodies likewise.

mod common;

use common::*;
use dynalog::live::Materialization;
use dynalog_analysis::MAX_BODY_LITERALS;
use dynalog_syntax::MAX_EXPR_DEPTH as D;
use std::path::Path;
#[path = "shared/hostile.rs"]
mod hostile;
use hostile::small_stack;

/// The error for an expression deeper than the bound.
fn too_deep() -> String {
    format!("expression nested too deeply (more than {D} levels)")
}

const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                  .output path\npath(x, y) :- edge(x, y).\n\
                  path(x, z) :- path(x, y), edge(y, z).\n";

/// `1+1+...+1` with `n` terms.
fn chain(n: usize) -> String {
    format!("1{}", "+1".repeat(n - 1))
}

#[test]
fn materialization_refuses_deep_lines_and_keeps_working() {
    for engine in ["seminaive", "diff"] {
        small_stack(move || {
            let mut m = Materialization::new("tc.dl", TC, engine, 1).expect("checks");
            m.commit().expect("commits");
            let dir = Path::new(".");
            let deep_lines = [
                // The reported line: a fact, a rule, a removal, a query.
                format!("+ edge({}, 1).", chain(16_000)),
                format!("+ path(x, y) :- edge(x, y), x < {}.", chain(16_000)),
                format!("- edge({}, 1).", chain(16_000)),
                format!("- path(x, y) :- edge(x, y), y = x + {}.", chain(16_000)),
                format!(
                    "+ edge({}1{}, 2).",
                    "(".repeat(100_000),
                    ")".repeat(100_000)
                ),
                format!("+ edge({}1, 2).", "-(".repeat(100_000)),
            ];
            for line in &deep_lines {
                let e = m.stage_command(line, dir).expect_err("too deep");
                assert!(e.message().contains(&too_deep()), "{e}");
                assert!(e.position().is_some(), "located: {e}");
                assert!(!m.has_staged(), "a refused line stages nothing");
            }
            let e = m
                .query(&format!("path({}, x)", chain(16_000)))
                .expect_err("too deep");
            assert!(e.message().contains("nested too deeply"), "{e}");
            // The session goes on.
            assert!(m.stage_command("+ edge(1, 2).", dir).expect("stages"));
            assert!(m.stage_command("+ edge(2, 3).", dir).expect("stages"));
            let c = m.commit().expect("commits");
            assert_eq!(c.changes.counts(|_| true), (5, 0), "{engine}");
            // At the bound, fine: a fact and a rule with expressions as deep as allowed.
            let at_bound = format!("+ edge({}, 1).", chain(D + 1));
            assert!(m.stage_command(&at_bound, dir).expect("at the bound"));
            let rule = format!(
                "+ path(x, y) :- edge(x, z), y = z + {}, x < y.",
                chain(D - 1)
            );
            assert!(m.stage_command(&rule, dir).expect("at the bound"));
            m.commit().expect("commits");
            let top = D + 1;
            assert!(m.contains_fact(&format!("edge({top}, 1)")).expect("a fact"));
            assert!(
                m.contains_fact(&format!("path(1, {top})")).expect("a fact"),
                "{engine}"
            );
        });
    }
}

#[test]
fn run_reports_a_deep_rule_with_its_position() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (program, location) in [
        (
            format!("{TC}path(x, y) :- edge(x, y), y < {}.\n", chain(16_000)),
            // `path(x, y) :- edge(x, y), y < 1` is 31 characters, then `+1` pairs.
            format!("prog.dl:6:{}", 32 + 2 * D),
        ),
        (
            format!(
                "{TC}edge({}1{}, 2).\n",
                "(".repeat(50_000),
                ")".repeat(50_000)
            ),
            format!("prog.dl:6:{}", 6 + D),
        ),
    ] {
        let prog = dir.path().join("prog.dl");
        std::fs::write(&prog, program).expect("write");
        let out = dir.path().join("out");
        let (ok, _, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
        assert!(!ok, "must fail");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let stderr = stderr.replace(&format!("{}/", dir.path().display()), "");
        assert!(
            stderr.contains(&format!("{location}: error: {}", too_deep())),
            "{stderr}"
        );
        // The snippet of a 32 KB line is cut to a window around the caret.
        assert!(stderr.lines().all(|l| l.len() < 300), "{stderr}");
    }
}

#[test]
fn run_reports_a_rule_body_that_is_too_long() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    let body = vec!["edge(x, y)"; 10_000].join(", ");
    std::fs::write(&prog, format!("{TC}path(x, y) :- {body}.\n")).expect("write");
    let out = dir.path().join("out");
    let (ok, _, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
    assert!(!ok && !stderr.contains("panicked"), "{stderr}");
    // The first literal past the bound, after `path(x, y) :- ` and `edge(x, y), `s.
    let col = 15 + 12 * MAX_BODY_LITERALS;
    assert!(
        stderr.contains(&format!("prog.dl:6:{col}: error: rule body too long")),
        "{stderr}"
    );
}

#[test]
fn session_refuses_the_deep_line_and_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("tc.dl");
    std::fs::write(&prog, TC).expect("write");
    let input = format!(
        "+ edge({}, 1).\n\
         + edge({}1{}, 2).\n\
         + edge(1, 2).\n\
         commit\n\
         ? path(1, x).\n",
        chain(16_000),
        "(".repeat(50_000),
        ")".repeat(50_000),
    );
    for engine in ["diff", "seminaive"] {
        let (ok, stdout, stderr) =
            run_session(&[prog.to_str().expect("utf-8"), "--engine", engine], &input);
        assert!(!ok, "a refused line makes the exit status non-zero");
        assert!(!stderr.contains("panicked"), "{stderr}");
        // `+ edge(1` then `+1` pairs: the first `+` past the bound.
        let col = 9 + 2 * D;
        assert!(
            stdout.contains(&format!("error: line 1: column {col}: {}", too_deep())),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("error: line 2: column {}: {}", 8 + D, too_deep())),
            "{stdout}"
        );
        assert!(
            stdout.contains("+ path(1, 2).\ncommit 1: +1 -0"),
            "{stdout}"
        );
        assert!(stdout.contains("\npath(1, 2).\n1 result\n"), "{stdout}");
    }
}
