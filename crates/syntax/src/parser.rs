//! Recursive-descent parser: source text to a [`Program`].
//!
//! The grammar is a Soufflé subset plus the study's rule syntax; both produce the
//! same AST (see [`crate::ast`]):
//!
//! ```text
//! program    := (item | comp | init)*        (components: see [`components`])
//! item       := directive | rule
//! directive  := ".type" NAME ("<:" NAME | "=" NAME ("|" NAME)*
//!                            | "=" "[" [fields] "]"                  (record)
//!                            | "=" NAME "{" [fields] "}" ("|" NAME "{" [fields] "}")*)  (ADT)
//!             | (".number_type" | ".symbol_type") NAME
//!             | ".decl" NAME "(" [NAME ":" NAME ("," NAME ":" NAME)*] ")" QUALIFIER*
//!             | (".input" | ".output" | ".printsize") NAME ("," NAME)*
//!                   ["(" [KEY "=" VALUE ("," KEY "=" VALUE)*] ")"]
//! rule       := atom "." | atom ":-" literal ("," literal)* "."        (Soufflé)
//!             | paper_atom "<-" "[" [paper_lit ("," paper_lit)*] "]" ["."]  (study)
//! literal    := atom | "!" atom | expr CMP expr
//! atom       := QNAME "(" [expr ("," expr)*] ")"
//! expr       := term (("+" | "-") term)*
//! term       := unary (("*" | "/" | "%") unary)*
//! unary      := "-" unary | primary
//! primary    := NAME | "_" | INT | FLOAT | STRING | "(" expr ")" | "nil"
//!             | "[" [expr ("," expr)*] "]" | "$" NAME ["(" [expr ("," expr)*] ")"]
//!             | ("min" | "max") "(" expr ("," expr)+ ")"
//!             | ("to_float" | "to_number" | "to_unsigned") "(" expr ")"
//! fields     := NAME ":" NAME ("," NAME ":" NAME)*
//! paper_lit  := paper_atom | "!" paper_atom
//! paper_atom := NAME "(" [parg ("," parg)*] ")"
//! parg       := "?" NAME | "_" | STRING | bare constant up to whitespace , ( ) [ ] "
//! ```
//!
//! Relation and type names (in atoms, `.decl`, `.type` and I/O directives) may be
//! qualified, `QNAME := NAME ("." NAME)*` written without spaces (`inst.r`): the names
//! that component instances give their relations.
//!
//! A rule is in the study's syntax when its head's closing `)` is followed by `<-`
//! ([`Lexer::paper_arrow_follows`] checks that on the raw text before the head's
//! arguments are lexed, since bare constants such as `http://a.org/x#y` are not
//! Soufflé tokens). Its atoms' arguments are then lexed with [`Lexer::paper_arg`].
//!
//! (The expression rules above are simplified: the full operator precedence is
//! in `binary_op`.)
//!
//! Unsupported Soufflé features (user-defined functors, `as` casts,
//! preprocessor lines left in text that [`crate::preprocess`] did not run on) are
//! rejected with a specific message. Parsing stops
//! at the first error, which points at the offending token.

use crate::ast::{
    AggFunc, Aggregate, ArithOp, Atom, CmpOp, Constructor, Directive, DirectiveKind, Expr, Functor,
    Ident, Item, Literal, Number, Pragma, Program, RelDecl, Rule, Style, TypeDecl, TypeShape,
    UnaryOp,
};
use crate::lexer::{Lexer, PaperArg, Token, TokenKind, diagnostic};
use crate::source::{Diagnostic, SourceFile, Span};

#[path = "components.rs"]
pub mod components;
use components::Components;

/// Parse a whole program, its components expanded (see [`components`]). Stops at the
/// first syntax error.
pub fn parse(file: &SourceFile) -> Result<Program, Diagnostic> {
    parse_with_components(file).map(|(program, _)| program)
}

/// [`parse`], and where the program declares components.
pub fn parse_with_components(file: &SourceFile) -> Result<(Program, Components), Diagnostic> {
    Parser::new(file).program_with_components().map_err(|e| *e)
}

/// Errors are boxed inside the parser: it keeps results small, and so the stack
/// frames of the recursive expression functions (see [`MAX_EXPR_DEPTH`]).
type PError = Box<Diagnostic>;
type PResult<T> = Result<T, PError>;

/// How deeply an expression may nest: the most operators and parentheses on one path
/// from an argument (or a side of a comparison) down to a variable or constant.
///
/// `1 + 2 * x` is 2 deep, `-(x)` is 2 (a minus and a pair of parentheses), `((x))` is
/// 2, `-5` is 0 (a negative literal), and a chain `1 + 1 + ... + 1` of n terms is
/// n - 1 deep, since `+` is left-associative and builds a tree of that height. The
/// parser rejects anything deeper with `expression nested too deeply (more than 128
/// levels)` at the operator or parenthesis that crosses the limit.
///
/// The bound is what keeps every later stage safe on hostile input: the parser itself,
/// analysis, lowering, the engines' expression evaluation, [`crate::Rule::canonical`]
/// and dropping the tree all recurse over expressions, and with at most this many
/// levels each of them fits a 2 MB thread with room to spare, in debug builds too
/// (the tests run them on 2 MB threads). The costliest is the parser's own recursion
/// through parentheses, several frames per level: in a debug build 128 nested pairs
/// need between 512 KB and 1 MB of stack, 256 needed more than 1 MB, too close to the
/// 2 MB of the server's threads. Code that builds syntax trees itself, not through
/// [`parse`], must keep to the same bound; analysis checks it again.
pub const MAX_EXPR_DEPTH: usize = 128;

/// An expression being parsed: the tree, its extent (see below) and its depth (see
/// [`MAX_EXPR_DEPTH`]).
type Sub = (Expr, Span, usize);

/// How many rules one written rule may stand for (its heads times the disjuncts of its
/// body): `(a(x) ; b(x)), (c(x) ; d(x)), ...` doubles with each group, so the expansion is
/// bounded like every other size that input controls.
pub const MAX_EXPANDED_RULES: usize = 1024;

/// Soufflé directives that exist but that dynalog does not support.
const UNSUPPORTED_DIRECTIVES: &[&str] =
    &["functor", "limitsize", "plan", "lattice", "once", "include"];

/// Soufflé's built-in functors (reserved words there). Those dynalog evaluates are
/// parsed by [`Parser::primary`] (`min`, `max`: [`functor_op`]; `to_float`,
/// `to_number`, `to_unsigned`: [`UnaryOp::conversion`]); the others are a located
/// error.
const FUNCTORS: &[&str] = &[
    "cat",
    "strlen",
    "substr",
    "ord",
    "to_number",
    "to_string",
    "to_float",
    "to_unsigned",
    "itou",
    "itof",
    "ftoi",
    "ftou",
    "utoi",
    "utof",
    "range",
    "as",
];

/// The built-in functors dynalog evaluates: `min(a, b, ...)` and `max(a, b, ...)`.
fn functor_op(name: &str) -> Option<ArithOp> {
    match name {
        "min" => Some(ArithOp::Min),
        "max" => Some(ArithOp::Max),
        _ => None,
    }
}

/// The infix keyword operators (`x band y`).
fn infix_keyword(name: &str) -> Option<ArithOp> {
    Some(match name {
        "band" => ArithOp::BAnd,
        "bor" => ArithOp::BOr,
        "bxor" => ArithOp::BXor,
        "bshl" => ArithOp::BShl,
        "bshr" => ArithOp::BShr,
        "bshru" => ArithOp::BShru,
        "land" => ArithOp::LAnd,
        "lor" => ArithOp::LOr,
        "lxor" => ArithOp::LXor,
        _ => return None,
    })
}

/// The prefix keyword operators (`bnot x`).
fn prefix_keyword(name: &str) -> Option<UnaryOp> {
    match name {
        "bnot" => Some(UnaryOp::BNot),
        "lnot" => Some(UnaryOp::LNot),
        _ => None,
    }
}

/// A binary operator and its precedence, loosest 0, as in Soufflé: `lor`, `lxor`,
/// `land`, `bor`, `bxor`, `band`, the shifts, `+ -`, `* / %` (all left-associative).
/// Tighter still are the prefix operators (`-`, `bnot`, `lnot`) and tightest `^`
/// (right-associative), so `-x ^ 2` is `-(x ^ 2)`, as in Soufflé 2.5.
fn binary_op(kind: &TokenKind) -> Option<(ArithOp, u8)> {
    let op = match kind {
        TokenKind::Plus => ArithOp::Add,
        TokenKind::Minus => ArithOp::Sub,
        TokenKind::Star => ArithOp::Mul,
        TokenKind::Slash => ArithOp::Div,
        TokenKind::Percent => ArithOp::Mod,
        TokenKind::Ident(name) => infix_keyword(name)?,
        _ => return None,
    };
    let prec = match op {
        ArithOp::LOr => 0,
        ArithOp::LXor => 1,
        ArithOp::LAnd => 2,
        ArithOp::BOr => 3,
        ArithOp::BXor => 4,
        ArithOp::BAnd => 5,
        ArithOp::BShl | ArithOp::BShr | ArithOp::BShru => 6,
        ArithOp::Add | ArithOp::Sub => 7,
        ArithOp::Mul | ArithOp::Div | ArithOp::Mod => 8,
        ArithOp::Pow | ArithOp::Min | ArithOp::Max => return None,
    };
    Some((op, prec))
}

/// Soufflé's built-in constraints, written like atoms in a rule body.
const CONSTRAINTS: &[&str] = &["match", "contains"];

/// Soufflé's aggregate keywords.
const AGGREGATES: &[&str] = &["count", "sum", "min", "max", "mean"];

struct Parser<'a> {
    file: &'a SourceFile,
    lexer: Lexer<'a>,
    /// The next token, once someone has looked at it.
    peeked: Option<Token>,
    /// End of the last consumed token.
    prev_end: u32,
    /// How many parentheses and unary minuses enclose the expression being parsed:
    /// the depth of the parser's own recursion (see [`MAX_EXPR_DEPTH`]).
    depth: usize,
}

