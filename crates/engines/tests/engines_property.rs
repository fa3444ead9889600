//! Property test of every engine: random programs (recursive, negation in higher
//! strata, constants, repeated variables, comparisons, arithmetic and conversions,
//! string functors that make and read symbols, `autoinc()`, `choice-domain` and
//! subsumption (each also in a recursive relation), records and algebraic data types
//! built and taken apart, aggregates with groups, witnesses and the empty group, an
//! `eqrel` relation) and random sequences of commits that insert and delete facts and add and remove rules, run through
//! `dynalog_engines::create` and the `Engine` trait. After every commit the engine's
//! materialization equals the reference's from-scratch result, and its reported changes
//! equal the difference of consecutive reference results.
//!
//! Some cases set a random limit of changes per commit ([`Limits::max_changes`]): a
//! commit whose net change (by the reference) is over it must be refused, and one under
//! it accepted (the differential engine may refuse one under it: see `Limits`); a
//! refused commit leaves the materialization, the program and the base facts as they
//! were, and the following commits go on from there.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{Program, RelId, Value};
use dynalog_engines::Limits;
use proptest::prelude::*;

const DECLS: &str = ".decl e(a: number, b: number)\n.decl f(a: number, b: number)\n\
.decl u(a: number)\n.decl p(a: number, b: number)\n.decl q(a: number, b: number)\n\
.decl r(a: number, b: number)\n.decl s(a: number, b: number)\n.decl t(a: number, b: number)\n\
.decl k(a: number, b: number) eqrel\n.decl w(a: symbol, b: number)\n\
.type L = [h: number, t: L]\n.type T = A {x: number} | B {l: T, r: T} | C {}\n\
.decl rl(x: L)\n.decl tr(x: T, n: number)\n\
.decl ch(a: number, b: number) choice-domain a\n.decl sb(a: number, b: number)\n.decl sp(a: number, b: number)\n\
.decl ct(a: number, b: number) choice-domain b\n\
e(0, 0).\n";

