//! `dynalog serve PROGRAM.dl [-F FACT_DIR] [-w N] [--engine NAME] [--listen ADDR] [--token FILE]`
//!
//! The live materialization of `dynalog session` behind HTTP/JSON (axum on hyper and
//! tokio), built to be exposed to clients that are not trusted.
//!
//! * `POST /transactions`: the body is command lines of a session (`+ FACT.`, `- FACT.`,
//!   `+ RULE.`, `- RULE.`, `load REL FILE`, `unload REL FILE`); one request is one
//!   transaction. Answers the commit: its number, counts and the changes of the
//!   `.output` relations (of all relations if the program declares none); or 400 with
//!   the line and the reason, and nothing of the request applied.
//! * `GET /relations/{name}?pattern=path(1,x)&offset=K&limit=N`: facts, sorted, one page
//!   at a time; `GET /relations/{name}/size`; `GET /rules`.
//! * `GET /changes?since=N&offset=K&limit=L`: the logged changes from transaction N on,
//!   one page of at most L changes; with `follow=true`, a stream of newline-delimited
//!   JSON, one line per commit, that stays open and continues as transactions commit.
//! * `GET /health`, `GET /metrics` (facts per relation, the change log, resident memory,
//!   and the engine's memory by part as last measured: `engine_memory`).
//!
//! One thread owns the engine and applies transactions one at a time, in arrival order.
//! After each commit it publishes the changes into a read view (a set of facts per
//! relation, copied on write), so readers are answered from the last committed state
//! while the next transaction is being applied, and never see half of one. The read
//! view and the change log are kept in memory besides the engine's own state; the log
//! keeps the last commits only ([`ChangeLog`]).
//!
//! What keeps the server safe to expose (the threat model is in the README):
//! * [`guard`]: a bearer token (`--token FILE`, required for a non-loopback address), the
//!   `Host` header (DNS rebinding) and the `Origin` header (cross-site requests) checked
//!   on every request;
//! * bounded everything: connections (`--max-connections`), the time to send request
//!   headers and bodies, body size, queued transactions, page sizes, the change log's
//!   retention; per-transaction limits come from the engine (`LiveArgs`);
//! * `load`/`unload` read only regular files under the allowed directories
//!   ([`dynalog::live::resolve_load`]);
//! * SIGINT/SIGTERM stop accepting, end the change streams, let running requests finish
//!   within `--shutdown-grace` seconds and then stop the engine.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use dynalog::live::{Commit, Materialization, Pattern, Staged, render_fact};
use dynalog_analysis::{Program, RelId, SymbolTable, SymbolsRead, Type, Value};
use dynalog_engines::store::FlatSet;
use dynalog_engines::{ChangeList, Limits};
use serde_json::{Value as Json, json};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, RwLock, mpsc};
use std::time::{Duration, Instant};

/// Facts per page of `/relations` when the request names no `limit`.
pub const DEFAULT_PAGE: usize = 1000;
/// The largest `limit` of `/relations` and `/changes`.
pub const MAX_PAGE: usize = 100_000;
/// Changes per page of `/changes` when the request names no `limit`.
pub const DEFAULT_CHANGES_PAGE: usize = 10_000;
/// The limits of a transaction when `--max-changes` / `--max-commit-time` are not given.
pub const DEFAULT_LIMITS: Limits = Limits {
    max_changes: Some(10_000_000),
    max_time: Some(Duration::from_secs(60)),
};
/// Changes serialised at a time into a `/changes?follow=true` stream.
const STREAM_CHUNK: usize = 1000;

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct ServeArgs {
    #[command(flatten)]
    pub live: crate::session::LiveArgs,
    /// Print help.
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Address to listen on, `HOST:PORT` (only this address is bound; port 0 picks a
    /// free port, printed at startup). A non-loopback address needs `--token`.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// File holding the bearer token every request but `/health` must present
    /// (`Authorization: Bearer TOKEN`). Required when listening on a non-loopback address.
    #[arg(long, value_name = "FILE")]
    pub token: Option<PathBuf>,
    /// A host name clients may use in the `Host` header besides `localhost` and IP
    /// addresses (repeatable); other names are refused (DNS rebinding).
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,
    /// An origin (`https://app.example.org`) whose pages may call this server from a
    /// browser (repeatable); requests from other origins are refused.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Connections served at once; further clients wait to be accepted.
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// Seconds a client has to send a request's headers (also how long an idle
    /// keep-alive connection stays open).
    #[arg(long, default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Seconds a client has to send a request's body.
    #[arg(long, default_value_t = 30.0)]
    pub body_timeout: f64,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = 16 << 20)]
    pub max_request_bytes: usize,
    /// Transactions waiting for the engine at most; further POSTs get 503.
    #[arg(long, default_value_t = 64)]
    pub max_queued: usize,
    /// Commits the change log keeps for `/changes` (older ones answer 410 Gone).
    #[arg(long, default_value_t = 10_000)]
    pub log_commits: usize,
    /// Megabytes the change log keeps at most (roughly; older commits are dropped, and
    /// a commit larger than this alone is not kept).
    #[arg(long, default_value_t = 256)]
    pub log_mb: usize,
    /// Seconds running requests get to finish after SIGINT/SIGTERM.
    #[arg(long, default_value_t = 10.0)]
    pub shutdown_grace: f64,
}

/// One relation in the read view.
#[derive(Clone)]
struct RelView {
    name: String,
    types: Vec<Type>,
    output: bool,
    /// Packed rows (4 bytes per value and 4 per fact besides the table's slack; a
    /// boxed slice per fact in a `HashSet` took about 60 bytes per fact more).
    facts: Arc<FlatSet>,
}

/// What readers see: the state as of the last commit.
#[derive(Clone)]
struct View {
    relations: Vec<RelView>,
    /// The declarations of the relations (a program without rules or facts), which
    /// patterns are lowered against.
    declared: Arc<Program>,
    symbols: Arc<SymbolTable>,
    rules: Arc<Vec<String>>,
    /// The number of the last commit.
    commit: u64,
    last_commit_ms: f64,
}

/// One committed transaction in the change log (changes of the shown relations).
struct Logged {
    commit: u64,
    /// Packed: a load's commit holds every fact of the shown relations.
    changes: Arc<ChangeList>,
}

/// What the change log counts per commit besides its changes' bytes.
const LOGGED_OVERHEAD: usize = 64;

/// The last commits' changes, for `/changes`: at most `max_commits` commits and about
/// `max_bytes` bytes; older commits are dropped and asking for them answers 410 Gone.
/// A commit larger than `max_bytes` alone is not kept at all (its client had its
/// changes in the answer), and the commits before it go too: the log holds the
/// commits from `first_kept` on without a gap, and no follower could read past it.
pub struct ChangeLog {
    entries: VecDeque<(Logged, usize)>,
    bytes: usize,
    /// Every commit before this one is gone (or was never logged, before a restart).
    first_kept: u64,
    max_commits: usize,
    max_bytes: usize,
}

