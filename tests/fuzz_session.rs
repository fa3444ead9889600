//! Property test of the session protocol on hostile lines: random command lines (facts,
//! rules, removals, loads, with random tokens, deep nesting, long runs and bad
//! characters) are staged with `Materialization::stage_command`, with commits in
//! between, on a thread with a 2 MB stack (the size of the server's threads). The
//! property: every line is staged or refused with a reason (located when it has a
//! position), a commit succeeds or is refused, nothing panics or overflows, and after
//! anything the session still takes a good fact and commits it.
//!
//! Default: a few hundred random sessions on the reference engine and a few dozen on
//! the differential one; `DYNALOG_FUZZ_CASES=N` runs N sessions per property.

use dynalog::live::Materialization;
use proptest::prelude::*;
use std::path::Path;
#[path = "shared/hostile.rs"]
mod hostile;
use hostile::{cases, small_stack};

const PROGRAM: &str = ".decl edge(x: number, y: number)\n.decl name(x: number, s: symbol)\n\
                       .decl path(x: number, y: number)\n.output path\n\
                       path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop_oneof![
            Just("edge("), Just("name("), Just("path("), Just("nope("), Just(")"),
            Just("("), Just(", "), Just("."), Just(" :- "), Just(" <- ["), Just("]"),
            Just("x"), Just("y"), Just("z"), Just("_"), Just("1"), Just("-3"), Just("2.5"),
            Just("\"s\""), Just("\"\\q\""), Just("\""), Just("+"), Just("-"), Just("*"),
            Just("/"), Just("%"), Just(" = "), Just(" < "), Just("!"), Just("?x"),
            Just("/*"), Just("//"), Just("\t"), Just("\u{feff}"), Just("é"), Just("#"),
            Just(".decl q(a: number)"), Just(".type T <: number"), Just(".input edge"),
        ]
        .prop_map(str::to_string),
        1 => (1usize..40_000).prop_map(|n| "+1".repeat(n)),
        1 => (1usize..40_000).prop_map(|n| "(".repeat(n)),
        1 => (1usize..40_000).prop_map(|n| ")".repeat(n)),
        1 => (1usize..20_000).prop_map(|n| "-".repeat(n)),
        1 => (1usize..2_000).prop_map(|n| vec!["edge(x, y)"; n].join(", ")),
        1 => (1usize..50_000).prop_map(|n| "a".repeat(n)),
    ]
}

/// A command line: a verb and random fragments, or a well-formed command.
fn line() -> impl Strategy<Value = String> {
    let verb = prop_oneof![
        Just("+ "),
        Just("- "),
        Just("load edge "),
        Just("unload name "),
        Just(""),
        Just("commit"),
    ];
    prop_oneof![
        3 => (verb, proptest::collection::vec(fragment(), 0..12))
            .prop_map(|(v, f)| format!("{v}{}", f.concat())),
        1 => (0u8..20, 0u8..20).prop_map(|(a, b)| format!("+ edge({a}, {b}).")),
        1 => (0u8..20, 0u8..20).prop_map(|(a, b)| format!("- edge({a}, {b}).")),
        1 => Just("+ path(x, z) :- edge(x, y), edge(y, z), x != z.".to_string()),
        1 => Just("- path(x, z) :- path(x, y), edge(y, z).".to_string()),
        1 => Just("+ name(1, \"a\").".to_string()),
    ]
}

/// Stage every line (a `commit` line commits), then check the session still works.
fn run_session(engine: &'static str, lines: Vec<String>) -> Result<(), TestCaseError> {
    small_stack(move || {
        let mut m = Materialization::new("p.dl", PROGRAM, engine, 1).expect("checks");
        m.commit().expect("commits");
        let dir = Path::new("tests/sessions/data");
        for line in &lines {
            if line == "commit" {
                let _ = m.commit();
                continue;
            }
            match m.stage_command(line, dir) {
                Ok(_) => {}
                Err(e) => {
                    prop_assert!(!e.message().is_empty());
                    if let Some((l, c)) = e.position() {
                        prop_assert_eq!(l, 1, "{}", e);
                        prop_assert!(
                            c >= 1 && c <= line.chars().count() + 2,
                            "{} for {:?}",
                            e,
                            line
                        );
                    }
                }
            }
        }
        let _ = m.commit();
        // Whatever happened, the session goes on.
        m.stage_command("+ edge(100, 101).", dir)
            .expect("a good fact");
        m.commit().expect("a good commit");
        prop_assert!(m.contains_fact("path(100, 101)").expect("a fact"));
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(192), ..ProptestConfig::default() })]

    #[test]
    fn random_lines_never_break_a_reference_session(lines in proptest::collection::vec(line(), 1..16)) {
        run_session("seminaive", lines)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), ..ProptestConfig::default() })]

    #[test]
    fn random_lines_never_break_a_differential_session(lines in proptest::collection::vec(line(), 1..12)) {
        run_session("diff", lines)?;
    }
}
