//! Every engine evaluates the deepest expressions and the longest rule bodies that
//! analysis accepts ([`MAX_EXPR_DEPTH`], [`MAX_BODY_LITERALS`]) on a thread with a 2 MB
//! stack, the size of the server's threads: engines recurse once per body literal and
//! once per expression level, and these bounds keep both well inside the stack.

use dynalog_analysis::{MAX_BODY_LITERALS, Program, analyse};
use dynalog_engines::{ENGINE_NAMES, create};
use dynalog_syntax::{MAX_EXPR_DEPTH, SourceFile, parse};
#[path = "../../../tests/shared/hostile.rs"]
mod hostile;
use hostile::small_stack;

fn program(text: &str) -> Program {
    let file = SourceFile::new("deep.dl", text);
    let ast = parse(&file).unwrap_or_else(|d| panic!("{d}"));
    analyse(&file, &ast).unwrap_or_else(|d| panic!("{d}"))
}

/// The facts of `relation` after one commit of `text` on `engine`, sorted.
fn evaluate(engine: &'static str, text: String, relation: &'static str) -> Vec<Vec<u32>> {
    small_stack(move || {
        let program = program(&text);
        let rel = program.relation_id(relation).expect("declared");
        let mut e =
            create(&dynalog_engines::Config::new(engine, 1), program).expect("engine starts");
        e.commit().expect("commits");
        let mut facts = e.facts(rel);
        facts.sort();
        facts
    })
}

#[test]
fn deepest_expressions_evaluate_on_every_engine() {
    let n = MAX_EXPR_DEPTH;
    // y = x + n, filtered by a comparison n deep, assigned through a chain of n unary
    // minuses (an even number: the value itself), and a deep head argument, where n
    // is the bound.
    let text = format!(
        ".decl q(a: number)\n.decl p(a: number, b: number)\n.decl r(a: number)\n\
         q(1). q(2).\n\
         p(x, y) :- q(x), y = x{plus}, x < {neg}y{close}.\n\
         r(z{times}) :- q(x), z = {minus}x.\n",
        plus = "+1".repeat(n),
        neg = "-(-(".repeat(n / 4),
        close = "))".repeat(n / 4),
        times = "*1".repeat(n),
        minus = "-".repeat(n),
    );
    for &engine in ENGINE_NAMES {
        let p = evaluate(engine, text.clone(), "p");
        assert_eq!(
            p,
            vec![vec![1, 1 + n as u32], vec![2, 2 + n as u32]],
            "{engine}"
        );
        let r = evaluate(engine, text.clone(), "r");
        assert_eq!(r, vec![vec![1], vec![2]], "{engine}");
    }
}

#[test]
fn longest_bodies_evaluate_on_every_engine() {
    // The longest body allowed, atoms that all match (the recursion of the evaluators goes one level per
    // literal), in a recursive rule (a delta variant per atom for delete-rederive).
    let atoms = vec!["e(x, y)"; MAX_BODY_LITERALS - 1].join(", ");
    let text = format!(
        ".decl e(a: number, b: number)\n.decl t(a: number, b: number)\n\
         e(1, 2). e(2, 3). e(3, 4).\n\
         t(x, y) :- e(x, y).\n\
         t(x, z) :- t(y, z), {atoms}.\n"
    );
    for &engine in ENGINE_NAMES {
        let t = evaluate(engine, text.clone(), "t");
        let expected: Vec<Vec<u32>> = vec![
            vec![1, 2],
            vec![1, 3],
            vec![1, 4],
            vec![2, 3],
            vec![2, 4],
            vec![3, 4],
        ];
        assert_eq!(t, expected, "{engine}");
    }
}
