//! Soufflé's components, expanded at parse time into an ordinary flat program.
//!
//! ```text
//! comp     := ".comp" NAME ["<" NAME ("," NAME)* ">"] [":" compref ("," compref)*]
//!             "{" (item | comp | init | ".override" NAME)* "}"
//! init     := ".init" NAME "=" compref
//! compref  := NAME ["<" NAME ("," NAME)* ">"]
//! ```
//!
//! Nothing after the parser sees a component: [`crate::parse`] returns the program with
//! every `.init inst = C` replaced by the items of `C`'s instance, as Soufflé 2.5 does:
//!
//! * Every relation and type declared in `C` (or inherited by it, or declared by an
//!   instance that `C` itself makes) is renamed `inst.name`; so are the references to
//!   them in `C`'s rules, declarations and `.input`/`.output`/`.printsize` directives.
//!   A name that `C` does not declare is left as written: it refers to the scope
//!   around the instance (the enclosing component's, and so on out to the program's).
//!   Nested instances compose: `o.i.s` is the relation `s` of the instance `i` made
//!   inside the instance `o`.
//! * `.comp B : A, C { ... }` starts `B` with the whole content of `A` and of `C`
//!   (declarations, rules, directives). A rule in `B` for an inherited relation is
//!   added to the inherited rules; `.override r` in `B` drops the rules for `r` written
//!   in the bodies of the bases (and of their bases; its declaration there must carry
//!   the `overridable` qualifier, as in Soufflé). As in Soufflé, it keeps the rules for
//!   `r` that come from an instance made in a base (`.init i = I` in `A`, where `I`
//!   does not declare `r` and writes rules for it), and `B`'s own rules.
//! * `.comp G<T> { ... }` is generic: `.init x = G<number>` substitutes the argument
//!   for `T` wherever a type is named (column types, `.type` definitions) and wherever
//!   a component is named (`.comp C<K> : K { }`, `.init k = K`).
//! * Components are looked up in the component where the reference is written (its
//!   nested `.comp`s), then outward.
//!
//! A qualified name (`a.b`, `o.i.s`) is one name in atoms, declarations, directives and
//! type names when written without spaces around its dots (Soufflé also accepts
//! `a . b`, which dynalog does not: a `.` followed by a space ends a rule).
//!
//! The expanded items keep the spans of the text they come from, inside the component's
//! body, so that later diagnostics point there. [`Components::bodies`] lists the spans
//! of the `.comp` declarations, for tools that edit the program text by item span
//! (live sessions): an item inside one of them is a template, not written once.
//!
//! Errors are located: an unknown component, a wrong number of type arguments, an
//! instance name used twice in one scope, a component declared twice in one scope,
//! `.override` of a relation that no base declares (or declares without
//! `overridable`), cyclic inheritance, a component that instantiates itself, and an
//! expansion deeper than [`MAX_COMPONENT_DEPTH`] or larger than
//! [`MAX_EXPANDED_ITEMS`] items (or [`MAX_EXPANDED_TEXT`] bytes of their text).

use std::collections::{HashMap, HashSet};

use super::{PResult, Parser};
use crate::ast::{Ident, Item, Program};
use crate::lexer::TokenKind;
use crate::source::Span;

/// How deeply instances, bases and `.comp` declarations may nest.
pub const MAX_COMPONENT_DEPTH: usize = 64;

/// How many items expanding the components may copy in all (counting the copies made
/// at every level of nesting), so that a program of a few lines cannot make billions
/// (`.comp A1 { .init x = A0 .init y = A0 }`, `.comp A2 { ... A1 ... }`, ...).
pub const MAX_EXPANDED_ITEMS: usize = 200_000;

/// How much text the items that expanding the components copies may have been written
/// with, in all (each copy counts its item's span): bounds the copies of a few large
/// rules as [`MAX_EXPANDED_ITEMS`] bounds the copies of many small ones.
pub const MAX_EXPANDED_TEXT: usize = 64 << 20;

/// What the parser saw of components, beyond the flat program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Components {
    /// The spans of the top-level `.comp` declarations (from `.comp` to `}`), in order.
    pub bodies: Vec<Span>,
}

impl Components {
    /// Whether `span` lies inside a component's declaration.
    pub fn contains(&self, span: Span) -> bool {
        self.bodies
            .iter()
            .any(|b| b.start <= span.start && span.end <= b.end)
    }
}

/// One thing written at the top level or in a component's body.
#[derive(Clone, Debug)]
pub(super) enum Entry {
    Item(Item),
    Comp(CompDecl),
    Init(Init),
    Override(Ident),
}

/// `Name<args>`: a reference to a component.
#[derive(Clone, Debug)]
pub(super) struct CompRef {
    name: Ident,
    args: Vec<Ident>,
    span: Span,
}

#[derive(Clone, Debug)]
pub(super) struct CompDecl {
    name: Ident,
    params: Vec<Ident>,
    bases: Vec<CompRef>,
    body: Vec<Entry>,
    span: Span,
}

