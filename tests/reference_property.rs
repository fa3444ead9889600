//! Property test: on random programs (recursive, with negation in higher strata,
//! constants, repeated variables, comparisons, arithmetic and aggregates) over random facts, the
//! semi-naive reference engine agrees with a deliberately naive fixpoint evaluator
//! written here, relation by relation.

use dynalog_analysis::{AggFunc, Aggregate, Literal, Program, RelId, Term, Value};
use dynalog_engines::Engine;
use dynalog_syntax::SourceFile;
use proptest::prelude::*;
use std::collections::BTreeSet;

type Db = Vec<BTreeSet<Vec<Value>>>;

/// Naive evaluation: stratum by stratum, apply every rule to everything until nothing
/// new appears. Substitutions are enumerated by plain nested loops.
fn naive(program: &Program, base: &Db) -> Db {
    let mut db = base.clone();
    for (rel, t) in &program.facts {
        db[*rel as usize].insert(t.clone());
    }
    for stratum in &program.strata {
        for &a in &stratum.aggregates {
            let agg = &program.aggregates[a];
            let rows = naive_aggregate(agg, &db[agg.source as usize]);
            db[agg.head as usize].extend(rows);
        }
        loop {
            let mut new = Vec::new();
            for &ri in &stratum.rules {
                let rule = &program.rules[ri];
                let mut slots = vec![None; rule.var_names.len()];
                solve(&db, &program.symbols, &rule.body, &mut slots, &mut |s| {
                    let vals: Option<Vec<Value>> = rule
                        .head
                        .args
                        .iter()
                        .map(|e| {
                            let full: Vec<Value> = s.iter().map(|v| v.unwrap_or(0)).collect();
                            e.eval(&full, &program.symbols)
                        })
                        .collect();
                    if let Some(v) = vals {
                        new.push((rule.head.relation, v));
                    }
                });
            }
            let mut changed = false;
            for (rel, t) in new {
                changed |= db[rel as usize].insert(t);
            }
            if !changed {
                break;
            }
        }
    }
    db
}

/// An aggregate of numbers over its input relation, folded here by plain loops (not
/// by the IR's `fold`): group by the first columns; count the rows, or add (wrapping,
/// 32 bits), or take the least or greatest (signed) of their last column.
fn naive_aggregate(agg: &Aggregate, rows: &BTreeSet<Vec<Value>>) -> Vec<Vec<Value>> {
    assert_eq!(
        agg.ty,
        dynalog_analysis::Type::Number,
        "the generator aggregates numbers"
    );
    let mut groups: std::collections::BTreeMap<Vec<Value>, Vec<i32>> = Default::default();
    for row in rows {
        let value = *row.last().expect("a column") as i32;
        groups
            .entry(row[..agg.group].to_vec())
            .or_default()
            .push(value);
    }
    groups
        .into_iter()
        .map(|(mut group, values)| {
            let result = match agg.func {
                AggFunc::Count => values.len() as i32,
                AggFunc::Sum => values.iter().fold(0i32, |a, &v| a.wrapping_add(v)),
                AggFunc::Min => *values.iter().min().expect("a row"),
                AggFunc::Max => *values.iter().max().expect("a row"),
                AggFunc::Mean => unreachable!("not generated"),
            };
            group.push(result as Value);
            group
        })
        .collect()
}

fn solve(
    db: &Db,
    symbols: &dynalog_analysis::SymbolTable,
    body: &[Literal],
    slots: &mut Vec<Option<Value>>,
    emit: &mut dyn FnMut(&[Option<Value>]),
) {
    let Some((first, rest)) = body.split_first() else {
        emit(slots);
        return;
    };
    let full =
        |slots: &[Option<Value>]| -> Vec<Value> { slots.iter().map(|v| v.unwrap_or(0)).collect() };
    match first {
        Literal::Atom(a) => {
            for fact in &db[a.relation as usize] {
                let saved = slots.clone();
                let mut ok = true;
                for (t, &v) in a.args.iter().zip(fact) {
                    match t {
                        Term::Const(c) => ok &= *c == v,
                        Term::Wildcard => {}
                        Term::Var(x) => match slots[*x as usize] {
                            Some(b) => ok &= b == v,
                            None => slots[*x as usize] = Some(v),
                        },
                    }
                }
                if ok {
                    solve(db, symbols, rest, slots, emit);
                }
                *slots = saved;
            }
        }
        Literal::Not(a) => {
            let matches = db[a.relation as usize].iter().any(|fact| {
                a.args.iter().zip(fact).all(|(t, &v)| match t {
                    Term::Const(c) => *c == v,
                    Term::Wildcard => true,
                    Term::Var(x) => slots[*x as usize] == Some(v),
                })
            });
            if !matches {
                solve(db, symbols, rest, slots, emit);
            }
        }
        Literal::Filter { op, ty, lhs, rhs } => {
            let f = full(slots);
            if let (Some(l), Some(r)) = (lhs.eval(&f, symbols), rhs.eval(&f, symbols))
                && dynalog_analysis::ir::eval_cmp(*op, *ty, l, r)
            {
                solve(db, symbols, rest, slots, emit);
            }
        }
        Literal::Assign { var, expr } => {
            if let Some(v) = expr.eval(&full(slots), symbols) {
                let saved = slots[*var as usize];
                slots[*var as usize] = Some(v);
                solve(db, symbols, rest, slots, emit);
                slots[*var as usize] = saved;
            }
        }
    }
}

