//! `dynalog rdf materialize DATA.nt[.gz] --rules rhodf|owl2rl|FILE.dl [-o OUT.nt] [--all]
//! [--stats] [--base IRI] [--lenient] [--engine NAME] [-w N]`
//!
//! Loads an N-Triples or Turtle file with the mapping the rule program declares
//! (`dynalog_io::rdf`), materializes, and prints the inferred triples (or, with `--all`,
//! every triple of the materialization) as sorted N-Triples. The built-in programs
//! `rhodf` (triples into `T`) and `owl2rl` (the univ-bench vocabulary mapping) live in
//! `programs/` and are embedded in the binary (`dynalog_io::rdf::{RHODF, OWL2RL}`). A
//! `FILE.dl` reads the data through its `IO="rdf"` input directives (their `filename`
//! is ignored: the data is `DATA`), or, if it has none, as triples into its relation
//! `T`; only the relations those directives feed are written back as triples.
//!
//! This module is the command (its flags, progress and output); which relation a triple
//! goes to and which triple a fact stands for are `dynalog_io::rdf`'s (`mapping`:
//! `TripleShapes`), and so is the N-Triples writer (`NTriplesWriter`).

use crate::progress::Spinner;
use clap::{Args, Subcommand};
use dynalog_analysis::Value;
use dynalog_io::rdf::{self, NTriplesWriter, RdfOptions, TripleShapes};
use dynalog_syntax::SourceFile;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct RdfArgs {
    #[command(subcommand)]
    pub command: RdfCommand,
}

#[derive(Subcommand, Debug)]
pub enum RdfCommand {
    /// Materialize an RDF graph under RhoDF, OWL 2 RL (LUBM) or your own rules.
    Materialize(MaterializeArgs),
}

#[derive(Args, Debug)]
pub struct MaterializeArgs {
    /// The data: N-Triples (.nt) or Turtle (.ttl), optionally gzipped (.gz).
    pub data: PathBuf,
    /// `rhodf`, `owl2rl` (LUBM's univ-bench vocabulary) or a Datalog file.
    #[arg(long)]
    pub rules: String,
    /// Write the triples to this file instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Print every triple of the materialization, not only the inferred ones.
    #[arg(long)]
    pub all: bool,
    /// Print load and evaluation figures and the triples per predicate to stderr.
    #[arg(long)]
    pub stats: bool,
    /// Base IRI for relative IRIs such as `<>` (default: the data file's file:// URI).
    #[arg(long)]
    pub base: Option<String>,
    /// Skip malformed lines (counted on stderr) instead of failing.
    #[arg(long)]
    pub lenient: bool,
    /// Evaluation engine; the default is the fastest and smallest for one evaluation
    /// (`session` and `serve`, where changes follow, default to `diff`).
    #[arg(long, default_value = "seminaive", value_parser = clap::builder::PossibleValuesParser::new(dynalog_engines::ENGINE_NAMES))]
    pub engine: String,
    /// Worker threads (used by engines that run in parallel).
    #[arg(short = 'w', long = "workers", default_value_t = 1)]
    pub workers: usize,
}

pub fn run(args: RdfArgs) -> Result<(), String> {
    match args.command {
        RdfCommand::Materialize(m) => materialize(m),
    }
}

/// The text and display name of `--rules`.
fn rules_source(rules: &str) -> Result<SourceFile, String> {
    Ok(match rules {
        "rhodf" => SourceFile::new("<built-in rhodf.dl>", rdf::RHODF),
        "owl2rl" => SourceFile::new("<built-in owl2rl.dl>", rdf::OWL2RL),
        path => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                format!(
                    "error: cannot read the rules `{path}`: {e} (built-in programs: rhodf, owl2rl)"
                )
            })?;
            // A rules file is preprocessed as a program file (`#include` next to it).
            let options = dynalog_syntax::preprocess::Options::default();
            dynalog_syntax::preprocess::preprocess(path, &text, &options)
                .map_err(|d| d.to_string())?
        }
    })
}

