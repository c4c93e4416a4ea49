//! The tools: their catalogue (name, description for a model, input schema, annotations and
//! the scope that lists them) and their handlers.
//!
//! Every handler calls the same library function as the CLI command it mirrors and returns the
//! same canonical JSON the command prints with `--format json`; a failure is the CLI's
//! [`Failure`], which the server turns into a tool error carrying its envelope.

use std::sync::Arc;

use ctxpack_core::{Meter, Selector, View, pack_json};
use ctxpack_docs::context::ContextOptions;
use ctxpack_docs::filter::Filter;
use ctxpack_index::indexer::IndexOptions;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::commands::artifact::{ArtifactRequest, add_artifact};
use crate::commands::docs;
use crate::commands::index::index_into;
use crate::commands::ledger;
use crate::commands::pack::{
    DEFAULT_BUDGET, SnapshotPackRequest, query_hits, query_json, snapshot_pack,
};
use crate::commands::status::Status;
use crate::failure::{Failure, FailureKind};
use crate::mcp::Scope;
use crate::mcp::args::Args;
use crate::mcp::confine::Roots;
use ctxpack_store::RecordContext;

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

/// One tool of the catalogue.
struct Spec {
    name: &'static str,
    title: &'static str,
    effect: Effect,
    description: &'static str,
    schema: fn() -> JsonObject,
}

impl Spec {
    fn scope(&self) -> Scope {
        if self.effect == Effect::Read {
            Scope::Read
        } else {
            Scope::Write
        }
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

const PATH_NOTE: &str = "The store directory, e.g. `app.ctxpack`: relative to the repository root the server was started for, or absolute; it must lie inside that root or the server's store directory.";

fn object(properties: Value, required: &[&str]) -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), json!(false));
    schema
}

fn budget_schema(default: u64, unit: &str) -> Value {
    json!({
        "type": "integer",
        "minimum": 1,
        "maximum": ctxpack_core::Budget::MAX,
        "default": default,
        "description": format!("The hard budget, in {unit}."),
    })
}

fn filter_schema() -> Value {
    json!({
        "type": ["object", "string"],
        "description": "A MongoDB-style filter applied before ranking, as an object or its JSON text, e.g. {\"status\": \"published\"} or {\"year\": {\"$gte\": 2020}}.",
    })
}

fn repo_context_pack_schema() -> JsonObject {
    object(
        json!({
            "goal": {"type": "string", "minLength": 1, "description": "The task, in words: what you are about to do or find out, e.g. \"add retry to the HTTP client\"."},
            "budget": budget_schema(DEFAULT_BUDGET, "units of `meter` (words by default)"),
            "at": {"type": "string", "default": "HEAD", "description": "The commit: HEAD, a full SHA or a unique hexadecimal prefix (branch names, tags and HEAD~1 are refused)."},
            "scope": {"type": "string", "enum": ["durable", "session", "harness", "evidence", "all"], "default": "durable", "description": "durable: the committed snapshot alone; session, harness, evidence or all also merge the stored artifacts of that scope."},
            "view": {"type": "string", "enum": ["minimal", "default", "full"], "default": "default", "description": "minimal: citation and text of each hit (leanest); default: also family, cost, location and the dropped list; full: also rank, tier, title."},
            "meter": {"type": "string", "enum": ["words", "o200k", "cl100k", "chars", "approx"], "default": "words", "description": "The budget unit: whitespace words, exact OpenAI token counts (o200k, cl100k), characters, or ceil(chars/4)."},
            "selector": {"type": "string", "enum": ["coverage", "diverse", "prefix", "skip"], "default": "coverage", "description": "Selection policy: coverage (the default: relevance per cost, favouring files not yet represented), diverse (one hit per file first, then fill), prefix (best-first, stop at the first that does not fit), skip (best-first, skip what does not fit)."},
            "top_k": {"type": "integer", "minimum": 1, "default": 30, "description": "Retrieval candidates offered to selection."},
        }),
        &["goal"],
    )
}

fn query_schema() -> JsonObject {
    object(
        json!({
            "goal": {"type": "string", "minLength": 1, "description": "What to retrieve for."},
            "at": {"type": "string", "default": "HEAD", "description": "HEAD, a full SHA or a unique hexadecimal prefix."},
            "top_k": {"type": "integer", "minimum": 1, "default": 10, "description": "How many hits to return."},
            "meter": {"type": "string", "enum": ["words", "o200k", "cl100k", "chars", "approx"], "default": "words", "description": "The unit each hit's cost is given in."},
        }),
        &["goal"],
    )
}

