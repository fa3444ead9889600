//! RDF in and out: N-Triples and Turtle files as facts, facts as N-Triples.
//!
//! **Reading.** [`read_triples`] streams a file through the `oxttl` parsers (N-Triples or
//! Turtle, by [`RdfFormat`] or the file's extension; `.gz` files are decompressed on the
//! fly). A malformed line is an error `file:line:col: error: reason`, or, with
//! [`RdfOptions::lenient`], skipped and counted (N-Triples line by line; in Turtle the
//! parser resumes after the next `.`, which may take the following statement with the
//! malformed one). Relative IRIs (such as `<>`) are
//! resolved against a base IRI: [`RdfOptions::base`], by default the file's `file://`
//! URI. Nothing is handed on before the whole file is read, so a bad file applies nothing.
//! N-Triples lines are parsed in batches of 4,096 by a thread per core, and their
//! triples handed on in the file's order (on LUBM(50), 6.9M triples, the load went
//! from 11.0 to 7.3 s on two cores); Turtle is parsed by one thread.
//!
//! **Terms as symbols** (the project's convention, shared by every front end):
//!
//! | RDF term | symbol |
//! |---|---|
//! | IRI in the rdf, rdfs, owl or xsd namespace | prefixed name: `rdf:type`, `rdfs:subClassOf`, `owl:sameAs`, `xsd:string` |
//! | any other IRI | its text without angle brackets: `http://www.Department0.University0.edu/FullProfessor0` |
//! | blank node `_:b` of the k-th loaded file | `_:fk_b` (distinct per file) |
//! | literal | its N-Triples form: `"abc"`, `"chat"@fr`, `"5"^^<http://www.w3.org/2001/XMLSchema#integer>` |
//!
//! [`term_symbol`] and [`symbol_term`] convert both ways; writing a symbol back gives the
//! term it was read from. Anonymous blank nodes (`[]` in Turtle) get a fresh label from
//! the parser on every read. A non-RDF IRI whose scheme is `rdf`, `rdfs`, `owl` or `xsd`
//! (as in `rdf:x`, not an IRI anyone uses) would read back as the namespace's IRI.
//!
//! **Mappings to facts** ([`Mapping`]), chosen per `.input` directive with `IO="rdf"`:
//! * `mapping="triples"`: every triple `s p o` becomes `T(s, p, o)` (three symbol columns).
//! * `mapping="vocabulary"` (the study's OWL 2 RL mapping): `x rdf:type C` becomes `C(x)`
//!   and any other `s p o` becomes `p(s, o)`, named by the local name of `C` or `p` (after
//!   the last `#` or `/`). Only IRIs of the directive's `namespace="..."` are mapped (by
//!   default every namespace); mapped facts whose relation the program does not declare
//!   as such an input are dropped and counted.
//!
//! [`load_rdf`] loads one file for a list of [`RdfTarget`]s into `(RelId, Tuples)`
//! batches; [`load_rdf_for_program`] takes the targets from the program's directives
//! (or, when it has none, triples into a relation `T`), for front ends that load and
//! unload RDF files into a running program. [`TripleShapes`] goes the other way: the
//! triple each fact of a target relation stands for (`T(s, p, o)`, `C(x)` as
//! `x rdf:type C`, `p(s, o)` as `s p o`), and [`NTriplesWriter`] writes such triples as
//! N-Triples lines.
//!
//! The submodules: `terms` (terms and symbols, [`TermError`]), `read` (the parsers and
//! their options), `mapping` (the relation choice both ways); everything is re-exported
//! here. [`RHODF`] and [`OWL2RL`] are the built-in rule programs of
//! `dynalog rdf materialize`.

mod mapping;
mod read;
mod terms;

pub use mapping::*;
pub use read::*;
pub use terms::*;

