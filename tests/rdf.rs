//! `dynalog rdf materialize` on the hand-written graphs under `tests/rdf/`: each
//! `CASE.nt`/`CASE.ttl` is materialized with the rules its folder names (`rhodf`,
//! `owl2rl`, or `custom/CASE.dl`) and the inferred triples are compared, sorted, with
//! `CASE.expected.nt`. Then the LUBM1 sizes of the study, when `../shared/paper-data`
//! is beside the workspace (otherwise the test prints "skipped").

mod common;
use common::*;
use std::path::{Path, PathBuf};

fn cases(folder: &str) -> Vec<PathBuf> {
    let dir = root().join("tests/rdf").join(folder);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/rdf folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.to_string_lossy();
            (name.ends_with(".nt") || name.ends_with(".ttl")) && !name.ends_with(".expected.nt")
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no cases in {}", dir.display());
    out
}

fn expected_of(data: &Path) -> PathBuf {
    let stem = data
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    data.with_file_name(format!("{stem}.expected.nt"))
}

fn materialize(args: &[&str]) -> (String, String) {
    let o = dynalog(args);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "dynalog {args:?} failed: {stderr}");
    (stdout, stderr)
}

fn sorted(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn check_folder(folder: &str, rules_of: impl Fn(&Path) -> String) {
    for data in cases(folder) {
        let rules = rules_of(&data);
        let expected = sorted_lines(&expected_of(&data));
        for engine in ["seminaive", "diff"] {
            let (out, _) = materialize(&[
                "rdf",
                "materialize",
                data.to_str().expect("utf-8"),
                "--rules",
                &rules,
                "--engine",
                engine,
            ]);
            let lines: Vec<&str> = out.lines().collect();
            let mut is_sorted = lines.clone();
            is_sorted.sort();
            assert_eq!(lines, is_sorted, "{}: output is not sorted", data.display());
            assert_eq!(
                sorted(&out),
                expected,
                "{} with {rules} ({engine})",
                data.display()
            );
        }
    }
}

#[test]
fn rhodf_rules_one_graph_each() {
    check_folder("rhodf", |_| "rhodf".into());
}

#[test]
fn owl2rl_rules_on_the_univ_bench_vocabulary() {
    check_folder("owl2rl", |_| "owl2rl".into());
}

#[test]
fn custom_rule_files_read_triples_or_their_own_mapping() {
    check_folder("custom", |data| {
        let stem = data
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        data.with_file_name(format!("{stem}.dl"))
            .to_string_lossy()
            .into_owned()
    });
}

#[test]
fn all_prints_input_and_inferred_triples_and_output_files_round_trip() {
    let data = root().join("tests/rdf/rhodf/type_inheritance.nt");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.nt");
    let (stdout, stderr) = materialize(&[
        "rdf",
        "materialize",
        data.to_str().expect("utf-8"),
        "--rules",
        "rhodf",
        "--all",
        "--stats",
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert!(stdout.is_empty(), "{stdout}");
    let mut expected = sorted_lines(&data);
    expected.extend(sorted_lines(&expected_of(&data)));
    expected.sort();
    // The input's escapes (`\"`, `\u00e9`, `\\`) come back in canonical N-Triples form.
    let got = sorted_lines(&out);
    assert_eq!(got.len(), expected.len(), "{got:?}");
    assert!(
        got.contains(
            &"<http://ex.org/tom> <http://ex.org/name> \"Tom \\\"the\\\" cat é\\\\\" .".to_string()
        ),
        "{got:?}"
    );
    // Materializing the output again: nothing new, and the same graph.
    let (again, _) = materialize(&[
        "rdf",
        "materialize",
        out.to_str().expect("utf-8"),
        "--rules",
        "rhodf",
        "--all",
    ]);
    assert_eq!(sorted(&again), got);
    assert!(stderr.contains("triples written (all)"), "{stderr}");
    assert!(stderr.contains("rdf:type"), "{stderr}");
}

#[test]
fn bad_data_is_an_error_with_its_line_unless_lenient() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("bad.nt");
    std::fs::write(
        &data,
        "<http://ex.org/C> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://ex.org/D> .\n\
         <http://ex.org/x> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/C>\n\
         <http://ex.org/y> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/C> .\n",
    )
    .expect("write");
    let path = data.to_str().expect("utf-8");
    let o = dynalog(&["rdf", "materialize", path, "--rules", "rhodf"]);
    assert!(!o.status.success());
    assert!(o.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.starts_with(&format!("{path}:2:")) && stderr.contains(": error: "),
        "{stderr}"
    );
    let (out, stderr) = materialize(&["rdf", "materialize", path, "--rules", "rhodf", "--lenient"]);
    assert_eq!(
        out,
        "<http://ex.org/y> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/D> .\n"
    );
    assert!(stderr.contains("skipped 1 malformed"), "{stderr}");
    // A missing file, an unknown rule file: errors, no panic.
    let o = dynalog(&["rdf", "materialize", "/nonexistent.nt", "--rules", "rhodf"]);
    assert!(!o.status.success());
    let o = dynalog(&["rdf", "materialize", path, "--rules", "/nonexistent.dl"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("built-in programs"));
}

#[test]
fn literal_subjects_are_reported_not_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("lit.nt");
    std::fs::write(
        &data,
        "<http://ex.org/name> <http://www.w3.org/2000/01/rdf-schema#range> <http://ex.org/Name> .\n\
         <http://ex.org/x> <http://ex.org/name> \"Ann\" .\n",
    )
    .expect("write");
    let (out, stderr) = materialize(&[
        "rdf",
        "materialize",
        data.to_str().expect("utf-8"),
        "--rules",
        "rhodf",
    ]);
    assert_eq!(out, "");
    assert!(stderr.contains("1 fact(s) are not RDF triples"), "{stderr}");
}

#[test]
fn dynalog_run_reads_rdf_inputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = root().join("tests/rdf/custom/vocabulary.nt");
    std::fs::copy(&data, dir.path().join("zoo.nt")).expect("copy");
    let program = dir.path().join("p.dl");
    std::fs::write(
        &program,
        ".decl T(s: symbol, p: symbol, o: symbol)\n.input T(IO=\"rdf\", filename=\"zoo.nt\")\n\
         .decl Cat(x: symbol)\n.input Cat(IO=\"rdf\", filename=\"zoo.nt\", mapping=\"vocabulary\", namespace=\"http://zoo.org/voc#\")\n\
         .decl n(x: symbol)\n.output n(IO=stdout)\nn(x) :- Cat(x).\n.printsize T\n",
    )
    .expect("write");
    let (ok, stdout, stderr) = run_program(&program, dir.path(), "-", &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("T\t4\n"), "{stdout}");
    assert!(
        stdout.contains("===============\nhttp://ex.org/tom\n"),
        "{stdout}"
    );
}

/// The study's LUBM1 sizes (`../shared/paper-data/README.md`): RhoDF 126,732 triples;
/// OWL 2 RL 138,015 facts with the study's conversion, which also keeps 84 owl-namespace
/// TBox typings that the univ-bench vocabulary mapping leaves out (see the comment at
/// the top of `programs/owl2rl.dl`), so 137,931 triples here.
#[test]
fn lubm1_sizes_of_the_study() {
    let data = root().join("../shared/paper-data/lubm1_with_tbox.nt.gz");
    if !data.exists() {
        eprintln!("skipped: {} is not there", data.display());
        return;
    }
    let path = data.to_str().expect("utf-8");
    let study_rdfs = root().join("../shared/paper-data/rdfs.dl");
    let study_rdfs = study_rdfs.to_str().expect("utf-8");
    // The study's own rdfs.dl (implicit T, bare `rdf:type` constants) reads the
    // triples into T too and must agree with the built-in program.
    let cases = [
        ("rhodf", "seminaive", 126_732),
        ("rhodf", "diff", 126_732),
        (study_rdfs, "seminaive", 126_732),
        ("owl2rl", "seminaive", 138_015 - 84),
        ("owl2rl", "diff", 138_015 - 84),
    ];
    for (rules, engine, expected) in cases {
        let (out, stderr) = materialize(&[
            "rdf",
            "materialize",
            path,
            "--rules",
            rules,
            "--all",
            "--stats",
            "--engine",
            engine,
            "-w",
            "2",
        ]);
        assert_eq!(
            out.lines().count(),
            expected,
            "{rules} ({engine}): {stderr}"
        );
        let mut lines: Vec<&str> = out.lines().collect();
        lines.dedup();
        assert_eq!(lines.len(), expected, "{rules}: duplicate lines");
        eprintln!("{rules} ({engine}) on LUBM1: {expected} triples, as expected");
    }
}
