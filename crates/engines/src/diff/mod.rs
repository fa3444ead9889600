//! The differential engine: one differential-dataflow circuit in which both the rules
//! and the facts are input collections.
//!
//! Adding or removing facts, and adding or removing rules ([`Diff::set_program`]),
//! updates the materialization in time proportional to what changes: there is no
//! recompilation and no delete-rederive; a removed rule retracts exactly what it
//! derived, through differences.
//!
//! # Example
//!
//! ```
//! use dynalog_engines::Engine;
//! use dynalog_engines::diff::Diff;
//! use dynalog_syntax::SourceFile;
//!
//! let text = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
//!             path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n";
//! let file = SourceFile::new("tc.dl", text);
//! let ast = dynalog_syntax::parse(&file).unwrap();
//! let program = dynalog_analysis::analyse(&file, &ast).unwrap();
//! let (edge, path) = (program.relation_id("edge").unwrap(), program.relation_id("path").unwrap());
//!
//! let mut engine = Diff::new(program, 2).unwrap();
//! engine.track_changes(true); // record each commit's changes (see `last_changes`)
//! engine.insert(edge, &[1, 2]);
//! engine.insert(edge, &[2, 3]);
//! engine.commit().unwrap();
//! assert_eq!(engine.len(path), 3);
//!
//! engine.remove(edge, &[2, 3]);
//! engine.commit().unwrap();
//! assert_eq!(engine.len(path), 1);
//! // Every relation's changes made by the last commit: -edge(2,3), -path(2,3), -path(1,3).
//! assert_eq!(engine.last_changes().len(), 3);
//! assert!(engine.last_changes().iter().all(|(_, _, d)| d == -1));
//! ```
//!
//! # The circuit
//!
//! Inputs, one timestamp (an epoch) per commit:
//! * `facts`: the base facts, rows `[relation, values.., 0..]`;
//! * `rules`: the live rules, `(level, rule id)`.
//!
//! A rule's compiled form (module `compile`) is registered in an append-only table under
//! an id (same IR and level → same id); the table is shared with the workers, whose
//! join closures read it. Only the ids flow through the dataflow, so the `rules`
//! collection decides which rules are live while no rule metadata is ever joined.
//!
//! Everything happens in one iterative scope whose round coordinate is
//! `level << 22 | round`. The *level* is a coarse stratum: positive dependencies and
//! recursion stay in one level, a negated relation comes from a lower level. The rules
//! of level `k` enter the loop (`enter_at`) at round `k << 22`, when every lower level
//! has reached its fixpoint, so each level is its own fixpoint, evaluated in order, and
//! the rules of level `k` see the lower levels complete: this is stratified evaluation
//! with the strata as data. A rule change that moves a rule to another level is just a
//! change of its id in `rules`. Up to 1024 levels and 4M rounds per level are
//! supported. (One loop per stratum would need a fixed number of loops, each with its
//! own arrangements of the facts below it; one loop with the level in the round keeps
//! one copy of every arrangement, whatever the number of strata.)
//!
//! Inside the loop, for the set of facts `F` of the current round:
//!
//! * **patterns**: the binding patterns of the live rules' atoms (which columns are
//!   bound by earlier literals, which are constants, which repeat a variable), from the
//!   `rules` collection, deduplicated: patterns in use are data too. A wildcard of an
//!   atom with a bound column counts as a free column whose value binds nothing, so
//!   `T(y, p, _)`, `T(_, p, z)` and `T(x, p, y)` with `p` bound share one pattern and
//!   one index (RhoDF on LUBM1: a third less time and memory for a full evaluation).
//! * **index**: for every fact and every pattern in use on its relation, the fact's
//!   entry `(pattern, bound values) → free values` if it matches the pattern's
//!   constants (arranged). One arrangement holds the entries of every pattern in use,
//!   shared by all rules using a pattern. The entries come from the `distinct` that
//!   makes `F` (below, and module `entries`), as the join `F ⋈ patterns` on the
//!   relation: a fact's change meets its relation's patterns as the `distinct` makes
//!   it, a new pattern (a rule added) the history of its relation's facts, which is
//!   the `distinct`'s table of facts itself: the facts are not kept twice. An
//!   atom with no bound column (`path(x, y)` as a first atom) is keyed by
//!   `(pattern, bucket)`, the bucket a hash of the values (`8 × workers` buckets with
//!   several workers), and a substitution waiting for it is replicated to every bucket,
//!   so the join runs against each worker's slice instead of shipping all facts to one
//!   worker. So is an atom whose substitutions are few because every earlier atom
//!   selected by a constant (`T(p, "rdfs:domain", c), T(y, p, _)`): its key
//!   `(pattern, p, bucket)` spreads a predicate's entries over the workers, where the
//!   key `(pattern, p)` would put a third of LUBM's triples (`rdf:type`) on one worker.
//!   (Spreading every keyed atom would replicate the many substitutions of a recursive
//!   rule: tc on RMAT-1k 2.7× slower.)
//! * **negated**: the distinct keys of the negated patterns' entries (arranged).
//! * **substitutions**: `(key, (rule id, slots))`, with slots a flat array, one fixed
//!   slot per variable (dead variables zeroed). Seeds: every live rule's empty
//!   substitution, run up to its first atom. A rule whose first atom is positive with
//!   no bound column (`tc(x, y)` in `tc(x, z) :- tc(x, y), a(y, z)`) has no seed: the
//!   `distinct`, which meets each fact with the patterns in use, also meets it
//!   with such (pattern, rule) pairs and emits the substitution past the first atom
//!   itself, from a second output. Joining a seed with an index of every matching
//!   fact gave the same substitutions, at the price of that index (tc on 1,000 nodes
//!   × 4,000 random edges: 17% of the time, 8% of the peak memory). Then one join
//!   stage per body position
//!   (unrolled: the stages run within one round, only facts go round the loop): the
//!   substitutions waiting at stage `s` are arranged by key and joined with `index`
//!   (equi-joins on arrangements, never a scan), or antijoined with `negated`.
//!   The join closure binds the matched values, evaluates the following comparisons
//!   and assignments (a division by zero drops the substitution, as in the reference),
//!   and computes the key of the next atom. Substitutions waiting at their rule's last
//!   atom, of every stage, go to one join of their own (module `last_join`), which
//!   emits the head fact directly (a bare row, the narrowest record of the circuit,
//!   which is also its most numerous). It meets them with the entries of the last
//!   atoms' patterns (a pattern used at a last atom has an id of its own, so its
//!   entries go there and not to `index`), and it is not differential's `join_core`
//!   on two arrangements but an operator for the loop's times, as the `distinct` is:
//!   per key, each side's records with their round in a hash table, every earlier
//!   epoch folded in; a record arriving pairs with the other side's records under its
//!   key at the later of the two rounds, then is stored. No sort, no merges, and one
//!   hash lookup per substitution: tc over G(2000, 0.0025) 2.59 → 2.12 s, RhoDF over
//!   LUBM(50) 4.9 → 3.5 s (see docs/benchmarks.md).
//! * **facts**: `F` at round `r` is `distinct(base ∪ heads)`, the heads of the rounds
//!   before `r` (set semantics: a fact with several derivations survives the loss of
//!   one of them). The loop's variable carries the heads to the next round, where
//!   the `distinct` makes the round's facts and meets each change at once with the
//!   patterns in use (above): it was an operator after the loop's feedback, which
//!   kept a history of the facts of its own and a round's facts until the round was
//!   complete, a second copy of the table of facts and a round's facts again (tc over
//!   G(5000, 0.001): 1.73 → 1.47 GB at the peak). The heads go to
//!   their fact's worker, where the `distinct` adds a round's up per fact as they
//!   come: a recursive rule derives most facts many times per round. A time's heads
//!   add up in a table of their own (module `round`); a large time's, past 65,536
//!   facts, move on to the table of facts, as a change waiting beside each fact until
//!   the time is processed (a byte a fact, in one of two lanes: the time being
//!   processed, 2^20 changes per activation so that the joins take each part's records
//!   before the next is sent, and the next time, whose heads come meanwhile). Both take a batch of heads at once and fetch the places of
//!   the head sixteen places ahead while they add the current one, so the cache
//!   misses of a large round overlap (tc over G(5000, 0.001): 15.2 → 12.9 s), and
//!   since no second table holds the round, its peak fell from 2.10 to 1.74 GB.
//!   The `distinct` (module `distinct`) is not differential's (two
//!   arrangements and a `reduce`, general over any lattice of times) but an operator
//!   for the loop's times, whose epochs come one after another and whose rounds are
//!   totally ordered: per fact, a short list of `(round, count change, presence
//!   change)` steps in a hash table, every earlier epoch folded in; one hash lookup per
//!   update, no sorting. The base facts reach `F` once, from the `distinct`, at the
//!   round they enter (a variable started from the base facts would feed them back
//!   retracted and re-derived at round 1: churn for every base fact).
//!
//! The `distinct` has three outputs, the index entries, the direct rules'
//! substitutions and the changes that leave the scope, so that none is a copy of
//! another (timely copies a stream for all but one of the
//! operators that read it; the substitutions of a stage, read by four, go through one
//! operator that sends each to the one that needs it, for the same reason). The
//! changes leave the loop only when something outside reads them: in a cluster, for
//! a copy the handle keeps, or when the caller tracks changes; each worker then
//! collects its changes of the epoch and sends them to the handle.
//!
//! Rows are `[u32; W]` with `W` ∈ {3, 4, 8, 16}, the smallest that holds the widest
//! relation plus its id and the largest slot count; the dataflow is built for `W` and a
//! number of stages (atoms in the longest body, at least [`MIN_STAGES`]). A program change
//! that needs a wider row or more stages **rebuilds the dataflow** (and re-feeds the
//! base facts and rules; the reported changes are still exact); everything else,
//! including a change of the strata, is a change of input.
//!
//! # Threads
//!
//! The timely workers run in background threads (`timely::execute`, one process, `N`
//! workers); the [`Diff`] handle lives on the caller's thread and talks to them over
//! channels (module `runtime`): each commit sends the batch of fact and rule changes,
//! every worker feeds its share, advances its inputs, steps until its probe passes the
//! epoch and replies. The handle keeps the base facts (to give insert and remove set
//! semantics, and to feed them again when the dataflow is rebuilt), per relation as
//! one sorted array searched by bisection, with the changes since in a small hash set
//! beside it (`store::SortedSet`; a load is gathered per relation and sorted once),
//! except those of a relation no rule derives, which are its materialization: in one
//! process without limits, the handle reads them from the workers' tables and keeps
//! no copy (module `base`; on OWL 2 RL over LUBM(50), 84% of the base facts). It
//! answers [`Engine::len`], [`Engine::facts`] and [`Engine::contains`]
//! from the workers' own state (module `mirror`): in one process, every change of a
//! fact is made on the worker of its `distinct`, so that worker's table of
//! facts (a fact is there with its steps, and in the materialization when its presence
//! after its last step is 1) is the worker's share of the materialization, and the
//! handle reads it between commits, under a lock the `distinct` takes per activation
//! (a read lock that a caller may take again inside it: asking whether a fact is
//! there while going through a relation's facts does not block); it keeps no copy. In a cluster the changes are gathered to worker 0, which applies
//! them to a copy of the materialization (per relation a flat hash set of rows) as they
//! leave the loop. When the caller tracks changes ([`Diff::last_changes`]), the
//! workers record them as well (consolidated); in a commit that a limit may refuse, a
//! copy is only updated once the commit is accepted, and a refused commit is rolled
//! back by rebuilding the dataflow (see `Diff::roll_back`). Dropping
//! the handle shuts the workers down and joins them. A failing worker turns into an [`EngineError`], never a panic of the
//! caller.
//!
//! # Several processes
//!
//! With a [`Cluster`], timely connects the processes over TCP and the dataflow spans
//! them. [`Diff::with_cluster`] is for a batch run where every process stages the same
//! changes (each worker of all processes feeds its share). [`Diff::lead`] and
//! [`Diff::follow`] are for live use: process 0 alone stages and feeds every change;
//! the others hold no inputs, so the inputs' frontier is process 0's, and learn the
//! rules process 0 compiles from a broadcast stream of table entries, sent in an epoch
//! of their own before any data that names them (every worker acknowledges to worker
//! 0, whose probe covers the acknowledgements). Changes are gathered to worker 0 in
//! both cases. The dataflow is never rebuilt across processes: [`Diff::lead`] refuses
//! a program that would need it ([`Engine::check_program`]).
//!
//! # Memory
//!
//! [`Engine::memory`] reports every part below, measured (module `memory`); `run
//! --stats`, a session's `size` and `serve`'s `/metrics` print it. Per fact of the
//! materialization, on transitive closure over G(5000, 0.001) (24.7M facts, 2 workers;
//! 44 bytes a fact in all at rest, 61 at the peak):
//!
//! * the `distinct`'s tables, one per relation (module `steps`): a 4-byte slot number
//!   in a hash table, the values cut to the words facts use (not the circuit's width;
//!   the relation is the table's), and the fact's steps varint-encoded in 12 bytes
//!   (27.4 bytes a fact, the slack of the vectors' growth included; a table whose
//!   histories are all short gives them 4 or 8). The same steps
//!   are the facts' history that a pattern added later meets (module `entries`);
//! * per join stage, the arrangement of the substitutions waiting there at an atom
//!   that is not their rule's last; those at a last atom, per key in the last atoms'
//!   join: the rule id, the slots up to the last non-zero one (the dead ones are zero,
//!   and so are the key's values, which the key holds), the round and the
//!   multiplicity (for transitive closure, one per `path` fact: 16.5), with the
//!   entries of the last atoms' patterns beside them;
//! * the handle's base facts of the relations that rules derive (or all, in a
//!   cluster or with limits: module `base`), `4 × arity` bytes a fact once sorted (in a cluster also
//!   its copy of the materialization: per relation a flat hash set of rows, about
//!   `4 × arity` bytes plus the table's slack; in one process the handle reads the
//!   `distinct`'s table instead);
//! * per pattern in use, its index entries (for tc, one per edge).
//!
//! Diffs are `i32` (derivation counts stay far below `i32::MAX`; an update is 4 bytes
//! narrower than with `isize`, about 20% of the peak on transitive closure). Times are
//! `(epoch, round)` pairs of `u32`. The peak, though, is transient, and at scale about
//! one and a half times the state at rest: the head facts derived in one round wait,
//! added up per fact, in the `distinct`'s table until the round completes (head
//! records are bare rows for that reason), a round's new substitutions wait in their
//! arrangement's batcher or the last atoms' join's queue, the messages that carry a
//! round's substitutions leave their buffers to the allocator, and the arrangements'
//! merges hold both inputs until their output is complete. No stream is copied for
//! the operators that read it (see above), and no worker buffers its changes of a
//! commit unless the caller asks for them. Inputs advance every commit and nothing
//! outside the dataflow holds back a trace (the meters' handles release their
//! compaction), so arrangements compact as the frontier advances, also after rule
//! changes; idle workers keep merging (`idle_merge_effort`), from 2 ms after a commit
//! on, never during one (commits back to back are not taxed by the merges of the
//! ones before); the `distinct` forgets a fact whose steps all cancel and shrinks its
//! table when it is mostly empty: memory returns after inserting and deleting the
//! same facts.
//!
//! # Modules
//!
//! Imports between the submodules go one way only (no two import each other), from
//! the wiring down to the vocabulary, as differential-dataflow keeps `difference` and
//! `lattice` as leaves under its operators:
//!
//! ```text
//! mod.rs (the handle) ─→ runtime ─→ dataflow ─→ distinct ─→ entries ─→ step ─→ compile
//!                          │           │          │          │          └──→ types
//!                          │           │          │          └──→ compile, types, memory
//!                          │           │          ├──→ steps ─→ types
//!                          │           │          ├──→ round ─→ types
//!                          │           │          └──→ compile, step, types, memory, mirror
//!                          │           ├──→ last_join ─→ step, compile, types, memory
//!                          │           └──→ entries, step, compile, types, memory
//!                          └──→ compile, types, memory, mirror, liveness, profile
//! ```
//!
//! (`mod.rs` also reads `compile`, `types`, `memory` and `mirror`; `dataflow` writes
//! to `mirror`; `compile` uses the crate's
//! `rules::names` for its printed form, nothing of `diff`; `memory` is a leaf.)
//!
//! * `types`: the vocabulary of the circuit (the `Row` trait and its widths, `Mult`,
//!   the `Inner` time, `Sub`stitutions, the `bucket` hash, `hold_for_outputs` and
//!   `hold_only`, `prefetch`); a leaf.
//! * `compile`: rules as data (`CompiledRule`, `PatternSpec`), the append-only tables
//!   that give them ids (`Registry`, `Shared`) and each worker's cache of them
//!   (`Tables`), and their printed form (`explain`); imports no sibling.
//! * `step`: one step of a substitution through a compiled rule, as the records a join
//!   closure emits.
//! * `distinct` (with its table of facts, `steps`, its table of a round's heads,
//!   `round`, and the patterns in use its facts meet, `entries`), `last_join`: the
//!   hand-written operators; `memory`: the meters of every part.
//! * `dataflow`: only the wiring of the circuit out of those operators and
//!   differential's joins and arrangements.
//! * `runtime`: the worker threads (and processes) that run it; `liveness`, `profile`:
//!   leaves it uses; `mirror`: what the handle reads the materialization from, the
//!   workers' tables or (in a cluster) a copy the workers update.

