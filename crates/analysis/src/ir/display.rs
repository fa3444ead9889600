//! The IR printed as Datalog, with relation and variable names (what
//! `dynalog run PROGRAM --show ir` prints).
//!
//! A [`Program`] prints as its relations (`.decl` with column types, I/O qualifiers and
//! the stratum that computes it), the facts written in the program, then the rules of
//! each stratum in evaluation order (those the analysis added to close an `eqrel`
//! relation marked `// eqrel`). A rule prints with its body *in evaluation order*
//! (the order an engine joins, filters and assigns in), so it can differ from the source:
//!
//! ```text
//! // stratum 0 (recursive): path
//! path(x, z) :- path(x, y), edge(y, z).
//! ```
//!
//! An assignment (an equality that binds its variable) prints as `x := expr`, a filter
//! as `lhs op rhs`, a negated atom as `!r(...)`. Variables are named as written; a
//! variable the analysis introduced for an expression argument is named `_argN`.
//! Constants print at their column's or expression's type: symbols quoted, numbers as
//! numbers.
//!
//! Parts of a rule need the program (relation names, symbols) and the rule (variable
//! names) to print: [`Rule::display`], [`Literal::display`], [`Atom::display`],
//! [`Expr::display`] and [`Term::display`] return a printable view.

use super::{AggFunc, Functor};
use super::{Atom, Expr, Literal, Program, Rule, Term};
use crate::value::{Type, Value};
use dynalog_syntax::CmpOp;
use std::fmt;

/// A part of a rule together with what names it (the program's relations and symbols,
/// the rule's variables), ready to print as Datalog: atoms as `r(x, "a", _)`, negated
/// atoms as `!r(...)`, filters as `lhs op rhs`, assignments (equalities that bind their
/// variable) as `x := expr`, a rule as `head :- body.` with its body in evaluation order.
/// Made by the `display` methods of [`Rule`], [`Literal`], [`Atom`], [`Expr`], [`Term`].
pub struct Show<'a, T> {
    item: &'a T,
    program: &'a Program,
    /// Variable names of the rule the item belongs to.
    vars: &'a [String],
    /// Variable types of that rule (the type of an assignment's expression).
    var_types: &'a [Type],
    /// The type constants of the item are encoded at (terms and expressions).
    ty: Type,
}

impl Rule {
    /// This rule as Datalog: `head(...) :- body, in, evaluation, order.`
    pub fn display<'a>(&'a self, program: &'a Program) -> Show<'a, Rule> {
        Show::new(self, program, self, Type::Symbol)
    }
}

impl Literal {
    /// This body literal of `rule` as Datalog.
    pub fn display<'a>(&'a self, program: &'a Program, rule: &'a Rule) -> Show<'a, Literal> {
        Show::new(self, program, rule, Type::Symbol)
    }
}

impl Atom {
    /// This atom of `rule` as Datalog: `r(x, 1, _)`.
    pub fn display<'a>(&'a self, program: &'a Program, rule: &'a Rule) -> Show<'a, Atom> {
        Show::new(self, program, rule, Type::Symbol)
    }
}

impl Expr {
    /// This expression of `rule`, whose constants are of type `ty`.
    pub fn display<'a>(&'a self, program: &'a Program, rule: &'a Rule, ty: Type) -> Show<'a, Expr> {
        Show::new(self, program, rule, ty)
    }
}

impl Term {
    /// This atom argument of `rule`, in a column of type `ty`.
    pub fn display<'a>(&'a self, program: &'a Program, rule: &'a Rule, ty: Type) -> Show<'a, Term> {
        Show::new(self, program, rule, ty)
    }
}

