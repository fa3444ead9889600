//! The table of the `distinct` (module `distinct`): every fact of a worker and its
//! history of steps, stored compactly.
//!
//! The first version kept a hash map from the fact to a small vector of 8-byte steps
//! (48 bytes a slot, in a table of power-of-two size): 110 bytes per fact of transitive
//! closure on a 2,000-node random graph, more than half of the engine's memory. Here:
//!
//! * an index of 4-byte slot numbers (open addressing with linear probing, the hash
//!   recomputed from the row when the index grows), so its power-of-two slack costs 4
//!   bytes a place. Each place keeps the top 4 bits of its fact's hash beside the slot
//!   number (28 bits: at most 2^28 - 1 facts of one relation on one worker), so a
//!   probe reads the row of one slot in sixteen of those it passes. The index was
//!   hashbrown's `HashTable<u32>` until the `distinct` added a round's heads here
//!   (below): ours lets a batch of lookups fetch their places and rows ahead;
//! * the facts in one dense vector of words, slot after slot (a removed slot takes
//!   the last one's place, so the rows stay dense), each row cut to the words any
//!   stored fact uses (its values up to the last non-zero word; the rest of a row of
//!   the circuit's width is zero padding). The table widens its rows when a wider fact
//!   comes (rarely: at most once per word of the circuit's width). A table holds the
//!   facts of one relation (the `distinct` keeps one per relation), so the relation,
//!   a row's first word, is stored once for the table, not per row;
//! * each fact's steps beside it, varint-encoded: per step the round's distance from
//!   the previous step's plus one, then the zigzagged packed change (see [`Step`]),
//!   the zeros after the last step ending the history. A step of a count change
//!   within ±15 at a round less than 127 rounds after the previous one takes 2 bytes.
//!   A table gives every fact the same bytes of steps, as few as its longest inline
//!   history needs: 4 (two such steps), 8, or 12 (six), growing when a longer history
//!   comes (rarely: at most twice per table). A history longer than 12 bytes goes to
//!   a side list of step vectors, and the 12 bytes hold its index. On OWL 2 RL over
//!   LUBM(50), where every history takes 2 or 4 bytes, 12 bytes a fact were 79 MB of
//!   the 263 the `distinct` kept; transitive closure's longer histories keep 12;
//!
//! * while the `distinct` adds up one time's heads here ([`Facts::add_waiting`]), each
//!   fact's change waiting for that time (a byte a fact, freed after each commit; a
//!   change beyond ±127 waits in a side map),
//!   and a bit per fact that has one, so that the time's facts are processed in slot
//!   order. A fact first derived in the time is stored with no steps until then.
//!
//! On the same closure (3.9M facts, 2.6 steps per fact on average, all but 0.05% of
//! the histories inline): 110 → 36 bytes per fact. Rows were at first of the
//! circuit's width: on LUBM with OWL 2 RL, whose widest rule needs 8 words, every fact
//! (at most 3 words: a binary relation) carried 5 words of padding (55 bytes per
//! fact). One table per relation, without the relation word in every row: 36.7 → 32.0
//! bytes per fact on the same closure.

use super::types::{
    AHEAD, Mult, Row, fits, prefetch, reserve_quarter, slots_for, used_words, widen_records,
};
use smallvec::SmallVec;

/// One step of a fact's history: at `round`, its count changes by `input` and its
/// presence by `output`, packed in 8 bytes: `input << 2 | (output + 1)`. A presence
/// change is -1, 0 or 1 (the presence is 0 or 1 before and after every round the
/// `distinct` has evaluated); a count change must stay within ±2^29 derivations of one
/// fact in one round, which is checked (a worker that exceeds it fails, and the commit
/// with it, rather than counting wrong).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub round: u32,
    packed: i32,
}

/// The bound of a step's count change.
pub(crate) const COUNT_LIMIT: i32 = 1 << 29;

impl Step {
    pub(crate) fn new(round: u32, input: i32, output: i32) -> Step {
        let mut step = Step { round, packed: 0 };
        step.set(input, output);
        step
    }

    #[inline]
    pub(crate) fn input(self) -> i32 {
        self.packed >> 2
    }

    #[inline]
    pub(crate) fn output(self) -> i32 {
        (self.packed & 3) - 1
    }

    #[inline]
    fn set(&mut self, input: i32, output: i32) {
        assert!(
            (-COUNT_LIMIT..COUNT_LIMIT).contains(&input),
            "distinct: a fact's derivation count in one round exceeds 2^29"
        );
        assert!(
            (-1..=1).contains(&output),
            "distinct: presence change {output}"
        );
        self.packed = (input << 2) | (output + 1);
    }

    #[inline]
    pub(crate) fn add_input(&mut self, d: i32) {
        let input = self.input().saturating_add(d);
        self.set(input, self.output());
    }

    #[inline]
    pub(crate) fn add_output(&mut self, c: i32) {
        self.set(self.input(), self.output() + c);
    }

    #[inline]
    pub(crate) fn is_empty(self) -> bool {
        self.input() == 0 && self.output() == 0
    }
}

/// A fact's steps while it is worked on (decoded; most histories are short).
pub(crate) type Steps = SmallVec<[Step; 8]>;

/// The presence after the last of `steps`: the sum of their presence changes.
pub(crate) fn presence(steps: &[Step]) -> i32 {
    steps.iter().map(|s| s.output()).sum()
}

/// The most bytes a fact's steps take in a table: the widest of the widths a table's
/// histories grow through (4, 8, then 12 bytes a fact: [`Facts::widen_steps`]).
const STEP_BYTES: usize = 12;

/// The first two bytes of a spilled history (in a table of [`STEP_BYTES`] a fact):
/// `[0x80, 0, 0, 0, index (4 bytes, little-endian), 0, 0, 0, 0]`. No encoding starts
/// so (a varint's continuation byte is never followed by a zero byte).
const SPILL_MARK: [u8; 2] = [0x80, 0];

/// Write `v` as a varint at `*at` of `out`; false if it does not fit.
fn put_varint(out: &mut [u8], at: &mut usize, mut v: u64) -> bool {
    loop {
        let Some(byte) = out.get_mut(*at) else {
            return false;
        };
        *at += 1;
        let low = (v & 0x7F) as u8;
        v >>= 7;
        if v == 0 {
            *byte = low;
            return true;
        }
        *byte = low | 0x80;
    }
}

fn get_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let byte = bytes[*at];
        *at += 1;
        v |= ((byte & 0x7F) as u64) << shift;
        if byte & 0x80 == 0 {
            return v;
        }
        shift += 7;
    }
}

