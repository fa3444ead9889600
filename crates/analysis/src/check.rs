//! Resolution, typing, safety. (Implementation in progress.)
use crate::ir::Program;
use crate::value::SymbolTable;
use dynalog_syntax::{Diagnostic, SourceFile};

#[derive(Clone, Debug, Default)]
pub struct Options {}

pub fn analyse(file: &SourceFile, ast: &dynalog_syntax::Program) -> Result<Program, Diagnostic> {
    analyse_with(file, ast, SymbolTable::new(), &Options::default())
}

pub fn analyse_with(
    file: &SourceFile,
    ast: &dynalog_syntax::Program,
    symbols: SymbolTable,
    _options: &Options,
) -> Result<Program, Diagnostic> {
    let _ = (file, ast);
    Ok(Program {
        relations: vec![],
        rules: vec![],
        facts: vec![],
        strata: vec![],
        symbols,
    })
}
