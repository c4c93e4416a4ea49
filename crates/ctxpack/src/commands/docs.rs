//! `ctxpack docs …`: JSON document collections, vector search and document packs.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use ctxpack_api::Error;
use ctxpack_api::docs::{
    AnnRequest, DeleteRequest, FieldRequest, FindRequest, ImportRequest, ImportSource,
    InsertRequest,
};
use serde_json::{Value, json};

use super::search::{filter, store};
use crate::output::{MAX_PAYLOAD_BYTES, progress, read_input};

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
    Vsearch(super::search::VsearchArgs),
    /// Compute the missing and stale embeddings of a field.
    Vsync(FieldArgs),
    /// List the documents whose embedding of a field is missing or stale.
    Vstale(FieldArgs),
    /// A budgeted, cited context pack of the documents most similar to a query.
    Context(super::search::ContextArgs),
    /// Declare, drop or list field indexes, which answer equality and `$in` filters.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Declare, drop or list approximate vector indexes, which answer long queries from the
    /// vectors nearest them instead of scanning every one.
    #[command(subcommand)]
    Ann(AnnCommand),
}

/// The `ctxpack docs ann` subcommands.
#[derive(Debug, Subcommand)]
pub enum AnnCommand {
    /// Declare an approximate index of a field's vectors and build it from them (declaring
    /// it again with other lists or probes rebuilds it).
    Create(AnnArgs),
    /// Remove the approximate index of a field.
    Drop(FieldArgs),
    /// List the approximate indexes of a collection.
    List(CollectionArgs),
}

/// Options of `docs ann create`.
#[derive(Debug, Args)]
pub struct AnnArgs {
    #[command(flatten)]
    pub field: FieldArgs,
    /// Lists to cluster the vectors into (default: about the square root of their number).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    pub lists: u32,
    /// Lists a search reads (default: about √(10 × lists), one in ten at a million documents; all
    /// of them gives the exact ranking).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    pub probes: u32,
}

/// The `ctxpack docs index` subcommands.
#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Declare an index of a field and list every stored document in it.
    Create(FieldArgs),
    /// Remove the index of a field.
    Drop(FieldArgs),
    /// List the field indexes of a collection.
    List(CollectionArgs),
}

/// Options of `docs index list`.
#[derive(Debug, Args)]
pub struct CollectionArgs {
    /// The store directory.
    pub store: PathBuf,
    /// The collection.
    pub collection: String,
    /// Output format: text or json.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
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
    /// Also compute the embeddings of this string field (a dotted path; repeatable) in the
    /// same pass, as `vsync` would.
    #[arg(long = "embed", value_name = "FIELD")]
    pub embed: Vec<String>,
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
            DocsCommand::Context(args) => args.format == ctxpack_api::Format::Json,
            DocsCommand::Import(ImportArgs { format, .. })
            | DocsCommand::Delete(FindArgs { format, .. })
            | DocsCommand::Collections(StoreArgs { format, .. })
            | DocsCommand::Vsync(FieldArgs { format, .. })
            | DocsCommand::Vstale(FieldArgs { format, .. })
            | DocsCommand::Index(
                IndexCommand::Create(FieldArgs { format, .. })
                | IndexCommand::Drop(FieldArgs { format, .. })
                | IndexCommand::List(CollectionArgs { format, .. }),
            )
            | DocsCommand::Ann(
                AnnCommand::Create(AnnArgs {
                    field: FieldArgs { format, .. },
                    ..
                })
                | AnnCommand::Drop(FieldArgs { format, .. })
                | AnnCommand::List(CollectionArgs { format, .. }),
            ) => format == "json",
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
                    String::from_utf8(read_input("-", MAX_PAYLOAD_BYTES, None)?).map_err(|_| {
                        Error::invalid("the document on standard input is not UTF-8")
                    })?
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
                let request = ImportRequest {
                    collection: args.collection,
                    batch_size: args.batch_size,
                    embed: args.embed,
                    wait: args.wait,
                };
                let (control, bar) = progress("documents");
                let workspace = store(&args.store)?;
                let report = if args.file.as_os_str() == "-" {
                    workspace.import_stream(&request, &mut crate::output::stdin(), &control)?
                } else {
                    let source = ImportSource::File(args.file.clone());
                    workspace.import_documents(&request, &source, &control)?
                };
                drop(bar);
                let mut text = format!(
                    "imported {} documents into {} ({} batches)",
                    report.imported, report.collection, report.batches
                );
                if report.embedded > 0 {
                    text.push_str(&format!(", {} embeddings", report.embedded));
                }
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
            DocsCommand::Vsearch(args) => super::search::vsearch(&args),
            DocsCommand::Vsync(args) => {
                let request = field_request(&args);
                let (control, bar) = progress("documents");
                let report = store(&args.store)?.vsync(&request, &control)?;
                drop(bar);
                Ok(line(
                    args.format == "json",
                    report.to_json(),
                    report.to_string(),
                ))
            }
            DocsCommand::Vstale(args) => {
                let report = store(&args.store)?.vstale(&field_request(&args))?;
                if args.format == "json" {
                    return Ok(format!("{}\n", report.to_json()));
                }
                Ok(report.to_string())
            }
            DocsCommand::Context(args) => super::search::context(args),
            DocsCommand::Index(command) => command.run(),
            DocsCommand::Ann(command) => command.run(),
        }
    }
}

