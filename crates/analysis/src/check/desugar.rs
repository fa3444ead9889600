//! The first pass over a rule: its body resolved (relations looked up, arities checked)
//! and rewritten over numbered variable slots. An expression written as an argument of a
//! body atom becomes a fresh variable and an equality (`r(x + 1)` becomes
//! `r(_arg0), _arg0 = x + 1`), so later passes see atoms of variables, constants and `_`
//! only, and comparisons.

use super::{Checker, visit_vars};
use crate::ir::{RelId, VarId};
use dynalog_syntax::ast;
use dynalog_syntax::{CmpOp, Diagnostic, Span};
use rustc_hash::FxHashMap;

/// An atom argument before type checking.
pub(super) enum RawTerm {
    Var(VarId, Span),
    Wildcard,
    Const(ast::Expr),
}

/// A body atom before type checking: (negated, relation, arguments, span of the literal).
pub(super) type RawAtom = (bool, RelId, Vec<RawTerm>, Span);

/// A comparison before type checking: (operator, left side, right side, span).
pub(super) type RawConstraint = (CmpOp, ast::Expr, ast::Expr, Span);

/// Variable slots of one rule, numbered by first occurrence.
pub(super) struct Slots {
    /// Slot names (`x`, or `_argN` for a desugared argument).
    pub(super) vars: Vec<String>,
    pub(super) names: FxHashMap<String, VarId>,
}

impl Slots {
    pub(super) fn len(&self) -> usize {
        self.vars.len()
    }

    /// The slot of a variable name, numbering it if it is new.
    pub(super) fn var(&mut self, name: &str) -> VarId {
        if let Some(&v) = self.names.get(name) {
            return v;
        }
        let v = self.vars.len() as VarId;
        self.vars.push(name.to_string());
        self.names.insert(name.to_string(), v);
        v
    }

    fn collect_vars(&mut self, e: &ast::Expr) {
        visit_vars(e, &mut |v| {
            self.var(&v.name);
        });
    }

    /// The slot of a variable of the rule (every variable has one after [`Checker::desugar`]).
    pub(super) fn slot(&self, v: &ast::Ident) -> VarId {
        self.names[&v.name]
    }
}

/// A rule body over slots, before type checking.
pub(super) struct RawBody {
    pub(super) slots: Slots,
    /// Atoms in source order.
    pub(super) atoms: Vec<RawAtom>,
    /// Comparisons in source order, each desugared argument's equality where its atom is.
    pub(super) constraints: Vec<RawConstraint>,
}

impl RawBody {
    /// The slots, atoms and comparisons.
    pub(super) fn parts(&self) -> (&Slots, &[RawAtom], &[RawConstraint]) {
        (&self.slots, &self.atoms, &self.constraints)
    }
}

impl Checker<'_> {
    /// Resolve the relations of `rule`'s body and number its variables: slots go to the
    /// variables of atoms first (in order), then of comparisons' right and left sides,
    /// then of the head.
    pub(super) fn desugar(&self, rule: &ast::Rule) -> Result<RawBody, Diagnostic> {
        let mut rc = Slots {
            vars: Vec::new(),
            names: FxHashMap::default(),
        };
        let mut atoms: Vec<RawAtom> = Vec::new();
        let mut constraints: Vec<RawConstraint> = Vec::new();
        for lit in &rule.body {
            match lit {
                ast::Literal::Positive(a) | ast::Literal::Negative(a, _) => {
                    let negated = matches!(lit, ast::Literal::Negative(..));
                    let id = self.lookup(&a.relation)?;
                    self.check_arity(a, id)?;
                    let mut terms = Vec::new();
                    for arg in &a.args {
                        let t = match arg {
                            ast::Expr::Var(v) => RawTerm::Var(rc.var(&v.name), v.span),
                            ast::Expr::Wildcard(_) => RawTerm::Wildcard,
                            ast::Expr::Str(..) | ast::Expr::Num(..) => RawTerm::Const(arg.clone()),
                            _ => {
                                // r(x + 1) becomes r(_argN), _argN = x + 1.
                                let name = format!("_arg{}", rc.vars.len());
                                let slot = rc.var(&name);
                                let span = arg.span();
                                constraints.push((
                                    CmpOp::Eq,
                                    ast::Expr::Var(ast::Ident { name, span }),
                                    arg.clone(),
                                    span,
                                ));
                                RawTerm::Var(slot, span)
                            }
                        };
                        terms.push(t);
                    }
                    atoms.push((negated, id, terms, lit.span()));
                }
                ast::Literal::Compare { op, lhs, rhs, span } => {
                    constraints.push((*op, lhs.clone(), rhs.clone(), *span));
                }
            }
        }
        for (_, _, rhs, _) in &constraints {
            rc.collect_vars(rhs);
        }
        for (_, lhs, _, _) in &constraints {
            rc.collect_vars(lhs);
        }
        for arg in &rule.head.args {
            rc.collect_vars(arg);
        }
        Ok(RawBody {
            slots: rc,
            atoms,
            constraints,
        })
    }
}
