//! RDF terms as symbols and back (the table in the [module docs](super)): IRIs,
//! prefixed names of the rdf, rdfs, owl and xsd namespaces, blank nodes with their
//! per-file label, literals in their N-Triples form; and triples of symbols as
//! N-Triples lines.

use dynalog_analysis::{SymbolTable, SymbolsRead, Texts, Value};
use oxrdf::{BlankNode, Literal, NamedNode, NamedOrBlankNode, Term, TermRef, Triple};
use std::collections::HashMap;
use std::fmt;

/// The namespaces written as prefixed names, in the order they are tried.
pub const PREFIXES: [(&str, &str); 4] = [
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

/// The full IRI of `rdf:type`.
pub const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";

/// Why a symbol or a triple of symbols cannot be written as RDF.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TermError {
    /// `_:label` with a label that is no blank node label (the parser's reason).
    NotBlankNode { symbol: String, reason: String },
    /// A symbol that is neither an absolute IRI, a prefixed name, `_:b` nor a literal.
    NotTerm { symbol: String, reason: String },
    /// A symbol starting with `"` that is no literal in N-Triples form.
    NotLiteral { text: String, reason: String },
    /// A triple whose subject is a literal.
    LiteralSubject(String),
    /// A triple whose predicate is a literal or a blank node.
    PredicateNotIri(String),
}

impl fmt::Display for TermError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TermError::NotBlankNode { symbol, reason } => {
                write!(f, "`{symbol}` is not a blank node: {reason}")
            }
            TermError::NotTerm { symbol, reason } => write!(
                f,
                "`{symbol}` is not an RDF term (an absolute IRI, `_:b` or a literal): {reason}"
            ),
            TermError::NotLiteral { text, reason } => {
                write!(f, "`{text}` is not a literal: {reason}")
            }
            TermError::LiteralSubject(s) => write!(f, "the subject `{s}` is a literal"),
            TermError::PredicateNotIri(p) => write!(f, "the predicate `{p}` is not an IRI"),
        }
    }
}

impl std::error::Error for TermError {}

/// The symbol of a term (see the module docs).
pub fn term_symbol(term: TermRef<'_>, file_id: u32) -> String {
    let mut symbol = String::new();
    term_symbol_into(term, file_id, &mut symbol);
    symbol
}

/// [`term_symbol`] appended to `out`, without a `String` of its own (a load makes one
/// symbol per term it reads).
pub fn term_symbol_into(term: TermRef<'_>, file_id: u32, out: &mut String) {
    use std::fmt::Write as _;
    // Writing to a `String` cannot fail.
    match term {
        TermRef::NamedNode(n) => push_iri_symbol(n.as_str(), out),
        TermRef::BlankNode(b) => {
            let _ = write!(out, "_:f{file_id}_{}", b.as_str());
        }
        TermRef::Literal(l) => {
            let _ = write!(out, "{l}");
        }
    }
}

/// The symbol of an IRI: a prefixed name in the rdf, rdfs, owl and xsd namespaces,
/// otherwise the IRI itself.
pub fn iri_symbol(iri: &str) -> String {
    let mut symbol = String::new();
    push_iri_symbol(iri, &mut symbol);
    symbol
}

