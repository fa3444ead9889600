//! The `distinct` that makes the loop's facts: a fact is in `F` at a time iff its count
//! (base occurrences plus derivations, accumulated up to that time) is positive.
//!
//! Differential's `distinct` (an arrangement of the input, a `reduce`, an arrangement of
//! the output) is general: it serves any lattice of times, and sorts and merges every
//! update. In the loop, the times have a shape it cannot use: `(epoch, round)`, where
//! the epochs come one after another (a commit is complete before the next is fed) and
//! the rounds of an epoch are totally ordered. This operator keeps, per fact, its
//! history as one short list of steps `(round, input change, output change)` in a hash
//! table, with every earlier epoch folded in (all future times are of a later epoch, so
//! the epoch of a past update no longer matters: the compaction differential does as
//! the frontier advances, done at once):
//!
//! * the count of a fact at `(e, r)` is the sum of the input changes of its steps with
//!   round `≤ r`, its presence the sum of the output changes;
//! * the updates of a time are added up per fact as they arrive: a recursive rule
//!   derives most of its facts many times in one round (transitive closure on
//!   RMAT-1k: 4.7M derivations of 262k facts), through every intermediate node and
//!   from every rule with the same head, and the heads come here as they are derived,
//!   placed by the fact (a table per time on the worker that derived them sent one
//!   update per fact from each worker: tc on 1,000 nodes × 4,000 random edges, 2
//!   workers, 14% longer). A time's heads add up in a table of their own (module
//!   `round`); once it holds `MOVE_AT` facts, and one of the table of facts' two lanes
//!   is free, they move to the table of facts itself, as a change waiting beside each
//!   fact in that lane ([`Facts::add_waiting`]), and so do the time's further heads.
//!   Both fetch each
//!   lookup's places ahead, so that the cache misses overlap. With only a table per
//!   round, the largest round's table was held beside the table of facts: 201 MB per
//!   worker on tc-gnp5000, whose peak fell from 2.10 to 1.74 GB when the changes
//!   moved; a small time (an update) stays in its table, where it costs nothing per
//!   fact of the table of facts;
//! * the pending input times are processed in lexicographic order, each once every
//!   future input is of a lexicographically later time (no frontier element is
//!   lexicographically at or below it);
//! * processing `(e, r)` adds each input change to its fact's steps (the waiting
//!   changes slot by slot, `WAITING_FUEL` of them per activation, so that the joins
//!   take what each part sends before the next, while the next time's heads wait in
//!   the other lane; the others with one hash lookup each),
//!   emits at `(e, r)` the change that makes the presence at `r` equal to
//!   `[count > 0]`, and finds the first later step at which the presence would be wrong
//!   with what is known now; the fact is evaluated again at that round of the same
//!   epoch (a later input of the epoch touches it again anyway);
//! * steps whose changes are both zero are dropped, facts with no steps forgotten, and
//!   the table shrinks when it is mostly empty, so memory returns after inserting and
//!   deleting the same facts.
//!
//! The result is the same collection as differential's `distinct` produces (the
//! property tests compare the engine with the reference evaluator after every commit),
//! at the cost of one hash lookup per update instead of a sort and the merges of two
//! spines, and with one list of steps per fact instead of two arrangements.
//!
//! The heads were first added up by an operator of their own, which sent the
//! `distinct` one record per fact and time once the time was complete; the `distinct`
//! then queued them again until its own frontier passed the time. A round's facts
//! were then held three times at once (the operator's table, the records in the
//! channel, the queue): tc-gnp5000 peaked at 2.78 GB, 2.40 GB with the table here
//! (see docs/benchmarks.md).

use super::compile::Tables;
use super::entries::{Patterns, SinkFns, Use};
use super::memory::{Meter, Usage, vec_bytes};
use super::mirror::Table;
use super::round::RoundTable;
use super::step::Emit;
use super::steps::{Facts, LANES, Slot, Step, Steps, hash_row, presence};
use super::types::{AHEAD, Inner, Mult, Row, Sub, hold_for_outputs, hold_only};
use differential_dataflow::VecCollection;
use parking_lot::{RwLock, RwLockWriteGuard};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::CapabilitySet;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::vec::Broadcast as _;
use timely::order::Product;
use timely::progress::Antichain;

/// A fact's history while it is worked on: its steps, sorted by round (stored
/// compactly in [`Facts`] between updates).
#[derive(Default)]
struct History {
    steps: Steps,
}

impl History {
    /// The step at `round`, created if missing.
    fn at(&mut self, round: u32) -> &mut Step {
        let i = match self.steps.binary_search_by_key(&round, |s| s.round) {
            Ok(i) => i,
            Err(i) => {
                self.steps.insert(i, Step::new(round, 0, 0));
                i
            }
        };
        &mut self.steps[i]
    }

    /// Bring the presence at `round` in line with the count there: the change to emit
    /// (0 for none), and the first later round where the presence is wrong.
    fn evaluate(&mut self, round: u32) -> (Mult, Option<u32>) {
        let (mut count, mut present) = (0, 0);
        let mut i = 0;
        while i < self.steps.len() && self.steps[i].round <= round {
            count += self.steps[i].input();
            present += self.steps[i].output();
            i += 1;
        }
        let change = Mult::from(count > 0) - present;
        if change != 0 {
            self.at(round).add_output(change);
            present += change;
            // `at` may have inserted the step before `i`.
            i = self.steps.partition_point(|s| s.round <= round);
        }
        let mut wrong = None;
        for s in &self.steps[i..] {
            count += s.input();
            present += s.output();
            if Mult::from(count > 0) != present {
                wrong = Some(s.round);
                break;
            }
        }
        self.steps.retain(|s| !s.is_empty());
        (change, wrong)
    }
}

