//! The relational engine: semi-naive evaluation on relational operators over indexed
//! relations, maintained incrementally by delete-rederive. One of the study's two
//! delete-rederive comparison reasoners (`--engine relational`).
//!
//! # Evaluation
//!
//! Every rule variant (see [`crate::dred`]: the body reordered so that the literal
//! reading a delta comes first) is compiled like the reference engine's rules and run
//! by the same runner (module [`crate::rules`]): a pipeline of joins, negations,
//! filters and assignments over a slot array, where a positive atom's columns bound by constants or earlier variables
//! select a probe of the relation's hash set (all columns bound), a lookup in a hash
//! index on the bound columns, or a scan. The delta atom scans its delta. The
//! materialization of each relation is a [`Store`] whose hash indexes are maintained on
//! every insertion and deletion, so they survive between commits.
//!
//! Rederivation needs one derivation per overdeleted fact: when the head's arguments are
//! all variables or constants, the evaluation of a fact stops at its first derivation.
//!
//! # Incremental maintenance
//!
//! The materialization is kept between commits. Insertions continue semi-naively from
//! the inserted facts, stratum by stratum; deletions go through delete-rederive
//! (overdelete semi-naively everything with a derivation through a deleted fact,
//! rederive the overdeleted facts that still have a derivation, continue
//! semi-naively). In higher strata, a change of a negated lower relation is handled the
//! same way: a lower insertion is an overdeletion seed, a lower deletion an insertion
//! seed. Details in [`crate::dred`]. The tasks of a round (rule variant × delta) run in
//! parallel over the workers (rule-level parallelism).
//!
//! A rule change ([`crate::Engine::set_program`]) rematerializes everything at the next
//! commit.

use crate::dred::{Dred, Evaluator, Output, Store, View};
use crate::rules::{Access, IndexSpecs, Join, KeySrc, Matches, RulePlan, Source, compile_rule};
use crate::store::IndexedIter;
use dynalog_analysis::{Program, Rule};

/// The relational engine. See the module documentation.
pub type Relational = Dred<RelationalEval>;

/// The compiled rule variants of `program`, as text (see [`crate::explain::plan`]):
/// variant 0 is the rule as written, the others start with the literal that reads a
/// delta (see [`crate::dred`]).
pub(crate) fn explain(program: &Program) -> String {
    let mut specs = IndexSpecs::new(program.relations.len());
    let mut blocks = Vec::new();
    for (i, rule) in program.rules.iter().enumerate() {
        for (k, variant) in crate::dred::variants(rule).0.iter().enumerate() {
            let plan = compile_rule(program, variant, &mut specs);
            blocks.push(format!(
                "rule {i}, variant {k}: {}\n{}",
                rule.text.trim(),
                plan.display(program, variant)
            ));
        }
    }
    blocks.join("\n")
}

/// Compiled rule variants: `plans[rule][variant]`.
pub struct RelationalEval {
    plans: Vec<Vec<RulePlan>>,
}

impl Evaluator for RelationalEval {
    const NAME: &'static str = "relational";

    fn compile(program: &Program, variants: &[Vec<Rule>]) -> (Self, Vec<Vec<Box<[usize]>>>) {
        let mut specs = IndexSpecs::new(program.relations.len());
        let plans = variants
            .iter()
            .map(|vs| {
                vs.iter()
                    .map(|r| compile_rule(program, r, &mut specs))
                    .collect()
            })
            .collect();
        (RelationalEval { plans }, specs.per_relation)
    }

    fn run(
        &self,
        rule: usize,
        variant: usize,
        view: &View<'_>,
        delta: Option<&Store>,
        witness: bool,
        out: &mut Output<'_>,
    ) {
        let Some(plan) = self.plans.get(rule).and_then(|v| v.get(variant)) else {
            return;
        };
        let mut source = Rel {
            stores: view.stores,
            view,
            delta,
            witness,
            found: false,
            key: Vec::new(),
            out,
        };
        let mut slots = vec![0; plan.slots];
        crate::rules::run(plan, &mut slots, &mut Vec::new(), &mut source);
    }
}

/// What a rule variant reads (the materialization, the old state, a delta) and where
/// its head tuples go, for the shared rule runner.
struct Rel<'a, 'o, 'b> {
    stores: &'a [Store],
    view: &'a View<'a>,
    /// The facts the first atom reads instead of its relation.
    delta: Option<&'a Store>,
    /// Stop at the first derivation of each delta fact (a rederivation).
    witness: bool,
    /// A derivation of the current delta fact was found (with `witness`).
    found: bool,
    key: Vec<u32>,
    out: &'o mut Output<'b>,
}

