//! The C preprocessor's language, as Soufflé runs it on programs (`cpp`), written by
//! hand so that every position of the result maps back to the file and place it came
//! from.
//!
//! [`preprocess`] turns a program text (and the files it includes) into one text, a
//! [`SourceFile`] that carries a [`SourceMap`](crate::source::SourceMap): diagnostics
//! made on it later (by the parser, the analysis, the fact readers) name the original
//! file, line and column, and a macro's expansion is located at the macro's use.
//!
//! What it does, as `cpp` does:
//! * `#include "f"` (looked up next to the including file, then in each include
//!   directory) and `#include <f>` (the include directories only); the name may also
//!   come from a macro. Includes nest up to [`MAX_INCLUDE_DEPTH`] deep: a file that
//!   includes itself without an include guard is reported as an include cycle.
//!   `#pragma once` includes a file once.
//! * `#define NAME body`, `#define NAME(a, b) body` (also variadic: `...` and
//!   `__VA_ARGS__`), `#undef NAME`, and macros given by [`Options::macros`] (Soufflé's
//!   `-M NAME=VALUE`). Identifiers are replaced outside string literals and comments;
//!   the arguments of a function-like macro are expanded before they are substituted,
//!   and a macro is not expanded again within its own expansion (so `#define x x+1`
//!   does not loop). `#` (stringize) and `##` (paste) work in function-like macros.
//! * `#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`; `#if` takes C's integer
//!   expressions (numbers, `defined(X)` / `defined X`, macros, `! ~ - +`, `* / %`,
//!   `+ -`, `<< >>`, comparisons, `& ^ |`, `&& ||`, `?:`); an identifier left after
//!   expansion is 0.
//! * `#error text` stops with the text; `#line`, `#pragma` and the empty `#` are
//!   ignored; another directive is an error. Lines ending in a backslash continue on
//!   the next line.
//!
//! Every error is a [`Diagnostic`] at the directive or macro use that caused it, in
//! the file it is in: a missing include, an include cycle or nesting past
//! [`MAX_INCLUDE_DEPTH`], a macro called with the wrong number of arguments, an
//! expansion beyond [`MAX_EXPANSION_DEPTH`] levels or [`MAX_EXPANSION_BYTES`] bytes, an
//! output beyond [`MAX_OUTPUT_BYTES`], an `#if` without `#endif` (at the `#if`), an
//! `#else`/`#elif`/`#endif` without `#if`. Nothing here panics or loops on any input.
//!
//! Left out: a macro's expansion that ends in the name of a function-like macro does
//! not take its arguments from the text after the use (`#define f g` then `f(1)` gives
//! `g(1)` unexpanded); `__FILE__`, `__LINE__` and the other predefined macros;
//! `#warning` is ignored; `#line` does not change the positions reported.

use crate::source::{Diagnostic, Segment, SourceFile, SourceMap, Span};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How deep `#include`s may nest.
pub const MAX_INCLUDE_DEPTH: usize = 64;
/// How many files may be included in all.
pub const MAX_INCLUDES: usize = 100_000;
/// How deep macro expansions may nest (a macro whose expansion uses another, ...).
pub const MAX_EXPANSION_DEPTH: usize = 200;
/// The most bytes that macro expansions may produce in all (a nested expansion counts
/// at each level).
pub const MAX_EXPANSION_BYTES: usize = 64 << 20;
/// The largest preprocessed text.
pub const MAX_OUTPUT_BYTES: usize = 256 << 20;
/// How deep parentheses and unary operators may nest in an `#if` expression.
const MAX_IF_DEPTH: usize = 200;

/// Marks an identifier that must not be expanded any more (it was met within its own
/// expansion); removed from the final text.
const PAINT: char = '\u{1}';

/// What [`preprocess`] is given besides the text.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Where `#include` looks (after the including file's own directory, for
    /// `#include "f"`), in order: Soufflé's `-I DIR`.
    pub include_dirs: Vec<PathBuf>,
    /// Macros defined before the text, each `NAME`, `NAME=VALUE` or
    /// `NAME(a,b)=BODY` (as `cpp -D`): Soufflé's `-M`. `NAME` alone is `1`.
    pub macros: Vec<String>,
}

/// Preprocess `text`, the contents of the file `name` (a path: its directory is where
/// `#include "f"` looks first). The result is named `name`, and its positions map back
/// to the original files.
pub fn preprocess(name: &str, text: &str, options: &Options) -> Result<SourceFile, Diagnostic> {
    let mut pre = Pre {
        options,
        macros: HashMap::new(),
        files: Vec::new(),
        out: String::with_capacity(text.len()),
        segments: Vec::new(),
        once: HashSet::new(),
        includes: 0,
        work: 0,
    };
    for spec in &options.macros {
        pre.command_line_macro(spec)?;
    }
    let root = SourceFile::new(name, text);
    pre.files.push(root);
    let dir = Path::new(name).parent().map(Path::to_path_buf);
    let mut stack = vec![PathBuf::from(name)];
    pre.file(0, dir.as_deref(), &mut stack)?;
    // The end of the text is the end of the root file (an error at the end of input).
    pre.segments.push(Segment {
        out: pre.out.len() as u32,
        file: 0,
        orig: text.len() as u32,
        orig_end: text.len() as u32,
        expanded: false,
    });
    let map = SourceMap {
        files: pre.files,
        segments: pre.segments,
    };
    Ok(SourceFile::with_map(name, pre.out, map))
}

/// Read the program file `path` and [`preprocess`] it. An unreadable file is an
/// error message naming it.
pub fn preprocess_file(path: &Path, options: &Options) -> Result<SourceFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("error: cannot read `{}`: {e}", path.display()))?;
    preprocess(&path.display().to_string(), &text, options).map_err(|d| d.to_string())
}

/// A macro: its parameters (`None` for an object-like macro) and its body.
#[derive(Clone, Debug)]
struct Macro {
    params: Option<Vec<String>>,
    /// The last parameter is `...` (`__VA_ARGS__` in the body).
    variadic: bool,
    body: String,
}

struct Pre<'o> {
    options: &'o Options,
    macros: HashMap<String, Macro>,
    /// The files read so far (the root first); indices of [`Segment::file`].
    files: Vec<SourceFile>,
    out: String,
    segments: Vec<Segment>,
    /// Files marked `#pragma once`.
    once: HashSet<PathBuf>,
    /// Files included so far.
    includes: usize,
    /// Bytes produced by macro expansions so far.
    work: usize,
}

/// A logical line of a file: `start..next` covers it with its line break(s);
/// continued lines (a backslash before the break) and, for a directive, block
/// comments that go on past the break belong to it.
#[derive(Clone, Copy, Debug)]
struct Line {
    start: usize,
    next: usize,
    directive: bool,
}

/// An open `#if`: where it is, whether its current branch is taken, whether one was.
struct Cond {
    span: Span,
    taking: bool,
    done: bool,
    else_seen: bool,
    /// The lines around the `#if` are taken.
    parent: bool,
}

/// A directive's text with continuations removed and comments replaced by a space,
/// and the file offset of each of its bytes.
struct Clean {
    text: String,
    at: Vec<u32>,
}

