//! The checked program: what every engine evaluates.
//!
//! Relations are numbered ([`RelId`]), variables of a rule are numbered into fixed slots
//! ([`VarId`], `0..rule.var_names.len()`), constants are [`Value`]s, and operators carry
//! the type they work at. A rule's body is in *evaluation order*: reading it left to right,
//! every variable a literal needs is bound by an earlier literal, so an engine can evaluate
//! it as a pipeline of joins, filters and assignments without planning of its own.
//!
//! Every part of the IR prints as Datalog with its names: `Display` for [`Program`], and
//! `display` methods returning a printable [`Show`] for the parts of a rule.

mod display;
mod strings;

pub use display::Show;
pub use strings::{call_arg_type, call_type, eval_call, parse_symbol};

use crate::value::{SymbolTable, Type, Value};
pub use dynalog_syntax::{AggFunc, Functor};
use dynalog_syntax::{ArithOp, CmpOp, Diagnostic, Span, UnaryOp};
use std::collections::BTreeMap;

/// Index of a relation in [`Program::relations`].
pub type RelId = u32;
/// Index of a variable slot within one rule.
pub type VarId = u32;

/// Options of an `.input` / `.output` directive, e.g. `IO="file"`, `filename="x.csv"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoSpec {
    pub params: BTreeMap<String, String>,
    pub span: Span,
}

impl IoSpec {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    pub name: String,
    pub column_names: Vec<String>,
    pub types: Vec<Type>,
    pub inputs: Vec<IoSpec>,
    pub outputs: Vec<IoSpec>,
    pub printsize: bool,
    /// Declared implicitly by a rule in the study's syntax (all columns symbols).
    pub implicit: bool,
    /// Declared `eqrel`: an equivalence relation (two columns of one type), closed by
    /// rules the analysis adds (see [`Rule::generated`]).
    pub eqrel: bool,
    pub span: Span,
}

impl Relation {
    pub fn arity(&self) -> usize {
        self.types.len()
    }

    /// A relation the analysis made for an aggregate (its name starts with `@`, which
    /// no written name can): not the user's, never printed or listed.
    pub fn is_internal(&self) -> bool {
        self.name.starts_with('@')
    }
}

/// The relation of the candidates of `relation`'s choice (`choice-domain`, module
/// `check::choice`).
pub fn choice_candidates(relation: &str) -> String {
    format!("@{relation}_choice_in")
}

/// The candidates of `relation`'s choice one round late, when `relation` depends on
/// itself ([`Chosen`]).
pub fn choice_late(relation: &str) -> String {
    format!("@{relation}_choice_at")
}

/// The candidates of `relation`'s choice that a smaller candidate of the same domain
/// value dominates, when `relation` depends on itself ([`Chosen`]).
pub fn choice_dominated(relation: &str) -> String {
    format!("@{relation}_choice_dom")
}

/// The relation of the candidates of `relation`'s subsumption rules (module
/// `check::subsume`).
pub fn subsumption_candidates(relation: &str) -> String {
    format!("@{relation}_sub_in")
}

/// Whether `name` is a relation of candidates ([`choice_candidates`],
/// [`subsumption_candidates`]): its rules are the ones written for the chosen or
/// subsumed relation.
pub fn is_candidates(name: &str) -> bool {
    candidates_for(name).is_some()
}

/// The chosen or subsumed relation whose candidates `name` holds, if it is a relation
/// of candidates ([`is_candidates`]).
pub fn candidates_for(name: &str) -> Option<&str> {
    let stem = name.strip_prefix('@')?;
    stem.strip_suffix("_choice_in")
        .or_else(|| stem.strip_suffix("_sub_in"))
}

/// An argument of a body atom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Term {
    /// A variable: bound here if no earlier literal bound it, otherwise compared.
    Var(VarId),
    Const(Value),
    /// `_`: matches anything, binds nothing.
    Wildcard,
}

/// An arithmetic expression over bound variables.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Expr {
    Var(VarId),
    Const(Value),
    /// Arithmetic at the given numeric type (`Number`, `Unsigned` or `Float`).
    Binary {
        op: ArithOp,
        ty: Type,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Unary minus at the given numeric type.
    Neg(Type, Box<Expr>),
    /// A unary operator whose operand has the given type: `bnot` or `lnot` (at
    /// `Number` or `Unsigned`, the result of the same type), or a conversion
    /// `to_float`/`to_number`/`to_unsigned` from that numeric type to the
    /// operator's ([`unary_type`]).
    Unary(UnaryOp, Type, Box<Expr>),
    /// A functor on symbols ([`eval_call`]); the type is the operand's for `to_string`
    /// (`Symbol` for the others). `contains` and `match` give 1 or 0, and stand in a
    /// body as a [`Literal::Filter`] `!= 0` (`= 0` negated).
    Call(Functor, Type, Vec<Expr>),
    /// A record of record type `ty` made from its fields by constructor `branch` (0
    /// for a record type), interned in the program's table ([`SymbolTable::pack`]).
    Pack {
        ty: Type,
        branch: u32,
        fields: Vec<Expr>,
    },
    /// Field `index` of a record of record type `ty`, if constructor `branch` made it
    /// (no value for another constructor or `nil`): how a body takes a record apart.
    Unpack {
        ty: Type,
        record: Box<Expr>,
        branch: u32,
        index: u32,
    },
}