/// Process at most `budget` of the changes waiting in `lane` of the table of facts for
/// the time at `round` (see [`Facts::add_waiting`]), before the time's other updates
/// ([`process`]); whether none is left. For each, `emit` as in [`process`].
fn process_waiting<R: Row>(
    table: &mut Materialized<R>,
    lane: usize,
    budget: usize,
    round: u32,
    emit: &mut impl FnMut(R, Mult, Option<u32>),
) -> bool {
    let mut history = History::default();
    let mut n = 0;
    // Slot by slot from the last: the table's rows, steps and changes are read front
    // to back (in reverse), not at random.
    for relation in &mut table.relations {
        let mut cursor = relation.facts.waiting_cursor(lane);
        while n < budget
            && let Some((slot, d)) = relation.facts.pop_waiting(lane, &mut cursor)
        {
            n += 1;
            if d == 0 {
                // Changes that added up to nothing, as if none came: a fact stored
                // for them alone is forgotten (unless the other lane's time has one).
                relation.facts.steps(slot, &mut history.steps);
                if history.steps.is_empty() && !relation.facts.waiting_at(slot) {
                    relation.facts.remove(slot);
                }
                continue;
            }
            let f = relation.facts.row(slot);
            update(relation, Some(slot), f, d, round, &mut history, emit);
        }
    }
    table.relations.iter().all(|r| !r.facts.has_waiting(lane))
}

/// Process the updates of one time at `round` (after its waiting changes, see
/// [`process_waiting`]): the changes (`(fact, count change)`, a zero change skipped; a
/// fact changed twice is evaluated after each change, and what it emits adds up to
/// the right change), then the re-evaluations `again` (see `distinct`). For each,
/// `emit(fact, presence change, later round to evaluate again)`. Keeps the count of
/// present facts per relation (see [`Materialized`]).
fn process<R: Row>(
    table: &mut Materialized<R>,
    changes: impl IntoIterator<Item = (R, Mult)>,
    again: impl IntoIterator<Item = R>,
    round: u32,
    mut emit: impl FnMut(R, Mult, Option<u32>),
) {
    let mut history = History::default();
    let changes = changes.into_iter().filter(|u| u.1 != 0);
    let reevaluations = again.into_iter().map(|f| (f, 0));
    let mut items = changes.chain(reevaluations);
    // The next `AHEAD` changes, with their hashes: the place of each in its relation's
    // index is fetched as it joins them, its row and steps when it is half way, so
    // that the cache misses of the lookups overlap (as in `Materialized::add_waiting`;
    // without, the lookups were a fifth of a 1% update's time on tc-rmat1k).
    let mut ahead: VecDeque<(R, Mult, u64)> = VecDeque::with_capacity(AHEAD);
    loop {
        while ahead.len() < AHEAD
            && let Some((f, d)) = items.next()
        {
            let hash = hash_row(&f);
            if let Some(r) = table.relations.get(f.as_ref()[0] as usize) {
                r.facts.prefetch_index(hash);
            }
            ahead.push_back((f, d, hash));
        }
        if let Some((f, _, hash)) = ahead.get(AHEAD / 2)
            && let Some(r) = table.relations.get(f.as_ref()[0] as usize)
        {
            r.facts.prefetch_fact(*hash);
        }
        let Some((f, d, hash)) = ahead.pop_front() else {
            break;
        };
        let relation = table.relation(f.as_ref()[0]);
        let slot = relation.facts.find_hashed(&f, hash);
        update(relation, slot, f, d, round, &mut history, &mut emit);
    }
}

/// Add `d` to the count of `f` (in `slot` if stored) at `round`, evaluate it there, and
/// emit what changes (see [`process`]).
fn update<R: Row>(
    relation: &mut Relation<R>,
    slot: Option<Slot>,
    f: R,
    d: Mult,
    round: u32,
    history: &mut History,
    emit: &mut impl FnMut(R, Mult, Option<u32>),
) {
    let facts = &mut relation.facts;
    match slot {
        Some(slot) => facts.steps(slot, &mut history.steps),
        None if d == 0 => return,
        // A new fact with a positive count (most of a load): present from `round`
        // on, with no later step to check.
        None if d > 0 => {
            facts.insert(f, &[Step::new(round, d, 1)]);
            relation.present += 1;
            emit(f, 1, None);
            return;
        }
        None => history.steps.clear(),
    }
    let before = presence(&history.steps);
    if d != 0 {
        history.at(round).add_input(d);
    }
    let (change, wrong) = history.evaluate(round);
    relation.present += (presence(&history.steps) - before) as isize;
    match (slot, history.steps.is_empty()) {
        // A fact whose changes of another time wait in the table stays until then.
        (Some(slot), true) if !facts.waiting_at(slot) => facts.remove(slot),
        (Some(slot), _) => facts.set_steps(slot, &history.steps),
        (None, false) => {
            facts.insert(f, &history.steps);
        }
        (None, true) => {}
    }
    if change != 0 || wrong.is_some() {
        emit(f, change, wrong);
    }
}

