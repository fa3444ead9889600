//! Unit tests of the analysis: programs checked, and errors with their line, column
//! and reason.

use super::*;
use crate::ir::{Expr, Functor, Literal, Term};
use crate::value::Type;
use dynalog_syntax::{CmpOp, MAX_EXPR_DEPTH, UnaryOp};

fn check(text: &str) -> Result<Program, Diagnostic> {
    let file = SourceFile::new("t.dl", text.to_string());
    let ast = dynalog_syntax::parse(&file).map_err(|d| panic!("parse error: {d}"))?;
    analyse(&file, &ast)
}

fn check_err(text: &str, line: usize, col: usize, reason: &str) {
    match check(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(d) => {
            assert_eq!((d.line, d.col), (line, col), "{d}");
            assert!(d.message.contains(reason), "expected `{reason}` in: {d}");
        }
    }
}

const EDGE: &str = ".decl edge(x: number, y: number)\n";

#[test]
fn resolves_relations_types_and_strata() {
    let p = check(
        ".type Node <: symbol\n.type Id = Node\n.decl e(a: Id, b: Node)\n.input e\n\
         .decl tc(a: Node, b: Node)\n.output tc\n.decl un(a: symbol, b: symbol)\n.printsize un\n\
         tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).\n\
         un(x, y) :- e(x, _), e(_, y), !tc(x, y).\n",
    )
    .unwrap();
    assert_eq!(p.relations.len(), 3);
    assert_eq!(p.relations[0].types, vec![Type::Symbol, Type::Symbol]);
    assert_eq!(p.relations[0].inputs.len(), 1);
    assert!(p.relations[2].printsize);
    assert_eq!(p.strata.len(), 2);
    let tc = p.relation_id("tc").unwrap();
    let un = p.relation_id("un").unwrap();
    assert_eq!(p.strata[0].relations, vec![tc]);
    assert!(p.strata[0].recursive);
    assert_eq!(p.strata[1].relations, vec![un]);
    assert!(!p.strata[1].recursive);
    assert_eq!(p.rules[2].stratum, 1);
    // The negation comes after the atoms that bind its variables.
    assert!(matches!(p.rules[2].body.last(), Some(Literal::Not(_))));
}

#[test]
fn inline_facts_are_evaluated_and_interned() {
    let p =
        check(".decl r(a: number, b: symbol, c: float, d: unsigned)\nr(-2 * 3, \"x\", 1.5, 7).\n")
            .unwrap();
    let (rel, t) = &p.facts[0];
    assert_eq!(*rel, 0);
    assert_eq!(t[0] as i32, -6);
    assert_eq!(&*p.symbols.resolve(t[1]), "x");
    assert_eq!(f32::from_bits(t[2]), 1.5);
    assert_eq!(t[3], 7);
}

#[test]
fn equality_binds_and_orders_body() {
    let p = check(&format!(
        "{EDGE}.decl p(x: number, y: number)\np(x, z) :- z = y + 1, edge(x, y), x < z.\n"
    ))
    .unwrap();
    let body = &p.rules[0].body;
    assert!(matches!(body[0], Literal::Atom(_)));
    assert!(
        matches!(body[1], Literal::Assign { var: 2, .. }),
        "{body:?}"
    );
    assert!(matches!(
        body[2],
        Literal::Filter {
            op: CmpOp::Lt,
            ty: Type::Number,
            ..
        }
    ));
}

#[test]
fn expression_arguments_in_body_atoms_are_desugared() {
    let p = check(&format!(
        "{EDGE}.decl p(x: number)\np(x) :- edge(x, _), edge(x + 1, x).\n"
    ))
    .unwrap();
    let body = &p.rules[0].body;
    assert_eq!(body.len(), 3, "{body:?}");
    // `_arg1 = x + 1` is computed as soon as `x` is bound, so the second atom is a
    // lookup on both columns.
    assert!(
        matches!(&body[1], Literal::Assign { var: 1, .. }),
        "{body:?}"
    );
    assert!(
        matches!(&body[2], Literal::Atom(a) if a.args == [Term::Var(1), Term::Var(0)]),
        "{body:?}"
    );
}

#[test]
fn comparison_types_flow_from_atoms() {
    let p =
        check(".decl v(x: float)\n.decl w(x: float)\nw(y) :- v(x), y = x * 2.0, y > 1.\n").unwrap();
    assert_eq!(p.rules[0].var_types, vec![Type::Float, Type::Float]);
    let p = check(".decl v(x: unsigned)\n.decl w(x: unsigned)\nw(x + 1) :- v(x).\n").unwrap();
    assert!(matches!(
        &p.rules[0].head.args[0],
        Expr::Binary {
            ty: Type::Unsigned,
            ..
        }
    ));
}

#[test]
fn paper_programs_declare_relations_implicitly() {
    let p = check("tc(?x, ?y) <- [a(?x, ?y)]\ntc(?x, ?z) <- [tc(?x, ?y), a(?y, ?z)]").unwrap();
    let a = p.relation(p.relation_id("a").unwrap());
    assert!(a.implicit);
    assert_eq!(a.types, vec![Type::Symbol; 2]);
    assert_eq!(a.inputs[0].get("optional"), Some("true"));
    assert_eq!(p.strata.len(), 1);
    let p = check("T(?y, rdf:type, ?x) <- [T(?a, rdfs:domain, ?x), T(?y, ?a, ?z)]").unwrap();
    assert!(p.symbols.lookup("rdf:type").is_some());
    assert!(p.symbols.lookup("rdfs:domain").is_some());
}

#[test]
fn error_undeclared_relation() {
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(x) :- edg(x, _).\n"),
        3,
        9,
        "relation `edg` is not declared",
    );
    check_err(".output nope\n", 1, 9, "relation `nope` is not declared");
    check_err(
        ".decl a(x: number)\n.decl a(x: number)\n",
        2,
        7,
        "declared twice (first on line 1)",
    );
}

#[test]
fn error_arity() {
    check_err(
        &format!("{EDGE}edge(1).\n"),
        2,
        1,
        "has 2 columns but is used here with 1 argument",
    );
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(x) :- edge(x, x, x).\n"),
        3,
        9,
        "with 3 arguments",
    );
}

