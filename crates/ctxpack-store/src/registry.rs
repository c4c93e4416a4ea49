//! The registry of a ctxpack server: the repositories it serves and the access tokens it
//! accepts, in `registry.sqlite` inside the server's state directory.
//!
//! The store keeps rows; it interprets none of them: token secrets never reach it (only their
//! SHA-256 digests), and names, scopes and expiry are checked by the API. The format version
//! is the database's `user_version`; a registry written by a newer ctxpack is refused, as a
//! store is.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::StoreError;
use crate::db::sql_error;

/// The registry's database file inside the state directory.
pub const REGISTRY_FILE: &str = "registry.sqlite";

/// The newest registry format this build reads and writes.
pub const REGISTRY_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE repos (
    name TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    created INTEGER NOT NULL,
    url TEXT,
    git_dir TEXT,
    common_dir TEXT
);
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    digest BLOB NOT NULL,
    repo TEXT NOT NULL,
    scope TEXT NOT NULL,
    created INTEGER NOT NULL,
    expires INTEGER,
    revoked INTEGER
);
";

/// A registered repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepoRow {
    /// Its name in URLs.
    pub name: String,
    /// The repository's path on the server, as registered (canonical); empty for one
    /// registered by URL.
    pub path: PathBuf,
    /// Unix seconds when it was registered.
    pub created: i64,
    /// The git URL it was registered by, which each server clones into its own state.
    pub url: Option<String>,
    /// The git directory its path resolved to when it was registered (canonical; `.git` may
    /// be a `gitdir:` file or a link); `None` for one registered by URL or before it was
    /// recorded.
    pub git_dir: Option<PathBuf>,
    /// The common directory it resolved to then (a linked worktree's main git directory,
    /// otherwise the git directory again); `None` as for `git_dir`.
    pub common_dir: Option<PathBuf>,
}

/// A repository's paths as a registry stores them: its path, git directory and common
/// directory, each UTF-8.
pub type StoredPaths<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

impl RepoRow {
    /// Its paths as text, or a conflict naming the one that is not UTF-8 (`dir` is the
    /// registry's, for the error).
    pub fn stored_paths(&self, dir: &Path) -> Result<StoredPaths<'_>, StoreError> {
        fn text<'p>(dir: &Path, p: &'p Path) -> Result<&'p str, StoreError> {
            p.to_str().ok_or_else(|| StoreError::Conflict {
                dir: dir.to_owned(),
                detail: format!("{} is not valid UTF-8", p.display()),
            })
        }
        let text = |p| text(dir, p);
        Ok((
            text(&self.path)?,
            self.git_dir.as_deref().map(text).transpose()?,
            self.common_dir.as_deref().map(text).transpose()?,
        ))
    }
}

/// A token as stored: everything but its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRow {
    /// The public part of the token, which looks it up.
    pub id: String,
    /// A name for people and the ledger.
    pub name: String,
    /// SHA-256 of the whole token.
    pub digest: Vec<u8>,
    /// The repository it grants access to.
    pub repo: String,
    /// `read`, `write` or `admin`.
    pub scope: String,
    /// Unix seconds when it was created.
    pub created: i64,
    /// Unix seconds after which it is refused, if ever.
    pub expires: Option<i64>,
    /// Unix seconds when it was revoked, if it was.
    pub revoked: Option<i64>,
}

