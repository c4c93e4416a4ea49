//! Document collections: JSON documents in a store, vector search and document packs.
//!
//! A store holds collections of JSON documents beside its snapshots. Documents are kept as the
//! text they were given (minus whitespace between tokens), keyed by the canonical JSON of
//! their `_id`, which is generated as an ObjectId when missing. Embeddings of a string field
//! are computed by the offline hashing embedder, stored per document and field with the hash
//! of the text, and kept current by `vsync`.
//!
//! Searches read only the stored vectors (and the primary-key index) of a collection, never a
//! document body they do not return: from the field's flat vector file, which `vsync` writes
//! beside the database, while it matches the embeddings in SQLite, else from SQLite itself.
//! A document without a stored vector for the field (the field was never synced, or the
//! document is newer than the last `vsync`) is embedded on the fly. Writes hold the writer
//! lock; reads open the store read-only and never take it.

mod ann;
mod ids;
mod plan;
mod record;
mod search;
mod sync;
mod write;

use ctxpack_core::{Budget, Meter, RenderOptions, Selector, Warning};
use ctxpack_docs::context::ContextPack;
use ctxpack_docs::document;
use ctxpack_docs::filter::Filter;
use ctxpack_store::docs::{CollectionInfo, FieldIndexInfo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use ann::{AnnIndexInfo, AnnRequest};
pub use ids::IdGenerator;
pub use search::{VsearchHit, VsearchOutcome};
pub use sync::{StaleReport, SyncReport};
pub use write::{ImportReport, ImportSource, MAX_DOCUMENT_BYTES};

use crate::control::Control;
use crate::error::{Error, Result, no_store};
use crate::schema;
use crate::workspace::{RecordExtra, Recorded, Workspace};

/// Insert one document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InsertRequest {
    /// The collection (created on first insert).
    pub collection: String,
    /// The document: a JSON object, or its JSON text. An `_id` is generated (an ObjectId)
    /// when it has none.
    #[schemars(with = "schema::Filter")]
    pub document: Value,
    /// Overwrite the stored document with the same `_id` instead of failing with a conflict.
    #[serde(default)]
    pub replace: bool,
    /// Wait for another writer instead of failing.
    #[serde(default)]
    #[schemars(skip)]
    pub wait: bool,
}

/// What an insert did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Inserted {
    /// The collection.
    pub collection: String,
    /// The document's `_id`.
    pub id: Value,
    /// Whether a stored document was replaced.
    pub replaced: bool,
}

/// Import JSON Lines into a collection (the lines are given beside the request).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection"]))]
pub struct ImportRequest {
    /// The collection (created on first insert).
    pub collection: String,
    /// Documents per transaction.
    #[schemars(range(min = 1))]
    pub batch_size: usize,
    /// String fields (dotted paths) whose embeddings are computed in the same pass and
    /// written with their documents, as `vsync` would compute them, so the collection can be
    /// searched as soon as the import ends.
    pub embed: Vec<String>,
    /// Wait for another writer instead of failing.
    #[schemars(skip)]
    pub wait: bool,
}

impl Default for ImportRequest {
    fn default() -> Self {
        ImportRequest {
            collection: String::new(),
            batch_size: 1000,
            embed: Vec::new(),
            wait: false,
        }
    }
}

/// Find documents.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection"]))]
pub struct FindRequest {
    /// The collection.
    pub collection: String,
    /// A MongoDB-style filter (an object, or its JSON text); every document when absent.
    #[schemars(with = "Option<schema::Filter>")]
    pub filter: Option<Value>,
    /// At most this many documents.
    pub limit: Option<usize>,
}

/// Delete the documents matching a filter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteRequest {
    /// The collection.
    pub collection: String,
    /// A MongoDB-style filter (an object, or its JSON text); `{}` deletes every document.
    #[schemars(with = "schema::Filter")]
    pub filter: Value,
    /// Wait for another writer instead of failing.
    #[serde(default)]
    #[schemars(skip)]
    pub wait: bool,
}

