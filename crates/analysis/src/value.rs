//! The value domain: every value is a `u32`.

use hashbrown::HashTable;
use rustc_hash::FxHashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// One column value. Its meaning depends on the column's [`Type`]:
/// a symbol id, an `i32`, a `u32`, or an `f32`'s bits.
pub type Value = u32;

/// Sort rows of `arity` values, stored flat in `data` (whose length is a multiple of
/// `arity`), in place, ascending in lexicographic order: the rows as arrays (compared
/// word by word; a pair as one 64-bit key) up to eight values, through a vector of row
/// slices and a copy beyond. Used where every tuple of a relation is sorted at once: the
/// output files, the `diff` engine's base facts.
pub fn sort_rows(data: &mut [Value], arity: usize) {
    sort_rows_on(data, arity, 1);
}

/// [`sort_rows`] on up to `threads` threads: the rows are split in place at their
/// median (`select_nth_unstable`, one pass), each half sorted on a thread of its own,
/// and so on while threads are left, so that no copy of the rows is made (the output
/// of a 24.7M-fact relation sorts in 198 MB, not twice that). Fewer than
/// [`PARALLEL_SORT_FROM`] rows are sorted on the calling thread.
pub fn sort_rows_on(data: &mut [Value], arity: usize, threads: usize) {
    fn by<const N: usize>(data: &mut [Value], threads: usize) {
        let (rows, rest) = data.as_chunks_mut::<N>();
        debug_assert!(rest.is_empty());
        sort_split(rows, threads, &|r: &[Value; N]| *r);
    }
    match arity {
        0 => {}
        1 => sort_split(data, threads, &|v: &Value| *v),
        2 => {
            // One comparison of 64 bits a pair (as fast as sorting packed words).
            let (rows, _) = data.as_chunks_mut::<2>();
            sort_split(rows, threads, &|r: &[Value; 2]| {
                (u64::from(r[0]) << 32) | u64::from(r[1])
            });
        }
        3 => by::<3>(data, threads),
        4 => by::<4>(data, threads),
        5 => by::<5>(data, threads),
        6 => by::<6>(data, threads),
        7 => by::<7>(data, threads),
        8 => by::<8>(data, threads),
        _ => {
            let mut rows: Vec<&[Value]> = data.chunks_exact(arity).collect();
            sort_split(&mut rows, threads, &|r: &&[Value]| *r);
            let sorted: Vec<Value> = rows.concat();
            data.copy_from_slice(&sorted);
        }
    }
}

/// The rows from which [`sort_rows_on`] uses more than one thread (below, a thread's
/// start costs more than it saves).
pub const PARALLEL_SORT_FROM: usize = 1 << 16;

/// Sort `rows` by `key` (unstable), split at the median among `threads` threads.
fn sort_split<T: Send, K: Ord>(rows: &mut [T], threads: usize, key: &(impl Fn(&T) -> K + Sync)) {
    if threads <= 1 || rows.len() < PARALLEL_SORT_FROM {
        rows.sort_unstable_by_key(key);
        return;
    }
    sort_on_threads_by(rows, threads, &|a: &T, b: &T| key(a).cmp(&key(b)));
}

/// Sort `items` by `compare` (unstable) on up to `threads` threads, as
/// [`sort_rows_on`] does: split in place at the median, each half on a thread.
pub fn sort_on_threads_by<T: Send>(
    items: &mut [T],
    threads: usize,
    compare: &(impl Fn(&T, &T) -> std::cmp::Ordering + Sync),
) {
    if threads <= 1 || items.len() < PARALLEL_SORT_FROM {
        items.sort_unstable_by(compare);
        return;
    }
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, compare);
    let (low, high) = items.split_at_mut(mid);
    let half = threads / 2;
    std::thread::scope(|s| {
        s.spawn(|| sort_on_threads_by(low, half, compare));
        sort_on_threads_by(high, threads - half, compare);
    });
}

