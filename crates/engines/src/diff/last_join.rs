//! The join at the rules' last atoms: every substitution waiting at its rule's last
//! atom meets the index entries of that atom, and each pair is a head fact.
//!
//! Differential's `join_core` on two arrangements serves any lattice of times: it
//! sorts every batch of substitutions into an arrangement, merges the arrangement's
//! batches as they pile up (a merge holds its inputs and its output at once), and
//! walks both traces with cursors. In the loop the times have a shape it cannot use
//! (as in module `distinct`): `(epoch, round)`, where an epoch is complete before the
//! next one's first update enters the loop. So this operator keeps, per key, the
//! records of each side as they came, in a hash table, with their round only:
//!
//! * a record arriving at `(e, r)` is paired with every record of the other side
//!   stored under its key, whose epoch is at most `e`; the pair's time is the least
//!   upper bound of the two times, `(e, max(r, r'))`, its multiplicity the product.
//!   Then the record is stored. Each pair is made exactly once, by whichever of its
//!   records came second, in whatever order the workers' messages arrive;
//! * no frontier is waited for: a pair's time is never earlier than its later
//!   record's, so the message that brings it holds a capability for it;
//! * a key's records are summed per (record, round), and those that cancel dropped,
//!   once a quarter of them are retractions: a retraction's cost does not grow with
//!   its key's records (summing a key of thousands at every retraction made a 1%
//!   update of RhoDF over LUBM1 four times slower), and records that cancel, paired
//!   again, only make pairs that cancel too. A key keeps at most twice the records it
//!   needs, and one with none left is forgotten, so memory returns after inserting
//!   and deleting the same facts.
//!
//! On transitive closure the substitutions at the last atom are one per derived fact,
//! and the join makes every derivation: no sort, no merge and no trace cursor per
//! derivation, one hash lookup per substitution instead. Where nothing follows the last
//! atom and the head's arguments are variables and constants (transitive closure, most
//! rules), a pair's head is written straight from the substitution's slots and the
//! entry's stored words ([`super::compile::CompiledRule::head_from`]): 10% of
//! tc-rmat1k's load and 5% of tc-gnp5000's went to copying each entry into a row and
//! running the general step past the atom.
//!
//! The entries come from the patterns of last atoms only (a pattern used at a last
//! atom has an id of its own, with [`super::compile::LAST_PAT`] in its key, so its
//! entries come here and not to the shared index).

use super::compile::{LAST, RULE_LIMIT, Tables};
use super::memory::{Meter, Usage, vec_bytes};
use super::step::head;
use super::types::{Inner, Mult, Row, Sub, used_words};
use differential_dataflow::VecCollection;
use differential_dataflow::hashable::Hashable;
use hashbrown::HashTable;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::OutputBuilder;
use timely::dataflow::operators::generic::builder_rc::OperatorBuilder;
use timely::dataflow::operators::{Capability, CapabilitySet};
use timely::order::Product;
use timely::progress::operate::FrontierInterest;
use timely::progress::stamp::Stamp;

