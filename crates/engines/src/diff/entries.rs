//! The index entries of the circuit: for every fact and every binding pattern in use on
//! its relation, the fact's entry under the pattern (`PatternSpec::entry`). What the
//! direct rules make of the facts matching their first atom
//! (`CompiledRule::direct`) comes out beside them: the patterns in use are (pattern,
//! rule) pairs for those.
//!
//! This is the join `facts ⋈ patterns` on the relation, done inside the `distinct`
//! (module `distinct`), which makes the facts: the patterns are few and change only
//! with the rules, the facts are many. [`Patterns`] keeps the patterns of each
//! relation with their times. A fact's change meets its relation's patterns as the
//! `distinct` makes it (a pattern's constants are checked at once); a new pattern meets
//! the history of its relation's facts, which is the `distinct`'s table itself: each
//! fact's steps are its changes of presence by round, every earlier epoch folded in.
//! Each record is at the join of its two times, with the product of their
//! multiplicities.
//!
//! Correctness is the usual one of a symmetric join: a fact's change made before a
//! pattern arrives is in the table when the pattern meets it, one made after meets the
//! pattern as it is made, so each (fact, pattern) pair of updates is met once.
//!
//! The join was an operator of its own, after the loop's feedback, that kept its own
//! history of the facts (for the patterns that appear later: 109 MB per worker on
//! tc-gnp5000, a copy of what the table holds) and the facts of each round until its
//! input frontier passed their time (a round's facts again, up to 200 MB). Both went
//! when it moved into the `distinct`, and the loop's feedback moved before it: the
//! variable carries the heads, and the `distinct`'s changes are the round's facts.

use super::compile::{ColSpec, PatternSpec, Tables, pattern_of};
use super::memory::{Usage, vec_bytes};
use super::round::RoundTable;
use super::step::{Emit, first_step};
use super::types::{Inner, Mult, Row, bucket};
use differential_dataflow::consolidation::consolidate_updates;
use differential_dataflow::lattice::Lattice;
use rustc_hash::FxHashMap;
use std::sync::Arc;
use timely::order::Product;
use timely::progress::Antichain;
use timely::progress::frontier::AntichainRef;

/// A pattern in use: its id (with [`NEG`] for a negated one) and [`INDEX`], or the
/// id of a rule whose first atom it is, read straight from the facts
/// ([`super::compile::CompiledRule::direct`]).
pub(crate) type Use = (u32, u32);

/// In a [`Use`]: the pattern's entries go to the index.
pub(crate) const INDEX: u32 = u32::MAX;

/// The patterns in use of each relation, with their times.
#[derive(Default)]
pub(crate) struct Patterns {
    /// Per relation id.
    relations: Vec<RelationPatterns>,
}

#[derive(Default)]
struct RelationPatterns {
    /// Pattern updates: use, time, multiplicity.
    updates: Vec<(Use, Inner, Mult)>,
    /// The spec of each of `updates`.
    specs: Vec<Arc<PatternSpec>>,
    /// The uses among `updates` after its last compaction: while `updates` is longer,
    /// some use has updates not yet added up.
    compacted: usize,
    /// Which of `updates` a fact can match, by the value of one column, when enough
    /// of them name a constant there (`None` while `stale`: every update is checked).
    dispatch: Option<Dispatch>,
    /// `updates` changed since `dispatch` was built ([`Patterns::settle`] builds it).
    stale: bool,
}

/// The updates of a relation's patterns by the constant they name in column `col`
/// (RhoDF's rules over `T(s, p, o)` name a property in the second column of 9 of the
/// 10 patterns they use): a fact can match only the updates of its own value there and
/// those that name no constant there. Checking every pattern, a fact paid for the
/// patterns of every other property: with this, RhoDF over LUBM(1) loads in 8–20%
/// less time (see docs/benchmarks.md).
struct Dispatch {
    col: usize,
    by_const: FxHashMap<u32, Vec<u32>>,
    others: Vec<u32>,
}

/// The fewest updates naming a constant in one column for a [`Dispatch`] (a few
/// patterns are checked as fast as a lookup).
const DISPATCH_AT: usize = 3;