/// Encode `steps` (sorted by round) into `out` (zeroed): per step, its round's
/// distance from the previous step's plus one, then its zigzagged packed change, both
/// varints. The distance plus one is never 0, so the zeros after the last step end
/// the encoding (no length byte), and an encoding that fits in 4 bytes is the same in
/// 8 or 12. False if it does not fit.
fn encode(steps: &[Step], out: &mut [u8]) -> bool {
    let (mut at, mut previous) = (0, 0u32);
    for s in steps {
        let zigzag = ((s.packed << 1) ^ (s.packed >> 31)) as u32;
        if !put_varint(out, &mut at, u64::from(s.round - previous) + 1)
            || !put_varint(out, &mut at, u64::from(zigzag))
        {
            return false;
        }
        previous = s.round;
    }
    true
}

/// Call `f(round, packed)` on each step encoded in `bytes` ([`encode`]).
#[inline]
fn decode(bytes: &[u8], mut f: impl FnMut(u32, i32)) {
    let (mut at, mut round) = (0, 0u32);
    while at < bytes.len() && bytes[at] != 0 {
        round += (get_varint(bytes, &mut at) - 1) as u32;
        let zigzag = get_varint(bytes, &mut at) as u32;
        f(round, ((zigzag >> 1) as i32) ^ -((zigzag & 1) as i32));
    }
}

/// The index of the spilled steps, if `bytes` say they are.
fn spill_index(bytes: &[u8]) -> Option<usize> {
    (bytes.len() == STEP_BYTES && bytes[..2] == SPILL_MARK)
        .then(|| u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize)
}

/// The facts of a worker's `distinct`, each with its steps (non-empty, except for a
/// fact stored by a waiting change: see [`Facts::add_waiting`]).
#[derive(Default)]
pub(crate) struct Facts<R> {
    /// The first word of every fact stored here (its relation): not stored per row.
    lead: u32,
    /// Slot numbers by their row's hash: open addressing with linear probing, a power
    /// of two of places (or none), at most three quarters full, [`FREE`] where empty.
    /// Ours rather than a general table's, so that a batch of lookups can fetch their
    /// places ahead ([`Facts::prefetch_index`], [`Facts::prefetch_row`]).
    index: Vec<u32>,
    /// The rows' words after the first, `stride` words each: every word of a stored
    /// fact past `1 + stride` is 0.
    rows: Vec<u32>,
    stride: usize,
    /// Every fact's steps, `step_bytes()` each (module docs): as few as the longest
    /// inline history needs, of 4, 8 or 12.
    steps: Vec<u8>,
    /// `step_bytes() / 4 - 1`.
    step_words: usize,
    /// Histories too long to be inline, and the free places of this list.
    spill: Vec<Vec<Step>>,
    free: Vec<u32>,
    /// The allocated bytes of the vectors of `spill`.
    spill_bytes: u64,
    /// The changes of up to [`LANES`] times waiting here, a lane each.
    lanes: [Lane; LANES],
    row_type: std::marker::PhantomData<R>,
}

/// How many times' changes can wait in a table of facts at once: the time being
/// processed, a part at a time, and the next one, whose heads come meanwhile.
pub(crate) const LANES: usize = 2;

/// One time's changes waiting in a table of facts: the change of each slot
/// (`waiting[i]` for slot `i`), and which slots have one (a bit each). Empty when no
/// time uses the lane. A change is one byte: one outside ±127 is [`OVER`] here and
/// waits in `over` instead (most facts are derived a few times in a round; a byte a
/// fact, where a word was, took 33 MB per worker off tc-gnp5000's largest round).
#[derive(Default)]
struct Lane {
    waiting: Vec<i8>,
    over: rustc_hash::FxHashMap<u32, Mult>,
    touched: Vec<u64>,
    /// Slots with a waiting change; whether `waiting` and `touched` are in use.
    count: usize,
    active: bool,
}