mod base;
mod compile;
mod dataflow;
mod distinct;
mod entries;
mod last_join;
mod liveness;
mod memory;
mod mirror;
mod profile;
mod round;
mod runtime;
mod step;
mod steps;
mod types;

use crate::staging::Staging;
use crate::store::SortedSet;
use crate::{
    ChangeList, CommitStats, Engine, EngineError, LimitExceeded, Limits, MemoryUsage, StratumStats,
};
use base::BaseSet;
pub(crate) use compile::explain;
use compile::{Registry, Shape};
use dynalog_analysis::{Program, RelId, Value};
use mirror::{Mirror, Mode, net_change};
pub(crate) use runtime::Role;
use runtime::{Batch, Changes, Runtime};
pub use runtime::{Cluster, ConnectHook, bytes_sent};
use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// Join stages the dataflow is built with at least, so that adding a rule with a
/// slightly longer body does not rebuild it.
pub const MIN_STAGES: usize = 3;

/// The default `idle_merge_effort` of the workers' arrangements (see
/// [`Diff::with_idle_merge_effort`]).
pub const IDLE_MERGE_EFFORT: Option<isize> = Some(100);

/// The differential-dataflow engine. See the module documentation.
pub struct Diff {
    program: Program,
    workers: usize,
    idle_merge_effort: Option<isize>,
    registry: Registry,
    /// Level of each relation in the current program (for statistics).
    rel_levels: Vec<u32>,
    /// The rules currently in the `rules` input: id → level.
    sent_rules: FxHashMap<u32, u32>,
    /// Whether the rule set must be compared with `sent_rules` at the next commit.
    rules_dirty: bool,
    /// Base facts per relation (staged changes not applied); before the first commit,
    /// the program's inline facts, not yet fed to the dataflow. Sorted, at the size of
    /// their rows: they only answer whether a change changes them, and are fed again
    /// when the dataflow is rebuilt.
    base: Vec<SortedSet>,
    /// Per relation, whether its base facts are left to the materialization (module
    /// `base`): its set in `base` is then empty.
    mirrored: Vec<bool>,
    /// The materialization per relation, as of the last commit, in one part per worker:
    /// in one process the workers' own tables, in a cluster a copy that the workers
    /// update (module `mirror`).
    mirror: Mirror,
    /// The size of each relation before a commit that a limit may refuse, when the
    /// mirror reads the workers' tables: after a refusal they hold the stopped commit's
    /// state, so the roll-back checks the sizes instead of the facts.
    sizes_before: Option<Vec<usize>>,
    /// What is staged since the last commit.
    staging: Staging,
    last_changes: ChangeList,
    /// Whether commits record `last_changes` ([`Engine::track_changes`]).
    track: bool,
    runtime: Option<Runtime>,
    /// The running commit's changes so far ([`Engine::progress`]), counted by the
    /// workers of every runtime this handle starts.
    progress: Arc<AtomicU64>,
    epoch: u32,
    /// Rounds per level of the last commit.
    rounds: Vec<u32>,
    /// The relation count of the program, when [`Diff::set_program`] dropped relations
    /// at the end: their facts are retracted by the next commit.
    truncate: Option<usize>,
    failed: Option<String>,
    /// Several processes, when running as part of a cluster.
    cluster: Option<Cluster>,
    role: Role,
    /// (rules, patterns) of the tables already sent to the other processes
    /// ([`Role::Leader`]).
    sent_tables: (usize, usize),
    /// Limits of every commit ([`Engine::set_limits`]).
    limits: Limits,
    /// Whether a commit succeeded (before, the base facts are not in the dataflow).
    committed: bool,
}

