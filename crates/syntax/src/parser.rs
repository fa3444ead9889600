//! Recursive-descent parser. (Implementation in progress.)
use crate::ast::Program;
use crate::source::{Diagnostic, SourceFile};

/// Parse a whole program. Stops at the first syntax error.
pub fn parse(file: &SourceFile) -> Result<Program, Diagnostic> {
    let _ = file;
    Ok(Program::default())
}
