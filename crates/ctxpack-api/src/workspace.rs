//! The workspace: a repository (when there is one) and its store, opened once with its
//! options; every operation hangs off it.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use ctxpack_core::{Pack, RenderOptions};
use ctxpack_index::git::Repo;
use ctxpack_store::{LedgerStore, RecordContext, Store, StoreError, WriterLock};

use crate::config::report::EffectiveConfig;
use crate::error::{Error, ErrorKind, Result, no_store};
use crate::limits::LedgerQuota;
use crate::session::Sessions;

/// Whether a workspace may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads only: stores are opened read-only, no lock is taken, nothing is created and no
    /// pack is recorded in the ledger. Operations that write fail with invalid input.
    ReadOnly,
    /// Reads only, as [`ReadOnly`](Access::ReadOnly), but records every pack in the ledger:
    /// what a server's read scope does, so its ledger shows what every client was shown.
    /// Nothing else is written: a commit that is not indexed is reported, never indexed.
    ReadAndRecord,
    /// Reads only, as [`ReadOnly`](Access::ReadOnly), but a pack of a commit that is not
    /// indexed yet indexes it first, into the repository's store (creating it if needed): the
    /// index is derived from the repository's own commits, a cache. Nothing else is written: no
    /// ledger record, artifact, document, setting or hook. What a local MCP server at read
    /// scope does, so an agent packing a new commit gets that commit.
    ReadAndIndex,
    /// Reads and writes: indexing, artifacts, documents, and a ledger record of every pack.
    #[default]
    ReadWrite,
}

/// How to open a [`Workspace`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceOptions {
    /// A path inside the repository (default `.`).
    pub cwd: PathBuf,
    /// The store directory (default: `.ctxpack` at the repository root).
    pub store: Option<PathBuf>,
    /// Whether the workspace may write.
    pub access: Access,
    /// The name recorded as the surface of the packs it builds (for example `mcp`); by
    /// default each pack records the operation that built it (`pack`, `docs context`, `plan`,
    /// `select`).
    pub caller: Option<String>,
}

impl Default for WorkspaceOptions {
    fn default() -> Self {
        WorkspaceOptions {
            cwd: PathBuf::from("."),
            store: None,
            access: Access::default(),
            caller: None,
        }
    }
}

/// A repository and its store.
///
/// Opening a workspace reads nothing from the store: the store may not exist yet (indexing
/// creates it). The repository is opened again by each operation that needs it, so a
/// workspace is cheap to share between threads.
#[derive(Clone, Debug)]
pub struct Workspace {
    /// The repository root (canonical), when `cwd` is inside a repository.
    repo_root: Option<PathBuf>,
    /// The canonical `cwd`.
    cwd: PathBuf,
    /// The store directory, as it will be opened.
    store_dir: PathBuf,
    /// Whether the caller named the store (rather than taking the repository's default).
    store_named: bool,
    access: Access,
    caller: Option<String>,
    /// The effective configuration recorded with every pack, when the caller gave one.
    config: Option<EffectiveConfig>,
    /// Where packs are recorded, when not in the store's own ledger.
    pub(crate) ledger: Option<Arc<dyn LedgerStore>>,
    /// The quota of packs recorded a day, and the token it counts (a server's workspaces).
    quota: Option<(Arc<LedgerQuota>, String)>,
    /// The system of record of its snapshots, when the store is a cache of a database's.
    pub(crate) snapshots: Option<ctxpack_pg::PgSnapshots>,
    /// The system of record of its document collections, when the store is a cache of a
    /// database's.
    pub(crate) documents: Option<ctxpack_pg::PgDocuments>,
    /// Where a server keeps the repository's document stores, by name.
    pub(crate) document_root: Option<PathBuf>,
    /// Whether this is a server's document store, which a write creates when missing.
    pub(crate) created_on_write: bool,
    /// The git URL (and the schemes allowed) the repository, a server's bare clone, is
    /// fetched from before each index.
    pub(crate) remote: Option<(String, Vec<String>)>,
    /// Where the sessions packs name are kept, when not in the store's own files.
    sessions: Option<Sessions>,
}

