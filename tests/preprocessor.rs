//! The C preprocessor through the CLI (`#include`, `#define`, `#if`, `-I`, `-M`):
//! programs that use it run, and errors in included files or in macro expansions are
//! reported at the original file, line and column.

mod common;
use common::*;
use std::path::Path;

/// Write `files` (paths relative to a temp dir) and return the dir.
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().expect("utf-8 path").to_string()
}

const MAIN: &str = "\
#include \"lib/graph.dl\"
#include <limits.dl>
#define REACH(a, b) path(a, b)
.decl small(x: number, y: number)
.output small
REACH(x, y) :- EDGE(x, y).
REACH(x, z) :- REACH(x, y), EDGE(y, z).
#if defined(ONLY_SMALL) && BOUND > 2
small(x, y) :- REACH(x, y), y < BOUND.
#else
small(x, y) :- REACH(x, y), y < 2.
#endif
";

const GRAPH: &str = "\
// The graph: edges from `edge.facts`.
#define EDGE(x, y) edge(x, y)
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
";

#[test]
fn includes_and_macros_run() {
    let dir = folder(&[
        ("main.dl", MAIN),
        ("lib/graph.dl", GRAPH),
        ("inc/limits.dl", "#ifndef BOUND\n#define BOUND 3\n#endif\n"),
        ("edge.facts", "1\t2\n2\t3\n3\t4\n"),
    ]);
    let d = dir.path();
    let out = d.join("out");
    let (ok, _, stderr) = run_program(
        &d.join("main.dl"),
        d,
        out.to_str().expect("utf-8"),
        &["-I", &path(d, "inc"), "-M", "ONLY_SMALL"],
    );
    assert!(ok, "{stderr}");
    assert_eq!(sorted_lines(&out.join("path.csv")).len(), 6);
    assert_eq!(sorted_lines(&out.join("small.csv")), ["1\t2"]);
    // Without -M, the #else branch; -M values as Soufflé's (several in one, spaces).
    let (ok, _, stderr) = run_program(
        &d.join("main.dl"),
        d,
        out.to_str().expect("utf-8"),
        &[
            "--include-dir",
            &path(d, "inc"),
            "--macro",
            "ONLY_SMALL BOUND=4",
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(
        sorted_lines(&out.join("small.csv")),
        ["1\t2", "1\t3", "2\t3"]
    );
    // Without -I, <limits.dl> is not found: the error is at the #include.
    let (ok, _, stderr) = run_program(&d.join("main.dl"), d, "-", &[]);
    assert!(!ok);
    assert!(
        stderr.contains("main.dl:2:1: error: cannot find the included file `limits.dl`"),
        "{stderr}"
    );
}

#[test]
fn errors_point_into_included_files_and_macro_uses() {
    // A type error on line 3 of the included file.
    let dir = folder(&[
        ("main.dl", "#include \"lib/bad.dl\"\n.decl q(x: number)\n"),
        (
            "lib/bad.dl",
            ".decl r(x: number)\n\nr(x) :- q(x), x = \"s\".\n",
        ),
    ]);
    let d = dir.path();
    let (ok, _, stderr) = run_program(&d.join("main.dl"), d, "-", &[]);
    assert!(!ok);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let shown = stderr.replace(&d.display().to_string(), "DIR");
    assert!(shown.starts_with("DIR/lib/bad.dl:3:"), "{shown}");
    assert!(shown.contains("r(x) :- q(x), x = \"s\"."), "{shown}");
    // A syntax error in a macro's expansion is reported at the macro's use.
    let dir = folder(&[(
        "main.dl",
        ".decl e(x: number)\n#define BAD(x) e(x,,)\n\ne(1).\n  BAD(2).\n",
    )]);
    let d = dir.path();
    let (ok, _, stderr) = run_program(&d.join("main.dl"), d, "-", &[]);
    assert!(!ok);
    assert!(stderr.contains("main.dl:5:3: error:"), "{stderr}");
    assert!(stderr.contains("BAD(2)."), "{stderr}");
    // A relation declared in an included file and again: both places are named.
    let dir = folder(&[
        ("main.dl", "#include \"decls.dl\"\n.decl q(x: number)\n"),
        ("decls.dl", "\n.decl q(x: number)\n"),
    ]);
    let d = dir.path();
    let (ok, _, stderr) = run_program(&d.join("main.dl"), d, "-", &[]);
    assert!(!ok);
    let shown = stderr.replace(&d.display().to_string(), "DIR");
    assert!(
        shown.starts_with(
            "DIR/main.dl:2:7: error: relation `q` is declared twice (first on DIR/decls.dl:2)"
        ),
        "{shown}"
    );
    // A preprocessor error: wrong number of arguments, at the use.
    let dir = folder(&[("main.dl", "#define E(x, y) e(x, y)\n\nE(1).\n")]);
    let d = dir.path();
    let (ok, _, stderr) = run_program(&d.join("main.dl"), d, "-", &[]);
    assert!(!ok);
    assert!(
        stderr.contains("main.dl:3:1: error: macro `E` takes 2 arguments, given 1"),
        "{stderr}"
    );
}

#[test]
fn sessions_preprocess_the_program_but_not_the_rules_they_are_sent() {
    let dir = folder(&[
        ("main.dl", "#include \"decls.dl\"\nN(1).\n"),
        (
            "decls.dl",
            "#define N(x) n(x)\n.decl n(x: number)\n.output n\n",
        ),
        ("secret.dl", "n(42).\n"),
    ]);
    let d = dir.path();
    let (ok, stdout, stderr) = run_session(
        &[&path(d, "main.dl"), "-F", &path(d, ".")],
        "commit\n+ #include \"secret.dl\"\ncommit\n",
    );
    assert!(!ok, "the refused line is an error: {stdout}");
    // The program's inline fact `N(1).` is `n(1)`, committed first.
    assert!(stdout.starts_with("commit 0: +1 -0"), "{stdout}");
    assert!(!stdout.contains("42"), "{stdout}");
    assert!(
        stdout.contains(
            "error: line 2: column 3: preprocessor directives (#include, #define, ...) \
             are only run on program files"
        ),
        "stdout: {stdout}\nstderr: {stderr}"
    );
}

#[test]
fn a_server_preprocesses_its_program_but_refuses_directives_from_clients() {
    let dir = folder(&[
        ("main.dl", "#include \"decls.dl\"\nN(1).\n"),
        (
            "decls.dl",
            "#define N(x) n(x)\n.decl n(x: number)\n.output n\n",
        ),
        ("secret.dl", "n(42).\n"),
    ]);
    let d = dir.path();
    let server = start_server(&[&path(d, "main.dl"), "-F", &path(d, ".")]);
    let (status, body) = http(&server.addr, "GET", "/relations/n", "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains('1') && !body.contains("42"), "{body}");
    // (A line that starts with `#` is a comment of the transaction protocol.)
    let (status, body) = http(
        &server.addr,
        "POST",
        "/transactions",
        "+ #include \"secret.dl\"\n",
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("only run on program files"), "{body}");
    let (_, body) = http(&server.addr, "GET", "/relations/n", "");
    assert!(!body.contains("42"), "{body}");
}
