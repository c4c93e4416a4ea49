//! Reading git: resolving references strictly, walking a commit's tree, reading blobs.
//!
//! References are resolved without revision syntax: `HEAD`, a full SHA, or a unique
//! hexadecimal prefix. A name like `main` or `v1.0` is rejected even when such a ref exists,
//! so a pack is always bound to an exact commit the caller named.

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

use crate::error::IndexError;

/// An open repository.
pub struct Repo {
    repo: gix::Repository,
}

/// What HEAD points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadInfo {
    /// The commit, if there is one.
    pub sha: Option<String>,
    /// The branch's short name, unless detached.
    pub branch: Option<String>,
    /// Whether HEAD is detached.
    pub detached: bool,
}

/// The kind of a tree entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular or executable file.
    File,
    /// A symbolic link (not followed).
    Symlink,
    /// A submodule commit (not descended into).
    Submodule,
}

impl EntryKind {
    /// The kind of an entry of `mode`; `None` for a tree.
    pub(crate) fn of(mode: gix::object::tree::EntryMode) -> Option<EntryKind> {
        Some(if mode.is_tree() {
            return None;
        } else if mode.is_commit() {
            EntryKind::Submodule
        } else if mode.is_link() {
            EntryKind::Symlink
        } else {
            EntryKind::File
        })
    }
}

/// A non-tree entry of a commit's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeEntry {
    /// `/`-separated path from the repository root, as text: see [`path_text`] for how a name
    /// that is not UTF-8 is written.
    pub path: String,
    /// The path's bytes as git stores them (what ignore rules match, as git matches them).
    pub raw_path: Vec<u8>,
    /// Blob (or commit, for submodules) id, hex.
    pub id: String,
    /// Its kind.
    pub kind: EntryKind,
}

/// One path that differs between two commits' trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeChange {
    /// `/`-separated path, as text (see [`path_text`]).
    pub path: String,
    /// The path's bytes as git stores them.
    pub raw_path: Vec<u8>,
    /// The entry's kind and id in the old tree, if it had a non-tree entry there.
    pub old: Option<(EntryKind, String)>,
    /// The entry's kind and id in the new tree, if it has a non-tree entry there.
    pub new: Option<(EntryKind, String)>,
}

/// Where and how a repository was opened: enough to open it again, on any thread (a handle
/// cannot cross threads), with the same trust and options.
#[derive(Clone)]
pub struct RepoSource {
    git_dir: PathBuf,
    options: gix::open::Options,
}

impl RepoSource {
    /// Opens the repository again.
    pub fn open(&self) -> Result<Repo, IndexError> {
        let repo = gix::open_opts(&self.git_dir, self.options.clone()).map_err(|e| {
            IndexError::NotARepository {
                path: self.git_dir.clone(),
                detail: e.to_string(),
            }
        })?;
        Ok(Repo { repo })
    }
}

/// Reads many objects in turn through a handle of its own, which it drops and opens again
/// before a read once [`ObjectReader::RELEASE_BYTES`] were read through it. A handle maps the
/// pack files it reads from, and every page it touches stays counted in the process's
/// resident memory until the handle is dropped: reading a large tree's blobs out of the packs
/// of a long history would otherwise keep gigabytes of them resident. Opening again costs
/// about a millisecond.
pub struct ObjectReader {
    source: RepoSource,
    repo: Repo,
    /// What was read (or charged for a header) since the handle was opened.
    read: u64,
    /// When to open the handle again: [`ObjectReader::RELEASE_BYTES`] but in tests.
    release_bytes: u64,
}

impl ObjectReader {
    /// How much is read through one handle before it is opened again.
    pub const RELEASE_BYTES: u64 = 64 << 20;
    /// What a header read is charged: about the pages it touches.
    const HEADER_BYTES: u64 = 8 << 10;

    /// A reader of the repository `source` opens, with a handle of its own.
    pub fn open(source: RepoSource) -> Result<ObjectReader, IndexError> {
        let repo = source.open()?;
        Ok(ObjectReader {
            source,
            repo,
            read: 0,
            release_bytes: Self::RELEASE_BYTES,
        })
    }

    /// The handle, for reads this reader does not count (a tree walk).
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// Drops the handle (unmapping what it mapped) and opens a new one.
    pub fn release(&mut self) -> Result<(), IndexError> {
        self.repo = self.source.open()?;
        self.read = 0;
        Ok(())
    }

