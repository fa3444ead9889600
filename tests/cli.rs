//! The command line's first hour: `-h` is help on every command (the hostfile is `-H`),
//! a reader that closes standard output early (`| head`) ends the command quietly, and
//! `dynalog gen` shows its progress on a terminal only.

mod common;
use common::*;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

#[test]
fn dash_h_is_help_on_every_command() {
    for args in [
        &["-h"][..],
        &["run", "-h"],
        &["session", "-h"],
        &["serve", "-h"],
        &["gen", "-h"],
        &["gen", "rmat", "-h"],
        &["rdf", "-h"],
        &["rdf", "materialize", "-h"],
        &["bench", "-h"],
    ] {
        let o = dynalog(args);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{args:?}: {o:?}");
        assert!(stdout.contains("Usage: dynalog"), "{args:?}: {stdout}");
        assert!(o.stderr.is_empty(), "{args:?}: {o:?}");
    }
    // The hostfile has its own spelling, shown in the help of the commands that take it.
    for command in ["run", "session", "serve"] {
        let o = dynalog(&[command, "-h"]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("-H, --hostfile"), "{command}: {stdout}");
        assert!(stdout.contains("-h, --help"), "{command}: {stdout}");
    }
}

#[test]
fn the_hostfile_is_dash_capital_h() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("p.dl");
    std::fs::write(&program, ".decl e(x: number)\n").expect("write program");
    let missing = dir.path().join("no-such-hosts");
    let o = dynalog(&[
        "run",
        program.to_str().expect("utf-8"),
        "--engine",
        "diff",
        "-n",
        "2",
        "-H",
        missing.to_str().expect("utf-8"),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("cannot read the hostfile") && stderr.contains("no-such-hosts"),
        "{stderr}"
    );
}

/// Run `dynalog args` with its standard output on a pipe that is closed after the
/// first bytes, while the command still has much more to write. It must end without a
/// word on stderr: killed by SIGPIPE, as `cat` or `grep` are.
fn closes_quietly(args: &[&str], dir: &std::path::Path) {
    closes_quietly_with_input(args, dir, "");
}

/// [`closes_quietly`] with `input` on standard input.
fn closes_quietly_with_input(args: &[&str], dir: &std::path::Path, input: &str) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dynalog starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(input.as_bytes())
        .expect("the input is written");
    drop(stdin);
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).expect("the first bytes");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("dynalog ends");
    assert_eq!(stderr, "", "{args:?}");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{args:?}: {status:?}");
}

#[test]
fn a_closed_standard_output_ends_commands_quietly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    // Megabytes of output: far more than a pipe holds.
    closes_quietly(&["gen", "rmat", "-n", "1000", "-m", "300000"], d);
    closes_quietly(&["gen", "lubm", "-u", "1"], d);
    assert!(
        dynalog(&[
            "gen",
            "rmat",
            "-n",
            "2000",
            "-m",
            "8000",
            "-o",
            d.join("edge.facts").to_str().expect("utf-8"),
        ])
        .status
        .success()
    );
    let tc = root().join("programs/tc.dl");
    let tc = tc.to_str().expect("utf-8");
    closes_quietly(&["run", tc, "-F", ".", "-D", "-"], d);
    closes_quietly_with_input(
        &["session", tc, "-F", ".", "--engine", "seminaive"],
        d,
        "dump tc\ndump tc\n",
    );
    let lubm = d.join("lubm.nt");
    assert!(
        dynalog(&[
            "gen",
            "lubm",
            "-u",
            "1",
            "-o",
            lubm.to_str().expect("utf-8")
        ])
        .status
        .success()
    );
    closes_quietly(
        &["rdf", "materialize", "lubm.nt", "--rules", "rhodf", "--all"],
        d,
    );
}

#[test]
fn run_shows_the_facts_so_far_on_a_terminal() {
    // A chain of 1,500 edges: 1.1M paths, long enough for the display to be drawn.
    let dir = tempfile::tempdir().expect("temp dir");
    let edges: String = (0..1500).map(|i| format!("{i}\t{}\n", i + 1)).collect();
    std::fs::write(dir.path().join("edge.facts"), edges).expect("facts");
    let program = dir.path().join("tc.dl");
    std::fs::write(
        &program,
        ".decl edge(x: number, y: number)\n.input edge\n.decl path(x: number, y: number)\n\
         .output path\npath(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n",
    )
    .expect("program");
    let d = dir.path().to_str().expect("utf-8");
    for engine in ["seminaive", "diff"] {
        let command = format!(
            "{} run {d}/tc.dl -F {d} -D {d} --engine {engine} -w 2",
            env!("CARGO_BIN_EXE_dynalog")
        );
        let o = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("DYNALOG_PROGRESS_DELAY_MS", "0")
            .stdin(Stdio::null())
            .output()
            .expect("the command runs");
        let shown = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{engine}: {shown}");
        assert!(
            shown.contains("facts so far, evaluating"),
            "{engine}: {shown}"
        );
    }
}

#[test]
fn gen_shows_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("big.facts");
    let out = out.to_str().expect("utf-8");
    // The display appears at once instead of after a second, so that the test does
    // not depend on the speed of the machine.
    let gen_rmat = |command: &mut Command| {
        command
            .env("DYNALOG_PROGRESS_DELAY_MS", "0")
            .stdin(Stdio::null())
            .output()
            .expect("the command runs")
    };
    // Not a terminal: nothing on stderr.
    let o = gen_rmat(
        Command::new(env!("CARGO_BIN_EXE_dynalog"))
            .args(["gen", "rmat", "-n", "1000", "-m", "100000", "-o", out]),
    );
    assert!(o.status.success());
    assert!(o.stderr.is_empty(), "{o:?}");
    // On a terminal (`script` gives the command one): the lines written, named.
    let command = format!(
        "{} gen rmat -n 1000 -m 100000 -o {out}",
        env!("CARGO_BIN_EXE_dynalog")
    );
    let o = gen_rmat(Command::new("script").args(["-qec", &command, "/dev/null"]));
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{shown}");
    assert!(
        shown.contains("/100,000 edges of R-MAT(1000, 100000)"),
        "{shown}"
    );
}
