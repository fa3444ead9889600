//! Which relation a triple goes to, and back: the [`Mapping`] of each `IO="rdf"`
//! directive (or triples into `T`), loading a file into batches of facts for those
//! relations ([`load_rdf`]), and the [`TripleShape`] in which a relation's facts are
//! written back as triples.

use super::read::{RdfFormat, RdfOptions, ReadStats, read_triples};
use super::terms::{RDF_TYPE, iri_symbol, split_iri, term_symbol_into};
use crate::Tuples;
use dynalog_analysis::{IoSpec, Program, RelId, Type, Value};
use dynalog_syntax::{Diagnostic, SourceFile};
use oxrdf::{TermRef, Triple};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// How the triples of a file become facts of one relation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// Every triple into a ternary relation `T(s, p, o)`.
    Triples,
    /// `x rdf:type C` into `C(x)`, `s p o` into `p(s, o)`, by local name; only IRIs of
    /// the namespace (every namespace when `None`).
    Vocabulary { namespace: Option<String> },
}

/// A relation fed from an RDF file, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdfTarget {
    pub relation: RelId,
    pub mapping: Mapping,
}

/// Whether a directive reads RDF (`IO="rdf"`).
pub fn is_rdf_spec(spec: &IoSpec) -> bool {
    spec.get("IO")
        .is_some_and(|io| io.eq_ignore_ascii_case("rdf"))
}

/// The target of one `IO="rdf"` directive of relation `rel`, checked: the mapping is
/// known and the relation's columns fit it (three symbols for `triples`, one or two
/// symbols for `vocabulary`).
pub fn rdf_target(
    program: &Program,
    source: &SourceFile,
    rel: RelId,
    spec: &IoSpec,
) -> Result<RdfTarget, Diagnostic> {
    let relation = program.relation(rel);
    let symbols_only = relation.types.iter().all(|&t| t == Type::Symbol);
    let mapping = match spec.get("mapping").unwrap_or("triples") {
        "triples" => {
            if relation.arity() != 3 || !symbols_only {
                return Err(Diagnostic::at(
                    source,
                    spec.span,
                    format!(
                        "`mapping=\"triples\"` needs three symbol columns (s, p, o), but `{}` has {}",
                        relation.name,
                        describe_columns(&relation.types)
                    ),
                ));
            }
            Mapping::Triples
        }
        "vocabulary" => {
            if !(1..=2).contains(&relation.arity()) || !symbols_only {
                return Err(Diagnostic::at(
                    source,
                    spec.span,
                    format!(
                        "`mapping=\"vocabulary\"` needs one symbol column (a class) or two (a property), but `{}` has {}",
                        relation.name,
                        describe_columns(&relation.types)
                    ),
                ));
            }
            Mapping::Vocabulary {
                namespace: spec.get("namespace").map(str::to_string),
            }
        }
        other => {
            return Err(Diagnostic::at(
                source,
                spec.span,
                format!("unknown mapping `{other}` (use \"triples\" or \"vocabulary\")"),
            ));
        }
    };
    if let Some(f) = spec.get("format")
        && RdfFormat::from_name(f).is_none()
    {
        return Err(Diagnostic::at(
            source,
            spec.span,
            format!("unknown RDF format `{f}` (use \"ntriples\" or \"turtle\")"),
        ));
    }
    Ok(RdfTarget {
        relation: rel,
        mapping,
    })
}

fn describe_columns(types: &[Type]) -> String {
    if types.is_empty() {
        return "no columns".into();
    }
    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
    format!("columns ({})", names.join(", "))
}

/// The RDF targets of a program: one per `.input` directive with `IO="rdf"`.
pub fn program_rdf_targets(
    program: &Program,
    source: &SourceFile,
) -> Result<Vec<RdfTarget>, Diagnostic> {
    let mut out = Vec::new();
    for (id, rel) in program.relations.iter().enumerate() {
        for spec in rel.inputs.iter().filter(|s| is_rdf_spec(s)) {
            out.push(rdf_target(program, source, id as RelId, spec)?);
        }
    }
    Ok(out)
}

