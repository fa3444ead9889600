//! Evaluation order of a rule body: positive atoms in source order, and every
//! comparison, assignment and negated atom as early as its variables are bound (see
//! [`order_body`]).

use super::Checker;
use super::floats::bits_decide_equality;
use crate::ir::{self, Literal, Term, VarId};
use crate::value::Type;
use dynalog_syntax::{CmpOp, Diagnostic, Span};

impl Checker<'_> {
    /// [`order_body`], with the error for a comparison that can never be placed.
    pub(super) fn order(
        &self,
        atoms: Vec<(bool, ir::Atom, Span)>,
        constraints: Vec<Constraint>,
        nvars: usize,
    ) -> Result<Vec<Literal>, Diagnostic> {
        order_body(atoms, constraints, nvars).map_err(|span| {
            // Safety passed, so this is a cycle of assignments such as `x = y, y = x`.
            self.err(
                span,
                "this comparison's variables are not grounded: each must occur in a positive body atom or be bound with `=` from grounded values",
            )
        })
    }
}

/// A comparison after type checking, waiting for its place in the body.
pub(super) struct Constraint {
    pub(super) op: CmpOp,
    pub(super) ty: Type,
    pub(super) lhs: ir::Expr,
    pub(super) rhs: ir::Expr,
    pub(super) span: Span,
}

