//! The timely workers behind a [`super::Diff`] handle: background threads that own the
//! dataflow, and the channels between them and the handle.
//!
//! Protocol: for each commit the handle sends every worker the same [`Batch`] (fact and
//! rule changes) and unparks it; each worker feeds its share (facts `i` with
//! `i % peers == index`, rules on worker 0 only), advances its inputs to the next
//! epoch, steps until the probe passes it (applying the changes of the materialization
//! that reach it to its part of the handle's copy as they come, module `mirror`), and
//! replies with its rounds, and the changes if the commit records them. Between commits a worker keeps
//! stepping while its arrangements have merge work to do (`idle_merge_effort`), then
//! parks until the handle unparks it.

use super::compile::{Shared, TableEntry, Tables};
use super::dataflow::build;
use super::memory::Usage;
use super::mirror::{Mode, SharedPart, lock};
use super::types::{Mult, Row};
use crate::MemoryUsage;
use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
use differential_dataflow::consolidation::consolidate;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::thread::Thread;
use std::time::{Duration, Instant};
use timely::communication::WorkerGuards;
use timely::worker::Worker;

/// The changes of one commit, shared by all workers.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The epoch the changes happen at (inputs advance to `epoch + 1`).
    pub epoch: u32,
    /// Fact rows of the runtime's width: `[rel, values.., 0..]`.
    pub facts: Vec<u32>,
    pub fact_diffs: Vec<isize>,
    /// `(level, rule id, diff)`.
    pub rules: Vec<(u32, u32, isize)>,
    /// Table entries for the other processes of a cluster ([`Role::Leader`] only; a
    /// batch that has them has nothing else).
    pub tables: Vec<TableEntry>,
    /// Limits of the commit: stop when more changes than this leave the loop...
    pub max_changes: Option<u64>,
    /// ... or at this time (the workers then reply [`Reply::Aborted`]; the dataflow is
    /// left mid-commit and must be dropped).
    pub deadline: Option<Instant>,
    /// What the workers do with the changes that leave the loop.
    pub mode: Mode,
}

/// What the workers of a process share about the commit in progress.
#[derive(Debug)]
pub(crate) struct Control {
    /// Changes of presence that left the loop since the commit began: the handle's
    /// counter ([`crate::Engine::progress`]), shared by every runtime it starts.
    pub changes: Arc<AtomicU64>,
    /// 0: running; 1: too many changes; 2: too late (see [`Batch::max_changes`]).
    pub stop: AtomicU8,
}

/// How the workers of this process take part in the dataflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// One process: worker `i` feeds facts `j` with `j % workers == i`.
    Alone,
    /// One of several processes that all stage the same changes (a batch `run`): each
    /// worker, of all processes, feeds its share.
    Replicated,
    /// Process 0 of a cluster whose other processes follow it: its workers feed every
    /// change (facts `j` with `j % local workers == local index`), and its worker 0
    /// sends the rule tables to the others through the dataflow.
    Leader,
    /// Another process of such a cluster: its workers feed nothing and hold no input;
    /// they run the dataflow until process 0 closes it.
    Follower,
}

/// One worker's changes of a commit, as it collected them: rows of the runtime's width
/// (`[rel, values.., 0..]`) and their diffs. Handed over as they are, without a copy
/// into another layout: at the end of a load that copy was the peak of the process.
pub(crate) trait Changes: Send {
    fn len(&self) -> usize;
    /// The row of change `i`.
    fn row(&self, i: usize) -> &[u32];
    fn diff(&self, i: usize) -> isize;
}

impl<R: Row> Changes for Vec<(R, Mult)> {
    fn len(&self) -> usize {
        Vec::len(self)
    }

    fn row(&self, i: usize) -> &[u32] {
        self[i].0.as_ref()
    }

    fn diff(&self, i: usize) -> isize {
        self[i].1 as isize
    }
}

