//! Every raw figure of a run ([`Results`], written as JSON) and the markdown tables
//! shaped like the study's Tables 3–5.

use crate::worker::{Mode, Report};
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// How one measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    #[serde(rename = "ok")]
    Ok,
    /// Killed at the time limit.
    #[serde(rename = "OOT")]
    Oot,
    /// Killed at the memory limit.
    #[serde(rename = "OOM")]
    Oom,
    /// The final state differed from the state after E.
    #[serde(rename = "MISMATCH")]
    Mismatch,
    /// The process failed (a bug: see `error`).
    #[serde(rename = "FAIL")]
    Fail,
    /// The system is not there (Soufflé not on PATH).
    #[serde(rename = "not installed")]
    NotInstalled,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Oot => "OOT",
            Status::Oom => "OOM",
            Status::Mismatch => "MISMATCH",
            Status::Fail => "FAIL",
            Status::NotInstalled => "not installed",
        }
    }

    /// Which status a cell shows when its repetitions disagree: the worst.
    fn rank(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::NotInstalled => 1,
            Status::Oot => 2,
            Status::Oom => 3,
            Status::Fail => 4,
            Status::Mismatch => 5,
        }
    }
}

/// One process (or, for Soufflé, the processes of one E/E+/E- triple).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub workload: String,
    pub engine: String,
    pub mode: Mode,
    /// The update size in percent (100 − the percentage loaded first).
    pub update_percent: u32,
    pub repetition: usize,
    pub status: Status,
    pub error: Option<String>,
    /// Wall time of the process(es), start-up and loading included.
    pub wall_s: f64,
    /// Peak resident memory from the OS (`wait4`).
    pub peak_rss_mb: f64,
    pub report: Option<Report>,
}

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    pub date: String,
    pub command: String,
    pub machine: String,
    pub workers: usize,
    pub repeat: usize,
    pub singles: usize,
    pub timeout_s: f64,
    pub memory_limit_mb: u64,
    pub workloads: Vec<String>,
    pub engines: Vec<String>,
    pub updates: Vec<u32>,
    pub souffle: Option<String>,
    /// How many measurements the run planned; fewer in `measurements` means the run
    /// was still going (or was interrupted) when these results were written.
    #[serde(default)]
    pub planned: usize,
    pub measurements: Vec<Measurement>,
}

/// Median, minimum and maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

/// The summary of `values` (`None` when empty). The median of an even count is the
/// mean of the middle two.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[n - 1],
        n,
    })
}

/// A number with three significant digits (at least; large ones are not rounded).
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        let digits = (-a.log10().floor()) as usize + 2;
        format!("{x:.digits$}")
    }
}

/// `median` or `median (min–max)` when there is more than one value.
pub fn cell(s: Option<Summary>) -> String {
    match s {
        None => "—".into(),
        Some(s) if s.n == 1 || s.min == s.max => num(s.median),
        Some(s) => format!("{} ({}–{})", num(s.median), num(s.min), num(s.max)),
    }
}

/// What a section of the report says when the run measured none of its figures.
const NOT_MEASURED: &str = "Not measured in this run (see `--modes`).";

impl Results {
    fn select(&self, workload: &str, engine: &str, mode: Mode, update: u32) -> Vec<&Measurement> {
        self.measurements
            .iter()
            .filter(|m| {
                m.workload == workload
                    && m.engine == engine
                    && m.mode == mode
                    && (mode != Mode::Update || m.update_percent == update)
            })
            .collect()
    }

    /// The cell of one figure: a status when a repetition did not finish, otherwise
    /// the summary of `figure` over the repetitions.
    pub fn figure(
        &self,
        workload: &str,
        engine: &str,
        mode: Mode,
        update: u32,
        figure: impl Fn(&Measurement) -> Option<f64>,
    ) -> String {
        let ms = self.select(workload, engine, mode, update);
        if ms.is_empty() {
            return "—".into();
        }
        if let Some(worst) = ms.iter().map(|m| m.status).max_by_key(|s| s.rank())
            && worst != Status::Ok
            && worst != Status::Mismatch
        {
            return worst.label().into();
        }
        let values: Vec<f64> = ms.iter().filter_map(|m| figure(m)).collect();
        cell(summarize(&values))
    }