impl RelationPatterns {
    /// Build `dispatch` anew for `updates` (after they change, which is rare: with the
    /// rules), on the column where most of them name a constant.
    fn index(&mut self) {
        self.dispatch = None;
        self.stale = false;
        let width = self.specs.iter().map(|s| s.cols.len()).max().unwrap_or(0);
        let constants = |c: usize| {
            self.specs
                .iter()
                .filter(|s| matches!(s.cols.get(c), Some(ColSpec::Const(_))))
                .count()
        };
        let best = (0..width)
            .map(|c| (c, constants(c)))
            .max_by_key(|&(c, n)| (n, std::cmp::Reverse(c)));
        let Some((col, n)) = best else {
            return;
        };
        if n < DISPATCH_AT {
            return;
        }
        let mut dispatch = Dispatch {
            col,
            by_const: FxHashMap::default(),
            others: Vec::new(),
        };
        for (i, spec) in self.specs.iter().enumerate() {
            match spec.cols.get(col) {
                Some(ColSpec::Const(v)) => dispatch.by_const.entry(*v).or_default().push(i as u32),
                _ => dispatch.others.push(i as u32),
            }
        }
        self.dispatch = Some(dispatch);
    }

    /// Call `f` with the index of each update whose pattern the fact of `values` (a row
    /// `[rel, values..]`) may match, once each: every other one cannot.
    #[inline]
    fn each_candidate(&self, values: &[u32], mut f: impl FnMut(usize)) {
        match &self.dispatch {
            Some(d) => {
                if let Some(matching) = d.by_const.get(&values[1 + d.col]) {
                    matching.iter().for_each(|&i| f(i as usize));
                }
                d.others.iter().for_each(|&i| f(i as usize));
            }
            None => (0..self.updates.len()).for_each(f),
        }
    }
}

/// Where the records of a fact under the patterns go: the index entries `(key, free
/// values)`, and the substitutions (or head facts) of the direct rules.
pub(crate) trait Sink<R> {
    fn entry(&mut self, entry: (R, R), time: Inner, diff: Mult);
    fn direct(&mut self, records: Emit<R>, time: Inner, diff: Mult);
}

/// A [`Sink`] of two closures: `entry` for the index entries, `direct` for the direct
/// rules' records.
pub(crate) struct SinkFns<E, D>(pub E, pub D);

impl<R, E, D> Sink<R> for SinkFns<E, D>
where
    E: FnMut((R, R), Inner, Mult),
    D: FnMut(Emit<R>, Inner, Mult),
{
    #[inline]
    fn entry(&mut self, entry: (R, R), time: Inner, diff: Mult) {
        (self.0)(entry, time, diff)
    }

    #[inline]
    fn direct(&mut self, records: Emit<R>, time: Inner, diff: Mult) {
        (self.1)(records, time, diff)
    }
}

impl Patterns {
    /// The patterns' updates and the bytes they hold.
    pub(crate) fn usage(&self) -> Usage {
        let mut usage = Usage {
            records: 0,
            bytes: vec_bytes(&self.relations),
        };
        for r in &self.relations {
            let dispatch = r.dispatch.as_ref().map_or(0, |d| {
                let lists: u64 = d.by_const.values().map(vec_bytes).sum();
                let entry = std::mem::size_of::<(u32, Vec<u32>)>() + 1;
                lists + (d.by_const.capacity() * entry) as u64 + vec_bytes(&d.others)
            });
            usage += Usage {
                records: r.updates.len() as u64,
                bytes: vec_bytes(&r.updates) + vec_bytes(&r.specs) + dispatch,
            };
        }
        usage
    }

    /// The change `d` of fact `f` (a row `[rel, values..]`) at `t` meets every pattern
    /// of its relation (those it may match: see [`Dispatch`]).
    #[inline]
    pub(crate) fn meet<R: Row>(
        &self,
        f: &R,
        t: Inner,
        d: Mult,
        buckets: u32,
        tables: &Tables,
        sink: &mut impl Sink<R>,
    ) {
        let Some(relation) = self.relations.get(f.as_ref()[0] as usize) else {
            return;
        };
        relation.each_candidate(f.as_ref(), |i| {
            let ((p, tp, dp), spec) = (&relation.updates[i], &relation.specs[i]);
            let (time, diff) = (t.join(tp), d * dp);
            match records(*p, spec, f, buckets, tables) {
                Records::None => {}
                Records::Entry(k, v) => sink.entry((k, v), time, diff),
                Records::Direct(out) => sink.direct(out, time, diff),
            }
        });
    }

