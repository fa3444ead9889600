//! Aggregates (`count`, `sum`, `min`, `max`, `mean`), rewritten into relations before
//! the other passes see a rule, so that every engine evaluates plain rules plus one new
//! operation, the [`ir::Aggregate`] of a relation.
//!
//! Take `r(x, n) :- a(x), n = sum y : { b(x, y, _) }.` The aggregate's *group*
//! variables are those of its body that the rest of the rule also uses and binds
//! (`x`); the others, and the body's wildcards, are its own. The aggregate becomes:
//!
//! * an **input** relation, one row per binding of the body: the group variables, the
//!   body's own variables (for `count`, `sum` and `mean`, which count or add every
//!   binding), then the aggregated value; made by the rule
//!   `@sum_…_in(x, y, w, v) :- b(x, y, w), v = y.`. As in Soufflé, the wildcards of a
//!   body with a single atom (and no aggregate) count too, so that every matching
//!   tuple counts, while a larger body counts the distinct bindings of its named
//!   variables (Soufflé materializes it into a relation of them);
//! * a **result** relation `@sum_…(x, n)`, one row per group, that an
//!   [`ir::Aggregate`] computes from the input;
//! * and in the rule, the atom `@sum_…(x, n)` in place of the aggregate. `count` and
//!   `sum` of nothing are 0 (Soufflé's answer), so the rule has a second variant for
//!   the empty group: `!@sum_…(x, _), n = 0`. `min`, `max` and `mean` of nothing have
//!   no value, and the rule does not fire.
//!
//! A variable of the body that the rest of the rule uses but does not bind is a
//! *witness*: `min` and `max` bind it to the values of the rows that reach the extreme
//! (the rule also reads a copy of the input, `@min_…_wit(g.., w.., n)`: no rule reads
//! an aggregate's input itself, so an engine need not keep it); `count`, `sum` and
//! `mean` refuse it, as Soufflé does. When the body does not bind a group variable by
//! itself (`count : { c(y), y < x }`), the input rule also takes the rest of the rule's
//! atoms and comparisons that do not read an aggregate's result, which bind it.
//! Aggregates in an aggregate's body are rewritten in its input rule, the same way.
//!
//! The two relations are named after a hash of the input rule's canonical text: the
//! same aggregate written twice is one pair of relations, and an edited program keeps
//! the names of the aggregates it keeps. Names start with `@`, which no written name
//! can (see [`ir::Relation::is_internal`]). Recursion through an aggregate is refused
//! by the stratification, as Soufflé does.

use super::ranges::bound_literals;
use super::{Checker, children_mut};
use crate::ir::{self, Relation};
use crate::value::Type;
use dynalog_syntax::ast::{self, AggFunc, Aggregate, Expr, Ident, Literal, Number};
use dynalog_syntax::{CmpOp, Diagnostic, Span};
use std::collections::HashSet;

/// The most rules one written rule may become through the empty-group variants of its
/// `count` and `sum` aggregates (two per aggregate).
const MAX_VARIANTS: usize = 1024;

/// What rules with aggregates become: checked rules and aggregates, in dependency order
/// (an aggregate's input rules before it, before the rules that read it).
#[derive(Default)]
pub(super) struct Expanded {
    pub(super) rules: Vec<ir::Rule>,
    pub(super) aggregates: Vec<ir::Aggregate>,
}

/// Whether a rule has an aggregate anywhere (also inside an expression, as in
/// `2 * max s : { a(s) } + 1`).
pub(super) fn has_aggregate(rule: &ast::Rule) -> bool {
    let mut found = false;
    for_each_expr(&rule.head.args, &rule.body, &mut |e| {
        found |= e
            .find(false, &mut |x| matches!(x, Expr::Aggregate(_)))
            .is_some();
    });
    found
}

/// Rename variable `from` to `to` everywhere in `e`, inside aggregates too.
fn rename_in_expr(e: &mut Expr, from: &str, to: &str) {
    match e {
        Expr::Var(v) if v.name == from => v.name = to.to_string(),
        Expr::Aggregate(a) => rename_in_aggregate(a, from, to),
        _ => children_mut(e, |c| rename_in_expr(c, from, to)),
    }
}

