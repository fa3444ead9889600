//! `dynalog serve` over loopback: transactions, refused transactions, queries, the
//! change log and its follow stream, health and metrics. Requests are plain HTTP/1.1
//! written on a TCP socket, so the test needs no HTTP client library.

mod common;

use common::{Server, root};
use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::Duration;

fn start(args: &[&str]) -> Server {
    common::start_server(args)
}

/// Send one request; returns (status, body).
fn request(server: &Server, method: &str, path: &str, body: &str) -> (u16, String) {
    common::http(&server.addr, method, path, body)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn facts_of(body: &str) -> Vec<String> {
    json(body)["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["op"].as_str().unwrap_or("?"),
                c["fact"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

#[test]
fn transactions_queries_and_the_change_log() {
    for engine in ["diff", "seminaive"] {
        let server = start(&["examples/tc.dl", "-F", "examples/tc", "--engine", engine]);
        let (status, body) = request(&server, "GET", "/health", "");
        assert_eq!((status, json(&body)["status"].as_str()), (200, Some("ok")));

        // One request, one transaction: a fact in, a fact out.
        let (status, body) = request(
            &server,
            "POST",
            "/transactions",
            "+ edge(8, 7).\n- edge(7, 1).\n",
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(json(&body)["commit"], 1);
        assert_eq!(
            facts_of(&body),
            [
                "- path(7, 1).",
                "- path(7, 2).",
                "- path(7, 3).",
                "- path(7, 4).",
                "+ path(8, 7)."
            ]
        );

        // A refused transaction applies nothing, whichever line is wrong.
        for bad in [
            "+ edge(9, 9).\n+ edge(1 2).\n",
            "+ edge(9, 9).\ncommit\n",
            "+ edge(9, 9).\n+ path(x, y) :- edge(x, z).\n",
        ] {
            let (status, body) = request(&server, "POST", "/transactions", bad);
            assert_eq!(status, 400, "{bad:?} -> {body}");
            assert!(json(&body)["error"].is_string());
        }
        let (_, body) = request(&server, "GET", "/relations/edge?pattern=edge(9,_)", "");
        assert_eq!(json(&body)["count"], 0, "{body}");
        let (_, body) = request(
            &server,
            "POST",
            "/transactions",
            "+ edge(9, 9).\n+ edge(1 2).\n",
        );
        assert_eq!(json(&body)["line"], 2);

        // Queries: pattern, limit, size, rules, unknown relation.
        let (status, body) = request(
            &server,
            "GET",
            "/relations/path?pattern=path(1,x)&limit=2",
            "",
        );
        assert_eq!(status, 200);
        let j = json(&body);
        assert_eq!(
            (j["count"].as_u64(), j["truncated"].as_bool()),
            (Some(3), Some(true))
        );
        assert_eq!(j["facts"], serde_json::json!([[1, 2], [1, 3]]));
        let (_, body) = request(&server, "GET", "/relations/path/size", "");
        assert_eq!(json(&body)["size"], 17);
        let (_, body) = request(&server, "GET", "/rules", "");
        assert_eq!(json(&body)["rules"].as_array().map(Vec::len), Some(2));
        let (status, _) = request(&server, "GET", "/relations/nosuch", "");
        assert_eq!(status, 404);
        let (status, _) = request(&server, "GET", "/relations/path?pattern=path(1)", "");
        assert_eq!(status, 400);

        // A rule change is a transaction too.
        let (status, body) = request(
            &server,
            "POST",
            "/transactions",
            "- path(a, c) :- path(a, b), edge(b, c).\n",
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(json(&body)["deleted"], 10);

        // The change log from commit 1 on: the two successful transactions.
        let (_, body) = request(&server, "GET", "/changes?since=1", "");
        let commits = json(&body)["commits"].as_array().cloned().expect("commits");
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[1]["commit"], 2);

        let (_, body) = request(&server, "GET", "/metrics", "");
        let m = json(&body);
        assert_eq!(m["transactions"], 3);
        assert_eq!(m["facts"]["path"], 7);
        // The engine's memory by part, as last measured (the differential engine
        // accounts for its memory, the reference engine does not).
        assert!(
            m["resident_memory_bytes"].as_u64().unwrap_or(0) > 0,
            "{body}"
        );
        let memory = &m["engine_memory"];
        if engine == "diff" {
            let parts = memory["parts"].as_array().expect("parts");
            let sum: u64 = parts.iter().filter_map(|p| p["bytes"].as_u64()).sum();
            assert_eq!(memory["total_bytes"].as_u64(), Some(sum), "{body}");
            assert!(parts.iter().any(|p| {
                p["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("distinct"))
                    && p["records"].as_u64() > Some(0)
            }));
        } else {
            assert!(memory.is_null(), "{body}");
        }
    }
}

#[test]
fn following_the_change_log_streams_each_commit() {
    let server = start(&["examples/tc.dl", "-F", "examples/tc"]);
    let mut s = std::net::TcpStream::connect(&server.addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "GET /changes?since=1&follow=true HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .expect("writes");
    let mut reader = BufReader::new(s);
    // Headers.
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        if line == "\r\n" {
            break;
        }
    }
    for (i, fact) in ["edge(8, 1)", "edge(9, 8)"].iter().enumerate() {
        let (status, _) = request(&server, "POST", "/transactions", &format!("+ {fact}.\n"));
        assert_eq!(status, 200);
        // Chunked encoding: a size line, then the data line(s).
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line).expect("chunk");
            if line.trim_start().starts_with('{') {
                break;
            }
        }
        let j = json(line.trim());
        assert_eq!(j["commit"], i as u64 + 1);
        assert!(!j["changes"].as_array().expect("changes").is_empty());
    }
}

#[test]
fn a_program_that_does_not_load_is_an_error_before_listening() {
    let o = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args([
            "serve",
            "examples/tc.dl",
            "-F",
            "tests/sessions/data",
            "--listen",
            "127.0.0.1:0",
        ])
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("edge.facts"));
    assert!(o.stdout.is_empty());
}

#[test]
fn readers_are_answered_during_a_large_transaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chain: String = (0..1000)
        .map(|i| format!("{}\t{}\n", 100 + i, 101 + i))
        .collect();
    let file = dir.path().join("chain.facts");
    std::fs::write(&file, chain).expect("writes");
    let load_dir = dir.path().to_str().expect("a UTF-8 path");
    let server = start(&[
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--allow-load",
        load_dir,
    ]);
    let body = "load edge chain.facts\n".to_string();
    let (_, before) = request(&server, "GET", "/relations/path/size", "");
    let before = json(&before)["size"].as_u64().expect("size");
    std::thread::scope(|s| {
        let writer = s.spawn(|| request(&server, "POST", "/transactions", &body));
        let mut during = 0;
        let mut sizes = Vec::new();
        while !writer.is_finished() {
            let (status, body) = request(&server, "GET", "/relations/path/size", "");
            assert_eq!(status, 200);
            let size = json(&body)["size"].as_u64().expect("size");
            if !writer.is_finished() {
                during += 1;
            }
            sizes.push(size);
        }
        let (status, body) = writer.join().expect("writer");
        assert_eq!(status, 200, "{body}");
        assert!(during > 0, "no read was answered while the transaction ran");
        // Readers see the state before or after the transaction, never a part of it.
        let after = before + 1000 * 1001 / 2;
        let other: Vec<u64> = sizes
            .iter()
            .copied()
            .filter(|&n| n != before && n != after)
            .take(5)
            .collect();
        assert!(
            other.is_empty(),
            "sizes other than {before} and {after}: {other:?}"
        );
        let (_, body) = request(&server, "GET", "/relations/path/size", "");
        assert_eq!(json(&body)["size"], after);
    });
}

#[test]
fn a_thousand_single_fact_transactions_end_in_the_reference_state() {
    let server = start(&["examples/tc.dl", "-F", "examples/tc", "-w", "2"]);
    let text = std::fs::read_to_string(root().join("examples/tc.dl")).expect("program");
    let mut reference =
        dynalog::Materialization::new("tc.dl", &text, "seminaive", 1).expect("checks");
    reference
        .stage_inputs(&root().join("examples/tc"))
        .expect("inputs");
    let mut seed = 7u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..1000 {
        let r = next();
        let line = format!(
            "{} edge({}, {}).",
            if r % 3 == 0 { '-' } else { '+' },
            (r >> 8) % 25,
            (r >> 16) % 25
        );
        let (status, body) = request(&server, "POST", "/transactions", &line);
        assert_eq!(status, 200, "{line}: {body}");
        assert!(reference.stage_command(&line, &root()).expect("stages"));
    }
    reference.commit().expect("reference commits");
    for rel in ["edge", "path"] {
        let (_, body) = request(&server, "GET", &format!("/relations/{rel}"), "");
        let got: Vec<String> = json(&body)["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .map(|f| f.to_string())
            .collect();
        let want: Vec<String> = reference
            .dump(rel)
            .expect("relation")
            .iter()
            .map(|(_, t)| {
                serde_json::json!(t.iter().map(|&v| v as i32).collect::<Vec<_>>()).to_string()
            })
            .collect();
        assert_eq!(got, want, "relation {rel}");
        assert!(want.len() > 50, "{rel}: a state worth comparing");
    }
}

#[test]
fn rules_are_a_set_through_transactions() {
    let server = start(&[
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--engine",
        "seminaive",
    ]);
    let (_, body) = request(&server, "GET", "/rules", "");
    let rules = json(&body)["rules"].clone();
    // A rule the program has (other variable names): a no-op that says so.
    let (status, body) = request(
        &server,
        "POST",
        "/transactions",
        "+ path(a, c) :- path(a, b), edge(b, c).\n",
    );
    assert_eq!(status, 200, "{body}");
    let j = json(&body);
    assert_eq!(
        (j["inserted"].as_u64(), j["deleted"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        j["already_present"],
        serde_json::json!(["path(a, c) :- path(a, b), edge(b, c)."])
    );
    let (_, body) = request(&server, "GET", "/rules", "");
    assert_eq!(json(&body)["rules"], rules);
    // One removal removes it.
    let (status, body) = request(
        &server,
        "POST",
        "/transactions",
        "- path(x, z) :- path(x, y), edge(y, z).\n",
    );
    assert_eq!(status, 200, "{body}");
    assert!(json(&body).get("already_present").is_none(), "{body}");
    let (_, body) = request(&server, "GET", "/rules", "");
    assert_eq!(json(&body)["rules"].as_array().map(Vec::len), Some(1));
}

/// Records over HTTP: a transaction with records, its changes as Datalog (symbols
/// quoted), a query whose pattern holds a record, and the facts as JSON strings.
#[test]
fn records_travel_as_datalog_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("p.dl"),
        ".type P = [n: number, s: symbol]\n.type T = A {p: P} | B {}\n\
         .decl p(x: P)\n.decl t(x: T, n: number)\n.output t\n\
         t($A(q), n) :- p(q), q = [n, _].\n",
    )
    .expect("writes");
    let program = dir.path().join("p.dl");
    let facts = dir.path().to_str().expect("utf-8").to_string();
    let server = start(&[program.to_str().expect("utf-8"), "-F", &facts]);
    let (status, body) = request(
        &server,
        "POST",
        "/transactions",
        "+ p([1, \"a, ]b\"]).\n+ p([2, \"c\"]).\n",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        facts_of(&body),
        ["+ t($A([1, \"a, ]b\"]), 1).", "+ t($A([2, \"c\"]), 2)."]
    );
    let (status, body) = request(
        &server,
        "GET",
        // t($A([2,"c"]),x), percent-encoded.
        "/relations/t?pattern=t(%24A(%5B2%2C%22c%22%5D)%2Cx)",
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        json(&body)["facts"],
        serde_json::json!([["$A([2, \"c\"])", 2]])
    );
    // A record that does not fit its type is refused, and nothing is applied.
    let (status, body) = request(&server, "POST", "/transactions", "+ p([3]).\n");
    assert_eq!(status, 400, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .is_some_and(|e| e.contains("`P` has 2 field(s), but 1 are written here")),
        "{body}"
    );
}
