//! Running one measurement process under a time and a memory limit, with its peak
//! resident memory from the OS (`wait4`'s `ru_maxrss`).

use crate::Error;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Limits of one child process.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeout: Duration,
    /// Resident memory in bytes.
    pub memory: u64,
}

/// How a child process ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// It exited with status 0: its standard output.
    Done { stdout: String },
    /// Killed at the time limit.
    Oot,
    /// Killed at the memory limit, or it died of a failed allocation.
    Oom,
    /// It failed otherwise: exit status or signal, and the end of its standard error.
    Failed(String),
}

/// The result of [`run`]: the outcome, wall time and peak RSS in bytes.
#[derive(Clone, Debug)]
pub struct Finished {
    pub outcome: Outcome,
    pub wall: Duration,
    pub peak_rss: u64,
}

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut r) = r {
            let mut bytes = Vec::new();
            let _ = r.read_to_end(&mut bytes);
            s = String::from_utf8_lossy(&bytes).into_owned();
        }
        s
    })
}

/// Current resident memory of a process in bytes (`VmRSS`), if it can be read.
fn rss_of(pid: i32) -> Option<u64> {
    status_field(&format!("/proc/{pid}/status"), "VmRSS:")
}

/// A field of a `/proc/.../status` file in kB, as bytes.
fn status_field(path: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The peak resident memory of a child that has ended, from what is known of it.
///
/// `ru_maxrss` from `wait4` is never below the child's peak, but may be above it: Linux
/// keeps, across `exec`, the high-water mark of the memory the child was forked with,
/// which is a copy of this process's (`exec_mmap` sets `signal->maxrss` from the old
/// memory). A harness holding 1.4 GB of LUBM(50) reported 1,440 MB for every program
/// it ran that needed less. So when `ru_maxrss` is not above this process's own
/// high-water mark at the time of the fork (`inherited`, read once the child has
/// ended: the mark only grows, and another thread may have raised it between a read
/// before the fork and the fork), the child's own high-water mark, read from `/proc`
/// while it ran (`polled`, its memory after `exec` only), is taken instead: it misses
/// at most the growth of the last poll interval (20 ms).
fn peak_of(maxrss: u64, inherited: Option<u64>, polled: Option<u64>) -> u64 {
    match (inherited, polled) {
        (Some(inherited), Some(polled)) if maxrss <= inherited => polled.min(maxrss),
        _ => maxrss,
    }
}

/// Run `command` to its end or its limits. The child is polled every few
/// milliseconds: past the timeout or above the memory limit it gets SIGKILL.
pub fn run(mut command: Command, limits: Limits) -> Result<Finished, Error> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut polled: Option<u64> = None;
    let mut child = command
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {:?}", command.get_program()), e))?;
    let pid = child.id() as libc::pid_t;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let mut killed: Option<Outcome> = None;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut poll = Duration::from_millis(1);
    loop {
        // SAFETY: `pid` is our own child, not yet reaped; the pointers are to locals.
        let r = unsafe {
            libc::wait4(
                pid,
                &mut status,
                if killed.is_some() { 0 } else { libc::WNOHANG },
                &mut usage,
            )
        };
        if r == pid {
            break;
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::io("waiting for a measurement process", e));
        }
        if let Some(hwm) = status_field(&format!("/proc/{pid}/status"), "VmHWM:") {
            polled = Some(polled.map_or(hwm, |p| p.max(hwm)));
        }
        if killed.is_none() {
            let over_time = started.elapsed() >= limits.timeout;
            let over_memory = rss_of(pid).is_some_and(|rss| rss > limits.memory);
            if over_time || over_memory {
                killed = Some(if over_memory {
                    Outcome::Oom
                } else {
                    Outcome::Oot
                });
                // SAFETY: sending a signal to our own unreaped child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
                continue;
            }
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(20));
    }
    let wall = started.elapsed();
    let inherited = status_field("/proc/self/status", "VmHWM:");
    // `ru_maxrss` is in kilobytes on Linux.
    let peak_rss = peak_of((usage.ru_maxrss.max(0) as u64) * 1024, inherited, polled);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    // The child was reaped by wait4: make sure std does not try again.
    std::mem::forget(child);
    let outcome = classify(killed, status, wall, peak_rss, stdout, &stderr, limits);
    Ok(Finished {
        outcome,
        wall,
        peak_rss,
    })
}

