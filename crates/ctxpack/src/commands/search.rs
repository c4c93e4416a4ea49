//! `ctxpack docs vsearch` and `ctxpack docs context`: searching and packing documents.

use std::path::PathBuf;

use clap::Args;
use ctxpack_api::docs::{DocumentPackRequest, VsearchRequest};
use ctxpack_api::{Access, Budget, Error, Format, Meter, RenderOptions, Selector, View, Workspace};
use serde_json::Value;

use crate::args::{named, parse, parse_format_among};
use crate::output::recorded;

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
    /// Scan every vector even when the field has an approximate index (`docs ann create`).
    #[arg(long)]
    pub exact: bool,
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
    #[arg(long, default_value_t = DocumentPackRequest::default().budget, value_parser = parse::<Budget>, allow_negative_numbers = true)]
    pub budget: Budget,
    /// A MongoDB-style filter (JSON) applied before ranking.
    #[arg(long)]
    pub filter: Option<String>,
    /// Selection policy: prefix (stop at the first chunk that does not fit), skip, diverse or
    /// coverage.
    #[arg(long, default_value_t = DocumentPackRequest::default().selector, value_parser = named::<Selector>())]
    pub selector: Selector,
    /// Budget unit: approx (ceil(chars / 4)), o200k, cl100k, words or chars.
    #[arg(long, default_value_t = DocumentPackRequest::default().meter, value_parser = named::<Meter>())]
    pub meter: Meter,
    /// Offer at most this many top-ranked documents to selection (default: all).
    #[arg(long)]
    pub top_k: Option<usize>,
    /// Output format: json (one canonical line), text, markdown or xml.
    #[arg(long, default_value = "json", value_parser = parse_pack_format)]
    pub format: Format,
    /// How much of each hit text, Markdown and XML show: minimal, default or full.
    #[arg(long, default_value = "default", value_parser = named::<View>())]
    pub view: View,
    /// Pretty-print JSON over several lines (same key order).
    #[arg(long)]
    pub pretty: bool,
    /// Do not record this pack in the store's ledger.
    #[arg(long)]
    pub no_ledger: bool,
}

fn parse_pack_format(s: &str) -> Result<Format, String> {
    parse_format_among(
        s,
        &[Format::Json, Format::Text, Format::Markdown, Format::Xml],
    )
}

/// The workspace of a document store (no repository is involved).
pub(super) fn store(dir: &std::path::Path) -> Result<Workspace, Error> {
    Workspace::for_store(dir, Access::ReadWrite)
}

/// A `--filter` argument as the API takes it: the filter's JSON text.
pub(super) fn filter(text: Option<&String>) -> Option<Value> {
    text.map(|t| Value::String(t.clone()))
}

/// Runs `docs vsearch`: one JSON line per hit, the document exactly as stored.
pub(super) fn vsearch(args: &VsearchArgs) -> Result<String, Error> {
    let outcome = store(&args.store)?.vsearch(&VsearchRequest {
        collection: args.collection.clone(),
        field: args.field.clone(),
        query: args.query.clone(),
        k: args.k,
        filter: filter(args.filter.as_ref()),
        exact: args.exact,
    })?;
    Ok(outcome
        .hits
        .iter()
        .map(|h| format!("{}\n", h.to_json_line()))
        .collect())
}

/// Runs `docs context`.
pub(super) fn context(args: ContextArgs) -> Result<String, Error> {
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