/// A pool of rule texts: level 1 `p`, `q` (mutually recursive), level 2 `r` (may negate
/// lower relations), level 3 `s`, and `t` with arithmetic in the head; `k`, an `eqrel`
/// relation fed by `q`, read with conversions.
fn rule_pool() -> impl Strategy<Value = Vec<String>> {
    let var = prop_oneof![Just("x"), Just("y"), Just("z")];
    let arg = prop_oneof![
        6 => var.clone().prop_map(str::to_string),
        1 => (0u32..4).prop_map(|c| c.to_string()),
        1 => Just("_".to_string()),
    ];
    let atom = move |rels: Vec<&'static str>| {
        (proptest::sample::select(rels), arg.clone(), arg.clone()).prop_map(|(r, a, b)| {
            if r == "u" {
                format!("u({a})")
            } else {
                format!("{r}({a}, {b})")
            }
        })
    };
    let rule = move |head: &'static str, rels: Vec<&'static str>, neg: Vec<&'static str>| {
        (
            var.clone(),
            var.clone(),
            proptest::collection::vec(atom(rels), 1..4),
            proptest::option::of((proptest::sample::select(neg), var.clone(), var.clone())),
            proptest::option::of((
                var.clone(),
                prop_oneof![Just("<"), Just("!="), Just("<="), Just("=")],
                0u32..4,
            )),
        )
            .prop_map(move |(h1, h2, atoms, neg, cmp)| {
                let mut lits = atoms;
                if let Some((n, a, b)) = neg {
                    lits.push(if n == "u" {
                        format!("!u({a})")
                    } else {
                        format!("!{n}({a}, {b})")
                    });
                }
                if let Some((v, op, c)) = cmp {
                    lits.push(format!("{v} {op} {c}"));
                }
                format!("{head}({h1}, {h2}) :- {}.", lits.join(", "))
            })
    };
    (
        proptest::collection::vec(
            rule("p", vec!["e", "f", "u", "p", "q"], vec!["e", "u"]),
            1..3,
        ),
        proptest::collection::vec(rule("q", vec!["e", "p", "q"], vec!["f"]), 0..3),
        proptest::collection::vec(rule("r", vec!["e", "p", "r"], vec!["p", "q", "f"]), 0..3),
        proptest::collection::vec(rule("s", vec!["r", "p", "e"], vec!["q", "r"]), 0..2),
        (proptest::bool::ANY, proptest::bool::ANY),
        (
            proptest::bool::ANY,
            proptest::bool::ANY,
            proptest::bool::ANY,
        ),
    )
        .prop_map(|(p, q, r, s, (arith, strings), (agg0, agg1, records))| {
            let aggs = (agg0, agg1);
            let mut pool: Vec<String> = p.into_iter().chain(q).chain(r).chain(s).collect();
            if aggs.0 {
                pool.push("s(x, n) :- u(x), n = count : { p(x, _) }.".into());
                pool.push("s(x, n) :- p(x, _), n = max y : { r(x, y) }.".into());
                // A range in an aggregate's body, bounded outside it.
                pool.push("t(x, n) :- u(x), n = count : { i = range(0, x), !p(i, _) }.".into());
                // A recursive choice (a spanning tree, round by round), also through a
                // derived relation, read by a negation above.
                pool.push("ct(x, x) :- u(x).".into());
                pool.push("ct(x, y) :- ct(_, x), e(x, y).".into());
                pool.push("ct(x, y) :- ct(_, x), p(x, y), y < 4.".into());
                pool.push("r(x, y) :- ct(x, y), !p(y, x).".into());
            }
            if aggs.1 {
                pool.push("t(x, n) :- e(x, _), n = sum y : { f(x, y), !q(y, _) }.".into());
                pool.push("t(y, n) :- n = min x : { p(x, y) }.".into());
                pool.push("t(n, n) :- n = count : { r(_, y), y < 3 }.".into());
                // A choice: the smallest candidate per key, replaced when it goes.
                pool.push("ch(x, y) :- p(x, y).".into());
                pool.push("ch(x, y) :- e(y, x), !f(x, y).".into());
                pool.push("s(x, y) :- ch(x, y), !q(x, y).".into());
                // Subsumption: dominated candidates removed, and back when their
                // dominator goes.
                pool.push("sb(x, y) :- p(x, y).".into());
                pool.push("sb(x, y) :- f(y, x).".into());
                pool.push("sb(x, y1) <= sb(x, y2) :- y1 < y2.".into());
                pool.push("sb(x1, y) <= sb(x2, y) :- x1 = x2 + 1.".into());
                pool.push("t(x, y) :- sb(x, y).".into());
                // Shortest paths: a recursive relation with subsumption (bounded, so
                // finite without its subsumption rule too), read by a negation above.
                pool.push("sp(x, 0) :- u(x).".into());
                pool.push("sp(y, d + 1) :- sp(x, d), e(x, y), d < 6.".into());
                pool.push("sp(x + 1, d + w) :- sp(x, d), f(x, w), d < 6.".into());
                pool.push("sp(x, d1) <= sp(x, d2) :- d2 <= d1.".into());
                pool.push("s(x, d) :- sp(x, d), !q(x, d).".into());
            }
            if arith {
                pool.push("t(x + y, x * 2 - 1) :- p(x, y), x != 3.".into());
                pool.push("t(n, m) :- s(n, k), m = k % 3, !q(n, _).".into());
                pool.push("t(x, y) :- e(x, y), y = 6 / (x - 2).".into());
                pool.push("k(x, y) :- q(x, y), x != 2.".into());
                pool.push("t(x, y) :- k(x, z), y = to_number(to_float(z) * 1.5) + x.".into());
            }
            if strings {
                // Symbols made from numbers, read back, and made recursively (bounded
                // by their length), retracted with the facts they come from.
                pool.push("w(to_string(x), y) :- p(x, y).".into());
                pool.push("w(substr(cat(s, \"x\", s), 1, 3), y) :- w(s, y), strlen(s) < 3.".into());
                pool.push("t(strlen(s), y) :- w(s, y), contains(\"1\", s).".into());
                pool.push(
                    "t(y, to_number(cat(s, \"0\"))) :- w(s, y), !match(\"[0-3]\", s).".into(),
                );
                pool.push("s(ord(s) * 0, y) :- w(s, y), s != \"2\".".into());
                // `+` on symbols: `cat`.
                pool.push("w(s + \"+\", y) :- w(s, y), strlen(s) < 2.".into());
                // Numbers for bindings, stable while they hold (the table is shared
                // with the reference, so both number a binding alike).
                pool.push("t(autoinc(), x) :- p(x, _), x < 2.".into());
                // Ranges with bounds from facts, one of them counting down.
                pool.push("t(x, i) :- p(x, y), i = range(x, y).".into());
                pool.push("s(i, j) :- e(x, _), i = range(0, x), j = range(i, 0, -1).".into());
                // A range's value read by comparisons, a negation and a range written
                // before it.
                pool.push(
                    "s(j, i) :- e(x, y), j = range(0, i), i = range(x, y), i + j != 3, !u(j)."
                        .into(),
                );
            }
            if records {
                // Lists built from facts and extended (at most three long), taken
                // apart nested and with `_`, counted in an aggregate, negated; trees
                // of an algebraic data type built, matched by constructor, nested.
                pool.push("rl([x, [y, nil]]) :- p(x, y).".into());
                pool.push("rl([x, l]) :- rl(l), l = [y, [_, nil]], e(y, x).".into());
                pool.push("t(x, y) :- rl([x, [y, _]]).".into());
                pool.push("s(x, n) :- u(x), n = count : { rl([x, _]) }.".into());
                pool.push("tr($A(x), y) :- p(x, y).".into());
                pool.push("tr($C(), x) :- u(x).".into());
                pool.push(
                    "tr($B(a, b), 0) :- tr(a, _), tr(b, _), a = $A(x), b = $A(y), x < y.".into(),
                );
                pool.push("r(x, y) :- tr(t, y), t = $A(x), !rl([x, [y, nil]]).".into());
                pool.push("s(x, y) :- tr($B($A(x), $A(y)), _).".into());
                pool.push("t(x, 0) :- tr(c, x), c = $C().".into());
            }
            pool
        })
}

