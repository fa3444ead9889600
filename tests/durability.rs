//! `--data-dir` under real crashes: `dynalog session` and `dynalog serve` are killed
//! with SIGKILL at random points of a stream of transactions (facts, rule changes,
//! loads of a file), restarted on the same folder, and the recovered state is compared
//! with a reference evaluation (the library's seminaive engine) of every acknowledged
//! transaction. Acknowledged means: the session printed `commit N: ...`, or the server
//! answered 200. The transaction in flight at the kill may or may not be recovered
//! (it may have reached the disk before its acknowledgement), nothing else may differ,
//! and commit numbers continue after the last recovered one.

mod common;

use common::Rng;

use dynalog::live::Materialization;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const PROGRAM: &str = ".decl edge(x: number, y: number)\n\
    .input edge\n\
    .decl path(x: number, y: number)\n\
    .output path\n\
    .decl label(n: number, s: symbol)\n\
    .decl named(s: symbol, t: symbol)\n\
    .output named\n\
    path(x, y) :- edge(x, y).\n\
    path(x, z) :- path(x, y), edge(y, z).\n\
    named(s, t) :- label(x, s), path(x, y), label(y, t).\n\
    label(1, \"one\").\n";

const RELATIONS: [&str; 4] = ["edge", "path", "label", "named"];

/// A folder with the program, its input and a file to load.
fn setup(dir: &Path) {
    std::fs::write(dir.join("p.dl"), PROGRAM).expect("writes");
    std::fs::write(dir.join("edge.facts"), "1\t2\n2\t3\n").expect("writes");
    std::fs::write(dir.join("more.facts"), "3\t4\n4\t5\n5\t1\n").expect("writes");
}

/// Random transactions, as command lines: facts in and out, a rule added and removed,
/// a file loaded and unloaded. `rule_in` tracks whether the extra rule is there.
fn transaction(rng: &mut Rng, rule_in: &mut bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rule_changed = false;
    for _ in 0..1 + rng.below(3) {
        let (a, b) = (1 + rng.below(6), 1 + rng.below(6));
        let op = if rng.below(3) == 0 { '-' } else { '+' };
        lines.push(match rng.below(12) {
            0..=5 => format!("{op} edge({a}, {b})."),
            6..=7 => format!("{op} label({a}, \"s{b}\")."),
            8 if !rule_changed => {
                rule_changed = true;
                *rule_in = !*rule_in;
                if *rule_in {
                    "+ path(x, y) :- edge(y, x).".to_string()
                } else {
                    "- path(x, y) :- edge(y, x).".to_string()
                }
            }
            9 => "load edge more.facts".to_string(),
            10 => "unload edge more.facts".to_string(),
            _ => format!("{op} edge(1, 2)."),
        });
    }
    lines
}

/// The reference: every relation and the rules after the inputs and `acked`.
fn reference(dir: &Path, acked: &[Vec<String>]) -> Vec<String> {
    let mut m = Materialization::new("p.dl", PROGRAM, "seminaive", 1).expect("checks");
    m.stage_inputs(dir).expect("inputs");
    m.commit().expect("commit 0");
    for t in acked {
        for l in t {
            assert!(m.stage_command(l, dir).expect("stages"), "{l}");
        }
        m.commit().expect("the reference commits");
    }
    let mut out = Vec::new();
    for r in RELATIONS {
        for (rel, t) in m.dump(r).expect("declared") {
            out.push(m.render(rel, &t));
        }
    }
    out.extend(m.rules());
    out
}

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn session(dir: &Path, engine: &str) -> Session {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args([
            "session",
            "p.dl",
            "-F",
            ".",
            "--quiet",
            "--data-dir",
            "data",
        ])
        .args(["--engine", engine, "--snapshot-every", "7"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dynalog session starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    let stdin = child.stdin.take();
    Session {
        child,
        stdin,
        lines,
    }
}

impl Session {
    fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(60))
            .expect("the session answers within a minute")
    }

    fn send(&mut self, text: &str) {
        if let Some(s) = &mut self.stdin {
            // The session may be dead already (killed): ignore a broken pipe.
            let _ = s.write_all(text.as_bytes()).and_then(|_| s.flush());
        }
    }

    /// Every relation and the rules, as the session prints them.
    fn state(&mut self) -> Vec<String> {
        let mut ask = String::new();
        for r in RELATIONS {
            ask.push_str(&format!("dump {r}\n"));
        }
        ask.push_str("rules\nabort\n");
        self.send(&ask);
        let mut out = Vec::new();
        loop {
            let l = self.line();
            if l == "aborted" {
                return out;
            }
            out.push(l);
        }
    }

    /// The remaining output until the process ends.
    fn rest(&self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(60)) {
            out.push(l);
        }
        out
    }
}