/// What the workers produced for one commit.
#[derive(Default)]
pub(crate) struct Output {
    /// Each worker's changes, when the commit records them ([`Mode::record`]), with
    /// the worker's local index (its part of the copy). Each worker consolidates its
    /// own, and every change of a fact reaches one worker (the one its `distinct` runs
    /// on, or worker 0 when the output is gathered), so each row appears once, with a
    /// non-zero diff.
    pub changes: Vec<(usize, Box<dyn Changes>)>,
    /// Rounds per level (the most of any worker).
    pub rounds: Vec<u32>,
    /// A limit stopped the commit: 1 too many changes, 2 too late. The dataflow is
    /// left mid-commit: drop the runtime.
    pub aborted: u8,
}

pub(crate) enum Cmd {
    Commit(Arc<Batch>),
    /// Report what each part of the circuit holds ([`Reply::Memory`]).
    Memory,
    Shutdown,
}

pub(crate) enum Reply {
    Done {
        /// The worker's local index.
        worker: usize,
        /// The worker's changes (none unless the commit records them).
        changes: Box<dyn Changes>,
        /// Rounds per level.
        rounds: Vec<u32>,
    },
    /// A limit stopped the commit (see [`Control::stop`]).
    Aborted(u8),
    /// The worker's parts (see module `memory`) and what each holds.
    Memory(Vec<(String, Usage)>),
    Failed(String),
}

/// The running workers.
pub(crate) struct Runtime {
    pub width: usize,
    pub stages: usize,
    senders: Vec<Sender<Cmd>>,
    replies: Receiver<Reply>,
    threads: Vec<Thread>,
    guards: Option<WorkerGuards<()>>,
    /// A worker failed: do not wait for the workers when dropping.
    failed: bool,
    control: Arc<Control>,
    /// The cluster's heartbeat ([`Cluster::peer_timeout`]): its failure ends every wait
    /// for the workers.
    liveness: Option<super::liveness::Liveness>,
}

impl Runtime {
    /// Start `workers` threads with a dataflow for rows of `width` (one of
    /// [`super::types::WIDTHS`]) and `stages` join stages; worker `i` keeps `parts[i]`
    /// of the handle's copy.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start(
        workers: usize,
        width: usize,
        stages: usize,
        shared: Arc<Shared>,
        idle_merge_effort: Option<isize>,
        cluster: Option<&Cluster>,
        role: Role,
        parts: &[SharedPart],
        progress: Arc<AtomicU64>,
    ) -> Result<Runtime, String> {
        let e = idle_merge_effort;
        let c = cluster.cloned();
        let p = parts.to_vec();
        let control = Arc::new(Control {
            changes: progress,
            stop: AtomicU8::new(0),
        });
        match width {
            3 => start_typed::<[u32; 3]>(workers, stages, shared, e, c, role, p, control),
            4 => start_typed::<[u32; 4]>(workers, stages, shared, e, c, role, p, control),
            8 => start_typed::<[u32; 8]>(workers, stages, shared, e, c, role, p, control),
            16 => start_typed::<[u32; 16]>(workers, stages, shared, e, c, role, p, control),
            _ => Err(format!("unsupported row width {width}")),
        }
    }

    /// Send a batch to every worker and wait for all replies.
    pub(crate) fn commit(&mut self, batch: Arc<Batch>) -> Result<Output, String> {
        if self.failed {
            return Err("the differential engine failed earlier".into());
        }
        self.control.changes.store(0, Ordering::Relaxed);
        self.control.stop.store(0, Ordering::Relaxed);
        for (tx, th) in self.senders.iter().zip(&self.threads) {
            if tx.send(Cmd::Commit(batch.clone())).is_err() {
                self.failed = true;
                return Err("a differential worker stopped".into());
            }
            th.unpark();
        }
        // The workers hold it now (and drop it once fed).
        drop(batch);
        let mut out = Output::default();
        let Output {
            changes,
            rounds,
            aborted,
        } = &mut out;
        for _ in 0..self.senders.len() {
            let Output {
                changes: c,
                rounds: r,
                aborted: a,
            } = self.reply()?;
            if a != 0 {
                *aborted = a;
                continue;
            }
            changes.extend(c);
            if rounds.len() < r.len() {
                rounds.resize(r.len(), 0);
            }
            for (a, b) in rounds.iter_mut().zip(r) {
                *a = (*a).max(b);
            }
        }
        Ok(out)
    }
}