impl<'a, T> Show<'a, T> {
    fn new(item: &'a T, program: &'a Program, rule: &'a Rule, ty: Type) -> Show<'a, T> {
        Show {
            item,
            program,
            vars: &rule.var_names,
            var_types: &rule.var_types,
            ty,
        }
    }

    /// A part of the same rule.
    fn with<U>(&self, item: &'a U, ty: Type) -> Show<'a, U> {
        Show {
            item,
            program: self.program,
            vars: self.vars,
            var_types: self.var_types,
            ty,
        }
    }

    fn var(&self, v: super::VarId) -> &'a str {
        self.vars.get(v as usize).map_or("?", String::as_str)
    }

    fn constant(&self, v: Value, ty: Type) -> String {
        match ty {
            Type::Symbol => format!("{:?}", self.program.symbols.resolve(v)),
            Type::Record(_) => ty.render_quoted(v, &self.program.symbols.read()),
            _ => ty.render(v, &self.program.symbols),
        }
    }

    /// `r(args)` for an atom.
    fn atom(&self, f: &mut fmt::Formatter<'_>, atom: &'a Atom) -> fmt::Result {
        let rel = self.program.relation(atom.relation);
        write!(f, "{}(", rel.name)?;
        for (i, (t, &ty)) in atom.args.iter().zip(&rel.types).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", self.with(t, ty))?;
        }
        f.write_str(")")
    }
}

impl fmt::Display for Show<'_, Term> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.item {
            Term::Var(v) => f.write_str(self.var(v)),
            Term::Const(c) => f.write_str(&self.constant(c, self.ty)),
            Term::Wildcard => f.write_str("_"),
        }
    }
}

impl fmt::Display for Show<'_, Expr> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Operands that are themselves operations are parenthesised: no precedence
        // to know when reading.
        let operand = |f: &mut fmt::Formatter<'_>, e: &Expr| match e {
            Expr::Var(_) | Expr::Const(_) => write!(f, "{}", self.with(e, self.ty)),
            Expr::Binary { op, .. } if op.is_functor() => write!(f, "{}", self.with(e, self.ty)),
            Expr::Unary(op, ..) if op.is_conversion() => write!(f, "{}", self.with(e, self.ty)),
            _ => write!(f, "({})", self.with(e, self.ty)),
        };
        match self.item {
            Expr::Var(v) => f.write_str(self.var(*v)),
            Expr::Const(c) => f.write_str(&self.constant(*c, self.ty)),
            Expr::Binary { op, lhs, rhs, .. } if op.is_functor() => write!(
                f,
                "{}({}, {})",
                op.as_str(),
                self.with(&**lhs, self.ty),
                self.with(&**rhs, self.ty)
            ),
            Expr::Binary { op, lhs, rhs, .. } => {
                operand(f, lhs)?;
                write!(f, " {} ", op.as_str())?;
                operand(f, rhs)
            }
            Expr::Neg(_, e) => match **e {
                Expr::Var(v) => write!(f, "-{}", self.var(v)),
                _ => write!(f, "-({})", self.with(&**e, self.ty)),
            },
            // The operand of a conversion is of the type the conversion is from.
            Expr::Unary(op, ty, e) if op.is_conversion() => {
                write!(f, "{}({})", op.as_str(), self.with(&**e, *ty))
            }
            Expr::Unary(op, _, e) => {
                write!(f, "{} ", op.as_str())?;
                operand(f, e)
            }
            // Its arguments are its key (module `check::autoinc`), not written.
            Expr::Call(Functor::Autoinc, ..) => f.write_str("autoinc()"),
            Expr::Call(func, ty, args) => {
                write!(f, "{}(", func.as_str())?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", self.with(a, super::call_arg_type(*func, *ty, i)))?;
                }
                f.write_str(")")
            }
            Expr::Pack { ty, branch, fields } => {
                let (name, types) = super::record_branch(&self.program.symbols, *ty, *branch);
                let close = match &name {
                    Some(n) => {
                        write!(f, "${n}(")?;
                        ")"
                    }
                    None => {
                        f.write_str("[")?;
                        "]"
                    }
                };
                for (i, a) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    let t = types.get(i).copied().unwrap_or(Type::Number);
                    write!(f, "{}", self.with(a, t))?;
                }
                f.write_str(close)
            }
            // Field `index` as `record.index` (`record.Branch.index` for a constructor).
            Expr::Unpack {
                ty,
                record,
                branch,
                index,
            } => {
                let (name, _) = super::record_branch(&self.program.symbols, *ty, *branch);
                operand(f, record)?;
                match name {
                    Some(n) => write!(f, ".{n}.{index}"),
                    None => write!(f, ".{index}"),
                }
            }
        }
    }
}