fn no_arguments_schema() -> JsonObject {
    object(json!({}), &[])
}

fn index_schema() -> JsonObject {
    object(
        json!({
            "at": {"type": "string", "default": "HEAD", "description": "The commit to index: HEAD, a full SHA or a unique hexadecimal prefix."},
        }),
        &[],
    )
}

fn artifact_add_schema() -> JsonObject {
    object(
        json!({
            "scope": {"type": "string", "enum": ["session", "harness", "evidence"], "description": "session: notes of the current session; harness: output of the agent's harness; evidence: logs and results that support a claim (CI output, test runs)."},
            "content": {"type": "string", "description": "The artifact's text (at most 4 MiB). Secrets in it are masked before it is stored."},
            "id": {"type": "string", "description": "Its id (letters, digits, `-`, `_`, `.`; default: a hash of the content). Reusing an id for different content is a conflict."},
            "source_id": {"type": "string", "description": "Where it came from, e.g. `ci`; names its source family when no id is given."},
            "title": {"type": "string", "description": "A human title, shown with its chunks."},
            "name": {"type": "string", "description": "A file name such as `build.log` or `notes.md`, used to choose how the text is chunked."},
        }),
        &["scope", "content"],
    )
}

fn context_pack_schema() -> JsonObject {
    object(
        json!({
            "path": {"type": "string", "description": PATH_NOTE},
            "collection": {"type": "string", "description": "The collection (namespace) to retrieve over."},
            "field": {"type": "string", "description": "The string field whose text is embedded, ranked and packed (a dotted path such as `body` or `meta.summary`)."},
            "query": {"type": "string", "description": "The task or query text to rank against."},
            "budget": budget_schema(ContextOptions::DEFAULT_BUDGET, "approximate tokens (ceil(chars / 4))"),
            "filter": filter_schema(),
        }),
        &["path", "collection", "field", "query"],
    )
}

fn vsearch_schema() -> JsonObject {
    object(
        json!({
            "path": {"type": "string", "description": PATH_NOTE},
            "collection": {"type": "string", "description": "The collection."},
            "field": {"type": "string", "description": "The string field to rank by (a dotted path)."},
            "query": {"type": "string", "description": "The query text."},
            "k": {"type": "integer", "minimum": 1, "default": 10, "description": "How many documents to return."},
            "filter": filter_schema(),
        }),
        &["path", "collection", "field", "query"],
    )
}

fn docs_insert_schema() -> JsonObject {
    object(
        json!({
            "path": {"type": "string", "description": PATH_NOTE},
            "collection": {"type": "string", "description": "The collection (created on first insert)."},
            "document": {"type": ["object", "string"], "description": "The document: a JSON object, or its JSON text. An `_id` is generated (an ObjectId) when it has none."},
            "replace": {"type": "boolean", "default": false, "description": "Overwrite the stored document with the same `_id` instead of failing with a conflict."},
        }),
        &["path", "collection", "document"],
    )
}

fn docs_import_schema() -> JsonObject {
    object(
        json!({
            "path": {"type": "string", "description": PATH_NOTE},
            "collection": {"type": "string", "description": "The collection (created on first insert)."},
            "documents": {"type": "array", "items": {"type": "object"}, "description": "The documents, as JSON objects."},
            "jsonl": {"type": "string", "description": "The documents as JSON Lines text, one object per line."},
            "file": {"type": "string", "description": "A JSON Lines file inside the repository (relative to its root)."},
        }),
        &["path", "collection"],
    )
}

fn vsync_schema() -> JsonObject {
    object(
        json!({
            "path": {"type": "string", "description": PATH_NOTE},
            "collection": {"type": "string", "description": "The collection."},
            "field": {"type": "string", "description": "The string field (a dotted path)."},
        }),
        &["path", "collection", "field"],
    )
}