/// Refuse a program with string functors, or rules that build or take apart records,
/// in a cluster: the symbols and records they make are interned in one process's
/// table, and the processes' tables would disagree.
fn no_tables_in_cluster(program: &Program) -> Result<(), String> {
    match program.rules.iter().find(|r| r.uses_table()) {
        Some(rule) => Err(format!(
            "string functors (`cat`, `strlen`, `substr`, `ord`, `to_string`, `contains`, \
             `match`, conversions of symbols), `autoinc()` and rules that build or take apart \
             records need a single process (-n 1): each process has its own symbol and record \
             table. In: {}",
            rule.text
        )),
        None => Ok(()),
    }
}

impl Diff {
    /// [`Diff::new`] as one process of a cluster: every process runs the same program
    /// and stages the same changes in the same order; each base fact is fed by the one
    /// worker (of all processes) that owns it, so nothing is counted twice, and the
    /// changes are gathered to the first worker: only process 0's [`Engine::len`],
    /// [`Engine::facts`] and [`Diff::last_changes`] describe the materialization (the
    /// others' are empty). Fails if the peers do not all connect within the cluster's
    /// timeout.
    pub fn with_cluster(
        program: Program,
        workers: usize,
        cluster: Cluster,
    ) -> Result<Diff, EngineError> {
        Diff::build(
            program,
            workers,
            IDLE_MERGE_EFFORT,
            Some(cluster),
            Role::Replicated,
        )
    }

