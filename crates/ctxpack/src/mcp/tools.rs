//! The tools: their catalogue (name, description for a model, annotations, the scope that
//! lists them) and their handlers. Each tool's input schema is generated from the API request
//! type it builds (plus the few arguments that only the protocol needs, such as a document
//! store's `path`), so the schema, the defaults and the documentation cannot disagree.

use std::sync::Arc;

use ctxpack_api::docs::{
    DocumentPackRequest, FieldRequest, ImportRequest, ImportSource, InsertRequest, VsearchRequest,
};
use ctxpack_api::{
    ArtifactAddRequest, Error, IndexRequest, PackOptions, QueryRequest, RenderOptions,
    SnapshotPackRequest, View, pack_json, schema,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::mcp::schema::{merged, schema_of, take};
use crate::mcp::{Scope, Server};
use ctxpack_api::Control;

/// What a tool does to the world, which decides its annotations and the scope that lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Reads only; the same call gives the same answer while the store is unchanged.
    Read,
    /// Adds to the store; repeating it changes nothing more.
    IdempotentWrite,
    /// Adds to the store; repeating it adds again.
    Write,
    /// May overwrite stored data.
    Overwrite,
}

type Handler = fn(&Server, &JsonObject, &Control) -> Result<String, Error>;

/// One tool of the catalogue.
pub(crate) struct Spec {
    name: &'static str,
    title: &'static str,
    effect: Effect,
    description: &'static str,
    schema: fn() -> JsonObject,
    handler: Handler,
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

    /// Checks the arguments against the schema's properties, then runs the handler.
    pub(crate) fn run(
        &self,
        server: &Server,
        arguments: &JsonObject,
        control: &Control,
    ) -> Result<String, Error> {
        let schema = (self.schema)();
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
        (self.handler)(server, &given, control)
    }