/// A body atom `r(t1, ..., tn)`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Atom {
    pub relation: RelId,
    pub args: Vec<Term>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Literal {
    /// A positive atom: joins, binding its not-yet-bound variables.
    Atom(Atom),
    /// `!r(...)`: all its variables are bound; wildcards allowed. `r` is in a lower stratum.
    Not(Atom),
    /// `lhs op rhs`, compared at type `ty`; all variables bound.
    Filter {
        op: CmpOp,
        ty: Type,
        lhs: Expr,
        rhs: Expr,
    },
    /// `var = expr` where `var` is not yet bound: binds it.
    Assign { var: VarId, expr: Expr },
}

/// The head of a rule: a relation and one expression per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    pub relation: RelId,
    pub args: Vec<Expr>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub head: Head,
    /// In evaluation order (see the module docs).
    pub body: Vec<Literal>,
    /// Slot names (`x`, or a generated name such as `_arg0` for desugared arguments).
    pub var_names: Vec<String>,
    pub var_types: Vec<Type>,
    /// Index into [`Program::strata`].
    pub stratum: usize,
    /// The rule as written, for messages and listings.
    pub text: String,
    /// Made by the analysis, not written: the rules that close an `eqrel` relation
    /// (`r(x, x) :- r(x, _).`, `r(y, x) :- r(x, y).`, `r(x, z) :- r(x, y), r(y, z).`),
    /// evaluated like any other rule but not the program's rules to list or remove.
    pub generated: bool,
    pub span: Span,
}

impl Rule {
    /// Whether the rule reads or makes symbols' text (see [`Expr::uses_table`]).
    pub fn uses_table(&self) -> bool {
        self.head.args.iter().any(Expr::uses_table)
            || self.body.iter().any(|l| match l {
                Literal::Filter { lhs, rhs, .. } => lhs.uses_table() || rhs.uses_table(),
                Literal::Assign { expr, .. } => expr.uses_table(),
                Literal::Atom(_) | Literal::Not(_) => false,
            })
    }

    /// Positive body atoms, in evaluation order.
    pub fn positive_atoms(&self) -> impl Iterator<Item = &Atom> {
        self.body.iter().filter_map(|l| match l {
            Literal::Atom(a) => Some(a),
            _ => None,
        })
    }
}

/// An aggregate over a relation, as the analysis rewrites every aggregate of a rule:
/// `head(g.., result)` for each distinct group `g..` (the first `group` columns) of
/// `source`, `result` folding the group's rows by `func`. For `count` the result is
/// the number of the group's rows; for the others it folds the rows' last column (the
/// aggregated value, of type `ty`). A group with no row has no result (a `count` or
/// `sum` of nothing is 0 through a negation in the rule that reads the result).
#[derive(Clone, Debug, PartialEq)]
pub struct Aggregate {
    pub head: RelId,
    pub source: RelId,
    pub group: usize,
    pub func: AggFunc,
    /// The type of the aggregated value (`Number` for `count`).
    pub ty: Type,
    /// Index into [`Program::strata`].
    pub stratum: usize,
    /// The aggregate as written.
    pub text: String,
    pub span: Span,
}

impl Aggregate {
    /// The result of the group whose rows (of `source`, the group columns removed)
    /// are `rows`, as every engine computes it: `rows` ascending as `u32` slices
    /// (a float sum adds in that order, in `f64`), no row twice; `None` if empty.
    pub fn fold<'a>(&self, rows: impl Iterator<Item = &'a [Value]>) -> Option<Value> {
        fold_aggregate(self.func, self.ty, rows)
    }
}

/// [`Aggregate::fold`].
pub fn fold_aggregate<'a>(
    func: AggFunc,
    ty: Type,
    rows: impl Iterator<Item = &'a [Value]>,
) -> Option<Value> {
    let mut n: u64 = 0;
    let mut acc: Option<Value> = None;
    let mut fsum: f64 = 0.0;
    for row in rows {
        n += 1;
        if func == AggFunc::Count {
            continue;
        }
        let v = *row.last()?;
        match func {
            AggFunc::Count => {}
            AggFunc::Sum | AggFunc::Mean if ty == Type::Float => {
                fsum += f32::from_bits(v) as f64;
            }
            AggFunc::Sum | AggFunc::Mean => {
                acc = Some(acc.unwrap_or(0).wrapping_add(v));
            }
            AggFunc::Min | AggFunc::Max => {
                let better = match acc {
                    None => true,
                    Some(a) => {
                        let ord = match ty {
                            Type::Float => f32::from_bits(v)
                                .partial_cmp(&f32::from_bits(a))
                                .unwrap_or(std::cmp::Ordering::Equal),
                            Type::Unsigned => v.cmp(&a),
                            _ => (v as i32).cmp(&(a as i32)),
                        };
                        if func == AggFunc::Min {
                            ord.is_lt()
                        } else {
                            ord.is_gt()
                        }
                    }
                };
                if better {
                    acc = Some(v);
                }
            }
        }
    }
    if n == 0 {
        return None;
    }
    Some(match func {
        AggFunc::Count => n as u32,
        AggFunc::Sum if ty == Type::Float => (fsum as f32).to_bits(),
        AggFunc::Mean if ty == Type::Float => ((fsum / n as f64) as f32).to_bits(),
        // Integer mean (the analysis refuses it, as Soufflé does): truncated.
        AggFunc::Mean => {
            let sum = acc.unwrap_or(0);
            match ty {
                Type::Unsigned => sum / n as u32,
                _ => ((sum as i32) as i64 / n as i64) as i32 as u32,
            }
        }
        _ => acc?,
    })
}

