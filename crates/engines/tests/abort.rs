//! [`Engine::abort`], for every engine: whatever is staged (fact insertions and
//! removals, a program change that adds a rule, a relation and inline facts, or one
//! that drops a relation) is discarded, the next commit changes nothing, and the
//! transactions after it work and agree with the reference. Before the first commit,
//! an abort keeps the program's inline facts.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{RelId, Value};
use dynalog_engines::{Config, ENGINE_NAMES, Engine, create};

const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                  path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n\
                  edge(1, 2).\n";

/// TC with one more rule, one more relation (after the others) and another inline fact.
const TC_MORE: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                       .decl loop(x: number)\n\
                       path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n\
                       path(x, x) :- edge(x, _).\nloop(x) :- path(x, x).\n\
                       edge(1, 2).\nedge(9, 9).\n";

/// Commit, expecting no change: the materialization is still `before`.
fn commit_changes_nothing(e: &mut dyn Engine, before: &Db, what: &str) {
    let name = e.name();
    e.commit().expect("commits");
    assert!(
        e.last_changes().is_empty(),
        "{name}: {what}: {:?}",
        e.last_changes()
    );
    assert_eq!(&snapshot(e), before, "{name}: {what}");
}

/// The staged fact changes of an engine.
fn staged(e: &dyn Engine) -> Vec<(bool, RelId, Vec<Value>)> {
    let mut out = Vec::new();
    e.for_each_staged(&mut |insert, rel, t| out.push((insert, rel, t.to_vec())));
    out
}

#[test]
fn abort_discards_facts_and_program_changes() {
    for name in ENGINE_NAMES {
        let p = program(TC);
        let edge = p.relation_id("edge").expect("edge");
        let mut e = create(&Config::new(name, 2), p.clone()).expect("engine");
        e.track_changes(true);
        assert!(!e.has_staged(), "{name}: inline facts are not staged");
        let mut base = vec![(edge, vec![1, 2])];
        e.insert(edge, &[2, 3]);
        base.push((edge, vec![2, 3]));
        e.commit().expect("commits");
        assert_eq!(snapshot(e.as_ref()), reference(&p, &base), "{name}: load");
        let before = snapshot(e.as_ref());

        // Facts only.
        e.insert(edge, &[3, 4]);
        e.remove(edge, &[1, 2]);
        assert_eq!(
            staged(e.as_ref()),
            vec![(true, edge, vec![3, 4]), (false, edge, vec![1, 2])],
            "{name}"
        );
        assert!(e.has_staged(), "{name}");
        e.abort();
        assert!(!e.has_staged(), "{name}: nothing staged after abort");
        commit_changes_nothing(e.as_mut(), &before, "facts");

        // Facts and a program with a new rule, relation and inline fact.
        e.insert(edge, &[3, 4]);
        e.set_program(program(TC_MORE));
        assert_eq!(e.program().relations.len(), 3, "{name}: staged program");
        e.remove(edge, &[2, 3]);
        e.abort();
        assert!(!e.has_staged(), "{name}");
        assert_eq!(e.program().relations.len(), 2, "{name}: program back");
        assert_eq!(e.program().rules.len(), 2, "{name}: rules back");
        commit_changes_nothing(e.as_mut(), &before, "facts and a program");

        // A program change committed, then one that drops its relation, aborted.
        e.set_program(program(TC_MORE));
        e.commit().expect("commits");
        let more = program(TC_MORE);
        let mut more_base = base.clone();
        more_base.push((edge, vec![9, 9]));
        assert_eq!(snapshot(e.as_ref()), reference(&more, &more_base), "{name}");
        let with_loop = snapshot(e.as_ref());
        assert_eq!(with_loop.len(), 3, "{name}");
        e.set_program(program(TC));
        e.insert(edge, &[4, 5]);
        e.abort();
        commit_changes_nothing(e.as_mut(), &with_loop, "a dropped relation");

        // The next transaction works and agrees with the reference.
        e.insert(edge, &[2, 1]);
        more_base.push((edge, vec![2, 1]));
        e.commit().expect("commits");
        assert_eq!(
            snapshot(e.as_ref()),
            reference(&more, &more_base),
            "{name}: after"
        );
    }
}

#[test]
fn abort_before_the_first_commit_keeps_the_inline_facts() {
    for name in ENGINE_NAMES {
        let p = program(TC);
        let edge = p.relation_id("edge").expect("edge");
        let mut e = create(&Config::new(name, 1), p.clone()).expect("engine");
        e.insert(edge, &[2, 3]);
        e.remove(edge, &[1, 2]);
        e.set_program(program(TC_MORE));
        e.abort();
        assert!(!e.has_staged(), "{name}");
        e.commit().expect("commits");
        assert_eq!(
            snapshot(e.as_ref()),
            reference(&p, &[(edge, vec![1, 2])]),
            "{name}"
        );
    }
}
