//! Query patterns such as `path(1, x)` or `edge(_, "a")`: one atom whose arguments are
//! constants, variables (a repeated variable asks for equal columns) and `_`.
//!
//! [`Pattern`] is what `dynalog session`'s `?` command
//! ([`crate::Materialization::query`]) and `dynalog serve`'s
//! `GET /relations/{name}?pattern=…` both match facts with: the first against the
//! engine, the second against its read view (a copy of the facts, answered while the
//! engine applies the next transaction), for which [`Pattern::lower_readonly`] lowers
//! constants without interning.

use crate::error::LiveError;
use dynalog_analysis::{PatternArg, Program, RelId, SymbolTable, Type, Value};
use dynalog_syntax::{Item, SourceFile};

/// A pattern lowered against a program: its relation and one argument per column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    relation: RelId,
    args: Vec<PatternArg>,
}

/// The id in `symbols` of value `v` of type `ty` lowered into `scratch`, if `symbols`
/// has it (a symbol by its text, a record by its fields; other values are themselves).
/// Records nest no deeper than a pattern's expressions.
fn find_in(symbols: &SymbolTable, scratch: &SymbolTable, ty: Type, v: Value) -> Option<Value> {
    match ty {
        Type::Symbol => symbols.lookup(&scratch.resolve(v)),
        Type::Record(_) if v == 0 => Some(0),
        Type::Record(t) => {
            let rt = scratch.record_type(t)?;
            let read = scratch.read();
            let (&branch, fields) = read.record_row(v)?.split_first()?;
            let fields = fields.to_vec();
            drop(read);
            let field_types = &rt.branches.get(branch as usize)?.fields;
            let mut found = Vec::with_capacity(fields.len());
            for (&f, (_, fty)) in fields.iter().zip(field_types) {
                found.push(find_in(symbols, scratch, *fty, f)?);
            }
            symbols.find_record(branch, &found)
        }
        _ => Some(v),
    }
}

impl Pattern {
    /// Parse `text` (one atom; the final `.` may be left out) and check it against
    /// `program`'s declarations, interning its symbol constants into `symbols` (the
    /// caller forgets them again: a symbol met only in a pattern matches nothing).
    /// Errors are positioned in `text`.
    pub fn lower(
        text: &str,
        program: &Program,
        symbols: &mut SymbolTable,
    ) -> Result<Pattern, LiveError> {
        let file = SourceFile::new("<query>", crate::materialization::with_period(text));
        let ast = dynalog_syntax::parse(&file).map_err(LiveError::Parse)?;
        let atom = match &ast.items[..] {
            [Item::Rule(rule)] if rule.body.is_empty() => &rule.head,
            _ => {
                return Err(LiveError::Invalid(
                    "expected one pattern, such as `path(1, x)`".into(),
                ));
            }
        };
        let (relation, args) = dynalog_analysis::lower_pattern(&file, program, symbols, atom)
            .map_err(LiveError::Parse)?;
        Ok(Pattern { relation, args })
    }

    /// [`Pattern::lower`] against a symbol table that is only read: `Ok(None)` when
    /// a symbol constant of the pattern is not in `symbols`, so no fact can match.
    pub fn lower_readonly(
        text: &str,
        program: &Program,
        symbols: &SymbolTable,
    ) -> Result<Option<Pattern>, LiveError> {
        // Symbol and record constants are lowered into a scratch table (with the
        // program's record types), then looked up in `symbols`: symbols by their text,
        // records by their fields, found in turn.
        let mut scratch = SymbolTable::with_types_of(symbols);
        let mut p = Pattern::lower(text, program, &mut scratch)?;
        let types = &program.relation(p.relation).types;
        for (a, t) in p.args.iter_mut().zip(types) {
            if let PatternArg::Const(c) = a {
                match find_in(symbols, &scratch, *t, *c) {
                    Some(id) => *c = id,
                    None => return Ok(None),
                }
            }
        }
        Ok(Some(p))
    }