/// Rename variable `from` to `to` in an aggregate's target and body.
fn rename_in_aggregate(a: &mut Aggregate, from: &str, to: &str) {
    if let Some(t) = &mut a.target {
        rename_in_expr(t, from, to);
    }
    for lit in &mut a.body {
        match lit {
            Literal::Positive(atom) | Literal::Negative(atom, _) => atom
                .args
                .iter_mut()
                .for_each(|e| rename_in_expr(e, from, to)),
            Literal::Compare { lhs, rhs, .. } => {
                rename_in_expr(lhs, from, to);
                rename_in_expr(rhs, from, to);
            }
        }
    }
}

/// Call `f` on the top-level expressions of a head's arguments and a body.
fn for_each_expr<'a>(head: &'a [Expr], body: &'a [Literal], f: &mut impl FnMut(&'a Expr)) {
    head.iter().for_each(&mut *f);
    for lit in body {
        match lit {
            Literal::Positive(a) | Literal::Negative(a, _) => a.args.iter().for_each(&mut *f),
            Literal::Compare { lhs, rhs, .. } => {
                f(lhs);
                f(rhs);
            }
        }
    }
}

/// Every variable of an expression, descending into aggregates (their targets and
/// bodies), in order.
fn all_vars<'a>(e: &'a Expr, out: &mut Vec<&'a Ident>) {
    vars(e, true, out)
}

/// The variables of an expression outside aggregates.
fn level_vars<'a>(e: &'a Expr, out: &mut Vec<&'a Ident>) {
    vars(e, false, out)
}

fn vars<'a>(e: &'a Expr, deep: bool, out: &mut Vec<&'a Ident>) {
    match e {
        Expr::Var(v) => out.push(v),
        Expr::Neg(i, _) | Expr::Unary(_, i, _) => vars(i, deep, out),
        Expr::Binary { lhs, rhs, .. } => {
            vars(lhs, deep, out);
            vars(rhs, deep, out);
        }
        Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
            args.iter().for_each(|a| vars(a, deep, out))
        }
        Expr::Field { record, .. } => vars(record, deep, out),
        Expr::Aggregate(a) if deep => {
            if let Some(t) = &a.target {
                vars(t, deep, out);
            }
            for_each_expr(&[], &a.body, &mut |e| vars(e, deep, out));
        }
        Expr::Aggregate(_) | Expr::Wildcard(_) | Expr::Str(..) | Expr::Num(..) | Expr::Nil(_) => {}
    }
}

/// Replace every aggregate of `e` that is not inside another by a fresh variable.
fn take_aggregates(e: &mut Expr, found: &mut Vec<(String, Aggregate)>, counter: &mut usize) {
    match e {
        Expr::Aggregate(a) => {
            let name = format!("@a{}", *counter);
            *counter += 1;
            let span = a.span;
            let Expr::Aggregate(a) = std::mem::replace(
                e,
                Expr::Var(Ident {
                    name: name.clone(),
                    span,
                }),
            ) else {
                return;
            };
            found.push((name, *a));
        }
        _ => children_mut(e, |c| take_aggregates(c, found, counter)),
    }
}

/// Replace every aggregate of a literal that is not inside another by a fresh
/// variable (see [`take_aggregates`]).
fn take_literal_aggregates(
    lit: &mut Literal,
    found: &mut Vec<(String, Aggregate)>,
    counter: &mut usize,
) {
    match lit {
        Literal::Positive(a) | Literal::Negative(a, _) => {
            for arg in &mut a.args {
                take_aggregates(arg, found, counter);
            }
        }
        Literal::Compare { lhs, rhs, .. } => {
            take_aggregates(lhs, found, counter);
            take_aggregates(rhs, found, counter);
        }
    }
}

/// The variables written as fields of a record pattern (or the pattern itself, a
/// variable), at any depth: those a bound record binds.
fn pattern_vars<'a>(e: &'a Expr, out: &mut Vec<&'a Ident>) {
    match e {
        Expr::Var(v) => out.push(v),
        Expr::Record(_, fields, _) => fields.iter().for_each(|f| pattern_vars(f, out)),
        _ => {}
    }
}

