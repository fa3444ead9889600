//! `choice-domain`: a relation keeps one tuple per value of its domain.
//!
//! Soufflé keeps the first tuple it derives for each value of the domain, so which one
//! depends on its evaluation order. dynalog keeps, for each value of the domain, the
//! candidate whose other columns are smallest, column by column in declaration order
//! (numbers, unsigned and floats by value; symbols by their number in the table, that
//! is in the order they were first met, so the choice is deterministic for a given
//! input order). That choice does not depend on the order of evaluation, so every
//! engine makes the same one and maintains it under insertions and deletions: when the
//! chosen tuple goes, the next smallest takes its place.
//!
//! The rewrite, on the program's text: the rules and facts of `r` go to an internal
//! relation `@r_choice_in` (the candidates); the lines of `r`'s input files, and facts
//! typed for `r` in a session, are `r`'s own facts, without a choice (as Soufflé loads
//! input files); for the other columns `v1..vm`,
//! `@r_choice_1` keeps per domain value the smallest `v1`, `@r_choice_2` per domain value
//! and `v1` the smallest `v2`, ... (each a `min` aggregate, over `ord(v)` for a symbol),
//! and `r` copies the last. Several domains on one relation are refused (which tuples
//! survive them depends on the order), and so is a chosen column of a record type.
//!
//! A relation that depends on itself (a spanning tree) cannot take the smallest of all
//! its candidates: a node's smallest parent can close a cycle, and the aggregate would
//! be recursion through itself. It is chosen round by round instead, as Soufflé
//! chooses it: a domain value takes the smallest candidate of the first round that
//! has one, and keeps it ([`crate::ir::Chosen`] gives the rules and their meaning).
//! Soufflé takes the first candidate it derives in that round.

use super::Checker;
use super::aggregates::{atom, var};
use crate::value::Type;
use dynalog_syntax::ast::{self, AggFunc, Aggregate, Expr, Functor, Item, Literal};
use dynalog_syntax::{CmpOp, Diagnostic, Span};

/// Whether the rules of `program` derive `name` from `name` (through any relations,
/// aggregates' bodies included; subsumption rules derive nothing).
pub(super) fn depends_on_itself(program: &ast::Program, name: &str) -> bool {
    use std::collections::{HashMap, HashSet};
    let mut reads: HashMap<String, Vec<String>> = HashMap::new();
    for item in &program.items {
        if let Item::Rule(rule) = item
            && rule.style != ast::Style::Subsumption
        {
            let mut body = Vec::new();
            rule.for_each_atom(&mut |a| {
                if !std::ptr::eq(a, &rule.head) {
                    body.push(a.relation.name.clone());
                }
            });
            reads
                .entry(rule.head.relation.name.clone())
                .or_default()
                .extend(body);
        }
    }
    let mut seen: HashSet<&str> = HashSet::new();
    let mut todo: Vec<&str> = reads
        .get(name)
        .map(|v| v.iter().map(String::as_str).collect())
        .unwrap_or_default();
    while let Some(r) = todo.pop() {
        if r == name {
            return true;
        }
        if seen.insert(r) {
            todo.extend(reads.get(r).into_iter().flatten().map(String::as_str));
        }
    }
    false
}

/// The variable of column `i` in the rules the choice adds.
fn column(i: usize, span: Span) -> Expr {
    var(&format!("@c{i}"), span)
}

/// A rule the choice adds.
fn generated(head: ast::Atom, body: Vec<Literal>, span: Span) -> ast::Rule {
    ast::Rule {
        head,
        body,
        style: ast::Style::Souffle,
        span,
    }
}

