//! Incremental maintenance by delete-rederive (DRED, Gupta–Mumick), shared by the
//! `relational` and `chibi` engines; they differ only in how one rule is evaluated
//! (an [`Evaluator`]).
//!
//! # State
//!
//! The materialization of every relation (a [`Store`] with the hash indexes the
//! evaluator asked for) is kept between commits, with the base facts (inline facts plus
//! insertions minus removals). A commit first applies the staged changes to the base
//! facts, giving per relation the facts that became base (`B+`) and stopped being base
//! (`B-`). Relations without rules change exactly like their base facts. Then the strata
//! are maintained in order; when stratum `S` is reached, every lower relation `L` is
//! final and its changes of this commit are known: `L+` (facts that appeared) and `L-`
//! (facts that disappeared).
//!
//! # One stratum
//!
//! Every rule is compiled in several *variants*, each the body reordered so that one
//! literal comes first and reads a *delta* (a set of facts) instead of its relation:
//! a positive atom (`Pos`), a negated atom turned positive with the negation kept in
//! place (`Neg`: the facts that make the negation change), and the head pattern over
//! the overdeleted facts (`Rederive`: it binds the head variables first).
//!
//! 1. **Overdeletion**, over the *old* state: the stratum's relations are untouched yet,
//!    lower positive atoms read `L ∪ L-` (a superset of the old `L`) and negations hold
//!    unless a fact of `L \ L+` (a subset of the old `L`) matches, so every old
//!    derivation is seen. The seeds are the stratum's `B-` facts, the derivations with a
//!    lower positive atom in `L-` and those with a lower negated atom in `L+` (the
//!    negation no longer holds: with negation, a lower *insertion* deletes). Then,
//!    semi-naively, everything derived with a positive atom over an overdeleted fact is
//!    overdeleted too. Only facts of the materialization count.
//! 2. The overdeleted facts are removed from the materialization.
//! 3. **Rederivation**: an overdeleted fact that is a base fact, or has a one-step
//!    derivation from the remaining facts and the new lower relations, is put back.
//! 4. **Insertion**, semi-naive continuation over the new state: the first round's
//!    delta is the rederived facts and the `B+` facts, plus the derivations with a lower
//!    positive atom in `L+` or a lower negated atom in `L-` (the negation now holds);
//!    rounds run until no new fact appears. A fact derived again that had been
//!    overdeleted is also counted as rederived.
//!
//! The stratum's changes are then the facts added that were not there (`S+`) and the
//! overdeleted facts not put back (`S-`). [`CommitStats::overdeleted`] and
//! [`CommitStats::rederived`] count, over all strata, the facts overdeleted and those of
//! them back in the materialization after the commit.
//!
//! In every round the tasks (rule variant, delta) are evaluated in parallel by the
//! engine's workers (rule-level parallelism, `std::thread::scope`; sequentially with one
//! worker), then their head tuples are merged sequentially.
//!
//! # Rule changes and the first commit
//!
//! A commit after [`Engine::set_program`] (and the first commit) rematerializes
//! everything: semi-naive evaluation from the base facts, every rule run in full in the
//! first round of its stratum. The changes are then the difference of the
//! materializations before and after. So does every commit of a program with a
//! recursive relation with subsumption ([`dynalog_analysis::Subsumed`]: shortest paths),
//! which delete-rederive cannot maintain: a tuple a new candidate dominates would have
//! to take back what it derived, a deleted candidate bring back what it dominated.

use crate::staging::{Staging, initial_base, resize_base};
/// The materialization's store of a relation (see [`crate::store::IndexedSet`]).
pub use crate::store::IndexedSet as Store;
use crate::{Budget, ChangeList, CommitStats, Engine, EngineError, Limits, StratumStats};
use dynalog_analysis::{Atom, Expr, Literal, Program, RelId, Rule, Term, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// The state rule variants read.
pub struct View<'a> {
    /// The materialization, per relation.
    pub stores: &'a [Store],
    /// In the overdeletion phase, the old state: `(L-, L+)` per relation. Positive atoms
    /// also read `L-`; negations ignore the facts of `L+`.
    pub old: Option<(&'a [Store], &'a [Store])>,
}

impl View<'_> {
    /// Whether a negation must ignore a fact of the materialization: in the old view,
    /// the facts of `L+` (they were not there).
    pub fn hidden(&self, rel: usize, row: &[u32]) -> bool {
        self.old.is_some_and(|(_, plus)| plus[rel].contains(row))
    }
}

/// Head tuples produced by one task, flat (stride = the head's arity), and the limits
/// of the commit: an evaluator calls [`Output::tick`] in its loops and stops when
/// [`Output::stopped`].
#[derive(Debug)]
pub struct Output<'b> {
    pub data: Vec<u32>,
    pub count: usize,
    budget: &'b Budget,
    ticks: u32,
}

impl<'b> Output<'b> {
    fn new(budget: &'b Budget) -> Output<'b> {
        Output {
            data: Vec::new(),
            count: 0,
            budget,
            ticks: 0,
        }
    }

    pub fn push(&mut self, tuple: &[u32]) {
        self.data.extend_from_slice(tuple);
        self.count += 1;
        self.tick();
    }

    /// Count a step of work; every few thousand, check the deadline.
    #[inline]
    pub fn tick(&mut self) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks & 0xFFF == 0 {
            self.budget.check_time();
        }
    }

