//! Stage 4 of the dynalog pipeline: fact files in and out, in Soufflé's layout.
//!
//! * `.input r` reads `FACT_DIR/r.facts`, tab-separated, one fact per line; a directive
//!   may name another `filename` (relative to the fact directory) and `delimiter`.
//! * `.output r` writes `OUT_DIR/r.csv`, tab-separated, one fact per line, sorted; with
//!   `-D -` or `IO=stdout` the relation is printed to standard output instead.
//! * `.printsize r` prints `r<TAB>count`.
//! * A component instance's relation has a qualified name (`inst.r`, see
//!   [`dynalog_syntax::components`]), and its files are named by it as in Soufflé:
//!   `FACT_DIR/inst.r.facts`, `OUT_DIR/inst.r.csv`.
//! * `.input r(IO="rdf", filename="data.nt", mapping="triples"|"vocabulary")` reads an
//!   N-Triples or Turtle file ([`rdf`]); relations naming the same file share one read.
//!
//! Values are interned here, at the edge: symbols go into the program's
//! [`SymbolTable`], numbers are parsed to their 32-bit patterns. A file is read
//! completely and checked before any of it is handed on, so a bad line never leaves
//! a relation half-loaded.

use dynalog_analysis::{IoSpec, Program, RelId, Relation, SymbolTable, SymbolsRead, Type, Value};
use dynalog_syntax::{Diagnostic, SourceFile};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

pub mod rdf;

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
    /// Remarks for the user (RDF: skipped malformed lines, dropped facts).
    pub notes: Vec<String>,
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
    read_inputs_with(program, source, fact_dir, &rdf::RdfOptions::default())
}

