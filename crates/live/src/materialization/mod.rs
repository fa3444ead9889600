//! The materialization: staging facts and rules, committing them as transactions
//! (with the data folder's log and the limits), and reading the result
//! ([`query`]: patterns, sizes, rules; [`render`]: facts as text). Files are read by
//! [`load`].

mod load;
mod query;
mod render;

use load::split2;
pub use load::{LoadPolicy, resolve_load};
pub use render::{quote, render_fact};

use crate::durable::{DataDir, Record, State};
use crate::error::LiveError;
use dynalog_analysis::{Program, RelId, SymbolTable, Type, Value};
use dynalog_engines::diff::{Cluster, Diff, Follower};
use dynalog_engines::{ChangeList, ClusterRole, Config, Engine, EngineError, Limits};
use dynalog_syntax::{Components, Diagnostic, Item, SourceFile, Span};
use std::path::Path;
use std::time::{Duration, Instant};

/// What one commit did.
#[derive(Clone, Debug)]
pub struct Commit {
    /// Commits are numbered from 0 (the first, which usually loads the inputs).
    pub number: u64,
    /// Every change of every relation, in no particular order;
    /// [`Materialization::shown_changes`] gives those users follow, sorted as they read
    /// them. Empty for a first commit whose changes were not asked for
    /// ([`Materialization::keep_first_changes`]).
    pub changes: ChangeList,
    /// The facts inserted into and deleted from the relations users follow (those of
    /// [`Materialization::shown_changes`]), whether `changes` holds them or not.
    pub inserted: usize,
    pub deleted: usize,
    pub elapsed: Duration,
}

/// What [`Materialization::add_new_rules`] staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedRules {
    /// Items staged (rules, declarations, inline facts).
    pub staged: usize,
    /// The rules given that the program (or the transaction) already had, as written
    /// in the text given: they were not added again.
    pub present: Vec<String>,
}

/// What [`Materialization::stage`] did with a command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Staged {
    /// The change is staged.
    Change,
    /// A `+ RULE.` line whose rules (these, as written in the line) the program already
    /// has: they are not added again (the line's other items, if any, are staged).
    RulesPresent(Vec<String>),
}

/// A staged fact change: insert?, relation, values.
type StagedFact = (bool, RelId, Vec<Value>);