impl Workspace {
    /// Opens the workspace of the repository containing `options.cwd`. A `cwd` outside any
    /// repository is accepted: operations on its store (documents, the ledger) work when the
    /// store is named, and operations that need a repository fail with invalid input.
    pub fn open(options: WorkspaceOptions) -> Result<Workspace> {
        let cwd = options.cwd.canonicalize().map_err(|e| {
            Error::invalid_field("cwd", format!("{}: {e}", options.cwd.display())).with_hint(
                crate::error::Hint::Advice(
                    "give an existing directory inside the repository".into(),
                ),
            )
        })?;
        let repo_root = Repo::discover(&cwd).ok().map(|repo| resolve(&repo.root()));
        let store_named = options.store.is_some();
        let store_dir = match &options.store {
            Some(store) => absolute(store)?,
            None => repo_root.as_deref().unwrap_or(&cwd).join(".ctxpack"),
        };
        Ok(Workspace {
            repo_root,
            cwd,
            store_dir,
            store_named,
            access: options.access,
            caller: options.caller,
            config: None,
            ledger: None,
            quota: None,
            snapshots: None,
            documents: None,
            document_root: None,
            created_on_write: false,
            remote: None,
            sessions: None,
        })
    }

    /// A workspace over a store directory alone, with no repository: for document
    /// collections, artifacts and the ledger.
    pub fn for_store(store: &Path, access: Access) -> Result<Workspace> {
        let cwd = std::env::current_dir().map_err(|e| Error::io(Path::new("."), &e))?;
        Ok(Workspace {
            repo_root: None,
            cwd,
            store_dir: absolute(store)?,
            store_named: true,
            access,
            caller: None,
            config: None,
            ledger: None,
            quota: None,
            snapshots: None,
            documents: None,
            document_root: None,
            created_on_write: false,
            remote: None,
            sessions: None,
        })
    }

    /// The same workspace with another caller name recorded in the ledger.
    pub fn with_caller(mut self, caller: impl Into<String>) -> Workspace {
        self.caller = Some(caller.into());
        self
    }

    /// The same workspace recording `config` — the effective configuration its packs are
    /// built with, each value with its source — in the ledger record of every pack.
    pub fn with_config(mut self, config: EffectiveConfig) -> Workspace {
        self.config = Some(config);
        self
    }

    /// The same workspace recording its packs in `ledger` (and reading its log from there)
    /// instead of the store's own ledger: a server's ledger in its database.
    pub fn with_ledger(mut self, ledger: Arc<dyn LedgerStore>) -> Workspace {
        self.ledger = Some(ledger);
        self
    }

    /// Counts the packs this workspace records against `token`'s share of `quota`.
    pub fn with_ledger_quota(mut self, quota: Arc<LedgerQuota>, token: &str) -> Workspace {
        self.quota = Some((quota, token.to_owned()));
        self
    }

    /// The same workspace keeping the sessions its packs name in `sessions`: a process's
    /// memory for a local MCP server, the database for a server's processes.
    pub fn with_sessions(mut self, sessions: Sessions) -> Workspace {
        self.sessions = Some(sessions);
        self
    }

    /// Where the sessions packs name are kept: those given, or else files in the store
    /// directory, which only a workspace that writes keeps.
    pub(crate) fn sessions(&self) -> Result<Sessions> {
        if let Some(sessions) = &self.sessions {
            return Ok(sessions.clone());
        }
        if self.access != Access::ReadWrite {
            return Err(Error::invalid_field(
                "session",
                "this workspace writes nothing to its store, so it keeps no session; pack without one, or in a workspace that may write",
            ));
        }
        Ok(Sessions::new(
            Arc::new(ctxpack_store::FileSessions::new(
                &self.store_dir,
                crate::SessionLimits::default(),
            )),
            String::new(),
        ))
    }

    /// Whether a pack shown with `rendering` would be recorded here.
    fn records(&self, rendering: Option<&RenderOptions>) -> bool {
        rendering.is_some() && !matches!(self.access, Access::ReadOnly | Access::ReadAndIndex)
    }