impl IndexCommand {
    fn run(self) -> Result<String, Error> {
        match self {
            IndexCommand::Create(args) => {
                let created = store(&args.store)?.create_field_index(&field_request(&args))?;
                let text = if created {
                    format!("created index {}.{}", args.collection, args.field)
                } else {
                    format!("exists: index {}.{}", args.collection, args.field)
                };
                let value =
                    json!({"collection": args.collection, "field": args.field, "created": created});
                Ok(line(args.format == "json", value, text))
            }
            IndexCommand::Drop(args) => {
                let dropped = store(&args.store)?.drop_field_index(&field_request(&args))?;
                if !dropped {
                    return Err(not_declared(&args, "index", "index"));
                }
                let value =
                    json!({"collection": args.collection, "field": args.field, "dropped": true});
                Ok(line(
                    args.format == "json",
                    value,
                    format!("dropped index {}.{}", args.collection, args.field),
                ))
            }
            IndexCommand::List(args) => {
                let list = store(&args.store)?.field_indexes(&args.collection)?;
                if args.format == "json" {
                    let items: Vec<Value> = list
                        .iter()
                        .map(|i| json!({"field": i.field, "entries": i.entries, "createdAt": i.created_at}))
                        .collect();
                    return Ok(format!("{}\n", Value::Array(items)));
                }
                Ok(list
                    .iter()
                    .map(|i| format!("{}\t{} entries\n", i.field, i.entries))
                    .collect())
            }
        }
    }
}

impl AnnCommand {
    fn run(self) -> Result<String, Error> {
        match self {
            AnnCommand::Create(args) => {
                let request = AnnRequest {
                    collection: args.field.collection.clone(),
                    field: args.field.field.clone(),
                    lists: args.lists,
                    probes: args.probes,
                    wait: args.field.wait,
                };
                let info = store(&args.field.store)?.create_ann(&request)?;
                Ok(line(
                    args.field.format == "json",
                    info.to_json(),
                    info.to_string(),
                ))
            }
            AnnCommand::Drop(args) => {
                let request = AnnRequest {
                    collection: args.collection.clone(),
                    field: args.field.clone(),
                    wait: args.wait,
                    ..AnnRequest::default()
                };
                if !store(&args.store)?.drop_ann(&request)? {
                    return Err(not_declared(&args, "approximate index", "ann"));
                }
                let value =
                    json!({"collection": args.collection, "field": args.field, "dropped": true});
                Ok(line(
                    args.format == "json",
                    value,
                    format!(
                        "dropped approximate index {}.{}",
                        args.collection, args.field
                    ),
                ))
            }
            AnnCommand::List(args) => {
                let list = store(&args.store)?.ann_indexes(&args.collection)?;
                if args.format == "json" {
                    let items: Vec<Value> = list.iter().map(|i| i.to_json()).collect();
                    return Ok(format!("{}\n", Value::Array(items)));
                }
                Ok(list.iter().map(|i| format!("{i}\n")).collect())
            }
        }
    }
}

/// The error of dropping a `what` that the field does not have, pointing at `docs
/// <command> list`.
fn not_declared(args: &FieldArgs, what: &str, command: &str) -> Error {
    Error::new(
        ctxpack_api::ErrorKind::NotFound,
        format!(
            "collection `{}` has no {what} of `{}`",
            args.collection, args.field
        ),
    )
    .with_hint(ctxpack_api::Hint::Advice(format!(
        "`ctxpack docs {command} list {} {}` lists the ones it has",
        args.store.display(),
        args.collection
    )))
}

fn field_request(args: &FieldArgs) -> FieldRequest {
    FieldRequest {
        collection: args.collection.clone(),
        field: args.field.clone(),
        wait: args.wait,
    }
}
