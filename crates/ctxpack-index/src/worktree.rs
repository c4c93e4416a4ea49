//! The working tree as it is now, against HEAD: which files changed, were added or deleted.
//!
//! `git status` decides (through gix): tracked files that differ from HEAD, staged or not,
//! and untracked files that `.gitignore`, `.git/info/exclude` and `core.excludesFile` do not
//! ignore. Nothing is read through a symbolic link: a changed path that is a link, or lies
//! below one, is reported as such and never opened.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use gix::bstr::ByteSlice;
use gix::status::UntrackedFiles;

use crate::error::IndexError;
use crate::git::{EntryKind, Repo, path_text};

/// Most working-tree files a pack reads, and most bytes in all: past either, the rest are
/// counted as `worktree_limit` and left to the committed snapshot.
pub const MAX_WORKTREE_FILES: usize = 5_000;
/// See [`MAX_WORKTREE_FILES`].
pub const MAX_WORKTREE_BYTES: u64 = 64 * 1024 * 1024;

/// How the working tree differs from HEAD.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorktreeChanges {
    /// Files that differ from HEAD or are new, with their current bytes, by path.
    pub files: BTreeMap<String, WorktreeFile>,
    /// Paths of HEAD's tree that are gone from the working tree.
    pub deleted: BTreeSet<String>,
    /// Changed paths not read, by reason (`symlink`, `too_large`, `worktree_limit`, …).
    pub skipped: BTreeMap<String, u64>,
    /// How many of `files` HEAD has (modified) and does not have (new).
    pub modified: usize,
    /// See `modified`.
    pub added: usize,
    /// Tracked files whose content the status read because their stat alone did not say
    /// whether they changed (a stat that differs from the index's): none in a checkout whose
    /// files are as git wrote them, however new.
    pub contents_read: usize,
}

/// A changed file of the working tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorktreeFile {
    /// Its path as git stores it (what ignore rules match).
    pub raw_path: Vec<u8>,
    /// Its content, or `None` when it is over the size limit (counted as `too_large`).
    pub bytes: Option<Vec<u8>>,
}

impl Repo {
    /// The working tree's changes against the tree of commit `head` (HEAD's), reading each
    /// changed regular file of at most `max_file_bytes`. A bare repository has none.
    pub fn worktree_changes(
        &self,
        head: &str,
        max_file_bytes: u64,
    ) -> Result<WorktreeChanges, IndexError> {
        let mut changes = WorktreeChanges::default();
        let Some(root) = self.workdir() else {
            return Ok(changes);
        };
        let head_tree = self.commit_tree(head)?;
        let repo = self.gix();
        // A file whose stat (size, times, inode) is what the index recorded is unchanged,
        // even when it was written in the same second as the index (as every file of a fresh
        // clone is): git calls such entries racily clean and compares their content, and would
        // write the index back so the next status need not. A pack never writes the user's
        // index (it would race git's own lock), so it would read the whole tree on every
        // call; it trusts the stat instead, which an edit that keeps the size within the
        // second the index was written fools, as it fools every stat-based status.
        let mut index: gix::index::File = (**repo
            .index_or_empty()
            .map_err(|e| IndexError::Git(format!("cannot read the index: {e}")))?)
        .clone();
        // Later than any time an index entry can hold (seconds in 32 bits): no entry is racy.
        index.set_timestamp(filetime::FileTime::from_unix_time(1 << 33, 0));
        // The index's cached tree of the whole index, when git left it valid, is the tree
        // of what is staged: equal to HEAD's, nothing is staged, and comparing the two trees
        // file by file (reading every tree object of HEAD) says nothing more. Git trusts the
        // cache the same way when it writes a commit's tree.
        let staged_is_head = index.tree().is_some_and(|cached| {
            cached.id == head_tree.id
                && cached.num_entries == u32::try_from(index.entries().len()).ok()
        });
        let failed =
            |e: &dyn std::fmt::Display| IndexError::Git(format!("cannot compute the status: {e}"));
        let status = repo
            .status(gix::progress::Discard)
            .map_err(|e| failed(&e))?
            .index(gix::worktree::IndexPersistedOrInMemory::InMemory(index))
            .head_tree(head_tree.id)
            .untracked_files(UntrackedFiles::Files)
            .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
            .index_worktree_submodules(gix::status::Submodule::Given {
                ignore: gix::submodule::config::Ignore::All,
                check_dirty: false,
            });
        let mut paths: BTreeSet<Vec<u8>> = BTreeSet::new();
        // An entry with no summary is only an index entry's stat to refresh, or a directory
        // entry that is not new.
        let outcome = if staged_is_head {
            let mut items = status
                .into_index_worktree_iter(None)
                .map_err(|e| failed(&e))?;
            for item in &mut items {
                let item = item.map_err(|e| failed(&e))?;
                if item.summary().is_some() {
                    paths.insert(item.rela_path().to_vec());
                }
            }
            items.into_outcome()
        } else {
            let mut items = status.into_iter(None).map_err(|e| failed(&e))?;
            for item in &mut items {
                let item = item.map_err(|e| failed(&e))?;
                if let gix::status::Item::IndexWorktree(change) = &item
                    && change.summary().is_none()
                {
                    continue;
                }
                paths.insert(item.location().to_vec());
            }
            items.into_outcome()
        };
        if let Some(outcome) = outcome {
            changes.contents_read = outcome
                .index_worktree
                .tracked_file_modification
                .worktree_files_read;
        }
        let kinds = HeadKinds::of(self, head, &head_tree, &paths)?;
        let mut read_bytes = 0u64;
        for raw in paths {
            let path = path_text(&raw);
            let in_head = kinds.kind(&raw, head)?;
            if in_head == Some(EntryKind::Submodule) {
                continue;
            }
            let Some(rel) = raw.to_str().ok().map(Path::new) else {
                *changes.skipped.entry("unreadable_name".into()).or_default() += 1;
                continue;
            };
            match file_kind(&root, rel) {
                FileKind::Missing => {
                    if in_head.is_some() {
                        changes.deleted.insert(path);
                    }
                    continue;
                }
                FileKind::Link => {
                    // A link is never read; a tracked file replaced by one leaves the snapshot.
                    if in_head.is_some() {
                        changes.deleted.insert(path);
                    }
                    *changes.skipped.entry("symlink".into()).or_default() += 1;
                    continue;
                }
                FileKind::Other => continue,
                FileKind::File(len) => {
                    if changes.files.len() >= MAX_WORKTREE_FILES
                        || read_bytes.saturating_add(len.min(max_file_bytes)) > MAX_WORKTREE_BYTES
                    {
                        *changes.skipped.entry("worktree_limit".into()).or_default() += 1;
                        continue;
                    }
                    let bytes = if len > max_file_bytes {
                        *changes.skipped.entry("too_large".into()).or_default() += 1;
                        None
                    } else {
                        match read_bounded(&root.join(rel), max_file_bytes) {
                            Some(bytes) => {
                                read_bytes += bytes.len() as u64;
                                Some(bytes)
                            }
                            None => {
                                *changes.skipped.entry("unreadable".into()).or_default() += 1;
                                continue;
                            }
                        }
                    };
                    if in_head.is_some() {
                        changes.modified += 1;
                    } else {
                        changes.added += 1;
                    }
                    changes.files.insert(
                        path,
                        WorktreeFile {
                            raw_path: raw,
                            bytes,
                        },
                    );
                }
            }
        }
        Ok(changes)
    }
}