const CATALOGUE: &[Spec] = &[
    Spec {
        name: "repo_context_pack",
        title: "Context pack from the repository",
        effect: Effect::Read,
        schema: repo_context_pack_schema,
        description: "The best evidence from this git repository for a task, inside a hard budget: the most relevant code and documentation chunks, each cited as `path#Lstart-Lend@sha`, never more than the budget, with counters and a list of what was left out and why.\n\nUse it first when you need to understand or change code for a goal (\"how are budgets enforced\", \"add retry to the HTTP client\") and want context that fits. It reads the exact committed snapshot (`at`, HEAD by default), never uncommitted changes (the pack warns when the worktree is dirty). If that commit is not indexed it fails with `not_found` (exitCode 3) and a hint naming the nearest indexed ancestor: then call `index` (write scope) or ask the user to run `ctxpack index`; do not retry unchanged.\n\nNot for JSON document collections (use `context_pack`) nor for ranking diagnostics (use `query`). Returns the pack as canonical JSON, exactly what `ctxpack pack --format json` prints.",
    },
    Spec {
        name: "query",
        title: "Raw retrieval hits",
        effect: Effect::Read,
        schema: query_schema,
        description: "Raw retrieval hits of the repository's committed snapshot for a goal, best first, with each score's breakdown (BM25 over text, path and symbol, the file's evidence, and the prior that halves tests and fixtures) and each hit's cost. No budget is applied and no text is returned.\n\nUse it to see why something ranks where it does, or which files look relevant before asking for a pack. For context to read, use `repo_context_pack`. Returns what `ctxpack query --format json` prints.",
    },
    Spec {
        name: "status",
        title: "Store and HEAD status",
        effect: Effect::Read,
        schema: no_arguments_schema,
        description: "What the server's store holds: HEAD's commit and branch, whether HEAD is indexed, whether the worktree has uncommitted changes, and every indexed snapshot with its file and chunk counts.\n\nUse it when unsure whether a commit is indexed, or after `repo_context_pack` failed with `not_found`. Takes no arguments. Returns what `ctxpack status --format json` prints.",
    },
    Spec {
        name: "artifact_add",
        title: "Store an artifact",
        effect: Effect::IdempotentWrite,
        schema: artifact_add_schema,
        description: "Store text evidence beside the repository's snapshots: a CI log, test output, session notes. Later `repo_context_pack` calls with `scope` session, harness, evidence or all merge the artifacts of that scope into their candidates, ranked and budgeted like code and cited as `evidence:<id>#Lx-Ly` (evidence) or `artifact:<id>#Lx-Ly` (session, harness).\n\nUse it when the answer depends on something that is not committed code, such as a failing test's output. Not for code (commit and `index` it) nor for JSON documents (`docs_insert`). Returns `{\"id\", \"scope\"}`; storing the same content under the same id again is a no-op, other content under a used id fails with `conflict` (exitCode 5).",
    },
    Spec {
        name: "index",
        title: "Index a commit",
        effect: Effect::IdempotentWrite,
        schema: index_schema,
        description: "Index a commit of the repository (HEAD by default) into the store, so that `repo_context_pack` and `query` can read it. Incremental and content-addressed: a commit already indexed is a no-op, and a child commit only processes the files it changed. It reads the commit, never the worktree: commit first to include changes.\n\nUse it after `repo_context_pack` failed because the snapshot is not indexed, or after new commits. A large repository takes seconds the first time. Fails with `not_found` (exitCode 3) while another process is writing the store. Returns what `ctxpack index --format json` prints.",
    },
    Spec {
        name: "context_pack",
        title: "Context pack from documents",
        effect: Effect::Read,
        schema: context_pack_schema,
        description: "A token-budgeted, cited context pack from a JSON document collection of a ctxpack store: the documents whose string `field` is most similar to `query` (offline hashing embedder, cosine similarity), packed best-first until the approximate token budget (ceil(chars / 4), default 1000) would overflow; packing stops at the first chunk that does not fit and the pack is then `truncated`.\n\nUse it to ground an answer in stored documents, and cite each chunk by its `id`. Add `filter` to restrict candidates first (hybrid retrieval). Not for the repository's source code (use `repo_context_pack`). Returns {query, budgetTokens, usedTokens, truncated, chunks: [{id, score, tokens, text}], citations}, exactly what `ctxpack docs context` prints.",
    },
    Spec {
        name: "vsearch",
        title: "Vector search over documents",
        effect: Effect::Read,
        schema: vsearch_schema,
        description: "Exact cosine k-nearest-neighbour search over a string field of a document collection: the `k` documents most similar to `query`, best first, each whole with its `_id` and score; `filter` restricts candidates first.\n\nUse it when you need whole documents or their ids; when you want context for a prompt inside a budget, use `context_pack`. Returns {hits: [{id, score, document}], embeddedOnTheFly}.",
    },
    Spec {
        name: "docs_insert",
        title: "Insert a document",
        effect: Effect::Overwrite,
        schema: docs_insert_schema,
        description: "Insert one JSON document into a collection of an existing ctxpack store (the collection is created on first insert) and return its `_id`; an ObjectId is generated when the document has none. A duplicate `_id` fails with `conflict` (exitCode 5) unless `replace` is true, which overwrites the stored document.\n\nSearches embed a new document on the fly until `vsync` stores its embedding. For many documents use `docs_import`.",
    },
    Spec {
        name: "docs_import",
        title: "Import documents",
        effect: Effect::Write,
        schema: docs_import_schema,
        description: "Import many JSON documents into a collection of an existing ctxpack store, given as exactly one of `documents` (an array of objects), `jsonl` (JSON Lines text) or `file` (a JSON Lines file inside the repository). The whole input is checked first, so a bad line or a duplicate `_id` writes nothing and the error names the line; then documents are written a batch at a time.\n\nRun `vsync` afterwards so searches need not embed them on the fly. Returns {collection, imported, batches}.",
    },
    Spec {
        name: "vsync",
        title: "Store embeddings",
        effect: Effect::IdempotentWrite,
        schema: vsync_schema,
        description: "Compute and store the missing and stale embeddings of a collection's string field (after inserts, imports or replacements) and remove those of deleted documents, so `vsearch` and `context_pack` read stored vectors instead of embedding on the fly. Repeating it changes nothing. Returns the counts, as `ctxpack docs vsync --format json` prints them.",
    },
];

