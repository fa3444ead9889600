//! Where a worker's time goes, per operator of the circuit: with the environment
//! variable `DYNALOG_PROFILE` set, every worker records timely's scheduling events and,
//! when it stops, prints to standard error the operators that took the most time (own
//! time: the time of an operator minus that of the operators scheduled inside it).
//!
//! ```text
//! DYNALOG_PROFILE=1 dynalog run programs/tc.dl -F DIR --engine diff
//! ```
//!
//! With `DYNALOG_PROFILE=commit`, each worker prints (and resets) its profile after every
//! commit instead. A diagnostic for the engine's developers; it costs a little time per
//! scheduling.
//!
//! With `DYNALOG_MEMORY_TRACE=MS`, each worker prints, every `MS` milliseconds of a
//! commit, what its parts hold (the meters of module `memory`, in MB, the empty ones
//! left out) and the process's resident memory: where the peak of a load comes from,
//! which a report at rest cannot tell. Commits then ignore their limits of changes and
//! time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;
use timely::logging::{StartStop, TimelyEvent, TimelyEventBuilder};
use timely::worker::Worker;

/// What a worker's logger has gathered.
#[derive(Default)]
struct State {
    /// Operator id -> (name, address).
    names: HashMap<usize, (String, Vec<usize>)>,
    /// Operator id -> (own time, schedulings).
    own: HashMap<usize, (Duration, u64)>,
    /// Operators being scheduled: (id, start, time of operators scheduled inside).
    stack: Vec<(usize, Duration, Duration)>,
}

/// A worker's profile, if `DYNALOG_PROFILE` is set.
pub(crate) struct Profile {
    state: Rc<RefCell<State>>,
    index: usize,
    /// Print after every commit (`DYNALOG_PROFILE=commit`), not only at the end.
    pub(crate) each_commit: bool,
}

impl Profile {
    /// Start recording on `worker` (before its dataflow is built), if asked for.
    pub(crate) fn start(worker: &mut Worker) -> Option<Profile> {
        let each_commit = std::env::var_os("DYNALOG_PROFILE")? == "commit";
        let state = Rc::new(RefCell::new(State::default()));
        let s = state.clone();
        let mut registry = worker.log_register()?;
        registry.insert::<TimelyEventBuilder, _>("timely", move |_, events| {
            let mut s = s.borrow_mut();
            for (time, event) in events.iter().flatten() {
                match event {
                    TimelyEvent::Operates(op) => {
                        s.names.insert(op.id, (op.name.clone(), op.addr.clone()));
                    }
                    TimelyEvent::Schedule(e) => match e.start_stop {
                        StartStop::Start => s.stack.push((e.id, *time, Duration::ZERO)),
                        StartStop::Stop => {
                            if let Some((id, start, inner)) = s.stack.pop() {
                                let total = time.saturating_sub(start);
                                let entry = s.own.entry(id).or_default();
                                entry.0 += total.saturating_sub(inner);
                                entry.1 += 1;
                                if let Some(parent) = s.stack.last_mut() {
                                    parent.2 += total;
                                }
                            }
                        }
                    },
                    _ => {}
                }
            }
        });
        drop(registry);
        Some(Profile {
            state,
            index: worker.index(),
            each_commit,
        })
    }

    /// Print the operators that took the most time since the last report, most first.
    pub(crate) fn report(&self, worker: &mut Worker, what: &str) {
        if let Some(mut registry) = worker.log_register() {
            registry.flush();
        }
        let mut s = self.state.borrow_mut();
        let mut rows: Vec<(Duration, u64, String)> = s
            .own
            .iter()
            .map(|(id, &(time, count))| {
                let name = s
                    .names
                    .get(id)
                    .map_or_else(|| format!("operator {id}"), |(n, a)| format!("{n} {a:?}"));
                (time, count, name)
            })
            .collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
        let total: Duration = rows.iter().map(|r| r.0).sum();
        let mut text = format!(
            "profile of worker {} ({what}): {:.1} ms in operators\n",
            self.index,
            total.as_secs_f64() * 1e3
        );
        for (time, count, name) in rows.iter().take(25) {
            text.push_str(&format!(
                "  {:8.1} ms {:5.1}% {:7} x  {name}\n",
                time.as_secs_f64() * 1e3,
                100.0 * time.as_secs_f64() / total.as_secs_f64().max(1e-9),
                count
            ));
        }
        eprint!("{text}");
        s.own.clear();
    }
}

/// The interval of `DYNALOG_MEMORY_TRACE`, if set.
pub(crate) fn memory_trace() -> Option<Duration> {
    let ms: u64 = std::env::var("DYNALOG_MEMORY_TRACE").ok()?.parse().ok()?;
    Some(Duration::from_millis(ms.max(1)))
}

/// Step `worker` while `busy`, printing its meters every `every`.
pub(crate) fn trace_memory(
    worker: &mut Worker,
    meters: &[super::memory::Meter],
    every: Duration,
    mut busy: impl FnMut() -> bool,
) {
    let start = std::time::Instant::now();
    let mut last = start;
    while busy() {
        worker.step_or_park(Some(every));
        if last.elapsed() < every {
            continue;
        }
        last = std::time::Instant::now();
        print_meters(
            worker.index(),
            meters,
            &format!("at {:.2} s", start.elapsed().as_secs_f64()),
        );
    }
    // And once the commit is done: what the loop's last moments held and freed.
    print_meters(
        worker.index(),
        meters,
        &format!("at the end, {:.2} s", start.elapsed().as_secs_f64()),
    );
}

/// One line of the trace: the meters of worker `index` that hold a MB or more.
fn print_meters(index: usize, meters: &[super::memory::Meter], when: &str) {
    let mut line = format!("memory of worker {index} {when}:");
    let mut total = 0;
    for m in meters {
        let usage = (m.measure)();
        total += usage.bytes;
        if usage.bytes >= 1 << 20 {
            line.push_str(&format!(
                " {}={:.0} ({:.1}M)",
                m.name,
                usage.bytes as f64 / 1e6,
                usage.records as f64 / 1e6
            ));
        }
    }
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0);
    eprintln!(
        "{line}; total {:.0} MB; process resident {:.0} MB{}",
        total as f64 / 1e6,
        rss as f64 / 1e3,
        heap()
    );
}

/// The allocator's view, for the trace: the heap's bytes in use and free (freed
/// blocks it keeps), and the bytes of blocks mapped on their own. What the meters do
/// not see is either live (buffers, batchers) or the heap's free blocks.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn heap() -> String {
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    format!(
        " (heap: {:.0} MB in use, {:.0} MB free; mapped blocks {:.0} MB)",
        info.uordblks as f64 / 1e6,
        info.fordblks as f64 / 1e6,
        info.hblkhd as f64 / 1e6
    )
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn heap() -> String {
    String::new()
}