impl Clean {
    fn span(&self, start: usize, end: usize) -> Span {
        let last = self.at.len().saturating_sub(1);
        let s = self.at.get(start.min(last)).copied().unwrap_or(0);
        let e = if end > start {
            self.at
                .get((end - 1).min(last))
                .map_or(s + 1, |&e| e.saturating_add(1))
        } else {
            s
        };
        Span {
            start: s,
            end: e.max(s),
        }
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn ident_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ident_continue(s[i]) {
        i += 1;
    }
    i
}

/// Split `text` into logical lines, telling directives (a `#` first on a line that
/// does not start inside a block comment).
fn logical_lines(text: &str) -> Vec<Line> {
    let b = text.as_bytes();
    let mut lines = Vec::new();
    let mut in_comment = false;
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let mut j = i;
        while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\x0b' | b'\x0c' | b'\r') {
            j += 1;
        }
        let directive = !in_comment && b.get(j) == Some(&b'#');
        let mut in_string = false;
        let mut line_comment = false;
        while i < b.len() {
            match b[i] {
                b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
                b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => i += 3,
                b'\n' => {
                    i += 1;
                    // A directive goes on to the end of a block comment opened in it.
                    if !(directive && in_comment) {
                        break;
                    }
                }
                _ if line_comment => i += 1,
                b'*' if in_comment && b.get(i + 1) == Some(&b'/') => {
                    in_comment = false;
                    i += 2;
                }
                _ if in_comment => i += 1,
                b'\\' if in_string => i += 2,
                b'"' => {
                    in_string = !in_string;
                    i += 1;
                }
                _ if in_string => i += 1,
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    in_comment = true;
                    i += 2;
                }
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    line_comment = true;
                    i += 2;
                }
                _ => i += 1,
            }
        }
        let next = i.min(b.len());
        lines.push(Line {
            start,
            next,
            directive,
        });
        i = next;
    }
    lines
}

/// The directive in `text[start..end]`, continuations removed and comments replaced
/// by a space.
fn clean(text: &str, start: usize, end: usize) -> Clean {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(end - start);
    let mut at = Vec::with_capacity(end - start + 1);
    let mut i = start;
    let mut in_string = false;
    while i < end {
        match b[i] {
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => i += 3,
            b'\n' | b'\r' if !in_string => i += 1,
            b'/' if !in_string && b.get(i + 1) == Some(&b'*') => {
                out.push(b' ');
                at.push(i as u32);
                i = match text.get(i + 2..end).and_then(|t| t.find("*/")) {
                    Some(k) => i + 2 + k + 2,
                    None => end,
                };
            }
            b'/' if !in_string && b.get(i + 1) == Some(&b'/') => i = end,
            c => {
                if c == b'"' {
                    in_string = !in_string;
                } else if c == b'\\' && in_string && i + 1 < end {
                    out.push(c);
                    at.push(i as u32);
                    i += 1;
                    out.push(b[i]);
                    at.push(i as u32);
                    i += 1;
                    continue;
                }
                out.push(c);
                at.push(i as u32);
                i += 1;
            }
        }
    }
    at.push(end as u32);
    // Only whole characters are copied or dropped, except after a backslash in a
    // string; a lossy conversion keeps the positions of ASCII bytes anyway.
    let text = match String::from_utf8(out) {
        Ok(t) => t,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    if text.len() + 1 != at.len() {
        // The lossy conversion changed lengths: positions become approximate.
        let first = at.first().copied().unwrap_or(start as u32);
        at = vec![first; text.len() + 1];
    }
    Clean { text, at }
}

/// One item of text for macro expansion.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Item {
    Ident,
    /// An identifier after [`PAINT`]: never expanded.
    Painted,
    Space,
    /// A string literal, comment, number or any other character.
    Other,
}

