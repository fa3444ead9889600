//! Durability for a live materialization: a write-ahead log with periodic snapshots.
//!
//! A [`DataDir`] is a folder that holds every acknowledged transaction of one
//! [`crate::Materialization`]:
//!
//! | file | content |
//! |---|---|
//! | `lock` | empty; held with an exclusive `flock` while a process uses the folder |
//! | `instance` | the instance id: 32 hexadecimal digits, random, fixed when the folder is created |
//! | `program.dl` | the program text the folder was created with (a restart must give the same) |
//! | `snapshot` | optional: the base facts, program text and RDF file numbers as of one commit |
//! | `wal` | the log: one record per commit made after the snapshot |
//!
//! Every record is framed as `[u64 length][u32 CRC-32 of the payload][payload]`
//! (little endian). A commit's payload holds its number, its new program text and
//! relation names when it changed rules, the RDF files it numbered, and its base-fact
//! changes in order: `(insert?, relation name, values)`, where a symbol is stored as its
//! text and every other value as its 32 bits (numbers, unsigned and floats), so the log
//! does not depend on interning. The base-fact changes include the inline facts the
//! engine stages itself (those of the first program, and those a rule change adds or
//! drops), so folding the records with set semantics gives the engine's base facts.
//!
//! [`DataDir::append`] writes a record and calls `fsync` (`File::sync_data`) before it
//! returns; the materialization appends *before* it applies a transaction to its
//! engine, and acknowledges a commit only once it is logged, so every acknowledged
//! commit is on disk. If appending fails (disk full), the record is cut off again and
//! the commit is refused with nothing applied.
//!
//! A snapshot folds the previous snapshot and the log into one set of base facts per
//! relation (from the files: nothing is kept in memory between snapshots), writes it to
//! `snapshot.tmp`, `fsync`s it, renames it over `snapshot`, `fsync`s the folder and then
//! empties the log. Records the snapshot already covers are skipped on recovery, so a
//! crash between the rename and the truncation loses nothing. Snapshots are taken every
//! [`Options::snapshot_every`] commits, when the log exceeds
//! [`Options::snapshot_bytes`], and when the folder is closed (dropped) cleanly.
//!
//! [`DataDir::open`] recovers: it reads the snapshot, scans the log, and folds both into
//! a [`State`]. A record that is cut short, whose length runs past the end of the file
//! or whose checksum or content is wrong is a torn write when no good record follows it:
//! the log is truncated before it, with a warning on stderr. If a good record follows a
//! bad one, the log is corrupt in the middle: opening fails with the offset, and nothing
//! is skipped silently.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Why the data folder refused an operation (`Display` gives the reason, naming the
/// file).
#[derive(Debug)]
#[non_exhaustive]
pub enum DurableError {
    /// A file of the folder (or the folder) could not be created, opened, read,
    /// written, synced, renamed or truncated.
    Io {
        message: String,
        source: std::io::Error,
    },
    /// A file of the folder does not hold what it should: a record or a snapshot that
    /// does not decode, a wrong checksum, a log corrupt in the middle, records out of order.
    Corrupt(String),
    /// The folder is not this process's to use: locked by another process, made for
    /// another program, or not a data folder.
    Refused(String),
    /// The log failed earlier (and could not be cut back): it takes no more records
    /// until the folder is opened again.
    Unusable(String),
}

impl std::fmt::Display for DurableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DurableError::Io { message, .. }
            | DurableError::Corrupt(message)
            | DurableError::Refused(message)
            | DurableError::Unusable(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for DurableError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DurableError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A value as stored: independent of the symbol table.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StoredValue {
    /// A number, unsigned or float: its 32 bits.
    Bits(u32),
    /// A symbol: its text.
    Symbol(String),
}

/// One base-fact change of a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactChange {
    pub insert: bool,
    pub relation: String,
    pub values: Vec<StoredValue>,
}

/// A new program of a commit: its text and the names of its relations, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramChange {
    pub text: String,
    pub relations: Vec<String>,
}

/// What one commit changed, as logged.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Record {
    pub commit: u64,
    pub program: Option<ProgramChange>,
    /// RDF files numbered (for their blank nodes) since the previous record: path, number.
    pub rdf_files: Vec<(String, u32)>,
    pub facts: Vec<FactChange>,
}

/// The base facts of one relation.
pub type FactSet = HashSet<Vec<StoredValue>>;

/// The state a data folder holds: the fold of its snapshot and log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// The number of the last commit folded in (`None`: none yet).
    pub last_commit: Option<u64>,
    /// The program text as of that commit.
    pub program: String,
    /// RDF files numbered so far.
    pub rdf_files: Vec<(String, u32)>,
    /// Base facts per relation name.
    pub facts: BTreeMap<String, FactSet>,
}

impl State {
    /// The state before the first commit of a program.
    pub fn initial(program: &str) -> State {
        State {
            last_commit: None,
            program: program.to_string(),
            rdf_files: Vec::new(),
            facts: BTreeMap::new(),
        }
    }

    /// Fold one record in, with set semantics, in order. The record must be the next
    /// commit.
    pub fn apply(&mut self, r: &Record) -> Result<(), DurableError> {
        let expected = self.last_commit.map_or(0, |c| c + 1);
        if r.commit != expected {
            return Err(DurableError::Corrupt(format!(
                "commit {} follows commit {} (expected commit {expected})",
                r.commit,
                self.last_commit
                    .map_or("none".to_string(), |c| c.to_string())
            )));
        }
        if let Some(p) = &r.program {
            self.program = p.text.clone();
            // Relations the new program dropped lose their facts, as in the engines.
            let keep: HashSet<&str> = p.relations.iter().map(String::as_str).collect();
            self.facts.retain(|name, _| keep.contains(name.as_str()));
        }
        self.rdf_files.extend(r.rdf_files.iter().cloned());
        for f in &r.facts {
            if f.insert {
                self.facts
                    .entry(f.relation.clone())
                    .or_default()
                    .insert(f.values.clone());
            } else if let Some(set) = self.facts.get_mut(&f.relation) {
                set.remove(&f.values);
            }
        }
        self.last_commit = Some(r.commit);
        Ok(())
    }

