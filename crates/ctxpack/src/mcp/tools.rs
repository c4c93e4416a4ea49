//! The tools' handlers and what a catalogue entry is (the entries are in `catalogue`). Each
//! tool's input schema is generated from the API request type it builds (plus the few
//! arguments that only the protocol needs, such as a document store's `path` or a pack's
//! `format`), so the schema, the defaults and the documentation cannot disagree.

use std::sync::Arc;

use ctxpack_api::docs::{
    DocumentPackRequest, FieldRequest, ImportRequest, ImportSource, InsertRequest, VsearchRequest,
};
use ctxpack_api::{
    ArtifactAddRequest, Control, Error, Format, IndexRequest, PackOptions, QueryRequest,
    RenderOptions, View, Workspace, render, schema,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::mcp::schema::take;
use crate::mcp::{Reply, Scope};

pub(crate) use ctxpack_api::SnapshotPackRequest;

/// What a tool does to the world, which decides its annotations and the scope that lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Reads only; the same call gives the same answer while the store is unchanged.
    Read,
    /// Adds to the store; repeating it changes nothing more.
    IdempotentWrite,
    /// Adds to the store; repeating it adds again.
    Write,
    /// May overwrite stored data.
    Overwrite,
}

/// How a tool answers.
pub(crate) enum Handler {
    /// With canonical JSON text.
    Json(fn(&Workspace, &JsonObject, &Control) -> Result<String, Error>),
    /// With its own text, and the canonical JSON beside it.
    Reply(fn(&Workspace, &JsonObject, &Control) -> Result<Reply, Error>),
}

/// Where a tool is served: a local server over one checkout, or a team server whose
/// repositories, files and working trees belong to the server, not to its callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    Local,
    Team,
}

/// One tool of the catalogue.
pub(crate) struct Spec {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) effect: Effect,
    /// When to call it and what it costs; `{…}` names a request default (see [`defaults`]).
    pub(crate) description: &'static str,
    pub(crate) schema: fn() -> JsonObject,
    /// The arguments' texts a model reads, by name (the others keep the library's).
    pub(crate) arguments: &'static [(&'static str, &'static str)],
    /// Options of the library's request that the tool does not offer (they keep their
    /// defaults): tuning a model has no use for, which every conversation would pay to list.
    pub(crate) withheld: &'static [&'static str],
    /// Arguments a team server neither lists nor takes, each with the reason a caller is told:
    /// they would reach the server's own files.
    pub(crate) local_only: &'static [(&'static str, &'static str)],
    pub(crate) handler: Handler,
}

impl Spec {
    /// The scope that lists it.
    pub(crate) fn scope(&self) -> Scope {
        if self.effect == Effect::Read {
            Scope::Read
        } else {
            Scope::Write
        }
    }

    /// Checks the arguments against the schema's properties on `host`, then runs the handler.
    pub(crate) fn run(
        &self,
        host: Host,
        workspace: &Workspace,
        arguments: &JsonObject,
        control: &Control,
    ) -> Result<Reply, Error> {
        if host == Host::Team
            && let Some((name, why)) = self
                .local_only
                .iter()
                .find(|(name, _)| arguments.get(*name).is_some_and(|v| !v.is_null()))
        {
            return Err(Error::invalid_field(*name, *why));
        }
        let schema = self.input_schema(host);
        let known: Vec<&str> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if let Some(key) = arguments.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(Error::invalid(format!(
                "`{}` has no argument `{key}`; known arguments: {}",
                self.name,
                known.join(", ")
            )));
        }
        // `null` for an argument means it is absent.
        let given: JsonObject = arguments
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        match self.handler {
            Handler::Json(handler) => {
                Ok(Reply::canonical_text(handler(workspace, &given, control)?))
            }
            Handler::Reply(handler) => handler(workspace, &given, control),
        }
    }

    /// The input schema as listed on `host`: the request's, less what is withheld (and on a
    /// team server what is local only), with the tool's texts.
    pub(crate) fn input_schema(&self, host: Host) -> JsonObject {
        let mut schema = (self.schema)();
        crate::mcp::schema::withhold(&mut schema, self.withheld);
        crate::mcp::schema::describe(&mut schema, self.arguments);
        if host == Host::Team {
            let local: Vec<&str> = self.local_only.iter().map(|(name, _)| *name).collect();
            crate::mcp::schema::withhold(&mut schema, &local);
        }
        schema
    }

    /// The tool as listed on `host`.
    pub(crate) fn tool(&self, host: Host) -> Tool {
        let (read_only, destructive, idempotent) = match self.effect {
            Effect::Read => (true, false, true),
            Effect::IdempotentWrite => (false, false, true),
            Effect::Write => (false, false, false),
            Effect::Overwrite => (false, true, false),
        };
        Tool::new(
            self.name,
            defaults(self.description),
            Arc::new(self.input_schema(host)),
        )
        .with_title(self.title)
        .with_annotations(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(destructive)
                .idempotent(idempotent)
                .open_world(false),
        )
    }
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct NoArguments {}

