//! Property tests of the parser on hostile input: arbitrary bytes and strings,
//! grammar-shaped random programs, deep nesting. The property: `parse` returns a
//! program or an error with a line and column inside the text, never panics and never
//! overflows its stack. Every case runs on a thread with a 2 MB stack (the size of the
//! server's worker threads), so an overflow aborts the test run.
//!
//! The default run is a few hundred cases per property (well under a second each in a
//! release build); `DYNALOG_FUZZ_CASES=N` runs N cases instead.

use dynalog_syntax::preprocess::{Options, preprocess};
use dynalog_syntax::{Diagnostic, Item, MAX_EXPR_DEPTH, Program, SourceFile, parse};
use proptest::prelude::*;
#[path = "../../../tests/shared/hostile.rs"]
mod hostile;
use hostile::{cases, small_stack};

/// Parse `text` on a small stack; an error must be located inside the text and render.
/// Also exercises what later stages do with the tree: canonical forms and drop.
fn parse_checked(text: String) -> Result<Program, Diagnostic> {
    small_stack(move || {
        let file = SourceFile::new("fuzz.dl", text.as_str());
        let result = parse(&file);
        match &result {
            Ok(program) => {
                for item in &program.items {
                    if let Item::Rule(r) = item {
                        let _ = r.canonical();
                    }
                }
            }
            Err(d) => {
                let lines = text.split('\n').count();
                assert!(
                    d.line >= 1 && d.line <= lines,
                    "line {} of {lines}: {d}",
                    d.line
                );
                assert!(d.col >= 1, "{d}");
                assert!(!d.to_string().is_empty());
            }
        }
        result
    })
}

/// Pieces of the language, glued at random: most programs are wrong, many are deep.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("(".to_string()),
        Just(")".to_string()),
        Just("-".to_string()),
        Just("+".to_string()),
        Just("*".to_string()),
        Just("!".to_string()),
        Just(",".to_string()),
        Just(".".to_string()),
        Just(":-".to_string()),
        Just("<-".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("=".to_string()),
        Just("<".to_string()),
        Just("?x".to_string()),
        Just("_".to_string()),
        Just("\"s\"".to_string()),
        Just("1".to_string()),
        Just("2.5".to_string()),
        Just("x".to_string()),
        Just("p(".to_string()),
        Just(".decl p(a: number)\n".to_string()),
        Just(".type T <: number\n".to_string()),
        // Components.
        Just(".comp C<T> : D {".to_string()),
        Just(".comp D {".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(".init c = C<number>\n".to_string()),
        Just(".init d = D\n".to_string()),
        Just(".override p\n".to_string()),
        Just("c.p(".to_string()),
        Just(".decl p(a: T) overridable\n".to_string()),
        (1usize..200).prop_map(|n| ".comp E { ".repeat(n)),
        (1usize..200).prop_map(|n| "a.".repeat(n)),
        Just("/*".to_string()),
        Just("*/".to_string()),
        Just("//".to_string()),
        Just("\n".to_string()),
        Just(" ".to_string()),
        // Long runs: deep nesting, long chains, long names and strings.
        (1usize..2000).prop_map(|n| "(".repeat(n)),
        (1usize..2000).prop_map(|n| ")".repeat(n)),
        (1usize..2000).prop_map(|n| "- ".repeat(n)),
        (1usize..2000).prop_map(|n| "!".repeat(n)),
        (1usize..2000).prop_map(|n| "+1".repeat(n)),
        (1usize..2000).prop_map(|n| "*x".repeat(n)),
        (1usize..5000).prop_map(|n| "a".repeat(n)),
        (1usize..5000).prop_map(|n| format!("\"{}\"", "z".repeat(n))),
    ]
}

/// A random expression of bounded size, with `depth` controlling nesting.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("x".to_string()),
        Just("y".to_string()),
        Just("_".to_string()),
        Just("1".to_string()),
        Just("-2".to_string()),
        Just("0.5".to_string()),
        Just("\"a\"".to_string()),
    ];
    leaf.prop_recursive(40, 400, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| format!("({e})")),
            inner.clone().prop_map(|e| format!("-{e}")),
            (inner.clone(), inner.clone(), 0..5usize)
                .prop_map(|(a, b, op)| { format!("{a} {} {b}", ["+", "-", "*", "/", "%"][op]) }),
        ]
    })
}