#[derive(Clone, Debug)]
pub(super) struct Init {
    name: Ident,
    comp: CompRef,
    span: Span,
}

// ---- parsing ----------------------------------------------------------------------

impl Parser<'_> {
    /// The top level, expanded (see the module documentation).
    pub(super) fn program_with_components(&mut self) -> PResult<(Program, Components)> {
        let entries = self.entries(None, 0)?;
        let bodies = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Comp(c) => Some(c.span),
                _ => None,
            })
            .collect();
        let items = Expander::new(self, &entries)?.top(&entries)?;
        Ok((Program { items }, Components { bodies }))
    }

    /// Entries up to the end of input (`comp` is `None`), or up to the `}` closing the
    /// body of the component `comp`, which is consumed.
    fn entries(&mut self, comp: Option<&Ident>, nesting: usize) -> PResult<Vec<Entry>> {
        let mut entries = Vec::new();
        loop {
            match self.peek_kind()? {
                TokenKind::Eof => match comp {
                    None => return Ok(entries),
                    Some(c) => {
                        return Err(self.missing(&format!(
                            "`}}` closing the body of the component `{}`",
                            c.name
                        )));
                    }
                },
                TokenKind::RBrace if comp.is_some() => {
                    self.bump()?;
                    return Ok(entries);
                }
                TokenKind::Dot => {
                    let dot = self.bump()?;
                    let keyword = match self.peek()? {
                        tok if tok.span.start == dot.span.end => match &tok.kind {
                            TokenKind::Ident(k) => Some((k.clone(), tok.span)),
                            _ => None,
                        },
                        _ => None,
                    };
                    match keyword {
                        Some((k, _)) if k == "comp" => {
                            self.bump()?;
                            entries.push(Entry::Comp(self.comp_decl(dot.span, nesting + 1)?));
                        }
                        Some((k, _)) if k == "init" => {
                            self.bump()?;
                            entries.push(Entry::Init(self.init(dot.span)?));
                        }
                        Some((k, span)) if k == "override" => {
                            self.bump()?;
                            if comp.is_none() {
                                return Err(self.error(
                                    dot.span.to(span),
                                    "`.override` is only allowed in the body of a component",
                                ));
                            }
                            let name = self.expect_ident("a relation name after `.override`")?;
                            entries.push(Entry::Override(name));
                        }
                        Some((k, span)) if k == "pragma" && comp.is_some() => {
                            return Err(self.error(
                                dot.span.to(span),
                                "`.pragma` is not allowed in the body of a component",
                            ));
                        }
                        _ => entries.extend(self.directive(dot)?.into_iter().map(Entry::Item)),
                    }
                }
                TokenKind::Ident(_) => {
                    let name = self.bump()?;
                    entries.extend(
                        self.rule(name)?
                            .into_iter()
                            .map(|r| Entry::Item(Item::Rule(r))),
                    );
                }
                _ if comp.is_some() => {
                    return Err(self.expected("a rule, a fact, a directive or `}`"));
                }
                _ => return Err(self.expected("a rule, a fact or a directive")),
            }
        }
    }

    /// A component declaration, after `.comp`.
    fn comp_decl(&mut self, start: Span, nesting: usize) -> PResult<CompDecl> {
        let name = self.expect_ident("a component name after `.comp`")?;
        if nesting > MAX_COMPONENT_DEPTH {
            return Err(self.error(
                name.span,
                format!("components nested too deeply (more than {MAX_COMPONENT_DEPTH} levels)"),
            ));
        }
        let params = self.type_args("a type parameter name")?;
        let mut bases = Vec::new();
        if self.eat(&TokenKind::Colon)?.is_some() {
            loop {
                bases.push(self.comp_ref("a base component name")?);
                if self.eat(&TokenKind::Comma)?.is_none() {
                    break;
                }
            }
        }
        self.expect(
            &TokenKind::LBrace,
            &format!("`{{` opening the body of the component `{}`", name.name),
        )?;
        let body = self.entries(Some(&name), nesting)?;
        Ok(CompDecl {
            name,
            params,
            bases,
            body,
            span: self.span_from(start),
        })
    }

    /// `inst = Comp<args>`, after `.init`.
    fn init(&mut self, start: Span) -> PResult<Init> {
        let name = self.expect_ident("an instance name after `.init`")?;
        self.expect(
            &TokenKind::Eq,
            &format!("`=` and a component after `.init {}`", name.name),
        )?;
        let comp = self.comp_ref("a component name")?;
        Ok(Init {
            name,
            comp,
            span: self.span_from(start),
        })
    }

    /// `Name` or `Name<arg, ...>`.
    fn comp_ref(&mut self, what: &str) -> PResult<CompRef> {
        let name = self.expect_ident(what)?;
        let args = self.type_args("a type or component name")?;
        Ok(CompRef {
            span: self.span_from(name.span),
            name,
            args,
        })
    }

    /// `<a, b, ...>` if it comes next (each possibly qualified), or nothing.
    fn type_args(&mut self, what: &str) -> PResult<Vec<Ident>> {
        let mut args = Vec::new();
        if self.eat(&TokenKind::Lt)?.is_some() {
            loop {
                let arg = self.expect_ident(what)?;
                args.push(self.qualify(arg)?);
                if self.eat(&TokenKind::Comma)?.is_some() {
                    continue;
                }
                self.expect(&TokenKind::Gt, "`,` or `>`")?;
                break;
            }
        }
        Ok(args)
    }

    /// Whether a qualified name (`a.b`, written without spaces) comes next.
    pub(super) fn qualified_name_follows(&mut self) -> PResult<bool> {
        let first = self.peek()?.clone();
        if !matches!(first.kind, TokenKind::Ident(_)) {
            return Ok(false);
        }
        let mut ahead = self.lexer;
        let dot = ahead.next_token()?;
        if dot.kind != TokenKind::Dot || dot.span.start != first.span.end {
            return Ok(false);
        }
        let next = ahead.next_token()?;
        Ok(matches!(next.kind, TokenKind::Ident(_)) && next.span.start == dot.span.end)
    }

    /// `first` extended by the `.name` parts that follow it without spaces: the
    /// qualified name `first.b.c`.
    pub(super) fn qualify(&mut self, first: Ident) -> PResult<Ident> {
        let mut ident = first;
        loop {
            let dot = self.peek()?.clone();
            if dot.kind != TokenKind::Dot || dot.span.start != ident.span.end {
                return Ok(ident);
            }
            let mut ahead = self.lexer;
            let next = ahead.next_token()?;
            let TokenKind::Ident(part) = next.kind else {
                return Ok(ident);
            };
            if next.span.start != dot.span.end {
                return Ok(ident);
            }
            self.bump()?;
            self.bump()?;
            ident.name.push('.');
            ident.name.push_str(&part);
            ident.span = ident.span.to(next.span);
        }
    }
}