fn materialize(args: MaterializeArgs) -> Result<(), String> {
    if args.workers == 0 {
        return Err("error: --workers must be at least 1".into());
    }
    let started = Instant::now();
    let source = rules_source(&args.rules)?;
    let ast = dynalog_syntax::parse(&source).map_err(|d| d.to_string())?;
    let mut program = dynalog_analysis::analyse(&source, &ast).map_err(|d| d.to_string())?;
    crate::run::print_warnings(&program);

    let options = RdfOptions {
        base: args.base.clone(),
        lenient: args.lenient,
        format: None,
        file_id: 0,
    };
    let load_started = Instant::now();
    let (targets, load) = {
        let _spinner = Spinner::start("loading RDF");
        rdf::load_rdf_for_program(&mut program, &source, &args.data, &options)
            .map_err(|d| d.to_string())?
    };
    let load_time = load_started.elapsed();
    for note in load.notes(&args.data.display().to_string()) {
        eprintln!("{note}");
    }

    // The triple of each fact of a target relation. A class or property symbol not yet
    // in the table is interned now, before the program moves into the engine.
    let shapes = TripleShapes::new(&mut program, &targets, &load.namespaces);
    for &rel in &shapes.unnamed {
        eprintln!(
            "warning: `{}` has no namespace= and no facts in the data: its facts cannot be named as triples and are not written",
            program.relation(rel).name
        );
    }

    let input_facts = load.facts();

    let config = dynalog_engines::Config::new(&args.engine, args.workers);
    let rss_before = if args.stats {
        crate::run::rss_bytes()
    } else {
        None
    };
    let mut engine = dynalog_engines::create(&config, program).map_err(|e| e.to_string())?;
    for (rel, tuples) in &load.batches {
        for t in tuples.iter() {
            engine.insert(*rel, t);
        }
    }
    let batches_read = load.read.triples;
    let unmapped = load.unmapped;
    drop(load);
    let stats = {
        let _spinner = Spinner::evaluating(engine.as_ref(), "materializing");
        engine.commit().map_err(|e| format!("error: {e}"))?
    };
    let memory = if args.stats {
        crate::run::memory_report(engine.as_mut(), rss_before)
    } else {
        None
    };

    let write_started = Instant::now();
    // An input triple is a base fact of the engine, in every relation that stands for
    // it (the engine keeps its base facts: no set of the input triples is kept beside
    // them through the evaluation). Two relations can name the same triple: the sort
    // brings such copies together, and they are written once. (A vector sorted and
    // deduplicated holds a triple in 12 bytes, where a hash set of the triples, then
    // its copy to sort, took about three times that.)
    let mut triples: Vec<[Value; 3]> = Vec::new();
    for (rel, shape) in &shapes.shapes {
        engine.for_each_fact(*rel, &mut |t| {
            let triple = shapes.triple(*shape, t);
            if args.all
                || !(engine.is_base(*rel, t)
                    || shapes.any_fact_of(triple, |r, f| r != *rel && engine.is_base(r, f)))
            {
                triples.push(triple);
            }
        });
    }
    // Each symbol is checked and rendered once.
    let mut writer = NTriplesWriter::new(&engine.program().symbols);
    sort_as_lines(&mut triples, &mut writer);
    triples.dedup();
    let writer = &writer;
    let mut unwritable = 0usize;
    let mut first_unwritable = None;
    // Triples written per predicate.
    let mut written: BTreeMap<Value, usize> = BTreeMap::new();
    // The lines are made by parts on every core (the writer only reads its terms).
    let mut write = |out: &mut dyn Write| -> std::io::Result<()> {
        let parts = dynalog_io::write_in_parts(
            out,
            &triples,
            LINES_PER_PART,
            dynalog_io::output_threads(),
            |part: &[[Value; 3]], buffer: &mut Vec<u8>, stats: &mut PartStats| {
                let symbols = writer.symbols().read();
                for &triple in part {
                    match writer.line_pieces(triple, &symbols) {
                        Ok(pieces) => {
                            for piece in pieces {
                                buffer.extend_from_slice(piece.as_bytes());
                            }
                            buffer.push(b'\n');
                            *stats.written.entry(triple[1]).or_default() += 1;
                        }
                        Err(e) => {
                            stats.unwritable += 1;
                            stats.first_unwritable.get_or_insert(e);
                        }
                    }
                }
            },
        )?;
        for part in parts {
            unwritable += part.unwritable;
            if first_unwritable.is_none() {
                first_unwritable = part.first_unwritable;
            }
            for (pred, n) in part.written {
                *written.entry(pred).or_default() += n;
            }
        }
        out.flush()
    };
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| format!("error: cannot write `{}`: {e}", path.display()))?;
            write(&mut std::io::BufWriter::new(file))
                .map_err(|e| format!("error: cannot write `{}`: {e}", path.display()))?;
        }
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            if let Err(e) = write(&mut out)
                && e.kind() != std::io::ErrorKind::BrokenPipe
            {
                return Err(format!("error: {e}"));
            }
        }
    }
    if unwritable > 0 {
        eprintln!(
            "warning: {unwritable} fact(s) are not RDF triples and were not written; the first: {}",
            first_unwritable.map(|e| e.to_string()).unwrap_or_default()
        );
    }
    let write_time = write_started.elapsed();

    if args.stats {
        let p = engine.program();
        eprintln!("engine: {} ({} worker(s))", engine.name(), args.workers);
        eprintln!(
            "load: {:.3} s, {batches_read} triples read, {input_facts} facts (duplicates included)",
            load_time.as_secs_f64()
        );
        if unmapped > 0 {
            eprintln!("not mapped (outside the namespaces read): {unmapped} triples");
        }
        eprintln!("evaluation: {:.3} s", stats.elapsed.as_secs_f64());
        let facts = engine.total_len();
        eprintln!("facts in the materialization: {facts}");
        eprintln!("output: {:.3} s", write_time.as_secs_f64());
        eprintln!(
            "{} triples written ({}):",
            written.values().sum::<usize>(),
            if args.all { "all" } else { "inferred" }
        );
        let mut per_predicate: BTreeMap<String, usize> = BTreeMap::new();
        for (pred, n) in written {
            *per_predicate.entry(p.symbols.resolve(pred)).or_default() += n;
        }
        for (pred, n) in per_predicate {
            eprintln!("  {n}\t{pred}");
        }
        eprintln!("total: {:.3} s", started.elapsed().as_secs_f64());
        if let Some(memory) = &memory {
            eprint!("{memory}");
        }
        if let Some(peak) = crate::run::peak_rss_bytes() {
            eprintln!("peak memory: {:.1} MB", peak as f64 / 1e6);
        }
    }
    Ok(())
}