    /// Whether a limit of the commit was hit: the evaluation should stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.budget.stopped()
    }

    fn tuples(&self, arity: usize) -> impl Iterator<Item = &[u32]> {
        (0..self.count).map(move |i| &self.data[i * arity..(i + 1) * arity])
    }
}

/// How one rule is evaluated.
pub trait Evaluator: Sync + Sized {
    const NAME: &'static str;

    /// Compile the variants of every rule (`variants[rule][v]`; variant 0 is the rule as
    /// written, the first literal of every other variant is a positive atom that reads
    /// the delta). Returns the evaluator and the column sets of the indexes the stores
    /// of each relation must have.
    fn compile(program: &Program, variants: &[Vec<Rule>]) -> (Self, Vec<Vec<Box<[usize]>>>);

    /// Evaluate variant `variant` of rule `rule` over `view` (the first literal over
    /// `delta` when given), pushing the head tuples to `out`. With `witness`, the head
    /// is the delta fact itself (a rederivation variant whose head pattern has no
    /// expression), so one derivation per delta fact is enough; an evaluator may stop
    /// there.
    fn run(
        &self,
        rule: usize,
        variant: usize,
        view: &View<'_>,
        delta: Option<&Store>,
        witness: bool,
        out: &mut Output<'_>,
    );
}

/// The variants of one rule (indexes into the rule's variant list).
#[derive(Clone, Debug)]
pub(crate) struct RuleInfo {
    head: RelId,
    /// Per body literal: `(relation, positive, variant)` for atoms and negations.
    lits: Vec<Option<(RelId, bool, usize)>>,
    /// The variant whose first atom is the head pattern (`None`: no head argument is a
    /// variable or a constant; the rule is then rerun in full), and whether every head
    /// argument is (the pattern is the head: one derivation per fact suffices).
    rederive: Option<(usize, bool)>,
}

/// `rule` with its body literal `i` moved first, the others in their order.
pub(crate) fn literal_first(rule: &Rule, i: usize) -> Rule {
    let mut body = vec![rule.body[i].clone()];
    body.extend(
        rule.body
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, l)| l.clone()),
    );
    Rule {
        body,
        ..rule.clone()
    }
}

/// The variants of `rule` and where they are.
pub(crate) fn variants(rule: &Rule) -> (Vec<Rule>, RuleInfo) {
    let mut out = vec![rule.clone()];
    let mut lits = Vec::with_capacity(rule.body.len());
    let with_body = |body: Vec<Literal>| Rule {
        body,
        ..rule.clone()
    };
    for (i, lit) in rule.body.iter().enumerate() {
        match lit {
            Literal::Atom(a) => {
                lits.push(Some((a.relation, true, out.len())));
                out.push(literal_first(rule, i));
            }
            Literal::Not(a) => {
                let mut body = vec![Literal::Atom(a.clone())];
                body.extend(rule.body.iter().cloned());
                lits.push(Some((a.relation, false, out.len())));
                out.push(with_body(body));
            }
            _ => lits.push(None),
        }
    }
    let pattern: Vec<Term> = rule
        .head
        .args
        .iter()
        .map(|e| match e {
            Expr::Var(v) => Term::Var(*v),
            Expr::Const(c) => Term::Const(*c),
            _ => Term::Wildcard,
        })
        .collect();
    let pattern_has_wildcard = pattern.contains(&Term::Wildcard);
    let rederive = if pattern.iter().any(|t| *t != Term::Wildcard) || pattern.is_empty() {
        let mut body = vec![Literal::Atom(Atom {
            relation: rule.head.relation,
            args: pattern,
        })];
        body.extend(rule.body.iter().cloned());
        out.push(with_body(body));
        Some((out.len() - 1, !pattern_has_wildcard))
    } else {
        None
    };
    (
        out,
        RuleInfo {
            head: rule.head.relation,
            lits,
            rederive,
        },
    )
}

/// One unit of parallel work: a rule variant over a delta.
#[derive(Clone, Copy)]
struct Task<'a> {
    rule: usize,
    variant: usize,
    delta: Option<&'a Store>,
    /// One derivation per delta fact suffices (see [`Evaluator::run`]).
    witness: bool,
}

/// Run the tasks, in parallel over `workers` threads; outputs in task order.
fn run_tasks<'b, E: Evaluator>(
    eval: &E,
    tasks: &[Task<'_>],
    view: &View<'_>,
    workers: usize,
    budget: &'b Budget,
) -> Vec<Output<'b>> {
    let run = |t: &Task<'_>| {
        let mut out = Output::new(budget);
        if budget.stopped() {
            return out;
        }
        eval.run(t.rule, t.variant, view, t.delta, t.witness, &mut out);
        out
    };
    if workers <= 1 || tasks.len() <= 1 {
        return tasks.iter().map(run).collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Output)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers.min(tasks.len()))
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(t) = tasks.get(i) else {
                            return done;
                        };
                        done.push((i, run(t)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, o)| o).collect()
}

/// A DRED engine over evaluator `E`. See the module documentation.
pub struct Dred<E: Evaluator> {
    program: Program,
    eval: E,
    rules: Vec<RuleInfo>,
    specs: Vec<Vec<Box<[usize]>>>,
    /// Whether a relation has rules (is in a stratum).
    derived: Vec<bool>,
    workers: usize,
    /// The current base facts, per relation (staged changes not applied).
    base: Vec<Store>,
    /// What is staged since the last commit.
    staging: Staging,
    /// The materialization as of the last commit, per relation.
    stores: Vec<Store>,
    /// The next commit rematerializes (first commit, rule change).
    remat: bool,
    track: bool,
    changes: ChangeList,
    /// Limits of every commit ([`Engine::set_limits`]).
    limits: Limits,
    /// The running commit's changes so far ([`Engine::progress`]).
    progress: Arc<AtomicU64>,
}

