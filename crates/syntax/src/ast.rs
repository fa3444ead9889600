//! The syntax tree. Every node that an error can point at carries a [`Span`].

use crate::source::Span;

/// An identifier with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole program: its items in source order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `.type Name <: symbol`, `.type Name = number`, `.type U = A | B`.
    Type(TypeDecl),
    /// `.decl r(a: number, b: symbol)`.
    Decl(RelDecl),
    /// `.input r`, `.output r(IO=stdout)`, `.printsize r`.
    Directive(Directive),
    /// A rule or, when the body is empty, a fact.
    Rule(Rule),
    /// `.pragma "key" "value"` or `.pragma "key"`: one of Soufflé's command-line options,
    /// set in the program.
    Pragma(Pragma),
}

impl Item {
    /// Where the item is written.
    pub fn span(&self) -> Span {
        match self {
            Item::Type(t) => t.span,
            Item::Decl(d) => d.span,
            Item::Directive(d) => d.span,
            Item::Rule(r) => r.span,
            Item::Pragma(p) => p.span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pragma {
    /// The option's name (`magic-transform`), escapes resolved.
    pub key: String,
    /// Its value, if one is given (`*`).
    pub value: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    /// The types it is a subtype of, alias of, or union of (all by name); empty for a
    /// record or algebraic data type.
    pub of: Vec<Ident>,
    pub shape: TypeShape,
    /// `.type Name` alone: Soufflé's old form of `.type Name <: symbol`, which it
    /// accepts with a warning (so does dynalog).
    pub bare: bool,
    pub span: Span,
}

impl TypeDecl {
    /// Every type name it refers to: the types of [`TypeDecl::of`], and those of a
    /// record's or constructor's fields.
    pub fn type_refs_mut(&mut self) -> Vec<&mut Ident> {
        let mut refs: Vec<&mut Ident> = self.of.iter_mut().collect();
        match &mut self.shape {
            TypeShape::Named => {}
            TypeShape::Record(fields) => refs.extend(fields.iter_mut().map(|(_, t)| t)),
            TypeShape::Adt(cs) => {
                for c in cs {
                    refs.extend(c.fields.iter_mut().map(|(_, t)| t));
                }
            }
        }
        refs
    }
}

/// What a `.type` declaration defines.
#[derive(Clone, Debug, PartialEq)]
pub enum TypeShape {
    /// A subtype, alias or union of the types in [`TypeDecl::of`].
    Named,
    /// `[a: number, b: T]`: `(field name, type name)` pairs.
    Record(Vec<(Ident, Ident)>),
    /// `A {x: number} | B {}`: an algebraic data type, one constructor per branch.
    Adt(Vec<Constructor>),
}

/// A branch `Name {field: type, ...}` of an algebraic data type.
#[derive(Clone, Debug, PartialEq)]
pub struct Constructor {
    pub name: Ident,
    pub fields: Vec<(Ident, Ident)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RelDecl {
    pub name: Ident,
    /// `(attribute name, type name)` pairs.
    pub columns: Vec<(Ident, Ident)>,
    /// Qualifiers after the column list (`brie`, `btree`, `eqrel`, ...).
    pub qualifiers: Vec<Ident>,
    /// `choice-domain x, (y, z)`: each domain's attributes, and the span of the whole
    /// qualifier (empty: none).
    pub choice: Vec<Vec<Ident>>,
    pub choice_span: Option<Span>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    Input,
    Output,
    PrintSize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub kind: DirectiveKind,
    /// One or more relations (`.output a, b`).
    pub relations: Vec<Ident>,
    /// `key=value` parameters; values are strings whether written quoted or bare.
    pub params: Vec<(Ident, String)>,
    pub span: Span,
}

/// Which surface syntax a rule was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `h(x) :- b(x).` (Soufflé).
    Souffle,
    /// `h(?x) <- [b(?x)]` (the study's published programs; relations are implicit).
    Paper,
    /// `a(x1) <= a(x2) :- body.` (Soufflé's subsumption): the head is the dominated
    /// atom and the first body literal the dominating one; the rest is the condition.
    Subsumption,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub head: Atom,
    /// Empty for a fact.
    pub body: Vec<Literal>,
    pub style: Style,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub relation: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    Positive(Atom),
    /// `!r(x, _)`; the span covers the `!`.
    Negative(Atom, Span),
    /// `lhs op rhs`.
    Compare {
        op: CmpOp,
        lhs: Expr,
        rhs: Expr,
        span: Span,
    },
}

impl Literal {
    pub fn span(&self) -> Span {
        match self {
            Literal::Positive(a) => a.span,
            Literal::Negative(_, s) => *s,
            Literal::Compare { span, .. } => *span,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// A binary operator of an expression. Every operand and the result have the same
/// type; [`ArithOp::integral`] says which work only on `number` and `unsigned`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    /// `^`
    Pow,
    /// `band`
    BAnd,
    /// `bor`
    BOr,
    /// `bxor`
    BXor,
    /// `bshl`
    BShl,
    /// `bshr`: arithmetic for `number`, logical for `unsigned`.
    BShr,
    /// `bshru`: logical.
    BShru,
    /// `land` (1 or 0)
    LAnd,
    /// `lor` (1 or 0)
    LOr,
    /// `lxor` (1 or 0)
    LXor,
    /// The functor `min(a, b)` (with more arguments: nested, `min(min(a, b), c)`).
    Min,
    /// The functor `max(a, b)`.
    Max,
}

impl ArithOp {
    /// The operator as written: a symbol, an infix keyword, or a functor's name
    /// (see [`ArithOp::is_functor`]).
    pub fn as_str(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
            ArithOp::Pow => "^",
            ArithOp::BAnd => "band",
            ArithOp::BOr => "bor",
            ArithOp::BXor => "bxor",
            ArithOp::BShl => "bshl",
            ArithOp::BShr => "bshr",
            ArithOp::BShru => "bshru",
            ArithOp::LAnd => "land",
            ArithOp::LOr => "lor",
            ArithOp::LXor => "lxor",
            ArithOp::Min => "min",
            ArithOp::Max => "max",
        }
    }

    /// Written as a call, `min(a, b)`, rather than infix.
    pub fn is_functor(self) -> bool {
        matches!(self, ArithOp::Min | ArithOp::Max)
    }

    /// Defined on `number` and `unsigned` only (the bitwise and logical operators).
    pub fn integral(self) -> bool {
        matches!(
            self,
            ArithOp::BAnd
                | ArithOp::BOr
                | ArithOp::BXor
                | ArithOp::BShl
                | ArithOp::BShr
                | ArithOp::BShru
                | ArithOp::LAnd
                | ArithOp::LOr
                | ArithOp::LXor
        )
    }
}

/// An operator of one operand other than unary minus (which is [`Expr::Neg`]): the
/// prefix operators `bnot` and `lnot`, defined on `number` and `unsigned` only, whose
/// result has the operand's type; and the conversion functors `to_float(x)`,
/// `to_number(x)` and `to_unsigned(x)`, from any numeric type to theirs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum UnaryOp {
    /// `bnot`
    BNot,
    /// `lnot` (1 or 0)
    LNot,
    /// `to_float(x)`
    ToFloat,
    /// `to_number(x)`
    ToNumber,
    /// `to_unsigned(x)`
    ToUnsigned,
}

impl UnaryOp {
    pub fn as_str(self) -> &'static str {
        match self {
            UnaryOp::BNot => "bnot",
            UnaryOp::LNot => "lnot",
            UnaryOp::ToFloat => "to_float",
            UnaryOp::ToNumber => "to_number",
            UnaryOp::ToUnsigned => "to_unsigned",
        }
    }

    /// A conversion functor, written as a call (`to_float(x)`): its result type is its
    /// own, whatever the operand's.
    pub fn is_conversion(self) -> bool {
        matches!(
            self,
            UnaryOp::ToFloat | UnaryOp::ToNumber | UnaryOp::ToUnsigned
        )
    }

    /// The conversion functor called `name`.
    pub fn conversion(name: &str) -> Option<UnaryOp> {
        match name {
            "to_float" => Some(UnaryOp::ToFloat),
            "to_number" => Some(UnaryOp::ToNumber),
            "to_unsigned" => Some(UnaryOp::ToUnsigned),
            _ => None,
        }
    }
}

/// A numeric literal as written; its final type comes from analysis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Number {
    /// An integer literal (decimal, `0x` hex or `0b` binary), not yet range-checked.
    Int(i128),
    /// A literal with a `.` or an exponent.
    Float(f64),
    /// An integer literal with the `u` suffix (`1u`): an unsigned constant only.
    Unsigned(u128),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A variable: `x` in Soufflé syntax, `?x` in the paper's (stored without the `?`).
    Var(Ident),
    /// `_`.
    Wildcard(Span),
    /// A symbol constant: `"text"` (escapes resolved), or a bare constant such as
    /// `rdf:type` in the paper's syntax.
    Str(String, Span),
    Num(Number, Span),
    /// Unary minus applied to a non-literal.
    Neg(Box<Expr>, Span),
    /// `bnot x`, `lnot x`, `to_float(x)`, ...
    Unary(UnaryOp, Box<Expr>, Span),
    Binary {
        op: ArithOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        span: Span,
    },
    /// `count : { body }`, `sum y : { body }`, `min y : atom`, ...
    Aggregate(Box<Aggregate>),
    /// A string functor `cat(a, b)`, `strlen(s)`, ..., or a string constraint
    /// `contains(a, b)` / `match(p, s)` (which stand in a body as `... != 0`, their
    /// negation as `... = 0`: see [`Functor::is_constraint`]).
    Call(Functor, Vec<Expr>, Span),
    /// A record `[a, b]` (no constructor) or a constructor of an algebraic data type
    /// `$Branch(a, b)` / `$Branch`: built in a head or from bound values, taken apart
    /// where it matches a bound record.
    Record(Option<Ident>, Vec<Expr>, Span),
    /// `nil`: the record that is none.
    Nil(Span),
    /// Field `index` of a record, if it was made by the constructor `branch` (`None`
    /// for a record type). Never parsed: the analysis writes it when it takes a record
    /// pattern apart.
    Field {
        record: Box<Expr>,
        branch: Option<Ident>,
        index: usize,
        span: Span,
    },
}

impl Expr {
    /// The first expression of `self` for which `f` holds: itself, then its operands
    /// left to right, and inside aggregates (their targets, then their bodies' atoms and
    /// comparisons) if `deep`.
    pub fn find(&self, deep: bool, f: &mut dyn FnMut(&Expr) -> bool) -> Option<&Expr> {
        if f(self) {
            return Some(self);
        }
        match self {
            Expr::Neg(i, _) | Expr::Unary(_, i, _) => i.find(deep, f),
            Expr::Binary { lhs, rhs, .. } => lhs.find(deep, f).or_else(|| rhs.find(deep, f)),
            Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
                args.iter().find_map(|a| a.find(deep, f))
            }
            Expr::Field { record, .. } => record.find(deep, f),
            Expr::Aggregate(a) if deep => {
                a.target.as_ref().and_then(|t| t.find(deep, f)).or_else(|| {
                    a.body.iter().find_map(|l| match l {
                        Literal::Positive(at) | Literal::Negative(at, _) => {
                            at.args.iter().find_map(|x| x.find(deep, f))
                        }
                        Literal::Compare { lhs, rhs, .. } => {
                            lhs.find(deep, f).or_else(|| rhs.find(deep, f))
                        }
                    })
                })
            }
            Expr::Aggregate(_)
            | Expr::Var(_)
            | Expr::Wildcard(_)
            | Expr::Str(..)
            | Expr::Num(..)
            | Expr::Nil(_) => None,
        }
    }
}

