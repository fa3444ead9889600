//! Facts and changes as text (`path(1, "a").`, `+ fact.`), and the order users read
//! them in.

use super::Materialization;
use dynalog_analysis::{RelId, SymbolsRead, Type, Value};
use dynalog_engines::{Change, ChangeList};
use std::cmp::Ordering;
use std::fmt::Write as _;
use std::io::{self, Write};

impl Materialization {
    /// Render a fact as Datalog: `path(1, "a").` (symbols quoted, numbers bare).
    pub fn render(&self, relation: RelId, tuple: &[Value]) -> String {
        let mut out = String::new();
        self.render_into(&self.symbols.read(), &mut out, relation, tuple);
        out
    }

    /// Append a fact as [`Materialization::render`] writes it to `out`, with the
    /// symbols' read lock held by the caller (many facts at once, no string per value).
    fn render_into(
        &self,
        symbols: &SymbolsRead<'_>,
        out: &mut String,
        relation: RelId,
        tuple: &[Value],
    ) {
        let r = self.program().relation(relation);
        render_fact(out, &r.name, &r.types, tuple, symbols);
    }

    /// Whether the changes of `relation` are shown to users: those of the `.output`
    /// relations, or of every relation when the program declares no output (never the
    /// internal relations of aggregates).
    pub(super) fn shown_relations(&self) -> impl Fn(RelId) -> bool + '_ {
        let p = self.program();
        let any_output = p.relations.iter().any(|r| !r.outputs.is_empty());
        move |r: RelId| {
            p.relations
                .get(r as usize)
                .is_some_and(|rel| !rel.is_internal() && (!any_output || !rel.outputs.is_empty()))
        }
    }

    /// The changes users follow (see `shown_relations`) among a commit's `changes`,
    /// sorted as users read them: by relation name, then by values (numbers by value,
    /// symbols by their text), deletions before insertions of the same fact. Only
    /// these are copied and sorted, so a commit whose changes nobody reads (a load,
    /// `session --quiet`) costs neither.
    pub fn shown_changes(&self, changes: &ChangeList) -> Vec<Change> {
        self.shown_change_list(changes).to_vec()
    }

    /// [`Materialization::shown_changes`], packed (a server keeps them for its
    /// followers).
    pub fn shown_change_list(&self, changes: &ChangeList) -> ChangeList {
        self.shown_order(changes)
            .into_iter()
            .map(|i| changes.get(i))
            .collect()
    }

    /// Write the changes users follow among `changes`, in the order of
    /// [`Materialization::shown_changes`], as `+ fact.` / `- fact.` lines to `out`
    /// (what [`Materialization::render_changes`] gives, without a copy of the changes
    /// or a string per line).
    pub fn write_changes(&self, changes: &ChangeList, out: &mut dyn Write) -> io::Result<()> {
        let order = self.shown_order(changes);
        let symbols = self.symbols.read();
        let mut line = String::new();
        for i in order {
            let (r, t, d) = changes.get(i);
            line.clear();
            line.push_str(if d > 0 { "+ " } else { "- " });
            self.render_into(&symbols, &mut line, r, t);
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// The positions in `changes` of those users follow, in the order they read them
    /// (see [`Materialization::shown_changes`]).
    fn shown_order(&self, changes: &ChangeList) -> Vec<usize> {
        let shown = self.shown_relations();
        let mut order: Vec<usize> = (0..changes.len())
            .filter(|&i| shown(changes.get(i).0))
            .collect();
        let symbols = self.symbols.read();
        // (Changes that compare equal are the same line: their order does not show.)
        order.sort_unstable_by(|&i, &j| {
            let (a, b) = (changes.get(i), changes.get(j));
            self.compare_rows(&symbols, (a.0, a.1), (b.0, b.1))
                .then(a.2.cmp(&b.2))
        });
        order
    }

    /// The facts of the relations users follow as insertions, sorted as
    /// [`Materialization::shown_changes`] sorts (what a first commit into an empty
    /// engine shows), if their packed list takes at most `max_bytes`
    /// ([`ChangeList::packed_bytes`]); `None`, copying nothing, if it would take more.
    /// A server that did not keep its first commit's changes
    /// ([`Materialization::keep_first_changes`]) logs this in their place when it
    /// fits its log.
    pub fn shown_state(&self, max_bytes: usize) -> Option<ChangeList> {
        let shown = self.shown_relations();
        let program = self.program();
        let relations: Vec<RelId> = (0..program.relations.len() as RelId)
            .filter(|&r| shown(r))
            .collect();
        let (mut facts, mut values) = (0usize, 0usize);
        for &r in &relations {
            let n = self.engine.len(r);
            facts = facts.saturating_add(n);
            values = values.saturating_add(n.saturating_mul(program.relation(r).types.len()));
        }
        if ChangeList::packed_bytes(facts, values) > max_bytes {
            return None;
        }
        let mut all = ChangeList::new();
        for r in relations {
            self.engine.for_each_fact(r, &mut |t| all.push(r, t, 1));
        }
        Some(self.shown_change_list(&all))
    }

    /// The number of insertions and deletions among the changes users follow, without
    /// copying them.
    pub(super) fn shown_counts(&self, changes: &ChangeList) -> (usize, usize) {
        changes.counts(self.shown_relations())
    }

    /// Render changes as `+ fact.` / `- fact.` lines.
    pub fn render_changes(&self, changes: &[Change]) -> Vec<String> {
        let symbols = self.symbols.read();
        changes
            .iter()
            .map(|(r, t, d)| {
                let mut line = String::from(if *d > 0 { "+ " } else { "- " });
                self.render_into(&symbols, &mut line, *r, t);
                line
            })
            .collect()
    }

    fn compare_rows(
        &self,
        symbols: &SymbolsRead<'_>,
        (ra, a): (RelId, &[Value]),
        (rb, b): (RelId, &[Value]),
    ) -> Ordering {
        let p = self.program();
        let name = |r: RelId| p.relations.get(r as usize).map_or("", |x| x.name.as_str());
        name(ra).cmp(name(rb)).then_with(|| {
            let types = p
                .relations
                .get(ra as usize)
                .map(|x| &x.types[..])
                .unwrap_or(&[]);
            for ((x, y), t) in a.iter().zip(b).zip(types) {
                let o = t.compare(*x, *y, symbols);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        })
    }

    pub(super) fn sort_rows(&self, rows: &mut [(RelId, Vec<Value>)]) {
        let symbols = self.symbols.read();
        rows.sort_by(|a, b| self.compare_rows(&symbols, (a.0, &a.1), (b.0, &b.1)));
    }
}

/// Append the fact `name(tuple)` of a relation of `types` to `out` as Datalog:
/// `path(1, "a").`, symbols quoted (also inside records, so that the fact reads back as
/// written), numbers bare. What [`Materialization::render`] gives, for a front end that
/// holds the relation's declaration and the symbols but not the materialization.
pub fn render_fact(
    out: &mut String,
    name: &str,
    types: &[Type],
    tuple: &[Value],
    symbols: &SymbolsRead<'_>,
) {
    out.push_str(name);
    out.push('(');
    for (i, (&v, &t)) in tuple.iter().zip(types).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // (Writing into a `String` cannot fail.)
        let _ = match t {
            Type::Symbol => {
                quote_into(out, symbols.resolve(v));
                Ok(())
            }
            Type::Number => write!(out, "{}", v as i32),
            Type::Unsigned => write!(out, "{v}"),
            Type::Record(_) => out.write_str(&t.render_quoted(v, symbols)),
            Type::Float => out.write_str(&t.render_read(v, symbols)),
        };
    }
    out.push_str(").");
}

/// A symbol as a Datalog string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(&mut out, s);
    out
}