/// One commit: fact changes (insert?, relation 0..3 = e/f/u, a, b) and maybe a new
/// selection of the pool's rules (bit mask).
type Commit = (Vec<(bool, u8, u32, u32)>, Option<u32>);

fn commits() -> impl Strategy<Value = Vec<Commit>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(
                (proptest::bool::weighted(0.65), 0u8..3, 0u32..5, 0u32..5),
                0..12,
            ),
            proptest::option::weighted(0.4, any::<u32>()),
        ),
        1..6,
    )
}

fn build(rules: &[String], mask: u32, symbols: &Program) -> Option<Program> {
    let chosen: Vec<&str> = rules
        .iter()
        .enumerate()
        // A pool may hold more than 32 rules: rule `i` goes with bit `i % 32`.
        .filter(|(i, _)| mask & (1 << (i % 32)) != 0)
        .map(|(_, r)| r.as_str())
        .collect();
    let text = format!("{DECLS}{}\n", chosen.join("\n"));
    try_next_program(&text, symbols.symbols.clone(), &symbols.relations).ok()
}

/// The rules of a pool that are valid on their own (safe). Negation cannot form a cycle
/// in this generator, so every subset of them is a valid program.
fn valid_rules(pool: Vec<String>, empty: &Program) -> Vec<String> {
    pool.into_iter()
        .filter(|r| build(std::slice::from_ref(r), 1, empty).is_some())
        .collect()
}

