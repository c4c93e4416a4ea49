//! An in-memory [`Sources`] for tests, examples and dry runs: every source answers from a
//! table, and anything not in the table fails (its name stays unbound).

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::PlanError;
use crate::sources::{DocsRequest, QueryRequest, ReadRequest, RunRequest, Sources};
use crate::value::Value;

/// Sources answered from tables keyed by path, goal, query, artifact id and command. Every
/// request is logged in [`TableSources::asked`], so a test can check what was (not) asked.
#[derive(Debug, Default)]
pub struct TableSources {
    /// `read` by normalised path.
    pub reads: BTreeMap<String, Result<Value, PlanError>>,
    /// `query` by goal.
    pub queries: BTreeMap<String, Result<Value, PlanError>>,
    /// `docs` by query text.
    pub docs: BTreeMap<String, Result<Value, PlanError>>,
    /// `artifact` by id.
    pub artifacts: BTreeMap<String, Result<Value, PlanError>>,
    /// `run` by command as written.
    pub runs: BTreeMap<String, Result<Value, PlanError>>,
    /// What was asked, in order: `read:<path>`, `query:<goal>`, ….
    pub asked: RefCell<Vec<String>>,
}

impl TableSources {
    fn answer(
        &self,
        kind: &str,
        table: &BTreeMap<String, Result<Value, PlanError>>,
        key: &str,
    ) -> Result<Value, PlanError> {
        self.asked.borrow_mut().push(format!("{kind}:{key}"));
        table.get(key).cloned().unwrap_or_else(|| {
            Err(PlanError::SourceFailed(format!(
                "no {kind} `{key}` in the table"
            )))
        })
    }
}

impl Sources for TableSources {
    fn read(&self, request: &ReadRequest) -> Result<Value, PlanError> {
        self.answer("read", &self.reads, &request.path)
    }

    fn query(&self, request: &QueryRequest) -> Result<Value, PlanError> {
        self.answer("query", &self.queries, &request.goal)
    }

    fn docs(&self, request: &DocsRequest) -> Result<Value, PlanError> {
        self.answer("docs", &self.docs, &request.query)
    }

    fn artifact(&self, id: &str) -> Result<Value, PlanError> {
        self.answer("artifact", &self.artifacts, id)
    }

    fn run(&self, request: &RunRequest) -> Result<Value, PlanError> {
        self.answer("run", &self.runs, &request.command)
    }
}
