//! Ranking documents by a field's vectors: `vsearch` and document packs.

use std::collections::HashSet;
use std::ops::ControlFlow;

use ctxpack_core::Selector;
use ctxpack_docs::context::{self, ContextItem, ContextOptions, ContextPack, round_score};
use ctxpack_docs::document;
use ctxpack_docs::embed::{EMBEDDER_ID, Vector, embed};
use ctxpack_docs::filter::Filter;
use ctxpack_docs::knn;
use ctxpack_store::Store;
use ctxpack_store::docs::{StoredDocument, VectorRef};
use serde_json::{Value, json};

use super::{DocumentPackRequest, VsearchRequest, parse_field};
use crate::error::{Error, Result, corrupt_document};

/// Where a ranked row's document is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Through its stored embedding (the embedding's rowid).
    Stored(i64),
    /// Embedded on the fly (the document's seq).
    Fresh(i64),
}

/// Every eligible document of a field scored against a query.
struct Scored {
    scores: Vec<f32>,
    /// Tie-break keys: stored rows in the order their embeddings were written (insertion
    /// order for a collection synced once), then rows embedded on the fly in insertion order.
    keys: Vec<i64>,
    sources: Vec<Source>,
    embedded_on_the_fly: usize,
}

impl Scored {
    fn push(&mut self, score: f32, key: i64, source: Source) {
        self.scores.push(score);
        self.keys.push(key);
        self.sources.push(source);
    }
}

/// Scores every eligible document of `field` against `query`.
///
/// The stored vectors are read from the field's vector file when it is current (sequential
/// reads of contiguous rows), else streamed from the embeddings table; either way
/// they are scored where they lie, in rowid order, so memory holds one score per document,
/// no body is read and both give the same scores and tie keys. Every document has at most
/// one embedding row per field and deleting a document deletes its rows, so when the rows
/// number as many as the documents, all by this embedder, nothing is missing; otherwise the
/// documents without a vector are read and embedded on the fly.
fn score_documents(
    store: &Store,
    collection: &str,
    field: &str,
    path: &[String],
    query: &str,
    allowed: Option<&HashSet<String>>,
) -> Result<Scored> {
    let query = embed(query);
    let norm = query.norm();
    let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
    let documents = store.count_documents(collection)?;
    let capacity = usize::try_from(documents).unwrap_or(0);
    let mut scored = Scored {
        scores: Vec::with_capacity(capacity),
        keys: Vec::with_capacity(capacity),
        sources: Vec::with_capacity(capacity),
        embedded_on_the_fly: 0,
    };
    // Scores one stored row by this embedder.
    let score_row = |scored: &mut Scored, row: &VectorRef<'_>| -> Result<()> {
        // A marker (no string at the field), or filtered out.
        if row.vector.is_empty() || allowed.is_some_and(|a| !a.contains(row.id_key)) {
            return Ok(());
        }
        let Some(dot) = knn::dot_le_bytes(row.vector, &query) else {
            // Says what is wrong with the blob.
            Vector::from_le_bytes(row.vector)?;
            return Ok(());
        };
        scored.push(dot * scale, row.rowid, Source::Stored(row.rowid));
        Ok(())
    };
    let from_file = store.scan_vector_file(
        collection,
        field,
        EMBEDDER_ID,
        Vector::BYTES,
        allowed.is_some(),
        |row| score_row(&mut scored, &row),
    )?;
    let (rows, foreign, last_rowid) = match from_file {
        Some(summary) => (summary.rows, summary.foreign, summary.last_rowid),
        None => {
            // No current file (or it failed part way): the table is the truth.
            scored.scores.clear();
            scored.keys.clear();
            scored.sources.clear();
            let (mut rows, mut foreign, mut last_rowid) = (0u64, 0u64, 0i64);
            store.scan_vectors(collection, field, |row| {
                rows += 1;
                last_rowid = last_rowid.max(row.rowid);
                if row.embedder != EMBEDDER_ID {
                    foreign += 1;
                    return Ok::<_, Error>(());
                }
                score_row(&mut scored, &row)
            })?;
            (rows, foreign, last_rowid)
        }
    };
    if foreign == 0 && rows == documents {
        return Ok(scored);
    }
    let missing = store.documents_without_embedding(collection, field, EMBEDDER_ID)?;
    for chunk in missing.chunks(1024) {
        for doc in store.documents_by_seq(collection, chunk)? {
            if allowed.is_some_and(|a| !a.contains(&doc.id_key)) {
                continue;
            }
            let value: Value = serde_json::from_str(&doc.body)
                .map_err(|e| corrupt_document(collection, &doc.id_key, &e))?;
            if let Some(text) = document::string_at(&value, path) {
                let score = knn::dot(embed(text).as_slice(), query.as_slice()) * scale;
                scored.push(
                    score,
                    last_rowid.saturating_add(doc.seq),
                    Source::Fresh(doc.seq),
                );
                scored.embedded_on_the_fly += 1;
            }
        }
    }
    Ok(scored)
}