/// The types of the language: four primitive types, and record and algebraic data
/// types (`.type P = [a: number, b: symbol]`, `.type T = A {..} | B {..}`), whose
/// values are ids in the program's record table ([`SymbolTable::pack`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Type {
    /// Signed 32-bit integer (`number`).
    Number,
    /// Unsigned 32-bit integer (`unsigned`).
    Unsigned,
    /// 32-bit float (`float`).
    Float,
    /// Interned string (`symbol`).
    Symbol,
    /// A record or algebraic data type: its index in the table's registry of types
    /// ([`SymbolTable::record_type`]).
    Record(u32),
}

impl Type {
    pub fn name(self) -> &'static str {
        match self {
            Type::Number => "number",
            Type::Unsigned => "unsigned",
            Type::Float => "float",
            Type::Symbol => "symbol",
            Type::Record(_) => "record",
        }
    }

    /// Whether its values are ids in a table (symbols and records): compared with `=`
    /// and `!=` only.
    pub fn is_interned(self) -> bool {
        matches!(self, Type::Symbol | Type::Record(_))
    }

    pub fn from_name(name: &str) -> Option<Type> {
        Some(match name {
            "number" => Type::Number,
            "unsigned" => Type::Unsigned,
            "float" => Type::Float,
            "symbol" => Type::Symbol,
            _ => return None,
        })
    }

    /// Encode a number of this type; `None` when out of range (or for symbols).
    pub fn encode_int(self, n: i128) -> Option<Value> {
        match self {
            Type::Number => i32::try_from(n).ok().map(|v| v as u32),
            Type::Unsigned => u32::try_from(n).ok(),
            Type::Float => Some((n as f32).to_bits()),
            Type::Symbol | Type::Record(_) => None,
        }
    }

    /// Parse a textual value of this type (fact files); symbols are interned.
    pub fn parse(self, text: &str, symbols: &mut SymbolTable) -> Result<Value, ParseValueError> {
        let error = |kind| ParseValueError {
            text: text.to_string(),
            kind,
            detail: String::new(),
        };
        match self {
            Type::Symbol => Ok(symbols.intern(text)),
            Type::Record(_) => {
                records::parse(self, text, symbols).map_err(|detail| ParseValueError {
                    text: text.to_string(),
                    kind: ParseValueErrorKind::NotRecord,
                    detail,
                })
            }
            Type::Number => parse_int(text)
                .and_then(|n| i32::try_from(n).ok())
                .map(|v| v as u32)
                .ok_or_else(|| error(ParseValueErrorKind::NotNumber)),
            Type::Unsigned => parse_int(text)
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| error(ParseValueErrorKind::NotUnsigned)),
            Type::Float => {
                let t = text.trim();
                let x = t
                    .parse::<f32>()
                    .map_err(|_| error(ParseValueErrorKind::NotFloat))?;
                // `inf` and `infinity` spell an infinity; a number beyond the largest
                // float does not (Rust's parser rounds it to an infinity silently).
                let spelled = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
                if x.is_infinite() && spelled != "inf" && spelled != "infinity" {
                    return Err(error(ParseValueErrorKind::FloatOutOfRange));
                }
                Ok(x.to_bits())
            }
        }
    }

    /// Render a value of this type as text (fact files, CSV output), as Soufflé prints
    /// it: a record's symbols are written as they are (see [`Type::render_quoted`]).
    pub fn render(self, v: Value, symbols: &SymbolTable) -> String {
        match self {
            Type::Symbol => symbols.resolve(v).to_string(),
            Type::Record(_) => records::render(self, v, &symbols.read(), false),
            Type::Number => (v as i32).to_string(),
            Type::Unsigned => v.to_string(),
            Type::Float => format_float(f32::from_bits(v)),
        }
    }

    /// [`Type::render`] with the table's read lock already held (many values at once).
    pub fn render_read(self, v: Value, symbols: &SymbolsRead<'_>) -> String {
        match self {
            Type::Record(_) => records::render(self, v, symbols, false),
            Type::Symbol => symbols.resolve(v).to_string(),
            _ => self.render_primitive(v),
        }
    }

    /// [`Type::render`], but the symbols inside a record quoted (`"` and `\\` escaped), so
    /// that [`Type::parse`] reads back the same record whatever its symbols hold.
    /// A plain symbol is rendered as it is.
    pub fn render_quoted(self, v: Value, symbols: &SymbolsRead<'_>) -> String {
        match self {
            Type::Record(_) => records::render(self, v, symbols, true),
            Type::Symbol => symbols.resolve(v).to_string(),
            _ => self.render_primitive(v),
        }
    }

    /// A number, unsigned or float as text.
    fn render_primitive(self, v: Value) -> String {
        match self {
            Type::Number => (v as i32).to_string(),
            Type::Unsigned => v.to_string(),
            Type::Float => format_float(f32::from_bits(v)),
            Type::Symbol | Type::Record(_) => v.to_string(),
        }
    }

    /// Order two values of this type the way a user expects (numbers numerically,
    /// symbols as strings, records field by field, `nil` first).
    pub fn compare(self, a: Value, b: Value, symbols: &SymbolsRead<'_>) -> std::cmp::Ordering {
        match self {
            Type::Symbol => symbols.resolve(a).cmp(symbols.resolve(b)),
            Type::Record(_) => records::compare(self, a, b, symbols),
            Type::Number => (a as i32).cmp(&(b as i32)),
            Type::Unsigned => a.cmp(&b),
            Type::Float => f32::from_bits(a).total_cmp(&f32::from_bits(b)),
        }
    }
}

