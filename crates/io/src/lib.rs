//! Stage 4 of the dynalog pipeline: fact files in and out, in Soufflé's layout.
//!
//! * `.input r` reads `FACT_DIR/r.facts`, tab-separated, one fact per line; a directive
//!   may name another `filename` (relative to the fact directory) and `delimiter`.
//! * `.output r` writes `OUT_DIR/r.csv`, tab-separated, one fact per line, sorted; with
//!   `-D -` or `IO=stdout` the relation is printed to standard output instead.
//! * `.printsize r` prints `r<TAB>count`.
//!
//! Values are interned here, at the edge: symbols go into the program's
//! [`SymbolTable`], numbers are parsed to their 32-bit patterns. A file is read
//! completely and checked before any of it is handed on, so a bad line never leaves
//! a relation half-loaded.

use dynalog_analysis::{IoSpec, Program, RelId, Relation, SymbolTable, Type, Value};
use dynalog_syntax::{Diagnostic, SourceFile};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Tuples of one relation, stored flat (`arity` values per tuple).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tuples {
    pub arity: usize,
    pub data: Vec<Value>,
    /// Number of tuples (needed for arity 0, where `data` is empty).
    pub len: usize,
}

impl Tuples {
    pub fn new(arity: usize) -> Tuples {
        Tuples {
            arity,
            data: Vec::new(),
            len: 0,
        }
    }

