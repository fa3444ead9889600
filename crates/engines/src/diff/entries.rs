//! The index entries of the circuit: for every fact and every binding pattern in use on
//! its relation, the fact's entry under the pattern (`PatternSpec::entry`).
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
//! multiplicities.
//!
//! Correctness is the usual one of a symmetric join: in each activation the new
//! patterns meet the facts matched before (not the pending ones), then the facts whose
//! time the input frontier has passed meet every pattern received so far, a time at a
//! time, so each (fact, pattern) pair of updates is met once. A record is sent under
//! a capability for its fact's or its pattern's time, which is at most the record's
//! time (the join of the two).

use super::compile::{ColSpec, NEG, PatternSpec};
use super::dataflow::{Inner, Mult, Row, Tables, bucket, hold_only};
use differential_dataflow::VecCollection;
use differential_dataflow::consolidation::consolidate_updates;
use differential_dataflow::lattice::Lattice;
use rustc_hash::FxHashMap;
use std::rc::Rc;
use std::sync::Arc;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::CapabilitySet;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::vec::Broadcast as _;
use timely::progress::frontier::AntichainRef;

/// Per relation: its patterns and the history of its facts.
#[derive(Default)]
struct Relation<R> {
    /// Pattern updates: id (with [`NEG`] for a negated one), time, multiplicity.
    patterns: Vec<(u32, Inner, Mult)>,
    /// The spec of each of `patterns`.
    specs: Vec<Arc<PatternSpec>>,
    /// Length of `patterns` after its last compaction.
    patterns_compacted: usize,
    facts: Vec<(R, Inner, Mult)>,
    /// Length of `facts` after its last compaction.
    facts_compacted: usize,
}

/// The state of relation `rel`, created empty on first use.
fn relation<R: Row>(relations: &mut Vec<Relation<R>>, rel: u32) -> &mut Relation<R> {
    let rel = rel as usize;
    if relations.len() <= rel {
        relations.resize_with(rel + 1, Relation::default);
    }
    &mut relations[rel]
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
/// of `patterns` (pattern ids, negated ones with [`NEG`]) on the fact's relation.
pub(crate) fn pattern_entries<'s, R: Row>(
    facts: VecCollection<'s, Inner, R, Mult>,
    patterns: VecCollection<'s, Inner, u32, Mult>,
    tables: Rc<Tables>,
    buckets: u32,
) -> VecCollection<'s, Inner, (R, R), Mult> {
    // Every worker needs every pattern: its facts are a slice of all of them.
    let patterns = patterns.inner.broadcast();
    let stream = facts.inner.binary_frontier(
        patterns,
        Pipeline,
        Pipeline,
        "PatternEntries",
        move |_capability, _info| {
            let mut relations: Vec<Relation<R>> = Vec::new();
            // Facts received but not yet matched, and capabilities for their times.
            let mut pending: Vec<(R, Inner, Mult)> = Vec::new();
            let mut held = CapabilitySet::new();
            move |(facts_in, facts_frontier), (patterns_in, patterns_frontier), output| {
                // New patterns meet the facts received before this activation.
                patterns_in.for_each(|cap, data| {
                    let mut session = output.session(&cap);
                    for (p, t, d) in data.drain(..) {
                        let spec = tables.pattern(p & !NEG);
                        let relation = relation(&mut relations, spec.rel);
                        // A projection gives many facts the same entry (`T(x, _, _)`: one
                        // per subject): add those up before they are sent.
                        let projects = spec.cols.iter().any(|c| matches!(c, ColSpec::Wild));
                        let mut sums: FxHashMap<((R, R), Inner), Mult> = FxHashMap::default();
                        for (f, tf, df) in &relation.facts {
                            if let Some(e) = entry(p, &spec, f, buckets) {
                                if projects {
                                    *sums.entry((e, t.join(tf))).or_insert(0) += d * df;
                                } else {
                                    session.give((e, t.join(tf), d * df));
                                }
                            }
                        }
                        for ((e, te), de) in sums {
                            if de != 0 {
                                session.give((e, te, de));
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
                    for c in cap.retain_stamp(0).iter() {
                        held.insert(c.clone());
                    }
                    pending.append(data);
                });
                let facts_frontier = facts_frontier.frontier();
                if !held.is_empty() {
                    let mut ready = Vec::new();
                    pending.retain(|u| {
                        let keep = facts_frontier.less_equal(&u.1);
                        if !keep {
                            ready.push(*u);
                        }
                        keep
                    });
                    by_time(&mut ready);
                    // Ready facts meet every pattern received so far.
                    for same in ready.chunk_by(|a, b| a.1 == b.1) {
                        let cap = held.delayed(&same[0].1);
                        let mut session = output.session(&cap);
                        for &(f, t, d) in same {
                            let relation = relation(&mut relations, f.as_ref()[0]);
                            for ((p, tp, dp), spec) in relation.patterns.iter().zip(&relation.specs)
                            {
                                if let Some(e) = entry(*p, spec, &f, buckets) {
                                    session.give((e, t.join(tp), d * dp));
                                }
                            }
                            relation.facts.push((f, t, d));
                        }
                    }
                    hold_only(&mut held, pending.iter().map(|u| u.1));
                }
                // The facts' history is only met by future patterns, the patterns' by
                // future facts: each compacts to its partner's frontier. With no future
                // patterns at all, the history is not needed any more.
                let patterns_frontier = patterns_frontier.frontier();
                for relation in &mut relations {
                    if patterns_frontier.is_empty() {
                        relation.facts = Vec::new();
                    } else if relation.facts.len() > 2 * relation.facts_compacted + 1024 {
                        compact(&mut relation.facts, patterns_frontier);
                        relation.facts_compacted = relation.facts.len();
                    }
                    if relation.patterns.len() > 2 * relation.patterns_compacted + 16 {
                        compact(&mut relation.patterns, facts_frontier);
                        relation.specs = relation
                            .patterns
                            .iter()
                            .map(|(p, _, _)| tables.pattern(p & !NEG))
                            .collect();
                        relation.patterns_compacted = relation.patterns.len();
                    }
                }
            }
        },
    );
    VecCollection::new(stream)
}

#[cfg(test)]
mod tests {
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
    fn entries_check_constants_and_spread_keys() {
        // p(x, "c"): x free, a constant in the second column, no bound column.
        let spec = PatternSpec {
            rel: 1,
            neg: false,
            cols: vec![ColSpec::Free, ColSpec::Const(7)],
            spread: true,
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