    /// The handle to read through next: a new one once enough was read through this one. An
    /// object read is never lost to a failure to open the next handle.
    fn handle(&mut self, charge: u64) -> Result<&Repo, IndexError> {
        if self.read >= self.release_bytes {
            self.release()?;
        }
        self.read = self.read.saturating_add(charge);
        Ok(&self.repo)
    }

    /// [`Repo::read_blob`], counted.
    pub fn read_blob(&mut self, id: &str) -> Result<Vec<u8>, IndexError> {
        let bytes = self.handle(0)?.read_blob(id)?;
        self.read = self.read.saturating_add(bytes.len() as u64);
        Ok(bytes)
    }

    /// [`Repo::blob_size_if_present`], counted.
    pub fn blob_size_if_present(&mut self, id: &str) -> Result<Option<u64>, IndexError> {
        self.handle(Self::HEADER_BYTES)?.blob_size_if_present(id)
    }
}

fn git_err(e: impl std::fmt::Display) -> IndexError {
    IndexError::Git(e.to_string())
}

impl Repo {
    /// How to open the same repository again, with the options this handle was opened with.
    pub fn source(&self) -> RepoSource {
        RepoSource {
            git_dir: self.repo.git_dir().to_owned(),
            options: self.repo.open_options().clone(),
        }
    }

    /// Finds the repository containing `path`.
    pub fn discover(path: &Path) -> Result<Repo, IndexError> {
        let repo = gix::discover(path).map_err(|e| IndexError::NotARepository {
            path: path.to_owned(),
            detail: e.to_string(),
        })?;
        Ok(Repo { repo })
    }

    /// The worktree root (or the git directory of a bare repository).
    pub fn root(&self) -> PathBuf {
        self.repo
            .workdir()
            .unwrap_or_else(|| self.repo.git_dir())
            .to_owned()
    }

    /// The git directory and the common directory (a linked worktree's main repository's;
    /// otherwise the git directory again), as the repository was found: `.git` may be a
    /// `gitdir:` file or a link to either.
    pub fn git_dirs(&self) -> (PathBuf, PathBuf) {
        (
            self.repo.git_dir().to_owned(),
            self.repo.common_dir().to_owned(),
        )
    }

    /// The working tree's root, unless the repository is bare.
    pub fn workdir(&self) -> Option<PathBuf> {
        self.repo.workdir().map(Path::to_owned)
    }

    /// Another handle on the repository that keeps up to `bytes` of decoded objects in
    /// memory: walks that read many similar trees (a run of commits) read each once.
    pub fn with_object_cache(&self, bytes: usize) -> Repo {
        let mut repo = self.repo.clone();
        repo.object_cache_size_if_unset(bytes);
        Repo { repo }
    }

    /// The repository as gix opened it.
    pub(crate) fn gix(&self) -> &gix::Repository {
        &self.repo
    }

    /// HEAD's commit, branch and detachment.
    pub fn head(&self) -> Result<HeadInfo, IndexError> {
        let head = self.repo.head().map_err(git_err)?;
        let detached = head.is_detached();
        let branch = self
            .repo
            .head_name()
            .map_err(git_err)?
            .map(|name| name.shorten().to_str_lossy().into_owned());
        let sha = self.repo.head_id().ok().map(|id| id.to_string());
        Ok(HeadInfo {
            sha,
            branch,
            detached,
        })
    }

    /// Whether tracked files differ from HEAD (untracked files do not count).
    pub fn is_dirty(&self) -> bool {
        // A repository whose status cannot be computed (bare, damaged index) is treated as
        // clean: the pack reads committed objects either way.
        self.repo.workdir().is_some() && self.repo.is_dirty().unwrap_or(false)
    }