/// The commit number of a summary line `commit N: ...`.
fn commit_number(line: &str) -> Option<u64> {
    line.strip_prefix("commit ")?
        .split(':')
        .next()?
        .parse()
        .ok()
}

/// Start on the folder, check the recovered commit against what was acknowledged and
/// sent, and the recovered state against the reference. Returns the session and the
/// transactions it holds (acknowledged, plus the one in flight if it was recovered).
fn recover(
    dir: &Path,
    engine: &str,
    acked: &mut Vec<Vec<String>>,
    in_flight: Option<Vec<String>>,
) -> Session {
    let mut s = session(dir, engine);
    let first = s.line();
    let n = commit_number(&first).unwrap_or_else(|| panic!("not a summary: {first}"));
    let acknowledged = acked.len() as u64;
    match (n, in_flight) {
        (n, _) if n == acknowledged => {}
        (n, Some(t)) if n == acknowledged + 1 => {
            eprintln!("the transaction in flight was recovered");
            acked.push(t)
        }
        (n, _) => {
            panic!("recovered commit {n}, but commit {acknowledged} was the last acknowledged")
        }
    }
    assert_eq!(s.state(), reference(dir, acked), "recovered at commit {n}");
    s
}

fn kill9(child: &mut Child) {
    // SIGKILL, as `kill -9`: no destructor, no final snapshot.
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn session_killed_at_random_points_recovers_every_acknowledged_commit() {
    kill_sessions(1..=3, 4);
}

/// The same with 40 seeds of 6 kills each (about 20 s on 2 cores).
#[test]
#[ignore]
fn session_killed_at_many_random_points_recovers_every_acknowledged_commit() {
    kill_sessions(100..=139, 6);
}

/// For each seed, `rounds` kills of a session (every odd round of seeds divisible by 3
/// on the differential engine, the others on the reference engine), then a last check.
fn kill_sessions(seeds: std::ops::RangeInclusive<u64>, rounds: usize) {
    for seed in seeds {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        setup(dir);
        let mut rng = Rng(seed);
        // acked[i] is commit i + 1 (commit 0 loads the inputs).
        let mut acked: Vec<Vec<String>> = Vec::new();
        let mut in_flight = None;
        for round in 0..rounds {
            let engine = if seed % 3 == 0 && round % 2 == 1 {
                "diff"
            } else {
                "seminaive"
            };
            let mut s = recover(dir, engine, &mut acked, in_flight.take());
            // The extra rule alternates in and out, starting out.
            let mut rule_in = acked
                .iter()
                .filter(|t| t.iter().any(|l| l.contains(":-")))
                .count()
                % 2
                == 1;
            // A stream of transactions, sent without waiting, killed at a random moment.
            let sent: Vec<Vec<String>> = (0..30)
                .map(|_| transaction(&mut rng, &mut rule_in))
                .collect();
            let mut text = String::new();
            for t in &sent {
                for l in t {
                    text.push_str(l);
                    text.push('\n');
                }
                text.push_str("commit\n");
            }
            s.send(&text);
            std::thread::sleep(Duration::from_micros(rng.below(150_000)));
            kill9(&mut s.child);
            let start = acked.len() as u64;
            let mut k = 0;
            for l in s.rest() {
                assert!(!l.starts_with("error"), "{l}");
                if let Some(n) = commit_number(&l) {
                    assert_eq!(n, start + 1 + k as u64, "commit numbers continue");
                    k += 1;
                }
            }
            eprintln!(
                "session seed {seed} round {round} ({engine}): {k} of {} acknowledged before the kill",
                sent.len()
            );
            acked.extend(sent[..k].iter().cloned());
            in_flight = sent.get(k).cloned();
        }
        let mut s = recover(dir, "seminaive", &mut acked, in_flight.take());
        s.send("quit\n");
        let _ = s.child.wait();
    }
}

/// One HTTP/1.1 request; `None` if the server is gone (killed) before it answered.
fn try_http(addr: &str, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut response = String::new();
    s.read_to_string(&mut response).ok()?;
    response.split_once("\r\n\r\n")?;
    common::parse_response(&response)
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn server_killed_at_random_points_recovers_every_acknowledged_commit() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    setup(dir);
    let mut rng = Rng(11);
    let mut acked: Vec<Vec<String>> = Vec::new();
    let mut in_flight: Option<Vec<String>> = None;
    for _round in 0..3 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dynalog"))
            .args(["serve", "p.dl", "-F", ".", "--data-dir", "data"])
            .args(["--engine", "seminaive", "--snapshot-every", "5"])
            .args(["--listen", "127.0.0.1:0"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dynalog serve starts");
        let addr = common::listening_address(&mut child);
        // The recovered commit: the last acknowledged one, or the one in flight.
        let (status, body) =
            try_http(&addr, "GET", "/relations/edge?limit=1", "").expect("answers");
        assert_eq!(status, 200, "{body}");
        let n = json(&body)["commit"].as_u64().expect("a commit number");
        match in_flight.take() {
            Some(t) if n == acked.len() as u64 + 1 => acked.push(t),
            _ => assert_eq!(n, acked.len() as u64, "recovered commit"),
        }
        let mut rule_in = acked
            .iter()
            .filter(|t| t.iter().any(|l| l.contains(":-")))
            .count()
            % 2
            == 1;
        let sent: Vec<Vec<String>> = (0..40)
            .map(|_| transaction(&mut rng, &mut rule_in))
            .collect();
        let client = {
            let (sent, addr) = (sent.clone(), addr.clone());
            std::thread::spawn(move || {
                let mut numbers = Vec::new();
                for t in &sent {
                    match try_http(&addr, "POST", "/transactions", &t.join("\n")) {
                        Some((200, body)) => {
                            numbers.push(json(&body)["commit"].as_u64().expect("a number"))
                        }
                        Some((status, body)) => panic!("refused ({status}): {body}"),
                        None => break,
                    }
                }
                numbers
            })
        };
        std::thread::sleep(Duration::from_micros(rng.below(300_000)));
        kill9(&mut child);
        let numbers = client.join().expect("the client ends");
        let start = acked.len() as u64;
        for (k, n) in numbers.iter().enumerate() {
            assert_eq!(*n, start + 1 + k as u64, "commit numbers continue");
        }
        let k = numbers.len();
        eprintln!("serve: {k} of {} acknowledged before the kill", sent.len());
        acked.extend(sent[..k].iter().cloned());
        in_flight = sent.get(k).cloned();
    }
    // The folder, recovered by a session, holds every acknowledged transaction.
    let mut s = recover(dir, "seminaive", &mut acked, in_flight.take());
    s.send("quit\n");
    let _ = s.child.wait();
}

#[test]
fn a_folder_in_use_or_made_for_another_program_is_refused_and_a_clean_exit_resumes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    setup(dir);
    let mut s = session(dir, "seminaive");
    assert_eq!(commit_number(&s.line()), Some(0));
    s.send("+ edge(7, 8).\ncommit\n");
    assert_eq!(commit_number(&s.line()), Some(1));
    // A second process on the same folder stops with the reason.
    let second = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(["session", "p.dl", "--data-dir", "data"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success());
    assert!(err.contains("in use by another process"), "{err}");
    s.send("quit\n");
    let _ = s.child.wait();
    // A clean exit took a snapshot: the log is empty, and a restart continues.
    assert_eq!(
        std::fs::metadata(dir.join("data/wal"))
            .map(|m| m.len())
            .ok(),
        Some(0)
    );
    let mut s = session(dir, "seminaive");
    assert_eq!(commit_number(&s.line()), Some(1));
    s.send("? edge(7, x).\n+ edge(8, 9).\ncommit\nquit\n");
    assert_eq!(s.line(), "edge(7, 8).");
    assert_eq!(s.line(), "1 result");
    assert_eq!(commit_number(&s.line()), Some(2));
    let _ = s.child.wait();
    // Another program text is refused: the folder holds the state of the first.
    std::fs::write(dir.join("p.dl"), format!("{PROGRAM}// changed\n")).expect("writes");
    let other = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(["session", "p.dl", "--data-dir", "data"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(!other.status.success());
    assert!(err.contains("another program text"), "{err}");
}

/// Run `dynalog session p.dl --data-dir data` as process 0 of two (process 1 follows,
/// with the same command line: it ignores the folder), `script` on its input; returns
/// process 0's standard output.
fn cluster_session(dir: &Path, script: &str) -> String {
    let listeners: Vec<std::net::TcpListener> = (0..2)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let hosts: String = listeners
        .iter()
        .map(|l| format!("{}\n", l.local_addr().expect("address")))
        .collect();
    drop(listeners);
    std::fs::write(dir.join("hosts"), hosts).expect("hostfile");
    let spawn = |p: &str| {
        Command::new(env!("CARGO_BIN_EXE_dynalog"))
            .args([
                "session",
                "p.dl",
                "-F",
                ".",
                "--data-dir",
                "data",
                "--quiet",
            ])
            .args(["-n", "2", "-p", p, "-H", "hosts", "--connect-timeout", "60"])
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts")
    };
    let mut follower = spawn("1");
    let mut leader = spawn("0");
    leader
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writes");
    let out = leader.wait_with_output().expect("ends");
    let _ = follower.wait();
    assert!(out.status.success(), "process 0 failed");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_cluster_session_logs_on_process_0_and_recovers_rule_changes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    setup(dir);
    let t: Vec<Vec<String>> = vec![
        vec!["+ edge(3, 4).".into(), "+ label(4, \"four\").".into()],
        vec!["+ path(x, y) :- edge(y, x).".into()],
        vec!["load edge more.facts".into(), "- edge(1, 2).".into()],
    ];
    let mut script = String::new();
    for tr in &t {
        script.push_str(&format!("{}\ncommit\n", tr.join("\n")));
    }
    let out = cluster_session(dir, &script);
    assert!(out.contains("\ncommit 3: "), "{out}");
    let mut ask = String::new();
    for r in RELATIONS {
        ask.push_str(&format!("dump {r}\n"));
    }
    ask.push_str("rules\n");
    let out = cluster_session(dir, &ask);
    let mut lines = out.lines();
    assert_eq!(lines.next().and_then(commit_number), Some(3), "{out}");
    assert_eq!(
        lines.map(str::to_string).collect::<Vec<_>>(),
        reference(dir, &t)
    );
}

#[test]
fn a_transaction_refused_by_a_limit_is_not_logged_and_the_recovery_is_not_limited() {
    let tmp = tempfile::tempdir().expect("tmp");
    let data = tmp.path().join("data");
    let data = data.to_str().expect("utf-8");
    let args = [
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--data-dir",
        data,
        "--max-changes",
        "3",
    ];
    // `edge(4, 1)` closes a cycle (5 changes): refused; `edge(50, 51)` is 2 changes.
    let (_, first, _) =
        common::run_session(&args, "+ edge(4, 1).\ncommit\n+ edge(50, 51).\ncommit\n");
    assert!(first.contains("commit refused"), "{first}");
    assert!(first.contains("commit 1: +1 -0"), "{first}");
    // The recovered state (22 paths, beyond any limit of 3) is rebuilt whatever the
    // limits, without the refused transaction, and the numbers go on.
    let (ok, second, stderr) = common::run_session(
        &args,
        "size edge\nsize path\n? edge(4, 1).\n+ edge(60, 61).\ncommit\n",
    );
    assert!(ok, "{second}\n{stderr}");
    assert!(stderr.contains("recovered commit 1"), "{stderr}");
    let lines: Vec<&str> = second.lines().collect();
    assert!(lines.contains(&"8"), "{second}");
    assert!(lines.contains(&"21"), "{second}");
    assert!(lines.contains(&"0 results"), "{second}");
    assert!(
        lines.iter().any(|l| l.starts_with("commit 2: +1 -0")),
        "{second}"
    );
}

/// Records are logged as their text, their symbols quoted: a record whose symbols hold
/// the characters of the record syntax survives `kill -9` as it was, and so do the
/// records rules made from it.
#[test]
fn records_survive_a_kill_with_their_symbols_intact() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("p.dl"),
        ".type P = [n: number, s: symbol]\n.type L = [h: P, t: L]\n\
         .type T = A {p: P} | B {}\n\
         .decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n\
         .decl label(n: number, s: symbol)\n.decl named(s: symbol, t: symbol)\n\
         .decl p(x: P)\n.decl l(x: L)\n.decl t(x: T)\n\
         l([q, nil]) :- p(q).\n",
    )
    .expect("writes");
    std::fs::write(dir.path().join("edge.facts"), "").expect("writes");
    let mut s = session(dir.path(), "diff");
    assert_eq!(commit_number(&s.line()), Some(0));
    s.send("+ p([1, \"a, ]b\\\"c\\\\\"]).\n+ t($A([2, \"$B\"])).\n+ t($B).\ncommit\n");
    assert_eq!(commit_number(&s.line()), Some(1));
    kill9(&mut s.child);
    let mut s = session(dir.path(), "diff");
    assert_eq!(commit_number(&s.line()), Some(1));
    s.send("dump p\ndump l\ndump t\nabort\n");
    let mut out = Vec::new();
    loop {
        let l = s.line();
        if l == "aborted" {
            break;
        }
        out.push(l);
    }
    assert_eq!(
        out,
        [
            "p([1, \"a, ]b\\\"c\\\\\"]).",
            "l([[1, \"a, ]b\\\"c\\\\\"], nil]).",
            "t($A([2, \"$B\"])).",
            "t($B).",
        ]
    );
    kill9(&mut s.child);
}