impl ChangeLog {
    fn new(first: u64, max_commits: usize, max_bytes: usize) -> ChangeLog {
        ChangeLog {
            entries: VecDeque::new(),
            bytes: 0,
            first_kept: first,
            max_commits: max_commits.max(1),
            max_bytes,
        }
    }

    /// Log a commit and drop the oldest until the log fits; returns the changes, as
    /// logged. A commit that does not fit alone is not kept (see [`ChangeLog`]).
    fn push(&mut self, commit: u64, mut changes: ChangeList) -> Arc<ChangeList> {
        changes.shrink_to_fit();
        let size = changes.bytes() + LOGGED_OVERHEAD;
        let changes = Arc::new(changes);
        if size > self.max_bytes {
            self.skip(commit);
            return changes;
        }
        if self.entries.is_empty() {
            self.first_kept = commit;
        }
        self.bytes += size;
        self.entries.push_back((
            Logged {
                commit,
                changes: changes.clone(),
            },
            size,
        ));
        while self.entries.len() > 1
            && (self.entries.len() > self.max_commits || self.bytes > self.max_bytes)
        {
            if let Some((_, size)) = self.entries.pop_front() {
                self.bytes -= size;
            }
            self.first_kept = self.entries.front().map_or(commit, |e| e.0.commit);
        }
        changes
    }

    /// The most a commit's changes may take (in [`ChangeList::bytes`]) to be kept.
    fn room(&self) -> usize {
        self.max_bytes.saturating_sub(LOGGED_OVERHEAD)
    }

    /// Keep nothing of commit `commit` nor of those before it: asking for them
    /// answers 410 Gone, and the log goes on from the next.
    fn skip(&mut self, commit: u64) {
        self.entries.clear();
        self.bytes = 0;
        self.first_kept = commit + 1;
    }

    /// The logged commit `n`, if kept.
    fn get(&self, n: u64) -> Option<&Logged> {
        let first = self.entries.front()?.0.commit;
        let i = usize::try_from(n.checked_sub(first)?).ok()?;
        self.entries.get(i).map(|e| &e.0)
    }
}

struct Shared {
    view: RwLock<Arc<View>>,
    log: RwLock<ChangeLog>,
    /// The number of the next commit; followers wait on it.
    committed: tokio::sync::watch::Sender<u64>,
    /// Becomes true when the server stops: streams end.
    stopping: tokio::sync::watch::Sender<bool>,
    jobs: mpsc::SyncSender<Job>,
    started: Instant,
    /// Identifies this materialization: a client that sees it change knows that commit
    /// numbers started again (a server without `--data-dir` restarted).
    instance: String,
    /// Why the engine can no longer commit (a lost cluster peer), once it cannot.
    failed: RwLock<Option<String>>,
    access: Access,
    /// The engine's memory by part, for `/metrics` (see [`Measured`]).
    memory: RwLock<Option<Measured>>,
}

/// The engine's memory, as measured after a commit: the engine thread measures after
/// the first commit, then after a commit when the last measure is a second old, and
/// while idle when a commit came since (a measure walks the engine's parts, so it is
/// not taken after every commit of a busy server).
struct Measured {
    commit: u64,
    at: Instant,
    facts: u64,
    usage: dynalog_engines::MemoryUsage,
}

/// Measure the engine's memory into `shared` if the last measure is older than
/// `max_age` and commits came since.
fn measure(shared: &Shared, m: &mut Materialization, commit: u64, max_age: Duration) {
    let stale = match &*shared.memory.read().unwrap_or_else(|e| e.into_inner()) {
        None => true,
        Some(last) => last.commit != commit && last.at.elapsed() >= max_age,
    };
    if !stale {
        return;
    }
    if let Some(usage) = m.memory() {
        *shared.memory.write().unwrap_or_else(|e| e.into_inner()) = Some(Measured {
            commit,
            at: Instant::now(),
            facts: m.total_facts(),
            usage,
        });
    }
}

/// Who may talk to the server: see [`guard`].
struct Access {
    token: Option<Vec<u8>>,
    hosts: Vec<String>,
    origins: Vec<String>,
    body_timeout: Duration,
    max_body: usize,
}

/// Work for the engine thread.
enum Job {
    /// A transaction, with where to send its outcome.
    Transaction {
        body: String,
        reply: tokio::sync::oneshot::Sender<Result<Answer, (StatusCode, Json)>>,
    },
    /// The server stops: drop the engine (in a cluster, this stops the others).
    Stop,
}

/// Resolve `--listen` (`127.0.0.1:8080`, `[::1]:0`, `localhost:8080`) to one address.
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("error: --listen `{text}` is not an address (HOST:PORT): {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("error: --listen `{text}` resolves to no address"))
}

/// Read the token file: its first line, which must not be empty.
fn read_token(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "error: cannot read the token file `{}`: {e}",
            path.display()
        )
    })?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(format!(
            "error: the token file `{}` is empty",
            path.display()
        ));
    }
    if token.len() < 16 {
        eprintln!(
            "warning: the token in `{}` is shorter than 16 characters; use a long random one",
            path.display()
        );
    }
    Ok(token.as_bytes().to_vec())
}

fn seconds(name: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("error: --{name} must be a positive number of seconds"))
}

