//! `dynalog serve` facing clients it cannot trust: which files `load` may read, the
//! `Host`/`Origin` checks and the bearer token, and the bounds on connections, time,
//! request size, pages and the change log; graceful shutdown.

mod common;

use common::{Server, root};
use serde_json::{Value as Json, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn tc(extra: &[&str]) -> Server {
    let mut args = vec!["examples/tc.dl", "-F", "examples/tc"];
    args.extend_from_slice(extra);
    common::start_server(&args)
}

/// One request with extra header lines; returns (status, body).
fn send(addr: &str, method: &str, path: &str, headers: &[&str], body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|h| h.starts_with("Host:")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(head.as_bytes()).expect("writes");
    let _ = s.write_all(body);
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    common::parse_response(&response).unwrap_or((0, String::new()))
}

fn get(server: &Server, path: &str) -> (u16, Json) {
    let (status, body) = send(&server.addr, "GET", path, &[], b"");
    (status, serde_json::from_str(&body).unwrap_or(Json::Null))
}

fn post(server: &Server, body: &str) -> (u16, Json) {
    let (status, body) = send(&server.addr, "POST", "/transactions", &[], body.as_bytes());
    (status, serde_json::from_str(&body).unwrap_or(Json::Null))
}

#[test]
fn load_reads_only_regular_files_under_the_fact_directory() {
    let server = tc(&[]);
    for (line, reason) in [
        ("load edge /etc/passwd", "absolute paths are not allowed"),
        (
            "load edge /proc/self/environ",
            "absolute paths are not allowed",
        ),
        ("load edge ../tc/edge.facts", "`..` is not allowed"),
        ("load edge ../../Cargo.toml", "`..` is not allowed"),
        ("unload edge /dev/zero", "absolute paths are not allowed"),
        (
            "load edge nosuch.facts",
            "no such file under the load directory",
        ),
    ] {
        let (status, answer) = post(&server, line);
        assert_eq!(status, 400, "{line}: {answer}");
        let error = answer["error"].as_str().expect("an error");
        assert!(error.contains(reason), "{line}: {error}");
        assert!(!error.contains("root:"), "{line}: {error}");
        assert!(!error.contains("PATH="), "{line}: {error}");
    }
    // A file of the fact directory loads; the state moved only now.
    let (_, size) = get(&server, "/relations/edge/size");
    assert_eq!(size["size"], 7);
    let (status, answer) = post(&server, "unload edge edge.facts");
    assert_eq!(status, 200, "{answer}");
    let (_, size) = get(&server, "/relations/edge/size");
    assert_eq!(size["size"], 0);
}

#[test]
fn loading_can_be_turned_off() {
    let server = tc(&["--no-load"]);
    let (status, answer) = post(&server, "load edge edge.facts");
    assert_eq!(status, 400);
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|e| e.contains("disabled")),
        "{answer}"
    );
}

#[test]
fn foreign_hosts_and_origins_are_refused() {
    let server = tc(&["--allow-origin", "https://app.example.org"]);
    let addr = server.addr.clone();
    let evil_host = send(&addr, "GET", "/health", &["Host: evil.example.com"], b"");
    assert_eq!(evil_host.0, 403, "{}", evil_host.1);
    let localhost = send(&addr, "GET", "/health", &["Host: localhost:1"], b"");
    assert_eq!(localhost.0, 200, "{}", localhost.1);
    // A cross-site form post (text/plain, another origin) changes nothing.
    let cross = send(
        &addr,
        "POST",
        "/transactions",
        &[
            "Origin: http://evil.example.com",
            "Content-Type: text/plain",
        ],
        b"+ edge(100, 101).",
    );
    assert_eq!(cross.0, 403, "{}", cross.1);
    let (_, size) = get(&server, "/relations/edge/size");
    assert_eq!(size["size"], 7);
    let same = format!("Origin: http://{addr}");
    let ok = send(
        &addr,
        "POST",
        "/transactions",
        &[&same],
        b"+ edge(100, 101).",
    );
    assert_eq!(ok.0, 200, "{}", ok.1);
    let allowed = send(
        &addr,
        "POST",
        "/transactions",
        &["Origin: https://app.example.org"],
        b"+ edge(101, 102).",
    );
    assert_eq!(allowed.0, 200, "{}", allowed.1);
}

