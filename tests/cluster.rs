//! Several processes on loopback (timely's cluster mode): 2 processes × 1 worker and
//! 2 × 2 give exactly the single-process output for every bundled example; process 0
//! alone writes; a peer that never comes is an error after the connect timeout.
//! `session` and `serve` on two processes (process 0 drives, process 1 follows) print
//! and answer exactly what one process does; losing process 0 stops the follower.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

const EXAMPLES: &[&str] = &["tc", "sg", "negation", "rhodf", "arith"];

/// A hostfile of `n` free loopback ports. A port is handed out once per test binary:
/// tests run in parallel, and a port freed by one test's hostfile and picked again by
/// another's would let their processes connect to each other.
fn hostfile(dir: &Path, n: usize) -> std::path::PathBuf {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let mut listeners: Vec<TcpListener> = Vec::new();
    while listeners.len() < n {
        let l = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = l.local_addr().expect("address").port();
        if !given.contains(&port) {
            given.push(port);
            listeners.push(l);
        }
    }
    let lines: String = listeners
        .iter()
        .map(|l| format!("{}\n", l.local_addr().expect("address")))
        .collect();
    drop(listeners);
    let path = dir.join("hosts");
    std::fs::write(&path, lines).expect("hostfile");
    path
}

fn facts_of(name: &str) -> std::path::PathBuf {
    let dir = root().join("examples").join(name);
    if dir.is_dir() {
        dir
    } else {
        root().join("examples")
    }
}

/// Run example `name` as `processes` processes of `workers` workers; returns the
/// output dirs.
fn run_cluster(name: &str, processes: usize, workers: usize) -> Vec<tempfile::TempDir> {
    let program = root().join("examples").join(format!("{name}.dl"));
    run_program_in_cluster(&program, &facts_of(name), processes, workers)
}

