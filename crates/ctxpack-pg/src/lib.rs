//! ctxpack's PostgreSQL backend: a server's registry (repositories and token digests), its
//! ledger (every pack it answered, and their hit texts) and its snapshots (file versions with
//! their chunks, and manifests) as rows. The registry and the ledger sit behind the same
//! interfaces as the embedded store ([`RegistryRows`](ctxpack_store::registry::RegistryRows), [`LedgerStore`](ctxpack_store::LedgerStore)), so one conformance
//! suite checks both; for snapshots the database is the system of record and each process's
//! embedded store a cache it fills from here ([`PgSnapshots`]).
//!
//! The schema is versioned: [`Database::connect`] applies the migrations this build knows in
//! one transaction under an advisory lock (two servers starting at once migrate once), and
//! refuses a database whose version is newer than it understands, as the embedded store
//! refuses a newer store. Every table is named `ctxpack_*`, so the database may be shared.
//!
//! The client is the synchronous `postgres` crate (tokio-postgres on its own runtime): the
//! API is synchronous, and no async type crosses it. A small pool keeps idle connections; a
//! connection that failed is dropped, and the next call opens a new one.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxpack_store::StoreError;
use postgres::{Client, NoTls};

mod documents;
mod ledger;
mod registry;
mod sessions;
mod snapshots;

pub use documents::{Cursor, DocumentPage, PgDocuments};
pub use ledger::PgLedger;
pub use registry::PgRegistry;
pub use sessions::PgSessions;
pub use snapshots::{Entry, MAX_DEPTH, PgSnapshots, Publish, Published, ReadFiles};

/// The schema, one migration per version, applied in order.
const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE ctxpack_repos (
        name TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        created BIGINT NOT NULL
    );
    CREATE TABLE ctxpack_tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        digest BYTEA NOT NULL,
        repo TEXT NOT NULL,
        scope TEXT NOT NULL,
        created BIGINT NOT NULL,
        expires BIGINT,
        revoked BIGINT
    );
    CREATE TABLE ctxpack_ledger (
        seq BIGSERIAL PRIMARY KEY,
        repo TEXT NOT NULL,
        id TEXT NOT NULL,
        time BIGINT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX ctxpack_ledger_repo ON ctxpack_ledger (repo, seq);
    CREATE TABLE ctxpack_ledger_texts (
        repo TEXT NOT NULL,
        hash TEXT NOT NULL,
        text TEXT NOT NULL,
        PRIMARY KEY (repo, hash)
    );
",
    "
    CREATE TABLE ctxpack_file_versions (
        repo TEXT NOT NULL,
        path TEXT NOT NULL,
        blob TEXT NOT NULL,
        chunker BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        skip_reason TEXT,
        chunks TEXT NOT NULL,
        PRIMARY KEY (repo, path, blob, chunker)
    );
    CREATE TABLE ctxpack_snapshots (
        repo TEXT NOT NULL,
        sha TEXT NOT NULL,
        parent TEXT,
        depth INTEGER NOT NULL,
        files BIGINT NOT NULL,
        chunks BIGINT NOT NULL,
        skipped TEXT NOT NULL,
        seconds DOUBLE PRECISION NOT NULL,
        basis TEXT,
        manifest TEXT NOT NULL,
        published BIGINT NOT NULL,
        PRIMARY KEY (repo, sha)
    );
",
    "
    CREATE TABLE ctxpack_artifacts (
        repo TEXT NOT NULL,
        id TEXT NOT NULL,
        scope TEXT NOT NULL,
        source_id TEXT,
        title TEXT,
        family_id TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        bytes BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        chunker BIGINT NOT NULL,
        file TEXT NOT NULL,
        PRIMARY KEY (repo, id)
    );
",
    "
    ALTER TABLE ctxpack_repos ADD COLUMN url TEXT;
    CREATE SEQUENCE ctxpack_doc_change;
    CREATE TABLE ctxpack_doc_stores (
        repo TEXT NOT NULL,
        store TEXT NOT NULL,
        created BIGINT NOT NULL,
        change BIGINT NOT NULL,
        PRIMARY KEY (repo, store)
    );
    CREATE TABLE ctxpack_doc_collections (
        repo TEXT NOT NULL,
        store TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        change BIGINT NOT NULL,
        PRIMARY KEY (repo, store, name)
    );
    CREATE TABLE ctxpack_doc_fields (
        repo TEXT NOT NULL,
        store TEXT NOT NULL,
        collection TEXT NOT NULL,
        field TEXT NOT NULL,
        created_at BIGINT,
        change BIGINT NOT NULL,
        PRIMARY KEY (repo, store, collection, field)
    );
    CREATE TABLE ctxpack_documents (
        repo TEXT NOT NULL,
        store TEXT NOT NULL,
        collection TEXT NOT NULL,
        id_key TEXT NOT NULL,
        seq BIGINT,
        body TEXT,
        change BIGINT NOT NULL,
        PRIMARY KEY (repo, store, collection, id_key)
    );
    CREATE INDEX ctxpack_documents_change ON ctxpack_documents (repo, store, change, collection, id_key);
    CREATE TABLE ctxpack_doc_embeddings (
        repo TEXT NOT NULL,
        store TEXT NOT NULL,
        collection TEXT NOT NULL,
        id_key TEXT NOT NULL,
        field TEXT NOT NULL,
        row BIGINT,
        embedder TEXT,
        text_hash TEXT,
        vector BYTEA,
        change BIGINT NOT NULL,
        PRIMARY KEY (repo, store, collection, id_key, field)
    );
    CREATE INDEX ctxpack_doc_embeddings_change
        ON ctxpack_doc_embeddings (repo, store, change, collection, id_key, field);
",
    // A page of the ledger filters on goals without reading records; records written before
    // have none, and are read for their goal.
    "
    ALTER TABLE ctxpack_ledger ADD COLUMN goal TEXT;
    CREATE INDEX ctxpack_ledger_id ON ctxpack_ledger (repo, id text_pattern_ops);
",
    // The git directories a registered path resolved to, checked on every open.
    "
    ALTER TABLE ctxpack_repos ADD COLUMN git_dir TEXT;
    ALTER TABLE ctxpack_repos ADD COLUMN common_dir TEXT;
",
    // Each snapshot's record of its whole manifest as published (how many paths it lists and
    // their digest), checked whenever the manifest is read; snapshots published before have
    // none and are read as they are.
    "
    ALTER TABLE ctxpack_snapshots ADD COLUMN manifest_files BIGINT;
    ALTER TABLE ctxpack_snapshots ADD COLUMN manifest_digest TEXT;
",
    // What each session was shown, so every process of a server answers a session alike.
    "
    CREATE TABLE ctxpack_sessions (
        owner TEXT NOT NULL,
        id TEXT NOT NULL,
        used BIGINT NOT NULL,
        state TEXT NOT NULL,
        PRIMARY KEY (owner, id)
    );
    CREATE INDEX ctxpack_sessions_used ON ctxpack_sessions (owner, used);
",
];

