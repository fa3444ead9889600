//! One measurement in its own process (`dynalog bench --worker MODE:WORKLOAD:ENGINE:KEEP`):
//! it prints one JSON line, a [`Report`], on standard output.

use crate::Error;
use crate::workload::{self, Workload};
use dynalog_analysis::{Program, RelId, Value};
use dynalog_engines::Engine;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Instant;

/// What a worker measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Load the first KEEP% (E), insert the rest (E+), delete it (E-), check.
    Update,
    /// Load everything (E): the peak memory of a full materialization.
    Full,
    /// Load the first 99%, then insert and delete single facts of the rest.
    Single,
    /// Load everything, add one rule, remove it again, check.
    Rules,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Update => "update",
            Mode::Full => "full",
            Mode::Single => "single",
            Mode::Rules => "rules",
        }
    }

    /// Every mode, in the order a run measures them.
    pub const ALL: [Mode; 4] = [Mode::Update, Mode::Full, Mode::Single, Mode::Rules];

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// The task of one worker.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub mode: Mode,
    pub workload: Workload,
    pub engine: String,
    /// Percentage of the input lines loaded first.
    pub keep: u32,
}

impl Task {
    /// `MODE:WORKLOAD:ENGINE:KEEP`, the argument of `--worker`.
    pub fn spec(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.mode.name(),
            self.workload.name,
            self.engine,
            self.keep
        )
    }

    pub fn parse(spec: &str) -> Result<Task, Error> {
        let parts: Vec<&str> = spec.split(':').collect();
        let [mode, name, engine, keep] = parts[..] else {
            return Err(Error::Usage(format!(
                "--worker expects MODE:WORKLOAD:ENGINE:KEEP, got `{spec}`"
            )));
        };
        let mode = Mode::parse(mode)
            .ok_or_else(|| Error::Usage(format!("unknown worker mode `{mode}`")))?;
        let keep: u32 = keep
            .parse()
            .ok()
            .filter(|k| (1..=100).contains(k))
            .ok_or_else(|| {
                Error::Usage(format!("KEEP must be a percentage 1..=100, got `{keep}`"))
            })?;
        Ok(Task {
            mode,
            workload: workload::find(name)?,
            engine: engine.to_string(),
            keep,
        })
    }
}

/// The JSON line a worker prints. Times in seconds unless named `_ms`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Reading and interning both parts of the input (not part of E).
    pub load_s: f64,
    /// Creating the engine (starting its threads).
    pub start_s: f64,
    pub input_facts: usize,
    pub update_facts: usize,
    /// Lines of the update that repeat a fact, left out of it.
    pub update_duplicates: usize,
    pub e_s: f64,
    pub facts_e: usize,
    pub eplus_s: Option<f64>,
    pub facts_eplus: Option<usize>,
    pub eminus_s: Option<f64>,
    pub facts_eminus: Option<usize>,
    /// Single-fact updates: every insertion's and deletion's commit time.
    pub single_insert_ms: Vec<f64>,
    pub single_delete_ms: Vec<f64>,
    pub add_rule_s: Option<f64>,
    pub facts_with_rule: Option<usize>,
    pub remove_rule_s: Option<f64>,
    /// Resident memory (VmRSS) after adding the rule and after removing it.
    pub rss_with_rule_mb: Option<f64>,
    pub rss_after_rule_mb: Option<f64>,
    /// `None`: no state check in this mode; `Some(true)`: the state came back exactly.
    pub round_trip_ok: Option<bool>,
    /// What differed, when the check failed.
    pub mismatch: Option<String>,
}

/// A materialization, relation by relation, as sorted flat tuples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub relations: Vec<(usize, Vec<Value>)>,
}

impl Snapshot {
    pub fn of(engine: &dyn Engine) -> Snapshot {
        let program = engine.program();
        let relations = (0..program.relations.len())
            .map(|r| {
                let arity = program.relations[r].arity();
                let mut flat = Vec::with_capacity(engine.len(r as RelId) * arity);
                engine.for_each_fact(r as RelId, &mut |t| flat.extend_from_slice(t));
                (arity, sort_tuples(flat, arity))
            })
            .collect();
        Snapshot { relations }
    }
}

/// Sort flat tuples of `arity` values (and drop repeats).
pub fn sort_tuples(flat: Vec<Value>, arity: usize) -> Vec<Value> {
    if arity == 0 {
        return flat;
    }
    let n = flat.len() / arity;
    let mut order: Vec<u32> = (0..n as u32).collect();
    let tuple = |i: u32| &flat[i as usize * arity..(i as usize + 1) * arity];
    order.sort_unstable_by(|&a, &b| tuple(a).cmp(tuple(b)));
    order.dedup_by(|a, b| tuple(*a) == tuple(*b));
    let mut out = Vec::with_capacity(order.len() * arity);
    for i in order {
        out.extend_from_slice(tuple(i));
    }
    out
}

