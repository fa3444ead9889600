//! From the AST to the checked [`Program`], in passes; every error is a [`Diagnostic`]
//! at the offending text, and the first error stops the analysis.
//!
//! For a program ([`analyse_with`]), each pass a submodule:
//!
//! 1. `resolve`: user-defined types, relation declarations, relations declared
//!    implicitly by rules in the study's syntax, I/O directives.
//! 2. Facts (`facts`) and rules, in source order. A rule goes through:
//!    `limits` (expression depth, body length), `desugar` (relations resolved,
//!    variables numbered into slots, expression arguments of atoms turned into
//!    equalities), `types` (inference, then lowering to the IR with type checks of
//!    constants and expressions), `grounding` (every variable bound by the body),
//!    `floats` (float constants whose bits do not decide IEEE equality, the zeros and
//!    NaN, turned into comparisons), `order` (the body in evaluation order). Inference runs before the safety check
//!    and lowering after it, so the first error of a rule is found in that order.
//!    Then, for each `eqrel` relation, the rules that close it (`eqrel`), checked the
//!    same way.
//! 3. `strata`: the dependency graph's components in evaluation order, refusing
//!    negation through recursion.

mod aggregates;
mod autoinc;
mod choice;
mod desugar;
mod eqrel;
mod facts;
mod floats;
mod grounding;
mod limits;
mod order;
mod ranges;
mod records;
mod resolve;
mod strata;
mod subsume;
mod types;

pub use limits::MAX_BODY_LITERALS;

use crate::ir::{self, Program, RelId, Relation, Rule};
use crate::value::{SymbolTable, Type, Value};
use dynalog_syntax::ast;
use dynalog_syntax::{Diagnostic, SourceFile, Span};
use rustc_hash::FxHashMap;

/// Analysis options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The relations of the program this one replaces (empty: none). The relations
    /// both have keep their ids, in the previous order, and the new ones follow, so
    /// that the new program extends the old one (see `dynalog_engines::check_extends`)
    /// whatever the text order; a relation the new program no longer has (the internal
    /// relations of a removed aggregate) stays, empty, in its place, unless it was
    /// among the last and no new relation follows.
    pub previous: Vec<Relation>,
}

/// Check a parsed program and lower it to the integer IR, with a fresh symbol table.
pub fn analyse(file: &SourceFile, program: &ast::Program) -> Result<Program, Diagnostic> {
    analyse_with(file, program, SymbolTable::new(), &Options::default())
}