/// `heads` of the pairs of `subs` (substitutions at their rule's last atom, by key)
/// and `entries` (index entries of last atoms' patterns, by key). Also returns the
/// meters of the two sides' records.
pub(crate) fn last_join<'s, R: Row>(
    subs: VecCollection<'s, Inner, (R, Sub<R>), Mult>,
    entries: VecCollection<'s, Inner, (R, R), Mult>,
    tables: Rc<Tables>,
) -> (VecCollection<'s, Inner, R, Mult>, [Meter; 3]) {
    let state = Rc::new(RefCell::new(State {
        subs: Lists::new(),
        entries: Lists::new(),
        queue: Queue::default(),
    }));
    let (s1, s2, s3) = (state.clone(), state.clone(), state.clone());
    let meters = [
        Meter::new("substitutions at the last atom", move || {
            s1.borrow().subs.usage()
        }),
        Meter::new("index entries of last atoms", move || {
            s2.borrow().entries.usage()
        }),
        Meter::new("input of the last atoms' join, waiting", move || {
            s3.borrow().queued()
        }),
    ];
    let mut builder = OperatorBuilder::new("LastJoin".to_owned(), subs.inner.scope());
    let activator = subs
        .inner
        .scope()
        .activator_for(builder.operator_info().address);
    // Both sides by the key, placed as differential's arrangements place keys.
    let route_sub = Exchange::new(|u: &((R, Sub<R>), Inner, Mult)| u.0.0.hashed());
    let route_entry = Exchange::new(|u: &((R, R), Inner, Mult)| u.0.0.hashed());
    let mut subs_in = builder.new_input(subs.inner, route_sub);
    let mut entries_in = builder.new_input(entries.inner, route_entry);
    // No frontier is waited for: an input's progress alone is no reason to run.
    builder.set_notify_for(0, FrontierInterest::Never);
    builder.set_notify_for(1, FrontierInterest::Never);
    let (output, stream) = builder.new_output::<Vec<(R, Inner, Mult)>>();
    let mut output: OutputBuilder<_, CapacityContainerBuilder<_>> = OutputBuilder::from(output);
    builder.build(move |_capabilities| {
        let mut out: Vec<(R, Inner, Mult)> = Vec::new();
        move |_frontiers| {
            let mut output = output.activate();
            let mut state = state.borrow_mut();
            let mut queue = std::mem::take(&mut state.queue);
            // The records are packed as they come (the message's vector goes back at
            // once): a round's substitutions wait here, most of the peak's heap.
            subs_in.for_each(|cap, data| {
                let run = queue.run(true, cap.stamp(), || cap.retain_stamp(0));
                for &((key, (tag, slots)), t, d) in data.iter() {
                    queue.push(run, &key, Some(tag), &slots, t, d);
                }
            });
            entries_in.for_each(|cap, data| {
                let run = queue.run(false, cap.stamp(), || cap.retain_stamp(0));
                for &((key, vals), t, d) in data.iter() {
                    queue.push(run, &key, None, &vals, t, d);
                }
            });
            // Work through the records, each paired and then stored, until about
            // `FUEL` pairs are made: the pairs wait in the channels until the
            // `distinct` adds them up, and a round's derivations all at once would
            // be most of the peak. The pairs leave under a capability for the time of
            // the record that made them.
            let mut fuel = FUEL;
            while fuel > 0
                && let Some(run) = queue.runs.pop_front()
            {
                let mut held: Option<Capability<Inner>> = None;
                while fuel > 0
                    && let Some((key, tag, b, t, d)) = queue.next(&run)
                {
                    if held.as_ref().is_none_or(|c| *c.time() != t) {
                        if let Some(c) = held.take() {
                            output.session(&c).give_iterator(out.drain(..));
                        }
                        held = Some(run.caps.delayed(&t));
                    }
                    let before = out.len();
                    match tag {
                        Some(tag) => state.sub(&tables, key, tag & !LAST, b, t, d, &mut out),
                        None => state.entry(&tables, key, b, t, d, &mut out),
                    }
                    fuel -= (out.len() - before) as isize;
                    if out.len() >= FLUSH
                        && let Some(c) = held.as_ref()
                    {
                        output.session(c).give_iterator(out.drain(..));
                    }
                }
                if let Some(c) = held {
                    output.session(&c).give_iterator(out.drain(..));
                }
                queue.put_back(run);
            }
            if !queue.runs.is_empty() {
                activator.activate();
            }
            state.queue = queue;
        }
    });
    (VecCollection::new(stream), meters)
}

/// Pairs made per activation, at most (and the pairs of one more record).
const FUEL: isize = 1 << 20;
/// Pairs buffered before they are sent on.
const FLUSH: usize = 1 << 13;

/// The records of both inputs not yet worked through, in arrival order, packed: per
/// record a header word (the used words of the key and of the substitution's slots or
/// the entry's values, and whether a time and multiplicity follow), the key's words,
/// the rule id of a substitution, the slots' or values' words, and the time and
/// multiplicity only where they differ from the previous record's in the run. A
/// substitution of transitive closure takes 24 bytes, where the message's record
/// took 40.
#[derive(Default)]
struct Queue<R> {
    /// Runs of records of one input and one capability, by the end of their words.
    runs: VecDeque<Run>,
    /// The words, in chunks that no record straddles: a chunk read is freed at once,
    /// so the queue shrinks as it is worked through (a chunk of `MAX_CHUNK` words is
    /// mapped memory, given back when freed). Positions count every word pushed.
    chunks: VecDeque<Vec<u32>>,
    /// The position of the first chunk's first word, of the next record to read, and
    /// of the end.
    base: usize,
    start: usize,
    end: usize,
    /// The time and multiplicity of the last record read.
    current: (Inner, Mult),
    /// Records not yet read.
    records: usize,
    row: std::marker::PhantomData<R>,
}