    /// Add the update `d` at `t` of pattern use `p`, after it meets the history of its
    /// relation's facts: `history(rel, f)` calls `f(fact, round, presence change)` for
    /// every change of a fact of relation `rel` made so far, those of the commit in
    /// progress and, folded in, those of the earlier ones. (The epoch of a change is
    /// not needed: a pattern that meets the history is of the commit in progress, and
    /// every change of the history is of that commit or an earlier one, so the join of
    /// their times is `(pattern's epoch, later of the two rounds)`, which the round
    /// alone gives. The round is kept exact: a fact's entry under a new pattern must
    /// appear at the fact's round, or the loop would see it early.)
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add<R: Row>(
        &mut self,
        p: Use,
        t: Inner,
        d: Mult,
        buckets: u32,
        tables: &Tables,
        history: impl FnOnce(u32, &mut dyn FnMut(&R, u32, Mult)),
        sink: &mut impl Sink<R>,
    ) {
        let spec = tables.pattern(pattern_of(p.0));
        let at = |round: u32| Product::new(t.outer, t.inner.max(round));
        if spec.cols.iter().any(|c| matches!(c, ColSpec::Wild)) {
            // A projection gives many facts the same entry (`T(x, _, _)`: one per
            // subject, 8 triples each on LUBM(1)): add up the facts' changes per entry
            // and round first, then make each entry's records once, from the sum (a
            // rule's step per fact, and a record sent per fact, cost more than the
            // sum). The entry and round are packed in one row for the sum (see
            // [`Packing`]), which the `distinct`'s table of a time's heads adds up.
            // Added to the table as the history is read: the entries are far fewer
            // than the facts, and their table stays in the cache (a list of the
            // packed rows first, to add up with fetches ahead, was as large as the
            // relation's history: its growth, and its fresh pages, cost more).
            let packing = Packing::of(&spec);
            let mut sums = RoundTable::default();
            history(spec.rel, &mut |f: &R, round, df| {
                if let Some(row) = packing.pack(&spec, f, round) {
                    sums.add(&row, df);
                }
            });
            for (row, df) in sums.drain() {
                if df != 0 {
                    let (key, val, round) = packing.unpack(&row);
                    let records =
                        records_of_entry(p, &spec, key, val, packing.used, buckets, tables);
                    send(records, at(round), d * df, sink);
                }
            }
        } else {
            // No two facts have the same entry: nothing to add up.
            history(spec.rel, &mut |f: &R, round, df| {
                send(
                    records(p, &spec, f, buckets, tables),
                    at(round),
                    d * df,
                    sink,
                );
            });
        }
        let rel = spec.rel as usize;
        if self.relations.len() <= rel {
            self.relations
                .resize_with(rel + 1, RelationPatterns::default);
        }
        let relation = &mut self.relations[rel];
        relation.updates.push((p, t, d));
        relation.specs.push(spec);
        // The dispatch does not know the new update: every update is checked until
        // `settle` builds it again, once for all the patterns that came together (a
        // program's rules come at once; building it per pattern was quadratic in them).
        relation.dispatch = None;
        relation.stale = true;
    }

    /// Build the dispatch of each relation whose patterns changed (after a batch of
    /// [`Patterns::add`]).
    pub(crate) fn settle(&mut self) {
        for relation in self.relations.iter_mut().filter(|r| r.stale) {
            relation.index();
        }
    }

    /// Advance the patterns' times by the frontier that `frontier()` gives (every
    /// later fact's change is at or after it) and add up their updates, in each
    /// relation with a use of more than one update: as soon as the frontier allows,
    /// a rule that came and went leaves nothing, and a use one update. (Every fact's
    /// change meets every update of its relation's patterns: a rule's removal met
    /// each fact it retracted under the rule's addition and its removal, two records
    /// that cancelled downstream. A relation's updates are few, and change with the
    /// rules only.)
    pub(crate) fn maybe_compact(
        &mut self,
        frontier: impl FnOnce() -> Antichain<Inner>,
        tables: &Tables,
    ) {
        let due = |r: &RelationPatterns| r.updates.len() > r.compacted;
        if !self.relations.iter().any(due) {
            return;
        }
        let frontier = frontier();
        for relation in self.relations.iter_mut().filter(|r| due(r)) {
            compact(&mut relation.updates, frontier.borrow());
            relation.specs = relation
                .updates
                .iter()
                .map(|(p, _, _)| tables.pattern(pattern_of(p.0)))
                .collect();
            // Consolidated updates are sorted: a use's are next to each other.
            relation.compacted = relation.updates.chunk_by(|a, b| a.0 == b.0).count();
            relation.index();
        }
    }
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

/// A fact's entry under a projecting pattern and the round of its change, in one row
/// `[0, bound values.., free values.., 0.., round]`: a pattern with a wildcard leaves
/// at least one of the fact's values out, so the entry's values fit in the row's words
/// after the first and before the last (a row has a word per value and the relation).
struct Packing {
    /// Key words of the entry (1 + its bound values).
    used: usize,
    /// Its free values.
    free: usize,
}

impl Packing {
    fn of(spec: &PatternSpec) -> Packing {
        let free = spec
            .cols
            .iter()
            .filter(|c| matches!(c, ColSpec::Free))
            .count();
        Packing {
            used: spec.key_len(),
            free,
        }
    }