/// A random program text. Level 0: inputs `e(x,y)`, `f(x,y)`, `u(x)`. Level 1:
/// `p`, `q` (binary, mutually recursive). Level 2: `r` (binary, recursive, may negate
/// level 0-1). Level 3: `s` (non-recursive, arithmetic and comparisons in the head).
fn program_text() -> impl Strategy<Value = String> {
    let var = prop_oneof![Just("x"), Just("y"), Just("z")];
    let arg = prop_oneof![
        6 => var.clone().prop_map(str::to_string),
        1 => (0u32..4).prop_map(|c| c.to_string()),
        1 => Just("_".to_string()),
    ];
    let atom = |rels: Vec<&'static str>| (proptest::sample::select(rels), arg.clone(), arg.clone());
    let body = |rels: Vec<&'static str>, neg: Vec<&'static str>| {
        (
            proptest::collection::vec(atom(rels), 1..4),
            proptest::option::of((proptest::sample::select(neg), var.clone(), var.clone())),
            proptest::option::of((
                var.clone(),
                prop_oneof![Just("<"), Just("!="), Just("<="), Just("=")],
                0u32..4,
            )),
        )
    };
    let render = |r: &str, a: &str, b: &str| {
        if r == "u" {
            format!("u({a})")
        } else {
            format!("{r}({a}, {b})")
        }
    };
    // Most random choices would be unsafe; repair them so that most programs are valid:
    // head and negated variables not bound by a positive atom become bound ones (or `_`
    // and constants), so the test exercises evaluation rather than the safety check.
    let head_var = var.clone();
    let rule = move |head: &'static str, rels: Vec<&'static str>, neg: Vec<&'static str>| {
        (head_var.clone(), head_var.clone(), body(rels, neg)).prop_map(
            move |(h1, h2, (atoms, neg, cmp))| {
                let mut bound: Vec<String> = Vec::new();
                for (r, a, b) in &atoms {
                    let args: &[&String] = if *r == "u" { &[a] } else { &[a, b] };
                    for v in args {
                        if v.starts_with(|c: char| c.is_ascii_lowercase()) && !bound.contains(v) {
                            bound.push((*v).clone());
                        }
                    }
                }
                let pick = |v: &str, fallback: &str| -> String {
                    if bound.iter().any(|b| b == v) {
                        v.to_string()
                    } else {
                        bound
                            .first()
                            .cloned()
                            .unwrap_or_else(|| fallback.to_string())
                    }
                };
                let mut lits: Vec<String> = atoms.iter().map(|(r, a, b)| render(r, a, b)).collect();
                if let Some((n, a, b)) = neg {
                    lits.push(format!("!{}", render(n, &pick(a, "_"), &pick(b, "_"))));
                }
                if let Some((v, op, c)) = cmp {
                    let v = if op == "=" {
                        v.to_string()
                    } else {
                        pick(v, "0")
                    };
                    lits.push(format!("{v} {op} {c}"));
                }
                format!(
                    "{head}({}, {}) :- {}.",
                    pick(h1, "1"),
                    pick(h2, "2"),
                    lits.join(", ")
                )
            },
        )
    };
    (
        proptest::collection::vec(rule("p", vec!["e", "f", "u", "p", "q"], vec!["e", "u"]), 1..3),
        proptest::collection::vec(rule("q", vec!["e", "p", "q"], vec!["f"]), 0..3),
        proptest::collection::vec(rule("r", vec!["e", "p", "r"], vec!["p", "q", "f"]), 0..3),
        proptest::collection::vec(rule("s", vec!["r", "p", "e"], vec!["q", "r"]), 0..2),
        proptest::bool::ANY,
        proptest::collection::vec(
            (
                0usize..5,
                proptest::sample::select(vec!["e", "p", "q", "r"]),
                proptest::sample::select(vec!["e", "p", "r"]),
                0u32..4,
            ),
            0..3,
        ),
    )
        .prop_map(|(p, q, r, s, arith, aggs)| {
            let mut text = String::from(
                ".decl e(a: number, b: number)\n.decl f(a: number, b: number)\n.decl u(a: number)\n\
                 .decl p(a: number, b: number)\n.decl q(a: number, b: number)\n\
                 .decl r(a: number, b: number)\n.decl s(a: number, b: number)\n.decl t(a: number, b: number)\n\
                 e(0, 0).\n",
            );
            for rule in p.iter().chain(&q).chain(&r).chain(&s) {
                text.push_str(rule);
                text.push('\n');
            }
            if arith {
                text.push_str("t(x + y, x * 2 - 1) :- p(x, y), x != 3.\nt(n, m) :- s(n, k), m = k % 3, !q(n, _).\n");
            }
            // Aggregates (of `t`, which nothing below reads): groups, the empty
            // group, witnesses, a comparison in the body, a variable only the rest of
            // the rule binds.
            for (kind, inner, outer, c) in aggs {
                text.push_str(&match kind {
                    0 => format!("t(x, n) :- {outer}(x, _), n = count : {{ {inner}(x, _) }}.\n"),
                    1 => format!("t(x, n) :- {outer}(x, _), n = sum y : {{ {inner}(x, y), y < {c} }}.\n"),
                    2 => format!("t(y, n) :- n = min x : {{ {inner}(x, y) }}.\n"),
                    3 => format!("t(x, n) :- {outer}(_, x), n = max y : {inner}(x, y).\n"),
                    _ => format!("t(x, n) :- {outer}(x, _), n = count : {{ {inner}(y, _), y < x }}.\n"),
                });
            }
            text
        })
}