/// Check a parsed program, interning its constants into `symbols`.
pub fn analyse_with(
    file: &SourceFile,
    program: &ast::Program,
    symbols: SymbolTable,
    options: &Options,
) -> Result<Program, Diagnostic> {
    let mut cx = Checker {
        file,
        symbols,
        types: FxHashMap::default(),
        constructors: FxHashMap::default(),
        relations: Vec::new(),
        by_name: FxHashMap::default(),
        agg_vars: 0,
    };
    cx.collect_types(program)?;
    cx.collect_decls(program)?;
    cx.declare_implicit(program)?;
    cx.apply_directives(program)?;
    let with_choice = cx.expand_choice(program)?;
    let program = with_choice.as_ref().unwrap_or(program);
    let mut generated_spans: Vec<Span> = program
        .items
        .iter()
        .filter_map(|i| match i {
            ast::Item::Decl(d) => d.choice_span,
            _ => None,
        })
        .collect();
    let with_subsumption = cx.expand_subsumption(program, &mut generated_spans)?;
    let program = with_subsumption.as_ref().unwrap_or(program);
    let mut rules = Vec::new();
    let mut facts = Vec::new();
    let mut expanded = aggregates::Expanded::default();
    for (i, item) in program.items.iter().enumerate() {
        if let ast::Item::Rule(rule) = item {
            let inlined = records::inline_record_aliases(rule);
            let rule = inlined.as_ref().unwrap_or(rule);
            // A rule with ranges or aggregates is listed as written: one of the rules a
            // written rule with several heads or disjuncts stands for by its own text.
            let written_text = || {
                if program
                    .items
                    .iter()
                    .filter(|o| o.span() == item.span())
                    .nth(1)
                    .is_some()
                {
                    rule.text_of_parts(&file.text)
                } else {
                    file.slice(rule.span).to_string()
                }
            };
            if ranges::has_range(rule) {
                let text = written_text();
                let parts = cx.expand_ranges(rule)?;
                let main = parts.len() - 1;
                for (k, part) in parts.iter().enumerate() {
                    // The need and range rules are listed as what they come from.
                    let own = if k == main {
                        text.clone()
                    } else {
                        format!(
                            "{}(..) :- {}",
                            part.head.relation.name,
                            file.slice(part.span)
                        )
                    };
                    if aggregates::has_aggregate(part) {
                        cx.rule_with_aggregates(part, &own, &mut expanded)?;
                    } else if part.body.is_empty() {
                        facts.push(cx.fact(part)?);
                    } else {
                        let mut checked = cx.rule(part)?;
                        checked.text = own;
                        rules.push(checked);
                    }
                }
            } else if aggregates::has_aggregate(rule) {
                let text = written_text();
                cx.rule_with_aggregates(rule, &text, &mut expanded)?;
            } else if rule.body.is_empty() {
                facts.push(cx.fact(rule)?);
            } else {
                let mut checked = cx.rule(rule)?;
                // One of the rules a written rule with several heads or disjuncts stands
                // for (they share its span): its own text.
                let shared = |j: usize| {
                    program
                        .items
                        .get(j)
                        .is_some_and(|o| o.span() == item.span())
                };
                // Or an instance's copy of a component's rule: its names are not the
                // written ones.
                // (A rule of a choice-domain relation has its head renamed to the
                // candidates' relation, module `choice`: its text is still as written.)
                let choice = ir::is_candidates(&rule.head.relation.name);
                if shared(i + 1)
                    || (i > 0 && shared(i - 1))
                    || (rule.renamed_in(&file.text) && !choice)
                {
                    checked.text = rule.text_of_parts(&file.text);
                }
                rules.push(checked);
            }
        }
    }
    rules.extend(cx.eqrel_rules()?);
    rules.extend(expanded.rules);
    // The rules that make a choice or a subsumption (modules `choice`, `subsume`) are
    // the analysis's, as an eqrel's: listed as such, never removed by a session.
    for span in generated_spans {
        for r in rules.iter_mut().filter(|r| r.span == span) {
            r.generated = true;
            r.text = file.slice(span).to_string();
        }
    }
    let mut aggregates = expanded.aggregates;
    let strata = strata::stratify(file, &cx.relations, &mut rules, &mut aggregates, program)?;
    let mut checked = Program {
        relations: cx.relations,
        rules,
        facts,
        aggregates,
        strata,
        symbols: cx.symbols,
        warnings: pragma_warnings(file, program),
    };
    if !options.previous.is_empty() {
        keep_ids(&mut checked, &options.previous);
    }
    Ok(checked)
}

/// Renumber the relations of `p`: those of `previous` first, in its order (one `p`
/// lacks stays as an empty relation, except at the end), then the others in theirs.
fn keep_ids(p: &mut Program, previous: &[Relation]) {
    let by_name: FxHashMap<&str, RelId> = p
        .relations
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i as RelId))
        .collect();
    let mut order: Vec<Option<RelId>> = Vec::new();
    let mut orphans = Vec::new();
    let mut placed = vec![false; p.relations.len()];
    for r in previous {
        match by_name.get(r.name.as_str()) {
            Some(&id) => {
                placed[id as usize] = true;
                order.push(Some(id));
            }
            None => {
                order.push(None);
                orphans.push(r.clone());
            }
        }
    }
    let new: Vec<RelId> = (0..p.relations.len() as RelId)
        .filter(|&id| !placed[id as usize])
        .collect();
    if new.is_empty() {
        // Nothing follows the relations that went last: the program just ends earlier.
        while order.last() == Some(&None) {
            order.pop();
            orphans.pop();
        }
    }
    order.extend(new.into_iter().map(Some));
    let mut new_id = vec![0 as RelId; p.relations.len()];
    for (i, old) in order.iter().enumerate() {
        if let Some(old) = old {
            new_id[*old as usize] = i as RelId;
        }
    }
    let mut old_relations: Vec<Option<Relation>> = std::mem::take(&mut p.relations)
        .into_iter()
        .map(Some)
        .collect();
    let mut orphans = orphans.into_iter();
    p.relations = order
        .iter()
        .filter_map(|o| match o {
            Some(old) => old_relations[*old as usize].take(),
            None => orphans.next(),
        })
        .collect();
    let map = |r: &mut RelId| *r = new_id[*r as usize];
    for rule in &mut p.rules {
        map(&mut rule.head.relation);
        for lit in &mut rule.body {
            if let ir::Literal::Atom(a) | ir::Literal::Not(a) = lit {
                map(&mut a.relation);
            }
        }
    }
    for (r, _) in &mut p.facts {
        map(r);
    }
    for a in &mut p.aggregates {
        map(&mut a.head);
        map(&mut a.source);
    }
    for s in &mut p.strata {
        for r in &mut s.relations {
            map(r);
        }
        if let Some(sub) = &mut s.subsumption {
            map(&mut sub.relation);
            map(&mut sub.dominated);
        }
        if let Some(chosen) = &mut s.choice {
            map(&mut chosen.relation);
            map(&mut chosen.dominated);
        }
    }
}