pub fn serve(args: ServeArgs) -> Result<(), String> {
    let live = args.live.clone();
    if live.cluster.processes > 1 && live.cluster.process > 0 {
        // Another process of a cluster: no HTTP, its share of every transaction.
        live.open_or_follow()?;
        return Ok(());
    }
    // Everything about the HTTP side is checked before the program is loaded.
    let addr = listen_address(&args.listen)?;
    let token = args.token.as_deref().map(read_token).transpose()?;
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(format!(
            "error: --listen {addr} is reachable from other hosts: give a bearer token with --token FILE"
        ));
    }
    let header_timeout = seconds("header-timeout", args.header_timeout)?;
    let body_timeout = seconds("body-timeout", args.body_timeout)?;
    let grace = seconds("shutdown-grace", args.shutdown_grace)?;
    if args.max_connections == 0 || args.max_queued == 0 || args.log_commits == 0 {
        return Err(
            "error: --max-connections, --max-queued and --log-commits must be at least 1".into(),
        );
    }
    let access = Access {
        token,
        hosts: args
            .allow_host
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect(),
        origins: args
            .allow_origin
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect(),
        body_timeout,
        max_body: args.max_request_bytes,
    };
    let log = ChangeLog::new(0, args.log_commits, args.log_mb.saturating_mul(1 << 20));

    // The engine lives on its own thread; it reports whether the program loaded.
    let (jobs, job_rx) = mpsc::sync_channel::<Job>(args.max_queued);
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Arc<Shared>, String>>();
    let (committed, _) = tokio::sync::watch::channel(0u64);
    let (stopping, _) = tokio::sync::watch::channel(false);
    let fact_dir = live.fact_dir.clone();
    let engine_thread = std::thread::spawn(move || {
        let start = || -> Result<(Materialization, Commit), String> {
            let Some(mut m) = live.open_or_follow()? else {
                return Err("error: this process follows process 0".into());
            };
            // A server bounds every transaction unless told otherwise (limits cannot
            // be rolled back across processes: a cluster takes only the explicit ones).
            let defaults = if live.cluster.processes > 1 {
                Limits::NONE
            } else {
                DEFAULT_LIMITS
            };
            m.set_limits(live.limits(defaults)?)
                .map_err(|e| e.message())?;
            // The first commit's changes are every fact: the read view and the log
            // are filled from the engine instead (see `publish_first`).
            m.keep_first_changes(false);
            let first = m.commit().map_err(|e| format!("error: {e}"))?;
            Ok((m, first))
        };
        let (mut m, first) = match start() {
            Ok(x) => x,
            Err(e) => {
                let _ = ready_tx.send(Err(e));
                return;
            }
        };
        let shared = Arc::new(Shared {
            view: RwLock::new(Arc::new(View {
                relations: Vec::new(),
                declared: Arc::new(declarations(m.program())),
                symbols: Arc::new(SymbolTable::new()),
                rules: Arc::new(Vec::new()),
                commit: 0,
                last_commit_ms: 0.0,
            })),
            log: RwLock::new(log),
            committed,
            stopping,
            jobs,
            started: Instant::now(),
            instance: m.instance_id().to_string(),
            failed: RwLock::new(None),
            access,
            memory: RwLock::new(None),
        });
        publish_first(&shared, &m, &first);
        measure(&shared, &mut m, first.number, Duration::ZERO);
        if ready_tx.send(Ok(shared.clone())).is_err() {
            return;
        }
        loop {
            let job = match job_rx.recv_timeout(Duration::from_millis(200)) {
                Ok(job) => job,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // A lost or stopped cluster peer shows in /health while idle too.
                    if let Some(reason) = m.failed() {
                        *shared.failed.write().unwrap_or_else(|e| e.into_inner()) = Some(reason);
                    } else {
                        let commit = current(&shared).commit;
                        measure(&shared, &mut m, commit, Duration::ZERO);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let Job::Transaction { body, reply } = job else {
                break;
            };
            if reply.is_closed() {
                // The client left (or the server is stopping) before its turn.
                continue;
            }
            if let Some(reason) = failure(&shared) {
                let _ = reply.send(Err(unavailable(&reason)));
                continue;
            }
            let outcome = match transaction(&mut m, &fact_dir, &body) {
                Ok((c, present)) => {
                    let changes = publish(&shared, &m, &c);
                    // The relations and symbols of this commit render the changes,
                    // whatever commits come while the answer is written. (Not the
                    // view itself: the next commit would copy every relation it
                    // changes while an answer still held them.)
                    let (declared, symbols) = {
                        let view = current(&shared);
                        (view.declared.clone(), view.symbols.clone())
                    };
                    measure(&shared, &mut m, c.number, Duration::from_secs(1));
                    let mut head = commit_head(&shared.instance, &c);
                    if !present.is_empty() {
                        head["already_present"] = json!(present);
                    }
                    Ok(Answer {
                        head,
                        changes,
                        declared,
                        symbols,
                    })
                }
                Err(Refusal::Client(status, j)) => Err((status, j)),
                Err(Refusal::Engine(reason)) => {
                    *shared.failed.write().unwrap_or_else(|e| e.into_inner()) =
                        Some(reason.clone());
                    Err(unavailable(&reason))
                }
            };
            let _ = reply.send(outcome);
        }
    });
    let shared = match ready_rx.recv() {
        Ok(Ok(shared)) => shared,
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            let _ = engine_thread.join();
            return Err("error: the engine thread stopped while loading".into());
        }
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the HTTP runtime: {e}"))?;
    let stop = shared.jobs.clone();
    let limits = ConnLimits {
        max_connections: args.max_connections,
        header_timeout,
        grace,
    };
    let served = runtime.block_on(run_http(addr, shared, limits));
    // Stop the engine and wait for it, so that in a cluster the other processes learn
    // that the dataflow is closed before this process exits. The engine finishes the
    // transaction it is applying; the ones still queued are answered by nobody.
    let _ = stop.send(Job::Stop);
    let _ = engine_thread.join();
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Connection-level bounds of [`run_http`].
struct ConnLimits {
    max_connections: usize,
    header_timeout: Duration,
    grace: Duration,
}

/// Accept connections until SIGINT/SIGTERM, at most `max_connections` at once, each
/// served by hyper with a header-read timeout; then end the streams and give running
/// requests `grace` to finish.
async fn run_http(addr: SocketAddr, shared: Arc<Shared>, limits: ConnLimits) -> Result<(), String> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    use tokio::signal::unix::{SignalKind, signal};

    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("error: cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("error: cannot read the bound address: {e}"))?;
    println!("listening on http://{bound}");
    use std::io::Write;
    let _ = std::io::stdout().flush();

    let mut interrupt =
        signal(SignalKind::interrupt()).map_err(|e| format!("error: cannot handle SIGINT: {e}"))?;
    let mut terminate = signal(SignalKind::terminate())
        .map_err(|e| format!("error: cannot handle SIGTERM: {e}"))?;
    let service = TowerToHyperService::new(router(shared.clone()));
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(64 << 10);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(x) => x,
                // Out of file descriptors and the like: wait a little, go on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        };
        let _ = stream.set_nodelay(true);
        let conn = http.serve_connection(TokioIo::new(stream), service.clone());
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(slot);
        });
    }
    eprintln!("stopping: ending change streams, finishing running requests");
    shared.stopping.send_replace(true);
    if tokio::time::timeout(limits.grace, graceful.shutdown())
        .await
        .is_err()
    {
        eprintln!(
            "stopping: requests still running after {} s were cut off",
            limits.grace.as_secs_f64()
        );
    }
    Ok(())
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/transactions", post(post_transaction))
        .route("/relations/{name}", get(get_relation))
        .route("/relations/{name}/size", get(get_size))
        .route("/rules", get(get_rules))
        .route("/changes", get(get_changes))
        .route("/health", get(get_health))
        .route("/metrics", get(get_metrics))
        .layer(axum::middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// Whether a `Host` header names this server: an IP address (any port), `localhost`,
/// or a name given with `--allow-host`. Other names are what a DNS-rebinding page
/// would send (its own domain, resolving to this machine).
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim().to_ascii_lowercase();
    // Strip the port: `[::1]:8080`, `127.0.0.1:8080`, `name:8080`.
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, tail)) if tail.is_empty() || tail.starts_with(':') => {
                return ip.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            Some(_) => return false,
            None => host.as_str(),
        }
    };
    name.parse::<IpAddr>().is_ok() || name == "localhost" || allowed.iter().any(|a| a == name)
}

