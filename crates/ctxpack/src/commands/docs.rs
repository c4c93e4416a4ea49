//! `ctxpack docs …`: JSON document collections, vector search and document packs.

use std::io::Read;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use ctxpack_api::docs::{
    DeleteRequest, DocumentPackRequest, FieldRequest, FindRequest, ImportRequest, ImportSource,
    InsertRequest, StaleReport, SyncReport, VsearchRequest,
};
use ctxpack_api::{Access, Budget, Error, Format, Meter, RenderOptions, Selector, View, Workspace};
use serde_json::{Value, json};

use crate::cli::{parse, parse_budget, parse_meter, parse_selector};
use crate::output::{progress, read_input, recorded};

/// The `ctxpack docs` subcommands.
#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// Create a store directory (nothing happens if it exists).
    Create(StoreArgs),
    /// Insert one JSON document and print its `_id`.
    Insert(InsertArgs),
    /// Import a JSON Lines file, one transaction per batch.
    Import(ImportArgs),
    /// Print the documents matching a filter as JSON Lines, in insertion order.
    Find(FindArgs),
    /// Delete the documents matching a filter.
    Delete(FindArgs),
    /// List the collections with their document counts.
    Collections(StoreArgs),
    /// Exact cosine k-nearest-neighbour search over a string field.
    Vsearch(VsearchArgs),
    /// Compute the missing and stale embeddings of a field.
    Vsync(FieldArgs),
    /// List the documents whose embedding of a field is missing or stale.
    Vstale(FieldArgs),
    /// A budgeted, cited context pack of the documents most similar to a query.
    Context(ContextArgs),
}

/// Options of `docs create` and `docs collections`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store directory, e.g. `app.ctxpack`.
    pub store: PathBuf,
    /// Wait for another writer instead of failing (`create`).
    #[arg(long)]
    pub wait: bool,
    /// Output format: text or json (`collections`).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
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
    /// Wait for another writer instead of failing (`vsync`).
    #[arg(long)]
    pub wait: bool,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
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
    /// Replace the stored document with the same `_id` instead of failing.
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
    #[arg(long, default_value_t = ImportRequest::default().batch_size, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub batch_size: usize,
    /// Wait for another writer instead of failing.
    #[arg(long)]
    pub wait: bool,
    /// Output format of the summary: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Options of `docs find` and `docs delete`.
#[derive(Debug, Args)]
pub struct FindArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// A MongoDB-style filter (JSON): every document when absent for `find`; `delete` needs
    /// one (`{}` deletes every document).
    #[arg(long)]
    pub filter: Option<String>,
    /// Print at most this many documents (`find`).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Wait for another writer instead of failing (`delete`).
    #[arg(long)]
    pub wait: bool,
    /// Output format of the summary: text or json (`delete`).
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
    #[arg(long = "k", default_value_t = VsearchRequest::default().k)]
    pub k: usize,
    /// A MongoDB-style filter (JSON) applied before ranking.
    #[arg(long)]
    pub filter: Option<String>,
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
    #[arg(long, default_value_t = DocumentPackRequest::default().budget, value_parser = parse_budget, allow_negative_numbers = true)]
    pub budget: Budget,
    /// A MongoDB-style filter (JSON) applied before ranking.
    #[arg(long)]
    pub filter: Option<String>,
    /// Selection policy: prefix (stop at the first chunk that does not fit), skip, diverse or
    /// coverage.
    #[arg(long, default_value_t = DocumentPackRequest::default().selector, value_parser = parse_selector)]
    pub selector: Selector,
    /// Budget unit: approx (ceil(chars / 4)), o200k, cl100k, words or chars.
    #[arg(long, default_value_t = DocumentPackRequest::default().meter, value_parser = parse_meter)]
    pub meter: Meter,
    /// Offer at most this many top-ranked documents to selection (default: all).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Output format: json (one canonical line), text, markdown or xml.
    #[arg(long, default_value = "json", value_parser = parse_pack_format)]
    pub format: Format,
    /// How much of each hit text, Markdown and XML show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = parse::<View>)]
    pub view: View,
    /// Pretty-print JSON over several lines (same key order).
    #[arg(long)]
    pub pretty: bool,
    /// Do not record this pack in the store's ledger.
    #[arg(long)]
    pub no_ledger: bool,
}