/// Run `program` on `facts` as `processes` processes of `workers` workers (the
/// differential engine); returns each process's output dir.
fn run_program_in_cluster(
    program: &Path,
    facts: &Path,
    processes: usize,
    workers: usize,
) -> Vec<tempfile::TempDir> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), processes);
    let outs: Vec<tempfile::TempDir> = (0..processes)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let children: Vec<_> = (0..processes)
        .map(|p| {
            Command::new(env!("CARGO_BIN_EXE_dynalog"))
                .arg("run")
                .arg(program)
                .arg("-F")
                .arg(facts)
                .arg("-D")
                .arg(outs[p].path())
                .args(["--engine", "diff", "-w", &workers.to_string()])
                .args(["-n", &processes.to_string(), "-p", &p.to_string()])
                .arg("-H")
                .arg(&hosts)
                .args(["--connect-timeout", "60"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starts")
        })
        .collect();
    for (p, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().expect("ends");
        assert!(
            o.status.success(),
            "{}: process {p} failed: {}",
            program.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    outs
}

#[test]
fn generated_rmat_1k_and_lubm_1_match_one_process() {
    let data = tempfile::tempdir().expect("tempdir");
    let d = data.path();
    // tc on RMAT-1k (n = 1000, m = 10,000, as the benchmark's tc-rmat1k).
    let edges = d.join("edge.facts");
    let edges = edges.to_str().expect("utf-8");
    dynalog_ok(&[
        "gen", "rmat", "--nodes", "1000", "--edges", "10000", "--seed", "0", "-o", edges,
    ]);
    // RhoDF on LUBM(1, 0), every triple of the materialization written out.
    let lubm = d.join("lubm.nt");
    dynalog_ok(&[
        "gen",
        "lubm",
        "--universities",
        "1",
        "--seed",
        "0",
        "-o",
        lubm.to_str().expect("utf-8"),
    ]);
    let rhodf = std::fs::read_to_string(root().join("programs/rhodf.dl")).expect("rhodf.dl");
    let directive = r#".input T(IO="rdf", mapping="triples")"#;
    assert!(rhodf.contains(directive));
    let rhodf = rhodf.replace(
        directive,
        r#".input T(IO="rdf", filename="lubm.nt", mapping="triples")
.output T"#,
    );
    let rhodf_path = d.join("rhodf.dl");
    std::fs::write(&rhodf_path, rhodf).expect("program");
    for (program, file) in [
        (root().join("programs/tc.dl"), "tc.csv"),
        (rhodf_path, "T.csv"),
    ] {
        let single = run_program_in_cluster(&program, d, 1, 1);
        let expected = sorted_lines(&single[0].path().join(file));
        assert!(expected.len() > 100_000, "{file}: {}", expected.len());
        for (processes, workers) in [(2, 1), (2, 2)] {
            let outs = run_program_in_cluster(&program, d, processes, workers);
            assert_eq!(
                sorted_lines(&outs[0].path().join(file)),
                expected,
                "{file}, {processes} x {workers}"
            );
        }
    }
}

fn check(processes: usize, workers: usize) {
    for name in EXAMPLES {
        let outs = run_cluster(name, processes, workers);
        let expected_dir = root().join("tests/expected").join(name);
        let mut checked = 0;
        for entry in std::fs::read_dir(&expected_dir).expect("expected outputs") {
            let expected = entry.expect("entry").path();
            let file = expected.file_name().expect("file name");
            assert_eq!(
                sorted_lines(&outs[0].path().join(file)),
                sorted_lines(&expected),
                "{name}, {processes} x {workers}: {}",
                file.to_string_lossy()
            );
            checked += 1;
        }
        assert!(checked > 0);
        for other in &outs[1..] {
            let written = std::fs::read_dir(other.path()).expect("dir").count();
            assert_eq!(written, 0, "{name}: only process 0 writes outputs");
        }
    }
}

#[test]
fn two_processes_one_worker_each_match_one_process() {
    check(2, 1);
}

#[test]
fn two_processes_two_workers_each_match_one_process() {
    check(2, 2);
}

#[test]
fn a_missing_peer_is_an_error_after_the_timeout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let started = std::time::Instant::now();
    let o = dynalog(&[
        "run",
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "-D",
        tmp.path().to_str().expect("utf-8"),
        "--engine",
        "diff",
        "-n",
        "2",
        "-p",
        "0",
        "-H",
        hosts.to_str().expect("utf-8"),
        "--connect-timeout",
        "2",
    ]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("could not connect"), "{stderr}");
    assert!(started.elapsed().as_secs() < 30);
    assert!(
        o.stdout.is_empty(),
        "timely's chatter stays off stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn cluster_flags_are_checked() {
    for (args, reason) in [
        (&["-n", "2", "-p", "2"][..], "is not below"),
        (
            &["-n", "2", "--engine", "seminaive"][..],
            "differential engine",
        ),
        (&["-n", "0"][..], "at least 1"),
        (
            &["-n", "2", "-H", "/nonexistent/hosts"][..],
            "cannot read the hostfile",
        ),
    ] {
        let mut full = vec!["run", "examples/tc.dl", "-F", "examples/tc"];
        full.extend_from_slice(args);
        if !args.contains(&"--engine") {
            full.extend_from_slice(&["--engine", "diff"]);
        }
        let o = dynalog(&full);
        assert!(!o.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(reason), "{args:?}: {stderr}");
    }
}

#[test]
fn killing_a_peer_mid_run_makes_the_other_exit_with_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    // A long chain: its closure takes seconds, so the peer dies mid-run.
    let chain: String = (0..2000).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    std::fs::write(tmp.path().join("edge.facts"), chain).expect("facts");
    let spawn = |p: usize| {
        Command::new(env!("CARGO_BIN_EXE_dynalog"))
            .args(["run", "examples/tc.dl", "-F"])
            .arg(tmp.path())
            .args([
                "-D",
                "-",
                "--engine",
                "diff",
                "-n",
                "2",
                "-p",
                &p.to_string(),
                "-H",
            ])
            .arg(&hosts)
            .current_dir(root())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts")
    };
    let survivor = spawn(0);
    let mut victim = spawn(1);
    std::thread::sleep(std::time::Duration::from_secs(3));
    victim.kill().expect("kill");
    let _ = victim.wait();
    stops_for_the_lost_peer(survivor, 1);
}

/// `survivor`, whose peer `lost` was killed, exits within the test's bound, non-zero,
/// naming the lost process.
fn stops_for_the_lost_peer(survivor: Child, lost: usize) {
    let started = std::time::Instant::now();
    let o = survivor.wait_with_output().expect("ends");
    assert!(started.elapsed().as_secs() < 60);
    assert!(!o.status.success(), "the survivor must fail");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("lost the connection to process {lost}")),
        "{stderr}"
    );
}