    pub fn push(&mut self, tuple: &[Value]) {
        debug_assert_eq!(tuple.len(), self.arity);
        self.data.extend_from_slice(tuple);
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &[Value]> {
        (0..self.len).map(move |i| &self.data[i * self.arity..(i + 1) * self.arity])
    }
}

/// The facts read for one `.input` directive.
#[derive(Clone, Debug)]
pub struct Loaded {
    pub relation: RelId,
    pub path: PathBuf,
    pub tuples: Tuples,
}

fn delimiter_of(spec: &IoSpec) -> char {
    spec.get("delimiter")
        .and_then(|d| d.chars().next())
        .unwrap_or('\t')
}

/// Where the input file of `spec` for relation `rel` lives.
pub fn input_path(fact_dir: &Path, rel: &Relation, spec: &IoSpec) -> PathBuf {
    match spec.get("filename") {
        Some(f) => fact_dir.join(f),
        None => fact_dir.join(format!("{}.facts", rel.name)),
    }
}

/// Read every `.input` of the program from `fact_dir`. Errors name the file, line and
/// column; a missing file for a declared input is an error pointing at its directive.
pub fn read_inputs(
    program: &mut Program,
    source: &SourceFile,
    fact_dir: &Path,
) -> Result<Vec<Loaded>, Diagnostic> {
    let mut out = Vec::new();
    for id in 0..program.relations.len() {
        let rel = program.relations[id].clone();
        for spec in &rel.inputs {
            let path = input_path(fact_dir, &rel, spec);
            let optional = spec.get("optional") == Some("true");
            if optional && !path.exists() {
                continue;
            }
            let file = std::fs::File::open(&path).map_err(|e| {
                Diagnostic::at(
                    source,
                    spec.span,
                    format!(
                        "cannot read the input of `{}` from `{}`: {e}",
                        rel.name,
                        path.display()
                    ),
                )
            })?;
            let tuples = read_facts(
                BufReader::new(file),
                &path.display().to_string(),
                &rel,
                delimiter_of(spec),
                spec.get("headers") == Some("true"),
                &mut program.symbols,
            )?;
            out.push(Loaded {
                relation: id as RelId,
                path,
                tuples,
            });
        }
    }
    Ok(out)
}

/// Parse delimiter-separated facts of `rel` from `reader`. `name` is used in errors.
pub fn read_facts(
    reader: impl BufRead,
    name: &str,
    rel: &Relation,
    delimiter: char,
    skip_header: bool,
    symbols: &mut SymbolTable,
) -> Result<Tuples, Diagnostic> {
    let mut tuples = Tuples::new(rel.arity());
    let mut tuple = Vec::with_capacity(rel.arity());
    for (i, line) in reader.split(b'\n').enumerate() {
        let lineno = i + 1;
        let line =
            line.map_err(|e| Diagnostic::line(name, lineno, 1, format!("read error: {e}")))?;
        if skip_header && i == 0 {
            continue;
        }
        let line = std::str::from_utf8(&line)
            .map_err(|_| Diagnostic::line(name, lineno, 1, "the line is not valid UTF-8"))?;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() && rel.arity() != 0 {
            continue;
        }
        tuple.clear();
        if rel.arity() == 0 {
            tuples.push(&tuple);
            continue;
        }
        let mut col = 1;
        for (field_no, field) in line.split(delimiter).enumerate() {
            if field_no >= rel.arity() {
                return Err(Diagnostic::line(
                    name,
                    lineno,
                    col,
                    format!(
                        "expected {} column{} for `{}`, found {}",
                        rel.arity(),
                        if rel.arity() == 1 { "" } else { "s" },
                        rel.name,
                        line.split(delimiter).count()
                    ),
                ));
            }
            let ty = rel.types[field_no];
            let value = ty.parse(field, symbols).map_err(|reason| {
                Diagnostic::line(
                    name,
                    lineno,
                    col,
                    format!("column {} of `{}`: {reason}", field_no + 1, rel.name),
                )
            })?;
            tuple.push(value);
            col += field.chars().count() + 1;
        }
        if tuple.len() != rel.arity() {
            return Err(Diagnostic::line(
                name,
                lineno,
                1,
                format!(
                    "expected {} columns for `{}`, found {}",
                    rel.arity(),
                    rel.name,
                    tuple.len()
                ),
            ));
        }
        tuples.push(&tuple);
    }
    Ok(tuples)
}

/// Sort tuples the way a user reads them: column by column, numbers numerically,
/// symbols as strings.
pub fn sort_tuples(rel: &Relation, symbols: &SymbolTable, tuples: &mut [Vec<Value>]) {
    tuples.sort_by(|a, b| {
        for ((x, y), ty) in a.iter().zip(b).zip(&rel.types) {
            let o = ty.compare(*x, *y, symbols);
            if o.is_ne() {
                return o;
            }
        }
        std::cmp::Ordering::Equal
    });
}

/// Write tuples as delimiter-separated lines (Soufflé's fact format).
pub fn write_tuples(
    out: &mut impl Write,
    rel: &Relation,
    symbols: &SymbolTable,
    tuples: &[Vec<Value>],
    delimiter: char,
) -> std::io::Result<()> {
    let mut delim = [0u8; 4];
    let delim = delimiter.encode_utf8(&mut delim).as_bytes();
    for t in tuples {
        for (i, (&v, &ty)) in t.iter().zip(&rel.types).enumerate() {
            if i > 0 {
                out.write_all(delim)?;
            }
            match ty {
                Type::Symbol => out.write_all(symbols.resolve(v).as_bytes())?,
                _ => out.write_all(ty.render(v, symbols).as_bytes())?,
            }
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Where `.output` relations go.
#[derive(Clone, Debug)]
pub enum OutputTarget {
    /// `-D DIR`: `DIR/r.csv` (or the directive's `filename`, relative to `DIR`).
    Dir(PathBuf),
    /// `-D -`: standard output, in Soufflé's framed layout.
    Stdout,
}

/// Write every `.output` relation of the program and print `.printsize` counts.
/// `facts(rel)` gives the relation's tuples; `len(rel)` its size.
pub fn write_outputs(
    program: &Program,
    target: &OutputTarget,
    facts: &dyn Fn(RelId) -> Vec<Vec<Value>>,
    len: &dyn Fn(RelId) -> usize,
    stdout: &mut dyn Write,
) -> Result<(), String> {
    for (id, rel) in program.relations.iter().enumerate() {
        let id = id as RelId;
        if rel.printsize {
            writeln!(stdout, "{}\t{}", rel.name, len(id)).map_err(|e| e.to_string())?;
        }
        if rel.outputs.is_empty() {
            continue;
        }
        let mut tuples = facts(id);
        sort_tuples(rel, &program.symbols, &mut tuples);
        for spec in &rel.outputs {
            let delimiter = delimiter_of(spec);
            let to_stdout =
                matches!(target, OutputTarget::Stdout) || spec.get("IO") == Some("stdout");
            if to_stdout {
                let mut body = Vec::new();
                write_tuples(&mut body, rel, &program.symbols, &tuples, delimiter)
                    .map_err(|e| e.to_string())?;
                write!(stdout, "---------------\n{}\n===============\n", rel.name)
                    .and_then(|_| stdout.write_all(&body))
                    .and_then(|_| writeln!(stdout, "==============="))
                    .map_err(|e| e.to_string())?;
                continue;
            }
            let OutputTarget::Dir(dir) = target else {
                continue;
            };
            let path = match spec.get("filename") {
                Some(f) => dir.join(f),
                None => dir.join(format!("{}.csv", rel.name)),
            };
            let write = || -> std::io::Result<()> {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut w = std::io::BufWriter::new(std::fs::File::create(&path)?);
                if spec.get("headers") == Some("true") {
                    writeln!(w, "{}", rel.column_names.join(&delimiter.to_string()))?;
                }
                write_tuples(&mut w, rel, &program.symbols, &tuples, delimiter)?;
                w.flush()
            };
            write().map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(types: Vec<Type>) -> Relation {
        Relation {
            name: "r".into(),
            column_names: (0..types.len()).map(|i| format!("c{i}")).collect(),
            types,
            inputs: vec![],
            outputs: vec![],
            printsize: false,
            implicit: false,
            span: Default::default(),
        }
    }

    #[test]
    fn reads_tab_separated_facts() {
        let r = rel(vec![Type::Number, Type::Symbol]);
        let mut st = SymbolTable::new();
        let t = read_facts(
            "1\ta b\n-2\tc\r\n\n".as_bytes(),
            "f",
            &r,
            '\t',
            false,
            &mut st,
        )
        .unwrap();
        assert_eq!(t.len(), 2);
        let rows: Vec<&[Value]> = t.iter().collect();
        assert_eq!(rows[0][0], 1);
        assert_eq!(st.resolve(rows[0][1]), "a b");
        assert_eq!(rows[1][0] as i32, -2);
    }

    #[test]
    fn reports_bad_lines_with_position() {
        let r = rel(vec![Type::Number, Type::Number]);
        let mut st = SymbolTable::new();
        let e = read_facts(
            "1\t2\n3\tx4\n".as_bytes(),
            "f.facts",
            &r,
            '\t',
            false,
            &mut st,
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (2, 3));
        assert!(e.message.contains("not a number"), "{}", e.message);
        let e =
            read_facts("1\t2\t3\n".as_bytes(), "f.facts", &r, '\t', false, &mut st).unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("expected 2 columns"), "{}", e.message);
        let e = read_facts("1\n".as_bytes(), "f.facts", &r, '\t', false, &mut st).unwrap_err();
        assert!(e.message.contains("found 1"), "{}", e.message);
        assert!(e.to_string().starts_with("f.facts:1:1: error:"));
    }

    #[test]
    fn sorts_numbers_numerically_and_symbols_as_text() {
        let r = rel(vec![Type::Number, Type::Symbol]);
        let mut st = SymbolTable::new();
        let b = st.intern("b");
        let a = st.intern("a");
        let mut rows = vec![vec![10, a], vec![2, b], vec![2, a], vec![(-1i32) as u32, b]];
        sort_tuples(&r, &st, &mut rows);
        let mut out = Vec::new();
        write_tuples(&mut out, &r, &st, &rows, '\t').unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-1\tb\n2\ta\n2\tb\n10\ta\n"
        );
    }
}