    /// [`Diff::new`] as process 0 of a cluster whose other processes run
    /// [`Diff::follow`]: this handle alone stages changes, its workers feed all of them
    /// into the dataflow (the exchange routes each to its owner), and the compiled rules
    /// go to the other processes through the dataflow, so they need neither the facts
    /// nor the rule changes. The changes are gathered here: [`Engine::facts`],
    /// [`Engine::len`] and [`Diff::last_changes`] describe the whole materialization.
    ///
    /// The dataflow cannot be rebuilt across processes: a rule change that needs a
    /// wider row or more join stages than the program it started with is refused
    /// ([`Engine::check_program`]).
    pub fn lead(program: Program, workers: usize, cluster: Cluster) -> Result<Diff, EngineError> {
        Diff::build(
            program,
            workers,
            IDLE_MERGE_EFFORT,
            Some(cluster),
            Role::Leader,
        )
    }

    /// Join a cluster led by process 0's [`Diff::lead`] as one of the other processes.
    /// `program` must be the program process 0 started with (it decides the shape of
    /// the dataflow); its facts and rules are not used. Returns once connected; call
    /// [`Follower::wait`] to run until process 0 shuts the cluster down.
    pub fn follow(
        program: &Program,
        workers: usize,
        cluster: Cluster,
    ) -> Result<Follower, EngineError> {
        let shape = compile::shape(program);
        let registry = Registry::default();
        // Its workers receive no output (process 0 gathers it): an empty copy.
        let mirror = Mirror::new(workers.max(1), std::iter::empty());
        let runtime = start_runtime(
            shape,
            workers.max(1),
            registry.shared.clone(),
            IDLE_MERGE_EFFORT,
            Some(&cluster),
            Role::Follower,
            &mirror,
            Arc::default(),
        )
        .map_err(EngineError::Failed)?;
        Ok(Follower { runtime })
    }

    /// Create the engine for `program`, with `workers` timely worker threads (at least
    /// one). The program's inline facts are its first base facts: the first
    /// [`Engine::commit`] materializes them. Fails if the workers cannot be started.
    pub fn new(program: Program, workers: usize) -> Result<Diff, EngineError> {
        Diff::with_idle_merge_effort(program, workers, IDLE_MERGE_EFFORT)
    }

    /// [`Diff::new`] with the merge effort an idle arrangement spends per scheduling
    /// (differential dataflow's `idle_merge_effort`; `None`: merge only as updates
    /// arrive). With an effort, arrangements keep merging after a commit until each is
    /// one batch, so memory returns after inserting and deleting the same facts even
    /// when no further updates come. The merging runs only while a worker is idle, from
    /// 2 ms after a commit on: commits back to back do not pay for it (before that
    /// rule, tc/RMAT-1k one-fact commits took 2.5 ms and more with the default effort
    /// of 100, 1.8 ms without merging; now 1.8 ms with it, in `diff_bench`, after a few
    /// larger commits: straight after a load, whose merges back-to-back commits leave
    /// undone, the benchmark harness measures 2.2–2.7 ms).
    pub fn with_idle_merge_effort(
        program: Program,
        workers: usize,
        idle_merge_effort: Option<isize>,
    ) -> Result<Diff, EngineError> {
        Diff::build(program, workers, idle_merge_effort, None, Role::Alone)
    }

    fn build(
        program: Program,
        workers: usize,
        idle_merge_effort: Option<isize>,
        cluster: Option<Cluster>,
        role: Role,
    ) -> Result<Diff, EngineError> {
        if cluster.is_some() {
            no_tables_in_cluster(&program).map_err(EngineError::Unsupported)?;
        }
        let mut diff = Diff {
            program: Program {
                aggregates: Vec::new(),
                relations: Vec::new(),
                rules: Vec::new(),
                facts: Vec::new(),
                strata: Vec::new(),
                symbols: program.symbols.clone(),
                warnings: Vec::new(),
            },
            workers: workers.max(1),
            idle_merge_effort,
            registry: Registry::default(),
            rel_levels: Vec::new(),
            sent_rules: FxHashMap::default(),
            rules_dirty: true,
            base: Vec::new(),
            mirrored: Vec::new(),
            mirror: Mirror::new(workers.max(1), std::iter::empty()),
            sizes_before: None,
            staging: Staging::default(),
            last_changes: ChangeList::new(),
            track: false,
            runtime: None,
            progress: Arc::default(),
            epoch: 0,
            rounds: Vec::new(),
            truncate: None,
            failed: None,
            cluster,
            role,
            sent_tables: (0, 0),
            limits: Limits::NONE,
            committed: false,
        };
        diff.set_program(program);
        // The inline facts are the first base facts, not a change to abort.
        let live = diff.program.relations.len();
        diff.staging
            .apply(&mut diff.base, live, false, |_, _, _| {});
        diff.staging.finish();
        let shape = compile::shape(&diff.program);
        diff.runtime = Some(
            diff.start(shape, &diff.mirror)
                .map_err(EngineError::Failed)?,
        );
        Ok(diff)
    }