/// The facts of one RDF file, ready for an engine.
#[derive(Clone, Debug, Default)]
pub struct RdfLoad {
    /// One batch per target relation that received facts (duplicates not removed).
    pub batches: Vec<(RelId, Tuples)>,
    pub read: ReadStats,
    /// Vocabulary facts whose relation is not a target, by relation name.
    pub dropped: BTreeMap<String, usize>,
    /// Triples no vocabulary target's namespace covers.
    pub unmapped: usize,
    /// For vocabulary targets: the namespace of the IRIs their facts came from.
    pub namespaces: BTreeMap<RelId, String>,
}

impl RdfLoad {
    /// Facts in all batches.
    pub fn facts(&self) -> usize {
        self.batches.iter().map(|(_, t)| t.len()).sum()
    }

    /// Human-readable remarks: skipped lines, dropped facts.
    pub fn notes(&self, file: &str) -> Vec<String> {
        let mut notes = Vec::new();
        if self.read.skipped > 0 {
            notes.push(format!(
                "warning: {file}: skipped {} malformed statement(s), the first: {}",
                self.read.skipped,
                self.read.first_skipped.as_deref().unwrap_or("?")
            ));
        }
        let dropped: usize = self.dropped.values().sum();
        if dropped > 0 {
            let mut by_name: Vec<(&String, &usize)> = self.dropped.iter().collect();
            by_name.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let list: Vec<String> = by_name
                .iter()
                .take(8)
                .map(|(n, c)| format!("{n} {c}"))
                .collect();
            let more = if by_name.len() > 8 { ", ..." } else { "" };
            notes.push(format!(
                "note: {file}: dropped {dropped} fact(s) of {} relation(s) the program does not read ({}{more})",
                by_name.len(),
                list.join(", ")
            ));
        }
        notes
    }
}

/// A vocabulary target inside [`load_rdf`].
struct VocabTarget {
    arity: usize,
    batch: usize,
    namespace: Option<String>,
}

/// How the facts of a target relation are written back as triples (the inverse of its
/// [`Mapping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TripleShape {
    /// `T(s, p, o)`: the triple `s p o`.
    Triple,
    /// `C(x)`: `x rdf:type C`, with the symbol of C's IRI.
    Class(Value),
    /// `p(s, o)`: `s p o`, with the symbol of p's IRI.
    Property(Value),
}

/// The triples that the facts of the target relations of a load stand for.
#[derive(Clone, Debug)]
pub struct TripleShapes {
    /// Each target relation once, in the order of the targets, with its shape.
    pub shapes: Vec<(RelId, TripleShape)>,
    /// Vocabulary relations without a `namespace=` that got no facts from the data:
    /// their IRIs are unknown, so their facts cannot be named as triples.
    pub unnamed: Vec<RelId>,
    rdf_type: Value,
    /// The inverse of the shapes: the relations of shape `Triple`, and those of each
    /// class and property symbol.
    of_triples: Vec<RelId>,
    of_class: FxHashMap<Value, Vec<RelId>>,
    of_property: FxHashMap<Value, Vec<RelId>>,
}

