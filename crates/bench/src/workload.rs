//! Workloads: a rule program and a generated data file, cached on disk and split in
//! file order into the part loaded first (E) and the update (E+ / E-).

use crate::Error;
use dynalog_analysis::{Program, RelId, Value};
use dynalog_io::rdf::{self, RdfOptions};
use dynalog_syntax::SourceFile;
use std::collections::hash_map::{Entry, HashMap};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The rule programs of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rules {
    /// Reachability over `edge` (`programs/tc.dl`), data as a fact file.
    Tc,
    /// RhoDF over `T(s, p, o)` (`programs/rhodf.dl`), data as N-Triples.
    Rhodf,
    /// OWL 2 RL for univ-bench (`programs/owl2rl.dl`), data as N-Triples.
    Owl2rl,
    /// Aggregate-heavy statistics over `edge` (`programs/stats.dl`): degrees, reach
    /// counts, maxima and sums per node over the transitive closure.
    Stats,
    /// String functors over `edge` (`programs/strings.dl`): names made with `cat` and
    /// `to_string`, reachability over them, read back with `strlen`, `substr`,
    /// `contains`, `match` and `to_number`.
    Strings,
    /// Shortest paths by subsumption over `edge` (`programs/paths.dl`): every pair's
    /// shortest distance, weights made from the edges' ends, and a count over them.
    Paths,
    /// Spanning trees by `choice-domain` in a recursive relation over `edge`
    /// (`programs/trees.dl`): a breadth-first tree from every node, and a count over
    /// them.
    Trees,
}

/// Reachability over `edge` (`programs/tc.dl`).
pub const TC: &str = include_str!("../../../programs/tc.dl");

/// Aggregates over `edge` and its transitive closure (`programs/stats.dl`).
pub const STATS: &str = include_str!("../../../programs/stats.dl");

/// String functors over `edge` and reachability over the names they make
/// (`programs/strings.dl`).
pub const STRINGS: &str = include_str!("../../../programs/strings.dl");

/// Shortest paths by subsumption over `edge` (`programs/paths.dl`).
pub const PATHS: &str = include_str!("../../../programs/paths.dl");

/// Spanning trees by a recursive choice over `edge` (`programs/trees.dl`).
pub const TREES: &str = include_str!("../../../programs/trees.dl");

impl Rules {
    pub fn text(self) -> &'static str {
        match self {
            Rules::Tc => TC,
            Rules::Rhodf => rdf::RHODF,
            Rules::Owl2rl => rdf::OWL2RL,
            Rules::Stats => STATS,
            Rules::Strings => STRINGS,
            Rules::Paths => PATHS,
            Rules::Trees => TREES,
        }
    }

    pub fn file_name(self) -> &'static str {
        match self {
            Rules::Tc => "tc.dl",
            Rules::Rhodf => "rhodf.dl",
            Rules::Owl2rl => "owl2rl.dl",
            Rules::Stats => "stats.dl",
            Rules::Strings => "strings.dl",
            Rules::Paths => "paths.dl",
            Rules::Trees => "trees.dl",
        }
    }

    /// The rule added and removed again by the rule-change measurement (with the
    /// declaration of a new relation where it needs one).
    pub fn extra_rule(self) -> &'static str {
        match self {
            // Edges become symmetric for reachability: a rule on the recursive stratum.
            Rules::Tc => "tc(x, y) :- edge(y, x).",
            // rdfs4a: every subject is a resource.
            Rules::Rhodf => "T(x, \"rdf:type\", \"rdfs:Resource\") :- T(x, _, _).",
            // A new derived relation with a self-join.
            Rules::Owl2rl => {
                ".decl coAuthor(x: symbol, y: symbol)\ncoAuthor(x, y) :- publicationAuthor(p, x), publicationAuthor(p, y), x != y."
            }
            // A new aggregate over the closure: its input, result and readers come
            // and go.
            Rules::Stats => {
                ".decl nearest(x: number, m: number)\nnearest(x, m) :- node(x), m = min y : tc(x, y)."
            }
            // More tags, made from the links: the aggregate over tags changes too.
            Rules::Strings => "tag(a, cat(\"r:\", b)) :- link(a, b), match(\".*9\", b).",
            // Every edge back at distance 1: most distances get shorter, and longer
            // again when it goes.
            Rules::Paths => "sp(x, y, 1) :- edge(y, x).",
            // Edges followed both ways: every tree grows and most get shallower, and
            // back when it goes.
            Rules::Trees => "tree(r, y, z) :- tree(r, _, y), edge(z, y).",
        }
    }
}

/// How a workload's data is generated (seed 0 for all).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Data {
    Rmat { nodes: u64, edges: u64 },
    Rand { nodes: u64, p: f64 },
    Lubm { universities: u32 },
}