/// Paths at most this many are looked up in HEAD's tree one by one; more, and the tree is
/// listed once.
const HEAD_LOOKUPS: usize = 256;

/// The kind of what HEAD's tree holds at the paths a status found changed.
enum HeadKinds<'repo> {
    /// Its whole listing, by path.
    Listed(BTreeMap<Vec<u8>, EntryKind>),
    /// The tree, to look paths up in.
    Tree(&'repo gix::Tree<'repo>),
}

impl<'repo> HeadKinds<'repo> {
    /// Looks `changed` up in `tree` (commit `head`'s): one by one when they are few, for a
    /// status whose cost follows the size of the change; by listing the tree when many are.
    fn of(
        repo: &Repo,
        head: &str,
        tree: &'repo gix::Tree<'repo>,
        changed: &BTreeSet<Vec<u8>>,
    ) -> Result<HeadKinds<'repo>, IndexError> {
        if changed.len() <= HEAD_LOOKUPS {
            return Ok(HeadKinds::Tree(tree));
        }
        Ok(HeadKinds::Listed(
            repo.tree_entries(head)?
                .into_iter()
                .map(|e| (e.raw_path, e.kind))
                .collect(),
        ))
    }

    /// What HEAD (commit `head`) holds at `path`: `None` for nothing, or a directory.
    fn kind(&self, path: &[u8], head: &str) -> Result<Option<EntryKind>, IndexError> {
        match self {
            HeadKinds::Listed(kinds) => Ok(kinds.get(path).copied()),
            HeadKinds::Tree(tree) => {
                let entry = tree.lookup_entry(path.split(|b| *b == b'/')).map_err(|e| {
                    IndexError::Object {
                        id: head.to_owned(),
                        detail: e.to_string(),
                    }
                })?;
                Ok(entry.and_then(|e| EntryKind::of(e.mode())))
            }
        }
    }
}

/// What is at a path of the working tree, never following a link on the way.
enum FileKind {
    Missing,
    Link,
    Other,
    File(u64),
}

fn file_kind(root: &Path, rel: &Path) -> FileKind {
    let mut at = root.to_owned();
    let mut components = rel.components().peekable();
    while let Some(component) = components.next() {
        let std::path::Component::Normal(name) = component else {
            return FileKind::Other;
        };
        at.push(name);
        let Ok(meta) = std::fs::symlink_metadata(&at) else {
            return FileKind::Missing;
        };
        if meta.file_type().is_symlink() {
            return FileKind::Link;
        }
        if components.peek().is_none() {
            return if meta.is_file() {
                FileKind::File(meta.len())
            } else {
                FileKind::Other
            };
        }
        if !meta.is_dir() {
            return FileKind::Missing;
        }
    }
    FileKind::Other
}

/// A regular file's bytes, at most `limit` of them (`None` if it cannot be read or grew past
/// the limit since it was measured).
fn read_bounded(path: &Path, limit: u64) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= limit).then_some(bytes)
}