impl TripleShapes {
    /// The shapes of `targets`; a vocabulary relation is named by its directive's
    /// `namespace=` or else by the namespace its facts came from (`observed`, as in
    /// [`RdfLoad::namespaces`]). The class and property symbols and `rdf:type` are
    /// interned into `program.symbols`.
    pub fn new(
        program: &mut Program,
        targets: &[RdfTarget],
        observed: &BTreeMap<RelId, String>,
    ) -> TripleShapes {
        let mut shapes = Vec::new();
        let mut unnamed = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for t in targets.iter().filter(|t| seen.insert(t.relation)) {
            let shape = match &t.mapping {
                Mapping::Triples => TripleShape::Triple,
                Mapping::Vocabulary { namespace } => {
                    let Some(ns) = namespace
                        .clone()
                        .or_else(|| observed.get(&t.relation).cloned())
                    else {
                        unnamed.push(t.relation);
                        continue;
                    };
                    let rel = program.relation(t.relation);
                    let symbol = iri_symbol(&format!("{ns}{}", rel.name));
                    let arity = rel.arity();
                    let id = program.symbols.intern(&symbol);
                    if arity == 1 {
                        TripleShape::Class(id)
                    } else {
                        TripleShape::Property(id)
                    }
                }
            };
            shapes.push((t.relation, shape));
        }
        let rdf_type = program.symbols.intern("rdf:type");
        let mut of_triples = Vec::new();
        let mut of_class: FxHashMap<Value, Vec<RelId>> = FxHashMap::default();
        let mut of_property: FxHashMap<Value, Vec<RelId>> = FxHashMap::default();
        for &(rel, shape) in &shapes {
            match shape {
                TripleShape::Triple => of_triples.push(rel),
                TripleShape::Class(c) => of_class.entry(c).or_default().push(rel),
                TripleShape::Property(p) => of_property.entry(p).or_default().push(rel),
            }
        }
        TripleShapes {
            shapes,
            unnamed,
            rdf_type,
            of_triples,
            of_class,
            of_property,
        }
    }

    /// Whether `test` holds for some fact of a target relation that stands for `triple`
    /// (the inverse of [`TripleShapes::triple`]: a triple can be a fact of a
    /// `Triple`-shaped relation and of its class's or property's relation at once).
    pub fn any_fact_of(
        &self,
        [s, p, o]: [Value; 3],
        mut test: impl FnMut(RelId, &[Value]) -> bool,
    ) -> bool {
        let empty = Vec::new();
        self.of_triples.iter().any(|&rel| test(rel, &[s, p, o]))
            || (p == self.rdf_type
                && self
                    .of_class
                    .get(&o)
                    .unwrap_or(&empty)
                    .iter()
                    .any(|&rel| test(rel, &[s])))
            || self
                .of_property
                .get(&p)
                .unwrap_or(&empty)
                .iter()
                .any(|&rel| test(rel, &[s, o]))
    }

    /// The triple a fact of a relation of this `shape` stands for.
    pub fn triple(&self, shape: TripleShape, fact: &[Value]) -> [Value; 3] {
        match shape {
            TripleShape::Triple => [fact[0], fact[1], fact[2]],
            TripleShape::Class(c) => [fact[0], self.rdf_type, c],
            TripleShape::Property(p) => [fact[0], p, fact[1]],
        }
    }
}

