//! One step of a substitution through a compiled rule, as the records a join closure
//! emits: none, the next substitution (keyed for its next atom, replicated over the
//! buckets if that atom is spread), or the head fact.

use super::compile::{CompiledRule, HEAD, LAST, Next};
use super::types::{Row, Sub};

/// The records a join closure emits: none, one, or one per bucket (key\[1\] = bucket).
pub(crate) struct Emit<R> {
    key: R,
    sub: Sub<R>,
    next: u32,
    end: u32,
    /// The key slot of the bucket, if the substitution goes to every bucket.
    bucket: Option<usize>,
}

impl<R: Row> Emit<R> {
    /// No record.
    pub(crate) fn none() -> Emit<R> {
        Emit {
            key: R::default(),
            sub: (HEAD, R::default()),
            next: 0,
            end: 0,
            bucket: None,
        }
    }

    /// The one record `(key, sub)`.
    pub(crate) fn one(key: R, sub: Sub<R>) -> Emit<R> {
        Emit {
            key,
            sub,
            next: 0,
            end: 1,
            bucket: None,
        }
    }
}

impl<R: Row> Iterator for Emit<R> {
    type Item = (R, Sub<R>);
    #[inline]
    fn next(&mut self) -> Option<(R, Sub<R>)> {
        if self.next >= self.end {
            return None;
        }
        let mut key = self.key;
        if let Some(slot) = self.bucket {
            key.as_mut()[slot] = self.next;
        }
        self.next += 1;
        Some((key, self.sub))
    }
}

/// Move a substitution of `rule` past atom `at` (see [`CompiledRule::advance`]).
#[inline]
pub(crate) fn emit<R: Row>(
    rule: &CompiledRule,
    id: u32,
    at: Option<usize>,
    vals: &[u32],
    mut slots: R,
    buckets: u32,
) -> Emit<R> {
    let mut out = R::default();
    match rule.advance(at, vals, slots.as_mut(), out.as_mut()) {
        Next::None => Emit::none(),
        Next::Sub { bucket, last } => Emit {
            key: out,
            sub: (if last { id | LAST } else { id }, slots),
            next: 0,
            end: if bucket.is_some() { buckets } else { 1 },
            bucket,
        },
        Next::Head => Emit::one(out, (HEAD, R::default())),
    }
}

/// The records of a [`CompiledRule::direct`] rule for a fact matching its first atom
/// (`vals`: the free values of its entry): the rule's filters before the first atom
/// (on the empty substitution), then the step past the first atom.
pub(crate) fn first_step<R: Row>(
    rule: &CompiledRule,
    id: u32,
    vals: &[u32],
    buckets: u32,
) -> Emit<R> {
    let mut slots = R::default();
    let mut key = R::default();
    match rule.advance(None, &[], slots.as_mut(), key.as_mut()) {
        Next::Sub { .. } => emit(rule, id, Some(0), vals, slots, buckets),
        _ => Emit::none(),
    }
}

/// Move a substitution past its last atom: the head fact, if any.
#[inline]
pub(crate) fn head<R: Row>(
    rule: &CompiledRule,
    at: usize,
    vals: &[u32],
    mut slots: R,
) -> Option<R> {
    let mut out = R::default();
    match rule.advance(Some(at), vals, slots.as_mut(), out.as_mut()) {
        Next::Head => Some(out),
        _ => None,
    }
}
