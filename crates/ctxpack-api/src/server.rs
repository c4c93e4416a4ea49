//! What a ctxpack server serves and to whom: the registry of repositories and access tokens in
//! its state directory, token checks, and the workspace each request runs against.
//!
//! A token is `ctxp_` + a 12-hex-digit id + `_` + 64 hex digits (256 random bits from the
//! operating system). Only the SHA-256 digest of the whole token is stored; a request's token
//! is looked up by its id and its digest compared in constant time, so a check costs a hash
//! and one indexed read (a slow password hash would dominate a pack's latency, and 256 random
//! bits need no stretching). Every refusal — malformed, unknown, wrong secret, expired,
//! revoked — is the same [`Denied`] to the caller, so a front end reveals nothing about which.
//!
//! Each registered repository is served from its own store under the state directory
//! (`stores/NAME`), never from a directory inside the repository, and only while its path lies
//! under one of the roots the operator allows. The registry lives in the state directory's
//! `registry.sqlite`, or in PostgreSQL ([`ServerRegistry::open_database`]), which then also
//! keeps the ledger and the snapshots, each process's store becoming a cache of them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxpack_store::LedgerStore;
use ctxpack_store::registry::{Registry, RegistryRows, RepoRow, TokenRow};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq as _;

use crate::error::{Error, ErrorKind, Hint, Result};
use crate::limits::LedgerQuota;
use crate::session::{SessionLimits, Sessions};
use crate::workspace::{Access, Workspace, WorkspaceOptions};

/// What a token lets its holder do with its repository; each scope includes the ones before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Packs, queries, snapshots, the ledger and document reads.
    Read,
    /// Also indexing and document writes.
    Write,
    /// Everything, including what a later release adds for operators.
    Admin,
}

impl Scope {
    /// `read`, `write` or `admin`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Write => "write",
            Scope::Admin => "admin",
        }
    }

    /// The scope with this name.
    pub fn parse(name: &str) -> Option<Scope> {
        match name {
            "read" => Some(Scope::Read),
            "write" => Some(Scope::Write),
            "admin" => Some(Scope::Admin),
            _ => None,
        }
    }
}

/// A registered repository.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RepoInfo {
    /// Its name in URLs and tokens.
    pub name: String,
    /// Its path on the server; empty for one registered by URL.
    pub path: PathBuf,
    /// The git URL it was registered by (without credentials), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Unix seconds when it was registered.
    pub created: i64,
}

/// A token as listed: everything but its secret.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TokenInfo {
    /// Its name, recorded in the ledger with every pack it asks for.
    pub name: String,
    /// The public part of the token (`ctxp_ID_…`).
    pub id: String,
    /// Its repository.
    pub repo: String,
    /// Its scope.
    pub scope: &'static str,
    /// Unix seconds when it was created.
    pub created: i64,
    /// Unix seconds after which it is refused, if ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<i64>,
    /// Unix seconds when it was revoked, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked: Option<i64>,
}

/// A request for a new token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequest {
    /// Its name: unique, 1–64 characters of `A-Z a-z 0-9 . _ -`.
    pub name: String,
    /// The registered repository it grants access to.
    pub repo: String,
    /// What it may do there.
    pub scope: Scope,
    /// Seconds from now until it expires; `None` for never.
    pub expires_in: Option<u64>,
}

/// A new token: shown once, never stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewToken {
    /// The whole token, for the `Authorization: Bearer` header.
    pub secret: String,
    /// What was stored.
    pub info: TokenInfo,
}

/// What a checked token grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The token's name.
    pub token: String,
    /// Its repository.
    pub repo: String,
    /// Its scope.
    pub scope: Scope,
}

impl Grant {
    /// Whether it allows `scope` on `repo`.
    pub fn allows(&self, repo: &str, scope: Scope) -> bool {
        self.repo == repo && self.scope >= scope
    }
}