/// A warning for each `.type Name` alone (a symbol type, in Soufflé's old syntax), and
/// one for each `.pragma`: dynalog accepts every one (no program fails because of
/// one) and acts on none. Soufflé's pragmas set its command-line options; the one that
/// matters for evaluation, `magic-transform`, asks for demand-driven evaluation, which
/// dynalog does not do: every relation is evaluated in full, with the same results.
fn pragma_warnings(file: &SourceFile, program: &ast::Program) -> Vec<Diagnostic> {
    program
        .items
        .iter()
        .filter_map(|item| match item {
            ast::Item::Type(t) if t.bare => Some(Diagnostic::at(
                file,
                t.span,
                format!(
                    "`.type {}` alone is Soufflé's old form of `.type {} <: symbol`, read as such",
                    t.name.name, t.name.name
                ),
            )),
            ast::Item::Pragma(p) => Some(Diagnostic::at(
                file,
                p.span,
                match p.key.as_str() {
                    "magic-transform" => "`.pragma \"magic-transform\"` is ignored: dynalog has no demand-driven evaluation, so every relation is evaluated in full (the results are the same)".to_string(),
                    key => format!("`.pragma \"{key}\"` is ignored: dynalog takes its options from the command line"),
                },
            )),
            _ => None,
        })
        .collect()
}

/// One argument of a query pattern (see [`lower_pattern`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternArg {
    /// The column must hold this value.
    Const(Value),
    /// A named variable, numbered by first occurrence: columns with the same number
    /// must hold the same value.
    Var(usize),
    /// `_`: anything.
    Any,
}

/// Check a fact written in Datalog (`edge(1, "a").`, a rule without a body) against the
/// relations of `program`, interning its symbols into `symbols`.
pub fn lower_fact(
    file: &SourceFile,
    program: &Program,
    symbols: &mut SymbolTable,
    rule: &ast::Rule,
) -> Result<(RelId, Vec<Value>), Diagnostic> {
    if let Some(first) = rule.body.first() {
        return Err(err(
            file,
            first.span(),
            "expected a fact, found a rule body",
        ));
    }
    with_checker(file, program, symbols, |cx| cx.fact(rule))
}

/// Check a query pattern (`path(1, x)`, `edge(_, "a")`) against the relations of
/// `program`: constants are encoded at their column's type (symbols interned into
/// `symbols`), variables numbered by first occurrence.
pub fn lower_pattern(
    file: &SourceFile,
    program: &Program,
    symbols: &mut SymbolTable,
    atom: &ast::Atom,
) -> Result<(RelId, Vec<PatternArg>), Diagnostic> {
    with_checker(file, program, symbols, |cx| {
        for arg in &atom.args {
            cx.check_depth(arg)?;
        }
        let id = cx.lookup(&atom.relation)?;
        cx.check_arity(atom, id)?;
        let types = cx.relations[id as usize].types.clone();
        let mut vars: Vec<&str> = Vec::new();
        let mut args = Vec::with_capacity(types.len());
        for (i, (arg, ty)) in atom.args.iter().zip(types).enumerate() {
            args.push(match arg {
                ast::Expr::Wildcard(_) => PatternArg::Any,
                ast::Expr::Var(v) => match vars.iter().position(|&n| n == v.name) {
                    Some(k) => PatternArg::Var(k),
                    None => {
                        vars.push(&v.name);
                        PatternArg::Var(vars.len() - 1)
                    }
                },
                _ => {
                    let what = format!("column {} of `{}`", i + 1, atom.relation.name);
                    PatternArg::Const(cx.const_expr(arg, ty, &what)?)
                }
            });
        }
        Ok((id, args))
    })
}

/// Run `f` with a checker that knows the relations of `program` and uses `symbols`.
fn with_checker<T>(
    file: &SourceFile,
    program: &Program,
    symbols: &mut SymbolTable,
    f: impl FnOnce(&mut Checker<'_>) -> Result<T, Diagnostic>,
) -> Result<T, Diagnostic> {
    let mut cx = Checker {
        file,
        symbols: std::mem::take(symbols),
        types: FxHashMap::default(),
        constructors: constructors_of(&program.relations, symbols),
        relations: program.relations.clone(),
        by_name: program
            .relations
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.clone(), i as RelId))
            .collect(),
        agg_vars: 0,
    };
    let result = f(&mut cx);
    *symbols = cx.symbols;
    result
}

