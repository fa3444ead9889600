//! The compiled rules of an engine, as text: what `dynalog run --show plan` prints.
//!
//! One block per rule (per rule variant for `relational`): the rule as written, then one
//! line per operation in evaluation order, in the manner of Soufflé's RAM printout —
//! which relation is scanned, probed or looked up in which index with which key, which
//! columns bind which variables, the filters and assignments, and the head tuple
//! inserted. The printed forms are the `Display` of the compiled rules:
//! [`crate::rules::RulePlan::display`] (engines `seminaive`, `remat`, and
//! `relational` for each rule variant; `chibi` interprets rules and has no plan) and the
//! differential engine's compiled rule (`diff::compile`), whose operations are joins
//! with the index of a binding pattern.

use crate::EngineError;
use dynalog_analysis::Program;

/// The compiled rules of `engine` for `program`, one block per rule, blocks separated
/// by a blank line; an error for an unknown engine name or a program the engine cannot
/// compile.
pub fn plan(engine: &str, program: &Program) -> Result<String, EngineError> {
    match engine {
        "seminaive" | "remat" => Ok(crate::seminaive::explain(program)),
        "relational" => Ok(crate::relational::explain(program)),
        "chibi" => Err(EngineError::Unsupported(
            "the chibi engine has no compiled plan: it interprets each rule as written".into(),
        )),
        "diff" => crate::diff::explain(program).map_err(EngineError::ProgramRejected),
        _ => Err(EngineError::UnknownEngine(engine.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::plan;
    use dynalog_syntax::SourceFile;

    fn program(text: &str) -> dynalog_analysis::Program {
        let file = SourceFile::new("t.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parse");
        dynalog_analysis::analyse(&file, &ast).expect("analyse")
    }

    const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                      .decl far(x: number)\n\
                      path(x, y) :- edge(x, y).\n\
                      path(x, z) :- path(x, y), edge(y, z).\n\
                      far(x) :- path(x, x), !edge(x, 1), x > 2.\n";

    #[test]
    fn seminaive_plan_is_one_line_per_operation() {
        // The analysis puts the filter before the negation (evaluation order).
        let text = plan("seminaive", &program(TC)).expect("plan");
        let expected = "\
rule 0: path(x, y) :- edge(x, y).
  scan edge(x, y)
  insert path(x, y)

rule 1: path(x, z) :- path(x, y), edge(y, z).
  scan path(x, y)
  lookup edge(y, z) in index 0 on (0) key (y)
  insert path(x, z)

rule 2: far(x) :- path(x, x), !edge(x, 1), x > 2.
  scan path(x, x) where column 1 = column 0
  filter x > 2
  not probe edge(x, 1)
  insert far(x)
";
        assert_eq!(text, expected);
        assert_eq!(plan("remat", &program(TC)).expect("plan"), expected);
    }

    #[test]
    fn diff_plan_names_patterns_and_keys() {
        let text = plan("diff", &program(TC)).expect("plan");
        let expected = "\
rule 0 (level 0): path(x, y) :- edge(x, y).
  join index of pattern 0 edge(x, y) (from the facts) spread over the buckets
  insert path(x, y)

rule 1 (level 0): path(x, z) :- path(x, y), edge(y, z).
  join index of pattern 1 path(x, y) (from the facts) spread over the buckets
  join index of pattern 2 edge(y, z) key (y)
  insert path(x, z)

rule 2 (level 1): far(x) :- path(x, x), !edge(x, 1), x > 2.
  join index of pattern 3 path(x, x) (from the facts) spread over the buckets
  filter x > 2
  antijoin pattern 4 edge(x, 1) key (x)
  insert far(x)
";
        assert_eq!(text, expected);
    }

    #[test]
    fn relational_plan_lists_the_variants() {
        let text = plan("relational", &program(TC)).expect("plan");
        // Every rule appears with its delta variants, the delta atom first.
        assert!(
            text.contains(
                "rule 1, variant 0: path(x, z) :- path(x, y), edge(y, z).\n  scan path(x, y)\n"
            ),
            "{text}"
        );
        assert!(text.contains("  lookup path(x, y) in index"), "{text}");
    }

    #[test]
    fn constants_are_printed_with_their_type() {
        let p = program(
            ".decl T(s: symbol, p: symbol, o: symbol)\n.decl n(x: number)\n.decl q(s: symbol)\n\
             q(y) :- T(y, \"a\", _), n(-1).\n",
        );
        let semi = plan("seminaive", &p).expect("plan");
        assert!(
            semi.contains("  lookup T(y, \"a\", _) in index 0 on (1) key (\"a\")\n  probe n(-1)\n"),
            "{semi}"
        );
        let diff = plan("diff", &p).expect("plan");
        assert!(
            diff.contains("  join index of pattern 0 T(y, \"a\", _) (from the facts)"),
            "{diff}"
        );
    }

    #[test]
    fn unknown_engine_is_an_error() {
        let err = plan("nope", &program(TC)).expect_err("unknown engine");
        assert_eq!(err, crate::EngineError::UnknownEngine("nope".into()));
        assert!(
            err.to_string().starts_with("unknown engine `nope`"),
            "{err}"
        );
    }
}
