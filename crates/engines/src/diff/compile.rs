//! Rules as data: the compiled form of a rule, binding patterns, and the append-only
//! tables that give both a stable id.
//!
//! The handle compiles every rule of a program into a [`CompiledRule`] (interned by its
//! IR form and its level, so the same rule keeps its id across program changes) and
//! every body atom into a [`PatternSpec`] (interned by relation, sign and column
//! descriptors). Both tables only grow; the workers read them through [`Shared`].

use crate::rules::names::Names;
use dynalog_analysis::ir::eval_cmp;
use dynalog_analysis::{
    AggFunc, Aggregate, Expr, Literal, Program, RelId, Rule, SymbolTable, Term, Type, Value,
};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// `key[0]` of a negated pattern: the pattern id with this bit set.
pub(crate) const NEG: u32 = 0x4000_0000;
/// `key[0]` of a pattern at a rule's last atom (positive): the pattern id with this
/// bit set. Its entries go to the last atoms' join (module `last_join`), not to the
/// shared index; a pattern used at a last atom and elsewhere has two ids.
pub(crate) const LAST_PAT: u32 = 0x2000_0000;
/// Relation and pattern ids must stay below this.
pub(crate) const ID_LIMIT: u32 = 0x2000_0000;

/// The pattern id of a `key[0]`.
#[inline]
pub(crate) fn pattern_of(key0: u32) -> u32 {
    key0 & !(NEG | LAST_PAT)
}
/// The tag of a head fact flowing out of a stage (instead of a rule id).
pub(crate) const HEAD: u32 = u32::MAX;
/// Set in the tag of a substitution waiting at its rule's last atom (whose join emits
/// the head fact directly).
pub(crate) const LAST: u32 = 0x8000_0000;
/// Rule ids stay below this: the last atoms' join keeps a record's length in the
/// bits above a rule id (module `last_join`).
pub(crate) const RULE_LIMIT: u32 = 1 << 26;
/// The level (coarse stratum) of a rule is the high part of the iteration coordinate:
/// the rules of level `k` start at inner time `k << LEVEL_SHIFT`.
pub(crate) const LEVEL_SHIFT: u32 = 22;
/// At most this many levels (`u32` inner time, 22 bits of rounds per level).
pub(crate) const MAX_LEVELS: u32 = 1 << (32 - LEVEL_SHIFT);

/// How one column of a body atom is matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) enum ColSpec {
    /// Must equal this constant; not part of the key.
    Const(Value),
    /// Bound by an earlier literal: part of the key.
    Bound,
    /// First occurrence of an unbound variable: part of the value.
    Free,
    /// Repeats the unbound variable first seen in this column.
    Eq(u32),
    /// `_`.
    Wild,
}

/// In [`JoinStep::binds`]: a value that binds no slot.
pub(crate) const SKIP: u32 = u32::MAX;

/// The bit of a head row's relation column that makes it an aggregate's input row:
/// the rules of an aggregate's input relation write, in place of its relation id, the
/// aggregate itself ([`agg_tag`]), and their rows go to the aggregates' `reduce`, not
/// to the facts (no rule reads an aggregate's input).
pub(crate) const AGG: u32 = 0x8000_0000;
/// The most relations a program with aggregates may have (the result relation's id
/// takes the low 18 bits of the tag).
const AGG_HEAD_LIMIT: u32 = 1 << 18;

/// An aggregate as the relation column of its input rows: `AGG`, the function (3
/// bits), the value type (2), the number of group columns (4), of the other input
/// columns (4), the result relation (18). Everything the `reduce` needs, in the row
/// itself: a row's meaning never depends on a table that changes.
pub(crate) fn agg_tag(agg: &Aggregate, source_arity: usize) -> Result<u32, String> {
    let rest = source_arity - agg.group;
    if agg.head >= AGG_HEAD_LIMIT || agg.group > 15 || rest > 15 {
        return Err(format!(
            "the aggregate `{}` is too wide for the differential engine (at most 15 group \
             columns and 15 others, in a program of at most {AGG_HEAD_LIMIT} relations)",
            agg.text
        ));
    }
    let func = match agg.func {
        AggFunc::Count => 0,
        AggFunc::Sum => 1,
        AggFunc::Min => 2,
        AggFunc::Max => 3,
        AggFunc::Mean => 4,
    };
    let ty = match agg.ty {
        Type::Number => 0,
        Type::Unsigned => 1,
        Type::Float => 2,
        // Refused by the analysis: only `count` aggregates records.
        Type::Symbol | Type::Record(_) => 3,
    };
    Ok(AGG | func << 28 | ty << 26 | (agg.group as u32) << 22 | (rest as u32) << 18 | agg.head)
}

