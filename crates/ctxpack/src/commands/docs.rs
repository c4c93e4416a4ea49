//! `ctxpack docs …`: JSON document collections, vector search and context packs (seed 001).
//!
//! A store directory (`app.ctxpack`) holds collections of JSON documents beside its snapshots.
//! Documents are kept as the text they were given (minus whitespace between tokens), keyed by
//! the canonical JSON of their `_id`, which is generated as an ObjectId when missing.
//! Embeddings of a string field are computed by the offline hashing embedder, stored per
//! document and field with the hash of the text, and kept current by `vsync`.
//!
//! Every subcommand is a public function over a [`Store`] so that other front ends (the MCP
//! server) run the same code: [`insert`], [`import`], [`find`], [`delete`], [`collections`],
//! [`vsearch`], [`vsync`], [`vstale`] and [`context`]. Writes go through [`Writer`], which holds
//! the writer lock; reads open the store read-only and never take it.
//!
//! Searches read only the stored vectors (and the primary-key index) of a collection, never a
//! document body they do not return: from the field's flat vector file, which `vsync` writes
//! beside the database, while it matches the embeddings in SQLite, else from SQLite itself.
//! A document without a stored vector for the field (the field was never synced, or the
//! document is newer than the last `vsync`) is embedded on the fly. Stored vectors are used as
//! they are: after documents change, `vsync` brings them up to date, and `vstale` lists what it
//! would do.

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal, Read};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use ctxpack_core::{Budget, Format, Meter, RenderOptions, Selector, View, Warning, render};
use ctxpack_docs::DocsError;
use ctxpack_docs::context::{self, ContextItem, ContextOptions, ContextPack, round_score};
use ctxpack_docs::document::{self, ParsedDocument};
use ctxpack_docs::embed::{EMBEDDER_ID, Vector, embed, text_hash};
use ctxpack_docs::filter::Filter;
use ctxpack_docs::knn;
use ctxpack_store::docs::{CollectionInfo, DocsStoreError, NewDocument, NewEmbedding, VectorRef};
use ctxpack_store::{Store, StoreError, WriterLock};
use serde_json::{Value, json};

use crate::cli::{parse_budget, parse_format, parse_meter, parse_selector, parse_view};
use crate::failure::{Failure, FailureKind};

// ---------------------------------------------------------------------------------------------
// Arguments

/// The `ctxpack docs` subcommands.
#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// Create a store directory (nothing happens if it exists).
    Create(CreateArgs),
    /// Insert one JSON document and print its `_id`.
    Insert(InsertArgs),
    /// Import a JSON Lines file, one transaction per batch.
    Import(ImportArgs),
    /// Print the documents matching a filter as JSON Lines, in insertion order.
    Find(FindArgs),
    /// Delete the documents matching a filter.
    Delete(DeleteArgs),
    /// List the collections with their document counts.
    Collections(CollectionsArgs),
    /// Exact cosine k-nearest-neighbour search over a string field.
    Vsearch(VsearchArgs),
    /// Compute the missing and stale embeddings of a field.
    Vsync(FieldArgs),
    /// List the documents whose embedding of a field is missing or stale.
    Vstale(FieldArgs),
    /// A budgeted, cited context pack of the documents most similar to a query.
    Context(ContextArgs),
}

/// Options of `docs create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The store directory, e.g. `app.ctxpack`.
    pub store: PathBuf,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
}

/// Options of `docs insert`.
#[derive(Debug, Args)]
pub struct InsertArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection (created on first insert).
    pub collection: String,
    /// The document, a JSON object (`-` reads it from standard input).
    pub json: String,
    /// Replace the stored document with the same `_id` instead of failing (its embeddings
    /// are stale until `vsync`).
    #[arg(long)]
    pub replace: bool,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
}

/// Options of `docs import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection (created on first insert).
    pub collection: String,
    /// A JSON Lines file, one document per line (`-` for standard input); blank lines are
    /// skipped.
    pub file: PathBuf,
    /// Documents per transaction.
    #[arg(long, default_value_t = ImportOptions::DEFAULT_BATCH_SIZE, value_parser = parse_batch_size)]
    pub batch_size: usize,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Options of `docs find`.
#[derive(Debug, Args)]
pub struct FindArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// A MongoDB-style filter (JSON); all documents when absent.
    #[arg(long)]
    pub filter: Option<String>,
    /// Print at most this many documents.
    #[arg(long)]
    pub limit: Option<usize>,
}

/// Options of `docs delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// A MongoDB-style filter (JSON); `{}` deletes every document.
    #[arg(long)]
    pub filter: String,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Options of `docs collections`.