/// A built-in functor on symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Functor {
    /// `cat(a, b, ...)`: the symbols joined.
    Cat,
    /// `strlen(s)`: the length in bytes.
    Strlen,
    /// `substr(s, i, n)`: `n` bytes from byte `i`.
    Substr,
    /// `ord(s)`: the symbol's number in the symbol table.
    Ord,
    /// `to_string(x)`: a value's text as a symbol.
    ToString,
    /// `contains(a, b)`: whether `a` occurs in `b` (1 or 0).
    Contains,
    /// `match(p, s)`: whether the regular expression `p` matches all of `s` (1 or 0).
    Match,
    /// `range(from, to)`, `range(from, to, step)`: each value from `from` up to `to`
    /// (excluded). Rewritten into rules by the analysis; never evaluated as a functor.
    Range,
    /// `autoinc()`: a number for each binding of the rule's body (in a head only).
    Autoinc,
}

impl Functor {
    pub fn as_str(self) -> &'static str {
        match self {
            Functor::Cat => "cat",
            Functor::Strlen => "strlen",
            Functor::Substr => "substr",
            Functor::Ord => "ord",
            Functor::ToString => "to_string",
            Functor::Contains => "contains",
            Functor::Match => "match",
            Functor::Range => "range",
            Functor::Autoinc => "autoinc",
        }
    }

    pub fn from_name(name: &str) -> Option<Functor> {
        Some(match name {
            "cat" => Functor::Cat,
            "strlen" => Functor::Strlen,
            "substr" => Functor::Substr,
            "ord" => Functor::Ord,
            "to_string" => Functor::ToString,
            "contains" => Functor::Contains,
            "match" => Functor::Match,
            "range" => Functor::Range,
            "autoinc" => Functor::Autoinc,
            _ => return None,
        })
    }

    /// `contains` and `match`: written as a body literal, not inside an expression.
    pub fn is_constraint(self) -> bool {
        matches!(self, Functor::Contains | Functor::Match)
    }

    /// How many arguments it takes: at least `.0`, at most `.1`.
    pub fn arity(self) -> (usize, usize) {
        match self {
            Functor::Cat => (1, usize::MAX),
            Functor::Strlen | Functor::Ord | Functor::ToString => (1, 1),
            Functor::Substr => (3, 3),
            Functor::Contains | Functor::Match => (2, 2),
            Functor::Range => (2, 3),
            Functor::Autoinc => (0, 0),
        }
    }
}

