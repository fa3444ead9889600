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
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
    line_starts: Arc<[u32]>,
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
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (usize, usize) {
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

    /// The text of a 1-based line, without its line terminator.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts[line - 1] as usize;
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
    /// A diagnostic pointing at `span` in `file`.
    pub fn at(file: &SourceFile, span: Span, message: impl Into<String>) -> Diagnostic {
        let (line, col) = file.line_col(span.start);
        let text = file.line_text(line).to_string();
        let (end_line, end_col) = file.line_col(span.end.max(span.start + 1) - 1);
        let width = if end_line == line {
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
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file, self.line, self.col, self.message
        )?;
        if let Some((text, col, width)) = &self.snippet {
            let num = self.line.to_string();
            let pad = " ".repeat(num.len());
            let lead: String = text
                .chars()
                .take(col - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            write!(
                f,
                "\n {num} | {text}\n {pad} | {lead}{}",
                "^".repeat((*width).max(1))
            )?;
        }
        Ok(())
    }
}

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
