//! `autoinc()`: a number for each binding of a rule's body, kept by the program's
//! table ([`crate::SymbolTable::autoinc`]).
//!
//! Soufflé counts every evaluation of `autoinc()`, so its numbers depend on the order
//! it evaluates in, which an incremental engine cannot repeat. Here the number is that
//! of a key: the rule (a stable hash of its text), which `autoinc()` of its head it is,
//! and the values of all the body's variables (a `_` of a positive atom counts as a
//! variable, so each matching tuple gets its own number). Keys are numbered 0, 1, 2,
//! ... in the order an engine first meets them, so a binding keeps its number while the
//! program runs, also when it is retracted and comes back, and two bindings never share
//! one. Which binding gets which number depends on the engine and its workers, as
//! Soufflé's numbers depend on its order (and on `-j`).
//!
//! `autoinc()` may only stand in a rule's head (located error elsewhere; in a fact too,
//! as Soufflé refuses it there).

use super::Checker;
use super::aggregates::{stable_hash, var};
use crate::ir::{self, Functor};
use dynalog_syntax::Diagnostic;
use dynalog_syntax::ast::{self, Expr, Literal};

/// The first `autoinc()` of `e` (inside aggregates too).
fn find_autoinc(e: &Expr) -> Option<&Expr> {
    e.find(true, &mut |x| matches!(x, Expr::Call(Functor::Autoinc, ..)))
}

/// Whether `e` has an `autoinc()` (inside aggregates too).
pub(super) fn has_autoinc(e: &Expr) -> bool {
    find_autoinc(e).is_some()
}

/// The first expression of a literal with an `autoinc()`.
fn literal_autoinc(l: &Literal) -> Option<&Expr> {
    match l {
        Literal::Positive(a) | Literal::Negative(a, _) => a.args.iter().find(|e| has_autoinc(e)),
        Literal::Compare { lhs, rhs, .. } => [lhs, rhs].into_iter().find(|e| has_autoinc(e)),
    }
}

impl Checker<'_> {
    /// Refuse an `autoinc()` in the body of `rule` or inside an aggregate of its head.
    pub(super) fn autoinc_only_in_head(&self, rule: &ast::Rule) -> Result<(), Diagnostic> {
        let in_body = rule.body.iter().filter_map(literal_autoinc).next();
        let in_aggregate = rule
            .head
            .args
            .iter()
            .find(|e| matches!(e, Expr::Aggregate(_)) && has_autoinc(e));
        match in_body
            .or(in_aggregate)
            .and_then(find_autoinc)
            .map(Expr::span)
        {
            Some(span) => Err(self.err(span, "`autoinc()` is only allowed in a rule's head")),
            None => Ok(()),
        }
    }
}

/// `rule` with each `_` of its positive atoms named (`@iN`) when its head has an
/// `autoinc()`: each matching tuple is a binding of its own.
pub(super) fn name_wildcards(rule: &ast::Rule) -> Option<ast::Rule> {
    if !rule.head.args.iter().any(has_autoinc) {
        return None;
    }
    let mut rule = rule.clone();
    let mut n = 0;
    for lit in &mut rule.body {
        if let Literal::Positive(a) = lit {
            for arg in &mut a.args {
                if let Expr::Wildcard(s) = arg {
                    *arg = var(&format!("@i{n}"), *s);
                    n += 1;
                }
            }
        }
    }
    Some(rule)
}

/// Give each `autoinc()` of a lowered head its key: the rule's (`text` hashed), its
/// occurrence, and every variable slot (`nvars` of them, all bound at the head).
pub(super) fn key_autoincs(head: &mut [ir::Expr], text: &str, nvars: usize) {
    let hash = stable_hash(text);
    let mut occurrence = 0;
    let mut stack: Vec<&mut ir::Expr> = head.iter_mut().collect();
    while let Some(e) = stack.pop() {
        match e {
            ir::Expr::Call(Functor::Autoinc, _, args) => {
                args.clear();
                args.push(ir::Expr::Const(hash as u32));
                args.push(ir::Expr::Const((hash >> 32) as u32));
                args.push(ir::Expr::Const(occurrence));
                args.extend((0..nvars as u32).map(ir::Expr::Var));
                occurrence += 1;
            }
            ir::Expr::Call(_, _, args) | ir::Expr::Pack { fields: args, .. } => {
                stack.extend(args.iter_mut())
            }
            ir::Expr::Binary { lhs, rhs, .. } => {
                stack.push(rhs);
                stack.push(lhs);
            }
            ir::Expr::Neg(_, e) | ir::Expr::Unary(_, _, e) => stack.push(e),
            ir::Expr::Unpack { record, .. } => stack.push(record),
            ir::Expr::Var(_) | ir::Expr::Const(_) => {}
        }
    }
}
