//! The index entries of the circuit: for every fact and every binding pattern in use on
//! its relation, the fact's entry under the pattern (`PatternSpec::entry`). A second
//! output carries what the direct rules make of the facts matching their first atom
//! (`CompiledRule::direct`): the patterns in use are (pattern, rule) pairs for those.
//!
//! This is the join `facts ⋈ patterns` on the relation, written as one operator that
//! knows the join's shape: the patterns are few and change only with the rules, the
//! facts are many. The operator keeps the patterns of each relation (with their times)
//! and, for the patterns that appear later, the history of the facts of each relation,
//! compacted as the patterns' frontier advances. A new fact is matched against its
//! relation's patterns only (a pattern's constants are checked at once); a new pattern
//! against its relation's facts only. No arrangement of the facts by relation is built
//! and no candidate pair crosses an exchange; the output is a collection like any
//! join's, each record at the join of its two times with the product of their
//! multiplicities (on either output).
//!
//! Correctness is the usual one of a symmetric join: in each activation the new
//! patterns meet the facts matched before (not the pending ones), then the facts whose
//! time the input frontier has passed meet every pattern received so far, a time at a
//! time, so each (fact, pattern) pair of updates is met once. A record is sent under
//! a capability for its fact's or its pattern's time, which is at most the record's
//! time (the join of the two).

use super::compile::{ColSpec, PatternSpec, Tables, pattern_of};
use super::memory::{Meter, Usage, vec_bytes};
use super::step::{Emit, first_step};
use super::types::{
    Inner, Mult, Row, Sub, bucket, hold_for_outputs, hold_only, reserve_quarter, used_words,
    widen_records,
};
use differential_dataflow::VecCollection;
use differential_dataflow::consolidation::consolidate_updates;
use differential_dataflow::lattice::Lattice;
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::CapabilitySet;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::vec::Broadcast as _;
use timely::order::Product;
use timely::progress::frontier::AntichainRef;

/// A pattern in use: its id (with [`NEG`] for a negated one) and [`INDEX`], or the
/// id of a rule whose first atom it is, read straight from the facts
/// ([`super::compile::CompiledRule::direct`]).
pub(crate) type Use = (u32, u32);

/// In a [`Use`]: the pattern's entries go to the index.
pub(crate) const INDEX: u32 = u32::MAX;

/// Per relation: its patterns and the history of its facts.
#[derive(Default)]
struct Relation<R> {
    /// Pattern updates: use, time, multiplicity.
    patterns: Vec<(Use, Inner, Mult)>,
    /// The spec of each of `patterns`.
    specs: Vec<Arc<PatternSpec>>,
    /// Length of `patterns` after its last compaction.
    patterns_compacted: usize,
    facts: History,
    marker: std::marker::PhantomData<R>,
}

/// The history of a relation's facts, for the patterns that appear later: per update,
/// the fact's values, its round and its multiplicity.
///
/// The epoch of an update is not kept: a pattern that meets the history is of the
/// commit in progress (a commit ends when every pattern of its epoch has been met),
/// and every update of the history is of that commit or an earlier one, so the join
/// of their times is `(pattern's epoch, later of the two rounds)`, which the round
/// alone gives. The round is kept exact: a fact's entry under a new pattern must appear
/// at the fact's round, or the loop would see it early.
///
/// Values are stored up to the last non-zero one seen in the relation (the rest of a
/// row is zero padding to the circuit's width), flat, record after record. The rounds
/// and multiplicities are stored once per run of records that share them ([`Run`]):
/// facts come a time at a time, and a time's additions are pushed before its
/// retractions, so a load makes one run per round and relation. A binary relation's
/// record takes 8 bytes; with a round and a multiplicity per record it took 16 (and a
/// `(row, time, diff)` triple of an 8-wide circuit 44).
#[derive(Default)]
struct History {
    /// Values per record.
    width: usize,
    /// Records.
    len: usize,
    /// `len` records of `width` words.
    values: Vec<u32>,
    /// The runs, by their first record; the first starts at record 0.
    runs: Vec<Run>,
    /// Records after the last compaction.
    compacted: usize,
    /// Records with a negative multiplicity pushed since the last compaction. Without
    /// them there is nothing to add up: the `distinct` sends a change of presence, so
    /// a fact comes back (`+1` again) only after it went (`-1`).
    retractions: usize,
}