struct Checker<'a> {
    file: &'a SourceFile,
    symbols: SymbolTable,
    /// User-defined type names to their primitive, record or algebraic data type.
    types: FxHashMap<String, Type>,
    /// Constructors of algebraic data types: their type and branch.
    constructors: FxHashMap<String, (Type, u32)>,
    relations: Vec<Relation>,
    by_name: FxHashMap<String, RelId>,
    /// Fresh variables made by the rewriting of aggregates so far (module `aggregates`).
    agg_vars: usize,
}

/// The constructors of the algebraic data types that the columns of `relations` hold,
/// directly or in fields.
fn constructors_of(
    relations: &[Relation],
    symbols: &SymbolTable,
) -> FxHashMap<String, (Type, u32)> {
    let mut out = FxHashMap::default();
    let mut todo: Vec<u32> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for r in relations {
        for t in &r.types {
            if let Type::Record(i) = t {
                todo.push(*i);
            }
        }
    }
    while let Some(i) = todo.pop() {
        if !seen.insert(i) {
            continue;
        }
        let Some(rt) = symbols.record_type(i) else {
            continue;
        };
        for (b, branch) in rt.branches.iter().enumerate() {
            if rt.adt {
                out.insert(branch.name.clone(), (Type::Record(i), b as u32));
            }
            for (_, t) in &branch.fields {
                if let Type::Record(j) = t {
                    todo.push(*j);
                }
            }
        }
    }
    out
}

fn err(file: &SourceFile, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::at(file, span, msg)
}

impl Checker<'_> {
    fn err(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        err(self.file, span, msg)
    }

    /// Check a rule and lower it: the passes of the module docs, one after the other.
    fn rule(&mut self, rule: &ast::Rule) -> Result<Rule, Diagnostic> {
        self.check_depths(rule)?;
        self.check_body_length(rule)?;
        self.autoinc_only_in_head(rule)?;
        let written = rule;
        let named = autoinc::name_wildcards(rule);
        let rule = named.as_ref().unwrap_or(rule);
        let head = self.lookup(&rule.head.relation)?;
        self.check_arity(&rule.head, head)?;
        let mut body = self.desugar(rule)?;
        self.take_records_apart(&mut body)?;
        let typing = self.infer_types(rule, head, &body)?;
        self.check_grounded(rule, &body)?;
        let mut lowered = self.lower(rule, head, &body, &typing)?;
        let mut var_names = body.slots.vars;
        let mut var_types = typing.var_types;
        floats::compare_float_constants(
            &mut lowered,
            &self.relations,
            &mut var_names,
            &mut var_types,
        );
        autoinc::key_autoincs(&mut lowered.head, &written.canonical(), var_names.len());
        let ordered = self.order(lowered.atoms, lowered.constraints, var_names.len())?;
        Ok(Rule {
            head: ir::Head {
                relation: head,
                args: lowered.head,
            },
            body: ordered,
            var_names,
            var_types,
            stratum: 0,
            text: self.file.slice(rule.span).to_string(),
            generated: false,
            span: rule.span,
        })
    }
}

/// Call `f` on each expression directly inside `e` (not inside an aggregate: its
/// target and body are a scope of their own).
fn children_mut(e: &mut ast::Expr, mut f: impl FnMut(&mut ast::Expr)) {
    match e {
        ast::Expr::Neg(i, _) | ast::Expr::Unary(_, i, _) => f(i),
        ast::Expr::Binary { lhs, rhs, .. } => {
            f(lhs);
            f(rhs);
        }
        ast::Expr::Call(_, args, _) | ast::Expr::Record(_, args, _) => args.iter_mut().for_each(f),
        ast::Expr::Field { record, .. } => f(record),
        ast::Expr::Var(_)
        | ast::Expr::Wildcard(_)
        | ast::Expr::Str(..)
        | ast::Expr::Num(..)
        | ast::Expr::Nil(_)
        | ast::Expr::Aggregate(_) => {}
    }
}

/// Call `f` on every variable an expression reads (with repeats), left to right.
fn visit_vars(e: &ast::Expr, f: &mut impl FnMut(&ast::Ident)) {
    match e {
        ast::Expr::Var(v) => f(v),
        ast::Expr::Neg(i, _) | ast::Expr::Unary(_, i, _) => visit_vars(i, f),
        ast::Expr::Binary { lhs, rhs, .. } => {
            visit_vars(lhs, f);
            visit_vars(rhs, f);
        }
        ast::Expr::Call(_, args, _) | ast::Expr::Record(_, args, _) => {
            args.iter().for_each(|a| visit_vars(a, f))
        }
        ast::Expr::Field { record, .. } => visit_vars(record, f),
        ast::Expr::Wildcard(_)
        | ast::Expr::Str(..)
        | ast::Expr::Num(..)
        | ast::Expr::Nil(_)
        | ast::Expr::Aggregate(_) => {}
    }
}

#[cfg(test)]
mod tests;
