//! Writing and reading documents: insert, replace, import, find, delete.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::ops::ControlFlow;
use std::path::PathBuf;

use ctxpack_docs::document::{self, ParsedDocument};
use ctxpack_docs::embed::{EMBEDDER_ID, embed, text_hash};
use ctxpack_docs::filter::Filter;
use ctxpack_store::Store;
use ctxpack_store::StoreError;
use ctxpack_store::docs::{NewDocument, NewEmbedding};
use serde::Serialize;
use serde_json::Value;

use super::ids::IdGenerator;
use super::plan::{self, Declared};
use crate::control::{Control, Progress};
use crate::error::{Error, ErrorKind, Hint, Result, stored_document};

/// Inserts one document (JSON text) and returns its `_id` as canonical JSON.
pub(super) fn insert(
    store: &mut Store,
    collection: &str,
    text: &str,
    ids: &mut IdGenerator,
) -> Result<Value> {
    let doc = ParsedDocument::parse(text).map_err(|e| Error::from(e).with_field("document"))?;
    let declared = Declared::load(store, collection)?;
    let new = keyed(&doc, ids, &declared)?;
    store.insert_documents(collection, std::slice::from_ref(&new))?;
    Ok(document::id_value(&new.id_key))
}

/// Stores one document (JSON text), replacing the stored one with the same `_id` (which
/// keeps its place in insertion order; every field embedded for it is embedded again from the
/// new text). Returns the
/// `_id` and whether a document was replaced.
pub(super) fn replace(
    store: &mut Store,
    collection: &str,
    text: &str,
    ids: &mut IdGenerator,
) -> Result<(Value, bool)> {
    let doc = ParsedDocument::parse(text).map_err(|e| Error::from(e).with_field("document"))?;
    let declared = Declared::load(store, collection)?;
    let new = keyed(&doc, ids, &declared)?;
    let replaced = store.replace_document(collection, &new)?;
    let NewDocument { id_key, body, .. } = new;
    // Every field embedded for the old document is embedded again from the new one (the
    // embedder is local and cheap): searches never rank a replaced document by its old text.
    let value = stored_document(collection, &id_key, &body)?;
    for field in store.embedded_fields(collection, &id_key)? {
        let path = super::parse_field(&field)?;
        let row = match document::string_at(&value, &path) {
            Some(text) => NewEmbedding {
                id_key: id_key.clone(),
                text_hash: text_hash(text),
                vector: embed(text).to_le_bytes(),
            },
            None => NewEmbedding::marker(id_key.clone()),
        };
        store.put_embeddings(collection, &field, EMBEDDER_ID, &[row])?;
    }
    Ok((document::id_value(&id_key), replaced))
}

/// The document to store for a parsed one, generating an `_id` when it has none, with its
/// keys in the declared field indexes.
fn keyed(doc: &ParsedDocument, ids: &mut IdGenerator, declared: &Declared) -> Result<NewDocument> {
    Ok(match &doc.id_key {
        Some(key) => NewDocument {
            id_key: key.clone(),
            body: doc.body.clone(),
            index_keys: declared.keys(&doc.value, None),
        },
        None => {
            let id = ids.next_id();
            NewDocument {
                id_key: document::id_key(&id)?,
                body: doc.body_with_id(&id),
                index_keys: declared.keys(&doc.value, Some(&id)),
            }
        }
    })
}

/// The longest document accepted, in bytes (16 MiB).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// Where `import` reads JSON Lines from.
#[derive(Clone, Debug)]
pub enum ImportSource {
    /// A file, read twice (checked, then imported).
    File(PathBuf),
    /// Bytes already in memory (standard input).
    Bytes(Vec<u8>),
}

impl ImportSource {
    fn name(&self) -> String {
        match self {
            ImportSource::File(path) => path.display().to_string(),
            ImportSource::Bytes(_) => "<stdin>".to_owned(),
        }
    }

    fn reader(&self) -> Result<Box<dyn BufRead + '_>> {
        match self {
            ImportSource::File(path) => {
                let file = std::fs::File::open(path).map_err(|e| {
                    let kind = if e.kind() == std::io::ErrorKind::NotFound {
                        ErrorKind::NotFound
                    } else {
                        ErrorKind::InvalidInput
                    };
                    Error::new(kind, format!("cannot read {}: {e}", path.display()))
                })?;
                Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, file)))
            }
            ImportSource::Bytes(bytes) => Ok(Box::new(bytes.as_slice())),
        }
    }

    /// Calls `f(line number, line)` for every non-blank line; a line is at most
    /// [`MAX_DOCUMENT_BYTES`] long, so no input makes it buffer more.
    fn for_each_line(&self, name: &str, mut f: impl FnMut(u64, &str) -> Result<()>) -> Result<()> {
        let mut reader = self.reader()?;
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = (&mut reader)
                .take(MAX_DOCUMENT_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| Error::new(ErrorKind::Io, format!("{name}: reading: {e}")))?;
            if n == 0 {
                return Ok(());
            }
            line_no += 1;
            if buf.len() > MAX_DOCUMENT_BYTES {
                return Err(Error::invalid(format!(
                    "{name}:{line_no}: the line is longer than {MAX_DOCUMENT_BYTES} bytes; a document is at most that long"
                )));
            }
            let line = std::str::from_utf8(&buf).map_err(|e| {
                Error::invalid(format!(
                    "{name}:{line_no}: not valid UTF-8 (first bad byte at column {})",
                    e.valid_up_to() + 1
                ))
            })?;
            if line.trim().is_empty() {
                continue;
            }
            f(line_no, line)?;
        }
    }
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// The collection.
    pub collection: String,

    /// Documents imported.
    pub imported: u64,
    /// Transactions committed.
    pub batches: u64,
    /// Embeddings computed in the same pass (documents without a string at a field are not
    /// counted).
    #[serde(skip_serializing_if = "is_zero")]
    pub embedded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Imports JSON Lines into a collection (created if needed), one transaction per batch.
