//! Records in rule bodies: a record written where a bound record is matched is taken
//! apart into its fields, so later passes see only equalities of variables and
//! expressions.
//!
//! In `p(l), l = [n, rest]` (or `p([n, rest])`, which `desugar` turns into the same
//! equality with a fresh variable), `l` is bound by the atom, so the equality becomes
//! `n = l.0, rest = l.1`: each field an [`ast::Expr::Field`], which evaluates to nothing
//! for `nil` or a record made by another constructor, so the rule does not fire for
//! them. A nested pattern gets a fresh variable per level (`@fN`), a field that is a
//! constant or an expression of bound variables becomes a comparison, `_` matches
//! anything. An equality whose record side has only bound variables and whose other side
//! is not bound otherwise builds the record instead (lowered to [`crate::ir::Expr::Pack`]).
//! Two records written on both sides of `=` with the same constructor are compared field
//! by field.

use super::Checker;
use super::desugar::{RawBody, RawTerm};
use super::{children_mut, visit_vars};
use dynalog_syntax::ast::{self, Expr, Ident, Literal};
use dynalog_syntax::{CmpOp, Diagnostic, Span};

/// `rule` with every variable that a body equality defines as a written record and that
/// no atom (nor the head) names replaced by that record, as Soufflé resolves such
/// aliases (`r = [x, y], s = r, s = [v, w]` is `[x, y] = [v, w]`, compared field by
/// field below): such a variable has no column to give it a record type. `None` when
/// there is none (and for rules with aggregates, whose variables are scoped apart).
pub(super) fn inline_record_aliases(rule: &ast::Rule) -> Option<ast::Rule> {
    if super::aggregates::has_aggregate(rule) {
        return None;
    }
    let mut rule = rule.clone();
    let mut changed = false;
    while let Some((i, name, record)) = record_alias(&rule) {
        rule.body.remove(i);
        for lit in &mut rule.body {
            if let Literal::Compare { lhs, rhs, .. } = lit {
                substitute(lhs, &name, &record);
                substitute(rhs, &name, &record);
            }
        }
        changed = true;
    }
    changed.then_some(rule)
}

/// The first body equality `v = [..]` (either way round) whose variable the record does
/// not hold and no atom nor the head names: its place, the variable and the record.
fn record_alias(rule: &ast::Rule) -> Option<(usize, String, Expr)> {
    let names = |v: &str, e: &Expr| {
        let mut found = false;
        visit_vars(e, &mut |w| found |= w.name == v);
        found
    };
    rule.body.iter().enumerate().find_map(|(i, lit)| {
        let Literal::Compare {
            op: CmpOp::Eq,
            lhs,
            rhs,
            ..
        } = lit
        else {
            return None;
        };
        let (v, record) = match (lhs, rhs) {
            (Expr::Var(v), r @ Expr::Record(..)) | (r @ Expr::Record(..), Expr::Var(v)) => (v, r),
            _ => return None,
        };
        let in_atoms = rule.head.args.iter().any(|e| names(&v.name, e))
            || rule.body.iter().any(|l| match l {
                Literal::Positive(a) | Literal::Negative(a, _) => {
                    a.args.iter().any(|e| names(&v.name, e))
                }
                Literal::Compare { .. } => false,
            });
        (!names(&v.name, record) && !in_atoms).then(|| (i, v.name.clone(), record.clone()))
    })
}

/// Replace variable `name` by `by` everywhere in `e`.
fn substitute(e: &mut Expr, name: &str, by: &Expr) {
    match e {
        Expr::Var(v) if v.name == name => *e = by.clone(),
        _ => children_mut(e, |c| substitute(c, name, by)),
    }
}

/// Whether a body has an equality with a record on a side (the only place this pass
/// changes anything).
fn has_record_equality(body: &RawBody) -> bool {
    body.constraints.iter().any(|(op, l, r, _)| {
        *op == CmpOp::Eq && (matches!(l, Expr::Record(..)) || matches!(r, Expr::Record(..)))
    })
}