#[test]
fn error_types() {
    check_err(".decl r(x: strng)\n", 1, 12, "unknown type `strng`");
    check_err(
        ".decl r(x: symbol)\nr(1).\n",
        2,
        3,
        "type mismatch: column 1 of `r` is a symbol",
    );
    check_err(
        ".decl r(x: number)\nr(\"a\").\n",
        2,
        3,
        "type mismatch: column 1 of `r` is a number",
    );
    check_err(".decl r(x: number)\nr(1.5).\n", 2, 3, "type mismatch");
    check_err(
        ".decl r(x: number)\nr(3000000000).\n",
        2,
        3,
        "does not fit in a 32-bit number",
    );
    check_err(
        ".decl s(x: symbol)\n.decl n(x: number)\nn(x) :- s(x).\n",
        3,
        3,
        "variable `x` is a symbol, but column 1 of `n` needs a number",
    );
    check_err(
        ".decl s(x: symbol)\n.decl n(x: symbol)\nn(x) :- s(x), s(y), x < y.\n",
        3,
        21,
        "symbols can only be compared with = and !=",
    );
    // `+` on symbols is `cat`, and its errors say `+`.
    check_err(
        ".decl n(x: number)\n.decl s(x: symbol)\ns(x + \"a\") :- n(x).\n",
        3,
        3,
        "type mismatch: variable `x` is a number, but argument 1 of `+` on symbols needs a symbol",
    );
    check_err(
        ".decl s(x: symbol)\n.decl n(x: symbol)\nn(x - x) :- s(x).\n",
        3,
        3,
        "arithmetic on symbols",
    );
    check_err(
        ".type A <: symbol\n.type B = A | number\n",
        2,
        15,
        "mixes symbol and number",
    );
}

#[test]
fn error_ungrounded() {
    check_err(
        &format!("{EDGE}.decl p(x: number, y: number)\np(x, y) :- edge(x, _).\n"),
        3,
        6,
        "variable `y` in the head is not grounded",
    );
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(x) :- edge(x, _), !edge(x, y).\n"),
        3,
        30,
        "variable `y` in a negated atom is not grounded",
    );
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(x) :- edge(x, _), x < y.\n"),
        3,
        25,
        "variable `y` in a comparison is not grounded",
    );
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(x) :- x = y, y = x.\n"),
        3,
        3,
        "not grounded",
    );
    check_err(
        ".decl p(x: number)\np(x).\n",
        2,
        3,
        "variable `x` is not grounded",
    );
    check_err(
        &format!("{EDGE}.decl p(x: number)\np(_) :- edge(_, _).\n"),
        3,
        3,
        "`_` is not allowed in a rule head",
    );
}

#[test]
fn error_negation_through_recursion() {
    check_err(
        ".decl e(x: number)\n.decl p(x: number)\n.decl q(x: number)\np(x) :- e(x), !q(x).\nq(x) :- p(x).\n",
        4,
        15,
        "cycle: p -> q -> p",
    );
    check_err(
        ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x), !p(x).\n",
        3,
        15,
        "cycle: p -> p",
    );
}

#[test]
fn error_io_options() {
    check_err(
        ".decl e(x: number)\n.input e(IO=sqlite)\n",
        2,
        10,
        "IO=sqlite is not supported",
    );
    check_err(
        ".decl e(x: number)\n.input e(compress=true)\n",
        2,
        10,
        "option `compress` is not supported",
    );
    check_err(
        ".decl e(x: number)\n.input e(delimiter=\"ab\")\n",
        2,
        10,
        "delimiter must be one character",
    );
    // RDF inputs take their own options, checked here; others still reject them.
    let p = check(
        ".decl t(s: symbol, p: symbol, o: symbol)\n.input t(IO=rdf, filename=\"d.nt\", mapping=\"triples\", format=\"ntriples\", base=\"http://b/\", lenient=\"true\")\n",
    )
    .unwrap();
    assert_eq!(p.relations[0].inputs[0].get("mapping"), Some("triples"));
    check_err(
        ".decl t(s: symbol)\n.input t(IO=rdf, mapping=\"tables\")\n",
        2,
        18,
        "mapping must be \"triples\" or \"vocabulary\"",
    );
    check_err(
        ".decl t(s: symbol)\n.input t(IO=rdf, format=\"rdfxml\")\n",
        2,
        18,
        "format must be",
    );
    check_err(
        ".decl t(s: symbol)\n.input t(mapping=\"triples\")\n",
        2,
        10,
        "option `mapping` is not supported",
    );
}

#[test]
fn error_eqrel() {
    check_err(
        ".decl e(x: number) eqrel\n",
        1,
        20,
        "`eqrel` needs a relation of two columns (`.decl e(x: T, y: T) eqrel`), but `e` has 1",
    );
    check_err(
        ".decl e(x: number, y: number, z: number) output eqrel\n",
        1,
        49,
        "but `e` has 3",
    );
    check_err(
        ".decl e(x: number, y: symbol) eqrel\n",
        1,
        31,
        "`eqrel` relates values of one type, but the columns of `e` have different types \
         (`x: number`, `y: symbol`)",
    );
    // As in Soufflé, the declared types must be the same, not only their base types.
    check_err(
        ".type A <: number\n.decl e(x: A, y: number) eqrel\n",
        2,
        26,
        "(`x: A`, `y: number`)",
    );
}

#[test]
fn eqrel_relations_get_closure_rules() {
    let p = check(
        ".type T <: symbol\n.decl e(a: T, b: T) eqrel\n.decl s(a: T)\n\
         e(x, y) :- s(x), s(y), x != y.\ne(\"a\", \"b\").\n",
    )
    .unwrap();
    assert!(p.relations[0].eqrel && !p.relations[1].eqrel);
    let listed: Vec<(String, bool)> = p
        .rules
        .iter()
        .map(|r| (r.display(&p).to_string(), r.generated))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("e(x, y) :- s(x), s(y), x != y.".to_string(), false),
            ("e(x, x) :- e(x, _).".to_string(), true),
            ("e(y, x) :- e(x, y).".to_string(), true),
            ("e(x, z) :- e(x, y), e(y, z).".to_string(), true),
        ]
    );
    assert_eq!(p.rules[3].text, "e(x, z) :- e(x, y), e(y, z). // eqrel");
    let shown = p.to_string();
    assert!(
        shown.contains(".decl e(a: symbol, b: symbol) eqrel // stratum"),
        "{shown}"
    );
    assert!(shown.contains("e(y, x) :- e(x, y). // eqrel\n"), "{shown}");
    // An eqrel relation with no rule of its own (read from a file) is closed too.
    let p = check(".decl e(a: number, b: number) eqrel\n.input e\n").unwrap();
    assert_eq!(p.rules.len(), 3);
    assert!(p.strata.iter().any(|s| s.recursive));
}

// ----- hostile input: deep, long and many ------------------------------------

/// A rule whose head argument is a left-leaning chain `x + 1 + ... + 1` of `n` `+`,
/// built directly (not parsed), with spans pointing at `x`.
fn chain_rule(n: usize) -> ast::Rule {
    let span = Span::new(5, 6);
    let mut e = ast::Expr::Var(ast::Ident {
        name: "x".into(),
        span,
    });
    for _ in 0..n {
        e = ast::Expr::Binary {
            op: dynalog_syntax::ArithOp::Add,
            lhs: Box::new(e),
            rhs: Box::new(ast::Expr::Num(ast::Number::Int(1), span)),
            span,
        };
    }
    let atom = |name: &str, args| ast::Atom {
        relation: ast::Ident {
            name: name.into(),
            span,
        },
        args,
        span,
    };
    let x = ast::Expr::Var(ast::Ident {
        name: "x".into(),
        span,
    });
    ast::Rule {
        head: atom("p", vec![e]),
        body: vec![ast::Literal::Positive(atom("q", vec![x]))],
        style: ast::Style::Souffle,
        span,
    }
}