impl fmt::Display for Show<'_, Atom> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.atom(f, self.item)
    }
}

impl fmt::Display for Show<'_, Literal> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.item {
            Literal::Atom(a) => self.atom(f, a),
            Literal::Not(a) => {
                f.write_str("!")?;
                self.atom(f, a)
            }
            // `contains(a, b)` and `match(p, s)` as written.
            Literal::Filter {
                op: op @ (CmpOp::Ne | CmpOp::Eq),
                lhs: lhs @ Expr::Call(func, ..),
                rhs: Expr::Const(0),
                ..
            } if func.is_constraint() => {
                let bang = if *op == CmpOp::Eq { "!" } else { "" };
                write!(f, "{bang}{}", self.with(lhs, Type::Number))
            }
            Literal::Filter { op, ty, lhs, rhs } => write!(
                f,
                "{} {} {}",
                self.with(lhs, *ty),
                op.as_str(),
                self.with(rhs, *ty)
            ),
            Literal::Assign { var, expr } => {
                let ty = self.var_types.get(*var as usize).copied();
                let ty = ty.unwrap_or(Type::Number);
                write!(f, "{} := {}", self.var(*var), self.with(expr, ty))
            }
        }
    }
}

impl fmt::Display for Show<'_, Rule> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.item;
        let head = self.program.relation(rule.head.relation);
        write!(f, "{}(", head.name)?;
        for (i, (e, &ty)) in rule.head.args.iter().zip(&head.types).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", self.with(e, ty))?;
        }
        f.write_str(") :- ")?;
        for (i, lit) in rule.body.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", self.with(lit, Type::Symbol))?;
        }
        f.write_str(".")
    }
}