/// Whether an `Origin` header may call: the page was served by this same host (the
/// request's `Host`), or its origin was given with `--allow-origin`.
fn origin_allowed(origin: &str, host: &str, allowed: &[String]) -> bool {
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    let host = host.trim().to_ascii_lowercase();
    origin == format!("http://{host}")
        || origin == format!("https://{host}")
        || allowed.contains(&origin)
}

/// Compare secrets in time independent of where they differ.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(!x));
    }
    diff == 0
}

/// Every request passes here first: `Host`, then `Origin`, then the bearer token (all
/// but `/health`).
async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let access = &shared.access;
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !host_allowed(host, &access.hosts) {
        return error(
            StatusCode::FORBIDDEN,
            "this server does not answer to that Host name (see --allow-host)",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !origin_allowed(origin, host, &access.origins) {
            return error(
                StatusCode::FORBIDDEN,
                "requests from other origins are refused (see --allow-origin)",
            );
        }
    }
    if let Some(token) = &access.token
        && req.uri().path() != "/health"
        && !bearer_matches(headers, token)
    {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "this server needs `Authorization: Bearer TOKEN`",
        );
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    next.run(req).await
}

fn bearer_matches(headers: &HeaderMap, token: &[u8]) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same_secret(given.trim().as_bytes(), token))
}

/// Why a transaction was not committed.
enum Refusal {
    /// The request is at fault (a bad line, a refused rule change, a limit): 4xx.
    Client(StatusCode, Json),
    /// The engine can no longer commit: the server answers 503 from now on.
    Engine(String),
}

/// Stage every line of a request body and commit them as one transaction. Also returns
/// the rules of `+ RULE.` lines that the program already had (rules are a set: they
/// are not added again).
fn transaction(
    m: &mut Materialization,
    dir: &std::path::Path,
    body: &str,
) -> Result<(Commit, Vec<String>), Refusal> {
    let mut present = Vec::new();
    let refuse = |m: &mut Materialization, line: Option<usize>, reason: String| {
        m.abort();
        let mut j = json!({"error": reason});
        if let Some(l) = line {
            j["line"] = json!(l);
        }
        Refusal::Client(StatusCode::BAD_REQUEST, j)
    };
    for (i, line) in body.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("//") || t.starts_with('#') {
            continue;
        }
        match m.stage(line, dir) {
            Ok(Some(Staged::Change)) => {}
            Ok(Some(Staged::RulesPresent(rules))) => present.extend(rules),
            Ok(None) => {
                let word = t.split_whitespace().next().unwrap_or(t);
                let word: String = word.chars().take(40).collect();
                return Err(refuse(
                    m,
                    Some(i + 1),
                    format!(
                        "`{word}` is not a change: a transaction holds `+`/`-` facts and rules \
                         and `load`/`unload` lines (one request is one transaction)"
                    ),
                ));
            }
            Err(e) => return Err(refuse(m, Some(i + 1), e.to_string())),
        }
    }
    let c = m.commit().map_err(|e| {
        if let Some(reason) = m.failed() {
            return Refusal::Engine(reason);
        }
        if e.limit().is_some() {
            // Well-formed, but more than this server takes in one transaction.
            return Refusal::Client(
                StatusCode::UNPROCESSABLE_ENTITY,
                json!({"error": format!("commit refused: {}", e.message())}),
            );
        }
        refuse(m, None, format!("commit refused: {}", e.message()))
    })?;
    Ok((c, present))
}

/// A program holding only the relations of `p`: what patterns need.
fn declarations(p: &Program) -> Program {
    Program {
        relations: p.relations.clone(),
        rules: Vec::new(),
        facts: Vec::new(),
        aggregates: Vec::new(),
        strata: Vec::new(),
        symbols: SymbolTable::new(),
        warnings: Vec::new(),
    }
}

/// Publish the first commit of the process (the inputs, or the state recovered from
/// `--data-dir`), whose changes the materialization did not keep (every fact, as many
/// as the facts; `Materialization::keep_first_changes`): the read view is filled from
/// the engine's facts, and the change log gets the shown facts as the commit's
/// insertions when they fit in it, else nothing (asking for the commit answers 410, as
/// for a commit that went out of the log; a client reads `/relations` instead).
fn publish_first(shared: &Shared, m: &Materialization, c: &Commit) {
    {
        let mut guard = shared.view.write().unwrap_or_else(|e| e.into_inner());
        let view = Arc::make_mut(&mut *guard);
        update_relations(view, m);
        for (rel, rv) in view.relations.iter_mut().enumerate() {
            let facts = Arc::make_mut(&mut rv.facts);
            facts.reserve(m.len(&rv.name).unwrap_or(0));
            m.for_each_fact(rel as RelId, &mut |t| {
                facts.insert(t);
            });
        }
        update_program(view, m, c);
    }
    let mut log = shared.log.write().unwrap_or_else(|e| e.into_inner());
    // Built only if the log will keep it.
    match m.shown_state(log.room()) {
        Some(state) => {
            log.push(c.number, state);
        }
        None => log.skip(c.number),
    }
    drop(log);
    shared.committed.send_replace(c.number + 1);
}

/// The view's relations after a rule change: relations appended or dropped.
fn update_relations(view: &mut View, m: &Materialization) {
    let program = m.program();
    view.relations.truncate(program.relations.len());
    for r in &program.relations[view.relations.len()..] {
        view.relations.push(RelView {
            name: r.name.clone(),
            types: r.types.clone(),
            output: !r.outputs.is_empty(),
            facts: Arc::new(FlatSet::new(r.types.len())),
        });
    }
}

/// The view's symbols, declarations, rules and commit, after commit `c`.
fn update_program(view: &mut View, m: &Materialization, c: &Commit) {
    // The program's table itself (a handle): it only grows past what committed facts
    // use, so readers resolve every id they see, records included.
    if !view.symbols.same(m.symbols()) {
        view.symbols = Arc::new(m.symbols().clone());
    }
    let program = m.program();
    if view.declared.relations != program.relations {
        view.declared = Arc::new(declarations(program));
    }
    view.rules = Arc::new(m.rules());
    view.commit = c.number;
    view.last_commit_ms = millis(c.elapsed);
}