/// Records `start..` (up to the next run's start) of a [`History`], all at `round` with
/// multiplicity `diff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    start: usize,
    round: u32,
    diff: Mult,
}

impl History {
    fn len(&self) -> usize {
        self.len
    }

    /// Append the update of fact `f` (a row `[rel, values..]`) at `round`.
    fn push<R: Row>(&mut self, f: &R, round: u32, diff: Mult) {
        let values = &f.as_ref()[1..];
        let used = used_words(values);
        if used > self.width {
            self.widen(used);
        }
        // Grow by a quarter, not double: the history is one of the circuit's largest
        // parts and lives as long as the facts.
        reserve_quarter(&mut self.values, self.width);
        self.values.extend_from_slice(&values[..self.width]);
        self.push_meta(round, diff);
    }

    /// Count a record just appended to `values`, at `round` with `diff`.
    fn push_meta(&mut self, round: u32, diff: Mult) {
        if !matches!(self.runs.last(), Some(r) if r.round == round && r.diff == diff) {
            self.runs.push(Run {
                start: self.len,
                round,
                diff,
            });
        }
        self.len += 1;
        if diff < 0 {
            self.retractions += 1;
        }
    }

    /// Store `width` values per record from now on (more than now).
    fn widen(&mut self, width: usize) {
        let w = self.width;
        self.values = widen_records(&self.values, self.len, w, w, width - w);
        self.width = width;
    }

    /// Every run, with its records' range.
    fn runs(&self) -> impl Iterator<Item = (std::ops::Range<usize>, Run)> + '_ {
        self.runs.iter().enumerate().map(|(i, run)| {
            let end = self.runs.get(i + 1).map_or(self.len, |next| next.start);
            (run.start..end, *run)
        })
    }

    /// Every update: the fact as a row of relation `rel`, its round, its multiplicity.
    fn for_each<R: Row>(&self, rel: u32, mut f: impl FnMut(&R, u32, Mult)) {
        let w = self.width;
        let mut row = R::default();
        row.as_mut()[0] = rel;
        for (records, run) in self.runs() {
            for r in records {
                row.as_mut()[1..=w].copy_from_slice(&self.values[r * w..(r + 1) * w]);
                f(&row, run.round, run.diff);
            }
        }
    }

    /// Add up the multiplicities of the updates of one fact at one round (dropping
    /// those that cancel), when the history has doubled since the last time and
    /// something was retracted since: a load that only adds facts is never sorted (the
    /// sort was an eighth of the workers' time in a full materialization, and its copy
    /// of the history a transient of the size of the history). The records come out
    /// by round, so that the runs stay few.
    fn maybe_compact(&mut self) {
        let len = self.len;
        if len <= 2 * self.compacted + 1024 {
            return;
        }
        if self.retractions == 0 || u32::try_from(len).is_err() {
            self.compacted = len;
            return;
        }
        self.retractions = 0;
        let w = self.width;
        let values = |i: u32| &self.values[i as usize * w..(i as usize + 1) * w];
        // (round, multiplicity, record), by round, then values.
        let mut order: Vec<(u32, Mult, u32)> = Vec::with_capacity(len);
        for (records, run) in self.runs() {
            order.extend(records.map(|r| (run.round, run.diff, r as u32)));
        }
        order.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| values(a.2).cmp(values(b.2))));
        let mut compacted = History {
            width: w,
            values: Vec::with_capacity(self.values.len()),
            ..History::default()
        };
        for same in order.chunk_by(|a, b| a.0 == b.0 && values(a.2) == values(b.2)) {
            let diff: Mult = same.iter().map(|u| u.1).sum();
            if diff != 0 {
                compacted.values.extend_from_slice(values(same[0].2));
                compacted.push_meta(same[0].0, diff);
            }
        }
        compacted.values.shrink_to_fit();
        compacted.runs.shrink_to_fit();
        compacted.retractions = 0;
        compacted.compacted = compacted.len;
        *self = compacted;
    }
}