    /// The median of a figure over the repetitions that finished.
    pub fn median(
        &self,
        workload: &str,
        engine: &str,
        mode: Mode,
        update: u32,
        figure: impl Fn(&Measurement) -> Option<f64>,
    ) -> Option<f64> {
        let ms = self.select(workload, engine, mode, update);
        let values: Vec<f64> = ms
            .iter()
            .filter(|m| m.status == Status::Ok)
            .filter_map(|m| figure(m))
            .collect();
        summarize(&values).map(|s| s.median)
    }

    fn check(&self, workload: &str, engine: &str, mode: Mode, update: u32) -> String {
        let ms = self.select(workload, engine, mode, update);
        if ms.is_empty() {
            return "—".into();
        }
        if ms.iter().any(|m| m.status == Status::Mismatch) {
            return "**MISMATCH**".into();
        }
        let checked = ms
            .iter()
            .filter(|m| m.report.as_ref().and_then(|r| r.round_trip_ok) == Some(true))
            .count();
        if checked == 0 {
            "—".into()
        } else {
            format!("ok ({checked}/{})", ms.len())
        }
    }

    /// Measurements that failed a check or crashed.
    pub fn failures(&self) -> Vec<&Measurement> {
        self.measurements
            .iter()
            .filter(|m| matches!(m.status, Status::Mismatch | Status::Fail))
            .collect()
    }

    /// A table of the full materializations, one row per workload that has one and one
    /// column per engine: `lead` names the first columns (the workload, and one more
    /// filled by `extra` when there are two).
    fn per_engine_table(
        &self,
        s: &mut String,
        lead: &[&str],
        unit: &str,
        extra: impl Fn(&str) -> String,
        cell: impl Fn(&str, &str) -> String,
    ) {
        let _ = write!(s, "| {} |", lead.join(" | "));
        for e in &self.engines {
            let _ = write!(s, " {e} ({unit}) |");
        }
        let _ = write!(s, "\n|{}", "---|".repeat(lead.len() + self.engines.len()));
        let _ = writeln!(s);
        for w in &self.workloads {
            // A workload with no full materialization in this run has no row.
            if self
                .engines
                .iter()
                .all(|e| self.select(w, e, Mode::Full, 0).is_empty())
            {
                continue;
            }
            let _ = write!(s, "| {w} |");
            if lead.len() > 1 {
                let _ = write!(s, " {} |", extra(w));
            }
            for e in &self.engines {
                let _ = write!(s, " {} |", cell(w, e));
            }
            let _ = writeln!(s);
        }
    }

    /// The peak memory and the time of the full materializations, a row per workload
    /// that has one.
    fn full_tables(&self, s: &mut String) {
        let r = |m: &Measurement| m.report.clone();
        self.per_engine_table(
            s,
            &["workload", "facts"],
            "MB",
            |w| {
                self.engines
                    .iter()
                    .find_map(|e| {
                        self.median(w, e, Mode::Full, 0, |m| r(m).map(|r| r.facts_e as f64))
                    })
                    .map_or("—".into(), num)
            },
            |w, e| self.figure(w, e, Mode::Full, 0, |m| Some(m.peak_rss_mb)),
        );
        let _ = writeln!(
            s,
            "\nThe time of that full materialization (E of 100%, s):\n"
        );
        self.per_engine_table(
            s,
            &["workload"],
            "s",
            |_| String::new(),
            |w, e| self.figure(w, e, Mode::Full, 0, |m| r(m).map(|r| r.e_s)),
        );
    }

    /// Whether any measurement of these modes is in the results.
    fn measured(&self, modes: &[Mode]) -> bool {
        self.measurements.iter().any(|m| modes.contains(&m.mode))
    }

