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
//! unload RDF files into a running program.

use crate::Tuples;
use dynalog_analysis::{IoSpec, Program, RelId, Type, Value};
use dynalog_syntax::{Diagnostic, SourceFile};
use oxrdf::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, TermRef, Triple};
use oxttl::{NTriplesParser, TurtleParseError, TurtleParser};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The namespaces written as prefixed names, in the order they are tried.
pub const PREFIXES: [(&str, &str); 4] = [
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

/// The full IRI of `rdf:type`.
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// The syntax of an RDF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdfFormat {
    NTriples,
    Turtle,
}

impl RdfFormat {
    /// `ntriples` / `nt` or `turtle` / `ttl`.
    pub fn from_name(name: &str) -> Option<RdfFormat> {
        match name.to_ascii_lowercase().as_str() {
            "ntriples" | "n-triples" | "nt" => Some(RdfFormat::NTriples),
            "turtle" | "ttl" => Some(RdfFormat::Turtle),
            _ => None,
        }
    }

    /// By extension, ignoring a final `.gz`: `.nt` is N-Triples, `.ttl` Turtle.
    pub fn from_path(path: &Path) -> Option<RdfFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let ext = name.rsplit_once('.')?.1;
        RdfFormat::from_name(ext)
    }
}

/// How a file is read.
#[derive(Clone, Debug, Default)]
pub struct RdfOptions {
    /// Base IRI for relative IRIs; `None`: the file's `file://` URI.
    pub base: Option<String>,
    /// Skip and count malformed lines instead of failing.
    pub lenient: bool,
    /// `None`: by extension.
    pub format: Option<RdfFormat>,
    /// Number of the file among those loaded into one program: blank node `_:b` of the
    /// file becomes `_:f<file_id>_b`. Load a file again with the same id to get the
    /// same symbols (e.g. to unload it).
    pub file_id: u32,
}

/// What [`read_triples`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Triples read (duplicates included).
    pub triples: usize,
    /// Malformed statements skipped (only with [`RdfOptions::lenient`]).
    pub skipped: usize,
    /// The first skipped error, for the warning.
    pub first_skipped: Option<String>,
}

/// The symbol of a term (see the module docs).
pub fn term_symbol(term: TermRef<'_>, file_id: u32) -> String {
    match term {
        TermRef::NamedNode(n) => iri_symbol(n.as_str()),
        TermRef::BlankNode(b) => format!("_:f{file_id}_{}", b.as_str()),
        TermRef::Literal(l) => l.to_string(),
    }
}

/// The symbol of an IRI: a prefixed name in the rdf, rdfs, owl and xsd namespaces,
/// otherwise the IRI itself.
pub fn iri_symbol(iri: &str) -> String {
    for (prefix, ns) in PREFIXES {
        if let Some(local) = iri.strip_prefix(ns) {
            return format!("{prefix}:{local}");
        }
    }
    iri.to_string()
}

/// The IRI a symbol stands for when it is not a literal or a blank node: prefixed
/// names of the four namespaces are expanded, anything else is taken as it is.
pub fn symbol_iri(symbol: &str) -> String {
    if let Some((prefix, local)) = symbol.split_once(':') {
        for (p, ns) in PREFIXES {
            if p == prefix {
                return format!("{ns}{local}");
            }
        }
    }
    symbol.to_string()
}

/// The term a symbol stands for (the inverse of [`term_symbol`]); an error when the
/// symbol is not the form of any RDF term (e.g. `"unclosed`, or `hello`, not an IRI).
pub fn symbol_term(symbol: &str) -> Result<Term, String> {
    if symbol.starts_with('"') {
        return parse_literal(symbol).map(Term::Literal);
    }
    if let Some(label) = symbol.strip_prefix("_:") {
        return BlankNode::new(label)
            .map(Term::BlankNode)
            .map_err(|e| format!("`{symbol}` is not a blank node: {e}"));
    }
    NamedNode::new(symbol_iri(symbol))
        .map(Term::NamedNode)
        .map_err(|e| {
            format!("`{symbol}` is not an RDF term (an absolute IRI, `_:b` or a literal): {e}")
        })
}