impl<'a> Parser<'a> {
    fn new(file: &'a SourceFile) -> Parser<'a> {
        Parser {
            file,
            lexer: Lexer::new(file),
            peeked: None,
            prev_end: 0,
            depth: 0,
        }
    }

    // ---- token plumbing -------------------------------------------------------

    fn peek(&mut self) -> PResult<&Token> {
        let tok = match self.peeked.take() {
            Some(tok) => tok,
            None => self.lexer.next_token()?,
        };
        Ok(self.peeked.insert(tok))
    }

    /// The kind of the next token.
    fn peek_kind(&mut self) -> PResult<&TokenKind> {
        Ok(&self.peek()?.kind)
    }

    /// The token after the next one, without consuming anything.
    fn peek2(&mut self) -> PResult<Token> {
        self.peek()?;
        let mut ahead = self.lexer;
        Ok(ahead.next_token()?)
    }

    fn bump(&mut self) -> PResult<Token> {
        let tok = match self.peeked.take() {
            Some(tok) => tok,
            None => self.lexer.next_token()?,
        };
        self.prev_end = tok.span.end;
        Ok(tok)
    }

    /// Consume the next token if it is `kind`.
    fn eat(&mut self, kind: &TokenKind) -> PResult<Option<Token>> {
        if self.peek_kind()? == kind {
            self.bump().map(Some)
        } else {
            Ok(None)
        }
    }

    /// Consume a token of `kind`, or fail with "expected {what}, found ...".
    fn expect(&mut self, kind: &TokenKind, what: &str) -> PResult<Token> {
        match self.eat(kind)? {
            Some(tok) => Ok(tok),
            None => Err(self.expected(what)),
        }
    }

    /// Consume an identifier, or fail with "expected {what}, found ...".
    fn expect_ident(&mut self, what: &str) -> PResult<Ident> {
        if let TokenKind::Ident(_) = self.peek_kind()? {
            let tok = self.bump()?;
            Ok(self.ident(tok))
        } else {
            Err(self.expected(what))
        }
    }

    /// Give the lookahead token back to the lexer, so that the next read can use
    /// another lexing mode.
    fn unpeek(&mut self) {
        if let Some(tok) = self.peeked.take() {
            self.lexer.reset(tok.span.start as usize);
        }
    }

    fn ident(&self, tok: Token) -> Ident {
        let name = match tok.kind {
            TokenKind::Ident(name) => name,
            _ => self.file.slice(tok.span).to_string(),
        };
        Ident {
            name,
            span: tok.span,
        }
    }

    /// From the start of `start` to the end of the last consumed token.
    fn span_from(&self, start: Span) -> Span {
        Span {
            start: start.start,
            end: self.prev_end.max(start.end),
        }
    }

    // ---- errors ---------------------------------------------------------------

    fn error(&self, span: Span, msg: impl Into<String>) -> PError {
        Box::new(diagnostic(self.file, span, msg))
    }

    /// How a token is named in messages: its text in backquotes, or "end of input".
    fn describe(&self, tok: &Token) -> String {
        if tok.kind == TokenKind::Eof {
            return "end of input".to_string();
        }
        let text = self.file.slice(tok.span);
        if text.chars().count() > 40 {
            let short: String = text.chars().take(37).collect();
            format!("`{short}...`")
        } else {
            format!("`{text}`")
        }
    }

    /// "expected {what}, found <next token>", pointing at the next token.
    fn expected(&mut self, what: &str) -> PError {
        match self.peek() {
            Ok(tok) => {
                let tok = tok.clone();
                self.error(
                    tok.span,
                    format!("expected {what}, found {}", self.describe(&tok)),
                )
            }
            Err(lex_error) => lex_error,
        }
    }

    /// An error for a terminator missing right after the last consumed token, pointing
    /// just past that token (where the terminator belongs), not at the next line.
    fn missing(&mut self, what: &str) -> PError {
        let at = self.prev_end as usize;
        self.error(Span::new(at, at), format!("missing {what}"))
    }

    /// Whether the next token starts on a later line than the last consumed token
    /// ended (or is the end of input): then a missing terminator is the likely cause.
    fn next_on_new_line(&mut self) -> PResult<bool> {
        let prev_end = self.prev_end as usize;
        let tok = self.peek()?;
        let start = tok.span.start as usize;
        Ok(tok.kind == TokenKind::Eof
            || self
                .file
                .text
                .get(prev_end..start)
                .is_some_and(|gap| gap.contains('\n')))
    }

    // ---- items ----------------------------------------------------------------

    /// A directive, after its `.` (`.decl a, b(...)` is one declaration per name).
    fn directive(&mut self, dot: Token) -> PResult<Vec<Item>> {
        let name = match self.peek()? {
            Token {
                kind: TokenKind::Ident(name),
                span,
            } if span.start == dot.span.end => name.clone(),
            _ => {
                return Err(self.error(
                    dot.span,
                    "expected a directive name such as `.decl` right after `.`",
                ));
            }
        };
        let keyword = self.bump()?;
        let start = dot.span;
        if name == "decl" {
            return Ok(self.rel_decls(start)?.into_iter().map(Item::Decl).collect());
        }
        let item = match name.as_str() {
            "type" => self.type_decl(start).map(Item::Type),
            "number_type" | "symbol_type" => {
                let name_ident = self.expect_ident(&format!("a type name after `.{name}`"))?;
                let base = name.trim_end_matches("_type").to_string();
                let span = start.to(name_ident.span);
                Ok(Item::Type(TypeDecl {
                    name: name_ident,
                    of: vec![Ident {
                        name: base,
                        span: start.to(keyword.span),
                    }],
                    shape: TypeShape::Named,
                    bare: false,
                    span,
                }))
            }
            "input" => self
                .io_directive(start, DirectiveKind::Input)
                .map(Item::Directive),
            "output" => self
                .io_directive(start, DirectiveKind::Output)
                .map(Item::Directive),
            "printsize" => self
                .io_directive(start, DirectiveKind::PrintSize)
                .map(Item::Directive),
            "pragma" => self.pragma(start).map(Item::Pragma),
            other if UNSUPPORTED_DIRECTIVES.contains(&other) => Err(self.error(
                start.to(keyword.span),
                format!("the `.{other}` directive is not supported"),
            )),
            other => Err(self.error(
                start.to(keyword.span),
                format!("unknown directive `.{other}`"),
            )),
        };
        Ok(vec![item?])
    }

    /// `"key" "value"` or `"key"`, after `.pragma`.
    fn pragma(&mut self, start: Span) -> PResult<Pragma> {
        let key = match self.peek_kind()? {
            TokenKind::Str(_) => self.string()?,
            _ => {
                return Err(self.expected(
                    "a quoted option name after `.pragma`, such as `.pragma \"magic-transform\" \"*\"`",
                ));
            }
        };
        let value = match self.peek_kind()? {
            TokenKind::Str(_) => Some(self.string()?),
            _ => None,
        };
        Ok(Pragma {
            key,
            value,
            span: self.span_from(start),
        })
    }

    /// The string token that is next (checked by the caller), escapes resolved.
    fn string(&mut self) -> PResult<String> {
        match self.bump()?.kind {
            TokenKind::Str(s) => Ok(s),
            _ => Err(self.expected("a string")),
        }
    }

    /// `.type Name <: base`, `.type Name = base`, `.type U = A | B`, a record type
    /// `.type R = [a: number, b: R]` or an algebraic data type
    /// `.type T = A {x: number} | B {}`, after `.type`.
    fn type_decl(&mut self, start: Span) -> PResult<TypeDecl> {
        let name = self.expect_ident("a type name after `.type`")?;
        let name = self.qualify(name)?;
        let mut of = Vec::new();
        let mut shape = TypeShape::Named;
        if self.eat(&TokenKind::Subtype)?.is_some() {
            let base = self.expect_ident("a type name after `<:`")?;
            of.push(self.qualify(base)?);
        } else if self.eat(&TokenKind::Eq)?.is_some() {
            if self.eat(&TokenKind::LBracket)?.is_some() {
                let fields = self.typed_fields(&TokenKind::RBracket, "`]`")?;
                shape = TypeShape::Record(fields);
            } else {
                let mut constructors: Vec<Constructor> = Vec::new();
                loop {
                    let member = self.expect_ident("a type name")?;
                    if self.eat(&TokenKind::LBrace)?.is_some() {
                        if !of.is_empty() {
                            return Err(self.error(
                                member.span,
                                "a union of types cannot have constructors: write every branch `Name {...}`",
                            ));
                        }
                        let fields = self.typed_fields(&TokenKind::RBrace, "`}`")?;
                        constructors.push(Constructor {
                            name: member,
                            fields,
                        });
                    } else if !constructors.is_empty() {
                        return Err(self.expected(&format!(
                            "`{{` and the fields of the constructor `{}` (`{} {{}}` has none)",
                            member.name, member.name
                        )));
                    } else {
                        of.push(self.qualify(member)?);
                    }
                    if self.eat(&TokenKind::Pipe)?.is_none() {
                        break;
                    }
                }
                if !constructors.is_empty() {
                    shape = TypeShape::Adt(constructors);
                }
            }
        } else if self.next_on_new_line()? {
            // `.type Name` alone on its line: a symbol type, as in Soufflé's old
            // syntax (the analysis warns).
            let span = self.span_from(start);
            return Ok(TypeDecl {
                of: vec![Ident {
                    name: "symbol".into(),
                    span: name.span,
                }],
                name,
                shape,
                bare: true,
                span,
            });
        } else {
            return Err(self.expected(&format!("`<:` or `=` after the type name `{}`", name.name)));
        }
        let span = self.span_from(start);
        Ok(TypeDecl {
            name,
            of,
            shape,
            bare: false,
            span,
        })
    }

    /// `name: type, ...` up to `close` (consumed), after the opening bracket.
    fn typed_fields(
        &mut self,
        close: &TokenKind,
        close_text: &str,
    ) -> PResult<Vec<(Ident, Ident)>> {
        let mut fields: Vec<(Ident, Ident)> = Vec::new();
        if self.eat(close)?.is_some() {
            return Ok(fields);
        }
        loop {
            let field = self.expect_ident("a field name")?;
            self.expect(
                &TokenKind::Colon,
                &format!("`:` and a type after the field `{}`", field.name),
            )?;
            let ty = self.expect_ident(&format!("a type name after `{}:`", field.name))?;
            let ty = self.qualify(ty)?;
            if fields.iter().any(|(f, _)| f.name == field.name) {
                return Err(self.error(
                    field.span,
                    format!("field `{}` is declared twice", field.name),
                ));
            }
            fields.push((field, ty));
            if self.eat(&TokenKind::Comma)?.is_some() {
                continue;
            }
            if self.eat(close)?.is_some() {
                return Ok(fields);
            }
            return Err(self.expected(&format!("`,` or {close_text} after a field")));
        }
    }

    /// `.decl r(a: number, b: symbol) qualifier*`, after `.decl`.
    /// `.decl a, b(columns) qualifiers`, after `.decl`: one declaration per name, with the
    /// same columns and qualifiers, each spanning the whole directive.
    fn rel_decls(&mut self, start: Span) -> PResult<Vec<RelDecl>> {
        let mut names = Vec::new();
        let first = self.expect_ident("a relation name after `.decl`")?;
        let mut last = self.qualify(first)?;
        while self.eat(&TokenKind::Comma)?.is_some() {
            names.push(last);
            let next = self.expect_ident("a relation name after `,`")?;
            last = self.qualify(next)?;
        }
        let decl = self.rel_decl(start, last)?;
        let mut decls: Vec<RelDecl> = names
            .into_iter()
            .map(|name| RelDecl {
                name,
                ..decl.clone()
            })
            .collect();
        decls.push(decl);
        Ok(decls)
    }

    /// The columns and qualifiers of the relation `name`, after `.decl name`.
    fn rel_decl(&mut self, start: Span, name: Ident) -> PResult<RelDecl> {
        self.expect(
            &TokenKind::LParen,
            &format!("`(` after the relation name `{}`", name.name),
        )?;
        let mut columns = Vec::new();
        if self.eat(&TokenKind::RParen)?.is_none() {
            loop {
                let attr = self.expect_ident("an attribute name")?;
                self.expect(
                    &TokenKind::Colon,
                    &format!("`:` and a type after the attribute `{}`", attr.name),
                )?;
                let ty = self.expect_ident(&format!("a type name after `{}:`", attr.name))?;
                let ty = self.qualify(ty)?;
                let column = format!("{}: {}", attr.name, ty.name);
                columns.push((attr, ty));
                if self.eat(&TokenKind::Comma)?.is_some() {
                    continue;
                }
                if self.eat(&TokenKind::RParen)?.is_some() {
                    break;
                }
                return Err(self.expected(&format!("`,` or `)` after the column `{column}`")));
            }
        }
        // Qualifiers: identifiers not followed by `(` (a rule always starts `name(`),
        // nor by `.name` (a rule for a relation of an instance, `inst.r(x) :- ...`).
        let mut qualifiers = Vec::new();
        let mut choice = Vec::new();
        let mut choice_span = None;
        while let TokenKind::Ident(q) = self.peek_kind()? {
            let is_choice = q == "choice";
            if self.peek2()?.kind == TokenKind::LParen || self.qualified_name_follows()? {
                break;
            }
            if is_choice && self.peek2()?.kind == TokenKind::Minus {
                let first = self.bump()?.span;
                self.bump()?;
                let domain = self.expect_ident("`domain` after `choice-`")?;
                if domain.name != "domain" {
                    return Err(self.error(domain.span, "expected `choice-domain`"));
                }
                choice = self.choice_domains()?;
                choice_span = Some(self.span_from(first));
                continue;
            }
            let tok = self.bump()?;
            qualifiers.push(self.ident(tok));
        }
        let span = self.span_from(start);
        Ok(RelDecl {
            name,
            columns,
            qualifiers,
            choice,
            choice_span,
            span,
        })
    }

    /// The domains after `choice-domain`: `x`, `(x, y)`, separated by commas.
    fn choice_domains(&mut self) -> PResult<Vec<Vec<Ident>>> {
        let mut domains = Vec::new();
        loop {
            if self.eat(&TokenKind::LParen)?.is_some() {
                let mut attrs = vec![self.expect_ident("an attribute name")?];
                while self.eat(&TokenKind::Comma)?.is_some() {
                    attrs.push(self.expect_ident("an attribute name")?);
                }
                self.expect(&TokenKind::RParen, "`)` after the domain's attributes")?;
                domains.push(attrs);
            } else {
                domains.push(vec![
                    self.expect_ident("an attribute name or `(` after `choice-domain`")?,
                ]);
            }
            if self.eat(&TokenKind::Comma)?.is_none() {
                return Ok(domains);
            }
        }
    }

    /// `.input a, b(key=value, ...)` and the like, after the keyword.
    fn io_directive(&mut self, start: Span, kind: DirectiveKind) -> PResult<Directive> {
        let keyword = match kind {
            DirectiveKind::Input => ".input",
            DirectiveKind::Output => ".output",
            DirectiveKind::PrintSize => ".printsize",
        };
        let first = self.expect_ident(&format!("a relation name after `{keyword}`"))?;
        let mut relations = vec![self.qualify(first)?];
        while self.eat(&TokenKind::Comma)?.is_some() {
            let next = self.expect_ident("a relation name after `,`")?;
            relations.push(self.qualify(next)?);
        }
        let mut params = Vec::new();
        if self.eat(&TokenKind::LParen)?.is_some() && self.eat(&TokenKind::RParen)?.is_none() {
            loop {
                let key = self.expect_ident("a parameter name such as `IO` or `filename`")?;
                self.expect(
                    &TokenKind::Eq,
                    &format!("`=` after the parameter name `{}`", key.name),
                )?;
                let value = self.param_value(&key)?;
                params.push((key, value));
                if self.eat(&TokenKind::Comma)?.is_some() {
                    continue;
                }
                if self.eat(&TokenKind::RParen)?.is_some() {
                    break;
                }
                return Err(self.expected("`,` or `)` after a parameter"));
            }
        }
        let span = self.span_from(start);
        Ok(Directive {
            kind,
            relations,
            params,
            span,
        })
    }

    /// A parameter value: a string (escapes resolved), or a bare name or number taken
    /// as written (`IO=stdout`, `headers=true`, `delimiter=-1`).
    fn param_value(&mut self, key: &Ident) -> PResult<String> {
        let what = format!(
            "a value for the parameter `{}` (a string, a name or a number)",
            key.name
        );
        match self.peek_kind()? {
            TokenKind::Str(_) => match self.bump()?.kind {
                TokenKind::Str(s) => Ok(s),
                _ => Err(self.expected(&what)),
            },
            TokenKind::Ident(_) | TokenKind::Int(_) | TokenKind::Float(_) => {
                let tok = self.bump()?;
                Ok(self.file.slice(tok.span).to_string())
            }
            TokenKind::Minus => {
                let minus = self.bump()?;
                match self.peek_kind()? {
                    TokenKind::Int(_) | TokenKind::Float(_) => {
                        let num = self.bump()?;
                        Ok(self.file.slice(minus.span.to(num.span)).to_string())
                    }
                    _ => Err(self.expected("a number after `-`")),
                }
            }
            _ => Err(self.expected(&what)),
        }
    }

    // ---- rules ----------------------------------------------------------------

    /// A rule or fact, after the head's relation name.
    /// A rule in either syntax. A Soufflé rule with several heads or with disjunctions
    /// is several rules (see [`Parser::souffle_rule`]).
    fn rule(&mut self, name: Token) -> PResult<Vec<Rule>> {
        let ident = self.ident(name);
        let ident = self.qualify(ident)?;
        let open = match self.peek()? {
            Token {
                kind: TokenKind::LParen,
                span,
            } => span.start as usize,
            _ => {
                return Err(self.expected(&format!(
                    "`(` after the relation name `{}` (atoms without arguments are written `{}()`)",
                    ident.name, ident.name
                )));
            }
        };
        if self.lexer.paper_arrow_follows(open) {
            Ok(vec![self.paper_rule(ident)?])
        } else {
            self.souffle_rule(ident)
        }
    }

    /// `head.` or `head, ... :- body.`, where a body is conjunctions separated by `;`
    /// and a conjunction's items are literals or parenthesized bodies. As in Soufflé,
    /// the rule stands for one rule per head and per disjunct of the body in disjunctive
    /// normal form (`a(x), b(x) :- c(x) ; d(x).` is four rules), in that order, each
    /// with the whole rule's span.
    fn souffle_rule(&mut self, name: Ident) -> PResult<Vec<Rule>> {
        let mut heads = vec![self.atom(name)?];
        while self.eat(&TokenKind::Comma)?.is_some() {
            let name = self.expect_ident("another head atom after `,`")?;
            let name = self.qualify(name)?;
            heads.push(self.atom(name)?);
        }
        let (bodies, end) = match self.peek_kind()?.clone() {
            TokenKind::Dot if heads.len() == 1 => (vec![Vec::new()], self.bump()?.span),
            TokenKind::Dot => {
                let span = self.peek()?.span;
                return Err(self.error(
                    span,
                    "a fact has one atom: several heads need a body (`a(x), b(x) :- c(x).`)",
                ));
            }
            TokenKind::ColonDash => {
                self.bump()?;
                let bodies = self.disjunction(None)?;
                match self.peek_kind()?.clone() {
                    TokenKind::Dot => (bodies, self.bump()?.span),
                    TokenKind::RParen => {
                        let span = self.peek()?.span;
                        return Err(self.error(span, "`)` without a matching `(` in the rule body"));
                    }
                    _ if self.next_on_new_line()? => {
                        return Err(self.missing("`.` at the end of the rule"));
                    }
                    _ => return Err(self.expected("`,`, `;` or `.` after a body literal")),
                }
            }
            TokenKind::Le => {
                let le = self.bump()?.span;
                if heads.len() > 1 {
                    return Err(self.error(le, "a subsumption rule has one atom before `<=`"));
                }
                let name = self.expect_ident("the dominating atom after `<=`")?;
                let name = self.qualify(name)?;
                let dominating = self.atom(name)?;
                // As in Soufflé, the condition is required.
                self.expect(
                    &TokenKind::ColonDash,
                    "`:-` and the condition after the dominating atom",
                )?;
                let mut bodies = self.disjunction(None)?;
                let end = self.expect(&TokenKind::Dot, "`.` at the end of the subsumption rule")?;
                let span = heads[0].span.to(end.span);
                if bodies.len() > 1 {
                    return Err(
                        self.error(span, "disjunctions in subsumption rules are not supported")
                    );
                }
                let mut body = vec![Literal::Positive(dominating)];
                body.append(&mut bodies[0]);
                return Ok(vec![Rule {
                    span,
                    head: heads.remove(0),
                    body,
                    style: Style::Subsumption,
                }]);
            }
            _ if self.next_on_new_line()? => {
                return Err(self.missing("`.` at the end of the fact"));
            }
            _ => return Err(self.expected("`:-` or `.` after the rule head")),
        };
        let span = heads[0].span.to(end);
        // Refused before the rules are built: each would copy its head and body.
        let count = heads.len().saturating_mul(bodies.len());
        if count > MAX_EXPANDED_RULES {
            return Err(self.error(
                span,
                format!(
                    "this rule stands for {count} rules (heads × disjuncts), more than {MAX_EXPANDED_RULES}"
                ),
            ));
        }
        let mut rules = Vec::with_capacity(count);
        for head in heads {
            for body in &bodies {
                rules.push(Rule {
                    span,
                    head: head.clone(),
                    body: body.clone(),
                    style: Style::Souffle,
                });
            }
        }
        Ok(rules)
    }

    /// A body: conjunctions separated by `;`, up to the `.` (or the `)` closing the
    /// group opened at `open`); its disjuncts, each a list of literals.
    fn disjunction(&mut self, open: Option<Span>) -> PResult<Vec<Vec<Literal>>> {
        let mut bodies = Vec::new();
        loop {
            bodies.extend(self.conjunction()?);
            if bodies.len() > MAX_EXPANDED_RULES {
                let span = self.peek()?.span;
                return Err(self.too_many_disjuncts(open.unwrap_or(span)));
            }
            if self.eat(&TokenKind::Semi)?.is_none() {
                return Ok(bodies);
            }
        }
    }

    /// Items separated by `,`: literals and parenthesized bodies; the disjuncts of
    /// their conjunction (the product of the groups' disjuncts).
    fn conjunction(&mut self) -> PResult<Vec<Vec<Literal>>> {
        let mut product: Vec<Vec<Literal>> = vec![Vec::new()];
        loop {
            if self.group_follows()? {
                let open = self.bump()?.span;
                self.enter(open)?;
                let inner = self.disjunction(Some(open));
                self.leave();
                let inner = inner?;
                self.expect(&TokenKind::RParen, "`)` to close the parenthesized body")?;
                if product.len().saturating_mul(inner.len()) > MAX_EXPANDED_RULES {
                    return Err(self.too_many_disjuncts(open));
                }
                product = product
                    .iter()
                    .flat_map(|prefix| {
                        inner.iter().map(move |alt| {
                            let mut body = prefix.clone();
                            body.extend(alt.iter().cloned());
                            body
                        })
                    })
                    .collect();
            } else {
                let literal = self.literal()?;
                for body in &mut product {
                    body.push(literal.clone());
                }
            }
            if self.eat(&TokenKind::Comma)?.is_none() {
                return Ok(product);
            }
        }
    }

    /// Whether a `(` opens a parenthesized body rather than an expression: before its
    /// matching `)`, outside the arguments of functor calls, there is something no
    /// expression holds: a `;`, a `,`, a comparison operator, a `!` or an atom
    /// (`name(` where `name` is not a functor). Linear in the tokens scanned; past
    /// [`MAX_EXPR_DEPTH`] nested parentheses it answers yes, and parsing the group then
    /// refuses it as too deep.
    fn group_follows(&mut self) -> PResult<bool> {
        if self.peek_kind()? != &TokenKind::LParen {
            return Ok(false);
        }
        let mut ahead = self.lexer;
        // Per open parenthesis: whether it holds a functor's arguments.
        let mut open = vec![false];
        let mut after_functor = false;
        loop {
            let token = ahead.next_token()?;
            let in_call = open.iter().any(|&call| call);
            let functor = std::mem::take(&mut after_functor);
            match token.kind {
                TokenKind::LParen if open.len() > MAX_EXPR_DEPTH => return Ok(true),
                TokenKind::LParen => open.push(functor),
                TokenKind::RParen => {
                    open.pop();
                    if open.is_empty() {
                        return Ok(false);
                    }
                }
                TokenKind::Semi
                | TokenKind::Comma
                | TokenKind::Bang
                | TokenKind::Eq
                | TokenKind::Ne
                | TokenKind::Lt
                | TokenKind::Le
                | TokenKind::Gt
                | TokenKind::Ge
                    if !in_call =>
                {
                    return Ok(true);
                }
                TokenKind::Ident(name) => {
                    let mut next = ahead;
                    if next.next_token()?.kind == TokenKind::LParen {
                        if FUNCTORS.contains(&name.as_str()) || functor_op(&name).is_some() {
                            after_functor = true;
                        } else {
                            return Ok(true);
                        }
                    }
                }
                TokenKind::Dot | TokenKind::Eof => return Ok(false),
                _ => {}
            }
        }
    }

    fn too_many_disjuncts(&self, at: Span) -> PError {
        self.error(
            at,
            format!("the disjunctions of this rule stand for more than {MAX_EXPANDED_RULES} rules"),
        )
    }

    /// `name(expr, ...)`, after the name.
    fn atom(&mut self, relation: Ident) -> PResult<Atom> {
        self.expect(
            &TokenKind::LParen,
            &format!("`(` after the relation name `{}`", relation.name),
        )?;
        let mut args = Vec::new();
        let close = match self.eat(&TokenKind::RParen)? {
            Some(close) => close,
            None => loop {
                args.push(self.expr()?.0);
                if self.eat(&TokenKind::Comma)?.is_some() {
                    continue;
                }
                if let Some(close) = self.eat(&TokenKind::RParen)? {
                    break close;
                }
                return Err(
                    self.expected(&format!("`)` after the arguments of `{}`", relation.name))
                );
            },
        };
        Ok(Atom {
            span: relation.span.to(close.span),
            relation,
            args,
        })
    }

    /// A body literal of a Soufflé-style rule.
    fn literal(&mut self) -> PResult<Literal> {
        let tok = self.peek()?.clone();
        match &tok.kind {
            TokenKind::Bang => {
                self.bump()?;
                if let Some(f) = self.constraint_next()? {
                    return self.constraint(f, Some(tok.span));
                }
                let name = self.expect_ident("a relation name after `!`")?;
                let name = self.qualify(name)?;
                let atom = self.atom(name)?;
                let span = tok.span.to(atom.span);
                return Ok(Literal::Negative(atom, span));
            }
            TokenKind::Ident(_) if self.qualified_name_follows()? => {
                let name = self.bump()?;
                let name = self.qualify(self.ident(name))?;
                return Ok(Literal::Positive(self.atom(name)?));
            }
            TokenKind::Ident(name) if self.peek2()?.kind == TokenKind::LParen => {
                if let Some(f) = Functor::from_name(name).filter(|f| f.is_constraint()) {
                    return self.constraint(f, None);
                }
                // An atom, unless it turns out to be a functor call in a comparison.
                if !FUNCTORS.contains(&name.as_str())
                    && functor_op(name).is_none()
                    && infix_keyword(name).is_none()
                    && prefix_keyword(name).is_none()
                {
                    let name = self.bump()?;
                    let atom = self.atom(self.ident(name))?;
                    if let Some(op) = self.operator_next()? {
                        return Err(self.error(
                            atom.relation.span,
                            format!(
                                "`{}(...)` is an atom and cannot be used as a value before `{op}` \
                                 (functors are not supported)",
                                atom.relation.name
                            ),
                        ));
                    }
                    return Ok(Literal::Positive(atom));
                }
            }
            _ => {}
        }
        // A comparison.
        let (lhs, lhs_ext) = self.expr()?;
        let op = match self.peek_kind()? {
            TokenKind::Eq => CmpOp::Eq,
            TokenKind::Ne => CmpOp::Ne,
            TokenKind::Lt => CmpOp::Lt,
            TokenKind::Le => CmpOp::Le,
            TokenKind::Gt => CmpOp::Gt,
            TokenKind::Ge => CmpOp::Ge,
            TokenKind::Comma | TokenKind::Dot | TokenKind::Semi if matches!(lhs, Expr::Var(_)) => {
                let name = self.file.slice(lhs_ext).to_string();
                return Err(self.error(
                    lhs_ext,
                    format!(
                        "expected an atom or a comparison, found `{name}` \
                         (atoms without arguments are written `{name}()`)"
                    ),
                ));
            }
            _ => {
                return Err(self.expected(
                    "a comparison operator (`=`, `!=`, `<`, `<=`, `>`, `>=`) after the expression",
                ));
            }
        };
        self.bump()?;
        let (rhs, rhs_ext) = self.expr()?;
        Ok(Literal::Compare {
            op,
            lhs,
            rhs,
            span: lhs_ext.to(rhs_ext),
        })
    }

    /// The string constraint (`contains`, `match`) whose call comes next, if one does.
    fn constraint_next(&mut self) -> PResult<Option<Functor>> {
        let TokenKind::Ident(name) = self.peek_kind()? else {
            return Ok(None);
        };
        let f = Functor::from_name(name).filter(|f| f.is_constraint());
        Ok(if f.is_some() && self.peek2()?.kind == TokenKind::LParen {
            f
        } else {
            None
        })
    }

    /// `contains(a, b)` or `match(p, s)` as a body literal, negated if `bang` is the span
    /// of a `!` before it: the comparison `f(..) != 0` (`= 0` when negated).
    fn constraint(&mut self, f: Functor, bang: Option<Span>) -> PResult<Literal> {
        let (call, span, _) = self.string_functor(f)?;
        let zero = Expr::Num(Number::Int(0), span);
        Ok(Literal::Compare {
            op: if bang.is_some() { CmpOp::Eq } else { CmpOp::Ne },
            lhs: call,
            rhs: zero,
            span: bang.map_or(span, |b| b.to(span)),
        })
    }

    /// The spelling of the next token if it is a comparison or binary operator.
    fn operator_next(&mut self) -> PResult<Option<&'static str>> {
        Ok(match self.peek_kind()? {
            TokenKind::Eq => Some(CmpOp::Eq.as_str()),
            TokenKind::Ne => Some(CmpOp::Ne.as_str()),
            TokenKind::Lt => Some(CmpOp::Lt.as_str()),
            TokenKind::Le => Some(CmpOp::Le.as_str()),
            TokenKind::Gt => Some(CmpOp::Gt.as_str()),
            TokenKind::Ge => Some(CmpOp::Ge.as_str()),
            TokenKind::Caret => Some(ArithOp::Pow.as_str()),
            kind => binary_op(kind).map(|(op, _)| op.as_str()),
        })
    }

