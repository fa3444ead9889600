//! `eqrel` relations: `.decl r(x: T, y: T) eqrel` makes `r` an equivalence relation,
//! the reflexive (on the values that occur in it), symmetric and transitive closure of
//! what rules, facts and inputs put in it, as in Soufflé. The analysis adds three rules
//! for each, after the program's, checked like written ones:
//!
//! ```text
//! r(x, x) :- r(x, _).
//! r(y, x) :- r(x, y).
//! r(x, z) :- r(x, y), r(y, z).
//! ```
//!
//! so every engine maintains the closure with no support of its own, incrementally
//! under insertions and deletions (a pair derived through a deleted one goes unless
//! still derivable, as for any rule). They are [`Rule::generated`]: `--show ir` and
//! `--show plan` print them, marked `// eqrel`, but sessions neither list them as the
//! program's rules nor remove them.

use super::Checker;
use crate::ir::Rule;
use dynalog_syntax::{Diagnostic, Span, ast};

impl Checker<'_> {
    /// Refuse `eqrel` (at the qualifier `at`) on a relation that is not binary or whose
    /// columns are declared with different types (by name, as Soufflé does: a subtype
    /// or an alias is not its base type here).
    pub(super) fn check_eqrel(
        &self,
        decl: &ast::RelDecl,
        rel: &crate::ir::Relation,
        at: Span,
    ) -> Result<(), Diagnostic> {
        match &decl.columns[..] {
            [(_, a), (_, b)] if a.name == b.name && rel.types[0] == rel.types[1] => Ok(()),
            [(x, a), (y, b)] => Err(self.err(
                at,
                format!(
                    "`eqrel` relates values of one type, but the columns of `{}` have \
                     different types (`{}: {}`, `{}: {}`)",
                    decl.name.name, x.name, a.name, y.name, b.name
                ),
            )),
            columns => Err(self.err(
                at,
                format!(
                    "`eqrel` needs a relation of two columns (`.decl {0}(x: T, y: T) eqrel`), \
                     but `{0}` has {1}",
                    decl.name.name,
                    columns.len()
                ),
            )),
        }
    }

    /// The rules that close every `eqrel` relation (module docs), in declaration order.
    pub(super) fn eqrel_rules(&mut self) -> Result<Vec<Rule>, Diagnostic> {
        let eqrels: Vec<(String, Span)> = self
            .relations
            .iter()
            .filter(|r| r.eqrel)
            .map(|r| (r.name.clone(), r.span))
            .collect();
        let mut rules = Vec::new();
        for (name, span) in eqrels {
            let ident = |n: &str| ast::Ident {
                name: n.to_string(),
                span,
            };
            let var = |n: &str| ast::Expr::Var(ident(n));
            let atom = |a: ast::Expr, b: ast::Expr| ast::Atom {
                relation: ident(&name),
                args: vec![a, b],
                span,
            };
            let closure = [
                (
                    atom(var("x"), var("x")),
                    vec![atom(var("x"), ast::Expr::Wildcard(span))],
                    "x, x",
                    "x, _",
                    "",
                ),
                (
                    atom(var("y"), var("x")),
                    vec![atom(var("x"), var("y"))],
                    "y, x",
                    "x, y",
                    "",
                ),
                (
                    atom(var("x"), var("z")),
                    vec![atom(var("x"), var("y")), atom(var("y"), var("z"))],
                    "x, z",
                    "x, y",
                    "y, z",
                ),
            ];
            for (head, body, h, b1, b2) in closure {
                let rule = ast::Rule {
                    head,
                    body: body.into_iter().map(ast::Literal::Positive).collect(),
                    style: ast::Style::Souffle,
                    span,
                };
                let mut checked = self.rule(&rule)?;
                // Marked, for the listings that print a rule's text (`--show plan`).
                checked.text = if b2.is_empty() {
                    format!("{name}({h}) :- {name}({b1}). // eqrel")
                } else {
                    format!("{name}({h}) :- {name}({b1}), {name}({b2}). // eqrel")
                };
                checked.generated = true;
                rules.push(checked);
            }
        }
        Ok(rules)
    }
}