/// The state of relation `rel`, created empty on first use.
fn relation<R: Row>(relations: &mut Vec<Relation<R>>, rel: u32) -> &mut Relation<R> {
    let rel = rel as usize;
    if relations.len() <= rel {
        relations.resize_with(rel + 1, Relation::default);
    }
    &mut relations[rel]
}

/// What a fact gives under a pattern in use.
enum Records<R> {
    /// Nothing: it does not match.
    None,
    /// Its index entry `(key, free values)`.
    Entry(R, R),
    /// The substitutions (or head fact) of the rule that reads the pattern as its first
    /// atom.
    Direct(Emit<R>),
}

/// The records of fact `f` under the pattern in use `(p, rule)`.
#[inline]
fn records<R: Row>(
    (p, rule): Use,
    spec: &PatternSpec,
    f: &R,
    buckets: u32,
    tables: &Tables,
) -> Records<R> {
    if rule == INDEX {
        return match entry(p, spec, f, buckets) {
            None => Records::None,
            Some((key, val)) => Records::Entry(key, val),
        };
    }
    // A direct rule reads only the free values: no key, so no bucket to compute.
    let mut key = R::default();
    let mut val = R::default();
    match spec.entry(&f.as_ref()[1..], key.as_mut(), val.as_mut()) {
        None => Records::None,
        Some(_) => {
            Records::Direct(tables.with_rule(rule, |r| first_step(r, rule, val.as_ref(), buckets)))
        }
    }
}

/// The entry of fact `f` (a row `[rel, values..]`) under pattern `p`, if it matches.
#[inline]
fn entry<R: Row>(p: u32, spec: &PatternSpec, f: &R, buckets: u32) -> Option<(R, R)> {
    let mut key = R::default();
    let mut val = R::default();
    let n = spec.entry(&f.as_ref()[1..], key.as_mut(), val.as_mut())?;
    key.as_mut()[0] = p;
    if spec.spread {
        // Spread the entries of a key over the buckets (see `JoinStep::bucketed`).
        key.as_mut()[n] = bucket(val.as_ref(), buckets);
    }
    Some((key, val))
}

/// Sort `updates` by time, then fact, and add up the multiplicities of equal updates
/// (dropping those that cancel). Updates all of one time are left as they are: the
/// `distinct` sends a fact once per time (twice, `+1` and `-1`, in a rare case the
/// index arrangement cancels anyway), so sorting them would only cost.
fn by_time<R: Row>(updates: &mut Vec<(R, Inner, Mult)>) {
    if updates.windows(2).all(|w| w[0].1 == w[1].1) {
        return;
    }
    updates.sort_unstable_by_key(|u| (u.1, u.0));
    let mut out = 0;
    for i in 0..updates.len() {
        let (f, t, d) = updates[i];
        if out > 0 && updates[out - 1].0 == f && updates[out - 1].1 == t {
            updates[out - 1].2 += d;
            if updates[out - 1].2 == 0 {
                out -= 1;
            }
        } else {
            updates[out] = (f, t, d);
            out += 1;
        }
    }
    updates.truncate(out);
}

/// Advance the times of `updates` by `frontier` and consolidate them.
fn compact<D: Ord>(updates: &mut Vec<(D, Inner, Mult)>, frontier: AntichainRef<Inner>) {
    for (_, t, _) in updates.iter_mut() {
        t.advance_by(frontier);
    }
    consolidate_updates(updates);
}

/// The index entries `(key, free values)` of every fact of `facts` under every pattern
/// in use of `patterns` on the fact's relation, and (second) the substitutions past
/// the first atom of the direct rules (see [`records`]): two outputs of one operator,
/// so that neither is copied or split after it.
/// The operator's state.
#[derive(Default)]
struct State<R> {
    /// Per relation id.
    relations: Vec<Relation<R>>,
    /// Facts received but not yet matched.
    pending: Vec<(R, Inner, Mult)>,
}

