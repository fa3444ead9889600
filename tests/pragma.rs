//! `.pragma` lines: accepted with a warning naming the line, never a reason to fail;
//! `magic-transform` is evaluated in full with the same results. Likewise Soufflé's old
//! `.type Name` (a symbol type).

mod common;
use common::*;

#[test]
fn pragmas_are_accepted_with_a_located_warning() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("p.dl");
    std::fs::write(
        &program,
        ".pragma \"magic-transform\" \"*\"\n.pragma \"legacy\"\n\
         .decl e(x: number, y: number)\n.decl p(x: number, y: number)\n.output p\n\
         e(1, 2). e(2, 3).\np(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n",
    )
    .expect("write");
    for engine in ["seminaive", "diff"] {
        let o = dynalog(&[
            "run",
            program.to_str().expect("utf-8"),
            "-D",
            "-",
            "--engine",
            engine,
        ]);
        assert!(o.status.success(), "{engine}: {o:?}");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(stdout.contains("1\t2\n1\t3\n2\t3\n"), "{engine}: {stdout}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains("p.dl:1:1: warning: `.pragma \"magic-transform\"` is ignored: dynalog has no demand-driven evaluation"),
            "{stderr}"
        );
        assert!(
            stderr.contains("p.dl:2:1: warning: `.pragma \"legacy\"` is ignored"),
            "{stderr}"
        );
    }
}

#[test]
fn a_session_warns_too_and_a_malformed_pragma_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("p.dl");
    std::fs::write(
        &program,
        ".pragma \"magic-transform\" \"*\"\n.decl e(x: number)\n",
    )
    .expect("write");
    let (ok, _, stderr) = run_session(&[program.to_str().expect("utf-8")], "+ e(1).\ncommit\n");
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("p.dl:1:1: warning: `.pragma \"magic-transform\"`"),
        "{stderr}"
    );

    std::fs::write(&program, ".pragma magic-transform\n.decl e(x: number)\n").expect("write");
    let o = dynalog(&["run", program.to_str().expect("utf-8")]);
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("p.dl:1:9: error: expected a quoted option name after `.pragma`"),
        "{stderr}"
    );
}

#[test]
fn a_type_declared_alone_is_a_symbol_type_with_a_located_warning() {
    let dir = tempfile::tempdir().expect("temp dir");
    let program = dir.path().join("t.dl");
    std::fs::write(
        &program,
        ".type City
.decl at(who: symbol, c: City)
.output at
at(\"ann\", \"paris\").
",
    )
    .expect("write");
    let o = dynalog(&["run", program.to_str().expect("utf-8"), "-D", "-"]);
    assert!(o.status.success(), "{o:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("ann\tparis\n"), "{stdout}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(
            "t.dl:1:1: warning: `.type City` alone is Soufflé's old form of `.type City <: symbol`"
        ),
        "{stderr}"
    );
}
