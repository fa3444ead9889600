//! `dynalog bench`: the `--quick` smoke run end to end (tables, JSON, plots, every
//! round-trip check passed), the time limit reported as OOT, and bad arguments.

mod common;
use common::*;
use serde_json::Value;

fn statuses(json: &Value) -> Vec<String> {
    json["measurements"]
        .as_array()
        .expect("measurements")
        .iter()
        .map(|m| m["status"].as_str().expect("status").to_string())
        .collect()
}

/// The `results.json` a run wrote into `out`.
fn results_json(out: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap()
}

/// Run `dynalog bench ARGS` with fresh output and data folders; returns the process
/// output and the output folder.
fn bench(args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend([
        "--out",
        out.path().to_str().unwrap(),
        "--data-dir",
        data.path().to_str().unwrap(),
    ]);
    (dynalog(&all), out)
}

#[test]
fn quick_run_produces_tables_json_and_plots_and_every_check_passes() {
    let (o, out) = bench(&["--quick"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "bench --quick failed: {stderr}\n{stdout}"
    );
    for heading in [
        "## E, E+ and E− in seconds (Tables 3 and 4)",
        "## Peak memory of a full materialization in MB (Table 5)",
        "## Single-fact updates and a rule change",
    ] {
        assert!(stdout.contains(heading), "missing {heading}:\n{stdout}");
    }
    // Both quick workloads, both engines, both update sizes, checked.
    for row in [
        "| tc-rand1k | 10% | seminaive |",
        "| tc-rand1k | 1% | diff |",
        "| rhodf-lubm1 | 10% | diff |",
        "| rhodf-lubm1 | 1% | seminaive |",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row}:\n{stdout}"));
        assert!(line.ends_with("| ok (1/1) |"), "{line}");
    }
    assert!(!stdout.contains("MISMATCH"));
    let md = std::fs::read_to_string(out.path().join("results.md")).unwrap();
    assert!(md.contains("![memory.svg](memory.svg)"), "{md}");
    let json = results_json(out.path());
    let st = statuses(&json);
    // 2 workloads x 2 engines x (2 update sizes + full + single + rules).
    assert_eq!(st.len(), 20);
    assert!(st.iter().all(|s| s == "ok"), "{st:?}");
    for m in json["measurements"].as_array().unwrap() {
        assert!(m["peak_rss_mb"].as_f64().unwrap() > 1.0, "{m}");
        let r = &m["report"];
        if m["mode"] == "update" {
            assert_eq!(r["round_trip_ok"], true, "{m}");
            assert_eq!(r["facts_eminus"], r["facts_e"], "{m}");
            assert!(r["facts_eplus"].as_u64() > r["facts_e"].as_u64(), "{m}");
        }
    }
    // RhoDF on LUBM(1,0): the whole materialization has the study's size.
    let full = json["measurements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["workload"] == "rhodf-lubm1" && m["mode"] == "full")
        .unwrap();
    assert_eq!(full["report"]["facts_e"], 126_732);
    for svg in ["memory.svg", "time-tc-rand1k.svg", "time-rhodf-lubm1.svg"] {
        let text = std::fs::read_to_string(out.path().join(svg)).unwrap();
        assert!(text.starts_with("<svg"), "{svg}");
    }
}

/// The differential engine's round trip (the study's E, E+, E− protocol) on the project's
/// own RMAT-1k with tc and LUBM(1) with RhoDF, with 2 workers: after E− every relation
/// holds exactly the facts it held after E, and so after the single facts and the rule
/// pair. Also: results written while the run went on end complete.
#[test]
fn diff_round_trips_exactly_on_rmat1k_and_lubm1() {
    let (o, out) = bench(&[
        "--workloads",
        "tc-rmat1k,rhodf-lubm1",
        "--engines",
        "diff",
        "--updates",
        "50,1",
        "--repeat",
        "1",
        "--singles",
        "3",
        "-w",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // stderr is no terminal here: one line per measurement instead of a bar.
    assert!(
        stderr.contains("[1/10] tc-rmat1k diff update 50%: ok"),
        "{stderr}"
    );
    let json = results_json(out.path());
    let ms = json["measurements"].as_array().unwrap();
    // 2 workloads x (2 update sizes + full + single + rules).
    assert_eq!(ms.len(), 10);
    assert_eq!(json["planned"], 10);
    for m in ms {
        assert_eq!(m["status"], "ok", "{m}");
        let r = &m["report"];
        match m["mode"].as_str().unwrap() {
            "update" => {
                assert_eq!(r["round_trip_ok"], true, "{m}");
                assert_eq!(r["facts_eminus"], r["facts_e"], "{m}");
                assert!(r["facts_eplus"].as_u64() > r["facts_e"].as_u64(), "{m}");
            }
            "single" | "rules" => assert_eq!(r["round_trip_ok"], true, "{m}"),
            _ => {}
        }
    }
    let md = std::fs::read_to_string(out.path().join("results.md")).unwrap();
    assert!(!md.contains("Partial results"), "{md}");

    // The tables and plots again, from the JSON alone.
    let again = tempfile::tempdir().unwrap();
    let json_path = out.path().join("results.json");
    let o = dynalog(&[
        "bench",
        "--report",
        json_path.to_str().unwrap(),
        "--out",
        again.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(again.path().join("results.md")).unwrap(),
        md
    );
    assert!(again.path().join("time-tc-rmat1k.svg").exists());
    // Not a results file: a clear error.
    let md_path = out.path().join("results.md");
    let o = dynalog(&["bench", "--report", md_path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("is not the results.json of a bench run"),
        "{stderr}"
    );
}

/// `--modes full`: the memory table and its plot, no time plot and no update rows.
#[test]
fn modes_restrict_the_measurements_tables_and_plots() {
    let (o, out) = bench(&[
        "--workloads",
        "tc-tiny",
        "--engines",
        "seminaive,diff",
        "--modes",
        "full",
        "--repeat",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json = results_json(out.path());
    let ms = json["measurements"].as_array().unwrap();
    assert_eq!(ms.len(), 2);
    assert!(
        ms.iter()
            .all(|m| m["mode"] == "full" && m["status"] == "ok")
    );
    assert!(!stdout.contains("| tc-tiny | 10% |"), "{stdout}");
    assert!(stdout.contains("| tc-tiny | 3713 |"), "{stdout}");
    assert!(out.path().join("memory.svg").exists());
    assert!(!out.path().join("time-tc-tiny.svg").exists());
}

#[test]
fn a_process_past_the_time_limit_is_reported_as_oot_not_as_a_failure() {
    let (o, out) = bench(&[
        "--workloads",
        "tc-rand1k",
        "--engines",
        "seminaive",
        "--updates",
        "10",
        "--repeat",
        "1",
        "--timeout",
        "0.001",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("| tc-rand1k | 10% | seminaive | OOT | OOT | OOT |"),
        "{stdout}"
    );
    let json = results_json(out.path());
    let st = statuses(&json);
    assert_eq!(st.len(), 4);
    assert!(st.iter().all(|s| s == "OOT"), "{st:?}");
    // Nothing finished, so there is nothing to plot.
    assert!(!out.path().join("time-tc-rand1k.svg").exists());
    assert!(!out.path().join("memory.svg").exists());
    let md = std::fs::read_to_string(out.path().join("results.md")).unwrap();
    assert!(!md.contains("## Plots"), "{md}");
}

#[test]
fn the_help_names_every_workload() {
    let help = dynalog_ok(&["bench", "--help"]);
    for w in dynalog_bench::workload::WORKLOADS {
        assert!(
            help.contains(w.name),
            "`bench --help` does not name {}",
            w.name
        );
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, expected) in [
        (
            &["bench", "--engines", "nope"][..],
            "error: unknown engine `nope`",
        ),
        (
            &["bench", "--workloads", "tc-huge"],
            "error: unknown workload `tc-huge`",
        ),
        (
            &["bench", "--updates", "100"],
            "error: an update size must be 1..=99",
        ),
        (&["bench", "--worker", "garbage"], "error: --worker expects"),
        (
            &["bench", "--report", "/nonexistent/results.json"],
            "error: cannot read `/nonexistent/results.json`",
        ),
    ] {
        let o = dynalog(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