///
/// The whole input is checked first — JSON, objects, `_id`s, duplicates within the input and
/// against the collection — so an input with a bad line writes nothing, and every error names
/// its line. Then the documents are written batch by batch: a process killed mid-import
/// leaves whole batches only. The caller holds the writer lock, so nothing can conflict
/// between the two passes. Cancelling stops between batches.
pub(super) fn import(
    store: &mut Store,
    request: &super::ImportRequest,
    source: &ImportSource,
    name: Option<&str>,
    ids: &mut IdGenerator,
    control: &Control,
) -> Result<ImportReport> {
    let collection = request.collection.as_str();
    ctxpack_store::docs::validate_collection_name(collection)?;
    let name = name.map_or_else(|| source.name(), str::to_owned);
    let batch_size = request.batch_size.max(1);
    let fields: Vec<(&str, Vec<String>)> = request
        .embed
        .iter()
        .map(|field| {
            let path = super::parse_field(field).map_err(|e| e.with_field("embed"))?;
            Ok((field.as_str(), path))
        })
        .collect::<Result<_>>()?;

    let at = |line: u64, message: String| format!("{name}:{line}: {message}");
    let parse_error = |line_no: u64, e: &ctxpack_docs::DocsError| {
        // The parser sees one line, so its "line 1" is noise next to the file's line.
        let message = e.to_string().replace(" at line 1 column ", " at column ");
        Error::invalid(at(line_no, message))
    };
    let parse = |line_no: u64, line: &str| {
        ParsedDocument::parse(line).map_err(|e| parse_error(line_no, &e))
    };

    // Pass 1: check everything, write nothing.
    let mut given: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    source.for_each_line(&name, |line_no, line| {
        let id_key = ParsedDocument::check(line).map_err(|e| parse_error(line_no, &e))?;
        if let Some(key) = id_key {
            if let Some(first) = given.get(&key) {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    at(
                        line_no,
                        format!("duplicate _id {key} (first at line {first})"),
                    ),
                ));
            }
            if store.contains_document(collection, &key)? {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    at(
                        line_no,
                        format!("duplicate _id {key}: already in collection `{collection}`"),
                    ),
                ));
            }
            given.insert(key, line_no);
        }
        total += 1;
        if total.is_multiple_of(4096) {
            control.report(Progress {
                phase: "checking",
                done: total,
                total: None,
            });
            control.check()?;
        }
        Ok(())
    })?;
    drop(given);

    // Pass 2: one thread parses (and embeds), this one writes, a batch at a time.
    let declared = Declared::load(store, collection)?;
    let mut report = ImportReport {
        collection: collection.to_owned(),
        imported: 0,
        batches: 0,
        embedded: 0,
    };
    let write = |store: &mut Store, batch: Batch, report: &mut ImportReport| -> Result<()> {
        control.check()?;
        let embeddings: Vec<(&str, &[NewEmbedding])> = fields
            .iter()
            .zip(&batch.embeddings)
            .map(|((field, _), rows)| (*field, rows.as_slice()))
            .collect();
        store
            .insert_documents_embedded(collection, &batch.documents, EMBEDDER_ID, &embeddings)
            .map_err(|e| match e {
                StoreError::DuplicateId { index, .. } => {
                    let line = batch.lines.get(index).copied().unwrap_or(0);
                    Error::new(ErrorKind::Conflict, at(line, e.to_string()))
                }
                e => Error::from(e),
            })
            .map_err(|f| {
                f.with_hint(Hint::Advice(format!(
                    "{} documents in {} earlier batches were imported; this batch was not",
                    report.imported, report.batches
                )))
            })?;
        report.imported += batch.documents.len() as u64;
        report.batches += 1;
        report.embedded += batch
            .embeddings
            .iter()
            .flatten()
            .filter(|row| !row.vector.is_empty())
            .count() as u64;
        control.report(Progress {
            phase: "importing",
            done: report.imported,
            total: Some(total),
        });
        Ok(())
    };
    std::thread::scope(|scope| {
        // Two batches in flight at most: memory holds a bounded window of the input.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Result<Batch>>(2);
        let (fields, name, parse) = (&fields, &name, &parse);
        scope.spawn(move || {
            let mut batch = Batch::new(fields.len(), batch_size);
            let read = source.for_each_line(name, |line_no, line| {
                let doc = parse(line_no, line)?;
                let new = keyed(&doc, ids, &declared)?;
                for ((_, path), rows) in fields.iter().zip(&mut batch.embeddings) {
                    rows.push(embedding_of(&doc.value, path, &new.id_key));
                }
                batch.documents.push(new);
                batch.lines.push(line_no);
                if batch.documents.len() >= batch_size {
                    let full = std::mem::replace(&mut batch, Batch::new(fields.len(), batch_size));
                    // The writer stopped (an error or a cancel): stop reading.
                    sender
                        .send(Ok(full))
                        .map_err(|_| Error::new(ErrorKind::Cancelled, "the import stopped"))?;
                }
                Ok(())
            });
            // A failed send means the writer already stopped and reports why.
            let _ = sender.send(read.map(|()| batch));
        });
        for item in &receiver {
            let batch = item?;
            if !batch.documents.is_empty() {
                write(store, batch, &mut report)?;
            }
        }
        Ok::<_, Error>(())
    })?;
    // The derived copies searches read, current from the start. Every document is stored by
    // now, so a failure here says so: running the import again would find them all.
    for (field, _) in &fields {
        super::ann::sync_files(store, collection, field)
            .map_err(|e| {
                e.with_hint(Hint::Advice(format!(
                    "all {} documents and their embeddings were imported; only the vector file of `{field}` was not written: `ctxpack docs vsync` on the field writes it",
                    report.imported
                )))
            })?;
    }
    Ok(report)
}

