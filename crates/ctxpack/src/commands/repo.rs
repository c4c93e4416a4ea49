//! What the snapshot commands share: finding the repository and its store.

use std::path::PathBuf;

use clap::Args;
use ctxpack_index::git::Repo;
use ctxpack_store::Store;

use crate::failure::Failure;

/// `--cwd` and `--store`.
#[derive(Clone, Debug, Args)]
pub struct Location {
    /// Run against the repository containing this path.
    #[arg(long, default_value = ".")]
    pub cwd: PathBuf,
    /// The store directory (default: `.ctxpack` at the repository root).
    #[arg(long)]
    pub store: Option<PathBuf>,
}

impl Location {
    /// Opens the repository.
    pub fn repo(&self) -> Result<Repo, Failure> {
        Ok(Repo::discover(&self.cwd)?)
    }

    /// The store directory for `repo`.
    pub fn store_dir(&self, repo: &Repo) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| repo.root().join(".ctxpack"))
    }

    /// The store directory: `--store` when given (no repository needed), else the default
    /// store of the repository at `--cwd`.
    pub fn resolve_store_dir(&self) -> Result<PathBuf, Failure> {
        match &self.store {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self.store_dir(&self.repo()?)),
        }
    }

    /// Opens the store read-only.
    pub fn open_store(&self, repo: &Repo) -> Result<Store, Failure> {
        Ok(Store::open(&self.store_dir(repo))?)
    }
}