    /// Resolves `HEAD`, a full SHA or a unique hex prefix to a full commit SHA.
    pub fn resolve(&self, reference: &str) -> Result<String, IndexError> {
        if reference == "HEAD" {
            return self
                .repo
                .head_id()
                .map(|id| id.to_string())
                .map_err(|_| IndexError::EmptyRepository);
        }
        let is_hex = reference.len() >= 4
            && reference.len() <= 40
            && reference.bytes().all(|b| b.is_ascii_hexdigit());
        if !is_hex {
            return Err(IndexError::InvalidReference {
                reference: reference.to_owned(),
            });
        }
        let lower = reference.to_ascii_lowercase();
        let id = if lower.len() == 40 {
            gix::ObjectId::from_hex(lower.as_bytes()).map_err(|_| IndexError::InvalidReference {
                reference: reference.to_owned(),
            })?
        } else {
            let prefix =
                gix::hash::Prefix::from_hex(&lower).map_err(|_| IndexError::InvalidReference {
                    reference: reference.to_owned(),
                })?;
            match self
                .repo
                .objects
                .lookup_prefix(prefix, None)
                .map_err(git_err)?
            {
                Some(Ok(id)) => id,
                // Several objects share the prefix: it still names a commit when only one of
                // them is a commit (a blob or tree may share a commit's prefix).
                Some(Err(())) => self.only_commit(prefix, reference)?,
                None => {
                    return Err(IndexError::UnknownCommit {
                        reference: reference.to_owned(),
                    });
                }
            }
        };
        let header = self
            .repo
            .find_header(id)
            .map_err(|_| IndexError::UnknownCommit {
                reference: reference.to_owned(),
            })?;
        if header.kind() != gix::object::Kind::Commit {
            return Err(IndexError::NotACommit {
                reference: reference.to_owned(),
            });
        }
        Ok(id.to_string())
    }

    /// The one commit among the objects that start with `prefix`.
    fn only_commit(
        &self,
        prefix: gix::hash::Prefix,
        reference: &str,
    ) -> Result<gix::ObjectId, IndexError> {
        let mut candidates = std::collections::HashSet::new();
        self.repo
            .objects
            .lookup_prefix(prefix, Some(&mut candidates))
            .map_err(git_err)?;
        let mut commits = candidates.into_iter().filter(|id| {
            self.repo
                .find_header(*id)
                .is_ok_and(|h| h.kind() == gix::object::Kind::Commit)
        });
        match (commits.next(), commits.next()) {
            (Some(id), None) => Ok(id),
            (None, _) => Err(IndexError::NotACommit {
                reference: reference.to_owned(),
            }),
            (Some(_), Some(_)) => Err(IndexError::AmbiguousPrefix {
                reference: reference.to_owned(),
            }),
        }
    }

