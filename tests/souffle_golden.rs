//! The Soufflé golden suite (tests/souffle/README.md): every case folder, every engine,
//! each output compared with what Soufflé 2.5 wrote for the same program.

mod common;
use common::*;
use std::path::Path;

/// The names of the files in `dir`, sorted.
fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| {
            e.expect("directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_engine_writes_what_souffle_wrote() {
    let suite = root().join("tests/souffle");
    let cases: Vec<String> = file_names(&suite)
        .into_iter()
        .filter(|n| suite.join(n).join("program.dl").exists())
        .collect();
    assert!(cases.len() >= 6, "cases found: {cases:?}");
    let out_root = tempfile::tempdir().expect("temp dir");
    for case in &cases {
        let dir = suite.join(case);
        let facts = if dir.join("facts").is_dir() {
            dir.join("facts")
        } else {
            dir.clone()
        };
        let expected = dir.join("expected");
        let outputs = file_names(&expected);
        assert!(!outputs.is_empty(), "{case}: no expected outputs");
        let runs = run_with_every_engine(&dir.join("program.dl"), &facts, out_root.path(), case);
        for (engine, out) in runs {
            assert_eq!(
                file_names(&out),
                outputs,
                "{case} with {engine}: output files"
            );
            for name in &outputs {
                assert_eq!(
                    sorted_lines(&out.join(name)),
                    sorted_lines(&expected.join(name)),
                    "{case} with {engine}: {name}"
                );
            }
        }
    }
}
