//! Ranking documents by a field's vectors: `vsearch` and document packs.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use ctxpack_core::Selector;
use ctxpack_docs::context::{self, ContextItem, ContextOptions, ContextPack, round_score};
use ctxpack_docs::document;
use ctxpack_docs::embed::{EMBEDDER_ID, Vector, embed};
use ctxpack_docs::filter::Filter;
use ctxpack_docs::knn;
use ctxpack_store::Store;
use ctxpack_store::docs::StoredDocument;
use serde_json::json;

use super::{DocumentPackRequest, VsearchRequest, parse_field};
use crate::error::{Error, Result, stored_document};

mod approximate;
mod sparse;

use approximate::Approximate;
use sparse::Sparse;

/// Where a ranked row's document is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Source {
    /// Through its stored embedding (the embedding's rowid).
    Stored(i64),
    /// Embedded on the fly (the document's seq).
    Fresh(i64),
}

/// Documents of a field scored against a query.
#[derive(Default)]
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

    fn clear(&mut self) {
        self.scores.clear();
        self.keys.clear();
        self.sources.clear();
    }

    /// The first `want` rows in rank order, and whether there are no more.
    fn top(&self, want: usize) -> Window {
        let order = knn::rank(&self.scores, &self.keys, Some(want));
        let rows = order
            .iter()
            .map(|&i| (self.sources[i], self.scores[i]))
            .collect();
        (rows, want >= self.scores.len())
    }
}

/// The first rows of a ranking, best first, and whether the ranking has no more.
type Window = (Vec<(Source, f32)>, bool);

/// A query, embedded, with the factor that turns its dot products into cosines.
struct Query {
    vector: Vector,
    scale: f32,
}

impl Query {
    fn new(text: &str) -> Query {
        let vector = embed(text);
        let norm = vector.norm();
        let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        Query { vector, scale }
    }
}

/// Which documents a ranking may return: all of them, or those with these `_id` keys.
type Allowed<'a> = Option<&'a HashSet<String>>;

