//! `eqrel` relations maintained under insertions and deletions by every engine: the
//! analysis closes them with ordinary rules, so deleting the base pair that joined two
//! classes splits them again, and a pair still derivable another way stays.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{RelId, Value};
use dynalog_engines::{Config, create};
use std::collections::BTreeSet;

const ENGINES: [&str; 5] = ["seminaive", "diff", "relational", "chibi", "remat"];

const PROGRAM: &str = ".decl e(x: number, y: number)\n.decl r(x: number, y: number) eqrel\n\
.decl big(x: number)\n\
r(x, y) :- e(x, y).\n\
big(x) :- r(x, y), y >= 100.\n";

/// Every pair of each class (the equivalence relation the classes make).
fn classes(of: &[&[Value]]) -> BTreeSet<Vec<Value>> {
    of.iter()
        .flat_map(|c| c.iter().flat_map(|&a| c.iter().map(move |&b| vec![a, b])))
        .collect()
}

/// The equivalence closure of `pairs`, computed independently of the engines.
fn closure(pairs: &BTreeSet<(Value, Value)>) -> BTreeSet<Vec<Value>> {
    let mut parent: std::collections::BTreeMap<Value, Value> = Default::default();
    fn find(parent: &mut std::collections::BTreeMap<Value, Value>, x: Value) -> Value {
        let p = *parent.entry(x).or_insert(x);
        if p == x {
            return x;
        }
        let root = find(parent, p);
        parent.insert(x, root);
        root
    }
    for &(a, b) in pairs {
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        parent.insert(ra, rb);
    }
    let elems: Vec<Value> = parent.keys().copied().collect();
    let roots: Vec<Value> = elems.iter().map(|&x| find(&mut parent, x)).collect();
    let mut out = BTreeSet::new();
    for (i, &a) in elems.iter().enumerate() {
        for (j, &b) in elems.iter().enumerate() {
            if roots[i] == roots[j] {
                out.insert(vec![a, b]);
            }
        }
    }
    out
}

#[test]
fn deleting_the_pair_that_joined_two_classes_splits_them_on_every_engine() {
    for name in ENGINES {
        let p = program(PROGRAM);
        let (e_id, r_id) = (p.relation_id("e").unwrap(), p.relation_id("r").unwrap());
        let mut e = create(&Config::new(name, 2), p).expect("engine");
        for (a, b) in [(1, 2), (3, 2), (4, 5), (5, 100)] {
            e.insert(e_id, &[a, b]);
        }
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "r"),
            classes(&[&[1, 2, 3], &[4, 5, 100]]),
            "{name}"
        );
        assert_eq!(facts(e.as_ref(), "big").len(), 3, "{name}");
        // The bridge: one class.
        e.insert(e_id, &[3, 4]);
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "r"),
            classes(&[&[1, 2, 3, 4, 5, 100]]),
            "{name}"
        );
        assert_eq!(facts(e.as_ref(), "big").len(), 6, "{name}");
        // Without it, two again: every pair derived through it is retracted.
        e.remove(e_id, &[3, 4]);
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "r"),
            classes(&[&[1, 2, 3], &[4, 5, 100]]),
            "{name}: after deleting the bridge"
        );
        assert_eq!(facts(e.as_ref(), "big").len(), 3, "{name}");
        // A pair given directly and also derived: deleting one support keeps it.
        e.insert(r_id, &[2, 1]);
        e.commit().expect("commit");
        e.remove(e_id, &[1, 2]);
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "r"),
            classes(&[&[1, 2, 3], &[4, 5, 100]]),
            "{name}: 2 ~ 1 still given"
        );
        e.remove(r_id, &[2, 1]);
        e.commit().expect("commit");
        assert_eq!(
            facts(e.as_ref(), "r"),
            classes(&[&[2, 3], &[4, 5, 100]]),
            "{name}: 1 is in no pair any more"
        );
    }
}

#[test]
fn random_updates_keep_the_equivalence_closure_on_every_engine() {
    for name in ENGINES {
        let p = program(PROGRAM);
        let (e_id, r_id) = (p.relation_id("e").unwrap(), p.relation_id("r").unwrap());
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        let mut base: BTreeSet<(RelId, (Value, Value))> = BTreeSet::new();
        let mut rng = Lcg(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n);
        for step in 0..40 {
            for _ in 0..1 + next(4) {
                let rel = if next(4) == 0 { r_id } else { e_id };
                let t = (next(12) as Value, next(12) as Value);
                if base.contains(&(rel, t)) && next(2) == 0 {
                    base.remove(&(rel, t));
                    e.remove(rel, &[t.0, t.1]);
                } else {
                    base.insert((rel, t));
                    e.insert(rel, &[t.0, t.1]);
                }
            }
            e.commit().expect("commit");
            let pairs: BTreeSet<(Value, Value)> = base.iter().map(|&(_, t)| t).collect();
            assert_eq!(
                facts(e.as_ref(), "r"),
                closure(&pairs),
                "{name}, step {step}"
            );
            let listed: Vec<(RelId, Vec<Value>)> =
                base.iter().map(|&(r, t)| (r, vec![t.0, t.1])).collect();
            assert_same(
                &p,
                &snapshot(e.as_ref()),
                &reference(&p, &listed),
                &format!("{name}, step {step}"),
            );
        }
    }
}