impl fmt::Display for Type {
    /// The name of a primitive type; `record` for a record or algebraic data type (the
    /// analysis names those by their declared names).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a text is not a value of a type ([`Type::parse`]). Its `Display` is the reason
/// in words, e.g. ``"`12a` is not a number (signed 32-bit integer)"``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseValueError {
    /// The text as given.
    pub text: String,
    pub kind: ParseValueErrorKind,
    /// For a record: what is wrong where (e.g. "expected `,` or `]` at byte 6").
    pub detail: String,
}

/// The kinds of [`ParseValueError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseValueErrorKind {
    /// Not a signed 32-bit integer (malformed or out of range).
    NotNumber,
    /// Not an unsigned 32-bit integer (malformed or out of range).
    NotUnsigned,
    /// Not a float at all.
    NotFloat,
    /// A float whose magnitude is beyond the largest 32-bit float (e.g. `1e40`).
    FloatOutOfRange,
    /// Not a record (or value of an algebraic data type) of the column's type.
    NotRecord,
}

impl fmt::Display for ParseValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = &self.text;
        match self.kind {
            ParseValueErrorKind::NotNumber => {
                write!(f, "`{text}` is not a number (signed 32-bit integer)")
            }
            ParseValueErrorKind::NotUnsigned => {
                write!(f, "`{text}` is not an unsigned (32-bit) integer")
            }
            ParseValueErrorKind::NotFloat => write!(f, "`{text}` is not a float"),
            ParseValueErrorKind::FloatOutOfRange => {
                write!(f, "`{text}` is out of range of a 32-bit float")
            }
            ParseValueErrorKind::NotRecord => {
                write!(
                    f,
                    "`{text}` is not a record of the column's type: {}",
                    self.detail
                )
            }
        }
    }
}

impl std::error::Error for ParseValueError {}

fn parse_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let n = if let Some(h) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i128::from_str_radix(h, 16).ok()?
    } else if let Some(b) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        i128::from_str_radix(b, 2).ok()?
    } else {
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        digits.parse::<i128>().ok()?
    };
    Some(if neg { -n } else { n })
}

/// Floats print like Soufflé's outputs (C's `%.9g`): nine significant digits, which
/// read back to the same float, without trailing zeros; an exponent (`1.5e-07`,
/// `1.00000002e+20`) below 1e-4 and from 1e9; `inf`, `-inf`, `nan`, `-nan` (the sign of
/// a NaN is kept), `-0`.
pub fn format_float(x: f32) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let x = f64::from(x);
    // Rounded to nine significant digits first: the exponent C's %g decides with.
    let scientific = format!("{x:.8e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..9).contains(&exponent) {
        let fixed = format!("{x:.*}", (8 - exponent) as usize);
        without_trailing_zeros(&fixed).to_string()
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            without_trailing_zeros(mantissa),
            exponent.abs()
        )
    }
}

