//! The paper's E, E+, E- protocol: load x% of the input, insert the rest, delete it
//! again: the materialization must equal the one after the load, fact for fact.

mod diff_common;

use diff_common::*;
use dynalog_analysis::{RelId, Value};
use dynalog_engines::Engine;
use dynalog_engines::diff::Diff;

const TC: &str = "tc(?x, ?y) <- [a(?x, ?y)]\ntc(?x, ?z) <- [tc(?x, ?y), a(?y, ?z)]";

/// Load `percent`% of `lines` into `rel`, insert the rest, delete it; check the round
/// trip and (when `check_reference`) compare every state with the reference.
fn round_trip(
    text: &str,
    rel: &str,
    lines: &[Vec<Value>],
    percent: usize,
    workers: usize,
    check_reference: bool,
) {
    // Set semantics: a line repeated in the inserted part would delete the loaded one.
    let mut seen = std::collections::HashSet::new();
    let lines: Vec<Vec<Value>> = lines.iter().filter(|l| seen.insert(*l)).cloned().collect();
    let lines = &lines[..];
    let program = program(text);
    let rel: RelId = program.relation_id(rel).expect("relation");
    let mut engine = Diff::new(program.clone(), workers).expect("starts");
    engine.track_changes(true);
    let cut = lines.len() * percent / 100;
    for l in &lines[..cut] {
        engine.insert(rel, l);
    }
    engine.commit().expect("E");
    let after_load = snapshot(&engine);
    let base: Vec<(RelId, Vec<Value>)> = lines[..cut].iter().map(|l| (rel, l.clone())).collect();
    if check_reference {
        assert_same(
            &program,
            &after_load,
            &reference(&program, &base),
            "after E",
        );
    }
    for l in &lines[cut..] {
        engine.insert(rel, l);
    }
    engine.commit().expect("E+");
    if check_reference {
        let all: Vec<(RelId, Vec<Value>)> = lines.iter().map(|l| (rel, l.clone())).collect();
        assert_same(
            &program,
            &snapshot(&engine),
            &reference(&program, &all),
            "after E+",
        );
    }
    let inserted = changes(&engine);
    for l in &lines[cut..] {
        engine.remove(rel, l);
    }
    engine.commit().expect("E-");
    assert_same(
        &program,
        &snapshot(&engine),
        &after_load,
        "after E- (round trip)",
    );
    // The deletion reports exactly the inverse of the insertion.
    let mut deleted = changes(&engine);
    for c in &mut deleted {
        c.2 = -c.2;
    }
    deleted.sort();
    assert_eq!(inserted, deleted, "E- undoes E+");
}

/// A skewed random graph (R-MAT-like): `edges` edges over `2^scale` nodes.
fn rmat(scale: u32, edges: usize, seed: u64) -> Vec<Vec<Value>> {
    let mut state = seed;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    (0..edges)
        .map(|_| {
            let (mut x, mut y) = (0, 0);
            for _ in 0..scale {
                let r = next() % 100;
                let (bx, by) = match r {
                    0..57 => (0, 0),
                    57..76 => (0, 1),
                    76..95 => (1, 0),
                    _ => (1, 1),
                };
                x = x * 2 + bx;
                y = y * 2 + by;
            }
            vec![x, y]
        })
        .collect()
}

#[test]
fn round_trip_generated_graph() {
    let lines = rmat(6, 300, 7);
    for (percent, workers) in [(90, 1), (50, 2), (99, 2)] {
        round_trip(TC, "a", &lines, percent, workers, true);
    }
}

fn paper_lines(path: &str) -> Option<Vec<Vec<Value>>> {
    // Symbols are interned in order of appearance; the values only need to be
    // consistent within the run.
    let mut symbols = Default::default();
    read_symbol_facts(path, &mut symbols)
}

/// The paper's inputs, when present (`/tmp/paper`, see shared/paper-data):
/// `cargo test --release -p dynalog-engines --test diff_round_trip -- --ignored`.
#[test]
#[ignore]
fn round_trip_paper_inputs() {
    let rdfs = std::fs::read_to_string("/work/shared/paper-data/rdfs.dl").ok();
    if let Some(lines) = paper_lines("/tmp/paper/rmat/a.facts") {
        for percent in [50, 90, 99] {
            round_trip(TC, "a", &lines, percent, 2, false);
        }
    } else {
        eprintln!("skipped RMAT-1k: /tmp/paper/rmat/a.facts not found");
    }
    match (paper_lines("/tmp/paper/lubm/T.facts"), rdfs) {
        (Some(lines), Some(rdfs)) => {
            for percent in [50, 90, 99] {
                round_trip(&rdfs, "T", &lines, percent, 2, false);
            }
        }
        _ => eprintln!("skipped LUBM1: input not found"),
    }
}