/// Parse a literal in N-Triples form: a quoted string with escapes, then nothing,
/// `@lang` or `^^<datatype IRI>`.
fn parse_literal(text: &str) -> Result<Literal, String> {
    let bad = |why: &str| format!("`{text}` is not a literal: {why}");
    let mut value = String::new();
    let mut chars = text.char_indices().skip(1);
    let end = loop {
        let Some((i, c)) = chars.next() else {
            return Err(bad("no closing quote"));
        };
        match c {
            '"' => break i + 1,
            '\\' => {
                let Some((_, e)) = chars.next() else {
                    return Err(bad("a backslash ends it"));
                };
                match e {
                    't' => value.push('\t'),
                    'b' => value.push('\u{8}'),
                    'n' => value.push('\n'),
                    'r' => value.push('\r'),
                    'f' => value.push('\u{C}'),
                    '"' => value.push('"'),
                    '\'' => value.push('\''),
                    '\\' => value.push('\\'),
                    'u' | 'U' => {
                        let n = if e == 'u' { 4 } else { 8 };
                        let hex: String = chars.by_ref().take(n).map(|(_, c)| c).collect();
                        let code = (hex.len() == n)
                            .then(|| u32::from_str_radix(&hex, 16).ok())
                            .flatten()
                            .and_then(char::from_u32)
                            .ok_or_else(|| bad("a bad \\u escape"))?;
                        value.push(code);
                    }
                    _ => return Err(bad("an unknown escape")),
                }
            }
            c => value.push(c),
        }
    };
    let rest = &text[end..];
    if rest.is_empty() {
        Ok(Literal::new_simple_literal(value))
    } else if let Some(lang) = rest.strip_prefix('@') {
        Literal::new_language_tagged_literal(value, lang).map_err(|e| bad(&e.to_string()))
    } else if let Some(dt) = rest.strip_prefix("^^<").and_then(|r| r.strip_suffix('>')) {
        let dt = NamedNode::new(dt).map_err(|e| bad(&e.to_string()))?;
        Ok(Literal::new_typed_literal(value, dt))
    } else {
        Err(bad("unexpected text after the closing quote"))
    }
}

/// A triple of symbols as an N-Triples line (with its final ` .` but no newline).
/// An error when a symbol is not an RDF term, or the subject is a literal or the
/// predicate not an IRI (such generalized triples cannot be written as N-Triples).
pub fn ntriples_line(s: &str, p: &str, o: &str) -> Result<String, String> {
    let subject: NamedOrBlankNode = match symbol_term(s)? {
        Term::NamedNode(n) => n.into(),
        Term::BlankNode(b) => b.into(),
        _ => return Err(format!("the subject `{s}` is a literal")),
    };
    let predicate = match symbol_term(p)? {
        Term::NamedNode(n) => n,
        _ => return Err(format!("the predicate `{p}` is not an IRI")),
    };
    let object = symbol_term(o)?;
    Ok(format!("{} .", Triple::new(subject, predicate, object)))
}

/// The file's `file://` URI (absolute, percent-encoded), the default base IRI.
pub fn file_uri(path: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    });
    let mut uri = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = std::fs::File::open(path)?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(file),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    })
}

/// Stream the triples of `path` into `f`. Errors name the file, line and column.
pub fn read_triples(
    path: &Path,
    options: &RdfOptions,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let name = path.display().to_string();
    let format = match options.format.or_else(|| RdfFormat::from_path(path)) {
        Some(format) => format,
        None => {
            return Err(Diagnostic::line(
                &name,
                1,
                1,
                "unknown RDF format: name the file `.nt` or `.ttl` (optionally `.gz`), or give `format=\"ntriples\"|\"turtle\"`",
            ));
        }
    };
    let base = options.base.clone().unwrap_or_else(|| file_uri(path));
    let base_iri = oxiri::Iri::parse(base.clone())
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("bad base IRI `{base}`: {e}")))?;
    let mut reader = open(path)
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("cannot read the file: {e}")))?;
    // A UTF-8 byte order mark is not in either grammar, but common: skip it.
    let bom = reader
        .fill_buf()
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("read error: {e}")))?
        .starts_with(b"\xEF\xBB\xBF");
    if bom {
        reader.consume(3);
    }
    match format {
        RdfFormat::NTriples => read_ntriples(reader, &name, &base_iri, options.lenient, f),
        RdfFormat::Turtle => read_turtle(reader, &name, &base, options.lenient, f),
    }
}