    fn tool(&self) -> Tool {
        let (read_only, destructive, idempotent) = match self.effect {
            Effect::Read => (true, false, true),
            Effect::IdempotentWrite => (false, false, true),
            Effect::Write => (false, false, false),
            Effect::Overwrite => (false, true, false),
        };
        Tool::new(self.name, self.description, Arc::new((self.schema)()))
            .with_title(self.title)
            .with_annotations(
                ToolAnnotations::with_title(self.title)
                    .read_only(read_only)
                    .destructive(destructive)
                    .idempotent(idempotent)
                    .open_world(false),
            )
    }
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArguments {}

/// How a pack's JSON projects each hit.
#[derive(Deserialize, JsonSchema)]
struct Presentation {
    /// minimal: citation and text of each hit (leanest); default: also family, cost, location
    /// and the dropped list; full: also rank, tier, title.
    #[serde(default)]
    #[schemars(with = "schema::View")]
    view: View,
}

/// A document store.
#[derive(Deserialize, JsonSchema)]
struct StorePath {
    /// The store directory, e.g. `app.ctxpack`: relative to the repository root the server
    /// was started for, or absolute; it must lie inside that root or the server's store
    /// directory.
    path: String,
}

/// An artifact's text.
#[derive(Deserialize, JsonSchema)]
struct Content {
    /// The artifact's text (at most 4 MiB). Secrets in it are masked before it is stored.
    content: String,
}

/// The documents to import: exactly one of the three.
#[derive(Deserialize, JsonSchema)]
struct Documents {
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

fn repo_context_pack(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    let request: SnapshotPackRequest = take(args)?;
    let view = take::<Presentation>(args)?.view;
    // At write scope the pack is recorded; a read-only workspace records nothing.
    let rendering = RenderOptions {
        format: ctxpack_api::Format::Json,
        view,
        pretty: false,
    };
    let options = PackOptions {
        record: Some(&rendering),
        index_if_missing: false,
    };
    let built = server.workspace.snapshot_pack(&request, &options)?;
    Ok(pack_json(&built.pack, view).to_string())
}

fn query(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    Ok(server
        .workspace
        .query(&take::<QueryRequest>(args)?)?
        .to_json()
        .to_string())
}

fn status(server: &Server, _: &JsonObject, _: &Control) -> Result<String, Error> {
    Ok(server.workspace.status()?.to_json().to_string())
}

fn index(server: &Server, args: &JsonObject, control: &Control) -> Result<String, Error> {
    let request: IndexRequest = take(args)?;
    Ok(server
        .workspace
        .index(&request, control)?
        .to_json()
        .to_string())
}

fn artifact_add(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    let request: ArtifactAddRequest = take(args)?;
    let content = take::<Content>(args)?.content;
    let id = server
        .workspace
        .add_artifact(&request, content.as_bytes())?;
    Ok(json!({ "id": id, "scope": request.scope }).to_string())
}

fn context_pack(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    let request: DocumentPackRequest = take(args)?;
    let store = server.documents(&take::<StorePath>(args)?.path)?;
    let rendering = RenderOptions {
        format: ctxpack_api::Format::Json,
        ..RenderOptions::default()
    };
    Ok(store
        .document_pack(&request, Some(&rendering))?
        .pack
        .to_json_line())
}

fn vsearch(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    let request: VsearchRequest = take(args)?;
    let store = server.documents(&take::<StorePath>(args)?.path)?;
    Ok(store.vsearch(&request)?.to_json_line())
}

fn docs_insert(server: &Server, args: &JsonObject, _: &Control) -> Result<String, Error> {
    let request: InsertRequest = take(args)?;
    let store = server.documents(&take::<StorePath>(args)?.path)?;
    Ok(json!(store.insert_document(&request)?).to_string())
}

fn docs_import(server: &Server, args: &JsonObject, control: &Control) -> Result<String, Error> {
    let request: ImportRequest = take(args)?;
    let input: Documents = take(args)?;
    let store = server.documents(&input.path)?;
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
        (None, None, Some(file)) => ImportSource::File(server.workspace.confine("file", &file)?),
        _ => {
            return Err(Error::invalid(
                "`docs_import` needs exactly one of `documents`, `jsonl` or `file`",
            ));
        }
    };
    Ok(json!(store.import_documents(&request, &source, control)?).to_string())
}

fn vsync(server: &Server, args: &JsonObject, control: &Control) -> Result<String, Error> {
    let request: FieldRequest = take(args)?;
    let store = server.documents(&take::<StorePath>(args)?.path)?;
    Ok(store.vsync(&request, control)?.to_json().to_string())
}

const CATALOGUE: &[Spec] = &[
    Spec {
        name: "repo_context_pack",
        title: "Context pack from the repository",
        effect: Effect::Read,
        schema: merged::<SnapshotPackRequest, Presentation>,
        handler: repo_context_pack,
        description: "The best evidence from this git repository for a task, inside a hard budget: the most relevant code and documentation chunks, each cited as `path#Lstart-Lend@sha`, never more than the budget, with counters and a list of what was left out and why.\n\nUse it first when you need to understand or change code for a goal (\"how are budgets enforced\", \"add retry to the HTTP client\") and want context that fits. It reads the exact committed snapshot (`at`, HEAD by default), never uncommitted changes (the pack warns when the worktree is dirty). If that commit is not indexed it fails with `not_found` (exitCode 3) and a hint naming the nearest indexed ancestor: then call `index` (write scope) or ask the user to run `ctxpack index`; do not retry unchanged.\n\nNot for JSON document collections (use `context_pack`) nor for ranking diagnostics (use `query`). Returns the pack as canonical JSON, exactly what `ctxpack pack --format json` prints.",
    },
    Spec {
        name: "query",
        title: "Raw retrieval hits",
        effect: Effect::Read,
        schema: schema_of::<QueryRequest>,
        handler: query,
        description: "Raw retrieval hits of the repository's committed snapshot for a goal, best first, with each score's breakdown (BM25 over text, path and symbol, the file's evidence, and the prior that halves tests and fixtures) and each hit's cost. No budget is applied and no text is returned.\n\nUse it to see why something ranks where it does, or which files look relevant before asking for a pack. For context to read, use `repo_context_pack`. Returns what `ctxpack query --format json` prints.",
    },
    Spec {
        name: "status",
        title: "Store and HEAD status",
        effect: Effect::Read,
        schema: schema_of::<NoArguments>,
        handler: status,
        description: "What the server's store holds: HEAD's commit and branch, whether HEAD is indexed, whether the worktree has uncommitted changes, and every indexed snapshot with its file and chunk counts.\n\nUse it when unsure whether a commit is indexed, or after `repo_context_pack` failed with `not_found`. Takes no arguments. Returns what `ctxpack status --format json` prints.",
    },
    Spec {
        name: "artifact_add",
        title: "Store an artifact",
        effect: Effect::IdempotentWrite,
        schema: merged::<ArtifactAddRequest, Content>,
        handler: artifact_add,
        description: "Store text evidence beside the repository's snapshots: a CI log, test output, session notes. Later `repo_context_pack` calls with `scope` session, harness, evidence or all merge the artifacts of that scope into their candidates, ranked and budgeted like code and cited as `evidence:<id>#Lx-Ly` (evidence) or `artifact:<id>#Lx-Ly` (session, harness).\n\nUse it when the answer depends on something that is not committed code, such as a failing test's output. Not for code (commit and `index` it) nor for JSON documents (`docs_insert`). Returns `{\"id\", \"scope\"}`; storing the same content under the same id again is a no-op, other content under a used id fails with `conflict` (exitCode 5).",
    },
    Spec {
        name: "index",
        title: "Index a commit",
        effect: Effect::IdempotentWrite,
        schema: schema_of::<IndexRequest>,
        handler: index,
        description: "Index a commit of the repository (HEAD by default) into the store, so that `repo_context_pack` and `query` can read it. Incremental and content-addressed: a commit already indexed is a no-op, and a child commit only processes the files it changed. It reads the commit, never the worktree: commit first to include changes.\n\nUse it after `repo_context_pack` failed because the snapshot is not indexed, or after new commits. A large repository takes seconds the first time; progress is reported when the call carries a progress token, and cancelling the call stops the work. Fails with `not_found` (exitCode 3) while another process is writing the store. Returns what `ctxpack index --format json` prints.",
    },
    Spec {
        name: "context_pack",
        title: "Context pack from documents",
        effect: Effect::Read,
        schema: merged::<DocumentPackRequest, StorePath>,
        handler: context_pack,
        description: "A token-budgeted, cited context pack from a JSON document collection of a ctxpack store: the documents whose string `field` is most similar to `query` (offline hashing embedder, cosine similarity), packed best-first until the approximate token budget (ceil(chars / 4), default 1000) would overflow; packing stops at the first chunk that does not fit and the pack is then `truncated`.\n\nUse it to ground an answer in stored documents, and cite each chunk by its `id`. Add `filter` to restrict candidates first (hybrid retrieval). Not for the repository's source code (use `repo_context_pack`). Returns {query, budgetTokens, usedTokens, truncated, chunks: [{id, score, tokens, text}], citations}, exactly what `ctxpack docs context` prints.",
    },
    Spec {
        name: "vsearch",
        title: "Vector search over documents",
        effect: Effect::Read,
        schema: merged::<VsearchRequest, StorePath>,
        handler: vsearch,
        description: "Exact cosine k-nearest-neighbour search over a string field of a document collection: the `k` documents most similar to `query`, best first, each whole with its `_id` and score; `filter` restricts candidates first.\n\nUse it when you need whole documents or their ids; when you want context for a prompt inside a budget, use `context_pack`. Returns {hits: [{id, score, document}], embeddedOnTheFly}.",
    },
    Spec {
        name: "docs_insert",
        title: "Insert a document",
        effect: Effect::Overwrite,
        schema: merged::<InsertRequest, StorePath>,
        handler: docs_insert,
        description: "Insert one JSON document into a collection of an existing ctxpack store (the collection is created on first insert) and return its `_id`; an ObjectId is generated when the document has none. A duplicate `_id` fails with `conflict` (exitCode 5) unless `replace` is true, which overwrites the stored document.\n\nSearches embed a new document on the fly until `vsync` stores its embedding. For many documents use `docs_import`.",
    },
    Spec {
        name: "docs_import",
        title: "Import documents",
        effect: Effect::Write,
        schema: merged::<ImportRequest, Documents>,
        handler: docs_import,
        description: "Import many JSON documents into a collection of an existing ctxpack store, given as exactly one of `documents` (an array of objects), `jsonl` (JSON Lines text) or `file` (a JSON Lines file inside the repository). The whole input is checked first, so a bad line or a duplicate `_id` writes nothing and the error names the line; then documents are written a batch at a time.\n\nRun `vsync` afterwards so searches need not embed them on the fly. Returns {collection, imported, batches}.",
    },
    Spec {
        name: "vsync",
        title: "Store embeddings",
        effect: Effect::IdempotentWrite,
        schema: merged::<FieldRequest, StorePath>,
        handler: vsync,
        description: "Compute and store the missing and stale embeddings of a collection's string field (after inserts, imports or replacements) and remove those of deleted documents, so `vsearch` and `context_pack` read stored vectors instead of embedding on the fly. Repeating it changes nothing. Returns the counts, as `ctxpack docs vsync --format json` prints them.",
    },
];

/// The tools a server at `scope` lists, in catalogue order.
pub(crate) fn list(scope: Scope) -> Vec<Tool> {
    CATALOGUE
        .iter()
        .filter(|spec| spec.scope() <= scope)
        .map(Spec::tool)
        .collect()
}

/// The tool called `name`.
pub(crate) fn lookup(name: &str) -> Option<&'static Spec> {
    CATALOGUE.iter().find(|spec| spec.name == name)
}