#[test]
fn expressions_deeper_than_the_parser_allows_are_refused() {
    let text = ".decl p(a: number)\n.decl q(a: number)\n";
    let file = SourceFile::new("t.dl", text);
    let mut ast = dynalog_syntax::parse(&file).expect("parses");
    ast.items.push(ast::Item::Rule(chain_rule(MAX_EXPR_DEPTH)));
    let p = analyse(&file, &ast).expect("the deepest allowed expression is fine");
    assert_eq!(p.rules.len(), 1);
    ast.items.pop();
    let deep = chain_rule(MAX_EXPR_DEPTH + 1);
    ast.items.push(ast::Item::Rule(deep));
    let e = analyse(&file, &ast).expect_err("too deep");
    assert!(e.message.contains("nested too deeply"), "{e}");
}

#[test]
fn rule_bodies_are_bounded() {
    let atoms = |n: usize| (0..n).map(|_| "edge(x, y)").collect::<Vec<_>>().join(", ");
    let ok = format!(
        "{EDGE}.decl p(x: number)\np(x) :- {}.",
        atoms(MAX_BODY_LITERALS)
    );
    assert_eq!(check(&ok).expect("at the bound").rules[0].body.len(), 256);
    let long = format!(
        "{EDGE}.decl p(x: number)\np(x) :- {}.",
        atoms(MAX_BODY_LITERALS + 1)
    );
    // At the first literal past the bound.
    check_err(
        &long,
        3,
        9 + 12 * MAX_BODY_LITERALS,
        "rule body too long: more than 256 literals",
    );
    // Expression arguments count: `edge(x, y + 1)` is two literals, and the error
    // points at the argument that crosses the bound.
    let args = format!(
        "{EDGE}.decl p(x: number)\np(x) :- {}, edge(x, y + 1).",
        atoms(MAX_BODY_LITERALS - 1)
    );
    check_err(
        &args,
        3,
        9 + 12 * (MAX_BODY_LITERALS - 1) + 8,
        "rule body too long",
    );
}

#[test]
fn long_chains_of_type_declarations_and_shared_unions() {
    // 10,000 subtypes in a chain: resolved without recursion.
    let mut text: String = (0..10_000)
        .map(|i| format!(".type T{i} <: T{}\n", i + 1))
        .collect();
    text.push_str(".type T10000 <: number\n.decl r(a: T0)\nr(1).\n");
    assert_eq!(check(&text).expect("checks").facts.len(), 1);
    // Each union names the next type twice: 2^60 paths, 60 types.
    let mut text: String = (0..60)
        .map(|i| format!(".type U{i} = U{} | U{}\n", i + 1, i + 1))
        .collect();
    text.push_str(".type U60 <: symbol\n.decl r(a: U0)\nr(\"a\").\n");
    assert_eq!(check(&text).expect("checks").facts.len(), 1);
    // A long cycle is reported, at the declaration met again.
    let mut text: String = (0..10_000)
        .map(|i| format!(".type T{i} <: T{}\n", (i + 1) % 10_000))
        .collect();
    text.push_str(".decl r(a: T0)\n");
    check_err(&text, 1, 7, "type `T0` is defined in terms of itself");
}

#[test]
fn long_flat_rules_check_in_linear_time() {
    // Assignments in the worst order for repeated passes: each pass would place
    // one. (Quadratic passes took seconds here; the test fails by timing out the
    // suite only, no timing assertion.)
    let n = 5_000;
    let chain: Vec<String> = (0..n)
        .rev()
        .map(|i| format!("x{} = x{i} + 1", i + 1))
        .collect();
    let text = format!(
        "{EDGE}.decl p(x: number)\np(x{n}) :- edge(x0, _), {}.",
        chain.join(", ")
    );
    // Too long for a rule body, but every step before that check is exercised
    // by the smaller version below.
    assert!(check(&text).is_err());
    let m = MAX_BODY_LITERALS - 1;
    let chain: Vec<String> = (0..m)
        .rev()
        .map(|i| format!("x{} = x{i} + 1", i + 1))
        .collect();
    let text = format!(
        "{EDGE}.decl p(x: number)\np(x{m}) :- edge(x0, _), {}.",
        chain.join(", ")
    );
    let p = check(&text).expect("checks");
    // Evaluation order: the atom, then the assignments from x1 on.
    let body = &p.rules[0].body;
    assert!(matches!(body[0], Literal::Atom(_)));
    for (i, lit) in body[1..].iter().enumerate() {
        match lit {
            Literal::Assign { var, .. } => {
                assert_eq!(p.rules[0].var_names[*var as usize], format!("x{}", i + 1))
            }
            other => panic!("{other:?}"),
        }
    }
    // Types flow along a chain of equalities written backwards.
    let chain: Vec<String> = (0..m).rev().map(|i| format!("y{} = y{i}", i + 1)).collect();
    let text = format!(
        ".decl s(a: symbol)\n.decl p(a: symbol)\np(y{m}) :- s(y0), {}.",
        chain.join(", ")
    );
    let p = check(&text).expect("checks");
    assert!(p.rules[0].var_types.iter().all(|&t| t == Type::Symbol));
    // A fact with 10,000 columns, and a relation of 10,000 columns.
    let n = 10_000;
    let cols: Vec<String> = (0..n).map(|i| format!("c{i}: number")).collect();
    let vals: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let text = format!(".decl r({})\nr({}).", cols.join(", "), vals.join(", "));
    assert_eq!(check(&text).expect("checks").facts[0].1.len(), n);
    let dup = format!(".decl r({}, c0: number)", cols.join(", "));
    check_err(
        &dup,
        1,
        8 + cols.join(", ").len() + 3,
        "attribute `c0` appears twice",
    );
}

#[test]
fn long_names_get_no_hint_and_no_quadratic_distance() {
    let a = "a".repeat(100_000);
    let b = format!("{}b", "a".repeat(99_999));
    let text = format!(".decl {a}(x: symbol)\n{b}(\"x\").\n");
    let file = SourceFile::new("t.dl", text.as_str());
    let ast = dynalog_syntax::parse(&file).expect("parses");
    let e = analyse(&file, &ast).expect_err("not declared");
    assert!(e.message.contains("is not declared"), "{}", e.message.len());
    assert!(!e.message.contains("did you mean"));
    // Short names still get one.
    check_err(
        ".decl edge(x: number)\nedeg(1).",
        2,
        1,
        "did you mean `edge`?",
    );
}

