//! Keeping a field's embeddings current: `vstale` and `vsync`.

use std::collections::HashMap;
use std::ops::ControlFlow;

use ctxpack_docs::document;
use ctxpack_docs::embed::{EMBEDDER_ID, embed, text_hash};
use ctxpack_store::Store;
use ctxpack_store::docs::{NewEmbedding, StoredDocument};
use serde_json::{Value, json};

use super::parse_field;
use crate::control::{Control, Progress};
use crate::error::{Error, Result, stored_document};

/// The state of every document's embedding of one field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaleReport {
    /// The collection.
    pub collection: String,
    /// The field.
    pub field: String,
    /// Documents whose embedding is current.
    pub current: u64,
    /// `_id`s (canonical JSON) of documents with a string at the field and no embedding.
    pub missing: Vec<String>,
    /// `_id`s of documents whose embedding was computed from other text or by another
    /// embedder.
    pub stale: Vec<String>,
    /// Documents without a string at the field (never embedded).
    pub skipped: u64,
    /// Stored embeddings whose document is gone.
    pub orphans: u64,
}

impl StaleReport {
    /// The report as JSON: counts and the `_id`s.
    pub fn to_json(&self) -> Value {
        let ids = |keys: &[String]| -> Vec<Value> {
            keys.iter().map(|k| document::id_value(k)).collect()
        };
        json!({
            "collection": self.collection,
            "field": self.field,
            "embedder": EMBEDDER_ID,
            "current": self.current,
            "missingCount": self.missing.len(),
            "staleCount": self.stale.len(),
            "skipped": self.skipped,
            "orphans": self.orphans,
            "missing": ids(&self.missing),
            "stale": ids(&self.stale),
        })
    }
}

/// What `vsync` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// The collection.
    pub collection: String,
    /// The field.
    pub field: String,
    /// Embeddings computed because none was stored.
    pub missing: u64,
    /// Embeddings recomputed because the text or embedder changed.
    pub stale: u64,
    /// Documents that were already current.
    pub current: u64,
    /// Documents without a string at the field.
    pub skipped: u64,
    /// Embeddings of deleted documents removed.
    pub removed: u64,
}

impl SyncReport {
    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "collection": self.collection,
            "field": self.field,
            "embedder": EMBEDDER_ID,
            "embedded": self.missing + self.stale,
            "missing": self.missing,
            "stale": self.stale,
            "current": self.current,
            "skipped": self.skipped,
            "removed": self.removed,
        })
    }
}

/// What one document needs.
enum Need {
    Current,
    Missing,
    Stale,
    /// No string at the field; `true` when the stored row does not say so yet.
    Skipped(bool),
}

/// Classifies every document of a collection's field, in insertion order.
fn classify(
    store: &Store,
    collection: &str,
    field: &str,
    mut each: impl FnMut(i64, &str, Need),
) -> Result<u64> {
    let path = parse_field(field)?;
    store.require_collection(collection)?;
    let mut states: HashMap<String, (bool, String)> = store
        .embedding_states(collection, field)?
        .into_iter()
        .map(|s| (s.id_key, (s.embedder == EMBEDDER_ID, s.text_hash)))
        .collect();
    store.scan_documents(collection, |doc| {
        let value = stored_document(collection, doc.id_key, doc.body)?;
        let state = states.remove(doc.id_key);
        let need = match (document::string_at(&value, &path), state) {
            (None, Some((true, hash))) if hash.is_empty() => Need::Skipped(false),
            (None, _) => Need::Skipped(true),
            (Some(_), None) => Need::Missing,
            (Some(text), Some((same_embedder, hash))) => {
                if same_embedder && !hash.is_empty() && hash == text_hash(text) {
                    Need::Current
                } else {
                    Need::Stale
                }
            }
        };
        each(doc.seq, doc.id_key, need);
        Ok::<_, Error>(ControlFlow::Continue(()))
    })?;
    // What is left has no document.
    Ok(states.len() as u64)
}

/// Lists the documents whose embedding of `field` is missing or stale.
pub(super) fn vstale(store: &Store, collection: &str, field: &str) -> Result<StaleReport> {
    let mut report = StaleReport {
        collection: collection.to_owned(),
        field: field.to_owned(),
        ..StaleReport::default()
    };
    report.orphans = classify(store, collection, field, |_, id_key, need| match need {
        Need::Current => report.current += 1,
        Need::Missing => report.missing.push(id_key.to_owned()),
        Need::Stale => report.stale.push(id_key.to_owned()),
        Need::Skipped(_) => report.skipped += 1,
    })?;
    Ok(report)
}