#[derive(Debug, Args)]
pub struct CollectionsArgs {
    /// The store directory.
    pub store: PathBuf,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Options of `docs vsearch`.
#[derive(Debug, Args)]
pub struct VsearchArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// The string field to rank by (a dotted path).
    pub field: String,
    /// The query text.
    pub query: String,
    /// How many documents to return.
    #[arg(long = "k", default_value_t = 10)]
    pub k: usize,
    /// A MongoDB-style filter (JSON) applied before ranking.
    #[arg(long)]
    pub filter: Option<String>,
}

/// Options of `docs vsync` and `docs vstale`.
#[derive(Debug, Args)]
pub struct FieldArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// The string field (a dotted path).
    pub field: String,
    /// Wait for another writer instead of failing (`vsync` only).
    #[arg(long)]
    pub wait: bool,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Options of `docs context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// The string field whose text is ranked and packed (a dotted path).
    pub field: String,
    /// The task or query text.
    pub query: String,
    /// The hard budget, a positive integer in units of --meter.
    #[arg(long, default_value_t = ContextOptions::DEFAULT_BUDGET, value_parser = parse_budget_u64, allow_negative_numbers = true)]
    pub budget: u64,
    /// A MongoDB-style filter (JSON) applied before ranking.
    #[arg(long)]
    pub filter: Option<String>,
    /// Selection policy: prefix (seed 001: stop at the first chunk that does not fit), skip,
    /// diverse or coverage.
    #[arg(long, default_value = "prefix", value_parser = parse_selector)]
    pub selector: Selector,
    /// Budget unit: approx (ceil(chars / 4), seed 001), o200k, cl100k, words or chars.
    #[arg(long, default_value = "approx", value_parser = parse_meter)]
    pub meter: Meter,
    /// Offer at most this many top-ranked documents to selection (default: all).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Output format: json (seed 001's one canonical line), text, markdown or xml.
    #[arg(long, default_value = "json", value_parser = parse_pack_format)]
    pub format: Format,
    /// How much of each hit text, Markdown and XML show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = parse_view)]
    pub view: View,
    /// Pretty-print JSON over several lines (same key order).
    #[arg(long)]
    pub pretty: bool,
    /// Do not record this pack in the store's ledger.
    #[arg(long)]
    pub no_ledger: bool,
}

fn parse_batch_size(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "the batch size must be a positive integer, got {s:?}"
        )),
    }
}

fn parse_budget_u64(s: &str) -> Result<u64, String> {
    parse_budget(s).map(Budget::get)
}

fn parse_pack_format(s: &str) -> Result<Format, String> {
    match parse_format(s)? {
        Format::Both => {
            Err("`both` is not a docs context format; use json, text, markdown or xml".into())
        }
        format => Ok(format),
    }
}

impl DocsCommand {
    /// Whether a failure should also print the JSON envelope on stdout.
    pub fn wants_json(&self) -> bool {
        match self {
            DocsCommand::Context(args) => args.format == Format::Json,
            DocsCommand::Import(ImportArgs { format, .. })
            | DocsCommand::Delete(DeleteArgs { format, .. })
            | DocsCommand::Collections(CollectionsArgs { format, .. })
            | DocsCommand::Vsync(FieldArgs { format, .. })
            | DocsCommand::Vstale(FieldArgs { format, .. }) => format == "json",
            DocsCommand::Create(_)
            | DocsCommand::Insert(_)
            | DocsCommand::Find(_)
            | DocsCommand::Vsearch(_) => false,
        }
    }

    /// Runs the subcommand and returns what goes to stdout.
    pub fn run(self) -> Result<String, Failure> {
        match self {
            DocsCommand::Create(args) => {
                let created = create(&args.store, args.wait)?;
                let verb = if created { "created" } else { "exists:" };
                Ok(format!("{verb} store {}\n", args.store.display()))
            }
            DocsCommand::Insert(args) => {
                let text = if args.json == "-" {
                    let mut text = String::new();
                    std::io::stdin().read_to_string(&mut text).map_err(|e| {
                        Failure::invalid(format!("reading the document from standard input: {e}"))
                    })?;
                    text
                } else {
                    args.json
                };
                let mut writer = Writer::open(&args.store, args.wait)?;
                let mut ids = IdGenerator::new();
                let id = if args.replace {
                    replace(&mut writer.store, &args.collection, &text, &mut ids)?.0
                } else {
                    insert(&mut writer.store, &args.collection, &text, &mut ids)?
                };
                Ok(format!("{id}\n"))
            }
            DocsCommand::Import(args) => run_import(args),
            DocsCommand::Find(args) => {
                let store = open_store(&args.store)?;
                let filter = args.filter.as_deref().map(parse_filter).transpose()?;
                let mut out = String::new();
                find(
                    &store,
                    &args.collection,
                    filter.as_ref(),
                    args.limit,
                    &mut |body| {
                        out.push_str(body);
                        out.push('\n');
                    },
                )?;
                Ok(out)
            }
            DocsCommand::Delete(args) => {
                let filter = parse_filter(&args.filter)?;
                let mut writer = Writer::open(&args.store, args.wait)?;
                let deleted = delete(&mut writer.store, &args.collection, &filter)?;
                Ok(if args.format == "json" {
                    format!(
                        "{}\n",
                        json!({"collection": args.collection, "deleted": deleted})
                    )
                } else {
                    format!("deleted {deleted} documents from {}\n", args.collection)
                })
            }
            DocsCommand::Collections(args) => {
                let store = open_store(&args.store)?;
                let list = collections(&store)?;
                Ok(if args.format == "json" {
                    let items: Vec<Value> = list
                        .iter()
                        .map(|c| json!({"name": c.name, "documents": c.documents, "createdAt": c.created_at}))
                        .collect();
                    format!("{}\n", Value::Array(items))
                } else {
                    list.iter()
                        .map(|c| format!("{}\t{} documents\n", c.name, c.documents))
                        .collect()
                })
            }
            DocsCommand::Vsearch(args) => {
                let store = open_store(&args.store)?;
                let filter = args.filter.as_deref().map(parse_filter).transpose()?;
                let outcome = vsearch(
                    &store,
                    &VsearchRequest {
                        collection: &args.collection,
                        field: &args.field,
                        query: &args.query,
                        k: args.k,
                        filter: filter.as_ref(),
                    },
                )?;
                Ok(outcome
                    .hits
                    .iter()
                    .map(|h| format!("{}\n", h.to_json_line()))
                    .collect())
            }
            DocsCommand::Vsync(args) => {
                let mut writer = Writer::open(&args.store, args.wait)?;
                let report = vsync(&mut writer.store, &args.collection, &args.field)?;
                Ok(if args.format == "json" {
                    format!("{}\n", report.to_json())
                } else {
                    format!("{}\n", report.summary())
                })
            }
            DocsCommand::Vstale(args) => {
                let store = open_store(&args.store)?;
                let report = vstale(&store, &args.collection, &args.field)?;
                Ok(if args.format == "json" {
                    format!("{}\n", report.to_json())
                } else {
                    report.to_text()
                })
            }
            DocsCommand::Context(args) => run_context(args),
        }
    }
}

fn run_import(args: ImportArgs) -> Result<String, Failure> {
    let source = if args.file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::invalid(format!("reading standard input: {e}")))?;
        ImportSource::Bytes(bytes)
    } else {
        ImportSource::File(args.file.clone())
    };
    let mut writer = Writer::open(&args.store, args.wait)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg} {pos}/{len} documents {wide_bar} {eta}",
            )
            .expect("the template is valid"),
        );
        bar
    });
    let mut progress = |p: ImportProgress| {
        if let Some(bar) = &bar {
            bar.set_message(if p.checking { "checking" } else { "importing" });
            bar.set_length(p.total);
            bar.set_position(p.done);
        }
    };
    let result = import(
        &mut writer.store,
        &args.collection,
        &source,
        &ImportOptions {
            batch_size: args.batch_size,
        },
        &mut IdGenerator::new(),
        &mut progress,
    );
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = result?;
    Ok(if args.format == "json" {
        format!(
            "{}\n",
            json!({"collection": args.collection, "imported": report.imported, "batches": report.batches})
        )
    } else {
        format!(
            "imported {} documents into {} ({} batches)\n",
            report.imported, args.collection, report.batches
        )
    })
}

fn run_context(args: ContextArgs) -> Result<String, Failure> {
    let store = open_store(&args.store)?;
    let filter = args.filter.as_deref().map(parse_filter).transpose()?;
    let options = ContextOptions {
        budget: Budget::new(args.budget).map_err(|e| Failure::invalid(e.to_string()))?,
        meter: args.meter,
        selector: args.selector,
    };
    let mut outcome = context(
        &store,
        &ContextRequest {
            collection: &args.collection,
            field: &args.field,
            query: &args.query,
            options,
            filter: filter.as_ref(),
            top_k: args.top_k,
        },
    )?;
    let output = match args.format {
        Format::Json if args.pretty => format!("{}\n", outcome.pack.to_json_pretty()),
        Format::Json => format!("{}\n", outcome.pack.to_json_line()),
        format => {
            // Seed 001's JSON carries no warnings; the text form says what happened.
            if format == Format::Text && outcome.embedded_on_the_fly > 0 {
                outcome.pack.pack.warnings.push(Warning::Notice(format!(
                    "{} documents had no stored embedding of `{}` and were embedded on the fly; \
                     run `ctxpack docs vsync {} {} {}` to store them",
                    outcome.embedded_on_the_fly,
                    args.field,
                    args.store.display(),
                    args.collection,
                    args.field
                )));
            }
            render(
                &outcome.pack.pack,
                &RenderOptions {
                    format,
                    view: args.view,
                    pretty: args.pretty,
                },
            )
        }
    };
    if !args.no_ledger {
        let context = ctxpack_store::RecordContext {
            surface: "docs context".into(),
            rendered: crate::commands::ledger::rendered(&RenderOptions {
                format: args.format,
                view: args.view,
                pretty: args.pretty,
            }),
            // Seed 001's JSON is not a rendering of the pack: keep its exact bytes.
            output: (args.format == Format::Json).then(|| output.clone()),
            ..Default::default()
        };
        crate::commands::ledger::record(&args.store, &outcome.pack.pack, &context);
    }
    Ok(output)
}

// ---------------------------------------------------------------------------------------------
// Failures

impl From<DocsStoreError> for Failure {
    fn from(e: DocsStoreError) -> Failure {
        match e {
            DocsStoreError::Store(e) => store_failure(e),
            DocsStoreError::UnknownCollection { .. } => {
                Failure::new(FailureKind::NotFound, e.to_string())
                    .with_hint("list the collections with `ctxpack docs collections STORE`")
            }
            DocsStoreError::DuplicateId { .. } => {
                Failure::new(FailureKind::Conflict, e.to_string())
            }
            DocsStoreError::InvalidCollectionName { .. } => Failure::invalid(e.to_string()),
        }
    }
}

impl From<DocsError> for Failure {
    fn from(e: DocsError) -> Failure {
        match e {
            DocsError::VectorLength { .. } | DocsError::VectorNotFinite { .. } => Failure::new(
                FailureKind::Corrupt,
                format!("a stored embedding is damaged: {e}"),
            )
            .with_hint("recompute it with `ctxpack docs vsync`"),
            _ => Failure::invalid(e.to_string()),
        }
    }
}

fn store_failure(e: StoreError) -> Failure {
    match e {
        StoreError::NotFound { dir } => Failure::new(
            FailureKind::NotFound,
            format!("no ctxpack store at {}", dir.display()),
        )
        .with_hint(format!(
            "create it with `ctxpack docs create {}`",
            dir.display()
        )),
        e => e.into(),
    }
}

fn corrupt_document(collection: &str, id_key: &str, e: &serde_json::Error) -> Failure {
    Failure::new(
        FailureKind::Corrupt,
        format!("stored document {id_key} of `{collection}` is not valid JSON: {e}"),
    )
}

/// Parses a `--filter` argument: JSON, then the filter language (exit 2 on either).
pub fn parse_filter(text: &str) -> Result<Filter, Failure> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Failure::invalid(format!("--filter is not valid JSON: {e}")))?;
    Filter::parse(&value).map_err(|e| Failure::invalid(format!("invalid filter: {e}")))
}

fn parse_field(field: &str) -> Result<Vec<String>, Failure> {
    document::field_path(field).map_err(|e| Failure::invalid(format!("invalid field: {e}")))
}

// ---------------------------------------------------------------------------------------------
// Opening stores

/// Opens an existing store read-only (exit 3 when missing, 4 when corrupt).
pub fn open_store(dir: &Path) -> Result<Store, Failure> {
    Store::open(dir).map_err(store_failure)
}

/// A store opened for writing, with the writer lock held until it is dropped.
#[derive(Debug)]
pub struct Writer {
    /// The store.
    pub store: Store,
    _lock: WriterLock,
}

impl Writer {
    /// Takes the writer lock of an existing store (exit 3 when there is none) and opens it.
    pub fn open(dir: &Path, wait: bool) -> Result<Writer, Failure> {
        // Check first, so a mistyped path is "not found" rather than a new store.
        drop(open_store(dir)?);
        let lock = WriterLock::acquire(dir, wait).map_err(store_failure)?;
        let store = Store::open_or_create(dir).map_err(store_failure)?;
        Ok(Writer { store, _lock: lock })
    }
}

/// Creates a store directory; returns whether it was new. An existing store is left as is.
pub fn create(dir: &Path, wait: bool) -> Result<bool, Failure> {
    let existed = match Store::open(dir) {
        Ok(_) => true,
        Err(StoreError::NotFound { .. }) => false,
        Err(e) => return Err(store_failure(e)),
    };
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::new(
            FailureKind::Internal,
            format!("cannot create store directory {}: {e}", dir.display()),
        )
    })?;
    let _lock = WriterLock::acquire(dir, wait).map_err(store_failure)?;
    Store::open_or_create(dir).map_err(store_failure)?;
    Ok(!existed)
}

// ---------------------------------------------------------------------------------------------
// Ids

/// Generates ObjectId-like `_id`s: 4 bytes of Unix seconds, 5 random bytes fixed per
/// generator, and a 3-byte counter that starts at a random value, as MongoDB does.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    random: [u8; 5],
    counter: u32,
}

impl IdGenerator {
    /// A generator seeded from the operating system's randomness.
    pub fn new() -> IdGenerator {
        let seed = random_u64();
        let bytes = seed.to_le_bytes();
        IdGenerator {
            random: [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]],
            counter: u32::from_le_bytes([bytes[5], bytes[6], bytes[7], 0]),
        }
    }

    /// The next id, `{"$oid": "<24 hex>"}`.
    pub fn next_id(&mut self) -> Value {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        self.counter = (self.counter + 1) & 0x00ff_ffff;
        document::object_id(seconds, self.random, self.counter)
    }
}

impl Default for IdGenerator {
    fn default() -> Self {
        IdGenerator::new()
    }
}

/// Eight random bytes from `/dev/urandom`, or (where it cannot be read) from the standard
/// library's randomly keyed hasher mixed with the pid and the time.
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok()
    {
        return u64::from_le_bytes(bytes);
    }
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((std::process::id(), nanos))
}

// ---------------------------------------------------------------------------------------------
// insert, import

/// Inserts one document (JSON text) and returns its `_id` as canonical JSON.
pub fn insert(
    store: &mut Store,
    collection: &str,
    text: &str,
    ids: &mut IdGenerator,
) -> Result<Value, Failure> {
    let doc = ParsedDocument::parse(text)?;
    let (id_key, body) = keyed(&doc, ids)?;
    store.insert_documents(
        collection,
        &[NewDocument {
            id_key: id_key.clone(),
            body,
        }],
    )?;
    Ok(document::id_value(&id_key))
}

/// Stores one document (JSON text), replacing the stored one with the same `_id` (which
/// keeps its place in insertion order; its embeddings are stale until `vsync`). Returns the
/// `_id` and whether a document was replaced.
pub fn replace(
    store: &mut Store,
    collection: &str,
    text: &str,
    ids: &mut IdGenerator,
) -> Result<(Value, bool), Failure> {
    let doc = ParsedDocument::parse(text)?;
    let (id_key, body) = keyed(&doc, ids)?;
    let replaced = store.replace_document(
        collection,
        &NewDocument {
            id_key: id_key.clone(),
            body,
        },
    )?;
    Ok((document::id_value(&id_key), replaced))
}

/// The key and stored body of a parsed document, generating an `_id` when it has none.
fn keyed(doc: &ParsedDocument, ids: &mut IdGenerator) -> Result<(String, String), Failure> {
    Ok(match &doc.id_key {
        Some(key) => (key.clone(), doc.body.clone()),
        None => {
            let id = ids.next_id();
            (document::id_key(&id)?, doc.body_with_id(&id))
        }
    })
}

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

    fn reader(&self) -> Result<Box<dyn BufRead + '_>, Failure> {
        match self {
            ImportSource::File(path) => {
                let file = std::fs::File::open(path).map_err(|e| {
                    let kind = if e.kind() == std::io::ErrorKind::NotFound {
                        FailureKind::NotFound
                    } else {
                        FailureKind::InvalidInput
                    };
                    Failure::new(kind, format!("cannot read {}: {e}", path.display()))
                })?;
                Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, file)))
            }
            ImportSource::Bytes(bytes) => Ok(Box::new(bytes.as_slice())),
        }
    }

    /// Calls `f(line number, line)` for every non-blank line.
    fn for_each_line(
        &self,
        mut f: impl FnMut(u64, &str) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        let name = self.name();
        let mut reader = self.reader()?;
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).map_err(|e| {
                Failure::new(FailureKind::Internal, format!("{name}: reading: {e}"))
            })?;
            if n == 0 {
                return Ok(());
            }
            line_no += 1;
            let line = std::str::from_utf8(&buf).map_err(|e| {
                Failure::invalid(format!(
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

/// Options of `import`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Documents per transaction.
    pub batch_size: usize,
}

impl ImportOptions {
    /// The default batch size: 1000 documents.
    pub const DEFAULT_BATCH_SIZE: usize = 1000;
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            batch_size: Self::DEFAULT_BATCH_SIZE,
        }
    }
}

/// Where an import is, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportProgress {
    /// Whether it is still checking the input (nothing is written then).
    pub checking: bool,
    /// Documents checked or imported so far.
    pub done: u64,
    /// Documents in the input (0 while checking).
    pub total: u64,
}

/// What an import did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// Documents imported.
    pub imported: u64,
    /// Transactions committed.
    pub batches: u64,
}

/// Imports JSON Lines into a collection (created if needed), one transaction per batch.
///
/// The whole input is checked first — JSON, objects, `_id`s, duplicates within the input and
/// against the collection — so an input with a bad line writes nothing, and every error names
/// its line. Then the documents are written batch by batch: a process killed mid-import
/// leaves whole batches only. The caller holds the writer lock, so nothing can conflict
/// between the two passes.
pub fn import(
    store: &mut Store,
    collection: &str,
    source: &ImportSource,
    options: &ImportOptions,
    ids: &mut IdGenerator,
    progress: &mut dyn FnMut(ImportProgress),
) -> Result<ImportReport, Failure> {
    ctxpack_store::docs::validate_collection_name(collection)?;
    let name = source.name();
    let batch_size = options.batch_size.max(1);
    let at = |line: u64, message: String| format!("{name}:{line}: {message}");
    let parse = |line_no: u64, line: &str| {
        ParsedDocument::parse(line).map_err(|e| {
            // The parser sees one line, so its "line 1" is noise next to the file's line.
            let message = e.to_string().replace(" at line 1 column ", " at column ");
            Failure::invalid(at(line_no, message))
        })
    };

    // Pass 1: check everything, write nothing.
    let mut given: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    source.for_each_line(|line_no, line| {
        let doc = parse(line_no, line)?;
        if let Some(key) = doc.id_key {
            if let Some(first) = given.get(&key) {
                return Err(Failure::new(
                    FailureKind::Conflict,
                    at(
                        line_no,
                        format!("duplicate _id {key} (first at line {first})"),
                    ),
                ));
            }
            if store.contains_document(collection, &key)? {
                return Err(Failure::new(
                    FailureKind::Conflict,
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
            progress(ImportProgress {
                checking: true,
                done: total,
                total: 0,
            });
        }
        Ok(())
    })?;
    drop(given);

    // Pass 2: write batch by batch.
    let mut report = ImportReport {
        imported: 0,
        batches: 0,
    };
    let mut batch: Vec<NewDocument> = Vec::with_capacity(batch_size.min(100_000));
    let mut lines: Vec<u64> = Vec::with_capacity(batch.capacity());
    let mut flush = |store: &mut Store,
                     batch: &mut Vec<NewDocument>,
                     lines: &mut Vec<u64>,
                     report: &mut ImportReport|
     -> Result<(), Failure> {
        if batch.is_empty() {
            return Ok(());
        }
        store
            .insert_documents(collection, batch)
            .map_err(|e| match e {
                DocsStoreError::DuplicateId { index, .. } => {
                    let line = lines.get(index).copied().unwrap_or(0);
                    Failure::new(FailureKind::Conflict, at(line, e.to_string()))
                }
                e => Failure::from(e),
            })
            .map_err(|f| {
                f.with_hint(format!(
                    "{} documents in {} earlier batches were imported; this batch was not",
                    report.imported, report.batches
                ))
            })?;
        report.imported += batch.len() as u64;
        report.batches += 1;
        batch.clear();
        lines.clear();
        progress(ImportProgress {
            checking: false,
            done: report.imported,
            total,
        });
        Ok(())
    };
    source.for_each_line(|line_no, line| {
        let doc = parse(line_no, line)?;
        let (id_key, body) = keyed(&doc, ids)?;
        batch.push(NewDocument { id_key, body });
        lines.push(line_no);
        if batch.len() >= batch_size {
            flush(store, &mut batch, &mut lines, &mut report)?;
        }
        Ok(())
    })?;
    flush(store, &mut batch, &mut lines, &mut report)?;
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// find, delete, collections

/// Calls `out` with the stored text of every document matching `filter` (all without one),
/// in insertion order, at most `limit` of them; returns how many.
pub fn find(
    store: &Store,
    collection: &str,
    filter: Option<&Filter>,
    limit: Option<usize>,
    out: &mut dyn FnMut(&str),
) -> Result<u64, Failure> {
    store.require_collection(collection)?;
    let limit = limit.unwrap_or(usize::MAX) as u64;
    let mut found = 0u64;
    if limit == 0 {
        return Ok(0);
    }
    store.scan_documents(collection, |doc| {
        if let Some(filter) = filter {
            let value: Value = serde_json::from_str(doc.body)
                .map_err(|e| corrupt_document(collection, doc.id_key, &e))?;
            if !filter.matches(&value) {
                return Ok::<_, Failure>(ControlFlow::Continue(()));
            }
        }
        out(doc.body);
        found += 1;
        Ok(if found >= limit {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        })
    })?;
    Ok(found)
}

/// Deletes the documents matching `filter` in one transaction; returns how many.
pub fn delete(store: &mut Store, collection: &str, filter: &Filter) -> Result<u64, Failure> {
    store.require_collection(collection)?;
    let mut doomed = Vec::new();
    store.scan_documents(collection, |doc| {
        let value: Value = serde_json::from_str(doc.body)
            .map_err(|e| corrupt_document(collection, doc.id_key, &e))?;
        if filter.matches(&value) {
            doomed.push(doc.id_key.to_owned());
        }
        Ok::<_, Failure>(ControlFlow::Continue(()))
    })?;
    Ok(store.delete_documents(collection, &doomed)?)
}

/// Every collection with its document count, by name.
pub fn collections(store: &Store) -> Result<Vec<CollectionInfo>, Failure> {
    Ok(store.collections()?)
}

// ---------------------------------------------------------------------------------------------
// Vectors

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

/// The `_id` keys of the documents matching a filter (reads every body: filters need them).
fn matching_ids(
    store: &Store,
    collection: &str,
    filter: &Filter,
) -> Result<std::collections::HashSet<String>, Failure> {
    let mut ids = std::collections::HashSet::new();
    store.scan_documents(collection, |doc| {
        let value: Value = serde_json::from_str(doc.body)
            .map_err(|e| corrupt_document(collection, doc.id_key, &e))?;
        if filter.matches(&value) {
            ids.insert(doc.id_key.to_owned());
        }
        Ok::<_, Failure>(ControlFlow::Continue(()))
    })?;
    Ok(ids)
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
    allowed: Option<&std::collections::HashSet<String>>,
) -> Result<Scored, Failure> {
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
    let score_row = |scored: &mut Scored, row: &VectorRef<'_>| -> Result<(), Failure> {
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
                    return Ok::<_, Failure>(());
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
    mut visit: impl FnMut(f32, ctxpack_store::docs::StoredDocument, &str) -> ControlFlow<()>,
) -> Result<usize, Failure> {
    let (collection, field) = target;
    let path = parse_field(field)?;
    store.require_collection(collection)?;
    let allowed = filter
        .map(|f| matching_ids(store, collection, f))
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
) -> Result<Vec<(f32, ctxpack_store::docs::StoredDocument)>, Failure> {
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

// ---------------------------------------------------------------------------------------------
// vsearch

/// What `vsearch` is asked.
#[derive(Clone, Copy, Debug)]
pub struct VsearchRequest<'a> {
    /// The collection.
    pub collection: &'a str,
    /// The string field (a dotted path).
    pub field: &'a str,
    /// The query text.
    pub query: &'a str,
    /// How many documents to return.
    pub k: usize,
    /// A filter applied before ranking.
    pub filter: Option<&'a Filter>,
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
pub fn vsearch(store: &Store, request: &VsearchRequest<'_>) -> Result<VsearchOutcome, Failure> {
    let mut hits = Vec::with_capacity(request.k.min(1024));
    if request.k == 0 {
        // Still check the request, as any other search would.
        parse_field(request.field)?;
        store.require_collection(request.collection)?;
        return Ok(VsearchOutcome {
            hits,
            embedded_on_the_fly: 0,
        });
    }
    let embedded_on_the_fly = walk(
        store,
        (request.collection, request.field),
        request.query,
        request.filter,
        Some(request.k),
        |score, doc, _| {
            hits.push(VsearchHit {
                id_key: doc.id_key,
                score: round_score(f64::from(score)),
                document: doc.body,
            });
            ControlFlow::Continue(())
        },
    )?;
    Ok(VsearchOutcome {
        hits,
        embedded_on_the_fly,
    })
}

// ---------------------------------------------------------------------------------------------
// vsync, vstale

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

    /// One `missing <id>` or `stale <id>` line per document, then the counts.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for key in &self.missing {
            out.push_str(&format!("missing {key}\n"));
        }
        for key in &self.stale {
            out.push_str(&format!("stale {key}\n"));
        }
        out.push_str(&format!(
            "{}.{}: {} missing, {} stale, {} current, {} skipped (no string), {} orphaned\n",
            self.collection,
            self.field,
            self.missing.len(),
            self.stale.len(),
            self.current,
            self.skipped,
            self.orphans
        ));
        out
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

    /// One line of counts.
    pub fn summary(&self) -> String {
        format!(
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
) -> Result<u64, Failure> {
    let path = parse_field(field)?;
    store.require_collection(collection)?;
    let mut states: HashMap<String, (bool, String)> = store
        .embedding_states(collection, field)?
        .into_iter()
        .map(|s| (s.id_key, (s.embedder == EMBEDDER_ID, s.text_hash)))
        .collect();
    store.scan_documents(collection, |doc| {
        let value: Value = serde_json::from_str(doc.body)
            .map_err(|e| corrupt_document(collection, doc.id_key, &e))?;
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
        Ok::<_, Failure>(ControlFlow::Continue(()))
    })?;
    // What is left has no document.
    Ok(states.len() as u64)
}

/// Lists the documents whose embedding of `field` is missing or stale.
pub fn vstale(store: &Store, collection: &str, field: &str) -> Result<StaleReport, Failure> {
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
pub fn vsync(store: &mut Store, collection: &str, field: &str) -> Result<SyncReport, Failure> {
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
    for chunk in work.chunks(SYNC_BATCH) {
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
    store.sync_vector_file(collection, field, EMBEDDER_ID, Vector::BYTES)?;
    Ok(report)
}

/// Embeds documents' field text on every core.
fn embed_documents(
    collection: &str,
    path: &[String],
    docs: Vec<ctxpack_store::docs::StoredDocument>,
) -> Result<Vec<NewEmbedding>, Failure> {
    let one = |doc: &ctxpack_store::docs::StoredDocument| -> Result<NewEmbedding, Failure> {
        let value: Value = serde_json::from_str(&doc.body)
            .map_err(|e| corrupt_document(collection, &doc.id_key, &e))?;
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

// ---------------------------------------------------------------------------------------------
// context

/// What `context` is asked.
#[derive(Clone, Copy, Debug)]
pub struct ContextRequest<'a> {
    /// The collection.
    pub collection: &'a str,
    /// The string field (a dotted path) whose text is ranked and packed.
    pub field: &'a str,
    /// The task or query text.
    pub query: &'a str,
    /// Budget, meter and selector (defaults: 1000, approx, prefix).
    pub options: ContextOptions,
    /// A filter applied before ranking.
    pub filter: Option<&'a Filter>,
    /// Offer at most this many top-ranked documents to selection (all for `None`).
    pub top_k: Option<usize>,
}

/// A built context pack and how it was made.
#[derive(Clone, Debug, PartialEq)]
pub struct ContextOutcome {
    /// The pack.
    pub pack: ContextPack,
    /// Documents embedded on the fly because no vector was stored for them.
    pub embedded_on_the_fly: usize,
}

/// Builds seed 001's context pack: rank the eligible documents by cosine similarity to the
/// query, then offer them best-first to the pack engine.
///
/// Bodies are read in rank order. With the `prefix` selector (the default) reading stops at
/// the first document that does not fit — it is offered, so the pack is marked truncated, and
/// nothing after it could be selected — so a large collection costs only the text the pack
/// returns. Other selectors may admit a smaller document further down, so every ranked
/// document (or the `top_k` best) is offered.
pub fn context(store: &Store, request: &ContextRequest<'_>) -> Result<ContextOutcome, Failure> {
    let options = request.options;
    let budget = options.budget.get();
    let mut items = Vec::new();
    let mut used = 0u64;
    let embedded_on_the_fly = if request.top_k == Some(0) {
        parse_field(request.field)?;
        store.require_collection(request.collection)?;
        0
    } else {
        walk(
            store,
            (request.collection, request.field),
            request.query,
            request.filter,
            request.top_k,
            |score, doc, text| {
                let cost = options.meter.count(text);
                items.push(ContextItem {
                    id: document::id_value(&doc.id_key),
                    score: f64::from(score),
                    text: text.to_owned(),
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
    Ok(ContextOutcome {
        pack: context::build(request.query, request.collection, items, &options),
        embedded_on_the_fly,
    })
}