    /// The packed entry of fact `f` changed at `round`, if it matches `spec`.
    #[inline]
    fn pack<R: Row>(&self, spec: &PatternSpec, f: &R, round: u32) -> Option<R> {
        let (mut row, mut val) = (R::default(), R::default());
        spec.entry(&f.as_ref()[1..], row.as_mut(), val.as_mut())?;
        let words = row.as_mut();
        let last = words.len() - 1;
        debug_assert!(self.used + self.free <= last, "a projection fits its row");
        words[self.used..self.used + self.free].copy_from_slice(&val.as_ref()[..self.free]);
        words[last] = round;
        Some(row)
    }

    /// The entry's key (`[0, bound values..]`), free values and round of a packed row.
    #[inline]
    fn unpack<R: Row>(&self, row: &R) -> (R, R, u32) {
        let words = row.as_ref();
        let (mut key, mut val) = (R::default(), R::default());
        key.as_mut()[1..self.used].copy_from_slice(&words[1..self.used]);
        val.as_mut()[..self.free].copy_from_slice(&words[self.used..self.used + self.free]);
        (key, val, words[words.len() - 1])
    }
}

/// Send `records` at `time` with `diff` to `sink`.
#[inline]
fn send<R: Row>(records: Records<R>, time: Inner, diff: Mult, sink: &mut impl Sink<R>) {
    match records {
        Records::None => {}
        Records::Entry(k, v) => sink.entry((k, v), time, diff),
        Records::Direct(out) => sink.direct(out, time, diff),
    }
}

/// The records of fact `f` under the pattern in use `p`.
#[inline]
fn records<R: Row>(p: Use, spec: &PatternSpec, f: &R, buckets: u32, tables: &Tables) -> Records<R> {
    let (mut key, mut val) = (R::default(), R::default());
    match spec.entry(&f.as_ref()[1..], key.as_mut(), val.as_mut()) {
        None => Records::None,
        Some(used) => records_of_entry(p, spec, key, val, used, buckets, tables),
    }
}

/// The records of the pattern in use `(p, rule)` for a fact's entry under its spec:
/// `key[1..used]` the bound values, `val` the free ones.
#[inline]
fn records_of_entry<R: Row>(
    (p, rule): Use,
    spec: &PatternSpec,
    key: R,
    val: R,
    used: usize,
    buckets: u32,
    tables: &Tables,
) -> Records<R> {
    if rule == INDEX {
        let (key, val) = keyed(p, spec, key, val, used, buckets);
        return Records::Entry(key, val);
    }
    // A direct rule reads only the free values: no key, so no bucket to compute.
    Records::Direct(tables.with_rule(rule, |r| first_step(r, rule, val.as_ref(), buckets)))
}

/// The index entry of fact `f` (a row `[rel, values..]`) under pattern `p`, if it
/// matches: its `(key, free values)`, the key `[p, bound values.., bucket]`.
#[cfg(test)]
fn entry<R: Row>(p: u32, spec: &PatternSpec, f: &R, buckets: u32) -> Option<(R, R)> {
    let (mut key, mut val) = (R::default(), R::default());
    let used = spec.entry(&f.as_ref()[1..], key.as_mut(), val.as_mut())?;
    Some(keyed(p, spec, key, val, used, buckets))
}

/// The index entry of a fact under pattern `p` from its spec's entry (see
/// [`records_of_entry`]): the pattern and, if spread, the bucket put in the key.
#[inline]
fn keyed<R: Row>(
    p: u32,
    spec: &PatternSpec,
    mut key: R,
    val: R,
    used: usize,
    buckets: u32,
) -> (R, R) {
    key.as_mut()[0] = p;
    if spec.spread {
        // Spread the entries of a key over the buckets (see `JoinStep::bucketed`).
        key.as_mut()[used] = bucket(val.as_ref(), buckets);
    }
    (key, val)
}

/// Advance the times of `updates` by `frontier` and consolidate them.
fn compact<D: Ord>(updates: &mut Vec<(D, Inner, Mult)>, frontier: AntichainRef<Inner>) {
    for (_, t, _) in updates.iter_mut() {
        t.advance_by(frontier);
    }
    consolidate_updates(updates);
}

#[cfg(test)]
mod tests {
    use super::super::compile::NEG;
    use super::*;

