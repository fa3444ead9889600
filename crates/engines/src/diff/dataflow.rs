//! The circuit: one differential dataflow per worker, built once for a row width and a
//! number of join stages, interpreting whatever rules the `rules` input holds.
//!
//! See the module documentation of [`crate::diff`] for the picture; this file is the
//! code of it.

use super::compile::{AGG, HEAD, LAST, LAST_PAT, LEVEL_SHIFT, NEG, TableEntry, Tables, agg_untag};
use super::distinct::distinct;
use super::entries::{INDEX, Use};
use super::last_join::last_join;
use super::memory::{Meter, Usage, trace_meter, vec_bytes};
use super::mirror::{SharedPart, lock};
use super::step::{Emit, emit};
use super::types::{Inner, Mult, Row, Sub, bucket, reserve_quarter};
use differential_dataflow::VecCollection;
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::trace::implementations::{KeyBuilder, KeySpine, ValBuilder, ValSpine};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::core::Exchange as _;
use timely::dataflow::operators::core::{Inspect as _, Probe as _};
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::vec::{Broadcast as _, Input as _};
use timely::dataflow::operators::{ConnectLoop as _, Feedback as _};
use timely::order::Product;
use timely::progress::operate::FrontierInterest;
use timely::worker::Worker;

/// The worker-routing hash of a fact: its bucket. The `distinct` that makes the facts
/// (base and derived) places them by it, so every update of one fact reaches the same
/// worker, whose table holds the fact's history.
#[inline]
fn fact_route<R: Row>(f: &R, buckets: u32) -> u64 {
    bucket(&f.as_ref()[1..], buckets) as u64
}

/// The updates of `c`, each sent to the one of `N` collections that `route` names: one
/// pass, and no copy. (A collection read by several operators is cloned, container by
/// container, for all but one of them; `filter`s on the copies then drop most of each:
/// the substitutions of a stage were copied three times before this split.)
fn split<'s, D: differential_dataflow::Data, const N: usize>(
    c: VecCollection<'s, Inner, D, Mult>,
    name: &str,
    route: impl Fn(&D) -> usize + 'static,
) -> [VecCollection<'s, Inner, D, Mult>; N] {
    split_unless(c, name, route, || None)
}

/// [`split`], where `one_way()`, asked per container, may name the collection every
/// update goes to without looking at each.
fn split_unless<'s, D: differential_dataflow::Data, const N: usize>(
    c: VecCollection<'s, Inner, D, Mult>,
    name: &str,
    route: impl Fn(&D) -> usize + 'static,
    one_way: impl Fn() -> Option<usize> + 'static,
) -> [VecCollection<'s, Inner, D, Mult>; N] {
    let mut builder = OperatorBuilder::new(name.to_owned(), c.inner.scope());
    let mut input = builder.new_input(c.inner, Pipeline);
    builder.set_notify_for(0, FrontierInterest::Never);
    let mut outputs = Vec::with_capacity(N);
    let mut streams = Vec::with_capacity(N);
    for _ in 0..N {
        let (output, stream) = builder.new_output::<Vec<(D, Inner, Mult)>>();
        let output: OutputBuilder<_, CapacityContainerBuilder<_>> = OutputBuilder::from(output);
        outputs.push(output);
        streams.push(stream);
    }
    builder.build(move |_capabilities| {
        move |_frontiers| {
            let mut outputs: Vec<_> = outputs.iter_mut().map(|o| o.activate()).collect();
            input.for_each(|cap, data| {
                let mut sessions: Vec<_> = outputs.iter_mut().map(|o| o.session(&cap)).collect();
                // A container all of whose updates go one way goes whole (the heads of
                // a program without aggregates: millions a round in a closure).
                let first = one_way().or_else(|| {
                    let k = route(&data.first()?.0);
                    data.iter().all(|u| route(&u.0) == k).then_some(k)
                });
                if let Some(k) = first {
                    sessions[k].give_container(data);
                    return;
                }
                for update in data.drain(..) {
                    sessions[route(&update.0)].give(update);
                }
            });
        }
    });
    let mut streams = streams.into_iter();
    std::array::from_fn(|_| VecCollection::new(streams.next().expect("one stream per output")))
}