/// The rows of a server's registry, whatever keeps them: the interface both backends
/// implement (SQLite here, PostgreSQL in `ctxpack-pg`) and the conformance suite checks.
pub trait RegistryRows: Send + Sync + std::fmt::Debug {
    /// Registers a repository; [`StoreError::Conflict`] when the name is taken.
    fn add_repo(&self, row: &RepoRow) -> Result<(), StoreError>;
    /// Removes a repository and every token for it, in one transaction; whether it was
    /// registered.
    fn remove_repo(&self, name: &str) -> Result<bool, StoreError>;
    /// Every registered repository, by name.
    fn repos(&self) -> Result<Vec<RepoRow>, StoreError>;
    /// One registered repository.
    fn repo(&self, name: &str) -> Result<Option<RepoRow>, StoreError>;
    /// Stores a new token; [`StoreError::Conflict`] when its name or id is taken.
    fn add_token(&self, row: &TokenRow) -> Result<(), StoreError>;
    /// The token with this id.
    fn token(&self, id: &str) -> Result<Option<TokenRow>, StoreError>;
    /// Every token, by name.
    fn tokens(&self) -> Result<Vec<TokenRow>, StoreError>;
    /// Marks the token named `name` revoked at `now`; whether there was one not yet revoked.
    fn revoke_token(&self, name: &str, now: i64) -> Result<bool, StoreError>;
}

/// The registry database.
pub struct Registry {
    dir: PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// Creates a server's state directory (and any missing parent) readable by its owner alone
/// (mode 0700): it holds every repository's store, documents and clones, which token holders
/// reach only through the server. An existing directory is left as it is.
pub fn create_state_dir(dir: &Path) -> Result<(), StoreError> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|source| StoreError::Io {
        path: dir.to_owned(),
        source,
    })
}