/// [`iri_symbol`] appended to `out`.
fn push_iri_symbol(iri: &str, out: &mut String) {
    for (prefix, ns) in PREFIXES {
        if let Some(local) = iri.strip_prefix(ns) {
            out.push_str(prefix);
            out.push(':');
            out.push_str(local);
            return;
        }
    }
    out.push_str(iri);
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
pub fn symbol_term(symbol: &str) -> Result<Term, TermError> {
    if symbol.starts_with('"') {
        return parse_literal(symbol).map(Term::Literal);
    }
    if let Some(label) = symbol.strip_prefix("_:") {
        return BlankNode::new(label)
            .map(Term::BlankNode)
            .map_err(|e| TermError::NotBlankNode {
                symbol: symbol.to_string(),
                reason: e.to_string(),
            });
    }
    NamedNode::new(symbol_iri(symbol))
        .map(Term::NamedNode)
        .map_err(|e| TermError::NotTerm {
            symbol: symbol.to_string(),
            reason: e.to_string(),
        })
}

/// Parse a literal in N-Triples form: a quoted string with escapes, then nothing,
/// `@lang` or `^^<datatype IRI>`.
fn parse_literal(text: &str) -> Result<Literal, TermError> {
    let bad = |why: &str| TermError::NotLiteral {
        text: text.to_string(),
        reason: why.to_string(),
    };
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
pub fn ntriples_line(s: &str, p: &str, o: &str) -> Result<String, TermError> {
    let subject: NamedOrBlankNode = match symbol_term(s)? {
        Term::NamedNode(n) => n.into(),
        Term::BlankNode(b) => b.into(),
        _ => return Err(TermError::LiteralSubject(s.to_string())),
    };
    let predicate = match symbol_term(p)? {
        Term::NamedNode(n) => n,
        _ => return Err(TermError::PredicateNotIri(p.to_string())),
    };
    let object = symbol_term(o)?;
    Ok(format!("{} .", Triple::new(subject, predicate, object)))
}

/// Writes triples of interned symbols as N-Triples lines, checking and rendering each
/// symbol once however many triples it is in (the output of a materialization repeats
/// its predicates and classes millions of times).
///
/// The rendered terms lie end to end in one [`Texts`]: a `String` per term (with an
/// `Option<Result<..>>` slot of 32 bytes for every symbol of the table) held about
/// 100 bytes a term, and raised the peak of writing LUBM(50)'s inferred triples by
/// 100 MB above the evaluation's.
pub struct NTriplesWriter<'a> {
    symbols: &'a SymbolTable,
    /// Per symbol: [`NOT_RENDERED`], [`NOT_A_TERM`] (the reason in `errors`), or the
    /// index of its term in `terms`.
    slots: Vec<u32>,
    terms: Texts,
    errors: HashMap<Value, TermError>,
}

const NOT_RENDERED: u32 = u32::MAX;
const NOT_A_TERM: u32 = u32::MAX - 1;

impl<'a> NTriplesWriter<'a> {
    pub fn new(symbols: &'a SymbolTable) -> NTriplesWriter<'a> {
        NTriplesWriter {
            symbols,
            slots: vec![NOT_RENDERED; symbols.len()],
            terms: Texts::default(),
            errors: HashMap::new(),
        }
    }

    /// The N-Triples line of `s p o` (with its final ` .`, no newline), or why it
    /// cannot be written: a literal subject, a predicate that is not an IRI, a symbol
    /// that is no RDF term.
    pub fn line(&mut self, triple: [Value; 3]) -> Result<String, TermError> {
        for v in triple {
            self.render(v);
        }
        Ok(self.line_pieces(triple, &self.symbols.read())?.concat())
    }

    /// The pieces of a triple's line (`s`, ` `, `p`, ` `, `o`, ` .`), its symbols
    /// rendered before ([`NTriplesWriter::render`]), or why it cannot be written (as
    /// [`NTriplesWriter::line`] says). Takes `&self`, so that several threads make lines
    /// with one writer; `symbols` is a read lock on the writer's table, held for many
    /// triples.
    pub fn line_pieces(
        &self,
        [s, p, o]: [Value; 3],
        symbols: &SymbolsRead<'_>,
    ) -> Result<[&str; 6], TermError> {
        let (ss, ps) = (symbols.resolve(s), symbols.resolve(p));
        if ss.starts_with('"') {
            return Err(TermError::LiteralSubject(ss.to_string()));
        }
        if ps.starts_with('"') || ps.starts_with("_:") {
            return Err(TermError::PredicateNotIri(ps.to_string()));
        }
        Ok([self.term(s)?, " ", self.term(p)?, " ", self.term(o)?, " ."])
    }

    /// The table whose symbols this writer renders.
    pub fn symbols(&self) -> &SymbolTable {
        self.symbols
    }

    /// The rendered term of `v`, or why it is none.
    fn term(&self, v: Value) -> Result<&str, TermError> {
        if let Some(text) = self.rendered(v) {
            return Ok(text);
        }
        Err(match self.errors.get(&v) {
            Some(e) => e.clone(),
            None => TermError::NotTerm {
                symbol: self.symbols.resolve(v),
                reason: "not rendered".into(),
            },
        })
    }

    /// Check and render a symbol as a term, once.
    pub fn render(&mut self, v: Value) {
        if self.slots.get(v as usize) != Some(&NOT_RENDERED) {
            return;
        }
        let symbols = self.symbols.read();
        match symbol_term(symbols.resolve(v)) {
            Ok(term) => {
                self.slots[v as usize] = self.terms.len() as u32;
                self.terms.push_with(|bytes| {
                    use std::fmt::Write as _;
                    // Writing to a `String` cannot fail.
                    let _ = write!(bytes, "{term}");
                });
            }
            Err(e) => {
                self.slots[v as usize] = NOT_A_TERM;
                self.errors.insert(v, e);
            }
        }
    }

    /// [`NTriplesWriter::render`] every symbol of `values`, on up to `threads` threads
    /// (each checks and renders a part into a buffer of its own; the terms are then
    /// added in order): LUBM(50)'s output has 1.6M symbols.
    pub fn render_all(&mut self, values: &[Value], threads: usize) {
        let todo: Vec<Value> = values
            .iter()
            .copied()
            .filter(|&v| self.slots.get(v as usize) == Some(&NOT_RENDERED))
            .collect();
        let per_thread = todo.len().div_ceil(threads.max(1)).max(1);
        let symbols = self.symbols;
        let render_part = |part: &[Value]| {
            let symbols = symbols.read();
            let mut texts = Texts::default();
            let mut errors = Vec::new();
            for &v in part {
                match symbol_term(symbols.resolve(v)) {
                    Ok(term) => texts.push_with(|bytes| {
                        use std::fmt::Write as _;
                        // Writing to a `String` cannot fail.
                        let _ = write!(bytes, "{term}");
                    }),
                    Err(e) => {
                        texts.push("");
                        errors.push((v, e));
                    }
                }
            }
            (texts, errors)
        };
        let parts: Vec<(Texts, Vec<(Value, TermError)>)> = std::thread::scope(|s| {
            let handles: Vec<_> = todo
                .chunks(per_thread)
                .map(|part| s.spawn(move || render_part(part)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for (part, (texts, errors)) in todo.chunks(per_thread).zip(parts) {
            let mut errors = errors.into_iter().peekable();
            for (i, &v) in part.iter().enumerate() {
                let error = errors.next_if(|(e, _)| *e == v).map(|(_, e)| e);
                if self.slots[v as usize] != NOT_RENDERED {
                    continue; // a symbol given twice
                }
                match error {
                    Some(e) => {
                        self.slots[v as usize] = NOT_A_TERM;
                        self.errors.insert(v, e);
                    }
                    None => {
                        self.slots[v as usize] = self.terms.len() as u32;
                        self.terms.push(texts.text(i));
                    }
                }
            }
        }
    }

    /// The term of a symbol [`NTriplesWriter::render`] rendered, if it is one.
    pub fn rendered(&self, v: Value) -> Option<&str> {
        self.terms.get(*self.slots.get(v as usize)? as usize)
    }
}

/// Split an IRI into namespace and local name (after the last `#` or `/`).
pub fn split_iri(iri: &str) -> (&str, &str) {
    match iri.rfind(['#', '/']) {
        Some(i) => (&iri[..=i], &iri[i + 1..]),
        None => ("", iri),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_rendered_on_several_threads_are_rendered_as_one_by_one() {
        let symbols = SymbolTable::new();
        let mut values: Vec<Value> = (0..1000)
            .map(|i| match i % 4 {
                0 => symbols.intern(&format!("http://example.org/{i}")),
                1 => symbols.intern(&format!("\"literal {i}\"@en")),
                2 => symbols.intern(&format!("not a term {i}")),
                _ => symbols.intern(&format!("_:b{i}")),
            })
            .collect();
        values.push(values[2]); // a symbol given twice, one that is no term
        values.push(values[0]);
        let mut one = NTriplesWriter::new(&symbols);
        for &v in &values {
            one.render(v);
        }
        for threads in [1, 3] {
            let mut several = NTriplesWriter::new(&symbols);
            several.render(values[5]); // rendered before: kept
            several.render_all(&values, threads);
            for &v in &values {
                assert_eq!(several.rendered(v), one.rendered(v), "{threads} threads");
                assert_eq!(several.term(v), one.term(v), "{threads} threads");
            }
            // Each symbol rendered once: as many terms and errors as one by one.
            assert_eq!(several.terms.len(), one.terms.len(), "{threads} threads");
            assert_eq!(several.errors.len(), 250, "{threads} threads");
        }
    }

    #[test]
    fn the_writer_renders_as_ntriples_line_does() {
        let symbols = SymbolTable::new();
        let id = |s: &str| symbols.intern(s);
        let (x, ty, lit, thing, bad) = (
            id("_:x"),
            id("rdf:type"),
            id("\"a\\u0041\""),
            id("owl:Thing"),
            id("hello"),
        );
        let mut w = NTriplesWriter::new(&symbols);
        for t in [[x, ty, lit], [x, ty, thing]] {
            let [s, p, o] = t.map(|v| symbols.resolve(v));
            assert_eq!(w.line(t), ntriples_line(&s, &p, &o));
        }
        assert_eq!(
            w.line([lit, ty, thing]).unwrap_err().to_string(),
            "the subject `\"a\\u0041\"` is a literal"
        );
        assert_eq!(
            w.line([x, x, thing]).unwrap_err(),
            TermError::PredicateNotIri("_:x".into())
        );
        assert!(matches!(
            w.line([x, ty, bad]),
            Err(TermError::NotTerm { .. })
        ));
    }

    #[test]
    fn symbols_that_are_not_terms_are_errors() {
        assert!(symbol_term("hello").is_err());
        assert!(symbol_term("\"unclosed").is_err());
        assert!(symbol_term("\"x\"@").is_err());
        assert!(symbol_term("\"x\"junk").is_err());
        assert!(symbol_term("\"bad \\q escape\"").is_err());
        assert_eq!(
            symbol_term("\"unclosed").unwrap_err().to_string(),
            "`\"unclosed` is not a literal: no closing quote"
        );
        let e = symbol_term("hello").unwrap_err().to_string();
        assert!(
            e.starts_with("`hello` is not an RDF term (an absolute IRI, `_:b` or a literal): "),
            "{e}"
        );
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
}