    // ---- expressions ------------------------------------------------------------
    //
    // Each returns the expression and its extent, which unlike the expression's own
    // span includes enclosing parentheses (so `(x + 1) * 2` spans from the `(`).

    /// An expression: binary operators by precedence (see [`binary_op`]).
    fn expr(&mut self) -> PResult<(Expr, Span)> {
        let (expr, ext, _) = self.binary(0)?;
        Ok((expr, ext))
    }

    /// `unary (op unary)*` for the operators of precedence `min_prec` or tighter, by
    /// precedence climbing: left-associative, and the recursion is at most as deep as
    /// there are precedence levels. The tree grows one level per operator, so each
    /// operator is checked against the bound.
    fn binary(&mut self, min_prec: u8) -> PResult<Sub> {
        let (mut lhs, mut ext, mut depth) = self.unary()?;
        while let Some((op, prec)) = binary_op(self.peek_kind()?) {
            if prec < min_prec {
                break;
            }
            let op_tok = self.bump()?;
            let (rhs, rhs_ext, rhs_depth) = self.binary(prec + 1)?;
            depth = self.one_deeper(depth.max(rhs_depth), op_tok.span)?;
            ext = ext.to(rhs_ext);
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                span: ext,
            };
        }
        Ok((lhs, ext, depth))
    }

    /// The depth of an expression whose deepest part is `inner` levels deep, or the
    /// error at `at` (the operator or parenthesis) if that crosses [`MAX_EXPR_DEPTH`].
    fn one_deeper(&self, inner: usize, at: Span) -> PResult<usize> {
        if inner >= MAX_EXPR_DEPTH {
            return Err(self.too_deep(at));
        }
        Ok(inner + 1)
    }

    fn too_deep(&self, at: Span) -> PError {
        self.error(
            at,
            format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)"),
        )
    }

    /// Enter one level of recursion at `at` (a `(` or a unary `-`), refusing to go
    /// deeper than [`MAX_EXPR_DEPTH`] before recursing, so that the parser's own stack
    /// stays bounded. Paired with [`Parser::leave`].
    fn enter(&mut self, at: Span) -> PResult<()> {
        if self.depth >= MAX_EXPR_DEPTH {
            return Err(self.too_deep(at));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// `("-" | "bnot" | "lnot") unary | power`. A minus before a numeric literal makes
    /// a negative literal (`-5`), unless `^` follows: `-2 ^ 2` is `-(2 ^ 2)`.
    fn unary(&mut self) -> PResult<Sub> {
        let tok = self.peek()?.clone();
        let prefix = match &tok.kind {
            TokenKind::Minus => None,
            TokenKind::Ident(name) => match prefix_keyword(name) {
                Some(op) => Some(op),
                None => return self.power(),
            },
            _ => return self.power(),
        };
        self.bump()?;
        if prefix.is_none()
            && matches!(self.peek_kind()?, TokenKind::Int(_) | TokenKind::Float(_))
            && self.peek2()?.kind != TokenKind::Caret
        {
            let (expr, span) = self.negative_literal(tok.span)?;
            return Ok((expr, span, 0));
        }
        self.enter(tok.span)?;
        let inner = self.unary();
        self.leave();
        let (inner, ext, depth) = inner?;
        let depth = self.one_deeper(depth, tok.span)?;
        let span = tok.span.to(ext);
        let expr = match prefix {
            None => Expr::Neg(Box::new(inner), span),
            Some(op) => Expr::Unary(op, Box::new(inner), span),
        };
        Ok((expr, span, depth))
    }

    /// `primary ("^" unary)?`: right-associative, and its right operand may be a
    /// prefix operation (`2 ^ -x`).
    fn power(&mut self) -> PResult<Sub> {
        let (lhs, ext, depth) = self.primary()?;
        let Some(caret) = self.eat(&TokenKind::Caret)? else {
            return Ok((lhs, ext, depth));
        };
        self.enter(caret.span)?;
        let rhs = self.unary();
        self.leave();
        let (rhs, rhs_ext, rhs_depth) = rhs?;
        let depth = self.one_deeper(depth.max(rhs_depth), caret.span)?;
        let ext = ext.to(rhs_ext);
        let expr = Expr::Binary {
            op: ArithOp::Pow,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            span: ext,
        };
        Ok((expr, ext, depth))
    }

    /// `"(" expr ")"`, a functor call, or a leaf. (The recursive path is kept in small
    /// functions, and the leaves in [`Parser::leaf`], so that each nesting level costs
    /// little stack.)
    fn primary(&mut self) -> PResult<Sub> {
        let (functor, conversion, string) = match self.peek_kind()? {
            TokenKind::Ident(name) => (
                functor_op(name),
                UnaryOp::conversion(name),
                Functor::from_name(name).filter(|f| !f.is_constraint()),
            ),
            _ => (None, None, None),
        };
        if (functor.is_some() || conversion.is_some() || string.is_some())
            && self.peek2()?.kind == TokenKind::LParen
        {
            if let Some(op) = conversion {
                return self.conversion(op);
            }
            if let Some(op) = functor {
                return self.functor(op);
            }
            if let Some(f) = string {
                return self.string_functor(f);
            }
        }
        let Some(open) = self.eat(&TokenKind::LParen)? else {
            let (expr, span) = self.leaf()?;
            return Ok((expr, span, 0));
        };
        self.enter(open.span)?;
        let inner = self.binary(0);
        self.leave();
        let (inner, _, depth) = inner?;
        let close = self.expect(
            &TokenKind::RParen,
            "`)` to close the parenthesized expression",
        )?;
        let depth = self.one_deeper(depth, open.span)?;
        Ok((inner, open.span.to(close.span), depth))
    }

    /// `min(a, b, ...)` or `max(a, b, ...)`: at least two arguments, nested from the
    /// left (`min(min(a, b), c)`).
    fn functor(&mut self, op: ArithOp) -> PResult<Sub> {
        let (name, open, args, span) = self.call(op.as_str())?;
        let mut args = args.into_iter();
        let (Some((mut expr, _, mut depth)), true) = (args.next(), args.len() >= 1) else {
            return Err(self.error(
                span,
                format!(
                    "`{0}` takes at least two arguments: `{0}(a, b, ...)`",
                    op.as_str()
                ),
            ));
        };
        for (rhs, _, rhs_depth) in args {
            depth = self.one_deeper(depth.max(rhs_depth), name.span)?;
            expr = Expr::Binary {
                op,
                lhs: Box::new(expr),
                rhs: Box::new(rhs),
                span,
            };
        }
        let depth = self.one_deeper(depth, open.span)?;
        Ok((expr, span, depth))
    }

    /// `to_float(x)`, `to_number(x)` or `to_unsigned(x)`: one argument.
    fn conversion(&mut self, op: UnaryOp) -> PResult<Sub> {
        let (_, open, args, span) = self.call(op.as_str())?;
        let mut args = args.into_iter();
        let (Some((arg, _, depth)), None) = (args.next(), args.next()) else {
            return Err(self.error(
                span,
                format!("`{0}` takes one argument: `{0}(x)`", op.as_str()),
            ));
        };
        let depth = self.one_deeper(depth, open.span)?;
        Ok((Expr::Unary(op, Box::new(arg), span), span, depth))
    }

    /// A functor on symbols (`cat(a, b, ...)`, `strlen(s)`, ...) or a string
    /// constraint (`contains(a, b)`, `match(p, s)`), at its name.
    fn string_functor(&mut self, f: Functor) -> PResult<Sub> {
        let (_, open, args, span) = self.call(f.as_str())?;
        let (min, max) = f.arity();
        if args.len() < min || args.len() > max {
            let usage = match f {
                Functor::Cat => "`cat(a, b, ...)` takes at least one argument".to_string(),
                Functor::Substr => "`substr(s, i, n)` takes three arguments".to_string(),
                Functor::Range => {
                    "`range(from, to)` or `range(from, to, step)` takes two or three arguments"
                        .to_string()
                }
                Functor::Contains | Functor::Match => {
                    format!("`{}(a, b)` takes two arguments", f.as_str())
                }
                Functor::Autoinc => "`autoinc()` takes no argument".to_string(),
                _ => format!("`{0}(x)` takes one argument", f.as_str()),
            };
            return Err(self.error(span, usage));
        }
        let mut depth = 0;
        let mut exprs = Vec::with_capacity(args.len());
        for (e, _, d) in args {
            depth = depth.max(d);
            exprs.push(e);
        }
        let depth = self.one_deeper(depth, open.span)?;
        Ok((Expr::Call(f, exprs, span), span, depth))
    }

    /// A call `name(args...)`, at its name: the spans of the name and the `(`, the
    /// arguments, and the span of the whole call.
    fn call(&mut self, name: &str) -> PResult<(Token, Token, Vec<Sub>, Span)> {
        let name_tok = self.bump()?;
        let open = self.bump()?;
        self.enter(open.span)?;
        let args = self.functor_args(name);
        self.leave();
        let (args, close) = args?;
        let span = name_tok.span.to(close);
        Ok((name_tok, open, args, span))
    }

    /// The arguments of the functor `name` after its `(`, and the span of its `)`.
    fn functor_args(&mut self, name: &str) -> PResult<(Vec<Sub>, Span)> {
        let mut args = Vec::new();
        if let Some(close) = self.eat(&TokenKind::RParen)? {
            return Ok((args, close.span));
        }
        loop {
            args.push(self.binary(0)?);
            if self.eat(&TokenKind::Comma)?.is_some() {
                continue;
            }
            if let Some(close) = self.eat(&TokenKind::RParen)? {
                return Ok((args, close.span));
            }
            return Err(self.expected(&format!("`,` or `)` in `{name}(...)`")));
        }
    }

    /// A numeric literal after a unary minus at `minus`.
    fn negative_literal(&mut self, minus: Span) -> PResult<(Expr, Span)> {
        let num = self.bump()?;
        let span = minus.to(num.span);
        let value = match num.kind {
            TokenKind::Int(v) if v <= 1u128 << 127 => Number::Int((v as i128).wrapping_neg()),
            TokenKind::Float(v) => Number::Float(-v),
            _ => return Err(self.too_large(span)),
        };
        Ok((Expr::Num(value, span), span))
    }

    fn too_large(&self, span: Span) -> PError {
        self.error(
            span,
            format!(
                "integer literal `{}` does not fit in 128 bits",
                self.file.slice(span)
            ),
        )
    }

    /// A variable, `_`, a literal, or an error naming the unsupported construct.
    fn leaf(&mut self) -> PResult<(Expr, Span)> {
        let tok = self.peek()?.clone();
        let span = tok.span;
        let expr = match tok.kind {
            TokenKind::Ident(name) => {
                if name == "_" {
                    self.bump()?;
                    return Ok((Expr::Wildcard(span), span));
                }
                if name == "nil" {
                    self.bump()?;
                    return Ok((Expr::Nil(span), span));
                }
                if infix_keyword(&name).is_some() {
                    return Err(self.error(
                        span,
                        format!("`{name}` is an infix operator (`x {name} y`), not a value"),
                    ));
                }
                let next = self.peek2()?.kind;
                let aggregate = AGGREGATES.contains(&name.as_str());
                if next == TokenKind::LParen {
                    let msg = if FUNCTORS.contains(&name.as_str()) {
                        format!("the `{name}` functor is not supported")
                    } else if aggregate {
                        format!("`{name}` aggregates are not supported")
                    } else if CONSTRAINTS.contains(&name.as_str()) {
                        format!(
                            "`{name}(...)` is a constraint: it stands alone in a rule's body \
                             (`{name}(a, b)` or `!{name}(a, b)`), not inside an expression"
                        )
                    } else {
                        format!(
                            "`{name}(...)` cannot appear inside an expression \
                             (atoms do not nest, and the only functors are `min`, `max`, \
                             `to_float`, `to_number` and `to_unsigned`)"
                        )
                    };
                    return Err(self.error(span, msg));
                }
                if aggregate
                    && matches!(
                        next,
                        TokenKind::Colon
                            | TokenKind::Ident(_)
                            | TokenKind::Int(_)
                            | TokenKind::Float(_)
                            | TokenKind::Unsigned(_)
                            | TokenKind::Str(_)
                            | TokenKind::Minus
                            | TokenKind::LBrace
                    )
                {
                    let agg = self.aggregate(&name)?;
                    let span = agg.span;
                    return Ok((Expr::Aggregate(Box::new(agg)), span));
                }
                let tok = self.bump()?;
                Expr::Var(self.ident(tok))
            }
            TokenKind::Int(v) => {
                let Ok(v) = i128::try_from(v) else {
                    return Err(self.too_large(span));
                };
                self.bump()?;
                Expr::Num(Number::Int(v), span)
            }
            TokenKind::Float(v) => {
                self.bump()?;
                Expr::Num(Number::Float(v), span)
            }
            TokenKind::Unsigned(v) => {
                self.bump()?;
                Expr::Num(Number::Unsigned(v), span)
            }
            TokenKind::Str(s) => {
                self.bump()?;
                Expr::Str(s, span)
            }
            TokenKind::At => {
                return Err(self.error(
                    span,
                    "user-defined functors (`@name(...)`) are not supported",
                ));
            }
            TokenKind::Dollar => {
                self.bump()?;
                let name = self.expect_ident("a constructor's name after `$`")?;
                let (args, end) = match self.eat(&TokenKind::LParen)? {
                    Some(_) => self.record_args(&TokenKind::RParen, "`)`")?,
                    None => (Vec::new(), name.span),
                };
                Expr::Record(Some(name), args, span.to(end))
            }
            TokenKind::LBracket => {
                self.bump()?;
                let (args, end) = self.record_args(&TokenKind::RBracket, "`]`")?;
                Expr::Record(None, args, span.to(end))
            }
            TokenKind::Question => {
                return Err(self.error(
                    span,
                    "`?x` variables are only allowed in rules written `head <- [body, ...]`; \
                     in `:-` rules write `x`",
                ));
            }
            _ => return Err(self.expected("an expression")),
        };
        Ok((expr, span))
    }

    /// A record's or constructor's arguments up to `close` (consumed), after the
    /// opening bracket; and the closing bracket's span.
    fn record_args(&mut self, close: &TokenKind, close_text: &str) -> PResult<(Vec<Expr>, Span)> {
        let at = self.peek()?.span;
        self.enter(at)?;
        let result = self.record_args_inner(close, close_text);
        self.leave();
        result
    }

    fn record_args_inner(
        &mut self,
        close: &TokenKind,
        close_text: &str,
    ) -> PResult<(Vec<Expr>, Span)> {
        let mut args = Vec::new();
        if let Some(end) = self.eat(close)? {
            return Ok((args, end.span));
        }
        loop {
            args.push(self.expr()?.0);
            if self.eat(&TokenKind::Comma)?.is_some() {
                continue;
            }
            if let Some(end) = self.eat(close)? {
                return Ok((args, end.span));
            }
            return Err(self.expected(&format!("`,` or {close_text} in a record")));
        }
    }

    /// `count : BODY`, or `sum|min|max|mean EXPR : BODY`, after the function's name,
    /// where `BODY` is `{ literals }` (with `;` disjunctions) or a single atom.
    fn aggregate(&mut self, name: &str) -> PResult<Aggregate> {
        let keyword = self.bump()?.span;
        let func =
            AggFunc::from_name(name).ok_or_else(|| self.error(keyword, "not an aggregate"))?;
        self.enter(keyword)?;
        let result = self.aggregate_rest(func, keyword);
        self.leave();
        result
    }

    fn aggregate_rest(&mut self, func: AggFunc, keyword: Span) -> PResult<Aggregate> {
        let target = if func == AggFunc::Count {
            None
        } else {
            if self.peek_kind()? == &TokenKind::Colon {
                let span = self.peek()?.span;
                return Err(self.error(
                    span,
                    format!(
                        "`{}` needs the expression to aggregate before `:` (`{} y : {{ r(y) }}`)",
                        func.as_str(),
                        func.as_str()
                    ),
                ));
            }
            Some(self.expr()?.0)
        };
        self.expect(&TokenKind::Colon, "`:` before the aggregate's body")?;
        let (body, end) = if self.peek_kind()? == &TokenKind::LBrace {
            let open = self.bump()?.span;
            let mut bodies = self.disjunction(Some(open))?;
            let close = self.expect(&TokenKind::RBrace, "`}` to close the aggregate's body")?;
            if bodies.len() != 1 {
                return Err(self.error(
                    open.to(close.span),
                    "disjunctions in aggregate bodies are not supported (nor are they in Soufflé)",
                ));
            }
            (bodies.remove(0), close.span)
        } else {
            let name = self.expect_ident("`{` or an atom after `:`")?;
            let atom = self.atom(name)?;
            let end = atom.span;
            (vec![Literal::Positive(atom)], end)
        };
        Ok(Aggregate {
            func,
            target,
            body,
            span: keyword.to(end),
        })
    }

    // ---- the study's rule syntax ------------------------------------------------

    /// `head <- [atom, ...]` with an optional trailing `.`, after the head's name.
    fn paper_rule(&mut self, name: Ident) -> PResult<Rule> {
        let head = self.paper_atom(name)?;
        let lt = self.expect(&TokenKind::Lt, "`<-` after the rule head")?;
        match self.peek()? {
            Token {
                kind: TokenKind::Minus,
                span,
            } if span.start == lt.span.end => {
                self.bump()?;
            }
            _ => return Err(self.error(lt.span, "expected `<-` after the rule head")),
        }
        self.expect(&TokenKind::LBracket, "`[` after `<-`")?;
        let mut body = Vec::new();
        let mut end = match self.eat(&TokenKind::RBracket)? {
            Some(close) => close.span,
            None => loop {
                body.push(self.paper_literal()?);
                if self.eat(&TokenKind::Comma)?.is_some() {
                    continue;
                }
                if let Some(close) = self.eat(&TokenKind::RBracket)? {
                    break close.span;
                }
                if let TokenKind::Semi = self.peek_kind()? {
                    let span = self.peek()?.span;
                    return Err(
                        self.error(span, "disjunction (`;`) in rule bodies is not supported")
                    );
                }
                return Err(self.expected("`,` or `]` after a body atom"));
            },
        };
        // A trailing `.` is tolerated, unless it starts a directive such as `.decl`.
        if let Token {
            kind: TokenKind::Dot,
            span,
        } = self.peek()?
        {
            let span = *span;
            if !self.lexer.ident_starts_at(span.end as usize) {
                self.bump()?;
                end = span;
            }
        }
        Ok(Rule {
            span: head.span.to(end),
            head,
            body,
            style: Style::Paper,
        })
    }

    /// A body literal in the study's syntax: an atom, or a negated one.
    fn paper_literal(&mut self) -> PResult<Literal> {
        if let Some(bang) = self.eat(&TokenKind::Bang)? {
            let name = self.expect_ident("a relation name after `!`")?;
            let atom = self.paper_atom(name)?;
            let span = bang.span.to(atom.span);
            return Ok(Literal::Negative(atom, span));
        }
        let name = self.expect_ident("a body atom")?;
        self.paper_atom(name).map(Literal::Positive)
    }

    /// `name(arg, ...)` in the study's syntax, after the name: `?x` is a variable and
    /// anything else (bare or quoted) a symbol constant.
    fn paper_atom(&mut self, relation: Ident) -> PResult<Atom> {
        self.expect(
            &TokenKind::LParen,
            &format!("`(` after the relation name `{}`", relation.name),
        )?;
        let mut args = Vec::new();
        let close = loop {
            self.unpeek();
            match self.lexer.paper_arg()? {
                Some(PaperArg::Var(name, span)) => args.push(Expr::Var(Ident { name, span })),
                Some(PaperArg::Wildcard(span)) => args.push(Expr::Wildcard(span)),
                Some(PaperArg::Const(text, span)) => args.push(Expr::Str(text, span)),
                None => {
                    if args.is_empty()
                        && let Some(close) = self.eat(&TokenKind::RParen)?
                    {
                        break close;
                    }
                    return Err(self.expected(&format!("an argument of `{}`", relation.name)));
                }
            }
            if self.eat(&TokenKind::Comma)?.is_some() {
                continue;
            }
            if let Some(close) = self.eat(&TokenKind::RParen)? {
                break close;
            }
            return Err(self.expected(&format!("`)` after the arguments of `{}`", relation.name)));
        };
        Ok(Atom {
            span: relation.span.to(close.span),
            relation,
            args,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SourceFile {
        SourceFile::new("t.dl", text)
    }

    fn parse_ok(text: &str) -> Program {
        match parse(&file(text)) {
            Ok(p) => p,
            Err(e) => panic!("unexpected error:\n{e}"),
        }
    }

    fn parse_err(text: &str) -> Diagnostic {
        match parse(&file(text)) {
            Ok(p) => panic!("expected an error for {text:?}, got {p:#?}"),
            Err(e) => e,
        }
    }

    /// Assert that `text` fails at `line:col` with exactly `message`.
    #[track_caller]
    fn assert_err(text: &str, line: usize, col: usize, message: &str) {
        let e = parse_err(text);
        assert_eq!(
            (e.line, e.col, e.message.as_str()),
            (line, col, message),
            "for {text:?}:\n{e}"
        );
    }

    /// [`assert_err`] for a message that starts with `prefix`.
    fn assert_err_starts(text: &str, line: usize, col: usize, prefix: &str) {
        let e = parse_err(text);
        assert!(
            (e.line, e.col) == (line, col) && e.message.starts_with(prefix),
            "for {text:?}, expected {line}:{col}: {prefix}...; got:\n{e}"
        );
    }

    fn rules(text: &str) -> Vec<Rule> {
        parse_ok(text)
            .items
            .into_iter()
            .map(|item| match item {
                Item::Rule(r) => r,
                other => panic!("not a rule: {other:?}"),
            })
            .collect()
    }

    fn only_rule(text: &str) -> Rule {
        let mut rs = rules(text);
        assert_eq!(rs.len(), 1, "{rs:#?}");
        rs.remove(0)
    }

    /// The source text a span covers.
    fn text_of(text: &str, span: Span) -> &str {
        &text[span.start as usize..span.end as usize]
    }

    /// A compact rendering of an expression, fully parenthesized.
    fn show(e: &Expr) -> String {
        match e {
            Expr::Var(i) => i.name.clone(),
            Expr::Wildcard(_) => "_".into(),
            Expr::Str(s, _) => format!("{s:?}"),
            Expr::Num(Number::Int(v), _) => v.to_string(),
            Expr::Num(Number::Float(v), _) => format!("{v:?}"),
            Expr::Num(Number::Unsigned(v), _) => format!("{v}u"),
            Expr::Neg(inner, _) => format!("(neg {})", show(inner)),
            Expr::Unary(op, inner, _) => format!("({} {})", op.as_str(), show(inner)),
            Expr::Binary { op, lhs, rhs, .. } => {
                format!("({} {} {})", show(lhs), op.as_str(), show(rhs))
            }
            Expr::Call(f, args, _) => {
                let args: Vec<String> = args.iter().map(show).collect();
                format!("{}({})", f.as_str(), args.join(", "))
            }
            Expr::Record(branch, args, _) => {
                let args: Vec<String> = args.iter().map(show).collect();
                match branch {
                    Some(b) => format!("${}({})", b.name, args.join(", ")),
                    None => format!("[{}]", args.join(", ")),
                }
            }
            Expr::Nil(_) => "nil".into(),
            Expr::Field { record, index, .. } => format!("{}.{index}", show(record)),
            Expr::Aggregate(a) => {
                let body: Vec<String> = a.body.iter().map(show_literal).collect();
                let target = a.target.as_ref().map(|t| format!(" {}", show(t)));
                format!(
                    "({}{} : {{ {} }})",
                    a.func.as_str(),
                    target.unwrap_or_default(),
                    body.join(", ")
                )
            }
        }
    }

    fn show_atom(a: &Atom) -> String {
        let args: Vec<String> = a.args.iter().map(show).collect();
        format!("{}({})", a.relation.name, args.join(", "))
    }

    fn show_literal(l: &Literal) -> String {
        match l {
            Literal::Positive(a) => show_atom(a),
            Literal::Negative(a, _) => format!("!{}", show_atom(a)),
            Literal::Compare { op, lhs, rhs, .. } => {
                format!("{} {} {}", show(lhs), op.as_str(), show(rhs))
            }
        }
    }

    fn show_rule(r: &Rule) -> String {
        let body: Vec<String> = r.body.iter().map(show_literal).collect();
        if body.is_empty() {
            format!("{}.", show_atom(&r.head))
        } else {
            format!("{} :- {}.", show_atom(&r.head), body.join(", "))
        }
    }

    /// The expression in `x(<expr>).`
    fn expr_of(src: &str) -> Expr {
        let text = format!("x({src}).");
        let mut rule = only_rule(&text);
        assert_eq!(rule.head.args.len(), 1);
        rule.head.args.remove(0)
    }

    // ---- directives -------------------------------------------------------------

    #[test]
    fn type_declarations() {
        let text = ".type Name <: symbol\n.type N = number\n.type U = A | B | C\n\
                    .number_type Id\n.symbol_type S\n.type Old\n.type Last";
        let p = parse_ok(text);
        let types: Vec<(String, Vec<String>, &str)> = p
            .items
            .iter()
            .map(|item| match item {
                Item::Type(t) => (
                    t.name.name.clone(),
                    t.of.iter().map(|i| i.name.clone()).collect(),
                    text_of(text, t.span),
                ),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            types,
            vec![
                ("Name".into(), vec!["symbol".into()], ".type Name <: symbol"),
                ("N".into(), vec!["number".into()], ".type N = number"),
                (
                    "U".into(),
                    vec!["A".into(), "B".into(), "C".into()],
                    ".type U = A | B | C"
                ),
                ("Id".into(), vec!["number".into()], ".number_type Id"),
                ("S".into(), vec!["symbol".into()], ".symbol_type S"),
                // Soufflé's old form, a symbol type (also at the end of the input).
                ("Old".into(), vec!["symbol".into()], ".type Old"),
                ("Last".into(), vec!["symbol".into()], ".type Last"),
            ]
        );
        let bare: Vec<bool> = (p.items.iter())
            .map(|i| matches!(i, Item::Type(t) if t.bare))
            .collect();
        assert_eq!(bare, [false, false, false, false, false, true, true]);
        let Item::Type(t) = &p.items[0] else {
            unreachable!()
        };
        assert_eq!(text_of(text, t.name.span), "Name");
        assert_eq!(text_of(text, t.of[0].span), "symbol");
        let Item::Type(t) = &p.items[3] else {
            unreachable!()
        };
        assert_eq!(text_of(text, t.of[0].span), ".number_type");
    }

    #[test]
    fn relation_declarations() {
        let text = ".decl edge(a: number, b:symbol) brie output\n.decl e()\n.decl p(x: N)\nedge(1, \"x\").";
        let p = parse_ok(text);
        assert_eq!(p.items.len(), 4);
        let Item::Decl(d) = &p.items[0] else {
            panic!("{:?}", p.items[0])
        };
        assert_eq!(d.name.name, "edge");
        let cols: Vec<(&str, &str)> = d
            .columns
            .iter()
            .map(|(a, t)| (a.name.as_str(), t.name.as_str()))
            .collect();
        assert_eq!(cols, vec![("a", "number"), ("b", "symbol")]);
        let quals: Vec<&str> = d.qualifiers.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(quals, vec!["brie", "output"]);
        assert_eq!(
            text_of(text, d.span),
            ".decl edge(a: number, b:symbol) brie output"
        );
        assert_eq!(text_of(text, d.columns[1].1.span), "symbol");
        let Item::Decl(d) = &p.items[1] else { panic!() };
        assert!(d.columns.is_empty() && d.qualifiers.is_empty());
        assert_eq!(text_of(text, d.span), ".decl e()");
        assert!(matches!(&p.items[3], Item::Rule(r) if r.head.relation.name == "edge"));
    }

    #[test]
    fn qualifier_names_that_start_a_rule_are_not_qualifiers() {
        let p = parse_ok(".decl r(x: number) eqrel\nbrie(1).\ninline(2) :- brie(2).");
        let Item::Decl(d) = &p.items[0] else { panic!() };
        assert_eq!(d.qualifiers.len(), 1);
        assert_eq!(p.items.len(), 3);
    }

    fn directive(item: &Item) -> &Directive {
        match item {
            Item::Directive(d) => d,
            other => panic!("not a directive: {other:?}"),
        }
    }

    #[test]
    fn io_directives() {
        let text = ".input r\n.input a, b\n\
                    .input r(IO=\"file\", filename=\"x\\\\y.csv\", delimiter=\",\")\n\
                    .output r\n.output r(IO=stdout, headers=true, n=-3, f=1.5)\n\
                    .printsize r\n.output a, b()";
        let p = parse_ok(text);
        type Summary<'t> = (
            DirectiveKind,
            Vec<&'t str>,
            Vec<(&'t str, &'t str)>,
            &'t str,
        );
        let summary: Vec<Summary> = p
            .items
            .iter()
            .map(|item| {
                let d = directive(item);
                (
                    d.kind,
                    d.relations.iter().map(|r| r.name.as_str()).collect(),
                    d.params
                        .iter()
                        .map(|(k, v)| (k.name.as_str(), v.as_str()))
                        .collect(),
                    text_of(text, d.span),
                )
            })
            .collect();
        use DirectiveKind::*;
        assert_eq!(
            summary,
            vec![
                (Input, vec!["r"], vec![], ".input r"),
                (Input, vec!["a", "b"], vec![], ".input a, b"),
                (
                    Input,
                    vec!["r"],
                    vec![("IO", "file"), ("filename", "x\\y.csv"), ("delimiter", ",")],
                    ".input r(IO=\"file\", filename=\"x\\\\y.csv\", delimiter=\",\")"
                ),
                (Output, vec!["r"], vec![], ".output r"),
                (
                    Output,
                    vec!["r"],
                    vec![
                        ("IO", "stdout"),
                        ("headers", "true"),
                        ("n", "-3"),
                        ("f", "1.5")
                    ],
                    ".output r(IO=stdout, headers=true, n=-3, f=1.5)"
                ),
                (PrintSize, vec!["r"], vec![], ".printsize r"),
                (Output, vec!["a", "b"], vec![], ".output a, b()"),
            ]
        );
    }

    #[test]
    fn directive_then_rule() {
        let p = parse_ok(".output path\npath(x, y) :- edge(x, y).");
        assert_eq!(p.items.len(), 2);
        assert_eq!(directive(&p.items[0]).relations.len(), 1);
    }

    // ---- Soufflé-style rules --------------------------------------------------------

    #[test]
    fn facts_and_rules() {
        let text = "e(\"a\", 1).\nh(x, y) :- a(x, z), b(z, y).\np() :- q().\nq().";
        let rs = rules(text);
        let shown: Vec<String> = rs.iter().map(show_rule).collect();
        assert_eq!(
            shown,
            vec![
                "e(\"a\", 1).",
                "h(x, y) :- a(x, z), b(z, y).",
                "p() :- q().",
                "q().",
            ]
        );
        assert!(rs.iter().all(|r| r.style == Style::Souffle));
        assert!(rs[0].body.is_empty());
        assert_eq!(text_of(text, rs[0].span), "e(\"a\", 1).");
        assert_eq!(text_of(text, rs[1].span), "h(x, y) :- a(x, z), b(z, y).");
        assert_eq!(text_of(text, rs[1].head.span), "h(x, y)");
        assert_eq!(text_of(text, rs[1].head.relation.span), "h");
        assert_eq!(text_of(text, rs[1].body[1].span()), "b(z, y)");
        let Expr::Var(y) = &rs[1].head.args[1] else {
            panic!()
        };
        assert_eq!((y.name.as_str(), text_of(text, y.span)), ("y", "y"));
    }

    #[test]
    fn rules_spanning_lines_with_comments() {
        let text = "// header\npath(x, z) :- /* join */\n  path(x, y), // left\n  edge(y, z).\n";
        let r = only_rule(text);
        assert_eq!(show_rule(&r), "path(x, z) :- path(x, y), edge(y, z).");
        assert_eq!(
            text_of(text, r.span),
            "path(x, z) :- /* join */\n  path(x, y), // left\n  edge(y, z)."
        );
    }

    #[test]
    fn negation_comparisons_and_wildcards() {
        let text =
            "r(x) :- a(x, _), !b(x, _), x = 1, x != 2, x < 3, x <= 4, x > 5, x >= 6, \"s\" = x.";
        let r = only_rule(text);
        assert_eq!(
            show_rule(&r),
            "r(x) :- a(x, _), !b(x, _), x = 1, x != 2, x < 3, x <= 4, x > 5, x >= 6, \"s\" = x."
        );
        let Literal::Negative(atom, span) = &r.body[1] else {
            panic!()
        };
        assert_eq!(text_of(text, *span), "!b(x, _)");
        assert_eq!(text_of(text, atom.span), "b(x, _)");
        assert!(
            matches!(&r.body[0], Literal::Positive(a) if matches!(a.args[1], Expr::Wildcard(_)))
        );
        let Literal::Compare { op, span, .. } = &r.body[4] else {
            panic!()
        };
        assert_eq!((*op, text_of(text, *span)), (CmpOp::Lt, "x < 3"));
    }

    #[test]
    fn arithmetic_in_heads_and_bodies() {
        let r = only_rule("n(x + 1) :- n(x), x < 10.");
        assert_eq!(show_rule(&r), "n((x + 1)) :- n(x), x < 10.");
        let r = only_rule("big(x) :- v(x), x * 2 >= -3.");
        assert_eq!(show_rule(&r), "big(x) :- v(x), (x * 2) >= -3.");
        // `x<-3` is a comparison with -3, not an arrow.
        let r = only_rule("s(x) :- v(x), x<-3.");
        assert_eq!(show_rule(&r), "s(x) :- v(x), x < -3.");
        let text = "c(x) :- v(x), (x + 1) * 2 = 4.";
        let r = only_rule(text);
        let Literal::Compare { span, lhs, .. } = &r.body[1] else {
            panic!()
        };
        assert_eq!(text_of(text, *span), "(x + 1) * 2 = 4");
        assert_eq!(text_of(text, lhs.span()), "(x + 1) * 2");
    }

    #[test]
    fn string_functors_and_constraints() {
        let r = only_rule("c(cat(x, \"-\", y), strlen(x)) :- a(x, y), z = substr(x, 1, 2).");
        assert_eq!(
            show_rule(&r),
            "c(cat(x, \"-\", y), strlen(x)) :- a(x, y), z = substr(x, 1, 2)."
        );
        let r = only_rule("c(ord(x), to_string(n + 1)) :- a(x, n).");
        assert_eq!(show_rule(&r), "c(ord(x), to_string((n + 1))) :- a(x, n).");
        let r = only_rule("c(autoinc(), x) :- a(x).");
        assert_eq!(show_rule(&r), "c(autoinc(), x) :- a(x).");
        assert_err(
            "c(autoinc(1)) :- a(x).",
            1,
            3,
            "`autoinc()` takes no argument",
        );
        // The constraints are comparisons with 0; `!` negates them.
        let text = "c(x) :- a(x), contains(\"b\", x), !match(\"a.*\", x).";
        let r = only_rule(text);
        assert_eq!(show_literal(&r.body[1]), "contains(\"b\", x) != 0");
        assert_eq!(show_literal(&r.body[2]), "match(\"a.*\", x) = 0");
        assert_eq!(text_of(text, r.body[2].span()), "!match(\"a.*\", x)");
        // A relation may still be called `cat` when it is not written as a call.
        let r = only_rule("c(x) :- a(x), x = cat.");
        assert_eq!(show_rule(&r), "c(x) :- a(x), x = cat.");
    }

    #[test]
    fn records_constructors_and_their_types() {
        let text = "c([x, [y + 1, nil]], $Leaf(x), $Empty, []) :- a(x, y), $Node(l, _) = t.";
        let r = only_rule(text);
        assert_eq!(
            show_rule(&r),
            "c([x, [(y + 1), nil]], $Leaf(x), $Empty(), []) :- a(x, y), $Node(l, _) = t."
        );
        assert_eq!(text_of(text, r.head.args[1].span()), "$Leaf(x)");
        assert_eq!(text_of(text, r.head.args[0].span()), "[x, [y + 1, nil]]");
        let p = parse_ok(".type L = [h: number, t: L]\n.type T = A {x: number} | B {}");
        let shapes: Vec<&TypeShape> = p
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Type(t) => Some(&t.shape),
                _ => None,
            })
            .collect();
        let TypeShape::Record(fields) = shapes[0] else {
            panic!("{shapes:?}")
        };
        assert_eq!(
            (fields[1].0.name.as_str(), fields[1].1.name.as_str()),
            ("t", "L")
        );
        let TypeShape::Adt(cs) = shapes[1] else {
            panic!("{shapes:?}")
        };
        assert_eq!(cs.len(), 2);
        assert_eq!((cs[0].name.name.as_str(), cs[0].fields.len()), ("A", 1));
        assert!(cs[1].fields.is_empty());
        // Nesting counts towards the expression depth limit.
        let deep = format!("c({}1{}) :- a(1).", "[".repeat(300), "]".repeat(300));
        let e = parse(&SourceFile::new("t.dl", deep)).unwrap_err();
        assert!(e.message.contains("nested too deeply"), "{}", e.message);
    }

    #[test]
    fn expression_precedence_and_associativity() {
        let cases = [
            ("1 + 2 * 3", "(1 + (2 * 3))"),
            ("1 * 2 + 3", "((1 * 2) + 3)"),
            ("a - b - c", "((a - b) - c)"),
            ("a / b % c * d", "(((a / b) % c) * d)"),
            ("(a + b) * c", "((a + b) * c)"),
            ("a - -1", "(a - -1)"),
            ("-x * 2", "((neg x) * 2)"),
            ("-(5)", "(neg 5)"),
            ("--5", "(neg -5)"),
            ("-(a + b)", "(neg (a + b))"),
            ("((a))", "a"),
        ];
        for (src, want) in cases {
            assert_eq!(show(&expr_of(src)), want, "{src}");
        }
    }

    /// Soufflé 2.5's precedence, loosest first: lor, lxor, land, bor, bxor, band, the
    /// shifts, + -, * / %, the prefix operators, ^ (right-associative). Each case was
    /// checked against Soufflé 2.5's results (e.g. `-2 ^ 2` is -4, `bnot 2 ^ 2` is -5).
    #[test]
    fn operator_precedence_and_associativity() {
        let cases = [
            ("a lor b lxor c", "(a lor (b lxor c))"),
            ("a lxor b land c", "(a lxor (b land c))"),
            ("a land b bor c", "(a land (b bor c))"),
            ("a bor b bxor c", "(a bor (b bxor c))"),
            ("a bxor b band c", "(a bxor (b band c))"),
            ("a band b bshl c", "(a band (b bshl c))"),
            ("a bshl b + c", "(a bshl (b + c))"),
            ("a bshl b bshr c bshru d", "(((a bshl b) bshr c) bshru d)"),
            ("1 + 2 band 3", "((1 + 2) band 3)"),
            ("a lor b lor c", "((a lor b) lor c)"),
            ("a * b ^ c", "(a * (b ^ c))"),
            ("a ^ b ^ c", "(a ^ (b ^ c))"),
            ("a ^ b * c", "((a ^ b) * c)"),
            ("-x ^ 2", "(neg (x ^ 2))"),
            ("-2 ^ 2", "(neg (2 ^ 2))"),
            ("-2 * 2", "(-2 * 2)"),
            ("2 ^ -x", "(2 ^ (neg x))"),
            ("2 ^ -x ^ 2", "(2 ^ (neg (x ^ 2)))"),
            ("bnot x ^ 2", "(bnot (x ^ 2))"),
            ("bnot x * 2", "((bnot x) * 2)"),
            ("lnot bnot -x", "(lnot (bnot (neg x)))"),
            ("- bnot x", "(neg (bnot x))"),
            ("bnot(5)", "(bnot 5)"),
            ("min(a, b)", "(a min b)"),
            ("max(a, b + 1, c)", "((a max (b + 1)) max c)"),
            ("min(a, b) ^ 2", "((a min b) ^ 2)"),
            ("to_float(a) + 1", "((to_float a) + 1)"),
            ("-to_number(x) ^ 2", "(neg ((to_number x) ^ 2))"),
            (
                "to_unsigned(to_float(-2.5) * x)",
                "(to_unsigned ((to_float -2.5) * x))",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(show(&expr_of(src)), want, "{src}");
        }
        assert_err(
            "c(min(1)).",
            1,
            3,
            "`min` takes at least two arguments: `min(a, b, ...)`",
        );
        assert_err(
            "c(max(1 2)).",
            1,
            9,
            "expected `,` or `)` in `max(...)`, found `2`",
        );
        assert_err(
            "c(x) :- a(x), x = band 1.",
            1,
            19,
            "`band` is an infix operator (`x band y`), not a value",
        );
        // Canonical forms keep functors and prefix operators apart.
        let a = only_rule("c(x) :- a(x), x = min(x, 1).");
        let b = only_rule("c(y) :- a(y), y = min(y, 1).");
        assert_eq!(a.canonical(), b.canonical());
        assert_eq!(a.canonical(), "c(v0) :- a(v0), v0 = min(v0, 1).");
        let c = only_rule("c(x) :- a(x), x = bnot x ^ 2.");
        assert_eq!(c.canonical(), "c(v0) :- a(v0), v0 = bnot ((v0 ^ 2)).");
        let d = only_rule("c(x) :- a(y), to_number(y) = x.");
        assert_eq!(d.canonical(), "c(v0) :- a(v1), to_number (v1) = v0.");
    }

    #[test]
    fn numeric_literals() {
        let cases: [(&str, Number); 10] = [
            ("42", Number::Int(42)),
            ("0x1f", Number::Int(31)),
            ("0b101", Number::Int(5)),
            ("-7", Number::Int(-7)),
            ("1.5", Number::Float(1.5)),
            ("2e3", Number::Float(2000.0)),
            ("1.5e-3", Number::Float(0.0015)),
            ("-2.5", Number::Float(-2.5)),
            (
                "170141183460469231731687303715884105727",
                Number::Int(i128::MAX),
            ),
            (
                "-170141183460469231731687303715884105728",
                Number::Int(i128::MIN),
            ),
        ];
        for (src, want) in cases {
            let text = format!("x({src}).");
            let e = expr_of(src);
            let Expr::Num(n, span) = e else {
                panic!("{src}: {e:?}")
            };
            assert_eq!(n, want, "{src}");
            assert_eq!(text_of(&text, span), src, "span of {src}");
        }
        let e = expr_of("- 3");
        assert!(matches!(e, Expr::Num(Number::Int(-3), s) if s == Span::new(2, 5)));
    }

    #[test]
    fn string_literals() {
        let e = expr_of(r#""a\"b\\c\nd\te\rf""#);
        assert_eq!(e, Expr::Str("a\"b\\c\nd\te\rf".into(), Span::new(2, 20)));
        assert_eq!(expr_of(r#""""#), Expr::Str(String::new(), Span::new(2, 4)));
    }

    // ---- the study's rule syntax ---------------------------------------------

    const RDFS: &str = "T(?y, rdf:type, ?x) <- [T(?a, rdfs:domain, ?x), T(?y, ?a, ?z)]
T(?z, rdf:type, ?x) <- [T(?a, rdfs:range, ?x), T(?y, ?a, ?z)]
T(?x, rdfs:subPropertyOf, ?z) <- [T(?x, rdfs:subPropertyOf, ?y), T(?y, rdfs:subPropertyOf, ?z)]
T(?x, rdfs:subClassOf, ?z) <- [T(?x, rdfs:subClassOf, ?y), T(?y, rdfs:subClassOf, ?z)]
T(?z, rdf:type, ?y) <- [T(?x, rdfs:subClassOf, ?y), T(?z, rdf:type, ?x)]
T(?x, ?b, ?y) <- [T(?a, rdfs:subPropertyOf, ?b), T(?x, ?a, ?y)]";

    const TC: &str = "tc(?x, ?y) <- [a(?x, ?y)]
tc(?x, ?z) <- [tc(?x, ?y), a(?y, ?z)]";

    /// The first and last lines of the study's OWL 2 RL program for LUBM.
    const OWL2RL_EXCERPT: &str = "University(?y) <- [mastersDegreeFrom(?x,?y)]
Person(?x) <- [title(?x,?y)]
degreeFrom(?x,?y) <- [hasAlumnus(?y,?x)]
TeachingAssistant(?x) <- [Person(?x), teachingAssistantOf(?x,?y), Course(?y)]
Employee(?x) <- [Person(?x), worksFor(?x,?y), Organization(?y)]
Dean(?x) <- [headOf(?x,?y), College(?y)]
subOrganizationOf(?x,?z) <- [subOrganizationOf(?x,?y), subOrganizationOf(?y,?z)]";

    #[test]
    fn paper_rdfs() {
        let rs = rules(RDFS);
        assert_eq!(rs.len(), 6);
        assert!(rs.iter().all(|r| r.style == Style::Paper));
        assert_eq!(
            show_rule(&rs[0]),
            "T(y, \"rdf:type\", x) :- T(a, \"rdfs:domain\", x), T(y, a, z)."
        );
        assert_eq!(
            show_rule(&rs[5]),
            "T(x, b, y) :- T(a, \"rdfs:subPropertyOf\", b), T(x, a, y)."
        );
        let first_line = RDFS.lines().next().unwrap();
        assert_eq!(text_of(RDFS, rs[0].span), first_line);
        assert_eq!(text_of(RDFS, rs[0].head.span), "T(?y, rdf:type, ?x)");
        let Expr::Var(y) = &rs[0].head.args[0] else {
            panic!()
        };
        assert_eq!((y.name.as_str(), text_of(RDFS, y.span)), ("y", "?y"));
        let Expr::Str(c, span) = &rs[0].head.args[1] else {
            panic!()
        };
        assert_eq!((c.as_str(), text_of(RDFS, *span)), ("rdf:type", "rdf:type"));
        // The file has no trailing newline: the last rule ends at the very end.
        assert_eq!(rs[5].span.end as usize, RDFS.len());
    }

    #[test]
    fn paper_tc_and_owl2rl() {
        let rs = rules(TC);
        assert_eq!(
            rs.iter().map(show_rule).collect::<Vec<_>>(),
            vec!["tc(x, y) :- a(x, y).", "tc(x, z) :- tc(x, y), a(y, z)."]
        );
        let rs = rules(OWL2RL_EXCERPT);
        assert_eq!(rs.len(), 7);
        assert_eq!(
            show_rule(&rs[3]),
            "TeachingAssistant(x) :- Person(x), teachingAssistantOf(x, y), Course(y)."
        );
        assert_eq!(
            show_rule(&rs[6]),
            "subOrganizationOf(x, z) :- subOrganizationOf(x, y), subOrganizationOf(y, z)."
        );
    }

    /// The study's real files, when this machine has them (not required).
    #[test]
    fn paper_files_if_present() {
        let dir = std::path::Path::new("/work/shared/paper-data");
        for (name, count) in [("rdfs.dl", 6), ("tc.dl", 2), ("owl2rl_lubm.dl", 98)] {
            let Ok(text) = std::fs::read_to_string(dir.join(name)) else {
                continue;
            };
            let rs = rules(&text);
            assert_eq!(rs.len(), count, "{name}");
            assert!(
                rs.iter()
                    .all(|r| r.style == Style::Paper && !r.body.is_empty())
            );
        }
    }

    #[test]
    fn paper_constants() {
        let text =
            "p(http://x.org/a#b, <http://y.org/c>, \"q s\", ub:Person, 42, plain, _) <- [] \n";
        let r = only_rule(text);
        assert!(r.body.is_empty());
        assert_eq!(r.style, Style::Paper);
        assert_eq!(
            show_atom(&r.head),
            "p(\"http://x.org/a#b\", \"<http://y.org/c>\", \"q s\", \"ub:Person\", \"42\", \"plain\", _)"
        );
        assert_eq!(text_of(text, r.span), &text[..text.len() - 2]);
        let Expr::Str(_, span) = &r.head.args[1] else {
            panic!()
        };
        assert_eq!(text_of(text, *span), "<http://y.org/c>");
    }

    #[test]
    fn paper_trailing_dot_negation_and_mixing() {
        let text = ".decl T(s: symbol, p: symbol, o: symbol)\n\
                    h(?x) <- [T(?x, a, b), !g(?x)].\n\
                    g(c) <- []\n\
                    .output h\n\
                    k(?x) <- [ h( ?x ) ]\n\
                    .printsize k\n\
                    z() <- []\n\
                    s(x) :- h(x).";
        let p = parse_ok(text);
        assert_eq!(p.items.len(), 8);
        let Item::Rule(r) = &p.items[1] else { panic!() };
        assert_eq!(text_of(text, r.span), "h(?x) <- [T(?x, a, b), !g(?x)].");
        let Literal::Negative(_, span) = &r.body[1] else {
            panic!()
        };
        assert_eq!(text_of(text, *span), "!g(?x)");
        let Item::Rule(r) = &p.items[2] else { panic!() };
        assert_eq!(text_of(text, r.span), "g(c) <- []");
        assert!(matches!(&p.items[3], Item::Directive(_)));
        let Item::Rule(r) = &p.items[6] else { panic!() };
        assert!(r.head.args.is_empty() && r.style == Style::Paper);
        let Item::Rule(r) = &p.items[7] else { panic!() };
        assert_eq!(r.style, Style::Souffle);
    }

    #[test]
    fn paper_rule_after_souffle_rule_on_one_line() {
        let rs = rules("a(1). T(?x) <- [a(?x)]");
        assert_eq!(rs[0].style, Style::Souffle);
        assert_eq!(rs[1].style, Style::Paper);
    }

    // ---- errors ---------------------------------------------------------------

    #[test]
    fn error_unexpected_token() {
        assert_err(
            "edge(1, 2 .",
            1,
            11,
            "expected `)` after the arguments of `edge`, found `.`",
        );
        assert_err(
            "a(x) :- b(x),\n  c(x) d(x).",
            2,
            8,
            "expected `,`, `;` or `.` after a body literal, found `d`",
        );
        assert_err("a(x) :- .", 1, 9, "expected an expression, found `.`");
        assert_err(
            ") a(1).",
            1,
            1,
            "expected a rule, a fact or a directive, found `)`",
        );
        assert_err(
            "a(x) b(x).",
            1,
            6,
            "expected `:-` or `.` after the rule head, found `b`",
        );
        assert_err(
            ".decl r(x number)",
            1,
            11,
            "expected `:` and a type after the attribute `x`, found `number`",
        );
        assert_err(
            ".type T number",
            1,
            9,
            "expected `<:` or `=` after the type name `T`, found `number`",
        );
        assert_err(
            ".input r(IO file)",
            1,
            13,
            "expected `=` after the parameter name `IO`, found `file`",
        );
        assert_err(
            "T(?x, , ?y) <- [a(?x)]",
            1,
            7,
            "expected an argument of `T`, found `,`",
        );
        assert_err(
            "T(?x, a b) <- [a(?x)]",
            1,
            9,
            "expected `)` after the arguments of `T`, found `b`",
        );
        assert_err(
            "T(?x) <- a(?x)",
            1,
            10,
            "expected `[` after `<-`, found `a`",
        );
        assert_err(
            "T(?x) <- [a(?x) b(?x)]",
            1,
            17,
            "expected `,` or `]` after a body atom, found `b`",
        );
        assert_err(
            "T(?x) <- [a(?x)",
            1,
            16,
            "expected `,` or `]` after a body atom, found end of input",
        );
        assert_err("T(? x) <- []", 1, 3, "expected a variable name after `?`");
        assert_err(
            "a :- b().",
            1,
            3,
            "expected `(` after the relation name `a` (atoms without arguments are written `a()`), found `:-`",
        );
        assert_err(
            "a() :- b.",
            1,
            8,
            "expected an atom or a comparison, found `b` (atoms without arguments are written `b()`)",
        );
        assert_err(
            "a(x) :- b(x), x.",
            1,
            15,
            "expected an atom or a comparison, found `x` (atoms without arguments are written `x()`)",
        );
        assert_err(
            "a(x) :- b(x), x + 1.",
            1,
            20,
            "expected a comparison operator (`=`, `!=`, `<`, `<=`, `>`, `>=`) after the expression, found `.`",
        );
        assert_err(
            "a(x) :- b(x), !x = 1.",
            1,
            18,
            "expected `(` after the relation name `x`, found `=`",
        );
        assert_err("a(1) ~", 1, 6, "unexpected character `~`");
        assert_err(
            ". decl r()",
            1,
            1,
            "expected a directive name such as `.decl` right after `.`",
        );
    }

    #[test]
    fn error_unterminated_string() {
        assert_err("a(\"abc).\nb(1).", 1, 3, "unterminated string literal");
        assert_err("T(?x, \"abc) <- []", 1, 7, "unterminated string literal");
        assert_err(
            ".input r(filename=\"x)",
            1,
            19,
            "unterminated string literal",
        );
    }

    #[test]
    fn error_unterminated_comment() {
        assert_err(
            "a(1).\n  /* never closed\nb(2).",
            2,
            3,
            "unterminated block comment (missing `*/`)",
        );
    }

    #[test]
    fn error_missing_dot() {
        assert_err(
            "a(x) :- b(x)\nc(x) :- d(x).",
            1,
            13,
            "missing `.` at the end of the rule",
        );
        assert_err("a(x) :- b(x)", 1, 13, "missing `.` at the end of the rule");
        assert_err("a(1)\nb(2).", 1, 5, "missing `.` at the end of the fact");
        assert_err("a(1)", 1, 5, "missing `.` at the end of the fact");
    }

    #[test]
    fn pragmas_with_and_without_a_value() {
        let p =
            parse_ok(".pragma \"magic-transform\" \"*\"\n.pragma \"legacy\"\n.decl r(x: number)\n");
        let pragmas: Vec<_> = p
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Pragma(p) => Some((p.key.as_str(), p.value.as_deref(), p.span.start)),
                _ => None,
            })
            .collect();
        assert_eq!(
            pragmas,
            [("magic-transform", Some("*"), 0), ("legacy", None, 30)]
        );
        assert_err(
            ".pragma magic-transform",
            1,
            9,
            "expected a quoted option name after `.pragma`, such as `.pragma \"magic-transform\" \"*\"`, found `magic`",
        );
    }

    #[test]
    fn error_unknown_and_unsupported_directives() {
        assert_err(
            ".decl r(x: number)\n.inptu r",
            2,
            1,
            "unknown directive `.inptu`",
        );
        assert_err(
            ".functor f(number): number",
            1,
            1,
            "the `.functor` directive is not supported",
        );
        assert_err(
            "a(x) :- b(x).\n.plan 0: (1, 2)",
            2,
            1,
            "the `.plan` directive is not supported",
        );
        // Program files are preprocessed before they are parsed (crate::preprocess);
        // a directive reaching the parser is in text that was not (a session's rules).
        assert_err_starts(
            "\n#include \"other.dl\"\n",
            2,
            1,
            "preprocessor directives (#include, #define, ...) are only run on program files",
        );
        assert_err_starts(
            "  #define N 3",
            1,
            3,
            "preprocessor directives (#include, #define, ...) are only run on program files",
        );
        assert_err(
            ".type R = [a: number, a: symbol]",
            1,
            23,
            "field `a` is declared twice",
        );
        assert_err(
            ".type R = [a: number b: symbol]",
            1,
            22,
            "expected `,` or `]` after a field, found `b`",
        );
        assert_err(
            ".type A = B { x: number } | C",
            1,
            30,
            "expected `{` and the fields of the constructor `C` (`C {}` has none), found end of input",
        );
        assert_err(
            ".type A = N | B { x: number }",
            1,
            15,
            "a union of types cannot have constructors: write every branch `Name {...}`",
        );
    }

    /// The rules of `text`, each printed back in canonical form.
    fn rules_of(text: &str) -> Vec<String> {
        parse_ok(text)
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Rule(r) => Some(r.canonical()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn disjunctions_and_several_heads_are_several_rules() {
        let single = |t: &str| rules_of(t);
        assert_eq!(
            rules_of("a(x) :- b(x) ; c(x), d(x)."),
            [
                single("a(x) :- b(x).")[0].clone(),
                single("a(x) :- c(x), d(x).")[0].clone()
            ]
        );
        // A parenthesized body is one item of its conjunction: the product.
        assert_eq!(
            rules_of("a(x) :- (b(x) ; c(x)), (d(x) ; !e(x)), x > 1."),
            [
                "a(x) :- b(x), d(x), x > 1.",
                "a(x) :- b(x), !e(x), x > 1.",
                "a(x) :- c(x), d(x), x > 1.",
                "a(x) :- c(x), !e(x), x > 1.",
            ]
            .map(|r| single(r)[0].clone())
        );
        // Several heads: one rule per head and disjunct, heads first.
        assert_eq!(
            rules_of("a(x), b(x) :- c(x) ; (d(x))."),
            [
                "a(x) :- c(x).",
                "a(x) :- d(x).",
                "b(x) :- c(x).",
                "b(x) :- d(x).",
            ]
            .map(|r| single(r)[0].clone())
        );
        // Comparisons in a group, and nested groups.
        assert_eq!(
            rules_of("a(x) :- b(x), (x = 1 ; x = 2 ; ((x > 5, x < 7))), x != (x + 1) * 2."),
            [
                "a(x) :- b(x), x = 1, x != (x + 1) * 2.",
                "a(x) :- b(x), x = 2, x != (x + 1) * 2.",
                "a(x) :- b(x), x > 5, x < 7, x != (x + 1) * 2.",
            ]
            .map(|r| rules_of(r)[0].clone())
        );
        // A functor call is no atom: `(min(x, 3) + 1)` is an expression.
        assert_eq!(
            rules_of("a(x) :- b(x), (min(x, 3) + 1) * 2 > 3 ; (x = max(x, 1) ; c(x))."),
            [
                "a(x) :- b(x), (min(x, 3) + 1) * 2 > 3.",
                "a(x) :- x = max(x, 1).",
                "a(x) :- c(x).",
            ]
            .map(|r| rules_of(r)[0].clone())
        );
        // A parenthesized expression is still an expression.
        assert_eq!(
            rules_of("a(x) :- b(x), (x + 1) * 2 > 3 ; c(x)."),
            [
                single("a(x) :- b(x), (x + 1) * 2 > 3.")[0].clone(),
                single("a(x) :- c(x).")[0].clone()
            ]
        );
        // Every generated rule has the span of the whole rule.
        let p = parse_ok("a(x) :- b(x) ; c(x).");
        let spans: Vec<_> = p
            .items
            .iter()
            .map(|i| match i {
                Item::Rule(r) => (r.span.start, r.span.end),
                _ => (0, 0),
            })
            .collect();
        assert_eq!(spans, [(0, 20), (0, 20)]);
    }

    #[test]
    fn error_disjunction() {
        assert_err(
            "a(?x) <- [b(?x); c(?x)]",
            1,
            16,
            "disjunction (`;`) in rule bodies is not supported",
        );
        assert_err_starts("a(x) :- b(x) ; .", 1, 16, "expected");
        assert_err(
            "a(x) :- (b(x) ; c(x).",
            1,
            21,
            "expected `)` to close the parenthesized body, found `.`",
        );
        assert_err(
            "a(x) :- b(x)).",
            1,
            13,
            "`)` without a matching `(` in the rule body",
        );
        // 2^11 disjuncts: bounded, at the group that crosses the bound.
        let groups = ["(b(x) ; c(x))"; 11].join(", ");
        assert_err(
            &format!("a(x) :- {groups}."),
            1,
            159,
            "the disjunctions of this rule stand for more than 1024 rules",
        );
        let deep = format!("a(x) :- {}b(x){}.", "(".repeat(200), ")".repeat(200));
        assert_err_starts(&deep, 1, 137, "expression nested too deeply");
    }

    #[test]
    fn error_multiple_heads() {
        assert_err_starts(
            "a(1), b(2).",
            1,
            11,
            "a fact has one atom: several heads need a body",
        );
        // 33 heads × 32 disjuncts: bounded like the disjuncts alone.
        let heads = vec!["a(x)"; 33].join(", ");
        let body = vec!["b(x)"; 32].join(" ; ");
        assert_err(
            &format!("{heads} :- {body}."),
            1,
            1,
            "this rule stands for 1056 rules (heads × disjuncts), more than 1024",
        );
    }

    #[test]
    fn error_choice_domain_and_subsumption() {
        let p = parse_ok(".decl a(x: number, y: number, z: number) choice-domain x, (y, z) btree");
        let Item::Decl(d) = &p.items[0] else {
            panic!("{p:?}")
        };
        let names: Vec<Vec<&str>> = d
            .choice
            .iter()
            .map(|c| c.iter().map(|a| a.name.as_str()).collect())
            .collect();
        assert_eq!(names, [vec!["x"], vec!["y", "z"]]);
        assert_eq!(d.qualifiers.len(), 1);
        assert_err(
            ".decl a(x: number) choice-dom x",
            1,
            27,
            "expected `choice-domain`",
        );
        assert_err(
            ".decl a(x: number) choice-domain (x",
            1,
            36,
            "expected `)` after the domain's attributes, found end of input",
        );
        let r = only_rule("a(x, d1) <= a(x, d2) :- d2 <= d1.");
        assert_eq!(r.style, Style::Subsumption);
        assert_eq!(r.canonical(), "a(v0, v1) <= a(v0, v2) :- v2 <= v1.");
        assert_err(
            "a(x) <= a(y).",
            1,
            13,
            "expected `:-` and the condition after the dominating atom, found `.`",
        );
        assert_err(
            "a(x), b(x) <= a(y).",
            1,
            12,
            "a subsumption rule has one atom before `<=`",
        );
        assert_err(
            "a(x) <= a(y) :- x < y",
            1,
            22,
            "expected `.` at the end of the subsumption rule, found end of input",
        );
    }

    #[test]
    fn error_aggregates_and_functors() {
        // Aggregates parse: every function, a braced body or a single atom, in heads
        // and comparisons, nested.
        let r = only_rule("c(n) :- n = count : { a(_), !b(1) }.");
        assert_eq!(show_literal(&r.body[0]), "n = (count : { a(_), !b(1) })");
        let r = only_rule("c(x, n) :- a(x), n = sum y * 2 : { b(x, y) }.");
        assert_eq!(show_literal(&r.body[1]), "n = (sum (y * 2) : { b(x, y) })");
        let r = only_rule("c(min x : a(x)).");
        assert_eq!(show(&r.head.args[0]), "(min x : { a(x) })");
        let r = only_rule("c(n) :- n = max m : { a(x), m = mean y : b(x, y) }.");
        assert_eq!(
            show_literal(&r.body[0]),
            "n = (max m : { a(x), m = (mean y : { b(x, y) }) })"
        );
        assert_err(
            "c(n) :- n = sum : { a(x) }.",
            1,
            17,
            "`sum` needs the expression to aggregate before `:` (`sum y : { r(y) }`)",
        );
        assert_err(
            "c(n) :- n = count : { a(x) ; b(x) }.",
            1,
            21,
            "disjunctions in aggregate bodies are not supported (nor are they in Soufflé)",
        );
        assert_err_starts("c(n) :- n = count { a(x) }.", 1, 19, "expected `:` before");
        assert_err_starts("c(n) :- n = count : { a(x).", 1, 27, "expected `}`");
        assert_err(
            "c(x) :- a(y), x = range(y).",
            1,
            19,
            "`range(from, to)` or `range(from, to, step)` takes two or three arguments",
        );
        assert_err(
            "c(x) :- a(y), x = substr(y, 1).",
            1,
            19,
            "`substr(s, i, n)` takes three arguments",
        );
        assert_err(
            "c(x) :- a(y), x = cat().",
            1,
            19,
            "`cat(a, b, ...)` takes at least one argument",
        );
        assert_err(
            "c(x) :- a(x), y = contains(x, \"b\").",
            1,
            19,
            "`contains(...)` is a constraint: it stands alone in a rule's body (`contains(a, b)` \
             or `!contains(a, b)`), not inside an expression",
        );
        assert_err(
            "c(x) :- a(x), match(\"a\").",
            1,
            15,
            "`match(a, b)` takes two arguments",
        );
        assert_err(
            "c(x) :- a(y), x = to_float(y, 1).",
            1,
            19,
            "`to_float` takes one argument: `to_float(x)`",
        );
        assert_err_starts(
            "c(to_number(x y)) :- a(x).",
            1,
            15,
            "expected `,` or `)` in `to_number(...)`",
        );
        assert_err(
            "c(x) :- a(x), b(x) = 1.",
            1,
            15,
            "`b(...)` is an atom and cannot be used as a value before `=` (functors are not supported)",
        );
        assert_err(
            "c(b(x)) :- a(x).",
            1,
            3,
            "`b(...)` cannot appear inside an expression (atoms do not nest, and the only functors are \
             `min`, `max`, `to_float`, `to_number` and `to_unsigned`)",
        );
        assert_err(
            "c(@f(x)) :- a(x).",
            1,
            3,
            "user-defined functors (`@name(...)`) are not supported",
        );
        assert_err(
            "c($A(x :- a(x).",
            1,
            8,
            "expected `,` or `)` in a record, found `:-`",
        );
        assert_err(
            "c([x, y) :- a(x, y).",
            1,
            8,
            "expected `,` or `]` in a record, found `)`",
        );
        assert_err(
            "c($) :- a(x).",
            1,
            4,
            "expected a constructor's name after `$`, found `)`",
        );
    }

    #[test]
    fn error_paper_variables_in_souffle_rules() {
        assert_err(
            "c(?x) :- a(?x).",
            1,
            3,
            "`?x` variables are only allowed in rules written `head <- [body, ...]`; in `:-` rules write `x`",
        );
    }

    #[test]
    fn error_integer_literals_out_of_range() {
        assert_err(
            "a(170141183460469231731687303715884105728).",
            1,
            3,
            "integer literal `170141183460469231731687303715884105728` does not fit in 128 bits",
        );
        assert_err(
            "a(-170141183460469231731687303715884105729).",
            1,
            3,
            "integer literal `-170141183460469231731687303715884105729` does not fit in 128 bits",
        );
        assert_err(
            "a(999999999999999999999999999999999999999999).",
            1,
            3,
            "integer literal `999999999999999999999999999999999999999999` is too large",
        );
        assert_err("a(12ab).", 1, 3, "invalid number literal `12ab`");
    }

    /// The message for an expression deeper than [`MAX_EXPR_DEPTH`].
    fn too_deep_message() -> String {
        format!("expression nested too deeply (more than {MAX_EXPR_DEPTH} levels)")
    }

    #[test]
    fn error_deep_nesting_is_reported_not_overflowed() {
        let deep = format!("a({}1{}).", "(".repeat(10_000), ")".repeat(10_000));
        // At the first `(` past the bound: column 3 + MAX_EXPR_DEPTH.
        assert_err(&deep, 1, 3 + MAX_EXPR_DEPTH, &too_deep_message());
        let minus = format!("a({}x).", "- ".repeat(10_000));
        assert_err(&minus, 1, 3 + 2 * MAX_EXPR_DEPTH, &too_deep_message());
        // A left-associative chain is as deep as it is long: the error is at the
        // operator that makes it one level too deep.
        let chain = format!("a(1{}).", "+1".repeat(16_000));
        assert_err(&chain, 1, 4 + 2 * MAX_EXPR_DEPTH, &too_deep_message());
        let products = format!("a(x) :- b(x), x = x{}.", "*x".repeat(16_000));
        assert_eq!(parse_err(&products).message, too_deep_message());
        // Parentheses around a chain that is just short enough: the `(` that pushes it
        // over is reported.
        let wrapped = format!("a(((1{}))).", "+1".repeat(MAX_EXPR_DEPTH - 1));
        assert_err(&wrapped, 1, 3, &too_deep_message());
        // Right-nested: `1 + (1 + (1 + ...))` goes two levels per term.
        let right = format!("a({}1{}).", "1 + (".repeat(200), ")".repeat(200));
        assert_eq!(parse_err(&right).message, too_deep_message());
    }

    #[test]
    fn expressions_up_to_the_bound_parse() {
        let n = MAX_EXPR_DEPTH;
        let parens = format!("a({}1{}).", "(".repeat(n), ")".repeat(n));
        assert_eq!(show(&only_rule(&parens).head.args[0]), "1");
        let minus = format!("a({}x).", "-".repeat(n));
        assert!(matches!(&only_rule(&minus).head.args[0], Expr::Neg(..)));
        let chain = format!("a(1{}).", "+1".repeat(n));
        assert!(matches!(
            &only_rule(&chain).head.args[0],
            Expr::Binary { .. }
        ));
        let mixed = format!(
            "a(x) :- b(x), x < {}x{}.",
            "-(".repeat(n / 2),
            ")".repeat(n / 2)
        );
        assert_eq!(only_rule(&mixed).body.len(), 2);
        // A chain of parenthesized groups is as deep as the chain.
        let groups = format!("a(1{}).", " + (1 * 2)".repeat(n - 3));
        assert!(parse(&file(&groups)).is_ok());
        let groups = format!("a(1{}).", " + (1 * 2)".repeat(n + 1));
        assert_eq!(parse_err(&groups).message, too_deep_message());
    }

    #[test]
    fn empty_and_trivia_only_inputs() {
        assert!(parse_ok("").items.is_empty());
        assert!(parse_ok("  // nothing\n/* at all */\n").items.is_empty());
        assert!(parse_ok("\u{feff}a(1).").items.len() == 1);
        assert_eq!(rules("a(1).\r\nb(2).\r\n").len(), 2);
    }

    /// Every prefix and many byte-level mutations of valid programs parse or fail
    /// cleanly: no panic, no hang.
    #[test]
    fn no_panics_on_mangled_input() {
        let samples = [
            RDFS,
            TC,
            ".type T <: symbol\n.decl e(a: T, b: number) brie\n.input e(IO=file, filename=\"e.csv\")\n\
             p(x, y + 1) :- e(x, y), !q(x, _), y * 2 >= -3, x != \"a\\n\".\n.output p\n\
             /* c */ q(\"z\"). // end\nT(?x, rdf:type, <http://a#b>) <- [q(?x)].",
        ];
        let specials = [
            b'(', b')', b'"', b'/', b'*', b'.', b'<', b'-', b'[', b']', b'?', b'#', b'\\', b'\n',
            0xC3,
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for sample in samples {
            for end in 0..=sample.len() {
                if sample.is_char_boundary(end) {
                    let _ = parse(&file(&sample[..end]));
                }
            }
            for _ in 0..2000 {
                let mut bytes = sample.as_bytes().to_vec();
                for _ in 0..(next() % 4 + 1) {
                    let i = (next() as usize) % bytes.len();
                    let b = specials[(next() as usize) % specials.len()];
                    match next() % 3 {
                        0 => bytes[i] = b,
                        1 => bytes.insert(i, b),
                        _ => {
                            bytes.remove(i);
                        }
                    }
                }
                let text = String::from_utf8_lossy(&bytes);
                if let Err(e) = parse(&file(&text)) {
                    // Rendering must not panic either.
                    let _ = e.to_string();
                }
            }
        }
    }

    fn canonical(text: &str) -> String {
        match &parse_ok(text).items[..] {
            [Item::Rule(r)] => r.canonical(),
            other => panic!("expected one rule, got {other:?}"),
        }
    }

    #[test]
    fn canonical_rules_ignore_layout_variable_names_and_syntax() {
        let a = canonical("path(x, z) :- path(x, y), edge(y, z).");
        assert_eq!(a, "path(v0, v1) :- path(v0, v2), edge(v2, v1).");
        assert_eq!(
            a,
            canonical("path( a ,c ):-\n  path(a,b) ,edge(b, c) . // c")
        );
        assert_eq!(a, canonical("path(?x, ?z) <- [path(?x, ?y), edge(?y, ?z)]"));
        // Different rules differ: order of body atoms, a repeated variable, a constant.
        assert_ne!(a, canonical("path(x, z) :- edge(y, z), path(x, y)."));
        assert_ne!(a, canonical("path(x, z) :- path(x, y), edge(y, y)."));
        assert_ne!(a, canonical("path(x, z) :- path(x, y), edge(y, \"z\")."));
        assert_eq!(
            canonical("r(x + 1) :- s(x), !t(x, _), x < 2 * x."),
            "r((v0 + 1)) :- s(v0), !t(v0, _), v0 < (2 * v0)."
        );
    }
}