impl<R: Row> State<R> {
    /// The facts' history and the pending facts: updates and bytes.
    fn usage(&self) -> Usage {
        let mut usage = Usage {
            records: self.pending.len() as u64,
            bytes: vec_bytes(&self.pending),
        };
        for r in &self.relations {
            usage += Usage {
                records: r.facts.len() as u64,
                bytes: vec_bytes(&r.facts.values)
                    + vec_bytes(&r.facts.runs)
                    + vec_bytes(&r.patterns)
                    + vec_bytes(&r.specs),
            };
        }
        usage
    }
}

/// Also returns the meter of the operator's state.
#[allow(clippy::type_complexity)]
pub(crate) fn pattern_entries<'s, R: Row>(
    facts: VecCollection<'s, Inner, R, Mult>,
    patterns: VecCollection<'s, Inner, Use, Mult>,
    tables: Rc<Tables>,
    buckets: u32,
) -> (
    VecCollection<'s, Inner, (R, R), Mult>,
    VecCollection<'s, Inner, (R, Sub<R>), Mult>,
    Meter,
) {
    let mut builder = OperatorBuilder::new("PatternEntries".to_owned(), facts.inner.scope());
    let mut facts_in = builder.new_input(facts.inner, Pipeline);
    // Every worker needs every pattern: its facts are a slice of all of them.
    let mut patterns_in = builder.new_input(patterns.inner.broadcast(), Pipeline);
    let (entries_out, entries) = builder.new_output::<Vec<((R, R), Inner, Mult)>>();
    let (direct_out, direct) = builder.new_output::<Vec<((R, Sub<R>), Inner, Mult)>>();
    let mut entries_out: OutputBuilder<_, CapacityContainerBuilder<_>> =
        OutputBuilder::from(entries_out);
    let mut direct_out: OutputBuilder<_, CapacityContainerBuilder<_>> =
        OutputBuilder::from(direct_out);
    let state: Rc<RefCell<State<R>>> = Rc::default();
    let shared = state.clone();
    let meter = Meter::new("entries (fact history for new patterns)", move || {
        shared.borrow().usage()
    });
    builder.build(move |_capabilities| {
        // Capabilities for the times of the pending facts (one set per output).
        let mut held = [CapabilitySet::new(), CapabilitySet::new()];
        move |frontiers| {
            let mut state = state.borrow_mut();
            let State { relations, pending } = &mut *state;
            let relations = &mut *relations;
            let (facts_frontier, patterns_frontier) = (&frontiers[0], &frontiers[1]);
            let mut entries_out = entries_out.activate();
            let mut direct_out = direct_out.activate();
            // New patterns meet the facts received before this activation.
            patterns_in.for_each(|cap, data| {
                let mut entries = entries_out.session(&cap);
                let mut direct = direct_out.session(&cap);
                for (p, t, d) in data.drain(..) {
                    let spec = tables.pattern(pattern_of(p.0));
                    let relation = relation(relations, spec.rel);
                    // A projection gives many facts the same record (`T(x, _, _)`: one
                    // per subject): add those up before they are sent.
                    let projects = spec.cols.iter().any(|c| matches!(c, ColSpec::Wild));
                    let mut entry_sums: FxHashMap<((R, R), Inner), Mult> = FxHashMap::default();
                    let mut direct_sums: FxHashMap<((R, Sub<R>), Inner), Mult> =
                        FxHashMap::default();
                    // The history has no epochs (see `History`): the pattern's is the
                    // join's.
                    relation.facts.for_each(spec.rel, |f: &R, round, df| {
                        let time = Product::new(t.outer, t.inner.max(round));
                        let diff = d * df;
                        match records(p, &spec, f, buckets, &tables) {
                            Records::None => {}
                            Records::Entry(k, v) if projects => {
                                *entry_sums.entry(((k, v), time)).or_insert(0) += diff;
                            }
                            Records::Entry(k, v) => entries.give(((k, v), time, diff)),
                            Records::Direct(out) if projects => {
                                for r in out {
                                    *direct_sums.entry((r, time)).or_insert(0) += diff;
                                }
                            }
                            Records::Direct(out) => {
                                direct.give_iterator(out.map(|r| (r, time, diff)));
                            }
                        }
                    });
                    for ((e, te), de) in entry_sums {
                        if de != 0 {
                            entries.give((e, te, de));
                        }
                    }
                    for ((e, te), de) in direct_sums {
                        if de != 0 {
                            direct.give((e, te, de));
                        }
                    }
                    relation.patterns.push((p, t, d));
                    relation.specs.push(spec);
                }
            });
            // New facts wait until no more updates can come at their time (each
            // (fact, pattern) pair is then met once, see the module docs), and go
            // out a time at a time, under one capability each.
            facts_in.for_each(|cap, data| {
                hold_for_outputs(&mut held, &cap);
                pending.append(data);
            });
            let facts_frontier = facts_frontier.frontier();
            // Some pending fact is ready only if some held time (each pending fact's
            // time is at or after one) is not at or after the frontier: facts come in
            // many messages per round, and scanning every pending fact on each was a
            // twentieth of the workers' time.
            let ready = held[0].iter().any(|c| !facts_frontier.less_equal(c.time()));
            if ready {
                // The facts still waiting move to a new buffer; the ready ones, most of
                // them when the frontier moves, are worked on in place (a copy of a
                // round's facts was a peak of a load).
                let waiting: Vec<(R, Inner, Mult)> = pending
                    .extract_if(.., |u| facts_frontier.less_equal(&u.1))
                    .collect();
                let mut ready = std::mem::replace(pending, waiting);
                by_time(&mut ready);
                // Ready facts meet every pattern received so far.
                for same in ready.chunk_by(|a, b| a.1 == b.1) {
                    let caps = [held[0].delayed(&same[0].1), held[1].delayed(&same[0].1)];
                    let mut entries = entries_out.session(&caps[0]);
                    let mut direct = direct_out.session(&caps[1]);
                    for &(f, t, d) in same {
                        let relation = relation(relations, f.as_ref()[0]);
                        for ((p, tp, dp), spec) in relation.patterns.iter().zip(&relation.specs) {
                            let (time, diff) = (t.join(tp), d * dp);
                            match records(*p, spec, &f, buckets, &tables) {
                                Records::None => {}
                                Records::Entry(k, v) => entries.give(((k, v), time, diff)),
                                Records::Direct(out) => {
                                    direct.give_iterator(out.map(|r| (r, time, diff)));
                                }
                            }
                        }
                    }
                    // The history: a time's additions, then its retractions (so that
                    // they make two runs, not one per alternation).
                    for positive in [true, false] {
                        for &(f, t, d) in same.iter().filter(|u| (u.2 > 0) == positive) {
                            relation(relations, f.as_ref()[0])
                                .facts
                                .push(&f, t.inner, d);
                        }
                    }
                }
                for held in &mut held {
                    hold_only(held, pending.iter().map(|u| u.1));
                }
            }
            // The facts' history is only met by future patterns, the patterns' by
            // future facts: the patterns compact to the facts' frontier, the history
            // adds up the updates of a fact at a round (it has no epochs to advance).
            // With no future patterns at all, the history is not needed any more.
            let patterns_frontier = patterns_frontier.frontier();
            for relation in relations.iter_mut() {
                if patterns_frontier.is_empty() {
                    relation.facts = History::default();
                } else {
                    relation.facts.maybe_compact();
                }
                if relation.patterns.len() > 2 * relation.patterns_compacted + 16 {
                    compact(&mut relation.patterns, facts_frontier);
                    relation.specs = relation
                        .patterns
                        .iter()
                        .map(|(p, _, _)| tables.pattern(pattern_of(p.0)))
                        .collect();
                    relation.patterns_compacted = relation.patterns.len();
                }
            }
        }
    });
    (
        VecCollection::new(entries),
        VecCollection::new(direct),
        meter,
    )
}

