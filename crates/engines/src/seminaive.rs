//! The reference semi-naive evaluator. (Implementation in progress.)
use crate::{CommitStats, Engine, EngineError};
use dynalog_analysis::{Program, RelId, Value};

pub struct Seminaive {
    program: Program,
}

impl Seminaive {
    pub fn new(program: Program) -> Seminaive {
        Seminaive { program }
    }
}

impl Engine for Seminaive {
    fn name(&self) -> &'static str {
        "seminaive"
    }
    fn program(&self) -> &Program {
        &self.program
    }
    fn insert(&mut self, _relation: RelId, _tuple: &[Value]) {}
    fn remove(&mut self, _relation: RelId, _tuple: &[Value]) {}
    fn commit(&mut self) -> Result<CommitStats, EngineError> {
        Ok(CommitStats::default())
    }
    fn len(&self, _relation: RelId) -> usize {
        0
    }
    fn facts(&self, _relation: RelId) -> Vec<Vec<Value>> {
        Vec::new()
    }
}