/// An aggregate tag's (function, value type, group columns, other columns, result
/// relation).
pub(crate) fn agg_untag(tag: u32) -> (AggFunc, Type, usize, usize, RelId) {
    let func = match (tag >> 28) & 7 {
        0 => AggFunc::Count,
        1 => AggFunc::Sum,
        2 => AggFunc::Min,
        3 => AggFunc::Max,
        _ => AggFunc::Mean,
    };
    let ty = match (tag >> 26) & 3 {
        0 => Type::Number,
        1 => Type::Unsigned,
        2 => Type::Float,
        _ => Type::Symbol,
    };
    let group = ((tag >> 22) & 15) as usize;
    let rest = ((tag >> 18) & 15) as usize;
    (func, ty, group, rest, tag & (AGG_HEAD_LIMIT - 1))
}

/// A binding pattern: which facts an atom can match and how they are keyed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(crate) struct PatternSpec {
    pub rel: RelId,
    pub neg: bool,
    pub cols: Vec<ColSpec>,
    /// The entries carry a bucket of their free values after the bound ones (see
    /// [`JoinStep::bucketed`]).
    pub spread: bool,
    /// Used at a rule's last atom (see [`LAST_PAT`]).
    pub last: bool,
}

impl PatternSpec {
    /// The key slots an entry uses: 1 (the pattern) + the bound columns (what
    /// [`PatternSpec::entry`] returns).
    pub(crate) fn key_len(&self) -> usize {
        1 + self
            .cols
            .iter()
            .filter(|c| matches!(c, ColSpec::Bound))
            .count()
    }

    /// The index entry of a fact (given by its values) under this pattern: fills the
    /// bound values into `key[1..]` and the free values into `val[..]`, and returns the
    /// number of key slots used (1 + bound columns), or `None` if the fact does not
    /// match the pattern's constants and repeated variables.
    #[inline]
    pub(crate) fn entry(&self, vals: &[u32], key: &mut [u32], val: &mut [u32]) -> Option<usize> {
        let (mut k, mut v) = (1, 0);
        for (c, col) in self.cols.iter().enumerate() {
            let x = vals[c];
            match *col {
                ColSpec::Const(want) => {
                    if x != want {
                        return None;
                    }
                }
                ColSpec::Eq(j) => {
                    if x != vals[j as usize] {
                        return None;
                    }
                }
                ColSpec::Bound => {
                    key[k] = x;
                    k += 1;
                }
                ColSpec::Free => {
                    val[v] = x;
                    v += 1;
                }
                ColSpec::Wild => {}
            }
        }
        Some(k)
    }
}

/// One positive or negated body atom of a compiled rule, with what follows it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct JoinStep {
    /// `key[0]` of a substitution waiting here: `pattern` or `pattern | NEG`.
    pub key0: u32,
    /// Slots whose values form `key[1..]`, in column order.
    pub key_slots: Vec<u32>,
    /// A positive atom without bound column: the substitution is replicated to every
    /// bucket (`key[1]`) so that the join runs against each worker's slice.
    pub bucketed: bool,
    /// For each value of a matched index entry, the slot it binds ([`SKIP`]: none, a
    /// wildcard's value).
    pub binds: Vec<u32>,
    /// Filters and assignments after this atom, up to the next atom.
    pub post: Vec<Literal>,
    /// Slots still needed by a substitution waiting at this atom (bit mask).
    pub keep: u64,
}

/// A rule compiled for the circuit: what the join closures need, by rule id.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct CompiledRule {
    pub head_rel: RelId,
    pub head: Vec<Expr>,
    /// Filters and assignments before the first atom.
    pub pre: Vec<Literal>,
    pub joins: Vec<JoinStep>,
    /// The patterns the rule reads through the index: `key0` values, deduplicated.
    pub patterns: Vec<u32>,
    /// The first atom is positive with no bound column: its substitutions come
    /// straight from the facts (the entries operator applies the first step to each
    /// matching fact), not from a seed joined with an index of every matching fact.
    pub direct: bool,
    /// Where each head argument comes from when the rule's last atom is positive and
    /// nothing follows it, and every head argument is a variable or a constant: the
    /// last atoms' join then writes a head from the substitution and the entry
    /// directly ([`CompiledRule::last_head`]), not through [`CompiledRule::advance`].
    #[serde(default)]
    pub head_from: Option<Vec<HeadFrom>>,
    /// The program's symbol table (shared), which string functors read and intern
    /// into. Not sent to the other processes of a cluster: programs with string
    /// functors run in one process ([`crate::config::create`] refuses them in a cluster).
    #[serde(skip)]
    pub symbols: SymbolTable,
}