    /// The relation the pattern is on.
    pub fn relation(&self) -> RelId {
        self.relation
    }

    /// Whether `tuple` (a fact of [`Pattern::relation`]) matches; `bound` is scratch
    /// space, reused across calls.
    pub fn matches(&self, tuple: &[Value], bound: &mut Vec<Option<Value>>) -> bool {
        bound.clear();
        for (a, &v) in self.args.iter().zip(tuple) {
            match *a {
                PatternArg::Const(c) if c != v => return false,
                PatternArg::Var(k) => {
                    if bound.len() <= k {
                        bound.resize(k + 1, None);
                    }
                    match bound[k] {
                        Some(b) if b != v => return false,
                        _ => bound[k] = Some(v),
                    }
                }
                _ => {}
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program() -> Program {
        let text = ".decl e(x: number, s: symbol)\ne(1, \"a\").\n";
        let file = SourceFile::new("p.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parses");
        dynalog_analysis::analyse(&file, &ast).expect("checks")
    }

    #[test]
    fn a_read_only_lowering_finds_symbols_by_their_text() {
        let p = program();
        let mut symbols = p.symbols.clone();
        let a = symbols.lookup("a").expect("interned by the program");
        let pattern = Pattern::lower_readonly("e(x, \"a\")", &p, &symbols)
            .expect("a pattern")
            .expect("a known symbol");
        let mut bound = Vec::new();
        assert!(pattern.matches(&[1, a], &mut bound));
        assert!(!pattern.matches(&[1, a + 1], &mut bound));
        let before = symbols.len();
        assert_eq!(
            Pattern::lower_readonly("e(x, \"zz\")", &p, &symbols).expect("a pattern"),
            None,
            "an unknown symbol matches nothing"
        );
        assert_eq!(symbols.len(), before);
        // The same pattern lowered with interning matches the same facts.
        let interned = Pattern::lower("e(x, \"a\").", &p, &mut symbols).expect("a pattern");
        assert_eq!(interned, pattern);
    }

    #[test]
    fn a_read_only_lowering_finds_records_by_their_fields() {
        let text = ".type P = [n: number, s: symbol]\n.type T = A {p: P} | B {}\n\
                    .decl t(x: T)\nt($A([1, \"a\"])).\nt($B()).\n";
        let file = SourceFile::new("p.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parses");
        let p = dynalog_analysis::analyse(&file, &ast).expect("checks");
        let (records, symbols) = (p.symbols.records_len(), p.symbols.len());
        for (text, found) in [
            ("t($A([1, \"a\"]))", true),
            ("t($B())", true),
            ("t($A([2, \"a\"]))", false),
            ("t($A([1, \"zz\"]))", false),
        ] {
            let lowered = Pattern::lower_readonly(text, &p, &p.symbols).expect("a pattern");
            assert_eq!(lowered.is_some(), found, "{text}");
            if let Some(pattern) = lowered {
                let facts = p
                    .facts
                    .iter()
                    .filter(|(_, t)| pattern.matches(t, &mut Vec::new()));
                assert_eq!(facts.count(), 1, "{text}");
            }
        }
        assert_eq!(
            (p.symbols.records_len(), p.symbols.len()),
            (records, symbols),
            "nothing is made in the program's table"
        );
    }

    #[test]
    fn repeated_variables_ask_for_equal_columns() {
        let text = ".decl f(x: number, y: number)\n";
        let file = SourceFile::new("p.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parses");
        let p = dynalog_analysis::analyse(&file, &ast).expect("checks");
        let pattern = Pattern::lower_readonly("f(x, x)", &p, &p.symbols)
            .expect("a pattern")
            .expect("no symbols");
        let mut bound = Vec::new();
        assert!(pattern.matches(&[2, 2], &mut bound));
        assert!(!pattern.matches(&[2, 3], &mut bound));
        assert!(Pattern::lower_readonly("f(x)", &p, &p.symbols).is_err());
        assert!(Pattern::lower_readonly("g(x)", &p, &p.symbols).is_err());
    }
}
