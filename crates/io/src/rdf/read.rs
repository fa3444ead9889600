//! Reading N-Triples and Turtle files (optionally gzipped) into triples, with located
//! errors or, leniently, skipped and counted statements; relative IRIs resolved against
//! a base (see the [module docs](super)).

use dynalog_analysis::IoSpec;
use dynalog_syntax::Diagnostic;
use oxrdf::Triple;
use oxttl::{NTriplesParser, TurtleParseError, TurtleParser};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The syntax of an RDF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdfFormat {
    NTriples,
    Turtle,
}

impl RdfFormat {
    /// `ntriples` / `nt` or `turtle` / `ttl`.
    pub fn from_name(name: &str) -> Option<RdfFormat> {
        match name.to_ascii_lowercase().as_str() {
            "ntriples" | "n-triples" | "nt" => Some(RdfFormat::NTriples),
            "turtle" | "ttl" => Some(RdfFormat::Turtle),
            _ => None,
        }
    }

    /// By extension, ignoring a final `.gz`: `.nt` is N-Triples, `.ttl` Turtle.
    pub fn from_path(path: &Path) -> Option<RdfFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        let ext = name.rsplit_once('.')?.1;
        RdfFormat::from_name(ext)
    }
}

/// How a file is read.
#[derive(Clone, Debug, Default)]
pub struct RdfOptions {
    /// Base IRI for relative IRIs; `None`: the file's `file://` URI.
    pub base: Option<String>,
    /// Skip and count malformed lines instead of failing.
    pub lenient: bool,
    /// `None`: by extension.
    pub format: Option<RdfFormat>,
    /// Number of the file among those loaded into one program: blank node `_:b` of the
    /// file becomes `_:f<file_id>_b`. Load a file again with the same id to get the
    /// same symbols (e.g. to unload it).
    pub file_id: u32,
}

/// What [`read_triples`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Triples read (duplicates included).
    pub triples: usize,
    /// Malformed statements skipped (only with [`RdfOptions::lenient`]).
    pub skipped: usize,
    /// The first skipped error, for the warning.
    pub first_skipped: Option<String>,
}

/// The file's `file://` URI (absolute, percent-encoded), the default base IRI.
pub fn file_uri(path: &Path) -> String {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    });
    let mut uri = String::from("file://");
    for b in abs.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

fn open(path: &Path) -> std::io::Result<Box<dyn BufRead>> {
    let file = std::fs::File::open(path)?;
    let gz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    Ok(if gz {
        Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::read::MultiGzDecoder::new(file),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    })
}

/// Stream the triples of `path` into `f`. Errors name the file, line and column.
pub fn read_triples(
    path: &Path,
    options: &RdfOptions,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let name = path.display().to_string();
    let format = match options.format.or_else(|| RdfFormat::from_path(path)) {
        Some(format) => format,
        None => {
            return Err(Diagnostic::line(
                &name,
                1,
                1,
                "unknown RDF format: name the file `.nt` or `.ttl` (optionally `.gz`), or give `format=\"ntriples\"|\"turtle\"`",
            ));
        }
    };
    let base = options.base.clone().unwrap_or_else(|| file_uri(path));
    let base_iri = oxiri::Iri::parse(base.clone())
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("bad base IRI `{base}`: {e}")))?;
    let mut reader = open(path)
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("cannot read the file: {e}")))?;
    // A UTF-8 byte order mark is not in either grammar, but common: skip it.
    let bom = reader
        .fill_buf()
        .map_err(|e| Diagnostic::line(&name, 1, 1, format!("read error: {e}")))?
        .starts_with(b"\xEF\xBB\xBF");
    if bom {
        reader.consume(3);
    }
    match format {
        RdfFormat::NTriples => read_ntriples(reader, &name, &base_iri, options.lenient, f),
        RdfFormat::Turtle => read_turtle(reader, &name, &base, options.lenient, f),
    }
}

/// Lines of N-Triples parsed together by one thread.
const BATCH_LINES: usize = 4096;

/// A batch of lines read, to be parsed: its place in the file, the number of its
/// first line, and the lines, each ending with a newline (the last line of a file
/// without one gets it).
struct Lines {
    seq: usize,
    first: usize,
    text: Vec<u8>,
}