/// The words of a chunk, at most (a small queue's chunks start smaller and double).
const MAX_CHUNK: usize = 1 << 17;

/// Records of one input (`subs`: substitutions, else entries) under one capability.
struct Run {
    subs: bool,
    caps: CapabilitySet<Inner>,
    /// The times of the messages' capabilities.
    stamp: Stamp<Inner>,
    /// The end of the run's words.
    end: usize,
    /// The time and multiplicity of the run's last record pushed.
    last: Option<(Inner, Mult)>,
}

/// In a record's header: the used words of the key, of the other row, and the flag
/// of an explicit time and multiplicity.
const B_SHIFT: u32 = 8;
const EXPLICIT: u32 = 1 << 16;

impl<R: Row> Queue<R> {
    /// The run that a message of input `subs` with capabilities for `stamp` goes to:
    /// the last one if it is of the same input and stamp, else a new one under the
    /// capabilities `caps`.
    fn run(
        &mut self,
        subs: bool,
        stamp: &Stamp<Inner>,
        caps: impl FnOnce() -> CapabilitySet<Inner>,
    ) -> usize {
        if let Some(last) = self.runs.back()
            && last.subs == subs
            && last.stamp == *stamp
        {
            return self.runs.len() - 1;
        }
        self.runs.push_back(Run {
            subs,
            caps: caps(),
            stamp: stamp.clone(),
            end: self.end,
            last: None,
        });
        self.runs.len() - 1
    }

    /// Append a record to run `run` (the last one).
    fn push(&mut self, run: usize, key: &R, tag: Option<u32>, b: &R, t: Inner, d: Mult) {
        let (key, b) = (key.as_ref(), b.as_ref());
        let (uk, ub) = (used_words(key), used_words(b));
        let run = &mut self.runs[run];
        let explicit = run.last != Some((t, d));
        let len = 1 + uk + usize::from(tag.is_some()) + ub + if explicit { 3 } else { 0 };
        if self
            .chunks
            .back()
            .is_none_or(|c| c.len() + len > c.capacity())
        {
            let cap = self.chunks.back().map_or(1024, |c| 2 * c.capacity());
            self.chunks
                .push_back(Vec::with_capacity(cap.min(MAX_CHUNK).max(len)));
        }
        let Some(words) = self.chunks.back_mut() else {
            return;
        };
        let header = uk as u32 | (ub as u32) << B_SHIFT | if explicit { EXPLICIT } else { 0 };
        words.push(header);
        words.extend_from_slice(&key[..uk]);
        if let Some(tag) = tag {
            words.push(tag);
        }
        words.extend_from_slice(&b[..ub]);
        if explicit {
            words.extend_from_slice(&[t.outer, t.inner, d as u32]);
            run.last = Some((t, d));
        }
        self.end += len;
        run.end = self.end;
        self.records += 1;
    }

    /// Read the next record of `run` (the first one, taken out of `runs`): key, rule id
    /// of a substitution, slots or values, time and multiplicity.
    fn next(&mut self, run: &Run) -> Option<(R, Option<u32>, R, Inner, Mult)> {
        if self.start >= run.end {
            return None;
        }
        // The first chunk's records are all read: it goes.
        while self
            .chunks
            .front()
            .is_some_and(|c| self.start >= self.base + c.len())
        {
            self.base += self.chunks.pop_front().map_or(0, |c| c.len());
        }
        let w = self.chunks.front()?;
        let mut at = self.start - self.base;
        let header = w[at];
        let (uk, ub) = (
            (header & 0xFF) as usize,
            ((header >> B_SHIFT) & 0xFF) as usize,
        );
        at += 1;
        let (mut key, mut b) = (R::default(), R::default());
        key.as_mut()[..uk].copy_from_slice(&w[at..at + uk]);
        at += uk;
        let tag = run.subs.then(|| {
            at += 1;
            w[at - 1]
        });
        b.as_mut()[..ub].copy_from_slice(&w[at..at + ub]);
        at += ub;
        if header & EXPLICIT != 0 {
            self.current = (Product::new(w[at], w[at + 1]), w[at + 2] as Mult);
            at += 3;
        }
        self.start = self.base + at;
        self.records -= 1;
        Some((key, tag, b, self.current.0, self.current.1))
    }

