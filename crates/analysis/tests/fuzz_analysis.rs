//! Property tests of analysis on hostile programs: random programs that parse (random
//! declarations, facts, rules with expressions, comparisons, negation and aggregates, some at the
//! depth and length bounds) are checked on a thread with a 2 MB stack. The property:
//! `analyse` returns a program or an error located in the text; it never panics and
//! never overflows; a program that checks prints (`--show ir`) without panicking. `DYNALOG_FUZZ_CASES=N` runs N cases per property instead of the
//! default few hundred.

use dynalog_analysis::{MAX_BODY_LITERALS, analyse};
use dynalog_syntax::{MAX_EXPR_DEPTH, SourceFile, parse};
use proptest::prelude::*;
#[path = "../../../tests/shared/hostile.rs"]
mod hostile;
use hostile::{cases, small_stack};

/// Parse and analyse on a small stack: `None` if it does not parse, else whether it
/// checks (with the error's message).
fn check(text: String) -> Option<Result<usize, String>> {
    small_stack(move || {
        let file = SourceFile::new("fuzz.dl", text.as_str());
        let ast = parse(&file).ok()?;
        Some(match analyse(&file, &ast) {
            Ok(p) => {
                let shown = p.to_string();
                let decls = shown.lines().filter(|l| l.starts_with(".decl ")).count();
                assert_eq!(decls, p.relations.len(), "{shown}");
                Ok(p.rules.len() + p.facts.len())
            }
            Err(d) => {
                let lines = text.split('\n').count();
                assert!(d.line >= 1 && d.line <= lines && d.col >= 1, "{d}");
                Err(d.message)
            }
        })
    })
}

fn var() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        Just("z".to_string()),
    ]
}

fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => var(),
        1 => Just("_".to_string()),
        2 => (-3i32..4).prop_map(|n| n.to_string()),
        1 => Just("1.5".to_string()),
        1 => Just("\"a\"".to_string()),
    ];
    leaf.prop_recursive(12, 64, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| format!("({e})")),
            inner.clone().prop_map(|e| format!("-{e}")),
            (inner.clone(), inner.clone(), 0..5usize)
                .prop_map(|(a, b, op)| format!("{a} {} {b}", ["+", "-", "*", "/", "%"][op])),
            // Aggregates, nested through `inner`: groups, witnesses, wildcards, bodies
            // that bind nothing, wrong arities, unknown relations, symbols.
            (inner.clone(), inner.clone(), 0..5usize, 0..3usize).prop_map(|(t, a, f, r)| {
                let r = ["e", "u", "nope"][r];
                match f {
                    0 => format!("count : {{ {r}({a}, {t}) }}"),
                    1 => format!("sum {t} : {{ {r}({a}, y), y > {a} }}"),
                    2 => format!("min {t} : {r}(x, {a})"),
                    3 => format!("max {t} : {{ {r}({a}, _), !{r}(x, y) }}"),
                    _ => format!("mean {t} : {{ {r}(x, {a}) }}"),
                }
            }),
        ]
    })
}

fn literal() -> impl Strategy<Value = String> {
    let rel = prop_oneof![Just("e"), Just("s"), Just("p"), Just("u"), Just("nope")];
    prop_oneof![
        4 => (rel.clone(), expr(), expr()).prop_map(|(r, a, b)| if r == "u" {
            format!("u({a})")
        } else {
            format!("{r}({a}, {b})")
        }),
        1 => (rel, var(), var()).prop_map(|(r, a, b)| format!("!{r}({a}, {b})")),
        2 => (expr(), expr(), 0..6usize).prop_map(|(a, b, op)| {
            format!("{a} {} {b}", ["=", "!=", "<", "<=", ">", ">="][op])
        }),
    ]
}