#[test]
fn a_token_is_required_when_given_and_for_other_hosts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token-0123456789\n").expect("writes");
    // Listening beyond loopback without a token is refused before anything starts.
    let o = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(["serve", "examples/tc.dl", "-F", "examples/tc"])
        .args(["--listen", "0.0.0.0:0"])
        .current_dir(root())
        .output()
        .expect("runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--token"));

    let server = tc(&["--token", token_file.to_str().expect("utf-8")]);
    let addr = server.addr.clone();
    let none = send(&addr, "POST", "/transactions", &[], b"+ edge(100, 101).");
    assert_eq!(none.0, 401, "{}", none.1);
    let wrong = send(
        &addr,
        "GET",
        "/relations/edge",
        &["Authorization: Bearer s3cret-token-012345678X"],
        b"",
    );
    assert_eq!(wrong.0, 401, "{}", wrong.1);
    let health = send(&addr, "GET", "/health", &[], b"");
    assert_eq!(health.0, 200, "health needs no token: {}", health.1);
    let right = send(
        &addr,
        "POST",
        "/transactions",
        &["Authorization: Bearer s3cret-token-0123456789"],
        b"+ edge(100, 101).",
    );
    assert_eq!(right.0, 200, "{}", right.1);
}

#[test]
fn relations_are_read_page_by_page() {
    let server = tc(&[]);
    let (_, all) = get(&server, "/relations/path?limit=1000");
    let count = all["count"].as_u64().expect("count") as usize;
    assert!(count > 5);
    let mut paged = Vec::new();
    let mut offset = 0;
    loop {
        let (status, page) = get(&server, &format!("/relations/path?offset={offset}&limit=3"));
        assert_eq!(status, 200, "{page}");
        assert!(page["facts"].as_array().expect("facts").len() <= 3);
        paged.extend(page["facts"].as_array().expect("facts").iter().cloned());
        match page["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
    }
    assert_eq!(Json::Array(paged), all["facts"]);
    let (status, _) = get(&server, "/relations/path?limit=1000000");
    assert_eq!(status, 400, "a page larger than the maximum is refused");
    // With no limit, a page has the default size.
    let (_, page) = get(&server, "/relations/path");
    assert_eq!(page["limit"], 1000);
}

#[test]
fn the_change_log_keeps_the_last_commits_and_says_what_is_gone() {
    let server = tc(&["--log-commits", "3"]);
    for i in 0..5 {
        let (status, answer) = post(&server, &format!("+ edge({}, {}).", 200 + i, 201 + i));
        assert_eq!(status, 200, "{answer}");
    }
    // Commits 0..=5 were made; 3..=5 are kept.
    let (status, gone) = get(&server, "/changes?since=0");
    assert_eq!(status, 410, "{gone}");
    assert_eq!(gone["oldest"], 3);
    let (status, page) = get(&server, "/changes?since=3");
    assert_eq!(status, 200, "{page}");
    let commits: Vec<u64> = page["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .map(|c| c["commit"].as_u64().expect("number"))
        .collect();
    assert_eq!(commits, [3, 4, 5]);
    assert_eq!(page["more"], false);
    // Paging by changes: one change at a time, the cursor moves through the commits.
    let (_, first) = get(&server, "/changes?since=4&limit=1");
    assert_eq!(
        first["commits"][0]["changes"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(first["commits"][0]["complete"], false);
    assert_eq!(first["next"]["since"], 4);
    assert_eq!(first["next"]["offset"], 1);
    assert_eq!(first["more"], true);
    let (status, _) = send(
        &server.addr,
        "GET",
        "/changes?since=1&follow=true",
        &[],
        b"",
    );
    assert_eq!(status, 410, "a stream from a commit that is gone");
    let (_, metrics) = get(&server, "/metrics");
    assert_eq!(metrics["change_log"]["commits"], 3);
}

#[test]
fn oversized_slow_and_idle_requests_are_cut_off() {
    let server = tc(&[
        "--max-request-bytes",
        "100",
        "--header-timeout",
        "1",
        "--body-timeout",
        "1",
    ]);
    let big = "+ edge(1, 2).\n".repeat(20);
    let (status, _) = post(&server, &big);
    assert_eq!(status, 413);
    // Headers that never end: the connection is closed by the server.
    let mut idle = TcpStream::connect(&server.addr).expect("connects");
    idle.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
        .expect("writes");
    let started = Instant::now();
    let mut buf = Vec::new();
    let _ = idle.read_to_end(&mut buf);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the server closed the half-sent request"
    );
    // A body that never comes: 408.
    let mut slow = TcpStream::connect(&server.addr).expect("connects");
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    slow.write_all(
        b"POST /transactions HTTP/1.1\r\nHost: localhost\r\nContent-Length: 50\r\n\r\n+ edge(",
    )
    .expect("writes");
    let mut response = String::new();
    let _ = BufReader::new(&slow).read_line(&mut response);
    assert!(response.contains(" 408 "), "{response}");
    let (_, size) = get(&server, "/relations/edge/size");
    assert_eq!(size["size"], 7, "nothing of either request was applied");
    let (status, answer) = send(
        &server.addr,
        "POST",
        "/transactions",
        &[],
        b"+ edge(1, 2).\n+ edge(\xff, 3).",
    );
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("\"line\":2"), "{answer}");
}

#[test]
fn connections_beyond_the_cap_wait_their_turn() {
    let server = tc(&["--max-connections", "2", "--header-timeout", "30"]);
    let a = TcpStream::connect(&server.addr).expect("connects");
    let b = TcpStream::connect(&server.addr).expect("connects");
    // Both slots are taken by idle connections; a third request is not served.
    let mut third = TcpStream::connect(&server.addr).expect("the kernel accepts");
    third
        .set_read_timeout(Some(Duration::from_millis(1500)))
        .expect("timeout");
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("writes");
    let mut buf = [0u8; 64];
    let waited = third.read(&mut buf);
    assert!(waited.is_err(), "served beyond the cap: {waited:?}");
    // A slot frees: the waiting request is answered.
    drop(a);
    third
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut response = String::new();
    let _ = BufReader::new(&third).read_line(&mut response);
    assert!(response.contains(" 200 "), "{response}");
    drop(b);
}

#[test]
fn the_first_commit_is_in_the_log_when_it_fits_and_gone_when_it_does_not() {
    // Fits: commit 0 is the insertion of every shown fact, in the order of the reads.
    let server = tc(&[]);
    let (status, page) = get(&server, "/changes?since=0&limit=100000");
    assert_eq!(status, 200, "{page}");
    let first = &page["commits"][0];
    assert_eq!(
        (&first["commit"], &first["complete"]),
        (&json!(0), &json!(true))
    );
    let changes = first["changes"].as_array().expect("changes");
    assert!(
        changes
            .iter()
            .all(|c| c["op"] == "+" && c["relation"] == "path")
    );
    let logged: Vec<&Json> = changes.iter().map(|c| &c["values"]).collect();
    let (_, all) = get(&server, "/relations/path?limit=100000");
    let facts: Vec<&Json> = all["facts"].as_array().expect("facts").iter().collect();
    assert!(!facts.is_empty());
    assert_eq!(logged, facts);

    // Larger than `--log-mb` (a chain of 300 nodes: 44,850 paths, about 1.1 MB packed):
    // the read view has every fact, the log none of commit 0, and it goes on after.
    let dir = tempfile::tempdir().expect("tempdir");
    let edges: String = (0..299).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    std::fs::write(dir.path().join("edge.facts"), edges).expect("writes");
    let facts = dir.path().to_str().expect("utf-8");
    let server = common::start_server(&["examples/tc.dl", "-F", facts, "--log-mb", "1"]);
    let (_, size) = get(&server, "/relations/path/size");
    assert_eq!(size["size"], 299 * 300 / 2);
    let (_, last) = get(&server, "/relations/path?pattern=path(0,299)");
    assert_eq!(last["count"], 1, "{last}");
    let (status, gone) = get(&server, "/changes?since=0");
    assert_eq!(status, 410, "{gone}");
    assert_eq!(gone["oldest"], 1);
    let (status, _) = get(&server, "/changes?since=0&follow=true");
    assert_eq!(status, 410);
    let (status, answer) = post(&server, "+ edge(299, 300).");
    assert_eq!(
        (status, &answer["inserted"]),
        (200, &json!(300)),
        "{answer}"
    );
    let (status, page) = get(&server, "/changes?since=1");
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        page["commits"][0]["changes"].as_array().map(Vec::len),
        Some(300)
    );
    let (_, metrics) = get(&server, "/metrics");
    assert_eq!(metrics["change_log"]["oldest"], 1, "{metrics}");
}

#[test]
fn a_large_transaction_is_answered_whole() {
    // 44,850 changes: the answer is written in many pieces; it is one JSON document
    // with the counts, and the same changes as the log's copy of the commit.
    let dir = tempfile::tempdir().expect("tempdir");
    let edges: String = (0..299).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    std::fs::write(dir.path().join("chain.facts"), edges).expect("writes");
    std::fs::write(dir.path().join("edge.facts"), "").expect("writes");
    let facts = dir.path().to_str().expect("utf-8");
    let server = common::start_server(&["examples/tc.dl", "-F", facts]);
    let (status, body) = send(
        &server.addr,
        "POST",
        "/transactions",
        &[],
        b"load edge chain.facts\n+ path(x, y) :- edge(x, y).",
    );
    assert_eq!(status, 200, "{body}");
    let answer: Json = serde_json::from_str(&body).expect("one JSON document");
    assert_eq!(
        (&answer["commit"], &answer["inserted"]),
        (&json!(1), &json!(44_850))
    );
    assert_eq!(
        answer["already_present"],
        json!(["path(x, y) :- edge(x, y)."])
    );
    let changes = answer["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 44_850);
    assert_eq!(changes[0]["fact"], "path(0, 1).");
    let (_, page) = get(&server, "/changes?since=1&limit=100000");
    assert_eq!(&page["commits"][0]["changes"], &answer["changes"]);
}

#[test]
fn sigterm_ends_follow_streams_and_stops_the_server() {
    let mut server = tc(&[]);
    let mut stream = TcpStream::connect(&server.addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream
        .write_all(b"GET /changes?since=0&follow=true HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("writes");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    assert!(line.contains(" 200 "), "{line}");
    // SAFETY: sending a signal to our own child.
    let pid = server.child.id() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let mut rest = String::new();
    let read = reader.read_to_string(&mut rest);
    assert!(read.is_ok(), "the stream ended: {read:?}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = server.child.try_wait().expect("waits") {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn health_names_the_instance_and_the_commit() {
    let server = tc(&[]);
    let (status, health) = get(&server, "/health");
    assert_eq!(status, 200);
    assert_eq!(health["status"], "ok");
    assert_eq!(health["commit"], 0);
    assert!(health["instance"].as_str().is_some_and(|i| !i.is_empty()));
    let (_, answer) = post(&server, "+ edge(300, 301).");
    assert_eq!(answer["commit"], 1);
    assert_eq!(answer["instance"], health["instance"]);
    let (_, health) = get(&server, "/health");
    assert_eq!(health["commit"], 1);
    let (_, log) = get(&server, "/changes?since=1");
    assert_eq!(log["commits"][0]["instance"], health["instance"]);
}

#[test]
fn a_transaction_over_the_limits_is_refused_and_nothing_changes() {
    let server = tc(&["--max-changes", "3"]);
    // `edge(4, 1)` closes a cycle: itself and 4 paths, 5 changes.
    let (status, answer) = post(&server, "+ edge(4, 1).\n+ edge(50, 51).");
    assert_eq!(status, 422, "{answer}");
    let error = answer["error"].as_str().expect("an error");
    assert!(error.contains("--max-changes 3"), "{error}");
    let (_, size) = get(&server, "/relations/edge/size");
    assert_eq!(size["size"], 7, "nothing of the transaction was applied");
    let (status, answer) = post(&server, "+ edge(50, 51).");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["commit"], 1,
        "the refused transaction took no number"
    );
}

#[test]
fn a_deeply_nested_line_is_refused_and_the_server_goes_on() {
    let server = tc(&[]);
    let sum = vec!["1"; 16_000].join("+");
    for body in [
        format!("+ edge({sum}, 1)."),
        format!("+ edge({}1{}, 1).", "(".repeat(20_000), ")".repeat(20_000)),
        format!("+ edge({}1, 1).", "-".repeat(20_000)),
    ] {
        let (status, answer) = post(&server, &body);
        assert_eq!(status, 400, "{answer}");
        assert!(
            answer["error"]
                .as_str()
                .is_some_and(|e| e.contains("nested too deeply")),
            "{answer}"
        );
    }
    let (status, _) = get(&server, "/relations/path?pattern=path(((((1)))),x)");
    assert_eq!(status, 200);
    let deep = format!(
        "/relations/path?pattern=path({}1{},x)",
        "(".repeat(3000),
        ")".repeat(3000)
    );
    let (status, _) = get(&server, &deep);
    assert_eq!(status, 400);
    let (status, answer) = post(&server, "+ edge(50, 51).");
    assert_eq!(status, 200, "the server is alive: {answer}");
}
