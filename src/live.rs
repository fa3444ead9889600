//! A live materialization: a program whose facts *and rules* change in transactions.
//!
//! [`Materialization`] is the library face of dynalog for programs that stay loaded:
//! it owns the program text, the symbol table and an engine, and turns text into
//! integer changes at the edge. Changes are staged — facts with
//! [`Materialization::insert_fact`] / [`Materialization::remove_fact`] (or
//! [`Materialization::insert`] / [`Materialization::remove`] with interned values), rules
//! with [`Materialization::add_rules`] / [`Materialization::remove_rules`] — and applied
//! together by [`Materialization::commit`], which returns every change of the
//! materialization. A transaction is all or nothing: if the new rule set does not
//! check (an unsafe rule, negation through recursion, an unknown relation), the commit
//! is refused with the reason and nothing staged is applied; [`Materialization::abort`]
//! discards a transaction explicitly.
//!
//! ```
//! use dynalog::live::Materialization;
//!
//! let program = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
//!                .output path\npath(x, y) :- edge(x, y).\n";
//! let mut m = Materialization::new("tc.dl", program, "diff", 2).unwrap();
//! m.insert_fact("edge(1, 2).").unwrap();
//! m.insert_fact("edge(2, 3).").unwrap();
//! m.commit().unwrap();
//! assert_eq!(m.len("path"), Some(2));
//!
//! // A rule is data: add it, and the closure appears as a difference.
//! m.add_rules("path(x, z) :- path(x, y), edge(y, z).").unwrap();
//! let commit = m.commit().unwrap();
//! assert_eq!(m.render_changes(&commit.changes), vec!["+ path(1, 3)."]);
//!
//! // Queries answer from the current materialization.
//! let rows = m.query("path(1, x)").unwrap();
//! assert_eq!(rows.len(), 2);
//! assert!(m.contains_fact("path(1, 3).").unwrap());
//!
//! // Removing the rule again (matched whatever the variable names) retracts what only it derived.
//! m.remove_rules("path(a, c) :- path(a, b), edge(b, c).").unwrap();
//! let commit = m.commit().unwrap();
//! assert_eq!(m.render_changes(&commit.changes), vec!["- path(1, 3)."]);
//!
//! // An unsafe rule is refused at commit, and nothing of its transaction is applied.
//! m.insert_fact("edge(3, 4).").unwrap();
//! m.add_rules("path(x, y) :- edge(x, x).").unwrap();
//! assert!(m.commit().is_err());
//! assert!(!m.contains_fact("edge(3, 4).").unwrap());
//! ```
//!
//! # Limits
//!
//! [`Materialization::set_limits`] bounds every transaction after the first (which
//! loads the inputs and is never limited): the facts one commit may change and the
//! time it may take ([`Limits`]). A commit over a limit stops while it evaluates, is
//! refused with an [`Error`] whose `limit` names the limit, and leaves the
//! materialization, the program and the facts exactly as they were.

use crate::durable::{DataDir, Record, State};
use dynalog_analysis::{PatternArg, Program, RelId, SymbolTable, Type, Value};
use dynalog_engines::diff::{Cluster, Diff, Follower};
use dynalog_engines::{Change, ClusterRole, Config, Engine, EngineError, LimitExceeded, Limits};
use dynalog_syntax::{Diagnostic, Item, SourceFile, Span};
use std::cmp::Ordering;
use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

/// Why a staged change or a commit was refused.
#[derive(Clone, Debug)]
pub struct Error {
    /// What is wrong.
    pub message: String,
    /// Where, in the text handed to the call (1-based line and column), when known.
    pub position: Option<(usize, usize)>,
    /// The limit a refused commit exceeded ([`Materialization::set_limits`]); nothing of
    /// the transaction was applied.
    pub limit: Option<LimitExceeded>,
}

impl Error {
    fn msg(message: impl Into<String>) -> Error {
        Error {
            message: message.into(),
            position: None,
            limit: None,
        }
    }

    fn at(d: &Diagnostic) -> Error {
        Error {
            message: d.message.clone(),
            position: Some((d.line, d.col)),
            limit: None,
        }
    }