/// A worker's facts as the `distinct` keeps them, which is also the worker's share of
/// the materialization: a fact is in it when its presence after its last step is 1.
/// Between commits the handle reads it (module `mirror`) instead of keeping a copy of
/// its own. One table per relation id (relations are few, and their ids dense), so a
/// relation's facts are read without a scan of the others', and each table's rows are
/// as wide as its own facts need.
#[derive(Default)]
pub(crate) struct Materialized<R> {
    relations: Vec<Relation<R>>,
}

/// The facts of one relation, and how many of them are present.
struct Relation<R> {
    facts: Facts<R>,
    present: isize,
}

impl<R: Row> Materialized<R> {
    /// The table of relation `rel`, made if missing.
    fn relation(&mut self, rel: u32) -> &mut Relation<R> {
        let rel = rel as usize;
        while self.relations.len() <= rel {
            let lead = self.relations.len() as u32;
            self.relations.push(Relation {
                facts: Facts::new(lead),
                present: 0,
            });
        }
        &mut self.relations[rel]
    }

    fn len(&self) -> usize {
        self.relations.iter().map(|r| r.facts.len()).sum()
    }

    fn bytes(&self) -> u64 {
        self.relations.iter().map(|r| r.facts.bytes()).sum::<u64>()
            + (self.relations.capacity() * std::mem::size_of::<Relation<R>>()) as u64
    }

    /// Make room at once for the new facts of a large batch of changes (a load's
    /// base facts), relation by relation (see [`Facts::reserve`]). A batch small
    /// beside its relation's table (an update) reserves nothing: its facts may be
    /// there already.
    fn reserve_for(&mut self, batch: &[(R, Mult)]) {
        if batch.len() < RESERVE_AT {
            return;
        }
        // Per relation: the insertions, and the widest of their rows.
        let mut wanted: Vec<(usize, usize)> = Vec::new();
        for (f, d) in batch {
            if *d > 0 {
                let words = f.as_ref();
                let rel = words[0] as usize;
                if wanted.len() <= rel {
                    wanted.resize(rel + 1, (0, 0));
                }
                let w = &mut wanted[rel];
                w.0 += 1;
                w.1 = w.1.max(super::types::used_words(words).saturating_sub(1));
            }
        }
        for (rel, &(n, width)) in wanted.iter().enumerate() {
            if n > 0 {
                let facts = &mut self.relation(rel as u32).facts;
                if n > facts.len() / 8 {
                    facts.reserve(n, width);
                }
            }
        }
    }

    fn shrink_if_sparse(&mut self) {
        for r in &mut self.relations {
            r.facts.shrink_if_sparse();
        }
    }

    /// Add each head's change to its fact's change waiting in `lane`
    /// ([`Facts::add_waiting`]).
    /// The place of each head in its relation's index is fetched `AHEAD` heads before
    /// it is worked on, and its row half as many before, so that the cache misses of
    /// the lookups overlap (as in module `round`).
    fn add_waiting<T>(&mut self, lane: usize, heads: &[(R, T, Mult)]) {
        // The hashes of the next `AHEAD` heads, each computed once.
        let mut hashes = [0u64; AHEAD];
        for (h, (f, _, _)) in hashes.iter_mut().zip(heads) {
            *h = hash_row(f);
        }
        for (i, &(f, _, d)) in heads.iter().enumerate() {
            let hash = hashes[i % AHEAD];
            if let Some((next, _, _)) = heads.get(i + AHEAD) {
                let h = hash_row(next);
                hashes[i % AHEAD] = h;
                if let Some(r) = self.relations.get(next.as_ref()[0] as usize) {
                    r.facts.prefetch_index(h);
                }
            }
            if let Some((mid, _, _)) = heads.get(i + AHEAD / 2)
                && let Some(r) = self.relations.get(mid.as_ref()[0] as usize)
            {
                r.facts.prefetch_row(lane, hashes[(i + AHEAD / 2) % AHEAD]);
            }
            if d != 0 {
                self.relation(f.as_ref()[0])
                    .facts
                    .add_waiting(lane, &f, hash, d);
            }
        }
    }

    /// Call `f(fact, round, presence change)` on every change of a fact of relation
    /// `rel` in the table (see [`Facts::for_each_change`]).
    fn for_each_change(&self, rel: u32, f: &mut dyn FnMut(&R, u32, Mult)) {
        if let Some(r) = self.relations.get(rel as usize) {
            r.facts.for_each_change(f);
        }
    }

    /// Free the memory of the waiting changes (none waits).
    fn release_waiting(&mut self) {
        for r in &mut self.relations {
            r.facts.release_waiting();
        }
    }
}

impl<R: Row + Send + Sync> Table for RwLock<Materialized<R>> {
    fn len(&self, rel: usize) -> usize {
        let table = self.read_recursive();
        table
            .relations
            .get(rel)
            .map_or(0, |r| r.present.max(0) as usize)
    }