/// The lines of a part of the output, made on one thread (about 8 MB of LUBM's).
const LINES_PER_PART: usize = 1 << 16;

/// What a part of the output wrote: triples per predicate, and the triples that are no
/// N-Triples line.
#[derive(Default)]
struct PartStats {
    written: rustc_hash::FxHashMap<Value, usize>,
    unwritable: usize,
    first_unwritable: Option<rdf::TermError>,
}

/// Sort triples in the order of their N-Triples lines, without making the lines: by the
/// ranks of the rendered terms of subject, predicate and object (symbols that render
/// alike share a rank). A line is `s p o .`, so two lines compare as their subjects'
/// terms do, unless one term is a prefix of the other: then the separator, a space, is
/// compared with a character of the longer term, which in N-Triples is above a space
/// (control characters are escaped; a literal's spaces are inside its quotes, after
/// which no shorter term can end), so the shorter term's line comes first, as its rank
/// does. `follows_lines` checks that on the terms at hand; if it fails, the lines are
/// sorted as text. (Sorting the lines themselves compared long common IRI prefixes over
/// and over: on LUBM(50), 2.4M inferred triples, half of the writing time.) Triples
/// that sort alike (their terms render alike, or not at all) are then ordered by value,
/// so that copies of a triple end up next to each other.
fn sort_as_lines(triples: &mut [[Value; 3]], writer: &mut NTriplesWriter<'_>) {
    // The symbols in use, marked in a table by id (one pass; collecting and sorting
    // every value took a second on LUBM(50)'s 27M).
    let mut seen = vec![false; writer.symbols().len()];
    for &v in triples.iter().flatten() {
        if let Some(s) = seen.get_mut(v as usize) {
            *s = true;
        } else {
            seen.resize(v as usize + 1, false);
            seen[v as usize] = true;
        }
    }
    let mut used: Vec<Value> = (0..seen.len() as Value)
        .filter(|&v| seen[v as usize])
        .collect();
    drop(seen);
    writer.render_all(&used, dynalog_io::output_threads());
    let writer = &*writer;
    // Unrenderable symbols (their triples are not written) rank first, as "".
    let text = |v: Value| writer.rendered(v).unwrap_or("");
    dynalog_analysis::sort_on_threads_by(&mut used, dynalog_io::output_threads(), &|&a, &b| {
        text(a).cmp(text(b))
    });
    let texts: Vec<&str> = used.iter().map(|&v| text(v)).collect();
    if !follows_lines(&texts) {
        triples.sort_by_cached_key(|&t| {
            (format!("{} {} {} .", text(t[0]), text(t[1]), text(t[2])), t)
        });
        return;
    }
    // Indexed by symbol: the sort looks ranks up in every comparison.
    let mut rank = vec![0u32; used.iter().max().map_or(0, |&v| v as usize + 1)];
    let mut r = 0u32;
    let mut ties = false;
    for (i, &v) in used.iter().enumerate() {
        if i > 0 {
            if texts[i] != texts[i - 1] {
                r += 1;
            } else {
                ties = true;
            }
        }
        rank[v as usize] = r;
    }
    if ties {
        triples.sort_unstable_by_key(|t| (t.map(|v| rank[v as usize]), *t));
        return;
    }
    // Every symbol has a rank of its own (the usual case): the triples are sorted as
    // ranks, on every core, and turned back into symbols.
    let flat = triples.as_flattened_mut();
    for v in flat.iter_mut() {
        *v = rank[*v as usize];
    }
    dynalog_analysis::sort_rows_on(flat, 3, dynalog_io::output_threads());
    for v in flat.iter_mut() {
        *v = used[*v as usize];
    }
}

