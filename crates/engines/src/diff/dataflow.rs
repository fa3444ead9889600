//! The circuit: one differential dataflow per worker, built once for a row width and a
//! number of join stages, interpreting whatever rules the `rules` input holds.
//!
//! See the module documentation of [`crate::diff`] for the picture; this file is the
//! code of it.

use super::compile::{
    CompiledRule, HEAD, LAST, LEVEL_SHIFT, NEG, Next, PatternSpec, Shared, TableEntry,
};
use super::consolidate::consolidate_heads;
use super::distinct::distinct;
use super::entries::{INDEX, Use, pattern_entries};
use differential_dataflow::VecCollection;
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::operators::iterate::VecVariable;
use differential_dataflow::trace::implementations::{KeyBuilder, KeySpine};
use std::cell::RefCell;
use std::fmt::Debug;
use std::hash::Hash;
use std::rc::Rc;
use std::sync::Arc;
use timely::dataflow::operators::CapabilitySet;
use timely::dataflow::operators::core::Exchange as _;
use timely::dataflow::operators::core::{Inspect as _, Probe as _};
use timely::dataflow::operators::probe::Handle as ProbeHandle;
use timely::dataflow::operators::vec::{Broadcast as _, Input as _};
use timely::order::Product;
use timely::progress::frontier::Antichain;
use timely::worker::Worker;

/// A flat fixed-width row: a fact `[relation, values.., 0..]`, a join key
/// `[pattern, key values.., 0..]`, an index value (the free values) or a
/// substitution's variable slots.
pub(crate) trait Row:
    differential_dataflow::ExchangeData + Hash + Copy + Default + Debug + AsRef<[u32]> + AsMut<[u32]>
{
}

impl Row for [u32; 3] {}
impl Row for [u32; 4] {}
impl Row for [u32; 8] {}
impl Row for [u32; 16] {}

/// The row widths a dataflow can be built for.
pub(crate) const WIDTHS: [usize; 4] = [3, 4, 8, 16];

/// A substitution: (rule id, with [`LAST`] set at the last atom, or [`HEAD`]; variable
/// slots).
pub(crate) type Sub<R> = (u32, R);

/// The multiplicity of every collection of the circuit: derivation counts stay far
/// below `i32::MAX`, and a 4-byte diff makes every update in the batchers and traces
/// 4 bytes narrower than an `isize` would.
pub(crate) type Mult = i32;

/// The inner timestamp: (commit, level << LEVEL_SHIFT | round).
pub(crate) type Inner = Product<u32, u32>;

/// The worker's cache of the shared rule and pattern tables. Ids are only ever appended,
/// and an id reaches a worker's data only after the handle registered it, so a miss is
/// served by refreshing the cache from the shared table.
pub(crate) struct Tables {
    shared: Arc<Shared>,
    rules: RefCell<Vec<Arc<CompiledRule>>>,
    patterns: RefCell<Vec<Arc<PatternSpec>>>,
}

impl Tables {
    pub(crate) fn new(shared: Arc<Shared>) -> Tables {
        Tables {
            shared,
            rules: RefCell::new(Vec::new()),
            patterns: RefCell::new(Vec::new()),
        }
    }

    #[inline]
    pub(crate) fn with_rule<T>(&self, id: u32, f: impl FnOnce(&CompiledRule) -> T) -> T {
        {
            let rules = self.rules.borrow();
            if let Some(rule) = rules.get(id as usize) {
                return f(rule);
            }
        }
        {
            let shared = self.shared.rules.read().unwrap_or_else(|e| e.into_inner());
            let mut rules = self.rules.borrow_mut();
            let have = rules.len();
            rules.extend(shared[have..].iter().cloned());
        }
        let rules = self.rules.borrow();
        f(&rules[id as usize])
    }

    /// The spec of pattern `id`.
    pub(crate) fn pattern(&self, id: u32) -> Arc<PatternSpec> {
        {
            let patterns = self.patterns.borrow();
            if let Some(p) = patterns.get(id as usize) {
                return p.clone();
            }
        }
        {
            let shared = self
                .shared
                .patterns
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let mut patterns = self.patterns.borrow_mut();
            let have = patterns.len();
            patterns.extend(shared[have..].iter().cloned());
        }
        self.patterns.borrow()[id as usize].clone()
    }
}

/// A deterministic bucket of a row, the same on every worker.
#[inline]
pub(crate) fn bucket(values: &[u32], buckets: u32) -> u32 {
    if buckets <= 1 {
        return 0;
    }
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for &v in values {
        h = (h ^ v as u64).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 29;
    }
    ((h >> 32) % buckets as u64) as u32
}

