//! Type inference and checking of a rule. Every variable gets the type of the first
//! atom column it occurs in (in source order), else of the head column it is written in
//! directly, else of a comparison that fixes it (propagated to a fixpoint), else
//! `number`; then constants are encoded at their column's type and every expression is
//! lowered at the type its place requires.

use super::desugar::{RawBody, RawTerm, Slots};
use super::order::Constraint;
use super::{Checker, visit_vars};
use crate::ir::{self, RelId, Term};
use crate::value::{Type, Value};
use dynalog_syntax::ast;
use dynalog_syntax::{CmpOp, Diagnostic, Span};

/// The inferred type of every slot of a rule.
pub(super) struct Typing {
    /// Per slot: the type and where it was fixed (for messages), if something fixes it.
    types: Vec<Option<(Type, String)>>,
    /// Per slot: the type (`number` where nothing fixes it).
    pub(super) var_types: Vec<Type>,
}

/// A rule lowered to the IR, its body not yet in evaluation order.
pub(super) struct Lowered {
    /// Body atoms in source order: (negated, atom, span of the literal).
    pub(super) atoms: Vec<(bool, ir::Atom, dynalog_syntax::Span)>,
    pub(super) constraints: Vec<Constraint>,
    pub(super) head: Vec<ir::Expr>,
}

