//! Records and algebraic data types as text: read from fact files, written as Soufflé
//! writes them (`[1, a]`, `nil`, `$Leaf(1)`, `$Empty`), ordered field by field.
//!
//! Rendering and ordering walk a value with an explicit stack: a record is made from
//! records that exist before it, so a value is a finite tree, but a list a rule builds
//! may be millions deep. Reading nests at most [`MAX_DEPTH`] deep.

use super::{RecordType, SymbolTable, SymbolsRead, Type, Value};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;

/// How deeply a record read from text may nest.
pub const MAX_DEPTH: usize = 256;

/// Read a value of the record type `ty` from `text`, interning its symbols and records.
/// The error says what is wrong where.
pub(super) fn parse(ty: Type, text: &str, symbols: &SymbolTable) -> Result<Value, String> {
    let mut reader = Reader {
        text: text.as_bytes(),
        src: text,
        pos: 0,
        symbols,
        types: FxHashMap::default(),
    };
    let v = reader.value(ty, 0)?;
    reader.blanks();
    if reader.pos < reader.text.len() {
        return Err(format!("unexpected text at byte {}", reader.pos + 1));
    }
    Ok(v)
}

struct Reader<'a> {
    text: &'a [u8],
    src: &'a str,
    pos: usize,
    symbols: &'a SymbolTable,
    types: FxHashMap<u32, RecordType>,
}

impl Reader<'_> {
    fn blanks(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        self.blanks();
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", c as char, self.pos + 1))
        }
    }

    fn record_type(&mut self, t: u32) -> Result<RecordType, String> {
        if let Some(rt) = self.types.get(&t) {
            return Ok(rt.clone());
        }
        let rt = self
            .symbols
            .record_type(t)
            .ok_or_else(|| format!("unknown record type #{t}"))?;
        self.types.insert(t, rt.clone());
        Ok(rt)
    }

    /// A field's text up to the next `,`, `]` or `)` (not consumed).
    fn bare(&mut self) -> &str {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b']' | b')') {
                break;
            }
            self.pos += 1;
        }
        &self.src[start..self.pos]
    }

    fn value(&mut self, ty: Type, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("records nest more than {MAX_DEPTH} deep"));
        }
        self.blanks();
        let Type::Record(t) = ty else {
            return self.primitive(ty);
        };
        let rt = self.record_type(t)?;
        if !rt.adt {
            if self.text[self.pos..].starts_with(b"nil") {
                self.pos += 3;
                return Ok(0);
            }
            self.expect(b'[')?;
            let fields = self.fields(&rt.branches[0].fields, depth, b']')?;
            return Ok(self.symbols.pack(0, &fields));
        }
        if self.peek() != Some(b'$') {
            return Err(format!(
                "expected `$` and a constructor of `{}` at byte {}",
                rt.name,
                self.pos + 1
            ));
        }
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'?') {
                break;
            }
            self.pos += 1;
        }
        let name = &self.src[start..self.pos];
        let Some(branch) = rt.branches.iter().position(|b| b.name == name) else {
            return Err(format!("`${name}` is not a constructor of `{}`", rt.name));
        };
        let fields = &rt.branches[branch].fields;
        self.blanks();
        let values = if self.peek() == Some(b'(') {
            self.pos += 1;
            self.fields(fields, depth, b')')?
        } else if fields.is_empty() {
            Vec::new()
        } else {
            return Err(format!(
                "`${name}` takes {} argument(s) in `(...)`, at byte {}",
                fields.len(),
                self.pos + 1
            ));
        };
        Ok(self.symbols.pack(branch as Value, &values))
    }

    /// The fields of a record after its opening bracket, and the closing `close`.
    fn fields(
        &mut self,
        fields: &[(String, Type)],
        depth: usize,
        close: u8,
    ) -> Result<Vec<Value>, String> {
        let mut values = Vec::with_capacity(fields.len());
        if fields.is_empty() {
            self.expect(close)?;
            return Ok(values);
        }
        for (i, (_, fty)) in fields.iter().enumerate() {
            if i > 0 {
                self.blanks();
                match self.peek() {
                    Some(b',') => self.pos += 1,
                    _ => {
                        return Err(format!(
                            "expected `,` and {} more field(s) at byte {}",
                            fields.len() - i,
                            self.pos + 1
                        ));
                    }
                }
            }
            values.push(self.value(*fty, depth + 1)?);
        }
        self.blanks();
        match self.peek() {
            Some(c) if c == close => {
                self.pos += 1;
                Ok(values)
            }
            _ => Err(format!(
                "expected `{}` after {} field(s) at byte {}",
                close as char,
                fields.len(),
                self.pos + 1
            )),
        }
    }

    /// A number, unsigned, float or symbol inside a record: a symbol quoted (`\"` and
    /// `\\` escaped) or up to the next `,`, `]` or `)`, as Soufflé reads it.
    fn primitive(&mut self, ty: Type) -> Result<Value, String> {
        if ty == Type::Symbol && self.peek() == Some(b'"') {
            self.pos += 1;
            let mut s = Vec::new();
            loop {
                match self.peek() {
                    None => return Err("a quoted symbol is not closed".to_string()),
                    Some(b'"') => {
                        self.pos += 1;
                        break;
                    }
                    Some(b'\\') if matches!(self.text.get(self.pos + 1), Some(b'"' | b'\\')) => {
                        s.push(self.text[self.pos + 1]);
                        self.pos += 2;
                    }
                    Some(c) => {
                        s.push(c);
                        self.pos += 1;
                    }
                }
            }
            return Ok(self.symbols.intern(&String::from_utf8_lossy(&s)));
        }
        let at = self.pos + 1;
        let field = self.bare().to_string();
        if ty == Type::Symbol {
            return Ok(self.symbols.intern(&field));
        }
        let mut scratch = self.symbols.clone();
        ty.parse(field.trim(), &mut scratch)
            .map_err(|e| format!("{e} (at byte {at})"))
    }
}