/// An aggregate function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    Mean,
}

impl AggFunc {
    pub fn as_str(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Mean => "mean",
        }
    }

    pub fn from_name(name: &str) -> Option<AggFunc> {
        Some(match name {
            "count" => AggFunc::Count,
            "sum" => AggFunc::Sum,
            "min" => AggFunc::Min,
            "max" => AggFunc::Max,
            "mean" => AggFunc::Mean,
            _ => return None,
        })
    }
}

/// An aggregate as written: `sum y : { b(x, y), y > 0 }`. Its body is a conjunction
/// (Soufflé refuses disjunctions in aggregate bodies, and so does dynalog).
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub func: AggFunc,
    /// The aggregated expression (none for `count`).
    pub target: Option<Expr>,
    pub body: Vec<Literal>,
    pub span: Span,
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(i) => i.span,
            Expr::Wildcard(s) | Expr::Str(_, s) | Expr::Num(_, s) | Expr::Neg(_, s) => *s,
            Expr::Unary(_, _, s) | Expr::Call(_, _, s) | Expr::Record(_, _, s) | Expr::Nil(s) => *s,
            Expr::Field { span, .. } => *span,
            Expr::Binary { span, .. } => *span,
            Expr::Aggregate(a) => a.span,
        }
    }
}

impl Rule {
    /// The rule's own text, rebuilt from the written text of its head and body literals
    /// in `source` (the text it was parsed from): for one of the rules that a written
    /// rule with several heads or disjuncts stands for, whose span is the whole written
    /// rule. Rules in the study's syntax are one per span: their span's text.
    ///
    /// An atom whose relation was renamed after parsing (an instance's copy of a rule
    /// written in a component: `r(x)` is `inst.r(x)`) is written with its name.
    pub fn text_of_parts(&self, source: &str) -> String {
        let slice = |s: Span| source.get(s.start as usize..s.end as usize).unwrap_or("");
        if self.style != Style::Souffle {
            return slice(self.span).to_string();
        }
        let atom = |a: &Atom| {
            let rest = Span {
                start: a.relation.span.end,
                end: a.span.end,
            };
            format!("{}{}", a.relation.name, slice(rest))
        };
        let renamed = self.renamed_in(source);
        let body: Vec<String> = self
            .body
            .iter()
            .map(|l| match l {
                Literal::Positive(a) => atom(a),
                Literal::Negative(a, _) if renamed => format!("!{}", atom(a)),
                Literal::Negative(_, s) | Literal::Compare { span: s, .. } => slice(*s).to_string(),
            })
            .collect();
        if body.is_empty() {
            format!("{}.", atom(&self.head))
        } else {
            format!("{} :- {}.", atom(&self.head), body.join(", "))
        }
    }