/// Publish a commit into the read view and the change log; returns the changes users
/// follow, as logged (sorted), for the commit's answer.
fn publish(shared: &Shared, m: &Materialization, c: &Commit) -> Arc<ChangeList> {
    {
        let mut guard = shared.view.write().unwrap_or_else(|e| e.into_inner());
        let view = Arc::make_mut(&mut *guard);
        update_relations(view, m);
        for (rel, tuple, d) in c.changes.iter() {
            if let Some(rv) = view.relations.get_mut(rel as usize) {
                let facts = Arc::make_mut(&mut rv.facts);
                if d > 0 {
                    facts.insert(tuple);
                } else {
                    facts.remove(tuple);
                }
            }
        }
        update_program(view, m, c);
    }
    let shown = m.shown_change_list(&c.changes);
    let shown = shared
        .log
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(c.number, shown);
    shared.committed.send_replace(c.number + 1);
    shown
}

/// Milliseconds with three decimals (no float noise such as `1.4924009999999999`).
fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// A committed transaction's answer: its head (`instance`, `commit`, the counts, the
/// time, `already_present`) and the changes users follow, written as the client reads
/// them (see [`answer_response`]) rather than built as one document: a transaction may
/// change millions of facts.
struct Answer {
    head: Json,
    changes: Arc<ChangeList>,
    /// The commit's declarations and symbols.
    declared: Arc<Program>,
    symbols: Arc<SymbolTable>,
}

/// The head of a commit's answer, without its changes.
fn commit_head(instance: &str, c: &Commit) -> Json {
    json!({
        "instance": instance,
        "commit": c.number,
        "inserted": c.inserted,
        "deleted": c.deleted,
        "elapsed_ms": millis(c.elapsed),
    })
}

/// A commit's answer, `{..head, "changes": [...]}`, streamed [`STREAM_CHUNK`] changes at
/// a time: the answer to a transaction of millions of changes never sits in memory
/// whole (as a tree of JSON values it took about 2 KB per change).
fn answer_response(answer: Answer) -> Response {
    let Answer {
        head,
        changes,
        declared,
        symbols,
    } = answer;
    let mut start = head.to_string();
    // The head's closing brace: the changes come before it.
    start.pop();
    start.push_str(",\"changes\":[");
    let n = changes.len();
    let pieces = (0..n.div_ceil(STREAM_CHUNK)).map(move |k| {
        let from = k * STREAM_CHUNK;
        let mut text = String::new();
        let to = (from + STREAM_CHUNK).min(n);
        write_changes_json(
            &mut text,
            &changes,
            from..to,
            &declared,
            &symbols,
            from == 0,
        );
        text
    });
    let pieces = std::iter::once(start)
        .chain(pieces)
        .chain(std::iter::once("]}".to_string()));
    let body = if n <= STREAM_CHUNK {
        // A small answer (most) goes whole, with its length.
        Body::from(pieces.collect::<String>())
    } else {
        Body::from_stream(futures_util::stream::iter(
            pieces.map(Ok::<_, std::io::Error>),
        ))
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "cannot stream"))
}

/// A value as JSON: numbers as numbers, symbols as strings, records as their Datalog
/// text (`[1, "a"]`, `$Leaf(2)`).
fn value_json(t: Type, v: Value, symbols: &SymbolTable) -> Json {
    match t {
        Type::Symbol => Json::String(symbols.resolve(v).to_string()),
        Type::Record(_) => Json::String(t.render_quoted(v, &symbols.read())),
        Type::Number => json!(v as i32),
        Type::Unsigned => json!(v),
        Type::Float => json!(f32::from_bits(v)),
    }
}

/// Append a change to `out` as JSON,
/// `{"fact":"path(1, 3).","op":"+","relation":"path","values":[1,3]}` (`{"op":"+",
/// "relation":null}` for a relation no longer in the view), written as text (a stream
/// or page of many changes builds no JSON value per change); `fact` is scratch space.
/// The test `changes_are_written_as_serde_writes_them` holds it to the bytes `serde_json`
/// writes for the same change as a JSON value (values: numbers as numbers, symbols as
/// strings, records as their Datalog text).
fn write_change_json(
    out: &mut String,
    fact: &mut String,
    rel: Option<(&str, &[Type])>,
    symbols: &SymbolsRead<'_>,
    (_, tuple, d): (RelId, &[Value], isize),
) {
    let op = if d > 0 { "\"+\"" } else { "\"-\"" };
    let Some((name, types)) = rel else {
        out.push_str("{\"op\":");
        out.push_str(op);
        out.push_str(",\"relation\":null}");
        return;
    };
    fact.clear();
    render_fact(fact, name, types, tuple, symbols);
    out.push_str("{\"fact\":");
    json_string(out, fact);
    out.push_str(",\"op\":");
    out.push_str(op);
    out.push_str(",\"relation\":");
    json_string(out, name);
    out.push_str(",\"values\":[");
    for (i, (&v, &t)) in tuple.iter().zip(types).enumerate() {
        if i > 0 {
            out.push(',');
        }
        // (Writing into a `String` cannot fail.)
        let _ = match t {
            Type::Symbol => {
                json_string(out, symbols.resolve(v));
                Ok(())
            }
            Type::Record(_) => {
                json_string(out, &t.render_quoted(v, symbols));
                Ok(())
            }
            Type::Number => write!(out, "{}", v as i32),
            Type::Unsigned => write!(out, "{v}"),
            Type::Float => write!(out, "{}", json!(f32::from_bits(v))),
        };
    }
    out.push_str("]}");
}

/// Append the changes `range` of `changes` to `out` as JSON objects separated by
/// commas (one before the first too, unless `first`): what the answers, the pages and
/// the follow streams of `/changes` are made of. Their relations are read in
/// `declared` (the commit's declarations), their symbols under one lock.
fn write_changes_json(
    out: &mut String,
    changes: &ChangeList,
    range: std::ops::Range<usize>,
    declared: &Program,
    symbols: &SymbolTable,
    first: bool,
) {
    let symbols = symbols.read();
    let mut fact = String::new();
    for i in range.clone() {
        if i > range.start || !first {
            out.push(',');
        }
        let c = changes.get(i);
        let rel = declared
            .relations
            .get(c.0 as usize)
            .map(|x| (x.name.as_str(), &x.types[..]));
        write_change_json(out, &mut fact, rel, &symbols, c);
    }
}

/// Append `s` as a JSON string, escaped as `serde_json` escapes.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

fn unavailable(reason: &str) -> (StatusCode, Json) {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": format!("the engine cannot commit: {reason}")}),
    )
}