    /// Fails, before anything is built, when a pack shown with `rendering` would be recorded
    /// past the workspace's quota.
    pub(crate) fn admit_record(&self, rendering: Option<&RenderOptions>) -> Result<()> {
        match &self.quota {
            Some((quota, token)) if self.records(rendering) => quota.admit(token, false),
            _ => Ok(()),
        }
    }

    /// The effective configuration recorded with each pack, if one was given.
    pub fn config(&self) -> Option<&EffectiveConfig> {
        self.config.as_ref()
    }

    /// Whether the workspace may write.
    pub fn access(&self) -> Access {
        self.access
    }

    /// The repository root, when there is a repository.
    pub fn repo_root(&self) -> Option<&Path> {
        self.repo_root.as_deref()
    }

    /// The store directory. Without a repository and without a named store there is none.
    pub fn store_dir(&self) -> Result<&Path> {
        if self.repo_root.is_none() && !self.store_named {
            return Err(self.not_a_repository());
        }
        Ok(&self.store_dir)
    }

    /// The store directory, checked before anything in it is opened: a store the caller did
    /// not name must not be a symbolic link (it would lead outside the repository) and must
    /// not be tracked by git (a committed store is the repository's content, not ctxpack's
    /// own: its chunks could be forged). A store the caller named is theirs to trust.
    pub(crate) fn store_root(&self) -> Result<&Path> {
        self.store_root_with(None)
    }

