//! Source files, spans and diagnostics.

use std::fmt;
use std::sync::Arc;

/// A half-open byte range `[start, end)` into one [`SourceFile`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A named piece of source text (a program file, a fact file, or a session line).
///
/// A file made by the preprocessor ([`crate::preprocess`]) also carries a
/// [`SourceMap`] from its bytes back to the files it was made of: its positions
/// ([`SourceFile::line_col`], [`Diagnostic::at`]) are then those of the original files
/// (a macro's expansion at the macro's use).
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
    line_starts: Arc<[u32]>,
    map: Option<Arc<SourceMap>>,
}

/// Where the bytes of a preprocessed text come from: the original files and, in
/// output order, the segments of the text copied from them or expanded at a place in
/// them.
#[derive(Debug, Default)]
pub struct SourceMap {
    /// The original files (without maps), indexed by [`Segment::file`].
    pub(crate) files: Vec<SourceFile>,
    /// Sorted by `out`.
    pub(crate) segments: Vec<Segment>,
}

/// A piece of preprocessed text starting at byte `out`: either copied byte for byte
/// from `files[file]` at `orig`, or (when `expanded`) the expansion of the macro use
/// at `orig..orig_end` of that file.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub(crate) out: u32,
    pub(crate) file: u32,
    pub(crate) orig: u32,
    pub(crate) orig_end: u32,
    pub(crate) expanded: bool,
}

impl SourceMap {
    /// The original file and byte of output byte `offset`; `end` asks for the last
    /// byte of a span (the end of a macro use rather than its start).
    fn origin(&self, offset: u32, end: bool) -> Option<(&SourceFile, u32)> {
        let i = self.segments.partition_point(|s| s.out <= offset);
        let seg = self.segments.get(i.checked_sub(1)?)?;
        let file = self.files.get(seg.file as usize)?;
        let orig = if seg.expanded {
            if end {
                seg.orig_end.saturating_sub(1).max(seg.orig)
            } else {
                seg.orig
            }
        } else {
            seg.orig.saturating_add(offset - seg.out)
        };
        Some((file, orig.min(file.text.len() as u32)))
    }
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> SourceFile {
        let text: Arc<str> = text.into();
        let mut starts = vec![0u32];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| (i + 1) as u32),
        );
        SourceFile {
            name: name.into(),
            text,
            line_starts: starts.into(),
            map: None,
        }
    }

    /// A preprocessed text named `name`, whose positions are mapped back by `map`.
    pub(crate) fn with_map(
        name: impl Into<String>,
        text: impl Into<Arc<str>>,
        map: SourceMap,
    ) -> SourceFile {
        SourceFile {
            map: Some(Arc::new(map)),
            ..SourceFile::new(name, text)
        }
    }

    /// Whether positions are mapped back to other files (a preprocessed text).
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }

    /// The original file and byte offset that byte `offset` of this text comes from
    /// (this file and `offset` itself when the text was not preprocessed). With `end`,
    /// a byte expanded from a macro maps to the end of the macro's use, else to its
    /// start.
    pub fn origin(&self, offset: u32, end: bool) -> (&SourceFile, u32) {
        self.map
            .as_ref()
            .and_then(|m| m.origin(offset, end))
            .unwrap_or((self, offset))
    }

    /// 1-based line and column (in characters) of a byte offset, in the original file
    /// it comes from (see [`SourceFile::origin`]).
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
        let (file, offset) = self.origin(offset, false);
        file.own_line_col(offset)
    }

    /// [`SourceFile::line_col`] in this text itself.
    fn own_line_col(&self, offset: u32) -> (usize, usize) {
        let mut offset = (offset as usize).min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let offset = offset as u32;
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let col = self.text[start..offset as usize].chars().count() + 1;
        (line + 1, col)
    }

    /// The text of a 1-based line of this text, without its line terminator (empty
    /// past the last line).
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let start = start as usize;
        let end = self
            .line_starts
            .get(line)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    pub fn slice(&self, span: Span) -> &str {
        let mut end = (span.end as usize).min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        let mut start = (span.start as usize).min(end);
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        &self.text[start..end]
    }
}

/// An error located in a source file. Renders as
///
/// ```text
/// prog.dl:3:14: error: variable `z` is not grounded: it appears in the head but in no positive body atom
///     3 | path(x, z) :- edge(x, y).
///       |         ^
/// ```
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
    /// The source line and the caret underline, when the text is at hand.
    pub snippet: Option<(String, usize, usize)>,
}

