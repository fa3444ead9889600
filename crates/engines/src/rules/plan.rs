//! Compilation of a rule into a pipeline of operations with statically known bindings.
//!
//! Reading the body left to right, we know before each literal which variables are
//! bound. A positive atom's arguments then split into *key* columns (constants and
//! variables bound earlier), columns that *bind* a variable (its first occurrence) and
//! columns that must *equal* an earlier column of the same atom (a repeated variable not
//! bound before, as in `e(x, x)`). The key columns choose the access path: a scan when
//! there are none, a probe of the relation's hash set when all columns are keys, and a
//! hash index on the key columns otherwise. Negations are compiled the same way (their
//! variables are all bound; wildcards are not part of the key).

use super::names::Names;
use dynalog_analysis::{CmpOp, Expr, Literal, Program, RelId, Rule, SymbolTable, Term, Type};
use std::fmt;

/// Where a key value comes from.
#[derive(Clone, Copy, Debug)]
pub enum KeySrc {
    Const(u32),
    Var(u32),
}

impl KeySrc {
    #[inline]
    pub fn value(self, slots: &[u32]) -> u32 {
        match self {
            KeySrc::Const(v) => v,
            KeySrc::Var(s) => slots[s as usize],
        }
    }
}

/// How the matching rows of an atom are found.
#[derive(Clone, Debug)]
pub enum Access {
    /// No column is bound: every row (of the allowed range) matches the key.
    Scan,
    /// All columns are bound: a probe of the relation's hash set. `key` has one source
    /// per column.
    Member { key: Box<[KeySrc]> },
    /// Some columns are bound: a lookup in index number `index` of the relation, whose
    /// columns are `cols` (ascending); `key` has one source per column of `cols`.
    Index {
        index: usize,
        cols: Box<[usize]>,
        key: Box<[KeySrc]>,
    },
}

/// A positive atom: a join with the bindings so far.
#[derive(Clone, Debug)]
pub struct Join {
    pub rel: RelId,
    pub access: Access,
    /// Columns that must equal another column of the same row: `(col, earlier col)`.
    pub checks: Box<[(usize, usize)]>,
    /// Columns that bind a variable: `(col, var)`.
    pub binds: Box<[(usize, u32)]>,
}

/// One step of a rule's pipeline (one body literal).
#[derive(Clone, Debug)]
pub enum Op {
    Join(Join),
    /// A negated atom; `Access::Scan` means "the relation is empty".
    Not {
        rel: RelId,
        access: Access,
    },
    Filter {
        cmp: CmpOp,
        ty: Type,
        lhs: Expr,
        rhs: Expr,
    },
    Assign {
        var: u32,
        expr: Expr,
    },
}

/// A compiled rule.
#[derive(Clone, Debug)]
pub struct RulePlan {
    pub ops: Vec<Op>,
    pub head_rel: RelId,
    pub head: Vec<Expr>,
    /// Size of the slot array (at least one slot per variable the rule mentions).
    pub slots: usize,
    /// The program's symbol table (shared), which string functors read and intern into.
    pub symbols: SymbolTable,
}

impl RulePlan {
    /// The `(relation, index)` pairs the rule reads.
    pub fn indexes(&self) -> impl Iterator<Item = (RelId, usize)> + '_ {
        self.ops.iter().filter_map(|op| match op {
            Op::Join(Join {
                rel,
                access: Access::Index { index, .. },
                ..
            })
            | Op::Not {
                rel,
                access: Access::Index { index, .. },
            } => Some((*rel, *index)),
            _ => None,
        })
    }
}

/// The column sets of the indexes needed, per relation; shared by all rules.
#[derive(Clone, Debug, Default)]
pub struct IndexSpecs {
    pub per_relation: Vec<Vec<Box<[usize]>>>,
}

impl IndexSpecs {
    pub fn new(relations: usize) -> IndexSpecs {
        IndexSpecs {
            per_relation: vec![Vec::new(); relations],
        }
    }

    /// The number of the index of `rel` on `cols`, registering it if new.
    fn index_of(&mut self, rel: RelId, cols: &[usize]) -> usize {
        let list = &mut self.per_relation[rel as usize];
        match list.iter().position(|c| &**c == cols) {
            Some(i) => i,
            None => {
                list.push(cols.into());
                list.len() - 1
            }
        }
    }
}