    /// [`Workspace::store_root`], asking git through `repo` when the caller has the repository
    /// open already (opening it reads all of git's configuration again).
    pub(crate) fn store_root_with(&self, repo: Option<&Repo>) -> Result<&Path> {
        let dir = self.store_dir()?;
        if !self.store_named {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Error::from(ctxpack_store::StoreError::Symlink {
                    path: dir.to_owned(),
                }));
            }
            let opened;
            let repo = match repo {
                Some(repo) => Some(repo),
                None => {
                    opened = self.repo().ok();
                    opened.as_ref()
                }
            };
            if let (Some(root), Some(repo)) = (&self.repo_root, repo)
                && let Ok(rel) = dir.strip_prefix(root)
                && repo.tracks(&rel.to_string_lossy())
            {
                return Err(Error::new(
                    ErrorKind::Damaged,
                    format!(
                        "the store {} is tracked by git: a store that comes with a repository is not trusted",
                        dir.display()
                    ),
                )
                .with_hint(crate::error::Hint::Advice(
                    "remove it from the repository, or name another store".into(),
                )));
            }
        }
        // Below the root, a link is never followed, whoever named the store.
        ctxpack_store::check_layout(dir)?;
        Ok(dir)
    }

    /// Whether the caller named the store rather than taking the repository's default.
    pub fn store_named(&self) -> bool {
        self.store_named
    }

    /// The repository's git directory and common directory, resolved (links followed):
    /// where its objects and references are read from, whatever `.git` names.
    pub fn git_dirs(&self) -> Result<(PathBuf, PathBuf)> {
        let (git_dir, common_dir) = self.repo()?.git_dirs();
        let resolved = |dir: PathBuf| dir.canonicalize().map_err(|e| Error::io(&dir, &e));
        Ok((resolved(git_dir)?, resolved(common_dir)?))
    }

    /// Opens the repository.
    pub(crate) fn repo(&self) -> Result<Repo> {
        match &self.repo_root {
            Some(root) => Ok(Repo::discover(root)?),
            None => Err(self.not_a_repository()),
        }
    }

    fn not_a_repository(&self) -> Error {
        match Repo::discover(&self.cwd) {
            Err(e) => Error::from(e),
            Ok(_) => Error::invalid(format!(
                "{} is not inside a git repository",
                self.cwd.display()
            )),
        }
    }

    /// Opens the store read-only; a missing store is `Ok(None)`.
    pub(crate) fn try_open_store(&self) -> Result<Option<Store>> {
        self.try_open_store_with(None)
    }

    /// [`Workspace::try_open_store`] with the repository the caller has open, if any.
    pub(crate) fn try_open_store_with(&self, repo: Option<&Repo>) -> Result<Option<Store>> {
        match Store::open(self.store_root_with(repo)?) {
            Ok(store) => Ok(Some(store)),
            Err(StoreError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens the store read-only; a missing store is not found, with a hint to create it.
    pub(crate) fn open_store(&self) -> Result<Store> {
        self.try_open_store()?
            .ok_or_else(|| no_store(self.store_dir.clone(), self.repo_root.is_none()))
    }

    /// Fails unless the workspace may write.
    pub(crate) fn require_write(&self, what: &str) -> Result<()> {
        match self.access {
            Access::ReadWrite => Ok(()),
            Access::ReadOnly | Access::ReadAndRecord | Access::ReadAndIndex => Err(Error::invalid(
                format!("{what} writes to the store, and this workspace is read-only"),
            )),
        }
    }

    /// Whether the workspace may index a commit: it may write, or it derives the index of
    /// what it packs.
    pub(crate) fn may_index(&self) -> bool {
        matches!(self.access, Access::ReadWrite | Access::ReadAndIndex)
    }

    /// Takes the writer lock and opens the store for writing. With `create`, a missing store
    /// directory is created; without it, a missing store is not found.
    pub(crate) fn writer(&self, what: &str, wait: bool, create: bool) -> Result<Writer> {
        self.require_write(what)?;
        let dir = self.store_root()?;
        if create {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        } else {
            // Check first, so a mistyped path is "not found" rather than a new store.
            drop(self.open_store()?);
        }
        let lock = WriterLock::acquire(dir, wait)?;
        let store = Store::open_or_create(dir)?;
        Ok(Writer { store, _lock: lock })
    }

    /// The surface a pack built by `operation` records.
    fn surface(&self, operation: &str) -> String {
        self.caller.clone().unwrap_or_else(|| operation.to_owned())
    }

    /// Records `pack`, built by `operation` and shown with `rendering`, in the ledger — when
    /// the workspace may write. A ledger that cannot be written does not fail the operation:
    /// the pack was built, and the failure is reported in [`Recorded::Failed`].
    pub(crate) fn record(
        &self,
        pack: &Pack,
        operation: &str,
        rendering: Option<&RenderOptions>,
        extra: RecordExtra,
    ) -> Recorded {
        let Some(rendering) = rendering else {
            return Recorded::NotAsked;
        };
        if !self.records(Some(rendering)) {
            return Recorded::NotAsked;
        }
        if let Some((quota, token)) = &self.quota
            && let Err(e) = quota.admit(token, true)
        {
            return Recorded::Failed(e);
        }
        let ledger = match self.ledger() {
            Ok(ledger) => ledger,
            Err(e) => return Recorded::Failed(e),
        };
        let context = RecordContext {
            surface: self.surface(operation),
            rendered: (
                rendering.format.name().to_owned(),
                rendering.view.name().to_owned(),
            ),
            parent: extra.parent,
            pretty: rendering.pretty,
            output: extra.output,
            config: self.config.as_ref().map(EffectiveConfig::to_ledger),
        };
        match ledger.append(pack, &context) {
            Ok(record) => Recorded::Stored(record.id),
            Err(e) => Recorded::Failed(e.into()),
        }
    }

    /// The workspace of the document store that the path argument `field` (`given`) names.
    ///
    /// Locally, `given` is a directory confined to the repository and its store (see
    /// [`Workspace::confine`]). On a server, it is a name (`app.ctxpack`, `team-notes`) in the
    /// repository's own place for document stores under the server's state directory — never
    /// a directory of the checkout, whose content is not the server's to trust — whose system
    /// of record is the server's database when it has one; its packs are recorded where the
    /// repository's are. Either way packs are recorded under this workspace's caller.
    pub fn document_store(&self, field: &str, given: &str) -> Result<Workspace> {
        let Some(root) = &self.document_root else {
            let dir = self.confine(field, given)?;
            let mut store = Workspace::for_store(&dir, self.access)?;
            store.caller = self.caller.clone();
            return Ok(store);
        };
        let name = document_store_name(field, given)?;
        let mut store = Workspace::for_store(&root.join(&name), self.access)?;
        store.ledger = Some(self.ledger()?);
        store.caller = self.caller.clone();
        store.documents = self.snapshots.as_ref().map(|s| s.documents(&name));
        store.created_on_write = true;
        Ok(store)
    }

    /// The same workspace, its repository a clone of `url` that each index fetches first,
    /// with only the git schemes in `schemes`.
    pub fn with_remote(mut self, url: String, schemes: Vec<String>) -> Workspace {
        self.remote = Some((url, schemes));
        self
    }

    /// The same workspace, keeping the document stores it names under `root` (a server's).
    pub fn with_document_root(mut self, root: PathBuf) -> Workspace {
        self.document_root = Some(root);
        self
    }

    /// Resolves the path argument `field` (`given`) and refuses it unless it stays inside the
    /// repository root (or `cwd`, without a repository) or the store directory.
    ///
    /// A path is resolved against the root, refused outright when it has a `..` component,
    /// and then resolved through the file system (every existing prefix is canonicalized, so a
    /// symlink that leads out is followed and caught).
    pub fn confine(&self, field: &str, given: &str) -> Result<PathBuf> {
        if given.is_empty() {
            return Err(Error::invalid_field(field, "the path is empty"));
        }
        let root = self.repo_root.as_deref().unwrap_or(&self.cwd);
        let store = resolve(&self.store_dir);
        let escape = |resolved: Option<&Path>| {
            let how = resolved.map_or_else(
                || " (it has a `..` component)".to_owned(),
                |r| format!(" (it resolves to {})", r.display()),
            );
            Error::invalid_field(
                field,
                format!(
                    "{given:?} escapes the repository {} and the store {}{how}",
                    root.display(),
                    store.display()
                ),
            )
            .with_hint(crate::error::Hint::Advice(
                "give a path inside the repository, relative to its root (e.g. `app.ctxpack`)"
                    .into(),
            ))
        };
        let path = Path::new(given);
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(escape(None));
        }
        let joined = if path.is_absolute() {
            path.to_owned()
        } else {
            root.join(path)
        };
        let resolved = resolve(&joined);
        if resolved.starts_with(root) || resolved.starts_with(&store) {
            Ok(resolved)
        } else {
            Err(escape(Some(&resolved)))
        }
    }
}

/// A store opened for writing, with the writer lock held until it is dropped.
#[derive(Debug)]
pub(crate) struct Writer {
    pub(crate) store: Store,
    _lock: WriterLock,
}

/// What a ledger record carries beyond the pack and its rendering.
#[derive(Clone, Debug, Default)]
pub(crate) struct RecordExtra {
    /// The record this pack is a new version of.
    pub(crate) parent: Option<String>,
    /// The exact output, when it is not a rendering of the pack.
    pub(crate) output: Option<String>,
}

/// Whether a pack was recorded in the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Not recorded: the caller did not ask, or the workspace is read-only.
    NotAsked,
    /// Recorded under this id.
    Stored(String),
    /// Recording failed (a read-only medium, a full disk); the pack itself is fine.
    Failed(Error),
}

