//! The reference evaluator: semi-naive evaluation, stratum by stratum, recomputed from
//! scratch at every commit.
//!
//! # Semantics
//!
//! The base facts are the program's inline facts plus the tuples [`Engine::insert`]ed,
//! minus the tuples [`Engine::remove`]d (in the order the changes were staged; a removal
//! deletes a base fact only, so a removed fact that is also derivable stays). Changes
//! are staged and applied by [`Engine::commit`], which evaluates the whole program again
//! from the current base facts; [`Engine::len`] and [`Engine::facts`] answer from the
//! last commit (nothing before the first one).
//!
//! Integer arithmetic wraps around. An integer division or remainder by zero has no
//! value: the rule simply does not fire for that substitution (no fact, no error).
//!
//! # Algorithm
//!
//! Each rule is compiled once (module [`crate::rules`], whose runner also evaluates the
//! rules of `relational`) into a pipeline over a fixed slot array, one operation per
//! body literal, with the bound/unbound state of every variable known
//! statically: a positive atom becomes a join whose bound columns (constants and
//! variables bound earlier) select a hash-set probe, an index lookup or a scan; a
//! repeated variable inside one atom (`e(x, x)`) becomes an equality check between
//! columns. Negations probe the (complete, lower-stratum) relation, filters compare and
//! assignments bind.
//!
//! The strata are evaluated in order. A rule of a non-recursive stratum runs once over
//! the full relations. A recursive stratum runs rounds until no new fact appears. Every
//! relation of the stratum has a *delta*: the facts new in the last round (initially,
//! its base facts). In each round, for each rule and each positive body atom `i` over a
//! relation of the stratum, the rule runs with atom `i` restricted to the delta, the
//! stratum's atoms before `i` to the *old* facts (those before the delta) and the ones
//! after `i` to all facts; so every derivation that uses at least one delta fact is
//! found exactly once per round, and none using only old facts is repeated. Rules
//! without such an atom run in the first round only. A tuple derived in a round that is
//! not in its relation yet is kept as a *fresh* row of the relation, invisible to the
//! rules until the round ends; then the fresh rows are appended: they are the next delta.
//!
//! # Storage
//!
//! See module [`crate::store`]. Each relation's tuples live in one flat `Vec<u32>` (stride =
//! arity) with a hash set of row ids for deduplication, which covers the fresh rows too,
//! so that a derived tuple costs one probe-or-insert. Rows are only appended while
//! evaluating, so the old, delta and full facts of a relation are row-id ranges
//! (`0..delta_start`, `delta_start..delta_end`, `0..delta_end`). The hash indexes (key
//! → ascending row ids) are those the compiled rules ask for; they are built when first
//! needed and extended with the new rows at the start of each round. Derived tuples are
//! inserted in batches sorted by their position in the hash set, which turns the random
//! accesses of a large set into mostly sequential ones. A commit keeps only the flat
//! rows of the result.

mod eval;

use crate::rules::{Access, IndexSpecs, Op, RulePlan, compile_rule};
use crate::staging::{Staging, initial_base, resize_base};
use crate::store::{FlatSet, Growing, Index, Rows};
use crate::{Budget, ChangeList, CommitStats, Engine, EngineError, Limits, StratumStats};
use dynalog_analysis::{Program, RelId, Value};
use eval::{Committed, Scratch, run_rule};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// The semi-naive engine. See the module documentation.
pub struct Seminaive {
    program: Program,
    /// One compiled plan per rule of the program.
    plans: Vec<RulePlan>,
    /// One entry per stratum of the program.
    strata: Vec<StratumPlan>,
    /// The indexes the plans use, per relation.
    specs: IndexSpecs,
    /// The current base facts, per relation (staged changes not applied).
    base: Vec<FlatSet>,
    /// What is staged since the last commit.
    staging: Staging,
    /// The materialization as of the last commit, per relation.
    results: Vec<Rows>,
    /// Whether commits record their changes in `changes`.
    track: bool,
    changes: ChangeList,
    /// Limits of every commit ([`Engine::set_limits`]).
    limits: Limits,
    /// The running commit's changes so far ([`Engine::progress`]).
    progress: Arc<AtomicU64>,
}

/// What evaluating one stratum needs, computed once.
#[derive(Clone, Debug)]
struct StratumPlan {
    /// The relations whose new facts are tracked: the stratum's, and the rule heads.
    rels: Vec<RelId>,
    rules: Vec<StratumRule>,
    /// Indexes read by the stratum's rules: `(relation, index number)`.
    indexes: Vec<(RelId, usize)>,
}

#[derive(Clone, Debug)]
struct StratumRule {
    /// Index into [`Seminaive::plans`].
    rule: usize,
    /// The positive atoms over relations of the stratum: `(op position, position of
    /// the relation in StratumPlan::rels)`. Empty for a rule that runs once.
    recursive: Vec<(usize, usize)>,
    /// Per atom `j` of `recursive`, the plan that runs the rule with that atom reading
    /// the delta (an index into [`Seminaive::plans`]), and the op position there of
    /// each atom of `recursive`. The rule's own plan, but where an atom before `j`
    /// would be scanned: then the rule's body with atom `j` moved first, so that the
    /// delta is read first and the atoms before `j`, restricted to the old facts, are
    /// looked up rather than scanned (a self-join such as the dominated candidates of a
    /// subsumption would otherwise scan every old fact in every round: a fifth of the
    /// time of `paths-rmat1k`).
    variants: Vec<(usize, Vec<usize>)>,
}

impl Seminaive {
    pub fn new(program: Program) -> Seminaive {
        let (plans, strata, specs) = Seminaive::plan(&program);
        Seminaive {
            base: initial_base(&program),
            program,
            plans,
            strata,
            specs,
            staging: Staging::default(),
            results: Vec::new(),
            track: false,
            changes: ChangeList::new(),
            limits: Limits::NONE,
            progress: Arc::default(),
        }
    }

    /// Compile the rules of `program`: one plan per rule, one per stratum, and the
    /// indexes they read.
    fn plan(program: &Program) -> (Vec<RulePlan>, Vec<StratumPlan>, IndexSpecs) {
        let n = program.relations.len();
        let mut specs = IndexSpecs::new(n);
        let mut plans: Vec<RulePlan> = program
            .rules
            .iter()
            .map(|rule| compile_rule(program, rule, &mut specs))
            .collect();
        let strata: Vec<StratumPlan> = program
            .strata
            .iter()
            .map(|stratum| {
                let mut rels = stratum.relations.clone();
                for &r in &stratum.rules {
                    if !rels.contains(&plans[r].head_rel) {
                        rels.push(plans[r].head_rel);
                    }
                }
                let position = |rel: RelId| stratum.relations.iter().position(|&r| r == rel);
                let rules = stratum
                    .rules
                    .iter()
                    .map(|&r| {
                        let plan = &plans[r];
                        let recursive = plan
                            .ops
                            .iter()
                            .enumerate()
                            .filter_map(|(i, op)| match op {
                                Op::Join(j) => position(j.rel).map(|p| (i, p)),
                                _ => None,
                            })
                            .collect();
                        StratumRule {
                            rule: r,
                            recursive,
                            variants: Vec::new(),
                        }
                    })
                    .collect();
                let mut indexes: Vec<(RelId, usize)> = Vec::new();
                for &r in &stratum.rules {
                    for ix in plans[r].indexes() {
                        if !indexes.contains(&ix) {
                            indexes.push(ix);
                        }
                    }
                }
                StratumPlan {
                    rels,
                    rules,
                    indexes,
                }
            })
            .collect();
        // The rules' variants with a later delta atom first (see `StratumRule`).
        let mut strata = strata;
        for sp in &mut strata {
            for sr in &mut sp.rules {
                let ops: Vec<usize> = sr.recursive.iter().map(|&(op, _)| op).collect();
                for (j, &first) in ops.iter().enumerate() {
                    // Only where an earlier atom of the stratum would be scanned: moving
                    // the delta first may need new indexes, which cost more than they
                    // save when the earlier atoms are looked up already (RhoDF on
                    // LUBM(1): 24% slower).
                    let scans = ops[..j].iter().any(|&op| {
                        matches!(
                            &plans[sr.rule].ops[op],
                            Op::Join(join) if matches!(join.access, Access::Scan)
                        )
                    });
                    if !scans {
                        sr.variants.push((sr.rule, ops.clone()));
                        continue;
                    }
                    // One op per body literal: the op position is the literal's.
                    let variant = crate::dred::literal_first(&program.rules[sr.rule], first);
                    let plan = compile_rule(program, &variant, &mut specs);
                    for ix in plan.indexes() {
                        if !sp.indexes.contains(&ix) {
                            sp.indexes.push(ix);
                        }
                    }
                    let moved = ops
                        .iter()
                        .map(|&op| match op.cmp(&first) {
                            std::cmp::Ordering::Equal => 0,
                            std::cmp::Ordering::Less => op + 1,
                            std::cmp::Ordering::Greater => op,
                        })
                        .collect();
                    plans.push(plan);
                    sr.variants.push((plans.len() - 1, moved));
                }
            }
        }
        (plans, strata, specs)
    }