/// Where a head argument comes from at the rule's last atom.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) enum HeadFrom {
    /// A slot of the substitution.
    Slot(u32),
    /// A free value of the last atom's entry.
    Val(u32),
    Const(Value),
}

/// Where a substitution goes after a step.
pub(crate) enum Next {
    /// Dropped (a filter failed, or a division by zero).
    None,
    /// Waiting at the next atom under this key (`last`: the rule's last atom).
    Sub { bucket: Option<usize>, last: bool },
    /// A head fact (values written into the row buffer).
    Head,
}

impl CompiledRule {
    /// The head fact of substitution `slots` at the rule's last atom with the entry's
    /// free values `vals` (missing values are 0, as a row's padding), when
    /// [`CompiledRule::head_from`] says where each argument comes from; the same fact as
    /// [`CompiledRule::advance`] past the last atom.
    #[inline]
    pub(crate) fn last_head<R: super::types::Row>(
        &self,
        from: &[HeadFrom],
        slots: &[u32],
        vals: &[u32],
    ) -> R {
        let mut head = R::default();
        let out = head.as_mut();
        out[0] = self.head_rel;
        for (o, f) in out[1..].iter_mut().zip(from) {
            *o = match *f {
                HeadFrom::Slot(s) => slots.get(s as usize).copied().unwrap_or(0),
                HeadFrom::Val(k) => vals.get(k as usize).copied().unwrap_or(0),
                HeadFrom::Const(c) => c,
            };
        }
        head
    }

    /// Apply the filters and assignments `ops` to `slots`; `false` if one fails.
    #[inline]
    fn apply(&self, ops: &[Literal], slots: &mut [u32]) -> bool {
        let symbols = &self.symbols;
        for op in ops {
            match op {
                Literal::Filter { op, ty, lhs, rhs } => {
                    match (lhs.eval(slots, symbols), rhs.eval(slots, symbols)) {
                        (Some(l), Some(r)) if eval_cmp(*op, *ty, l, r) => {}
                        _ => return false,
                    }
                }
                Literal::Assign { var, expr } => match expr.eval(slots, symbols) {
                    Some(v) => slots[*var as usize] = v,
                    None => return false,
                },
                Literal::Atom(_) | Literal::Not(_) => {}
            }
        }
        true
    }

    /// Move a substitution on: `at` is the atom it just passed (`None`: the seed, before
    /// the first atom), `vals` the free values of the matched entry (empty for a
    /// negation). `out` comes zeroed (a new row: clearing it here was a call to
    /// `memset` per substitution, 5% of tc's evaluation). On return, `slots` holds the
    /// substitution and `out` the key to wait under (for [`Next::Sub`]) or the head
    /// fact (for [`Next::Head`]).
    #[inline]
    pub(crate) fn advance(
        &self,
        at: Option<usize>,
        vals: &[u32],
        slots: &mut [u32],
        out: &mut [u32],
    ) -> Next {
        let (ops, next) = match at {
            None => (&self.pre[..], 0),
            Some(i) => {
                let step = &self.joins[i];
                for (k, &slot) in step.binds.iter().enumerate() {
                    if slot != SKIP {
                        slots[slot as usize] = vals[k];
                    }
                }
                (&step.post[..], i + 1)
            }
        };
        if !self.apply(ops, slots) {
            return Next::None;
        }
        debug_assert!(out.iter().all(|&v| v == 0), "advance wants a zeroed row");
        match self.joins.get(next) {
            Some(step) => {
                out[0] = step.key0;
                for (k, &slot) in step.key_slots.iter().enumerate() {
                    out[k + 1] = slots[slot as usize];
                }
                for (i, s) in slots.iter_mut().enumerate() {
                    if i >= 64 || step.keep & (1u64 << i) == 0 {
                        *s = 0;
                    }
                }
                Next::Sub {
                    bucket: step.bucketed.then_some(1 + step.key_slots.len()),
                    last: next + 1 == self.joins.len(),
                }
            }
            None => {
                out[0] = self.head_rel;
                for (k, e) in self.head.iter().enumerate() {
                    // Most head arguments are variables: read inline, not through the
                    // general (out-of-line, recursive) `eval`.
                    let v = match e {
                        Expr::Var(v) => Some(slots[*v as usize]),
                        Expr::Const(c) => Some(*c),
                        e => e.eval(slots, &self.symbols),
                    };
                    match v {
                        Some(v) => out[k + 1] = v,
                        None => return Next::None,
                    }
                }
                Next::Head
            }
        }
    }
}

