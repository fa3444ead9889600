//! Property tests of the readers on hostile files: fact files
//! ([`dynalog_io::read_relation_file`]) and RDF files ([`dynalog_io::rdf::read_triples`],
//! N-Triples and Turtle) with random bytes, long lines, bad UTF-8, wrong column counts
//! and deep Turtle nesting. The property: a reader returns its facts or an error
//! naming the file with a line (and column where there is one); it never panics and
//! never overflows the 2 MB stack every case runs on. `DYNALOG_FUZZ_CASES=N` runs N
//! cases per property instead of the default.

use dynalog_analysis::{Relation, SymbolTable, Type};
use dynalog_io::rdf::{RdfFormat, RdfOptions, read_triples};
use dynalog_io::read_relation_file;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
#[path = "../../../tests/shared/hostile.rs"]
mod hostile;
use hostile::{cases, small_stack};

fn relation(types: Vec<Type>) -> Relation {
    Relation {
        name: "r".into(),
        column_names: (0..types.len()).map(|i| format!("c{i}")).collect(),
        types,
        inputs: vec![],
        outputs: vec![],
        printsize: false,
        implicit: false,
        eqrel: false,
        span: Default::default(),
    }
}

/// Write `bytes` to a fresh file named `name` in a temporary directory.
fn file_with(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    (dir, path)
}

/// Read a fact file on a small stack; errors name the file and a line of it.
fn read_facts_checked(bytes: Vec<u8>, types: Vec<Type>) -> Result<usize, String> {
    small_stack(move || {
        let (_dir, path) = file_with("r.facts", &bytes);
        let mut symbols = SymbolTable::new();
        match read_relation_file(&path, &relation(types), &mut symbols) {
            Ok(t) => Ok(t.len()),
            Err(d) => {
                let lines = bytes.split(|&b| b == b'\n').count();
                assert!(d.line >= 1 && d.line <= lines, "{d}");
                assert_eq!(d.file, path.display().to_string());
                Err(d.message)
            }
        }
    })
}

/// Read an RDF file on a small stack; errors name the file and a line of it.
fn read_rdf_checked(bytes: Vec<u8>, name: &'static str, lenient: bool) -> Result<usize, String> {
    small_stack(move || {
        let (_dir, path) = file_with(name, &bytes);
        let options = RdfOptions {
            base: Some("http://example.org/".into()),
            lenient,
            format: RdfFormat::from_path(Path::new(name)),
            file_id: 0,
        };
        let mut n = 0;
        match read_triples(&path, &options, &mut |_| n += 1) {
            Ok(stats) => {
                assert_eq!(stats.triples, n);
                Ok(n)
            }
            Err(d) => {
                assert!(d.line >= 1, "{d}");
                assert_eq!(d.file, path.display().to_string());
                Err(d.message)
            }
        }
    })
}

fn types() -> impl Strategy<Value = Vec<Type>> {
    proptest::collection::vec(
        prop_oneof![
            Just(Type::Number),
            Just(Type::Unsigned),
            Just(Type::Float),
            Just(Type::Symbol),
        ],
        0..4,
    )
}