#[test]
fn integral_operators_are_refused_on_floats_and_symbols() {
    let decl = ".decl f(x: float)\n.decl g(x: float)\n.decl s(x: symbol)\n";
    check_err(
        &format!("{decl}g(y) :- f(x), y = x band 1.0."),
        4,
        19,
        "type mismatch: `band` works on numbers and unsigned, but this expression is a float",
    );
    check_err(
        &format!("{decl}g(lnot x) :- f(x)."),
        4,
        3,
        "`lnot` works on numbers and unsigned",
    );
    check_err(
        &format!("{decl}g(x) :- f(x), x bshl 1.0 > 2.0."),
        4,
        15,
        "`bshl` works on numbers and unsigned",
    );
    check_err(
        &format!("{decl}f(1.0 lor 2.0)."),
        4,
        3,
        "`lor` works on numbers and unsigned",
    );
    check_err(
        &format!("{decl}s(min(x, \"a\")) :- s(x)."),
        4,
        3,
        "arithmetic on symbols",
    );
    check_err(
        &format!("{decl}s(bnot x) :- s(x)."),
        4,
        3,
        "arithmetic on symbols",
    );
    // `^`, `min` and `max` work on floats.
    check(&format!(
        "{decl}g(x ^ 2.0) :- f(x).\ng(max(x, 0.5, -x)) :- f(x)."
    ))
    .unwrap();
}

#[test]
fn facts_fold_operators_with_the_evaluator() {
    let p = check(
        ".decl r(a: number, b: number, c: number, d: unsigned, e: number, f: float)\n\
         r(2 ^ 10, bnot 5 bshl 1, min(3, -4, 2), 1 bshl 33, -2 ^ 2, max(1.5, 2.5 ^ 1.0)).\n",
    )
    .unwrap();
    let t = &p.facts[0].1;
    assert_eq!(t[0] as i32, 1024);
    assert_eq!(t[1] as i32, -12);
    assert_eq!(t[2] as i32, -4);
    assert_eq!(t[3], 2);
    assert_eq!(t[4] as i32, -4);
    assert_eq!(f32::from_bits(t[5]), 2.5);
}

#[test]
fn operators_lower_and_print() {
    let p = check(
        ".decl a(x: number)\n.decl b(x: number)\n\
         b(y) :- a(x), y = min(x, 2) band bnot x ^ 2.\n",
    )
    .unwrap();
    let shown = p.rules[0].display(&p).to_string();
    assert!(shown.contains("min(x, 2) band (bnot (x ^ 2))"), "{shown}");
}

#[test]
fn aggregates_become_relations_and_aggregate_strata() {
    let p = check(
        ".decl b(x: number, y: number)\n.decl a(x: number)\n.decl c(x: number, n: number)\n\
         c(x, n) :- a(x), n = count : { b(x, _) }.\n",
    )
    .expect("checks");
    assert_eq!(p.aggregates.len(), 1);
    let agg = &p.aggregates[0];
    assert_eq!((agg.func, agg.group), (crate::AggFunc::Count, 1));
    assert!(p.relation(agg.head).is_internal() && p.relation(agg.source).is_internal());
    // The input counts b's tuples (its wildcard too): group x, then the wildcard.
    assert_eq!(p.relation(agg.source).arity(), 2);
    // The aggregate's stratum comes after its input's and before the rule's.
    let stratum_of = |r| p.strata.iter().position(|s| s.relations.contains(&r));
    let c = p.relation_id("c").expect("c");
    assert!(stratum_of(agg.source) < Some(agg.stratum));
    assert!(Some(agg.stratum) < stratum_of(c));
    // Two rules for c: the group with a count, and the empty group (count 0).
    assert_eq!(p.rules.iter().filter(|r| r.head.relation == c).count(), 2);
    // The same aggregate in another rule is the same relations.
    let p2 = check(
        ".decl b(x: number, y: number)\n.decl a(x: number)\n.decl c(x: number, n: number)\n\
         c(x, n) :- a(x), n = count : { b(x, _) }.\nc(n, x) :- a(x), n = count : { b(x, _) }.\n",
    )
    .expect("checks");
    assert_eq!(p2.aggregates.len(), 1);
    assert_eq!(p2.relations.len(), p.relations.len());
}

#[test]
fn error_aggregates() {
    let decls = ".decl b(x: number, y: number)\n.decl f(x: number, y: float)\n\
                 .decl s(x: number, y: symbol)\n.decl r(x: number, n: number)\n";
    check_err(
        &format!("{decls}r(x, n) :- n = count : {{ b(x, _) }}.\n"),
        5,
        28,
        "witness problem: `x`",
    );
    check_err(
        &format!("{decls}r(x, n) :- b(x, _), n = mean y : {{ b(x, y) }}.\n"),
        5,
        30,
        "`mean` aggregates floats",
    );
    check_err(
        &format!("{decls}r(x, n) :- b(x, _), n = sum y : {{ s(x, y) }}.\n"),
        5,
        29,
        "`sum` aggregates numbers",
    );
    check_err(
        &format!("{decls}r(x, n) :- b(x, _), n = count : {{ r(x, _) }}.\n"),
        5,
        25,
        "recursion through an aggregate",
    );
    check_err(
        &format!("{decls}r(x, n) :- b(x, _), n = sum y : {{ f(x, y) }}.\n"),
        5,
        25,
        "type mismatch: this aggregate's result is a float, but this expression needs a number",
    );
}

/// Soufflé's scoping of an aggregate's variables: the rule's only where the rest of
/// the rule binds them without the aggregate and the aggregated expression does not
/// use them; its own otherwise (renamed), witnesses when nothing else binds them.
#[test]
fn aggregate_variables_are_scoped_as_in_souffle() {
    let decls = ".decl a(x: number)\n.decl b(x: number)\n.decl c(x: number, y: number)\n\
                 .decl r(x: number)\n.decl r2(x: number, y: number)\n";
    // The result's name inside is the aggregate's own: no group, no witness.
    for rule in [
        "r(y) :- y = count : { a(y) }.",
        "r(y) :- y = min z + y : { a(z), a(y) }.",
        "r(y) :- y = max z : { c(y, z) }.",
        // Used by the aggregated expression: the aggregate's own, although `b` binds it.
        "r2(x, m) :- b(x), m = min x : { a(x) }.",
        // `_` as the result: only that the aggregate has a value.
        "r2(x, y) :- _ = min x + y : { c(x, y) }.",
        // An aggregate inside an expression.
        "r(y) :- a(y), 2 * y + 1 = 2 * max s : { a(s) } + 1.",
    ] {
        let p = check(&format!("{decls}{rule}\n")).unwrap_or_else(|e| panic!("{rule}: {e:?}"));
        assert_eq!(p.aggregates.len(), 1, "{rule}");
        assert_eq!(p.aggregates[0].group, 0, "{rule}: no group variable");
    }
    // Bound by the rest of the rule and not aggregated: a group variable.
    let p = check(&format!(
        "{decls}r2(x, n) :- b(x), n = count : {{ c(x, _) }}.\n"
    ))
    .expect("checks");
    assert_eq!(p.aggregates[0].group, 1);
    // The aggregate's own `x` must be bound inside it.
    check_err(
        &format!("{decls}r2(x, y) :- b(x), y = max z + x : {{ a(z) }}.\n"),
        6,
        31,
        "variable `x` of the aggregated expression is not bound by the aggregate's body (a \
         variable of the aggregated expression is the aggregate's own",
    );
}

