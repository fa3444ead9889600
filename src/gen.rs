//! `dynalog gen lubm|rand|rmat ...`: write benchmark data with the deterministic
//! generators of `dynalog-gen`.
//!
//! * `lubm --universities N [--seed S]`: LUBM(N, S) in N-Triples (the univ-bench TBox
//!   first), as the Lehigh UBA 1.7 generator makes it; LUBM(1, 0) is the study's file.
//! * `rand --nodes N --p P [--seed S]`: Erdős–Rényi G(N, P), `src<TAB>dst` per line.
//! * `rmat --nodes N --edges M [--seed S]`: an R-MAT graph, `src<TAB>dst` per line.
//!
//! Output goes to standard output, or to `-o FILE` (gzipped when FILE ends in `.gz`).
//! A run that takes longer than a second shows the lines written so far on stderr when
//! it is a terminal (a bar towards the number of edges for `rmat`, which draws every
//! edge before it writes them sorted; a count for the others); otherwise nothing, as
//! `run` and `rdf` show nothing.
//! Bad arguments are reported as `error: ...` before the output file is created, so an
//! existing file is left alone; a file whose writing fails is removed.

use crate::progress::LineCounter;
use clap::{Args, Subcommand};
use dynalog_gen::GenError;
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct GenArgs {
    #[command(subcommand)]
    pub kind: GenKind,
}

#[derive(Subcommand, Debug)]
pub enum GenKind {
    /// LUBM(N, seed) as N-Triples: the univ-bench TBox, then N universities (Lehigh UBA 1.7).
    Lubm(LubmArgs),
    /// Erdős–Rényi G(n, p): every ordered pair of distinct nodes 1..=n is an edge with probability p.
    Rand(RandArgs),
    /// R-MAT (GTgraph): m edges over nodes 1..=n, skewed, duplicates kept, sorted by source.
    Rmat(RmatArgs),
}

#[derive(Args, Debug)]
pub struct LubmArgs {
    /// Number of universities (about 130,000 triples each).
    #[arg(short = 'u', long)]
    pub universities: u32,
    /// UBA's seed (0 gives the study's LUBM data).
    #[arg(short = 's', long, default_value_t = 0)]
    pub seed: u32,
    /// Output file (`.gz` is gzipped); standard output when absent.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RandArgs {
    /// Number of nodes n (ids 1..=n).
    #[arg(short = 'n', long)]
    pub nodes: u64,
    /// Edge probability p, in [0, 1].
    #[arg(short = 'p', long = "p")]
    pub p: f64,
    /// Seed of the generator.
    #[arg(short = 's', long, default_value_t = 0)]
    pub seed: u64,
    /// Output file (`.gz` is gzipped); standard output when absent.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RmatArgs {
    /// Number of nodes n (ids 1..=n), at least 2.
    #[arg(short = 'n', long)]
    pub nodes: u64,
    /// Number of edges m (lines written).
    #[arg(short = 'm', long)]
    pub edges: u64,
    /// Seed of the generator.
    #[arg(short = 's', long, default_value_t = 0)]
    pub seed: u64,
    /// Output file (`.gz` is gzipped); standard output when absent.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: GenArgs) -> Result<(), String> {
    // Arguments are checked before an output file is created (or truncated).
    let fail = |e: GenError| format!("error: {e}");
    match args.kind {
        GenKind::Lubm(a) => {
            dynalog_gen::check_lubm(a.universities).map_err(fail)?;
            let what = format!("lines of LUBM({}, {})", a.universities, a.seed);
            write_to(a.output.as_deref(), &what, None, |w| {
                dynalog_gen::lubm(a.universities, a.seed, w)
            })
        }
        GenKind::Rand(a) => {
            dynalog_gen::check_rand(a.nodes, a.p).map_err(fail)?;
            let what = format!("edges of G({}, {})", a.nodes, a.p);
            write_to(a.output.as_deref(), &what, None, |w| {
                dynalog_gen::rand(a.nodes, a.p, a.seed, w).map(drop)
            })
        }
        GenKind::Rmat(a) => {
            dynalog_gen::check_rmat(a.nodes, a.edges).map_err(fail)?;
            let what = format!("edges of R-MAT({}, {})", a.nodes, a.edges);
            write_to(a.output.as_deref(), &what, Some(a.edges), |w| {
                dynalog_gen::rmat(a.nodes, a.edges, a.seed, w).map(drop)
            })
        }
    }
}

/// Run `generate` on `out` through a buffer, showing the lines written (`what` they
/// are, `total` if known) on a terminal.
fn counted(
    out: &mut dyn Write,
    what: &str,
    total: Option<u64>,
    generate: impl FnOnce(&mut dyn Write) -> Result<(), GenError>,
) -> Result<(), GenError> {
    let mut w = BufWriter::new(LineCounter::new(out, what, total));
    generate(&mut w)?;
    w.flush()?;
    Ok(())
}

/// Run `generate` on standard output or on `path`.
fn write_to(
    path: Option<&Path>,
    what: &str,
    total: Option<u64>,
    generate: impl FnOnce(&mut dyn Write) -> Result<(), GenError>,
) -> Result<(), String> {
    let Some(path) = path else {
        let stdout = std::io::stdout();
        return match counted(&mut stdout.lock(), what, total, generate) {
            Ok(()) => Ok(()),
            // `dynalog gen ... | head`: the reader has seen enough.
            Err(GenError::Io(e)) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
            Err(e) => Err(format!("error: {e}")),
        };
    };
    let mut file = File::create(path)
        .map_err(|e| format!("error: cannot create `{}`: {e}", path.display()))?;
    let result = if path.extension().is_some_and(|x| x == "gz") {
        let mut gz =
            flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
        // The encoder gets the generator's writes as they are (no buffer in between),
        // so the compressed bytes stay those of earlier versions.
        generate(&mut LineCounter::new(&mut gz, what, total)).and_then(|()| {
            gz.finish()?.flush()?;
            Ok(())
        })
    } else {
        counted(&mut file, what, total, generate)
    };
    result.map_err(|e| {
        // Leave no truncated file behind (the arguments were fine: the disk, the memory
        // or the file system failed).
        let _ = std::fs::remove_file(path);
        match e {
            GenError::Io(io) => format!("error: cannot write `{}`: {io}", path.display()),
            other => format!("error: {other}"),
        }
    })
}