    /// Number of base facts.
    pub fn len(&self) -> usize {
        self.facts.values().map(HashSet::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------------------------
// Encoding

const KIND_COMMIT: u8 = 1;
const KIND_SNAPSHOT: u8 = 2;
const TAG_BITS: u8 = 0;
const TAG_SYMBOL: u8 = 1;
/// Length and checksum.
const HEADER: usize = 12;
/// The smallest commit payload: kind, commit, no program, no files, no relations, no facts.
const MIN_COMMIT_PAYLOAD: u64 = 1 + 8 + 1 + 4 + 4 + 8;
const SNAPSHOT_MAGIC: &[u8; 8] = b"DYNSNAP1";

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn values(&mut self, values: &[StoredValue]) {
        self.u32(values.len() as u32);
        for v in values {
            match v {
                StoredValue::Bits(b) => {
                    self.u8(TAG_BITS);
                    self.u32(*b);
                }
                StoredValue::Symbol(s) => {
                    self.u8(TAG_SYMBOL);
                    self.str(s);
                }
            }
        }
    }
    fn rdf_files(&mut self, files: &[(String, u32)]) {
        self.u32(files.len() as u32);
        for (path, id) in files {
            self.str(path);
            self.u32(*id);
        }
    }
}

/// Relation names numbered in order of first use.
#[derive(Default)]
struct Names<'a> {
    index: HashMap<&'a str, u32>,
    names: Vec<&'a str>,
}

impl<'a> Names<'a> {
    fn id(&mut self, name: &'a str) -> u32 {
        let next = self.names.len() as u32;
        *self.index.entry(name).or_insert_with(|| {
            self.names.push(name);
            next
        })
    }
}

struct In<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> In<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], DurableError> {
        let left = (self.buf.len() - self.pos) as u64;
        if n > left {
            return Err(DurableError::Corrupt(format!(
                "a field of {n} bytes at offset {} runs past the end of the record",
                self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, DurableError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DurableError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DurableError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn str(&mut self) -> Result<String, DurableError> {
        let n = self.u64()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| DurableError::Corrupt("a string is not UTF-8".into()))
    }
    fn bool(&mut self) -> Result<bool, DurableError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(DurableError::Corrupt(format!("bad flag {b}"))),
        }
    }
    fn values(&mut self) -> Result<Vec<StoredValue>, DurableError> {
        let n = self.u32()?;
        // Each value takes at least 5 bytes: bounds the allocation by the record.
        let mut out = Vec::with_capacity((n as usize).min(self.buf.len() / 5));
        for _ in 0..n {
            out.push(match self.u8()? {
                TAG_BITS => StoredValue::Bits(self.u32()?),
                TAG_SYMBOL => StoredValue::Symbol(self.str()?),
                t => return Err(DurableError::Corrupt(format!("bad value tag {t}"))),
            });
        }
        Ok(out)
    }
    fn rdf_files(&mut self) -> Result<Vec<(String, u32)>, DurableError> {
        let n = self.u32()?;
        let mut out = Vec::new();
        for _ in 0..n {
            out.push((self.str()?, self.u32()?));
        }
        Ok(out)
    }
    fn names(&mut self) -> Result<Vec<String>, DurableError> {
        let n = self.u32()?;
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(self.str()?);
        }
        Ok(out)
    }
    fn end(&self) -> Result<(), DurableError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(DurableError::Corrupt(format!(
                "{} bytes left over",
                self.buf.len() - self.pos
            )))
        }
    }
}

fn frame(payload: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + HEADER);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// A commit record, framed.
pub fn encode_record(r: &Record) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u8(KIND_COMMIT);
    o.u64(r.commit);
    match &r.program {
        None => o.u8(0),
        Some(p) => {
            o.u8(1);
            o.str(&p.text);
            o.u32(p.relations.len() as u32);
            for name in &p.relations {
                o.str(name);
            }
        }
    }
    o.rdf_files(&r.rdf_files);
    let mut names = Names::default();
    let ids: Vec<u32> = r.facts.iter().map(|f| names.id(&f.relation)).collect();
    o.u32(names.names.len() as u32);
    for n in &names.names {
        o.str(n);
    }
    o.u64(r.facts.len() as u64);
    for (f, id) in r.facts.iter().zip(ids) {
        o.u8(f.insert as u8);
        o.u32(id);
        o.values(&f.values);
    }
    frame(o.0)
}

fn decode_record(payload: &[u8]) -> Result<Record, DurableError> {
    let mut i = In {
        buf: payload,
        pos: 0,
    };
    if i.u8()? != KIND_COMMIT {
        return Err(DurableError::Corrupt("not a commit record".into()));
    }
    let commit = i.u64()?;
    let program = if i.bool()? {
        let text = i.str()?;
        let relations = i.names()?;
        Some(ProgramChange { text, relations })
    } else {
        None
    };
    let rdf_files = i.rdf_files()?;
    let names = i.names()?;
    let n = i.u64()?;
    let mut facts = Vec::with_capacity((n as usize).min(payload.len() / 9));
    for _ in 0..n {
        let insert = i.bool()?;
        let id = i.u32()?;
        let relation = names
            .get(id as usize)
            .ok_or_else(|| DurableError::Corrupt(format!("relation number {id} out of range")))?
            .clone();
        let values = i.values()?;
        facts.push(FactChange {
            insert,
            relation,
            values,
        });
    }
    i.end()?;
    Ok(Record {
        commit,
        program,
        rdf_files,
        facts,
    })
}

/// A snapshot file's bytes.
pub fn encode_snapshot(s: &State) -> Vec<u8> {
    let mut o = Out(Vec::new());
    o.u8(KIND_SNAPSHOT);
    match s.last_commit {
        None => o.u8(0),
        Some(c) => {
            o.u8(1);
            o.u64(c);
        }
    }
    o.str(&s.program);
    o.rdf_files(&s.rdf_files);
    o.u32(s.facts.len() as u32);
    for (name, set) in &s.facts {
        o.str(name);
        o.u64(set.len() as u64);
        for values in set {
            o.values(values);
        }
    }
    let mut out = SNAPSHOT_MAGIC.to_vec();
    out.extend_from_slice(&frame(o.0));
    out
}