/// How a pack is shown.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Presentation {
    /// The text's format: markdown (each hit fenced under its citation, the leanest), text or
    /// xml; each is fitted to the budget. (The canonical JSON, which takes more tokens for the
    /// same pack, is what `ctxpack pack --format json` and a server's HTTP API give programs.)
    #[serde(default)]
    format: TextFormat,
    /// minimal: citation and text of each hit (leanest); default: also a summary of what was
    /// dropped; full: also symbols, costs, ranks, tiers, titles and more of the dropped.
    #[serde(default)]
    #[schemars(with = "schema::View")]
    view: View,
}

/// The formats of a pack's text content.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TextFormat {
    #[default]
    Markdown,
    Text,
    Xml,
}

impl From<TextFormat> for Format {
    fn from(format: TextFormat) -> Format {
        match format {
            TextFormat::Markdown => Format::Markdown,
            TextFormat::Text => Format::Text,
            TextFormat::Xml => Format::Xml,
        }
    }
}

/// A document store.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct StorePath {
    /// The store directory, e.g. `app.ctxpack`: relative to the repository root the server
    /// serves, or absolute; it must lie inside that root or the server's store directory.
    /// On a team server it is a store name instead (`kb`, `team-notes`).
    path: String,
}

/// An artifact's text.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Content {
    /// The artifact's text (at most 4 MiB). Secrets in it are masked before it is stored.
    content: String,
}

/// The documents to import: exactly one of the three.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Documents {
    /// The documents, each a JSON object or its JSON text.
    #[schemars(with = "Option<Vec<String>>")]
    documents: Option<Vec<Value>>,
    /// The documents as JSON Lines text, one object per line.
    jsonl: Option<String>,
    /// A JSON Lines file inside the repository (relative to its root).
    file: Option<String>,
    /// The store directory (see `path` of the other document tools).
    path: String,
}

pub(crate) fn repo_context_pack(
    workspace: &Workspace,
    args: &JsonObject,
    control: &Control,
) -> Result<Reply, Error> {
    let request: SnapshotPackRequest = take(args)?;
    let shown: Presentation = take(args)?;
    // At write scope the pack is recorded as shown; a read-only workspace records nothing.
    let rendering = RenderOptions {
        format: shown.format.into(),
        view: shown.view,
        pretty: false,
    };
    let options = PackOptions {
        record: Some(&rendering),
        ..PackOptions::default()
    };
    // Indexing first (at write scope) reports progress and stops when the call is cancelled.
    let built = workspace.snapshot_pack_with(&request, &options, control)?;
    let mut text = render(&built.pack, &rendering);
    text.truncate(text.trim_end_matches('\n').len());
    Ok(Reply::pack(text, built.pack, shown.view))
}

pub(crate) fn query(
    workspace: &Workspace,
    args: &JsonObject,
    _: &Control,
) -> Result<String, Error> {
    Ok(workspace
        .query(&take::<QueryRequest>(args)?)?
        .to_json()
        .to_string())
}

pub(crate) fn status(workspace: &Workspace, _: &JsonObject, _: &Control) -> Result<String, Error> {
    Ok(workspace.status()?.to_json().to_string())
}