/// Per relation: an empty store of its arity, without indexes.
fn empty_stores(program: &Program) -> Vec<Store> {
    program
        .relations
        .iter()
        .map(|r| Store::new(r.arity()))
        .collect()
}

impl<E: Evaluator> Dred<E> {
    /// A new engine over `program`, evaluating with `workers` threads (at least one).
    pub fn new(program: Program, workers: usize) -> Dred<E> {
        let base = initial_base(&program);
        let (eval, rules, specs, derived) = Dred::<E>::compile(&program);
        Dred {
            program,
            eval,
            rules,
            specs,
            derived,
            workers: workers.max(1),
            base,
            staging: Staging::default(),
            stores: Vec::new(),
            remat: true,
            track: false,
            changes: ChangeList::new(),
            limits: Limits::NONE,
            progress: Arc::default(),
        }
    }

    /// Make `program` the current one: its compiled rules, and a base-fact store per
    /// relation (those of dropped relations go, new relations start empty).
    fn install(&mut self, program: Program) {
        let (eval, rules, specs, derived) = Dred::<E>::compile(&program);
        resize_base(&mut self.base, &program);
        self.program = program;
        self.eval = eval;
        self.rules = rules;
        self.specs = specs;
        self.derived = derived;
    }

    /// Go back to the program and base facts of the last commit, nothing staged (the
    /// caller restores the materialization). The next commit rematerializes if nothing
    /// was committed yet.
    fn discard(&mut self) {
        if let Some(program) = self.staging.discard() {
            self.install(program);
            self.remat = false;
        }
        self.remat |= self.stores.is_empty();
        self.staging.undo_into(&mut self.base);
    }