/// The item of `s` at byte `i` (a character boundary) and where it ends.
fn next_item(s: &str, i: usize) -> (Item, usize) {
    let b = s.as_bytes();
    let c = b[i];
    if c == PAINT as u8 && b.get(i + 1).is_some_and(|&n| is_ident_start(n)) {
        return (Item::Painted, ident_end(b, i + 1));
    }
    if is_ident_start(c) {
        return (Item::Ident, ident_end(b, i));
    }
    if c.is_ascii_whitespace() {
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        return (Item::Space, j);
    }
    if c == b'"' {
        let mut j = i + 1;
        while j < b.len() {
            match b[j] {
                b'\\' => j += 2,
                b'"' => return (Item::Other, j + 1),
                b'\n' => return (Item::Other, j),
                _ => j += 1,
            }
        }
        return (Item::Other, b.len());
    }
    if c == b'/' && b.get(i + 1) == Some(&b'/') {
        let end = s[i..].find('\n').map_or(b.len(), |k| i + k);
        return (Item::Other, end);
    }
    if c == b'/' && b.get(i + 1) == Some(&b'*') {
        let end = s[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
        return (Item::Other, end);
    }
    if c.is_ascii_digit() {
        // A preprocessing number: `1e5`, `0x1F`, `2.5` are not split.
        let mut j = i + 1;
        while j < b.len() {
            match b[j] {
                b'+' | b'-' if matches!(b[j - 1], b'e' | b'E' | b'p' | b'P') => j += 1,
                x if is_ident_continue(x) || x == b'.' => j += 1,
                _ => break,
            }
        }
        return (Item::Other, j);
    }
    let len = s[i..].chars().next().map_or(1, char::len_utf8);
    (Item::Other, i + len)
}

/// `text` without the [`PAINT`] marks.
fn unpaint(text: String) -> String {
    if text.contains(PAINT) {
        text.replace(PAINT, "")
    } else {
        text
    }
}

/// The arguments of a call of a function-like macro whose name ends at `at`: the raw
/// argument texts and the offset after the `)`. `None` when no `(` follows (the name
/// is then not a call), an error when the `)` is missing.
fn call_args(text: &str, at: usize, name: &str) -> Result<Option<(Vec<String>, usize)>, String> {
    let mut i = at;
    while i < text.len() {
        match next_item(text, i) {
            (Item::Space, end) => i = end,
            (Item::Other, end) if text[i..].starts_with("/*") || text[i..].starts_with("//") => {
                i = end
            }
            _ => break,
        }
    }
    if !text[i.min(text.len())..].starts_with('(') {
        return Ok(None);
    }
    i += 1;
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut start = i;
    while i < text.len() {
        let (_, end) = next_item(text, i);
        match text.as_bytes()[i] {
            b'(' => depth += 1,
            b')' if depth == 0 => {
                args.push(text[start..i].trim().to_string());
                return Ok(Some((args, i + 1)));
            }
            b')' => depth -= 1,
            b',' if depth == 0 => {
                args.push(text[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
        i = end;
    }
    Err(format!(
        "unterminated argument list of macro `{name}` (missing `)`)"
    ))
}

/// `arg` as a string literal (`#x`).
fn stringize(arg: &str) -> String {
    let mut out = String::from("\"");
    let mut in_string = false;
    let mut escaped = false;
    let mut space = false;
    for c in arg.chars() {
        if c.is_whitespace() && !in_string {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        match c {
            '"' => {
                out.push_str("\\\"");
                if !escaped {
                    in_string = !in_string;
                }
                escaped = false;
            }
            '\\' if in_string => {
                out.push_str("\\\\");
                escaped = !escaped;
            }
            PAINT => {}
            c => {
                out.push(c);
                escaped = false;
            }
        }
    }
    out.push('"');
    out
}

/// Expands macros in text, within bounds.
struct Expander<'m> {
    macros: &'m HashMap<String, Macro>,
    /// Bytes produced so far.
    work: usize,
}

impl Expander<'_> {
    fn count(&mut self, n: usize) -> Result<(), String> {
        self.work = self.work.saturating_add(n);
        if self.work > MAX_EXPANSION_BYTES {
            return Err(format!(
                "macro expansion too large (more than {} MiB)",
                MAX_EXPANSION_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// `text` with its macros expanded; `disabled` are the macros being expanded.
    fn expand(
        &mut self,
        text: &str,
        disabled: &mut Vec<String>,
        depth: usize,
    ) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            let (item, end) = next_item(text, i);
            let word = &text[i..end];
            if item == Item::Ident
                && let Some(m) = self.macros.get(word)
            {
                if disabled.iter().any(|d| d == word) {
                    out.push(PAINT);
                    out.push_str(word);
                    self.count(end - i + 1)?;
                    i = end;
                    continue;
                }
                let args = match &m.params {
                    None => Some((Vec::new(), end)),
                    Some(_) => call_args(text, end, word)?,
                };
                if let Some((args, after)) = args {
                    let r = self.call(word, m, &args, disabled, depth)?;
                    self.count(r.len())?;
                    out.push_str(&r);
                    i = after;
                    continue;
                }
            }
            out.push_str(word);
            self.count(word.len())?;
            i = end;
        }
        Ok(out)
    }

    /// The expansion of a use of macro `name` with `args`.
    fn call(
        &mut self,
        name: &str,
        m: &Macro,
        args: &[String],
        disabled: &mut Vec<String>,
        depth: usize,
    ) -> Result<String, String> {
        if depth >= MAX_EXPANSION_DEPTH {
            return Err(format!(
                "macro expansion nested more than {MAX_EXPANSION_DEPTH} deep (in `{name}`)"
            ));
        }
        let body = match &m.params {
            None => m.body.clone(),
            Some(params) => self.substitute(name, m, params, args, disabled, depth)?,
        };
        disabled.push(name.to_string());
        let r = self.expand(&body, disabled, depth + 1);
        disabled.pop();
        r
    }

    /// The body of function-like macro `name` with its parameters replaced.
    fn substitute(
        &mut self,
        name: &str,
        m: &Macro,
        params: &[String],
        args: &[String],
        disabled: &mut Vec<String>,
        depth: usize,
    ) -> Result<String, String> {
        let mut args: Vec<String> = args.to_vec();
        if params.is_empty() && !m.variadic && args.len() == 1 && args[0].is_empty() {
            args.clear();
        }
        let fixed = params.len();
        let count_ok = if m.variadic {
            args.len() >= fixed
        } else {
            args.len() == fixed
        };
        if !count_ok {
            let plural = |n: usize| if n == 1 { "" } else { "s" };
            return Err(format!(
                "macro `{name}` takes {}{fixed} argument{}, given {}",
                if m.variadic { "at least " } else { "" },
                plural(fixed),
                args.len()
            ));
        }
        let variadic_arg = m.variadic.then(|| args[fixed..].join(","));
        let param_index = |word: &str| -> Option<usize> {
            match params.iter().position(|p| p == word) {
                Some(k) => Some(k),
                None if word == "__VA_ARGS__" && m.variadic => Some(fixed),
                None => None,
            }
        };
        let raw = |k: usize| -> &str {
            match args.get(k) {
                Some(a) if k < fixed => a.as_str(),
                _ => variadic_arg.as_deref().unwrap_or(""),
            }
        };
        // The body as units: a parameter, `##`, a space or other text (`#x` is text).
        #[derive(PartialEq)]
        enum Unit {
            Param(usize),
            Paste,
            Space,
            Text(String),
        }
        let body = &m.body;
        let b = body.as_bytes();
        let mut units = Vec::new();
        let mut i = 0;
        while i < body.len() {
            if body[i..].starts_with("##") {
                units.push(Unit::Paste);
                i += 2;
                continue;
            }
            if b[i] == b'#' {
                let mut j = i + 1;
                while j < b.len() && matches!(b[j], b' ' | b'\t') {
                    j += 1;
                }
                let end = ident_end(b, j);
                match param_index(&body[j..end]) {
                    Some(k) if end > j => {
                        units.push(Unit::Text(stringize(raw(k))));
                        i = end;
                        continue;
                    }
                    _ => {
                        return Err(format!(
                            "`#` in macro `{name}` is not followed by a parameter"
                        ));
                    }
                }
            }
            let (item, end) = next_item(body, i);
            let word = &body[i..end];
            units.push(match (item, param_index(word)) {
                (Item::Ident, Some(k)) => Unit::Param(k),
                (Item::Space, _) => Unit::Space,
                _ => Unit::Text(word.to_string()),
            });
            i = end;
        }
        // A parameter next to `##` is its raw argument; elsewhere its expansion.
        let next_solid = |from: usize, step: isize| -> Option<&Unit> {
            let mut k = from as isize + step;
            while k >= 0 && (k as usize) < units.len() {
                match &units[k as usize] {
                    Unit::Space => k += step,
                    u => return Some(u),
                }
            }
            None
        };
        let mut out = String::new();
        let mut expanded: HashMap<usize, String> = HashMap::new();
        for (k, unit) in units.iter().enumerate() {
            let before = out.len();
            let by_paste =
                next_solid(k, -1) == Some(&Unit::Paste) || next_solid(k, 1) == Some(&Unit::Paste);
            match unit {
                Unit::Paste => {}
                Unit::Space if by_paste => {}
                Unit::Space => out.push(' '),
                Unit::Text(t) => out.push_str(t),
                Unit::Param(p) if by_paste => out.push_str(raw(*p)),
                Unit::Param(p) => {
                    if !expanded.contains_key(p) {
                        let e = self.expand(raw(*p), disabled, depth + 1)?;
                        expanded.insert(*p, e);
                    }
                    out.push_str(&expanded[p]);
                }
            }
            self.count(out.len() - before)?;
        }
        Ok(out)
    }
}

impl Pre<'_> {
    /// A macro given as `NAME`, `NAME=VALUE` or `NAME(a,b)=BODY`.
    fn command_line_macro(&mut self, spec: &str) -> Result<(), Diagnostic> {
        let (head, value) = spec.split_once('=').unwrap_or((spec, "1"));
        let line = format!("{head} {value}");
        let file = SourceFile::new("<command line>", spec);
        let last = spec.len().saturating_sub(1);
        let clean = Clean {
            at: (0..=line.len()).map(|k| k.min(last) as u32).collect(),
            text: line,
        };
        self.define(&clean, 0)
            .map_err(|(span, msg)| Diagnostic::at(&file, span, format!("-M `{spec}`: {msg}")))
    }

    /// Append `out` to the text, checking the bound.
    fn push_out(&mut self, text: &str) -> Result<(), String> {
        if self.out.len() + text.len() > MAX_OUTPUT_BYTES {
            return Err(format!(
                "the preprocessed program is larger than {} MiB",
                MAX_OUTPUT_BYTES >> 20
            ));
        }
        self.out.push_str(text);
        Ok(())
    }

    /// Copy `start..end` of file `fid`, without backslash-newline continuations.
    fn copy(&mut self, fid: usize, start: usize, end: usize) -> Result<(), String> {
        let file = self.files[fid].clone();
        let b = file.text.as_bytes();
        let mut from = start;
        let mut i = start;
        while i < end {
            let skip = match (b[i], b.get(i + 1), b.get(i + 2)) {
                (b'\\', Some(b'\n'), _) => 2,
                (b'\\', Some(b'\r'), Some(b'\n')) => 3,
                _ => 0,
            };
            if skip == 0 {
                i += 1;
                continue;
            }
            self.copy_plain(fid, from, i, &file.text[from..i])?;
            i += skip;
            from = i;
        }
        let to = end.max(from);
        self.copy_plain(fid, from, to, &file.text[from..to])
    }

    fn copy_plain(
        &mut self,
        fid: usize,
        start: usize,
        end: usize,
        text: &str,
    ) -> Result<(), String> {
        if start == end {
            return Ok(());
        }
        let out = self.out.len() as u32;
        let contiguous = self.segments.last().is_some_and(|s| {
            !s.expanded
                && s.file as usize == fid
                && s.orig as usize + (out - s.out) as usize == start
        });
        if !contiguous {
            self.segments.push(Segment {
                out,
                file: fid as u32,
                orig: start as u32,
                orig_end: end as u32,
                expanded: false,
            });
        }
        self.push_out(text)
    }

    /// Append the expansion `text` of the macro use at `use_span` of file `fid`.
    fn expanded(&mut self, fid: usize, use_span: Span, text: &str) -> Result<(), String> {
        self.segments.push(Segment {
            out: self.out.len() as u32,
            file: fid as u32,
            orig: use_span.start,
            orig_end: use_span.end,
            expanded: true,
        });
        self.push_out(text)
    }

    /// The line breaks of `start..end` of file `fid` (what a directive or a skipped
    /// line leaves, so that the lines after it keep their numbers).
    fn breaks(&mut self, fid: usize, start: usize, end: usize) -> Result<(), String> {
        let file = self.files[fid].clone();
        for (k, _) in file.text[start..end].match_indices('\n') {
            self.copy_plain(fid, start + k, start + k + 1, "\n")?;
        }
        Ok(())
    }

    /// Copy the text lines `start..end` of file `fid`, macros expanded.
    fn text_block(&mut self, fid: usize, start: usize, end: usize) -> Result<(), Diagnostic> {
        let file = self.files[fid].clone();
        let located = |span: Span, msg: String| Diagnostic::at(&file, span, msg);
        let whole = Span::new(start, end);
        if self.macros.is_empty() {
            return self.copy(fid, start, end).map_err(|m| located(whole, m));
        }
        let text = &file.text[..end];
        let mut copied = start;
        let mut i = start;
        while i < end {
            let (item, after_name) = next_item(text, i);
            if item != Item::Ident {
                i = after_name;
                continue;
            }
            let name = &text[i..after_name];
            let Some(m) = self.macros.get(name) else {
                i = after_name;
                continue;
            };
            let name_span = Span::new(i, after_name);
            let args = match &m.params {
                None => Some((Vec::new(), after_name)),
                Some(_) => call_args(text, after_name, name).map_err(|e| located(name_span, e))?,
            };
            let Some((args, after)) = args else {
                i = after_name;
                continue;
            };
            let use_span = Span::new(i, after);
            let mut expander = Expander {
                macros: &self.macros,
                work: self.work,
            };
            let m = m.clone();
            let r = expander.call(name, &m, &args, &mut Vec::new(), 0);
            self.work = expander.work;
            let r = r.map_err(|e| located(use_span, e))?;
            let r = unpaint(r);
            self.copy(fid, copied, i)
                .map_err(|e| located(use_span, e))?;
            self.expanded(fid, use_span, &r)
                .map_err(|e| located(use_span, e))?;
            copied = after;
            i = after;
        }
        self.copy(fid, copied, end).map_err(|e| located(whole, e))
    }

    /// Preprocess file `fid` (in `dir`), appending to the text. `stack` holds the
    /// files being included, this one last.
    fn file(
        &mut self,
        fid: usize,
        dir: Option<&Path>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), Diagnostic> {
        let file = self.files[fid].clone();
        let text: &str = &file.text;
        let mut conds: Vec<Cond> = Vec::new();
        let mut block: Option<(usize, usize)> = None;
        for line in logical_lines(text) {
            let taking = conds.last().is_none_or(|c| c.taking);
            if !line.directive {
                if taking {
                    let start = block.map_or(line.start, |(s, _)| s);
                    block = Some((start, line.next));
                } else {
                    self.breaks(fid, line.start, line.next)
                        .map_err(|e| Diagnostic::at(&file, Span::new(line.start, line.start), e))?;
                }
                continue;
            }
            if let Some((s, e)) = block.take() {
                self.text_block(fid, s, e)?;
            }
            let clean = clean(text, line.start, line.next);
            self.directive(&file, &clean, &mut conds, dir, stack)?;
            self.breaks(fid, line.start, line.next)
                .map_err(|e| Diagnostic::at(&file, Span::new(line.start, line.start), e))?;
        }
        if let Some((s, e)) = block.take() {
            self.text_block(fid, s, e)?;
        }
        if let Some(c) = conds.first() {
            return Err(Diagnostic::at(
                &file,
                c.span,
                "unterminated conditional: this `#if` has no `#endif`",
            ));
        }
        Ok(())
    }

    /// Run one directive.
    fn directive(
        &mut self,
        file: &SourceFile,
        d: &Clean,
        conds: &mut Vec<Cond>,
        dir: Option<&Path>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), Diagnostic> {
        let t = d.text.as_str();
        let b = t.as_bytes();
        let hash = t.find('#').unwrap_or(0);
        let mut k = hash + 1;
        while k < b.len() && b[k].is_ascii_whitespace() {
            k += 1;
        }
        let name_end = ident_end(b, k);
        let name = &t[k..name_end];
        let here = d.span(hash, name_end.max(hash + 1));
        let err = |span: Span, msg: String| Diagnostic::at(file, span, msg);
        let rest_at = name_end;
        let rest = t[rest_at..].trim();
        let taking = conds.last().is_none_or(|c| c.taking);
        match name {
            "if" | "ifdef" | "ifndef" => {
                let value = if taking {
                    self.condition(name, d, rest_at)
                        .map_err(|(span, msg)| err(span, msg))?
                } else {
                    false
                };
                conds.push(Cond {
                    span: here,
                    taking: value,
                    done: value,
                    else_seen: false,
                    parent: taking,
                });
                return Ok(());
            }
            "elif" | "else" | "endif" => {
                let Some(c) = conds.last_mut() else {
                    return Err(err(here, format!("`#{name}` without `#if`")));
                };
                match name {
                    "endif" => {
                        conds.pop();
                    }
                    _ if c.else_seen => {
                        return Err(err(here, format!("`#{name}` after `#else`")));
                    }
                    "else" => {
                        c.else_seen = true;
                        c.taking = c.parent && !c.done;
                        c.done = true;
                    }
                    _ => {
                        let take = c.parent && !c.done;
                        let value = take
                            && self
                                .condition("if", d, rest_at)
                                .map_err(|(span, msg)| err(span, msg))?;
                        if let Some(c) = conds.last_mut() {
                            c.taking = value;
                            c.done |= value;
                        }
                    }
                }
                return Ok(());
            }
            _ if !taking => return Ok(()),
            "define" => self
                .define(d, rest_at)
                .map_err(|(span, msg)| err(span, msg))?,
            "undef" => {
                let (s, e) = word_at(t, rest_at);
                if s == e {
                    return Err(err(here, "`#undef` needs a macro name".into()));
                }
                self.macros.remove(&t[s..e]);
            }
            "include" => self.include(file, d, here, rest_at, dir, stack)?,
            // `#` alone is the null directive, `# 12 "f"` a line marker: both ignored.
            "" if !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_digit()) => {
                let word: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
                return Err(err(
                    here,
                    format!("unknown preprocessor directive `#{word}`"),
                ));
            }
            "error" => return Err(err(here, format!("#error {rest}"))),
            "line" | "pragma" | "warning" | "" => {
                if name == "pragma"
                    && rest == "once"
                    && let Some(p) = stack.last().and_then(|p| p.canonicalize().ok())
                {
                    self.once.insert(p);
                }
            }
            _ => {
                return Err(err(
                    here,
                    format!("unknown preprocessor directive `#{name}`"),
                ));
            }
        }
        Ok(())
    }

    /// `#define` with its text from `at`.
    fn define(&mut self, d: &Clean, at: usize) -> Result<(), (Span, String)> {
        let t = d.text.as_str();
        let b = t.as_bytes();
        let (s, e) = word_at(t, at);
        if s == e {
            return Err((d.span(at, at + 1), "`#define` needs a macro name".into()));
        }
        let name = &t[s..e];
        if name == "defined" {
            return Err((d.span(s, e), "`defined` cannot be a macro name".into()));
        }
        let mut i = e;
        let mut params = None;
        let mut variadic = false;
        if b.get(i) == Some(&b'(') {
            let mut list = Vec::new();
            i += 1;
            loop {
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if b.get(i) == Some(&b')') && list.is_empty() && !variadic {
                    i += 1;
                    break;
                }
                if t[i..].starts_with("...") {
                    variadic = true;
                    i += 3;
                } else {
                    let pe = ident_end(b, i);
                    if pe == i || !is_ident_start(b[i]) {
                        return Err((d.span(i, i + 1), "expected a parameter name".into()));
                    }
                    let p = &t[i..pe];
                    if list.iter().any(|q| q == p) || p == "__VA_ARGS__" {
                        return Err((d.span(i, pe), format!("duplicate parameter `{p}`")));
                    }
                    list.push(p.to_string());
                    i = pe;
                }
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                match b.get(i) {
                    Some(b')') => {
                        i += 1;
                        break;
                    }
                    Some(b',') if !variadic => i += 1,
                    _ => {
                        return Err((
                            d.span(i, i + 1),
                            format!("expected `,` or `)` in the parameters of `{name}`"),
                        ));
                    }
                }
            }
            params = Some(list);
        }
        let body = t[i..].trim().to_string();
        if body.starts_with("##") || body.ends_with("##") {
            return Err((
                d.span(i, t.len()),
                "`##` cannot be at either end of a macro's body".into(),
            ));
        }
        self.macros.insert(
            name.to_string(),
            Macro {
                params,
                variadic,
                body,
            },
        );
        Ok(())
    }

    /// The value of the condition of `#if` / `#ifdef` / `#ifndef` (`kind`), whose text
    /// starts at `at`.
    fn condition(&mut self, kind: &str, d: &Clean, at: usize) -> Result<bool, (Span, String)> {
        let t = d.text.as_str();
        let whole = d.span(at, t.len().max(at + 1));
        if kind != "if" {
            let (s, e) = word_at(t, at);
            if s == e {
                return Err((whole, format!("`#{kind}` needs a macro name")));
            }
            let defined = self.macros.contains_key(&t[s..e]);
            return Ok(defined == (kind == "ifdef"));
        }
        // `defined X` and `defined(X)` first, then macros, then the arithmetic.
        let text = &t[at..];
        let mut replaced = String::new();
        let mut i = 0;
        while i < text.len() {
            let (item, end) = next_item(text, i);
            if item == Item::Ident && &text[i..end] == "defined" {
                let b = text.as_bytes();
                let mut j = end;
                let skip = |j: &mut usize| {
                    while *j < b.len() && b[*j].is_ascii_whitespace() {
                        *j += 1;
                    }
                };
                skip(&mut j);
                let paren = b.get(j) == Some(&b'(');
                if paren {
                    j += 1;
                    skip(&mut j);
                }
                let ne = ident_end(b, j);
                if ne == j || !is_ident_start(b[j]) {
                    return Err((whole, "`defined` needs a macro name".into()));
                }
                let value = self.macros.contains_key(&text[j..ne]);
                j = ne;
                if paren {
                    skip(&mut j);
                    if b.get(j) != Some(&b')') {
                        return Err((whole, "missing `)` after `defined(`".into()));
                    }
                    j += 1;
                }
                replaced.push_str(if value { " 1 " } else { " 0 " });
                i = j;
            } else {
                replaced.push_str(&text[i..end]);
                i = end;
            }
        }
        let mut expander = Expander {
            macros: &self.macros,
            work: self.work,
        };
        let expanded = expander.expand(&replaced, &mut Vec::new(), 0);
        self.work = expander.work;
        let expanded = expanded.map_err(|e| (whole, e))?;
        let expanded = unpaint(expanded);
        let mut parser = IfExpr {
            s: expanded.as_bytes(),
            i: 0,
            depth: 0,
        };
        let v = parser.ternary().map_err(|e| (whole, e))?;
        parser.space();
        if parser.i < parser.s.len() {
            return Err((
                whole,
                format!(
                    "unexpected `{}` in `#if` expression",
                    String::from_utf8_lossy(&parser.s[parser.i..]).trim()
                ),
            ));
        }
        Ok(v != 0)
    }

    /// `#include` with its text from `at`.
    fn include(
        &mut self,
        file: &SourceFile,
        d: &Clean,
        here: Span,
        at: usize,
        dir: Option<&Path>,
        stack: &mut Vec<PathBuf>,
    ) -> Result<(), Diagnostic> {
        let err = |msg: String| Diagnostic::at(file, here, msg);
        let mut spec = d.text[at..].trim().to_string();
        if !spec.starts_with('"') && !spec.starts_with('<') {
            // A computed include: the name comes from macros.
            let mut expander = Expander {
                macros: &self.macros,
                work: self.work,
            };
            let expanded = expander.expand(&spec, &mut Vec::new(), 0);
            self.work = expander.work;
            spec = unpaint(expanded.map_err(err)?).trim().to_string();
        }
        let (quoted, name) = match (spec.chars().next(), spec.get(1..)) {
            (Some('"'), Some(r)) if r.contains('"') => (true, &r[..r.find('"').unwrap_or(0)]),
            (Some('<'), Some(r)) if r.contains('>') => (false, &r[..r.find('>').unwrap_or(0)]),
            _ => {
                return Err(err("`#include` expects \"FILE\" or <FILE>".into()));
            }
        };
        if name.is_empty() {
            return Err(err("`#include` of an empty file name".into()));
        }
        let mut candidates: Vec<PathBuf> = Vec::new();
        if quoted {
            candidates.push(dir.map_or_else(|| PathBuf::from(name), |d| d.join(name)));
        }
        candidates.extend(self.options.include_dirs.iter().map(|d| d.join(name)));
        let Some(path) = candidates.iter().find(|p| p.is_file()).cloned() else {
            let mut searched: Vec<String> = Vec::new();
            if quoted {
                searched.push(match dir {
                    Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
                    _ => ".".into(),
                });
            }
            searched.extend(
                self.options
                    .include_dirs
                    .iter()
                    .map(|d| d.display().to_string()),
            );
            return Err(err(format!(
                "cannot find the included file `{name}` (searched: {})",
                if searched.is_empty() {
                    "no include directories; add one with -I DIR".into()
                } else {
                    searched.join(", ")
                }
            )));
        };
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if self.once.contains(&canonical) {
            return Ok(());
        }
        if stack.len() > MAX_INCLUDE_DEPTH {
            let canon = |p: &PathBuf| p.canonicalize().unwrap_or_else(|_| p.clone());
            let chain: Vec<PathBuf> = stack.iter().map(canon).collect();
            // An include cycle: the first file met again, and the files between.
            for (k, p) in chain.iter().enumerate() {
                if let Some(again) = chain[k + 1..].iter().position(|q| q == p) {
                    let names: Vec<String> = stack[k..=k + 1 + again]
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect();
                    return Err(err(format!("include cycle: {}", names.join(" → "))));
                }
            }
            return Err(err(format!(
                "`#include` nested more than {MAX_INCLUDE_DEPTH} deep"
            )));
        }
        let text = std::fs::read(&path).map_err(|e| {
            err(format!(
                "cannot read the included file `{}`: {e}",
                path.display()
            ))
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            err(format!(
                "the included file `{}` is not UTF-8 text",
                path.display()
            ))
        })?;
        if self.out.len() + text.len() > MAX_OUTPUT_BYTES {
            return Err(err(format!(
                "the preprocessed program is larger than {} MiB",
                MAX_OUTPUT_BYTES >> 20
            )));
        }
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            return Err(err(format!("more than {MAX_INCLUDES} `#include`s")));
        }
        let new = self.files.len();
        self.files
            .push(SourceFile::new(path.display().to_string(), text));
        stack.push(path.clone());
        let r = self.file(new, path.parent(), stack);
        stack.pop();
        r
    }
}

/// The identifier at `at` of `t` after spaces: its start and end (equal if none).
fn word_at(t: &str, at: usize) -> (usize, usize) {
    let b = t.as_bytes();
    let mut s = at.min(b.len());
    while s < b.len() && b[s].is_ascii_whitespace() {
        s += 1;
    }
    if s < b.len() && is_ident_start(b[s]) {
        (s, ident_end(b, s))
    } else {
        (s, s)
    }
}

/// A parser and evaluator of `#if` expressions (C's integer arithmetic on `i64`,
/// wrapping).
struct IfExpr<'s> {
    s: &'s [u8],
    i: usize,
    depth: usize,
}

impl IfExpr<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        self.space();
        if self.s[self.i..].starts_with(op.as_bytes()) {
            // `<` is not the start of `<<` or `<=`, `&` not of `&&`, ...
            let next = self.s.get(self.i + op.len()).copied();
            let longer = match op {
                "<" => matches!(next, Some(b'<' | b'=')),
                ">" => matches!(next, Some(b'>' | b'=')),
                "&" => next == Some(b'&'),
                "|" => next == Some(b'|'),
                "!" | "=" => next == Some(b'='),
                _ => false,
            };
            if !longer {
                self.i += op.len();
                return true;
            }
        }
        false
    }

    fn ternary(&mut self) -> Result<i64, String> {
        self.depth += 1;
        if self.depth > MAX_IF_DEPTH {
            return Err("`#if` expression nested too deep".into());
        }
        let c = self.binary(0)?;
        let v = if self.eat("?") {
            let a = self.ternary()?;
            if !self.eat(":") {
                return Err("expected `:` in `#if` expression".into());
            }
            let b = self.ternary()?;
            if c != 0 { a } else { b }
        } else {
            c
        };
        self.depth -= 1;
        Ok(v)
    }

    /// Binary operators of precedence `level` and above.
    fn binary(&mut self, level: usize) -> Result<i64, String> {
        const LEVELS: [&[&str]; 10] = [
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<=", ">=", "<", ">"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut v = self.binary(level + 1)?;
        'outer: loop {
            for op in LEVELS[level] {
                if self.eat(op) {
                    let r = self.binary(level + 1)?;
                    v = match *op {
                        "||" => ((v != 0) || (r != 0)) as i64,
                        "&&" => ((v != 0) && (r != 0)) as i64,
                        "|" => v | r,
                        "^" => v ^ r,
                        "&" => v & r,
                        "==" => (v == r) as i64,
                        "!=" => (v != r) as i64,
                        "<=" => (v <= r) as i64,
                        ">=" => (v >= r) as i64,
                        "<" => (v < r) as i64,
                        ">" => (v > r) as i64,
                        "<<" => v.wrapping_shl(r as u32),
                        ">>" => v.wrapping_shr(r as u32),
                        "+" => v.wrapping_add(r),
                        "-" => v.wrapping_sub(r),
                        "*" => v.wrapping_mul(r),
                        _ if r == 0 => return Err("division by zero in `#if`".into()),
                        "/" => v.wrapping_div(r),
                        _ => v.wrapping_rem(r),
                    };
                    continue 'outer;
                }
            }
            return Ok(v);
        }
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.depth += 1;
        if self.depth > MAX_IF_DEPTH {
            return Err("`#if` expression nested too deep".into());
        }
        let v = if self.eat("!") {
            (self.unary()? == 0) as i64
        } else if self.eat("~") {
            !self.unary()?
        } else if self.eat("-") {
            self.unary()?.wrapping_neg()
        } else if self.eat("+") {
            self.unary()?
        } else if self.eat("(") {
            let v = self.ternary()?;
            if !self.eat(")") {
                return Err("missing `)` in `#if` expression".into());
            }
            v
        } else {
            self.atom()?
        };
        self.depth -= 1;
        Ok(v)
    }

    fn atom(&mut self) -> Result<i64, String> {
        self.space();
        let s = self.s;
        let start = self.i;
        let Some(&c) = s.get(start) else {
            return Err("`#if` expression ends early".into());
        };
        if is_ident_start(c) {
            // An identifier that is not a macro is 0.
            self.i = ident_end(s, start);
            return Ok(0);
        }
        if !c.is_ascii_digit() {
            return Err(format!(
                "unexpected `{}` in `#if` expression",
                String::from_utf8_lossy(&s[start..])
                    .chars()
                    .next()
                    .unwrap_or('?')
            ));
        }
        let end = ident_end(s, start);
        self.i = end;
        let word = std::str::from_utf8(&s[start..end]).unwrap_or("");
        let digits = word.trim_end_matches(['u', 'U', 'l', 'L']);
        let (radix, digits) = if let Some(h) = digits
            .strip_prefix("0x")
            .or_else(|| digits.strip_prefix("0X"))
        {
            (16, h)
        } else if let Some(b) = digits
            .strip_prefix("0b")
            .or_else(|| digits.strip_prefix("0B"))
        {
            (2, b)
        } else if digits.len() > 1 && digits.starts_with('0') {
            (8, &digits[1..])
        } else {
            (10, digits)
        };
        u64::from_str_radix(digits, radix)
            .map(|v| v as i64)
            .map_err(|_| format!("`{word}` is not an integer in `#if` expression"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp(text: &str) -> Result<SourceFile, Diagnostic> {
        preprocess("t.dl", text, &Options::default())
    }

    fn out(text: &str) -> String {
        pp(text)
            .map(|f| f.text.to_string())
            .unwrap_or_else(|d| panic!("{d}"))
    }

    fn err(text: &str) -> Diagnostic {
        match pp(text) {
            Ok(f) => panic!("expected an error, got {:?}", f.text),
            Err(d) => d,
        }
    }

    /// A folder of files for include tests, removed when dropped.
    struct Folder(PathBuf);

    impl std::ops::Deref for Folder {
        type Target = std::path::Path;
        fn deref(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn folder(files: &[(&str, &str)]) -> Folder {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "dynalog-pre-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        Folder(dir)
    }

    #[test]
    fn text_without_directives_is_unchanged_and_unmapped_positions_agree() {
        let text = "a(1).\n// c\nb(x) :- a(x). /* x */\n";
        let f = pp(text).expect("ok");
        assert_eq!(&*f.text, text);
        assert!(f.is_mapped());
        for i in 0..text.len() as u32 {
            assert_eq!(f.line_col(i), SourceFile::new("t.dl", text).line_col(i));
        }
    }

    #[test]
    fn object_and_function_like_macros() {
        assert_eq!(out("#define N 5\np(N).\n"), "\np(5).\n");
        assert_eq!(
            out("#define EDGE(x, y) edge(x, y)\nEDGE(1, 2).\nEDGE (3,(4)).\n"),
            "\nedge(1, 2).\nedge(3, (4)).\n"
        );
        // Not in strings or comments, not inside other identifiers or numbers.
        assert_eq!(
            out("#define N 5\np(\"N\", N_1, xN, 1N). // N\n/* N */"),
            "\np(\"N\", N_1, xN, 1N). // N\n/* N */"
        );
        // A function-like macro's name without `(` is left alone.
        assert_eq!(out("#define F(x) x\nF.\n"), "\nF.\n");
        // Arguments are expanded first; nested calls of the same macro work.
        assert_eq!(
            out("#define ADD(a,b) (a+b)\nADD(ADD(1,2),3)\n"),
            "\n((1+2)+3)\n"
        );
        // No loop on self-reference, directly or through another macro.
        assert_eq!(out("#define x x+1\nx\n"), "\nx+1\n");
        assert_eq!(out("#define a b\n#define b a\na b\n"), "\n\na b\n");
        assert_eq!(
            out("#define foo foo+1\n#define id(x) x\nid(foo)\n"),
            "\n\nfoo+1\n"
        );
        // Empty and variadic arguments, #undef.
        assert_eq!(out("#define Z() 0\nZ()\n"), "\n0\n");
        assert_eq!(
            out("#define V(a, ...) r(a, __VA_ARGS__)\nV(1,2,3)\n"),
            "\nr(1, 2,3)\n"
        );
        assert_eq!(out("#define N 1\n#undef N\nN\n"), "\n\nN\n");
        // Stringize and paste.
        assert_eq!(
            out("#define S(x) #x\n#define P(a,b) a ## b\nS(hi \"q\") P(ed,ge)\n"),
            "\n\n\"hi \\\"q\\\"\" edge\n"
        );
        // Continuation lines.
        assert_eq!(out("#define T(x) \\\n  t(x)\nT(1)\n"), "\n\nt(1)\n");
        // Arguments across lines.
        assert_eq!(out("#define F(x,y) f(x,y)\nF(1,\n 2).\n"), "\nf(1,2).\n");
    }

    #[test]
    fn command_line_macros() {
        let options = Options {
            macros: vec!["N=3".into(), "FLAG".into(), "SQ(x)=x*x".into()],
            ..Options::default()
        };
        let f = preprocess("t.dl", "#ifdef FLAG\np(N, SQ(2)).\n#endif\n", &options).expect("ok");
        assert_eq!(&*f.text, "\np(3, 2*2).\n\n");
        let bad = Options {
            macros: vec!["1X=2".into()],
            ..Options::default()
        };
        let d = preprocess("t.dl", "", &bad).unwrap_err();
        assert!(
            d.to_string()
                .starts_with("<command line>:1:1: error: -M `1X=2`"),
            "{d}"
        );
    }

    #[test]
    fn macro_errors_are_at_the_use() {
        let d = err("#define E(x,y) e(x,y)\np(1).\n  E(1).\n");
        assert_eq!((d.line, d.col), (3, 3));
        assert_eq!(d.message, "macro `E` takes 2 arguments, given 1");
        let d = err("#define E(x) e(x)\nE(1\n");
        assert_eq!((d.line, d.col), (2, 1));
        assert!(d.message.contains("unterminated argument list"), "{d}");
        let d = err("#define S(x) #y\nS(1)\n");
        assert_eq!((d.line, d.col), (2, 1));
        assert!(d.message.contains("not followed by a parameter"), "{d}");
        let d = err("#define P(x) ## x\n");
        assert_eq!(d.line, 1);
        let d = err("#define (x) y\n");
        assert!(d.message.contains("needs a macro name"), "{d}");
        let d = err("#define F(x,x) y\n");
        assert!(d.message.contains("duplicate parameter"), "{d}");
    }

    #[test]
    fn expansions_are_bounded() {
        // Each level doubles: 2^40 bytes if nothing stopped it.
        let mut text = String::from("#define A0 xxxxxxxx\n");
        for i in 1..40 {
            text.push_str(&format!("#define A{i} A{} A{}\n", i - 1, i - 1));
        }
        text.push_str("p(A39).\n");
        let d = err(&text);
        assert_eq!((d.line, d.col), (41, 3));
        assert!(d.message.contains("too large"), "{d}");
        // Deep but small: a chain of 300 macros.
        let mut text = String::from("#define B0 1\n");
        for i in 1..300 {
            text.push_str(&format!("#define B{i} B{}\n", i - 1));
        }
        text.push_str("B299\n");
        let d = err(&text);
        assert!(d.message.contains("nested more than"), "{d}");
        assert_eq!(d.line, 301);
    }

    #[test]
    fn conditionals() {
        let text = "#define A 2\n\
                    #if defined(A) && A > 1\nyes1\n#else\nno1\n#endif\n\
                    #ifdef B\nno2\n#elif A == 2 || defined B\nyes2\n#else\nno3\n#endif\n\
                    #ifndef B\nyes3\n#endif\n\
                    #if 0\n#if 1\nno4\n#else\nno5\n#endif\n#bogus\n#elif !defined A\nno6\n#else\nyes4\n#endif\n\
                    #if (1 + 2 * 3 == 7) && (0x10 >> 2 == 4) && -1 < 0 && (1 ? 5 : 6) == 5 && ~0 == -1\nyes5\n#endif\n";
        let o = out(text);
        for y in ["yes1", "yes2", "yes3", "yes4", "yes5"] {
            assert!(o.contains(y), "{y} missing in {o:?}");
        }
        assert!(!o.contains("no"), "{o:?}");
        // Lines are kept: yes1 is on line 3 of both.
        assert_eq!(o.lines().nth(2), Some("yes1"));
    }

    #[test]
    fn conditional_errors() {
        let d = err("a.\n  #if 1\nb.\n");
        assert_eq!((d.line, d.col), (2, 3));
        assert!(d.message.contains("unterminated conditional"), "{d}");
        let d = err("a.\n#endif\n");
        assert_eq!((d.line, d.message.as_str()), (2, "`#endif` without `#if`"));
        let d = err("#else\n");
        assert_eq!(d.message, "`#else` without `#if`");
        let d = err("#if 1\n#else\n#else\n#endif\n");
        assert_eq!((d.line, d.message.as_str()), (3, "`#else` after `#else`"));
        let d = err("#if 1 +\n#endif\n");
        assert!(d.message.contains("ends early"), "{d}");
        let d = err("#if 1 / 0\n#endif\n");
        assert!(d.message.contains("division by zero"), "{d}");
        let d = err("#if defined(\n#endif\n");
        assert!(d.message.contains("defined"), "{d}");
        let d = err(&format!("#if {}1\n#endif\n", "(".repeat(10_000)));
        assert!(d.message.contains("too deep"), "{d}");
        let d = err("p.\n#frobnicate x\n");
        assert_eq!((d.line, d.col), (2, 1));
        assert_eq!(d.message, "unknown preprocessor directive `#frobnicate`");
        let d = err("#!x\n");
        assert_eq!(d.message, "unknown preprocessor directive `#!x`");
        let d = err("#error stop here\n");
        assert_eq!(d.message, "#error stop here");
        // Ignored directives, and `#` inside a comment or a string is not one.
        assert_eq!(
            out("#pragma x\n#line 4\n#\n/*\n#define X\n*/\"#x\""),
            "\n\n\n/*\n#define X\n*/\"#x\""
        );
    }

    #[test]
    fn includes_map_positions_to_their_files() {
        let dir = folder(&[
            (
                "main.dl",
                "#include \"lib/edge.dl\"\n.decl p(x: number)\np(1).\n",
            ),
            (
                "lib/edge.dl",
                "// edge\n#include <types.dl>\n.decl edge(x: T, y: T)\n",
            ),
            ("inc/types.dl", "#define T number\n"),
        ]);
        let main = dir.join("main.dl");
        let options = Options {
            include_dirs: vec![dir.join("inc")],
            ..Options::default()
        };
        let f = preprocess_file(&main, &options).expect("ok");
        assert_eq!(
            &*f.text,
            "// edge\n\n\n.decl edge(x: number, y: number)\n\n.decl p(x: number)\np(1).\n"
        );
        // `number` of `x: T` comes from T at line 3, column 15 of edge.dl.
        let at = f.text.find("x: number").expect("x") as u32 + 3;
        let d = Diagnostic::at(&f, Span::new(at as usize, at as usize + 6), "here");
        assert!(d.file.ends_with("lib/edge.dl"), "{}", d.file);
        assert_eq!((d.line, d.col), (3, 15));
        assert!(d.to_string().contains(".decl edge(x: T, y: T)"), "{d}");
        // `p(1)` is on line 3 of main.dl; the end of the text is the end of main.dl.
        let at = f.text.find("p(1)").expect("p") as u32;
        assert_eq!(f.line_col(at), (3, 1));
        let (file, end) = f.origin(f.text.len() as u32, false);
        assert_eq!(file.name, main.display().to_string());
        assert_eq!(end as usize, file.text.len());
        // Errors inside an included file name it, at the line of the error.
        let dir = folder(&[
            ("main.dl", "a.\n#include \"bad.dl\"\n"),
            ("bad.dl", "b.\n\n  #if 1\n"),
        ]);
        let e = preprocess_file(&dir.join("main.dl"), &Options::default()).unwrap_err();
        assert!(
            e.contains("bad.dl:3:3: error: unterminated conditional"),
            "{e}"
        );
        // Angle includes do not look next to the file; missing files are named.
        let d = preprocess_file(&dir.join("main.dl"), &Options::default());
        assert!(d.is_err());
        let e = preprocess("x/t.dl", "\n#include <bad.dl>\n", &Options::default()).unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        assert!(
            e.message.contains("cannot find the included file `bad.dl`"),
            "{e}"
        );
        let e = preprocess("t.dl", "#include bad.dl\n", &Options::default()).unwrap_err();
        assert!(e.message.contains("expects"), "{e}");
    }

    #[test]
    fn include_cycles_and_guards() {
        let dir = folder(&[
            ("a.dl", "#include \"b.dl\"\na.\n"),
            ("b.dl", "b.\n#include \"a.dl\"\n"),
        ]);
        let e = preprocess_file(&dir.join("a.dl"), &Options::default()).unwrap_err();
        assert!(e.contains("include cycle:"), "{e}");
        assert!(e.contains("a.dl:1:1: error: include cycle"), "{e}");
        // With an include guard, a file may include itself (as with cpp).
        let dir = folder(&[
            (
                "a.dl",
                "#ifndef A\n#define A\n#include \"b.dl\"\na.\n#endif\n",
            ),
            ("b.dl", "#include \"a.dl\"\nb.\n"),
        ]);
        let f = preprocess_file(&dir.join("a.dl"), &Options::default()).expect("ok");
        assert_eq!(f.text.matches("a.").count(), 1);
        let dir = folder(&[
            ("a.dl", "#include \"o.dl\"\n#include \"o.dl\"\n"),
            ("o.dl", "#pragma once\no.\n"),
        ]);
        let f = preprocess_file(&dir.join("a.dl"), &Options::default()).expect("ok");
        assert_eq!(f.text.matches("o.").count(), 1);
    }

    #[test]
    fn macro_expansions_point_at_the_use() {
        let f = pp("#define EDGE(x, y) edge(x, yy)\n\np(1) :- EDGE(1, 2).\n").expect("ok");
        let at = f.text.find("yy").expect("yy");
        let d = Diagnostic::at(&f, Span::new(at, at + 2), "no such variable");
        assert_eq!((d.line, d.col), (3, 9));
        // The caret covers the use.
        assert!(d.to_string().ends_with("\n   |         ^^^^^^^^^^"), "{d}");
    }

    #[test]
    fn no_panic_on_odd_input() {
        for text in [
            "#",
            "#define",
            "#define F(",
            "#define F(x",
            "#define F(...) __VA_ARGS__\nF()",
            "#if",
            "#if (",
            "#include",
            "#include \"",
            "#include <",
            "\\",
            "#define A \\",
            "/*\n#if",
            "\"#if",
            "#define F(x) x\nF(\"(\")",
            "#define A(x) #x\nA(\"\\\")",
            "#if 0x\n#endif",
            "#if 99999999999999999999\n#endif",
            "#if 1 << 99\n#endif",
            "#define é 1",
            "é #define",
            "#ifdef\n",
            "#undef",
            "#define \u{1}x 1\n\u{1}x",
            "#define P(a,b) a##b\nP(,)",
            "#if -9223372036854775807 - 1 / -1\n#endif",
        ] {
            let _ = pp(text);
        }
    }
}