impl Diagnostic {
    /// A diagnostic pointing at `span` in `file`: in the original file, for a
    /// preprocessed text (see [`SourceFile::origin`]).
    pub fn at(file: &SourceFile, span: Span, message: impl Into<String>) -> Diagnostic {
        let (start_file, start) = file.origin(span.start, false);
        let (end_file, end) = file.origin(span.end.max(span.start.saturating_add(1)) - 1, true);
        let file = start_file;
        let (line, col) = file.own_line_col(start);
        let text = file.line_text(line).to_string();
        let (end_line, end_col) = file.own_line_col(end.max(start));
        let same_file = std::ptr::eq(start_file, end_file);
        let width = if end_line == line && same_file {
            end_col.saturating_sub(col) + 1
        } else {
            text.chars().count().saturating_sub(col - 1).max(1)
        };
        Diagnostic {
            file: file.name.clone(),
            line,
            col,
            message: message.into(),
            snippet: Some((text, col, width)),
        }
    }

    /// A diagnostic for a whole line of a file (fact files), without a snippet.
    pub fn line(
        file: impl Into<String>,
        line: usize,
        col: usize,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            file: file.into(),
            line,
            col,
            message: message.into(),
            snippet: None,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, "error")
    }
}

/// A [`Diagnostic`] shown as a warning (`file:line:col: warning: ...`): see
/// [`Diagnostic::as_warning`].
pub struct Warning<'a>(&'a Diagnostic);

impl fmt::Display for Warning<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f, "warning")
    }
}

impl Diagnostic {
    /// The same text as `Display`, labelled `warning:` instead of `error:`.
    pub fn as_warning(&self) -> Warning<'_> {
        Warning(self)
    }

    fn write(&self, f: &mut fmt::Formatter<'_>, label: &str) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {label}: {}",
            self.file, self.line, self.col, self.message
        )?;
        if let Some((text, col, width)) = &self.snippet {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            let chars: Vec<char> = text.chars().collect();
            let caret = (col - 1).min(chars.len());
            // A long line (a generated rule, a 32 KB session line) is cut to a window
            // around the caret.
            let (from, to) = if chars.len() <= SNIPPET_CHARS {
                (0, chars.len())
            } else {
                let from = caret.saturating_sub(SNIPPET_CONTEXT);
                (from, (from + SNIPPET_CHARS).min(chars.len()))
            };
            let width = (*width).max(1).min(to.saturating_sub(caret).max(1));
            let (open, close) = (
                if from > 0 { "..." } else { "" },
                if to < chars.len() { "..." } else { "" },
            );
            let shown: String = chars[from..to].iter().collect();
            let lead: String = chars[from..caret]
                .iter()
                .map(|&c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let open_pad = " ".repeat(open.len());
            write!(
                f,
                "\n {num} | {open}{shown}{close}\n {pad} | {open_pad}{lead}{}",
                "^".repeat(width)
            )?;
        }
        Ok(())
    }
}

/// Lines longer than this many characters are shown cut, around the caret.
const SNIPPET_CHARS: usize = 120;
/// How much of a cut line is shown before the caret.
const SNIPPET_CONTEXT: usize = 40;

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_and_render() {
        let f = SourceFile::new("p.dl", "a(1).\nb(x) :- c(y).\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(6), (2, 1));
        assert_eq!(f.line_col(8), (2, 3));
        let d = Diagnostic::at(&f, Span::new(8, 9), "bad");
        let s = d.to_string();
        assert!(s.starts_with("p.dl:2:3: error: bad"), "{s}");
        assert!(s.contains("b(x) :- c(y)."), "{s}");
        assert!(s.ends_with("  ^"), "{s}");
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let line = format!("p(1{}).", "+1".repeat(16_000));
        let f = SourceFile::new("s", line.as_str());
        let d = Diagnostic::at(&f, Span::new(515, 516), "too deep");
        let s = d.to_string();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "s:1:516: error: too deep");
        assert!(lines[1].len() < 200 && lines[1].contains("...+1+1"), "{s}");
        // The caret is under the character the column names.
        let caret = lines[2].find('^').expect("a caret");
        assert_eq!(&lines[1][caret..caret + 1], &line[515..516]);
        assert!(lines[1].ends_with("..."), "{s}");
        // Near the start of the line, no leading cut.
        let d = Diagnostic::at(&f, Span::new(2, 3), "x").to_string();
        let lines: Vec<&str> = d.lines().collect();
        assert!(lines[1].starts_with(" 1 | p(1+1"), "{d}");
        assert_eq!(lines[2].find('^'), lines[1].find("1+1"));
        // Near the end, no trailing cut; a caret just past the end still shows.
        let end = line.len();
        let d = Diagnostic::at(&f, Span::new(end, end), "x").to_string();
        let lines: Vec<&str> = d.lines().collect();
        assert!(lines[1].ends_with("+1)."), "{d}");
        assert_eq!(lines[2].find('^'), Some(lines[1].len()), "{d}");
    }

    #[test]
    fn spans_inside_multibyte_characters_do_not_panic() {
        let f = SourceFile::new("p.dl", "a(\"café\") :- b(é).");
        for start in 0..f.text.len() as u32 {
            for end in start..=f.text.len() as u32 {
                let _ = Diagnostic::at(&f, Span { start, end }, "x").to_string();
                let _ = f.slice(Span { start, end });
            }
        }
    }
}