/// How the final state of a measurement differs from the state after E: a finding of
/// the round-trip check, reported in the results (not an error of the harness).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Facts of the state after E missing at the end.
    pub missing: usize,
    /// Facts at the end that were not in the state after E.
    pub extra: usize,
    /// Up to six of them, `missing FACT` or `extra FACT`.
    pub examples: Vec<String>,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the final state differs from the state after E: {} fact(s) missing, {} extra ({})",
            self.missing,
            self.extra,
            self.examples.join("; ")
        )
    }
}

/// Compare the state after E with the state at the end, fact for fact. `Err` says how
/// many facts are missing and extra, with up to three of each written out.
pub fn compare(program: &Program, expected: &Snapshot, actual: &Snapshot) -> Result<(), Mismatch> {
    if expected == actual {
        return Ok(());
    }
    let (mut missing, mut extra) = (0usize, 0usize);
    let mut examples = Vec::new();
    let relations = expected.relations.len().max(actual.relations.len());
    let empty = (0usize, Vec::new());
    for r in 0..relations {
        let (arity, want) = expected.relations.get(r).unwrap_or(&empty);
        let (_, got) = actual.relations.get(r).unwrap_or(&empty);
        let arity = (*arity).max(1);
        let (a, b): (Vec<&[Value]>, Vec<&[Value]>) =
            (want.chunks(arity).collect(), got.chunks(arity).collect());
        let (mut i, mut j) = (0, 0);
        let mut note = |sign: &str, t: &[Value], count: &mut usize| {
            *count += 1;
            if examples.len() < 6 && r < program.relations.len() {
                examples.push(format!("{sign} {}", program.fact_to_string(r as RelId, t)));
            }
        };
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x == y => {
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x < y => {
                    note("missing", x, &mut missing);
                    i += 1;
                }
                (Some(x), None) => {
                    note("missing", x, &mut missing);
                    i += 1;
                }
                (_, Some(y)) => {
                    note("extra", y, &mut extra);
                    j += 1;
                }
                (None, None) => break,
            }
        }
    }
    Err(Mismatch {
        missing,
        extra,
        examples,
    })
}

/// The facts of the materialization: every relation but the internal ones of
/// aggregates (which engines keep or not, and Soufflé does not print).
fn total(engine: &dyn Engine) -> usize {
    let p = engine.program();
    (0..p.relations.len())
        .filter(|&r| !p.relations[r].is_internal())
        .map(|r| engine.len(r as RelId))
        .sum()
}

fn commit(engine: &mut dyn Engine) -> Result<(), Error> {
    engine
        .commit()
        .map(|_| ())
        .map_err(|e| Error::Commit(e.to_string()))
}

