//! How the printouts of compiled rules ([`crate::explain`]) name relations, variables
//! and constants.

use dynalog_analysis::{Expr, Literal, Program, RelId, Rule, Type, Value};
use std::fmt;

/// The names of one rule's relations, variables and constants.
pub(crate) struct Names<'a> {
    pub program: &'a Program,
    pub rule: &'a Rule,
}

impl Names<'_> {
    pub(crate) fn rel(&self, r: RelId) -> &str {
        self.program
            .relations
            .get(r as usize)
            .map_or("?", |rel| rel.name.as_str())
    }

    /// A variable (slot) by its name in the rule.
    pub(crate) fn var(&self, v: u32) -> String {
        match self.rule.var_names.get(v as usize) {
            Some(name) => name.clone(),
            None => format!("${v}"),
        }
    }

    /// A constant of type `ty` (a symbol quoted).
    pub(crate) fn constant(&self, v: Value, ty: Option<Type>) -> String {
        match ty {
            Some(Type::Symbol) => format!("{:?}", self.program.symbols.resolve(v)),
            Some(t @ Type::Record(_)) => t.render_quoted(v, &self.program.symbols.read()),
            Some(t) => t.render(v, &self.program.symbols),
            None => v.to_string(),
        }
    }

    /// The type of column `col` of relation `r`.
    pub(crate) fn col_type(&self, r: RelId, col: usize) -> Option<Type> {
        self.program
            .relations
            .get(r as usize)
            .and_then(|rel| rel.types.get(col).copied())
    }

    /// An expression whose value has type `ty` (if known).
    pub(crate) fn expr(&self, e: &Expr, ty: Option<Type>) -> String {
        match e {
            Expr::Var(v) => self.var(*v),
            Expr::Const(c) => self.constant(*c, ty),
            Expr::Binary { op, ty, lhs, rhs } if op.is_functor() => format!(
                "{}({}, {})",
                op.as_str(),
                self.expr(lhs, Some(*ty)),
                self.expr(rhs, Some(*ty))
            ),
            Expr::Binary { op, ty, lhs, rhs } => format!(
                "({} {} {})",
                self.expr(lhs, Some(*ty)),
                op.as_str(),
                self.expr(rhs, Some(*ty))
            ),
            Expr::Neg(ty, inner) => format!("-{}", self.expr(inner, Some(*ty))),
            Expr::Unary(op, ty, inner) if op.is_conversion() => {
                format!("{}({})", op.as_str(), self.expr(inner, Some(*ty)))
            }
            Expr::Unary(op, ty, inner) => {
                format!("{} {}", op.as_str(), self.expr(inner, Some(*ty)))
            }
            Expr::Call(dynalog_analysis::Functor::Autoinc, ..) => "autoinc()".to_string(),
            Expr::Call(f, ty, args) => {
                let args: Vec<String> = args
                    .iter()
                    .enumerate()
                    .map(|(i, a)| {
                        self.expr(a, Some(dynalog_analysis::ir::call_arg_type(*f, *ty, i)))
                    })
                    .collect();
                format!("{}({})", f.as_str(), args.join(", "))
            }
            Expr::Pack { ty, branch, fields } => {
                let (name, types) =
                    dynalog_analysis::ir::record_branch(&self.program.symbols, *ty, *branch);
                let fields: Vec<String> = fields
                    .iter()
                    .enumerate()
                    .map(|(i, a)| self.expr(a, types.get(i).copied()))
                    .collect();
                match name {
                    Some(n) => format!("${n}({})", fields.join(", ")),
                    None => format!("[{}]", fields.join(", ")),
                }
            }
            Expr::Unpack {
                ty,
                record,
                branch,
                index,
            } => {
                let (name, _) =
                    dynalog_analysis::ir::record_branch(&self.program.symbols, *ty, *branch);
                match name {
                    Some(n) => format!("{}.{n}.{index}", self.expr(record, Some(*ty))),
                    None => format!("{}.{index}", self.expr(record, Some(*ty))),
                }
            }
        }
    }

    /// A filter or an assignment (an atom is not printed by this).
    pub(crate) fn literal(&self, lit: &Literal) -> String {
        match lit {
            Literal::Filter { op, ty, lhs, rhs } => format!(
                "filter {} {} {}",
                self.expr(lhs, Some(*ty)),
                op.as_str(),
                self.expr(rhs, Some(*ty))
            ),
            Literal::Assign { var, expr } => {
                let ty = self.rule.var_types.get(*var as usize).copied();
                format!("assign {} := {}", self.var(*var), self.expr(expr, ty))
            }
            Literal::Atom(_) | Literal::Not(_) => String::new(),
        }
    }

    /// `rel(a, b, ..)` from the printed arguments.
    pub(crate) fn atom(&self, r: RelId, args: &[String]) -> String {
        format!("{}({})", self.rel(r), args.join(", "))
    }

    /// The head line: `insert rel(e1, ..)`.
    pub(crate) fn head(&self, f: &mut fmt::Formatter<'_>, r: RelId, head: &[Expr]) -> fmt::Result {
        let mut args = Vec::with_capacity(head.len());
        for (c, e) in head.iter().enumerate() {
            args.push(self.expr(e, self.col_type(r, c)));
        }
        writeln!(f, "  insert {}", self.atom(r, &args))
    }
}
