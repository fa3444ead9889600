//! Scripted sessions: every `tests/sessions/NAME.session` (commands, with the program
//! and fact folder in its `# program:` / `# facts:` header) is run by `dynalog session`
//! with every engine, and its standard output must equal `NAME.expected` once commit
//! times are replaced by `T`. A session with a refused line exits non-zero.

mod common;

use common::{dynalog, header, mask_times, root, run_session};

/// The engine configurations every script runs with.
fn configurations() -> Vec<Vec<String>> {
    let mut configs: Vec<Vec<String>> = dynalog_engines::ENGINE_NAMES
        .iter()
        .map(|e| vec!["--engine".to_string(), e.to_string()])
        .collect();
    configs.push(vec![
        "--engine".into(),
        "diff".into(),
        "-w".into(),
        "2".into(),
    ]);
    configs
}

fn check_script(name: &str, expect_success: bool) {
    let dir = root().join("tests/sessions");
    let script = std::fs::read_to_string(dir.join(format!("{name}.session"))).expect("script");
    let expected =
        std::fs::read_to_string(dir.join(format!("{name}.expected"))).expect("expected output");
    let program = header(&script, "program");
    let facts = header(&script, "facts");
    // `# allow-load: DIR`: where `load`/`unload` may read (by default the fact folder).
    let allow_load = script
        .lines()
        .find_map(|l| l.strip_prefix("# allow-load: "));
    for config in configurations() {
        let mut args = vec![program, "-F", facts];
        if let Some(dir) = allow_load {
            args.extend(["--allow-load", dir]);
        }
        args.extend(config.iter().map(String::as_str));
        let (ok, stdout, stderr) = run_session(&args, &script);
        assert_eq!(
            mask_times(&stdout),
            expected,
            "session {name} with {config:?}; stderr:\n{stderr}"
        );
        assert_eq!(
            ok, expect_success,
            "exit status of {name} with {config:?}: {stderr}"
        );
    }
}

#[test]
fn session_facts_queries_abort_quit() {
    check_script("facts", true);
}

#[test]
fn session_rule_changes() {
    check_script("rules", true);
}

#[test]
fn session_errors_leave_the_transaction_and_refuse_bad_rules() {
    check_script("errors", false);
}

#[test]
fn session_load_and_unload_files() {
    check_script("load", true);
}

#[test]
fn aggregates_session() {
    check_script("aggregates", true);
}

#[test]
fn session_string_functors() {
    check_script("strings", true);
}

#[test]
fn session_choice_domain() {
    check_script("choice", true);
}

#[test]
fn session_recursive_choice() {
    check_script("choice_tree", true);
}

#[test]
fn session_subsumption() {
    check_script("subsume", false);
}

/// The first or last subsumption rule of a relation with input files would move the
/// facts already read from them: refused, and nothing changes.
#[test]
fn a_subsumption_rule_that_would_move_input_facts_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("p.dl"),
        ".decl best(x: number, d: number)\n.input best\n.output best\n\
         best(x, d1) <= best(x, d2) :- d2 < d1.\n",
    )
    .expect("writes");
    std::fs::write(dir.path().join("best.facts"), "1\t5\n1\t3\n").expect("writes");
    let p = dir.path().join("p.dl");
    let facts = dir.path().to_str().expect("utf-8").to_string();
    let (ok, stdout, stderr) = run_session(
        &[p.to_str().expect("utf-8"), "-F", &facts],
        "dump best\n- best(x, d1) <= best(x, d2) :- d2 < d1.\ncommit\ndump best\n",
    );
    assert!(!ok);
    assert!(
        format!("{stdout}{stderr}").contains("moves the input facts of `best`"),
        "{stdout}{stderr}"
    );
    let dumps: Vec<&str> = stdout.lines().filter(|l| l.starts_with("best(")).collect();
    assert_eq!(dumps, ["best(1, 3).", "best(1, 3)."], "{stdout}");
}

#[test]
fn session_records_and_adts() {
    check_script("records", false);
}

#[test]
fn quiet_prints_only_summaries_and_changes_go_to_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("changes.log");
    let script = "+ edge(8, 7).\ncommit\n- edge(8, 7).\ncommit\n";
    let (ok, stdout, _) = run_session(
        &[
            "examples/tc.dl",
            "-F",
            "examples/tc",
            "--changes",
            log.to_str().expect("utf-8"),
        ],
        script,
    );
    assert!(ok);
    assert_eq!(
        mask_times(&stdout),
        "commit 0: +20 -0 in T ms\ncommit 1: +5 -0 in T ms\ncommit 2: +0 -5 in T ms\n"
    );
    let changes = std::fs::read_to_string(&log).expect("change log");
    let lines: Vec<&str> = changes.lines().collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(lines[0], "+ path(8, 1).");
    assert_eq!(lines[9], "- path(8, 7).");

    let (ok, stdout, _) = run_session(&["examples/tc.dl", "-F", "examples/tc", "--quiet"], script);
    assert!(ok);
    assert_eq!(
        mask_times(&stdout),
        "commit 0: +20 -0 in T ms\ncommit 1: +5 -0 in T ms\ncommit 2: +0 -5 in T ms\n"
    );
}

