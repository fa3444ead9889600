//! Stratification: strongly connected components of the relation dependency graph, in
//! evaluation order, and the check that no negation is part of a cycle ([`stratify`]:
//! the strata of a checked program, each rule's stratum, or the error at a negated atom
//! on a cycle).

use crate::ir::{Aggregate, Chosen, Literal, RelId, Relation, Rule, Stratum, Subsumed};
use dynalog_syntax::ast;
use dynalog_syntax::{Diagnostic, SourceFile, Span};

/// A dependency `head <- body` (the head relation reads the body relation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dependency {
    pub head: usize,
    pub body: usize,
    pub negated: bool,
    /// Index of the rule that causes it (for error messages).
    pub rule: usize,
    /// Index of the body literal in that rule (for error messages).
    pub literal: usize,
    /// Whether an aggregate causes it (then `rule` is the aggregate's index).
    pub aggregate: bool,
}

/// Strongly connected components of the graph over `n` nodes, in dependency order: a
/// component comes after every component it depends on. Tarjan's algorithm, iterative.
pub fn components(n: usize, deps: &[Dependency]) -> Vec<Vec<usize>> {
    // adjacency: head -> bodies (head depends on body)
    let mut adj = vec![Vec::new(); n];
    for d in deps {
        adj[d.head].push(d.body);
    }
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0usize;
    let mut out = Vec::new();
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, next child position)
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut pos)) = call.last_mut() {
            if *pos < adj[v].len() {
                let w = adj[v][*pos];
                *pos += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    comp.sort_unstable();
                    out.push(comp);
                }
            }
        }
    }
    // Tarjan emits a component only after all components reachable from it, i.e. after
    // everything it depends on: already dependency order.
    out
}

/// A path of relations `from -> ... -> to` following dependencies inside one component
/// (breadth-first, so the shortest), used to name a cycle through negation.
pub fn path_within(from: usize, to: usize, comp: &[usize], deps: &[Dependency]) -> Vec<usize> {
    use std::collections::VecDeque;
    let inside = |x: usize| comp.contains(&x);
    let mut prev: std::collections::HashMap<usize, usize> = Default::default();
    let mut queue = VecDeque::from([from]);
    let mut seen = std::collections::HashSet::from([from]);
    while let Some(v) = queue.pop_front() {
        if v == to {
            break;
        }
        for d in deps.iter().filter(|d| d.head == v && inside(d.body)) {
            if seen.insert(d.body) {
                prev.insert(d.body, v);
                queue.push_back(d.body);
            }
        }
    }
    let mut path = vec![to];
    let mut cur = to;
    while cur != from {
        match prev.get(&cur) {
            Some(&p) => {
                path.push(p);
                cur = p;
            }
            None => break,
        }
    }
    path.reverse();
    path
}