    /// The root tree of commit `sha`.
    pub(crate) fn commit_tree(&self, sha: &str) -> Result<gix::Tree<'_>, IndexError> {
        let object = |e: &dyn std::fmt::Display| IndexError::Object {
            id: sha.to_owned(),
            detail: e.to_string(),
        };
        let commit = self
            .repo
            .find_commit(object_id(sha)?)
            .map_err(|e| object(&e))?;
        commit.tree().map_err(|e| object(&e))
    }

    /// Every file, symlink and submodule entry of a commit's tree, sorted by path.
    pub fn tree_entries(&self, sha: &str) -> Result<Vec<TreeEntry>, IndexError> {
        let tree = self.commit_tree(sha)?;
        let mut recorder = gix::traverse::tree::Recorder::default();
        tree.traverse()
            .breadthfirst(&mut recorder)
            .map_err(|e| IndexError::Object {
                id: sha.to_owned(),
                detail: e.to_string(),
            })?;
        let mut entries: Vec<TreeEntry> = recorder
            .records
            .into_iter()
            .filter_map(|e| {
                Some(TreeEntry {
                    kind: EntryKind::of(e.mode)?,
                    path: path_text(&e.filepath),
                    raw_path: e.filepath.into(),
                    id: e.oid.to_string(),
                })
            })
            .collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    /// The entries that differ between the trees of commits `from` and `to`, one per path,
    /// sorted by path: what `from` had there and what `to` has (`None` when there is no file,
    /// link or submodule at the path). Only the trees that differ are read, so the cost
    /// follows the size of the change, not of the tree.
    pub fn tree_changes(&self, from: &str, to: &str) -> Result<Vec<TreeChange>, IndexError> {
        let (old, new) = (self.commit_tree(from)?, self.commit_tree(to)?);
        // The plain tree diff: `diff_tree_to_tree` also prepares for diffing blobs, which
        // reads the attributes of HEAD's whole tree (in a bare repository, by building an
        // index of it), a cost that grows with the tree rather than the change.
        let mut recorder = gix::diff::tree::Recorder::default();
        gix::diff::tree(
            gix::objs::TreeRefIter::from_bytes(&old.data, old.id.kind()),
            gix::objs::TreeRefIter::from_bytes(&new.data, new.id.kind()),
            &mut gix::diff::tree::State::default(),
            &self.repo.objects,
            &mut recorder,
        )
        .map_err(|e| IndexError::Object {
            id: to.to_owned(),
            detail: e.to_string(),
        })?;
        let side = |mode: gix::object::tree::EntryMode, id: gix::ObjectId| {
            Some((EntryKind::of(mode)?, id.to_string()))
        };
        let mut by_path: std::collections::BTreeMap<Vec<u8>, TreeChange> = Default::default();
        let mut record = |location: &gix::bstr::BStr,
                          old: Option<(EntryKind, String)>,
                          new: Option<(EntryKind, String)>| {
            if old.is_none() && new.is_none() {
                return;
            }
            let change = by_path
                .entry(location.to_vec())
                .or_insert_with(|| TreeChange {
                    path: path_text(location),
                    raw_path: location.to_vec(),
                    old: None,
                    new: None,
                });
            // A path that changes between a directory and a file is reported twice, once
            // for each side.
            if old.is_some() {
                change.old = old;
            }
            if new.is_some() {
                change.new = new;
            }
        };
        use gix::diff::tree::recorder::Change;
        for change in recorder.records {
            match change {
                Change::Addition {
                    path,
                    entry_mode,
                    oid,
                    ..
                } => record(path.as_ref(), None, side(entry_mode, oid)),
                Change::Deletion {
                    path,
                    entry_mode,
                    oid,
                    ..
                } => record(path.as_ref(), side(entry_mode, oid), None),
                Change::Modification {
                    path,
                    previous_entry_mode,
                    previous_oid,
                    entry_mode,
                    oid,
                } => record(
                    path.as_ref(),
                    side(previous_entry_mode, previous_oid),
                    side(entry_mode, oid),
                ),
            }
        }
        let mut out: Vec<TreeChange> = by_path.into_values().collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// The size of a blob in bytes, without reading it.
    pub fn blob_size(&self, id: &str) -> Result<u64, IndexError> {
        self.blob_size_if_present(id)?
            .ok_or_else(|| IndexError::Object {
                id: id.to_owned(),
                detail: "the object is not in the repository".to_owned(),
            })
    }

    /// The size of a blob in bytes, without reading it, or `None` when the repository does
    /// not hold the object (an object that is there but cannot be read is an error).
    pub fn blob_size_if_present(&self, id: &str) -> Result<Option<u64>, IndexError> {
        let header = self
            .repo
            .try_find_header(object_id(id)?)
            .map_err(|e| IndexError::Object {
                id: id.to_owned(),
                detail: e.to_string(),
            })?;
        Ok(header.map(|h| h.size()))
    }

    /// A blob's content.
    pub fn read_blob(&self, id: &str) -> Result<Vec<u8>, IndexError> {
        let blob = self
            .repo
            .find_blob(object_id(id)?)
            .map_err(|e| IndexError::Object {
                id: id.to_owned(),
                detail: e.to_string(),
            })?;
        Ok(blob.detach().data)
    }

    /// The first-parent-agnostic ancestors of `sha` (itself excluded), nearest first, at most
    /// `limit`. A shallow boundary or missing object ends the walk quietly.
    pub fn ancestors(&self, sha: &str, limit: usize) -> Vec<String> {
        let Ok(id) = object_id(sha) else {
            return Vec::new();
        };
        let Ok(walk) = self.repo.rev_walk([id]).all() else {
            return Vec::new();
        };
        walk.skip(1)
            .take(limit)
            .map_while(Result::ok)
            .map(|info| info.id.to_string())
            .collect()
    }
}

/// A commit's parents and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitInfo {
    /// Full SHA.
    pub sha: String,
    /// Parent SHAs.
    pub parents: Vec<String>,
    /// The raw message (subject, body, trailers).
    pub message: String,
}

impl Repo {
    /// A commit's parents and message.
    pub fn commit_info(&self, sha: &str) -> Result<CommitInfo, IndexError> {
        let commit = self
            .repo
            .find_commit(object_id(sha)?)
            .map_err(|e| IndexError::Object {
                id: sha.to_owned(),
                detail: e.to_string(),
            })?;
        let message = commit
            .message_raw()
            .map_err(|e| IndexError::Object {
                id: sha.to_owned(),
                detail: e.to_string(),
            })?
            .to_str_lossy()
            .into_owned();
        Ok(CommitInfo {
            sha: sha.to_owned(),
            parents: commit.parent_ids().map(|id| id.to_string()).collect(),
            message,
        })
    }

