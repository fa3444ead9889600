//! `range(from, to)` and `range(from, to, step)`, rewritten into plain rules before the
//! other passes see a rule, so that every engine maintains them incrementally with no
//! operation of its own.
//!
//! As in Soufflé, `range` stands for each value from `from` up to (not including) `to`
//! by `step` (by 1, or by -1 when `from > to`, without one); a rule with a range fires
//! once per value. Take `r(x, i) :- n(x), i = range(0, x).` Its range becomes:
//!
//! * a **need** relation of the bounds the rest of the body asks for, made by the rule
//!   `@range_…_need(0, x) :- n(x).` (a fact when the body has nothing else);
//! * a **range** relation `@range_…(from, to, i)` holding every value of every needed
//!   range, made by a start rule and a step rule:
//!   `@range_…(f, t, f) :- @range_…_need(f, t), f != t.`,
//!   `@range_…(f, t, j) :- @range_…(f, t, i), f < t, j = i + 1, j < t.` (and `- 1`,
//!   `>` counting down); with a step, its sign decides, and the step rule also requires
//!   `j` to move (`j > i`), so that neither wrapping integers nor float rounding can
//!   loop; a step of 0 gives `from` alone, as in Soufflé;
//! * and in the rule, the atom `@range_…(0, x, i)` in place of the range.
//!
//! The need rule's body is the literals of the rest of the body whose variables it
//! binds without this range: not those that read its value, directly or through `=`
//! (`x < 2` of `x = range(0, 3), x < 2`), which only the rule itself reads, so that a
//! variable a range binds is grounded like one bound by `=`. The bounds must be bound
//! by that body (a located error otherwise); they may come from another range's
//! value, whose atom then joins the need rule, the ranges counted in the order their
//! bounds get bound. A range inside an aggregate's body (`n = count : { i = range(0,
//! x), i % 2 = 0 }`) is rewritten the same way, its atom put into the aggregate's
//! body; its bounds must be bound outside the aggregates (a located error otherwise,
//! as is a range in the value an aggregate takes or in an aggregate inside an
//! aggregate). The relations' columns are of the range's type: that of its arguments
//! (a float or unsigned literal, or a variable the rest of the body types), else that
//! of the place its value goes (a head column, an atom's column, directly or through
//! `v = range(..)`), else `number`. They are named after a hash of the need rule, so
//! the same range written twice is one pair of relations and an edited program keeps
//! the names of the ranges it keeps.

use super::Checker;
use super::aggregates::{atom, grounded_by, var};
use super::types::infer_type;
use crate::value::Type;
use dynalog_syntax::ast::{self, ArithOp, Expr, Functor, Ident, Literal, Number};
use dynalog_syntax::{CmpOp, Diagnostic, Span};
use std::collections::{HashMap, HashSet};

/// Whether a rule has a `range` anywhere (aggregate bodies included).
pub(super) fn has_range(rule: &ast::Rule) -> bool {
    let mut found = false;
    let mut visit = |e: &Expr| found |= contains_range(e, true);
    rule.head.args.iter().for_each(&mut visit);
    for lit in &rule.body {
        match lit {
            Literal::Positive(a) | Literal::Negative(a, _) => a.args.iter().for_each(&mut visit),
            Literal::Compare { lhs, rhs, .. } => {
                visit(lhs);
                visit(rhs);
            }
        }
    }
    found
}

/// Whether `e` has a `range` (inside aggregates too if `deep`).
fn contains_range(e: &Expr, deep: bool) -> bool {
    e.find(deep, &mut |x| matches!(x, Expr::Call(Functor::Range, ..)))
        .is_some()
}

/// The first aggregate of `e` with a `range` inside, if any.
fn range_in_aggregate(e: &Expr) -> Option<Span> {
    e.find(false, &mut |x| {
        matches!(x, Expr::Aggregate(_)) && contains_range(x, true)
    })
    .map(Expr::span)
}