impl Lane {
    fn is_touched(&self, i: usize) -> bool {
        self.touched
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// A slot was added at the end of the table (of `len` slots now).
    fn push(&mut self, len: usize) {
        if self.active {
            reserve_quarter(&mut self.waiting, 1);
            self.waiting.push(0);
            if self.touched.len() * 64 < len {
                self.touched.push(0);
            }
        }
    }

    /// Slot `last`'s change moves to slot `id` (whose has none), as its fact does.
    fn swap_remove(&mut self, id: u32, last: u32) {
        if self.active {
            self.waiting.swap_remove(id as usize);
            if let Some(d) = self.over.remove(&last) {
                self.over.insert(id, d);
            }
            if self.is_touched(last as usize) {
                self.touched[last as usize / 64] &= !(1 << (last % 64));
                self.touched[id as usize / 64] |= 1 << (id % 64);
            }
        }
    }

    /// Add `d` to the change of `slot` (of a table of `len` slots).
    fn add(&mut self, slot: usize, d: Mult, len: usize) {
        if !self.active {
            self.active = true;
            self.waiting = vec![0; len];
            self.touched = vec![0; len.div_ceil(64)];
        }
        let w = &mut self.waiting[slot];
        if *w == OVER {
            let big = self.over.entry(slot as u32).or_insert(0);
            *big = big.saturating_add(d);
        } else {
            let sum = Mult::from(*w).saturating_add(d);
            match i8::try_from(sum) {
                Ok(small) if small != OVER => *w = small,
                _ => {
                    *w = OVER;
                    self.over.insert(slot as u32, sum);
                }
            }
        }
        let word = &mut self.touched[slot / 64];
        if *word & (1 << (slot % 64)) == 0 {
            *word |= 1 << (slot % 64);
            self.count += 1;
        }
    }

    /// See [`Facts::pop_waiting`].
    fn pop(&mut self, cursor: &mut usize) -> Option<(Slot, Mult)> {
        while *cursor > 0 {
            let w = *cursor - 1;
            let word = self.touched[w];
            if word == 0 {
                *cursor = w;
                continue;
            }
            let bit = 63 - word.leading_zeros() as usize;
            self.touched[w] &= !(1 << bit);
            self.count -= 1;
            let slot = w * 64 + bit;
            let d = match std::mem::take(&mut self.waiting[slot]) {
                OVER => self.over.remove(&(slot as u32)).unwrap_or(0),
                small => Mult::from(small),
            };
            return Some((Slot(slot as u32), d));
        }
        None
    }

    /// Free the lane's memory if no change waits in it.
    fn release(&mut self) {
        if self.active && self.count == 0 {
            *self = Lane::default();
        }
    }

    fn shrink(&mut self, len: usize) {
        self.waiting.shrink_to_fit();
        self.touched.truncate(len.div_ceil(64));
        self.touched.shrink_to_fit();
    }

    fn bytes(&self) -> u64 {
        (self.waiting.capacity()
            + self.over.capacity() * std::mem::size_of::<(u32, Mult)>()
            + self.touched.capacity() * std::mem::size_of::<u64>()) as u64
    }
}

/// An empty place of [`Facts`]'s index.
const FREE: u32 = u32::MAX;

/// A waiting change kept in [`Facts`]'s side map, not in its byte.
const OVER: i8 = i8::MIN;

/// A place of the index holds a slot number in its low [`ID_BITS`] bits and, above
/// them, the top bits of the fact's hash: a probe compares the row of a slot only when
/// these match (one in sixteen of the others), not the row of every slot on its way,
/// each a cache miss.
const ID_BITS: u32 = 28;
const ID_MASK: u32 = (1 << ID_BITS) - 1;

/// The slots of one relation's table: below `ID_MASK`, so that no place is [`FREE`].
pub(crate) const MAX_FACTS: usize = ID_MASK as usize;

/// The hash bits kept in an index place beside slot number `id`.
#[inline]
fn entry(hash: u64, id: u32) -> u32 {
    ((hash >> (64 - (32 - ID_BITS))) as u32) << ID_BITS | id
}

/// The hash of a fact: the table's and the round table's (module `round`), so that
/// the two order facts alike.
#[inline]
pub(crate) fn hash_row<R: Row>(f: &R) -> u64 {
    hash_words(f.as_ref())
}

/// The hash of a row's words, two at a time, finished so that every bit depends on
/// every word (a table's place is its low bits, an entry's tag its high bits).
/// `FxBuildHasher::hash_one` on the row took the hasher's path for byte slices, with a
/// length prefix; the rows hashed together all have the circuit's width, so none is
/// needed (a row and the same row with a zero word more hash alike).
#[inline]
pub(crate) fn hash_words(words: &[u32]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let mut h = 0u64;
    let mut pairs = words.chunks_exact(2);
    for pair in &mut pairs {
        let w = u64::from(pair[0]) | (u64::from(pair[1]) << 32);
        h = (h ^ w).wrapping_mul(K);
    }
    if let [w] = pairs.remainder() {
        h = (h ^ u64::from(*w)).wrapping_mul(K);
    }
    // The finish of MurmurHash3's 64-bit mix: high bits reach the low ones.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Row `i` of `rows` (`stride` words each after `lead`), padded to the circuit's width.
#[inline]
fn row_at<R: Row>(lead: u32, rows: &[u32], stride: usize, i: usize) -> R {
    let mut row = R::default();
    let words = row.as_mut();
    words[0] = lead;
    words[1..=stride].copy_from_slice(&rows[i * stride..(i + 1) * stride]);
    row
}

/// A fact's place in [`Facts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot(u32);

impl<R: Row> Facts<R> {
    /// An empty table for the facts whose first word (relation) is `lead`.
    pub(crate) fn new(lead: u32) -> Facts<R> {
        Facts {
            lead,
            ..Facts::default()
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.steps.len() / self.step_bytes()
    }

    /// The bytes of a fact's steps in this table.
    #[inline]
    fn step_bytes(&self) -> usize {
        4 * (1 + self.step_words)
    }

    /// The encoded steps of slot `i`.
    #[inline]
    fn steps_at(&self, i: usize) -> &[u8] {
        let b = self.step_bytes();
        &self.steps[i * b..(i + 1) * b]
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The fact of `slot`.
    pub(crate) fn row(&self, slot: Slot) -> R {
        row_at(self.lead, &self.rows, self.stride, slot.0 as usize)
    }

    /// The hash of the fact of slot `i`.
    #[inline]
    fn hash_of(&self, i: usize) -> u64 {
        hash_row(&row_at::<R>(self.lead, &self.rows, self.stride, i))
    }

    /// Whether slot `i`'s stored words are `values` (a fact's words after the first,
    /// zero past the table's stride).
    #[inline]
    fn holds(&self, i: usize, values: &[u32]) -> bool {
        let (s, at) = (self.stride, i * self.stride);
        self.rows[at..at + s]
            .iter()
            .zip(values)
            .all(|(stored, v)| stored == v)
    }

    /// The slot of `f`, if it has one.
    pub(crate) fn find(&self, f: &R) -> Option<Slot> {
        self.find_hashed(f, hash_row(f))
    }

    /// The slot of `f`, whose hash is `hash`, if it has one.
    pub(crate) fn find_hashed(&self, f: &R, hash: u64) -> Option<Slot> {
        // A fact of another relation, or wider than every stored one, is not stored
        // (no scan at full width).
        let words = f.as_ref();
        let s = self.stride;
        if words[0] != self.lead
            || (1 + s < words.len() && used_words(words) > 1 + s)
            || self.index.is_empty()
        {
            return None;
        }
        // The words past `1 + s` are zero (checked above): a candidate matches when
        // its stored words are the fact's after the first, compared in place.
        let mask = self.index.len() - 1;
        let mut p = hash as usize & mask;
        let tag = entry(hash, 0);
        loop {
            let e = self.index[p];
            if e == FREE {
                return None;
            }
            if e & !ID_MASK == tag && self.holds((e & ID_MASK) as usize, &words[1..]) {
                return Some(Slot(e & ID_MASK));
            }
            p = (p + 1) & mask;
        }
    }

    /// Ask for the index place of the fact whose hash is `hash` (the first of two
    /// fetches ahead of a lookup: see `Materialized::add_waiting`).
    #[inline]
    pub(crate) fn prefetch_index(&self, hash: u64) {
        if !self.index.is_empty() {
            prefetch(&self.index[hash as usize & (self.index.len() - 1)]);
        }
    }

    /// Ask for the row, the waiting change and the touched bit's word of the first slot
    /// on the probe sequence of `hash` whose place holds the hash's top bits (the places
    /// were fetched by [`Facts::prefetch_index`] a few lookups before): most lookups end
    /// there. The change and the bit are `lane`'s.
    #[inline]
    pub(crate) fn prefetch_row(&self, lane: usize, hash: u64) {
        let Some(id) = self.first_candidate(hash) else {
            return;
        };
        if let Some(word) = self.rows.get(id * self.stride) {
            prefetch(word);
        }
        let lane = &self.lanes[lane];
        if let Some(w) = lane.waiting.get(id) {
            prefetch(w);
        }
        // And the word of its bit among the touched slots: a bit per fact is
        // still megabytes, and that load was most of `Lane::add`'s time.
        if let Some(w) = lane.touched.get(id / 64) {
            prefetch(w);
        }
    }

    /// Ask for the row and the steps of the first slot on the probe sequence of `hash`
    /// whose place holds the hash's top bits (the places fetched by
    /// [`Facts::prefetch_index`] a few lookups before): what a lookup followed by
    /// [`Facts::steps`] reads (see `distinct::process`).
    #[inline]
    pub(crate) fn prefetch_fact(&self, hash: u64) {
        let Some(id) = self.first_candidate(hash) else {
            return;
        };
        if let Some(word) = self.rows.get(id * self.stride) {
            prefetch(word);
        }
        if let Some(byte) = self.steps.get(id * self.step_bytes()) {
            prefetch(byte);
        }
    }

    /// The slot of the first place on the probe sequence of `hash` that holds the
    /// hash's top bits, within a few places (a longer probe's further places are not
    /// looked at): where most lookups end.
    #[inline]
    fn first_candidate(&self, hash: u64) -> Option<usize> {
        if self.index.is_empty() {
            return None;
        }
        let (mask, tag) = (self.index.len() - 1, entry(hash, 0));
        let mut p = hash as usize & mask;
        for _ in 0..8 {
            let e = self.index[p];
            if e == FREE {
                return None;
            }
            if e & !ID_MASK == tag {
                return Some((e & ID_MASK) as usize);
            }
            p = (p + 1) & mask;
        }
        None
    }

    /// Whether the fact of `slot` is in the materialization: its presence after its
    /// last step (the sum of its steps' presence changes) is 1.
    pub(crate) fn present(&self, slot: Slot) -> bool {
        let bytes = self.steps_at(slot.0 as usize);
        let sum: i32 = match spill_index(bytes) {
            Some(i) => presence(&self.spill[i]),
            None => {
                let mut sum = 0;
                decode(bytes, |round, packed| {
                    sum += Step { round, packed }.output()
                });
                sum
            }
        };
        sum > 0
    }

    /// Call `f` on the stored words of every fact in the materialization: its values
    /// up to the table's stride (the words past it are 0).
    pub(crate) fn for_each_present(&self, mut f: impl FnMut(&[u32])) {
        let s = self.stride;
        for i in 0..self.len() {
            if self.present(Slot(i as u32)) {
                f(&self.rows[i * s..(i + 1) * s]);
            }
        }
    }

    /// Call `f(fact, round, presence change)` on every step of every fact that changes
    /// its presence: the table's history of the facts' changes, by round, every earlier
    /// epoch folded in (module `entries` meets a new pattern with it).
    pub(crate) fn for_each_change(&self, mut f: impl FnMut(&R, u32, i32)) {
        let mut steps = Steps::new();
        for i in 0..self.len() {
            let slot = Slot(i as u32);
            self.steps(slot, &mut steps);
            if steps.iter().all(|s| s.output() == 0) {
                continue;
            }
            let row = self.row(slot);
            for s in &steps {
                if s.output() != 0 {
                    f(&row, s.round, s.output());
                }
            }
        }
    }

    /// Store `width` words per row (after the first) from now on (more than now).
    fn widen(&mut self, width: usize) {
        let (n, s) = (self.len(), self.stride);
        self.rows = widen_records(&self.rows, n, s, s, width - s);
        self.stride = width;
        // The hashes are of the padded rows: widening changes none.
    }

    /// Decode the steps of `slot` into `into` (cleared first).
    pub(crate) fn steps(&self, slot: Slot, into: &mut Steps) {
        into.clear();
        let bytes = self.steps_at(slot.0 as usize);
        match spill_index(bytes) {
            Some(i) => into.extend_from_slice(&self.spill[i]),
            None => decode(bytes, |round, packed| into.push(Step { round, packed })),
        }
    }

    /// Store `steps` (sorted by round) as the history of `slot`: inline if they fit in
    /// the table's bytes per fact, which grow to fit them, up to [`STEP_BYTES`] (the
    /// old history's spilled list freed); else in the old history's spilled list or a
    /// new one.
    pub(crate) fn set_steps(&mut self, slot: Slot, steps: &[Step]) {
        let id = slot.0 as usize;
        let old_spill = spill_index(self.steps_at(id));
        let mut inline = [0u8; STEP_BYTES];
        let fits = loop {
            let b = self.step_bytes();
            if encode(steps, &mut inline[..b]) {
                break true;
            }
            if b == STEP_BYTES {
                break false;
            }
            inline = [0; STEP_BYTES];
            self.widen_steps();
        };
        let b = self.step_bytes();
        if fits {
            if let Some(i) = old_spill {
                self.unspill(i);
            }
            self.steps[id * b..(id + 1) * b].copy_from_slice(&inline[..b]);
            return;
        }
        let i = match old_spill {
            Some(i) => i,
            None => match self.free.pop() {
                Some(i) => i as usize,
                None => {
                    self.spill.push(Vec::new());
                    self.spill.len() - 1
                }
            },
        };
        let list = &mut self.spill[i];
        self.spill_bytes -= (list.capacity() * std::mem::size_of::<Step>()) as u64;
        list.clear();
        list.extend_from_slice(steps);
        self.spill_bytes += (list.capacity() * std::mem::size_of::<Step>()) as u64;
        let mut mark = [0u8; STEP_BYTES];
        mark[..2].copy_from_slice(&SPILL_MARK);
        mark[4..8].copy_from_slice(&(i as u32).to_le_bytes());
        self.steps[id * b..(id + 1) * b].copy_from_slice(&mark);
    }

    /// Give every fact 4 more bytes of steps (its encoding is unchanged: the zeros
    /// after it end it). Below [`STEP_BYTES`] a fact, no history is spilled. In place,
    /// from the last fact down: a copy into a new vector held both at once, which on
    /// transitive closure (widened late in a load, with most of its facts) raised the
    /// peak by 50 MB.
    fn widen_steps(&mut self) {
        let (n, b) = (self.len(), self.step_bytes());
        let wider = b + 4;
        let want = (self.steps.capacity() / b).max(n) * wider;
        self.steps.reserve_exact(want - self.steps.len());
        self.steps.resize(n * wider, 0);
        for i in (0..n).rev() {
            self.steps.copy_within(i * b..(i + 1) * b, i * wider);
            self.steps[i * wider + b..(i + 1) * wider].fill(0);
        }
        self.step_words += 1;
    }

    fn unspill(&mut self, i: usize) {
        let list = std::mem::take(&mut self.spill[i]);
        self.spill_bytes -= (list.capacity() * std::mem::size_of::<Step>()) as u64;
        self.free.push(i as u32);
    }

    /// Put slot `id`, whose fact's hash is `hash`, at the first free place of its
    /// probe sequence.
    fn place(&mut self, hash: u64, id: u32) {
        let mask = self.index.len() - 1;
        let mut p = hash as usize & mask;
        while self.index[p] != FREE {
            p = (p + 1) & mask;
        }
        self.index[p] = entry(hash, id);
    }

    /// Rebuild the index with `cap` places (a power of two, room for every slot). The
    /// rows are read in order; the place of the row `AHEAD` on is fetched ahead.
    fn rebuild(&mut self, cap: usize) {
        self.index = Vec::new();
        self.index = vec![FREE; cap];
        let n = self.len();
        let mut hashes = [0u64; AHEAD];
        for (i, h) in hashes.iter_mut().enumerate().take(n) {
            *h = self.hash_of(i);
        }
        for i in 0..n {
            let hash = hashes[i % AHEAD];
            if i + AHEAD < n {
                let h = self.hash_of(i + AHEAD);
                hashes[i % AHEAD] = h;
                prefetch(&self.index[h as usize & (cap - 1)]);
            }
            self.place(hash, i as u32);
        }
    }

    /// The index place of slot `id`, whose fact's hash is `hash`.
    fn place_of(&self, hash: u64, id: u32) -> usize {
        let mask = self.index.len() - 1;
        let mut p = hash as usize & mask;
        // `FREE` holds no slot number (its slot bits are `ID_MASK`).
        while self.index[p] & ID_MASK != id {
            p = (p + 1) & mask;
        }
        p
    }

    /// Empty index place `hole`, moving later places of its run back so that every
    /// slot stays reachable from its home place (deletion without tombstones).
    fn unplace(&mut self, mut hole: usize) {
        let mask = self.index.len() - 1;
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let e = self.index[j];
            if e == FREE {
                break;
            }
            let home = self.hash_of((e & ID_MASK) as usize) as usize & mask;
            // The slot at `j` may move to the hole if the hole is on its way from
            // its home: at least as far from the home as from the hole.
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.index[hole] = e;
                hole = j;
            }
        }
        self.index[hole] = FREE;
    }

    /// Make room for `additional` more facts, the widest `width` words after the
    /// first, at once (a load's batch): the index is rebuilt once, at its final size,
    /// instead of at every doubling on the way, and the rows and steps are allocated
    /// once instead of growing by a quarter at a time.
    pub(crate) fn reserve(&mut self, additional: usize, width: usize) {
        if width > self.stride {
            self.widen(width);
        }
        let n = self.len() + additional;
        if !fits(n, self.index.len()) {
            self.rebuild(slots_for(n));
        }
        self.rows.reserve_exact(additional * self.stride);
        self.steps.reserve_exact(additional * self.step_bytes());
    }

    /// Add `f` (which has no slot) with `steps` (sorted by round).
    pub(crate) fn insert(&mut self, f: R, steps: &[Step]) -> Slot {
        self.insert_hashed(f, hash_row(&f), steps)
    }

    fn insert_hashed(&mut self, f: R, hash: u64, steps: &[Step]) -> Slot {
        let id = self.len() as u32;
        assert_eq!(
            f.as_ref()[0],
            self.lead,
            "distinct: a fact stored in another relation's table"
        );
        assert!(
            self.len() < MAX_FACTS,
            "distinct: more than 2^28 - 1 facts of one relation on one worker (use more workers)"
        );
        let width = used_words(f.as_ref()).saturating_sub(1);
        if width > self.stride {
            self.widen(width);
        }
        let s = self.stride;
        reserve_quarter(&mut self.rows, s);
        let b = self.step_bytes();
        reserve_quarter(&mut self.steps, b);
        self.rows.extend_from_slice(&f.as_ref()[1..=s]);
        self.steps.resize(self.steps.len() + b, 0);
        self.set_steps(Slot(id), steps);
        let len = self.len();
        for lane in &mut self.lanes {
            lane.push(len);
        }
        if !fits(self.len(), self.index.len()) {
            self.rebuild((2 * self.index.len()).max(64));
        } else {
            self.place(hash, id);
        }
        Slot(id)
    }

    /// Forget the fact of `slot` (which has no waiting change): the last slot's fact
    /// takes its place.
    pub(crate) fn remove(&mut self, slot: Slot) {
        let id = slot.0;
        debug_assert!(!self.is_touched(id as usize), "a waiting change forgotten");
        if let Some(i) = spill_index(self.steps_at(id as usize)) {
            self.unspill(i);
        }
        let hole = self.place_of(self.hash_of(id as usize), id);
        self.unplace(hole);
        let s = self.stride;
        let last = (self.len() - 1) as u32;
        let (at, end) = (id as usize * s, last as usize * s);
        self.rows.copy_within(end..end + s, at);
        self.rows.truncate(end);
        let b = self.step_bytes();
        let (at, end) = (id as usize * b, last as usize * b);
        self.steps.copy_within(end..end + b, at);
        self.steps.truncate(end);
        for lane in &mut self.lanes {
            lane.swap_remove(id, last);
        }
        if id != last {
            let p = self.place_of(self.hash_of(id as usize), last);
            self.index[p] = self.index[p] & !ID_MASK | id;
        }
    }

    /// Whether slot `i` has a waiting change, in any lane.
    #[inline]
    fn is_touched(&self, i: usize) -> bool {
        self.lanes.iter().any(|l| l.is_touched(i))
    }

    /// Whether the fact of `slot` has a waiting change (and must not be forgotten
    /// before its time, even with no steps).
    pub(crate) fn waiting_at(&self, slot: Slot) -> bool {
        self.is_touched(slot.0 as usize)
    }

    /// Add `d` to the change of `f` waiting in `lane`, where `f`'s hash is `hash`,
    /// storing `f` with no steps if it is new. The `distinct` takes one time's head
    /// facts this way, and the changes wait here (a byte per fact) until it processes
    /// that time ([`Facts::pop_waiting`]).
    pub(crate) fn add_waiting(&mut self, lane: usize, f: &R, hash: u64, d: Mult) {
        let slot = match self.find_hashed(f, hash) {
            Some(slot) => slot.0 as usize,
            None => self.insert_hashed(*f, hash, &[]).0 as usize,
        };
        let len = self.len();
        self.lanes[lane].add(slot, d, len);
    }

    /// Whether some fact has a change waiting in `lane`.
    pub(crate) fn has_waiting(&self, lane: usize) -> bool {
        self.lanes[lane].count > 0
    }

    /// Where [`Facts::pop_waiting`] starts.
    pub(crate) fn waiting_cursor(&self, lane: usize) -> usize {
        self.lanes[lane].touched.len()
    }

    /// Take the change waiting in `lane` of the highest slot below `cursor`'s word
    /// that has one (the cursor moves down). From the top: a fact forgotten while they
    /// are taken gets the last slot's fact, whose change was taken already.
    pub(crate) fn pop_waiting(&mut self, lane: usize, cursor: &mut usize) -> Option<(Slot, Mult)> {
        self.lanes[lane].pop(cursor)
    }

    /// Free the memory of the lanes in which no change waits.
    pub(crate) fn release_waiting(&mut self) {
        for lane in &mut self.lanes {
            lane.release();
        }
    }

    /// Give memory back when at most a quarter of what is allocated is used.
    pub(crate) fn shrink_if_sparse(&mut self) {
        let b = self.step_bytes();
        if self.steps.capacity() > 64 * b && self.steps.len() < self.steps.capacity() / 4 {
            self.rows.shrink_to_fit();
            self.steps.shrink_to_fit();
            let len = self.len();
            for lane in &mut self.lanes {
                lane.shrink(len);
            }
            let cap = slots_for(self.len());
            if self.is_empty() {
                self.index = Vec::new();
            } else if cap < self.index.len() {
                self.rebuild(cap);
            }
            while self.spill.last().is_some_and(Vec::is_empty) {
                self.spill.pop();
            }
            let len = self.spill.len() as u32;
            self.free.retain(|&i| i < len);
            self.spill.shrink_to_fit();
            self.free.shrink_to_fit();
        }
    }

    /// The allocated bytes of the index, the rows, the steps, the spilled lists and
    /// the waiting changes.
    pub(crate) fn bytes(&self) -> u64 {
        (self.index.capacity() * std::mem::size_of::<u32>()) as u64
            + self.lanes.iter().map(Lane::bytes).sum::<u64>()
            + (self.rows.capacity() * std::mem::size_of::<u32>()
                + self.steps.capacity()
                + self.spill.capacity() * std::mem::size_of::<Vec<Step>>()
                + self.free.capacity() * std::mem::size_of::<u32>()) as u64
            + self.spill_bytes
    }

    /// How many histories are spilled (for tests and diagnostics).
    #[cfg(test)]
    fn spilled(&self) -> usize {
        self.spill.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table's place is a hash's low bits and an entry's tag its high bits: both
    /// must spread facts that differ in any part of any word (here only the high bits
    /// of the last word, or of the first value).
    #[test]
    fn row_hashes_spread_in_their_low_and_high_bits() {
        for at in [1usize, 3] {
            let hashes: Vec<u64> = (0..4096u32)
                .map(|i| {
                    let mut row = [7u32, 1, 2, 3];
                    row[at] = i << 20;
                    hash_words(&row)
                })
                .collect();
            let low: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 0xFFF).collect();
            let high: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 56).collect();
            // 4,096 random values take about 2,589 of 4,096 places and all 256 tags.
            assert!(low.len() > 2_300, "word {at}: {} low places", low.len());
            assert!(high.len() > 250, "word {at}: {} tags", high.len());
        }
    }

    fn steps(list: &[(u32, i32, i32)]) -> Vec<Step> {
        list.iter().map(|&(r, i, o)| Step::new(r, i, o)).collect()
    }

    #[test]
    fn steps_pack_counts_and_presence() {
        for (input, output) in [
            (0, 0),
            (1, 1),
            (-1, -1),
            (5, 0),
            (-7, 1),
            (COUNT_LIMIT - 1, -1),
        ] {
            let s = Step::new(9, input, output);
            assert_eq!((s.round, s.input(), s.output()), (9, input, output));
        }
        let mut s = Step::new(1, -COUNT_LIMIT, 0);
        assert_eq!(s.input(), -COUNT_LIMIT);
        s.add_input(3);
        s.add_output(1);
        assert_eq!((s.input(), s.output()), (3 - COUNT_LIMIT, 1));
        assert!(Step::new(0, 0, 0).is_empty());
    }

    #[test]
    #[should_panic(expected = "exceeds 2^29")]
    fn a_count_past_the_limit_fails_rather_than_wraps() {
        Step::new(0, COUNT_LIMIT - 1, 0).add_input(1);
    }

    #[test]
    fn short_histories_are_inline_and_decode_to_what_was_encoded() {
        let cases = [
            steps(&[(1, 1, 1)]),
            steps(&[(2, 1, 1), (3, 4, 0), (5, -2, 0), (9, 1, 0), (100, 15, -1)]),
            steps(&[(0, -15, -1)]),
            // A level's first round is `level << 22`: four bytes of distance.
            steps(&[(3 << 22, 2, 1), ((3 << 22) + 1, 1, 0)]),
        ];
        let at_most = steps(&[(u32::MAX, COUNT_LIMIT - 1, 1), (u32::MAX, 0, 0)]);
        for case in cases.into_iter().chain([at_most]) {
            let mut bytes = [0u8; STEP_BYTES];
            assert!(encode(&case, &mut bytes), "inline: {case:?}");
            assert!(spill_index(&bytes).is_none());
            let mut back = Steps::new();
            decode(&bytes, |round, packed| back.push(Step { round, packed }));
            assert_eq!(&back[..], &case[..]);
        }
        // Big counts, far rounds, many steps: not inline.
        let far = steps(&[
            (u32::MAX - 5, COUNT_LIMIT - 1, 1),
            (u32::MAX, -COUNT_LIMIT, -1),
        ]);
        assert!(!encode(&far, &mut [0; STEP_BYTES]));
        let many: Vec<Step> = (0..7).map(|r| Step::new(r, 1, 0)).collect();
        assert!(!encode(&many, &mut [0; STEP_BYTES]));
        assert!(
            encode(&many[..6], &mut [0; STEP_BYTES]),
            "six short steps fit"
        );
    }

    #[test]
    fn a_table_gives_its_facts_only_the_bytes_of_steps_their_histories_need() {
        let mut facts: Facts<[u32; 3]> = Facts::new(1);
        let one = steps(&[(1, 1, 1)]); // 2 bytes
        let two = steps(&[(1, 1, 1), (2, -1, -1)]); // 4
        let three = steps(&[(1, 1, 1), (2, -1, -1), (3, 1, 1)]); // 6
        let five = steps(&[(1, 1, 1), (2, -1, -1), (3, 1, 1), (4, 1, 0), (5, -1, 0)]);
        let long: Vec<Step> = (0..9).map(|r| Step::new(r * 1000, 1, 0)).collect();
        let mut expected = Vec::new();
        for (x, (history, bytes)) in [
            (&one, 4),
            (&two, 4),
            (&one, 4),
            (&three, 8),
            (&five, 12),
            (&long, 12),
            (&two, 12),
        ]
        .into_iter()
        .enumerate()
        {
            for y in 0..50 {
                facts.insert([1, x as u32, y], history);
                expected.push(([1, x as u32, y], history));
            }
            assert_eq!(facts.step_bytes(), bytes, "after the histories of {x}");
        }
        assert_eq!(facts.spilled(), 50);
        let mut got = Steps::new();
        for (f, history) in expected {
            let slot = facts.find(&f).expect("stored");
            facts.steps(slot, &mut got);
            assert_eq!(&got[..], &history[..], "{f:?}");
            assert_eq!(facts.present(slot), presence(history) > 0, "{f:?}");
        }
    }

    #[test]
    fn the_changes_are_the_steps_that_change_presence() {
        // What a new pattern meets: every presence change, by round, including those
        // of a spilled history; a fact with none (a waiting fact, or one whose count
        // changed without a change of presence) gives nothing.
        let mut facts: Facts<[u32; 3]> = Facts::new(1);
        facts.insert([1, 1, 2], &steps(&[(1, 1, 1)]));
        facts.insert([1, 3, 0], &steps(&[(2, 1, 1), (4, 1, 0), (7, -2, -1)]));
        facts.insert([1, 5, 5], &steps(&[(3, 2, 0)]));
        facts.insert([1, 6, 6], &[]);
        let long: Vec<(u32, Mult, Mult)> = (0..40)
            .map(|i| {
                (
                    i * 3,
                    if i % 2 == 0 { 1 } else { -1 },
                    if i % 2 == 0 { 1 } else { -1 },
                )
            })
            .collect();
        facts.insert([1, 8, 8], &steps(&long));
        let mut seen = Vec::new();
        facts.for_each_change(|f, round, d| seen.push((*f, round, d)));
        seen.sort();
        let mut want = vec![([1, 1, 2], 1, 1), ([1, 3, 0], 2, 1), ([1, 3, 0], 7, -1)];
        want.extend(long.iter().map(|&(r, _, o)| ([1, 8, 8], r, o)));
        want.sort();
        assert_eq!(seen, want);
    }

    #[test]
    fn rows_take_the_words_their_facts_use_and_widen_for_wider_ones() {
        let mut facts: Facts<[u32; 8]> = Facts::new(2);
        let h = steps(&[(1, 1, 1)]);
        let narrow = |x: u32| [2, x, x + 1, 0, 0, 0, 0, 0];
        for x in 0..100 {
            facts.insert(narrow(x), &h);
        }
        assert_eq!(facts.stride, 2);
        assert_eq!(
            facts.rows.len(),
            200,
            "2 words a fact: not 8, not the relation"
        );
        // A wider fact is not found before it is stored, and widens every row.
        let wide = [2, 5, 6, 0, 0, 0, 9, 0];
        assert!(facts.find(&wide).is_none());
        facts.insert(wide, &h);
        assert_eq!(facts.stride, 6);
        // A fact of another relation is not in this table.
        assert!(facts.find(&[3, 1, 2, 0, 0, 0, 0, 0]).is_none());
        // The row of zeros of relation 2 is a fact like any other.
        let zeros = [2, 0, 0, 0, 0, 0, 0, 0];
        assert!(facts.find(&zeros).is_none());
        facts.insert(zeros, &h);
        for x in 0..100 {
            assert!(facts.find(&narrow(x)).is_some(), "{x}");
        }
        assert!(facts.find(&wide).is_some());
        assert!(facts.find(&zeros).is_some());
        assert!(facts.find(&[2, 5, 6, 0, 0, 0, 0, 0]).is_some(), "narrow(5)");
        assert!(facts.find(&[2, 5, 6, 0, 0, 0, 8, 0]).is_none());
        // Removing moves the last row into the hole, and every fact is still found.
        let slot = facts.find(&narrow(0)).expect("present");
        facts.remove(slot);
        let slot = facts.find(&wide).expect("present");
        facts.remove(slot);
        assert!(facts.find(&narrow(0)).is_none() && facts.find(&wide).is_none());
        for x in 1..100 {
            let slot = facts.find(&narrow(x)).expect("present");
            let mut got = Steps::new();
            facts.steps(slot, &mut got);
            assert_eq!(&got[..], &h[..]);
        }
        assert!(facts.find(&zeros).is_some());
        assert_eq!(facts.len(), 100);
        // Relation 0's row of zeros is stored in no words at all.
        let mut zero: Facts<[u32; 8]> = Facts::new(0);
        zero.insert([0; 8], &h);
        assert_eq!((zero.stride, zero.rows.len()), (0, 0));
        assert!(zero.find(&[0; 8]).is_some());
        let mut seen = 0;
        zero.for_each_present(|row| {
            assert!(row.is_empty());
            seen += 1;
        });
        assert_eq!(seen, 1);
    }

    #[test]
    fn the_index_finds_every_fact_through_random_insertions_and_removals() {
        // Small tables, long probe runs: removals must keep every fact reachable.
        let mut facts: Facts<[u32; 3]> = Facts::new(1);
        let mut expected = std::collections::BTreeMap::new();
        let mut x: u64 = 7;
        let h = steps(&[(1, 1, 1)]);
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let f = [1, (x >> 40) as u32 % 300, (x >> 20) as u32 % 7];
            match facts.find(&f) {
                Some(slot) if i % 3 != 0 => {
                    facts.remove(slot);
                    expected.remove(&f);
                }
                Some(_) => {}
                None => {
                    facts.insert(f, &h);
                    expected.insert(f, ());
                }
            }
            if i % 997 == 0 {
                facts.shrink_if_sparse();
            }
        }
        assert_eq!(facts.len(), expected.len());
        for a in 0..300 {
            for b in 0..7 {
                let f = [1, a, b];
                assert_eq!(facts.find(&f).is_some(), expected.contains_key(&f), "{f:?}");
            }
        }
        for f in expected.keys() {
            let slot = facts.find(f).expect("present");
            facts.remove(slot);
        }
        assert!(facts.is_empty());
        facts.shrink_if_sparse();
        assert!(facts.bytes() < 1024, "{}", facts.bytes());
    }