    /// Whether the repository is a shallow clone: its history ends at a boundary that
    /// fetching more can move.
    pub fn is_shallow(&self) -> bool {
        // When it cannot be told, as shallow: nothing is stored that could be incomplete.
        self.repo.is_shallow().unwrap_or(true)
    }

    /// `sha` and its ancestors in the walk's deterministic order, at most `limit`.
    pub fn history(&self, sha: &str, limit: usize) -> Vec<String> {
        let mut out = Vec::with_capacity(limit.min(4096));
        out.push(sha.to_owned());
        out.extend(self.ancestors(sha, limit.saturating_sub(1)));
        out
    }
}

/// A tree path as text. A UTF-8 path is itself, unless it holds U+FFFD (the replacement
/// character). Otherwise every byte that is not part of valid UTF-8, and every byte of a
/// U+FFFD, is written as U+FFFD followed by the byte in two upper-case hex digits: `caf\xE9.rs`
/// becomes `caf\u{FFFD}E9.rs`. Since U+FFFD never stands for itself, the text decodes back to
/// exactly one byte path, so two names that differ only in bytes that are not UTF-8 (which a
/// lossy decoding would merge) stay two paths and two citations.
pub fn path_text(raw: &[u8]) -> String {
    use std::fmt::Write as _;
    const REPLACEMENT: char = '\u{FFFD}';
    let mut out = String::with_capacity(raw.len());
    let escape = |out: &mut String, bytes: &[u8]| {
        for b in bytes {
            write!(out, "{REPLACEMENT}{b:02X}").expect("writing to a String cannot fail");
        }
    };
    for chunk in raw.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            if c == REPLACEMENT {
                escape(&mut out, &chunk.valid().as_bytes()[i..i + c.len_utf8()]);
            } else {
                out.push(c);
            }
        }
        escape(&mut out, chunk.invalid());
    }
    out
}

fn object_id(hex: &str) -> Result<gix::ObjectId, IndexError> {
    gix::ObjectId::from_hex(hex.as_bytes()).map_err(|_| IndexError::InvalidReference {
        reference: hex.to_owned(),
    })
}

/// What git tracks.
impl Repo {
    /// Whether git tracks anything at `rel` (a path relative to the root, `/`-separated): in
    /// HEAD's tree or in the index (staged). A store that git tracks came with the repository,
    /// so its contents are not ctxpack's own.
    pub fn tracks(&self, rel: &str) -> bool {
        let in_head = self
            .repo
            .head_commit()
            .ok()
            .and_then(|commit| commit.tree().ok())
            .is_some_and(|tree| tree.lookup_entry_by_path(rel).ok().flatten().is_some());
        if in_head {
            return true;
        }
        // The index is read without verifying its checksum (hashing all of it cost a pack
        // 0.5-1 ms on a repository of 2,300 files): the question is only which paths it
        // lists, and one that cannot be read lists none, as before. It is read on this thread,
        // and no allocation its bytes ask for may exceed four times its size (an entry takes
        // less room in memory than that); a crafted one fails to read instead.
        let path = self.repo.index_path();
        let Ok(size) = std::fs::metadata(&path).map(|m| m.len()) else {
            return false;
        };
        let limit = usize::try_from(size.saturating_mul(4).saturating_add(1 << 20)).ok();
        let prefix = format!("{rel}/");
        gix::index::File::at(
            path,
            self.repo.object_hash(),
            true,
            gix::index::decode::Options {
                thread_limit: Some(1),
                min_extension_block_in_bytes_for_threading: 0,
                expected_checksum: None,
                alloc_limit_bytes: limit,
            },
        )
        .is_ok_and(|index| {
            index.entries().iter().any(|e| {
                let path = e.path(&index);
                path == rel.as_bytes() || path.starts_with(prefix.as_bytes())
            })
        })
    }
}

#[cfg(test)]
mod tests {

    use super::{ObjectReader, Repo, path_text};