    /// The markdown report.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let r = |m: &Measurement| m.report.clone();
        let _ = writeln!(s, "# dynalog bench, {}\n", self.date);
        let _ = writeln!(
            s,
            "`{}`  \n{}; {} worker(s) per engine; {} repetition(s) (median, min–max in brackets); limits {} s and {} MB per process; Soufflé: {}.\n",
            self.command,
            self.machine,
            self.workers,
            self.repeat,
            self.timeout_s,
            self.memory_limit_mb,
            match &self.souffle {
                Some(path) => path.as_str(),
                None if self.engines.iter().any(|e| e == "souffle") => "not installed",
                None => "not requested",
            }
        );
        if self.measurements.len() < self.planned {
            let _ = writeln!(
                s,
                "**Partial results**: {} of {} measurements; the run was still going, or was interrupted, when this was written.\n",
                self.measurements.len(),
                self.planned
            );
        }

        let _ = writeln!(
            s,
            "## E, E+ and E− in seconds (Tables 3 and 4)\n\nE: load the first (100 − x)% of the input lines and materialize; E+: insert the rest; E−: delete it again; round trip: the state after E− equals the state after E, fact for fact.\n"
        );
        if self.measured(&[Mode::Update]) {
            let _ = writeln!(
                s,
                "| workload | update x | engine | E (s) | E+ (s) | E− (s) | facts after E | after E+ | peak RSS (MB) | round trip |"
            );
            let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
        } else {
            let _ = writeln!(s, "{NOT_MEASURED}");
        }
        for w in &self.workloads {
            for &u in &self.updates {
                for e in &self.engines {
                    // Not measured (not chosen with `--modes`, or not yet).
                    if self.select(w, e, Mode::Update, u).is_empty() {
                        continue;
                    }
                    let f = |g: &dyn Fn(&Report) -> Option<f64>| {
                        self.figure(w, e, Mode::Update, u, |m| r(m).and_then(|r| g(&r)))
                    };
                    let _ = writeln!(
                        s,
                        "| {w} | {u}% | {e} | {} | {} | {} | {} | {} | {} | {} |",
                        f(&|r| Some(r.e_s)),
                        f(&|r| r.eplus_s),
                        f(&|r| r.eminus_s),
                        f(&|r| Some(r.facts_e as f64)),
                        f(&|r| r.facts_eplus.map(|n| n as f64)),
                        self.figure(w, e, Mode::Update, u, |m| Some(m.peak_rss_mb)),
                        self.check(w, e, Mode::Update, u),
                    );
                }
            }
        }

        let _ = writeln!(
            s,
            "\n## Peak memory of a full materialization in MB (Table 5)\n\nPeak resident set size of the whole process (loading included), from the OS.\n"
        );
        if self.measured(&[Mode::Full]) {
            self.full_tables(&mut s);
        } else {
            let _ = writeln!(s, "{NOT_MEASURED}");
        }