/// [`CompiledRule::head_from`] of a rule with head arguments `head` and last atom
/// `last`: `None` unless the last atom is positive with nothing after it and every head
/// argument is a variable or a constant.
fn head_from(head: &[Expr], last: Option<&JoinStep>) -> Option<Vec<HeadFrom>> {
    let last = last.filter(|j| j.key0 & NEG == 0 && j.post.is_empty())?;
    head.iter()
        .map(|e| match e {
            Expr::Var(v) => Some(match last.binds.iter().position(|b| b == v) {
                Some(k) => HeadFrom::Val(k as u32),
                None => HeadFrom::Slot(*v),
            }),
            Expr::Const(c) => Some(HeadFrom::Const(*c)),
            _ => None,
        })
        .collect()
}

/// The level of every rule: a coarse stratification in which recursion and positive
/// dependencies stay in one level and a negated relation comes from a lower level (but
/// for the dominated candidates of a recursive relation with subsumption, negated in
/// their own stratum: [`dynalog_analysis::Subsumed`]; likewise a recursive choice,
/// which also starts a level of its own: [`dynalog_analysis::Chosen`]).
/// (The analysis' strata are strongly connected components; many of them share a level.)
pub(crate) fn levels(program: &Program) -> Vec<u32> {
    let mut rel_level = vec![0u32; program.relations.len()];
    for stratum in &program.strata {
        let mut level = 0;
        // An aggregate reads its input complete: one level above it.
        for &a in &stratum.aggregates {
            let source = program.aggregates[a].source as usize;
            level = level.max(rel_level[source] + 1);
        }
        for &ri in &stratum.rules {
            for lit in &program.rules[ri].body {
                match lit {
                    // A recursive choice reads what it depends on complete: its result
                    // depends on the round each candidate is found in.
                    Literal::Atom(a) if !stratum.relations.contains(&a.relation) => {
                        let above = u32::from(stratum.choice.is_some());
                        level = level.max(rel_level[a.relation as usize] + above);
                    }
                    // A recursive relation with subsumption negates its dominated
                    // candidates, of its own stratum: one level, whose loop takes back
                    // a tuple when a candidate found later dominates it.
                    Literal::Not(a) if !stratum.relations.contains(&a.relation) => {
                        level = level.max(rel_level[a.relation as usize] + 1)
                    }
                    _ => {}
                }
            }
        }
        for &r in &stratum.relations {
            rel_level[r as usize] = level;
        }
    }
    program
        .rules
        .iter()
        .map(|r| rel_level[r.head.relation as usize])
        .collect()
}

/// Variables an expression reads, as a bit mask.
fn expr_vars(e: &Expr, mask: &mut u64) {
    e.for_each_var(&mut |v| *mask |= bit(v));
}

fn bit(v: u32) -> u64 {
    if v < 64 { 1u64 << v } else { 0 }
}

fn literal_vars(lit: &Literal) -> u64 {
    let mut m = 0;
    match lit {
        Literal::Atom(a) | Literal::Not(a) => {
            for t in &a.args {
                if let Term::Var(v) = t {
                    m |= bit(*v);
                }
            }
        }
        Literal::Filter { lhs, rhs, .. } => {
            expr_vars(lhs, &mut m);
            expr_vars(rhs, &mut m);
        }
        Literal::Assign { var, expr } => {
            m |= bit(*var);
            expr_vars(expr, &mut m);
        }
    }
    m
}

/// The append-only tables shared by the handle (which appends) and the workers (which
/// read, caching locally).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub rules: RwLock<Vec<Arc<CompiledRule>>>,
    pub patterns: RwLock<Vec<Arc<PatternSpec>>>,
    /// Whether some rule registered so far feeds an aggregate (its heads are tagged
    /// `AGG`): until then, every head is a fact, and the circuit sends the heads on
    /// without looking at each. Set before the rule is in `rules`, so a worker that
    /// sees a tagged head (made with the rule) sees it set.
    aggregates: AtomicBool,
}

impl Shared {
    /// Note that `rule` is registered (see `aggregates`).
    fn note(&self, rule: &CompiledRule) {
        if rule.head_rel & AGG != 0 {
            self.aggregates.store(true, Ordering::Release);
        }
    }

    /// Whether some rule registered so far feeds an aggregate (see `aggregates`).
    pub fn feeds_aggregates(&self) -> bool {
        self.aggregates.load(Ordering::Acquire)
    }
}

/// One entry of the shared tables, as process 0 of a cluster sends it to the others
/// (see [`super::Role::Leader`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum TableEntry {
    Rule(u32, CompiledRule),
    Pattern(u32, PatternSpec),
}