/// The tools a server at `scope` lists, in catalogue order.
pub(crate) fn list(scope: Scope) -> Vec<Tool> {
    CATALOGUE
        .iter()
        .filter(|spec| scope.allows(spec.scope()))
        .map(Spec::tool)
        .collect()
}

/// Where a tool name stands at a scope.
pub(crate) enum Lookup {
    /// Listed: call it.
    Available,
    /// A write tool asked for at read scope.
    NeedsWrite,
    /// No such tool.
    Unknown,
}

/// Looks a tool up.
pub(crate) fn lookup(scope: Scope, name: &str) -> Lookup {
    match CATALOGUE.iter().find(|spec| spec.name == name) {
        Some(spec) if scope.allows(spec.scope()) => Lookup::Available,
        Some(_) => Lookup::NeedsWrite,
        None => Lookup::Unknown,
    }
}

/// Runs the tool `name` (already known to be available) and returns its canonical JSON text.
pub(crate) fn run(
    roots: &Roots,
    scope: Scope,
    name: &str,
    arguments: &JsonObject,
) -> Result<String, Failure> {
    match name {
        "repo_context_pack" => repo_context_pack(roots, scope, arguments),
        "query" => query(roots, arguments),
        "status" => status(roots, arguments),
        "index" => index(roots, arguments),
        "artifact_add" => artifact_add(roots, arguments),
        "context_pack" => context_pack(roots, arguments),
        "vsearch" => vsearch(roots, arguments),
        "docs_insert" => docs_insert(roots, arguments),
        "docs_import" => docs_import(roots, arguments),
        "vsync" => vsync(roots, arguments),
        other => Err(Failure::new(
            FailureKind::Internal,
            format!("tool `{other}` is listed but has no handler"),
        )),
    }
}

/// Builds a snapshot pack; at write scope it is also recorded in the ledger (read scope writes
/// nothing).
fn repo_context_pack(
    roots: &Roots,
    scope: Scope,
    arguments: &JsonObject,
) -> Result<String, Failure> {
    let args = Args::new(
        "repo_context_pack",
        arguments,
        &[
            "goal", "budget", "at", "scope", "view", "meter", "selector", "top_k",
        ],
    )?;
    let view: View = args.parsed("view", View::Default)?;
    let request = SnapshotPackRequest {
        goal: args.string("goal")?.to_owned(),
        budget: args.budget("budget", DEFAULT_BUDGET)?,
        at: args.opt_string("at")?.unwrap_or("HEAD").to_owned(),
        scope: args.opt_string("scope")?.unwrap_or("durable").to_owned(),
        meter: args.parsed("meter", Meter::Words)?,
        selector: args.parsed("selector", Selector::Coverage)?,
        top_k: args.positive("top_k", 30)?,
    };
    let location = roots.location();
    let pack = snapshot_pack(&location, &request).map_err(not_indexed_hint)?;
    if scope == Scope::Write {
        let store_dir = location.resolve_store_dir()?;
        let context = RecordContext {
            surface: "mcp".into(),
            rendered: ("json".into(), view.name().into()),
            ..RecordContext::default()
        };
        ledger::record(&store_dir, &pack, &context);
    }
    Ok(pack_json(&pack, view).to_string())
}

