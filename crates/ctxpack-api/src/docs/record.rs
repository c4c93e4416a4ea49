//! Document stores whose system of record is a database (a server's `--database`): the store
//! directory is then a cache of the rows the database holds.
//!
//! A write takes the store's lock in the database (one writer across every process), brings
//! the cache up to date, writes into it as ever while noting what it touches, and publishes
//! those rows in one transaction ([`DocWriter::finish`]). A read first applies to the cache
//! whatever was published since it last looked. The cache is marked dirty while a write is
//! under way, so a cache whose process died before publishing is emptied and filled again
//! from the database instead of being trusted.

use ctxpack_pg::{Cursor, PgDocuments, RepoLock};
use ctxpack_store::docs::replica::{CaptureCursor, Mark};
use ctxpack_store::{Store, StoreError, WriterLock};

use super::plan::parse_index_field;
use crate::error::{Error, ErrorKind, Hint, Result, stored_document};
use crate::workspace::{Workspace, Writer};

/// Documents or embeddings published per page, and about how many bytes of them.
const PUBLISH_ROWS: usize = 2_000;
const PUBLISH_BYTES: usize = 64 << 20;

/// How many times a sync starts again when the database moved on while it read.
const SYNC_ROUNDS: usize = 8;

/// A document store opened for writing: the cache's writer lock, and with a database its
/// lock there too, held until [`DocWriter::finish`].
pub(crate) struct DocWriter {
    writer: Writer,
    record: Option<Published>,
}

/// What a write on a database-backed store publishes to.
struct Published {
    record: PgDocuments,
    _lock: RepoLock,
    /// The change the cache was brought up to before the write.
    base: Option<i64>,
    /// Whether the write was asked to create the store (published even when it wrote
    /// nothing).
    create: bool,
}

impl std::ops::Deref for DocWriter {
    type Target = Store;
    fn deref(&self) -> &Store {
        &self.writer.store
    }
}

impl std::ops::DerefMut for DocWriter {
    fn deref_mut(&mut self) -> &mut Store {
        &mut self.writer.store
    }
}

impl DocWriter {
    /// Ends the write whose outcome is `result`: with a database, publishes what it wrote
    /// (also after a failure, which may have written whole batches) and releases the locks.
    /// A write that changed nothing publishes nothing.
    pub(crate) fn finish<T>(mut self, result: Result<T>) -> Result<T> {
        let Some(published) = self.record.take() else {
            return result;
        };
        let store = &mut self.writer.store;
        ctxpack_store::failpoint("docs:written");
        let creates_store = published.create && published.base.is_none();
        if !(creates_store || store.captured_any()?) {
            store.set_document_mark(published.base.map_or(Mark::Empty, Mark::Applied))?;
            return result;
        }
        let change = {
            let store = &*store;
            let mut cursor = Some(CaptureCursor::Start);
            published.record.publish(
                crate::server::now(),
                published.base,
                &mut || -> std::result::Result<_, StoreError> {
                    let Some(at) = cursor.take() else {
                        return Ok(None);
                    };
                    let (changes, next) =
                        store.captured_document_changes(&at, PUBLISH_ROWS, PUBLISH_BYTES)?;
                    cursor = next;
                    Ok(Some(changes))
                },
            )?
        };
        store.set_document_mark(Mark::Applied(change))?;
        result
    }
}

impl Workspace {
    /// The same workspace with its document collections' system of record in `record`.
    pub fn with_documents(mut self, record: PgDocuments) -> Workspace {
        self.documents = Some(record);
        self
    }

    /// Opens the document store for a write; with `create` (or on a server, whose document
    /// stores a write creates) a missing store is created. With a database, the cache is
    /// brought up to date first.
    pub(crate) fn doc_writer(&self, what: &str, wait: bool, create: bool) -> Result<DocWriter> {
        let creates = create || self.created_on_write;
        let Some(record) = &self.documents else {
            return Ok(DocWriter {
                writer: self.writer(what, wait, creates)?,
                record: None,
            });
        };
        self.require_write(what)?;
        let lock = record.lock(wait)?;
        let latest = record.latest()?;
        if !creates && latest.is_none() {
            return Err(crate::error::no_store(self.store_root()?.to_owned(), true));
        }
        let mut writer = self.writer(what, wait, true)?;
        let base = sync(&mut writer.store, record, latest)?;
        writer.store.set_document_mark(Mark::Dirty)?;
        writer.store.capture_document_changes()?;
        Ok(DocWriter {
            writer,
            record: Some(Published {
                record: record.clone(),
                _lock: lock,
                base,
                create,
            }),
        })
    }