/// Calls `f` on every expression of the rule's head and body (not inside aggregates).
fn each_expr_mut(rule: &mut ast::Rule, f: &mut dyn FnMut(&mut Expr)) {
    rule.head.args.iter_mut().for_each(&mut *f);
    for lit in &mut rule.body {
        literal_exprs_mut(lit, f);
    }
}

fn literal_exprs_mut(lit: &mut Literal, f: &mut dyn FnMut(&mut Expr)) {
    match lit {
        Literal::Positive(a) | Literal::Negative(a, _) => a.args.iter_mut().for_each(f),
        Literal::Compare { lhs, rhs, .. } => {
            f(lhs);
            f(rhs);
        }
    }
}

/// Calls `f` on every aggregate of `e`, in order (not on those inside an aggregate).
fn each_aggregate_mut(e: &mut Expr, f: &mut dyn FnMut(&mut ast::Aggregate)) {
    match e {
        Expr::Aggregate(a) => f(a),
        Expr::Neg(i, _) | Expr::Unary(_, i, _) => each_aggregate_mut(i, f),
        Expr::Binary { lhs, rhs, .. } => {
            each_aggregate_mut(lhs, f);
            each_aggregate_mut(rhs, f);
        }
        Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
            args.iter_mut().for_each(|a| each_aggregate_mut(a, f))
        }
        Expr::Field { record, .. } => each_aggregate_mut(record, f),
        _ => {}
    }
}

/// Take the ranges out of the bodies of the rule's aggregates (each replaced by a fresh
/// variable), with the number of the aggregate each was in. A range in the value an
/// aggregate takes, or in an aggregate inside an aggregate, is a located error.
fn take_aggregate_ranges(
    rule: &mut ast::Rule,
    counter: &mut usize,
    file: &dynalog_syntax::SourceFile,
) -> Result<Vec<(usize, Taken)>, Diagnostic> {
    let mut out = Vec::new();
    let mut failed: Option<Diagnostic> = None;
    let mut k = 0;
    each_expr_mut(rule, &mut |e| {
        each_aggregate_mut(e, &mut |agg| {
            let this = k;
            k += 1;
            if failed.is_some() {
                return;
            }
            if let Some(t) = agg.target.as_ref().filter(|t| contains_range(t, true)) {
                failed = Some(super::err(
                    file,
                    t.span(),
                    "`range` in the value an aggregate takes is not supported: bind it in the \
                     aggregate's body",
                ));
                return;
            }
            for lit in &mut agg.body {
                let mut found = Vec::new();
                literal_exprs_mut(lit, &mut |side| {
                    if failed.is_some() {
                        return;
                    }
                    if let Some(span) = range_in_aggregate(side) {
                        failed = Some(super::err(
                            file,
                            span,
                            "`range` inside an aggregate inside an aggregate is not supported",
                        ));
                    } else if let Err(d) = take_ranges(side, &mut found, counter, file) {
                        failed = Some(d);
                    }
                });
                out.extend(found.into_iter().map(|t| (this, t)));
            }
        })
    });
    match failed {
        Some(d) => Err(d),
        None => Ok(out),
    }
}

/// The expressions of a literal: an atom's arguments, a comparison's sides.
fn literal_exprs(l: &Literal) -> Vec<&Expr> {
    match l {
        Literal::Positive(a) | Literal::Negative(a, _) => a.args.iter().collect(),
        Literal::Compare { lhs, rhs, .. } => vec![lhs, rhs],
    }
}

/// Calls `f` on every variable of `e`, inside its aggregates too.
fn each_var_deep(e: &Expr, f: &mut dyn FnMut(&str)) {
    e.find(true, &mut |x| {
        if let Expr::Var(v) = x {
            f(&v.name);
        }
        false
    });
}

/// Whether a literal reads one of `vars`, also inside its aggregates.
fn reads_any(l: &Literal, vars: &HashSet<String>) -> bool {
    let hit = |e: &&Expr| {
        e.find(
            true,
            &mut |x| matches!(x, Expr::Var(v) if vars.contains(&v.name)),
        )
        .is_some()
    };
    literal_exprs(l).iter().any(hit)
}