/// Load one RDF file for `targets` into batches of interned tuples. Symbols are interned
/// into `program.symbols`. On error nothing is returned (the file applies nothing).
pub fn load_rdf(
    program: &mut Program,
    path: &Path,
    targets: &[RdfTarget],
    options: &RdfOptions,
) -> Result<RdfLoad, Diagnostic> {
    let mut load = RdfLoad::default();
    let mut batches: Vec<Tuples> = Vec::new();
    let mut batch_of: HashMap<RelId, usize> = HashMap::new();
    let mut triple_batches = Vec::new();
    // Vocabulary targets by local name.
    let mut vocab: HashMap<String, Vec<VocabTarget>> = HashMap::new();
    let mut vocab_namespaces: Vec<Option<String>> = Vec::new();
    for t in targets {
        let rel = program.relation(t.relation);
        let arity = rel.arity();
        let name = rel.name.clone();
        let b = *batch_of.entry(t.relation).or_insert_with(|| {
            batches.push(Tuples::new(arity));
            batches.len() - 1
        });
        match &t.mapping {
            Mapping::Triples => triple_batches.push(b),
            Mapping::Vocabulary { namespace } => {
                vocab.entry(name).or_default().push(VocabTarget {
                    arity,
                    batch: b,
                    namespace: namespace.clone(),
                });
                vocab_namespaces.push(namespace.clone());
            }
        }
    }
    triple_batches.sort_unstable();
    triple_batches.dedup();
    let any_namespace = vocab_namespaces.iter().any(Option::is_none);
    let covered =
        |ns: &str| any_namespace || vocab_namespaces.iter().any(|n| n.as_deref() == Some(ns));
    let mut observed: HashMap<usize, String> = HashMap::new();
    let file_id = options.file_id;
    let symbols = &mut program.symbols;
    let mut symbol = String::new();
    let mut intern = |term: TermRef<'_>| -> Value {
        symbol.clear();
        term_symbol_into(term, file_id, &mut symbol);
        symbols.intern(&symbol)
    };
    let read = read_triples(path, options, &mut |t: &Triple| {
        let s = intern(t.subject.as_ref().into());
        if !triple_batches.is_empty() {
            let p = intern(t.predicate.as_ref().into());
            let o = intern(t.object.as_ref());
            for &b in &triple_batches {
                batches[b].push(&[s, p, o]);
            }
        }
        if vocab_namespaces.is_empty() {
            return;
        }
        let (iri, tuple_len) = match t.object.as_ref() {
            TermRef::NamedNode(c) if t.predicate.as_str() == RDF_TYPE => (c.as_str(), 1),
            _ if t.predicate.as_str() == RDF_TYPE => {
                // A blank node or literal as class: nothing to name the relation by.
                load.unmapped += 1;
                return;
            }
            _ => (t.predicate.as_str(), 2),
        };
        let (ns, local) = split_iri(iri);
        let mut delivered = false;
        if let Some(list) = vocab.get(local) {
            let mut value = None;
            for target in list {
                if target.arity != tuple_len || target.namespace.as_deref().is_some_and(|f| f != ns)
                {
                    continue;
                }
                let v = *value.get_or_insert_with(|| {
                    if tuple_len == 1 {
                        [s, 0]
                    } else {
                        [s, intern(t.object.as_ref())]
                    }
                });
                batches[target.batch].push(&v[..tuple_len]);
                observed
                    .entry(target.batch)
                    .or_insert_with(|| ns.to_string());
                delivered = true;
            }
        }
        if !delivered {
            if !local.is_empty() && covered(ns) {
                *load.dropped.entry(local.to_string()).or_default() += 1;
            } else {
                load.unmapped += 1;
            }
        }
    })?;
    load.read = read;
    for (&rel, &b) in &batch_of {
        if let Some(ns) = observed.get(&b) {
            load.namespaces.insert(rel, ns.clone());
        }
    }
    let mut order: Vec<(RelId, usize)> = batch_of.into_iter().collect();
    order.sort_unstable();
    for (rel, b) in order {
        let tuples = std::mem::take(&mut batches[b]);
        if !tuples.is_empty() {
            load.batches.push((rel, tuples));
        }
    }
    Ok(load)
}

/// The targets a program reads an RDF file with: its `IO="rdf"` directives, or, when
/// it has none, triples into its relation `T` (three symbol columns). An error when
/// it has neither.
pub fn targets_for_program(
    program: &Program,
    source: &SourceFile,
) -> Result<Vec<RdfTarget>, Diagnostic> {
    let targets = program_rdf_targets(program, source)?;
    if !targets.is_empty() {
        return Ok(targets);
    }
    let fits = |r: RelId| {
        let rel = program.relation(r);
        rel.arity() == 3 && rel.types.iter().all(|&t| t == Type::Symbol)
    };
    match program.relation_id("T") {
        Some(t) if fits(t) => Ok(vec![RdfTarget {
            relation: t,
            mapping: Mapping::Triples,
        }]),
        _ => Err(Diagnostic::line(
            &source.name,
            1,
            1,
            "the program reads no RDF: declare `.input R(IO=\"rdf\", mapping=\"triples\"|\"vocabulary\")` or a relation `T(s: symbol, p: symbol, o: symbol)`",
        )),
    }
}

