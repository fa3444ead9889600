//! Reading the materialization: its rules, sizes, facts and patterns.

use super::Materialization;
use crate::error::LiveError;
use crate::pattern::Pattern;
use dynalog_analysis::{RelId, Value};

impl Materialization {
    /// The current rules, as written (not those the analysis adds to close an `eqrel`
    /// relation: they are not the program's to remove).
    pub fn rules(&self) -> Vec<String> {
        let p = self.program();
        let mut seen = std::collections::HashSet::new();
        // A rule with an aggregate is one written rule: its internal rules and its
        // variant for the empty group are not listed apart.
        p.rules
            .iter()
            .filter(|r| {
                let head = p.relation(r.head.relation);
                // A subsumption rule is the user's, though the analysis writes the
                // rules that apply it (module `check::subsume`).
                if r.generated {
                    return r.text.contains(" <= ");
                }
                // (A rule of a choice-domain relation, or of one with subsumption
                // rules, derives its candidates.)
                !head.is_internal() || dynalog_analysis::ir::is_candidates(&head.name)
            })
            .filter(|r| seen.insert((r.span, r.text.as_str())))
            .map(|r| r.text.clone())
            .collect()
    }

    /// Number of facts of a relation, `None` for an unknown relation.
    pub fn len(&self, relation: &str) -> Option<usize> {
        self.program()
            .relation_id(relation)
            .map(|r| self.engine.len(r))
    }

    /// Whether the materialization holds a fact written in Datalog.
    pub fn contains_fact(&mut self, text: &str) -> Result<bool, LiveError> {
        let before = self.symbols.mark();
        let (rel, tuple) = self.parse_fact(text)?;
        // A symbol met only here matches nothing; it need not be kept.
        self.symbols.rollback(before);
        Ok(self.engine.contains(rel, &tuple))
    }

    /// The facts of the current materialization that match a pattern such as
    /// `path(1, x)` or `edge(_, "a")` (a repeated variable asks for equal columns; see
    /// [`Pattern`]), sorted, with their relation.
    pub fn query(&mut self, pattern: &str) -> Result<Vec<(RelId, Vec<Value>)>, LiveError> {
        let before = self.symbols.mark();
        let lowered = Pattern::lower(pattern, self.engine.program(), &mut self.symbols);
        // A symbol met only in the pattern matches nothing; it need not be kept.
        self.symbols.rollback(before);
        let pattern = lowered?;
        let rel = pattern.relation();
        let mut rows = Vec::new();
        let mut bound = Vec::new();
        self.engine.for_each_fact(rel, &mut |t| {
            if pattern.matches(t, &mut bound) {
                rows.push((rel, t.to_vec()));
            }
        });
        self.sort_rows(&mut rows);
        Ok(rows)
    }

    /// Call `f` on every fact of relation `rel` (as of the last commit), in no
    /// particular order and without copying them: what a front end that keeps its own
    /// copy (a server's read view) builds it from. Nothing for an unknown relation.
    pub fn for_each_fact(&self, rel: RelId, f: &mut dyn FnMut(&[Value])) {
        if (rel as usize) < self.program().relations.len() {
            self.engine.for_each_fact(rel, f);
        }
    }

    /// Every fact of a relation, sorted.
    pub fn dump(&self, relation: &str) -> Result<Vec<(RelId, Vec<Value>)>, LiveError> {
        let rel = self.relation_id(relation)?;
        let mut rows = Vec::new();
        self.engine
            .for_each_fact(rel, &mut |t| rows.push((rel, t.to_vec())));
        self.sort_rows(&mut rows);
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::tc;

    #[test]
    fn queries_match_constants_repeated_variables_and_wildcards() {
        let mut m = tc("diff");
        assert_eq!(m.query("path(x, x)").expect("pattern").len(), 3);
        assert_eq!(m.query("path(1, _)").expect("pattern").len(), 3);
        assert_eq!(m.query("path(1, 9)").expect("pattern").len(), 0);
        let rows = m.query("path(2, y).").expect("pattern");
        let shown: Vec<String> = rows.iter().map(|(r, t)| m.render(*r, t)).collect();
        assert_eq!(shown, ["path(2, 1).", "path(2, 2).", "path(2, 3)."]);
        assert!(m.query("nosuch(x)").is_err());
        assert!(m.query("path(x, y) :- edge(x, y)").is_err());
    }
}