/// Visits the eligible documents of a field in rank order (best first, ties by [`Scored`]'s
/// keys) with their score and field text, until `visit` breaks or `limit` documents were
/// visited; returns how many documents were embedded on the fly.
///
/// The ranking is computed for a window that doubles as it is consumed, and bodies are read a
/// batch at a time, so a search that stops early reads only the bodies near the top. A stored
/// vector whose document no longer has a string at the field (it was replaced since the last
/// `vsync`) is passed over.
fn walk(
    store: &Store,
    target: (&str, &str),
    query: &str,
    filter: Option<&Filter>,
    limit: Option<usize>,
    mut visit: impl FnMut(f32, StoredDocument, &str) -> ControlFlow<()>,
) -> Result<usize> {
    let (collection, field) = target;
    let path = parse_field(field)?;
    store.require_collection(collection)?;
    let allowed = filter
        .map(|f| super::plan::matching_ids(store, collection, f))
        .transpose()?;
    let scored = score_documents(store, collection, field, &path, query, allowed.as_ref())?;
    let total = scored.scores.len();
    let limit = limit.unwrap_or(total);
    let mut want = limit.clamp(1, WALK_BATCH).min(total);
    let (mut done, mut visited) = (0, 0);
    while visited < limit && done < total {
        let order = knn::rank(&scored.scores, &scored.keys, Some(want));
        for chunk in order[done..].chunks(WALK_BATCH) {
            let rows: Vec<(Source, f32)> = chunk
                .iter()
                .map(|&i| (scored.sources[i], scored.scores[i]))
                .collect();
            for (score, doc) in with_documents(store, collection, &rows)? {
                let value: Value = serde_json::from_str(&doc.body)
                    .map_err(|e| corrupt_document(collection, &doc.id_key, &e))?;
                let Some(text) = document::string_at(&value, &path) else {
                    continue;
                };
                let text = text.to_owned();
                visited += 1;
                if visit(score, doc, &text).is_break() || visited >= limit {
                    return Ok(scored.embedded_on_the_fly);
                }
            }
            done += chunk.len();
        }
        want = want.saturating_mul(2).min(total);
    }
    Ok(scored.embedded_on_the_fly)
}

/// How many ranked documents [`walk`] reads at a time.
const WALK_BATCH: usize = 64;

/// The documents of ranked rows, in rank order. A document deleted since it was ranked is
/// left out.
fn with_documents(
    store: &Store,
    collection: &str,
    ranked: &[(Source, f32)],
) -> Result<Vec<(f32, StoredDocument)>> {
    let mut out = Vec::with_capacity(ranked.len());
    for (source, score) in ranked {
        let doc = match source {
            Source::Stored(rowid) => store
                .documents_by_embedding(collection, &[*rowid])?
                .pop()
                .map(|(_, doc)| doc),
            Source::Fresh(seq) => store.documents_by_seq(collection, &[*seq])?.pop(),
        };
        out.extend(doc.map(|doc| (*score, doc)));
    }
    Ok(out)
}

/// One `vsearch` result.
#[derive(Clone, Debug, PartialEq)]
pub struct VsearchHit {
    /// The canonical JSON of the document's `_id`.
    pub id_key: String,
    /// Cosine similarity to the query, rounded to four decimals.
    pub score: f64,
    /// The document as stored.
    pub document: String,
}