/// 256 random bits from the operating system, as 64 hex digits: a session id, a per-run
/// secret.
pub fn random_secret() -> Result<String> {
    let mut random = [0u8; 32];
    fill_random(&mut random)?;
    Ok(hex(&random))
}

fn fill_random(bytes: &mut [u8]) -> Result<()> {
    getrandom::fill(bytes)
        .map_err(|e| Error::internal(format!("the operating system gave no random bytes: {e}")))
}

/// A token was refused: missing, malformed, unknown, wrong, expired or revoked. Which one is
/// deliberately not said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denied;

/// The registry of a server: its repositories and tokens (in the state directory's SQLite
/// database, or in PostgreSQL), and where the packs it answers are recorded.
#[derive(Debug)]
pub struct ServerRegistry {
    dir: PathBuf,
    rows: Box<dyn RegistryRows>,
    /// The database that records packs, when it is not each store's own ledger.
    database: Option<ctxpack_pg::Database>,
    /// The git URL schemes repositories may be registered and fetched by.
    schemes: Vec<String>,
    /// The packs each token may record a day, when they are limited.
    quota: Option<Arc<LedgerQuota>>,
    /// What each token's sessions were shown: this process's memory, or the database that
    /// every process of the server shares.
    sessions: Sessions,
}

fn default_schemes() -> Vec<String> {
    crate::remote::DEFAULT_SCHEMES
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

const PREFIX: &str = "ctxp_";
const ID_HEX: usize = 12;
const SECRET_HEX: usize = 64;

impl ServerRegistry {
    /// Opens the registry of the state directory `dir`, creating it when `create` is set.
    pub fn open(dir: &Path, create: bool) -> Result<ServerRegistry> {
        let rows = Registry::open(dir, create).map_err(|e| match e {
            ctxpack_store::StoreError::NotFound { .. } => {
                Error::not_found(format!("no ctxpack server state at {}", dir.display()))
                    .with_field("state")
                    .with_hint(Hint::Advice(
                        "register a repository first, which creates it".into(),
                    ))
            }
            other => other.into(),
        })?;
        Ok(ServerRegistry {
            dir: dir.to_owned(),
            rows: Box::new(rows),
            database: None,
            sessions: Sessions::in_memory(),
            schemes: default_schemes(),
            quota: None,
        })
    }

    /// Opens the registry in the PostgreSQL database at `url` (migrating it forward; a
    /// database written by a newer ctxpack is refused), which also records every pack the
    /// server answers. The stores stay under the state directory `dir`.
    pub fn open_database(url: &str, dir: &Path) -> Result<ServerRegistry> {
        let database = ctxpack_pg::Database::connect(url).map_err(|e| match e {
            ctxpack_store::StoreError::Unsupported { found, supported, .. } => Error::new(
                ErrorKind::Damaged,
                format!(
                    "the database's ctxpack schema is at version {found}; this ctxpack reads up to {supported}"
                ),
            )
            .with_hint(Hint::Advice(
                "a newer ctxpack migrated this database: upgrade ctxpack".into(),
            )),
            other => other.into(),
        })?;
        ctxpack_store::registry::create_state_dir(dir)?;
        Ok(ServerRegistry {
            dir: dir.to_owned(),
            rows: Box::new(database.registry()),
            sessions: Sessions::new(
                Arc::new(database.sessions(SessionLimits::default())),
                String::new(),
            ),
            database: Some(database),
            schemes: default_schemes(),
            quota: None,
        })
    }

    /// The same registry, registering and fetching repositories by git URL only with these
    /// schemes (`https` unless this is called).
    pub fn with_schemes(mut self, schemes: Vec<String>) -> Result<ServerRegistry> {
        crate::remote::check_schemes(&schemes)?;
        self.schemes = schemes;
        Ok(self)
    }

    /// The same registry, limiting the packs each token may record a day to `per_day`.
    pub fn with_ledger_quota(mut self, per_day: u64) -> ServerRegistry {
        self.quota = Some(Arc::new(LedgerQuota::new(per_day)));
        self
    }

    /// Registers the repository at the git URL `url` as `name`: clones it into the state
    /// directory (so a URL that cannot be cloned is refused now), as every server process
    /// does again on first use of it.
    pub fn add_repo_url(&self, name: &str, url: &str) -> Result<RepoInfo> {
        check_name("name", name)?;
        crate::remote::check_url(url, &self.schemes)?;
        if self.rows().repo(name)?.is_some() {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("a repository named `{name}` is already registered"),
            )
            .with_field("name"));
        }
        let dir = self.checkout_dir(name);
        crate::remote::ensure_clone(url, &dir, &self.schemes)?;
        let row = RepoRow {
            name: name.to_owned(),
            path: PathBuf::new(),
            created: now(),
            url: Some(url.to_owned()),
            git_dir: None,
            common_dir: None,
        };
        self.rows().add_repo(&row)?;
        Ok(repo_info(row))
    }

    fn rows(&self) -> &dyn RegistryRows {
        self.rows.as_ref()
    }

    /// Registers the git repository containing `path` as `name`.
    pub fn add_repo(&self, name: &str, path: &Path) -> Result<RepoInfo> {
        check_name("name", name)?;
        let workspace = Workspace::open(WorkspaceOptions {
            cwd: path.to_owned(),
            store: Some(self.store_dir(name)),
            access: Access::ReadOnly,
            caller: None,
        })
        .map_err(|e| e.with_field("path"))?;
        let root = workspace.repo_root().ok_or_else(|| {
            Error::invalid_field(
                "path",
                format!("{} is not in a git repository", path.display()),
            )
        })?;
        let (git_dir, common_dir) = workspace.git_dirs().map_err(|e| e.with_field("path"))?;
        let row = RepoRow {
            name: name.to_owned(),
            path: root.to_owned(),
            created: now(),
            url: None,
            git_dir: Some(git_dir),
            common_dir: Some(common_dir),
        };
        self.rows().add_repo(&row)?;
        Ok(repo_info(row))
    }

    /// Unregisters a repository, revokes its tokens by deleting them and removes its store
    /// (with a database, the store is this process's cache; the snapshots and the ledger
    /// stay in the database).
    pub fn remove_repo(&self, name: &str) -> Result<()> {
        check_name("name", name)?;
        if !self.rows().remove_repo(name)? {
            return Err(unknown_repo(name));
        }
        for dir in [
            self.store_dir(name),
            self.documents_dir(name),
            self.checkout_dir(name),
        ] {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&dir, &e)),
            }
        }
        Ok(())
    }

    /// Every registered repository, by name.
    pub fn repos(&self) -> Result<Vec<RepoInfo>> {
        Ok(self.rows().repos()?.into_iter().map(repo_info).collect())
    }

    /// Creates a token; its secret is in the result and nowhere else.
    pub fn create_token(&self, request: &TokenRequest) -> Result<NewToken> {
        check_name("name", &request.name)?;
        if self.rows().repo(&request.repo)?.is_none() {
            return Err(unknown_repo(&request.repo).with_field("repo"));
        }
        let created = now();
        let expires = match request.expires_in {
            None => None,
            Some(seconds) => Some(
                i64::try_from(seconds)
                    .ok()
                    .and_then(|s| created.checked_add(s))
                    .ok_or_else(|| Error::invalid_field("expires", "too far in the future"))?,
            ),
        };
        let mut random = [0u8; ID_HEX / 2 + SECRET_HEX / 2];
        fill_random(&mut random)?;
        let id = hex(&random[..ID_HEX / 2]);
        let secret = format!("{PREFIX}{id}_{}", hex(&random[ID_HEX / 2..]));
        let row = TokenRow {
            id,
            name: request.name.clone(),
            digest: Sha256::digest(secret.as_bytes()).to_vec(),
            repo: request.repo.clone(),
            scope: request.scope.name().to_owned(),
            created,
            expires,
            revoked: None,
        };
        self.rows().add_token(&row)?;
        Ok(NewToken {
            secret,
            info: token_info(row),
        })
    }

    /// Every token, by name, revoked ones included.
    pub fn tokens(&self) -> Result<Vec<TokenInfo>> {
        Ok(self.rows().tokens()?.into_iter().map(token_info).collect())
    }

    /// Revokes the token named `name`: it is refused from the next request on.
    pub fn revoke_token(&self, name: &str) -> Result<()> {
        if self.rows().revoke_token(name, now())? {
            return Ok(());
        }
        Err(Error::not_found(format!(
            "no token named `{name}` that is not revoked already"
        ))
        .with_field("name")
        .with_hint(Hint::Advice("list the tokens to see their names".into())))
    }

    /// Checks a bearer token at time `now` (Unix seconds).
    pub fn authenticate(&self, token: &str, now: i64) -> std::result::Result<Grant, Denied> {
        let rest = token.strip_prefix(PREFIX).ok_or(Denied)?;
        let (id, secret) = rest.split_once('_').ok_or(Denied)?;
        if id.len() != ID_HEX
            || secret.len() != SECRET_HEX
            || !(id.bytes().chain(secret.bytes())).all(|b| b.is_ascii_hexdigit())
        {
            return Err(Denied);
        }
        let row = self.rows().token(id).map_err(|_| Denied)?.ok_or(Denied)?;
        let digest = Sha256::digest(token.as_bytes());
        // Compared in time that depends on the lengths only.
        if !bool::from(digest.as_slice().ct_eq(&row.digest))
            || row.revoked.is_some()
            || row.expires.is_some_and(|at| now >= at)
        {
            return Err(Denied);
        }
        let scope = Scope::parse(&row.scope).ok_or(Denied)?;
        Ok(Grant {
            token: row.name,
            repo: row.repo,
            scope,
        })
    }

    /// The workspace a request with `grant` runs against, recording packs as built for the
    /// grant's token: the repository's own checkout read, its store under the state directory
    /// written — at read scope only the ledger. Fails when the repository is not registered or
    /// no longer lies under one of `roots`.
    pub fn workspace(&self, grant: &Grant, roots: &[PathBuf]) -> Result<Workspace> {
        let repo = grant.repo.as_str();
        let row = self.rows().repo(repo)?.ok_or_else(|| unknown_repo(repo))?;
        if let Some(url) = &row.url {
            // The server's own clone: no root applies, the allowed schemes do.
            let dir = self.checkout_dir(repo);
            crate::remote::ensure_clone(url, &dir, &self.schemes)?;
            let workspace = self.open_workspace(grant, dir)?;
            return Ok(workspace.with_remote(url.clone(), self.schemes.clone()));
        }
        let path = row
            .path
            .canonicalize()
            .map_err(|e| Error::io(&row.path, &e))?;
        if !roots.iter().any(|root| path.starts_with(root)) {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "repository `{repo}` at {} lies outside the roots this server allows",
                    path.display()
                ),
            )
            .with_hint(Hint::Advice(
                "start the server with a root that contains it".into(),
            )));
        }
        let workspace = self.open_workspace(grant, path)?;
        // What is read is the git directory `.git` leads to, which a `gitdir:` file or a link
        // may put anywhere: it must lie under the roots too, and be the one registered.
        let (git_dir, common_dir) = workspace.git_dirs()?;
        if ![&git_dir, &common_dir]
            .iter()
            .all(|dir| roots.iter().any(|root| dir.starts_with(root)))
        {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "repository `{repo}` reads a git directory outside the roots this server allows"
                ),
            )
            .with_hint(Hint::Advice(
                "its `.git` leads outside the roots: serve a repository whose git directory is under a root".into(),
            )));
        }
        if let (Some(registered), Some(registered_common)) = (&row.git_dir, &row.common_dir)
            && (registered != &git_dir || registered_common != &common_dir)
        {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "repository `{repo}`'s git directory is not the one it was registered with"
                ),
            )
            .with_hint(Hint::Advice(
                "if the change is yours, register it again (`ctxpack serve repo remove`, then `serve repo add`)".into(),
            )));
        }
        Ok(workspace)
    }

    /// `error` as a token holder may see it: the paths of the server's own files (its state
    /// directory, the stores, clones and document stores in it, the registered checkouts and
    /// the roots) named by what they are to a client — the repository's registered name —
    /// never by where they are on the server.
    pub fn public_error(&self, roots: &[PathBuf], error: Error) -> Error {
        let mut names: Vec<(String, String)> = Vec::new();
        let mut name = |path: &Path, what: String| {
            names.push((path.display().to_string(), what.clone()));
            if let Ok(canonical) = path.canonicalize()
                && canonical != path
            {
                names.push((canonical.display().to_string(), what));
            }
        };
        for row in self.rows().repos().unwrap_or_default() {
            let repo = &row.name;
            name(&self.store_dir(repo), format!("[store of {repo}]"));
            name(&self.checkout_dir(repo), format!("[repository {repo}]"));
            name(&self.documents_dir(repo), format!("[documents of {repo}]"));
            for dir in [
                Some(&row.path),
                row.git_dir.as_ref(),
                row.common_dir.as_ref(),
            ]
            .into_iter()
            .flatten()
            .filter(|dir| !dir.as_os_str().is_empty())
            {
                name(dir, format!("[repository {repo}]"));
            }
        }
        name(&self.dir, "[server state]".into());
        for root in roots {
            name(root, "[server root]".into());
        }
        // The most specific first: a store's path before the state directory holding it.
        names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        names.dedup_by(|a, b| a.0 == b.0);
        error.map_text(|text| {
            let mut text = text.to_owned();
            for (path, what) in &names {
                text = replace_path(&text, path, what);
            }
            text
        })
    }

    /// The workspace of the grant's repository at `path`.
    fn open_workspace(&self, grant: &Grant, path: PathBuf) -> Result<Workspace> {
        let repo = grant.repo.as_str();
        let workspace = Workspace::open(WorkspaceOptions {
            cwd: path,
            store: Some(self.store_dir(repo)),
            access: if grant.scope >= Scope::Write {
                Access::ReadWrite
            } else {
                Access::ReadAndRecord
            },
            caller: Some(format!("serve:{}", grant.token)),
        })?
        .with_document_root(self.documents_dir(repo));
        let workspace = match &self.quota {
            Some(quota) => workspace.with_ledger_quota(quota.clone(), &grant.token),
            None => workspace,
        };
        // A token's sessions are its own, in its repository.
        let workspace =
            workspace.with_sessions(self.sessions.for_owner(format!("{repo}/{}", grant.token)));
        Ok(match &self.database {
            Some(database) => workspace
                .with_ledger(Arc::new(database.ledger(repo)) as Arc<dyn LedgerStore>)
                .with_snapshots(database.snapshots(repo)),
            None => workspace,
        })
    }

    fn store_dir(&self, repo: &str) -> PathBuf {
        self.dir.join("stores").join(repo)
    }

    /// Where this process keeps its clone of a repository registered by URL.
    fn checkout_dir(&self, repo: &str) -> PathBuf {
        self.dir.join("checkouts").join(format!("{repo}.git"))
    }

    /// Where the repository's document stores are (with a database, their caches).
    fn documents_dir(&self, repo: &str) -> PathBuf {
        self.dir.join("documents").join(repo)
    }
}

