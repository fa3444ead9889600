//! A recursive relation with subsumption (shortest paths) maintained by every engine
//! under insertions and deletions, checked after every commit against shortest
//! distances computed here by Bellman-Ford, independently of the engines, and against
//! the reference engine from scratch; the engines' reported changes against the
//! difference of the materializations.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{RelId, Value};
use dynalog_engines::{Config, create};
use std::collections::{BTreeMap, BTreeSet};

const ENGINES: [&str; 5] = ["seminaive", "diff", "relational", "chibi", "remat"];

const PROGRAM: &str = ".decl edge(x: number, y: number, w: number)\n\
.decl start(x: number)\n\
.decl dist(x: number, d: number)\n\
.decl near(x: number)\n\
dist(x, 0) :- start(x).\n\
dist(y, d + w) :- dist(x, d), edge(x, y, w).\n\
dist(x, d1) <= dist(x, d2) :- d2 <= d1.\n\
near(x) :- dist(x, d), d < 3.\n";

/// What `dist` must hold: for every node reached, its shortest distance from the
/// starts (at 0) and from the `dist` facts given directly (at their distance: they
/// are `dist`'s own, never subsumed, and their edges lead on); plus those facts.
fn shortest(
    edges: &BTreeSet<(Value, Value, Value)>,
    starts: &BTreeSet<Value>,
    given: &BTreeSet<(Value, Value)>,
) -> BTreeSet<Vec<Value>> {
    let mut best: BTreeMap<Value, Value> = starts.iter().map(|&s| (s, 0)).collect();
    loop {
        let mut changed = false;
        let sources: Vec<(Value, Value)> = best
            .iter()
            .map(|(&x, &d)| (x, d))
            .chain(given.iter().copied())
            .collect();
        for (x, d) in sources {
            for &(a, b, w) in edges.range((x, Value::MIN, Value::MIN)..) {
                if a != x {
                    break;
                }
                let nd = d + w;
                if best.get(&b).is_none_or(|&old| nd < old) {
                    best.insert(b, nd);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    best.into_iter()
        .map(|(x, d)| vec![x, d])
        .chain(given.iter().map(|&(x, d)| vec![x, d]))
        .collect()
}

#[test]
fn shortest_paths_by_subsumption_under_random_updates_on_every_engine() {
    let p = program(PROGRAM);
    let id = |n: &str| p.relation_id(n).expect("declared");
    let (edge, start, dist) = (id("edge"), id("start"), id("dist"));
    for name in ENGINES {
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.track_changes(true);
        let mut edges: BTreeSet<(Value, Value, Value)> = BTreeSet::new();
        let mut starts: BTreeSet<Value> = BTreeSet::new();
        let mut given: BTreeSet<(Value, Value)> = BTreeSet::new();
        let mut rng = Lcg(0x9e37_79b9_7f4a_7c15);
        let mut next = |n: u64| rng.below(n) as Value;
        let mut before = snapshot(e.as_ref());
        for step in 0..60 {
            for _ in 0..1 + next(5) {
                let (kind, a, b) = (next(10), next(9), next(9));
                // Zero weights and self loops included: cycles of weight 0 too.
                let w = next(4);
                if kind == 0 {
                    if starts.remove(&a) {
                        e.remove(start, &[a]);
                    } else {
                        starts.insert(a);
                        e.insert(start, &[a]);
                    }
                } else if kind == 1 {
                    let d = next(6);
                    if given.remove(&(a, d)) {
                        e.remove(dist, &[a, d]);
                    } else {
                        given.insert((a, d));
                        e.insert(dist, &[a, d]);
                    }
                } else if let Some(&t) = edges.iter().find(|t| (t.0, t.1) == (a, b)) {
                    // A removal half the time, else a second edge of another weight.
                    if next(2) == 0 {
                        edges.remove(&t);
                        e.remove(edge, &[t.0, t.1, t.2]);
                    } else if edges.insert((a, b, w)) {
                        e.insert(edge, &[a, b, w]);
                    }
                } else {
                    edges.insert((a, b, w));
                    e.insert(edge, &[a, b, w]);
                }
            }
            e.commit().expect("commit");
            let context = format!("{name}, step {step}");
            let want = shortest(&edges, &starts, &given);
            assert_eq!(facts(e.as_ref(), "dist"), want, "{context}: dist");
            let near: BTreeSet<Vec<Value>> = want
                .iter()
                .filter(|t| t[1] < 3)
                .map(|t| vec![t[0]])
                .collect();
            assert_eq!(facts(e.as_ref(), "near"), near, "{context}: near");
            let base: Vec<(RelId, Vec<Value>)> = edges
                .iter()
                .map(|&(a, b, w)| (edge, vec![a, b, w]))
                .chain(starts.iter().map(|&s| (start, vec![s])))
                .chain(given.iter().map(|&(x, d)| (dist, vec![x, d])))
                .collect();
            before = check_commit(e.as_ref(), &p, &base, &before, &context);
        }
    }
}

#[test]
fn an_insert_then_delete_round_trip_is_exact_on_every_engine() {
    let p = program(PROGRAM);
    let id = |n: &str| p.relation_id(n).expect("declared");
    let (edge, start) = (id("edge"), id("start"));
    for name in ENGINES {
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.insert(start, &[0]);
        for i in 0..20 {
            e.insert(edge, &[i, i + 1, 2]);
        }
        e.insert(edge, &[20, 0, 1]);
        e.commit().expect("commit");
        let at_rest = snapshot(e.as_ref());
        // A shortcut moves every distance past it down, and taking it out back up.
        e.insert(edge, &[0, 10, 1]);
        e.commit().expect("commit");
        assert!(facts(e.as_ref(), "dist").contains(&vec![15, 11]), "{name}");
        e.remove(edge, &[0, 10, 1]);
        e.commit().expect("commit");
        assert_same(&p, &snapshot(e.as_ref()), &at_rest, name);
        assert!(facts(e.as_ref(), "dist").contains(&vec![15, 30]), "{name}");
    }
}

#[test]
fn adding_and_removing_the_subsumption_rule_live_on_every_engine() {
    // Acyclic, so the program without subsumption is finite: every path's length.
    let without = ".decl edge(x: number, y: number, w: number)\n\
        .decl dist(x: number, d: number)\n\
        dist(0, 0).\n\
        dist(y, d + w) :- dist(x, d), edge(x, y, w).\n";
    let with = format!("{without}dist(x, d1) <= dist(x, d2) :- d2 <= d1.\n");
    let edges: Vec<[Value; 3]> = (0..12)
        .flat_map(|i| [[i, i + 1, 3], [i, i + 2, 5], [i, i + 3, 9]])
        .collect();
    for name in ENGINES {
        let first = program(without);
        let edge = first.relation_id("edge").expect("declared");
        let mut e = create(&Config::new(name, 2), first.clone()).expect("engine");
        e.track_changes(true);
        for t in &edges {
            e.insert(edge, t);
        }
        e.commit().expect("commit");
        let base: Vec<(RelId, Vec<Value>)> = edges
            .iter()
            .map(|t| (edge, t.to_vec()))
            .chain([(first.relation_id("dist").expect("declared"), vec![0, 0])])
            .collect();
        let mut previous = first;
        let mut before = snapshot(e.as_ref());
        assert!(
            before[previous.relation_id("dist").expect("declared") as usize].len() > 60,
            "{name}: {} paths",
            before[previous.relation_id("dist").expect("declared") as usize].len()
        );
        for (round, text) in [with.as_str(), without, with.as_str()]
            .into_iter()
            .enumerate()
        {
            let next = try_next_program(text, previous.symbols.clone(), &previous.relations)
                .expect("checks");
            e.set_program(next.clone());
            e.commit().expect("commit");
            let context = format!("{name}, program change {round}");
            let now = snapshot(e.as_ref());
            assert_same(&next, &now, &reference(&next, &base), &context);
            assert_eq!(
                changes_since(e.as_ref(), &previous),
                difference(&before, &now),
                "{context}"
            );
            if text != without {
                let dist = facts(e.as_ref(), "dist");
                assert_eq!(dist.len(), 15, "{context}: one distance a node");
                assert!(dist.contains(&vec![12, 30]), "{context}");
            }
            previous = next;
            before = now;
        }
    }
}

#[test]
fn a_program_that_keeps_the_ids_of_a_previous_one_subsumes_with_its_own_relations() {
    // Found by the property test: when the relations are renumbered to keep the ids of
    // the program replaced (a session's), the stratum's subsumed and dominated
    // relations must be renumbered too, or the reference removed `sp`'s tuples that
    // were in an unrelated relation (here the choice's).
    let decls = ".decl e(a: number, b: number)\n.decl u(a: number)\n\
        .decl ch(a: number, b: number) choice-domain a\n.decl sp(a: number, b: number)\n";
    let rules = "ch(x, y) :- e(y, x).\nsp(x, 0) :- u(x).\n\
        sp(y, d + 1) :- sp(x, d), e(x, y), d < 6.\nsp(x, d1) <= sp(x, d2) :- d2 <= d1.\n";
    let empty = program(decls);
    let p = try_next_program(
        &format!("{decls}{rules}"),
        empty.symbols.clone(),
        &empty.relations,
    )
    .expect("checks");
    let (e_id, u_id) = (
        p.relation_id("e").expect("e"),
        p.relation_id("u").expect("u"),
    );
    for name in ENGINES {
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.insert(e_id, &[0, 0]);
        e.insert(e_id, &[0, 1]);
        e.insert(u_id, &[0]);
        e.commit().expect("commit");
        let want: BTreeSet<Vec<Value>> = [vec![0, 0], vec![1, 1]].into();
        assert_eq!(facts(e.as_ref(), "sp"), want, "{name}");
    }
}