fn parse_pack_format(s: &str) -> Result<Format, String> {
    match parse::<Format>(s)? {
        Format::Both => {
            Err("`both` is not a docs context format; use json, text, markdown or xml".into())
        }
        format => Ok(format),
    }
}

fn store(dir: &std::path::Path) -> Result<Workspace, Error> {
    Workspace::for_store(dir, Access::ReadWrite)
}

fn filter(text: Option<&String>) -> Option<Value> {
    text.map(|t| Value::String(t.clone()))
}

fn line(json: bool, value: Value, text: String) -> String {
    if json {
        format!("{value}\n")
    } else {
        format!("{text}\n")
    }
}

impl DocsCommand {
    /// Whether a failure should also print the JSON envelope on stdout.
    pub fn wants_json(&self) -> bool {
        match self {
            DocsCommand::Context(args) => args.format == Format::Json,
            DocsCommand::Import(ImportArgs { format, .. })
            | DocsCommand::Delete(FindArgs { format, .. })
            | DocsCommand::Collections(StoreArgs { format, .. })
            | DocsCommand::Vsync(FieldArgs { format, .. })
            | DocsCommand::Vstale(FieldArgs { format, .. }) => format == "json",
            _ => false,
        }
    }

    /// Runs the subcommand and returns what goes to stdout.
    pub fn run(self) -> Result<String, Error> {
        match self {
            DocsCommand::Create(args) => {
                let created = store(&args.store)?.create_store(args.wait)?;
                let verb = if created { "created" } else { "exists:" };
                Ok(format!("{verb} store {}\n", args.store.display()))
            }
            DocsCommand::Insert(args) => {
                let text = if args.json == "-" {
                    let mut text = String::new();
                    std::io::stdin().read_to_string(&mut text).map_err(|e| {
                        Error::invalid(format!("reading the document from standard input: {e}"))
                    })?;
                    text
                } else {
                    args.json
                };
                let inserted = store(&args.store)?.insert_document(&InsertRequest {
                    collection: args.collection,
                    document: Value::String(text),
                    replace: args.replace,
                    wait: args.wait,
                })?;
                Ok(format!("{}\n", inserted.id))
            }
            DocsCommand::Import(args) => {
                let source = if args.file.as_os_str() == "-" {
                    ImportSource::Bytes(read_input("-")?)
                } else {
                    ImportSource::File(args.file.clone())
                };
                let request = ImportRequest {
                    collection: args.collection,
                    batch_size: args.batch_size,
                    wait: args.wait,
                };
                let (control, bar) = progress("documents");
                let report = store(&args.store)?.import_documents(&request, &source, &control)?;
                drop(bar);
                let text = format!(
                    "imported {} documents into {} ({} batches)",
                    report.imported, report.collection, report.batches
                );
                Ok(line(args.format == "json", json!(report), text))
            }
            DocsCommand::Find(args) => {
                let mut out = String::new();
                let request = FindRequest {
                    collection: args.collection,
                    filter: filter(args.filter.as_ref()),
                    limit: args.limit,
                };
                store(&args.store)?.find_documents(&request, &mut |body| {
                    out.push_str(body);
                    out.push('\n');
                })?;
                Ok(out)
            }
            DocsCommand::Delete(args) => {
                let Some(filter) = filter(args.filter.as_ref()) else {
                    return Err(Error::invalid_field(
                        "filter",
                        "`delete` needs a filter; `{}` deletes every document",
                    ));
                };
                let request = DeleteRequest {
                    collection: args.collection.clone(),
                    filter,
                    wait: args.wait,
                };
                let deleted = store(&args.store)?.delete_documents(&request)?;
                let value = json!({"collection": args.collection, "deleted": deleted});
                let text = format!("deleted {deleted} documents from {}", args.collection);
                Ok(line(args.format == "json", value, text))
            }
            DocsCommand::Collections(args) => {
                let list = store(&args.store)?.collections()?;
                if args.format == "json" {
                    let items: Vec<Value> = list
                        .iter()
                        .map(|c| json!({"name": c.name, "documents": c.documents, "createdAt": c.created_at}))
                        .collect();
                    return Ok(format!("{}\n", Value::Array(items)));
                }
                Ok(list
                    .iter()
                    .map(|c| format!("{}\t{} documents\n", c.name, c.documents))
                    .collect())
            }
            DocsCommand::Vsearch(args) => {
                let outcome = store(&args.store)?.vsearch(&VsearchRequest {
                    collection: args.collection,
                    field: args.field,
                    query: args.query,
                    k: args.k,
                    filter: filter(args.filter.as_ref()),
                })?;
                Ok(outcome
                    .hits
                    .iter()
                    .map(|h| format!("{}\n", h.to_json_line()))
                    .collect())
            }
            DocsCommand::Vsync(args) => {
                let request = field_request(&args);
                let (control, bar) = progress("documents");
                let report = store(&args.store)?.vsync(&request, &control)?;
                drop(bar);
                Ok(line(
                    args.format == "json",
                    report.to_json(),
                    sync_summary(&report),
                ))
            }
            DocsCommand::Vstale(args) => {
                let report = store(&args.store)?.vstale(&field_request(&args))?;
                if args.format == "json" {
                    return Ok(format!("{}\n", report.to_json()));
                }
                Ok(stale_text(&report))
            }
            DocsCommand::Context(args) => context(args),
        }
    }
}