/// `text` with every mention of the path `path` (followed by a separator or by what cannot
/// continue a file name's component: the end, a space, a quote, `:`, `,`, `)`, a full stop
/// that ends a sentence) as `what`.
fn replace_path(text: &str, path: &str, what: &str) -> String {
    if path.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(path) {
        let after = &rest[at + path.len()..];
        let mut next = after.chars();
        let ends = match next.next() {
            None => true,
            // A full stop ends a sentence, or continues a name (`lib.git`).
            Some('.') => next.next().is_none_or(char::is_whitespace),
            Some(c) => matches!(c, '/' | ':' | ',' | ')' | '`' | '\'' | '"') || c.is_whitespace(),
        };
        out.push_str(&rest[..at]);
        out.push_str(if ends { what } else { path });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Unix seconds now.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn check_name(field: &str, name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !name.starts_with('.');
    if ok {
        return Ok(());
    }
    Err(Error::invalid_field(
        field,
        format!("`{name}` is not a name: use 1–64 of A-Z a-z 0-9 . _ -, not starting with a dot"),
    ))
}

fn unknown_repo(name: &str) -> Error {
    Error::not_found(format!("no repository named `{name}` is registered")).with_hint(Hint::Advice(
        "list the registered repositories, or register this one".into(),
    ))
}

fn repo_info(row: RepoRow) -> RepoInfo {
    RepoInfo {
        name: row.name,
        path: row.path,
        url: row.url.as_deref().map(crate::remote::redact),
        created: row.created,
    }
}

fn token_info(row: TokenRow) -> TokenInfo {
    TokenInfo {
        name: row.name,
        id: row.id,
        repo: row.repo,
        scope: Scope::parse(&row.scope).map_or("unknown", Scope::name),
        created: row.created,
        expires: row.expires,
        revoked: row.revoked,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, ServerRegistry) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = dir.path().join("repo");
        ctxpack_testkit::Script::new().build().checkout_at(&repo);
        let registry = ServerRegistry::open(&dir.path().join("state"), true).expect("registry");
        registry.add_repo("app", &repo).expect("register");
        (dir, registry)
    }

    fn request(name: &str, scope: Scope, expires_in: Option<u64>) -> TokenRequest {
        TokenRequest {
            name: name.into(),
            repo: "app".into(),
            scope,
            expires_in,
        }
    }

    #[test]
    fn a_token_grants_its_scope_until_it_expires_or_is_revoked() {
        let (_dir, registry) = fixture();
        let token = registry
            .create_token(&request("ci", Scope::Write, Some(60)))
            .expect("token");
        assert_eq!(token.secret.len(), PREFIX.len() + ID_HEX + 1 + SECRET_HEX);
        let grant = registry.authenticate(&token.secret, now()).expect("valid");
        assert!(grant.allows("app", Scope::Read) && grant.allows("app", Scope::Write));
        assert!(!grant.allows("app", Scope::Admin) && !grant.allows("other", Scope::Read));
        assert_eq!(grant.token, "ci");
        // Expired.
        assert_eq!(
            registry.authenticate(&token.secret, now() + 61),
            Err(Denied)
        );
        // One digit of the secret changed.
        let mut wrong = token.secret.clone().into_bytes();
        let last = wrong.len() - 1;
        wrong[last] = if wrong[last] == b'0' { b'1' } else { b'0' };
        let wrong = String::from_utf8(wrong).expect("ASCII");
        assert_eq!(registry.authenticate(&wrong, now()), Err(Denied));
        for malformed in ["", "ctxp_", "Bearer x", "ctxp_zz_zz", &token.secret[..20]] {
            assert_eq!(registry.authenticate(malformed, now()), Err(Denied));
        }
        registry.revoke_token("ci").expect("revoke");
        assert_eq!(registry.authenticate(&token.secret, now()), Err(Denied));
        assert_eq!(
            registry.revoke_token("ci").expect_err("twice").kind(),
            ErrorKind::NotFound
        );
        // Nothing stored holds the secret.
        let listed = registry.tokens().expect("list");
        assert_eq!(listed.len(), 1);
        assert!(!format!("{listed:?}").contains(&token.secret[PREFIX.len() + ID_HEX + 1..]));
    }

    /// A server's state directory is its owner's alone.
    #[test]
    fn the_state_directory_is_created_for_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("a/state");
        drop(ServerRegistry::open(&state, true).expect("registry"));
        for created in [&state, &dir.path().join("a")] {
            let mode = std::fs::metadata(created)
                .expect("made")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "{}", created.display());
        }
    }

    #[test]
    fn names_repositories_and_roots_are_checked() {
        let (dir, registry) = fixture();
        for bad in ["", ".hidden", "a/b", "../x", &"x".repeat(65)] {
            let error = registry
                .create_token(&request(bad, Scope::Read, None))
                .expect_err("bad name");
            assert_eq!(error.field(), Some("name"), "{bad:?}");
        }
        let error = registry
            .create_token(&TokenRequest {
                repo: "nope".into(),
                ..request("x", Scope::Read, None)
            })
            .expect_err("unknown repository");
        assert_eq!(error.kind(), ErrorKind::NotFound);
        let root = dir.path().canonicalize().expect("canonical");
        let grant = Grant {
            token: "t".into(),
            repo: "app".into(),
            scope: Scope::Read,
        };
        let workspace = registry
            .workspace(&grant, std::slice::from_ref(&root))
            .expect("inside the root");
        assert_eq!(workspace.access(), Access::ReadAndRecord);
        let elsewhere = root.join("state");
        let error = registry
            .workspace(&grant, &[elsewhere])
            .expect_err("outside the roots");
        assert!(error.message().contains("outside the roots"), "{error}");
        assert!(
            registry
                .add_repo("loose", &dir.path().join("state"))
                .is_err()
        );
    }

    /// What is read is the git directory `.git` leads to: a `gitdir:` file or a link to one
    /// outside the roots is refused on every open, and so is a `.git` that leads somewhere
    /// other than where it led at registration (another repository under the roots).
    #[test]
    fn a_git_directory_outside_the_roots_or_changed_since_registration_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let roots = base.join("roots");
        let outside = base.join("outside");
        ctxpack_testkit::Script::new()
            .write("secret.txt", "outside the roots\n")
            .commit("outside")
            .build()
            .checkout_at(&outside);
        for name in ["app", "other"] {
            ctxpack_testkit::Script::new()
                .write("README.md", name)
                .commit(name)
                .build()
                .checkout_at(&roots.join(name));
        }
        let by_file = roots.join("by-file");
        std::fs::create_dir_all(&by_file).expect("dir");
        std::fs::write(
            by_file.join(".git"),
            format!("gitdir: {}\n", outside.join(".git").display()),
        )
        .expect("a gitdir file");
        let by_link = roots.join("by-link");
        std::fs::create_dir_all(&by_link).expect("dir");
        std::os::unix::fs::symlink(outside.join(".git"), by_link.join(".git")).expect("a link");
        let registry = ServerRegistry::open(&base.join("state"), true).expect("registry");
        let grant = |repo: &str| Grant {
            token: "t".into(),
            repo: repo.into(),
            scope: Scope::Read,
        };
        for (name, path) in [("by-file", &by_file), ("by-link", &by_link)] {
            registry.add_repo(name, path).expect("register");
            let error = registry
                .workspace(&grant(name), std::slice::from_ref(&roots))
                .expect_err("a git directory outside the roots");
            assert!(error.message().contains("outside the roots"), "{error}");
            assert!(
                !error.message().contains("outside/"),
                "a server path: {error}"
            );
        }
        registry
            .add_repo("app", &roots.join("app"))
            .expect("register");
        registry
            .workspace(&grant("app"), std::slice::from_ref(&roots))
            .expect("as registered");
        // `.git` now leads to another repository under the roots.
        std::fs::rename(roots.join("app/.git"), base.join("app.git")).expect("move");
        std::os::unix::fs::symlink(roots.join("other/.git"), roots.join("app/.git"))
            .expect("a link");
        let error = registry
            .workspace(&grant("app"), std::slice::from_ref(&roots))
            .expect_err("another repository's git directory");
        assert!(error.message().contains("registered with"), "{error}");
    }
}
