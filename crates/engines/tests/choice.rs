//! A recursive `choice-domain` relation (a spanning tree) maintained by every engine
//! under insertions and deletions, checked after every commit against the tree
//! computed here round by round (a node takes, among its parents of the first round
//! that reaches it, the smallest; `dynalog_analysis::Chosen`), independently of the
//! engines, and against the reference engine from scratch; the engines' reported
//! changes against the difference of the materializations. (The edges reach the tree
//! through a derived relation, `link`: the differential engine must start the choice's
//! loop once `link` is complete, or the candidates found through it come a round late.)

mod diff_common;

use diff_common::*;
use dynalog_analysis::{RelId, Value};
use dynalog_engines::{Config, create};
use std::collections::{BTreeMap, BTreeSet};

const ENGINES: [&str; 5] = ["seminaive", "diff", "relational", "chibi", "remat"];

const PROGRAM: &str = ".decl edge(x: number, y: number)\n\
.decl root(x: number)\n\
.decl st(parent: number, node: number) choice-domain node\n\
.decl reached(x: number)\n\
.decl link(x: number, y: number)\n\
link(x, y) :- edge(x, y).\n\
st(x, x) :- root(x).\n\
st(x, y) :- st(_, x), link(x, y).\n\
reached(y) :- st(_, y).\n";

/// What `st` must hold: the tuples given directly (`st`'s own, never chosen away),
/// then round by round, for every node not in the tree yet, the smallest of its
/// candidates (a root is its own; a node's children in the tree have it).
fn tree(
    edges: &BTreeSet<(Value, Value)>,
    roots: &BTreeSet<Value>,
    given: &BTreeSet<(Value, Value)>,
) -> BTreeSet<Vec<Value>> {
    let mut tree: BTreeSet<(Value, Value)> = given.clone();
    loop {
        let have: BTreeSet<Value> = tree.iter().map(|&(_, y)| y).collect();
        let mut best: BTreeMap<Value, Value> = BTreeMap::new();
        let mut offer = |parent: Value, node: Value| {
            if !have.contains(&node) {
                let b = best.entry(node).or_insert(parent);
                *b = (*b).min(parent);
            }
        };
        for &r in roots {
            offer(r, r);
        }
        for x in &have {
            for &(_, y) in edges.range((*x, Value::MIN)..=(*x, Value::MAX)) {
                offer(*x, y);
            }
        }
        if best.is_empty() {
            break;
        }
        tree.extend(best.into_iter().map(|(y, x)| (x, y)));
    }
    tree.into_iter().map(|(x, y)| vec![x, y]).collect()
}

#[test]
fn a_spanning_tree_by_choice_under_random_updates_on_every_engine() {
    let p = program(PROGRAM);
    let id = |n: &str| p.relation_id(n).expect("declared");
    let (edge, root, st) = (id("edge"), id("root"), id("st"));
    for name in ENGINES {
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.track_changes(true);
        let mut edges: BTreeSet<(Value, Value)> = BTreeSet::new();
        let mut roots: BTreeSet<Value> = BTreeSet::new();
        let mut given: BTreeSet<(Value, Value)> = BTreeSet::new();
        let mut rng = Lcg(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n) as Value;
        let mut before = snapshot(e.as_ref());
        let mut largest = 0;
        for step in 0..60 {
            for _ in 0..1 + next(6) {
                let (kind, a, b) = (next(12), next(12), next(12));
                // Self loops and cycles included.
                if kind == 0 {
                    if roots.remove(&a) {
                        e.remove(root, &[a]);
                    } else {
                        roots.insert(a);
                        e.insert(root, &[a]);
                    }
                } else if kind == 1 {
                    if given.remove(&(a, b)) {
                        e.remove(st, &[a, b]);
                    } else {
                        given.insert((a, b));
                        e.insert(st, &[a, b]);
                    }
                } else if edges.remove(&(a, b)) {
                    e.remove(edge, &[a, b]);
                } else {
                    edges.insert((a, b));
                    e.insert(edge, &[a, b]);
                }
            }
            e.commit().expect("commit");
            let context = format!("{name}, step {step}");
            let want = tree(&edges, &roots, &given);
            largest = largest.max(want.len());
            assert_eq!(facts(e.as_ref(), "st"), want, "{context}: st");
            let reached: BTreeSet<Vec<Value>> = want.iter().map(|t| vec![t[1]]).collect();
            assert_eq!(facts(e.as_ref(), "reached"), reached, "{context}: reached");
            let base: Vec<(RelId, Vec<Value>)> = edges
                .iter()
                .map(|&(a, b)| (edge, vec![a, b]))
                .chain(roots.iter().map(|&r| (root, vec![r])))
                .chain(given.iter().map(|&(x, y)| (st, vec![x, y])))
                .collect();
            before = check_commit(e.as_ref(), &p, &base, &before, &context);
        }
        // The trees were not trivial: most nodes reached, through several rounds.
        assert!(
            largest >= 10,
            "{name}: at most {largest} tuples in the tree"
        );
    }
}