    /// Make `program` the current one: its plans and strata, and a base-fact set per
    /// relation (those of dropped relations go, new relations start empty).
    fn install(&mut self, program: Program) {
        let (plans, strata, specs) = Seminaive::plan(&program);
        resize_base(&mut self.base, &program);
        self.program = program;
        self.plans = plans;
        self.strata = strata;
        self.specs = specs;
    }

    /// Go back to the program and base facts of the last commit; nothing is staged.
    fn discard(&mut self) {
        if let Some(program) = self.staging.discard() {
            self.install(program);
        }
        self.staging.undo_into(&mut self.base);
    }

    /// Go back to the state before the transaction: its program and base facts, and
    /// `previous` as the materialization.
    fn roll_back(&mut self, previous: Vec<Rows>) {
        self.discard();
        self.results = previous;
        self.changes.clear();
    }
}

/// Evaluate one stratum to its fixpoint; returns the number of rounds.
fn evaluate_stratum(
    sp: &StratumPlan,
    plans: &[RulePlan],
    committed: &mut [Committed],
    growing: &mut [Growing],
    scratch: &mut Scratch,
    budget: &Budget,
) -> Option<usize> {
    // The delta of each relation of `sp.rels`, as a row range: initially its base facts.
    let mut delta: Vec<(u32, u32)> = sp
        .rels
        .iter()
        .map(|&r| (0, committed[r as usize].rows.len()))
        .collect();
    let recursive = sp.rules.iter().any(|r| !r.recursive.is_empty());
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        for &(rel, index) in &sp.indexes {
            let c = &mut committed[rel as usize];
            c.indexes[index].catch_up(&c.rows);
        }
        let readable: &[Committed] = committed;
        // Every atom reads all rows, unless restricted.
        let all_rows = |plan: &RulePlan, ranges: &mut Vec<(u32, u32)>| {
            ranges.clear();
            ranges.extend(plan.ops.iter().map(|op| match op {
                Op::Join(j) => (0, readable[j.rel as usize].rows.len()),
                _ => (0, 0),
            }));
        };
        for sr in &sp.rules {
            if sr.recursive.is_empty() {
                if rounds == 1 {
                    let plan = &plans[sr.rule];
                    all_rows(plan, &mut ranges);
                    if !run_rule(plan, readable, growing, &ranges, scratch, budget) {
                        return None;
                    }
                }
                continue;
            }
            for (j, (variant, ops)) in sr.variants.iter().enumerate() {
                let plan = &plans[*variant];
                all_rows(plan, &mut ranges);
                // Atom j reads the delta, earlier ones the old facts, later ones all.
                let mut empty = false;
                for (i, (&(_, pos), &op)) in sr.recursive.iter().zip(ops).enumerate() {
                    let (start, end) = delta[pos];
                    let range = match i.cmp(&j) {
                        std::cmp::Ordering::Less => (0, start),
                        std::cmp::Ordering::Equal => (start, end),
                        std::cmp::Ordering::Greater => (0, end),
                    };
                    empty |= range.0 >= range.1;
                    ranges[op] = range;
                }
                if !empty && !run_rule(plan, readable, growing, &ranges, scratch, budget) {
                    return None;
                }
            }
        }
        // The round's new tuples become readable: they are the next delta.
        let mut grew = false;
        for (pos, &rel) in sp.rels.iter().enumerate() {
            let rows = &mut committed[rel as usize].rows;
            let before = rows.len();
            rows.append(&mut growing[rel as usize].fresh);
            delta[pos] = (before, rows.len());
            grew |= rows.len() > before;
        }
        if !recursive || !grew {
            return Some(rounds);
        }
    }
}

/// The end of a subsumption stratum ([`dynalog_analysis::Subsumed`]): the relation
/// kept every candidate that was not dominated when it was derived; those dominated
/// since go (not its own base facts, which no subsumption removes). Its rows,
/// deduplication set and indexes are rebuilt for the strata above.
fn remove_dominated(
    sub: dynalog_analysis::Subsumed,
    base: &FlatSet,
    specs: &IndexSpecs,
    committed: &mut [Committed],
    growing: &mut [Growing],
) {
    let (r, dom) = (sub.relation as usize, sub.dominated as usize);
    let mut kept = FlatSet::new(committed[r].rows.arity());
    for row in committed[r].rows.iter() {
        let hash = crate::store::hash_values(row.iter().copied());
        let dominated = growing[dom]
            .find_with(&committed[dom].rows, hash, |t| t == row)
            .is_some();
        if !dominated || base.contains(row) {
            kept.insert(row);
        }
    }
    growing[r] = Growing::from_base(&kept);
    committed[r] = Committed {
        rows: kept.rows().clone(),
        indexes: specs.per_relation[r]
            .iter()
            .map(|cols| Index::new(cols.clone()))
            .collect(),
    };
}

impl Engine for Seminaive {
    fn name(&self) -> &'static str {
        "seminaive"
    }

    fn program(&self) -> &Program {
        &self.program
    }

    /// Stage an insertion (ignored for an unknown relation or a tuple of the wrong arity).
    fn insert(&mut self, relation: RelId, tuple: &[Value]) {
        let arity = self.base.get(relation as usize).map(FlatSet::arity);
        self.staging.stage(true, relation, tuple, arity);
    }

    /// Stage a removal (ignored for an unknown relation or a tuple of the wrong arity).
    fn remove(&mut self, relation: RelId, tuple: &[Value]) {
        let arity = self.base.get(relation as usize).map(FlatSet::arity);
        self.staging.stage(false, relation, tuple, arity);
    }

    fn set_program(&mut self, program: Program) {
        if self.staging.open_program(&self.program, &program) {
            self.staging
                .drop_relations(&self.base, program.relations.len());
            self.install(program);
        }
    }

    fn abort(&mut self) {
        self.discard();
    }

    fn has_staged(&self) -> bool {
        self.staging.has_staged()
    }

    fn for_each_staged(&self, f: &mut dyn FnMut(bool, RelId, &[Value])) {
        self.staging.for_each(f);
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), EngineError> {
        self.limits = limits;
        Ok(())
    }

    fn progress(&self) -> Option<Arc<AtomicU64>> {
        Some(self.progress.clone())
    }

    fn track_changes(&mut self, on: bool) {
        self.track = on;
        if !on {
            self.changes = ChangeList::new();
        }
    }

    fn last_changes(&self) -> &ChangeList {
        &self.changes
    }

    fn take_changes(&mut self) -> ChangeList {
        std::mem::take(&mut self.changes)
    }

    fn is_base(&self, relation: RelId, tuple: &[Value]) -> bool {
        self.base
            .get(relation as usize)
            .is_some_and(|s| s.contains(tuple))
    }

    fn contains(&self, relation: RelId, tuple: &[Value]) -> bool {
        self.results
            .get(relation as usize)
            .is_some_and(|rows| rows.iter().any(|t| t == tuple))
    }

    fn commit(&mut self) -> Result<CommitStats, EngineError> {
        let started = Instant::now();
        if let Some(e) = self.staging.take_rejected() {
            return Err(e);
        }
        let limited = !self.limits.is_none();
        let live = self.base.len();
        self.staging
            .apply(&mut self.base, live, limited, |_, _, _| {});
        let budget = Budget::new(self.limits, self.progress.clone());
        // Free the previous result before building the next one (unless the changes
        // are wanted: they are the difference of the two; or limits may refuse the
        // commit: it is then the result again).
        let previous = std::mem::take(&mut self.results);
        let previous = if self.track || limited {
            previous
        } else {
            Vec::new()
        };
        let old_total: u64 = previous.iter().map(|r| r.len() as u64).sum();
        let base_total: u64 = self.base.iter().map(|b| b.rows().len() as u64).sum();
        let mut committed: Vec<Committed> = self
            .base
            .iter()
            .zip(&self.specs.per_relation)
            .map(|(base, specs)| Committed {
                rows: base.rows().clone(),
                indexes: specs.iter().map(|cols| Index::new(cols.clone())).collect(),
            })
            .collect();
        let mut growing: Vec<Growing> = self.base.iter().map(Growing::from_base).collect();
        let mut scratch = Scratch::default();
        scratch.excess = base_total as i64 - old_total as i64;
        let mut stats = CommitStats::default();
        let mut stopped = budget.check(scratch.changes());
        for (sp, stratum) in self.strata.iter().zip(&self.program.strata) {
            if stopped {
                break;
            }
            let stratum_started = Instant::now();
            for &a in &stratum.aggregates {
                let agg = &self.program.aggregates[a];
                let rows = crate::aggregate::evaluate(
                    agg,
                    committed[agg.source as usize].rows.iter(),
                    None,
                );
                // As derived facts: fresh rows of the stratum's relation, which its
                // evaluation below makes readable.
                let head = agg.head as usize;
                for row in rows {
                    let hash = crate::store::hash_values(row.iter().copied());
                    growing[head].insert_hashed(&committed[head].rows, hash, &row);
                }
            }
            let Some(iterations) = evaluate_stratum(
                sp,
                &self.plans,
                &mut committed,
                &mut growing,
                &mut scratch,
                &budget,
            ) else {
                stopped = true;
                break;
            };
            if let Some(sub) = stratum.subsumption {
                let base = &self.base[sub.relation as usize];
                remove_dominated(sub, base, &self.specs, &mut committed, &mut growing);
            }
            stats.strata.push(StratumStats {
                relations: stratum
                    .relations
                    .iter()
                    .map(|&r| self.program.relation(r).name.clone())
                    .collect(),
                iterations,
                facts: stratum
                    .relations
                    .iter()
                    .map(|&r| committed[r as usize].rows.len() as usize)
                    .sum(),
                elapsed: stratum_started.elapsed(),
            });
        }
        drop(growing);
        if stopped {
            drop(committed);
            self.roll_back(previous);
            return Err(budget
                .error()
                .unwrap_or_else(|| EngineError::Failed("limit exceeded".into())));
        }
        self.results = committed.into_iter().map(|c| c.rows).collect();
        if let Some(max) = budget.limits().max_changes {
            // The exact net change, now that the result is known.
            let results = &self.results;
            let count = crate::difference_count(
                results.len().max(previous.len()),
                |r, f| each_fact(&previous, r, f),
                |r, f| each_fact(results, r, f),
            );
            if count > max {
                self.roll_back(previous);
                return Err(EngineError::LimitExceeded(crate::LimitExceeded::Changes(
                    max,
                )));
            }
        }
        self.staging.finish();
        if self.track {
            self.changes = crate::difference(
                self.results.len().max(previous.len()),
                |r, f| each_fact(&previous, r, f),
                |r, f| each_fact(&self.results, r, f),
            );
        }
        stats.elapsed = started.elapsed();
        Ok(stats)
    }

    fn len(&self, relation: RelId) -> usize {
        self.results
            .get(relation as usize)
            .map_or(0, |rows| rows.len() as usize)
    }

    fn facts(&self, relation: RelId) -> Vec<Vec<Value>> {
        self.results
            .get(relation as usize)
            .map(|rows| rows.iter().map(<[Value]>::to_vec).collect())
            .unwrap_or_default()
    }

    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        each_fact(&self.results, relation, f);
    }
}

