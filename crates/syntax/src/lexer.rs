//! Tokenizer for dynalog's surface syntax.
//!
//! [`Lexer`] is a cursor over one [`SourceFile`] that hands out one [`Token`] at a time
//! on demand: the parser pulls tokens, nothing is tokenized ahead. It has two modes.
//!
//! * [`Lexer::next_token`] lexes the Soufflé-style language: identifiers
//!   (`[A-Za-z_][A-Za-z0-9_]*`), integer literals (decimal, `0x` hex, `0b` binary),
//!   float literals (`1.5`, `2e3`, `1.5e-3`; refused beyond the range of the language's
//!   32-bit floats, so `1e40` is an error, not an infinity), string literals with the escapes
//!   `\" \\ \n \t \r \'`, and punctuation. It skips whitespace, `// line` and
//!   `/* block */` comments, and rejects C-preprocessor lines (`#include`): program
//!   files go through [`crate::preprocess`] first, and text that does not (facts and
//!   rules typed in a session or sent to a server) may not use directives.
//! * [`Lexer::paper_arg`] lexes one argument of an atom written in the study's rule
//!   syntax (`T(?x, rdf:type, ?y) <- [...]`), where `?x` is a variable and a bare
//!   constant such as `rdf:type`, `http://a.org/x#y` or `<http://a.org/x>` is a single
//!   token that extends to the next delimiter. The parser decides when to use this mode
//!   (see [`Lexer::paper_arrow_follows`] and [`crate::parser`]).
//!
//! Errors are [`Diagnostic`]s pointing at the offending characters. The lexer never
//! panics: every index into the text is checked, and every loop advances.

use crate::source::{Diagnostic, SourceFile, Span};

/// What a token is. Punctuation variants are named after their spelling.
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// `[A-Za-z_][A-Za-z0-9_]*`, including `_` alone.
    Ident(String),
    /// An integer literal; the parser checks that it fits an `i128`.
    Int(u128),
    /// An integer literal with the `u` suffix of unsigned constants (`1u`, `0xffu`).
    Unsigned(u128),
    /// A float literal (with a fraction or an exponent), within the range of a 32-bit
    /// float (`f32::MAX` in magnitude; smaller numbers may round to zero).
    Float(f64),
    /// A string literal with its escapes resolved.
    Str(String),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `,`
    Comma,
    /// `.` (ends a rule, or starts a directive such as `.decl`).
    Dot,
    /// `:`
    Colon,
    /// `:-`
    ColonDash,
    /// `<:`
    Subtype,
    /// `;`
    Semi,
    /// `|`
    Pipe,
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `^` (power)
    Caret,
    /// `!`
    Bang,
    /// `?` (only meaningful in the study's syntax, where [`Lexer::paper_arg`] handles it).
    Question,
    /// `@`
    At,
    /// `$`
    Dollar,
    /// The end of the text.
    Eof,
}

/// A token and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// One argument of an atom in the study's syntax, as lexed by [`Lexer::paper_arg`].
#[derive(Clone, Debug, PartialEq)]
pub enum PaperArg {
    /// `?x`: the name without the `?`; the span covers the `?`.
    Var(String, Span),
    /// `_` alone.
    Wildcard(Span),
    /// A bare constant (its exact text) or a quoted string (escapes resolved).
    Const(String, Span),
}

/// A cursor over a source file. Cheap to copy, so the parser can look ahead by lexing
/// from a copy.
#[derive(Clone, Copy, Debug)]
pub struct Lexer<'a> {
    file: &'a SourceFile,
    src: &'a str,
    pos: usize,
}

