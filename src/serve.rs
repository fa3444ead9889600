//! `dynalog serve PROGRAM.dl [-F FACT_DIR] [-w N] [--engine NAME] [--listen ADDR]`
//!
//! The live materialization of `dynalog session` behind HTTP/JSON (axum on tokio).
//!
//! * `POST /transactions`: the body is command lines of a session (`+ FACT.`, `- FACT.`,
//!   `+ RULE.`, `- RULE.`, `load REL FILE`, `unload REL FILE`); one request is one
//!   transaction. Answers the commit: its number, counts and the changes of the
//!   `.output` relations (of all relations if the program declares none); or 400 with
//!   the line and the reason, and nothing of the request applied.
//! * `GET /relations/{name}?pattern=path(1,x)&limit=N`: facts, sorted;
//!   `GET /relations/{name}/size`; `GET /rules`.
//! * `GET /changes?since=N`: the committed changes from transaction N on;
//!   with `follow=true`, a stream of newline-delimited JSON, one line per commit, that
//!   stays open and continues as transactions commit.
//! * `GET /health`, `GET /metrics`.
//!
//! One thread owns the engine and applies transactions one at a time, in arrival order.
//! After each commit it publishes the changes into a read view (a set of facts per
//! relation, copied on write), so readers are answered from the last committed state
//! while the next transaction is being applied, and never see half of one. The read
//! view and the change log are kept in memory besides the engine's own state.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Args;
use dynalog::live::{Commit, Materialization, quote};
use dynalog_analysis::{SymbolTable, Type, Value};
use dynalog_engines::Change;
use serde_json::{Value as Json, json};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock, mpsc};
use std::time::Instant;

#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct ServeArgs {
    #[command(flatten)]
    pub live: crate::session::LiveArgs,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Address to listen on (only this address is bound; port 0 picks a free port,
    /// printed at startup).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
}

/// One relation in the read view.
#[derive(Clone)]
struct RelView {
    name: String,
    types: Vec<Type>,
    output: bool,
    facts: Arc<HashSet<Box<[Value]>>>,
}

/// What readers see: the state as of the last commit.
#[derive(Clone)]
struct View {
    relations: Vec<RelView>,
    symbols: Arc<SymbolTable>,
    rules: Arc<Vec<String>>,
    commits: u64,
    last_commit_ms: f64,
}

/// One committed transaction in the change log (changes of the shown relations).
struct Logged {
    commit: u64,
    changes: Vec<Change>,
}

struct Shared {
    view: RwLock<Arc<View>>,
    log: RwLock<Vec<Logged>>,
    /// The number of commits so far; followers wait on it.
    committed: tokio::sync::watch::Sender<u64>,
    jobs: mpsc::Sender<Job>,
    started: Instant,
}

/// Work for the engine thread.
enum Job {
    /// A transaction, with where to send its outcome.
    Transaction {
        body: String,
        reply: tokio::sync::oneshot::Sender<Result<Json, (StatusCode, Json)>>,
    },
    /// The server stops: drop the engine (in a cluster, this stops the others).
    Stop,
}

pub fn serve(args: ServeArgs) -> Result<(), String> {
    let live = args.live.clone();
    if live.cluster.processes > 1 && live.cluster.process > 0 {
        // Another process of a cluster: no HTTP, its share of every transaction.
        live.open_or_follow()?;
        return Ok(());
    }
    // The engine lives on its own thread; it reports whether the program loaded.
    let (jobs, job_rx) = mpsc::channel::<Job>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Arc<Shared>, String>>();
    let (committed, _) = tokio::sync::watch::channel(0u64);
    let fact_dir = live.fact_dir.clone();
    let engine_thread = std::thread::spawn(move || {
        let start = || -> Result<(Materialization, Commit), String> {
            let Some(mut m) = live.open_or_follow()? else {
                return Err("error: this process follows process 0".into());
            };
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
                relations: m
                    .program()
                    .relations
                    .iter()
                    .map(|r| RelView {
                        name: r.name.clone(),
                        types: r.types.clone(),
                        output: !r.outputs.is_empty(),
                        facts: Arc::new(HashSet::new()),
                    })
                    .collect(),
                symbols: Arc::new(SymbolTable::new()),
                rules: Arc::new(Vec::new()),
                commits: 0,
                last_commit_ms: 0.0,
            })),
            log: RwLock::new(Vec::new()),
            committed,
            jobs,
            started: Instant::now(),
        });
        publish(&shared, &m, &first);
        if ready_tx.send(Ok(shared.clone())).is_err() {
            return;
        }
        while let Ok(Job::Transaction { body, reply }) = job_rx.recv() {
            let outcome = transaction(&mut m, &fact_dir, &body).map(|c| {
                publish(&shared, &m, &c);
                commit_json(&m, &c)
            });
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
    let served = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .map_err(|e| format!("error: cannot listen on {}: {e}", args.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("error: cannot read the bound address: {e}"))?;
        println!("listening on http://{addr}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        axum::serve(listener, router(shared))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(|e| format!("error: the server failed: {e}"))
    });
    // Stop the engine and wait for it, so that in a cluster the other processes learn
    // that the dataflow is closed before this process exits.
    let _ = stop.send(Job::Stop);
    let _ = engine_thread.join();
    served
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/transactions", post(post_transaction))
        .route("/relations/{name}", get(get_relation))
        .route("/relations/{name}/size", get(get_size))
        .route("/rules", get(get_rules))
        .route("/changes", get(get_changes))
        .route(
            "/health",
            get(|| async { axum::Json(json!({"status": "ok"})) }),
        )
        .route("/metrics", get(get_metrics))
        .with_state(shared)
}