pub(crate) fn index(
    workspace: &Workspace,
    args: &JsonObject,
    control: &Control,
) -> Result<String, Error> {
    let request: IndexRequest = take(args)?;
    Ok(workspace.index(&request, control)?.to_json().to_string())
}

pub(crate) fn artifact_add(
    workspace: &Workspace,
    args: &JsonObject,
    _: &Control,
) -> Result<String, Error> {
    let request: ArtifactAddRequest = take(args)?;
    let content = take::<Content>(args)?.content;
    let id = workspace.add_artifact(&request, content.as_bytes())?;
    Ok(json!({ "id": id, "scope": request.scope }).to_string())
}

pub(crate) fn context_pack(
    workspace: &Workspace,
    args: &JsonObject,
    _: &Control,
) -> Result<String, Error> {
    let request: DocumentPackRequest = take(args)?;
    let store = documents(workspace, &take::<StorePath>(args)?.path)?;
    let rendering = RenderOptions {
        format: ctxpack_api::Format::Json,
        ..RenderOptions::default()
    };
    Ok(store
        .document_pack(&request, Some(&rendering))?
        .pack
        .to_json_line())
}

pub(crate) fn vsearch(
    workspace: &Workspace,
    args: &JsonObject,
    _: &Control,
) -> Result<String, Error> {
    let request: VsearchRequest = take(args)?;
    let store = documents(workspace, &take::<StorePath>(args)?.path)?;
    Ok(store.vsearch(&request)?.to_json_line())
}

pub(crate) fn docs_insert(
    workspace: &Workspace,
    args: &JsonObject,
    _: &Control,
) -> Result<String, Error> {
    let request: InsertRequest = take(args)?;
    let store = documents(workspace, &take::<StorePath>(args)?.path)?;
    Ok(json!(store.insert_document(&request)?).to_string())
}

pub(crate) fn docs_import(
    workspace: &Workspace,
    args: &JsonObject,
    control: &Control,
) -> Result<String, Error> {
    let request: ImportRequest = take(args)?;
    let input: Documents = take(args)?;
    let store = documents(workspace, &input.path)?;
    let source = match (input.documents, input.jsonl, input.file) {
        (Some(documents), None, None) => {
            let mut bytes = Vec::new();
            for document in documents {
                // JSON text has line breaks only between tokens: this keeps it one line.
                let line = match document {
                    Value::String(text) => text.replace(['\n', '\r'], " "),
                    other => other.to_string(),
                };
                bytes.extend_from_slice(line.as_bytes());
                bytes.push(b'\n');
            }
            ImportSource::Bytes(bytes)
        }
        (None, Some(text), None) => ImportSource::Bytes(text.into_bytes()),
        (None, None, Some(file)) => ImportSource::File(workspace.confine("file", &file)?),
        _ => {
            return Err(Error::invalid(
                "`docs_import` needs exactly one of `documents`, `jsonl` or `file`",
            ));
        }
    };
    Ok(json!(store.import_documents(&request, &source, control)?).to_string())
}

pub(crate) fn vsync(
    workspace: &Workspace,
    args: &JsonObject,
    control: &Control,
) -> Result<String, Error> {
    let request: FieldRequest = take(args)?;
    let store = documents(workspace, &take::<StorePath>(args)?.path)?;
    Ok(store.vsync(&request, control)?.to_json().to_string())
}

/// The workspace of the document store `path` names.
fn documents(workspace: &Workspace, path: &str) -> Result<Workspace, Error> {
    workspace.document_store("path", path)
}

/// A description with each `{name}` replaced by the request default it names, so that no
/// default is restated.
fn defaults(description: &str) -> String {
    let pack = SnapshotPackRequest::default();
    let documents = ctxpack_api::docs::DocumentPackRequest::default();
    let query = QueryRequest::default();
    description
        .replace("{pack_budget}", &pack.budget.get().to_string())
        .replace("{pack_meter}", pack.meter.name())
        .replace("{docs_budget}", &documents.budget.get().to_string())
        .replace("{docs_meter}", documents.meter.name())
        .replace("{query_top_k}", &query.top_k.to_string())
}