    /// Whether an atom's relation is named differently from how `source` writes it:
    /// the rule is an instance's copy of a rule written in a component, whose span's
    /// text is the component's (see [`crate::components`]).
    pub fn renamed_in(&self, source: &str) -> bool {
        let slice = |s: Span| source.get(s.start as usize..s.end as usize).unwrap_or("");
        let mut renamed = false;
        self.for_each_atom(&mut |a| renamed |= slice(a.relation.span) != a.relation.name);
        renamed
    }

    /// Call `f` on every atom of the rule: its head, its body's, and those in the
    /// bodies of its aggregates.
    pub fn for_each_atom(&self, f: &mut dyn FnMut(&Atom)) {
        f(&self.head);
        self.head.args.iter().for_each(|e| expr_atoms(e, f));
        body_atoms(&self.body, f);
    }

    /// [`Rule::for_each_atom`], to change them.
    pub fn for_each_atom_mut(&mut self, f: &mut dyn FnMut(&mut Atom)) {
        f(&mut self.head);
        for e in &mut self.head.args {
            expr_atoms_mut(e, f);
        }
        body_atoms_mut(&mut self.body, f);
    }

    /// The rule in a canonical text form, for recognising the same rule written
    /// differently: whitespace, comments, the surface syntax (`:-` or `<- [...]`) and
    /// the names of variables do not matter (variables are renumbered by their first
    /// occurrence, head first). Two rules with the same canonical form are the same rule.
    pub fn canonical(&self) -> String {
        let mut vars: Vec<&str> = Vec::new();
        let mut out = String::new();
        canonical_atom(&self.head, &mut vars, &mut out);
        match (self.style, self.body.split_first()) {
            (Style::Subsumption, Some((Literal::Positive(dominating), rest))) => {
                out.push_str(" <= ");
                canonical_atom(dominating, &mut vars, &mut out);
                if !rest.is_empty() {
                    out.push_str(" :- ");
                    canonical_body(rest, &mut vars, &mut out);
                }
            }
            _ if !self.body.is_empty() => {
                out.push_str(" :- ");
                canonical_body(&self.body, &mut vars, &mut out);
            }
            _ => {}
        }
        out.push('.');
        out
    }
}

