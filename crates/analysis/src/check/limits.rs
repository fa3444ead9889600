//! Bounds on what a rule or fact may contain before the rest of the analysis recurses
//! over it: expressions at most [`MAX_EXPR_DEPTH`] deep, bodies at most
//! [`MAX_BODY_LITERALS`] literals long.

use super::Checker;
use dynalog_syntax::ast;
use dynalog_syntax::{Diagnostic, MAX_EXPR_DEPTH};

/// The most literals a rule body may have after desugaring: its literals as written,
/// plus one for every body-atom argument that is an expression (`r(x + 1)` becomes
/// `r(_arg0), _arg0 = x + 1`).
///
/// Engines evaluate a body one literal per level of recursion (a join, a filter, an
/// assignment each), and the delete-rederive engines compile one variant of every rule
/// per body atom (quadratic in the body's length), so a rule of 10,000 atoms would
/// overflow the stack or take gigabytes. With at most this many literals the deepest
/// evaluation fits a 2 MB thread in a debug build. Real rules are a few dozen literals
/// long at most.
pub const MAX_BODY_LITERALS: usize = 256;

impl Checker<'_> {
    /// Refuse expressions deeper than [`MAX_EXPR_DEPTH`] in a rule or fact. The parser
    /// already does, so this only matters for syntax trees built by other code; the
    /// rest of the analysis, and the engines, recurse over expressions and rely on it.
    pub(super) fn check_depths(&self, rule: &ast::Rule) -> Result<(), Diagnostic> {
        for arg in &rule.head.args {
            self.check_depth(arg)?;
        }
        for lit in &rule.body {
            match lit {
                ast::Literal::Positive(a) | ast::Literal::Negative(a, _) => {
                    for arg in &a.args {
                        self.check_depth(arg)?;
                    }
                }
                ast::Literal::Compare { lhs, rhs, .. } => {
                    self.check_depth(lhs)?;
                    self.check_depth(rhs)?;
                }
            }
        }
        Ok(())
    }

    /// Refuse a rule body longer than [`MAX_BODY_LITERALS`] (after desugaring), at the
    /// literal or argument that crosses the bound.
    pub(super) fn check_body_length(&self, rule: &ast::Rule) -> Result<(), Diagnostic> {
        let mut count = 0usize;
        for lit in &rule.body {
            count += 1;
            let mut at = lit.span();
            if let ast::Literal::Positive(a) | ast::Literal::Negative(a, _) = lit {
                for arg in &a.args {
                    if count > MAX_BODY_LITERALS {
                        break;
                    }
                    if matches!(
                        arg,
                        ast::Expr::Neg(..)
                            | ast::Expr::Unary(..)
                            | ast::Expr::Binary { .. }
                            | ast::Expr::Call(..)
                            | ast::Expr::Record(..)
                            | ast::Expr::Nil(_)
                    ) {
                        count += 1;
                        at = arg.span();
                    }
                }
            }
            if count > MAX_BODY_LITERALS {
                return Err(self.err(
                    at,
                    format!(
                        "rule body too long: more than {MAX_BODY_LITERALS} literals \
                         (an expression as an argument of a body atom counts as one more)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// [`Checker::check_depths`] for one expression, without recursion.
    pub(super) fn check_depth(&self, e: &ast::Expr) -> Result<(), Diagnostic> {
        let mut stack = vec![(e, 0usize)];
        while let Some((e, depth)) = stack.pop() {
            if depth > MAX_EXPR_DEPTH {
                return Err(self.err(
                    e.span(),
                    format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"),
                ));
            }
            match e {
                ast::Expr::Neg(inner, _) | ast::Expr::Unary(_, inner, _) => {
                    stack.push((inner, depth + 1))
                }
                ast::Expr::Binary { lhs, rhs, .. } => {
                    stack.push((rhs, depth + 1));
                    stack.push((lhs, depth + 1));
                }
                ast::Expr::Call(_, args, _) | ast::Expr::Record(_, args, _) => {
                    stack.extend(args.iter().rev().map(|a| (a, depth + 1)));
                }
                _ => {}
            }
        }
        Ok(())
    }
}