    /// A commit refused by a limit, with how to change the limit.
    fn limit(limit: LimitExceeded) -> Error {
        let message = match limit {
            LimitExceeded::Changes(n) => format!(
                "the transaction changes more than {n} facts, the limit of \
                 changes per commit (--max-changes {n}; raise it, or 0 for no limit); it was \
                 rolled back, nothing changed"
            ),
            LimitExceeded::Time(t) => format!(
                "the transaction took more than {} s, the limit of time per \
                 commit (--max-commit-time {}; raise it, or 0 for no limit); it was rolled \
                 back, nothing changed",
                t.as_secs_f64(),
                t.as_secs_f64()
            ),
        };
        Error {
            message,
            position: None,
            limit: Some(limit),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((_, col)) => write!(f, "column {col}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {}

/// What one commit did.
#[derive(Clone, Debug)]
pub struct Commit {
    /// Commits are numbered from 0 (the first, which usually loads the inputs).
    pub number: u64,
    /// Every change of every relation, sorted (relation name, then values in the order
    /// a user reads them, deletions before insertions of the same fact).
    pub changes: Vec<Change>,
    pub elapsed: Duration,
}

impl Commit {
    /// Counts of insertions and deletions among `changes`.
    pub fn counts(changes: &[Change]) -> (usize, usize) {
        let ins = changes.iter().filter(|c| c.2 > 0).count();
        (ins, changes.len() - ins)
    }
}

/// A staged fact change: insert?, relation, values.
type StagedFact = (bool, RelId, Vec<Value>);

/// A live materialization. See the module documentation.
pub struct Materialization {
    /// Name of the program (its file), used in diagnostics.
    name: String,
    /// The text of the committed program: the original file, rules removed since
    /// blanked out (offsets and lines kept), rules added since appended.
    text: String,
    /// The program text of the transaction being staged, if it changes rules.
    pending_text: Option<String>,
    symbols: SymbolTable,
    /// The engine, which also holds the staged fact changes.
    engine: Box<dyn Engine>,
    commits: u64,
    /// RDF files loaded so far, numbered for their blank nodes.
    rdf_files: std::collections::HashMap<std::path::PathBuf, u32>,
    /// Where `load`/`unload` commands may read files.
    load_policy: LoadPolicy,
    /// Symbols of the committed state; later ones belong to the staged transaction and
    /// are forgotten when it is aborted or refused (and those of a refused line or of a
    /// query at once), so refused input never grows the symbol table.
    committed_symbols: usize,
    /// The data folder every commit is logged to (see [`crate::durable`]).
    durable: Option<DataDir>,
    /// Random per process start, or the data folder's.
    instance: String,
    /// Base-fact changes the engine staged itself (the first program's inline facts)
    /// that no commit logged yet.
    unlogged_inline: Vec<StagedFact>,
    /// RDF file numbers below this one are logged.
    rdf_logged: u32,
    /// The next commit rebuilds a recovered state: it is not logged.
    recovering: bool,
    /// Limits of the commits after the first ([`Materialization::set_limits`]).
    limits: Limits,
}

impl Materialization {
    /// Parse and check `text` and start `engine` (a name of
    /// [`dynalog_engines::ENGINE_NAMES`]) with `workers` workers. The program's inline
    /// facts are staged: the first commit materializes them.
    pub fn new(
        name: &str,
        text: &str,
        engine: &str,
        workers: usize,
    ) -> Result<Materialization, Error> {
        Materialization::with_engine(name, text, |program| {
            dynalog_engines::create(&Config::new(engine, workers), program)
        })
    }

    /// [`Materialization::new`] with the differential engine as process 0 of a
    /// cluster (see [`dynalog_engines::diff::Diff::lead`]): the other processes run
    /// [`follow`] with the same program; this one alone stages and commits, and sees
    /// the whole materialization.
    pub fn lead(
        name: &str,
        text: &str,
        workers: usize,
        cluster: Cluster,
    ) -> Result<Materialization, Error> {
        Materialization::with_engine(name, text, |program| {
            let config =
                Config::new("diff", workers).with_cluster(Some(cluster), ClusterRole::Lead);
            dynalog_engines::create(&config, program)
        })
    }

    fn with_engine(
        name: &str,
        text: &str,
        start: impl FnOnce(Program) -> Result<Box<dyn Engine>, EngineError>,
    ) -> Result<Materialization, Error> {
        let program = check_text(name, text)?;
        let symbols = program.symbols.clone();
        let unlogged_inline = program
            .facts
            .iter()
            .map(|(r, t)| (true, *r, t.clone()))
            .collect();
        let mut engine = start(program).map_err(|e| Error::msg(format!("error: {e}")))?;
        engine.track_changes(true);
        Ok(Materialization {
            name: name.to_string(),
            text: text.to_string(),
            pending_text: None,
            symbols,
            engine,
            commits: 0,
            rdf_files: Default::default(),
            load_policy: LoadPolicy::default(),
            committed_symbols: 0,
            durable: None,
            instance: crate::durable::random_id(),
            unlogged_inline,
            rdf_logged: 0,
            recovering: false,
            limits: Limits::NONE,
        })
    }

    /// Log every commit to a data folder from now on (see [`crate::durable`]), and, if
    /// it holds a `state` ([`DataDir::open`] returns it), rebuild that state: its
    /// program and base facts are staged, and the next commit applies them, is not
    /// logged, and takes the number of the last logged commit, so the commit after it
    /// continues the numbering. Call it before the first commit, with nothing staged
    /// (a recovered state replaces the program's `.input` files: do not stage them).
    /// The instance id becomes the folder's.
    pub fn attach_data_dir(&mut self, dir: DataDir, state: Option<State>) -> Result<(), Error> {
        if self.commits > 0 || self.has_staged() {
            return Err(Error::msg(
                "a data folder is attached before the first commit, with nothing staged",
            ));
        }
        self.instance = dir.instance_id().to_string();
        if let Some(state) = state {
            self.restore(&state)?;
        }
        self.durable = Some(dir);
        Ok(())
    }

    fn restore(&mut self, state: &State) -> Result<(), Error> {
        use crate::durable::StoredValue;
        let Some(last) = state.last_commit else {
            return Ok(());
        };
        let target = if state.program != self.text {
            let p = self.check_program(&state.program).map_err(|e| {
                Error::msg(format!(
                    "the recovered program does not check: {}",
                    e.message
                ))
            })?;
            self.pending_text = Some(state.program.clone());
            p
        } else {
            self.program().clone()
        };
        // The base facts become exactly the recovered ones: the target program's
        // inline facts out, the recovered facts in (engines apply staged changes in order).
        for (r, t) in &target.facts {
            self.engine.remove(*r, t);
        }
        for (name, set) in &state.facts {
            let rel = target.relation_id(name).ok_or_else(|| {
                Error::msg(format!(
                    "the data folder holds facts of `{name}`, which the program does not declare"
                ))
            })?;
            let types = target.relation(rel).types.clone();
            for values in set {
                if values.len() != types.len() {
                    return Err(Error::msg(format!(
                        "the data folder holds a fact of `{name}` with {} values instead of {}",
                        values.len(),
                        types.len()
                    )));
                }
                let mut tuple = Vec::with_capacity(values.len());
                for (v, t) in values.iter().zip(&types) {
                    tuple.push(match (v, *t == Type::Symbol) {
                        (StoredValue::Symbol(s), true) => self.symbols.intern(s),
                        (StoredValue::Bits(b), false) => *b,
                        _ => {
                            return Err(Error::msg(format!(
                                "the data folder holds a fact of `{name}` whose types differ from its declaration"
                            )));
                        }
                    });
                }
                self.engine.insert(rel, &tuple);
            }
        }
        for (path, id) in &state.rdf_files {
            self.rdf_files.insert(std::path::PathBuf::from(path), *id);
        }
        self.rdf_logged = self.rdf_files.len() as u32;
        self.commits = last;
        self.recovering = true;
        Ok(())
    }

    /// The instance id: the data folder's (fixed when it was created), or random per
    /// process start without one. With the commit number it names a state: followers
    /// of the changes can tell a restart without a data folder from one with.
    pub fn instance_id(&self) -> &str {
        &self.instance
    }

    /// The data folder, if commits are logged.
    pub fn data_dir(&self) -> Option<&DataDir> {
        self.durable.as_ref()
    }

    #[cfg(test)]
    pub(crate) fn data_dir_mut(&mut self) -> Option<&mut DataDir> {
        self.durable.as_mut()
    }

    /// Take a snapshot of the data folder now (dropping the materialization takes one
    /// too). Nothing happens without a data folder.
    pub fn snapshot(&mut self) -> Result<(), Error> {
        match &mut self.durable {
            Some(d) => d.snapshot().map_err(Error::msg),
            None => Ok(()),
        }
    }

    /// Read the program's `.input` files from `fact_dir` and stage their facts for
    /// insertion. Nothing is staged if a file is missing or has a bad line (the error
    /// names the file, line and column). Returns the number of facts read.
    pub fn stage_inputs(&mut self, fact_dir: &Path) -> Result<usize, Error> {
        let file = SourceFile::new(self.name.clone(), self.text.clone());
        let mut program = self.program().clone();
        program.symbols = std::mem::take(&mut self.symbols);
        let loaded = dynalog_io::read_inputs(&mut program, &file, fact_dir);
        self.symbols = std::mem::take(&mut program.symbols);
        let loaded = loaded.map_err(|d| Error::msg(d.to_string()))?;
        let mut n = 0;
        for l in &loaded {
            for t in l.tuples.iter() {
                self.engine.insert(l.relation, t);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Stage the insertion (`insert`) or deletion of every fact of a file, in the
    /// format of the relation's `.input` directive (tab-separated by default). RDF files
    /// (`.nt`, `.ttl`, optionally gzipped) are read as the program maps RDF: through its
    /// `IO="rdf"` inputs for `relation` (all of its vocabulary inputs if `relation` is
    /// one of them), or every triple into `relation` when it has three symbol columns.
    /// Nothing is staged if the file has a bad line. Returns the number of facts read.
    pub fn stage_file(
        &mut self,
        relation: &str,
        path: &Path,
        insert: bool,
    ) -> Result<usize, Error> {
        self.stage_file_as(relation, path, insert, None)
    }

    /// [`Materialization::stage_file`]; with `shown`, errors name the file as `shown`
    /// and never quote its contents (see [`redacted`]).
    fn stage_file_as(
        &mut self,
        relation: &str,
        path: &Path,
        insert: bool,
        shown: Option<&str>,
    ) -> Result<usize, Error> {
        let before = self.symbols.len();
        let read = self.read_file(relation, path, insert, shown);
        if read.is_err() {
            self.symbols.truncate(before);
        }
        read
    }

    fn read_file(
        &mut self,
        relation: &str,
        path: &Path,
        insert: bool,
        shown: Option<&str>,
    ) -> Result<usize, Error> {
        let rel = self.relation_id(relation)?;
        let names: Vec<String> = match shown {
            Some(_) => self
                .program()
                .relations
                .iter()
                .map(|r| r.name.clone())
                .collect(),
            None => Vec::new(),
        };
        let located = |d: Diagnostic| match shown {
            Some(name) => redacted(name, &d, |w| names.iter().any(|n| n == w)),
            None if d.line == 0 => Error::msg(d.message),
            None => Error::msg(format!("{}:{}:{}: {}", d.file, d.line, d.col, d.message)),
        };
        if dynalog_io::rdf::RdfFormat::from_path(path).is_some() {
            let batches = self.read_rdf(rel, path).map_err(located)?;
            let mut n = 0;
            for (r, tuples) in batches {
                for t in tuples.iter() {
                    self.stage(insert, r, t);
                    n += 1;
                }
            }
            return Ok(n);
        }
        let relation = self.program().relation(rel).clone();
        let tuples =
            dynalog_io::read_relation_file(path, &relation, &mut self.symbols).map_err(located)?;
        for t in tuples.iter() {
            self.stage(insert, rel, t);
        }
        Ok(tuples.len())
    }

    /// Read an RDF file for `rel` (see [`Materialization::stage_file`]).
    fn read_rdf(
        &mut self,
        rel: RelId,
        path: &Path,
    ) -> Result<Vec<(RelId, dynalog_io::Tuples)>, Diagnostic> {
        use dynalog_io::rdf::{Mapping, RdfOptions, RdfTarget};
        let file = SourceFile::new(self.name.clone(), self.text.clone());
        let declared =
            dynalog_io::rdf::targets_for_program(self.program(), &file).unwrap_or_default();
        let mut targets: Vec<RdfTarget> = declared
            .iter()
            .filter(|t| t.relation == rel)
            .cloned()
            .collect();
        if targets
            .iter()
            .any(|t| matches!(t.mapping, Mapping::Vocabulary { .. }))
        {
            targets = declared
                .into_iter()
                .filter(|t| matches!(t.mapping, Mapping::Vocabulary { .. }))
                .collect();
        }
        if targets.is_empty() {
            let r = self.program().relation(rel);
            if r.arity() != 3 || r.types.iter().any(|&t| t != Type::Symbol) {
                return Err(Diagnostic::line(
                    path.display().to_string(),
                    0,
                    0,
                    format!(
                        "`{}` takes no RDF: it has no `IO=\"rdf\"` input and is not a relation of three symbols",
                        r.name
                    ),
                ));
            }
            targets.push(RdfTarget {
                relation: rel,
                mapping: Mapping::Triples,
            });
        }
        // The same file gets the same blank-node names each time, so it can be unloaded.
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let next = self.rdf_files.len() as u32;
        let file_id = *self.rdf_files.entry(key).or_insert(next);
        let options = RdfOptions {
            file_id,
            ..Default::default()
        };
        let mut program = self.program().clone();
        program.symbols = std::mem::take(&mut self.symbols);
        let load = dynalog_io::rdf::load_rdf(&mut program, path, &targets, &options);
        self.symbols = std::mem::take(&mut program.symbols);
        Ok(load?.batches)
    }

    /// Choose where the `load`/`unload` commands of
    /// [`Materialization::stage_command`] may read files (by default, under the
    /// directory given to it).
    pub fn set_load_policy(&mut self, policy: LoadPolicy) {
        self.load_policy = policy;
    }

    /// The program as of the last commit.
    pub fn program(&self) -> &Program {
        self.engine.program()
    }

    /// The symbol table (a superset of the program's: facts staged since may add symbols).
    pub fn symbols(&self) -> &SymbolTable {
        &self.symbols
    }

    /// The engine's name.
    pub fn engine_name(&self) -> &'static str {
        self.engine.name()
    }

    /// Number of commits made so far.
    pub fn commits(&self) -> u64 {
        self.commits
    }

    fn relation_id(&self, name: &str) -> Result<RelId, Error> {
        self.program()
            .relation_id(name)
            .ok_or_else(|| Error::msg(format!("unknown relation `{name}`")))
    }

    /// Stage the insertion of a fact given with interned values.
    pub fn insert(&mut self, relation: RelId, tuple: &[Value]) {
        self.engine.insert(relation, tuple);
    }

    /// Stage the deletion of a base fact given with interned values.
    pub fn remove(&mut self, relation: RelId, tuple: &[Value]) {
        self.engine.remove(relation, tuple);
    }

    /// Stage an insertion (`insert`) or a deletion, with the engine.
    fn stage(&mut self, insert: bool, relation: RelId, tuple: &[Value]) {
        if insert {
            self.engine.insert(relation, tuple);
        } else {
            self.engine.remove(relation, tuple);
        }
    }

    /// Parse one fact written in Datalog (`edge(1, "a").`; the final `.` may be left
    /// out), checking it against the relation's declaration.
    pub fn parse_fact(&mut self, text: &str) -> Result<(RelId, Vec<Value>), Error> {
        let text = with_period(text);
        let file = SourceFile::new("<fact>", text);
        let ast = dynalog_syntax::parse(&file).map_err(|d| Error::at(&d))?;
        let rule = match &ast.items[..] {
            [Item::Rule(rule)] => rule,
            _ => return Err(Error::msg("expected one fact, such as `edge(1, 2).`")),
        };
        let program = self.engine.program();
        let before = self.symbols.len();
        dynalog_analysis::lower_fact(&file, program, &mut self.symbols, rule).map_err(|d| {
            self.symbols.truncate(before);
            Error::at(&d)
        })
    }

    /// Stage the insertion of a fact written in Datalog.
    pub fn insert_fact(&mut self, text: &str) -> Result<(), Error> {
        let (rel, tuple) = self.parse_fact(text)?;
        self.engine.insert(rel, &tuple);
        Ok(())
    }

    /// Stage the deletion of a fact written in Datalog (a no-op at commit if it is not
    /// a base fact then).
    pub fn remove_fact(&mut self, text: &str) -> Result<(), Error> {
        let (rel, tuple) = self.parse_fact(text)?;
        self.engine.remove(rel, &tuple);
        Ok(())
    }

    /// Stage rules (and declarations or inline facts) written in the program's
    /// language, appended to the program. Syntax errors are reported now, positioned in
    /// `text`; whether the resulting program checks is decided at commit. Returns the
    /// number of items staged.
    pub fn add_rules(&mut self, text: &str) -> Result<usize, Error> {
        let text = with_period(text);
        let file = SourceFile::new("<rules>", text.clone());
        let ast = dynalog_syntax::parse(&file).map_err(|d| Error::at(&d))?;
        if ast.items.is_empty() {
            return Err(Error::msg("no rule given"));
        }
        let pending = self.pending_text.get_or_insert_with(|| self.text.clone());
        if !pending.ends_with('\n') {
            pending.push('\n');
        }
        pending.push_str(&text);
        pending.push('\n');
        Ok(ast.items.len())
    }

    /// Stage the removal of rules: each rule of `text` must match a rule of the
    /// program (including rules staged in this transaction) after normalising
    /// whitespace, syntax and variable names. Nothing is staged if one does not match.
    /// Returns the number of rules removed.
    pub fn remove_rules(&mut self, text: &str) -> Result<usize, Error> {
        let text = with_period(text);
        let file = SourceFile::new("<rules>", text);
        let ast = dynalog_syntax::parse(&file).map_err(|d| Error::at(&d))?;
        let mut wanted = Vec::new();
        for item in &ast.items {
            match item {
                Item::Rule(r) if !r.body.is_empty() => wanted.push((r.canonical(), r.span)),
                other => {
                    let span = item_span(other);
                    let d = Diagnostic::at(&file, span, "only rules can be removed this way");
                    return Err(Error::at(&d));
                }
            }
        }
        if wanted.is_empty() {
            return Err(Error::msg("no rule given"));
        }
        let current = self
            .pending_text
            .clone()
            .unwrap_or_else(|| self.text.clone());
        let program_file = SourceFile::new(self.name.clone(), current.clone());
        let program_ast = dynalog_syntax::parse(&program_file)
            .map_err(|d| Error::msg(format!("the program no longer parses: {d}")))?;
        let rules: Vec<(String, Span)> = program_ast
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Rule(r) if !r.body.is_empty() => Some((r.canonical(), r.span)),
                _ => None,
            })
            .collect();
        let mut spans: Vec<Span> = Vec::new();
        for (canonical, span) in &wanted {
            match rules
                .iter()
                .find(|(c, s)| c == canonical && !spans.contains(s))
            {
                Some((_, s)) => spans.push(*s),
                None => {
                    let d = Diagnostic::at(&file, *span, "no such rule in the program");
                    return Err(Error::at(&d));
                }
            }
        }
        let mut bytes = current.into_bytes();
        for s in &spans {
            for b in &mut bytes[s.start as usize..s.end as usize] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        // Only ASCII bytes of a rule were replaced by spaces, except inside multi-byte
        // characters, which a span boundary never splits; turn lossy just in case.
        self.pending_text = Some(String::from_utf8_lossy(&bytes).into_owned());
        Ok(spans.len())
    }

    /// Stage one change written as a command line of `dynalog session`: `+ FACT.`,
    /// `- FACT.`, `+ RULE.`, `- RULE.`, `load REL FILE`, `unload REL FILE` (FILE is a
    /// regular file under `dir`, or under the directories of
    /// [`Materialization::set_load_policy`]; see [`resolve_load`]; errors about its
    /// lines never quote them). Returns
    /// `Ok(false)` if the line is not such a command; error positions are columns of
    /// `line`. A refused line stages nothing.
    pub fn stage_command(&mut self, line: &str, dir: &Path) -> Result<bool, Error> {
        let trimmed = line.trim();
        let (word, rest) = match trimmed.find(char::is_whitespace) {
            Some(i) => (&trimmed[..i], trimmed[i..].trim_start()),
            None => (trimmed, ""),
        };
        let start = line.len() - line.trim_start().len() + (trimmed.len() - rest.len());
        let located = |mut e: Error| {
            if let Some((1, col)) = e.position {
                e.position = Some((1, col + start));
            }
            e
        };
        match word {
            "+" | "-" => {
                if rest.is_empty() {
                    return Err(Error::msg(format!(
                        "expected a fact or a rule after `{word}`"
                    )));
                }
                let insert = word == "+";
                let r = match (is_rule(rest), insert) {
                    (true, true) => self.add_rules(rest).map(|_| ()),
                    (true, false) => self.remove_rules(rest).map(|_| ()),
                    (false, true) => self.insert_fact(rest),
                    (false, false) => self.remove_fact(rest),
                };
                r.map_err(located)?;
            }
            "load" | "unload" => {
                let (rel, file) = split2(rest)
                    .ok_or_else(|| Error::msg(format!("usage: {word} RELATION FILE")))?;
                let path = match &self.load_policy {
                    LoadPolicy::FactDir => resolve_load(&[dir], file),
                    LoadPolicy::Dirs(dirs) => {
                        resolve_load(&dirs.iter().map(|d| d.as_path()).collect::<Vec<_>>(), file)
                    }
                    LoadPolicy::Deny => resolve_load(&[], file),
                }?;
                self.stage_file_as(rel, &path, word == "load", Some(file))?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Bound every commit after the first (which loads the inputs): see [`Limits`]. A
    /// commit over a limit is refused and rolled back. `Err` if the engine cannot
    /// enforce limits (the differential engine over several processes).
    pub fn set_limits(&mut self, limits: Limits) -> Result<(), Error> {
        self.engine
            .set_limits(limits)
            .map_err(|e| Error::msg(format!("error: {e}")))?;
        self.limits = limits;
        Ok(())
    }

    /// The limits set by [`Materialization::set_limits`].
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Why the materialization can no longer be used, once its engine failed (a worker
    /// failed, a process of its cluster was lost or stopped answering): every commit
    /// then returns this error. `None` while it works.
    pub fn failed(&self) -> Option<String> {
        self.engine.failed()
    }

    /// Whether a transaction is being staged.
    pub fn has_staged(&self) -> bool {
        self.engine.has_staged() || self.pending_text.is_some()
    }

    /// Discard everything staged since the last commit.
    pub fn abort(&mut self) {
        self.pending_text = None;
        self.discard();
    }

    /// Discard the engine's staged changes and the symbols met since the last commit.
    fn discard(&mut self) {
        self.engine.abort();
        self.symbols.truncate(self.committed_symbols);
    }

    /// The fact changes staged with the engine, in order.
    fn staged_facts(&self) -> Vec<StagedFact> {
        let mut staged = Vec::new();
        self.engine
            .for_each_staged(&mut |insert, rel, t| staged.push((insert, rel, t.to_vec())));
        staged
    }

    /// Apply everything staged as one transaction. If the staged rule changes make a
    /// program that does not check, the commit is refused with the reason and the
    /// whole transaction is discarded.
    pub fn commit(&mut self) -> Result<Commit, Error> {
        let started = Instant::now();
        // The first transaction (loading the inputs) is not limited, and neither is
        // the one that rebuilds a recovered state: both are what was already accepted.
        let limits = if self.commits == 0 || self.recovering {
            Limits::NONE
        } else {
            self.limits
        };
        self.engine
            .set_limits(limits)
            .map_err(|e| Error::msg(e.to_string()))?;
        // A commit refused over a limit restores the text.
        let previous = self.pending_text.as_ref().map(|_| self.text.clone());
        let next = match self.pending_text.take() {
            Some(text) => match self.check_program(&text) {
                Ok(p) => Some((text, p)),
                Err(e) => {
                    self.discard();
                    return Err(e);
                }
            },
            None => None,
        };
        let logging = self.durable.is_some() && !self.recovering;
        // The staged facts, if the log needs them or the new program's inline facts must
        // be staged before them.
        let staged = if logging || next.is_some() {
            self.staged_facts()
        } else {
            Vec::new()
        };
        // Log first: a commit is applied only once it is on disk.
        let creation_inline = std::mem::take(&mut self.unlogged_inline);
        let logged = if !logging {
            false
        } else {
            let record = self.record(next.as_ref(), &creation_inline, &staged);
            let appended = match &mut self.durable {
                Some(d) => d.append(&record),
                None => Ok(()),
            };
            if let Err(e) = appended {
                self.discard();
                self.unlogged_inline = creation_inline;
                return Err(Error::msg(format!(
                    "the transaction could not be logged, nothing was applied: {e}"
                )));
            }
            self.rdf_logged = self.rdf_files.len() as u32;
            true
        };
        if let Some((text, next)) = next {
            self.symbols = next.symbols.clone();
            // The changes of the new program's inline facts come first, then the staged
            // facts (the order of the log).
            self.engine.abort();
            self.engine.set_program(next);
            for (insert, rel, tuple) in &staged {
                self.stage(*insert, *rel, tuple);
            }
            self.text = text;
        }
        drop(staged);
        if let Err(e) = self.engine.commit() {
            if logged && let Some(d) = &mut self.durable {
                d.undo_last();
            }
            if let Some(limit) = e.limit() {
                if let Some(text) = previous {
                    self.text = text;
                }
                self.symbols.truncate(self.committed_symbols);
                return Err(Error::limit(limit));
            }
            return Err(Error::msg(format!("the engine failed: {e}")));
        }
        self.committed_symbols = self.symbols.len();
        let mut changes = self.engine.last_changes().to_vec();
        self.sort_changes(&mut changes);
        let number = self.commits;
        self.commits += 1;
        self.recovering = false;
        if logged && let Some(d) = &mut self.durable {
            d.maybe_snapshot();
        }
        Ok(Commit {
            number,
            changes,
            elapsed: started.elapsed(),
        })
    }

    /// The log record of the transaction being committed: the inline facts the engine
    /// stages itself (at creation, and for a new program), then the `staged` facts.
    fn record(
        &self,
        next: Option<&(String, Program)>,
        creation_inline: &[StagedFact],
        staged: &[StagedFact],
    ) -> Record {
        use crate::durable::{FactChange, ProgramChange, StoredValue};
        let program = next.map_or(self.program(), |(_, p)| p);
        let symbols = next.map_or(&self.symbols, |(_, p)| &p.symbols);
        let inline = next.map(|(_, p)| dynalog_engines::inline_fact_changes(self.program(), p));
        let old = self.program();
        let stored = |(insert, rel, tuple): &StagedFact| {
            // Ids are stable across programs; a relation the new program dropped is
            // named by the old one.
            let r = program
                .relations
                .get(*rel as usize)
                .or_else(|| old.relations.get(*rel as usize))?;
            Some(FactChange {
                insert: *insert,
                relation: r.name.clone(),
                values: tuple
                    .iter()
                    .zip(&r.types)
                    .map(|(&v, t)| match t {
                        Type::Symbol => StoredValue::Symbol(symbols.resolve(v).to_string()),
                        _ => StoredValue::Bits(v),
                    })
                    .collect(),
            })
        };
        let mut rdf_files: Vec<(String, u32)> = self
            .rdf_files
            .iter()
            .filter(|(_, id)| **id >= self.rdf_logged)
            .map(|(p, id)| (p.to_string_lossy().into_owned(), *id))
            .collect();
        rdf_files.sort_by_key(|(_, id)| *id);
        Record {
            commit: self.commits,
            program: next.map(|(text, p)| ProgramChange {
                text: text.clone(),
                relations: p.relations.iter().map(|r| r.name.clone()).collect(),
            }),
            rdf_files,
            facts: creation_inline
                .iter()
                .chain(inline.iter().flatten())
                .chain(staged)
                .filter_map(stored)
                .collect(),
        }
    }

    /// Parse and check a new program text against the current program.
    fn check_program(&self, text: &str) -> Result<Program, Error> {
        let file = SourceFile::new(self.name.clone(), text.to_string());
        let located = |d: Diagnostic| {
            let what = d
                .snippet
                .as_ref()
                .map(|(line, _, _)| format!(" (in `{}`)", line.trim()))
                .unwrap_or_default();
            Error::msg(format!("{}{what}", d.message))
        };
        let ast = dynalog_syntax::parse(&file).map_err(located)?;
        let next =
            dynalog_analysis::analyse_with(&file, &ast, self.symbols.clone(), &Default::default())
                .map_err(located)?;
        self.engine
            .check_program(&next)
            .map_err(|e| Error::msg(e.to_string()))?;
        Ok(next)
    }

    /// The current rules, as written.
    pub fn rules(&self) -> Vec<String> {
        self.program()
            .rules
            .iter()
            .map(|r| r.text.clone())
            .collect()
    }

    /// Number of facts of a relation, `None` for an unknown relation.
    pub fn len(&self, relation: &str) -> Option<usize> {
        self.program()
            .relation_id(relation)
            .map(|r| self.engine.len(r))
    }

    /// Whether the materialization holds a fact written in Datalog.
    pub fn contains_fact(&mut self, text: &str) -> Result<bool, Error> {
        let before = self.symbols.len();
        let (rel, tuple) = self.parse_fact(text)?;
        // A symbol met only here matches nothing; it need not be kept.
        self.symbols.truncate(before);
        Ok(self.engine.contains(rel, &tuple))
    }

    /// The facts of the current materialization that match a pattern such as
    /// `path(1, x)` or `edge(_, "a")` (a repeated variable asks for equal columns),
    /// sorted, with their relation.
    pub fn query(&mut self, pattern: &str) -> Result<Vec<(RelId, Vec<Value>)>, Error> {
        let text = with_period(pattern);
        let file = SourceFile::new("<query>", text);
        let ast = dynalog_syntax::parse(&file).map_err(|d| Error::at(&d))?;
        let atom = match &ast.items[..] {
            [Item::Rule(rule)] if rule.body.is_empty() => &rule.head,
            _ => return Err(Error::msg("expected one pattern, such as `path(1, x)`")),
        };
        let before = self.symbols.len();
        let lowered =
            dynalog_analysis::lower_pattern(&file, self.engine.program(), &mut self.symbols, atom);
        // A symbol met only in the pattern matches nothing; it need not be kept.
        self.symbols.truncate(before);
        let (rel, args) = lowered.map_err(|d| Error::at(&d))?;
        let mut rows = Vec::new();
        let mut bound: Vec<Option<Value>> = Vec::new();
        self.engine.for_each_fact(rel, &mut |t| {
            bound.clear();
            for (v, a) in t.iter().zip(&args) {
                match *a {
                    PatternArg::Const(c) if c != *v => return,
                    PatternArg::Var(k) => {
                        if bound.len() <= k {
                            bound.resize(k + 1, None);
                        }
                        match bound[k] {
                            Some(b) if b != *v => return,
                            _ => bound[k] = Some(*v),
                        }
                    }
                    _ => {}
                }
            }
            rows.push((rel, t.to_vec()));
        });
        self.sort_rows(&mut rows);
        Ok(rows)
    }

    /// Every fact of a relation, sorted.
    pub fn dump(&self, relation: &str) -> Result<Vec<(RelId, Vec<Value>)>, Error> {
        let rel = self.relation_id(relation)?;
        let mut rows = Vec::new();
        self.engine
            .for_each_fact(rel, &mut |t| rows.push((rel, t.to_vec())));
        self.sort_rows(&mut rows);
        Ok(rows)
    }

    /// Render a fact as Datalog: `path(1, "a").` (symbols quoted, numbers bare).
    pub fn render(&self, relation: RelId, tuple: &[Value]) -> String {
        let r = self.program().relation(relation);
        let args: Vec<String> = tuple
            .iter()
            .zip(&r.types)
            .map(|(&v, &t)| match t {
                Type::Symbol => quote(self.symbols.resolve(v)),
                _ => t.render(v, &self.symbols),
            })
            .collect();
        format!("{}({}).", r.name, args.join(", "))
    }

    /// The changes users follow: those of the `.output` relations, or of every relation
    /// when the program declares no output.
    pub fn shown_changes(&self, changes: &[Change]) -> Vec<Change> {
        let p = self.program();
        let any_output = p.relations.iter().any(|r| !r.outputs.is_empty());
        changes
            .iter()
            .filter(|(r, _, _)| {
                !any_output
                    || p.relations
                        .get(*r as usize)
                        .is_some_and(|rel| !rel.outputs.is_empty())
            })
            .cloned()
            .collect()
    }

    /// Render changes as `+ fact.` / `- fact.` lines.
    pub fn render_changes(&self, changes: &[Change]) -> Vec<String> {
        changes
            .iter()
            .map(|(r, t, d)| format!("{} {}", if *d > 0 { '+' } else { '-' }, self.render(*r, t)))
            .collect()
    }

    fn compare_rows(&self, (ra, a): (RelId, &[Value]), (rb, b): (RelId, &[Value])) -> Ordering {
        let p = self.program();
        let name = |r: RelId| p.relations.get(r as usize).map_or("", |x| x.name.as_str());
        name(ra).cmp(name(rb)).then_with(|| {
            let types = p
                .relations
                .get(ra as usize)
                .map(|x| &x.types[..])
                .unwrap_or(&[]);
            for ((x, y), t) in a.iter().zip(b).zip(types) {
                let o = t.compare(*x, *y, &self.symbols);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        })
    }

    fn sort_rows(&self, rows: &mut [(RelId, Vec<Value>)]) {
        rows.sort_by(|a, b| self.compare_rows((a.0, &a.1), (b.0, &b.1)));
    }

    fn sort_changes(&self, changes: &mut [Change]) {
        changes.sort_by(|a, b| {
            self.compare_rows((a.0, &a.1), (b.0, &b.1))
                .then(a.2.cmp(&b.2))
        });
    }
}

/// Whether the text after `+`/`-` is a rule (it has a body) rather than a fact.
fn is_rule(text: &str) -> bool {
    // `:-` and `<-` cannot occur in a fact outside a string literal.
    let mut in_string = false;
    let mut escaped = false;
    let mut prev = ' ';
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == '-' && (prev == ':' || prev == '<') {
            return true;
        }
        prev = c;
    }
    false
}

/// `REL FILE` split at the first whitespace.
fn split2(rest: &str) -> Option<(&str, &str)> {
    let rest = rest.trim();
    let i = rest.find(char::is_whitespace)?;
    let file = rest[i..].trim();
    (!file.is_empty()).then(|| (&rest[..i], file))
}

/// Where the `load`/`unload` commands of [`Materialization::stage_command`] may read
/// files. Commands come from clients that may not be trusted (over HTTP, anyone who can
/// reach the port), so a file is only read when it is a regular file under an allowed
/// directory; [`Materialization::stage_file`], called by the embedding program, reads
/// any path it is given.
#[derive(Clone, Debug, Default)]
pub enum LoadPolicy {
    /// Files under the directory passed to `stage_command` (the fact directory of
    /// `dynalog session`/`serve`).
    #[default]
    FactDir,
    /// Files under these directories only.
    Dirs(Vec<std::path::PathBuf>),
    /// No `load`/`unload` at all.
    Deny,
}

/// A file named in a `load`/`unload` command, resolved under the allowed directories.
///
/// The name must be relative and must not contain `..`; it is joined to each allowed
/// directory in turn and canonicalised (symbolic links followed), and accepted only when
/// the result still lies under that directory (canonicalised too) and is a regular file —
/// not a directory, device, FIFO or socket, whose reading could block the engine or never
/// end. The refusal does not say whether a path outside the allowed directories exists.
/// (A file swapped for another between this check and the read needs write access to
/// the allowed directory, which clients do not have.)
pub fn resolve_load(roots: &[&Path], file: &str) -> Result<std::path::PathBuf, Error> {
    use std::path::Component;
    if roots.is_empty() {
        return Err(Error::msg(
            "loading files is disabled on this server (start it with `--allow-load DIR`)",
        ));
    }
    let p = Path::new(file);
    if file.contains('\0') {
        return Err(Error::msg("a file name cannot contain a NUL character"));
    }
    if p.is_absolute() || p.has_root() {
        return Err(Error::msg(format!(
            "cannot load `{file}`: absolute paths are not allowed; name a file relative to the load directory"
        )));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(Error::msg(format!(
            "cannot load `{file}`: `..` is not allowed; name a file under the load directory"
        )));
    }
    for root in roots {
        let Ok(root) = root.canonicalize() else {
            continue;
        };
        let Ok(found) = root.join(p).canonicalize() else {
            continue;
        };
        if !found.starts_with(&root) {
            continue;
        }
        match std::fs::metadata(&found) {
            Ok(m) if m.is_file() => return Ok(found),
            Ok(_) => {
                return Err(Error::msg(format!(
                    "cannot load `{file}`: not a regular file"
                )));
            }
            Err(_) => continue,
        }
    }
    Err(Error::msg(format!(
        "cannot load `{file}`: no such file under the load director{}",
        if roots.len() == 1 { "y" } else { "ies" }
    )))
}

/// An error of a file read by `load`/`unload`, without the file's contents: the file
/// as the command named it, the line and column, and the reason with any quoted value
/// left out (errors go back to clients, and a file's text is not theirs to see).
fn redacted(name: &str, d: &Diagnostic, is_name: impl Fn(&str) -> bool) -> Error {
    // Reasons quote the offending text in backticks (`abc` is not a number); relation
    // names are quoted the same way, so keep a quoted word only if `is_name` says so.
    let mut reason = String::with_capacity(d.message.len());
    let mut parts = d.message.split('`');
    if let Some(first) = parts.next() {
        reason.push_str(first);
    }
    let mut quoted = true;
    for part in parts {
        if quoted {
            reason.push('`');
            reason.push_str(if is_name(part) { part } else { "…" });
            reason.push('`');
        } else {
            reason.push_str(part);
        }
        quoted = !quoted;
    }
    match d.line {
        0 => Error::msg(format!("`{name}`: {reason}")),
        _ => Error::msg(format!("{name}:{}:{}: {reason}", d.line, d.col)),
    }
}

/// `text` ending with a period (a fact or rule typed without one).
fn with_period(text: &str) -> String {
    let t = text.trim_end();
    if t.ends_with('.') || t.ends_with(']') || t.is_empty() {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Type(t) => t.span,
        Item::Decl(d) => d.span,
        Item::Directive(d) => d.span,
        Item::Rule(r) => r.span,
    }
}

/// A symbol as a Datalog string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parse and check a program text.
fn check_text(name: &str, text: &str) -> Result<Program, Error> {
    let file = SourceFile::new(name, text.to_string());
    let ast = dynalog_syntax::parse(&file).map_err(|d| Error::msg(d.to_string()))?;
    dynalog_analysis::analyse(&file, &ast).map_err(|d| Error::msg(d.to_string()))
}

/// Join the cluster that process 0 leads with [`Materialization::lead`], as one of
/// its other processes, for the program `text` (the one process 0 started with).
/// Returns once every process is connected; [`Follower::wait`] then runs this
/// process's share of every transaction until process 0 stops.
pub fn follow(name: &str, text: &str, workers: usize, cluster: Cluster) -> Result<Follower, Error> {
    let program = check_text(name, text)?;
    Diff::follow(&program, workers.max(1), cluster).map_err(|e| Error::msg(format!("error: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                      .output path\npath(x, y) :- edge(x, y).\n\
                      path(x, z) :- path(x, y), edge(y, z).\n";

    fn tc(engine: &str) -> Materialization {
        let mut m = Materialization::new("tc.dl", TC, engine, 1).expect("checks");
        for f in ["edge(1, 2)", "edge(2, 3)", "edge(3, 1)"] {
            m.insert_fact(f).expect("a fact");
        }
        m.commit().expect("commits");
        m
    }

    #[test]
    fn syntax_errors_are_positioned_in_the_given_text() {
        let mut m = tc("seminaive");
        let e = m
            .add_rules("path(x, y) :- edge(x y).")
            .expect_err("bad syntax");
        assert_eq!(e.position, Some((1, 22)), "{e}");
        let e = m.insert_fact("edge(1, \"a\")").expect_err("bad type");
        assert_eq!(e.position, Some((1, 9)), "{e}");
        assert!(!m.has_staged(), "a refused line stages nothing");
    }

    #[test]
    fn removing_a_rule_that_is_not_there_stages_nothing() {
        let mut m = tc("seminaive");
        let e = m
            .remove_rules("path(x, y) :- edge(x, y). path(x, y) :- edge(y, x).")
            .expect_err("second rule is not in the program");
        assert_eq!(e.message, "no such rule in the program");
        assert!(!m.has_staged());
        // The same rule twice needs two copies of it.
        assert!(
            m.remove_rules("path(a, b) :- edge(a, b). path(c, d) :- edge(c, d).")
                .is_err()
        );
        assert_eq!(m.remove_rules("path(a, b) :- edge(a, b).").ok(), Some(1));
    }

    #[test]
    fn a_commit_over_a_limit_is_refused_and_leaves_everything_as_it_was() {
        for engine in dynalog_engines::ENGINE_NAMES {
            let mut m = Materialization::new("tc.dl", TC, engine, 1).expect("checks");
            m.set_limits(Limits {
                max_changes: Some(5),
                max_time: None,
            })
            .expect("limits");
            // The first transaction (the load) is not limited: 3 edges, 9 paths.
            for f in ["edge(1, 2)", "edge(2, 3)", "edge(3, 1)"] {
                m.insert_fact(f).expect("a fact");
            }
            m.commit().expect("the load is not limited");
            let rules = m.rules();
            // A new node reached from the cycle: 1 edge and 3 paths, within 5.
            m.insert_fact("edge(3, 4)").expect("a fact");
            m.commit().expect("4 changes");
            // A rule and a fact: 1 edge, `path(5, 1..5)`: over 5.
            m.add_rules("path(x, x) :- edge(x, _).").expect("parses");
            m.insert_fact("edge(5, 1)").expect("a fact");
            let e = m.commit().expect_err("over the limit");
            assert_eq!(e.limit, Some(LimitExceeded::Changes(5)), "{engine}: {e}");
            assert!(e.message.contains("--max-changes 5"), "{e}");
            assert_eq!(m.rules(), rules, "{engine}");
            assert_eq!(m.len("path"), Some(12), "{engine}");
            assert_eq!(m.len("edge"), Some(4), "{engine}");
            assert!(!m.has_staged());
            // The next transaction works as if nothing happened (1 edge, 4 paths).
            m.insert_fact("edge(4, 6)").expect("a fact");
            let c = m.commit().expect("commits");
            assert_eq!(c.number, 2, "refused commits are not numbered");
            assert_eq!(m.len("path"), Some(16), "{engine}");
        }
    }

    #[test]
    fn a_refused_commit_keeps_the_previous_program_and_facts() {
        for engine in dynalog_engines::ENGINE_NAMES {
            let mut m = tc(engine);
            let before = m.rules();
            m.remove_rules("path(x, y) :- edge(x, y).")
                .expect("matches");
            m.add_rules("path(x, y) :- edge(x, x).").expect("parses");
            m.insert_fact("edge(3, 4)").expect("a fact");
            let e = m.commit().expect_err("unsafe rule");
            assert!(e.message.contains("not grounded"), "{e}");
            assert_eq!(m.rules(), before);
            assert_eq!(m.len("path"), Some(9));
            assert!(!m.contains_fact("edge(3, 4)").expect("a fact"));
            assert!(!m.has_staged());
            // The next transaction works as if nothing happened.
            m.insert_fact("edge(3, 4)").expect("a fact");
            let c = m.commit().expect("commits");
            assert_eq!(c.number, 1, "refused commits are not numbered");
            assert_eq!(m.len("path"), Some(12), "{engine}");
        }
    }

    #[test]
    fn queries_match_constants_repeated_variables_and_wildcards() {
        let mut m = tc("diff");
        assert_eq!(m.query("path(x, x)").expect("pattern").len(), 3);
        assert_eq!(m.query("path(1, _)").expect("pattern").len(), 3);
        assert_eq!(m.query("path(1, 9)").expect("pattern").len(), 0);
        let rows = m.query("path(2, y).").expect("pattern");
        let shown: Vec<String> = rows.iter().map(|(r, t)| m.render(*r, t)).collect();
        assert_eq!(shown, ["path(2, 1).", "path(2, 2).", "path(2, 3)."]);
        assert!(m.query("nosuch(x)").is_err());
        assert!(m.query("path(x, y) :- edge(x, y)").is_err());
    }

    #[test]
    fn loads_read_only_regular_files_under_the_allowed_directory() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join("facts");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/e.facts"), "1\t2\n").expect("write");
        std::fs::write(dir.path().join("secret.facts"), "7\t8\n").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.facts"), root.join("out.facts"))
            .expect("symlink");
        std::os::unix::fs::symlink("/dev/zero", root.join("zero.facts")).expect("symlink");
        std::os::unix::fs::symlink(root.join("sub/e.facts"), root.join("in.facts"))
            .expect("symlink");
        let fifo = std::ffi::CString::new(root.join("pipe.facts").as_os_str().as_encoded_bytes())
            .expect("no NUL");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let roots = [root.as_path()];

        let ok = resolve_load(&roots, "sub/e.facts").expect("a file under the root");
        assert!(ok.ends_with("sub/e.facts"));
        assert!(resolve_load(&roots, "./sub/e.facts").is_ok());
        assert!(
            resolve_load(&roots, "in.facts").is_ok(),
            "a link inside the root"
        );

        let refused = |name: &str| resolve_load(&roots, name).expect_err(name).message;
        assert!(refused("/etc/passwd").contains("absolute paths are not allowed"));
        assert!(refused("../secret.facts").contains("`..` is not allowed"));
        assert!(refused("sub/../../secret.facts").contains("`..` is not allowed"));
        assert!(refused("pipe.facts").contains("not a regular file"));
        assert!(refused("sub").contains("not a regular file"));
        // Out of the root, and nonexistent: the same answer, so nothing leaks about
        // which paths exist outside.
        let missing = refused("missing.facts");
        assert!(missing.contains("no such file under the load directory"));
        assert_eq!(refused("out.facts").replace("out", "missing"), missing);
        assert_eq!(refused("zero.facts").replace("zero", "missing"), missing);
        assert!(
            resolve_load(&[], "sub/e.facts").is_err(),
            "no directory, no loads"
        );
    }

    #[test]
    fn load_commands_follow_the_policy_and_never_quote_the_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join("good.facts"), "1\t2\n2\t3\n").expect("write");
        std::fs::write(dir.path().join("bad.facts"), "1\t2\nhunter2\t3\n").expect("write");
        let mut m = tc("seminaive");
        let e = m
            .stage_command("load edge bad.facts", dir.path())
            .expect_err("a bad line");
        assert!(!e.message.contains("hunter2"), "{e}");
        assert!(
            e.message.starts_with("bad.facts:2:1: column 1 of `edge`"),
            "{e}"
        );
        assert!(!m.has_staged());
        assert!(
            m.stage_command("load edge good.facts", dir.path())
                .expect("loads")
        );
        m.abort();
        m.set_load_policy(LoadPolicy::Deny);
        let e = m
            .stage_command("load edge good.facts", dir.path())
            .expect_err("loads are off");
        assert!(e.message.contains("disabled"), "{e}");
        let other = tempfile::tempdir().expect("a temporary directory");
        m.set_load_policy(LoadPolicy::Dirs(vec![other.path().to_path_buf()]));
        assert!(m.stage_command("load edge good.facts", dir.path()).is_err());
        std::fs::copy(dir.path().join("good.facts"), other.path().join("g.facts")).expect("copy");
        assert!(
            m.stage_command("load edge g.facts", dir.path())
                .expect("loads")
        );
        m.commit().expect("commits");
        assert!(m.contains_fact("edge(2, 3)").expect("a fact"));
    }

    #[test]
    fn refused_and_aborted_input_leaves_no_symbols_behind() {
        let program = ".decl p(x: symbol, y: number)\n.output p\n";
        let mut m = Materialization::new("p.dl", program, "seminaive", 1).expect("checks");
        m.commit().expect("commits");
        let base = m.symbols().len();
        for i in 0..100 {
            // A type error after a new symbol: the line is refused, the symbol forgotten.
            assert!(m.insert_fact(&format!("p(\"s{i}\", \"t\")")).is_err());
            assert!(
                m.query(&format!("p(\"q{i}\", x)"))
                    .expect("a pattern")
                    .is_empty()
            );
            assert!(!m.contains_fact(&format!("p(\"c{i}\", 1)")).expect("a fact"));
        }
        assert_eq!(m.symbols().len(), base);
        m.insert_fact("p(\"kept\", 1)").expect("a fact");
        m.insert_fact("p(\"dropped\", 1)").expect("a fact");
        m.abort();
        assert_eq!(m.symbols().len(), base);
        m.insert_fact("p(\"kept\", 1)").expect("a fact");
        m.add_rules("p(x, 2) :- p(x, y), q(y).").expect("parses");
        assert!(m.commit().is_err(), "q is not declared");
        assert_eq!(m.symbols().len(), base);
        m.insert_fact("p(\"kept\", 1)").expect("a fact");
        m.commit().expect("commits");
        assert_eq!(m.symbols().len(), base + 1);
        let rows = m.query("p(\"kept\", x)").expect("a pattern");
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn symbols_are_quoted_when_rendered() {
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }
}
