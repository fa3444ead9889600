//! A load test of `dynalog serve` on loopback: N concurrent clients mix transactions
//! (fact insertions and deletions, adding and removing a rule, some refused lines) with
//! reads (pages of a relation, the change log, sizes) for a fixed time. Every
//! acknowledged transaction carries its commit number; applied in that order to a
//! reference materialization (the `seminaive` engine), they must give exactly the
//! server's final state, relation by relation. Throughput and p50/p99 latencies are
//! printed.
//!
//! The default run is short (4 clients, 3 s). The figures in docs/serve.md come from
//! the ignored long run:
//!
//! ```sh
//! DYNALOG_LOAD_CLIENTS=8 DYNALOG_LOAD_SECONDS=30 \
//!   cargo test --release --test serve_load -- --ignored --nocapture
//! ```

mod common;

use common::Rng;

use common::root;
use serde_json::Value as Json;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const PROGRAM: &str = "examples/tc.dl";
const FACTS: &str = "examples/tc";
const RULE: &str = "path(x, y) :- edge(y, x).";

/// A random transaction body: 1–5 lines.
fn transaction(rng: &mut Rng) -> String {
    let mut body = String::new();
    for _ in 0..1 + rng.below(5) {
        let (a, b) = (rng.below(30), rng.below(30));
        let line = match rng.below(20) {
            0 => format!("+ {RULE}"),
            1 => format!("- {RULE}"),
            2 => "+ edge(1, \"not a number\").".to_string(),
            3..=10 => format!("+ edge({a}, {b})."),
            _ => format!("- edge({a}, {b})."),
        };
        body.push_str(&line);
        body.push('\n');
    }
    body
}