enum Item {
    Value(Type, Value),
    Text(&'static str),
}

/// A value of record type `ty` as text; the symbols inside quoted if `quoted`.
pub(super) fn render(ty: Type, v: Value, symbols: &SymbolsRead<'_>, quoted: bool) -> String {
    let mut out = String::new();
    let mut stack = vec![Item::Value(ty, v)];
    while let Some(item) = stack.pop() {
        let (ty, v) = match item {
            Item::Text(s) => {
                out.push_str(s);
                continue;
            }
            Item::Value(ty, v) => (ty, v),
        };
        match ty {
            Type::Symbol if quoted => {
                out.push('"');
                for c in symbols.resolve(v).chars() {
                    if c == '"' || c == '\\' {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out.push('"');
            }
            Type::Symbol => out.push_str(symbols.resolve(v)),
            Type::Record(t) => {
                let (Some(rt), Some(row)) = (symbols.record_type(t), symbols.record_row(v)) else {
                    out.push_str("nil");
                    continue;
                };
                let Some((&branch, fields)) = row.split_first() else {
                    out.push_str("nil");
                    continue;
                };
                let Some(b) = rt.branches.get(branch as usize) else {
                    out.push_str("nil");
                    continue;
                };
                if rt.adt {
                    out.push('$');
                    out.push_str(&b.name);
                    if fields.is_empty() {
                        continue;
                    }
                    out.push('(');
                    stack.push(Item::Text(")"));
                } else {
                    out.push('[');
                    stack.push(Item::Text("]"));
                }
                let n = fields.len().min(b.fields.len());
                for i in (0..n).rev() {
                    stack.push(Item::Value(b.fields[i].1, fields[i]));
                    if i > 0 {
                        stack.push(Item::Text(", "));
                    }
                }
            }
            t => out.push_str(&t.render_primitive(v)),
        }
    }
    out
}

/// Order two values of record type `ty`: `nil` first, then by constructor (in the
/// order declared), then field by field.
pub(super) fn compare(ty: Type, a: Value, b: Value, symbols: &SymbolsRead<'_>) -> Ordering {
    let mut stack = vec![(ty, a, b)];
    while let Some((ty, a, b)) = stack.pop() {
        if a == b {
            continue;
        }
        let Type::Record(t) = ty else {
            match ty.compare(a, b, symbols) {
                Ordering::Equal => continue,
                o => return o,
            }
        };
        let (ra, rb) = (
            symbols.record_row(a).unwrap_or(&[]),
            symbols.record_row(b).unwrap_or(&[]),
        );
        let (Some((ba, fa)), Some((bb, fb))) = (ra.split_first(), rb.split_first()) else {
            return ra.len().cmp(&rb.len());
        };
        if ba != bb {
            return ba.cmp(bb);
        }
        let Some(branch) = symbols
            .record_type(t)
            .and_then(|rt| rt.branches.get(*ba as usize))
        else {
            return fa.cmp(fb);
        };
        let n = fa.len().min(fb.len()).min(branch.fields.len());
        for i in (0..n).rev() {
            stack.push((branch.fields[i].1, fa[i], fb[i]));
        }
    }
    Ordering::Equal
}

#[cfg(test)]
mod tests {
    use super::super::Branch;
    use super::*;

    /// `P = [a: number, b: symbol]`, `L = [h: number, t: L]`,
    /// `T = Leaf {x: number} | Node {l: T, r: T} | Empty {}`.
    fn table() -> (SymbolTable, Type, Type, Type) {
        let st = SymbolTable::new();
        let base = st.define_types("test", |base| {
            let f = |n: &str, t| (n.to_string(), t);
            let b = |n: &str, fields| Branch {
                name: n.to_string(),
                fields,
            };
            vec![
                RecordType {
                    name: "P".into(),
                    adt: false,
                    branches: vec![b("", vec![f("a", Type::Number), f("b", Type::Symbol)])],
                },
                RecordType {
                    name: "L".into(),
                    adt: false,
                    branches: vec![b(
                        "",
                        vec![f("h", Type::Number), f("t", Type::Record(base + 1))],
                    )],
                },
                RecordType {
                    name: "T".into(),
                    adt: true,
                    branches: vec![
                        b("Leaf", vec![f("x", Type::Number)]),
                        b(
                            "Node",
                            vec![
                                f("l", Type::Record(base + 2)),
                                f("r", Type::Record(base + 2)),
                            ],
                        ),
                        b("Empty", vec![]),
                    ],
                },
            ]
        });
        (
            st,
            Type::Record(base),
            Type::Record(base + 1),
            Type::Record(base + 2),
        )
    }

    #[test]
    fn records_read_and_print_as_souffle_does() {
        let (mut st, p, l, t) = table();
        // Each checked against Soufflé 2.5 reading and printing the same text.
        for (ty, text, shown) in [
            (p, "[1,  a b ]", "[1, a b ]"),
            (p, " [ 2 , \"x\\\"y\"]", "[2, x\"y]"),
            (p, "[3, ]", "[3, ]"),
            (p, "nil", "nil"),
            (l, "[2, [1, nil]]", "[2, [1, nil]]"),
            (t, "$Leaf(7)", "$Leaf(7)"),
            (t, "$Node($Leaf(8), $Empty)", "$Node($Leaf(8), $Empty)"),
            (t, "$Empty()", "$Empty"),
        ] {
            let v = ty.parse(text, &mut st).unwrap();
            assert_eq!(ty.render(v, &st), shown, "{text}");
            // The quoted form reads back to the same record.
            let quoted = ty.render_quoted(v, &st.read());
            assert_eq!(ty.parse(&quoted, &mut st), Ok(v), "{quoted}");
        }
        let a = p.parse("[1, a]", &mut st).unwrap();
        assert_eq!(
            p.parse("[ 1 ,a]", &mut st),
            Ok(a),
            "the same record is one id"
        );
    }

    #[test]
    fn bad_records_are_refused_with_a_reason() {
        let (mut st, p, _, t) = table();
        for (ty, text, reason) in [
            (p, "[1, a]x", "unexpected text at byte 7"),
            (p, "[1]", "expected `,` and 1 more field(s) at byte 3"),
            (p, "[1, a, 3]", "expected `]` after 2 field(s) at byte 6"),
            (p, "[x, a]", "`x` is not a number"),
            (p, "[1, \"a]", "a quoted symbol is not closed"),
            (t, "$Tree(1)", "`$Tree` is not a constructor of `T`"),
            (t, "$Leaf", "`$Leaf` takes 1 argument(s)"),
            (t, "Leaf(1)", "expected `$`"),
        ] {
            let e = ty.parse(text, &mut st).unwrap_err();
            assert_eq!(e.kind, super::super::ParseValueErrorKind::NotRecord);
            assert!(e.to_string().contains(reason), "{text}: {e}");
        }
        let deep = format!("{}nil{}", "[1, ".repeat(2000), "]".repeat(2000));
        let (_, _, l, _) = table();
        let e = l.parse(&deep, &mut st).unwrap_err();
        assert!(e.to_string().contains("nest more than 256"), "{e}");
    }

    #[test]
    fn deep_lists_print_and_compare_without_recursion() {
        let (st, _, l, _) = table();
        let mut list = 0;
        let mut other = 0;
        for i in 0..200_000 {
            list = st.pack(0, &[i, list]);
            other = st.pack(0, &[if i == 0 { 5 } else { i }, other]);
        }
        let text = l.render(list, &st);
        assert!(text.starts_with("[199999, [199998, ") && text.contains("[1, [0, nil]]]"));
        let read = st.read();
        assert_eq!(l.compare(list, other, &read), Ordering::Less);
        assert_eq!(l.compare(other, list, &read), Ordering::Greater);
        assert_eq!(l.compare(0, list, &read), Ordering::Less, "nil first");
    }

    #[test]
    fn unpacking_checks_the_constructor() {
        let (st, ..) = table();
        let leaf = st.pack(0, &[7]);
        assert_eq!(st.unpack(leaf, 0, 0), Some(7));
        assert_eq!(st.unpack(leaf, 1, 0), None, "another constructor");
        assert_eq!(st.unpack(leaf, 0, 1), None, "no such field");
        assert_eq!(st.unpack(0, 0, 0), None, "nil has no fields");
        let mark = st.mark();
        let node = st.pack(1, &[leaf, leaf]);
        st.rollback(mark);
        assert_eq!(st.unpack(node, 1, 0), None, "forgotten");
        assert_eq!(
            st.pack(1, &[leaf, leaf]),
            node,
            "ids are issued densely again"
        );
    }
}