/// The worker-routing hash of a fact: its bucket. The `distinct` that makes the facts
/// (base and derived) places them by it, so every update of one fact reaches the same
/// worker and the index entries' history of that fact consolidates there.
#[inline]
fn fact_route<R: Row>(f: &R, buckets: u32) -> u64 {
    bucket(&f.as_ref()[1..], buckets) as u64
}

/// The records a join closure emits: none, one, or one per bucket (key\[1\] = bucket).
pub(crate) struct Emit<R> {
    key: R,
    sub: Sub<R>,
    next: u32,
    end: u32,
    /// The key slot of the bucket, if the substitution goes to every bucket.
    bucket: Option<usize>,
}

impl<R: Row> Emit<R> {
    /// No record.
    pub(crate) fn none() -> Emit<R> {
        Emit {
            key: R::default(),
            sub: (HEAD, R::default()),
            next: 0,
            end: 0,
            bucket: None,
        }
    }

    /// The one record `(key, sub)`.
    pub(crate) fn one(key: R, sub: Sub<R>) -> Emit<R> {
        Emit {
            key,
            sub,
            next: 0,
            end: 1,
            bucket: None,
        }
    }
}

impl<R: Row> Iterator for Emit<R> {
    type Item = (R, Sub<R>);
    #[inline]
    fn next(&mut self) -> Option<(R, Sub<R>)> {
        if self.next >= self.end {
            return None;
        }
        let mut key = self.key;
        if let Some(slot) = self.bucket {
            key.as_mut()[slot] = self.next;
        }
        self.next += 1;
        Some((key, self.sub))
    }
}

/// Move a substitution of `rule` past atom `at` (see [`CompiledRule::advance`]).
#[inline]
fn emit<R: Row>(
    rule: &CompiledRule,
    id: u32,
    at: Option<usize>,
    vals: &[u32],
    mut slots: R,
    buckets: u32,
) -> Emit<R> {
    let mut out = R::default();
    match rule.advance(at, vals, slots.as_mut(), out.as_mut()) {
        Next::None => Emit::none(),
        Next::Sub { bucket, last } => Emit {
            key: out,
            sub: (if last { id | LAST } else { id }, slots),
            next: 0,
            end: if bucket.is_some() { buckets } else { 1 },
            bucket,
        },
        Next::Head => Emit::one(out, (HEAD, R::default())),
    }
}

/// The records of a [`CompiledRule::direct`] rule for a fact matching its first atom
/// (`vals`: the free values of its entry): the rule's filters before the first atom
/// (on the empty substitution), then the step past the first atom.
pub(crate) fn first_step<R: Row>(
    rule: &CompiledRule,
    id: u32,
    vals: &[u32],
    buckets: u32,
) -> Emit<R> {
    let mut slots = R::default();
    let mut key = R::default();
    match rule.advance(None, &[], slots.as_mut(), key.as_mut()) {
        Next::Sub { .. } => emit(rule, id, Some(0), vals, slots, buckets),
        _ => Emit::none(),
    }
}

/// Move a substitution past its last atom: the head fact, if any.
#[inline]
fn head<R: Row>(rule: &CompiledRule, at: usize, vals: &[u32], mut slots: R) -> Option<R> {
    let mut out = R::default();
    match rule.advance(Some(at), vals, slots.as_mut(), out.as_mut()) {
        Next::Head => Some(out),
        _ => None,
    }
}

/// The substitutions waiting for `kind` (`NEG` or 0 for an index entry) at their
/// rule's last atom or not.
fn wait<'s, R: Row>(
    c: &VecCollection<'s, Inner, (R, Sub<R>), Mult>,
    kind: u32,
    last: bool,
) -> VecCollection<'s, Inner, (R, Sub<R>), Mult> {
    c.clone()
        .filter(move |(k, sub)| k.as_ref()[0] & NEG == kind && (sub.0 & LAST != 0) == last)
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
    /// Changes of the materialization seen by this worker since the last drain.
    pub output: Rc<RefCell<Vec<(R, Mult)>>>,
    /// Highest round seen per level since the last drain.
    pub rounds: Rc<RefCell<Vec<u32>>>,
    /// The addresses of the operators that hold arrangements, to wake for background
    /// merging after a commit.
    pub arrangements: Vec<Rc<[usize]>>,
}