/// Fact-file lines: fields that fit a column or do not, delimiters, bad UTF-8, long.
fn fact_line() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        (-5i64..5).prop_map(|n| n.to_string().into_bytes()),
        Just(b"4294967296".to_vec()),
        Just(b"-2147483649".to_vec()),
        Just(b"1.5".to_vec()),
        Just(b"nan".to_vec()),
        Just(b"abc".to_vec()),
        Just(b"".to_vec()),
        Just(vec![0xff, 0xfe]),
        Just(b"\r".to_vec()),
        (1usize..100_000).prop_map(|n| vec![b'7'; n]),
        (1usize..100_000).prop_map(|n| vec![b's'; n]),
    ];
    proptest::collection::vec(field, 0..6).prop_map(|fields| fields.join(&b'\t'))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(128), ..ProptestConfig::default() })]

    #[test]
    fn fact_files_of_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..3000), types in types()) {
        let _ = read_facts_checked(bytes, types);
    }

    #[test]
    fn fact_files_of_random_lines(lines in proptest::collection::vec(fact_line(), 0..20), types in types()) {
        let arity = types.len();
        let all_text = lines.iter().all(|l| std::str::from_utf8(l).is_ok());
        let result = read_facts_checked(lines.join(&b'\n'), types);
        if let Err(m) = &result {
            // Refusals are about the content (not crashes): columns, values, UTF-8.
            prop_assert!(
                m.contains("column") || m.contains("UTF-8"),
                "{} (arity {}, utf-8 {})", m, arity, all_text
            );
        }
    }

    #[test]
    fn ntriples_of_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..3000), lenient in any::<bool>()) {
        let _ = read_rdf_checked(bytes, "g.nt", lenient);
    }

    #[test]
    fn turtle_of_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..3000), lenient in any::<bool>()) {
        let _ = read_rdf_checked(bytes, "g.ttl", lenient);
    }

    #[test]
    fn turtle_of_random_tokens(tokens in proptest::collection::vec(prop_oneof![
        Just("<http://a/s> "), Just("<p> "), Just("<o> "), Just("_:b "), Just("\"l\" "),
        Just("\"l\"@en "), Just("1 "), Just("[ "), Just("] "), Just("( "), Just(") "),
        Just("; "), Just(", "), Just(". "), Just("a "), Just("@prefix x: <http://x/> . "),
        Just("x:y "), Just("\"\"\"long\n\"\"\" "), Just("\n"), Just("# c\n"),
    ], 0..200), lenient in any::<bool>()) {
        let _ = read_rdf_checked(tokens.concat().into_bytes(), "g.ttl", lenient);
    }
}

/// Deep nesting of blank-node property lists and collections in Turtle, 100,000
/// levels: read or refused, not overflowed.
#[test]
fn deep_turtle_nesting() {
    let n = 100_000;
    let blank = format!(
        "<http://a/s> <http://a/p> {}<http://a/o>{} .\n",
        "[ <http://a/p> ".repeat(n),
        " ]".repeat(n)
    );
    assert_eq!(
        read_rdf_checked(blank.into_bytes(), "g.ttl", false),
        Ok(n + 1)
    );
    let list = format!(
        "<http://a/s> <http://a/p> {}<http://a/o>{} .\n",
        "( ".repeat(n),
        " )".repeat(n)
    );
    assert!(read_rdf_checked(list.into_bytes(), "g.ttl", false).is_ok());
    // Unclosed: an error, in both modes.
    let open = format!(
        "<http://a/s> <http://a/p> {}",
        "[ <http://a/p> ( ".repeat(n)
    );
    assert!(read_rdf_checked(open.clone().into_bytes(), "g.ttl", false).is_err());
    let _ = read_rdf_checked(open.into_bytes(), "g.ttl", true);
}

/// Long lines: a 1 MB fact field, a 1 MB IRI, a line of 100,000 columns.
#[test]
fn long_lines() {
    let long = "s".repeat(1 << 20);
    assert_eq!(
        read_facts_checked(
            format!("{long}\t1\n").into_bytes(),
            vec![Type::Symbol, Type::Number]
        ),
        Ok(1)
    );
    let wide = vec!["1"; 100_000].join("\t");
    let e = read_facts_checked(wide.into_bytes(), vec![Type::Number, Type::Number])
        .expect_err("too many columns");
    assert!(e.contains("expected 2 columns"), "{e}");
    let iri = format!("<http://a/{long}> <http://a/p> <http://a/o> .\n");
    assert_eq!(
        read_rdf_checked(iri.clone().into_bytes(), "g.nt", false),
        Ok(1)
    );
    assert_eq!(read_rdf_checked(iri.into_bytes(), "g.ttl", false), Ok(1));
    // Bad UTF-8 in the middle of a file: the line is named.
    let mut bytes = b"1\n2\n".to_vec();
    bytes.extend_from_slice(&[0xC3, 0x28, b'\n']);
    let e = read_facts_checked(bytes, vec![Type::Symbol]).expect_err("bad UTF-8");
    assert!(e.contains("UTF-8"), "{e}");
}
