//! Field indexes and the filter planner.
//!
//! A collection may declare indexes on fields (`docs index create app.ctxpack docs status`).
//! Every document is then listed under the [`index_keys`] of its values at each declared path,
//! written in the same transaction as the document. A filter whose equality or `$in` clauses
//! name a declared path ([`Filter::index_plan`]) is answered from those lists: the documents
//! listed under every such clause are the candidates, and when the filter is nothing but those
//! clauses they are exactly the matches, found without reading a body. Otherwise each
//! candidate's body is checked against the whole filter. A filter with no indexed clause scans
//! every document, as before; both ways give the same documents in the same (insertion) order.

use std::collections::HashSet;
use std::ops::ControlFlow;

use ctxpack_docs::filter::{Filter, index_keys, index_path};
use ctxpack_store::Store;
use ctxpack_store::docs::{DocumentRef, IndexKey};
use serde_json::Value;

use crate::error::{Error, Result, stored_document};

/// The declared field indexes of a collection, their paths parsed.
pub(super) struct Declared(Vec<(String, Vec<String>)>);

impl Declared {
    /// Reads the declarations (none in a store that has no field indexes).
    pub(super) fn load(store: &Store, collection: &str) -> Result<Declared> {
        let fields = store.indexed_fields(collection)?;
        let mut declared = Vec::with_capacity(fields.len());
        for field in fields {
            let path = parse_index_field(&field)?;
            declared.push((field, path));
        }
        Ok(Declared(declared))
    }

    /// The keys of a document (`value`, plus `generated_id` when its `_id` was generated and
    /// is not in `value`) in every declared index.
    pub(super) fn keys(&self, value: &Value, generated_id: Option<&Value>) -> Vec<IndexKey> {
        if self.0.is_empty() {
            return Vec::new();
        }
        let with_id;
        let value = match (generated_id, value) {
            (Some(id), Value::Object(map)) => {
                let mut map = map.clone();
                map.insert("_id".to_owned(), id.clone());
                with_id = Value::Object(map);
                &with_id
            }
            _ => value,
        };
        self.0
            .iter()
            .flat_map(|(field, path)| {
                index_keys(value, path).into_iter().map(|key| IndexKey {
                    field: field.clone(),
                    key,
                })
            })
            .collect()
    }
}

/// Checks a field to index: a dotted path as filters write it.
pub(super) fn parse_index_field(field: &str) -> Result<Vec<String>> {
    index_path(field).map_err(|e| Error::invalid_field("field", format!("invalid field: {e}")))
}

/// The documents a filter may match, from the declared field indexes.
struct Candidates {
    /// Their seqs, ascending.
    seqs: Vec<i64>,
    /// Whether every candidate matches (the filter is exactly its indexed lookups).
    exact: bool,
}

/// The candidates of `filter` when a declared index answers any of its clauses.
fn candidates(store: &Store, collection: &str, filter: &Filter) -> Result<Option<Candidates>> {
    let plan = filter.index_plan();
    if plan.lookups.is_empty() {
        return Ok(None);
    }
    let indexed = store.indexed_fields(collection)?;
    let mut exact = plan.exact;
    let mut seqs: Option<Vec<i64>> = None;
    for lookup in &plan.lookups {
        if indexed.binary_search(&lookup.path).is_err() {
            exact = false;
            continue;
        }
        let mut found = Vec::new();
        store.scan_indexed(collection, &lookup.path, &lookup.keys, |seq| {
            found.push(seq);
            ControlFlow::Continue(())
        })?;
        found.sort_unstable();
        found.dedup();
        seqs = Some(match seqs {
            None => found,
            Some(before) => intersect(&before, &found),
        });
    }
    Ok(seqs.map(|seqs| Candidates { seqs, exact }))
}

/// The common elements of two ascending lists.
fn intersect(a: &[i64], b: &[i64]) -> Vec<i64> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// How many candidate documents are read at a time.
const BATCH: usize = 512;