    /// A table of relation 2 with the facts `(x, 0)` for `x` below `n`, present from
    /// round 1.
    fn present(n: u32) -> Facts<[u32; 3]> {
        let mut facts = Facts::new(2);
        let h = steps(&[(1, 1, 1)]);
        for x in 0..n {
            facts.insert([2, x, 0], &h);
        }
        facts
    }

    #[test]
    fn two_lanes_wait_apart_and_move_with_their_slots() {
        let mut facts = present(10);
        let add = |facts: &mut Facts<[u32; 3]>, lane, x, d| {
            let f = [2, x, 0];
            facts.add_waiting(lane, &f, hash_row(&f), d);
        };
        add(&mut facts, 0, 3, 1);
        add(&mut facts, 1, 3, 300);
        // A new fact of lane 1 only, in the last slot.
        add(&mut facts, 1, 50, 2);
        assert_eq!(facts.len(), 11);
        assert!(facts.has_waiting(0) && facts.has_waiting(1));
        // Forgetting slot 0 moves the last slot's fact, and its lane-1 change, there.
        facts.remove(facts.find(&[2, 0, 0]).expect("stored"));
        assert_eq!(facts.row(Slot(0)), [2, 50, 0]);
        assert!(facts.waiting_at(Slot(0)));
        let take = |facts: &mut Facts<[u32; 3]>, lane| {
            let mut cursor = facts.waiting_cursor(lane);
            let mut got = Vec::new();
            while let Some((slot, d)) = facts.pop_waiting(lane, &mut cursor) {
                got.push((facts.row(slot), d));
            }
            got.sort();
            got
        };
        assert_eq!(take(&mut facts, 0), vec![([2, 3, 0], 1)]);
        assert!(!facts.has_waiting(0) && facts.waiting_at(Slot(0)));
        facts.release_waiting();
        assert!(!facts.lanes[0].active && facts.lanes[1].active);
        assert_eq!(take(&mut facts, 1), vec![([2, 3, 0], 300), ([2, 50, 0], 2)]);
        facts.release_waiting();
        assert!(!facts.lanes[1].active);
    }

