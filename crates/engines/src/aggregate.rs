//! Evaluating an [`Aggregate`] over its input relation's rows, as every engine but
//! `diff` does (which folds the same way, in a differential `reduce`): the rows are
//! grouped by their first `group` columns and each group folded by
//! [`Aggregate::fold`] in ascending row order, so every engine computes the same
//! float sums.

use dynalog_analysis::{Aggregate, Value};
use std::collections::HashSet;

/// The result rows `(group.., result)` of `agg` over `rows` (no row twice), ascending;
/// only the groups in `only`, if given.
pub fn evaluate<'a>(
    agg: &Aggregate,
    rows: impl Iterator<Item = &'a [Value]>,
    only: Option<&HashSet<Vec<Value>>>,
) -> Vec<Vec<Value>> {
    let g = agg.group;
    let mut rows: Vec<&[Value]> = match only {
        Some(groups) => rows.filter(|r| groups.contains(&r[..g])).collect(),
        None => rows.collect(),
    };
    rows.sort_unstable();
    let mut out = Vec::new();
    for group in rows.chunk_by(|a, b| a[..g] == b[..g]) {
        if let Some(result) = agg.fold(group.iter().map(|r| &r[g..])) {
            let mut row = group[0][..g].to_vec();
            row.push(result);
            out.push(row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynalog_analysis::{AggFunc, Type};
    use dynalog_syntax::Span;

    fn agg(func: AggFunc, ty: Type, group: usize) -> Aggregate {
        Aggregate {
            head: 1,
            source: 0,
            group,
            func,
            ty,
            stratum: 0,
            text: String::new(),
            span: Span::default(),
        }
    }

    fn run(a: &Aggregate, rows: &[&[Value]]) -> Vec<Vec<Value>> {
        evaluate(a, rows.iter().copied(), None)
    }

    #[test]
    fn groups_are_folded_apart() {
        let rows: &[&[Value]] = &[&[1, 7, 10], &[2, 8, 5], &[1, 9, 20]];
        assert_eq!(
            run(&agg(AggFunc::Count, Type::Number, 1), rows),
            [vec![1, 2], vec![2, 1]]
        );
        assert_eq!(
            run(&agg(AggFunc::Sum, Type::Number, 1), rows),
            [vec![1, 30], vec![2, 5]]
        );
        assert_eq!(
            run(&agg(AggFunc::Max, Type::Number, 1), rows),
            [vec![1, 20], vec![2, 5]]
        );
        assert_eq!(run(&agg(AggFunc::Min, Type::Number, 0), rows), [vec![5]]);
    }

    #[test]
    fn signed_unsigned_and_float_orders() {
        let neg = (-3i32) as u32;
        let rows: &[&[Value]] = &[&[neg], &[2]];
        assert_eq!(run(&agg(AggFunc::Min, Type::Number, 0), rows), [vec![neg]]);
        assert_eq!(run(&agg(AggFunc::Min, Type::Unsigned, 0), rows), [vec![2]]);
        assert_eq!(
            run(&agg(AggFunc::Sum, Type::Number, 0), rows),
            [vec![(-1i32) as u32]]
        );
        let f = |x: f32| x.to_bits();
        let rows: &[&[Value]] = &[&[f(-1.5)], &[f(0.25)], &[f(4.0)]];
        assert_eq!(
            run(&agg(AggFunc::Min, Type::Float, 0), rows),
            [vec![f(-1.5)]]
        );
        assert_eq!(
            run(&agg(AggFunc::Sum, Type::Float, 0), rows),
            [vec![f(2.75)]]
        );
        assert_eq!(
            run(&agg(AggFunc::Mean, Type::Float, 0), rows),
            [vec![f(2.75 / 3.0)]]
        );
    }

    #[test]
    fn only_the_asked_groups_and_nothing_for_nothing() {
        let rows: &[&[Value]] = &[&[1, 10], &[2, 5]];
        let only: HashSet<Vec<Value>> = [vec![2], vec![3]].into_iter().collect();
        let a = agg(AggFunc::Sum, Type::Number, 1);
        assert_eq!(
            evaluate(&a, rows.iter().copied(), Some(&only)),
            [vec![2, 5]]
        );
        assert!(run(&a, &[]).is_empty());
    }
}