/// A variable that only names a written record is an alias of it (no atom types it).
#[test]
fn record_aliases_are_resolved() {
    let p = check(
        ".decl a(x: number, y: number)\n.decl r(x: number)\n\
         r(z) :- a(x, y), r = [x, y], s = r, s = [v, w], w = z, z = v.\n",
    )
    .expect("checks");
    assert_eq!(p.rules.len(), 1);
    // Named by an atom, a record variable still needs that atom's record type.
    check_err(
        ".decl a(x: number, y: number)\n.decl r(x: number)\n\
         r(z) :- a(z, q), q = [z, z].\n",
        3,
        23,
        "type mismatch: this record pattern is matched with a number",
    );
}

#[test]
fn conversions_type_lower_and_print() {
    let p = check(
        ".decl a(x: number)\n.decl b(x: float)\n.decl c(x: unsigned)\n\
         b(to_float(x) + 0.5) :- a(x).\n\
         c(y) :- b(x), y = to_unsigned(x * 2.0).\n\
         a(to_number(y)) :- c(y), to_float(y) < 3.5.\n\
         a(x) :- x = to_number(2.5).\n",
    )
    .unwrap();
    let shown: Vec<String> = p.rules.iter().map(|r| r.display(&p).to_string()).collect();
    assert_eq!(shown[0], "b(to_float(x) + 0.5) :- a(x).");
    assert_eq!(shown[1], "c(y) :- b(x), y := to_unsigned(x * 2).");
    assert_eq!(shown[2], "a(to_number(y)) :- c(y), to_float(y) < 3.5.");
    // The operand is typed by what it is, not by the conversion's place.
    let Some(Literal::Assign { expr, .. }) = p.rules[3].body.first() else {
        panic!("{:?}", p.rules[3].body)
    };
    assert_eq!(
        *expr,
        Expr::Unary(
            UnaryOp::ToNumber,
            Type::Float,
            Box::new(Expr::Const(2.5f32.to_bits()))
        )
    );
}

#[test]
fn facts_fold_conversions_as_souffle_does() {
    let p = check(
        ".decl r(a: float, b: unsigned, c: number, d: number, e: float, f: unsigned)\n\
         r(to_float(3), to_unsigned(-1), to_number(2.5), to_number(3u), to_float(3u), to_unsigned(-2.7)).\n",
    )
    .unwrap();
    let t = &p.facts[0].1;
    assert_eq!(f32::from_bits(t[0]), 3.0);
    assert_eq!(t[1], u32::MAX);
    assert_eq!(t[2], 2);
    assert_eq!(t[3], 3);
    assert_eq!(f32::from_bits(t[4]), 3.0);
    assert_eq!(t[5], 4294967294);
}

#[test]
fn string_functors_are_typed() {
    let decls = ".decl a(x: number)\n.decl s(x: symbol)\n.decl f(x: float)\n";
    let p = check(&format!(
        "{decls}s(cat(x, to_string(y), substr(x, 0, y))) :- s(x), a(y), strlen(x) > y, \
         contains(\"a\", x), !match(\"b.*\", x).\n\
         s(\"x\").\ns(cat(\"a\", \"b\")).\na(strlen(\"héllo\")).\n"
    ))
    .expect("checks");
    let rule = &p.rules[0];
    assert!(rule.uses_table());
    assert_eq!(
        p.rules[0].display(&p).to_string(),
        "s(cat(x, to_string(y), substr(x, 0, y))) :- s(x), contains(\"a\", x), \
         !match(\"b.*\", x), a(y), strlen(x) > y."
    );
    // Facts with functors of constants are folded by the analysis.
    let ab = p.symbols.lookup("ab").expect("interned");
    assert!(p.facts.contains(&(1, vec![ab])));
    assert!(p.facts.contains(&(0, vec![6])));
    // `to_string` of a float, fixed by the column it reads.
    assert!(check(&format!("{decls}s(to_string(x)) :- f(x).\n")).is_ok());
}

#[test]
fn ranges_become_rules() {
    let decls = ".decl n(x: number)\n.decl r(x: number, i: number)\n.decl f(x: float)\n";
    let p = check(&format!(
        "{decls}r(x, i) :- n(x), i = range(0, x).\nf(range(0.5, 2.0, 0.5)).\n"
    ))
    .expect("checks");
    // Per range a need relation and a range relation, at the range's type.
    let internal: Vec<(&str, &[Type])> = p
        .relations
        .iter()
        .filter(|r| r.is_internal())
        .map(|r| (r.name.as_str(), &r.types[..]))
        .collect();
    assert_eq!(internal.len(), 4, "{internal:?}");
    assert!(
        internal
            .iter()
            .any(|(n, t)| n.ends_with("_need") && *t == [Type::Float; 3])
    );
    assert!(
        internal
            .iter()
            .any(|(n, t)| !n.ends_with("_need") && *t == [Type::Number; 3])
    );
    // The rule reads the range relation in place of the range.
    let rule = p
        .rules
        .iter()
        .find(|r| r.text.starts_with("r(x, i)"))
        .expect("the rule");
    assert!(
        rule.display(&p).to_string().contains("@range_"),
        "{}",
        rule.display(&p)
    );
    // A range with constant bounds needs no rule: its need is a fact.
    assert!(
        p.facts
            .iter()
            .any(|(rel, _)| p.relation(*rel).name.ends_with("_need"))
    );
}

