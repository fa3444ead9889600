//! Facts written in a program (`edge(1, "a").`): constants checked against their
//! column's type and variable-free arithmetic evaluated.

use super::Checker;
use crate::ir::RelId;
use crate::value::{Type, Value};
use dynalog_syntax::Diagnostic;
use dynalog_syntax::ast;

impl Checker<'_> {
    pub(super) fn fact(&mut self, rule: &ast::Rule) -> Result<(RelId, Vec<Value>), Diagnostic> {
        self.check_depths(rule)?;
        let id = self.lookup(&rule.head.relation)?;
        self.check_arity(&rule.head, id)?;
        let types = self.relations[id as usize].types.clone();
        let mut tuple = Vec::with_capacity(types.len());
        for (i, (arg, ty)) in rule.head.args.iter().zip(types).enumerate() {
            let what = format!("column {} of `{}`", i + 1, rule.head.relation.name);
            tuple.push(self.const_expr(arg, ty, &what)?);
        }
        Ok((id, tuple))
    }

    /// Evaluate a variable-free expression at type `ty` (facts).
    pub(super) fn const_expr(
        &mut self,
        e: &ast::Expr,
        ty: Type,
        what: &str,
    ) -> Result<Value, Diagnostic> {
        match e {
            ast::Expr::Var(v) => Err(self.err(
                v.span,
                format!(
                    "variable `{}` is not grounded: a fact must consist of constants",
                    v.name
                ),
            )),
            ast::Expr::Wildcard(s) => Err(self.err(*s, "`_` is not allowed in a fact")),
            ast::Expr::Aggregate(a) => Err(self.err(a.span, "an aggregate is not a constant")),
            ast::Expr::Str(..) | ast::Expr::Num(..) => self.constant(e, ty, what),
            // `a + b` on symbols joins them, as in Soufflé: `cat(a, b)`.
            ast::Expr::Binary {
                op: ast::ArithOp::Add,
                lhs,
                rhs,
                span,
            } if ty == Type::Symbol => {
                let cat = super::types::symbol_sum(lhs, rhs, *span);
                self.const_expr(&cat, ty, what)
                    .map_err(super::types::as_symbol_sum)
            }
            ast::Expr::Record(branch, args, span) => {
                let (b, fields) = self.record_shape(branch.as_ref(), args.len(), ty, *span)?;
                let mut values = Vec::with_capacity(args.len());
                for (a, fty) in args.iter().zip(fields) {
                    values.push(self.const_expr(a, fty, what)?);
                }
                Ok(self.symbols.pack(b, &values))
            }
            ast::Expr::Nil(span) => self.nil_at(ty, *span).map(|()| 0),
            ast::Expr::Field { span, .. } => Err(self.err(*span, "expected a constant")),
            ast::Expr::Unary(op, inner, span) if op.is_conversion() => {
                self.fact_returns(op.as_str(), crate::ir::unary_type(*op, ty), ty, *span, what)?;
                // No variables here: the operand's constants fix its type.
                let from = super::types::infer_type(self, inner, &|_| None).unwrap_or(Type::Number);
                let v = self.const_expr(inner, from, what)?;
                let value = match from {
                    Type::Symbol => crate::ir::parse_symbol(*op, &self.symbols.resolve(v)),
                    _ => crate::ir::eval_unary(*op, from, v),
                };
                value.ok_or_else(|| self.no_value(*span))
            }
            ast::Expr::Call(ast::Functor::Autoinc, _, span) => Err(self.err(
                *span,
                "`autoinc()` is not a constant: a fact cannot use it, as in Soufflé (write a rule)",
            )),
            ast::Expr::Call(func, args, span) => {
                self.fact_returns(func.as_str(), crate::ir::call_type(*func), ty, *span, what)?;
                let operand = super::types::call_operand(self, *func, args, &|_| None);
                let mut values = Vec::with_capacity(args.len());
                for (i, a) in args.iter().enumerate() {
                    let want = crate::ir::call_arg_type(*func, operand, i);
                    values.push(self.const_expr(a, want, what)?);
                }
                crate::ir::eval_call(*func, operand, &values, &self.symbols)
                    .ok_or_else(|| self.no_value(*span))
            }
            ast::Expr::Neg(inner, span)
            | ast::Expr::Unary(_, inner, span)
            | ast::Expr::Binary {
                lhs: inner, span, ..
            } => {
                if ty.is_interned() {
                    return Err(self.err(
                        *span,
                        format!(
                            "type mismatch: {what} is {} {}, but this is arithmetic",
                            super::types::article(ty),
                            self.type_name(ty)
                        ),
                    ));
                }
                self.integral_only(e, ty)?;
                let lhs = self.const_expr(inner, ty, what)?;
                let value = match e {
                    ast::Expr::Neg(..) => crate::ir::eval_neg(ty, lhs),
                    ast::Expr::Unary(op, ..) => crate::ir::eval_unary(*op, ty, lhs),
                    ast::Expr::Binary { op, rhs, .. } => {
                        let rhs = self.const_expr(rhs, ty, what)?;
                        crate::ir::eval_arith(*op, ty, lhs, rhs)
                    }
                    _ => None,
                };
                value.ok_or_else(|| self.err(*span, "division by zero"))
            }
        }
    }

    /// Refuse a functor `name` whose result has type `to` in a place (`what`) of type `ty`.
    fn fact_returns(
        &self,
        name: &str,
        to: Type,
        ty: Type,
        span: dynalog_syntax::Span,
        what: &str,
    ) -> Result<(), Diagnostic> {
        if to == ty {
            return Ok(());
        }
        let article = super::types::article;
        Err(self.err(
            span,
            format!(
                "type mismatch: {what} is {} {ty}, but `{name}(...)` is {} {to}",
                article(ty),
                article(to)
            ),
        ))
    }

    /// A functor of constants that has no value (`to_number("abc")`).
    fn no_value(&self, span: dynalog_syntax::Span) -> Diagnostic {
        self.err(
            span,
            format!(
                "`{}` has no value (its text is not a number of the type)",
                self.file.slice(span)
            ),
        )
    }
}