/// The variables a body binds by itself: those of its positive atoms (in records there
/// too), those assigned from bound ones (`v = e`, either way round) or taken out of a
/// bound record (`v = [x, y]`), to a fixpoint; `extra` counts as bound.
pub(super) fn grounded_by(body: &[Literal], extra: &HashSet<String>) -> HashSet<String> {
    let mut bound: HashSet<String> = extra.clone();
    for lit in body {
        if let Literal::Positive(a) = lit {
            for arg in &a.args {
                let mut vs = Vec::new();
                pattern_vars(arg, &mut vs);
                bound.extend(vs.into_iter().map(|v| v.name.clone()));
            }
        }
    }
    loop {
        let before = bound.len();
        for lit in body {
            if let Literal::Compare {
                op: CmpOp::Eq,
                lhs,
                rhs,
                ..
            } = lit
            {
                for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                    if let Expr::Var(v) = a {
                        let mut vs = Vec::new();
                        all_vars(b, &mut vs);
                        if !matches!(b, Expr::Wildcard(_))
                            && vs.iter().all(|w| bound.contains(&w.name))
                        {
                            bound.insert(v.name.clone());
                        }
                        if matches!(b, Expr::Record(..)) && bound.contains(&v.name) {
                            let mut vs = Vec::new();
                            pattern_vars(b, &mut vs);
                            bound.extend(vs.into_iter().map(|v| v.name.clone()));
                        }
                    }
                }
            }
        }
        if bound.len() == before {
            return bound;
        }
    }
}

pub(super) fn var(name: &str, span: Span) -> Expr {
    Expr::Var(Ident {
        name: name.to_string(),
        span,
    })
}

pub(super) fn atom(relation: &str, args: Vec<Expr>, span: Span) -> ast::Atom {
    ast::Atom {
        relation: Ident {
            name: relation.to_string(),
            span,
        },
        args,
        span,
    }
}

/// FNV-1a, 64 bits: a stable hash (the same in every run and version) for names.
pub(super) fn stable_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// What the rest of a rule does with the variables of one of its aggregates.
struct Scope<'a> {
    /// The variables the rest of the rule uses.
    outer: &'a HashSet<String>,
    /// Those it binds, every aggregate's result counted as bound.
    bound: &'a HashSet<String>,
    /// Those it binds without this aggregate's result.
    bound_without: &'a HashSet<String>,
}

