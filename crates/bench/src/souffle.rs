//! The Soufflé column: a rematerializing system, so E+ is a full evaluation of E ∪ E+
//! and E- a full evaluation of E. Its inputs are converted automatically: the program
//! reads plain fact files, and every relation's size is printed (`.printsize`), so no
//! relation is optimised away and the sizes can be compared.

use crate::Error;
use crate::workload::{self, Workload};
use dynalog_analysis::{Program, RelId, Type, Value};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The `souffle` executable on `PATH`, if any.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("souffle"))
        .find(|p| p.is_file())
}

/// The program for Soufflé: every `.input` reads `NAME.facts` from `-F`, no outputs,
/// and `.printsize` for every relation.
pub fn program_text(text: &str, program: &Program) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(".input") {
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push_str(&format!(".input {name}\n"));
        } else if t.starts_with(".output") || t.starts_with(".printsize") {
            continue;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    for r in program.relations.iter().filter(|r| !r.is_internal()) {
        out.push_str(&format!(".printsize {}\n", r.name));
    }
    out
}

/// Write `NAME.facts` (tab-separated) for every input relation of `program`.
pub fn write_facts<'a>(
    dir: &Path,
    program: &Program,
    facts: impl Iterator<Item = (RelId, &'a [Value])>,
) -> Result<(), Error> {
    let io = |e: std::io::Error| {
        Error::io(
            format!("cannot write Soufflé inputs in `{}`", dir.display()),
            e,
        )
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut files: Vec<Option<BufWriter<std::fs::File>>> = Vec::new();
    for r in &program.relations {
        files.push(if r.inputs.is_empty() {
            None
        } else {
            let f = std::fs::File::create(dir.join(format!("{}.facts", r.name))).map_err(io)?;
            Some(BufWriter::new(f))
        });
    }
    for (r, t) in facts {
        let rel = program.relation(r);
        let Some(Some(out)) = files.get_mut(r as usize) else {
            continue;
        };
        let mut cols = Vec::with_capacity(t.len());
        for (v, ty) in t.iter().zip(&rel.types) {
            let s = ty.render(*v, &program.symbols);
            if *ty == Type::Symbol && s.contains(['\t', '\n', '\r']) {
                return Err(Error::SouffleInput {
                    relation: rel.name.clone(),
                    symbol: s,
                });
            }
            cols.push(s);
        }
        writeln!(out, "{}", cols.join("\t")).map_err(io)?;
    }
    for f in files.iter_mut().flatten() {
        f.flush().map_err(io)?;
    }
    Ok(())
}

/// The converted inputs of one split: the program and the fact folders of E
/// (`head`) and of E ∪ E+ (`all`).
pub struct Inputs {
    pub program: PathBuf,
    pub head: PathBuf,
    pub all: PathBuf,
}

/// Convert the split keeping `keep`% for Soufflé (once: it is cached).
pub fn prepare(cache: &Path, workload: Workload, keep: u32) -> Result<Inputs, Error> {
    let dir =
        workload::split_dir(cache, workload.data, keep).join(format!("souffle-{}", workload.name));
    let inputs = Inputs {
        program: dir.join("program.dl"),
        head: dir.join("head"),
        all: dir.join("all"),
    };
    if inputs.program.exists() {
        return Ok(inputs);
    }
    workload::ensure_split(cache, workload.data, keep)?;
    let loaded = workload::load(cache, workload, keep)?;
    write_facts(&inputs.head, &loaded.program, loaded.head.iter())?;
    write_facts(
        &inputs.all,
        &loaded.program,
        loaded
            .head
            .iter()
            .chain(loaded.tail.iter().map(|(r, t)| (*r, &t[..]))),
    )?;
    let text = program_text(workload.rules.text(), &loaded.program);
    std::fs::write(&inputs.program, text)
        .map_err(|e| Error::io(format!("cannot write `{}`", inputs.program.display()), e))?;
    Ok(inputs)
}

/// The facts counted by `.printsize` lines (`name<TAB>count`) in Soufflé's output.
pub fn printed_facts(stdout: &str) -> usize {
    stdout
        .lines()
        .filter_map(|l| l.rsplit_once('\t'))
        .filter_map(|(_, n)| n.trim().parse::<usize>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::STATS;
    use dynalog_engines::Engine;

    /// The converted program and facts give the same materialization as the
    /// workload loaded the bench's way (checked with the reference engine, since
    /// Soufflé itself may not be installed).
    fn converted_matches(name: &str) {
        let cache = tempfile::tempdir().unwrap();
        let w = workload::find(name).unwrap();
        let inputs = prepare(cache.path(), w, 90).unwrap();
        let text = std::fs::read_to_string(&inputs.program).unwrap();
        assert!(!text.contains("IO=\"rdf\""));
        let loaded = workload::load(cache.path(), w, 90).unwrap();
        for (dir, with_tail) in [(&inputs.head, false), (&inputs.all, true)] {
            let source = dynalog_syntax::SourceFile::new("program.dl", text.clone());
            let mut program = workload::analyse(&source).unwrap();
            let facts = dynalog_io::read_inputs(&mut program, &source, dir).unwrap();
            let mut converted = dynalog_engines::Seminaive::new(program);
            for l in &facts {
                for t in l.tuples.iter() {
                    converted.insert(l.relation, t);
                }
            }
            converted.commit().unwrap();
            let mut direct = dynalog_engines::Seminaive::new(loaded.program.clone());
            let update: &[_] = if with_tail { &loaded.tail } else { &[] };
            let update = update.iter().map(|(r, t)| (*r, &t[..]));
            for (r, t) in loaded.head.iter().chain(update) {
                direct.insert(r, t);
            }
            direct.commit().unwrap();
            let count = |e: &dyn Engine| -> usize {
                (0..e.program().relations.len())
                    .map(|r| e.len(r as RelId))
                    .sum()
            };
            assert!(count(&direct) > 0);
            assert_eq!(
                count(&converted),
                count(&direct),
                "{name} {}",
                dir.display()
            );
        }
    }

    #[test]
    fn tc_converts_for_souffle() {
        converted_matches("tc-tiny");
    }

    #[test]
    fn rhodf_converts_for_souffle() {
        converted_matches("rhodf-lubm1");
    }

    #[test]
    fn stats_converts_for_souffle_without_internal_relations() {
        converted_matches("stats-rand1k");
        let text = program_text(
            STATS,
            &workload::analyse(&dynalog_syntax::SourceFile::new("stats.dl", STATS)).unwrap(),
        );
        assert!(text.contains(".printsize reach\n") && !text.contains(".printsize @"));
    }

    #[test]
    fn strings_convert_for_souffle() {
        converted_matches("strings-rand1k");
    }

    #[test]
    fn paths_convert_for_souffle() {
        converted_matches("paths-rand1k");
    }

    #[test]
    fn trees_convert_for_souffle() {
        converted_matches("trees-rand1k");
    }

    #[test]
    fn printsize_lines_are_summed() {
        assert_eq!(printed_facts("tc\t12\nedge\t3\n"), 15);
        assert_eq!(printed_facts("noise\n"), 0);
    }
}