/// Scores every eligible document of `field` against `query`.
///
/// The stored vectors are read from the field's vector file when it is current (a block of
/// columns at a time), else streamed from the embeddings table; either way they are scored
/// where they lie, in rowid order, so memory holds one score per document, no body is read
/// and both give the same scores and tie keys, bit for bit. Every document has at most one
/// embedding row per field and deleting a document deletes its rows, so when the rows number
/// as many as the documents, all by this embedder, nothing is missing; otherwise the documents
/// without a vector are read and embedded on the fly (those `fresh_filter` rejects are left
/// out).
fn score_documents(
    store: &Store,
    target: (&str, &str, &[String]),
    query: &Query,
    allowed: Allowed<'_>,
    fresh_filter: Option<&Filter>,
) -> Result<Scored> {
    let (collection, field, path) = target;
    let documents = store.count_documents(collection)?;
    let capacity = usize::try_from(documents).unwrap_or(0);
    let mut scored = Scored {
        scores: Vec::with_capacity(capacity),
        keys: Vec::with_capacity(capacity),
        sources: Vec::with_capacity(capacity),
        embedded_on_the_fly: 0,
    };
    let (rows, foreign, last_rowid) =
        match score_file(store, collection, field, query, allowed, &mut scored)? {
            Some(summary) => (summary.rows, summary.foreign, summary.last_rowid),
            None => {
                // No current file (or it failed part way): the table is the truth.
                scored.clear();
                let (mut rows, mut foreign, mut last_rowid) = (0u64, 0u64, 0i64);
                store.scan_vectors(collection, field, |row| {
                    rows += 1;
                    last_rowid = last_rowid.max(row.rowid);
                    if row.embedder != EMBEDDER_ID {
                        foreign += 1;
                        return Ok::<_, Error>(());
                    }
                    // A marker (no string at the field), or filtered out.
                    if row.vector.is_empty() || allowed.is_some_and(|a| !a.contains(row.id_key)) {
                        return Ok(());
                    }
                    let Some(dot) = knn::dot_le_bytes(row.vector, &query.vector) else {
                        // Says what is wrong with the blob.
                        Vector::from_le_bytes(row.vector)?;
                        return Ok(());
                    };
                    scored.push(dot * query.scale, row.rowid, Source::Stored(row.rowid));
                    Ok(())
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
            let value = stored_document(collection, &doc.id_key, &doc.body)?;
            if fresh_filter.is_some_and(|f| !f.matches(&value)) {
                continue;
            }
            if let Some(text) = document::string_at(&value, path) {
                let score = knn::dot(embed(text).as_slice(), query.vector.as_slice()) * query.scale;
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

/// Scores the rows of the field's current vector file into `scored`; `None` when there is no
/// current file or it cannot be read whole (then `scored` must be discarded).
fn score_file(
    store: &Store,
    collection: &str,
    field: &str,
    query: &Query,
    allowed: Allowed<'_>,
    scored: &mut Scored,
) -> Result<Option<ctxpack_store::docs::VectorFileSummary>> {
    let Some(mut file) = store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
    else {
        return Ok(None);
    };
    if file.load_rowids().is_none() || (allowed.is_some() && file.load_ids().is_none()) {
        return Ok(None);
    }
    let (mut block, mut dots) = (Vec::new(), Vec::new());
    for b in 0..file.blocks() {
        let (first, rows) = file.block_rows(b);
        if !file.read_block(b, None, &mut block) {
            return Ok(None);
        }
        knn::dot_columns(&block, rows, &query.vector, &mut dots);
        for (i, dot) in dots.iter().enumerate() {
            let row = first + i;
            if allowed.is_some_and(|a| !a.contains(file.id_key(row))) {
                continue;
            }
            let Some(rowid) = file.rowid(row) else {
                return Ok(None);
            };
            scored.push(dot * query.scale, rowid, Source::Stored(rowid));
        }
    }
    Ok(Some(file.summary()))
}

/// How a walk ranks the documents.
enum Ranking {
    Full(Scored),
    Sparse(Box<Sparse>),
    Approximate(Box<Approximate>),
}

/// Visits the eligible documents of a field in rank order (best first, ties by [`Scored`]'s
/// keys) with their score and field text, until `visit` breaks or `limit` documents were
/// visited; returns how many documents were embedded on the fly.
///
/// The ranking is computed for a window that doubles as it is consumed, and bodies are read a
/// batch at a time, so a search that stops early reads only the bodies near the top. A short
/// query is ranked by a sparse scan of the vector file ([`Sparse`]) when it applies, else every
/// document is scored. A long query over a field with a current approximate index, with no
/// filter and unless `exact`, is ranked through the index ([`Approximate`]) as far as its
/// probed lists reach; the documents after those are ranked exactly, those already visited
/// left out. A stored vector whose document no longer has a string at the field (it was
/// replaced since the last `vsync`) is passed over.
fn walk(
    store: &Store,
    target: (&str, &str),
    query: &str,
    filter: Option<&Filter>,
    limit: Option<usize>,
    exact: bool,
    mut visit: impl FnMut(f32, StoredDocument, &str) -> ControlFlow<()>,
) -> Result<usize> {
    let (collection, field) = target;
    let path = parse_field(field)?;
    store.require_collection(collection)?;
    let rank_filter = filter
        .map(|f| super::plan::rank_filter(store, collection, f))
        .transpose()?;
    let (allowed, skip) = match &rank_filter {
        Some(super::plan::RankFilter::Allowed(ids)) => (Some(ids), None),
        Some(super::plan::RankFilter::Skip) => (None, filter),
        None => (None, None),
    };
    let query = Query::new(query);
    let approximate = match (exact, filter) {
        (false, None) => Approximate::open(store, collection, field, &query)?,
        _ => None,
    };
    let mut ranking = match approximate {
        Some(approximate) => Ranking::Approximate(Box::new(approximate)),
        None => match Sparse::open(store, collection, field, &query, allowed)? {
            Some(sparse) => Ranking::Sparse(Box::new(sparse)),
            None => Ranking::Full(score_documents(
                store,
                (collection, field, &path),
                &query,
                allowed,
                skip,
            )?),
        },
    };
    let embedded_on_the_fly = match &ranking {
        Ranking::Full(scored) => scored.embedded_on_the_fly,
        Ranking::Sparse(_) | Ranking::Approximate(_) => 0,
    };
    // The rows an approximate ranking passed on, left out of the exact ranking after it.
    let mut seen: Option<HashSet<Source>> =
        matches!(ranking, Ranking::Approximate(_)).then(HashSet::new);
    let limit = limit.unwrap_or(usize::MAX);
    let mut want = limit.clamp(1, WALK_BATCH);
    let (mut done, mut visited) = (0, 0);
    loop {
        let top = match &mut ranking {
            Ranking::Full(scored) => Some(scored.top(want)),
            Ranking::Sparse(sparse) => sparse.top(store, target, &query, allowed, want)?,
            Ranking::Approximate(approximate) => approximate.top(store, target, &query, want)?,
        };
        let Some((order, complete)) = top else {
            // The sparse and full scans rank in the same total order, so the rows already
            // visited stay a prefix; after an approximate ranking, they are left out.
            if matches!(ranking, Ranking::Approximate(_)) {
                done = 0;
            }
            ranking = Ranking::Full(score_documents(
                store,
                (collection, field, &path),
                &query,
                allowed,
                skip,
            )?);
            continue;
        };
        for ranked in order.get(done..).unwrap_or_default().chunks(WALK_BATCH) {
            let fresh: Vec<(Source, f32)>;
            let chunk = match &mut seen {
                Some(seen) => {
                    fresh = ranked
                        .iter()
                        .filter(|(source, _)| seen.insert(*source))
                        .copied()
                        .collect();
                    &fresh[..]
                }
                None => ranked,
            };
            for (score, doc) in with_documents(store, collection, chunk)? {
                let value = stored_document(collection, &doc.id_key, &doc.body)?;
                if skip.is_some_and(|f| !f.matches(&value)) {
                    continue;
                }
                let Some(text) = document::string_at(&value, &path) else {
                    continue;
                };
                let text = text.to_owned();
                visited += 1;
                if visit(score, doc, &text).is_break() || visited >= limit {
                    return Ok(embedded_on_the_fly);
                }
            }
            done += ranked.len();
        }
        if complete {
            return Ok(embedded_on_the_fly);
        }
        want = want.saturating_mul(2);
    }
}

/// How many ranked documents [`walk`] reads at a time.
const WALK_BATCH: usize = 64;

/// The documents of ranked rows, in rank order. A document deleted since it was ranked is
/// left out. The rows are looked up together (a ranking lists each row once): one statement and
/// one read of the store per batch, not per row.
fn with_documents(
    store: &Store,
    collection: &str,
    ranked: &[(Source, f32)],
) -> Result<Vec<(f32, StoredDocument)>> {
    let (mut stored, mut fresh) = (Vec::new(), Vec::new());
    for (source, _) in ranked {
        match source {
            Source::Stored(rowid) => stored.push(*rowid),
            Source::Fresh(seq) => fresh.push(*seq),
        }
    }
    let mut by_rowid: HashMap<i64, StoredDocument> = store
        .documents_by_embedding(collection, &stored)?
        .into_iter()
        .collect();
    let mut by_seq: HashMap<i64, StoredDocument> = store
        .documents_by_seq(collection, &fresh)?
        .into_iter()
        .map(|doc| (doc.seq, doc))
        .collect();
    Ok(ranked
        .iter()
        .filter_map(|(source, score)| {
            let doc = match source {
                Source::Stored(rowid) => by_rowid.remove(rowid),
                Source::Fresh(seq) => by_seq.remove(seq),
            };
            doc.map(|doc| (*score, doc))
        })
        .collect())
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
        request.exact,
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

/// How many ranked documents past the first that does not fit a `prefix` document pack reads
/// and lists as dropped: as many as a snapshot pack's default pool.
const LISTED_PAST_THE_STOP: usize = 30;

/// Builds seed 001's context pack: rank the eligible documents by cosine similarity to the
/// query, then offer them best-first to the pack engine.
///
/// Bodies are read in rank order. With the `prefix` selector (the default) nothing after the
/// first document that does not fit can be selected, so reading stops [`LISTED_PAST_THE_STOP`]
/// documents later: those are offered too, so the pack lists them as dropped
/// (`prefix_truncated`) beside the one that did not fit, and a large collection costs only a
/// few bodies more than the pack returns; what ranks lower is not a candidate, as below a
/// pool's size. Other selectors may admit a smaller document further down, so every ranked
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
    // Documents read after the first that did not fit, under the prefix selector.
    let mut past_the_stop: Option<usize> = None;
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
            false,
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
                // The prefix selector stops at the first chunk that does not fit; a few more
                // are read so the pack names them among the dropped.
                if let Some(n) = &mut past_the_stop {
                    *n += 1;
                } else if options.selector == Selector::Prefix && used > budget {
                    past_the_stop = Some(0);
                }
                if past_the_stop.is_some_and(|n| n >= LISTED_PAST_THE_STOP) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )?
    };
    let query = crate::mask::text(&request.query, &mut redactions);
    let mut pack = context::build(&query, &request.collection, items, &options);
    pack.pack.set_redactions(redactions);
    Ok((pack, embedded_on_the_fly))
}