/// `1.500` → `1.5`, `2.000` → `2`; text without a decimal point is left as it is.
fn without_trailing_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Interns strings to dense `u32` ids, in order of first appearance.
///
/// The table is shared: a clone is a handle on the same table, so the symbols an
/// engine makes while it evaluates (`cat`, `substr`, `to_string`) are the ones the
/// front end prints, and the symbols a front end interns for new facts are the ones
/// the string functors read. It is safe to use from several threads (the differential
/// engine's workers intern concurrently). [`SymbolTable::fork`] makes an independent
/// copy.
#[derive(Clone, Default)]
pub struct SymbolTable {
    inner: Arc<RwLock<Names>>,
}

#[derive(Clone, Default)]
struct Names {
    /// Each symbol's id, found by its text's hash ([`text_hash`]); the text is
    /// `names.text(id)`. A table of ids takes 4 bytes a bucket, where a map from the
    /// text kept a second pointer to it beside the id (24 bytes a bucket): RDF data has
    /// a symbol for every IRI and literal (1.3M on LUBM(50)).
    ids: HashTable<Value>,
    names: Texts,
    /// Records by id: `[branch, fields...]`; id 0 is `nil` (an empty row).
    records: Vec<Arc<[Value]>>,
    record_ids: FxHashMap<Arc<[Value]>, Value>,
    /// The record and algebraic data types of the programs checked with this table.
    types: Vec<RecordType>,
    /// A program's record types (their canonical text) to the index of the first.
    type_sets: FxHashMap<String, u32>,
    /// The keys `autoinc()` has numbered, by number.
    autoinc: Vec<Arc<[Value]>>,
    autoinc_ids: FxHashMap<Arc<[Value]>, Value>,
}

/// Texts end to end in one buffer, each found by where it ends: the symbols' texts
/// here, the N-Triples writer's rendered terms in `dynalog_io`. A text of its own per
/// entry (an `Arc<str>` or a `String`) took a pointer, a header and the allocator's
/// rounding besides the text: 45 bytes more a symbol, 60 MB on LUBM(50).
#[derive(Clone, Debug, Default)]
pub struct Texts {
    bytes: String,
    ends: Vec<u64>,
}

impl Texts {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, id: usize) -> Option<&str> {
        let end = *self.ends.get(id)? as usize;
        let start = id.checked_sub(1).map_or(0, |i| self.ends[i] as usize);
        self.bytes.get(start..end)
    }

    /// The text of `id`; `""` for an id the buffer does not have.
    pub fn text(&self, id: usize) -> &str {
        self.get(id).unwrap_or("")
    }

    pub fn push(&mut self, s: &str) {
        self.push_with(|bytes| bytes.push_str(s));
    }

    /// Add the text `write` appends to the buffer (formatted in place, without a
    /// `String` of its own).
    pub fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        write(&mut self.bytes);
        self.ends.push(self.bytes.len() as u64);
    }

    /// Keep the first `len` texts.
    pub fn truncate(&mut self, len: usize) {
        if len < self.ends.len() {
            let end = len.checked_sub(1).map_or(0, |i| self.ends[i] as usize);
            self.bytes.truncate(end);
            self.ends.truncate(len);
        }
    }
}

/// A record type (one branch with an empty name) or an algebraic data type (one branch
/// per constructor), as declared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordType {
    pub name: String,
    /// Declared with constructors (`A {..} | B {..}`), printed `$A(..)`.
    pub adt: bool,
    pub branches: Vec<Branch>,
}

/// One constructor of a [`RecordType`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub name: String,
    /// `(field name, type)`.
    pub fields: Vec<(String, Type)>,
}

/// How far a table had grown ([`SymbolTable::mark`]), to forget what came after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableMark {
    symbols: usize,
    records: usize,
    autoinc: usize,
}

/// The hash of a symbol's text in [`Names::ids`].
fn text_hash(s: &str) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(s)
}

impl Names {
    /// The id of the symbol `s`, if interned.
    fn symbol(&self, s: &str) -> Option<Value> {
        self.ids
            .find(text_hash(s), |&id| self.names.text(id as usize) == s)
            .copied()
    }
}