        let _ = writeln!(
            s,
            "\n## Single-fact updates and a rule change\n\nOne fact of the last 1% inserted and committed, then deleted and committed, {} on the first 99% (median per run, in ms); one rule added to the full materialization and removed again (s), resident memory after each.\n",
            match self.singles {
                1 => "once".to_string(),
                n => format!("{n} times"),
            }
        );
        if self.measured(&[Mode::Single, Mode::Rules]) {
            let _ = writeln!(
                s,
                "| workload | engine | one fact + (ms) | one fact − (ms) | round trip | add rule (s) | facts with rule | RSS with rule (MB) | remove rule (s) | RSS after (MB) | round trip |"
            );
            let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|");
        } else {
            let _ = writeln!(s, "{NOT_MEASURED}");
        }
        let med = |v: &[f64]| summarize(v).map(|s| s.median);
        for w in &self.workloads {
            for e in &self.engines {
                if self.select(w, e, Mode::Single, 0).is_empty()
                    && self.select(w, e, Mode::Rules, 0).is_empty()
                {
                    continue;
                }
                let f = |mode, g: &dyn Fn(&Report) -> Option<f64>| {
                    self.figure(w, e, mode, 0, |m| r(m).and_then(|r| g(&r)))
                };
                let _ = writeln!(
                    s,
                    "| {w} | {e} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    f(Mode::Single, &|r| med(&r.single_insert_ms)),
                    f(Mode::Single, &|r| med(&r.single_delete_ms)),
                    self.check(w, e, Mode::Single, 0),
                    f(Mode::Rules, &|r| r.add_rule_s),
                    f(Mode::Rules, &|r| r.facts_with_rule.map(|n| n as f64)),
                    f(Mode::Rules, &|r| r.rss_with_rule_mb),
                    f(Mode::Rules, &|r| r.remove_rule_s),
                    f(Mode::Rules, &|r| r.rss_after_rule_mb),
                    self.check(w, e, Mode::Rules, 0),
                );
            }
        }
        let failures = self.failures();
        if !failures.is_empty() {
            let _ = writeln!(s, "\n## Failures\n");
            for m in failures {
                let _ = writeln!(
                    s,
                    "* {} {} {} {}% run {}: {} {}",
                    m.workload,
                    m.engine,
                    m.mode.name(),
                    m.update_percent,
                    m.repetition + 1,
                    m.status.label(),
                    m.error.as_deref().unwrap_or("")
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurement(engine: &str, status: Status, e_s: f64, rep: usize) -> Measurement {
        Measurement {
            workload: "tc-tiny".into(),
            engine: engine.into(),
            mode: Mode::Update,
            update_percent: 10,
            repetition: rep,
            status,
            error: None,
            wall_s: 1.0,
            peak_rss_mb: 20.0,
            report: (status == Status::Ok).then(|| Report {
                e_s,
                eplus_s: Some(e_s / 10.0),
                eminus_s: Some(e_s / 20.0),
                facts_e: 1234,
                round_trip_ok: Some(true),
                ..Report::default()
            }),
        }
    }

    fn results(measurements: Vec<Measurement>) -> Results {
        Results {
            date: "2026-12-02 17:00 UTC".into(),
            command: "dynalog bench --quick".into(),
            machine: "2 cores".into(),
            workers: 1,
            repeat: 3,
            singles: 100,
            timeout_s: 600.0,
            memory_limit_mb: 16384,
            workloads: vec!["tc-tiny".into()],
            engines: vec!["seminaive".into(), "diff".into(), "souffle".into()],
            updates: vec![10],
            souffle: None,
            planned: measurements.len(),
            measurements,
        }
    }

    #[test]
    fn the_header_says_whether_souffle_was_asked_for() {
        let mut r = results(vec![measurement("diff", Status::Ok, 0.3, 0)]);
        assert!(r.markdown().contains("Soufflé: not installed."));
        r.engines.retain(|e| e != "souffle");
        assert!(r.markdown().contains("Soufflé: not requested."));
        r.souffle = Some("/usr/bin/souffle".into());
        assert!(r.markdown().contains("Soufflé: /usr/bin/souffle."));
    }

    #[test]
    fn results_written_during_a_run_say_they_are_partial() {
        let mut r = results(vec![measurement("seminaive", Status::Ok, 0.3, 0)]);
        assert!(!r.markdown().contains("Partial results"));
        r.planned = 4;
        assert!(
            r.markdown()
                .contains("**Partial results**: 1 of 4 measurements"),
            "{}",
            r.markdown()
        );
        // Results written before the field existed read as complete.
        let mut json: serde_json::Value = serde_json::to_value(&r).unwrap();
        json.as_object_mut().unwrap().remove("planned");
        let old: Results = serde_json::from_value(json).unwrap();
        assert_eq!(old.planned, 0);
        assert!(!old.markdown().contains("Partial results"));
    }

    #[test]
    fn sections_without_measurements_say_so_instead_of_an_empty_table() {
        // Only E/E+/E−: no table of full materializations, singles or rules.
        let mut r = results(vec![measurement("seminaive", Status::Ok, 0.3, 0)]);
        let md = r.markdown();
        assert!(md.contains("| tc-tiny | 10% | seminaive |"), "{md}");
        assert_eq!(md.matches(NOT_MEASURED).count(), 2, "{md}");
        assert!(!md.contains("| workload | facts |"), "{md}");
        assert!(!md.contains("| workload | engine | one fact"), "{md}");
        // Only full materializations, of one of two workloads: no E table, one row.
        let mut full = measurement("seminaive", Status::Ok, 0.3, 0);
        full.mode = Mode::Full;
        full.update_percent = 0;
        r.measurements = vec![full];
        r.workloads.push("tc-rand1k".into());
        let md = r.markdown();
        assert!(!md.contains("| workload | update x |"), "{md}");
        assert_eq!(md.matches(NOT_MEASURED).count(), 2, "{md}");
        assert!(md.contains("| tc-tiny | 1234 | 20.0 |"), "{md}");
        assert!(!md.contains("| tc-rand1k |"), "{md}");
        assert!(md.contains("deleted and committed, 100 times on"), "{md}");
        r.singles = 1;
        assert!(r.markdown().contains("deleted and committed, once on"));
    }

    #[test]
    fn medians_and_ranges() {
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(summarize(&[4.0, 1.0]).unwrap().median, 2.5);
        assert!(summarize(&[]).is_none());
        assert_eq!(cell(summarize(&[0.5, 0.25, 1.0])), "0.500 (0.250–1.00)");
        assert_eq!(cell(summarize(&[0.0123])), "0.0123");
        assert_eq!(num(1234.0), "1234");
        assert_eq!(num(12.34), "12.3");
    }

    #[test]
    fn tables_show_medians_statuses_and_checks() {
        let md = results(vec![
            measurement("seminaive", Status::Ok, 0.3, 0),
            measurement("seminaive", Status::Ok, 0.1, 1),
            measurement("seminaive", Status::Ok, 0.2, 2),
            measurement("diff", Status::Oot, 0.0, 0),
            Measurement {
                engine: "souffle".into(),
                status: Status::NotInstalled,
                ..measurement("souffle", Status::NotInstalled, 0.0, 0)
            },
            Measurement {
                mode: Mode::Full,
                update_percent: 0,
                ..measurement("diff", Status::Ok, 0.4, 0)
            },
        ])
        .markdown();
        assert!(
            md.contains("| tc-tiny | 10% | seminaive | 0.200 (0.100–0.300) | 0.0200 (0.0100–0.0300) | 0.0100 (0.00500–0.0150) | 1234 | — | 20.0 | ok (3/3) |"),
            "{md}"
        );
        assert!(
            md.contains("| tc-tiny | 10% | diff | OOT | OOT | OOT |"),
            "{md}"
        );
        assert!(
            md.contains("| tc-tiny | 10% | souffle | not installed |"),
            "{md}"
        );
        assert!(md.contains("| workload | facts | seminaive (MB) | diff (MB) | souffle (MB) |"));
        assert!(md.contains("| tc-tiny | 1234 | — | 20.0 | — |"), "{md}");
        assert!(!md.contains("## Failures"));
    }

    #[test]
    fn a_mismatch_is_listed_and_counted() {
        let mut m = measurement("diff", Status::Ok, 0.3, 0);
        m.status = Status::Mismatch;
        m.error = Some("1 fact(s) missing".into());
        let res = results(vec![m]);
        assert_eq!(res.failures().len(), 1);
        let md = res.markdown();
        assert!(md.contains("**MISMATCH**"), "{md}");
        assert!(md.contains("## Failures"), "{md}");
        assert!(md.contains("1 fact(s) missing"), "{md}");
    }

    #[test]
    fn results_round_trip_through_json() {
        let res = results(vec![measurement("diff", Status::Oom, 0.0, 0)]);
        let json = serde_json::to_string(&res).unwrap();
        assert!(json.contains("\"status\":\"OOM\""), "{json}");
        assert!(json.contains("\"mode\":\"update\""), "{json}");
        let back: Results = serde_json::from_str(&json).unwrap();
        assert_eq!(back.measurements.len(), 1);
        assert_eq!(back.measurements[0].status, Status::Oom);
    }
}