/// Read a snapshot file's bytes.
pub fn decode_snapshot(bytes: &[u8]) -> Result<State, DurableError> {
    let rest = bytes.strip_prefix(SNAPSHOT_MAGIC).ok_or_else(|| {
        DurableError::Corrupt("it does not start with the snapshot header".into())
    })?;
    let payload = match parse_frame(rest, 0) {
        Frame::Good { payload, next } if next == rest.len() => payload,
        Frame::Good { .. } => {
            return Err(DurableError::Corrupt("bytes follow the snapshot".into()));
        }
        Frame::Bad(reason) => return Err(DurableError::Corrupt(reason)),
    };
    let mut i = In {
        buf: payload,
        pos: 0,
    };
    if i.u8()? != KIND_SNAPSHOT {
        return Err(DurableError::Corrupt("not a snapshot".into()));
    }
    let last_commit = if i.bool()? { Some(i.u64()?) } else { None };
    let program = i.str()?;
    let rdf_files = i.rdf_files()?;
    let mut facts = BTreeMap::new();
    for _ in 0..i.u32()? {
        let name = i.str()?;
        let n = i.u64()?;
        let mut set = HashSet::with_capacity((n as usize).min(payload.len() / 4));
        for _ in 0..n {
            set.insert(i.values()?);
        }
        facts.insert(name, set);
    }
    i.end()?;
    Ok(State {
        last_commit,
        program,
        rdf_files,
        facts,
    })
}

enum Frame<'a> {
    Good { payload: &'a [u8], next: usize },
    Bad(String),
}

fn parse_frame(bytes: &[u8], at: usize) -> Frame<'_> {
    let left = bytes.len() - at;
    if left < HEADER {
        return Frame::Bad(format!(
            "a record header cut short ({left} of {HEADER} bytes)"
        ));
    }
    let h = &bytes[at..at + HEADER];
    let len = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    let crc = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
    if len > (left - HEADER) as u64 {
        return Frame::Bad(format!(
            "a record of {len} bytes with only {} bytes left in the file",
            left - HEADER
        ));
    }
    let payload = &bytes[at + HEADER..at + HEADER + len as usize];
    if crc32fast::hash(payload) != crc {
        return Frame::Bad("a record with a wrong checksum".into());
    }
    Frame::Good {
        payload,
        next: at + HEADER + len as usize,
    }
}

/// The records of a log, and where the good part ends.
#[derive(Debug)]
pub struct Scan {
    pub records: Vec<Record>,
    /// Length of the good prefix.
    pub good: usize,
    /// Why the rest (if any) was dropped: a torn last record.
    pub torn: Option<String>,
}

/// Read a log's bytes. A bad record with no good record after it is a torn tail
/// (reported in [`Scan::torn`]); a bad record followed by a good one is an error.
pub fn scan_log(bytes: &[u8]) -> Result<Scan, DurableError> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let reason = match parse_frame(bytes, at) {
            Frame::Good { payload, next } => match decode_record(payload) {
                Ok(r) => {
                    records.push(r);
                    at = next;
                    continue;
                }
                Err(e) => format!("a record that does not decode ({e})"),
            },
            Frame::Bad(reason) => reason,
        };
        // Is there a good record further on? Then this is no torn write.
        let after = records.last().map(|r: &Record| r.commit);
        if let Some(q) = (at + 1..bytes.len()).find(|&q| good_record_at(bytes, q, after)) {
            return Err(DurableError::Corrupt(format!(
                "the log is corrupt at byte {at} ({reason}) and a good record follows at byte {q}: \
                 refusing to skip acknowledged commits"
            )));
        }
        return Ok(Scan {
            records,
            good: at,
            torn: Some(format!(
                "{reason} at byte {at}: the last {} bytes were dropped",
                bytes.len() - at
            )),
        });
    }
    Ok(Scan {
        records,
        good: at,
        torn: None,
    })
}

/// Whether a record that decodes, of a commit after `after`, starts at `at`.
fn good_record_at(bytes: &[u8], at: usize, after: Option<u64>) -> bool {
    if bytes.len() - at < HEADER {
        return false;
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[at..at + 8]);
    if u64::from_le_bytes(len) < MIN_COMMIT_PAYLOAD {
        return false;
    }
    match parse_frame(bytes, at) {
        Frame::Good { payload, .. } => {
            decode_record(payload).is_ok_and(|r| after.is_none_or(|c| r.commit > c))
        }
        Frame::Bad(_) => false,
    }
}

// ---------------------------------------------------------------------------------
// The folder

/// When snapshots are taken.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// After this many commits since the last snapshot (0: never by count).
    pub snapshot_every: u64,
    /// When the log grows past this many bytes (0: never by size).
    pub snapshot_bytes: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            snapshot_every: 10_000,
            snapshot_bytes: 64 << 20,
        }
    }
}

#[derive(Debug)]
enum Health {
    Ok,
    /// An append failed and could not be undone: nothing more is written.
    Poisoned(String),
    /// A simulated crash (tests): nothing more is written, not even at drop.
    #[cfg(test)]
    Crashed,
}

/// A data folder in use (see the module documentation).
#[derive(Debug)]
pub struct DataDir {
    dir: PathBuf,
    _lock: File,
    instance: String,
    original: String,
    wal: File,
    wal_len: u64,
    /// Where the last record starts (to undo it).
    last_start: u64,
    since_snapshot: u64,
    options: Options,
    health: Health,
    /// Test hook: the log's writes crash (or, with `crash` false, fail as on a full
    /// disk) after this many more bytes.
    #[cfg(test)]
    crash_after: Option<u64>,
    #[cfg(test)]
    crash: bool,
}