/// A grammar-shaped program: declarations, facts and rules with random expressions,
/// sometimes with a long chain or deep parentheses spliced in.
fn program() -> impl Strategy<Value = String> {
    let literal = prop_oneof![
        (expr(), expr()).prop_map(|(a, b)| format!("q({a}, {b})")),
        expr().prop_map(|a| format!("!q({a}, _)")),
        (expr(), expr(), 0..6usize)
            .prop_map(|(a, b, op)| format!("{a} {} {b}", ["=", "!=", "<", "<=", ">", ">="][op])),
    ];
    let rule = (expr(), proptest::collection::vec(literal, 0..6)).prop_map(|(head, body)| {
        if body.is_empty() {
            format!("p({head}).")
        } else {
            format!("p({head}) :- {}.", body.join(", "))
        }
    });
    let deep = prop_oneof![
        (0usize..600).prop_map(|n| format!("p(1{}).", "+1".repeat(n))),
        (0usize..600).prop_map(|n| format!("p({}x{}).", "(".repeat(n), ")".repeat(n))),
        (0usize..600).prop_map(|n| format!("p(x) :- q(x, _), x = {}x.", "-".repeat(n))),
        (0usize..400).prop_map(|n| format!("p({}1{}).", "1 * (".repeat(n), ")".repeat(n))),
    ];
    proptest::collection::vec(prop_oneof![4 => rule, 1 => deep], 0..8).prop_map(|items| {
        format!(
            ".decl p(a: number)\n.decl q(a: number, b: number)\n{}\n",
            items.join("\n")
        )
    })
}

/// Preprocess then parse `text` on a small stack: errors are located in the text.
fn preprocess_checked(text: String) {
    small_stack(move || {
        let lines = text.split('\n').count();
        let located = |d: &Diagnostic| {
            assert!(
                d.line >= 1 && d.line <= lines,
                "line {} of {lines}: {d}",
                d.line
            );
            assert!(d.col >= 1, "{d}");
            assert!(!d.to_string().is_empty());
        };
        match preprocess("fuzz.dl", &text, &Options::default()) {
            Ok(file) => {
                if let Err(d) = parse(&file) {
                    located(&d);
                }
            }
            Err(d) => located(&d),
        }
    })
}

/// Lines of preprocessor directives and Datalog using their macros.
fn directive_soup() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("#define A 1"),
        Just("#define A A + A"),
        Just("#define B(x, y) e(x, y)"),
        Just("#define F(x) B(x, F(x))"),
        Just("#define C(...) p(__VA_ARGS__)"),
        Just("#define S(x) #x"),
        Just("#define P(x, y) x ## y"),
        Just("#define D(x) \\"),
        Just("#undef A"),
        Just("#ifdef A"),
        Just("#ifndef B"),
        Just("#if defined(A) && A > 1 || !defined B"),
        Just("#elif A"),
        Just("#else"),
        Just("#endif"),
        Just("#include \"missing.dl\""),
        Just("#error stop"),
        Just("#pragma once"),
        Just("#"),
        Just("e(A, 2)."),
        Just("B(1, A)."),
        Just("F(3) :- B(1, 2)."),
        Just("C(1, 2, A)."),
        Just("S(a \"b\")"),
        Just("P(e, dge)(1, 2)."),
        Just("B(1,"),
        Just("/* #if 0"),
        Just("*/"),
        Just(".decl e(x: number, y: number)"),
        "[ -~]{0,20}".prop_map(|s| Box::leak(s.into_boxed_str()) as &str),
    ];
    proptest::collection::vec(line, 0..40).prop_map(|lines| lines.join("\n"))
}

