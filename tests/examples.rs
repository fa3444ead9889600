//! Every bundled example, with every engine, against its expected output under
//! `tests/expected/<example>/` (compared line for line after sorting).

mod common;
use common::*;

const EXAMPLES: &[&str] = &["tc", "sg", "negation", "rhodf", "arith"];

fn check_example(name: &str, engine: &str, workers: &str) {
    let root = root();
    let program = root.join("examples").join(format!("{name}.dl"));
    let facts = root.join("examples").join(name);
    let facts = if facts.is_dir() {
        facts
    } else {
        root.join("examples")
    };
    let out = tempfile::tempdir().expect("temp dir");
    let out_path = out.path().to_str().expect("utf-8").to_string();
    let (ok, _stdout, stderr) = run_program(
        &program,
        &facts,
        &out_path,
        &["--engine", engine, "-w", workers],
    );
    assert!(ok, "{name} with {engine} failed: {stderr}");
    let expected_dir = root.join("tests/expected").join(name);
    let mut checked = 0;
    for entry in std::fs::read_dir(&expected_dir).expect("expected outputs") {
        let expected = entry.expect("entry").path();
        let file = expected.file_name().expect("file name");
        let actual = out.path().join(file);
        assert_eq!(
            sorted_lines(&actual),
            sorted_lines(&expected),
            "{name} with {engine}: {} differs",
            file.to_string_lossy()
        );
        checked += 1;
    }
    assert!(checked > 0, "no expected outputs for {name}");
}

#[test]
fn examples_seminaive() {
    for name in EXAMPLES {
        check_example(name, "seminaive", "1");
    }
}

#[test]
fn examples_diff_one_worker() {
    for name in EXAMPLES {
        check_example(name, "diff", "1");
    }
}

#[test]
fn examples_diff_two_workers() {
    for name in EXAMPLES {
        check_example(name, "diff", "2");
    }
}

#[test]
fn examples_relational() {
    for name in EXAMPLES {
        check_example(name, "relational", "1");
        check_example(name, "relational", "2");
    }
}

#[test]
fn examples_chibi() {
    for name in EXAMPLES {
        check_example(name, "chibi", "1");
    }
}

#[test]
fn examples_remat() {
    for name in EXAMPLES {
        check_example(name, "remat", "1");
    }
}

#[test]
fn outputs_to_stdout_and_printsize() {
    let root = root();
    let (ok, stdout, stderr) = run_program(
        &root.join("examples/tc.dl"),
        &root.join("examples/tc"),
        "-",
        &[],
    );
    assert!(ok, "{stderr}");
    // `.printsize path` and the framed stdout layout of `-D -`, as Soufflé's: the name,
    // the column names, the tuples.
    assert!(stdout.contains("path\t20\n"), "{stdout}");
    assert!(
        stdout.contains("---------------\npath\nx\ty\n===============\n1\t2\n"),
        "{stdout}"
    );
    let rows = stdout
        .lines()
        .filter(|l| l.split('\t').count() == 2 && !l.starts_with("path") && *l != "x\ty")
        .count();
    assert_eq!(rows, 20, "{stdout}");
}

#[test]
fn stats_report_strata_counts_and_memory() {
    let root = root();
    let out = tempfile::tempdir().expect("temp dir");
    let (ok, _stdout, stderr) = run_program(
        &root.join("examples/negation.dl"),
        &root.join("examples/negation"),
        out.path().to_str().expect("utf-8"),
        &["--stats"],
    );
    assert!(ok, "{stderr}");
    assert!(stderr.contains("load:"), "{stderr}");
    assert!(stderr.contains("stratum 0 ["), "{stderr}");
    assert!(stderr.contains("disconnected 20"), "{stderr}");
    assert!(stderr.contains("peak memory:"), "{stderr}");
}

#[test]
fn nullary_relations() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    std::fs::write(
        &prog,
        ".decl b(x: number)\nb(1).\n.decl yes()\n.decl no()\n.output yes\n.output no\n.printsize yes\n\
         yes() :- b(1).\nno() :- b(2).\n",
    )
    .expect("write");
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
    assert!(ok, "{stderr}");
    assert_eq!(stdout, "yes\t1\n");
    assert_eq!(
        std::fs::read_to_string(out.join("yes.csv")).expect("yes.csv"),
        "()\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("no.csv")).expect("no.csv"),
        ""
    );
}

#[test]
fn io_directive_options() {
    let dir = tempfile::tempdir().expect("temp dir");
    let prog = dir.path().join("prog.dl");
    std::fs::write(
        &prog,
        ".decl e(x: number, y: symbol)\n.input e(IO=file, filename=\"sub/edges.csv\", delimiter=\",\")\n\
         .decl f(x: number, y: symbol)\n.output f(filename=\"f-out.txt\", delimiter=\";\")\n\
         .decl g(x: number)\n.output g(IO=stdout)\n\
         f(x, y) :- e(x, y), x > 1.\ng(x) :- e(x, _).\n",
    )
    .expect("write");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    std::fs::write(dir.path().join("sub/edges.csv"), "1,a b\n2,c\n10,d\n").expect("write");
    let out = dir.path().join("out");
    let (ok, stdout, stderr) = run_program(&prog, dir.path(), out.to_str().expect("utf-8"), &[]);
    assert!(ok, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("f-out.txt")).expect("f-out.txt"),
        "2;c\n10;d\n"
    );
    assert_eq!(
        stdout,
        "---------------\ng\nx\n===============\n1\n2\n10\n===============\n"
    );
}