/// Stage every line of a request body and commit them as one transaction.
fn transaction(
    m: &mut Materialization,
    dir: &std::path::Path,
    body: &str,
) -> Result<Commit, (StatusCode, Json)> {
    let refuse = |m: &mut Materialization, line: Option<usize>, reason: String| {
        m.abort();
        let mut j = json!({"error": reason});
        if let Some(l) = line {
            j["line"] = json!(l);
        }
        (StatusCode::BAD_REQUEST, j)
    };
    for (i, line) in body.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("//") || t.starts_with('#') {
            continue;
        }
        match m.stage_command(line, dir) {
            Ok(true) => {}
            Ok(false) => {
                let word = t.split_whitespace().next().unwrap_or(t);
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
    m.commit()
        .map_err(|e| refuse(m, None, format!("commit refused: {}", e.message)))
}

/// Publish a commit into the read view and the change log.
fn publish(shared: &Shared, m: &Materialization, c: &Commit) {
    {
        let mut guard = shared.view.write().unwrap_or_else(|e| e.into_inner());
        let view = Arc::make_mut(&mut *guard);
        let program = m.program();
        // Relations appended or dropped by a rule change.
        view.relations.truncate(program.relations.len());
        for r in &program.relations[view.relations.len()..] {
            view.relations.push(RelView {
                name: r.name.clone(),
                types: r.types.clone(),
                output: !r.outputs.is_empty(),
                facts: Arc::new(HashSet::new()),
            });
        }
        for (rel, tuple, d) in &c.changes {
            if let Some(rv) = view.relations.get_mut(*rel as usize) {
                let facts = Arc::make_mut(&mut rv.facts);
                if *d > 0 {
                    facts.insert(tuple.clone().into_boxed_slice());
                } else {
                    facts.remove(&tuple[..]);
                }
            }
        }
        // Symbols are interned densely in order: append the new ones.
        let have = view.symbols.len();
        if m.symbols().len() > have {
            let symbols = Arc::make_mut(&mut view.symbols);
            for id in have..m.symbols().len() {
                symbols.intern(m.symbols().resolve(id as Value));
            }
        }
        view.rules = Arc::new(m.rules());
        view.commits = c.number + 1;
        view.last_commit_ms = c.elapsed.as_secs_f64() * 1e3;
    }
    let shown = m.shown_changes(&c.changes);
    shared
        .log
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(Logged {
            commit: c.number,
            changes: shown,
        });
    shared.committed.send_replace(c.number + 1);
}

fn commit_json(m: &Materialization, c: &Commit) -> Json {
    let changes = m.shown_changes(&c.changes);
    let (ins, del) = Commit::counts(&changes);
    let p = m.program();
    let rel = |r: u32| {
        p.relations
            .get(r as usize)
            .map(|x| (x.name.as_str(), &x.types[..]))
    };
    json!({
        "commit": c.number,
        "inserted": ins,
        "deleted": del,
        "elapsed_ms": c.elapsed.as_secs_f64() * 1e3,
        "changes": changes.iter().map(|ch| change_json(rel(ch.0), m.symbols(), ch)).collect::<Vec<_>>(),
    })
}

/// A value as JSON: numbers as numbers, symbols as strings.
fn value_json(t: Type, v: Value, symbols: &SymbolTable) -> Json {
    match t {
        Type::Symbol => Json::String(symbols.resolve(v).to_string()),
        Type::Number => json!(v as i32),
        Type::Unsigned => json!(v),
        Type::Float => json!(f32::from_bits(v)),
    }
}

/// A fact as Datalog text.
fn fact_text(name: &str, types: &[Type], tuple: &[Value], symbols: &SymbolTable) -> String {
    let args: Vec<String> = tuple
        .iter()
        .zip(types)
        .map(|(&v, &t)| match t {
            Type::Symbol => quote(symbols.resolve(v)),
            _ => t.render(v, symbols),
        })
        .collect();
    format!("{name}({}).", args.join(", "))
}

/// A change as JSON: `{"op": "+", "relation": "path", "values": [1, 3], "fact": "path(1, 3)."}`.
fn change_json(
    rel: Option<(&str, &[Type])>,
    symbols: &SymbolTable,
    (_, tuple, d): &Change,
) -> Json {
    let op = if *d > 0 { "+" } else { "-" };
    let Some((name, types)) = rel else {
        return json!({"op": op, "relation": null});
    };
    json!({
        "op": op,
        "relation": name,
        "values": tuple.iter().zip(types).map(|(&v, &t)| value_json(t, v, symbols)).collect::<Vec<_>>(),
        "fact": fact_text(name, types, tuple, symbols),
    })
}

fn view_rel(view: &View, r: u32) -> Option<(&str, &[Type])> {
    view.relations
        .get(r as usize)
        .map(|x| (x.name.as_str(), &x.types[..]))
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

fn current(shared: &Shared) -> Arc<View> {
    shared
        .view
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

async fn post_transaction(State(shared): State<Arc<Shared>>, body: String) -> Response {
    let (reply, answer) = tokio::sync::oneshot::channel();
    if shared.jobs.send(Job::Transaction { body, reply }).is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    }
    match answer.await {
        Ok(Ok(j)) => axum::Json(j).into_response(),
        Ok(Err((status, j))) => (status, axum::Json(j)).into_response(),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "the engine has stopped"),
    }
}

#[derive(serde::Deserialize)]
struct RelationQuery {
    pattern: Option<String>,
    limit: Option<usize>,
}

/// One argument of a read-only pattern.
enum Arg {
    Const(Value),
    Var(usize),
    Any,
}

/// Lower a pattern such as `path(1, x)` against the read view without interning:
/// `None` when a constant cannot occur (an unknown symbol).
fn pattern(view: &View, rel: &RelView, text: &str) -> Result<Option<Vec<Arg>>, String> {
    use dynalog_syntax::{Expr, Item, Number};
    let t = text.trim().trim_end_matches('.');
    let file = dynalog_syntax::SourceFile::new("<pattern>", format!("{t}."));
    let ast = dynalog_syntax::parse(&file).map_err(|d| format!("pattern: {}", d.message))?;
    let atom = match &ast.items[..] {
        [Item::Rule(r)] if r.body.is_empty() => &r.head,
        _ => return Err("pattern: expected one atom, such as `path(1, x)`".into()),
    };
    if atom.relation.name != rel.name {
        return Err(format!(
            "pattern: the pattern is on `{}`, not `{}`",
            atom.relation.name, rel.name
        ));
    }
    if atom.args.len() != rel.types.len() {
        return Err(format!(
            "pattern: `{}` has {} columns, the pattern {}",
            rel.name,
            rel.types.len(),
            atom.args.len()
        ));
    }
    let mut vars: Vec<&str> = Vec::new();
    let mut args = Vec::new();
    for (i, (e, &ty)) in atom.args.iter().zip(&rel.types).enumerate() {
        let bad = || format!("pattern: column {} does not fit type {ty}", i + 1);
        args.push(match e {
            Expr::Wildcard(_) => Arg::Any,
            Expr::Var(v) => match vars.iter().position(|&n| n == v.name) {
                Some(k) => Arg::Var(k),
                None => {
                    vars.push(&v.name);
                    Arg::Var(vars.len() - 1)
                }
            },
            Expr::Str(s, _) if ty == Type::Symbol => match view.symbols.lookup(s) {
                Some(id) => Arg::Const(id),
                None => return Ok(None),
            },
            Expr::Num(Number::Int(n), _) => Arg::Const(ty.encode_int(*n).ok_or_else(bad)?),
            Expr::Num(Number::Float(x), _) if ty == Type::Float => {
                Arg::Const((*x as f32).to_bits())
            }
            _ => return Err(bad()),
        });
    }
    Ok(Some(args))
}

fn matches(args: &[Arg], tuple: &[Value], bound: &mut Vec<Option<Value>>) -> bool {
    bound.clear();
    for (a, &v) in args.iter().zip(tuple) {
        match *a {
            Arg::Const(c) if c != v => return false,
            Arg::Var(k) => {
                if bound.len() <= k {
                    bound.resize(k + 1, None);
                }
                match bound[k] {
                    Some(b) if b != v => return false,
                    _ => bound[k] = Some(v),
                }
            }
            _ => {}
        }
    }
    true
}

async fn get_relation(
    State(shared): State<Arc<Shared>>,
    UrlPath(name): UrlPath<String>,
    Query(q): Query<RelationQuery>,
) -> Response {
    let view = current(&shared);
    let Some(rel) = view.relations.iter().find(|r| r.name == name) else {
        return error(StatusCode::NOT_FOUND, format!("unknown relation `{name}`"));
    };
    let args = match &q.pattern {
        None => Some(Vec::new()),
        Some(p) => match pattern(&view, rel, p) {
            Ok(a) => a,
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        },
    };
    let mut rows: Vec<&[Value]> = Vec::new();
    if let Some(args) = &args {
        let mut bound = Vec::new();
        rows = rel
            .facts
            .iter()
            .map(|t| &t[..])
            .filter(|t| matches(args, t, &mut bound))
            .collect();
    }
    let symbols = &view.symbols;
    rows.sort_by(|a, b| {
        for ((x, y), t) in a.iter().zip(b.iter()).zip(&rel.types) {
            let o = t.compare(*x, *y, symbols);
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
    let count = rows.len();
    let limit = q.limit.unwrap_or(usize::MAX);
    let facts: Vec<Json> = rows
        .iter()
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
    axum::Json(json!({
        "relation": rel.name,
        "commit": view.commits.saturating_sub(1),
        "count": count,
        "truncated": count > facts.len(),
        "facts": facts,
    }))
    .into_response()
}

async fn get_size(State(shared): State<Arc<Shared>>, UrlPath(name): UrlPath<String>) -> Response {
    let view = current(&shared);
    match view.relations.iter().find(|r| r.name == name) {
        Some(rel) => {
            axum::Json(json!({"relation": rel.name, "size": rel.facts.len()})).into_response()
        }
        None => error(StatusCode::NOT_FOUND, format!("unknown relation `{name}`")),
    }
}

async fn get_rules(State(shared): State<Arc<Shared>>) -> Response {
    let view = current(&shared);
    axum::Json(json!({"rules": *view.rules})).into_response()
}

#[derive(serde::Deserialize)]
struct ChangesQuery {
    since: Option<u64>,
    follow: Option<bool>,
}

/// The logged commits from `since` on, as JSON objects.
fn log_from(shared: &Shared, since: u64) -> Vec<Json> {
    let view = current(shared);
    let log = shared.log.read().unwrap_or_else(|e| e.into_inner());
    let start = log.partition_point(|l| l.commit < since);
    log[start..]
        .iter()
        .map(|l| {
            json!({
                "commit": l.commit,
                "changes": l.changes.iter().map(|c| change_json(view_rel(&view, c.0), &view.symbols, c)).collect::<Vec<_>>(),
            })
        })
        .collect()
}

async fn get_changes(State(shared): State<Arc<Shared>>, Query(q): Query<ChangesQuery>) -> Response {
    let since = q.since.unwrap_or(0);
    if !q.follow.unwrap_or(false) {
        return axum::Json(json!({"commits": log_from(&shared, since)})).into_response();
    }
    // Follow: send what is logged, then wait for each further commit.
    let rx = shared.committed.subscribe();
    let stream =
        futures_util::stream::unfold((shared, rx, since), |(shared, mut rx, next)| async move {
            loop {
                let entries = log_from(&shared, next);
                if let Some(last) = entries.last() {
                    let next = last["commit"].as_u64().unwrap_or(next) + 1;
                    let mut text = String::new();
                    for e in &entries {
                        text.push_str(&e.to_string());
                        text.push('\n');
                    }
                    return Some((Ok::<_, std::io::Error>(text), (shared, rx, next)));
                }
                // Nothing new: wait for the next commit (or the end of the server).
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| error(StatusCode::INTERNAL_SERVER_ERROR, "cannot stream"))
}

async fn get_metrics(State(shared): State<Arc<Shared>>) -> Response {
    let view = current(&shared);
    let facts: serde_json::Map<String, Json> = view
        .relations
        .iter()
        .map(|r| (r.name.clone(), json!(r.facts.len())))
        .collect();
    axum::Json(json!({
        "transactions": view.commits,
        "facts": facts,
        "output_relations": view.relations.iter().filter(|r| r.output).map(|r| r.name.clone()).collect::<Vec<_>>(),
        "last_commit_ms": view.last_commit_ms,
        "peak_memory_bytes": crate::run::peak_rss_bytes(),
        "uptime_s": shared.started.elapsed().as_secs_f64(),
    }))
    .into_response()
}