/// The targets of an RDF file loaded into relation `rel` of a running program (a
/// session's `load REL FILE.nt`): the relation's own `IO="rdf"` directives; when one of
/// them is a vocabulary mapping, every vocabulary target of the program (the file's
/// classes and properties go to their relations); with no directive, triples into
/// `rel` itself if it has three symbol columns. An error (at line 0 of `path`) when the
/// relation takes no RDF.
pub fn targets_for_relation(
    program: &Program,
    source: &SourceFile,
    rel: RelId,
    path: &Path,
) -> Result<Vec<RdfTarget>, Diagnostic> {
    let declared = targets_for_program(program, source).unwrap_or_default();
    let mut targets: Vec<RdfTarget> = declared
        .iter()
        .filter(|t| t.relation == rel)
        .cloned()
        .collect();
    let vocabulary = |t: &RdfTarget| matches!(t.mapping, Mapping::Vocabulary { .. });
    if targets.iter().any(vocabulary) {
        targets = declared.into_iter().filter(vocabulary).collect();
    }
    if targets.is_empty() {
        let r = program.relation(rel);
        if r.arity() != 3 || r.types.iter().any(|&t| t != Type::Symbol) {
            return Err(Diagnostic::line(
                path.display().to_string(),
                0,
                0,
                format!(
                    "`{}` takes no RDF: it has no `IO=\"rdf\"` input and is not a relation of three symbols",
                    r.name
                ),
            ));
        }
        targets.push(RdfTarget {
            relation: rel,
            mapping: Mapping::Triples,
        });
    }
    Ok(targets)
}