/// Start `dynalog ARGS -n 2 -p P -h HOSTS` in the repository root, with piped stdio.
fn spawn_in_cluster(args: &[&str], hosts: &Path, process: usize, workers: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(args)
        .args([
            "-w",
            &workers.to_string(),
            "-n",
            "2",
            "-p",
            &process.to_string(),
        ])
        .arg("-H")
        .arg(hosts)
        .args(["--connect-timeout", "60"])
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

/// `args` as process 1 then process 0 of two, `script` fed to process 0; returns
/// process 0's output and the still running process 1.
fn session_pair(args: &[&str], hosts: &Path, workers: usize, script: &str) -> (Output, Child) {
    let follower = spawn_in_cluster(args, hosts, 1, workers);
    let mut leader = spawn_in_cluster(args, hosts, 0, workers);
    leader
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writes the script");
    (leader.wait_with_output().expect("ends"), follower)
}

/// A scripted session (tests/sessions) as process 0 of two: it prints exactly what one
/// process prints (the `.expected` file), and the follower ends cleanly with it.
fn session_in_cluster(name: &str, workers: usize, expect_success: bool) {
    let dir = root().join("tests/sessions");
    let script = std::fs::read_to_string(dir.join(format!("{name}.session"))).expect("script");
    let expected =
        std::fs::read_to_string(dir.join(format!("{name}.expected"))).expect("expected output");
    let (program, facts) = (header(&script, "program"), header(&script, "facts"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let mut args = vec!["session", program, "-F", facts, "--engine", "diff"];
    // `# allow-load: DIR`: where `load`/`unload` may read (by default the fact folder).
    if let Some(dir) = script
        .lines()
        .find_map(|l| l.strip_prefix("# allow-load: "))
    {
        args.extend(["--allow-load", dir]);
    }
    let (o, follower) = session_pair(&args, &hosts, workers, &script);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        mask_times(&String::from_utf8_lossy(&o.stdout)),
        expected,
        "session {name}, 2 × {workers}; stderr:\n{stderr}"
    );
    assert_eq!(o.status.success(), expect_success, "{name}: {stderr}");
    let f = follower.wait_with_output().expect("ends");
    let stderr = String::from_utf8_lossy(&f.stderr);
    assert!(f.status.success(), "{name}: the follower failed: {stderr}");
    assert!(f.stdout.is_empty(), "the follower prints nothing");
    assert!(stderr.contains("process 1 of 2: connected, following process 0"));
}

#[test]
fn scripted_sessions_on_two_processes_print_what_one_process_prints() {
    for workers in [1, 2] {
        for (name, ok) in [
            ("facts", true),
            ("rules", true),
            ("errors", false),
            ("load", true),
            ("rdf", false),
        ] {
            session_in_cluster(name, workers, ok);
        }
    }
}

#[test]
fn a_rule_the_cluster_dataflow_cannot_take_is_refused_and_nothing_changes() {
    // tc's dataflow is built for rows of 3 values and 3 join stages: a five-atom body
    // needs a rebuild, which a cluster cannot do. The whole transaction is refused.
    let script = "+ path(a, f) :- edge(a, b), edge(b, c), edge(c, d), edge(d, e), edge(e, f).\n\
                  + edge(100, 101).\ncommit\nsize path\n+ edge(100, 101).\ncommit\n";
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let args = ["session", "examples/tc.dl", "-F", "examples/tc"];
    let (o, follower) = session_pair(&args, &hosts, 1, script);
    let stdout = mask_times(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(
        stdout,
        "commit 0: +20 -0 in T ms\n\
         error: line 3: commit refused: in a cluster the dataflow cannot be rebuilt, and this \
         program needs rows of 6 values and 5 join stages where it was built for 3 and 3: \
         restart the cluster with the new program\n\
         20\n+ path(100, 101).\ncommit 1: +1 -0 in T ms\n"
    );
    assert!(!o.status.success());
    assert!(follower.wait_with_output().expect("ends").status.success());
}

#[test]
fn serve_on_two_processes_answers_from_process_0_and_stops_both() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let args = [
        "serve",
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--listen",
        "127.0.0.1:0",
    ];
    let follower = spawn_in_cluster(&args, &hosts, 1, 2);
    let mut leader = spawn_in_cluster(&args, &hosts, 0, 2);
    let addr = common::listening_address(&mut leader);
    let (status, body) = http(&addr, "POST", "/transactions", "+ edge(100, 1).\n");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""inserted":4"#), "{body}");
    // A refused transaction leaves the state untouched.
    let (status, _) = http(
        &addr,
        "POST",
        "/transactions",
        "+ edge(5, 6).\n+ edge(1).\n",
    );
    assert_eq!(status, 400);
    let (_, body) = http(&addr, "GET", "/relations/path/size", "");
    assert!(body.contains(r#""size":24"#), "{body}");
    let (_, body) = http(&addr, "POST", "/transactions", "- edge(100, 1).\n");
    assert!(body.contains(r#""deleted":4"#), "{body}");
    // SIGINT: process 0 stops gracefully, and with it the follower.
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(leader.id() as libc::pid_t, libc::SIGINT);
    }
    let o = leader.wait_with_output().expect("ends");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = follower.wait_with_output().expect("ends");
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
}

#[test]
fn killing_process_0_of_a_session_stops_the_follower_with_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let args = ["session", "examples/tc.dl", "-F", "examples/tc"];
    let follower = spawn_in_cluster(&args, &hosts, 1, 1);
    let mut leader = spawn_in_cluster(&args, &hosts, 0, 1);
    // Wait until process 0 has committed its first transaction, then kill it.
    let mut line = String::new();
    let mut out = BufReader::new(leader.stdout.take().expect("stdout"));
    out.read_line(&mut line).expect("reads");
    assert!(line.starts_with("commit 0:"), "{line}");
    leader.kill().expect("kill");
    let _ = leader.wait();
    stops_for_the_lost_peer(follower, 0);
}

/// Wait at most `secs` for `child` to exit; kill it and fail the test if it does not.
fn wait_bounded(mut child: Child, secs: u64, what: &str) -> Output {
    let started = std::time::Instant::now();
    loop {
        match child.try_wait().expect("waits") {
            Some(_) => return child.wait_with_output().expect("output"),
            None if started.elapsed().as_secs() >= secs => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not exit within {secs} s");
            }
            None => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

/// A session of two processes with a short `--peer-timeout`, process 0 past its first
/// commit; `hurt` then does something to process 1 and a transaction is sent. Process
/// 0 must exit, non-zero, within the bound, with an error naming process 1 that
/// contains `reason`.
fn session_with_a_hurt_peer(hurt: impl FnOnce(&mut Child), reason: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let args = [
        "session",
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--peer-timeout",
        "2",
    ];
    let mut follower = spawn_in_cluster(&args, &hosts, 1, 1);
    let mut leader = spawn_in_cluster(&args, &hosts, 0, 1);
    let mut line = String::new();
    let mut out = BufReader::new(leader.stdout.take().expect("stdout"));
    out.read_line(&mut line).expect("reads");
    assert!(line.starts_with("commit 0:"), "{line}");
    hurt(&mut follower);
    let mut stdin = leader.stdin.take().expect("stdin");
    stdin
        .write_all(b"+ edge(100, 101).\ncommit\n")
        .expect("writes");
    stdin.flush().expect("flushes");
    // Standard input stays open: process 0 must stop by itself.
    let o = wait_bounded(leader, 60, "process 0");
    drop(stdin);
    let _ = follower.kill();
    let _ = follower.wait();
    assert!(!o.status.success(), "process 0 must fail");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("process 1"), "{stderr}");
    assert!(stderr.contains(reason), "{stderr}");
}

#[test]
fn a_stopped_follower_ends_the_session_after_the_peer_timeout() {
    session_with_a_hurt_peer(
        |follower| {
            // SAFETY: sends a signal to a child process of this test.
            let r = unsafe { libc::kill(follower.id() as libc::pid_t, libc::SIGSTOP) };
            assert_eq!(r, 0);
        },
        "has not answered for 2 s",
    );
}

#[test]
fn a_killed_follower_ends_the_session_with_an_error() {
    session_with_a_hurt_peer(
        |follower| {
            follower.kill().expect("kill");
            let _ = follower.wait();
        },
        "error",
    );
}

#[test]
fn serve_reports_a_stopped_follower_in_health_and_refuses_transactions() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), 2);
    let args = [
        "serve",
        "examples/tc.dl",
        "-F",
        "examples/tc",
        "--listen",
        "127.0.0.1:0",
        "--peer-timeout",
        "2",
    ];
    let mut follower = spawn_in_cluster(&args, &hosts, 1, 1);
    let mut leader = spawn_in_cluster(&args, &hosts, 0, 1);
    let addr = common::listening_address(&mut leader);
    let (status, body) = http(&addr, "GET", "/health", "");
    assert_eq!(status, 200, "{body}");
    // SAFETY: sends a signal to a child process of this test.
    let r = unsafe { libc::kill(follower.id() as libc::pid_t, libc::SIGSTOP) };
    assert_eq!(r, 0);
    // Within a bounded time /health reports the failure, without any transaction.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let body = loop {
        let (status, body) = http(&addr, "GET", "/health", "");
        if status == 503 {
            break body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "health stayed {status}: {body}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert!(body.contains("\"failed\""), "{body}");
    assert!(body.contains("process 1"), "{body}");
    let (status, body) = http(&addr, "POST", "/transactions", "+ edge(100, 101).\n");
    assert_eq!(status, 503, "{body}");
    // Reads still answer from the last committed state.
    let (status, _) = http(&addr, "GET", "/relations/path/size", "");
    assert_eq!(status, 200);
    let _ = follower.kill();
    let _ = follower.wait();
    let _ = leader.kill();
    let _ = leader.wait();
}

#[test]
fn rules_that_build_records_are_refused_in_a_cluster_before_connecting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let program = dir.path().join("records.dl");
    std::fs::write(
        &program,
        ".type P = [a: number, b: number]\n.decl e(x: number, y: number)\ne(1, 2).\n\
         .decl p(r: P)\n.output p\np([x, y]) :- e(x, y).\n",
    )
    .expect("writes");
    let hosts = hostfile(dir.path(), 2);
    let o = dynalog(&[
        "run",
        program.to_str().expect("utf-8 path"),
        "-D",
        "-",
        "--engine",
        "diff",
        "-n",
        "2",
        "-p",
        "0",
        "-H",
        hosts.to_str().expect("utf-8 path"),
        "--connect-timeout",
        "60",
    ]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("rules that build or take apart records need a single process (-n 1)"),
        "{stderr}"
    );
}
