//! The chibi engine: substitution-based evaluation, maintained by delete-rederive
//! (`--engine chibi`).
//!
//! **Deliberately unoptimised.** It reproduces the second delete-rederive reasoner of
//! the study's comparison, which evaluates rules the textbook way: a *substitution* is
//! a slot array (one optional value per variable); a rule body is evaluated literal by
//! literal over the list of substitutions so far, starting from the empty one. For a
//! positive atom, each substitution is *applied* to the atom and the result is
//! *unified* with **every** fact of the relation (no index, on purpose), each success
//! *extending* the substitution; a negation keeps the substitutions for which no fact
//! unifies (again by scanning); filters and assignments are evaluated on each
//! substitution. Every intermediate list of substitutions is materialized. Use
//! `relational` for the same algorithm with indexes, and `diff` or `seminaive` for
//! speed.
//!
//! Incremental maintenance is the same delete-rederive path as `relational` (module
//! [`crate::dred`]): the variant of a rule that reads a delta unifies its first atom
//! with the delta's facts only. A rule change rematerializes everything.

use crate::dred::{Dred, Evaluator, Output, Store, View};
use crate::rules::plan::slot_count;
use dynalog_analysis::ir::eval_cmp;
use dynalog_analysis::{Atom, CmpOp, Literal, Program, Rule, SymbolTable, Term, Value};

/// The chibi engine. See the module documentation.
pub type Chibi = Dred<ChibiEval>;

/// The rule variants as written: `rules[rule][variant]`, with their slot counts.
pub struct ChibiEval {
    rules: Vec<Vec<(Rule, usize)>>,
    /// The program's symbol table, for the string functors.
    symbols: SymbolTable,
}

/// One optional value per variable.
type Substitution = Vec<Option<Value>>;

impl Evaluator for ChibiEval {
    const NAME: &'static str = "chibi";

    fn compile(program: &Program, variants: &[Vec<Rule>]) -> (Self, Vec<Vec<Box<[usize]>>>) {
        let rules = variants
            .iter()
            .map(|vs| vs.iter().map(|r| (r.clone(), slot_count(r))).collect())
            .collect();
        // No indexes.
        let symbols = program.symbols.clone();
        (ChibiEval { rules, symbols }, Vec::new())
    }

    fn run(
        &self,
        rule: usize,
        variant: usize,
        view: &View<'_>,
        delta: Option<&Store>,
        // Deliberately unoptimised: every derivation is enumerated.
        _witness: bool,
        out: &mut Output<'_>,
    ) {
        let Some((rule, slots)) = self.rules.get(rule).and_then(|v| v.get(variant)) else {
            return;
        };
        let symbols = &self.symbols;
        let mut subs: Vec<Substitution> = vec![vec![None; *slots]];
        for (i, lit) in rule.body.iter().enumerate() {
            if subs.is_empty() || out.stopped() {
                return;
            }
            subs = match lit {
                Literal::Atom(atom) => {
                    let rel = atom.relation as usize;
                    let mut sources: Vec<&Store> = Vec::new();
                    match delta {
                        Some(d) if i == 0 => sources.push(d),
                        _ => {
                            sources.extend(view.stores.get(rel));
                            if let Some((minus, _)) = view.old {
                                sources.extend(minus.get(rel));
                            }
                        }
                    }
                    let mut next = Vec::new();
                    for s in &subs {
                        let pattern = apply(s, atom);
                        for fact in sources.iter().flat_map(|st| st.iter()) {
                            out.tick();
                            if let Some(extended) = unify(s, atom, &pattern, fact) {
                                next.push(extended);
                            }
                        }
                        if out.stopped() {
                            return;
                        }
                    }
                    next
                }
                Literal::Not(atom) => {
                    let rel = atom.relation as usize;
                    subs.into_iter()
                        .filter(|s| {
                            let pattern = apply(s, atom);
                            !view.stores.get(rel).is_some_and(|st| {
                                st.iter().any(|fact| {
                                    unify(s, atom, &pattern, fact).is_some()
                                        && !view.hidden(rel, fact)
                                })
                            })
                        })
                        .collect()
                }
                Literal::Filter { op, ty, lhs, rhs } => subs
                    .into_iter()
                    .filter(|s| {
                        let values = values(s);
                        matches!(
                            (lhs.eval(&values, symbols), rhs.eval(&values, symbols)),
                            (Some(a), Some(b)) if eval_cmp(*op, *ty, a, b)
                        )
                    })
                    .collect(),
                Literal::Assign { var, expr } => {
                    let v = *var as usize;
                    let ty = rule.var_types.get(v).copied();
                    subs.into_iter()
                        .filter_map(|mut s| {
                            let value = expr.eval(&values(&s), symbols)?;
                            match s.get(v).copied().flatten() {
                                // Bound by an atom moved before it: an equality test.
                                Some(old) => ty
                                    .is_none_or(|ty| eval_cmp(CmpOp::Eq, ty, old, value))
                                    .then_some(s),
                                None => {
                                    *s.get_mut(v)? = Some(value);
                                    Some(s)
                                }
                            }
                        })
                        .collect()
                }
            };
        }
        let mut tuple = Vec::with_capacity(rule.head.args.len());
        'subs: for s in &subs {
            if out.stopped() {
                return;
            }
            tuple.clear();
            let values = values(s);
            for e in &rule.head.args {
                match e.eval(&values, symbols) {
                    Some(v) => tuple.push(v),
                    None => continue 'subs,
                }
            }
            out.push(&tuple);
        }
    }
}

/// The values of a substitution (unbound variables read as 0; the IR only evaluates
/// expressions over bound ones).
fn values(s: &Substitution) -> Vec<Value> {
    s.iter().map(|v| v.unwrap_or(0)).collect()
}

/// Apply a substitution to an atom: per argument, its value if it is a constant or a
/// bound variable.
fn apply(s: &Substitution, atom: &Atom) -> Vec<Option<Value>> {
    atom.args
        .iter()
        .map(|t| match *t {
            Term::Const(c) => Some(c),
            Term::Var(v) => s.get(v as usize).copied().flatten(),
            Term::Wildcard => None,
        })
        .collect()
}

/// Unify the applied atom `pattern` with `fact`: the substitution extended with the
/// atom's unbound variables, or `None` if they do not unify.
fn unify(
    s: &Substitution,
    atom: &Atom,
    pattern: &[Option<Value>],
    fact: &[Value],
) -> Option<Substitution> {
    if fact.len() != pattern.len() {
        return None;
    }
    let mut extended = s.clone();
    for ((term, want), &value) in atom.args.iter().zip(pattern).zip(fact) {
        match (want, term) {
            (Some(w), _) => {
                if *w != value {
                    return None;
                }
            }
            (None, Term::Var(v)) => {
                let slot = extended.get_mut(*v as usize)?;
                match slot {
                    Some(bound) if *bound != value => return None,
                    _ => *slot = Some(value),
                }
            }
            (None, _) => {}
        }
    }
    Some(extended)
}