    /// Put `run`, taken from the front to be read, back unless it is read; free the
    /// words once every run is.
    fn put_back(&mut self, run: Run) {
        if self.start < run.end {
            self.runs.push_front(run);
        }
        if self.runs.is_empty() {
            self.chunks.clear();
            self.base = self.end;
            self.start = self.end;
        }
    }

    /// The records not yet read, and the bytes of their words.
    fn usage(&self) -> Usage {
        Usage {
            records: self.records as u64,
            bytes: self.chunks.iter().map(vec_bytes).sum::<u64>()
                + (self.runs.capacity() * std::mem::size_of::<Run>()) as u64,
        }
    }
}

/// The two sides' records.
struct State<R> {
    /// Per key: the substitutions, tagged with their rule id, with the slots of the
    /// key's values zeroed (they are the key's).
    subs: Lists<R>,
    /// Per key: the entries' free values.
    entries: Lists<R>,
    /// Records not yet worked through.
    queue: Queue<R>,
}

impl<R: Row> State<R> {
    /// The records waiting.
    fn queued(&self) -> Usage {
        self.queue.usage()
    }

    /// Pair substitution `(id, slots)` of `key` with the entries of `key` into `out`,
    /// then store it.
    #[allow(clippy::too_many_arguments)]
    fn sub(
        &mut self,
        tables: &Tables,
        key: R,
        id: u32,
        slots: R,
        t: Inner,
        d: Mult,
        out: &mut Vec<(R, Inner, Mult)>,
    ) {
        let (entries, subs) = (&self.entries, &mut self.subs);
        tables.with_rule(id, |rule| {
            let at = rule.joins.len() - 1;
            if let Some(list) = entries.get(&key) {
                match rule.head_from.as_deref() {
                    // Each head written from the substitution and the entry's words,
                    // without copying them into a row or going through `advance`.
                    Some(from) => {
                        for (_, stored, round, m) in records(list) {
                            let h = rule.last_head(from, slots.as_ref(), stored);
                            out.push((h, Product::new(t.outer, t.inner.max(round)), d * m));
                        }
                    }
                    None => {
                        for (_, stored, round, m) in records(list) {
                            let mut vals = R::default();
                            vals.as_mut()[..stored.len()].copy_from_slice(stored);
                            if let Some(h) = head(rule, at, vals.as_ref(), slots) {
                                out.push((h, Product::new(t.outer, t.inner.max(round)), d * m));
                            }
                        }
                    }
                }
            }
            // The key's values are the key's: not stored twice.
            let mut stored = slots;
            for &s in &rule.joins[at].key_slots {
                if let Some(w) = stored.as_mut().get_mut(s as usize) {
                    *w = 0;
                }
            }
            subs.push(&key, id, stored.as_ref(), t, d);
        });
    }

    /// Pair index entry `vals` of `key` with the substitutions of `key` into `out`,
    /// then store it.
    fn entry(
        &mut self,
        tables: &Tables,
        key: R,
        vals: R,
        t: Inner,
        d: Mult,
        out: &mut Vec<(R, Inner, Mult)>,
    ) {
        if let Some(list) = self.subs.get(&key) {
            for (id, stored, round, m) in records(list) {
                let h = tables.with_rule(id, |rule| {
                    let at = rule.joins.len() - 1;
                    let mut slots = R::default();
                    let words = slots.as_mut();
                    words[..stored.len()].copy_from_slice(stored);
                    for (k, &s) in rule.joins[at].key_slots.iter().enumerate() {
                        if let Some(w) = words.get_mut(s as usize) {
                            *w = key.as_ref()[k + 1];
                        }
                    }
                    match rule.head_from.as_deref() {
                        Some(from) => Some(rule.last_head(from, slots.as_ref(), vals.as_ref())),
                        None => head(rule, at, vals.as_ref(), slots),
                    }
                });
                if let Some(h) = h {
                    out.push((h, Product::new(t.outer, t.inner.max(round)), d * m));
                }
            }
        }
        self.entries.push(&key, 0, vals.as_ref(), t, d);
    }
}

