//! Declarations: user-defined types (resolved to a primitive type), declared relations
//! and their qualifiers, relations declared implicitly by rules in the study's syntax,
//! `.input`/`.output`/`.printsize` directives, and the lookup of a relation by name (with
//! a "did you mean" hint) and of its arity.

use super::Checker;
use crate::ir::{IoSpec, RelId, Relation};
use crate::value::{Branch, RecordType, Type};
use dynalog_syntax::ast;
use dynalog_syntax::{Diagnostic, Span};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Names longer than this (in bytes) get no "did you mean" hint.
const MAX_HINT_LEN: usize = 64;

/// Levenshtein distance, for "did you mean" hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

impl Checker<'_> {
    pub(super) fn collect_types(&mut self, program: &ast::Program) -> Result<(), Diagnostic> {
        let decls: Vec<&ast::TypeDecl> = program
            .items
            .iter()
            .filter_map(|i| match i {
                ast::Item::Type(t) => Some(t),
                _ => None,
            })
            .collect();
        let mut by_name: FxHashMap<&str, &ast::TypeDecl> = FxHashMap::default();
        for d in &decls {
            if Type::from_name(&d.name.name).is_some() || by_name.contains_key(d.name.name.as_str())
            {
                return Err(self.err(
                    d.name.span,
                    format!("type `{}` is already defined", d.name.name),
                ));
            }
            by_name.insert(&d.name.name, d);
        }
        // Record and algebraic data types are types of their own, numbered in the table's
        // registry after the types it has; the others resolve to a primitive type or to
        // one of them.
        let record_decls: Vec<&ast::TypeDecl> = decls
            .iter()
            .copied()
            .filter(|d| d.shape != ast::TypeShape::Named)
            .collect();
        let key = types_key(&decls);
        let guess = self
            .symbols
            .type_set(&key)
            .unwrap_or(self.symbols.types_len());
        let (resolved, defs) = self.resolve_all(&decls, &record_decls, &by_name, guess)?;
        let base = self.symbols.define_types(&key, |_| defs.clone());
        // Another checker on the same table may have registered types in between.
        let shift = |t: Type| match t {
            Type::Record(i) => Type::Record(i - guess + base),
            t => t,
        };
        for (name, ty) in resolved {
            self.types.insert(name.to_string(), shift(ty));
        }
        for (i, d) in record_decls.iter().enumerate() {
            let ty = Type::Record(base + i as u32);
            for (b, c) in defs[i].branches.iter().enumerate() {
                if defs[i].adt {
                    if let Some((other, _)) = self.constructors.get(&c.name)
                        && *other != ty
                    {
                        let span = match &d.shape {
                            ast::TypeShape::Adt(cs) => cs[b].name.span,
                            _ => d.name.span,
                        };
                        return Err(
                            self.err(span, format!("constructor `{}` is declared twice", c.name))
                        );
                    }
                    self.constructors.insert(c.name.clone(), (ty, b as u32));
                }
            }
        }
        Ok(())
    }

    /// Every declared type resolved, record types numbered from `base`; and the
    /// definitions of the record types.
    fn resolve_all<'d>(
        &self,
        decls: &[&'d ast::TypeDecl],
        record_decls: &[&'d ast::TypeDecl],
        by_name: &FxHashMap<&str, &'d ast::TypeDecl>,
        base: u32,
    ) -> Result<(FxHashMap<&'d str, Type>, Vec<RecordType>), Diagnostic> {
        let mut resolved: FxHashMap<&str, Type> = FxHashMap::default();
        for (i, d) in record_decls.iter().enumerate() {
            resolved.insert(d.name.name.as_str(), Type::Record(base + i as u32));
        }
        for d in decls {
            let ty = self.resolve_type_decl(d, by_name, &mut resolved)?;
            resolved.insert(d.name.name.as_str(), ty);
        }
        let field_type = |ty: &ast::Ident| {
            Type::from_name(&ty.name)
                .or_else(|| resolved.get(ty.name.as_str()).copied())
                .ok_or_else(|| self.err(ty.span, format!("unknown type `{}`", ty.name)))
        };
        let fields = |fs: &[(ast::Ident, ast::Ident)]| -> Result<Vec<(String, Type)>, Diagnostic> {
            fs.iter()
                .map(|(f, t)| Ok((f.name.clone(), field_type(t)?)))
                .collect()
        };
        let mut defs = Vec::new();
        let mut seen: FxHashMap<&str, Span> = FxHashMap::default();
        for d in record_decls {
            defs.push(match &d.shape {
                ast::TypeShape::Record(fs) => RecordType {
                    name: d.name.name.clone(),
                    adt: false,
                    branches: vec![Branch {
                        name: String::new(),
                        fields: fields(fs)?,
                    }],
                },
                ast::TypeShape::Adt(cs) => {
                    let mut branches = Vec::new();
                    for c in cs {
                        if seen.insert(c.name.name.as_str(), c.name.span).is_some() {
                            return Err(self.err(
                                c.name.span,
                                format!("constructor `{}` is declared twice", c.name.name),
                            ));
                        }
                        branches.push(Branch {
                            name: c.name.name.clone(),
                            fields: fields(&c.fields)?,
                        });
                    }
                    RecordType {
                        name: d.name.name.clone(),
                        adt: true,
                        branches,
                    }
                }
                ast::TypeShape::Named => continue,
            });
        }
        Ok((resolved, defs))
    }

    /// The primitive type of a declared type, following the types it is defined in
    /// terms of depth first, in the order written. Iterative (a chain of thousands of
    /// `.type` declarations must not overflow the stack) and memoised in `resolved`
    /// (a union may name a type that others name too).
    fn resolve_type_decl<'d>(
        &self,
        d: &'d ast::TypeDecl,
        decls: &FxHashMap<&str, &'d ast::TypeDecl>,
        resolved: &mut FxHashMap<&'d str, Type>,
    ) -> Result<Type, Diagnostic> {
        if let Some(&t) = resolved.get(d.name.name.as_str()) {
            return Ok(t);
        }
        // The path of declarations being resolved: (declaration, next member, base so far).
        let mut path: Vec<(&ast::TypeDecl, usize, Option<Type>)> = vec![(d, 0, None)];
        let mut on_path: rustc_hash::FxHashSet<&str> = Default::default();
        on_path.insert(d.name.name.as_str());
        // The type of the member just finished, to merge into the declaration below it.
        let mut finished: Option<Type> = None;
        while let Some(&(decl, next, base)) = path.last() {
            let member = match finished.take() {
                Some(t) => Some(t),
                None => match decl.of.get(next) {
                    None => None,
                    Some(of) => match Type::from_name(&of.name)
                        .or_else(|| resolved.get(of.name.as_str()).copied())
                    {
                        Some(t) => Some(t),
                        None => match decls.get(of.name.as_str()) {
                            Some(&inner) => {
                                if !on_path.insert(inner.name.name.as_str()) {
                                    return Err(self.err(
                                        inner.name.span,
                                        format!(
                                            "type `{}` is defined in terms of itself",
                                            inner.name.name
                                        ),
                                    ));
                                }
                                path.push((inner, 0, None));
                                continue;
                            }
                            None => {
                                return Err(
                                    self.err(of.span, format!("unknown type `{}`", of.name))
                                );
                            }
                        },
                    },
                },
            };
            path.pop();
            match member {
                Some(t) => {
                    if let Some(b) = base
                        && b != t
                    {
                        return Err(self.err(
                            decl.of[next].span,
                            format!(
                                "type `{}` mixes {} and {}: a union's members must share one primitive type",
                                decl.name.name, b, t
                            ),
                        ));
                    }
                    path.push((decl, next + 1, Some(t)));
                }
                None => {
                    let base = base.ok_or_else(|| {
                        self.err(decl.span, "a type definition needs a base type")
                    })?;
                    resolved.insert(decl.name.name.as_str(), base);
                    on_path.remove(decl.name.name.as_str());
                    finished = Some(base);
                }
            }
        }
        finished.ok_or_else(|| self.err(d.span, "a type definition needs a base type"))
    }

    /// A record or algebraic data type's declared name (`record` for an unknown one).
    pub(super) fn type_name(&self, ty: Type) -> String {
        match ty {
            Type::Record(t) => self
                .symbols
                .record_type(t)
                .map_or_else(|| "record".to_string(), |rt| rt.name),
            t => t.name().to_string(),
        }
    }

    fn type_named(&self, name: &ast::Ident) -> Result<Type, Diagnostic> {
        Type::from_name(&name.name)
            .or_else(|| self.types.get(&name.name).copied())
            .ok_or_else(|| {
                self.err(
                    name.span,
                    format!(
                        "unknown type `{}` (expected number, unsigned, float, symbol or a declared .type)",
                        name.name
                    ),
                )
            })
    }

    fn add_relation(&mut self, rel: Relation) -> RelId {
        let id = self.relations.len() as RelId;
        self.by_name.insert(rel.name.clone(), id);
        self.relations.push(rel);
        id
    }

    pub(super) fn collect_decls(&mut self, program: &ast::Program) -> Result<(), Diagnostic> {
        for item in &program.items {
            let ast::Item::Decl(d) = item else { continue };
            if let Some(&prev) = self.by_name.get(&d.name.name) {
                let first = self.relations[prev as usize].span.start;
                let (line, _) = self.file.line_col(first);
                // In a preprocessed program the first declaration may be in another file.
                let (first_file, _) = self.file.origin(first, false);
                let (this_file, _) = self.file.origin(d.name.span.start, false);
                let at = if first_file.name == this_file.name {
                    format!("line {line}")
                } else {
                    format!("{}:{line}", first_file.name)
                };
                return Err(self.err(
                    d.name.span,
                    format!(
                        "relation `{}` is declared twice (first on {at})",
                        d.name.name
                    ),
                ));
            }
            let mut names = Vec::new();
            let mut types = Vec::new();
            let mut seen: rustc_hash::FxHashSet<&str> = Default::default();
            for (attr, ty) in &d.columns {
                if !seen.insert(attr.name.as_str()) {
                    return Err(self.err(
                        attr.span,
                        format!(
                            "attribute `{}` appears twice in `{}`",
                            attr.name, d.name.name
                        ),
                    ));
                }
                names.push(attr.name.clone());
                types.push(self.type_named(ty)?);
            }
            let mut rel = Relation {
                name: d.name.name.clone(),
                column_names: names,
                types,
                inputs: vec![],
                outputs: vec![],
                printsize: false,
                implicit: false,
                eqrel: false,
                span: d.name.span,
            };
            for q in &d.qualifiers {
                let spec = IoSpec {
                    params: BTreeMap::new(),
                    span: q.span,
                };
                match q.name.as_str() {
                    "input" => rel.inputs.push(spec),
                    "output" => rel.outputs.push(spec),
                    "printsize" => rel.printsize = true,
                    "btree" | "brie" | "btree_delete" | "inline" | "no_inline" | "magic"
                    | "no_magic" | "overridable" => {}
                    "eqrel" => {
                        self.check_eqrel(d, &rel, q.span)?;
                        rel.eqrel = true;
                    }
                    other => {
                        return Err(
                            self.err(q.span, format!("unknown relation qualifier `{other}`"))
                        );
                    }
                }
            }
            self.add_relation(rel);
        }
        Ok(())
    }

    /// Relations used by rules in the study's syntax need no declaration: every column
    /// is a symbol, the arity is that of the first use, and each such relation is read
    /// from `NAME.facts` if that file exists and written as output.
    pub(super) fn declare_implicit(&mut self, program: &ast::Program) -> Result<(), Diagnostic> {
        for item in &program.items {
            let ast::Item::Rule(rule) = item else {
                continue;
            };
            if rule.style != ast::Style::Paper {
                continue;
            }
            let atoms =
                std::iter::once(&rule.head).chain(rule.body.iter().filter_map(|l| match l {
                    ast::Literal::Positive(a) | ast::Literal::Negative(a, _) => Some(a),
                    ast::Literal::Compare { .. } => None,
                }));
            for atom in atoms {
                if self.by_name.contains_key(&atom.relation.name) {
                    continue;
                }
                let n = atom.args.len();
                let mut optional = BTreeMap::new();
                optional.insert("optional".to_string(), "true".to_string());
                self.add_relation(Relation {
                    name: atom.relation.name.clone(),
                    column_names: (0..n).map(|i| format!("c{i}")).collect(),
                    types: vec![Type::Symbol; n],
                    inputs: vec![IoSpec {
                        params: optional,
                        span: atom.relation.span,
                    }],
                    outputs: vec![IoSpec {
                        params: BTreeMap::new(),
                        span: atom.relation.span,
                    }],
                    printsize: false,
                    implicit: true,
                    eqrel: false,
                    span: atom.relation.span,
                });
            }
        }
        Ok(())
    }

    pub(super) fn lookup(&self, name: &ast::Ident) -> Result<RelId, Diagnostic> {
        if let Some(&id) = self.by_name.get(&name.name) {
            return Ok(id);
        }
        // Edit distances of long names would cost their product in time; a typo hint
        // is for names a person types.
        let hint = self
            .relations
            .iter()
            .filter(|r| r.name.len() <= MAX_HINT_LEN && name.name.len() <= MAX_HINT_LEN)
            .map(|r| (distance(&r.name, &name.name), &r.name))
            .filter(|(d, n)| *d <= 2 && *d < n.len())
            .min()
            .map(|(_, n)| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        Err(self.err(
            name.span,
            format!(
                "relation `{}` is not declared; add `.decl {}(...)`{hint}",
                name.name, name.name
            ),
        ))
    }

    pub(super) fn apply_directives(&mut self, program: &ast::Program) -> Result<(), Diagnostic> {
        for item in &program.items {
            let ast::Item::Directive(d) = item else {
                continue;
            };
            let mut params = BTreeMap::new();
            let rdf = d.kind == ast::DirectiveKind::Input
                && d.params
                    .iter()
                    .any(|(k, v)| k.name == "IO" && v.as_str() == "rdf");
            for (key, value) in &d.params {
                let allowed: &[&str] = match d.kind {
                    // RDF inputs (read by the io crate's `rdf` module).
                    ast::DirectiveKind::Input if rdf => &[
                        "IO",
                        "filename",
                        "mapping",
                        "namespace",
                        "format",
                        "base",
                        "lenient",
                    ],
                    ast::DirectiveKind::Input | ast::DirectiveKind::Output => {
                        &["IO", "filename", "delimiter", "headers"]
                    }
                    ast::DirectiveKind::PrintSize => &[],
                };
                if !allowed.contains(&key.name.as_str()) {
                    return Err(self.err(
                        key.span,
                        if allowed.is_empty() {
                            "`.printsize` takes no options".to_string()
                        } else {
                            format!(
                                "option `{}` is not supported (supported: {})",
                                key.name,
                                allowed.join(", ")
                            )
                        },
                    ));
                }
                match (key.name.as_str(), value.as_str(), d.kind) {
                    ("IO", "file", _)
                    | ("IO", "stdout", ast::DirectiveKind::Output)
                    | ("IO", "rdf", ast::DirectiveKind::Input) => {}
                    ("IO", other, _) => {
                        return Err(self.err(
                            key.span,
                            format!(
                                "IO={other} is not supported here (use IO=file{})",
                                if d.kind == ast::DirectiveKind::Output {
                                    " or IO=stdout"
                                } else {
                                    " or IO=rdf"
                                }
                            ),
                        ));
                    }
                    ("mapping", v, _) if v != "triples" && v != "vocabulary" => {
                        return Err(self.err(
                            key.span,
                            format!("mapping must be \"triples\" or \"vocabulary\", not {v:?}"),
                        ));
                    }
                    ("format", v, _) if !["ntriples", "turtle", "nt", "ttl"].contains(&v) => {
                        return Err(self.err(
                            key.span,
                            format!("format must be \"ntriples\" or \"turtle\", not {v:?}"),
                        ));
                    }
                    ("lenient", v, _) if v != "true" && v != "false" => {
                        return Err(self.err(key.span, "lenient must be true or false"));
                    }
                    ("delimiter", v, _) if v.chars().count() != 1 => {
                        return Err(self.err(
                            key.span,
                            format!("delimiter must be one character, not {v:?}"),
                        ));
                    }
                    ("headers", v, _) if v != "true" && v != "false" => {
                        return Err(self.err(key.span, "headers must be true or false"));
                    }
                    _ => {}
                }
                params.insert(key.name.clone(), value.clone());
            }
            for name in &d.relations {
                let id = self.lookup(name)? as usize;
                let spec = IoSpec {
                    params: params.clone(),
                    span: d.span,
                };
                let rel = &mut self.relations[id];
                match d.kind {
                    ast::DirectiveKind::Input => {
                        if rel.implicit {
                            rel.inputs.clear();
                        }
                        rel.inputs.push(spec)
                    }
                    ast::DirectiveKind::Output => {
                        if rel.implicit {
                            rel.outputs.clear();
                        }
                        rel.outputs.push(spec)
                    }
                    ast::DirectiveKind::PrintSize => rel.printsize = true,
                }
            }
        }
        Ok(())
    }

    pub(super) fn check_arity(&self, atom: &ast::Atom, id: RelId) -> Result<(), Diagnostic> {
        let rel = &self.relations[id as usize];
        if atom.args.len() != rel.arity() {
            return Err(self.err(
                atom.span,
                format!(
                    "relation `{}` has {} column{} but is used here with {} argument{}",
                    rel.name,
                    rel.arity(),
                    if rel.arity() == 1 { "" } else { "s" },
                    atom.args.len(),
                    if atom.args.len() == 1 { "" } else { "s" },
                ),
            ));
        }
        Ok(())
    }
}

/// The canonical text of a program's type declarations: programs with the same text
/// have the same record types.
fn types_key(decls: &[&ast::TypeDecl]) -> String {
    use std::fmt::Write;
    let mut key = String::new();
    let list = |fs: &[(ast::Ident, ast::Ident)]| {
        fs.iter()
            .map(|(f, t)| format!("{}:{}", f.name, t.name))
            .collect::<Vec<_>>()
            .join(",")
    };
    for d in decls {
        let _ = write!(key, "{}=", d.name.name);
        match &d.shape {
            ast::TypeShape::Named => {
                let of: Vec<&str> = d.of.iter().map(|o| o.name.as_str()).collect();
                let _ = write!(key, "{}", of.join("|"));
            }
            ast::TypeShape::Record(fs) => {
                let _ = write!(key, "[{}]", list(fs));
            }
            ast::TypeShape::Adt(cs) => {
                for c in cs {
                    let _ = write!(key, "{}{{{}}}|", c.name.name, list(&c.fields));
                }
            }
        }
        key.push(';');
    }
    key
}