    fn contains(&self, rel: usize, tuple: &[u32]) -> bool {
        let mut row = R::default();
        let words = row.as_mut();
        if 1 + tuple.len() > words.len() {
            return false;
        }
        words[0] = rel as u32;
        words[1..=tuple.len()].copy_from_slice(tuple);
        let table = self.read_recursive();
        table
            .relations
            .get(rel)
            .is_some_and(|r| r.facts.find(&row).is_some_and(|slot| r.facts.present(slot)))
    }

    fn for_each(&self, rel: usize, arity: usize, f: &mut dyn FnMut(&[u32])) {
        let table = self.read_recursive();
        let Some(relation) = table.relations.get(rel) else {
            return;
        };
        let mut tuple = vec![0u32; arity];
        relation.facts.for_each_present(|values| {
            // The stored values end at the table's stride: a fact's last values may be
            // zeros that are not stored.
            let stored = values.len().min(arity);
            tuple[..stored].copy_from_slice(&values[..stored]);
            tuple[stored..].fill(0);
            f(&tuple);
        });
    }
}

/// A worker's table, shared by its `distinct` and the handle.
pub(crate) type SharedTable<R> = Arc<RwLock<Materialized<R>>>;

/// Lock the table to change it (its worker). The handle only reads it, between
/// commits, and may read it again inside a read (`read_recursive`, see
/// `mirror::Part`'s locks). A worker that panicked while holding it has failed the
/// engine already (its reply says so); the table is still readable.
fn lock_table<T>(table: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    table.write()
}