impl Runtime {
    /// Add what each part of the circuit holds, over this process's workers, to
    /// `usage` (parts in the order the circuit names them).
    pub(crate) fn memory(&mut self, usage: &mut MemoryUsage) -> Result<(), String> {
        if self.failed {
            return Err("the differential engine failed earlier".into());
        }
        for (tx, th) in self.senders.iter().zip(&self.threads) {
            if tx.send(Cmd::Memory).is_err() {
                self.failed = true;
                return Err("a differential worker stopped".into());
            }
            th.unpark();
        }
        for _ in 0..self.senders.len() {
            match self.replies.recv() {
                Ok(Reply::Memory(worker)) => {
                    for (name, u) in worker {
                        usage.add(&name, u.records, u.bytes);
                    }
                }
                Ok(Reply::Failed(msg)) => {
                    self.failed = true;
                    return Err(format!("differential worker failed: {msg}"));
                }
                _ => {
                    self.failed = true;
                    return Err("a differential worker stopped".into());
                }
            }
        }
        Ok(())
    }

    /// Wait for the workers of a [`Role::Follower`] process to finish: until process 0
    /// closes the dataflow. An error if a worker failed.
    pub(crate) fn wait(&mut self) -> Result<(), String> {
        for _ in 0..self.senders.len() {
            self.reply()?;
        }
        Ok(())
    }

    /// Why the cluster failed, once a peer stopped answering.
    pub(crate) fn failure(&self) -> Option<String> {
        self.liveness.as_ref().and_then(|l| l.failure.get())
    }