/// How a reaped child ended, from what the poll loop saw (`killed`), its wait
/// status, wall time and peak memory.
fn classify(
    killed: Option<Outcome>,
    status: libc::c_int,
    wall: Duration,
    peak_rss: u64,
    stdout: String,
    stderr: &str,
    limits: Limits,
) -> Outcome {
    // A child can end between two polls after its time ran out or its memory
    // went above the limit: it is past the limit all the same, so it is OOT or
    // OOM, whatever it printed.
    if let Some(k) = killed {
        k
    } else if wall >= limits.timeout {
        Outcome::Oot
    } else if peak_rss > limits.memory {
        Outcome::Oom
    } else if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Outcome::Done { stdout }
    } else {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let alloc_failed = stderr.contains("memory allocation of");
        if alloc_failed || peak_rss > limits.memory {
            Outcome::Oom
        } else if libc::WIFSIGNALED(status) {
            Outcome::Failed(format!(
                "killed by signal {}: {}",
                libc::WTERMSIG(status),
                tail.join(" | ")
            ))
        } else {
            Outcome::Failed(format!(
                "exit status {}: {}",
                libc::WEXITSTATUS(status),
                tail.join(" | ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(timeout_ms: u64, memory_mb: u64) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            memory: memory_mb << 20,
        }
    }

    #[test]
    fn a_process_that_finishes_gives_its_output_and_peak_memory() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo hello"]);
        let f = run(c, limits(10_000, 1000)).unwrap();
        assert_eq!(
            f.outcome,
            Outcome::Done {
                stdout: "hello\n".into()
            }
        );
        assert!(f.peak_rss > 0);
    }

    #[test]
    fn a_small_child_of_a_large_process_is_measured_small() {
        // This process holds 300 MB (touched) when it starts a child that needs a few:
        // the child's `ru_maxrss` starts from this process's high-water mark.
        let big = vec![1u8; 300 << 20];
        let mut c = Command::new("python3");
        c.args([
            "-c",
            "import time; x = bytearray(20_000_000); time.sleep(0.3)",
        ]);
        let f = run(c, limits(30_000, 1000)).unwrap();
        assert!(matches!(f.outcome, Outcome::Done { .. }));
        assert!(
            f.peak_rss > 20_000_000 && f.peak_rss < 150 << 20,
            "{} MB",
            f.peak_rss >> 20
        );
        assert_eq!(big.iter().map(|&b| b as usize).sum::<usize>(), 300 << 20);
    }

    #[test]
    fn the_peak_is_maxrss_unless_that_is_only_what_the_child_inherited() {
        // Above what it was forked with: the child's own peak.
        assert_eq!(peak_of(900, Some(500), Some(880)), 900);
        // At most what it was forked with: what was read of it while it ran.
        assert_eq!(peak_of(500, Some(500), Some(40)), 40);
        // Nothing read: maxrss, an upper bound.
        assert_eq!(peak_of(500, Some(500), None), 500);
        assert_eq!(peak_of(500, None, Some(40)), 500);
    }

    #[test]
    fn a_process_past_its_time_is_oot() {
        let mut c = Command::new("sleep");
        c.arg("5");
        let f = run(c, limits(50, 1000)).unwrap();
        assert_eq!(f.outcome, Outcome::Oot);
        assert!(f.wall < Duration::from_secs(4));
    }

    #[test]
    fn a_process_that_ends_on_its_own_past_its_time_is_still_oot() {
        // It exited with status 0 between two polls, after its time ran out:
        // no poll killed it, but it is past the limit all the same.
        let l = limits(50, 1000);
        let done = |wall| classify(None, 0, wall, 1, "out".into(), "", l);
        assert_eq!(done(Duration::from_millis(51)), Outcome::Oot);
        let big = classify(None, 0, Duration::from_millis(1), 2 << 30, "".into(), "", l);
        assert_eq!(big, Outcome::Oom);
        assert_eq!(
            done(Duration::from_millis(49)),
            Outcome::Done {
                stdout: "out".into()
            }
        );
    }

    #[test]
    fn a_process_above_its_memory_is_oom() {
        // 200 MB held resident for 20 s, limit 50 MB: without the memory check it
        // would end on its own or at the timeout (OOT).
        let mut c = Command::new("python3");
        c.args([
            "-c",
            "import time; x = bytearray(200_000_000); time.sleep(20)",
        ]);
        let f = run(c, limits(30_000, 50)).unwrap();
        assert_eq!(f.outcome, Outcome::Oom);
    }

    #[test]
    fn a_failing_process_is_failed_with_its_stderr() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo boom >&2; exit 3"]);
        let f = run(c, limits(10_000, 1000)).unwrap();
        assert_eq!(f.outcome, Outcome::Failed("exit status 3: boom".into()));
    }
}