/// A strongly connected component of the dependency graph, evaluated as one fixpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Stratum {
    pub relations: Vec<RelId>,
    /// Indexes into [`Program::rules`] of the rules whose head is in this stratum.
    pub rules: Vec<usize>,
    /// Indexes into [`Program::aggregates`] of the aggregates whose head is in this
    /// stratum: a stratum with an aggregate has nothing else (no rule, one relation),
    /// and every stratum it reads comes before it.
    pub aggregates: Vec<usize>,
    /// Whether some rule of this stratum reads a relation of this stratum.
    pub recursive: bool,
    /// A relation with subsumption that depends on itself: the stratum is that relation,
    /// its candidates and its dominated candidates, the only stratum with a negation of
    /// one of its own relations (see [`Subsumed`]).
    pub subsumption: Option<Subsumed>,
    /// A `choice-domain` relation that depends on itself: the stratum is that relation,
    /// its candidates, their copy one round late and the dominated ones (see
    /// [`Chosen`]).
    pub choice: Option<Chosen>,
}

/// A `choice-domain` relation `r` that depends on itself (a spanning tree:
/// `st(x, y) :- st(_, x), edge(x, y).` with `choice-domain y`). Its stratum evaluates
/// four relations, with these rules (module `check::choice`):
///
/// ```text
/// @r_choice_in(h) :- ..., !r(domain of h, _).  the rules written for r: the candidates
/// @r_choice_at(c) :- @r_choice_in(c).          the candidates, one round late
/// @r_choice_dom(c) :- @r_choice_in(c), !r(domain of c, _), @r_choice_in(d),
///                     d is smaller, same domain value
/// r(c) :- r(c).                                what r chose, it keeps
/// r(c) :- @r_choice_at(c), !@r_choice_dom(c), !r(domain of c, _).
/// ```
///
/// (The negations of `r` in the candidates' and the dominated ones' rules only leave
/// out candidates of domain values already chosen, which no round would choose: they
/// change the cost, not the result.)
///
/// Its meaning is given by rounds, as in Soufflé: a domain value takes the smallest of
/// the candidates of the first round that has one, and keeps it. Each round reads what
/// the previous round ended with (negations included), starting from the stratum's base
/// facts, with every relation of lower strata complete. `r` only grows, and so do the
/// candidates of the domain values not chosen yet (they come from `r` and from
/// complete lower strata); a candidate can only be chosen in the round after it
/// reached `@r_choice_at`. So a semi-naive evaluation that keeps to these rounds
/// computes `r`, and so does a differential loop whose iterations are these rounds
/// (the engine must start the stratum's loop after everything it reads is complete: a
/// relation that arrives round by round would change which round a candidate is found
/// in). The candidates of values already chosen differ, and are not part of the
/// result: a semi-naive evaluation keeps every candidate it derived, while in a
/// differential loop a candidate goes in the round after its value is chosen (its
/// `!r(domain, _)` no longer holds), so at the fixpoint the three relations of
/// candidates are empty there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub relation: RelId,
    pub dominated: RelId,
}

/// A recursive relation with subsumption (`dist(x, d1) <= dist(x, d2) :- d2 <= d1.` with
/// `dist` derived from `dist`). Its stratum evaluates three relations: the candidates
/// (`@r_sub_in`, the rules written for `r`, which read `r`), the dominated candidates
/// (`@r_sub_dom`) and `r`, the candidates not dominated.
///
/// The candidates accumulate (`@r_sub_in` is also derived from itself): a candidate
/// derived from a tuple of `r` stays one when that tuple is dominated later. So the
/// candidates and the dominated ones only grow during the evaluation, and the fixpoint is
/// reached when they stop growing; `r` is then the candidates not dominated. An engine
/// may let `r` hold a tuple that a candidate found later dominates, until the stratum's
/// fixpoint, and must then remove it.
///
/// When a dominating tuple derives only tuples that dominate (or equal) what the tuple
/// it dominates derives (shortest and widest paths, earliest times: the programs
/// subsumption is written for), `r` is the set of undominated tuples of the closure,
/// whatever the order of evaluation, and every engine gives the same `r` (its
/// candidates may differ: which of them were derived depends on the order). Otherwise,
/// as in Soufflé, which tuples survive depends on the order of evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subsumed {
    pub relation: RelId,
    pub dominated: RelId,
}

/// A checked program, ready for evaluation.
#[derive(Clone, Debug)]
pub struct Program {
    pub relations: Vec<Relation>,
    /// Rules with a non-empty body.
    pub rules: Vec<Rule>,
    /// Facts written in the program (`e(1, 2).`), already evaluated.
    pub facts: Vec<(RelId, Vec<Value>)>,
    /// The aggregates of the rules, each computing an internal relation.
    pub aggregates: Vec<Aggregate>,
    /// In evaluation order: a stratum reads only relations of itself and earlier strata.
    pub strata: Vec<Stratum>,
    /// Symbols of the program's constants; fact loading interns into the same table.
    pub symbols: SymbolTable,
    /// What the analysis accepted but the user should know (a `.pragma` dynalog does
    /// not act on), in source order; shown with [`Diagnostic::as_warning`].
    pub warnings: Vec<Diagnostic>,
}