/// Calls `f` on every fact of relation `r` in `stores` (none for a relation it lacks):
/// how [`Engine::for_each_fact`], [`crate::difference`] and [`crate::difference_count`]
/// read a materialization.
/// The compiled rules of `program`, as text (see [`crate::explain::plan`]).
pub(crate) fn explain(program: &Program) -> String {
    let mut specs = IndexSpecs::new(program.relations.len());
    let blocks: Vec<String> = program
        .rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            let plan = compile_rule(program, rule, &mut specs);
            format!(
                "rule {i}: {}\n{}",
                rule.text.trim(),
                plan.display(program, rule)
            )
        })
        .collect();
    blocks.join("\n")
}

fn each_fact(stores: &[Rows], r: RelId, f: &mut dyn FnMut(&[Value])) {
    if let Some(s) = stores.get(r as usize) {
        s.iter().for_each(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynalog_analysis::{Atom, Expr, Head, Literal, Relation, Rule, Stratum, SymbolTable};
    use dynalog_analysis::{Term, Type};
    use dynalog_syntax::{ArithOp, CmpOp, Span, UnaryOp};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    type Tuples = BTreeSet<Vec<Value>>;

    // ---- building IR by hand ----

    struct Builder {
        p: Program,
    }

    impl Builder {
        fn new() -> Builder {
            Builder {
                p: Program {
                    aggregates: Vec::new(),
                    relations: Vec::new(),
                    rules: Vec::new(),
                    facts: Vec::new(),
                    strata: Vec::new(),
                    symbols: SymbolTable::new(),
                    warnings: Vec::new(),
                },
            }
        }

        fn rel(&mut self, name: &str, types: &[Type]) -> RelId {
            self.p.relations.push(Relation {
                name: name.to_string(),
                column_names: (0..types.len()).map(|i| format!("c{i}")).collect(),
                types: types.to_vec(),
                inputs: Vec::new(),
                outputs: Vec::new(),
                printsize: false,
                implicit: false,
                eqrel: false,
                span: Span::default(),
            });
            (self.p.relations.len() - 1) as RelId
        }

        /// A relation whose columns are all numbers.
        fn nums(&mut self, name: &str, arity: usize) -> RelId {
            self.rel(name, &vec![Type::Number; arity])
        }

        fn fact(&mut self, rel: RelId, values: &[i32]) {
            self.p
                .facts
                .push((rel, values.iter().map(|&v| v as Value).collect()));
        }

        fn rule(&mut self, head: RelId, args: Vec<Expr>, body: Vec<Literal>) -> usize {
            fn expr_vars(e: &Expr, out: &mut Vec<u32>) {
                e.for_each_var(&mut |v| out.push(v));
            }
            let mut vars = Vec::new();
            for lit in &body {
                match lit {
                    Literal::Atom(a) | Literal::Not(a) => {
                        vars.extend(a.args.iter().filter_map(|t| match t {
                            Term::Var(v) => Some(*v),
                            _ => None,
                        }))
                    }
                    Literal::Filter { lhs, rhs, .. } => {
                        expr_vars(lhs, &mut vars);
                        expr_vars(rhs, &mut vars);
                    }
                    Literal::Assign { var, expr } => {
                        vars.push(*var);
                        expr_vars(expr, &mut vars);
                    }
                }
            }
            for e in &args {
                expr_vars(e, &mut vars);
            }
            let n = vars.iter().map(|&v| v as usize + 1).max().unwrap_or(0);
            self.p.rules.push(Rule {
                head: Head {
                    relation: head,
                    args,
                },
                body,
                var_names: (0..n).map(|i| format!("v{i}")).collect(),
                var_types: vec![Type::Number; n],
                stratum: usize::MAX,
                text: String::new(),
                generated: false,
                span: Span::default(),
            });
            self.p.rules.len() - 1
        }

        /// The next stratum: `rels` and the rules `rules` (whose heads are in `rels`).
        fn stratum(&mut self, rels: &[RelId], rules: &[usize]) {
            let recursive = rules.iter().any(|&r| {
                self.p.rules[r]
                    .positive_atoms()
                    .any(|a| rels.contains(&a.relation))
            });
            for &r in rules {
                self.p.rules[r].stratum = self.p.strata.len();
            }
            self.p.strata.push(Stratum {
                aggregates: Vec::new(),
                relations: rels.to_vec(),
                rules: rules.to_vec(),
                recursive,
                subsumption: None,
                choice: None,
            });
        }

        fn build(self) -> Program {
            self.p
        }
    }

    fn v(i: u32) -> Term {
        Term::Var(i)
    }
    fn c(n: i32) -> Term {
        Term::Const(n as Value)
    }
    const W: Term = Term::Wildcard;
    fn pos(relation: RelId, args: &[Term]) -> Literal {
        Literal::Atom(Atom {
            relation,
            args: args.to_vec(),
        })
    }
    fn neg(relation: RelId, args: &[Term]) -> Literal {
        Literal::Not(Atom {
            relation,
            args: args.to_vec(),
        })
    }
    fn x(i: u32) -> Expr {
        Expr::Var(i)
    }
    fn k(n: i32) -> Expr {
        Expr::Const(n as Value)
    }
    fn kf(f: f32) -> Expr {
        Expr::Const(f.to_bits())
    }
    fn bin(op: ArithOp, ty: Type, lhs: Expr, rhs: Expr) -> Expr {
        Expr::Binary {
            op,
            ty,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        }
    }
    fn cmp(op: CmpOp, ty: Type, lhs: Expr, rhs: Expr) -> Literal {
        Literal::Filter { op, ty, lhs, rhs }
    }
    fn assign(var: u32, expr: Expr) -> Literal {
        Literal::Assign { var, expr }
    }

    fn run(p: Program) -> Seminaive {
        let mut e = Seminaive::new(p);
        e.commit().unwrap();
        e
    }

    fn got(e: &Seminaive, rel: RelId) -> Tuples {
        let facts = e.facts(rel);
        assert_eq!(facts.len(), e.len(rel), "len and facts disagree");
        let set: Tuples = facts.into_iter().collect();
        assert_eq!(set.len(), e.len(rel), "duplicate facts");
        set
    }

    fn tuples(list: &[&[i32]]) -> Tuples {
        list.iter()
            .map(|t| t.iter().map(|&v| v as Value).collect())
            .collect()
    }

    // ---- a deliberately naive evaluator, for comparison ----

    fn naive_expr(e: &Expr, slots: &[Option<Value>]) -> Option<Value> {
        match e {
            Expr::Var(v) => slots[*v as usize],
            Expr::Const(c) => Some(*c),
            Expr::Neg(ty, e) => {
                let a = naive_expr(e, slots)?;
                Some(match ty {
                    Type::Float => (-f32::from_bits(a)).to_bits(),
                    _ => (a as i32).wrapping_neg() as Value,
                })
            }
            Expr::Unary(op, ty, e) => {
                let a = naive_expr(e, slots)?;
                match (ty, op) {
                    // Conversions: the evaluator's, checked against Soufflé on its own.
                    (_, UnaryOp::ToFloat | UnaryOp::ToNumber | UnaryOp::ToUnsigned) => {
                        dynalog_analysis::eval_unary(*op, *ty, a)
                    }
                    (Type::Float | Type::Symbol, _) => None,
                    (_, UnaryOp::BNot) => Some(!a),
                    (_, UnaryOp::LNot) => Some(if a == 0 { 1 } else { 0 }),
                }
            }
            // Not generated here (string functors are tested against Soufflé's results
            // and by the engines' property test).
            Expr::Call(..) | Expr::Pack { .. } | Expr::Unpack { .. } => None,
            Expr::Binary { op, ty, lhs, rhs } => {
                let (a, b) = (naive_expr(lhs, slots)?, naive_expr(rhs, slots)?);
                match ty {
                    Type::Float => {
                        let (a, b) = (f32::from_bits(a), f32::from_bits(b));
                        let r = match op {
                            ArithOp::Add => a + b,
                            ArithOp::Sub => a - b,
                            ArithOp::Mul => a * b,
                            ArithOp::Div => a / b,
                            ArithOp::Mod => a % b,
                            ArithOp::Pow => a.powf(b),
                            ArithOp::Min => {
                                if b < a {
                                    b
                                } else {
                                    a
                                }
                            }
                            ArithOp::Max => {
                                if a < b {
                                    b
                                } else {
                                    a
                                }
                            }
                            _ => return None,
                        };
                        Some(r.to_bits())
                    }
                    Type::Number => {
                        let (a, b) = (a as i32 as i64, b as i32 as i64);
                        let r = match op {
                            ArithOp::Add => a + b,
                            ArithOp::Sub => a - b,
                            ArithOp::Mul => a * b,
                            ArithOp::Div => a.checked_div(b)?,
                            ArithOp::Mod => a.checked_rem(b)?,
                            ArithOp::Pow => {
                                let p = (a as f64).powf(b as f64).trunc();
                                if p >= i32::MIN as f64 && p <= i32::MAX as f64 {
                                    p as i64
                                } else {
                                    i32::MIN as i64
                                }
                            }
                            ArithOp::BAnd => a & b,
                            ArithOp::BOr => a | b,
                            ArithOp::BXor => a ^ b,
                            ArithOp::BShl => a << (b & 31),
                            ArithOp::BShr => a >> (b & 31),
                            ArithOp::BShru => (a as u32 as i64) >> (b & 31),
                            ArithOp::LAnd => (a != 0 && b != 0) as i64,
                            ArithOp::LOr => (a != 0 || b != 0) as i64,
                            ArithOp::LXor => ((a != 0) ^ (b != 0)) as i64,
                            ArithOp::Min => a.min(b),
                            ArithOp::Max => a.max(b),
                        };
                        Some(r as i32 as Value)
                    }
                    _ => {
                        let (a, b) = (a as u64, b as u64);
                        let r = match op {
                            ArithOp::Add => a + b,
                            ArithOp::Sub => a.wrapping_sub(b),
                            ArithOp::Mul => a * b,
                            ArithOp::Div => a.checked_div(b)?,
                            ArithOp::Mod => a.checked_rem(b)?,
                            ArithOp::Pow => {
                                let p = (a as f64).powf(b as f64).trunc();
                                if p < 2f64.powi(63) { p as u64 } else { 0 }
                            }
                            ArithOp::BAnd => a & b,
                            ArithOp::BOr => a | b,
                            ArithOp::BXor => a ^ b,
                            ArithOp::BShl => a << (b & 31),
                            ArithOp::BShr | ArithOp::BShru => a >> (b & 31),
                            ArithOp::LAnd => (a != 0 && b != 0) as u64,
                            ArithOp::LOr => (a != 0 || b != 0) as u64,
                            ArithOp::LXor => ((a != 0) ^ (b != 0)) as u64,
                            ArithOp::Min => a.min(b),
                            ArithOp::Max => a.max(b),
                        };
                        Some(r as u32)
                    }
                }
            }
        }
    }

    fn naive_cmp(op: CmpOp, ty: Type, a: Value, b: Value) -> bool {
        let ord = match ty {
            Type::Number => Some((a as i32).cmp(&(b as i32))),
            Type::Float => f32::from_bits(a).partial_cmp(&f32::from_bits(b)),
            _ => Some(a.cmp(&b)),
        };
        use std::cmp::Ordering::*;
        match op {
            CmpOp::Eq => ord == Some(Equal),
            CmpOp::Ne => ord != Some(Equal),
            CmpOp::Lt => ord == Some(Less),
            CmpOp::Le => matches!(ord, Some(Less | Equal)),
            CmpOp::Gt => ord == Some(Greater),
            CmpOp::Ge => matches!(ord, Some(Greater | Equal)),
        }
    }

    /// Match `args` against `tuple`, binding unbound variables in `slots`.
    fn naive_match(args: &[Term], tuple: &[Value], slots: &mut [Option<Value>]) -> bool {
        args.iter().zip(tuple).all(|(t, &val)| match *t {
            Term::Wildcard => true,
            Term::Const(c) => c == val,
            Term::Var(var) => match slots[var as usize] {
                Some(b) => b == val,
                None => {
                    slots[var as usize] = Some(val);
                    true
                }
            },
        })
    }

    fn naive_body(
        db: &[Tuples],
        rule: &Rule,
        i: usize,
        slots: &[Option<Value>],
        out: &mut Vec<(RelId, Vec<Value>)>,
    ) {
        let Some(lit) = rule.body.get(i) else {
            let head: Option<Vec<Value>> = rule
                .head
                .args
                .iter()
                .map(|e| naive_expr(e, slots))
                .collect();
            if let Some(t) = head {
                out.push((rule.head.relation, t));
            }
            return;
        };
        match lit {
            Literal::Atom(a) => {
                for t in &db[a.relation as usize] {
                    let mut s = slots.to_vec();
                    if naive_match(&a.args, t, &mut s) {
                        naive_body(db, rule, i + 1, &s, out);
                    }
                }
            }
            Literal::Not(a) => {
                let found = db[a.relation as usize]
                    .iter()
                    .any(|t| naive_match(&a.args, t, &mut slots.to_vec()));
                if !found {
                    naive_body(db, rule, i + 1, slots, out);
                }
            }
            Literal::Filter { op, ty, lhs, rhs } => {
                if let (Some(a), Some(b)) = (naive_expr(lhs, slots), naive_expr(rhs, slots))
                    && naive_cmp(*op, *ty, a, b)
                {
                    naive_body(db, rule, i + 1, slots, out);
                }
            }
            Literal::Assign { var, expr } => {
                if let Some(val) = naive_expr(expr, slots) {
                    let mut s = slots.to_vec();
                    s[*var as usize] = Some(val);
                    naive_body(db, rule, i + 1, &s, out);
                }
            }
        }
    }

    /// Per stratum, apply every rule to everything until nothing changes.
    fn naive(p: &Program, base: &[(RelId, Vec<Value>)]) -> Vec<Tuples> {
        let mut db = vec![Tuples::new(); p.relations.len()];
        for (rel, t) in base {
            db[*rel as usize].insert(t.clone());
        }
        for stratum in &p.strata {
            loop {
                let mut new = Vec::new();
                for &r in &stratum.rules {
                    let rule = &p.rules[r];
                    naive_body(&db, rule, 0, &vec![None; rule.var_names.len()], &mut new);
                }
                let mut changed = false;
                for (rel, t) in new {
                    changed |= db[rel as usize].insert(t);
                }
                if !changed {
                    break;
                }
            }
        }
        db
    }

    fn assert_matches_naive(e: &Seminaive, base: &[(RelId, Vec<Value>)]) {
        let p = e.program();
        let expected = naive(p, base);
        for (rel, want) in expected.iter().enumerate() {
            assert_eq!(
                &got(e, rel as RelId),
                want,
                "relation {}",
                p.relations[rel].name
            );
        }
    }

    // ---- sample programs ----

    fn edges(b: &mut Builder, list: &[(i32, i32)]) -> RelId {
        let e = b.nums("e", 2);
        for &(s, t) in list {
            b.fact(e, &[s, t]);
        }
        e
    }

    /// `tc(x, y) :- e(x, y). tc(x, y) :- tc(x, z), e(z, y).`
    fn tc_linear(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let tc = b.nums("tc", 2);
        let r0 = b.rule(tc, vec![x(0), x(1)], vec![pos(e, &[v(0), v(1)])]);
        let r1 = b.rule(
            tc,
            vec![x(0), x(1)],
            vec![pos(tc, &[v(0), v(2)]), pos(e, &[v(2), v(1)])],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[tc], &[r0, r1]);
        (b.build(), tc)
    }

    /// `tc(x, y) :- e(x, y). tc(x, y) :- tc(x, z), tc(z, y).`
    fn tc_nonlinear(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let tc = b.nums("tc", 2);
        let r0 = b.rule(tc, vec![x(0), x(1)], vec![pos(e, &[v(0), v(1)])]);
        let r1 = b.rule(
            tc,
            vec![x(0), x(1)],
            vec![pos(tc, &[v(0), v(2)]), pos(tc, &[v(2), v(1)])],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[tc], &[r0, r1]);
        (b.build(), tc)
    }

    /// Right-linear closure, plus a third, fully bound recursive atom (a hash-set probe
    /// restricted to old/delta/full rows): `tc(x, y) :- e(x, z), tc(z, y), tc(z, y).`
    fn tc_right_probe(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let tc = b.nums("tc", 2);
        let r0 = b.rule(tc, vec![x(0), x(1)], vec![pos(e, &[v(0), v(1)])]);
        let r1 = b.rule(
            tc,
            vec![x(0), x(1)],
            vec![
                pos(e, &[v(0), v(2)]),
                pos(tc, &[v(2), v(1)]),
                pos(tc, &[v(2), v(1)]),
            ],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[tc], &[r0, r1]);
        (b.build(), tc)
    }

    /// Same generation over the parent relation `e(child, parent)`:
    /// `sg(x, y) :- e(x, p), e(y, p), x != y. sg(x, y) :- e(x, a), sg(a, b), e(y, b).`
    fn same_generation(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let sg = b.nums("sg", 2);
        let r0 = b.rule(
            sg,
            vec![x(0), x(1)],
            vec![
                pos(e, &[v(0), v(2)]),
                pos(e, &[v(1), v(2)]),
                cmp(CmpOp::Ne, Type::Number, x(0), x(1)),
            ],
        );
        let r1 = b.rule(
            sg,
            vec![x(0), x(1)],
            vec![
                pos(e, &[v(0), v(2)]),
                pos(sg, &[v(2), v(3)]),
                pos(e, &[v(1), v(3)]),
            ],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[sg], &[r0, r1]);
        (b.build(), sg)
    }

    /// `node(x) :- e(x, _). node(y) :- e(_, y). tc as linear.
    /// unreach(x, y) :- node(x), node(y), !tc(x, y).`
    fn unreachable(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let node = b.nums("node", 1);
        let tc = b.nums("tc", 2);
        let unreach = b.nums("unreach", 2);
        let n0 = b.rule(node, vec![x(0)], vec![pos(e, &[v(0), W])]);
        let n1 = b.rule(node, vec![x(0)], vec![pos(e, &[W, v(0)])]);
        let t0 = b.rule(tc, vec![x(0), x(1)], vec![pos(e, &[v(0), v(1)])]);
        let t1 = b.rule(
            tc,
            vec![x(0), x(1)],
            vec![pos(tc, &[v(0), v(2)]), pos(e, &[v(2), v(1)])],
        );
        let u = b.rule(
            unreach,
            vec![x(0), x(1)],
            vec![
                pos(node, &[v(0)]),
                pos(node, &[v(1)]),
                neg(tc, &[v(0), v(1)]),
            ],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[node], &[n0, n1]);
        b.stratum(&[tc], &[t0, t1]);
        b.stratum(&[unreach], &[u]);
        (b.build(), unreach)
    }

    /// Mutual recursion with arithmetic: `even(0). odd(y) :- even(x), y = x + 1, y < 20.
    /// even(y) :- odd(x), e(x, y).` plus `dist(y, d + 1) :- dist(x, d), e(x, y), d < 6`
    /// from `dist(0, 0)`, and `sink(x) :- e(_, x), !e(x, _)`.
    fn mixed(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let even = b.nums("even", 1);
        let odd = b.nums("odd", 1);
        let dist = b.nums("dist", 2);
        let sink = b.nums("sink", 1);
        b.fact(even, &[0]);
        b.fact(dist, &[0, 0]);
        let o = b.rule(
            odd,
            vec![x(1)],
            vec![
                pos(even, &[v(0)]),
                assign(1, bin(ArithOp::Add, Type::Number, x(0), k(1))),
                cmp(CmpOp::Lt, Type::Number, x(1), k(20)),
            ],
        );
        let ev = b.rule(
            even,
            vec![x(1)],
            vec![pos(odd, &[v(0)]), pos(e, &[v(0), v(1)])],
        );
        let d = b.rule(
            dist,
            vec![x(1), bin(ArithOp::Add, Type::Number, x(2), k(1))],
            vec![
                pos(dist, &[v(0), v(2)]),
                pos(e, &[v(0), v(1)]),
                cmp(CmpOp::Lt, Type::Number, x(2), k(6)),
            ],
        );
        let s = b.rule(
            sink,
            vec![x(0)],
            vec![pos(e, &[W, v(0)]), neg(e, &[v(0), W])],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[even, odd], &[o, ev]);
        b.stratum(&[dist], &[d]);
        b.stratum(&[sink], &[s]);
        (b.build(), sink)
    }

    /// One recursive stratum where a join needs an old fact of one relation with a
    /// delta fact of another: `s` is complete after the first round, `t` grows along
    /// the graph from 0, and `r` joins them.
    /// `s(x) :- e(x, _). s(x) :- s(x), r(x). t(0). t(y) :- t(x), e(x, y).
    /// t(x) :- r(x). r(x) :- s(x), t(x).`
    fn late_join(list: &[(i32, i32)]) -> (Program, RelId) {
        let mut b = Builder::new();
        let e = edges(&mut b, list);
        let s = b.nums("s", 1);
        let t = b.nums("t", 1);
        let r = b.nums("r", 1);
        b.fact(t, &[0]);
        let s0 = b.rule(s, vec![x(0)], vec![pos(e, &[v(0), W])]);
        let s1 = b.rule(s, vec![x(0)], vec![pos(s, &[v(0)]), pos(r, &[v(0)])]);
        let t0 = b.rule(t, vec![x(1)], vec![pos(t, &[v(0)]), pos(e, &[v(0), v(1)])]);
        let t1 = b.rule(t, vec![x(0)], vec![pos(r, &[v(0)])]);
        let r0 = b.rule(r, vec![x(0)], vec![pos(s, &[v(0)]), pos(t, &[v(0)])]);
        b.stratum(&[e], &[]);
        b.stratum(&[s, t, r], &[s0, s1, t0, t1, r0]);
        (b.build(), r)
    }

    type Sample = fn(&[(i32, i32)]) -> (Program, RelId);
    const SAMPLES: [Sample; 7] = [
        late_join,
        tc_linear,
        tc_nonlinear,
        tc_right_probe,
        same_generation,
        unreachable,
        mixed,
    ];

    fn base_of(p: &Program) -> Vec<(RelId, Vec<Value>)> {
        p.facts.clone()
    }

    // ---- tests ----

    #[test]
    fn empty_before_first_commit() {
        let (p, tc) = tc_linear(&[(1, 2)]);
        let e = Seminaive::new(p);
        assert_eq!(e.len(tc), 0);
        assert!(e.facts(tc).is_empty());
        assert_eq!(e.len(999), 0);
        assert_eq!(e.name(), "seminaive");
    }

    #[test]
    fn transitive_closure_linear() {
        let (p, tc) = tc_linear(&[(1, 2), (2, 3), (3, 4)]);
        let e = run(p);
        assert_eq!(
            got(&e, tc),
            tuples(&[&[1, 2], &[2, 3], &[3, 4], &[1, 3], &[2, 4], &[1, 4]])
        );
    }

    #[test]
    fn transitive_closure_with_cycle() {
        let list = [(1, 2), (2, 3), (3, 1), (3, 4)];
        for sample in [tc_linear, tc_nonlinear, tc_right_probe] {
            let (p, tc) = sample(&list);
            let e = run(p);
            let mut want = Tuples::new();
            for a in 1..=3 {
                for b in 1..=4 {
                    want.insert(vec![a, b]);
                }
            }
            assert_eq!(got(&e, tc), want);
        }
    }

    #[test]
    fn transitive_closure_nonlinear_takes_logarithmic_rounds() {
        let list: Vec<(i32, i32)> = (0..64).map(|i| (i, i + 1)).collect();
        let (p, tc) = tc_nonlinear(&list);
        let mut e = Seminaive::new(p);
        let stats = e.commit().unwrap();
        assert_eq!(e.len(tc), 65 * 64 / 2);
        // Path lengths double each round: 1, 2, 4, ..., 64, then a round with nothing new.
        assert_eq!(stats.strata[1].iterations, 8);
        let (p, tc) = tc_linear(&list);
        let mut e = Seminaive::new(p);
        let stats = e.commit().unwrap();
        assert_eq!(e.len(tc), 65 * 64 / 2);
        assert_eq!(stats.strata[1].iterations, 65);
    }

    #[test]
    fn commit_stats() {
        let (p, _) = unreachable(&[(1, 2), (2, 3)]);
        let mut e = Seminaive::new(p);
        let stats = e.commit().unwrap();
        let names: Vec<Vec<String>> = stats.strata.iter().map(|s| s.relations.clone()).collect();
        assert_eq!(names, [["e"], ["node"], ["tc"], ["unreach"]]);
        let facts: Vec<usize> = stats.strata.iter().map(|s| s.facts).collect();
        assert_eq!(facts, [2, 3, 3, 6]);
        let iterations: Vec<usize> = stats.strata.iter().map(|s| s.iterations).collect();
        assert_eq!(iterations, [1, 1, 3, 1]);
    }

    #[test]
    fn same_generation_tree() {
        // e(child, parent): 1 is the root, 2 and 3 its children, 4, 5 under 2, 6 under 3.
        let (p, sg) = same_generation(&[(2, 1), (3, 1), (4, 2), (5, 2), (6, 3)]);
        let e = run(p);
        let mut want = Tuples::new();
        for generation in [&[2, 3][..], &[4, 5, 6][..]] {
            for &a in generation {
                for &b in generation {
                    if a != b {
                        want.insert(vec![a, b]);
                    }
                }
            }
        }
        assert_eq!(got(&e, sg), want);
    }

    #[test]
    fn repeated_variable_in_atom() {
        let mut b = Builder::new();
        let e = edges(&mut b, &[(1, 1), (1, 2), (2, 2), (3, 4)]);
        let node = b.nums("node", 1);
        let selfloop = b.nums("selfloop", 1);
        let selfloop2 = b.nums("selfloop2", 1);
        let triple = b.nums("triple", 3);
        let diag = b.nums("diag", 1);
        for n in 1..=4 {
            b.fact(node, &[n]);
        }
        b.fact(triple, &[1, 1, 1]);
        b.fact(triple, &[1, 2, 1]);
        b.fact(triple, &[2, 2, 3]);
        b.fact(triple, &[4, 4, 4]);
        // selfloop(x) :- e(x, x).   (x unbound: a column equality check)
        let r0 = b.rule(selfloop, vec![x(0)], vec![pos(e, &[v(0), v(0)])]);
        // selfloop2(x) :- node(x), e(x, x).   (x bound: both columns are key columns)
        let r1 = b.rule(
            selfloop2,
            vec![x(0)],
            vec![pos(node, &[v(0)]), pos(e, &[v(0), v(0)])],
        );
        // diag(y) :- triple(y, x, y), node(x).
        let r2 = b.rule(
            diag,
            vec![x(0)],
            vec![pos(triple, &[v(0), v(1), v(0)]), pos(node, &[v(1)])],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[node], &[]);
        b.stratum(&[triple], &[]);
        b.stratum(&[selfloop], &[r0]);
        b.stratum(&[selfloop2], &[r1]);
        b.stratum(&[diag], &[r2]);
        let p = b.build();
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(got(&eng, selfloop), tuples(&[&[1], &[2]]));
        assert_eq!(got(&eng, selfloop2), tuples(&[&[1], &[2]]));
        assert_eq!(got(&eng, diag), tuples(&[&[1], &[4]]));
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn constants_and_wildcards_in_atoms() {
        let mut b = Builder::new();
        let e = edges(&mut b, &[(1, 2), (1, 3), (2, 3), (4, 3), (5, 1)]);
        let from1 = b.nums("from1", 1);
        let to3 = b.nums("to3", 1);
        let has_out = b.nums("has_out", 1);
        let one_two = b.nums("one_two", 0);
        let sink = b.nums("sink", 1);
        let r0 = b.rule(from1, vec![x(0)], vec![pos(e, &[c(1), v(0)])]);
        let r1 = b.rule(to3, vec![x(0)], vec![pos(e, &[v(0), c(3)])]);
        let r2 = b.rule(has_out, vec![x(0)], vec![pos(e, &[v(0), W])]);
        let r3 = b.rule(one_two, vec![], vec![pos(e, &[c(1), c(2)])]);
        // sink(y) :- e(_, y), !e(y, _).
        let r4 = b.rule(
            sink,
            vec![x(0)],
            vec![pos(e, &[W, v(0)]), neg(e, &[v(0), W])],
        );
        b.stratum(&[e], &[]);
        b.stratum(&[from1], &[r0]);
        b.stratum(&[to3], &[r1]);
        b.stratum(&[has_out], &[r2]);
        b.stratum(&[one_two], &[r3]);
        b.stratum(&[sink], &[r4]);
        let p = b.build();
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(got(&eng, from1), tuples(&[&[2], &[3]]));
        assert_eq!(got(&eng, to3), tuples(&[&[1], &[2], &[4]]));
        assert_eq!(got(&eng, has_out), tuples(&[&[1], &[2], &[4], &[5]]));
        assert_eq!(got(&eng, one_two), tuples(&[&[]]));
        assert_eq!(got(&eng, sink), tuples(&[&[3]]));
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn stratified_negation() {
        let (p, unreach) = unreachable(&[(1, 2), (2, 3), (3, 2)]);
        let e = run(p);
        assert_eq!(
            got(&e, unreach),
            tuples(&[&[1, 1], &[2, 1], &[3, 1]]),
            "1 is reachable from nobody, and 2 and 3 reach each other and themselves"
        );
    }

    #[test]
    fn filters_on_numbers_unsigned_and_floats() {
        let mut b = Builder::new();
        let n = b.nums("n", 1);
        let u = b.rel("u", &[Type::Unsigned]);
        let f = b.rel("f", &[Type::Float]);
        let s = b.rel("s", &[Type::Symbol, Type::Symbol]);
        let positive = b.nums("positive", 1);
        let ordered = b.nums("ordered", 2);
        let big = b.rel("big", &[Type::Unsigned]);
        let small = b.rel("small", &[Type::Float]);
        let same = b.rel("same", &[Type::Symbol]);
        for v in [-5, -1, 0, 3, i32::MAX, i32::MIN] {
            b.fact(n, &[v]);
        }
        for v in [1u32, 2_000_000_000, 3_000_000_000, u32::MAX] {
            b.fact(u, &[v as i32]);
        }
        for v in [-2.5f32, 0.5, 1.5, 2.0, f32::NAN] {
            b.fact(f, &[v.to_bits() as i32]);
        }
        b.fact(s, &[7, 7]);
        b.fact(s, &[7, 8]);
        b.fact(s, &[9, 9]);
        // positive(x) :- n(x), x > 0.
        let r0 = b.rule(
            positive,
            vec![x(0)],
            vec![pos(n, &[v(0)]), cmp(CmpOp::Gt, Type::Number, x(0), k(0))],
        );
        // ordered(x, y) :- n(x), n(y), x < y, y <= -1.
        let r1 = b.rule(
            ordered,
            vec![x(0), x(1)],
            vec![
                pos(n, &[v(0)]),
                pos(n, &[v(1)]),
                cmp(CmpOp::Lt, Type::Number, x(0), x(1)),
                cmp(CmpOp::Le, Type::Number, x(1), k(-1)),
            ],
        );
        // big(x) :- u(x), x >= 2500000000.
        let r2 = b.rule(
            big,
            vec![x(0)],
            vec![
                pos(u, &[v(0)]),
                cmp(CmpOp::Ge, Type::Unsigned, x(0), Expr::Const(2_500_000_000)),
            ],
        );
        // small(x) :- f(x), x < 1.75, x != 0.5.
        let r3 = b.rule(
            small,
            vec![x(0)],
            vec![
                pos(f, &[v(0)]),
                cmp(CmpOp::Lt, Type::Float, x(0), kf(1.75)),
                cmp(CmpOp::Ne, Type::Float, x(0), kf(0.5)),
            ],
        );
        // same(x) :- s(x, y), x = y.
        let r4 = b.rule(
            same,
            vec![x(0)],
            vec![
                pos(s, &[v(0), v(1)]),
                cmp(CmpOp::Eq, Type::Symbol, x(0), x(1)),
            ],
        );
        b.stratum(&[n], &[]);
        b.stratum(&[u], &[]);
        b.stratum(&[f], &[]);
        b.stratum(&[s], &[]);
        b.stratum(&[positive], &[r0]);
        b.stratum(&[ordered], &[r1]);
        b.stratum(&[big], &[r2]);
        b.stratum(&[small], &[r3]);
        b.stratum(&[same], &[r4]);
        let p = b.build();
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(got(&eng, positive), tuples(&[&[3], &[i32::MAX]]));
        assert_eq!(
            got(&eng, ordered),
            tuples(&[&[-5, -1], &[i32::MIN, -5], &[i32::MIN, -1]])
        );
        assert_eq!(
            got(&eng, big),
            tuples(&[&[3_000_000_000u32 as i32], &[u32::MAX as i32]])
        );
        assert_eq!(
            got(&eng, small),
            tuples(&[&[(-2.5f32).to_bits() as i32], &[1.5f32.to_bits() as i32]])
        );
        assert_eq!(got(&eng, same), tuples(&[&[7], &[9]]));
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn assignment_and_arithmetic_in_the_head() {
        let mut b = Builder::new();
        let n = b.nums("n", 1);
        let fl = b.rel("fl", &[Type::Float]);
        let out = b.nums("out", 3);
        let fout = b.rel("fout", &[Type::Float, Type::Float]);
        for v in [-3, 0, 7, i32::MAX] {
            b.fact(n, &[v]);
        }
        b.fact(fl, &[1.5f32.to_bits() as i32]);
        // out(x, y * 2, -(x - 1)) :- n(x), y = x + 1.
        let r0 = b.rule(
            out,
            vec![
                x(0),
                bin(ArithOp::Mul, Type::Number, x(1), k(2)),
                Expr::Neg(
                    Type::Number,
                    Box::new(bin(ArithOp::Sub, Type::Number, x(0), k(1))),
                ),
            ],
            vec![
                pos(n, &[v(0)]),
                assign(1, bin(ArithOp::Add, Type::Number, x(0), k(1))),
            ],
        );
        // fout(x, x * x + 0.25) :- fl(x).
        let r1 = b.rule(
            fout,
            vec![
                x(0),
                bin(
                    ArithOp::Add,
                    Type::Float,
                    bin(ArithOp::Mul, Type::Float, x(0), x(0)),
                    kf(0.25),
                ),
            ],
            vec![pos(fl, &[v(0)])],
        );
        b.stratum(&[n], &[]);
        b.stratum(&[fl], &[]);
        b.stratum(&[out], &[r0]);
        b.stratum(&[fout], &[r1]);
        let p = b.build();
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(
            got(&eng, out),
            tuples(&[
                &[-3, -4, 4],
                &[0, 2, 1],
                &[7, 16, -6],
                // i32::MAX + 1 wraps to i32::MIN, times 2 wraps to 0.
                &[i32::MAX, 0, -(i32::MAX - 1)],
            ])
        );
        assert_eq!(
            got(&eng, fout),
            tuples(&[&[1.5f32.to_bits() as i32, 2.5f32.to_bits() as i32]])
        );
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn division_by_zero_derives_nothing() {
        let mut b = Builder::new();
        let n = b.nums("n", 1);
        let q = b.nums("q", 2);
        let r = b.nums("r", 2);
        let u = b.rel("u", &[Type::Unsigned]);
        let uq = b.rel("uq", &[Type::Unsigned]);
        let guarded = b.nums("guarded", 1);
        for v in [0, 2, 5, -4] {
            b.fact(n, &[v]);
        }
        b.fact(u, &[0]);
        b.fact(u, &[3]);
        // q(x, 20 / x) :- n(x).
        let r0 = b.rule(
            q,
            vec![x(0), bin(ArithOp::Div, Type::Number, k(20), x(0))],
            vec![pos(n, &[v(0)])],
        );
        // r(x, y) :- n(x), y = 7 % x.
        let r1 = b.rule(
            r,
            vec![x(0), x(1)],
            vec![
                pos(n, &[v(0)]),
                assign(1, bin(ArithOp::Mod, Type::Number, k(7), x(0))),
            ],
        );
        // uq(9 / x) :- u(x).
        let r2 = b.rule(
            uq,
            vec![bin(ArithOp::Div, Type::Unsigned, k(9), x(0))],
            vec![pos(u, &[v(0)])],
        );
        // guarded(x) :- n(x), 10 / x > 1.
        let r3 = b.rule(
            guarded,
            vec![x(0)],
            vec![
                pos(n, &[v(0)]),
                cmp(
                    CmpOp::Gt,
                    Type::Number,
                    bin(ArithOp::Div, Type::Number, k(10), x(0)),
                    k(1),
                ),
            ],
        );
        b.stratum(&[n], &[]);
        b.stratum(&[u], &[]);
        b.stratum(&[q], &[r0]);
        b.stratum(&[r], &[r1]);
        b.stratum(&[uq], &[r2]);
        b.stratum(&[guarded], &[r3]);
        let p = b.build();
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(got(&eng, q), tuples(&[&[2, 10], &[5, 4], &[-4, -5]]));
        assert_eq!(got(&eng, r), tuples(&[&[2, 1], &[5, 2], &[-4, 3]]));
        assert_eq!(got(&eng, uq), tuples(&[&[3]]));
        assert_eq!(got(&eng, guarded), tuples(&[&[2], &[5]]));
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn insert_remove_commit() {
        let (p, tc) = tc_linear(&[(1, 2), (2, 3)]);
        let e_rel = p.relation_id("e").unwrap();
        let mut eng = Seminaive::new(p);
        eng.commit().unwrap();
        let before = got(&eng, tc);
        assert_eq!(before, tuples(&[&[1, 2], &[2, 3], &[1, 3]]));

        // Staged changes are invisible until the commit.
        eng.insert(e_rel, &[3, 4]);
        assert_eq!(got(&eng, tc), before);
        eng.commit().unwrap();
        assert_eq!(eng.len(tc), 6);

        eng.remove(e_rel, &[3, 4]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), before);

        // Insert then remove in one commit: no change. Removing a non-fact: no effect.
        eng.insert(e_rel, &[3, 1]);
        eng.remove(e_rel, &[3, 1]);
        eng.remove(e_rel, &[9, 9]);
        eng.insert(e_rel, &[1, 2]); // already there
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), before);
        assert_eq!(eng.len(e_rel), 2);

        // Inline facts are base facts and can be removed.
        eng.remove(e_rel, &[1, 2]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), tuples(&[&[2, 3]]));
        eng.insert(e_rel, &[1, 2]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), before);

        // A base fact of a derived relation that is also derivable stays when removed.
        eng.insert(tc, &[1, 3]);
        eng.insert(tc, &[7, 1]);
        eng.commit().unwrap();
        assert_eq!(
            got(&eng, tc),
            tuples(&[&[1, 2], &[2, 3], &[1, 3], &[7, 1], &[7, 2], &[7, 3]])
        );
        eng.remove(tc, &[1, 3]);
        eng.remove(tc, &[7, 1]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), before);

        // Wrong arity and unknown relations are ignored.
        eng.insert(e_rel, &[1]);
        eng.insert(99, &[1, 2]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, tc), before);
    }

    #[test]
    fn nullary_relations() {
        let mut b = Builder::new();
        let e = edges(&mut b, &[(1, 2)]);
        let flag = b.nums("flag", 0);
        let nonempty = b.nums("nonempty", 0);
        let off = b.nums("off", 0);
        let on_and_not_off = b.nums("on_and_not_off", 0);
        let gated = b.nums("gated", 2);
        let reach = b.nums("reach", 0);
        // nonempty() :- e(_, _).
        let r0 = b.rule(nonempty, vec![], vec![pos(e, &[W, W])]);
        // on_and_not_off() :- flag(), !off().
        let r1 = b.rule(on_and_not_off, vec![], vec![pos(flag, &[]), neg(off, &[])]);
        // gated(x, y) :- flag(), e(x, y).
        let r2 = b.rule(
            gated,
            vec![x(0), x(1)],
            vec![pos(flag, &[]), pos(e, &[v(0), v(1)])],
        );
        // reach() :- nonempty(). reach() :- reach(), flag().   (recursive nullary)
        let r3 = b.rule(reach, vec![], vec![pos(nonempty, &[])]);
        let r4 = b.rule(reach, vec![], vec![pos(reach, &[]), pos(flag, &[])]);
        b.stratum(&[e], &[]);
        b.stratum(&[flag], &[]);
        b.stratum(&[off], &[]);
        b.stratum(&[nonempty], &[r0]);
        b.stratum(&[on_and_not_off], &[r1]);
        b.stratum(&[gated], &[r2]);
        b.stratum(&[reach], &[r3, r4]);
        let p = b.build();
        let mut eng = Seminaive::new(p);
        eng.commit().unwrap();
        let unit = tuples(&[&[]]);
        assert_eq!(got(&eng, nonempty), unit);
        assert_eq!(got(&eng, reach), unit);
        assert_eq!(eng.len(on_and_not_off), 0);
        assert_eq!(eng.len(gated), 0);

        eng.insert(flag, &[]);
        eng.insert(flag, &[]);
        eng.commit().unwrap();
        assert_eq!(got(&eng, flag), unit);
        assert_eq!(got(&eng, on_and_not_off), unit);
        assert_eq!(got(&eng, gated), tuples(&[&[1, 2]]));

        eng.insert(off, &[]);
        eng.remove(e, &[1, 2]);
        eng.commit().unwrap();
        assert_eq!(eng.len(on_and_not_off), 0);
        assert_eq!(eng.len(nonempty), 0);
        assert_eq!(eng.len(reach), 0);
        assert_eq!(eng.len(gated), 0);
        let base = vec![(flag, vec![]), (off, vec![])];
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn base_facts_of_recursive_relations_seed_the_fixpoint() {
        let (mut p, tc) = tc_linear(&[(1, 2), (2, 3)]);
        p.facts.push((tc, vec![5, 1]));
        let base = base_of(&p);
        let eng = run(p);
        assert_eq!(
            got(&eng, tc),
            tuples(&[&[1, 2], &[2, 3], &[1, 3], &[5, 1], &[5, 2], &[5, 3]])
        );
        assert_matches_naive(&eng, &base);
    }

    #[test]
    fn old_facts_join_new_facts_of_another_relation() {
        let (p, r) = late_join(&[(0, 1), (1, 2), (2, 3), (3, 4), (7, 8)]);
        assert_eq!(got(&run(p), r), tuples(&[&[0], &[1], &[2], &[3]]));
    }

    #[test]
    fn large_closure() {
        // Big enough for the derived tuples to be inserted in sorted batches.
        let n = 400;
        let mut list: Vec<(i32, i32)> = (0..n).map(|i| (i, (i + 1) % n)).collect();
        list.extend((0..n).step_by(7).map(|i| (i, (i * 13) % n)));
        let (p, tc) = tc_linear(&list);
        let e = run(p);
        assert_eq!(e.len(tc), (n * n) as usize);
        let distinct: BTreeSet<Vec<Value>> = e.facts(tc).into_iter().collect();
        assert_eq!(distinct.len(), (n * n) as usize);
    }

    #[test]
    fn samples_match_naive_fixpoint() {
        let graphs: [&[(i32, i32)]; 5] = [
            &[],
            &[(0, 1), (1, 2), (2, 3), (3, 4)],
            &[(0, 1), (1, 0), (1, 2), (2, 2), (3, 1), (4, 5)],
            &[
                (1, 0),
                (2, 0),
                (3, 1),
                (4, 1),
                (5, 2),
                (6, 5),
                (7, 6),
                (8, 4),
            ],
            &[(0, 0)],
        ];
        for graph in graphs {
            for sample in SAMPLES {
                let (p, _) = sample(graph);
                let base = base_of(&p);
                assert_matches_naive(&run(p), &base);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_graphs_match_naive(
            graph in proptest::collection::vec((0i32..7, 0i32..7), 0..16),
        ) {
            for sample in SAMPLES {
                let (p, _) = sample(&graph);
                let base = base_of(&p);
                assert_matches_naive(&run(p), &base);
            }
        }

        #[test]
        fn random_updates_match_naive(
            graph in proptest::collection::vec((0i32..6, 0i32..6), 0..10),
            steps in proptest::collection::vec(
                proptest::collection::vec((any::<bool>(), 0i32..6, 0i32..6), 0..6),
                1..5,
            ),
        ) {
            for sample in [tc_nonlinear, unreachable, mixed] {
                let (p, _) = sample(&graph);
                let e_rel = p.relation_id("e").unwrap();
                let mut base: BTreeSet<(RelId, Vec<Value>)> = p.facts.iter().cloned().collect();
                let mut eng = Seminaive::new(p);
                for step in &steps {
                    for &(insert, s, t) in step {
                        let tuple = vec![s as Value, t as Value];
                        if insert {
                            eng.insert(e_rel, &tuple);
                            base.insert((e_rel, tuple));
                        } else {
                            eng.remove(e_rel, &tuple);
                            base.remove(&(e_rel, tuple));
                        }
                    }
                    eng.commit().unwrap();
                    let base: Vec<_> = base.iter().cloned().collect();
                    assert_matches_naive(&eng, &base);
                }
            }
        }
    }
}

/// A manual benchmark: `cargo test --release -p dynalog-engines -- --ignored --nocapture
/// tc_benchmark`: the transitive closure of a pseudo-random graph of 5000 nodes and
/// `TC_EDGES` edges (default 20000, about 24 million facts); see `TC_SHAPE` below.
#[cfg(test)]
mod bench {
    use super::*;
    use dynalog_analysis::{Atom, Expr, Head, Literal, Relation, Rule, Stratum, SymbolTable};
    use dynalog_analysis::{Term, Type};
    use dynalog_syntax::Span;

    fn relation(name: &str) -> Relation {
        Relation {
            name: name.to_string(),
            column_names: vec!["a".into(), "b".into()],
            types: vec![Type::Number; 2],
            inputs: Vec::new(),
            outputs: Vec::new(),
            printsize: false,
            implicit: false,
            eqrel: false,
            span: Span::default(),
        }
    }

    fn rule(head: RelId, body: Vec<(RelId, [u32; 2])>) -> Rule {
        Rule {
            head: Head {
                relation: head,
                args: vec![Expr::Var(0), Expr::Var(1)],
            },
            body: body
                .into_iter()
                .map(|(relation, [a, b])| {
                    Literal::Atom(Atom {
                        relation,
                        args: vec![Term::Var(a), Term::Var(b)],
                    })
                })
                .collect(),
            var_names: vec!["x".into(), "y".into(), "z".into()],
            var_types: vec![Type::Number; 3],
            stratum: 1,
            text: String::new(),
            generated: false,
            span: Span::default(),
        }
    }

    #[test]
    #[ignore]
    fn tc_benchmark() {
        let nodes: u32 = 5000;
        let edges: u32 = std::env::var("TC_EDGES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20_000);
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % nodes as u64) as u32
        };
        let facts = (0..edges).map(|_| (0, vec![next(), next()])).collect();
        // TC_SHAPE: `left` (default) `tc(x, y) :- tc(x, z), e(z, y)`, `right`
        // `tc(x, y) :- e(x, z), tc(z, y)` or `nonlinear` `tc(x, y) :- tc(x, z), tc(z, y)`.
        let recursive = match std::env::var("TC_SHAPE").as_deref() {
            Ok("right") => rule(1, vec![(0, [0, 2]), (1, [2, 1])]),
            Ok("nonlinear") => rule(1, vec![(1, [0, 2]), (1, [2, 1])]),
            _ => rule(1, vec![(1, [0, 2]), (0, [2, 1])]),
        };
        let program = Program {
            aggregates: Vec::new(),
            relations: vec![relation("e"), relation("tc")],
            rules: vec![rule(1, vec![(0, [0, 1])]), recursive],
            facts,
            strata: vec![
                Stratum {
                    subsumption: None,
                    choice: None,
                    aggregates: Vec::new(),
                    relations: vec![0],
                    rules: vec![],
                    recursive: false,
                },
                Stratum {
                    subsumption: None,
                    choice: None,
                    aggregates: Vec::new(),
                    relations: vec![1],
                    rules: vec![0, 1],
                    recursive: true,
                },
            ],
            symbols: SymbolTable::new(),
            warnings: Vec::new(),
        };
        let mut engine = Seminaive::new(program);
        let stats = engine.commit().unwrap();
        let peak = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM"))
                    .map(str::to_string)
            })
            .unwrap_or_default();
        println!(
            "tc: {} facts, {} rounds, {:?}; {peak}",
            engine.len(1),
            stats.strata[1].iterations,
            stats.elapsed
        );
    }
}