/// A record's length is kept in the bits of its first word above its tag (a rule id,
/// or 0 for an entry).
const LEN_SHIFT: u32 = 26;
const TAG_MASK: u32 = (1 << LEN_SHIFT) - 1;
const _: () = assert!(RULE_LIMIT <= 1 << LEN_SHIFT);

/// The records of a list: `(tag, payload, round, multiplicity)`.
fn records(words: &[u32]) -> impl Iterator<Item = (u32, &[u32], u32, Mult)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let first = *words.get(at)?;
        let n = (first >> LEN_SHIFT) as usize;
        let rec = &words[at..at + n + 3];
        at += n + 3;
        Some((
            first & TAG_MASK,
            &rec[1..=n],
            rec[n + 1],
            rec[n + 2] as Mult,
        ))
    })
}

/// Records by key: per key a flat vector of records `[tag | length << LEN_SHIFT,
/// payload.., round, multiplicity]`, the payload cut after its last non-zero word (a
/// row's trailing words are zero padding, and a substitution's dead slots are zero):
/// transitive closure's substitutions at the last atom take 4 words (rule id,
/// source, round, multiplicity) where the circuit's width made them 6; in a circuit 8
/// words wide, a rule with two live slots takes 5 where it took 11.
struct Lists<R> {
    /// Positions in `keys` and `lists`, hashed by the key.
    table: HashTable<u32>,
    keys: Vec<R>,
    lists: Vec<List>,
}

#[derive(Default)]
struct List {
    words: Vec<u32>,
    /// Records in `words`.
    records: u32,
    /// Retractions pushed since the records were last summed.
    retractions: u32,
}

fn key_hash<R: Row>(key: &R) -> u64 {
    super::steps::hash_words(key.as_ref())
}

impl<R: Row> Lists<R> {
    fn new() -> Lists<R> {
        Lists {
            table: HashTable::new(),
            keys: Vec::new(),
            lists: Vec::new(),
        }
    }

    /// The records of `key`.
    fn get(&self, key: &R) -> Option<&[u32]> {
        let keys = &self.keys;
        self.table
            .find(key_hash(key), |&i| keys[i as usize] == *key)
            .map(|&i| &self.lists[i as usize].words[..])
    }

    /// Store a record of `key` at time `t`: `tag` (below [`RULE_LIMIT`]) and `payload`.
    fn push(&mut self, key: &R, tag: u32, payload: &[u32], t: Inner, diff: Mult) {
        let hash = key_hash(key);
        let keys = &self.keys;
        let i = match self.table.find(hash, |&i| keys[i as usize] == *key) {
            Some(&i) => i as usize,
            None => {
                let i = self.keys.len();
                self.keys.push(*key);
                self.lists.push(List::default());
                let keys = &self.keys;
                self.table
                    .insert_unique(hash, i as u32, |&j| key_hash(&keys[j as usize]));
                i
            }
        };
        let payload = &payload[..used_words(payload)];
        let len = payload.len() + 3;
        let list = &mut self.lists[i];
        let words = &mut list.words;
        if words.capacity() - words.len() < len {
            // Double while small, then grow by a quarter: a key of transitive closure
            // holds thousands of records; most keys of RDF data one or two.
            let cap = words.capacity();
            let more = if cap < (1 << 14) { cap } else { cap / 4 };
            words.reserve_exact(more.max(len));
        }
        words.push(tag | (payload.len() as u32) << LEN_SHIFT);
        words.extend_from_slice(payload);
        words.push(t.inner);
        words.push(diff as u32);
        list.records += 1;
        if diff < 0 {
            list.retractions += 1;
            if 4 * list.retractions >= list.records {
                list.records = sum(words);
                list.retractions = 0;
                if words.is_empty() {
                    self.remove(i);
                }
            }
        }
    }