/// What a worker keeps of its dataflow.
pub(crate) struct Handles<R: Row> {
    /// Base facts `[rel, values..]`.
    pub facts: InputSession<u32, R, Mult>,
    /// Live rules `(level, rule id)`.
    pub rules: InputSession<u32, (u32, u32), Mult>,
    /// Table entries process 0 of a cluster sends to the other processes: broadcast to
    /// every worker, which adds them to its process's tables (see
    /// [`super::Role::Leader`]); the probe covers their arrival at every worker.
    pub tables: timely::dataflow::operators::vec::input::Handle<u32, Vec<TableEntry>>,
    pub probe: ProbeHandle<u32>,
    /// Changes of the materialization seen by this worker since the last drain, when
    /// the commit records them (see [`super::mirror::Mode`]).
    pub output: Rc<RefCell<Vec<(R, Mult)>>>,
    /// This worker's part of the handle's copy of the materialization, which it updates
    /// as its changes leave the loop (module `mirror`).
    pub mirror: SharedPart,
    /// Highest round seen per level since the last drain.
    pub rounds: Rc<RefCell<Vec<u32>>>,
    /// The addresses of the operators that hold arrangements, to wake for background
    /// merging after a commit.
    pub arrangements: Vec<Rc<[usize]>>,
    /// What each part of the circuit holds (see module `memory`).
    pub meters: Vec<Meter>,
}

