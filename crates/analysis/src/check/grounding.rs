//! Safety of a rule: every variable it uses is grounded, that is bound to finitely many
//! values by the body. A variable is grounded if a positive atom binds it, or an
//! equality `v = e` (either way round) has every variable of `e` grounded. The head,
//! negated atoms and comparisons may use grounded variables only; `_` is allowed only
//! in body atoms.

use super::desugar::{RawBody, RawTerm};
use super::{Checker, visit_vars};
use dynalog_syntax::ast;
use dynalog_syntax::{CmpOp, Diagnostic};

impl Checker<'_> {
    /// Check that every variable of `rule` is grounded; the first offender (head
    /// arguments, then negated atoms, then comparisons, in source order) is the error.
    pub(super) fn check_grounded(
        &self,
        rule: &ast::Rule,
        body: &RawBody,
    ) -> Result<(), Diagnostic> {
        let (rc, atoms, constraints) = body.parts();
        let nvars = rc.len();
        // A variable is grounded if a positive atom binds it, or an equality `v = e`
        // (either way round) has every variable of `e` grounded: a least fixpoint,
        // computed by counting each equality side's ungrounded variables.
        let mut grounded = vec![false; nvars];
        let mut newly: Vec<usize> = Vec::new();
        for (negated, _, terms, _) in atoms {
            if !negated {
                for t in terms {
                    if let RawTerm::Var(v, _) = t
                        && !grounded[*v as usize]
                    {
                        grounded[*v as usize] = true;
                        newly.push(*v as usize);
                    }
                }
            }
        }
        // (target slot, ungrounded variables of the other side)
        let mut eq_sides: Vec<(usize, usize)> = Vec::new();
        let mut eq_readers: Vec<Vec<usize>> = vec![Vec::new(); nvars];
        for (op, lhs, rhs, _) in constraints {
            if *op != CmpOp::Eq {
                continue;
            }
            for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                if let ast::Expr::Var(v) = a {
                    if matches!(b, ast::Expr::Wildcard(_)) {
                        continue;
                    }
                    let k = eq_sides.len();
                    let mut missing = 0;
                    visit_vars(b, &mut |v| {
                        let slot = rc.slot(v) as usize;
                        if !grounded[slot] && eq_readers[slot].last() != Some(&k) {
                            eq_readers[slot].push(k);
                            missing += 1;
                        }
                    });
                    eq_sides.push((rc.slot(v) as usize, missing));
                    if missing == 0 && !grounded[eq_sides[k].0] {
                        grounded[eq_sides[k].0] = true;
                        newly.push(eq_sides[k].0);
                    }
                }
            }
        }
        while let Some(slot) = newly.pop() {
            for &k in &eq_readers[slot] {
                let (target, missing) = &mut eq_sides[k];
                *missing -= 1;
                if *missing == 0 && !grounded[*target] {
                    grounded[*target] = true;
                    newly.push(*target);
                }
            }
        }
        let ungrounded = |e: &ast::Expr| -> Option<ast::Ident> {
            let mut found = None;
            visit_vars(e, &mut |v| {
                if found.is_none() && !grounded[rc.slot(v) as usize] {
                    found = Some(v.clone());
                }
            });
            found
        };
        for arg in &rule.head.args {
            if let ast::Expr::Wildcard(s) = arg {
                return Err(self.err(*s, "`_` is not allowed in a rule head"));
            }
            if let Some(v) = ungrounded(arg) {
                return Err(self.err(
                    v.span,
                    format!(
                        "variable `{}` in the head is not grounded: it must occur in a positive body atom or be bound with `=`",
                        v.name
                    ),
                ));
            }
        }
        for (negated, _, terms, _) in atoms {
            if *negated {
                for t in terms {
                    if let RawTerm::Var(v, span) = t
                        && !grounded[*v as usize]
                    {
                        return Err(self.err(
                            *span,
                            format!(
                                "variable `{}` in a negated atom is not grounded: it must occur in a positive body atom (use `_` for a column that may be anything)",
                                rc.vars[*v as usize]
                            ),
                        ));
                    }
                }
            }
        }
        for (_, lhs, rhs, _) in constraints {
            for e in [lhs, rhs] {
                if let ast::Expr::Wildcard(s) = e {
                    return Err(self.err(*s, "`_` is not allowed in a comparison"));
                }
                if let Some(v) = ungrounded(e) {
                    return Err(self.err(
                        v.span,
                        format!(
                            "variable `{}` in a comparison is not grounded: it must occur in a positive body atom or be bound with `=`",
                            v.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