/// The program: relations, facts written in it, then rules by stratum (module docs).
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut stratum_of = vec![None; self.relations.len()];
        for (s, stratum) in self.strata.iter().enumerate() {
            for &r in &stratum.relations {
                stratum_of[r as usize] = Some(s);
            }
        }
        writeln!(
            f,
            "// {} relation{}, {} rule{} in {} strat{}, {} fact{} written in the program",
            self.relations.len(),
            plural(self.relations.len()),
            self.rules.len(),
            plural(self.rules.len()),
            self.strata.len(),
            if self.strata.len() == 1 { "um" } else { "a" },
            self.facts.len(),
            plural(self.facts.len()),
        )?;
        for (r, rel) in self.relations.iter().enumerate() {
            write!(f, ".decl {}(", rel.name)?;
            for (i, (name, ty)) in rel.column_names.iter().zip(&rel.types).enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                match ty {
                    Type::Record(t) => match self.symbols.record_type(*t) {
                        Some(rt) => write!(f, "{name}: {}", rt.name)?,
                        None => write!(f, "{name}: {ty}")?,
                    },
                    _ => write!(f, "{name}: {ty}")?,
                }
            }
            f.write_str(")")?;
            for (on, qualifier) in [
                (!rel.inputs.is_empty(), "input"),
                (!rel.outputs.is_empty(), "output"),
                (rel.printsize, "printsize"),
                (rel.eqrel, "eqrel"),
            ] {
                if on {
                    write!(f, " {qualifier}")?;
                }
            }
            match stratum_of[r] {
                Some(s) => writeln!(f, " // stratum {s}")?,
                None => writeln!(f, " // no rules")?,
            }
        }
        if !self.facts.is_empty() {
            writeln!(f)?;
            writeln!(f, "// facts")?;
            for (rel, tuple) in &self.facts {
                writeln!(f, "{}", self.fact_to_string(*rel, tuple))?;
            }
        }
        for (s, stratum) in self.strata.iter().enumerate() {
            writeln!(f)?;
            let names: Vec<&str> = stratum
                .relations
                .iter()
                .map(|&r| self.relation(r).name.as_str())
                .collect();
            writeln!(
                f,
                "// stratum {s}{}: {}",
                if stratum.recursive {
                    " (recursive)"
                } else {
                    ""
                },
                names.join(", ")
            )?;
            for &r in &stratum.rules {
                let rule = &self.rules[r];
                match rule.generated {
                    true if !rule.text.ends_with("// eqrel") => {
                        writeln!(f, "{} // {}", rule.display(self), rule.text)?
                    }
                    true => writeln!(f, "{} // eqrel", rule.display(self))?,
                    false => writeln!(f, "{}", rule.display(self))?,
                }
            }
            for &a in &stratum.aggregates {
                let agg = &self.aggregates[a];
                let source = self.relation(agg.source);
                let cols = |range: std::ops::Range<usize>| -> Vec<String> {
                    range.map(|i| format!("c{i}")).collect()
                };
                let group = cols(0..agg.group);
                let mut head = group.clone();
                head.push("r".into());
                let mut src = group;
                src.extend(cols(agg.group..source.arity()));
                let value = if agg.func == AggFunc::Count {
                    String::new()
                } else {
                    format!(" c{}", source.arity().saturating_sub(1))
                };
                writeln!(
                    f,
                    "{}({}) :- r = {}{value} : {{ {}({}) }}. // {}",
                    self.relation(agg.head).name,
                    head.join(", "),
                    agg.func.as_str(),
                    source.name,
                    src.join(", "),
                    agg.text
                )?;
            }
        }
        Ok(())
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use crate::check::analyse;
    use crate::ir::{Literal, Program};
    use crate::value::Type;
    use dynalog_syntax::SourceFile;

    fn program(text: &str) -> Program {
        let file = SourceFile::new("t.dl", text.to_string());
        let ast = dynalog_syntax::parse(&file).expect("parses");
        analyse(&file, &ast).expect("checks")
    }

    #[test]
    fn a_program_prints_relations_facts_and_rules_by_stratum() {
        let p = program(
            ".decl edge(x: number, y: number)\n.input edge\n\
             .decl path(x: number, y: number)\n.output path\n.printsize path\n\
             .decl far(x: number)\n.output far\n\
             edge(1, 2).\n\
             path(x, y) :- edge(x, y).\n\
             path(x, z) :- path(x, y), edge(y, z).\n\
             far(x) :- edge(x, _), !path(x, 3).\n",
        );
        assert_eq!(
            p.to_string(),
            "// 3 relations, 3 rules in 2 strata, 1 fact written in the program\n\
             .decl edge(x: number, y: number) input // no rules\n\
             .decl path(x: number, y: number) output printsize // stratum 0\n\
             .decl far(x: number) output // stratum 1\n\
             \n\
             // facts\n\
             edge(1, 2).\n\
             \n\
             // stratum 0 (recursive): path\n\
             path(x, y) :- edge(x, y).\n\
             path(x, z) :- path(x, y), edge(y, z).\n\
             \n\
             // stratum 1: far\n\
             far(x) :- edge(x, _), !path(x, 3).\n"
        );
    }

    #[test]
    fn bodies_print_in_evaluation_order_with_assignments_and_typed_constants() {
        let p = program(
            ".decl e(a: symbol, n: number)\n.decl f(x: float)\n.decl r(a: symbol, m: number, h: float)\n\
             r(a, m * 2, h) :- m = n + 1, e(a, n), a != \"b\", h = -1.5, f(h), e(a, -(m - 3)).\n",
        );
        let rule = &p.rules[0];
        assert_eq!(
            rule.display(&p).to_string(),
            "r(a, m * 2, h) :- h := -1.5, e(a, n), m := n + 1, a != \"b\", \
             _arg3 := -(m - 3), f(h), e(a, _arg3)."
        );
        // The parts print on their own too.
        let Literal::Assign { expr, .. } = &rule.body[0] else {
            panic!("an assignment first: {:?}", rule.body)
        };
        assert_eq!(expr.display(&p, rule, Type::Float).to_string(), "-1.5");
        assert_eq!(rule.body[1].display(&p, rule).to_string(), "e(a, n)");
        let Literal::Atom(atom) = &rule.body[5] else {
            panic!("f(h) sixth: {:?}", rule.body)
        };
        assert_eq!(atom.display(&p, rule).to_string(), "f(h)");
        assert_eq!(atom.args[0].display(&p, rule, Type::Float).to_string(), "h");
    }
}