    /// Reads a path text back into bytes (the inverse of `path_text`).
    fn path_bytes(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c == '\u{FFFD}' {
                let hex = &rest[c.len_utf8()..c.len_utf8() + 2];
                out.push(u8::from_str_radix(hex, 16).expect("two hex digits follow U+FFFD"));
                rest = &rest[c.len_utf8() + 2..];
            } else {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                rest = &rest[c.len_utf8()..];
            }
        }
        out
    }

    #[test]
    fn path_text_keeps_utf8_and_escapes_other_bytes_reversibly() {
        let cases: &[(&[u8], &str)] = &[
            (b"src/main.rs", "src/main.rs"),
            (
                "dir with spaces/naïve café.rs".as_bytes(),
                "dir with spaces/naïve café.rs",
            ),
            (b"caf\xe9.rs", "caf\u{FFFD}E9.rs"),
            (b"caf\xe8.rs", "caf\u{FFFD}E8.rs"),
            // A truncated sequence is escaped byte by byte.
            (b"x\xf0\x9f.rs", "x\u{FFFD}F0\u{FFFD}9F.rs"),
            // A literal replacement character is escaped too, so it never stands for itself.
            (
                "caf\u{FFFD}E9.rs".as_bytes(),
                "caf\u{FFFD}EF\u{FFFD}BF\u{FFFD}BDE9.rs",
            ),
            (b"\xff/\xfe", "\u{FFFD}FF/\u{FFFD}FE"),
        ];
        for (raw, text) in cases {
            assert_eq!(path_text(raw), *text, "{raw:?}");
            assert_eq!(path_bytes(text), *raw, "{text}");
        }
        // Names a lossy decoding merges stay apart.
        let texts: std::collections::HashSet<String> =
            cases.iter().map(|(raw, _)| path_text(raw)).collect();
        assert_eq!(texts.len(), cases.len());
    }

    fn git(dir: &std::path::Path, args: &[&str], stdin: Option<&[u8]>) -> String {
        ctxpack_testkit::git::git_stdin(dir, args, stdin.unwrap_or_default())
    }

    /// `--at` takes a hexadecimal prefix that is unique among commits, even when a blob shares
    /// it: a blob is made (by search) whose id starts with the commit's first four digits.
    #[test]
    fn a_prefix_unique_among_commits_resolves_despite_a_blob_sharing_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        git(dir, &["init", "-q"], None);
        std::fs::write(dir.join("a.txt"), "a\n").expect("write");
        git(dir, &["add", "-A"], None);
        git(dir, &["commit", "-q", "-m", "a"], None);
        let head = git(dir, &["rev-parse", "HEAD"], None);
        let prefix = &head[..4];
        let content = (0u64..)
            .map(|n| format!("blob {n}\n"))
            .find(|text| {
                gix::objs::compute_hash(
                    gix::hash::Kind::Sha1,
                    gix::object::Kind::Blob,
                    text.as_bytes(),
                )
                .expect("hashes")
                .to_string()
                .starts_with(prefix)
            })
            .expect("some blob shares a four-digit prefix");
        let blob = git(
            dir,
            &["hash-object", "-w", "--stdin"],
            Some(content.as_bytes()),
        );
        assert!(blob.starts_with(prefix));
        let repo = Repo::discover(dir).expect("a repository");
        assert_eq!(repo.resolve(prefix).expect("resolves"), head);
        // The blob's own full id is not a commit.
        assert!(repo.resolve(&blob).is_err());
    }

    /// A reader that opens its handle again before every read (as it does after 64 MiB) reads
    /// the same blobs and sizes as a plain handle, from loose objects and from a pack, and
    /// says so when an object is missing.
    #[test]
    fn an_object_reader_reads_the_same_across_reopened_handles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = dir.path();
        git(dir, &["init", "-q"], None);
        let mut ids = Vec::new();
        for n in 0..20 {
            let content = format!("blob {n}\n").repeat(n + 1);
            ids.push((
                git(
                    dir,
                    &["hash-object", "-w", "--stdin"],
                    Some(content.as_bytes()),
                ),
                content,
            ));
        }
        let repo = Repo::discover(dir).expect("open");
        for packed in [false, true] {
            if packed {
                git(dir, &["repack", "-adq"], None);
                git(dir, &["prune-packed"], None);
            }
            let mut reader = ObjectReader::open(repo.source()).expect("open");
            reader.release_bytes = 1;
            for (id, content) in &ids {
                assert_eq!(
                    reader.blob_size_if_present(id).expect("size"),
                    Some(content.len() as u64)
                );
                assert_eq!(reader.read_blob(id).expect("read"), content.as_bytes());
                // Only this read is counted: the handle was opened again before it.
                assert_eq!(reader.read, content.len() as u64);
            }
            let missing = "0123456789abcdef0123456789abcdef01234567";
            assert_eq!(reader.blob_size_if_present(missing).expect("size"), None);
            assert!(reader.read_blob(missing).is_err());
        }
    }
}