    /// Stage a change of the rule set: `program` is a re-analysed program that extends
    /// the current one (the same relations at the same ids, maybe more appended; its
    /// symbol table a superset of the current one); its rules and strata may differ.
    /// At the next commit, rules that are new are inserted into the `rules` input and
    /// rules that are gone are removed, without rebuilding the dataflow (unless the new
    /// rules need a wider row or more join stages than it was built for: see the module
    /// docs). Inline facts of the new program that the old one did not have are staged
    /// for insertion, and those it dropped for removal.
    ///
    /// The new program may also have fewer relations, dropped at the end (in the
    /// study's syntax, relations are implicit: removing the only rule of a relation
    /// removes the relation); the facts of the dropped relations are retracted.
    /// A program that changes a relation it keeps (renamed, or other column types) is
    /// rejected: the next commit returns an error and the engine keeps its program.
    pub fn set_program(&mut self, program: Program) {
        if !self.staging.open_program(&self.program, &program) {
            return;
        }
        if program.relations.len() < self.program.relations.len() {
            let n = program.relations.len();
            self.truncate = Some(self.truncate.map_or(n, |t| t.min(n)));
        }
        self.program = program;
        while self.base.len() < self.program.relations.len() {
            let arity = self.program.relations[self.base.len()].arity();
            self.base.push(SortedSet::new(arity));
            self.mirrored.push(false);
            self.mirror.push_relation(arity);
        }
        self.rules_dirty = true;
    }

    /// Go back to the program and base facts of the last commit; nothing is staged.
    fn discard(&mut self) {
        if let Some(program) = self.staging.discard() {
            let n = program.relations.len();
            self.program = program;
            self.base.truncate(n);
            self.mirrored.truncate(n);
            self.mirror.truncate(n);
            self.rules_dirty = true;
        }
        self.truncate = None;
    }

    /// The changes (`+1` inserted, `-1` deleted, one entry per fact) of every relation
    /// made by the last commit, in no particular order; empty unless the engine tracks
    /// changes ([`Engine::track_changes`]: 16 bytes per change besides its values, so
    /// a batch load that does not need them does not pay for them).
    pub fn last_changes(&self) -> &ChangeList {
        &self.last_changes
    }

    /// Whether a fact is in the materialization (as of the last commit).
    pub fn contains(&self, relation: RelId, tuple: &[Value]) -> bool {
        self.mirror.contains(relation as usize, tuple)
    }

    /// Start workers that keep `mirror`.
    fn start(&self, shape: Shape, mirror: &Mirror) -> Result<Runtime, String> {
        start_runtime(
            shape,
            self.workers,
            self.registry.shared.clone(),
            self.idle_merge_effort,
            self.cluster.as_ref(),
            self.role,
            mirror,
            self.progress.clone(),
        )
    }

    /// Why the running dataflow cannot take `program` without a rebuild, which a
    /// cluster led by this process cannot do.
    fn check_fits(&self, program: &Program) -> Result<(), String> {
        if self.cluster.is_some() {
            no_tables_in_cluster(program)?;
        }
        let (Role::Leader, Some(rt)) = (self.role, &self.runtime) else {
            return Ok(());
        };
        let shape = compile::shape(program);
        if shape.width > rt.width || shape.stages > rt.stages {
            return Err(format!(
                "in a cluster the dataflow cannot be rebuilt, and this program needs rows of \
                 {} values and {} join stages where it was built for {} and {}: restart the \
                 cluster with the new program",
                shape.width, shape.stages, rt.width, rt.stages
            ));
        }
        Ok(())
    }

    /// Per relation (of `base`), whether its base facts may be left to the
    /// materialization after the next commit (module `base`): in one process, without
    /// limits (`limited`), for a relation of the program that no rule derives.
    fn mirrorable(&self, limited: bool) -> Vec<bool> {
        let mut m = vec![false; self.base.len()];
        if self.role == Role::Alone && self.cluster.is_none() && !limited {
            let live = self.truncate.unwrap_or(usize::MAX);
            for (rel, u) in base::underived(&self.program).into_iter().enumerate() {
                if rel < live
                    && let Some(m) = m.get_mut(rel)
                {
                    *m = u;
                }
            }
        }
        m
    }

    fn stage(&mut self, insert: bool, relation: RelId, tuple: &[Value]) {
        let arity = self
            .program
            .relations
            .get(relation as usize)
            .map(|r| r.arity());
        self.staging.stage(insert, relation, tuple, arity);
    }

    /// Compile the current rules; (rule id, level) for each.
    fn rule_ids(&mut self) -> Result<FxHashMap<u32, u32>, String> {
        let levels = compile::levels(&self.program);
        let mut rel_levels = vec![0; self.program.relations.len()];
        let mut want = FxHashMap::default();
        let mut tags = FxHashMap::default();
        for agg in &self.program.aggregates {
            let arity = self.program.relation(agg.source).arity();
            tags.insert(agg.source, compile::agg_tag(agg, arity)?);
        }
        for (rule, &level) in self.program.rules.iter().zip(&levels) {
            let tag = tags.get(&rule.head.relation).copied();
            let id = self
                .registry
                .rule_id(rule, level, tag, &self.program.symbols)?;
            want.insert(id, level);
            if let Some(l) = rel_levels.get_mut(rule.head.relation as usize) {
                *l = level;
            }
        }
        self.rel_levels = rel_levels;
        Ok(want)
    }