    #[test]
    fn waiting_changes_add_up_per_fact_and_come_out_from_the_last_slot() {
        let mut facts = present(100);
        // Changes to stored facts and to new ones (stored with no steps), repeated.
        let mut expected = std::collections::BTreeMap::new();
        for (x, d) in [
            (5, 1),
            (150, 2),
            (5, 2),
            (99, -1),
            (150, -2),
            (120, 1),
            (7, 3),
            // Beyond a byte: the side map, also for the slot that moves below, for
            // the byte's own marker (-128), and back within a byte.
            (120, 500),
            (11, 100),
            (11, 100),
            (11, -150),
            (13, -128),
        ] {
            let f = [2, x, 0];
            facts.add_waiting(0, &f, hash_row(&f), d);
            *expected.entry(f).or_insert(0) += d;
        }
        assert_eq!(facts.len(), 102, "two new facts");
        let new = facts.find(&[2, 150, 0]).expect("stored");
        let mut got = Steps::new();
        facts.steps(new, &mut got);
        assert!(got.is_empty() && !facts.present(new) && facts.waiting_at(new));
        // Forgetting a fact with no change moves the last slot's fact (with a
        // waiting change) into its place, the change with it.
        let last = facts.row(Slot(101));
        assert!(facts.waiting_at(Slot(101)));
        facts.remove(facts.find(&[2, 0, 0]).expect("stored"));
        assert!(facts.waiting_at(Slot(0)) && facts.row(Slot(0)) == last);
        assert_eq!(
            facts.lanes[0].over.get(&0),
            Some(&501),
            "the moved change is found"
        );
        assert!(facts.len() == 101 && !facts.waiting_at(Slot(101)));
        let mut cursor = facts.waiting_cursor(0);
        let mut taken = Vec::new();
        while let Some((slot, d)) = facts.pop_waiting(0, &mut cursor) {
            taken.push((slot.0, facts.row(slot), d));
        }
        assert!(
            taken.windows(2).all(|w| w[0].0 > w[1].0),
            "from the last slot"
        );
        let sums: std::collections::BTreeMap<_, _> =
            taken.iter().map(|&(_, f, d)| (f, d)).collect();
        assert_eq!(sums, expected, "zero sums included");
        assert!(facts.bytes() > 0 && facts.lanes[0].active && !facts.lanes[1].active);
        facts.release_waiting();
        let lane = &facts.lanes[0];
        assert!(!lane.active && lane.waiting.capacity() == 0 && lane.over.is_empty());
        assert!(facts.find(&[2, 0, 0]).is_none() && facts.find(&[2, 99, 0]).is_some());
    }

