//! Ranking documents by a field's vectors: `vsearch` and document packs.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use ctxpack_core::Selector;
use ctxpack_docs::context::{self, ContextItem, ContextOptions, ContextPack, round_score};
use ctxpack_docs::document;
use ctxpack_docs::embed::{DIM, EMBEDDER_ID, Vector, embed};
use ctxpack_docs::filter::Filter;
use ctxpack_docs::knn;
use ctxpack_store::Store;
use ctxpack_store::docs::StoredDocument;
use serde_json::json;

use super::{DocumentPackRequest, VsearchRequest, parse_field};
use crate::error::{Error, Result, stored_document};

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

/// The most non-zero query components a sparse scan reads; a query with more is scored in
/// full (it would read a large share of the columns anyway).
const SPARSE_MAX_DIMS: usize = 64;

/// The most rows a sparse scan scores one by one from their stored vectors before it gives
/// way to a full scan (a context pack that offers every document walks the whole ranking).
const SPARSE_MAX_RESCORE: usize = 4096;

/// A sparse scan of a field's vector file: the partial dot product of every row over the
/// query's non-zero components, from which [`knn::sparse_candidates`] finds the rows that can
/// rank among the best; only those are scored exactly, from their stored vectors, and the
/// scores are the ones a full scan computes, bit for bit.
struct Sparse {
    file: ctxpack_store::docs::vectors::VectorFile,
    partial: knn::PartialSums,
    /// Exact scores and rowids of rows already scored (`None`: the row is gone from the
    /// table).
    exact: std::collections::HashMap<usize, Option<(f32, i64)>>,
}

impl Sparse {
    /// Reads the partial sums; `None` when a sparse scan does not apply: no current file, a
    /// collection with documents that have no stored vector, a query with no or too many
    /// non-zero components, or a file that cannot be read.
    fn open(
        store: &Store,
        collection: &str,
        field: &str,
        query: &Query,
        allowed: Allowed<'_>,
    ) -> Result<Option<Sparse>> {
        let support = knn::support(&query.vector);
        if support.is_empty() || support.len() > SPARSE_MAX_DIMS {
            return Ok(None);
        }
        let Some(mut file) =
            store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
        else {
            return Ok(None);
        };
        let summary = file.summary();
        if summary.foreign != 0 || summary.rows != store.count_documents(collection)? {
            return Ok(None);
        }
        if allowed.is_some() && file.load_ids().is_none() {
            return Ok(None);
        }
        let mut partial = knn::PartialSums::with_capacity(file.len());
        let mut block = Vec::new();
        for b in 0..file.blocks() {
            let (_, rows) = file.block_rows(b);
            if !file.read_block(b, Some(&support), &mut block) {
                return Ok(None);
            }
            partial.push_block(&block, rows, &support, &query.vector);
        }
        Ok(Some(Sparse {
            file,
            partial,
            exact: std::collections::HashMap::new(),
        }))
    }

    /// The first `want` allowed rows in rank order, and whether there are no more; `None`
    /// when so many rows would be scored one by one that a full scan is cheaper, or the file
    /// cannot be read any more.
    fn top(
        &mut self,
        store: &Store,
        target: (&str, &str),
        query: &Query,
        allowed: Allowed<'_>,
        want: usize,
    ) -> Result<Option<Window>> {
        if want > SPARSE_MAX_RESCORE {
            return Ok(None);
        }
        let file = &self.file;
        let Some(found) = knn::sparse_candidates(&self.partial, want, |row| {
            allowed.is_none_or(|a| a.contains(file.id_key(row)))
        }) else {
            // A sum that is not a finite number: score every row instead.
            return Ok(None);
        };
        let missing: Vec<usize> = found
            .rescore
            .iter()
            .copied()
            .filter(|row| !self.exact.contains_key(row))
            .collect();
        if missing.len() > SPARSE_MAX_RESCORE {
            return Ok(None);
        }
        let mut rowids = Vec::with_capacity(missing.len());
        for &row in &missing {
            // A file that fails part way gives way to a full scan (which scans the table).
            let Some(rowid) = self.file.rowid(row) else {
                return Ok(None);
            };
            rowids.push(rowid);
        }
        let vectors = store.vectors_by_rowid(target.0, target.1, EMBEDDER_ID, &rowids)?;
        for ((row, rowid), vector) in missing.into_iter().zip(rowids).zip(vectors) {
            let score = vector
                .and_then(|v| knn::dot_le_bytes(&v, &query.vector))
                .map(|dot| dot * query.scale);
            self.exact.insert(row, score.map(|s| (s, rowid)));
        }
        let mut scored = Scored::default();
        for &row in &found.rescore {
            if let Some(Some((score, rowid))) = self.exact.get(&row) {
                scored.push(*score, *rowid, Source::Stored(*rowid));
            }
        }
        for &row in &found.zero {
            let Some(rowid) = self.file.rowid(row) else {
                return Ok(None);
            };
            scored.push(0.0, rowid, Source::Stored(rowid));
        }
        let (rows, _) = scored.top(want);
        let complete = found.rescore.len() + found.zero.len() < want;
        Ok(Some((rows, complete)))
    }
}

/// A ranking through the field's approximate index: the lists nearest the query are read,
/// each of their rows scored from its codes to within a bound, and the rows that can rank
/// among the best are scored exactly from their stored vectors, so the scores are the ones a
/// full scan computes, bit for bit; rows in lists not probed are not seen.
struct Approximate {
    rowids: Vec<i64>,
    approx: Vec<f32>,
    bound: Vec<f32>,
    /// Exact scores of candidates already scored (`None`: the row is gone from the table).
    exact: std::collections::HashMap<usize, Option<f32>>,
    /// Whether every list was probed (then the ranking is the exact one).
    everything: bool,
}

