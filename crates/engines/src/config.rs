//! Creating an engine from a [`Config`]: its name, workers, limits, and, for the
//! differential engine, the cluster of processes it runs in.

use crate::diff::{Cluster, Diff};
use crate::{Engine, EngineError, Limits, Seminaive, chibi, relational, remat};
use dynalog_analysis::Program;

/// Names accepted by `--engine`.
pub const ENGINE_NAMES: &[&str] = &["seminaive", "diff", "relational", "chibi", "remat"];

/// How a process takes part in a cluster (the differential engine only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterRole {
    /// Every process stages the same changes (a batch run): see
    /// [`Diff::with_cluster`].
    Replicated,
    /// Process 0 of a live cluster, whose other processes follow it
    /// ([`Diff::follow`]): see [`Diff::lead`].
    Lead,
}

/// What [`create`] builds.
#[derive(Clone, Debug)]
pub struct Config {
    /// The engine's name, one of [`ENGINE_NAMES`].
    pub engine: String,
    /// Worker threads (at least one is used).
    pub workers: usize,
    /// The cluster this process is part of, and how; `None` for a single process.
    pub cluster: Option<(Cluster, ClusterRole)>,
    /// The limits of every commit ([`Engine::set_limits`]).
    pub limits: Limits,
}

impl Config {
    /// Engine `engine` with `workers` workers, in one process, without limits.
    pub fn new(engine: &str, workers: usize) -> Config {
        Config {
            engine: engine.to_string(),
            workers,
            cluster: None,
            limits: Limits::NONE,
        }
    }

    /// The same, as a process of `cluster` in `role` (`None`: a single process).
    pub fn with_cluster(mut self, cluster: Option<Cluster>, role: ClusterRole) -> Config {
        self.cluster = cluster.map(|c| (c, role));
        self
    }

    /// The same, with `limits` on every commit.
    pub fn with_limits(mut self, limits: Limits) -> Config {
        self.limits = limits;
        self
    }
}

/// Create the engine `config` describes for `program`. The program's inline facts are
/// its first base facts: the first [`Engine::commit`] materializes them.
pub fn create(config: &Config, program: Program) -> Result<Box<dyn Engine>, EngineError> {
    let workers = config.workers.max(1);
    let mut engine: Box<dyn Engine> = match (config.engine.as_str(), &config.cluster) {
        ("diff", Some((cluster, ClusterRole::Replicated))) => {
            Box::new(Diff::with_cluster(program, workers, cluster.clone())?)
        }
        ("diff", Some((cluster, ClusterRole::Lead))) => {
            Box::new(Diff::lead(program, workers, cluster.clone())?)
        }
        (name, Some(_)) if ENGINE_NAMES.contains(&name) => {
            return Err(EngineError::Unsupported(format!(
                "several processes need the differential engine (--engine diff), not `{name}`"
            )));
        }
        ("seminaive", None) => Box::new(Seminaive::new(program)),
        ("diff", None) => Box::new(Diff::new(program, workers)?),
        ("relational", None) => Box::new(relational::Relational::new(program, workers)),
        ("chibi", None) => Box::new(chibi::Chibi::new(program, workers)),
        ("remat", None) => Box::new(remat::Remat::new(program)),
        (other, _) => return Err(EngineError::UnknownEngine(other.to_string())),
    };
    if !config.limits.is_none() {
        engine.set_limits(config.limits)?;
    }
    Ok(engine)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program() -> Program {
        let text = ".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x).\ne(1).\n";
        let file = dynalog_syntax::SourceFile::new("t.dl", text);
        let ast = dynalog_syntax::parse(&file).expect("parses");
        dynalog_analysis::analyse(&file, &ast).expect("checks")
    }

    #[test]
    fn every_name_creates_its_engine_and_others_are_refused() {
        for name in ENGINE_NAMES {
            let e = create(&Config::new(name, 1), program()).expect("starts");
            assert_eq!(e.name(), *name);
        }
        let e = create(&Config::new("souffle", 1), program()).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("unknown engine `souffle` (available: seminaive, diff, relational, chibi, remat)")
        );
    }

    #[test]
    fn limits_are_set_or_refused_with_the_engine() {
        let limits = Limits {
            max_changes: Some(3),
            max_time: None,
        };
        for name in ENGINE_NAMES {
            let mut e =
                create(&Config::new(name, 1).with_limits(limits), program()).expect("starts");
            e.commit()
                .expect("one fact of e and one of p: within the limit");
            e.insert(0, &[2]);
            e.insert(0, &[3]);
            let err = e.commit().expect_err("four changes");
            assert_eq!(
                err.limit(),
                Some(crate::LimitExceeded::Changes(3)),
                "{name}"
            );
        }
    }
}