/// The newest schema version this build reads and writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The advisory lock key migrations hold (`ctxp` in ASCII).
pub(crate) const MIGRATION_LOCK: i64 = 0x6374_7870;

/// Holds an advisory lock (a repository's writer lock, or a document store's) until dropped,
/// on a session of its own: PostgreSQL releases it when the session ends, however it ends.
pub struct RepoLock {
    client: Option<postgres::Client>,
    key: i64,
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        if let Some(mut client) = self.client.take() {
            let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&self.key]);
        }
    }
}

/// The advisory lock key of `name` in `namespace`: the first 8 bytes of a hash, in a
/// namespace apart from the migration lock.
pub(crate) fn lock_key(namespace: &str, name: &str) -> i64 {
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in namespace.as_bytes().iter().chain(name.as_bytes()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_le_bytes(hash.to_le_bytes())
}

/// How many idle connections the pool keeps.
const IDLE: usize = 8;

/// A PostgreSQL database holding ctxpack's rows.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    config: postgres::Config,
    /// Where errors say the database is: host and database name, never credentials.
    label: String,
    idle: Mutex<Vec<Client>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("at", &self.inner.label)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Connects to the database at `url` (`postgres://user:password@host:port/name`) and
    /// brings its schema up to this build's version.
    pub fn connect(url: &str) -> Result<Database, StoreError> {
        let mut config: postgres::Config = url.parse().map_err(|e| StoreError::Database {
            detail: format!("not a PostgreSQL URL: {e}"),
        })?;
        config.connect_timeout(Duration::from_secs(10));
        let host = config
            .get_hosts()
            .first()
            .map(|h| match h {
                postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_default();
        let label = format!(
            "postgresql://{host}/{}",
            config.get_dbname().unwrap_or_default()
        );
        let database = Database {
            inner: Arc::new(Inner {
                config,
                label,
                idle: Mutex::new(Vec::new()),
            }),
        };
        database.with(migrate)?;
        Ok(database)
    }

    /// Runs `work` on a pooled connection; a connection that failed is not pooled again.
    pub(crate) fn with<T>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let pooled = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let mut client = match pooled {
            Some(client) if !client.is_closed() => client,
            _ => self
                .inner
                .config
                .connect(NoTls)
                .map_err(|e| self.error(&e))?,
        };
        let result = work(&mut client);
        if result.is_ok() && !client.is_closed() {
            let mut idle = self
                .inner
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if idle.len() < IDLE {
                idle.push(client);
            }
        }
        result
    }

    pub(crate) fn error(&self, e: &postgres::Error) -> StoreError {
        // A server's own error says what went wrong; the client's says only "db error".
        let detail = match e.as_db_error() {
            Some(db) => format!("{}: {}", self.inner.label, db.message()),
            None => format!("{}: {e}", self.inner.label),
        };
        StoreError::Database { detail }
    }

    /// The registry's rows.
    pub fn registry(&self) -> PgRegistry {
        PgRegistry { db: self.clone() }
    }

    /// The ledger of the repository `repo`.
    pub fn ledger(&self, repo: &str) -> PgLedger {
        PgLedger {
            db: self.clone(),
            repo: repo.to_owned(),
        }
    }

    /// The snapshots of the repository `repo`.
    pub fn snapshots(&self, repo: &str) -> PgSnapshots {
        PgSnapshots {
            db: self.clone(),
            repo: repo.to_owned(),
        }
    }

    /// The sessions this database keeps for every process of a server, within `limits`.
    pub fn sessions(&self, limits: ctxpack_store::SessionLimits) -> PgSessions {
        PgSessions {
            db: self.clone(),
            limits,
        }
    }

    /// The document store `store` (a name, e.g. `app.ctxpack`) of the repository `repo`.
    pub fn documents(&self, repo: &str, store: &str) -> PgDocuments {
        PgDocuments {
            db: self.clone(),
            repo: repo.to_owned(),
            store: store.to_owned(),
        }
    }

    /// Takes the advisory lock `key` on a session of its own, waiting for it with `wait`;
    /// without, `None` when another session holds it.
    pub(crate) fn advisory_lock(
        &self,
        key: i64,
        wait: bool,
    ) -> Result<Option<RepoLock>, StoreError> {
        let mut client = self
            .inner
            .config
            .connect(NoTls)
            .map_err(|e| self.error(&e))?;
        if wait {
            client
                .execute("SELECT pg_advisory_lock($1)", &[&key])
                .map_err(|e| self.error(&e))?;
        } else {
            let taken: bool = client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .map_err(|e| self.error(&e))?
                .get(0);
            if !taken {
                return Ok(None);
            }
        }
        Ok(Some(RepoLock {
            client: Some(client),
            key,
        }))
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.with(|client| {
            let row = client
                .query_one("SELECT version FROM ctxpack_schema", &[])
                .map_err(|e| self.error(&e))?;
            Ok(row.get(0))
        })
    }
}

/// Applies the migrations the database lacks, in one transaction under the migration lock.
fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let error = |e: postgres::Error| StoreError::Database {
        detail: format!("migrating the schema: {e}"),
    };
    let mut tx = client.transaction().map_err(error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(error)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS ctxpack_schema (
            singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
            version BIGINT NOT NULL
        )",
    )
    .map_err(error)?;
    let version: i64 = tx
        .query_opt("SELECT version FROM ctxpack_schema", &[])
        .map_err(error)?
        .map_or(0, |row| row.get(0));
    if version > SCHEMA_VERSION {
        return Err(StoreError::Unsupported {
            dir: PathBuf::from("the PostgreSQL database"),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let done = usize::try_from(version).unwrap_or(0);
    for migration in &MIGRATIONS[done..] {
        tx.batch_execute(migration).map_err(error)?;
    }
    tx.execute(
        "INSERT INTO ctxpack_schema (version) VALUES ($1)
         ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version",
        &[&SCHEMA_VERSION],
    )
    .map_err(error)?;
    tx.commit().map_err(error)
}

/// A throwaway database for tests: created on a server through a maintenance connection (a
/// role that may `CREATE DATABASE`), dropped again when this value is dropped.
pub struct Scratch {
    maintenance: String,
    name: String,
    url: String,
}

impl Scratch {
    /// Creates an empty database on the server `maintenance_url` points at.
    pub fn create(maintenance_url: &str) -> Result<Scratch, StoreError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let error = |e: postgres::Error| StoreError::Database {
            detail: match e.as_db_error() {
                Some(db) => format!("creating a scratch database: {}", db.message()),
                None => format!("creating a scratch database: {e}"),
            },
        };
        let config: postgres::Config =
            maintenance_url
                .parse()
                .map_err(|e: postgres::Error| StoreError::Database {
                    detail: format!("not a PostgreSQL URL: {e}"),
                })?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "ctxpack_scratch_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let mut client = config.connect(NoTls).map_err(error)?;
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(error)?;
        let url = match maintenance_url.rsplit_once('/') {
            Some((server, rest)) => {
                let query = rest.split_once('?').map(|(_, q)| format!("?{q}"));
                format!("{server}/{name}{}", query.unwrap_or_default())
            }
            None => maintenance_url.to_owned(),
        };
        Ok(Scratch {
            maintenance: maintenance_url.to_owned(),
            name,
            url,
        })
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Ok(mut client) = postgres::Client::connect(&self.maintenance, NoTls) {
            let _ = client.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_differ_by_name_and_namespace_and_never_change() {
        let repo = |name| lock_key("ctxpack-repo:", name);
        assert_ne!(repo("app"), repo("lib"));
        assert_eq!(repo("app"), repo("app"));
        assert_ne!(repo("app"), MIGRATION_LOCK);
        assert_ne!(repo("app"), lock_key("ctxpack-docs:", "app"));
    }
}
