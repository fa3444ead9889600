//! The differential engine on small example programs, compared with the semi-naive
//! reference after every commit, with 1 and 2 workers.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{Program, RelId, Value};
use dynalog_engines::Engine;
use dynalog_engines::diff::Diff;

const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";

const SG: &str = ".decl parent(c: number, p: number)\n.decl sg(x: number, y: number)\n\
sg(x, y) :- parent(x, p), parent(y, p), x != y.\n\
sg(x, y) :- parent(x, px), parent(y, py), sg(px, py), x != y.\n";

const NEG: &str = ".decl edge(a: number, b: number)\n.decl sink(n: number)\n\
.decl node(n: number)\n.decl reach(a: number, b: number)\n.decl stuck(n: number)\n\
.decl disconnected(a: number, b: number)\n\
node(a) :- edge(a, _).\nnode(b) :- edge(_, b).\n\
reach(a, b) :- edge(a, b).\nreach(a, c) :- reach(a, b), edge(b, c).\n\
stuck(n) :- node(n), !sink(n), !reach(n, s), sink(s).\n\
disconnected(a, b) :- node(a), node(b), a != b, !reach(a, b), !reach(b, a).\n";

const ARITH: &str = ".decl edge(x: number, y: number)\n\
edge(1, 2). edge(2, 3). edge(3, 4). edge(4, 5). edge(1, 3).\n\
.decl hops(x: number, y: number, n: number)\n\
hops(x, y, 1) :- edge(x, y).\n\
hops(x, z, n + 1) :- hops(x, y, n), edge(y, z), n < 3.\n\
.decl within(x: number, y: number)\nwithin(x, y) :- hops(x, y, n), n <= 2.\n\
.decl square(n: number, sq: number, half: float, parity: symbol)\n\
square(n, n * n, h, \"even\") :- edge(n, _), n % 2 = 0, h = 0.5.\n\
square(n, n * n, h, \"odd\") :- edge(n, _), n % 2 != 0, h = -1.25.\n\
.decl divs(x: number, q: number)\ndivs(x, q) :- edge(x, y), q = x / (y - 3).\n";

const RHODF: &str = "T(?y, rdf:type, ?x) <- [T(?a, rdfs:domain, ?x), T(?y, ?a, ?z)]\n\
T(?z, rdf:type, ?x) <- [T(?a, rdfs:range, ?x), T(?y, ?a, ?z)]\n\
T(?x, rdfs:subPropertyOf, ?z) <- [T(?x, rdfs:subPropertyOf, ?y), T(?y, rdfs:subPropertyOf, ?z)]\n\
T(?x, rdfs:subClassOf, ?z) <- [T(?x, rdfs:subClassOf, ?y), T(?y, rdfs:subClassOf, ?z)]\n\
T(?z, rdf:type, ?y) <- [T(?x, rdfs:subClassOf, ?y), T(?z, rdf:type, ?x)]\n\
T(?x, ?b, ?y) <- [T(?a, rdfs:subPropertyOf, ?b), T(?x, ?a, ?y)]";

/// Run a sequence of commits (each a list of (insert?, relation name, tuple)) on the
/// engine and compare with the reference after each.
fn run(text: &str, workers: usize, commits: &[Vec<(bool, &str, Vec<Value>)>]) {
    let program = program(text);
    let mut engine = Diff::new(program.clone(), workers).expect("starts");
    engine.track_changes(true);
    let mut base: Vec<(RelId, Vec<Value>)> = program.facts.clone();
    let mut previous = vec![Default::default(); program.relations.len()];
    for (n, commit) in commits.iter().enumerate() {
        for (insert, name, tuple) in commit {
            let rel = program.relation_id(name).expect("relation");
            if *insert {
                engine.insert(rel, tuple);
                if !base.contains(&(rel, tuple.clone())) {
                    base.push((rel, tuple.clone()));
                }
            } else {
                engine.remove(rel, tuple);
                base.retain(|(r, t)| !(*r == rel && t == tuple));
            }
        }
        engine.commit().expect("commits");
        let want = reference(&program, &base);
        let got = snapshot(&engine);
        assert_same(
            &program,
            &got,
            &want,
            &format!("commit {n}, {workers} workers"),
        );
        assert_eq!(
            changes(&engine),
            difference(&previous, &want),
            "changes of commit {n}"
        );
        previous = want;
    }
}

fn ins(name: &str, t: &[Value]) -> (bool, &'static str, Vec<Value>) {
    (
        true,
        Box::leak(name.to_string().into_boxed_str()),
        t.to_vec(),
    )
}
fn del(name: &str, t: &[Value]) -> (bool, &'static str, Vec<Value>) {
    (
        false,
        Box::leak(name.to_string().into_boxed_str()),
        t.to_vec(),
    )
}