fn facts() -> impl Strategy<Value = Vec<(u8, u32, u32)>> {
    proptest::collection::vec((0u8..3, 0u32..5, 0u32..5), 0..25)
}

/// Parse and check; programs whose random rules are unsafe are discarded (`None`).
fn compile(text: &str) -> Option<Program> {
    let file = SourceFile::new("random.dl", text.to_string());
    let ast = dynalog_syntax::parse(&file).expect("generated programs parse");
    dynalog_analysis::analyse(&file, &ast).ok()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn seminaive_agrees_with_naive(text in program_text(), facts in facts()) {
        let Some(program) = compile(&text) else { return Ok(()) };
        let mut base: Db = vec![BTreeSet::new(); program.relations.len()];
        let names = ["e", "f", "u"];
        let mut engine = dynalog_engines::Seminaive::new(program.clone());
        for (r, a, b) in &facts {
            let rel: RelId = program.relation_id(names[*r as usize]).expect("declared");
            let t: Vec<Value> = if *r == 2 { vec![*a] } else { vec![*a, *b] };
            base[rel as usize].insert(t.clone());
            engine.insert(rel, &t);
        }
        engine.commit().expect("evaluates");
        let expected = naive(&program, &base);
        for (i, rel) in program.relations.iter().enumerate() {
            let got: BTreeSet<Vec<Value>> = engine.facts(i as RelId).into_iter().collect();
            prop_assert_eq!(&got, &expected[i], "relation {} of\n{}", rel.name, text);
        }
    }
}

#[test]
fn generator_yields_mostly_valid_programs() {
    // Guard against a generator that silently discards everything.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strat = program_text();
    let programs: Vec<Program> = (0..200)
        .filter_map(|_| compile(&strat.new_tree(&mut runner).expect("tree").current()))
        .collect();
    let valid = programs.len();
    assert!(
        valid > 60,
        "only {valid} of 200 generated programs are valid"
    );
    let with_aggregates = programs.iter().filter(|p| !p.aggregates.is_empty()).count();
    assert!(
        with_aggregates > valid / 3,
        "only {with_aggregates} of {valid} valid programs have aggregates"
    );
}