impl Checker<'_> {
    /// `program` with its `choice-domain` relations rewritten (module docs), or `None`
    /// when it has none.
    pub(super) fn expand_choice(
        &mut self,
        program: &ast::Program,
    ) -> Result<Option<ast::Program>, Diagnostic> {
        let mut renamed: Vec<(String, String)> = Vec::new();
        // The recursive ones, with their domain's columns.
        let mut rounds: Vec<(String, Vec<usize>)> = Vec::new();
        let mut generated: Vec<ast::Rule> = Vec::new();
        for item in &program.items {
            let Item::Decl(d) = item else { continue };
            if d.choice.is_empty() {
                continue;
            }
            let span = d.choice_span.unwrap_or(d.span);
            if d.choice.len() > 1 {
                return Err(self.err(
                    span,
                    "several choice domains on one relation are not supported: which tuples \
                     they keep depends on the order the tuples are derived in",
                ));
            }
            let id = self.lookup(&d.name)?;
            let rel = self.relations[id as usize].clone();
            let mut key = Vec::new();
            for attr in &d.choice[0] {
                match rel.column_names.iter().position(|c| *c == attr.name) {
                    Some(i) if !key.contains(&i) => key.push(i),
                    Some(_) => {
                        return Err(self.err(
                            attr.span,
                            format!("`{}` is named twice in the choice domain", attr.name),
                        ));
                    }
                    None => {
                        return Err(self.err(
                            attr.span,
                            format!("`{}` is not an attribute of `{}`", attr.name, rel.name),
                        ));
                    }
                }
            }
            let values: Vec<usize> = (0..rel.arity()).filter(|i| !key.contains(i)).collect();
            if let Some(&i) = values
                .iter()
                .find(|&&i| matches!(rel.types[i], Type::Record(_)))
            {
                return Err(self.err(
                    span,
                    format!(
                        "the choice keeps the smallest `{}`, and records have no order",
                        rel.column_names[i]
                    ),
                ));
            }
            let name = rel.name.clone();
            let recursive = depends_on_itself(program, &name);
            let input = crate::ir::choice_candidates(&name);
            let in_id = self.internal_relation(&input, rel.arity(), span);
            {
                // (Its input files stay `r`'s: Soufflé loads them without a choice.)
                let r = &mut self.relations[in_id as usize];
                r.types = rel.types.clone();
                r.column_names = rel.column_names.clone();
            }
            renamed.push((name.clone(), input.clone()));
            if recursive {
                generated.extend(self.recursive_choice_rules(&rel, &input, &key, &values, span));
                rounds.push((name.clone(), key.clone()));
            } else {
                generated.extend(self.choice_rules(&name, &input, &rel.types, &key, &values, span));
            }
        }
        if renamed.is_empty() {
            return Ok(None);
        }
        let mut out = program.clone();
        for item in &mut out.items {
            if let Item::Rule(rule) = item
                && let Some((_, to)) = renamed.iter().find(|(r, _)| *r == rule.head.relation.name)
            {
                if let Some((_, key)) = rounds.iter().find(|(r, _)| *r == rule.head.relation.name)
                    && !rule.body.is_empty()
                {
                    // A negation of a recursive choice in its own rules is a negation
                    // through recursion (the negations added here are the rewrite's).
                    let name = &rule.head.relation.name;
                    if let Some(at) = rule.body.iter().find_map(|l| match l {
                        Literal::Negative(a, at) if a.relation.name == *name => Some(*at),
                        _ => None,
                    }) {
                        return Err(self.err(
                            at,
                            format!(
                                "negation through recursion: `{name}` depends negatively on \
                                 `{name}`, which depends on it again (cycle: {name} -> {name})"
                            ),
                        ));
                    }
                    // A candidate of a domain value already chosen would never be
                    // chosen: it is not derived (`crate::ir::Chosen`).
                    let at = rule.head.span;
                    let domain = (rule.head.args.iter().enumerate())
                        .map(|(i, a)| {
                            if key.contains(&i) {
                                a.clone()
                            } else {
                                Expr::Wildcard(at)
                            }
                        })
                        .collect();
                    let chosen = atom(&rule.head.relation.name, domain, at);
                    rule.body.push(Literal::Negative(chosen, at));
                }
                rule.head.relation.name = to.clone();
            }
        }
        out.items.extend(generated.into_iter().map(Item::Rule));
        Ok(Some(out))
    }

    /// The rules that choose the tuples of `rel`, a relation that depends on itself,
    /// among `input`'s, round by round (module docs): `@r_choice_at`, the candidates one
    /// round late; `@r_choice_dom`, the candidates of a domain value `r` has no tuple
    /// for that a smaller one of the same domain value dominates (one rule per value
    /// column, as the choice compares them column by column); `r` holds what it chose,
    /// and takes a candidate of `@r_choice_at` that nothing dominates when `r` has no
    /// tuple for its domain value yet.
    fn recursive_choice_rules(
        &mut self,
        rel: &crate::ir::Relation,
        input: &str,
        key: &[usize],
        values: &[usize],
        span: Span,
    ) -> Vec<ast::Rule> {
        let name = rel.name.as_str();
        let col = |i: usize| column(i, span);
        let rule = |head: ast::Atom, body: Vec<Literal>| generated(head, body, span);
        let late = crate::ir::choice_late(name);
        let dominated = crate::ir::choice_dominated(name);
        for internal in [&late, &dominated] {
            let id = self.internal_relation(internal, rel.arity(), span);
            self.relations[id as usize].types = rel.types.clone();
            self.relations[id as usize].column_names = rel.column_names.clone();
        }
        let all: Vec<Expr> = (0..rel.arity()).map(col).collect();
        let order = |i: usize, e: Expr| match rel.types[i] {
            Type::Symbol => Expr::Call(Functor::Ord, vec![e], span),
            _ => e,
        };
        let mut rules = vec![rule(
            atom(&late, all.clone(), span),
            vec![Literal::Positive(atom(input, all.clone(), span))],
        )];
        let domain: Vec<Expr> = (0..rel.arity())
            .map(|i| {
                if key.contains(&i) {
                    col(i)
                } else {
                    Expr::Wildcard(span)
                }
            })
            .collect();
        for (k, &v) in values.iter().enumerate() {
            // Another candidate: the same domain value and first `k` values, a smaller
            // value in column `v`. Only for a domain value not chosen yet: the later
            // candidates of one chosen are never compared (a node with many parents
            // compares those of its first round only).
            let args = (0..rel.arity())
                .map(|i| {
                    if i == v {
                        var("@w", span)
                    } else if key.contains(&i) || values[..k].contains(&i) {
                        col(i)
                    } else {
                        Expr::Wildcard(span)
                    }
                })
                .collect();
            rules.push(rule(
                atom(&dominated, all.clone(), span),
                vec![
                    Literal::Positive(atom(input, all.clone(), span)),
                    Literal::Negative(atom(name, domain.clone(), span), span),
                    Literal::Positive(atom(input, args, span)),
                    Literal::Compare {
                        op: CmpOp::Lt,
                        lhs: order(v, var("@w", span)),
                        rhs: order(v, col(v)),
                        span,
                    },
                ],
            ));
        }
        rules.push(rule(
            atom(name, all.clone(), span),
            vec![Literal::Positive(atom(name, all.clone(), span))],
        ));
        rules.push(rule(
            atom(name, all.clone(), span),
            vec![
                Literal::Positive(atom(&late, all.clone(), span)),
                Literal::Negative(atom(&dominated, all, span), span),
                Literal::Negative(atom(name, domain, span), span),
            ],
        ));
        rules
    }

    /// The rules that choose `name`'s tuples among `input`'s (module docs).
    fn choice_rules(
        &mut self,
        name: &str,
        input: &str,
        types: &[Type],
        key: &[usize],
        values: &[usize],
        span: Span,
    ) -> Vec<ast::Rule> {
        let col = |i: usize| column(i, span);
        let rule = |head: ast::Atom, body: Vec<Literal>| generated(head, body, span);
        // The columns of step `k`: the key and the first `k` values, in column order.
        let step_cols = |k: usize| -> Vec<usize> {
            (0..types.len())
                .filter(|i| key.contains(i) || values[..k].contains(i))
                .collect()
        };
        let step_name = |k: usize| format!("@{name}_choice_{k}");
        let mut rules = Vec::new();
        for (k, &v) in values.iter().enumerate() {
            let cols = step_cols(k + 1);
            let head_id = self.internal_relation(&step_name(k + 1), cols.len(), span);
            self.relations[head_id as usize].types = cols.iter().map(|&i| types[i]).collect();
            // The candidate: known columns bound, this one `@c{v}`, later ones `_`.
            let candidate = |this: Expr| {
                let args = (0..types.len())
                    .map(|i| {
                        if i == v {
                            this.clone()
                        } else if key.contains(&i) || values[..k].contains(&i) {
                            col(i)
                        } else {
                            Expr::Wildcard(span)
                        }
                    })
                    .collect();
                atom(input, args, span)
            };
            let order = |e: Expr| match types[v] {
                Type::Symbol => Expr::Call(Functor::Ord, vec![e], span),
                _ => e,
            };
            let mut body = Vec::new();
            if k > 0 {
                let prev = step_cols(k).into_iter().map(col).collect();
                body.push(Literal::Positive(atom(&step_name(k), prev, span)));
            }
            body.push(Literal::Positive(candidate(col(v))));
            body.push(Literal::Compare {
                op: CmpOp::Eq,
                lhs: order(col(v)),
                rhs: Expr::Aggregate(Box::new(Aggregate {
                    func: AggFunc::Min,
                    target: Some(var("@o", span)),
                    body: vec![
                        Literal::Positive(candidate(var("@w", span))),
                        Literal::Compare {
                            op: CmpOp::Eq,
                            lhs: var("@o", span),
                            rhs: order(var("@w", span)),
                            span,
                        },
                    ],
                    span,
                })),
                span,
            });
            rules.push(rule(
                atom(&step_name(k + 1), cols.into_iter().map(col).collect(), span),
                body,
            ));
        }
        // The relation itself: the last step, or the candidates when the domain is every
        // column.
        let all: Vec<Expr> = (0..types.len()).map(col).collect();
        let last = if values.is_empty() {
            atom(input, all.clone(), span)
        } else {
            atom(&step_name(values.len()), all.clone(), span)
        };
        rules.push(rule(atom(name, all, span), vec![Literal::Positive(last)]));
        rules
    }
}