fn run_case(
    engine_name: &str,
    pool: Vec<String>,
    start_mask: u32,
    commits: &[Commit],
    workers: usize,
    limit: Option<u64>,
) -> Result<(), TestCaseError> {
    let empty = try_program(DECLS, Default::default()).expect("declarations");
    let pool = &valid_rules(pool, &empty)[..];
    // Start with the selected rules, or none if they do not make a valid program.
    let mut program = build(pool, start_mask, &empty).unwrap_or(empty);
    let mut engine = dynalog_engines::create(
        &dynalog_engines::Config::new(engine_name, workers),
        program.clone(),
    )
    .expect("starts");
    engine.track_changes(true);
    engine
        .set_limits(Limits {
            max_changes: limit,
            max_time: None,
        })
        .expect("limits");
    let names = ["e", "f", "u"];
    let mut base: Vec<(RelId, Vec<Value>)> = program.facts.clone();
    let mut prev: Db = vec![];
    // With the internal relations of aggregates, which count towards the limit.
    let mut prev_full: Db = vec![];
    for (n, (facts, mask)) in commits.iter().enumerate() {
        let before = (program.clone(), base.clone());
        if let Some(mask) = mask
            && let Some(next) = build(pool, *mask, &program)
        {
            for (a, b) in program.relations.iter().zip(&next.relations) {
                prop_assert_eq!(&a.name, &b.name);
            }
            engine.set_program(next.clone());
            program = next;
        }
        for &(insert, r, a, b) in facts {
            let rel = program.relation_id(names[r as usize]).expect("declared");
            let t: Vec<Value> = if r == 2 { vec![a] } else { vec![a, b] };
            if insert {
                engine.insert(rel, &t);
                if !base.contains(&(rel, t.clone())) {
                    base.push((rel, t));
                }
            } else {
                engine.remove(rel, &t);
                base.retain(|x| *x != (rel, t.clone()));
            }
        }
        let result = engine.commit();
        let want = reference(&program, &base);
        let mut want_full = reference_full(&program, &base);
        if engine_name == "diff" {
            // The differential engine keeps no aggregate's input as a relation (its
            // rows go to the aggregate's `reduce`): they are not changes it makes.
            for (i, rel) in program.relations.iter().enumerate() {
                if rel.is_internal() && rel.name.ends_with("_in") {
                    want_full[i].clear();
                }
            }
        }
        let net = difference(&prev_full, &want_full).len() as u64;
        // The candidates of a recursive relation with subsumption, and so its dominated
        // ones, depend on the order of evaluation (`dynalog_analysis::Subsumed`); those
        // of a recursive choice are all kept by a semi-naive evaluation, while a
        // differential loop keeps only those whose `!r(domain, _)` still holds at the
        // fixpoint (none: every candidate's value is chosen). Each engine counts its
        // own towards the limit. The other relations' changes are the same for all, a
        // lower bound of every engine's count.
        let subsumption_internals = |p: &Program| -> Vec<usize> {
            p.strata
                .iter()
                .filter(|s| s.subsumption.is_some() || s.choice.is_some())
                .flat_map(|s| s.relations.iter().map(|&r| r as usize))
                .filter(|&r| p.relations[r].is_internal())
                .collect()
        };
        let uncertain: Vec<usize> = subsumption_internals(&program)
            .into_iter()
            .chain(subsumption_internals(&before.0))
            .collect();
        let net_at_least = if uncertain.is_empty() {
            net
        } else {
            let certain = |db: &Db| -> Db {
                db.iter()
                    .enumerate()
                    .map(|(i, r)| {
                        if uncertain.contains(&i) {
                            Default::default()
                        } else {
                            r.clone()
                        }
                    })
                    .collect()
            };
            difference(&certain(&prev_full), &certain(&want_full)).len() as u64
        };
        if let Err(e) = result {
            let Some(limit) = limit else {
                panic!("only a limit refuses a commit; {engine_name} refused commit {n}: {e}");
            };
            prop_assert!(e.limit().is_some(), "{}: {}", engine_name, e);
            prop_assert!(
                net > limit || engine_name == "diff" || !uncertain.is_empty(),
                "{}: commit {} refused with {} changes, under the limit {}",
                engine_name,
                n,
                net,
                limit
            );
            (program, base) = before;
            prop_assert_eq!(engine.program().rules.len(), program.rules.len());
            let got = snapshot(engine.as_ref());
            for (i, rel) in program.relations.iter().enumerate() {
                let empty = Default::default();
                prop_assert_eq!(
                    &got[i],
                    prev.get(i).unwrap_or(&empty),
                    "{}: relation {} after refused commit {}",
                    engine_name,
                    rel.name,
                    n
                );
            }
            continue;
        }
        if let Some(limit) = limit {
            prop_assert!(
                net_at_least <= limit,
                "{}: commit {} accepted with {} changes, over the limit {}",
                engine_name,
                n,
                net_at_least,
                limit
            );
        }
        let got = snapshot(engine.as_ref());
        for (i, rel) in program.relations.iter().enumerate() {
            prop_assert_eq!(
                &got[i],
                &want[i],
                "{}: relation {} after commit {} ({} workers) of\n{}",
                engine_name,
                rel.name,
                n,
                workers,
                program
                    .rules
                    .iter()
                    .map(|r| r.text.clone())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        prop_assert_eq!(
            changes_since(engine.as_ref(), &before.0),
            difference(&prev, &want),
            "{}: changes of commit {}",
            engine_name,
            n
        );
        prev = want;
        prev_full = want_full;
    }
    Ok(())
}

/// One default and one long (ignored) property test per engine: `name` runs `cases`
/// cases, `long` 20,000 (`cargo test --release --test engines_property -- --ignored`).
macro_rules! engine_property {
    ($engine:literal, $name:ident, $long:ident, $cases:expr) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: $cases, ..ProptestConfig::default() })]

            #[test]
            fn $name(
                pool in rule_pool(),
                start in any::<u32>(),
                commits in commits(),
                workers in 1usize..3,
                limit in proptest::option::weighted(0.3, 0u64..30),
            ) {
                run_case($engine, pool, start, &commits, workers, limit)?;
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 20000, ..ProptestConfig::default() })]

            #[test]
            #[ignore]
            fn $long(
                pool in rule_pool(),
                start in any::<u32>(),
                commits in commits(),
                workers in 1usize..3,
                limit in proptest::option::weighted(0.3, 0u64..30),
            ) {
                run_case($engine, pool, start, &commits, workers, limit)?;
            }
        }
    };
}

engine_property!(
    "diff",
    diff_agrees_with_reference,
    diff_agrees_with_reference_long,
    3000
);
engine_property!(
    "relational",
    relational_agrees_with_reference,
    relational_agrees_with_reference_long,
    3000
);
engine_property!(
    "chibi",
    chibi_agrees_with_reference,
    chibi_agrees_with_reference_long,
    2000
);
engine_property!(
    "remat",
    remat_agrees_with_reference,
    remat_agrees_with_reference_long,
    1000
);

#[test]
fn generator_yields_mostly_valid_programs() {
    // Guard against a generator whose programs are silently all discarded.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strat = rule_pool();
    let empty = try_program(DECLS, Default::default()).expect("declarations");
    let (mut valid, mut rules) = (0, 0);
    for _ in 0..200 {
        let pool = valid_rules(strat.new_tree(&mut runner).expect("tree").current(), &empty);
        if let Some(p) = build(&pool, u32::MAX, &empty) {
            valid += 1;
            rules += p.rules.len();
        }
    }
    assert!(
        valid > 60,
        "only {valid} of 200 generated pools are valid programs"
    );
    assert!(rules > 3 * valid, "valid programs have few rules");
}