impl Checker<'_> {
    /// Infer the type of every variable of `rule`; an error if a variable occurs in
    /// atom columns of different types.
    pub(super) fn infer_types(
        &self,
        rule: &ast::Rule,
        head_id: RelId,
        body: &RawBody,
    ) -> Result<Typing, Diagnostic> {
        let (rc, atoms, constraints) = body.parts();
        let nvars = rc.len();
        // (type, where it was fixed)
        let mut types: Vec<Option<(Type, String)>> = vec![None; nvars];
        for (_, id, terms, _) in atoms {
            let rel = &self.relations[*id as usize];
            for (i, t) in terms.iter().enumerate() {
                if let RawTerm::Var(v, span) = t {
                    let ty = rel.types[i];
                    let origin = format!("column {} of `{}`", i + 1, rel.name);
                    match &types[*v as usize] {
                        Some((prev, where_)) if *prev != ty => {
                            return Err(self.err(
                                *span,
                                format!(
                                    "type mismatch: variable `{}` is {} {ty} in {origin} but {} {prev} in {where_}",
                                    rc.vars[*v as usize],
                                    article(ty),
                                    article(*prev)
                                ),
                            ));
                        }
                        Some(_) => {}
                        None => types[*v as usize] = Some((ty, origin)),
                    }
                }
            }
        }
        // Head columns type variables written directly as head arguments.
        let head_rel = &self.relations[head_id as usize];
        for (i, arg) in rule.head.args.iter().enumerate() {
            if let ast::Expr::Var(v) = arg {
                let slot = rc.slot(v);
                if types[slot as usize].is_none() {
                    types[slot as usize] = Some((
                        head_rel.types[i],
                        format!("column {} of `{}`", i + 1, head_rel.name),
                    ));
                }
            }
        }
        // Propagate through comparisons until nothing changes: passes over the sides
        // `var` / `expr` of every comparison in order, typing an untyped variable from
        // the other side. Only sides whose other side gained a typed variable since
        // they were last looked at are looked at again, in the same order as full
        // passes would, so the result (and the origin named in messages) is that of
        // repeated passes without their quadratic cost.
        let mut sides: Vec<(usize, &ast::Expr)> = Vec::new();
        for (_, lhs, rhs, _) in constraints {
            for (a, b) in [(lhs, rhs), (rhs, lhs)] {
                if let ast::Expr::Var(v) = a {
                    sides.push((rc.slot(v) as usize, b));
                }
            }
        }
        // readers[slot]: the sides whose expression reads the slot.
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); nvars];
        for (k, (_, b)) in sides.iter().enumerate() {
            visit_vars(b, &mut |v| {
                let r = &mut readers[rc.slot(v) as usize];
                if r.last() != Some(&k) {
                    r.push(k);
                }
            });
        }
        let mut this_pass: std::collections::BTreeSet<usize> = (0..sides.len()).collect();
        let mut next_pass = std::collections::BTreeSet::new();
        while !this_pass.is_empty() {
            while let Some(k) = this_pass.pop_first() {
                let (slot, b) = sides[k];
                if types[slot].is_some() {
                    continue;
                }
                if let Some(t) = rc.infer(self, b, &types) {
                    types[slot] =
                        Some((t, format!("the comparison `{}`", self.file.slice(b.span()))));
                    for &q in &readers[slot] {
                        if types[sides[q].0].is_none() {
                            if q > k {
                                this_pass.insert(q);
                            } else {
                                next_pass.insert(q);
                            }
                        }
                    }
                }
            }
            std::mem::swap(&mut this_pass, &mut next_pass);
        }
        let var_types: Vec<Type> = types
            .iter()
            .map(|t| t.as_ref().map(|(t, _)| *t).unwrap_or(Type::Number))
            .collect();
        Ok(Typing { types, var_types })
    }

    /// Lower the body atoms, the comparisons and the head of `rule` to the IR, checking
    /// every constant and expression against the type its place requires.
    pub(super) fn lower(
        &mut self,
        rule: &ast::Rule,
        head_id: RelId,
        body: &RawBody,
        typing: &Typing,
    ) -> Result<Lowered, Diagnostic> {
        let (rc, atoms, constraints) = body.parts();
        let Typing { types, var_types } = typing;
        let head_rel = self.relations[head_id as usize].clone();
        let mut lowered_atoms = Vec::new();
        for (negated, id, terms, span) in atoms {
            let rel = self.relations[*id as usize].clone();
            let mut args = Vec::new();
            for (i, t) in terms.iter().enumerate() {
                args.push(match t {
                    RawTerm::Var(v, _) => Term::Var(*v),
                    RawTerm::Wildcard => Term::Wildcard,
                    RawTerm::Const(e) => Term::Const(self.constant(
                        e,
                        rel.types[i],
                        &format!("column {} of `{}`", i + 1, rel.name),
                    )?),
                });
            }
            lowered_atoms.push((
                *negated,
                ir::Atom {
                    relation: *id,
                    args,
                },
                *span,
            ));
        }
        let mut lowered_constraints = Vec::new();
        for (op, lhs, rhs, span) in constraints {
            let inferred = rc
                .infer(self, lhs, types)
                .or_else(|| rc.infer(self, rhs, types));
            if inferred.is_none()
                && let Some(r) = [lhs, rhs]
                    .into_iter()
                    .find(|e| matches!(e, ast::Expr::Record(None, ..) | ast::Expr::Nil(_)))
            {
                return Err(self.err(
                    r.span(),
                    "the type of this record is not known here: compare it with a variable or column of a record type",
                ));
            }
            let ty = inferred.unwrap_or(if is_float_literal(lhs) || is_float_literal(rhs) {
                Type::Float
            } else {
                Type::Number
            });
            if ty.is_interned() && !matches!(op, CmpOp::Eq | CmpOp::Ne) {
                return Err(self.err(
                    *span,
                    format!(
                        "`{}` compares numbers; {} can only be compared with = and !=",
                        op.as_str(),
                        if ty == Type::Symbol {
                            "symbols"
                        } else {
                            "records"
                        }
                    ),
                ));
            }
            let l = self.expr(rc, lhs, ty, var_types)?;
            let r = self.expr(rc, rhs, ty, var_types)?;
            lowered_constraints.push(Constraint {
                op: *op,
                ty,
                lhs: l,
                rhs: r,
                span: *span,
            });
        }
        let mut head_args = Vec::new();
        for (i, arg) in rule.head.args.iter().enumerate() {
            head_args.push(
                self.expr(rc, arg, head_rel.types[i], var_types)
                    .map_err(|d| Diagnostic {
                        message: d.message.replace(
                            "this expression",
                            &format!("column {} of `{}`", i + 1, head_rel.name),
                        ),
                        ..d
                    })?,
            );
        }
        Ok(Lowered {
            atoms: lowered_atoms,
            constraints: lowered_constraints,
            head: head_args,
        })
    }

    /// Lower an expression that must have type `ty`.
    fn expr(
        &mut self,
        rc: &Slots,
        e: &ast::Expr,
        ty: Type,
        var_types: &[Type],
    ) -> Result<ir::Expr, Diagnostic> {
        Ok(match e {
            // Rewritten before this pass (module `aggregates`).
            ast::Expr::Aggregate(a) => {
                return Err(self.err(a.span, "an aggregate cannot be used here"));
            }
            ast::Expr::Var(v) => {
                let slot = rc.slot(v);
                let vt = var_types[slot as usize];
                if vt != ty {
                    return Err(self.err(
                        v.span,
                        format!(
                            "type mismatch: {} is {} {vt}, but this expression needs {} {ty}",
                            // The fresh variable of an aggregate (module `aggregates`).
                            if v.name.starts_with("@a") {
                                "this aggregate's result".to_string()
                            } else if v.name.starts_with("@f") {
                                "this record's field".to_string()
                            } else if v.name.starts_with("@r") {
                                // The fresh variable of a range (module `ranges`).
                                "this range's value".to_string()
                            } else {
                                format!("variable `{}`", v.name)
                            },
                            article(vt),
                            article(ty)
                        )
                        .replace(&format!(" {vt}, "), &format!(" {}, ", self.type_name(vt)))
                        .replace(&format!(" {ty}"), &format!(" {}", self.type_name(ty))),
                    ));
                }
                ir::Expr::Var(slot)
            }
            ast::Expr::Wildcard(s) => return Err(self.err(*s, "`_` is not allowed here")),
            ast::Expr::Str(..) | ast::Expr::Num(..) => {
                ir::Expr::Const(self.constant(e, ty, "this expression")?)
            }
            ast::Expr::Unary(op, inner, span) if op.is_conversion() => {
                self.returns(op.as_str(), ir::unary_type(*op, ty), ty, *span)?;
                // The operand's type is what fixes it, `number` if nothing does. A
                // symbol's text is read as a number.
                let from = infer_type(self, inner, &|v| Some(var_types[rc.slot(v) as usize]))
                    .unwrap_or(Type::Number);
                if let Type::Record(_) = from {
                    return Err(self.err(
                        inner.span(),
                        format!("`{}` cannot convert a record", op.as_str()),
                    ));
                }
                ir::Expr::Unary(*op, from, Box::new(self.expr(rc, inner, from, var_types)?))
            }
            ast::Expr::Call(func, args, span) => {
                self.returns(func.as_str(), ir::call_type(*func), ty, *span)?;
                let operand =
                    call_operand(self, *func, args, &|v| Some(var_types[rc.slot(v) as usize]));
                if let Type::Record(_) = operand {
                    return Err(
                        self.err(*span, format!("`{}` cannot take a record", func.as_str()))
                    );
                }
                let mut lowered = Vec::with_capacity(args.len());
                for (i, a) in args.iter().enumerate() {
                    let want = ir::call_arg_type(*func, operand, i);
                    lowered.push(self.expr(rc, a, want, var_types).map_err(|d| Diagnostic {
                        message: d.message.replace(
                            "this expression",
                            &format!("argument {} of `{}`", i + 1, func.as_str()),
                        ),
                        ..d
                    })?);
                }
                ir::Expr::Call(*func, operand, lowered)
            }
            ast::Expr::Record(branch, args, span) => {
                let (b, fields) = self.record_shape(branch.as_ref(), args.len(), ty, *span)?;
                let mut lowered = Vec::with_capacity(args.len());
                for (a, fty) in args.iter().zip(fields) {
                    lowered.push(self.expr(rc, a, fty, var_types)?);
                }
                ir::Expr::Pack {
                    ty,
                    branch: b,
                    fields: lowered,
                }
            }
            ast::Expr::Nil(span) => {
                self.nil_at(ty, *span)?;
                ir::Expr::Const(0)
            }
            ast::Expr::Field {
                record,
                branch,
                index,
                span,
            } => {
                let rty = infer_type(self, record, &|v| Some(var_types[rc.slot(v) as usize]))
                    .unwrap_or(Type::Number);
                let fty = self
                    .field_type(rty, branch.as_ref(), *index)
                    .map_err(|m| self.err(*span, m))?;
                if fty != ty {
                    return Err(self.err(
                        *span,
                        format!(
                            "type mismatch: this field is {} {}, but it is matched with {} {}",
                            article(fty),
                            self.type_name(fty),
                            article(ty),
                            self.type_name(ty)
                        ),
                    ));
                }
                let b = match branch {
                    Some(b) => self.constructors.get(&b.name).map_or(0, |c| c.1),
                    None => 0,
                };
                ir::Expr::Unpack {
                    ty: rty,
                    record: Box::new(self.expr(rc, record, rty, var_types)?),
                    branch: b,
                    index: *index as u32,
                }
            }
            // `a + b` on symbols joins them, as in Soufflé: `cat(a, b)`.
            ast::Expr::Binary {
                op: ast::ArithOp::Add,
                lhs,
                rhs,
                span,
            } if ty == Type::Symbol => {
                return self
                    .expr(rc, &symbol_sum(lhs, rhs, *span), ty, var_types)
                    .map_err(as_symbol_sum);
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
                            "type mismatch: arithmetic on {} (this expression must be {} {})",
                            if ty == Type::Symbol {
                                "symbols"
                            } else {
                                "records"
                            },
                            article(ty),
                            self.type_name(ty)
                        ),
                    ));
                }
                self.integral_only(e, ty)?;
                let l = self.expr(rc, inner, ty, var_types)?;
                match e {
                    ast::Expr::Binary { op, rhs, .. } => ir::Expr::Binary {
                        op: *op,
                        ty,
                        lhs: Box::new(l),
                        rhs: Box::new(self.expr(rc, rhs, ty, var_types)?),
                    },
                    ast::Expr::Unary(op, ..) => ir::Expr::Unary(*op, ty, Box::new(l)),
                    _ => ir::Expr::Neg(ty, Box::new(l)),
                }
            }
        })
    }

    /// The constructor (0 for a record type) and field types of a record written with
    /// `n` fields (constructor `branch`) where type `ty` is needed.
    pub(super) fn record_shape(
        &self,
        branch: Option<&ast::Ident>,
        n: usize,
        ty: Type,
        span: dynalog_syntax::Span,
    ) -> Result<(u32, Vec<Type>), Diagnostic> {
        let written = match branch {
            Some(b) => format!("`${}`", b.name),
            None => "a record".to_string(),
        };
        let mismatch = || {
            self.err(
                span,
                format!(
                    "type mismatch: this is {written}, but this expression needs {} {}",
                    article(ty),
                    self.type_name(ty)
                ),
            )
        };
        let Type::Record(t) = ty else {
            return Err(match branch {
                Some(b) if !self.constructors.contains_key(&b.name) => {
                    self.err(b.span, format!("unknown constructor `${}`", b.name))
                }
                _ => mismatch(),
            });
        };
        let Some(rt) = self.symbols.record_type(t) else {
            return Err(mismatch());
        };
        let b = match branch {
            Some(b) => match rt.branches.iter().position(|x| x.name == b.name) {
                Some(i) if rt.adt => i,
                _ if self.constructors.contains_key(&b.name) => return Err(mismatch()),
                _ => {
                    return Err(self.err(b.span, format!("unknown constructor `${}`", b.name)));
                }
            },
            None if rt.adt => {
                return Err(self.err(
                    span,
                    format!(
                        "type mismatch: this is a record, but `{}` is an algebraic data type (write `$Constructor(...)`)",
                        rt.name
                    ),
                ));
            }
            None => 0,
        };
        let fields: Vec<Type> = rt.branches[b].fields.iter().map(|(_, t)| *t).collect();
        if fields.len() != n {
            let what = match branch {
                Some(c) => format!("`${}`", c.name),
                None => format!("`{}`", rt.name),
            };
            return Err(self.err(
                span,
                format!(
                    "{what} has {} field(s), but {n} are written here",
                    fields.len()
                ),
            ));
        }
        Ok((b as u32, fields))
    }

    /// Refuse `nil` where type `ty` is needed, unless it is a record type.
    pub(super) fn nil_at(&self, ty: Type, span: dynalog_syntax::Span) -> Result<(), Diagnostic> {
        match ty {
            Type::Record(t) if self.symbols.record_type(t).is_some_and(|rt| !rt.adt) => Ok(()),
            _ => Err(self.err(
                span,
                format!(
                    "type mismatch: `nil` is a record, but this expression needs {} {}",
                    article(ty),
                    self.type_name(ty)
                ),
            )),
        }
    }

    /// The type of field `index` of a record of type `ty` made by constructor `branch`.
    pub(super) fn field_type(
        &self,
        ty: Type,
        branch: Option<&ast::Ident>,
        index: usize,
    ) -> Result<Type, String> {
        let Type::Record(t) = ty else {
            return Err(format!(
                "type mismatch: this record pattern is matched with {} {}",
                article(ty),
                self.type_name(ty)
            ));
        };
        let rt = self
            .symbols
            .record_type(t)
            .ok_or_else(|| "unknown record type".to_string())?;
        let b = match branch {
            Some(b) => rt
                .branches
                .iter()
                .position(|x| x.name == b.name)
                .filter(|_| rt.adt)
                .ok_or_else(|| {
                    format!(
                        "type mismatch: `${}` is not a constructor of `{}`",
                        b.name, rt.name
                    )
                })?,
            None if rt.adt => {
                return Err(format!(
                    "type mismatch: this is a record, but `{}` is an algebraic data type (write `$Constructor(...)`)",
                    rt.name
                ));
            }
            None => 0,
        };
        let fields = &rt.branches[b].fields;
        fields.get(index).map(|(_, t)| *t).ok_or_else(|| {
            format!(
                "`{}` has {} field(s), but this pattern has more",
                if rt.adt {
                    format!("${}", rt.branches[b].name)
                } else {
                    rt.name.clone()
                },
                fields.len()
            )
        })
    }

    /// Refuse a functor `name` whose result has type `to` where `ty` is needed.
    fn returns(
        &self,
        name: &str,
        to: Type,
        ty: Type,
        span: dynalog_syntax::Span,
    ) -> Result<(), Diagnostic> {
        if to == ty {
            return Ok(());
        }
        Err(self.err(
            span,
            format!(
                "type mismatch: `{name}(...)` is {} {to}, but this expression needs {} {ty}",
                article(to),
                article(ty)
            ),
        ))
    }

    /// Refuse a bitwise or logical operator (defined on `number` and `unsigned` only)
    /// at type `ty`, at the operation. (Symbols are refused before, as arithmetic.)
    pub(super) fn integral_only(&self, e: &ast::Expr, ty: Type) -> Result<(), Diagnostic> {
        let op = match e {
            ast::Expr::Unary(op, ..) if !op.is_conversion() => op.as_str(),
            ast::Expr::Binary { op, .. } if op.integral() => op.as_str(),
            _ => return Ok(()),
        };
        if ty == Type::Float {
            return Err(self.err(
                e.span(),
                format!(
                    "type mismatch: `{op}` works on numbers and unsigned, \
                     but this expression is a float"
                ),
            ));
        }
        Ok(())
    }

    /// Encode a literal at type `ty`, or explain why it does not fit.
    pub(super) fn constant(
        &mut self,
        expr: &ast::Expr,
        ty: Type,
        what: &str,
    ) -> Result<Value, Diagnostic> {
        match (expr, ty) {
            (ast::Expr::Str(s, _), Type::Symbol) => Ok(self.symbols.intern(s)),
            (ast::Expr::Str(s, span), t) => Err(self.err(
                *span,
                format!(
                    "type mismatch: {what} is {} {}, but {s:?} is a symbol",
                    article(t),
                    self.type_name(t)
                ),
            )),
            (ast::Expr::Num(_, span), t @ Type::Record(_)) => Err(self.err(
                *span,
                format!(
                    "type mismatch: {what} is a {}, but this is a number",
                    self.type_name(t)
                ),
            )),
            (ast::Expr::Num(_, span), Type::Symbol) => Err(self.err(
                *span,
                format!(
                    "type mismatch: {what} is a symbol, but this is a number (quote it: \"...\")"
                ),
            )),
            (ast::Expr::Num(ast::Number::Int(n), span), t) => t
                .encode_int(*n)
                .ok_or_else(|| self.err(*span, format!("{n} does not fit in a 32-bit {t}"))),
            (ast::Expr::Num(ast::Number::Float(x), _), Type::Float) => Ok((*x as f32).to_bits()),
            (ast::Expr::Num(ast::Number::Unsigned(n), span), Type::Unsigned) => u32::try_from(*n)
                .map_err(|_| self.err(*span, format!("{n}u does not fit in a 32-bit unsigned"))),
            (ast::Expr::Num(ast::Number::Unsigned(n), span), t) => Err(self.err(
                *span,
                format!(
                    "type mismatch: {what} is {} {t}, but `{n}u` is an unsigned constant",
                    article(t)
                ),
            )),
            (ast::Expr::Num(ast::Number::Float(_), span), t) => Err(self.err(
                *span,
                format!(
                    "type mismatch: {what} is {} {t}, but this is a float",
                    article(t)
                ),
            )),
            _ => Err(self.err(expr.span(), "expected a constant")),
        }
    }
}