/// [`read_inputs`] with defaults for RDF inputs (`--base`, `--lenient`); a directive's
/// own `base=`, `lenient=` and `format=` take precedence. An RDF file named by several
/// directives is read once.
pub fn read_inputs_with(
    program: &mut Program,
    source: &SourceFile,
    fact_dir: &Path,
    rdf_defaults: &rdf::RdfOptions,
) -> Result<Vec<Loaded>, Diagnostic> {
    let mut out = Vec::new();
    // RDF files in order of first mention: (path, first directive, targets).
    let mut rdf_files: Vec<(PathBuf, IoSpec, Vec<rdf::RdfTarget>)> = Vec::new();
    for id in 0..program.relations.len() {
        let rel = program.relations[id].clone();
        for spec in &rel.inputs {
            if rdf::is_rdf_spec(spec) {
                let target = rdf::rdf_target(program, source, id as RelId, spec)?;
                let Some(path) = rdf::rdf_path(fact_dir, spec) else {
                    return Err(Diagnostic::at(
                        source,
                        spec.span,
                        format!(
                            "the RDF input of `{}` needs `filename=\"...\"` (an .nt or .ttl file, optionally .gz)",
                            rel.name
                        ),
                    ));
                };
                match rdf_files.iter_mut().find(|(p, _, _)| *p == path) {
                    Some((_, _, targets)) => targets.push(target),
                    None => rdf_files.push((path, spec.clone(), vec![target])),
                }
                continue;
            }
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
                notes: Vec::new(),
            });
        }
    }
    for (file_id, (path, spec, targets)) in rdf_files.into_iter().enumerate() {
        if !path.exists() {
            return Err(Diagnostic::at(
                source,
                spec.span,
                format!(
                    "cannot read the RDF input `{}`: no such file",
                    path.display()
                ),
            ));
        }
        let mut options = rdf::options_of(&spec, rdf_defaults);
        options.file_id = file_id as u32;
        let load = rdf::load_rdf(program, &path, &targets, &options)?;
        let mut notes = load.notes(&path.display().to_string());
        for (relation, tuples) in load.batches {
            out.push(Loaded {
                relation,
                path: path.clone(),
                tuples,
                notes: std::mem::take(&mut notes),
            });
        }
        if !notes.is_empty() {
            out.push(Loaded {
                relation: targets[0].relation,
                path: path.clone(),
                tuples: Tuples::new(program.relation(targets[0].relation).arity()),
                notes,
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
    let has_records = rel.types.iter().any(|t| matches!(t, Type::Record(_)));
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
        // As in Soufflé, an empty line is one empty field: the empty symbol for a
        // relation of one symbol column, an error for any other (a number cannot be
        // empty, and columns are missing).
        tuple.clear();
        if rel.arity() == 0 {
            tuples.push(&tuple);
            continue;
        }
        let mut col = 1;
        let fields = split_fields(line, delimiter, has_records);
        for (field_no, &field) in fields.iter().enumerate() {
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
                        fields.len()
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

/// The fields of a line. With record columns, a delimiter inside brackets, parentheses
/// or quotes belongs to the record (`[1, a],b` is two fields with `,`), as Soufflé reads
/// records.
fn split_fields(line: &str, delimiter: char, has_records: bool) -> Vec<&str> {
    if !has_records {
        return line.split(delimiter).collect();
    }
    let mut fields = Vec::new();
    let (mut depth, mut quoted, mut escaped, mut start) = (0usize, false, false, 0);
    for (i, c) in line.char_indices() {
        if quoted {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' if depth > 0 => quoted = true,
            '[' | '(' => depth += 1,
            ']' | ')' => depth = depth.saturating_sub(1),
            c if c == delimiter && depth == 0 => {
                fields.push(&line[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    fields.push(&line[start..]);
    fields
}

/// A record column's distinct values in order, and each one's rank.
type Ranked = (Vec<Value>, rustc_hash::FxHashMap<Value, u32>);

/// Sorts facts the way a user reads them: column by column, numbers numerically,
/// symbols as text. Each value is mapped to an order-preserving `u32` key (symbols by
/// their rank in the sorted symbol table), so sorting compares integers only.
pub struct Sorter {
    /// `rank[id]`: position of symbol `id` in string order.
    rank: Vec<u32>,
    /// `by_rank[r]`: the symbol of rank `r`.
    by_rank: Vec<u32>,
}

impl Sorter {
    pub fn new(symbols: &SymbolTable) -> Sorter {
        let symbols = symbols.read();
        let mut by_rank: Vec<u32> = (0..symbols.len() as u32).collect();
        by_rank.sort_unstable_by(|&a, &b| symbols.resolve(a).cmp(symbols.resolve(b)));
        let mut rank = vec![0u32; by_rank.len()];
        for (r, &id) in by_rank.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        Sorter { rank, by_rank }
    }

    fn key(&self, ty: Type, v: Value) -> u32 {
        match ty {
            Type::Number => v ^ 0x8000_0000,
            Type::Unsigned => v,
            Type::Float if v >> 31 == 1 => !v,
            Type::Float => v | 0x8000_0000,
            Type::Symbol => self.rank[v as usize],
            // Ranked per sort (see `sort`).
            Type::Record(_) => v,
        }
    }

    fn value(&self, ty: Type, k: u32) -> Value {
        match ty {
            Type::Number => k ^ 0x8000_0000,
            Type::Unsigned => k,
            Type::Float if k >> 31 == 1 => k & 0x7fff_ffff,
            Type::Float => !k,
            Type::Symbol => self.by_rank[k as usize],
            Type::Record(_) => k,
        }
    }

    /// Sort flat tuples of `rel` (`rel.arity()` values each) in place. Records are
    /// ordered field by field ([`Type::compare`]): each record column's values are
    /// ranked first, with the symbol table `symbols`.
    pub fn sort(&self, rel: &Relation, data: &mut [Value], symbols: &SymbolTable) {
        let arity = rel.arity();
        if arity == 0 {
            return;
        }
        // Per record column: the distinct values in order, and each one's rank.
        let mut ranked: Vec<Option<Ranked>> = vec![None; arity];
        for (c, &ty) in rel.types.iter().enumerate() {
            if let Type::Record(_) = ty {
                let mut values: Vec<Value> = data.iter().skip(c).step_by(arity).copied().collect();
                values.sort_unstable();
                values.dedup();
                let read = symbols.read();
                values.sort_by(|&a, &b| ty.compare(a, b, &read));
                let rank = values
                    .iter()
                    .enumerate()
                    .map(|(r, &v)| (v, r as u32))
                    .collect();
                ranked[c] = Some((values, rank));
            }
        }
        for row in data.chunks_exact_mut(arity) {
            for (c, (v, &ty)) in row.iter_mut().zip(&rel.types).enumerate() {
                *v = match &ranked[c] {
                    Some((_, rank)) => rank[v],
                    None => self.key(ty, *v),
                };
            }
        }
        // In place, the rows as arrays (compared word by word, as the keys order them):
        // a copy of the rows, or of one word per row, would double the output's peak
        // (tc over G(5000, 0.001): 24.7M rows, 198 MB each way).
        dynalog_analysis::sort_rows_on(data, arity, output_threads());
        for row in data.chunks_exact_mut(arity) {
            for (c, (v, &ty)) in row.iter_mut().zip(&rel.types).enumerate() {
                *v = match &ranked[c] {
                    Some((values, _)) => values[*v as usize],
                    None => self.value(ty, *v),
                };
            }
        }
    }
}

/// Write flat tuples as delimiter-separated lines (Soufflé's fact format). A large
/// relation's lines are made on every core ([`write_in_parts`], parts of
/// [`LINES_PER_PART`] lines; tc over G(5000, 0.001): 24.7M lines, 236 MB).
pub fn write_tuples(
    out: &mut impl Write,
    rel: &Relation,
    symbols: &SymbolTable,
    data: &[Value],
    delimiter: char,
) -> std::io::Result<()> {
    write_lines(out, rel, symbols, data, delimiter, output_threads())
}

/// [`write_tuples`] on up to `threads` threads.
fn write_lines(
    out: &mut impl Write,
    rel: &Relation,
    symbols: &SymbolTable,
    data: &[Value],
    delimiter: char,
    threads: usize,
) -> std::io::Result<()> {
    let mut delim = [0u8; 4];
    let delim = delimiter.encode_utf8(&mut delim).as_bytes();
    let arity = rel.arity();
    if arity == 0 {
        return Ok(());
    }
    write_in_parts(
        out,
        data,
        LINES_PER_PART * arity,
        threads,
        |rows, buffer, _: &mut ()| {
            format_lines(buffer, &rel.types, &symbols.read(), rows, delim);
        },
    )?;
    Ok(())
}

/// Write `items` as text made part by part: `format(part, buffer, state)` appends a part's
/// text (`per_part` items, the last part shorter) to an empty buffer. On more than one
/// thread, a wave of parts is formatted, a part per thread, while the calling thread
/// writes the wave before (two sets of buffers, swapped after each wave); the text is
/// written in the items' order either way. Returns each part's `state`, in order.
pub fn write_in_parts<T: Sync, S: Default + Send>(
    out: &mut (impl Write + ?Sized),
    items: &[T],
    per_part: usize,
    threads: usize,
    format: impl Fn(&[T], &mut Vec<u8>, &mut S) + Sync,
) -> std::io::Result<Vec<S>> {
    let per_part = per_part.max(1);
    let mut states: Vec<S> = Vec::new();
    if threads <= 1 || items.len() <= per_part {
        let mut buffer = Vec::new();
        for part in items.chunks(per_part) {
            buffer.clear();
            let mut state = S::default();
            format(part, &mut buffer, &mut state);
            out.write_all(&buffer)?;
            states.push(state);
        }
        return Ok(states);
    }
    let mut filling: Vec<(Vec<u8>, S)> = (0..threads).map(|_| Default::default()).collect();
    let mut ready: Vec<(Vec<u8>, S)> = (0..threads).map(|_| Default::default()).collect();
    let mut ready_parts = 0;
    let format = &format;
    for wave in items.chunks(per_part * threads) {
        std::thread::scope(|s| {
            for (part, (buffer, state)) in wave.chunks(per_part).zip(filling.iter_mut()) {
                s.spawn(move || {
                    buffer.clear();
                    format(part, buffer, state);
                });
            }
            write_parts(out, &mut ready[..ready_parts], &mut states)
        })?;
        ready_parts = wave.len().div_ceil(per_part);
        std::mem::swap(&mut filling, &mut ready);
    }
    write_parts(out, &mut ready[..ready_parts], &mut states)?;
    Ok(states)
}

/// Write formatted parts in order, moving their states to `states`.
fn write_parts<S: Default>(
    out: &mut (impl Write + ?Sized),
    parts: &mut [(Vec<u8>, S)],
    states: &mut Vec<S>,
) -> std::io::Result<()> {
    parts.iter_mut().try_for_each(|(buffer, state)| {
        states.push(std::mem::take(state));
        out.write_all(buffer)
    })
}

/// The lines of a part of [`write_tuples`]'s output (about 1.3 MB of numbers: two sets
/// of a buffer per thread add a few MB to the peak).
const LINES_PER_PART: usize = 1 << 17;

/// The threads that sort and format a relation's output: the machine's cores, at most 8.
pub fn output_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// Append the lines of `rows` (flat, `types.len()` values each) to `out`.
fn format_lines(
    out: &mut Vec<u8>,
    types: &[Type],
    symbols: &SymbolsRead<'_>,
    rows: &[Value],
    delim: &[u8],
) {
    let mut number = itoa::Buffer::new();
    for row in rows.chunks_exact(types.len()) {
        for (c, (&v, &ty)) in row.iter().zip(types).enumerate() {
            if c > 0 {
                out.extend_from_slice(delim);
            }
            match ty {
                Type::Symbol => out.extend_from_slice(symbols.resolve(v).as_bytes()),
                Type::Number => out.extend_from_slice(number.format(v as i32).as_bytes()),
                Type::Unsigned => out.extend_from_slice(number.format(v).as_bytes()),
                Type::Float | Type::Record(_) => {
                    out.extend_from_slice(ty.render_read(v, symbols).as_bytes())
                }
            }
        }
        out.push(b'\n');
    }
}

/// Where `.output` relations go.
#[derive(Clone, Debug)]
pub enum OutputTarget {
    /// `-D DIR`: `DIR/r.csv` (or the directive's `filename`, relative to `DIR`).
    Dir(PathBuf),
    /// `-D -`: standard output, in Soufflé's framed layout.
    Stdout,
}

/// Why [`write_outputs`] failed.
#[derive(Debug)]
pub enum WriteError {
    /// An output file could not be written (or renamed into place): `cannot write
    /// `PATH`: reason`.
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing to the standard output writer failed: the reason.
    Stdout(std::io::Error),
}

impl WriteError {
    /// The I/O error behind it.
    pub fn io_error(&self) -> &std::io::Error {
        match self {
            WriteError::File { source, .. } | WriteError::Stdout(source) => source,
        }
    }
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::File { path, source } => {
                write!(f, "cannot write `{}`: {source}", path.display())
            }
            WriteError::Stdout(source) => write!(f, "{source}"),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.io_error())
    }
}

/// Calls its second argument on every fact of the relation named by the first.
pub type FactSource<'a> = dyn Fn(RelId, &mut dyn FnMut(&[Value])) + 'a;

/// Write every `.output` relation of the program and print `.printsize` counts.
/// `facts(rel, f)` calls `f` on each of the relation's tuples; `len(rel)` is its size.
pub fn write_outputs(
    program: &Program,
    target: &OutputTarget,
    facts: &FactSource<'_>,
    len: &dyn Fn(RelId) -> usize,
    stdout: &mut dyn Write,
) -> Result<(), WriteError> {
    // Files are written under temporary names and renamed into place only once every
    // one is written, so a failed run leaves no half-written outputs (and an earlier
    // run's outputs stay as they were).
    let mut written: Vec<(std::path::PathBuf, std::path::PathBuf)> = Vec::new();
    let result = write_outputs_to(program, target, facts, len, stdout, &mut written);
    if result.is_err() {
        for (tmp, _) in &written {
            let _ = std::fs::remove_file(tmp);
        }
        return result;
    }
    for (i, (tmp, path)) in written.iter().enumerate() {
        if let Err(e) = std::fs::rename(tmp, path) {
            for (tmp, _) in &written[i..] {
                let _ = std::fs::remove_file(tmp);
            }
            return Err(WriteError::File {
                path: path.clone(),
                source: e,
            });
        }
    }
    Ok(())
}

/// The name an output is written under before it is renamed into place.
fn temporary_name(path: &Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

fn write_outputs_to(
    program: &Program,
    target: &OutputTarget,
    facts: &FactSource<'_>,
    len: &dyn Fn(RelId) -> usize,
    stdout: &mut dyn Write,
    written: &mut Vec<(std::path::PathBuf, std::path::PathBuf)>,
) -> Result<(), WriteError> {
    let mut sorter = None;
    for (id, rel) in program.relations.iter().enumerate() {
        let id = id as RelId;
        if rel.printsize {
            writeln!(stdout, "{}\t{}", rel.name, len(id)).map_err(WriteError::Stdout)?;
        }
        if rel.outputs.is_empty() {
            continue;
        }
        let mut tuples = Vec::with_capacity(len(id) * rel.arity());
        facts(id, &mut |t| tuples.extend_from_slice(t));
        sorter
            .get_or_insert_with(|| Sorter::new(&program.symbols))
            .sort(rel, &mut tuples, &program.symbols);
        let nullary = rel.arity() == 0 && len(id) > 0;
        for spec in &rel.outputs {
            let delimiter = delimiter_of(spec);
            let to_stdout =
                matches!(target, OutputTarget::Stdout) || spec.get("IO") == Some("stdout");
            if to_stdout {
                let mut body = Vec::new();
                write_tuples(&mut body, rel, &program.symbols, &tuples, delimiter)
                    .map_err(WriteError::Stdout)?;
                if nullary {
                    body.extend_from_slice(b"()\n");
                }
                // Soufflé's frame: the name, the column names, the tuples.
                let columns = rel.column_names.join(&delimiter.to_string());
                write!(
                    stdout,
                    "---------------\n{}\n{columns}\n===============\n",
                    rel.name
                )
                .and_then(|_| stdout.write_all(&body))
                .and_then(|_| writeln!(stdout, "==============="))
                .map_err(WriteError::Stdout)?;
                continue;
            }
            let OutputTarget::Dir(dir) = target else {
                continue;
            };
            let path = match spec.get("filename") {
                Some(f) => dir.join(f),
                None => dir.join(format!("{}.csv", rel.name)),
            };
            let tmp = temporary_name(&path);
            let write = || -> std::io::Result<()> {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
                if spec.get("headers") == Some("true") {
                    writeln!(w, "{}", rel.column_names.join(&delimiter.to_string()))?;
                }
                write_tuples(&mut w, rel, &program.symbols, &tuples, delimiter)?;
                if nullary {
                    w.write_all(b"()\n")?;
                }
                w.flush()
            };
            let outcome = write();
            if outcome.is_ok() || tmp.exists() {
                written.push((tmp, path.clone()));
            }
            outcome.map_err(|source| WriteError::File { path, source })?;
        }
    }
    Ok(())
}

/// Read a file of facts of `rel` in the format of its first `.input` directive
/// (delimiter, header line), or tab-separated without one; symbols are interned into
/// `symbols`. Used to load and unload files in a live session. A file that cannot be
/// opened is reported at line 0 (no position).
pub fn read_relation_file(
    path: &Path,
    rel: &Relation,
    symbols: &mut SymbolTable,
) -> Result<Tuples, Diagnostic> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path)
        .map_err(|e| Diagnostic::line(&name, 0, 0, format!("cannot read `{name}`: {e}")))?;
    let (delimiter, headers) = match rel.inputs.first() {
        Some(spec) => (delimiter_of(spec), spec.get("headers") == Some("true")),
        None => ('\t', false),
    };
    read_facts(
        BufReader::new(file),
        &name,
        rel,
        delimiter,
        headers,
        symbols,
    )
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
            eqrel: false,
            span: Default::default(),
        }
    }

    #[test]
    fn lines_made_on_several_threads_are_written_in_order() {
        // Three waves of parts on three threads, the last part short: every line as
        // the types print it, in the rows' order.
        let mut r = rel(vec![Type::Number, Type::Symbol, Type::Unsigned]);
        r.name = "big".into();
        let st = SymbolTable::new();
        let names: Vec<Value> = ["a", "b c", "été"].iter().map(|n| st.intern(n)).collect();
        let rows = 7 * LINES_PER_PART + 5;
        let data: Vec<Value> = (0..rows)
            .flat_map(|i| [(i as i32 - 3) as Value, names[i % 3], u32::MAX - i as u32])
            .collect();
        let mut expected = String::new();
        for i in 0..rows {
            let name = ["a", "b c", "été"][i % 3];
            expected.push_str(&format!(
                "{},{name},{}\n",
                i as i32 - 3,
                u32::MAX - i as u32
            ));
        }
        for threads in [1, 3] {
            let mut out = Vec::new();
            write_lines(&mut out, &r, &st, &data, ',', threads).unwrap();
            assert!(out == expected.as_bytes(), "{threads} thread(s)");
        }
    }

    #[test]
    fn reads_tab_separated_facts() {
        let r = rel(vec![Type::Number, Type::Symbol]);
        let mut st = SymbolTable::new();
        let t = read_facts(
            "1\ta b\n-2\tc\r\n".as_bytes(),
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
        assert_eq!(&*st.resolve(rows[0][1]), "a b");
        assert_eq!(rows[1][0] as i32, -2);
    }

    /// `P = [a: number, b: symbol]` registered in a fresh table.
    fn point_type(st: &SymbolTable) -> Type {
        let base = st.define_types("io test", |_| {
            vec![dynalog_analysis::RecordType {
                name: "P".into(),
                adt: false,
                branches: vec![dynalog_analysis::Branch {
                    name: String::new(),
                    fields: vec![("a".into(), Type::Number), ("b".into(), Type::Symbol)],
                }],
            }]
        });
        Type::Record(base)
    }

    #[test]
    fn records_keep_their_delimiters_and_sort_field_by_field() {
        let mut st = SymbolTable::new();
        let p = point_type(&st);
        let r = rel(vec![p, Type::Number]);
        // With `,` as the delimiter, the commas inside a record (and in its quoted
        // symbols) are the record's, as Soufflé reads them.
        let text = "[2, \"x, ]y\"],1\n[10, a],2\n[2, a],3\nnil,4\n";
        let t = read_facts(text.as_bytes(), "f", &r, ',', false, &mut st).unwrap();
        assert_eq!(t.len(), 4);
        let mut data: Vec<Value> = t.iter().flatten().copied().collect();
        Sorter::new(&st).sort(&r, &mut data, &st);
        let mut out = Vec::new();
        write_tuples(&mut out, &r, &st, &data, '\t').unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "nil\t4\n[2, a]\t3\n[2, x, ]y]\t1\n[10, a]\t2\n"
        );
        let e = read_facts("[2, a\t1\n".as_bytes(), "g", &r, '\t', false, &mut st).unwrap_err();
        assert_eq!((e.line, e.col), (1, 1));
        assert!(
            e.message.contains("column 1 of `r`: `[2, a\t1` is not a record of the column's type: expected `]` after 2 field(s) at byte 8"),
            "{}",
            e.message
        );
    }

    #[test]
    fn an_empty_line_is_one_empty_field_as_in_souffle() {
        let mut st = SymbolTable::new();
        let one = rel(vec![Type::Symbol]);
        let t = read_facts("a\n\nb\n".as_bytes(), "s", &one, '\t', false, &mut st).unwrap();
        let texts: Vec<String> = t.iter().map(|r| st.resolve(r[0]).to_string()).collect();
        assert_eq!(texts, ["a", "", "b"]);
        let num = rel(vec![Type::Number]);
        let e = read_facts("1\n\n2\n".as_bytes(), "n", &num, '\t', false, &mut st).unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        assert!(e.message.contains("not a number"), "{}", e.message);
        let two = rel(vec![Type::Symbol, Type::Symbol]);
        let e = read_facts("a\tb\n\n".as_bytes(), "p", &two, '\t', false, &mut st).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("expected 2 columns"), "{}", e.message);
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
        let st = SymbolTable::new();
        let b = st.intern("b");
        let a = st.intern("a");
        let mut rows = vec![10, a, 2, b, 2, a, (-1i32) as u32, b];
        Sorter::new(&st).sort(&r, &mut rows, &st);
        let mut out = Vec::new();
        write_tuples(&mut out, &r, &st, &rows, '\t').unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-1\tb\n2\ta\n2\tb\n10\ta\n"
        );
    }

    #[test]
    fn sorts_every_type_and_arity() {
        let st = SymbolTable::new();
        let f = |x: f32| x.to_bits();
        let r = rel(vec![Type::Float, Type::Unsigned, Type::Symbol]);
        let (z, y) = (st.intern("z"), st.intern("y"));
        let mut rows = vec![
            f(1.5),
            3,
            z,
            f(-2.0),
            7,
            y,
            f(1.5),
            3,
            y,
            f(0.0),
            u32::MAX,
            z,
            f(-0.5),
            0,
            z,
        ];
        Sorter::new(&st).sort(&r, &mut rows, &st);
        let mut out = Vec::new();
        write_tuples(&mut out, &r, &st, &rows, ',').unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "-2,7,y\n-0.5,0,z\n0,4294967295,z\n1.5,3,y\n1.5,3,z\n"
        );
        // Every arity, in place or not (up to 8 words, and past): as rows sorted
        // as vectors of numbers.
        let mut x: u64 = 1;
        for arity in 1..=10usize {
            let r = rel(vec![Type::Number; arity]);
            let mut rows: Vec<u32> = (0..arity * 300)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((x >> 33) as i32 % 5 - 2) as u32
                })
                .collect();
            let mut want: Vec<Vec<i32>> = rows
                .chunks_exact(arity)
                .map(|r| r.iter().map(|&v| v as i32).collect())
                .collect();
            want.sort();
            Sorter::new(&st).sort(&r, &mut rows, &st);
            let got: Vec<Vec<i32>> = rows
                .chunks_exact(arity)
                .map(|r| r.iter().map(|&v| v as i32).collect())
                .collect();
            assert_eq!(got, want, "arity {arity}");
        }
        let r = rel(vec![Type::Number]);
        let mut rows = vec![5, (-3i32) as u32, 0, i32::MIN as u32, i32::MAX as u32];
        Sorter::new(&st).sort(&r, &mut rows, &st);
        assert_eq!(
            rows,
            vec![i32::MIN as u32, (-3i32) as u32, 0, 5, i32::MAX as u32]
        );
    }
}