fn current(shared: &Shared) -> Arc<View> {
    shared
        .view
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

fn failure(shared: &Shared) -> Option<String> {
    shared
        .failed
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

async fn post_transaction(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    if let Some(reason) = failure(&shared) {
        let (status, j) = unavailable(&reason);
        return (status, axum::Json(j)).into_response();
    }
    let access = &shared.access;
    let read = axum::body::to_bytes(request.into_body(), access.max_body);
    let body = match tokio::time::timeout(access.body_timeout, read).await {
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {} s",
                    access.body_timeout.as_secs_f64()
                ),
            );
        }
        Ok(Err(_)) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than {} bytes (see --max-request-bytes), or was cut off",
                    access.max_body
                ),
            );
        }
        Ok(Ok(bytes)) => bytes,
    };
    let body = match String::from_utf8(body.to_vec()) {
        Ok(b) => b,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let line = body[..at].iter().filter(|&&b| b == b'\n').count() + 1;
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": "the line is not valid UTF-8", "line": line})),
            )
                .into_response();
        }
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    match shared.jobs.try_send(Job::Transaction { body, reply }) {
        Ok(()) => {}
        Err(mpsc::TrySendError::Full(_)) => {
            let mut r = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many transactions are waiting; retry later",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return r;
        }
        Err(mpsc::TrySendError::Disconnected(_)) => {
            return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
        }
    }
    match answer.await {
        Ok(Ok(answer)) => answer_response(answer),
        Ok(Err((status, j))) => (status, axum::Json(j)).into_response(),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped"),
    }
}

#[derive(serde::Deserialize)]
struct RelationQuery {
    pattern: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// Lower a pattern such as `path(1, x)` on relation `rel` against the read view,
/// without interning (see [`Pattern::lower_readonly`]): `None` when a constant cannot
/// occur (an unknown symbol).
fn pattern(view: &View, rel: &RelView, text: &str) -> Result<Option<Pattern>, String> {
    let p = Pattern::lower_readonly(text, &view.declared, &view.symbols)
        .map_err(|e| format!("pattern: {e}"))?;
    if let Some(p) = &p {
        let on = &view.declared.relation(p.relation()).name;
        if *on != rel.name {
            return Err(format!(
                "pattern: the pattern is on `{on}`, not `{}`",
                rel.name
            ));
        }
    }
    Ok(p)
}

/// A page size asked for, or the default; larger than [`MAX_PAGE`] is refused.
fn page_limit(limit: Option<usize>, default: usize) -> Result<usize, Box<Response>> {
    match limit {
        None => Ok(default),
        Some(n) if n <= MAX_PAGE => Ok(n),
        Some(_) => Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            format!("limit must be at most {MAX_PAGE}; page with offset"),
        ))),
    }
}

async fn get_relation(
    State(shared): State<Arc<Shared>>,
    UrlPath(name): UrlPath<String>,
    Query(q): Query<RelationQuery>,
) -> Response {
    let limit = match page_limit(q.limit, DEFAULT_PAGE) {
        Ok(l) => l,
        Err(r) => return *r,
    };
    let offset = q.offset.unwrap_or(0);
    let view = current(&shared);
    let Some(rel) = view.relations.iter().find(|r| r.name == name) else {
        return error(StatusCode::NOT_FOUND, "unknown relation");
    };
    let mut rows: Vec<&[Value]> = Vec::new();
    match q.pattern.as_deref().map(|p| pattern(&view, rel, p)) {
        None => rows = rel.facts.iter().collect(),
        Some(Ok(Some(p))) => {
            let mut bound = Vec::new();
            rows = rel
                .facts
                .iter()
                .filter(|t| p.matches(t, &mut bound))
                .collect();
        }
        // A symbol the materialization never held: nothing matches.
        Some(Ok(None)) => {}
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, e),
    }
    let symbols = &view.symbols;
    let read = symbols.read();
    let compare = |a: &&[Value], b: &&[Value]| {
        for ((x, y), t) in a.iter().zip(b.iter()).zip(&rel.types) {
            let o = t.compare(*x, *y, &read);
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    };
    let count = rows.len();
    // Only the rows up to the end of the page need their order.
    let end = offset.saturating_add(limit).min(count);
    if end < count && end > 0 {
        rows.select_nth_unstable_by(end - 1, compare);
        rows.truncate(end);
    }
    rows.sort_unstable_by(compare);
    // Resolving below takes the table's lock again: release this one first.
    drop(read);
    let facts: Vec<Json> = rows
        .iter()
        .skip(offset)
        .take(limit)
        .map(|t| {
            Json::Array(
                t.iter()
                    .zip(&rel.types)
                    .map(|(&v, &ty)| value_json(ty, v, symbols))
                    .collect(),
            )
        })
        .collect();
    let next = (end < count).then_some(end);
    axum::Json(json!({
        "relation": rel.name,
        "commit": view.commit,
        "count": count,
        "offset": offset,
        "limit": limit,
        "truncated": next.is_some(),
        "next_offset": next,
        "facts": facts,
    }))
    .into_response()
}

async fn get_size(State(shared): State<Arc<Shared>>, UrlPath(name): UrlPath<String>) -> Response {
    let view = current(&shared);
    match view.relations.iter().find(|r| r.name == name) {
        Some(rel) => axum::Json(
            json!({"relation": rel.name, "commit": view.commit, "size": rel.facts.len()}),
        )
        .into_response(),
        None => error(StatusCode::NOT_FOUND, "unknown relation"),
    }
}

async fn get_rules(State(shared): State<Arc<Shared>>) -> Response {
    let view = current(&shared);
    axum::Json(json!({"commit": view.commit, "rules": *view.rules})).into_response()
}

#[derive(serde::Deserialize)]
struct ChangesQuery {
    since: Option<u64>,
    offset: Option<usize>,
    limit: Option<usize>,
    follow: Option<bool>,
}

fn gone(instance: &str, since: u64, oldest: u64) -> Response {
    (
        StatusCode::GONE,
        axum::Json(json!({
            "error": format!(
                "commit {since} is no longer in the change log (it keeps commits from {oldest} on); \
                 read the state from /relations and follow from there"
            ),
            "instance": instance,
            "oldest": oldest,
        })),
    )
        .into_response()
}