// ---- expansion --------------------------------------------------------------------

/// A component declaration, with where it is declared.
struct Comp<'e> {
    decl: &'e CompDecl,
    /// The component whose body declares it (`None`: the top level).
    parent: Option<usize>,
}

/// Type parameters bound to the names given for them.
type Binding = HashMap<String, Ident>;

/// Where an item of a component's content comes from, for `.override`.
#[derive(Clone, Copy, PartialEq)]
enum Origin {
    /// Written in the body of the component or of one of its bases: a `.override` in
    /// a component deriving from it drops it (if it is a rule for the overridden
    /// relation).
    Body,
    /// Made by an instance (`.init`) in the component or in one of its bases: a
    /// `.override` never drops it, as in Soufflé (whose overrides filter only the
    /// clauses of the components' bodies).
    Instance,
}

struct Expander<'p, 'a, 'e> {
    parser: &'p Parser<'a>,
    comps: Vec<Comp<'e>>,
    /// The components (and their arguments) being expanded, outermost first.
    stack: Vec<(usize, Vec<String>)>,
    /// Items copied so far (see [`MAX_EXPANDED_ITEMS`]).
    copied: usize,
    /// The text of the items copied so far (see [`MAX_EXPANDED_TEXT`]).
    copied_text: usize,
}

impl<'p, 'a, 'e> Expander<'p, 'a, 'e> {
    /// Collects every component declaration; refuses one declared twice in a scope.
    fn new(parser: &'p Parser<'a>, entries: &'e [Entry]) -> PResult<Self> {
        let mut ex = Expander {
            parser,
            comps: Vec::new(),
            stack: Vec::new(),
            copied: 0,
            copied_text: 0,
        };
        ex.declare(entries, None)?;
        Ok(ex)
    }