#[cfg(test)]
mod tests {
    use super::super::compile::NEG;
    use super::*;
    use timely::order::Product;

    #[test]
    fn by_time_sorts_by_time_and_cancels() {
        let t = |e, r| Product::new(e, r);
        let f = |x| [1u32, x, 0];
        let mut updates = vec![
            (f(2), t(0, 1), 1),
            (f(1), t(0, 1), -1),
            (f(1), t(0, 0), 1),
            (f(1), t(0, 1), 1),
            (f(3), t(0, 1), 1),
            (f(3), t(0, 1), 1),
            (f(2), t(0, 1), -1),
            (f(2), t(0, 1), 1),
        ];
        by_time(&mut updates);
        assert_eq!(
            updates,
            vec![(f(1), t(0, 0), 1), (f(2), t(0, 1), 1), (f(3), t(0, 1), 2)]
        );
        // One time: as they came.
        let mut one = vec![(f(2), t(0, 1), 1), (f(1), t(0, 1), 1)];
        by_time(&mut one);
        assert_eq!(one, vec![(f(2), t(0, 1), 1), (f(1), t(0, 1), 1)]);
    }

    #[test]
    fn the_history_keeps_values_rounds_and_counts_in_few_words() {
        let mut h = History::default();
        let row = |a, b| [4u32, a, b, 0];
        // Values up to the last non-zero one: none, then one, then two (re-encoded).
        h.push(&row(0, 0), 3, 1);
        h.push(&row(5, 0), 1, 1);
        assert_eq!((h.width, h.values.len()), (1, 2));
        h.push(&row(5, 6), 2, 1);
        assert_eq!((h.width, h.values.len()), (2, 6));
        // Three rounds: three runs.
        assert_eq!(h.runs.len(), 3);
        let mut seen = Vec::new();
        h.for_each::<[u32; 4]>(4, |f, round, d| seen.push((*f, round, d)));
        assert_eq!(
            seen,
            vec![(row(0, 0), 3, 1), (row(5, 0), 1, 1), (row(5, 6), 2, 1)]
        );
        // Updates of a fact at a round add up when the history compacts; those that
        // cancel go.
        for i in 0..3000u32 {
            h.push(&row(i % 7, 1), i % 2, if i % 4 < 2 { 1 } else { -1 });
        }
        h.push(&row(9, 9), 7, -2);
        h.push(&row(9, 9), 7, 5);
        h.maybe_compact();
        let mut seen = Vec::new();
        h.for_each::<[u32; 4]>(4, |f, round, d| seen.push((*f, round, d)));
        seen.sort();
        let mut expected = vec![(row(0, 0), 3, 1), (row(5, 0), 1, 1), (row(5, 6), 2, 1)];
        let mut sums = std::collections::BTreeMap::new();
        for i in 0..3000u32 {
            *sums.entry((row(i % 7, 1), i % 2)).or_insert(0) += if i % 4 < 2 { 1 } else { -1 };
        }
        expected.extend(
            sums.into_iter()
                .filter(|(_, d)| *d != 0)
                .map(|((f, r), d)| (f, r, d)),
        );
        expected.push((row(9, 9), 7, 3));
        expected.sort();
        assert_eq!(seen, expected);
        assert_eq!(h.compacted, h.len());
        assert_eq!(h.values.capacity(), h.values.len());
        // Compacted by round, then values: a run wherever the round or the
        // multiplicity changes in that order.
        let mut by_round: Vec<(u32, [u32; 4], Mult)> =
            expected.iter().map(|&(f, r, d)| (r, f, d)).collect();
        by_round.sort();
        let runs = 1 + by_round
            .windows(2)
            .filter(|w| (w[0].0, w[0].2) != (w[1].0, w[1].2))
            .count();
        assert_eq!(h.runs.len(), runs);
        assert!(runs < 20, "{runs} runs for {} records", by_round.len());
    }