/// Whether, in `sorted` terms, no term is followed by one that extends it with a
/// character at or below the space. It is enough to look at neighbours: the terms
/// between a term and an extension of it all extend it, with a character at that
/// position no greater than the extension's.
fn follows_lines(sorted: &[&str]) -> bool {
    sorted
        .windows(2)
        .all(|w| match w[1].as_bytes().strip_prefix(w[0].as_bytes()) {
            Some([next, ..]) => *next > b' ',
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynalog_analysis::SymbolTable;

    #[test]
    fn triples_sort_as_their_lines() {
        let symbols = SymbolTable::new();
        let names = [
            "http://x.org/a",
            "http://x.org/a1",
            "http://x.org/a/b",
            "http://x.org/p",
            "rdf:type",
            "http://www.w3.org/1999/02/22-rdf-syntax-ns#type",
            "_:b",
            "_:b1",
            "_:b10",
            "\"a\"",
            "\"a\"@en",
            "\"a\"^^<http://x.org/t>",
            "\"a b\"",
            "\"a\\tb\"",
            "\"\"",
            "hello",
        ];
        let ids: Vec<Value> = names.iter().map(|n| symbols.intern(n)).collect();
        let mut triples = Vec::new();
        for &s in &ids {
            for &p in &ids {
                for &o in &ids {
                    triples.push([s, p, o]);
                }
            }
        }
        // Not in id order to begin with.
        triples.reverse();
        let mut writer = NTriplesWriter::new(&symbols);
        sort_as_lines(&mut triples, &mut writer);
        let lines: Vec<String> = triples
            .iter()
            .filter_map(|&t| writer.line(t).ok())
            .collect();
        let mut sorted = lines.clone();
        sorted.sort();
        assert!(lines.len() > 500, "{} lines", lines.len());
        assert_eq!(lines, sorted);
    }

    #[test]
    fn a_term_extended_below_the_space_sorts_the_lines_as_text() {
        assert!(follows_lines(&["<a>", "<b>"]));
        assert!(follows_lines(&["_:b1", "_:b10", "_:b2"]));
        assert!(follows_lines(&["\"a\"", "\"a\"@en"]));
        assert!(!follows_lines(&["ab", "ab c"]));
        assert!(!follows_lines(&["ab", "ab\tc", "abd"]));
        assert!(follows_lines(&[]));
    }
}