/// RhoDF over `T(s, p, o)` (`programs/rhodf.dl`): `dynalog rdf materialize --rules rhodf`.
pub const RHODF: &str = include_str!("../../../../programs/rhodf.dl");
/// OWL 2 RL specialised to LUBM's univ-bench ontology, vocabulary mapping
/// (`programs/owl2rl.dl`): `--rules owl2rl`.
pub const OWL2RL: &str = include_str!("../../../../programs/owl2rl.dl");

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;
    use dynalog_analysis::Program;
    use dynalog_syntax::{Diagnostic, SourceFile};
    use oxrdf::Triple;
    use std::path::{Path, PathBuf};

    pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    pub fn triples_of(
        path: &Path,
        options: &RdfOptions,
    ) -> Result<(Vec<Triple>, ReadStats), Diagnostic> {
        let mut out = Vec::new();
        let stats = read_triples(path, options, &mut |t| out.push(t.clone()))?;
        Ok((out, stats))
    }

    pub fn program(text: &str) -> (Program, SourceFile) {
        let source = SourceFile::new("test.dl", text);
        let ast = dynalog_syntax::parse(&source).unwrap();
        let program = dynalog_analysis::analyse(&source, &ast).unwrap();
        (program, source)
    }

    /// The facts of a load as sorted, readable rows: `rel(a, b)`.
    pub fn rows(program: &Program, load: &RdfLoad) -> Vec<String> {
        let mut out = Vec::new();
        for (rel, tuples) in &load.batches {
            for t in tuples.iter() {
                let args: Vec<String> = t
                    .iter()
                    .map(|&v| program.symbols.resolve(v).to_string())
                    .collect();
                out.push(format!(
                    "{}({})",
                    program.relation(*rel).name,
                    args.join(", ")
                ));
            }
        }
        out.sort();
        out.dedup();
        out
    }

    pub const DATA: &str = r#"<http://ex.org/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/voc#Person> .
<http://ex.org/a> <http://ex.org/voc#knows> _:b1 .
_:b1 <http://www.w3.org/2000/01/rdf-schema#label> "Bob \"the\" builder\\\n\t\u00e9 😀 \u0001"@en-GB .
_:b1 <http://ex.org/other#age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:b1 <http://ex.org/voc#name> "plain"^^<http://www.w3.org/2001/XMLSchema#string> .
<http://ex.org/voc#Person> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://www.w3.org/2002/07/owl#Thing> .
"#;
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;
    use oxrdf::{BlankNode, Term, TermRef, Triple};

    #[test]
    fn terms_become_symbols_and_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path(), "d.nt", DATA);
        let options = RdfOptions {
            file_id: 7,
            ..RdfOptions::default()
        };
        let (triples, stats) = triples_of(&path, &options).unwrap();
        assert_eq!(stats.triples, 6);
        let sym = |t: TermRef<'_>| term_symbol(t, 7);
        assert_eq!(sym(triples[0].predicate.as_ref().into()), "rdf:type");
        assert_eq!(sym(triples[0].subject.as_ref().into()), "http://ex.org/a");
        assert_eq!(sym(triples[1].object.as_ref()), "_:f7_b1");
        assert_eq!(sym(triples[2].predicate.as_ref().into()), "rdfs:label");
        assert_eq!(
            sym(triples[2].object.as_ref()),
            "\"Bob \\\"the\\\" builder\\\\\\n\\té 😀 \\u0001\"@en-gb"
        );
        assert_eq!(
            sym(triples[3].object.as_ref()),
            "\"42\"^^<http://www.w3.org/2001/XMLSchema#integer>"
        );
        assert_eq!(sym(triples[4].object.as_ref()), "\"plain\"");
        assert_eq!(sym(triples[5].object.as_ref()), "owl:Thing");
        // Every term survives symbol -> term; blank nodes keep their per-file label.
        for t in &triples {
            for term in [
                Term::from(t.subject.clone()),
                Term::from(t.predicate.clone()),
                t.object.clone(),
            ] {
                let back = symbol_term(&sym(term.as_ref())).unwrap();
                match &term {
                    Term::BlankNode(b) => {
                        assert_eq!(
                            back,
                            Term::BlankNode(BlankNode::new(format!("f7_{}", b.as_str())).unwrap())
                        )
                    }
                    _ => assert_eq!(back, term),
                }
            }
        }
        // Written as N-Triples and read again: the same triples (blank nodes relabelled).
        let mut written = String::new();
        for t in &triples {
            let [s, p, o] = [
                sym(t.subject.as_ref().into()),
                sym(t.predicate.as_ref().into()),
                sym(t.object.as_ref()),
            ];
            written.push_str(&ntriples_line(&s, &p, &o).unwrap());
            written.push('\n');
        }
        let again = write_file(dir.path(), "again.nt", &written);
        let (reread, _) = triples_of(&again, &options).unwrap();
        let symbols = |ts: &[Triple], relabel: bool| -> Vec<String> {
            ts.iter()
                .map(|t| {
                    let line = format!(
                        "{} {} {}",
                        sym(t.subject.as_ref().into()),
                        sym(t.predicate.as_ref().into()),
                        sym(t.object.as_ref())
                    );
                    if relabel {
                        line.replace("_:f7_f7_", "_:f7_")
                    } else {
                        line
                    }
                })
                .collect()
        };
        assert_eq!(symbols(&reread, true), symbols(&triples, false));
    }
}