fn io_err(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> DurableError {
    let p = path.display().to_string();
    let what = what.to_string();
    move |source| DurableError::Io {
        message: format!("error: cannot {what} `{p}`: {source}"),
        source,
    }
}

fn sync_dir(dir: &Path) -> Result<(), DurableError> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io_err("sync the folder", dir))
}

/// Write a file atomically: temporary file, fsync, rename, fsync of the folder.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), DurableError> {
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let mut f = File::create(&tmp).map_err(io_err("create", &tmp))?;
    f.write_all(bytes).map_err(io_err("write", &tmp))?;
    f.sync_all().map_err(io_err("sync", &tmp))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(io_err("rename to", &path))?;
    sync_dir(dir)
}

fn read_file(path: &Path) -> Result<Option<Vec<u8>>, DurableError> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err("read", path)(e)),
    }
}

/// A random 128-bit id, as 32 hexadecimal digits.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    let urandom = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if urandom.is_err() {
        use std::hash::{BuildHasher, Hasher};
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        for (k, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(now);
            h.write_u32(std::process::id());
            h.write_usize(k);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl DataDir {
    /// Open (creating it if needed) and lock a data folder for the program `program`
    /// (its text). Returns the folder and, if it holds commits, their state; `None`
    /// means no commit was ever logged, and the caller starts as from scratch.
    ///
    /// Fails if another process holds the folder, if the folder was created for another
    /// program text, or if the snapshot or the middle of the log is corrupt. A torn
    /// last record is dropped (truncated away) with a warning on stderr.
    pub fn open(
        dir: &Path,
        program: &str,
        options: Options,
    ) -> Result<(DataDir, Option<State>), DurableError> {
        std::fs::create_dir_all(dir).map_err(io_err("create the data folder", dir))?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err("open", &lock_path))?;
        {
            use std::os::unix::io::AsRawFd;
            // SAFETY: flock on a file descriptor this function owns.
            let r = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                return Err(DurableError::Refused(format!(
                    "error: the data folder `{}` is in use by another process (it holds `{}`)",
                    dir.display(),
                    lock_path.display()
                )));
            }
        }
        let instance_path = dir.join("instance");
        let program_path = dir.join("program.dl");
        let snapshot_path = dir.join("snapshot");
        let wal_path = dir.join("wal");
        let instance = match read_file(&instance_path)? {
            Some(bytes) => {
                let id = String::from_utf8_lossy(&bytes).trim().to_string();
                if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(DurableError::Corrupt(format!(
                        "error: `{}` does not hold an instance id",
                        instance_path.display()
                    )));
                }
                let stored = read_file(&program_path)?.ok_or_else(|| {
                    DurableError::Corrupt(format!(
                        "error: the data folder `{}` has no `program.dl`",
                        dir.display()
                    ))
                })?;
                if stored != program.as_bytes() {
                    return Err(DurableError::Refused(format!(
                        "error: the data folder `{}` was created with another program text (kept in `{}`): \
                         start with that program, or use a new data folder",
                        dir.display(),
                        program_path.display()
                    )));
                }
                id
            }
            None => {
                if snapshot_path.exists() || wal_path.exists() {
                    return Err(DurableError::Corrupt(format!(
                        "error: the data folder `{}` holds a log or snapshot but no `instance` file: \
                         it is damaged or not a dynalog data folder",
                        dir.display()
                    )));
                }
                // The program first, the instance id last: an id means a complete folder.
                write_atomic(dir, "program.dl", program.as_bytes())?;
                let id = random_id();
                write_atomic(dir, "instance", format!("{id}\n").as_bytes())?;
                id
            }
        };
        let _ = std::fs::remove_file(dir.join("snapshot.tmp"));
        let mut state = match read_file(&snapshot_path)? {
            Some(bytes) => decode_snapshot(&bytes).map_err(|e| {
                DurableError::Corrupt(format!(
                    "error: the snapshot `{}` is corrupt: {e}",
                    snapshot_path.display()
                ))
            })?,
            None => State::initial(program),
        };
        let log = read_file(&wal_path)?.unwrap_or_default();
        let scan = scan_log(&log)
            .map_err(|e| DurableError::Corrupt(format!("error: `{}`: {e}", wal_path.display())))?;
        let wal = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&wal_path)
            .map_err(io_err("open", &wal_path))?;
        if let Some(reason) = &scan.torn {
            eprintln!(
                "warning: `{}`: a torn last record (an interrupted write): {reason}",
                wal_path.display()
            );
            wal.set_len(scan.good as u64)
                .and_then(|_| wal.sync_all())
                .map_err(io_err("truncate", &wal_path))?;
        }
        sync_dir(dir)?;
        let mut since = 0;
        for r in &scan.records {
            if state.last_commit.is_some_and(|c| r.commit <= c) {
                continue; // covered by the snapshot
            }
            state.apply(r).map_err(|e| {
                DurableError::Corrupt(format!("error: `{}`: {e}", wal_path.display()))
            })?;
            since += 1;
        }
        let d = DataDir {
            dir: dir.to_path_buf(),
            _lock: lock,
            instance,
            original: program.to_string(),
            wal,
            wal_len: scan.good as u64,
            last_start: scan.good as u64,
            since_snapshot: since,
            options,
            health: Health::Ok,
            #[cfg(test)]
            crash_after: None,
            #[cfg(test)]
            crash: true,
        };
        let state = state.last_commit.is_some().then_some(state);
        Ok((d, state))
    }

    /// The instance id (fixed when the folder was created).
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Append a record and `fsync` it. On failure the record is cut off again (or, if
    /// that fails too, the folder refuses every further write): the commit must not be
    /// acknowledged.
    pub fn append(&mut self, r: &Record) -> Result<(), DurableError> {
        match &self.health {
            Health::Ok => {}
            Health::Poisoned(why) => {
                return Err(DurableError::Unusable(format!(
                    "the write-ahead log failed earlier ({why}); restart to recover"
                )));
            }
            #[cfg(test)]
            Health::Crashed => return Err(DurableError::Unusable("crashed".into())),
        }
        let bytes = encode_record(r);
        let start = self.wal_len;
        match self.write_and_sync(&bytes) {
            Ok(()) => {
                self.last_start = start;
                self.wal_len += bytes.len() as u64;
                self.since_snapshot += 1;
                Ok(())
            }
            Err(e) => {
                #[cfg(test)]
                if matches!(self.health, Health::Crashed) {
                    return Err(DurableError::Unusable(e.to_string()));
                }
                let why = format!("cannot write `{}`: {e}", self.dir.join("wal").display());
                if let Err(e2) = self.cut(start) {
                    self.health = Health::Poisoned(format!("{why}; then {e2}"));
                }
                Err(DurableError::Io {
                    message: why,
                    source: e,
                })
            }
        }
    }

    fn write_and_sync(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        #[cfg(test)]
        if let Some(budget) = self.crash_after {
            if (bytes.len() as u64) > budget {
                // Simulate a crash (or a full disk) in the middle of the write: a prefix
                // reaches the file.
                self.wal.write_all(&bytes[..budget as usize])?;
                self.crash_after = None;
                if self.crash {
                    self.health = Health::Crashed;
                    return Err(std::io::Error::other("simulated crash"));
                }
                return Err(std::io::Error::other("simulated full disk"));
            }
            self.crash_after = Some(budget - bytes.len() as u64);
        }
        self.wal.write_all(bytes)?;
        self.wal.sync_data()
    }

    /// Truncate the log to `len` bytes.
    fn cut(&mut self, len: u64) -> Result<(), DurableError> {
        self.wal
            .set_len(len)
            .and_then(|_| self.wal.sync_all())
            .map_err(|e| DurableError::Io {
                message: format!("cannot truncate `{}`: {e}", self.dir.join("wal").display()),
                source: e,
            })?;
        self.wal_len = len;
        Ok(())
    }

    /// Remove the record appended last (its commit failed in the engine after it was
    /// logged, so it was not acknowledged).
    pub fn undo_last(&mut self) {
        if !matches!(self.health, Health::Ok) {
            return;
        }
        let start = self.last_start;
        match self.cut(start) {
            Ok(()) => self.since_snapshot = self.since_snapshot.saturating_sub(1),
            Err(e) => self.health = Health::Poisoned(e.to_string()),
        }
    }

    /// Take a snapshot if one is due; a failure is a warning (the log stays valid).
    pub fn maybe_snapshot(&mut self) {
        let o = self.options;
        let due = (o.snapshot_every > 0 && self.since_snapshot >= o.snapshot_every)
            || (o.snapshot_bytes > 0 && self.wal_len >= o.snapshot_bytes);
        if due && let Err(e) = self.snapshot() {
            eprintln!("warning: no snapshot taken: {e}");
        }
    }

    /// Fold the snapshot and the log into a new snapshot and empty the log.
    pub fn snapshot(&mut self) -> Result<(), DurableError> {
        if !matches!(self.health, Health::Ok) || self.wal_len == 0 {
            return Ok(());
        }
        let snapshot_path = self.dir.join("snapshot");
        let wal_path = self.dir.join("wal");
        let mut state = match read_file(&snapshot_path)? {
            Some(bytes) => decode_snapshot(&bytes).map_err(|e| {
                DurableError::Corrupt(format!("`{}` is corrupt: {e}", snapshot_path.display()))
            })?,
            None => State::initial(&self.original),
        };
        let log = read_file(&wal_path)?.unwrap_or_default();
        let scan = scan_log(&log)
            .map_err(|e| DurableError::Corrupt(format!("`{}`: {e}", wal_path.display())))?;
        if scan.torn.is_some() {
            return Err(DurableError::Corrupt(format!(
                "`{}` has a torn record",
                wal_path.display()
            )));
        }
        for r in &scan.records {
            if state.last_commit.is_some_and(|c| r.commit <= c) {
                continue;
            }
            state.apply(r)?;
        }
        write_atomic(&self.dir, "snapshot", &encode_snapshot(&state))?;
        #[cfg(test)]
        if self.crash_after == Some(0) && self.crash {
            // Test hook: crash between the snapshot's rename and the log's truncation.
            self.health = Health::Crashed;
            return Err(DurableError::Unusable("crashed".into()));
        }
        if let Err(e) = self.cut(0) {
            // The snapshot covers the log, whose records recovery skips: keep writing.
            eprintln!("warning: {e}");
            return Ok(());
        }
        self.since_snapshot = 0;
        Ok(())
    }

    /// Test hook: the log's writes crash after `bytes` more bytes (a prefix of the
    /// record being written reaches the file); nothing is written after that.
    #[cfg(test)]
    pub(crate) fn crash_after(&mut self, bytes: u64) {
        self.crash_after = Some(bytes);
        self.crash = true;
    }

    /// Test hook: the next write that would pass `bytes` more bytes fails (a prefix
    /// reaches the file), as on a full disk; the folder stays usable.
    #[cfg(test)]
    pub(crate) fn fail_after(&mut self, bytes: u64) {
        self.crash_after = Some(bytes);
        self.crash = false;
    }
}