async fn get_changes(State(shared): State<Arc<Shared>>, Query(q): Query<ChangesQuery>) -> Response {
    let since = q.since.unwrap_or(0);
    let offset = q.offset.unwrap_or(0);
    if q.follow.unwrap_or(false) {
        return follow_changes(shared, since, offset);
    }
    let limit = match page_limit(q.limit, DEFAULT_CHANGES_PAGE) {
        Ok(l) => l.max(1),
        Err(r) => return *r,
    };
    let view = current(&shared);
    // Take what fits under the read lock (Arc clones), serialise after.
    let (oldest, next_commit, taken) = {
        let log = shared.log.read().unwrap_or_else(|e| e.into_inner());
        if since < log.first_kept {
            return gone(&shared.instance, since, log.first_kept);
        }
        let mut taken: Vec<(u64, Arc<ChangeList>, usize, usize)> = Vec::new();
        let mut budget = limit;
        let mut at = (since, offset);
        while let Some(entry) = log.get(at.0) {
            let len = entry.changes.len();
            let from = at.1.min(len);
            let rest = len - from;
            if rest > budget && !taken.is_empty() {
                break;
            }
            let to = from + rest.min(budget);
            budget -= to - from;
            taken.push((entry.commit, entry.changes.clone(), from, to));
            at = if to == len { (at.0 + 1, 0) } else { (at.0, to) };
            if budget == 0 {
                break;
            }
        }
        (log.first_kept, at, taken)
    };
    let more = shared.committed.borrow().gt(&next_commit.0) || next_commit.1 > 0;
    // Written as text: a page of up to `MAX_PAGE` changes as a tree of JSON values
    // took about 2 KB per change (four pages at once, 350 MB).
    let instance = Json::String(shared.instance.clone()).to_string();
    let mut page = format!("{{\"instance\":{instance},\"oldest\":{oldest},\"commits\":[");
    for (k, (commit, changes, from, to)) in taken.iter().enumerate() {
        if k > 0 {
            page.push(',');
        }
        let complete = *to == changes.len();
        let _ = write!(
            page,
            "{{\"instance\":{instance},\"commit\":{commit},\"offset\":{from},\"complete\":{complete},\"changes\":["
        );
        let (declared, symbols) = (&view.declared, &view.symbols);
        write_changes_json(&mut page, changes, *from..*to, declared, symbols, true);
        page.push_str("]}");
    }
    let _ = write!(
        page,
        "],\"next\":{{\"since\":{},\"offset\":{}}},\"more\":{more}}}",
        next_commit.0, next_commit.1
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(page))
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "cannot answer"))
}

/// What a follow stream has sent so far.
struct Cursor {
    shared: Arc<Shared>,
    committed: tokio::sync::watch::Receiver<u64>,
    stopping: tokio::sync::watch::Receiver<bool>,
    /// The commit being sent and how many of its changes are out.
    commit: u64,
    offset: usize,
    /// Whether a commit's line is open, and whether it has no change yet.
    in_line: bool,
    first_in_line: bool,
    ended: bool,
}

/// `/changes?follow=true`: one JSON line per commit, `{"instance", "commit", "changes"}`,
/// written [`STREAM_CHUNK`] changes at a time so a large commit never sits in memory
/// as one string. The stream ends when the server stops, or with an `{"error", "oldest"}`
/// line when the client fell so far behind that the log no longer has its next commit.
fn follow_changes(shared: Arc<Shared>, since: u64, offset: usize) -> Response {
    {
        let log = shared.log.read().unwrap_or_else(|e| e.into_inner());
        if since < log.first_kept {
            return gone(&shared.instance, since, log.first_kept);
        }
    }
    let cursor = Cursor {
        committed: shared.committed.subscribe(),
        stopping: shared.stopping.subscribe(),
        shared,
        commit: since,
        offset,
        in_line: false,
        first_in_line: true,
        ended: false,
    };
    let stream = futures_util::stream::unfold(cursor, |mut c| async move {
        if c.ended {
            return None;
        }
        loop {
            if *c.stopping.borrow() {
                return None;
            }
            let next = {
                let log = c.shared.log.read().unwrap_or_else(|e| e.into_inner());
                if c.commit < log.first_kept {
                    Err(log.first_kept)
                } else {
                    Ok(log.get(c.commit).map(|e| e.changes.clone()))
                }
            };
            match next {
                Err(oldest) => {
                    c.ended = true;
                    let line = json!({
                        "error": format!("this stream fell behind: commit {} is no longer in the change log", c.commit),
                        "instance": c.shared.instance,
                        "oldest": oldest,
                    });
                    return Some((Ok::<_, std::io::Error>(format!("{line}\n")), c));
                }
                Ok(Some(changes)) => {
                    let view = current(&c.shared);
                    let from = c.offset.min(changes.len());
                    let to = (from + STREAM_CHUNK).min(changes.len());
                    let mut text = String::new();
                    if !c.in_line {
                        // A line starting in the middle of a commit says where.
                        text.push_str(&format!(
                            "{{\"instance\":{},\"commit\":{},\"offset\":{from},\"changes\":[",
                            Json::String(c.shared.instance.clone()),
                            c.commit
                        ));
                        c.in_line = true;
                        c.first_in_line = true;
                    }
                    let (declared, symbols) = (&view.declared, &view.symbols);
                    let first = c.first_in_line;
                    write_changes_json(&mut text, &changes, from..to, declared, symbols, first);
                    c.first_in_line &= from == to;
                    if to == changes.len() {
                        text.push_str("]}\n");
                        c.commit += 1;
                        c.offset = 0;
                        c.in_line = false;
                    } else {
                        c.offset = to;
                    }
                    return Some((Ok(text), c));
                }
                Ok(None) => {
                    // Nothing new: wait for the next commit, or the end of the server.
                    tokio::select! {
                        changed = c.committed.changed() => if changed.is_err() { return None; },
                        _ = c.stopping.changed() => return None,
                    }
                }
            }
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "cannot stream"))
}

async fn get_health(State(shared): State<Arc<Shared>>) -> Response {
    let view = current(&shared);
    match failure(&shared) {
        None => axum::Json(json!({
            "status": "ok",
            "instance": shared.instance,
            "commit": view.commit,
        }))
        .into_response(),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({
                "status": "failed",
                "error": reason,
                "instance": shared.instance,
                "commit": view.commit,
            })),
        )
            .into_response(),
    }
}

/// The last measure of the engine's memory, as JSON (`null` if the engine does not
/// account for its memory).
fn engine_memory(shared: &Shared) -> Json {
    let guard = shared.memory.read().unwrap_or_else(|e| e.into_inner());
    let Some(m) = guard.as_ref() else {
        return Json::Null;
    };
    let total = m.usage.total_bytes();
    json!({
        "commit": m.commit,
        "total_bytes": total,
        "bytes_per_fact": if m.facts > 0 { json!((total as f64 / m.facts as f64 * 10.0).round() / 10.0) } else { Json::Null },
        "parts": m.usage.parts.iter().map(|p| json!({"name": p.name, "records": p.records, "bytes": p.bytes})).collect::<Vec<_>>(),
    })
}