fn body_atoms(body: &[Literal], f: &mut dyn FnMut(&Atom)) {
    for lit in body {
        match lit {
            Literal::Positive(a) | Literal::Negative(a, _) => {
                f(a);
                a.args.iter().for_each(|e| expr_atoms(e, f));
            }
            Literal::Compare { lhs, rhs, .. } => {
                expr_atoms(lhs, f);
                expr_atoms(rhs, f);
            }
        }
    }
}

fn expr_atoms(e: &Expr, f: &mut dyn FnMut(&Atom)) {
    match e {
        Expr::Aggregate(a) => {
            if let Some(t) = &a.target {
                expr_atoms(t, f);
            }
            body_atoms(&a.body, f);
        }
        Expr::Neg(i, _) | Expr::Unary(_, i, _) => expr_atoms(i, f),
        Expr::Binary { lhs, rhs, .. } => {
            expr_atoms(lhs, f);
            expr_atoms(rhs, f);
        }
        Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
            args.iter().for_each(|a| expr_atoms(a, f))
        }
        Expr::Field { record, .. } => expr_atoms(record, f),
        Expr::Var(_) | Expr::Wildcard(_) | Expr::Str(..) | Expr::Num(..) | Expr::Nil(_) => {}
    }
}

fn body_atoms_mut(body: &mut [Literal], f: &mut dyn FnMut(&mut Atom)) {
    for lit in body {
        match lit {
            Literal::Positive(a) | Literal::Negative(a, _) => {
                f(a);
                for e in &mut a.args {
                    expr_atoms_mut(e, f);
                }
            }
            Literal::Compare { lhs, rhs, .. } => {
                expr_atoms_mut(lhs, f);
                expr_atoms_mut(rhs, f);
            }
        }
    }
}