impl Slots {
    /// The type of an expression if something fixes it.
    fn infer(
        &self,
        cx: &Checker<'_>,
        e: &ast::Expr,
        types: &[Option<(Type, String)>],
    ) -> Option<Type> {
        infer_type(cx, e, &|v| {
            types[self.slot(v) as usize].as_ref().map(|t| t.0)
        })
    }
}

/// The type of an expression if something fixes it, a variable's type being `var`'s.
pub(super) fn infer_type(
    cx: &Checker<'_>,
    e: &ast::Expr,
    var: &dyn Fn(&ast::Ident) -> Option<Type>,
) -> Option<Type> {
    let infer_type =
        |e: &ast::Expr, var: &dyn Fn(&ast::Ident) -> Option<Type>| infer_type(cx, e, var);
    match e {
        ast::Expr::Var(v) => var(v),
        // A constructor fixes its type; a record or `nil` takes its place's.
        ast::Expr::Record(Some(b), ..) => cx.constructors.get(&b.name).map(|(t, _)| *t),
        ast::Expr::Record(None, ..) | ast::Expr::Nil(_) => None,
        ast::Expr::Field {
            record,
            branch,
            index,
            ..
        } => cx
            .field_type(infer_type(record, var)?, branch.as_ref(), *index)
            .ok(),
        ast::Expr::Str(..) => Some(Type::Symbol),
        ast::Expr::Num(ast::Number::Float(_), _) => Some(Type::Float),
        ast::Expr::Num(ast::Number::Unsigned(_), _) => Some(Type::Unsigned),
        ast::Expr::Num(..) | ast::Expr::Wildcard(_) | ast::Expr::Aggregate(_) => None,
        // A conversion's type is its own, whatever its operand's.
        ast::Expr::Unary(op, _, _) if op.is_conversion() => Some(ir::unary_type(*op, Type::Number)),
        ast::Expr::Call(f, ..) => Some(ir::call_type(*f)),
        ast::Expr::Neg(i, _) | ast::Expr::Unary(_, i, _) => infer_type(i, var),
        ast::Expr::Binary { lhs, rhs, .. } => infer_type(lhs, var).or_else(|| infer_type(rhs, var)),
    }
}