    #[test]
    #[should_panic(expected = "another relation's table")]
    fn a_fact_of_another_relation_is_refused() {
        let mut facts: Facts<[u32; 4]> = Facts::new(1);
        facts.insert([2, 1, 1, 0], &steps(&[(1, 1, 1)]));
    }

    #[test]
    fn facts_keep_their_steps_through_spills_and_removals() {
        let mut facts: Facts<[u32; 3]> = Facts::new(7);
        let long: Vec<Step> = (0..9)
            .map(|r| Step::new(r * 1000, 1000 + r as i32, 0))
            .collect();
        let short = steps(&[(1, 1, 1)]);
        let mut expected = std::collections::HashMap::new();
        for x in 0..1000u32 {
            let h = if x % 3 == 0 { &long } else { &short };
            facts.insert([7, x, x * 2], h);
            expected.insert([7, x, x * 2], h.clone());
        }
        assert_eq!(facts.spilled(), 334);
        // Remove every other fact; change some histories from long to short and back.
        for x in (0..1000u32).step_by(2) {
            let slot = facts.find(&[7, x, x * 2]).expect("present");
            facts.remove(slot);
            expected.remove(&[7, x, x * 2]);
        }
        for x in (1..1000u32).step_by(4) {
            let f = [7, x, x * 2];
            let slot = facts.find(&f).expect("present");
            let h = if x % 3 == 0 { &short } else { &long };
            facts.set_steps(slot, h);
            expected.insert(f, h.clone());
        }
        assert_eq!(facts.len(), expected.len());
        let mut got = Steps::new();
        for (f, h) in &expected {
            let slot = facts.find(f).expect("present");
            facts.steps(slot, &mut got);
            assert_eq!(&got[..], &h[..], "{f:?}");
        }
        assert!(facts.find(&[7, 0, 0]).is_none());
        let spilled = expected.values().filter(|h| h.len() > 5).count();
        assert_eq!(facts.spilled(), spilled);
        // Emptied, the table gives its memory back.
        let all: Vec<[u32; 3]> = expected.keys().copied().collect();
        for f in all {
            let slot = facts.find(&f).expect("present");
            facts.remove(slot);
        }
        assert!(facts.is_empty());
        facts.shrink_if_sparse();
        assert!(facts.bytes() < 1024, "{}", facts.bytes());
    }

    /// Room made for a batch is room enough: its facts go in without another
    /// rebuild of the index or a move of the rows, and are all found (the facts
    /// before it too, after the one rebuild to the final size).
    #[test]
    fn a_reserved_batch_goes_in_without_growing_again() {
        let mut facts: Facts<[u32; 4]> = Facts::new(3);
        for x in 0..100u32 {
            facts.insert([3, x, 1, 0], &steps(&[(0, 1, 1)]));
        }
        facts.reserve(10_000, 3);
        let (places, rows) = (facts.index.len(), facts.rows.as_ptr());
        assert!(facts.rows.capacity() >= 10_100 * 3);
        for x in 0..10_000u32 {
            facts.insert([3, x, 2, x + 1], &steps(&[(1, 1, 1)]));
        }
        assert_eq!(facts.index.len(), places, "the index was rebuilt again");
        assert_eq!(facts.rows.as_ptr(), rows, "the rows moved");
        for x in 0..100u32 {
            assert!(facts.find(&[3, x, 1, 0]).is_some());
        }
        for x in 0..10_000u32 {
            assert!(facts.find(&[3, x, 2, x + 1]).is_some());
        }
        assert!(facts.find(&[3, 5, 2, 5]).is_none());
    }
}