fn expr_atoms_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Atom)) {
    match e {
        Expr::Aggregate(a) => {
            if let Some(t) = &mut a.target {
                expr_atoms_mut(t, f);
            }
            body_atoms_mut(&mut a.body, f);
        }
        Expr::Neg(i, _) | Expr::Unary(_, i, _) => expr_atoms_mut(i, f),
        Expr::Binary { lhs, rhs, .. } => {
            expr_atoms_mut(lhs, f);
            expr_atoms_mut(rhs, f);
        }
        Expr::Call(_, args, _) | Expr::Record(_, args, _) => {
            args.iter_mut().for_each(|a| expr_atoms_mut(a, f))
        }
        Expr::Field { record, .. } => expr_atoms_mut(record, f),
        Expr::Var(_) | Expr::Wildcard(_) | Expr::Str(..) | Expr::Num(..) | Expr::Nil(_) => {}
    }
}

fn canonical_atom<'a>(atom: &'a Atom, vars: &mut Vec<&'a str>, out: &mut String) {
    out.push_str(&atom.relation.name);
    out.push('(');
    for (i, arg) in atom.args.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        canonical_expr(arg, vars, out);
    }
    out.push(')');
}

fn canonical_expr<'a>(e: &'a Expr, vars: &mut Vec<&'a str>, out: &mut String) {
    use std::fmt::Write;
    match e {
        Expr::Var(v) => {
            let i = match vars.iter().position(|&n| n == v.name) {
                Some(i) => i,
                None => {
                    vars.push(&v.name);
                    vars.len() - 1
                }
            };
            let _ = write!(out, "v{i}");
        }
        Expr::Wildcard(_) => out.push('_'),
        Expr::Str(s, _) => {
            let _ = write!(out, "{s:?}");
        }
        Expr::Num(Number::Int(n), _) => {
            let _ = write!(out, "{n}");
        }
        Expr::Num(Number::Float(x), _) => {
            let _ = write!(out, "{x:?}");
        }
        Expr::Num(Number::Unsigned(n), _) => {
            let _ = write!(out, "{n}u");
        }
        Expr::Neg(inner, _) => {
            out.push_str("-(");
            canonical_expr(inner, vars, out);
            out.push(')');
        }
        Expr::Unary(op, inner, _) => {
            out.push_str(op.as_str());
            out.push_str(" (");
            canonical_expr(inner, vars, out);
            out.push(')');
        }
        Expr::Call(f, args, _) => {
            out.push_str(f.as_str());
            out.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                canonical_expr(a, vars, out);
            }
            out.push(')');
        }
        Expr::Record(branch, args, _) => {
            let close = match branch {
                Some(b) => {
                    out.push('$');
                    out.push_str(&b.name);
                    out.push('(');
                    ')'
                }
                None => {
                    out.push('[');
                    ']'
                }
            };
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                canonical_expr(a, vars, out);
            }
            out.push(close);
        }
        Expr::Nil(_) => out.push_str("nil"),
        Expr::Field {
            record,
            branch,
            index,
            ..
        } => {
            out.push_str("@field(");
            canonical_expr(record, vars, out);
            let _ = write!(
                out,
                ", {}, {index})",
                branch.as_ref().map_or("", |b| b.name.as_str())
            );
        }
        Expr::Binary { op, lhs, rhs, .. } if op.is_functor() => {
            out.push_str(op.as_str());
            out.push('(');
            canonical_expr(lhs, vars, out);
            out.push_str(", ");
            canonical_expr(rhs, vars, out);
            out.push(')');
        }
        Expr::Binary { op, lhs, rhs, .. } => {
            out.push('(');
            canonical_expr(lhs, vars, out);
            out.push(' ');
            out.push_str(op.as_str());
            out.push(' ');
            canonical_expr(rhs, vars, out);
            out.push(')');
        }
        Expr::Aggregate(a) => {
            out.push_str(a.func.as_str());
            if let Some(t) = &a.target {
                out.push(' ');
                canonical_expr(t, vars, out);
            }
            out.push_str(" : { ");
            canonical_body(&a.body, vars, out);
            out.push_str(" }");
        }
    }
}

fn canonical_body<'a>(body: &'a [Literal], vars: &mut Vec<&'a str>, out: &mut String) {
    for (i, lit) in body.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match lit {
            Literal::Positive(a) => canonical_atom(a, vars, out),
            Literal::Negative(a, _) => {
                out.push('!');
                canonical_atom(a, vars, out);
            }
            Literal::Compare { op, lhs, rhs, .. } => {
                canonical_expr(lhs, vars, out);
                out.push(' ');
                out.push_str(op.as_str());
                out.push(' ');
                canonical_expr(rhs, vars, out);
            }
        }
    }
}