/// Calls `visit` with every document matching `filter` (every document without one), in
/// insertion order, until it breaks.
pub(super) fn for_each_match(
    store: &Store,
    collection: &str,
    filter: Option<&Filter>,
    mut visit: impl FnMut(DocumentRef<'_>) -> ControlFlow<()>,
) -> Result<()> {
    let Some(filter) = filter else {
        return store.scan_documents(collection, |doc| Ok::<_, Error>(visit(doc)));
    };
    match candidates(store, collection, filter)? {
        Some(found) => visit_candidates(store, collection, filter, &found, visit),
        None => store.scan_documents(collection, |doc| {
            Ok::<_, Error>(if matches(collection, &doc, filter)? {
                visit(doc)
            } else {
                ControlFlow::Continue(())
            })
        }),
    }
}

/// Whether a stored document matches a filter.
fn matches(collection: &str, doc: &DocumentRef<'_>, filter: &Filter) -> Result<bool> {
    let value = stored_document(collection, doc.id_key, doc.body)?;
    Ok(filter.matches(&value))
}

/// [`for_each_match`] over the candidates of an index plan.
fn visit_candidates(
    store: &Store,
    collection: &str,
    filter: &Filter,
    found: &Candidates,
    mut visit: impl FnMut(DocumentRef<'_>) -> ControlFlow<()>,
) -> Result<()> {
    for chunk in found.seqs.chunks(BATCH) {
        for doc in store.documents_by_seq(collection, chunk)? {
            let doc = DocumentRef {
                seq: doc.seq,
                id_key: &doc.id_key,
                body: &doc.body,
            };
            if (found.exact || matches(collection, &doc, filter)?) && visit(doc).is_break() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The `_id` keys of the documents matching `filter`; with an exact index plan no body is
/// read.
pub(super) fn matching_ids(
    store: &Store,
    collection: &str,
    filter: &Filter,
) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    let add = |ids: &mut HashSet<String>, doc: DocumentRef<'_>| {
        ids.insert(doc.id_key.to_owned());
        ControlFlow::Continue(())
    };
    match candidates(store, collection, filter)? {
        Some(found) if found.exact => {
            ids.reserve(found.seqs.len());
            for chunk in found.seqs.chunks(BATCH) {
                ids.extend(store.id_keys_by_seq(collection, chunk)?);
            }
        }
        Some(found) => visit_candidates(store, collection, filter, &found, |d| add(&mut ids, d))?,
        None => for_each_match(store, collection, Some(filter), |d| add(&mut ids, d))?,
    }
    Ok(ids)
}

/// How a ranked search applies a filter.
pub(super) enum RankFilter {
    /// Rank only these documents (by `_id` key).
    Allowed(HashSet<String>),
    /// Rank every document and skip those the filter rejects as they come up: the filter
    /// matches so many documents that listing them costs more than the few extra bodies a
    /// search reads. The order of the matches is the same either way.
    Skip,
}

/// An indexed filter that matches more than this many documents, and more than one in
/// [`SKIP_SHARE`] of them, is applied while walking the ranking rather than before it: walking
/// then reads at most a few times more bodies than it returns, while listing the matches would
/// read one index entry and one `_id` per match.
const SKIP_ABOVE: u64 = 1000;

/// See [`SKIP_ABOVE`].
const SKIP_SHARE: u64 = 8;

/// Chooses how a ranked search applies `filter`: a filter that one declared index answers
/// exactly and that matches many documents ([`SKIP_ABOVE`]) is checked as the ranking is
/// walked; any other is listed first.
pub(super) fn rank_filter(store: &Store, collection: &str, filter: &Filter) -> Result<RankFilter> {
    let plan = filter.index_plan();
    if let [lookup] = plan.lookups.as_slice()
        && plan.exact
        && store
            .indexed_fields(collection)?
            .binary_search(&lookup.path)
            .is_ok()
    {
        let floor = SKIP_ABOVE.max(store.count_documents(collection)? / SKIP_SHARE);
        if store.count_indexed(collection, &lookup.path, &lookup.keys, floor)? > floor {
            return Ok(RankFilter::Skip);
        }
    }
    Ok(RankFilter::Allowed(matching_ids(
        store, collection, filter,
    )?))
}