impl fmt::Debug for SymbolTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SymbolTable({} symbols)", self.len())
    }
}

/// A read lock on a [`SymbolTable`], for resolving many ids at once (printing,
/// sorting). Do not intern while holding one.
pub struct SymbolsRead<'a>(RwLockReadGuard<'a, Names>);

impl SymbolsRead<'_> {
    /// The text of `id`; `""` for an id the table does not have.
    pub fn resolve(&self, id: Value) -> &str {
        self.0.names.text(id as usize)
    }

    pub fn lookup(&self, s: &str) -> Option<Value> {
        self.0.symbol(s)
    }

    pub fn len(&self) -> usize {
        self.0.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.names.is_empty()
    }

    /// The row `[branch, fields...]` of record `id` (empty for `nil`).
    pub fn record_row(&self, id: Value) -> Option<&[Value]> {
        self.0.records.get(id as usize).map(|r| &r[..])
    }

    pub fn record_type(&self, t: u32) -> Option<&RecordType> {
        self.0.types.get(t as usize)
    }
}

impl SymbolTable {
    pub fn new() -> SymbolTable {
        SymbolTable::default()
    }

    /// An independent copy: interning into either no longer shows in the other.
    pub fn fork(&self) -> SymbolTable {
        SymbolTable {
            inner: Arc::new(RwLock::new(self.names().clone())),
        }
    }

    /// A new table with no symbols or records, but `other`'s record types (with the
    /// same indices): to read constants of those types apart from `other`.
    pub fn with_types_of(other: &SymbolTable) -> SymbolTable {
        let names = other.names();
        SymbolTable {
            inner: Arc::new(RwLock::new(Names {
                types: names.types.clone(),
                type_sets: names.type_sets.clone(),
                ..Names::default()
            })),
        }
    }