    fn declare(&mut self, entries: &'e [Entry], parent: Option<usize>) -> PResult<()> {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for entry in entries {
            if let Entry::Comp(decl) = entry {
                if let Some(first) = seen.insert(&decl.name.name, decl.name.span) {
                    let (line, _) = self.parser.file.line_col(first.start);
                    return Err(self.parser.error(
                        decl.name.span,
                        format!(
                            "the component `{}` is already declared (line {line})",
                            decl.name.name
                        ),
                    ));
                }
                self.comps.push(Comp { decl, parent });
                let index = self.comps.len() - 1;
                self.declare(&decl.body, Some(index))?;
            }
        }
        Ok(())
    }

    /// The top level: its items, with each instance's items where its `.init` is.
    fn top(&mut self, entries: &'e [Entry]) -> PResult<Vec<Item>> {
        check_instance_names(self.parser, entries)?;
        let mut items = Vec::new();
        for entry in entries {
            match entry {
                Entry::Item(item) => items.push(item.clone()),
                Entry::Init(init) => items.extend(self.instantiate(init, None, &Binding::new())?),
                Entry::Comp(_) | Entry::Override(_) => {}
            }
        }
        Ok(items)
    }

    /// The component named by `r` from the scope `scope` (its nested components, then
    /// outward), with its arguments bound in `binding`.
    fn resolve(
        &self,
        r: &CompRef,
        scope: Option<usize>,
        binding: &Binding,
    ) -> PResult<(usize, Binding, Vec<String>)> {
        let name = binding.get(&r.name.name).unwrap_or(&r.name).name.clone();
        let mut at = scope;
        let found = loop {
            if let Some(i) = self
                .comps
                .iter()
                .position(|c| c.parent == at && c.decl.name.name == name)
            {
                break i;
            }
            match at {
                Some(s) => at = self.comps[s].parent,
                None => {
                    return Err(self
                        .parser
                        .error(r.name.span, format!("unknown component `{name}`")));
                }
            }
        };
        let params = &self.comps[found].decl.params;
        if params.len() != r.args.len() {
            let n = params.len();
            return Err(self.parser.error(
                r.span,
                format!(
                    "the component `{name}` takes {n} type argument{}, {} given",
                    if n == 1 { "" } else { "s" },
                    r.args.len()
                ),
            ));
        }
        let args: Vec<Ident> = r.args.iter().map(|a| substitute(a, binding)).collect();
        let names = args.iter().map(|a| a.name.clone()).collect();
        let mut inner = binding.clone();
        for (p, a) in params.iter().zip(args) {
            inner.insert(p.name.clone(), a);
        }
        Ok((found, inner, names))
    }

    /// Enter the component `comp` (with `args`) for an instance or a base at `at`.
    fn enter(&mut self, comp: usize, args: Vec<String>, at: Span, base: bool) -> PResult<()> {
        let name = &self.comps[comp].decl.name.name;
        if self.stack.iter().any(|(c, a)| *c == comp && *a == args) {
            let msg = if base {
                format!("cyclic inheritance: the component `{name}` inherits from itself")
            } else {
                format!("the component `{name}` instantiates itself")
            };
            return Err(self.parser.error(at, msg));
        }
        if self.stack.len() >= MAX_COMPONENT_DEPTH {
            return Err(self.parser.error(
                at,
                format!(
                    "components nested too deeply: more than {MAX_COMPONENT_DEPTH} levels of \
                     instances and bases"
                ),
            ));
        }
        self.stack.push((comp, args));
        Ok(())
    }

    /// Counts copies of `items` against the bounds; `at`: the instance being made.
    fn count<'i>(&mut self, items: impl IntoIterator<Item = &'i Item>, at: Span) -> PResult<()> {
        let (n, text) = items.into_iter().fold((0usize, 0usize), |(n, text), i| {
            let len = (i.span().end.saturating_sub(i.span().start) as usize).max(1);
            (n.saturating_add(1), text.saturating_add(len))
        });
        self.copied = self.copied.saturating_add(n);
        self.copied_text = self.copied_text.saturating_add(text);
        if self.copied > MAX_EXPANDED_ITEMS {
            return Err(self.parser.error(
                at,
                format!("expanding the components makes more than {MAX_EXPANDED_ITEMS} items"),
            ));
        }
        if self.copied_text > MAX_EXPANDED_TEXT {
            return Err(self.parser.error(
                at,
                format!(
                    "expanding the components copies more than {} MiB of rules and declarations",
                    MAX_EXPANDED_TEXT >> 20
                ),
            ));
        }
        Ok(())
    }

    /// The items of the instance `init`, written in the scope `scope`.
    fn instantiate(
        &mut self,
        init: &Init,
        scope: Option<usize>,
        binding: &Binding,
    ) -> PResult<Vec<Item>> {
        let (comp, inner, args) = self.resolve(&init.comp, scope, binding)?;
        self.enter(comp, args, init.span, false)?;
        let content = self.content(comp, &inner, init.span)?;
        self.stack.pop();
        let mut items: Vec<Item> = content.into_iter().map(|(item, _)| item).collect();
        qualify_items(&mut items, &init.name.name);
        Ok(items)
    }

    /// The content of the component `comp` with its parameters bound in `binding`:
    /// its bases' content, then its own items and instances, in its own names, each
    /// with where it comes from.
    fn content(
        &mut self,
        comp: usize,
        binding: &Binding,
        at: Span,
    ) -> PResult<Vec<(Item, Origin)>> {
        let decl = self.comps[comp].decl;
        let parent = self.comps[comp].parent;
        let mut inherited = Vec::new();
        for base in &decl.bases {
            let (b, inner, args) = self.resolve(base, parent, binding)?;
            self.enter(b, args, base.span, true)?;
            let items = self.content(b, &inner, at)?;
            self.stack.pop();
            self.count(items.iter().map(|(item, _)| item), at)?;
            inherited.extend(items);
        }
        check_instance_names(self.parser, &decl.body)?;
        let mut overridden = HashSet::new();
        for entry in &decl.body {
            if let Entry::Override(r) = entry {
                let base_decl = inherited.iter().find_map(|(item, _)| match item {
                    Item::Decl(d) if d.name.name == r.name => Some(d),
                    _ => None,
                });
                match base_decl {
                    None => {
                        return Err(self.parser.error(
                            r.span,
                            format!(
                                "`.override {}`: no base component of `{}` declares `{}`",
                                r.name, decl.name.name, r.name
                            ),
                        ));
                    }
                    Some(d) if !d.qualifiers.iter().any(|q| q.name == "overridable") => {
                        return Err(self.parser.error(
                            r.span,
                            format!(
                                "`.override {}`: the relation is not declared `overridable` \
                                 in its base component",
                                r.name
                            ),
                        ));
                    }
                    Some(_) => {
                        overridden.insert(r.name.as_str());
                    }
                }
            }
        }
        // Only the rules written in the bases' bodies are dropped: those that an
        // instance made in a base writes for `r` (which its component does not
        // declare) stay.
        let mut items: Vec<(Item, Origin)> = inherited
            .into_iter()
            .filter(|(item, origin)| match item {
                Item::Rule(rule) => {
                    *origin == Origin::Instance
                        || !overridden.contains(rule.head.relation.name.as_str())
                }
                _ => true,
            })
            .collect();
        for entry in &decl.body {
            match entry {
                Entry::Item(item) => {
                    self.count([item], at)?;
                    items.push((bind_types(item, binding), Origin::Body));
                }
                Entry::Init(init) => {
                    let instance = self.instantiate(init, Some(comp), binding)?;
                    self.count(&instance, at)?;
                    items.extend(instance.into_iter().map(|item| (item, Origin::Instance)));
                }
                Entry::Comp(_) | Entry::Override(_) => {}
            }
        }
        Ok(items)
    }
}