#[test]
fn the_first_round_that_reaches_a_node_chooses_its_parent_on_every_engine() {
    // 5 is reached from 8 in the second round and from 3 in the third: 8 is its
    // parent, though 3 is smaller (the smallest of all candidates would be 3). Taking
    // out the edge 1 -> 8 (8's only way in) moves 5 under 3, and putting it back moves
    // it back.
    let p = program(PROGRAM);
    let id = |n: &str| p.relation_id(n).expect("declared");
    let (edge, root) = (id("edge"), id("root"));
    let edges = [
        (1, 8),
        (1, 2),
        (2, 3),
        (8, 5),
        (3, 5),
        (5, 9),
        (3, 9),
        (9, 1),
        (2, 7),
        (8, 7),
    ];
    for name in ENGINES {
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.insert(root, &[1]);
        for (a, b) in edges {
            e.insert(edge, &[a, b]);
        }
        e.commit().expect("commit");
        // As Soufflé 2.5 chooses (its tests/souffle/choice_recursive case).
        let want: BTreeSet<Vec<Value>> = [[1, 1], [1, 2], [2, 3], [8, 5], [2, 7], [1, 8], [3, 9]]
            .iter()
            .map(|t| t.to_vec())
            .collect();
        assert_eq!(facts(e.as_ref(), "st"), want, "{name}");
        let at_rest = snapshot(e.as_ref());
        e.remove(edge, &[1, 8]);
        e.commit().expect("commit");
        let st = facts(e.as_ref(), "st");
        assert!(st.contains(&vec![3, 5]), "{name}: {st:?}");
        assert!(
            st.iter().all(|t| t[1] != 8),
            "{name}: 8 is not reached: {st:?}"
        );
        e.insert(edge, &[1, 8]);
        e.commit().expect("commit");
        assert_same(&p, &snapshot(e.as_ref()), &at_rest, name);
    }
}

#[test]
fn making_the_choice_recursive_and_back_live_on_every_engine() {
    // Without the recursive rule, the choice is the smallest candidate of each node
    // (one aggregate); with it, round by round. Each program is checked against the
    // reference engine from scratch, and the changes against the difference.
    let flat = ".decl edge(x: number, y: number)\n\
        .decl st(parent: number, node: number) choice-domain node\n\
        st(x, y) :- edge(x, y), x < 3.\n";
    let deep = format!("{flat}st(x, y) :- st(_, x), edge(x, y).\n");
    let edges: Vec<[Value; 2]> = (0..20)
        .flat_map(|i| [[i, (i * 7 + 3) % 20], [i, (i * 3 + 1) % 20]])
        .collect();
    for name in ENGINES {
        let first = program(flat);
        let edge = first.relation_id("edge").expect("declared");
        let mut e = create(&Config::new(name, 2), first.clone()).expect("engine");
        e.track_changes(true);
        for t in &edges {
            e.insert(edge, t);
        }
        e.commit().expect("commit");
        let base: Vec<(RelId, Vec<Value>)> = edges.iter().map(|t| (edge, t.to_vec())).collect();
        let mut previous = first;
        let mut before = snapshot(e.as_ref());
        for (round, text) in [deep.as_str(), flat, deep.as_str()].into_iter().enumerate() {
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
            let st = facts(e.as_ref(), "st");
            let nodes: BTreeSet<Value> = st.iter().map(|t| t[1]).collect();
            assert_eq!(
                nodes.len(),
                st.len(),
                "{context}: one parent a node: {st:?}"
            );
            if text != flat {
                assert!(st.len() > 10, "{context}: {st:?}");
            }
            previous = next;
            before = now;
        }
    }
}
