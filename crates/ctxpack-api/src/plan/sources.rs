//! The plan's sources over a workspace: `read` from the committed snapshot with gix (the
//! worktree only with `worktree: true`, never outside the repository), `query` through the
//! index, `docs` through document stores inside the repository, `artifact` through the store,
//! and `run` as a child process.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use ctxpack_core::{Citation, Family, Location, Meter};
use ctxpack_index::git::{EntryKind, Repo, TreeEntry};
use ctxpack_plan::{
    DocsRequest, PlanError, QueryRequest, ReadRequest, RunRequest, SourceHit, Sources, Text, Value,
    normalize_path,
};

use super::command::{RunLimits, run_command};
use crate::docs::VsearchRequest;
use crate::error::{Error, ErrorKind};
use crate::workspace::Workspace;

/// The plan's sources over a workspace's repository, its store and child processes.
pub(crate) struct WorkspaceSources<'a> {
    workspace: &'a Workspace,
    repo: Repo,
    root: PathBuf,
    limits: RunLimits,
    /// Tree listings by commit, so several reads of one commit walk its tree once.
    trees: RefCell<HashMap<String, Vec<TreeEntry>>>,
}

impl<'a> WorkspaceSources<'a> {
    /// Sources over the workspace's repository `repo`.
    pub(crate) fn new(workspace: &'a Workspace, repo: Repo, limits: RunLimits) -> Self {
        WorkspaceSources {
            root: repo.root(),
            workspace,
            repo,
            limits,
            trees: RefCell::new(HashMap::new()),
        }
    }

    fn read_commit(&self, path: &str, at: &str) -> Result<(String, String), PlanError> {
        let sha = self
            .repo
            .resolve(at)
            .map_err(|e| PlanError::SourceRefused(e.to_string()))?;
        let short = &sha[..7];
        let mut trees = self.trees.borrow_mut();
        if !trees.contains_key(&sha) {
            let entries = self
                .repo
                .tree_entries(&sha)
                .map_err(|e| PlanError::SourceFailed(e.to_string()))?;
            trees.insert(sha.clone(), entries);
        }
        let entries = &trees[&sha];
        let Ok(i) = entries.binary_search_by(|e| e.path.as_str().cmp(path)) else {
            let dir = format!("{path}/");
            return Err(PlanError::SourceFailed(
                if entries.iter().any(|e| e.path.starts_with(&dir)) {
                    format!("`{path}` is a directory at {short}, not a file")
                } else {
                    format!("no file `{path}` at {short}")
                },
            ));
        };
        let entry = &entries[i];
        match entry.kind {
            EntryKind::File => {}
            EntryKind::Symlink => {
                return Err(PlanError::SourceFailed(format!(
                    "`{path}` is a symbolic link at {short}; links are not followed"
                )));
            }
            EntryKind::Submodule => {
                return Err(PlanError::SourceFailed(format!(
                    "`{path}` is a submodule at {short}, not a file"
                )));
            }
        }
        let bytes = self
            .repo
            .read_blob(&entry.id)
            .map_err(|e| PlanError::SourceFailed(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            PlanError::SourceFailed(format!("`{path}` at {short} is not UTF-8 text"))
        })?;
        Ok((text, sha))
    }

    fn read_worktree(&self, path: &str) -> Result<String, PlanError> {
        if path == ".git" || path.starts_with(".git/") {
            return Err(PlanError::SourceRefused(format!(
                "`{path}` is inside the git directory"
            )));
        }
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| PlanError::SourceFailed(format!("{}: {e}", self.root.display())))?;
        let full = match std::fs::canonicalize(root.join(path)) {
            Ok(full) => full,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(PlanError::SourceFailed(format!(
                    "no file `{path}` in the worktree"
                )));
            }
            Err(e) => return Err(PlanError::SourceFailed(format!("`{path}`: {e}"))),
        };
        // A symbolic link may point anywhere; only what resolves inside the root, and outside
        // its git directory, is read.
        if !full.starts_with(&root) {
            return Err(PlanError::SourceRefused(format!(
                "`{path}` resolves outside the repository"
            )));
        }
        if full.starts_with(root.join(".git")) {
            return Err(PlanError::SourceRefused(format!(
                "`{path}` resolves inside the git directory"
            )));
        }
        if !full.is_file() {
            return Err(PlanError::SourceFailed(format!(
                "`{path}` is not a file in the worktree"
            )));
        }
        let bytes =
            std::fs::read(&full).map_err(|e| PlanError::SourceFailed(format!("`{path}`: {e}")))?;
        String::from_utf8(bytes)
            .map_err(|_| PlanError::SourceFailed(format!("`{path}` is not UTF-8 text")))
    }
}

/// An API error as a source error: bad input refuses the plan, anything else (a missing
/// store, an unindexed snapshot) leaves the name unbound.
fn source_error(error: Error) -> PlanError {
    let mut message = error.to_string();
    if let Some(crate::error::Hint::IndexCommit { sha, .. }) = error.hint() {
        let _ = write!(message, " (index {sha} first)");
    }
    if error.kind() == ErrorKind::InvalidInput {
        PlanError::SourceRefused(message)
    } else {
        PlanError::SourceFailed(message)
    }
}

/// Lines `a..=b` (1-based) of `text`, with the last line actually taken.
fn slice_lines(
    text: &str,
    lines: Option<(u32, u32)>,
    path: &str,
) -> Result<(String, u32, u32), PlanError> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let total = u32::try_from(all.len()).unwrap_or(u32::MAX);
    let Some((a, b)) = lines else {
        return Ok((text.to_owned(), 1, total.max(1)));
    };
    if a > total {
        return Err(PlanError::SourceFailed(format!(
            "`{path}` has {total} lines; the range starts at line {a}"
        )));
    }
    let end = b.min(total);
    Ok((all[(a - 1) as usize..end as usize].concat(), a, end))
}

