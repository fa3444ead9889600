//! Reading fact files into a transaction: the program's `.input` files, files named by
//! the embedding program, and the files of `load`/`unload` commands, which come from
//! clients that may not be trusted ([`LoadPolicy`], [`resolve_load`]).

use super::Materialization;
use crate::error::LiveError;
use dynalog_analysis::RelId;
use dynalog_syntax::Diagnostic;
use std::path::Path;

/// `REL FILE` split at the first whitespace.
pub(super) fn split2(rest: &str) -> Option<(&str, &str)> {
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
pub fn resolve_load(roots: &[&Path], file: &str) -> Result<std::path::PathBuf, LiveError> {
    use std::path::Component;
    if roots.is_empty() {
        return Err(LiveError::LoadRefused(
            "loading files is disabled on this server (start it with `--allow-load DIR`)".into(),
        ));
    }
    let p = Path::new(file);
    if file.contains('\0') {
        return Err(LiveError::LoadRefused(
            "a file name cannot contain a NUL character".into(),
        ));
    }
    if p.is_absolute() || p.has_root() {
        return Err(LiveError::LoadRefused(format!(
            "cannot load `{file}`: absolute paths are not allowed; name a file relative to the load directory"
        )));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(LiveError::LoadRefused(format!(
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
                return Err(LiveError::LoadRefused(format!(
                    "cannot load `{file}`: not a regular file"
                )));
            }
            Err(_) => continue,
        }
    }
    Err(LiveError::LoadRefused(format!(
        "cannot load `{file}`: no such file under the load director{}",
        if roots.len() == 1 { "y" } else { "ies" }
    )))
}

/// An error of a file read by `load`/`unload`, without the file's contents: the file
/// as the command named it, the line and column, and the reason with any quoted value
/// left out (errors go back to clients, and a file's text is not theirs to see).
fn redacted(name: &str, d: &Diagnostic, is_name: impl Fn(&str) -> bool) -> LiveError {
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
        0 => LiveError::Input(format!("`{name}`: {reason}")),
        _ => LiveError::Input(format!("{name}:{}:{}: {reason}", d.line, d.col)),
    }
}

impl Materialization {
    /// Read the program's `.input` files from `fact_dir` and stage their facts for
    /// insertion. Nothing is staged if a file is missing or has a bad line (the error
    /// names the file, line and column). Returns the number of facts read.
    pub fn stage_inputs(&mut self, fact_dir: &Path) -> Result<usize, LiveError> {
        let file = self.program_file();
        let mut program = self.program().clone();
        program.symbols = std::mem::take(&mut self.symbols);
        let loaded = dynalog_io::read_inputs(&mut program, &file, fact_dir);
        self.symbols = std::mem::take(&mut program.symbols);
        let loaded = loaded.map_err(|d| LiveError::Input(d.to_string()))?;
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
    ) -> Result<usize, LiveError> {
        self.stage_file_as(relation, path, insert, None)
    }

    /// [`Materialization::stage_file`]; with `shown`, errors name the file as `shown`
    /// and never quote its contents (see [`redacted`]).
    pub(super) fn stage_file_as(
        &mut self,
        relation: &str,
        path: &Path,
        insert: bool,
        shown: Option<&str>,
    ) -> Result<usize, LiveError> {
        let before = self.symbols.mark();
        let read = self.read_file(relation, path, insert, shown);
        if read.is_err() {
            self.symbols.rollback(before);
        }
        read
    }

    fn read_file(
        &mut self,
        relation: &str,
        path: &Path,
        insert: bool,
        shown: Option<&str>,
    ) -> Result<usize, LiveError> {
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
            None if d.line == 0 => LiveError::Input(d.message),
            None => LiveError::Input(format!("{}:{}:{}: {}", d.file, d.line, d.col, d.message)),
        };
        if dynalog_io::rdf::RdfFormat::from_path(path).is_some() {
            let batches = self.read_rdf(rel, path).map_err(located)?;
            let mut n = 0;
            for (r, tuples) in batches {
                for t in tuples.iter() {
                    self.stage_fact(insert, r, t);
                    n += 1;
                }
            }
            return Ok(n);
        }
        let relation = self.program().relation(rel).clone();
        let tuples =
            dynalog_io::read_relation_file(path, &relation, &mut self.symbols).map_err(located)?;
        for t in tuples.iter() {
            self.stage_fact(insert, rel, t);
        }
        Ok(tuples.len())
    }

    /// Read an RDF file for `rel` (see [`Materialization::stage_file`]).
    fn read_rdf(
        &mut self,
        rel: RelId,
        path: &Path,
    ) -> Result<Vec<(RelId, dynalog_io::Tuples)>, Diagnostic> {
        let file = self.program_file();
        let targets = dynalog_io::rdf::targets_for_relation(self.program(), &file, rel, path)?;
        // The same file gets the same blank-node names each time, so it can be unloaded.
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let next = self.rdf_files.len() as u32;
        let file_id = *self.rdf_files.entry(key).or_insert(next);
        let options = dynalog_io::rdf::RdfOptions {
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
}
#[cfg(test)]
mod tests {
    use super::super::tests::tc;
    use super::*;

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

        let refused = |name: &str| resolve_load(&roots, name).expect_err(name).message();
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
        assert!(!e.message().contains("hunter2"), "{e}");
        assert!(
            e.message().starts_with("bad.facts:2:1: column 1 of `edge`"),
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
        assert!(e.message().contains("disabled"), "{e}");
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
}
