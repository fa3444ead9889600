//! Helpers shared by the engines' tests: build programs from text, compare
//! the engine with the semi-naive reference.

#![allow(dead_code)]

use dynalog_analysis::{Program, RelId, SymbolTable, Value};
use dynalog_engines::Engine;
use dynalog_engines::seminaive::Seminaive;
use dynalog_syntax::SourceFile;
use std::collections::BTreeSet;

/// Parse and check a program text (panics with the diagnostic on an error).
pub fn program(text: &str) -> Program {
    try_program(text, SymbolTable::new()).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Parse and check, interning into `symbols`; `Err` with the message on an error.
pub fn try_program(text: &str, symbols: SymbolTable) -> Result<Program, String> {
    try_next_program(text, symbols, &[])
}

/// [`try_program`] for a program that replaces one with the relations `previous`
/// (which keep their ids: see `dynalog_analysis::Options::previous`).
pub fn try_next_program(
    text: &str,
    symbols: SymbolTable,
    previous: &[dynalog_analysis::Relation],
) -> Result<Program, String> {
    let file = SourceFile::new("test.dl", text.to_string());
    let ast = dynalog_syntax::parse(&file).map_err(|d| format!("{d:?}"))?;
    let options = dynalog_analysis::Options {
        previous: previous.to_vec(),
    };
    dynalog_analysis::analyse_with(&file, &ast, symbols, &options).map_err(|d| format!("{d:?}"))
}

pub type Db = Vec<BTreeSet<Vec<Value>>>;

/// Every relation of an engine, as sets (empty for the internal relations of
/// aggregates, whose contents engines may keep or not).
pub fn snapshot(engine: &dyn Engine) -> Db {
    let p = engine.program();
    (0..p.relations.len())
        .map(|r| {
            if p.relations[r].is_internal() {
                BTreeSet::new()
            } else {
                engine.facts(r as RelId).into_iter().collect()
            }
        })
        .collect()
}

/// The changes from `old` to `new`, as a sorted list of (relation, tuple, diff).
pub fn difference(old: &Db, new: &Db) -> Vec<(RelId, Vec<Value>, isize)> {
    let mut out = Vec::new();
    let empty = BTreeSet::new();
    for r in 0..old.len().max(new.len()) {
        let o = old.get(r).unwrap_or(&empty);
        let n = new.get(r).unwrap_or(&empty);
        out.extend(o.difference(n).map(|t| (r as RelId, t.clone(), -1)));
        out.extend(n.difference(o).map(|t| (r as RelId, t.clone(), 1)));
    }
    out.sort();
    out
}

/// The engine's last changes, sorted.
pub fn changes(engine: &dyn Engine) -> Vec<(RelId, Vec<Value>, isize)> {
    changes_since(engine, engine.program())
}

/// [`changes`] of a commit that replaced the program `previous`: a relation the new
/// program dropped (an implicit one whose rules went, or the internal relations of an
/// aggregate that went last) is named by `previous`.
pub fn changes_since(engine: &dyn Engine, previous: &Program) -> Vec<(RelId, Vec<Value>, isize)> {
    let p = engine.program();
    let internal = |r: RelId| {
        p.relations
            .get(r as usize)
            .or_else(|| previous.relations.get(r as usize))
            .is_some_and(|rel| rel.is_internal())
    };
    let mut c: Vec<_> = engine
        .last_changes()
        .iter()
        .filter(|(r, _, _)| !internal(*r))
        .map(|(r, t, d)| (r, t.to_vec(), d))
        .collect();
    c.sort();
    c
}

/// Reference result from scratch: a fresh semi-naive engine over `program` and `base`.
/// `base` includes the inline facts still present (the program's own are ignored).
pub fn reference(program: &Program, base: &[(RelId, Vec<Value>)]) -> Db {
    snapshot(&reference_engine(program, base))
}

/// [`reference`] with the internal relations of aggregates too.
pub fn reference_full(program: &Program, base: &[(RelId, Vec<Value>)]) -> Db {
    let s = reference_engine(program, base);
    (0..program.relations.len())
        .map(|r| s.facts(r as RelId).into_iter().collect())
        .collect()
}

fn reference_engine(program: &Program, base: &[(RelId, Vec<Value>)]) -> Seminaive {
    let mut p = program.clone();
    p.facts.clear();
    let mut s = Seminaive::new(p);
    for (r, t) in base {
        s.insert(*r, t);
    }
    s.commit().expect("the reference evaluates");
    s
}

/// Assert that two materializations are equal, relation by relation, with names.
pub fn assert_same(program: &Program, got: &Db, want: &Db, context: &str) {
    for (i, rel) in program.relations.iter().enumerate() {
        let empty = BTreeSet::new();
        let g = got.get(i).unwrap_or(&empty);
        let w = want.get(i).unwrap_or(&empty);
        if g != w {
            let missing: Vec<_> = w.difference(g).take(5).collect();
            let extra: Vec<_> = g.difference(w).take(5).collect();
            panic!(
                "relation {} differs ({context}): {} facts, want {}; missing {missing:?}, extra {extra:?}",
                rel.name,
                g.len(),
                w.len()
            );
        }
    }
}

/// Read a tab-separated fact file of symbols into tuples, interning into `symbols`.
pub fn read_symbol_facts(path: &str, symbols: &mut SymbolTable) -> Option<Vec<Vec<Value>>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(|s| symbols.intern(s)).collect())
            .collect(),
    )
}

/// The facts of relation `rel` of an engine, as a set.
pub fn facts(e: &dyn Engine, rel: &str) -> BTreeSet<Vec<Value>> {
    let id = e.program().relation_id(rel).expect("declared");
    e.facts(id).into_iter().collect()
}

/// A small deterministic generator for the tests' random steps (a linear
/// congruential one: the same sequence on every machine).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// After a commit of `e` (which tracks its changes): its materialization equals the
/// reference's from scratch over `base`, and its reported changes the difference from
/// `before`, the materialization of the commit before. Returns the new one.
pub fn check_commit(
    e: &dyn Engine,
    program: &Program,
    base: &[(RelId, Vec<Value>)],
    before: &Db,
    context: &str,
) -> Db {
    let now = snapshot(e);
    assert_same(program, &now, &reference(program, base), context);
    assert_eq!(changes(e), difference(before, &now), "{context}: changes");
    now
}