    /// Forget key `i`; the last key takes its place.
    fn remove(&mut self, i: usize) {
        let last = self.keys.len() - 1;
        if let Ok(entry) = self
            .table
            .find_entry(key_hash(&self.keys[i]), |&j| j as usize == i)
        {
            entry.remove();
        }
        if i != last
            && let Some(slot) = self
                .table
                .find_mut(key_hash(&self.keys[last]), |&j| j as usize == last)
        {
            *slot = i as u32;
        }
        self.keys.swap_remove(i);
        self.lists.swap_remove(i);
        if self.table.capacity() > 4 * self.table.len() + 64 {
            let keys = &self.keys;
            self.table
                .shrink_to(self.table.len(), |&j| key_hash(&keys[j as usize]));
            self.keys.shrink_to(2 * self.keys.len());
            self.lists.shrink_to(2 * self.lists.len());
        }
    }

    fn usage(&self) -> Usage {
        let records: u64 = self.lists.iter().map(|l| u64::from(l.records)).sum();
        let words: u64 = self.lists.iter().map(|l| vec_bytes(&l.words)).sum();
        Usage {
            records,
            bytes: words
                + vec_bytes(&self.keys)
                + vec_bytes(&self.lists)
                + crate::store::hash_table_bytes(self.table.capacity(), 4),
        }
    }
}

/// Sum the multiplicities of equal records (tag, payload and round) of a flat list;
/// drop those that cancel. Returns the number of records left.
///
/// Records of up to 8 words besides their multiplicity (every record of the
/// benchmarks' programs) are sorted as arrays ([`sum_fixed`]), the others as slices
/// of the list ([`sum_slices`]); both leave the same words. A key of RDF data holds
/// tens of thousands of records (every `rdf:type` triple under a pattern keyed by
/// the property): when a rule that made 17,270 of them went, the sort of slices,
/// a call to compare per pair, took most of the time of the records' pushes (`perf`).
fn sum(words: &mut Vec<u32>) -> u32 {
    let (mut widest, mut at) = (0, 0);
    while at < words.len() {
        let len = (words[at] >> LEN_SHIFT) as usize + 3;
        widest = widest.max(len - 1);
        at += len;
    }
    match widest {
        0..=4 => sum_fixed::<4>(words),
        5..=8 => sum_fixed::<8>(words),
        _ => sum_slices(words),
    }
}

/// [`sum`] for records of at most `N` words besides their multiplicity: each copied
/// into an array, padded with zeros (a record's first word holds its length, so
/// records of different lengths never compare equal, and order as their slices do).
fn sum_fixed<const N: usize>(words: &mut Vec<u32>) -> u32 {
    let mut recs: Vec<([u32; N], Mult)> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let len = (words[at] >> LEN_SHIFT) as usize + 3;
        let mut rec = [0u32; N];
        rec[..len - 1].copy_from_slice(&words[at..at + len - 1]);
        recs.push((rec, words[at + len - 1] as Mult));
        at += len;
    }
    recs.sort_unstable_by_key(|a| a.0);
    let mut out: Vec<u32> = Vec::with_capacity(words.len());
    let mut left = 0;
    for group in recs.chunk_by(|a, b| a.0 == b.0) {
        let total: Mult = group.iter().map(|r| r.1).sum();
        if total != 0 {
            let rec = &group[0].0;
            out.extend_from_slice(&rec[..(rec[0] >> LEN_SHIFT) as usize + 2]);
            out.push(total as u32);
            left += 1;
        }
    }
    out.shrink_to_fit();
    *words = out;
    left
}