fn query(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new("query", arguments, &["goal", "at", "top_k", "meter"])?;
    let goal = args.string("goal")?;
    let at = args.opt_string("at")?.unwrap_or("HEAD");
    let top_k = args.positive("top_k", 10)?;
    let meter: Meter = args.parsed("meter", Meter::Words)?;
    let (sha, hits) =
        query_hits(&roots.location(), goal, at, top_k, meter).map_err(not_indexed_hint)?;
    Ok(query_json(goal, &sha, meter, &hits).to_string())
}

/// Adds what to do over MCP to the CLI's guidance for a snapshot that is not indexed.
fn not_indexed_hint(failure: Failure) -> Failure {
    if failure.kind != FailureKind::NotFound || !failure.message.contains("is not indexed") {
        return failure;
    }
    let hint = match &failure.hint {
        Some(hint) => format!("{hint}; over MCP, call the `index` tool (write scope)"),
        None => "call the `index` tool (write scope) or run `ctxpack index`".to_owned(),
    };
    failure.with_hint(hint)
}

/// The same data as `ctxpack status --format json`.
fn status(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    Args::new("status", arguments, &[])?;
    Ok(Status::gather(&roots.location())?.to_json().to_string())
}

/// The same data as `ctxpack index --format json`.
fn index(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new("index", arguments, &["at"])?;
    let at = args.opt_string("at")?.unwrap_or("HEAD");
    let location = roots.location();
    let repo = location.repo()?;
    let sha = repo.resolve(at)?;
    let dir = location.store_dir(&repo);
    let report = index_into(&repo, &dir, &sha, false, &IndexOptions::default())?;
    Ok(json!({
        "sha": report.sha,
        "alreadyIndexed": report.already_indexed,
        "files": report.files,
        "processed": report.processed,
        "reused": report.reused,
        "chunks": report.chunks,
        "skipped": report.skipped,
        "seconds": (report.seconds * 1000.0).round() / 1000.0,
    })
    .to_string())
}

/// Stores an artifact, as `ctxpack artifact add` does.
fn artifact_add(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new(
        "artifact_add",
        arguments,
        &["scope", "content", "id", "source_id", "title", "name"],
    )?;
    let scope = args.string("scope")?;
    let request = ArtifactRequest {
        scope,
        id: args.opt_string("id")?,
        source_id: args.opt_string("source_id")?,
        title: args.opt_string("title")?,
        name: args.opt_string("name")?,
        max_bytes: 4 * 1024 * 1024,
        wait: false,
    };
    let id = add_artifact(
        &roots.location(),
        &request,
        args.string("content")?.as_bytes(),
    )?;
    Ok(json!({ "id": id, "scope": scope }).to_string())
}

/// A `filter` argument: an object, or its JSON text.
fn filter(args: &Args<'_>) -> Result<Option<Filter>, Failure> {
    match args.value("filter") {
        None => Ok(None),
        Some(Value::String(text)) => docs::parse_filter(text).map(Some),
        Some(value @ Value::Object(_)) => Filter::parse(value)
            .map(Some)
            .map_err(|e| Failure::invalid(format!("invalid filter: {e}"))),
        Some(_) => Err(Failure::invalid(
            "`filter` must be a JSON object or its JSON text",
        )),
    }
}

/// Seed 001's `context_pack`: the canonical JSON of `ctxpack docs context`.
fn context_pack(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new(
        "context_pack",
        arguments,
        &["path", "collection", "field", "query", "budget", "filter"],
    )?;
    let path = roots.confine("path", args.string("path")?)?;
    let collection = args.string("collection")?;
    let field = args.string("field")?;
    let query = args.string("query")?;
    let options = ContextOptions {
        budget: args.budget("budget", ContextOptions::DEFAULT_BUDGET)?,
        ..ContextOptions::default()
    };
    let filter = filter(&args)?;
    let store = docs::open_store(&path)?;
    let outcome = docs::context(
        &store,
        &docs::ContextRequest {
            collection,
            field,
            query,
            options,
            filter: filter.as_ref(),
            top_k: None,
        },
    )?;
    Ok(outcome.pack.to_json_line())
}