impl Drop for DataDir {
    /// A clean close takes a snapshot, so the next start reads no log.
    fn drop(&mut self) {
        if matches!(self.health, Health::Ok)
            && self.wal_len > 0
            && let Err(e) = self.snapshot()
        {
            eprintln!("warning: no snapshot taken at close: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(commit: u64, facts: &[(bool, &str, &[u32])]) -> Record {
        Record {
            commit,
            facts: facts
                .iter()
                .map(|(insert, rel, vals)| FactChange {
                    insert: *insert,
                    relation: rel.to_string(),
                    values: vals.iter().map(|&v| StoredValue::Bits(v)).collect(),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn sample() -> Vec<Record> {
        let mut r1 = rec(1, &[(false, "edge", &[1, 2]), (true, "edge", &[3, 4])]);
        r1.program = Some(ProgramChange {
            text: "new text".into(),
            relations: vec!["edge".into(), "path".into()],
        });
        r1.rdf_files = vec![("/a/b.nt".into(), 0)];
        r1.facts.push(FactChange {
            insert: true,
            relation: "name".into(),
            values: vec![StoredValue::Symbol("é\"x".into()), StoredValue::Bits(7)],
        });
        vec![
            rec(0, &[(true, "edge", &[1, 2]), (true, "edge", &[2, 3])]),
            r1,
            rec(2, &[]),
            rec(3, &[(true, "edge", &[5, 6])]),
        ]
    }

    fn log_of(records: &[Record]) -> (Vec<u8>, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for r in records {
            starts.push(bytes.len());
            bytes.extend(encode_record(r));
        }
        (bytes, starts)
    }

    #[test]
    fn records_round_trip() {
        let records = sample();
        let (bytes, _) = log_of(&records);
        let scan = scan_log(&bytes).expect("good log");
        assert_eq!(scan.records, records);
        assert_eq!(scan.good, bytes.len());
        assert!(scan.torn.is_none());
    }

    #[test]
    fn a_torn_last_record_is_dropped_at_every_offset() {
        let records = sample();
        let (bytes, starts) = log_of(&records);
        let last = *starts.last().expect("records");
        for cut in last..bytes.len() {
            let scan = scan_log(&bytes[..cut]).expect("a torn tail is no error");
            assert_eq!(scan.records, records[..records.len() - 1], "cut at {cut}");
            assert_eq!(scan.good, last);
            assert_eq!(scan.torn.is_some(), cut > last);
        }
        // Garbage appended after a torn write (zeros of a half-written page) too.
        let mut zeros = bytes[..last + 5].to_vec();
        zeros.extend([0u8; 100]);
        let scan = scan_log(&zeros).expect("torn");
        assert_eq!(scan.records.len(), records.len() - 1);
    }

    #[test]
    fn a_bad_checksum_in_the_last_record_drops_it_and_in_the_middle_is_refused() {
        let records = sample();
        let (bytes, starts) = log_of(&records);
        // Flip one payload byte of the last record.
        let mut b = bytes.clone();
        let i = starts[3] + HEADER + 3;
        b[i] ^= 0x40;
        let scan = scan_log(&b).expect("torn tail");
        assert_eq!(scan.records, records[..3]);
        assert!(scan.torn.expect("reported").contains("checksum"));
        // The same in the second record: good records follow, so it is an error.
        for i in [starts[1] + 2, starts[1] + 9, starts[1] + HEADER + 20] {
            let mut b = bytes.clone();
            b[i] ^= 0x01;
            let e = scan_log(&b).expect_err("corrupt middle");
            assert!(
                e.to_string().contains(&format!("byte {}", starts[1])),
                "{e}"
            );
        }
    }

    #[test]
    fn snapshots_round_trip_and_fold_like_the_log() {
        let records = sample();
        let mut s = State::initial("orig");
        for r in &records {
            s.apply(r).expect("in order");
        }
        assert_eq!(s.program, "new text");
        assert_eq!(s.len(), 4, "{s:?}"); // edge(2,3), edge(3,4), edge(5,6), name(..)
        assert!(!s.facts["edge"].contains(&vec![StoredValue::Bits(1), StoredValue::Bits(2)]));
        let back = decode_snapshot(&encode_snapshot(&s)).expect("round trip");
        assert_eq!(back, s);
        // A program change drops the facts of relations it no longer has.
        let mut r = rec(4, &[]);
        r.program = Some(ProgramChange {
            text: "t".into(),
            relations: vec!["edge".into()],
        });
        s.apply(&r).expect("next");
        assert!(!s.facts.contains_key("name"));
        // Out-of-order commits are refused.
        assert!(s.apply(&rec(9, &[])).is_err());
        // A damaged snapshot is an error.
        let mut bytes = encode_snapshot(&s);
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        assert!(decode_snapshot(&bytes).is_err());
        assert!(decode_snapshot(&bytes[..n / 2]).is_err());
    }

    #[test]
    fn the_folder_recovers_snapshots_and_logs_and_refuses_other_programs() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("data");
        let records = sample();
        let id;
        {
            let (mut d, state) = DataDir::open(&dir, "orig", Options::default()).expect("new");
            assert!(state.is_none());
            id = d.instance_id().to_string();
            for r in &records[..2] {
                d.append(r).expect("append");
            }
            d.snapshot().expect("snapshot");
            for r in &records[2..] {
                d.append(r).expect("append");
            }
            // A second process cannot open it.
            let e = DataDir::open(&dir, "orig", Options::default()).expect_err("locked");
            assert!(matches!(e, DurableError::Refused(_)), "{e}");
            assert!(e.to_string().contains("in use"), "{e}");
            d.health = Health::Poisoned("no snapshot at drop, for the test".into());
        }
        let mut expected = State::initial("orig");
        for r in &records {
            expected.apply(r).expect("fold");
        }
        let (d, state) = DataDir::open(&dir, "orig", Options::default()).expect("reopen");
        assert_eq!(d.instance_id(), id);
        assert_eq!(state.as_ref(), Some(&expected));
        drop(d); // snapshot at close: the log is empty afterwards
        assert_eq!(
            std::fs::metadata(dir.join("wal")).map(|m| m.len()).ok(),
            Some(0)
        );
        let (_d, state) = DataDir::open(&dir, "orig", Options::default()).expect("reopen");
        assert_eq!(state.as_ref(), Some(&expected));
        drop(_d);
        let e = DataDir::open(&dir, "other", Options::default()).expect_err("other program");
        assert!(matches!(e, DurableError::Refused(_)), "{e}");
        assert!(e.to_string().contains("another program"), "{e}");
    }

    #[test]
    fn a_crash_between_snapshot_and_truncation_loses_nothing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let records = sample();
        {
            let (mut d, _) = DataDir::open(tmp.path(), "orig", Options::default()).expect("new");
            for r in &records[..3] {
                d.append(r).expect("append");
            }
            d.crash_after(0);
            assert!(d.snapshot().is_err(), "crashes after the rename");
        }
        {
            let (mut d, state) =
                DataDir::open(tmp.path(), "orig", Options::default()).expect("recovers");
            assert_eq!(state.and_then(|s| s.last_commit), Some(2));
            d.append(&records[3]).expect("continues");
            d.health = Health::Poisoned("no snapshot at drop".into());
        }
        let (_d, state) = DataDir::open(tmp.path(), "orig", Options::default()).expect("again");
        let mut expected = State::initial("orig");
        for r in &records {
            expected.apply(r).expect("fold");
        }
        assert_eq!(state, Some(expected));
    }

    #[test]
    fn a_crash_while_writing_a_snapshot_loses_nothing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let records = sample();
        {
            let (mut d, _) = DataDir::open(tmp.path(), "orig", Options::default()).expect("new");
            for r in &records[..2] {
                d.append(r).expect("append");
            }
            d.snapshot().expect("snapshot");
            for r in &records[2..] {
                d.append(r).expect("append");
            }
            d.health = Health::Poisoned("no snapshot at drop".into());
        }
        // A half-written next snapshot, as a crash before its rename leaves it.
        let full = encode_snapshot(&State::initial("x"));
        std::fs::write(tmp.path().join("snapshot.tmp"), &full[..full.len() / 2]).expect("w");
        let (_d, state) = DataDir::open(tmp.path(), "orig", Options::default()).expect("opens");
        let mut expected = State::initial("orig");
        for r in &records {
            expected.apply(r).expect("fold");
        }
        assert_eq!(state, Some(expected));
        assert!(!tmp.path().join("snapshot.tmp").exists());
    }

    #[test]
    fn a_failed_append_is_cut_off_and_a_crashed_one_is_torn() {
        let tmp = tempfile::tempdir().expect("tmp");
        let records = sample();
        let first = encode_record(&records[0]).len() as u64;
        {
            let (mut d, _) = DataDir::open(tmp.path(), "orig", Options::default()).expect("new");
            d.crash_after(first + 7);
            d.append(&records[0]).expect("fits");
            assert!(d.append(&records[1]).is_err());
            assert!(d.append(&records[2]).is_err(), "nothing after a crash");
        }
        assert_eq!(
            std::fs::metadata(tmp.path().join("wal"))
                .map(|m| m.len())
                .ok(),
            Some(first + 7),
            "no snapshot at drop after a crash"
        );
        let (_d, state) = DataDir::open(tmp.path(), "orig", Options::default()).expect("recovers");
        assert_eq!(state.and_then(|s| s.last_commit), Some(0));
        assert_eq!(
            std::fs::metadata(tmp.path().join("wal"))
                .map(|m| m.len())
                .ok(),
            Some(first),
            "the torn record is truncated"
        );
    }

    #[test]
    fn instance_ids_are_random_hex() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}

/// Fault injection through a [`crate::Materialization`]: crashes in the middle of
/// a log write at random points of random streams, recovery, and a comparison with a
/// reference evaluation of the acknowledged transactions.
#[cfg(test)]
mod recovery_tests {
    use super::*;
    use crate::Materialization;

    const PROGRAM: &str = ".decl edge(x: number, y: number)\n\
        .decl path(x: number, y: number)\n\
        .decl label(n: number, s: symbol)\n\
        .decl named(s: symbol, t: symbol)\n\
        .output path\n.output named\n\
        path(x, y) :- edge(x, y).\n\
        path(x, z) :- path(x, y), edge(y, z).\n\
        named(s, t) :- label(x, s), path(x, y), label(y, t).\n\
        edge(1, 2).\nlabel(1, \"one\").\n";

    /// xorshift64*: a fixed stream per seed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// A random transaction: session command lines (facts, rule changes, inline facts).
    fn transaction(rng: &mut Rng, rule_in: &mut bool) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..1 + rng.below(3) {
            let (a, b) = (1 + rng.below(7), 1 + rng.below(7));
            let op = if rng.below(3) == 0 { '-' } else { '+' };
            lines.push(match rng.below(10) {
                0..=4 => format!("{op} edge({a}, {b})."),
                5..=6 => format!("{op} label({a}, \"s{b} \\\"q\\\"\")."),
                7 => format!("{op} edge(1, 2)."),
                8 if !lines.iter().any(|l: &String| l.contains(":-")) => {
                    let l = if *rule_in {
                        "- path(x, y) :- edge(y, x).".to_string()
                    } else {
                        "+ path(x, y) :- edge(y, x).".to_string()
                    };
                    *rule_in = !*rule_in;
                    l
                }
                _ => format!("inline label({a}, \"inline{b}\")."),
            });
        }
        lines
    }

    fn apply(m: &mut Materialization, t: &[String]) {
        for l in t {
            if let Some(rest) = l.strip_prefix("inline ") {
                m.add_rules(rest).expect("an inline fact");
            } else {
                assert!(m.stage_command(l, Path::new(".")).expect("stages"), "{l}");
            }
        }
    }

    fn dump(m: &Materialization) -> Vec<String> {
        let mut out = Vec::new();
        for r in &m.program().relations {
            for (rel, t) in m.dump(&r.name).expect("declared") {
                out.push(m.render(rel, &t));
            }
        }
        out.extend(m.rules());
        out
    }

    fn open(dir: &Path, engine: &str, every: u64) -> (Materialization, Option<u64>) {
        let mut m = Materialization::new("p.dl", PROGRAM, engine, 1).expect("checks");
        let options = Options {
            snapshot_every: every,
            snapshot_bytes: 0,
        };
        let (d, state) = DataDir::open(dir, PROGRAM, options).expect("opens");
        let last = state.as_ref().and_then(|s| s.last_commit);
        m.attach_data_dir(d, state).expect("attaches");
        (m, last)
    }

    /// The reference: a fresh materialization fed every acknowledged transaction.
    fn reference(acked: &[Vec<String>]) -> Vec<String> {
        let mut m = Materialization::new("p.dl", PROGRAM, "seminaive", 1).expect("checks");
        for t in acked {
            apply(&mut m, t);
            m.commit().expect("the reference commits");
        }
        dump(&m)
    }

    #[test]
    fn crashes_in_the_middle_of_log_writes_lose_no_acknowledged_commit() {
        let (mut crashes, mut commits) = (0, 0);
        for seed in 1..=12u64 {
            // Every engine, one per seed.
            let engines = dynalog_engines::ENGINE_NAMES;
            let engine = engines[seed as usize % engines.len()];
            let tmp = tempfile::tempdir().expect("tmp");
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut acked: Vec<Vec<String>> = Vec::new();
            let mut rule_in = false;
            for round in 0..3 {
                let (mut m, last) = open(tmp.path(), engine, 1 + rng.below(5));
                // The recovery (or first) commit gets the last acknowledged number.
                let first = m.commit().expect("recovers");
                match last {
                    Some(c) => assert_eq!(first.number, c, "seed {seed} round {round}"),
                    None => {
                        assert_eq!(first.number, 0);
                        acked.push(Vec::new());
                    }
                }
                assert_eq!(first.number as usize + 1, acked.len());
                assert_eq!(dump(&m), reference(&acked), "seed {seed} round {round}");
                if round == 2 {
                    break;
                }
                let budget = rng.below(3000);
                if let Some(d) = m.data_dir_mut() {
                    d.crash_after(budget);
                }
                let mut crashed = false;
                for _ in 0..40 {
                    let before = rule_in;
                    let t = transaction(&mut rng, &mut rule_in);
                    apply(&mut m, &t);
                    match m.commit() {
                        Ok(c) => {
                            assert_eq!(c.number as usize, acked.len());
                            acked.push(t);
                            commits += 1;
                        }
                        Err(e) => {
                            assert!(e.message().contains("could not be logged"), "{e}");
                            rule_in = before;
                            crashed = true;
                            crashes += 1;
                            break;
                        }
                    }
                }
                // The live state is the acknowledged one: what recovery must rebuild.
                assert_eq!(
                    dump(&m),
                    reference(&acked),
                    "seed {seed} round {round}, live"
                );
                if !crashed {
                    // No crash in 40 commits: crash now, with nothing being written.
                    if let Some(d) = m.data_dir_mut() {
                        d.crash_after(0);
                    }
                    let _ = m.snapshot();
                }
            }
        }
        // The streams do crash in the middle of writes, after some commits.
        eprintln!("{crashes} crashes in the middle of a write, {commits} commits");
        assert!(
            crashes >= 12 && commits >= 100,
            "{crashes} crashes, {commits} commits"
        );
    }

    #[test]
    fn a_failed_log_write_refuses_the_commit_and_applies_nothing() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (mut m, _) = open(tmp.path(), "seminaive", 2);
        m.insert_fact("edge(2, 3)").expect("fact");
        m.commit().expect("commit 0");
        let before = dump(&m);
        if let Some(d) = m.data_dir_mut() {
            d.fail_after(5);
        }
        m.insert_fact("edge(3, 4)").expect("fact");
        m.add_rules("path(x, y) :- edge(y, x).").expect("rule");
        let e = m.commit().expect_err("the disk is full");
        assert!(e.message().contains("nothing was applied"), "{e}");
        assert_eq!(dump(&m), before);
        assert!(!m.has_staged());
        m.insert_fact("edge(4, 5)").expect("fact");
        assert_eq!(m.commit().expect("the disk has room again").number, 1);
        let after = dump(&m);
        drop(m);
        let (mut m, last) = open(tmp.path(), "seminaive", 2);
        assert_eq!(last, Some(1));
        assert_eq!(m.commit().expect("recovers").number, 1);
        assert_eq!(dump(&m), after);
        m.insert_fact("edge(9, 9)").expect("fact");
        assert_eq!(m.commit().expect("continues").number, 2);
    }
}

#[cfg(test)]
mod rdf_tests {
    use super::*;
    use crate::Materialization;