/// `lhs + rhs` on symbols, as Soufflé reads it: `cat(lhs, rhs)`.
pub(super) fn symbol_sum(lhs: &ast::Expr, rhs: &ast::Expr, span: Span) -> ast::Expr {
    ast::Expr::Call(ast::Functor::Cat, vec![lhs.clone(), rhs.clone()], span)
}

/// An error in `lhs + rhs` on symbols, about that `+` (not the `cat` it stands for).
pub(super) fn as_symbol_sum(d: Diagnostic) -> Diagnostic {
    Diagnostic {
        message: d.message.replace("of `cat`", "of `+` on symbols"),
        ..d
    }
}

/// The operand type of a functor on symbols: for `to_string` (whose operand may be of
/// any type) what fixes it, `number` if nothing does; `symbol` for the others.
pub(super) fn call_operand(
    cx: &Checker<'_>,
    func: ast::Functor,
    args: &[ast::Expr],
    var: &dyn Fn(&ast::Ident) -> Option<Type>,
) -> Type {
    match (func, args.first()) {
        (ast::Functor::ToString, Some(a)) => infer_type(cx, a, var).unwrap_or(Type::Number),
        _ => Type::Symbol,
    }
}

pub(super) fn article(t: Type) -> &'static str {
    match t {
        Type::Unsigned => "an",
        _ => "a",
    }
}

fn is_float_literal(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Num(ast::Number::Float(_), _) => true,
        ast::Expr::Unary(op, ..) if op.is_conversion() => false,
        ast::Expr::Neg(i, _) | ast::Expr::Unary(_, i, _) => is_float_literal(i),
        ast::Expr::Binary { lhs, rhs, .. } => is_float_literal(lhs) || is_float_literal(rhs),
        _ => false,
    }
}