/// Exact cosine k-nearest-neighbour search over a string field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection", "field", "query"]))]
pub struct VsearchRequest {
    /// The collection.
    pub collection: String,
    /// The string field to rank by (a dotted path).
    pub field: String,
    /// The query text.
    pub query: String,
    /// How many documents to return.
    #[schemars(range(min = 1))]
    pub k: usize,
    /// A MongoDB-style filter applied before ranking, as an object or its JSON text, e.g.
    /// {"status": "published"} or {"year": {"$gte": 2020}}.
    #[schemars(with = "Option<schema::Filter>")]
    pub filter: Option<Value>,
    /// Scan every vector even when the field has an approximate index (which answers long
    /// queries from the lists nearest them).
    pub exact: bool,
}

impl Default for VsearchRequest {
    fn default() -> Self {
        VsearchRequest {
            collection: String::new(),
            field: String::new(),
            query: String::new(),
            k: 10,
            filter: None,
            exact: false,
        }
    }
}

/// Compute (or list) the missing and stale embeddings of a field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection", "field"]))]
pub struct FieldRequest {
    /// The collection.
    pub collection: String,
    /// The string field (a dotted path).
    pub field: String,
    /// Wait for another writer instead of failing (writes only).
    #[schemars(skip)]
    pub wait: bool,
}

/// A budgeted, cited pack of the documents most similar to a query.
///
/// `Default` is seed 001's contract: a budget of 1,000 `approx` units and the `prefix`
/// selector over every ranked document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[schemars(extend("required" = ["collection", "field", "query"]))]
pub struct DocumentPackRequest {
    /// The collection (namespace) to retrieve over.
    pub collection: String,
    /// The string field whose text is embedded, ranked and packed (a dotted path such as
    /// `body` or `meta.summary`).
    pub field: String,
    /// The task or query text to rank against.
    pub query: String,
    /// The hard budget, in units of `meter` (approximate tokens, ceil(chars / 4), by
    /// default).
    #[schemars(with = "schema::Budget")]
    pub budget: Budget,
    /// The budget unit.
    #[schemars(with = "schema::Meter")]
    pub meter: Meter,
    /// Selection policy: prefix (stop at the first chunk that does not fit), skip, diverse or
    /// coverage.
    #[schemars(with = "schema::Selector")]
    pub selector: Selector,
    /// Offer at most this many top-ranked documents to selection (default: all).
    pub top_k: Option<usize>,
    /// A MongoDB-style filter applied before ranking, as an object or its JSON text.
    #[schemars(with = "Option<schema::Filter>")]
    pub filter: Option<Value>,
}

impl Default for DocumentPackRequest {
    fn default() -> Self {
        let options = ctxpack_docs::context::ContextOptions::default();
        DocumentPackRequest {
            collection: String::new(),
            field: String::new(),
            query: String::new(),
            budget: options.budget,
            meter: options.meter,
            selector: options.selector,
            top_k: None,
            filter: None,
        }
    }
}

/// A built document pack.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentPack {
    /// The pack, in seed 001's shape (its canonical JSON is [`ContextPack::to_json_line`]).
    pub pack: ContextPack,
    /// Documents embedded on the fly because no vector was stored for them (the pack then
    /// carries a notice; seed 001's JSON does not show notices).
    pub embedded_on_the_fly: usize,
    /// Whether it was recorded in the ledger.
    pub recorded: Recorded,
}

/// Parses a filter given as an object or as its JSON text.
pub(crate) fn parse_filter(value: &Value) -> Result<Filter> {
    let parsed;
    let value = match value {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| Error::invalid_field("filter", format!("not valid JSON: {e}")))?;
            &parsed
        }
        other => other,
    };
    Filter::parse(value).map_err(|e| Error::invalid_field("filter", format!("invalid filter: {e}")))
}

fn parse_optional_filter(value: Option<&Value>) -> Result<Option<Filter>> {
    value.map(parse_filter).transpose()
}

pub(crate) fn parse_field(field: &str) -> Result<Vec<String>> {
    document::field_path(field)
        .map_err(|e| Error::invalid_field("field", format!("invalid field: {e}")))
}

impl Workspace {
    /// Creates the store directory as a document store; returns whether it was new (an
    /// existing store is left as it is).
    pub fn create_store(&self, wait: bool) -> Result<bool> {
        let existed = match &self.documents {
            Some(record) => record.latest()?.is_some(),
            None => self.try_open_store()?.is_some(),
        };
        let writer = self.doc_writer("creating a store", wait, true)?;
        writer.finish(Ok(!existed))
    }