impl Shared {
    /// The entries from rule id `rules` and pattern id `patterns` on, patterns first.
    pub(crate) fn entries_from(&self, rules: usize, patterns: usize) -> Vec<TableEntry> {
        let mut out = Vec::new();
        let p = self.patterns.read().unwrap_or_else(|e| e.into_inner());
        for (id, spec) in p.iter().enumerate().skip(patterns) {
            out.push(TableEntry::Pattern(id as u32, (**spec).clone()));
        }
        let r = self.rules.read().unwrap_or_else(|e| e.into_inner());
        for (id, rule) in r.iter().enumerate().skip(rules) {
            out.push(TableEntry::Rule(id as u32, (**rule).clone()));
        }
        out
    }

    /// The number of (rules, patterns) registered.
    pub(crate) fn sizes(&self) -> (usize, usize) {
        let r = self.rules.read().unwrap_or_else(|e| e.into_inner()).len();
        let p = self
            .patterns
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len();
        (r, p)
    }

    /// Add entries received from process 0, in order. An entry already present (every
    /// worker of a process receives them all) is skipped; a gap is a protocol error.
    pub(crate) fn receive(&self, entries: &[TableEntry]) {
        for e in entries {
            match e {
                TableEntry::Pattern(id, spec) => append_at(&self.patterns, *id, spec, "pattern"),
                TableEntry::Rule(id, rule) => {
                    self.note(rule);
                    append_at(&self.rules, *id, rule, "rule")
                }
            }
        }
    }
}

/// The worker's cache of the shared rule and pattern tables. Ids are only ever appended,
/// and an id reaches a worker's data only after the handle registered it, so a miss is
/// served by refreshing the cache from the shared table.
pub(crate) struct Tables {
    pub(crate) shared: Arc<Shared>,
    rules: RefCell<Vec<Arc<CompiledRule>>>,
    patterns: RefCell<Vec<Arc<PatternSpec>>>,
}

impl Tables {
    pub(crate) fn new(shared: Arc<Shared>) -> Tables {
        Tables {
            shared,
            rules: RefCell::new(Vec::new()),
            patterns: RefCell::new(Vec::new()),
        }
    }

    #[inline]
    pub(crate) fn with_rule<T>(&self, id: u32, f: impl FnOnce(&CompiledRule) -> T) -> T {
        {
            let rules = self.rules.borrow();
            if let Some(rule) = rules.get(id as usize) {
                return f(rule);
            }
        }
        {
            let shared = self.shared.rules.read().unwrap_or_else(|e| e.into_inner());
            let mut rules = self.rules.borrow_mut();
            let have = rules.len();
            rules.extend(shared[have..].iter().cloned());
        }
        let rules = self.rules.borrow();
        f(&rules[id as usize])
    }

    /// The spec of pattern `id`.
    pub(crate) fn pattern(&self, id: u32) -> Arc<PatternSpec> {
        {
            let patterns = self.patterns.borrow();
            if let Some(p) = patterns.get(id as usize) {
                return p.clone();
            }
        }
        {
            let shared = self
                .shared
                .patterns
                .read()
                .unwrap_or_else(|e| e.into_inner());
            let mut patterns = self.patterns.borrow_mut();
            let have = patterns.len();
            patterns.extend(shared[have..].iter().cloned());
        }
        self.patterns.borrow()[id as usize].clone()
    }
}

/// Append `value` to `table` as entry `id` if it is the next one; an `id` already
/// present is skipped, one beyond the next is a protocol error.
fn append_at<T: Clone>(table: &RwLock<Vec<Arc<T>>>, id: u32, value: &T, what: &str) {
    let mut t = table.write().unwrap_or_else(|e| e.into_inner());
    let have = t.len() as u32;
    assert!(id <= have, "{what} {id} received before {what} {have}");
    if id == have {
        t.push(Arc::new(value.clone()));
    }
}

/// The handle's side of the tables: interning maps and the shared tables.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    rule_ids: FxHashMap<String, u32>,
    pattern_ids: FxHashMap<PatternSpec, u32>,
    pub shared: Arc<Shared>,
}

/// The requirements of a set of rules on the dataflow's fixed shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Row width: the largest of relation arity + 1 and slot count.
    pub width: usize,
    /// Join stages: the most atoms (positive and negated) in one rule body.
    pub stages: usize,
    /// Levels used.
    pub levels: u32,
}