impl Checker<'_> {
    /// Take apart every record pattern of `body` (see the module docs).
    pub(super) fn take_records_apart(&self, body: &mut RawBody) -> Result<(), Diagnostic> {
        if !has_record_equality(body) {
            return Ok(());
        }
        let mut grounded = vec![false; body.slots.len()];
        for (negated, _, terms, _) in &body.atoms {
            if !negated {
                for t in terms {
                    if let RawTerm::Var(v, _) = t {
                        grounded[*v as usize] = true;
                    }
                }
            }
        }
        let mut fresh = 0usize;
        // Per constraint: an equality that builds its record, which grounds its
        // variable, so it must not be taken apart once that variable is grounded.
        let mut builds = vec![false; body.constraints.len()];
        loop {
            let mut changed = false;
            let mut k = 0;
            while k < body.constraints.len() {
                builds.resize(body.constraints.len(), false);
                let (op, lhs, rhs, span) = &body.constraints[k];
                if *op != CmpOp::Eq || builds[k] {
                    k += 1;
                    continue;
                }
                let span = *span;
                let all_grounded = |e: &Expr, grounded: &[bool]| {
                    let mut all = true;
                    visit_vars(e, &mut |v| all &= grounded[body.slots.slot(v) as usize]);
                    all
                };
                // Two records: field by field, when their constructors agree.
                if let (Expr::Record(b1, a1, _), Expr::Record(b2, a2, _)) = (lhs, rhs)
                    && b1.as_ref().map(|b| &b.name) == b2.as_ref().map(|b| &b.name)
                    && a1.len() == a2.len()
                    && !a1.is_empty()
                {
                    let pairs: Vec<_> = a1.iter().cloned().zip(a2.iter().cloned()).collect();
                    body.constraints.remove(k);
                    builds.remove(k);
                    for (a, b) in pairs {
                        let s = a.span().to(b.span());
                        body.constraints.push((CmpOp::Eq, a, b, s));
                    }
                    changed = true;
                    continue;
                }
                let (var, pattern) = match (lhs, rhs) {
                    (Expr::Var(v), p @ Expr::Record(..)) | (p @ Expr::Record(..), Expr::Var(v)) => {
                        (v.clone(), p.clone())
                    }
                    (Expr::Var(v), e) | (e, Expr::Var(v)) => {
                        // Plain grounding: `v = e` with `e` grounded.
                        let slot = body.slots.slot(v) as usize;
                        if !grounded[slot]
                            && !matches!(e, Expr::Wildcard(_))
                            && all_grounded(e, &grounded)
                        {
                            grounded[slot] = true;
                            changed = true;
                        }
                        k += 1;
                        continue;
                    }
                    _ => {
                        k += 1;
                        continue;
                    }
                };
                let slot = body.slots.slot(&var) as usize;
                let Expr::Record(branch, args, pspan) = pattern else {
                    k += 1;
                    continue;
                };
                if !grounded[slot] {
                    // Built from its fields once they are bound.
                    if all_grounded(
                        &Expr::Record(branch.clone(), args.clone(), pspan),
                        &grounded,
                    ) {
                        grounded[slot] = true;
                        builds[k] = true;
                        changed = true;
                    }
                    k += 1;
                    continue;
                }
                if args.is_empty() {
                    // `$Empty` or `[]`: compared as a constant.
                    k += 1;
                    continue;
                }
                // Taken apart.
                body.constraints.remove(k);
                builds.remove(k);
                let field = |index: usize, span: Span| Expr::Field {
                    record: Box::new(Expr::Var(var.clone())),
                    branch: branch.clone(),
                    index,
                    span,
                };
                let mut checked_constructor = false;
                for (index, arg) in args.into_iter().enumerate() {
                    let aspan = arg.span();
                    match arg {
                        Expr::Wildcard(_) => {}
                        Expr::Var(w) => {
                            body.constraints.push((
                                CmpOp::Eq,
                                Expr::Var(w),
                                field(index, aspan),
                                aspan,
                            ));
                            checked_constructor = true;
                        }
                        nested @ Expr::Record(..) => {
                            let u = self.fresh_field_var(body, &mut grounded, &mut fresh, aspan);
                            body.constraints.push((
                                CmpOp::Eq,
                                Expr::Var(u.clone()),
                                field(index, aspan),
                                aspan,
                            ));
                            body.constraints
                                .push((CmpOp::Eq, Expr::Var(u), nested, aspan));
                            checked_constructor = true;
                        }
                        other => {
                            body.constraints
                                .push((CmpOp::Eq, field(index, aspan), other, aspan));
                            checked_constructor = true;
                        }
                    }
                }
                if !checked_constructor {
                    // `[_, _]`, `$Leaf(_)`: only whether the record is one of these.
                    let u = self.fresh_field_var(body, &mut grounded, &mut fresh, span);
                    body.constraints
                        .push((CmpOp::Eq, Expr::Var(u), field(0, pspan), pspan));
                }
                changed = true;
            }
            if !changed {
                return Ok(());
            }
        }
    }

    /// A fresh variable `@fN` for a field of a nested pattern.
    fn fresh_field_var(
        &self,
        body: &mut RawBody,
        grounded: &mut Vec<bool>,
        fresh: &mut usize,
        span: Span,
    ) -> Ident {
        let name = format!("@f{}", *fresh);
        *fresh += 1;
        body.slots.var(&name);
        grounded.push(false);
        Ident { name, span }
    }
}