/// A live materialization. See the [crate documentation](crate).
pub struct Materialization {
    /// Name of the program (its file), used in diagnostics.
    name: String,
    /// The text of the committed program: the original file, rules removed since
    /// cut out (lines kept: a written rule's line breaks stay, and the rules it still
    /// stands for are written on its first line), rules added since appended.
    text: String,
    /// The program as it was given (with the positions of the files it was
    /// preprocessed from): diagnostics use it while `text` is still its text.
    source: SourceFile,
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
    committed_symbols: dynalog_analysis::TableMark,
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
    /// No commit has succeeded yet in this process: the engine holds no fact.
    empty: bool,
    /// Whether the first commit records its changes ([`Materialization::keep_first_changes`]).
    first_changes: bool,
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
    ) -> Result<Materialization, LiveError> {
        Materialization::from_source(SourceFile::new(name, text), engine, workers)
    }

    /// [`Materialization::new`] for a program given as a [`SourceFile`], such as one
    /// made by [`dynalog_syntax::preprocess`]: its diagnostics (the program's, and
    /// those of its `.input` files while its rules are unchanged) use the file's
    /// positions, those of the original files for a preprocessed text.
    pub fn from_source(
        source: SourceFile,
        engine: &str,
        workers: usize,
    ) -> Result<Materialization, LiveError> {
        Materialization::with_engine(source, |program| {
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
    ) -> Result<Materialization, LiveError> {
        Materialization::lead_source(SourceFile::new(name, text), workers, cluster)
    }

    /// [`Materialization::lead`] for a program given as a [`SourceFile`] (see
    /// [`Materialization::from_source`]).
    pub fn lead_source(
        source: SourceFile,
        workers: usize,
        cluster: Cluster,
    ) -> Result<Materialization, LiveError> {
        Materialization::with_engine(source, |program| {
            let config =
                Config::new("diff", workers).with_cluster(Some(cluster), ClusterRole::Lead);
            dynalog_engines::create(&config, program)
        })
    }

    fn with_engine(
        source: SourceFile,
        start: impl FnOnce(Program) -> Result<Box<dyn Engine>, EngineError>,
    ) -> Result<Materialization, LiveError> {
        let program = check_file(&source)?;
        let symbols = program.symbols.clone();
        let unlogged_inline = program
            .facts
            .iter()
            .map(|(r, t)| (true, *r, t.clone()))
            .collect();
        let mut engine = start(program).map_err(|e| LiveError::Engine(e.to_string()))?;
        engine.track_changes(true);
        Ok(Materialization {
            name: source.name.clone(),
            text: source.text.to_string(),
            source,
            pending_text: None,
            symbols,
            engine,
            commits: 0,
            rdf_files: Default::default(),
            load_policy: LoadPolicy::default(),
            committed_symbols: dynalog_analysis::SymbolTable::new().mark(),
            durable: None,
            instance: crate::durable::random_id(),
            unlogged_inline,
            rdf_logged: 0,
            recovering: false,
            limits: Limits::NONE,
            empty: true,
            first_changes: true,
        })
    }

    /// Log every commit to a data folder from now on (see [`crate::durable`]), and, if
    /// it holds a `state` ([`DataDir::open`] returns it), rebuild that state: its
    /// program and base facts are staged, and the next commit applies them, is not
    /// logged, and takes the number of the last logged commit, so the commit after it
    /// continues the numbering. Call it before the first commit, with nothing staged
    /// (a recovered state replaces the program's `.input` files: do not stage them).
    /// The instance id becomes the folder's.
    pub fn attach_data_dir(&mut self, dir: DataDir, state: Option<State>) -> Result<(), LiveError> {
        if self.commits > 0 || self.has_staged() {
            return Err(LiveError::Invalid(
                "a data folder is attached before the first commit, with nothing staged".into(),
            ));
        }
        self.instance = dir.instance_id().to_string();
        if let Some(state) = state {
            self.restore(&state)?;
        }
        self.durable = Some(dir);
        Ok(())
    }

    fn restore(&mut self, state: &State) -> Result<(), LiveError> {
        use crate::durable::StoredValue;
        let Some(last) = state.last_commit else {
            return Ok(());
        };
        let target = if state.program != self.text {
            let p = self.check_program(&state.program).map_err(|e| {
                LiveError::Recovery(format!(
                    "the recovered program does not check: {}",
                    e.message()
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
                LiveError::Recovery(format!(
                    "the data folder holds facts of `{name}`, which the program does not declare"
                ))
            })?;
            let types = target.relation(rel).types.clone();
            for values in set {
                if values.len() != types.len() {
                    return Err(LiveError::Recovery(format!(
                        "the data folder holds a fact of `{name}` with {} values instead of {}",
                        values.len(),
                        types.len()
                    )));
                }
                let mut tuple = Vec::with_capacity(values.len());
                for (v, t) in values.iter().zip(&types) {
                    tuple.push(match (v, t) {
                        (StoredValue::Symbol(s), Type::Symbol) => self.symbols.intern(s),
                        // A record is logged as its text, symbols quoted.
                        (StoredValue::Symbol(s), Type::Record(_)) => {
                            t.parse(s, &mut self.symbols).map_err(|e| {
                                LiveError::Recovery(format!(
                                    "the data folder holds a fact of `{name}` whose record does not read back: {e}"
                                ))
                            })?
                        }
                        (StoredValue::Bits(b), Type::Number | Type::Unsigned | Type::Float) => *b,
                        _ => {
                            return Err(LiveError::Recovery(format!(
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
    pub fn snapshot(&mut self) -> Result<(), LiveError> {
        match &mut self.durable {
            Some(d) => d.snapshot().map_err(LiveError::Durable),
            None => Ok(()),
        }
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

    fn relation_id(&self, name: &str) -> Result<RelId, LiveError> {
        self.program()
            .relation_id(name)
            .ok_or_else(|| LiveError::Invalid(format!("unknown relation `{name}`")))
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
    fn stage_fact(&mut self, insert: bool, relation: RelId, tuple: &[Value]) {
        if insert {
            self.engine.insert(relation, tuple);
        } else {
            self.engine.remove(relation, tuple);
        }
    }

    /// Parse one fact written in Datalog (`edge(1, "a").`; the final `.` may be left
    /// out), checking it against the relation's declaration.
    pub fn parse_fact(&mut self, text: &str) -> Result<(RelId, Vec<Value>), LiveError> {
        let text = with_period(text);
        let file = SourceFile::new("<fact>", text);
        let ast = dynalog_syntax::parse(&file).map_err(LiveError::Parse)?;
        let rule = match &ast.items[..] {
            [Item::Rule(rule)] => rule,
            _ => {
                return Err(LiveError::Invalid(
                    "expected one fact, such as `edge(1, 2).`".into(),
                ));
            }
        };
        let program = self.engine.program();
        let before = self.symbols.mark();
        dynalog_analysis::lower_fact(&file, program, &mut self.symbols, rule).map_err(|d| {
            self.symbols.rollback(before);
            LiveError::Parse(d)
        })
    }

    /// Stage the insertion of a fact written in Datalog.
    pub fn insert_fact(&mut self, text: &str) -> Result<(), LiveError> {
        let (rel, tuple) = self.parse_fact(text)?;
        self.engine.insert(rel, &tuple);
        Ok(())
    }

    /// Stage the deletion of a fact written in Datalog (a no-op at commit if it is not
    /// a base fact then).
    pub fn remove_fact(&mut self, text: &str) -> Result<(), LiveError> {
        let (rel, tuple) = self.parse_fact(text)?;
        self.engine.remove(rel, &tuple);
        Ok(())
    }

    /// Stage rules (and declarations or inline facts) written in the program's
    /// language, appended to the program. Syntax errors are reported now, positioned in
    /// `text`; whether the resulting program checks is decided at commit.
    ///
    /// The rules of a program form a set: a rule already in the program (or staged in
    /// this transaction), matched as [`Materialization::remove_rules`] matches (whatever
    /// the layout, syntax and variable names), is not added again, and neither is a rule
    /// that `text` gives twice; [`Materialization::add_new_rules`] says which. Returns
    /// the number of items staged (0 if every rule was there already).
    ///
    /// `text` may use component instances' relations (`out(x) :- inst.r(x).`) but not
    /// declare components: a `.comp` is refused (it belongs in the program file).
    pub fn add_rules(&mut self, text: &str) -> Result<usize, LiveError> {
        Ok(self.add_new_rules(text)?.staged)
    }

    /// [`Materialization::add_rules`], with the rules that were already in the program.
    pub fn add_new_rules(&mut self, text: &str) -> Result<AddedRules, LiveError> {
        let text = with_period(text);
        let file = SourceFile::new("<rules>", text.clone());
        let (ast, components) =
            dynalog_syntax::parse_with_components(&file).map_err(LiveError::Parse)?;
        if !components.bodies.is_empty() {
            return Err(LiveError::Invalid(
                "components (`.comp`) cannot be added to a session; add them to the program file"
                    .into(),
            ));
        }
        if ast.items.is_empty() {
            return Err(LiveError::Invalid("no rule given".into()));
        }
        let (_, program, _) = self.current_program()?;
        let mut known: std::collections::HashSet<String> =
            program.items.iter().filter_map(rule_canonical).collect();
        let mut present = Vec::new();
        let mut staged = 0;
        let mut replacements = Vec::new();
        // A written rule with several heads or disjuncts is several rules with one span.
        for group in items_by_span(&ast.items) {
            let (new, old): (Vec<&Item>, Vec<&Item>) = group.iter().partition(|item| match item {
                Item::Rule(r) if !r.body.is_empty() => known.insert(r.canonical()),
                _ => true,
            });
            staged += new.len();
            if old.is_empty() {
                continue;
            }
            let span = group[0].span();
            if new.is_empty() {
                present.push(
                    text[span.start as usize..span.end as usize]
                        .trim()
                        .to_string(),
                );
            } else {
                present.extend(old.iter().map(|item| item_text(&text, item)));
            }
            let kept: Vec<String> = new.iter().map(|item| item_text(&text, item)).collect();
            replacements.push((span, kept.join(" ")));
        }
        let text = replace_spans(&text, replacements);
        if staged > 0 {
            let pending = self.pending_text.get_or_insert_with(|| self.text.clone());
            if !pending.ends_with('\n') {
                pending.push('\n');
            }
            pending.push_str(&text);
            pending.push('\n');
        }
        Ok(AddedRules { staged, present })
    }

    /// The program text as staged (the committed one if no rule change is staged), its
    /// syntax tree (components expanded), and where its components are declared.
    fn current_program(&self) -> Result<(String, dynalog_syntax::Program, Components), LiveError> {
        let current = self
            .pending_text
            .clone()
            .unwrap_or_else(|| self.text.clone());
        let program_file = SourceFile::new(self.name.clone(), current.clone());
        let (program, components) = dynalog_syntax::parse_with_components(&program_file)
            .map_err(|d| LiveError::Rules(format!("the program no longer parses: {d}")))?;
        Ok((current, program, components))
    }

    /// Stage the removal of rules: each rule of `text` must match a rule of the
    /// program (including rules staged in this transaction) after normalising
    /// whitespace, syntax and variable names. Nothing is staged if one does not match.
    /// The rules are a set: a rule is removed once, whatever the number of times `text`
    /// gives it (and every copy of it goes, if the program file wrote it twice).
    /// Returns the number of rules removed.
    ///
    /// Rules written inside a component (`.comp`) are not removed this way: every
    /// instance of the component has a copy, all written by the same text, so a rule
    /// of `inst.r` matches nothing here (the error says why); rules at the top level,
    /// including those that use instances' relations (`out(x) :- inst.r(x).`), are.
    pub fn remove_rules(&mut self, text: &str) -> Result<usize, LiveError> {
        let text = with_period(text);
        let file = SourceFile::new("<rules>", text);
        let ast = dynalog_syntax::parse(&file).map_err(LiveError::Parse)?;
        let mut wanted = Vec::new();
        for item in &ast.items {
            match item {
                Item::Rule(r) if !r.body.is_empty() => wanted.push((r.canonical(), r.span)),
                other => {
                    let span = other.span();
                    let d = Diagnostic::at(&file, span, "only rules can be removed this way");
                    return Err(LiveError::Parse(d));
                }
            }
        }
        if wanted.is_empty() {
            return Err(LiveError::Invalid("no rule given".into()));
        }
        let (current, program_ast, components) = self.current_program()?;
        // The rules of component instances are copies of a component's text: they are
        // not removed one by one (the component's rule stands for every instance's).
        let canonicals: Vec<Option<String>> = program_ast
            .items
            .iter()
            .map(|item| rule_canonical(item).filter(|_| !components.contains(item.span())))
            .collect();
        let present: std::collections::HashSet<&String> = canonicals.iter().flatten().collect();
        for (c, span) in &wanted {
            if !present.contains(c) {
                let in_component = program_ast.items.iter().any(|item| {
                    components.contains(item.span()) && rule_canonical(item).as_ref() == Some(c)
                });
                let message = if in_component {
                    "this rule belongs to a component instance; rules inside components cannot \
                     be removed one by one (edit the component in the program file)"
                } else {
                    "no such rule in the program"
                };
                let d = Diagnostic::at(&file, *span, message);
                return Err(LiveError::Parse(d));
            }
        }
        let wanted: std::collections::HashSet<String> =
            wanted.into_iter().map(|(c, _)| c).collect();
        // Every rule of the program whose canonical form is wanted goes; a written rule
        // that stands for several keeps the others, written out one by one.
        let mut removed = 0;
        let mut replacements = Vec::new();
        let mut next = 0;
        for group in items_by_span(&program_ast.items) {
            let goes = &canonicals[next..next + group.len()];
            next += group.len();
            let (gone, kept): (Vec<_>, Vec<_>) = group
                .iter()
                .zip(goes)
                .partition(|(_, c)| c.as_ref().is_some_and(|c| wanted.contains(c)));
            if gone.is_empty() {
                continue;
            }
            removed += gone.len();
            let kept: Vec<String> = kept.iter().map(|(i, _)| item_text(&current, i)).collect();
            replacements.push((group[0].span(), kept.join(" ")));
        }
        self.pending_text = Some(replace_spans(&current, replacements));
        Ok(removed)
    }

    /// Stage one change written as a command line of `dynalog session`: `+ FACT.`,
    /// `- FACT.`, `+ RULE.`, `- RULE.`, `load REL FILE`, `unload REL FILE` (FILE is a
    /// regular file under `dir`, or under the directories of
    /// [`Materialization::set_load_policy`]; see [`resolve_load`]; errors about its
    /// lines never quote them). Returns
    /// `Ok(false)` if the line is not such a command; error positions are columns of
    /// `line`. A refused line stages nothing. [`Materialization::stage`] also says when
    /// a `+ RULE.` line was already in the program.
    pub fn stage_command(&mut self, line: &str, dir: &Path) -> Result<bool, LiveError> {
        Ok(self.stage(line, dir)?.is_some())
    }

    /// [`Materialization::stage_command`], saying what was staged: `Ok(None)` if the
    /// line is not such a command.
    pub fn stage(&mut self, line: &str, dir: &Path) -> Result<Option<Staged>, LiveError> {
        let trimmed = line.trim();
        let (word, rest) = match trimmed.find(char::is_whitespace) {
            Some(i) => (&trimmed[..i], trimmed[i..].trim_start()),
            None => (trimmed, ""),
        };
        let start = line.len() - line.trim_start().len() + (trimmed.len() - rest.len());
        let located = |mut e: LiveError| {
            if let LiveError::Parse(d) = &mut e
                && d.line == 1
            {
                d.col += start;
            }
            e
        };
        match word {
            "+" | "-" => {
                if rest.is_empty() {
                    return Err(LiveError::Invalid(format!(
                        "expected a fact or a rule after `{word}`"
                    )));
                }
                let insert = word == "+";
                let r = match (is_rule(rest), insert) {
                    (true, true) => self.add_new_rules(rest).map(|added| {
                        if added.present.is_empty() {
                            Staged::Change
                        } else {
                            Staged::RulesPresent(added.present)
                        }
                    }),
                    (true, false) => self.remove_rules(rest).map(|_| Staged::Change),
                    (false, true) => self.insert_fact(rest).map(|_| Staged::Change),
                    (false, false) => self.remove_fact(rest).map(|_| Staged::Change),
                };
                return r.map(Some).map_err(located);
            }
            "load" | "unload" => {
                let (rel, file) = split2(rest)
                    .ok_or_else(|| LiveError::Invalid(format!("usage: {word} RELATION FILE")))?;
                let path = match &self.load_policy {
                    LoadPolicy::FactDir => resolve_load(&[dir], file),
                    LoadPolicy::Dirs(dirs) => {
                        resolve_load(&dirs.iter().map(|d| d.as_path()).collect::<Vec<_>>(), file)
                    }
                    LoadPolicy::Deny => resolve_load(&[], file),
                }?;
                self.stage_file_as(rel, &path, word == "load", Some(file))?;
            }
            _ => return Ok(None),
        }
        Ok(Some(Staged::Change))
    }

    /// Bound every commit after the first (which loads the inputs): see [`Limits`]. A
    /// commit over a limit is refused and rolled back. `Err` if the engine cannot
    /// enforce limits (the differential engine over several processes).
    pub fn set_limits(&mut self, limits: Limits) -> Result<(), LiveError> {
        self.engine
            .set_limits(limits)
            .map_err(|e| LiveError::Engine(e.to_string()))?;
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

    /// What the engine holds in memory, by part (`None` if the engine does not
    /// account for its memory; see [`dynalog_engines::Engine::memory`]).
    pub fn memory(&mut self) -> Option<dynalog_engines::MemoryUsage> {
        self.engine.memory()
    }

    /// The number of facts of every relation, together.
    pub fn total_facts(&self) -> u64 {
        self.engine.total_len()
    }

    /// Whether the first commit of this process (the inputs, or the state recovered
    /// from the data folder, into an empty engine) records its changes in
    /// [`Commit::changes`] (the default) or only counts them (`false`): they are the
    /// insertion of every fact, as many as the facts, and a front end that shows only
    /// the counts of a load (`session`) need not hold them.
    pub fn keep_first_changes(&mut self, keep: bool) {
        self.first_changes = keep;
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
        self.symbols.rollback(self.committed_symbols);
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
    pub fn commit(&mut self) -> Result<Commit, LiveError> {
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
            .map_err(|e| LiveError::Unsupported(e.to_string()))?;
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
                return Err(LiveError::Unlogged(e));
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
                self.stage_fact(*insert, *rel, tuple);
            }
            self.text = text;
        }
        drop(staged);
        // A first commit starts from an empty engine: its changes are the insertion of
        // every fact, which is what its counts need, and as many as the facts.
        let untracked = self.empty && !self.first_changes;
        if untracked {
            self.engine.track_changes(false);
        }
        let committed = self.engine.commit();
        if untracked {
            self.engine.track_changes(true);
        }
        if let Err(e) = committed {
            if logged && let Some(d) = &mut self.durable {
                d.undo_last();
            }
            if let Some(limit) = e.limit() {
                if let Some(text) = previous {
                    self.text = text;
                }
                self.symbols.rollback(self.committed_symbols);
                return Err(LiveError::Limit(limit));
            }
            return Err(LiveError::EngineFailed(e.to_string()));
        }
        self.committed_symbols = self.symbols.mark();
        let changes = self.engine.take_changes();
        let (inserted, deleted) = if untracked {
            let shown = self.shown_relations();
            let facts = (0..self.program().relations.len() as RelId)
                .filter(|&r| shown(r))
                .map(|r| self.engine.len(r))
                .sum();
            (facts, 0)
        } else {
            self.shown_counts(&changes)
        };
        self.empty = false;
        let number = self.commits;
        self.commits += 1;
        self.recovering = false;
        if logged && let Some(d) = &mut self.durable {
            d.maybe_snapshot();
        }
        Ok(Commit {
            number,
            changes,
            inserted,
            deleted,
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
                        Type::Record(_) => StoredValue::Symbol(t.render_quoted(v, &symbols.read())),
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
    fn check_program(&self, text: &str) -> Result<Program, LiveError> {
        let file = SourceFile::new(self.name.clone(), text.to_string());
        let located = |d: Diagnostic| {
            let what = d
                .snippet
                .as_ref()
                .map(|(line, _, _)| format!(" (in `{}`)", line.trim()))
                .unwrap_or_default();
            LiveError::Rules(format!("{}{what}", d.message))
        };
        let ast = dynalog_syntax::parse(&file).map_err(located)?;
        // The relations keep their ids (aggregates' internal relations included).
        let options = dynalog_analysis::Options {
            previous: self.engine.program().relations.clone(),
        };
        // The table is shared: a refused program's constants are forgotten again.
        let before = self.symbols.mark();
        let checked = dynalog_analysis::analyse_with(&file, &ast, self.symbols.clone(), &options)
            .map_err(located)
            .and_then(|next| {
                moves_no_inputs(self.engine.program(), &next)?;
                self.engine
                    .check_program(&next)
                    .map_err(|e| LiveError::Rules(e.to_string()))?;
                Ok(next)
            });
        if checked.is_err() {
            self.symbols.rollback(before);
        }
        checked
    }
}

/// Refuse a program change that would load a relation's input files into another
/// relation than before: the first or last subsumption rule of a relation with `.input`
/// moves its input facts between the relation and its candidates (`@r_sub_in`), and the
/// facts already loaded would stay behind.
fn moves_no_inputs(old: &Program, next: &Program) -> Result<(), LiveError> {
    let holders = |p: &Program| -> Vec<String> {
        let mut v: Vec<String> = p
            .relations
            .iter()
            .filter(|r| !r.inputs.is_empty())
            .map(|r| r.name.clone())
            .collect();
        v.sort();
        v
    };
    let (before, after) = (holders(old), holders(next));
    let moved = |from: &[String], to: &[String]| {
        from.iter()
            .find(|r| to.contains(&dynalog_analysis::ir::subsumption_candidates(r)))
            .cloned()
    };
    let relation = moved(&before, &after).or_else(|| moved(&after, &before));
    match relation {
        Some(r) => Err(LiveError::Rules(format!(
            "this change moves the input facts of `{r}` between `{r}` and the candidates of \
             its subsumption rules: adding its first or removing its last subsumption rule is \
             not supported in a session; restart with the changed program"
        ))),
        None => Ok(()),
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

/// The canonical form of a rule ([`dynalog_syntax::ast::Rule::canonical`]); `None` for
/// a fact or any other item.
fn rule_canonical(item: &Item) -> Option<String> {
    match item {
        Item::Rule(r) if !r.body.is_empty() => Some(r.canonical()),
        _ => None,
    }
}

/// The items of a program in order, grouped by written span: a rule with several heads
/// or disjuncts is several items with the span of the whole rule.
fn items_by_span(items: &[Item]) -> Vec<Vec<&Item>> {
    let mut groups: Vec<Vec<&Item>> = Vec::new();
    for item in items {
        match groups.last_mut() {
            Some(group) if group[0].span() == item.span() => group.push(item),
            _ => groups.push(vec![item]),
        }
    }
    groups
}

/// The text of one item of `text`: a rule is rebuilt from the written text of its head
/// and body literals (one rule of a written rule that stands for several), any other
/// item is its span.
fn item_text(text: &str, item: &Item) -> String {
    match item {
        Item::Rule(r) => r.text_of_parts(text),
        other => text[other.span().start as usize..other.span().end as usize].to_string(),
    }
}

/// `text` with each span replaced by its text (spans do not overlap). Lines are kept:
/// the newlines of a replaced span follow its replacement, so positions after it stay
/// on the same line numbers.
fn replace_spans(text: &str, mut replacements: Vec<(Span, String)>) -> String {
    replacements.sort_by_key(|(s, _)| s.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (span, with) in replacements {
        let (start, end) = (span.start as usize, span.end as usize);
        out.push_str(&text[at..start]);
        out.push_str(&with);
        out.extend(text[start..end].chars().filter(|&c| c == '\n'));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// `text` ending with a period (a fact or rule typed without one).
pub(crate) fn with_period(text: &str) -> String {
    let t = text.trim_end();
    if t.ends_with('.') || t.ends_with(']') || t.is_empty() {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// Parse and check a program text.
fn check_text(name: &str, text: &str) -> Result<Program, LiveError> {
    check_file(&SourceFile::new(name, text.to_string()))
}

/// Parse and check a program.
fn check_file(file: &SourceFile) -> Result<Program, LiveError> {
    let ast = dynalog_syntax::parse(file).map_err(LiveError::Program)?;
    dynalog_analysis::analyse(file, &ast).map_err(LiveError::Program)
}

impl Materialization {
    /// The committed program as a source file: the one it was created from (whose
    /// positions may be those of other files) while its text is unchanged.
    pub(crate) fn program_file(&self) -> SourceFile {
        if *self.source.text == *self.text {
            self.source.clone()
        } else {
            SourceFile::new(self.name.clone(), self.text.clone())
        }
    }
}

/// Join the cluster that process 0 leads with [`Materialization::lead`], as one of
/// its other processes, for the program `text` (the one process 0 started with).
/// Returns once every process is connected; [`Follower::wait`] then runs this
/// process's share of every transaction until process 0 stops.
pub fn follow(
    name: &str,
    text: &str,
    workers: usize,
    cluster: Cluster,
) -> Result<Follower, LiveError> {
    let program = check_text(name, text)?;
    Diff::follow(&program, workers.max(1), cluster).map_err(|e| LiveError::Engine(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynalog_engines::LimitExceeded;

    const TC: &str = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n\
                      .output path\npath(x, y) :- edge(x, y).\n\
                      path(x, z) :- path(x, y), edge(y, z).\n";

    pub(super) fn tc(engine: &str) -> Materialization {
        let mut m = Materialization::new("tc.dl", TC, engine, 1).expect("checks");
        for f in ["edge(1, 2)", "edge(2, 3)", "edge(3, 1)"] {
            m.insert_fact(f).expect("a fact");
        }
        m.commit().expect("commits");
        m
    }

    #[test]
    fn a_first_commit_can_count_its_changes_without_keeping_them() {
        // Symbols, so that the order users read (by text) is not the order of the ids.
        let text = ".decl e(x: symbol, y: symbol)\n.decl p(x: symbol, y: symbol)\n\
                    .decl q(x: symbol)\n.output p\np(x, y) :- e(x, y).\n\
                    p(x, z) :- p(x, y), e(y, z).\nq(x) :- e(x, _).\n";
        for engine in dynalog_engines::ENGINE_NAMES {
            for keep in [true, false] {
                let mut m = Materialization::new("t.dl", text, engine, 1).expect("checks");
                m.keep_first_changes(keep);
                for f in [r#"e("z", "b")"#, r#"e("b", "a")"#] {
                    m.insert_fact(f).expect("a fact");
                }
                let first = m.commit().expect("commits");
                let at = format!("{engine}, keep {keep}");
                let shown = |m: &Materialization, c: &Commit| {
                    m.render_changes(&m.shown_changes(&c.changes)).join(" ")
                };
                // Only the output `p` is counted: 3 paths.
                assert_eq!((first.inserted, first.deleted), (3, 0), "{at}");
                if keep {
                    assert_eq!(first.changes.len(), 3 + 2 + 2, "every relation's: {at}");
                    let all = r#"+ p("b", "a"). + p("z", "a"). + p("z", "b")."#;
                    assert_eq!(shown(&m, &first), all, "{at}");
                } else {
                    assert!(first.changes.is_empty(), "{at}");
                }
                // The state as a first commit shows it, from the engine: the same list
                // as the kept changes, within a size that holds it, and none below.
                let state = m.shown_state(usize::MAX).expect("fits");
                let all = r#"+ p("b", "a"). + p("z", "a"). + p("z", "b")."#;
                assert_eq!(m.render_changes(&state.to_vec()).join(" "), all, "{at}");
                let exact = dynalog_engines::ChangeList::packed_bytes(3, 6);
                assert!(m.shown_state(exact).is_some(), "{at}");
                assert!(m.shown_state(exact - 1).is_none(), "{at}");
                // The next commits record theirs either way.
                m.remove_fact(r#"e("b", "a")"#).expect("a fact");
                m.insert_fact(r#"e("a", "c")"#).expect("a fact");
                let next = m.commit().expect("commits");
                assert_eq!((next.inserted, next.deleted), (1, 2), "{at}");
                let changed = r#"+ p("a", "c"). - p("b", "a"). - p("z", "a")."#;
                assert_eq!(shown(&m, &next), changed, "{at}");
            }
        }
    }

    #[test]
    fn syntax_errors_are_positioned_in_the_given_text() {
        let mut m = tc("seminaive");
        let e = m
            .add_rules("path(x, y) :- edge(x y).")
            .expect_err("bad syntax");
        assert_eq!(e.position(), Some((1, 22)), "{e}");
        let e = m.insert_fact("edge(1, \"a\")").expect_err("bad type");
        assert_eq!(e.position(), Some((1, 9)), "{e}");
        assert!(!m.has_staged(), "a refused line stages nothing");
    }

    #[test]
    fn removing_a_rule_that_is_not_there_stages_nothing() {
        let mut m = tc("seminaive");
        let e = m
            .remove_rules("path(x, y) :- edge(x, y). path(x, y) :- edge(y, x).")
            .expect_err("second rule is not in the program");
        assert_eq!(e.message(), "no such rule in the program");
        assert!(!m.has_staged());
    }

    #[test]
    fn an_eqrel_relation_keeps_its_closure_rules_out_of_the_users() {
        let text = ".decl e(x: number, y: number)\n.decl same(x: number, y: number) eqrel\n\
                    .output same\nsame(x, y) :- e(x, y).\n";
        for engine in dynalog_engines::ENGINE_NAMES {
            let mut m = Materialization::new("eq.dl", text, engine, 1).expect("checks");
            for f in ["e(1, 2)", "e(2, 3)", "e(7, 8)"] {
                m.insert_fact(f).expect("a fact");
            }
            m.commit().expect("commits");
            assert_eq!(m.len("same"), Some(9 + 4), "{engine}");
            // Only the written rule is the program's.
            assert_eq!(m.rules(), ["same(x, y) :- e(x, y)."], "{engine}");
            let e = m
                .remove_rules("same(y, x) :- same(x, y).")
                .expect_err("not the user's");
            assert_eq!(e.message(), "no such rule in the program");
            // The user's rules come and go; the closure stays.
            m.add_rules("same(x, y) :- e(x, z), y = z + 10.")
                .expect("parses");
            m.commit().expect("commits");
            assert_eq!(m.rules().len(), 2, "{engine}");
            assert_eq!(m.len("same"), Some(25 + 9), "{engine}");
            assert!(m.contains_fact("same(13, 1)").expect("a fact"), "{engine}");
            assert_eq!(m.remove_rules("same(x, y) :- e(x, y).").ok(), Some(1));
            m.commit().expect("commits");
            assert_eq!(
                m.rules(),
                ["same(x, y) :- e(x, z), y = z + 10."],
                "{engine}"
            );
            // e(1, 12), e(2, 13), e(7, 18): three classes of two.
            assert_eq!(m.len("same"), Some(3 * 4), "{engine}");
            m.remove_fact("e(2, 3)").expect("a fact");
            m.commit().expect("commits");
            assert_eq!(m.len("same"), Some(2 * 4), "{engine}");
        }
    }

    #[test]
    fn rules_are_a_set() {
        for engine in dynalog_engines::ENGINE_NAMES {
            let mut m = tc(engine);
            let before = m.rules();
            // Already in the program, whatever the variable names and layout: no-op.
            let added = m
                .add_new_rules("path(a,c) :- path(a, b), edge(b, c).")
                .expect("parses");
            assert_eq!(added.staged, 0);
            assert_eq!(added.present, ["path(a,c) :- path(a, b), edge(b, c)."]);
            assert!(!m.has_staged(), "nothing staged");
            // A new rule given twice (and an old one) is added once.
            let added = m
                .add_new_rules(
                    "path(x, x) :- edge(x, _). path(y, y) :- edge(y, _). \
                     path(x, y) :- edge(x, y).",
                )
                .expect("parses");
            assert_eq!(added.staged, 1, "{engine}");
            assert_eq!(added.present.len(), 2);
            // Staged in this transaction counts as present too.
            assert_eq!(m.add_rules("path(z, z) :- edge(z, _).").ok(), Some(0));
            m.commit().expect("commits");
            assert_eq!(m.rules().len(), before.len() + 1, "{engine}");
            // Removing it once removes it.
            assert_eq!(m.remove_rules("path(u, u) :- edge(u, _).").ok(), Some(1));
            m.commit().expect("commits");
            assert_eq!(m.rules(), before, "{engine}");
            assert!(m.remove_rules("path(u, u) :- edge(u, _).").is_err());
            // The same rule twice in one removal is removed once.
            assert_eq!(
                m.remove_rules("path(a, b) :- edge(a, b). path(c, d) :- edge(c, d).")
                    .ok(),
                Some(1)
            );
            m.abort();
        }
    }

    #[test]
    fn a_program_with_components_loads_and_its_top_level_rules_change() {
        let text = "\
.decl edge(x: number, y: number)
.comp Closure {
    .decl start(x: number)
    .decl reach(x: number)
    reach(x) :- start(x).
    reach(y) :- reach(x), edge(x, y).
    .output reach
}
.init a = Closure
.init b = Closure
a.start(1).
b.start(3).
.decl both(x: number)
both(x) :- a.reach(x), b.reach(x).
";
        for engine in dynalog_engines::ENGINE_NAMES {
            let mut m = Materialization::new("c.dl", text, engine, 1).expect("checks");
            for f in ["edge(1, 2)", "edge(2, 3)", "edge(3, 4)"] {
                m.insert_fact(f).expect("a fact");
            }
            m.commit().expect("commits");
            assert_eq!(m.len("a.reach"), Some(4), "{engine}");
            assert_eq!(m.len("b.reach"), Some(2), "{engine}");
            assert_eq!(m.len("both"), Some(2), "{engine}");
            // An instance's rules are listed with their qualified names.
            let rules = m.rules();
            assert!(
                rules
                    .iter()
                    .any(|r| r == "b.reach(y) :- b.reach(x), edge(x, y)."),
                "{rules:?}"
            );
            // Facts of instances' relations, and top-level rules over them.
            m.insert_fact("b.start(1)").expect("a fact");
            m.add_rules("both(x) :- a.start(x).").expect("parses");
            m.commit().expect("commits");
            assert_eq!(m.len("both"), Some(4), "{engine}");
            assert_eq!(
                m.remove_rules("both(x) :- a.reach(x), b.reach(x).").ok(),
                Some(1)
            );
            m.commit().expect("commits");
            assert_eq!(m.len("both"), Some(1), "{engine}");
            // An instance's rule is the component's text: not removable by itself.
            let e = m
                .remove_rules("a.reach(x) :- a.start(x).")
                .expect_err("inside a component");
            assert!(e.message().contains("inside components"), "{e}");
            let e = m
                .add_rules(".comp C { .decl r(x: number) }\nboth(9).")
                .expect_err("no components");
            assert!(e.message().contains("components"), "{e}");
            assert!(!m.has_staged());
            // The program text still has its components and parses after the changes.
            m.add_rules("both(x) :- b.start(x).").expect("parses");
            m.commit().expect("commits");
            assert_eq!(m.len("both"), Some(2), "{engine}");
        }
    }

    #[test]
    fn a_rule_written_twice_in_the_program_file_goes_with_one_removal() {
        let text = format!("{TC}path(x, y) :- edge(x, y).\n");
        let mut m = Materialization::new("tc.dl", &text, "seminaive", 1).expect("checks");
        m.commit().expect("commits");
        assert_eq!(m.rules().len(), 3);
        assert_eq!(m.remove_rules("path(a, b) :- edge(a, b).").ok(), Some(2));
        m.commit().expect("commits");
        assert_eq!(m.rules().len(), 1);
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
            assert_eq!(e.limit(), Some(LimitExceeded::Changes(5)), "{engine}: {e}");
            assert!(e.message().contains("--max-changes 5"), "{e}");
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
            assert!(e.message().contains("not grounded"), "{e}");
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
}