    /// The next worker's reply: its output rows, diffs and rounds, or why it failed.
    fn reply(&mut self) -> Result<Output, String> {
        let received = match &self.liveness {
            None => self.replies.recv().map_err(|_| ()),
            Some(l) => loop {
                match self.replies.recv_timeout(Duration::from_millis(50)) {
                    Ok(r) => break Ok(r),
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break Err(()),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        if let Some(reason) = l.failure.get() {
                            self.failed = true;
                            return Err(reason);
                        }
                    }
                }
            },
        };
        match received {
            Ok(Reply::Done {
                worker,
                changes,
                rounds,
            }) => Ok(Output {
                changes: vec![(worker, changes)],
                rounds,
                aborted: 0,
            }),
            Ok(Reply::Aborted(why)) => Ok(Output {
                aborted: why,
                ..Output::default()
            }),
            Ok(Reply::Memory(_)) => {
                self.failed = true;
                Err("a differential worker replied out of turn".into())
            }
            Ok(Reply::Failed(msg)) => {
                self.failed = true;
                Err(format!("differential worker failed: {msg}"))
            }
            Err(()) => {
                self.failed = true;
                Err("a differential worker stopped".into())
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        for (tx, th) in self.senders.iter().zip(&self.threads) {
            let _ = tx.send(Cmd::Shutdown);
            th.unpark();
        }
        if let Some(guards) = self.guards.take() {
            if self.failed || self.failure().is_some() {
                // A failed worker may have left its peers waiting for it forever:
                // do not join them (their threads are leaked, parked).
                std::mem::forget(guards);
            } else if let Some(l) = &self.liveness {
                // Joining waits for the other processes: stop waiting if one of them
                // stops answering.
                let (tx, rx) = crossbeam_channel::bounded::<()>(1);
                let joined = std::thread::Builder::new().spawn(move || {
                    let _ = guards.join();
                    let _ = tx.send(());
                });
                if joined.is_ok() {
                    while let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                        rx.recv_timeout(Duration::from_millis(50))
                    {
                        if l.failure.get().is_some() {
                            break;
                        }
                    }
                }
            } else {
                let _ = guards.join();
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn start_typed<R: Row>(
    workers: usize,
    stages: usize,
    shared: Arc<Shared>,
    idle_merge_effort: Option<isize>,
    cluster: Option<Cluster>,
    role: Role,
    parts: Vec<SharedPart>,
    control: Arc<Control>,
) -> Result<Runtime, String> {
    let workers = workers.max(1);
    if parts.len() != workers {
        return Err(format!(
            "{} parts of the copy for {workers} workers",
            parts.len()
        ));
    }
    let (mut senders, mut receivers) = (Vec::new(), Vec::new());
    for _ in 0..workers {
        let (tx, rx) = unbounded::<Cmd>();
        senders.push(tx);
        receivers.push(rx);
    }
    let (reply_tx, replies) = unbounded::<Reply>();
    let worker_control = control.clone();
    let (thread_tx, thread_rx) = unbounded::<(usize, Thread)>();
    let (first, gather, communication, timeout) = match &cluster {
        Some(c) if c.processes > 1 => (
            c.process * workers,
            true,
            timely::CommunicationConfig::Cluster {
                threads: workers,
                process: c.process,
                addresses: c.hosts.clone(),
                report: false,
                zerocopy: false,
            },
            Some(c.connect_timeout),
        ),
        _ => (
            0,
            false,
            timely::CommunicationConfig::Process(workers),
            None,
        ),
    };
    let mut config = timely::Config {
        communication,
        worker: timely::WorkerConfig::default(),
    };
    configure_idle_merging(&mut config.worker, idle_merge_effort);
    let body = move |worker: &mut Worker| {
        let index = worker.index();
        let _ = thread_tx.send((index, std::thread::current()));
        let Some((rx, part)) = index
            .checked_sub(first)
            .and_then(|local| Some((receivers.get(local).cloned()?, parts.get(local).cloned()?)))
        else {
            return;
        };
        let setup = Setup {
            stages,
            gather,
            role,
            first,
            local: workers,
        };
        run_worker::<R>(
            worker,
            rx,
            reply_tx.clone(),
            shared.clone(),
            setup,
            worker_control.clone(),
            part,
        );
    };
    // Connecting to the other processes blocks until every peer is there: do it on a
    // thread of its own, so that a peer that never comes is an error after the timeout.
    let (guards_tx, guards_rx) = unbounded();
    // timely prints its connection progress ("awaiting connections ...") on standard
    // output: the caller's hook may redirect it while connecting (the guard is held
    // until this function returns).
    let connecting = timeout
        .and(cluster.as_ref())
        .and_then(|c| c.connecting.as_ref())
        .map(|hook| (hook.0)());
    let timely::Config {
        communication,
        worker,
    } = config;
    std::thread::Builder::new()
        .name("dynalog-timely-start".into())
        .spawn(move || {
            let started =
                communication
                    .try_build_with(counting_hooks())
                    .and_then(|(builders, others)| {
                        timely::execute::execute_from(builders, others, worker, body)
                    });
            let _ = guards_tx.send(started);
        })
        .map_err(|e| format!("cannot start the differential workers: {e}"))?;
    let started = match timeout {
        Some(t) => match guards_rx.recv_timeout(t) {
            Ok(started) => started,
            Err(_) => {
                // The connecting thread cannot be stopped: it goes on waiting for the
                // peers, printing its progress every second. The hook's redirection
                // stays for the rest of the process (restoring it let that chatter
                // reach standard output before the caller's exit).
                std::mem::forget(connecting);
                return Err(format!(
                    "could not connect to the other processes within {} s (hosts: {})",
                    t.as_secs_f64(),
                    cluster
                        .as_ref()
                        .map(|c| c.hosts.join(", "))
                        .unwrap_or_default()
                ));
            }
        },
        None => guards_rx
            .recv()
            .map_err(|_| "the differential workers did not start".to_string())?,
    };
    let guards = started?;
    let liveness = match &cluster {
        Some(c) if c.processes > 1 && matches!(role, Role::Leader | Role::Follower) => c
            .peer_timeout
            .map(|t| super::liveness::Liveness::start(&c.hosts, c.process, t))
            .transpose()?,
        _ => None,
    };
    let mut threads: Vec<Option<Thread>> = vec![None; workers];
    for _ in 0..workers {
        match thread_rx.recv() {
            Ok((i, th)) if i >= first && i - first < workers => threads[i - first] = Some(th),
            _ => return Err("a differential worker did not start".into()),
        }
    }
    let threads = threads.into_iter().flatten().collect::<Vec<_>>();
    if threads.len() != workers {
        return Err("a differential worker did not start".into());
    }
    Ok(Runtime {
        width: R::default().as_ref().len(),
        stages,
        senders,
        replies,
        threads,
        guards: Some(guards),
        failed: false,
        control,
        liveness,
    })
}

/// Bytes this process has sent to other processes of a cluster, as timely's
/// communication logging reports them (message payloads; headers and TCP not counted).
static BYTES_SENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The bytes this process has sent to the other processes of a cluster since it
/// started: the payloads of timely's messages between processes, counted by timely's
/// communication logging. Final once the engines using a cluster are dropped (the
/// network threads flush their logs as they stop).
pub fn bytes_sent() -> u64 {
    BYTES_SENT.load(std::sync::atomic::Ordering::Relaxed)
}

/// Communication hooks that count the bytes sent to other processes.
fn counting_hooks() -> timely::communication::Hooks {
    use timely::communication::logging::{CommunicationEvent, CommunicationEventBuilder};
    type Events = Vec<(std::time::Duration, CommunicationEvent)>;
    timely::communication::Hooks {
        log_fn: Arc::new(|_setup| {
            Some(
                timely::logging_core::Logger::<CommunicationEventBuilder>::new(
                    std::time::Instant::now(),
                    std::time::Duration::ZERO,
                    |_, events: &mut Option<Events>| {
                        let sent: usize = events
                            .iter()
                            .flatten()
                            .map(|(_, e)| match e {
                                CommunicationEvent::Message(m) if m.is_send => m.header.length,
                                _ => 0,
                            })
                            .sum();
                        BYTES_SENT.fetch_add(sent as u64, std::sync::atomic::Ordering::Relaxed);
                    },
                ),
            )
        }),
        ..Default::default()
    }
}

/// Several processes running one dataflow over timely's TCP communication.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Number of processes (`-n`).
    pub processes: usize,
    /// This process's index, `0..processes` (`-p`).
    pub process: usize,
    /// `host:port` of every process, in process order (`-h` hostfile).
    pub hosts: Vec<String>,
    /// How long to wait for every peer to connect.
    pub connect_timeout: std::time::Duration,
    /// Live clusters ([`super::Diff::lead`], [`super::Diff::follow`]): a process not
    /// heard from for this long fails the cluster (module `liveness`); `None`: no
    /// heartbeat (a stopped peer then hangs the others).
    pub peer_timeout: Option<std::time::Duration>,
    /// Called just before connecting to the other processes; what it returns is
    /// dropped once they are connected (or the connection failed). `None`: nothing.
    pub connecting: Option<ConnectHook>,
}

/// A hook around connecting to a cluster's processes ([`Cluster::connecting`]): timely
/// prints its connection progress ("awaiting connections ...") on standard output,
/// which a program writing its results there can redirect meanwhile (the `dynalog`
/// binary sends it to standard error) by returning a guard that restores it on drop.
/// When the connection times out, timely's connecting thread lives on (and prints
/// every second): the guard is then never dropped, so the redirection lasts for the
/// rest of the process. The engines never touch the process's descriptors themselves.
#[derive(Clone)]
pub struct ConnectHook(pub Arc<dyn Fn() -> Box<dyn std::any::Any> + Send + Sync>);

impl std::fmt::Debug for ConnectHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectHook")
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// What a worker needs to know besides its commands.
struct Setup {
    stages: usize,
    /// Send every change to worker 0 (several processes).
    gather: bool,
    role: Role,
    /// The global index of this process's first worker.
    first: usize,
    /// Workers per process.
    local: usize,
}

/// How long a worker waits after a commit before it merges in the background.
const IDLE_GRACE: Duration = Duration::from_millis(2);

thread_local! {
    /// Whether the worker on this thread is between commits (see
    /// [`configure_idle_merging`]).
    static IDLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Arrangements merge their batches in the background with `effort` per scheduling,
/// as differential's `idle_merge_effort` does, but only while their worker is idle
/// between commits. Merging during a commit took its share of every step: a worker
/// waiting for its peer's next round spun through merge steps instead of parking, and a
/// one-fact commit on tc paid for the merges the load before it had left (2.5 ms and
/// more, against 1.8 without background merging). The worker's loop marks the idle
/// time and, once a commit is [`IDLE_GRACE`] behind it, wakes the arrangements whose
/// merging it paused: merging between back-to-back commits would compete with the
/// caller's thread for the cores (2 workers on 2 cores: a 4 ms scheduler tick before
/// the caller saw its reply).
fn configure_idle_merging(config: &mut timely::WorkerConfig, effort: Option<isize>) {
    let Some(effort) = effort else {
        return;
    };
    config.set("differential/idle_merge_effort".to_string(), effort);
    config.set::<differential_dataflow::trace::ExertionLogic>(
        "differential/default_exert_logic".to_string(),
        Arc::new(move |batches| {
            if !IDLE.get() {
                return None;
            }
            // Not yet compact (differential's own rule): a merge in progress, or more
            // than one non-empty batch.
            let mut non_empty = 0;
            for &(_level, count, length) in batches {
                if count > 1 {
                    return Some(effort as usize);
                }
                if length > 0 {
                    non_empty += 1;
                }
                if non_empty > 1 {
                    return Some(effort as usize);
                }
            }
            None
        }),
    );
}

fn run_worker<R: Row>(
    worker: &mut Worker,
    rx: Receiver<Cmd>,
    reply: Sender<Reply>,
    shared: Arc<Shared>,
    setup: Setup,
    control: Arc<Control>,
    part: SharedPart,
) {
    let (index, peers) = (worker.index(), worker.peers());
    let buckets = if peers == 1 { 1 } else { 8 * peers as u32 };
    let tables = Rc::new(Tables::new(shared));
    let profile = super::profile::Profile::start(worker);
    let memory_trace = super::profile::memory_trace();
    let handles = build::<R>(
        worker,
        tables,
        setup.stages,
        buckets,
        setup.gather,
        control.changes.clone(),
        part,
    );
    if setup.role == Role::Follower {
        follow(worker, handles, &rx, &reply);
        if let Some(profile) = profile {
            profile.report(worker, "end");
        }
        return;
    }
    // Which facts of a batch this worker feeds: `j % feed_peers == feed_index`.
    let (feed_index, feed_peers) = match setup.role {
        Role::Leader => (index - setup.first, setup.local),
        _ => (index, peers),
    };
    let mut handles = handles;
    let mut idle_since: Option<Instant> = None;
    loop {
        match rx.try_recv() {
            Ok(Cmd::Commit(batch)) => {
                IDLE.set(false);
                let result = catch_unwind(AssertUnwindSafe(|| {
                    // Owned by the closure, to be dropped once fed.
                    let batch = batch;
                    lock(&handles.mirror).mode = batch.mode;
                    let width = R::default().as_ref().len();
                    if index == 0 && !batch.tables.is_empty() {
                        handles.tables.send(batch.tables.clone());
                    }
                    for (i, &diff) in batch.fact_diffs.iter().enumerate() {
                        if i % feed_peers == feed_index {
                            let mut row = R::default();
                            row.as_mut()
                                .copy_from_slice(&batch.facts[i * width..(i + 1) * width]);
                            handles.facts.update(row, diff as Mult);
                        }
                    }
                    if index == 0 {
                        for &(level, id, diff) in &batch.rules {
                            handles.rules.update((level, id), diff as Mult);
                        }
                    }
                    let next = batch.epoch + 1;
                    handles.facts.advance_to(next);
                    handles.rules.advance_to(next);
                    handles.tables.advance_to(next);
                    handles.facts.flush();
                    handles.rules.flush();
                    handles.tables.flush();
                    // The dataflow has the changes: let the batch go (the last of the
                    // workers and the handle to drop it frees it; a load's batch holds
                    // every base fact at the circuit's width).
                    let (epoch, max_changes, deadline) =
                        (batch.epoch, batch.max_changes, batch.deadline);
                    drop(batch);
                    let probe = handles.probe.clone();
                    if let Some(every) = memory_trace {
                        super::profile::trace_memory(worker, &handles.meters, every, || {
                            probe.less_than(&next)
                        });
                    } else if max_changes.is_none() && deadline.is_none() {
                        worker.step_or_park_while(None, || probe.less_than(&next));
                    } else {
                        // Check the limits between steps; wake up now and then to
                        // notice a peer's stop or the deadline while parked.
                        let over = || {
                            if control.stop.load(Ordering::Relaxed) != 0 {
                                return true;
                            }
                            let why = if max_changes
                                .is_some_and(|m| control.changes.load(Ordering::Relaxed) > m)
                            {
                                1
                            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                                2
                            } else {
                                return false;
                            };
                            let _ = control.stop.compare_exchange(
                                0,
                                why,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                            true
                        };
                        worker.step_or_park_while(Some(Duration::from_millis(5)), || {
                            probe.less_than(&next) && !over()
                        });
                        // The commit may have completed between two checks.
                        if max_changes.is_some_and(|m| control.changes.load(Ordering::Relaxed) > m)
                        {
                            let _ = control.stop.compare_exchange(
                                0,
                                1,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            );
                        }
                        let why = control.stop.load(Ordering::Relaxed);
                        if why != 0 {
                            return Reply::Aborted(why);
                        }
                    }
                    if let Some(profile) = profile.as_ref().filter(|p| p.each_commit) {
                        profile.report(worker, &format!("commit {}", epoch));
                    }
                    lock(&handles.mirror).settle();
                    let mut out = std::mem::take(&mut *handles.output.borrow_mut());
                    // A fact may change more than once within a commit (emitted at one
                    // round, retracted at a later one): sum its changes here, on the
                    // worker, where they all are (see `Output`).
                    consolidate(&mut out);
                    let rounds = std::mem::take(&mut *handles.rounds.borrow_mut());
                    Reply::Done {
                        worker: index - setup.first,
                        changes: Box::new(out),
                        rounds,
                    }
                }));
                let failed = result.is_err();
                let msg = result.unwrap_or_else(|p| Reply::Failed(panic_message(&*p)));
                idle_since = Some(Instant::now());
                if reply.send(msg).is_err() || failed {
                    break;
                }
            }
            Ok(Cmd::Memory) => {
                let parts = handles
                    .meters
                    .iter()
                    .map(|m| (m.name.clone(), (m.measure)()))
                    .collect();
                if reply.send(Reply::Memory(parts)).is_err() {
                    break;
                }
            }
            Ok(Cmd::Shutdown) | Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                // Background merging starts once the worker has been idle for a while:
                // a caller sending commits back to back has them served without it.
                if let Some(since) = idle_since {
                    let waited = since.elapsed();
                    if waited < IDLE_GRACE {
                        worker.step_or_park(Some(IDLE_GRACE - waited));
                        continue;
                    }
                    idle_since = None;
                    IDLE.set(true);
                    let activations = worker.activations();
                    for address in &handles.arrangements {
                        activations.borrow_mut().activate(address);
                    }
                }
                // Merge work of idle arrangements, or park until the handle unparks us.
                // Between two idle steps, give the core away: a worker merging in the
                // background must not keep the handle's thread (or a peer woken by
                // the next commit) waiting for the scheduler's next tick, which
                // made every commit with 2 workers on 2 cores take whole ticks of
                // 4 ms.
                worker.step_or_park(None);
                std::thread::yield_now();
            }
        }
    }
    let probe = handles.probe.clone();
    drop(handles);
    if setup.role == Role::Leader {
        // The followers run until they see the inputs closed: let that news reach
        // them before the dataflow goes.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            while !probe.done() {
                worker.step_or_park(Some(std::time::Duration::from_millis(10)));
            }
        }));
    }
    if let Some(profile) = profile {
        profile.report(worker, "end");
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        for id in worker.installed_dataflows() {
            worker.drop_dataflow(id);
        }
    }));
}

