//! Stage 1 of the dynalog pipeline: source text to an AST with spans.
//!
//! * [`source`]: source files, byte spans, line/column lookup and [`Diagnostic`]s
//!   rendered as `file:line:col: error: reason` with the offending text.
//! * [`ast`]: the syntax tree. Both the Soufflé-style language and the study's rule
//!   syntax (`head <- [body, ...]`) parse to the same tree.
//! * [`preprocess`]: the C preprocessor Soufflé runs on programs (`#include`,
//!   `#define`, `#if`, ...), whose result keeps a map back to the original files, so
//!   that later diagnostics name them.
//! * [`lexer`] and [`parser`]: a hand-written tokenizer and recursive-descent parser.
//! * [`components`]: Soufflé's `.comp`/`.init`, expanded by the parser into ordinary
//!   relations with qualified names (`inst.r`), so later stages see a flat program.
//!
//! Nothing here knows about relations' types or values; that is the analysis stage.

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod preprocess;
pub mod source;

pub use ast::*;
pub use parser::components::{self, Components};
pub use parser::{MAX_EXPR_DEPTH, parse, parse_with_components};
pub use source::{Diagnostic, SourceFile, Span, Warning};