/// A body at the depth or length bound (or just past it).
fn extreme_literal() -> impl Strategy<Value = String> {
    let n = MAX_EXPR_DEPTH;
    prop_oneof![
        (n - 2..n + 2).prop_map(|k| format!("x = y{}", "+1".repeat(k))),
        (n / 2 - 2..n / 2 + 2).prop_map(|k| format!("x < {}y{}", "-(".repeat(k), ")".repeat(k))),
        (MAX_BODY_LITERALS - 2..MAX_BODY_LITERALS + 2).prop_map(|k| vec!["e(x, y)"; k].join(", ")),
        // Aggregates nested as deep as the parser allows (or just past).
        (n / 2 - 2..n + 2).prop_map(|k| format!(
            "x = {}1{}",
            "count : { e(x, y), y < ".repeat(k),
            " }".repeat(k)
        )),
        (MAX_BODY_LITERALS / 2 - 1..MAX_BODY_LITERALS / 2 + 2)
            .prop_map(|k| vec!["e(x, y + 1)"; k].join(", ")),
    ]
}

fn program() -> impl Strategy<Value = String> {
    let rule = (
        prop_oneof![Just("p"), Just("s"), Just("e"), Just("u")],
        expr(),
        expr(),
        proptest::collection::vec(prop_oneof![6 => literal(), 1 => extreme_literal()], 0..5),
    )
        .prop_map(|(head, a, b, body)| {
            let head = if head == "u" {
                format!("u({a})")
            } else {
                format!("{head}({a}, {b})")
            };
            if body.is_empty() {
                format!("{head}.")
            } else {
                format!("{head} :- {}.", body.join(", "))
            }
        });
    let decl = prop_oneof![
        Just(".decl e(a: number, b: number)"),
        Just(".decl s(a: symbol, b: symbol)"),
        Just(".decl p(a: number, b: number)\n.output p"),
        Just(".decl u(a: float)"),
        Just(".type T <: number\n.decl e(a: T, b: T)"),
        Just(".decl e(a: unsigned, b: number)"),
    ];
    (
        proptest::collection::vec(decl, 1..5),
        proptest::collection::vec(rule, 0..6),
    )
        .prop_map(|(decls, rules)| format!("{}\n{}\n", decls.join("\n"), rules.join("\n")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    #[test]
    fn random_programs_check_or_fail_with_a_located_error(text in program()) {
        let _ = check(text);
    }
}

/// The deepest expressions and the longest body allowed, through analysis on a 2 MB
/// stack; past the bounds, located errors.
#[test]
fn bounds_hold_through_analysis_on_a_small_stack() {
    let n = MAX_EXPR_DEPTH;
    let decls = ".decl e(a: number, b: number)\n.decl p(a: number, b: number)\n";
    let deep = format!(
        "{decls}p(x, y{}) :- e(x, y), x < {}y{}, {}x = y.\n\
         p(1{}, 2).\n",
        "+1".repeat(n),
        "-(".repeat(n / 2),
        ")".repeat(n / 2),
        "-".repeat(n),
        "*1".repeat(n),
    );
    assert_eq!(check(deep), Some(Ok(2)));
    let long = format!(
        "{decls}p(x, y) :- {}.\n",
        vec!["e(x, y)"; MAX_BODY_LITERALS].join(", ")
    );
    assert_eq!(check(long), Some(Ok(1)));
    let longer = format!(
        "{decls}p(x, y) :- {}.\n",
        vec!["e(x, y)"; MAX_BODY_LITERALS + 1].join(", ")
    );
    match check(longer) {
        Some(Err(m)) => assert!(m.contains("rule body too long"), "{m}"),
        other => panic!("{other:?}"),
    }
}

/// Long flat programs are checked in linear time (seconds for quadratic passes before).
#[test]
fn long_flat_programs() {
    // 20,000 rules in a chain of relations: many strata.
    let mut text = String::from(".decl p0(a: number)\np0(1).\n");
    for i in 1..=20_000 {
        text.push_str(&format!(
            ".decl p{i}(a: number)\np{i}(x) :- p{}(x).\n",
            i - 1
        ));
    }
    assert_eq!(check(text), Some(Ok(20_001)));
    // A relation of 10,000 columns and a rule copying it.
    let n = 10_000;
    let cols: Vec<String> = (0..n).map(|i| format!("c{i}: number")).collect();
    let vars: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let text = format!(
        ".decl r({c})\n.decl s({c})\ns({v}) :- r({v}).\n",
        c = cols.join(", "),
        v = vars.join(", ")
    );
    assert_eq!(check(text), Some(Ok(1)));
}
