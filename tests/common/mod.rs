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
    run_session_bytes(args, input.as_bytes())
}

/// [`run_session`] with input that need not be UTF-8.
pub fn run_session_bytes(args: &[&str], input: &[u8]) -> (bool, String, String) {
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
        .write_all(input)
        .expect("write stdin");
    let o = child.wait_with_output().expect("dynalog ends");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Replace the `in 12.3 ms` of session summary lines by `in T ms`.
pub fn mask_times(text: &str) -> String {
    text.lines()
        .map(|l| match (l.starts_with("commit "), l.rfind(" in ")) {
            (true, Some(i)) if l.ends_with(" ms") => format!("{} in T ms", &l[..i]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The value of a `# key: value` header line of a session script.
pub fn header<'a>(script: &'a str, key: &str) -> &'a str {
    script
        .lines()
        .find_map(|l| l.strip_prefix(&format!("# {key}: ")))
        .unwrap_or_else(|| panic!("the script has no `# {key}:` line"))
}

/// Send one HTTP/1.1 request to `addr`; returns (status, body).
pub fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("writes");
    let mut response = String::new();
    s.read_to_string(&mut response).expect("reads");
    parse_response(&response).expect("status line")
}

/// A whole HTTP/1.1 response read until the connection closed: its status and its
/// body, decoded if it came in chunks (a streamed answer); `None` without a status.
pub fn parse_response(response: &str) -> Option<(u16, String)> {
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    let chunked = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    if !chunked {
        return Some((status, body.to_string()));
    }
    let mut decoded = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            break;
        }
        decoded.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
    Some((status, decoded))
}

/// Read the `listening on http://ADDR` line `dynalog serve` prints first; returns ADDR.
pub fn listening_address(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("reads the address");
    line.trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string()
}

/// Run `dynalog ARGS`, which must succeed; returns its standard output.
pub fn dynalog_ok(args: &[&str]) -> String {
    let o = dynalog(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "dynalog {args:?} failed: {stderr}");
    String::from_utf8(o.stdout).expect("utf-8 output")
}

/// A `dynalog serve` process, killed when dropped.
pub struct Server {
    pub child: std::process::Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `dynalog serve ARGS --listen 127.0.0.1:0` in the repository root and wait
/// for its address.
pub fn start_server(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dynalog"))
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("dynalog serve starts");
    let addr = listening_address(&mut child);
    Server { child, addr }
}

/// A small deterministic generator (SplitMix64), so a failing random test replays exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Run `dynalog run PROGRAM -F FACTS -D DIR --engine E` with every engine, each writing
/// into its own new folder `scratch/NAME-E`; fails the test if a run fails. Returns the
/// engines with their output folders.
pub fn run_with_every_engine(
    program: &Path,
    facts: &Path,
    scratch: &Path,
    name: &str,
) -> Vec<(&'static str, PathBuf)> {
    dynalog_engines::ENGINE_NAMES
        .iter()
        .map(|&engine| {
            let out = scratch.join(format!("{name}-{engine}"));
            std::fs::create_dir(&out).expect("out dir");
            let (ok, _, stderr) = run_program(
                program,
                facts,
                out.to_str().expect("utf-8 path"),
                &["--engine", engine],
            );
            assert!(ok, "{name} with {engine}: {stderr}");
            (engine, out)
        })
        .collect()
}
