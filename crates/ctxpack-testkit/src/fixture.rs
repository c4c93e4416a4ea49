//! A repository a test may write to: a temporary copy of a built script.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::script::Script;
use crate::{cache, git};

/// A git repository in a temporary directory of its own, removed when dropped.
#[derive(Debug)]
pub struct Fixture {
    root: PathBuf,
    _dir: tempfile::TempDir,
    /// The number of the next commit, which dates it.
    next: AtomicU64,
}

impl Default for Fixture {
    fn default() -> Fixture {
        Fixture::new()
    }
}

impl Fixture {
    /// An empty repository on branch `main`.
    pub fn new() -> Fixture {
        Script::new().build().checkout()
    }

    /// A copy of the repository at `from` whose next commit is commit number `next`.
    pub(crate) fn copy_of(from: &Path, next: u64) -> Fixture {
        let dir = tempfile::tempdir().expect("a temporary directory");
        cache::copy(from, dir.path());
        Fixture {
            root: dir
                .path()
                .canonicalize()
                .expect("the temporary directory has a canonical path"),
            _dir: dir,
            next: AtomicU64::new(next),
        }
    }

    /// A repository something else made in `dir` (a shell script, say), removed with it.
    pub fn adopt(dir: tempfile::TempDir) -> Fixture {
        let root = dir
            .path()
            .canonicalize()
            .expect("the temporary directory has a canonical path");
        // Later commits are dated after every commit already there.
        let next = git::git(&root, &["rev-list", "--count", "--all"])
            .parse()
            .unwrap_or(0);
        Fixture {
            root,
            _dir: dir,
            next: AtomicU64::new(next),
        }
    }

    /// The repository's root (canonical).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The default store directory, `.ctxpack` at the root.
    pub fn store(&self) -> PathBuf {
        self.root.join(".ctxpack")
    }

    /// Runs git in the repository and returns its trimmed standard output.
    pub fn git(&self, args: &[&str]) -> String {
        git::git(&self.root, args)
    }

    /// Writes a file, making its directories.
    pub fn write(&self, path: &str, bytes: impl AsRef<[u8]>) {
        let full = self.root.join(path);
        let parent = full.parent().expect("a file has a parent directory");
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("mkdir {}: {e}", parent.display()));
        std::fs::write(&full, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", full.display()));
    }

    /// Removes a file, link or directory if it is there.
    pub fn remove(&self, path: &str) {
        let full = self.root.join(path);
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&full),
            Ok(_) => std::fs::remove_file(&full),
            Err(_) => return,
        }
        .unwrap_or_else(|e| panic!("removing {}: {e}", full.display()));
    }

    /// Commits everything in the working tree (`git add -A`) at the next fixed date and
    /// returns the new `HEAD`.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.commit_staged(message, &[])
    }

    /// Commits what is staged, with more arguments to `git commit` (`--allow-empty`, say),
    /// at the next fixed date, and returns the new `HEAD`.
    pub fn commit_staged(&self, message: &str, args: &[&str]) -> String {
        let date = git::date(self.next.fetch_add(1, Ordering::Relaxed));
        let mut all = vec!["commit", "-q", "-m", message];
        all.extend_from_slice(args);
        git::git_env(
            &self.root,
            &all,
            &[("GIT_AUTHOR_DATE", &date), ("GIT_COMMITTER_DATE", &date)],
        );
        self.head()
    }

    /// The commit `HEAD` names.
    pub fn head(&self) -> String {
        git::head(&self.root).unwrap_or_else(|| self.git(&["rev-parse", "HEAD"]))
    }
}