fn vsearch(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new(
        "vsearch",
        arguments,
        &["path", "collection", "field", "query", "k", "filter"],
    )?;
    let path = roots.confine("path", args.string("path")?)?;
    let collection = args.string("collection")?;
    let field = args.string("field")?;
    let query = args.string("query")?;
    let k = args.positive("k", 10)?;
    let filter = filter(&args)?;
    let store = docs::open_store(&path)?;
    let outcome = docs::vsearch(
        &store,
        &docs::VsearchRequest {
            collection,
            field,
            query,
            k,
            filter: filter.as_ref(),
        },
    )?;
    // Each hit's document is embedded exactly as stored, as `docs vsearch` prints it.
    let hits: Vec<String> = outcome.hits.iter().map(|h| h.to_json_line()).collect();
    Ok(format!(
        "{{\"hits\":[{}],\"embeddedOnTheFly\":{}}}",
        hits.join(","),
        outcome.embedded_on_the_fly
    ))
}

fn docs_insert(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new(
        "docs_insert",
        arguments,
        &["path", "collection", "document", "replace"],
    )?;
    let path = roots.confine("path", args.string("path")?)?;
    let collection = args.string("collection")?;
    let text = match args.value("document") {
        Some(Value::String(text)) => text.clone(),
        Some(value @ Value::Object(_)) => value.to_string(),
        Some(_) => {
            return Err(Failure::invalid(
                "`document` must be a JSON object or its JSON text",
            ));
        }
        None => {
            return Err(Failure::invalid(
                "`docs_insert` needs the argument `document`",
            ));
        }
    };
    let replace = args.flag("replace")?;
    let mut writer = docs::Writer::open(&path, false)?;
    let mut ids = docs::IdGenerator::new();
    let (id, replaced) = if replace {
        docs::replace(&mut writer.store, collection, &text, &mut ids)?
    } else {
        (
            docs::insert(&mut writer.store, collection, &text, &mut ids)?,
            false,
        )
    };
    Ok(json!({"collection": collection, "id": id, "replaced": replaced}).to_string())
}

fn docs_import(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new(
        "docs_import",
        arguments,
        &["path", "collection", "documents", "jsonl", "file"],
    )?;
    let path = roots.confine("path", args.string("path")?)?;
    let collection = args.string("collection")?;
    let given = ["documents", "jsonl", "file"]
        .into_iter()
        .filter(|name| args.value(name).is_some())
        .count();
    if given != 1 {
        return Err(Failure::invalid(
            "`docs_import` needs exactly one of `documents`, `jsonl` or `file`",
        ));
    }
    let source = if let Some(value) = args.value("documents") {
        let Value::Array(documents) = value else {
            return Err(Failure::invalid(
                "`documents` must be an array of JSON objects",
            ));
        };
        let mut bytes = Vec::new();
        for document in documents {
            bytes.extend_from_slice(document.to_string().as_bytes());
            bytes.push(b'\n');
        }
        docs::ImportSource::Bytes(bytes)
    } else if let Some(text) = args.opt_string("jsonl")? {
        docs::ImportSource::Bytes(text.as_bytes().to_vec())
    } else {
        let file = args.string("file")?;
        docs::ImportSource::File(roots.confine("file", file)?)
    };
    let mut writer = docs::Writer::open(&path, false)?;
    let report = docs::import(
        &mut writer.store,
        collection,
        &source,
        &docs::ImportOptions::default(),
        &mut docs::IdGenerator::new(),
        &mut |_| {},
    )?;
    Ok(json!({
        "collection": collection,
        "imported": report.imported,
        "batches": report.batches,
    })
    .to_string())
}

fn vsync(roots: &Roots, arguments: &JsonObject) -> Result<String, Failure> {
    let args = Args::new("vsync", arguments, &["path", "collection", "field"])?;
    let path = roots.confine("path", args.string("path")?)?;
    let collection = args.string("collection")?;
    let field = args.string("field")?;
    let mut writer = docs::Writer::open(&path, false)?;
    let report = docs::vsync(&mut writer.store, collection, field)?;
    Ok(report.to_json().to_string())
}