impl Registry {
    /// Opens the registry in the state directory `dir`, creating both when `create` is set;
    /// otherwise a missing registry is [`StoreError::NotFound`].
    pub fn open(dir: &Path, create: bool) -> Result<Registry, StoreError> {
        if create {
            create_state_dir(dir)?;
        }
        for name in [
            REGISTRY_FILE,
            "registry.sqlite-wal",
            "registry.sqlite-shm",
            "registry.sqlite-journal",
        ] {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(StoreError::Symlink { path });
            }
        }
        let file = dir.join(REGISTRY_FILE);
        if !create && !file.is_file() {
            return Err(StoreError::NotFound {
                dir: dir.to_owned(),
            });
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let mut conn = Connection::open_with_flags(&file, flags).map_err(|e| sql_error(dir, e))?;
        configure(dir, &mut conn)?;
        Ok(Registry {
            dir: dir.to_owned(),
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while the lock was held left SQLite's state whole.
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |e| sql_error(&self.dir, e)
    }
}

fn configure(dir: &Path, conn: &mut Connection) -> Result<(), StoreError> {
    {
        let dir = dir.to_owned();
        let err = |e| sql_error(&dir, e);
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        conn.pragma_update(None, "trusted_schema", "OFF")
            .map_err(err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(err)?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(err)?;
        if !(0..=REGISTRY_VERSION).contains(&version) {
            return Err(StoreError::Unsupported {
                dir,
                found: version,
                supported: REGISTRY_VERSION,
            });
        }
        if version == 0 {
            let tx = conn.transaction().map_err(err)?;
            let tables: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(err)?;
            if tables > 0 {
                return Err(StoreError::Corrupt {
                    dir,
                    detail: "the registry has tables but no ctxpack format version".into(),
                });
            }
            tx.execute_batch(SCHEMA).map_err(err)?;
            tx.pragma_update(None, "user_version", REGISTRY_VERSION)
                .map_err(err)?;
            tx.commit().map_err(err)?;
        } else if version < REGISTRY_VERSION {
            let tx = conn.transaction().map_err(err)?;
            if version == 1 {
                // Version 2: repositories registered by git URL.
                tx.execute_batch("ALTER TABLE repos ADD COLUMN url TEXT")
                    .map_err(err)?;
            }
            // Version 3: the git directories a registered path resolved to.
            tx.execute_batch(
                "ALTER TABLE repos ADD COLUMN git_dir TEXT; \
                 ALTER TABLE repos ADD COLUMN common_dir TEXT;",
            )
            .map_err(err)?;
            tx.pragma_update(None, "user_version", REGISTRY_VERSION)
                .map_err(err)?;
            tx.commit().map_err(err)?;
        }
        Ok(())
    }
}

impl RegistryRows for Registry {
    fn add_repo(&self, row: &RepoRow) -> Result<(), StoreError> {
        let (path, git_dir, common_dir) = row.stored_paths(&self.dir)?;
        let added = self
            .conn()
            .execute(
                "INSERT INTO repos (name, path, created, url, git_dir, common_dir) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                params![row.name, path, row.created, row.url, git_dir, common_dir],
            )
            .map_err(self.err())?;
        if added == 0 {
            return Err(StoreError::Conflict {
                dir: self.dir.clone(),
                detail: format!("a repository named `{}` is already registered", row.name),
            });
        }
        Ok(())
    }

    fn remove_repo(&self, name: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| sql_error(&self.dir, e))?;
        let removed = tx
            .execute("DELETE FROM repos WHERE name = ?1", [name])
            .map_err(|e| sql_error(&self.dir, e))?;
        tx.execute("DELETE FROM tokens WHERE repo = ?1", [name])
            .map_err(|e| sql_error(&self.dir, e))?;
        tx.commit().map_err(|e| sql_error(&self.dir, e))?;
        Ok(removed > 0)
    }

    fn repos(&self) -> Result<Vec<RepoRow>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT name, path, created, url, git_dir, common_dir FROM repos ORDER BY name",
            )
            .map_err(self.err())?;
        let rows = statement
            .query_map([], repo_row)
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    fn repo(&self, name: &str) -> Result<Option<RepoRow>, StoreError> {
        self.conn()
            .prepare_cached(
                "SELECT name, path, created, url, git_dir, common_dir FROM repos WHERE name = ?1",
            )
            .map_err(self.err())?
            .query_row([name], repo_row)
            .optional()
            .map_err(self.err())
    }

    fn add_token(&self, row: &TokenRow) -> Result<(), StoreError> {
        let added = self
            .conn()
            .execute(
                "INSERT INTO tokens (id, name, digest, repo, scope, created, expires, revoked)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
                params![
                    row.id,
                    row.name,
                    row.digest,
                    row.repo,
                    row.scope,
                    row.created,
                    row.expires,
                    row.revoked
                ],
            )
            .map_err(self.err())?;
        if added == 0 {
            return Err(StoreError::Conflict {
                dir: self.dir.clone(),
                detail: format!("a token named `{}` already exists", row.name),
            });
        }
        Ok(())
    }

    fn token(&self, id: &str) -> Result<Option<TokenRow>, StoreError> {
        self.conn()
            .prepare_cached(
                "SELECT id, name, digest, repo, scope, created, expires, revoked
                 FROM tokens WHERE id = ?1",
            )
            .map_err(self.err())?
            .query_row([id], token_row)
            .optional()
            .map_err(self.err())
    }

    fn tokens(&self) -> Result<Vec<TokenRow>, StoreError> {
        let conn = self.conn();
        let mut statement = conn
            .prepare_cached(
                "SELECT id, name, digest, repo, scope, created, expires, revoked
                 FROM tokens ORDER BY name",
            )
            .map_err(self.err())?;
        let rows = statement
            .query_map([], token_row)
            .map_err(self.err())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.err())?;
        Ok(rows)
    }

    fn revoke_token(&self, name: &str, now: i64) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE tokens SET revoked = ?2 WHERE name = ?1 AND revoked IS NULL",
                params![name, now],
            )
            .map_err(self.err())?;
        Ok(changed > 0)
    }
}

fn repo_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RepoRow> {
    Ok(RepoRow {
        name: r.get(0)?,
        path: PathBuf::from(r.get::<_, String>(1)?),
        created: r.get(2)?,
        url: r.get(3)?,
        git_dir: r.get::<_, Option<String>>(4)?.map(PathBuf::from),
        common_dir: r.get::<_, Option<String>>(5)?.map(PathBuf::from),
    })
}