impl Registry {
    fn pattern_id(&mut self, spec: PatternSpec) -> Result<u32, String> {
        if let Some(&id) = self.pattern_ids.get(&spec) {
            return Ok(id);
        }
        let mut table = self
            .shared
            .patterns
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let id = table.len() as u32;
        if id >= ID_LIMIT {
            return Err("too many binding patterns".into());
        }
        table.push(Arc::new(spec.clone()));
        self.pattern_ids.insert(spec, id);
        Ok(id)
    }

    /// The id of a rule at a level, compiling and registering it if new.
    /// A rule of an aggregate's input writes `tag` (see [`agg_tag`]) for its head's
    /// relation.
    pub(crate) fn rule_id(
        &mut self,
        rule: &Rule,
        level: u32,
        tag: Option<u32>,
        symbols: &SymbolTable,
    ) -> Result<u32, String> {
        let canon = format!(
            "{level}|{tag:?}|{:?}|{:?}|{:?}",
            rule.head, rule.body, rule.var_types
        );
        if let Some(&id) = self.rule_ids.get(&canon) {
            return Ok(id);
        }
        let mut compiled = self.compile(rule, level)?;
        compiled.symbols = symbols.clone();
        if let Some(tag) = tag {
            compiled.head_rel = tag;
        }
        self.shared.note(&compiled);
        let mut table = self.shared.rules.write().unwrap_or_else(|e| e.into_inner());
        let id = table.len() as u32;
        if id >= RULE_LIMIT {
            return Err("too many rules".into());
        }
        table.push(Arc::new(compiled));
        drop(table);
        self.rule_ids.insert(canon, id);
        Ok(id)
    }

    fn compile(&mut self, rule: &Rule, level: u32) -> Result<CompiledRule, String> {
        if level >= MAX_LEVELS {
            return Err(format!(
                "more than {MAX_LEVELS} levels of negation are not supported"
            ));
        }
        let slots = rule.var_names.len();
        // live[i]: variables read by body literals i.. and the head.
        let mut live = vec![0u64; rule.body.len() + 1];
        let mut head_vars = 0;
        for e in &rule.head.args {
            expr_vars(e, &mut head_vars);
        }
        live[rule.body.len()] = head_vars;
        for i in (0..rule.body.len()).rev() {
            live[i] = live[i + 1] | literal_vars(&rule.body[i]);
        }
        let mut bound = vec![false; slots];
        let mut pre = Vec::new();
        let mut joins: Vec<JoinStep> = Vec::new();
        // Whether every positive atom so far selects by a constant (see `spread` below).
        let mut selective = true;
        let last_atom = rule
            .body
            .iter()
            .rposition(|l| matches!(l, Literal::Atom(_) | Literal::Not(_)));
        for (i, lit) in rule.body.iter().enumerate() {
            let (atom, neg) = match lit {
                Literal::Atom(a) => (a, false),
                Literal::Not(a) => (a, true),
                Literal::Filter { .. } | Literal::Assign { .. } => {
                    if let Literal::Assign { var, .. } = lit
                        && let Some(b) = bound.get_mut(*var as usize)
                    {
                        *b = true;
                    }
                    match joins.last_mut() {
                        Some(step) => step.post.push(lit.clone()),
                        None => pre.push(lit.clone()),
                    }
                    continue;
                }
            };
            if atom.relation >= ID_LIMIT {
                return Err("too many relations".into());
            }
            let mut cols = Vec::with_capacity(atom.args.len());
            let mut key_slots = Vec::new();
            let mut binds = Vec::new();
            let mut first_col: FxHashMap<u32, u32> = FxHashMap::default();
            // A positive atom with a bound column reads a wildcard's value without
            // binding it: `T(y, p, _)`, `T(_, p, z)` and `T(x, p, y)` with `p` bound then
            // share one pattern and its index. (An atom with no bound column keeps the
            // wildcard out of its entries, which the projection makes fewer.)
            let is_bound = |v: u32| bound.get(v as usize).copied().unwrap_or(false);
            let keyed = !neg
                && atom
                    .args
                    .iter()
                    .any(|t| matches!(*t, Term::Var(v) if is_bound(v)));
            for (c, t) in atom.args.iter().enumerate() {
                cols.push(match *t {
                    Term::Const(v) => ColSpec::Const(v),
                    Term::Wildcard if keyed => {
                        binds.push(SKIP);
                        ColSpec::Free
                    }
                    Term::Wildcard => ColSpec::Wild,
                    Term::Var(v) if is_bound(v) => {
                        key_slots.push(v);
                        ColSpec::Bound
                    }
                    Term::Var(v) => match first_col.get(&v) {
                        Some(&j) => ColSpec::Eq(j),
                        None => {
                            first_col.insert(v, c as u32);
                            binds.push(v);
                            ColSpec::Free
                        }
                    },
                });
            }
            for &v in binds.iter().filter(|&&v| v != SKIP) {
                if let Some(b) = bound.get_mut(v as usize) {
                    *b = true;
                }
            }
            // Spread the entries of a positive atom over the buckets, the substitutions
            // waiting at it going to every bucket, when it has no bound column (its key
            // would hold every entry), or when the substitutions are few: every earlier
            // atom selected by a constant, as schema atoms do (`T(p, "rdfs:domain", c),
            // T(y, p, _)`). Its keys are then often few and skewed (the predicates of a
            // triple store), and keyed entries would leave one worker most of the index.
            let has_free = cols.iter().any(|c| matches!(c, ColSpec::Free));
            let spread = !neg && (key_slots.is_empty() || (selective && has_free));
            if !neg {
                selective &= atom.args.iter().any(|t| matches!(t, Term::Const(_)));
            }
            let last = !neg && last_atom == Some(i);
            let id = self.pattern_id(PatternSpec {
                rel: atom.relation,
                neg,
                cols,
                spread,
                last,
            })?;
            let key0 = match (neg, last) {
                (true, _) => id | NEG,
                (false, true) => id | LAST_PAT,
                (false, false) => id,
            };
            joins.push(JoinStep {
                key0,
                bucketed: spread,
                key_slots,
                binds,
                post: Vec::new(),
                keep: live[i],
            });
        }
        let direct = joins
            .first()
            .is_some_and(|j| j.key0 & NEG == 0 && j.key_slots.is_empty());
        let mut patterns = Vec::new();
        for j in joins.iter().skip(usize::from(direct)) {
            if !patterns.contains(&j.key0) {
                patterns.push(j.key0);
            }
        }
        let head_from = head_from(&rule.head.args, joins.last());
        Ok(CompiledRule {
            head_rel: rule.head.relation,
            head: rule.head.args.clone(),
            pre,
            joins,
            patterns,
            direct,
            head_from,
            symbols: SymbolTable::new(),
        })
    }
}