impl VsearchOutcome {
    /// The canonical JSON of the MCP `vsearch` tool: `{"hits":[…],"embeddedOnTheFly":n}`, each
    /// hit's document embedded exactly as stored.
    pub fn to_json_line(&self) -> String {
        let hits: Vec<String> = self.hits.iter().map(VsearchHit::to_json_line).collect();
        format!(
            "{{\"hits\":[{}],\"embeddedOnTheFly\":{}}}",
            hits.join(","),
            self.embedded_on_the_fly
        )
    }
}

impl VsearchHit {
    /// `{"id":…,"score":…,"document":…}` on one line, the document exactly as stored.
    pub fn to_json_line(&self) -> String {
        format!(
            "{{\"id\":{},\"score\":{},\"document\":{}}}",
            self.id_key,
            json!(self.score),
            self.document
        )
    }
}

/// What `vsearch` found.
#[derive(Clone, Debug, PartialEq)]
pub struct VsearchOutcome {
    /// The hits, best first.
    pub hits: Vec<VsearchHit>,
    /// Documents embedded on the fly because no vector was stored for them.
    pub embedded_on_the_fly: usize,
}

/// Exact cosine top-k over a field's vectors, the filter applied first. Only the returned
/// documents' bodies are read (plus every body when there is a filter).
pub(super) fn vsearch(
    store: &Store,
    request: &VsearchRequest,
    filter: Option<&Filter>,
) -> Result<VsearchOutcome> {
    let mut hits = Vec::with_capacity(request.k.min(1024));
    if request.k == 0 {
        // Still check the request, as any other search would.
        parse_field(&request.field)?;
        store.require_collection(&request.collection)?;
        return Ok(VsearchOutcome {
            hits,
            embedded_on_the_fly: 0,
        });
    }
    let embedded_on_the_fly = walk(
        store,
        (&request.collection, &request.field),
        &request.query,
        filter,
        Some(request.k),
        |score, doc, _| {
            hits.push(VsearchHit {
                id_key: doc.id_key,
                score: round_score(f64::from(score)),
                // Documents are stored verbatim; what a search shows is masked.
                document: crate::mask::document(&doc.body),
            });
            ControlFlow::Continue(())
        },
    )?;
    Ok(VsearchOutcome {
        hits,
        embedded_on_the_fly,
    })
}

/// Builds seed 001's context pack: rank the eligible documents by cosine similarity to the
/// query, then offer them best-first to the pack engine.
///
/// Bodies are read in rank order. With the `prefix` selector (the default) reading stops at
/// the first document that does not fit — it is offered, so the pack is marked truncated, and
/// nothing after it could be selected — so a large collection costs only the text the pack
/// returns. Other selectors may admit a smaller document further down, so every ranked
/// document (or the `top_k` best) is offered.
pub(super) fn context(
    store: &Store,
    request: &DocumentPackRequest,
    filter: Option<&Filter>,
) -> Result<(ContextPack, usize)> {
    let options = ContextOptions {
        budget: request.budget,
        meter: request.meter,
        selector: request.selector,
    };
    let budget = options.budget.get();
    let mut items = Vec::new();
    let mut redactions = ctxpack_core::RedactionSummary::default();
    let mut used = 0u64;
    let embedded_on_the_fly = if request.top_k == Some(0) {
        parse_field(&request.field)?;
        store.require_collection(&request.collection)?;
        0
    } else {
        walk(
            store,
            (&request.collection, &request.field),
            &request.query,
            filter,
            request.top_k,
            |score, doc, text| {
                // Documents are stored verbatim; what a pack shows is masked.
                let text = crate::mask::text(text, &mut redactions);
                let cost = options.meter.count(&text);
                items.push(ContextItem {
                    id: document::id_value(&doc.id_key),
                    score: f64::from(score),
                    text,
                });
                used = used.saturating_add(cost);
                // The prefix selector stops at the first chunk that does not fit.
                if options.selector == Selector::Prefix && used > budget {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?
    };
    let query = crate::mask::text(&request.query, &mut redactions);
    let mut pack = context::build(&query, &request.collection, items, &options);
    pack.pack.redactions = redactions;
    Ok((pack, embedded_on_the_fly))
}