impl Checker<'_> {
    /// `agg` with its local variables that the rest of the rule also names renamed,
    /// as Soufflé scopes them: a variable of an aggregate is the rule's (a group
    /// variable) only where the rest of the rule binds it without this aggregate's
    /// result and the aggregated expression does not use it; one the rest of the rule
    /// does not bind at all is a witness. Any other is the aggregate's own: in
    /// `y = min z + y : { a(z), a(y) }` and in `b(x), m = min x : { a(x) }`, the `y`
    /// and the `x` inside range over `a` whatever the rule's are.
    fn localize(&mut self, agg: &Aggregate, scope: &Scope<'_>) -> Aggregate {
        let mut target = Vec::new();
        if let Some(t) = &agg.target {
            all_vars(t, &mut target);
        }
        let whole = Expr::Aggregate(Box::new(agg.clone()));
        let mut inside = Vec::new();
        all_vars(&whole, &mut inside);
        let mut local: Vec<String> = Vec::new();
        for v in &inside {
            let name = &v.name;
            let group =
                scope.bound_without.contains(name) && !target.iter().any(|t| &t.name == name);
            if scope.outer.contains(name)
                && scope.bound.contains(name)
                && !group
                && !local.contains(name)
            {
                local.push(name.clone());
            }
        }
        let mut agg = agg.clone();
        for name in local {
            // A name no written variable has (`'` is not in identifiers); the
            // diagnostics show it with the original's place.
            let fresh = format!("{name}'{}", self.agg_vars);
            self.agg_vars += 1;
            rename_in_aggregate(&mut agg, &name, &fresh);
        }
        agg
    }

    /// Check a rule that has aggregates: its aggregates' relations, rules and
    /// [`ir::Aggregate`]s, and its own variants, into `out`. `text` is the rule's text
    /// for listings.
    pub(super) fn rule_with_aggregates(
        &mut self,
        rule: &ast::Rule,
        text: &str,
        out: &mut Expanded,
    ) -> Result<(), Diagnostic> {
        self.check_depths(rule)?;
        for variant in self.expand(rule, out)? {
            let mut checked = self.rule(&variant)?;
            checked.text = text.to_string();
            out.rules.push(checked);
        }
        Ok(())
    }

    /// The variants of `rule` with its top-level aggregates replaced by their result
    /// relations (whose rules and aggregates go to `out`); the rule itself if it has
    /// none at its top level.
    fn expand(
        &mut self,
        rule: &ast::Rule,
        out: &mut Expanded,
    ) -> Result<Vec<ast::Rule>, Diagnostic> {
        let mut rule = rule.clone();
        let mut found = Vec::new();
        let mut counter = self.agg_vars;
        for arg in &mut rule.head.args {
            take_aggregates(arg, &mut found, &mut counter);
        }
        for lit in &mut rule.body {
            take_literal_aggregates(lit, &mut found, &mut counter);
            // `_ = min x : { .. }` asks only that the aggregate has a value (its
            // witnesses bound): the `_` is its result, as in Soufflé.
            if let Literal::Compare {
                op: CmpOp::Eq,
                lhs,
                rhs,
                ..
            } = lit
            {
                let result = |e: &Expr| match e {
                    Expr::Var(v) if found.iter().any(|(n, _)| *n == v.name) => Some(v.name.clone()),
                    _ => None,
                };
                if let (Expr::Wildcard(s), Some(name)) = (&*lhs, result(rhs)) {
                    *lhs = var(&name, *s);
                } else if let (Expr::Wildcard(s), Some(name)) = (&*rhs, result(lhs)) {
                    *rhs = var(&name, *s);
                }
            }
        }
        self.agg_vars = counter;
        if found.is_empty() {
            return Ok(vec![rule]);
        }
        // The variables the rest of the rule uses, and those it binds (the aggregates'
        // results count as bound: their atoms bind them).
        let mut outer: HashSet<String> = HashSet::new();
        for_each_expr(&rule.head.args, &rule.body, &mut |e| {
            let mut vs = Vec::new();
            all_vars(e, &mut vs);
            outer.extend(vs.into_iter().map(|v| v.name.clone()));
        });
        let results: HashSet<String> = found.iter().map(|(n, _)| n.clone()).collect();
        let bound_outside = grounded_by(&rule.body, &results);
        // Per aggregate: the literals that replace it, one list per alternative.
        let mut alternatives: Vec<Vec<Vec<Literal>>> = Vec::new();
        for (result, agg) in &found {
            // What the rest of the rule binds without this aggregate's own result.
            let mut others = results.clone();
            others.remove(result);
            let scope = Scope {
                outer: &outer,
                bound: &bound_outside,
                bound_without: &grounded_by(&rule.body, &others),
            };
            alternatives.push(self.aggregate(&rule, result, agg, &scope, out)?);
        }
        let total = alternatives
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.len()))
            .filter(|&n| n <= MAX_VARIANTS);
        if total.is_none() {
            return Err(self.err(
                rule.span,
                format!(
                    "this rule has too many `count` and `sum` aggregates: each doubles the rules \
                     it stands for (for the empty group), and more than {MAX_VARIANTS} is refused"
                ),
            ));
        }
        let mut variants = vec![rule];
        for alts in alternatives {
            variants = variants
                .iter()
                .flat_map(|v| {
                    alts.iter().map(move |extra| {
                        let mut v = v.clone();
                        v.body.extend(extra.iter().cloned());
                        v
                    })
                })
                .collect();
        }
        Ok(variants)
    }

    /// Make the relations, rules and aggregate of `agg` (whose result variable in
    /// `rule` is `result`); the literals that stand for it in `rule`, per alternative.
    fn aggregate(
        &mut self,
        rule: &ast::Rule,
        result: &str,
        agg: &Aggregate,
        scope: &Scope<'_>,
        out: &mut Expanded,
    ) -> Result<Vec<Vec<Literal>>, Diagnostic> {
        let (outer, bound_outside) = (scope.outer, scope.bound);
        let span = agg.span;
        let func = agg.func;
        let extreme = matches!(func, AggFunc::Min | AggFunc::Max);
        let agg = &self.localize(agg, scope);
        // Group variables and witnesses, by first occurrence.
        let whole = Expr::Aggregate(Box::new(agg.clone()));
        let mut inside = Vec::new();
        all_vars(&whole, &mut inside);
        let mut seen = HashSet::new();
        let mut group: Vec<String> = Vec::new();
        let mut witnesses: Vec<String> = Vec::new();
        for v in &inside {
            if !outer.contains(&v.name) || !seen.insert(v.name.clone()) {
                continue;
            }
            if bound_outside.contains(&v.name) {
                group.push(v.name.clone());
            } else if extreme {
                witnesses.push(v.name.clone());
            } else {
                return Err(self.err(
                    v.span,
                    format!(
                        "witness problem: `{}` is bound only inside this `{}` aggregate but used \
                         outside it (only `min` and `max` bind the variables of the rows they \
                         pick)",
                        v.name,
                        func.as_str()
                    ),
                ));
            }
        }
        let mut body = agg.body.clone();
        // What is counted (or added) is, as in Soufflé, every matching tuple of a body
        // with one atom and no aggregate in it (its wildcards count), and otherwise
        // every distinct binding of the body's named variables (Soufflé materializes
        // such a body into a relation of its variables).
        let mut own: Vec<String> = Vec::new();
        let atoms = body
            .iter()
            .filter(|l| matches!(l, Literal::Positive(_)))
            .count();
        let mut nested = false;
        for_each_expr(&[], &body, &mut |e| {
            let (mut all, mut level) = (Vec::new(), Vec::new());
            all_vars(e, &mut all);
            level_vars(e, &mut level);
            nested |= matches!(e, Expr::Aggregate(_)) || all.len() != level.len();
        });
        let tuples = atoms == 1 && !nested;
        if !extreme {
            for lit in body.iter_mut().filter(|_| tuples) {
                if let Literal::Positive(a) = lit {
                    // `_` in a column, or in a record there (`r([_, x])`), counts as
                    // a column of the tuples counted.
                    let mut slots: Vec<&mut Expr> = a.args.iter_mut().collect();
                    while let Some(arg) = slots.pop() {
                        match arg {
                            Expr::Wildcard(s) => {
                                let name = format!("@w{}", self.agg_vars);
                                self.agg_vars += 1;
                                *arg = var(&name, *s);
                                own.push(name);
                            }
                            Expr::Record(_, fields, _) => slots.extend(fields.iter_mut()),
                            _ => {}
                        }
                    }
                }
            }
            let mut vs = Vec::new();
            for_each_expr(&[], &body, &mut |e| level_vars(e, &mut vs));
            for v in vs {
                if !group.contains(&v.name) && !own.contains(&v.name) {
                    own.push(v.name.clone());
                }
            }
        }
        // The aggregated value, as a variable of the input rule.
        let mut value = None;
        if let Some(target) = &agg.target {
            let name = format!("@v{}", self.agg_vars);
            self.agg_vars += 1;
            body.push(Literal::Compare {
                op: CmpOp::Eq,
                lhs: var(&name, target.span()),
                rhs: target.clone(),
                span: target.span(),
            });
            value = Some(name);
        }
        // Context: the rest of the rule binds a group variable the body does not.
        let inner_bound = grounded_by(&body, &HashSet::new());
        if let Some(missing) = group.iter().find(|g| !inner_bound.contains(*g)) {
            let mut context = Vec::new();
            let reads_result = |lit: &Literal| {
                let mut vs = Vec::new();
                for_each_expr(&[], std::slice::from_ref(lit), &mut |e| {
                    all_vars(e, &mut vs)
                });
                vs.iter().any(|v| v.name.starts_with("@a"))
            };
            for lit in &rule.body {
                if matches!(lit, Literal::Positive(_)) && !reads_result(lit) {
                    context.push(lit.clone());
                }
            }
            // The comparisons whose variables the context binds, also through the
            // equalities among them (`x = z + 1`), to a fixpoint.
            let comparisons = (0..rule.body.len())
                .filter(|&k| {
                    matches!(rule.body[k], Literal::Compare { .. }) && !reads_result(&rule.body[k])
                })
                .collect();
            let taken = bound_literals(&context, &rule.body, comparisons, &HashSet::new());
            context.extend(taken.into_iter().map(|k| rule.body[k].clone()));
            let ctx_bound = grounded_by(&context, &HashSet::new());
            if !ctx_bound.contains(missing) {
                let at = inside
                    .iter()
                    .find(|v| &v.name == missing)
                    .map_or(span, |v| v.span);
                return Err(self.err(
                    at,
                    format!(
                        "`{missing}` is not bound: the body of this aggregate does not bind it, \
                         and the rest of the rule binds it only through an aggregate"
                    ),
                ));
            }
            context.extend(body);
            body = context;
        }
        // Every variable of the aggregated expression is bound by the body (with the
        // context taken above): one renamed as the aggregate's own is not the rule's.
        if let Some(target) = &agg.target {
            // The body's own aggregates (rewritten later) bind what they are equal to.
            let mut probe = body.clone();
            let (mut nested, mut counter) = (Vec::new(), self.agg_vars);
            for lit in &mut probe {
                take_literal_aggregates(lit, &mut nested, &mut counter);
            }
            let results = nested.into_iter().map(|(n, _)| n).collect();
            let bound = grounded_by(&probe, &results);
            let mut vs = Vec::new();
            all_vars(target, &mut vs);
            if let Some(v) = vs.iter().find(|v| !bound.contains(&v.name)) {
                let (name, renamed) = match v.name.split_once('\'') {
                    Some((name, _)) => (name, true),
                    None => (v.name.as_str(), false),
                };
                let why = if renamed {
                    " (a variable of the aggregated expression is the aggregate's own, as in \
                     Soufflé, even where the rest of the rule binds it)"
                } else {
                    ""
                };
                return Err(self.err(
                    v.span,
                    format!(
                        "variable `{name}` of the aggregated expression is not bound by the \
                         aggregate's body{why}"
                    ),
                ));
            }
        }
        // The input rule: group, witnesses or own variables, value.
        let mut head_vars: Vec<String> = group.clone();
        head_vars.extend(if extreme { &witnesses } else { &own }.iter().cloned());
        head_vars.extend(value.iter().cloned());
        let provisional = "@in";
        let input_rule = ast::Rule {
            head: atom(
                provisional,
                head_vars.iter().map(|v| var(v, span)).collect(),
                span,
            ),
            body,
            style: ast::Style::Souffle,
            span,
        };
        let key = format!(
            "{} {} {}",
            func.as_str(),
            group.len(),
            input_rule.canonical()
        );
        let base = format!("@{}_{:016x}", func.as_str(), stable_hash(&key));
        let input_name = format!("{base}_in");
        let agg_text = self.file.slice(span).to_string();
        if !self.by_name.contains_key(&base) {
            let mut input_rule = input_rule;
            input_rule.head.relation.name = input_name.clone();
            let input = self.internal_relation(&input_name, head_vars.len(), span);
            let mut checked = Vec::new();
            for variant in self.expand(&input_rule, out)? {
                // The input relation's columns take the types of the variables, as the
                // body types them (without a head, whose provisional column types
                // would type the value and the fields of records first).
                let mut probe = variant.clone();
                probe.head.args.clear();
                let mut body_raw = self.desugar(&probe)?;
                self.take_records_apart(&mut body_raw)?;
                let typing = self.infer_types(&probe, input, &body_raw)?;
                let types: Vec<Type> = head_vars
                    .iter()
                    .map(|v| typing.var_types[body_raw.slots.names[v] as usize])
                    .collect();
                self.relations[input as usize].types = types;
                let mut c = self.rule(&variant)?;
                c.text = format!("{input_name}(..) :- {agg_text}");
                checked.push(c);
            }
            let types = self.relations[input as usize].types.clone();
            if extreme && !witnesses.is_empty() {
                // The rows the rule picks witnesses from: the input again, as a relation
                // of its own (engines need not keep an aggregate's input as a relation).
                let wit = self.internal_relation(&format!("{base}_wit"), types.len(), span);
                self.relations[wit as usize].types = types.clone();
                let copies: Vec<ir::Rule> = checked
                    .iter()
                    .map(|c| {
                        let mut c = c.clone();
                        c.head.relation = wit;
                        c
                    })
                    .collect();
                checked.extend(copies);
            }
            out.rules.extend(checked);
            let value_ty = match value {
                Some(_) => types.last().copied().unwrap_or(Type::Number),
                None => Type::Number,
            };
            let result_ty = match func {
                AggFunc::Count => Type::Number,
                AggFunc::Mean if value_ty != Type::Float => {
                    return Err(self.err(
                        agg.target.as_ref().map_or(span, |t| t.span()),
                        format!(
                            "`mean` aggregates floats, and this is {} {value_ty} (Soufflé \
                             refuses it too)",
                            super::types::article(value_ty)
                        ),
                    ));
                }
                _ if value_ty.is_interned() => {
                    return Err(self.err(
                        agg.target.as_ref().map_or(span, |t| t.span()),
                        format!(
                            "`{}` aggregates numbers, and this is a {}",
                            func.as_str(),
                            if value_ty == Type::Symbol {
                                "symbol"
                            } else {
                                "record"
                            }
                        ),
                    ));
                }
                _ => value_ty,
            };
            let mut result_types: Vec<Type> = types[..group.len()].to_vec();
            result_types.push(result_ty);
            let head = self.internal_relation(&base, result_types.len(), span);
            self.relations[head as usize].types = result_types;
            out.aggregates.push(ir::Aggregate {
                head,
                source: input,
                group: group.len(),
                func,
                ty: value_ty,
                stratum: 0,
                text: agg_text,
                span,
            });
        }
        // What stands for the aggregate in the rule.
        let mut args: Vec<Expr> = group.iter().map(|g| var(g, span)).collect();
        args.push(var(result, span));
        let mut found = vec![Literal::Positive(atom(&base, args, span))];
        if extreme && !witnesses.is_empty() {
            let mut args: Vec<Expr> = group.iter().map(|g| var(g, span)).collect();
            args.extend(witnesses.iter().map(|w| var(w, span)));
            args.push(var(result, span));
            found.push(Literal::Positive(atom(&format!("{base}_wit"), args, span)));
        }
        let mut alternatives = vec![found];
        if matches!(func, AggFunc::Count | AggFunc::Sum) {
            let head = self.by_name[&base];
            let zero = match self.relations[head as usize].types.last() {
                Some(Type::Float) => Number::Float(0.0),
                Some(Type::Unsigned) => Number::Unsigned(0),
                _ => Number::Int(0),
            };
            let mut args: Vec<Expr> = group.iter().map(|g| var(g, span)).collect();
            args.push(Expr::Wildcard(span));
            alternatives.push(vec![
                Literal::Negative(atom(&base, args, span), span),
                Literal::Compare {
                    op: CmpOp::Eq,
                    lhs: var(result, span),
                    rhs: Expr::Num(zero, span),
                    span,
                },
            ]);
        }
        Ok(alternatives)
    }

    /// Declare an internal relation of `arity` columns (its types set by the caller).
    pub(super) fn internal_relation(&mut self, name: &str, arity: usize, span: Span) -> ir::RelId {
        let id = self.relations.len() as ir::RelId;
        self.relations.push(Relation {
            name: name.to_string(),
            column_names: (0..arity).map(|i| format!("c{i}")).collect(),
            types: vec![Type::Number; arity],
            inputs: Vec::new(),
            outputs: Vec::new(),
            printsize: false,
            implicit: false,
            eqrel: false,
            span,
        });
        self.by_name.insert(name.to_string(), id);
        id
    }
}