/// Refuses an instance name given twice in one scope.
fn check_instance_names(parser: &Parser<'_>, entries: &[Entry]) -> PResult<()> {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for entry in entries {
        if let Entry::Init(init) = entry
            && let Some(first) = seen.insert(&init.name.name, init.name.span)
        {
            let (line, _) = parser.file.line_col(first.start);
            return Err(parser.error(
                init.name.span,
                format!(
                    "the instance name `{}` is already used (line {line})",
                    init.name.name
                ),
            ));
        }
    }
    Ok(())
}

/// `name` with a type parameter replaced by its argument (keeping where it is written).
fn substitute(name: &Ident, binding: &Binding) -> Ident {
    match binding.get(&name.name) {
        Some(arg) => Ident {
            name: arg.name.clone(),
            span: name.span,
        },
        None => name.clone(),
    }
}

/// `item` with the type parameters in its type positions replaced.
fn bind_types(item: &Item, binding: &Binding) -> Item {
    let mut item = item.clone();
    if binding.is_empty() {
        return item;
    }
    match &mut item {
        Item::Type(t) => {
            for of in t.type_refs_mut() {
                *of = substitute(of, binding);
            }
        }
        Item::Decl(d) => {
            for (_, ty) in &mut d.columns {
                *ty = substitute(ty, binding);
            }
        }
        Item::Directive(_) | Item::Rule(_) | Item::Pragma(_) => {}
    }
    item
}