    /// Brings the cache up to date with the database, when the documents have one. Cache
    /// upkeep, not a write the caller asked for: a read-only server workspace does it too.
    /// While this process writes the store, a read answers from the cache as it is instead
    /// of waiting for the write to end.
    pub(crate) fn sync_documents(&self) -> Result<()> {
        let Some(record) = &self.documents else {
            return Ok(());
        };
        let latest = record.latest()?;
        let dir = self.store_root()?;
        match Store::open(dir) {
            Ok(store) => {
                let mark = store.document_mark()?;
                if latest.is_some() && mark == latest.map_or(Mark::Empty, Mark::Applied) {
                    return Ok(());
                }
                if latest.is_none() && mark == Mark::Empty && store.collections()?.is_empty() {
                    return Ok(());
                }
            }
            Err(StoreError::NotFound { .. }) if latest.is_none() => return Ok(()),
            Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        let _lock = match WriterLock::acquire(dir, false) {
            Ok(lock) => lock,
            // This process (or another on this state) is writing or syncing the store.
            Err(StoreError::Locked { .. }) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let mut store = Store::open_or_create(dir)?;
        sync(&mut store, record, latest).map(drop)
    }
}

/// Applies to `store`, whose writer lock the caller holds, every change published since the
/// last one it applied (`latest` is the database's last change, read by the caller), and
/// returns the change the cache then holds. A cache the database cannot vouch for — left
/// dirty by a write that was never published, or ahead of the database or unknown to it (a
/// database recreated) — is emptied first; a store that holds collections it never had from
/// the database is refused rather than overwritten.
fn sync(store: &mut Store, record: &PgDocuments, latest: Option<i64>) -> Result<Option<i64>> {
    let mut latest = latest;
    let mut after = match (store.document_mark()?, latest) {
        (Mark::Applied(n), Some(l)) if n == l => return Ok(latest),
        (Mark::Applied(n), Some(l)) if n < l => n,
        (Mark::Empty, _) if !store.collections()?.is_empty() => {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!(
                    "the document store {} holds collections that are not in {}",
                    store.dir().display(),
                    record.label()
                ),
            )
            .with_hint(Hint::Advice(
                "move the directory aside: the database is the system of record, and the cache is filled from it again".into(),
            )));
        }
        (Mark::Empty, _) => 0,
        _ => {
            store.reset_documents()?;
            0
        }
    };
    let Some(mut through) = latest else {
        return Ok(None);
    };
    let mut embedded = std::collections::BTreeSet::new();
    for _ in 0..SYNC_ROUNDS {
        let mut cursor = Cursor::Start;
        loop {
            let page = record.page(after, through, &cursor)?;
            let last = page.next.is_none();
            store.apply_document_changes(
                &page.changes,
                last.then_some(through),
                |collection: &str, field: &str, id_key: &str, body: &str| -> Result<Vec<String>> {
                    let path = parse_index_field(field)?;
                    let value = stored_document(collection, id_key, body)?;
                    Ok(ctxpack_docs::filter::index_keys(&value, &path))
                },
            )?;
            embedded.extend(page.changes.embedded_fields());
            match page.next {
                Some(next) => cursor = next,
                None => break,
            }
        }
        // A write published while the pages were read may have moved a row past `through`:
        // read on from there until the database stands still.
        latest = record.latest()?;
        match latest {
            Some(l) if l > through => {
                after = through;
                through = l;
            }
            _ => break,
        }
    }
    // The vector file is a derived copy: rewrite it where the embeddings changed, so searches
    // here read it as they do on the process that wrote them.
    for (collection, field) in embedded {
        super::ann::sync_files(store, &collection, &field)?;
    }
    Ok(Some(through))
}
