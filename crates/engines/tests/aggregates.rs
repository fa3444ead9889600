//! Aggregates maintained under insertions and deletions by every engine: a deleted
//! maximum falls back to the next value, a group that empties reads 0 for `count` and
//! `sum` and disappears for `min`, and a rule change adds and retracts an aggregate.

mod diff_common;

use diff_common::*;
use dynalog_analysis::Value;
use dynalog_engines::{Config, Engine, create};

const PROGRAM: &str = ".decl v(g: number, x: number)\n.decl g(g: number)\n\
.decl top(g: number, m: number)\n.decl n(g: number, c: number)\n.decl s(g: number, t: number)\n\
top(g, m) :- g(g), m = max x : { v(g, x) }.\n\
n(g, c) :- g(g), c = count : { v(g, _) }.\n\
s(g, t) :- g(g), t = sum x : v(g, x).\n";

fn facts(e: &dyn Engine, rel: &str) -> Vec<Vec<Value>> {
    let id = e.program().relation_id(rel).expect("declared");
    let mut f = e.facts(id);
    f.sort();
    f
}

#[test]
fn a_deleted_max_falls_back_to_the_next_on_every_engine() {
    for name in ["seminaive", "diff", "relational", "chibi", "remat"] {
        let p = program(PROGRAM);
        let (v, g) = (p.relation_id("v").unwrap(), p.relation_id("g").unwrap());
        let mut e = create(&Config::new(name, 2), p).expect("engine");
        e.insert(g, &[1]);
        for x in [3, 9, 5] {
            e.insert(v, &[1, x]);
        }
        e.commit().expect("commit");
        assert_eq!(facts(e.as_ref(), "top"), [vec![1, 9]], "{name}");
        assert_eq!(facts(e.as_ref(), "n"), [vec![1, 3]], "{name}");
        assert_eq!(facts(e.as_ref(), "s"), [vec![1, 17]], "{name}");
        e.remove(v, &[1, 9]);
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "top"),
            [vec![1, 5]],
            "{name}: max after a delete"
        );
        assert_eq!(facts(e.as_ref(), "n"), [vec![1, 2]], "{name}");
        assert_eq!(facts(e.as_ref(), "s"), [vec![1, 8]], "{name}");
        e.remove(v, &[1, 3]);
        e.remove(v, &[1, 5]);
        e.commit().expect("commit");
        assert!(
            facts(e.as_ref(), "top").is_empty(),
            "{name}: no max of nothing"
        );
        assert_eq!(
            facts(e.as_ref(), "n"),
            [vec![1, 0]],
            "{name}: count of nothing"
        );
        assert_eq!(
            facts(e.as_ref(), "s"),
            [vec![1, 0]],
            "{name}: sum of nothing"
        );
        e.insert(v, &[1, -4i32 as u32]);
        e.commit().expect("commit");
        assert_eq!(facts(e.as_ref(), "top"), [vec![1, -4i32 as u32]], "{name}");
    }
}

#[test]
fn adding_and_removing_an_aggregate_rule() {
    for name in ["seminaive", "diff", "relational", "chibi", "remat"] {
        let base = ".decl v(g: number, x: number)\n.decl m(x: number)\nv(1, 4). v(2, 7).\n";
        let p = program(base);
        let mut e = create(&Config::new(name, 1), p.clone()).expect("engine");
        e.commit().expect("commit");
        let with = try_next_program(
            &format!("{base}m(x) :- x = max y : v(_, y).\n"),
            p.symbols.clone(),
            &p.relations,
        )
        .expect("valid");
        e.set_program(with.clone());
        e.commit().expect("commit");
        assert_eq!(facts(e.as_ref(), "m"), [vec![7]], "{name}");
        let without = try_next_program(base, with.symbols.clone(), &with.relations).expect("valid");
        // The aggregate's internal relations were the last: the program ends earlier.
        assert_eq!(without.relations.len(), p.relations.len());
        // With a new relation after them, they stay, empty, in their places.
        let other = try_next_program(
            &format!("{base}.decl w(x: number)\nw(x) :- v(x, _).\n"),
            with.symbols.clone(),
            &with.relations,
        )
        .expect("valid");
        assert_eq!(other.relations.len(), with.relations.len() + 1);
        assert_eq!(
            &other.relations[..with.relations.len()],
            &with.relations[..]
        );
        e.set_program(without);
        e.commit().expect("commit");
        assert!(facts(e.as_ref(), "m").is_empty(), "{name}");
    }
}