/// Renames the relations and types that `items` declare to `instance.name`, and every
/// reference to them.
fn qualify_items(items: &mut [Item], instance: &str) {
    let mut relations = HashSet::new();
    let mut types = HashSet::new();
    for item in items.iter() {
        match item {
            Item::Decl(d) => {
                relations.insert(d.name.name.clone());
            }
            Item::Type(t) => {
                types.insert(t.name.name.clone());
            }
            _ => {}
        }
    }
    let rename = |ident: &mut Ident, names: &HashSet<String>| {
        if names.contains(&ident.name) {
            ident.name = format!("{instance}.{}", ident.name);
        }
    };
    for item in items.iter_mut() {
        match item {
            Item::Type(t) => {
                rename(&mut t.name, &types);
                for of in t.type_refs_mut() {
                    rename(of, &types);
                }
            }
            Item::Decl(d) => {
                rename(&mut d.name, &relations);
                for (_, ty) in &mut d.columns {
                    rename(ty, &types);
                }
            }
            Item::Directive(d) => {
                for r in &mut d.relations {
                    rename(r, &relations);
                }
            }
            // Every atom, also in the rule's aggregates.
            Item::Rule(rule) => {
                rule.for_each_atom_mut(&mut |a| rename(&mut a.relation, &relations))
            }
            Item::Pragma(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ast::{Item, Rule};
    use crate::source::{Diagnostic, SourceFile};
    use crate::{Program, parse, parse_with_components};

    fn parse_ok(text: &str) -> Program {
        match parse(&SourceFile::new("t.dl", text)) {
            Ok(p) => p,
            Err(e) => panic!("unexpected error:\n{e}"),
        }
    }

    #[track_caller]
    fn assert_err(text: &str, line: usize, col: usize, message: &str) {
        let e: Diagnostic = match parse(&SourceFile::new("t.dl", text)) {
            Ok(p) => panic!("expected an error for {text:?}, got {p:#?}"),
            Err(e) => e,
        };
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (line, col, message),
            "for {text:?}:\n{e}"
        );
    }

    /// The program's items, one line each: declarations with their column types,
    /// types, directives, and rules in canonical form.
    fn show(text: &str) -> Vec<String> {
        parse_ok(text)
            .items
            .iter()
            .map(|item| match item {
                Item::Decl(d) => {
                    let cols: Vec<String> = d
                        .columns
                        .iter()
                        .map(|(a, t)| format!("{}:{}", a.name, t.name))
                        .collect();
                    format!(".decl {}({})", d.name.name, cols.join(","))
                }
                Item::Type(t) => {
                    let of: Vec<&str> = t.of.iter().map(|o| o.name.as_str()).collect();
                    format!(".type {} = {}", t.name.name, of.join("|"))
                }
                Item::Directive(d) => {
                    let rels: Vec<&str> = d.relations.iter().map(|r| r.name.as_str()).collect();
                    format!("{:?} {}", d.kind, rels.join(","))
                }
                Item::Rule(r) => r.canonical(),
                Item::Pragma(p) => format!(".pragma {}", p.key),
            })
            .collect()
    }

    #[test]
    fn qualified_names_in_atoms_decls_directives_and_types() {
        assert_eq!(
            show(
                ".decl a.r(x: t.T)\n.output a.r\n.type u.U <: v.V\nb(x) :- a.r(x), !c.d.e(x).\na.r(1)."
            ),
            [
                ".decl a.r(x:t.T)",
                "Output a.r",
                ".type u.U = v.V",
                "b(v0) :- a.r(v0), !c.d.e(v0).",
                "a.r(1).",
            ]
        );
        // With spaces, a `.` ends the rule or starts a directive, as before.
        assert_eq!(
            show(".output r\n.decl s(x: number)\na(x) :- b(x), x = y.c(1)."),
            [
                "Output r",
                ".decl s(x:number)",
                "a(v0) :- b(v0), v0 = v1.",
                "c(1)."
            ]
        );
    }

    #[test]
    fn an_instance_renames_what_the_component_declares() {
        let text = "\
.decl e(x: number)
.comp A {
  .type T = number
  .decl r(x: T)
  .decl s(x: number)
  r(x) :- e(x).
  s(x) :- r(x), !e(x).
  .output s
}
.init a = A
.init b = A
out(x) :- a.s(x).
";
        assert_eq!(
            show(text),
            [
                ".decl e(x:number)",
                ".type a.T = number",
                ".decl a.r(x:a.T)",
                ".decl a.s(x:number)",
                "a.r(v0) :- e(v0).",
                "a.s(v0) :- a.r(v0), !e(v0).",
                "Output a.s",
                ".type b.T = number",
                ".decl b.r(x:b.T)",
                ".decl b.s(x:number)",
                "b.r(v0) :- e(v0).",
                "b.s(v0) :- b.r(v0), !e(v0).",
                "Output b.s",
                "out(v0) :- a.s(v0).",
            ]
        );
    }

    #[test]
    fn expanded_items_keep_the_spans_of_the_component_body() {
        let text = ".comp A {\n  .decl r(x: number)\n  r(1).\n}\n.init a = A\n.init b = A\n";
        let (program, components) =
            parse_with_components(&SourceFile::new("t.dl", text)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(components.bodies.len(), 1);
        let rules: Vec<&Rule> = program
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Rule(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(rules.len(), 2);
        for r in &rules {
            assert_eq!(&text[r.span.start as usize..r.span.end as usize], "r(1).");
            assert!(components.contains(r.span));
            assert!(r.renamed_in(text));
        }
        // The text of an instance's rule has the instance's names.
        assert_eq!(rules[0].text_of_parts(text), "a.r(1).");
        assert_eq!(rules[1].text_of_parts(text), "b.r(1).");
        let text =
            ".comp A {\n  .decl r(x: number)\n  r(x) :- e(x), ! r( x ), x > 1.\n}\n.init a = A\n";
        let program = parse_ok(text);
        let Some(Item::Rule(rule)) = program.items.get(1) else {
            panic!("{program:?}")
        };
        assert_eq!(
            rule.text_of_parts(text),
            "a.r(x) :- e(x), !a.r( x ), x > 1."
        );
        // Written once, as written.
        let text = "r(x) :- e(x), ! r( x ).";
        let program = parse_ok(text);
        let Some(Item::Rule(rule)) = program.items.first() else {
            panic!("{program:?}")
        };
        assert!(!rule.renamed_in(text));
        assert_eq!(rule.text_of_parts(text), text);
    }

    #[test]
    fn nested_instances_resolve_names_outward() {
        let text = "\
.decl r(x: number)
.comp Inner {
  .decl s(x: number)
  s(x) :- r(x).
}
.comp Outer {
  .decl r(x: number)
  r(1).
  .init i = Inner
  .decl t(x: number)
  t(x) :- i.s(x).
}
.init o = Outer
.init top = Inner
";
        assert_eq!(
            show(text),
            [
                ".decl r(x:number)",
                ".decl o.r(x:number)",
                "o.r(1).",
                ".decl o.i.s(x:number)",
                "o.i.s(v0) :- o.r(v0).",
                ".decl o.t(x:number)",
                "o.t(v0) :- o.i.s(v0).",
                ".decl top.s(x:number)",
                "top.s(v0) :- r(v0).",
            ]
        );
    }

    #[test]
    fn inheritance_adds_and_override_replaces() {
        let text = "\
.comp A {
  .decl r(x: number) overridable
  .decl s(x: number)
  r(1).
  s(x) :- r(x).
}
.comp B : A {
  .override r
  r(2).
}
.comp C : A {
  r(3).
}
.comp D { .decl d(x: number) d(4). }
.comp E : C, D { }
.init b = B
.init e = E
";
        assert_eq!(
            show(text),
            [
                ".decl b.r(x:number)",
                ".decl b.s(x:number)",
                "b.s(v0) :- b.r(v0).",
                "b.r(2).",
                ".decl e.r(x:number)",
                ".decl e.s(x:number)",
                "e.r(1).",
                "e.s(v0) :- e.r(v0).",
                "e.r(3).",
                ".decl e.d(x:number)",
                "e.d(4).",
            ]
        );
    }

    #[test]
    fn override_keeps_the_rules_of_instances_made_in_the_bases() {
        // As in Soufflé 2.5: `.override r` drops the rules for `r` written in the
        // bodies of the bases (at any depth), not those that an instance made in a base
        // writes for `r` (its component does not declare `r`), nor a derived
        // component's own rules or instances.
        let text = "\
.comp A {
  .decl r(x: number) overridable
  .comp AA { r(0). }
  .init aa = AA
  .comp Own { .decl r(x: number) r(9). }
  .init own = Own
  r(1).
}
.comp B : A { .override r r(3). }
.comp C : B { .override r r(4). }
.comp BB { r(5). }
.comp D : A { .override r .init bb = BB r(6). }
.comp E : D { .override r r(7). }
.init b = B
.init c = C
.init e = E
";
        assert_eq!(
            show(text),
            [
                ".decl b.r(x:number)",
                "b.r(0).",
                ".decl b.own.r(x:number)",
                "b.own.r(9).",
                "b.r(3).",
                ".decl c.r(x:number)",
                "c.r(0).",
                ".decl c.own.r(x:number)",
                "c.own.r(9).",
                "c.r(4).",
                ".decl e.r(x:number)",
                "e.r(0).",
                ".decl e.own.r(x:number)",
                "e.own.r(9).",
                "e.r(5).",
                "e.r(7).",
            ]
        );
    }

    #[test]
    fn generic_parameters_are_types_and_components() {
        let text = "\
.comp G<T> {
  .type U = T
  .decl r(x: U, y: T)
}
.init g = G<number>
.init h = G<symbol>
.comp Base { .decl q(x: number) q(3). }
.comp Wrap<K> : K { .decl z(x: number) z(x) :- q(x). }
.init w = Wrap<Base>
.comp Holder<K> { .init k = K }
.init hh = Holder<Base>
.comp Nested<T> { .comp In { .decl n(x: T) } .init in = In }
.init nn = Nested<float>
";
        assert_eq!(
            show(text),
            [
                ".type g.U = number",
                ".decl g.r(x:g.U,y:number)",
                ".type h.U = symbol",
                ".decl h.r(x:h.U,y:symbol)",
                ".decl w.q(x:number)",
                "w.q(3).",
                ".decl w.z(x:number)",
                "w.z(v0) :- w.q(v0).",
                ".decl hh.k.q(x:number)",
                "hh.k.q(3).",
                ".decl nn.in.n(x:float)",
            ]
        );
    }

    #[test]
    fn components_are_looked_up_inward_then_outward() {
        let text = "\
.comp X { .decl top(x: number) }
.comp P {
  .comp X { .decl inner(x: number) }
  .init x = X
}
.init p = P
.init x = X
";
        assert_eq!(
            show(text),
            [".decl p.x.inner(x:number)", ".decl x.top(x:number)"]
        );
    }

    #[test]
    fn error_unknown_component() {
        assert_err(".comp A { }\n.init a = B", 2, 11, "unknown component `B`");
        assert_err(
            ".comp A : Z { }\n.init a = A",
            1,
            11,
            "unknown component `Z`",
        );
        // Nested components are not visible outside their component.
        assert_err(
            ".comp P { .comp Q { } }\n.init q = Q",
            2,
            11,
            "unknown component `Q`",
        );
    }

    #[test]
    fn error_wrong_number_of_type_arguments() {
        assert_err(
            ".comp A<T> { }\n.init a = A",
            2,
            11,
            "the component `A` takes 1 type argument, 0 given",
        );
        assert_err(
            ".comp A { }\n.init a = A<number, symbol>",
            2,
            11,
            "the component `A` takes 0 type arguments, 2 given",
        );
    }

    #[test]
    fn error_duplicate_names() {
        assert_err(
            ".comp A { }\n.init a = A\n.init a = A",
            3,
            7,
            "the instance name `a` is already used (line 2)",
        );
        assert_err(
            ".comp A { }\n.comp B { .init x = A .init x = A }\n.init b = B",
            2,
            29,
            "the instance name `x` is already used (line 2)",
        );
        assert_err(
            ".comp A { }\n.comp A { }",
            2,
            7,
            "the component `A` is already declared (line 1)",
        );
    }

    #[test]
    fn error_override() {
        assert_err(
            ".comp A { .decl r(x: number) }\n.comp B : A { .override s }\n.init b = B",
            2,
            25,
            "`.override s`: no base component of `B` declares `s`",
        );
        assert_err(
            ".comp B { .override r }\n.init b = B",
            1,
            21,
            "`.override r`: no base component of `B` declares `r`",
        );
        assert_err(
            ".comp A { .decl r(x: number) }\n.comp B : A { .override r }\n.init b = B",
            2,
            25,
            "`.override r`: the relation is not declared `overridable` in its base component",
        );
        assert_err(
            ".override r",
            1,
            1,
            "`.override` is only allowed in the body of a component",
        );
    }

    #[test]
    fn error_cycles_and_depth() {
        assert_err(
            ".comp A : B { }\n.comp B : A { }\n.init a = A",
            2,
            11,
            "cyclic inheritance: the component `A` inherits from itself",
        );
        assert_err(
            ".comp A { .init x = A }\n.init a = A",
            1,
            11,
            "the component `A` instantiates itself",
        );
        // The same component with the same arguments.
        assert_err(
            ".comp W<K> { .init x = W<K> }\n.init a = W<number>",
            1,
            14,
            "the component `W` instantiates itself",
        );
        // Different arguments each time: bounded by the depth.
        assert_err(
            ".comp W<K> { .init x = W<W> }\n.init a = W<number>",
            1,
            14,
            "the component `W` instantiates itself",
        );
        let mut deep = String::new();
        for i in 0..100 {
            deep.push_str(&format!(".comp C{i} {{ .init x = C{} }}\n", i + 1));
        }
        deep.push_str(".comp C100 { }\n.init c = C0\n");
        let e = parse(&SourceFile::new("t.dl", deep.as_str())).expect_err("too deep");
        assert!(e.message.starts_with("components nested too deeply"), "{e}");
        let nested = ".comp A { ".repeat(100) + &"}".repeat(100);
        let e = parse(&SourceFile::new("t.dl", nested.as_str())).expect_err("too deep");
        assert!(e.message.starts_with("components nested too deeply"), "{e}");
    }

    #[test]
    fn error_expansion_too_large() {
        // Each level doubles: 2^30 copies of one fact.
        let mut text = String::from(".comp A0 { .decl r(x: number) r(1). }\n");
        for i in 1..=30 {
            text.push_str(&format!(
                ".comp A{i} {{ .init x = A{p} .init y = A{p} }}\n",
                p = i - 1
            ));
        }
        text.push_str(".init top = A30\n");
        let e = parse(&SourceFile::new("t.dl", text.as_str())).expect_err("too large");
        assert!(
            e.message
                .starts_with("expanding the components makes more than"),
            "{e}"
        );
        // Few copies of a large rule: 2^12 copies of 60 KB.
        let body = vec!["e(x)"; 10_000].join(", ");
        let mut text = format!(".comp A0 {{ .decl r(x: number) r(x) :- {body}. }}\n");
        for i in 1..=12 {
            text.push_str(&format!(
                ".comp A{i} {{ .init x = A{p} .init y = A{p} }}\n",
                p = i - 1
            ));
        }
        text.push_str(".init top = A12\n");
        let e = parse(&SourceFile::new("t.dl", text.as_str())).expect_err("too large");
        assert!(
            e.message
                .starts_with("expanding the components copies more than 64 MiB"),
            "{e}"
        );
    }

    #[test]
    fn error_malformed_components() {
        assert_err(
            ".comp A {\n  .decl r(x: number)\n",
            2,
            21,
            "missing `}` closing the body of the component `A`",
        );
        assert_err(
            ".comp { }",
            1,
            7,
            "expected a component name after `.comp`, found `{`",
        );
        assert_err(".comp A<T { }", 1, 11, "expected `,` or `>`, found `{`");
        assert_err(
            ".comp A { } .init a A",
            1,
            21,
            "expected `=` and a component after `.init a`, found `A`",
        );
        assert_err(
            ".comp A { .pragma \"x\" }",
            1,
            11,
            "`.pragma` is not allowed in the body of a component",
        );
        assert_err(
            ".comp A { ( }",
            1,
            11,
            "expected a rule, a fact, a directive or `}`, found `(`",
        );
        assert_err(
            "}",
            1,
            1,
            "expected a rule, a fact or a directive, found `}`",
        );
    }
}