/// The shape a program needs.
pub(crate) fn shape(program: &Program) -> Shape {
    let arity = program
        .relations
        .iter()
        .map(|r| r.arity())
        .max()
        .unwrap_or(0);
    let slots = program
        .rules
        .iter()
        .map(|r| r.var_names.len())
        .max()
        .unwrap_or(0);
    let stages = program
        .rules
        .iter()
        .map(|r| {
            r.body
                .iter()
                .filter(|l| matches!(l, Literal::Atom(_) | Literal::Not(_)))
                .count()
        })
        .max()
        .unwrap_or(0);
    let levels = levels(program).into_iter().max().map_or(1, |l| l + 1);
    Shape {
        width: (arity + 1).max(slots),
        stages,
        levels,
    }
}

/// A [`CompiledRule`] with its patterns and names, for printing (see
/// [`CompiledRule::display`]).
pub(crate) struct RuleDisplay<'a> {
    rule: &'a CompiledRule,
    patterns: &'a [Arc<PatternSpec>],
    names: Names<'a>,
}

impl CompiledRule {
    /// The compiled rule as text, one line per operation: the filters and assignments
    /// before the first atom, then per atom the join of the substitutions with the index
    /// of its binding pattern (under the key of the bound variables) or, for a negated
    /// atom, the antijoin with the pattern's keys, each followed by its filters and
    /// assignments, then the head. `(from the facts)`: the first atom of a direct rule,
    /// whose substitutions come from the facts; `spread over the buckets`: a
    /// substitution waiting there is replicated to every bucket of the index.
    pub(crate) fn display<'a>(
        &'a self,
        patterns: &'a [Arc<PatternSpec>],
        program: &'a Program,
        rule: &'a Rule,
    ) -> RuleDisplay<'a> {
        RuleDisplay {
            rule: self,
            patterns,
            names: Names { program, rule },
        }
    }
}