/// [`Diagnostic::at`], with the span's end moved to one byte past the start of its last
/// character. `Diagnostic::at` locates the last character at byte `end - 1`, which is
/// not a character boundary when the span ends in a multi-byte character.
pub(crate) fn diagnostic(file: &SourceFile, span: Span, msg: impl Into<String>) -> Diagnostic {
    let text: &str = &file.text;
    let start = (span.start as usize).min(text.len());
    let end = (span.end as usize).clamp(start, text.len());
    let end = match text.get(start..end).and_then(|s| s.char_indices().last()) {
        Some((last, _)) => start + last + 1,
        None => end,
    };
    Diagnostic::at(file, Span::new(start, end), msg)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// Characters that end a bare constant in the study's syntax (besides whitespace).
fn is_paper_delimiter(b: u8) -> bool {
    matches!(b, b',' | b'(' | b')' | b'[' | b']' | b'"')
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `file` (after a byte-order mark, if any).
    pub fn new(file: &'a SourceFile) -> Lexer<'a> {
        let src: &str = &file.text;
        let pos = if src.starts_with('\u{feff}') { 3 } else { 0 };
        Lexer { file, src, pos }
    }

    /// The byte offset of the next character to lex.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Move back (or forward) to `pos`, which must be a position this lexer reported,
    /// such as the start of a token.
    pub fn reset(&mut self, pos: usize) {
        self.pos = pos.min(self.src.len());
    }

    /// Whether the byte at `pos` can start an identifier.
    pub fn ident_starts_at(&self, pos: usize) -> bool {
        self.byte(pos).is_some_and(is_ident_start)
    }

    fn byte(&self, i: usize) -> Option<u8> {
        self.src.as_bytes().get(i).copied()
    }

    fn error(&self, start: usize, end: usize, msg: impl Into<String>) -> Diagnostic {
        diagnostic(self.file, Span::new(start, end), msg)
    }

    /// Skip whitespace and comments. Fails on an unterminated `/* ...` comment.
    pub fn skip_trivia(&mut self) -> Result<(), Diagnostic> {
        loop {
            match (self.byte(self.pos), self.byte(self.pos + 1)) {
                (Some(b), _) if is_space(b) => self.pos += 1,
                (Some(b'/'), Some(b'/')) => {
                    self.pos = match self.src[self.pos..].find('\n') {
                        Some(off) => self.pos + off + 1,
                        None => self.src.len(),
                    };
                }
                (Some(b'/'), Some(b'*')) => match self.src[self.pos + 2..].find("*/") {
                    Some(off) => self.pos += 2 + off + 2,
                    None => {
                        return Err(self.error(
                            self.pos,
                            self.pos + 2,
                            "unterminated block comment (missing `*/`)",
                        ));
                    }
                },
                _ => return Ok(()),
            }
        }
    }

    /// The next token of the Soufflé-style language, or [`TokenKind::Eof`].
    pub fn next_token(&mut self) -> Result<Token, Diagnostic> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(b) = self.byte(start) else {
            return Ok(Token {
                kind: TokenKind::Eof,
                span: Span::new(start, start),
            });
        };
        if is_ident_start(b) {
            let end = self.ident_end(start);
            self.pos = end;
            return Ok(Token {
                kind: TokenKind::Ident(self.src[start..end].to_string()),
                span: Span::new(start, end),
            });
        }
        if b.is_ascii_digit() {
            return self.number();
        }
        if b == b'"' {
            let (text, span) = self.string()?;
            return Ok(Token {
                kind: TokenKind::Str(text),
                span,
            });
        }
        if b == b'#' {
            return Err(self.hash(start));
        }
        let next = self.byte(start + 1);
        let (kind, len) = match (b, next) {
            (b':', Some(b'-')) => (TokenKind::ColonDash, 2),
            (b'<', Some(b':')) => (TokenKind::Subtype, 2),
            (b'<', Some(b'=')) => (TokenKind::Le, 2),
            (b'>', Some(b'=')) => (TokenKind::Ge, 2),
            (b'!', Some(b'=')) => (TokenKind::Ne, 2),
            (b'(', _) => (TokenKind::LParen, 1),
            (b')', _) => (TokenKind::RParen, 1),
            (b'[', _) => (TokenKind::LBracket, 1),
            (b']', _) => (TokenKind::RBracket, 1),
            (b'{', _) => (TokenKind::LBrace, 1),
            (b'}', _) => (TokenKind::RBrace, 1),
            (b',', _) => (TokenKind::Comma, 1),
            (b'.', _) => (TokenKind::Dot, 1),
            (b':', _) => (TokenKind::Colon, 1),
            (b';', _) => (TokenKind::Semi, 1),
            (b'|', _) => (TokenKind::Pipe, 1),
            (b'=', _) => (TokenKind::Eq, 1),
            (b'<', _) => (TokenKind::Lt, 1),
            (b'>', _) => (TokenKind::Gt, 1),
            (b'+', _) => (TokenKind::Plus, 1),
            (b'-', _) => (TokenKind::Minus, 1),
            (b'*', _) => (TokenKind::Star, 1),
            (b'/', _) => (TokenKind::Slash, 1),
            (b'%', _) => (TokenKind::Percent, 1),
            (b'^', _) => (TokenKind::Caret, 1),
            (b'!', _) => (TokenKind::Bang, 1),
            (b'?', _) => (TokenKind::Question, 1),
            (b'@', _) => (TokenKind::At, 1),
            (b'$', _) => (TokenKind::Dollar, 1),
            _ => {
                let c = self.src[start..].chars().next().unwrap_or('\u{fffd}');
                let end = start + c.len_utf8();
                return Err(self.error(
                    start,
                    end,
                    format!("unexpected character `{}`", c.escape_debug()),
                ));
            }
        };
        self.pos = start + len;
        Ok(Token {
            kind,
            span: Span::new(start, start + len),
        })
    }

    fn ident_end(&self, start: usize) -> usize {
        let mut end = start;
        while self.byte(end).is_some_and(is_ident_continue) {
            end += 1;
        }
        end
    }

    /// The error for a `#`: a preprocessor line if it is the first thing on its line.
    fn hash(&self, start: usize) -> Diagnostic {
        let line_start = self.src[..start].rfind('\n').map_or(0, |i| i + 1);
        let at_line_start = self.src[line_start..start]
            .bytes()
            .all(|b| is_space(b) || b >= 0x80);
        if at_line_start {
            let end = self.ident_end(start + 1);
            self.error(
                start,
                end,
                "preprocessor directives (#include, #define, ...) are only run on program files, \
                 not on facts or rules given to a session or a server",
            )
        } else {
            self.error(start, start + 1, "unexpected character `#`")
        }
    }

    /// An integer or float literal starting at `self.pos` (a digit).
    fn number(&mut self) -> Result<Token, Diagnostic> {
        let start = self.pos;
        let digits_end = |lexer: &Self, mut i: usize, radix: u32| {
            while lexer.byte(i).is_some_and(|b| char::from(b).is_digit(radix)) {
                i += 1;
            }
            i
        };
        let radix = match (self.byte(start), self.byte(start + 1)) {
            (Some(b'0'), Some(b'x' | b'X')) => 16,
            (Some(b'0'), Some(b'b' | b'B')) => 2,
            _ => 10,
        };
        let mut is_float = false;
        let end = if radix == 10 {
            let mut end = digits_end(self, start, 10);
            if self.byte(end) == Some(b'.')
                && self.byte(end + 1).is_some_and(|b| b.is_ascii_digit())
            {
                end = digits_end(self, end + 1, 10);
                is_float = true;
            }
            if matches!(self.byte(end), Some(b'e' | b'E')) {
                let mut exp = end + 1;
                if matches!(self.byte(exp), Some(b'+' | b'-')) {
                    exp += 1;
                }
                if self.byte(exp).is_some_and(|b| b.is_ascii_digit()) {
                    end = digits_end(self, exp, 10);
                    is_float = true;
                }
            }
            end
        } else {
            digits_end(self, start + 2, radix)
        };
        // `1u`: an unsigned constant (a `u` right after an integer, nothing after it).
        let unsigned = !is_float
            && self.byte(end) == Some(b'u')
            && self.ident_end(end + 1) == end + 1
            && !(radix != 10 && end == start + 2);
        let digits_until = end;
        let end = if unsigned { end + 1 } else { end };
        // A literal glued to letters (`2x`, `0b12`, `0x`) is malformed.
        let glued_end = self.ident_end(end);
        if glued_end > end || (radix != 10 && end == start + 2) {
            return Err(self.error(
                start,
                glued_end,
                format!("invalid number literal `{}`", &self.src[start..glued_end]),
            ));
        }
        self.pos = end;
        let text = &self.src[start..end];
        let span = Span::new(start, end);
        let kind = if is_float {
            // The language's floats are 32-bit: a literal beyond `f32::MAX` would
            // silently become an infinity.
            match text.parse::<f64>() {
                Ok(v) if (v as f32).is_finite() => TokenKind::Float(v),
                _ => {
                    return Err(self.error(
                        start,
                        end,
                        format!("float literal `{text}` is out of range of a 32-bit float"),
                    ));
                }
            }
        } else {
            let number = &self.src[start..digits_until];
            let digits = if radix == 10 { number } else { &number[2..] };
            match u128::from_str_radix(digits, radix) {
                Ok(v) if unsigned => TokenKind::Unsigned(v),
                Ok(v) => TokenKind::Int(v),
                Err(_) => {
                    return Err(self.error(
                        start,
                        end,
                        format!("integer literal `{text}` is too large"),
                    ));
                }
            }
        };
        Ok(Token { kind, span })
    }

    /// A string literal starting at `self.pos` (a `"`): its value and span.
    fn string(&mut self) -> Result<(String, Span), Diagnostic> {
        let start = self.pos;
        let unterminated = || self.error(start, start + 1, "unterminated string literal");
        let mut out = String::new();
        let mut i = start + 1;
        let mut segment = i;
        loop {
            match self.byte(i) {
                None | Some(b'\n') => return Err(unterminated()),
                Some(b'"') => {
                    out.push_str(&self.src[segment..i]);
                    i += 1;
                    break;
                }
                Some(b'\\') => {
                    out.push_str(&self.src[segment..i]);
                    let c = match self.byte(i + 1) {
                        None | Some(b'\n') => return Err(unterminated()),
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'\'') => '\'',
                        Some(b'n') => '\n',
                        Some(b't') => '\t',
                        Some(b'r') => '\r',
                        Some(_) => {
                            let c = self.src[i + 1..].chars().next().unwrap_or('\u{fffd}');
                            return Err(self.error(
                                i,
                                i + 1 + c.len_utf8(),
                                format!(
                                    "unknown escape sequence `\\{}` in string literal",
                                    c.escape_debug()
                                ),
                            ));
                        }
                    };
                    out.push(c);
                    i += 2;
                    segment = i;
                }
                Some(_) => i += 1,
            }
        }
        self.pos = i;
        Ok((out, Span::new(start, i)))
    }

    /// Lex one argument of an atom in the study's syntax: `?x`, `_`, a quoted string or
    /// a bare constant running up to whitespace or one of `, ( ) [ ] "`. Returns `None`
    /// (having skipped only trivia) when no argument starts here, e.g. at a `)`.
    pub fn paper_arg(&mut self) -> Result<Option<PaperArg>, Diagnostic> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(b) = self.byte(start) else {
            return Ok(None);
        };
        if b == b'"' {
            let (text, span) = self.string()?;
            return Ok(Some(PaperArg::Const(text, span)));
        }
        if b == b'?' {
            let end = self.ident_end(start + 1);
            if end == start + 1 {
                return Err(self.error(start, start + 1, "expected a variable name after `?`"));
            }
            self.pos = end;
            return Ok(Some(PaperArg::Var(
                self.src[start + 1..end].to_string(),
                Span::new(start, end),
            )));
        }
        if is_space(b) || is_paper_delimiter(b) {
            return Ok(None);
        }
        let mut end = start;
        while self
            .byte(end)
            .is_some_and(|b| !is_space(b) && !is_paper_delimiter(b))
        {
            end += 1;
        }
        self.pos = end;
        let span = Span::new(start, end);
        let text = &self.src[start..end];
        Ok(Some(if text == "_" {
            PaperArg::Wildcard(span)
        } else {
            PaperArg::Const(text.to_string(), span)
        }))
    }

    /// Whether the parenthesized list opening at byte `open` (a `(`) is closed by a
    /// matching `)` that is followed, after trivia, by `<-`: the sign of a rule in the
    /// study's syntax. Scans raw text (bare constants may contain `//` or `#`), skipping
    /// quoted strings; never fails. If the list is malformed (an unterminated string or
    /// no matching `)`), falls back to whether the rest of the line contains `<-` and
    /// then `[`, so that the error is reported in the right syntax.
    pub fn paper_arrow_follows(&self, open: usize) -> bool {
        self.paper_head_end(open).unwrap_or_else(|| {
            let rest = &self.src.as_bytes()[open.min(self.src.len())..];
            let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
            line.windows(2).enumerate().any(|(i, w)| {
                w == b"<-"
                    && line[i + 2..]
                        .iter()
                        .find(|&&b| !is_space(b))
                        .is_some_and(|&b| b == b'[')
            })
        })
    }

    /// `Some(arrow follows)` when the list opening at `open` is well formed, else `None`.
    fn paper_head_end(&self, open: usize) -> Option<bool> {
        let mut depth = 0usize;
        let mut i = open;
        while let Some(b) = self.byte(i) {
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        let mut probe = *self;
                        probe.pos = i + 1;
                        return Some(
                            probe.skip_trivia().is_ok()
                                && self.src.as_bytes()[probe.pos..].starts_with(b"<-"),
                        );
                    }
                }
                b'"' => {
                    i += 1;
                    loop {
                        match self.byte(i) {
                            None | Some(b'\n') => return None,
                            Some(b'"') => break,
                            Some(b'\\') => i += 2,
                            Some(_) => i += 1,
                        }
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex_all(text: &str) -> Result<Vec<TokenKind>, Diagnostic> {
        let file = SourceFile::new("t.dl", text);
        let mut lexer = Lexer::new(&file);
        let mut out = Vec::new();
        loop {
            let tok = lexer.next_token()?;
            if tok.kind == TokenKind::Eof {
                return Ok(out);
            }
            out.push(tok.kind);
        }
    }

    #[test]
    fn punctuation_and_operators() {
        use TokenKind::*;
        let toks =
            lex_all("( ) [ ] { } , . : :- <: ; | = != < <= > >= + - * / % ^ ! ? @ $").unwrap();
        assert_eq!(
            toks,
            vec![
                LParen, RParen, LBracket, RBracket, LBrace, RBrace, Comma, Dot, Colon, ColonDash,
                Subtype, Semi, Pipe, Eq, Ne, Lt, Le, Gt, Ge, Plus, Minus, Star, Slash, Percent,
                Caret, Bang, Question, At, Dollar
            ]
        );
        // `x<-3` is `x < -3` in Soufflé syntax.
        assert_eq!(
            lex_all("x<-3").unwrap(),
            vec![Ident("x".into()), Lt, Minus, Int(3)]
        );
    }

    #[test]
    fn numbers() {
        use TokenKind::*;
        assert_eq!(
            lex_all("0 42 0x1F 0b101 1.5 2e3 1.5e-3 2E+2").unwrap(),
            vec![
                Int(0),
                Int(42),
                Int(31),
                Int(5),
                Float(1.5),
                Float(2000.0),
                Float(0.0015),
                Float(200.0)
            ]
        );
        // A `.` not followed by a digit ends a rule.
        assert_eq!(lex_all("1.").unwrap(), vec![Int(1), Dot]);
        assert_eq!(
            lex_all(&u128::MAX.to_string()).unwrap(),
            vec![Int(u128::MAX)]
        );
        // Unsigned constants: a `u` right after an integer.
        assert_eq!(
            lex_all("1u 0x1Fu 0b11u 4294967295u").unwrap(),
            vec![Unsigned(1), Unsigned(31), Unsigned(3), Unsigned(4294967295)]
        );
        for bad in ["2x", "0b12", "0x", "1e5x", "1ux", "1.5u", "0xu", "1e3u"] {
            let err = lex_all(bad).unwrap_err();
            assert!(
                err.message.starts_with("invalid number literal"),
                "{bad}: {err}"
            );
        }
        let err = lex_all("340282366920938463463374607431768211456").unwrap_err();
        assert!(err.message.contains("too large"), "{err}");
        assert!(
            lex_all("1e999")
                .unwrap_err()
                .message
                .contains("out of range")
        );
    }

    #[test]
    fn float_literals_beyond_32_bits_are_errors_at_the_literal() {
        for (text, literal, col) in [("1e40", "1e40", 1), ("x 3.5e38", "3.5e38", 3)] {
            let err = lex_all(text).unwrap_err();
            assert_eq!(
                err.message,
                format!("float literal `{literal}` is out of range of a 32-bit float")
            );
            assert_eq!((err.line, err.col), (1, col), "{text}");
        }
        // The largest 32-bit float and tiny numbers are fine.
        assert_eq!(
            lex_all("3.4028235e38 1e-50").unwrap(),
            vec![TokenKind::Float(3.4028235e38), TokenKind::Float(1e-50)]
        );
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(
            lex_all(r#""a\"b\\c\nd\te\rf" "é""#).unwrap(),
            vec![
                TokenKind::Str("a\"b\\c\nd\te\rf".into()),
                TokenKind::Str("é".into())
            ]
        );
        let err = lex_all("x \"abc\n\"").unwrap_err();
        assert_eq!(
            (err.line, err.col, err.message.as_str()),
            (1, 3, "unterminated string literal")
        );
        let err = lex_all(r#""a\qb""#).unwrap_err();
        assert_eq!(err.col, 3);
        assert!(
            err.message.contains("unknown escape sequence `\\q`"),
            "{err}"
        );
        assert!(lex_all("\"abc\\").is_err());
    }

    #[test]
    fn comments_and_preprocessor() {
        assert_eq!(
            lex_all("// c\na /* b\n c */ b // end").unwrap(),
            vec![TokenKind::Ident("a".into()), TokenKind::Ident("b".into())]
        );
        let err = lex_all("a /* open").unwrap_err();
        assert_eq!((err.line, err.col), (1, 3));
        assert!(err.message.starts_with("unterminated block comment"));
        let err = lex_all("a\n  #include \"x.dl\"").unwrap_err();
        assert_eq!((err.line, err.col), (2, 3));
        assert!(err.message.starts_with("preprocessor directives"));
        assert!(err.message.contains("only run on program files"), "{err}");
        let err = lex_all("a # b").unwrap_err();
        assert_eq!(err.message, "unexpected character `#`");
        let err = lex_all("a ~ b").unwrap_err();
        assert_eq!(
            (err.col, err.message.as_str()),
            (3, "unexpected character `~`")
        );
        let err = lex_all("a é").unwrap_err();
        assert_eq!(err.message, "unexpected character `é`");
    }

    #[test]
    fn byte_order_mark_is_skipped() {
        assert_eq!(
            lex_all("\u{feff}a").unwrap(),
            vec![TokenKind::Ident("a".into())]
        );
    }

    #[test]
    fn paper_args() {
        let file = SourceFile::new(
            "t.dl",
            " ?x, rdf:type ,<http://a.org/b#c>,\"q\\\"\", _, 12)",
        );
        let mut lexer = Lexer::new(&file);
        let mut args = Vec::new();
        loop {
            match lexer.paper_arg().unwrap() {
                Some(a) => args.push(a),
                None => match lexer.next_token().unwrap().kind {
                    TokenKind::Comma => {}
                    _ => break,
                },
            }
        }
        assert_eq!(
            args,
            vec![
                PaperArg::Var("x".into(), Span::new(1, 3)),
                PaperArg::Const("rdf:type".into(), Span::new(5, 13)),
                PaperArg::Const("<http://a.org/b#c>".into(), Span::new(15, 33)),
                PaperArg::Const("q\"".into(), Span::new(34, 39)),
                PaperArg::Wildcard(Span::new(41, 42)),
                PaperArg::Const("12".into(), Span::new(44, 46)),
            ]
        );
        let file = SourceFile::new("t.dl", "? x");
        assert!(Lexer::new(&file).paper_arg().is_err());
    }

    #[test]
    fn paper_arrow_detection() {
        let file = SourceFile::new(
            "t.dl",
            "T(?x, \")\", http://a#b) /* c */ <- [] a(x) :- b(x). c(x) <-[",
        );
        let lexer = Lexer::new(&file);
        assert!(lexer.paper_arrow_follows(1));
        let text: &str = &file.text;
        assert!(!lexer.paper_arrow_follows(text.find("(x)").unwrap()));
        assert!(lexer.paper_arrow_follows(text.rfind("(x)").unwrap()));
        // Malformed heads: decided by the rest of the line.
        let file = SourceFile::new("t.dl", "a(\"unterminated) <- [");
        assert!(Lexer::new(&file).paper_arrow_follows(1));
        let file = SourceFile::new("t.dl", "a(?x <- [b(?x)]");
        assert!(Lexer::new(&file).paper_arrow_follows(1));
        let file = SourceFile::new("t.dl", "a(\"x) :- b(x), x <- 3.");
        assert!(!Lexer::new(&file).paper_arrow_follows(1));
    }
}