/// Components declared and instantiated at random, by names that may be unknown,
/// cyclic, or given the wrong number of arguments.
fn component_program() -> impl Strategy<Value = String> {
    let name = || prop_oneof![Just("A"), Just("B"), Just("G"), Just("Z"), Just("T")];
    let comp_ref = (name(), proptest::collection::vec(name(), 0..2)).prop_map(|(n, args)| {
        if args.is_empty() {
            n.to_string()
        } else {
            format!("{n}<{}>", args.join(", "))
        }
    });
    let entry = prop_oneof![
        Just(".decl r(x: number) overridable".to_string()),
        Just(".decl s(x: T)".to_string()),
        Just("r(1).".to_string()),
        Just("s(x) :- r(x), !q.r(x).".to_string()),
        Just(".override r".to_string()),
        Just(".output s".to_string()),
        Just(".type U = T".to_string()),
        (0..4usize, comp_ref.clone()).prop_map(|(i, c)| format!(".init i{i} = {c}")),
    ];
    let comp = (
        name(),
        proptest::collection::vec(name(), 0..2),
        proptest::collection::vec(comp_ref.clone(), 0..3),
        proptest::collection::vec(entry, 0..6),
    )
        .prop_map(|(n, params, bases, body)| {
            let params = if params.is_empty() {
                String::new()
            } else {
                format!("<{}>", params.join(", "))
            };
            let bases = if bases.is_empty() {
                String::new()
            } else {
                format!(" : {}", bases.join(", "))
            };
            format!(".comp {n}{params}{bases} {{\n  {}\n}}", body.join("\n  "))
        });
    let top = prop_oneof![
        3 => comp,
        2 => (0..4usize, comp_ref).prop_map(|(i, c)| format!(".init q{i} = {c}")),
    ];
    proptest::collection::vec(top, 0..8).prop_map(|items| items.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(256), ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_preprocesses_or_fails_cleanly(text in ".{0,2000}") {
        preprocess_checked(text);
    }

    #[test]
    fn directive_soup_preprocesses_or_fails_cleanly(text in directive_soup()) {
        preprocess_checked(text);
    }

    #[test]
    fn arbitrary_bytes_preprocess_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..4000)) {
        preprocess_checked(String::from_utf8_lossy(&bytes).into_owned());
    }

    #[test]
    fn component_programs_expand_or_fail_cleanly(text in component_program()) {
        let _ = parse_checked(text);
    }

    #[test]
    fn arbitrary_bytes_parse_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..4000)) {
        let _ = parse_checked(String::from_utf8_lossy(&bytes).into_owned());
    }

    #[test]
    fn arbitrary_strings_parse_or_fail_cleanly(text in ".{0,2000}") {
        let _ = parse_checked(text);
    }

    #[test]
    fn token_soup_parses_or_fails_cleanly(tokens in proptest::collection::vec(token(), 0..60)) {
        let _ = parse_checked(tokens.concat());
    }

    #[test]
    fn grammar_shaped_programs_parse_unless_too_deep(text in program()) {
        match parse_checked(text.clone()) {
            Ok(_) => {}
            // The generator makes only well-formed programs: the one reason to refuse
            // them is depth.
            Err(d) => prop_assert!(
                d.message.contains("nested too deeply"),
                "{}\n{}", d, text
            ),
        }
    }
}

/// The deepest expressions allowed parse, print canonically and drop on a 2 MB stack;
/// one level more is an error at the offending token.
#[test]
fn deepest_allowed_expressions_on_a_small_stack() {
    let n = MAX_EXPR_DEPTH;
    let shapes: Vec<(String, String)> = vec![
        (
            format!("p(1{}).", "+1".repeat(n)),
            format!("p(1{}).", "+1".repeat(n + 1)),
        ),
        (
            format!("p({}x{}).", "(".repeat(n), ")".repeat(n)),
            format!("p({}x{}).", "(".repeat(n + 1), ")".repeat(n + 1)),
        ),
        (
            format!("p({}x).", "-".repeat(n)),
            format!("p({}x).", "-".repeat(n + 1)),
        ),
        (
            format!("p({}x{}).", "-(".repeat(n / 2), ")".repeat(n / 2)),
            format!("p({}x{}).", "-(".repeat(n / 2 + 1), ")".repeat(n / 2 + 1)),
        ),
        (
            format!("p(x) :- q(x), x < x{}.", "*x".repeat(n)),
            format!("p(x) :- q(x), x < x{}.", "*x".repeat(n + 1)),
        ),
        (
            format!("p({}1{}).", "1 - (".repeat(n / 2), ")".repeat(n / 2)),
            format!(
                "p({}1{}).",
                "1 - (".repeat(n / 2 + 1),
                ")".repeat(n / 2 + 1)
            ),
        ),
    ];
    for (ok, too_deep) in shapes {
        if let Err(d) = parse_checked(ok.clone()) {
            panic!("{d}\nfor {ok}");
        }
        let d = parse_checked(too_deep.clone()).expect_err("one level too deep");
        assert_eq!(
            d.message,
            format!("expression nested too deeply (more than {n} levels)"),
            "{too_deep}"
        );
        assert_eq!(d.line, 1);
    }
}