impl Sources for WorkspaceSources<'_> {
    fn read(&self, request: &ReadRequest) -> Result<Value, PlanError> {
        let path = normalize_path(&request.path).map_err(|why| {
            PlanError::SourceRefused(format!(
                "path `{}` is outside the repository: {why}",
                request.path
            ))
        })?;
        let (text, title_of): (String, Box<dyn Fn(u32, u32) -> String>) = if request.worktree {
            let text = self.read_worktree(&path)?;
            let p = path.clone();
            (
                text,
                Box::new(move |a, b| format!("{p}#L{a}-L{b} (worktree)")),
            )
        } else {
            let (text, sha) = self.read_commit(&path, request.at.as_deref().unwrap_or("HEAD"))?;
            let p = path.clone();
            (text, Box::new(move |a, b| Citation::code(&p, a, b, &sha).0))
        };
        let (text, start, end) = slice_lines(&text, request.lines, &path)?;
        Ok(Value::Text(Text {
            text,
            title: Some(title_of(start, end)),
            location: Some(Location {
                path,
                start_line: start,
                end_line: end,
                symbol: None,
            }),
            artifact: None,
        }))
    }

    fn query(&self, request: &QueryRequest) -> Result<Value, PlanError> {
        let at = request.at.as_deref().unwrap_or("HEAD");
        let (_, hits) = self
            .workspace
            .retrieve_exact(&request.goal, at, request.top, Meter::Chars)
            .map_err(source_error)?;
        Ok(Value::Hits(
            hits.into_iter()
                .map(|h| SourceHit {
                    citation: h.candidate.citation,
                    family: h.candidate.family,
                    text: h.candidate.text,
                    score: Some(f64::from(h.score)),
                    location: h.candidate.location,
                    title: h.candidate.title,
                    artifact: h.artifact,
                    redactions: h.redactions,
                })
                .collect(),
        ))
    }

    fn docs(&self, request: &DocsRequest) -> Result<Value, PlanError> {
        let dir = if Path::new(&request.store).is_absolute() {
            PathBuf::from(&request.store)
        } else {
            self.root.join(&request.store)
        };
        // Like `read`, a document store must be inside the repository (symlinks resolved).
        let root = std::fs::canonicalize(&self.root)
            .map_err(|e| PlanError::SourceFailed(format!("{}: {e}", self.root.display())))?;
        match std::fs::canonicalize(&dir) {
            Ok(full) if full.starts_with(&root) => {}
            Ok(_) => {
                return Err(PlanError::SourceRefused(format!(
                    "the document store `{}` is outside the repository",
                    request.store
                )));
            }
            Err(e) => {
                return Err(PlanError::SourceFailed(format!(
                    "no document store `{}`: {e}",
                    request.store
                )));
            }
        }
        let field = ctxpack_docs::document::field_path(&request.field)
            .map_err(|e| PlanError::SourceRefused(format!("invalid field: {e}")))?;
        let found = Workspace::for_store(&dir, crate::workspace::Access::ReadOnly)
            .and_then(|store| {
                store.vsearch(&VsearchRequest {
                    collection: request.collection.clone(),
                    field: request.field.clone(),
                    query: request.query.clone(),
                    k: request.top,
                    filter: request.filter.clone(),
                    exact: false,
                })
            })
            .map_err(source_error)?;
        let collection = &request.collection;
        let hits = found
            .hits
            .into_iter()
            .filter_map(|h| {
                let document: serde_json::Value = serde_json::from_str(&h.document).ok()?;
                let text = ctxpack_docs::document::string_at(&document, &field)?.to_owned();
                let id = ctxpack_docs::document::id_value(&h.id_key);
                let citation = ctxpack_docs::context::citation(collection, &id);
                let key = citation
                    .0
                    .strip_prefix(&format!("doc:{collection}/"))
                    .unwrap_or(&h.id_key)
                    .to_owned();
                Some(SourceHit {
                    family: Family::collection(collection, &key),
                    citation,
                    text,
                    score: Some(h.score),
                    location: None,
                    title: None,
                    artifact: None,
                    redactions: Default::default(),
                })
            })
            .collect();
        Ok(Value::Hits(hits))
    }

    fn artifact(&self, id: &str) -> Result<Value, PlanError> {
        let (row, text) = self.workspace.artifact(id).map_err(source_error)?;
        let title = match &row.title {
            Some(title) => format!("{title} ({}:{id})", row.scope),
            None => format!("{}:{id}", row.scope),
        };
        Ok(Value::Text(Text {
            text,
            title: Some(title),
            location: None,
            artifact: Some(id.to_owned()),
        }))
    }

    fn run(&self, request: &RunRequest) -> Result<Value, PlanError> {
        run_command(request, &self.root, self.limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_slices() {
        let text = "a\nb\nc\n";
        type Case = (
            Option<(u32, u32)>,
            Result<(&'static str, u32, u32), &'static str>,
        );
        let cases: &[Case] = &[
            (None, Ok(("a\nb\nc\n", 1, 3))),
            (Some((2, 3)), Ok(("b\nc\n", 2, 3))),
            (Some((2, 99)), Ok(("b\nc\n", 2, 3))),
            (Some((3, 3)), Ok(("c\n", 3, 3))),
            (
                Some((4, 9)),
                Err("`f` has 3 lines; the range starts at line 4"),
            ),
        ];
        for (lines, expected) in cases {
            let got = slice_lines(text, *lines, "f").map_err(|e| e.to_string());
            let expected = expected
                .map(|(t, a, b)| (t.to_owned(), a, b))
                .map_err(str::to_owned);
            assert_eq!(got, expected, "{lines:?}");
        }
    }
}