/// [`sum`] for records of any length.
fn sum_slices(words: &mut Vec<u32>) -> u32 {
    // Each record's words but its multiplicity.
    let mut order: Vec<(u32, u32)> = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let len = (words[at] >> LEN_SHIFT) as usize + 3;
        order.push((at as u32, (len - 1) as u32));
        at += len;
    }
    let rec = |&(at, len): &(u32, u32)| at as usize..(at + len) as usize;
    order.sort_unstable_by(|a, b| words[rec(a)].cmp(&words[rec(b)]));
    let mut out: Vec<u32> = Vec::with_capacity(words.len());
    let mut left = 0;
    let mut i = 0;
    while i < order.len() {
        let first = rec(&order[i]);
        let mut total: Mult = 0;
        let mut j = i;
        while j < order.len() && words[rec(&order[j])] == words[first.clone()] {
            total += words[rec(&order[j]).end] as Mult;
            j += 1;
        }
        if total != 0 {
            out.extend_from_slice(&words[first]);
            out.push(total as u32);
            left += 1;
        }
        i = j;
    }
    out.shrink_to_fit();
    *words = out;
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of a list as `[tag, payload.., round, multiplicity]`, sorted.
    fn all(words: &[u32]) -> Vec<Vec<u32>> {
        let mut r: Vec<Vec<u32>> = records(words)
            .map(|(tag, payload, round, m)| {
                let mut rec = vec![tag];
                rec.extend_from_slice(payload);
                rec.extend([round, m as u32]);
                rec
            })
            .collect();
        r.sort();
        r
    }

    #[test]
    fn the_queue_gives_back_what_it_was_given_and_frees_what_is_read() {
        // Records of both inputs over several stamps, times and multiplicities, and
        // many more words than a chunk holds.
        let mut queue = Queue::<[u32; 4]>::default();
        let mut given = Vec::new();
        for i in 0..200_000u32 {
            let (subs, r) = (i / 50_000 % 2 == 0, i / 30_000);
            let stamp = Stamp::from_elem(Product::new(1, r));
            let run = queue.run(subs, &stamp, CapabilitySet::new);
            let key = [i % 7, i, 0, i % 3];
            let b = [i % 5, 0, 0, 0];
            let tag = subs.then_some(i % 11);
            let t = Product::new(1, r + i % 2);
            let d = if i % 13 == 0 { -1 } else { 1 };
            queue.push(run, &key, tag, &b, t, d);
            given.push((key, tag, b, t, d));
        }
        // A new run where the input or the stamp changes: at 30, 50, 60, 90, 100, 120,
        // 150 and 180 thousand.
        assert_eq!(queue.runs.len(), 9, "one run per input and stamp");
        assert!(
            queue.usage().bytes < 200_000 * 40,
            "{}",
            queue.usage().bytes
        );
        assert_eq!(queue.usage().records, 200_000);
        let mut read = Vec::new();
        let mut most_chunks = 0;
        while let Some(run) = queue.runs.pop_front() {
            // A few records at a time, as the fuel allows.
            for _ in 0..1000 {
                let Some(record) = queue.next(&run) else {
                    break;
                };
                read.push(record);
            }
            most_chunks = most_chunks.max(queue.chunks.len());
            queue.put_back(run);
        }
        assert_eq!(read, given);
        assert!(queue.chunks.is_empty() && queue.usage().records == 0);
        assert!(most_chunks > 1);
    }

    #[test]
    fn equal_records_add_up_and_cancelled_ones_go() {
        // [tag | length, payload, round, multiplicity]
        let m = |d: i32| d as u32;
        let one = 1 << LEN_SHIFT;
        let mut words = vec![
            one | 2,
            7,
            3,
            m(1), //
            one | 2,
            5,
            3,
            m(1), //
            one | 2,
            7,
            3,
            m(1), //
            one | 2,
            5,
            3,
            m(-1), //
            one | 2,
            7,
            4,
            m(-1), //
            2,
            3,
            m(1), // no payload
            one | 3,
            7,
            3,
            m(1), // another tag
        ];
        assert_eq!(sum(&mut words), 4);
        assert_eq!(
            all(&words),
            vec![
                vec![2, 3, 1],
                vec![2, 7, 3, 2],
                vec![2, 7, 4, m(-1)],
                vec![3, 7, 3, 1]
            ]
        );
        let mut gone = vec![one, 1, 1, m(1), one, 1, 1, m(-1)];
        assert_eq!(sum(&mut gone), 0);
        assert!(gone.is_empty());
    }

    #[test]
    fn arrays_and_slices_sum_a_list_to_the_same_words() {
        // Lists of records of 2 to 8 words besides the multiplicity, some equal, some
        // cancelling, from a fixed pseudo-random sequence.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as u32
        };
        for case in 0..200 {
            let widest = [2, 4, 6, 8][case % 4];
            let mut words = Vec::new();
            for _ in 0..next(60) {
                let n = next(widest - 1) as usize;
                words.push(next(3) | (n as u32) << LEN_SHIFT);
                words.extend((0..n).map(|_| next(3)));
                words.push(next(2));
                words.push(if next(2) == 0 { 1 } else { u32::MAX });
            }
            let mut slices = words.clone();
            let left = sum_slices(&mut slices);
            let mut fixed = words.clone();
            let fixed_left = match widest {
                2 | 4 => sum_fixed::<4>(&mut fixed),
                _ => sum_fixed::<8>(&mut fixed),
            };
            assert_eq!((fixed_left, &fixed), (left, &slices), "case {case}");
            let mut any = words;
            assert_eq!(sum(&mut any), left);
            assert_eq!(any, slices);
        }
    }

    #[test]
    fn payloads_are_cut_after_their_last_non_zero_word() {
        let t = Product::new(0, 1);
        let mut lists: Lists<[u32; 8]> = Lists::new();
        let key = [1, 2, 0, 0, 0, 0, 0, 0];
        lists.push(&key, 5, &[9, 0, 4, 0, 0, 0, 0, 0], t, 1);
        lists.push(&key, 6, &[0; 8], t, 2);
        let words = lists.get(&key).unwrap_or_default();
        assert_eq!(words.len(), 6 + 3);
        assert_eq!(all(words), vec![vec![5, 9, 0, 4, 1, 1], vec![6, 1, 2]]);
        assert_eq!(lists.usage().records, 2);
    }

    #[test]
    fn keys_with_nothing_left_are_forgotten() {
        let t = |e, r| Product::new(e, r);
        let mut lists: Lists<[u32; 3]> = Lists::new();
        let (a, b, c) = ([1, 2, 0], [1, 3, 0], [4, 4, 4]);
        lists.push(&a, 0, &[10], t(0, 1), 1);
        lists.push(&b, 0, &[11], t(0, 1), 1);
        lists.push(&c, 0, &[12], t(0, 2), 1);
        // Half of `a`'s records are retractions: summed at once, and `a` forgotten.
        lists.push(&a, 0, &[10], t(1, 1), -1);
        assert_eq!(lists.get(&a), None);
        let one = 1 << LEN_SHIFT;
        assert_eq!(lists.get(&b), Some(&[one, 11, 1, 1][..]));
        assert_eq!(lists.get(&c), Some(&[one, 12, 2, 1][..]));
        assert_eq!(lists.keys.len(), 2);
        lists.push(&b, 0, &[11], t(2, 1), -1);
        lists.push(&c, 0, &[12], t(2, 2), -1);
        assert!(lists.keys.is_empty() && lists.table.is_empty());
        assert_eq!(lists.usage().records, 0);
    }

    #[test]
    fn a_key_is_summed_once_a_quarter_of_its_records_are_retractions() {
        let t = Product::new(0, 1);
        let mut lists: Lists<[u32; 3]> = Lists::new();
        let key = [1, 1, 1];
        let count = |lists: &Lists<[u32; 3]>| lists.get(&key).map(|l| records(l).count());
        for v in 0..12 {
            lists.push(&key, 0, &[v + 1], t, 1);
        }
        // Three retractions among 15 records: not yet summed.
        for v in 0..3 {
            lists.push(&key, 0, &[v + 1], t, -1);
        }
        assert_eq!(count(&lists), Some(15));
        // The fourth, of 16 records, is: eight are left.
        lists.push(&key, 0, &[4], t, -1);
        assert_eq!(count(&lists), Some(8));
        assert_eq!(lists.usage().records, 8);
        // A retraction that stays (the record is gone from round 5 on) is kept.
        lists.push(&key, 0, &[5], Product::new(1, 5), -1);
        lists.push(&key, 0, &[6], t, -1);
        assert_eq!(count(&lists), Some(10));
        lists.push(&key, 0, &[7], t, -1);
        let left = lists.get(&key).map(all).unwrap_or_default();
        assert_eq!(
            left,
            vec![
                vec![0, 5, 1, 1],
                vec![0, 5, 5, u32::MAX],
                vec![0, 8, 1, 1],
                vec![0, 9, 1, 1],
                vec![0, 10, 1, 1],
                vec![0, 11, 1, 1],
                vec![0, 12, 1, 1]
            ]
        );
    }
}