/// The reported case: a 32 KB line `p(1+1+...+1).` of 16,000 terms, and its deeply
/// parenthesized cousins, fail at the first operator past the bound.
#[test]
fn sixteen_thousand_terms_are_an_error_not_an_overflow() {
    let text = format!("p(1{}).", "+1".repeat(15_999));
    assert!(text.len() > 32_000);
    let d = parse_checked(text).expect_err("too deep");
    // `p(1` then `+1` pairs: the operator one level past the bound is at column
    // 4 + 2 * MAX_EXPR_DEPTH.
    assert_eq!((d.line, d.col), (1, 4 + 2 * MAX_EXPR_DEPTH), "{d}");
    for text in [
        format!("p({}1{}).", "(".repeat(100_000), ")".repeat(100_000)),
        format!("p({}1).", "(".repeat(100_000)),
        format!("p({}x).", "-".repeat(100_000)),
        format!("p(x) :- q(x), {}x = 1.", "-".repeat(100_000)),
        format!("p(x{}).", "*x".repeat(100_000)),
    ] {
        let d = parse_checked(text).expect_err("too deep");
        assert!(d.message.contains("nested too deeply"), "{d}");
    }
}

/// Long flat input: many items, long names and strings, wide atoms. Linear work.
#[test]
fn long_flat_inputs_parse() {
    let name = "n".repeat(100_000);
    let text = format!(
        ".decl {name}(a: symbol)\n{name}(\"{}\").\n",
        "s".repeat(100_000)
    );
    let p = parse_checked(text).expect("parses");
    assert_eq!(p.items.len(), 2);
    let args: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
    let text = format!("p({}).", args.join(", "));
    assert_eq!(parse_checked(text).expect("parses").items.len(), 1);
    let body: Vec<String> = (0..10_000)
        .map(|i| format!("q(x{i}, x{})", i + 1))
        .collect();
    let text = format!("p(x0) :- {}.", body.join(", "));
    assert_eq!(parse_checked(text).expect("parses").items.len(), 1);
    let facts: String = (0..50_000).map(|i| format!("q({i}, {i}).\n")).collect();
    assert_eq!(parse_checked(facts).expect("parses").items.len(), 50_000);
    // The study's syntax: a 100 KB bare constant and a long body.
    let text = format!(
        "T(?x, {}) <- [{}]",
        "c".repeat(100_000),
        (0..10_000).map(|_| "a(?x)").collect::<Vec<_>>().join(", ")
    );
    assert_eq!(parse_checked(text).expect("parses").items.len(), 1);
}

/// Components nested as deeply as allowed, declared inside one another and each
/// instantiating the next, expand on a 2 MB stack; deeper chains are errors.
#[test]
fn deepest_allowed_components_on_a_small_stack() {
    let n = dynalog_syntax::components::MAX_COMPONENT_DEPTH;
    let mut nested = String::new();
    for i in 1..=n {
        nested.push_str(&format!(".comp C{i} {{\n"));
    }
    nested.push_str(".decl r(x: number)\nr(1).\n");
    for i in (1..=n).rev() {
        nested.push('}');
        if i > 1 {
            nested.push_str(&format!(" .init x = C{i}\n"));
        }
    }
    nested.push_str("\n.init top = C1\n");
    let program = parse_checked(nested).unwrap_or_else(|e| panic!("{e}"));
    let name = format!("top{}.r", ".x".repeat(n - 1));
    assert!(
        program
            .items
            .iter()
            .any(|i| matches!(i, Item::Decl(d) if d.name.name == name))
    );
    let mut chain = String::new();
    for i in 0..10 * n {
        chain.push_str(&format!(".comp C{i} {{ .init x = C{} }}\n", i + 1));
    }
    chain.push_str(&format!(".comp C{} {{ }}\n.init c = C0\n", 10 * n));
    let e = parse_checked(chain).expect_err("too deep");
    assert!(e.message.starts_with("components nested too deeply"), "{e}");
}