impl Program {
    pub fn relation_id(&self, name: &str) -> Option<RelId> {
        self.relations
            .iter()
            .position(|r| r.name == name)
            .map(|i| i as RelId)
    }

    pub fn relation(&self, id: RelId) -> &Relation {
        &self.relations[id as usize]
    }

    /// Render a tuple of `rel` as a Datalog fact: `path(1, "a").`
    pub fn fact_to_string(&self, rel: RelId, tuple: &[Value]) -> String {
        let r = self.relation(rel);
        let args: Vec<String> = tuple
            .iter()
            .zip(&r.types)
            .map(|(&v, &t)| match t {
                Type::Symbol => format!("{:?}", self.symbols.resolve(v)),
                _ => t.render(v, &self.symbols),
            })
            .collect();
        format!("{}({}).", r.name, args.join(", "))
    }
}

/// `lhs op rhs` at numeric type `ty`, as Soufflé 2.5 computes it with 32-bit numbers:
/// integer arithmetic wraps; shifts take the amount modulo 32; `^` on integers is
/// C's `pow` in doubles converted back as x86 does (a `number` out of range or NaN
/// becomes `i32::MIN`, an `unsigned` keeps the low 32 bits of the 64-bit integer, 0
/// beyond); `min`/`max` are C++'s `std::min`/`std::max` (the first operand on ties and
/// NaN); logical operators give 1 or 0. Division or remainder by zero gives `None`
/// (the rule does not fire), as do the integer-only operators on floats and any
/// operator on symbols (analysis rejects both).
pub fn eval_arith(op: ArithOp, ty: Type, lhs: Value, rhs: Value) -> Option<Value> {
    match ty {
        Type::Number => {
            let (a, b) = (lhs as i32, rhs as i32);
            let r = match op {
                ArithOp::Add => a.wrapping_add(b),
                ArithOp::Sub => a.wrapping_sub(b),
                ArithOp::Mul => a.wrapping_mul(b),
                ArithOp::Div => a
                    .checked_div(b)
                    .or_else(|| (b == -1).then(|| a.wrapping_neg()))?,
                ArithOp::Mod => a.checked_rem(b).or_else(|| (b == -1).then_some(0))?,
                ArithOp::Pow => {
                    let t = (a as f64).powf(b as f64).trunc();
                    if (-2_147_483_648.0..=2_147_483_647.0).contains(&t) {
                        t as i32
                    } else {
                        i32::MIN
                    }
                }
                ArithOp::Min => min_of(a, b),
                ArithOp::Max => max_of(a, b),
                _ => return integral(op, lhs, rhs, a.wrapping_shr(rhs) as u32),
            };
            Some(r as u32)
        }
        Type::Unsigned => match op {
            ArithOp::Add => Some(lhs.wrapping_add(rhs)),
            ArithOp::Sub => Some(lhs.wrapping_sub(rhs)),
            ArithOp::Mul => Some(lhs.wrapping_mul(rhs)),
            ArithOp::Div => lhs.checked_div(rhs),
            ArithOp::Mod => lhs.checked_rem(rhs),
            ArithOp::Pow => {
                let t = (lhs as f64).powf(rhs as f64).trunc();
                Some(if t < 9_223_372_036_854_775_808.0 {
                    t as i64 as u32
                } else {
                    0
                })
            }
            ArithOp::Min => Some(min_of(lhs, rhs)),
            ArithOp::Max => Some(max_of(lhs, rhs)),
            _ => integral(op, lhs, rhs, lhs.wrapping_shr(rhs)),
        },
        Type::Float => {
            let (a, b) = (f32::from_bits(lhs), f32::from_bits(rhs));
            let r = match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Mod => a % b,
                ArithOp::Pow => a.powf(b),
                ArithOp::Min => min_of(a, b),
                ArithOp::Max => max_of(a, b),
                _ => return None,
            };
            Some(r.to_bits())
        }
        Type::Symbol | Type::Record(_) => None,
    }
}

/// C++'s `std::min`: `b` only if it is smaller.
fn min_of<T: PartialOrd>(a: T, b: T) -> T {
    if b < a { b } else { a }
}

/// C++'s `std::max`: `b` only if `a` is smaller.
fn max_of<T: PartialOrd>(a: T, b: T) -> T {
    if a < b { b } else { a }
}

/// The integer-only operators on the bits of `number` or `unsigned`; `shr` is `bshr`
/// at the type (arithmetic for `number`, logical for `unsigned`).
fn integral(op: ArithOp, a: Value, b: Value, shr: Value) -> Option<Value> {
    let bool01 = |x: bool| Some(x as Value);
    match op {
        ArithOp::BAnd => Some(a & b),
        ArithOp::BOr => Some(a | b),
        ArithOp::BXor => Some(a ^ b),
        ArithOp::BShl => Some(a.wrapping_shl(b)),
        ArithOp::BShr => Some(shr),
        ArithOp::BShru => Some(a.wrapping_shr(b)),
        ArithOp::LAnd => bool01(a != 0 && b != 0),
        ArithOp::LOr => bool01(a != 0 || b != 0),
        ArithOp::LXor => bool01((a != 0) != (b != 0)),
        _ => None,
    }
}