    /// Relation patterns of `cols`, each an index pattern in use once.
    fn relation_of(cols: &[Vec<ColSpec>]) -> RelationPatterns {
        let mut r = RelationPatterns::default();
        for (i, c) in cols.iter().enumerate() {
            r.updates.push(((i as u32, INDEX), Product::new(0, 0), 1));
            r.specs.push(Arc::new(PatternSpec {
                rel: 1,
                neg: false,
                cols: c.clone(),
                spread: false,
                last: false,
            }));
        }
        r.index();
        r
    }

    #[test]
    fn a_fact_meets_every_pattern_it_matches_once_and_skips_other_constants() {
        use ColSpec::{Bound, Const, Eq, Free, Wild};
        let cols = vec![
            vec![Free, Const(7), Free],
            vec![Bound, Const(7), Free],
            vec![Free, Const(9), Bound],
            vec![Free, Bound, Free],
            vec![Const(3), Free, Wild],
            vec![Free, Const(11), Eq(0)],
        ];
        let r = relation_of(&cols);
        let d = r
            .dispatch
            .as_ref()
            .expect("four constants in the second column");
        assert_eq!(d.col, 1);
        let values = [1, 3, 7, 9, 11];
        for &a in &values {
            for &b in &values {
                for &c in &values {
                    let fact = [1u32, a, b, c];
                    let mut met = Vec::new();
                    r.each_candidate(&fact, |i| met.push(i));
                    let mut once = met.clone();
                    once.sort_unstable();
                    once.dedup();
                    assert_eq!(once.len(), met.len(), "{fact:?} met a pattern twice");
                    for (i, spec) in r.specs.iter().enumerate() {
                        if entry(i as u32, spec, &fact, 1).is_some() {
                            assert!(met.contains(&i), "{fact:?} missed pattern {i}");
                        }
                    }
                    // Another constant in the dispatch column is never met.
                    for &i in &met {
                        if let Const(v) = r.specs[i].cols[1] {
                            assert_eq!(v, b, "{fact:?} met pattern {i}");
                        }
                    }
                }
            }
        }
        // Few constants: every pattern is met, in order.
        let r = relation_of(&cols[2..5]);
        assert!(r.dispatch.is_none());
        let mut met = Vec::new();
        r.each_candidate(&[1, 1, 1, 1], |i| met.push(i));
        assert_eq!(met, [0, 1, 2]);
    }