/// Compile `rule`, registering the indexes it needs in `specs`.
pub fn compile_rule(program: &Program, rule: &Rule, specs: &mut IndexSpecs) -> RulePlan {
    let slots = slot_count(rule);
    let mut bound = vec![false; slots];
    let mut ops = Vec::with_capacity(rule.body.len());
    for lit in &rule.body {
        let op = match lit {
            Literal::Atom(atom) => {
                let (key_cols, key) = bound_key(&atom.args, &bound);
                let mut checks = Vec::new();
                let mut binds: Vec<(usize, u32)> = Vec::new();
                for (col, term) in atom.args.iter().enumerate() {
                    if let Term::Var(v) = *term
                        && !bound[v as usize]
                    {
                        if let Some(&(first, _)) = binds.iter().find(|b| b.1 == v) {
                            checks.push((col, first));
                        } else {
                            binds.push((col, v));
                        }
                    }
                }
                for &(_, v) in &binds {
                    bound[v as usize] = true;
                }
                let arity = program.relation(atom.relation).arity();
                Op::Join(Join {
                    rel: atom.relation,
                    access: access(specs, atom.relation, arity, key_cols, key),
                    checks: checks.into(),
                    binds: binds.into(),
                })
            }
            Literal::Not(atom) => {
                // All variables of a negation are bound in valid IR; an unbound one would
                // be treated like a wildcard.
                let (key_cols, key) = bound_key(&atom.args, &bound);
                let arity = program.relation(atom.relation).arity();
                Op::Not {
                    rel: atom.relation,
                    access: access(specs, atom.relation, arity, key_cols, key),
                }
            }
            Literal::Filter { op, ty, lhs, rhs } => Op::Filter {
                cmp: *op,
                ty: *ty,
                lhs: lhs.clone(),
                rhs: rhs.clone(),
            },
            Literal::Assign { var, expr } => {
                let expr = expr.clone();
                if bound[*var as usize] {
                    // Not produced by the analysis (the variable of an assignment is
                    // unbound); should it happen, the assignment is an equality test.
                    let ty = rule.var_types.get(*var as usize).copied();
                    Op::Filter {
                        cmp: CmpOp::Eq,
                        ty: ty.unwrap_or(Type::Unsigned),
                        lhs: Expr::Var(*var),
                        rhs: expr,
                    }
                } else {
                    bound[*var as usize] = true;
                    Op::Assign { var: *var, expr }
                }
            }
        };
        ops.push(op);
    }
    let head = rule.head.args.to_vec();
    RulePlan {
        ops,
        head_rel: rule.head.relation,
        head,
        slots,
        symbols: program.symbols.clone(),
    }
}

/// The bound columns of an atom (constants and variables bound before it) and where
/// each key value comes from.
fn bound_key(args: &[Term], bound: &[bool]) -> (Vec<usize>, Vec<KeySrc>) {
    let mut key_cols = Vec::new();
    let mut key = Vec::new();
    for (col, term) in args.iter().enumerate() {
        match *term {
            Term::Const(c) => {
                key_cols.push(col);
                key.push(KeySrc::Const(c));
            }
            Term::Var(v) if bound[v as usize] => {
                key_cols.push(col);
                key.push(KeySrc::Var(v));
            }
            Term::Var(_) | Term::Wildcard => {}
        }
    }
    (key_cols, key)
}

fn access(
    specs: &mut IndexSpecs,
    rel: RelId,
    arity: usize,
    key_cols: Vec<usize>,
    key: Vec<KeySrc>,
) -> Access {
    if key_cols.is_empty() {
        Access::Scan
    } else if key_cols.len() == arity {
        // `key_cols` is ascending, so it is `0..arity`.
        Access::Member { key: key.into() }
    } else {
        Access::Index {
            index: specs.index_of(rel, &key_cols),
            cols: key_cols.into(),
            key: key.into(),
        }
    }
}