/// N-Triples, line by line: each line is parsed on its own, so an error has the line's
/// number and a malformed line can be skipped without losing the rest. A line that
/// fails only because of relative IRIs is parsed again with them resolved.
fn read_ntriples(
    mut reader: Box<dyn BufRead>,
    name: &str,
    base: &oxiri::Iri<String>,
    lenient: bool,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let mut stats = ReadStats::default();
    let mut line = Vec::new();
    let mut lineno = 0usize;
    let mut triples = Vec::new();
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Diagnostic::line(name, lineno + 1, 1, format!("read error: {e}")))?;
        if n == 0 {
            break;
        }
        lineno += 1;
        triples.clear();
        let error = match parse_nt_line(&line, &mut triples) {
            Ok(()) => None,
            Err((col, message)) => match resolve_relative(&line, base) {
                Some(Ok(resolved)) => {
                    triples.clear();
                    parse_nt_line(resolved.as_bytes(), &mut triples)
                        .err()
                        .map(|_| (col, message))
                }
                Some(Err(reason)) => Some((col, reason)),
                None => Some((col, message)),
            },
        };
        if let Some((col, message)) = error {
            if !lenient {
                return Err(Diagnostic::line(name, lineno, col, message));
            }
            stats.skipped += 1;
            if stats.first_skipped.is_none() {
                stats.first_skipped = Some(format!("{name}:{lineno}:{col}: {message}"));
            }
            continue;
        }
        for t in &triples {
            stats.triples += 1;
            f(t);
        }
    }
    Ok(stats)
}

/// Parse one N-Triples line into `out`; on error the (1-based) column and the reason.
fn parse_nt_line(line: &[u8], out: &mut Vec<Triple>) -> Result<(), (usize, String)> {
    for t in NTriplesParser::new().for_slice(line) {
        match t {
            Ok(t) => out.push(t),
            Err(e) => {
                return Err((
                    e.location().start.column as usize + 1,
                    e.message().to_string(),
                ));
            }
        }
    }
    Ok(())
}

/// If the line has IRI references without a scheme (`<>`, `<a/b>`), the line with
/// them resolved against `base` (`Some(Err)` when one cannot be resolved); `None` when
/// it has none. String literals are skipped, so a `<` inside quotes is left alone.
fn resolve_relative(line: &[u8], base: &oxiri::Iri<String>) -> Option<Result<String, String>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut changed = false;
    let mut rest = text;
    while let Some(i) = rest.find(['"', '<']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with('"') {
            // Copy the literal through its closing quote.
            let mut end = tail.len();
            let mut escaped = false;
            for (j, c) in tail.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    end = j + 1;
                    break;
                }
            }
            out.push_str(&tail[..end]);
            rest = &tail[end..];
            continue;
        }
        let Some(close) = tail.find('>') else {
            out.push_str(tail);
            rest = "";
            break;
        };
        let iri = &tail[1..close];
        if oxiri::Iri::parse(iri).is_ok() {
            out.push_str(&tail[..=close]);
        } else {
            match base.resolve(iri) {
                Ok(resolved) => {
                    out.push('<');
                    out.push_str(resolved.as_str());
                    out.push('>');
                    changed = true;
                }
                Err(e) => {
                    return Some(Err(format!(
                        "the IRI <{iri}> is neither absolute nor relative to the base <{}>: {e}",
                        base.as_str()
                    )));
                }
            }
        }
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    changed.then_some(Ok(out))
}

fn read_turtle(
    reader: Box<dyn BufRead>,
    name: &str,
    base: &str,
    lenient: bool,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let parser = TurtleParser::new()
        .with_base_iri(base)
        .map_err(|e| Diagnostic::line(name, 1, 1, format!("bad base IRI `{base}`: {e}")))?;
    let mut stats = ReadStats::default();
    let mut last_error_line = None;
    for t in parser.for_reader(reader) {
        match t {
            Ok(t) => {
                stats.triples += 1;
                f(&t);
            }
            Err(TurtleParseError::Io(e)) => {
                return Err(Diagnostic::line(name, 1, 1, format!("read error: {e}")));
            }
            Err(TurtleParseError::Syntax(e)) => {
                let start = e.location().start;
                let (line, col) = (start.line as usize + 1, start.column as usize + 1);
                if !lenient {
                    return Err(Diagnostic::line(name, line, col, e.message()));
                }
                // One count per malformed statement: the parser may report a few
                // errors while it recovers on the same line.
                if last_error_line != Some(line) {
                    stats.skipped += 1;
                    last_error_line = Some(line);
                }
                if stats.first_skipped.is_none() {
                    stats.first_skipped = Some(format!("{name}:{line}:{col}: {}", e.message()));
                }
            }
        }
    }
    Ok(stats)
}

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

