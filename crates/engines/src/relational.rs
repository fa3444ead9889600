//! The relational engine: semi-naive evaluation on relational operators over indexed
//! relations, maintained incrementally by delete-rederive. One of the study's two
//! delete-rederive comparison reasoners (`--engine relational`).
//!
//! # Evaluation
//!
//! Every rule variant (see [`crate::dred`]: the body reordered so that the literal
//! reading a delta comes first) is compiled like the reference engine's rules (module
//! `seminaive::plan`): a pipeline of joins, negations, filters and assignments over a
//! slot array, where a positive atom's columns bound by constants or earlier variables
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
use crate::seminaive::plan::{Access, IndexSpecs, Join, KeySrc, Op, RulePlan, compile_rule};
use dynalog_analysis::ir::eval_cmp;
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
        let mut exec = Exec {
            plan,
            stores: view.stores,
            view,
            delta,
            witness,
            found: false,
            slots: vec![0; plan.slots],
            key: Vec::new(),
            tuple: Vec::new(),
            out,
        };
        exec.step(0);
    }
}

struct Exec<'a, 'o, 'b> {
    plan: &'a RulePlan,
    stores: &'a [Store],
    view: &'a View<'a>,
    delta: Option<&'a Store>,
    /// Stop at the first derivation of each delta fact (a rederivation).
    witness: bool,
    /// A derivation of the current delta fact was found (with `witness`).
    found: bool,
    slots: Vec<u32>,
    key: Vec<u32>,
    tuple: Vec<u32>,
    out: &'o mut Output<'b>,
}

/// Whether `row` has the key values in the key columns of `access` (whose sources are
/// constants or bound slots).
fn key_matches(access: &Access, row: &[u32], slots: &[u32]) -> bool {
    match access {
        Access::Scan => true,
        Access::Member { key } => row
            .iter()
            .zip(key.iter())
            .all(|(&v, k)| v == k.value(slots)),
        Access::Index { cols, key, .. } => cols
            .iter()
            .zip(key.iter())
            .all(|(&c, k)| row[c] == k.value(slots)),
    }
}

impl<'a> Exec<'a, '_, '_> {
    fn fill_key(&mut self, key: &[KeySrc]) {
        self.key.clear();
        let slots = &self.slots;
        self.key.extend(key.iter().map(|k| k.value(slots)));
    }

    fn step(&mut self, pc: usize) {
        let plan = self.plan;
        let Some(op) = plan.ops.get(pc) else {
            self.emit();
            return;
        };
        match op {
            Op::Join(join) => {
                if pc == 0
                    && let Some(delta) = self.delta
                {
                    for row in delta.iter() {
                        self.found = false;
                        if key_matches(&join.access, row, &self.slots) {
                            self.join_row(join, row, pc);
                        }
                        if self.out.stopped() {
                            return;
                        }
                    }
                    return;
                }
                let rel = join.rel as usize;
                let stores = self.stores;
                self.join_store(join, &stores[rel], pc);
                if let Some((minus, _)) = self.view.old
                    && !self.found
                {
                    self.join_store(join, &minus[rel], pc);
                }
            }
            Op::Not { rel, access } => {
                let rel = *rel as usize;
                let stores = self.stores;
                let store = &stores[rel];
                let view = self.view;
                let exists = match access {
                    Access::Scan => store.iter().any(|row| !view.hidden(rel, row)),
                    Access::Member { key } => {
                        self.fill_key(key);
                        store.contains(&self.key) && !view.hidden(rel, &self.key)
                    }
                    Access::Index { index, key, .. } => {
                        self.fill_key(key);
                        store
                            .lookup(*index, &self.key)
                            .iter()
                            .any(|&id| !view.hidden(rel, store.row(id)))
                    }
                };
                if !exists {
                    self.step(pc + 1);
                }
            }
            Op::Filter { cmp, ty, lhs, rhs } => {
                if let (Some(a), Some(b)) = (lhs.eval(&self.slots), rhs.eval(&self.slots))
                    && eval_cmp(*cmp, *ty, a, b)
                {
                    self.step(pc + 1);
                }
            }
            Op::Assign { var, expr } => {
                if let Some(v) = expr.eval(&self.slots) {
                    self.slots[*var as usize] = v;
                    self.step(pc + 1);
                }
            }
        }
    }

    /// Join with the rows of `store` matching the bound columns.
    fn join_store(&mut self, join: &'a Join, store: &'a Store, pc: usize) {
        match &join.access {
            Access::Scan => {
                for row in store.iter() {
                    self.join_row(join, row, pc);
                    if self.found || self.out.stopped() {
                        return;
                    }
                }
            }
            Access::Member { key } => {
                self.fill_key(key);
                if store.contains(&self.key) {
                    self.step(pc + 1);
                }
            }
            Access::Index { index, key, .. } => {
                self.fill_key(key);
                for &id in store.lookup(*index, &self.key) {
                    self.join_row(join, store.row(id), pc);
                    if self.found || self.out.stopped() {
                        return;
                    }
                }
            }
        }
    }

    /// Continue with `row` as the match of the atom at `pc` if its repeated variables agree.
    #[inline]
    fn join_row(&mut self, join: &Join, row: &[u32], pc: usize) {
        self.out.tick();
        if join.checks.iter().all(|&(a, b)| row[a] == row[b]) {
            for &(col, var) in join.binds.iter() {
                self.slots[var as usize] = row[col];
            }
            self.step(pc + 1);
        }
    }

    /// The body matched: compute the head tuple and emit it.
    fn emit(&mut self) {
        self.tuple.clear();
        for e in &self.plan.head {
            match e.eval(&self.slots) {
                Some(v) => self.tuple.push(v),
                None => return,
            }
        }
        self.out.push(&self.tuple);
        self.found = self.witness;
    }
}