/// The number of slots a rule needs: one per variable name, and (defensively) enough
/// for every variable id the rule mentions.
pub(crate) fn slot_count(rule: &Rule) -> usize {
    use dynalog_analysis::Expr as E;
    fn expr_max(e: &E) -> usize {
        let mut max = 0;
        e.for_each_var(&mut |v| max = max.max(v as usize + 1));
        max
    }
    let term_max = |args: &[Term]| {
        args.iter()
            .map(|t| match t {
                Term::Var(v) => *v as usize + 1,
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    };
    let body = rule.body.iter().map(|lit| match lit {
        Literal::Atom(a) | Literal::Not(a) => term_max(&a.args),
        Literal::Filter { lhs, rhs, .. } => expr_max(lhs).max(expr_max(rhs)),
        Literal::Assign { var, expr } => (*var as usize + 1).max(expr_max(expr)),
    });
    let head = rule.head.args.iter().map(expr_max);
    body.chain(head).fold(rule.var_names.len(), usize::max)
}

/// A [`RulePlan`] with the names of its program, for printing (see
/// [`RulePlan::display`]).
pub struct PlanDisplay<'a> {
    plan: &'a RulePlan,
    names: Names<'a>,
}

impl RulePlan {
    /// The plan as text, one line per operation (compiled from `rule` of `program`):
    ///
    /// ```text
    ///   scan path(x, y)
    ///   lookup edge(y, z) in index 0 on (0) key (y)
    ///   insert path(x, z)
    /// ```
    ///
    /// `scan` reads every row of the relation (of the rows the evaluation allows: old,
    /// delta or all), `probe` asks the relation's hash set for one tuple (every column
    /// bound), `lookup` reads the rows with the key in the given index on the given
    /// columns; the other columns bind the variables printed there (`_`: a wildcard, a
    /// variable printed twice: the columns must be equal).
    pub fn display<'a>(&'a self, program: &'a Program, rule: &'a Rule) -> PlanDisplay<'a> {
        PlanDisplay {
            plan: self,
            names: Names { program, rule },
        }
    }
}

impl PlanDisplay<'_> {
    /// The atom of `rel` with its key, bound and checked columns named, and the key.
    fn atom(
        &self,
        rel: RelId,
        access: &Access,
        binds: &[(usize, u32)],
        checks: &[(usize, usize)],
    ) -> (String, String) {
        let n = &self.names;
        let arity = n
            .program
            .relations
            .get(rel as usize)
            .map_or(0, |r| r.arity());
        let mut args = vec!["_".to_string(); arity];
        let src = |c: usize, k: &KeySrc| match *k {
            KeySrc::Const(v) => n.constant(v, n.col_type(rel, c)),
            KeySrc::Var(s) => n.var(s),
        };
        let mut key = Vec::new();
        match access {
            Access::Scan => {}
            Access::Member { key: ks } => {
                for (c, k) in ks.iter().enumerate() {
                    args[c] = src(c, k);
                }
            }
            Access::Index { cols, key: ks, .. } => {
                for (&c, k) in cols.iter().zip(ks.iter()) {
                    args[c] = src(c, k);
                    key.push(args[c].clone());
                }
            }
        }
        for &(c, v) in binds {
            args[c] = n.var(v);
        }
        for &(c, earlier) in checks {
            args[c] = args[earlier].clone();
        }
        (n.atom(rel, &args), key.join(", "))
    }
}

impl fmt::Display for PlanDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.names;
        for op in &self.plan.ops {
            match op {
                Op::Join(join) => {
                    let (atom, key) = self.atom(join.rel, &join.access, &join.binds, &join.checks);
                    match &join.access {
                        Access::Scan => write!(f, "  scan {atom}")?,
                        Access::Member { .. } => write!(f, "  probe {atom}")?,
                        Access::Index { index, cols, .. } => write!(
                            f,
                            "  lookup {atom} in index {index} on ({}) key ({key})",
                            list(cols)
                        )?,
                    }
                    for (c, earlier) in join.checks.iter() {
                        write!(f, " where column {c} = column {earlier}")?;
                    }
                    writeln!(f)?;
                }
                Op::Not { rel, access } => {
                    let (atom, key) = self.atom(*rel, access, &[], &[]);
                    match access {
                        Access::Scan => writeln!(f, "  not any {}", n.rel(*rel))?,
                        Access::Member { .. } => writeln!(f, "  not probe {atom}")?,
                        Access::Index { index, cols, .. } => writeln!(
                            f,
                            "  not lookup {atom} in index {index} on ({}) key ({key})",
                            list(cols)
                        )?,
                    }
                }
                Op::Filter { cmp, ty, lhs, rhs } => {
                    let lit = Literal::Filter {
                        op: *cmp,
                        ty: *ty,
                        lhs: lhs.clone(),
                        rhs: rhs.clone(),
                    };
                    writeln!(f, "  {}", n.literal(&lit))?;
                }
                Op::Assign { var, expr } => {
                    let lit = Literal::Assign {
                        var: *var,
                        expr: expr.clone(),
                    };
                    writeln!(f, "  {}", n.literal(&lit))?;
                }
            }
        }
        n.head(f, self.plan.head_rel, &self.plan.head)
    }
}

/// `0, 2`: a list of columns.
fn list(cols: &[usize]) -> String {
    cols.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
