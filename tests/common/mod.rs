//! Helpers shared by the integration tests: run the `dynalog` binary, compare outputs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn dynalog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("the dynalog binary runs")
}

/// The lines of a file, sorted (outputs are compared "byte for byte after sorting").
pub fn sorted_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

/// Run `dynalog run` and return (exit ok, stdout, stderr).
pub fn run_program(
    program: &Path,
    facts: &Path,
    out: &str,
    extra: &[&str],
) -> (bool, String, String) {
    let mut args = vec![
        "run",
        program.to_str().expect("utf-8 path"),
        "-F",
        facts.to_str().expect("utf-8 path"),
        "-D",
        out,
    ];
    args.extend_from_slice(extra);
    let o = dynalog(&args);
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Run `dynalog session ARGS` with `input` on its standard input; returns (exit ok,
/// stdout, stderr).
pub fn run_session(args: &[&str], input: &str) -> (bool, String, String) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .arg("session")
        .args(args)
        .current_dir(root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dynalog starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    let o = child.wait_with_output().expect("dynalog ends");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
