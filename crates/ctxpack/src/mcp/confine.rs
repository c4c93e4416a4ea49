//! Confinement: the repository root and store directory a server was started for, and the
//! check that every path a tool is given stays inside them.
//!
//! A path argument is resolved against the repository root, refused outright when it has a
//! `..` component, and then resolved through the file system (every existing prefix is
//! canonicalized, so a symlink that leads out is followed and caught). What remains must lie
//! under the canonical root or the canonical store directory.

use std::path::{Component, Path, PathBuf};

use ctxpack_index::git::Repo;

use crate::commands::repo::Location;
use crate::failure::{Failure, FailureKind};

/// Where a server may read (and, at write scope, write).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// The repository root (canonical), or the canonical `--cwd` when it is not inside a git
    /// repository (a server for document stores only).
    pub root: PathBuf,
    /// The snapshot store directory (canonical as far as it exists).
    pub store: PathBuf,
    /// Whether `root` is a git repository's root.
    pub is_repository: bool,
}

impl Roots {
    /// The roots for `--cwd` and `--store`; creates nothing.
    pub fn new(location: &Location) -> Result<Roots, Failure> {
        let cwd = location.cwd.canonicalize().map_err(|e| {
            Failure::invalid(format!("--cwd {}: {e}", location.cwd.display()))
                .with_hint("pass an existing directory inside the repository to serve")
        })?;
        let (root, is_repository) = match Repo::discover(&cwd) {
            Ok(repo) => (resolve(&repo.root()), true),
            Err(_) => (cwd, false),
        };
        let store = match &location.store {
            Some(store) => resolve(&absolute(store)?),
            None => resolve(&root.join(".ctxpack")),
        };
        Ok(Roots {
            root,
            store,
            is_repository,
        })
    }

    /// The location the snapshot tools run against: the root and the store, fixed.
    pub fn location(&self) -> Location {
        Location {
            cwd: self.root.clone(),
            store: Some(self.store.clone()),
        }
    }

    /// Resolves the path argument `name` (`given`) and refuses it unless it stays inside the
    /// root or the store directory (invalid input, exit 2).
    pub fn confine(&self, name: &str, given: &str) -> Result<PathBuf, Failure> {
        if given.is_empty() {
            return Err(Failure::invalid(format!("`{name}` is empty")));
        }
        let path = Path::new(given);
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(self.escape(name, given, None));
        }
        let joined = if path.is_absolute() {
            path.to_owned()
        } else {
            self.root.join(path)
        };
        let resolved = resolve(&joined);
        if resolved.starts_with(&self.root) || resolved.starts_with(&self.store) {
            Ok(resolved)
        } else {
            Err(self.escape(name, given, Some(&resolved)))
        }
    }

    fn escape(&self, name: &str, given: &str, resolved: Option<&Path>) -> Failure {
        let resolved = resolved
            .map(|r| format!(" (it resolves to {})", r.display()))
            .unwrap_or_else(|| " (it has a `..` component)".to_owned());
        Failure::new(
            FailureKind::InvalidInput,
            format!(
                "`{name}` {given:?} escapes the repository {} and the store {} this server was started for{resolved}",
                self.root.display(),
                self.store.display()
            ),
        )
        .with_hint("pass a path inside the repository, relative to its root (e.g. `app.ctxpack`)")
    }
}

/// `path` made absolute against the process's working directory.
fn absolute(path: &Path) -> Result<PathBuf, Failure> {
    std::path::absolute(path)
        .map_err(|e| Failure::invalid(format!("--store {}: {e}", path.display())))
}

/// Resolves an absolute path the way the file system would: every prefix that exists is
/// canonicalized (following symlinks), `..` pops, and the part that does not exist yet is
/// kept as written.
pub fn resolve(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => {
                out.push(part);
                if let Ok(canonical) = out.canonicalize() {
                    out = canonical;
                }
            }
        }
    }
    out
}
