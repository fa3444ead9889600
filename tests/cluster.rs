//! Several processes on loopback (timely's cluster mode): 2 processes × 1 worker and
//! 2 × 2 give exactly the single-process output for every bundled example; process 0
//! alone writes; a peer that never comes is an error after the connect timeout.

mod common;

use common::*;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};

const EXAMPLES: &[&str] = &["tc", "sg", "negation", "rhodf", "arith"];

/// A hostfile of `n` free loopback ports.
fn hostfile(dir: &Path, n: usize) -> std::path::PathBuf {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
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

/// Run `name` as `processes` processes of `workers` workers; returns the output dirs.
fn run_cluster(name: &str, processes: usize, workers: usize) -> Vec<tempfile::TempDir> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hosts = hostfile(tmp.path(), processes);
    let outs: Vec<tempfile::TempDir> = (0..processes)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let program = root().join("examples").join(format!("{name}.dl"));
    let children: Vec<_> = (0..processes)
        .map(|p| {
            Command::new(env!("CARGO_BIN_EXE_dynalog"))
                .arg("run")
                .arg(&program)
                .arg("-F")
                .arg(facts_of(name))
                .arg("-D")
                .arg(outs[p].path())
                .args(["--engine", "diff", "-w", &workers.to_string()])
                .args(["-n", &processes.to_string(), "-p", &p.to_string()])
                .arg("-h")
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
            "{name}: process {p} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    outs
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
        "-h",
        hosts.to_str().expect("utf-8"),
        "--connect-timeout",
        "2",
    ]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("could not connect"), "{stderr}");
    assert!(started.elapsed().as_secs() < 30);
    assert!(o.stdout.is_empty(), "timely's chatter stays off stdout");
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
            &["-n", "2", "-h", "/nonexistent/hosts"][..],
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
                "-h",
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
    let started = std::time::Instant::now();
    let o = survivor.wait_with_output().expect("ends");
    assert!(started.elapsed().as_secs() < 60);
    assert!(!o.status.success(), "the survivor must fail");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("lost the connection to process 1"),
        "{stderr}"
    );
}