impl Data {
    /// The cache folder's name.
    pub fn key(self) -> String {
        match self {
            Data::Rmat { nodes, edges } => format!("rmat-n{nodes}-m{edges}-s0"),
            Data::Rand { nodes, p } => format!("rand-n{nodes}-p{p}-s0"),
            Data::Lubm { universities } => format!("lubm-u{universities}-s0"),
        }
    }

    /// The file name of the data inside its folder (and of each split part).
    pub fn file_name(self) -> &'static str {
        match self {
            Data::Lubm { .. } => "data.nt",
            _ => "edge.facts",
        }
    }

    pub fn is_rdf(self) -> bool {
        matches!(self, Data::Lubm { .. })
    }

    fn generate(self, out: &mut dyn Write) -> Result<(), Error> {
        let r = match self {
            Data::Rmat { nodes, edges } => dynalog_gen::rmat(nodes, edges, 0, out).map(|_| ()),
            Data::Rand { nodes, p } => dynalog_gen::rand(nodes, p, 0, out).map(|_| ()),
            Data::Lubm { universities } => dynalog_gen::lubm(universities, 0, out),
        };
        r.map_err(|e| Error::Generate {
            data: self.key(),
            message: e.to_string(),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Workload {
    pub name: &'static str,
    pub rules: Rules,
    pub data: Data,
}

const fn w(name: &'static str, rules: Rules, data: Data) -> Workload {
    Workload { name, rules, data }
}

/// Every workload, smallest first within each family.
pub const WORKLOADS: &[Workload] = &[
    w(
        "tc-tiny",
        Rules::Tc,
        Data::Rmat {
            nodes: 64,
            edges: 256,
        },
    ),
    w(
        "tc-rand1k",
        Rules::Tc,
        Data::Rand {
            nodes: 1000,
            p: 0.001,
        },
    ),
    w(
        "tc-rmat1k",
        Rules::Tc,
        Data::Rmat {
            nodes: 1000,
            edges: 10_000,
        },
    ),
    w(
        "tc-rmat10k",
        Rules::Tc,
        Data::Rmat {
            nodes: 10_000,
            edges: 100_000,
        },
    ),
    w(
        "tc-gnp5000",
        Rules::Tc,
        Data::Rand {
            nodes: 5000,
            p: 0.001,
        },
    ),
    w("rhodf-lubm1", Rules::Rhodf, Data::Lubm { universities: 1 }),
    w(
        "owl2rl-lubm1",
        Rules::Owl2rl,
        Data::Lubm { universities: 1 },
    ),
    w(
        "rhodf-lubm10",
        Rules::Rhodf,
        Data::Lubm { universities: 10 },
    ),
    w(
        "owl2rl-lubm10",
        Rules::Owl2rl,
        Data::Lubm { universities: 10 },
    ),
    w(
        "stats-rand1k",
        Rules::Stats,
        Data::Rand {
            nodes: 1000,
            p: 0.001,
        },
    ),
    w(
        "stats-rmat1k",
        Rules::Stats,
        Data::Rmat {
            nodes: 1000,
            edges: 10_000,
        },
    ),
    w(
        "strings-rand1k",
        Rules::Strings,
        Data::Rand {
            nodes: 1000,
            p: 0.001,
        },
    ),
    w(
        "strings-rmat1k",
        Rules::Strings,
        Data::Rmat {
            nodes: 1000,
            edges: 10_000,
        },
    ),
    w(
        "paths-rand1k",
        Rules::Paths,
        Data::Rand {
            nodes: 1000,
            p: 0.001,
        },
    ),
    w(
        "paths-rmat1k",
        Rules::Paths,
        Data::Rmat {
            nodes: 1000,
            edges: 10_000,
        },
    ),
    w(
        "trees-rand1k",
        Rules::Trees,
        Data::Rand {
            nodes: 1000,
            p: 0.001,
        },
    ),
    w(
        "trees-rmat1k",
        Rules::Trees,
        Data::Rmat {
            nodes: 1000,
            edges: 10_000,
        },
    ),
    w(
        "rhodf-lubm50",
        Rules::Rhodf,
        Data::Lubm { universities: 50 },
    ),
    w(
        "owl2rl-lubm50",
        Rules::Owl2rl,
        Data::Lubm { universities: 50 },
    ),
];

/// The workloads of the study's sizes: the default of `dynalog bench`.
pub const DEFAULT_WORKLOADS: &[&str] = &["tc-rand1k", "tc-rmat1k", "rhodf-lubm1", "owl2rl-lubm1"];

/// The workloads of `--quick`.
pub const QUICK_WORKLOADS: &[&str] = &["tc-rand1k", "rhodf-lubm1"];

pub fn find(name: &str) -> Result<Workload, Error> {
    WORKLOADS
        .iter()
        .find(|w| w.name == name)
        .copied()
        .ok_or_else(|| {
            let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
            Error::Usage(format!(
                "unknown workload `{name}` (available: {}, or `all`)",
                names.join(", ")
            ))
        })
}

/// The folder of a workload's data in the cache.
pub fn data_dir(cache: &Path, data: Data) -> PathBuf {
    cache.join(data.key())
}

/// The folder of the split that keeps the first `keep`% of the lines.
pub fn split_dir(cache: &Path, data: Data, keep: u32) -> PathBuf {
    data_dir(cache, data).join(format!("keep{keep}"))
}

/// Generate the data (once: it is cached) and return its path.
pub fn ensure_data(cache: &Path, data: Data) -> Result<PathBuf, Error> {
    let dir = data_dir(cache, data);
    let path = dir.join(data.file_name());
    if path.exists() {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create `{}`", dir.display()), e))?;
    let tmp = dir.join(format!("{}.partial", data.file_name()));
    {
        let file = std::fs::File::create(&tmp)
            .map_err(|e| Error::io(format!("cannot write `{}`", tmp.display()), e))?;
        let mut out = BufWriter::new(file);
        data.generate(&mut out)?;
        out.flush()
            .map_err(|e| Error::io(format!("cannot write `{}`", tmp.display()), e))?;
    }
    std::fs::rename(&tmp, &path)
        .map_err(|e| Error::io(format!("cannot write `{}`", path.display()), e))?;
    Ok(path)
}

/// Split `lines` in file order: the first `keep`% (rounded down) and the rest.
pub fn split_at_percent<T>(lines: &[T], keep: u32) -> (&[T], &[T]) {
    let cut = (lines.len() as u128 * keep.min(100) as u128 / 100) as usize;
    lines.split_at(cut)
}

/// Write the split keeping the first `keep`% of the data's lines (once: it is cached):
/// `head/FILE` and `tail/FILE` under [`split_dir`].
pub fn ensure_split(cache: &Path, data: Data, keep: u32) -> Result<PathBuf, Error> {
    let dir = split_dir(cache, data, keep);
    let name = data.file_name();
    if dir.join("tail").join(name).exists() {
        return Ok(dir);
    }
    let source = ensure_data(cache, data)?;
    let io = |e: std::io::Error| Error::io(format!("cannot split `{}`", source.display()), e);
    let file = std::fs::File::open(&source).map_err(io)?;
    let mut lines = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(io)?;
        if !line.trim().is_empty() {
            lines.push(line);
        }
    }
    let (head, tail) = split_at_percent(&lines, keep);
    for (part, content) in [("head", head), ("tail", tail)] {
        let d = dir.join(part);
        std::fs::create_dir_all(&d).map_err(io)?;
        let mut out = BufWriter::new(std::fs::File::create(d.join(name)).map_err(io)?);
        for l in content {
            writeln!(out, "{l}").map_err(io)?;
        }
        out.flush().map_err(io)?;
    }
    Ok(dir)
}

/// Facts as read, in batches of one relation each: a row takes its values and
/// nothing more, where a vector per fact would add about 40 bytes (on LUBM(50) the
/// loader's copy then held more than the engine's whole evaluation).
#[derive(Default)]
pub struct Facts(Vec<(RelId, dynalog_io::Tuples)>);

impl Facts {
    pub fn len(&self) -> usize {
        self.0.iter().map(|(_, t)| t.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (RelId, &[Value])> {
        self.0
            .iter()
            .flat_map(|(r, t)| t.iter().map(move |t| (*r, t)))
    }
}

/// A workload loaded for one measurement: the program (its symbol table holds every
/// symbol of both parts), the facts of the first part, and the update: the facts of
/// the rest that are not already in the first part, each once.
pub struct Loaded {
    pub program: Program,
    pub head: Facts,
    pub tail: Vec<(RelId, Vec<Value>)>,
    /// Lines of the rest dropped because they repeat a fact (of the first part or an
    /// earlier line of the rest).
    pub tail_duplicates: usize,
}

pub fn analyse(source: &SourceFile) -> Result<Program, Error> {
    let ast = dynalog_syntax::parse(source)?;
    Ok(dynalog_analysis::analyse(source, &ast)?)
}

/// Load the split keeping `keep`% through the same code paths as `dynalog run` (fact
/// files: `.input` directives read from a folder) and `dynalog rdf materialize` (the
/// program's RDF mapping). Relative IRIs resolve against the whole data file's URI.
pub fn load(cache: &Path, workload: Workload, keep: u32) -> Result<Loaded, Error> {
    let source = SourceFile::new(
        format!("<built-in {}>", workload.rules.file_name()),
        workload.rules.text(),
    );
    let mut program = analyse(&source)?;
    let dir = split_dir(cache, workload.data, keep);
    let whole = data_dir(cache, workload.data).join(workload.data.file_name());
    let mut parts = Vec::new();
    for part in ["head", "tail"] {
        let batches: Vec<(RelId, dynalog_io::Tuples)> = if workload.data.is_rdf() {
            let options = RdfOptions {
                base: Some(rdf::file_uri(&whole)),
                lenient: false,
                format: None,
                file_id: 0,
            };
            let path = dir.join(part).join(workload.data.file_name());
            let (_, load) = rdf::load_rdf_for_program(&mut program, &source, &path, &options)?;
            load.batches
        } else {
            dynalog_io::read_inputs(&mut program, &source, &dir.join(part))?
                .into_iter()
                .map(|l| (l.relation, l.tuples))
                .collect()
        };
        parts.push(batches);
    }
    let tail = Facts(parts.pop().unwrap_or_default());
    let tail = tail.iter().map(|(r, t)| (r, t.to_vec())).collect();
    let head = Facts(parts.pop().unwrap_or_default());
    let (tail, tail_duplicates) = new_facts(&head, tail);
    Ok(Loaded {
        program,
        head,
        tail,
        tail_duplicates,
    })
}

/// The facts of `tail` that are not in `head`, each once, in order; and how many were
/// dropped. Under set semantics deleting a repeated line would delete a fact of E.
/// Only the update is hashed (it is the small part); the first part is scanned.
pub fn new_facts(
    head: &Facts,
    tail: Vec<(RelId, Vec<Value>)>,
) -> (Vec<(RelId, Vec<Value>)>, usize) {
    let mut first: HashMap<(RelId, &[Value]), usize> = HashMap::with_capacity(tail.len());
    let mut keep = vec![false; tail.len()];
    for (i, (r, t)) in tail.iter().enumerate() {
        if let Entry::Vacant(e) = first.entry((*r, &t[..])) {
            e.insert(i);
            keep[i] = true;
        }
    }
    if !first.is_empty() {
        for fact in head.iter() {
            if let Some(&i) = first.get(&fact) {
                keep[i] = false;
            }
        }
    }
    drop(first);
    let before = tail.len();
    let out: Vec<_> = tail
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect();
    let dropped = before - out.len();
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_first_lines_in_file_order() {
        let lines: Vec<u32> = (0..10).collect();
        assert_eq!(split_at_percent(&lines, 90), (&lines[..9], &lines[9..]));
        assert_eq!(split_at_percent(&lines, 50), (&lines[..5], &lines[5..]));
        assert_eq!(split_at_percent(&lines, 99), (&lines[..9], &lines[9..]));
        assert_eq!(split_at_percent(&lines, 100).1.len(), 0);
        let many: Vec<u32> = (0..103_391).collect();
        let (head, tail) = split_at_percent(&many, 99);
        assert_eq!(head.len(), 102_357);
        assert_eq!(tail[0], 102_357);
    }

    #[test]
    fn the_update_holds_only_new_facts_once() {
        let mut batch = dynalog_io::Tuples::new(2);
        batch.push(&[1, 2]);
        batch.push(&[2, 3]);
        let mut other = dynalog_io::Tuples::new(2);
        other.push(&[5, 6]);
        let head = Facts(vec![(0, batch), (1, other)]);
        let tail = vec![
            (0, vec![2, 3]),
            (0, vec![3, 4]),
            (1, vec![1, 2]),
            (0, vec![3, 4]),
            (1, vec![5, 6]),
            (0, vec![5, 6]),
        ];
        let (new, dropped) = new_facts(&head, tail);
        assert_eq!(new, vec![(0, vec![3, 4]), (1, vec![1, 2]), (0, vec![5, 6])]);
        assert_eq!(dropped, 3);
    }

    #[test]
    fn splits_are_written_in_file_order_and_tbox_first() {
        let cache = tempfile::tempdir().unwrap();
        let data = Data::Lubm { universities: 1 };
        let dir = ensure_split(cache.path(), data, 90).unwrap();
        let head = std::fs::read_to_string(dir.join("head/data.nt")).unwrap();
        let tail = std::fs::read_to_string(dir.join("tail/data.nt")).unwrap();
        let whole = std::fs::read_to_string(cache.path().join(data.key()).join("data.nt")).unwrap();
        assert_eq!(format!("{head}{tail}"), whole);
        let n = whole.lines().count();
        assert_eq!(head.lines().count(), n * 90 / 100);
    }
}
