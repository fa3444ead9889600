//! Limits per transaction ([`dynalog_engines::Limits`]), for every engine: a commit over
//! the limit of changes or of time is refused with an error naming the limit, the
//! engine is then exactly as before the transaction (every relation, the program), and
//! the next transactions work and agree with the reference.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{Program, RelId, Value};
use dynalog_engines::{Engine, LimitExceeded, Limits};
use std::time::Duration;

const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                  path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";

/// Base facts, with their relation.
type Facts = Vec<(RelId, Vec<Value>)>;

/// An engine over `text` with the edges of a chain `0 -> 1 -> .. -> n`, committed
/// without limits; and the base facts it holds.
fn chain(name: &str, text: &str, n: u32) -> (Box<dyn Engine>, Program, Facts) {
    let p = program(text);
    let edge = p.relation_id("edge").expect("edge");
    let mut e =
        dynalog_engines::create(&dynalog_engines::Config::new(name, 2), p.clone()).expect("engine");
    e.track_changes(true);
    let mut base = Vec::new();
    for i in 0..n {
        e.insert(edge, &[i, i + 1]);
        base.push((edge, vec![i, i + 1]));
    }
    e.commit().expect("the load is not limited");
    assert_eq!(snapshot(e.as_ref()), reference(&p, &base), "{name}: load");
    (e, p, base)
}

fn changes_limit(n: u64) -> Limits {
    Limits {
        max_changes: Some(n),
        max_time: None,
    }
}

/// Commit, expecting a refusal for `limit`; then check that nothing changed.
fn refused(e: &mut dyn Engine, before: &Db, rules: usize, limit: LimitExceeded, what: &str) {
    let name = e.name();
    let err = e.commit().expect_err("over the limit");
    assert_eq!(err.limit(), Some(limit), "{name}: {what}: {err}");
    assert!(err.to_string().contains("limit"), "{name}: {err}");
    assert_eq!(&snapshot(e), before, "{name}: {what}: rolled back");
    assert_eq!(e.program().rules.len(), rules, "{name}: {what}: program");
}

/// A normal transaction after a refusal: agrees with the reference.
fn goes_on(e: &mut dyn Engine, p: &Program, base: &mut Vec<(RelId, Vec<Value>)>, what: &str) {
    let name = e.name();
    let edge = p.relation_id("edge").expect("edge");
    let before = snapshot(e);
    e.insert(edge, &[5000, 5001]);
    e.insert(edge, &[5001, 5002]);
    base.push((edge, vec![5000, 5001]));
    base.push((edge, vec![5001, 5002]));
    e.commit().expect("a small transaction passes");
    let want = reference(p, base);
    assert_eq!(snapshot(e), want, "{name}: {what}: next transaction");
    assert_eq!(
        changes(e),
        difference(&before, &want),
        "{name}: {what}: changes"
    );
}

#[test]
fn facts_over_the_limit_of_changes_are_refused_and_rolled_back() {
    for name in dynalog_engines::ENGINE_NAMES {
        let n = if *name == "chibi" { 80 } else { 200 };
        let (mut e, p, mut base) = chain(name, TC, n);
        let edge = p.relation_id("edge").expect("edge");
        let rules = p.rules.len();
        e.set_limits(changes_limit(1000)).expect("limits");
        // Closing the cycle makes every node reach every node: n² facts.
        let before = snapshot(e.as_ref());
        e.insert(edge, &[n, 0]);
        refused(
            e.as_mut(),
            &before,
            rules,
            LimitExceeded::Changes(1000),
            "cycle",
        );
        // Cutting the chain in the middle removes a quarter of the closure.
        e.remove(edge, &[n / 2, n / 2 + 1]);
        refused(
            e.as_mut(),
            &before,
            rules,
            LimitExceeded::Changes(1000),
            "cut",
        );
        goes_on(e.as_mut(), &p, &mut base, "after facts");
        // A transaction just under the limit passes: a new chain of 40 edges adds
        // 40 edges and 820 paths.
        for i in 0..40 {
            e.insert(edge, &[10_000 + i, 10_001 + i]);
            base.push((edge, vec![10_000 + i, 10_001 + i]));
        }
        e.commit().expect("860 changes pass a limit of 1000");
        assert_eq!(snapshot(e.as_ref()), reference(&p, &base), "{name}: under");
    }
}

#[test]
fn a_rule_over_the_limit_of_changes_is_refused_with_its_facts() {
    for name in dynalog_engines::ENGINE_NAMES {
        let n = if *name == "chibi" { 80 } else { 200 };
        let (mut e, p, mut base) = chain(name, TC, n);
        let edge = p.relation_id("edge").expect("edge");
        e.set_limits(changes_limit(1000)).expect("limits");
        // A cross product of the edges' sources and targets, and a fact with it.
        let bigger = program(&format!("{TC}path(x, y) :- edge(x, _), edge(_, y).\n"));
        let before = snapshot(e.as_ref());
        e.set_program(bigger);
        e.insert(edge, &[7000, 7001]);
        refused(
            e.as_mut(),
            &before,
            p.rules.len(),
            LimitExceeded::Changes(1000),
            "rule",
        );
        goes_on(e.as_mut(), &p, &mut base, "after a rule");
        // Removing limits lets the same rule in.
        e.set_limits(Limits::NONE).expect("no limits");
        let bigger = program(&format!("{TC}path(x, y) :- edge(x, _), edge(_, y).\n"));
        e.set_program(bigger.clone());
        e.commit().expect("unlimited");
        assert_eq!(
            snapshot(e.as_ref()),
            reference(&bigger, &base),
            "{name}: unlimited"
        );
    }
}