    /// Apply the staged changes. `Ok(Some(limit))` when a limit stopped the workers:
    /// the base facts and the rules sent are then as before the commit, but the
    /// dataflow is mid-commit (see [`Diff::roll_back`]).
    fn commit_inner(
        &mut self,
        limits: Limits,
        started: Instant,
    ) -> Result<Option<LimitExceeded>, String> {
        // Rules: compile, and decide whether the dataflow still fits.
        let want = if self.rules_dirty {
            Some(self.rule_ids()?)
        } else {
            None
        };
        let shape = compile::shape(&self.program);
        let rebuild = match &self.runtime {
            Some(rt) => shape.width > rt.width || shape.stages > rt.stages,
            None => true,
        };
        if rebuild && self.role != Role::Alone {
            self.check_fits(&self.program)?;
            return Err("in a cluster the dataflow cannot be rebuilt".into());
        }
        if self.role == Role::Leader {
            // New compiled rules and patterns reach every process before any data that
            // names them: an epoch of their own, which every worker acknowledges.
            let tables = self
                .registry
                .shared
                .entries_from(self.sent_tables.0, self.sent_tables.1);
            if !tables.is_empty() {
                let Some(rt) = self.runtime.as_mut() else {
                    return Err("the differential engine has no workers".into());
                };
                rt.commit(Arc::new(Batch {
                    epoch: self.epoch,
                    tables,
                    ..Batch::default()
                }))?;
                self.epoch += 1;
                self.sent_tables = self.registry.shared.sizes();
            }
        }
        let limited = !limits.is_none();
        // Which relations may leave their base facts to the materialization after this
        // commit; the mirrored ones that may not, or that a rebuild feeds again, get
        // their copy back first.
        let mirrorable = self.mirrorable(limited);
        let mirror = &self.mirror;
        let sets = self.base.iter_mut().zip(&mut self.mirrored);
        for (rel, ((set, mirrored), &keep)) in sets.zip(&mirrorable).enumerate() {
            if *mirrored && (rebuild || !keep) {
                *set = base::realize(mirror, rel, set.arity());
                *mirrored = false;
            }
        }
        self.sizes_before = (limited && self.mirror.shares_tables()).then(|| self.mirror.sizes());
        // What a refused commit must restore: the rules sent, and the base facts (a
        // rebuild sends them all, not their changes, so they are copied).
        let saved_rules = limited.then(|| self.sent_rules.clone());
        // The first commit and a rebuild feed every base fact, the others the changes.
        let feed_all = rebuild || !self.committed;
        let saved_base = (limited && feed_all).then(|| self.base.clone());
        // A rebuilt dataflow fills a new copy of the materialization, which replaces the
        // old one if the commit succeeds.
        let mut fresh = None;
        if rebuild {
            // Stop the old workers first (drop joins them), then start anew.
            self.runtime = None;
            let arities = self.program.relations.iter().map(|r| r.arity());
            let mirror = Mirror::new(self.workers, arities);
            self.runtime = Some(self.start(shape, &mirror)?);
            fresh = Some(mirror);
            self.sent_rules.clear();
        }
        // The workers apply the changes to the copy as they come, unless a limit may
        // refuse the commit: then they record them, and they are applied below once
        // it is accepted. Recorded as well when the caller wants them.
        let mode = if rebuild {
            Mode {
                apply: true,
                record: false,
            }
        } else {
            Mode {
                apply: !limited,
                record: limited || self.track,
            }
        };
        let width = self.runtime.as_ref().map_or(4, |rt| rt.width);
        let mut batch = Batch {
            epoch: self.epoch,
            max_changes: limits.max_changes,
            deadline: limits.max_time.map(|t| started + t),
            mode,
            ..Batch::default()
        };
        if let Some(want) = want {
            for (&id, &level) in &want {
                if !self.sent_rules.contains_key(&id) {
                    batch.rules.push((level, id, 1));
                }
            }
            for (&id, &level) in &self.sent_rules {
                if !want.contains_key(&id) {
                    batch.rules.push((level, id, -1));
                }
            }
            self.sent_rules = want;
            self.rules_dirty = false;
        } else if rebuild {
            batch
                .rules
                .extend(self.sent_rules.iter().map(|(&id, &level)| (level, id, 1)));
        }
        // Facts: apply the staged changes to the base facts, in order.
        let push = |batch: &mut Batch, rel: RelId, tuple: &[Value], diff: isize| {
            batch.facts.push(rel);
            batch.facts.extend_from_slice(tuple);
            batch
                .facts
                .extend(std::iter::repeat_n(0, width - 1 - tuple.len()));
            batch.fact_diffs.push(diff);
        };
        if let Some(n) = self.truncate
            && !feed_all
        {
            for rel in n..self.base.len() {
                for tuple in self.base[rel].iter() {
                    push(&mut batch, rel as RelId, tuple, -1);
                }
            }
        }
        if let Some(n) = self.truncate {
            let len = self.base.len();
            for set in &mut self.base[n.min(len)..] {
                *set = SortedSet::new(set.arity());
            }
        }
        let live = self.program.relations.len();
        let held: usize = self.base.iter().map(SortedSet::len).sum();
        match self.staging.only_inserts() {
            // A load (every base fact is fed anyway): the staged rows of each relation
            // are sorted with its base facts, once, without hashing them.
            Some(n) if feed_all && n >= held => self.load_staged(live),
            _ => {
                // The mirrored relations' changes are checked against the
                // materialization.
                let mirror = &self.mirror;
                let mut sets: Vec<BaseSet> = (self.base.iter_mut().zip(&self.mirrored))
                    .enumerate()
                    .map(|(rel, (set, &mirrored))| {
                        let arity = set.arity();
                        match mirrored {
                            true => BaseSet::mirrored(mirror, rel, arity),
                            false => BaseSet::Held(std::mem::replace(set, SortedSet::new(arity))),
                        }
                    })
                    .collect();
                self.staging
                    .apply(&mut sets, live, false, |insert, rel, tuple| {
                        if !feed_all {
                            push(&mut batch, rel, tuple, if insert { 1 } else { -1 });
                        }
                    });
                for (set, held) in self.base.iter_mut().zip(sets) {
                    if let Some(held) = held.into_held() {
                        *set = held;
                    }
                }
                // An update waits until its changes are an eighth of its relation's
                // base facts.
                self.base.iter_mut().for_each(SortedSet::settle);
            }
        }
        if feed_all {
            for (rel, set) in self.base.iter().enumerate() {
                for tuple in set.iter() {
                    push(&mut batch, rel as RelId, tuple, 1);
                }
            }
        }
        // The base facts the materialization will hold: no copy from now on (before
        // the workers run, so that a load's peak is without it).
        for (rel, &m) in mirrorable.iter().enumerate() {
            if m && !self.mirrored[rel] {
                self.base[rel] = SortedSet::new(self.base[rel].arity());
                self.mirrored[rel] = true;
            }
        }
        if !rebuild && batch.rules.is_empty() && batch.fact_diffs.is_empty() {
            // Nothing changes: no epoch needed.
            self.last_changes.clear();
            self.finish_truncate();
            return Ok(None);
        }
        let Some(rt) = self.runtime.as_mut() else {
            return Err("the differential engine has no workers".into());
        };
        let batch = Arc::new(batch);
        // Kept only to undo a refused commit: otherwise freed as soon as the workers
        // have fed it.
        let kept = limited.then(|| batch.clone());
        let mut out = rt.commit(batch)?;
        if out.aborted == 0
            && let Some(e) = fresh.as_ref().unwrap_or(&self.mirror).take_error()
        {
            return Err(e);
        }
        // A rebuilt dataflow counted the facts of the new materialization, not the
        // change from the old one (whose deletions it never saw): count that here.
        if let Some(fresh) = &fresh
            && out.aborted == 0
            && let Some(max) = limits.max_changes
            && self.committed
            && net_change(&self.mirror, fresh) > max
        {
            out.aborted = 1;
        }
        if out.aborted != 0 {
            // Put the base facts and the rules sent back as they were.
            if let Some(base) = saved_base {
                self.base = base;
            } else if let Some(batch) = &kept {
                for (i, &d) in batch.fact_diffs.iter().enumerate().rev() {
                    let row = &batch.facts[i * width..(i + 1) * width];
                    let rel = row[0] as usize;
                    if let Some(set) = self.base.get_mut(rel) {
                        let tuple = &row[1..1 + set.arity()];
                        if d > 0 {
                            set.remove(tuple);
                        } else {
                            set.insert(tuple);
                        }
                    }
                }
            }
            if let Some(rules) = saved_rules {
                self.sent_rules = rules;
            }
            return Ok(Some(if out.aborted == 1 {
                LimitExceeded::Changes(limits.max_changes.unwrap_or(0))
            } else {
                LimitExceeded::Time(limits.max_time.unwrap_or_default())
            }));
        }
        self.epoch += 1;
        self.rounds = out.rounds;
        match fresh {
            Some(fresh) => self.replace_mirror(fresh),
            // The workers' tables already hold the changes: only a copy applies them.
            None if mode.apply || self.mirror.shares_tables() => self.record(out.changes)?,
            None => self.apply(out.changes)?,
        }
        Ok(None)
    }