    /// Inserts (or with `replace`, stores over) one document.
    pub fn insert_document(&self, request: &InsertRequest) -> Result<Inserted> {
        let text = match &request.document {
            Value::String(text) => text.clone(),
            value @ Value::Object(_) => value.to_string(),
            _ => {
                return Err(Error::invalid_field(
                    "document",
                    "must be a JSON object or its JSON text",
                ));
            }
        };
        if text.len() > MAX_DOCUMENT_BYTES {
            return Err(Error::invalid_field(
                "document",
                format!(
                    "the document is {} bytes, over the limit of {MAX_DOCUMENT_BYTES}",
                    text.len()
                ),
            ));
        }
        let mut writer = self.doc_writer("inserting a document", request.wait, false)?;
        let mut ids = IdGenerator::new();
        let written = if request.replace {
            write::replace(&mut writer, &request.collection, &text, &mut ids)
        } else {
            write::insert(&mut writer, &request.collection, &text, &mut ids).map(|id| (id, false))
        };
        let (id, replaced) = writer.finish(written)?;
        Ok(Inserted {
            collection: request.collection.clone(),
            id,
            replaced,
        })
    }

    /// Imports JSON Lines into a collection, one transaction per batch, after checking the
    /// whole input. Reports `checking` and `importing` progress; cancelling stops between
    /// batches (whole batches only are ever written).
    pub fn import_documents(
        &self,
        request: &ImportRequest,
        source: &ImportSource,
        control: &Control,
    ) -> Result<ImportReport> {
        self.import_from(request, source, None, control)
    }

    fn import_from(
        &self,
        request: &ImportRequest,
        source: &ImportSource,
        name: Option<&str>,
        control: &Control,
    ) -> Result<ImportReport> {
        if request.batch_size == 0 {
            return Err(Error::invalid_field("batch_size", "must be at least 1"));
        }
        let mut writer = self.doc_writer("importing documents", request.wait, false)?;
        let imported = write::import(
            &mut writer,
            request,
            source,
            name,
            &mut IdGenerator::new(),
            control,
        );
        writer.finish(imported)
    }

    /// Imports JSON Lines read from a stream (standard input, a socket). The stream is first
    /// copied, in bounded memory, to a temporary file inside the store (created exclusively and
    /// removed afterwards), so the import can check the whole input before writing, as it does
    /// for a file.
    pub fn import_stream(
        &self,
        request: &ImportRequest,
        stream: &mut dyn std::io::Read,
        control: &Control,
    ) -> Result<ImportReport> {
        // Check the store exists and may be written before copying anything.
        self.require_write("importing documents")?;
        drop(self.open_document_store()?);
        let dir = self.store_root()?;
        let spool = write::Spool::create(dir)?;
        spool.fill(stream, control)?;
        let source = ImportSource::File(spool.path().to_owned());
        self.import_from(request, &source, Some("<stdin>"), control)
    }

    /// Calls `out` with the stored text of every document matching the filter, in insertion
    /// order; returns how many.
    pub fn find_documents(&self, request: &FindRequest, out: &mut dyn FnMut(&str)) -> Result<u64> {
        let filter = parse_optional_filter(request.filter.as_ref())?;
        let store = self.open_document_store()?;
        write::find(
            &store,
            &request.collection,
            filter.as_ref(),
            request.limit,
            out,
        )
    }

    /// Deletes the documents matching the filter in one transaction; returns how many.
    pub fn delete_documents(&self, request: &DeleteRequest) -> Result<u64> {
        let filter = parse_filter(&request.filter)?;
        let mut writer = self.doc_writer("deleting documents", request.wait, false)?;
        let deleted = write::delete(&mut writer, &request.collection, &filter);
        writer.finish(deleted)
    }

    /// Every collection with its document count, by name.
    pub fn collections(&self) -> Result<Vec<CollectionInfo>> {
        Ok(self.open_document_store()?.collections()?)
    }

    /// Exact cosine top-k over a field's vectors, the filter applied first.
    pub fn vsearch(&self, request: &VsearchRequest) -> Result<VsearchOutcome> {
        crate::limits::check_goal_size("query", &request.query)?;
        let filter = parse_optional_filter(request.filter.as_ref())?;
        crate::mask::prepare_in_background();
        let store = self.open_document_store()?;
        search::vsearch(&store, request, filter.as_ref())
    }