/// Unary minus at numeric type `ty` (wrapping for integers).
pub fn eval_neg(ty: Type, v: Value) -> Option<Value> {
    match ty {
        Type::Number => Some((v as i32).wrapping_neg() as u32),
        Type::Unsigned => Some(v.wrapping_neg()),
        Type::Float => Some((-f32::from_bits(v)).to_bits()),
        Type::Symbol | Type::Record(_) => None,
    }
}

/// The type of `op` applied to an operand of type `ty`: the operand's for `bnot` and
/// `lnot`, the conversion's own for `to_float`, `to_number` and `to_unsigned`.
pub fn unary_type(op: UnaryOp, ty: Type) -> Type {
    match op {
        UnaryOp::BNot | UnaryOp::LNot => ty,
        UnaryOp::ToFloat => Type::Float,
        UnaryOp::ToNumber => Type::Number,
        UnaryOp::ToUnsigned => Type::Unsigned,
    }
}

/// `op v`, `v` of type `ty`: `bnot v` or `lnot v` (1 or 0) at `number` or `unsigned`,
/// or a conversion between numeric types as Soufflé 2.5 computes it (C++ casts on
/// x86-64):
///
/// * to `float`: the nearest float (`to_float(16777217)` is 16777216);
/// * to `number`: a float truncated toward zero, `i32::MIN` if that is out of range or
///   NaN (`to_number(-2.7)` is -2, `to_number(3e9)` is -2147483648); an `unsigned` keeps
///   its bits (`to_number(4294967295)` is -1);
/// * to `unsigned`: a float truncated toward zero to a 64-bit integer (`i64::MIN` if out
///   of its range or NaN) whose low 32 bits are kept (`to_unsigned(-2.7)` is
///   4294967294, `to_unsigned(4294967296.0)` and NaN are 0); a `number` keeps its bits
///   (`to_unsigned(-1)` is 4294967295);
/// * a conversion to the operand's own type changes nothing.
///
/// `None` for `bnot`/`lnot` on floats and anything on symbols (analysis rejects them:
/// converting a symbol needs its text, which evaluation does not have).
pub fn eval_unary(op: UnaryOp, ty: Type, v: Value) -> Option<Value> {
    if ty.is_interned() {
        return None;
    }
    let float = || f32::from_bits(v) as f64;
    Some(match (op, ty) {
        (UnaryOp::BNot | UnaryOp::LNot, Type::Float) => return None,
        (UnaryOp::BNot, _) => !v,
        (UnaryOp::LNot, _) => (v == 0) as Value,
        (UnaryOp::ToFloat, Type::Number) => (v as i32 as f32).to_bits(),
        (UnaryOp::ToFloat, Type::Unsigned) => (v as f32).to_bits(),
        (UnaryOp::ToNumber, Type::Float) => {
            let t = float().trunc();
            if (-2_147_483_648.0..2_147_483_648.0).contains(&t) {
                t as i32 as Value
            } else {
                i32::MIN as Value
            }
        }
        (UnaryOp::ToUnsigned, Type::Float) => {
            let t = float().trunc();
            if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
                t as i64 as Value
            } else {
                0
            }
        }
        // Between number and unsigned the bits stay; to its own type nothing changes.
        _ => v,
    })
}

/// `lhs op rhs` compared at type `ty`. Symbols compare by id, so only `=`/`!=` are
/// meaningful for them (analysis rejects the others).
pub fn eval_cmp(op: CmpOp, ty: Type, lhs: Value, rhs: Value) -> bool {
    use std::cmp::Ordering;
    let ord = match ty {
        Type::Number => (lhs as i32).cmp(&(rhs as i32)),
        Type::Unsigned | Type::Symbol | Type::Record(_) => lhs.cmp(&rhs),
        Type::Float => match f32::from_bits(lhs).partial_cmp(&f32::from_bits(rhs)) {
            Some(o) => o,
            // NaN: only != holds.
            None => return op == CmpOp::Ne,
        },
    };
    match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    }
}

/// The name of constructor `branch` of record type `ty` (`None` for a record type),
/// and its fields' types.
pub fn record_branch(symbols: &SymbolTable, ty: Type, branch: u32) -> (Option<String>, Vec<Type>) {
    let Type::Record(t) = ty else {
        return (None, Vec::new());
    };
    let Some(rt) = symbols.record_type(t) else {
        return (None, Vec::new());
    };
    match rt.branches.into_iter().nth(branch as usize) {
        Some(b) => (
            rt.adt.then_some(b.name),
            b.fields.into_iter().map(|(_, t)| t).collect(),
        ),
        None => (None, Vec::new()),
    }
}

