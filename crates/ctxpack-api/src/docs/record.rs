//! Document stores whose system of record is a database (a server's `--database`): the store
//! directory is then a cache of the rows the database holds.
//!
//! A write takes the store's lock in the database (one writer across every process), brings
//! the cache up to date, writes into it as ever while noting what it touches, and publishes
//! those rows in one transaction ([`DocWriter::finish`]). A read first applies to the cache
//! whatever was published since it last looked. The cache is marked dirty while a write is
//! under way, so a cache whose process died before publishing is emptied and filled again
//! from the database instead of being trusted.

use ctxpack_docs::embed::{EMBEDDER_ID, Vector};
use ctxpack_pg::{Cursor, PgDocuments, RepoLock};
use ctxpack_store::docs::replica::Mark;
use ctxpack_store::{Store, WriterLock};
use serde_json::Value;

use super::plan::parse_index_field;
use crate::error::{Error, ErrorKind, Hint, Result, corrupt_document};
use crate::workspace::{Workspace, Writer};

/// A document store opened for writing: the cache's writer lock, and with a database its
/// lock there too, held until [`DocWriter::finish`].
pub(crate) struct DocWriter {
    writer: Writer,
    record: Option<(PgDocuments, RepoLock)>,
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
    pub(crate) fn finish<T>(mut self, result: Result<T>) -> Result<T> {
        let Some((record, _lock)) = self.record.take() else {
            return result;
        };
        let store = &mut self.writer.store;
        ctxpack_store::failpoint("docs:written");
        let changes = store.captured_document_changes()?;
        let change = record.publish(&changes, crate::server::now())?;
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
        let create = create || self.created_on_write;
        let Some(record) = &self.documents else {
            return Ok(DocWriter {
                writer: self.writer(what, wait, create)?,
                record: None,
            });
        };
        self.require_write(what)?;
        if !create && record.latest()?.is_none() {
            return Err(crate::error::no_store(self.store_root()?.to_owned(), true));
        }
        let lock = record.lock(wait)?;
        let mut writer = self.writer(what, wait, true)?;
        sync(&mut writer.store, record)?;
        writer.store.set_document_mark(Mark::Dirty)?;
        writer.store.capture_document_changes()?;
        Ok(DocWriter {
            writer,
            record: Some((record.clone(), lock)),
        })
    }

    /// Brings the cache up to date with the database, when the documents have one. Cache
    /// upkeep, not a write the caller asked for: a read-only server workspace does it too.
    pub(crate) fn sync_documents(&self) -> Result<()> {
        let Some(record) = &self.documents else {
            return Ok(());
        };
        let Some(latest) = record.latest()? else {
            return Ok(());
        };
        let dir = self.store_root()?;
        if let Ok(store) = Store::open(dir)
            && store.document_mark()? == Mark::Applied(latest)
        {
            return Ok(());
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(dir, &e).context("cannot create the store directory"))?;
        let _lock = WriterLock::acquire(dir, true)?;
        let mut store = Store::open_or_create(dir)?;
        sync(&mut store, record)
    }
}

/// Applies to `store`, whose writer lock the caller holds, every change published since the
/// last one it applied. A dirty cache is emptied first; a store that holds collections it
/// never had from the database is refused rather than overwritten.
fn sync(store: &mut Store, record: &PgDocuments) -> Result<()> {
    let Some(through) = record.latest()? else {
        return Ok(());
    };
    let after = match store.document_mark()? {
        Mark::Applied(n) if n == through => return Ok(()),
        Mark::Applied(n) => n,
        Mark::Dirty => {
            store.reset_documents()?;
            0
        }
        Mark::Empty if store.collections()?.is_empty() => 0,
        Mark::Empty => {
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
    };
    let mut cursor = Cursor::Start;
    let mut embedded = std::collections::BTreeSet::new();
    loop {
        let page = record.page(after, through, &cursor)?;
        let last = page.next.is_none();
        store.apply_document_changes(
            &page.changes,
            last.then_some(through),
            |collection: &str, field: &str, id_key: &str, body: &str| -> Result<Vec<String>> {
                let path = parse_index_field(field)?;
                let value: Value = serde_json::from_str(body)
                    .map_err(|e| corrupt_document(collection, id_key, &e))?;
                Ok(ctxpack_docs::filter::index_keys(&value, &path))
            },
        )?;
        embedded.extend(page.changes.embedded_fields());
        match page.next {
            Some(next) => cursor = next,
            None => break,
        }
    }
    // The vector file is a derived copy: rewrite it where the embeddings changed, so searches
    // here read it as they do on the process that wrote them.
    for (collection, field) in embedded {
        store.sync_vector_file(&collection, &field, EMBEDDER_ID, Vector::BYTES)?;
    }
    Ok(())
}