/// Put a rule's literals in evaluation order: positive atoms in source order, and each
/// comparison, assignment and negated atom as early as its variables are bound. An
/// equality with one side a lone unbound variable becomes an assignment, except a float
/// equality whose variable a positive atom binds, unless the other side is a constant
/// whose bits decide equality: an atom matches by bits, and float equality is IEEE's
/// (see `floats`). Returns the span of a comparison that can never be placed.
///
/// This is the outcome of repeated passes (comparisons in order, then negated atoms in
/// order, until a pass places nothing) after the start and after each positive atom,
/// but a literal is looked at again only when one of its variables has been bound
/// since, and readiness is a count of unbound variables: linear in the rule's size,
/// where full passes are quadratic in its number of literals.
fn order_body(
    atoms: Vec<(bool, ir::Atom, Span)>,
    constraints: Vec<Constraint>,
    nvars: usize,
) -> Result<Vec<Literal>, Span> {
    use std::collections::BTreeSet;
    let mut bound = vec![false; nvars];
    let mut in_positive = vec![false; nvars];
    for (_, atom, _) in atoms.iter().filter(|(negated, _, _)| !negated) {
        for t in &atom.args {
            if let Term::Var(v) = t {
                in_positive[*v as usize] = true;
            }
        }
    }
    let mut body = Vec::new();
    // Distinct variables of each literal not bound yet, and the literals using a slot.
    let mut unbound_c = vec![0usize; constraints.len()];
    let mut users_c: Vec<Vec<usize>> = vec![Vec::new(); nvars];
    for (k, c) in constraints.iter().enumerate() {
        for e in [&c.lhs, &c.rhs] {
            ir_visit_vars(e, &mut |v| {
                if users_c[v as usize].last() != Some(&k) {
                    users_c[v as usize].push(k);
                    unbound_c[k] += 1;
                }
            });
        }
    }
    let mut pending: Vec<Option<Constraint>> = constraints.into_iter().map(Some).collect();
    let mut pending_neg: Vec<Option<ir::Atom>> = atoms
        .iter()
        .filter(|(negated, _, _)| *negated)
        .map(|(_, a, _)| Some(a.clone()))
        .collect();
    let mut unbound_n = vec![0usize; pending_neg.len()];
    let mut users_n: Vec<Vec<usize>> = vec![Vec::new(); nvars];
    for (k, a) in pending_neg.iter().flatten().enumerate() {
        for t in &a.args {
            if let Term::Var(v) = t
                && users_n[*v as usize].last() != Some(&k)
            {
                users_n[*v as usize].push(k);
                unbound_n[k] += 1;
            }
        }
    }
    // The literals to look at in the current pass.
    let mut this_c: BTreeSet<usize> = (0..pending.len()).collect();
    let mut this_n: BTreeSet<usize> = (0..pending_neg.len()).collect();
    // Bind `v` while the pass is at comparison `at` (`None` between passes): literals
    // using it are looked at again, later in this pass if they come after `at`.
    let bind = |v: VarId,
                at: Option<usize>,
                bound: &mut Vec<bool>,
                unbound_c: &mut Vec<usize>,
                unbound_n: &mut Vec<usize>,
                this_c: &mut BTreeSet<usize>,
                next_c: &mut BTreeSet<usize>,
                this_n: &mut BTreeSet<usize>| {
        if std::mem::replace(&mut bound[v as usize], true) {
            return;
        }
        for &q in &users_c[v as usize] {
            unbound_c[q] -= 1;
            match at {
                Some(k) if q <= k => next_c.insert(q),
                _ => this_c.insert(q),
            };
        }
        for &q in &users_n[v as usize] {
            unbound_n[q] -= 1;
            this_n.insert(q);
        }
    };
    let mut next_c: BTreeSet<usize> = BTreeSet::new();
    let mut atoms = atoms.into_iter().filter(|(negated, _, _)| !negated);
    loop {
        // One pass: comparisons, then negated atoms.
        while let Some(k) = this_c.pop_first() {
            let Some(c) = &pending[k] else { continue };
            let lone = |v: &VarId, e: &ir::Expr| {
                c.op == CmpOp::Eq
                    && unbound_c[k] == 1
                    && !bound[*v as usize]
                    && !ir_mentions(e, *v)
                    && (c.ty != Type::Float
                        || !in_positive[*v as usize]
                        || matches!(e, ir::Expr::Const(bits) if bits_decide_equality(*bits)))
            };
            let lit = match (&c.lhs, &c.rhs) {
                _ if unbound_c[k] == 0 => Literal::Filter {
                    op: c.op,
                    ty: c.ty,
                    lhs: c.lhs.clone(),
                    rhs: c.rhs.clone(),
                },
                (ir::Expr::Var(v), e) | (e, ir::Expr::Var(v)) if lone(v, e) => Literal::Assign {
                    var: *v,
                    expr: e.clone(),
                },
                _ => continue,
            };
            pending[k] = None;
            if let Literal::Assign { var, .. } = &lit {
                bind(
                    *var,
                    Some(k),
                    &mut bound,
                    &mut unbound_c,
                    &mut unbound_n,
                    &mut this_c,
                    &mut next_c,
                    &mut this_n,
                );
            }
            body.push(lit);
        }
        while let Some(k) = this_n.pop_first() {
            if unbound_n[k] == 0
                && let Some(a) = pending_neg[k].take()
            {
                body.push(Literal::Not(a));
            }
        }
        if !next_c.is_empty() {
            std::mem::swap(&mut this_c, &mut next_c);
            continue;
        }
        // Nothing more to place: the next positive atom.
        let Some((_, atom, _)) = atoms.next() else {
            break;
        };
        for t in &atom.args {
            if let Term::Var(v) = t {
                bind(
                    *v,
                    None,
                    &mut bound,
                    &mut unbound_c,
                    &mut unbound_n,
                    &mut this_c,
                    &mut next_c,
                    &mut this_n,
                );
            }
        }
        body.push(Literal::Atom(atom));
    }
    match pending.into_iter().flatten().next() {
        Some(c) => Err(c.span),
        None => Ok(body),
    }
}

/// Call `f` on every variable an IR expression reads (with repeats).
fn ir_visit_vars(e: &ir::Expr, f: &mut impl FnMut(VarId)) {
    e.for_each_var(f)
}

/// Whether an IR expression reads variable `v`.
fn ir_mentions(e: &ir::Expr, v: VarId) -> bool {
    let mut found = false;
    ir_visit_vars(e, &mut |w| found |= w == v);
    found
}