    /// After a commit stopped by a limit: go back to the program before it, drop the
    /// dataflow (stopped mid-commit) and build it again from that program's rules and
    /// the base facts before the commit. A mirror that is a copy was not touched: the
    /// rebuilt dataflow's output must equal it. A mirror that reads the workers' tables
    /// read the stopped commit's state: it starts empty, and the rebuilt dataflow's
    /// relations must have the sizes they had before the commit.
    fn roll_back(&mut self) -> Result<(), String> {
        self.runtime = None;
        let sizes = self.sizes_before.take();
        let shared = self.mirror.shares_tables();
        if shared {
            self.mirror = Mirror::new(self.workers, self.mirror.arities().into_iter());
        }
        self.discard();
        self.rules_dirty = true;
        if !self.committed {
            // Nothing to rebuild: the next commit starts the dataflow from the base
            // facts.
            return Ok(());
        }
        let started = Instant::now();
        // Against an empty mirror every fact would count as a change.
        let track = self.track;
        self.track = track && !shared;
        let rebuilt = self.commit_inner(Limits::NONE, started);
        self.track = track;
        rebuilt?;
        if let Some(sizes) = sizes {
            for (rel, &before) in sizes.iter().enumerate() {
                let after = self.mirror.len(rel);
                if rel < self.program.relations.len() && after != before {
                    return Err(format!(
                        "rolling back a refused commit changed the size of `{}` from {before} \
                         to {after}",
                        self.program.relations[rel].name
                    ));
                }
            }
        } else if !self.last_changes.is_empty() {
            return Err(format!(
                "rolling back a refused commit changed {} facts",
                self.last_changes.len()
            ));
        }
        Ok(())
    }

    /// After a rebuild: the new materialization replaces the mirror; the changes are
    /// the difference of the two.
    fn replace_mirror(&mut self, fresh: Mirror) {
        self.last_changes.clear();
        if self.track {
            let changes = &mut self.last_changes;
            self.mirror
                .missing_from(&fresh, &mut |rel, t| changes.push(rel as RelId, t, -1));
            fresh.missing_from(&self.mirror, &mut |rel, t| changes.push(rel as RelId, t, 1));
        }
        self.mirror = fresh;
        self.finish_truncate();
    }

    /// Apply the workers' recorded changes (of an incremental commit that a limit
    /// could have refused) to the copy, each to its worker's part.
    fn apply(&mut self, changes: Vec<(usize, Box<dyn Changes>)>) -> Result<(), String> {
        // Consolidated by the workers (see `runtime::Output`): one change per fact. A
        // fact changed twice would fail the checks of `Mirror::change`, never pass
        // silently. Each worker's changes are freed once applied.
        for (part, worker) in &changes {
            for i in 0..worker.len() {
                self.mirror.change(*part, worker.row(i), worker.diff(i))?;
            }
        }
        self.record(changes)
    }

    /// The last commit's changes, from the workers' records (already applied to the
    /// copy), if the caller tracks them.
    fn record(&mut self, changes: Vec<(usize, Box<dyn Changes>)>) -> Result<(), String> {
        self.last_changes.clear();
        if self.track {
            let arities = self.mirror.arities();
            for (_, worker) in changes {
                for i in 0..worker.len() {
                    let r = worker.row(i);
                    let rel = r[0] as usize;
                    let Some(tuple) = arities.get(rel).and_then(|&a| r.get(1..1 + a)) else {
                        return Err(format!("output of unknown relation {rel}"));
                    };
                    self.last_changes.push(rel as RelId, tuple, worker.diff(i));
                }
            }
        }
        self.finish_truncate();
        Ok(())
    }
}

impl Diff {
    /// Apply the staged changes, all of them insertions, to the base facts of the
    /// relations below `live` (of the right arity, as [`Staging::apply`] does): per
    /// relation, its staged rows are gathered in one exactly sized vector and sorted
    /// with its base facts ([`SortedSet::load`]).
    fn load_staged(&mut self, live: usize) {
        let base = &self.base;
        let fits = |rel: RelId, tuple: &[Value]| {
            base.get(rel as usize)
                .filter(|s| (rel as usize) < live && s.arity() == tuple.len())
                .is_some()
        };
        let mut sizes = vec![0usize; base.len()];
        let mut nullary = vec![false; base.len()];
        self.staging.for_each(&mut |_, rel, tuple| {
            if fits(rel, tuple) {
                sizes[rel as usize] += tuple.len();
                nullary[rel as usize] |= tuple.is_empty();
            }
        });
        let mut rows: Vec<Vec<u32>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
        self.staging.for_each(&mut |_, rel, tuple| {
            if fits(rel, tuple) {
                rows[rel as usize].extend_from_slice(tuple);
            }
        });
        self.staging.applied();
        for ((set, rows), nullary) in self.base.iter_mut().zip(rows).zip(nullary) {
            if nullary {
                set.insert(&[]);
            }
            set.load(rows);
        }
    }

    /// After the commit that retracted them, forget the relations a program dropped.
    fn finish_truncate(&mut self) {
        if let Some(n) = self.truncate.take() {
            self.base.truncate(n);
            self.mirrored.truncate(n);
            self.mirror.truncate(n);
        }
    }
}