/// Append [`quote`]`(s)` to `out`.
fn quote_into(out: &mut String, s: &str) {
    out.push('"');
    // Most symbols need no escape: copied whole.
    if !s
        .bytes()
        .any(|b| matches!(b, b'"' | b'\\' | b'\n' | b'\t' | b'\r'))
    {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_quoted_when_rendered() {
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(quote("a\tb\nc\rd"), "\"a\\tb\\nc\\rd\"");
        assert_eq!(quote("plain é"), "\"plain é\"");
        assert_eq!(quote(""), "\"\"");
    }

    #[test]
    fn written_changes_are_the_rendered_lines_in_the_order_users_read() {
        let text = ".type P = [a: symbol, b: number]\n\
                    .decl e(s: symbol, n: number, u: unsigned, f: float, p: P)\n\
                    .decl q(s: symbol)\n.output e\nq(s) :- e(s, _, _, _, _).\n";
        let mut m = Materialization::new("t.dl", text, "seminaive", 1).expect("checks");
        for f in [
            r#"e("b\"q", -3, 4, 1.5, ["x\\y", 2])"#,
            r#"e("a", 7, 0, -0.25, nil)"#,
            r#"e("a", -8, 4294967295, 3, ["", -1])"#,
        ] {
            m.insert_fact(f).expect("a fact");
        }
        let first = m.commit().expect("commits");
        m.remove_fact(r#"e("a", 7, 0, -0.25, nil)"#)
            .expect("a fact");
        let second = m.commit().expect("commits");
        let mut written = Vec::new();
        for c in [&first, &second] {
            m.write_changes(&c.changes, &mut written).expect("writes");
        }
        let expected = [
            r#"+ e("a", -8, 4294967295, 3, ["", -1])."#,
            r#"+ e("a", 7, 0, -0.25, nil)."#,
            r#"+ e("b\"q", -3, 4, 1.5, ["x\\y", 2])."#,
            r#"- e("a", 7, 0, -0.25, nil)."#,
        ];
        assert_eq!(
            String::from_utf8(written).expect("utf-8"),
            expected.join("\n") + "\n"
        );
        let rendered = m.render_changes(&m.shown_changes(&first.changes));
        assert_eq!(rendered, expected[..3]);
    }
}