impl Rel<'_, '_, '_> {
    fn fill_key(&mut self, key: &[KeySrc], slots: &[u32]) {
        self.key.clear();
        self.key.extend(key.iter().map(|k| k.value(slots)));
    }

    /// The delta, if the atom at `pc` reads it.
    fn delta_at(&self, pc: usize) -> Option<&Store> {
        self.delta.filter(|_| pc == 0)
    }
}

/// The rows of a delta matching the key columns of the first atom.
struct DeltaRows<'a> {
    rows: IndexedIter<'a>,
    /// `(column, value)` pairs a row must have.
    want: Vec<(usize, u32)>,
}

impl<'a> Iterator for DeltaRows<'a> {
    type Item = &'a [u32];

    #[inline]
    fn next(&mut self) -> Option<&'a [u32]> {
        self.rows
            .by_ref()
            .find(|row| self.want.iter().all(|&(c, v)| row[c] == v))
    }
}

/// One atom reads its store in `Scan` order: every tuple, plus a key filter for a delta.
impl<'a> Source<'a> for Rel<'a, '_, '_> {
    type Iter = DeltaRows<'a>;

    fn parts(&self, pc: usize) -> usize {
        if self.delta_at(pc).is_none() && self.view.old.is_some() {
            2
        } else {
            1
        }
    }

    fn rows(
        &mut self,
        pc: usize,
        part: usize,
        join: &Join,
        slots: &[u32],
    ) -> Matches<'a, DeltaRows<'a>> {
        let stores: &'a [Store] = self.stores;
        let rel = join.rel as usize;
        let store: &'a Store = match (self.delta, pc, part, self.view.old) {
            (Some(delta), 0, _, _) => {
                let want = match &join.access {
                    Access::Index { cols, key, .. } => cols
                        .iter()
                        .zip(key.iter())
                        .map(|(&c, k)| (c, k.value(slots)))
                        .collect(),
                    Access::Scan | Access::Member { .. } => Vec::new(),
                };
                return Matches::Iter(DeltaRows {
                    rows: delta.iter(),
                    want,
                });
            }
            (_, _, 1, Some((minus, _))) => &minus[rel],
            _ => &stores[rel],
        };
        match &join.access {
            Access::Index { index, key, .. } => {
                self.fill_key(key, slots);
                Matches::Ids(store.rows(), store.lookup(*index, &self.key))
            }
            Access::Scan | Access::Member { .. } => Matches::Iter(DeltaRows {
                rows: store.iter(),
                want: Vec::new(),
            }),
        }
    }

    fn member(&mut self, pc: usize, rel: usize, key: &[KeySrc], slots: &[u32]) -> u32 {
        self.fill_key(key, slots);
        if let Some(delta) = self.delta_at(pc) {
            return delta.contains(&self.key) as u32;
        }
        let mut n = self.stores[rel].contains(&self.key) as u32;
        if let Some((minus, _)) = self.view.old {
            n += minus[rel].contains(&self.key) as u32;
        }
        n
    }

    fn exists(&mut self, rel: usize, access: &Access, slots: &[u32]) -> bool {
        let stores = self.stores;
        let store = &stores[rel];
        let view = self.view;
        match access {
            Access::Scan => store.iter().any(|row| !view.hidden(rel, row)),
            Access::Member { key } => {
                self.fill_key(key, slots);
                store.contains(&self.key) && !view.hidden(rel, &self.key)
            }
            Access::Index { index, key, .. } => {
                self.fill_key(key, slots);
                store
                    .lookup(*index, &self.key)
                    .iter()
                    .any(|&id| !view.hidden(rel, store.row(id)))
            }
        }
    }

    #[inline]
    fn tick(&mut self) -> bool {
        self.out.tick();
        false
    }

    #[inline]
    fn after_row(&mut self, pc: usize) {
        // Each delta fact gets its own derivation.
        if self.delta_at(pc).is_some() {
            self.found = false;
        }
    }

    #[inline]
    fn done(&self) -> bool {
        self.found || self.out.stopped()
    }

    fn push(&mut self, tuple: &[u32]) {
        self.out.push(tuple);
        self.found = self.witness;
    }
}