async fn get_metrics(State(shared): State<Arc<Shared>>) -> Response {
    let view = current(&shared);
    let facts: serde_json::Map<String, Json> = view
        .relations
        .iter()
        .map(|r| (r.name.clone(), json!(r.facts.len())))
        .collect();
    let (log_commits, log_bytes, oldest) = {
        let log = shared.log.read().unwrap_or_else(|e| e.into_inner());
        (log.entries.len(), log.bytes, log.first_kept)
    };
    axum::Json(json!({
        "instance": shared.instance,
        "commit": view.commit,
        "transactions": view.commit + 1,
        "facts": facts,
        "output_relations": view.relations.iter().filter(|r| r.output).map(|r| r.name.clone()).collect::<Vec<_>>(),
        "last_commit_ms": view.last_commit_ms,
        "change_log": {"commits": log_commits, "bytes": log_bytes, "oldest": oldest},
        "peak_memory_bytes": crate::run::peak_rss_bytes(),
        "resident_memory_bytes": crate::run::rss_bytes(),
        "engine_memory": engine_memory(&shared),
        "uptime_s": (shared.started.elapsed().as_secs_f64() * 1e3).round() / 1e3,
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_other_than_addresses_and_localhost_are_refused() {
        let allowed = vec!["db.example.org".to_string()];
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST",
            "[::1]:8080",
            "[::1]",
            "10.1.2.3",
            "db.example.org:443",
        ] {
            assert!(host_allowed(ok, &allowed), "{ok}");
        }
        for bad in [
            "",
            "evil.example.com",
            "evil.example.com:8080",
            "localhost.evil.com",
            "127.0.0.1:80x",
            "[::1",
            "[nothost]:80",
        ] {
            assert!(!host_allowed(bad, &allowed), "{bad}");
        }
    }

    #[test]
    fn only_the_same_origin_or_allowed_ones_may_call() {
        let allowed = vec!["https://app.example.org".to_string()];
        assert!(origin_allowed(
            "http://127.0.0.1:8080",
            "127.0.0.1:8080",
            &allowed
        ));
        assert!(origin_allowed(
            "https://app.example.org/",
            "127.0.0.1:8080",
            &allowed
        ));
        assert!(!origin_allowed(
            "http://evil.com",
            "127.0.0.1:8080",
            &allowed
        ));
        assert!(!origin_allowed("null", "127.0.0.1:8080", &allowed));
        assert!(!origin_allowed(
            "http://127.0.0.1:9999",
            "127.0.0.1:8080",
            &allowed
        ));
    }

    #[test]
    fn secrets_are_equal_only_when_equal() {
        assert!(same_secret(b"abcdef", b"abcdef"));
        assert!(!same_secret(b"abcdef", b"abcdeg"));
        assert!(!same_secret(b"abcdef", b"abcde"));
        assert!(!same_secret(b"abcde", b"abcdef"));
        assert!(!same_secret(b"", b"a"));
    }

    #[test]
    fn the_change_log_keeps_the_last_commits_within_its_bounds() {
        let changes = |r: std::ops::Range<u32>| {
            let mut list = ChangeList::new();
            for i in r {
                list.push(0, &[i, i], 1);
            }
            list
        };
        let mut log = ChangeLog::new(0, 3, usize::MAX);
        for c in 0..5u32 {
            log.push(c.into(), changes(c..c + 1));
        }
        assert_eq!(log.first_kept, 2);
        assert!(log.get(1).is_none());
        assert_eq!(log.get(4).map(|e| e.commit), Some(4));
        assert!(log.get(5).is_none());
        // By bytes: a commit pushes older ones out until the log fits.
        // (30 changes of two values: 30 * 16 + 60 * 4 bytes, and 64 per commit.)
        let mut log = ChangeLog::new(0, 100, 2000);
        log.push(0, changes(0..1));
        log.push(1, changes(0..30));
        log.push(2, changes(0..30));
        assert_eq!((log.first_kept, log.entries.len()), (0, 3));
        log.push(3, changes(0..30));
        assert_eq!((log.first_kept, log.entries.len()), (2, 2));
        assert_eq!(log.bytes, 2 * 784);
        // A commit larger than the log alone is not kept, nor those before it; its
        // changes still come back for its answer, and the log goes on after it.
        assert_eq!(log.room(), 2000 - 64);
        let large = log.push(4, changes(0..1000));
        assert_eq!(large.len(), 1000);
        assert_eq!((log.first_kept, log.entries.len(), log.bytes), (5, 0, 0));
        assert!(log.get(3).is_none() && log.get(4).is_none());
        log.push(5, changes(5..6));
        assert_eq!(log.first_kept, 5);
        assert_eq!(log.get(5).map(|e| e.commit), Some(5));
    }

    /// A change as a JSON value (the reference [`write_change_json`] is held to): `{"op": "+", "relation": "path", "values": [1, 3], "fact": "path(1, 3)."}`.
    fn change_json(
        rel: Option<(&str, &[Type])>,
        symbols: &SymbolTable,
        (_, tuple, d): (RelId, &[Value], isize),
    ) -> Json {
        let op = if d > 0 { "+" } else { "-" };
        let Some((name, types)) = rel else {
            return json!({"op": op, "relation": null});
        };
        let mut fact = String::new();
        render_fact(&mut fact, name, types, tuple, &symbols.read());
        json!({
            "op": op,
            "relation": name,
            "values": tuple.iter().zip(types).map(|(&v, &t)| value_json(t, v, symbols)).collect::<Vec<_>>(),
            "fact": fact,
        })
    }

    #[test]
    fn changes_are_written_as_serde_writes_them() {
        let text = ".type P = [a: symbol, b: float]\n\
                    .decl e(s: symbol, n: number, u: unsigned, f: float, p: P)\n";
        let mut m = Materialization::new("t.dl", text, "seminaive", 1).expect("checks");
        for f in [
            "e(\"quote \\\" back \\\\ tab \\t nl \\n cr \\r\", -3, 4, 1.5, [\"x\\\"y\", 0.1])",
            "e(\"bell \u{7} bs \u{8} ff \u{c} é ✓\", 2147483647, 4294967295, -0.25, nil)",
            "e(\"\", -2147483648, 0, 3, [\"\", -1e30])",
        ] {
            m.insert_fact(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
        let c = m.commit().expect("commits");
        m.remove_fact("e(\"\", -2147483648, 0, 3, [\"\", -1e30])")
            .expect("a fact");
        let removed = m.commit().expect("commits");
        let p = m.program();
        let rel = |r: u32| {
            p.relations
                .get(r as usize)
                .map(|x| (x.name.as_str(), &x.types[..]))
        };
        let changes: Vec<_> = c.changes.iter().chain(removed.changes.iter()).collect();
        assert_eq!(changes.len(), 4);
        let (mut out, mut fact, mut all) = (String::new(), String::new(), String::new());
        for ch in changes {
            for rel in [rel(ch.0), None] {
                out.clear();
                write_change_json(&mut out, &mut fact, rel, &m.symbols().read(), ch);
                assert_eq!(out, change_json(rel, m.symbols(), ch).to_string());
                all.push_str(&out);
            }
        }
        // Every escape was met.
        for escaped in [
            r"\u0007", r"\b", r"\f", r"\t", r"\n", r"\r", r#"\\\""#, "é ✓",
        ] {
            assert!(all.contains(escaped), "{escaped} in {all}");
        }
    }

    #[test]
    fn milliseconds_have_three_decimals() {
        assert_eq!(millis(Duration::from_nanos(1_492_400_999)), 1492.401);
        assert_eq!(millis(Duration::from_micros(1500)), 1.5);
    }
}