#[test]
fn a_program_that_does_not_check_stops_the_session_before_it_starts() {
    let o = dynalog(&["session", "tests/sessions/data/missing.dl"]);
    assert!(!o.status.success());
    let (ok, stdout, stderr) = run_session(&["examples/tc.dl", "-F", "tests/sessions/data"], "");
    assert!(!ok);
    assert!(stdout.is_empty());
    assert!(stderr.contains("edge.facts"), "{stderr}");
}

#[test]
fn an_uncommitted_transaction_at_the_end_is_reported() {
    let (ok, _, stderr) = run_session(&["examples/tc.dl", "-F", "examples/tc"], "+ edge(9, 9).\n");
    assert!(ok);
    assert!(stderr.contains("uncommitted"), "{stderr}");
}

#[test]
fn session_rdf_files_load_and_unload() {
    check_script("rdf", false);
}

#[test]
fn a_line_that_is_not_utf8_is_refused_alone() {
    let mut input = b"+ edge(8, 7).\n+ edge(\"\xff\xfe\", 1).\ncommit\nsize edge\n".to_vec();
    input.extend_from_slice(b"+ edge(9, \xc3(, 1).\nsize edge\n");
    let (ok, stdout, stderr) =
        common::run_session_bytes(&["examples/tc.dl", "-F", "examples/tc"], &input);
    assert!(!ok, "a refused line makes the exit status non-zero");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let shown = mask_times(&stdout);
    let lines: Vec<&str> = shown.lines().collect();
    assert!(
        lines.contains(&"error: line 2: column 9: the line is not valid UTF-8"),
        "{shown}"
    );
    assert!(
        lines.contains(&"error: line 5: column 11: the line is not valid UTF-8"),
        "{shown}"
    );
    // The lines around the bad ones were applied.
    assert!(
        lines.iter().any(|l| l.starts_with("commit 1: +")),
        "{shown}"
    );
    assert_eq!(lines.iter().filter(|l| **l == "8").count(), 2, "{shown}");
}

#[test]
fn max_changes_refuses_a_transaction_and_the_session_goes_on() {
    // examples/tc: 20 paths after the load, which is not limited; `edge(4, 1)` adds
    // itself and 4 paths (5 changes, over 3), a new pair of nodes 1 edge and 1 path.
    let script =
        "+ edge(4, 1).\n+ edge(7, 1).\ncommit\nsize path\n+ edge(100, 101).\ncommit\nsize path\n";
    for engine in ["diff", "seminaive", "relational"] {
        let (ok, stdout, _) = run_session(
            &[
                "examples/tc.dl",
                "-F",
                "examples/tc",
                "--engine",
                engine,
                "--max-changes",
                "3",
                "--max-commit-time",
                "60",
            ],
            script,
        );
        assert!(!ok, "a refused line makes the exit status non-zero");
        assert!(
            stdout.contains(
                "error: line 3: commit refused: the transaction changes more than 3 facts"
            ),
            "{engine}: {stdout}"
        );
        assert!(stdout.contains("--max-changes 3"), "{stdout}");
        let sizes: Vec<&str> = stdout.lines().filter(|l| !l.contains(' ')).collect();
        assert_eq!(sizes, ["20", "21"], "{engine}: {stdout}");
    }
    let (ok, _, stderr) = run_session(
        &[
            "examples/tc.dl",
            "-F",
            "examples/tc",
            "--max-commit-time=-1",
        ],
        "",
    );
    assert!(!ok);
    assert!(stderr.contains("--max-commit-time"), "{stderr}");
}

/// Every script in tests/sessions is run by a test of this file (one was once left out).
#[test]
fn every_session_script_is_checked() {
    let source = std::fs::read_to_string(root().join("tests/session.rs")).expect("source");
    let dir = root().join("tests/sessions");
    for entry in std::fs::read_dir(&dir).expect("sessions") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "session") {
            let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
            assert!(
                source.contains(&format!("check_script(\"{name}\"")),
                "tests/sessions/{name}.session is not checked by tests/session.rs"
            );
        }
    }
}