fn field_request(args: &FieldArgs) -> FieldRequest {
    FieldRequest {
        collection: args.collection.clone(),
        field: args.field.clone(),
        wait: args.wait,
    }
}

fn context(args: ContextArgs) -> Result<String, Error> {
    let rendering = RenderOptions {
        format: args.format,
        view: args.view,
        pretty: args.pretty,
    };
    let built = store(&args.store)?.document_pack(
        &DocumentPackRequest {
            collection: args.collection,
            field: args.field,
            query: args.query,
            budget: args.budget,
            meter: args.meter,
            selector: args.selector,
            top_k: args.top_k,
            filter: filter(args.filter.as_ref()),
        },
        (!args.no_ledger).then_some(&rendering),
    )?;
    recorded(&built.recorded);
    Ok(match args.format {
        Format::Json if args.pretty => format!("{}\n", built.pack.to_json_pretty()),
        Format::Json => format!("{}\n", built.pack.to_json_line()),
        _ => ctxpack_api::render(&built.pack.pack, &rendering),
    })
}

fn sync_summary(r: &SyncReport) -> String {
    format!(
        "{}.{}: embedded {} ({} missing, {} stale), {} current, {} skipped (no string), {} removed",
        r.collection,
        r.field,
        r.missing + r.stale,
        r.missing,
        r.stale,
        r.current,
        r.skipped,
        r.removed
    )
}

fn stale_text(r: &StaleReport) -> String {
    let mut out = String::new();
    for key in &r.missing {
        out.push_str(&format!("missing {key}\n"));
    }
    for key in &r.stale {
        out.push_str(&format!("stale {key}\n"));
    }
    out.push_str(&format!(
        "{}.{}: {} missing, {} stale, {} current, {} skipped (no string), {} orphaned\n",
        r.collection,
        r.field,
        r.missing.len(),
        r.stale.len(),
        r.current,
        r.skipped,
        r.orphans
    ));
    out
}