impl Expr {
    /// Evaluate over a slot array in which every variable of the expression is bound,
    /// reading and interning symbols' text in `symbols` (the program's table). `None`
    /// when it has no value (division by zero, a text that is not a number, ...).
    pub fn eval(&self, slots: &[Value], symbols: &SymbolTable) -> Option<Value> {
        match self {
            Expr::Var(v) => Some(slots[*v as usize]),
            Expr::Const(c) => Some(*c),
            Expr::Binary { op, ty, lhs, rhs } => eval_arith(
                *op,
                *ty,
                lhs.eval(slots, symbols)?,
                rhs.eval(slots, symbols)?,
            ),
            Expr::Neg(ty, e) => eval_neg(*ty, e.eval(slots, symbols)?),
            Expr::Unary(op, Type::Symbol, e) => {
                parse_symbol(*op, &symbols.get(e.eval(slots, symbols)?)?)
            }
            Expr::Unary(op, ty, e) => eval_unary(*op, *ty, e.eval(slots, symbols)?),
            Expr::Call(f, ty, args) => {
                let mut values = [0; 4];
                if args.len() <= values.len() {
                    for (v, a) in values.iter_mut().zip(args) {
                        *v = a.eval(slots, symbols)?;
                    }
                    eval_call(*f, *ty, &values[..args.len()], symbols)
                } else {
                    let values: Option<Vec<Value>> =
                        args.iter().map(|a| a.eval(slots, symbols)).collect();
                    eval_call(*f, *ty, &values?, symbols)
                }
            }
            Expr::Pack { branch, fields, .. } => {
                let mut values = [0; 4];
                if fields.len() <= values.len() {
                    for (v, a) in values.iter_mut().zip(fields) {
                        *v = a.eval(slots, symbols)?;
                    }
                    Some(symbols.pack(*branch, &values[..fields.len()]))
                } else {
                    let values: Option<Vec<Value>> =
                        fields.iter().map(|a| a.eval(slots, symbols)).collect();
                    Some(symbols.pack(*branch, &values?))
                }
            }
            Expr::Unpack {
                record,
                branch,
                index,
                ..
            } => symbols.unpack(record.eval(slots, symbols)?, *branch, *index),
        }
    }

    /// Call `f` on every variable it reads (with repeats), left to right.
    pub fn for_each_var(&self, f: &mut impl FnMut(VarId)) {
        match self {
            Expr::Var(v) => f(*v),
            Expr::Const(_) => {}
            Expr::Binary { lhs, rhs, .. } => {
                lhs.for_each_var(f);
                rhs.for_each_var(f);
            }
            Expr::Neg(_, e) | Expr::Unary(_, _, e) => e.for_each_var(f),
            Expr::Call(_, _, args) | Expr::Pack { fields: args, .. } => {
                args.iter().for_each(|a| a.for_each_var(f))
            }
            Expr::Unpack { record, .. } => record.for_each_var(f),
        }
    }