    #[test]
    fn a_load_makes_one_run_per_round() {
        let mut h = History::default();
        let row = |a, b| [4u32, a, b, 0];
        for round in 1..4u32 {
            for i in 1..=1000u32 {
                h.push(&row(i, round), round, 1);
            }
        }
        assert_eq!(h.len(), 3000);
        assert_eq!(h.values.len(), 6000, "two words a record, nothing else");
        assert_eq!(h.runs.len(), 3);
        // A retraction starts a run, and so does the next addition.
        h.push(&row(1, 3), 3, -1);
        h.push(&row(2, 3), 3, 1);
        assert_eq!(h.runs.len(), 5);
        let mut n = 0;
        h.for_each::<[u32; 4]>(4, |f, round, d| {
            n += 1;
            assert_eq!(f[2], round);
            assert!(d == 1 || (*f == row(1, 3) && d == -1));
        });
        assert_eq!(n, 3002);
    }

    #[test]
    fn a_history_of_zero_width_counts_its_records() {
        // A relation whose values are all 0 (or a nullary one) stores no values.
        let mut h = History::default();
        for _ in 0..3 {
            h.push(&[4u32, 0, 0, 0], 2, 1);
        }
        h.push(&[4u32, 0, 0, 0], 2, -1);
        assert_eq!((h.width, h.values.len(), h.len()), (0, 0, 4));
        let mut seen = Vec::new();
        h.for_each::<[u32; 4]>(4, |f, round, d| seen.push((*f, round, d)));
        assert_eq!(seen.len(), 4);
        assert_eq!(seen.iter().map(|s| s.2).sum::<Mult>(), 2);
    }