/// `distinct(input + base)`: every fact with a positive count, once, met at once with
/// the patterns in use (module `entries`): the facts are not sent anywhere, only their
/// records under the patterns. `input`'s updates (the heads of the round
/// before, through the loop's feedback, which leaves them the time they were derived
/// at: a head of `(e, r)` counts at `(e, r + 1)`) are added up per fact and time as
/// they come;
/// `base`'s (the base facts, at most one update per fact and time) are queued as they
/// are. Every update of a fact must reach the same worker: the caller places them (the
/// operator does not move them, which saves the circuit an exchange in every round).
/// `patterns` are the patterns in use; every worker gets all of them.
///
/// Three outputs, so that none is a copy of another (a stream read by two operators is
/// copied for one of them): the index entries of the facts' changes under the patterns
/// in use, the direct rules' substitutions past their first atom, and the changes of
/// the facts for the outside, sent only while `leaves()` says something reads them
/// there (asked once per activation). `observe(time, changes)` is told how many changes
/// each processed time made, when it made any.
///
/// Also returns the meters of the operator's state (its table of facts and the
/// patterns, and the updates waiting for their time) and its table of facts, the
/// worker's share of the materialization (see [`Materialized`]).
#[allow(clippy::type_complexity)]
pub(crate) fn distinct<'s, R: Row + Send>(
    input: VecCollection<'s, Inner, R, Mult>,
    base: VecCollection<'s, Inner, R, Mult>,
    patterns: VecCollection<'s, Inner, Use, Mult>,
    tables: Rc<Tables>,
    buckets: u32,
    leaves: impl Fn() -> bool + 'static,
    mut observe: impl FnMut(Inner, usize) + 'static,
) -> (
    VecCollection<'s, Inner, (R, R), Mult>,
    VecCollection<'s, Inner, (R, Sub<R>), Mult>,
    VecCollection<'s, Inner, R, Mult>,
    [Meter; 2],
    SharedTable<R>,
) {
    let state: Rc<RefCell<State<R>>> = Rc::default();
    let table = state.borrow().table.clone();
    // `DYNALOG_MOVE_AT` sets the threshold, for tests: at 1, every time's changes
    // move to the table of facts at once (the property tests are run so too).
    let move_at = std::env::var("DYNALOG_MOVE_AT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MOVE_AT);
    // `DYNALOG_WAITING_FUEL` sets the waiting changes processed per activation, for
    // tests: at 1, a waiting time takes an activation per change.
    let fuel = std::env::var("DYNALOG_WAITING_FUEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&f: &usize| f > 0)
        .unwrap_or(WAITING_FUEL);
    let shared = state.clone();
    let meter = Meter::new("distinct (facts, round histories)", move || {
        shared.borrow().table_usage()
    });
    let shared = state.clone();
    let pending_meter = Meter::new("distinct's pending updates (round tables)", move || {
        shared.borrow().pending_usage()
    });
    let mut builder = OperatorBuilder::new("Distinct".to_owned(), input.inner.scope());
    let activator = input
        .inner
        .scope()
        .activator_for(builder.operator_info().address);
    let mut input = builder.new_input(input.inner, Pipeline);
    let mut base = builder.new_input(base.inner, Pipeline);
    // Every worker needs every pattern: its facts are a slice of all of them.
    let mut patterns_in = builder.new_input(patterns.inner.broadcast(), Pipeline);
    let (entries, entries_stream) = builder.new_output::<Vec<((R, R), Inner, Mult)>>();
    let (direct, direct_stream) = builder.new_output::<Vec<((R, Sub<R>), Inner, Mult)>>();
    let (leaving, leaving_stream) = builder.new_output::<Vec<(R, Inner, Mult)>>();
    let mut entries: OutputBuilder<_, CapacityContainerBuilder<_>> = OutputBuilder::from(entries);
    let mut direct: OutputBuilder<_, CapacityContainerBuilder<_>> = OutputBuilder::from(direct);
    let mut leaving: OutputBuilder<_, CapacityContainerBuilder<_>> = OutputBuilder::from(leaving);
    builder.build(move |_capabilities| {
        // Capabilities for the pending times, one set per output.
        let mut held = [
            CapabilitySet::new(),
            CapabilitySet::new(),
            CapabilitySet::new(),
        ];
        move |frontiers| {
            let mut entries = entries.activate();
            let mut direct = direct.activate();
            let mut leaving = leaving.activate();
            let leave = leaves();
            let mut state = state.borrow_mut();
            let State {
                table,
                pending,
                spare,
                lanes,
                last_epoch,
                patterns,
            } = &mut *state;
            let mut table = lock_table(table);
            // New patterns meet the facts' changes made so far, which the table holds;
            // the changes made from now on meet them as they are made.
            patterns_in.for_each(|cap, data| {
                let mut entries = entries.session(&cap);
                let mut direct = direct.session(&cap);
                let mut sink = SinkFns(
                    |e, t, d| entries.give((e, t, d)),
                    |out: Emit<R>, t, d| {
                        direct.give_iterator(out.map(|r| (r, t, d)));
                    },
                );
                for (p, t, d) in data.drain(..) {
                    let history = |rel, f: &mut dyn FnMut(&R, u32, Mult)| {
                        table.for_each_change(rel, f);
                    };
                    patterns.add(p, t, d, buckets, &tables, history, &mut sink);
                }
            });
            patterns.settle();
            input.for_each(|cap, data| {
                hold_for_outputs(&mut held, &cap);
                // Runs of one time each go at once to where that time's changes add
                // up (which fetches ahead).
                for_each_run(data, |(epoch, round), run| {
                    // Derived at `round`, the heads count from the next.
                    let t = (epoch, round + 1);
                    let at = pending.entry(t).or_default();
                    if let Some(lane) = lanes.iter().position(|l| *l == Some(t)) {
                        // A time whose changes wait in the table of facts.
                        table.add_waiting(lane, run);
                        return;
                    }
                    // A time first made for a re-evaluation has no table yet.
                    if at.changes.capacity() == 0
                        && let Some(table) = spare.take()
                    {
                        at.changes = table;
                    }
                    at.changes.add_all(run);
                    // A large time's changes move to the table of facts, and the rest
                    // of its heads go there: a small one (an update) stays here, where
                    // it costs nothing per fact of the table.
                    if at.changes.len() >= move_at
                        && let Some(lane) = lanes.iter().position(Option::is_none)
                    {
                        lanes[lane] = Some(t);
                        let moved: Vec<(R, (), Mult)> =
                            at.changes.drain().map(|(f, d)| (f, (), d)).collect();
                        table.add_waiting(lane, &moved);
                    }
                });
            });
            // Base facts come once per commit each (the handle gives insertions and
            // deletions set semantics): nothing to add up.
            base.for_each(|cap, data| {
                hold_for_outputs(&mut held, &cap);
                for_each_run(data, |t, run| {
                    let at = &mut pending.entry(t).or_default().base;
                    at.extend(run.iter().map(|&(f, _, d)| (f, d)));
                });
            });
            // Every future input of facts is at or after the least frontier element of
            // the two inputs of facts in lexicographic order (the patterns' input does
            // not hold a time back: a pattern meets the table when it comes).
            let limit = frontiers[..2]
                .iter()
                .filter_map(|f| f.frontier().iter().map(|t| (t.outer, t.inner)).min())
                .min();
            let mut done = false;
            while let Some(entry) = pending.first_entry() {
                let time = *entry.key();
                if limit.is_some_and(|l| l <= time) {
                    break;
                }
                let Pending {
                    mut changes,
                    base,
                    again,
                } = entry.remove();
                done = true;
                let (epoch, round) = time;
                // Each change is applied and its fact evaluated at once, with one
                // lookup. The re-evaluations come after the changes: a fact whose
                // change at this time makes its scheduled re-evaluation moot
                // (derived at a later round that loses its derivation too, as when a
                // rule goes) then emits nothing, where re-evaluating it first made
                // it reappear and vanish again at this time.
                let t = Product::new(epoch, round);
                let caps = [
                    held[0].delayed(&t),
                    held[1].delayed(&t),
                    held[2].delayed(&t),
                ];
                let mut entries = entries.session(&caps[0]);
                let mut direct = direct.session(&caps[1]);
                let mut leaving = leaving.session(&caps[2]);
                let mut sink = SinkFns(
                    |e, t, d| entries.give((e, t, d)),
                    |out: Emit<R>, t, d| {
                        direct.give_iterator(out.map(|r| (r, t, d)));
                    },
                );
                let mut changed = 0;
                let lane = lanes.iter().position(|l| *l == Some(time));
                *last_epoch = epoch;
                let mut emit = |f, change, wrong| {
                    if change != 0 {
                        changed += 1;
                        patterns.meet(&f, t, change, buckets, &tables, &mut sink);
                        if leave {
                            leaving.give((f, t, change));
                        }
                    }
                    if let Some(later) = wrong {
                        pending.entry((epoch, later)).or_default().again.push(f);
                    }
                };
                // A waiting time's changes go a part at a time (see `WAITING_FUEL`).
                let finished = lane
                    .is_none_or(|lane| process_waiting(&mut table, lane, fuel, round, &mut emit));
                let unfinished = if finished {
                    table.reserve_for(&base);
                    process(
                        &mut table,
                        changes.drain().chain(base),
                        again,
                        round,
                        &mut emit,
                    );
                    None
                } else {
                    Some((base, again))
                };
                if changed > 0 {
                    observe(t, changed);
                }
                if let Some((base, again)) = unfinished {
                    // The rest at the next activation, once the operators that read
                    // this one's outputs have taken what it sent; the next time's
                    // heads meanwhile wait in the other lane.
                    pending.insert(
                        time,
                        Pending {
                            changes,
                            base,
                            again,
                        },
                    );
                    activator.activate();
                    break;
                }
                if let Some(lane) = lane {
                    lanes[lane] = None;
                }
                // Keep the table for the next time, no larger than about twice
                // what this one needed.
                changes.shrink_to_use();
                if spare
                    .as_ref()
                    .is_none_or(|s| s.capacity() < changes.capacity())
                {
                    *spare = Some(changes);
                }
            }
            // Also when nothing was processed: a message's capability can be
            // earlier than its records' times, and holding it would keep the
            // frontier from ever passing them.
            for held in &mut held {
                if !held.is_empty() {
                    hold_only(held, pending.keys().map(|&(e, r)| Product::new(e, r)));
                }
            }
            if done {
                table.shrink_if_sparse();
            }
            // The patterns' updates add up once every later change of a fact is at or
            // after the frontier: the pending times' and the inputs' of facts.
            let frontier = || {
                let mut frontier = Antichain::new();
                for &(e, r) in pending.keys() {
                    frontier.insert(Product::new(e, r));
                }
                for f in &frontiers[..2] {
                    for t in f.frontier().iter() {
                        frontier.insert(*t);
                    }
                }
                frontier
            };
            patterns.maybe_compact(frontier, &tables);
            // Once the commit's loop is over (every future input is of a later epoch),
            // the waiting changes' words go until the next commit needs them.
            if pending.is_empty() && limit.is_none_or(|(e, _)| e > *last_epoch) {
                table.release_waiting();
            }
        }
    });
    (
        VecCollection::new(entries_stream),
        VecCollection::new(direct_stream),
        VecCollection::new(leaving_stream),
        [meter, pending_meter],
        table,
    )
}

/// The facts of a time's round table past which its changes move to the table of
/// facts (see `distinct`).
const MOVE_AT: usize = 1 << 16;

/// The base changes of a time from which [`Materialized::reserve_for`] makes room for
/// their new facts at once.
const RESERVE_AT: usize = 1024;

/// The waiting changes processed per activation, at most. Each change of presence
/// sends its fact's records under the patterns in use to the joins (for transitive
/// closure, a substitution of 40 bytes to the last atoms' join): a large round's all
/// at once waited in the channels until the joins ran, a part at a time they are
/// taken (and packed) in between. The next time's heads, which come meanwhile, wait
/// in the table of facts' other lane (in a table of their own, tc-gnp5000 peaked
/// 300 MB higher).
const WAITING_FUEL: usize = 1 << 20;

/// Call `f` on each run of `data`'s updates that share a time (one lookup of the
/// time's pending updates per run, not per update), then empty `data`.
fn for_each_run<R>(
    data: &mut Vec<(R, Inner, Mult)>,
    mut f: impl FnMut((u32, u32), &[(R, Inner, Mult)]),
) {
    let mut rest = &data[..];
    while let Some((_, t, _)) = rest.first() {
        let run = rest.iter().position(|u| u.1 != *t).unwrap_or(rest.len());
        f((t.outer, t.inner), &rest[..run]);
        rest = &rest[run..];
    }
    data.clear();
}

/// The operator's state: the facts' histories, and the updates waiting for their time.
#[derive(Default)]
struct State<R> {
    table: SharedTable<R>,
    pending: BTreeMap<(u32, u32), Pending<R>>,
    /// An emptied table of changes, kept for the next time: a round's table would
    /// otherwise grow from nothing, rehashing as it doubles, every round.
    spare: Option<RoundTable<R>>,
    /// The times whose changes wait in the table of facts, a lane each: a time whose
    /// round table reaches `MOVE_AT` facts while a lane is free (in a load, every large
    /// round). The heads of other times add up in round tables.
    lanes: [Option<(u32, u32)>; LANES],
    /// The epoch of the last time processed.
    last_epoch: u32,
    /// The patterns in use, which the facts' changes meet (module `entries`).
    patterns: Patterns,
}

/// The updates of one time: the count changes, added up per fact as they arrive (a
/// recursive rule derives most facts many times in a round), and the facts to
/// evaluate again.
struct Pending<R> {
    changes: RoundTable<R>,
    /// Base facts' changes, each fact at most once.
    base: Vec<(R, Mult)>,
    again: Vec<R>,
}

impl<R> Default for Pending<R> {
    fn default() -> Self {
        Pending {
            changes: RoundTable::default(),
            base: Vec::new(),
            again: Vec::new(),
        }
    }
}

impl<R: Row> State<R> {
    /// Facts held, and the bytes of their table (with the patterns in use).
    fn table_usage(&self) -> Usage {
        let table = lock_table(&self.table);
        Usage {
            records: table.len() as u64,
            bytes: table.bytes() + self.patterns.usage().bytes,
        }
    }

    /// The updates waiting for their time (records: the facts re-evaluated and the
    /// base facts, and the distinct facts of the round tables), and the bytes of
    /// their tables, with the spare one.
    fn pending_usage(&self) -> Usage {
        let mut usage = Usage::default();
        for p in self.pending.values() {
            usage.records += (p.changes.len() + p.base.len() + p.again.len()) as u64;
            usage.bytes += p.changes.bytes() + vec_bytes(&p.base) + vec_bytes(&p.again);
        }
        usage.bytes += self.spare.as_ref().map_or(0, RoundTable::bytes);
        usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(steps: &[(u32, Mult, Mult)]) -> History {
        History {
            steps: steps
                .iter()
                .map(|&(round, input, output)| Step::new(round, input, output))
                .collect(),
        }
    }

    #[test]
    fn a_new_fact_appears_once() {
        let mut h = history(&[(3, 2, 0)]);
        assert_eq!(h.evaluate(3), (1, None));
        assert_eq!(h.steps, history(&[(3, 2, 1)]).steps);
        // A further derivation later changes nothing.
        h.at(5).add_input(1);
        assert_eq!(h.evaluate(5), (0, None));
    }

    #[test]
    fn losing_an_early_derivation_moves_the_fact_to_its_later_one() {
        // Derived at rounds 2 and 5, present from 2; the round-2 derivation goes.
        let mut h = history(&[(2, 1, 1), (5, 1, 0)]);
        h.at(2).add_input(-1);
        assert_eq!(h.evaluate(2), (-1, Some(5)));
        assert_eq!(h.evaluate(5), (1, None));
        assert_eq!(h.steps, history(&[(5, 1, 1)]).steps);
    }

    #[test]
    fn a_fact_whose_support_cancels_is_forgotten() {
        let mut h = history(&[(1, 1, 1)]);
        h.at(1).add_input(-1);
        assert_eq!(h.evaluate(1), (-1, None));
        assert!(h.steps.is_empty());
    }

    #[test]
    fn a_wrong_presence_after_a_consistent_step_is_found() {
        // Count: 1 at 2, 2 at 5, 0 at 7 (so absent from 7); presence +1 at 2, -1 at 7.
        let mut h = history(&[(2, 1, 1), (5, 1, 0), (7, -2, -1)]);
        // A new derivation from round 3 keeps the fact alive at 7.
        h.at(3).add_input(1);
        assert_eq!(h.evaluate(3), (0, Some(7)));
        assert_eq!(h.evaluate(7), (1, None));
    }

    #[test]
    fn waiting_changes_are_processed_as_the_same_changes_given_at_their_time() {
        // One table takes a time's changes as they wait in it, the other as a list:
        // the same net emissions and the same facts after (the list evaluates a fact
        // after each of its changes, so it may emit changes that cancel).
        let heads: Vec<([u32; 3], Inner, Mult)> = [
            ([1, 1, 2], 1),
            ([1, 2, 3], 2),
            ([1, 1, 2], 1),
            ([1, 9, 9], 1),
            ([1, 9, 9], -1),
            ([2, 4, 0], 1),
        ]
        .iter()
        .map(|&(f, d)| (f, Product::new(0, 3), d))
        .collect();
        let run = |waiting: bool| {
            let mut table = Materialized::<[u32; 3]>::default();
            // A fact present from round 1, lost at round 3 by the list of changes.
            process(&mut table, [([1, 5, 5], 1)], [], 1, |_, _, _| {});
            let mut out = Vec::new();
            let mut changes: Vec<([u32; 3], Mult)> = vec![([1, 5, 5], -1)];
            if waiting {
                table.add_waiting(0, &heads);
            } else {
                changes.extend(heads.iter().map(|&(f, _, d)| (f, d)));
            }
            let mut emit = |f, c, w| out.push((f, c, w));
            if waiting {
                // A change at a time: the same as all at once.
                while !process_waiting(&mut table, 0, 1, 3, &mut emit) {}
            }
            process(&mut table, changes, [], 3, &mut emit);
            out.sort();
            table.release_waiting();
            let facts: Vec<usize> = table.relations.iter().map(|r| r.facts.len()).collect();
            (out, facts)
        };
        let net = |out: &[([u32; 3], Mult, Option<u32>)]| {
            let mut net = std::collections::BTreeMap::new();
            for &(f, c, _) in out {
                *net.entry(f).or_insert(0) += c;
            }
            net.retain(|_, c| *c != 0);
            net
        };
        let (emitted, facts) = run(true);
        let (listed, facts_listed) = run(false);
        assert_eq!((net(&emitted), &facts), (net(&listed), &facts_listed));
        assert_eq!(
            emitted,
            vec![
                ([1, 1, 2], 1, None),
                ([1, 2, 3], 1, None),
                ([1, 5, 5], -1, None),
                ([2, 4, 0], 1, None)
            ]
        );
        // (1, 9, 9) was derived and underived in the time: forgotten, and nothing
        // emitted for it; (1, 5, 5) keeps its history.
        assert_eq!(facts, vec![0, 3, 1]);
    }

    #[test]
    fn a_fact_waiting_in_the_other_lane_is_kept() {
        // A fact whose changes of one time add up to nothing is forgotten, unless the
        // next time, in the other lane, has a change for it.
        let mut table = Materialized::<[u32; 3]>::default();
        let t = Product::new(0, 3);
        table.add_waiting(
            0,
            &[([1, 7, 7], t, 1), ([1, 7, 7], t, -1), ([1, 8, 8], t, 1)],
        );
        table.add_waiting(1, &[([1, 7, 7], Product::new(0, 4), 1)]);
        let mut out = Vec::new();
        let mut emit = |f, c, w| out.push((f, c, w));
        assert!(process_waiting(&mut table, 0, usize::MAX, 3, &mut emit));
        assert!(process_waiting(&mut table, 1, usize::MAX, 4, &mut emit));
        out.sort();
        assert_eq!(out, vec![([1, 7, 7], 1, None), ([1, 8, 8], 1, None)]);
        table.release_waiting();
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn the_table_answers_as_the_materialization() {
        // Relation 1 is ternary; relation 2 unary. Facts are stored up to their last
        // non-zero word, so (1, 4, 0) is stored as [1, 1, 4] until a wider fact comes.
        let table: RwLock<Materialized<[u32; 8]>> = RwLock::default();
        let mut emitted = 0;
        {
            let mut t = lock_table(&table);
            let updates = [
                ([1, 1, 4, 0, 0, 0, 0, 0], 1),
                ([2, 9, 0, 0, 0, 0, 0, 0], 2),
                ([1, 2, 0, 0, 0, 0, 0, 0], 1),
            ];
            process(&mut t, updates, [], 1, |_, c, _| emitted += c);
            // Derived at round 3 and lost at round 5: in the table, not present.
            process(&mut t, [([1, 7, 7, 7, 0, 0, 0, 0], 1)], [], 3, |_, c, _| {
                emitted += c
            });
            process(
                &mut t,
                [([1, 7, 7, 7, 0, 0, 0, 0], -1)],
                [],
                5,
                |_, c, _| emitted += c,
            );
        }
        assert_eq!(emitted, 3);
        // The row of zeros (relation 0, values 0) is stored in no words at all.
        let zeros: RwLock<Materialized<[u32; 8]>> = RwLock::default();
        process(&mut lock_table(&zeros), [([0; 8], 1)], [], 1, |_, _, _| {});
        let mut got = Vec::new();
        zeros.for_each(0, 2, &mut |t| got.push(t.to_vec()));
        assert_eq!(got, vec![vec![0, 0]]);
        assert!(zeros.contains(0, &[0, 0]) && zeros.len(0) == 1);
        assert_eq!(table.len(1), 2);
        assert_eq!(table.len(2), 1);
        assert_eq!(table.len(3), 0);
        assert!(table.contains(1, &[1, 4, 0]));
        assert!(table.contains(2, &[9]));
        assert!(!table.contains(1, &[7, 7, 7]), "lost at round 5");
        assert!(!table.contains(1, &[1, 4, 1]));
        assert!(!table.contains(1, &[0; 9]), "wider than a row");
        let all = |rel, arity| {
            let mut all = Vec::new();
            table.for_each(rel, arity, &mut |t| all.push(t.to_vec()));
            all.sort();
            all
        };
        assert_eq!(all(1, 3), vec![vec![1, 4, 0], vec![2, 0, 0]]);
        assert_eq!(all(2, 1), vec![vec![9]]);
        // A wider fact widens the rows: the ternary facts still
        // come out at their arity, the unary ones at theirs.
        process(
            &mut lock_table(&table),
            [([3, 1, 2, 3, 4, 5, 0, 0], 1)],
            [],
            6,
            |_, _, _| {},
        );
        assert_eq!(all(1, 3), vec![vec![1, 4, 0], vec![2, 0, 0]]);
        assert_eq!(all(2, 1), vec![vec![9]]);
        assert_eq!(all(3, 5), vec![vec![1, 2, 3, 4, 5]]);
        // Retracting a fact's support takes it out.
        process(
            &mut lock_table(&table),
            [([2, 9, 0, 0, 0, 0, 0, 0], -2)],
            [],
            1,
            |_, _, _| {},
        );
        assert_eq!(table.len(2), 0);
        assert!(all(2, 1).is_empty());
    }

    #[test]
    fn a_moot_reevaluation_emits_nothing() {
        // Derived 5 times at round 1 and once at round 2 (from itself, as
        // `T(x, "rdf:type", "rdfs:Resource") :- T(x, _, _)` does); then the rule goes.
        let f = [0u32, 7, 1];
        let mut table = Materialized::default();
        let relation = table.relation(0);
        relation
            .facts
            .insert(f, &history(&[(1, 5, 1), (2, 1, 0)]).steps);
        relation.present = 1;
        let mut out = Vec::new();
        process(&mut table, [(f, -5)], [], 1, |f, c, w| out.push((f, c, w)));
        // Absent from round 1, but the count says present at 2: look again there.
        assert_eq!(out, vec![(f, -1, Some(2))]);
        out.clear();
        // At round 2 the re-evaluation was queued before the change that makes it moot.
        process(&mut table, [(f, -1)], [f], 2, |f, c, w| out.push((f, c, w)));
        assert_eq!(out, vec![], "no +1 and -1 at round 2");
        assert_eq!(table.len(), 0);
        assert_eq!(table.relation(0).present, 0);
    }
}