pub(super) fn stratify(
    file: &SourceFile,
    relations: &[Relation],
    rules: &mut [Rule],
    aggregates: &mut [Aggregate],
    ast: &ast::Program,
) -> Result<Vec<Stratum>, Diagnostic> {
    let mut deps = Vec::new();
    // An aggregate reads its input complete, like a negation (first, so that a cycle
    // through one is reported as such).
    for (ai, agg) in aggregates.iter().enumerate() {
        deps.push(Dependency {
            head: agg.head as usize,
            body: agg.source as usize,
            negated: true,
            rule: ai,
            literal: 0,
            aggregate: true,
        });
    }
    for (ri, rule) in rules.iter().enumerate() {
        for (li, lit) in rule.body.iter().enumerate() {
            let (atom, negated) = match lit {
                Literal::Atom(a) => (a, false),
                Literal::Not(a) => (a, true),
                _ => continue,
            };
            deps.push(Dependency {
                head: rule.head.relation as usize,
                body: atom.relation as usize,
                negated,
                rule: ri,
                literal: li,
                aggregate: false,
            });
        }
    }
    let comps = components(relations.len(), &deps);
    let mut comp_of = vec![0usize; relations.len()];
    for (ci, comp) in comps.iter().enumerate() {
        for &r in comp {
            comp_of[r] = ci;
        }
    }
    for d in &deps {
        if d.aggregate && comp_of[d.head] == comp_of[d.body] {
            // The cycle as the user wrote it: the relations outside the aggregate's own.
            let cycle = path_within(d.body, d.head, &comps[comp_of[d.head]], &deps);
            let mut names: Vec<&str> = cycle
                .iter()
                .map(|&r| relations[r].name.as_str())
                .filter(|n| !n.starts_with('@'))
                .collect();
            names.dedup();
            if let Some(&first) = names.first() {
                names.push(first);
            }
            let agg = &aggregates[d.rule];
            return Err(Diagnostic::at(
                file,
                agg.span,
                format!(
                    "recursion through an aggregate: this `{}` reads a relation that depends \
                     on its own result (cycle: {}); Soufflé refuses it too",
                    agg.func.as_str(),
                    names.join(" -> ")
                ),
            ));
        }
        if d.negated && comp_of[d.head] == comp_of[d.body] {
            let comp = &comps[comp_of[d.head]];
            // A recursive relation with subsumption or a choice: the relation and the
            // analysis' relations for it, and nothing else, are evaluated together.
            let own = subsumed_by(relations, d)
                .map(|s| {
                    let why = " (which tuples of those survive would depend on the order \
                               of evaluation)";
                    (
                        s.relation,
                        "has subsumption",
                        "a relation with subsumption",
                        why,
                    )
                })
                .or_else(|| {
                    chosen_by(relations, d).map(|c| {
                        let kind = "a choice-domain relation";
                        (c.relation, "has a choice domain", kind, "")
                    })
                });
            if let Some((relation, has, kind, why)) = own {
                let name = &relations[relation as usize].name;
                let others: Vec<&str> = comp
                    .iter()
                    .map(|&r| relations[r].name.as_str())
                    .filter(|n| !n.starts_with('@') && n != name)
                    .collect();
                if others.is_empty() {
                    continue;
                }
                return Err(Diagnostic::at(
                    file,
                    rules[d.rule].span,
                    format!(
                        "`{name}` {has} and depends on itself through `{}`: {kind} may be \
                         recursive on its own, not together with other relations{why}",
                        others.join("`, `")
                    ),
                ));
            }
            let cycle = path_within(d.body, d.head, &comps[comp_of[d.head]], &deps);
            // As the user wrote it: a relation's candidates are that relation, the
            // choice's and subsumption's other relations are not shown.
            let (head, body) = (
                written_name(&relations[d.head].name).unwrap_or(&relations[d.head].name),
                written_name(&relations[d.body].name).unwrap_or(&relations[d.body].name),
            );
            let mut names: Vec<&str> = cycle
                .iter()
                .filter_map(|&r| written_name(&relations[r].name))
                .collect();
            names.dedup();
            names.insert(0, head);
            let rule = &rules[d.rule];
            // Point at the negated atom in the source.
            let span = negated_span(ast, rule.span, &relations[d.body].name).unwrap_or(rule.span);
            return Err(Diagnostic::at(
                file,
                span,
                format!(
                    "negation through recursion: `{head}` depends negatively on `{body}`, which depends on it again (cycle: {})",
                    names.join(" -> ")
                ),
            ));
        }
    }
    // Rules and recursion by component, in one pass each (not one per component).
    let mut rules_of_comp: Vec<Vec<usize>> = vec![Vec::new(); comps.len()];
    for (i, r) in rules.iter().enumerate() {
        rules_of_comp[comp_of[r.head.relation as usize]].push(i);
    }
    let mut aggs_of_comp: Vec<Vec<usize>> = vec![Vec::new(); comps.len()];
    for (i, a) in aggregates.iter().enumerate() {
        aggs_of_comp[comp_of[a.head as usize]].push(i);
    }
    // Per component: whether it is recursive, and its subsumed or chosen relation.
    let mut recursive_comp = vec![false; comps.len()];
    let mut subsumption_of: Vec<Option<Subsumed>> = vec![None; comps.len()];
    let mut choice_of: Vec<Option<Chosen>> = vec![None; comps.len()];
    for d in &deps {
        let c = comp_of[d.head];
        if c == comp_of[d.body] {
            recursive_comp[c] = true;
            if d.negated {
                subsumption_of[c] = subsumption_of[c].or_else(|| subsumed_by(relations, d));
                choice_of[c] = choice_of[c].or_else(|| chosen_by(relations, d));
            }
        }
    }
    let mut strata = Vec::new();
    let mut stratum_of_comp = vec![usize::MAX; comps.len()];
    for (ci, comp) in comps.iter().enumerate() {
        let rule_ids = std::mem::take(&mut rules_of_comp[ci]);
        let agg_ids = std::mem::take(&mut aggs_of_comp[ci]);
        if rule_ids.is_empty() && agg_ids.is_empty() {
            continue;
        }
        let recursive = recursive_comp[ci];
        let (subsumption, choice) = (subsumption_of[ci], choice_of[ci]);
        stratum_of_comp[ci] = strata.len();
        strata.push(Stratum {
            relations: comp.iter().map(|&r| r as RelId).collect(),
            rules: rule_ids,
            aggregates: agg_ids,
            recursive,
            subsumption,
            choice,
        });
    }
    for rule in rules.iter_mut() {
        rule.stratum = stratum_of_comp[comp_of[rule.head.relation as usize]];
    }
    for agg in aggregates.iter_mut() {
        agg.stratum = stratum_of_comp[comp_of[agg.head as usize]];
    }
    Ok(strata)
}