    #[test]
    fn a_history_of_additions_only_is_not_sorted() {
        let mut h = History::default();
        let row = |a| [4u32, a, 1, 0];
        // Facts in descending order: a compaction would sort them.
        for i in (0..3000u32).rev() {
            h.push(&row(i), 1, 1);
        }
        let before = h.values.clone();
        h.maybe_compact();
        assert_eq!(h.values, before, "nothing to add up, so nothing moved");
        assert_eq!(h.compacted, h.len());
        // One retraction, then enough growth: the history compacts, and the fact
        // retracted at the round it was added is gone.
        h.push(&row(5), 1, -1);
        for i in 3000..8000u32 {
            h.push(&row(i), 2, 1);
        }
        h.maybe_compact();
        assert_eq!(h.len(), 7999);
        let mut first = None;
        h.for_each::<[u32; 4]>(4, |f, _, _| {
            first.get_or_insert(*f);
        });
        assert_eq!(first, Some(row(0)), "sorted by round, then values");
        assert_eq!(h.retractions, 0);
    }

    #[test]
    fn entries_check_constants_and_spread_keys() {
        // p(x, "c"): x free, a constant in the second column, no bound column.
        let spec = PatternSpec {
            rel: 1,
            neg: false,
            cols: vec![ColSpec::Free, ColSpec::Const(7)],
            spread: true,
            last: false,
        };
        assert_eq!(entry(5, &spec, &[1u32, 3, 8], 4), None);
        let (key, val) = entry(5, &spec, &[1u32, 3, 7], 4).expect("matches");
        assert_eq!(key[0], 5);
        assert_eq!(key[1], bucket(&val, 4));
        assert_eq!(val, [3, 0, 0]);
        // A spread pattern with a bound column: the bucket follows the bound value.
        let keyed = PatternSpec {
            rel: 1,
            neg: false,
            cols: vec![ColSpec::Bound, ColSpec::Free, ColSpec::Free],
            spread: true,
            last: false,
        };
        let (key, val) = entry(6, &keyed, &[1u32, 3, 8, 9], 4).expect("matches");
        assert_eq!(key, [6, 3, bucket(&val, 4), 0]);
        assert_eq!(val, [8, 9, 0, 0]);
        // Not spread (a negated pattern is never): the key is the bound values alone.
        let negated = PatternSpec {
            neg: true,
            spread: false,
            ..keyed
        };
        let (key, _) = entry(6 | NEG, &negated, &[1u32, 3, 8, 9], 4).expect("matches");
        assert_eq!(key, [6 | NEG, 3, 0, 0]);
    }
}