    /// Undo the changes `(plus, minus)` of the materialization.
    fn undo_stores(&mut self, plus: &[Store], minus: &[Store]) {
        for (r, store) in self.stores.iter_mut().enumerate() {
            if let Some(p) = plus.get(r) {
                for t in p.iter() {
                    store.remove(t);
                }
            }
            if let Some(m) = minus.get(r) {
                for t in m.iter() {
                    store.insert(t);
                }
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn compile(program: &Program) -> (E, Vec<RuleInfo>, Vec<Vec<Box<[usize]>>>, Vec<bool>) {
        let (all, rules): (Vec<Vec<Rule>>, Vec<RuleInfo>) =
            program.rules.iter().map(variants).unzip();
        let (eval, mut specs) = E::compile(program, &all);
        specs.resize(program.relations.len(), Vec::new());
        let mut derived = vec![false; program.relations.len()];
        for s in &program.strata {
            for &r in &s.relations {
                if let Some(d) = derived.get_mut(r as usize) {
                    *d = true;
                }
            }
        }
        (eval, rules, specs, derived)
    }

    /// An empty store of relation `rel` with the indexes the rules read.
    fn indexed(&self, rel: usize) -> Store {
        Store::with_indexes(self.program.relations[rel].arity(), &self.specs[rel])
    }

    /// Apply the staged changes to the base facts, in order: the net `(B+, B-)` per
    /// relation.
    fn apply_staged(&mut self) -> (Vec<Store>, Vec<Store>) {
        // Per fact changed, whether it was there before the first change.
        let mut before: HashMap<(RelId, Vec<Value>), bool> = HashMap::new();
        let live = self.base.len();
        self.staging.apply(
            &mut self.base,
            live,
            !self.limits.is_none(),
            |insert, rel, t| {
                before.entry((rel, t.to_vec())).or_insert(!insert);
            },
        );
        let mut plus = empty_stores(&self.program);
        let mut minus = empty_stores(&self.program);
        for ((rel, tuple), was) in before {
            let is = self.base[rel as usize].contains(&tuple);
            if is && !was {
                plus[rel as usize].insert(&tuple);
            } else if was && !is {
                minus[rel as usize].insert(&tuple);
            }
        }
        (plus, minus)
    }

    /// Evaluate everything from the base facts. Returns the previous materialization
    /// instead if a limit stops it.
    fn rematerialize(&mut self, stats: &mut CommitStats, budget: &Budget) -> Result<(), ()> {
        let old = std::mem::take(&mut self.stores);
        // The previous materialization is only needed for the changes, or to go back to.
        let limited = !budget.limits().is_none();
        let old = if self.track || limited {
            old
        } else {
            Vec::new()
        };
        let old_total: usize = old.iter().map(Store::len).sum();
        let n = self.program.relations.len();
        self.stores = (0..n).map(|r| self.indexed(r)).collect();
        for (store, base) in self.stores.iter_mut().zip(&self.base) {
            for t in base.iter() {
                store.insert(t);
            }
        }
        let mut floor = self.stores.iter().map(Store::len).sum::<usize>() as i64 - old_total as i64;
        let none = empty_stores(&self.program);
        let mut stopped = budget.check(floor.max(0) as u64);
        for s in 0..self.program.strata.len() {
            if stopped {
                break;
            }
            let started = Instant::now();
            for a in self.program.strata[s].aggregates.clone() {
                let agg = &self.program.aggregates[a];
                let rows =
                    crate::aggregate::evaluate(agg, self.stores[agg.source as usize].iter(), None);
                floor += rows.len() as i64;
                let head = agg.head as usize;
                for row in rows {
                    self.stores[head].insert(&row);
                }
            }
            let mut del = empty_stores(&self.program);
            let mut added = empty_stores(&self.program);
            let delta = empty_stores(&self.program);
            let Some(iterations) = self.insert_phase(
                s,
                true,
                delta,
                (&none, &none),
                (&mut del, &mut added),
                stats,
                (floor, budget),
            ) else {
                stopped = true;
                break;
            };
            floor += added.iter().map(Store::len).sum::<usize>() as i64;
            if let Some(sub) = self.program.strata[s].subsumption {
                // The tuples dominated by a candidate found after them go (see
                // `dynalog_analysis::Subsumed`), not base facts of the relation.
                let (r, dom) = (sub.relation as usize, sub.dominated as usize);
                let gone: Vec<Vec<u32>> = self.stores[r]
                    .iter()
                    .filter(|t| self.stores[dom].contains(t) && !self.base[r].contains(t))
                    .map(<[u32]>::to_vec)
                    .collect();
                for t in &gone {
                    self.stores[r].remove(t);
                }
                floor -= gone.len() as i64;
            }
            self.stratum_stats(s, iterations, started, stats);
        }
        if !stopped && let Some(max) = budget.limits().max_changes {
            let stores = &self.stores;
            let count = crate::difference_count(
                n.max(old.len()),
                |r, f| each_fact(&old, r, f),
                |r, f| each_fact(stores, r, f),
            );
            if count > max {
                budget.check(count);
                stopped = true;
            }
        }
        if stopped {
            self.stores = old;
            return Err(());
        }
        if self.track {
            let stores = &self.stores;
            self.changes = crate::difference(
                n.max(old.len()),
                |r, f| each_fact(&old, r, f),
                |r, f| each_fact(stores, r, f),
            );
        }
        Ok(())
    }

    fn stratum_stats(
        &self,
        s: usize,
        iterations: usize,
        started: Instant,
        stats: &mut CommitStats,
    ) {
        let rels = &self.program.strata[s].relations;
        stats.strata.push(StratumStats {
            relations: rels
                .iter()
                .map(|&r| self.program.relation(r).name.clone())
                .collect(),
            iterations,
            facts: rels.iter().map(|&r| self.stores[r as usize].len()).sum(),
            elapsed: started.elapsed(),
        });
    }

    /// Maintain the materialization under the base changes `B+`, `B-`. If a limit stops
    /// it, the materialization is put back as it was and `Err` returned.
    fn maintain(
        &mut self,
        bplus: &[Store],
        bminus: &[Store],
        stats: &mut CommitStats,
        budget: &Budget,
    ) -> Result<(), ()> {
        let n = self.program.relations.len();
        let mut plus = empty_stores(&self.program);
        let mut minus: Vec<Store> = (0..n).map(|r| self.indexed(r)).collect();
        for r in (0..n).filter(|&r| !self.derived[r]) {
            for t in bminus[r].iter() {
                if self.stores[r].remove(t) {
                    minus[r].insert(t);
                }
            }
            for t in bplus[r].iter() {
                if self.stores[r].insert(t) {
                    plus[r].insert(t);
                }
            }
        }
        // The net change so far (complete relations).
        let mut changes = plus.iter().chain(&minus).map(Store::len).sum::<usize>() as u64;
        if budget.check(changes) {
            self.undo_stores(&plus, &minus);
            return Err(());
        }
        for s in 0..self.program.strata.len() {
            let started = Instant::now();
            if !self.program.strata[s].aggregates.is_empty() {
                for a in self.program.strata[s].aggregates.clone() {
                    changes += self.maintain_aggregate(a, &mut plus, &mut minus);
                }
                if budget.check(changes) {
                    self.undo_stores(&plus, &minus);
                    return Err(());
                }
                self.stratum_stats(s, 1, started, stats);
                continue;
            }
            let Some(mut del) = self.overdelete(s, bminus, (&plus, &minus), stats, budget) else {
                self.undo_stores(&plus, &minus);
                return Err(());
            };
            let Some(mut delta) = self.rederive(s, &del, budget) else {
                let none = empty_stores(&self.program);
                self.undo_stores(&none, &del);
                self.undo_stores(&plus, &minus);
                return Err(());
            };
            for &r in &self.program.strata[s].relations {
                let r = r as usize;
                for t in bplus[r].iter() {
                    if !self.stores[r].contains(t) {
                        delta[r].insert(t);
                    }
                }
            }
            let mut added = empty_stores(&self.program);
            let Some(iterations) = self.insert_phase(
                s,
                false,
                delta,
                (&plus, &minus),
                (&mut del, &mut added),
                stats,
                (changes as i64, budget),
            ) else {
                self.undo_stores(&added, &del);
                self.undo_stores(&plus, &minus);
                return Err(());
            };
            for &r in &self.program.strata[s].relations {
                let r = r as usize;
                plus[r] = std::mem::take(&mut added[r]);
                let mut gone = self.indexed(r);
                for t in del[r].iter() {
                    gone.insert(t);
                }
                minus[r] = gone;
                changes += (plus[r].len() + minus[r].len()) as u64;
            }
            if budget.check(changes) {
                self.undo_stores(&plus, &minus);
                return Err(());
            }
            self.stratum_stats(s, iterations, started, stats);
        }
        if self.track {
            self.changes.clear();
            for (r, (p, m)) in plus.iter().zip(&minus).enumerate() {
                for t in p.iter() {
                    self.changes.push(r as RelId, t, 1);
                }
                for t in m.iter() {
                    self.changes.push(r as RelId, t, -1);
                }
            }
        }
        Ok(())
    }

    /// Bring aggregate `a`'s result up to date with its input's changes (in `plus` and
    /// `minus`): the groups they touch are folded again, and their results replaced.
    /// Records its changes in `plus` and `minus`; returns their number.
    fn maintain_aggregate(&mut self, a: usize, plus: &mut [Store], minus: &mut [Store]) -> u64 {
        let agg = &self.program.aggregates[a];
        let (src, head, g) = (agg.source as usize, agg.head as usize, agg.group);
        let groups: std::collections::HashSet<Vec<Value>> = plus[src]
            .iter()
            .chain(minus[src].iter())
            .map(|t| t[..g].to_vec())
            .collect();
        if groups.is_empty() {
            return 0;
        }
        let new: std::collections::HashSet<Vec<Value>> =
            crate::aggregate::evaluate(agg, self.stores[src].iter(), Some(&groups))
                .into_iter()
                .collect();
        let old: Vec<Vec<Value>> = self.stores[head]
            .iter()
            .filter(|t| groups.contains(&t[..g]))
            .map(<[Value]>::to_vec)
            .collect();
        let mut changes = 0;
        for t in &old {
            if !new.contains(t) {
                self.stores[head].remove(t);
                minus[head].insert(t);
                changes += 1;
            }
        }
        for t in &new {
            if self.stores[head].insert(t) {
                plus[head].insert(t);
                changes += 1;
            }
        }
        changes
    }

    /// The tasks of the rules of stratum `s` whose literal over a relation of another
    /// stratum reads that relation's change: `for_positive` for a positive atom and
    /// `for_negated` for a negation (`(L+, L-)` when inserting, `(L-, L+)` when
    /// overdeleting).
    fn lower_tasks<'a>(
        &self,
        s: usize,
        (for_positive, for_negated): (&'a [Store], &'a [Store]),
        tasks: &mut Vec<Task<'a>>,
    ) {
        let stratum = &self.program.strata[s];
        for &ri in &stratum.rules {
            for &(rel, positive, variant) in self.rules[ri].lits.iter().flatten() {
                if stratum.relations.contains(&rel) {
                    continue;
                }
                let d = if positive { for_positive } else { for_negated };
                if let Some(d) = d.get(rel as usize)
                    && !d.is_empty()
                {
                    tasks.push(Task {
                        rule: ri,
                        variant,
                        delta: Some(d),
                        witness: false,
                    });
                }
            }
        }
    }

    /// The tasks of the rules of stratum `s` whose positive atom over a relation of the
    /// stratum reads that relation's `delta`.
    fn delta_tasks<'a>(&self, s: usize, delta: &'a [Store], tasks: &mut Vec<Task<'a>>) {
        let stratum = &self.program.strata[s];
        for &ri in &stratum.rules {
            for &(rel, positive, variant) in self.rules[ri].lits.iter().flatten() {
                if positive && stratum.relations.contains(&rel) && !delta[rel as usize].is_empty() {
                    tasks.push(Task {
                        rule: ri,
                        variant,
                        delta: Some(&delta[rel as usize]),
                        witness: false,
                    });
                }
            }
        }
    }

    /// Run `tasks` over `view` (in parallel) and collect, per relation, the derived head
    /// tuples that `keep(head relation, tuple)` accepts.
    fn derive(
        &self,
        tasks: &[Task<'_>],
        view: &View<'_>,
        budget: &Budget,
        mut keep: impl FnMut(usize, &[u32]) -> bool,
    ) -> Option<Vec<Store>> {
        let outputs = run_tasks(&self.eval, tasks, view, self.workers, budget);
        if budget.check_time() {
            return None;
        }
        let mut kept = empty_stores(&self.program);
        for (task, out) in tasks.iter().zip(&outputs) {
            let head = self.rules[task.rule].head as usize;
            for t in out.tuples(kept[head].arity()) {
                if keep(head, t) {
                    kept[head].insert(t);
                }
            }
        }
        Some(kept)
    }

    /// Overdeletion for stratum `s` over the old state; returns the overdeleted facts
    /// per relation (still in the materialization).
    fn overdelete(
        &self,
        s: usize,
        bminus: &[Store],
        (lplus, lminus): (&[Store], &[Store]),
        stats: &mut CommitStats,
        budget: &Budget,
    ) -> Option<Vec<Store>> {
        let mut del = empty_stores(&self.program);
        let mut delta = empty_stores(&self.program);
        for &r in &self.program.strata[s].relations {
            let r = r as usize;
            for t in bminus[r].iter() {
                if self.stores[r].contains(t) && del[r].insert(t) {
                    delta[r].insert(t);
                }
            }
        }
        let view = View {
            stores: &self.stores,
            old: Some((lminus, lplus)),
        };
        let mut first = true;
        loop {
            let mut tasks = Vec::new();
            if first {
                // Lower deletions of positive atoms, lower insertions of negated ones.
                self.lower_tasks(s, (lminus, lplus), &mut tasks);
            }
            self.delta_tasks(s, &delta, &mut tasks);
            if tasks.is_empty() {
                break;
            }
            delta = self.derive(&tasks, &view, budget, |head, t| {
                self.stores[head].contains(t) && del[head].insert(t)
            })?;
            first = false;
        }
        stats.overdeleted += del.iter().map(Store::len).sum::<usize>();
        Some(del)
    }

    /// Remove the overdeleted facts `del` of stratum `s` from the materialization;
    /// returns those with a one-step derivation from what remains, or that are base
    /// facts (not yet put back).
    fn rederive(&mut self, s: usize, del: &[Store], budget: &Budget) -> Option<Vec<Store>> {
        let stratum = &self.program.strata[s];
        for &r in &stratum.relations {
            for t in del[r as usize].iter() {
                self.stores[r as usize].remove(t);
            }
        }
        let mut tasks = Vec::new();
        for &ri in &stratum.rules {
            let info = &self.rules[ri];
            let d = &del[info.head as usize];
            if !d.is_empty() {
                tasks.push(match info.rederive {
                    Some((variant, witness)) => Task {
                        rule: ri,
                        variant,
                        delta: Some(d),
                        witness,
                    },
                    None => Task {
                        rule: ri,
                        variant: 0,
                        delta: None,
                        witness: false,
                    },
                });
            }
        }
        let view = View {
            stores: &self.stores,
            old: None,
        };
        let mut back = self.derive(&tasks, &view, budget, |head, t| del[head].contains(t))?;
        for &r in &stratum.relations {
            let r = r as usize;
            for t in del[r].iter() {
                if self.base[r].contains(t) {
                    back[r].insert(t);
                }
            }
        }
        Some(back)
    }

    /// The insertion phase of stratum `s`: add `delta` (facts not in the
    /// materialization), then run semi-naive rounds until nothing new appears. In the
    /// first round, `full` runs every rule in full, otherwise the lower changes seed
    /// it. A fact added that is in `del` (overdeleted) is taken out of it and counted as
    /// rederived; the others go to `added`. Returns the number of rounds, or `None` if
    /// a limit stops it: the net change is at least `floor` plus the facts added.
    #[allow(clippy::too_many_arguments)]
    fn insert_phase(
        &mut self,
        s: usize,
        full: bool,
        mut delta: Vec<Store>,
        lower: (&[Store], &[Store]),
        (del, added): (&mut [Store], &mut [Store]),
        stats: &mut CommitStats,
        (floor, budget): (i64, &Budget),
    ) -> Option<usize> {
        let mut count = 0usize;
        let mut rounds = 0;
        let mut first = true;
        loop {
            for &r in &self.program.strata[s].relations {
                let r = r as usize;
                for t in delta[r].iter() {
                    if self.stores[r].insert(t) {
                        if del[r].remove(t) {
                            stats.rederived += 1;
                        } else {
                            added[r].insert(t);
                            count += 1;
                        }
                    }
                }
            }
            if budget.check((floor + count as i64).max(0) as u64) {
                return None;
            }
            let mut tasks = Vec::new();
            if first && full {
                for &ri in &self.program.strata[s].rules {
                    tasks.push(Task {
                        rule: ri,
                        variant: 0,
                        delta: None,
                        witness: false,
                    });
                }
            } else {
                if first {
                    // Lower insertions of positive atoms, lower deletions of negated ones.
                    self.lower_tasks(s, lower, &mut tasks);
                }
                self.delta_tasks(s, &delta, &mut tasks);
            }
            if tasks.is_empty() {
                return Some(rounds);
            }
            rounds += 1;
            let view = View {
                stores: &self.stores,
                old: None,
            };
            let next = self.derive(&tasks, &view, budget, |head, t| {
                !self.stores[head].contains(t)
            })?;
            drop(tasks);
            delta = next;
            first = false;
        }
    }
}

impl<E: Evaluator> Engine for Dred<E> {
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn program(&self) -> &Program {
        &self.program
    }

    /// Stage an insertion (ignored for an unknown relation or a tuple of the wrong arity).
    fn insert(&mut self, relation: RelId, tuple: &[Value]) {
        let arity = self.base.get(relation as usize).map(Store::arity);
        self.staging.stage(true, relation, tuple, arity);
    }

    /// Stage a removal (ignored for an unknown relation or a tuple of the wrong arity).
    fn remove(&mut self, relation: RelId, tuple: &[Value]) {
        let arity = self.base.get(relation as usize).map(Store::arity);
        self.staging.stage(false, relation, tuple, arity);
    }

    /// Stage a rule change: the next commit rematerializes everything.
    fn set_program(&mut self, program: Program) {
        if self.staging.open_program(&self.program, &program) {
            self.staging
                .drop_relations(&self.base, program.relations.len());
            self.install(program);
            self.remat = true;
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

    fn commit(&mut self) -> Result<CommitStats, EngineError> {
        let started = Instant::now();
        if let Some(e) = self.staging.take_rejected() {
            return Err(e);
        }
        let (bplus, bminus) = self.apply_staged();
        let budget = Budget::new(self.limits, self.progress.clone());
        let mut stats = CommitStats::default();
        // Delete-rederive cannot maintain a recursive relation with subsumption (a
        // tuple removed by a new candidate would take back what it derived, and a
        // deleted candidate bring back what it dominated): such a program is
        // rematerialized at every commit.
        // Likewise a recursive choice (a candidate chosen in an earlier round than before
        // changes what every later round finds).
        let subsumption = self
            .program
            .strata
            .iter()
            .any(|s| s.subsumption.is_some() || s.choice.is_some());
        let done = if self.remat || subsumption {
            self.remat = false;
            self.rematerialize(&mut stats, &budget)
        } else {
            self.maintain(&bplus, &bminus, &mut stats, &budget)
        };
        if done.is_err() {
            // The materialization is back; now the base facts and the program.
            self.discard();
            self.changes.clear();
            return Err(budget
                .error()
                .unwrap_or_else(|| EngineError::Failed("limit exceeded".into())));
        }
        self.staging.finish();
        stats.elapsed = started.elapsed();
        Ok(stats)
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
        self.stores
            .get(relation as usize)
            .is_some_and(|s| s.contains(tuple))
    }

    fn len(&self, relation: RelId) -> usize {
        self.stores.get(relation as usize).map_or(0, Store::len)
    }

    fn facts(&self, relation: RelId) -> Vec<Vec<Value>> {
        self.stores
            .get(relation as usize)
            .map(|s| s.iter().map(<[Value]>::to_vec).collect())
            .unwrap_or_default()
    }

    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        each_fact(&self.stores, relation, f);
    }
}

/// Calls `f` on every fact of relation `r` in `stores` (none for a relation it lacks):
/// how [`Engine::for_each_fact`], [`crate::difference`] and [`crate::difference_count`]
/// read a materialization.
fn each_fact(stores: &[Store], r: RelId, f: &mut dyn FnMut(&[Value])) {
    if let Some(s) = stores.get(r as usize) {
        s.iter().for_each(f)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Change, Engine, Seminaive};
    use dynalog_analysis::{Program, RelId, Value};
    use std::collections::BTreeSet;

    const DRED_ENGINES: &[&str] = &["relational", "chibi"];

    fn program(text: &str) -> Program {
        let file = dynalog_syntax::SourceFile::new("test.dl", text.to_string());
        let ast = dynalog_syntax::parse(&file).unwrap_or_else(|d| panic!("{d:?}"));
        dynalog_analysis::analyse(&file, &ast).unwrap_or_else(|d| panic!("{d:?}"))
    }

    fn id(p: &Program, name: &str) -> RelId {
        p.relation_id(name).expect("declared")
    }

    type Db = Vec<BTreeSet<Vec<Value>>>;

    fn snapshot(e: &dyn Engine) -> Db {
        (0..e.program().relations.len())
            .map(|r| e.facts(r as RelId).into_iter().collect())
            .collect()
    }

    /// A from-scratch reference result of `program` over base facts `base`.
    fn reference(program: &Program, base: &BTreeSet<(RelId, Vec<Value>)>) -> Db {
        let mut p = program.clone();
        p.facts.clear();
        let mut s = Seminaive::new(p);
        for (r, t) in base {
            s.insert(*r, t);
        }
        s.commit().expect("reference");
        snapshot(&s)
    }

    fn sorted_changes(e: &dyn Engine) -> Vec<Change> {
        let mut c = e.last_changes().to_vec();
        c.sort();
        c
    }

    fn difference(old: &Db, new: &Db) -> Vec<Change> {
        let facts = |db: &Db, r: RelId, f: &mut dyn FnMut(&[Value])| {
            db.get(r as usize).into_iter().flatten().for_each(|t| f(t))
        };
        let mut out = crate::difference(
            old.len().max(new.len()),
            |r, f| facts(old, r, f),
            |r, f| facts(new, r, f),
        )
        .to_vec();
        out.sort();
        out
    }

    /// An engine with change tracking, and the base facts the test staged, to compare
    /// with the reference after each commit.
    struct Checked {
        engine: Box<dyn Engine>,
        base: BTreeSet<(RelId, Vec<Value>)>,
        prev: Db,
    }

    impl Checked {
        fn new(name: &str, program: &Program, workers: usize) -> Checked {
            let mut engine =
                crate::create(&crate::Config::new(name, workers), program.clone()).expect("engine");
            engine.track_changes(true);
            let base = program.facts.iter().cloned().collect();
            let prev = vec![BTreeSet::new(); program.relations.len()];
            Checked { engine, base, prev }
        }

        fn insert(&mut self, rel: RelId, t: &[Value]) {
            self.engine.insert(rel, t);
            self.base.insert((rel, t.to_vec()));
        }

        fn remove(&mut self, rel: RelId, t: &[Value]) {
            self.engine.remove(rel, t);
            self.base.remove(&(rel, t.to_vec()));
        }

        /// Commit; check the materialization and the changes against the reference.
        fn commit(&mut self) -> crate::CommitStats {
            let stats = self.engine.commit().expect("commit");
            let want = reference(self.engine.program(), &self.base);
            assert_eq!(
                snapshot(self.engine.as_ref()),
                want,
                "{}",
                self.engine.name()
            );
            assert_eq!(
                sorted_changes(self.engine.as_ref()),
                difference(&self.prev, &want),
                "{}: changes",
                self.engine.name()
            );
            self.prev = want;
            stats
        }
    }

    #[test]
    fn overdeletion_is_counted_and_rederived() {
        let p = program(
            ".decl A(x: number)\n.decl B(x: number)\n.decl C(x: number)\n\
             C(x) :- A(x).\nC(x) :- B(x).\n",
        );
        let (a, b, c) = (id(&p, "A"), id(&p, "B"), id(&p, "C"));
        for &name in DRED_ENGINES {
            let mut e = Checked::new(name, &p, 1);
            for i in 1..=1000 {
                e.insert(a, &[i]);
                e.insert(b, &[i]);
            }
            e.commit();
            for i in 1..=500 {
                e.remove(a, &[i]);
            }
            let stats = e.commit();
            assert_eq!((stats.overdeleted, stats.rederived), (500, 500), "{name}");
            assert_eq!(e.engine.len(c), 1000);
            // Deleting from both sides: C(1..250) goes, C(251..500) is rederived.
            for i in 1..=250 {
                e.remove(b, &[i]);
            }
            for i in 501..=750 {
                e.remove(a, &[i]);
            }
            let stats = e.commit();
            assert_eq!((stats.overdeleted, stats.rederived), (500, 250), "{name}");
            assert_eq!(e.engine.len(c), 750);
            // Insertions overdelete nothing.
            e.insert(a, &[1]);
            let stats = e.commit();
            assert_eq!((stats.overdeleted, stats.rederived), (0, 0), "{name}");
        }
    }

    #[test]
    fn recursion_under_insertion_and_deletion() {
        // A chain 0 -> 1 -> ... -> 9 with a shortcut 0 -> 5.
        let p = program(
            ".decl e(x: number, y: number)\n.decl tc(x: number, y: number)\n\
             tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).\n",
        );
        let (e_, tc) = (id(&p, "e"), id(&p, "tc"));
        for &name in DRED_ENGINES {
            for workers in [1, 2] {
                let mut e = Checked::new(name, &p, workers);
                for i in 0..9 {
                    e.insert(e_, &[i, i + 1]);
                }
                e.insert(e_, &[0, 5]);
                e.commit();
                // The chain's 45 pairs; the shortcut adds none.
                assert_eq!(e.engine.len(tc), 45);
                // Deleting 2 -> 3 cuts 0..2 from 3..5 only: 0 still reaches 5..9.
                e.remove(e_, &[2, 3]);
                let stats = e.commit();
                assert!(stats.overdeleted > stats.rederived, "{name}");
                assert!(stats.rederived > 0, "{name}: tc(0, 5..9) is rederived");
                // A cycle, then breaking it.
                e.insert(e_, &[9, 0]);
                e.commit();
                // 0, 5..9 reach 0..2 and 5..9 (8 each), 4 too (not 4), 3 reaches all
                // but itself, 1 reaches 2, 2 nothing.
                assert_eq!(e.engine.len(tc), 6 * 8 + 8 + 9 + 1);
                e.remove(e_, &[9, 0]);
                e.insert(e_, &[2, 3]);
                e.commit();
            }
        }
    }

    #[test]
    fn negation_across_strata() {
        // A lower insertion deletes higher facts, a lower deletion inserts them.
        let p = program(
            ".decl node(x: number)\n.decl e(x: number, y: number)\n\
             .decl reach(x: number)\n.decl unreached(x: number)\n.decl alone(x: number)\n\
             reach(0).\nreach(y) :- reach(x), e(x, y).\n\
             unreached(x) :- node(x), !reach(x).\n\
             alone(x) :- unreached(x), !e(x, _), !e(_, x).\n",
        );
        let (node, e_, unreached) = (id(&p, "node"), id(&p, "e"), id(&p, "unreached"));
        for &name in DRED_ENGINES {
            let mut e = Checked::new(name, &p, 1);
            for i in 0..6 {
                e.insert(node, &[i]);
            }
            e.insert(e_, &[0, 1]);
            e.insert(e_, &[3, 4]);
            e.commit();
            assert_eq!(e.engine.len(unreached), 4);
            // Insertion below: reach grows, unreached shrinks.
            e.insert(e_, &[1, 3]);
            e.commit();
            assert_eq!(e.engine.len(unreached), 2);
            // Deletion below: reach shrinks, unreached grows.
            e.remove(e_, &[0, 1]);
            e.commit();
            assert_eq!(e.engine.len(unreached), 5);
            // Both at once, and a base fact of a derived relation.
            e.insert(e_, &[0, 1]);
            e.remove(e_, &[3, 4]);
            e.insert(unreached, &[0]);
            e.commit();
            e.remove(unreached, &[0]);
            e.remove(node, &[5]);
            e.commit();
        }
    }

    #[test]
    fn rule_changes_rematerialize() {
        let text = ".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n\
                    .decl q(x: number)\ne(1, 2).\ne(2, 3).\n";
        let p0 = program(&format!("{text}p(x, y) :- e(x, y).\n"));
        let p1 = program(&format!(
            "{text}e(3, 4).\np(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n\
             q(x) :- p(x, _), !e(x, _).\n"
        ));
        let p2 = program(&format!(
            "{text}q(x) :- e(_, x), !p(x, _).\n.decl extra(x: number)\n"
        ));
        for &name in DRED_ENGINES {
            let mut e = Checked::new(name, &p0, 1);
            e.commit();
            e.insert(0, &[3, 1]);
            e.commit();
            for next in [&p1, &p2, &p0] {
                // Inline facts the new program adds or drops change the base facts too.
                for f in &e.engine.program().facts.clone() {
                    e.base.remove(f);
                }
                e.base.extend(next.facts.iter().cloned());
                e.engine.set_program(next.clone());
                e.prev
                    .resize(next.relations.len().max(e.prev.len()), BTreeSet::new());
                e.commit();
                e.prev.truncate(next.relations.len());
                e.remove(0, &[1, 2]);
                e.commit();
                e.insert(0, &[1, 2]);
                e.commit();
            }
        }
    }
}