#[test]
fn error_ranges() {
    let decls = ".decl n(x: number)\n.decl r(x: number, i: number)\n";
    check_err(
        &format!("{decls}r(x, i) :- i = range(0, x), n(i).\n"),
        3,
        25,
        "variable `x` is not grounded: the bounds of a `range` must be bound by the rest of the body",
    );
    check_err(
        &format!("{decls}r(x, i) :- n(x), i = range(0, range(1, x)).\n"),
        3,
        31,
        "a `range` cannot take its bounds from another `range`",
    );
    check_err(
        &format!("{decls}r(x, range(0.5, 2.0)) :- n(x).\n"),
        3,
        6,
        "type mismatch: this range's value is a float, but column 2 of `r` needs a number",
    );
    // In an aggregate: bounds bound outside it (the evaluation is in the golden suite's
    // `range` case), not inside it, nor in the aggregated value or a nested aggregate.
    check_err(
        &format!("{decls}r(x, n) :- n(x), n = count : {{ n(y), i = range(0, y) }}.\n"),
        3,
        51,
        "variable `y` is not bound outside the aggregate: the bounds of a `range` inside an \
         aggregate must be bound by the rest of the rule's body",
    );
    check_err(
        &format!("{decls}r(x, n) :- n(x), n = sum range(0, 3) : {{ n(x) }}.\n"),
        3,
        26,
        "`range` in the value an aggregate takes is not supported",
    );
    check_err(
        &format!(
            "{decls}r(x, n) :- n(x), n = count : {{ n(y), y = count : {{ i = range(0, 3) }} }}.\n"
        ),
        3,
        42,
        "`range` inside an aggregate inside an aggregate is not supported",
    );
    // Two ranges each taking its bound from the other: neither is bound.
    check_err(
        &format!("{decls}r(x, i) :- n(x), i = range(0, j), j = range(0, i).\n"),
        3,
        31,
        "variable `j` is not grounded: the bounds of a `range` must be bound by the rest of the body",
    );
    // A range's value grounds what reads it, but not a variable nothing binds.
    check_err(
        &format!("{decls}r(i, i) :- i = range(0, 3), x < i.\n"),
        3,
        29,
        "variable `x` in a comparison is not grounded",
    );
    check_err(
        &format!("{decls}r(i, i) :- i = range(0, 3), !n(x).\n"),
        3,
        32,
        "variable `x` in a negated atom is not grounded",
    );
    check_err(
        &format!("{decls}r(x, i) :- i = range(0, 3), y = x + i.\n"),
        3,
        3,
        "variable `x` in the head is not grounded",
    );
}

/// A variable bound by a range is grounded wherever one bound by `=` is: in
/// comparisons, functors, negations, the head, other ranges' bounds (also written
/// before it) and aggregates' bodies, at every numeric type.
#[test]
fn range_values_are_grounded() {
    let decls = ".decl n(x: number)\n.decl o(x: number)\n.decl p(x: number, y: number)\n\
                 .decl u(x: unsigned)\n.decl f(x: float)\n";
    for rule in [
        "o(x) :- x = range(0, 3), x < 2.",
        "p(x, y) :- x = range(0, 3), y = range(0, 3), x < y, x + y = 3.",
        "o(y) :- x = range(0, 3), y = x * 10, y > 5.",
        "o(x) :- x = range(0, 3), !n(x).",
        "o(x + 1) :- x = range(0, 3, 2).",
        "p(x, y) :- y = range(0, x), x = range(0, 3).",
        "p(x, y) :- x = range(0, 3), z = x + 1, y = range(z, 5), y != 4.",
        "p(x, y) :- n(x), y = range(0, 10), y < x, !n(y).",
        "p(x, c) :- x = range(0, 4), c = count : { i = range(0, x), i < 2 }.",
        "p(x, c) :- n(x), c = count : { i = range(0, x), i < 2 }.",
        "o(c) :- c = count : { i = range(0, 10), i % 3 = 0, i > 2 }.",
        "p(x, c) :- x = range(0, 3), c = count : { n(_) }.",
        "p(x, y) :- c = count : { n(_) }, x = range(0, c), y = range(x, c + 2), x < y.",
        "p(x, y) :- c = max z : { n(z) }, x = range(0, c), y = x.",
        "u(x) :- x = range(0u, 5u, 2u), x > 1u.",
        "f(x) :- x = range(0.0, 2.0, 0.5), x > 0.7.",
        "f(x) :- x = range(-1, 0, 0.25), x < -0.5.",
    ] {
        if let Err(d) = check(&format!("{decls}{rule}\n")) {
            panic!("{rule}: {d}");
        }
    }
    // The need rule asks for the bounds without what reads the range's value: here a
    // fact, as the range's bounds are constants.
    let p = check(&format!("{decls}o(x) :- x = range(0, 3), x < 2.\n")).expect("checks");
    assert!(
        p.facts
            .iter()
            .any(|(rel, _)| p.relation(*rel).name.ends_with("_need")),
        "{:?}",
        p.rules
            .iter()
            .map(|r| r.display(&p).to_string())
            .collect::<Vec<_>>()
    );
}

#[test]
fn error_string_functors() {
    let decls = ".decl a(x: number)\n.decl s(x: symbol)\n";
    check_err(
        &format!("{decls}a(cat(x, x)) :- s(x).\n"),
        3,
        3,
        "type mismatch: `cat(...)` is a symbol, but column 1 of `a` needs a number",
    );
    check_err(
        &format!("{decls}s(x) :- s(x), strlen(x) = \"3\".\n"),
        3,
        27,
        "type mismatch: this expression is a number, but \"3\" is a symbol",
    );
    check_err(
        &format!("{decls}a(strlen(y)) :- a(y).\n"),
        3,
        10,
        "type mismatch: variable `y` is a number, but argument 1 of `strlen` needs a symbol",
    );
    check_err(
        &format!("{decls}s(substr(x, x, 1)) :- s(x).\n"),
        3,
        13,
        "type mismatch: variable `x` is a symbol, but argument 2 of `substr` needs a number",
    );
    check_err(
        &format!("{decls}s(x) :- s(x), contains(x, 1).\n"),
        3,
        27,
        "type mismatch: argument 2 of `contains` is a symbol, but this is a number (quote it: \"...\")",
    );
    check_err(
        &format!("{decls}s(x) :- match(\"a\", x).\n"),
        3,
        3,
        "variable `x` in the head is not grounded",
    );
}

#[test]
fn error_conversions() {
    let decls = ".decl a(x: number)\n.decl s(x: symbol)\n.decl f(x: float)\n";
    // A symbol's text is read as a number; a constant one is read by the analysis.
    assert!(check(&format!("{decls}a(to_number(x)) :- s(x).\n")).is_ok());
    let p = check(&format!("{decls}a(to_number(\" 7x\")).\n")).expect("checks");
    assert_eq!(p.facts[0].1, vec![7]);
    check_err(
        &format!("{decls}a(to_number(\"seven\")).\n"),
        4,
        3,
        "`to_number(\"seven\")` has no value (its text is not a number of the type)",
    );
    check_err(
        &format!("{decls}a(to_float(x)) :- a(x).\n"),
        4,
        3,
        "type mismatch: `to_float(...)` is a float, but column 1 of `a` needs a number",
    );
    check_err(
        &format!("{decls}s(x) :- a(y), x = to_number(y).\n"),
        4,
        19,
        "type mismatch: `to_number(...)` is a number, but this expression needs a symbol",
    );
    check_err(
        &format!("{decls}a(to_float(1)).\n"),
        4,
        3,
        "type mismatch: column 1 of `a` is a number, but `to_float(...)` is a float",
    );
    check_err(
        &format!("{decls}a(x) :- f(y), x = to_number(bnot y).\n"),
        4,
        29,
        "`bnot` works on numbers and unsigned, but this expression is a float",
    );
}