impl Engine for Diff {
    fn name(&self) -> &'static str {
        "diff"
    }

    fn program(&self) -> &Program {
        &self.program
    }

    fn insert(&mut self, relation: RelId, tuple: &[Value]) {
        self.stage(true, relation, tuple);
    }

    fn remove(&mut self, relation: RelId, tuple: &[Value]) {
        self.stage(false, relation, tuple);
    }

    fn set_program(&mut self, program: Program) {
        Diff::set_program(self, program)
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

    fn check_program(&self, program: &Program) -> Result<(), EngineError> {
        crate::check_extends(&self.program, program)?;
        self.check_fits(program)
            .map_err(EngineError::ProgramRejected)
    }

    fn set_limits(&mut self, limits: Limits) -> Result<(), EngineError> {
        if self.role != Role::Alone && !limits.is_none() {
            return Err(EngineError::Unsupported(
                "limits per commit are not supported with several processes (-n > 1): a \
                 refused commit is rolled back by rebuilding the dataflow, which a cluster \
                 cannot do"
                    .into(),
            ));
        }
        self.limits = limits;
        Ok(())
    }

    fn failed(&self) -> Option<String> {
        self.failed
            .clone()
            .or_else(|| self.runtime.as_ref().and_then(|rt| rt.failure()))
    }

    /// Changes of presence that left the loop (base facts included); in a cluster,
    /// those of this process's workers.
    fn progress(&self) -> Option<Arc<AtomicU64>> {
        Some(self.progress.clone())
    }

    fn track_changes(&mut self, on: bool) {
        self.track = on;
        if !on {
            self.last_changes = ChangeList::new();
        }
    }

    fn last_changes(&self) -> &ChangeList {
        &self.last_changes
    }

    fn take_changes(&mut self) -> ChangeList {
        std::mem::take(&mut self.last_changes)
    }

    /// The workers' parts (summed over this process's workers; in a cluster, the other
    /// processes' are theirs), then the handle's: the base facts, the copy of the
    /// materialization (in a cluster; in one process the handle reads the workers'
    /// tables) and the last commit's changes.
    fn memory(&mut self) -> Option<MemoryUsage> {
        let mut usage = MemoryUsage::default();
        if let Some(runtime) = self.runtime.as_mut() {
            runtime.memory(&mut usage).ok()?;
        }
        let records = self.base.iter().map(|s| s.len() as u64).sum();
        let bytes = self.base.iter().map(SortedSet::heap_bytes).sum::<u64>()
            + memory::vec_bytes(&self.base);
        usage.add("base facts (handle)", records, bytes);
        if !self.mirror.shares_tables() {
            let (records, bytes) = self.mirror.usage();
            usage.add("materialization (handle)", records, bytes);
        }
        let changes = self.last_changes.len() as u64;
        let bytes = self.last_changes.bytes() as u64;
        usage.add("last commit's changes (handle)", changes, bytes);
        Some(usage)
    }

    fn contains(&self, relation: RelId, tuple: &[Value]) -> bool {
        Diff::contains(self, relation, tuple)
    }

    fn is_base(&self, relation: RelId, tuple: &[Value]) -> bool {
        let rel = relation as usize;
        match self.mirrored.get(rel) {
            Some(true) => self.mirror.contains(rel, tuple),
            _ => self.base.get(rel).is_some_and(|s| s.contains(tuple)),
        }
    }

    fn commit(&mut self) -> Result<CommitStats, EngineError> {
        let start = Instant::now();
        self.progress.store(0, std::sync::atomic::Ordering::Relaxed);
        if let Some(msg) = Engine::failed(self) {
            self.failed = Some(msg.clone());
            return Err(EngineError::Failed(msg));
        }
        if let Some(e) = self.staging.take_rejected() {
            return Err(e);
        }
        // Transaction 0 builds the dataflow: a limit would have nothing to roll back to
        // but an empty one, which is just as exact.
        match self.commit_inner(self.limits, start) {
            Ok(None) => {}
            Ok(Some(limit)) => {
                if let Err(msg) = self.roll_back() {
                    let msg = format!("{msg} (after a refused commit: {limit})");
                    self.failed = Some(msg.clone());
                    return Err(EngineError::Failed(msg));
                }
                return Err(EngineError::LimitExceeded(limit));
            }
            Err(msg) => {
                self.failed = Some(msg.clone());
                return Err(EngineError::Failed(msg));
            }
        }
        self.staging.finish();
        self.committed = true;
        let elapsed = start.elapsed();
        let levels = self.rel_levels.iter().copied().max().map_or(1, |l| l + 1);
        let strata = (0..levels)
            .map(|level| {
                let rels: Vec<usize> = (0..self.program.relations.len())
                    .filter(|&r| self.rel_levels.get(r).copied().unwrap_or(0) == level)
                    .collect();
                StratumStats {
                    relations: rels
                        .iter()
                        .map(|&r| self.program.relations[r].name.clone())
                        .collect(),
                    iterations: self.rounds.get(level as usize).copied().unwrap_or(0) as usize,
                    facts: rels.iter().map(|&r| self.mirror.len(r)).sum(),
                    elapsed: if level == 0 {
                        elapsed
                    } else {
                        Default::default()
                    },
                }
            })
            .collect();
        Ok(CommitStats {
            strata,
            elapsed,
            ..CommitStats::default()
        })
    }

    fn len(&self, relation: RelId) -> usize {
        self.mirror.len(relation as usize)
    }

    fn facts(&self, relation: RelId) -> Vec<Vec<Value>> {
        let mut facts = Vec::with_capacity(self.len(relation));
        self.mirror
            .for_each(relation as usize, &mut |t| facts.push(t.to_vec()));
        facts
    }

    /// Straight from the mirror's flat rows: a vector per fact, as [`Engine::facts`]
    /// makes, was the peak of writing a large output (tc-gnp5000: 24.7M vectors, about
    /// 1 GB, on top of the materialization).
    fn for_each_fact(&self, relation: RelId, f: &mut dyn FnMut(&[Value])) {
        self.mirror.for_each(relation as usize, f);
    }
}

/// Start the workers for a dataflow of `shape`.
#[allow(clippy::too_many_arguments)]
fn start_runtime(
    shape: Shape,
    workers: usize,
    shared: std::sync::Arc<compile::Shared>,
    idle_merge_effort: Option<isize>,
    cluster: Option<&Cluster>,
    role: Role,
    mirror: &Mirror,
    progress: Arc<AtomicU64>,
) -> Result<Runtime, String> {
    let Some(&width) = types::WIDTHS.iter().find(|&&w| w >= shape.width) else {
        return Err(format!(
            "the differential engine supports at most {} columns and variables per rule \
             (this program needs {})",
            types::WIDTHS[types::WIDTHS.len() - 1] - 1,
            shape.width
        ));
    };
    Runtime::start(
        workers,
        width,
        shape.stages.max(MIN_STAGES),
        shared,
        idle_merge_effort,
        cluster,
        role,
        mirror.parts(),
        progress,
    )
}

/// A process of a cluster led by another process's [`Diff::lead`] (see
/// [`Diff::follow`]): its workers hold part of the materialization and do their share
/// of every commit process 0 makes.
pub struct Follower {
    runtime: Runtime,
}

impl Follower {
    /// Run until process 0 shuts the cluster down (its handle is dropped). An error if
    /// a worker of this process failed; a lost connection to another process ends the
    /// process through timely's own panic, as in [`Diff::with_cluster`].
    pub fn wait(mut self) -> Result<(), EngineError> {
        self.runtime.wait().map_err(EngineError::Failed)
    }
}