#[test]
fn a_rule_change_that_deletes_over_the_limit_is_refused() {
    for name in dynalog_engines::ENGINE_NAMES {
        let n = if *name == "chibi" { 80 } else { 200 };
        let (mut e, p, mut base) = chain(name, TC, n);
        e.set_limits(changes_limit(1000)).expect("limits");
        // Without the recursive rule most paths go; the new rule's three atoms need a
        // wider dataflow than the program had (the differential engine rebuilds it:
        // the facts it deletes must count although the new dataflow never sees them).
        let smaller = program(
            ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
             path(x, y) :- edge(x, y).\n\
             path(x, w) :- edge(x, y), edge(y, z), edge(z, w), x = 0.\n",
        );
        let before = snapshot(e.as_ref());
        e.set_program(smaller.clone());
        refused(
            e.as_mut(),
            &before,
            p.rules.len(),
            LimitExceeded::Changes(1000),
            "deleting rule change",
        );
        goes_on(e.as_mut(), &p, &mut base, "after a deleting rule change");
        e.set_limits(Limits::NONE).expect("no limits");
        e.set_program(smaller.clone());
        e.commit().expect("unlimited");
        assert_eq!(
            snapshot(e.as_ref()),
            reference(&smaller, &base),
            "{name}: unlimited"
        );
    }
}

#[test]
fn a_long_commit_is_refused_by_the_time_limit_and_rolled_back() {
    // Without the recursive rule, loading is quick; adding it derives the closure of a
    // long chain (n²/2 facts), which takes far longer than the limit with every engine.
    let text = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                path(x, y) :- edge(x, y).\n";
    for name in dynalog_engines::ENGINE_NAMES {
        let n = if *name == "chibi" { 400 } else { 3000 };
        let (mut e, p, mut base) = chain(name, text, n);
        e.set_limits(Limits {
            max_changes: None,
            max_time: Some(Duration::from_millis(10)),
        })
        .expect("limits");
        let before = snapshot(e.as_ref());
        e.set_program(program(&format!(
            "{text}path(x, z) :- path(x, y), edge(y, z).\n"
        )));
        refused(
            e.as_mut(),
            &before,
            p.rules.len(),
            LimitExceeded::Time(Duration::from_millis(10)),
            "closure",
        );
        e.set_limits(Limits::NONE).expect("no limits");
        goes_on(e.as_mut(), &p, &mut base, "after the time limit");
    }
}

#[test]
fn the_first_commit_can_be_refused_too() {
    // Engines limit every commit they are given (the live layer exempts the first).
    for name in dynalog_engines::ENGINE_NAMES {
        let p = program(&format!("{TC}edge(1, 2).\nedge(2, 3).\n"));
        let edge = p.relation_id("edge").expect("edge");
        let mut e = dynalog_engines::create(&dynalog_engines::Config::new(name, 1), p.clone())
            .expect("engine");
        e.track_changes(true);
        e.set_limits(changes_limit(3)).expect("limits");
        e.insert(edge, &[3, 4]);
        let err = e.commit().expect_err("6 edges and paths over 3");
        assert_eq!(err.limit(), Some(LimitExceeded::Changes(3)), "{name}");
        // Nothing is materialized yet (`diff` read its stopped workers' tables here).
        let path = p.relation_id("path").expect("path");
        assert_eq!((e.len(edge), e.len(path)), (0, 0), "{name}: refused");
        assert!(!e.contains(edge, &[1, 2]), "{name}: refused");
        e.set_limits(changes_limit(5)).expect("limits");
        // The inline facts are still there (2 edges, 3 paths): within 5.
        e.commit().expect("the inline facts alone");
        let base = p.facts.clone();
        assert_eq!(snapshot(e.as_ref()), reference(&p, &base), "{name}");
    }
}

#[test]
fn progress_counts_a_commits_changes_and_starts_at_zero_with_the_next() {
    for name in dynalog_engines::ENGINE_NAMES {
        let n = if *name == "chibi" { 80 } else { 200 };
        let (mut e, p, _) = chain(name, TC, n);
        let edge = p.relation_id("edge").expect("edge");
        let progress = e
            .progress()
            .unwrap_or_else(|| panic!("{name}: the engine counts no progress"));
        // Raised while the load was evaluated: a lower bound of its changes (every
        // fact), and more than its base facts (paths were derived).
        let load = progress.load(std::sync::atomic::Ordering::Relaxed);
        let facts = e.total_len();
        assert!(
            load > u64::from(n) && load <= facts,
            "{name}: {load} of {facts}"
        );
        // A commit that changes nothing counts nothing.
        e.commit().expect("an empty commit");
        assert_eq!(
            progress.load(std::sync::atomic::Ordering::Relaxed),
            0,
            "{name}"
        );
        // A longer chain: the new edge and the paths to its end.
        e.insert(edge, &[n, n + 1]);
        e.commit().expect("one more edge");
        let made = changes(e.as_ref()).len() as u64;
        let counted = progress.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            counted > 0 && counted <= made,
            "{name}: {counted} of {made}"
        );
    }
}