#[derive(Default)]
struct Outcome {
    /// (commit number, body) of every acknowledged transaction.
    acknowledged: Vec<(u64, String)>,
    refused: usize,
    reads: usize,
    write_latencies: Vec<Duration>,
    read_latencies: Vec<Duration>,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

/// Every fact of `relation` on the server, page by page.
fn server_facts(addr: &str, relation: &str) -> Vec<Json> {
    let mut facts = Vec::new();
    let mut offset = 0;
    loop {
        let (status, body) = common::http(
            addr,
            "GET",
            &format!("/relations/{relation}?offset={offset}&limit=1000"),
            "",
        );
        assert_eq!(status, 200, "{body}");
        let page: Json = serde_json::from_str(&body).expect("json");
        facts.extend(page["facts"].as_array().expect("facts").iter().cloned());
        match page["next_offset"].as_u64() {
            Some(next) => offset = next,
            None => return facts,
        }
    }
}

fn load(clients: usize, seconds: f64) {
    let server = common::start_server(&[PROGRAM, "-F", FACTS, "--max-queued", "1024"]);
    let total = Mutex::new(Outcome::default());
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    std::thread::scope(|s| {
        for client in 0..clients {
            let (addr, total) = (&server.addr, &total);
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((client as u64 + 1) * 0x1000_0001));
                let mut mine = Outcome::default();
                while Instant::now() < deadline {
                    if rng.below(2) == 0 {
                        let body = transaction(&mut rng);
                        let t = Instant::now();
                        let (status, answer) = common::http(addr, "POST", "/transactions", &body);
                        mine.write_latencies.push(t.elapsed());
                        match status {
                            200 => {
                                let j: Json = serde_json::from_str(&answer).expect("json");
                                let n = j["commit"].as_u64().expect("a commit number");
                                mine.acknowledged.push((n, body));
                            }
                            400 => mine.refused += 1,
                            other => panic!("POST answered {other}: {answer}"),
                        }
                    } else {
                        let path = match rng.below(3) {
                            0 => format!("/relations/path?offset={}&limit=50", rng.below(100)),
                            1 => "/relations/edge/size".to_string(),
                            _ => "/changes?since=0&limit=100".to_string(),
                        };
                        let t = Instant::now();
                        let (status, answer) = common::http(addr, "GET", &path, "");
                        mine.read_latencies.push(t.elapsed());
                        assert!(status == 200 || status == 410, "{path}: {status} {answer}");
                        mine.reads += 1;
                    }
                }
                let mut total = total.lock().expect("lock");
                total.acknowledged.append(&mut mine.acknowledged);
                total.refused += mine.refused;
                total.reads += mine.reads;
                total.write_latencies.append(&mut mine.write_latencies);
                total.read_latencies.append(&mut mine.read_latencies);
            });
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let mut total = total.into_inner().expect("lock");

    // Commit numbers are 1, 2, 3, ... with no gap and no repeat.
    total.acknowledged.sort_by_key(|(n, _)| *n);
    let numbers: Vec<u64> = total.acknowledged.iter().map(|(n, _)| *n).collect();
    let expected: Vec<u64> = (1..=numbers.len() as u64).collect();
    assert_eq!(
        numbers, expected,
        "acknowledged commits are numbered densely"
    );

    // The reference: the same transactions, in commit order, on the reference engine.
    let text = std::fs::read_to_string(root().join(PROGRAM)).expect("program");
    let mut reference =
        dynalog::live::Materialization::new(PROGRAM, &text, "seminaive", 1).expect("checks");
    reference.stage_inputs(&root().join(FACTS)).expect("inputs");
    reference.commit().expect("commit 0");
    for (n, body) in &total.acknowledged {
        for line in body.lines() {
            reference
                .stage_command(line, &root().join(FACTS))
                .expect("an acknowledged line stages");
        }
        let c = reference
            .commit()
            .expect("an acknowledged transaction commits");
        assert_eq!(c.number, *n);
    }
    for relation in ["edge", "path"] {
        let want: Vec<Json> = reference
            .dump(relation)
            .expect("a relation")
            .iter()
            .map(|(_, t)| Json::Array(t.iter().map(|&v| Json::from(v as i32)).collect()))
            .collect();
        assert_eq!(
            server_facts(&server.addr, relation),
            want,
            "`{relation}` after {} transactions",
            numbers.len()
        );
    }
    let (_, rules) = common::http(&server.addr, "GET", "/rules", "");
    let rules: Json = serde_json::from_str(&rules).expect("json");
    assert_eq!(
        rules["rules"].as_array().map(Vec::len),
        Some(reference.rules().len())
    );

    let (_, metrics) = common::http(&server.addr, "GET", "/metrics", "");
    let metrics: Json = serde_json::from_str(&metrics).expect("json");
    let peak_mb = metrics["peak_memory_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6;
    total.write_latencies.sort();
    total.read_latencies.sort();
    eprintln!(
        "load: {clients} clients, {elapsed:.1} s: {} transactions acknowledged ({:.0}/s), {} refused, \
         {} reads ({:.0}/s); write latency p50 {:.2} ms, p99 {:.2} ms; read latency p50 {:.2} ms, p99 {:.2} ms; server peak RSS {peak_mb:.1} MB",
        numbers.len(),
        numbers.len() as f64 / elapsed,
        total.refused,
        total.reads,
        total.reads as f64 / elapsed,
        percentile(&total.write_latencies, 0.5),
        percentile(&total.write_latencies, 0.99),
        percentile(&total.read_latencies, 0.5),
        percentile(&total.read_latencies, 0.99),
    );
    assert!(!numbers.is_empty(), "some transactions were acknowledged");
}

#[test]
fn concurrent_clients_end_in_the_state_of_their_acknowledged_transactions() {
    load(4, 3.0);
}

#[test]
#[ignore]
fn load_test_long() {
    let var = |name: &str, default: f64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    load(
        var("DYNALOG_LOAD_CLIENTS", 8.0) as usize,
        var("DYNALOG_LOAD_SECONDS", 30.0),
    );
}