    /// Lists the documents whose embedding of the field is missing or stale.
    pub fn vstale(&self, request: &FieldRequest) -> Result<StaleReport> {
        let store = self.open_document_store()?;
        sync::vstale(&store, &request.collection, &request.field)
    }

    /// Computes the missing and stale embeddings of the field, removes those of deleted
    /// documents and brings the field's vector file up to date. Reports `embedding` progress;
    /// cancelling stops between batches (every batch written is whole and current).
    pub fn vsync(&self, request: &FieldRequest, control: &Control) -> Result<SyncReport> {
        let mut writer = self.doc_writer("vsync", request.wait, false)?;
        let synced = sync::vsync(&mut writer, &request.collection, &request.field, control);
        writer.finish(synced)
    }

    /// Declares an index of a field of a collection (creating the collection) and lists every
    /// stored document in it, in one transaction; returns false when it was already declared.
    /// Filters with equality or `$in` on the field then read only the documents listed.
    pub fn create_field_index(&self, request: &FieldRequest) -> Result<bool> {
        let path = plan::parse_index_field(&request.field)?;
        let mut writer = self.doc_writer("creating a field index", request.wait, false)?;
        let collection = request.collection.as_str();
        let created = writer
            .create_collection(collection)
            .map_err(Error::from)
            .and_then(|_| {
                writer.create_field_index(collection, &request.field, |id_key, body| {
                    let value = crate::error::stored_document(collection, id_key, body)?;
                    Ok::<_, Error>(ctxpack_docs::filter::index_keys(&value, &path))
                })
            });
        writer.finish(created)
    }

    /// Removes the index of a field; returns whether one was declared.
    pub fn drop_field_index(&self, request: &FieldRequest) -> Result<bool> {
        let mut writer = self.doc_writer("dropping a field index", request.wait, false)?;
        let dropped = writer
            .require_collection(&request.collection)
            .and_then(|()| writer.drop_field_index(&request.collection, &request.field))
            .map_err(Error::from);
        writer.finish(dropped)
    }

    /// The declared field indexes of a collection, by field, with their sizes.
    pub fn field_indexes(&self, collection: &str) -> Result<Vec<FieldIndexInfo>> {
        let store = self.open_document_store()?;
        store.require_collection(collection)?;
        Ok(store.field_indexes(collection)?)
    }

    /// Builds a document pack (seed 001's `context`), recorded in the ledger with `record`
    /// when the workspace may write. For JSON, the record keeps the exact canonical JSON.
    pub fn document_pack(
        &self,
        request: &DocumentPackRequest,
        record: Option<&RenderOptions>,
    ) -> Result<DocumentPack> {
        crate::limits::check_goal_size("query", &request.query)?;
        crate::limits::check_meter(request.meter)?;
        self.admit_record(record)?;
        let filter = parse_optional_filter(request.filter.as_ref())?;
        crate::mask::prepare_in_background();
        let store = self.open_document_store()?;
        let (mut pack, embedded_on_the_fly) = search::context(&store, request, filter.as_ref())?;
        if embedded_on_the_fly > 0 {
            // Seed 001's JSON carries no warnings; every other rendering says what happened.
            pack.pack.warnings.push(Warning::Notice(format!(
                "{embedded_on_the_fly} documents had no stored embedding of `{}` and were embedded on the fly; vsync the field to store them",
                request.field
            )));
        }
        let output = record
            .filter(|r| r.format == ctxpack_core::Format::Json)
            .map(|r| {
                let json = if r.pretty {
                    pack.to_json_pretty()
                } else {
                    pack.to_json_line()
                };
                format!("{json}\n")
            });
        let recorded = self.record(
            &pack.pack,
            "docs context",
            record,
            RecordExtra {
                parent: None,
                output,
            },
        );
        Ok(DocumentPack {
            pack,
            embedded_on_the_fly,
            recorded,
        })
    }

    /// Opens the store read-only for document operations (a missing store is not found, with
    /// a hint to create a document store).
    fn open_document_store(&self) -> Result<ctxpack_store::Store> {
        self.sync_documents()?;
        self.try_open_store()?.ok_or_else(|| {
            no_store(
                self.store_dir().map(|d| d.to_owned()).unwrap_or_default(),
                true,
            )
        })
    }
}