/// A worker of a [`Role::Follower`] process: it holds no input, so the inputs' frontier
/// is process 0's; it runs the dataflow until process 0 closes it (or its own handle
/// shuts it down), then replies once.
fn follow<R: Row>(
    worker: &mut Worker,
    handles: super::dataflow::Handles<R>,
    rx: &Receiver<Cmd>,
    reply: &Sender<Reply>,
) {
    let probe = handles.probe.clone();
    drop(handles);
    // A follower does not see where commits begin and end: it merges whenever idle.
    IDLE.set(true);
    let result = catch_unwind(AssertUnwindSafe(|| {
        while !probe.done() {
            match rx.try_recv() {
                Ok(Cmd::Shutdown) | Err(TryRecvError::Disconnected) => return false,
                Ok(Cmd::Commit(_)) | Ok(Cmd::Memory) | Err(TryRecvError::Empty) => {}
            }
            worker.step_or_park(None);
        }
        true
    }));
    let msg = match result {
        Ok(_) => Reply::Done {
            worker: 0,
            changes: Box::new(Vec::<(R, Mult)>::new()),
            rounds: Vec::new(),
        },
        Err(p) => Reply::Failed(panic_message(&*p)),
    };
    let _ = reply.send(msg);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        for id in worker.installed_dataflows() {
            worker.drop_dataflow(id);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrangements_merge_in_the_background_only_while_idle() {
        let mut config = timely::WorkerConfig::default();
        configure_idle_merging(&mut config, Some(100));
        let logic = config
            .get::<differential_dataflow::trace::ExertionLogic>("differential/default_exert_logic")
            .cloned()
            .expect("exert logic set");
        // (level, batches, length): two non-empty levels, a merge in progress, compact.
        let two = [(3, 1, 10), (1, 1, 5)];
        let merging = [(3, 2, 10)];
        let compact = [(3, 1, 10), (1, 0, 0)];
        IDLE.set(false);
        assert_eq!(logic(&two), None);
        assert_eq!(logic(&merging), None);
        IDLE.set(true);
        assert_eq!(logic(&two), Some(100));
        assert_eq!(logic(&merging), Some(100));
        assert_eq!(logic(&compact), None);
        IDLE.set(false);
        // Without an effort, no background merging at all.
        let mut none = timely::WorkerConfig::default();
        configure_idle_merging(&mut none, None);
        assert!(
            none.get::<differential_dataflow::trace::ExertionLogic>(
                "differential/default_exert_logic"
            )
            .is_none()
        );
    }
}