    /// Whether it reads or makes symbols' text (a string functor or a conversion of a
    /// symbol) or records: such an expression needs the program's table when
    /// evaluated.
    pub fn uses_table(&self) -> bool {
        match self {
            Expr::Var(_) | Expr::Const(_) => false,
            Expr::Call(..)
            | Expr::Unary(_, Type::Symbol, _)
            | Expr::Pack { .. }
            | Expr::Unpack { .. } => true,
            Expr::Binary { lhs, rhs, .. } => lhs.uses_table() || rhs.uses_table(),
            Expr::Neg(_, e) | Expr::Unary(_, _, e) => e.uses_table(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_wraps_and_division_by_zero_has_no_value() {
        let n = |x: i32| x as u32;
        let num = Type::Number;
        assert_eq!(
            eval_arith(ArithOp::Add, num, n(i32::MAX), 1),
            Some(n(i32::MIN))
        );
        assert_eq!(eval_arith(ArithOp::Sub, num, n(-3), 4), Some(n(-7)));
        assert_eq!(eval_arith(ArithOp::Div, num, n(-7), 2), Some(n(-3)));
        assert_eq!(eval_arith(ArithOp::Mod, num, n(-7), 2), Some(n(-1)));
        assert_eq!(eval_arith(ArithOp::Div, num, 5, 0), None);
        assert_eq!(eval_arith(ArithOp::Mod, num, 5, 0), None);
        assert_eq!(
            eval_arith(ArithOp::Div, num, n(i32::MIN), n(-1)),
            Some(n(i32::MIN))
        );
        assert_eq!(eval_arith(ArithOp::Mod, num, n(i32::MIN), n(-1)), Some(0));
        let uns = Type::Unsigned;
        assert_eq!(eval_arith(ArithOp::Sub, uns, 0, 1), Some(u32::MAX));
        assert_eq!(
            eval_arith(ArithOp::Div, uns, u32::MAX, 2),
            Some(u32::MAX / 2)
        );
        assert_eq!(eval_arith(ArithOp::Mod, uns, 1, 0), None);
        let f = |x: f32| x.to_bits();
        assert_eq!(
            eval_arith(ArithOp::Mul, Type::Float, f(1.5), f(2.0)),
            Some(f(3.0))
        );
        assert_eq!(
            eval_arith(ArithOp::Div, Type::Float, f(1.0), f(0.0)),
            Some(f(f32::INFINITY))
        );
        assert_eq!(eval_arith(ArithOp::Add, Type::Symbol, 1, 2), None);
    }

    #[test]
    fn comparisons_by_type() {
        let n = |x: i32| x as u32;
        assert!(eval_cmp(CmpOp::Lt, Type::Number, n(-1), 0));
        assert!(!eval_cmp(CmpOp::Lt, Type::Unsigned, n(-1), 0));
        assert!(eval_cmp(
            CmpOp::Ge,
            Type::Float,
            (-0.0f32).to_bits(),
            0.0f32.to_bits()
        ));
        let nan = f32::NAN.to_bits();
        assert!(!eval_cmp(CmpOp::Eq, Type::Float, nan, nan));
        assert!(eval_cmp(CmpOp::Ne, Type::Float, nan, nan));
        assert!(eval_cmp(CmpOp::Eq, Type::Symbol, 3, 3));
        assert!(eval_cmp(CmpOp::Ne, Type::Symbol, 3, 4));
    }

    #[test]
    fn expressions_evaluate_over_slots() {
        let st = SymbolTable::new();
        let neg = |e: Expr| Expr::Neg(Type::Number, Box::new(e));
        assert_eq!(neg(Expr::Const(5)).eval(&[], &st), Some((-5i32) as u32));
        assert_eq!(
            neg(Expr::Const(i32::MIN as u32)).eval(&[], &st),
            Some(i32::MIN as u32)
        );
        let div0 = Expr::Binary {
            op: ArithOp::Div,
            ty: Type::Number,
            lhs: Box::new(Expr::Var(0)),
            rhs: Box::new(Expr::Const(0)),
        };
        assert_eq!(div0.eval(&[7], &st), None);
        assert_eq!(neg(div0).eval(&[7], &st), None);
        // `strlen(to_string(x * 10))` and `to_number(s)` read and make symbols' text.
        let ten_times = Expr::Binary {
            op: ArithOp::Mul,
            ty: Type::Number,
            lhs: Box::new(Expr::Var(0)),
            rhs: Box::new(Expr::Const(10)),
        };
        let text = Expr::Call(Functor::ToString, Type::Number, vec![ten_times]);
        let len = Expr::Call(Functor::Strlen, Type::Symbol, vec![text.clone()]);
        assert!(len.uses_table() && !div0_free().uses_table());
        assert_eq!(len.eval(&[(-42i32) as u32], &st), Some(4));
        assert_eq!(text.eval(&[7], &st), st.lookup("70"));
        let n = Expr::Unary(UnaryOp::ToNumber, Type::Symbol, Box::new(Expr::Var(0)));
        assert_eq!(n.eval(&[st.intern(" -12x")], &st), Some((-12i32) as u32));
        assert_eq!(n.eval(&[st.intern("x")], &st), None);
    }

    fn div0_free() -> Expr {
        Expr::Neg(Type::Number, Box::new(Expr::Var(0)))
    }

    /// Every value here is what Soufflé 2.5 (32-bit) prints for the same operation.
    #[test]
    fn operators_as_souffle_computes_them() {
        let n = |x: i32| x as u32;
        let num = |op, a: i32, b: i32| eval_arith(op, Type::Number, n(a), n(b)).map(|v| v as i32);
        use ArithOp::*;
        // Shifts take the amount modulo 32.
        assert_eq!(num(BShl, 1, 31), Some(i32::MIN));
        assert_eq!(num(BShl, 1, 32), Some(1));
        assert_eq!(num(BShl, 1, 33), Some(2));
        assert_eq!(num(BShl, 1, -1), Some(i32::MIN));
        assert_eq!(num(BShr, -8, 1), Some(-4));
        assert_eq!(num(BShr, -8, 32), Some(-8));
        assert_eq!(num(BShr, -8, -1), Some(-1));
        assert_eq!(num(BShru, -8, 1), Some(2147483644));
        assert_eq!(num(BShru, -8, -1), Some(1));
        // Power: C's pow in doubles, out of range is i32::MIN.
        assert_eq!(num(Pow, 2, -1), Some(0));
        assert_eq!(num(Pow, -1, -1), Some(-1));
        assert_eq!(num(Pow, -1, -2), Some(1));
        assert_eq!(num(Pow, 0, -1), Some(i32::MIN));
        assert_eq!(num(Pow, 0, 0), Some(1));
        assert_eq!(num(Pow, 3, 19), Some(1162261467));
        assert_eq!(num(Pow, 3, 20), Some(i32::MIN));
        assert_eq!(num(Pow, 2, 31), Some(i32::MIN));
        assert_eq!(num(Pow, -2, 31), Some(i32::MIN));
        assert_eq!(num(Pow, -1, 31), Some(-1));
        let uns = |op, a: u32, b: u32| eval_arith(op, Type::Unsigned, a, b);
        assert_eq!(uns(Pow, 3, 20), Some(3486784401));
        assert_eq!(uns(Pow, 3, 21), Some(1870418611));
        assert_eq!(uns(Pow, 3, 32), Some(3793632897));
        assert_eq!(uns(Pow, 3, 40), Some(0));
        assert_eq!(uns(BShr, 4294967288, 1), Some(2147483644));
        assert_eq!(uns(BShl, 4294967288, 33), Some(4294967280));
        // Logical operators give 1 or 0.
        assert_eq!(num(LAnd, 3, 0), Some(0));
        assert_eq!(num(LOr, 3, 0), Some(1));
        assert_eq!(num(LXor, 3, 4), Some(0));
        assert_eq!(num(LXor, 3, 0), Some(1));
        assert_eq!(eval_unary(UnaryOp::LNot, Type::Number, 5), Some(0));
        assert_eq!(eval_unary(UnaryOp::LNot, Type::Unsigned, 0), Some(1));
        assert_eq!(eval_unary(UnaryOp::BNot, Type::Number, 5), Some(n(-6)));
        assert_eq!(eval_unary(UnaryOp::BNot, Type::Unsigned, 0), Some(u32::MAX));
        assert_eq!(eval_unary(UnaryOp::BNot, Type::Float, 0), None);
        assert_eq!(num(Min, -3, 3), Some(-3));
        assert_eq!(num(Max, i32::MIN, -1), Some(-1));
        // Floats: powf; min/max are C++'s std::min/std::max (NaN and ties: the first).
        let fl = |op, a: f32, b: f32| {
            eval_arith(op, Type::Float, a.to_bits(), b.to_bits()).map(f32::from_bits)
        };
        assert_eq!(fl(Pow, 2.0, 0.5), Some(std::f32::consts::SQRT_2)); // Soufflé: 1.41421354
        assert_eq!(fl(Pow, -8.0, -1.0), Some(-0.125));
        assert!(fl(Pow, -8.0, 0.5).is_some_and(f32::is_nan));
        assert!(fl(Min, f32::NAN, 1.0).is_some_and(f32::is_nan));
        assert_eq!(fl(Min, 1.0, f32::NAN), Some(1.0));
        assert!(fl(Max, f32::NAN, 1.0).is_some_and(f32::is_nan));
        assert_eq!(fl(Max, 1.0, f32::NAN), Some(1.0));
        assert_eq!(
            fl(Min, -0.0, 0.0).map(f32::to_bits),
            Some((-0.0f32).to_bits())
        );
        assert_eq!(
            fl(Max, -0.0, 0.0).map(f32::to_bits),
            Some((-0.0f32).to_bits())
        );
        assert_eq!(fl(BAnd, 1.0, 1.0), None);
    }

    /// Every value here is what Soufflé 2.5 (32-bit, x86-64) prints for the same
    /// conversion.
    #[test]
    fn conversions_as_souffle_computes_them() {
        use UnaryOp::*;
        let f = |x: f32| x.to_bits();
        let conv = |op, ty, v| eval_unary(op, ty, v);
        let to_number = |x: f32| conv(ToNumber, Type::Float, f(x)).map(|v| v as i32);
        let to_unsigned = |x: f32| conv(ToUnsigned, Type::Float, f(x));
        assert_eq!(to_number(2.7), Some(2));
        assert_eq!(to_number(-2.7), Some(-2));
        assert_eq!(to_number(-0.5), Some(0));
        assert_eq!(to_number(2147483520.0), Some(2147483520));
        assert_eq!(to_number(2147483648.0), Some(i32::MIN));
        assert_eq!(to_number(3e9), Some(i32::MIN));
        assert_eq!(to_number(-3e9), Some(i32::MIN));
        assert_eq!(to_number(1e20), Some(i32::MIN));
        assert_eq!(to_number(f32::NAN), Some(i32::MIN));
        assert_eq!(to_number(f32::INFINITY), Some(i32::MIN));
        assert_eq!(to_number(f32::NEG_INFINITY), Some(i32::MIN));
        assert_eq!(to_unsigned(2.7), Some(2));
        assert_eq!(to_unsigned(-2.7), Some(4294967294));
        assert_eq!(to_unsigned(-0.5), Some(0));
        assert_eq!(to_unsigned(3e9), Some(3000000000));
        assert_eq!(to_unsigned(-3e9), Some(1294967296));
        assert_eq!(to_unsigned(4294967296.0), Some(0));
        assert_eq!(to_unsigned(1e20), Some(0));
        assert_eq!(to_unsigned(f32::NAN), Some(0));
        assert_eq!(to_unsigned(f32::INFINITY), Some(0));
        assert_eq!(to_unsigned(f32::NEG_INFINITY), Some(0));
        let n = |x: i32| x as u32;
        assert_eq!(conv(ToFloat, Type::Number, n(-1)), Some(f(-1.0)));
        assert_eq!(conv(ToFloat, Type::Number, 16777217), Some(f(16777216.0)));
        assert_eq!(
            conv(ToFloat, Type::Number, n(i32::MIN)),
            Some(f(-2147483648.0))
        );
        assert_eq!(
            conv(ToFloat, Type::Unsigned, u32::MAX),
            Some(f(4294967296.0))
        );
        assert_eq!(conv(ToUnsigned, Type::Number, n(-1)), Some(u32::MAX));
        assert_eq!(
            conv(ToNumber, Type::Unsigned, 2147483648),
            Some(n(i32::MIN))
        );
        assert_eq!(conv(ToNumber, Type::Number, 7), Some(7));
        assert_eq!(conv(ToFloat, Type::Float, f(1.5)), Some(f(1.5)));
        assert_eq!(conv(ToUnsigned, Type::Unsigned, 9), Some(9));
        assert_eq!(conv(ToNumber, Type::Symbol, 0), None);
        assert_eq!(unary_type(ToFloat, Type::Number), Type::Float);
        assert_eq!(unary_type(BNot, Type::Unsigned), Type::Unsigned);
    }
}