fn token_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok(TokenRow {
        id: r.get(0)?,
        name: r.get(1)?,
        digest: r.get(2)?,
        repo: r.get(3)?,
        scope: r.get(4)?,
        created: r.get(5)?,
        expires: r.get(6)?,
        revoked: r.get(7)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str, id: &str) -> TokenRow {
        TokenRow {
            id: id.into(),
            name: name.into(),
            digest: vec![1; 32],
            repo: "app".into(),
            scope: "read".into(),
            created: 10,
            expires: None,
            revoked: None,
        }
    }

    #[test]
    fn repos_and_tokens_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = Registry::open(dir.path(), true).expect("create");
        let repo = RepoRow {
            name: "app".into(),
            path: "/srv/app".into(),
            created: 5,
            url: None,
            git_dir: Some("/srv/app/.git".into()),
            common_dir: Some("/srv/app/.git".into()),
        };
        registry.add_repo(&repo).expect("add");
        assert!(matches!(
            registry.add_repo(&repo),
            Err(StoreError::Conflict { .. })
        ));
        registry.add_token(&token("ci", "aa")).expect("token");
        assert!(matches!(
            registry.add_token(&token("ci", "bb")),
            Err(StoreError::Conflict { .. })
        ));
        assert_eq!(registry.token("aa").expect("read"), Some(token("ci", "aa")));
        assert!(registry.revoke_token("ci", 11).expect("revoke"));
        assert!(!registry.revoke_token("ci", 12).expect("revoke again"));
        assert_eq!(
            registry.token("aa").expect("read").expect("row").revoked,
            Some(11)
        );
        drop(registry);
        let again = Registry::open(dir.path(), false).expect("reopen");
        assert_eq!(again.repos().expect("repos"), vec![repo]);
        assert!(again.remove_repo("app").expect("remove"));
        assert!(again.tokens().expect("tokens").is_empty());
    }

    #[test]
    fn a_version_1_registry_is_migrated_with_its_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = Connection::open(dir.path().join(REGISTRY_FILE)).expect("open");
        conn.execute_batch(
            "CREATE TABLE repos (name TEXT PRIMARY KEY, path TEXT NOT NULL, created INTEGER NOT NULL);
             CREATE TABLE tokens (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, digest BLOB NOT NULL,
                 repo TEXT NOT NULL, scope TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER,
                 revoked INTEGER);
             INSERT INTO repos VALUES ('app', '/srv/app', 5);
             PRAGMA user_version = 1;",
        )
        .expect("a version 1 registry");
        drop(conn);
        let registry = Registry::open(dir.path(), false).expect("migrates");
        let row = registry.repo("app").expect("reads").expect("kept");
        assert_eq!((row.path.to_str(), row.url), (Some("/srv/app"), None));
        // Rows from before git directories were recorded have none.
        assert_eq!((row.git_dir, row.common_dir), (None, None));
        let url = RepoRow {
            name: "lib".into(),
            path: PathBuf::new(),
            created: 6,
            url: Some("https://git.example/lib.git".into()),
            git_dir: None,
            common_dir: None,
        };
        registry.add_repo(&url).expect("add");
        assert_eq!(registry.repo("lib").expect("reads"), Some(url));
        let path = RepoRow {
            name: "web".into(),
            path: "/srv/web".into(),
            created: 7,
            url: None,
            git_dir: Some("/srv/web/.git".into()),
            common_dir: Some("/srv/main/.git".into()),
        };
        registry.add_repo(&path).expect("add");
        assert_eq!(registry.repo("web").expect("reads"), Some(path));
    }

    #[test]
    fn refuses_a_newer_registry_and_a_missing_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(
            Registry::open(dir.path(), false),
            Err(StoreError::NotFound { .. })
        ));
        drop(Registry::open(dir.path(), true).expect("create"));
        let conn = Connection::open(dir.path().join(REGISTRY_FILE)).expect("open");
        conn.pragma_update(None, "user_version", REGISTRY_VERSION + 1)
            .expect("bump");
        drop(conn);
        assert!(matches!(
            Registry::open(dir.path(), false),
            Err(StoreError::Unsupported { .. })
        ));
    }
}