const RECORDS: &str = ".type P = [a: number, b: symbol]\n.type T = L {x: number} | N {l: T, r: T} | E {}\n.decl p(x: P)\n.decl t(x: T)\n.decl n(x: number)\n";

#[test]
fn records_are_taken_apart_where_bound_and_built_where_not() {
    let p = check(&format!(
        "{RECORDS}n(a) :- p([a, _]).\nt($N(x, $E)) :- t(x).\nn(a) :- t(v), v = $N($L(a), _).\np(r) :- n(a), r = [a, \"s\"].\np([a, b]) :- p(x), x = [a, b], x != [1, \"z\"]."
    ))
    .unwrap();
    let shown: Vec<String> = p.rules.iter().map(|r| r.display(&p).to_string()).collect();
    assert_eq!(
        shown,
        [
            "n(a) :- p(_arg0), a := _arg0.0.",
            "t($N(x, $E())) :- t(x).",
            "n(a) :- t(v), @f0 := v.N.0, a := @f0.L.0.",
            "p(r) :- n(a), r := [a, \"s\"].",
            "p([a, b]) :- p(x), x != [1, \"z\"], a := x.0, b := x.1.",
        ]
    );
}

#[test]
fn record_errors_are_located() {
    let r = RECORDS.lines().count() + 1;
    check_err(
        &format!("{RECORDS}p([1]).\n"),
        r,
        3,
        "`P` has 2 field(s), but 1 are written here",
    );
    check_err(
        &format!("{RECORDS}n([1, \"a\"]).\n"),
        r,
        3,
        "this is a record, but this expression needs a number",
    );
    check_err(
        &format!("{RECORDS}t($Q(1)).\n"),
        r,
        4,
        "unknown constructor `$Q`",
    );
    check_err(
        &format!("{RECORDS}p($L(1)).\n"),
        r,
        3,
        "this is `$L`, but this expression needs a P",
    );
    check_err(
        &format!("{RECORDS}t(nil).\n"),
        r,
        3,
        "`nil` is a record, but this expression needs a T",
    );
    check_err(
        &format!("{RECORDS}t([1]).\n"),
        r,
        3,
        "`T` is an algebraic data type (write `$Constructor(...)`)",
    );
    check_err(
        &format!("{RECORDS}n(1) :- p(x), p(y), x < y.\n"),
        r,
        21,
        "records can only be compared with = and !=",
    );
    check_err(
        &format!("{RECORDS}p(x + 1) :- p(x).\n"),
        r,
        3,
        "arithmetic on records",
    );
    check_err(
        &format!("{RECORDS}n(a) :- n(a), a = [b, c].\n"),
        r,
        20,
        "this record pattern is matched with a number",
    );
    check_err(
        &format!("{RECORDS}n(a) :- p([a, b, c]).\n"),
        r,
        18,
        "`P` has 2 field(s), but this pattern has more",
    );
    check_err(
        &format!("{RECORDS}n(a) :- t($L(a, b)).\n"),
        r,
        17,
        "`$L` has 1 field(s), but this pattern has more",
    );
    check_err(
        &format!("{RECORDS}p([a, b]) :- n(a).\n"),
        r,
        7,
        "variable `b` in the head is not grounded",
    );
    check_err(
        &format!("{RECORDS}n(s) :- s = sum x : {{ p(x) }}.\n"),
        r,
        17,
        "`sum` aggregates numbers, and this is a record",
    );
    check_err(
        ".type T = A {} | B {}\n.type U = A {}\n",
        2,
        11,
        "constructor `A` is declared twice",
    );
    check_err(".type R = [a: Nope]\n", 1, 15, "unknown type `Nope`");
    check_err(
        &format!("{RECORDS}n(1) :- n(a), [a] != [2].\n"),
        r,
        15,
        "the type of this record is not known here",
    );
}

#[test]
fn autoinc_is_keyed_by_the_binding_and_only_in_heads() {
    let p = check(&format!(
        "{EDGE}.decl n(i: number, x: number)\nn(autoinc(), x) :- edge(x, _)."
    ))
    .unwrap();
    assert_eq!(
        p.rules[0].display(&p).to_string(),
        "n(autoinc(), x) :- edge(x, @i0)."
    );
    let ir::Expr::Call(Functor::Autoinc, _, key) = &p.rules[0].head.args[0] else {
        panic!("{:?}", p.rules[0].head.args)
    };
    // The rule's hash (two words), the occurrence, then every slot.
    assert_eq!(key.len(), 3 + p.rules[0].var_names.len());
    assert_eq!(key[3..], [Expr::Var(0), Expr::Var(1)]);
    let rules = format!("{EDGE}.decl n(i: number)\n");
    check_err(
        &format!("{rules}n(x) :- edge(x, _), x = autoinc()."),
        3,
        25,
        "`autoinc()` is only allowed in a rule's head",
    );
    check_err(
        &format!("{rules}n(x) :- edge(x, autoinc())."),
        3,
        17,
        "`autoinc()` is only allowed in a rule's head",
    );
    check_err(
        &format!("{rules}n(c) :- c = count : {{ edge(autoinc(), _) }}."),
        3,
        28,
        "`autoinc()` is only allowed in a rule's head",
    );
    check_err(
        &format!("{rules}n(autoinc())."),
        3,
        3,
        "`autoinc()` is not a constant: a fact cannot use it",
    );
    check_err(
        ".decl s(x: symbol)\ns(autoinc()) :- s(_).",
        2,
        3,
        "`autoinc(...)` is a number, but column 1 of `s` needs a symbol",
    );
}

#[test]
fn choice_domain_keeps_the_smallest_candidate_and_refuses_what_it_cannot_keep() {
    let p = check(".decl e(x: number, y: number)\n.decl c(x: number, y: number) choice-domain x\nc(x, y) :- e(x, y).")
        .unwrap();
    // The written rule derives candidates; the analysis's rules choose among them.
    let written: Vec<&Rule> = p.rules.iter().filter(|r| !r.generated).collect();
    assert_eq!(written.len(), 1);
    assert_eq!(
        written[0].display(&p).to_string(),
        "@c_choice_in(x, y) :- e(x, y)."
    );
    assert!(
        p.rules
            .iter()
            .filter(|r| r.generated)
            .all(|r| r.text == "choice-domain x")
    );
    check_err(
        ".decl c(x: number, y: number) choice-domain z",
        1,
        45,
        "`z` is not an attribute of `c`",
    );
    check_err(
        ".decl c(x: number, y: number) choice-domain (x, x)",
        1,
        49,
        "`x` is named twice in the choice domain",
    );
    check_err(
        ".decl c(x: number, y: number) choice-domain x, y",
        1,
        31,
        "several choice domains on one relation are not supported",
    );
    check_err(
        ".type P = [a: number]\n.decl c(x: number, y: P) choice-domain x",
        2,
        26,
        "records have no order",
    );
}