impl Recorded {
    /// The record id, when the pack was recorded.
    pub fn id(&self) -> Option<&str> {
        match self {
            Recorded::Stored(id) => Some(id),
            _ => None,
        }
    }
}

/// `path` made absolute against the process's working directory.
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path)
        .map_err(|e| Error::invalid_field("store", format!("{}: {e}", path.display())))
}

/// Resolves an absolute path the way the file system would: every prefix that exists is
/// canonicalized (following symlinks), `..` pops, and the part that does not exist yet is
/// kept as written.
pub(crate) fn resolve(path: &Path) -> PathBuf {
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

/// A server's name for a document store: up to 64 ASCII letters, digits, `.`, `_` and `-`,
/// not starting with `.` — one directory, so one store never lies inside another.
fn document_store_name(field: &str, given: &str) -> Result<String> {
    let valid = !given.is_empty()
        && given.len() <= 64
        && !given.starts_with('.')
        && given
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(given.to_owned())
    } else {
        Err(
            Error::invalid_field(field, format!("{given:?} is not a document store name"))
                .with_hint(crate::error::Hint::Advice(
                    "on a server a document store is named, e.g. `app.ctxpack` or `team-notes`: \
                     up to 64 letters, digits, `.`, `_` and `-`"
                        .into(),
                )),
        )
    }
}