/// A batch of lines parsed: its triples in order, and its malformed lines as
/// `(triples before it in the batch, line number, column, reason)`.
#[derive(Default)]
struct Parsed {
    triples: Vec<Triple>,
    errors: Vec<(usize, usize, usize, String)>,
    /// The parser panicked on these lines (its one error names the first): an error
    /// even when lenient.
    failed: bool,
}

/// N-Triples, line by line: each line is parsed on its own, so an error has the line's
/// number and a malformed line can be skipped without losing the rest. A line that
/// fails only because of relative IRIs is parsed again with them resolved.
///
/// The lines are parsed in batches by parser threads (one per core: parsing, and the
/// IRIs' checks in it, is most of a load), and their triples reach `f` in the file's
/// order on this thread. At most a few batches per thread are in flight.
fn read_ntriples(
    mut reader: Box<dyn BufRead>,
    name: &str,
    base: &oxiri::Iri<String>,
    lenient: bool,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let in_flight = 3 * threads;
    let (work_tx, work_rx) = std::sync::mpsc::channel::<Lines>();
    let work_rx = std::sync::Mutex::new(work_rx);
    std::thread::scope(|scope| {
        // Owned by this closure: dropped when it returns, also early, so that the
        // parsers' `recv` ends and the scope can join them.
        let work_tx = work_tx;
        let (done_tx, done_rx) = std::sync::mpsc::channel::<(usize, Parsed)>();
        for _ in 0..threads {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            scope.spawn(move || {
                loop {
                    // A poisoned lock: a parser panicked; the others stop too.
                    let next = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(lines) = next else { return };
                    // A panic in the parser becomes the batch's error: the reader
                    // waits for every batch in order, so none may go missing.
                    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        parse_nt_lines(&lines, base)
                    }))
                    .unwrap_or_else(|_| Parsed {
                        errors: vec![(0, lines.first, 1, "the N-Triples parser failed".into())],
                        failed: true,
                        ..Parsed::default()
                    });
                    if done_tx.send((lines.seq, parsed)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let mut stats = ReadStats::default();
        let mut ready: std::collections::BTreeMap<usize, Parsed> = Default::default();
        let (mut sent, mut next) = (0usize, 0usize);
        let mut lineno = 0usize;
        let mut eof = false;
        loop {
            // Keep the parsers busy: read batches until enough are in flight.
            while !eof && sent - next < in_flight {
                let mut text = Vec::new();
                let first = lineno + 1;
                for _ in 0..BATCH_LINES {
                    let n = reader.read_until(b'\n', &mut text).map_err(|e| {
                        Diagnostic::line(name, lineno + 1, 1, format!("read error: {e}"))
                    })?;
                    if n == 0 {
                        eof = true;
                        break;
                    }
                    lineno += 1;
                    if text.last() != Some(&b'\n') {
                        text.push(b'\n');
                    }
                }
                if text.is_empty() {
                    break;
                }
                let lines = Lines {
                    seq: sent,
                    first,
                    text,
                };
                if work_tx.send(lines).is_err() {
                    return Err(Diagnostic::line(name, first, 1, "a parser thread failed"));
                }
                sent += 1;
            }
            if next == sent {
                return Ok(stats);
            }
            // The next batch in the file's order, waiting for it if need be.
            let parsed = loop {
                if let Some(p) = ready.remove(&next) {
                    break p;
                }
                match done_rx.recv() {
                    Ok((seq, p)) => {
                        ready.insert(seq, p);
                    }
                    Err(_) => {
                        return Err(Diagnostic::line(name, lineno, 1, "a parser thread failed"));
                    }
                }
            };
            next += 1;
            let mut errors = parsed.errors.into_iter().peekable();
            if parsed.failed
                && let Some((_, line, col, message)) = errors.next()
            {
                return Err(Diagnostic::line(name, line, col, message));
            }
            for (i, t) in parsed.triples.iter().enumerate() {
                while let Some((_, line, col, message)) = errors.next_if(|e| e.0 == i) {
                    skip(&mut stats, name, lenient, line, col, message)?;
                }
                stats.triples += 1;
                f(t);
            }
            for (_, line, col, message) in errors {
                skip(&mut stats, name, lenient, line, col, message)?;
            }
        }
    })
}

/// A malformed line: the error, or (leniently) counted and the first one kept.
fn skip(
    stats: &mut ReadStats,
    name: &str,
    lenient: bool,
    line: usize,
    col: usize,
    message: String,
) -> Result<(), Diagnostic> {
    if !lenient {
        return Err(Diagnostic::line(name, line, col, message));
    }
    stats.skipped += 1;
    if stats.first_skipped.is_none() {
        stats.first_skipped = Some(format!("{name}:{line}:{col}: {message}"));
    }
    Ok(())
}

/// Parse a batch of lines (see [`read_ntriples`]): with one parser for the whole batch,
/// and line by line (to place each error, and resolve relative IRIs) only if that
/// fails.
fn parse_nt_lines(lines: &Lines, base: &oxiri::Iri<String>) -> Parsed {
    let mut parsed = Parsed::default();
    if parse_nt_line(&lines.text, &mut parsed.triples).is_ok() {
        return parsed;
    }
    parsed.triples.clear();
    let mut triples = Vec::new();
    for (i, line) in lines.text.split_inclusive(|&b| b == b'\n').enumerate() {
        triples.clear();
        let error = match parse_nt_line(line, &mut triples) {
            Ok(()) => None,
            Err((col, message)) => match resolve_relative(line, base) {
                Some(Ok(resolved)) => {
                    triples.clear();
                    parse_nt_line(resolved.as_bytes(), &mut triples)
                        .err()
                        .map(|_| (col, message))
                }
                Some(Err(reason)) => Some((col, reason)),
                None => Some((col, message)),
            },
        };
        match error {
            Some((col, message)) => {
                let before = parsed.triples.len();
                parsed.errors.push((before, lines.first + i, col, message));
            }
            None => parsed.triples.append(&mut triples),
        }
    }
    parsed
}

/// Parse one N-Triples line into `out`; on error the (1-based) column and the reason.
fn parse_nt_line(line: &[u8], out: &mut Vec<Triple>) -> Result<(), (usize, String)> {
    for t in NTriplesParser::new().for_slice(line) {
        match t {
            Ok(t) => out.push(t),
            Err(e) => {
                return Err((
                    e.location().start.column as usize + 1,
                    e.message().to_string(),
                ));
            }
        }
    }
    Ok(())
}

/// If the line has IRI references without a scheme (`<>`, `<a/b>`), the line with
/// them resolved against `base` (`Some(Err)` when one cannot be resolved); `None` when
/// it has none. String literals are skipped, so a `<` inside quotes is left alone.
fn resolve_relative(line: &[u8], base: &oxiri::Iri<String>) -> Option<Result<String, String>> {
    let text = std::str::from_utf8(line).ok()?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut changed = false;
    let mut rest = text;
    while let Some(i) = rest.find(['"', '<']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with('"') {
            // Copy the literal through its closing quote.
            let mut end = tail.len();
            let mut escaped = false;
            for (j, c) in tail.char_indices().skip(1) {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    end = j + 1;
                    break;
                }
            }
            out.push_str(&tail[..end]);
            rest = &tail[end..];
            continue;
        }
        let Some(close) = tail.find('>') else {
            out.push_str(tail);
            rest = "";
            break;
        };
        let iri = &tail[1..close];
        if oxiri::Iri::parse(iri).is_ok() {
            out.push_str(&tail[..=close]);
        } else {
            match base.resolve(iri) {
                Ok(resolved) => {
                    out.push('<');
                    out.push_str(resolved.as_str());
                    out.push('>');
                    changed = true;
                }
                Err(e) => {
                    return Some(Err(format!(
                        "the IRI <{iri}> is neither absolute nor relative to the base <{}>: {e}",
                        base.as_str()
                    )));
                }
            }
        }
        rest = &tail[close + 1..];
    }
    out.push_str(rest);
    changed.then_some(Ok(out))
}

fn read_turtle(
    reader: Box<dyn BufRead>,
    name: &str,
    base: &str,
    lenient: bool,
    f: &mut dyn FnMut(&Triple),
) -> Result<ReadStats, Diagnostic> {
    let parser = TurtleParser::new()
        .with_base_iri(base)
        .map_err(|e| Diagnostic::line(name, 1, 1, format!("bad base IRI `{base}`: {e}")))?;
    let mut stats = ReadStats::default();
    let mut last_error_line = None;
    for t in parser.for_reader(reader) {
        match t {
            Ok(t) => {
                stats.triples += 1;
                f(&t);
            }
            Err(TurtleParseError::Io(e)) => {
                return Err(Diagnostic::line(name, 1, 1, format!("read error: {e}")));
            }
            Err(TurtleParseError::Syntax(e)) => {
                let start = e.location().start;
                let (line, col) = (start.line as usize + 1, start.column as usize + 1);
                if !lenient {
                    return Err(Diagnostic::line(name, line, col, e.message()));
                }
                // One count per malformed statement: the parser may report a few
                // errors while it recovers on the same line.
                if last_error_line != Some(line) {
                    stats.skipped += 1;
                    last_error_line = Some(line);
                }
                if stats.first_skipped.is_none() {
                    stats.first_skipped = Some(format!("{name}:{line}:{col}: {}", e.message()));
                }
            }
        }
    }
    Ok(stats)
}

/// Options of a directive, on top of `defaults`: `base`, `lenient`, `format`.
pub fn options_of(spec: &IoSpec, defaults: &RdfOptions) -> RdfOptions {
    let mut o = defaults.clone();
    if let Some(b) = spec.get("base") {
        o.base = Some(b.to_string());
    }
    if let Some(l) = spec.get("lenient") {
        o.lenient = l == "true";
    }
    if let Some(f) = spec.get("format").and_then(RdfFormat::from_name) {
        o.format = Some(f);
    }
    o
}

/// Where an `IO="rdf"` directive's file is: its `filename`, relative to `fact_dir`.
pub fn rdf_path(fact_dir: &Path, spec: &IoSpec) -> Option<PathBuf> {
    spec.get("filename").map(|f| fact_dir.join(f))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdf::test_util::*;
    use std::io::Write;

    #[test]
    fn relative_iris_resolve_against_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let text = "<> <http://ex.org/p> <rel/x> .\n<http://ex.org/s> <http://ex.org/p> \"a <> in a \\\" literal\" .\n";
        let path = write_file(dir.path(), "r.nt", text);
        let with_base = RdfOptions {
            base: Some("http://base.org/dir/doc".into()),
            ..RdfOptions::default()
        };
        let (t, _) = triples_of(&path, &with_base).unwrap();
        assert_eq!(t[0].subject.to_string(), "<http://base.org/dir/doc>");
        assert_eq!(t[0].object.to_string(), "<http://base.org/dir/rel/x>");
        assert_eq!(t[1].object.to_string(), "\"a <> in a \\\" literal\"");
        // Default base: the file's own file:// URI.
        let (t, _) = triples_of(&path, &RdfOptions::default()).unwrap();
        let uri = file_uri(&path);
        assert!(
            uri.starts_with("file:///") && uri.ends_with("/r.nt"),
            "{uri}"
        );
        assert_eq!(t[0].subject.to_string(), format!("<{uri}>"));
        // Turtle resolves with the same base.
        let ttl = write_file(dir.path(), "r.ttl", "<> <http://ex.org/p> <x> .\n");
        let (t, _) = triples_of(&ttl, &with_base).unwrap();
        assert_eq!(t[0].object.to_string(), "<http://base.org/dir/x>");
        // A bad base is an error, not a panic.
        let bad = RdfOptions {
            base: Some("not a base".into()),
            ..RdfOptions::default()
        };
        assert!(triples_of(&path, &bad).is_err());
    }

    #[test]
    fn a_triple_over_two_lines_or_two_triples_on_one_are_errors_of_their_line() {
        // A batch is parsed whole first: it must refuse what a line alone refuses.
        let dir = tempfile::tempdir().unwrap();
        let good = "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n";
        for (bad, line) in [
            (
                "<http://ex.org/s> <http://ex.org/p>\n <http://ex.org/o> .\n",
                2,
            ),
            (
                "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> . <http://ex.org/s> <http://ex.org/p> <http://ex.org/o2> .\n",
                2,
            ),
        ] {
            let path = write_file(dir.path(), "bad.nt", &format!("{good}{bad}{good}"));
            let e = triples_of(&path, &RdfOptions::default()).unwrap_err();
            assert_eq!(e.line, line, "{e}");
        }
        let path = write_file(dir.path(), "good.nt", &good.repeat(3));
        assert_eq!(
            triples_of(&path, &RdfOptions::default()).unwrap().0.len(),
            3
        );
    }

    #[test]
    fn malformed_lines_are_errors_with_their_position_or_skipped_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let text = "<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n\
                    <http://ex.org/s> <http://ex.org/p> \"unterminated .\n\
                    # a comment\n\
                    <http://ex.org/s> <http://ex.org/p> <http://ex.org/o2> .\n\
                    <http://ex.org/s> http://ex.org/p <http://ex.org/o> .\n";
        let path = write_file(dir.path(), "bad.nt", text);
        let e = triples_of(&path, &RdfOptions::default()).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.col > 1, "{e}");
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!("{}:2:", path.display())),
            "{shown}"
        );
        assert!(shown.contains(": error: "), "{shown}");
        let lenient = RdfOptions {
            lenient: true,
            ..RdfOptions::default()
        };
        let (t, stats) = triples_of(&path, &lenient).unwrap();
        assert_eq!((t.len(), stats.skipped, stats.triples), (2, 2, 2));
        assert!(stats.first_skipped.unwrap().contains(":2:"));
        // Turtle: the line of the error too.
        let ttl = write_file(
            dir.path(),
            "bad.ttl",
            "@prefix ex: <http://ex.org/> .\nex:s ex:p ex:o .\nex:s ex:p .\nex:s ex:p ex:o2 .\nex:s ex:p ex:o3 .\n",
        );
        let e = triples_of(&ttl, &RdfOptions::default()).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let (t, stats) = triples_of(&ttl, &lenient).unwrap();
        assert!(stats.skipped >= 1);
        // The parser resumes after the next `.`: here the one ending the o2 statement.
        assert!(
            t.iter()
                .any(|t| t.object.to_string() == "<http://ex.org/o3>"),
            "{t:?} {stats:?}"
        );
        // Unknown extension, missing file: errors.
        let txt = write_file(dir.path(), "x.txt", "");
        assert!(
            triples_of(&txt, &RdfOptions::default())
                .unwrap_err()
                .message
                .contains("format")
        );
        assert!(triples_of(&dir.path().join("none.nt"), &RdfOptions::default()).is_err());
    }

    #[test]
    fn batches_of_lines_keep_the_files_order_and_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        // Several batches per parser thread, malformed lines in the middle of a batch
        // and at a batch's edges, and no newline after the last line.
        let n = BATCH_LINES * 7 + 123;
        let bad = [BATCH_LINES, BATCH_LINES + 1, 3 * BATCH_LINES + 17, n];
        let mut text = String::new();
        for i in 1..=n {
            if bad.contains(&i) {
                text.push_str("<http://ex.org/s> <http://ex.org/p> \"unterminated .");
            } else if i % 1000 == 0 {
                text.push_str("# a comment");
            } else {
                text.push_str(&format!("<http://ex.org/s{i}> <http://ex.org/p> \"{i}\" ."));
            }
            if i < n {
                text.push('\n');
            }
        }
        let path = write_file(dir.path(), "many.nt", &text);
        let e = triples_of(&path, &RdfOptions::default()).unwrap_err();
        assert_eq!(
            e.line, BATCH_LINES,
            "the first malformed line, in the file's order"
        );
        let lenient = RdfOptions {
            lenient: true,
            ..RdfOptions::default()
        };
        let (t, stats) = triples_of(&path, &lenient).unwrap();
        let expected: Vec<usize> = (1..=n)
            .filter(|i| !bad.contains(i) && i % 1000 != 0)
            .collect();
        let got: Vec<usize> = t
            .iter()
            .map(|t| {
                t.subject.to_string()["<http://ex.org/s".len()..]
                    .trim_end_matches('>')
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(got, expected, "every triple once, in the file's order");
        assert_eq!((stats.triples, stats.skipped), (expected.len(), bad.len()));
        let first = stats.first_skipped.unwrap();
        assert!(first.contains(&format!(":{BATCH_LINES}:")), "{first}");
    }

    #[test]
    fn gzip_is_read_by_extension() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.nt.gz");
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(DATA.as_bytes()).unwrap();
        gz.finish().unwrap();
        assert_eq!(RdfFormat::from_path(&path), Some(RdfFormat::NTriples));
        let (t, _) = triples_of(&path, &RdfOptions::default()).unwrap();
        assert_eq!(t.len(), 6);
        // A byte order mark before the first line is skipped, in both syntaxes.
        for name in ["bom.nt", "bom.ttl"] {
            let bom = write_file(dir.path(), name, &format!("\u{feff}{DATA}"));
            assert_eq!(triples_of(&bom, &RdfOptions::default()).unwrap().0.len(), 6);
        }
        // Not gzip inside: a read error, not a panic.
        let fake = write_file(dir.path(), "fake.ttl.gz", "not gzip");
        assert!(triples_of(&fake, &RdfOptions::default()).is_err());
    }
}