    #[test]
    fn a_projection_packs_its_entry_and_round_into_one_row_and_back() {
        use ColSpec::{Bound, Const, Eq, Free, Wild};
        let specs = [
            vec![Free, Wild],
            vec![Bound, Wild],
            vec![Bound, Free, Wild],
            vec![Free, Wild, Free],
            vec![Wild, Const(7), Bound],
            vec![Free, Eq(0), Wild],
            vec![Bound, Free, Bound, Free, Free, Free, Wild],
        ];
        for cols in specs {
            let spec = PatternSpec {
                rel: 1,
                neg: false,
                cols: cols.clone(),
                spread: false,
                last: false,
            };
            let packing = Packing::of(&spec);
            for (i, round) in [0u32, 1, 5, u32::MAX >> 1].into_iter().enumerate() {
                // Values that match the constants and repeated columns.
                let mut fact = [0u32; 8];
                fact[0] = 1;
                for (c, col) in cols.iter().enumerate() {
                    fact[1 + c] = match col {
                        Const(v) => *v,
                        Eq(j) => fact[1 + *j as usize],
                        _ => 100 + (10 * i + c) as u32,
                    };
                }
                let (mut key, mut val) = ([0u32; 8], [0u32; 8]);
                spec.entry(&fact[1..], &mut key, &mut val).expect("matches");
                let row: [u32; 8] = packing.pack(&spec, &fact, round).expect("matches");
                assert_eq!(row[0], 0, "{cols:?}: the table's relation word");
                assert_eq!(packing.unpack(&row), (key, val, round), "{cols:?}");
                // Another round, or another value of a column that is left out, or
                // kept, gives another row exactly when the entry differs.
                let other: [u32; 8] = packing.pack(&spec, &fact, round + 1).expect("matches");
                assert_ne!(row, other);
                for c in 0..cols.len() {
                    // Constants and repeated columns are checked, not kept.
                    let repeated = cols.contains(&Eq(c as u32));
                    if matches!(cols[c], Const(_) | Eq(_)) || repeated {
                        continue;
                    }
                    let mut changed = fact;
                    changed[1 + c] += 1;
                    let moved: [u32; 8] = packing.pack(&spec, &changed, round).expect("matches");
                    assert_eq!(moved == row, cols[c] == Wild, "{cols:?}, column {c}");
                }
            }
            // The narrowest row that holds the fact holds the packed entry too.
            if cols.len() == 2 {
                let fact = [1u32, 3, 4];
                let row: [u32; 3] = packing.pack(&spec, &fact, 9).expect("matches");
                assert_eq!(row[2], 9);
                let (key, val, round) = packing.unpack(&row);
                let (mut k, mut v) = ([0u32; 3], [0u32; 3]);
                spec.entry(&fact[1..], &mut k, &mut v).expect("matches");
                assert_eq!((key, val, round), (k, v, 9));
            }
            // A fact off the pattern's constants packs to nothing.
            if let Some(c) = cols.iter().position(|c| matches!(c, Const(_))) {
                let mut fact = [1u32; 8];
                fact[1 + c] = 8;
                assert_eq!(packing.pack::<[u32; 8]>(&spec, &fact, 0), None);
            }
        }
    }

    #[test]
    fn a_pattern_that_came_and_went_leaves_no_update_once_the_frontier_passes() {
        use super::super::compile::Shared;
        let shared = Arc::new(Shared::default());
        let spec = PatternSpec {
            rel: 1,
            neg: false,
            cols: vec![ColSpec::Free, ColSpec::Wild],
            spread: false,
            last: false,
        };
        shared
            .patterns
            .write()
            .expect("not poisoned")
            .push(Arc::new(spec));
        let tables = Tables::new(shared);
        let mut patterns = Patterns::default();
        let mut none = SinkFns(
            |_: ([u32; 4], [u32; 4]), _, _| panic!("no history, no entry"),
            |_: Emit<[u32; 4]>, _, _| panic!("no direct rule"),
        );
        let empty = |_: u32, _: &mut dyn FnMut(&[u32; 4], u32, Mult)| {};
        let p = (0, INDEX);
        patterns.add(p, Product::new(1, 0), 1, 1, &tables, empty, &mut none);
        patterns.settle();
        patterns.maybe_compact(|| Antichain::from_elem(Product::new(1, 0)), &tables);
        patterns.add(p, Product::new(2, 0), -1, 1, &tables, empty, &mut none);
        patterns.settle();
        // The records a fact's change at (2, 3) makes.
        let met = |patterns: &Patterns| {
            let mut met = Vec::new();
            let mut sink = SinkFns(
                |e: ([u32; 4], [u32; 4]), t, d| met.push((e, t, d)),
                |_: Emit<[u32; 4]>, _, _| {},
            );
            patterns.meet(&[1, 7, 8, 0], Product::new(2, 3), 1, 1, &tables, &mut sink);
            met
        };
        // Each update of the pattern makes its record: they cancel.
        let before = met(&patterns);
        assert_eq!(before.len(), 2);
        assert_eq!(before.iter().map(|r| r.2).sum::<Mult>(), 0);
        // Not yet: the frontier is before the removal, whose update stays apart.
        patterns.maybe_compact(|| Antichain::from_elem(Product::new(1, 5)), &tables);
        assert_eq!(patterns.relations[1].updates.len(), 2);
        assert_eq!(met(&patterns).len(), 2);
        // Then the frontier passes it (at a later activation): nothing is left.
        patterns.maybe_compact(|| Antichain::from_elem(Product::new(2, 0)), &tables);
        assert!(patterns.relations[1].updates.is_empty());
        assert!(met(&patterns).is_empty());
        // A use added again keeps its one update.
        patterns.add(p, Product::new(3, 0), 1, 1, &tables, empty, &mut none);
        patterns.settle();
        patterns.maybe_compact(|| Antichain::from_elem(Product::new(3, 0)), &tables);
        assert_eq!(patterns.relations[1].updates.len(), 1);
        assert_eq!(met(&patterns).len(), 1);
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