/// How many embeddings `vsync` writes per transaction.
const SYNC_BATCH: usize = 2048;

/// Computes the missing and stale embeddings of `field`, records documents without a string
/// at it, removes the embeddings of deleted documents, and brings the field's vector file
/// (the flat copy of its embeddings that searches read) up to date.
pub(super) fn vsync(
    store: &mut Store,
    collection: &str,
    field: &str,
    control: &Control,
) -> Result<SyncReport> {
    let path = parse_field(field)?;
    let mut report = SyncReport {
        collection: collection.to_owned(),
        field: field.to_owned(),
        ..SyncReport::default()
    };
    let mut work: Vec<i64> = Vec::new();
    let mut markers: Vec<String> = Vec::new();
    classify(store, collection, field, |seq, id_key, need| match need {
        Need::Current => report.current += 1,
        Need::Missing => {
            report.missing += 1;
            work.push(seq);
        }
        Need::Stale => {
            report.stale += 1;
            work.push(seq);
        }
        Need::Skipped(write) => {
            report.skipped += 1;
            if write {
                markers.push(id_key.to_owned());
            }
        }
    })?;
    let total = work.len() as u64;
    for (n, chunk) in work.chunks(SYNC_BATCH).enumerate() {
        control.report(Progress {
            phase: "embedding",
            done: (n * SYNC_BATCH) as u64,
            total: Some(total),
        });
        control.check()?;
        let docs = store.documents_by_seq(collection, chunk)?;
        let rows = embed_documents(collection, &path, docs)?;
        store.put_embeddings(collection, field, EMBEDDER_ID, &rows)?;
    }
    for chunk in markers.chunks(SYNC_BATCH) {
        let rows: Vec<NewEmbedding> = chunk.iter().cloned().map(NewEmbedding::marker).collect();
        store.put_embeddings(collection, field, EMBEDDER_ID, &rows)?;
    }
    report.removed = store.delete_orphan_embeddings(collection, field)?;
    // The derived copy searches read; rewritten only when the embeddings changed since.
    super::ann::sync_files(store, collection, field)?;
    Ok(report)
}

/// Embeds documents' field text on every core.
fn embed_documents(
    collection: &str,
    path: &[String],
    docs: Vec<StoredDocument>,
) -> Result<Vec<NewEmbedding>> {
    let one = |doc: &StoredDocument| -> Result<NewEmbedding> {
        let value = stored_document(collection, &doc.id_key, &doc.body)?;
        Ok(match document::string_at(&value, path) {
            Some(text) => NewEmbedding {
                id_key: doc.id_key.clone(),
                text_hash: text_hash(text),
                vector: embed(text).to_le_bytes(),
            },
            // Changed under us cannot happen (the writer lock is held); be safe anyway.
            None => NewEmbedding::marker(doc.id_key.clone()),
        })
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let per = docs.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = docs
            .chunks(per)
            .map(|part| scope.spawn(move || part.iter().map(one).collect::<Result<Vec<_>, _>>()))
            .collect();
        let mut out = Vec::with_capacity(docs.len());
        for handle in handles {
            out.extend(handle.join().expect("an embedding thread does not panic")?);
        }
        Ok(out)
    })
}

/// One `missing <id>` or `stale <id>` line per document, then the counts.
impl std::fmt::Display for StaleReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for key in &self.missing {
            writeln!(f, "missing {key}")?;
        }
        for key in &self.stale {
            writeln!(f, "stale {key}")?;
        }
        writeln!(
            f,
            "{}.{}: {} missing, {} stale, {} current, {} skipped (no string), {} orphaned",
            self.collection,
            self.field,
            self.missing.len(),
            self.stale.len(),
            self.current,
            self.skipped,
            self.orphans
        )
    }
}

/// One line of counts.
impl std::fmt::Display for SyncReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}.{}: embedded {} ({} missing, {} stale), {} current, {} skipped (no string), {} removed",
            self.collection,
            self.field,
            self.missing + self.stale,
            self.missing,
            self.stale,
            self.current,
            self.skipped,
            self.removed
        )
    }
}