impl Approximate {
    /// Reads the probed lists; `None` when the index does not apply: none declared or current,
    /// a query the sparse scan answers (few non-zero components), or a collection with
    /// documents that have no stored vector.
    fn open(
        store: &Store,
        collection: &str,
        field: &str,
        query: &Query,
    ) -> Result<Option<Approximate>> {
        if knn::support(&query.vector).len() <= SPARSE_MAX_DIMS {
            return Ok(None);
        }
        let Some(declaration) = store.ann_declaration(collection, field)? else {
            return Ok(None);
        };
        let Some(index) = store
            .open_ann_file(collection, field, DIM)?
            .filter(|f| f.is_current())
        else {
            return Ok(None);
        };
        let Some(file) = store.open_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?
        else {
            return Ok(None);
        };
        let summary = file.summary();
        if summary.foreign != 0 || summary.rows != store.count_documents(collection)? {
            return Ok(None);
        }
        // An index holds one entry per stored vector: a header claiming more (a sparse file's
        // length can match any claim) is not read, so no list is allocated beyond the data.
        if index.len() as u64 > summary.rows {
            return Ok(None);
        }
        let q = query.vector.as_slice();
        let coded = &ctxpack_docs::ivf::CodedQuery::new(q);
        let probes = super::ann::probes(&declaration, index.lists());
        let mut ranking = Approximate {
            rowids: Vec::new(),
            approx: Vec::new(),
            bound: Vec::new(),
            exact: std::collections::HashMap::new(),
            everything: probes >= index.lists(),
        };
        // The probed lists, read and scored on every core, a contiguous share each, and
        // joined in probe order, so the candidates do not depend on the cores.
        let lists = ctxpack_docs::ivf::probe_order(index.centroids(), DIM, q, probes);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let share = lists.len().div_ceil(threads).max(1);
        let index = &index;
        let parts: Vec<Option<Candidates>> = std::thread::scope(|scope| {
            let workers: Vec<_> = lists
                .chunks(share)
                .map(|mine| scope.spawn(move || score_lists(index, mine, coded)))
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap_or(None))
                .collect()
        });
        for part in parts {
            let Some(part) = part else {
                return Ok(None);
            };
            ranking.rowids.extend(part.rowids);
            ranking.approx.extend(part.approx);
            ranking.bound.extend(part.bound);
        }
        // A row is in one list once: an index that lists one twice is damaged, not used.
        if ctxpack_docs::ivf::repeats(&ranking.rowids) {
            return Ok(None);
        }
        Ok(Some(ranking))
    }

    /// The first `want` rows in rank order, and whether there are no more; `None` when the
    /// probed lists hold no more than `want` rows and others were not probed (the walk then
    /// ranks the rest exactly).
    fn top(
        &mut self,
        store: &Store,
        target: (&str, &str),
        query: &Query,
        want: usize,
    ) -> Result<Option<Window>> {
        let n = self.rowids.len();
        if want >= n && !self.everything {
            return Ok(None);
        }
        let set = ctxpack_docs::ivf::rescore_set(&self.approx, &self.bound, want);
        let missing: Vec<usize> = set
            .iter()
            .copied()
            .filter(|i| !self.exact.contains_key(i))
            .collect();
        let rowids: Vec<i64> = missing.iter().map(|&i| self.rowids[i]).collect();
        let vectors = store.vectors_by_rowid(target.0, target.1, EMBEDDER_ID, &rowids)?;
        for (i, vector) in missing.into_iter().zip(vectors) {
            let score = vector
                .and_then(|v| knn::dot_le_bytes(&v, &query.vector))
                .map(|dot| dot * query.scale);
            self.exact.insert(i, score);
        }
        let mut scored = Scored::default();
        for i in set {
            if let Some(Some(score)) = self.exact.get(&i) {
                scored.push(*score, self.rowids[i], Source::Stored(self.rowids[i]));
            }
        }
        let (rows, _) = scored.top(want);
        Ok(Some((rows, self.everything && want >= n)))
    }
}

/// Rows of probed lists with their approximate scores and error bounds.
#[derive(Default)]
struct Candidates {
    rowids: Vec<i64>,
    approx: Vec<f32>,
    bound: Vec<f32>,
}

/// Reads `lists` of `index` and scores their rows against the coded query from their codes;
/// `None` when the file cannot be read.
fn score_lists(
    index: &ctxpack_store::docs::ann::AnnFile,
    lists: &[usize],
    query: &ctxpack_docs::ivf::CodedQuery,
) -> Option<Candidates> {
    let rows: usize = lists.iter().map(|&j| index.list_len(j)).sum();
    let mut out = Candidates {
        rowids: Vec::with_capacity(rows),
        approx: Vec::with_capacity(rows),
        bound: Vec::with_capacity(rows),
    };
    let mut part = Vec::new();
    for &j in lists {
        let read = index.visit_list(j, &mut part, |entry| {
            let (rowid, scale, slack, codes) = ctxpack_store::docs::ann::parse_entry(entry);
            let (approx, bound) = query.score(scale, slack, codes);
            out.rowids.push(rowid);
            out.approx.push(approx);
            out.bound.push(bound);
        });
        if !read {
            return None;
        }
    }
    Some(out)
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
