//! A few hundred random transactions through `dynalog session` with the differential
//! engine (2 workers), on a recursive program with negation, compared line for line
//! with the same session on the reference evaluator (which recomputes from scratch
//! at every commit and reports the difference of consecutive results): every printed
//! change, every summary and the final state must agree.

mod common;

use common::Rng;

use common::run_session;

const PROGRAM: &str = "tests/sessions/data/reach_negation.dl";

const RULES: [&str; 3] = [
    "reach(x, z) :- reach(x, y), edge(y, z).",
    "reach(x, y) :- edge(y, x), special(y).",
    "special(x) :- node(x), !reach(x, x).",
];

/// A script of `transactions` transactions: edge and `special` facts in and out, rules
/// removed and added back, some aborted.
fn script(seed: u64, transactions: usize) -> String {
    let mut rng = Rng(seed);
    let mut s = String::new();
    let mut present = [true, false, false];
    for _ in 0..transactions {
        for _ in 0..1 + rng.below(4) {
            let sign = if rng.below(3) == 0 { '-' } else { '+' };
            let (a, b) = (rng.below(7), rng.below(7));
            s.push_str(&format!("{sign} edge({a}, {b}).\n"));
        }
        if rng.below(5) == 0 {
            let i = rng.below(RULES.len() as u64) as usize;
            let sign = if present[i] { '-' } else { '+' };
            present[i] = !present[i];
            s.push_str(&format!("{sign} {}\n", RULES[i]));
        }
        if rng.below(15) == 0 {
            s.push_str("abort\n");
            present = [true, false, false];
            // Re-synchronise the rule set with what is committed: put rule 0 back,
            // remove the others, in a transaction of their own (refused if unchanged).
            s.push_str("rules\n");
            continue;
        }
        s.push_str("commit\n");
    }
    s.push_str("dump reach\ndump unreachable\ndump special\nrules\n");
    s
}

fn run(engine: &[&str], input: &str) -> String {
    let mut args = vec![PROGRAM];
    args.extend_from_slice(engine);
    let (_, stdout, _) = run_session(&args, input);
    stdout
        .lines()
        .map(|l| match (l.starts_with("commit "), l.rfind(" in ")) {
            (true, Some(i)) => l[..i].to_string(),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn random_transactions_agree_with_the_reference() {
    for seed in [1, 2] {
        let input = script(seed, 300);
        let want = run(&["--engine", "seminaive"], &input);
        let got = run(&["--engine", "diff", "-w", "2"], &input);
        // The scripts must exercise something: many changes, rule changes among them.
        let changes = want
            .lines()
            .filter(|l| l.starts_with("+ ") || l.starts_with("- "))
            .count();
        assert!(changes > 500, "only {changes} changes printed");
        let refused = want.lines().filter(|l| l.starts_with("error:")).count();
        assert!(refused < 30, "{refused} refused lines:\n{want}");
        let commits = want.lines().filter(|l| l.starts_with("commit ")).count();
        eprintln!("seed {seed}: {commits} commits, {changes} changes, {refused} refused lines");
        if got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .position(|(g, w)| g != w)
                .unwrap_or(0);
            panic!(
                "seed {seed}: outputs differ from line {}:\n got: {:?}\nwant: {:?}",
                first + 1,
                got.lines().nth(first),
                want.lines().nth(first)
            );
        }
    }
}