    const TRIPLES: &str = ".decl T(s: symbol, p: symbol, o: symbol)\n.output T\n";

    fn open(dir: &Path) -> (Materialization, Option<u64>) {
        let mut m = Materialization::new("t.dl", TRIPLES, "seminaive", 1).expect("checks");
        let (d, state) = DataDir::open(dir, TRIPLES, Options::default()).expect("opens");
        let last = state.as_ref().and_then(|s| s.last_commit);
        m.attach_data_dir(d, state).expect("attaches");
        m.commit().expect("first commit");
        (m, last)
    }

    /// Blank nodes are named after the file's number: a file loaded before a restart
    /// unloads after it, from the log alone and from a snapshot.
    #[test]
    fn rdf_files_keep_their_numbers_across_a_restart() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (data, other) = (tmp.path().join("data"), tmp.path().join("other.nt"));
        let file = tmp.path().join("a.nt");
        std::fs::write(
            &file,
            "_:b <http://x/p> \"v\" .\n<http://x/s> <http://x/p> _:c .\n",
        )
        .expect("writes");
        std::fs::write(&other, "_:b <http://x/q> \"w\" .\n").expect("writes");
        for crash in [true, false] {
            let _ = std::fs::remove_dir_all(&data);
            let (mut m, _) = open(&data);
            m.stage_file("T", &other, true).expect("loads");
            m.stage_file("T", &file, true).expect("loads");
            m.commit().expect("commits");
            assert_eq!(m.len("T"), Some(3));
            if crash {
                // Stop without a snapshot: recovery reads the log.
                if let Some(d) = m.data_dir_mut() {
                    d.crash_after(0);
                }
                let _ = m.snapshot();
            }
            drop(m);
            let (mut m, last) = open(&data);
            assert_eq!(last, Some(1));
            assert_eq!(m.len("T"), Some(3));
            m.stage_file("T", &file, false).expect("unloads");
            m.commit().expect("commits");
            assert_eq!(m.len("T"), Some(1), "crash: {crash}");
        }
    }
}
