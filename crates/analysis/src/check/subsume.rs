//! Subsumption: `r(x, d1) <= r(x, d2) :- d2 <= d1.` removes from `r` every tuple that
//! another tuple of `r` dominates, as Soufflé does (a tuple never removes itself; two
//! tuples that dominate each other both go, as in Soufflé).
//!
//! The rewrite, on the program's text: the rules and facts of `r` go to an internal
//! relation `@r_sub_in` (the candidates; so do the lines of its input files, as Soufflé
//! subsumes them too, but not facts typed for `r` in a session: they are `r`'s, and
//! stay when the subsumption rules are removed); each subsumption rule adds rules for `@r_sub_dom`,
//! the dominated candidates (one per column in which the two tuples may differ, so that
//! a tuple is never compared with itself), and `r` is the candidates that are not
//! dominated. Every engine maintains that incrementally, like any negation.
//!
//! A relation that depends on itself (shortest paths) is recursion through that
//! negation, evaluated as one stratum ([`crate::ir::Subsumed`]): the candidates also
//! derive themselves (`@r_sub_in(..) :- @r_sub_in(..)`), so they only accumulate, and
//! `r` reads them through `@r_sub_at`, a copy one round late, so that a candidate is
//! compared with the dominated ones of the same round (read directly, a candidate
//! would reach `r` in the round its dominated fact is derived, and a self-loop of
//! weight 1 would derive ever longer distances). The check that no other relation of
//! the user's is in that recursion is the stratification's.

use super::Checker;
use super::aggregates::{atom, var};
use super::choice::depends_on_itself;
use crate::ir::subsumption_candidates;
use dynalog_syntax::ast::{self, Expr, Item, Literal, Style};
use dynalog_syntax::{CmpOp, Diagnostic, Span};

impl Checker<'_> {
    /// `program` with its subsumption rules rewritten (module docs), or `None` when it
    /// has none. The spans of the rules it adds are pushed to `generated`.
    pub(super) fn expand_subsumption(
        &mut self,
        program: &ast::Program,
        generated: &mut Vec<Span>,
    ) -> Result<Option<ast::Program>, Diagnostic> {
        let subsumptions: Vec<&ast::Rule> = program
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Rule(r) if r.style == Style::Subsumption => Some(r),
                _ => None,
            })
            .collect();
        if subsumptions.is_empty() {
            return Ok(None);
        }
        let mut relations: Vec<String> = Vec::new();
        let mut added: Vec<ast::Rule> = Vec::new();
        let mut fresh = 0usize;
        for s in &subsumptions {
            let Some((Literal::Positive(dominating), condition)) = s.body.split_first() else {
                continue;
            };
            let name = s.head.relation.name.clone();
            if dominating.relation.name != name {
                return Err(self.err(
                    dominating.relation.span,
                    format!(
                        "a subsumption rule compares two tuples of one relation: `{}` is not `{name}`",
                        dominating.relation.name
                    ),
                ));
            }
            let id = self.lookup(&s.head.relation)?;
            self.check_arity(&s.head, id)?;
            self.check_arity(dominating, id)?;
            if !relations.contains(&name) {
                let recursive = depends_on_itself(program, &name);
                relations.push(name.clone());
                let arity = self.relations[id as usize].arity();
                let types = self.relations[id as usize].types.clone();
                let names = self.relations[id as usize].column_names.clone();
                for internal in [subsumption_candidates(&name), format!("@{name}_sub_dom")] {
                    let r = self.internal_relation(&internal, arity, s.span);
                    self.relations[r as usize].types = types.clone();
                    self.relations[r as usize].column_names = names.clone();
                }
                // Input files are candidates too, as in Soufflé (still `r`'s files).
                let inputs = std::mem::take(&mut self.relations[id as usize].inputs);
                let in_id = self.relations.len() - 2;
                self.relations[in_id].inputs = inputs
                    .into_iter()
                    .map(|mut spec| {
                        spec.params
                            .entry("filename".to_string())
                            .or_insert_with(|| format!("{name}.facts"));
                        spec
                    })
                    .collect();
                // The relation: the candidates no other candidate dominates.
                let cols: Vec<Expr> = (0..arity).map(|i| var(&format!("@c{i}"), s.span)).collect();
                let candidates = atom(&subsumption_candidates(&name), cols.clone(), s.span);
                let mut kept = candidates.clone();
                if recursive {
                    // The candidates accumulate: a candidate stays one when the tuple it
                    // was derived from is dominated later. And the relation reads them
                    // one round late, when their dominated ones are known (module docs).
                    let late = format!("@{name}_sub_at");
                    let r = self.internal_relation(&late, arity, s.span);
                    self.relations[r as usize].types = types.clone();
                    self.relations[r as usize].column_names = names.clone();
                    kept = atom(&late, cols.clone(), s.span);
                    for (head, body) in [(&candidates, &candidates), (&kept, &candidates)] {
                        added.push(ast::Rule {
                            head: head.clone(),
                            body: vec![Literal::Positive(body.clone())],
                            style: Style::Souffle,
                            span: s.span,
                        });
                    }
                }
                added.push(ast::Rule {
                    head: atom(&name, cols.clone(), s.span),
                    body: vec![
                        Literal::Positive(kept),
                        Literal::Negative(atom(&format!("@{name}_sub_dom"), cols, s.span), s.span),
                    ],
                    style: Style::Souffle,
                    span: s.span,
                });
            }
            // `_` in either atom: a fresh variable (the dominated one is the head).
            let mut name_wildcards = |args: &[Expr]| -> Vec<Expr> {
                args.iter()
                    .map(|a| match a {
                        Expr::Wildcard(sp) => {
                            fresh += 1;
                            var(&format!("@s{fresh}"), *sp)
                        }
                        e => e.clone(),
                    })
                    .collect()
            };
            let lower = name_wildcards(&s.head.args);
            let upper = name_wildcards(&dominating.args);
            let in_name = subsumption_candidates(&name);
            for (l, u) in lower.iter().zip(&upper) {
                if let (Expr::Var(a), Expr::Var(b)) = (l, u)
                    && a.name == b.name
                {
                    continue;
                }
                let mut body = vec![
                    Literal::Positive(atom(&in_name, lower.clone(), s.head.span)),
                    Literal::Positive(atom(&in_name, upper.clone(), dominating.span)),
                ];
                body.extend(condition.iter().cloned());
                let at = l.span().to(u.span());
                body.push(Literal::Compare {
                    op: CmpOp::Ne,
                    lhs: l.clone(),
                    rhs: u.clone(),
                    span: at,
                });
                added.push(ast::Rule {
                    head: atom(&format!("@{name}_sub_dom"), lower.clone(), s.head.span),
                    body,
                    style: Style::Souffle,
                    span: s.span,
                });
            }
            generated.push(s.span);
        }
        let mut out = program.clone();
        out.items
            .retain(|i| !matches!(i, Item::Rule(r) if r.style == Style::Subsumption));
        for item in &mut out.items {
            if let Item::Rule(rule) = item
                && relations.contains(&rule.head.relation.name)
            {
                rule.head.relation.name = subsumption_candidates(&rule.head.relation.name);
            }
        }
        out.items.extend(added.into_iter().map(Item::Rule));
        Ok(Some(out))
    }
}