/// The variables a rule uses only inside its aggregates (`y` of `c = count : { n(y) }`):
/// local to them, so bound for what binds the rule's own variables (`c` is bound once
/// the variables the aggregate shares with the rule are). A range's bounds are outside
/// any aggregate, also those of a range in an aggregate's body, which must be bound
/// outside it.
fn aggregate_locals<'a>(
    rule: &ast::Rule,
    ranges: impl Iterator<Item = &'a Taken>,
) -> HashSet<String> {
    let mut outside = HashSet::new();
    let mut all = HashSet::new();
    let exprs = rule
        .head
        .args
        .iter()
        .chain(rule.body.iter().flat_map(literal_exprs));
    for e in exprs {
        super::visit_vars(e, &mut |v| {
            outside.insert(v.name.clone());
        });
        each_var_deep(e, &mut |v| {
            all.insert(v.to_string());
        });
    }
    for t in ranges {
        for a in &t.args {
            each_var_deep(a, &mut |v| {
                outside.insert(v.to_string());
            });
        }
    }
    all.retain(|v| !outside.contains(v));
    all
}

/// Which of the literals `candidates` (indices into `body`) may join a need rule's
/// body beside `base`, whose variables it binds: those whose every variable (inside
/// aggregates too) `base` and the kept candidates bind, to a fixpoint (`locals`, the
/// variables only aggregates use, count as bound). The others read a variable that
/// only a range not yet counted binds (`x < 2` of `x = range(0, 3), x < 2`), or that
/// nothing binds (the rule's own check reports it). Leaving a literal out of a need
/// rule only lets it ask for more bounds than the rule reads: the rule still joins
/// the range's values with its whole body. (An aggregate's input rule takes the
/// comparisons of the rest of its rule the same way.)
pub(super) fn bound_literals(
    base: &[Literal],
    body: &[Literal],
    mut candidates: Vec<usize>,
    locals: &HashSet<String>,
) -> Vec<usize> {
    loop {
        let mut all = base.to_vec();
        all.extend(candidates.iter().map(|&k| body[k].clone()));
        let bound = grounded_by(&all, locals);
        let before = candidates.len();
        candidates.retain(|&k| {
            let mut ok = true;
            for e in literal_exprs(&body[k]) {
                each_var_deep(e, &mut |v| ok &= bound.contains(v));
            }
            ok
        });
        if candidates.len() == before {
            return candidates;
        }
    }
}

/// The atom of the range relation `base` that gives `t`'s values to its variable.
fn range_atom(base: &str, t: &Taken) -> Literal {
    let mut args = t.args.clone();
    args.push(var(&t.var, t.span));
    Literal::Positive(atom(base, args, t.span))
}

/// A range taken out of a rule: its fresh variable, arguments and span.
struct Taken {
    var: String,
    args: Vec<Expr>,
    span: Span,
}

/// Replace every `range(..)` of `e` (outside aggregates) by a fresh variable.
fn take_ranges(
    e: &mut Expr,
    found: &mut Vec<Taken>,
    counter: &mut usize,
    file: &dynalog_syntax::SourceFile,
) -> Result<(), Diagnostic> {
    match e {
        Expr::Call(Functor::Range, args, span) => {
            if let Some(inner) = args.iter().find(|a| contains_range(a, true)) {
                return Err(super::err(
                    file,
                    inner.span(),
                    "a `range` cannot take its bounds from another `range`",
                ));
            }
            let name = format!("@r{}", *counter);
            *counter += 1;
            found.push(Taken {
                var: name.clone(),
                args: std::mem::take(args),
                span: *span,
            });
            *e = var(&name, *span);
        }
        Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
            for a in args {
                take_ranges(a, found, counter, file)?;
            }
        }
        Expr::Neg(i, _) | Expr::Unary(_, i, _) => take_ranges(i, found, counter, file)?,
        Expr::Binary { lhs, rhs, .. } => {
            take_ranges(lhs, found, counter, file)?;
            take_ranges(rhs, found, counter, file)?;
        }
        _ => {}
    }
    Ok(())
}