/// Load an RDF file into a program the way the program declares (see
/// [`targets_for_program`]): the entry point for front ends that load and unload
/// `.nt`/`.ttl` files into a running program.
pub fn load_rdf_for_program(
    program: &mut Program,
    source: &SourceFile,
    path: &Path,
    options: &RdfOptions,
) -> Result<(Vec<RdfTarget>, RdfLoad), Diagnostic> {
    let targets = targets_for_program(program, source)?;
    let load = load_rdf(program, path, &targets, options)?;
    Ok((targets, load))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdf::test_util::*;

    #[test]
    fn triples_mapping_puts_every_triple_into_t() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path(), "d.nt", DATA);
        let (mut p, source) = program(
            ".decl T(s: symbol, p: symbol, o: symbol)\nT(x, \"rdf:type\", \"C\") :- T(x, _, _).\n",
        );
        let (targets, load) =
            load_rdf_for_program(&mut p, &source, &path, &RdfOptions::default()).unwrap();
        assert_eq!(targets[0].mapping, Mapping::Triples);
        let r = rows(&p, &load);
        assert_eq!(r.len(), 6);
        assert!(r.contains(&"T(http://ex.org/a, rdf:type, http://ex.org/voc#Person)".to_string()));
        assert!(r.contains(&"T(http://ex.org/a, http://ex.org/voc#knows, _:f0_b1)".to_string()));
    }

    #[test]
    fn vocabulary_mapping_names_relations_by_local_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path(), "d.nt", DATA);
        let ns = "http://ex.org/voc#";
        let (mut p, source) = program(&format!(
            ".decl Person(x: symbol)\n.input Person(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\", namespace=\"{ns}\")\n\
             .decl knows(x: symbol, y: symbol)\n.input knows(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\", namespace=\"{ns}\")\n\
             .decl age(x: symbol, y: symbol)\n.input age(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\", namespace=\"{ns}\")\n"
        ));
        let (_, load) =
            load_rdf_for_program(&mut p, &source, &path, &RdfOptions::default()).unwrap();
        assert_eq!(
            rows(&p, &load),
            vec!["Person(http://ex.org/a)", "knows(http://ex.org/a, _:f0_b1)"]
        );
        // voc#name is in the namespace but not read by the program: dropped and counted;
        // other#age is outside the namespace, and so are the rdfs triples.
        assert_eq!(load.dropped.get("name"), Some(&1));
        assert_eq!(load.dropped.len(), 1);
        assert_eq!(load.unmapped, 3);
        assert!(
            load.notes("d.nt")
                .iter()
                .any(|n| n.contains("dropped 1 fact"))
        );
        let person = p.relation_id("Person").unwrap();
        assert_eq!(load.namespaces.get(&person).map(String::as_str), Some(ns));

        // Without a namespace every IRI is mapped: other#age now reaches `age`.
        let (mut p, source) = program(
            ".decl age(x: symbol, y: symbol)\n.input age(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\")\n",
        );
        let (_, load) =
            load_rdf_for_program(&mut p, &source, &path, &RdfOptions::default()).unwrap();
        assert_eq!(
            rows(&p, &load),
            vec!["age(_:f0_b1, \"42\"^^<http://www.w3.org/2001/XMLSchema#integer>)"]
        );
        assert_eq!(load.unmapped, 0);
        assert_eq!(load.dropped.values().sum::<usize>(), 5);
    }

    #[test]
    fn facts_become_their_triples_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_file(dir.path(), "d.nt", DATA);
        let (mut p, source) = program(
            ".decl T(s: symbol, p: symbol, o: symbol)\n.input T(IO=\"rdf\")\n\
             .decl Person(x: symbol)\n.input Person(IO=\"rdf\", mapping=\"vocabulary\")\n\
             .decl knows(x: symbol, y: symbol)\n.input knows(IO=\"rdf\", mapping=\"vocabulary\", namespace=\"http://ex.org/voc#\")\n\
             .decl Robot(x: symbol)\n.input Robot(IO=\"rdf\", mapping=\"vocabulary\")\n.input Robot(IO=\"rdf\", mapping=\"vocabulary\")\n",
        );
        let (targets, load) =
            load_rdf_for_program(&mut p, &source, &path, &RdfOptions::default()).unwrap();
        let shapes = TripleShapes::new(&mut p, &targets, &load.namespaces);
        let rel = |n: &str| p.relation_id(n).unwrap();
        let sym = |s: &str| p.symbols.lookup(s).unwrap();
        assert_eq!(
            shapes.shapes,
            vec![
                (rel("T"), TripleShape::Triple),
                (
                    rel("Person"),
                    TripleShape::Class(sym("http://ex.org/voc#Person"))
                ),
                (
                    rel("knows"),
                    TripleShape::Property(sym("http://ex.org/voc#knows"))
                ),
            ]
        );
        // Robot has no namespace and no facts: its IRI is unknown (listed once).
        assert_eq!(shapes.unnamed, vec![rel("Robot")]);
        // Every fact is a triple of the data (which `T` holds, all of them).
        let triples_of = |r: RelId| -> Vec<[Value; 3]> {
            let shape = shapes.shapes.iter().find(|(x, _)| *x == r).unwrap().1;
            let (_, tuples) = load.batches.iter().find(|(x, _)| *x == r).unwrap();
            tuples.iter().map(|t| shapes.triple(shape, t)).collect()
        };
        let all = triples_of(rel("T"));
        assert_eq!(all.len(), 6);
        for r in ["Person", "knows"] {
            let some = triples_of(rel(r));
            assert_eq!(some.len(), 1, "{r}");
            assert!(some.iter().all(|t| all.contains(t)), "{r}");
        }
    }

    #[test]
    fn a_file_loaded_into_one_relation_feeds_its_targets() {
        let (p, source) = program(
            ".decl T(s: symbol, p: symbol, o: symbol)\n\
             .decl U(s: symbol, p: symbol, o: symbol)\n.input U(IO=\"rdf\")\n\
             .decl Person(x: symbol)\n.input Person(IO=\"rdf\", mapping=\"vocabulary\")\n\
             .decl knows(x: symbol, y: symbol)\n.input knows(IO=\"rdf\", mapping=\"vocabulary\")\n\
             .decl n(x: number)\n",
        );
        let rel = |n: &str| p.relation_id(n).unwrap();
        let path = Path::new("d.nt");
        let of = |r: &str| targets_for_relation(&p, &source, rel(r), path);
        let triples = |r: &str| RdfTarget {
            relation: rel(r),
            mapping: Mapping::Triples,
        };
        let vocabulary = |r: &str| RdfTarget {
            relation: rel(r),
            mapping: Mapping::Vocabulary { namespace: None },
        };
        // Its own directive; no directive but three symbols: triples into it.
        assert_eq!(of("U").unwrap(), vec![triples("U")]);
        assert_eq!(of("T").unwrap(), vec![triples("T")]);
        // A vocabulary relation: the file feeds every vocabulary relation.
        let both = vec![vocabulary("Person"), vocabulary("knows")];
        assert_eq!(of("Person").unwrap(), both);
        assert_eq!(of("knows").unwrap(), both);
        let e = of("n").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("d.nt", 0));
        assert_eq!(
            e.message,
            "`n` takes no RDF: it has no `IO=\"rdf\"` input and is not a relation of three symbols"
        );
    }

    #[test]
    fn directives_are_checked() {
        let bad = [
            (
                ".decl T(s: symbol, p: symbol)\n.input T(IO=\"rdf\", filename=\"d.nt\")\n",
                "three symbol columns",
            ),
            (
                ".decl C(x: number)\n.input C(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\")\n",
                "one symbol column",
            ),
        ];
        for (text, why) in bad {
            let (p, source) = program(text);
            let e = program_rdf_targets(&p, &source).unwrap_err();
            assert!(e.message.contains(why), "{}", e.message);
            assert_eq!(e.line, 2);
        }
        let (p, source) = program(".decl r(x: symbol)\n");
        assert!(targets_for_program(&p, &source).is_err());
    }

    #[test]
    fn read_inputs_reads_a_shared_file_once_and_runs_lenient() {
        let dir = tempfile::tempdir().unwrap();
        write_file(dir.path(), "d.nt", &format!("{DATA}this is not a triple\n"));
        let text = ".decl T(s: symbol, p: symbol, o: symbol)\n.input T(IO=\"rdf\", filename=\"d.nt\", lenient=\"true\")\n\
                    .decl knows(x: symbol, y: symbol)\n.input knows(IO=\"rdf\", filename=\"d.nt\", mapping=\"vocabulary\")\n";
        let (mut p, source) = program(text);
        let loaded = crate::read_inputs(&mut p, &source, dir.path()).unwrap();
        // One read: one file id, so the blank node is the same symbol in both relations.
        let knows = p.relation_id("knows").unwrap();
        let t = p.relation_id("T").unwrap();
        let of = |r: RelId| loaded.iter().find(|l| l.relation == r).unwrap();
        let b1 = p.symbols.lookup("_:f0_b1").unwrap();
        assert!(of(knows).tuples.iter().any(|row| row[1] == b1));
        assert!(of(t).tuples.iter().any(|row| row[0] == b1));
        assert_eq!(of(t).tuples.len(), 6);
        let notes: Vec<&String> = loaded.iter().flat_map(|l| &l.notes).collect();
        assert!(
            notes.iter().any(|n| n.contains("skipped 1 malformed")),
            "{notes:?}"
        );
        // Not lenient: the error names the file and line, and nothing is loaded.
        let (mut p, source) = program(&text.replace(", lenient=\"true\"", ""));
        let e = crate::read_inputs(&mut p, &source, dir.path()).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        assert!(e.file.ends_with("d.nt"));
        // IO=rdf needs a filename under `dynalog run`.
        let (mut p, source) =
            program(".decl T(s: symbol, p: symbol, o: symbol)\n.input T(IO=\"rdf\")\n");
        let e = crate::read_inputs(&mut p, &source, dir.path()).unwrap_err();
        assert!(e.message.contains("filename"), "{}", e.message);
    }
}