impl fmt::Display for RuleDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = &self.names;
        for lit in &self.rule.pre {
            writeln!(f, "  {}", n.literal(lit))?;
        }
        for (i, step) in self.rule.joins.iter().enumerate() {
            let id = pattern_of(step.key0);
            let Some(spec) = self.patterns.get(id as usize) else {
                writeln!(f, "  join pattern {id} (unknown)")?;
                continue;
            };
            let key: Vec<String> = step.key_slots.iter().map(|&s| n.var(s)).collect();
            let (mut bound, mut free) = (key.iter(), step.binds.iter());
            let mut args: Vec<String> = Vec::with_capacity(spec.cols.len());
            for (c, col) in spec.cols.iter().enumerate() {
                let arg = match *col {
                    ColSpec::Const(v) => n.constant(v, n.col_type(spec.rel, c)),
                    ColSpec::Bound => bound.next().cloned().unwrap_or_else(|| "?".into()),
                    ColSpec::Free => match free.next() {
                        Some(&s) if s != SKIP => n.var(s),
                        _ => "_".into(),
                    },
                    ColSpec::Eq(j) => args.get(j as usize).cloned().unwrap_or_else(|| "?".into()),
                    ColSpec::Wild => "_".into(),
                };
                args.push(arg);
            }
            let atom = n.atom(spec.rel, &args);
            if spec.neg {
                write!(f, "  antijoin pattern {id} {atom}")?;
            } else {
                write!(f, "  join index of pattern {id} {atom}")?;
            }
            if !key.is_empty() {
                write!(f, " key ({})", key.join(", "))?;
            }
            if i == 0 && self.rule.direct {
                write!(f, " (from the facts)")?;
            }
            if step.bucketed {
                write!(f, " spread over the buckets")?;
            }
            writeln!(f)?;
            for lit in &step.post {
                writeln!(f, "  {}", n.literal(lit))?;
            }
        }
        n.head(f, self.rule.head_rel, &self.rule.head)
    }
}

/// The compiled rules of `program`, as text (see [`crate::explain::plan`]).
pub(crate) fn explain(program: &Program) -> Result<String, String> {
    let levels = levels(program);
    let mut registry = Registry::default();
    let mut blocks = Vec::new();
    for (i, (rule, &level)) in program.rules.iter().zip(&levels).enumerate() {
        let id = registry.rule_id(rule, level, None, &program.symbols)?;
        let rules = registry
            .shared
            .rules
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let patterns = registry
            .shared
            .patterns
            .read()
            .unwrap_or_else(|e| e.into_inner());
        let Some(compiled) = rules.get(id as usize) else {
            return Err(format!("rule {i} was not registered"));
        };
        blocks.push(format!(
            "rule {i} (level {level}): {}\n{}",
            rule.text.trim(),
            compiled.display(&patterns, program, rule)
        ));
    }
    Ok(blocks.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynalog_syntax::SourceFile;

    fn program(text: &str) -> Program {
        let file = SourceFile::new("t.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parse");
        dynalog_analysis::analyse(&file, &ast).expect("analyse")
    }

    #[test]
    fn a_head_written_from_its_sources_is_the_head_advance_makes() {
        // Heads of variables bound before the last atom and by it, constants, a
        // repeated variable, a wildcard, and rules that must take the general path.
        let p = program(
            ".decl e(x: number, y: number)\n.decl t(x: number, y: number, z: number)\n\
             .decl h(a: number, b: number, c: number, d: number)\n\
             h(x, z, 7, x) :- e(x, y), e(y, z).\n\
             h(z, y, x, z) :- e(x, y), t(y, _, z).\n\
             h(x, y, y, 1) :- e(x, 5), e(5, y).\n\
             h(x, y, z, z) :- e(x, y), e(y, z), x != z.\n\
             h(x, y, w, w) :- e(x, y), e(y, z), w = z + 1.\n",
        );
        let levels = levels(&p);
        let mut registry = Registry::default();
        let mut fast = 0;
        for (rule, &level) in p.rules.iter().zip(&levels) {
            let id = registry
                .rule_id(rule, level, None, &p.symbols)
                .expect("compiles");
            let rules = registry.shared.rules.read().expect("rules");
            let compiled = &rules[id as usize];
            let Some(from) = compiled.head_from.as_deref() else {
                continue;
            };
            fast += 1;
            let at = compiled.joins.len() - 1;
            // Substitutions and entries of small values, every combination.
            for seed in 0..64u32 {
                let mut slots = [0u32; 8];
                for (i, s) in slots.iter_mut().enumerate() {
                    *s = (seed >> i) % 3 + 1;
                }
                let vals = [seed % 5, seed % 7, seed % 2];
                let mut s = slots;
                let mut out = [0u32; 8];
                let general = match compiled.advance(Some(at), &vals, &mut s, &mut out) {
                    Next::Head => Some(out),
                    _ => None,
                };
                let direct: [u32; 8] = compiled.last_head(from, &slots, &vals);
                assert_eq!(general, Some(direct), "rule {id}: {}", rule.text);
            }
        }
        // The first three go the direct way; a filter or an assignment after the last
        // atom keeps a rule on the general one.
        assert_eq!(fast, 3);
    }
}