#[test]
fn a_recursive_choice_is_made_round_by_round_in_a_stratum_of_its_own() {
    let decls =
        ".decl e(x: number, y: number)\n.decl c(x: symbol, y: number, z: number) choice-domain y\n";
    let p = check(&format!(
        "{decls}c(\"a\", 1, 0).\nc(\"b\", y, 0) :- e(_, y).\nc(x, y, z) :- c(x, w, z), e(w, y)."
    ))
    .unwrap();
    let shown: Vec<String> = p.rules.iter().map(|r| r.display(&p).to_string()).collect();
    assert_eq!(
        shown,
        [
            "@c_choice_in(\"b\", y, 0) :- e(_, y), !c(_, y, _).",
            "@c_choice_in(x, y, z) :- c(x, w, z), e(w, y), !c(_, y, _).",
            "@c_choice_at(@c0, @c1, @c2) :- @c_choice_in(@c0, @c1, @c2).",
            "@c_choice_dom(@c0, @c1, @c2) :- @c_choice_in(@c0, @c1, @c2), !c(_, @c1, _), @c_choice_in(@w, @c1, _), ord(@w) < ord(@c0).",
            "@c_choice_dom(@c0, @c1, @c2) :- @c_choice_in(@c0, @c1, @c2), !c(_, @c1, _), @c_choice_in(@c0, @c1, @w), @w < @c2.",
            "c(@c0, @c1, @c2) :- c(@c0, @c1, @c2).",
            "c(@c0, @c1, @c2) :- @c_choice_at(@c0, @c1, @c2), !@c_choice_dom(@c0, @c1, @c2), !c(_, @c1, _).",
        ]
    );
    let id = |n: &str| p.relation_id(n).unwrap();
    // The fact written for `c` is a candidate too.
    assert_eq!(p.facts.len(), 1);
    assert_eq!(p.facts[0].0, id("@c_choice_in"));
    let chosen = p.strata.iter().find_map(|s| s.choice).unwrap();
    assert_eq!(
        (chosen.relation, chosen.dominated),
        (id("c"), id("@c_choice_dom"))
    );
    let stratum = p.strata.iter().find(|s| s.choice.is_some()).unwrap();
    let mut rels = stratum.relations.clone();
    rels.sort_unstable();
    let mut want = vec![
        id("c"),
        id("@c_choice_in"),
        id("@c_choice_at"),
        id("@c_choice_dom"),
    ];
    want.sort_unstable();
    assert_eq!(rels, want);
    assert!(p.strata.iter().all(|s| s.subsumption.is_none()));
    // Not together with another relation of the user's; a negation of the relation in
    // a rule written for it stays a negation through recursion.
    check_err(
        &format!(
            "{decls}.decl a(y: number)\na(y) :- c(_, y, _).\nc(\"a\", y, 0) :- a(x), e(x, y)."
        ),
        5,
        1,
        "`c` has a choice domain and depends on itself through `a`: a choice-domain relation \
         may be recursive on its own, not together with other relations",
    );
    check_err(
        &format!("{decls}c(\"a\", y, 0) :- c(_, x, _), e(x, y), !c(_, y, _)."),
        3,
        38,
        "negation through recursion: `c` depends negatively on `c`, which depends on it \
         again (cycle: c -> c)",
    );
}

#[test]
fn subsumption_removes_dominated_candidates_also_in_a_recursion() {
    let p = check(".decl c(x: number, d: number)\n.decl b(x: number, d: number)\nb(x, d) :- c(x, d).\nb(x, d1) <= b(x, d2) :- d2 < d1.")
        .unwrap();
    let shown: Vec<String> = p.rules.iter().map(|r| r.display(&p).to_string()).collect();
    assert_eq!(
        shown,
        [
            "@b_sub_in(x, d) :- c(x, d).",
            "b(@c0, @c1) :- @b_sub_in(@c0, @c1), !@b_sub_dom(@c0, @c1).",
            "@b_sub_dom(x, d1) :- @b_sub_in(x, d1), @b_sub_in(x, d2), d2 < d1, d1 != d2.",
        ]
    );
    let generated: Vec<bool> = p.rules.iter().map(|r| r.generated).collect();
    assert_eq!(generated, [false, true, true]);
    let decls = ".decl e(x: number, y: number)\n.decl b(x: number, d: number)\n";
    // A recursive relation with subsumption: candidates that accumulate, read one
    // round late by the relation; one stratum, which knows its dominated relation.
    let p = check(&format!(
        "{decls}b(x, 0) :- e(x, _).\nb(y, d + 1) :- b(x, d), e(x, y).\nb(x, d1) <= b(x, d2) :- d2 < d1."
    ))
    .unwrap();
    let shown: Vec<String> = p.rules.iter().map(|r| r.display(&p).to_string()).collect();
    assert_eq!(
        shown,
        [
            "@b_sub_in(x, 0) :- e(x, _).",
            "@b_sub_in(y, d + 1) :- b(x, d), e(x, y).",
            "@b_sub_in(@c0, @c1) :- @b_sub_in(@c0, @c1).",
            "@b_sub_at(@c0, @c1) :- @b_sub_in(@c0, @c1).",
            "b(@c0, @c1) :- @b_sub_at(@c0, @c1), !@b_sub_dom(@c0, @c1).",
            "@b_sub_dom(x, d1) :- @b_sub_in(x, d1), @b_sub_in(x, d2), d2 < d1, d1 != d2.",
        ]
    );
    let id = |n: &str| p.relation_id(n).unwrap();
    let sub = p.strata.iter().find_map(|s| s.subsumption).unwrap();
    assert_eq!((sub.relation, sub.dominated), (id("b"), id("@b_sub_dom")));
    let stratum = p.strata.iter().find(|s| s.subsumption.is_some()).unwrap();
    let mut rels = stratum.relations.clone();
    rels.sort_unstable();
    let mut want = vec![id("b"), id("@b_sub_in"), id("@b_sub_at"), id("@b_sub_dom")];
    want.sort_unstable();
    assert_eq!(rels, want);
    // Not together with another relation of the user's.
    check_err(
        &format!(
            "{decls}.decl a(x: number, d: number)\nb(x, 0) :- e(x, _).\na(x, d) :- b(x, d).\n\
             b(y, d + 1) :- a(x, d), e(x, y).\nb(x, d1) <= b(x, d2) :- d2 < d1."
        ),
        7,
        1,
        "`b` has subsumption and depends on itself through `a`: a relation with subsumption \
         may be recursive on its own, not together with other relations (which tuples of \
         those survive would depend on the order of evaluation)",
    );
    check_err(
        &format!("{decls}b(x, d) <= e(x, d) :- d > 0."),
        3,
        12,
        "a subsumption rule compares two tuples of one relation: `e` is not `b`",
    );
    check_err(
        &format!("{decls}b(x) <= b(x, d) :- d > 0."),
        3,
        1,
        "relation `b` has 2 columns but is used here with 1 argument",
    );
}