/// The relation `r` and its dominated candidates when `d` is their negation in the rule
/// that makes `r` the candidates no other dominates (module `subsume`).
fn subsumed_by(relations: &[Relation], d: &Dependency) -> Option<Subsumed> {
    let name = &relations[d.head].name;
    (d.negated && !d.aggregate && relations[d.body].name == format!("@{name}_sub_dom")).then_some(
        Subsumed {
            relation: d.head as RelId,
            dominated: d.body as RelId,
        },
    )
}

/// The name of the relation `name` is as the user wrote it: itself, or for the
/// candidates of a choice or a subsumption (module `choice`, `subsume`) the relation
/// they are written for; `None` for another relation the analysis made.
fn written_name(name: &str) -> Option<&str> {
    if !name.starts_with('@') {
        return Some(name);
    }
    crate::ir::candidates_for(name)
}

/// The relation `r` and its dominated candidates when `d` is a negation in the rule
/// that chooses `r`'s tuples round by round (module `choice`): of the dominated
/// candidates in `r`'s rule, or of `r` itself in that rule or the dominated ones' (the
/// rules written for `r` all derive the candidates).
fn chosen_by(relations: &[Relation], d: &Dependency) -> Option<Chosen> {
    if !d.negated || d.aggregate {
        return None;
    }
    let (head, body) = (&relations[d.head].name, &relations[d.body].name);
    let dominated = crate::ir::choice_dominated(body);
    if d.body == d.head || *head == dominated || *head == crate::ir::choice_candidates(body) {
        // `r` negated in its own rule, the dominated candidates' or the candidates'.
        let dominated = relations.iter().position(|r| r.name == dominated)?;
        Some(Chosen {
            relation: d.body as RelId,
            dominated: dominated as RelId,
        })
    } else if crate::ir::choice_dominated(head) == *body {
        Some(Chosen {
            relation: d.head as RelId,
            dominated: d.body as RelId,
        })
    } else {
        None
    }
}

fn negated_span(ast: &ast::Program, rule_span: Span, relation: &str) -> Option<Span> {
    ast.items.iter().find_map(|item| match item {
        ast::Item::Rule(r) if r.span == rule_span => r.body.iter().find_map(|l| match l {
            ast::Literal::Negative(a, s) if a.relation.name == relation => Some(*s),
            _ => None,
        }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(head: usize, body: usize) -> Dependency {
        Dependency {
            head,
            body,
            negated: false,
            rule: 0,
            literal: 0,
            aggregate: false,
        }
    }

    #[test]
    fn sccs_in_dependency_order() {
        // 0 <- 1, 1 <- 2, 2 <- 1 (cycle 1,2), 3 <- 0
        let deps = [dep(0, 1), dep(1, 2), dep(2, 1), dep(3, 0)];
        let comps = components(4, &deps);
        assert_eq!(comps, vec![vec![1, 2], vec![0], vec![3]]);
        assert_eq!(path_within(1, 2, &[1, 2], &deps), vec![1, 2]);
    }
}