/// Current resident memory of this process in MB.
fn rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Run one task and return its report (an `Err` is a failure, not a measurement).
pub fn run(task: &Task, cache: &Path, workers: usize, singles: usize) -> Result<Report, Error> {
    let mut report = Report::default();
    let t = Instant::now();
    let mut loaded = workload::load(cache, task.workload, task.keep)?;
    report.load_s = t.elapsed().as_secs_f64();
    report.input_facts = loaded.head.len();
    report.update_facts = loaded.tail.len();
    report.update_duplicates = loaded.tail_duplicates;
    let t = Instant::now();
    let config = dynalog_engines::Config::new(&task.engine, workers);
    let mut engine = dynalog_engines::create(&config, loaded.program)
        .map_err(|e| Error::Engine(e.to_string()))?;
    report.start_s = t.elapsed().as_secs_f64();

    let t = Instant::now();
    for (r, f) in loaded.head.iter() {
        engine.insert(r, f);
    }
    let staging = t.elapsed();
    // Staged in the engine: the input goes before the evaluation, as `dynalog run`
    // frees what it read, so that the peak is the engine's and not also this copy's
    // (on LUBM(50), about 80 MB). Freeing it is not timed.
    drop(std::mem::take(&mut loaded.head));
    let t = Instant::now();
    commit(engine.as_mut())?;
    report.e_s = (staging + t.elapsed()).as_secs_f64();
    report.facts_e = total(engine.as_ref());
    let check = |engine: &dyn Engine, before: &Snapshot, report: &mut Report| {
        let after = Snapshot::of(engine);
        let result = compare(engine.program(), before, &after);
        report.round_trip_ok = Some(result.is_ok());
        report.mismatch = result.err().map(|m| m.to_string());
    };

    match task.mode {
        Mode::Full => {}
        Mode::Update => {
            let before = Snapshot::of(engine.as_ref());
            let t = Instant::now();
            for (r, f) in &loaded.tail {
                engine.insert(*r, f);
            }
            commit(engine.as_mut())?;
            report.eplus_s = Some(t.elapsed().as_secs_f64());
            report.facts_eplus = Some(total(engine.as_ref()));
            let t = Instant::now();
            for (r, f) in &loaded.tail {
                engine.remove(*r, f);
            }
            commit(engine.as_mut())?;
            report.eminus_s = Some(t.elapsed().as_secs_f64());
            report.facts_eminus = Some(total(engine.as_ref()));
            check(engine.as_ref(), &before, &mut report);
        }
        Mode::Single => {
            if loaded.tail.is_empty() {
                // Every line of the last 1% repeats a loaded fact: nothing to measure.
                return Ok(report);
            }
            let before = Snapshot::of(engine.as_ref());
            for i in 0..singles {
                let (r, f) = &loaded.tail[i % loaded.tail.len()];
                let t = Instant::now();
                engine.insert(*r, f);
                commit(engine.as_mut())?;
                report
                    .single_insert_ms
                    .push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                engine.remove(*r, f);
                commit(engine.as_mut())?;
                report
                    .single_delete_ms
                    .push(t.elapsed().as_secs_f64() * 1e3);
            }
            check(engine.as_ref(), &before, &mut report);
        }
        Mode::Rules => {
            let before = Snapshot::of(engine.as_ref());
            // The relations keep their ids (those of aggregates included).
            let reanalyse = |text: &str, current: &Program| -> Result<Program, Error> {
                let file = dynalog_syntax::SourceFile::new("<bench rules>", text.to_string());
                let ast = dynalog_syntax::parse(&file)?;
                let options = dynalog_analysis::Options {
                    previous: current.relations.clone(),
                };
                Ok(dynalog_analysis::analyse_with(
                    &file,
                    &ast,
                    current.symbols.clone(),
                    &options,
                )?)
            };
            let text = task.workload.rules.text();
            let with = reanalyse(
                &format!("{text}\n{}\n", task.workload.rules.extra_rule()),
                engine.program(),
            )?;
            let t = Instant::now();
            engine.set_program(with);
            commit(engine.as_mut())?;
            report.add_rule_s = Some(t.elapsed().as_secs_f64());
            report.facts_with_rule = Some(total(engine.as_ref()));
            report.rss_with_rule_mb = rss_mb();
            let without = reanalyse(text, engine.program())?;
            let t = Instant::now();
            engine.set_program(without);
            commit(engine.as_mut())?;
            report.remove_rule_s = Some(t.elapsed().as_secs_f64());
            report.rss_after_rule_mb = rss_mb();
            check(engine.as_ref(), &before, &mut report);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program() -> Program {
        let source = dynalog_syntax::SourceFile::new(
            "t.dl",
            ".decl e(x: number, y: number)\n.decl p(x: number)\np(x) :- e(x, _).\n",
        );
        workload::analyse(&source).unwrap()
    }

    fn snap(e: &[[Value; 2]], p: &[Value]) -> Snapshot {
        Snapshot {
            relations: vec![
                (2, sort_tuples(e.iter().flatten().copied().collect(), 2)),
                (1, sort_tuples(p.to_vec(), 1)),
            ],
        }
    }

    #[test]
    fn equal_states_compare_equal_in_any_order() {
        let a = snap(&[[1, 2], [3, 4], [0, 9]], &[1, 3]);
        let b = snap(&[[3, 4], [0, 9], [1, 2], [1, 2]], &[3, 1]);
        assert!(compare(&program(), &a, &b).is_ok());
    }

    #[test]
    fn a_missing_and_an_extra_fact_are_reported() {
        let a = snap(&[[1, 2], [3, 4]], &[1, 3]);
        let b = snap(&[[1, 2], [5, 6]], &[1, 3, 7]);
        let err = compare(&program(), &a, &b).unwrap_err().to_string();
        assert!(err.contains("1 fact(s) missing, 2 extra"), "{err}");
        assert!(err.contains("missing e(3, 4)."), "{err}");
        assert!(err.contains("extra e(5, 6)."), "{err}");
        assert!(err.contains("extra p(7)."), "{err}");
    }

    #[test]
    fn a_lost_relation_is_a_mismatch() {
        let a = snap(&[[1, 2]], &[1]);
        let b = Snapshot {
            relations: vec![a.relations[0].clone()],
        };
        let err = compare(&program(), &a, &b).unwrap_err().to_string();
        assert!(err.contains("1 fact(s) missing, 0 extra"), "{err}");
    }

    #[test]
    fn task_specs_round_trip_and_bad_ones_are_errors() {
        let task = Task::parse("update:tc-tiny:diff:90").unwrap();
        assert_eq!(task.mode, Mode::Update);
        assert_eq!(Task::parse(&task.spec()).unwrap(), task);
        assert!(Task::parse("update:tc-tiny:diff").is_err());
        assert!(Task::parse("update:nope:diff:90").is_err());
        assert!(Task::parse("update:tc-tiny:diff:0").is_err());
        assert!(Task::parse("sideways:tc-tiny:diff:50").is_err());
    }

    #[test]
    fn reports_round_trip_through_json() {
        let report = Report {
            e_s: 0.5,
            eplus_s: Some(0.25),
            single_insert_ms: vec![1.0, 2.0],
            round_trip_ok: Some(true),
            ..Report::default()
        };
        let line = serde_json::to_string(&report).unwrap();
        assert_eq!(serde_json::from_str::<Report>(&line).unwrap(), report);
    }
}
