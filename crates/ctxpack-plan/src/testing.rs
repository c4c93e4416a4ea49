//! An in-memory [`Sources`] for tests, examples and dry runs: every source answers from a
//! table, and anything not in the table fails (its name stays unbound).

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::sources::{DocsRequest, QueryRequest, ReadRequest, RunRequest, SourceError, Sources};
use crate::value::Value;

/// Sources answered from tables keyed by path, goal, query, artifact id and command. Every
/// request is logged in [`TableSources::asked`], so a test can check what was (not) asked.
#[derive(Debug, Default)]
pub struct TableSources {
    /// `read` by normalised path.
    pub reads: BTreeMap<String, Result<Value, SourceError>>,
    /// `query` by goal.
    pub queries: BTreeMap<String, Result<Value, SourceError>>,
    /// `docs` by query text.
    pub docs: BTreeMap<String, Result<Value, SourceError>>,
    /// `artifact` by id.
    pub artifacts: BTreeMap<String, Result<Value, SourceError>>,
    /// `run` by command as written.
    pub runs: BTreeMap<String, Result<Value, SourceError>>,
    /// What was asked, in order: `read:<path>`, `query:<goal>`, ….
    pub asked: RefCell<Vec<String>>,
}

impl TableSources {
    fn answer(
        &self,
        kind: &str,
        table: &BTreeMap<String, Result<Value, SourceError>>,
        key: &str,
    ) -> Result<Value, SourceError> {
        self.asked.borrow_mut().push(format!("{kind}:{key}"));
        table.get(key).cloned().unwrap_or_else(|| {
            Err(SourceError::Failed(format!(
                "no {kind} `{key}` in the table"
            )))
        })
    }
}

impl Sources for TableSources {
    fn read(&self, request: &ReadRequest) -> Result<Value, SourceError> {
        self.answer("read", &self.reads, &request.path)
    }

    fn query(&self, request: &QueryRequest) -> Result<Value, SourceError> {
        self.answer("query", &self.queries, &request.goal)
    }

    fn docs(&self, request: &DocsRequest) -> Result<Value, SourceError> {
        self.answer("docs", &self.docs, &request.query)
    }

    fn artifact(&self, id: &str) -> Result<Value, SourceError> {
        self.answer("artifact", &self.artifacts, id)
    }

    fn run(&self, request: &RunRequest) -> Result<Value, SourceError> {
        self.answer("run", &self.runs, &request.command)
    }
}