    /// Whether `self` and `other` are handles on the same table.
    pub fn same(&self, other: &SymbolTable) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn names(&self) -> RwLockReadGuard<'_, Names> {
        // A panic while the lock was held cannot leave the table half-updated (an
        // insertion pushes the name, then maps it), so a poisoned lock is still usable.
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn names_mut(&self) -> RwLockWriteGuard<'_, Names> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// A read lock, to resolve many ids without taking the lock for each.
    pub fn read(&self) -> SymbolsRead<'_> {
        SymbolsRead(self.names())
    }

    pub fn intern(&self, s: &str) -> Value {
        if let Some(id) = self.names().symbol(s) {
            return id;
        }
        let mut guard = self.names_mut();
        // Another thread may have interned it between the two locks.
        if let Some(id) = guard.symbol(s) {
            return id;
        }
        let names = &mut *guard;
        let id = names.names.len() as Value;
        names.names.push(s);
        let texts = &names.names;
        names
            .ids
            .insert_unique(text_hash(s), id, |&i| text_hash(texts.text(i as usize)));
        id
    }

    pub fn lookup(&self, s: &str) -> Option<Value> {
        self.names().symbol(s)
    }

    /// The text of `id`; empty for an id the table does not have (no engine makes one).
    pub fn resolve(&self, id: Value) -> String {
        self.get(id).unwrap_or_default()
    }

    /// The text of `id`, if the table has it.
    pub fn get(&self, id: Value) -> Option<String> {
        self.names().names.get(id as usize).map(str::to_string)
    }

    pub fn len(&self) -> usize {
        self.names().names.len()
    }

    /// Forget the symbols from `len` on (those of a refused or aborted change).
    pub fn truncate(&self, len: usize) {
        let mut guard = self.names_mut();
        let names = &mut *guard;
        let len = len.min(names.names.len());
        for id in len..names.names.len() {
            let hash = text_hash(names.names.text(id));
            if let Ok(entry) = names.ids.find_entry(hash, |&i| i as usize == id) {
                entry.remove();
            }
        }
        names.names.truncate(len);
    }

    /// How far the symbols and records have grown, for [`SymbolTable::rollback`].
    pub fn mark(&self) -> TableMark {
        let names = self.names();
        TableMark {
            symbols: names.names.len(),
            records: names.records.len().max(1),
            autoinc: names.autoinc.len(),
        }
    }

    /// Forget the symbols and records made after `mark` (those of a refused or
    /// aborted change).
    pub fn rollback(&self, mark: TableMark) {
        self.truncate(mark.symbols);
        let mut guard = self.names_mut();
        let names = &mut *guard;
        if names.records.len() > mark.records {
            for row in names.records.drain(mark.records..) {
                names.record_ids.remove(&row);
            }
        }
        if names.autoinc.len() > mark.autoinc {
            for key in names.autoinc.drain(mark.autoinc..) {
                names.autoinc_ids.remove(&key);
            }
        }
    }

    /// The number of `key` for `autoinc()`: 0, 1, 2, ... in the order keys are first
    /// met; the same key always gets the same number.
    pub fn autoinc(&self, key: &[Value]) -> Value {
        if let Some(&n) = self.names().autoinc_ids.get(key) {
            return n;
        }
        let mut guard = self.names_mut();
        let names = &mut *guard;
        if let Some(&n) = names.autoinc_ids.get(key) {
            return n;
        }
        let n = names.autoinc.len() as Value;
        let key: Arc<[Value]> = key.into();
        names.autoinc.push(key.clone());
        names.autoinc_ids.insert(key, n);
        n
    }

    /// The id of the record `[branch, fields...]`, made if new. Never 0 (`nil`).
    pub fn pack(&self, branch: Value, fields: &[Value]) -> Value {
        let mut row = Vec::with_capacity(fields.len() + 1);
        row.push(branch);
        row.extend_from_slice(fields);
        if let Some(&id) = self.names().record_ids.get(&row[..]) {
            return id;
        }
        let mut guard = self.names_mut();
        let names = &mut *guard;
        if let Some(&id) = names.record_ids.get(&row[..]) {
            return id;
        }
        if names.records.is_empty() {
            names.records.push(Arc::from(&[][..]));
        }
        let id = names.records.len() as Value;
        let row: Arc<[Value]> = row.into();
        names.records.push(row.clone());
        names.record_ids.insert(row, id);
        id
    }

    /// The id of the record `[branch, fields...]` if the table has it (nothing is made).
    pub fn find_record(&self, branch: Value, fields: &[Value]) -> Option<Value> {
        let mut row = Vec::with_capacity(fields.len() + 1);
        row.push(branch);
        row.extend_from_slice(fields);
        self.names().record_ids.get(&row[..]).copied()
    }

    /// Field `index` of record `id` if the record was made by constructor `branch`
    /// (`None` for `nil`, another constructor, or an id the table does not have).
    pub fn unpack(&self, id: Value, branch: Value, index: u32) -> Option<Value> {
        let names = self.names();
        let row = names.records.get(id as usize)?;
        if row.first() != Some(&branch) {
            return None;
        }
        row.get(index as usize + 1).copied()
    }

    /// How many records the table holds (with `nil`).
    pub fn records_len(&self) -> usize {
        self.names().records.len().max(1)
    }

    /// Register a program's record types, whose canonical text is `key`: the index of
    /// the first, the others following. `build` gets that index (a type's fields name
    /// the types by it). The same text gets the same indices again, so a session whose
    /// program keeps its types keeps its columns' types.
    pub fn define_types(&self, key: &str, build: impl FnOnce(u32) -> Vec<RecordType>) -> u32 {
        let mut guard = self.names_mut();
        let names = &mut *guard;
        if let Some(&base) = names.type_sets.get(key) {
            return base;
        }
        let base = names.types.len() as u32;
        let types = build(base);
        names.types.extend(types);
        names.type_sets.insert(key.to_string(), base);
        base
    }

    pub fn record_type(&self, t: u32) -> Option<RecordType> {
        self.names().types.get(t as usize).cloned()
    }

    /// The index of the first of the record types registered under `key`.
    pub fn type_set(&self, key: &str) -> Option<u32> {
        self.names().type_sets.get(key).copied()
    }

    /// How many record types the table has registered.
    pub fn types_len(&self) -> u32 {
        self.names().types.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[path = "records.rs"]
mod records;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sorted_on_several_threads_are_sorted_as_on_one() {
        // Past the threshold, with duplicates and an odd count of rows, so that the
        // split at the median is taken (and taken again with four threads).
        let n = PARALLEL_SORT_FROM * 2 + 7;
        for arity in [1usize, 2, 3, 9] {
            let mut state = 0x9e37_79b9_u32;
            let data: Vec<Value> = (0..n * arity)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    state % 1000
                })
                .collect();
            let mut one = data.clone();
            sort_rows(&mut one, arity);
            for threads in [2, 3, 4] {
                let mut several = data.clone();
                sort_rows_on(&mut several, arity, threads);
                assert_eq!(several, one, "arity {arity}, {threads} threads");
            }
            let rows: Vec<&[Value]> = one.chunks_exact(arity).collect();
            assert!(rows.windows(2).all(|w| w[0] <= w[1]), "arity {arity}");
        }
    }

    #[test]
    fn rows_of_any_arity_sort_as_their_value_lists() {
        for arity in [1usize, 2, 3, 8, 9] {
            let rows: Vec<Vec<Value>> = (0..50u32)
                .map(|i| (0..arity as u32).map(|c| (i * 7 + c * 13) % 5).collect())
                .collect();
            let mut data: Vec<Value> = rows.concat();
            sort_rows(&mut data, arity);
            let mut expected = rows.clone();
            expected.sort();
            assert_eq!(data, expected.concat(), "arity {arity}");
        }
        let mut none: Vec<Value> = Vec::new();
        sort_rows(&mut none, 0);
        assert!(none.is_empty());
    }

    #[test]
    fn floats_print_as_souffle_prints_them() {
        // Each pair checked against Soufflé 2.5's output of the same float.
        let cases: [(f32, &str); 15] = [
            (0.1, "0.100000001"),
            (0.5, "0.5"),
            (-2.5, "-2.5"),
            (100.0, "100"),
            (1234567.0, "1234567"),
            (123456.7, "123456.703"),
            (std::f32::consts::PI, "3.14159274"),
            (0.000_000_15, "1.50000005e-07"),
            (1e20, "1.00000002e+20"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f32::INFINITY, "inf"),
            (f32::NEG_INFINITY, "-inf"),
            (f32::NAN, "nan"),
            (-f32::NAN, "-nan"),
        ];
        for (x, text) in cases {
            assert_eq!(format_float(x), text, "{x:?}");
        }
        // The edges of the fixed form (checked with Soufflé too), and nine digits read
        // back to the same float.
        assert_eq!(format_float(0.0001), "9.99999975e-05");
        assert_eq!(format_float(0.00012), "0.000119999997");
        assert_eq!(format_float(123456789.0), "123456792");
        assert_eq!(format_float(1234567890.0), "1.23456794e+09");
        for x in [
            0.1f32,
            1.0 / 3.0,
            16777217.0,
            f32::MIN_POSITIVE,
            f32::MAX,
            7e-45,
        ] {
            let text = format_float(x);
            assert_eq!(
                text.parse::<f32>().map(f32::to_bits),
                Ok(x.to_bits()),
                "{text}"
            );
        }
    }

    #[test]
    fn parse_and_render_round_trip() {
        let mut st = SymbolTable::new();
        assert_eq!(Type::Number.parse("-5", &mut st), Ok((-5i32) as u32));
        assert_eq!(Type::Number.render((-5i32) as u32, &st), "-5");
        assert!(Type::Number.parse("3000000000", &mut st).is_err());
        assert!(Type::Number.parse("12a", &mut st).is_err());
        assert_eq!(
            Type::Unsigned.parse("3000000000", &mut st),
            Ok(3_000_000_000)
        );
        assert!(Type::Unsigned.parse("-1", &mut st).is_err());
        let f = Type::Float.parse("2.5", &mut st).unwrap();
        assert_eq!(Type::Float.render(f, &st), "2.5");
        let a = Type::Symbol.parse("hello", &mut st).unwrap();
        let b = Type::Symbol.parse("hello", &mut st).unwrap();
        assert_eq!(a, b);
        assert_eq!(Type::Symbol.render(a, &st), "hello");
        assert_eq!(Type::Number.parse("0x10", &mut st), Ok(16));
    }

    #[test]
    fn parse_errors_are_typed_and_read_as_before() {
        let mut st = SymbolTable::new();
        let e = Type::Number.parse("12a", &mut st).unwrap_err();
        assert_eq!(e.kind, ParseValueErrorKind::NotNumber);
        assert_eq!(
            e.to_string(),
            "`12a` is not a number (signed 32-bit integer)"
        );
        let e = Type::Unsigned.parse("-1", &mut st).unwrap_err();
        assert_eq!(e.kind, ParseValueErrorKind::NotUnsigned);
        assert_eq!(e.to_string(), "`-1` is not an unsigned (32-bit) integer");
        let e = Type::Float.parse("x1", &mut st).unwrap_err();
        assert_eq!(e.kind, ParseValueErrorKind::NotFloat);
        assert_eq!(e.to_string(), "`x1` is not a float");
    }

    #[test]
    fn floats_beyond_32_bits_are_refused_but_infinity_spelled_out_is_not() {
        let mut st = SymbolTable::new();
        for text in ["1e40", "-1e40", "3.5e38", "1e39"] {
            let e = Type::Float.parse(text, &mut st).unwrap_err();
            assert_eq!(e.kind, ParseValueErrorKind::FloatOutOfRange, "{text}");
            assert_eq!(
                e.to_string(),
                format!("`{text}` is out of range of a 32-bit float")
            );
        }
        let max = Type::Float.parse("3.4028235e38", &mut st).unwrap();
        assert_eq!(f32::from_bits(max), f32::MAX);
        for (text, x) in [("inf", f32::INFINITY), ("-Infinity", f32::NEG_INFINITY)] {
            assert_eq!(Type::Float.parse(text, &mut st), Ok(x.to_bits()));
        }
    }

    #[test]
    fn truncating_forgets_only_the_later_symbols() {
        let st = SymbolTable::new();
        let a = st.intern("a");
        st.intern("b");
        st.intern("c");
        st.truncate(1);
        assert_eq!(st.len(), 1);
        assert_eq!(st.lookup("a"), Some(a));
        assert_eq!(st.lookup("b"), None);
        assert_eq!(st.intern("c"), 1, "ids are issued densely again");
        st.truncate(5);
        assert_eq!(st.len(), 2);
        // Texts lie end to end: an empty one, and those around it, keep their bounds.
        let empty = st.intern("");
        let d = st.intern("dd");
        assert_eq!((empty, d), (2, 3));
        assert_eq!(st.lookup(""), Some(empty));
        let read = st.read();
        let texts: Vec<&str> = (0..5).map(|i| read.resolve(i)).collect();
        assert_eq!(
            texts,
            ["a", "c", "", "dd", ""],
            "an unknown id resolves to nothing"
        );
        drop(read);
        st.truncate(3);
        assert_eq!(st.intern("e"), 3);
        assert_eq!(st.resolve(3), "e");
        assert_eq!(st.get(4), None);
    }

    #[test]
    fn symbols_are_found_by_their_text_as_the_table_grows_and_shrinks() {
        let st = SymbolTable::new();
        let text = |i: u32| format!("http://example.org/s{i}");
        for i in 0..20_000u32 {
            assert_eq!(st.intern(&text(i)), i);
        }
        for i in (0..20_000u32).step_by(7) {
            assert_eq!(st.intern(&text(i)), i, "interned once");
            assert_eq!(st.lookup(&text(i)), Some(i));
            assert_eq!(&*st.resolve(i), text(i));
        }
        st.truncate(10_000);
        assert_eq!(st.lookup(&text(9_999)), Some(9_999));
        assert_eq!(st.lookup(&text(10_000)), None);
        assert_eq!(st.read().lookup(&text(15_000)), None);
        assert_eq!(st.intern(&text(15_000)), 10_000);
        // A fork has its own table of ids.
        let fork = st.fork();
        assert_eq!(fork.intern("new"), 10_001);
        assert_eq!(st.lookup("new"), None);
        assert_eq!(fork.lookup(&text(3)), Some(3));
    }
}
