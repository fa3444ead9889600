//! Deterministic generators for the benchmark data, so that a fresh machine can make
//! every input itself and scale past the study's sizes:
//!
//! * [`lubm`]: LUBM(N, seed) in N-Triples, a faithful reimplementation of the Lehigh UBA
//!   1.7 generator on a bit-exact port of `java.util.Random` ([`java_random`]);
//! * [`rand`]: Erdős–Rényi G(n, p) as in GTgraph;
//! * [`rmat`]: R-MAT graphs as in GTgraph.
//!
//! The graphs are written as Soufflé fact files (`src<TAB>dst`), so `.input edge` reads
//! them directly. Every generator checks its arguments and returns
//! [`GenError::Invalid`] instead of panicking.

pub mod graphs;
pub mod java_random;
pub mod lubm;
pub mod rng;

pub use graphs::{check_rand, check_rmat, rand, rmat};
pub use lubm::{check_lubm, lubm};

use std::fmt;

/// Why a generator could not write its data.
#[derive(Debug)]
pub enum GenError {
    /// An argument is out of range; the message says which and why.
    Invalid(String),
    /// Writing the output failed.
    Io(std::io::Error),
}

impl GenError {
    fn invalid(message: impl Into<String>) -> GenError {
        GenError::Invalid(message.into())
    }
}

impl fmt::Display for GenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenError::Invalid(m) => f.write_str(m),
            GenError::Io(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl std::error::Error for GenError {}

impl From<std::io::Error> for GenError {
    fn from(e: std::io::Error) -> GenError {
        GenError::Io(e)
    }
}