fn cmp(op: CmpOp, lhs: Expr, rhs: Expr, span: Span) -> Literal {
    Literal::Compare { op, lhs, rhs, span }
}

fn bin(op: ArithOp, lhs: Expr, rhs: Expr, span: Span) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
        span,
    }
}

/// The variables of an expression (outside aggregates).
fn expr_vars(e: &Expr, out: &mut Vec<String>) {
    super::visit_vars(e, &mut |v| out.push(v.name.clone()));
}

impl Checker<'_> {
    /// The rules a rule with ranges stands for: per range its need and range rules,
    /// then the rule itself reading the range relations. Each is checked as a rule of
    /// its own by the caller (the need rule may be a fact).
    pub(super) fn expand_ranges(&mut self, rule: &ast::Rule) -> Result<Vec<ast::Rule>, Diagnostic> {
        let mut rule = rule.clone();
        let mut found = Vec::new();
        let mut counter = self.agg_vars;
        let file = self.file;
        // The ranges in aggregates' bodies, by the aggregate's number in the rule.
        let in_aggregates = take_aggregate_ranges(&mut rule, &mut counter, file)?;
        let inner: HashSet<String> = in_aggregates.iter().map(|(_, t)| t.var.clone()).collect();
        let mut failed = None;
        each_expr_mut(&mut rule, &mut |e| {
            if failed.is_none()
                && let Err(d) = take_ranges(e, &mut found, &mut counter, file)
            {
                failed = Some(d);
            }
        });
        if let Some(d) = failed {
            return Err(d);
        }
        self.agg_vars = counter;
        let locals = aggregate_locals(
            &rule,
            found.iter().chain(in_aggregates.iter().map(|(_, t)| t)),
        );
        // What binds a range's bounds: the literals of the rest of the body that read no
        // range's value but those of the ranges already counted, whose variables they
        // bind, and those ranges' atoms (`i = range(0, x), j = range(i, x)` counts `j`
        // from each `i`). The ranges are counted in the order their bounds get bound
        // (`j = range(i, x), i = range(0, x)` too), first written first.
        let written = rule.body.clone();
        let mut taken = vec![false; written.len()];
        let mut context: Vec<Literal> = Vec::new();
        let mut pending: Vec<&Taken> = found.iter().collect();
        let mut out = Vec::new();
        let unbound = |v: &str| {
            format!(
                "variable `{v}` is not grounded: the bounds of a `range` must be bound by the \
                 rest of the body"
            )
        };
        while !pending.is_empty() {
            let waiting: HashSet<String> = pending.iter().map(|t| t.var.clone()).collect();
            let candidates = (0..written.len())
                .filter(|&k| {
                    !taken[k]
                        && !reads_any(&written[k], &inner)
                        && !reads_any(&written[k], &waiting)
                })
                .collect();
            for k in bound_literals(&context, &written, candidates, &locals) {
                taken[k] = true;
                context.push(written[k].clone());
            }
            let bound = grounded_by(&context, &locals);
            let ready =
                (pending.iter()).position(|t| self.check_bounds(t, &bound, &unbound).is_ok());
            let t = match ready {
                Some(k) => pending.remove(k),
                None => {
                    // None is ready: the first written one's unbound variable.
                    self.check_bounds(pending[0], &bound, &unbound)?;
                    pending.remove(0)
                }
            };
            let var_type = self.context_types(&context)?;
            let ty = self.range_type(t, &rule, &var_type);
            let (base, rules) = self.range_rules(t, &context, ty)?;
            out.extend(rules);
            let range_atom = range_atom(&base, t);
            context.push(range_atom.clone());
            rule.body.push(range_atom);
        }
        // A range in an aggregate's body counts from bounds the rule's body binds
        // outside the aggregates (`n = count : { i = range(0, x), ... }` with `x` bound
        // outside): its need rule is made of the rule's literals that read no range in
        // an aggregate, and its atom goes into the aggregate's body.
        let candidates = (0..rule.body.len())
            .filter(|&k| !reads_any(&rule.body[k], &inner))
            .collect();
        let context: Vec<Literal> = bound_literals(&[], &rule.body, candidates, &locals)
            .into_iter()
            .map(|k| rule.body[k].clone())
            .collect();
        let bound = grounded_by(&context, &locals);
        let var_type = self.context_types(&context)?;
        for (k, t) in &in_aggregates {
            self.check_bounds(t, &bound, &|v| {
                format!(
                    "variable `{v}` is not bound outside the aggregate: the bounds of a `range` \
                     inside an aggregate must be bound by the rest of the rule's body"
                )
            })?;
            let ty = self.range_type(t, &rule, &var_type);
            let (base, rules) = self.range_rules(t, &context, ty)?;
            out.extend(rules);
            let range_atom = range_atom(&base, t);
            let mut n = 0;
            each_expr_mut(&mut rule, &mut |e| {
                each_aggregate_mut(e, &mut |agg| {
                    if n == *k {
                        agg.body.push(range_atom.clone());
                    }
                    n += 1;
                })
            });
        }
        out.push(rule);
        Ok(out)
    }

    /// That `t` has two or three arguments, and that `bound` binds their variables
    /// (`unbound(v)` is the error's message when it does not bind `v`).
    fn check_bounds(
        &self,
        t: &Taken,
        bound: &HashSet<String>,
        unbound: &dyn Fn(&str) -> String,
    ) -> Result<(), Diagnostic> {
        if !(2..=3).contains(&t.args.len()) {
            return Err(self.err(
                t.span,
                "`range(from, to)` or `range(from, to, step)` takes two or three arguments",
            ));
        }
        for a in &t.args {
            let mut vs = Vec::new();
            expr_vars(a, &mut vs);
            if let Some(v) = vs.iter().find(|v| !bound.contains(*v)) {
                return Err(self.err(a.span(), unbound(v)));
            }
        }
        Ok(())
    }

    /// The types the context's atoms give its variables (by first occurrence).
    fn context_types(&self, context: &[Literal]) -> Result<HashMap<String, Type>, Diagnostic> {
        let mut types = HashMap::new();
        for l in context {
            if let Literal::Positive(a) = l {
                let rel = self.lookup(&a.relation)?;
                let rel = &self.relations[rel as usize];
                for (e, &ty) in a.args.iter().zip(&rel.types) {
                    if let Expr::Var(v) = e {
                        types.entry(v.name.clone()).or_insert(ty);
                    }
                }
            }
        }
        Ok(types)
    }

    /// The type of a range: its arguments', else its value's place's, else `number`.
    fn range_type(&self, t: &Taken, rule: &ast::Rule, vars: &HashMap<String, Type>) -> Type {
        let of_var = |v: &Ident| vars.get(&v.name).copied();
        if let Some(ty) = t.args.iter().find_map(|a| infer_type(self, a, &of_var)) {
            return ty;
        }
        // The names its value goes by: its variable, and `v` of `v = range(..)`.
        let mut names: HashSet<&str> = HashSet::from([t.var.as_str()]);
        for l in &rule.body {
            if let Literal::Compare {
                op: CmpOp::Eq,
                lhs: Expr::Var(a),
                rhs: Expr::Var(b),
                ..
            } = l
            {
                if a.name == t.var {
                    names.insert(&b.name);
                } else if b.name == t.var {
                    names.insert(&a.name);
                }
            }
        }
        let column = |a: &ast::Atom| -> Option<Type> {
            let rel = self.by_name.get(&a.relation.name)?;
            let rel = &self.relations[*rel as usize];
            a.args.iter().zip(&rel.types).find_map(|(e, &ty)| {
                matches!(e, Expr::Var(v) if names.contains(v.name.as_str())).then_some(ty)
            })
        };
        column(&rule.head)
            .or_else(|| {
                rule.body.iter().find_map(|l| match l {
                    Literal::Positive(a) => column(a),
                    _ => None,
                })
            })
            .unwrap_or(Type::Number)
    }

    /// The need and range rules of `t` at type `ty`, and the range relation's name.
    fn range_rules(
        &mut self,
        t: &Taken,
        context: &[Literal],
        ty: Type,
    ) -> Result<(String, Vec<ast::Rule>), Diagnostic> {
        let span = t.span;
        let stepped = t.args.len() == 3;
        let need_rule = ast::Rule {
            head: atom("@need", t.args.clone(), span),
            body: context.to_vec(),
            style: ast::Style::Souffle,
            span,
        };
        let key = format!("range {} {}", ty.name(), need_rule.canonical());
        let base = format!("@range_{:016x}", super::aggregates::stable_hash(&key));
        let need = format!("{base}_need");
        let arity = t.args.len();
        for (name, n) in [(&need, arity), (&base, arity + 1)] {
            if !self.by_name.contains_key(name.as_str()) {
                let id = self.internal_relation(name, n, span);
                self.relations[id as usize].types = vec![ty; n];
            }
        }
        let num = |n: i32| {
            Expr::Num(
                match ty {
                    Type::Float => Number::Float(f64::from(n)),
                    Type::Unsigned => Number::Unsigned(n.unsigned_abs().into()),
                    _ => Number::Int(n.into()),
                },
                span,
            )
        };
        let v = |n: &str| var(n, span);
        let bounds: Vec<Expr> = ["@from", "@to", "@step"][..arity]
            .iter()
            .map(|n| v(n))
            .collect();
        let with = |extra: &[&str]| {
            let mut args = bounds.clone();
            args.extend(extra.iter().map(|n| v(n)));
            args
        };
        let rule = |head: Vec<Expr>, body: Vec<Literal>| ast::Rule {
            head: atom(&base, head, span),
            body,
            style: ast::Style::Souffle,
            span,
        };
        let range_atom = Literal::Positive(atom(&base, with(&["@i"]), span));
        let need_atom = Literal::Positive(atom(&need, bounds.clone(), span));
        let next =
            |op: ArithOp, by: Expr| cmp(CmpOp::Eq, v("@j"), bin(op, v("@i"), by, span), span);
        let mut rules = vec![ast::Rule {
            head: atom(&need, t.args.clone(), span),
            ..need_rule
        }];
        if stepped {
            let zero = || num(0);
            for (dir, sign) in [(CmpOp::Lt, CmpOp::Gt), (CmpOp::Gt, CmpOp::Lt)] {
                rules.push(rule(
                    with(&["@from"]),
                    vec![
                        need_atom.clone(),
                        cmp(dir, v("@from"), v("@to"), span),
                        cmp(sign, v("@step"), zero(), span),
                    ],
                ));
                rules.push(rule(
                    with(&["@j"]),
                    vec![
                        range_atom.clone(),
                        cmp(sign, v("@step"), zero(), span),
                        next(ArithOp::Add, v("@step")),
                        cmp(dir, v("@j"), v("@to"), span),
                        cmp(sign, v("@j"), v("@i"), span),
                    ],
                ));
            }
            // A step of 0: the start alone.
            rules.push(rule(
                with(&["@from"]),
                vec![
                    need_atom,
                    cmp(CmpOp::Ne, v("@from"), v("@to"), span),
                    cmp(CmpOp::Eq, v("@step"), zero(), span),
                ],
            ));
        } else {
            rules.push(rule(
                with(&["@from"]),
                vec![need_atom, cmp(CmpOp::Ne, v("@from"), v("@to"), span)],
            ));
            for (dir, op) in [(CmpOp::Lt, ArithOp::Add), (CmpOp::Gt, ArithOp::Sub)] {
                rules.push(rule(
                    with(&["@j"]),
                    vec![
                        range_atom.clone(),
                        cmp(dir, v("@from"), v("@to"), span),
                        next(op, num(1)),
                        cmp(dir, v("@j"), v("@to"), span),
                    ],
                ));
            }
        }
        Ok((base, rules))
    }
}