/// Build the circuit on `worker`.
pub(crate) fn build<R: Row>(
    worker: &mut Worker,
    tables: Rc<Tables>,
    stages: usize,
    buckets: u32,
    gather: bool,
    changes: Arc<std::sync::atomic::AtomicU64>,
    mirror: SharedPart,
) -> Handles<R> {
    worker.dataflow::<u32, _, _>(|scope| {
        let (facts_in, base) = scope.new_collection::<R, Mult>();
        let (rules_in, rules) = scope.new_collection::<(u32, u32), Mult>();
        let (tables_in, entries) = scope.new_input::<Vec<TableEntry>>();
        let shared = tables.shared.clone();
        let output = Rc::new(RefCell::new(Vec::new()));
        let rounds = Rc::new(RefCell::new(Vec::new()));
        let rounds2 = rounds.clone();
        let mut arrangements: Vec<Rc<[usize]>> = Vec::new();
        let mut meters: Vec<Meter> = Vec::new();

        let result = scope.iterative::<u32, _, _>(|inner| {
            // Base facts and heads go to their fact's worker (`fact_route`), where the
            // `distinct` keeps them.
            let base = VecCollection::new(
                base.inner
                    .exchange(move |u: &(R, u32, Mult)| fact_route(&u.0, buckets)),
            )
            .enter(inner);
            // Rules of level k start at round k << LEVEL_SHIFT: every lower level has
            // reached its fixpoint by then (stratified evaluation inside one loop).
            let seeds = rules.enter_at(inner, |&(level, _)| level << LEVEL_SHIFT);
            // The loop's feedback carries the heads of a round to the `distinct` of the
            // next, which makes that round's facts and meets them with the patterns.
            // The heads keep the time they were derived at: the `distinct` reads a
            // head of round `r` as an update at `r + 1`, the feedback advances only
            // the batches' capabilities. (Differential's `Variable` rewrote every
            // record's time in an operator of its own: 4% of a worker's time on
            // transitive closure, where millions of heads go round.)
            let (feedback, heads_before) =
                inner.feedback::<Vec<(R, Inner, Mult)>>(Product::new(0, 1));
            let heads_before = VecCollection::new(heads_before);

            // The patterns in use: those of the live rules, as data; the first atom of a
            // direct rule with the rule's id.
            let t = tables.clone();
            let patterns = seeds
                .clone()
                .flat_map(move |(_, r)| {
                    t.with_rule(r, |rule| {
                        let mut uses: Vec<Use> =
                            rule.patterns.iter().map(|&p| (p, INDEX)).collect();
                        if rule.direct {
                            uses.push((rule.joins[0].key0, r));
                        }
                        uses
                    })
                })
                .distinct_core::<Mult>();

            // The facts, `distinct(base ∪ heads)`, on their workers (placed by
            // `fact_route`), met at once with the patterns in use: index entries,
            // (pattern, bound values) -> free values, and the direct rules'
            // substitutions past their first atom. The facts' changes leave the loop
            // only when read outside it: in a cluster (gathered to worker 0), for a copy
            // the worker's part keeps, or when the commit records them (see
            // `mirror::Mode`). Otherwise the handle reads the tables, and the probe
            // needs only the progress.
            let part = mirror.clone();
            let leaves = move || gather || {
                let part = lock(&part);
                part.applies() || part.mode.record
            };
            let observe = move |t: Inner, n: usize| {
                // Changes of presence, for the limit of changes per commit (see
                // `Limits::max_changes`), and the rounds seen per level.
                changes.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
                let mut rounds = rounds2.borrow_mut();
                let level = (t.inner >> LEVEL_SHIFT) as usize;
                let round = t.inner & ((1 << LEVEL_SHIFT) - 1);
                if rounds.len() <= level {
                    rounds.resize(level + 1, 0);
                }
                rounds[level] = rounds[level].max(round + 1);
            };
            let (entries, direct, leaving, distinct_meters, table) = distinct(
                heads_before,
                base,
                patterns,
                tables.clone(),
                buckets,
                leaves,
                observe,
            );
            meters.extend(distinct_meters);
            // In one process, every change of a fact is made on the worker of its
            // `distinct`, whose table is then the worker's share of the
            // materialization: the handle reads it and keeps no copy. With several,
            // the changes are gathered to worker 0, whose part keeps a copy.
            if !gather {
                lock(&mirror).share(table);
            }
            // Entries of last atoms' patterns go to their own join (module `last_join`).
            let [index, negated_entries, last_entries] =
                split(entries, "SplitEntries", |(k, _): &(R, R)| {
                    let k0 = k.as_ref()[0];
                    if k0 & NEG != 0 {
                        1
                    } else if k0 & LAST_PAT != 0 {
                        2
                    } else {
                        0
                    }
                });
            let index = index.arrange_by_key_named("Index");
            arrangements.push(index.trace.operator().address.clone());
            meters.push(trace_meter("index (pattern entries)", &index.trace));
            // Negated patterns: the set of keys (distinct: a wildcard makes duplicates).
            let negated_entries = negated_entries
                .map(|(k, _)| k)
                .arrange_by_self_named("NegatedEntries");
            arrangements.push(negated_entries.trace.operator().address.clone());
            meters.push(trace_meter("negated entries", &negated_entries.trace));
            let negated = negated_entries
                .reduce_abelian::<_, KeyBuilder<R, Inner, Mult>, KeySpine<R, Inner, Mult>, _, _>(
                    "NegatedKeys",
                    |_k, _s, t| t.push(((), 1)),
                    |vec, key: &R, upds| {
                        vec.clear();
                        vec.extend(upds.drain(..).map(|(v, t, r)| ((*key, v), t, r)));
                    },
                );
            arrangements.push(negated.trace.operator().address.clone());
            meters.push(trace_meter("negated keys", &negated.trace));

            // Seeds: the empty substitution of every live rule that is not direct, run up
            // to its first atom.
            let t = tables.clone();
            let mut subs: VecCollection<'_, Inner, (R, Sub<R>), Mult> =
                seeds.flat_map(move |(_, r)| {
                    t.with_rule(r, |rule| {
                        if rule.direct {
                            Emit::none()
                        } else {
                            emit(rule, r, None, &[], R::default(), buckets)
                        }
                    })
                });
            let mut direct = Some(direct);

            // One join stage per body position; substitutions at their last atom emit
            // head facts directly.
            let mut heads = Vec::new();
            let mut lasts = Vec::new();
            for s in 0..stages {
                // Split by what the substitution waits for: nothing (a head fact), an
                // index entry or a negation, and whether it is the rule's last atom.
                let [to_head, at_index, last_index, at_neg] =
                    split(subs, "SplitStage", |(k, sub): &(R, Sub<R>)| {
                        if sub.0 == HEAD {
                            0
                        } else if k.as_ref()[0] & NEG != 0 {
                            3
                        } else if sub.0 & LAST == 0 {
                            1
                        } else {
                            2
                        }
                    });
                heads.push(to_head.map(|(fact, _)| fact));
                lasts.push(last_index);
                let at_index = at_index.arrange_by_key_named("WaitIndex");
                arrangements.push(at_index.trace.operator().address.clone());
                let stage = s + 1;
                meters.push(trace_meter(
                    format!("substitutions at stage {stage}, next atom"),
                    &at_index.trace,
                ));

                let t = tables.clone();
                let from_index =
                    at_index.join_core(index.clone(), move |_k, sub: &Sub<R>, vals: &R| {
                        t.with_rule(sub.0, |rule| {
                            emit(rule, sub.0, Some(s), vals.as_ref(), sub.1, buckets)
                        })
                    });
                let wait_neg = at_neg.clone().arrange_by_key_named("WaitNeg");
                arrangements.push(wait_neg.trace.operator().address.clone());
                meters.push(trace_meter(
                    format!("substitutions at stage {stage}, negation"),
                    &wait_neg.trace,
                ));
                let blocked =
                    wait_neg.join_core(negated.clone(), |k, sub: &Sub<R>, _| Some((*k, *sub)));
                let t = tables.clone();
                let from_neg = at_neg.concat(blocked.negate()).flat_map(move |(_, sub)| {
                    let id = sub.0 & !LAST;
                    t.with_rule(id, |rule| emit(rule, id, Some(s), &[], sub.1, buckets))
                });
                subs = from_index.concat(from_neg);
                if let Some(direct) = direct.take() {
                    subs = subs.concat(direct);
                }
            }
            if let Some(direct) = direct.take() {
                subs = subs.concat(direct);
            }
            heads.push(subs.filter(|(_, sub)| sub.0 == HEAD).map(|(fact, _)| fact));
            // Substitutions at their rule's last atom, of every stage, meet that atom's
            // entries in one join, which emits the head facts.
            let lasts = differential_dataflow::collection::concatenate(inner, lasts);
            let (from_last, last_meters) = last_join(lasts, last_entries, tables.clone());
            heads.push(from_last);
            meters.extend(last_meters);

            let heads = differential_dataflow::collection::concatenate(inner, heads);
            let heads = VecCollection::new(
                heads
                    .inner
                    .exchange(move |u: &(R, Inner, Mult)| fact_route(&u.0, buckets)),
            );
            // Aggregates: the input rows (see `agg_tag`) keyed by (aggregate, group),
            // folded per group by a `reduce`, which maintains every group's result
            // under insertions and deletions; a row counts while it has derivations.
            let shared = tables.shared.clone();
            let [derived, aggregated] = split_unless(
                heads,
                "SplitAggregates",
                |r: &R| usize::from(r.as_ref()[0] & AGG != 0),
                move || (!shared.feeds_aggregates()).then_some(0),
            );
            let aggregated = aggregated
                .map(|r| {
                    let v = r.as_ref();
                    let (_, _, group, rest, _) = agg_untag(v[0]);
                    let (mut key, mut val) = (R::default(), R::default());
                    key.as_mut()[..=group].copy_from_slice(&v[..=group]);
                    val.as_mut()[..rest].copy_from_slice(&v[1 + group..1 + group + rest]);
                    (key, val)
                })
                .arrange_by_key_named("AggregateInput");
            arrangements.push(aggregated.trace.operator().address.clone());
            meters.push(trace_meter("aggregate input", &aggregated.trace));
            let aggregated = aggregated
                .reduce_abelian::<_, ValBuilder<R, R, Inner, Mult>, ValSpine<R, R, Inner, Mult>, _, _>(
                    "Aggregate",
                    |key: &R, input: &[(&R, Mult)], output: &mut Vec<(R, Mult)>| {
                    let k = key.as_ref();
                    let (func, ty, group, rest, head) = agg_untag(k[0]);
                    let rows = input
                        .iter()
                        .filter(|(_, m)| *m > 0)
                        .map(|(v, _)| &v.as_ref()[..rest]);
                    if let Some(result) = dynalog_analysis::fold_aggregate(func, ty, rows) {
                        let mut fact = R::default();
                        let f = fact.as_mut();
                        f[0] = head;
                        f[1..=group].copy_from_slice(&k[1..=group]);
                        f[1 + group] = result;
                        output.push((fact, 1 as Mult));
                    }
                    },
                    |vec, key: &R, upds| {
                        vec.clear();
                        vec.extend(upds.drain(..).map(|(v, t, r)| ((*key, v), t, r)));
                    },
                );
            arrangements.push(aggregated.trace.operator().address.clone());
            meters.push(trace_meter("aggregate output", &aggregated.trace));
            let aggregated = aggregated.as_collection(|_, fact: &R| *fact);
            let aggregated = VecCollection::new(
                aggregated
                    .inner
                    .exchange(move |u: &(R, Inner, Mult)| fact_route(&u.0, buckets)),
            );
            // The heads, added up by the `distinct` of the next round.
            derived.concat(aggregated).inner.connect_loop(feedback);
            leaving.leave(scope)
        });

        // With several processes, every change is sent to worker 0, whose process
        // alone holds the whole materialization (and writes outputs).
        let result = if gather {
            VecCollection::new(result.inner.exchange(|_| 0))
        } else {
            result
        };
        let out = output.clone();
        meters.push(Meter::new("output to the handle", move || {
            let out = out.borrow();
            Usage {
                records: out.len() as u64,
                bytes: vec_bytes(&*out),
            }
        }));
        let out = output.clone();
        let part = mirror.clone();
        let (probe, _) = result
            .inspect_batch(move |_, data| {
                let mut part = lock(&part);
                if part.applies() {
                    for (d, _, r) in data {
                        part.change(d.as_ref(), *r);
                    }
                }
                if part.mode.record {
                    let mut out = out.borrow_mut();
                    reserve_quarter(&mut out, data.len());
                    out.extend(data.iter().map(|(d, _, r)| (*d, *r)));
                }
            })
            .probe();
        // Each worker adds the entries to its process's tables, then acknowledges to
        // worker 0: when the probe passes an epoch, every worker has them.
        entries
            .broadcast()
            .inspect(move |e: &Vec<TableEntry>| shared.receive(e))
            .exchange(|_| 0)
            .probe_with(&probe);
        Handles {
            facts: facts_in,
            rules: rules_in,
            tables: tables_in,
            probe,
            output,
            mirror,
            rounds,
            arrangements,
            meters,
        }
    })
}