/// Split an IRI into namespace and local name (after the last `#` or `/`).
pub fn split_iri(iri: &str) -> (&str, &str) {
    match iri.rfind(['#', '/']) {
        Some(i) => (&iri[..=i], &iri[i + 1..]),
        None => ("", iri),
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
    let mut intern = |term: TermRef<'_>| -> Value { symbols.intern(&term_symbol(term, file_id)) };
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

/// Options of a directive, on top of `defaults`: `base`, `lenient`, `format`.
pub fn options_of(spec: &IoSpec, defaults: &RdfOptions) -> RdfOptions {
    let mut o = defaults.clone();
    if let Some(b) = spec.get("base") {
        o.base = Some(b.to_string());
    }
    if let Some(l) = spec.get("lenient") {
        o.lenient = l == "true";
    }
    if let Some(f) = spec.get("format").and_then(RdfFormat::from_name) {
        o.format = Some(f);
    }
    o
}

/// Where an `IO="rdf"` directive's file is: its `filename`, relative to `fact_dir`.
pub fn rdf_path(fact_dir: &Path, spec: &IoSpec) -> Option<PathBuf> {
    spec.get("filename").map(|f| fact_dir.join(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn triples_of(
        path: &Path,
        options: &RdfOptions,
    ) -> Result<(Vec<Triple>, ReadStats), Diagnostic> {
        let mut out = Vec::new();
        let stats = read_triples(path, options, &mut |t| out.push(t.clone()))?;
        Ok((out, stats))
    }

    fn program(text: &str) -> (Program, SourceFile) {
        let source = SourceFile::new("test.dl", text);
        let ast = dynalog_syntax::parse(&source).unwrap();
        let program = dynalog_analysis::analyse(&source, &ast).unwrap();
        (program, source)
    }

    /// The facts of a load as sorted, readable rows: `rel(a, b)`.
    fn rows(program: &Program, load: &RdfLoad) -> Vec<String> {
        let mut out = Vec::new();
        for (rel, tuples) in &load.batches {
            for t in tuples.iter() {
                let args: Vec<&str> = t.iter().map(|&v| program.symbols.resolve(v)).collect();
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

    const DATA: &str = r#"<http://ex.org/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex.org/voc#Person> .
<http://ex.org/a> <http://ex.org/voc#knows> _:b1 .
_:b1 <http://www.w3.org/2000/01/rdf-schema#label> "Bob \"the\" builder\\\n\t\u00e9 😀 \u0001"@en-GB .
_:b1 <http://ex.org/other#age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
_:b1 <http://ex.org/voc#name> "plain"^^<http://www.w3.org/2001/XMLSchema#string> .
<http://ex.org/voc#Person> <http://www.w3.org/2000/01/rdf-schema#subClassOf> <http://www.w3.org/2002/07/owl#Thing> .
"#;

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

    #[test]
    fn symbols_that_are_not_terms_are_errors() {
        assert!(symbol_term("hello").is_err());
        assert!(symbol_term("\"unclosed").is_err());
        assert!(symbol_term("\"x\"@").is_err());
        assert!(symbol_term("\"x\"junk").is_err());
        assert!(symbol_term("\"bad \\q escape\"").is_err());
        assert_eq!(
            symbol_term("xsd:integer").unwrap(),
            Term::NamedNode(NamedNode::new("http://www.w3.org/2001/XMLSchema#integer").unwrap())
        );
        assert!(ntriples_line("\"lit\"", "rdf:type", "owl:Thing").is_err());
        assert!(ntriples_line("_:x", "_:p", "owl:Thing").is_err());
        assert_eq!(
            ntriples_line("_:x", "rdf:type", "\"a\\u0041\"").unwrap(),
            "_:x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> \"aA\" ."
        );
    }

    #[test]
    fn relative_iris_resolve_against_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let text = "<> <http://ex.org/p> <rel/x> .\n<http://ex.org/s> <http://ex.org/p> \"a <> in a \\\" literal\" .\n";
        let path = write_file(dir.path(), "r.nt", text);
        let with_base = RdfOptions {
            base: Some("http://base.org/dir/doc".into()),
            ..RdfOptions::default()
        };
        let (t, _) = triples_of(&path, &with_base).unwrap();
        assert_eq!(t[0].subject.to_string(), "<http://base.org/dir/doc>");
        assert_eq!(t[0].object.to_string(), "<http://base.org/dir/rel/x>");
        assert_eq!(t[1].object.to_string(), "\"a <> in a \\\" literal\"");
        // Default base: the file's own file:// URI.
        let (t, _) = triples_of(&path, &RdfOptions::default()).unwrap();
        let uri = file_uri(&path);
        assert!(
            uri.starts_with("file:///") && uri.ends_with("/r.nt"),
            "{uri}"
        );
        assert_eq!(t[0].subject.to_string(), format!("<{uri}>"));
        // Turtle resolves with the same base.
        let ttl = write_file(dir.path(), "r.ttl", "<> <http://ex.org/p> <x> .\n");
        let (t, _) = triples_of(&ttl, &with_base).unwrap();
        assert_eq!(t[0].object.to_string(), "<http://base.org/dir/x>");
        // A bad base is an error, not a panic.
        let bad = RdfOptions {
            base: Some("not a base".into()),
            ..RdfOptions::default()
        };
        assert!(triples_of(&path, &bad).is_err());
    }

    #[test]
    fn malformed_lines_are_errors_with_their_position_or_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let text = "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n\
                    <http://ex.org/s> <http://ex.org/p> \"unterminated .\n\
                    # a comment\n\
                    <http://ex.org/s> <http://ex.org/p> <http://ex.org/o2> .\n\
                    <http://ex.org/s> http://ex.org/p <http://ex.org/o> .\n";
        let path = write_file(dir.path(), "bad.nt", text);
        let e = triples_of(&path, &RdfOptions::default()).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.col > 1, "{e}");
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}:2:", path.display())),
            "{shown}"
        );
        assert!(shown.contains(": error: "), "{shown}");
        let lenient = RdfOptions {
            lenient: true,
            ..RdfOptions::default()
        };
        let (t, stats) = triples_of(&path, &lenient).unwrap();
        assert_eq!((t.len(), stats.skipped, stats.triples), (2, 2, 2));
        assert!(stats.first_skipped.unwrap().contains(":2:"));
        // Turtle: the line of the error too.
        let ttl = write_file(
            dir.path(),
            "bad.ttl",
            "@prefix ex: <http://ex.org/> .\nex:s ex:p ex:o .\nex:s ex:p .\nex:s ex:p ex:o2 .\nex:s ex:p ex:o3 .\n",
        );
        let e = triples_of(&ttl, &RdfOptions::default()).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let (t, stats) = triples_of(&ttl, &lenient).unwrap();
        assert!(stats.skipped >= 1);
        // The parser resumes after the next `.`: here the one ending the o2 statement.
        assert!(
            t.iter()
                .any(|t| t.object.to_string() == "<http://ex.org/o3>"),
            "{t:?} {stats:?}"
        );
        // Unknown extension, missing file: errors.
        let txt = write_file(dir.path(), "x.txt", "");
        assert!(
            triples_of(&txt, &RdfOptions::default())
                .unwrap_err()
                .message
                .contains("format")
        );
        assert!(triples_of(&dir.path().join("none.nt"), &RdfOptions::default()).is_err());
    }

    #[test]
    fn gzip_is_read_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.nt.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(DATA.as_bytes()).unwrap();
        gz.finish().unwrap();
        assert_eq!(RdfFormat::from_path(&path), Some(RdfFormat::NTriples));
        let (t, _) = triples_of(&path, &RdfOptions::default()).unwrap();
        assert_eq!(t.len(), 6);
        // A byte order mark before the first line is skipped, in both syntaxes.
        for name in ["bom.nt", "bom.ttl"] {
            let bom = write_file(dir.path(), name, &format!("\u{feff}{DATA}"));
            assert_eq!(triples_of(&bom, &RdfOptions::default()).unwrap().0.len(), 6);
        }
        // Not gzip inside: a read error, not a panic.
        let fake = write_file(dir.path(), "fake.ttl.gz", "not gzip");
        assert!(triples_of(&fake, &RdfOptions::default()).is_err());
    }

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