fn chain_and_cycle() -> Vec<Vec<(bool, &'static str, Vec<Value>)>> {
    vec![
        vec![
            ins("edge", &[1, 2]),
            ins("edge", &[2, 3]),
            ins("edge", &[3, 4]),
        ],
        vec![ins("edge", &[4, 1])],
        vec![del("edge", &[2, 3])],
        vec![
            ins("edge", &[2, 3]),
            del("edge", &[4, 1]),
            ins("edge", &[5, 5]),
        ],
        vec![
            del("edge", &[1, 2]),
            del("edge", &[2, 3]),
            del("edge", &[3, 4]),
            del("edge", &[5, 5]),
        ],
        vec![ins("edge", &[7, 8]), del("edge", &[7, 8])],
    ]
}

#[test]
fn transitive_closure() {
    for w in [1, 2] {
        run(TC, w, &chain_and_cycle());
    }
}

#[test]
fn same_generation() {
    let commits = vec![
        vec![
            ins("parent", &[1, 10]),
            ins("parent", &[2, 10]),
            ins("parent", &[3, 11]),
        ],
        vec![
            ins("parent", &[10, 100]),
            ins("parent", &[11, 100]),
            ins("parent", &[4, 11]),
        ],
        vec![del("parent", &[10, 100])],
        vec![ins("parent", &[10, 100]), del("parent", &[2, 10])],
    ];
    for w in [1, 2] {
        run(SG, w, &commits);
    }
}

#[test]
fn stratified_negation() {
    let commits = vec![
        vec![
            ins("edge", &[1, 2]),
            ins("edge", &[2, 3]),
            ins("sink", &[3]),
        ],
        vec![ins("edge", &[4, 5]), ins("edge", &[3, 1])],
        vec![del("sink", &[3]), ins("sink", &[5])],
        vec![del("edge", &[3, 1]), ins("edge", &[5, 4])],
        vec![
            del("edge", &[1, 2]),
            del("edge", &[2, 3]),
            del("edge", &[4, 5]),
            del("edge", &[5, 4]),
        ],
    ];
    for w in [1, 2] {
        run(NEG, w, &commits);
    }
}

#[test]
fn arithmetic_and_division_by_zero() {
    let commits = vec![
        vec![],
        vec![ins("edge", &[6, 3]), ins("edge", &[5, 6])],
        vec![del("edge", &[1, 2]), del("edge", &[6, 3])],
    ];
    for w in [1, 2] {
        run(ARITH, w, &commits);
    }
}

#[test]
fn rhodf_in_the_paper_syntax() {
    let program = program(RHODF);
    let symbols = program.symbols.clone();
    let s = |x: &str| symbols.intern(x);
    let triples = [
        ("worksFor", "rdfs:domain", "Person"),
        ("worksFor", "rdfs:range", "Org"),
        ("headOf", "rdfs:subPropertyOf", "worksFor"),
        ("Person", "rdfs:subClassOf", "Agent"),
        ("Agent", "rdfs:subClassOf", "Thing"),
        ("alice", "headOf", "acme"),
        ("bob", "worksFor", "acme"),
    ];
    let facts: Vec<Vec<Value>> = triples
        .iter()
        .map(|(a, b, c)| vec![s(a), s(b), s(c)])
        .collect();
    let t = |f: &[Value]| (true, "T", f.to_vec());
    let d = |f: &[Value]| (false, "T", f.to_vec());
    let commits = vec![
        facts.iter().map(|f| t(f)).collect::<Vec<_>>(),
        vec![d(&facts[2])],
        vec![t(&facts[2]), d(&facts[3])],
        facts.iter().map(|f| d(f)).collect(),
    ];
    // Symbols interned above are not in the program's table, but values are just ids.
    for w in [1, 2] {
        run(RHODF, w, &commits);
    }
}

#[test]
fn inline_facts_and_insert_of_derived_relation() {
    let text = format!("{TC}edge(1, 2). edge(2, 3).\n");
    let commits = vec![
        vec![],
        vec![ins("path", &[9, 9]), ins("path", &[1, 3])],
        vec![del("path", &[1, 3]), del("edge", &[1, 2])],
        vec![del("path", &[9, 9]), ins("edge", &[1, 2])],
    ];
    for w in [1, 2] {
        run(&text, w, &commits);
    }
}

#[test]
fn drop_shuts_down_cleanly() {
    for w in [1, 2, 3] {
        let p: Program = program(TC);
        let e = Diff::new(p.clone(), w).expect("starts");
        drop(e);
        let mut e = Diff::new(p, w).expect("starts");
        e.insert(0, &[1, 2]);
        e.commit().expect("commits");
        assert_eq!(e.len(1), 1);
    }
}

#[test]
fn changes_are_recorded_only_when_tracked() {
    let mut e = Diff::new(program(TC), 1).expect("starts");
    e.insert(0, &[1, 2]);
    e.commit().expect("commits");
    assert_eq!(e.len(1), 1);
    assert!(e.last_changes().is_empty(), "not tracked: nothing recorded");
    e.track_changes(true);
    e.insert(0, &[2, 3]);
    e.commit().expect("commits");
    // +edge(2,3), +path(2,3), +path(1,3)
    assert_eq!(e.last_changes().len(), 3);
    e.track_changes(false);
    assert!(e.last_changes().is_empty());
}