/// Build the circuit on `worker`.
pub(crate) fn build<R: Row>(
    worker: &mut Worker,
    tables: Rc<Tables>,
    stages: usize,
    buckets: u32,
    gather: bool,
    changes: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
            let (variable, facts) = VecVariable::<Inner, R, Mult>::new(inner, Product::new(0, 1));

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

            // Index entries, (pattern, bound values) -> free values, and the direct
            // rules' substitutions past their first atom.
            let (entries, direct) = pattern_entries(facts, patterns, tables.clone(), buckets);
            let index = entries
                .clone()
                .filter(|(k, _)| k.as_ref()[0] & NEG == 0)
                .arrange_by_key_named("Index");
            arrangements.push(index.trace.operator().address.clone());
            // Negated patterns: the set of keys (distinct: a wildcard makes duplicates).
            let negated_entries = entries
                .filter(|(k, _)| k.as_ref()[0] & NEG != 0)
                .map(|(k, _)| k)
                .arrange_by_self_named("NegatedEntries");
            arrangements.push(negated_entries.trace.operator().address.clone());
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
            for s in 0..stages {
                heads.push(
                    subs.clone()
                        .filter(|(_, sub)| sub.0 == HEAD)
                        .map(|(fact, _)| fact),
                );
                let waiting = subs.filter(|(_, sub)| sub.0 != HEAD);
                // Split by what the substitution waits for: an index entry or a
                // negation, and whether it is the rule's last atom.
                let at_index = wait(&waiting, 0, false).arrange_by_key_named("WaitIndex");
                let last_index = wait(&waiting, 0, true).arrange_by_key_named("LastIndex");
                arrangements.push(at_index.trace.operator().address.clone());
                arrangements.push(last_index.trace.operator().address.clone());
                let at_neg = waiting.filter(|(k, _)| k.as_ref()[0] & NEG != 0);

                let t = tables.clone();
                let from_index =
                    at_index.join_core(index.clone(), move |_k, sub: &Sub<R>, vals: &R| {
                        t.with_rule(sub.0, |rule| {
                            emit(rule, sub.0, Some(s), vals.as_ref(), sub.1, buckets)
                        })
                    });
                let t = tables.clone();
                heads.push(last_index.join_core(
                    index.clone(),
                    move |_k, sub: &Sub<R>, vals: &R| {
                        t.with_rule(sub.0 & !LAST, |rule| head(rule, s, vals.as_ref(), sub.1))
                    },
                ));
                let wait_neg = at_neg.clone().arrange_by_key_named("WaitNeg");
                arrangements.push(wait_neg.trace.operator().address.clone());
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

            let heads = differential_dataflow::collection::concatenate(inner, heads);
            let heads = VecCollection::new(
                heads
                    .inner
                    .exchange(move |u: &(R, Inner, Mult)| fact_route(&u.0, buckets)),
            );
            let derived = consolidate_heads(heads);
            // distinct, on the facts' workers (placed by `fact_route` above).
            let result = distinct(base.concat(derived));
            variable.set(result.clone());
            result
                .inspect_batch(move |_, data| {
                    // Changes of presence leaving the loop, for the limit of changes
                    // per commit (see `Limits::max_changes`).
                    changes.fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                    let mut rounds = rounds2.borrow_mut();
                    for (_, t, _) in data {
                        let level = (t.inner >> LEVEL_SHIFT) as usize;
                        let round = t.inner & ((1 << LEVEL_SHIFT) - 1);
                        if rounds.len() <= level {
                            rounds.resize(level + 1, 0);
                        }
                        rounds[level] = rounds[level].max(round + 1);
                    }
                })
                .leave(scope)
        });

        // With several processes, every change is sent to worker 0, whose process
        // alone holds the whole materialization (and writes outputs).
        let result = if gather {
            VecCollection::new(result.inner.exchange(|_| 0))
        } else {
            result
        };
        let out = output.clone();
        let (probe, _) = result
            .inspect_batch(move |_, data| {
                out.borrow_mut()
                    .extend(data.iter().map(|(d, _, r)| (*d, *r)));
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
            rounds,
            arrangements,
        }
    })
}

/// Keep, of the capabilities `held`, only what the `pending` times need: one capability
/// per least time. A message's capability can be earlier than its records' times, and
/// holding it would keep the loop from ever reaching them.
pub(crate) fn hold_only(held: &mut CapabilitySet<Inner>, pending: impl Iterator<Item = Inner>) {
    let mut lower = Antichain::new();
    for t in pending {
        lower.insert(t);
    }
    let mut kept = CapabilitySet::new();
    for t in lower.elements() {
        kept.insert(held.delayed(t));
    }
    *held = kept;
}
