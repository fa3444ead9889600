//! Adding and removing rules with `Diff::set_program`: the materialization and the
//! reported changes equal the reference's from-scratch results.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{Program, RelId, Value};
use dynalog_engines::Engine;
use dynalog_engines::diff::Diff;

const DECLS: &str = ".decl edge(x: number, y: number)\n.decl sink(n: number)\n\
.decl path(x: number, y: number)\n.decl node(n: number)\n.decl stuck(n: number)\n\
.decl far(x: number, y: number)\n.decl t(s: number, p: number, o: number)\n";

/// A program of the declarations above and the given rules, interning into the
/// previous program's symbols.
fn with_rules(prev: Option<&Program>, rules: &[&str]) -> Program {
    let text = format!("{DECLS}{}\n", rules.join("\n"));
    let symbols = prev.map(|p| p.symbols.clone()).unwrap_or_default();
    try_program(&text, symbols).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn check(
    engine: &Diff,
    program: &Program,
    base: &[(RelId, Vec<Value>)],
    prev: &Db,
    what: &str,
) -> Db {
    let want = reference(program, base);
    assert_same(program, &snapshot(engine), &want, what);
    assert_eq!(changes(engine), difference(prev, &want), "changes: {what}");
    want
}

/// Replace `program`'s rules by `rules` in `engine`, commit, and check the result.
fn set_rules(
    engine: &mut Diff,
    program: &mut Program,
    rules: &[&str],
    base: &[(RelId, Vec<Value>)],
    prev: &Db,
    what: &str,
) -> Db {
    let next = with_rules(Some(program), rules);
    for (a, b) in program.relations.iter().zip(&next.relations) {
        assert_eq!(a.name, b.name, "relation ids are stable");
    }
    engine.set_program(next.clone());
    engine.commit().expect("commits");
    *program = next;
    check(engine, program, base, prev, what)
}

#[test]
fn add_and_remove_rules() {
    const BASE: &str = "path(x, y) :- edge(x, y).";
    const REC: &str = "path(x, z) :- path(x, y), edge(y, z).";
    const NODE: &str = "node(a) :- edge(a, _).";
    const STUCK: &str = "stuck(n) :- node(n), !sink(n), !path(n, s), sink(s).";
    const FAR: &str = "far(x, y) :- path(x, y), !edge(x, y), x != y.";
    for workers in [1, 2] {
        let p0 = with_rules(None, &[BASE]);
        let mut engine = Diff::new(p0.clone(), workers).expect("starts");
        engine.track_changes(true);
        let edges: Vec<(RelId, Vec<Value>)> = [[1, 2], [2, 3], [3, 4], [4, 2], [5, 6]]
            .iter()
            .map(|e| (p0.relation_id("edge").unwrap(), e.to_vec()))
            .chain([(p0.relation_id("sink").unwrap(), vec![4])])
            .collect();
        for (r, t) in &edges {
            engine.insert(*r, t);
        }
        engine.commit().expect("commits");
        let mut prev = check(&engine, &p0, &edges, &vec![], "load");
        let steps: Vec<Vec<&str>> = vec![
            vec![BASE, REC],
            vec![BASE, REC, NODE, STUCK],
            vec![BASE, REC, NODE, STUCK, FAR],
            vec![BASE, NODE, STUCK, FAR],
            vec![REC, NODE, FAR],
            vec![BASE, REC, NODE, STUCK, FAR],
            vec![BASE],
            vec![],
            vec![BASE, REC],
        ];
        let mut program = p0.clone();
        for (i, rules) in steps.iter().enumerate() {
            let what = format!("step {i}, {workers} workers");
            prev = set_rules(&mut engine, &mut program, rules, &edges, &prev, &what);
        }
    }
}

/// Rules whose atoms leave values out (`path(a, _)`) come and go over facts derived in
/// many rounds, so that one subject's facts have changes at different rounds: a new
/// pattern adds up its facts' changes per entry and round before it makes records
/// (`Patterns::add`), and the records must keep each round.
#[test]
fn projecting_rules_come_and_go_over_facts_of_many_rounds() {
    const BASE: &str = "path(x, y) :- edge(x, y).";
    const REC: &str = "path(x, z) :- path(x, y), edge(y, z).";
    const TRIPLES: &str = "t(x, y, z) :- path(x, y), edge(y, z).";
    // A rule read straight from the facts (its first atom), projecting.
    const NODE: &str = "node(a) :- path(a, _).";
    // Index patterns with a bound column and none or one free value, projecting.
    const FAR: &str = "far(x, y) :- edge(x, y), path(y, _).";
    const FAR3: &str = "far(x, z) :- path(x, y), t(y, z, _), x != z.";
    // Two free values out of three, read straight from the facts.
    const NODE3: &str = "node(s) :- t(s, _, o), o > s.";
    // A negated projection.
    const STUCK: &str = "stuck(n) :- sink(n), !path(n, _).";
    // Projections in a recursion over a cycle (5 and 30 in `far`): an entry made at
    // an earlier round than its fact's would hold `node(5)` up through the cycle
    // after its paths are cut.
    const LIT: &str = "node(x) :- path(x, _), sink(x).";
    const LIT_INDEX: &str = "node(x) :- sink(x), path(x, _), x > 4.";
    const LIT_STEP: &str = "node(y) :- node(x), far(x, y).";
    for workers in [1, 2] {
        let p0 = with_rules(None, &[BASE, REC, TRIPLES]);
        let edge = p0.relation_id("edge").unwrap();
        let sink = p0.relation_id("sink").unwrap();
        let mut engine = Diff::new(p0.clone(), workers).expect("starts");
        engine.track_changes(true);
        // A chain 1..12 (paths found in up to 11 rounds), a cycle back into it, a
        // branch, and sinks with and without paths out.
        let mut base: Vec<(RelId, Vec<Value>)> = (1..12).map(|i| (edge, vec![i, i + 1])).collect();
        base.extend([
            (edge, vec![9, 4]),
            (edge, vec![3, 20]),
            (edge, vec![20, 21]),
        ]);
        base.extend([(sink, vec![21]), (sink, vec![5]), (sink, vec![30])]);
        let far = p0.relation_id("far").unwrap();
        base.extend([(far, vec![5, 30]), (far, vec![30, 5])]);
        for (r, t) in &base {
            engine.insert(*r, t);
        }
        engine.commit().expect("commits");
        let mut prev = check(&engine, &p0, &base, &vec![], "load");
        let all = [BASE, REC, TRIPLES, NODE, FAR, FAR3, NODE3, STUCK];
        let steps: Vec<Vec<&str>> = vec![
            vec![BASE, REC, TRIPLES, LIT, LIT_STEP],
            vec![BASE, REC, TRIPLES, LIT_INDEX, LIT_STEP],
            all.to_vec(),
            vec![BASE, REC, TRIPLES],
            vec![BASE, REC, TRIPLES, NODE, FAR3],
            vec![BASE, REC, TRIPLES, FAR, NODE3, STUCK],
            vec![BASE, TRIPLES, FAR, NODE3, STUCK],
            all.to_vec(),
            vec![BASE, REC, TRIPLES],
        ];
        let mut program = p0.clone();
        for (i, rules) in steps.iter().enumerate() {
            let what = format!("step {i}, {workers} workers");
            prev = set_rules(&mut engine, &mut program, rules, &base, &prev, &what);
            // Facts that change after the rule came meet its entries at their rounds:
            // an entry made at the wrong round outlives its fact in the loop.
            for cut in [[5, 6], [2, 3]] {
                engine.remove(edge, &cut);
                let without: Vec<_> = base.iter().filter(|f| f.1 != cut).cloned().collect();
                engine.commit().expect("commits");
                prev = check(&engine, &program, &without, &prev, &format!("{what}, cut"));
                engine.insert(edge, &cut);
                engine.commit().expect("commits");
                prev = check(&engine, &program, &base, &prev, &format!("{what}, mended"));
            }
        }
    }
}

#[test]
fn rule_change_and_fact_change_in_one_commit() {
    let p0 = with_rules(None, &["path(x, y) :- edge(x, y)."]);
    let edge = p0.relation_id("edge").unwrap();
    let mut engine = Diff::new(p0.clone(), 2).expect("starts");
    engine.track_changes(true);
    let mut base = vec![(edge, vec![1, 2]), (edge, vec![2, 3])];
    for (r, t) in &base {
        engine.insert(*r, t);
    }
    engine.commit().expect("commits");
    let prev = check(&engine, &p0, &base, &vec![], "load");
    let p1 = with_rules(
        Some(&p0),
        &[
            "path(x, y) :- edge(x, y).",
            "path(x, z) :- path(x, y), edge(y, z).",
        ],
    );
    engine.set_program(p1.clone());
    engine.insert(edge, &[3, 4]);
    engine.remove(edge, &[1, 2]);
    base.push((edge, vec![3, 4]));
    base.retain(|(_, t)| t != &vec![1, 2]);
    engine.commit().expect("commits");
    check(&engine, &p1, &base, &prev, "rules and facts together");
}

#[test]
fn wider_rule_rebuilds_and_stays_exact() {
    // The new rule needs a wider row and more join stages than the first program:
    // the dataflow is rebuilt, the reported changes stay exact.
    let decls = ".decl e(x: number, y: number)\n.decl w(a: number, b: number, c: number, d: number, e: number)\n";
    let p0 = try_program(decls, Default::default()).unwrap();
    let e = p0.relation_id("e").unwrap();
    let mut engine = Diff::new(p0.clone(), 1).expect("starts");
    engine.track_changes(true);
    let base: Vec<(RelId, Vec<Value>)> = [[1, 2], [2, 3], [3, 4], [4, 5]]
        .iter()
        .map(|t| (e, t.to_vec()))
        .collect();
    for (r, t) in &base {
        engine.insert(*r, t);
    }
    engine.commit().expect("commits");
    let prev = check(&engine, &p0, &base, &vec![], "load");
    let p1 = try_program(
        &format!("{decls}w(a, b, c, d, f) :- e(a, b), e(b, c), e(c, d), e(d, f).\n"),
        p0.symbols.clone(),
    )
    .unwrap();
    engine.set_program(p1.clone());
    engine.commit().expect("commits");
    let prev = check(&engine, &p1, &base, &prev, "after rebuild");
    engine.insert(e, &[5, 6]);
    let mut base2 = base.clone();
    base2.push((e, vec![5, 6]));
    engine.commit().expect("commits");
    check(&engine, &p1, &base2, &prev, "update after rebuild");
}

#[test]
fn a_program_that_does_not_extend_is_rejected() {
    let p0 = with_rules(None, &["path(x, y) :- edge(x, y)."]);
    let (edge, path) = (
        p0.relation_id("edge").unwrap(),
        p0.relation_id("path").unwrap(),
    );
    let mut engine = Diff::new(p0.clone(), 1).expect("starts");
    engine.track_changes(true);
    engine.insert(edge, &[1, 2]);
    engine.commit().expect("commits");
    let other = try_program(".decl a(x: number)\n", Default::default()).unwrap();
    engine.set_program(other);
    assert!(
        engine.commit().is_err(),
        "a program that drops relations is rejected"
    );
    // The engine keeps its program and keeps working.
    engine.insert(edge, &[2, 3]);
    engine.commit().expect("commits");
    assert_eq!(engine.len(path), 2);
    assert!(engine.contains(path, &[2, 3]));
    // Facts of unknown relations or of the wrong arity are ignored, not a panic.
    engine.insert(99, &[1]);
    engine.insert(edge, &[1]);
    engine.commit().expect("commits");
    assert_eq!(engine.len(99), 0);
    assert!(engine.last_changes().is_empty());
}

#[test]
fn removing_the_rule_of_an_implicit_relation_drops_it() {
    // In the study's syntax relations are implicit: removing `rev`'s only rule removes
    // the relation from the re-analysed program; its facts are retracted.
    const TC: &str = "tc(?x, ?y) <- [a(?x, ?y)]\ntc(?x, ?z) <- [tc(?x, ?y), a(?y, ?z)]\n";
    for workers in [1, 2] {
        let p0 = try_program(TC, Default::default()).unwrap();
        let a = p0.relation_id("a").unwrap();
        let mut engine = Diff::new(p0.clone(), workers).expect("starts");
        engine.track_changes(true);
        let base: Vec<(RelId, Vec<Value>)> =
            [[1, 2], [2, 3]].iter().map(|t| (a, t.to_vec())).collect();
        for (r, t) in &base {
            engine.insert(*r, t);
        }
        engine.commit().expect("commits");
        let prev = check(&engine, &p0, &base, &vec![], "load");
        let p1 = try_program(
            &format!("{TC}rev(?y, ?x) <- [tc(?x, ?y)]\n"),
            p0.symbols.clone(),
        )
        .unwrap();
        let rev = p1.relation_id("rev").unwrap();
        engine.set_program(p1.clone());
        engine.commit().expect("commits");
        let prev = check(&engine, &p1, &base, &prev, "rule added");
        assert_eq!(engine.len(rev), 3);
        let p2 = try_program(TC, p1.symbols.clone()).unwrap();
        assert!(p2.relation_id("rev").is_none());
        engine.set_program(p2.clone());
        engine.commit().expect("commits");
        check(&engine, &p2, &base, &prev, "rule and relation removed");
        assert_eq!(engine.len(rev), 0);
        // And back again: the relation reappears at the same id.
        engine.set_program(p1.clone());
        engine.commit().expect("commits");
        assert_eq!(engine.len(rev), 3);
    }
}

/// The handle's copy of the base facts of a relation, in records (`Engine::memory`).
fn base_records(engine: &mut Diff) -> u64 {
    let usage = engine.memory().expect("memory");
    let part = usage.parts.iter().find(|p| p.name == "base facts (handle)");
    part.expect("a part for the base facts").records
}

/// A relation that no rule derives leaves its base facts to the materialization (the
/// handle keeps no copy, module `diff::base`): inserting a present fact or removing an
/// absent one still changes nothing, also when a commit changes a fact twice, and the
/// copy comes back when a rule comes to derive the relation, when the dataflow is
/// rebuilt, and while limits are set.
#[test]
fn base_facts_of_underived_relations_are_the_materialization() {
    for workers in [1, 2] {
        let p0 = with_rules(None, &["path(x, y) :- edge(x, y)."]);
        let edge = p0.relation_id("edge").unwrap();
        let node = p0.relation_id("node").unwrap();
        let mut engine = Diff::new(p0.clone(), workers).expect("starts");
        engine.track_changes(true);
        let mut base: Vec<(RelId, Vec<Value>)> = vec![
            (edge, vec![1, 2]),
            (edge, vec![2, 3]),
            (edge, vec![3, 4]),
            (node, vec![9]),
        ];
        for (r, t) in &base {
            engine.insert(*r, t);
        }
        engine.commit().expect("commits");
        let prev = check(&engine, &p0, &base, &vec![], "load");
        assert_eq!(
            base_records(&mut engine),
            0,
            "no copy of underived relations"
        );

        // Set semantics against the materialization, in the order staged.
        engine.insert(edge, &[1, 2]); // present
        engine.remove(edge, &[7, 8]); // absent
        engine.remove(edge, &[2, 3]); // removed, then back
        engine.insert(edge, &[2, 3]);
        engine.insert(edge, &[5, 6]); // added, then gone
        engine.remove(edge, &[5, 6]);
        engine.remove(edge, &[3, 4]); // removed twice
        engine.remove(edge, &[3, 4]);
        engine.insert(edge, &[4, 5]); // added twice
        engine.insert(edge, &[4, 5]);
        engine.commit().expect("commits");
        base.retain(|(r, t)| (*r, t.as_slice()) != (edge, &[3, 4][..]));
        base.push((edge, vec![4, 5]));
        let prev = check(&engine, &p0, &base, &prev, "update");
        assert!(engine.is_base(edge, &[4, 5]) && engine.is_base(edge, &[2, 3]));
        assert!(!engine.is_base(edge, &[3, 4]) && !engine.is_base(edge, &[5, 6]));
        assert!(engine.is_base(node, &[9]) && !engine.is_base(node, &[1]));

        // A rule now derives `node`: its base facts are held again, and removing the
        // base fact of a node the rule also derives keeps the node.
        let p1 = with_rules(
            Some(&p0),
            &["path(x, y) :- edge(x, y).", "node(a) :- edge(a, _)."],
        );
        engine.set_program(p1.clone());
        engine.insert(node, &[1]);
        engine.commit().expect("commits");
        base.push((node, vec![1]));
        let prev = check(&engine, &p1, &base, &prev, "a rule derives node");
        assert_eq!(base_records(&mut engine), 2, "node's base facts are held");
        engine.remove(node, &[1]);
        engine.remove(node, &[9]);
        engine.commit().expect("commits");
        base.retain(|(r, _)| *r != node);
        let prev = check(&engine, &p1, &base, &prev, "node's base facts removed");
        assert!(engine.contains(node, &[1]) && !engine.is_base(node, &[1]));

        // The rule goes: node is underived again, and empty.
        engine.set_program(p0.clone());
        engine.insert(node, &[7]);
        engine.commit().expect("commits");
        base.push((node, vec![7]));
        let prev = check(&engine, &p0, &base, &prev, "the rule of node goes");
        assert_eq!(base_records(&mut engine), 0);

        // A rule wider than the dataflow: rebuilt from the base facts.
        let p2 = with_rules(
            Some(&p0),
            &[
                "path(x, y) :- edge(x, y).",
                "far(a, e) :- edge(a, b), edge(b, c), edge(c, d), edge(d, e), node(a).",
            ],
        );
        engine.set_program(p2.clone());
        engine.insert(edge, &[5, 6]);
        engine.commit().expect("commits");
        base.push((edge, vec![5, 6]));
        let prev = check(&engine, &p2, &base, &prev, "rebuilt");
        engine.remove(edge, &[1, 2]);
        engine.commit().expect("commits");
        base.retain(|(r, t)| (*r, t.as_slice()) != (edge, &[1, 2][..]));
        let prev = check(&engine, &p2, &base, &prev, "update after the rebuild");

        // With limits, a refused commit goes back to the base facts before it.
        engine
            .set_limits(dynalog_engines::Limits {
                max_changes: Some(1),
                ..dynalog_engines::Limits::NONE
            })
            .expect("limits in one process");
        engine.insert(edge, &[6, 7]);
        engine.remove(edge, &[2, 3]);
        let refused = engine.commit();
        assert!(refused.is_err(), "over the limit: {refused:?}");
        assert!(engine.is_base(edge, &[2, 3]) && !engine.is_base(edge, &[6, 7]));
        engine
            .set_limits(dynalog_engines::Limits::NONE)
            .expect("no limits");
        engine.insert(edge, &[6, 7]);
        engine.commit().expect("commits");
        base.push((edge, vec![6, 7]));
        check(&engine, &p2, &base, &prev, "after a refused commit");
        assert_eq!(base_records(&mut engine), 0);
    }
}

/// RhoDF's rules over `t(s, p, o)`, with numbers for the vocabulary: most of their
/// atoms name a property in the second column, so the circuit keeps `t`'s patterns by
/// that constant, and a fact meets only those of its own property and those naming
/// none. Facts and rules change; every commit equals the reference.
#[test]
fn patterns_kept_by_a_constant_meet_every_fact_they_match() {
    // 1 type, 2 subClassOf, 3 subPropertyOf, 4 domain, 5 range.
    const RULES: [&str; 6] = [
        "t(y, 1, c) :- t(p, 4, c), t(y, p, _).",
        "t(z, 1, c) :- t(p, 5, c), t(_, p, z).",
        "t(p, 3, r) :- t(p, 3, q), t(q, 3, r).",
        "t(c, 2, e) :- t(c, 2, d), t(d, 2, e).",
        "t(x, 1, d) :- t(c, 2, d), t(x, 1, c).",
        "t(x, q, y) :- t(p, 3, q), t(x, p, y).",
    ];
    let schema = [
        [10, 4, 100],
        [10, 5, 101],
        [11, 3, 10],
        [12, 3, 11],
        [100, 2, 102],
        [102, 2, 103],
        [101, 2, 103],
    ];
    let data = [
        [20, 12, 21],
        [21, 11, 22],
        [23, 10, 20],
        [24, 1, 101],
        [22, 13, 20],
    ];
    for workers in [1, 2] {
        let p0 = with_rules(None, &RULES);
        let t = p0.relation_id("t").unwrap();
        let mut engine = Diff::new(p0.clone(), workers).expect("starts");
        engine.track_changes(true);
        let mut base: Vec<(RelId, Vec<Value>)> = schema
            .iter()
            .chain(&data[..3])
            .map(|f| (t, f.to_vec()))
            .collect();
        for (r, f) in &base {
            engine.insert(*r, f);
        }
        engine.commit().expect("commits");
        let what = |s: &str| format!("{s}, {workers} workers");
        let mut prev = check(&engine, &p0, &base, &vec![], &what("load"));
        // More facts, then a schema triple out and a fact out.
        for f in &data[3..] {
            engine.insert(t, f);
            base.push((t, f.to_vec()));
        }
        engine.commit().expect("commits");
        prev = check(&engine, &p0, &base, &prev, &what("insert"));
        for f in [[11, 3, 10], [20, 12, 21]] {
            engine.remove(t, &f);
            base.retain(|(_, g)| g[..] != f[..]);
        }
        engine.commit().expect("commits");
        prev = check(&engine, &p0, &base, &prev, &what("delete"));
        // The rules' patterns change: fewer constants than the dispatch needs, then all.
        let mut program = p0;
        for rules in [&RULES[4..], &RULES[..2], &RULES[..]] {
            let what = what(&format!("{rules:?}"));
            prev = set_rules(&mut engine, &mut program, rules, &base, &prev, &what);
        }
    }
}