/// Documents parsed for one transaction, with their line numbers and the embeddings of each
/// field asked for.
struct Batch {
    documents: Vec<NewDocument>,
    lines: Vec<u64>,
    embeddings: Vec<Vec<NewEmbedding>>,
}

impl Batch {
    fn new(fields: usize, batch_size: usize) -> Batch {
        let capacity = batch_size.min(100_000);
        Batch {
            documents: Vec::with_capacity(capacity),
            lines: Vec::with_capacity(capacity),
            embeddings: (0..fields).map(|_| Vec::with_capacity(capacity)).collect(),
        }
    }
}

/// The embedding of the string at `path` of a document, or the marker saying it has none,
/// as `vsync` computes it.
fn embedding_of(value: &Value, path: &[String], id_key: &str) -> NewEmbedding {
    match document::string_at(value, path) {
        Some(text) => NewEmbedding {
            id_key: id_key.to_owned(),
            text_hash: text_hash(text),
            vector: embed(text).to_le_bytes(),
        },
        None => NewEmbedding::marker(id_key.to_owned()),
    }
}

/// Calls `out` with the stored text of every document matching `filter` (all without one),
/// in insertion order, at most `limit` of them; returns how many.
pub(super) fn find(
    store: &Store,
    collection: &str,
    filter: Option<&Filter>,
    limit: Option<usize>,
    out: &mut dyn FnMut(&str),
) -> Result<u64> {
    store.require_collection(collection)?;
    let limit = limit.unwrap_or(usize::MAX) as u64;
    let mut found = 0u64;
    if limit == 0 {
        return Ok(0);
    }
    plan::for_each_match(store, collection, filter, |doc| {
        out(doc.body);
        found += 1;
        if found >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    Ok(found)
}

/// Deletes the documents matching `filter` in one transaction; returns how many.
pub(super) fn delete(store: &mut Store, collection: &str, filter: &Filter) -> Result<u64> {
    store.require_collection(collection)?;
    let mut doomed = Vec::new();
    plan::for_each_match(store, collection, Some(filter), |doc| {
        doomed.push(doc.id_key.to_owned());
        ControlFlow::Continue(())
    })?;
    Ok(store.delete_documents(collection, &doomed)?)
}

/// A temporary copy of a stream inside the store directory, removed when dropped.
pub(super) struct Spool {
    path: PathBuf,
}

impl Spool {
    /// Creates an empty spool file; it is created exclusively, so nothing that exists (a file
    /// or a link planted by someone else) is ever opened or followed.
    pub(super) fn create(dir: &std::path::Path) -> Result<Spool> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(".import-{}-{nanos}.jsonl", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(&path, &e))?;
        Ok(Spool { path })
    }

    /// The spool file.
    pub(super) fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Copies `stream` into the spool, a buffer at a time, checking for cancellation.
    pub(super) fn fill(&self, stream: &mut dyn std::io::Read, control: &Control) -> Result<()> {
        use std::io::Write as _;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, &e))?;
        let mut file = std::io::BufWriter::new(file);
        let mut buf = vec![0u8; 1 << 20];
        let mut copied = 0u64;
        loop {
            let n = match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::new(ErrorKind::Io, format!("reading the input: {e}"))),
            };
            file.write_all(&buf[..n])
                .map_err(|e| Error::io(&self.path, &e))?;
            copied += n as u64;
            control.report(Progress {
                phase: "reading",
                done: copied,
                total: None,
            });
            control.check()?;
        }
        file.flush().map_err(|e| Error::io(&self.path, &e))
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
